//! Per-time-bucket statistics: how the traffic and latency of each route
//! changed over the log, and how many requests were in flight.
//!
//! A log line is written when a request ends, so the line's timestamp is
//! the end and `end - response time` the start. Requests in flight in a
//! bucket = total time requests spent in that bucket / bucket width (the
//! mean concurrency, by Little's law).

use crate::stats::alp_rank;
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::collections::BTreeMap;

/// A small log-bucketed histogram of microseconds (relative error under 0.8%),
/// sparse so thousands of (bucket, route) cells stay cheap.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SparseHist {
    bins: Vec<(u16, u32)>,
}

fn bin_of(us: u64) -> u16 {
    if us < 128 {
        return us as u16;
    }
    let e = 63 - us.leading_zeros() as u64; // >= 7
    let m = us >> (e - 6); // 64..128
    (128 + (e - 7) * 64 + (m - 64)) as u16
}

fn bin_value(b: u16) -> u64 {
    let b = u64::from(b);
    if b < 128 {
        return b;
    }
    let e = (b - 128) / 64 + 7;
    let m = (b - 128) % 64 + 64;
    let width = 1u64 << (e - 6);
    (m << (e - 6)) + width / 2
}

impl SparseHist {
    /// Records a value in microseconds.
    pub fn add(&mut self, us: u64, n: u32) {
        let b = bin_of(us);
        match self.bins.binary_search_by_key(&b, |x| x.0) {
            Ok(i) => self.bins[i].1 = self.bins[i].1.saturating_add(n),
            Err(i) => self.bins.insert(i, (b, n)),
        }
    }

    /// Adds another histogram.
    pub fn merge(&mut self, o: &SparseHist) {
        for &(b, n) in &o.bins {
            match self.bins.binary_search_by_key(&b, |x| x.0) {
                Ok(i) => self.bins[i].1 = self.bins[i].1.saturating_add(n),
                Err(i) => self.bins.insert(i, (b, n)),
            }
        }
    }

    /// Number of values.
    pub fn count(&self) -> u64 {
        self.bins.iter().map(|b| u64::from(b.1)).sum()
    }

    /// The `p`th percentile in seconds (alp's rank rule).
    pub fn percentile(&self, p: f64) -> f64 {
        let n = self.count();
        if n == 0 {
            return 0.0;
        }
        let rank = alp_rank(n, p) + 1;
        let mut seen = 0;
        for &(b, c) in &self.bins {
            seen += u64::from(c);
            if seen >= rank {
                return bin_value(b) as f64 / 1e6;
            }
        }
        self.bins
            .last()
            .map_or(0.0, |b| bin_value(b.0) as f64 / 1e6)
    }
}

#[derive(Debug, Clone, Default)]
struct Cell {
    count: u64,
    errors: u64,
    hist: SparseHist,
}

impl Cell {
    fn merge(&mut self, o: &Cell) {
        self.count += o.count;
        self.errors += o.errors;
        self.hist.merge(&o.hist);
    }
}

/// Longest request (in buckets) whose in-flight time is spread exactly;
/// longer ones are spread over this many buckets before their end.
const MAX_SPREAD: i64 = 100_000;

/// Accumulates timeline cells for local route ids.
#[derive(Debug, Clone)]
pub(crate) struct TimelineAcc {
    width: f64,
    cells: FxHashMap<(i64, u32), Cell>,
    busy: FxHashMap<i64, f64>,
}

impl TimelineAcc {
    pub fn new(width: f64) -> TimelineAcc {
        TimelineAcc {
            width,
            cells: FxHashMap::default(),
            busy: FxHashMap::default(),
        }
    }

