//! Scenario results: iterations (rate, latency, failures) and, per step,
//! the failures that are not transport errors (checks, extractions). The
//! steps' requests, statuses and latencies are the run's per-target
//! results (each step is a route), so the route table shows them.

use super::user::Failure;
use crate::report::{LatencySummary, Stats, Tally, SIGFIG};
use crate::slo::{Slo, Verdict};
use serde::Serialize;

/// Per step: why its answered requests failed.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StepFailures {
    /// The status was not one of `checks.status`.
    pub check_status: u64,
    /// The body lacked `checks.body_contains`.
    pub check_body: u64,
    /// A `checks.json` check failed.
    pub check_json: u64,
    /// An extraction found nothing.
    pub extract_missing: u64,
}

impl StepFailures {
    /// Counts one.
    pub fn add(&mut self, f: Failure) {
        match f {
            Failure::Status => self.check_status += 1,
            Failure::Body => self.check_body += 1,
            Failure::Json => self.check_json += 1,
            Failure::Extract => self.extract_missing += 1,
        }
    }

    /// All of them.
    pub fn total(&self) -> u64 {
        self.check_status + self.check_body + self.check_json + self.extract_missing
    }

    fn merge(&mut self, o: &StepFailures) {
        self.check_status += o.check_status;
        self.check_body += o.check_body;
        self.check_json += o.check_json;
        self.extract_missing += o.extract_missing;
    }
}

/// What one worker (or, merged, a phase) counted of its iterations.
#[derive(Debug, Clone)]
pub struct ScenarioTally {
    /// Ended iterations: latency from the (intended) start to the last
    /// step's answer or the failure; `requests` counts them.
    pub iterations: Tally,
    /// Iterations that ended in a failure (transport error, check or
    /// extraction).
    pub failed: u64,
    /// Iterations cut by the end of the run (not ended, not failed).
    pub unfinished: u64,
    /// Open model: iterations due but never started (no free user before
    /// the end); each is charged in the latency as (end - intended start).
    pub unsent: u64,
    /// Per step.
    pub steps: Vec<StepFailures>,
    /// Per step: transport errors.
    pub transport: Vec<u64>,
}

impl ScenarioTally {
    /// An empty tally for `steps` steps.
    pub fn new(steps: usize, high_us: u64, open: bool) -> ScenarioTally {
        ScenarioTally {
            iterations: Tally::new(high_us, SIGFIG, open),
            failed: 0,
            unfinished: 0,
            unsent: 0,
            steps: vec![StepFailures::default(); steps],
            transport: vec![0; steps],
        }
    }

    /// Adds another.
    pub fn merge(&mut self, o: &ScenarioTally) {
        self.iterations.merge(&o.iterations);
        self.failed += o.failed;
        self.unfinished += o.unfinished;
        self.unsent += o.unsent;
        for (a, b) in self.steps.iter_mut().zip(&o.steps) {
            a.merge(b);
        }
        for (a, b) in self.transport.iter_mut().zip(&o.transport) {
            *a += b;
        }
    }

    /// The iterations as statistics an SLO judges: `requests` are ended
    /// iterations, `errors` the failed ones.
    pub fn stats(&self, duration_s: f64) -> Stats {
        let mut s = self.iterations.stats(duration_s);
        s.errors = self.failed;
        s.error_rate = if s.requests == 0 {
            0.0
        } else {
            self.failed as f64 / s.requests as f64 * 100.0
        };
        s
    }
}

/// One step in the results.
#[derive(Debug, Clone, Serialize)]
pub struct StepReport {
    /// Its name (the route).
    pub name: String,
    /// In the once block.
    pub once: bool,
    /// Method.
    pub method: String,
    /// URL (variables shown as `0`).
    pub url: String,
    /// Answered requests.
    pub requests: u64,
    /// Transport errors.
    pub errors_transport: u64,
    /// Failures of answered requests.
    #[serde(flatten)]
    pub failures: StepFailures,
    /// Latency of the step's requests.
    pub latency_ms: LatencySummary,
}

/// Iterations of one phase.
#[derive(Debug, Clone, Serialize)]
pub struct IterationPhase {
    /// The phase's label.
    pub label: String,
    /// Iteration numbers.
    #[serde(flatten)]
    pub iterations: IterationStats,
}

