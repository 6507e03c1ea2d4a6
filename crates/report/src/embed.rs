//! The compact in-page form of a profile (docs/profile-json.md, "In HTML
//! pages"). Profile JSON v1 at 1,000,000 samples is 20-40 MB of number
//! lists; loading that much HTML and `JSON.parse`-ing it took most of a
//! second before the page could draw anything. Here the large columns
//! become text varints (about a third of the size, decoded by one
//! `charCodeAt` loop) placed *after* the page script, and a small coarse
//! call tree (the frames wide enough to see) goes into the page data, so
//! the flame graph is drawn before the browser has even read the columns.

use crate::assets::escape_json_in_script;
use serde::Deserialize;
use serde_json::{json, Value};

/// First character of the varint alphabet: 64 consecutive ASCII codes
/// `0`..`o`. None is `/` or `!`, so no column can contain `</script` or
/// `<!--`, and none needs escaping in a `<script>` element.
const BASE: u8 = b'0';

/// Profiles with more stack nodes than this get a preview tree.
const PREVIEW_MIN_NODES: usize = 50_000;
/// A preview keeps frames at least this share of the total wide: a quarter
/// pixel on a 2048 px wide graph.
const PREVIEW_SHARE: f64 = 1.0 / (4.0 * 2048.0);
/// Upper bound on preview nodes (a pathological profile widens the cut).
const PREVIEW_MAX_NODES: usize = 25_000;

/// Profile JSON v1 as the UI reads it; fields the page only passes on stay
/// untyped.
#[derive(Deserialize)]
struct ProfileIn {
    version: u32,
    #[serde(default)]
    title: Value,
    #[serde(default)]
    unit: Value,
    kinds: Vec<String>,
    frames: FramesIn,
    nodes: NodesIn,
    #[serde(default)]
    threads: Value,
    samples: Option<SamplesIn>,
    counts: Option<Vec<f64>>,
    #[serde(default)]
    start_unix_ns: Value,
    #[serde(default)]
    duration_ms: Value,
    /// The exact call graph of cProfile/pstats inputs, passed through for
    /// the page's call-graph table.
    #[serde(default)]
    callgraph: Value,
}

#[derive(Deserialize)]
struct FramesIn {
    name: Vec<String>,
    module: Vec<String>,
    kind: Vec<u32>,
}

#[derive(Deserialize)]
struct NodesIn {
    parent: Vec<i64>,
    frame: Vec<u32>,
}

#[derive(Deserialize)]
struct SamplesIn {
    node: Vec<u32>,
    weight: Option<Vec<f64>>,
    time_ms: Option<Vec<f64>>,
    thread: Option<Vec<u32>>,
}

/// How the page will first draw the profile, for the preview tree.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PreviewFor {
    /// The page opens with idle samples hidden.
    pub hide_idle: bool,
}

/// A profile ready to embed: the small object for the page data and the
/// column elements that follow the page script.
pub(crate) struct CompactProfile {
    /// JSON object standing in for the profile in the page data.
    pub header: String,
    /// `<script type="text/plain">` elements holding the columns.
    pub tail: String,
}

/// One column of the compact form.
struct Column {
    id: &'static str,
    enc: &'static str,
    text: String,
}

