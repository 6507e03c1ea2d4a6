//! HTTP/1.x messages read from one direction of a reassembled stream, as
//! alp reads them with Go's `http.ReadRequest` and `http.ReadResponse`:
//! - a message that Go refuses (a malformed start line or header, a bad
//!   length, a broken chunk) ends the reading of that stream, as in alp;
//! - request bodies are skipped by their `Content-Length` only (alp does
//!   not skip a chunked request body, so the next read fails there);
//! - a response body is framed as Go frames it without knowing the
//!   request: none for 1xx, 204 and 304, chunked, `Content-Length`, or to
//!   the end of the connection;
//! - a message's time is taken from a queue of piece times (see
//!   [`HttpStream::piece`]), one per message, as alp's `consumeTimestamp`.

use std::collections::VecDeque;

/// A header block longer than this ends the stream (Go has no limit when
/// reading a capture; this keeps memory bounded on garbage).
const MAX_HEAD: usize = 1 << 20;

/// Go's zero `time.Time` as alp turns it into nanoseconds (`UnixNano`
/// overflows): the time of a message whose start was never seen.
pub const GO_ZERO_TIME_NS: i64 = (-62_135_596_800i64).wrapping_mul(1_000_000_000);

/// Which side of the exchange a stream carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// Client to server.
    Request,
    /// Server to client.
    Response,
}

/// A complete message.
#[derive(Debug, Clone, PartialEq)]
pub enum Message {
    /// A request whose body (if any) was skipped.
    Request {
        /// The method.
        method: String,
        /// The request target as sent.
        uri: String,
        /// When it was captured (ns since the epoch).
        time_ns: i64,
    },
    /// A response, its body read.
    Response {
        /// The status code.
        status: u16,
        /// `Content-Length`, or -1 when the body was chunked or ran to the
        /// end of the connection.
        content_length: i64,
        /// The body's decoded length.
        body: u64,
        /// When it was captured (ns since the epoch).
        time_ns: i64,
    },
}

#[derive(Debug)]
enum Body {
    Fixed(u64),
    /// In a chunked body: bytes left of the current chunk's data, then its
    /// CRLF; `None` when a size line is next.
    Chunked(Option<u64>),
    /// After the last chunk: trailer lines until an empty one.
    Trailer,
    UntilClose,
}

/// The state of a message being read.
#[derive(Debug)]
enum State {
    Head,
    Body {
        body: Body,
        message: Message,
    },
    /// Go refused a message: the rest of the stream is ignored.
    Dead,
}

/// One direction's parser.
#[derive(Debug)]
pub struct HttpStream {
    side: Side,
    buf: Vec<u8>,
    stamps: VecDeque<i64>,
    state: State,
}

impl HttpStream {
    /// A parser of `side`'s messages.
    pub fn new(side: Side) -> HttpStream {
        HttpStream {
            side,
            buf: Vec::new(),
            stamps: VecDeque::new(),
            state: State::Head,
        }
    }

    /// A reassembled piece captured at `seen`; complete messages go to
    /// `out`. alp queues the piece's time when the piece looks like the
    /// start of a message: it begins with `HTTP/1.`, or it is longer than
    /// `GET / HTTP/1.0\r\n` and its first line holds `HTTP/1.`.
    pub fn piece(&mut self, bytes: &[u8], seen: i64, out: &mut Vec<Message>) {
        if bytes.is_empty() {
            return;
        }
        if bytes.starts_with(b"HTTP/1.") {
            self.stamps.push_back(seen);
        } else if bytes.len() > b"GET / HTTP/1.0\r\n".len() {
            if let Some(nr) = memchr::memmem::find(bytes, b"\r\n") {
                if memchr::memmem::find(&bytes[..nr], b"HTTP/1.").is_some() {
                    self.stamps.push_back(seen);
                }
            }
        }
        if matches!(self.state, State::Dead) {
            return;
        }
        self.buf.extend_from_slice(bytes);
        self.advance(false, out);
    }

    /// The stream ended: a body running to the end is complete.
    pub fn end(&mut self, out: &mut Vec<Message>) {
        self.advance(true, out);
        self.buf = Vec::new();
    }

