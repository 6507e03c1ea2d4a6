//! Chrome/V8 `.cpuprofile` (`node --cpu-prof`, Chrome DevTools): a node tree
//! plus the sampled node ids and the time between samples (`timeDeltas`).

use crate::error::{Error, Result};
use crate::format::{Format, FormatInfo, Parsed};
use crate::model::{FrameKind, Location, Profile, Unit, NO_PARENT};
use rustc_hash::FxHashMap;
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Doc {
    nodes: Vec<Node>,
    #[serde(default)]
    start_time: Option<f64>,
    #[serde(default)]
    samples: Vec<u64>,
    #[serde(default)]
    time_deltas: Vec<f64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Node {
    id: u64,
    call_frame: CallFrame,
    #[serde(default)]
    hit_count: Option<u64>,
    #[serde(default)]
    children: Vec<u64>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct CallFrame {
    #[serde(default)]
    function_name: String,
    #[serde(default)]
    url: String,
    #[serde(default)]
    line_number: i64,
}

/// Whether the head of a file looks like a .cpuprofile.
pub fn looks_like(head: &[u8]) -> bool {
    let s = String::from_utf8_lossy(&head[..head.len().min(4096)]);
    let t = s.trim_start();
    t.starts_with('{') && (s.contains("\"nodes\"") || s.contains("\"callFrame\""))
}

fn kind_of(name: &str, url: &str) -> FrameKind {
    if name.starts_with('(') {
        // (program), (idle), (garbage collector): V8's own pseudo frames.
        FrameKind::Unknown
    } else if url.is_empty() {
        FrameKind::Native
    } else {
        FrameKind::Jit
    }
}

/// This format's entry in [`crate::format::FORMATS`].
pub const FORMAT: FormatInfo = FormatInfo {
    format: Format::CpuProfile,
    name: "cpuprofile",
    aliases: &["v8", "chrome"],
    description: "Chrome/V8 .cpuprofile JSON",
    looks_like,
    read: |input, _| {
        let (name, data) = input.read_all()?;
        parse(&data, &name).map(Parsed::from)
    },
};

/// Parses a .cpuprofile document.
pub fn parse(data: &[u8], name: &str) -> Result<Profile> {
    let doc: Doc = serde_json::from_slice(data).map_err(|e| {
        Error::malformed(
            name,
            Location::Line(e.line() as u64),
            format!(
                "a V8 .cpuprofile JSON document (column {}: {})",
                e.column(),
                e
            ),
        )
    })?;
    let mut profile = Profile::new(name, Unit::Samples);
    let mut parent_of: FxHashMap<u64, u64> = FxHashMap::default();
    let mut by_id: FxHashMap<u64, usize> = FxHashMap::default();
    for (i, n) in doc.nodes.iter().enumerate() {
        by_id.insert(n.id, i);
        for &c in &n.children {
            parent_of.insert(c, n.id);
        }
    }
    // Map each V8 node to a model node, walking up to (but not including) "(root)".
    let mut model_node: FxHashMap<u64, u32> = FxHashMap::default();
    // Nodes whose ancestry loops: every later sample of them fails at once
    // instead of walking the loop again (samples x nodes steps).
    let mut cyclic: rustc_hash::FxHashSet<u64> = Default::default();
    let mut resolve = |id: u64, profile: &mut Profile| -> Option<u32> {
        if let Some(&n) = model_node.get(&id) {
            return Some(n);
        }
        if cyclic.contains(&id) {
            return None;
        }
        let mut chain = Vec::new();
        let mut cur = Some(id);
        let mut guard = 0usize;
        while let Some(c) = cur {
            if model_node.contains_key(&c) {
                break;
            }
            let &idx = by_id.get(&c)?;
            let node = &doc.nodes[idx];
            if node.call_frame.function_name == "(root)" && !parent_of.contains_key(&c) {
                break;
            }
            chain.push(c);
            cur = parent_of.get(&c).copied();
            guard += 1;
            if guard > doc.nodes.len() {
                // A cycle in "children".
                cyclic.extend(chain);
                return None;
            }
        }
        let mut parent = cur
            .and_then(|c| model_node.get(&c).copied())
            .unwrap_or(NO_PARENT);
        for &c in chain.iter().rev() {
            let cf = &doc.nodes[by_id[&c]].call_frame;
            let fname = if cf.function_name.is_empty() {
                "(anonymous)"
            } else {
                cf.function_name.as_str()
            };
            let module = if cf.url.is_empty() {
                String::new()
            } else {
                format!("{}:{}", cf.url, cf.line_number.saturating_add(1))
            };
            let f = profile.frame_parts(fname, &module, kind_of(fname, &cf.url));
            parent = profile.child(parent, f);
            model_node.insert(c, parent);
        }
        (parent != NO_PARENT).then_some(parent)
    };
    if doc.samples.is_empty() {
        // Old profiles carry only hitCount per node.
        let mut counts: Vec<u64> = Vec::new();
        for n in &doc.nodes {
            let Some(h) = n.hit_count.filter(|&h| h > 0) else {
                continue;
            };
            if let Some(m) = resolve(n.id, &mut profile) {
                counts.resize(profile.node_count(), 0);
                counts[m as usize] = counts[m as usize].saturating_add(h);
            }
        }
        if counts.is_empty() {
            return Err(Error::Empty {
                path: name.into(),
                why: "the .cpuprofile has no samples".into(),
            });
        }
        counts.resize(profile.node_count(), 0);
        profile.counts = Some(counts);
        return Ok(profile);
    }
    let timed = doc.time_deltas.len() == doc.samples.len();
    if !timed {
        profile.damage.skip(Location::Byte(0), || {
            format!(
                "timeDeltas ({}) to match samples ({}); times dropped",
                doc.time_deltas.len(),
                doc.samples.len()
            )
        });
    }
    let mut times = Vec::with_capacity(doc.samples.len());
    let mut t_us = 0f64;
    for (i, &s) in doc.samples.iter().enumerate() {
        if timed {
            t_us += doc.time_deltas[i];
        }
        let Some(node) = resolve(s, &mut profile) else {
            profile.damage.skip(Location::Byte(0), || {
                format!("sample {i} to name a node id in \"nodes\" (got {s})")
            });
            continue;
        };
        profile.samples.node.push(node);
        times.push(t_us);
    }
    if timed {
        let t0 = times.iter().copied().fold(f64::INFINITY, f64::min);
        profile.samples.time_ns = Some(
            times
                .iter()
                .map(|t| ((t - t0).max(0.0) * 1000.0) as u64)
                .collect(),
        );
    }
    let _ = doc.start_time;
    let mut t = profile.threads.len();
    if t == 0 {
        t = profile.thread(crate::model::Thread {
            pid: 0,
            tid: 0,
            comm: "node".into(),
        }) as usize;
    }
    profile.samples.thread = Some(vec![t as u32; profile.samples.len()]);
    crate::model::sort_by_time(&mut profile);
    Ok(profile)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn extreme_line_numbers_and_hit_counts_do_not_overflow() {
        // Crash inputs for the cpuprofile fuzz target: `lineNumber + 1` and the sum
        // of two nodes' hitCounts overflowed.
        let doc = br#"{"nodes":[
            {"id":1,"callFrame":{"functionName":"(root)"},"children":[2,3]},
            {"id":2,"callFrame":{"functionName":"f","url":"u","lineNumber":9223372036854775807},"hitCount":18446744073709551615},
            {"id":3,"callFrame":{"functionName":"f","url":"u","lineNumber":9223372036854775807},"hitCount":18446744073709551615}]}"#;
        let p = parse(doc, "t").unwrap();
        assert_eq!(p.counts.as_ref().unwrap().iter().max(), Some(&u64::MAX));
        assert!(p.frames.iter().any(|f| f.module == "u:9223372036854775807"));
    }

    #[test]
    fn samples_of_a_cyclic_node_are_skipped_quickly() {
        // A ring of 10,000 nodes sampled 100,000 times: each sample walked
        // the whole ring before failing (10^9 steps, minutes); now only the
        // first one does.
        let n = 10_000;
        let nodes: Vec<String> = (0..n)
            .map(|i| {
                format!(
                    r#"{{"id":{i},"callFrame":{{"functionName":"f{i}"}},"children":[{}]}}"#,
                    (i + 1) % n
                )
            })
            .collect();
        let samples = vec!["7"; 100_000].join(",");
        let deltas = vec!["1"; 100_000].join(",");
        let doc = format!(
            r#"{{"nodes":[{}],"samples":[{samples}],"timeDeltas":[{deltas}]}}"#,
            nodes.join(",")
        );
        let started = std::time::Instant::now();
        let p = parse(doc.as_bytes(), "t").unwrap();
        assert_eq!(p.samples.len(), 0);
        assert_eq!(p.damage.skipped, 100_000);
        let took = started.elapsed();
        assert!(took.as_secs() < 30, "took {took:?}");
    }
}
