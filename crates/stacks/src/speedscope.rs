//! speedscope JSON (<https://www.speedscope.app/file-format-schema.json>),
//! as py-spy (`--format speedscope`), rbspy and others write it: one list
//! of shared frames, then one profile per thread, either "sampled" (root-
//! first stacks with a weight each) or "evented" (open/close events).
//!
//! Each speedscope profile becomes one [`Thread`] (pid 0, tid = the
//! profile's index, comm = its name). Sample times count from the file's
//! time zero (a `startValue` of 0), so a recorder that knows when the
//! profiler started can move them onto its own clock; the file carries no
//! absolute clock, so [`Profile::time_origin_ns`] stays `None`.

use crate::error::{Error, Result};
use crate::format::{Format, FormatInfo, Parsed};
use crate::model::{FrameId, FrameKind, Location, NodeId, Profile, Thread, Unit, NO_PARENT};
use serde::de::{self, Deserializer};
use serde::Deserialize;
use std::cell::Cell;

thread_local! {
    /// Number of `shared.frames` while a document is being checked, so a
    /// frame index out of range fails inside serde_json, which then names
    /// the line and column of the offending number (an index checked after
    /// parsing could only be located by its JSON path).
    static FRAME_LIMIT: Cell<usize> = const { Cell::new(usize::MAX) };
}

/// Resets [`FRAME_LIMIT`] when a parse ends, however it ends.
struct LimitGuard;

impl LimitGuard {
    fn set(n: usize) -> LimitGuard {
        FRAME_LIMIT.with(|c| c.set(n));
        LimitGuard
    }
}

impl Drop for LimitGuard {
    fn drop(&mut self) {
        FRAME_LIMIT.with(|c| c.set(usize::MAX));
    }
}

/// An index into `shared.frames`, checked against [`FRAME_LIMIT`].
#[derive(Clone, Copy)]
struct FrameIx(usize);

impl<'de> Deserialize<'de> for FrameIx {
    fn deserialize<D: Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let i = u64::deserialize(d)?;
        let limit = FRAME_LIMIT.with(Cell::get);
        match usize::try_from(i) {
            Ok(i) if i < limit => Ok(FrameIx(i)),
            _ => Err(de::Error::custom(format_args!(
                "frame index {i} out of range (shared.frames has {limit})"
            ))),
        }
    }
}

#[derive(Deserialize)]
struct Doc {
    shared: Shared,
    #[serde(default)]
    profiles: Vec<SsProfile>,
}

#[derive(Deserialize)]
struct Shared {
    frames: Vec<SsFrame>,
}

/// Only the frame count, for the first pass.
#[derive(Deserialize)]
struct CountDoc {
    shared: CountShared,
}

#[derive(Deserialize)]
struct CountShared {
    frames: Vec<de::IgnoredAny>,
}

#[derive(Deserialize)]
struct SsFrame {
    name: String,
    #[serde(default)]
    file: Option<String>,
    // `line` and `col` are not kept: py-spy gives the line executing, not
    // the function's, so keeping it would split one function into as many
    // frames as lines sampled in it.
}

#[derive(Deserialize, Clone, Copy, PartialEq)]
#[serde(rename_all = "lowercase")]
enum SsUnit {
    None,
    Nanoseconds,
    Microseconds,
    Milliseconds,
    Seconds,
    Bytes,
}

impl SsUnit {
    /// Nanoseconds per unit for time units.
    fn ns_per_unit(self) -> Option<f64> {
        match self {
            SsUnit::Nanoseconds => Some(1.0),
            SsUnit::Microseconds => Some(1e3),
            SsUnit::Milliseconds => Some(1e6),
            SsUnit::Seconds => Some(1e9),
            SsUnit::None | SsUnit::Bytes => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            SsUnit::None => "none",
            SsUnit::Nanoseconds => "nanoseconds",
            SsUnit::Microseconds => "microseconds",
            SsUnit::Milliseconds => "milliseconds",
            SsUnit::Seconds => "seconds",
            SsUnit::Bytes => "bytes",
        }
    }
}

#[derive(Deserialize, Clone, Copy, PartialEq)]
#[serde(rename_all = "lowercase")]
enum SsType {
    Sampled,
    Evented,
}

#[derive(Deserialize, Clone, Copy, PartialEq)]
enum EventType {
    #[serde(rename = "O")]
    Open,
    #[serde(rename = "C")]
    Close,
}

