//! Stored runs as inputs: `keisoku flame RUN`, `scope RUN` and `diff A B`
//! accept a run (id, id prefix, name or `last`) wherever they accept a
//! profile file, so a recorded run is explained with the same commands as
//! the files users already have.

use crate::exit::bad_input;
use keisoku_stacks::model::NO_PARENT;
use keisoku_stacks::{FrameKind, Profile, Unit};
use std::path::Path;

/// The profile of the stored run `spec`, or `None` when `spec` names a file
/// (or stdin), which the caller then reads. A name that is neither a file
/// nor a run in the store (`KEISOKU_STORE` or `./.keisoku/runs.db`), or a
/// run without a profile, is bad input.
pub fn profile(spec: &str) -> anyhow::Result<Option<Profile>> {
    if spec == "-" || Path::new(spec).exists() {
        return Ok(None);
    }
    let path = keisoku_store::store_path(None);
    let no_such = || {
        bad_input(format!(
            "{spec}: no such file, nor a run in {} (see `keisoku runs`)",
            path.display()
        ))
    };
    if !path.exists() {
        return Err(no_such());
    }
    let store = keisoku_store::Store::open_existing(&path)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let run = store.resolve(spec).map_err(|_| no_such())?;
    let stored = store
        .profile(&run)
        .map_err(|e| anyhow::anyhow!("run {run} in {}: {e}", path.display()))?
        .ok_or_else(|| {
            bad_input(format!(
                "run {run} has no profile (was it recorded with --profile none, or did perf fail? see `keisoku show {run}`)"
            ))
        })?;
    to_stacks(&stored, &format!("run {run}"))
        .map(Some)
        .map_err(|why| anyhow::anyhow!("run {run}: stored profile is damaged: {why}"))
}

/// Rebuilds a parsed profile, per-sample times included, from its stored form.
fn to_stacks(p: &keisoku_store::Profile, title: &str) -> Result<Profile, String> {
    let unit = match p.unit.as_str() {
        "nanoseconds" => Unit::Nanoseconds,
        "bytes" => Unit::Bytes,
        _ => Unit::Samples,
    };
    let mut out = Profile::new(title, unit);
    let f = &p.frames;
    if f.name.len() != f.module.len() || f.name.len() != f.kind.len() {
        return Err("frame columns differ in length".into());
    }
    let frames: Vec<u32> = (0..f.name.len())
        .map(|i| {
            let kind = FrameKind::from_name(p.kinds.get(f.kind[i] as usize).map(String::as_str));
            out.frame_parts(&f.name[i], &f.module[i], kind)
        })
        .collect();
    if p.nodes.parent.len() != p.nodes.frame.len() {
        return Err("node columns differ in length".into());
    }
    // Parents precede children in the stored tree, so one pass maps ids.
    let mut ids: Vec<u32> = Vec::with_capacity(p.nodes.parent.len());
    for (parent, frame) in p.nodes.parent.iter().zip(&p.nodes.frame) {
        let frame = *frames
            .get(*frame as usize)
            .ok_or_else(|| format!("node refers to missing frame {frame}"))?;
        let parent = if *parent < 0 {
            NO_PARENT
        } else {
            *ids.get(*parent as usize)
                .ok_or_else(|| format!("node refers to a later parent {parent}"))?
        };
        ids.push(out.child(parent, frame));
    }
    let node = |n: u32| -> Result<u32, String> {
        ids.get(n as usize)
            .copied()
            .ok_or_else(|| format!("sample refers to missing node {n}"))
    };
    let threads: Vec<u32> = p
        .threads
        .iter()
        .map(|t| {
            out.thread(keisoku_stacks::model::Thread {
                pid: u32::try_from(t.pid).unwrap_or(0),
                tid: u32::try_from(t.tid).unwrap_or(0),
                comm: t.comm.clone(),
            })
        })
        .collect();
    if let Some(s) = &p.samples {
        out.samples.node = s.node.iter().map(|&n| node(n)).collect::<Result<_, _>>()?;
        out.samples.weight = s
            .weight
            .as_ref()
            .map(|w| w.iter().map(|&v| v.max(0.0).round() as u64).collect());
        out.samples.time_ns = s
            .time_ms
            .as_ref()
            .map(|t| t.iter().map(|&ms| (ms.max(0.0) * 1e6) as u64).collect());
        out.samples.thread = match &s.thread {
            Some(t) => Some(
                t.iter()
                    .map(|&i| {
                        threads
                            .get(i as usize)
                            .copied()
                            .ok_or("sample refers to a missing thread")
                    })
                    .collect::<Result<_, _>>()?,
            ),
            None => None,
        };
    } else if let Some(c) = &p.counts {
        let mut counts = vec![0u64; out.node_count()];
        for (n, w) in c.iter().enumerate() {
            let id = node(n as u32)? as usize;
            counts[id] += w.max(0.0).round() as u64;
        }
        out.counts = Some(counts);
    }
    out.start_unix_ns = p.start_unix_ns.and_then(|v| u64::try_from(v).ok());
    Ok(out)
}
