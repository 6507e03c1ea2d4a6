//! What `keisoku demo` does around the target: the sides it runs (naive,
//! tuned), the sweep plan that loads them, the knob check (the demo knows
//! which problems it planted, so it can say whether the findings named
//! them) and the naive-vs-tuned comparison. The binary parses the flags and
//! prints; this module decides.

use crate::{sample_requests, DemoError, Knobs};
use keisoku_load::plan::{parse_sweep, PhaseSpec};
use keisoku_load::{render, LoadError, Plan, Report, Target};
use std::fmt::Write;
use std::time::Duration;

/// The default SLO: the field notes' bidders live by "50 ms or die" (§2)
/// with a 3 ms mean (§1); the tuned target meets this on 2 cores up to its
/// knee, the naive one does not.
pub const DEFAULT_SLO: &str = "p99<=50ms,p80<=10ms,errors<=0.1%";
/// Connections per phase of the default sweep (doubling, as `ab -c` runs were stepped by hand).
pub const DEFAULT_SWEEP: &str = "1,2,4,8,16,32,64";
/// Distinct bid requests rotated by the load (one in eight gets no bid).
const SAMPLE_BODIES: usize = 8;

/// One side of the demo: a name and the knobs its target runs with.
#[derive(Debug, Clone)]
pub struct Side {
    /// `naive`, `naive (KNOB)` or `tuned`.
    pub name: String,
    /// The target's knob settings.
    pub knobs: Knobs,
}

/// The sides to run: naive (every knob, or only `knob`) then tuned; only
/// the naive side with `naive_only`, only the tuned one with `tuned_only`.
pub fn sides(
    knob: Option<&str>,
    naive_only: bool,
    tuned_only: bool,
) -> Result<Vec<Side>, DemoError> {
    let naive = match knob {
        Some(name) => Side {
            name: format!("naive ({name})"),
            knobs: Knobs::only(name)?,
        },
        None => Side {
            name: "naive".into(),
            knobs: Knobs::all_naive(),
        },
    };
    let tuned = Side {
        name: "tuned".into(),
        knobs: Knobs::all_tuned(),
    };
    Ok(if tuned_only {
        vec![tuned]
    } else if naive_only {
        vec![naive]
    } else {
        vec![naive, tuned]
    })
}

/// A connection list that is not one: `{text:?}: {why}`.
#[derive(Debug, thiserror::Error)]
#[error("{text:?}: {why}")]
pub struct SweepError {
    /// The list as given.
    pub text: String,
    /// What is wrong with it.
    pub why: String,
}

/// Connections per phase from `1,2,4` or `A..B:STEP`, each a whole number
/// in 1..10000.
pub fn parse_connections(text: &str) -> Result<Vec<usize>, SweepError> {
    let bad = |why: String| SweepError {
        text: text.to_string(),
        why,
    };
    let values: Vec<f64> = if text.contains("..") {
        parse_sweep(text).map_err(|e| bad(e.to_string()))?
    } else {
        text.split(',')
            .map(|s| {
                s.trim()
                    .parse::<f64>()
                    .map_err(|_| bad(format!("`{}` is not a connection count", s.trim())))
            })
            .collect::<Result<_, _>>()?
    };
    let mut out = Vec::new();
    for v in values {
        if v.fract() != 0.0 || !(1.0..=10_000.0).contains(&v) {
            return Err(bad(format!(
                "{v} is not a whole number of connections in 1..10000"
            )));
        }
        out.push(v as usize);
    }
    if out.is_empty() {
        return Err(bad("no phase".into()));
    }
    Ok(out)
}

/// The closed-model sweep against the target at `url` (`http://IP:PORT`):
/// `POST /bid` with rotating sample bodies, one phase per connection count.
pub fn plan_for(
    url: &str,
    sweep: &[usize],
    step: Duration,
    warmup: Duration,
) -> Result<Plan, LoadError> {
    let url = format!("{url}/bid");
    let targets = sample_requests(SAMPLE_BODIES)
        .into_iter()
        .map(|body| Target::new("POST", &url, body.into_bytes(), 1))
        .collect::<Result<Vec<_>, _>>()?;
    let mut plan = Plan::new(targets);
    plan.headers = vec![("Content-Type".into(), "application/json".into())];
    plan.warmup = warmup;
    plan.timeout = Duration::from_secs(5);
    plan.phases = sweep
        .iter()
        .map(|&c| PhaseSpec {
            connections: c,
            rate: None,
            duration: step,
            requests: None,
            ramp: None,
        })
        .collect();
    Ok(plan)
}

