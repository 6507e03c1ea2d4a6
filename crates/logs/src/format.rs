//! Line parsers for the three alp input formats (LTSV, JSON lines and a
//! regular expression with named groups) and the built-in ones of
//! [`crate::builtin`] (common, combined, Apache with `%D`/`%T`, Caddy,
//! CloudFront, ELB/ALB, S3), and recognising a format from a log's first
//! lines ([`candidates`]).
//!
//! Field names default to alp's (`--uri-label`, `--apptime-key`, ... change
//! them), and a line becomes a [`Record`] by alp's rules: the response time is
//! the app time (`apptime` / `response_time`) or, when that is not a number
//! (nginx writes `-` without an upstream), the request time; the URI goes
//! through Go-compatible normalisation ([`crate::uri`]).

use crate::builtin::{Builtin, Kind, Refusal};
use crate::uri::{self, QueryMode};
use std::borrow::Cow;

/// alp's default pattern for `regexp`: the combined log format followed by a
/// response time and an optional request time.
pub const DEFAULT_PATTERN: &str = concat!(
    r#"^(\S+)\s"#,
    r#"\S+\s+"#,
    r#"(\S+\s+)+"#,
    r#"\[(?P<time>[^]]+)\]\s"#,
    r#""(?P<method>\S*)\s?"#,
    r#"(?P<uri>(?:[^"]*(?:\\")?)*)\s"#,
    r#"([^"]*)"\s"#,
    r#"(?P<status>\S+)\s"#,
    r#"(?P<body_bytes>\S+)\s"#,
    r#""((?:[^"]*(?:\\")?)*)"\s"#,
    r#""(?:.+)""#,
    r#"\s(?P<response_time>\S+)(?:\s(?P<request_time>\S+))?$"#,
);

/// A regex error on one line (the regex crate draws a multi-line caret diagram).
pub fn regex_message(e: &regex::Error) -> String {
    let text = e.to_string();
    let last = text
        .lines()
        .rev()
        .find(|l| !l.trim().is_empty())
        .unwrap_or("invalid regular expression");
    last.trim().trim_start_matches("error: ").to_string()
}

/// Names of the fields a record is built from (labels, keys or group names).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FieldNames {
    /// Request URI.
    pub uri: String,
    /// HTTP method.
    pub method: String,
    /// Request timestamp.
    pub time: String,
    /// Upstream/application response time (preferred).
    pub response_time: String,
    /// Whole request time (used when the response time is not a number).
    pub request_time: String,
    /// Response body size.
    pub body_bytes: String,
    /// Status code.
    pub status: String,
}

impl FieldNames {
    /// alp's LTSV labels: uri, method, time, apptime, reqtime, size, status.
    pub fn ltsv() -> Self {
        Self::new(
            "uri", "method", "time", "apptime", "reqtime", "size", "status",
        )
    }

    /// alp's JSON keys (and regexp group names): uri, method, time,
    /// response_time, request_time, body_bytes, status.
    pub fn json() -> Self {
        Self::new(
            "uri",
            "method",
            "time",
            "response_time",
            "request_time",
            "body_bytes",
            "status",
        )
    }

    fn new(u: &str, m: &str, t: &str, rt: &str, qt: &str, b: &str, s: &str) -> Self {
        FieldNames {
            uri: u.into(),
            method: m.into(),
            time: t.into(),
            response_time: rt.into(),
            request_time: qt.into(),
            body_bytes: b.into(),
            status: s.into(),
        }
    }
}

/// An input format with its field names.
#[derive(Debug, Clone)]
pub enum Format {
    /// Labelled tab-separated values.
    Ltsv(FieldNames),
    /// One JSON object per line.
    Json(FieldNames),
    /// A regular expression with named groups.
    Regexp {
        /// The compiled pattern (bytes, so invalid UTF-8 still matches).
        pattern: regex::bytes::Regex,
        /// Group names.
        names: FieldNames,
    },
    /// A built-in format with its own fixed fields.
    Builtin(Builtin),
}

