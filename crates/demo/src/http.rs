//! Just enough HTTP/1.1 for the demo: request framing for the servers and a
//! small blocking client with an optional keep-alive pool.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::AtomicU64;
use std::sync::Mutex;
use std::time::Duration;

use crate::stats::Counters;
use crate::DemoError;

/// Largest request head the servers accept.
pub const MAX_HEAD: usize = 16 * 1024;
/// Largest request body the servers accept.
pub const MAX_BODY: usize = 1024 * 1024;

/// One framed request, borrowed from the connection's buffer.
#[derive(Debug)]
pub struct Request<'a> {
    /// Method, e.g. `POST`.
    pub method: &'a str,
    /// Path with query.
    pub path: &'a str,
    /// Body bytes.
    pub body: &'a [u8],
    /// Whether the connection stays open after the answer.
    pub keep_alive: bool,
}

/// What the buffer holds.
#[derive(Debug)]
pub enum Framed<'a> {
    /// Not a whole request yet.
    Partial,
    /// A whole request, and how many bytes of the buffer it used.
    Complete(Request<'a>, usize),
    /// Not HTTP, or over a limit: the status to answer and why.
    Invalid(u16, String),
}

/// Frames the first request in `buf`.
pub fn frame_request(buf: &[u8]) -> Framed<'_> {
    let mut headers = [httparse::EMPTY_HEADER; 32];
    let mut req = httparse::Request::new(&mut headers);
    let head_len = match req.parse(buf) {
        Ok(httparse::Status::Complete(n)) => n,
        Ok(httparse::Status::Partial) if buf.len() > MAX_HEAD => {
            return Framed::Invalid(431, "request head too large".into())
        }
        Ok(httparse::Status::Partial) => return Framed::Partial,
        Err(e) => return Framed::Invalid(400, format!("malformed HTTP request: {e}")),
    };
    let mut content_length = 0usize;
    // HTTP/1.1 keeps the connection by default; HTTP/1.0 closes unless asked.
    let mut keep_alive = req.version == Some(1);
    for h in req.headers.iter() {
        if h.name.eq_ignore_ascii_case("content-length") {
            let parsed = std::str::from_utf8(h.value)
                .ok()
                .and_then(|v| v.trim().parse::<usize>().ok());
            match parsed {
                Some(n) => content_length = n,
                None => return Framed::Invalid(400, "bad Content-Length".into()),
            }
        } else if h.name.eq_ignore_ascii_case("transfer-encoding") {
            return Framed::Invalid(411, "chunked request bodies are not supported".into());
        } else if h.name.eq_ignore_ascii_case("connection") {
            let v = String::from_utf8_lossy(h.value).to_ascii_lowercase();
            if v.contains("close") {
                keep_alive = false;
            } else if v.contains("keep-alive") {
                keep_alive = true;
            }
        }
    }
    if content_length > MAX_BODY {
        return Framed::Invalid(413, "request body too large".into());
    }
    if buf.len() < head_len + content_length {
        return Framed::Partial;
    }
    let (Some(method), Some(path)) = (req.method, req.path) else {
        return Framed::Invalid(400, "malformed HTTP request".into());
    };
    Framed::Complete(
        Request {
            method,
            path,
            body: &buf[head_len..head_len + content_length],
            keep_alive,
        },
        head_len + content_length,
    )
}

/// Reason phrase for the statuses the demo answers.
pub fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        404 => "Not Found",
        405 => "Method Not Allowed",
        411 => "Length Required",
        413 => "Payload Too Large",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        502 => "Bad Gateway",
        _ => "Unknown",
    }
}

