//! Request templates: placeholders in a URL's path and query, in header
//! values and in bodies, so every request can differ (a sequence number, a
//! random id, a user from a CSV file).
//!
//! The syntax (docs/bench.md "Request templates"):
//! `{{seq}}`, `{{rand_int A B}}`, `{{rand_str N}}`, `{{uuid}}`,
//! `{{timestamp}}`, `{{timestamp_ms}}`, `{{csv.COLUMN}}`; `{{{{` sends a
//! literal `{{`. Anything else between `{{` and `}}` is refused, never
//! sent as written.
//!
//! Why compiled: a template is parsed once into literal runs and value
//! slots, so a request costs one pass that copies bytes and formats a few
//! numbers into a buffer the connection reuses; targets without a
//! placeholder keep their prebuilt bytes and cost nothing.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Longest `{{rand_str N}}`.
pub const MAX_RAND_STR: usize = 4096;

/// Where a template's text goes: values are written so they cannot change
/// the request's framing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Place {
    /// The path and query: CSV values are percent-encoded (all but the
    /// unreserved characters of RFC 3986), so a value stays one value.
    Url,
    /// A header value: CSV values with CR, LF or NUL are refused.
    Header,
    /// The body: values as they are.
    Body,
}

#[derive(Debug, Clone, PartialEq)]
enum Part {
    Lit(Vec<u8>),
    Seq,
    RandInt { low: i64, span: u64 },
    RandStr(usize),
    Uuid,
    Timestamp,
    TimestampMs,
    Csv { col: usize, place: Place },
}

/// A compiled template: literal runs and value slots.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Template {
    parts: Vec<Part>,
}

/// The placeholders a template may use, for error messages.
const KNOWN: &str = "{{seq}}, {{rand_int A B}}, {{rand_str N}}, {{uuid}}, {{timestamp}}, {{timestamp_ms}}, {{csv.COLUMN}}";

/// True when `src` holds anything a template treats specially (`{{`).
pub fn has_placeholder(src: &[u8]) -> bool {
    src.windows(2).any(|w| w == b"{{")
}

/// `src` with each placeholder replaced by `0` and each `{{{{` by `{{`: the
/// shape a URL has once rendered, for checking it before any request.
pub fn skeleton(src: &str) -> Result<String, String> {
    let mut out = String::with_capacity(src.len());
    let mut rest = src;
    while let Some(i) = rest.find("{{") {
        out.push_str(&rest[..i]);
        let after = &rest[i + 2..];
        if let Some(a) = after.strip_prefix("{{") {
            out.push_str("{{");
            rest = a;
            continue;
        }
        let end = after.find("}}").ok_or_else(|| {
            format!("unclosed '{{{{' in {src:?} (write {{{{{{{{ for a literal {{{{)")
        })?;
        out.push('0');
        rest = &after[end + 2..];
    }
    out.push_str(rest);
    Ok(out)
}

impl Template {
    /// A template of literal bytes only.
    pub fn literal(bytes: &[u8]) -> Template {
        let mut t = Template::default();
        t.push_lit(bytes);
        t
    }

