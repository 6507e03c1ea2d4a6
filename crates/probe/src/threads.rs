//! Per-thread ("worker") series, `thread.<comm>:<pid>:<tid>.<metric>`: which
//! threads of the tree get them, and their points.
//!
//! The process sampler reads every thread's counters each tick anyway (the
//! `proc.*` sums need them: schedstat always, stat and sched when the thread
//! ran), so the per-thread numbers cost no extra reads; what needs bounding
//! is the number of series. A thread
//! gets series once it is busy (`THREAD_BUSY_CPU_PCT` of a core in an interval, or
//! `THREAD_BUSY_MIGRATIONS_S`), at most `THREADS_MAX_LIVE` threads at a time (the busiest
//! first) and `THREADS_MAX_EVER` over a run, so a JVM with 200 idle threads or a
//! thread-per-connection server does not create thousands of series.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::time::Duration;

use crate::series::{Notes, Series, SeriesPoint};

/// At most this many threads have series at the same time.
pub const THREADS_MAX_LIVE: usize = 32;
/// At most this many distinct threads get series over a run.
pub const THREADS_MAX_EVER: usize = 256;
/// CPU (% of one core) in one interval from which a thread counts as busy.
pub const THREAD_BUSY_CPU_PCT: f64 = 1.0;
/// Migrations per second from which a thread counts as busy.
pub const THREAD_BUSY_MIGRATIONS_S: f64 = 10.0;
/// A thread with series that has not been busy for this long gives up its
/// place to a busy thread left out (its series then have a gap).
pub const THREAD_IDLE_YIELD: Duration = Duration::from_secs(10);

/// One thread's counters over the last interval.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Delta {
    /// Seconds on CPU (schedstat run time, else clock ticks).
    pub(crate) cpu_s: f64,
    pub(crate) migrations: Option<u64>,
    pub(crate) nvcsw: Option<u64>,
    pub(crate) nivcsw: Option<u64>,
    /// Nanoseconds runnable but waiting for a CPU.
    pub(crate) wait_ns: Option<u64>,
    /// The core it last ran on.
    pub(crate) core: Option<usize>,
}

struct WorkerSeries {
    cpu: Series,
    migrations: Series,
    nvcsw: Series,
    nivcsw: Series,
    runq: Series,
    core: Series,
}

impl WorkerSeries {
    fn new(comm: &[u8], pid: u32, tid: u32) -> WorkerSeries {
        let mut key = String::with_capacity(48);
        key.push_str("thread.");
        // Series names are dot-separated: keep comm to a safe alphabet.
        for &c in comm {
            key.push(if c.is_ascii_alphanumeric() || c == b'_' || c == b'-' {
                char::from(c)
            } else {
                '_'
            });
        }
        let _ = write!(key, ":{pid}:{tid}.");
        let name = |metric: &str| format!("{key}{metric}");
        WorkerSeries {
            cpu: Series::new(name("cpu"), "%"),
            migrations: Series::new(name("migrations"), "/s"),
            nvcsw: Series::new(name("nvcsw"), "/s"),
            nivcsw: Series::new(name("nivcsw"), "/s"),
            runq: Series::new(name("runq_delay_ms"), "ms/s"),
            core: Series::new(name("core"), "core"),
        }
    }

    fn push(&self, d: &Delta, dt_s: f64, out: &mut Vec<SeriesPoint>, t_ns: u64) {
        self.cpu.push(out, t_ns, d.cpu_s / dt_s * 100.0);
        if let Some(m) = d.migrations {
            self.migrations.push(out, t_ns, m as f64 / dt_s);
        }
        if let Some(n) = d.nvcsw {
            self.nvcsw.push(out, t_ns, n as f64 / dt_s);
        }
        if let Some(n) = d.nivcsw {
            self.nivcsw.push(out, t_ns, n as f64 / dt_s);
        }
        if let Some(w) = d.wait_ns {
            self.runq.push(out, t_ns, w as f64 / 1e6 / dt_s);
        }
        if let Some(c) = d.core {
            self.core.push(out, t_ns, c as f64);
        }
    }
}

/// What the sampler keeps per thread for its series.
#[derive(Default)]
pub(crate) struct Worker {
    /// The process the thread belongs to.
    pub(crate) pid: u32,
    comm: [u8; 16],
    comm_len: u8,
    /// This tick's counters; `None` on a thread's first tick.
    pub(crate) delta: Option<Delta>,
    series: Option<Box<WorkerSeries>>,
    /// When it was last busy (run clock, ns).
    busy_at: u64,
    ever: bool,
}

