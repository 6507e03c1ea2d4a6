//! The event loop: one per thread, many non-blocking connections per loop.
//!
//! Why epoll, edge-triggered, registered once per connection: the kernel
//! work per request is then exactly one `write` and usually one `read`
//! (plus a share of `epoll_wait`), with no `epoll_ctl` per request. Buffers
//! are allocated once per connection and reused; bodies are counted, not
//! stored. See docs/bench.md for the measurements behind the choice.

use crate::http::{Feed, ResponseReader};
use crate::ledger::SecondLedger;
pub(crate) use crate::ledger::SecondTally;
use crate::plan::Target;
use crate::report::{new_histogram, ErrorKind, Tally, SIGFIG, SIGFIG_SECOND};
use crate::stages::{Ramp, Schedule};
use crate::template::{ConnDraw, Counters, Data, RequestTemplate, Rng};
use crate::transport::{Endpoint, FdIo, Link};
use hdrhistogram::Histogram;
use std::io::{Read, Write};
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// A connect that failed waits this long before the connection retries, so
/// an unreachable target is not hammered in a tight loop.
const RECONNECT_BACKOFF: Duration = Duration::from_millis(10);
/// A send later than this after its intended time counts as schedule lag.
const LATE: Duration = Duration::from_millis(1);
/// How long the requests in flight at the end of a timed phase may still
/// take when the timeout is longer: a server that never answers must not hold
/// the run for its whole read timeout after `-d` has passed.
const DRAIN_GRACE: Duration = Duration::from_secs(1);
/// How often a worker hands its counts to the progress reporter.
const PUBLISH_EVERY: Duration = Duration::from_millis(200);
const READ_BUF: usize = 16 * 1024;

#[path = "scenario/drive.rs"]
mod drive;
const MAX_EVENTS: usize = 512;

/// State shared by the workers of one phase and the coordinating thread.
pub(crate) struct Shared {
    /// Set by the caller (Ctrl-C): stop at once, measured results are kept.
    pub stop: std::sync::Arc<AtomicBool>,
    /// Responses so far in this phase (published every ~200 ms).
    pub requests: AtomicU64,
    /// Transport errors so far in this phase.
    pub errors: AtomicU64,
    /// Latency so far in this phase, for live p99.
    pub live: Mutex<Histogram<u64>>,
    /// Requests still to issue when the phase is bounded by a count.
    pub budget: Option<AtomicU64>,
    /// Seconds the workers have handed over (complete from their side), so
    /// the coordinator can pass them on while the phase runs.
    pub handed: Mutex<Vec<(u64, SecondTally)>>,
    /// Per worker: the first second it has not handed over yet
    /// (`u64::MAX` once it has ended).
    pub through: Vec<AtomicU64>,
}

impl Shared {
    fn claim(&self) -> bool {
        match &self.budget {
            None => true,
            Some(b) => b
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |r| r.checked_sub(1))
                .is_ok(),
        }
    }
}

/// What one worker runs.
pub(crate) struct WorkerSpec<'a> {
    pub index: usize,
    pub targets: &'a [Target],
    /// Request bytes per target (empty for a templated target).
    pub requests: &'a [Vec<u8>],
    /// Per target: the template its requests are rendered from, if they vary.
    pub templates: &'a [Option<RequestTemplate>],
    /// `{{seq}}` and the shared CSV row cursor.
    pub counters: &'a Counters,
    /// `--data` rows.
    pub data: Option<&'a Data>,
    /// Target indices in rotation order (weighted).
    pub rotation: &'a [usize],
    pub connections: usize,
    /// This worker's share of the open-model rate.
    pub rate: Option<f64>,
    /// This worker's share of a `--stages` ramp: the rate (open model) or
    /// its connections (closed model) move linearly from `from` to `to`.
    pub ramp: Option<Ramp>,
    pub phase_start: Instant,
    /// End of the phase (None when bounded by a request count).
    pub end: Option<Instant>,
    pub run_start: Instant,
    pub timeout: Duration,
    pub keepalive: bool,
    /// Core to pin to.
    pub pin: Option<usize>,
    /// Histogram range, µs.
    pub high_us: u64,
    /// How each target is reached (address, TLS, tunnel), per target.
    pub links: &'a [Link],
    /// `--follow`: redirects to follow per request.
    pub follow: u32,
    /// `--compressed`: decode gzip/deflate bodies.
    pub compressed: bool,
    /// `--scenario`: connections are virtual users running its steps
    /// (the targets are the steps, in order).
    pub scenario: Option<&'a crate::scenario::Prepared>,
    /// `--replay`: the recorded requests, in start order, in place of the
    /// fixed-rate schedule (open model) or the target rotation (closed).
    pub replay: Option<&'a crate::replay::feed::Feed>,
}