impl Format {
    /// The subcommand name of the format.
    pub fn name(&self) -> &'static str {
        match self {
            Format::Ltsv(_) => "ltsv",
            Format::Json(_) => "json",
            Format::Regexp { .. } => "regexp",
            Format::Builtin(b) => b.kind().name(),
        }
    }

    /// Whether this format's lines carry a response time (`common` and
    /// `combined` do not: their time columns are absent, never 0).
    pub fn has_times(&self) -> bool {
        match self {
            Format::Builtin(b) => b.kind().has_times(),
            _ => true,
        }
    }

    /// Every format name [`Format::named`] knows, alp's three first.
    pub fn names() -> Vec<&'static str> {
        let mut v = vec!["ltsv", "json", "regexp"];
        v.extend(Kind::ALL.iter().map(|k| k.name()));
        v
    }

    /// The format a recording's `--log-format NAME` (and `--log-regexp`)
    /// names, with the default field names; a stored run keeps these two
    /// words so its lines can be parsed again as they were recorded.
    pub fn named(name: &str, regexp: Option<&str>) -> Result<Format, String> {
        Ok(match name {
            "ltsv" => Format::Ltsv(FieldNames::ltsv()),
            "json" => Format::Json(FieldNames::json()),
            "regexp" => {
                let pattern = regexp.unwrap_or(DEFAULT_PATTERN);
                Format::regexp(pattern, FieldNames::json())
                    .map_err(|e| format!("--log-regexp: {e}"))?
            }
            other => match Kind::from_name(other) {
                Some(k) => Format::Builtin(Builtin::new(k)),
                None => {
                    return Err(format!(
                        "--log-format: unknown format {other:?} ({})",
                        Format::names().join(", ")
                    ))
                }
            },
        })
    }

    /// For a regexp format, the named groups a record needs that its
    /// pattern lacks, as the user would write them (`(?P<status>...)`);
    /// without them no line can be read. `None` when nothing is missing.
    pub fn missing_groups(&self) -> Option<String> {
        let Format::Regexp { pattern, names } = self else {
            return None;
        };
        let has = |n: &str| pattern.capture_names().any(|c| c == Some(n));
        let mut missing: Vec<String> = [&names.uri, &names.status, &names.body_bytes]
            .into_iter()
            .filter(|n| !has(n))
            .map(|n| format!("(?P<{n}>...)"))
            .collect();
        if !has(&names.response_time) && !has(&names.request_time) {
            missing.push(format!(
                "(?P<{}>...) or (?P<{}>...)",
                names.response_time, names.request_time
            ));
        }
        (!missing.is_empty()).then(|| missing.join(", "))
    }

    /// Compiles a regexp format; the error names the pattern problem.
    pub fn regexp(pattern: &str, names: FieldNames) -> Result<Format, regex::Error> {
        Ok(Format::Regexp {
            pattern: regex::bytes::Regex::new(pattern)?,
            names,
        })
    }
}

/// One access-log line, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct Record<'a> {
    /// Normalised URI (query handled per [`QueryMode`]).
    pub uri: Cow<'a, str>,
    /// The URI as written in the log (query string included), for the
    /// slowest-requests list.
    pub raw_uri: Cow<'a, [u8]>,
    /// Method as written.
    pub method: Cow<'a, [u8]>,
    /// Timestamp text as written (parsed lazily, only when needed).
    pub time: Cow<'a, [u8]>,
    /// Response time in seconds (after the configured scale).
    pub response_time: f64,
    /// Response body size in bytes.
    pub body_bytes: f64,
    /// HTTP status code.
    pub status: i64,
}

