//! vegeta results as `vegeta encode --to csv` and `--to json` write them.
//! A result's `timestamp` is when the request was sent and `latency` its
//! duration in ns, so it ended at timestamp + latency; `code` 0 means no
//! answer; vegeta sets `error` for every code outside 200-399.
//!
//! The binary stream `vegeta attack` writes by default is Go's gob
//! encoding of the same `Result` struct ([`read_gob`], through
//! [`crate::gob`]), read exactly as `vegeta encode` would convert it.

use crate::gob::{self, Cursor, GobError, WireType};
use crate::{csvline, rfc3339, shown, Error, Lines, Sample};
use serde::Deserialize;
use std::collections::HashMap;
use std::io::BufRead;

/// Largest plausible latency, ns (a day).
const MAX_LATENCY_NS: f64 = 86_400e9;

fn sample(
    end_ms: f64,
    latency_ns: f64,
    code: u16,
    error: &str,
    method: &str,
    url: &str,
) -> Result<Sample, String> {
    if !(0.0..=MAX_LATENCY_NS).contains(&latency_ns) {
        return Err(format!("latency {latency_ns} ns is not a request time"));
    }
    let status = (100..600).contains(&code).then_some(code);
    if code != 0 && status.is_none() {
        return Err(format!("code {code} is not an HTTP status"));
    }
    let latency_ms = latency_ns / 1e6;
    Ok(Sample {
        end_unix_ms: end_ms + latency_ms,
        latency_ms,
        status,
        ok: error.is_empty(),
        error: (!error.is_empty()).then(|| error.to_string()),
        label: crate::url_path(url).to_string(),
        method: (!method.is_empty()).then(|| method.to_string()),
        bytes: None,
    })
}

fn int<T: std::str::FromStr>(b: &[u8]) -> Option<T> {
    std::str::from_utf8(b).ok()?.trim().parse().ok()
}

/// Reads `vegeta encode --to csv` output (12 fields a record since v12.8;
/// the 9 of older releases are read too).
pub fn read_csv(
    reader: impl BufRead,
    path: &str,
    out: &mut dyn FnMut(Sample),
) -> Result<(), Error> {
    let mut lines = Lines::new(reader, path);
    while lines.next_line()?.is_some() {
        let record = loop {
            if let Some(f) = csvline::fields(lines.current(), b',') {
                break f;
            }
            if !lines.continue_line()? {
                return Err(
                    lines.malformed("a quoted field is not closed before the end of the file")
                );
            }
        };
        if record.len() == 1 && record[0].is_empty() {
            continue;
        }
        if record.len() != 12 && record.len() != 9 {
            return Err(lines.malformed(format!(
                "{} fields; vegeta's CSV has 12 (9 before v12.8)",
                record.len()
            )));
        }
        let ts: i64 = int(&record[0]).ok_or_else(|| {
            lines.malformed(format!(
                "timestamp {:?} is not Unix nanoseconds",
                shown(&record[0])
            ))
        })?;
        let code: u16 = int(&record[1]).ok_or_else(|| {
            lines.malformed(format!("code {:?} is not a number", shown(&record[1])))
        })?;
        let latency: i64 = int(&record[2]).ok_or_else(|| {
            lines.malformed(format!(
                "latency {:?} is not nanoseconds",
                shown(&record[2])
            ))
        })?;
        let bytes_in: u64 = int(&record[4]).ok_or_else(|| {
            lines.malformed(format!("bytes_in {:?} is not a number", shown(&record[4])))
        })?;
        let text = |i: usize| {
            String::from_utf8_lossy(record.get(i).map_or(&b""[..], |f| f.as_ref())).into_owned()
        };
        let mut s = sample(
            ts as f64 / 1e6,
            latency as f64,
            code,
            &text(5),
            &text(9),
            &text(10),
        )
        .map_err(|e| lines.malformed(e))?;
        s.bytes = s.status.map(|_| bytes_in);
        out(s);
    }
    Ok(())
}

