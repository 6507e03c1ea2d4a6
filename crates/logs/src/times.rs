//! A route's response times in one structure: the values themselves while
//! that is cheap, an HdrHistogram beyond.
//!
//! alp keeps every value of every route and prints `sorted[rank]` and
//! `sqrt(Σ (v - sum/n)² / n)` summed over the sorted values (its percentile
//! columns sort the slice in place before the stddev column is computed).
//! A histogram or a one-pass variance agrees to about 1e-12, which is enough
//! to flip a printed digit where the true value ends in 5 (two requests
//! 1 ms apart have a stddev of exactly 0.0005). So a route keeps its values:
//! one inline, a few in a list, then as distinct value -> count (nginx
//! writes whole milliseconds, so a busy route has a few thousand distinct
//! values at most). Only beyond [`DISTINCT_MAX`] distinct values does it
//! become a histogram of whole microseconds, and its percentiles approximate.
//!
//! Memory grows with requests, not routes: a route seen once costs no heap
//! at all (a log of a million distinct URIs is a million such routes), and
//! a histogram (8 to 70 kB) is only ever built for a route with thousands
//! of requests.
//!
//! The histogram view of exact values (dumps, bucket arithmetic) is the one
//! a histogram would give: the buckets come from a template histogram of the
//! same precision, whose bucket layout does not depend on its range.

use hdrhistogram::Histogram;
use rustc_hash::FxHashMap;
use std::sync::OnceLock;

/// Significant digits kept by the latency histograms: values are stored in
/// whole microseconds and a reported percentile is within 0.1% (or 1 µs) of
/// the sample alp would pick.
pub const HISTOGRAM_SIGFIGS: u8 = 3;

/// Largest response time the histograms store (about 11.6 days).
pub const MAX_MICROS: u64 = 1_000_000_000_000;

/// Values kept as a plain list before switching to counts.
const FEW_MAX: usize = 16;

/// Distinct values kept at most; more and the route becomes a histogram.
pub const DISTINCT_MAX: usize = 20_000;

/// Whole microseconds of a response time in seconds, as the histogram
/// stores it (negative and NaN times count as 0, huge ones saturate).
#[inline]
pub fn micros(v: f64) -> u64 {
    if v.is_nan() || v <= 0.0 {
        0
    } else {
        ((v * 1e6).round() as u64).min(MAX_MICROS)
    }
}

/// A histogram that only answers bucket questions (never recorded into).
fn template() -> &'static Histogram<u32> {
    static T: OnceLock<Histogram<u32>> = OnceLock::new();
    T.get_or_init(new_hist)
}

/// An empty histogram of the precision every route uses.
fn new_hist() -> Histogram<u32> {
    // Bounds 1..2 with auto-resize: a route costs only what its range needs.
    let mut h = Histogram::new_with_bounds(1, 2, HISTOGRAM_SIGFIGS)
        .unwrap_or_else(|_| Histogram::new(HISTOGRAM_SIGFIGS).unwrap_or_else(|_| unreachable!()));
    h.auto(true);
    h
}

#[derive(Debug, Clone, Default)]
enum Repr {
    /// No value yet.
    #[default]
    Empty,
    /// Exactly one value (most routes of an ungrouped log).
    One(f64),
    /// A few values in arrival order.
    Few(Vec<f64>),
    /// f64 bit pattern -> how many times it occurred.
    Counts(Box<FxHashMap<u64, u64>>),
    /// Too many distinct values: whole microseconds in a histogram.
    Hist(Box<Histogram<u32>>),
}

/// Response times of one route (see the module comment).
#[derive(Debug, Clone)]
pub struct Times(Repr);

impl Default for Times {
    fn default() -> Self {
        Times(Repr::Empty)
    }
}

/// Counts of the list form, keyed by bit pattern.
fn counts_of(values: &[f64]) -> FxHashMap<u64, u64> {
    let mut m: FxHashMap<u64, u64> = FxHashMap::default();
    for v in values {
        *m.entry(v.to_bits()).or_insert(0) += 1;
    }
    m
}

impl Times {
    /// No values.
    pub fn new() -> Times {
        Times::default()
    }

    /// Whether every value is held (percentiles and stddev are alp's).
    pub fn is_exact(&self) -> bool {
        !matches!(self.0, Repr::Hist(_))
    }

    /// Whether the values are held in a histogram.
    pub fn is_histogram(&self) -> bool {
        !self.is_exact()
    }

    /// Rebuilds from histogram buckets `(microseconds, count)` (a dump or a
    /// stored run that holds a histogram): no longer exact.
    pub fn from_micros_buckets(pairs: impl IntoIterator<Item = (u64, u64)>) -> Times {
        let mut t = Times(Repr::Hist(Box::new(new_hist())));
        t.record_micros_buckets(pairs);
        t
    }

