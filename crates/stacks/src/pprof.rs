//! pprof protobuf profiles (Go's `runtime/pprof`, `net/http/pprof`),
//! read with a small protobuf decoder: only the fields a flame graph needs.

use crate::error::{Error, Result};
use crate::format::{Format, FormatInfo, Parsed};
use crate::model::{FrameId, FrameKind, Location, Profile, Unit, NO_PARENT};
use rustc_hash::FxHashMap;

/// A cursor over protobuf bytes that reports errors with absolute offsets.
struct Pb<'a> {
    buf: &'a [u8],
    pos: usize,
    base: usize,
}

/// A decoding problem at an absolute byte offset.
struct Bad(usize, &'static str);

impl<'a> Pb<'a> {
    fn new(buf: &'a [u8], base: usize) -> Self {
        Pb { buf, pos: 0, base }
    }

    fn done(&self) -> bool {
        self.pos >= self.buf.len()
    }

    fn varint(&mut self) -> std::result::Result<u64, Bad> {
        let mut v = 0u64;
        for shift in (0..70).step_by(7) {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(Bad(self.base + self.pos, "a varint (input ends inside it)"));
            };
            self.pos += 1;
            if shift == 63 && b > 1 {
                return Err(Bad(self.base + self.pos - 1, "a varint of at most 64 bits"));
            }
            v |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
        }
        Err(Bad(self.base + self.pos, "a varint of at most 10 bytes"))
    }

    /// Next field: (number, wire type, payload for length-delimited).
    fn field(&mut self) -> std::result::Result<(u64, Value<'a>), Bad> {
        let at = self.base + self.pos;
        let key = self.varint()?;
        let num = key >> 3;
        let v = match key & 7 {
            0 => Value::Int(self.varint()?),
            1 => {
                self.skip(8, at)?;
                Value::Other
            }
            5 => {
                self.skip(4, at)?;
                Value::Other
            }
            2 => {
                let len = self.varint()? as usize;
                let start = self.pos;
                let end = start
                    .checked_add(len)
                    .filter(|&e| e <= self.buf.len())
                    .ok_or(Bad(
                        at,
                        "a length-delimited field within the input (truncated?)",
                    ))?;
                self.pos = end;
                Value::Bytes(&self.buf[start..end], self.base + start)
            }
            _ => return Err(Bad(at, "a protobuf field with wire type 0, 1, 2 or 5")),
        };
        Ok((num, v))
    }

    fn skip(&mut self, n: usize, at: usize) -> std::result::Result<(), Bad> {
        if self.pos + n > self.buf.len() {
            return Err(Bad(at, "a fixed-width field within the input"));
        }
        self.pos += n;
        Ok(())
    }
}

enum Value<'a> {
    Int(u64),
    Bytes(&'a [u8], usize),
    Other,
}

/// Repeated integers, packed or not.
fn ints(v: &Value<'_>, out: &mut Vec<u64>) -> std::result::Result<(), Bad> {
    match v {
        Value::Int(i) => out.push(*i),
        Value::Bytes(b, base) => {
            let mut p = Pb::new(b, *base);
            while !p.done() {
                out.push(p.varint()?);
            }
        }
        Value::Other => {}
    }
    Ok(())
}

#[derive(Default)]
struct Loc {
    mapping: u64,
    /// Function ids, innermost (inlined) first.
    functions: Vec<u64>,
}

#[derive(Default)]
struct Raw {
    sample_types: Vec<(u64, u64)>,
    samples: Vec<(Vec<u64>, Vec<u64>)>,
    mappings: FxHashMap<u64, u64>,
    locations: FxHashMap<u64, Loc>,
    functions: FxHashMap<u64, u64>,
    strings: Vec<String>,
    time_nanos: u64,
    default_sample_type: u64,
}