/// Why a line is not a record.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum LineError {
    /// Not valid JSON / no pattern match.
    #[error("not a {0} line")]
    Syntax(&'static str),
    /// The URI is missing or Go's URL parser would reject it.
    #[error("missing or malformed uri")]
    Uri,
    /// Neither the response time nor the request time is a number.
    #[error("response time is not a number")]
    ResponseTime,
    /// The body size is not a number.
    #[error("body size is not a number")]
    BodyBytes,
    /// The status is not an integer.
    #[error("status is not an integer")]
    Status,
    /// A header line of the format (CloudFront's `#Version`/`#Fields`):
    /// counted as a blank line, not as a malformed one.
    #[error("a header line")]
    Header,
    /// A `#Fields` header whose columns are not the documented ones.
    #[error("#Fields header does not list CloudFront's documented columns (date time x-edge-location sc-bytes ...)")]
    FieldsHeader,
    /// The load balancer logged `-1` for the request's times (it could
    /// not dispatch it, or the connection closed first).
    #[error("no response time (the load balancer logged -1)")]
    Untimed,
}

/// Parses lines of one format into [`Record`]s.
#[derive(Debug, Clone)]
pub struct LineParser {
    format: Format,
    query: QueryMode,
    time_scale: f64,
    /// Group indexes for the regexp format, resolved once.
    groups: [Option<usize>; 7],
}

fn names_array(n: &FieldNames) -> [&str; 7] {
    [
        &n.uri,
        &n.method,
        &n.time,
        &n.response_time,
        &n.request_time,
        &n.body_bytes,
        &n.status,
    ]
}

/// `line` as Go's JSON decoder sees it: every byte that does not start a
/// valid UTF-8 sequence becomes one U+FFFD.
fn go_lossy(line: &[u8]) -> String {
    let mut out = String::with_capacity(line.len() + 8);
    let mut rest = line;
    while !rest.is_empty() {
        match std::str::from_utf8(rest) {
            Ok(s) => {
                out.push_str(s);
                break;
            }
            Err(e) => {
                let (good, bad) = rest.split_at(e.valid_up_to());
                out.push_str(std::str::from_utf8(good).unwrap_or_default());
                out.push('\u{FFFD}');
                rest = &bad[1..];
            }
        }
    }
    out
}

/// Go's `strconv.ParseFloat` on the common inputs (Rust's parser rounds the
/// same way; both accept `inf`/`nan` spellings).
#[inline]
fn parse_f64(b: &[u8]) -> Option<f64> {
    if b.is_empty() || b.len() > 64 {
        return None;
    }
    // Fast path for plain decimals such as "0.123", the overwhelming case.
    std::str::from_utf8(b).ok()?.parse::<f64>().ok()
}

#[inline]
fn parse_int(b: &[u8]) -> Option<i64> {
    let (neg, digits) = match b.first()? {
        b'-' => (true, &b[1..]),
        b'+' => (false, &b[1..]),
        _ => (false, b),
    };
    if digits.is_empty() || digits.len() > 18 {
        return None;
    }
    let mut v: i64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        v = v * 10 + i64::from(d - b'0');
    }
    Some(if neg { -v } else { v })
}

impl LineParser {
    /// A parser for `format`; `time_scale` multiplies response times (1 for
    /// seconds, 1e-3 for milliseconds, 1e-6 for Apache `%D` microseconds).
    pub fn new(format: Format, query: QueryMode, time_scale: f64) -> LineParser {
        // A built-in format writes its times in a known unit.
        let time_scale = match &format {
            Format::Builtin(b) => time_scale * b.kind().time_scale(),
            _ => time_scale,
        };
        let mut groups = [None; 7];
        if let Format::Regexp { pattern, names } = &format {
            for (slot, name) in groups.iter_mut().zip(names_array(names)) {
                *slot = pattern.capture_names().position(|n| n == Some(name));
            }
        }
        LineParser {
            format,
            query,
            time_scale,
            groups,
        }
    }

    /// The format this parser reads.
    pub fn format(&self) -> &Format {
        &self.format
    }

