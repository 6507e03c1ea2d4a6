//! HTTP load engine: connections, schedules, latency histograms, sweeps,
//! knee and SLO judgement.
//!
//! Build a [`Plan`] (targets, model, phases), call [`run`] (or
//! [`find_max`]) with a [`RunControl`], get a [`Report`]. The library never
//! prints: [`render`] turns a report into the terminal tables, so every
//! command shows the same thing.
//!
//! ```no_run
//! use keisoku_load::{Plan, RunControl, Target};
//! let target = Target::new("GET", "http://127.0.0.1:8080/health", Vec::new(), 1)?;
//! let plan = Plan::new(vec![target]);
//! let report = keisoku_load::run(&plan, &RunControl::default())?;
//! println!("{}", keisoku_load::render::summary(&report));
//! # Ok::<(), keisoku_load::LoadError>(())
//! ```

#![deny(missing_docs)]

mod engine;
pub mod error;
pub mod h2;
pub mod hlog;
pub mod http;
pub mod knee;
mod ledger;
pub mod plan;
pub mod render;
pub mod replay;
pub mod report;
pub mod scenario;
pub mod slo;
pub mod spec;
pub mod stages;
pub mod template;
pub mod tls;
pub mod transport;

pub use error::LoadError;
pub use knee::knee;
pub use plan::{Model, PhaseSpec, Plan, Target};
pub use report::{ErrorKind, PhaseReport, Report, Second, Span, Stats};
pub use slo::{Slo, Verdict};
pub use spec::{Job, LoadSpec};

use engine::{Shared, WorkerOut, WorkerSpec};
use report::{Tally, TargetReport, ThreadCpu, SIGFIG, SIGFIG_SECOND};
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// A thread at or above this share of one core was saturated.
const CPU_SATURATED_PCT: f64 = 90.0;

/// Live numbers handed to [`RunControl::progress`] about once a second.
#[derive(Debug, Clone)]
pub struct Progress {
    /// Index of the phase running (among measured phases; warm-up is `None`).
    pub phase: Option<usize>,
    /// How many phases the run has (for `--find-max`, the bound).
    pub phases: usize,
    /// The phase's label (`c=10`, `r=4000`, `warmup`).
    pub label: String,
    /// Time since the phase started.
    pub elapsed: Duration,
    /// Responses so far in this phase.
    pub requests: u64,
    /// Responses per second so far in this phase.
    pub rps: f64,
    /// Errors (transport errors and 5xx answers) so far in this phase.
    pub errors: u64,
    /// p99 latency so far in this phase, ms.
    pub p99_ms: f64,
}

/// Callback receiving [`Progress`].
pub type ProgressFn = Box<dyn Fn(&Progress) + Send + Sync>;