/// What one worker measured.
pub(crate) struct WorkerOut {
    pub tally: Tally,
    pub per_target: Vec<Tally>,
    pub cpu_s: f64,
    pub wall_s: f64,
    pub reasons: Vec<(ErrorKind, String)>,
    /// `--scenario`: iterations and step failures.
    pub scenario: Option<crate::scenario::report::ScenarioTally>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum St {
    Closed,
    Backoff(Instant),
    Connecting,
    Idle,
    Writing,
    Reading,
    /// TLS handshake in progress (after the TCP connect or the tunnel).
    Handshaking,
    /// CONNECT sent to the proxy, its answer awaited.
    Tunneling,
}

struct Conn {
    fd: i32,
    gen: u32,
    st: St,
    /// Target whose address the socket is connected to.
    peer: usize,
    /// Target of the request in flight.
    target: usize,
    has_request: bool,
    /// Open model: on the free list.
    in_free: bool,
    reused: bool,
    woff: usize,
    buf: Vec<u8>,
    blen: usize,
    reader: ResponseReader,
    intended: Instant,
    sent: Instant,
    deadline: Instant,
    resp_bytes: u64,
    /// The TLS session of an `https://` link, driven sans-IO on `fd`.
    tls: Option<Box<rustls::ClientConnection>>,
    /// When the TLS handshake (or the tunnel) started.
    hs_start: Instant,
    /// Redirects followed by the request in flight.
    hops: u32,
    /// The request being sent when following a redirect (else the target's).
    redirect: Option<Vec<u8>>,
    /// The request rendered for a templated target, and what rendering
    /// keeps per connection (its CSV row).
    draw: ConnDraw,
    /// The request in flight was rendered into `draw.buf`.
    templated: bool,
    /// `--scenario`: the virtual user this connection is.
    user: Option<Box<crate::scenario::user::User>>,
    /// The next request's bytes were put into `draw.buf` by a replay.
    replayed: bool,
}

struct Worker<'a, 's> {
    spec: &'a WorkerSpec<'a>,
    shared: &'s Shared,
    ep: i32,
    conns: Vec<Conn>,
    /// Open model: connections free to take the next scheduled request.
    free: Vec<usize>,
    inflight: usize,
    /// Open model: a due request found no free connection and the schedule
    /// has not caught up since.
    blocked: bool,
    draining: bool,
    rot: usize,
    open: bool,
    tally: Tally,
    per_target: Vec<Tally>,
    /// The seconds not handed over yet and what is published live.
    ledger: SecondLedger,
    /// Open sockets now.
    open_conns: u64,
    lag_sum_us: f64,
    lag_n: u64,
    reasons: Vec<(ErrorKind, String)>,
    head: Vec<bool>,
    /// Random values of templates.
    rng: Rng,
    /// Closed model: connections `0..active` send; a ramp moves it.
    active: usize,
    /// `--scenario`: iterations, step failures, think-time timers.
    scen: Option<Box<drive::WorkerScenario>>,
}

/// Runs one worker to the end of the phase (or until stopped).
pub(crate) fn run_worker(spec: &WorkerSpec, shared: &Shared) -> Result<WorkerOut, String> {
    if let Some(core) = spec.pin {
        pin_to(core);
    }
    let cpu0 = thread_cpu_s();
    let wall0 = Instant::now();
    // SAFETY: plain syscall; the fd is closed in Drop of Worker.
    let ep = unsafe { libc::epoll_create1(libc::EPOLL_CLOEXEC) };
    if ep < 0 {
        return Err(format!(
            "epoll_create1: {}",
            std::io::Error::last_os_error()
        ));
    }
    let open = spec.rate.is_some();
    let multi = spec.targets.len() > 1 || spec.scenario.is_some();
    let now = Instant::now();
    let mut w = Worker {
        spec,
        shared,
        ep,
        conns: (0..spec.connections)
            .map(|_| Conn {
                fd: -1,
                gen: 0,
                st: St::Closed,
                peer: usize::MAX,
                target: 0,
                has_request: false,
                in_free: false,
                reused: false,
                woff: 0,
                buf: vec![0; READ_BUF],
                blen: 0,
                reader: ResponseReader::new(false),
                intended: now,
                sent: now,
                deadline: now,
                resp_bytes: 0,
                tls: None,
                hs_start: now,
                hops: 0,
                redirect: None,
                draw: ConnDraw::default(),
                templated: false,
                user: None,
                replayed: false,
            })
            .collect(),
        free: Vec::with_capacity(spec.connections),
        inflight: 0,
        blocked: false,
        draining: false,
        rot: spec.index.wrapping_mul(7919) % spec.rotation.len().max(1),
        open,
        tally: Tally::new(spec.high_us, SIGFIG, open),
        per_target: if multi {
            spec.targets
                .iter()
                .map(|_| Tally::new(spec.high_us, SIGFIG, open))
                .collect()
        } else {
            Vec::new()
        },
        ledger: SecondLedger::new(spec.run_start, spec.phase_start, spec.high_us, open),
        open_conns: 0,
        lag_sum_us: 0.0,
        lag_n: 0,
        reasons: Vec::new(),
        head: spec.targets.iter().map(|t| t.method == "HEAD").collect(),
        rng: Rng::new(spec.index),
        active: spec.connections,
        scen: spec.scenario.map(|p| {
            Box::new(drive::WorkerScenario::new(
                p.scenario.steps.len(),
                spec.high_us,
                open,
            ))
        }),
    };
    w.run();
    let scenario = w.scenario_finish();
    let wall_s = wall0.elapsed().as_secs_f64();
    let cpu_s = thread_cpu_s() - cpu0;
    // The connections close when the worker ends: its last second ends with none.
    let now = Instant::now();
    w.ledger.finish(shared, spec.index, now);
    w.open_conns = 0;
    if let Some(s) = &mut w.tally.schedule {
        if w.lag_n > 0 {
            s.mean_lag_ms = w.lag_sum_us / w.lag_n as f64 / 1000.0;
        }
    }
    Ok(WorkerOut {
        tally: w.tally.clone(),
        per_target: std::mem::take(&mut w.per_target),
        cpu_s,
        wall_s,
        reasons: std::mem::take(&mut w.reasons),
        scenario,
    })
}

impl Drop for Worker<'_, '_> {
    fn drop(&mut self) {
        for c in &mut self.conns {
            if c.fd >= 0 {
                // SAFETY: we own the fd.
                unsafe { libc::close(c.fd) };
                c.fd = -1;
            }
        }
        // SAFETY: we own the epoll fd.
        unsafe { libc::close(self.ep) };
    }
}

impl Worker<'_, '_> {
    fn run(&mut self) {
        let spec = self.spec;
        let now = Instant::now();
        // Threads share the rate; their schedules are shifted by a
        // golden-ratio fraction of a request so sends interleave.
        let length = spec
            .end
            .map(|e| e.saturating_duration_since(spec.phase_start));
        // A replay's intended times come from its file, not from a rate.
        let replay_open = spec.replay.filter(|_| self.open);
        let sched = spec.rate.filter(|_| spec.replay.is_none()).map(|r| {
            Schedule::new(
                r,
                spec.ramp.map(|x| x.from),
                length,
                (spec.index as f64 * 0.618_034).fract(),
            )
        });
        let due_at = |k: u64| {
            sched
                .and_then(|s| s.due(k))
                .map(|t| spec.phase_start + Duration::from_secs_f64(t))
        };
        let mut k: u64 = 0;
        let mut next_due = due_at(0);
        let mut pending: Option<crate::replay::feed::Item> = None;
        if let Some(feed) = replay_open {
            pending = feed.next();
            next_due = pending.as_ref().map(|it| spec.phase_start + it.due);
        }
        if !self.open {
            if let (Some(r), Some(l)) = (spec.ramp, length) {
                self.active = closed_active(r, Duration::ZERO, l, self.conns.len());
            }
        }
        // Establish every connection up front (as wrk does) so the first
        // requests do not all pay for a connect.
        for i in 0..self.conns.len() {
            if self.open {
                self.make_free(i);
                self.connect(i, 0, now);
            } else if i >= self.active || !self.shared.claim() || !self.start_next(i, now) {
                break;
            }
        }
        let scan_every =
            (spec.timeout / 4).clamp(Duration::from_millis(1), Duration::from_millis(10));
        let mut next_scan = now + scan_every;
        // A timeout within the grace ends every request in time by itself.
        let cut = spec
            .end
            .filter(|_| spec.timeout > DRAIN_GRACE)
            .map(|e| e + DRAIN_GRACE);
        let mut next_publish = now + PUBLISH_EVERY;
        let mut events: Vec<libc::epoll_event> =
            vec![libc::epoll_event { events: 0, u64: 0 }; MAX_EVENTS];
        loop {
            let now = Instant::now();
            if self.shared.stop.load(Ordering::Relaxed) {
                if !self.draining {
                    self.charge_unsent(k, now, &due_at);
                    self.charge_unsent_replay(&mut pending, now);
                }
                break;
            }
            if !self.draining && spec.end.is_some_and(|e| now >= e) {
                self.draining = true;
                if let Some(e) = spec.end {
                    self.charge_unsent(k, e, &due_at);
                    self.charge_unsent_replay(&mut pending, e);
                }
            }
            if !self.open && !self.draining {
                if let (Some(r), Some(l)) = (spec.ramp, length) {
                    let elapsed = now.saturating_duration_since(spec.phase_start);
                    self.set_active(closed_active(r, elapsed, l, self.conns.len()), now);
                }
            }
            let think_wake = self.scenario_timers(now);
            if sched.is_some() || replay_open.is_some() {
                while !self.draining {
                    let Some(due) = next_due.filter(|d| *d <= now) else {
                        break;
                    };
                    let Some(&i) = self.free.last() else {
                        self.blocked = true;
                        break;
                    };
                    if !self.shared.claim() {
                        self.draining = true;
                        break;
                    }
                    self.free.pop();
                    self.conns[i].in_free = false;
                    let t = match pending.take() {
                        Some(item) => self.load_replayed(i, item),
                        None => self.next_target(),
                    };
                    let lag = now.saturating_duration_since(due);
                    if let Some(s) = &mut self.tally.schedule {
                        s.intended += 1;
                        if lag > LATE {
                            s.late += 1;
                            if self.blocked {
                                s.waited_for_connection += 1;
                            }
                        }
                        s.max_lag_ms = s.max_lag_ms.max(lag.as_secs_f64() * 1e3);
                    }
                    self.lag_sum_us += lag.as_secs_f64() * 1e6;
                    self.lag_n += 1;
                    self.start_request(i, t, due, now);
                    k += 1;
                    next_due = due_at(k);
                    if let Some(feed) = replay_open {
                        pending = feed.next();
                        next_due = pending.as_ref().map(|it| spec.phase_start + it.due);
                        if pending.is_none() {
                            // The file is done: the phase ends with its answers.
                            self.draining = true;
                        }
                    }
                }
                // Caught up (or the schedule is over): no request waits.
                match next_due {
                    Some(d) if d <= now => {}
                    _ => self.blocked = false,
                }
            }
            if !self.open && !self.draining && self.budget_spent() && self.inflight == 0 {
                // Every request of a counted phase has been claimed and answered.
                self.draining = true;
            }
            if self.draining && self.inflight == 0 {
                break;
            }
            if self.draining && cut.is_some_and(|c| now >= c) {
                self.abandon_in_flight(now);
                break;
            }
            if now >= next_scan {
                self.scan(now);
                next_scan = now + scan_every;
            }
            if now >= next_publish {
                self.publish();
                next_publish = now + PUBLISH_EVERY;
            }
            let mut wake = next_scan.min(next_publish);
            if let Some(e) = spec.end {
                if !self.draining {
                    wake = wake.min(e);
                }
            }
            if let (Some(c), true) = (cut, self.draining) {
                wake = wake.min(c);
            }
            if let Some(d) = next_due.filter(|_| !self.draining && !self.free.is_empty()) {
                wake = wake.min(d);
            }
            if let Some(t) = think_wake {
                wake = wake.min(t);
            }
            let timeout = wake.saturating_duration_since(Instant::now());
            let n = epoll_wait(self.ep, &mut events, timeout);
            for ev in events.iter().take(n) {
                let data = ev.u64;
                let (i, gen) = ((data & 0xffff_ffff) as usize, (data >> 32) as u32);
                if i < self.conns.len() && self.conns[i].gen == gen {
                    self.on_event(i, ev.events);
                }
            }
        }
        self.publish();
    }

