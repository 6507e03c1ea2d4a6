//! HAR 1.2 files (a browser's recorded traffic) as replayable requests,
//! read entry by entry: the `entries` array is streamed through serde, so
//! a large HAR is never held whole, only one entry at a time.
//!
//! From each entry: `startedDateTime` (the start, as the browser saw it),
//! the request's method, URL, headers (hop-by-hop ones, `Host`,
//! `Content-Length` and HTTP/2 pseudo-headers dropped; `Cookie` only with
//! `--replay-cookies`) and `postData` (its text, or its params form-encoded).

use super::{split_absolute, Call, ReadStats};
use crate::error::LoadError;
use serde::de::{self, DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use std::fmt;
use std::io::Read;
use std::ops::ControlFlow;
use std::path::Path;

#[derive(Deserialize)]
struct Entry {
    #[serde(rename = "startedDateTime")]
    started: String,
    request: Request,
}

#[derive(Deserialize)]
struct Request {
    method: String,
    url: String,
    #[serde(default)]
    headers: Vec<NameValue>,
    #[serde(default)]
    cookies: Vec<NameValue>,
    #[serde(rename = "postData", default)]
    post_data: Option<PostData>,
}

#[derive(Deserialize)]
struct NameValue {
    name: String,
    #[serde(default)]
    value: String,
}

#[derive(Deserialize)]
struct PostData {
    #[serde(default)]
    text: Option<String>,
    #[serde(default)]
    params: Vec<NameValue>,
}

/// Headers a replay never sends as recorded: they describe one hop or one
/// connection, or are recomputed for the target (RFC 9110 §7.6.1).
const NOT_REPLAYED: [&str; 10] = [
    "connection",
    "keep-alive",
    "proxy-connection",
    "proxy-authorization",
    "te",
    "trailer",
    "transfer-encoding",
    "upgrade",
    "host",
    "content-length",
];

/// Marks the error that stops reading when the consumer has had enough.
const STOPPED: &str = "\u{0}keisoku: replay stopped";

/// Every request of the HAR file at `path`, in file order.
pub fn each_call(
    path: &Path,
    cookies: bool,
    f: &mut dyn FnMut(Call) -> ControlFlow<()>,
) -> Result<ReadStats, LoadError> {
    let file = std::fs::File::open(path)
        .map_err(|e| LoadError::BadInput(format!("--replay {}: {e}", path.display())))?;
    read(std::io::BufReader::with_capacity(1 << 16, file), cookies, f)
        .map_err(|e| LoadError::BadInput(format!("--replay {}: {e}", path.display())))
}

/// Every request of a HAR document read from `reader`; the error says
/// where the document stops being HAR.
pub fn read(
    reader: impl Read,
    cookies: bool,
    f: &mut dyn FnMut(Call) -> ControlFlow<()>,
) -> Result<ReadStats, String> {
    let mut stats = ReadStats {
        format: "har".into(),
        ..ReadStats::default()
    };
    let mut de = serde_json::Deserializer::from_reader(reader);
    let top = Top {
        sink: Sink {
            f,
            stats: &mut stats,
            cookies,
            index: 0,
        },
    };
    match top.deserialize(&mut de) {
        Ok(true) => {}
        Ok(false) => return Err("not a HAR file: no log.entries array".into()),
        Err(e) if e.to_string().starts_with(STOPPED) => return Ok(stats),
        Err(e) => return Err(format!("not a HAR file: {e}")),
    }
    if let Err(e) = de.end() {
        return Err(format!("not a HAR file: {e}"));
    }
    Ok(stats)
}

struct Sink<'a> {
    f: &'a mut dyn FnMut(Call) -> ControlFlow<()>,
    stats: &'a mut ReadStats,
    cookies: bool,
    index: u64,
}

impl Sink<'_> {
    fn entry(&mut self, e: Entry) -> ControlFlow<()> {
        self.index += 1;
        match call(e, self.cookies) {
            Ok(Some(c)) => (self.f)(c),
            Ok(None) => {
                self.stats.not_http += 1;
                ControlFlow::Continue(())
            }
            Err(why) => {
                self.stats.unread += 1;
                if self.stats.first_unread.is_none() {
                    self.stats.first_unread = Some(format!("entry {}: {why}", self.index));
                }
                ControlFlow::Continue(())
            }
        }
    }
}