fn decode(data: &[u8]) -> std::result::Result<Raw, Bad> {
    let mut raw = Raw::default();
    let mut p = Pb::new(data, 0);
    while !p.done() {
        let (num, v) = p.field()?;
        match (num, &v) {
            (1, Value::Bytes(b, base)) => {
                let mut q = Pb::new(b, *base);
                let (mut ty, mut unit) = (0, 0);
                while !q.done() {
                    match q.field()? {
                        (1, Value::Int(i)) => ty = i,
                        (2, Value::Int(i)) => unit = i,
                        _ => {}
                    }
                }
                raw.sample_types.push((ty, unit));
            }
            (2, Value::Bytes(b, base)) => {
                let mut q = Pb::new(b, *base);
                let (mut locs, mut vals) = (Vec::new(), Vec::new());
                while !q.done() {
                    match q.field()? {
                        (1, v) => ints(&v, &mut locs)?,
                        (2, v) => ints(&v, &mut vals)?,
                        _ => {}
                    }
                }
                raw.samples.push((locs, vals));
            }
            (3, Value::Bytes(b, base)) => {
                let mut q = Pb::new(b, *base);
                let (mut id, mut file) = (0, 0);
                while !q.done() {
                    match q.field()? {
                        (1, Value::Int(i)) => id = i,
                        (5, Value::Int(i)) => file = i,
                        _ => {}
                    }
                }
                raw.mappings.insert(id, file);
            }
            (4, Value::Bytes(b, base)) => {
                let mut q = Pb::new(b, *base);
                let mut id = 0;
                let mut loc = Loc::default();
                while !q.done() {
                    match q.field()? {
                        (1, Value::Int(i)) => id = i,
                        (2, Value::Int(i)) => loc.mapping = i,
                        (4, Value::Bytes(lb, lbase)) => {
                            let mut r = Pb::new(lb, lbase);
                            while !r.done() {
                                if let (1, Value::Int(f)) = r.field()? {
                                    loc.functions.push(f);
                                }
                            }
                        }
                        _ => {}
                    }
                }
                raw.locations.insert(id, loc);
            }
            (5, Value::Bytes(b, base)) => {
                let mut q = Pb::new(b, *base);
                let (mut id, mut name) = (0, 0);
                while !q.done() {
                    match q.field()? {
                        (1, Value::Int(i)) => id = i,
                        (2, Value::Int(i)) => name = i,
                        _ => {}
                    }
                }
                raw.functions.insert(id, name);
            }
            (6, Value::Bytes(b, _)) => raw.strings.push(String::from_utf8_lossy(b).into_owned()),
            (9, Value::Int(i)) => raw.time_nanos = *i,
            (14, Value::Int(i)) => raw.default_sample_type = *i,
            _ => {}
        }
    }
    Ok(raw)
}

/// Whether bytes (after gunzip) look like a pprof profile: the first fields
/// decode as protobuf with the numbers and wire types of `Profile`.
pub fn looks_like(head: &[u8]) -> bool {
    let mut p = Pb::new(head, 0);
    let mut fields = 0;
    while !p.done() && fields < 8 {
        let Ok((num, v)) = p.field() else {
            // The head may cut the last field short.
            return fields >= 3;
        };
        let ok = matches!(
            (num, &v),
            (1..=6 | 11, Value::Bytes(..))
                | (7..=10 | 12 | 14, Value::Int(_))
                | (13, Value::Int(_) | Value::Bytes(..))
        );
        if !ok {
            return false;
        }
        fields += 1;
    }
    fields >= 3 || (p.done() && fields >= 1)
}

/// This format's entry in [`crate::format::FORMATS`].
pub const FORMAT: FormatInfo = FormatInfo {
    format: Format::Pprof,
    name: "pprof",
    aliases: &[],
    description: "pprof protobuf",
    text: false,
    looks_like,
    read: |input, _| {
        let (name, data) = input.read_all()?;
        parse(&data, &name).map(Parsed::from)
    },
};

