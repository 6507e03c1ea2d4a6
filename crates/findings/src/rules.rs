//! The rules. Each reads the run through [`View`] and returns zero or more
//! findings. Thresholds are relative (per request, shares, ratios) so that
//! they hold on a fast or slow machine; docs/findings.md lists them.

use crate::model::{Evidence, Finding, FrameShare, Severity};
use crate::patterns::{
    is_stall_work, matches, Kind, KINDS, NO_FUNCTION, RUNTIME_FRAMES, RUNTIME_THREADS,
};
use crate::view::{MeasuredPhase, ThreadKey, View};
use std::collections::{BTreeMap, HashMap, HashSet};

/// Host CPU busy (% of all cores) from which a knee counts as CPU-bound.
pub const CPU_BOUND_BUSY_PCT: f64 = 85.0;
/// Host CPU busy below which a knee counts as "cores idle".
pub const IDLE_KNEE_BUSY_PCT: f64 = 70.0;
/// One thread's CPU plus time runnable waiting for a core (% of one core)
/// from which it counts as saturated.
pub const HOT_THREAD_PCT: f64 = 70.0;
/// A thread of the same family with this share of the top thread's samples
/// counts as a second worker.
pub const SIBLING_SHARE: f64 = 0.03;
/// One thread's demand (% of one core) from which it counts as saturated
/// on a host whose CPU is busy (at least [`CPU_BOUND_BUSY_PCT`] in that
/// phase) while the thread itself waits for a core (at least
/// [`STARVED_WAIT_PCT`]): there the load generator is starved too and sends the next
/// request only when it gets a core, so the lone worker idles between
/// requests and its demand stays under [`HOT_THREAD_PCT`] though it does
/// all the work (flask-shop's one gunicorn worker: 62-68% at load 19-23).
pub const HOT_THREAD_BUSY_HOST_PCT: f64 = 50.0;
/// A thread's wait for a core (% of one core) from which it counts as
/// starved by others: [`HOT_THREAD_BUSY_HOST_PCT`] applies only then.
pub const STARVED_WAIT_PCT: f64 = 20.0;
/// Share of its wall-clock time a lone serving thread spends inside
/// requests (on a CPU, runnable or blocked) from which it counts as the
/// server's limit: it takes the next request as soon as it finishes one.
pub const LONE_WORKER_OCCUPIED: f64 = 0.9;
/// Share of its wall-clock time inside requests under which another
/// serving thread counts as idle (a second worker this lightly used does
/// not serve the load).
pub const IDLE_WORKER_OCCUPIED: f64 = 0.1;
/// Involuntary context switches per request from which scheduling counts as churn.
pub const NIVCSW_PER_REQUEST: f64 = 8.0;
/// CPU migrations per request from which scheduling counts as churn.
pub const MIGRATIONS_PER_REQUEST: f64 = 0.25;
/// CPU migrations per second per core below which migrations never count.
pub const MIGRATIONS_PER_CORE_S: f64 = 50.0;
/// New TCP connections (opened plus accepted) per request from which
/// connections count as churning.
pub const CONNECTS_PER_REQUEST: f64 = 0.3;
/// A route's share of total time from which it dominates.
pub const ROUTE_SHARE: f64 = 0.6;
/// A dominating route is a problem when its share of time is this many
/// times its share of requests (it is slow per request, not just busy).
pub const ROUTE_SLOW_RATIO: f64 = 3.0;
/// Share of request time spent waiting (neither on CPU nor runnable).
pub const WAIT_SHARE: f64 = 0.5;
/// Mean latency below which waiting is not worth a finding (a loopback
/// round trip and the kernel's own work stay far below it).
pub const WAIT_MIN_MS: f64 = 2.0;
/// Wait per request (ms, at the lightest phase) from which waiting is a
/// problem and not a description: a downstream call of a few ms is what a
/// service that asks another one costs; tens of ms of sleeping, locking or
/// a slow service on every request is what holds a worker.
pub const WAIT_PROBLEM_MS: f64 = 10.0;
/// Wait per request measured by a wall-clock profile (ms) from which it is a
/// problem. Higher than [`WAIT_PROBLEM_MS`]: measured, the wait includes the
/// downstream's own delays, and a downstream on the same crowded host
/// answers late by its run-queue waits (the tuned flask-shop's ~3-ms stock
/// lookup measured 12-17 ms per request at load 26-29; the planted 40-ms
/// audit call 57-108 ms, and never less than its 40 ms), where the inferred
/// wait has the server's run-queue time taken out.
pub const WALL_WAIT_PROBLEM_MS: f64 = 25.0;
/// A load thread at this CPU (% of one core) is saturated.
pub const GENERATOR_PCT: f64 = 90.0;
/// Profile bin for stall detection.
pub const STALL_BIN_MS: f64 = 100.0;
/// The widest bin stall detection widens to when 100 ms bins hold too few
/// samples (a starved server on a crowded host).
pub const STALL_MAX_BIN_MS: f64 = 800.0;
/// A bin whose server samples fall to this share of the phase's median bin is quiet.
pub const STALL_DROP: f64 = 0.5;
/// A bin where file copying/compression frames hold this share of the
/// server's samples is stopped: the copy crowds out the requests.
pub const STALL_WORK_SHARE: f64 = 0.6;
/// What one CPU migration costs a worker, µs: a cache refill for a warm
/// L2 (docs/findings.md, "judged by cost").
pub const MIGRATION_COST_US: f64 = 75.0;
/// A server thread with this share of the busiest thread's CPU counts as busy.
pub const BUSY_THREAD_SHARE: f64 = 0.25;
/// Busy server threads per core from which the server is oversubscribed.
pub const OVERSUBSCRIBED_THREADS: f64 = 2.0;
/// Growth of CPU per request (lightest to heaviest phase) from which
/// oversubscription costs something.
pub const OVERSUBSCRIBED_CPU_GROWTH: f64 = 0.25;
/// Voluntary switches per request below which the server's threads are
/// CPU-bound: a request blocks at most about once (a worker waiting for the
/// next request on its connection); a hand-off between an acceptor and a
/// pool thread, or any I/O, costs two or more.
pub const CPU_BOUND_NVCSW_PER_REQUEST: f64 = 1.5;
/// Share of the server's CPU per request from which migrations count.
pub const SCHED_COST_SHARE: f64 = 0.05;
/// What one new TCP connection costs the server, µs of CPU: the handshake,
/// accept, socket set-up and teardown in the kernel.
pub const CONNECT_COST_US: f64 = 30.0;
/// Share of the server's CPU per request from which connection churn counts.
pub const CONNECT_COST_SHARE: f64 = 0.1;
/// Share of the CPU per request from which backend connections (both ends
/// on this host) count.
pub const BACKEND_COST_SHARE: f64 = 0.05;
/// Backend connections per request from which every call opens its own.
pub const PER_REQUEST_CONNECTS: f64 = 0.9;
/// Share of closes done by the server from which it "closes every connection".
pub const SERVER_CLOSE_SHARE: f64 = 0.5;
/// Major faults per request from which page-cache thrash is considered.
pub const MAJFAULTS_PER_REQUEST: f64 = 0.05;
/// Growth of a route's bytes per response (the run's last third over its
/// first) from which its responses grow: a list without a limit follows
/// its table; a bounded page stays the same size whatever the load.
pub const RESPONSE_GROWTH: f64 = 1.4;
/// Growth must also add this many bytes per response: a few bytes more
/// of a tiny answer (a longer timestamp, a counter) is not a list growing.
pub const RESPONSE_GROWTH_MIN_BYTES: f64 = 4096.0;
/// Mean bytes per response from which a route's answers are large whether
/// or not they grow: no page a client renders at once is this big.
pub const LARGE_RESPONSE_BYTES: f64 = 1024.0 * 1024.0;
/// A route's share of the access log's request time from which its
/// response size is worth a finding (it is where the time goes).
pub const RESPONSE_TIME_SHARE: f64 = 0.5;
/// Requests of the route from which its bytes are judged: a growing
/// answer is deterministic (it follows the data), so a starved server's
/// few requests still show it; fewer than this are no trend.
pub const UNBOUNDED_MIN_REQUESTS: u64 = 10;
/// A route's share of the response bytes from which the log's all-route
/// `log.body_bytes` series is read as that route's.
pub const RESPONSE_BYTES_SHARE: f64 = 0.8;

fn pct(x: f64) -> String {
    format!("{:.0}%", x * 100.0)
}

fn fmt_num(x: f64) -> String {
    if x.abs() >= 100.0 {
        format!("{x:.0}")
    } else if x.abs() >= 10.0 {
        format!("{x:.1}")
    } else {
        format!("{x:.2}")
    }
}

fn finding(rule: &str, qual: Option<&str>, severity: Severity, score: f64) -> Finding {
    Finding {
        id: qual.map_or_else(|| rule.to_string(), |q| format!("{rule}.{q}")),
        rule: rule.to_string(),
        title: String::new(),
        severity,
        score: score.clamp(0.0, 100.0),
        summary: String::new(),
        impact: String::new(),
        suggestion: String::new(),
        evidence: Evidence::default(),
    }
}

/// Saturation: where throughput stopped rising and whether the CPU was the limit.
pub(crate) fn saturation(v: &View) -> Vec<Finding> {
    let Some(k) = v
        .run
        .results
        .get("knee")
        .and_then(|k| k.as_u64())
        .map(|k| k as usize)
    else {
        return Vec::new();
    };
    let Some(p) = v.phases.get(k) else {
        return Vec::new();
    };
    let peak = v.phases.iter().map(|p| p.rps).fold(0.0, f64::max);
    let busy = v.host_busy(p.start_ms, p.end_ms);
    let server = v.server_cpu(p.start_ms, p.end_ms);
    let mut ev = Evidence {
        range_ms: Some([p.start_ms, v.measured_window().1]),
        phases: v.phases[k..].iter().map(|p| p.index).collect(),
        series: vec!["client.rps".into(), "client.p99_ms".into()],
        ..Evidence::default()
    };
    ev.text.push(format!(
        "throughput stopped rising at {} ({} req/s; peak {} req/s)",
        p.label,
        fmt_num(p.rps),
        fmt_num(peak)
    ));
    if let Some(b) = busy {
        ev.series.push("cpu.all.idle".into());
        ev.text.push(format!("host CPU {b:.0}% busy at the knee"));
    }
    if let Some(s) = server {
        ev.series.push("proc.cpu_user".into());
        ev.series.push("proc.cpu_system".into());
        ev.text.push(format!(
            "server CPU {:.0}% of one core ({:.1} of {} cores)",
            s,
            s / 100.0,
            v.cores()
        ));
    }
    match busy {
        Some(b) if b < IDLE_KNEE_BUSY_PCT => {
            let mut f = finding("saturation", Some("not-cpu-bound"), Severity::High, 70.0);
            f.title = format!(
                "Throughput stops rising at {} while {:.0}% of the CPU is idle",
                p.label,
                100.0 - b
            );
            f.summary = "More connections bring no more throughput although cores are free: \
something other than CPU limits the server (a lock, I/O, a downstream wait, too few workers)."
                .into();
            f.impact = format!(
                "capacity capped near {} req/s with {:.0}% of the machine unused",
                fmt_num(peak),
                100.0 - b
            );
            f.suggestion = "look at the blocking, stall and single-core findings; profile off-CPU \
time (perf sched, offcputime) to see what the workers wait for"
                .into();
            f.evidence = ev;
            vec![f]
        }
        Some(b) if b >= CPU_BOUND_BUSY_PCT && server.is_some_and(|s| s < 50.0) => {
            // The cores were busy, but not with the server: neighbours or the
            // load generator took them, so this knee says little about the server.
            let mut f = finding("saturation", Some("host-busy"), Severity::Info, 12.0);
            f.title = format!(
                "Saturated at {} with the host's CPU busy, but not with the server",
                p.label
            );
            f.summary = "The machine's cores were busy at the knee while the server used under half a core: other processes (or the load generator) competed for CPU.".into();
            f.impact = "the knee and peak throughput understate the server's capacity".into();
            f.suggestion =
                "rerun on a quiet machine, or with the load generator on another host".into();
            f.evidence = ev;
            vec![f]
        }
        _ => {
            let mut f = finding("saturation", Some("cpu-bound"), Severity::Info, 15.0);
            f.title = format!("Saturated at {}: the CPU is the limit", p.label);
            f.summary = "Throughput stopped rising with the cores busy: capacity is CPU time; \
the hot-code findings say where it goes."
                .into();
            f.impact = format!("peak {} req/s on this machine", fmt_num(peak));
            f.suggestion = "cut CPU per request (see the hot code), or add cores".into();
            f.evidence = ev;
            vec![f]
        }
    }
}

