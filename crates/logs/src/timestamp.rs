//! Request timestamps as access logs write them, to Unix seconds.
//!
//! Needed only for `--timeline`, `--slow` and time filters, so parsing is
//! lazy. Accepted: ISO 8601 (`$time_iso8601`, `2006-01-02T15:04:05+09:00`,
//! optional fraction, `Z`), Common Log Format (`$time_local`,
//! `02/Jan/2006:15:04:05 -0700`, brackets optional) and epoch seconds
//! (`$msec`, `1700000000.123`).

/// A time zone, as `--location` names one.
pub use jiff::tz::TimeZone as Zone;

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

/// The offset a stamp writes: `Some(None)` when it writes none (its
/// clock is read in a zone the caller picks), `None` when it is not one.
fn zone(b: &[u8]) -> Option<Option<i64>> {
    match b {
        b"" => Some(None),
        b"Z" | b"z" => Some(Some(0)),
        [sign @ (b'+' | b'-'), rest @ ..] => {
            let digits: Vec<u8> = rest.iter().copied().filter(|c| *c != b':').collect();
            if digits.len() != 4 {
                return None;
            }
            let h = num(&digits[..2])?;
            let m = num(&digits[2..])?;
            let off = h * 3600 + m * 60;
            Some(Some(if *sign == b'-' { -off } else { off }))
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

/// A stamp read as written: its wall clock in seconds as if it were UTC
/// (with fraction) and its offset, if it writes one.
type Civil = (i64, f64, Option<i64>);

fn iso8601(b: &[u8]) -> Option<Civil> {
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
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s;
    Some((secs, frac, off))
}

fn month(b: &[u8]) -> Option<i64> {
    const M: [&[u8]; 12] = [
        b"Jan", b"Feb", b"Mar", b"Apr", b"May", b"Jun", b"Jul", b"Aug", b"Sep", b"Oct", b"Nov",
        b"Dec",
    ];
    M.iter().position(|m| *m == b).map(|i| i as i64 + 1)
}

fn clf(b: &[u8]) -> Option<Civil> {
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
    let secs = days_from_civil(y, mo, d) * 86_400 + h * 3600 + mi * 60 + s;
    Some((secs, frac, off))
}

/// Parses a log timestamp to Unix seconds (with fraction); `None` if the
/// text is in none of the accepted forms. A stamp without an offset is
/// read as UTC.
pub fn parse(text: &[u8]) -> Option<f64> {
    parse_with(text, None)
}

/// [`parse`], reading a stamp without an offset as a wall clock in `zone`
/// (alp's `--location`). Where `zone`'s clocks go back, the earlier of the
/// two instants is taken; a wall clock skipped when they go forward is
/// read with the offset before the gap.
pub fn parse_in(text: &[u8], zone: &jiff::tz::TimeZone) -> Option<f64> {
    parse_with(text, Some(zone))
}

/// The timeline's per-line path keeps UTC free of zone lookups.
fn parse_with(text: &[u8], zone: Option<&jiff::tz::TimeZone>) -> Option<f64> {
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
    let (wall, frac, off) = iso8601(t).or_else(|| clf(t))?;
    let off = match (off, zone) {
        (Some(off), _) => off,
        (None, None) => 0,
        (None, Some(zone)) => wall_offset(wall, zone)?,
    };
    Some((wall - off) as f64 + frac)
}

/// The offset of `zone` at the wall clock `wall` (seconds as if UTC).
fn wall_offset(wall: i64, zone: &jiff::tz::TimeZone) -> Option<i64> {
    let civil = jiff::Timestamp::from_second(wall)
        .ok()?
        .to_zoned(jiff::tz::TimeZone::UTC)
        .datetime();
    let instant = zone.to_ambiguous_timestamp(civil).compatible().ok()?;
    Some(wall - instant.as_second())
}

/// alp's `--location`: `Local` (or empty) is the local zone's offset now,
/// fixed, as alp's time parser takes it; `UTC`; or a zone name of the
/// system's database (`Asia/Tokyo`), with its daylight-saving rules.
/// `None` if the name is not known.
pub fn location(name: &str) -> Option<jiff::tz::TimeZone> {
    match name {
        "" | "Local" => {
            let local = crate::pcap::local_zone();
            Some(jiff::tz::TimeZone::fixed(
                local.to_offset(jiff::Timestamp::now()),
            ))
        }
        "UTC" => Some(jiff::tz::TimeZone::UTC),
        _ => jiff::tz::TimeZone::get(name).ok(),
    }
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

    /// A stamp without an offset is a wall clock in the zone given (UTC
    /// for `parse`), with that zone's daylight-saving time; a stamp with
    /// one ignores the zone.
    #[test]
    fn stamps_without_an_offset_are_read_in_the_zone_given() {
        let tokyo = location("Asia/Tokyo").unwrap();
        let new_york = location("America/New_York").unwrap();
        let want = 1_700_000_000.0;
        assert_eq!(parse(b"2023-11-14T22:13:20"), Some(want));
        assert_eq!(parse_in(b"2023-11-15T07:13:20", &tokyo), Some(want));
        assert_eq!(parse_in(b"2023-11-15 07:13:20.5", &tokyo), Some(want + 0.5));
        assert_eq!(parse_in(b"2023-11-14T22:13:20Z", &tokyo), Some(want));
        assert_eq!(parse_in(b"14/Nov/2023:17:13:20", &new_york), Some(want));
        // July: daylight-saving time, UTC-4.
        assert_eq!(
            parse_in(b"2023-07-01T08:00:00", &new_york),
            parse(b"2023-07-01T12:00:00Z")
        );
        // 01:30 happens twice on 2023-11-05 in New York: the earlier one (EDT).
        assert_eq!(
            parse_in(b"2023-11-05T01:30:00", &new_york),
            parse(b"2023-11-05T05:30:00Z")
        );
        assert_eq!(parse_in(b"1700000000", &tokyo), Some(want));
        assert!(location("Nowhere/Atlantis").is_none());
        assert_eq!(location("UTC"), Some(jiff::tz::TimeZone::UTC));
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