    /// Adds histogram buckets `(microseconds, count)` to a histogram (a
    /// stored run's per-second histograms); makes the times a histogram.
    pub fn record_micros_buckets(&mut self, pairs: impl IntoIterator<Item = (u64, u64)>) {
        let h = self.histogram();
        for (v, n) in pairs {
            // Auto-resizes to the value; counts saturate rather than overflow.
            let _ = h.record_n(v.min(MAX_MICROS), u32::try_from(n).unwrap_or(u32::MAX));
        }
    }

    /// Rebuilds from `(value bits, count)` pairs (a dump); `None` unless the
    /// counts add up to `expected`.
    pub fn from_bit_counts(pairs: &[(u64, u64)], expected: u64) -> Option<Times> {
        let total = pairs.iter().try_fold(0u64, |a, p| a.checked_add(p.1))?;
        if total != expected || pairs.len() > DISTINCT_MAX {
            return None;
        }
        let mut m: FxHashMap<u64, u64> = FxHashMap::default();
        for &(bits, n) in pairs {
            *m.entry(bits).or_insert(0) += n;
        }
        Some(Times(Repr::Counts(Box::new(m))))
    }

    /// `(value bits, count)` in ascending order of value, for a dump;
    /// `None` when not exact.
    pub fn bit_counts(&self) -> Option<Vec<(u64, u64)>> {
        Some(
            self.sorted()?
                .into_iter()
                .map(|(v, n)| (v.to_bits(), n))
                .collect(),
        )
    }

    /// Turns the values into a histogram (keeping them all, as microseconds).
    fn histogram(&mut self) -> &mut Histogram<u32> {
        if !matches!(self.0, Repr::Hist(_)) {
            let mut h = new_hist();
            for (v, n) in self.sorted().unwrap_or_default() {
                let _ = h.record_n(micros(v), u32::try_from(n).unwrap_or(u32::MAX));
            }
            self.0 = Repr::Hist(Box::new(h));
        }
        match &mut self.0 {
            Repr::Hist(h) => h,
            _ => unreachable!("made a histogram above"),
        }
    }

    /// Records one value (seconds).
    #[inline]
    pub fn record(&mut self, v: f64) {
        match &mut self.0 {
            Repr::Empty => self.0 = Repr::One(v),
            Repr::One(first) => {
                let mut values = Vec::with_capacity(4);
                values.push(*first);
                values.push(v);
                self.0 = Repr::Few(values);
            }
            Repr::Few(values) if values.len() < FEW_MAX => values.push(v),
            Repr::Few(values) => {
                let mut m = counts_of(values);
                *m.entry(v.to_bits()).or_insert(0) += 1;
                self.0 = Repr::Counts(Box::new(m));
            }
            Repr::Counts(m) => {
                *m.entry(v.to_bits()).or_insert(0) += 1;
                if m.len() > DISTINCT_MAX {
                    self.histogram();
                }
            }
            Repr::Hist(h) => {
                let _ = h.record(micros(v));
            }
        }
    }

    /// Adds every value of `other`.
    pub fn add(&mut self, other: &Times) {
        match &other.0 {
            Repr::Empty => {}
            Repr::One(v) => self.record(*v),
            Repr::Few(values) => {
                for &v in values {
                    self.record(v);
                }
            }
            Repr::Counts(m) => match &mut self.0 {
                Repr::Hist(h) => {
                    for (&bits, &n) in m.iter() {
                        let v = micros(f64::from_bits(bits));
                        let _ = h.record_n(v, u32::try_from(n).unwrap_or(u32::MAX));
                    }
                }
                _ => {
                    let mut own: FxHashMap<u64, u64> = match std::mem::take(&mut self.0) {
                        Repr::Empty => FxHashMap::default(),
                        Repr::One(v) => counts_of(&[v]),
                        Repr::Few(values) => counts_of(&values),
                        Repr::Counts(own) => *own,
                        Repr::Hist(_) => unreachable!("handled above"),
                    };
                    for (&bits, &n) in m.iter() {
                        *own.entry(bits).or_insert(0) += n;
                    }
                    let too_many = own.len() > DISTINCT_MAX;
                    self.0 = Repr::Counts(Box::new(own));
                    if too_many {
                        self.histogram();
                    }
                }
            },
            Repr::Hist(b) => {
                let _ = self.histogram().add(b.as_ref());
            }
        }
    }