    /// Parses one line (without its line terminator).
    pub fn parse<'a>(&self, line: &'a [u8]) -> Result<Record<'a>, LineError> {
        match &self.format {
            Format::Ltsv(n) => self.ltsv(line, n),
            Format::Json(n) => self.json(line, n),
            Format::Regexp { pattern, .. } => self.regexp(line, pattern),
            Format::Builtin(b) => match b.fields(line) {
                Ok(f) => self.build(f),
                Err(Refusal::Syntax) => Err(LineError::Syntax(b.kind().name())),
                Err(Refusal::Header) => Err(LineError::Header),
                Err(Refusal::Fields) => Err(LineError::FieldsHeader),
                Err(Refusal::Untimed) => Err(LineError::Untimed),
            },
        }
    }

    fn build<'a>(&self, f: [Option<Cow<'a, [u8]>>; 7]) -> Result<Record<'a>, LineError> {
        let [uri, method, time, rt, qt, body, status] = f;
        let raw_uri = uri.unwrap_or(Cow::Borrowed(b""));
        let uri = match &raw_uri {
            Cow::Borrowed(b) => uri::normalize(b, self.query),
            Cow::Owned(v) => uri::normalize(v, self.query).map(|c| Cow::Owned(c.into_owned())),
        }
        .ok_or(LineError::Uri)?;
        let rt = if self.format.has_times() {
            rt.and_then(|v| parse_f64(&v))
                .or_else(|| qt.and_then(|v| parse_f64(&v)))
                .ok_or(LineError::ResponseTime)?
        } else {
            // Never shown: every column and view that needs a time is
            // absent or refused for such a format.
            0.0
        };
        let body = body
            .and_then(|v| parse_f64(&v))
            .ok_or(LineError::BodyBytes)?;
        let status = status
            .and_then(|v| parse_int(&v))
            .ok_or(LineError::Status)?;
        let response_time = if self.time_scale == 1.0 {
            rt
        } else {
            rt * self.time_scale
        };
        Ok(Record {
            uri,
            raw_uri,
            method: method.unwrap_or(Cow::Borrowed(b"")),
            time: time.unwrap_or(Cow::Borrowed(b"")),
            response_time,
            body_bytes: body,
            status,
        })
    }

    fn ltsv<'a>(&self, line: &'a [u8], n: &FieldNames) -> Result<Record<'a>, LineError> {
        let names = names_array(n);
        let mut f: [Option<Cow<'a, [u8]>>; 7] = Default::default();
        let mut any = false;
        // One trailing tab ends the line for alp's reader; an empty field
        // anywhere else is a field without a colon.
        let line = line.strip_suffix(b"\t").unwrap_or(line);
        for field in line.split(|&b| b == b'\t') {
            // alp's LTSV reader rejects the whole line for a field without
            // a colon, and trims spaces around labels and values
            // (`status: 200` is status 200).
            let Some(colon) = memchr::memchr(b':', field) else {
                return Err(LineError::Syntax("LTSV"));
            };
            any = true;
            let (label, value) = (field[..colon].trim_ascii(), field[colon + 1..].trim_ascii());
            for (i, name) in names.iter().enumerate() {
                // Later duplicates win, as in a Go map.
                if label == name.as_bytes() {
                    f[i] = Some(Cow::Borrowed(value));
                }
            }
        }
        if !any {
            return Err(LineError::Syntax("LTSV"));
        }
        self.build(f)
    }

    fn json<'a>(&self, line: &'a [u8], n: &FieldNames) -> Result<Record<'a>, LineError> {
        let obj: serde_json::Map<String, serde_json::Value> = match serde_json::from_slice(line) {
            Ok(o) => o,
            // nginx's escape=json writes bytes >= 0x80 raw; Go's decoder
            // reads each byte that is not UTF-8 as U+FFFD, so alp counts
            // such lines.
            Err(_) if std::str::from_utf8(line).is_err() => {
                serde_json::from_str(&go_lossy(line)).map_err(|_| LineError::Syntax("JSON"))?
            }
            Err(_) => return Err(LineError::Syntax("JSON")),
        };
        let mut f: [Option<Cow<'a, [u8]>>; 7] = Default::default();
        for (i, name) in names_array(n).iter().enumerate() {
            f[i] = obj
                .get(*name)
                .map(|v| Cow::Owned(go_value_text(v).into_bytes()));
        }
        self.build(f)
    }

    fn regexp<'a>(
        &self,
        line: &'a [u8],
        re: &regex::bytes::Regex,
    ) -> Result<Record<'a>, LineError> {
        let caps = re.captures(line).ok_or(LineError::Syntax("regexp"))?;
        let mut f: [Option<Cow<'a, [u8]>>; 7] = Default::default();
        for (slot, g) in f.iter_mut().zip(self.groups) {
            // A group that did not take part reads as "" in Go.
            *slot = g.map(|g| Cow::Borrowed(caps.get(g).map_or(&b""[..], |m| m.as_bytes())));
        }
        self.build(f)
    }
}