/// Converts profile JSON to the compact in-page form. Returns `None` when
/// the JSON is not a well-formed v1 profile: the page then embeds it as is
/// and the UI's validation names what is wrong.
pub(crate) fn compact(profile_json: &str, preview: Option<PreviewFor>) -> Option<CompactProfile> {
    let p: ProfileIn = serde_json::from_str(profile_json).ok()?;
    if !well_formed(&p) {
        return None;
    }
    let mut columns = Vec::new();

    // Frames: names as JSON, modules interned (a few hundred distinct).
    let mut modules: Vec<&str> = Vec::new();
    let mut module_ids = std::collections::HashMap::new();
    let mut frame_module = String::with_capacity(p.frames.module.len() * 2);
    for m in &p.frames.module {
        let id = *module_ids.entry(m.as_str()).or_insert_with(|| {
            modules.push(m.as_str());
            modules.len() - 1
        });
        push_varint(&mut frame_module, id as u64);
    }
    columns.push(Column {
        id: "frames",
        enc: "json",
        text: json!({ "name": p.frames.name, "modules": modules }).to_string(),
    });
    columns.push(Column {
        id: "frame-module",
        enc: "varint",
        text: frame_module,
    });
    columns.push(varints(
        "frame-kind",
        p.frames.kind.iter().map(|&k| u64::from(k)),
    ));

    // Nodes: a parent is usually the node just before, so store the distance.
    columns.push(varints(
        "node-parent",
        p.nodes
            .parent
            .iter()
            .enumerate()
            .map(|(i, &par)| (i as i64 - par) as u64),
    ));
    columns.push(varints(
        "node-frame",
        p.nodes.frame.iter().map(|&f| u64::from(f)),
    ));

    let mut time_unit_ns = Value::Null;
    if let Some(s) = &p.samples {
        columns.push(varints("sample-node", s.node.iter().map(|&n| u64::from(n))));
        if let Some(w) = &s.weight {
            columns.push(counts_column("sample-weight", w));
        }
        if let Some(t) = &s.time_ms {
            let (col, unit) = times_column(t);
            columns.push(col);
            if let Some(u) = unit {
                time_unit_ns = json!(u);
            }
        }
        if let Some(t) = &s.thread {
            columns.push(varints("sample-thread", t.iter().map(|&x| u64::from(x))));
        }
    }
    if let Some(c) = &p.counts {
        columns.push(counts_column("counts", c));
    }

    let preview = preview
        .filter(|_| p.nodes.parent.len() > PREVIEW_MIN_NODES)
        .map_or(Value::Null, |v| preview_tree(&p, v));
    let samples = p.samples.as_ref();
    let mut header = json!({
        "version": 1,
        "encoding": "compact-1",
        "title": p.title,
        "unit": p.unit,
        "kinds": p.kinds,
        "threads": p.threads,
        "start_unix_ns": p.start_unix_ns,
        "duration_ms": p.duration_ms,
        "frame_count": p.frames.name.len(),
        "node_count": p.nodes.parent.len(),
        "sample_count": samples.map(|s| s.node.len()),
        "has": {
            "weight": samples.is_some_and(|s| s.weight.is_some()),
            "time": samples.is_some_and(|s| s.time_ms.is_some()),
            "thread": samples.is_some_and(|s| s.thread.is_some()),
            "counts": p.counts.is_some(),
        },
        "time_unit_ns": time_unit_ns,
        "preview": preview,
    });
    if let (false, Some(h)) = (p.callgraph.is_null(), header.as_object_mut()) {
        h.insert("callgraph".into(), p.callgraph.clone());
    }

    let mut tail = String::with_capacity(columns.iter().map(|c| c.text.len() + 80).sum());
    for c in &columns {
        tail.push_str("<script type=\"text/plain\" id=\"keisoku-col-");
        tail.push_str(c.id);
        tail.push_str("\" data-enc=\"");
        tail.push_str(c.enc);
        tail.push_str("\">");
        // JSON columns carry frame names (any text); the varint columns'
        // alphabet ('0'..'o') can form neither `</` nor `<!`, and escaping
        // their `<`/`>` would change the numbers they spell.
        if c.enc == "json" {
            tail.push_str(&escape_json_in_script(&c.text));
        } else {
            tail.push_str(&c.text);
        }
        tail.push_str("</script>\n");
    }
    Some(CompactProfile {
        header: header.to_string(),
        tail,
    })
}

