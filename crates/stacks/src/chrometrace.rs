//! Chrome trace event files with V8 CPU profiles: what DevTools'
//! Performance panel saves ("Save profile..."), `chrome --trace-startup`
//! and the DevTools protocol's `Tracing` domain write, in either of the
//! trace format's forms (a bare JSON array of events, or an object with
//! `traceEvents`).
//!
//! A profile is a `Profile` event (its `startTime`) and the `ProfileChunk`
//! events sharing its `pid` and `id`, each adding nodes (linked by
//! `parent`), samples and `timeDeltas`; older traces carry one whole
//! `.cpuprofile` in a `CpuProfile` event. Every profile becomes one thread
//! (named by the trace's `thread_name` metadata), its samples placed on
//! the trace clock and weighed by the time to the next sample, as in
//! [`crate::cpuprofile`].

use crate::cpuprofile::{finish, CallFrame, Row, Tree};
use crate::error::{Error, Result};
use crate::format::{Format, FormatInfo, Parsed};
use crate::model::{Location, Profile, Thread, Unit};
use rustc_hash::FxHashMap;
use serde::Deserialize;
use serde_json::value::RawValue;

#[derive(Deserialize)]
struct Event {
    #[serde(default)]
    name: String,
    #[serde(default)]
    pid: Option<i64>,
    #[serde(default)]
    tid: Option<i64>,
    #[serde(default)]
    id: Option<serde_json::Value>,
    #[serde(default)]
    args: Option<Box<RawValue>>,
}

#[derive(Deserialize)]
struct Wrapped {
    #[serde(rename = "traceEvents")]
    trace_events: Vec<Event>,
}

