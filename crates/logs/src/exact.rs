//! A route's response times kept exactly, as long as that stays cheap, so
//! percentiles and the standard deviation are alp's to the last bit.
//!
//! alp keeps every value of every route and prints `sorted[rank]` and
//! `sqrt(Σ (v - sum/n)² / n)` summed over the sorted values (its percentile
//! columns sort the slice in place before the stddev column is computed).
//! A histogram or a one-pass variance agrees to about 1e-12, which is enough
//! to flip a printed digit where the true value ends in 5 (two requests
//! 1 ms apart have a stddev of exactly 0.0005). Here a route keeps its values
//! in a short list, then as distinct value -> count (nginx writes whole
//! milliseconds, so a busy route has a few thousand distinct values at most),
//! and gives up only beyond [`DISTINCT_MAX`] distinct values, where the
//! caller falls back to its histogram and moments.

use rustc_hash::FxHashMap;

/// Values kept as a plain list before switching to counts.
const FEW_MAX: usize = 16;

/// Distinct values kept at most; more and the route stops being exact.
pub const DISTINCT_MAX: usize = 20_000;

#[derive(Debug, Clone)]
enum Repr {
    Few(Vec<f64>),
    /// f64 bit pattern -> how many times it occurred.
    Counts(FxHashMap<u64, u64>),
    /// Too many distinct values: no longer exact.
    Gone,
}

/// Response times of one route, exact while [`ExactTimes::is_exact`].
#[derive(Debug, Clone)]
pub struct ExactTimes(Repr);

impl Default for ExactTimes {
    fn default() -> Self {
        ExactTimes(Repr::Few(Vec::new()))
    }
}

impl ExactTimes {
    /// No values.
    pub fn new() -> ExactTimes {
        ExactTimes::default()
    }

    /// A route whose values are not known exactly (e.g. loaded from a dump
    /// that holds a histogram).
    pub fn unknown() -> ExactTimes {
        ExactTimes(Repr::Gone)
    }

    /// Rebuilds from `(value bits, count)` pairs (a dump); `None` unless the
    /// counts add up to `expected`.
    pub fn from_bit_counts(pairs: &[(u64, u64)], expected: u64) -> Option<ExactTimes> {
        let total = pairs.iter().try_fold(0u64, |a, p| a.checked_add(p.1))?;
        if total != expected || pairs.len() > DISTINCT_MAX {
            return None;
        }
        let mut m: FxHashMap<u64, u64> = FxHashMap::default();
        for &(bits, n) in pairs {
            *m.entry(bits).or_insert(0) += n;
        }
        Some(ExactTimes(Repr::Counts(m)))
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

    /// Whether every value is held.
    pub fn is_exact(&self) -> bool {
        !matches!(self.0, Repr::Gone)
    }

    /// Records one value.
    #[inline]
    pub fn record(&mut self, v: f64) {
        match &mut self.0 {
            Repr::Few(values) if values.len() < FEW_MAX => values.push(v),
            Repr::Few(values) => {
                let mut m: FxHashMap<u64, u64> = FxHashMap::default();
                for x in values.iter().chain(std::iter::once(&v)) {
                    *m.entry(x.to_bits()).or_insert(0) += 1;
                }
                self.0 = Repr::Counts(m);
            }
            Repr::Counts(m) => {
                *m.entry(v.to_bits()).or_insert(0) += 1;
                if m.len() > DISTINCT_MAX {
                    self.0 = Repr::Gone;
                }
            }
            Repr::Gone => {}
        }
    }

    /// Adds every value of `other`.
    pub fn add(&mut self, other: &ExactTimes) {
        match &other.0 {
            Repr::Gone => self.0 = Repr::Gone,
            Repr::Few(values) => {
                for &v in values {
                    self.record(v);
                }
            }
            Repr::Counts(m) => {
                if let Repr::Few(values) = &self.0 {
                    let mut own: FxHashMap<u64, u64> = FxHashMap::default();
                    for x in values {
                        *own.entry(x.to_bits()).or_insert(0) += 1;
                    }
                    self.0 = Repr::Counts(own);
                }
                if let Repr::Counts(own) = &mut self.0 {
                    for (&bits, &n) in m {
                        *own.entry(bits).or_insert(0) += n;
                    }
                    if own.len() > DISTINCT_MAX {
                        self.0 = Repr::Gone;
                    }
                }
            }
        }
    }

    /// `(value, count)` in ascending order of value (Go's `<` order; equal
    /// values are the same bits, so their order cannot matter), or `None`
    /// when not exact.
    pub fn sorted(&self) -> Option<Vec<(f64, u64)>> {
        let mut out: Vec<(f64, u64)> = match &self.0 {
            Repr::Gone => return None,
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

    /// The value at 0-based `rank` of the sorted values (alp's `PN`).
    pub fn at_rank(&self, rank: u64) -> Option<f64> {
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
    /// deviations are added one value at a time over the sorted values.
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

    #[test]
    fn stddev_and_ranks_equal_alps() {
        let mut x: u64 = 99;
        for n in [1usize, 2, 3, 16, 17, 100, 5000] {
            let values: Vec<f64> = (0..n)
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    (x % 700) as f64 / 1000.0
                })
                .collect();
            let mut e = ExactTimes::new();
            let mut half = ExactTimes::new();
            for (i, &v) in values.iter().enumerate() {
                if i % 2 == 0 {
                    e.record(v)
                } else {
                    half.record(v)
                }
            }
            e.add(&half);
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
        let mut e = ExactTimes::new();
        e.record(0.001);
        e.record(0.002);
        let sd = e.alp_stddev((0.001 + 0.002) / 2.0, 2).unwrap();
        assert_eq!(sd.to_bits(), alp(&[0.001, 0.002]).1.to_bits());
    }

    #[test]
    fn too_many_distinct_values_give_up() {
        let mut e = ExactTimes::new();
        for i in 0..=DISTINCT_MAX as u64 {
            e.record(i as f64);
        }
        assert!(!e.is_exact());
        assert_eq!(e.sorted(), None);
    }
}