#[derive(Deserialize)]
struct JsonResult {
    code: u16,
    timestamp: String,
    latency: i64,
    #[serde(default)]
    bytes_in: u64,
    #[serde(default)]
    error: String,
    #[serde(default)]
    method: String,
    #[serde(default)]
    url: String,
}

/// Reads `vegeta encode --to json` output, one result a line.
pub fn read_json(
    reader: impl BufRead,
    path: &str,
    out: &mut dyn FnMut(Sample),
) -> Result<(), Error> {
    let mut lines = Lines::new(reader, path);
    while let Some(line) = lines.next_line()? {
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let r: JsonResult = match serde_json::from_slice(line) {
            Ok(r) => r,
            Err(e) => {
                let reason = format!("not a vegeta JSON result ({e}): {}", shown(line));
                return Err(lines.malformed(reason));
            }
        };
        let Some(start) = rfc3339::unix_ms(&r.timestamp) else {
            let reason = format!("timestamp {:?} is not an RFC 3339 time", r.timestamp);
            return Err(lines.malformed(reason));
        };
        let mut s = sample(start, r.latency as f64, r.code, &r.error, &r.method, &r.url)
            .map_err(|e| lines.malformed(e))?;
        s.bytes = s.status.map(|_| r.bytes_in);
        out(s);
    }
    Ok(())
}

/// What a field of vegeta's `Result` is to the reader.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Role {
    Code,
    Timestamp,
    Latency,
    BytesIn,
    Error,
    Method,
    Url,
    /// A field read past (Attack, Seq, BytesOut, Body, Headers, or one a
    /// later vegeta adds).
    Skip(i64),
}

/// How to read one struct type's values: a role per field number.
fn plan(types: &gob::Types, ty: i64) -> Result<Vec<Role>, String> {
    let WireType::Struct { name, fields } = types.get(ty)? else {
        return Err(format!(
            "a gob stream of type id {ty} values, which is not a struct; vegeta writes Result structs"
        ));
    };
    let mut roles = Vec::with_capacity(fields.len());
    for (field, t) in fields {
        let (role, want) = match field.as_str() {
            "Code" => (Role::Code, Some(gob::id::UINT)),
            "Timestamp" => (Role::Timestamp, None),
            "Latency" => (Role::Latency, Some(gob::id::INT)),
            "BytesIn" => (Role::BytesIn, Some(gob::id::UINT)),
            "Error" => (Role::Error, Some(gob::id::STRING)),
            "Method" => (Role::Method, Some(gob::id::STRING)),
            "URL" => (Role::Url, Some(gob::id::STRING)),
            _ => (Role::Skip(*t), None),
        };
        if want.is_some_and(|w| w != *t) {
            return Err(format!(
                "field {field} of {name} has type id {t}, not vegeta's (id {})",
                want.unwrap_or(0)
            ));
        }
        if role == Role::Timestamp && !matches!(types.get(*t)?, WireType::Opaque { .. }) {
            return Err(format!(
                "field Timestamp of {name} is not a time.Time (a self-encoding type)"
            ));
        }
        roles.push(role);
    }
    for need in [Role::Code, Role::Timestamp, Role::Latency] {
        if !roles.contains(&need) {
            return Err(format!(
                "gob values of a struct {name:?} without the field {need:?}: not vegeta's Result"
            ));
        }
    }
    Ok(roles)
}

/// Seconds from 0001-01-01 (time.Time's own epoch) to 1970-01-01.
const UNIX_TO_INTERNAL: i64 = 62_135_596_800;

