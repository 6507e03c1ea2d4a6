//! Profile JSON (docs/profile-json.md), written column by column straight
//! into a byte buffer: no intermediate value tree, so 1,000,000+ samples
//! serialise in well under a second.

use crate::diff::Diff;
use crate::error::{Error, Result};
use crate::model::{
    sort_by_time, FrameKind, Location, Profile, StoredNodeError, Thread, Unit, NO_PARENT,
};
use serde::{Deserialize, Deserializer};
use std::io::Write;

fn push_u64(out: &mut Vec<u8>, mut v: u64) {
    let mut buf = [0u8; 20];
    let mut i = buf.len();
    loop {
        i -= 1;
        buf[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    out.extend_from_slice(&buf[i..]);
}

/// Milliseconds with microsecond precision, from nanoseconds.
fn push_ms(out: &mut Vec<u8>, ns: u64) {
    push_u64(out, ns / 1_000_000);
    let us = (ns % 1_000_000) / 1000;
    if us != 0 {
        out.push(b'.');
        let digits = [us / 100, (us / 10) % 10, us % 10];
        let last = if digits[2] != 0 {
            3
        } else if digits[1] != 0 {
            2
        } else {
            1
        };
        for d in &digits[..last] {
            out.push(b'0' + *d as u8);
        }
    }
}

/// A JSON string literal.
pub fn push_str(out: &mut Vec<u8>, s: &str) {
    out.push(b'"');
    let bytes = s.as_bytes();
    let mut start = 0;
    for (i, &b) in bytes.iter().enumerate() {
        let esc: &[u8] = match b {
            b'"' => b"\\\"",
            b'\\' => b"\\\\",
            b'\n' => b"\\n",
            b'\r' => b"\\r",
            b'\t' => b"\\t",
            0..=0x1f => {
                out.extend_from_slice(&bytes[start..i]);
                let _ = write!(out, "\\u{:04x}", b);
                start = i + 1;
                continue;
            }
            _ => continue,
        };
        out.extend_from_slice(&bytes[start..i]);
        out.extend_from_slice(esc);
        start = i + 1;
    }
    out.extend_from_slice(&bytes[start..]);
    out.push(b'"');
}

fn push_list<T: Copy>(out: &mut Vec<u8>, items: &[T], mut f: impl FnMut(&mut Vec<u8>, T)) {
    out.push(b'[');
    for (i, &x) in items.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        f(out, x);
    }
    out.push(b']');
}

/// Options of the JSON writer.
#[derive(Clone, Copy, Debug, Default)]
pub struct JsonOptions {
    /// Write the counts form even when the profile has samples (diff inputs).
    pub counts_form: bool,
}

/// Serialises a profile as profile JSON version 1.
pub fn profile_json(p: &Profile, opts: JsonOptions) -> Vec<u8> {
    let mut out =
        Vec::with_capacity(64 + p.frames.len() * 48 + p.node_count() * 12 + p.samples.len() * 16);
    write_profile(&mut out, p, opts);
    out
}

/// Appends profile JSON to `out`.
pub fn write_profile(out: &mut Vec<u8>, p: &Profile, opts: JsonOptions) {
    out.extend_from_slice(b"{\"version\":1,\"title\":");
    push_str(out, &p.title);
    out.extend_from_slice(b",\"unit\":");
    push_str(out, p.unit.name());
    out.extend_from_slice(b",\"kinds\":");
    push_list(out, &FrameKind::NAMES, push_str);
    out.extend_from_slice(b",\"frames\":{\"name\":");
    push_list(out, &p.frames.iter().collect::<Vec<_>>(), |o, f| {
        push_str(o, &f.name)
    });
    out.extend_from_slice(b",\"module\":");
    push_list(out, &p.frames.iter().collect::<Vec<_>>(), |o, f| {
        push_str(o, &f.module)
    });
    out.extend_from_slice(b",\"kind\":");
    push_list(out, &p.frames.iter().collect::<Vec<_>>(), |o, f| {
        push_u64(o, f.kind as u64)
    });
    out.extend_from_slice(b"},\"nodes\":{\"parent\":");
    push_list(out, &p.parent, |o, n| {
        if n == NO_PARENT {
            o.extend_from_slice(b"-1")
        } else {
            push_u64(o, u64::from(n))
        }
    });
    out.extend_from_slice(b",\"frame\":");
    push_list(out, &p.node_frame, |o, f| push_u64(o, u64::from(f)));
    out.extend_from_slice(b"},\"threads\":[");
    for (i, t) in p.threads.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"pid\":");
        push_u64(out, u64::from(t.pid));
        out.extend_from_slice(b",\"tid\":");
        push_u64(out, u64::from(t.tid));
        out.extend_from_slice(b",\"comm\":");
        push_str(out, &t.comm);
        out.push(b'}');
    }
    out.push(b']');
    if p.counts.is_some() || opts.counts_form {
        out.extend_from_slice(b",\"samples\":null,\"counts\":");
        push_list(out, &p.self_weights(), push_u64);
    } else {
        let s = &p.samples;
        out.extend_from_slice(b",\"samples\":{\"node\":");
        push_list(out, &s.node, |o, n| push_u64(o, u64::from(n)));
        out.extend_from_slice(b",\"weight\":");
        match &s.weight {
            Some(w) => push_list(out, w, push_u64),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"time_ms\":");
        match &s.time_ns {
            Some(t) => push_list(out, t, push_ms),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b",\"thread\":");
        match &s.thread {
            Some(t) => push_list(out, t, |o, x| push_u64(o, u64::from(x))),
            None => out.extend_from_slice(b"null"),
        }
        out.extend_from_slice(b"},\"counts\":null");
    }
    out.extend_from_slice(b",\"start_unix_ns\":");
    match p.start_unix_ns {
        Some(ns) => push_u64(out, ns),
        None => out.extend_from_slice(b"null"),
    }
    out.extend_from_slice(b",\"duration_ms\":");
    match p.duration_ns() {
        Some(ns) if p.counts.is_none() && !opts.counts_form => push_ms(out, ns),
        _ => out.extend_from_slice(b"null"),
    }
    if let (Some(g), false) = (&p.callgraph, opts.counts_form) {
        // Plain numbers and strings: serialising cannot fail.
        if let Ok(v) = serde_json::to_vec(g.as_ref()) {
            out.extend_from_slice(b",\"callgraph\":");
            out.extend_from_slice(&v);
        }
    }
    out.push(b'}');
}