/// The server's samples per thread over the measured window.
fn thread_samples(v: &View) -> Vec<(u32, f64)> {
    let (a, b) = v.measured_window();
    let mut by: HashMap<u32, f64> = HashMap::new();
    for s in v.samples_in(a, b) {
        if let Some(t) = s.thread {
            *by.entry(t).or_default() += s.weight;
        }
    }
    let mut out: Vec<(u32, f64)> = by.into_iter().collect();
    out.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
    out
}

/// A thread's family: its name without a trailing number (`worker-3` -> `worker-`).
fn family(comm: &str) -> String {
    // Threads whose names differ only in numbers have one role: `worker-0`
    // and `worker-1`, or py-spy's `Process 101 Thread 101 "MainThread"` and
    // `Process 102 ...` of a server that runs one event loop per process.
    comm.chars().filter(|c| !c.is_ascii_digit()).collect()
}

/// The thread that does most of the server's work, as `single-core` judges it.
struct HotThread<'p> {
    name: String,
    /// Its share of the server's work (0-1).
    share: f64,
    /// What the share is of.
    share_of: &'static str,
    /// CPU and CPU plus run-queue wait, % of one core, in the busiest phase.
    cpu: f64,
    demand: f64,
    phase: &'p MeasuredPhase,
    /// Where its CPU and wait came from.
    source: &'static str,
    series: Vec<String>,
    siblings: usize,
    /// Runtime helper threads (JIT, GC) of its family left out of the siblings.
    helpers: usize,
}

/// One core saturated while others idle: one thread does the work. From
/// the profile's samples per thread when it has enough of them, else from
/// the per-thread series alone (a run recorded without a profile).
pub(crate) fn single_core(v: &View) -> Vec<Finding> {
    if v.cores() < 2.0 {
        return Vec::new();
    }
    // The phase where the thread wanted the most (its CPU plus its wait for
    // a core) says whether it ran out of core.
    let threads = thread_samples(v);
    let total: f64 = threads.iter().map(|t| t.1).sum();
    let Some(hot) = v
        .phases
        .iter()
        .filter_map(|p| {
            let cpu = v.server_cpu(p.start_ms, p.end_ms)?;
            if total >= 50.0 {
                hot_from_profile(v, &threads, p, cpu)
            } else {
                hot_from_series(v, p)
            }
        })
        .max_by(|x, y| x.demand.total_cmp(&y.demand))
    else {
        return lone_worker(v);
    };
    // On a busy host a lone worker that is itself kept waiting for a core
    // counts from a lower demand: the starved load generator leaves it
    // idle between requests.
    let starved = v
        .host_busy(hot.phase.start_ms, hot.phase.end_ms)
        .is_some_and(|b| b >= CPU_BOUND_BUSY_PCT)
        && hot.demand - hot.cpu >= STARVED_WAIT_PCT;
    let hot_pct = if starved {
        HOT_THREAD_BUSY_HOST_PCT
    } else {
        HOT_THREAD_PCT
    };
    if hot.demand < hot_pct || hot.share < 0.5 || hot.siblings > 0 {
        return lone_worker(v);
    }
    let HotThread { name, share, .. } = &hot;
    let mut f = finding("single-core", None, Severity::High, 60.0 + 30.0 * share);
    f.title = format!(
        "One thread ({name}) does {} of the server's work: the server can use one core of {}",
        pct(*share),
        v.cores()
    );
    f.summary = "The server's work runs on one thread: it can use one core, whatever the machine has (a single event loop or worker).".into();
    f.impact = format!(
        "throughput capped by one core; up to {:.0}x with one worker per core",
        v.cores()
    );
    f.suggestion =
        "run one worker (thread or process) per core: a worker pool, the cluster module, SO_REUSEPORT listeners"
            .into();
    f.evidence = Evidence {
        text: vec![
            format!(
                "{name}: {} of the server's {}, ~{:.0}% of one core at {} (~{:.0}% with its time waiting for a core; from {})",
                pct(*share),
                hot.share_of,
                hot.cpu,
                hot.phase.label,
                hot.demand.min(100.0),
                hot.source
            ),
            if hot.helpers > 0 {
                format!(
                    "no other thread of its kind ({}*) does comparable work ({} runtime helper threads, a JIT compiler or GC by their frames, left out)",
                    family(name),
                    hot.helpers
                )
            } else {
                format!(
                    "no other thread of its kind ({}*) does comparable work",
                    family(name)
                )
            },
        ],
        series: hot.series,
        range_ms: Some(v.measured_window().into()),
        phases: vec![hot.phase.index],
        frames: Vec::new(),
    };
    vec![f]
}

/// One worker that serves every request, seen in the wall-clock profile:
/// a thread whose CPU is under [`HOT_THREAD_PCT`] (it also blocks, in a
/// call to another service or on a disk) can still be the server's limit,
/// when it is the only thread that serves requests and is inside one
/// nearly all the time while more are offered. The CPU profile cannot say
/// so (half its time is off the CPU); the wall-clock one can: its waits for
/// work vanish. Judged at the heaviest phase, offering at least two
/// requests at a time; a server with a second serving thread in use is
/// not one worker, and one request at a time is all a single connection
/// offers.
fn lone_worker(v: &View) -> Vec<Finding> {
    let Some(p) = v
        .phases
        .iter()
        .filter(|p| p.rps > 0.0)
        .max_by_key(|p| p.connections.unwrap_or(0))
    else {
        return Vec::new();
    };
    let offered = p.connections.map_or_else(
        || p.mean_ms.map_or(0.0, |ms| p.rps * ms / 1000.0),
        |c| c as f64,
    );
    if offered < 2.0 {
        return Vec::new();
    }
    let Some(w) = crate::wall::request_waits(v, p.start_ms, p.end_ms) else {
        return Vec::new();
    };
    let mut used = w
        .occupancy
        .iter()
        .filter(|(_, busy)| *busy >= IDLE_WORKER_OCCUPIED);
    let (Some((name, busy)), None) = (used.next(), used.next()) else {
        return Vec::new();
    };
    if *busy < LONE_WORKER_OCCUPIED {
        return Vec::new();
    }
    let blocked = if w.request_s > 0.0 {
        (w.wait_s / w.request_s).clamp(0.0, 1.0)
    } else {
        0.0
    };
    let mut f = finding(
        "single-core",
        Some("lone-worker"),
        Severity::High,
        60.0 + 30.0 * busy,
    );
    f.title = format!(
        "One worker ({name}) serves every request and is inside one {} of the time: the server handles one request at a time",
        pct(*busy)
    );
    f.summary = "Only one thread serves requests, and it is busy with one nearly all the time while more wait: its CPU and its blocking waits add up to the server's whole capacity, whatever the cores.".into();
    f.impact = format!(
        "at {}: {} req/s is one worker's limit; more workers (or overlapping the waits) would serve requests side by side",
        p.label,
        fmt_num(p.rps)
    );
    f.suggestion = "run more workers (processes or threads; gunicorn's 2 x cores + 1), and take blocking calls off the request path".into();
    f.evidence = Evidence {
        text: vec![
            format!(
                "{name}: inside a request {} of its wall-clock samples at {} ({:.0} requests offered at a time)",
                pct(*busy),
                p.label,
                offered
            ),
            format!(
                "of its time in requests, {} blocked off the CPU (the wall-clock profile less the CPU profile)",
                pct(blocked)
            ),
            format!(
                "no other thread that serves requests is inside one {} of the time",
                pct(IDLE_WORKER_OCCUPIED)
            ),
        ],
        series: vec!["client.p50_ms".into(), "proc.cpu_user".into()],
        range_ms: Some([p.start_ms, p.end_ms]),
        phases: vec![p.index],
        frames: Vec::new(),
    };
    vec![f]
}

/// The hot thread from the profile's samples per thread; its CPU and wait
/// from its own series when the run has them.
fn hot_from_profile<'p>(
    v: &View,
    threads: &[(u32, f64)],
    p: &'p MeasuredPhase,
    cpu: f64,
) -> Option<HotThread<'p>> {
    let total: f64 = threads.iter().map(|t| t.1).sum();
    // The busiest thread that serves requests: a JIT compiler or GC helper
    // is neither the worker nor a second one.
    let helper: HashSet<u32> = threads
        .iter()
        .filter(|(t, _)| runtime_thread(v, *t) || runtime_work(v, *t))
        .map(|(t, _)| *t)
        .collect();
    let &(top, top_w) = threads.iter().find(|(t, _)| !helper.contains(t))?;
    let mut in_phase: HashMap<u32, f64> = HashMap::new();
    for s in v.samples_in(p.start_ms, p.end_ms) {
        if let Some(t) = s.thread {
            *in_phase.entry(t).or_default() += s.weight;
        }
    }
    let phase_total: f64 = in_phase.values().sum();
    let top_phase = in_phase.get(&top).copied().unwrap_or(0.0);
    if phase_total <= 0.0 {
        return None;
    }
    // On a shared machine a saturated thread spends part of its time
    // runnable but waiting for a core: that is demand too. With the
    // thread's own series its CPU and wait are measured; otherwise the
    // process's are split by the thread's share of the samples.
    let own = v
        .series_thread(top)
        .and_then(|th| Some((own_cpu_and_wait(v, th, p)?, th)));
    let mut series = vec!["proc.cpu_user".to_string(), "proc.cpu_system".to_string()];
    let (thread_cpu, thread_wait, source) = match own {
        Some(((c, w), th)) => {
            series.extend([th.series("cpu"), th.series("runq_delay_ms")]);
            (c, w, "its own thread series")
        }
        None => (
            cpu * top_phase / phase_total,
            v.mean("proc.runq_delay_ms", p.start_ms, p.end_ms)
                .map_or(0.0, |ms_per_s| ms_per_s / 10.0 * top_phase / phase_total),
            "the process's CPU and run-queue wait split by its share of the samples",
        ),
    };
    let name = v.thread_name(top);
    // Siblings of the same family (worker-0, worker-1) mean the server can
    // spread its work, even when a busy machine starves all but one of them.
    let siblings = threads
        .iter()
        .filter(|(t, w)| {
            *t != top
                && !helper.contains(t)
                && family(&v.thread_name(*t)) == family(&name)
                && *w >= SIBLING_SHARE * top_w
        })
        .count();
    let helpers = helper
        .iter()
        .filter(|t| family(&v.thread_name(**t)) == family(&name))
        .count();
    Some(HotThread {
        name,
        share: top_w / total,
        share_of: "CPU samples",
        cpu: thread_cpu,
        demand: thread_cpu + thread_wait,
        phase: p,
        source,
        series,
        siblings,
        helpers,
    })
}

/// A thread's mean CPU and run-queue wait (% of one core) over a phase,
/// from its own series.
fn own_cpu_and_wait(v: &View, th: &ThreadKey, p: &MeasuredPhase) -> Option<(f64, f64)> {
    let cpu = v.thread_mean(th, "cpu", "proc.cpu_user", p.start_ms, p.end_ms)?;
    let wait = v
        .thread_mean(
            th,
            "runq_delay_ms",
            "proc.runq_delay_ms",
            p.start_ms,
            p.end_ms,
        )
        .map_or(0.0, |ms_per_s| ms_per_s / 10.0);
    Some((cpu, wait))
}

/// The hot thread from the per-thread series alone: its share of the CPU
/// of all threads with series over the measured phases.
fn hot_from_series<'p>(v: &View, p: &'p MeasuredPhase) -> Option<HotThread<'p>> {
    let (a, b) = v.measured_window();
    let cpu = v.threads_by("cpu", "proc.cpu_user", a, b);
    let total: f64 = cpu.iter().map(|c| c.0).sum();
    let &(top_cpu, top) = cpu.first()?;
    if total <= 0.0 {
        return None;
    }
    let (thread_cpu, thread_wait) = own_cpu_and_wait(v, top, p)?;
    let siblings = cpu
        .iter()
        .skip(1)
        .filter(|(c, t)| family(&t.comm) == family(&top.comm) && *c >= SIBLING_SHARE * top_cpu)
        .count();
    Some(HotThread {
        name: top.comm.clone(),
        share: top_cpu / total,
        share_of: "CPU in threads with their own series (no profile)",
        cpu: thread_cpu,
        demand: thread_cpu + thread_wait,
        phase: p,
        source: "its own thread series",
        series: vec![top.series("cpu"), top.series("runq_delay_ms")],
        siblings,
        helpers: 0,
    })
}

