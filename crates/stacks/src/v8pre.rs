//! `node --prof-process --preprocess` JSON (what flamebearer and the V8
//! profile viewer read): `code` (every code object, native symbols already
//! named by the tick processor), `functions`, and `ticks`, each
//! `{"tm": µs, "vm": state, "s": [code, offset, code, offset, ...]}` leaf
//! first, where code `-1` means an address nothing covered.
//!
//! Frames are named as in a V8 tick log read directly ([`crate::v8log`]):
//! JS functions by name with `path:line` as module and their tier as kind,
//! C++ symbols with their library as module, and ticks outside JS under a
//! VM-state root. An uncovered leaf is `[unknown]`; an uncovered caller is
//! dropped, as the tick processor drops it.

use crate::error::{Error, Result};
use crate::format::{Format, FormatInfo, Parsed};
use crate::model::{Frame, FrameId, FrameKind, Location, Profile, Thread, Unit, NO_PARENT};
use crate::v8log::{js_frame, vm_state_frame};
use rustc_hash::FxHashMap;
use serde::Deserialize;

#[derive(Deserialize)]
struct Doc {
    code: Vec<Code>,
    ticks: Vec<Tick>,
}

#[derive(Deserialize)]
struct Code {
    #[serde(default)]
    name: String,
    #[serde(rename = "type", default)]
    kind: String,
    #[serde(rename = "kind", default)]
    subkind: Option<String>,
}

#[derive(Deserialize)]
struct Tick {
    tm: f64,
    #[serde(default)]
    vm: u64,
    s: Vec<i64>,
}

/// Whether the head of an input looks like preprocessed tick JSON: an
/// object whose first key is `"code"` holding code entries with a
/// tick-processor type.
pub fn looks_like(head: &[u8]) -> bool {
    let s = String::from_utf8_lossy(&head[..head.len().min(4096)]);
    let compact: String = s.chars().filter(|c| !c.is_whitespace()).collect();
    compact.starts_with("{\"code\":[")
        && ["SHARED_LIB", "CPP", "JS", "CODE"]
            .iter()
            .any(|t| compact.contains(&format!("\"type\":\"{t}\"")))
}

/// This format's entry in [`crate::format::FORMATS`].
pub const FORMAT: FormatInfo = FormatInfo {
    format: Format::V8Pre,
    name: "v8pre",
    aliases: &["prof-process", "preprocess"],
    description: "node --prof-process --preprocess JSON",
    text: false,
    looks_like,
    read: |input, _| {
        let (name, data) = input.read_all()?;
        parse(&data, &name).map(Parsed::from)
    },
};

fn frame_of(code: &Code, library: &str) -> Frame {
    match code.kind.as_str() {
        "JS" => js_frame(
            &code.name,
            match code.subkind.as_deref() {
                Some("Unopt") | Some("Interpreted") => FrameKind::Interpreted,
                _ => FrameKind::Jit,
            },
        ),
        "CPP" => Frame {
            name: code.name.clone(),
            module: library.to_owned(),
            kind: FrameKind::Native,
        },
        "SHARED_LIB" => {
            let base = code.name.rsplit('/').next().unwrap_or(&code.name);
            Frame {
                name: format!("[{base}]"),
                module: code.name.clone(),
                kind: FrameKind::Native,
            }
        }
        other => {
            let k = code.subkind.as_deref().unwrap_or(other);
            Frame {
                name: if code.name.is_empty() {
                    format!("({k})")
                } else {
                    code.name.clone()
                },
                module: format!("[{k}]"),
                kind: if k == "RegExp" {
                    FrameKind::Jit
                } else {
                    FrameKind::Native
                },
            }
        }
    }
}