/// Iteration numbers of a slice.
#[derive(Debug, Clone, Serialize)]
pub struct IterationStats {
    /// Ended iterations (passed and failed).
    pub iterations: u64,
    /// Of those, failed.
    pub failed: u64,
    /// Cut by the end of the run.
    pub unfinished: u64,
    /// Open model: due but never started; charged in the latency.
    pub unsent: u64,
    /// Ended iterations per second.
    pub rate: f64,
    /// Iteration latency (open model: from the intended start).
    pub latency_ms: LatencySummary,
    /// The statistics an SLO judges (iterations as requests).
    #[serde(skip)]
    pub stats: Stats,
}

impl IterationStats {
    /// From a tally over `duration_s`.
    pub fn new(t: &ScenarioTally, duration_s: f64) -> IterationStats {
        let stats = t.stats(duration_s);
        IterationStats {
            iterations: stats.requests,
            failed: t.failed,
            unfinished: t.unfinished,
            unsent: t.unsent,
            rate: stats.rps,
            latency_ms: stats.latency_ms.clone(),
            stats,
        }
    }
}

/// The scenario part of a report.
#[derive(Debug, Clone, Serialize)]
pub struct ScenarioReport {
    /// The scenario file.
    pub file: String,
    /// What an SLO judges in a scenario run: always `iterations`.
    pub slo_basis: &'static str,
    /// Over the measured phases.
    #[serde(flatten)]
    pub overall: IterationStats,
    /// Per measured phase.
    pub phases: Vec<IterationPhase>,
    /// Per step, in order (once block first).
    pub steps: Vec<StepReport>,
}

/// Judges the iterations of every phase and of the run against `slo`
/// (a scenario's unit of work is the iteration, not the request).
pub fn judge(report: &mut crate::Report, slo: &Slo) -> Option<bool> {
    let sc = report.scenario.as_ref()?;
    let verdicts: Vec<Verdict> = sc
        .phases
        .iter()
        .map(|p| slo.judge(&p.iterations.stats))
        .collect();
    let overall = slo.judge(&sc.overall.stats);
    for (p, v) in report.phases.iter_mut().zip(verdicts) {
        p.slo = Some(v);
    }
    report.best_passing_phase = report
        .phases
        .iter()
        .filter(|p| p.slo.as_ref().is_some_and(|v| v.pass))
        .max_by(|a, b| a.load().total_cmp(&b.load()))
        .map(|p| p.index);
    let pass = if report.phases.len() > 1 {
        report.best_passing_phase.is_some()
    } else {
        overall.pass
    };
    report.slo = Some(overall);
    Some(pass)
}

/// The terminal section: iterations, then one line per step.
pub fn text(r: &ScenarioReport) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let o = &r.overall;
    let _ = writeln!(out, "\nScenario {} (an SLO judges iterations)", r.file);
    let _ = writeln!(
        out,
        "  iterations {}  failed {}  unfinished {}  unsent {}  rate {:.1}/s  latency p50 {:.2} ms  p90 {:.2} ms  p99 {:.2} ms  max {:.2} ms",
        o.iterations, o.failed, o.unfinished, o.unsent, o.rate, o.latency_ms.p50, o.latency_ms.p90, o.latency_ms.p99, o.latency_ms.max
    );
    let w = r
        .steps
        .iter()
        .map(|s| s.name.len())
        .max()
        .unwrap_or(4)
        .max(4);
    let _ = writeln!(
        out,
        "  {:<w$}  {:>8}  {:>9}  {:>7}  {:>6}  {:>6}  {:>7}  {:>9}  {:>9}",
        "step", "requests", "transport", "status", "body", "json", "extract", "p50 ms", "p99 ms"
    );
    for s in &r.steps {
        let f = &s.failures;
        let _ = writeln!(
            out,
            "  {:<w$}  {:>8}  {:>9}  {:>7}  {:>6}  {:>6}  {:>7}  {:>9.2}  {:>9.2}{}",
            s.name,
            s.requests,
            s.errors_transport,
            f.check_status,
            f.check_body,
            f.check_json,
            f.extract_missing,
            s.latency_ms.p50,
            s.latency_ms.p99,
            if s.once { "  (once)" } else { "" }
        );
    }
    out
}