/// Inclusive share of each frame, and the set of frames per sample: the
/// basis of the hot-code and stall rules.
fn inclusive(v: &View, a: f64, b: f64) -> (f64, HashMap<u32, f64>) {
    let (total, by_node) = node_weights(v, a, b);
    let mut inc: HashMap<u32, f64> = HashMap::new();
    let mut seen = HashSet::new();
    for (node, w) in by_node {
        seen.clear();
        for f in v.stack(node) {
            if seen.insert(f) {
                *inc.entry(f).or_default() += w;
            }
        }
    }
    (total, inc)
}

/// Total weight of the samples in (a, b] and their weight per stack node:
/// rules walk each distinct stack once instead of once per sample (a
/// million samples share a few thousand stacks).
fn node_weights(v: &View, a: f64, b: f64) -> (f64, BTreeMap<u32, f64>) {
    let mut total = 0.0;
    let mut by_node: BTreeMap<u32, f64> = BTreeMap::new();
    for s in v.samples_in(a, b) {
        total += s.weight;
        *by_node.entry(s.node).or_default() += s.weight;
    }
    (total, by_node)
}

/// Whether a thread belongs to the runtime rather than to the requests
/// (JIT compilers, garbage collectors, the VM's own threads).
fn runtime_thread(v: &View, t: u32) -> bool {
    matches(&v.thread_name(t).to_lowercase(), RUNTIME_THREADS)
}

/// Whether most of a thread's samples are a runtime's helper work (a JIT
/// compiling in the background, concurrent GC), by the frames at its root:
/// for helpers that carry the process's name.
fn runtime_work(v: &View, t: u32) -> bool {
    let (mut all, mut helper) = (0.0, 0.0);
    let mut by_node: HashMap<u32, f64> = HashMap::new();
    for s in v.samples.iter().filter(|s| s.thread == Some(t)) {
        *by_node.entry(s.node).or_default() += s.weight;
    }
    for (node, w) in by_node {
        all += w;
        if v.stack(node)
            .iter()
            .any(|f| matches(v.frame_name_lc(*f), RUNTIME_FRAMES))
        {
            helper += w;
        }
    }
    all > 0.0 && helper >= 0.5 * all
}

/// The frame that names a kind's work in a stack (leaf first), if any: the
/// outermost frame matching its patterns (`Regex::new`, not its
/// internals), or else the outermost caller frame (a DI container) with a
/// matching callee below it.
fn kind_frame(v: &View, kind: &Kind, stack: &[u32]) -> Option<u32> {
    if let Some(f) = stack
        .iter()
        .rev()
        .find(|f| matches(v.frame_name_lc(**f), kind.patterns))
    {
        return Some(*f);
    }
    if kind.caller.is_empty() {
        return None;
    }
    let callee = stack
        .iter()
        .position(|f| matches(v.frame_name_lc(*f), kind.callee))?;
    let at = callee
        + 1
        + stack[callee + 1..]
            .iter()
            .rposition(|f| matches(v.frame_name_lc(*f), kind.caller))?;
    // V8's construct stub says "a constructor ran"; the frame it called
    // (`JS:*ArticleRenderer`) names which.
    if v.frame_name_lc(stack[at]).contains("constructstub") && at > callee + 1 {
        return Some(stack[at - 1]);
    }
    Some(stack[at])
}

/// Hot code: the top self-time frames, and known-expensive work in the
/// request path.
///
/// A kind's share is of the request path: the samples of threads that
/// serve requests (a JVM's JIT compiler and GC threads are left out). With
/// several causes at once each one's share of the whole shrinks (JSON
/// parsing at 9% beside regex compilation at 30%), so a kind below its
/// threshold still counts when its share of the work left after the other
/// reported causes reaches it, as long as it holds half the threshold of
/// the whole.
pub(crate) fn hot_code(v: &View) -> Vec<Finding> {
    let (a, b) = v.measured_window();
    // A stall's samples belong to the stall, which its own finding
    // reports: the server copied a file instead of serving. Counted as
    // request work, a log rollover's compression would be the hottest
    // function and dilute every per-request cause beside it. So are the
    // stall work's samples outside the windows: on a starved host a
    // rollover's gzip runs for seconds, and only its emptiest bins show.
    let found = found_stalls(v);
    let stalled = found.as_ref().map(|f| f.spans()).unwrap_or_default();
    let mut stall_work = found.is_some().then(|| stall_stack(v));
    let mut total = 0.0;
    let mut stalled_w = 0.0;
    let mut by_node: BTreeMap<u32, f64> = BTreeMap::new();
    let mut path_nodes: BTreeMap<u32, f64> = BTreeMap::new();
    let mut runtime_w = 0.0;
    let mut runtime_memo: HashMap<u32, bool> = HashMap::new();
    for s in v.samples_in(a, b) {
        if s.t_ms
            .is_some_and(|t| stalled.iter().any(|(x, y)| t > *x && t <= *y))
            || stall_work.as_mut().is_some_and(|is_work| is_work(s.node))
        {
            stalled_w += s.weight;
            continue;
        }
        total += s.weight;
        *by_node.entry(s.node).or_default() += s.weight;
        let rt = s.thread.is_some_and(|t| {
            *runtime_memo
                .entry(t)
                .or_insert_with(|| runtime_thread(v, t))
        });
        if rt {
            runtime_w += s.weight;
        } else {
            *path_nodes.entry(s.node).or_default() += s.weight;
        }
    }
    let path_total = total - runtime_w;
    let mut selfw: HashMap<u32, f64> = HashMap::new();
    let n = KINDS.len();
    let mut kind_w = vec![0.0; n];
    let mut kind_frames: Vec<HashMap<u32, f64>> = vec![HashMap::new(); n];
    // Per node, which kinds it holds: the work each kind shares with others.
    let mut node_kinds: Vec<(f64, Vec<bool>)> = Vec::new();
    for (node, w) in &by_node {
        if let Some(leaf) = v.stack(*node).first() {
            *selfw.entry(*leaf).or_default() += w;
        }
    }
    for (node, w) in path_nodes {
        let stack = v.stack(node);
        let found: Vec<Option<u32>> = KINDS.iter().map(|k| kind_frame(v, k, &stack)).collect();
        let depth = |f: u32| stack.iter().rposition(|x| *x == f);
        let mut hit = vec![false; n];
        for (k, kind) in KINDS.iter().enumerate() {
            let Some(f) = found[k] else {
                continue;
            };
            // Work below a kind that absorbs it (the file read and JSON
            // parse of a configuration load) is that kind's cost.
            let absorbed = KINDS.iter().zip(&found).any(|(outer, of)| {
                outer.absorbs.contains(&kind.key)
                    && of.is_some_and(|o| depth(o).zip(depth(f)).is_some_and(|(o, i)| o > i))
            });
            if absorbed {
                continue;
            }
            kind_w[k] += w;
            *kind_frames[k].entry(f).or_default() += w;
            hit[k] = true;
        }
        if hit.iter().any(|h| *h) {
            node_kinds.push((w, hit));
        }
    }
    if total < 50.0 || path_total <= 0.0 {
        return Vec::new();
    }
    let share_of = |k: usize| kind_w[k] / path_total;
    let alone: Vec<bool> = (0..n).map(|k| share_of(k) >= KINDS[k].min_share).collect();
    let mut out = Vec::new();
    for (k, kind) in KINDS.iter().enumerate() {
        let share = share_of(k);
        // The work of the other causes reported on their own.
        let others: f64 = node_kinds
            .iter()
            .filter(|(_, hit)| !hit[k] && (0..n).any(|j| j != k && hit[j] && alone[j]))
            .map(|(w, _)| w)
            .sum();
        let rest = (path_total - others).max(kind_w[k]);
        let of_rest = if rest > 0.0 { kind_w[k] / rest } else { 0.0 };
        let stacked = !alone[k] && of_rest >= kind.min_share && share >= kind.min_share / 2.0;
        if !alone[k] && !stacked {
            continue;
        }
        let mut frames: Vec<(u32, f64)> = kind_frames[k].iter().map(|(f, w)| (*f, *w)).collect();
        frames.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
        let sev = if share >= 0.2 {
            Severity::High
        } else {
            Severity::Warning
        };
        let mut f = finding("hot-code", Some(kind.key), sev, 45.0 + 100.0 * share);
        f.title = format!(
            "{} takes {} of the server's CPU",
            capitalise(kind.what),
            pct(share)
        );
        f.summary = format!(
            "Known-expensive work runs in the request path: {} appears in {} of the server's CPU samples.",
            kind.what,
            pct(share)
        );
        f.impact = format!(
            "up to {} of CPU per request; throughput could rise ~{:.1}x at a CPU-bound knee if it went away",
            pct(share),
            1.0 / (1.0 - share.min(0.95))
        );
        f.suggestion = kind.suggestion.to_string();
        let mut text = vec![format!(
            "{:.0} of {:.0} samples of the request path in the measured phases",
            kind_w[k], path_total
        )];
        if runtime_w > 0.0 {
            text.push(format!(
                "{runtime_w:.0} samples of runtime threads (JIT, GC) left out"
            ));
        }
        if stalled_w > 0.0 {
            text.push(format!(
                "{stalled_w:.0} samples in the stalls left out (the stalls finding's)"
            ));
        }
        if stacked {
            text.push(format!(
                "{} of the work left after the other causes found (threshold {} alone)",
                pct(of_rest),
                pct(kind.min_share)
            ));
        }
        f.evidence = Evidence {
            text,
            series: Vec::new(),
            range_ms: Some([a, b]),
            phases: v.phases.iter().map(|p| p.index).collect(),
            frames: frames
                .iter()
                .take(5)
                .map(|(fr, w)| frame_share(v, *fr, *w, path_total))
                .collect(),
        };
        out.push(f);
    }
    let mut top: Vec<(u32, f64)> = selfw.into_iter().collect();
    top.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
    // The title names a function: HotSpot's "Interpreter" or perf's
    // "[unknown]" may hold the most samples but say nothing to change.
    let named = top
        .iter()
        .find(|(fr, _)| {
            let lc = v.frame_name_lc(*fr);
            !NO_FUNCTION
                .iter()
                .any(|p| lc == *p || ((p.ends_with(']') || p.ends_with("::")) && lc.starts_with(p)))
        })
        .or(top.first());
    if let Some((first, w)) = named {
        let mut f = finding("hot-code", Some("top-self"), Severity::Info, 10.0);
        f.title = format!(
            "Hottest function: {} ({} of samples, self time)",
            short(v.frame_name(*first)),
            pct(w / total)
        );
        f.summary = "Where the server's CPU goes, by self time.".into();
        f.impact = "CPU per request; what a CPU-bound server's capacity depends on".into();
        f.suggestion = "open the flame graph at these frames; optimise the largest first".into();
        let mut text = vec![format!("{total:.0} samples in the measured phases")];
        if stalled_w > 0.0 {
            text.push(format!(
                "{stalled_w:.0} samples in the stalls left out (the stalls finding's)"
            ));
        }
        f.evidence = Evidence {
            text,
            range_ms: Some([a, b]),
            frames: top
                .iter()
                .take(5)
                .map(|(fr, w)| frame_share(v, *fr, *w, total))
                .collect(),
            ..Evidence::default()
        };
        out.push(f);
    }
    out
}

fn capitalise(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map(|f| f.to_uppercase().chain(c).collect())
        .unwrap_or_default()
}

/// A long frame name cut for a title.
fn short(name: &str) -> String {
    if name.chars().count() <= 70 {
        name.to_string()
    } else {
        name.chars().take(67).collect::<String>() + "..."
    }
}

/// Subsecond stalls: windows of 100 ms or more where the server stops
/// serving while latency rises. A window is "stopped" in one of two ways:
/// the server's samples fall to half the phase's median (every thread
/// waits: on a many-core server, 1 of 28 cores running), or file
/// copying/compression fills most of the window's samples (on a 2-core
/// machine the one thread copying under the lock is as busy as the
/// workers were, so samples do not fall, but nothing else runs).
pub(crate) fn stalls(v: &View) -> Vec<Finding> {
    let Some(found) = found_stalls(v) else {
        return Vec::new();
    };
    stall_finding(v, &found)
}

/// One stall: start and end on the run's clock (ms), its phase, and the
/// slowest request caught in it (ms).
type Stall<'v> = (f64, f64, &'v MeasuredPhase, f64);

/// The stalls the rule reports, with the frames active in them.
struct FoundStalls<'v> {
    stalls: Vec<Stall<'v>>,
    /// Frames active in the stalls (inclusive weight), heaviest first.
    frames: Vec<(u32, f64)>,
    /// Every sample in the stalls (the frames' denominator).
    total: f64,
}