    fn next_target(&mut self) -> usize {
        let r = self.spec.rotation;
        if r.len() <= 1 {
            return 0;
        }
        self.rot = (self.rot + 1) % r.len();
        r[self.rot]
    }

    /// Closed model: starts connection `i`'s next request, the next
    /// target's or the replay's next one. False when a replay's file is
    /// done (the phase then ends with the answers in flight).
    fn start_next(&mut self, i: usize, now: Instant) -> bool {
        let t = match self.spec.replay {
            Some(feed) => match feed.next() {
                Some(item) => self.load_replayed(i, item),
                None => {
                    self.draining = true;
                    return false;
                }
            },
            None => self.next_target(),
        };
        self.start_request(i, t, now, now);
        true
    }

    /// Puts a replayed request's bytes on connection `i` for the next
    /// [`Worker::start_request`]; returns its target (route).
    fn load_replayed(&mut self, i: usize, item: crate::replay::feed::Item) -> usize {
        let c = &mut self.conns[i];
        c.draw.buf = item.bytes;
        c.replayed = true;
        item.target.min(self.spec.targets.len().saturating_sub(1))
    }

    /// [`Worker::charge_unsent`] for a replay: its requests due before
    /// `limit` and never sent are charged `limit - intended`.
    fn charge_unsent_replay(
        &mut self,
        pending: &mut Option<crate::replay::feed::Item>,
        limit: Instant,
    ) {
        let Some(feed) = self.spec.replay.filter(|_| self.open) else {
            return;
        };
        let start = self.spec.phase_start;
        let mut next = pending.take().or_else(|| feed.next());
        while let Some(item) = next {
            let due = start + item.due;
            if due >= limit {
                break;
            }
            let Some(s) = &mut self.tally.schedule else {
                return;
            };
            let us = (limit.saturating_duration_since(due).as_micros() as u64).max(1);
            self.tally.latency.saturating_record(us);
            s.unsent += 1;
            s.intended += 1;
            next = feed.next();
        }
    }

    fn budget_spent(&self) -> bool {
        self.shared
            .budget
            .as_ref()
            .is_some_and(|b| b.load(Ordering::Relaxed) == 0)
    }

    fn make_free(&mut self, i: usize) {
        if !self.conns[i].in_free {
            self.conns[i].in_free = true;
            self.free.push(i);
        }
    }

    fn can_send(&self) -> bool {
        !self.draining && !self.shared.stop.load(Ordering::Relaxed) && self.shared.claim()
    }

    /// Opens a socket to target `t`'s address and starts a non-blocking connect.
    fn connect(&mut self, i: usize, t: usize, now: Instant) {
        let spec = self.spec;
        let addr = &spec.links[t].endpoint;
        let c = &mut self.conns[i];
        c.gen = c.gen.wrapping_add(1);
        c.peer = t;
        c.reused = false;
        c.blen = 0;
        c.deadline = now + self.spec.timeout;
        match open_socket(addr) {
            Ok((fd, done)) => {
                let c = &mut self.conns[i];
                c.fd = fd;
                let mut ev = libc::epoll_event {
                    events: (libc::EPOLLIN | libc::EPOLLOUT | libc::EPOLLRDHUP | libc::EPOLLET)
                        as u32,
                    u64: ((c.gen as u64) << 32) | i as u64,
                };
                // SAFETY: valid epoll fd and socket fd; ev outlives the call.
                let rc = unsafe { libc::epoll_ctl(self.ep, libc::EPOLL_CTL_ADD, fd, &mut ev) };
                if rc < 0 {
                    let e = std::io::Error::last_os_error();
                    self.fail(i, ErrorKind::Other, format!("epoll_ctl: {e}"));
                    return;
                }
                c.st = St::Connecting;
                self.open_conns += 1;
                let open_conns = self.open_conns;
                let sec = self.ledger.second_mut(now);
                sec.tally.connects += 1;
                sec.conns_now(open_conns);
                self.tally.connects += 1;
                if done {
                    self.connected(i, now);
                }
            }
            Err(e) => {
                let kind = connect_error_kind(&e);
                self.fail(i, kind, format!("connect {addr}: {e}"));
            }
        }
    }

    fn connected(&mut self, i: usize, now: Instant) {
        let spec = self.spec;
        let link = &spec.links[self.conns[i].peer.min(spec.links.len() - 1)];
        if let Some(connect) = &link.tunnel {
            let c = &mut self.conns[i];
            c.hs_start = now;
            c.st = St::Tunneling;
            c.blen = 0;
            // SAFETY: the slice is valid; fd is an open, just-connected socket.
            let n = unsafe {
                libc::send(
                    c.fd,
                    connect.as_ptr().cast(),
                    connect.len(),
                    libc::MSG_NOSIGNAL,
                )
            };
            if n < 0 || n as usize != connect.len() {
                let e = std::io::Error::last_os_error();
                self.fail(i, ErrorKind::Other, format!("proxy CONNECT: send: {e}"));
            }
            return;
        }
        if link.tls.is_some() {
            self.start_tls(i, now);
            return;
        }
        self.ready(i, now);
    }

    /// The connection can carry requests: send the one waiting, if any.
    fn ready(&mut self, i: usize, now: Instant) {
        let c = &mut self.conns[i];
        c.st = St::Idle;
        if c.has_request {
            c.st = St::Writing;
            c.deadline = now + self.spec.timeout;
            self.write(i);
        }
    }

    /// Assigns a request for target `t` to connection `i` and starts it.
    fn start_request(&mut self, i: usize, t: usize, intended: Instant, now: Instant) {
        let t = self.scenario_pick(i, intended).unwrap_or(t);
        let head = self.head[t];
        let timeout = self.spec.timeout;
        let c = &mut self.conns[i];
        c.templated = std::mem::take(&mut c.replayed);
        if let Some(Some(tpl)) = self.spec.templates.get(t) {
            tpl.render(
                &mut c.draw,
                self.spec.counters,
                self.spec.data,
                &mut self.rng,
            );
            c.templated = true;
        }
        c.has_request = true;
        c.target = t;
        c.intended = intended;
        c.sent = now;
        c.deadline = now + timeout;
        c.woff = 0;
        c.resp_bytes = 0;
        c.reader = ResponseReader::new(head).with(self.spec.follow > 0, self.spec.compressed);
        c.hops = 0;
        c.redirect = None;
        if self.spec.scenario.is_some() {
            self.scenario_render(i, t);
        }
        self.inflight += 1;
        let inflight = self.inflight as u64;
        let sec = self.ledger.second_mut(now);
        sec.inflight_rose(inflight);
        let c = &mut self.conns[i];
        let links = self.spec.links;
        let same_peer = c.peer == t || links[c.peer.min(links.len() - 1)].group == links[t].group;
        match c.st {
            St::Idle if same_peer => {
                c.st = St::Writing;
                self.write(i);
            }
            St::Connecting if same_peer => {}
            _ => {
                self.close(i);
                self.connect(i, t, now);
            }
        }
    }