/// A `time.Time` as its `GobEncode` (`MarshalBinary`) wrote it: a version
/// byte (1; 2 adds a byte of zone-offset seconds), seconds since
/// 0001-01-01 UTC (8 bytes, big-endian), nanoseconds (4 bytes) and the
/// zone offset in minutes (2 bytes, -1 for UTC). The instant does not
/// depend on the zone, so the offset is checked for its length only.
/// Returns Unix milliseconds.
fn time_unix_ms(b: &[u8]) -> Result<f64, String> {
    let want = match b.first() {
        Some(1) => 15,
        Some(2) => 16,
        Some(v) => {
            return Err(format!(
                "a time.Time of encoding version {v} (Go writes 1 or 2)"
            ))
        }
        None => return Err("an empty time.Time".into()),
    };
    if b.len() != want {
        return Err(format!(
            "a time.Time of {} bytes (version {} has {want})",
            b.len(),
            b[0]
        ));
    }
    let mut sec = [0u8; 8];
    sec.copy_from_slice(&b[1..9]);
    let mut nsec = [0u8; 4];
    nsec.copy_from_slice(&b[9..13]);
    let sec = i64::from_be_bytes(sec);
    let nsec = u32::from_be_bytes(nsec);
    if nsec >= 1_000_000_000 {
        return Err(format!("a time.Time with {nsec} nanoseconds"));
    }
    let unix = sec
        .checked_sub(UNIX_TO_INTERNAL)
        .ok_or("a time.Time before year 1")?;
    Ok(unix as f64 * 1e3 + f64::from(nsec) / 1e6)
}

/// One Result's fields, as decoded.
#[derive(Default)]
struct GobResult {
    code: u64,
    start_ms: Option<f64>,
    latency_ns: i64,
    bytes_in: u64,
    error: String,
    method: String,
    url: String,
}

fn decode_result(
    c: &mut Cursor<'_>,
    types: &gob::Types,
    roles: &[Role],
) -> Result<GobResult, String> {
    let mut r = GobResult::default();
    c.fields(|c, n| {
        let Some(role) = roles.get(n as usize) else {
            return Err(format!("field {n} of a Result with {} fields", roles.len()));
        };
        match *role {
            Role::Code => r.code = c.uint()?,
            Role::Timestamp => r.start_ms = Some(time_unix_ms(c.bytes()?)?),
            Role::Latency => r.latency_ns = c.int()?,
            Role::BytesIn => r.bytes_in = c.uint()?,
            Role::Error => r.error = c.string()?,
            Role::Method => r.method = c.string()?,
            Role::Url => r.url = c.string()?,
            Role::Skip(t) => c.skip(types, t, 0)?,
        }
        Ok(())
    })?;
    if c.left() != 0 {
        return Err(format!("{} bytes after a Result", c.left()));
    }
    Ok(r)
}

