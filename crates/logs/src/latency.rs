//! A route's response times: the exact values while a route has few
//! requests, an HdrHistogram once it has many. A histogram costs 8 to 70 kB
//! whatever its count, so a log of a million distinct URIs (one request
//! each) held a histogram per URI and 11 GB; now such a route costs a few
//! bytes and memory grows with requests, not routes.
//!
//! Every answer is the one the histogram would give: the bucket arithmetic
//! (lowest, highest and median equivalent values) comes from a template
//! histogram of the same precision, whose bucket layout does not depend on
//! its range, so percentiles and dumps are unchanged by the representation.

use hdrhistogram::Histogram;
use std::sync::OnceLock;

/// Values kept exactly before a route switches to a histogram: 64 values
/// are 512 bytes, well under the smallest histogram.
pub const EXACT_MAX: usize = 64;

/// A histogram that only answers bucket questions (never recorded into).
fn template() -> &'static Histogram<u32> {
    static T: OnceLock<Histogram<u32>> = OnceLock::new();
    T.get_or_init(new_hist)
}

/// An empty histogram of the precision every route uses.
fn new_hist() -> Histogram<u32> {
    // Bounds 1..2 with auto-resize: a route costs only what its range needs.
    let mut h =
        Histogram::new_with_bounds(1, 2, crate::stats::HISTOGRAM_SIGFIGS).unwrap_or_else(|_| {
            Histogram::new(crate::stats::HISTOGRAM_SIGFIGS).unwrap_or_else(|_| unreachable!())
        });
    h.auto(true);
    h
}

#[derive(Debug, Clone)]
enum Repr {
    /// Unsorted values in µs.
    Exact(Vec<u64>),
    Hist(Box<Histogram<u32>>),
}

/// Response times in microseconds (see the module comment).
#[derive(Debug, Clone)]
pub struct Latencies(Repr);

impl Default for Latencies {
    fn default() -> Self {
        Latencies(Repr::Exact(Vec::new()))
    }
}

impl Latencies {
    /// No values.
    pub fn new() -> Latencies {
        Latencies::default()
    }

    /// Whether the values are held in a histogram (for tests and memory
    /// accounting).
    pub fn is_histogram(&self) -> bool {
        matches!(self.0, Repr::Hist(_))
    }

    fn promote(&mut self) -> &mut Histogram<u32> {
        if let Repr::Exact(values) = &self.0 {
            let mut h = new_hist();
            for &v in values {
                // Auto-resizes to the value; counts saturate rather than overflow.
                let _ = h.record(v);
            }
            self.0 = Repr::Hist(Box::new(h));
        }
        match &mut self.0 {
            Repr::Hist(h) => h,
            Repr::Exact(_) => unreachable!("promoted above"),
        }
    }

    /// Records one value.
    #[inline]
    pub fn record(&mut self, us: u64) {
        self.record_n(us, 1);
    }

    /// Records `n` equal values.
    pub fn record_n(&mut self, us: u64, n: u32) {
        match &mut self.0 {
            Repr::Exact(values) if values.len() + n as usize <= EXACT_MAX => {
                values.extend(std::iter::repeat(us).take(n as usize));
            }
            _ => {
                let _ = self.promote().record_n(us, n);
            }
        }
    }

    /// Adds every value of `other`.
    pub fn add(&mut self, other: &Latencies) {
        match (&mut self.0, &other.0) {
            (Repr::Exact(a), Repr::Exact(b)) if a.len() + b.len() <= EXACT_MAX => {
                a.extend_from_slice(b);
            }
            (_, Repr::Exact(b)) => {
                let h = self.promote();
                for &v in b {
                    let _ = h.record(v);
                }
            }
            (_, Repr::Hist(b)) => {
                let _ = self.promote().add(b.as_ref());
            }
        }
    }

    /// How many values (saturated counts of a histogram included as held).
    pub fn len(&self) -> u64 {
        match &self.0 {
            Repr::Exact(v) => v.len() as u64,
            Repr::Hist(h) => h.len(),
        }
    }