    fn on_event(&mut self, i: usize, ev: u32) {
        let err = ev & (libc::EPOLLERR | libc::EPOLLHUP) as u32 != 0;
        let readable = ev & (libc::EPOLLIN | libc::EPOLLRDHUP) as u32 != 0 || err;
        let writable = ev & libc::EPOLLOUT as u32 != 0 || err;
        let st = self.conns[i].st;
        match st {
            St::Connecting if writable || readable => {
                let fd = self.conns[i].fd;
                match socket_error(fd) {
                    None => self.connected(i, Instant::now()),
                    Some(e) => {
                        let addr = &self.spec.links
                            [self.conns[i].peer.min(self.spec.links.len() - 1)]
                        .endpoint;
                        self.fail(i, connect_error_kind(&e), format!("connect {addr}: {e}"));
                    }
                }
            }
            St::Handshaking if writable || readable => self.handshake(i),
            St::Tunneling if readable => self.tunnel_answer(i),
            St::Writing if writable => self.write(i),
            St::Reading if readable => self.read(
                i,
                ev & (libc::EPOLLRDHUP | libc::EPOLLHUP | libc::EPOLLERR) as u32 != 0,
            ),
            St::Idle if readable && self.conns[i].tls.is_some() && self.tls_idle_read(i) => {
                // TLS records on an idle connection (session tickets): still open.
            }
            St::Idle if readable => {
                // The server closed (or wrote to) an idle keep-alive connection.
                self.close(i);
                let now = Instant::now();
                self.tally.server_closed += 1;
                self.ledger.second_mut(now).tally.server_closed += 1;
            }
            _ => {}
        }
    }

    fn write(&mut self, i: usize) {
        if self.conns[i].tls.is_some() {
            self.tls_write(i);
            return;
        }
        let fixed = &self.spec.requests[self.conns[i].target];
        loop {
            let c = &mut self.conns[i];
            let req = match &c.redirect {
                Some(r) => r.as_slice(),
                None if c.templated => &c.draw.buf,
                None => fixed,
            };
            let rest = &req[c.woff..];
            // SAFETY: rest is a valid slice; fd is an open socket.
            let n =
                unsafe { libc::send(c.fd, rest.as_ptr().cast(), rest.len(), libc::MSG_NOSIGNAL) };
            if n >= 0 {
                c.woff += n as usize;
                if c.woff >= req.len() {
                    c.st = St::Reading;
                    return;
                }
                continue;
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EAGAIN) => return,
                Some(libc::EINTR) => continue,
                _ => {
                    self.fail(i, ErrorKind::Reset, format!("send: {e}"));
                    return;
                }
            }
        }
    }

    /// Reads what the socket holds. `peer_closed`: the event said the peer
    /// hung up, so the end of stream is already queued and must be read now
    /// (edge-triggered: no further edge will announce it).
    fn read(&mut self, i: usize, peer_closed: bool) {
        if self.conns[i].tls.is_some() {
            self.tls_read(i, peer_closed);
            return;
        }
        loop {
            let c = &mut self.conns[i];
            if c.blen == c.buf.len() {
                if c.buf.len() >= 4 * crate::http::MAX_LINE {
                    self.fail(
                        i,
                        ErrorKind::Malformed,
                        "response line or head too long".into(),
                    );
                    return;
                }
                let grown = c.buf.len() * 2;
                c.buf.resize(grown, 0);
            }
            let space = c.buf.len() - c.blen;
            // SAFETY: writes at most `space` bytes into the owned buffer past blen.
            let n = unsafe { libc::recv(c.fd, c.buf.as_mut_ptr().add(c.blen).cast(), space, 0) };
            if n > 0 {
                let n = n as usize;
                c.blen += n;
                c.resp_bytes += n as u64;
                match c.reader.feed(&c.buf[..c.blen]) {
                    Ok(Feed::Done { consumed }) => {
                        let leftover = c.blen > consumed;
                        c.blen = 0;
                        self.complete(i, leftover);
                        return;
                    }
                    Ok(Feed::More { consumed }) => {
                        c.buf.copy_within(consumed..c.blen, 0);
                        c.blen -= consumed;
                    }
                    Err(m) => {
                        self.fail(i, ErrorKind::Malformed, m.0);
                        return;
                    }
                }
                if n < space && !peer_closed {
                    // Edge-triggered: the socket is drained for now; new data raises a new edge.
                    return;
                }
                continue;
            }
            if n == 0 {
                if c.reader.eof() {
                    self.complete(i, true);
                } else {
                    let why = if c.resp_bytes == 0 {
                        "connection closed before any response byte"
                    } else {
                        "connection closed mid-response"
                    };
                    self.fail(i, ErrorKind::Reset, why.into());
                }
                return;
            }
            let e = std::io::Error::last_os_error();
            match e.raw_os_error() {
                Some(libc::EAGAIN) => return,
                Some(libc::EINTR) => continue,
                _ => {
                    self.fail(i, ErrorKind::Reset, format!("recv: {e}"));
                    return;
                }
            }
        }
    }

    /// A response is complete: record it and give the connection its next job.
    fn complete(&mut self, i: usize, must_close: bool) {
        if self.spec.follow > 0 && self.follow(i, must_close) {
            return;
        }
        if let Some(decoded) = self.conns[i].reader.decoded_bytes {
            let tr = &mut self.tally.transport;
            tr.compressed += 1;
            tr.encoded_bytes += self.conns[i].reader.encoded_bytes;
            tr.decoded_bytes += decoded;
        }
        let now = Instant::now();
        self.inflight -= 1;
        let open = self.open;
        let keepalive = self.spec.keepalive;
        let c = &mut self.conns[i];
        let from = if open { c.intended } else { c.sent };
        let lat_us = (now.saturating_duration_since(from).as_micros() as u64).max(1);
        let svc_us = (now.saturating_duration_since(c.sent).as_micros() as u64).max(1);
        let (t, status, bytes) = (c.target, c.reader.status, c.resp_bytes);
        let keep = !must_close && c.reader.keep_alive && keepalive;
        let server_closed = must_close || !c.reader.keep_alive;
        c.has_request = false;
        c.reused = true;
        if keep {
            c.st = St::Idle;
        } else {
            self.close(i);
        }
        self.record(now, t, status, bytes, lat_us, svc_us);
        let inflight = self.inflight as u64;
        let sec = self.ledger.second_mut(now);
        sec.inflight_now(inflight);
        if server_closed {
            sec.tally.server_closed += 1;
            self.tally.server_closed += 1;
        }
        if self.spec.scenario.is_some() {
            self.scenario_complete(i, t, status, now);
            return;
        }
        if self.open {
            self.make_free(i);
        } else if i >= self.active {
            // A ramp down: this connection's user has left.
            self.close(i);
        } else if self.can_send() {
            self.start_next(i, now);
        }
    }

    /// Closed-model ramps: connections `0..n` send from now on. New ones
    /// start a request; the ones above `n` finish theirs and close.
    fn set_active(&mut self, n: usize, now: Instant) {
        let n = n.min(self.conns.len());
        let was = self.active;
        self.active = n;
        for i in n..was {
            if !self.conns[i].has_request && self.conns[i].fd >= 0 {
                self.close(i);
            }
        }
        for i in was..n {
            let c = &self.conns[i];
            if c.has_request || matches!(c.st, St::Backoff(_)) {
                continue;
            }
            if !self.can_send() || !self.start_next(i, now) {
                break;
            }
        }
    }

