//! The run report: one self-contained HTML page per stored run, rendered in
//! the browser from the embedded Run JSON (docs/run-json.md) by
//! `web/src/pages/report.ts`.

use serde_json::Value;

use crate::assets;
use crate::ReportError;

/// Where a report page is shown; `serve` adds navigation and may preselect
/// a time range.
#[derive(Debug, Clone, Default)]
pub struct PageContext {
    /// True when served by `keisoku serve` (links back to the run list).
    pub served: bool,
    /// A time range to select on load, milliseconds since the run's start.
    pub range_ms: Option<(f64, f64)>,
}

/// Renders the report of one run from its Run JSON.
pub fn run_page(run_json: &str, ctx: &PageContext) -> Result<String, ReportError> {
    let mut run: Value = serde_json::from_str(run_json)?;
    check_version(&run)?;
    let title = title_of(&run);
    let deltas = take_profile_time_deltas(&mut run);
    let data = format!(
        "{{\"served\":{},\"range_ms\":{},\"profile_time_delta_us\":{},\"run\":{}}}",
        ctx.served,
        match ctx.range_ms {
            Some((a, b)) => format!("[{a},{b}]"),
            None => "null".into(),
        },
        match deltas {
            Some(d) => serde_json::to_string(&d)?,
            None => "null".into(),
        },
        serde_json::to_string(&run)?
    );
    assets::page(&format!("keisoku report: {title}"), "report", &data)
        .ok_or_else(|| ReportError::MissingPage("report".into()))
}

/// Rejects JSON that is not a version-1 run, naming what is wrong.
pub fn check_version(run: &Value) -> Result<(), ReportError> {
    if !run.is_object() {
        return Err(ReportError::Invalid("expected a JSON object".into()));
    }
    match run.get("version").and_then(Value::as_u64) {
        Some(1) => {}
        Some(v) => {
            return Err(ReportError::Invalid(format!(
                "version {v} is not supported (this keisoku reads version 1)"
            )))
        }
        None => return Err(ReportError::Invalid("no \"version\" field".into())),
    }
    if !run.get("run").is_some_and(Value::is_object) {
        return Err(ReportError::Invalid("no \"run\" object".into()));
    }
    Ok(())
}

/// The name a person knows the run by.
pub fn title_of(run: &Value) -> String {
    let meta = run.get("run");
    let get = |k: &str| meta.and_then(|m| m.get(k)).and_then(Value::as_str);
    match (get("name").filter(|n| !n.is_empty()), get("id")) {
        (Some(name), Some(id)) => format!("{name} ({id})"),
        (Some(name), None) => name.to_string(),
        (None, Some(id)) => id.to_string(),
        (None, None) => "run".to_string(),
    }
}

/// Moves the profile's sample times out of the profile as microsecond
/// deltas (`web/src/pages/report.ts` restores them). A million samples'
/// absolute times with full digits would be most of a report's bytes and of
/// the browser's parse time; deltas of sorted times are a few digits each,
/// and a microsecond is far finer than a heat-map cell (20 ms).
fn take_profile_time_deltas(run: &mut Value) -> Option<Vec<i64>> {
    let times = run.pointer_mut("/profile/samples/time_ms")?;
    let list = times.as_array()?;
    let mut deltas = Vec::with_capacity(list.len());
    let mut prev = 0i64;
    for t in list {
        // Only finite, in-range numbers can round-trip; otherwise leave the
        // profile as it was and let the UI's validation name the problem.
        let us = t
            .as_f64()
            .filter(|x| x.is_finite() && x.abs() < 9.0e15 / 1000.0)?
            * 1000.0;
        let us = us.round() as i64;
        deltas.push(us - prev);
        prev = us;
    }
    *times = Value::Null;
    Some(deltas)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn page_embeds_the_run_and_the_bundle() {
        let json = r#"{"version":1,"run":{"id":"r1","name":"</script>x"},"series":[],
            "profile":{"samples":{"time_ms":[1.23456789,2]}}}"#;
        let html = run_page(json, &PageContext::default()).unwrap();
        assert!(html.contains("keisoku report: &lt;/script&gt;x (r1)"));
        assert!(
            html.contains(r#""profile_time_delta_us":[1235,765]"#),
            "times as µs deltas"
        );
        assert!(html.contains(r#""time_ms":null"#));
        assert!(!html.contains("1.23456789"));
        assert_eq!(html.matches("</script>").count(), 2);
    }

    #[test]
    fn wrong_versions_and_shapes_are_named() {
        for (json, want) in [
            ("[]", "object"),
            (r#"{"version":2,"run":{}}"#, "version 2"),
            (r#"{"run":{}}"#, "version"),
            (r#"{"version":1}"#, "\"run\""),
        ] {
            let e = run_page(json, &PageContext::default()).unwrap_err();
            assert!(e.to_string().contains(want), "{json}: {e}");
        }
        assert!(matches!(
            run_page("{", &PageContext::default()),
            Err(ReportError::Json(_))
        ));
    }
}
