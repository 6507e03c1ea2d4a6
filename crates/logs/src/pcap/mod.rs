//! HTTP exchanges from a packet capture: alp's `pcap` input. A classic
//! pcap file ([`file`]) is decoded to TCP segments ([`decode`]),
//! reassembled per direction ([`assembly`]), read as HTTP/1.x messages
//! ([`http`]), and each response is paired with the last request read
//! from the same client address and port, as alp pairs them:
//! - the server is any of the given addresses on the given port; traffic
//!   between other endpoints is passed over;
//! - a request waits for its response; a second request from the same
//!   client before the response replaces the first (alp keys its waiting
//!   requests by the client's address), and a response without a waiting
//!   request is dropped;
//! - the response time is the capture time of the response's first piece
//!   minus that of the request's, in seconds (absolute value), and the
//!   time of the exchange is the request's, formatted as RFC 3339 in the
//!   local time zone (`TZ`), as alp formats it;
//! - the body size is the response's `Content-Length`, or its decoded
//!   length when chunked or delimited by the end of the connection.
//!
//! Every exchange is produced as soon as its response is complete, so a
//! capture is read in one pass and in bounded memory (waiting segments and
//! requests aside). [`LtsvStream`] turns them into LTSV lines for the
//! line-oriented analysis.

pub mod assembly;
pub mod decode;
pub mod file;
pub mod http;

use assembly::{Assembler, FlowKey, Sink};
pub use file::PcapError;
use file::PcapReader;
use http::{HttpStream, Message, Side};
/// The zone capture times are shown in (jiff's, re-exported for callers).
pub use jiff::tz::TimeZone;
use std::collections::{HashMap, VecDeque};
use std::io::{self, Read};
use std::net::IpAddr;

/// The HTTP server in the capture: alp's `--pcap-server-ip` (any of them)
/// and `--pcap-server-port`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Server {
    /// Its addresses (an IPv4 address also matches its IPv4-mapped IPv6
    /// form, as Go's `IP.Equal`).
    pub ips: Vec<IpAddr>,
    /// Its TCP port.
    pub port: u16,
}

impl Default for Server {
    fn default() -> Server {
        Server {
            ips: vec![IpAddr::from([127, 0, 0, 1])],
            port: 80,
        }
    }
}

impl Server {
    /// Parses alp's `--pcap-server-ip` values (each may hold several,
    /// comma-separated, as cobra's string slices do).
    pub fn parse_ips(values: &[String]) -> Result<Vec<IpAddr>, String> {
        let mut ips = Vec::new();
        for v in values {
            for one in v.split(',') {
                ips.push(
                    one.trim()
                        .parse::<IpAddr>()
                        .map_err(|_| format!("failed to parse ip: {one}"))?,
                );
            }
        }
        Ok(ips)
    }

    /// Which side `key` carries, and its client's address; `None` when
    /// neither end is the server.
    fn side(&self, key: &FlowKey) -> Option<(Side, (IpAddr, u16))> {
        let (src, dst) = (key.src.to_canonical(), key.dst.to_canonical());
        for ip in &self.ips {
            let ip = ip.to_canonical();
            if src == ip && key.src_port == self.port {
                return Some((Side::Response, (key.dst, key.dst_port)));
            } else if dst == ip && key.dst_port == self.port {
                return Some((Side::Request, (key.src, key.src_port)));
            }
        }
        None
    }
}

/// One request paired with its response.
#[derive(Debug, Clone, PartialEq)]
pub struct Exchange {
    /// The request's method.
    pub method: String,
    /// The request target as sent.
    pub uri: String,
    /// The request's capture time, ns since the epoch.
    pub time_ns: i64,
    /// The response's status.
    pub status: u16,
    /// The response body's size.
    pub body_bytes: i64,
    /// Response minus request capture time, in seconds (absolute).
    pub response_time: f64,
}

/// A request waiting for its response.
struct Waiting {
    method: String,
    uri: String,
    time_ns: i64,
}

/// The HTTP parsers of the open streams and the requests waiting.
struct Streams {
    server: Server,
    open: HashMap<FlowKey, (HttpStream, (IpAddr, u16))>,
    waiting: HashMap<(IpAddr, u16), Waiting>,
    ready: VecDeque<Exchange>,
    messages: Vec<Message>,
}

