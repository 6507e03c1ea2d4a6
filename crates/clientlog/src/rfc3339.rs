//! RFC 3339 times as k6 and vegeta write them
//! (`2026-11-24T10:00:00.123456789+09:00`), to Unix milliseconds.

fn digits(b: &[u8]) -> Option<i64> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    b.iter().try_fold(0i64, |v, d| {
        v.checked_mul(10)?.checked_add(i64::from(d - b'0'))
    })
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
/// days_from_civil).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Unix milliseconds of an RFC 3339 time; `None` when `text` is not one.
pub(crate) fn unix_ms(text: &str) -> Option<f64> {
    let b = text.as_bytes();
    if b.len() < 20 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    if b[13] != b':' || b[16] != b':' {
        return None;
    }
    let (y, mo, d) = (digits(&b[0..4])?, digits(&b[5..7])?, digits(&b[8..10])?);
    let (h, mi, s) = (
        digits(&b[11..13])?,
        digits(&b[14..16])?,
        digits(&b[17..19])?,
    );
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || s > 60 {
        return None;
    }
    let mut rest = &b[19..];
    let mut frac_ms = 0.0;
    if let Some(r) = rest.strip_prefix(b".") {
        let n = r.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return None;
        }
        // Nanoseconds at most: more digits than that are below any clock.
        let used = n.min(9);
        let v = digits(&r[..used])? as f64;
        frac_ms = v / 10f64.powi(used as i32) * 1000.0;
        rest = &r[n..];
    }
    let offset_s = match rest {
        b"Z" | b"z" => 0,
        [sign @ (b'+' | b'-'), hh0, hh1, b':', mm0, mm1] => {
            let off = digits(&[*hh0, *hh1])? * 3600 + digits(&[*mm0, *mm1])? * 60;
            if *sign == b'-' {
                -off
            } else {
                off
            }
        }
        _ => return None,
    };
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - offset_s;
    Some(secs as f64 * 1000.0 + frac_ms)
}

#[cfg(test)]
mod tests {
    use super::unix_ms;

    #[test]
    fn zones_and_fractions() {
        assert_eq!(unix_ms("1970-01-01T00:00:01Z"), Some(1000.0));
        assert_eq!(unix_ms("1970-01-01T09:00:01.5+09:00"), Some(1500.0));
        let ns = unix_ms("2026-11-24T10:00:00.123456789Z").unwrap();
        assert!((ns - 1_795_514_400_123.456_8).abs() < 0.001, "{ns}");
        for bad in [
            "",
            "2026-11-24",
            "2026-11-24T10:00:00",
            "2026-13-24T10:00:00Z",
            "2026-11-24T10:00:00.Z",
        ] {
            assert_eq!(unix_ms(bad), None, "{bad}");
        }
    }
}