impl FoundStalls<'_> {
    /// The spans whose samples belong to the stalls, as the rule reads
    /// them: the work that caused a stall starts just before the samples
    /// fall and ends just after they rise.
    fn spans(&self) -> Vec<(f64, f64)> {
        self.stalls
            .iter()
            .map(|(s, e, _, _)| (s - STALL_BIN_MS, e + STALL_BIN_MS))
            .collect()
    }
}

/// The stalls of a run: stopped windows where latency rose, with file
/// copying or compression on the request threads (the checks of
/// [`stalls`]); `None` when there are none.
fn found_stalls<'v>(v: &'v View) -> Option<FoundStalls<'v>> {
    let timeline = timeline(v);
    let mut copying = stall_stack(v);
    let mut windows: Vec<(f64, f64, &MeasuredPhase)> = Vec::new();
    for p in &v.phases {
        // Skip the edges: connections open and close there.
        let (a, b) = (p.start_ms + STALL_BIN_MS, p.end_ms - STALL_BIN_MS);
        let Some((width, bins, work, median)) = stall_bins(v, a, b, &mut copying) else {
            continue;
        };
        let n = bins.len();
        let stopped = |i: usize| {
            bins[i] <= STALL_DROP * median
                || (bins[i] >= 2.0 && work[i] >= STALL_WORK_SHARE * bins[i])
        };
        let copying_bin = |i: usize| bins[i] >= 2.0 && work[i] >= STALL_WORK_SHARE * bins[i];
        let mut i = 0;
        while i < n {
            if stopped(i) {
                let j = (i..n).find(|&j| !stopped(j)).unwrap_or(n);
                // A window with copying in it is the copy's bins, first to
                // last: the thin bins beside them are a quiet server, not
                // a stall (a bidder waiting 40 ms a request on its audit
                // call gets ~6 samples per 100 ms at c=2; its 500-ms gzip
                // merged with the idle bins around it into a 1-s window,
                // which the 489-ms requests it held did not fill).
                let (x, y) = match (
                    (i..j).find(|&k| copying_bin(k)),
                    (i..j).rev().find(|&k| copying_bin(k)),
                ) {
                    (Some(x), Some(y)) => (x, y + 1),
                    _ => (i, j),
                };
                windows.push((a + x as f64 * width, a + y as f64 * width, p));
                i = j;
            } else {
                i += 1;
            }
        }
    }
    // Seconds in which nothing completed, in runs: a request in flight
    // through a run of them waited through all of it (a 6 s rollover on a
    // starved host is six such seconds, not one).
    let (first, last) = (
        v.phases.first().map_or(0.0, |p| p.start_ms),
        v.phases.last().map_or(0.0, |p| p.end_ms),
    );
    let empty =
        |sec: &Second| sec.requests == Some(0) && sec.t_ms >= first && sec.t_ms + 1000.0 <= last;
    let mut empty_run = vec![0.0; timeline.len()];
    let mut i = 0;
    while i < timeline.len() {
        let j = (i..timeline.len())
            .find(|&j| !empty(&timeline[j]))
            .unwrap_or(timeline.len());
        for r in &mut empty_run[i..j] {
            *r = (j - i) as f64 * 1000.0;
        }
        i = j.max(i + 1);
    }
    let mut stalls = Vec::new();
    for (s, e, p) in windows {
        let len = e - s;
        // Latency rises: a request whose window [end - latency, end]
        // overlaps the stall waited through part of it. The timeline keeps
        // each second's slowest request by the second it completed in, so
        // a request stalled at 6.2 s that completed at 7.1 s counts, and a
        // second in which nothing completed means every request in flight
        // waited through all of it.
        let worst = timeline
            .iter()
            .zip(&empty_run)
            .filter(|(sec, _)| sec.t_ms + 1000.0 > s && sec.t_ms - sec.max_ms < e)
            .map(|(sec, run)| sec.max_ms.max(*run))
            .fold(0.0, f64::max);
        let normal = p.mean_ms.unwrap_or(f64::INFINITY);
        if worst >= 0.5 * len && worst >= 3.0 * normal {
            stalls.push((s, e, p, worst));
        }
    }
    if stalls.is_empty() {
        return None;
    }
    // Frames active in the stalls, and whether they are file copy/compression work.
    let mut total = 0.0;
    let mut inc: HashMap<u32, f64> = HashMap::new();
    for (s, e, _, _) in &stalls {
        // The work that caused a stall starts just before the samples fall.
        let (t, i) = inclusive(v, s - STALL_BIN_MS, e + STALL_BIN_MS);
        total += t;
        for (f, w) in i {
            *inc.entry(f).or_default() += w;
        }
    }
    let mut frames: Vec<(u32, f64)> = inc.into_iter().collect();
    frames.sort_by(|x, y| y.1.total_cmp(&x.1).then(x.0.cmp(&y.0)));
    let work: Vec<&(u32, f64)> = frames
        .iter()
        .filter(|(f, _)| is_stall_work(v.frame_name_lc(*f), v.frame_module_lc(*f)))
        .collect();
    // On a shared machine other tenants make the same dip; only a stall
    // with file copying or compression in it is the server's own doing.
    let work_w: f64 = work.iter().map(|x| x.1).sum();
    if work.is_empty() || work_w < 0.05 * total {
        return None;
    }
    // Copying on a background thread (a queued log writer rolling its file)
    // holds up no request: the copy must run on the threads that serve
    // requests, the family doing most of the server's work.
    if !copy_on_request_threads(v, &stalls) {
        return None;
    }
    Some(FoundStalls {
        stalls,
        frames,
        total,
    })
}

/// Samples per bin of (a, b] and the stall work among them, with the bin
/// width and the median bin. Bins are 100 ms ([`STALL_BIN_MS`]); on a
/// crowded host a starved server gets a sample or two per 100 ms, so the
/// bins widen (up to [`STALL_MAX_BIN_MS`]) until the median bin holds
/// enough samples to tell a drop from chance. `None` when even the widest
/// bins are too thin or too few.
#[allow(clippy::type_complexity)]
fn stall_bins(
    v: &View,
    a: f64,
    b: f64,
    copying: &mut impl FnMut(u32) -> bool,
) -> Option<(f64, Vec<f64>, Vec<f64>, f64)> {
    let mut width = STALL_BIN_MS;
    while width <= STALL_MAX_BIN_MS {
        let n = ((b - a) / width).floor() as usize;
        if n < if width > STALL_BIN_MS { 3 } else { 5 } {
            return None;
        }
        let mut bins = vec![0.0; n];
        let mut work = vec![0.0; n];
        for s in v.samples_in(a, b) {
            if let Some(t) = s.t_ms {
                let i = ((t - a) / width) as usize;
                if let Some(x) = bins.get_mut(i) {
                    *x += s.weight;
                    if copying(s.node) {
                        work[i] += s.weight;
                    }
                }
            }
        }
        let mut sorted = bins.clone();
        sorted.sort_by(f64::total_cmp);
        let median = sorted[n / 2];
        if median >= 4.0 {
            return Some((width, bins, work, median));
        }
        width *= 2.0;
    }
    None
}

/// The stalls finding of [`found_stalls`]' stalls.
fn stall_finding(v: &View, found: &FoundStalls) -> Vec<Finding> {
    let FoundStalls {
        stalls,
        frames,
        total,
    } = found;
    let total = *total;
    let work: Vec<&(u32, f64)> = frames
        .iter()
        .filter(|(f, _)| is_stall_work(v.frame_name_lc(*f), v.frame_module_lc(*f)))
        .collect();
    let Some(first_work) = work.first() else {
        return Vec::new();
    };
    let longest = stalls.iter().map(|x| x.1 - x.0).fold(0.0, f64::max);
    let stalled: f64 = stalls.iter().map(|x| x.1 - x.0).sum();
    let (a, b) = v.measured_window();
    let share = stalled / (b - a).max(1.0);
    let score = 70.0 + (100.0 * share).min(25.0);
    let mut f = finding("stalls", None, Severity::High, score);
    f.title = format!(
        "{} stall{} of {:.0}-{:.0} ms: requests wait while the server copies files",
        stalls.len(),
        if stalls.len() == 1 { "" } else { "s" },
        stalls
            .iter()
            .map(|x| x.1 - x.0)
            .fold(f64::INFINITY, f64::min),
        longest
    );
    // The heaviest stall frame may be a library perf names by its module
    // alone (`[libz.so.1.2.13]`, no callers); where the stacks show who
    // called the copy, that caller is what the user can change.
    let called = stall_caller(v, found);
    f.summary = match called {
        Some((work, caller)) => format!(
            "Short windows where the server almost stops while requests wait, with {} running, called from {}: file copying or compression under a lock stalls every worker.",
            short(v.frame_name(work)),
            short(v.frame_name(caller))
        ),
        None => format!(
            "Short windows where the server almost stops while requests wait, with {} running: file copying or compression under a lock stalls every worker.",
            short(v.frame_name(first_work.0))
        ),
    };
    f.impact = format!(
        "{} of the measured time stalled; requests caught in a stall wait up to {:.0} ms",
        pct(share),
        stalls.iter().map(|x| x.3).fold(0.0, f64::max)
    );
    f.suggestion = "take slow work out of locks and off the request path: log through a queue to a writer thread, roll files by rename and compress them in the background".into();
    let mut phases: Vec<u32> = stalls.iter().map(|x| x.2.index).collect();
    phases.dedup();
    f.evidence = Evidence {
        text: stalls
            .iter()
            .take(5)
            .map(|(s, e, _, w)| {
                format!(
                    "{:.1}-{:.1} s: samples fell below half the phase's median or were mostly file copying; slowest request in that second {:.0} ms",
                    s / 1000.0,
                    e / 1000.0,
                    w
                )
            })
            .collect(),
        series: vec!["client.p99_ms".into(), "proc.cpu_user".into()],
        range_ms: stalls
            .iter()
            .max_by(|x, y| (x.1 - x.0).total_cmp(&(y.1 - y.0)))
            .map(|x| [x.0, x.1]),
        phases,
        frames: work
            .iter()
            .map(|x| **x)
            .chain(
                frames
                    .iter()
                    .copied()
                    .filter(|(f, _)| !is_stall_work(v.frame_name_lc(*f), v.frame_module_lc(*f))),
            )
            .take(6)
            .filter(|_| total > 0.0)
            .map(|(fr, w)| frame_share(v, fr, w, total))
            .collect(),
    };
    vec![f]
}

/// The outermost stall-work frame in the stalls' stacks that has a named
/// caller, and that caller, the heaviest such pair: logback's
/// `GZIPOutputStream.write` called from `RollingFileAppender.subAppend`
/// (the rollover methods between them run interpreted and show as
/// HotSpot's `Interpreter`, which names nothing and is skipped).
fn stall_caller(v: &View, found: &FoundStalls) -> Option<(u32, u32)> {
    let mut by_node: HashMap<u32, f64> = HashMap::new();
    for (x, y) in found.spans() {
        for s in v.samples_in(x, y) {
            *by_node.entry(s.node).or_default() += s.weight;
        }
    }
    let mut pairs: HashMap<(u32, u32), f64> = HashMap::new();
    for (node, w) in by_node {
        let stack = v.stack(node);
        let Some(outer) = stack
            .iter()
            .rposition(|f| is_stall_work(v.frame_name_lc(*f), v.frame_module_lc(*f)))
        else {
            continue;
        };
        // The kernel's write path names no code of the server's own.
        let caller = stack[outer + 1..].iter().find(|f| {
            let lc = v.frame_name_lc(**f);
            !lc.is_empty()
                && !v.frame_module_lc(**f).starts_with("[kernel")
                && !NO_FUNCTION.iter().any(|p| {
                    lc == *p || ((p.ends_with(']') || p.ends_with("::")) && lc.starts_with(p))
                })
        });
        if let Some(c) = caller {
            *pairs.entry((stack[outer], *c)).or_default() += w;
        }
    }
    pairs
        .into_iter()
        .max_by(|x, y| x.1.total_cmp(&y.1).then(y.0.cmp(&x.0)))
        .map(|x| x.0)
}

/// Whether a node's stack holds stall work (file copying, compression),
/// worked out once per node: a profile has far fewer distinct nodes than
/// samples, and walking every sample's stack through substring matches
/// made this rule cost samples x depth x patterns.
fn stall_stack<'v>(v: &'v View) -> impl FnMut(u32) -> bool + 'v {
    let mut memo: HashMap<u32, bool> = HashMap::new();
    move |node| {
        *memo.entry(node).or_insert_with(|| {
            v.stack(node)
                .iter()
                .any(|f| is_stall_work(v.frame_name_lc(*f), v.frame_module_lc(*f)))
        })
    }
}