    /// True when the template has no value slot (renders to fixed bytes).
    pub fn is_literal(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Lit(_)))
    }

    /// True when a slot reads a CSV row.
    pub fn uses_csv(&self) -> bool {
        self.parts.iter().any(|p| matches!(p, Part::Csv { .. }))
    }

    fn uses_time(&self) -> bool {
        self.parts
            .iter()
            .any(|p| matches!(p, Part::Timestamp | Part::TimestampMs))
    }

    fn push_lit(&mut self, bytes: &[u8]) {
        if bytes.is_empty() {
            return;
        }
        if let Some(Part::Lit(l)) = self.parts.last_mut() {
            l.extend_from_slice(bytes);
        } else {
            self.parts.push(Part::Lit(bytes.to_vec()));
        }
    }

    /// Appends another template.
    pub fn append(&mut self, other: Template) {
        for p in other.parts {
            match p {
                Part::Lit(l) => self.push_lit(&l),
                p => self.parts.push(p),
            }
        }
    }

    /// Compiles `src` for `place`; CSV columns are looked up in `data`.
    /// The error names the placeholder that is not understood.
    pub fn compile(src: &[u8], place: Place, data: Option<&Data>) -> Result<Template, String> {
        let mut t = Template::default();
        let mut rest = src;
        while let Some(i) = rest.windows(2).position(|w| w == b"{{") {
            t.push_lit(&rest[..i]);
            let after = &rest[i + 2..];
            if let Some(a) = after.strip_prefix(b"{{") {
                t.push_lit(b"{{");
                rest = a;
                continue;
            }
            let end = after.windows(2).position(|w| w == b"}}").ok_or_else(|| {
                format!(
                    "unclosed '{{{{' before {} (write {{{{{{{{ for a literal {{{{)",
                    excerpt(after)
                )
            })?;
            let inner = std::str::from_utf8(&after[..end])
                .map_err(|_| format!("unknown template {{{{{}}}}}", excerpt(&after[..end])))?;
            t.parts.push(slot(inner, place, data)?);
            rest = &after[end + 2..];
        }
        t.push_lit(rest);
        Ok(t)
    }

    /// Appends the rendered template to `out`.
    pub(crate) fn render(&self, out: &mut Vec<u8>, d: &mut Draw<'_>) {
        for p in &self.parts {
            match p {
                Part::Lit(l) => out.extend_from_slice(l),
                Part::Seq => push_u64(out, d.seq),
                Part::RandInt { low, span } => {
                    let off = if *span == u64::MAX {
                        d.rng.next()
                    } else {
                        d.rng.below(span + 1)
                    };
                    push_i64(out, low.wrapping_add(off as i64));
                }
                Part::RandStr(n) => {
                    const ALNUM: &[u8; 62] =
                        b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
                    for _ in 0..*n {
                        out.push(ALNUM[d.rng.below(62) as usize]);
                    }
                }
                Part::Uuid => push_uuid(out, d.rng.next(), d.rng.next()),
                Part::Timestamp => push_u64(out, d.now_ms() / 1000),
                Part::TimestampMs => push_u64(out, d.now_ms()),
                Part::Csv { col, place } => {
                    let v = d
                        .row
                        .and_then(|r| r.get(*col))
                        .map(String::as_bytes)
                        .unwrap_or(b"");
                    if *place == Place::Url {
                        push_percent_encoded(out, v);
                    } else {
                        out.extend_from_slice(v);
                    }
                }
            }
        }
    }
}

fn excerpt(b: &[u8]) -> String {
    let s = String::from_utf8_lossy(&b[..b.len().min(40)]);
    format!("{s:?}")
}

fn slot(inner: &str, place: Place, data: Option<&Data>) -> Result<Part, String> {
    let words: Vec<&str> = inner.split_whitespace().collect();
    let unknown = || {
        format!(
            "unknown template {{{{{inner}}}}} (known: {KNOWN}; write {{{{{{{{ for a literal {{{{)"
        )
    };
    Ok(match words.as_slice() {
        ["seq"] => Part::Seq,
        ["uuid"] => Part::Uuid,
        ["timestamp"] => Part::Timestamp,
        ["timestamp_ms"] => Part::TimestampMs,
        ["rand_int", a, b] => {
            let (low, high) = match (a.parse::<i64>(), b.parse::<i64>()) {
                (Ok(l), Ok(h)) if l <= h => (l, h),
                _ => {
                    return Err(format!(
                        "{{{{{inner}}}}}: rand_int needs two integers A <= B"
                    ))
                }
            };
            Part::RandInt {
                low,
                span: high.wrapping_sub(low) as u64,
            }
        }
        ["rand_str", n] => match n.parse::<usize>() {
            Ok(n) if (1..=MAX_RAND_STR).contains(&n) => Part::RandStr(n),
            _ => {
                return Err(format!(
                    "{{{{{inner}}}}}: rand_str needs a length from 1 to {MAX_RAND_STR}"
                ))
            }
        },
        [w] if w.starts_with("csv.") => {
            let name = &w[4..];
            let data = data.ok_or_else(|| {
                format!("{{{{{inner}}}}} needs a data file: give --data FILE.csv")
            })?;
            let col = data.columns.iter().position(|c| c == name).ok_or_else(|| {
                format!(
                    "{{{{{inner}}}}}: {} has no column {name:?} (columns: {})",
                    data.source,
                    data.columns.join(", ")
                )
            })?;
            if place == Place::Header {
                if let Some(n) = data.rows.iter().position(|r| {
                    r.get(col)
                        .is_some_and(|v| v.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0))
                }) {
                    return Err(format!(
                        "{{{{{inner}}}}} in a header: row {} of {} has a line break in column {name:?}",
                        n + 1,
                        data.source
                    ));
                }
            }
            Part::Csv { col, place }
        }
        _ => return Err(unknown()),
    })
}

fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

