//! Compact blob encodings for series and profile samples.
//!
//! Times are stored as zigzag varint deltas of whole microseconds (a sample
//! every 10 ms costs 2 bytes), indexes as varints, values as little-endian
//! f64. Every decoder checks bounds: a damaged blob is an error, never a panic.

use crate::error::{Result, StoreError};

/// Appends `v` as an unsigned LEB128 varint.
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads one unsigned varint at `*pos`, advancing it.
pub fn get_varint(buf: &[u8], pos: &mut usize) -> Result<u64> {
    let mut v: u64 = 0;
    let mut shift = 0u32;
    loop {
        let Some(&b) = buf.get(*pos) else {
            return Err(StoreError::Corrupt(
                "varint runs past the end of its blob".into(),
            ));
        };
        *pos += 1;
        if shift >= 64 {
            return Err(StoreError::Corrupt("varint longer than 64 bits".into()));
        }
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(v);
        }
        shift += 7;
    }
}

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn ms_to_us(ms: f64) -> i64 {
    (ms * 1000.0).round() as i64
}

/// Encodes times in milliseconds as microsecond deltas.
pub fn encode_times(times_ms: &[f64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(times_ms.len() * 3);
    let mut prev = 0i64;
    for &t in times_ms {
        let us = ms_to_us(t);
        put_varint(&mut out, zigzag(us.wrapping_sub(prev)));
        prev = us;
    }
    out
}

/// Decodes `n` times written by [`encode_times`].
pub fn decode_times(buf: &[u8], n: usize, out: &mut Vec<f64>) -> Result<()> {
    let mut pos = 0;
    let mut prev = 0i64;
    for _ in 0..n {
        prev = prev.wrapping_add(unzigzag(get_varint(buf, &mut pos)?));
        out.push(prev as f64 / 1000.0);
    }
    check_consumed(buf, pos)
}

/// Encodes profile sample times in nanoseconds in the same blob form as
/// [`encode_times`]: whole microseconds, cut (not rounded) as profile JSON
/// writes them, so a stored profile exports what the recorder made.
pub fn encode_times_ns(times_ns: &[u64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(times_ns.len() * 3);
    let mut prev = 0i64;
    for &t in times_ns {
        let us = i64::try_from(t / 1000).unwrap_or(i64::MAX);
        put_varint(&mut out, zigzag(us.wrapping_sub(prev)));
        prev = us;
    }
    out
}

/// Decodes `n` times as nanoseconds; a time before zero (written by an
/// older build from a profiler that started early) is zero, where the
/// model's clock starts.
pub fn decode_times_ns(buf: &[u8], n: usize, out: &mut Vec<u64>) -> Result<()> {
    let mut pos = 0;
    let mut prev = 0i64;
    for _ in 0..n {
        prev = prev.wrapping_add(unzigzag(get_varint(buf, &mut pos)?));
        out.push(u64::try_from(prev).unwrap_or(0).saturating_mul(1000));
    }
    check_consumed(buf, pos)
}

/// Encodes unsigned indexes (node ids, thread indexes) as varints.
pub fn encode_indexes(values: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * 2);
    for &v in values {
        put_varint(&mut out, u64::from(v));
    }
    out
}

/// Decodes `n` indexes written by [`encode_indexes`].
pub fn decode_indexes(buf: &[u8], n: usize, out: &mut Vec<u32>) -> Result<()> {
    let mut pos = 0;
    for _ in 0..n {
        let v = get_varint(buf, &mut pos)?;
        let v =
            u32::try_from(v).map_err(|_| StoreError::Corrupt("index exceeds 32 bits".into()))?;
        out.push(v);
    }
    check_consumed(buf, pos)
}

/// Encodes values as little-endian f64.
pub fn encode_values(values: &[f64]) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * 8);
    for v in values {
        out.extend_from_slice(&v.to_le_bytes());
    }
    out
}