/// A frame with its share of `total` samples, as evidence shows it.
fn frame_share(v: &View, frame: u32, weight: f64, total: f64) -> FrameShare {
    FrameShare {
        name: v.frame_name(frame).to_string(),
        module: v.frame_module(frame).to_string(),
        share: weight / total,
    }
}

/// Whether the file copying in the stalls ran on the server's busiest
/// thread family (its request workers) rather than on a helper thread.
fn copy_on_request_threads(v: &View, stalls: &[(f64, f64, &MeasuredPhase, f64)]) -> bool {
    let mut by_family: HashMap<String, f64> = HashMap::new();
    for (t, w) in thread_samples(v) {
        if runtime_thread(v, t) {
            continue;
        }
        *by_family
            .entry(family(&v.thread_name(t)).to_string())
            .or_default() += w;
    }
    let Some(busiest) = by_family
        .iter()
        .max_by(|x, y| x.1.total_cmp(y.1).then(y.0.cmp(x.0)))
        .map(|x| x.0.clone())
    else {
        // No thread information: the copy's place cannot be checked.
        return true;
    };
    let mut is_copy = stall_stack(v);
    let mut copying: HashMap<String, f64> = HashMap::new();
    for (s, e, _, _) in stalls {
        for smp in v.samples_in(s - STALL_BIN_MS, e + STALL_BIN_MS) {
            let Some(t) = smp.thread else { continue };
            if is_copy(smp.node) {
                *copying
                    .entry(family(&v.thread_name(t)).to_string())
                    .or_default() += smp.weight;
            }
        }
    }
    copying
        .iter()
        .max_by(|x, y| x.1.total_cmp(y.1).then(y.0.cmp(x.0)))
        .is_some_and(|(f, _)| *f == busiest)
}

/// One second of the client's timeline on the run's clock.
struct Second {
    /// Start of the second, ms.
    t_ms: f64,
    /// Slowest response completed in it, ms (0 when none completed).
    max_ms: f64,
    /// Responses completed in it; `None` when the run did not say.
    requests: Option<u64>,
}

/// The client's per-second worst latency on the run's clock. Seconds the
/// timeline skips between two it has (older runs wrote no row for a second
/// without responses) are kept as seconds with 0 responses.
fn timeline(v: &View) -> Vec<Second> {
    let origin = v
        .run
        .results
        .get("started_unix_ms")
        .and_then(|x| x.as_f64())
        .map_or(0.0, |s| s - v.run.run.started_unix_ms as f64);
    let rows: Vec<(u64, f64, Option<u64>)> = v
        .run
        .results
        .get("timeline")
        .and_then(|t| t.as_array())
        .map(|rows| {
            rows.iter()
                .filter_map(|r| {
                    Some((
                        r.get("t_s")?.as_u64()?,
                        r.get("max_ms").and_then(|m| m.as_f64()).unwrap_or(0.0),
                        r.get("requests").and_then(|m| m.as_u64()),
                    ))
                })
                .collect()
        })
        .unwrap_or_default();
    let mut out: Vec<Second> = Vec::with_capacity(rows.len());
    let mut prev: Option<u64> = None;
    for (t, max_ms, requests) in rows {
        if let Some(p) = prev {
            // Bounded: a damaged timeline must not allocate without end.
            for gap in (p + 1..t).take(3600) {
                out.push(Second {
                    t_ms: origin + gap as f64 * 1000.0,
                    max_ms: 0.0,
                    requests: Some(0),
                });
            }
        }
        prev = Some(prev.map_or(t, |p| p.max(t)));
        out.push(Second {
            t_ms: origin + t as f64 * 1000.0,
            max_ms: if max_ms.is_finite() { max_ms } else { 0.0 },
            requests,
        });
    }
    out
}

/// The server's CPU per request over (a, b], µs.
fn cpu_us_per_request(v: &View, a: f64, b: f64) -> Option<f64> {
    let cpu = v.server_cpu(a, b)?;
    let rps = v.measured_rps()?;
    (rps > 0.0).then(|| cpu / 100.0 * 1e6 / rps)
}

/// How much of the host's competition for cores the server causes itself
/// (0-1), with the demand behind it: threads wanting a core on average
/// (running or runnable), the server's own (its CPU plus its run-queue
/// wait) and the host's (`sched.procs_running`, or its busy cores). When
/// the host has more runnable threads than cores but the server alone
/// would fit, the preemptions and migrations it suffers come from the
/// neighbours and the load generator; pinning it would trade them for
/// waiting.
fn own_contention(v: &View, a: f64, b: f64) -> (f64, Option<(f64, f64)>) {
    let Some(cpu) = v.server_cpu(a, b) else {
        return (1.0, None);
    };
    let own = cpu / 100.0 + v.mean("proc.runq_delay_ms", a, b).unwrap_or(0.0) / 1000.0;
    let busy = v.host_busy(a, b).map(|b| b / 100.0 * v.cores());
    let running = v.mean("sched.procs_running", a, b);
    let Some(host) = [busy, running].into_iter().flatten().reduce(f64::max) else {
        return (1.0, None);
    };
    let host = host.max(own);
    let cores = v.cores();
    if host <= cores {
        return (1.0, Some((own, host)));
    }
    (
        ((own - cores).max(0.0) / (host - cores)).clamp(0.0, 1.0),
        Some((own, host)),
    )
}

/// More busy server threads than cores, at a cost: from the lightest
/// phase to the one with the most busy threads, CPU per request grew, or
/// the server's own CPU-bound threads kept more than its cores busy.
struct Oversubscribed {
    busy: usize,
    growth: f64,
    lo_label: String,
    lo_us: f64,
    hi_label: String,
    hi_us: f64,
    niv: f64,
    /// The server's own threads wanting a core at the heaviest phase (its
    /// CPU plus its run-queue wait, in cores).
    demand: f64,
    /// Voluntary switches per request at the heaviest phase.
    nv: f64,
}

/// Whether the server runs more busy threads than cores and pays for it
/// (field notes §2: 8 prefork workers on 2 cores). Busy threads are the
/// server's own, from their series (>= `BUSY_THREAD_SHARE` of the busiest one's CPU), so
/// neighbours that make the server wait do not count. The cost shows one
/// of two ways. CPU per request grows from the lightest phase to the
/// heaviest (preemption and cold caches), with involuntary switches at the
/// heaviest: clearest on a crowded host. Or, at the heaviest phase, the
/// server's own threads want `OVERSUBSCRIBED_THREADS` x cores or more
/// (CPU plus run-queue wait, which no thread can exceed one core of, so
/// neighbours cannot add threads): then those threads can only wait for
/// and preempt each other. That holds on a quiet host too, where CPU per
/// request may not grow. Either way the requests must be CPU-bound
/// (`CPU_BOUND_NVCSW_PER_REQUEST`): servers whose threads block on I/O
/// (gunicorn's 2 x cores + 1, a Java pool) look CPU-hungry on a crowded
/// host and are left out by their voluntary switches.
fn oversubscribed(v: &View) -> Option<Oversubscribed> {
    let cost = |p: &MeasuredPhase| -> Option<f64> {
        let cpu = v.server_cpu(p.start_ms, p.end_ms)?;
        (p.rps > 0.0).then(|| cpu / 100.0 * 1e6 / p.rps)
    };
    let lo = v.phases.first()?;
    let hi = v.phases.last()?;
    if lo.index == hi.index {
        return None;
    }
    let threads = v.threads_by("cpu", "proc.cpu_user", hi.start_ms, hi.end_ms);
    // Busy: comparable to the busiest thread (on a crowded host every
    // worker may get only a few % of a core).
    let top = threads.first().map_or(0.0, |t| t.0);
    let busy = threads
        .iter()
        .filter(|(c, _)| *c >= BUSY_THREAD_SHARE * top && *c >= 1.0)
        .count();
    let cores = v.cores();
    // Up to gunicorn's advice of 2 x cores + 1 workers is a sizing, not oversubscription.
    if (busy as f64) <= OVERSUBSCRIBED_THREADS * cores + 1.0 {
        return None;
    }
    let (lo_us, hi_us) = (cost(lo)?, cost(hi)?);
    let growth = hi_us / lo_us - 1.0;
    let niv = v.mean("proc.nivcsw", hi.start_ms, hi.end_ms)? / hi.rps;
    let demand = v.server_cpu(hi.start_ms, hi.end_ms)? / 100.0
        + v.mean("proc.runq_delay_ms", hi.start_ms, hi.end_ms)
            .unwrap_or(0.0)
            / 1000.0;
    let nv = v
        .mean("proc.nvcsw", hi.start_ms, hi.end_ms)
        .map(|n| n / hi.rps);
    // Threads that block on I/O beyond the cores are by design (gunicorn's
    // 2 x cores + 1); on a crowded host their CPU per request doubles with
    // the neighbours' cache pollution (flask-shop tuned at load 31: +107%).
    // A run without the series keeps the growth test alone.
    if nv.is_some_and(|n| n >= CPU_BOUND_NVCSW_PER_REQUEST) {
        return None;
    }
    let grew = growth >= OVERSUBSCRIBED_CPU_GROWTH && niv >= 1.0;
    let crowded = nv.is_some() && demand >= OVERSUBSCRIBED_THREADS * cores;
    let nv = nv.unwrap_or(0.0);
    (grew || crowded).then(|| Oversubscribed {
        busy,
        growth,
        lo_label: lo.label.clone(),
        lo_us,
        hi_label: hi.label.clone(),
        hi_us,
        niv,
        demand,
        nv,
    })
}

