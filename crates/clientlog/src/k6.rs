//! k6 `--out json` (one JSON object a line): each `http_req_duration`
//! point is one request. Its `time` is when the request ended (k6 stamps
//! HTTP samples with the trail's end), its value the duration in ms, its
//! tags the status (`"0"`: no answer), `expected_response`, `error_code`,
//! `method`, `name` (the URL unless the script names it) and `url`.
//! Other metrics and the `Metric` declarations are read and left aside.

use crate::{rfc3339, shown, Error, Lines, Sample};
use serde::Deserialize;
use std::collections::BTreeMap;
use std::io::BufRead;

#[derive(Deserialize)]
struct Envelope {
    #[serde(rename = "type")]
    kind: String,
    #[serde(default)]
    metric: String,
    #[serde(default)]
    data: Data,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Data {
    time: Option<String>,
    value: Option<f64>,
    tags: Option<BTreeMap<String, serde_json::Value>>,
}

fn tag<'a>(tags: &'a BTreeMap<String, serde_json::Value>, k: &str) -> Option<&'a str> {
    tags.get(k).and_then(serde_json::Value::as_str)
}

/// Reads k6 JSON lines.
pub fn read(reader: impl BufRead, path: &str, out: &mut dyn FnMut(Sample)) -> Result<(), Error> {
    let mut lines = Lines::new(reader, path);
    while let Some(line) = lines.next_line()? {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let env: Envelope = match serde_json::from_slice(line) {
            Ok(e) => e,
            Err(e) => {
                let reason = format!("not a k6 JSON line ({e}): {}", shown(line));
                return Err(lines.malformed(reason));
            }
        };
        match env.kind.as_str() {
            "Metric" => continue,
            "Point" => {}
            other => {
                let reason = format!("a line of type {other:?}; k6 writes Metric and Point");
                return Err(lines.malformed(reason));
            }
        }
        if env.metric != "http_req_duration" {
            continue;
        }
        let d = env.data;
        let time = d.time.as_deref().unwrap_or("");
        let Some(end) = rfc3339::unix_ms(time) else {
            return Err(lines.malformed(format!("time {time:?} is not an RFC 3339 time")));
        };
        let Some(value) = d.value.filter(|v| v.is_finite() && *v >= 0.0) else {
            return Err(lines.malformed("an http_req_duration point without a duration"));
        };
        let tags = d.tags.unwrap_or_default();
        let Some(status_text) = tag(&tags, "status") else {
            return Err(lines.malformed("an http_req_duration point without a status tag"));
        };
        let Ok(code) = status_text.parse::<u16>() else {
            return Err(lines.malformed(format!("status tag {status_text:?} is not a number")));
        };
        let status = (100..600).contains(&code).then_some(code);
        let ok = match tag(&tags, "expected_response") {
            Some("true") => true,
            Some("false") => false,
            _ => status.is_some_and(|c| c < 400),
        };
        let error = tag(&tags, "error_code")
            .map(|c| format!("k6 error_code {c}"))
            .or_else(|| tag(&tags, "error").map(str::to_string));
        let label = tag(&tags, "name")
            .or_else(|| tag(&tags, "url"))
            .map(|n| {
                // An unnamed request's name is its URL: routes are paths.
                if n.contains("://") {
                    crate::url_path(n).to_string()
                } else {
                    n.to_string()
                }
            })
            .unwrap_or_default();
        out(Sample {
            end_unix_ms: end,
            latency_ms: value,
            status,
            ok,
            error,
            label,
            method: tag(&tags, "method").map(str::to_string),
            bytes: None,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_req_duration_points_are_requests() {
        let text = r#"{"type":"Metric","data":{"name":"http_req_duration","type":"trend","contains":"time","thresholds":[],"submetrics":null},"metric":"http_req_duration"}
{"metric":"http_reqs","type":"Point","data":{"time":"2026-11-24T10:00:00.5+09:00","value":1,"tags":{"status":"200"}}}
{"metric":"http_req_duration","type":"Point","data":{"time":"2026-11-24T10:00:00.5+09:00","value":1.25,"tags":{"expected_response":"true","method":"GET","name":"http://127.0.0.1:18750/ok?x=1","proto":"HTTP/1.1","scenario":"default","status":"200","url":"http://127.0.0.1:18750/ok?x=1"}}}
{"metric":"http_req_duration","type":"Point","data":{"time":"2026-11-24T01:00:01Z","value":0,"tags":{"error_code":"1211","expected_response":"false","method":"GET","name":"slow","status":"0"}}}
"#;
        let mut v = Vec::new();
        read(text.as_bytes(), "k6.json", &mut |s| v.push(s)).unwrap();
        assert_eq!(v.len(), 2);
        assert_eq!(v[0].label, "/ok");
        assert_eq!(v[0].status, Some(200));
        assert_eq!(
            v[0].end_unix_ms,
            1_795_514_400_500.0 - 9.0 * 3_600_000.0 + 0.0
        );
        assert_eq!(v[1].status, None);
        assert_eq!(v[1].error.as_deref(), Some("k6 error_code 1211"));
        assert_eq!(v[1].label, "slow");
    }

    #[test]
    fn foreign_lines_are_refused_with_their_line() {
        for (text, want) in [
            ("{\"type\":\"Point\",\"metric\":\"http_req_duration\",\"data\":{\"time\":\"x\",\"value\":1,\"tags\":{\"status\":\"200\"}}}", "k6.json:1: time"),
            ("\n{\"type\":\"Other\"}", "k6.json:2: a line of type"),
            ("not json", "not a k6 JSON line"),
        ] {
            let e = read(text.as_bytes(), "k6.json", &mut |_| {}).unwrap_err();
            assert!(e.to_string().contains(want), "{e}");
        }
    }
}
