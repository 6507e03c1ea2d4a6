//! The wire side of `keisoku serve`: one event-loop thread reads requests
//! from every connection, a fixed pool of workers answers complete ones.
//! An idle or slow connection costs a file descriptor and a buffer, never a
//! thread (tiny_http spawned a thread per connection: 3,000 idle sockets
//! held 3,008 threads). Connections that stay silent are closed; at the cap
//! the connection idle longest gives way, so a flood of idle sockets cannot
//! lock out the next real request. Every answer closes its connection: the
//! pages are self-contained, so keep-alive would buy little.

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};
use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc, Mutex};
use std::time::{Duration, Instant};

use crate::ReportError;

/// Bounds on what clients may hold.
#[derive(Debug, Clone, Copy)]
pub struct Limits {
    /// Open connections still sending their request; at the cap the one
    /// silent longest is closed to make room.
    pub max_connections: usize,
    /// A connection that sends nothing for this long is closed.
    pub idle_timeout: Duration,
    /// A request must be complete this long after the connection opened.
    pub request_timeout: Duration,
    /// Threads answering requests.
    pub workers: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 1024,
            idle_timeout: Duration::from_secs(10),
            request_timeout: Duration::from_secs(30),
            workers: 4,
        }
    }
}

/// The longest request head (request line and headers) accepted.
pub const MAX_HEAD: usize = 16 * 1024;
/// The largest request body accepted (the API takes no uploads).
pub const MAX_BODY: usize = 64 * 1024;
/// A response that cannot be written within this long is abandoned.
const WRITE_TIMEOUT: Duration = Duration::from_secs(30);

const LISTENER: Token = Token(0);
const WAKER: Token = Token(1);
const FIRST_CONN: usize = 2;

/// One parsed request.
#[derive(Debug, Clone, Default)]
pub struct Request {
    /// `GET`, `POST`, ... as sent.
    pub method: String,
    /// The request target (path and query).
    pub target: String,
    /// Headers in order, names as sent.
    pub headers: Vec<(String, String)>,
    /// The body (bounded by [`MAX_BODY`]).
    pub body: Vec<u8>,
    /// True for HTTP/1.0 requests.
    pub http10: bool,
}

impl Request {
    /// The first header of that name (case-insensitive).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

/// A response before it goes on the wire.
#[derive(Debug)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// MIME type.
    pub content_type: &'static str,
    /// Extra headers (name, value).
    pub headers: Vec<(&'static str, String)>,
    /// Body bytes.
    pub body: Vec<u8>,
}

impl Reply {
    /// A plain-text answer with a one-line message.
    pub fn error(status: u16, msg: impl Into<String>) -> Reply {
        let mut body = msg.into();
        body.push('\n');
        Reply {
            status,
            content_type: "text/plain; charset=utf-8",
            headers: Vec::new(),
            body: body.into_bytes(),
        }
    }
}

/// What answers requests.
pub trait Handler: Sync {
    /// Answers one complete request.
    fn handle(&self, req: &Request) -> Reply;
}

/// A bound server; [`Server::run`] answers requests until [`Stopper::stop`].
pub struct Server {
    listener: Mutex<Option<(Poll, TcpListener)>>,
    waker: Arc<Waker>,
    stop: Arc<AtomicBool>,
    addr: SocketAddr,
    limits: Limits,
}

/// Stops a running [`Server`] from another thread (or a signal handler's
/// thread).
#[derive(Clone)]
pub struct Stopper {
    waker: Arc<Waker>,
    stop: Arc<AtomicBool>,
}

impl Stopper {
    /// Makes [`Server::run`] return once the requests in flight are answered.
    pub fn stop(&self) {
        self.stop.store(true, Ordering::SeqCst);
        // If the wake fails the loop still sees the flag within a second.
        let _ = self.waker.wake();
    }
}

impl Server {
    /// Listens on `addr` (`127.0.0.1:7070`; port 0 picks a free one).
    pub fn bind(addr: &str, limits: Limits) -> Result<Self, ReportError> {
        let bind_err = |reason: String| ReportError::Bind {
            addr: addr.to_string(),
            reason,
        };
        let sock: SocketAddr = addr
            .parse()
            .map_err(|_| bind_err("not an IP address and port".into()))?;
        let mut listener = TcpListener::bind(sock).map_err(|e| bind_err(e.to_string()))?;
        let bound = listener.local_addr().map_err(|e| bind_err(e.to_string()))?;
        let poll = Poll::new().map_err(|e| bind_err(e.to_string()))?;
        poll.registry()
            .register(&mut listener, LISTENER, Interest::READABLE)
            .map_err(|e| bind_err(e.to_string()))?;
        let waker = Waker::new(poll.registry(), WAKER).map_err(|e| bind_err(e.to_string()))?;
        Ok(Server {
            listener: Mutex::new(Some((poll, listener))),
            waker: Arc::new(waker),
            stop: Arc::new(AtomicBool::new(false)),
            addr: bound,
            limits: Limits {
                max_connections: limits.max_connections.max(1),
                workers: limits.workers.max(1),
                ..limits
            },
        })
    }

