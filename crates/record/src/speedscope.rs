//! py-spy's speedscope output turned into a stored profile with sample
//! times on the run's clock (crates/stacks reads no speedscope yet).

use keisoku_stacks::FrameKind;
use keisoku_store::{Frames, Nodes, Profile, Samples, ThreadInfo};
use serde::Deserialize;
use std::collections::HashMap;

#[derive(Deserialize)]
struct File {
    shared: Shared,
    profiles: Vec<Sampled>,
}

#[derive(Deserialize)]
struct Shared {
    frames: Vec<Frame>,
}

#[derive(Deserialize)]
struct Frame {
    name: String,
    #[serde(default)]
    file: Option<String>,
}

#[derive(Deserialize)]
struct Sampled {
    #[serde(default)]
    name: String,
    #[serde(default)]
    unit: String,
    #[serde(default, rename = "startValue")]
    start_value: f64,
    samples: Vec<Vec<usize>>,
    weights: Vec<f64>,
}

/// Converts speedscope JSON (root-first stacks, per-thread sampled
/// profiles) into a profile whose sample times count from the run's
/// origin; `started_run_ms` is when py-spy attached.
pub fn to_profile(text: &[u8], started_run_ms: f64, pid: u32) -> Result<Profile, String> {
    let f: File =
        serde_json::from_slice(text).map_err(|e| format!("py-spy speedscope output: {e}"))?;
    let mut frames = Frames::default();
    let mut frame_ids: HashMap<usize, u32> = HashMap::new();
    let mut nodes = Nodes::default();
    let mut node_ids: HashMap<(i64, u32), u32> = HashMap::new();
    let mut threads = Vec::new();
    let mut rows: Vec<(f64, u32, u32)> = Vec::new();
    for (ti, prof) in f.profiles.iter().enumerate() {
        // Seconds by default; milliseconds when the file says so.
        let scale = match prof.unit.as_str() {
            "milliseconds" => 1.0,
            "microseconds" => 1e-3,
            "nanoseconds" => 1e-6,
            _ => 1000.0,
        };
        threads.push(ThreadInfo {
            pid: i64::from(pid),
            tid: ti as i64,
            comm: prof.name.clone(),
        });
        let mut t = prof.start_value * scale;
        for (i, stack) in prof.samples.iter().enumerate() {
            let mut parent: i64 = -1;
            for &fi in stack {
                let Some(fr) = f.shared.frames.get(fi) else {
                    return Err(format!("py-spy output: frame index {fi} out of range"));
                };
                let fid = *frame_ids.entry(fi).or_insert_with(|| {
                    frames.name.push(fr.name.clone());
                    frames.module.push(fr.file.clone().unwrap_or_default());
                    frames.kind.push(FrameKind::Interpreted as u32);
                    frames.name.len() as u32 - 1
                });
                let nid = *node_ids.entry((parent, fid)).or_insert_with(|| {
                    nodes.parent.push(parent);
                    nodes.frame.push(fid);
                    nodes.frame.len() as u32 - 1
                });
                parent = i64::from(nid);
            }
            if parent >= 0 {
                rows.push((started_run_ms + t, parent as u32, ti as u32));
            }
            t += prof.weights.get(i).copied().unwrap_or(0.0) * scale;
        }
    }
    rows.sort_by(|a, b| a.0.total_cmp(&b.0));
    let duration_ms = match (rows.first(), rows.last()) {
        (Some(a), Some(b)) => Some(b.0 - a.0),
        _ => None,
    };
    Ok(Profile {
        version: 1,
        title: "py-spy".into(),
        unit: "samples".into(),
        kinds: FrameKind::NAMES.map(String::from).to_vec(),
        frames,
        nodes,
        threads,
        samples: Some(Samples {
            node: rows.iter().map(|r| r.1).collect(),
            weight: None,
            time_ms: Some(rows.iter().map(|r| r.0).collect()),
            thread: Some(rows.iter().map(|r| r.2).collect()),
        }),
        counts: None,
        start_unix_ns: None,
        duration_ms,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stacks_times_and_threads() {
        let text = br#"{"shared":{"frames":[{"name":"main","file":"a.py","line":1},{"name":"handler","file":"a.py","line":9}]},
            "profiles":[{"type":"sampled","name":"MainThread","unit":"seconds","startValue":0,"endValue":0.03,
                         "samples":[[0,1],[0,1],[0]],"weights":[0.01,0.01,0.01]}]}"#;
        let p = to_profile(text, 500.0, 42).unwrap();
        assert_eq!(p.frames.name, vec!["main", "handler"]);
        assert_eq!(p.nodes.parent, vec![-1, 0]);
        let s = p.samples.unwrap();
        assert_eq!(s.node, vec![1, 1, 0]);
        assert_eq!(s.time_ms.unwrap(), vec![500.0, 510.0, 520.0]);
        assert_eq!(p.threads[0].pid, 42);
        assert!(to_profile(
            br#"{"shared":{"frames":[]},"profiles":[{"samples":[[3]],"weights":[1]}]}"#,
            0.0,
            1
        )
        .is_err());
        assert!(to_profile(b"not json", 0.0, 1).is_err());
    }
}
