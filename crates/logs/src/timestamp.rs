//! Request timestamps as access logs write them, to Unix seconds.
//!
//! Needed only for `--timeline`, `--slow` and time filters, so parsing is
//! lazy. Accepted: ISO 8601 (`$time_iso8601`, `2006-01-02T15:04:05+09:00`,
//! optional fraction, `Z`), Common Log Format (`$time_local`,
//! `02/Jan/2006:15:04:05 -0700`, brackets optional) and epoch seconds
//! (`$msec`, `1700000000.123`).

/// 10000-01-01T00:00:00Z: epoch stamps from then on are refused.
const MAX_EPOCH: f64 = 253_402_300_800.0;

fn num(b: &[u8]) -> Option<i64> {
    if b.is_empty() || !b.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let mut v: i64 = 0;
    for &d in b {
        v = v.checked_mul(10)?.checked_add(i64::from(d - b'0'))?;
    }
    Some(v)
}

/// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn valid_ymdhms(mo: i64, d: i64, h: i64, mi: i64, s: i64) -> bool {
    (1..=12).contains(&mo) && (1..=31).contains(&d) && h < 24 && mi < 60 && s <= 60
}

fn zone(b: &[u8]) -> Option<i64> {
    match b {
        b"Z" | b"z" | b"" => Some(0),
        [sign @ (b'+' | b'-'), rest @ ..] => {
            let digits: Vec<u8> = rest.iter().copied().filter(|c| *c != b':').collect();
            if digits.len() != 4 {
                return None;
            }
            let h = num(&digits[..2])?;
            let m = num(&digits[2..])?;
            let off = h * 3600 + m * 60;
            Some(if *sign == b'-' { -off } else { off })
        }
        _ => None,
    }
}

fn fraction(b: &[u8]) -> Option<(f64, &[u8])> {
    if let Some(rest) = b.strip_prefix(b".") {
        let n = rest.iter().take_while(|c| c.is_ascii_digit()).count();
        if n == 0 {
            return None;
        }
        let f: f64 = std::str::from_utf8(&b[..n + 1]).ok()?.parse().ok()?;
        Some((f, &rest[n..]))
    } else {
        Some((0.0, b))
    }
}

fn iso8601(b: &[u8]) -> Option<f64> {
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !(b[10] == b'T' || b[10] == b' ') {
        return None;
    }
    let (y, mo, d) = (num(&b[0..4])?, num(&b[5..7])?, num(&b[8..10])?);
    let (h, mi, s) = (num(&b[11..13])?, num(&b[14..16])?, num(&b[17..19])?);
    if b[13] != b':' || b[16] != b':' || !valid_ymdhms(mo, d, h, mi, s) {
        return None;
    }
    let (frac, rest) = fraction(&b[19..])?;
    let off = zone(rest)?;
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - off;
    Some(secs as f64 + frac)
}

fn month(b: &[u8]) -> Option<i64> {
    const M: [&[u8]; 12] = [
        b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov",
        b"Dec",
    ];
    M.iter().position(|m| *m == b).map(|i| i as i64 + 1)
}

fn clf(b: &[u8]) -> Option<f64> {
    // 02/Jan/2006:15:04:05 -0700
    if b.len() < 20 || b[2] != b'/' || b[6] != b'/' || b[11] != b':' {
        return None;
    }
    let (d, mo, y) = (num(&b[0..2])?, month(&b[3..6])?, num(&b[7..11])?);
    let (h, mi, s) = (num(&b[12..14])?, num(&b[15..17])?, num(&b[18..20])?);
    if b[14] != b':' || b[17] != b':' || !valid_ymdhms(mo, d, h, mi, s) {
        return None;
    }
    let (frac, rest) = fraction(&b[20..])?;
    let off = zone(rest.strip_prefix(b" ").unwrap_or(rest))?;
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s - off;
    Some(secs as f64 + frac)
}

/// Parses a log timestamp to Unix seconds (with fraction); `None` if the
/// text is in none of the accepted forms.
pub fn parse(text: &[u8]) -> Option<f64> {
    let t = text.strip_prefix(b"[").unwrap_or(text);
    let t = t.strip_suffix(b"]").unwrap_or(t);
    if t.first().is_some_and(u8::is_ascii_digit)
        && t.len() >= 9
        && t.iter().all(|c| c.is_ascii_digit() || *c == b'.')
    {
        let v: f64 = std::str::from_utf8(t).ok()?.parse().ok()?;
        // After the year 9999 (as ISO and CLF stamps are) it is not a time.
        return (v < MAX_EPOCH).then_some(v);
    }
    iso8601(t).or_else(|| clf(t))
}

/// Parses a positive duration in keisoku's one grammar (`1s`, `500ms`,
/// `5m`, `2h`, `1d`, a bare number of seconds; see
/// [`keisoku_common::duration`]) as seconds.
pub fn parse_duration(text: &str) -> Option<f64> {
    keisoku_common::parse_duration(text)
        .ok()
        .map(|d| d.as_secs_f64())
        .filter(|s| *s > 0.0)
}

/// Formats Unix seconds as `YYYY-MM-DDTHH:MM:SSZ` (UTC).
pub fn format_utc(secs: f64) -> String {
    keisoku_common::utc_iso(secs)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        let want = 1_700_000_000.0;
        assert_eq!(parse(b"2023-11-14T22:13:20+00:00"), Some(want));
        assert_eq!(parse(b"2023-11-15T07:13:20+09:00"), Some(want));
        assert_eq!(parse(b"2023-11-14T22:13:20Z"), Some(want));
        assert_eq!(parse(b"[14/Nov/2023:22:13:20 +0000]"), Some(want));
        assert_eq!(parse(b"14/Nov/2023:23:13:20 +0100"), Some(want));
        assert_eq!(parse(b"1700000000.5"), Some(want + 0.5));
        assert_eq!(parse(b"2023-11-14T22:13:20.25Z"), Some(want + 0.25));
        assert_eq!(parse(b"yesterday"), None);
        assert_eq!(parse(b"2023-13-14T22:13:20Z"), None);
        assert_eq!(format_utc(want), "2023-11-14T22:13:20Z");
        // A crash input of the logs_ltsv fuzz target: a 20-digit epoch stamp made
        // the timeline's bucket arithmetic overflow.
        assert_eq!(parse(b"99999999999999999999"), None);
        assert_eq!(parse(b"253402300799.5"), Some(253_402_300_799.5));
    }

    #[test]
    fn durations() {
        assert_eq!(parse_duration("1s"), Some(1.0));
        assert_eq!(parse_duration("500ms"), Some(0.5));
        assert_eq!(parse_duration("5m"), Some(300.0));
        assert_eq!(parse_duration("10"), Some(10.0));
        assert_eq!(parse_duration("0s"), None);
        assert_eq!(parse_duration("fast"), None);
    }
}