/// Parses a (decompressed) pprof profile into counts form.
pub fn parse(data: &[u8], name: &str) -> Result<Profile> {
    let raw = decode(data)
        .map_err(|Bad(at, what)| Error::malformed(name, Location::Byte(at as u64), what))?;
    let s = |i: u64| {
        raw.strings
            .get(i as usize)
            .map(String::as_str)
            .unwrap_or("")
    };
    if raw.sample_types.is_empty() {
        return Err(Error::malformed(
            name,
            Location::Byte(0),
            "a pprof profile with at least one sample_type",
        ));
    }
    // pprof's own default: the named default type, else the last; but a CPU
    // profile's "samples" count is what perf-based graphs compare with.
    let pick = raw
        .sample_types
        .iter()
        .position(|&(t, _)| s(t) == "samples")
        .or_else(|| {
            (raw.default_sample_type != 0)
                .then(|| {
                    raw.sample_types
                        .iter()
                        .position(|&(t, _)| t == raw.default_sample_type)
                })
                .flatten()
        })
        .unwrap_or(raw.sample_types.len() - 1);
    let unit = match s(raw.sample_types[pick].1) {
        "nanoseconds" => Unit::Nanoseconds,
        "bytes" => Unit::Bytes,
        _ => Unit::Samples,
    };
    let mut profile = Profile::new(name, unit);
    if raw.time_nanos > 0 {
        profile.start_unix_ns = Some(raw.time_nanos);
    }
    let mut counts: Vec<u64> = Vec::new();
    let mut fcache: FxHashMap<(u64, u64, bool), FrameId> = FxHashMap::default();
    let mut frames: Vec<FrameId> = Vec::new();
    for (i, (locs, vals)) in raw.samples.iter().enumerate() {
        let Some(&v) = vals.get(pick) else {
            profile.damage.skip(Location::Byte(0), || {
                format!("sample {i} to have {} values", raw.sample_types.len())
            });
            continue;
        };
        if v == 0 {
            continue;
        }
        // Values are int64 on the wire: a negative one (diff profiles) is
        // not a weight a flame graph can draw.
        if (v as i64) < 0 {
            profile.damage.skip(Location::Byte(0), || {
                format!("sample {i} to have a non-negative value (got {})", v as i64)
            });
            continue;
        }
        frames.clear();
        let mut bad = false;
        // location_id[0] is the leaf; within a location the first line is
        // the innermost inlined function.
        for lid in locs.iter().rev() {
            let Some(loc) = raw.locations.get(lid) else {
                bad = true;
                break;
            };
            let module = raw.mappings.get(&loc.mapping).copied().unwrap_or(0);
            if loc.functions.is_empty() {
                let key = (u64::MAX - lid, module, false);
                let id = *fcache.entry(key).or_insert_with(|| {
                    profile.frame_parts(
                        &format!("[{}]", short(s(module))),
                        s(module),
                        FrameKind::Unknown,
                    )
                });
                frames.push(id);
                continue;
            }
            for (k, f) in loc.functions.iter().enumerate().rev() {
                let inlined = k > 0;
                let key = (*f, module, inlined);
                let fname = raw.functions.get(f).copied().unwrap_or(0);
                let id = *fcache.entry(key).or_insert_with(|| {
                    let kind = if inlined {
                        FrameKind::Inlined
                    } else {
                        FrameKind::Native
                    };
                    profile.frame_parts(s(fname), s(module), kind)
                });
                frames.push(id);
            }
        }
        if bad {
            profile.damage.skip(Location::Byte(0), || {
                format!("sample {i} to name known location ids")
            });
            continue;
        }
        let mut node = NO_PARENT;
        for &f in &frames {
            node = profile.child(node, f);
        }
        if node == NO_PARENT {
            continue;
        }
        counts.resize(profile.node_count(), 0);
        counts[node as usize] = counts[node as usize].saturating_add(v);
    }
    if counts.is_empty() {
        return Err(Error::Empty {
            path: name.into(),
            why: "the pprof profile has no samples".into(),
        });
    }
    counts.resize(profile.node_count(), 0);
    profile.counts = Some(counts);
    Ok(profile)
}

fn short(path: &str) -> &str {
    path.rsplit('/').next().unwrap_or(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn varint(out: &mut Vec<u8>, mut v: u64) {
        while v >= 0x80 {
            out.push(v as u8 | 0x80);
            v >>= 7;
        }
        out.push(v as u8);
    }

    fn int(out: &mut Vec<u8>, field: u64, v: u64) {
        varint(out, field << 3);
        varint(out, v);
    }

    fn bytes(out: &mut Vec<u8>, field: u64, b: &[u8]) {
        varint(out, field << 3 | 2);
        varint(out, b.len() as u64);
        out.extend_from_slice(b);
    }

    /// A profile of one function `main` sampled with each of `values`.
    fn profile(values: &[i64]) -> Vec<u8> {
        let mut p = Vec::new();
        let mut st = Vec::new();
        int(&mut st, 1, 1);
        int(&mut st, 2, 2);
        bytes(&mut p, 1, &st);
        for &v in values {
            let mut s = Vec::new();
            int(&mut s, 1, 1);
            int(&mut s, 2, v as u64);
            bytes(&mut p, 2, &s);
        }
        let (mut loc, mut line) = (Vec::new(), Vec::new());
        int(&mut line, 1, 1);
        int(&mut loc, 1, 1);
        bytes(&mut loc, 4, &line);
        bytes(&mut p, 4, &loc);
        let mut f = Vec::new();
        int(&mut f, 1, 1);
        int(&mut f, 2, 3);
        bytes(&mut p, 5, &f);
        for s in ["", "samples", "count", "main"] {
            bytes(&mut p, 6, s.as_bytes());
        }
        p
    }

    #[test]
    fn negative_values_are_damage_and_sums_saturate() {
        // Crash input for the pprof fuzz target: -1 read as u64::MAX
        // overflowed the node's count.
        let p = parse(&profile(&[5, -1, -7]), "t").unwrap();
        assert_eq!(p.total_weight(), 5);
        assert_eq!(p.damage.skipped, 2);
        let p = parse(&profile(&[i64::MAX, i64::MAX, i64::MAX]), "t").unwrap();
        assert_eq!(p.total_weight(), u64::MAX);
    }
}