/// Scheduler churn: involuntary switches or migrations per request, the
/// part the server causes itself, judged by what it costs.
pub(crate) fn scheduler_churn(v: &View) -> Vec<Finding> {
    let (a, b) = v.measured_window();
    let (own_share, demand) = own_contention(v, a, b);
    let niv = v.per_request("proc.nivcsw").map(|x| x * own_share);
    let mig = v.per_request("proc.migrations").map(|x| x * own_share);
    let hit_niv = niv.filter(|x| *x >= NIVCSW_PER_REQUEST);
    let mig_rate = v.mean("proc.migrations", a, b).unwrap_or(0.0) * own_share;
    let cpu_us = cpu_us_per_request(v, a, b);
    // At low throughput a few migrations of idle helper threads look large
    // per request; churn also needs a rate that costs something per core,
    // and a cost that is a visible part of a request's CPU.
    // A server whose requests mostly wait (a downstream call, a disk)
    // blocks and wakes its threads once or more per request, and the
    // scheduler wakes each on whichever core is idle: migrations of threads
    // coming back from a wait, not CPU the server lacks (java-bidder
    // `syncaudit`: 2.1 per request, ~156 µs of 2.8 ms of CPU, in 43-ms
    // requests on a half-idle host). Judged at the lightest phase, where
    // the latency is the request's own and not a queue.
    let waiting = cpu_us.is_some_and(|c| {
        v.phases
            .iter()
            .filter(|p| p.rps > 0.0)
            .min_by_key(|p| p.connections.unwrap_or(u64::MAX))
            .and_then(|p| p.mean_ms)
            .is_some_and(|ms| ms >= WAIT_PROBLEM_MS && c / 1000.0 <= (1.0 - WAIT_SHARE) * ms)
    });
    let hit_mig = mig.filter(|x| {
        *x >= MIGRATIONS_PER_REQUEST
            && !waiting
            && mig_rate >= MIGRATIONS_PER_CORE_S * v.cores()
            && cpu_us.is_none_or(|c| x * MIGRATION_COST_US >= SCHED_COST_SHARE * c)
    });
    let over = oversubscribed(v);
    if hit_niv.is_none() && hit_mig.is_none() && over.is_none() {
        return Vec::new();
    }
    let ratio = hit_mig.map_or(0.0, |m| m / MIGRATIONS_PER_REQUEST)
        + hit_niv.map_or(0.0, |n| n / NIVCSW_PER_REQUEST)
        + over.as_ref().map_or(0.0, |o| {
            (o.growth / OVERSUBSCRIBED_CPU_GROWTH)
                .max(o.demand / (OVERSUBSCRIBED_THREADS * v.cores()))
        });
    let mut f = finding(
        "scheduler-churn",
        None,
        Severity::Warning,
        40.0 + 10.0 * ratio.min(4.0),
    );
    f.title = match (hit_mig, hit_niv) {
        (Some(m), _) => format!("Server threads migrate between cores {m:.2} times per request"),
        (None, Some(n)) => {
            format!("Server threads are preempted {n:.1} times per request (involuntary switches)")
        }
        (None, None) => over.as_ref().map_or_else(String::new, |o| {
            if o.growth >= OVERSUBSCRIBED_CPU_GROWTH {
                format!(
                    "{} busy server threads share {} cores: CPU per request grows {} as they preempt each other",
                    o.busy,
                    v.cores(),
                    pct(o.growth)
                )
            } else {
                format!(
                    "{} busy server threads share {} cores: {:.1} of them want a core at {} and wait for each other",
                    o.busy,
                    v.cores(),
                    o.demand,
                    o.hi_label
                )
            }
        }),
    };
    f.summary = "The scheduler moves or preempts the server's threads far more often than its requests need: caches go cold and requests wait for a core.".into();
    f.impact =
        "CPU per request and tail latency; pinning cut CPU ~20% in the field (field notes §2)"
            .into();
    f.suggestion = "pin workers to cores (sched_setaffinity, taskset, cpusets), run no more busy threads than cores, keep other work off the server's cores".into();
    f.evidence = Evidence {
        text: [
            mig.map(|m| format!("migrations: {m:.3} per request (threshold {MIGRATIONS_PER_REQUEST})")),
            niv.map(|n| format!("involuntary context switches: {n:.2} per request (threshold {NIVCSW_PER_REQUEST})")),
            demand.filter(|_| own_share < 1.0).map(|(own, host)| format!(
                "counted {} of them as the server's own: it wants {own:.1} cores, the host {host:.1} of {}",
                pct(own_share),
                v.cores()
            )),
            over.as_ref().map(|o| format!(
                "{}: {:.0} µs CPU per request with {} busy threads, against {:.0} µs at {}; {:.1} involuntary switches per request",
                o.hi_label, o.hi_us, o.busy, o.lo_us, o.lo_label, o.niv
            )),
            over.as_ref().map(|o| format!(
                "{}: the server's own threads want {:.1} cores (CPU plus run-queue wait) on {}; {:.2} voluntary switches per request (CPU-bound below {CPU_BOUND_NVCSW_PER_REQUEST})",
                o.hi_label, o.demand, v.cores(), o.nv
            )),
            cpu_us.zip(mig).map(|(c, m)| format!(
                "migrations cost ~{:.0} µs of {c:.0} µs CPU per request (~{MIGRATION_COST_US} µs each)",
                m * MIGRATION_COST_US
            )),
        ]
        .into_iter()
        .flatten()
        .collect(),
        series: vec!["proc.migrations".into(), "proc.nivcsw".into()],
        range_ms: Some(v.measured_window().into()),
        phases: v.phases.iter().map(|p| p.index).collect(),
        frames: Vec::new(),
    };
    // Name the threads that move or get preempted most, from their own series.
    for (metric, reference, what) in [
        ("migrations", "proc.migrations", "most migrations"),
        ("nivcsw", "proc.nivcsw", "most involuntary switches"),
    ] {
        if let Some((text, names)) = busiest_threads(v, metric, reference, a, b) {
            f.evidence.text.push(format!("{what}: {text}"));
            f.evidence.series.extend(names);
        }
    }
    vec![f]
}

/// Threads named in scheduler evidence, at most.
const NAMED_THREADS: usize = 3;

/// The threads with the highest mean `metric` over (a, b] from their own
/// series, as text (`demo-prefork-3 (tid 4250) 120/s, ...; 3 of 8
/// threads, 61% of the process's`) and their series names; `None` when
/// the run has no thread series for it.
fn busiest_threads(
    v: &View,
    metric: &str,
    reference: &str,
    a: f64,
    b: f64,
) -> Option<(String, Vec<String>)> {
    let mut rates = v.threads_by(metric, reference, a, b);
    let with = rates.len();
    rates.retain(|r| r.0 > 0.0);
    if rates.is_empty() {
        return None;
    }
    rates.truncate(NAMED_THREADS);
    let named: f64 = rates.iter().map(|r| r.0).sum();
    let mut text = rates
        .iter()
        .map(|(r, t)| format!("{} {}/s", t.label(), fmt_num(*r)))
        .collect::<Vec<_>>()
        .join(", ");
    text.push_str(&format!("; {} of {with} threads with series", rates.len()));
    if let Some(total) = v.mean(reference, a, b).filter(|x| *x > 0.0) {
        text.push_str(&format!(
            ", {} of the process's",
            pct((named / total).min(1.0))
        ));
    }
    let names = rates.iter().map(|(_, t)| t.series(metric)).collect();
    Some((text, names))
}

/// A count of keisoku's load report (contract 4: `connects`,
/// `server_closed`), over the whole run.
fn client_count(v: &View, key: &str) -> Option<f64> {
    v.run
        .results
        .get(key)
        .and_then(|x| x.as_f64())
        .filter(|x| x.is_finite())
}

/// Requests the client completed over the whole run.
fn client_requests(v: &View) -> Option<f64> {
    v.run
        .results
        .get("requests")
        .and_then(|x| x.as_f64())
        .or_else(|| {
            let n: f64 = v.phases.iter().map(|p| p.requests).sum();
            (n > 0.0).then_some(n)
        })
        .filter(|n| *n > 0.0)
}

/// Connection churn: new TCP connections per request, on the side that
/// makes them, judged by what they cost. Sources, best first: the server
/// process's own sockets (`proc.tcp_accepted`, `proc.tcp_connected` and
/// who closed: `proc.tcp_closed_by_server`/`_by_peer`, from sock_diag by
/// the process's socket inodes); keisoku's own client counts (`connects`,
/// `server_closed`); the host-wide TCP counters, which on a shared host
/// count every other process's connections too.
pub(crate) fn connection_churn(v: &View) -> Vec<Finding> {
    let (a, b) = v.measured_window();
    let own = v.has("proc.tcp_accepted");
    let (inbound, outbound, source) = if own {
        (
            v.per_request("proc.tcp_accepted").unwrap_or(0.0),
            v.per_request("proc.tcp_connected").unwrap_or(0.0),
            "the server's own sockets",
        )
    } else if let (Some(c), Some(n)) = (client_count(v, "connects"), client_requests(v)) {
        (c / n, 0.0, "keisoku's client")
    } else {
        let (Some(act), Some(pas)) = (
            v.per_request("tcp.active_opens"),
            v.per_request("tcp.passive_opens"),
        ) else {
            return Vec::new();
        };
        // On loopback every connection counts once as opened and once as
        // accepted; elsewhere only one side is on this host. Which side
        // churns is unknown from these.
        (act.max(pas), 0.0, "host-wide TCP counters")
    };
    let per = inbound + outbound;
    if inbound.max(outbound) < CONNECTS_PER_REQUEST {
        return Vec::new();
    }
    let cpu_us = cpu_us_per_request(v, a, b);
    let cost_of = |n: f64| cpu_us.map(|c| n * CONNECT_COST_US / c.max(1.0));
    let costly = |n: f64| cost_of(n).is_none_or(|c| c >= CONNECT_COST_SHARE);
    // Who asked to close: keisoku's count of responses with `Connection:
    // close` and connections the server closed, else the side holding the
    // TIME_WAIT (a client that closes as soon as it reads `Connection:
    // close` holds it, though the server asked).
    let asked = {
        let c = client_count(v, "connects");
        let s = client_count(v, "server_closed");
        c.zip(s)
            .filter(|(c, _)| *c > 0.0)
            .map(|(c, s)| (s / c).min(1.0))
    };
    let by_server = asked.or_else(|| {
        if !own {
            return None;
        }
        let s = v.per_request("proc.tcp_closed_by_server").unwrap_or(0.0);
        let p = v.per_request("proc.tcp_closed_by_peer").unwrap_or(0.0);
        (s + p > 0.0).then(|| s / (s + p))
    });
    // Accepted connections beyond keisoku's own connects come from
    // elsewhere: the server calling its own listening port (an in-process
    // backend) or another client; with keisoku's count they are told apart.
    let (inbound, outbound) = match (own, client_count(v, "connects"), client_requests(v)) {
        (true, Some(c), Some(n)) => {
            let from_client = (c / n).min(inbound);
            (from_client, outbound + (inbound - from_client))
        }
        _ => (inbound, outbound),
    };
    // Backend calls that open a connection each (>= 0.9 per request) are
    // a problem whatever their CPU cost: every call pays a handshake and
    // leaves a TIME_WAIT, and the ports run out under load. Fewer (a
    // background sender batching its calls) count by cost.
    // A backend call's connection costs the server its connect, and on
    // this host the backend its accept; on loopback the kernel reuses
    // TIME_WAIT tuples, so the server's own count runs low at high rates.
    let backend_costly = cost_of(2.0 * outbound).is_none_or(|c| c >= BACKEND_COST_SHARE);
    let backend = outbound >= CONNECTS_PER_REQUEST
        && (outbound >= PER_REQUEST_CONNECTS || backend_costly)
        && (own || outbound >= inbound);
    // A server that tells keisoku `Connection: close` after each response
    // by design (gunicorn's sync workers, usually behind a proxy that
    // keeps the clients' connections) pays an accept per request: a
    // problem only when that is a visible part of its CPU per request.
    let told_close = asked.is_some_and(|s| s >= SERVER_CLOSE_SHARE);
    let clients = !backend && inbound >= CONNECTS_PER_REQUEST && (!told_close || costly(inbound));
    let host_wide = !own && by_server.is_none();
    if !backend && !clients && !host_wide {
        return Vec::new();
    }
    let server_closes = clients && by_server.is_some_and(|s| s >= SERVER_CLOSE_SHARE);
    let cost = cost_of(per);
    let severity = if cost.is_none_or(|c| c >= 2.0 * CONNECT_COST_SHARE) {
        Severity::High
    } else {
        Severity::Warning
    };
    let mut f = finding(
        "connection-churn",
        None,
        severity,
        55.0 + 20.0 * per.min(2.0),
    );
    let (title, suggestion) = if backend {
        (
            format!("The server opens {outbound:.2} new connections per request to its backends: backend calls do not reuse connections"),
            "use keep-alive and a connection pool for backend calls (one client shared by all requests, not one per request)",
        )
    } else if server_closes {
        (
            format!("The server closes its connections: {inbound:.2} new client connections per request"),
            "enable keep-alive on the server (gunicorn: a worker class that keeps connections, such as gthread or gevent, or nginx in front with keepalive; nginx: keepalive_timeout and keepalive_requests; stop sending Connection: close)",
        )
    } else if clients && by_server.is_some() {
        (
            format!("Clients open {inbound:.2} new connections per request and close them"),
            "keep connections alive in the clients (HTTP keep-alive, a pool in the calling service or proxy)",
        )
    } else {
        (
            format!("{per:.2} new TCP connections per request: connections are not reused"),
            "use keep-alive and a connection pool for backend calls (and for the clients of this server)",
        )
    };
    f.title = title;
    f.suggestion = suggestion.into();
    f.summary = "Requests open new TCP connections instead of reusing kept-alive ones: a handshake, a socket and a TIME_WAIT entry each.".into();
    f.impact = match (cost, cpu_us) {
        (Some(c), Some(us)) => format!(
            "~{:.0} µs of the server's {us:.0} µs CPU per request ({}) at ~{CONNECT_COST_US} µs per connection, added round trips, TIME_WAIT buildup and port exhaustion under load",
            per * CONNECT_COST_US,
            pct(c)
        ),
        _ => "connect/accept syscalls and kernel TCP work per request, added round trips, TIME_WAIT buildup and port exhaustion under load".into(),
    };
    let mut text = vec![format!("from {source}: {inbound:.2} accepted per request")];
    if own {
        text.push(format!("opened to backends: {outbound:.2} per request"));
    }
    if let Some(s) = by_server {
        text.push(format!(
            "{} of the connections were closed by the server",
            pct(s)
        ));
    }
    let series: Vec<String> = if own {
        [
            "proc.tcp_accepted",
            "proc.tcp_connected",
            "proc.tcp_closed_by_server",
            "proc.tcp_closed_by_peer",
        ]
        .into_iter()
        .map(String::from)
        .collect()
    } else {
        ["tcp.active_opens", "tcp.passive_opens", "tcp.time_wait"]
            .into_iter()
            .map(String::from)
            .collect()
    };
    f.evidence = Evidence {
        text,
        series,
        range_ms: Some([a, b]),
        phases: v.phases.iter().map(|p| p.index).collect(),
        frames: Vec::new(),
    };
    vec![f]
}