#[derive(Deserialize)]
struct Args<T> {
    data: T,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ProfileData {
    #[serde(default)]
    start_time: Option<f64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ChunkData {
    #[serde(default)]
    cpu_profile: ChunkProfile,
    #[serde(default)]
    time_deltas: Vec<f64>,
    #[serde(default)]
    end_time: Option<f64>,
}

#[derive(Deserialize, Default)]
struct ChunkProfile {
    #[serde(default)]
    nodes: Vec<ChunkNode>,
    #[serde(default)]
    samples: Vec<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct ChunkNode {
    id: u64,
    call_frame: CallFrame,
    #[serde(default)]
    parent: Option<u64>,
    #[serde(default)]
    children: Vec<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WholeData {
    cpu_profile: WholeProfile,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct WholeProfile {
    #[serde(default)]
    nodes: Vec<ChunkNode>,
    #[serde(default)]
    samples: Vec<u64>,
    #[serde(default)]
    time_deltas: Vec<f64>,
    #[serde(default)]
    start_time: Option<f64>,
    #[serde(default)]
    end_time: Option<f64>,
}

#[derive(Deserialize)]
struct NameArgs {
    name: String,
}

/// One profile gathered from its events.
#[derive(Default)]
struct Gathered {
    pid: i64,
    tid: i64,
    start_us: Option<f64>,
    end_us: Option<f64>,
    nodes: Vec<ChunkNode>,
    samples: Vec<u64>,
    deltas: Vec<f64>,
}

/// Whether the head of an input looks like a Chrome trace: an object with
/// `traceEvents`, or an array whose first element is a trace event.
pub fn looks_like(head: &[u8]) -> bool {
    let s = String::from_utf8_lossy(&head[..head.len().min(4096)]);
    let compact: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    (compact.starts_with('{') && compact.contains("\"traceEvents\":"))
        || (compact.starts_with("[{")
            && compact.contains("\"ph\":\"")
            && compact.contains("\"pid\":"))
}

/// This format's entry in [`crate::format::FORMATS`].
pub const FORMAT: FormatInfo = FormatInfo {
    format: Format::ChromeTrace,
    name: "chrometrace",
    aliases: &["trace", "devtools"],
    description: "Chrome trace / DevTools Performance JSON",
    text: false,
    looks_like,
    read: |input, _| {
        let (name, data) = input.read_all()?;
        parse(&data, &name).map(Parsed::from)
    },
};

fn json_error(name: &str, e: &serde_json::Error) -> Error {
    Error::malformed(
        name,
        Location::Line(e.line() as u64),
        format!("a Chrome trace JSON document (column {}: {e})", e.column()),
    )
}

fn events(data: &[u8], name: &str) -> Result<Vec<Event>> {
    let first = data.iter().find(|b| !b.is_ascii_whitespace()).copied();
    if first == Some(b'{') {
        let w: Wrapped = serde_json::from_slice(data).map_err(|e| json_error(name, &e))?;
        return Ok(w.trace_events);
    }
    match serde_json::from_slice::<Vec<Event>>(data) {
        Ok(v) => Ok(v),
        // The array form may end without its `]` (a trace cut off when the
        // browser stopped); add it back, once.
        Err(e) if e.is_eof() => {
            let mut t = data.to_vec();
            while t
                .last()
                .is_some_and(|b| b.is_ascii_whitespace() || *b == b',')
            {
                t.pop();
            }
            t.push(b']');
            serde_json::from_slice(&t).map_err(|_| json_error(name, &e))
        }
        Err(e) => Err(json_error(name, &e)),
    }
}

fn args<'a, T: Deserialize<'a>>(
    e: &'a Event,
    i: usize,
    name: &str,
    what: &str,
) -> Result<Option<T>> {
    let Some(raw) = &e.args else {
        return Ok(None);
    };
    serde_json::from_str(raw.get()).map(Some).map_err(|err| {
        Error::malformed(
            name,
            Location::Byte(0),
            format!("traceEvents[{i}] ({what}) to carry {what} data ({err})"),
        )
    })
}

/// Parses a Chrome trace and keeps its CPU profiles.
pub fn parse(data: &[u8], name: &str) -> Result<Profile> {
    let events = events(data, name)?;
    let mut thread_names: FxHashMap<(i64, i64), String> = FxHashMap::default();
    let mut profiles: Vec<Gathered> = Vec::new();
    let mut by_key: FxHashMap<(i64, String), usize> = FxHashMap::default();
    let key = |e: &Event| {
        let id = match &e.id {
            Some(serde_json::Value::String(s)) => s.clone(),
            Some(v) => v.to_string(),
            None => String::new(),
        };
        (e.pid.unwrap_or(0), id)
    };
    for (i, e) in events.iter().enumerate() {
        match e.name.as_str() {
            "thread_name" => {
                if let Ok(Some(a)) = args::<NameArgs>(e, i, name, "thread_name") {
                    thread_names.insert((e.pid.unwrap_or(0), e.tid.unwrap_or(0)), a.name);
                }
            }
            "Profile" => {
                let a: Option<Args<ProfileData>> = args(e, i, name, "Profile")?;
                let k = key(e);
                let ix = *by_key.entry(k).or_insert_with(|| {
                    profiles.push(Gathered::default());
                    profiles.len() - 1
                });
                let g = &mut profiles[ix];
                g.pid = e.pid.unwrap_or(0);
                g.tid = e.tid.unwrap_or(0);
                g.start_us = a.and_then(|a| a.data.start_time);
            }
            "ProfileChunk" => {
                let Some(a) = args::<Args<ChunkData>>(e, i, name, "ProfileChunk")? else {
                    continue;
                };
                let k = key(e);
                let ix = *by_key.entry(k).or_insert_with(|| {
                    profiles.push(Gathered {
                        pid: e.pid.unwrap_or(0),
                        tid: e.tid.unwrap_or(0),
                        ..Gathered::default()
                    });
                    profiles.len() - 1
                });
                let g = &mut profiles[ix];
                let d = a.data;
                g.nodes.extend(d.cpu_profile.nodes);
                if d.time_deltas.len() != d.cpu_profile.samples.len() {
                    return Err(Error::malformed(
                        name,
                        Location::Byte(0),
                        format!(
                            "traceEvents[{i}] (ProfileChunk) to carry as many timeDeltas as samples ({} and {})",
                            d.time_deltas.len(),
                            d.cpu_profile.samples.len()
                        ),
                    ));
                }
                g.samples.extend(d.cpu_profile.samples);
                g.deltas.extend(d.time_deltas);
                if d.end_time.is_some() {
                    g.end_us = d.end_time;
                }
            }
            "CpuProfile" => {
                let Some(a) = args::<Args<WholeData>>(e, i, name, "CpuProfile")? else {
                    continue;
                };
                let p = a.data.cpu_profile;
                profiles.push(Gathered {
                    pid: e.pid.unwrap_or(0),
                    tid: e.tid.unwrap_or(0),
                    start_us: p.start_time,
                    end_us: p.end_time,
                    nodes: p.nodes,
                    samples: p.samples,
                    deltas: p.time_deltas,
                });
            }
            _ => {}
        }
    }
    let mut profile = Profile::new(name, Unit::Samples);
    let mut rows: Vec<Row> = Vec::new();
    for g in &profiles {
        if g.samples.is_empty() {
            continue;
        }
        let mut parent_of: FxHashMap<u64, u64> = FxHashMap::default();
        for n in &g.nodes {
            if let Some(p) = n.parent {
                parent_of.insert(n.id, p);
            }
            for &c in &n.children {
                parent_of.insert(c, n.id);
            }
        }
        let nodes: Vec<(u64, &CallFrame)> = g.nodes.iter().map(|n| (n.id, &n.call_frame)).collect();
        let mut tree = Tree::new(&nodes, &parent_of);
        let comm = thread_names
            .get(&(g.pid, g.tid))
            .cloned()
            .unwrap_or_else(|| "V8".to_owned());
        let thread = profile.thread(Thread::from_stored(g.pid, g.tid, comm));
        // Without a Profile event the chunks' times still order the
        // samples; they start at 0 on no clock.
        let start = g.start_us.unwrap_or(0.0);
        rows.extend(tree.rows(&mut profile, &g.samples, &g.deltas, start, g.end_us, thread));
    }
    if rows.is_empty() {
        return Err(Error::Empty {
            path: name.into(),
            why: if profiles.is_empty() {
                "the trace has no CPU profile (record it with the \"JavaScript samples\" / disabled-by-default-v8.cpu_profiler category)".into()
            } else {
                "the trace's CPU profiles have no samples".into()
            },
        });
    }
    finish(&mut profile, rows);
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stacks(p: &Profile) -> Vec<String> {
        p.sample_stacks()
    }

    const EVENTS: &str = r#"[
 {"pid":7,"tid":9,"ph":"M","name":"thread_name","args":{"name":"CrRendererMain"}},
 {"pid":7,"tid":9,"ph":"P","name":"Profile","id":"0x1","ts":1000,"args":{"data":{"startTime":1000}}},
 {"pid":7,"tid":9,"ph":"P","name":"ProfileChunk","id":"0x1","ts":1100,"args":{"data":{"cpuProfile":{
   "nodes":[{"id":1,"callFrame":{"functionName":"(root)","url":""}},
            {"id":2,"parent":1,"callFrame":{"functionName":"main","url":"https://x/a.js","lineNumber":0}},
            {"id":3,"parent":2,"callFrame":{"functionName":"hot","url":"https://x/a.js","lineNumber":4}}],
   "samples":[2,3]},"timeDeltas":[10,100]}}},
 {"pid":7,"tid":9,"ph":"P","name":"ProfileChunk","id":"0x1","ts":1200,"args":{"data":{"cpuProfile":{
   "nodes":[{"id":4,"parent":3,"callFrame":{"functionName":"","url":"https://x/a.js","lineNumber":9}}],
   "samples":[4,3,1]},"timeDeltas":[300,50,25],"endTime":1600}}},
 {"pid":7,"tid":9,"ph":"X","name":"RunTask","ts":1,"dur":5,"args":{}}
"#;

    #[test]
    fn chunks_join_into_one_timed_profile() {
        let p = parse(EVENTS.as_bytes(), "t").unwrap();
        assert_eq!(
            stacks(&p),
            vec!["main", "main;hot", "main;hot;(anonymous)", "main;hot"]
        );
        // Times 1010, 1110, 1410, 1460 (then the root sample at 1485);
        // each weighs the time to the next sample.
        assert_eq!(
            p.samples.time_ns.as_deref(),
            Some(&[0, 100_000, 400_000, 450_000][..])
        );
        assert_eq!(
            p.samples.weight.as_deref(),
            Some(&[100_000, 300_000, 50_000, 25_000][..])
        );
        assert_eq!(p.unit, Unit::Nanoseconds);
        assert_eq!(p.threads[0].comm, "CrRendererMain");
        assert_eq!((p.threads[0].pid, p.threads[0].tid), (7, 9));
        // The array form without its closing bracket, and the object form.
        let wrapped = format!("{{\"traceEvents\":{EVENTS}]}}");
        assert_eq!(parse(wrapped.as_bytes(), "t").unwrap().samples.len(), 4);
    }

    #[test]
    fn a_trace_without_profiles_says_so() {
        let e = parse(
            br#"{"traceEvents":[{"pid":1,"tid":1,"ph":"X","name":"a"}]}"#,
            "t",
        )
        .unwrap_err();
        assert!(e.to_string().contains("no CPU profile"), "{e}");
        let e = parse(
            br#"[{"pid":1,"name":"ProfileChunk","id":"1","args":{"data":{"cpuProfile":{"samples":[1]},"timeDeltas":[]}}}]"#,
            "t",
        )
        .unwrap_err();
        assert!(e.to_string().contains("as many timeDeltas"), "{e}");
    }

    #[test]
    fn detection() {
        assert!(looks_like(br#"{"traceEvents":[],"metadata":{}}"#));
        assert!(looks_like(
            b"[\n{\"pid\":1,\"tid\":2,\"ph\":\"M\",\"name\":\"x\"}"
        ));
        assert!(!looks_like(br#"{"nodes":[],"samples":[]}"#));
        assert!(!looks_like(br#"["a;b 1"]"#));
    }
}