    fn advance(&mut self, eof: bool, out: &mut Vec<Message>) {
        let mut at = 0;
        loop {
            match self.step(at, eof) {
                Step::Used(n, done) => {
                    at += n;
                    out.extend(done);
                }
                Step::NeedMore => break,
                Step::Refused => {
                    self.state = State::Dead;
                    break;
                }
            }
        }
        if matches!(self.state, State::Dead) {
            self.buf = Vec::new();
        } else {
            self.buf.drain(..at);
        }
    }

    /// One step of reading from `at`: a head, a piece of body, a chunk
    /// line.
    fn step(&mut self, at: usize, eof: bool) -> Step {
        let state = &mut self.state;
        let stamps = &mut self.stamps;
        let side = self.side;
        let rest = &self.buf[at..];
        // What cannot complete: wait for more, or at the end (or past the
        // bound) fail as Go's read does.
        let short = |limit: usize| {
            if eof || rest.len() > limit {
                Step::Refused
            } else {
                Step::NeedMore
            }
        };
        let (body, mut message) = match std::mem::replace(state, State::Dead) {
            State::Dead => return Step::NeedMore,
            State::Head => {
                if rest.is_empty() {
                    *state = State::Head;
                    return Step::NeedMore;
                }
                let Some(end) = head_end(rest) else {
                    *state = State::Head;
                    return short(MAX_HEAD);
                };
                let parsed = match side {
                    Side::Request => request_head(&rest[..end]),
                    Side::Response => response_head(&rest[..end]),
                };
                let Some((message, body)) = parsed else {
                    return Step::Refused;
                };
                let message = with_time(message, stamps.pop_front().unwrap_or(GO_ZERO_TIME_NS));
                return match body {
                    None => {
                        *state = State::Head;
                        Step::Used(end, Some(message))
                    }
                    Some(body) => {
                        *state = State::Body { body, message };
                        Step::Used(end, None)
                    }
                };
            }
            State::Body { body, message } => (body, message),
        };
        match body {
            Body::Fixed(n) => {
                if rest.is_empty() {
                    return keep(state, Body::Fixed(n), message, short(usize::MAX));
                }
                let take = (rest.len() as u64).min(n);
                add_body(&mut message, take);
                if take == n {
                    *state = State::Head;
                    Step::Used(take as usize, Some(message))
                } else {
                    keep(
                        state,
                        Body::Fixed(n - take),
                        message,
                        Step::Used(take as usize, None),
                    )
                }
            }
            Body::UntilClose => {
                if !rest.is_empty() {
                    let n = rest.len();
                    add_body(&mut message, n as u64);
                    keep(state, Body::UntilClose, message, Step::Used(n, None))
                } else if eof {
                    *state = State::Head;
                    Step::Used(0, Some(message))
                } else {
                    keep(state, Body::UntilClose, message, Step::NeedMore)
                }
            }
            Body::Chunked(Some(0)) => {
                if rest.len() < 2 {
                    keep(state, Body::Chunked(Some(0)), message, short(usize::MAX))
                } else if &rest[..2] == b"\r\n" {
                    keep(state, Body::Chunked(None), message, Step::Used(2, None))
                } else {
                    Step::Refused
                }
            }
            Body::Chunked(Some(left)) => {
                if rest.is_empty() {
                    return keep(state, Body::Chunked(Some(left)), message, short(usize::MAX));
                }
                let take = (rest.len() as u64).min(left);
                add_body(&mut message, take);
                keep(
                    state,
                    Body::Chunked(Some(left - take)),
                    message,
                    Step::Used(take as usize, None),
                )
            }
            Body::Chunked(None) => {
                let Some(nl) = memchr::memchr(b'\n', rest) else {
                    return keep(state, Body::Chunked(None), message, short(4096));
                };
                match chunk_size(&rest[..nl]) {
                    None => Step::Refused,
                    Some(0) => keep(state, Body::Trailer, message, Step::Used(nl + 1, None)),
                    Some(n) => keep(
                        state,
                        Body::Chunked(Some(n)),
                        message,
                        Step::Used(nl + 1, None),
                    ),
                }
            }
            Body::Trailer => {
                let Some(nl) = memchr::memchr(b'\n', rest) else {
                    return keep(state, Body::Trailer, message, short(MAX_HEAD));
                };
                let line = trim_cr(&rest[..nl]);
                if line.is_empty() {
                    *state = State::Head;
                    Step::Used(nl + 1, Some(message))
                } else if line.contains(&b':') {
                    keep(state, Body::Trailer, message, Step::Used(nl + 1, None))
                } else {
                    Step::Refused
                }
            }
        }
    }
}

