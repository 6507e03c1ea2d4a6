//! What every `keisoku logs` input prints: the route table, or the
//! timeline, plus the slowest requests; and the dump it saves.

use crate::error::{Error, Result};
use crate::options::Options;
use crate::render::{self, OutputFormat};
use crate::stats::{Analysis, RouteStats};
use crate::view;

/// The text to print for `routes` (the table) and `analysis` (its
/// timeline and slowest requests, absent for a loaded dump), after
/// writing `opts.dump` from the analysis.
pub fn render(
    opts: &Options,
    routes: Vec<RouteStats>,
    analysis: Option<&Analysis>,
) -> Result<String> {
    let mut out = render::Out::string();
    emit(opts, routes, analysis, &mut out)?;
    Ok(out.into_string())
}

/// [`render`] written through to `to` as it is made (a million-row table
/// is hundreds of MB of text). The outer error is the analysis' (nothing
/// was written then), the inner one a failed write.
pub fn write(
    opts: &Options,
    routes: Vec<RouteStats>,
    analysis: Option<&Analysis>,
    to: &mut dyn std::io::Write,
) -> Result<std::io::Result<()>> {
    let mut out = render::Out::writer(to);
    emit(opts, routes, analysis, &mut out)?;
    Ok(out.finish())
}

fn emit(
    opts: &Options,
    mut routes: Vec<RouteStats>,
    analysis: Option<&Analysis>,
    out: &mut render::Out,
) -> Result<()> {
    let view = opts.view.parse()?;
    // `routes` are the analysis' routes (taken out of it, not copied: a
    // million routes are half the command's memory).
    if analysis.is_some() && routes.len() > opts.limit {
        return Err(Error::input(format!(
            "more than {} distinct routes; group them with -m or --auto-group, or raise --limit",
            opts.limit
        )));
    }
    if let (Some(path), Some(a)) = (&opts.dump, analysis) {
        crate::load::write_dump(path, &routes, &a.counts)?;
    }

    render::sort_routes(&mut routes, view.sort, view.reverse);
    let tl = analysis.and_then(|a| a.timeline.as_ref());
    let slow = analysis
        .map(|a| a.slow.as_slice())
        .filter(|s| !s.is_empty() || opts.slow.is_some());
    if view.format == OutputFormat::Json && (tl.is_some() || slow.is_some()) {
        // One JSON document: alp's route rows plus the extras, keys in
        // serde_json's (sorted) order; the rows are written one at a time.
        out.push_str("{\"routes\":");
        render::write_json_rows(out, &routes, None, &view.opts);
        if let Some(s) = slow {
            // Plain data (strings and numbers): the conversion cannot fail.
            out.push_str(",\"slow\":");
            out.push_str(&serde_json::to_string(s).unwrap_or_default());
        }
        if let Some(t) = tl {
            out.push_str(",\"timeline\":");
            out.push_str(&view::timeline_value(t).to_string());
        }
        out.push_str("}\n");
    } else if let Some(t) = tl {
        match view.format {
            OutputFormat::Csv => out.push_str(&view::timeline_csv(t, ',')),
            OutputFormat::Tsv => out.push_str(&view::timeline_csv(t, '\t')),
            _ => out.push_str(&view::timeline_text(t, 10, 80)),
        }
    } else {
        render::render_into(out, &routes, None, view.format, &view.opts);
    }
    if let (Some(s), false) = (slow, view.format == OutputFormat::Json) {
        out.push('\n');
        out.push_str(&view::slow_view(s, view.format));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::ViewSpec;
    use crate::{Aggregator, Config, FieldNames, Format, LineParser, QueryMode};
    use std::sync::Arc;

    fn analysis(slow: usize, timeline: Option<f64>) -> Analysis {
        let mut cfg = Config::new(LineParser::new(
            Format::Ltsv(FieldNames::ltsv()),
            QueryMode::Drop,
            1.0,
        ));
        cfg.slow = slow;
        cfg.timeline = timeline;
        let mut agg = Aggregator::new(Arc::new(cfg));
        for (t, rt) in [("00", "0.100"), ("00", "0.250"), ("01", "1.500")] {
            let line = format!(
                "time:2024-01-01T00:00:{t}+00:00\tmethod:GET\turi:/a\tstatus:200\tsize:1\treqtime:{rt}"
            );
            agg.feed(line.as_bytes()).unwrap();
        }
        agg.finish()
    }

    #[test]
    fn the_json_document_holds_the_route_rows_alp_prints_and_the_extras() {
        let a = analysis(2, Some(1.0));
        let opts = Options {
            slow: Some(2),
            timeline: Some("1s".into()),
            view: ViewSpec {
                format: "json".into(),
                ..ViewSpec::default()
            },
            ..Options::default()
        };
        let text = render(&opts, a.routes.clone(), Some(&a)).unwrap();
        assert!(text.ends_with("}\n") && text.lines().count() == 1, "{text}");
        let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
        let view = opts.view.parse().unwrap();
        let rows: serde_json::Value = serde_json::from_str(&render::render(
            &a.routes,
            None,
            OutputFormat::Json,
            &view.opts,
        ))
        .unwrap();
        assert_eq!(doc["routes"], rows);
        assert_eq!(doc["slow"].as_array().unwrap().len(), 2);
        assert_eq!(doc["timeline"]["buckets"].as_array().unwrap().len(), 2);
        assert_eq!(doc["timeline"]["width"], 1.0);
    }

    #[test]
    fn too_many_routes_are_refused_before_anything_is_written() {
        let dir = tempfile::tempdir().unwrap();
        let dump = dir.path().join("d.json");
        let a = analysis(0, None);
        let opts = Options {
            limit: 1,
            dump: Some(dump.clone()),
            ..Options::default()
        };
        let mut two = a.clone();
        two.routes
            .push(crate::RouteStats::new("PUT".into(), "/b".into()));
        let e = render(&opts, two.routes.clone(), Some(&two)).unwrap_err();
        assert!(
            e.to_string().starts_with("more than 1 distinct routes"),
            "{e}"
        );
        assert!(!dump.exists());
        render(&opts, a.routes.clone(), Some(&a)).unwrap();
        assert!(dump.exists());
    }
}
