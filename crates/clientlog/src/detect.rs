//! Which tool wrote a results file, from its first bytes. Every rule is a
//! signature the tool always writes (a JTL header's `timeStamp` and
//! `elapsed`, `<testResults>`, k6's `"type":"Point"`, vegeta's twelve CSV
//! fields starting with Unix nanoseconds, wrk's `Running 10s test @`), so
//! a file matching none is refused, never guessed at.

use crate::{csvline, jtl, Encoding, Error, Format};

/// What the start of a file is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Detected {
    /// A format keisoku reads.
    Found(Encoding),
    /// None of the formats; why, for the message.
    Unknown(String),
}

fn first_line(head: &[u8]) -> Option<&[u8]> {
    let head = head.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(head);
    head.split(|&b| b == b'\n')
        .map(|l| l.strip_suffix(b"\r").unwrap_or(l))
        .find(|l| !l.iter().all(u8::is_ascii_whitespace))
}

fn is_binary(head: &[u8]) -> bool {
    head.iter()
        .take(4096)
        .any(|&b| b < 0x09 || (0x0e..0x20).contains(&b) || b == 0x7f)
}

fn contains(hay: &[u8], needle: &[u8]) -> bool {
    memchr::memmem::find(hay, needle).is_some()
}

fn all_digits(b: &[u8]) -> bool {
    !b.is_empty() && b.iter().all(u8::is_ascii_digit)
}

/// Detects the format of a file from its first bytes (at least its first
/// line; more lets a gob stream be recognised).
pub fn detect(head: &[u8]) -> Detected {
    if is_binary(head) {
        // Go's gob stream of vegeta's Result type names its fields first.
        if contains(head, b"Result") && contains(head, b"Latency") && contains(head, b"BytesOut") {
            return Detected::Found(Encoding::VegetaGob);
        }
        return Detected::Unknown("binary data".into());
    }
    let Some(line) = first_line(head) else {
        return Detected::Unknown("the file is empty".into());
    };
    let t = line.trim_ascii_start();
    if t.starts_with(b"<?xml") || t.starts_with(b"<testResults") {
        if contains(head, b"<testResults") {
            return Detected::Found(Encoding::JtlXml);
        }
        return Detected::Unknown("XML without <testResults> at its start".into());
    }
    if jtl::header_delimiter(line).is_some() {
        return Detected::Found(Encoding::JtlCsv);
    }
    if t.starts_with(b"{") {
        if let Ok(serde_json::Value::Object(o)) = serde_json::from_slice(line) {
            let kind = o.get("type").and_then(serde_json::Value::as_str);
            if matches!(kind, Some("Metric" | "Point")) && o.contains_key("data") {
                return Detected::Found(Encoding::K6Json);
            }
            if ["code", "timestamp", "latency"]
                .iter()
                .all(|k| o.contains_key(*k))
            {
                return Detected::Found(Encoding::VegetaJson);
            }
            return Detected::Unknown(
                "a JSON object that is neither a k6 point nor a vegeta result".into(),
            );
        }
    }
    if let Some(f) = csvline::fields(line, b',') {
        if (f.len() == 12 || f.len() == 9)
            && all_digits(&f[0])
            && f[0].len() >= 16
            && all_digits(&f[1])
            && all_digits(&f[2])
        {
            return Detected::Found(Encoding::VegetaCsv);
        }
    }
    if t.starts_with(b"Running ") && contains(t, b" test @ ") {
        return Detected::Found(Encoding::WrkText);
    }
    Detected::Unknown(format!("its first line is {:?}", crate::shown(line)))
}

/// Why a file was refused, before its path is known.
pub(crate) struct Refusal {
    tried: Vec<Format>,
    reason: String,
}

impl Refusal {
    pub(crate) fn into_error(self, path: &str) -> Error {
        let tried: Vec<&str> = self
            .tried
            .iter()
            .map(|f| match f {
                Format::Jtl => "jtl (JMeter CSV or XML)",
                Format::K6 => "k6 (--out json)",
                Format::Vegeta => "vegeta (binary, or encode --to csv or json)",
                Format::Wrk => "wrk (--latency text)",
            })
            .collect();
        Error::Unrecognised {
            path: path.to_string(),
            tried: tried.join(", "),
            reason: self.reason,
        }
    }
}

/// The encoding of `head`, which must be of `format` when one is given.
pub(crate) fn detect_for(head: &[u8], format: Option<Format>) -> Result<Encoding, Refusal> {
    let tried = format.map_or(Format::ALL.to_vec(), |f| vec![f]);
    match detect(head) {
        Detected::Found(e) if format.is_none_or(|f| f == e.format()) => Ok(e),
        Detected::Found(e) => Err(Refusal {
            tried,
            reason: format!("it is {}", e.describe()),
        }),
        Detected::Unknown(reason) => Err(Refusal { tried, reason }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_tool_by_its_signature_and_nothing_else() {
        let found = |b: &[u8]| match detect(b) {
            Detected::Found(e) => Some(e),
            _ => None,
        };
        assert_eq!(
            found(b"timeStamp,elapsed,label\n1,2,3"),
            Some(Encoding::JtlCsv)
        );
        assert_eq!(
            found(b"\xEF\xBB\xBF\ntimeStamp\telapsed\n"),
            Some(Encoding::JtlCsv)
        );
        assert_eq!(
            found(b"<?xml version=\"1.0\"?>\n<testResults version=\"1.2\">"),
            Some(Encoding::JtlXml)
        );
        assert_eq!(
            found(b"{\"type\":\"Metric\",\"data\":{},\"metric\":\"vus\"}\n"),
            Some(Encoding::K6Json)
        );
        assert_eq!(
            found(b"{\"code\":200,\"timestamp\":\"x\",\"latency\":1}\n"),
            Some(Encoding::VegetaJson)
        );
        assert_eq!(
            found(b"1795482000000000000,200,1500000,0,615,,,,0,GET,http://x/,\n"),
            Some(Encoding::VegetaCsv)
        );
        assert_eq!(
            found(b"Running 10s test @ http://127.0.0.1/\n"),
            Some(Encoding::WrkText)
        );
        assert_eq!(detect(b"\x3f\xff\x81\x03\x01\x01\x06Result\x01\xff\x82\x00\x01\x0c\x01\x06Attack\x01\x0c\x00\x01\x07Latency\x01\x04\x00\x01\x08BytesOut"), Detected::Found(Encoding::VegetaGob));
        for other in [
            &b""[..],
            b"\n\n",
            b"hello",
            b"{\"a\":1}",
            b"1,2,3",
            b"<html>",
            b"\x00\x01",
        ] {
            assert!(matches!(detect(other), Detected::Unknown(_)), "{other:?}");
        }
    }

    #[test]
    fn a_named_format_must_match() {
        let e = detect_for(b"Running 1s test @ x", Some(Format::Jtl))
            .err()
            .unwrap();
        let msg = e.into_error("f").to_string();
        assert!(
            msg.contains("tried jtl (JMeter CSV or XML)") && msg.contains("wrk --latency text"),
            "{msg}"
        );
        let msg = detect_for(b"hello", None)
            .err()
            .unwrap()
            .into_error("f")
            .to_string();
        assert!(
            msg.contains("jtl")
                && msg.contains("k6")
                && msg.contains("vegeta")
                && msg.contains("wrk"),
            "{msg}"
        );
    }
}