    /// Counts a request logged at `stamp` that ended at `end` (the stamp, or
    /// mid-second for whole-second stamps) after `rt` seconds.
    pub fn add(&mut self, route: u32, stamp: f64, end: f64, rt: f64, status: i64) {
        let w = self.width;
        let b = (stamp / w).floor() as i64;
        let c = self.cells.entry((b, route)).or_default();
        c.count += 1;
        if status >= 500 {
            c.errors += 1;
        }
        let us = if rt > 0.0 {
            (rt * 1e6).round() as u64
        } else {
            0
        };
        c.hist.add(us, 1);
        if rt > 0.0 && rt.is_finite() {
            let start = end - rt;
            let last = (end / w).floor() as i64;
            let first = ((start / w).floor() as i64).max(last.saturating_sub(MAX_SPREAD));
            for k in first..=last {
                // Float arithmetic: `k + 1` overflows when a tiny width puts
                // the bucket at i64::MAX.
                let lo = (k as f64 * w).max(start);
                let hi = ((k as f64 + 1.0) * w).min(end);
                if hi > lo {
                    *self.busy.entry(k).or_default() += hi - lo;
                }
            }
        }
    }

    /// Adds `o`, whose route ids map to ours through `map`.
    pub fn merge_remapped(&mut self, o: &TimelineAcc, map: &[u32]) {
        for (&(b, r), c) in &o.cells {
            self.cells.entry((b, map[r as usize])).or_default().merge(c);
        }
        for (&b, v) in &o.busy {
            *self.busy.entry(b).or_default() += v;
        }
    }

    /// The finished timeline; `names[id]` is (method, route) of route `id`.
    pub fn finish(&self, names: &[(String, String)]) -> Timeline {
        Timeline {
            width: self.width,
            routes: names.to_vec(),
            cells: self.cells.iter().map(|(&k, c)| (k, c.clone())).collect(),
            busy: self.busy.iter().map(|(&k, &v)| (k, v)).collect(),
            absent_times: false,
        }
    }
}

/// Per-bucket statistics of a whole log.
#[derive(Debug, Clone)]
pub struct Timeline {
    /// Bucket width in seconds.
    pub width: f64,
    routes: Vec<(String, String)>,
    cells: BTreeMap<(i64, u32), Cell>,
    busy: BTreeMap<i64, f64>,
    /// The log has no response times (`common`, `combined`): counts and
    /// statuses per bucket are real, p50, p99 and in flight are NaN (shown
    /// as `-`, JSON `null`) rather than zeros nobody measured.
    pub absent_times: bool,
}

/// One route in one bucket.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RouteBucket {
    /// Method.
    pub method: String,
    /// Route.
    pub uri: String,
    /// Requests that ended in the bucket.
    pub count: u64,
    /// Of which 5xx.
    pub errors: u64,
    /// Median response time (s).
    pub p50: f64,
    /// 99th percentile response time (s).
    pub p99: f64,
}

/// One time bucket, all routes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Bucket {
    /// Bucket start, Unix seconds.
    pub start: f64,
    /// Bucket start as UTC text.
    pub time: String,
    /// Requests that ended in the bucket.
    pub count: u64,
    /// Requests per second.
    pub rps: f64,
    /// Of which 5xx.
    pub errors: u64,
    /// Median response time (s).
    pub p50: f64,
    /// 99th percentile response time (s).
    pub p99: f64,
    /// Mean number of requests in flight.
    pub in_flight: f64,
    /// Per route, busiest first.
    pub routes: Vec<RouteBucket>,
}

/// Most buckets a timeline fills in; beyond it only non-empty buckets appear.
const MAX_FILLED: i64 = 200_000;

impl Timeline {
    /// Appends another timeline of the same width.
    pub fn merge(&mut self, o: Timeline) {
        self.absent_times |= o.absent_times;
        let mut index: FxHashMap<(String, String), u32> = self
            .routes
            .iter()
            .enumerate()
            .map(|(i, r)| (r.clone(), i as u32))
            .collect();
        let map: Vec<u32> = o
            .routes
            .iter()
            .map(|r| {
                *index.entry(r.clone()).or_insert_with(|| {
                    self.routes.push(r.clone());
                    (self.routes.len() - 1) as u32
                })
            })
            .collect();
        for ((b, r), c) in o.cells {
            self.cells
                .entry((b, map[r as usize]))
                .or_default()
                .merge(&c);
        }
        for (b, v) in o.busy {
            *self.busy.entry(b).or_default() += v;
        }
    }

