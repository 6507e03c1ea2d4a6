//! The comparison page of two runs (`keisoku compare`, `serve`'s
//! `/compare`): headline deltas, both sweeps, per-route deltas, the
//! differential flame graph and the regression gate's verdict. Rendered in
//! the browser by `web/src/pages/compare.ts`.

use serde::Serialize;
use serde_json::{json, Value};

use crate::assets;
use crate::compare::{
    self, Delta, FindingDelta, GateClause, GateVerdict, RelativeTimeline, RouteDelta, RunSummary,
};
use crate::run_page::check_version;
use crate::ReportError;

/// Everything the comparison page shows, computed once so the command line
/// (gate verdict, exit status) and the page agree.
#[derive(Debug, Clone, Serialize)]
pub struct Comparison {
    /// The baseline run.
    pub a: RunSummary,
    /// The run judged against it.
    pub b: RunSummary,
    /// Headline deltas.
    pub deltas: Vec<Delta>,
    /// Per-route deltas.
    pub routes: Vec<RouteDelta>,
    /// The regression gate's verdict, when a gate was given.
    pub gate: Option<GateVerdict>,
    /// Differential profile (docs/profile-json.md, "Differential profile"),
    /// when both runs have a profile.
    pub diff: Option<Value>,
    /// The findings of both runs matched by id: new, resolved, unchanged.
    pub findings: Vec<FindingDelta>,
    /// Both runs' rps, p99 and errors on seconds since each load started.
    pub timelines: Timelines,
    /// The function where the largest change of the profile landed.
    pub top_mover: Option<TopMover>,
    /// Whether JIT and per-run names were normalised before diffing.
    pub names_normalised: bool,
}

/// Both runs' headline series on one relative time axis.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Timelines {
    /// The baseline's.
    pub a: RelativeTimeline,
    /// B's.
    pub b: RelativeTimeline,
}

/// The top mover of a differential profile, as the gate box states it.
#[derive(Debug, Clone, Serialize)]
pub struct TopMover {
    /// Function name.
    pub frame: String,
    /// Module, "" when unknown.
    pub module: String,
    /// Share of A's samples in the function itself, percent.
    pub before_self_share_pct: f64,
    /// Share of B's samples in the function itself, percent.
    pub after_self_share_pct: f64,
    /// Share of A's samples through the function, percent.
    pub before_share_pct: f64,
    /// Share of B's samples through the function, percent.
    pub after_share_pct: f64,
}

impl TopMover {
    /// The change of self share in percentage points.
    pub fn delta_self_pp(&self) -> f64 {
        self.after_self_share_pct - self.before_self_share_pct
    }
}

/// How a comparison is computed.
#[derive(Debug, Clone, Copy)]
pub struct CompareOptions {
    /// Map JIT tier markers, lambda numbering and addresses to one name on
    /// both sides before diffing the profiles (`--no-normalise` turns it off).
    pub normalise_names: bool,
}

impl Default for CompareOptions {
    fn default() -> Self {
        CompareOptions {
            normalise_names: true,
        }
    }
}

/// Rows of the regression table in the terminal and `--json`.
const JSON_REGRESSION_ROWS: usize = 25;

impl Comparison {
    /// The comparison for `keisoku compare --json`: everything but the two
    /// embedded profiles, with the differential table cut to its top rows.
    pub fn summary_json(&self) -> Value {
        let mut v = serde_json::to_value(self).unwrap_or(Value::Null);
        let rows = self
            .diff
            .as_ref()
            .and_then(|d| d.get("table"))
            .and_then(Value::as_array)
            .map(|t| {
                t.iter()
                    .take(JSON_REGRESSION_ROWS)
                    .cloned()
                    .collect::<Vec<_>>()
            });
        if let Some(o) = v.as_object_mut() {
            o.remove("diff");
            o.insert(
                "profile_changes".into(),
                rows.map_or(Value::Null, Value::Array),
            );
        }
        v
    }
}

impl std::fmt::Display for Comparison {
    /// The terminal's view: both runs, the headline deltas with their units
    /// and which way they moved, and the gate's verdict.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "A: {} ({})", self.a.name, self.a.id)?;
        writeln!(f, "B: {} ({})", self.b.name, self.b.id)?;
        for d in &self.deltas {
            let unit = crate::compare::METRICS
                .iter()
                .find(|(m, _, _)| *m == d.metric)
                .map_or("", |m| m.1);
            let pct = d.pct.map_or("new".to_string(), |p| format!("{p:+.1}%"));
            let mark = match d.better {
                Some(true) => "better",
                Some(false) => "worse",
                None => "",
            };
            writeln!(
                f,
                "  {:<10} {:>12.3} -> {:>12.3} {:<8} {:>8}  {mark}",
                d.metric, d.a, d.b, unit, pct
            )?;
        }
        if let Some(m) = &self.top_mover {
            writeln!(
                f,
                "top mover: {} {:+.1}pp of samples in the function itself ({:.1}% -> {:.1}%)",
                m.frame,
                m.delta_self_pp(),
                m.before_self_share_pct,
                m.after_self_share_pct
            )?;
        }
        if !self.findings.is_empty() {
            writeln!(f, "findings:")?;
            for d in &self.findings {
                let Some(x) = d.b.as_ref().or(d.a.as_ref()) else {
                    continue;
                };
                writeln!(
                    f,
                    "  {:<9} {:<7} {}  [{}]",
                    d.change.as_str(),
                    x.severity,
                    x.title,
                    d.id
                )?;
            }
        }
        if let Some(v) = &self.gate {
            writeln!(f, "{v}")?;
        }
        Ok(())
    }
}