/// The unit with this JSON name ([`Unit::name`]).
pub fn unit_from_name(name: &str) -> Option<Unit> {
    [Unit::Samples, Unit::Nanoseconds, Unit::Bytes]
        .into_iter()
        .find(|u| u.name() == name)
}

/// Profile JSON as it arrives: the shape of docs/profile-json.md with
/// numbers as JSON gives them, checked and interned by [`ProfileDoc::build`].
#[derive(Deserialize)]
struct ProfileDoc {
    version: u32,
    #[serde(default)]
    title: String,
    #[serde(default)]
    unit: Option<String>,
    kinds: Vec<String>,
    frames: DocFrames,
    nodes: DocNodes,
    #[serde(default)]
    threads: Vec<DocThread>,
    #[serde(default)]
    samples: Option<DocSamples>,
    #[serde(default)]
    counts: Option<Vec<f64>>,
    #[serde(default)]
    start_unix_ns: Option<i64>,
}

#[derive(Deserialize)]
struct DocFrames {
    name: Vec<String>,
    module: Vec<String>,
    kind: Vec<u64>,
}

#[derive(Deserialize)]
struct DocNodes {
    parent: Vec<i64>,
    frame: Vec<u64>,
}

#[derive(Deserialize)]
struct DocThread {
    #[serde(default)]
    pid: i64,
    #[serde(default)]
    tid: i64,
    #[serde(default)]
    comm: String,
}

#[derive(Deserialize)]
struct DocSamples {
    node: Vec<u64>,
    #[serde(default)]
    weight: Option<Vec<f64>>,
    #[serde(default)]
    time_ms: Option<Vec<f64>>,
    #[serde(default)]
    thread: Option<Vec<u64>>,
}

/// A weight or count as the model holds it: JSON numbers may be written
/// as floats (older stores wrote `1.0`), and a negative one counts nothing.
fn whole(v: f64) -> u64 {
    // `as` saturates, and NaN becomes 0.
    v.max(0.0).round() as u64
}