/// Whether the findings named one naive knob's problem: the demo knows the
/// truth, so it can show how well the rules found it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct KnobCheck {
    /// The naive knob.
    pub knob: &'static str,
    /// Finding ids that name this knob's problem.
    pub expected: &'static [&'static str],
    /// The first of them among the findings.
    pub found: Option<String>,
    /// Its rank among the findings (1 = first).
    pub rank: Option<usize>,
}

/// Checks every naive knob of `knobs` against `findings` (best first).
pub fn knob_check(knobs: &Knobs, findings: &[keisoku_findings::Finding]) -> Vec<KnobCheck> {
    knobs
        .naive_names()
        .into_iter()
        .map(|knob| {
            let expected = Knobs::finding_ids(knob);
            let hit = findings
                .iter()
                .enumerate()
                .find(|(_, f)| expected.contains(&f.id.as_str()));
            KnobCheck {
                knob,
                expected,
                found: hit.map(|(_, f)| f.id.clone()),
                rank: hit.map(|(i, _)| i + 1),
            }
        })
        .collect()
}

/// The knob check as the demo prints it (nothing when no knob is naive).
pub fn render_knob_check(checks: &[KnobCheck]) -> String {
    if checks.is_empty() {
        return String::new();
    }
    let mut text = String::from("Naive knobs and the findings that name them\n");
    for c in checks {
        let line = match (&c.found, c.rank) {
            (Some(id), Some(rank)) => format!("found: {id} (#{rank})"),
            _ => format!(
                "not named in this run (expected {})",
                c.expected.join(" or ")
            ),
        };
        text.push_str(&format!("  {:<20} {line}\n", c.knob));
    }
    if checks.iter().any(|c| c.found.is_none()) {
        text.push_str("  (a large problem can hide smaller ones; `keisoku demo --knob NAME` shows one alone; docs/demo.md)\n");
    }
    text
}

/// Naive against tuned: peak throughput, and p99 at the highest load both
/// sides measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Comparison {
    /// The naive side's best phase throughput (req/s).
    pub naive_peak_rps: f64,
    /// The tuned side's best phase throughput (req/s).
    pub tuned_peak_rps: f64,
    /// tuned / naive peak (0 when naive served nothing).
    pub throughput_gain: f64,
    /// The connection count p99 is compared at.
    pub at_connections: usize,
    /// The naive side's p99 there (ms).
    pub naive_p99_ms: f64,
    /// The tuned side's p99 there (ms).
    pub tuned_p99_ms: f64,
}

/// Compares the two sides' load reports; `None` when they share no phase.
pub fn compare(naive: &Report, tuned: &Report) -> Option<Comparison> {
    let peak = |r: &Report| r.phases.iter().map(|p| p.stats.rps).fold(0.0, f64::max);
    // Compare p99 at the highest load both sides measured.
    let (a, b) = naive.phases.iter().rev().find_map(|p| {
        tuned
            .phases
            .iter()
            .find(|q| q.connections == p.connections)
            .map(|q| (p, q))
    })?;
    let (np, tp) = (peak(naive), peak(tuned));
    Some(Comparison {
        naive_peak_rps: np,
        tuned_peak_rps: tp,
        throughput_gain: if np > 0.0 { tp / np } else { 0.0 },
        at_connections: a.connections,
        naive_p99_ms: a.stats.latency_ms.p99,
        tuned_p99_ms: b.stats.latency_ms.p99,
    })
}

/// One side's results as the demo prints them: the sweep table, the knee,
/// the SLO verdict, the target's work per request and the load's warnings.
pub fn render_side(
    side: &Side,
    report: &Report,
    pass: bool,
    stats: Option<&serde_json::Value>,
) -> String {
    let mut out = String::new();
    if report.partial {
        let _ = writeln!(
            out,
            "PARTIAL: interrupted; the table covers only the phases measured"
        );
    }
    let _ = writeln!(out, "{}", render::sweep_table(report).trim_end());
    if report.knee.is_none() && report.phases.len() <= 2 {
        let _ = writeln!(out, "knee: too few phases to find one");
    }
    if let Some(v) = &report.slo {
        let failed = v.failed();
        let best = report
            .best_passing_phase
            .and_then(|b| report.phases.get(b))
            .map(|p| format!("met up to {}", p.label))
            .unwrap_or_else(|| "met by no phase".into());
        let _ = writeln!(
            out,
            "SLO {}: {} ({best}; over the whole run {})",
            if pass { "PASS" } else { "FAIL" },
            v.clauses
                .iter()
                .map(|c| c.clause.as_str())
                .collect::<Vec<_>>()
                .join(","),
            if failed.is_empty() {
                "every clause held".to_string()
            } else {
                format!("failed {}", failed.join(","))
            }
        );
    }
    if let Some(s) = stats {
        let _ = writeln!(out, "target work per request: {}", per_request(s));
    }
    for w in &report.warnings {
        let _ = writeln!(out, "WARNING: {w}");
    }
    let _ = writeln!(out, "({} done)\n", side.name);
    out
}