#[derive(Deserialize)]
struct Event {
    #[serde(rename = "type")]
    kind: EventType,
    at: f64,
    frame: FrameIx,
}

/// One speedscope profile as written; one struct for both types (not a
/// tagged enum) so serde_json parses it as a stream and its errors keep
/// their position.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawProfile {
    #[serde(rename = "type")]
    kind: SsType,
    #[serde(default)]
    name: String,
    unit: SsUnit,
    #[serde(default)]
    start_value: f64,
    #[serde(default)]
    samples: Vec<Vec<FrameIx>>,
    #[serde(default)]
    weights: Vec<f64>,
    #[serde(default)]
    events: Vec<Event>,
}

/// A profile checked while it is parsed (through `try_from`), so that
/// damage is reported by serde_json with the line and column where the
/// profile ends instead of after the whole document.
#[derive(Deserialize)]
#[serde(try_from = "RawProfile")]
struct SsProfile(RawProfile);

impl TryFrom<RawProfile> for SsProfile {
    type Error = String;

    fn try_from(p: RawProfile) -> std::result::Result<Self, String> {
        let at = |what: &str| format!("in profile {:?}: {what}", p.name);
        match p.kind {
            SsType::Sampled => {
                if p.weights.len() != p.samples.len() {
                    return Err(at(&format!(
                        "{} weights for {} samples (expected as many)",
                        p.weights.len(),
                        p.samples.len()
                    )));
                }
                if let Some((i, w)) = p
                    .weights
                    .iter()
                    .enumerate()
                    .find(|(_, w)| !(w.is_finite() && **w >= 0.0))
                {
                    return Err(at(&format!(
                        "weights[{i}] is {w} (expected a finite 0 or more)"
                    )));
                }
            }
            SsType::Evented => {
                let mut open: Vec<usize> = Vec::new();
                let mut last = p.start_value;
                for (i, e) in p.events.iter().enumerate() {
                    if !e.at.is_finite() || e.at < last {
                        return Err(at(&format!(
                            "events[{i}] at {} comes before {last} (expected events in time order)",
                            e.at
                        )));
                    }
                    last = e.at;
                    match e.kind {
                        EventType::Open => open.push(e.frame.0),
                        EventType::Close => match open.pop() {
                            Some(f) if f == e.frame.0 => {}
                            Some(f) => {
                                return Err(at(&format!(
                                "events[{i}] closes frame {} while frame {f} is the innermost open",
                                e.frame.0
                            )))
                            }
                            None => {
                                return Err(at(&format!(
                                    "events[{i}] closes frame {} while none is open",
                                    e.frame.0
                                )))
                            }
                        },
                    }
                }
            }
        }
        Ok(SsProfile(p))
    }
}

/// Whether the head of an input looks like speedscope JSON: a JSON object
/// naming the speedscope schema or, for writers that leave `$schema` out,
/// with `"profiles"` and a speedscope profile type (py-spy writes
/// `"shared"` last, so it may lie beyond the head).
pub fn looks_like(head: &[u8]) -> bool {
    let s = String::from_utf8_lossy(&head[..head.len().min(4096)]);
    s.trim_start().starts_with('{')
        && (s.contains("speedscope.app/file-format-schema")
            || (s.contains("\"profiles\"")
                && (s.contains("\"sampled\"") || s.contains("\"evented\""))))
}

fn json_error(name: &str, e: &serde_json::Error) -> Error {
    Error::malformed(
        name,
        Location::Line(e.line() as u64),
        format!("a speedscope JSON document (column {}: {e})", e.column()),
    )
}

/// This format's entry in [`crate::format::FORMATS`].
pub const FORMAT: FormatInfo = FormatInfo {
    format: Format::Speedscope,
    name: "speedscope",
    aliases: &[],
    description: "speedscope JSON",
    text: false,
    looks_like,
    read: |input, _| {
        let (name, data) = input.read_all()?;
        parse(&data, &name).map(Parsed::from)
    },
};

/// Parses a speedscope JSON document.
///
/// Time units give sample times (`samples.time_ns`); sampled profiles whose
/// weights are all equal (py-spy's fixed interval) count samples, otherwise
/// weights are kept in nanoseconds. "none" and "bytes" profiles have no
/// times and keep their weights as given. Profiles in a unit unlike the
/// first profile's are skipped and counted in [`Profile::damage`].
pub fn parse(data: &[u8], name: &str) -> Result<Profile> {
    // First pass: the frame count only, so the second can check indices
    // wherever "shared" sits (py-spy writes it after "profiles").
    let count: CountDoc = serde_json::from_slice(data).map_err(|e| json_error(name, &e))?;
    let doc: Doc = {
        let _guard = LimitGuard::set(count.shared.frames.len());
        serde_json::from_slice(data).map_err(|e| json_error(name, &e))?
    };
    build(doc, name)
}

