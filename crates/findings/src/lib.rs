//! Rules that turn a stored run into findings with evidence.
//!
//! [`analyze`] reads a run as the store loads it ([`keisoku_store::RunJson`]:
//! series, phases, bench results, profile, routes) and returns findings
//! ranked by score. Each names what is wrong, the evidence (series, a time
//! range, phases, frames with their share of samples), an impact estimate
//! and what to try. Thresholds are relative (per request, shares, ratios)
//! and documented in docs/findings.md.

#![deny(missing_docs)]

mod errors;
mod model;
mod patterns;
mod rules;
mod view;
mod wall;

pub use model::{Evidence, Finding, FrameShare, Severity};
pub use rules::{
    BUSY_THREAD_SHARE, CONNECTS_PER_REQUEST, CONNECT_COST_SHARE, CONNECT_COST_US,
    CPU_BOUND_BUSY_PCT, GENERATOR_PCT, HOT_THREAD_PCT, IDLE_KNEE_BUSY_PCT, MAJFAULTS_PER_REQUEST,
    MIGRATIONS_PER_CORE_S, MIGRATIONS_PER_REQUEST, MIGRATION_COST_US, NIVCSW_PER_REQUEST,
    OVERSUBSCRIBED_CPU_GROWTH, OVERSUBSCRIBED_THREADS, PER_REQUEST_CONNECTS, ROUTE_SHARE,
    ROUTE_SLOW_RATIO, SCHED_COST_SHARE, SERVER_CLOSE_SHARE, SIBLING_SHARE, STALL_BIN_MS,
    STALL_DROP, STALL_MAX_BIN_MS, STALL_WORK_SHARE, WAIT_MIN_MS, WAIT_SHARE,
};
pub use rules::{
    CPU_BOUND_NVCSW_PER_REQUEST, HOT_THREAD_BUSY_HOST_PCT, STARVED_WAIT_PCT, WAIT_PROBLEM_MS,
    WALL_WAIT_PROBLEM_MS,
};
pub use rules::{
    LARGE_RESPONSE_BYTES, RESPONSE_BYTES_SHARE, RESPONSE_GROWTH, RESPONSE_GROWTH_MIN_BYTES,
    RESPONSE_TIME_SHARE, UNBOUNDED_MIN_REQUESTS,
};

use keisoku_store::RunJson;

/// Every rule over one run, findings ranked: problems before descriptions,
/// then by score.
pub fn analyze(run: &RunJson) -> Vec<Finding> {
    let v = view::View::new(run);
    let mut out = Vec::new();
    out.extend(rules::generator(&v));
    out.extend(rules::saturation(&v));
    out.extend(rules::single_core(&v));
    out.extend(rules::hot_code(&v));
    out.extend(rules::stalls(&v));
    out.extend(rules::scheduler_churn(&v));
    out.extend(rules::page_cache(&v));
    out.extend(rules::connection_churn(&v));
    out.extend(rules::route_dominating(&v));
    out.extend(rules::unbounded_response(&v));
    out.extend(rules::blocking_wait(&v));
    out.extend(errors::errors(run));
    rank(&mut out);
    out
}

/// Orders findings: problems first, then higher score, then id.
pub fn rank(findings: &mut [Finding]) {
    findings.sort_by(|a, b| {
        b.is_problem()
            .cmp(&a.is_problem())
            .then(b.score.total_cmp(&a.score))
            .then(a.id.cmp(&b.id))
    });
}

/// The findings as the Run JSON's `findings` array.
pub fn to_json(findings: &[Finding]) -> Vec<serde_json::Value> {
    findings.iter().map(Finding::to_json).collect()
}

/// Stored findings read back, skipping objects of another shape.
pub fn from_json(values: &[serde_json::Value]) -> Vec<Finding> {
    values.iter().filter_map(Finding::from_json).collect()
}

/// Findings as the terminal shows them: one block per finding.
pub fn render_text(findings: &[Finding]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    if findings.is_empty() {
        s.push_str("Findings: none (no rule saw a problem in this run)\n");
        return s;
    }
    let problems = findings.iter().filter(|f| f.is_problem()).count();
    let _ = writeln!(
        s,
        "Findings ({problems} problem{}, ranked)",
        if problems == 1 { "" } else { "s" }
    );
    for (i, f) in findings.iter().enumerate() {
        let _ = writeln!(
            s,
            "{:>2}. [{}] {}  ({})",
            i + 1,
            f.severity.as_str(),
            keisoku_common::terminal_safe(&f.title),
            f.id
        );
        for t in &f.evidence.text {
            let _ = writeln!(s, "      - {}", keisoku_common::terminal_safe(t));
        }
        for fr in f.evidence.frames.iter().take(3) {
            let _ = writeln!(
                s,
                "      - {:5.1}%  {}",
                fr.share * 100.0,
                keisoku_common::terminal_safe(&fr.name)
            );
        }
        if let Some([a, b]) = f.evidence.range_ms {
            let _ = writeln!(s, "      time {:.1}-{:.1} s", a / 1000.0, b / 1000.0);
        }
        if !f.impact.is_empty() {
            let _ = writeln!(s, "      impact: {}", f.impact);
        }
        if !f.suggestion.is_empty() {
            let _ = writeln!(s, "      try: {}", f.suggestion);
        }
    }
    s
}
