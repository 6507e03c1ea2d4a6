//! The comparison page of two runs (`keisoku compare`, `serve`'s
//! `/compare`): headline deltas, both sweeps, per-route deltas, the
//! differential flame graph and the regression gate's verdict. Rendered in
//! the browser by `web/src/pages/compare.ts`.

use serde::Serialize;
use serde_json::{json, Value};

use crate::assets;
use crate::compare::{self, Delta, GateClause, GateVerdict, RouteDelta, RunSummary};
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
    let a: Value = serde_json::from_str(a_json)?;
    let b: Value = serde_json::from_str(b_json)?;
    check_version(&a)?;
    check_version(&b)?;
    let (sa, sb) = (compare::summarize(&a)?, compare::summarize(&b)?);
    let gate = gate
        .map(|clauses| compare::judge_gate(clauses, &sa, &sb))
        .transpose()?;
    let diff = match (profile_of(&a), profile_of(&b)) {
        (Some(pa), Some(pb)) => diff_profiles(pa, pb),
        _ => None,
    };
    Ok(Comparison {
        deltas: compare::deltas(&sa, &sb),
        routes: compare::route_deltas(&sa, &sb),
        a: sa,
        b: sb,
        gate,
        diff,
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
/// regression table): runs differ in length and load, so shares of each
/// total are what is comparable. `None` when either profile is unreadable.
fn diff_profiles(a: &Value, b: &Value) -> Option<Value> {
    let read = |p: &Value| keisoku_stacks::json::deserialize_profile(p).ok();
    let d = keisoku_stacks::diff::diff(read(a)?, read(b)?, true);
    serde_json::from_slice(&keisoku_stacks::json::diff_json(&d)).ok()
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