/// Results handed out as they become final, so a recorder can store them
/// while the load runs (a killed keisoku then keeps what was measured).
#[derive(Debug)]
pub enum Live<'a> {
    /// The load's clock started: Unix time in ms of its t = 0 (the
    /// report's `started_unix_ms`), before any other event.
    Started(u64),
    /// One second of the timeline, complete: every load thread has moved
    /// past it. Seconds come in order, each once, quiet seconds included.
    Second(&'a Second),
    /// The warm-up ended.
    Warmup(&'a Span),
    /// A measured phase started: its label, connections, rate and start
    /// (ms since `started_unix_ms`).
    PhaseStart {
        /// `c=10` or `r=4000`.
        label: String,
        /// Connections or the connection cap.
        connections: usize,
        /// Offered rate (open model).
        rate: Option<f64>,
        /// Start, ms since the load's clock started.
        start_ms: f64,
    },
    /// A measured phase ended.
    Phase(&'a PhaseReport),
}

/// Callback receiving [`Live`] results, from the coordinating thread.
pub type LiveFn = Box<dyn Fn(Live<'_>) + Send + Sync>;

/// How a caller steers a running load: a stop flag (set it from a Ctrl-C
/// handler; the report then covers what was measured and is marked partial)
/// and an optional progress callback.
#[derive(Default)]
pub struct RunControl {
    /// Set to stop the run early.
    pub stop: Arc<AtomicBool>,
    /// Called from the coordinating thread about once a second.
    pub progress: Option<ProgressFn>,
    /// Called with each second and phase as soon as it is final.
    pub live: Option<LiveFn>,
}

impl RunControl {
    fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// Runs every phase of the plan (after the warm-up) and reports.
pub fn run(plan: &Plan, ctl: &RunControl) -> Result<Report, LoadError> {
    plan.validate()?;
    raise_fd_limit(plan);
    let links = transport::links(&plan.targets, &plan.transport)?;
    let mut runner = Runner::new(plan, ctl, links)?;
    runner.warmup()?;
    for (i, spec) in plan.phases.iter().enumerate() {
        if ctl.stopped() {
            break;
        }
        runner.phase(spec, i, plan.phases.len())?;
    }
    Ok(runner.finish(None))
}

/// Bounds of a `--find-max` search.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Search {
    /// Lowest rate tried.
    pub low: f64,
    /// Highest rate tried.
    pub high: f64,
    /// Resolution: the search stops when the bracket is narrower than this.
    pub step: f64,
}

impl Search {
    /// The most phases the search can run.
    pub fn max_phases(&self) -> usize {
        let span = ((self.high - self.low) / self.step.max(1e-9)).max(1.0);
        2 + span.log2().ceil() as usize
    }
}

/// Open model only: the highest rate in `search` that meets `slo`, found by
/// bisection in at most [`Search::max_phases`] phases of `plan.phases[0]`'s
/// duration and connection cap. The report's phases are the rates tried, in
/// order; `max_rate` is the answer (None when even `low` fails).
pub fn find_max(
    plan: &Plan,
    slo: &Slo,
    search: Search,
    ctl: &RunControl,
) -> Result<Report, LoadError> {
    plan.validate()?;
    if plan.model != Model::Open {
        return Err(LoadError::BadInput(
            "--find-max needs the open model (--rate or --sweep-rate)".into(),
        ));
    }
    if !(search.low > 0.0 && search.high >= search.low && search.step > 0.0) {
        return Err(LoadError::BadInput(
            "--find-max needs 0 < low <= high and a positive step".into(),
        ));
    }
    raise_fd_limit(plan);
    let links = transport::links(&plan.targets, &plan.transport)?;
    let template = plan.phases[0].clone();
    let total = search.max_phases();
    let mut runner = Runner::new(plan, ctl, links)?;
    runner.warmup()?;
    let try_rate = |runner: &mut Runner, rate: f64| -> Result<Option<bool>, LoadError> {
        if ctl.stopped() {
            return Ok(None);
        }
        let spec = PhaseSpec {
            rate: Some(rate),
            ..template.clone()
        };
        let idx = runner.phases.len();
        runner.phase(&spec, idx, total)?;
        if ctl.stopped() {
            return Ok(None);
        }
        Ok(runner.phases.last().map(|p| slo.judge(&p.stats).pass))
    };
    let mut best = None;
    let top = try_rate(&mut runner, search.high)?;
    if top == Some(true) {
        best = Some(search.high);
    } else if top == Some(false) && try_rate(&mut runner, search.low)? == Some(true) {
        best = Some(search.low);
        let (mut lo, mut hi) = (search.low, search.high);
        while hi - lo > search.step {
            let mid = lo + ((hi - lo) / 2.0 / search.step).round().max(1.0) * search.step;
            let mid = mid.min(hi - search.step).max(lo + search.step);
            match try_rate(&mut runner, mid)? {
                Some(true) => {
                    lo = mid;
                    best = Some(mid);
                }
                Some(false) => hi = mid,
                None => break,
            }
        }
    }
    runner.max_rate_search = true;
    let mut report = runner.finish(best);
    judge(&mut report, slo);
    Ok(report)
}

/// The run's seconds as the workers hand them over, and how far they have
/// been passed on to [`RunControl::live`].
struct Timeline {
    seconds: BTreeMap<u64, engine::SecondTally>,
    /// The first second not yet passed on.
    emitted: u64,
}

impl Timeline {
    fn add(&mut self, t: u64, st: engine::SecondTally) {
        match self.seconds.get_mut(&t) {
            Some(acc) => acc.merge(st),
            None => {
                self.seconds.insert(t, st);
            }
        }
    }

    /// Takes what the workers handed over so far.
    fn drain(&mut self, shared: &Shared) {
        let handed = match shared.handed.lock() {
            Ok(mut h) => std::mem::take(&mut *h),
            Err(_) => return,
        };
        for (t, st) in handed {
            self.add(t, st);
        }
    }

    /// Passes on every second before `until`.
    fn emit_until(&mut self, until: u64, ctl: &RunControl) {
        // A later phase can ask for an earlier second than already passed
        // on; BTreeMap::range panics on a reversed range.
        if until <= self.emitted {
            return;
        }
        if let Some(cb) = &ctl.live {
            for (t, st) in self.seconds.range(self.emitted..until) {
                cb(Live::Second(&second_report(*t, st)));
            }
        }
        self.emitted = self.emitted.max(until);
    }
}

/// One second of the timeline from its merged tally.
fn second_report(t: u64, st: &engine::SecondTally) -> Second {
    let s = st.tally.stats(1.0);
    Second {
        t_s: t,
        requests: s.requests,
        rps: s.requests as f64,
        errors: s.errors,
        errors_transport: s.errors_transport,
        timeouts: s.errors_by_kind.read_timeout + s.errors_by_kind.connect_timeout,
        status: s.status,
        p50_ms: s.latency_ms.p50,
        p90_ms: s.latency_ms.p90,
        p99_ms: s.latency_ms.p99,
        max_ms: s.latency_ms.max,
        inflight: st.inflight,
        connections: st.connections,
        connects: st.tally.connects,
        server_closed: st.tally.server_closed,
        histogram: s.histogram,
        per_target: st.per_target.clone(),
        per_target_errors: st.per_target_errors.clone(),
    }
}

/// Accumulates phases of one run.
struct Runner<'a> {
    plan: &'a Plan,
    ctl: &'a RunControl,
    run_start: Instant,
    started_unix_ms: u64,
    requests: Vec<Vec<u8>>,
    /// Per target: its compiled template when its requests vary.
    templates: Vec<Option<template::RequestTemplate>>,
    /// `{{seq}}` and the shared row cursor, across threads and phases.
    counters: template::Counters,
    rotation: Vec<usize>,
    high_us: u64,
    warmup: Option<Span>,
    phases: Vec<PhaseReport>,
    overall: Tally,
    per_target: Vec<Tally>,
    timeline: Timeline,
    cpu: Vec<(f64, f64)>,
    reasons: Vec<(ErrorKind, String)>,
    partial: bool,
    max_rate_search: bool,
    /// How each target is reached (see [`transport::links`]).
    links: Vec<transport::Link>,
    /// `--h2`: the HTTP/2 workers' requests and connections.
    h2: Option<h2::H2Run>,
    /// `--scenario`: the steps as the workers run them.
    scenario: Option<scenario::Prepared>,
    /// `--scenario`: iterations of the phase just executed.
    scen_last: Option<scenario::report::ScenarioTally>,
    /// `--scenario`: per measured phase, its label, iterations and length.
    scen_phases: Vec<(String, scenario::report::ScenarioTally, f64)>,
    /// Why a replay's reader stopped early, when it did.
    replay_errors: Vec<String>,
}

impl<'a> Runner<'a> {
    fn new(
        plan: &'a Plan,
        ctl: &'a RunControl,
        links: Vec<transport::Link>,
    ) -> Result<Runner<'a>, LoadError> {
        let headers = transport_headers(&plan.headers, &plan.transport);
        let scenario = plan.scenario.as_ref().map(|s| scenario::Prepared {
            scenario: s.clone(),
            headers: headers.clone(),
        });
        let mut requests = Vec::with_capacity(plan.targets.len());
        let mut templates = Vec::with_capacity(plan.targets.len());
        for (t, link) in plan.targets.iter().zip(&links) {
            if plan.replay.is_some() {
                // Each replayed request brings its own bytes.
                requests.push(Vec::new());
                templates.push(None);
                continue;
            }
            // Through a plain HTTP proxy the request line carries the
            // absolute form of the target.
            let absolute;
            let t = if link.absolute_form {
                absolute = Target {
                    path: transport::absolute_target(t),
                    ..t.clone()
                };
                &absolute
            } else {
                t
            };
            match build_request(t, &headers, plan.keepalive, plan.data.as_ref())? {
                Request::Fixed(bytes) => {
                    requests.push(bytes);
                    templates.push(None);
                }
                Request::Templated(tpl) => {
                    requests.push(Vec::new());
                    templates.push(Some(tpl));
                }
            }
        }
        let h2 = match &plan.h2 {
            Some(_) => Some(h2::H2Run::new(plan, &links, &requests)?),
            None => None,
        };
        if plan.data.is_some() && !templates.iter().flatten().any(|t| t.uses_csv()) {
            return Err(LoadError::BadInput(
                "--data: no request reads it; use {{csv.COLUMN}} in a URL, header or body".into(),
            ));
        }
        let open = plan.model == Model::Open;
        let longest: Duration = plan
            .phases
            .iter()
            .map(|p| p.duration)
            .max()
            .unwrap_or_default();
        // The open model's latency runs from the intended send time, so it
        // can exceed the timeout by the schedule lag: allow a phase's length.
        let high = plan.timeout
            + if open {
                longest.max(Duration::from_secs(10))
            } else {
                Duration::ZERO
            };
        let high_us = (high.as_micros() as u64).clamp(1000, 3_600_000_000);
        let started_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map(|d| d.as_millis() as u64)
            .unwrap_or(0);
        if let Some(cb) = &ctl.live {
            cb(Live::Started(started_unix_ms));
        }
        Ok(Runner {
            plan,
            ctl,
            run_start: Instant::now(),
            started_unix_ms,
            requests,
            templates,
            counters: template::Counters::default(),
            rotation: rotation(&plan.targets),
            high_us,
            warmup: None,
            phases: Vec::new(),
            overall: Tally::new(high_us, SIGFIG, open),
            per_target: plan
                .targets
                .iter()
                .map(|_| Tally::new(high_us, SIGFIG, open))
                .collect(),
            timeline: Timeline {
                seconds: BTreeMap::new(),
                emitted: 0,
            },
            cpu: Vec::new(),
            reasons: Vec::new(),
            partial: false,
            max_rate_search: false,
            links,
            h2,
            scenario,
            scen_last: None,
            scen_phases: Vec::new(),
            replay_errors: Vec::new(),
        })
    }

    fn warmup(&mut self) -> Result<(), LoadError> {
        if self.plan.warmup.is_zero() || self.ctl.stopped() {
            return Ok(());
        }
        let spec = PhaseSpec {
            duration: self.plan.warmup,
            requests: None,
            ..self.plan.phases[0].clone()
        };
        let start = self.run_start.elapsed();
        self.execute(&spec, None, self.plan.phases.len())?;
        let span = Span {
            start_ms: ms(start),
            end_ms: ms(self.run_start.elapsed()),
        };
        if let Some(cb) = &self.ctl.live {
            cb(Live::Warmup(&span));
        }
        self.warmup = Some(span);
        Ok(())
    }

    fn phase(&mut self, spec: &PhaseSpec, index: usize, total: usize) -> Result<(), LoadError> {
        let start = self.run_start.elapsed();
        if let Some(cb) = &self.ctl.live {
            cb(Live::PhaseStart {
                label: spec.label(),
                connections: spec.connections,
                rate: spec.rate,
                start_ms: ms(start),
            });
        }
        let (tally, per_target, wall) = self.execute(spec, Some(index), total)?;
        let end = self.run_start.elapsed();
        let stopped = self.ctl.stopped();
        if stopped {
            self.partial = true;
            if tally.requests == 0 && tally.errors.total() == 0 {
                return Ok(());
            }
        }
        if let Some(st) = self.scen_last.take() {
            self.scen_phases.push((spec.label(), st, wall));
        }
        self.overall.merge(&tally);
        for (acc, t) in self.per_target.iter_mut().zip(&per_target) {
            acc.merge(t);
        }
        let phase = PhaseReport {
            index: self.phases.len(),
            label: spec.label(),
            connections: spec.connections,
            rate: spec.rate,
            start_ms: ms(start),
            end_ms: ms(end),
            stats: tally.stats(wall),
            slo: None,
            ramp: spec.ramp,
        };
        if let Some(cb) = &self.ctl.live {
            cb(Live::Phase(&phase));
        }
        self.phases.push(phase);
        Ok(())
    }

    /// Runs the workers of one phase; returns the phase tally, per-target
    /// tallies and the phase's wall time in seconds.
    fn execute(
        &mut self,
        spec: &PhaseSpec,
        index: Option<usize>,
        total: usize,
    ) -> Result<(Tally, Vec<Tally>, f64), LoadError> {
        let plan = self.plan;
        let threads = plan.threads.clamp(1, spec.connections);
        let shared = Shared {
            stop: self.ctl.stop.clone(),
            requests: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            live: Mutex::new(report::new_histogram(self.high_us, SIGFIG_SECOND)),
            budget: spec.requests.map(AtomicU64::new),
            handed: Mutex::new(Vec::new()),
            through: (0..threads).map(|_| AtomicU64::new(0)).collect(),
        };
        let phase_start = Instant::now();
        let end = if spec.requests.is_some() {
            None
        } else {
            Some(phase_start + spec.duration)
        };
        let cores = plan::default_threads();
        let feed = match &plan.replay {
            Some(r) => Some(replay::feed::Feed::start(
                r,
                replay::feed::Base {
                    authority: plan.targets[0].authority.clone(),
                    absolute: self.links[0]
                        .absolute_form
                        .then(|| format!("http://{}", plan.targets[0].authority)),
                    headers: transport_headers(&plan.headers, &plan.transport),
                    keepalive: plan.keepalive,
                },
            )?),
            None => None,
        };
        let specs: Vec<WorkerSpec> = (0..threads)
            .map(|t| {
                let conns =
                    spec.connections / threads + usize::from(t < spec.connections % threads);
                WorkerSpec {
                    index: t,
                    targets: &plan.targets,
                    requests: &self.requests,
                    templates: &self.templates,
                    counters: &self.counters,
                    data: plan.data.as_ref(),
                    rotation: &self.rotation,
                    connections: conns,
                    rate: spec
                        .rate
                        .map(|r| r * conns as f64 / spec.connections as f64),
                    ramp: spec.ramp.map(|r| {
                        let share = conns as f64 / spec.connections as f64;
                        stages::Ramp {
                            from: r.from * share,
                            to: r.to * share,
                        }
                    }),
                    phase_start,
                    end,
                    run_start: self.run_start,
                    timeout: plan.timeout,
                    keepalive: plan.keepalive,
                    pin: plan.pin.then_some(t % cores.max(1)),
                    high_us: self.high_us,
                    links: &self.links,
                    follow: plan.transport.follow,
                    compressed: plan.transport.compressed,
                    scenario: self.scenario.as_ref(),
                    replay: feed.as_ref(),
                }
            })
            .collect();
        let label = if index.is_some() {
            spec.label()
        } else {
            "warmup".to_string()
        };
        let outs: Vec<Result<WorkerOut, String>> = std::thread::scope(|scope| {
            let handles: Vec<_> = specs
                .iter()
                .map(|ws| {
                    let shared = &shared;
                    let h2 = self.h2.as_ref();
                    std::thread::Builder::new()
                        .name(format!("keisoku-load-{}", ws.index))
                        .spawn_scoped(scope, move || match h2 {
                            Some(h2) => h2::run_worker(ws, shared, h2),
                            None => engine::run_worker(ws, shared),
                        })
                })
                .collect();
            let mut next_progress = Instant::now() + Duration::from_secs(1);
            while handles
                .iter()
                .any(|h| h.as_ref().is_ok_and(|h| !h.is_finished()))
            {
                std::thread::sleep(Duration::from_millis(50));
                if self.ctl.live.is_some() {
                    // `through` before the drain: what it covers was handed first.
                    let through = shared
                        .through
                        .iter()
                        .map(|t| t.load(Ordering::Acquire))
                        .min()
                        .unwrap_or(0);
                    self.timeline.drain(&shared);
                    let now_s = self.run_start.elapsed().as_secs();
                    self.timeline.emit_until(through.min(now_s), self.ctl);
                }
                if Instant::now() >= next_progress {
                    next_progress += Duration::from_secs(1);
                    if let Some(cb) = &self.ctl.progress {
                        let elapsed = phase_start.elapsed();
                        let requests = shared.requests.load(Ordering::Relaxed);
                        let p99_ms = shared
                            .live
                            .lock()
                            .map(|h| {
                                if h.is_empty() {
                                    0.0
                                } else {
                                    h.value_at_quantile(0.99) as f64 / 1000.0
                                }
                            })
                            .unwrap_or(0.0);
                        cb(&Progress {
                            phase: index,
                            phases: total,
                            label: label.clone(),
                            elapsed,
                            requests,
                            rps: requests as f64 / elapsed.as_secs_f64().max(1e-3),
                            errors: shared.errors.load(Ordering::Relaxed),
                            p99_ms,
                        });
                    }
                }
            }
            handles
                .into_iter()
                .map(|h| match h {
                    Ok(h) => h
                        .join()
                        .unwrap_or_else(|_| Err("a load thread panicked".into())),
                    Err(e) => Err(format!("cannot start a load thread: {e}")),
                })
                .collect()
        });
        let wall = phase_start.elapsed().as_secs_f64();
        let open = plan.model == Model::Open;
        let mut tally = Tally::new(self.high_us, SIGFIG, open);
        let mut per_target: Vec<Tally> = plan
            .targets
            .iter()
            .map(|_| Tally::new(self.high_us, SIGFIG, open))
            .collect();
        let mut scen: Option<scenario::report::ScenarioTally> = None;
        for out in outs {
            let out = out.map_err(LoadError::Engine)?;
            tally.merge(&out.tally);
            if let Some(st) = &out.scenario {
                match &mut scen {
                    Some(acc) => acc.merge(st),
                    None => scen = Some(st.clone()),
                }
            }
            if plan.targets.len() > 1 || plan.scenario.is_some() {
                for (acc, t) in per_target.iter_mut().zip(&out.per_target) {
                    acc.merge(t);
                }
            }
            if index.is_some() {
                self.cpu.push((out.cpu_s, out.wall_s));
            }
            for (k, r) in out.reasons {
                if !self.reasons.iter().any(|(kk, _)| *kk == k) {
                    self.reasons.push((k, r));
                }
            }
        }
        if plan.targets.len() == 1 && plan.scenario.is_none() {
            per_target = vec![tally.clone()];
        }
        self.scen_last = scen;
        if let Some(e) = feed.as_ref().and_then(|f| f.error()) {
            self.replay_errors.push(e);
        }
        self.timeline.drain(&shared);
        // The phase's last second may go on in the next phase: it waits.
        let now_s = self.run_start.elapsed().as_secs();
        self.timeline.emit_until(now_s, self.ctl);
        Ok((tally, per_target, wall))
    }

    fn finish(mut self, best: Option<f64>) -> Report {
        let plan = self.plan;
        let measured: f64 = self.phases.iter().map(|p| p.stats.duration_s).sum();
        let overall = self.overall.stats(measured);
        let end = self
            .timeline
            .seconds
            .keys()
            .next_back()
            .map_or(0, |t| t + 1);
        self.timeline.emit_until(end, self.ctl);
        let timeline = self
            .timeline
            .seconds
            .iter()
            .map(|(t, st)| second_report(*t, st))
            .collect();
        let targets = plan
            .targets
            .iter()
            .zip(&self.per_target)
            .enumerate()
            .map(|(k, (t, tally))| TargetReport {
                method: t.method.clone(),
                // A scenario's routes are its steps, by name.
                url: plan
                    .scenario
                    .as_ref()
                    .and_then(|s| s.steps.get(k))
                    .map_or_else(|| t.url.clone(), |s| s.name.clone()),
                weight: t.weight,
                stats: tally.stats(measured),
            })
            .collect();
        let generator: Vec<ThreadCpu> = self
            .cpu
            .iter()
            .enumerate()
            .map(|(i, (cpu, wall))| ThreadCpu {
                thread: i % plan.threads.max(1),
                cpu_pct: if *wall > 0.0 { cpu / wall * 100.0 } else { 0.0 },
            })
            .collect();
        let mut warnings = Vec::new();
        let mut notes = Vec::new();
        // A report's warnings say the generator may be what was measured
        // (findings read them so); what a replay could not send as recorded
        // is a note.
        if let Some(r) = &plan.replay {
            notes.extend(r.notes.iter().cloned());
            notes.extend(r.warnings.iter().cloned());
            for e in &self.replay_errors {
                notes.push(format!(
                    "replay: not as recorded: the file stopped being read early: {e}"
                ));
            }
        }
        let busiest = generator.iter().map(|g| g.cpu_pct).fold(0.0, f64::max);
        if busiest >= CPU_SATURATED_PCT {
            warnings.push(format!(
                "a keisoku load thread used {busiest:.0}% of a core: the generator was saturated, these numbers may describe keisoku, not the target (add --threads or lower the load)"
            ));
        }
        for p in &self.phases {
            if let Some(s) = &p.stats.schedule {
                // Lag with a free connection at hand is keisoku's own; waiting for
                // a connection under the cap is the target being too slow, which the
                // corrected latency already shows.
                let own = s.late - s.waited_for_connection.min(s.late);
                if s.intended > 0 && own as f64 > 0.01 * s.intended as f64 {
                    warnings.push(format!(
                        "phase {}: the open-model schedule fell behind with connections free: {} of {} requests were sent more than 1 ms late; these numbers may describe keisoku, not the target (add --threads or lower the rate)",
                        p.label, own, s.intended
                    ));
                }
                if s.intended > 0
                    && (s.waited_for_connection + s.unsent) as f64 > 0.01 * s.intended as f64
                {
                    notes.push(format!(
                        "phase {}: all {} connections were busy: {} requests waited for one and {} were never sent; the target could not keep up with {} req/s (latency includes the wait; raise -c if the target has more capacity)",
                        p.label,
                        p.connections,
                        s.waited_for_connection,
                        s.unsent,
                        p.rate.map(plan::fmt_num).unwrap_or_default()
                    ));
                }
            }
        }
        if plan.model == Model::Closed {
            notes.extend(
                self.phases
                    .iter()
                    .filter_map(|p| closed_stall_hint(p, &self.timeline)),
            );
        }
        // Find-max phases are not a monotone sweep: no knee for them.
        let knee = if self.max_rate_search || self.phases.iter().any(|p| p.ramp.is_some()) {
            None
        } else {
            knee::knee(&self.phases)
        };
        let scenario = plan.scenario.as_ref().map(|s| {
            scenario_report(
                s,
                &self.scen_phases,
                &self.per_target,
                measured,
                self.high_us,
                plan.model == Model::Open,
            )
        });
        let mut reasons: Vec<(ErrorKind, String)> = self.reasons;
        reasons.sort_by_key(|(k, _)| ErrorKind::ALL.iter().position(|x| x == k));
        Report {
            version: 1,
            model: plan.model,
            started_unix_ms: self.started_unix_ms,
            duration_ms: ms(self.run_start.elapsed()),
            partial: self.partial,
            threads: plan.threads.clamp(
                1,
                plan.phases
                    .iter()
                    .map(|p| p.connections)
                    .max()
                    .unwrap_or(1)
                    .max(1),
            ),
            keepalive: plan.keepalive,
            protocol: plan
                .h2
                .as_ref()
                .map(|o| o.protocol(plan.targets.iter().any(|t| t.tls))),
            streams: plan.h2.as_ref().map(|o| o.streams),
            warmup: self.warmup,
            overall,
            phases: self.phases,
            knee,
            slo: None,
            best_passing_phase: None,
            max_rate: best,
            targets,
            timeline,
            generator,
            warnings,
            notes,
            error_reasons: reasons
                .into_iter()
                .map(|(k, r)| format!("{}: {r}", k.name()))
                .collect(),
            scenario,
        }
    }
}

/// The scenario section of a report: iterations per phase and overall,
/// and per step its requests (the step's route) and failures.
fn scenario_report(
    s: &scenario::Scenario,
    phases: &[(String, scenario::report::ScenarioTally, f64)],
    per_target: &[Tally],
    measured: f64,
    high_us: u64,
    open: bool,
) -> scenario::report::ScenarioReport {
    use scenario::report::{
        IterationPhase, IterationStats, ScenarioReport, ScenarioTally, StepReport,
    };
    let mut all = ScenarioTally::new(s.steps.len(), high_us, open);
    for (_, t, _) in phases {
        all.merge(t);
    }
    ScenarioReport {
        file: s.source.clone(),
        slo_basis: "iterations",
        overall: IterationStats::new(&all, measured),
        phases: phases
            .iter()
            .map(|(label, t, wall)| IterationPhase {
                label: label.clone(),
                iterations: IterationStats::new(t, *wall),
            })
            .collect(),
        steps: s
            .steps
            .iter()
            .enumerate()
            .map(|(k, step)| {
                let st = per_target.get(k).map(|t| t.stats(measured));
                StepReport {
                    name: step.name.clone(),
                    once: k < s.once,
                    method: step.target.method.clone(),
                    url: step.target.url.clone(),
                    requests: st.as_ref().map_or(0, |x| x.requests),
                    errors_transport: all.transport.get(k).copied().unwrap_or(0),
                    failures: all.steps.get(k).cloned().unwrap_or_default(),
                    latency_ms: st.map(|x| x.latency_ms).unwrap_or_default(),
                }
            })
            .collect(),
    }
}

/// A closed-model phase whose server stalled: its slowest response took
/// over 20 times the median and at least 100 ms, or one of its whole
/// seconds answered under a fifth of the median second. The closed model's
/// connections wait with the server, so few requests see the stall and the
/// percentiles hide it (coordinated omission); the open model charges it.
fn closed_stall_hint(p: &PhaseReport, timeline: &Timeline) -> Option<String> {
    let l = &p.stats.latency_ms;
    let slow_max = l.max >= 100.0 && l.max > 20.0 * l.p50.max(0.001);
    // Whole seconds inside the phase only: the first and last are partial.
    let first = (p.start_ms / 1000.0).ceil() as u64;
    let last = (p.end_ms / 1000.0).floor() as u64;
    let counts: Vec<u64> = (first..last)
        .map(|t| timeline.seconds.get(&t).map_or(0, |s| s.tally.requests))
        .collect();
    let mut sorted = counts.clone();
    sorted.sort_unstable();
    let median = sorted.get(sorted.len() / 2).copied().unwrap_or(0);
    let dip = (counts.len() >= 3 && median >= 10)
        .then(|| counts.iter().enumerate().min_by_key(|(_, n)| **n))
        .flatten()
        .filter(|(_, n)| (**n as f64) < median as f64 / 5.0)
        .map(|(i, n)| (first + i as u64, *n));
    if !slow_max && dip.is_none() {
        return None;
    }
    let mut why = Vec::new();
    if slow_max {
        why.push(format!(
            "the slowest response took {:.0} ms, {:.0}x the median",
            l.max,
            l.max / l.p50.max(0.001)
        ));
    }
    if let Some((t, n)) = dip {
        why.push(format!(
            "second {t} answered {n} requests against a median of {median}"
        ));
    }
    Some(format!(
        "phase {}: the server seems to have stalled ({}); in the closed model the connections wait with it, so few requests see the stall and the percentiles above hide it. Measure with the open model (-R RATE) to charge the stall to every request it delayed",
        p.label,
        why.join("; ")
    ))
}

/// Judges every phase and the whole run against `slo`, filling
/// [`PhaseReport::slo`], [`Report::slo`] and [`Report::best_passing_phase`].
/// Returns whether the run passed the gate: a single-phase run passes when
/// its numbers meet every clause; a sweep passes when at least one phase
/// does (the highest such phase is the answer); a `--find-max` search
/// passes when it found a rate.
pub fn judge(report: &mut Report, slo: &Slo) -> bool {
    // A scenario's unit of work is the iteration: the SLO judges those.
    if let Some(pass) = scenario::report::judge(report, slo) {
        return pass;
    }
    for p in &mut report.phases {
        p.slo = Some(slo.judge(&p.stats));
    }
    report.best_passing_phase = report
        .phases
        .iter()
        .filter(|p| p.slo.as_ref().is_some_and(|v| v.pass))
        .max_by(|a, b| a.load().total_cmp(&b.load()))
        .map(|p| p.index);
    let verdict = slo.judge(&report.overall);
    let pass = if report.max_rate.is_some() {
        true
    } else if report.phases.len() > 1 {
        report.best_passing_phase.is_some()
    } else {
        verdict.pass
    };
    report.slo = Some(verdict);
    pass
}

/// Many connections need many descriptors: lift the soft limit towards the
/// hard one (as far as the plan needs) instead of failing with EMFILE.
fn raise_fd_limit(plan: &Plan) {
    let need = plan.phases.iter().map(|p| p.connections).max().unwrap_or(0) as u64 + 256;
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: lim is valid for both calls.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < need {
            lim.rlim_cur = need.min(lim.rlim_max);
            libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// The plan's headers plus what the transport asks for: `--compressed`
/// adds `Accept-Encoding: gzip, deflate, br` unless `-H` already sets one.
fn transport_headers(
    headers: &[(String, String)],
    t: &transport::Transport,
) -> Vec<(String, String)> {
    let mut out = headers.to_vec();
    if t.compressed
        && !headers
            .iter()
            .any(|(n, _)| n.eq_ignore_ascii_case("accept-encoding"))
    {
        out.push(("Accept-Encoding".into(), "gzip, deflate, br".into()));
    }
    out
}

/// The default `User-Agent`, so a server's access log can tell keisoku's
/// requests apart (`-H 'User-Agent: ...'` replaces it).
pub const USER_AGENT: &str = concat!("keisoku/", env!("CARGO_PKG_VERSION"));

/// One target's request: its exact bytes when nothing in it varies, or
/// its compiled template.
pub(crate) enum Request {
    Fixed(Vec<u8>),
    Templated(template::RequestTemplate),
}

/// Builds the request of target `t`: the plan's headers (the target's own
/// replace those of the same name), `Host` and `User-Agent` unless given,
/// `Content-Length` from the (rendered) body. Templates are compiled here,
/// so a placeholder that is not understood is refused before any request.
pub(crate) fn build_request(
    t: &Target,
    headers: &[(String, String)],
    keepalive: bool,
    data: Option<&template::Data>,
) -> Result<Request, LoadError> {
    use template::{Place, Template};
    let what = || format!("request {} {}", t.method, t.url);
    let bad = |e: String| LoadError::BadInput(format!("{}: {e}", what()));
    let mut merged: Vec<&(String, String)> = headers
        .iter()
        .filter(|(n, _)| !t.headers.iter().any(|(tn, _)| tn.eq_ignore_ascii_case(n)))
        .collect();
    merged.extend(t.headers.iter());
    let has = |name: &str| merged.iter().any(|(n, _)| n.eq_ignore_ascii_case(name));
    let mut head = Template::literal(format!("{} ", t.method).as_bytes());
    head.append(Template::compile(t.path.as_bytes(), Place::Url, data).map_err(bad)?);
    head.append(Template::literal(b" HTTP/1.1\r\n"));
    if !has("host") {
        head.append(Template::literal(
            format!("Host: {}\r\n", t.authority).as_bytes(),
        ));
    }
    for (n, v) in &merged {
        if n.eq_ignore_ascii_case("content-length") || n.eq_ignore_ascii_case("connection") {
            continue;
        }
        head.append(Template::literal(format!("{n}: ").as_bytes()));
        head.append(
            Template::compile(v.as_bytes(), Place::Header, data)
                .map_err(|e| bad(format!("header {n}: {e}")))?,
        );
        head.append(Template::literal(b"\r\n"));
    }
    if !has("user-agent") {
        head.append(Template::literal(
            format!("User-Agent: {USER_AGENT}\r\n").as_bytes(),
        ));
    }
    let body =
        Template::compile(&t.body, Place::Body, data).map_err(|e| bad(format!("body: {e}")))?;
    let content_length = !has("transfer-encoding")
        && (!t.body.is_empty() || matches!(t.method.as_str(), "POST" | "PUT" | "PATCH"));
    if has("transfer-encoding") && !body.is_literal() {
        return Err(bad(
            "templates in a chunked body are not supported (drop Transfer-Encoding: chunked)"
                .into(),
        ));
    }
    let tail = if keepalive {
        b"\r\n".to_vec()
    } else {
        b"Connection: close\r\n\r\n".to_vec()
    };
    let req = template::RequestTemplate::new(head, body, content_length, tail);
    Ok(match req.fixed() {
        Some(bytes) => Request::Fixed(bytes),
        None => Request::Templated(req),
    })
}

/// Most slots in one rotation: weights whose reduced sum exceeds it are
/// scaled down (every target keeps at least one slot).
const MAX_SLOTS: u64 = 4_000_000;

/// Target indices in a smooth weighted order (weights 3,1 give a a b a, not
/// a a a b), so any window of the rotation is representative, and every
/// target has its weight's share of slots however many lines the targets
/// file has: a cap of 10,000 slots once sent a 15,000-line file only to its
/// first 10,000 lines. Slot `k` of a target of weight `w` sits at virtual
/// time `(k + phase) / w` (stride scheduling, O(slots log slots) instead of
/// the O(slots x targets) of picking the largest running credit each time).
/// The phase is the target's golden-ratio fraction, not its file position:
/// a file of 12,000 `/users` lines then 3,000 `/items` lines would
/// otherwise send the first tenth of a run to `/users` only.
fn rotation(targets: &[Target]) -> Vec<usize> {
    fn gcd(a: u64, b: u64) -> u64 {
        if b == 0 {
            a
        } else {
            gcd(b, a % b)
        }
    }
    let weights: Vec<u64> = targets.iter().map(|t| u64::from(t.weight.max(1))).collect();
    let g = weights.iter().fold(0, |a, &w| gcd(a, w)).max(1);
    let mut weights: Vec<u64> = weights.iter().map(|w| w / g).collect();
    let total: u64 = weights.iter().sum();
    if total > MAX_SLOTS {
        let scale = MAX_SLOTS as f64 / total as f64;
        for w in &mut weights {
            *w = ((*w as f64 * scale).round() as u64).max(1);
        }
    }
    let slots: usize = weights.iter().sum::<u64>() as usize;
    let mut keyed: Vec<(f64, usize)> = Vec::with_capacity(slots);
    const GOLDEN: f64 = 0.618_033_988_749_894_9;
    for (i, &w) in weights.iter().enumerate() {
        // The first line starts the rotation (phase 0), as it always has.
        let phase = (i as f64 * GOLDEN).fract();
        for k in 0..w {
            keyed.push(((k as f64 + phase) / w as f64, i));
        }
    }
    keyed.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
    keyed.into_iter().map(|(_, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(method: &str, url: &str, body: &[u8], w: u32) -> Target {
        Target::new(method, url, body.to_vec(), w).unwrap()
    }

    fn bytes(t: &Target, headers: &[(String, String)], keepalive: bool) -> String {
        match build_request(t, headers, keepalive, None).unwrap() {
            Request::Fixed(b) => String::from_utf8(b).unwrap(),
            Request::Templated(_) => panic!("a plain request compiled to a template"),
        }
    }

    /// Since issue 18 every request names keisoku in `User-Agent` unless
    /// a header replaces it (before, none was sent).
    #[test]
    fn request_bytes() {
        let t = target("POST", "http://127.0.0.1:8080/bid?x=1", b"{}", 1);
        assert_eq!(
            bytes(&t, &[("X-A".into(), "1".into())], false),
            format!("POST /bid?x=1 HTTP/1.1\r\nHost: 127.0.0.1:8080\r\nX-A: 1\r\nUser-Agent: {USER_AGENT}\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{{}}")
        );
        let t = target("GET", "http://127.0.0.1:8080/", b"", 1);
        assert_eq!(
            bytes(
                &t,
                &[
                    ("host".into(), "example".into()),
                    ("user-agent".into(), "me".into())
                ],
                true
            ),
            "GET / HTTP/1.1\r\nhost: example\r\nuser-agent: me\r\n\r\n"
        );
    }

    #[test]
    fn target_headers_replace_plan_headers_and_templates_compile() {
        let mut t = target(
            "GET",
            "http://127.0.0.1:8080/u/{{seq}}?q={{rand_int 1 9}}",
            b"",
            1,
        );
        assert_eq!(t.path, "/u/{{seq}}?q={{rand_int 1 9}}");
        t.headers.push(("X-A".into(), "mine".into()));
        let plan_headers = [("x-a".into(), "plan".into()), ("X-B".into(), "b".into())];
        let Request::Templated(tpl) = build_request(&t, &plan_headers, true, None).unwrap() else {
            panic!("a templated URL compiled to fixed bytes");
        };
        let mut cd = template::ConnDraw::default();
        tpl.render(
            &mut cd,
            &template::Counters::default(),
            None,
            &mut template::Rng::new(0),
        );
        let s = String::from_utf8(cd.buf).unwrap();
        assert!(s.starts_with("GET /u/1?q="), "{s}");
        assert!(
            s.contains("X-B: b\r\nX-A: mine\r\n") && !s.contains("plan"),
            "{s}"
        );
        let bad = target("GET", "http://127.0.0.1:8080/{{nope}}", b"", 1);
        let e = build_request(&bad, &[], true, None)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("unknown template {{nope}}"), "{e}");
        assert!(Target::new("GET", "http://{{seq}}:1/", Vec::new(), 1).is_err());
        assert!(Target::new("GET", "http://127.0.0.1:{{seq}}/", Vec::new(), 1).is_err());
    }

    #[test]
    fn weighted_rotation_is_smooth() {
        let ts = vec![
            target("GET", "http://127.0.0.1:1/a", b"", 3),
            target("GET", "http://127.0.0.1:1/b", b"", 1),
        ];
        let r = rotation(&ts);
        assert_eq!(r.len(), 4);
        assert_eq!(r.iter().filter(|&&i| i == 0).count(), 3);
        assert_eq!(r, vec![0, 0, 1, 0]);
    }

    /// A long targets file (one line per id, as generated from logs):
    /// 20,000 lines, every one in the rotation, the weights respected.
    #[test]
    fn rotation_covers_every_line_of_a_long_file() {
        let mut ts = Vec::new();
        for i in 0..12_000 {
            ts.push(target(
                "GET",
                &format!("http://127.0.0.1:1/users/{i}"),
                b"",
                1,
            ));
        }
        for i in 0..3_000 {
            ts.push(target(
                "GET",
                &format!("http://127.0.0.1:1/items/{i}"),
                b"",
                2,
            ));
        }
        for i in 0..5_000 {
            ts.push(target(
                "GET",
                &format!("http://127.0.0.1:1/other/{i}"),
                b"",
                1,
            ));
        }
        let r = rotation(&ts);
        assert_eq!(r.len(), 12_000 + 6_000 + 5_000);
        let mut seen = vec![0u32; ts.len()];
        for &i in &r {
            seen[i] += 1;
        }
        assert!(seen[..12_000].iter().all(|&n| n == 1));
        assert!(seen[12_000..15_000].iter().all(|&n| n == 2));
        assert!(seen[15_000..].iter().all(|&n| n == 1));
        // Any window of 2,300 slots (a tenth) holds each group near its share.
        let window = &r[..2_300];
        let items = window
            .iter()
            .filter(|&&i| (12_000..15_000).contains(&i))
            .count();
        let other = window.iter().filter(|&&i| i >= 15_000).count();
        assert!((500..700).contains(&items), "{items}");
        assert!((400..600).contains(&other), "{other}");
    }

    #[test]
    fn huge_weights_are_scaled_not_dropped() {
        let ts = vec![
            target("GET", "http://127.0.0.1:1/a", b"", u32::MAX),
            target("GET", "http://127.0.0.1:1/b", b"", u32::MAX - 1),
            target("GET", "http://127.0.0.1:1/c", b"", 1),
        ];
        let r = rotation(&ts);
        assert!(r.len() as u64 <= MAX_SLOTS + 3);
        assert!(r.contains(&2));
    }

    #[test]
    fn search_is_bounded() {
        let s = Search {
            low: 100.0,
            high: 6400.0,
            step: 100.0,
        };
        assert_eq!(s.max_phases(), 2 + 6);
    }
}
