//! The bid server, serving `POST /bid`, `GET /health` and `GET /stats`
//! with one of two worker models:
//!
//! - event-loop worker threads (one, or one per core), each with its own
//!   `SO_REUSEPORT` listener so the kernel spreads connections evenly;
//! - a prefork-style pool (the `unpinned` knob's case, field notes §2):
//!   several blocking workers per core sharing one listener, each serving
//!   one connection at a time, so each sleeps and is woken on every request.

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::SocketAddr;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use mio::net::{TcpListener, TcpStream};
use mio::{Events, Interest, Poll, Token, Waker};
use serde::Serialize;

use crate::accesslog::{AccessLog, LogPlan};
use crate::bid::{Bidder, BidderConfig};
use crate::events::EventSink;
use crate::http::{frame_request, serve_blocking, write_response, Client, ConnPolicy, Framed};
use crate::knobs::Knobs;
use crate::stats::{Counters, StatsSnapshot};
use crate::upstream::{backend_handler, logger_handler, BlockingServer};
use crate::DemoError;

/// How to start the demo target.
#[derive(Debug, Clone)]
pub struct DemoConfig {
    /// Address to listen on; port 0 picks a free port.
    pub listen: SocketAddr,
    /// Naive or tuned, per knob.
    pub knobs: Knobs,
    /// Worker threads when `single-worker` is tuned (default: usable cores,
    /// or 4 per usable core for the prefork pool).
    pub workers: Option<usize>,
    /// The access log rolls after this many bytes.
    pub log_roll_bytes: u64,
    /// The external logger answers after a delay drawn from this range (ms).
    pub logger_delay_ms: (u64, u64),
    /// How long backend answers stay in the campaign cache.
    pub cache_ttl: Duration,
    /// Serve with the prefork-style pool even when `unpinned` is tuned, so
    /// that a pinned pool can be compared with a free one. The pool is
    /// always used when `unpinned` is naive (unless `single-worker` is).
    pub prefork: bool,
}

impl Default for DemoConfig {
    fn default() -> DemoConfig {
        DemoConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], 0)),
            knobs: Knobs::all_tuned(),
            workers: None,
            log_roll_bytes: 16 * 1024 * 1024,
            logger_delay_ms: (5, 20),
            cache_ttl: Duration::from_secs(10),
            prefork: false,
        }
    }
}

/// Starts the demo target.
#[derive(Debug)]
pub struct DemoServer;