/// Milliseconds (as written by [`profile_json`]) to nanoseconds, rounded:
/// `10.123` is `10122999.99..` in binary and must read back as 10,123,000.
/// A time before time zero (an older run whose profiler started early) is
/// clamped to it, as the model counts time from there.
fn ms_to_ns(ms: f64) -> u64 {
    (ms * 1e6).max(0.0).round() as u64
}

impl ProfileDoc {
    /// Checks every cross reference and interns the profile. Frames and
    /// nodes go through the model's interning, so a document that repeats
    /// a frame or a stack still reads (its ids are mapped).
    fn build(self) -> std::result::Result<Profile, String> {
        if self.version != 1 {
            return Err(format!(
                "profile JSON version 1, not version {}",
                self.version
            ));
        }
        let unit = match self.unit.as_deref() {
            None => Unit::Samples,
            Some(name) => unit_from_name(name).ok_or_else(|| {
                format!("unit \"samples\", \"nanoseconds\" or \"bytes\", not {name:?}")
            })?,
        };
        let mut out = Profile::new(self.title, unit);
        let f = &self.frames;
        if f.name.len() != f.module.len() || f.name.len() != f.kind.len() {
            return Err("frames.name, frames.module and frames.kind of one length".into());
        }
        let mut frames = Vec::with_capacity(f.name.len());
        for ((name, module), &kind) in f.name.iter().zip(&f.module).zip(&f.kind) {
            let kind = usize::try_from(kind)
                .ok()
                .and_then(|k| self.kinds.get(k))
                .ok_or_else(|| format!("frames.kind to index into kinds, not {kind}"))?;
            frames.push(out.frame_parts(name, module, FrameKind::from_name(Some(kind))));
        }
        let n = &self.nodes;
        if n.parent.len() != n.frame.len() {
            return Err("nodes.parent and nodes.frame of one length".into());
        }
        // Parents precede children (the format's rule), so one pass maps ids.
        let mut nodes: Vec<u32> = Vec::with_capacity(n.parent.len());
        for (i, (&parent, &frame)) in n.parent.iter().zip(&n.frame).enumerate() {
            out.rebuild_node(parent, frame, &frames, &mut nodes)
                .map_err(|e| match e {
                    StoredNodeError::Frame => {
                        format!("nodes.frame[{i}] to name a frame, not {frame}")
                    }
                    StoredNodeError::Parent => {
                        format!("nodes.parent[{i}] to name an earlier node, not {parent}")
                    }
                })?;
        }
        let node_of = |what: &str, i: usize, v: u64| -> std::result::Result<u32, String> {
            usize::try_from(v)
                .ok()
                .and_then(|x| nodes.get(x).copied())
                .ok_or_else(|| format!("{what}[{i}] to name a node, not {v}"))
        };
        let threads: Vec<u32> = self
            .threads
            .iter()
            .map(|t| out.thread(Thread::from_stored(t.pid, t.tid, t.comm.clone())))
            .collect();
        match (self.samples, self.counts) {
            (Some(s), _) => {
                let len = s.node.len();
                let same = |col: Option<usize>| col.is_none_or(|l| l == len);
                if !same(s.weight.as_ref().map(Vec::len))
                    || !same(s.time_ms.as_ref().map(Vec::len))
                    || !same(s.thread.as_ref().map(Vec::len))
                {
                    return Err("sample columns of one length".into());
                }
                out.samples.node = s
                    .node
                    .iter()
                    .enumerate()
                    .map(|(i, &v)| node_of("samples.node", i, v))
                    .collect::<std::result::Result<_, _>>()?;
                out.samples.weight = s.weight.map(|w| w.into_iter().map(whole).collect());
                out.samples.time_ns = s.time_ms.map(|t| t.into_iter().map(ms_to_ns).collect());
                out.samples.thread = match s.thread {
                    Some(t) => Some(
                        t.iter()
                            .enumerate()
                            .map(|(i, &v)| {
                                usize::try_from(v)
                                    .ok()
                                    .and_then(|x| threads.get(x).copied())
                                    .ok_or_else(|| {
                                        format!("samples.thread[{i}] to name a thread, not {v}")
                                    })
                            })
                            .collect::<std::result::Result<_, _>>()?,
                    ),
                    None => None,
                };
                sort_by_time(&mut out);
            }
            (None, Some(c)) => {
                let mut counts = vec![0u64; out.node_count()];
                for (i, w) in c.into_iter().enumerate() {
                    let id = node_of("counts", i, i as u64)? as usize;
                    counts[id] = counts[id].saturating_add(whole(w));
                }
                out.counts = Some(counts);
            }
            (None, None) => return Err("samples or counts".into()),
        }
        out.start_unix_ns = self.start_unix_ns.and_then(|v| u64::try_from(v).ok());
        Ok(out)
    }
}

