//! Ramps: `--stages 30s:100,2m:1000,30s:0`, each stage moving the load
//! linearly from the level the previous one ended at (0 before the first)
//! to its own, over its duration. A stage is a phase: judged and reported
//! like a sweep step. The open model ramps the rate, the closed model the
//! connections.
//!
//! The open model's schedule is computed, not accumulated: request `k` of
//! a phase is due when the integral of the rate reaches `k + offset`, so a
//! ramp's sends follow the line exactly and a constant rate never drifts.

use crate::error::LoadError;
use std::time::Duration;

/// Most stages accepted (each is a phase in the report).
pub const MAX_STAGES: usize = 1000;

/// One stage as written: hold `duration` while moving to `level`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stage {
    /// How long the stage lasts.
    pub duration: Duration,
    /// The level at its end (requests per second or connections).
    pub level: f64,
}

/// Parses `DUR:LEVEL[,DUR:LEVEL...]`.
pub fn parse_stages(s: &str) -> Result<Vec<Stage>, LoadError> {
    let bad = |why: String| {
        LoadError::BadInput(format!(
            "bad stages {s:?}: {why} (use DUR:LEVEL,..., e.g. 30s:100,2m:1000,30s:0)"
        ))
    };
    let mut out = Vec::new();
    for part in s.split(',') {
        let part = part.trim();
        let (d, l) = part
            .rsplit_once(':')
            .ok_or_else(|| bad(format!("{part:?} has no ':'")))?;
        let duration =
            keisoku_common::parse_duration(d.trim()).map_err(|e| bad(format!("{part:?}: {e}")))?;
        if duration.is_zero() {
            return Err(bad(format!("{part:?}: a stage lasts more than 0")));
        }
        let level = l
            .trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v >= 0.0)
            .ok_or_else(|| bad(format!("{part:?}: the level must be a number >= 0")))?;
        out.push(Stage { duration, level });
    }
    if out.len() > MAX_STAGES {
        return Err(bad(format!("more than {MAX_STAGES} stages")));
    }
    if out.iter().all(|st| st.level == 0.0) {
        return Err(bad("every level is 0: nothing would be sent".into()));
    }
    Ok(out)
}

/// A linear ramp of a phase: the load level at its start and its end.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct Ramp {
    /// Level at the phase's start.
    pub from: f64,
    /// Level at the phase's end.
    pub to: f64,
}

impl Ramp {
    /// The level `elapsed` into a phase of length `duration`.
    pub fn level_at(&self, elapsed: Duration, duration: Duration) -> f64 {
        let f = if duration.is_zero() {
            1.0
        } else {
            (elapsed.as_secs_f64() / duration.as_secs_f64()).clamp(0.0, 1.0)
        };
        self.from + (self.to - self.from) * f
    }
}

/// When the requests of one open-model phase (on one thread) are due.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Schedule {
    /// Rate at the start, requests per second.
    r0: f64,
    /// Rate change per second (0 for a constant rate).
    slope: f64,
    /// Length of the phase (None: bounded by a count, constant rate).
    length: Option<f64>,
    /// Fraction of a request this thread's schedule is shifted by, so the
    /// threads' sends interleave.
    offset: f64,
}

impl Schedule {
    /// A constant rate, or a ramp from `from` to `rate` over `length`.
    pub fn new(rate: f64, ramp_from: Option<f64>, length: Option<Duration>, offset: f64) -> Self {
        let length = length.map(|d| d.as_secs_f64()).filter(|l| *l > 0.0);
        let (r0, slope) = match (ramp_from, length) {
            (Some(from), Some(l)) => (from, (rate - from) / l),
            _ => (rate, 0.0),
        };
        Schedule {
            r0: r0.max(0.0),
            slope,
            length,
            offset,
        }
    }

    /// Requests due in the first `t` seconds (the integral of the rate).
    fn count_at(&self, t: f64) -> f64 {
        self.r0 * t + self.slope * t * t / 2.0
    }

    /// Seconds after the phase's start at which request `k` (from 0) is
    /// due; None when the phase ends first.
    pub fn due(&self, k: u64) -> Option<f64> {
        let n = k as f64 + self.offset;
        if let Some(l) = self.length {
            if n >= self.count_at(l) {
                return None;
            }
        }
        if n <= 0.0 {
            return Some(0.0);
        }
        if self.slope == 0.0 {
            return (self.r0 > 0.0).then(|| n / self.r0);
        }
        // slope/2 t² + r0 t - n = 0, the root where the count first reaches n;
        // in this form it stays exact when the slope is tiny.
        let disc = self.r0 * self.r0 + 2.0 * self.slope * n;
        if disc < 0.0 {
            return None;
        }
        let t = 2.0 * n / (self.r0 + disc.sqrt());
        t.is_finite().then_some(t)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stages_parse() {
        let s = parse_stages("30s:100, 2m:1000,30s:0").unwrap();
        assert_eq!(s.len(), 3);
        assert_eq!(s[1].duration, Duration::from_secs(120));
        assert_eq!(s[2].level, 0.0);
        for bad in ["", "30s", "0s:10", "x:10", "10s:-1", "10s:abc", "5s:0,5s:0"] {
            assert!(parse_stages(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_constant_schedule_is_evenly_spaced() {
        let s = Schedule::new(100.0, None, Some(Duration::from_secs(1)), 0.5);
        assert_eq!(s.due(0), Some(0.005));
        assert!((s.due(99).unwrap() - 0.995).abs() < 1e-12);
        assert_eq!(s.due(100), None);
        let unbounded = Schedule::new(100.0, None, None, 0.0);
        assert!(unbounded.due(1_000_000).is_some());
    }

    #[test]
    fn a_ramp_sends_its_integral() {
        // 0 -> 100 req/s over 10 s: 500 requests, a quarter of them in the
        // first half (the count grows with t²).
        let s = Schedule::new(100.0, Some(0.0), Some(Duration::from_secs(10)), 0.0);
        let times: Vec<f64> = (0..).map_while(|k| s.due(k)).collect();
        assert_eq!(times.len(), 500);
        let first_half = times.iter().filter(|t| **t < 5.0).count();
        assert!((124..=126).contains(&first_half), "{first_half}");
        assert!(times.windows(2).all(|w| w[0] <= w[1]));
        // Down: 100 -> 0 over 10 s, also 500, front-loaded.
        let s = Schedule::new(0.0, Some(100.0), Some(Duration::from_secs(10)), 0.0);
        let times: Vec<f64> = (0..).map_while(|k| s.due(k)).collect();
        assert_eq!(times.len(), 500);
        assert!(times.iter().filter(|t| **t < 5.0).count() >= 374);
        let r = Ramp {
            from: 10.0,
            to: 30.0,
        };
        assert_eq!(
            r.level_at(Duration::from_secs(5), Duration::from_secs(10)),
            20.0
        );
    }
}
