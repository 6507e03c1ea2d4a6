//! Requests folded into per-second aggregates on a caller's clock, and into
//! totals per route and overall, with the same definitions as keisoku's own
//! load engine: a request counts in the second its response ended; errors
//! are 5xx answers plus transport errors; latency histograms hold answers
//! only (a transport error has no response time).
//!
//! Memory is bounded: a second is handed to the sink once no request has
//! ended within [`LATE_WINDOW_S`] seconds after it, and the number of routes
//! is capped at [`MAX_ROUTES`]. A request that ends in a second already
//! handed on (a file far out of time order) still counts in every total and
//! is counted in [`Totals::late`], so nothing is lost silently.

use crate::Sample;
use hdrhistogram::Histogram;
use std::collections::{BTreeMap, HashMap};

/// How far out of time order (seconds) a request may come and still land
/// in its second: JMeter and k6 write requests as they end, a thread's
/// buffer apart, so seconds this old are final.
pub const LATE_WINDOW_S: i64 = 120;

/// Routes kept apart; later labels are folded into [`OTHER_ROUTES`]
/// (k6 names a request by its URL unless told otherwise, so a test with
/// ids in its URLs has as many labels as requests).
pub const MAX_ROUTES: usize = 1000;

/// The label of the routes past [`MAX_ROUTES`].
pub const OTHER_ROUTES: &str = "(other routes)";

/// Error kinds kept by name; the rest are counted together.
const MAX_ERROR_KINDS: usize = 50;

/// A histogram of microseconds that grows as needed, so a second of short
/// latencies stays small.
pub fn new_histogram() -> Histogram<u64> {
    // Two significant digits, as the load engine's per-second histograms.
    let mut h = Histogram::new(2).unwrap_or_else(|_| unreachable_histogram());
    h.auto(true);
    h
}

#[cold]
fn unreachable_histogram() -> Histogram<u64> {
    // new(2) cannot fail: 2 significant digits are within 0..=5.
    Histogram::new_with_max(u64::MAX / 2, 2).unwrap_or_else(|_| std::process::abort())
}

fn record(h: &mut Histogram<u64>, latency_ms: f64) {
    let us = (latency_ms * 1000.0).round().max(1.0) as u64;
    // `record` grows an auto-resizing histogram; `saturating_record` would
    // clamp to its current top instead.
    if h.record(us).is_err() {
        h.saturating_record(us);
    }
}

/// One route's share of one second.
#[derive(Debug, Clone)]
pub struct RouteSecondAgg {
    /// The route's method ("" when unknown).
    pub method: String,
    /// The route's label.
    pub label: String,
    /// Answers (any status).
    pub responses: u64,
    /// 5xx answers plus transport errors.
    pub errors: u64,
    /// Requests without an answer.
    pub transport_errors: u64,
    /// Latencies of the answers, µs.
    pub histogram: Histogram<u64>,
}

/// One second of requests, on the aggregator's clock.
#[derive(Debug, Clone)]
pub struct SecondAgg {
    /// Seconds since the origin (negative before it): requests that ended
    /// in [origin + second s, origin + second s + 1 s).
    pub second: i64,
    /// Answers (any status).
    pub responses: u64,
    /// 5xx answers plus transport errors.
    pub errors: u64,
    /// Requests without an answer.
    pub transport_errors: u64,
    /// Requests the tool itself judged failed (assertions, unexpected status).
    pub failed: u64,
    /// Answers by status class, 1xx..5xx.
    pub status: [u64; 5],
    /// Latencies of the answers, µs.
    pub histogram: Histogram<u64>,
    /// Per route (index into [`Totals::routes`]).
    pub routes: BTreeMap<usize, RouteSecondAgg>,
}

impl SecondAgg {
    fn new(second: i64) -> SecondAgg {
        SecondAgg {
            second,
            responses: 0,
            errors: 0,
            transport_errors: 0,
            failed: 0,
            status: [0; 5],
            histogram: new_histogram(),
            routes: BTreeMap::new(),
        }
    }
}