    /// The address actually bound (useful with port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A handle that stops [`Server::run`].
    pub fn stopper(&self) -> Stopper {
        Stopper {
            waker: Arc::clone(&self.waker),
            stop: Arc::clone(&self.stop),
        }
    }

    /// Answers requests until stopped; returns at once if called twice.
    pub fn run(&self, handler: &dyn Handler) {
        let Some((mut poll, listener)) = self.listener.lock().ok().and_then(|mut g| g.take())
        else {
            return;
        };
        let (tx, rx) = mpsc::sync_channel::<Job>(self.limits.max_connections);
        let rx = Mutex::new(rx);
        std::thread::scope(|scope| {
            for _ in 0..self.limits.workers {
                scope.spawn(|| loop {
                    let job = match rx.lock() {
                        Ok(r) => r.recv(),
                        Err(_) => return,
                    };
                    match job {
                        Ok(job) => answer(handler, job),
                        Err(_) => return,
                    }
                });
            }
            event_loop(&mut poll, &listener, &self.stop, &self.limits, &tx);
            drop(tx);
        });
    }
}

/// A request read in full (or found malformed), with its connection.
struct Job {
    stream: std::net::TcpStream,
    request: Result<Request, Reply>,
}

struct Conn {
    stream: TcpStream,
    buf: Vec<u8>,
    opened: Instant,
    last: Instant,
}

fn event_loop(
    poll: &mut Poll,
    listener: &TcpListener,
    stop: &AtomicBool,
    limits: &Limits,
    jobs: &mpsc::SyncSender<Job>,
) {
    let mut events = Events::with_capacity(1024);
    let mut conns: HashMap<usize, Conn> = HashMap::new();
    let mut next = FIRST_CONN;
    // Accepting stopped short of WouldBlock (out of descriptors): events are
    // edge-triggered, so the backlog must be retried without one.
    let mut accept_pending = false;
    let mut last_sweep = Instant::now();
    while !stop.load(Ordering::SeqCst) {
        let wait = if accept_pending {
            Duration::from_millis(50)
        } else {
            Duration::from_secs(1)
        };
        if let Err(e) = poll.poll(&mut events, Some(wait)) {
            if e.kind() == ErrorKind::Interrupted {
                continue;
            }
            // An unusable poll cannot serve anything; stop rather than spin.
            return;
        }
        let mut readable = Vec::new();
        let mut accept = accept_pending;
        for ev in events.iter() {
            match ev.token() {
                LISTENER => accept = true,
                WAKER => {}
                Token(t) => readable.push(t),
            }
        }
        if accept {
            accept_pending = accept_all(poll, listener, limits, &mut conns, &mut next);
        }
        for t in readable {
            let Some(conn) = conns.get_mut(&t) else {
                continue;
            };
            match read_some(conn) {
                Progress::More => {}
                Progress::Closed => {
                    if let Some(mut c) = conns.remove(&t) {
                        let _ = poll.registry().deregister(&mut c.stream);
                    }
                }
                Progress::Done(request) => {
                    if let Some(mut c) = conns.remove(&t) {
                        let _ = poll.registry().deregister(&mut c.stream);
                        let stream = std::net::TcpStream::from(c.stream);
                        match jobs.try_send(Job { stream, request }) {
                            Ok(()) => {}
                            Err(mpsc::TrySendError::Full(job)) => busy(job.stream),
                            Err(mpsc::TrySendError::Disconnected(_)) => return,
                        }
                    }
                }
            }
        }
        let now = Instant::now();
        if now.duration_since(last_sweep) >= Duration::from_millis(500) {
            last_sweep = now;
            conns.retain(|_, c| {
                let keep = now.duration_since(c.last) < limits.idle_timeout
                    && now.duration_since(c.opened) < limits.request_timeout;
                if !keep {
                    let _ = poll.registry().deregister(&mut c.stream);
                }
                keep
            });
        }
    }
}

/// Accepts until the backlog is empty; true when it had to stop early.
fn accept_all(
    poll: &Poll,
    listener: &TcpListener,
    limits: &Limits,
    conns: &mut HashMap<usize, Conn>,
    next: &mut usize,
) -> bool {
    loop {
        match listener.accept() {
            Ok((mut stream, _)) => {
                if conns.len() >= limits.max_connections {
                    evict_idlest(poll, conns);
                }
                let token = *next;
                *next = next.wrapping_add(1).max(FIRST_CONN);
                if poll
                    .registry()
                    .register(&mut stream, Token(token), Interest::READABLE)
                    .is_err()
                {
                    continue;
                }
                let now = Instant::now();
                conns.insert(
                    token,
                    Conn {
                        stream,
                        buf: Vec::new(),
                        opened: now,
                        last: now,
                    },
                );
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return false,
            Err(e) if e.kind() == ErrorKind::Interrupted => continue,
            Err(e) if e.kind() == ErrorKind::ConnectionAborted => continue,
            Err(_) => {
                // Out of descriptors (EMFILE/ENFILE): free one and come back.
                if conns.is_empty() {
                    return true;
                }
                evict_idlest(poll, conns);
                return true;
            }
        }
    }
}

fn evict_idlest(poll: &Poll, conns: &mut HashMap<usize, Conn>) {
    let oldest = conns
        .iter()
        .min_by_key(|(_, c)| (c.last, c.opened))
        .map(|(t, _)| *t);
    if let Some(mut c) = oldest.and_then(|t| conns.remove(&t)) {
        let _ = poll.registry().deregister(&mut c.stream);
    }
}

enum Progress {
    More,
    Closed,
    Done(Result<Request, Reply>),
}

fn read_some(conn: &mut Conn) -> Progress {
    let mut chunk = [0u8; 8192];
    loop {
        match conn.stream.read(&mut chunk) {
            Ok(0) => return Progress::Closed,
            Ok(n) => {
                conn.last = Instant::now();
                conn.buf.extend_from_slice(&chunk[..n]);
                match parse(&conn.buf) {
                    Parsed::Incomplete => {}
                    Parsed::Done(r) => return Progress::Done(r),
                }
            }
            Err(e) if e.kind() == ErrorKind::WouldBlock => return Progress::More,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return Progress::Closed,
        }
    }
}

enum Parsed {
    Incomplete,
    Done(Result<Request, Reply>),
}

/// Reads one request from the bytes received so far.
fn parse(buf: &[u8]) -> Parsed {
    let Some(head_end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        if buf.len() > MAX_HEAD {
            return Parsed::Done(Err(Reply::error(
                431,
                format!("request head longer than {MAX_HEAD} bytes"),
            )));
        }
        return Parsed::Incomplete;
    };
    if head_end > MAX_HEAD {
        return Parsed::Done(Err(Reply::error(
            431,
            format!("request head longer than {MAX_HEAD} bytes"),
        )));
    }
    let bad = |msg: &str| Parsed::Done(Err(Reply::error(400, msg.to_string())));
    let Ok(head) = std::str::from_utf8(&buf[..head_end]) else {
        return bad("request head is not UTF-8");
    };
    let mut lines = head.split("\r\n");
    let first = lines.next().unwrap_or_default();
    let mut parts = first.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return bad("malformed request line");
    };
    if version != "HTTP/1.1" && version != "HTTP/1.0" {
        return Parsed::Done(Err(Reply::error(
            505,
            format!("{version:?} is not HTTP/1.0 or HTTP/1.1"),
        )));
    }
    if method.is_empty() || !method.bytes().all(|b| b.is_ascii_uppercase()) {
        return bad("malformed method");
    }
    let mut headers = Vec::new();
    for line in lines {
        let Some((k, v)) = line.split_once(':') else {
            return bad("malformed header line");
        };
        if k.is_empty() || k.bytes().any(|b| b <= b' ') {
            return bad("malformed header name");
        }
        headers.push((k.to_string(), v.trim().to_string()));
    }
    let mut req = Request {
        method: method.to_string(),
        target: target.to_string(),
        headers,
        body: Vec::new(),
        http10: version == "HTTP/1.0",
    };
    if req.header("Transfer-Encoding").is_some() {
        return Parsed::Done(Err(Reply::error(
            411,
            "chunked bodies are not accepted; send Content-Length",
        )));
    }
    let len = match req.header("Content-Length") {
        None => 0,
        Some(v) => match v.parse::<usize>() {
            Ok(n) => n,
            Err(_) => return bad("Content-Length is not a number"),
        },
    };
    if len > MAX_BODY {
        return Parsed::Done(Err(Reply::error(
            413,
            format!("request body larger than {MAX_BODY} bytes"),
        )));
    }
    let body_start = head_end + 4;
    if buf.len() < body_start + len {
        return Parsed::Incomplete;
    }
    req.body = buf[body_start..body_start + len].to_vec();
    Parsed::Done(Ok(req))
}

/// Reads one request from the bytes received so far: `None` while it is
/// incomplete, else the request or the error reply. Public for the fuzz
/// target `fuzz/fuzz_targets/serve_request.rs` only.
#[doc(hidden)]
pub fn parse_request(buf: &[u8]) -> Option<Result<Request, Reply>> {
    match parse(buf) {
        Parsed::Incomplete => None,
        Parsed::Done(r) => Some(r),
    }
}

fn answer(handler: &dyn Handler, job: Job) {
    let Job {
        mut stream,
        request,
    } = job;
    let head_only = matches!(&request, Ok(r) if r.method == "HEAD");
    let reply = match &request {
        Ok(req) => handler.handle(req),
        Err(_) => match request {
            Err(reply) => reply,
            Ok(_) => return,
        },
    };
    // The client may have gone; nothing to do about it.
    let _ = stream.set_nonblocking(false);
    let _ = stream.set_write_timeout(Some(WRITE_TIMEOUT));
    let _ = stream.write_all(&wire(&reply, head_only));
    let _ = stream.flush();
    let _ = stream.shutdown(std::net::Shutdown::Write);
}

fn busy(mut stream: std::net::TcpStream) {
    let reply = Reply::error(503, "busy; try again");
    // Non-blocking: a client that does not read loses the message.
    let _ = stream.write_all(&wire(&reply, false));
}

/// The response bytes: status line, headers, body.
pub(crate) fn wire(reply: &Reply, head_only: bool) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\nConnection: close\r\n",
        reply.status,
        reason(reply.status),
        reply.content_type,
        reply.body.len()
    );
    for (k, v) in &reply.headers {
        // Header values are ours, but a newline would split the response.
        if !v.contains(['\r', '\n']) {
            out.push_str(k);
            out.push_str(": ");
            out.push_str(v);
            out.push_str("\r\n");
        }
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    if !head_only {
        bytes.extend_from_slice(&reply.body);
    }
    bytes
}

