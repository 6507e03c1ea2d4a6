//! Saving and reloading aggregated route statistics (`--dump` / `--load`),
//! so a big log is read once and re-sorted, re-rendered or diffed later.
//!
//! The dump is JSON: per route the exact summaries and the latency
//! histogram as `[microseconds, count]` pairs.

use crate::stats::{LineCounts, RouteStats};
use crate::summary::{Moments, Summary};
use serde::{Deserialize, Serialize};

/// Identifies the dump format.
pub const DUMP_FORMAT: &str = "keisoku-logs-dump/1";

#[derive(Serialize, Deserialize)]
struct DumpRoute {
    method: String,
    uri: String,
    count: u64,
    status: [u64; 5],
    time: Summary,
    body: Summary,
    moments: Moments,
    low: Option<f64>,
    #[serde(default)]
    ms_grid: bool,
    hist_us: Vec<(u64, u64)>,
}

#[derive(Serialize, Deserialize)]
struct Dump {
    format: String,
    counts: LineCounts,
    routes: Vec<DumpRoute>,
}

/// A dump that cannot be read back.
#[derive(Debug, thiserror::Error)]
pub enum DumpError {
    /// Not JSON, or not our layout.
    #[error("not a keisoku logs dump: {0}")]
    Json(#[from] serde_json::Error),
    /// A dump of another format version.
    #[error("unsupported dump format {0:?} (expected {DUMP_FORMAT:?})")]
    Version(String),
    /// Internally inconsistent.
    #[error("inconsistent dump: {0}")]
    Inconsistent(String),
}

/// Serialises routes and line counters.
pub fn to_json(routes: &[RouteStats], counts: &LineCounts) -> String {
    let d = Dump {
        format: DUMP_FORMAT.into(),
        counts: *counts,
        routes: routes
            .iter()
            .map(|r| DumpRoute {
                method: r.method.clone(),
                uri: r.uri.clone(),
                count: r.count,
                status: r.status,
                time: r.time,
                body: r.body,
                moments: r.moments,
                low: r.low.is_finite().then_some(r.low),
                ms_grid: r.ms_grid,
                hist_us: r.hist_pairs(),
            })
            .collect(),
    };
    // Plain data (no maps with non-string keys); serialisation cannot fail.
    serde_json::to_string(&d).unwrap_or_default()
}

/// Reads a dump back.
pub fn from_json(text: &str) -> Result<(Vec<RouteStats>, LineCounts), DumpError> {
    let d: Dump = serde_json::from_str(text)?;
    if d.format != DUMP_FORMAT {
        return Err(DumpError::Version(d.format));
    }
    let mut out = Vec::with_capacity(d.routes.len());
    for r in d.routes {
        let in_hist: u64 = r.hist_us.iter().map(|p| p.1).sum();
        if in_hist != r.count || r.time.n != r.count {
            return Err(DumpError::Inconsistent(format!(
                "route {} {}: counts disagree",
                r.method, r.uri
            )));
        }
        let mut s = RouteStats::new(r.method, r.uri);
        s.count = r.count;
        s.status = r.status;
        s.time = r.time;
        s.body = r.body;
        s.moments = r.moments;
        s.low = r.low.unwrap_or(f64::INFINITY);
        s.ms_grid = r.ms_grid;
        s.set_hist_pairs(&r.hist_us);
        out.push(s);
    }
    Ok((out, d.counts))
}