fn push_i64(out: &mut Vec<u8>, v: i64) {
    if v < 0 {
        out.push(b'-');
    }
    push_u64(out, v.unsigned_abs());
}

const HEX: &[u8; 16] = b"0123456789abcdef";

/// A version 4 (random) UUID, RFC 9562 §5.4.
fn push_uuid(out: &mut Vec<u8>, hi: u64, lo: u64) {
    let hi = (hi & !0xf000) | 0x4000;
    let lo = (lo & !(0xc << 60)) | (0x8 << 60);
    let bytes: [u8; 16] = {
        let mut b = [0u8; 16];
        b[..8].copy_from_slice(&hi.to_be_bytes());
        b[8..].copy_from_slice(&lo.to_be_bytes());
        b
    };
    for (i, byte) in bytes.iter().enumerate() {
        if matches!(i, 4 | 6 | 8 | 10) {
            out.push(b'-');
        }
        out.push(HEX[(byte >> 4) as usize]);
        out.push(HEX[(byte & 15) as usize]);
    }
}

fn push_percent_encoded(out: &mut Vec<u8>, v: &[u8]) {
    for &b in v {
        if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
            out.push(b);
        } else {
            out.push(b'%');
            out.push(HEX[(b >> 4) as usize].to_ascii_uppercase());
            out.push(HEX[(b & 15) as usize].to_ascii_uppercase());
        }
    }
}

/// A small, fast pseudo-random generator (xorshift64*): load values need
/// spread, not secrecy, and a per-thread state needs no lock.
#[derive(Debug, Clone)]
pub(crate) struct Rng(u64);

impl Rng {
    /// A generator for thread `index`, different on every run.
    pub fn new(index: usize) -> Rng {
        let t = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_nanos() as u64)
            .unwrap_or(0x9e37_79b9);
        let mut s = t ^ (index as u64 + 1).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        if s == 0 {
            s = 0x2545_f491_4f6c_dd1d;
        }
        Rng(s)
    }

    pub fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// Uniform in `0..n` (n > 0), by multiply-shift.
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next() as u128 * n as u128) >> 64) as u64
    }
}

/// What one request's slots draw from.
pub(crate) struct Draw<'a> {
    /// `{{seq}}`: the same in every slot of one request.
    pub seq: u64,
    /// The CSV row of this request.
    pub row: Option<&'a [String]>,
    pub rng: &'a mut Rng,
    now_ms: Option<u64>,
}

impl Draw<'_> {
    fn now_ms(&mut self) -> u64 {
        *self.now_ms.get_or_insert_with(|| {
            SystemTime::now()
                .duration_since(UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0)
        })
    }
}

/// How requests take rows from `--data`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DataMode {
    /// One cursor for the run: each request takes the next row, so every
    /// row is used before any repeats.
    #[default]
    SharedSequential,
    /// Each request takes a row at random.
    SharedRandom,
    /// Each connection keeps one row for all its requests (a connection is
    /// one user), rows handed out in file order.
    ConnectionSequential,
    /// Each connection keeps one row, drawn at random.
    ConnectionRandom,
}

impl DataMode {
    /// The `--data-mode` spellings, for help and errors.
    pub const NAMES: &'static str =
        "shared-sequential, shared-random, connection-sequential, connection-random";

    /// Parses a `--data-mode` value.
    pub fn parse(s: &str) -> Result<DataMode, String> {
        Ok(match s {
            "shared-sequential" | "sequential" => DataMode::SharedSequential,
            "shared-random" | "random" => DataMode::SharedRandom,
            "connection-sequential" => DataMode::ConnectionSequential,
            "connection-random" => DataMode::ConnectionRandom,
            _ => {
                return Err(format!(
                    "unknown data mode {s:?} (use one of {})",
                    DataMode::NAMES
                ))
            }
        })
    }

    fn per_connection(self) -> bool {
        matches!(
            self,
            DataMode::ConnectionSequential | DataMode::ConnectionRandom
        )
    }
}

/// The rows of a `--data` CSV file: a header row naming the columns, then
/// at least one row of values, each with as many fields as the header.
#[derive(Debug, Clone, PartialEq)]
pub struct Data {
    /// Where the rows came from (for messages).
    pub source: String,
    /// Column names, from the header row.
    pub columns: Vec<String>,
    /// The rows, each as long as `columns`.
    pub rows: Vec<Vec<String>>,
    /// How requests take rows.
    pub mode: DataMode,
}