/// Parses a preprocessed tick JSON document.
pub fn parse(data: &[u8], name: &str) -> Result<Profile> {
    let doc: Doc = serde_json::from_slice(data).map_err(|e| {
        Error::malformed(
            name,
            Location::Line(e.line() as u64),
            format!(
                "a node --prof-process --preprocess JSON document (column {}: {e})",
                e.column()
            ),
        )
    })?;
    if doc.ticks.is_empty() {
        return Err(Error::Empty {
            path: name.into(),
            why: "the preprocessed V8 profile has no ticks".into(),
        });
    }
    let mut profile = Profile::new(name, Unit::Samples);
    // C++ entries follow the SHARED_LIB entry of their library.
    let mut library = String::new();
    let mut libraries = Vec::with_capacity(doc.code.len());
    for c in &doc.code {
        if c.kind == "SHARED_LIB" {
            library = c.name.clone();
        }
        libraries.push(library.clone());
    }
    let mut frames: FxHashMap<usize, FrameId> = FxHashMap::default();
    let unknown = profile.frame(Frame {
        name: "[unknown]".into(),
        module: String::new(),
        kind: FrameKind::Unknown,
    });
    let mut vm_roots: FxHashMap<u64, FrameId> = FxHashMap::default();
    let t0 = doc
        .ticks
        .iter()
        .map(|t| t.tm)
        .filter(|t| t.is_finite())
        .fold(f64::INFINITY, f64::min);
    let mut times = Vec::with_capacity(doc.ticks.len());
    let mut stack: Vec<FrameId> = Vec::new();
    for (i, t) in doc.ticks.iter().enumerate() {
        if !t.tm.is_finite() || t.s.len() % 2 != 0 {
            profile.damage.skip(Location::Byte(0), || {
                format!("ticks[{i}] to have a finite \"tm\" and (code, offset) pairs in \"s\"")
            });
            continue;
        }
        stack.clear();
        let mut bad = None;
        for (j, pair) in t.s.chunks_exact(2).enumerate() {
            let c = pair[0];
            if c < 0 {
                if j == 0 {
                    stack.push(unknown);
                }
                continue;
            }
            let Some(code) = usize::try_from(c).ok().filter(|&c| c < doc.code.len()) else {
                bad = Some(c);
                break;
            };
            let f = match frames.get(&code) {
                Some(&f) => f,
                None => {
                    let f = profile.frame(frame_of(&doc.code[code], &libraries[code]));
                    frames.insert(code, f);
                    f
                }
            };
            stack.push(f);
        }
        if let Some(c) = bad {
            profile.damage.skip(Location::Byte(0), || {
                format!(
                    "ticks[{i}] to name code entries (got {c}; \"code\" has {})",
                    doc.code.len()
                )
            });
            continue;
        }
        let mut node = NO_PARENT;
        if let Some(fr) = vm_state_frame(t.vm) {
            let f = *vm_roots.entry(t.vm).or_insert_with(|| profile.frame(fr));
            node = profile.child(node, f);
        }
        for &f in stack.iter().rev() {
            node = profile.child(node, f);
        }
        if node == NO_PARENT {
            profile
                .damage
                .skip(Location::Byte(0), || format!("ticks[{i}] to have a stack"));
            continue;
        }
        profile.samples.node.push(node);
        times.push(((t.tm - t0).max(0.0) * 1000.0) as u64);
    }
    if profile.samples.is_empty() {
        return Err(Error::Empty {
            path: name.into(),
            why: format!(
                "no usable ticks in the preprocessed V8 profile ({})",
                profile.damage.report().unwrap_or_default()
            ),
        });
    }
    let n = profile.samples.len();
    profile.samples.time_ns = Some(times);
    profile.time_origin_ns = Some((t0.max(0.0) * 1000.0) as u64);
    let th = profile.thread(Thread {
        pid: 0,
        tid: 0,
        comm: "node".into(),
    });
    profile.samples.thread = Some(vec![th; n]);
    crate::model::sort_by_time(&mut profile);
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DOC: &str = r#"{"code":[
        {"name":"/usr/bin/node","type":"SHARED_LIB"},
        {"name":"v8::internal::Heap::Collect()","type":"CPP"},
        {"name":"fib /tmp/a.js:1:13","type":"JS","kind":"Opt","func":0,"tm":5},
        {"name":"work /tmp/a.js:3:14","type":"JS","kind":"Unopt","func":1,"tm":6},
        {"name":"ArrayPush","type":"CODE","kind":"Builtin","timestamp":1}],
      "functions":[],
      "ticks":[
        {"tm":100,"vm":0,"s":[2,10,3,4]},
        {"tm":200,"vm":1,"s":[1,0,-1,12345,3,4]},
        {"tm":300,"vm":0,"s":[-1,99,4,0,3,1]},
        {"tm":400,"vm":0,"s":[9,0]}],
      "scripts":[]}"#;

    fn stacks(p: &Profile) -> Vec<String> {
        p.sample_stacks()
    }

    #[test]
    fn ticks_become_stacks_with_times() {
        let p = parse(DOC.as_bytes(), "t").unwrap();
        assert_eq!(
            stacks(&p),
            vec![
                "work;fib",
                "(GC);work;v8::internal::Heap::Collect()",
                "work;ArrayPush;[unknown]"
            ]
        );
        assert_eq!(
            p.samples.time_ns.as_deref(),
            Some(&[0, 100_000, 200_000][..])
        );
        assert_eq!(p.damage.skipped, 1);
        let heap = p
            .frames
            .iter()
            .find(|f| f.name.starts_with("v8::"))
            .unwrap();
        assert_eq!(heap.module, "/usr/bin/node");
        let work = p.frames.iter().find(|f| f.name == "work").unwrap();
        assert_eq!(
            (work.module.as_str(), work.kind),
            ("/tmp/a.js:3", FrameKind::Interpreted)
        );
    }

    #[test]
    fn empty_and_damaged_documents_are_errors() {
        let e = parse(br#"{"code":[],"ticks":[]}"#, "t").unwrap_err();
        assert!(e.to_string().contains("no ticks"), "{e}");
        let e = parse(br#"{"code":[],"ticks":[{"tm":1,"s":[0,0]}]}"#, "t").unwrap_err();
        assert!(e.to_string().contains("no usable ticks"), "{e}");
        assert!(parse(b"{\"code\":", "t").is_err());
    }

    #[test]
    fn detection() {
        assert!(looks_like(
            b"{\n  \"code\": [\n  {\n    \"name\": \"/usr/bin/node\",\n    \"type\": \"SHARED_LIB\"\n  }"
        ));
        assert!(!looks_like(br#"{"nodes":[],"samples":[]}"#));
        assert!(!looks_like(br#"{"code":[1,2]}"#));
    }
}
