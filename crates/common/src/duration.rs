//! Durations: `10s`, `500ms`, `2m`, `1.5h`, `1d`, `250us`, `100ns`; a bare
//! number is seconds. One grammar for every flag that takes a time.

use std::time::Duration;

/// The longest duration accepted: about 115 days, far beyond any run, and
/// small enough that arithmetic on it in ns never overflows.
pub const MAX_SECS: f64 = 1e7;

/// Why a text is not a duration.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad duration {text:?} (use e.g. 10s, 500ms, 2m, 1h, 1d)")]
pub struct DurationError {
    /// The text as given.
    pub text: String,
}

/// The seconds one unit stands for, or `None` for an unknown unit.
fn unit_secs(unit: &str) -> Option<f64> {
    Some(match unit {
        "" | "s" | "sec" | "secs" => 1.0,
        "ms" => 1e-3,
        "us" | "µs" => 1e-6,
        "ns" => 1e-9,
        "m" | "min" => 60.0,
        "h" => 3600.0,
        "d" => 86_400.0,
        _ => return None,
    })
}

/// Parses a duration: a non-negative decimal number and an optional unit
/// (`ns`, `us`/`µs`, `ms`, `s`/`sec`, `m`/`min`, `h`, `d`; none means
/// seconds), at most [`MAX_SECS`]. Zero is a valid duration; callers for
/// which zero makes no sense say so themselves.
pub fn parse_duration(text: &str) -> Result<Duration, DurationError> {
    let bad = || DurationError {
        text: text.to_string(),
    };
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    if num.is_empty() {
        return Err(bad());
    }
    let value: f64 = num.parse().map_err(|_| bad())?;
    let secs = value * unit_secs(unit.trim()).ok_or_else(bad)?;
    if !secs.is_finite() || !(0.0..=MAX_SECS).contains(&secs) {
        return Err(bad());
    }
    Ok(Duration::from_secs_f64(secs))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn units() {
        let d = |s: &str| parse_duration(s).map(|d| d.as_secs_f64());
        assert_eq!(d("10s"), Ok(10.0));
        assert_eq!(d("500ms"), Ok(0.5));
        assert_eq!(d("2m"), Ok(120.0));
        assert_eq!(d("1.5s"), Ok(1.5));
        assert_eq!(d("3"), Ok(3.0));
        assert_eq!(d("1d"), Ok(86_400.0));
        assert_eq!(d("2h"), Ok(7200.0));
        assert_eq!(d(" 250us "), Ok(0.00025));
        assert_eq!(d("0s"), Ok(0.0));
        for bad in ["", "s", "fast", "-1s", "1x", "1e3", "1..2s", "200d"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