/// Reads the binary (gob) results `vegeta attack` writes, streamed a
/// message at a time; a message over `max_message` bytes (a huge response
/// body vegeta kept) is refused rather than held.
pub fn read_gob(
    reader: impl BufRead,
    path: &str,
    max_message: u64,
    out: &mut dyn FnMut(Sample),
) -> Result<(), Error> {
    let mut stream = gob::Stream::new(reader, max_message);
    let mut plans: HashMap<i64, Vec<Role>> = HashMap::new();
    let mut planned_at = 0;
    let malformed = |offset: u64, reason: String| Error::Malformed {
        path: path.to_string(),
        at: format!("byte {offset}"),
        reason,
    };
    loop {
        let (ty, at, message) = match stream.next_value() {
            Ok(Some(v)) => v,
            Ok(None) => return Ok(()),
            Err(GobError::Io(source)) => {
                return Err(Error::Io {
                    path: path.to_string(),
                    source,
                })
            }
            Err(GobError::Bad { offset, reason }) => return Err(malformed(offset, reason)),
        };
        // A type redefined (concatenated streams) may change a plan.
        if stream.types.generation() != planned_at {
            plans.clear();
            planned_at = stream.types.generation();
        }
        let roles = match plans.entry(ty) {
            std::collections::hash_map::Entry::Occupied(o) => o.into_mut(),
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(plan(&stream.types, ty).map_err(|e| malformed(at, e))?)
            }
        };
        let mut c = Cursor::new(&message);
        let r = decode_result(&mut c, &stream.types, roles).map_err(|e| malformed(at, e))?;
        let start = r
            .start_ms
            .ok_or_else(|| malformed(at, "a Result without a Timestamp".into()))?;
        let code = u16::try_from(r.code)
            .map_err(|_| malformed(at, format!("code {} is not an HTTP status", r.code)))?;
        let mut s = sample(
            start,
            r.latency_ns as f64,
            code,
            &r.error,
            &r.method,
            &r.url,
        )
        .map_err(|e| malformed(at, e))?;
        s.bytes = s.status.map(|_| r.bytes_in);
        out(s);
        stream.recycle(message);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_and_json_results_end_at_timestamp_plus_latency() {
        let csv = "1795482000000000000,200,1500000,0,615,,PGh0bWw+,,0,GET,http://127.0.0.1:18750/ok?x=1,Q29udGVudC1UeXBlOiB0ZXh0DQoNCg==\n\
                   1795482000001000000,503,1000000,0,200,503 Service Unavailable,,,1,GET,http://127.0.0.1:18750/fail,\n\
                   1795482000002000000,0,3000000,0,0,\"Get \"\"http://x\"\": connection refused\",,,2,GET,http://127.0.0.1:1/,\n";
        let mut v = Vec::new();
        read_csv(csv.as_bytes(), "r.csv", &mut |s| v.push(s)).unwrap();
        assert_eq!(v.len(), 3);
        assert_eq!(v[0].end_unix_ms, 1_795_482_000_001.5);
        assert_eq!(
            (v[0].status, v[0].bytes, v[0].label.as_str()),
            (Some(200), Some(615), "/ok")
        );
        assert_eq!(v[1].error.as_deref(), Some("503 Service Unavailable"));
        assert_eq!(v[2].status, None);
        assert!(v[2].error.as_deref().unwrap().contains("\"http://x\""));

        let json = r#"{"attack":"","seq":0,"code":200,"timestamp":"2026-11-24T01:00:00Z","latency":2000000,"bytes_out":0,"bytes_in":615,"error":"","body":null,"method":"GET","url":"http://127.0.0.1/ok","headers":null}"#;
        let mut v = Vec::new();
        read_json(json.as_bytes(), "r.json", &mut |s| v.push(s)).unwrap();
        assert_eq!(v[0].end_unix_ms, 1_795_482_000_002.0);
        let e = read_csv("1,2,3\n".as_bytes(), "r.csv", &mut |_| {}).unwrap_err();
        assert!(e.to_string().contains("r.csv:1: 3 fields"), "{e}");
        let e = read_csv("x,200,1,0,0,,,,0,GET,/,\n".as_bytes(), "r.csv", &mut |_| {}).unwrap_err();
        assert!(e.to_string().contains("Unix nanoseconds"), "{e}");
    }

    /// `vegeta attack -rate 9 -duration 1s` against nginx (`/ok` 200,
    /// `/fail` 503) and a closed port, and `vegeta encode --to json` of
    /// the same file: recorded once by vegeta v12.13.0 and kept.
    const ATTACK_BIN: &[u8] = include_bytes!("../tests/data/vegeta-attack.bin");
    const ATTACK_JSON: &[u8] = include_bytes!("../tests/data/vegeta-attack.json");

    fn gob(bytes: &[u8]) -> Result<Vec<Sample>, Error> {
        let mut v = Vec::new();
        read_gob(bytes, "r.bin", 1 << 20, &mut |s| v.push(s))?;
        Ok(v)
    }

    #[test]
    fn binary_results_read_as_vegeta_encode_converts_them() {
        let from_gob = gob(ATTACK_BIN).unwrap();
        let mut from_json = Vec::new();
        read_json(ATTACK_JSON, "r.json", &mut |s| from_json.push(s)).unwrap();
        assert_eq!(from_gob.len(), 9);
        // Every field equal, times to the nanosecond (the JSON carries them as text).
        assert_eq!(from_gob, from_json);
        let codes: Vec<_> = from_gob.iter().map(|s| s.status).collect();
        assert!(codes.contains(&Some(200)) && codes.contains(&Some(503)) && codes.contains(&None));
        assert!(from_gob
            .iter()
            .any(|s| s.error.as_deref().is_some_and(|e| e.contains("refused"))));
    }

    #[test]
    fn a_cut_short_stream_is_an_error_at_its_message_never_a_panic() {
        let full = gob(ATTACK_BIN).unwrap().len();
        let mut cut_inside = 0;
        for end in 0..ATTACK_BIN.len() {
            match gob(&ATTACK_BIN[..end]) {
                // Only at a message boundary, with fewer results.
                Ok(v) => assert!(v.len() < full, "{end}"),
                Err(e) => {
                    let msg = e.to_string();
                    assert!(msg.starts_with("r.bin:byte "), "{msg}");
                    cut_inside += 1;
                }
            }
        }
        assert!(cut_inside > ATTACK_BIN.len() / 2);
        let e = gob(&ATTACK_BIN[..ATTACK_BIN.len() - 3])
            .unwrap_err()
            .to_string();
        assert!(e.contains("the file is cut short"), "{e}");
        // A flipped byte anywhere is read or refused, never a panic.
        for i in 0..ATTACK_BIN.len() {
            let mut b = ATTACK_BIN.to_vec();
            b[i] ^= 0x5a;
            let _ = gob(&b);
        }
    }

    #[test]
    fn gob_integers_and_times_as_go_writes_them() {
        let mut c = Cursor::new(&[
            0x07, 0xff, 0x80, 0xfe, 0x01, 0x00, 0x03, 0xfd, 0x1d, 0xb0, 0x1c,
        ]);
        assert_eq!(c.uint(), Ok(7));
        assert_eq!(c.uint(), Ok(128));
        assert_eq!(c.uint(), Ok(256));
        assert_eq!(c.int(), Ok(-2));
        assert_eq!(c.int(), Ok(972_814));
        assert!(c.uint().is_err());
        let mut c = Cursor::new(&[0xf7, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
        assert!(c.uint().unwrap_err().contains("9 bytes"));
        // 2026-11-24T14:41:01.694216908Z, zone offset 0 minutes.
        let t = [
            1, 0, 0, 0, 0x0e, 0xe2, 0x97, 0x98, 0xfd, 0x29, 0x60, 0xe8, 0xcc, 0, 0,
        ];
        assert_eq!(
            time_unix_ms(&t),
            Ok(1_795_531_261.0 * 1e3 + 694_216_908.0 / 1e6)
        );
        let mut v2 = t.to_vec();
        v2[0] = 2;
        v2.push(0);
        assert_eq!(time_unix_ms(&v2), time_unix_ms(&t));
        assert!(time_unix_ms(&t[..14]).is_err());
        assert!(time_unix_ms(&[3; 15]).is_err());
    }

    #[test]
    fn gob_values_of_another_type_are_refused_by_name() {
        // type 65 = struct Point{X int}, then a value {X: 3}.
        let mut s = vec![];
        let def = [
            0xff, 0x81, 0x03, 0x01, 0x01, 0x05, b'P', b'o', b'i', b'n', b't', 0x01, 0xff, 0x82,
            0x00, 0x01, 0x01, 0x01, 0x01, b'X', 0x01, 0x04, 0x00, 0x00, 0x00,
        ];
        s.push(def.len() as u8);
        s.extend_from_slice(&def);
        s.extend_from_slice(&[0x04, 0xff, 0x82, 0x01, 0x06, 0x00]);
        let e = gob(&s).unwrap_err().to_string();
        assert!(e.contains("\"Point\" without the field Code"), "{e}");
    }
}