    /// Open model: requests due from the `k`-th on before `limit` were never
    /// sent (the phase ended or was stopped while every connection waited,
    /// or the generator was behind). Each is charged the least latency it
    /// would have had, `limit - intended`, so a stall at the end of a run
    /// is not cut out of the percentiles.
    fn charge_unsent(
        &mut self,
        from: u64,
        limit: Instant,
        due_at: &dyn Fn(u64) -> Option<Instant>,
    ) {
        let Some(s) = &mut self.tally.schedule else {
            return;
        };
        let mut k = from;
        while let Some(d) = due_at(k).filter(|d| *d < limit) {
            let us = (limit.saturating_duration_since(d).as_micros() as u64).max(1);
            self.tally.latency.saturating_record(us);
            s.unsent += 1;
            s.intended += 1;
            if let Some(sc) = &mut self.scen {
                // A scenario's schedule starts iterations: the unsent one is charged too.
                sc.tally.iterations.latency.saturating_record(us);
                sc.tally.unsent += 1;
            }
            k += 1;
        }
    }

    fn record(
        &mut self,
        now: Instant,
        t: usize,
        status: u16,
        bytes: u64,
        lat_us: u64,
        svc_us: u64,
    ) {
        let multi = !self.per_target.is_empty();
        let rec = |tally: &mut Tally| {
            tally.requests += 1;
            tally.bytes += bytes;
            tally.status.add(status);
            tally.add_code(status);
            tally.latency.saturating_record(lat_us);
            if let Some(s) = &mut tally.service {
                s.saturating_record(svc_us);
            }
        };
        rec(&mut self.tally);
        if multi {
            rec(&mut self.per_target[t]);
        }
        let ntargets = self.spec.targets.len();
        let high = self.spec.high_us;
        let sec = self.ledger.second_mut(now);
        rec(&mut sec.tally);
        if multi {
            if sec.per_target.is_empty() {
                sec.per_target = vec![None; ntargets];
            }
            let h = sec.per_target[t].get_or_insert_with(|| new_histogram(high, SIGFIG_SECOND));
            h.saturating_record(lat_us);
            if status >= 500 {
                if sec.per_target_errors.is_empty() {
                    sec.per_target_errors = vec![(0, 0); ntargets];
                }
                sec.per_target_errors[t].0 += 1;
            }
        }
        self.ledger.response(lat_us, status >= 500);
    }

    /// The request on connection `i` failed: count it, close, and retry later.
    fn fail(&mut self, i: usize, kind: ErrorKind, reason: String) {
        let now = Instant::now();
        let had_request = self.conns[i].has_request;
        self.close(i);
        let c = &mut self.conns[i];
        c.has_request = false;
        let connect_failure = matches!(kind, ErrorKind::ConnectRefused | ErrorKind::ConnectTimeout)
            || (kind == ErrorKind::Other && !c.reused);
        if connect_failure {
            c.st = St::Backoff(now + RECONNECT_BACKOFF);
        }
        if had_request {
            self.inflight -= 1;
            self.tally.errors.add(kind);
            let t = c.target;
            if !self.per_target.is_empty() {
                self.per_target[t].errors.add(kind);
            }
            let ntargets = self.spec.targets.len();
            let multi = !self.per_target.is_empty();
            let inflight = self.inflight as u64;
            let server_closed = kind == ErrorKind::Reset;
            if server_closed {
                self.tally.server_closed += 1;
            }
            let sec = self.ledger.second_mut(now);
            sec.tally.errors.add(kind);
            sec.inflight_now(inflight);
            if server_closed {
                sec.tally.server_closed += 1;
            }
            if multi {
                if sec.per_target_errors.is_empty() {
                    sec.per_target_errors = vec![(0, 0); ntargets];
                }
                sec.per_target_errors[t].0 += 1;
                sec.per_target_errors[t].1 += 1;
            }
            self.ledger.transport_error();
            if !self.reasons.iter().any(|(k, _)| *k == kind) {
                self.reasons.push((kind, reason));
            }
            if self.spec.scenario.is_some() {
                self.scenario_failed(i, t, now);
            }
        }
        if matches!(self.conns[i].st, St::Backoff(_)) {
            return;
        }
        if self.open {
            if had_request {
                self.make_free(i);
            }
        } else if had_request && i < self.active && self.can_send() {
            self.start_next(i, now);
        }
    }

    /// The duration and its grace are over: the requests still in flight
    /// are counted as unfinished (their outcome is unknown, so they are
    /// neither responses nor errors) and their connections closed.
    fn abandon_in_flight(&mut self, now: Instant) {
        for i in 0..self.conns.len() {
            if !self.conns[i].has_request {
                continue;
            }
            self.close(i);
            let c = &mut self.conns[i];
            c.has_request = false;
            let t = c.target;
            self.inflight = self.inflight.saturating_sub(1);
            self.tally.unfinished += 1;
            if let Some(pt) = self.per_target.get_mut(t) {
                pt.unfinished += 1;
            }
            let inflight = self.inflight as u64;
            let sec = self.ledger.second_mut(now);
            sec.tally.unfinished += 1;
            sec.inflight_now(inflight);
        }
    }

    fn close(&mut self, i: usize) {
        let c = &mut self.conns[i];
        if c.fd >= 0 {
            // SAFETY: we own the fd; closing also removes it from the epoll set.
            unsafe { libc::close(c.fd) };
            c.fd = -1;
            self.open_conns = self.open_conns.saturating_sub(1);
            let open_conns = self.open_conns;
            self.ledger.second_mut(Instant::now()).conns_now(open_conns);
        }
        let c = &mut self.conns[i];
        c.gen = c.gen.wrapping_add(1);
        c.st = St::Closed;
        c.blen = 0;
        c.tls = None;
    }

    /// Times out overdue requests and revives connections whose backoff ended.
    fn scan(&mut self, now: Instant) {
        for i in 0..self.conns.len() {
            let (st, deadline, has_request) = (
                self.conns[i].st,
                self.conns[i].deadline,
                self.conns[i].has_request,
            );
            match st {
                St::Connecting | St::Writing | St::Reading | St::Handshaking | St::Tunneling
                    if now >= deadline =>
                {
                    if has_request {
                        let kind = if matches!(st, St::Connecting | St::Handshaking | St::Tunneling)
                        {
                            ErrorKind::ConnectTimeout
                        } else {
                            ErrorKind::ReadTimeout
                        };
                        let ms = self.spec.timeout.as_millis();
                        self.fail(i, kind, format!("no answer within the timeout ({ms} ms)"));
                    } else {
                        self.close(i);
                    }
                }
                St::Backoff(until) if now >= until => {
                    self.conns[i].st = St::Closed;
                    if self.open {
                        self.make_free(i);
                    } else if i < self.active && self.can_send() {
                        self.start_next(i, now);
                    }
                }
                _ => {}
            }
        }
    }

    fn publish(&mut self) {
        self.ledger.publish(self.shared, self.spec.index);
    }
}

/// The transport side of a connection: TLS driven sans-IO on the socket,
/// the CONNECT tunnel of a proxy, redirects. Kept apart from request
/// scheduling so the plain HTTP path stays as it was.
impl Worker<'_, '_> {
    /// Starts the TLS session on a connected socket (or an open tunnel).
    fn start_tls(&mut self, i: usize, now: Instant) {
        let spec = self.spec;
        let link = &spec.links[self.conns[i].peer.min(spec.links.len() - 1)];
        let Some(tls) = &link.tls else {
            self.ready(i, now);
            return;
        };
        match rustls::ClientConnection::new(tls.config.clone(), tls.name.clone()) {
            Ok(conn) => {
                let c = &mut self.conns[i];
                c.tls = Some(Box::new(conn));
                c.hs_start = now;
                c.st = St::Handshaking;
                self.handshake(i);
            }
            Err(e) => self.fail(i, ErrorKind::Other, format!("TLS: {e}")),
        }
    }

