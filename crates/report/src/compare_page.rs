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
        (Some(pa), Some(pb)) => Some(diff_profiles(pa, pb)),
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

/// A normalised differential profile: runs differ in length and load, so
/// shares of each total are what is comparable.
fn diff_profiles(a: &Value, b: &Value) -> Value {
    json!({
        "version": 1,
        "mode": "normalized",
        "before": counts_form(a),
        "after": counts_form(b),
        "table": [],
    })
}

/// The profile with per-sample columns folded into self weight per node
/// (the "counts" form), which is all a differential view needs.
fn counts_form(p: &Value) -> Value {
    let mut out = p.clone();
    let Some(obj) = out.as_object_mut() else {
        return out;
    };
    let nodes = p
        .pointer("/nodes/parent")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    if let Some(samples) = p.get("samples").filter(|s| s.is_object()) {
        let mut counts = vec![0.0f64; nodes];
        let weights = samples.get("weight").and_then(Value::as_array);
        if let Some(ids) = samples.get("node").and_then(Value::as_array) {
            for (i, id) in ids.iter().enumerate() {
                let w = weights
                    .and_then(|w| w.get(i))
                    .and_then(Value::as_f64)
                    .unwrap_or(1.0);
                if let Some(slot) = id
                    .as_u64()
                    .and_then(|n| usize::try_from(n).ok())
                    .and_then(|n| counts.get_mut(n))
                {
                    *slot += w;
                }
            }
        }
        obj.insert("samples".into(), Value::Null);
        obj.insert("counts".into(), json!(counts));
    }
    out
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
        let p = json!({"version": 1, "frames": {"name": ["a", "b"], "module": ["", ""], "kind": [1, 1]},
                       "nodes": {"parent": [-1, 0], "frame": [0, 1]},
                       "samples": {"node": [1, 1, 0, 7], "weight": null, "time_ms": [0, 1, 2, 3], "thread": null},
                       "counts": null});
        let cmp = compare(&run("a", 10.0, p.clone()), &run("b", 12.0, p), None).unwrap();
        let diff = cmp.diff.clone().unwrap();
        assert_eq!(diff["before"]["counts"], json!([1.0, 2.0]));
        assert!(diff["after"]["samples"].is_null());
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
