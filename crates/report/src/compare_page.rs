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
    let (before, after) = (to_stacks(a)?, to_stacks(b)?);
    let d = keisoku_stacks::diff::diff(before, after, true);
    serde_json::from_slice(&keisoku_stacks::json::diff_json(&d)).ok()
}

/// Rebuilds a stacks profile (counts form) from profile JSON
/// (docs/profile-json.md), per-sample or counts form alike.
fn to_stacks(p: &Value) -> Option<keisoku_stacks::Profile> {
    use keisoku_stacks::model::NO_PARENT;
    use keisoku_stacks::{FrameKind, Profile, Unit};
    let strs = |ptr: &str| -> Option<Vec<&str>> {
        p.pointer(ptr)?
            .as_array()?
            .iter()
            .map(|v| v.as_str())
            .collect()
    };
    let ints = |ptr: &str| -> Option<Vec<i64>> {
        p.pointer(ptr)?
            .as_array()?
            .iter()
            .map(Value::as_i64)
            .collect()
    };
    let kinds = strs("/kinds")?;
    let (names, modules, kind_of) = (
        strs("/frames/name")?,
        strs("/frames/module")?,
        ints("/frames/kind")?,
    );
    let (parents, node_frames) = (ints("/nodes/parent")?, ints("/nodes/frame")?);
    if names.len() != modules.len()
        || names.len() != kind_of.len()
        || parents.len() != node_frames.len()
    {
        return None;
    }
    let unit = match p.get("unit").and_then(Value::as_str) {
        Some("nanoseconds") => Unit::Nanoseconds,
        Some("bytes") => Unit::Bytes,
        _ => Unit::Samples,
    };
    let title = p.get("title").and_then(Value::as_str).unwrap_or("profile");
    let mut out = Profile::new(title, unit);
    let frames: Vec<_> = names
        .iter()
        .zip(&modules)
        .zip(&kind_of)
        .map(|((name, module), k)| {
            let kind =
                FrameKind::from_name(usize::try_from(*k).ok().and_then(|k| kinds.get(k)).copied());
            out.frame_parts(name, module, kind)
        })
        .collect();
    // Parents precede children (the format's rule), so one pass maps ids.
    let mut ids = Vec::with_capacity(parents.len());
    for (parent, frame) in parents.iter().zip(&node_frames) {
        let frame = *frames.get(usize::try_from(*frame).ok()?)?;
        let parent = if *parent < 0 {
            NO_PARENT
        } else {
            *ids.get(usize::try_from(*parent).ok()?)?
        };
        ids.push(out.child(parent, frame));
    }
    let mut counts = vec![0u64; out.node_count()];
    let mut add = |node: i64, w: f64| -> Option<()> {
        let id = *ids.get(usize::try_from(node).ok()?)?;
        counts[id as usize] += w.max(0.0).round() as u64;
        Some(())
    };
    if let Some(samples) = p.get("samples").filter(|s| s.is_object()) {
        let nodes = samples.get("node")?.as_array()?;
        let weights = samples.get("weight").and_then(Value::as_array);
        for (i, n) in nodes.iter().enumerate() {
            let w = weights
                .and_then(|w| w.get(i))
                .and_then(Value::as_f64)
                .unwrap_or(1.0);
            add(n.as_i64()?, w)?;
        }
    } else {
        for (n, w) in p.get("counts")?.as_array()?.iter().enumerate() {
            add(n as i64, w.as_f64()?)?;
        }
    }
    out.counts = Some(counts);
    Some(out)
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