impl Worker {
    pub(crate) fn new(pid: u32) -> Worker {
        Worker {
            pid,
            ..Worker::default()
        }
    }

    /// Keeps the thread's current name (threads rename themselves after
    /// start: JVM and Go runtimes, `prctl(PR_SET_NAME)`).
    pub(crate) fn set_comm(&mut self, comm: &[u8]) {
        let n = comm.len().min(self.comm.len());
        self.comm[..n].copy_from_slice(&comm[..n]);
        self.comm_len = n as u8;
    }

    fn busy(&self, dt_s: f64) -> bool {
        self.delta.is_some_and(|d| {
            d.cpu_s / dt_s * 100.0 >= THREAD_BUSY_CPU_PCT
                || d.migrations
                    .is_some_and(|m| m as f64 / dt_s >= THREAD_BUSY_MIGRATIONS_S)
        })
    }
}

/// Chooses the threads with series and emits their points.
#[derive(Default)]
pub(crate) struct WorkerTable {
    ever: usize,
    candidates: Vec<(f64, u32)>,
    yielding: Vec<(u64, u32)>,
}

impl WorkerTable {
    /// Called once per tick after every thread's `delta` was set, with the
    /// threads that exited already gone from `slots`.
    pub(crate) fn emit<T: AsMut<Worker>>(
        &mut self,
        slots: &mut HashMap<u32, T>,
        dt_s: f64,
        t_ns: u64,
        out: &mut Vec<SeriesPoint>,
        notes: &mut Notes,
    ) {
        if dt_s <= 0.0 {
            return;
        }
        self.candidates.clear();
        self.yielding.clear();
        let mut live = 0usize;
        let idle_ns = u64::try_from(THREAD_IDLE_YIELD.as_nanos()).unwrap_or(u64::MAX);
        for (&tid, slot) in slots.iter_mut() {
            let w = slot.as_mut();
            let busy = w.busy(dt_s);
            if busy {
                w.busy_at = t_ns;
            }
            if w.series.is_some() {
                live += 1;
                if !busy && t_ns.saturating_sub(w.busy_at) >= idle_ns {
                    self.yielding.push((w.busy_at, tid));
                }
            } else if busy {
                let cpu = w.delta.map_or(0.0, |d| d.cpu_s);
                self.candidates.push((cpu, tid));
            }
        }
        if !self.candidates.is_empty() {
            self.admit(slots, live, t_ns, notes);
        }
        for slot in slots.values_mut() {
            let w = slot.as_mut();
            if let (Some(s), Some(d)) = (&w.series, &w.delta) {
                s.push(d, dt_s, out, t_ns);
            }
        }
    }

    /// Gives series to busy threads without them: the busiest first, into
    /// free places, else into the places of the longest idle.
    fn admit<T: AsMut<Worker>>(
        &mut self,
        slots: &mut HashMap<u32, T>,
        mut live: usize,
        t_ns: u64,
        notes: &mut Notes,
    ) {
        self.candidates
            .sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
        self.yielding.sort_unstable();
        let mut yielding = self.yielding.iter();
        let mut left_out = 0usize;
        for &(_, tid) in &self.candidates {
            // The run's cap first: a thread that cannot have series must
            // not take an idle thread's place and leave it empty.
            let Some(ever) = slots.get_mut(&tid).map(|s| s.as_mut().ever) else {
                continue;
            };
            if !ever && self.ever >= THREADS_MAX_EVER {
                notes.once("thread.ever", || {
                    format!("thread.* series: {THREADS_MAX_EVER} threads had series already; threads busy later have none (they still count in proc.*)")
                });
                continue;
            }
            if live >= THREADS_MAX_LIVE {
                let freed = yielding
                    .next()
                    .and_then(|(_, y)| slots.get_mut(y))
                    .map(|s| s.as_mut().series = None);
                if freed.is_none() {
                    left_out += 1;
                    continue;
                }
                live -= 1;
            }
            let Some(w) = slots.get_mut(&tid).map(AsMut::as_mut) else {
                continue;
            };
            if !w.ever {
                self.ever += 1;
                w.ever = true;
            }
            let comm = &w.comm[..usize::from(w.comm_len)];
            w.series = Some(Box::new(WorkerSeries::new(comm, w.pid, tid)));
            live += 1;
        }
        if left_out > 0 {
            let secs = t_ns as f64 / 1e9;
            notes.once("thread.live", || {
                format!("thread.* series: more than {THREADS_MAX_LIVE} threads busy at {secs:.1} s ({left_out} left out): the busiest have series, and one idle for {} s gives up its place (all count in proc.*)", THREAD_IDLE_YIELD.as_secs())
            });
        }
    }
}