impl Streams {
    fn take(&mut self, client: (IpAddr, u16)) {
        for m in self.messages.drain(..) {
            match m {
                Message::Request {
                    method,
                    uri,
                    time_ns,
                } => {
                    self.waiting.insert(
                        client,
                        Waiting {
                            method,
                            uri,
                            time_ns,
                        },
                    );
                }
                Message::Response {
                    status,
                    content_length,
                    body,
                    time_ns,
                } => {
                    let Some(req) = self.waiting.remove(&client) else {
                        continue;
                    };
                    // alp re-reads a response of unknown length with its
                    // request: after HEAD it has no body.
                    let body_bytes = if content_length >= 0 {
                        content_length
                    } else if req.method == "HEAD" {
                        0
                    } else {
                        i64::try_from(body).unwrap_or(i64::MAX)
                    };
                    self.ready.push_back(Exchange {
                        method: req.method,
                        uri: req.uri,
                        time_ns: req.time_ns,
                        status,
                        body_bytes,
                        response_time: go_seconds(time_ns, req.time_ns).abs(),
                    });
                }
            }
        }
    }
}

/// Go's `t.Sub(u).Seconds()`: the difference saturates at the limits of a
/// `time.Duration`, then whole seconds plus the rest.
fn go_seconds(t: i64, u: i64) -> f64 {
    let d =
        (i128::from(t) - i128::from(u)).clamp(i128::from(i64::MIN), i128::from(i64::MAX)) as i64;
    let sec = d / 1_000_000_000;
    let nsec = d % 1_000_000_000;
    sec as f64 + nsec as f64 / 1e9
}

impl Sink for Streams {
    fn opened(&mut self, key: &FlowKey) {
        if let Some((side, client)) = self.server.side(key) {
            self.open.insert(*key, (HttpStream::new(side), client));
        }
    }

    fn bytes(&mut self, key: &FlowKey, bytes: &[u8], seen: i64) {
        let client = match self.open.get_mut(key) {
            Some((stream, client)) => {
                stream.piece(bytes, seen, &mut self.messages);
                *client
            }
            None => return,
        };
        self.take(client);
    }

    fn closed(&mut self, key: &FlowKey) {
        if let Some((mut stream, client)) = self.open.remove(key) {
            stream.end(&mut self.messages);
            self.take(client);
        }
    }
}

/// The exchanges of a capture, read one by one.
pub struct Exchanges<R: Read> {
    reader: PcapReader<R>,
    assembler: Assembler,
    streams: Streams,
    flushed: bool,
}

/// Opens `input` (a classic pcap file, maybe gzip-compressed) for the
/// exchanges with `server`.
pub fn exchanges(
    input: impl Read + Send + 'static,
    server: Server,
) -> Result<Exchanges<Box<dyn Read + Send>>, PcapError> {
    Ok(Exchanges::new(file::open(input)?, server))
}

impl<R: Read> Exchanges<R> {
    /// The exchanges of the capture `reader` reads.
    pub fn new(reader: PcapReader<R>, server: Server) -> Exchanges<R> {
        Exchanges {
            reader,
            assembler: Assembler::default(),
            streams: Streams {
                server,
                open: HashMap::new(),
                waiting: HashMap::new(),
                ready: VecDeque::new(),
                messages: Vec::new(),
            },
            flushed: false,
        }
    }

    /// The next exchange, in the order alp produces them (when their
    /// responses complete), or `None` at the end.
    pub fn next_exchange(&mut self) -> Result<Option<Exchange>, PcapError> {
        loop {
            if let Some(e) = self.streams.ready.pop_front() {
                return Ok(Some(e));
            }
            if self.flushed {
                return Ok(None);
            }
            let link = self.reader.link_type();
            let le = self.reader.little_endian_writer();
            match self.reader.next_packet()? {
                Some(p) => {
                    if let Some(s) = decode::segment(link, le, p.data) {
                        let key = FlowKey {
                            src: s.src,
                            dst: s.dst,
                            src_port: s.src_port,
                            dst_port: s.dst_port,
                        };
                        self.assembler.segment(
                            key,
                            s.seq,
                            s.syn,
                            s.fin,
                            s.rst,
                            s.payload,
                            p.time_ns,
                            &mut self.streams,
                        );
                    }
                }
                None => {
                    self.assembler.flush(&mut self.streams);
                    self.flushed = true;
                }
            }
        }
    }
}

