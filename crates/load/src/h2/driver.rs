//! One HTTP/2 load thread: a current-thread tokio runtime running one
//! task that owns every connection, stream slot and count of the worker.
//! Requests, connects and connection drivers are futures in three
//! `FuturesUnordered` sets polled by that task, so only the futures that
//! were woken are polled, nothing is spawned and no state is shared behind
//! a lock: the same shape as the HTTP/1.1 epoll loop, and as cheap per
//! request as the `h2` crate allows.

use super::{grpc, H2Run, Prepared};
use crate::engine::{Shared, WorkerOut, WorkerSpec};
use crate::ledger::SecondLedger;
use crate::report::{new_histogram, ErrorKind, Tally, SIGFIG, SIGFIG_SECOND};
use crate::stages::{Ramp, Schedule};
use crate::template::{ConnDraw, Rng};
use crate::transport::Endpoint;
use bytes::Bytes;
use futures_util::stream::{FuturesUnordered, StreamExt};
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::Ordering;
use std::task::Poll;
use std::time::{Duration, Instant};
use tokio::io::{AsyncRead, AsyncWrite};

/// The same pacing as the HTTP/1.1 engine (see engine.rs for why).
const RECONNECT_BACKOFF: Duration = Duration::from_millis(10);
const LATE: Duration = Duration::from_millis(1);
const DRAIN_GRACE: Duration = Duration::from_secs(1);
const PUBLISH_EVERY: Duration = Duration::from_millis(200);
/// Flow-control windows as large as h2load's defaults (2^30 - 1), so the
/// client's window never throttles the server.
const WINDOW: u32 = (1 << 30) - 1;

type Boxed<'a, T> = Pin<Box<dyn Future<Output = T> + 'a>>;

/// A failed call: either it never left (the connection was going away
/// before the stream opened: safe to send on a new connection), or it
/// failed with an error of a kind.
enum Failure {
    NotSent(String),
    Failed(ErrorKind, String),
}

/// A complete answer.
struct Answer {
    status: u16,
    bytes: u64,
    /// `--compressed`: the body's bytes as received and decoded, when it
    /// came encoded.
    decoded: Option<(u64, u64)>,
    /// gRPC: the `grpc-status`, or why it is missing or unreadable.
    grpc: Option<Result<u32, String>>,
}

/// The request of a job: a target's fixed request, or one rendered for it.
enum JobReq<'a> {
    Fixed(&'a Prepared),
    Own(Box<Prepared>),
}

impl JobReq<'_> {
    fn get(&self) -> &Prepared {
        match self {
            JobReq::Fixed(p) => p,
            JobReq::Own(p) => p,
        }
    }
}

/// A request assigned to a slot, waiting for its connection or on the wire.
struct Job<'a> {
    slot: usize,
    target: usize,
    intended: Instant,
    sent: Instant,
    /// Already sent once on a connection that was going away.
    retried: bool,
    req: JobReq<'a>,
}

struct Outcome<'a> {
    job: Job<'a>,
    conn: usize,
    gen: u32,
    result: Result<Answer, Failure>,
}

/// TLS numbers of a connect.
struct TlsInfo {
    us: u64,
    resumed: bool,
    version: String,
    alpn: Option<String>,
}

type Driver = Boxed<'static, Result<(), ::h2::Error>>;
/// A connection's driver with the connection and generation it drives.
type Ended = (usize, u32, Result<(), ::h2::Error>);

struct Connected {
    send: ::h2::client::SendRequest<Bytes>,
    driver: Driver,
    tls: Option<TlsInfo>,
}

struct ConnectDone {
    conn: usize,
    gen: u32,
    result: Result<Connected, (ErrorKind, String)>,
}

enum CSt {
    Down,
    Connecting,
    Up(::h2::client::SendRequest<Bytes>),
    Backoff(Instant),
}

struct Conn<'a> {
    st: CSt,
    gen: u32,
    /// Requests waiting for this connection to be up.
    pending: Vec<Job<'a>>,
}