/// Reads profile JSON version 1 (docs/profile-json.md, what
/// [`profile_json`] writes) back into a profile: the inverse of the writer,
/// so `profile_json(&parse_profile_json(&profile_json(p))?)` is the same
/// bytes. `duration_ms` is not read (the model derives it from the sample
/// times); per-sample CPUs and events are not in the format. `name` names
/// the input in errors.
pub fn parse_profile_json(data: &[u8], name: &str) -> Result<Profile> {
    let doc: ProfileDoc = serde_json::from_slice(data).map_err(|e| {
        Error::malformed(
            name,
            Location::Line(e.line() as u64),
            format!("profile JSON (column {}: {e})", e.column()),
        )
    })?;
    doc.build()
        .map_err(|why| Error::malformed(name, Location::Byte(0), why))
}

/// Reads a profile JSON value from any serde source, for types that embed
/// a profile (a stored run's `profile` field); the error says what was
/// expected.
pub fn deserialize_profile<'de, D: Deserializer<'de>>(
    d: D,
) -> std::result::Result<Profile, D::Error> {
    ProfileDoc::deserialize(d)?
        .build()
        .map_err(|why| serde::de::Error::custom(format!("profile: expected {why}")))
}

fn push_f64(out: &mut Vec<u8>, v: Option<f64>) {
    match v {
        Some(v) if v.is_finite() => {
            let _ = write!(out, "{:.3}", v);
        }
        _ => out.extend_from_slice(b"null"),
    }
}