/// One route over the whole file.
#[derive(Debug, Clone)]
pub struct RouteTotals {
    /// HTTP method, or "" when the tool does not record it.
    pub method: String,
    /// The label (JMeter sampler label, k6 name tag, URL path).
    pub label: String,
    /// Answers.
    pub responses: u64,
    /// 5xx answers plus transport errors.
    pub errors: u64,
    /// Requests without an answer.
    pub transport_errors: u64,
    /// Answers by status class.
    pub status: [u64; 5],
    /// Sum of the answers' latencies, ms.
    pub sum_ms: f64,
    /// Answers that gave their size.
    pub sized: u64,
    /// Smallest, largest and summed response bytes of those.
    pub bytes_min: u64,
    /// Largest response.
    pub bytes_max: u64,
    /// Sum of response bytes.
    pub bytes_sum: u64,
    /// Latencies of the answers, µs.
    pub histogram: Histogram<u64>,
}

/// Everything read, over the whole file.
#[derive(Debug, Clone)]
pub struct Totals {
    /// Requests read (answers plus transport errors).
    pub samples: u64,
    /// Answers.
    pub responses: u64,
    /// 5xx answers plus transport errors.
    pub errors: u64,
    /// Requests without an answer.
    pub transport_errors: u64,
    /// Requests the tool itself judged failed.
    pub failed: u64,
    /// Answers by status class, 1xx..5xx.
    pub status: [u64; 5],
    /// Answers by exact status.
    pub status_codes: BTreeMap<u16, u64>,
    /// Transport errors and failures by the tool's error text (at most 50
    /// kinds; the rest under "(other)").
    pub error_kinds: BTreeMap<String, u64>,
    /// Response bytes of the answers that gave their size.
    pub bytes: u64,
    /// Earliest request start (end - latency), Unix ms.
    pub first_start_unix_ms: Option<f64>,
    /// Latest request end, Unix ms.
    pub last_end_unix_ms: Option<f64>,
    /// Latencies of the answers, µs.
    pub histogram: Histogram<u64>,
    /// Per route, in the order first seen.
    pub routes: Vec<RouteTotals>,
    /// Requests whose label was folded into [`OTHER_ROUTES`].
    pub routes_folded: u64,
    /// Requests that ended in a second already handed on: in every total,
    /// not in the per-second aggregates.
    pub late: u64,
    /// Seconds handed to the sink.
    pub seconds: u64,
    /// Requests that ended before the window's start, and after its end
    /// ([`Aggregator::window`]): kept in every number, and said so.
    pub before_window: u64,
    /// Requests that ended after the window's end.
    pub after_window: u64,
}

impl Default for Totals {
    fn default() -> Totals {
        Totals {
            samples: 0,
            responses: 0,
            errors: 0,
            transport_errors: 0,
            failed: 0,
            status: [0; 5],
            status_codes: BTreeMap::new(),
            error_kinds: BTreeMap::new(),
            bytes: 0,
            first_start_unix_ms: None,
            last_end_unix_ms: None,
            histogram: new_histogram(),
            routes: Vec::new(),
            routes_folded: 0,
            late: 0,
            seconds: 0,
            before_window: 0,
            after_window: 0,
        }
    }
}

/// Folds [`Sample`]s into [`Totals`] and hands each final [`SecondAgg`]
/// to a sink.
pub struct Aggregator<'a> {
    origin_unix_ms: Option<f64>,
    sink: Box<dyn FnMut(SecondAgg) + 'a>,
    open: BTreeMap<i64, SecondAgg>,
    /// Seconds up to this one have been handed on.
    handed_through: Option<i64>,
    latest: Option<i64>,
    route_index: HashMap<(String, String), usize>,
    totals: Totals,
    window: Option<(f64, f64)>,
}

impl<'a> Aggregator<'a> {
    /// An aggregator whose seconds count from `origin_unix_ms` (a run's
    /// t = 0), or from the first request's second when `None`.
    pub fn new(origin_unix_ms: Option<f64>, sink: impl FnMut(SecondAgg) + 'a) -> Aggregator<'a> {
        Aggregator {
            origin_unix_ms,
            sink: Box::new(sink),
            open: BTreeMap::new(),
            handed_through: None,
            latest: None,
            route_index: HashMap::new(),
            totals: Totals::default(),
            window: None,
        }
    }

    /// Counts the requests that ended outside [start, end] (Unix ms), as a
    /// recording's window: [`Totals::before_window`], [`Totals::after_window`].
    pub fn window(mut self, start_unix_ms: f64, end_unix_ms: f64) -> Aggregator<'a> {
        self.window = Some((start_unix_ms, end_unix_ms));
        self
    }