    /// Advances the handshake as far as the socket allows; once it is
    /// done, counts it and lets the connection carry requests.
    fn handshake(&mut self, i: usize) {
        let spec = self.spec;
        loop {
            let c = &mut self.conns[i];
            let endpoint = &spec.links[c.peer.min(spec.links.len() - 1)].endpoint;
            match tls_flush(c) {
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => {
                    self.fail(
                        i,
                        ErrorKind::Reset,
                        format!("TLS handshake with {endpoint}: send: {e}"),
                    );
                    return;
                }
            }
            let Some(tls) = c.tls.as_mut() else { return };
            if !tls.is_handshaking() {
                let now = Instant::now();
                let us = now.saturating_duration_since(c.hs_start).as_micros() as u64;
                let resumed = tls.handshake_kind() == Some(rustls::HandshakeKind::Resumed);
                let version = tls
                    .protocol_version()
                    .map(|v| format!("{v:?}"))
                    .unwrap_or_default();
                let alpn = tls
                    .alpn_protocol()
                    .map(|p| String::from_utf8_lossy(p).into_owned());
                let offered = spec.links[c.peer.min(spec.links.len() - 1)]
                    .tls
                    .as_ref()
                    .is_some_and(|l| l.resume);
                self.tally
                    .transport
                    .handshake(us, resumed, &version, alpn, offered);
                self.ready(i, now);
                return;
            }
            let mut io = FdIo {
                fd: c.fd,
                short: false,
            };
            match tls.read_tls(&mut io) {
                Ok(0) => {
                    self.fail(
                        i,
                        ErrorKind::Other,
                        format!("TLS handshake with {endpoint}: the server closed the connection"),
                    );
                    return;
                }
                Ok(_) => {
                    if let Err(e) = tls.process_new_packets() {
                        // Send our alert, so the server logs why.
                        let _ = tls_flush(c);
                        let why = crate::tls::explain(&e);
                        self.fail(
                            i,
                            ErrorKind::Other,
                            format!("TLS handshake with {endpoint}: {why}"),
                        );
                        return;
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => {
                    self.fail(
                        i,
                        ErrorKind::Reset,
                        format!("TLS handshake with {endpoint}: recv: {e}"),
                    );
                    return;
                }
            }
        }
    }

    /// Hands the request to rustls and sends the records it makes.
    fn tls_write(&mut self, i: usize) {
        let spec = self.spec;
        loop {
            let c = &mut self.conns[i];
            let req = match &c.redirect {
                Some(r) => r.as_slice(),
                None if c.templated => &c.draw.buf,
                None => &spec.requests[c.target],
            };
            let Some(tls) = c.tls.as_mut() else { return };
            let len = req.len();
            if c.woff < len {
                match tls.writer().write(&req[c.woff..]) {
                    Ok(n) => c.woff += n,
                    Err(e) => {
                        self.fail(i, ErrorKind::Other, format!("TLS: {e}"));
                        return;
                    }
                }
            }
            match tls_flush(c) {
                Ok(true) if c.woff >= len => {
                    c.st = St::Reading;
                    return;
                }
                // rustls took part of the request (its buffer was full) and
                // all of it is sent now: hand it the rest.
                Ok(true) => {}
                Ok(false) => return,
                Err(e) => {
                    self.fail(i, ErrorKind::Reset, format!("send: {e}"));
                    return;
                }
            }
        }
    }

    /// Reads TLS records, decrypts, and feeds the plaintext to the
    /// response reader, as `read` does for a plain socket.
    fn tls_read(&mut self, i: usize, peer_closed: bool) {
        loop {
            let c = &mut self.conns[i];
            let Some(tls) = c.tls.as_mut() else { return };
            let mut io = FdIo {
                fd: c.fd,
                short: false,
            };
            let mut eof = false;
            let mut drained = false;
            match tls.read_tls(&mut io) {
                Ok(0) => eof = true,
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => drained = true,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    self.fail(i, ErrorKind::Reset, format!("recv: {e}"));
                    return;
                }
            }
            if let Err(e) = tls.process_new_packets() {
                let _ = tls_flush(c);
                self.fail(i, ErrorKind::Other, format!("TLS: {e}"));
                return;
            }
            loop {
                let c = &mut self.conns[i];
                if c.blen == c.buf.len() {
                    if c.buf.len() >= 4 * crate::http::MAX_LINE {
                        self.fail(
                            i,
                            ErrorKind::Malformed,
                            "response line or head too long".into(),
                        );
                        return;
                    }
                    let grown = c.buf.len() * 2;
                    c.buf.resize(grown, 0);
                }
                let Some(tls) = c.tls.as_mut() else { return };
                match tls.reader().read(&mut c.buf[c.blen..]) {
                    // close_notify: the server ended the stream cleanly.
                    Ok(0) => {
                        eof = true;
                        break;
                    }
                    Ok(n) => {
                        c.blen += n;
                        c.resp_bytes += n as u64;
                        match c.reader.feed(&c.buf[..c.blen]) {
                            Ok(Feed::Done { consumed }) => {
                                let leftover = c.blen > consumed;
                                c.blen = 0;
                                self.complete(i, leftover);
                                return;
                            }
                            Ok(Feed::More { consumed }) => {
                                c.buf.copy_within(consumed..c.blen, 0);
                                c.blen -= consumed;
                            }
                            Err(m) => {
                                self.fail(i, ErrorKind::Malformed, m.0);
                                return;
                            }
                        }
                    }
                    Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => break,
                    // Closed without close_notify: as a plain EOF (many
                    // servers do this after Connection: close).
                    Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => {
                        eof = true;
                        break;
                    }
                    Err(e) => {
                        self.fail(i, ErrorKind::Other, format!("TLS: {e}"));
                        return;
                    }
                }
            }
            let c = &mut self.conns[i];
            if eof {
                if c.reader.eof() {
                    self.complete(i, true);
                } else {
                    let why = if c.resp_bytes == 0 {
                        "connection closed before any response byte"
                    } else {
                        "connection closed mid-response"
                    };
                    self.fail(i, ErrorKind::Reset, why.into());
                }
                return;
            }
            if let Err(e) = tls_flush(c) {
                self.fail(i, ErrorKind::Reset, format!("send: {e}"));
                return;
            }
            if drained || (io.short && !peer_closed) {
                return;
            }
        }
    }

    /// TLS records on an idle connection: session tickets keep it open;
    /// anything else (close_notify, data nobody asked for, EOF) does not.
    fn tls_idle_read(&mut self, i: usize) -> bool {
        let c = &mut self.conns[i];
        let Some(tls) = c.tls.as_mut() else {
            return false;
        };
        loop {
            let mut io = FdIo {
                fd: c.fd,
                short: false,
            };
            match tls.read_tls(&mut io) {
                Ok(0) => return false,
                Ok(_) => match tls.process_new_packets() {
                    Ok(st) if st.plaintext_bytes_to_read() == 0 && !st.peer_has_closed() => {}
                    _ => return false,
                },
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return true,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(_) => return false,
            }
        }
    }

    /// Reads the proxy's answer to CONNECT; 200 opens the tunnel for TLS.
    fn tunnel_answer(&mut self, i: usize) {
        loop {
            let c = &mut self.conns[i];
            if c.blen == c.buf.len() {
                self.fail(
                    i,
                    ErrorKind::Malformed,
                    "proxy CONNECT answer too long".into(),
                );
                return;
            }
            let space = c.buf.len() - c.blen;
            // SAFETY: writes at most `space` bytes into the owned buffer past blen.
            let n = unsafe { libc::recv(c.fd, c.buf.as_mut_ptr().add(c.blen).cast(), space, 0) };
            if n == 0 {
                self.fail(
                    i,
                    ErrorKind::Reset,
                    "the proxy closed the connection before answering CONNECT".into(),
                );
                return;
            }
            if n < 0 {
                let e = std::io::Error::last_os_error();
                match e.raw_os_error() {
                    Some(libc::EAGAIN) => return,
                    Some(libc::EINTR) => continue,
                    _ => {
                        self.fail(i, ErrorKind::Reset, format!("proxy CONNECT: recv: {e}"));
                        return;
                    }
                }
            }
            c.blen += n as usize;
            let mut headers = [httparse::EMPTY_HEADER; 32];
            let mut resp = httparse::Response::new(&mut headers);
            match resp.parse(&c.buf[..c.blen]) {
                Ok(httparse::Status::Partial) => continue,
                Ok(httparse::Status::Complete(len)) => {
                    let code = resp.code.unwrap_or(0);
                    if !(200..300).contains(&code) {
                        let reason = resp.reason.unwrap_or("").to_string();
                        self.fail(
                            i,
                            ErrorKind::Other,
                            format!("the proxy answered CONNECT with {code} {reason}"),
                        );
                        return;
                    }
                    if c.blen > len {
                        self.fail(
                            i,
                            ErrorKind::Malformed,
                            "the proxy sent bytes after its CONNECT answer".into(),
                        );
                        return;
                    }
                    c.blen = 0;
                    self.start_tls(i, Instant::now());
                    return;
                }
                Err(e) => {
                    self.fail(
                        i,
                        ErrorKind::Malformed,
                        format!("proxy CONNECT answer: {e}"),
                    );
                    return;
                }
            }
        }
    }

    /// `--follow`: a redirect answer sends the next request of the chain
    /// (on the same connection when it stays open) instead of being
    /// counted. Returns false when the answer is final.
    fn follow(&mut self, i: usize, must_close: bool) -> bool {
        let spec = self.spec;
        let c = &mut self.conns[i];
        let status = c.reader.status;
        if !matches!(status, 301 | 302 | 303 | 307 | 308) || c.hops >= spec.follow {
            return false;
        }
        let Some(location) = c.reader.location.take() else {
            return false;
        };
        let t = c.target;
        let base = match &c.redirect {
            Some(r) => r.as_slice(),
            None if c.templated => &c.draw.buf,
            None => &spec.requests[t],
        };
        let absolute = spec.links[t].absolute_form;
        let next = match redirect_request(base, &spec.targets[t], &location, status, absolute) {
            Ok(next) => next,
            Err(why) => {
                // The answer arrived; the connection is not the culprit.
                c.reused = true;
                self.fail(i, ErrorKind::Other, why);
                return true;
            }
        };
        let keep = !must_close && c.reader.keep_alive && spec.keepalive;
        let head = next.starts_with(b"HEAD ");
        c.redirect = Some(next);
        c.hops += 1;
        c.woff = 0;
        c.reader = ResponseReader::new(head).with(true, spec.compressed);
        self.tally.transport.redirects += 1;
        let now = Instant::now();
        if keep {
            c.reused = true;
            c.st = St::Writing;
            self.write(i);
        } else {
            self.close(i);
            self.connect(i, t, now);
        }
        true
    }
}

/// Sends what rustls has queued: `Ok(true)` when all of it is out,
/// `Ok(false)` when the socket is full (EPOLLOUT resumes).
fn tls_flush(c: &mut Conn) -> std::io::Result<bool> {
    let Some(tls) = c.tls.as_mut() else {
        return Ok(true);
    };
    let mut io = FdIo {
        fd: c.fd,
        short: false,
    };
    while tls.wants_write() {
        match tls.write_tls(&mut io) {
            Ok(_) => {}
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => return Ok(false),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(true)
}

/// The request that follows a redirect to `location`: the same headers,
/// the new path; 303 (and 301/302 after a POST, as browsers and curl do)
/// turn into a GET without body. Redirects leave the target's origin only
/// by error: the connection, its TLS name and the Host header are the
/// target's, so another origin would be measured against the wrong server.
fn redirect_request(
    base: &[u8],
    target: &Target,
    location: &str,
    status: u16,
    absolute_form: bool,
) -> Result<Vec<u8>, String> {
    let path = if let Some(rest) = location.strip_prefix("//") {
        let scheme = if target.tls { "https:" } else { "http:" };
        same_origin_path(target, &format!("{scheme}//{rest}"), location)?
    } else if location.contains("://") {
        same_origin_path(target, location, location)?
    } else if location.starts_with('/') {
        location.to_string()
    } else {
        // Relative to the current path's directory (RFC 3986 §5.2.3).
        let current = std::str::from_utf8(request_target(base)).unwrap_or("/");
        let current = current.split('?').next().unwrap_or("/");
        let dir = current.rfind('/').map_or("/", |k| &current[..=k]);
        format!("{dir}{location}")
    };
    if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(format!(
            "redirect Location {location:?} has spaces or control characters"
        ));
    }
    let line_end = base
        .windows(2)
        .position(|w| w == b"\r\n")
        .ok_or("request without a request line")?;
    let head_end = base
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("request without an end of head")?;
    let method = base[..line_end]
        .split(|b| *b == b' ')
        .next()
        .unwrap_or(b"GET");
    let to_get =
        method != b"HEAD" && (status == 303 || (matches!(status, 301 | 302) && method == b"POST"));
    let mut out = Vec::with_capacity(base.len() + path.len());
    out.extend_from_slice(if to_get { b"GET" } else { method });
    out.push(b' ');
    if absolute_form {
        out.extend_from_slice(format!("http://{}", target.authority).as_bytes());
    }
    out.extend_from_slice(path.as_bytes());
    out.extend_from_slice(b" HTTP/1.1\r\n");
    for line in base[line_end + 2..head_end + 2].split(|b| *b == b'\n') {
        if line.is_empty() {
            continue;
        }
        let name = line.split(|b| *b == b':').next().unwrap_or(b"");
        if to_get
            && (name.eq_ignore_ascii_case(b"content-length")
                || name.eq_ignore_ascii_case(b"transfer-encoding")
                || name.eq_ignore_ascii_case(b"content-type"))
        {
            continue;
        }
        out.extend_from_slice(line);
        out.push(b'\n');
    }
    out.extend_from_slice(b"\r\n");
    if !to_get {
        out.extend_from_slice(&base[head_end + 4..]);
    }
    Ok(out)
}

/// The request line's target (second word) of a request.
fn request_target(req: &[u8]) -> &[u8] {
    let line = req.split(|b| *b == b'\r').next().unwrap_or(b"");
    line.split(|b| *b == b' ').nth(1).unwrap_or(b"/")
}

fn same_origin_path(target: &Target, url: &str, location: &str) -> Result<String, String> {
    let other = || {
        format!(
            "redirect to another origin not followed: {location} (--follow stays on {}://{})",
            if target.tls { "https" } else { "http" },
            target.authority
        )
    };
    let u = crate::plan::parse_url(url).map_err(|_| other())?;
    if u.tls == target.tls
        && u.host.eq_ignore_ascii_case(&target.host)
        && u.port == target.addr.port()
    {
        Ok(u.path)
    } else {
        Err(other())
    }
}

/// A closed-model ramp's connection count `elapsed` into a phase of
/// `length` (this worker's share, at most `pool`).
fn closed_active(r: Ramp, elapsed: Duration, length: Duration, pool: usize) -> usize {
    (r.level_at(elapsed, length).round().max(0.0) as usize).min(pool)
}

fn connect_error_kind(e: &std::io::Error) -> ErrorKind {
    match e.raw_os_error() {
        Some(libc::ECONNREFUSED) => ErrorKind::ConnectRefused,
        Some(libc::ETIMEDOUT) => ErrorKind::ConnectTimeout,
        Some(libc::ECONNRESET) => ErrorKind::Reset,
        _ => ErrorKind::Other,
    }
}

/// A non-blocking socket with a connect in progress; `true` when the
/// connect already completed.
fn open_socket(endpoint: &Endpoint) -> std::io::Result<(i32, bool)> {
    match endpoint {
        Endpoint::Tcp(addr) => open_tcp(*addr),
        Endpoint::Unix(path) => open_unix(path),
    }
}

/// A non-blocking Unix stream socket connected to `path`. A listener whose
/// backlog is full answers EAGAIN at once (not EINPROGRESS): that is a
/// failed connect, retried after the backoff like a refused one.
fn open_unix(path: &std::path::Path) -> std::io::Result<(i32, bool)> {
    use std::os::unix::ffi::OsStrExt;
    // SAFETY: sockaddr_un is plain old data; all-zero is a valid value.
    let mut sun: libc::sockaddr_un = unsafe { std::mem::zeroed() };
    sun.sun_family = libc::AF_UNIX as libc::sa_family_t;
    let bytes = path.as_os_str().as_bytes();
    if bytes.len() >= sun.sun_path.len() || bytes.contains(&0) {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidInput,
            "Unix socket path too long or contains NUL",
        ));
    }
    for (d, s) in sun.sun_path.iter_mut().zip(bytes) {
        *d = *s as libc::c_char;
    }
    // SAFETY: plain syscalls on values we construct; fd is closed on error.
    unsafe {
        let fd = libc::socket(
            libc::AF_UNIX,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        );
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let len = std::mem::size_of::<libc::sockaddr_un>() as libc::socklen_t;
        let rc = libc::connect(fd, (&sun as *const libc::sockaddr_un).cast(), len);
        if rc == 0 {
            return Ok((fd, true));
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EINPROGRESS) {
            return Ok((fd, false));
        }
        libc::close(fd);
        Err(e)
    }
}