/// Keeps reading a body on the next step, and returns `step`.
fn keep(state: &mut State, body: Body, message: Message, step: Step) -> Step {
    *state = State::Body { body, message };
    step
}

/// What one reading step did.
enum Step {
    /// Consumed this many bytes, maybe completing a message.
    Used(usize, Option<Message>),
    /// Needs bytes not yet delivered.
    NeedMore,
    /// Go's reader fails here.
    Refused,
}

fn with_time(m: Message, t: i64) -> Message {
    match m {
        Message::Request { method, uri, .. } => Message::Request {
            method,
            uri,
            time_ns: t,
        },
        Message::Response {
            status,
            content_length,
            body,
            ..
        } => Message::Response {
            status,
            content_length,
            body,
            time_ns: t,
        },
    }
}

fn add_body(m: &mut Message, n: u64) {
    if let Message::Response { body, .. } = m {
        *body += n;
    }
}

fn trim_cr(line: &[u8]) -> &[u8] {
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// The length of the header block at the start of `buf` (through its
/// empty line), if it is all there. Lines end in LF, a CR before it
/// dropped (Go's `textproto`).
fn head_end(buf: &[u8]) -> Option<usize> {
    let mut at = 0;
    let mut first = true;
    while let Some(nl) = memchr::memchr(b'\n', &buf[at..]) {
        let line = trim_cr(&buf[at..at + nl]);
        at += nl + 1;
        if line.is_empty() && !first {
            return Some(at);
        }
        if line.is_empty() && first {
            // An empty first line: Go's parse fails on it; hand it over.
            return Some(at);
        }
        first = false;
    }
    None
}

/// Go's `ParseHTTPVersion`: `HTTP/1.0`, `HTTP/1.1` or `HTTP/M.N` with one
/// digit each.
fn http_version(v: &[u8]) -> Option<(u8, u8)> {
    match v {
        b"HTTP/1.1" => Some((1, 1)),
        b"HTTP/1.0" => Some((1, 0)),
        [b'H', b'T', b'T', b'P', b'/', m, b'.', n] if m.is_ascii_digit() && n.is_ascii_digit() => {
            Some((m - b'0', n - b'0'))
        }
        _ => None,
    }
}

fn is_token(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b)
}

/// Headers: (name lower-cased, value trimmed). `None` when Go refuses one.
fn headers(lines: &[&[u8]]) -> Option<Vec<(String, String)>> {
    let mut out = Vec::new();
    for line in lines {
        if line.is_empty() {
            break;
        }
        if line[0] == b' ' || line[0] == b'\t' {
            // A folded continuation: Go joins it to the previous value.
            let (_, v) = out.last_mut()?;
            let v: &mut String = v;
            v.push(' ');
            v.push_str(String::from_utf8_lossy(line).trim());
            continue;
        }
        let colon = memchr::memchr(b':', line)?;
        let name = &line[..colon];
        if name.is_empty() || !name.iter().all(|&b| is_token(b)) {
            return None;
        }
        let value = String::from_utf8_lossy(&line[colon + 1..])
            .trim_matches(|c| c == ' ' || c == '\t')
            .to_string();
        out.push((String::from_utf8_lossy(name).to_ascii_lowercase(), value));
    }
    Some(out)
}

/// Framing from `Content-Length` and `Transfer-Encoding`, as Go's
/// `readTransfer`: (chunked, content length or -1 when absent).
fn framing(h: &[(String, String)], version: (u8, u8)) -> Option<(bool, i64)> {
    let te: Vec<&str> = h
        .iter()
        .filter(|(n, _)| n == "transfer-encoding")
        .map(|(_, v)| v.as_str())
        .collect();
    let mut chunked = false;
    if !te.is_empty() && version >= (1, 1) {
        if te.len() != 1 || !te[0].eq_ignore_ascii_case("chunked") {
            return None;
        }
        chunked = true;
    }
    if chunked {
        return Some((true, -1));
    }
    let cl: Vec<&str> = h
        .iter()
        .filter(|(n, _)| n == "content-length")
        .map(|(_, v)| v.as_str())
        .collect();
    let Some(first) = cl.first() else {
        return Some((false, -1));
    };
    if cl.iter().any(|v| v.trim() != first.trim()) {
        return None;
    }
    let v = first.trim();
    if v.is_empty() || v.len() > 18 || !v.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((false, v.parse().ok()?))
}

