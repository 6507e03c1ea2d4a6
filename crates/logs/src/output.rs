//! What every `keisoku logs` input prints: the route table, or the
//! timeline, plus the slowest requests; and the dump it saves.

use crate::error::{Error, Result};
use crate::options::Options;
use crate::render::{self, OutputFormat};
use crate::stats::{Analysis, RouteStats};
use crate::{dump, view};

/// The text to print for `routes` (the table) and `analysis` (its
/// timeline and slowest requests, absent for a loaded dump), after
/// writing `opts.dump` from the analysis.
pub fn render(
    opts: &Options,
    mut routes: Vec<RouteStats>,
    analysis: Option<&Analysis>,
) -> Result<String> {
    let view = opts.view.parse()?;
    if let Some(a) = analysis {
        if a.routes.len() > opts.limit {
            return Err(Error::input(format!("more than {} distinct routes; group them with -m or --auto-group, or raise --limit", opts.limit)));
        }
    }
    if let (Some(path), Some(a)) = (&opts.dump, analysis) {
        std::fs::write(path, dump::to_json(&a.routes, &a.counts))
            .map_err(|e| Error::io("writing", path.display(), e))?;
    }

    render::sort_routes(&mut routes, view.sort, view.reverse);
    let mut out = String::new();
    let tl = analysis.and_then(|a| a.timeline.as_ref());
    let slow = analysis
        .map(|a| a.slow.as_slice())
        .filter(|s| !s.is_empty() || opts.slow.is_some());
    if view.format == OutputFormat::Json && (tl.is_some() || slow.is_some()) {
        // One JSON document: alp's route rows plus the extras.
        let mut obj = serde_json::json!({ "routes": render::json_rows(&routes, None, &view.opts) });
        if let Some(t) = tl {
            obj["timeline"] = view::timeline_value(t);
        }
        if let Some(s) = slow {
            // Plain data (strings and numbers) always converts; an empty
            // value would only hide a bug, as it did before.
            obj["slow"] = serde_json::to_value(s).unwrap_or_default();
        }
        out.push_str(&obj.to_string());
        out.push('\n');
    } else if let Some(t) = tl {
        match view.format {
            OutputFormat::Csv => out.push_str(&view::timeline_csv(t, ',')),
            OutputFormat::Tsv => out.push_str(&view::timeline_csv(t, '\t')),
            _ => out.push_str(&view::timeline_text(t, 10, 80)),
        }
    } else {
        out.push_str(&render::render(&routes, None, view.format, &view.opts));
    }
    if let (Some(s), false) = (slow, view.format == OutputFormat::Json) {
        out.push('\n');
        out.push_str(&view::slow_view(s, view.format));
    }
    Ok(out)
}