/// A non-blocking TCP socket with a connect in progress; `true` when the
/// connect already completed.
fn open_tcp(addr: SocketAddr) -> std::io::Result<(i32, bool)> {
    let domain = if addr.is_ipv4() {
        libc::AF_INET
    } else {
        libc::AF_INET6
    };
    // SAFETY: plain syscalls on values we construct; fd is closed on error.
    unsafe {
        let fd = libc::socket(
            domain,
            libc::SOCK_STREAM | libc::SOCK_NONBLOCK | libc::SOCK_CLOEXEC,
            0,
        );
        if fd < 0 {
            return Err(std::io::Error::last_os_error());
        }
        let one: libc::c_int = 1;
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_NODELAY,
            (&one as *const libc::c_int).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        );
        let (storage, len) = sockaddr(addr);
        let rc = libc::connect(fd, (&storage as *const libc::sockaddr_storage).cast(), len);
        if rc == 0 {
            return Ok((fd, true));
        }
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EINPROGRESS) {
            return Ok((fd, false));
        }
        libc::close(fd);
        Err(e)
    }
}

fn sockaddr(addr: SocketAddr) -> (libc::sockaddr_storage, libc::socklen_t) {
    // SAFETY: sockaddr_storage is plain old data; all-zero is a valid value.
    let mut storage: libc::sockaddr_storage = unsafe { std::mem::zeroed() };
    let len = match addr {
        SocketAddr::V4(a) => {
            let sin = libc::sockaddr_in {
                sin_family: libc::AF_INET as libc::sa_family_t,
                sin_port: a.port().to_be(),
                sin_addr: libc::in_addr {
                    s_addr: u32::from_ne_bytes(a.ip().octets()),
                },
                sin_zero: [0; 8],
            };
            // SAFETY: sockaddr_storage is larger than sockaddr_in and suitably aligned.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin) };
            std::mem::size_of::<libc::sockaddr_in>()
        }
        SocketAddr::V6(a) => {
            let sin6 = libc::sockaddr_in6 {
                sin6_family: libc::AF_INET6 as libc::sa_family_t,
                sin6_port: a.port().to_be(),
                sin6_flowinfo: a.flowinfo(),
                sin6_addr: libc::in6_addr {
                    s6_addr: a.ip().octets(),
                },
                sin6_scope_id: a.scope_id(),
            };
            // SAFETY: as above, for sockaddr_in6.
            unsafe { std::ptr::write((&mut storage as *mut libc::sockaddr_storage).cast(), sin6) };
            std::mem::size_of::<libc::sockaddr_in6>()
        }
    };
    (storage, len as libc::socklen_t)
}