/// A JSON value as Go's `fmt.Sprintf("%v")` prints it, which is what alp
/// parses numbers from.
fn go_value_text(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Number(n) => match n.as_f64() {
            Some(f) if f.fract() == 0.0 && f.abs() < 1e21 => format!("{}", f as i128),
            Some(f) => format!("{f}"),
            None => n.to_string(),
        },
        serde_json::Value::Null => "<nil>".into(),
        other => other.to_string(),
    }
}

/// Splits a buffer into lines the way alp reads them: `\n`-terminated,
/// trailing `\r`/`\n` trimmed; yields `(line, is_blank)`.
#[inline]
pub fn trim_line(mut line: &[u8]) -> &[u8] {
    while let [rest @ .., b'\r' | b'\n'] = line {
        line = rest;
    }
    line
}

/// Every format with its default field names, as detection tries them.
fn all_formats() -> Vec<Format> {
    let mut v = vec![
        Format::Ltsv(FieldNames::ltsv()),
        Format::Json(FieldNames::json()),
    ];
    if let Ok(re) = Format::regexp(DEFAULT_PATTERN, FieldNames::json()) {
        v.push(re);
    }
    v.extend(Kind::ALL.map(|k| Format::Builtin(Builtin::new(k))));
    v
}

/// The formats (by name) that read the most of `lines` with their default
/// field names, when they read at least half of them: one name is the
/// log's format, several an ambiguity only the user can settle (an Apache
/// log ending in an integer is `%D` or `%T`), none an unknown format.
/// Header lines (CloudFront's `#Fields`) count for their format only; a
/// load balancer's untimed `-1` line still is one of its lines.
pub fn candidates(lines: &[&[u8]]) -> Vec<&'static str> {
    let lines: Vec<&[u8]> = lines
        .iter()
        .map(|l| trim_line(l))
        .filter(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        return Vec::new();
    }
    let mut scored: Vec<(&'static str, usize)> = Vec::new();
    for f in all_formats() {
        let name = f.name();
        let p = LineParser::new(f, QueryMode::Drop, 1.0);
        let mut score = 0;
        let mut refused = false;
        for l in &lines {
            match p.parse(l) {
                Ok(_) | Err(LineError::Header | LineError::Untimed) => score += 1,
                Err(LineError::FieldsHeader) => refused = true,
                Err(_) => {}
            }
        }
        if !refused {
            scored.push((name, score));
        }
    }
    let best = scored.iter().map(|s| s.1).max().unwrap_or(0);
    if best == 0 || best * 2 < lines.len() {
        return Vec::new();
    }
    scored
        .into_iter()
        .filter(|s| s.1 == best)
        .map(|s| s.0)
        .collect()
}

/// The format of a log whose first lines are `lines`, or the reason none
/// can be chosen (naming the formats tried, or the candidates).
pub fn detected(lines: &[&[u8]]) -> Result<Format, String> {
    let found = candidates(lines);
    match found.as_slice() {
        [one] => Format::named(one, None),
        [] => Err(format!(
            "not a log format keisoku recognises from its first lines (tried {}); name the format: `keisoku logs FORMAT FILE`, or `keisoku logs regexp --pattern` for your own",
            Format::names().join(", ")
        )),
        many => Err(format!(
            "its first lines read as any of {}; name the one it is: `keisoku logs FORMAT FILE`{}",
            many.join(", "),
            if many.contains(&"apache-us") {
                " (apache-us: the last field is Apache's %D, microseconds; apache-s: %T, seconds; regexp: seconds with a fraction, as nginx's $request_time)"
            } else {
                ""
            }
        )),
    }
}