impl Data {
    /// Parses CSV text (RFC 4180: commas, double quotes with `""` inside,
    /// line breaks inside quotes, CRLF or LF line ends).
    pub fn parse(source: &str, text: &str, mode: DataMode) -> Result<Data, String> {
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        let mut records: Vec<(usize, Vec<String>)> = Vec::new();
        let mut field = String::new();
        let mut record: Vec<String> = Vec::new();
        let mut line = 1;
        let mut start_line = 1;
        let mut quoted = false;
        let mut was_quoted = false;
        let mut chars = text.chars().peekable();
        while let Some(c) = chars.next() {
            if quoted {
                match c {
                    '"' if chars.peek() == Some(&'"') => {
                        chars.next();
                        field.push('"');
                    }
                    '"' => quoted = false,
                    '\n' => {
                        line += 1;
                        field.push(c);
                    }
                    _ => field.push(c),
                }
                continue;
            }
            match c {
                '"' if field.is_empty() && !was_quoted => {
                    quoted = true;
                    was_quoted = true;
                }
                '"' => {
                    return Err(format!(
                        "{source}:{line}: a double quote inside an unquoted field (quote the field and double the quote)"
                    ))
                }
                ',' => {
                    record.push(std::mem::take(&mut field));
                    was_quoted = false;
                }
                '\r' if chars.peek() == Some(&'\n') => {}
                '\n' => {
                    record.push(std::mem::take(&mut field));
                    was_quoted = false;
                    if !(record.len() == 1 && record[0].is_empty()) {
                        records.push((start_line, std::mem::take(&mut record)));
                    }
                    record.clear();
                    line += 1;
                    start_line = line;
                }
                _ if was_quoted => {
                    return Err(format!(
                        "{source}:{line}: text after a closing double quote"
                    ))
                }
                _ => field.push(c),
            }
        }
        if quoted {
            return Err(format!("{source}:{start_line}: unclosed double quote"));
        }
        if !field.is_empty() || !record.is_empty() || was_quoted {
            record.push(field);
            records.push((start_line, record));
        }
        let mut it = records.into_iter();
        let (_, columns) = it
            .next()
            .ok_or_else(|| format!("{source}: empty; the first line names the columns"))?;
        let columns: Vec<String> = columns.into_iter().map(|c| c.trim().to_string()).collect();
        if let Some(c) = columns.iter().find(|c| c.is_empty()) {
            return Err(format!("{source}:1: a column without a name ({c:?})"));
        }
        for (i, c) in columns.iter().enumerate() {
            if columns[..i].contains(c) {
                return Err(format!("{source}:1: column {c:?} named twice"));
            }
        }
        let mut rows = Vec::new();
        for (l, r) in it {
            if r.len() != columns.len() {
                return Err(format!(
                    "{source}:{l}: {} fields, the header has {}",
                    r.len(),
                    columns.len()
                ));
            }
            rows.push(r);
        }
        if rows.is_empty() {
            return Err(format!("{source}: no rows after the header line"));
        }
        Ok(Data {
            source: source.to_string(),
            columns,
            rows,
            mode,
        })
    }
}

/// The counters a run's requests share across threads and phases.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    /// Next `{{seq}}` minus one.
    seq: AtomicU64,
    /// Next row of the shared sequential cursor (also hands rows to
    /// connections in connection-sequential mode).
    row: AtomicU64,
}

/// One request's bytes as a template: the head up to the framing headers,
/// the body, and what follows the `Content-Length`.
#[derive(Debug, Clone)]
pub(crate) struct RequestTemplate {
    head: Template,
    body: Template,
    content_length: bool,
    tail: Vec<u8>,
    seq: bool,
    csv: bool,
    time: bool,
}

/// Per-connection state a templated request renders with.
#[derive(Debug, Default)]
pub(crate) struct ConnDraw {
    /// The rendered request.
    pub buf: Vec<u8>,
    /// The rendered body, before its length is known.
    body: Vec<u8>,
    /// The connection's own row (connection modes).
    row: Option<usize>,
}

impl RequestTemplate {
    pub fn new(head: Template, body: Template, content_length: bool, tail: Vec<u8>) -> Self {
        let seq = head
            .parts
            .iter()
            .chain(&body.parts)
            .any(|p| *p == Part::Seq);
        let csv = head.uses_csv() || body.uses_csv();
        let time = head.uses_time() || body.uses_time();
        RequestTemplate {
            head,
            body,
            content_length,
            tail,
            seq,
            csv,
            time,
        }
    }