struct Futs<'a> {
    reqs: FuturesUnordered<Boxed<'a, Outcome<'a>>>,
    connects: FuturesUnordered<Boxed<'a, ConnectDone>>,
    drivers: FuturesUnordered<Boxed<'static, Ended>>,
}

struct W<'a> {
    spec: &'a WorkerSpec<'a>,
    shared: &'a Shared,
    run: &'a H2Run,
    open: bool,
    streams: usize,
    conns: Vec<Conn<'a>>,
    /// Per slot: a request is assigned to it.
    busy: Vec<bool>,
    /// Per slot: what template rendering keeps (its CSV row).
    draws: Vec<ConnDraw>,
    free: Vec<usize>,
    inflight: usize,
    blocked: bool,
    draining: bool,
    rot: usize,
    /// Closed model: slots `0..active` send (a ramp moves it).
    active: usize,
    tally: Tally,
    per_target: Vec<Tally>,
    /// The seconds not handed over yet and what is published live.
    ledger: SecondLedger,
    open_conns: u64,
    lag_sum_us: f64,
    lag_n: u64,
    reasons: Vec<(ErrorKind, String)>,
    rng: Rng,
}

/// Runs one HTTP/2 worker to the end of the phase (or until stopped).
pub(crate) fn run_worker(
    spec: &WorkerSpec,
    shared: &Shared,
    run: &H2Run,
) -> Result<WorkerOut, String> {
    if let Some(core) = spec.pin {
        pin_to(core);
    }
    let cpu0 = thread_cpu_s();
    let wall0 = Instant::now();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_io()
        .enable_time()
        .build()
        .map_err(|e| format!("HTTP/2 runtime: {e}"))?;
    let open = spec.rate.is_some();
    let streams = run.opts.streams.max(1);
    let slots = spec.connections * streams;
    let multi = spec.targets.len() > 1;
    let mut w = W {
        spec,
        shared,
        run,
        open,
        streams,
        conns: (0..spec.connections)
            .map(|_| Conn {
                st: CSt::Down,
                gen: 0,
                pending: Vec::new(),
            })
            .collect(),
        busy: vec![false; slots],
        draws: (0..slots).map(|_| ConnDraw::default()).collect(),
        free: Vec::with_capacity(slots),
        inflight: 0,
        blocked: false,
        draining: false,
        rot: spec.index.wrapping_mul(7919) % spec.rotation.len().max(1),
        active: slots,
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
        rng: Rng::new(spec.index),
    };
    rt.block_on(w.run());
    let wall_s = wall0.elapsed().as_secs_f64();
    let cpu_s = thread_cpu_s() - cpu0;
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
        scenario: None,
    })
}

/// What woke the worker.
enum Ev<'a> {
    Done(Outcome<'a>),
    Connected(ConnectDone),
    Ended(usize, u32, Result<(), ::h2::Error>),
    Tick,
}

