//! Read-only helpers over a stored run: series means over a window,
//! measured phases with their throughput, and the server's profile samples
//! placed on the run's clock.

use keisoku_store::{Phase, RunJson, Series};
use std::collections::HashMap;

/// One measured phase with what the load client saw in it.
#[derive(Debug, Clone)]
pub(crate) struct MeasuredPhase {
    pub index: u32,
    pub label: String,
    pub start_ms: f64,
    pub end_ms: f64,
    pub connections: Option<u64>,
    pub requests: f64,
    pub rps: f64,
    pub mean_ms: Option<f64>,
}

/// A profile sample on the run's clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Sample {
    pub node: u32,
    pub weight: f64,
    pub t_ms: Option<f64>,
    pub thread: Option<u32>,
}

/// A thread of the server with its own series
/// (`thread.<comm>:<pid>:<tid>.<metric>`, docs/run-json.md).
pub(crate) type ThreadKey = keisoku_store::SeriesThread;

pub(crate) struct View<'a> {
    pub run: &'a RunJson,
    series: HashMap<&'a str, &'a Series>,
    pub phases: Vec<MeasuredPhase>,
    pub samples: Vec<Sample>,
    /// Threads with per-thread series, in tid order.
    pub threads: Vec<ThreadKey>,
    frames: Frames,
}

/// The profile's frames as rules read them: one function is one frame
/// (Python's sampled line numbers dropped), names also kept lowercase for
/// the case-insensitive patterns.
#[derive(Default)]
struct Frames {
    /// Frame id -> the id of the first frame with the same function and module.
    canon: Vec<u32>,
    /// Function name per frame id.
    name: Vec<String>,
    /// Lowercase name per frame id.
    name_lc: Vec<String>,
    /// Lowercase module per frame id.
    module_lc: Vec<String>,
}

impl Frames {
    fn new(run: &RunJson) -> Frames {
        let Some(p) = &run.profile else {
            return Frames::default();
        };
        let mut first: HashMap<(String, &str), u32> = HashMap::new();
        let mut out = Frames::default();
        for (i, f) in p.frames.iter().enumerate() {
            let name = crate::patterns::function_name(&f.name).into_owned();
            let id = *first
                .entry((name.clone(), f.module.as_str()))
                .or_insert(i as u32);
            out.canon.push(id);
            out.name_lc.push(name.to_lowercase());
            out.module_lc.push(f.module.to_lowercase());
            out.name.push(name);
        }
        out
    }
}

fn num(v: &serde_json::Value, key: &str) -> Option<f64> {
    v.get(key)
        .and_then(|x| x.as_f64())
        .filter(|x| x.is_finite())
}