/// Which format a handful of lines look like, for "this looks like a JSON
/// log" messages. `None` when nothing fits.
pub fn detect(lines: &[&[u8]]) -> Option<&'static str> {
    if let [one] = candidates(lines).as_slice() {
        return Some(one);
    }
    let lines: Vec<&[u8]> = lines
        .iter()
        .map(|l| trim_line(l))
        .filter(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        return None;
    }
    // The shape alone, for logs with other labels or keys than alp's.
    let all = |f: &dyn Fn(&[u8]) -> bool| lines.iter().all(|l| f(l));
    if all(&|l| l.first() == Some(&b'{') && serde_json::from_slice::<serde_json::Value>(l).is_ok())
    {
        return Some("json");
    }
    if all(&|l| {
        let fields: Vec<&[u8]> = l.split(|&b| b == b'\t').collect();
        fields.len() >= 2
            && fields
                .iter()
                .all(|f| f.iter().position(|&b| b == b':').is_some_and(|i| i > 0))
    }) {
        return Some("ltsv");
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(f: Format) -> LineParser {
        LineParser::new(f, QueryMode::Drop, 1.0)
    }

    #[test]
    fn lenient_and_strict_where_alp_is() {
        let lp = p(Format::Ltsv(FieldNames::ltsv()));
        let r = lp
            .parse(b"method:GET\turi:/a\tstatus: 200\tsize: 12 \treqtime:0.5\t")
            .unwrap();
        assert_eq!((r.status, r.body_bytes), (200, 12.0));
        // A field without a colon: alp drops the line.
        assert!(lp
            .parse(b"method:GET\turi:/a\tstatus:200\tsize:1\treqtime:0.5\tjunk")
            .is_err());
        assert!(lp
            .parse(b"method:GET\turi:/a\t\tstatus:200\tsize:1\treqtime:0.5")
            .is_err());
        // Raw bytes >= 0x80 in JSON (nginx escape=json): read, not dropped.
        let lj = p(Format::Json(FieldNames::json()));
        let r = lj
            .parse(b"{\"method\":\"GET\",\"uri\":\"/caf\xe9\",\"status\":200,\"body_bytes\":3,\"response_time\":0.25}")
            .unwrap();
        assert_eq!(r.status, 200);
        assert_eq!(r.response_time, 0.25);
        assert_eq!(go_lossy(b"a\xe3\x81b"), "a\u{FFFD}\u{FFFD}b");
    }

    #[test]
    fn ltsv_defaults_and_fallback() {
        let lp = p(Format::Ltsv(FieldNames::ltsv()));
        let r = lp
            .parse(b"time:x\tmethod:GET\turi:/a?b=1\tstatus:200\tsize:12\treqtime:0.5\tapptime:-")
            .unwrap();
        assert_eq!(r.uri, "/a");
        assert_eq!(&*r.method, b"GET");
        assert_eq!(r.response_time, 0.5);
        assert_eq!(r.body_bytes, 12.0);
        assert_eq!(r.status, 200);
        let r = lp
            .parse(b"method:GET\turi:/a\tstatus:200\tsize:12\treqtime:0.5\tapptime:0.25")
            .unwrap();
        assert_eq!(r.response_time, 0.25);
        assert_eq!(
            lp.parse(b"method:GET\turi:/a\tstatus:x\tsize:1\treqtime:1"),
            Err(LineError::Status)
        );
        assert_eq!(lp.parse(b"hello world"), Err(LineError::Syntax("LTSV")));
    }

    #[test]
    fn json_numbers_and_strings() {
        let lp = p(Format::Json(FieldNames::json()));
        let r = lp
            .parse(br#"{"uri":"/x","method":"POST","status":201,"body_bytes":"7","response_time":0.125}"#)
            .unwrap();
        assert_eq!((r.status, r.body_bytes, r.response_time), (201, 7.0, 0.125));
        assert_eq!(lp.parse(b"{nope"), Err(LineError::Syntax("JSON")));
        assert_eq!(
            lp.parse(br#"{"uri":"/x","status":200.5,"body_bytes":1,"response_time":1}"#),
            Err(LineError::Status)
        );
    }

    #[test]
    fn default_regexp_reads_combined_plus_time() {
        let lp = p(Format::regexp(DEFAULT_PATTERN, FieldNames::json()).unwrap());
        let line = br#"127.0.0.1 - - [21/Nov/2026:10:00:00 +0000] "GET /a/b?x=1 HTTP/1.1" 200 612 "-" "curl/8.0" 0.004 0.003"#;
        let r = lp.parse(line).unwrap();
        assert_eq!(r.uri, "/a/b");
        assert_eq!(&*r.method, b"GET");
        assert_eq!(r.response_time, 0.004);
        assert_eq!(r.status, 200);
        assert_eq!(&*r.time, b"21/Nov/2026:10:00:00 +0000");
    }

    #[test]
    fn recognition_names_one_format_or_the_candidates() {
        let clf = br#"127.0.0.1 - - [24/Nov/2026:08:34:53 +0000] "GET /a HTTP/1.1" 200 3"#;
        let comb = br#"127.0.0.1 - - [24/Nov/2026:08:34:53 +0000] "GET /a HTTP/1.1" 200 3 "-" "curl/7.88.1""#;
        let nginx_rt = br#"127.0.0.1 - - [24/Nov/2026:08:34:53 +0000] "GET /a HTTP/1.1" 200 3 "-" "curl/7.88.1" 0.004 0.004"#;
        let apache_d = br#"127.0.0.1 - - [24/Nov/2026:08:34:53 +0000] "GET /a HTTP/1.1" 200 3 "-" "curl/7.88.1" 311"#;
        assert_eq!(candidates(&[clf]), ["common"]);
        assert_eq!(candidates(&[comb, comb]), ["combined"]);
        assert_eq!(candidates(&[nginx_rt]), ["regexp"]);
        assert_eq!(candidates(&[apache_d]), ["regexp", "apache-us", "apache-s"]);
        let e = detected(&[apache_d]).unwrap_err();
        assert!(e.contains("apache-us") && e.contains("%D"), "{e}");
        // Most lines decide; fewer than half read by any format is no format.
        assert_eq!(candidates(&[comb, comb, b"junk"]), ["combined"]);
        assert!(candidates(&[comb, b"junk", b"more junk"]).is_empty());
        let e = detected(&[b"junk"]).unwrap_err();
        assert!(e.contains("tried ltsv, json, regexp, combined"), "{e}");
        assert!(matches!(detected(&[comb]), Ok(Format::Builtin(_))));
        assert!(!detected(&[comb]).unwrap().has_times());
        assert!(detected(&[apache_d]).is_err());
    }

    #[test]
    fn a_pattern_names_the_groups_it_lacks() {
        let f = Format::regexp(r"^(?P<uri>\S+) (?P<status>\d+)$", FieldNames::json()).unwrap();
        assert_eq!(
            f.missing_groups().as_deref(),
            Some("(?P<body_bytes>...), (?P<response_time>...) or (?P<request_time>...)")
        );
        let f = Format::regexp(DEFAULT_PATTERN, FieldNames::json()).unwrap();
        assert_eq!(f.missing_groups(), None);
    }

    #[test]
    fn detection() {
        assert_eq!(detect(&[br#"{"a":1}"#]), Some("json"));
        assert_eq!(detect(&[b"a:1\tb:2"]), Some("ltsv"));
        assert_eq!(detect(&[b"just words"]), None);
    }
}