impl<'a> W<'a> {
    async fn run(&mut self) {
        let spec = self.spec;
        let mut futs = Futs {
            reqs: FuturesUnordered::new(),
            connects: FuturesUnordered::new(),
            drivers: FuturesUnordered::new(),
        };
        let now = Instant::now();
        let length = spec
            .end
            .map(|e| e.saturating_duration_since(spec.phase_start));
        let sched = spec.rate.map(|r| {
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
        if !self.open {
            if let (Some(r), Some(l)) = (spec.ramp, length) {
                self.active = self.closed_active(r, Duration::ZERO, l);
            }
        }
        // Connect every connection up front (as h2load and the HTTP/1.1
        // engine do), so the first requests do not all pay for a connect.
        for c in 0..self.conns.len() {
            self.start_connect(c, &mut futs);
        }
        if self.open {
            // Slot 0 of each connection first, so the open model spreads
            // its requests over the connections before stacking streams.
            for s in (0..self.streams).rev() {
                for c in (0..self.conns.len()).rev() {
                    self.free.push(c * self.streams + s);
                }
            }
        } else {
            for slot in 0..self.active {
                if !claim(self.shared) {
                    break;
                }
                let t = self.next_target();
                self.launch(slot, t, now, now, &mut futs);
            }
        }
        let scan_every =
            (spec.timeout / 4).clamp(Duration::from_millis(1), Duration::from_millis(10));
        let mut next_scan = now + scan_every;
        let cut = spec
            .end
            .filter(|_| spec.timeout > DRAIN_GRACE)
            .map(|e| e + DRAIN_GRACE);
        let mut next_publish = now + PUBLISH_EVERY;
        let sleep = tokio::time::sleep_until(tokio::time::Instant::from_std(next_scan));
        tokio::pin!(sleep);
        loop {
            let now = Instant::now();
            if self.shared.stop.load(Ordering::Relaxed) {
                if !self.draining {
                    self.charge_unsent(k, now, &due_at);
                }
                break;
            }
            if !self.draining && spec.end.is_some_and(|e| now >= e) {
                self.draining = true;
                if let Some(e) = spec.end {
                    self.charge_unsent(k, e, &due_at);
                }
            }
            if !self.open && !self.draining {
                if let (Some(r), Some(l)) = (spec.ramp, length) {
                    let elapsed = now.saturating_duration_since(spec.phase_start);
                    let n = self.closed_active(r, elapsed, l);
                    self.set_active(n, now, &mut futs);
                }
            }
            if sched.is_some() {
                while !self.draining {
                    let Some(due) = next_due.filter(|d| *d <= now) else {
                        break;
                    };
                    let Some(&slot) = self.free.last() else {
                        self.blocked = true;
                        break;
                    };
                    if !claim(self.shared) {
                        self.draining = true;
                        break;
                    }
                    self.free.pop();
                    let t = self.next_target();
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
                    self.launch(slot, t, due, now, &mut futs);
                    k += 1;
                    next_due = due_at(k);
                }
                match next_due {
                    Some(d) if d <= now => {}
                    _ => self.blocked = false,
                }
            }
            if !self.open && !self.draining && self.budget_spent() && self.inflight == 0 {
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
                self.scan(now, &mut futs);
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
            let wake = tokio::time::Instant::from_std(wake);
            if sleep.deadline() != wake {
                sleep.as_mut().reset(wake);
            }
            let ev = std::future::poll_fn(|cx| {
                if let Poll::Ready(Some((c, g, r))) = futs.drivers.poll_next_unpin(cx) {
                    return Poll::Ready(Ev::Ended(c, g, r));
                }
                if let Poll::Ready(Some(d)) = futs.connects.poll_next_unpin(cx) {
                    return Poll::Ready(Ev::Connected(d));
                }
                if let Poll::Ready(Some(o)) = futs.reqs.poll_next_unpin(cx) {
                    return Poll::Ready(Ev::Done(o));
                }
                if sleep.as_mut().poll(cx).is_ready() {
                    return Poll::Ready(Ev::Tick);
                }
                Poll::Pending
            })
            .await;
            match ev {
                Ev::Done(o) => self.on_outcome(o, &mut futs),
                Ev::Connected(d) => self.on_connected(d, &mut futs),
                Ev::Ended(c, g, r) => self.on_ended(c, g, r),
                Ev::Tick => {}
            }
        }
        self.publish();
    }

    fn closed_active(&self, r: Ramp, elapsed: Duration, length: Duration) -> usize {
        let conns = (r.level_at(elapsed, length).round().max(0.0) as usize).min(self.conns.len());
        conns * self.streams
    }

    fn next_target(&mut self) -> usize {
        let r = self.spec.rotation;
        if r.len() <= 1 {
            return 0;
        }
        self.rot = (self.rot + 1) % r.len();
        r[self.rot]
    }

    fn budget_spent(&self) -> bool {
        self.shared
            .budget
            .as_ref()
            .is_some_and(|b| b.load(Ordering::Relaxed) == 0)
    }

    fn can_send(&self) -> bool {
        !self.draining && !self.shared.stop.load(Ordering::Relaxed) && claim(self.shared)
    }

    /// Starts connecting connection `c` (TCP or Unix, TLS, the HTTP/2
    /// preface and settings).
    fn start_connect(&mut self, c: usize, futs: &mut Futs<'a>) {
        let conn = &mut self.conns[c];
        conn.gen = conn.gen.wrapping_add(1);
        conn.st = CSt::Connecting;
        let gen = conn.gen;
        let run = self.run;
        let timeout = self.spec.timeout;
        futs.connects.push(Box::pin(async move {
            let result = match tokio::time::timeout(timeout, connect(run)).await {
                Ok(r) => r,
                Err(_) => Err((
                    ErrorKind::ConnectTimeout,
                    format!(
                        "no connection within the timeout ({} ms)",
                        timeout.as_millis()
                    ),
                )),
            };
            ConnectDone {
                conn: c,
                gen,
                result,
            }
        }));
    }

    /// Assigns a request for target `t` to `slot` and sends it (or queues
    /// it for its connection).
    fn launch(
        &mut self,
        slot: usize,
        t: usize,
        intended: Instant,
        now: Instant,
        futs: &mut Futs<'a>,
    ) {
        let run: &'a H2Run = self.run;
        let req = match run.fixed[t].as_ref() {
            Some(p) => JobReq::Fixed(p),
            None => {
                let draw = &mut self.draws[slot];
                let rendered = match self.spec.templates.get(t) {
                    Some(Some(tpl)) => {
                        tpl.render(draw, self.spec.counters, self.spec.data, &mut self.rng);
                        Prepared::parse(&draw.buf, self.run.scheme, self.run.opts.grpc)
                    }
                    _ => Err("no request for the target".to_string()),
                };
                match rendered {
                    Ok(p) => JobReq::Own(Box::new(p)),
                    Err(e) => {
                        // A rendered value that HTTP/2 cannot carry (a
                        // header value with a control character). The
                        // slot is revived by the scan, not at once, so a
                        // bad CSV row does not spin.
                        self.busy[slot] = true;
                        self.inflight += 1;
                        self.failed(slot, t, ErrorKind::Other, format!("request: {e}"), None);
                        return;
                    }
                }
            }
        };
        self.busy[slot] = true;
        self.inflight += 1;
        let inflight = self.inflight as u64;
        let sec = self.ledger.second_mut(now);
        sec.inflight_rose(inflight);
        let job = Job {
            slot,
            target: t,
            intended,
            sent: now,
            retried: false,
            req,
        };
        self.dispatch(job, futs);
    }

    /// Sends `job` on its slot's connection, connecting first if needed.
    fn dispatch(&mut self, job: Job<'a>, futs: &mut Futs<'a>) {
        let c = job.slot / self.streams;
        match &self.conns[c].st {
            CSt::Up(send) => {
                let send = send.clone();
                let gen = self.conns[c].gen;
                let timeout = self.spec.timeout;
                let grpc = self.run.opts.grpc;
                let decode = self.run.compressed;
                futs.reqs.push(Box::pin(async move {
                    let result = match tokio::time::timeout(
                        timeout,
                        call(send, job.req.get(), grpc, decode),
                    )
                    .await
                    {
                        Ok(r) => r,
                        Err(_) => Err(Failure::Failed(
                            ErrorKind::ReadTimeout,
                            format!("no answer within the timeout ({} ms)", timeout.as_millis()),
                        )),
                    };
                    Outcome {
                        job,
                        conn: c,
                        gen,
                        result,
                    }
                }));
            }
            CSt::Connecting | CSt::Backoff(_) => self.conns[c].pending.push(job),
            CSt::Down => {
                self.conns[c].pending.push(job);
                self.start_connect(c, futs);
            }
        }
    }

    fn on_connected(&mut self, d: ConnectDone, futs: &mut Futs<'a>) {
        if self.conns[d.conn].gen != d.gen {
            return;
        }
        let now = Instant::now();
        match d.result {
            Ok(up) => {
                self.open_conns += 1;
                let open_conns = self.open_conns;
                let sec = self.ledger.second_mut(now);
                sec.tally.connects += 1;
                sec.conns_now(open_conns);
                self.tally.connects += 1;
                if let Some(t) = up.tls {
                    let offered = self.run.tls.as_ref().is_some_and(|x| x.2);
                    self.tally
                        .transport
                        .handshake(t.us, t.resumed, &t.version, t.alpn, offered);
                }
                let (c, gen) = (d.conn, d.gen);
                let driver = up.driver;
                futs.drivers
                    .push(Box::pin(async move { (c, gen, driver.await) }));
                self.conns[c].st = CSt::Up(up.send);
                for job in std::mem::take(&mut self.conns[c].pending) {
                    self.dispatch(job, futs);
                }
            }
            Err((kind, reason)) => {
                let c = d.conn;
                self.conns[c].st = CSt::Backoff(now + RECONNECT_BACKOFF);
                for job in std::mem::take(&mut self.conns[c].pending) {
                    self.failed(job.slot, job.target, kind, reason.clone(), Some(futs));
                }
            }
        }
    }

    /// A connection's driver ended (the server closed it, sent GOAWAY, or
    /// the socket failed): its streams fail on their own; the next request
    /// on it reconnects.
    fn on_ended(&mut self, c: usize, gen: u32, r: Result<(), ::h2::Error>) {
        let now = Instant::now();
        self.open_conns = self.open_conns.saturating_sub(1);
        let open_conns = self.open_conns;
        let sec = self.ledger.second_mut(now);
        sec.conns_now(open_conns);
        sec.tally.server_closed += 1;
        self.tally.server_closed += 1;
        // How it ended shows in the streams that failed with it (an idle
        // connection closed by the server is not an error).
        let _ = r;
        if self.conns[c].gen == gen && matches!(self.conns[c].st, CSt::Up(_)) {
            self.conns[c].st = CSt::Down;
        }
    }

    fn on_outcome(&mut self, o: Outcome<'a>, futs: &mut Futs<'a>) {
        let Outcome {
            mut job,
            conn,
            gen,
            result,
        } = o;
        match result {
            Ok(a) => self.answered(job, a, futs),
            Err(Failure::NotSent(reason)) => {
                // The connection was going away before the stream opened.
                if self.conns[conn].gen == gen && matches!(self.conns[conn].st, CSt::Up(_)) {
                    self.conns[conn].st = CSt::Down;
                }
                if job.retried {
                    self.failed(job.slot, job.target, ErrorKind::GoAway, reason, Some(futs));
                } else {
                    job.retried = true;
                    self.dispatch(job, futs);
                }
            }
            Err(Failure::Failed(kind, reason)) => {
                if matches!(kind, ErrorKind::GoAway | ErrorKind::Reset)
                    && self.conns[conn].gen == gen
                    && matches!(self.conns[conn].st, CSt::Up(_))
                {
                    self.conns[conn].st = CSt::Down;
                }
                self.failed(job.slot, job.target, kind, reason, Some(futs));
            }
        }
    }

    fn answered(&mut self, job: Job<'a>, a: Answer, futs: &mut Futs<'a>) {
        let now = Instant::now();
        let from = if self.open { job.intended } else { job.sent };
        let lat_us = (now.saturating_duration_since(from).as_micros() as u64).max(1);
        let svc_us = (now.saturating_duration_since(job.sent).as_micros() as u64).max(1);
        let grpc = match a.grpc {
            None => None,
            Some(Ok(code)) => Some(code),
            Some(Err(why)) => {
                self.failed(job.slot, job.target, ErrorKind::Malformed, why, Some(futs));
                return;
            }
        };
        if let Some((encoded, decoded)) = a.decoded {
            let tr = &mut self.tally.transport;
            tr.compressed += 1;
            tr.encoded_bytes += encoded;
            tr.decoded_bytes += decoded;
        }
        self.inflight -= 1;
        self.record(now, job.target, a.status, grpc, a.bytes, lat_us, svc_us);
        let inflight = self.inflight as u64;
        self.ledger.second_mut(now).inflight_now(inflight);
        self.next_job(job.slot, now, futs);
    }

    /// The slot is free again: the closed model sends its next request,
    /// the open model puts it back on the free list.
    fn next_job(&mut self, slot: usize, now: Instant, futs: &mut Futs<'a>) {
        self.busy[slot] = false;
        if self.open {
            self.free.push(slot);
        } else if slot < self.active && self.can_send() {
            let c = slot / self.streams;
            if matches!(self.conns[c].st, CSt::Backoff(u) if u > now) {
                // Revived by the scan when the backoff ends.
                return;
            }
            let t = self.next_target();
            self.launch(slot, t, now, now, futs);
        }
    }

    /// Counts a failed request and frees its slot (giving it its next job
    /// when `futs` is there to take it).
    fn failed(
        &mut self,
        slot: usize,
        t: usize,
        kind: ErrorKind,
        reason: String,
        futs: Option<&mut Futs<'a>>,
    ) {
        let now = Instant::now();
        self.inflight = self.inflight.saturating_sub(1);
        self.tally.errors.add(kind);
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
        match futs {
            Some(futs) => self.next_job(slot, now, futs),
            None => {
                self.busy[slot] = false;
                if self.open {
                    self.free.push(slot);
                }
            }
        }
    }

    /// Closed-model ramps: slots `0..n` send from now on.
    fn set_active(&mut self, n: usize, now: Instant, futs: &mut Futs<'a>) {
        let was = self.active;
        self.active = n.min(self.busy.len());
        for slot in was..self.active {
            if self.busy[slot] {
                continue;
            }
            if !self.can_send() {
                break;
            }
            let t = self.next_target();
            self.launch(slot, t, now, now, futs);
        }
    }

    /// Revives connections whose backoff ended, and the closed model's
    /// idle slots (they waited for a backoff, or their request could not
    /// be built). Request timeouts are the requests' own.
    fn scan(&mut self, now: Instant, futs: &mut Futs<'a>) {
        for c in 0..self.conns.len() {
            if let CSt::Backoff(until) = self.conns[c].st {
                if now < until {
                    continue;
                }
                self.conns[c].st = CSt::Down;
                if !self.conns[c].pending.is_empty() {
                    self.start_connect(c, futs);
                }
            }
            if !self.open && !self.draining {
                for slot in c * self.streams..(c + 1) * self.streams {
                    if slot < self.active && !self.busy[slot] && self.can_send() {
                        let t = self.next_target();
                        self.launch(slot, t, now, now, futs);
                    }
                }
            }
        }
    }

    /// Open model: requests due from the `k`-th on before `limit` were never
    /// sent; each is charged `limit - intended` (see engine.rs).
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
            k += 1;
        }
    }

    /// The duration and its grace are over: requests still in flight or
    /// waiting for a connection are unfinished (neither answers nor errors).
    fn abandon_in_flight(&mut self, now: Instant) {
        let n = self.inflight as u64;
        if n == 0 {
            return;
        }
        self.tally.unfinished += n;
        self.inflight = 0;
        let sec = self.ledger.second_mut(now);
        sec.tally.unfinished += n;
        sec.inflight_now(0);
    }

    #[allow(clippy::too_many_arguments)]
    fn record(
        &mut self,
        now: Instant,
        t: usize,
        status: u16,
        grpc: Option<u32>,
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
            if let Some(g) = grpc {
                tally.add_grpc(g);
            }
            tally.latency.saturating_record(lat_us);
            if let Some(s) = &mut tally.service {
                s.saturating_record(svc_us);
            }
        };
        rec(&mut self.tally);
        if multi {
            rec(&mut self.per_target[t]);
        }
        let error = status >= 500 || grpc.is_some_and(|g| g != 0);
        let ntargets = self.spec.targets.len();
        let high = self.spec.high_us;
        let sec = self.ledger.second_mut(now);
        rec(&mut sec.tally);
        if multi {
            let st = sec;
            if st.per_target.is_empty() {
                st.per_target = vec![None; ntargets];
            }
            let h = st.per_target[t].get_or_insert_with(|| new_histogram(high, SIGFIG_SECOND));
            h.saturating_record(lat_us);
            if error {
                if st.per_target_errors.is_empty() {
                    st.per_target_errors = vec![(0, 0); ntargets];
                }
                st.per_target_errors[t].0 += 1;
            }
        }
        self.ledger.response(lat_us, error);
    }