    /// `(value, count)` in ascending order of value (Go's `<` order; equal
    /// values are the same bits, so their order cannot matter), or `None`
    /// when not exact.
    pub fn sorted(&self) -> Option<Vec<(f64, u64)>> {
        let mut out: Vec<(f64, u64)> = match &self.0 {
            Repr::Hist(_) => return None,
            Repr::Empty => Vec::new(),
            Repr::One(v) => vec![(*v, 1)],
            Repr::Few(values) => values.iter().map(|&v| (v, 1)).collect(),
            Repr::Counts(m) => m.iter().map(|(&b, &n)| (f64::from_bits(b), n)).collect(),
        };
        out.sort_by(|a, b| a.0.total_cmp(&b.0));
        // Merge equal values of the list form.
        let mut merged: Vec<(f64, u64)> = Vec::with_capacity(out.len());
        for (v, n) in out {
            match merged.last_mut() {
                Some((w, m)) if w.to_bits() == v.to_bits() => *m += n,
                _ => merged.push((v, n)),
            }
        }
        Some(merged)
    }

    /// The value at 0-based `rank` of the sorted values (alp's `PN`), or
    /// `None` when not exact.
    pub fn at_rank(&self, rank: u64) -> Option<f64> {
        if let Repr::One(v) = self.0 {
            return Some(v);
        }
        let sorted = self.sorted()?;
        let mut seen = 0u64;
        for (v, n) in &sorted {
            seen += n;
            if seen > rank {
                return Some(*v);
            }
        }
        sorted.last().map(|p| p.0)
    }

    /// alp's standard deviation: `avg` is alp's `sum / count`, the squared
    /// deviations are added one value at a time over the sorted values;
    /// `None` when not exact.
    pub fn alp_stddev(&self, avg: f64, count: u64) -> Option<f64> {
        let sorted = self.sorted()?;
        let mut stdd = 0.0f64;
        for (v, n) in sorted {
            let d = v - avg;
            for _ in 0..n {
                stdd += d * d;
            }
        }
        Some((stdd / count as f64).sqrt())
    }