impl DemoServer {
    /// Starts the backend, the external logger and the bid server's
    /// workers; returns once all are listening.
    pub fn start(config: &DemoConfig) -> Result<DemoHandle, DemoError> {
        let counters = Arc::new(Counters::default());
        let knobs = config.knobs;
        let cpus = allowed_cpus();
        // One worker serves every connection itself, pool or not.
        let prefork =
            (knobs.unpinned.is_naive() || config.prefork) && knobs.single_worker.is_tuned();
        let workers = if knobs.single_worker.is_naive() {
            1
        } else if prefork {
            config
                .workers
                .unwrap_or(cpus.len().max(1) * PREFORK_WORKERS_PER_CORE)
                .max(1)
        } else {
            config.workers.unwrap_or(cpus.len().max(1)).max(1)
        };
        if config.log_roll_bytes == 0 {
            return Err(DemoError::Config("log roll size must be above 0".into()));
        }
        if config.logger_delay_ms.0 > config.logger_delay_ms.1 {
            return Err(DemoError::Config("logger delay range is reversed".into()));
        }
        let dir = tempfile::Builder::new()
            .prefix("keisoku-demo-")
            .tempdir()
            .map_err(|e| DemoError::Config(format!("temporary directory: {e}")))?;
        let config_path = dir.path().join("bidder.json");
        let config_text = serde_json::to_vec_pretty(&BidderConfig::default_for_demo())
            .map_err(|e| DemoError::Config(e.to_string()))?;
        std::fs::write(&config_path, config_text)
            .map_err(|e| DemoError::Config(format!("{}: {e}", config_path.display())))?;

        // Upstreams serve one connection per thread; every worker holds at
        // most one connection to each at a time, plus the queued writers.
        let upstream_threads = workers + 4;
        let c = counters.clone();
        let backend = BlockingServer::start(
            "demo-backend",
            upstream_threads,
            Arc::new(move || Counters::bump(&c.backend_accepts)),
            Arc::new(backend_handler),
        )?;
        let logger = BlockingServer::start(
            "demo-ext-logger",
            upstream_threads,
            Arc::new(|| {}),
            Arc::new(logger_handler(
                config.logger_delay_ms,
                Arc::new(Default::default()),
            )),
        )?;

        let timeout = Duration::from_secs(5);
        let backend_client = Client::new(backend.addr(), knobs.no_keepalive.is_tuned(), timeout);
        let logger_client = Client::new(logger.addr(), true, timeout);
        let events = EventSink::new(
            logger_client,
            knobs.sync_external_call.is_naive(),
            counters.clone(),
        )?;
        let log = AccessLog::open(
            LogPlan {
                dir: dir.path().to_path_buf(),
                roll_bytes: config.log_roll_bytes,
            },
            knobs.sync_log_rollover.is_naive(),
            counters.clone(),
        )?;
        let bidder = Arc::new(Bidder::new(
            knobs,
            counters.clone(),
            config_path,
            config.cache_ttl,
            backend_client,
            events,
            log,
        )?);

        let router = Router {
            bidder: bidder.clone(),
            counters: counters.clone(),
            knobs,
        };
        // A prefork pool shares one blocking listener; event loops get one each.
        let mut listeners =
            bind_listeners(config.listen, if prefork { 1 } else { workers }, !prefork)?;
        let addr = listeners
            .first()
            .and_then(|l| l.local_addr().ok())
            .ok_or_else(|| DemoError::Bind {
                what: "bid server".into(),
                source: std::io::Error::other("no listener"),
            })?;
        let stop = Arc::new(AtomicBool::new(false));
        let mut threads = Vec::new();
        let mut wakers = Vec::new();
        let pin_for = |i: usize| {
            if knobs.unpinned.is_tuned() && !cpus.is_empty() {
                Some(cpus[i % cpus.len()])
            } else {
                None
            }
        };
        if prefork {
            let shared = listeners.pop().ok_or_else(|| DemoError::Bind {
                what: "bid server".into(),
                source: std::io::Error::other("no listener"),
            })?;
            for i in 0..workers {
                let listener = shared.try_clone().map_err(|e| DemoError::Bind {
                    what: "bid server".into(),
                    source: e,
                })?;
                let member = PoolWorker {
                    index: i,
                    listener,
                    router: router.clone(),
                    stop: stop.clone(),
                };
                let pin = pin_for(i);
                let handle = std::thread::Builder::new()
                    .name(format!("demo-prefork-{i}"))
                    .spawn(move || {
                        if let Some(cpu) = pin {
                            if pin_current_thread(cpu) {
                                Counters::bump(&member.router.counters.workers_pinned);
                            }
                        }
                        Counters::bump(&member.router.counters.workers);
                        member.run()
                    })
                    .map_err(|e| DemoError::Thread(e.to_string()))?;
                threads.push(handle);
            }
        }
        for (i, listener) in listeners.into_iter().enumerate() {
            let listener = TcpListener::from_std(listener);
            let poll = Poll::new().map_err(|e| DemoError::Thread(e.to_string()))?;
            let waker = Arc::new(
                Waker::new(poll.registry(), WAKER).map_err(|e| DemoError::Thread(e.to_string()))?,
            );
            wakers.push(waker);
            let pin = pin_for(i);
            let worker = Worker {
                index: i,
                poll,
                listener,
                router: router.clone(),
                counters: counters.clone(),
                stop: stop.clone(),
            };
            let handle = std::thread::Builder::new()
                .name(format!("demo-worker-{i}"))
                .spawn(move || {
                    if let Some(cpu) = pin {
                        if pin_current_thread(cpu) {
                            Counters::bump(&worker.counters.workers_pinned);
                        }
                    }
                    Counters::bump(&worker.counters.workers);
                    worker.run()
                })
                .map_err(|e| DemoError::Thread(e.to_string()))?;
            threads.push(handle);
        }
        Ok(DemoHandle {
            addr,
            pool_size: if prefork { workers } else { 0 },
            knobs,
            counters,
            bidder,
            stop,
            wakers,
            threads,
            backend: Some(backend),
            logger: Some(logger),
            dir: Some(dir),
        })
    }
}

