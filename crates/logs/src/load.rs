//! `--load FILE`: a saved dump (keisoku's JSON or alp's YAML) in place of a
//! log, and `--dump FILE` written in the kind its name asks for.
//!
//! alp v1.0.21 loads a dump and silently ignores `-m` and `-f`. Here `-m`
//! and `--auto-group` regroup the loaded routes (merging their statistics),
//! and `-f`, which needs each request's fields, is refused with the reason
//! rather than ignored.

use crate::error::{Error, Result};
use crate::options::{self, Options};
use crate::stats::{LineCounts, RouteStats};
use crate::{alp_dump, dump, stored};
use std::path::Path;

/// The routes of the dump `path`, regrouped as `opts` asks.
pub fn routes(path: &Path, opts: &Options) -> Result<Vec<RouteStats>> {
    if let Some(f) = &opts.filters {
        return Err(Error::input(format!(
            "-f {f:?} with --load: a dump keeps per-route statistics, not the requests a filter selects; filter when reading the log (-f with --dump)"
        )));
    }
    let grouper = options::grouper(opts.matching_groups.as_deref(), opts.auto_group)?;
    let routes = alp_dump::load(path)?;
    Ok(if grouper.is_active() {
        stored::regroup(routes, &grouper)
    } else {
        routes
    })
}

/// Writes `routes` to `path`: alp's YAML for a `.yaml`/`.yml` name, else
/// keisoku's JSON dump.
pub fn write_dump(path: &Path, routes: &[RouteStats], counts: &LineCounts) -> Result<()> {
    let text = if alp_dump::wants_yaml(path) {
        alp_dump::to_yaml(routes)?
    } else {
        dump::to_json(routes, counts)
    };
    std::fs::write(path, text).map_err(|e| Error::io("writing", path.display(), e))
}

/// The routes of the log `path` (gzip is detected), read as `format` and
/// grouped and filtered as `opts` asks: one side of alp's `FORMAT diff`.
pub fn routes_of_log(
    format: crate::format::Format,
    opts: &Options,
    path: &Path,
) -> Result<Vec<RouteStats>> {
    use std::sync::atomic::AtomicU64;
    use std::sync::Arc;
    let (_, cfg, threads) = opts.setup(format)?;
    let name = crate::analyse::display(path);
    let opened = crate::input::open_as(Some(path), Arc::new(AtomicU64::new(0)), opts.pcap.as_ref())
        .map_err(|e| Error::io("opening", &name, e))?;
    let analysis =
        crate::engine::analyze(Arc::clone(&cfg), opened.reader, threads).map_err(|e| match e {
            crate::engine::Error::Feed(f) => Error::input(format!("{name}: {f}")),
            crate::engine::Error::Io(io) => Error::io("reading", &name, io),
        })?;
    crate::analyse::check_format(&name, &cfg, &analysis)?;
    if analysis.routes.len() > opts.limit {
        return Err(Error::input(format!(
            "{name}: more than {} distinct routes; group them with -m or --auto-group, or raise --limit",
            opts.limit
        )));
    }
    Ok(analysis.routes)
}
