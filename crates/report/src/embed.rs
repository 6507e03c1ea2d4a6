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

/// The merged call tree cut to the frames wide enough to see (weight folded
/// into the nearest kept ancestor's self, so widths stay exact), with its
/// own small frame table: what the page draws before the columns are read.
fn preview_tree(p: &ProfileIn, view: PreviewFor) -> Value {
    let nn = p.nodes.parent.len();
    let parent = &p.nodes.parent;
    let mut weight = vec![0f64; nn];
    let idle: Vec<bool> = if view.hide_idle {
        let idle_frame: Vec<bool> = p
            .frames
            .name
            .iter()
            .map(|n| keisoku_common::is_idle_frame(n))
            .collect();
        let mut out = vec![false; nn];
        for n in 0..nn {
            let inherited = usize::try_from(parent[n]).is_ok_and(|q| out[q]);
            out[n] = inherited || idle_frame[p.nodes.frame[n] as usize];
        }
        out
    } else {
        Vec::new()
    };
    let is_idle = |n: usize| view.hide_idle && idle[n];
    if let Some(s) = &p.samples {
        for (i, &node) in s.node.iter().enumerate() {
            let node = node as usize;
            if !is_idle(node) {
                weight[node] += s.weight.as_ref().map_or(1.0, |w| w[i]);
            }
        }
    } else if let Some(c) = &p.counts {
        for (n, &w) in c.iter().enumerate() {
            if !is_idle(n) {
                weight[n] = w;
            }
        }
    }
    let mut sub = weight.clone();
    for n in (0..nn).rev() {
        if let Ok(q) = usize::try_from(parent[n]) {
            sub[q] += sub[n];
        }
    }
    let root_w: f64 = (0..nn).filter(|&n| parent[n] < 0).map(|n| sub[n]).sum();

    let mut share = PREVIEW_SHARE;
    let mut tid = vec![0u32; nn];
    loop {
        let min_w = (share * root_w).max(f64::MIN_POSITIVE);
        let mut kept = 1u32;
        for n in 0..nn {
            let parent_kept = usize::try_from(parent[n]).map_or(true, |q| tid[q] > 0);
            tid[n] = if sub[n] >= min_w && parent_kept {
                kept += 1;
                kept - 1
            } else {
                0
            };
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
    for n in 0..nn {
        let up = usize::try_from(parent[n]).ok();
        let t = tid[n] as usize;
        if t == 0 {
            // A dropped subtree whose parent is kept: its weight becomes
            // the parent's self.
            match up {
                Some(q) if tid[q] > 0 => t_self[tid[q] as usize] += sub[n],
                None => t_self[0] += sub[n],
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
        t_parent.push(up.map_or(0, |q| i64::from(tid[q])));
        t_frame.push(lf as i64);
        t_self.push(weight[n]);
        debug_assert_eq!(t_parent.len(), t + 1);
    }
    json!({
        "hide_idle": view.hide_idle,
        "min_share": share,
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
