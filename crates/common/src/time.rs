//! UTC calendar times and human-readable lengths, written the same way by
//! every command (`runs`, `show`, the logs timeline).

/// UTC calendar fields `(year, month, day, hour, minute, second)` of a Unix
/// time in seconds (Howard Hinnant's days_from_civil inverse; proleptic
/// Gregorian, any i64 that fits).
pub fn civil_from_unix(secs: i64) -> (i64, u32, u32, u32, u32, u32) {
    let days = secs.div_euclid(86_400);
    let rem = secs.rem_euclid(86_400);
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (
        y,
        m,
        d,
        (rem / 3600) as u32,
        ((rem % 3600) / 60) as u32,
        (rem % 60) as u32,
    )
}

/// `YYYY-MM-DD HH:MM:SS` (UTC) of a Unix time in milliseconds, as tables
/// show it.
pub fn utc(ms: i64) -> String {
    let (y, mo, d, h, mi, s) = civil_from_unix(ms.div_euclid(1000));
    format!("{y:04}-{mo:02}-{d:02} {h:02}:{mi:02}:{s:02}")
}

/// `YYYY-MM-DDTHH:MM:SSZ` (ISO 8601, UTC) of a Unix time in seconds, as
/// machine-readable outputs write it; fractions of a second are dropped.
pub fn utc_iso(secs: f64) -> String {
    let (y, mo, d, h, mi, s) = civil_from_unix(secs.floor() as i64);
    format!("{y:04}-{mo:02}-{d:02}T{h:02}:{mi:02}:{s:02}Z")
}

/// A length in milliseconds as `12.3s` below a minute, else `4m05s`.
pub fn human_duration(ms: f64) -> String {
    let s = ms / 1000.0;
    if s < 60.0 {
        format!("{s:.1}s")
    } else {
        let m = (s / 60.0).floor();
        format!("{}m{:02.0}s", m as u64, s - m * 60.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn calendar() {
        assert_eq!(civil_from_unix(0), (1970, 1, 1, 0, 0, 0));
        assert_eq!(civil_from_unix(1_763_760_600), (2025, 11, 21, 21, 30, 0));
        assert_eq!(civil_from_unix(951_782_400), (2000, 2, 29, 0, 0, 0));
        assert_eq!(civil_from_unix(-1), (1969, 12, 31, 23, 59, 59));
        assert_eq!(utc(1_763_760_600_999), "2025-11-21 21:30:00");
        assert_eq!(utc_iso(1_700_000_000.5), "2023-11-14T22:13:20Z");
    }

    #[test]
    fn lengths() {
        assert_eq!(human_duration(12_340.0), "12.3s");
        assert_eq!(human_duration(245_000.0), "4m05s");
    }
}