/// One sample before the profile's unit is settled.
struct Row {
    node: NodeId,
    thread: u32,
    time_ns: u64,
    /// Weight in the profile's unit (nanoseconds for time units).
    weight: f64,
}

fn build(doc: Doc, name: &str) -> Result<Profile> {
    let Some(SsProfile(first)) = doc.profiles.first() else {
        return Err(Error::Empty {
            path: name.into(),
            why: "the speedscope file has no profiles".into(),
        });
    };
    let unit = first.unit;
    let timed = unit.ns_per_unit().is_some();
    let mut profile = Profile::new(
        name,
        match unit {
            SsUnit::Bytes => Unit::Bytes,
            _ => Unit::Samples,
        },
    );
    let mut frame_ids: Vec<Option<FrameId>> = vec![None; doc.shared.frames.len()];
    let mut frame = |profile: &mut Profile, i: FrameIx| -> FrameId {
        if let Some(id) = frame_ids[i.0] {
            return id;
        }
        let f = &doc.shared.frames[i.0];
        let (module, kind) = match &f.file {
            Some(file) => (file.as_str(), FrameKind::Interpreted),
            None => ("", FrameKind::Unknown),
        };
        let id = profile.frame_parts(&f.name, module, kind);
        frame_ids[i.0] = Some(id);
        id
    };
    let mut rows: Vec<Row> = Vec::new();
    let mut all_sampled = true;
    for (pi, SsProfile(p)) in doc.profiles.iter().enumerate() {
        if p.unit.ns_per_unit().is_some() != timed || (!timed && p.unit != unit) {
            profile.damage.skip(Location::Byte(0), || {
                format!(
                    "profiles[{pi}] in the first profile's unit ({}, not {}); profile skipped",
                    unit.name(),
                    p.unit.name()
                )
            });
            continue;
        }
        let scale = p.unit.ns_per_unit().unwrap_or(1.0);
        let thread = profile.thread(Thread {
            pid: 0,
            tid: u32::try_from(pi).unwrap_or(u32::MAX),
            comm: p.name.clone(),
        });
        // A negative time (a negative startValue) clamps to 0 (`as`
        // saturates), never wraps.
        let ns = |v: f64| (v * scale).round() as u64;
        match p.kind {
            SsType::Sampled => {
                let mut t = p.start_value;
                for (stack, &w) in p.samples.iter().zip(&p.weights) {
                    let mut node = NO_PARENT;
                    for &f in stack {
                        let fid = frame(&mut profile, f);
                        node = profile.child(node, fid);
                    }
                    // An empty stack (py-spy: a thread idle in native
                    // code it cannot see) takes time but names nothing.
                    if node != NO_PARENT {
                        rows.push(Row {
                            node,
                            thread,
                            time_ns: ns(t),
                            weight: w * scale,
                        });
                    }
                    t += w;
                }
            }
            SsType::Evented => {
                all_sampled = false;
                // Checked while parsing: events in order, closes matching.
                let mut open: Vec<NodeId> = Vec::new();
                let mut last_at = p.start_value;
                for e in &p.events {
                    if let Some(&node) = open.last() {
                        if e.at > last_at {
                            rows.push(Row {
                                node,
                                thread,
                                time_ns: ns(last_at),
                                weight: (e.at - last_at) * scale,
                            });
                        }
                    }
                    last_at = e.at;
                    match e.kind {
                        EventType::Open => {
                            let parent = open.last().copied().unwrap_or(NO_PARENT);
                            let fid = frame(&mut profile, e.frame);
                            open.push(profile.child(parent, fid));
                        }
                        EventType::Close => {
                            open.pop();
                        }
                    }
                }
            }
        }
    }
    let s = &mut profile.samples;
    s.node = rows.iter().map(|r| r.node).collect();
    s.thread = Some(rows.iter().map(|r| r.thread).collect());
    if timed {
        s.time_ns = Some(rows.iter().map(|r| r.time_ns).collect());
        let w0 = rows.first().map_or(0.0, |r| r.weight);
        if !(all_sampled && rows.iter().all(|r| r.weight == w0)) {
            // Durations that differ (evented profiles, irregular sampling):
            // the width of a frame is its time, not its sample count.
            profile.unit = Unit::Nanoseconds;
            s.weight = Some(rows.iter().map(|r| r.weight.round() as u64).collect());
        }
    } else if rows.iter().any(|r| r.weight != 1.0) {
        s.weight = Some(rows.iter().map(|r| r.weight.round() as u64).collect());
    }
    crate::model::sort_by_time(&mut profile);
    Ok(profile)
}