fn socket_error(fd: i32) -> Option<std::io::Error> {
    let mut err: libc::c_int = 0;
    let mut len = std::mem::size_of::<libc::c_int>() as libc::socklen_t;
    // SAFETY: err and len are valid for the call.
    let rc = unsafe {
        libc::getsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_ERROR,
            (&mut err as *mut libc::c_int).cast(),
            &mut len,
        )
    };
    if rc < 0 {
        return Some(std::io::Error::last_os_error());
    }
    (err != 0).then(|| std::io::Error::from_raw_os_error(err))
}

static NO_PWAIT2: AtomicBool = AtomicBool::new(false);

/// Waits for events up to `timeout` with nanosecond precision where the
/// kernel has epoll_pwait2 (open-model sends must not be rounded to ms).
fn epoll_wait(ep: i32, events: &mut [libc::epoll_event], timeout: Duration) -> usize {
    let max = events.len() as libc::c_int;
    if !NO_PWAIT2.load(Ordering::Relaxed) {
        let ts = libc::timespec {
            tv_sec: timeout.as_secs() as libc::time_t,
            tv_nsec: timeout.subsec_nanos() as libc::c_long,
        };
        // SAFETY: events is valid for `max` entries; ts outlives the call; no sigmask.
        let n = unsafe {
            libc::syscall(
                libc::SYS_epoll_pwait2,
                ep,
                events.as_mut_ptr(),
                max,
                &ts as *const libc::timespec,
                std::ptr::null::<libc::sigset_t>(),
                0usize,
            )
        };
        if n >= 0 {
            return n as usize;
        }
        if std::io::Error::last_os_error().raw_os_error() != Some(libc::ENOSYS) {
            return 0;
        }
        NO_PWAIT2.store(true, Ordering::Relaxed);
    }
    let ms = timeout.as_micros().div_ceil(1000).min(i32::MAX as u128) as libc::c_int;
    // SAFETY: as above.
    let n = unsafe { libc::epoll_wait(ep, events.as_mut_ptr(), max, ms) };
    n.max(0) as usize
}

fn thread_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is valid.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

fn pin_to(core: usize) {
    // SAFETY: cpu_set_t is plain data; sched_setaffinity(0) targets this thread.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(core, &mut set);
        libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(url: &str) -> Target {
        Target::new("GET", url, Vec::new(), 1).expect("target")
    }

    fn next(base: &str, url: &str, loc: &str, status: u16) -> Result<String, String> {
        redirect_request(base.as_bytes(), &target(url), loc, status, false)
            .map(|b| String::from_utf8_lossy(&b).into_owned())
    }

    #[test]
    fn redirects_keep_headers_and_change_the_path() {
        let get = "GET /a/b?x=1 HTTP/1.1\r\nHost: 127.0.0.1:9\r\nX-A: 1\r\n\r\n";
        let u = "http://127.0.0.1:9/a/b?x=1";
        assert_eq!(
            next(get, u, "/c", 302).unwrap(),
            "GET /c HTTP/1.1\r\nHost: 127.0.0.1:9\r\nX-A: 1\r\n\r\n"
        );
        assert!(next(get, u, "d?y", 301)
            .unwrap()
            .starts_with("GET /a/d?y HTTP/1.1\r\n"));
        assert!(next(get, u, "http://127.0.0.1:9/e", 307)
            .unwrap()
            .starts_with("GET /e "));
        let e = next(get, u, "http://127.0.0.1:10/e", 307).unwrap_err();
        assert!(e.contains("another origin"), "{e}");
        assert!(next(get, u, "https://127.0.0.1:9/e", 302).is_err());
        assert!(next(get, u, "//127.0.0.1:9/f", 302)
            .unwrap()
            .starts_with("GET /f "));
    }

    #[test]
    fn methods_change_as_browsers_do() {
        let post = "POST /form HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nabc";
        let u = "http://127.0.0.1:9/form";
        assert_eq!(
            next(post, u, "/done", 303).unwrap(),
            "GET /done HTTP/1.1\r\nHost: h\r\n\r\n"
        );
        assert_eq!(
            next(post, u, "/done", 302).unwrap(),
            "GET /done HTTP/1.1\r\nHost: h\r\n\r\n"
        );
        assert_eq!(
            next(post, u, "/again", 307).unwrap(),
            "POST /again HTTP/1.1\r\nHost: h\r\nContent-Type: text/plain\r\nContent-Length: 3\r\n\r\nabc"
        );
        let t = target(u);
        let abs = redirect_request(
            b"GET http://127.0.0.1:9/form HTTP/1.1\r\n\r\n",
            &t,
            "/x",
            302,
            true,
        )
        .unwrap();
        assert!(abs.starts_with(b"GET http://127.0.0.1:9/x HTTP/1.1\r\n"));
    }
}