/// A running demo target. Dropping it stops it.
pub struct DemoHandle {
    addr: SocketAddr,
    /// Prefork workers blocked in accept(), each woken by one connection at shutdown.
    pool_size: usize,
    knobs: Knobs,
    counters: Arc<Counters>,
    bidder: Arc<Bidder>,
    stop: Arc<AtomicBool>,
    wakers: Vec<Arc<Waker>>,
    threads: Vec<JoinHandle<()>>,
    backend: Option<BlockingServer>,
    logger: Option<BlockingServer>,
    dir: Option<tempfile::TempDir>,
}

impl std::fmt::Debug for DemoHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DemoHandle")
            .field("addr", &self.addr)
            .field("knobs", &self.knobs)
            .finish()
    }
}

impl DemoHandle {
    /// The bid server's bound address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `http://ADDR`.
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// The knob settings it runs with.
    pub fn knobs(&self) -> Knobs {
        self.knobs
    }

    /// Its counters now.
    pub fn stats(&self) -> StatsSnapshot {
        self.counters.snapshot()
    }

    /// The directory holding its config file and access logs.
    pub fn work_dir(&self) -> Option<&Path> {
        self.dir.as_ref().map(|d| d.path())
    }

    /// Stops the workers, flushes the log and the event queue, stops the
    /// upstreams and removes the work directory.
    pub fn stop(mut self) {
        self.shutdown();
    }

    fn shutdown(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        for w in &self.wakers {
            let _ = w.wake();
        }
        let mut wake_addr = self.addr;
        if wake_addr.ip().is_unspecified() {
            wake_addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
        }
        for _ in 0..self.pool_size {
            let _ = std::net::TcpStream::connect_timeout(&wake_addr, Duration::from_millis(200));
        }
        for t in self.threads.drain(..) {
            let _ = t.join();
        }
        self.bidder.close();
        if let Some(mut b) = self.backend.take() {
            b.stop();
        }
        if let Some(mut l) = self.logger.take() {
            l.stop();
        }
        self.dir.take();
    }
}

impl Drop for DemoHandle {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The body of `GET /stats`.
#[derive(Serialize)]
struct StatsPage<'a> {
    knobs: &'a Knobs,
    #[serde(flatten)]
    counters: StatsSnapshot,
}

const LISTENER: Token = Token(0);
const WAKER: Token = Token(1);
const FIRST_CONN: usize = 2;

/// Prefork workers per usable core: enough that several share each core
/// and the scheduler has to place them, as a Starlet/Starman pool does.
const PREFORK_WORKERS_PER_CORE: usize = 4;
/// A prefork worker closes a kept-alive connection after this many requests
/// (Starlet's `--max-keepalive-reqs`), so that connections beyond the pool
/// size get a worker in turn instead of waiting forever.
const PREFORK_MAX_REQUESTS: usize = 100;
/// A prefork worker drops a kept-alive connection idle this long (Starlet's
/// `--keepalive-timeout`): otherwise clients that keep idle connections
/// open (a load generator draining the end of a phase) hold every worker
/// while queued connections wait. Shorter than Starlet's 1 s so that such a
/// drain costs a phase tenths of a second, not seconds.
const PREFORK_IDLE: Duration = Duration::from_millis(100);

/// Answers one request; shared by both worker models.
#[derive(Clone)]
struct Router {
    bidder: Arc<Bidder>,
    counters: Arc<Counters>,
    knobs: Knobs,
}

struct Worker {
    index: usize,
    poll: Poll,
    listener: TcpListener,
    router: Router,
    counters: Arc<Counters>,
    stop: Arc<AtomicBool>,
}

/// One member of the prefork pool: blocks in accept(), then serves that
/// connection alone with blocking reads until it ends.
struct PoolWorker {
    index: usize,
    listener: std::net::TcpListener,
    router: Router,
    stop: Arc<AtomicBool>,
}

