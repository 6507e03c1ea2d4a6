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
    end_time: Option<f64>,
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

/// Where a V8 profile node's code is.
#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CallFrame {
    #[serde(default)]
    pub(crate) function_name: String,
    #[serde(default)]
    pub(crate) url: String,
    #[serde(default)]
    pub(crate) line_number: i64,
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
    text: false,
    looks_like,
    read: |input, _| {
        let (name, data) = input.read_all()?;
        parse(&data, &name).map(Parsed::from)
    },
};

/// Parses a .cpuprofile document.
///
/// Samples weigh the time until the next sample (the last one: until
/// `endTime`), in nanoseconds, as DevTools and speedscope weigh them: V8
/// samples at irregular intervals (a sample waits for a safe point), so
/// counting samples misstates shares (36.5% for a function that ran 38.5%
/// of the time on a real profile). Profiles without `timeDeltas` count
/// samples.
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
    for n in &doc.nodes {
        for &c in &n.children {
            parent_of.insert(c, n.id);
        }
    }
    let nodes: Vec<(u64, &CallFrame)> = doc.nodes.iter().map(|n| (n.id, &n.call_frame)).collect();
    let mut tree = Tree::new(&nodes, &parent_of);
    if doc.samples.is_empty() {
        // Old profiles carry only hitCount per node.
        let mut counts: Vec<u64> = Vec::new();
        for n in &doc.nodes {
            let Some(h) = n.hit_count.filter(|&h| h > 0) else {
                continue;
            };
            if let Some(m) = tree.resolve(n.id, &mut profile) {
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
    let thread = profile.thread(crate::model::Thread {
        pid: 0,
        tid: 0,
        comm: "node".into(),
    });
    let rows = tree.rows(
        &mut profile,
        &doc.samples,
        &doc.time_deltas,
        doc.start_time.unwrap_or(0.0),
        doc.end_time,
        thread,
    );
    finish(&mut profile, rows);
    Ok(profile)
}

/// One sample of a V8 CPU profile with its place on the profile's clock.
pub(crate) struct Row {
    pub(crate) node: u32,
    pub(crate) thread: u32,
    /// Microseconds on the profiler's clock.
    pub(crate) t_us: f64,
    /// Microseconds until the next sample; `None` when the input has no
    /// times.
    pub(crate) w_us: Option<f64>,
}

/// A V8 node tree (from a .cpuprofile's `children` or a trace's `parent`
/// links) and its mapping to model nodes.
pub(crate) struct Tree<'a> {
    by_id: FxHashMap<u64, &'a CallFrame>,
    parent_of: &'a FxHashMap<u64, u64>,
    model_node: FxHashMap<u64, u32>,
    // Nodes whose ancestry loops: every later sample of them fails at once
    // instead of walking the loop again (samples x nodes steps).
    cyclic: rustc_hash::FxHashSet<u64>,
}

impl<'a> Tree<'a> {
    pub(crate) fn new(nodes: &[(u64, &'a CallFrame)], parent_of: &'a FxHashMap<u64, u64>) -> Self {
        Tree {
            by_id: nodes.iter().map(|&(id, cf)| (id, cf)).collect(),
            parent_of,
            model_node: FxHashMap::default(),
            cyclic: Default::default(),
        }
    }

    /// The model node of V8 node `id`, walking up to (but not including)
    /// "(root)"; `None` for the root itself, an unknown id or a cycle.
    pub(crate) fn resolve(&mut self, id: u64, profile: &mut Profile) -> Option<u32> {
        if let Some(&n) = self.model_node.get(&id) {
            return Some(n);
        }
        if self.cyclic.contains(&id) {
            return None;
        }
        let mut chain = Vec::new();
        let mut cur = Some(id);
        while let Some(c) = cur {
            if self.model_node.contains_key(&c) {
                break;
            }
            let &cf = self.by_id.get(&c)?;
            if cf.function_name == "(root)" && !self.parent_of.contains_key(&c) {
                break;
            }
            chain.push(c);
            cur = self.parent_of.get(&c).copied();
            if chain.len() > self.by_id.len() {
                // A cycle in the links.
                self.cyclic.extend(chain);
                return None;
            }
        }
        let mut parent = cur
            .and_then(|c| self.model_node.get(&c).copied())
            .unwrap_or(NO_PARENT);
        for &c in chain.iter().rev() {
            let cf = self.by_id[&c];
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
            self.model_node.insert(c, parent);
        }
        (parent != NO_PARENT).then_some(parent)
    }

    /// The samples as rows: each at `start_us` plus the running sum of
    /// `deltas`, weighing the time to the next sample (the last: to
    /// `end_us`, or nothing when unknown). Samples of unknown nodes are
    /// counted as damage; their time still separates their neighbours.
    pub(crate) fn rows(
        &mut self,
        profile: &mut Profile,
        samples: &[u64],
        deltas: &[f64],
        start_us: f64,
        end_us: Option<f64>,
        thread: u32,
    ) -> Vec<Row> {
        let timed = deltas.len() == samples.len() && deltas.iter().all(|d| d.is_finite());
        if !timed {
            profile.damage.skip(Location::Byte(0), || {
                format!(
                    "timeDeltas ({}, all finite) to match samples ({}); times dropped",
                    deltas.len(),
                    samples.len()
                )
            });
        }
        let mut times = Vec::with_capacity(samples.len());
        let mut t = if start_us.is_finite() { start_us } else { 0.0 };
        for i in 0..samples.len() {
            if timed {
                t += deltas.get(i).copied().unwrap_or(0.0);
            }
            times.push(t);
        }
        let mut rows = Vec::with_capacity(samples.len());
        for (i, &s) in samples.iter().enumerate() {
            let Some(node) = self.resolve(s, profile) else {
                if self
                    .by_id
                    .get(&s)
                    .is_some_and(|cf| cf.function_name == "(root)")
                {
                    // V8 samples the root when it could not walk the stack:
                    // time it measured but attributes to nothing.
                    continue;
                }
                profile.damage.skip(Location::Byte(0), || {
                    format!("sample {i} to name a node id in \"nodes\" (got {s})")
                });
                continue;
            };
            let w_us = timed.then(|| {
                let next = times
                    .get(i + 1)
                    .copied()
                    .or(end_us.filter(|e| e.is_finite()))
                    .unwrap_or(times[i]);
                // Timestamps can step back (V8 orders samples by the
                // sampler, not by the clock): no negative durations.
                (next - times[i]).max(0.0)
            });
            rows.push(Row {
                node,
                thread,
                t_us: times[i],
                w_us,
            });
        }
        rows
    }
}

/// Stores rows as the profile's samples: times from the earliest sample,
/// weights in nanoseconds when every row has one.
pub(crate) fn finish(profile: &mut Profile, rows: Vec<Row>) {
    let s = &mut profile.samples;
    s.node = rows.iter().map(|r| r.node).collect();
    s.thread = Some(rows.iter().map(|r| r.thread).collect());
    if !rows.is_empty() && rows.iter().all(|r| r.w_us.is_some()) {
        let t0 = rows.iter().map(|r| r.t_us).fold(f64::INFINITY, f64::min);
        s.time_ns = Some(
            rows.iter()
                .map(|r| ((r.t_us - t0).max(0.0) * 1000.0) as u64)
                .collect(),
        );
        s.weight = Some(
            rows.iter()
                .map(|r| (r.w_us.unwrap_or(0.0) * 1000.0).round() as u64)
                .collect(),
        );
        profile.unit = Unit::Nanoseconds;
    }
    crate::model::sort_by_time(profile);
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