    fn publish(&mut self) {
        self.ledger.publish(self.shared, self.spec.index);
    }
}

/// One call: open a stream, send the request, read the answer to its end
/// (trailers included), releasing flow-control capacity as data arrives.
async fn call(
    send: ::h2::client::SendRequest<Bytes>,
    p: &Prepared,
    grpc: bool,
    decode: bool,
) -> Result<Answer, Failure> {
    let mut send = send
        .ready()
        .await
        .map_err(|e| Failure::NotSent(classify(&e).1))?;
    let eos = p.body.is_empty();
    let (resp, mut stream) = send
        .send_request(p.request(), eos)
        .map_err(|e| Failure::NotSent(classify(&e).1))?;
    if !eos {
        stream
            .send_data(p.body.clone(), true)
            .map_err(|e| failed(&e))?;
    }
    let resp = resp.await.map_err(|e| failed(&e))?;
    let status = resp.status().as_u16();
    let (parts, mut body) = resp.into_parts();
    // A trailers-only answer (an error before any message) carries the
    // status in its headers.
    let mut grpc_status = if grpc {
        grpc::status(&parts.headers)
    } else {
        None
    };
    let malformed = |why: String| Failure::Failed(ErrorKind::Malformed, why);
    let mut decoder = if decode {
        let encoding = parts
            .headers
            .get(http::header::CONTENT_ENCODING)
            .map(|v| v.as_bytes().trim_ascii());
        crate::http::Decoder::for_encoding(encoding).map_err(|m| malformed(m.0))?
    } else {
        None
    };
    let mut bytes = 0u64;
    while let Some(chunk) = body.data().await {
        let chunk = chunk.map_err(|e| failed(&e))?;
        bytes += chunk.len() as u64;
        if let Some(d) = &mut decoder {
            d.write(&chunk)
                .map_err(|e| malformed(format!("{d:?} body does not decode: {e}")))?;
        }
        let _ = body.flow_control().release_capacity(chunk.len());
    }
    let decoded = match &mut decoder {
        Some(d) => Some((
            bytes,
            d.finish()
                .map_err(|e| malformed(format!("{d:?} body does not decode: {e}")))?,
        )),
        None => None,
    };
    if let Some(trailers) = body.trailers().await.map_err(|e| failed(&e))? {
        if grpc {
            if let Some(s) = grpc::status(&trailers) {
                grpc_status = Some(s);
            }
        }
    }
    let grpc = if grpc && status == 200 {
        Some(grpc_status.unwrap_or_else(|| Err("a gRPC answer without grpc-status".into())))
    } else {
        None
    };
    Ok(Answer {
        status,
        bytes,
        decoded,
        grpc,
    })
}