/// Appends a whole response to `out`.
pub fn write_response(
    out: &mut Vec<u8>,
    status: u16,
    content_type: &str,
    body: &[u8],
    keep_alive: bool,
) {
    let conn = if keep_alive { "keep-alive" } else { "close" };
    // A 204 carries no body and, per RFC 9110, no Content-Length either.
    if status == 204 {
        let _ = write!(
            out,
            "HTTP/1.1 204 No Content\r\nServer: keisoku-demo\r\nConnection: {conn}\r\n\r\n"
        );
        return;
    }
    let _ = write!(
        out,
        "HTTP/1.1 {status} {}\r\nServer: keisoku-demo\r\nContent-Type: {content_type}\r\nContent-Length: {}\r\nConnection: {conn}\r\n\r\n",
        reason(status),
        body.len()
    );
    out.extend_from_slice(body);
}

/// How a blocking server treats one connection beyond answering requests.
#[derive(Default)]
pub struct ConnPolicy<'a> {
    /// Close the connection after this many requests (0: never), as a
    /// prefork server does so that queued connections get a worker too.
    pub max_requests: usize,
    /// Close a kept-alive connection idle between requests this long, as a
    /// prefork server does so that idle clients do not hold its workers.
    pub idle_timeout: Option<Duration>,
    /// Called for each request that cannot be framed.
    pub on_invalid: Option<&'a dyn Fn()>,
}