/// Compares run B against baseline A (both Run JSON), judging `gate` if given.
pub fn compare(
    a_json: &str,
    b_json: &str,
    gate: Option<&[GateClause]>,
) -> Result<Comparison, ReportError> {
    compare_with(a_json, b_json, gate, CompareOptions::default())
}

/// [`compare`] with options.
pub fn compare_with(
    a_json: &str,
    b_json: &str,
    gate: Option<&[GateClause]>,
    opts: CompareOptions,
) -> Result<Comparison, ReportError> {
    let a: Value = serde_json::from_str(a_json)?;
    let b: Value = serde_json::from_str(b_json)?;
    check_version(&a)?;
    check_version(&b)?;
    let (sa, sb) = (compare::summarize(&a)?, compare::summarize(&b)?);
    let gate = gate
        .map(|clauses| compare::judge_gate(clauses, &sa, &sb))
        .transpose()?;
    let (diff, top_mover) = match (profile_of(&a), profile_of(&b)) {
        (Some(pa), Some(pb)) => diff_profiles(pa, pb, opts.normalise_names),
        _ => (None, None),
    };
    Ok(Comparison {
        deltas: compare::deltas(&sa, &sb),
        routes: compare::route_deltas(&sa, &sb),
        a: sa,
        b: sb,
        gate,
        diff,
        findings: compare::finding_changes(&compare::findings_of(&a), &compare::findings_of(&b)),
        timelines: Timelines {
            a: compare::relative_timeline(&a),
            b: compare::relative_timeline(&b),
        },
        top_mover,
        names_normalised: opts.normalise_names,
    })
}

/// Renders the comparison page.
pub fn compare_page(cmp: &Comparison, served: bool) -> Result<String, ReportError> {
    let data = json!({ "served": served, "comparison": cmp });
    assets::page(
        &format!("keisoku compare: {} vs {}", cmp.a.name, cmp.b.name),
        "compare",
        &serde_json::to_string(&data)?,
    )
    .ok_or_else(|| ReportError::MissingPage("compare".into()))
}

fn profile_of(run: &Value) -> Option<&Value> {
    run.get("profile").filter(|p| p.is_object())
}

/// A normalised differential profile (crates/stacks computes it, with the
/// regression table) and its top mover: runs differ in length and load, so
/// shares of each total are what is comparable. Frame names are normalised
/// first when asked (JIT tiers and per-run numbering would otherwise split
/// one function in two). `None` when either profile is unreadable.
fn diff_profiles(a: &Value, b: &Value, normalise_names: bool) -> (Option<Value>, Option<TopMover>) {
    let read = |p: &Value| {
        keisoku_stacks::json::deserialize_profile(p).ok().map(|p| {
            if normalise_names {
                keisoku_stacks::normalise::normalise(&p)
            } else {
                p
            }
        })
    };
    let (Some(pa), Some(pb)) = (read(a), read(b)) else {
        return (None, None);
    };
    let d = keisoku_stacks::diff::diff(pa, pb, true);
    let top = keisoku_stacks::diff::top_mover(&d).map(|r| TopMover {
        frame: r.frame.clone(),
        module: r.module.clone(),
        before_self_share_pct: r.before_self_share_pct,
        after_self_share_pct: r.after_self_share_pct,
        before_share_pct: r.before_share_pct,
        after_share_pct: r.after_share_pct,
    });
    (
        serde_json::from_slice(&keisoku_stacks::json::diff_json(&d)).ok(),
        top,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(id: &str, p99: f64, profile: Value) -> String {
        json!({
            "version": 1,
            "run": {"id": id, "name": id},
            "results": {"rps": 100.0, "requests": 100, "errors": 0, "latency_ms": {"p99": p99}},
            "routes": {"client": [], "access_log": []},
            "profile": profile,
        })
        .to_string()
    }

    #[test]
    fn profiles_fold_into_counts_for_the_diff() {
        let p = json!({"version": 1, "frames": {"name": ["a", "b"], "module": ["", ""], "kind": [1, 1]}, "kinds": ["kernel", "native"],
                       "nodes": {"parent": [-1, 0], "frame": [0, 1]},
                       "samples": {"node": [1, 1, 0], "weight": null, "time_ms": [0, 1, 2], "thread": null},
                       "counts": null});
        let cmp = compare(&run("a", 10.0, p.clone()), &run("b", 12.0, p), None).unwrap();
        let diff = cmp.diff.clone().unwrap();
        assert_eq!(diff["mode"], "normalized");
        // Node 1 (a;b) took two samples, node 0 (a) one.
        assert_eq!(diff["before"]["counts"], json!([1, 2]));
        assert!(diff["after"]["samples"].is_null());
        let rows = diff["table"].as_array().unwrap();
        assert!(rows
            .iter()
            .any(|r| r["frame"] == "b" && r["before_self"] == 2));
        let html = compare_page(&cmp, false).unwrap();
        assert!(html.contains("\"deltas\""));
    }

    #[test]
    fn gate_verdict_comes_with_the_comparison() {
        let gate = compare::parse_gate("p99>+10%").unwrap();
        let cmp = compare(
            &run("a", 10.0, Value::Null),
            &run("b", 12.0, Value::Null),
            Some(&gate),
        )
        .unwrap();
        assert!(!cmp.gate.unwrap().pass);
        assert!(cmp.diff.is_none());
    }
}