/// Takes one request from a counted phase's budget (as the HTTP/1.1
/// engine does): false once it is spent.
fn claim(shared: &Shared) -> bool {
    match &shared.budget {
        None => true,
        Some(b) => b
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |r| r.checked_sub(1))
            .is_ok(),
    }
}

fn failed(e: &::h2::Error) -> Failure {
    let (kind, reason) = classify(e);
    Failure::Failed(kind, reason)
}

/// An `h2` error as an error kind and its reason.
fn classify(e: &::h2::Error) -> (ErrorKind, String) {
    let text = e.to_string();
    if e.is_go_away() {
        return (ErrorKind::GoAway, format!("GOAWAY: {text}"));
    }
    if e.is_reset() {
        if e.reason() == Some(::h2::Reason::REFUSED_STREAM) {
            return (ErrorKind::RefusedStream, format!("RST_STREAM: {text}"));
        }
        return (ErrorKind::StreamReset, format!("RST_STREAM: {text}"));
    }
    if e.is_io() {
        return (ErrorKind::Reset, text);
    }
    (ErrorKind::Malformed, format!("HTTP/2: {text}"))
}

/// Opens one connection: the socket, TLS with ALPN `h2` when the target
/// is https (a server that does not choose h2 is an error, not a silent
/// HTTP/1.1), then the HTTP/2 handshake.
async fn connect(run: &H2Run) -> Result<Connected, (ErrorKind, String)> {
    let io_err = |e: std::io::Error| {
        let kind = match e.raw_os_error() {
            Some(libc::ECONNREFUSED) => ErrorKind::ConnectRefused,
            Some(libc::ETIMEDOUT) => ErrorKind::ConnectTimeout,
            Some(libc::ECONNRESET) => ErrorKind::Reset,
            _ => ErrorKind::Other,
        };
        (kind, format!("connect {}: {e}", run.endpoint))
    };
    match &run.endpoint {
        Endpoint::Tcp(addr) => {
            let s = tokio::net::TcpStream::connect(addr).await.map_err(io_err)?;
            let _ = s.set_nodelay(true);
            over(run, s).await
        }
        Endpoint::Unix(path) => {
            let s = tokio::net::UnixStream::connect(path)
                .await
                .map_err(io_err)?;
            over(run, s).await
        }
    }
}