/// One entry as a call; `None` for a scheme other than http(s).
fn call(e: Entry, cookies: bool) -> Result<Option<Call>, String> {
    let r = e.request;
    let url = r.url.split('#').next().unwrap_or_default();
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return Ok(None);
    }
    let start = keisoku_logs::timestamp::parse(e.started.as_bytes())
        .ok_or_else(|| format!("startedDateTime {:?} is not a time", e.started))?;
    let method = r.method.trim().to_ascii_uppercase();
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
        return Err(format!("method {:?} is not an HTTP method", r.method));
    }
    let (host, target) = split_absolute(url);
    if target.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(format!("URL {url:?} holds spaces or control bytes"));
    }
    let route = target.split('?').next().unwrap_or("/").to_string();
    let mut headers: Vec<(String, String)> = Vec::with_capacity(r.headers.len());
    let mut has_cookie = false;
    for h in r.headers {
        let lower = h.name.to_ascii_lowercase();
        if lower.starts_with(':') || NOT_REPLAYED.contains(&lower.as_str()) {
            continue;
        }
        if lower == "cookie" {
            if !cookies {
                continue;
            }
            has_cookie = true;
        }
        let token = !h.name.is_empty()
            && h.name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b));
        if !token || h.value.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0) {
            return Err(format!("header {:?} cannot be sent again", h.name));
        }
        headers.push((h.name, h.value));
    }
    if cookies && !has_cookie && !r.cookies.is_empty() {
        let jar: Vec<String> = r
            .cookies
            .iter()
            .filter(|c| {
                !c.value
                    .bytes()
                    .any(|b| b == b'\r' || b == b'\n' || b == b';')
            })
            .map(|c| format!("{}={}", c.name, c.value))
            .collect();
        headers.push(("Cookie".into(), jar.join("; ")));
    }
    let body = match r.post_data {
        Some(PostData {
            text: Some(text), ..
        }) => text.into_bytes(),
        Some(PostData { params, .. }) if !params.is_empty() => params
            .iter()
            .map(|p| format!("{}={}", form_encode(&p.name), form_encode(&p.value)))
            .collect::<Vec<_>>()
            .join("&")
            .into_bytes(),
        _ => Vec::new(),
    };
    Ok(Some(Call {
        start,
        method,
        target,
        host,
        route,
        headers,
        body,
        body_lost: false,
    }))
}

/// `application/x-www-form-urlencoded` for one name or value.
fn form_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'*' => {
                out.push(b as char)
            }
            b' ' => out.push('+'),
            _ => out.push_str(&format!("%{b:02X}")),
        }
    }
    out
}

/// The document: `{"log": {...}}`; yields whether `log.entries` was seen.
struct Top<'a> {
    sink: Sink<'a>,
}

impl<'de> DeserializeSeed<'de> for Top<'_> {
    type Value = bool;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Top<'_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("a HAR object with a log")
    }
    fn visit_map<A: MapAccess<'de>>(mut self, mut map: A) -> Result<bool, A::Error> {
        let mut found = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == "log" && !found {
                found = map.next_value_seed(Log {
                    sink: &mut self.sink,
                })?;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// The `log` object: only its `entries` matter.
struct Log<'s, 'a> {
    sink: &'s mut Sink<'a>,
}

impl<'de> DeserializeSeed<'de> for Log<'_, '_> {
    type Value = bool;
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<bool, D::Error> {
        d.deserialize_map(self)
    }
}

impl<'de> Visitor<'de> for Log<'_, '_> {
    type Value = bool;
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the HAR log object")
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<bool, A::Error> {
        let mut found = false;
        while let Some(key) = map.next_key::<String>()? {
            if key == "entries" && !found {
                map.next_value_seed(Entries {
                    sink: &mut *self.sink,
                })?;
                found = true;
            } else {
                map.next_value::<IgnoredAny>()?;
            }
        }
        Ok(found)
    }
}

/// The `entries` array, handed over one entry at a time.
struct Entries<'s, 'a> {
    sink: &'s mut Sink<'a>,
}

impl<'de> DeserializeSeed<'de> for Entries<'_, '_> {
    type Value = ();
    fn deserialize<D: de::Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_seq(self)
    }
}