    /// The origin seconds count from (known once a request was added when
    /// none was given).
    pub fn origin_unix_ms(&self) -> Option<f64> {
        self.origin_unix_ms
    }

    fn route(&mut self, method: &str, label: &str) -> usize {
        if let Some(&i) = self
            .route_index
            .get(&(method.to_string(), label.to_string()))
        {
            return i;
        }
        let (method, label) = if self.totals.routes.len() >= MAX_ROUTES {
            self.totals.routes_folded += 1;
            ("", OTHER_ROUTES)
        } else {
            (method, label)
        };
        let key = (method.to_string(), label.to_string());
        if let Some(&i) = self.route_index.get(&key) {
            return i;
        }
        let i = self.totals.routes.len();
        self.totals.routes.push(RouteTotals {
            method: key.0.clone(),
            label: key.1.clone(),
            responses: 0,
            errors: 0,
            transport_errors: 0,
            status: [0; 5],
            sum_ms: 0.0,
            sized: 0,
            bytes_min: u64::MAX,
            bytes_max: 0,
            bytes_sum: 0,
            histogram: new_histogram(),
        });
        self.route_index.insert(key, i);
        i
    }

    /// Adds one request.
    pub fn add(&mut self, s: &Sample) {
        let origin = *self
            .origin_unix_ms
            .get_or_insert((s.end_unix_ms / 1000.0).floor() * 1000.0);
        let second = ((s.end_unix_ms - origin) / 1000.0).floor() as i64;
        let route = self.route(s.method.as_deref().unwrap_or(""), &s.label);
        let t = &mut self.totals;
        t.samples += 1;
        if let Some((from, to)) = self.window {
            if s.end_unix_ms < from {
                t.before_window += 1;
            } else if s.end_unix_ms > to {
                t.after_window += 1;
            }
        }
        let start = s.end_unix_ms - s.latency_ms;
        t.first_start_unix_ms = Some(t.first_start_unix_ms.map_or(start, |f| f.min(start)));
        t.last_end_unix_ms = Some(
            t.last_end_unix_ms
                .map_or(s.end_unix_ms, |l| l.max(s.end_unix_ms)),
        );
        let (answer, error) = match s.status {
            Some(code) => (true, code >= 500),
            None => (false, true),
        };
        if !s.ok {
            t.failed += 1;
        }
        if !s.ok || !answer {
            let kind = s
                .error
                .clone()
                .filter(|e| !e.is_empty())
                .unwrap_or_else(|| match s.status {
                    Some(c) => format!("status {c}"),
                    None => "no answer".into(),
                });
            let kinds = t.error_kinds.len();
            match t.error_kinds.get_mut(&kind) {
                Some(n) => *n += 1,
                None if kinds < MAX_ERROR_KINDS => {
                    t.error_kinds.insert(kind, 1);
                }
                None => *t.error_kinds.entry("(other)".into()).or_default() += 1,
            }
        }
        let r = &mut t.routes[route];
        if let Some(code) = s.status {
            let class = usize::from(code / 100).clamp(1, 5) - 1;
            t.responses += 1;
            t.status[class] += 1;
            *t.status_codes.entry(code).or_default() += 1;
            record(&mut t.histogram, s.latency_ms);
            r.responses += 1;
            r.status[class] += 1;
            r.sum_ms += s.latency_ms;
            record(&mut r.histogram, s.latency_ms);
            if let Some(b) = s.bytes {
                t.bytes += b;
                r.sized += 1;
                r.bytes_min = r.bytes_min.min(b);
                r.bytes_max = r.bytes_max.max(b);
                r.bytes_sum += b;
            }
        } else {
            t.transport_errors += 1;
            r.transport_errors += 1;
        }
        if error {
            t.errors += 1;
            r.errors += 1;
        }
        if self.handed_through.is_some_and(|h| second <= h) {
            self.totals.late += 1;
            return;
        }
        let agg = self
            .open
            .entry(second)
            .or_insert_with(|| SecondAgg::new(second));
        let names = &self.totals.routes[route];
        let rs = agg.routes.entry(route).or_insert_with(|| RouteSecondAgg {
            method: names.method.clone(),
            label: names.label.clone(),
            responses: 0,
            errors: 0,
            transport_errors: 0,
            histogram: new_histogram(),
        });
        if let Some(code) = s.status {
            let class = usize::from(code / 100).clamp(1, 5) - 1;
            agg.responses += 1;
            agg.status[class] += 1;
            record(&mut agg.histogram, s.latency_ms);
            rs.responses += 1;
            record(&mut rs.histogram, s.latency_ms);
        } else {
            agg.transport_errors += 1;
            rs.transport_errors += 1;
        }
        if error {
            agg.errors += 1;
            rs.errors += 1;
        }
        if !s.ok {
            agg.failed += 1;
        }
        if self.latest.is_none_or(|l| second > l) {
            self.latest = Some(second);
            self.hand_on(second - LATE_WINDOW_S);
        }
    }