/// The index rules of docs/profile-json.md; anything else is left to the
/// UI's validation, which names the field.
fn well_formed(p: &ProfileIn) -> bool {
    let nf = p.frames.name.len();
    let nn = p.nodes.parent.len();
    let threads = p.threads.as_array().map_or(0, Vec::len);
    let kinds_ok = p
        .frames
        .kind
        .iter()
        .all(|&k| (k as usize) < p.kinds.len().max(1));
    let frames_ok = p.frames.module.len() == nf && p.frames.kind.len() == nf;
    let nodes_ok = p.nodes.frame.len() == nn
        && p.nodes.frame.iter().all(|&f| (f as usize) < nf)
        && p.nodes
            .parent
            .iter()
            .enumerate()
            .all(|(i, &par)| par >= -1 && par < i as i64);
    let samples_ok = match (&p.samples, &p.counts) {
        (Some(s), None) => {
            let ns = s.node.len();
            s.node.iter().all(|&n| (n as usize) < nn)
                && s.weight
                    .as_ref()
                    .is_none_or(|w| w.len() == ns && w.iter().all(|x| x.is_finite()))
                && s.time_ms
                    .as_ref()
                    .is_none_or(|t| t.len() == ns && t.iter().all(|x| x.is_finite()))
                && s.thread
                    .as_ref()
                    .is_none_or(|t| t.len() == ns && t.iter().all(|&x| (x as usize) < threads))
        }
        (None, Some(c)) => c.len() == nn && c.iter().all(|x| x.is_finite()),
        _ => false,
    };
    p.version == 1 && kinds_ok && frames_ok && nodes_ok && samples_ok
}

/// Appends `v` as a text varint: five bits per character, low bits first,
/// `+32` on every character but the last.
fn push_varint(out: &mut String, mut v: u64) {
    loop {
        let digit = (v & 31) as u8;
        v >>= 5;
        if v == 0 {
            out.push(char::from(BASE + digit));
            return;
        }
        out.push(char::from(BASE + 32 + digit));
    }
}

fn varints(id: &'static str, values: impl ExactSizeIterator<Item = u64>) -> Column {
    let mut text = String::with_capacity(values.len() * 3);
    for v in values {
        push_varint(&mut text, v);
    }
    Column {
        id,
        enc: "varint",
        text,
    }
}

/// Largest integer a double holds exactly.
const EXACT: f64 = 9_007_199_254_740_992.0;

/// Weights or counts: varints when every value is a whole number, else JSON.
fn counts_column(id: &'static str, values: &[f64]) -> Column {
    if values
        .iter()
        .all(|&x| (0.0..EXACT).contains(&x) && x.fract() == 0.0)
    {
        varints(id, values.iter().map(|&x| x as u64))
    } else {
        Column {
            id,
            enc: "json",
            text: serde_json::to_string(values).unwrap_or_else(|_| "[]".into()),
        }
    }
}

/// Sample times as zigzag varint deltas in the coarsest unit (1 ms down to
/// 1 ns) that reproduces every value exactly with the decoder's arithmetic
/// (`sum * unit / 1e6`); JSON when none does.
fn times_column(times: &[f64]) -> (Column, Option<u64>) {
    'unit: for unit in [1_000_000u64, 100_000, 10_000, 1000, 100, 10, 1] {
        let u = unit as f64;
        let limit = EXACT / u;
        let mut text = String::with_capacity(times.len() * 3);
        let mut prev = 0i64;
        for &t in times {
            let q = (t * 1e6 / u).round();
            // q is finite here: t is (checked by well_formed).
            if q.abs() >= limit || (q * u) / 1e6 != t {
                continue 'unit;
            }
            let q = q as i64;
            let d = q.wrapping_sub(prev);
            push_varint(&mut text, ((d << 1) ^ (d >> 63)) as u64);
            prev = q;
        }
        let col = Column {
            id: "sample-time",
            enc: "delta-zigzag",
            text,
        };
        return (col, Some(unit));
    }
    let col = Column {
        id: "sample-time",
        enc: "json",
        text: serde_json::to_string(times).unwrap_or_else(|_| "[]".into()),
    };
    (col, None)
}

