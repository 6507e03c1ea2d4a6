//! Apache JMeter's JTL results, CSV and XML.
//!
//! CSV: the header line names the columns (JMeter writes it unless
//! `jmeter.save.saveservice.print_field_names=false`; without it the
//! columns cannot be known, and the file is refused). Needed: `timeStamp`
//! (epoch ms, JMeter's default `timestamp_format`), `elapsed`,
//! `responseCode` and `success`; used when present: `label`, `bytes`,
//! `responseMessage`, `failureMessage`, `URL`.
//!
//! XML: each `<httpSample>` or `<sample>` directly under `<testResults>` is
//! one request (`ts`, `t`, `lb`, `rc`, `s`, `by`, `rm`); samples nested in a
//! sample (redirects, embedded resources) belong to their parent, as in
//! JMeter's own reports.
//!
//! `timeStamp` is taken as the request's start, JMeter's default
//! (`sampleresult.timestamp.start=true` in jmeter.properties of 2.x to 5.x):
//! the request ends at `timeStamp + elapsed`.
//!
//! A response code that is not a number (`Non HTTP response code:
//! java.net.ConnectException`) or is outside 100-599 is a request without
//! an HTTP answer: a transport error.

use crate::{csvline, shown, Error, Lines, Sample};
use quick_xml::events::{BytesStart, Event};
use std::io::BufRead;

/// The columns of a JTL CSV header this reader uses.
#[derive(Debug, Clone, Copy)]
struct Columns {
    time: usize,
    elapsed: usize,
    code: usize,
    success: usize,
    label: Option<usize>,
    bytes: Option<usize>,
    message: Option<usize>,
    failure: Option<usize>,
    url: Option<usize>,
    count: usize,
}

/// The delimiter of a JTL CSV header line: JMeter writes `,` by default
/// and `\t` when configured so.
pub(crate) fn header_delimiter(line: &[u8]) -> Option<u8> {
    [b',', b'\t', b';', b'|'].into_iter().find(|&d| {
        let f: Vec<&[u8]> = line.split(|&c| c == d).collect();
        f.contains(&&b"timeStamp"[..]) && f.contains(&&b"elapsed"[..])
    })
}

fn columns(header: &[u8], delimiter: u8) -> Result<Columns, String> {
    let names: Vec<&[u8]> = header.split(|&c| c == delimiter).collect();
    let find = |n: &str| names.iter().position(|h| *h == n.as_bytes());
    let need = |n: &str| find(n).ok_or_else(|| format!("the header has no `{n}` column"));
    Ok(Columns {
        time: need("timeStamp")?,
        elapsed: need("elapsed")?,
        code: need("responseCode")?,
        success: need("success")?,
        label: find("label"),
        bytes: find("bytes"),
        message: find("responseMessage"),
        failure: find("failureMessage"),
        url: find("URL"),
        count: names.len(),
    })
}