/// Formats `ns` as Go's `time.RFC3339` in `tz`: `Z` for a zero offset,
/// else `+hh:mm`.
pub fn rfc3339(ns: i64, tz: &jiff::tz::TimeZone) -> String {
    let Ok(ts) = jiff::Timestamp::from_nanosecond(i128::from(ns)) else {
        return String::new();
    };
    let dt = tz.to_datetime(ts);
    let off = tz.to_offset(ts).seconds();
    let mut s = format!(
        "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}",
        dt.year(),
        dt.month(),
        dt.day(),
        dt.hour(),
        dt.minute(),
        dt.second()
    );
    if off == 0 {
        s.push('Z');
    } else {
        let minutes = off.abs() / 60;
        s.push_str(&format!(
            "{}{:02}:{:02}",
            if off < 0 { '-' } else { '+' },
            minutes / 60,
            minutes % 60
        ));
    }
    s
}

/// The local time zone as Go's `time.Local` finds it: `TZ`, else
/// `/etc/localtime`, else UTC.
pub fn local_zone() -> jiff::tz::TimeZone {
    match std::env::var("TZ") {
        Ok(tz) if tz.is_empty() => jiff::tz::TimeZone::UTC,
        Ok(tz) => {
            let name = tz.strip_prefix(':').unwrap_or(&tz);
            jiff::tz::TimeZone::get(name).unwrap_or(jiff::tz::TimeZone::UTC)
        }
        Err(_) => jiff::tz::TimeZone::try_system().unwrap_or(jiff::tz::TimeZone::UTC),
    }
}

/// A capture's exchanges as LTSV lines (`time`, `method`, `uri`, `status`,
/// `size`, `apptime`: the default labels), so every analysis of LTSV logs
/// applies to a capture. A capture that cannot be read fails the read with
/// [`io::ErrorKind::InvalidData`] and the reason.
pub struct LtsvStream<R: Read> {
    exchanges: Exchanges<R>,
    tz: jiff::tz::TimeZone,
    line: Vec<u8>,
    at: usize,
    /// A read error met after some lines were copied, returned by the next
    /// call so neither the lines nor the error are lost.
    pending: Option<PcapError>,
}

impl<R: Read> LtsvStream<R> {
    /// Lines of `exchanges`, times in the local zone.
    pub fn new(exchanges: Exchanges<R>) -> LtsvStream<R> {
        LtsvStream {
            exchanges,
            tz: local_zone(),
            line: Vec::new(),
            at: 0,
            pending: None,
        }
    }
}

/// The line of `e`. A `#` in the target is kept as `%23`: Go reads a
/// request target without a fragment, and LTSV's URI parse would cut it.
pub fn ltsv_line(e: &Exchange, tz: &jiff::tz::TimeZone, out: &mut Vec<u8>) {
    use std::io::Write as _;
    let uri = e.uri.replace('#', "%23");
    // Writing to a Vec cannot fail.
    let _ = writeln!(
        out,
        "time:{}\tmethod:{}\turi:{}\tstatus:{}\tsize:{}\tapptime:{}",
        rfc3339(e.time_ns, tz),
        e.method,
        uri,
        e.status,
        e.body_bytes,
        e.response_time
    );
}

impl<R: Read> Read for LtsvStream<R> {
    /// Fills `buf` with as many lines as fit (a line that does not fit is
    /// continued by the next call), so the caller's per-read cost is paid
    /// per buffer, not per exchange.
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(e) = self.pending.take() {
            return Err(io::Error::from(e));
        }
        let mut n = 0;
        while n < buf.len() {
            if self.at == self.line.len() {
                self.line.clear();
                self.at = 0;
                match self.exchanges.next_exchange() {
                    Ok(Some(e)) => ltsv_line(&e, &self.tz, &mut self.line),
                    Ok(None) => break,
                    Err(e) if n == 0 => return Err(io::Error::from(e)),
                    Err(e) => {
                        self.pending = Some(e);
                        break;
                    }
                }
            }
            let take = (buf.len() - n).min(self.line.len() - self.at);
            buf[n..n + take].copy_from_slice(&self.line[self.at..self.at + take]);
            self.at += take;
            n += take;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests;