    /// Hands every open second up to `through` to the sink, in order.
    fn hand_on(&mut self, through: i64) {
        while let Some(entry) = self.open.first_entry() {
            if *entry.key() > through {
                break;
            }
            let agg = entry.remove();
            self.handed_through = Some(agg.second);
            self.totals.seconds += 1;
            (self.sink)(agg);
        }
    }

    /// Hands every remaining second on and returns the totals; the
    /// aggregator starts again empty (same origin).
    pub fn totals(&mut self) -> Totals {
        self.hand_on(i64::MAX);
        self.handed_through = None;
        self.latest = None;
        self.route_index.clear();
        std::mem::take(&mut self.totals)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(end: f64, status: Option<u16>, label: &str) -> Sample {
        Sample {
            end_unix_ms: end,
            latency_ms: 10.0,
            status,
            ok: status.is_some_and(|c| c < 400),
            error: None,
            label: label.into(),
            method: Some("GET".into()),
            bytes: Some(100),
        }
    }

    #[test]
    fn seconds_count_from_the_origin_and_errors_are_5xx_plus_transport() {
        let mut seconds = Vec::new();
        let totals = {
            let mut agg = Aggregator::new(Some(10_000.0), |s| seconds.push(s));
            agg.add(&sample(10_500.0, Some(200), "/a"));
            agg.add(&sample(11_000.0, Some(503), "/a"));
            agg.add(&sample(11_999.0, None, "/b"));
            agg.add(&sample(9_999.0, Some(404), "/b"));
            agg.totals()
        };
        let got: Vec<(i64, u64, u64, u64)> = seconds
            .iter()
            .map(|s| (s.second, s.responses, s.errors, s.transport_errors))
            .collect();
        assert_eq!(got, vec![(-1, 1, 0, 0), (0, 1, 0, 0), (1, 1, 2, 1)]);
        assert_eq!((totals.samples, totals.responses, totals.errors), (4, 3, 2));
        assert_eq!(totals.status, [0, 1, 0, 1, 1]);
        assert_eq!(totals.routes.len(), 2);
        assert_eq!(totals.late, 0);
        assert_eq!(totals.first_start_unix_ms, Some(9_989.0));
        // 10 ms each, kept exactly enough for two significant digits.
        let p50 = totals.histogram.value_at_quantile(0.5);
        assert!((9_900..=10_100).contains(&p50), "{p50}");
    }

    #[test]
    fn a_request_far_out_of_order_counts_in_totals_and_as_late() {
        let mut seconds = Vec::new();
        let totals = {
            let mut agg = Aggregator::new(Some(0.0), |s| seconds.push(s));
            agg.add(&sample(500.0, Some(200), "/"));
            agg.add(&sample(
                (LATE_WINDOW_S as f64 + 2.0) * 1000.0,
                Some(200),
                "/",
            ));
            agg.add(&sample(700.0, Some(200), "/"));
            agg.totals()
        };
        assert_eq!(totals.responses, 3);
        assert_eq!(totals.late, 1);
        let per_second: u64 = seconds.iter().map(|s| s.responses).sum();
        assert_eq!(per_second + totals.late, totals.responses);
    }

    #[test]
    fn routes_past_the_cap_fold_into_one() {
        let mut agg = Aggregator::new(None, |_| {});
        for i in 0..MAX_ROUTES + 5 {
            agg.add(&sample(1000.0, Some(200), &format!("/r{i}")));
        }
        let t = agg.totals();
        assert_eq!(t.routes.len(), MAX_ROUTES + 1);
        assert_eq!(t.routes_folded, 5);
        assert_eq!(t.routes[MAX_ROUTES].label, OTHER_ROUTES);
        assert_eq!(t.routes[MAX_ROUTES].responses, 5);
    }
}