/// One route dominating total time (alp's sum column).
pub(crate) fn route_dominating(v: &View) -> Vec<Finding> {
    let (rows, source) = if v.run.routes.access_log.len() >= 2 {
        (&v.run.routes.access_log, "access log")
    } else {
        (&v.run.routes.client, "client")
    };
    if rows.len() < 2 {
        return Vec::new();
    }
    let total: f64 = rows.iter().map(|r| r.sum).filter(|s| s.is_finite()).sum();
    let Some(top) = rows.iter().max_by(|x, y| x.sum.total_cmp(&y.sum)) else {
        return Vec::new();
    };
    if total <= 0.0 {
        return Vec::new();
    }
    let share = top.sum / total;
    let count: u64 = rows.iter().map(|r| r.count).sum();
    let count_share = top.count as f64 / count.max(1) as f64;
    if share < ROUTE_SHARE {
        return Vec::new();
    }
    // A route that takes most of the time because it serves most of the
    // requests simply does the most work: a place to look, not a problem.
    // It is a problem when its time share far exceeds its request share.
    let slow = share >= ROUTE_SLOW_RATIO * count_share;
    let mut f = if slow {
        finding(
            "route-dominating",
            None,
            Severity::Warning,
            30.0 + 30.0 * share,
        )
    } else {
        finding("route-dominating", None, Severity::Info, 8.0 + 5.0 * share)
    };
    f.title = format!(
        "{} {} takes {} of all request time ({} of requests)",
        top.method,
        top.uri,
        pct(share),
        pct(count_share)
    );
    f.summary = "One route accounts for most of the time the server spends answering: it is where work pays off first.".into();
    f.impact = format!(
        "making {} {} twice as fast cuts total request time by {}",
        top.method,
        top.uri,
        pct(share / 2.0)
    );
    f.suggestion =
        "profile this route alone; look at its p99 and body sizes next to the others".into();
    f.evidence = Evidence {
        text: vec![format!(
            "{source}: sum {:.0} ms of {:.0} ms; {} requests, mean {:.1} ms, p99 {:.1} ms",
            top.sum, total, top.count, top.avg, top.p99
        )],
        series: Vec::new(),
        range_ms: Some(v.measured_window().into()),
        phases: Vec::new(),
        frames: Vec::new(),
    };
    vec![f]
}

/// Blocking downstream call: request time dominated by a wait with the CPU idle.
pub(crate) fn blocking_wait(v: &View) -> Vec<Finding> {
    // The lightest phase: no queueing behind other requests, so time not
    // on CPU and not runnable is waiting on something outside.
    let Some(p) = v
        .phases
        .iter()
        .filter(|p| p.rps > 0.0 && p.mean_ms.is_some())
        .min_by_key(|p| p.connections.unwrap_or(u64::MAX))
    else {
        return Vec::new();
    };
    let Some(lat) = p.mean_ms else {
        return Vec::new();
    };
    let Some(cpu) = v.server_cpu(p.start_ms, p.end_ms) else {
        return Vec::new();
    };
    // Per request, in ms of one core: CPU and time runnable but not running.
    let cpu_ms = cpu / 100.0 * 1000.0 / p.rps;
    let runq_ms = v
        .mean("proc.runq_delay_ms", p.start_ms, p.end_ms)
        .map_or(0.0, |r| r / p.rps);
    // Little's law: rps x latency requests are in flight. Beyond one per
    // core they queue behind each other (the only phase may be a heavy
    // one), so only that part of the latency can be each request's own
    // service; the rest is waiting for the server, not for a downstream.
    let in_flight = p.rps * lat / 1000.0;
    let service_ms = if in_flight > v.cores() {
        lat * v.cores() / in_flight
    } else {
        lat
    };
    // A wall-clock profile measures the requests' waits where they happen
    // (crate::wall); without one, the wait is what is left of the
    // service time after CPU and run-queue wait, which a crowded host's
    // run-queue wait can hide.
    let wall = crate::wall::request_waits(v, p.start_ms, p.end_ms)
        .filter(|w| w.request_s > 0.0 && p.requests > 0.0);
    let (wait, wait_ms) = match &wall {
        Some(w) => {
            let ms = w.wait_s * 1000.0 / p.requests;
            ((ms / service_ms).min(1.0), ms)
        }
        None => {
            let wait = 1.0 - (cpu_ms + runq_ms) / service_ms;
            // The share alone calls a service whose own work is a fraction
            // of a ms "mostly waiting" for a 2-ms lookup it must make; what
            // holds a worker is the wait itself.
            (wait, service_ms * wait)
        }
    };
    let measured = match &wall {
        // Measured waits of WAIT_PROBLEM_MS are a problem at any share: at
        // load a request's other time (queueing, CPU) grows around them.
        Some(_) => wait_ms < WAIT_MIN_MS || (wait < WAIT_SHARE && wait_ms < WALL_WAIT_PROBLEM_MS),
        None => service_ms < WAIT_MIN_MS || wait < WAIT_SHARE,
    };
    if measured {
        return Vec::new();
    }
    let problem_ms = if wall.is_some() {
        WALL_WAIT_PROBLEM_MS
    } else {
        WAIT_PROBLEM_MS
    };
    let (wall_text, wall_frames, wall_where) = wall_evidence(wall.as_ref(), p.requests);
    let nv = v.per_request("proc.nvcsw");
    // A reverse proxy waits for its upstream by design: where the time
    // goes, not a blocking call to take off its request path.
    if let Some(proxy) = proxy_name(v) {
        let mut f = finding("blocking-wait", Some("upstream"), Severity::Info, 12.0);
        f.title = format!(
            "{proxy} waits for its upstream {} of the request time",
            pct(wait)
        );
        f.summary = "The server is a reverse proxy: its requests wait for the upstream, where the latency is.".into();
        f.impact = format!(
            "at {}: {lat:.1} ms mean latency of which {cpu_ms:.2} ms the proxy's CPU",
            p.label
        );
        f.suggestion = "record the upstream service itself (keisoku run against it, or --pid of it) to see where its time goes".into();
        f.evidence = Evidence {
            text: vec![format!(
                "{}: mean latency {lat:.2} ms, {proxy} CPU {cpu_ms:.3} ms per request",
                p.label
            )],
            series: vec!["client.p50_ms".into(), "proc.cpu_user".into()],
            range_ms: Some([p.start_ms, p.end_ms]),
            phases: vec![p.index],
            frames: Vec::new(),
        };
        return vec![f];
    }
    // A measured wait shorter than the server's own run-queue wait per
    // request is what a downstream on a host this crowded costs: it too
    // answers late by its run-queue waits (flask-shop `config` beside a
    // busy loop: 86 ms blocked in the ~3-ms stock lookup, 316 ms per
    // request runnable), so it describes the host, not a call to take off
    // the request path.
    let crowded = wall.is_some() && wait_ms >= problem_ms && wait_ms < runq_ms;
    if wait_ms < problem_ms || crowded {
        let mut f = finding(
            "blocking-wait",
            Some(if crowded { "crowded" } else { "short" }),
            Severity::Info,
            10.0 + wait_ms.min(problem_ms),
        );
        f.title = if crowded {
            format!(
                "Requests wait {wait_ms:.1} ms each with the CPU idle, less than the {runq_ms:.0} ms they wait for a core{wall_where}"
            )
        } else {
            format!(
                "Requests wait {wait_ms:.1} ms each with the CPU idle ({} of their time){wall_where}",
                pct(wait)
            )
        };
        f.summary = if crowded {
            "Requests wait for a downstream, but longer for a core: on a host this crowded a downstream on it answers late by its own run-queue waits. Rerun on a quieter host to see the call's own cost.".into()
        } else {
            "Most of a request's time is a short wait outside the server's CPU, as a call to another service costs: where the latency is, not a worker held for long.".into()
        };
        f.impact = format!(
            "at {}: {lat:.1} ms mean latency of which {cpu_ms:.2} ms CPU",
            p.label
        );
        f.suggestion = "if the latency matters, look at the downstream the requests call (record it with keisoku run or --pid)".into();
        f.evidence = Evidence {
            text: std::iter::once(format!(
                "{}: mean latency {lat:.2} ms, server CPU {cpu_ms:.3} ms per request, runnable-but-waiting {runq_ms:.3} ms per request; a problem from {problem_ms} ms of wait",
                p.label
            ))
            .chain(wall_text.iter().cloned())
            .collect(),
            series: vec!["client.p50_ms".into(), "proc.cpu_user".into()],
            range_ms: Some([p.start_ms, p.end_ms]),
            phases: vec![p.index],
            frames: wall_frames.clone(),
        };
        return vec![f];
    }
    let mut f = finding("blocking-wait", None, Severity::High, 55.0 + 40.0 * wait);
    f.title = format!(
        "Requests spend {} of their time ({wait_ms:.0} ms each) waiting with the CPU idle{wall_where}",
        pct(wait)
    );
    f.summary = "Each request waits on something outside the server's CPU (a downstream call, a disk, a lock held elsewhere) while the worker sits blocked: throughput is workers divided by the wait.".into();
    f.impact = format!(
        "at {}: {:.1} ms mean latency of which {:.2} ms CPU; up to {:.0}x the throughput per worker without the wait",
        p.label,
        lat,
        cpu_ms,
        1.0 / (1.0 - wait).max(0.01)
    );
    f.suggestion = "take the call off the request path (queue and batch it) or make it asynchronous; add a timeout; if it must stay, raise concurrency so waits overlap".into();
    f.evidence = Evidence {
        text: [
            Some(format!(
                "{}: mean latency {:.2} ms, server CPU {:.3} ms per request, runnable-but-waiting {:.3} ms per request",
                p.label, lat, cpu_ms, runq_ms
            )),
            nv.map(|n| format!("voluntary context switches (blocking waits): {n:.1} per request")),
        ]
        .into_iter()
        .flatten()
        .chain(wall_text)
        .collect(),
        series: vec![
            "client.p50_ms".into(),
            "proc.cpu_user".into(),
            "proc.nvcsw".into(),
        ],
        range_ms: Some([p.start_ms, p.end_ms]),
        phases: vec![p.index],
        frames: wall_frames,
    };
    vec![f]
}

/// What the wall-clock profile adds to a blocking-wait finding: a sentence
/// per waiting call path, its frames with their share of the wait, and
/// the title's "in …" naming the first.
fn wall_evidence(
    wall: Option<&crate::wall::RequestWaits>,
    requests: f64,
) -> (Vec<String>, Vec<FrameShare>, String) {
    let Some(w) = wall.filter(|w| w.wait_s > 0.0) else {
        return (Vec::new(), Vec::new(), String::new());
    };
    let text = w
        .top
        .iter()
        .map(|s| {
            format!(
                "wall-clock profile: {:.1} ms per request waiting in {} ({} of the requests' wait)",
                s.wait_s * 1000.0 / requests,
                s.label,
                pct(s.wait_s / w.wait_s)
            )
        })
        .chain(w.kernel_bound.map(|(bound, profiles)| {
            format!(
                "the serving threads' own CPU and run-queue time leave {:.1} ms per request blocked (the profiles' difference: {:.1} ms; the rest was waiting for a core)",
                bound * 1000.0 / requests,
                profiles * 1000.0 / requests
            )
        }))
        .collect();
    let frames = w
        .top
        .iter()
        .map(|s| FrameShare {
            name: s.name.clone(),
            module: s.module.clone(),
            share: s.wait_s / w.wait_s,
        })
        .collect();
    let title = w
        .top
        .first()
        .map(|s| format!(", most in {}", s.label))
        .unwrap_or_default();
    (text, frames, title)
}

/// Reverse proxies by process name.
const PROXIES: &[&str] = &[
    "nginx", "haproxy", "envoy", "traefik", "caddy", "varnishd", "h2o",
];

/// The proxy the server is, when all its named threads are a known
/// reverse proxy's (from the profile's threads or the thread series).
fn proxy_name(v: &View) -> Option<&'static str> {
    let mut names: Vec<String> = v
        .run
        .profile
        .as_ref()
        .map(|p| p.threads.iter().map(|t| t.comm.to_lowercase()).collect())
        .unwrap_or_default();
    names.extend(v.threads.iter().map(|t| t.comm.to_lowercase()));
    let first = names.first()?;
    let proxy = PROXIES.iter().find(|p| first.starts_with(**p))?;
    names.iter().all(|n| n.starts_with(proxy)).then_some(*proxy)
}