/// Process groups of a profile whose samples come from two or more
/// processes, as the page opens it (web/src/flame/tree.ts `defaultSplit`):
/// the group of each thread and each group's label. A process is named as
/// `Profile.processName` names it (the comm with the most sample weight,
/// the earlier thread's on a tie, summed in the same order so the two
/// agree exactly), with its pid; when no thread's id differs from its pid
/// (perf script text without pids gives each thread its own), the pids say
/// nothing and processes are grouped by that name alone, as `pidsKnown`
/// does. `None`: the page opens merged.
fn process_groups(p: &ProfileIn) -> Option<(Vec<usize>, Vec<String>)> {
    let s = p.samples.as_ref()?;
    let st = s.thread.as_ref()?;
    let threads = p.threads.as_array()?;
    let id = |t: &Value, k: &str| {
        let v = &t[k];
        v.as_i64()
            .or_else(|| v.as_f64().map(|f| f as i64))
            .unwrap_or(0)
    };
    let mut pids: Vec<i64> = Vec::new();
    let mut pid_index = Vec::with_capacity(threads.len());
    for t in threads {
        let pid = id(t, "pid");
        let g = match pids.iter().position(|&q| q == pid) {
            Some(g) => g,
            None => {
                pids.push(pid);
                pids.len() - 1
            }
        };
        pid_index.push(g);
    }
    let mut by_thread = vec![0f64; threads.len()];
    for (i, &t) in st.iter().enumerate() {
        by_thread[t as usize] += s.weight.as_ref().map_or(1.0, |w| w[i]);
    }
    // Per process: each comm's total, comms in the order of their first thread.
    let mut sums: Vec<Vec<(&str, f64)>> = vec![Vec::new(); pids.len()];
    for (i, t) in threads.iter().enumerate() {
        let comm = t["comm"].as_str().unwrap_or("");
        let m = &mut sums[pid_index[i]];
        match m.iter_mut().find(|(c, _)| *c == comm) {
            Some(e) => e.1 += by_thread[i],
            None => m.push((comm, by_thread[i])),
        }
    }
    let known = threads.iter().any(|t| id(t, "pid") != id(t, "tid"));
    let names: Vec<String> = sums
        .iter()
        .zip(&pids)
        .map(|(m, pid)| {
            let mut best: Option<(&str, f64)> = None;
            for &(c, w) in m {
                if best.is_none_or(|b| w > b.1) {
                    best = Some((c, w));
                }
            }
            let name = best.map_or("", |b| b.0);
            let name = if name.is_empty() { "?" } else { name };
            if known {
                format!("{name} [pid {pid}]")
            } else {
                name.to_owned()
            }
        })
        .collect();
    let mut labels: Vec<String> = Vec::new();
    let group_of_thread = pid_index
        .iter()
        .map(|&k| match labels.iter().position(|l| *l == names[k]) {
            Some(g) => g,
            None => {
                labels.push(names[k].clone());
                labels.len() - 1
            }
        })
        .collect();
    (labels.len() >= 2).then_some((group_of_thread, labels))
}