    /// The buckets in time order (empty buckets between included).
    pub fn buckets(&self) -> Vec<Bucket> {
        // The span of request ends: in-flight time before the first logged
        // request is only partly known, so it is not shown on its own.
        let (Some(first), Some(last)) = (
            self.cells.keys().next().map(|k| k.0),
            self.cells.keys().next_back().map(|k| k.0),
        ) else {
            return Vec::new();
        };
        let fill = last.checked_sub(first).is_some_and(|d| d < MAX_FILLED);
        let mut keys: Vec<i64> = if fill {
            (first..=last).collect()
        } else {
            let mut k: Vec<i64> = self.cells.keys().map(|k| k.0).collect();
            k.dedup();
            k
        };
        keys.dedup();
        let times = |v: f64| if self.absent_times { f64::NAN } else { v };
        let mut out = Vec::with_capacity(keys.len());
        for b in keys {
            let mut all = Cell::default();
            let mut routes = Vec::new();
            for ((_, r), c) in self.cells.range((b, 0)..=(b, u32::MAX)) {
                all.merge(c);
                let (m, u) = &self.routes[*r as usize];
                routes.push(RouteBucket {
                    method: m.clone(),
                    uri: u.clone(),
                    count: c.count,
                    errors: c.errors,
                    p50: times(c.hist.percentile(50.0)),
                    p99: times(c.hist.percentile(99.0)),
                });
            }
            routes.sort_by(|a, b| {
                b.count
                    .cmp(&a.count)
                    .then_with(|| a.uri.cmp(&b.uri))
                    .then_with(|| a.method.cmp(&b.method))
            });
            let start = b as f64 * self.width;
            out.push(Bucket {
                start,
                time: crate::timestamp::format_utc(start),
                count: all.count,
                rps: all.count as f64 / self.width,
                errors: all.errors,
                p50: times(all.hist.percentile(50.0)),
                p99: times(all.hist.percentile(99.0)),
                in_flight: times(self.busy.get(&b).copied().unwrap_or(0.0) / self.width),
                routes,
            });
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_round_trip_within_one_percent() {
        for us in [0u64, 1, 127, 128, 129, 1000, 12_345, 999_999, 123_456_789] {
            let v = bin_value(bin_of(us)) as f64;
            assert!(
                (v - us as f64).abs() <= (us as f64 / 120.0).max(0.0),
                "{us} -> {v}"
            );
        }
    }

    #[test]
    fn in_flight_spreads_over_buckets() {
        let mut t = TimelineAcc::new(1.0);
        // 2.5 s from 100.0 to 102.5 (busy 1, 1, 0.5) plus 0.5 s in bucket 100.
        t.add(0, 102.5, 102.5, 2.5, 200);
        t.add(0, 100.5, 100.5, 0.5, 503);
        let tl = t.finish(&[("GET".into(), "/a".into())]);
        let b = tl.buckets();
        assert_eq!(b.len(), 3);
        assert_eq!(b[0].count, 1);
        assert_eq!(b[0].errors, 1);
        assert!((b[0].in_flight - 1.5).abs() < 1e-9);
        assert!((b[1].in_flight - 1.0).abs() < 1e-9);
        assert!((b[2].in_flight - 0.5).abs() < 1e-9);
        assert_eq!(b[2].count, 1);
        assert!((b[2].p99 - 2.5).abs() / 2.5 < 0.01);
    }

    #[test]
    fn buckets_at_the_ends_of_the_index_range_do_not_overflow() {
        // A width of 1e-12 s puts a present-day stamp past i64::MAX buckets.
        let mut t = TimelineAcc::new(1e-12);
        t.add(0, 1.7e9, 1.7e9, 0.5, 200);
        t.add(0, -1.7e9, -1.7e9, 0.5, 200);
        let tl = t.finish(&[("GET".into(), "/a".into())]);
        assert_eq!(tl.buckets().len(), 2);
    }
}