    /// True when a slot reads a `--data` row.
    pub fn uses_csv(&self) -> bool {
        self.csv
    }

    /// The request's bytes when nothing in it varies.
    pub fn fixed(&self) -> Option<Vec<u8>> {
        if !(self.head.is_literal() && self.body.is_literal()) {
            return None;
        }
        let mut c = ConnDraw::default();
        self.render(&mut c, &Counters::default(), None, &mut Rng(1));
        Some(c.buf)
    }

    /// Renders one request into `c.buf` (reused: no allocation once it has
    /// grown to the largest request).
    pub fn render(
        &self,
        c: &mut ConnDraw,
        counters: &Counters,
        data: Option<&Data>,
        rng: &mut Rng,
    ) {
        let seq = if self.seq {
            counters.seq.fetch_add(1, Ordering::Relaxed) + 1
        } else {
            0
        };
        let row = match data.filter(|_| self.csv) {
            None => None,
            Some(d) => {
                let n = d.rows.len() as u64;
                let idx = if d.mode.per_connection() {
                    *c.row.get_or_insert_with(|| match d.mode {
                        DataMode::ConnectionRandom => rng.below(n) as usize,
                        _ => (counters.row.fetch_add(1, Ordering::Relaxed) % n) as usize,
                    })
                } else if d.mode == DataMode::SharedRandom {
                    rng.below(n) as usize
                } else {
                    (counters.row.fetch_add(1, Ordering::Relaxed) % n) as usize
                };
                d.rows.get(idx).map(Vec::as_slice)
            }
        };
        let mut draw = Draw {
            seq,
            row,
            rng,
            now_ms: None,
        };
        if self.time {
            draw.now_ms();
        }
        c.buf.clear();
        c.body.clear();
        self.body.render(&mut c.body, &mut draw);
        self.head.render(&mut c.buf, &mut draw);
        if self.content_length {
            c.buf.extend_from_slice(b"Content-Length: ");
            push_u64(&mut c.buf, c.body.len() as u64);
            c.buf.extend_from_slice(b"\r\n");
        }
        c.buf.extend_from_slice(&self.tail);
        c.buf.extend_from_slice(&c.body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(t: &Template, seq: u64, row: Option<&[String]>) -> String {
        let mut rng = Rng::new(0);
        let mut d = Draw {
            seq,
            row,
            rng: &mut rng,
            now_ms: None,
        };
        let mut out = Vec::new();
        t.render(&mut out, &mut d);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn placeholders_render() {
        let t = Template::compile(
            b"/u/{{seq}}?n={{rand_int 5 7}}&s={{rand_str 8}}",
            Place::Url,
            None,
        )
        .unwrap();
        for _ in 0..50 {
            let s = render(&t, 42, None);
            let (path, q) = s.split_once('?').unwrap();
            assert_eq!(path, "/u/42");
            let n: i64 = q[2..3].parse().unwrap();
            assert!((5..=7).contains(&n), "{s}");
            let rs = q.split("&s=").nth(1).unwrap();
            assert_eq!(rs.len(), 8);
            assert!(rs.bytes().all(|b| b.is_ascii_alphanumeric()));
        }
        let t = Template::compile(b"{{uuid}}", Place::Body, None).unwrap();
        let u = render(&t, 0, None);
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert!("89ab".contains(&u[19..20]), "{u}");
        let t = Template::compile(b"{{timestamp}} {{timestamp_ms}}", Place::Body, None).unwrap();
        let s = render(&t, 0, None);
        let (a, b) = s.split_once(' ').unwrap();
        assert_eq!(a.parse::<u64>().unwrap(), b.parse::<u64>().unwrap() / 1000);
        assert!(a.parse::<u64>().unwrap() > 1_700_000_000);
        let t = Template::compile(b"{{rand_int -3 -3}}", Place::Body, None).unwrap();
        assert_eq!(render(&t, 0, None), "-3");
    }

    #[test]
    fn escapes_and_errors() {
        let t = Template::compile(b"a {{{{seq}} b", Place::Body, None).unwrap();
        assert!(t.is_literal());
        assert_eq!(render(&t, 0, None), "a {{seq}} b");
        assert!(Template::compile(b"{}}{", Place::Body, None)
            .unwrap()
            .is_literal());
        let e = Template::compile(b"x{{rand}}", Place::Body, None).unwrap_err();
        assert!(e.contains("unknown template {{rand}}"), "{e}");
        let e = Template::compile(b"x{{seq", Place::Body, None).unwrap_err();
        assert!(e.contains("unclosed"), "{e}");
        assert!(Template::compile(b"{{rand_int 5 1}}", Place::Body, None).is_err());
        assert!(Template::compile(b"{{rand_str 0}}", Place::Body, None).is_err());
        let e = Template::compile(b"{{csv.id}}", Place::Body, None).unwrap_err();
        assert!(e.contains("--data"), "{e}");
        assert_eq!(
            skeleton("http://h/{{rand_int 1 2}}/{{{{x").unwrap(),
            "http://h/0/{{x"
        );
    }

    #[test]
    fn csv_columns_rows_and_encoding() {
        let d = Data::parse(
            "u.csv",
            "id,name\r\n1,\"a b, \"\"c\"\"\"\n2,x\n\n",
            DataMode::SharedSequential,
        )
        .unwrap();
        assert_eq!(d.columns, ["id", "name"]);
        assert_eq!(d.rows.len(), 2);
        assert_eq!(d.rows[0][1], "a b, \"c\"");
        let t = Template::compile(b"/{{csv.name}}", Place::Url, Some(&d)).unwrap();
        assert_eq!(render(&t, 0, Some(&d.rows[0])), "/a%20b%2C%20%22c%22");
        let t = Template::compile(b"{{csv.name}}", Place::Body, Some(&d)).unwrap();
        assert_eq!(render(&t, 0, Some(&d.rows[0])), "a b, \"c\"");
        let e = Template::compile(b"{{csv.nope}}", Place::Body, Some(&d)).unwrap_err();
        assert!(
            e.contains("no column \"nope\"") && e.contains("id, name"),
            "{e}"
        );
        let nl = Data::parse("n.csv", "v\n\"a\nb\"\n", DataMode::SharedSequential).unwrap();
        assert!(Template::compile(b"{{csv.v}}", Place::Header, Some(&nl)).is_err());
        assert!(Data::parse("e.csv", "", DataMode::SharedSequential).is_err());
        assert!(Data::parse("h.csv", "a,b\n", DataMode::SharedSequential).is_err());
        let e = Data::parse("f.csv", "a,b\n1\n", DataMode::SharedSequential).unwrap_err();
        assert!(e.contains("f.csv:2: 1 fields"), "{e}");
        assert!(Data::parse("q.csv", "a\n\"x\n", DataMode::SharedSequential).is_err());
    }

    #[test]
    fn rows_follow_the_mode() {
        let text = "id\n0\n1\n2\n";
        let head = |d: &Data| Template::compile(b"{{csv.id}}", Place::Body, Some(d)).unwrap();
        let req = |d: &Data| RequestTemplate::new(Template::default(), head(d), false, Vec::new());
        let mut rng = Rng::new(1);
        let d = Data::parse("d", text, DataMode::SharedSequential).unwrap();
        let (r, c) = (req(&d), Counters::default());
        let mut conns = [ConnDraw::default(), ConnDraw::default()];
        let mut seen = String::new();
        for k in 0..4 {
            let cd = &mut conns[k % 2];
            r.render(cd, &c, Some(&d), &mut rng);
            seen.push_str(std::str::from_utf8(&cd.buf).unwrap());
        }
        assert_eq!(seen, "0120");
        let d = Data::parse("d", text, DataMode::ConnectionSequential).unwrap();
        let (r, c) = (req(&d), Counters::default());
        let mut conns = [ConnDraw::default(), ConnDraw::default()];
        let mut seen = String::new();
        for k in 0..4 {
            let cd = &mut conns[k % 2];
            r.render(cd, &c, Some(&d), &mut rng);
            seen.push_str(std::str::from_utf8(&cd.buf).unwrap());
        }
        assert_eq!(seen, "0101");
    }

    #[test]
    fn content_length_follows_the_rendered_body() {
        let body = Template::compile(b"{\"id\":{{seq}}}", Place::Body, None).unwrap();
        let head = Template::literal(b"POST / HTTP/1.1\r\n");
        let r = RequestTemplate::new(head, body, true, b"\r\n".to_vec());
        let c = Counters::default();
        let mut cd = ConnDraw::default();
        let mut rng = Rng::new(0);
        for _ in 0..9 {
            r.render(&mut cd, &c, None, &mut rng);
        }
        r.render(&mut cd, &c, None, &mut rng);
        assert_eq!(
            String::from_utf8(cd.buf.clone()).unwrap(),
            "POST / HTTP/1.1\r\nContent-Length: 9\r\n\r\n{\"id\":10}"
        );
    }
}