/// Serves requests on one blocking connection until it closes, the peer
/// asks to close, the policy's request cap is reached, or `stop` returns
/// true on an idle read timeout.
pub fn serve_blocking(
    mut stream: TcpStream,
    stop: &dyn Fn() -> bool,
    handle: &dyn Fn(&Request<'_>) -> (u16, Vec<u8>),
    policy: &ConnPolicy<'_>,
) {
    let mut served = 0usize;
    let mut last_byte = std::time::Instant::now();
    let _ = stream.set_nodelay(true);
    // The timeout only lets the thread notice shutdown or idleness between requests.
    let tick = policy.idle_timeout.map_or(Duration::from_millis(200), |t| {
        t.min(Duration::from_millis(200))
    });
    let _ = stream.set_read_timeout(Some(tick));
    let mut buf: Vec<u8> = Vec::with_capacity(4096);
    let mut chunk = [0u8; 8192];
    let mut out = Vec::with_capacity(4096);
    loop {
        // Answer every complete request already buffered.
        loop {
            let (consumed, keep_alive) = match frame_request(&buf) {
                Framed::Partial => break,
                Framed::Invalid(status, msg) => {
                    if let Some(on_invalid) = policy.on_invalid {
                        on_invalid();
                    }
                    out.clear();
                    write_response(&mut out, status, "text/plain", msg.as_bytes(), false);
                    let _ = stream.write_all(&out);
                    return;
                }
                Framed::Complete(req, consumed) => {
                    let (status, body) = handle(&req);
                    served += 1;
                    let keep_alive = req.keep_alive
                        && (policy.max_requests == 0 || served < policy.max_requests);
                    out.clear();
                    write_response(&mut out, status, "application/json", &body, keep_alive);
                    (consumed, keep_alive)
                }
            };
            if stream.write_all(&out).is_err() || !keep_alive {
                return;
            }
            buf.drain(..consumed);
        }
        match stream.read(&mut chunk) {
            Ok(0) => return,
            Ok(n) => {
                buf.extend_from_slice(&chunk[..n]);
                last_byte = std::time::Instant::now();
            }
            Err(e)
                if e.kind() == std::io::ErrorKind::WouldBlock
                    || e.kind() == std::io::ErrorKind::TimedOut =>
            {
                let idle = policy
                    .idle_timeout
                    .is_some_and(|t| buf.is_empty() && last_byte.elapsed() >= t);
                if stop() || idle {
                    return;
                }
            }
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(_) => return,
        }
    }
}

/// A blocking HTTP/1.1 client for one upstream, either opening a connection
/// per call (as code without keep-alive does) or reusing idle connections.
#[derive(Debug)]
pub struct Client {
    addr: SocketAddr,
    keep_alive: bool,
    idle: Mutex<Vec<TcpStream>>,
    timeout: Duration,
}

impl Client {
    /// A client for `addr`; `keep_alive` pools connections.
    pub fn new(addr: SocketAddr, keep_alive: bool, timeout: Duration) -> Client {
        Client {
            addr,
            keep_alive,
            idle: Mutex::new(Vec::new()),
            timeout,
        }
    }

    /// Sends one request and returns the status and body. `connects` counts
    /// the TCP connections opened for it.
    pub fn call(
        &self,
        method: &str,
        path: &str,
        body: &[u8],
        connects: &AtomicU64,
    ) -> Result<(u16, Vec<u8>), DemoError> {
        let pooled = if self.keep_alive {
            self.idle.lock().ok().and_then(|mut idle| idle.pop())
        } else {
            None
        };
        if let Some(stream) = pooled {
            // An idle pooled connection may have been closed by the peer; one
            // retry on a fresh connection covers that, as pooled clients do.
            if let Ok(answer) = self.exchange(stream, method, path, body) {
                return Ok(answer);
            }
        }
        let stream = TcpStream::connect_timeout(&self.addr, self.timeout)
            .map_err(|e| DemoError::Upstream(format!("connect {}: {e}", self.addr)))?;
        Counters::bump(connects);
        let _ = stream.set_nodelay(true);
        self.exchange(stream, method, path, body)
    }

    fn exchange(
        &self,
        mut stream: TcpStream,
        method: &str,
        path: &str,
        body: &[u8],
    ) -> Result<(u16, Vec<u8>), DemoError> {
        let up = |e: std::io::Error| DemoError::Upstream(format!("{} {path}: {e}", self.addr));
        stream.set_read_timeout(Some(self.timeout)).map_err(up)?;
        let conn = if self.keep_alive {
            "keep-alive"
        } else {
            "close"
        };
        let mut req = Vec::with_capacity(128 + body.len());
        let _ = write!(
            req,
            "{method} {path} HTTP/1.1\r\nHost: {}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: {conn}\r\n\r\n",
            self.addr,
            body.len()
        );
        req.extend_from_slice(body);
        stream.write_all(&req).map_err(up)?;

        let mut buf = Vec::with_capacity(8192);
        let mut chunk = [0u8; 16 * 1024];
        loop {
            let n = stream.read(&mut chunk).map_err(up)?;
            if n == 0 {
                return Err(DemoError::Upstream(format!(
                    "{} {path}: connection closed mid-response",
                    self.addr
                )));
            }
            buf.extend_from_slice(&chunk[..n]);
            let mut headers = [httparse::EMPTY_HEADER; 16];
            let mut resp = httparse::Response::new(&mut headers);
            let head_len = match resp.parse(&buf) {
                Ok(httparse::Status::Complete(n)) => n,
                Ok(httparse::Status::Partial) => continue,
                Err(e) => {
                    return Err(DemoError::Upstream(format!(
                        "{} {path}: malformed response: {e}",
                        self.addr
                    )))
                }
            };
            let status = resp.code.unwrap_or(0);
            let mut len = 0usize;
            let mut reusable = self.keep_alive;
            for h in resp.headers.iter() {
                if h.name.eq_ignore_ascii_case("content-length") {
                    len = std::str::from_utf8(h.value)
                        .ok()
                        .and_then(|v| v.trim().parse().ok())
                        .unwrap_or(0);
                } else if h.name.eq_ignore_ascii_case("connection")
                    && h.value.eq_ignore_ascii_case(b"close")
                {
                    reusable = false;
                }
            }
            while buf.len() < head_len + len {
                let n = stream.read(&mut chunk).map_err(up)?;
                if n == 0 {
                    return Err(DemoError::Upstream(format!(
                        "{} {path}: connection closed mid-body",
                        self.addr
                    )));
                }
                buf.extend_from_slice(&chunk[..n]);
            }
            let body = buf[head_len..head_len + len].to_vec();
            if reusable {
                if let Ok(mut idle) = self.idle.lock() {
                    idle.push(stream);
                }
            }
            return Ok((status, body));
        }
    }
}