fn lines(head: &[u8]) -> Vec<&[u8]> {
    head.split(|&b| b == b'\n').map(trim_cr).collect()
}

/// Go's `url.ParseRequestURI` accepting `uri`.
fn request_uri_ok(uri: &[u8]) -> bool {
    if uri.is_empty() || uri.iter().any(|&b| b < 0x20 || b == 0x7f) {
        return false;
    }
    if uri == b"*" {
        return true;
    }
    let path_end = memchr::memchr(b'?', uri).unwrap_or(uri.len());
    let path = &uri[..path_end];
    let absolute = path.iter().position(|&b| b == b':').is_some_and(|c| {
        c > 0
            && path[0].is_ascii_alphabetic()
            && path[..c]
                .iter()
                .all(|b| b.is_ascii_alphanumeric() || b"+-.".contains(b))
    });
    if !absolute && path.first() != Some(&b'/') {
        return false;
    }
    // Percent escapes in the path must be whole.
    let mut i = 0;
    while i < path.len() {
        if path[i] == b'%' {
            let ok = path.len() > i + 2
                && path[i + 1].is_ascii_hexdigit()
                && path[i + 2].is_ascii_hexdigit();
            if !ok {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

fn request_head(head: &[u8]) -> Option<(Message, Option<Body>)> {
    let lines = lines(head);
    let first = lines.first()?;
    let sp = memchr::memchr(b' ', first)?;
    let (method, rest) = (&first[..sp], &first[sp + 1..]);
    let sp2 = memchr::memchr(b' ', rest)?;
    let (uri, proto) = (&rest[..sp2], &rest[sp2 + 1..]);
    let version = http_version(proto)?;
    if method.is_empty() || !method.iter().all(|&b| is_token(b)) || !request_uri_ok(uri) {
        return None;
    }
    let h = headers(&lines[1..])?;
    let (chunked, cl) = framing(&h, version)?;
    let message = Message::Request {
        method: String::from_utf8_lossy(method).into_owned(),
        uri: String::from_utf8_lossy(uri).into_owned(),
        time_ns: 0,
    };
    // alp skips only a body with a positive Content-Length.
    let body = (!chunked && cl > 0).then_some(Body::Fixed(cl as u64));
    Some((message, body))
}

fn response_head(head: &[u8]) -> Option<(Message, Option<Body>)> {
    let lines = lines(head);
    let first = lines.first()?;
    let sp = memchr::memchr(b' ', first)?;
    let (proto, status) = (&first[..sp], &first[sp + 1..]);
    let code = status.split(|&b| b == b' ').next()?;
    if code.len() != 3 || !code.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let version = http_version(proto)?;
    let status: u16 = std::str::from_utf8(code).ok()?.parse().ok()?;
    let h = headers(&lines[1..])?;
    let (chunked, cl) = framing(&h, version)?;
    let no_body = status / 100 == 1 || status == 204 || status == 304;
    let (content_length, body) = if no_body {
        (0, None)
    } else if chunked {
        (-1, Some(Body::Chunked(None)))
    } else if cl >= 0 {
        (cl, (cl > 0).then_some(Body::Fixed(cl as u64)))
    } else {
        (-1, Some(Body::UntilClose))
    };
    let message = Message::Response {
        status,
        content_length,
        body: 0,
        time_ns: 0,
    };
    Some((message, body))
}

/// A chunk-size line: hex digits, then optional `;extensions`.
fn chunk_size(line: &[u8]) -> Option<u64> {
    let line = trim_cr(line);
    let line = match memchr::memchr(b';', line) {
        Some(i) => &line[..i],
        None => line,
    };
    let line = line.trim_ascii_end();
    if line.is_empty() || line.len() > 16 || !line.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    u64::from_str_radix(std::str::from_utf8(line).ok()?, 16).ok()
}