fn number(b: &[u8]) -> Option<f64> {
    let v: f64 = std::str::from_utf8(b).ok()?.trim().parse().ok()?;
    v.is_finite().then_some(v)
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The HTTP status of a response code, `None` for a request without an
/// HTTP answer.
fn status(code: &[u8]) -> Option<u16> {
    std::str::from_utf8(code)
        .ok()?
        .trim()
        .parse::<u16>()
        .ok()
        .filter(|c| (100..600).contains(c))
}

fn success(b: &[u8]) -> Option<bool> {
    match b {
        b"true" => Some(true),
        b"false" => Some(false),
        _ => None,
    }
}

/// Largest plausible epoch ms (year 9999) and elapsed (a day, ms).
const MAX_EPOCH_MS: f64 = 253_402_300_800_000.0;
const MAX_ELAPSED_MS: f64 = 86_400_000.0;

fn times(ts: f64, elapsed: f64) -> Result<(f64, f64), String> {
    if !(0.0..MAX_EPOCH_MS).contains(&ts) {
        return Err(format!("timeStamp {ts} is not a Unix time in ms"));
    }
    if !(0.0..=MAX_ELAPSED_MS).contains(&elapsed) {
        return Err(format!("elapsed {elapsed} is not a request time in ms"));
    }
    Ok((ts + elapsed, elapsed))
}

/// Reads a JTL CSV (header line first), one request per record.
pub fn read_csv(
    reader: impl BufRead,
    path: &str,
    out: &mut dyn FnMut(Sample),
) -> Result<(), Error> {
    let mut lines = Lines::new(reader, path);
    let Some(header) = lines.next_line()? else {
        return Err(lines.malformed("empty file: expected a JTL header line"));
    };
    let header = header.to_vec();
    let Some(delimiter) = header_delimiter(&header) else {
        return Err(lines.malformed(format!(
            "not a JTL CSV header (no timeStamp and elapsed columns): {}",
            shown(&header)
        )));
    };
    let cols = columns(&header, delimiter).map_err(|e| lines.malformed(e))?;
    while lines.next_line()?.is_some() {
        // A quoted field (a failure message) may hold line breaks.
        let record = loop {
            if let Some(f) = csvline::fields(lines.current(), delimiter) {
                break f;
            }
            if !lines.continue_line()? {
                return Err(
                    lines.malformed("a quoted field is not closed before the end of the file")
                );
            }
        };
        if record.len() == 1 && record[0].is_empty() {
            continue;
        }
        if record.len() != cols.count {
            return Err(lines.malformed(format!(
                "{} fields where the header has {}",
                record.len(),
                cols.count
            )));
        }
        let field = |i: usize| record[i].as_ref();
        let ts = number(field(cols.time)).ok_or_else(|| {
            lines.malformed(format!(
                "timeStamp {:?} is not epoch milliseconds (JMeter's default timestamp_format)",
                shown(field(cols.time))
            ))
        })?;
        let elapsed = number(field(cols.elapsed)).ok_or_else(|| {
            lines.malformed(format!(
                "elapsed {:?} is not a number",
                shown(field(cols.elapsed))
            ))
        })?;
        let (end, latency) = times(ts, elapsed).map_err(|e| lines.malformed(e))?;
        let ok = success(field(cols.success)).ok_or_else(|| {
            lines.malformed(format!(
                "success {:?} is neither true nor false",
                shown(field(cols.success))
            ))
        })?;
        let code = field(cols.code);
        let st = status(code);
        let error = if st.is_none() {
            Some(text(code))
        } else if !ok {
            cols.failure
                .map(field)
                .filter(|f| !f.is_empty())
                .or(cols.message.map(field))
                .map(text)
        } else {
            None
        };
        let label = match (cols.label, cols.url) {
            (Some(l), _) => text(field(l)),
            (None, Some(u)) => crate::url_path(&text(field(u))).to_string(),
            (None, None) => String::new(),
        };
        let bytes = match cols.bytes {
            Some(b) => Some(number(field(b)).map(|v| v as u64).ok_or_else(|| {
                lines.malformed(format!("bytes {:?} is not a number", shown(field(b))))
            })?),
            None => None,
        };
        out(Sample {
            end_unix_ms: end,
            latency_ms: latency,
            status: st,
            ok,
            error,
            label,
            method: None,
            bytes,
        });
    }
    Ok(())
}

fn attr_sample(e: &BytesStart<'_>) -> Result<Sample, String> {
    let (mut ts, mut t, mut lb, mut rc, mut s, mut by, mut rm) =
        (None, None, None, None, None, None, None);
    for a in e.attributes() {
        let a = a.map_err(|e| format!("bad attribute: {e}"))?;
        let v = a
            .normalized_value(quick_xml::XmlVersion::Implicit1_0)
            .map_err(|e| format!("bad attribute value: {e}"))?
            .into_owned();
        match a.key.as_ref() {
            b"ts" => ts = Some(v),
            b"t" => t = Some(v),
            b"lb" => lb = Some(v),
            b"rc" => rc = Some(v),
            b"s" => s = Some(v),
            b"by" => by = Some(v),
            b"rm" => rm = Some(v),
            _ => {}
        }
    }
    let need = |v: Option<String>, n: &str| v.ok_or_else(|| format!("a sample without `{n}`"));
    let ts_s = need(ts, "ts")?;
    let t_s = need(t, "t")?;
    let ts =
        number(ts_s.as_bytes()).ok_or_else(|| format!("ts {ts_s:?} is not epoch milliseconds"))?;
    let t = number(t_s.as_bytes()).ok_or_else(|| format!("t {t_s:?} is not a number"))?;
    let (end, latency) = times(ts, t)?;
    let s_s = need(s, "s")?;
    let ok =
        success(s_s.as_bytes()).ok_or_else(|| format!("s {s_s:?} is neither true nor false"))?;
    let rc = rc.unwrap_or_default();
    let st = status(rc.as_bytes());
    let bytes = match by {
        Some(b) => {
            Some(number(b.as_bytes()).ok_or_else(|| format!("by {b:?} is not a number"))? as u64)
        }
        None => None,
    };
    let error = if st.is_none() {
        Some(rc)
    } else if !ok {
        rm
    } else {
        None
    };
    Ok(Sample {
        end_unix_ms: end,
        latency_ms: latency,
        status: st,
        ok,
        error,
        label: lb.unwrap_or_default(),
        method: None,
        bytes,
    })
}

/// Reads a JTL XML file, streaming element by element.
pub fn read_xml(
    reader: impl BufRead,
    path: &str,
    out: &mut dyn FnMut(Sample),
) -> Result<(), Error> {
    let mut xml = quick_xml::Reader::from_reader(reader);
    let mut buf = Vec::new();
    let mut depth = 0usize;
    let mut root_seen = false;
    // quick-xml counts bytes, not lines: errors name the byte.
    let at = |xml: &quick_xml::Reader<_>, reason: String| Error::Malformed {
        path: path.to_string(),
        at: format!("byte {}", xml.buffer_position()),
        reason,
    };
    loop {
        buf.clear();
        let ev = xml
            .read_event_into(&mut buf)
            .map_err(|e| at(&xml, format!("not well-formed XML: {e}")))?;
        let is_start = matches!(ev, Event::Start(_));
        match ev {
            Event::Start(e) | Event::Empty(e) if depth == 0 => {
                if e.name().as_ref() != b"testResults" {
                    return Err(at(
                        &xml,
                        format!(
                            "the root element is <{}>, not <testResults>",
                            shown(e.name().as_ref())
                        ),
                    ));
                }
                root_seen = true;
                if is_start {
                    depth = 1;
                }
            }
            Event::Start(e) => {
                if depth == 1 && matches!(e.name().as_ref(), b"httpSample" | b"sample") {
                    out(attr_sample(&e).map_err(|r| at(&xml, r))?);
                }
                depth += 1;
            }
            Event::Empty(e)
                if depth == 1 && matches!(e.name().as_ref(), b"httpSample" | b"sample") =>
            {
                out(attr_sample(&e).map_err(|r| at(&xml, r))?);
            }
            Event::End(_) => depth = depth.saturating_sub(1),
            Event::Eof => break,
            _ => {}
        }
    }
    if !root_seen {
        return Err(at(&xml, "no <testResults> element".into()));
    }
    // A file cut off mid-test (no </testResults> yet) still holds every
    // sample written so far, all read: that is not an error.
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn csv(text: &str) -> Result<Vec<Sample>, Error> {
        let mut v = Vec::new();
        read_csv(text.as_bytes(), "t.jtl", &mut |s| v.push(s))?;
        Ok(v)
    }

    const HEADER: &str = "timeStamp,elapsed,label,responseCode,responseMessage,threadName,dataType,success,failureMessage,bytes,sentBytes,grpThreads,allThreads,URL,Latency,IdleTime,Connect\n";

    #[test]
    fn default_jmeter5_columns_read_with_quoted_messages() {
        let text = format!(
            "{HEADER}1700000000000,12,GET /ok,200,OK,Thread Group 1-1,text,true,,615,120,1,1,http://127.0.0.1/ok,11,0,1\n\
             1700000000100,3,GET /fail,503,Service Unavailable,Thread Group 1-1,text,false,\"a, \"\"quoted\"\"\nmessage\",200,120,1,1,http://127.0.0.1/fail,3,0,0\n\
             1700000000200,1001,GET /ok,Non HTTP response code: java.net.ConnectException,\"Non HTTP response message: Connection refused\",Thread Group 1-1,text,false,,1800,0,1,1,http://127.0.0.1/ok,0,0,1001\n"
        );
        let v = csv(&text).unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(v[0].end_unix_ms, 1_700_000_000_012.0);
        assert_eq!(
            (v[0].status, v[0].ok, v[0].bytes),
            (Some(200), true, Some(615))
        );
        assert_eq!(v[1].status, Some(503));
        assert_eq!(v[1].error.as_deref(), Some("a, \"quoted\"\nmessage"));
        assert_eq!(v[2].status, None);
        assert_eq!(v[0].label, "GET /ok");
    }

    #[test]
    fn jmeter2_columns_and_tabs_read_too() {
        let v = csv("timeStamp\telapsed\tlabel\tresponseCode\tresponseMessage\tthreadName\tdataType\tsuccess\tbytes\tgrpThreads\tallThreads\tLatency\n1700000000000\t5\tx\t404\tNot Found\tt\ttext\tfalse\t10\t1\t1\t5\n").unwrap();
        assert_eq!(v[0].status, Some(404));
        assert!(!v[0].ok);
    }

    #[test]
    fn broken_records_name_their_line() {
        let e = csv(&format!("{HEADER}1700000000000,12,x\n")).unwrap_err();
        assert!(e.to_string().contains("t.jtl:2: 3 fields"), "{e}");
        let e =
            csv("timeStamp,elapsed,label,responseCode,success\n2026/11/24 10:00:00,1,x,200,true\n")
                .unwrap_err();
        assert!(e.to_string().contains("epoch milliseconds"), "{e}");
        let e = csv("timeStamp,elapsed,label\n1,2,3\n").unwrap_err();
        assert!(e.to_string().contains("no `responseCode`"), "{e}");
        let e = csv(&format!("{HEADER}1700000000000,12,\"open\n")).unwrap_err();
        assert!(e.to_string().contains("not closed"), "{e}");
    }

    fn xml(text: &str) -> Result<Vec<Sample>, Error> {
        let mut v = Vec::new();
        read_xml(text.as_bytes(), "t.jtl", &mut |s| v.push(s))?;
        Ok(v)
    }

    #[test]
    fn xml_samples_at_the_top_level_only() {
        let v = xml(r#"<?xml version="1.0" encoding="UTF-8"?>
<testResults version="1.2">
<httpSample t="7" it="0" lt="7" ct="1" ts="1700000000000" s="true" lb="GET /ok" rc="200" rm="OK" tn="T 1-1" dt="text" by="615" sby="120" ng="1" na="1">
  <httpSample t="3" ts="1700000000001" s="true" lb="redirected" rc="200" by="1"/>
  <java.net.URL>http://127.0.0.1/ok</java.net.URL>
</httpSample>
<httpSample t="2" ts="1700000000010" s="false" lb="GET /fail" rc="503" rm="Service Unavailable" by="200"/>
<sample t="1" ts="1700000000020" s="true" lb="debug" rc="200"/>
</testResults>"#)
        .unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(v[0].end_unix_ms, 1_700_000_000_007.0);
        assert_eq!(v[1].error.as_deref(), Some("Service Unavailable"));
        assert_eq!(v[2].label, "debug");
        assert!(xml("<other/>").is_err());
        assert!(
            xml("<testResults><httpSample ts=\"x\" t=\"1\" s=\"true\"/></testResults>").is_err()
        );
        // Cut off mid-test: the samples written so far are all there.
        assert_eq!(
            xml("<testResults><httpSample ts=\"1700000000000\" t=\"1\" s=\"true\" rc=\"200\"/>")
                .unwrap()
                .len(),
            1
        );
    }
}
