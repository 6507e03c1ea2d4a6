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
    /// Every response time as `[f64 bits, count]` while the route holds
    /// them (bits, not decimals: a reload must give alp's percentiles and
    /// stddev bit for bit). Absent in older dumps and for huge routes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    exact_bits: Option<Vec<(u64, u64)>>,
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
                exact_bits: r.times.bit_counts(),
            })
            .collect(),
    };
    // Plain data (no maps with non-string keys); serialisation cannot fail.
    serde_json::to_string(&d).unwrap_or_default()
}

/// Reads the dump file at `path` (`--load`, `logs diff`); an unreadable or
/// invalid file is the user's input to fix.
pub fn load(path: &std::path::Path) -> crate::error::Result<Vec<RouteStats>> {
    let bad =
        |e: &dyn std::fmt::Display| crate::error::Error::Input(format!("{}: {e}", path.display()));
    let text = keisoku_common::limits::read_document(path, &keisoku_common::Limits::current())
        .map_err(|e| bad(&e))?;
    let (routes, _) = from_json(&text).map_err(|e| bad(&e))?;
    Ok(routes)
}

/// Reads a dump back.
pub fn from_json(text: &str) -> Result<(Vec<RouteStats>, LineCounts), DumpError> {
    let d: Dump = serde_json::from_str(text)?;
    if d.format != DUMP_FORMAT {
        return Err(DumpError::Version(d.format));
    }
    let mut out = Vec::with_capacity(d.routes.len());
    for r in d.routes {
        let in_hist = r.hist_us.iter().try_fold(0u64, |a, p| a.checked_add(p.1));
        // Histogram counts are u32 and saturate, so a route with more than
        // 2^32 requests at one latency dumps fewer in its histogram.
        let saturated = r.hist_us.iter().any(|p| p.1 >= u64::from(u32::MAX));
        let hist_ok = in_hist.is_some_and(|h| h == r.count || (saturated && h < r.count));
        if !hist_ok || r.time.n != r.count {
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
        if let Some(e) = r
            .exact_bits
            .as_deref()
            .and_then(|p| crate::times::Times::from_bit_counts(p, r.count))
        {
            s.times = e;
        }
        out.push(s);
    }
    Ok((out, d.counts))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dump_with(count: u64, hist: &str) -> String {
        format!(
            r#"{{"format":"{DUMP_FORMAT}","counts":{{"lines":1,"blank":0,"parsed":1,"filtered":0,"malformed":0,"bad_time":0}},
            "routes":[{{"method":"GET","uri":"/","count":{count},"status":[0,1,0,0,0],
            "time":{{"n":{count},"min":0.009,"saw_zero":false,"max":1.25,"sum":1.259}},
            "body":{{"n":1,"min":1.0,"saw_zero":false,"max":1.0,"sum":1.0}},
            "moments":{{"n":1,"mean":0.5,"m2":0.0}},"low":0.009,"ms_grid":true,"hist_us":{hist}}}]}}"#
        )
    }

    #[test]
    fn sums_read_back_to_the_bit() {
        // alp prints avg = sum / count to three digits; a sum one unit in
        // the last place off flips a digit at a rounding tie (0.091 / 14 =
        // 0.0065), so a dump must give back the very same doubles.
        let mut x: u64 = 7;
        let mut routes = Vec::new();
        for i in 0..2000 {
            let mut r = RouteStats::new("GET".into(), format!("/r/{i}"));
            for _ in 0..1 + i % 17 {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                r.add(200, (x % 2000) as f64 / 1000.0, (x % 5000) as f64);
            }
            routes.push(r);
        }
        let (back, _) = from_json(&to_json(&routes, &LineCounts::default())).unwrap();
        for (a, b) in routes.iter().zip(&back) {
            assert_eq!(a.time.sum.to_bits(), b.time.sum.to_bits(), "{}", a.uri);
            assert_eq!(a.body.sum.to_bits(), b.body.sum.to_bits(), "{}", a.uri);
            assert_eq!(a.moments.m2.to_bits(), b.moments.m2.to_bits(), "{}", a.uri);
        }
    }

    #[test]
    fn histogram_counts_that_overflow_are_refused() {
        // A crash input of the logs_dump fuzz target: summing the pairs overflowed.
        let text = dump_with(1, "[[9007,18446744073709551615],[1,2]]");
        assert!(matches!(from_json(&text), Err(DumpError::Inconsistent(_))));
    }

    #[test]
    fn a_saturated_histogram_reads_back_and_round_trips() {
        // A crash input of the logs_dump fuzz target: u64::MAX requests overflowed
        // the percentile rank, and the u32 histogram could not hold them so
        // the dump written back was refused.
        let text = dump_with(u64::MAX, "[[9007,18446744073709551615]]");
        let (routes, counts) = from_json(&text).unwrap();
        assert!(routes[0].percentile(50.0) > 0.0);
        let again = to_json(&routes, &counts);
        let (back, _) = from_json(&again).unwrap();
        assert_eq!(back[0].count, u64::MAX);
        // Short of saturation, the counts must agree exactly.
        assert!(from_json(&dump_with(3, "[[9007,2]]")).is_err());
    }
}