    /// `(highest equivalent microseconds, count)` per bucket in ascending
    /// order, as `Histogram::iter_recorded` gives them, exact or not.
    pub fn buckets(&self) -> Vec<(u64, u64)> {
        match &self.0 {
            Repr::Hist(h) => h
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), u64::from(v.count_at_value())))
                .collect(),
            _ => {
                let t = template();
                let mut out: Vec<(u64, u64)> = Vec::new();
                // Sorted by value, so bucket tops arrive in order.
                for (v, n) in self.sorted().unwrap_or_default() {
                    let top = t.highest_equivalent(micros(v));
                    match out.last_mut() {
                        Some((t, c)) if *t == top => *c += n,
                        _ => out.push((top, n)),
                    }
                }
                out
            }
        }
    }

    /// The largest value's highest equivalent in microseconds
    /// (`Histogram::max`).
    pub fn max_micros(&self) -> u64 {
        match &self.0 {
            Repr::Hist(h) => h.max(),
            _ => self.buckets().last().map_or(0, |b| b.0),
        }
    }

    /// How many values (a histogram's saturated counts as held).
    pub fn len(&self) -> u64 {
        match &self.0 {
            Repr::Empty => 0,
            Repr::One(_) => 1,
            Repr::Few(v) => v.len() as u64,
            Repr::Counts(m) => m.values().sum(),
            Repr::Hist(h) => h.len(),
        }
    }

    /// Whether no value was recorded.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The middle of `us`'s bucket (`Histogram::median_equivalent`).
    pub fn median_equivalent(us: u64) -> u64 {
        template().median_equivalent(us)
    }

    /// The lowest value of `us`'s bucket (`Histogram::lowest_equivalent`).
    pub fn lowest_equivalent(us: u64) -> u64 {
        template().lowest_equivalent(us)
    }

    /// The highest value of `us`'s bucket (`Histogram::highest_equivalent`).
    pub fn highest_equivalent(us: u64) -> u64 {
        template().highest_equivalent(us)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// alp's arithmetic, literally, on a slice.
    fn alp(values: &[f64]) -> (f64, f64) {
        let mut sum = 0.0;
        for v in values {
            sum += v;
        }
        let mut s = values.to_vec();
        s.sort_by(f64::total_cmp);
        let avg = sum / values.len() as f64;
        let mut stdd = 0.0;
        for v in &s {
            stdd += (v - avg) * (v - avg);
        }
        (sum, (stdd / values.len() as f64).sqrt())
    }

    fn hist_of(values: &[f64]) -> Histogram<u32> {
        let mut h = new_hist();
        for &v in values {
            h.record(micros(v)).unwrap();
        }
        h
    }

    fn hist_buckets(h: &Histogram<u32>) -> Vec<(u64, u64)> {
        h.iter_recorded()
            .map(|v| (v.value_iterated_to(), u64::from(v.count_at_value())))
            .collect()
    }

    fn xorshift(x: &mut u64) -> u64 {
        *x ^= *x << 13;
        *x ^= *x >> 7;
        *x ^= *x << 17;
        *x
    }

    #[test]
    fn stddev_and_ranks_equal_alps_in_every_form() {
        let mut x: u64 = 99;
        for n in [1usize, 2, 3, 16, 17, 100, 5000] {
            let values: Vec<f64> = (0..n)
                .map(|_| (xorshift(&mut x) % 700) as f64 / 1000.0)
                .collect();
            let mut e = Times::new();
            let mut half = Times::new();
            for (i, &v) in values.iter().enumerate() {
                if i % 2 == 0 {
                    e.record(v)
                } else {
                    half.record(v)
                }
            }
            e.add(&half);
            assert!(e.is_exact());
            assert_eq!(e.len(), n as u64);
            let (sum, sd) = alp(&values);
            let got = e.alp_stddev(sum / n as f64, n as u64).unwrap();
            assert_eq!(got.to_bits(), sd.to_bits(), "n={n}");
            let mut s = values.clone();
            s.sort_by(f64::total_cmp);
            for r in [0, n / 2, n - 1] {
                assert_eq!(e.at_rank(r as u64), Some(s[r]));
            }
        }
    }

    #[test]
    fn a_tie_at_half_a_millisecond_prints_as_alp() {
        // 0.001 and 0.002: the true value is exactly 0.0005, so only the
        // same float steps round the printed digit the same way.
        let mut e = Times::new();
        e.record(0.001);
        e.record(0.002);
        let sd = e.alp_stddev((0.001 + 0.002) / 2.0, 2).unwrap();
        assert_eq!(sd.to_bits(), alp(&[0.001, 0.002]).1.to_bits());
    }

    #[test]
    fn exact_values_give_the_histograms_buckets() {
        let values = [
            1.234567, 0.000003, 0.000999, 0.001, 0.001001, 0.002047, 0.002048,
        ];
        let mut t = Times::new();
        for &v in &values {
            t.record(v);
        }
        assert!(t.is_exact());
        let h = hist_of(&values);
        assert_eq!(t.buckets(), hist_buckets(&h));
        assert_eq!(t.max_micros(), h.max());
        for v in values {
            let us = micros(v);
            assert_eq!(Times::median_equivalent(us), h.median_equivalent(us));
            assert_eq!(Times::lowest_equivalent(us), h.lowest_equivalent(us));
        }
    }

    #[test]
    fn too_many_distinct_values_become_a_histogram_of_them_all() {
        let mut a = Times::new();
        let mut b = Times::new();
        let mut all = Vec::new();
        for i in 0..=DISTINCT_MAX as u64 {
            let v = i as f64 / 1e5;
            all.push(v);
            if i % 3 == 0 {
                a.record(v)
            } else {
                b.record(v)
            }
        }
        assert!(a.is_exact() && b.is_exact());
        a.add(&b);
        assert!(a.is_histogram());
        assert_eq!(a.sorted(), None);
        assert_eq!(a.at_rank(0), None);
        assert_eq!(a.buckets(), hist_buckets(&hist_of(&all)));
        // A histogram absorbs exact values and other histograms.
        let mut small = Times::new();
        small.record(0.017);
        small.record(0.017);
        a.add(&small);
        let c = a.clone();
        a.add(&c);
        assert_eq!(a.len(), 2 * (DISTINCT_MAX as u64 + 3));
    }

    #[test]
    fn dumped_forms_read_back() {
        let mut t = Times::new();
        for v in [0.003, 0.001, 0.003, 0.2] {
            t.record(v);
        }
        let bits = t.bit_counts().unwrap();
        let back = Times::from_bit_counts(&bits, 4).unwrap();
        assert_eq!(back.sorted(), t.sorted());
        assert!(Times::from_bit_counts(&bits, 5).is_none());
        let h = Times::from_micros_buckets(t.buckets());
        assert!(h.is_histogram());
        assert_eq!(h.buckets(), t.buckets());
        assert_eq!(h.len(), 4);
    }

    #[test]
    fn one_value_costs_no_heap() {
        let mut t = Times::new();
        t.record(0.5);
        assert!(matches!(t.0, Repr::One(_)));
        assert_eq!(t.at_rank(0), Some(0.5));
        assert!(std::mem::size_of::<Times>() <= 32);
    }
}
