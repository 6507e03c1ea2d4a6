//! vegeta results as `vegeta encode --to csv` and `--to json` write them.
//! A result's `timestamp` is when the request was sent and `latency` its
//! duration in ns, so it ended at timestamp + latency; `code` 0 means no
//! answer; vegeta sets `error` for every code outside 200-399.
//!
//! The binary stream `vegeta attack` writes by default is Go's gob
//! encoding; it is recognised (see the detector) and refused with the
//! command that converts it, rather than decoded by a second gob reader.

use crate::{csvline, rfc3339, shown, Error, Lines, Sample};
use serde::Deserialize;
use std::io::BufRead;

/// Largest plausible latency, ns (a day).
const MAX_LATENCY_NS: f64 = 86_400e9;

fn sample(
    end_ms: f64,
    latency_ns: f64,
    code: u16,
    error: &str,
    method: &str,
    url: &str,
) -> Result<Sample, String> {
    if !(0.0..=MAX_LATENCY_NS).contains(&latency_ns) {
        return Err(format!("latency {latency_ns} ns is not a request time"));
    }
    let status = (100..600).contains(&code).then_some(code);
    if code != 0 && status.is_none() {
        return Err(format!("code {code} is not an HTTP status"));
    }
    let latency_ms = latency_ns / 1e6;
    Ok(Sample {
        end_unix_ms: end_ms + latency_ms,
        latency_ms,
        status,
        ok: error.is_empty(),
        error: (!error.is_empty()).then(|| error.to_string()),
        label: crate::url_path(url).to_string(),
        method: (!method.is_empty()).then(|| method.to_string()),
        bytes: None,
    })
}

fn int<T: std::str::FromStr>(b: &[u8]) -> Option<T> {
    std::str::from_utf8(b).ok()?.trim().parse().ok()
}

/// Reads `vegeta encode --to csv` output (12 fields a record since v12.8;
/// the 9 of older releases are read too).
pub fn read_csv(
    reader: impl BufRead,
    path: &str,
    out: &mut dyn FnMut(Sample),
) -> Result<(), Error> {
    let mut lines = Lines::new(reader, path);
    while lines.next_line()?.is_some() {
        let record = loop {
            if let Some(f) = csvline::fields(lines.current(), b',') {
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
        if record.len() != 12 && record.len() != 9 {
            return Err(lines.malformed(format!(
                "{} fields; vegeta's CSV has 12 (9 before v12.8)",
                record.len()
            )));
        }
        let ts: i64 = int(&record[0]).ok_or_else(|| {
            lines.malformed(format!(
                "timestamp {:?} is not Unix nanoseconds",
                shown(&record[0])
            ))
        })?;
        let code: u16 = int(&record[1]).ok_or_else(|| {
            lines.malformed(format!("code {:?} is not a number", shown(&record[1])))
        })?;
        let latency: i64 = int(&record[2]).ok_or_else(|| {
            lines.malformed(format!(
                "latency {:?} is not nanoseconds",
                shown(&record[2])
            ))
        })?;
        let bytes_in: u64 = int(&record[4]).ok_or_else(|| {
            lines.malformed(format!("bytes_in {:?} is not a number", shown(&record[4])))
        })?;
        let text = |i: usize| {
            String::from_utf8_lossy(record.get(i).map_or(&b""[..], |f| f.as_ref())).into_owned()
        };
        let mut s = sample(
            ts as f64 / 1e6,
            latency as f64,
            code,
            &text(5),
            &text(9),
            &text(10),
        )
        .map_err(|e| lines.malformed(e))?;
        s.bytes = s.status.map(|_| bytes_in);
        out(s);
    }
    Ok(())
}

#[derive(Deserialize)]
struct JsonResult {
    code: u16,
    timestamp: String,
    latency: i64,
    #[serde(default)]
    bytes_in: u64,
    #[serde(default)]
    error: String,
    #[serde(default)]
    method: String,
    #[serde(default)]
    url: String,
}

/// Reads `vegeta encode --to json` output, one result a line.
pub fn read_json(
    reader: impl BufRead,
    path: &str,
    out: &mut dyn FnMut(Sample),
) -> Result<(), Error> {
    let mut lines = Lines::new(reader, path);
    while let Some(line) = lines.next_line()? {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let r: JsonResult = match serde_json::from_slice(line) {
            Ok(r) => r,
            Err(e) => {
                let reason = format!("not a vegeta JSON result ({e}): {}", shown(line));
                return Err(lines.malformed(reason));
            }
        };
        let Some(start) = rfc3339::unix_ms(&r.timestamp) else {
            let reason = format!("timestamp {:?} is not an RFC 3339 time", r.timestamp);
            return Err(lines.malformed(reason));
        };
        let mut s = sample(start, r.latency as f64, r.code, &r.error, &r.method, &r.url)
            .map_err(|e| lines.malformed(e))?;
        s.bytes = s.status.map(|_| r.bytes_in);
        out(s);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_and_json_results_end_at_timestamp_plus_latency() {
        let csv = "1795482000000000000,200,1500000,0,615,,PGh0bWw+,,0,GET,http://127.0.0.1:18750/ok?x=1,Q29udGVudC1UeXBlOiB0ZXh0DQoNCg==\n\
                   1795482000001000000,503,1000000,0,200,503 Service Unavailable,,,1,GET,http://127.0.0.1:18750/fail,\n\
                   1795482000002000000,0,3000000,0,0,\"Get \"\"http://x\"\": connection refused\",,,2,GET,http://127.0.0.1:1/,\n";
        let mut v = Vec::new();
        read_csv(csv.as_bytes(), "r.csv", &mut |s| v.push(s)).unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(v[0].end_unix_ms, 1_795_482_000_001.5);
        assert_eq!(
            (v[0].status, v[0].bytes, v[0].label.as_str()),
            (Some(200), Some(615), "/ok")
        );
        assert_eq!(v[1].error.as_deref(), Some("503 Service Unavailable"));
        assert_eq!(v[2].status, None);
        assert!(v[2].error.as_deref().unwrap().contains("\"http://x\""));

        let json = r#"{"attack":"","seq":0,"code":200,"timestamp":"2026-11-24T01:00:00Z","latency":2000000,"bytes_out":0,"bytes_in":615,"error":"","body":null,"method":"GET","url":"http://127.0.0.1/ok","headers":null}"#;
        let mut v = Vec::new();
        read_json(json.as_bytes(), "r.json", &mut |s| v.push(s)).unwrap();
        assert_eq!(v[0].end_unix_ms, 1_795_482_000_002.0);
        let e = read_csv("1,2,3\n".as_bytes(), "r.csv", &mut |_| {}).unwrap_err();
        assert!(e.to_string().contains("r.csv:1: 3 fields"), "{e}");
        let e = read_csv("x,200,1,0,0,,,,0,GET,/,\n".as_bytes(), "r.csv", &mut |_| {}).unwrap_err();
        assert!(e.to_string().contains("Unix nanoseconds"), "{e}");
    }
}