    /// Whether no value was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// `(highest equivalent value, count)` per recorded bucket in
    /// ascending order, as `Histogram::iter_recorded` gives them.
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        match &self.0 {
            Repr::Hist(h) => h
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), u64::from(v.count_at_value())))
                .collect(),
            Repr::Exact(values) => {
                let t = template();
                let mut sorted: Vec<u64> =
                    values.iter().map(|&v| t.highest_equivalent(v)).collect();
                sorted.sort_unstable();
                let mut out: Vec<(u64, u64)> = Vec::new();
                for v in sorted {
                    match out.last_mut() {
                        Some((top, n)) if *top == v => *n += 1,
                        _ => out.push((v, 1)),
                    }
                }
                out
            }
        }
    }

    /// The largest value's highest equivalent (`Histogram::max`).
    pub fn max(&self) -> u64 {
        match &self.0 {
            Repr::Hist(h) => h.max(),
            Repr::Exact(values) => values
                .iter()
                .max()
                .map_or(0, |&v| template().highest_equivalent(v)),
        }
    }

    /// The middle of `v`'s bucket (`Histogram::median_equivalent`).
    pub fn median_equivalent(v: u64) -> u64 {
        template().median_equivalent(v)
    }

    /// The lowest value of `v`'s bucket (`Histogram::lowest_equivalent`).
    pub fn lowest_equivalent(v: u64) -> u64 {
        template().lowest_equivalent(v)
    }

    /// The highest value of `v`'s bucket (`Histogram::highest_equivalent`).
    pub fn highest_equivalent(v: u64) -> u64 {
        template().highest_equivalent(v)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hist_of(values: &[u64]) -> Histogram<u32> {
        let mut h = new_hist();
        for &v in values {
            h.record(v).unwrap();
        }
        h
    }

    fn hist_buckets(h: &Histogram<u32>) -> Vec<(u64, u64)> {
        h.iter_recorded()
            .map(|v| (v.value_iterated_to(), u64::from(v.count_at_value())))
            .collect()
    }

    #[test]
    fn exact_values_answer_as_the_histogram_would() {
        let values = [1_234_567, 3, 999, 1000, 1001, 2047, 2048, 2049, 65_537, 3];
        let mut l = Latencies::new();
        for &v in &values {
            l.record(v);
        }
        assert!(!l.is_histogram());
        let h = hist_of(&values);
        assert_eq!(l.buckets(), hist_buckets(&h));
        assert_eq!(l.max(), h.max());
        assert_eq!(l.len(), h.len());
        for v in values {
            assert_eq!(Latencies::median_equivalent(v), h.median_equivalent(v));
            assert_eq!(Latencies::lowest_equivalent(v), h.lowest_equivalent(v));
        }
    }

    #[test]
    fn many_values_become_a_histogram_with_the_same_buckets() {
        let values: Vec<u64> = (0..1000u64).map(|i| i * i * 37 % 5_000_000).collect();
        let mut a = Latencies::new();
        let mut b = Latencies::new();
        for (i, &v) in values.iter().enumerate() {
            if i % 2 == 0 {
                a.record(v);
            } else {
                b.record(v);
            }
        }
        let mut small = Latencies::new();
        small.record_n(17, 3);
        a.add(&b);
        a.add(&small);
        assert!(a.is_histogram());
        let mut all = values.clone();
        all.extend([17, 17, 17]);
        assert_eq!(a.buckets(), hist_buckets(&hist_of(&all)));
        // Merging two small ones stays exact until the limit.
        let mut x = Latencies::new();
        x.record_n(5, 40);
        let mut y = Latencies::new();
        y.record_n(6, 24);
        x.add(&y);
        assert!(!x.is_histogram());
        x.record(7);
        assert!(x.is_histogram());
        assert_eq!(x.len(), 65);
    }
}