impl<'a> View<'a> {
    pub fn new(run: &'a RunJson) -> View<'a> {
        let series = run.series.iter().map(|s| (s.name.as_str(), s)).collect();
        let mut threads: Vec<ThreadKey> = run
            .series
            .iter()
            .filter_map(|s| ThreadKey::parse(&s.name).map(|(k, _)| k))
            .collect();
        threads.sort_by(|a, b| (a.tid, a.pid, &a.comm).cmp(&(b.tid, b.pid, &b.comm)));
        threads.dedup();
        View {
            run,
            series,
            phases: measured_phases(run),
            samples: samples(run),
            threads,
            frames: Frames::new(run),
        }
    }

    /// A thread's mean rate of `metric` over (a, b], counting the ticks
    /// before it had series (it was idle then) as zero: its points are
    /// summed and divided by the number of points the process-wide
    /// `reference` series has in the window.
    pub fn thread_mean(
        &self,
        thread: &ThreadKey,
        metric: &str,
        reference: &str,
        a: f64,
        b: f64,
    ) -> Option<f64> {
        let own = self.points(&thread.series(metric), a, b);
        if own.is_empty() {
            return None;
        }
        let ticks = self.points(reference, a, b).len().max(own.len());
        Some(own.iter().map(|p| p.1).sum::<f64>() / ticks as f64)
    }

    /// Threads with series of `metric` and their [`View::thread_mean`] over
    /// (a, b], the highest first (equal ones by tid).
    pub fn threads_by(
        &self,
        metric: &str,
        reference: &str,
        a: f64,
        b: f64,
    ) -> Vec<(f64, &ThreadKey)> {
        let mut ranked: Vec<(f64, &ThreadKey)> = self
            .threads
            .iter()
            .filter_map(|t| Some((self.thread_mean(t, metric, reference, a, b)?, t)))
            .collect();
        ranked.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.tid.cmp(&y.1.tid)));
        ranked
    }

    /// The series of profile thread `t`: the thread with series of the same
    /// process and thread id. Both ids, not the tid alone: a tid reused in
    /// another process, or a profile whose tids are not kernel ones (py-spy
    /// numbers its threads), must not borrow another thread's series. Of a
    /// thread renamed between its series, the last name.
    pub fn series_thread(&self, t: u32) -> Option<&ThreadKey> {
        let th = self.run.profile.as_ref()?.threads.get(t as usize)?;
        self.threads
            .iter()
            .rev()
            .find(|k| k.pid == th.pid && k.tid == th.tid)
    }

    /// Online cores, at least 1.
    pub fn cores(&self) -> f64 {
        f64::from(self.run.machine_cores().max(1))
    }

    pub fn has(&self, name: &str) -> bool {
        self.series.contains_key(name)
    }

    /// Mean of a series' points with t in (a, b]: a rate at t covers the
    /// interval ending at t, so this is the mean rate over the window.
    pub fn mean(&self, name: &str, a: f64, b: f64) -> Option<f64> {
        let s = self.series.get(name)?;
        let (mut sum, mut n) = (0.0, 0usize);
        for (t, v) in s.t_ms.iter().zip(&s.v) {
            if *t > a && *t <= b && v.is_finite() {
                sum += v;
                n += 1;
            }
        }
        (n > 0).then(|| sum / n as f64)
    }

    /// Points of a series inside (a, b].
    pub fn points(&self, name: &str, a: f64, b: f64) -> Vec<(f64, f64)> {
        self.series
            .get(name)
            .map(|s| {
                s.t_ms
                    .iter()
                    .zip(&s.v)
                    .filter(|(t, v)| **t > a && **t <= b && v.is_finite())
                    .map(|(t, v)| (*t, *v))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Server CPU (user + system), % of one core, over a window.
    pub fn server_cpu(&self, a: f64, b: f64) -> Option<f64> {
        let u = self.mean("proc.cpu_user", a, b);
        let s = self.mean("proc.cpu_system", a, b);
        match (u, s) {
            (None, None) => None,
            (u, s) => Some(u.unwrap_or(0.0) + s.unwrap_or(0.0)),
        }
    }

    /// Host CPU busy, % of all cores, over a window.
    pub fn host_busy(&self, a: f64, b: f64) -> Option<f64> {
        self.mean("cpu.all.idle", a, b)
            .map(|idle| (100.0 - idle).clamp(0.0, 100.0))
    }

    /// The window every measured phase covers, or the whole run.
    pub fn measured_window(&self) -> (f64, f64) {
        match (self.phases.first(), self.phases.last()) {
            (Some(f), Some(l)) => (f.start_ms, l.end_ms),
            _ => (0.0, self.run.run.duration_ms),
        }
    }

    /// Requests per second over the measured phases, from the client or
    /// else from the access log.
    pub fn measured_rps(&self) -> Option<f64> {
        let req: f64 = self.phases.iter().map(|p| p.requests).sum();
        let secs: f64 = self
            .phases
            .iter()
            .map(|p| (p.end_ms - p.start_ms) / 1000.0)
            .sum();
        if req > 0.0 && secs > 0.0 {
            return Some(req / secs);
        }
        let (a, b) = self.measured_window();
        self.mean("client.rps", a, b)
            .or_else(|| self.mean("log.rps", a, b))
            .filter(|r| *r > 0.0)
    }

    /// A per-second rate series divided by the request rate, per phase,
    /// weighted by the phase's length: "how many per request".
    pub fn per_request(&self, name: &str) -> Option<f64> {
        if !self.has(name) {
            return None;
        }
        if self.phases.is_empty() {
            let (a, b) = self.measured_window();
            return Some(self.mean(name, a, b)? / self.measured_rps()?);
        }
        let (mut events, mut req) = (0.0, 0.0);
        for p in &self.phases {
            if let Some(m) = self.mean(name, p.start_ms, p.end_ms) {
                events += m * (p.end_ms - p.start_ms) / 1000.0;
                req += p.requests;
            }
        }
        (req > 0.0).then(|| events / req)
    }

    /// Samples inside a window (all of them when the profile has no time).
    pub fn samples_in(&self, a: f64, b: f64) -> impl Iterator<Item = &Sample> {
        self.samples
            .iter()
            .filter(move |s| s.t_ms.is_none_or(|t| t > a && t <= b))
    }

    /// Frame id of each node up to its root, leaf first.
    pub fn stack(&self, node: u32) -> Vec<u32> {
        let Some(p) = &self.run.profile else {
            return Vec::new();
        };
        let mut out = Vec::new();
        let mut n = node;
        // Bounded: a damaged tree must not loop.
        while let Some(&parent) = p.parent.get(n as usize) {
            if out.len() >= 4096 {
                break;
            }
            if let Some(f) = p.node_frame.get(n as usize) {
                out.push(self.frames.canon.get(*f as usize).copied().unwrap_or(*f));
            }
            n = parent;
        }
        out
    }

    /// The frame's function name (Python line numbers dropped).
    pub fn frame_name(&self, f: u32) -> &str {
        self.frames.name.get(f as usize).map_or("", String::as_str)
    }

    /// The frame's name, lowercase, for the patterns.
    pub fn frame_name_lc(&self, f: u32) -> &str {
        self.frames
            .name_lc
            .get(f as usize)
            .map_or("", String::as_str)
    }

    /// The frame's module, lowercase.
    pub fn frame_module_lc(&self, f: u32) -> &str {
        self.frames
            .module_lc
            .get(f as usize)
            .map_or("", String::as_str)
    }

    pub fn frame_module(&self, f: u32) -> &str {
        self.run
            .profile
            .as_ref()
            .and_then(|p| p.frames.get(f as usize))
            .map_or("", |f| f.module.as_str())
    }

    pub fn thread_name(&self, t: u32) -> String {
        self.run
            .profile
            .as_ref()
            .and_then(|p| p.threads.get(t as usize))
            .map_or_else(|| format!("thread {t}"), |th| th.comm.clone())
    }
}

trait Cores {
    fn machine_cores(&self) -> u32;
}

impl Cores for RunJson {
    fn machine_cores(&self) -> u32 {
        self.run.machine.cores
    }
}

fn measured_phases(run: &RunJson) -> Vec<MeasuredPhase> {
    let stored: Vec<&Phase> = run.phases.iter().filter(|p| !p.warmup).collect();
    let results: Vec<&serde_json::Value> = run
        .results
        .get("phases")
        .and_then(|p| p.as_array())
        .map(|a| a.iter().collect())
        .unwrap_or_default();
    stored
        .iter()
        .enumerate()
        .map(|(i, p)| {
            // Results list measured phases in the order run, as the store does.
            let r = results.get(i);
            let requests = r.and_then(|r| num(r, "requests")).unwrap_or(0.0);
            let secs = (p.end_ms - p.start_ms) / 1000.0;
            let rps = r.and_then(|r| num(r, "rps")).unwrap_or(if secs > 0.0 {
                requests / secs
            } else {
                0.0
            });
            let lat = r.and_then(|r| r.get("latency_ms"));
            MeasuredPhase {
                index: p.index,
                label: p.label.clone(),
                start_ms: p.start_ms,
                end_ms: p.end_ms,
                connections: p.connections,
                requests,
                rps,
                mean_ms: lat.and_then(|l| num(l, "mean")),
            }
        })
        .collect()
}

fn samples(run: &RunJson) -> Vec<Sample> {
    let Some(p) = &run.profile else {
        return Vec::new();
    };
    if let Some(c) = &p.counts {
        // A profile without time: counts per node stand in for samples.
        return c
            .iter()
            .enumerate()
            .filter(|(_, w)| **w > 0)
            .map(|(n, w)| Sample {
                node: n as u32,
                weight: *w as f64,
                t_ms: None,
                thread: None,
            })
            .collect();
    }
    let s = &p.samples;
    // Sample times count from the profile's `start_unix_ns` (the run's
    // start in a stored run); place them on the run's clock.
    let shift = p
        .start_unix_ns
        .map_or(0.0, |ns| ns as f64 / 1e6 - run.run.started_unix_ms as f64);
    s.node
        .iter()
        .enumerate()
        .map(|(i, n)| Sample {
            node: *n,
            weight: s
                .weight
                .as_ref()
                .and_then(|w| w.get(i))
                .map_or(1.0, |&w| w as f64),
            t_ms: s
                .time_ns
                .as_ref()
                .and_then(|t| t.get(i))
                .map(|&t| t as f64 / 1e6 + shift),
            thread: s.thread.as_ref().and_then(|t| t.get(i)).copied(),
        })
        .collect()
}