/// As the demo prints it: `== naive vs tuned`, peak throughput, p99.
impl std::fmt::Display for Comparison {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "== naive vs tuned")?;
        writeln!(
            f,
            "peak throughput: {:.1} -> {:.1} req/s ({:.1}x)",
            self.naive_peak_rps, self.tuned_peak_rps, self.throughput_gain
        )?;
        writeln!(
            f,
            "p99 at {} connections: {} -> {}",
            self.at_connections,
            render::ms(self.naive_p99_ms),
            render::ms(self.tuned_p99_ms)
        )
    }
}

/// `all naive`, `all tuned` or `naive: a, b; the rest tuned`.
pub fn describe(knobs: &Knobs) -> String {
    let naive = knobs.naive_names();
    match naive.len() {
        0 => "all tuned".into(),
        8 => "all naive".into(),
        _ => format!("naive: {}; the rest tuned", naive.join(", ")),
    }
}

/// The counters of `GET /stats` that tell the knobs apart, per request served.
pub fn per_request(stats: &serde_json::Value) -> String {
    let n = stats["requests"].as_f64().unwrap_or(0.0).max(1.0);
    let get = |k: &str| stats[k].as_f64().unwrap_or(0.0);
    format!(
        "{:.2} config loads, {:.2} regex compiles, {:.2} cache JSON parses, {:.2} backend connects, {:.2} external posts ({:.1} ms waited), {} log rollovers ({} in the request path, longest {:.0} ms), {} workers ({} pinned)",
        get("config_loads") / n,
        get("regex_compiles") / n,
        get("cache_json_parses") / n,
        get("backend_connects") / n,
        get("external_posts") / n,
        get("external_wait_ns") / n / 1e6,
        get("log_rollovers"),
        get("log_rollovers_blocking"),
        get("log_rollover_max_ns") / 1e6,
        get("workers"),
        get("workers_pinned"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connection_lists_and_ranges() {
        assert_eq!(parse_connections("1, 2,4").ok(), Some(vec![1, 2, 4]));
        assert_eq!(parse_connections("1..3:1").ok(), Some(vec![1, 2, 3]));
        for bad in ["", "0", "1.5", "x", "20000"] {
            assert!(parse_connections(bad).is_err(), "{bad}");
        }
        let e = parse_connections("2,x").err().map(|e| e.to_string());
        assert_eq!(e.as_deref(), Some("\"2,x\": `x` is not a connection count"));
    }

    #[test]
    fn sides_follow_the_flags() {
        let names = |s: Vec<Side>| s.into_iter().map(|s| s.name).collect::<Vec<_>>();
        assert_eq!(
            names(sides(None, false, false).unwrap()),
            ["naive", "tuned"]
        );
        assert_eq!(names(sides(None, false, true).unwrap()), ["tuned"]);
        assert_eq!(
            names(sides(Some("formatter"), true, false).unwrap()),
            ["naive (formatter)"]
        );
        assert!(sides(Some("nope"), false, false).is_err());
    }

    #[test]
    fn knob_check_ranks_the_first_matching_finding() {
        let knobs = Knobs::only("json-cache").unwrap();
        let expected = Knobs::finding_ids("json-cache");
        let checks = knob_check(&knobs, &[]);
        assert_eq!(checks.len(), 1);
        assert_eq!(checks[0].found, None);
        let text = render_knob_check(&checks);
        assert!(text.contains("not named in this run (expected "), "{text}");
        assert!(text.contains(expected[0]), "{text}");
        assert_eq!(render_knob_check(&[]), "");
    }

    #[test]
    fn describe_names_the_naive_knobs() {
        assert_eq!(describe(&Knobs::all_naive()), "all naive");
        assert_eq!(describe(&Knobs::all_tuned()), "all tuned");
        assert_eq!(
            describe(&Knobs::only("formatter").unwrap()),
            "naive: formatter; the rest tuned"
        );
    }
}