impl PoolWorker {
    fn run(self) {
        let counters = &self.router.counters;
        let stop_now = || self.stop.load(Ordering::Relaxed);
        let invalid = || {
            Counters::bump(&counters.requests);
            Counters::bump(&counters.bad_requests);
        };
        let policy = ConnPolicy {
            max_requests: PREFORK_MAX_REQUESTS,
            idle_timeout: Some(PREFORK_IDLE),
            on_invalid: Some(&invalid),
        };
        while !stop_now() {
            let accepted = self.listener.accept();
            if stop_now() {
                return;
            }
            let Ok((stream, _)) = accepted else {
                // Out of descriptors or the like: back off instead of spinning.
                std::thread::sleep(Duration::from_millis(10));
                continue;
            };
            Counters::bump(&counters.connections_accepted);
            serve_blocking(
                stream,
                &stop_now,
                &|req| {
                    Counters::bump(&counters.requests);
                    let (status, body) = self
                        .router
                        .route(self.index, req.method, req.path, req.body);
                    if status >= 400 {
                        Counters::bump(&counters.bad_requests);
                    }
                    (status, body)
                },
                &policy,
            );
        }
    }
}

struct Conn {
    stream: TcpStream,
    inbuf: Vec<u8>,
    out: Vec<u8>,
    out_pos: usize,
    close_after: bool,
    peer_closed: bool,
}

impl Worker {
    fn run(mut self) {
        if self
            .poll
            .registry()
            .register(&mut self.listener, LISTENER, Interest::READABLE)
            .is_err()
        {
            return;
        }
        let mut events = Events::with_capacity(256);
        let mut conns: HashMap<Token, Conn> = HashMap::new();
        let mut next = FIRST_CONN;
        let mut chunk = vec![0u8; 16 * 1024];
        loop {
            if let Err(e) = self.poll.poll(&mut events, None) {
                if e.kind() == ErrorKind::Interrupted {
                    continue;
                }
                return;
            }
            if self.stop.load(Ordering::Relaxed) {
                return;
            }
            for ev in events.iter() {
                match ev.token() {
                    LISTENER => loop {
                        match self.listener.accept() {
                            Ok((mut stream, _)) => {
                                let _ = stream.set_nodelay(true);
                                let token = Token(next);
                                next += 1;
                                if self
                                    .poll
                                    .registry()
                                    .register(
                                        &mut stream,
                                        token,
                                        Interest::READABLE | Interest::WRITABLE,
                                    )
                                    .is_ok()
                                {
                                    Counters::bump(&self.counters.connections_accepted);
                                    conns.insert(
                                        token,
                                        Conn {
                                            stream,
                                            inbuf: Vec::with_capacity(4096),
                                            out: Vec::with_capacity(4096),
                                            out_pos: 0,
                                            close_after: false,
                                            peer_closed: false,
                                        },
                                    );
                                }
                            }
                            Err(e) if e.kind() == ErrorKind::WouldBlock => break,
                            Err(e) if e.kind() == ErrorKind::Interrupted => {}
                            // EMFILE and friends: drop this wake-up, the next event retries.
                            Err(_) => break,
                        }
                    },
                    WAKER => {}
                    token => {
                        let Some(conn) = conns.get_mut(&token) else {
                            continue;
                        };
                        if ev.is_readable() || ev.is_read_closed() {
                            self.read(conn, &mut chunk);
                            self.process(conn);
                        }
                        let alive = flush(conn);
                        let done = conn.out_pos >= conn.out.len()
                            && (conn.close_after || conn.peer_closed);
                        if !alive || done || ev.is_error() {
                            if let Some(mut c) = conns.remove(&token) {
                                let _ = self.poll.registry().deregister(&mut c.stream);
                            }
                        }
                    }
                }
            }
        }
    }

    fn read(&self, conn: &mut Conn, chunk: &mut [u8]) {
        loop {
            match conn.stream.read(chunk) {
                Ok(0) => {
                    conn.peer_closed = true;
                    return;
                }
                Ok(n) => conn.inbuf.extend_from_slice(&chunk[..n]),
                Err(e) if e.kind() == ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(_) => {
                    conn.peer_closed = true;
                    return;
                }
            }
        }
    }