/// Generator saturated: the numbers may describe the client.
pub(crate) fn generator(v: &View) -> Vec<Finding> {
    let r = &v.run.results;
    let hot: Vec<f64> = r
        .get("generator")
        .and_then(|g| g.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|t| t.get("cpu_pct")?.as_f64())
                .filter(|c| *c >= GENERATOR_PCT)
                .collect()
        })
        .unwrap_or_default();
    let warnings: Vec<String> = r
        .get("warnings")
        .and_then(|w| w.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|w| w.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default();
    let lag = r.get("schedule").and_then(|s| {
        let late = s.get("late")?.as_f64()?;
        let waited = s.get("waited_for_connection")?.as_f64().unwrap_or(0.0);
        let intended = s.get("intended")?.as_f64()?;
        (intended > 0.0).then(|| (late - waited) / intended)
    });
    let lagging = lag.filter(|l| *l >= 0.05);
    if hot.is_empty() && warnings.is_empty() && lagging.is_none() {
        return Vec::new();
    }
    let mut f = finding("generator-saturated", None, Severity::High, 95.0);
    f.title = "The load generator was saturated: these numbers may describe the client".into();
    f.summary = "keisoku's own load threads ran out of CPU or fell behind their schedule, so throughput and latency measure the client as much as the server.".into();
    f.impact =
        "throughput understated, latency overstated; every other finding is less certain".into();
    f.suggestion = "give the generator more threads (-t) or cores, run it on another machine, or lower the load".into();
    let mut text = Vec::new();
    if let Some(m) = hot.iter().copied().reduce(f64::max) {
        text.push(format!(
            "{} load-thread phase(s) at {GENERATOR_PCT:.0}% CPU or more (max {m:.0}%)",
            hot.len()
        ));
    }
    if let Some(l) = lagging {
        text.push(format!(
            "{} of requests sent late by keisoku itself",
            pct(l)
        ));
    }
    text.extend(warnings);
    f.evidence = Evidence {
        text,
        range_ms: Some(v.measured_window().into()),
        phases: v.phases.iter().map(|p| p.index).collect(),
        ..Evidence::default()
    };
    vec![f]
}

/// Page-cache thrash: major faults and page-ins rising with read IOPS while
/// write IOPS fall.
pub(crate) fn page_cache(v: &View) -> Vec<Finding> {
    let Some(maj) = v.per_request("vm.pgmajfault") else {
        return Vec::new();
    };
    if maj < MAJFAULTS_PER_REQUEST {
        return Vec::new();
    }
    // The host's faults include every other process's (a compiler beside
    // the server reading its inputs): with the server's own count, only
    // its own faults make the request path read from disk.
    if v.has("proc.majflt") && v.per_request("proc.majflt").unwrap_or(0.0) < MAJFAULTS_PER_REQUEST {
        return Vec::new();
    }
    let (a, b) = v.measured_window();
    let disks: BTreeMap<String, ()> = v
        .run
        .series
        .iter()
        .filter_map(|s| {
            s.name
                .strip_prefix("disk.")?
                .strip_suffix(".r_iops")
                .map(|d| (d.to_string(), ()))
        })
        .collect();
    let faults = v.points("vm.pgmajfault", a, b);
    let pgin = v.points("vm.pgpgin", a, b);
    for dev in disks.keys() {
        let r = v.points(&format!("disk.{dev}.r_iops"), a, b);
        let w = v.points(&format!("disk.{dev}.w_iops"), a, b);
        let (Some(cf), Some(cw)) = (correlation(&faults, &r), correlation(&r, &w)) else {
            continue;
        };
        let cp = correlation(&pgin, &r).unwrap_or(cf);
        if cf >= 0.6 && cp >= 0.6 && cw <= -0.3 {
            let mut f = finding("page-cache-thrash", None, Severity::High, 65.0);
            f.title = format!(
                "Page-cache thrash: {maj:.2} major faults per request, reads on {dev} rising as writes fall"
            );
            f.summary = "The working set no longer fits in memory: pages are evicted and read back from disk (major faults), and reads crowd out writes.".into();
            f.impact = "every major fault is a disk read in the request path: latency in milliseconds instead of microseconds".into();
            f.suggestion = "add memory or shrink the working set (smaller caches, fewer processes); check what else fills the page cache".into();
            f.evidence = Evidence {
                text: [
                    Some(format!("major faults: {maj:.3} per request; correlation with {dev} read IOPS {cf:.2}")),
                    v.per_request("proc.majflt").map(|m| format!("the server's own major faults: {m:.3} per request")),
                    Some(format!("page-ins vs read IOPS {cp:.2}; read vs write IOPS {cw:.2}")),
                ]
                .into_iter()
                .flatten()
                .collect(),
                series: vec![
                    "vm.pgmajfault".into(),
                    "vm.pgpgin".into(),
                    format!("disk.{dev}.r_iops"),
                    format!("disk.{dev}.w_iops"),
                ],
                range_ms: Some([a, b]),
                phases: v.phases.iter().map(|p| p.index).collect(),
                frames: Vec::new(),
            };
            return vec![f];
        }
    }
    Vec::new()
}

/// Pearson correlation of two series at the times they share.
fn correlation(x: &[(f64, f64)], y: &[(f64, f64)]) -> Option<f64> {
    let ys: HashMap<u64, f64> = y.iter().map(|(t, v)| (t.to_bits(), *v)).collect();
    let pairs: Vec<(f64, f64)> = x
        .iter()
        .filter_map(|(t, a)| Some((*a, *ys.get(&t.to_bits())?)))
        .collect();
    if pairs.len() < 4 {
        return None;
    }
    let n = pairs.len() as f64;
    let (mx, my) = (
        pairs.iter().map(|p| p.0).sum::<f64>() / n,
        pairs.iter().map(|p| p.1).sum::<f64>() / n,
    );
    let (mut sxy, mut sxx, mut syy) = (0.0, 0.0, 0.0);
    for (a, b) in &pairs {
        sxy += (a - mx) * (b - my);
        sxx += (a - mx) * (a - mx);
        syy += (b - my) * (b - my);
    }
    (sxx > 0.0 && syy > 0.0).then(|| sxy / (sxx * syy).sqrt())
}

/// Bytes per response and median latency in the first and last third of
/// the seconds that had answers.
struct ResponseGrowth {
    first_bytes: f64,
    last_bytes: f64,
    first_p50: Option<f64>,
    last_p50: Option<f64>,
    range_ms: [f64; 2],
}

/// How the access log's bytes per response moved over the run, from the
/// `log.body_bytes` and `log.rps` series (warm-up included: a list grows
/// from the first request on).
fn response_growth(v: &View) -> Option<ResponseGrowth> {
    let end = v.run.run.duration_ms.max(v.measured_window().1);
    let bytes: HashMap<u64, f64> = v
        .points("log.body_bytes", 0.0, end)
        .into_iter()
        .map(|(t, b)| (t.to_bits(), b))
        .collect();
    let seconds: Vec<(f64, f64, f64)> = v
        .points("log.rps", 0.0, end)
        .into_iter()
        .filter(|(_, r)| *r > 0.0)
        .filter_map(|(t, r)| Some((t, r, *bytes.get(&t.to_bits())?)))
        .collect();
    let third = seconds.len() / 3;
    if third < 2 {
        return None;
    }
    let per_response = |part: &[(f64, f64, f64)]| {
        let (r, b) = part.iter().fold((0.0, 0.0), |(r, b), s| (r + s.1, b + s.2));
        (r > 0.0).then(|| b / r)
    };
    let first = &seconds[..third];
    let last = &seconds[seconds.len() - third..];
    let p50 = |part: &[(f64, f64, f64)]| {
        let (a, b) = (part.first()?.0 - 1000.0, part.last()?.0);
        v.mean("log.p50_ms", a, b)
    };
    Some(ResponseGrowth {
        first_bytes: per_response(first)?,
        last_bytes: per_response(last)?,
        first_p50: p50(first),
        last_p50: p50(last),
        range_ms: [seconds[0].0 - 1000.0, seconds[seconds.len() - 1].0],
    })
}

fn fmt_bytes(b: f64) -> String {
    if b >= 1024.0 * 1024.0 {
        format!("{:.1} MiB", b / (1024.0 * 1024.0))
    } else if b >= 1024.0 {
        format!("{:.1} KiB", b / 1024.0)
    } else {
        format!("{b:.0} B")
    }
}

/// A route whose answers grow over the run or are very large, while it
/// holds most of the request time: a query or list without a limit, as a
/// user sees it from the access log's body sizes.
pub(crate) fn unbounded_response(v: &View) -> Vec<Finding> {
    let (rows, source) = if v.run.routes.access_log.is_empty() {
        (&v.run.routes.client, "client")
    } else {
        (&v.run.routes.access_log, "access log")
    };
    let total_time: f64 = rows.iter().map(|r| r.sum).filter(|s| s.is_finite()).sum();
    let total_bytes: f64 = rows
        .iter()
        .map(|r| r.sum_body)
        .filter(|s| s.is_finite())
        .sum();
    let Some(top) = rows
        .iter()
        .filter(|r| r.sum_body.is_finite())
        .max_by(|x, y| x.sum_body.total_cmp(&y.sum_body))
    else {
        return Vec::new();
    };
    if top.count < UNBOUNDED_MIN_REQUESTS || total_bytes <= 0.0 || total_time <= 0.0 {
        return Vec::new();
    }
    let time_share = top.sum / total_time;
    if time_share < RESPONSE_TIME_SHARE {
        return Vec::new();
    }
    // The log's bytes series counts every route: it is this route's only
    // when this route sends nearly all of the bytes.
    let growth = if source == "access log" && top.sum_body / total_bytes >= RESPONSE_BYTES_SHARE {
        response_growth(v)
    } else {
        None
    };
    let grows = growth.as_ref().filter(|g| {
        g.first_bytes > 0.0
            && g.last_bytes >= RESPONSE_GROWTH * g.first_bytes
            && g.last_bytes - g.first_bytes >= RESPONSE_GROWTH_MIN_BYTES
    });
    let large = top.avg_body >= LARGE_RESPONSE_BYTES;
    if grows.is_none() && !large {
        return Vec::new();
    }
    let route = format!("{} {}", top.method, top.uri);
    let ratio = grows.map_or(1.0, |g| g.last_bytes / g.first_bytes);
    let score = 50.0 + 10.0 * (ratio - 1.0).min(2.0) + 10.0 * time_share;
    let mut f = finding("unbounded-response", None, Severity::Warning, score);
    f.title = match grows {
        Some(g) => format!(
            "{route}: responses grew from {} to {} each over the run ({:.1}x); the route takes {} of request time",
            fmt_bytes(g.first_bytes),
            fmt_bytes(g.last_bytes),
            ratio,
            pct(time_share)
        ),
        None => format!(
            "{route}: {} per response on average (up to {}); the route takes {} of request time",
            fmt_bytes(top.avg_body),
            fmt_bytes(top.max_body),
            pct(time_share)
        ),
    };
    f.summary = "One route answers with more and more (or very many) bytes: its result has no limit, so every request reads, renders and sends all of it, and its cost follows the data, not the request.".into();
    f.impact = match grows.and_then(|g| Some((g.first_p50?, g.last_p50?))) {
        Some((a, b)) if b > a => format!(
            "median latency went from {} ms to {} ms as the responses grew; it keeps growing with the data",
            fmt_num(a),
            fmt_num(b)
        ),
        _ => format!(
            "{} of request time is spent on answers of {} on average",
            pct(time_share),
            fmt_bytes(top.avg_body)
        ),
    };
    f.suggestion = "bound the result: paginate (LIMIT plus a cursor or offset), return only the fields the client shows, or serve a summary and fetch details on demand".into();
    let mut text = vec![format!(
        "{source}: {route}: {} requests, {} per response on average ({} to {}), {} of the bytes and {} of request time",
        top.count,
        fmt_bytes(top.avg_body),
        fmt_bytes(top.min_body),
        fmt_bytes(top.max_body),
        pct(top.sum_body / total_bytes),
        pct(time_share)
    )];
    if let Some(g) = &growth {
        text.push(format!(
            "log.body_bytes / log.rps: {} per response in the first third of the run, {} in the last",
            fmt_bytes(g.first_bytes),
            fmt_bytes(g.last_bytes)
        ));
    }
    f.evidence = Evidence {
        text,
        series: if growth.is_some() {
            vec![
                "log.body_bytes".into(),
                "log.rps".into(),
                "log.p50_ms".into(),
            ]
        } else {
            Vec::new()
        },
        range_ms: Some(growth.map_or_else(|| v.measured_window().into(), |g| g.range_ms)),
        phases: Vec::new(),
        frames: Vec::new(),
    };
    vec![f]
}
