//! Exact running statistics with alp's arithmetic, mergeable in order.

use serde::{Deserialize, Serialize};

/// Minimum, maximum and sum of one quantity (response time or body size),
/// computed exactly as alp does so the printed columns agree to the digit.
///
/// alp's minimum has a quirk kept here on purpose: a value of zero is
/// recorded, but the next value replaces it (alp treats 0 as "unset"). The
/// state therefore depends on order; [`Summary::merge`] composes two
/// summaries of consecutive runs of lines into the summary of the
/// concatenation, so chunks analysed in parallel give the sequential answer.
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    /// Number of values.
    pub n: u64,
    /// alp's minimum state after these values, starting from "unset".
    pub min: f64,
    /// Whether any value was zero (a zero resets alp's minimum).
    pub saw_zero: bool,
    /// Largest value, never below 0 (alp starts from 0).
    pub max: f64,
    /// Sum of the values, added in line order.
    pub sum: f64,
}

impl Summary {
    /// Adds one value.
    #[inline]
    pub fn add(&mut self, v: f64) {
        self.n += 1;
        if self.max < v {
            self.max = v;
        }
        if self.min >= v || self.min == 0.0 {
            self.min = v;
        }
        if v == 0.0 {
            self.saw_zero = true;
        }
        self.sum += v;
    }

    /// Appends `later` (the summary of the lines after these ones).
    pub fn merge(&mut self, later: &Summary) {
        if later.n == 0 {
            return;
        }
        self.min = if self.n == 0 || later.saw_zero || self.min == 0.0 {
            later.min
        } else {
            self.min.min(later.min)
        };
        self.n += later.n;
        self.saw_zero |= later.saw_zero;
        if self.max < later.max {
            self.max = later.max;
        }
        self.sum += later.sum;
    }

    /// Appends `later` but leaves the sum alone: the caller adds the later
    /// values one by one, because alp's sum is a running float sum in line
    /// order and adding a partial sum rounds differently (0.066 against
    /// alp's 0.06599999999999999).
    pub fn merge_keep_sum(&mut self, later: &Summary) {
        let sum = self.sum;
        self.merge(later);
        self.sum = sum;
    }

    /// Mean as alp computes it (sum / count); NaN for no values, like alp.
    pub fn avg(&self) -> f64 {
        self.sum / self.n as f64
    }
}

/// Running mean and sum of squared deviations (Welford), for the population
/// standard deviation alp prints. Mergeable (Chan et al.).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize)]
pub struct Moments {
    /// Number of values.
    pub n: u64,
    /// Mean of the values.
    pub mean: f64,
    /// Sum of squared deviations from the mean.
    pub m2: f64,
}

impl Moments {
    /// Adds one value.
    #[inline]
    pub fn add(&mut self, v: f64) {
        self.n += 1;
        let d = v - self.mean;
        self.mean += d / self.n as f64;
        self.m2 += d * (v - self.mean);
    }

    /// Combines with another set of values.
    pub fn merge(&mut self, o: &Moments) {
        if o.n == 0 {
            return;
        }
        if self.n == 0 {
            *self = *o;
            return;
        }
        let n = (self.n + o.n) as f64;
        let d = o.mean - self.mean;
        self.m2 += o.m2 + d * d * self.n as f64 * o.n as f64 / n;
        self.mean += d * o.n as f64 / n;
        self.n += o.n;
    }

    /// Population standard deviation (divides by n, as alp does).
    pub fn stddev(&self) -> f64 {
        if self.n == 0 {
            return f64::NAN;
        }
        // Rounding can leave m2 a hair below zero; NaN stays NaN (alp prints it).
        let var = self.m2 / self.n as f64;
        if var < 0.0 {
            0.0
        } else {
            var.sqrt()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// alp's minimum, literally: the reference the merge must reproduce.
    fn alp_min(vals: &[f64]) -> f64 {
        let mut m = 0.0;
        for &v in vals {
            if m >= v || m == 0.0 {
                m = v;
            }
        }
        m
    }

    #[test]
    fn zero_quirk_matches_alp() {
        let v = [0.002, 0.0, 0.001];
        let mut s = Summary::default();
        v.iter().for_each(|&x| s.add(x));
        assert_eq!(s.min, 0.001);
        assert_eq!(s.min, alp_min(&v));
    }

    #[test]
    fn merge_in_order_equals_sequential() {
        let v = [0.5, 0.3, 0.0, 0.7, 0.9, 0.0, 0.0, 0.4, 0.2, 0.6];
        for cut in 0..=v.len() {
            for cut2 in cut..=v.len() {
                let mut parts = [Summary::default(), Summary::default(), Summary::default()];
                v[..cut].iter().for_each(|&x| parts[0].add(x));
                v[cut..cut2].iter().for_each(|&x| parts[1].add(x));
                v[cut2..].iter().for_each(|&x| parts[2].add(x));
                let mut m = parts[0];
                m.merge(&parts[1]);
                m.merge(&parts[2]);
                assert_eq!(m.min, alp_min(&v), "cuts {cut} {cut2}");
                assert_eq!(m.n, v.len() as u64);
                assert_eq!(m.max, 0.9);
            }
        }
    }

    #[test]
    fn moments_merge() {
        let v: Vec<f64> = (0..100).map(|i| (i * 37 % 11) as f64 * 0.1).collect();
        let mut a = Moments::default();
        let mut b = Moments::default();
        let mut all = Moments::default();
        for (i, &x) in v.iter().enumerate() {
            all.add(x);
            if i < 40 {
                a.add(x)
            } else {
                b.add(x)
            }
        }
        a.merge(&b);
        let mean = v.iter().sum::<f64>() / v.len() as f64;
        let sd = (v.iter().map(|x| (x - mean) * (x - mean)).sum::<f64>() / v.len() as f64).sqrt();
        assert!((a.stddev() - sd).abs() < 1e-12);
        assert!((all.stddev() - sd).abs() < 1e-12);
    }
}