    /// Answers every complete request in the buffer, in order (pipelining).
    fn process(&self, conn: &mut Conn) {
        let mut offset = 0;
        while !conn.close_after {
            match frame_request(&conn.inbuf[offset..]) {
                Framed::Partial => break,
                Framed::Invalid(status, msg) => {
                    Counters::bump(&self.counters.requests);
                    Counters::bump(&self.counters.bad_requests);
                    let body = serde_json::json!({ "error": msg }).to_string();
                    write_response(
                        &mut conn.out,
                        status,
                        "application/json",
                        body.as_bytes(),
                        false,
                    );
                    conn.close_after = true;
                }
                Framed::Complete(req, used) => {
                    Counters::bump(&self.counters.requests);
                    let (status, body) = self
                        .router
                        .route(self.index, req.method, req.path, req.body);
                    if status >= 400 {
                        Counters::bump(&self.counters.bad_requests);
                    }
                    write_response(
                        &mut conn.out,
                        status,
                        "application/json",
                        &body,
                        req.keep_alive,
                    );
                    conn.close_after = !req.keep_alive;
                    offset += used;
                }
            }
        }
        conn.inbuf.drain(..offset);
    }
}

impl Router {
    fn route(&self, worker: usize, method: &str, path: &str, body: &[u8]) -> (u16, Vec<u8>) {
        let path = path.split('?').next().unwrap_or(path);
        match (method, path) {
            ("POST", "/bid") => {
                let a = self.bidder.handle_bid(body, worker);
                (a.status, a.body)
            }
            ("GET", "/health") => (200, b"{\"status\":\"ok\"}".to_vec()),
            ("GET", "/stats") => {
                let page = StatsPage {
                    knobs: &self.knobs,
                    counters: self.counters.snapshot(),
                };
                (200, serde_json::to_vec(&page).unwrap_or_default())
            }
            (_, "/bid" | "/health" | "/stats") => {
                (405, b"{\"error\":\"method not allowed\"}".to_vec())
            }
            _ => (
                404,
                b"{\"error\":\"no such route; try POST /bid, GET /health, GET /stats\"}".to_vec(),
            ),
        }
    }
}

/// Writes what it can; false when the connection is broken.
fn flush(conn: &mut Conn) -> bool {
    while conn.out_pos < conn.out.len() {
        match conn.stream.write(&conn.out[conn.out_pos..]) {
            Ok(0) => return false,
            Ok(n) => conn.out_pos += n,
            Err(e) if e.kind() == ErrorKind::WouldBlock => return true,
            Err(e) if e.kind() == ErrorKind::Interrupted => {}
            Err(_) => return false,
        }
    }
    conn.out.clear();
    conn.out_pos = 0;
    true
}

fn bind_listeners(
    listen: SocketAddr,
    n: usize,
    nonblocking: bool,
) -> Result<Vec<std::net::TcpListener>, DemoError> {
    let bind_err = |e: std::io::Error| DemoError::Bind {
        what: format!("bid server on {listen}"),
        source: e,
    };
    let mut out = Vec::with_capacity(n);
    let mut addr = listen;
    for _ in 0..n {
        let socket = socket2::Socket::new(
            socket2::Domain::for_address(addr),
            socket2::Type::STREAM,
            None,
        )
        .map_err(bind_err)?;
        socket.set_reuse_address(true).map_err(bind_err)?;
        socket.set_reuse_port(true).map_err(bind_err)?;
        socket.set_nonblocking(nonblocking).map_err(bind_err)?;
        socket.bind(&addr.into()).map_err(bind_err)?;
        socket.listen(1024).map_err(bind_err)?;
        let std_listener: std::net::TcpListener = socket.into();
        // Port 0 picks a port once; the other workers join that port.
        addr = std_listener.local_addr().map_err(bind_err)?;
        out.push(std_listener);
    }
    Ok(out)
}

/// The CPUs this process may run on.
fn allowed_cpus() -> Vec<usize> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it for pid 0 (this thread).
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Vec::new();
        }
        (0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect()
    }
}

/// Pins the calling thread to one CPU; false if the kernel refused.
fn pin_current_thread(cpu: usize) -> bool {
    // SAFETY: as above; pid 0 means the calling thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) == 0
    }
}