/// Serialises a differential profile (docs/profile-json.md).
pub fn diff_json(d: &Diff) -> Vec<u8> {
    let mut out = Vec::with_capacity(1 << 16);
    out.extend_from_slice(b"{\"version\":1,\"mode\":");
    push_str(
        &mut out,
        if d.normalized {
            "normalized"
        } else {
            "absolute"
        },
    );
    out.extend_from_slice(b",\"before\":");
    write_profile(&mut out, &d.before, JsonOptions { counts_form: true });
    out.extend_from_slice(b",\"after\":");
    write_profile(&mut out, &d.after, JsonOptions { counts_form: true });
    out.extend_from_slice(b",\"table\":[");
    for (i, r) in d.table.iter().enumerate() {
        if i > 0 {
            out.push(b',');
        }
        out.extend_from_slice(b"{\"frame\":");
        push_str(&mut out, &r.frame);
        out.extend_from_slice(b",\"module\":");
        push_str(&mut out, &r.module);
        for (k, v) in [
            ("before_self", r.before_self),
            ("after_self", r.after_self),
            ("before_total", r.before_total),
            ("after_total", r.after_total),
        ] {
            let _ = write!(out, ",\"{k}\":");
            push_u64(&mut out, v);
        }
        out.extend_from_slice(b",\"delta_self_pct\":");
        push_f64(&mut out, r.delta_self_pct);
        out.extend_from_slice(b",\"delta_total_pct\":");
        push_f64(&mut out, r.delta_total_pct);
        out.extend_from_slice(b",\"noisy\":");
        out.extend_from_slice(if r.noisy { b"true" } else { b"false" });
        // Shares in percent and their change in percentage points: the
        // ranking key of every regression table.
        for (k, v) in [
            ("before_share_pct", r.before_share_pct),
            ("after_share_pct", r.after_share_pct),
            ("delta_share_pp", r.delta_share_pp()),
            ("before_self_share_pct", r.before_self_share_pct),
            ("after_self_share_pct", r.after_self_share_pct),
        ] {
            let _ = write!(out, ",\"{k}\":");
            push_f64(&mut out, Some(v));
        }
        out.push(b'}');
    }
    out.extend_from_slice(b"]}");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{read_profile, ReadOptions};

    fn data(name: &str) -> String {
        format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
    }

    /// profile -> JSON -> profile -> JSON gives the same bytes, for every
    /// shape the writer has: samples with times and threads, weights, and
    /// the counts form.
    #[test]
    fn profile_json_reads_back_to_the_same_bytes() {
        for file in ["system.perf.gz", "node.cpuprofile.gz", "go.pprof"] {
            let p = read_profile(&data(file), &ReadOptions::default())
                .unwrap()
                .profile;
            let json = profile_json(&p, JsonOptions::default());
            let back = parse_profile_json(&json, file).unwrap();
            assert_eq!(back.title, p.title);
            assert_eq!(back.frames, p.frames, "{file}");
            assert_eq!(back.parent, p.parent, "{file}");
            assert_eq!(back.threads, p.threads, "{file}");
            assert_eq!(back.samples.node, p.samples.node, "{file}");
            assert_eq!(
                String::from_utf8(profile_json(&back, JsonOptions::default())).unwrap(),
                String::from_utf8(json).unwrap(),
                "{file}"
            );
        }
        let mut folded = crate::folded::parse(&mut "a;b 3\na;c 2\nd 1\n".as_bytes(), "f").unwrap();
        folded.start_unix_ns = Some(1_763_700_000_000_000_000);
        let json = profile_json(&folded, JsonOptions::default());
        let back = parse_profile_json(&json, "f").unwrap();
        assert_eq!(back.counts, folded.counts);
        assert_eq!(back.start_unix_ns, folded.start_unix_ns);
        assert_eq!(profile_json(&back, JsonOptions::default()), json);
    }

    #[test]
    fn times_read_to_the_nanosecond_the_writer_meant() {
        let doc = br#"{"version":1,"title":"t","unit":"samples","kinds":["kernel","native"],
            "frames":{"name":["a"],"module":[""],"kind":[1]},"nodes":{"parent":[-1],"frame":[0]},
            "threads":[{"pid":7,"tid":8,"comm":"x"}],
            "samples":{"node":[0,0,0],"weight":[1.0,2,3],"time_ms":[10.123,-1,0.001],"thread":[0,0,0]},
            "counts":null,"start_unix_ns":5,"duration_ms":3}"#;
        let p = parse_profile_json(doc, "doc").unwrap();
        // Sorted into time order, as the format promises; a time before
        // zero is zero; floats written as `1.0` read as whole weights.
        assert_eq!(p.samples.time_ns, Some(vec![0, 1000, 10_123_000]));
        assert_eq!(p.samples.weight, Some(vec![2, 3, 1]));
        assert_eq!(p.frames[0].kind, FrameKind::Native);
        assert_eq!(p.threads[0].tid, 8);
        assert_eq!(p.start_unix_ns, Some(5));
    }

    #[test]
    fn damaged_profile_json_is_an_error_naming_what_was_expected() {
        let base = r#"{"version":1,"title":"t","unit":"samples","kinds":["kernel"],
            "frames":{"name":["a"],"module":[""],"kind":[0]},"nodes":{"parent":[-1],"frame":[0]},
            "samples":{"node":[0],"weight":null,"time_ms":null,"thread":null},"counts":null}"#;
        assert!(parse_profile_json(base.as_bytes(), "ok").is_ok());
        for (from, to, expected) in [
            (r#""version":1"#, r#""version":2"#, "version 1"),
            (r#""kind":[0]"#, r#""kind":[3]"#, "index into kinds"),
            (r#""parent":[-1]"#, r#""parent":[0]"#, "earlier node"),
            (r#""node":[0]"#, r#""node":[1]"#, "name a node"),
            (r#""thread":null"#, r#""thread":[0]"#, "name a thread"),
            (r#""weight":null"#, r#""weight":[1,2]"#, "one length"),
            (r#""unit":"samples""#, r#""unit":"furlongs""#, "unit"),
            (
                r#""samples":{"node":[0],"weight":null,"time_ms":null,"thread":null}"#,
                "\"samples\":null",
                "samples or counts",
            ),
            ("{", "[", "profile JSON"),
        ] {
            let bad = base.replacen(from, to, 1);
            assert_ne!(bad, base);
            let err = parse_profile_json(bad.as_bytes(), "bad.json")
                .err()
                .unwrap_or_else(|| panic!("{to} must fail"))
                .to_string();
            assert!(
                err.starts_with("bad.json: ") && err.contains(expected),
                "{err}"
            );
        }
        let v: serde_json::Value = serde_json::from_str(base).unwrap();
        assert!(deserialize_profile(&v).is_ok());
    }
}
