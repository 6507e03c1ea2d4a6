//! Test servers on 127.0.0.1 (free port), one thread per connection, with
//! behaviours chosen by path:
//!
//! - `/` or anything else: 200 with body `ok`
//! - `/status/NNN`: that status, empty body
//! - `/chunked`: a chunked body of 3 chunks
//! - `/large/N`: a body of N bytes (content-length)
//! - `/cut`: announces 100 bytes, sends 10, closes (mid-response close)
//! - `/hang`: reads the request and never answers
//! - `/close`: answers with `Connection: close` and closes
//! - `/garbage`: answers with something that is not HTTP
//!
//! Optional capacity (`slots` concurrent requests each taking `service`)
//! and periodic stalls (`stall`: every `period`, all answers wait until the
//! stall of `length` is over). The server counts requests and accepted
//! connections so tests can compare with what the client reports.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

#[derive(Clone, Default)]
pub struct Config {
    /// Concurrent requests served at once (others queue).
    pub slots: Option<usize>,
    /// Time each request holds its slot (or sleeps when no slots are set).
    pub service: Duration,
    /// (period, length): the server stalls for `length` at the start of every `period`.
    pub stall: Option<(Duration, Duration)>,
}

pub struct TestServer {
    pub addr: SocketAddr,
    pub requests: Arc<AtomicU64>,
    pub connections: Arc<AtomicU64>,
    stop: Arc<AtomicBool>,
}

/// Capacity on a virtual clock: each slot knows when it is next free, and a
/// request completes at max(arrival, earliest free slot) + service. Sleeping
/// until an absolute completion time keeps scheduler delays on a busy test
/// machine from eating into the capacity (they only add jitter).
struct Slots {
    free_at: Mutex<Vec<Instant>>,
}

impl TestServer {
    pub fn start(cfg: Config) -> TestServer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1:0");
        let addr = listener.local_addr().unwrap();
        let requests = Arc::new(AtomicU64::new(0));
        let connections = Arc::new(AtomicU64::new(0));
        let stop = Arc::new(AtomicBool::new(false));
        let slots = cfg.slots.map(|n| {
            Arc::new(Slots {
                free_at: Mutex::new(vec![Instant::now(); n]),
            })
        });
        let started = Instant::now();
        let (r, c, s) = (requests.clone(), connections.clone(), stop.clone());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                if s.load(Ordering::Relaxed) {
                    break;
                }
                let Ok(stream) = stream else { continue };
                c.fetch_add(1, Ordering::Relaxed);
                let (r, slots, cfg) = (r.clone(), slots.clone(), cfg.clone());
                std::thread::spawn(move || serve(stream, r, slots, cfg, started));
            }
        });
        TestServer {
            addr,
            requests,
            connections,
            stop,
        }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://{}{}", self.addr, path)
    }

    pub fn requests(&self) -> u64 {
        self.requests.load(Ordering::SeqCst)
    }

    pub fn connections(&self) -> u64 {
        self.connections.load(Ordering::SeqCst)
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        // Wake the accept loop so it sees the stop flag.
        let _ = TcpStream::connect(self.addr);
    }
}

/// A port with nothing listening (bound then released).
pub fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn serve(
    stream: TcpStream,
    count: Arc<AtomicU64>,
    slots: Option<Arc<Slots>>,
    cfg: Config,
    started: Instant,
) {
    let _ = stream.set_nodelay(true);
    let mut reader = BufReader::new(match stream.try_clone() {
        Ok(s) => s,
        Err(_) => return,
    });
    let mut out = stream;
    loop {
        let mut line = String::new();
        match reader.read_line(&mut line) {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let path = line.split_whitespace().nth(1).unwrap_or("/").to_string();
        let mut length = 0usize;
        let mut close = line.contains("HTTP/1.0");
        loop {
            let mut h = String::new();
            if reader.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let lower = h.to_ascii_lowercase();
            if lower == "\r\n" {
                break;
            }
            if let Some(v) = lower.strip_prefix("content-length:") {
                length = v.trim().parse().unwrap_or(0);
            }
            if lower.starts_with("connection:") && lower.contains("close") {
                close = true;
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        count.fetch_add(1, Ordering::SeqCst);
        if let Some((period, len)) = cfg.stall {
            let phase = started.elapsed().as_nanos() % period.as_nanos();
            if phase < len.as_nanos() {
                std::thread::sleep(Duration::from_nanos((len.as_nanos() - phase) as u64));
            }
        }
        match &slots {
            Some(s) => {
                let now = Instant::now();
                let done = {
                    let mut free_at = s.free_at.lock().unwrap();
                    let slot = free_at.iter_mut().min().unwrap();
                    *slot = (*slot).max(now) + cfg.service;
                    *slot
                };
                std::thread::sleep(done.saturating_duration_since(Instant::now()));
            }
            None if !cfg.service.is_zero() => std::thread::sleep(cfg.service),
            None => {}
        }
        let conn = if close { "Connection: close\r\n" } else { "" };
        let res: Vec<u8> = if let Some(code) = path.strip_prefix("/status/") {
            format!("HTTP/1.1 {code} X\r\nContent-Length: 0\r\n{conn}\r\n").into_bytes()
        } else if path == "/chunked" {
            format!("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n{conn}\r\n5\r\nhello\r\n1a\r\nabcdefghijklmnopqrstuvwxyz\r\n3\r\nend\r\n0\r\n\r\n").into_bytes()
        } else if let Some(n) = path.strip_prefix("/large/") {
            let n: usize = n.parse().unwrap_or(0);
            let mut v =
                format!("HTTP/1.1 200 OK\r\nContent-Length: {n}\r\n{conn}\r\n").into_bytes();
            v.resize(v.len() + n, b'x');
            v
        } else if path == "/cut" {
            let _ = out.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n0123456789");
            return;
        } else if path == "/hang" {
            std::thread::sleep(Duration::from_secs(30));
            return;
        } else if path == "/garbage" {
            let _ = out.write_all(b"SSH-2.0-OpenSSH\r\n\r\n");
            return;
        } else if path == "/close" {
            let _ = out
                .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: close\r\n\r\nok");
            return;
        } else {
            format!("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n{conn}\r\nok").into_bytes()
        };
        if out.write_all(&res).is_err() || close {
            return;
        }
    }
}