/// Decodes `n` values written by [`encode_values`].
pub fn decode_values(buf: &[u8], n: usize, out: &mut Vec<f64>) -> Result<()> {
    // A damaged row may claim any count: one past usize::MAX / 8 is a
    // mismatch like any other, not an overflow.
    if n.checked_mul(8) != Some(buf.len()) {
        return Err(StoreError::Corrupt(format!(
            "value blob holds {} bytes, expected {n} values of 8",
            buf.len(),
        )));
    }
    out.extend(buf.chunks_exact(8).map(|c| {
        let mut b = [0u8; 8];
        b.copy_from_slice(c);
        f64::from_le_bytes(b)
    }));
    Ok(())
}

fn check_consumed(buf: &[u8], pos: usize) -> Result<()> {
    if pos == buf.len() {
        Ok(())
    } else {
        Err(StoreError::Corrupt(format!(
            "blob has {} trailing bytes",
            buf.len() - pos
        )))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_count_past_usize_over_8_is_a_damaged_blob() {
        // Found by the store_codec fuzz target: `n * 8` overflowed.
        let blob = [160, 31, 160, 31, 160, 31];
        for n in [3usize << 32, usize::MAX / 4 + 3, usize::MAX] {
            let e = decode_values(&blob, n, &mut Vec::new()).unwrap_err();
            assert!(e.to_string().contains("holds 6 bytes"), "{e}");
        }
        let mut out = Vec::new();
        decode_values(&1.5f64.to_le_bytes(), 1, &mut out).unwrap();
        assert_eq!(out, vec![1.5]);
    }

    #[test]
    fn times_round_trip_including_negative_and_unsorted() {
        let t = vec![0.0, 1000.0, 999.5, 5000.125, -3.0, 1e9];
        let enc = encode_times(&t);
        let mut out = Vec::new();
        decode_times(&enc, t.len(), &mut out).unwrap();
        assert_eq!(out, vec![0.0, 1000.0, 999.5, 5000.125, -3.0, 1e9]);
    }

    #[test]
    fn nanosecond_times_share_the_blob_form_to_the_microsecond() {
        let ns = vec![0, 10_123_999, 10_124_000, 5_000_000_000_000];
        let enc = encode_times_ns(&ns);
        let mut ms = Vec::new();
        decode_times(&enc, ns.len(), &mut ms).unwrap();
        assert_eq!(ms, vec![0.0, 10.123, 10.124, 5e6]);
        let mut back = Vec::new();
        decode_times_ns(&enc, ns.len(), &mut back).unwrap();
        assert_eq!(back, vec![0, 10_123_000, 10_124_000, 5_000_000_000_000]);
        let mut clamped = Vec::new();
        decode_times_ns(&encode_times(&[-3.0, 1.0]), 2, &mut clamped).unwrap();
        assert_eq!(clamped, vec![0, 1_000_000]);
    }

    #[test]
    fn regular_ticks_cost_few_bytes() {
        // 99 Hz samples: ~10 ms apart, three bytes each.
        let t: Vec<f64> = (0..1000).map(|i| i as f64 * 10.1).collect();
        assert!(encode_times(&t).len() <= 3 * 1000);
    }

    #[test]
    fn indexes_and_values_round_trip() {
        let ix = vec![0, 1, 127, 128, 300_000, u32::MAX];
        let mut out = Vec::new();
        decode_indexes(&encode_indexes(&ix), ix.len(), &mut out).unwrap();
        assert_eq!(out, ix);
        let v = vec![0.0, -1.5, f64::MAX, 3.25];
        let mut vo = Vec::new();
        decode_values(&encode_values(&v), v.len(), &mut vo).unwrap();
        assert_eq!(vo, v);
    }

    #[test]
    fn damaged_blobs_are_errors() {
        let mut out = Vec::new();
        assert!(decode_times(&[0x80], 1, &mut out).is_err());
        assert!(decode_indexes(&[1, 2], 1, &mut Vec::new()).is_err());
        assert!(decode_values(&[0; 7], 1, &mut Vec::new()).is_err());
        assert!(decode_indexes(&[0xff; 12], 1, &mut Vec::new()).is_err());
    }
}