/// The call tree the page opens with, cut to the frames wide enough to see
/// (weight folded into the nearest kept ancestor's self, so widths stay
/// exact), with its own small frame table: what the page draws before the
/// columns are read. Merged, or one root per process for a profile of
/// several processes (as the page opens those, see [`process_groups`]).
fn preview_tree(p: &ProfileIn, view: PreviewFor) -> Value {
    let nn = p.nodes.parent.len();
    let parent = &p.nodes.parent;
    let up = |n: usize| usize::try_from(parent[n]).ok();
    let idle: Vec<bool> = if view.hide_idle {
        let idle_frame: Vec<bool> = p
            .frames
            .name
            .iter()
            .map(|n| keisoku_common::is_idle_frame(n))
            .collect();
        let mut out = vec![false; nn];
        for n in 0..nn {
            let inherited = up(n).is_some_and(|q| out[q]);
            out[n] = inherited || idle_frame[p.nodes.frame[n] as usize];
        }
        out
    } else {
        Vec::new()
    };
    let is_idle = |n: usize| view.hide_idle && idle[n];
    let groups = process_groups(p);

    // Per group: self weight by node, over the nodes it touches (the
    // sampled ones and their ancestors), ascending so parents come first.
    struct Group {
        touched: Vec<usize>,
        weight: Vec<f64>,
        sub: Vec<f64>,
    }
    let n_groups = groups.as_ref().map_or(1, |(_, l)| l.len());
    let mut self_w: Vec<Vec<(usize, f64)>> = vec![Vec::new(); n_groups];
    if let Some(s) = &p.samples {
        for (i, &node) in s.node.iter().enumerate() {
            let node = node as usize;
            if !is_idle(node) {
                let g = match (&groups, &s.thread) {
                    (Some((of, _)), Some(t)) => of[t[i] as usize],
                    _ => 0,
                };
                self_w[g].push((node, s.weight.as_ref().map_or(1.0, |w| w[i])));
            }
        }
    } else if let Some(c) = &p.counts {
        for (n, &w) in c.iter().enumerate() {
            if !is_idle(n) && w != 0.0 {
                self_w[0].push((n, w));
            }
        }
    }
    let mut weight = vec![0f64; nn];
    let mut sub = vec![0f64; nn];
    let mut seen = vec![false; nn];
    let mut built: Vec<Group> = Vec::with_capacity(n_groups);
    for samples in &self_w {
        let mut touched = Vec::new();
        for &(node, w) in samples {
            weight[node] += w;
            let mut m = Some(node);
            while let Some(k) = m {
                if seen[k] {
                    break;
                }
                seen[k] = true;
                touched.push(k);
                m = up(k);
            }
        }
        touched.sort_unstable();
        for &n in &touched {
            sub[n] = weight[n];
        }
        for &n in touched.iter().rev() {
            if let Some(q) = up(n) {
                sub[q] += sub[n];
            }
        }
        let g = Group {
            weight: touched.iter().map(|&n| weight[n]).collect(),
            sub: touched.iter().map(|&n| sub[n]).collect(),
            touched,
        };
        for &n in &g.touched {
            weight[n] = 0.0;
            sub[n] = 0.0;
            seen[n] = false;
        }
        built.push(g);
    }
    let root_w: f64 = built
        .iter()
        .flat_map(|g| {
            g.touched
                .iter()
                .zip(&g.sub)
                .filter(|(&n, _)| up(n).is_none())
        })
        .map(|(_, &w)| w)
        .sum();

    // Preview node ids per group entry (0: not kept), widening the cut
    // until the preview is small enough.
    let grouped = groups.is_some();
    let mut share = PREVIEW_SHARE;
    let mut tid: Vec<Vec<u32>>;
    loop {
        let min_w = (share * root_w).max(f64::MIN_POSITIVE);
        let mut kept = 1u32 + if grouped { n_groups as u32 } else { 0 };
        tid = Vec::with_capacity(n_groups);
        for g in &built {
            let mut t = vec![0u32; g.touched.len()];
            for (k, &n) in g.touched.iter().enumerate() {
                let parent_kept = up(n).is_none_or(|q| {
                    // The parent was touched (an ancestor) and comes earlier.
                    let pk = g.touched.partition_point(|&x| x < q);
                    t[pk] > 0
                });
                if g.sub[k] >= min_w && parent_kept {
                    t[k] = kept;
                    kept += 1;
                }
            }
            tid.push(t);
        }
        if (kept as usize) <= PREVIEW_MAX_NODES || share >= 0.5 {
            break;
        }
        share *= 2.0;
    }

    let mut t_parent = vec![-1i64];
    let mut t_frame = vec![-1i64];
    let mut t_self = vec![0f64];
    let mut local_frame = std::collections::HashMap::new();
    let (mut names, mut modules, mut kinds) = (Vec::new(), Vec::new(), Vec::new());
    // Group roots first (ids 1..=groups), each with a frame of its own.
    let mut group_node = vec![0usize; n_groups];
    if let Some((_, labels)) = &groups {
        for (g, label) in labels.iter().enumerate() {
            names.push(label.as_str());
            modules.push("");
            kinds.push(0);
            t_parent.push(0);
            t_frame.push(names.len() as i64 - 1);
            t_self.push(0.0);
            group_node[g] = g + 1;
        }
    }
    for (g, grp) in built.iter().enumerate() {
        let base = group_node[g];
        let pos = |q: usize| grp.touched.partition_point(|&x| x < q);
        for (k, &n) in grp.touched.iter().enumerate() {
            let t = tid[g][k] as usize;
            let parent_t = up(n).map(|q| tid[g][pos(q)] as usize);
            if t == 0 {
                // A dropped subtree whose parent is kept: its weight becomes
                // the parent's self (a root's, the group's or the root's).
                match parent_t {
                    Some(q) if q > 0 => t_self[q] += grp.sub[k],
                    None => t_self[base] += grp.sub[k],
                    _ => {}
                }
                continue;
            }
            let f = p.nodes.frame[n] as usize;
            let lf = *local_frame.entry(f).or_insert_with(|| {
                names.push(p.frames.name[f].as_str());
                modules.push(p.frames.module[f].as_str());
                kinds.push(p.frames.kind[f]);
                names.len() - 1
            });
            t_parent.push(parent_t.map_or(base as i64, |q| q as i64));
            t_frame.push(lf as i64);
            t_self.push(grp.weight[k]);
            debug_assert_eq!(t_parent.len(), t + 1);
        }
    }
    json!({
        "hide_idle": view.hide_idle,
        "min_share": share,
        "split": if grouped { "process" } else { "merge" },
        "frames": { "name": names, "module": modules, "kind": kinds },
        "parent": t_parent,
        "frame": t_frame,
        "self": t_self,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The decoder of web/src/flame/compact.ts, for round trips.
    fn decode(text: &str) -> Vec<u64> {
        let mut out = Vec::new();
        let (mut v, mut mul) = (0u64, 1u64);
        for b in text.bytes() {
            let c = u64::from(b - BASE);
            v += (c & 31) * mul;
            if c >= 32 {
                mul *= 32;
            } else {
                out.push(v);
                v = 0;
                mul = 1;
            }
        }
        out
    }

    #[test]
    fn varints_round_trip_and_stay_in_the_alphabet() {
        let values = [0u64, 1, 31, 32, 1023, 1024, 1 << 40, (1 << 53) - 1];
        let col = varints("x", values.iter().copied());
        assert_eq!(decode(&col.text), values);
        assert!(col.text.bytes().all(|b| (b'0'..=b'o').contains(&b)));
        assert!(!col.text.contains("</") && !col.text.contains("<!"));
    }

    #[test]
    fn times_pick_the_coarsest_exact_unit() {
        let (col, unit) = times_column(&[0.0, 10.1, 10.1, 25.003, 7.5]);
        assert_eq!(unit, Some(1000), "microseconds reproduce every value");
        assert_eq!(col.enc, "delta-zigzag");
        let zig = decode(&col.text);
        let mut sum = 0i64;
        let back: Vec<f64> = zig
            .iter()
            .map(|&z| {
                sum += (z >> 1) as i64 ^ -((z & 1) as i64);
                (sum as f64 * 1000.0) / 1e6
            })
            .collect();
        assert_eq!(back, [0.0, 10.1, 10.1, 25.003, 7.5]);
        assert_eq!(times_column(&[1.0, 2.0]).1, Some(1_000_000));
        let (col, unit) = times_column(&[0.1234567891]);
        assert_eq!((col.enc, unit), ("json", None), "finer than a nanosecond");
    }

    #[test]
    fn number_columns_are_written_as_encoded() {
        // Times whose deltas spell '<' and '>' (the alphabet's 60 and 62):
        // escaping them for the script element broke every perf page.
        let times: Vec<f64> = (0..200).map(|i| f64::from(i * i % 97) * 0.75).collect();
        let mut p: serde_json::Value = serde_json::from_str(&profile(200)).unwrap();
        p["samples"]["time_ms"] = json!(times);
        let c = compact(&p.to_string(), None).expect("compact");
        let (col, _) = times_column(&times);
        assert!(
            col.text.contains('<') || col.text.contains('>'),
            "{}",
            col.text
        );
        assert!(
            c.tail.contains(&col.text),
            "the time column is written verbatim"
        );
        assert!(!c.tail.contains("\\u003"));
    }

    #[test]
    fn fractional_weights_stay_json() {
        assert_eq!(counts_column("c", &[1.0, 2.0]).enc, "varint");
        assert_eq!(counts_column("c", &[1.5]).enc, "json");
        assert_eq!(counts_column("c", &[-1.0]).enc, "json");
    }

    fn profile(nodes: usize) -> String {
        // A chain of ten frames with every further node a leaf under the
        // tenth; one sample on each node.
        let names: Vec<String> = (0..nodes).map(|i| format!("f{i}")).collect();
        let parent: Vec<i64> = (0..nodes as i64).map(|i| (i - 1).min(9)).collect();
        let frame: Vec<usize> = (0..nodes).collect();
        json!({"version":1,"title":"t","unit":"samples","kinds":["kernel","native"],
            "frames":{"name":names,"module":vec!["m"; nodes],"kind":vec![1; nodes]},
            "nodes":{"parent":parent,"frame":frame},
            "threads":[{"pid":1,"tid":1,"comm":"a"}],
            "samples":{"node":frame,"weight":null,"time_ms":vec![0.5; nodes],"thread":vec![0; nodes]},
            "counts":null,"start_unix_ns":null,"duration_ms":0.5})
        .to_string()
    }

    #[test]
    fn malformed_profiles_are_left_to_the_ui() {
        assert!(compact("{", None).is_none());
        let bad = profile(3).replace("\"parent\":[-1,0,1]", "\"parent\":[-1,2,1]");
        assert_ne!(bad, profile(3));
        assert!(compact(&bad, None).is_none(), "a parent after its child");
        assert!(compact(&profile(3), None).is_some());
    }

    #[test]
    fn preview_keeps_wide_frames_and_exact_total() {
        let p: ProfileIn = serde_json::from_str(&profile(60_000)).unwrap();
        let v = preview_tree(&p, PreviewFor { hide_idle: false });
        let selfs: Vec<f64> = serde_json::from_value(v["self"].clone()).unwrap();
        assert_eq!(selfs.iter().sum::<f64>(), 60_000.0, "no weight lost");
        // The chain is wide; each leaf (one sample) is below the cut and
        // folds into the tenth frame's self.
        assert_eq!(selfs.len(), 11, "root and the chain");
        assert_eq!(selfs[10], 1.0 + (60_000.0 - 10.0));
        assert_eq!(v["parent"][2], 1);
        assert_eq!(v["frames"]["name"][0], "f0");
    }

    #[test]
    fn preview_of_two_processes_has_one_root_each_named_by_its_commonest_comm() {
        // Threads 0 and 1 are process 7 ("sh" for 1 sample, then "node"),
        // thread 2 is process 9; samples alternate between the processes.
        let mut v: Value = serde_json::from_str(&profile(60_000)).unwrap();
        v["threads"] = json!([
            {"pid":7,"tid":7,"comm":"sh"},
            {"pid":7,"tid":8,"comm":"node"},
            {"pid":9,"tid":9,"comm":"nginx"}
        ]);
        let thread: Vec<u32> = (0..60_000u32)
            .map(|i| {
                if i == 0 {
                    0
                } else if i % 2 == 0 {
                    1
                } else {
                    2
                }
            })
            .collect();
        v["samples"]["thread"] = json!(thread);
        let p: ProfileIn = serde_json::from_value(v).unwrap();
        let t = preview_tree(&p, PreviewFor { hide_idle: false });
        assert_eq!(t["split"], "process");
        let names: Vec<String> = serde_json::from_value(t["frames"]["name"].clone()).unwrap();
        assert_eq!(names[0], "node [pid 7]");
        assert_eq!(names[1], "nginx [pid 9]");
        let parent: Vec<i64> = serde_json::from_value(t["parent"].clone()).unwrap();
        let selfs: Vec<f64> = serde_json::from_value(t["self"].clone()).unwrap();
        assert_eq!(&parent[..3], &[-1, 0, 0], "the groups hang from the root");
        assert_eq!(selfs.iter().sum::<f64>(), 60_000.0, "no weight lost");
        // Each group has its own chain under it: f0 twice, once per process.
        let f0 = names.iter().position(|n| n == "f0").unwrap() as i64;
        let frame: Vec<i64> = serde_json::from_value(t["frame"].clone()).unwrap();
        let roots: Vec<i64> = (0..frame.len())
            .filter(|&i| frame[i] == f0)
            .map(|i| parent[i])
            .collect();
        assert_eq!(roots, vec![1, 2]);
        // Without pids (each thread's id as its pid): grouped by name.
        let mut v: Value = serde_json::from_str(&profile(60_000)).unwrap();
        v["threads"] = json!([
            {"pid":7,"tid":7,"comm":"node"},
            {"pid":8,"tid":8,"comm":"node"},
            {"pid":9,"tid":9,"comm":"nginx"}
        ]);
        v["samples"]["thread"] = json!((0..60_000u32).map(|i| i % 3).collect::<Vec<_>>());
        let t = preview_tree(
            &serde_json::from_value(v.clone()).unwrap(),
            PreviewFor { hide_idle: false },
        );
        let names: Vec<String> = serde_json::from_value(t["frames"]["name"].clone()).unwrap();
        assert_eq!(&names[..2], &["node", "nginx"]);
        // All one name: merged.
        v["threads"][2]["comm"] = json!("node");
        let t = preview_tree(
            &serde_json::from_value(v).unwrap(),
            PreviewFor { hide_idle: false },
        );
        assert_eq!(t["split"], "merge");
        // One process: merged, as before.
        let one = preview_tree(
            &serde_json::from_str(&profile(60_000)).unwrap(),
            PreviewFor { hide_idle: false },
        );
        assert_eq!(one["split"], "merge");
    }

    #[test]
    fn hostile_frame_names_stay_inside_their_column() {
        let name = "<!--x </script><script>alert(1)</script>\u{2028}&";
        let p = profile(3).replace("\"f1\"", &serde_json::to_string(name).unwrap());
        let c = compact(&p, None).unwrap();
        let open = "id=\"keisoku-col-frames\" data-enc=\"json\">";
        let start = c.tail.find(open).unwrap() + open.len();
        let end = start + c.tail[start..].find("</script>").unwrap();
        let text = &c.tail[start..end];
        assert!(!text.contains(['<', '>', '\u{2028}']), "{text}");
        let frames: Value = serde_json::from_str(text).unwrap();
        assert_eq!(frames["name"][1], name);
        assert_eq!(
            c.tail.matches("<script").count(),
            c.tail.matches("</script>").count()
        );
    }

    #[test]
    fn compact_page_data_names_its_columns() {
        let c = compact(&profile(60_001), Some(PreviewFor { hide_idle: true })).unwrap();
        let h: Value = serde_json::from_str(&c.header).unwrap();
        assert_eq!(h["encoding"], "compact-1");
        assert_eq!(h["sample_count"], 60_001);
        assert_eq!(h["time_unit_ns"], 100_000);
        assert!(h["preview"]["parent"].is_array());
        for id in [
            "frames",
            "frame-module",
            "frame-kind",
            "node-parent",
            "node-frame",
            "sample-node",
            "sample-time",
            "sample-thread",
        ] {
            assert!(c.tail.contains(&format!("id=\"keisoku-col-{id}\"")), "{id}");
        }
        assert!(!c.tail.contains("keisoku-col-counts"));
    }
}