/// The speedscope file-format schema URL, written as `$schema`.
pub const SCHEMA_URL: &str = "https://www.speedscope.app/file-format-schema.json";

/// Writes a profile as a speedscope JSON document: the frames once in
/// `shared.frames` (module as `file`), then one "sampled" profile per
/// thread (one for a profile without threads), samples in time order with
/// their weights. The unit follows the profile's: "nanoseconds", "bytes",
/// or "none" for sample counts. Inputs without individual samples (folded
/// stacks) give one sample per stack, weighing its count.
pub fn write(profile: &Profile) -> Vec<u8> {
    use serde_json::{json, Value};
    let frames: Vec<Value> = profile
        .frames
        .iter()
        .map(|f| {
            if f.module.is_empty() {
                json!({ "name": f.name })
            } else {
                json!({ "name": f.name, "file": f.module })
            }
        })
        .collect();
    let unit = match profile.unit {
        Unit::Samples => "none",
        Unit::Nanoseconds => "nanoseconds",
        Unit::Bytes => "bytes",
    };
    // Per thread (or one group when threads are unknown): stacks, weights.
    let mut groups: Vec<(Vec<Vec<u32>>, Vec<u64>)> = Vec::new();
    let mut names: Vec<String> = Vec::new();
    let mut group_of: rustc_hash::FxHashMap<Option<u32>, usize> = Default::default();
    let mut stacks_of: rustc_hash::FxHashMap<NodeId, Vec<u32>> = Default::default();
    let mut add = |thread: Option<u32>, node: NodeId, weight: u64| {
        let g = *group_of.entry(thread).or_insert_with(|| {
            let t = thread.and_then(|t| profile.threads.get(t as usize));
            names.push(match t {
                Some(t) if t.pid != 0 || t.tid != 0 => {
                    format!("{} [pid {} tid {}]", t.comm, t.pid, t.tid)
                }
                Some(t) if !t.comm.is_empty() => t.comm.clone(),
                _ => profile.title.clone(),
            });
            groups.push(Default::default());
            groups.len() - 1
        });
        let stack = stacks_of
            .entry(node)
            .or_insert_with(|| profile.stack_frames(node))
            .clone();
        groups[g].0.push(stack);
        groups[g].1.push(weight);
    };
    if let Some(counts) = &profile.counts {
        for (n, &c) in counts.iter().enumerate() {
            if c > 0 {
                add(None, n as NodeId, c);
            }
        }
    } else {
        let s = &profile.samples;
        for i in 0..s.len() {
            add(s.thread.as_ref().map(|t| t[i]), s.node[i], s.weight_of(i));
        }
    }
    let profiles: Vec<Value> = groups
        .into_iter()
        .zip(names)
        .map(|((samples, weights), name)| {
            let end: u64 = weights.iter().fold(0u64, |a, &b| a.saturating_add(b));
            json!({
                "type": "sampled",
                "name": name,
                "unit": unit,
                "startValue": 0,
                "endValue": end,
                "samples": samples,
                "weights": weights,
            })
        })
        .collect();
    let doc = json!({
        "$schema": SCHEMA_URL,
        "shared": { "frames": frames },
        "profiles": profiles,
        "name": profile.title,
        "activeProfileIndex": 0,
        "exporter": concat!("keisoku ", env!("CARGO_PKG_VERSION")),
    });
    let mut out = serde_json::to_vec(&doc).unwrap_or_default();
    out.push(b'\n');
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stacks(p: &Profile) -> Vec<String> {
        p.sample_stacks()
    }

    #[test]
    fn sampled_stacks_times_and_threads() {
        let text = br#"{"profiles":[{"type":"sampled","name":"MainThread","unit":"seconds","startValue":0,"endValue":0.03,
                         "samples":[[0,1],[0,1],[],[0]],"weights":[0.01,0.01,0.01,0.01]}],
            "shared":{"frames":[{"name":"main","file":"a.py","line":1},{"name":"handler","line":9}]}}"#;
        let p = parse(text, "t").unwrap();
        assert_eq!(stacks(&p), vec!["main;handler", "main;handler", "main"]);
        assert_eq!(
            p.samples.time_ns.as_deref(),
            Some(&[0, 10_000_000, 30_000_000][..])
        );
        assert_eq!(p.unit, Unit::Samples);
        assert!(p.samples.weight.is_none());
        assert_eq!(
            p.threads[0],
            Thread {
                pid: 0,
                tid: 0,
                comm: "MainThread".into()
            }
        );
        assert_eq!(p.frames[0].kind, FrameKind::Interpreted);
        assert_eq!(p.frames[0].module, "a.py");
        assert_eq!(p.frames[1].kind, FrameKind::Unknown);
        assert_eq!(p.time_origin_ns, None);
    }

    #[test]
    fn evented_profiles_weigh_time() {
        let text = br#"{"shared":{"frames":[{"name":"a"},{"name":"b"}]},"profiles":[
            {"type":"evented","name":"x","unit":"milliseconds","startValue":0,"endValue":10,"events":[
              {"type":"O","at":0,"frame":0},{"type":"O","at":2,"frame":1},{"type":"C","at":5,"frame":1},
              {"type":"C","at":10,"frame":0}]}]}"#;
        let p = parse(text, "t").unwrap();
        assert_eq!(stacks(&p), vec!["a", "a;b", "a"]);
        assert_eq!(p.unit, Unit::Nanoseconds);
        assert_eq!(
            p.samples.weight.as_deref(),
            Some(&[2_000_000, 3_000_000, 5_000_000][..])
        );
        assert_eq!(
            p.samples.time_ns.as_deref(),
            Some(&[0, 2_000_000, 5_000_000][..])
        );
    }

    #[test]
    fn untimed_units_keep_weights() {
        let text = br#"{"shared":{"frames":[{"name":"alloc"}]},"profiles":[
            {"type":"sampled","name":"heap","unit":"bytes","startValue":0,"endValue":96,"samples":[[0],[0]],"weights":[32,64]},
            {"type":"sampled","name":"cpu","unit":"seconds","startValue":0,"endValue":1,"samples":[[0]],"weights":[1]}]}"#;
        let p = parse(text, "t").unwrap();
        assert_eq!(p.unit, Unit::Bytes);
        assert!(p.samples.time_ns.is_none());
        assert_eq!(p.samples.weight.as_deref(), Some(&[32, 64][..]));
        assert_eq!(p.damage.skipped, 1);
    }

    #[test]
    fn damage_is_an_error_with_a_place() {
        let bad_index = b"{\"shared\":{\"frames\":[{\"name\":\"a\"}]},\n\"profiles\":[{\"type\":\"sampled\",\"unit\":\"none\",\"samples\":[[0,7]],\"weights\":[1]}]}";
        let e = parse(bad_index, "t").unwrap_err().to_string();
        assert!(e.contains("line 2") && e.contains("frame index 7"), "{e}");
        let e = parse(
            br#"{"shared":{"frames":[{"name":"a"}]},"profiles":[{"type":"sampled","unit":"none","samples":[[0]],"weights":[]}]}"#,
            "t",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("0 weights for 1 samples"), "{e}");
        let e = parse(
            br#"{"shared":{"frames":[{"name":"a"},{"name":"b"}]},"profiles":[{"type":"evented","unit":"none","events":[{"type":"O","at":0,"frame":0},{"type":"C","at":1,"frame":1}]}]}"#,
            "t",
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("events[1] closes frame 1"), "{e}");
        assert!(parse(b"not json", "t").is_err());
        assert!(parse(br#"{"shared":{"frames":[]},"profiles":[]}"#, "t").is_err());
        assert!(parse(
            br#"{"shared":{"frames":[{"name":"a"}]},"profiles":[{"type":"sampled","unit":"parsecs","samples":[],"weights":[]}]}"#,
            "t"
        )
        .is_err());
        // The limit is reset after a parse: an unrelated document is not
        // checked against a stale frame count.
        assert_eq!(FRAME_LIMIT.with(Cell::get), usize::MAX);
    }

    #[test]
    fn detection() {
        assert!(looks_like(
            br#"{"$schema":"https://www.speedscope.app/file-format-schema.json","profiles":[]}"#
        ));
        assert!(looks_like(
            br#" {"profiles":[{"type":"sampled","samples":[]}],"shared":{"frames":[]}}"#
        ));
        assert!(!looks_like(br#"{"nodes":[],"samples":[]}"#));
        assert!(!looks_like(b"main;f 1\n"));
    }
}
