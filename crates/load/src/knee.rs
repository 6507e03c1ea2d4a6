//! The knee of a sweep: the phase after which more load stops buying
//! throughput and only adds latency.
//!
//! Rule (documented in docs/bench.md): phases are taken in order of load.
//! For a phase `k` and any later phase `j`, the *scaling efficiency* is the
//! relative throughput gain divided by the relative load gain:
//! `e(k, j) = (rps_j / rps_k - 1) / (load_j / load_k - 1)`. Perfect scaling
//! is 1, a plateau is 0. The knee is the first phase `k` such that
//! 1. no later phase scales from it by at least [`MIN_EFFICIENCY`] (so one
//!    noisy phase cannot end the climb early, and a dip cannot hide a later
//!    rise), and
//! 2. its throughput is at least [`NEAR_PEAK`] of the best throughput of
//!    the sweep (a phase that merely slowed its growth is not yet the
//!    plateau), and
//! 3. latency (p50) at the next phase is higher than at `k` (the extra load
//!    only queued).
//!
//! Returns `None` when throughput keeps scaling to the last phase (the
//! sweep never reached saturation) or when there are fewer than two phases.

use crate::report::PhaseReport;

/// A phase must deliver at least this share of the proportional throughput
/// gain to count as still scaling.
pub const MIN_EFFICIENCY: f64 = 0.5;

/// The knee's throughput must be at least this share of the sweep's best.
pub const NEAR_PEAK: f64 = 0.9;

/// One sweep point as the knee rule sees it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct KneePoint {
    /// Connections or rate.
    pub load: f64,
    /// Achieved throughput, requests/s (responses without transport errors).
    pub rps: f64,
    /// Median latency, ms.
    pub p50_ms: f64,
}

/// The knee of measured phases (index into `phases`).
pub fn knee(phases: &[PhaseReport]) -> Option<usize> {
    let points: Vec<KneePoint> = phases
        .iter()
        .map(|p| KneePoint {
            load: p.load(),
            rps: p.stats.rps,
            p50_ms: p.stats.latency_ms.p50,
        })
        .collect();
    knee_of(&points)
}

/// The knee of sweep points (index into `points`), see the module docs.
pub fn knee_of(points: &[KneePoint]) -> Option<usize> {
    let mut order: Vec<usize> = (0..points.len()).collect();
    order.sort_by(|a, b| points[*a].load.total_cmp(&points[*b].load));
    if order.len() < 2 {
        return None;
    }
    let peak = points.iter().map(|p| p.rps).fold(0.0, f64::max);
    for (pos, &k) in order.iter().enumerate().take(order.len() - 1) {
        let base = points[k];
        if base.rps < NEAR_PEAK * peak {
            continue;
        }
        let later = &order[pos + 1..];
        let still_scaling = later
            .iter()
            .any(|&j| efficiency(base, points[j]) >= MIN_EFFICIENCY);
        if still_scaling {
            continue;
        }
        let next = points[later[0]];
        if next.p50_ms > base.p50_ms {
            return Some(k);
        }
    }
    None
}

/// Relative throughput gain per relative load gain from `a` to `b`.
pub fn efficiency(a: KneePoint, b: KneePoint) -> f64 {
    if a.load <= 0.0 || b.load <= a.load {
        return 0.0;
    }
    if a.rps <= 0.0 {
        // Nothing at the lower load: any throughput at the higher one is scaling.
        return if b.rps > 0.0 { f64::INFINITY } else { 0.0 };
    }
    (b.rps / a.rps - 1.0) / (b.load / a.load - 1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pts(v: &[(f64, f64, f64)]) -> Vec<KneePoint> {
        v.iter()
            .map(|&(load, rps, p50_ms)| KneePoint { load, rps, p50_ms })
            .collect()
    }

    #[test]
    fn four_slots_of_ten_ms() {
        // 4 slots x 10 ms: 100 req/s per connection up to 4, then flat.
        let p = pts(&[
            (1.0, 100.0, 10.0),
            (2.0, 199.0, 10.1),
            (3.0, 297.0, 10.1),
            (4.0, 392.0, 10.2),
            (5.0, 396.0, 12.6),
            (6.0, 394.0, 15.1),
            (8.0, 397.0, 20.2),
        ]);
        assert_eq!(knee_of(&p), Some(3));
    }

    #[test]
    fn noise_after_the_knee_does_not_move_it() {
        // A lucky phase after the plateau must not restart the climb unless it really scales.
        let p = pts(&[
            (10.0, 1000.0, 10.0),
            (20.0, 1950.0, 10.3),
            (30.0, 2400.0, 12.0),
            (40.0, 2350.0, 17.0),
            (50.0, 2500.0, 20.0),
            (60.0, 2420.0, 25.0),
        ]);
        assert_eq!(knee_of(&p), Some(2));
    }

    #[test]
    fn a_dip_does_not_end_the_climb() {
        // Phase 2 dipped (noise) but phase 3 scales from it: not the knee.
        let p = pts(&[
            (1.0, 100.0, 10.0),
            (2.0, 200.0, 10.0),
            (3.0, 205.0, 14.0),
            (4.0, 400.0, 10.0),
            (5.0, 405.0, 12.0),
            (6.0, 404.0, 15.0),
        ]);
        assert_eq!(knee_of(&p), Some(3));
    }

    #[test]
    fn still_scaling_means_no_knee() {
        let p = pts(&[
            (1.0, 100.0, 1.0),
            (2.0, 200.0, 1.0),
            (4.0, 390.0, 1.1),
            (8.0, 770.0, 1.2),
        ]);
        assert_eq!(knee_of(&p), None);
    }

    #[test]
    fn flat_latency_is_not_a_knee() {
        // Throughput flat but latency flat too (e.g. the client was the limit): no knee claimed.
        let p = pts(&[(1.0, 100.0, 1.0), (2.0, 100.0, 1.0), (3.0, 100.0, 1.0)]);
        assert_eq!(knee_of(&p), None);
    }

    #[test]
    fn saturated_from_the_start() {
        let p = pts(&[
            (10.0, 400.0, 25.0),
            (20.0, 401.0, 50.0),
            (30.0, 399.0, 75.0),
        ]);
        assert_eq!(knee_of(&p), Some(0));
    }

    #[test]
    fn open_model_rates() {
        // Rates offered vs achieved: tracks the offer to 4000, then flat at ~4300.
        let p = pts(&[
            (1000.0, 1000.0, 1.0),
            (2000.0, 2000.0, 1.0),
            (3000.0, 3000.0, 1.1),
            (4000.0, 3990.0, 1.5),
            (5000.0, 4300.0, 250.0),
            (6000.0, 4310.0, 900.0),
        ]);
        assert_eq!(knee_of(&p), Some(3));
    }

    #[test]
    fn order_of_input_does_not_matter() {
        let mut p = pts(&[
            (1.0, 100.0, 10.0),
            (2.0, 200.0, 10.0),
            (3.0, 205.0, 15.0),
            (4.0, 203.0, 20.0),
        ]);
        p.reverse();
        // Index refers to the input order: load 2 is at position 2 after reversing.
        assert_eq!(knee_of(&p), Some(2));
        assert_eq!(knee_of(&p[..1]), None);
        assert_eq!(knee_of(&[]), None);
    }
}