fn reason(status: u16) -> &'static str {
    match status {
        200 => "OK",
        204 => "No Content",
        400 => "Bad Request",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        409 => "Conflict",
        411 => "Length Required",
        413 => "Content Too Large",
        414 => "URI Too Long",
        416 => "Range Not Satisfiable",
        421 => "Misdirected Request",
        422 => "Unprocessable Content",
        431 => "Request Header Fields Too Large",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        505 => "HTTP Version Not Supported",
        _ => "Status",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn done(buf: &[u8]) -> Result<Request, Reply> {
        match parse(buf) {
            Parsed::Done(r) => r,
            Parsed::Incomplete => panic!("incomplete: {:?}", String::from_utf8_lossy(buf)),
        }
    }

    #[test]
    fn parses_requests_and_refuses_malformed_ones() {
        assert!(matches!(
            parse(b"GET / HTTP/1.1\r\nHost: a"),
            Parsed::Incomplete
        ));
        let r = done(b"GET /x?y=1 HTTP/1.1\r\nHost: a:1\r\nX-A:  b \r\n\r\n").unwrap();
        assert_eq!((r.method.as_str(), r.target.as_str()), ("GET", "/x?y=1"));
        assert_eq!(
            (r.header("host"), r.header("x-a")),
            (Some("a:1"), Some("b"))
        );
        let post = b"POST /d HTTP/1.1\r\nContent-Length: 3\r\n\r\nab";
        assert!(matches!(parse(post), Parsed::Incomplete));
        let mut full = post.to_vec();
        full.push(b'c');
        assert_eq!(done(&full).unwrap().body, b"abc");
        for (raw, status) in [
            (&b"GET /\r\n\r\n"[..], 400),
            (b"GET / HTTP/2\r\n\r\n", 505),
            (b"get / HTTP/1.1\r\n\r\n", 400),
            (b"GET / HTTP/1.1\r\nno colon\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nContent-Length: x\r\n\r\n", 400),
            (b"POST / HTTP/1.1\r\nContent-Length: 99999999\r\n\r\n", 413),
            (
                b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n",
                411,
            ),
        ] {
            let e = done(raw).unwrap_err();
            assert_eq!(e.status, status, "{}", String::from_utf8_lossy(raw));
        }
        let huge = vec![b'a'; MAX_HEAD + 1];
        assert_eq!(done(&huge).unwrap_err().status, 431);
    }

    #[test]
    fn responses_carry_headers_and_no_injected_lines() {
        let mut r = Reply::error(404, "nope");
        r.headers.push(("X-Good", "1".into()));
        r.headers.push(("X-Bad", "a\r\nSet-Cookie: x".into()));
        let text = String::from_utf8(wire(&r, false)).unwrap();
        assert!(text.starts_with("HTTP/1.1 404 Not Found\r\n"));
        assert!(text.contains("X-Good: 1\r\n") && !text.contains("Set-Cookie"));
        assert!(text.ends_with("\r\n\r\nnope\n"));
        assert!(String::from_utf8(wire(&r, true))
            .unwrap()
            .ends_with("\r\n\r\n"));
    }
}