async fn over<T>(run: &H2Run, io: T) -> Result<Connected, (ErrorKind, String)>
where
    T: AsyncRead + AsyncWrite + Unpin + 'static,
{
    let Some((connector, name, _)) = &run.tls else {
        return handshake(io, None).await;
    };
    let start = Instant::now();
    let tls = connector.connect(name.clone(), io).await.map_err(|e| {
        let refused = e
            .get_ref()
            .and_then(|i| i.downcast_ref::<rustls::Error>())
            .is_some_and(|r| {
                matches!(
                    r,
                    rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol)
                )
            });
        if refused {
            (
                ErrorKind::Other,
                "TLS: the server did not choose HTTP/2 by ALPN (it refused with no_application_protocol); it may not speak HTTP/2 on this port".to_string(),
            )
        } else {
            (ErrorKind::Other, format!("TLS: {e}"))
        }
    })?;
    let us = start.elapsed().as_micros() as u64;
    let c = tls.get_ref().1;
    let alpn = c
        .alpn_protocol()
        .map(|p| String::from_utf8_lossy(p).into_owned());
    if alpn.as_deref() != Some("h2") {
        return Err((
            ErrorKind::Other,
            format!(
                "TLS: the server did not choose HTTP/2 by ALPN ({}); it may not speak HTTP/2 on this port",
                alpn.map_or("no protocol chosen".to_string(), |a| format!("it chose {a}"))
            ),
        ));
    }
    let info = TlsInfo {
        us,
        resumed: c.handshake_kind() == Some(rustls::HandshakeKind::Resumed),
        version: c
            .protocol_version()
            .map(|v| format!("{v:?}"))
            .unwrap_or_default(),
        alpn,
    };
    handshake(tls, Some(info)).await
}

async fn handshake<T>(io: T, tls: Option<TlsInfo>) -> Result<Connected, (ErrorKind, String)>
where
    T: AsyncRead + AsyncWrite + Unpin + 'static,
{
    let (send, conn) = ::h2::client::Builder::new()
        .initial_window_size(WINDOW)
        .initial_connection_window_size(WINDOW)
        .enable_push(false)
        .handshake::<T, Bytes>(io)
        .await
        .map_err(|e| {
            let (kind, reason) = classify(&e);
            (kind, format!("HTTP/2 handshake: {reason}"))
        })?;
    Ok(Connected {
        send,
        driver: Box::pin(conn),
        tls,
    })
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