impl<'de> Visitor<'de> for Entries<'_, '_> {
    type Value = ();
    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("the HAR entries array")
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut index = 0u64;
        while let Some(e) = seq.next_element::<EntryOrNot>()? {
            index += 1;
            match e {
                EntryOrNot::Entry(e) => {
                    if self.sink.entry(e).is_break() {
                        return Err(de::Error::custom(STOPPED));
                    }
                }
                EntryOrNot::Not(why) => {
                    self.sink.index += 1;
                    self.sink.stats.unread += 1;
                    if self.sink.stats.first_unread.is_none() {
                        self.sink.stats.first_unread = Some(format!("entry {index}: {why}"));
                    }
                }
            }
        }
        Ok(())
    }
}

/// An entry, or why an element of `entries` is not one (a missing field):
/// counted, not fatal, as a log line that is not a request.
enum EntryOrNot {
    Entry(Entry),
    Not(String),
}

impl<'de> Deserialize<'de> for EntryOrNot {
    fn deserialize<D: de::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        Ok(match Entry::deserialize(v) {
            Ok(e) => EntryOrNot::Entry(e),
            Err(e) => EntryOrNot::Not(e.to_string()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn calls(doc: &str, cookies: bool) -> Result<(Vec<Call>, ReadStats), String> {
        let mut out = Vec::new();
        let stats = read(doc.as_bytes(), cookies, &mut |c| {
            out.push(c);
            ControlFlow::Continue(())
        })?;
        Ok((out, stats))
    }

    const DOC: &str = r#"{"log": {"version": "1.2", "creator": {"name": "t", "version": "1"},
      "pages": [], "entries": [
      {"startedDateTime": "2026-11-24T10:00:00.250Z", "time": 5,
       "request": {"method": "GET", "url": "http://127.0.0.1:8080/a?x=1#frag", "httpVersion": "HTTP/1.1",
         "headers": [{"name": "Host", "value": "127.0.0.1:8080"}, {"name": "Connection", "value": "keep-alive"},
                     {"name": ":authority", "value": "x"}, {"name": "Accept", "value": "text/html"},
                     {"name": "Cookie", "value": "s=1"}],
         "cookies": [{"name": "s", "value": "1"}], "queryString": [], "headersSize": -1, "bodySize": 0},
       "response": {}, "cache": {}, "timings": {}},
      {"startedDateTime": "2026-11-24T10:00:01.000Z",
       "request": {"method": "post", "url": "https://h/form", "headers": [],
         "postData": {"mimeType": "application/x-www-form-urlencoded", "params": [{"name": "a b", "value": "c&d"}]}}},
      {"startedDateTime": "2026-11-24T10:00:01.500Z", "request": {"method": "GET", "url": "data:text/plain,hi"}},
      {"request": {"method": "GET", "url": "http://h/"}}
    ]}}"#;

    #[test]
    fn entries_become_calls_without_hop_by_hop_headers() {
        let (calls, stats) = calls(DOC, false).unwrap();
        assert_eq!(calls.len(), 2);
        let a = &calls[0];
        assert_eq!((a.method.as_str(), a.target.as_str()), ("GET", "/a?x=1"));
        assert_eq!(a.host.as_deref(), Some("127.0.0.1:8080"));
        assert_eq!(a.route, "/a");
        assert_eq!(
            a.headers,
            vec![("Accept".to_string(), "text/html".to_string())]
        );
        assert!((a.start - 1_795_514_400.25).abs() < 1e-6);
        let b = &calls[1];
        assert_eq!(b.method, "POST");
        assert_eq!(b.body, b"a+b=c%26d");
        assert_eq!((stats.not_http, stats.unread), (1, 1));
        assert!(stats.first_unread.unwrap().starts_with("entry 4: "));
        let (with, _) = super::tests::calls(DOC, true).unwrap();
        assert!(with[0]
            .headers
            .iter()
            .any(|(n, v)| n == "Cookie" && v == "s=1"));
    }

    #[test]
    fn what_is_not_har_says_where() {
        let e = calls(r#"{"log": {"entries": [{"startedDateTime": 1"#, false).unwrap_err();
        assert!(e.contains("not a HAR file") && e.contains("line 1"), "{e}");
        let e = calls(r#"{"other": []}"#, false).unwrap_err();
        assert!(e.contains("no log.entries"), "{e}");
        let e = calls(r#"{"log": {"entries": []}} junk"#, false).unwrap_err();
        assert!(e.contains("trailing"), "{e}");
    }

    #[test]
    fn the_consumer_can_stop_early() {
        let mut n = 0;
        let stats = read(DOC.as_bytes(), false, &mut |_| {
            n += 1;
            ControlFlow::Break(())
        })
        .unwrap();
        assert_eq!((n, stats.unread), (1, 0));
    }
}
