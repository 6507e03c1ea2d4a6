//! Selecting samples (by process, thread, time) and reshaping stacks
//! (inverting), producing a new profile whose tree holds only what is used.

use crate::model::{Profile, NO_PARENT};
use rustc_hash::FxHashMap;

/// Which samples to keep.
#[derive(Clone, Debug, Default)]
pub struct Selection {
    /// Keep samples of these process ids.
    pub pids: Vec<u32>,
    /// Keep samples of these thread ids.
    pub tids: Vec<u32>,
    /// Keep samples whose process name matches.
    pub comm: Option<regex::Regex>,
    /// Keep samples at or after this offset (ns from the first sample).
    pub from_ns: Option<u64>,
    /// Keep samples before this offset.
    pub to_ns: Option<u64>,
    /// Stacks leaf first (callers of each leaf function).
    pub invert: bool,
}

impl Selection {
    /// A selection from command-line values: pids, tids, a regex on the
    /// process name, and a time range in seconds from the first sample.
    /// The error says which flag is wrong (`--from`, `--to`, `--comm`).
    pub fn from_flags(
        pid: &[u32],
        tid: &[u32],
        comm: Option<&str>,
        from: Option<f64>,
        to: Option<f64>,
        invert: bool,
    ) -> Result<Selection, String> {
        let ns = |v: Option<f64>, flag: &str| -> Result<Option<u64>, String> {
            match v {
                Some(s) if !(s.is_finite() && s >= 0.0) => {
                    Err(format!("{flag} {s}: expected seconds >= 0"))
                }
                Some(s) => Ok(Some((s * 1e9) as u64)),
                None => Ok(None),
            }
        };
        let from_ns = ns(from, "--from")?;
        let to_ns = ns(to, "--to")?;
        if let (Some(f), Some(t)) = (from_ns, to_ns) {
            if t <= f {
                return Err("--to must be after --from".into());
            }
        }
        let comm = comm
            .map(|c| regex::Regex::new(c).map_err(|e| format!("--comm {c:?}: {e}")))
            .transpose()?;
        Ok(Selection {
            pids: pid.to_vec(),
            tids: tid.to_vec(),
            comm,
            from_ns,
            to_ns,
            invert,
        })
    }

    /// Whether any thread or time filter is set.
    pub fn filters(&self) -> bool {
        !self.pids.is_empty()
            || !self.tids.is_empty()
            || self.comm.is_some()
            || self.from_ns.is_some()
            || self.to_ns.is_some()
    }
}

/// Why a selection cannot apply.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    /// A thread filter on a profile without thread information.
    #[error("{0}: the profile has no process/thread information to filter on")]
    NoThreads(String),
    /// A time filter on a profile without sample times.
    #[error(
        "{0}: the profile has no sample times (--from/--to need perf script or .cpuprofile input)"
    )]
    NoTimes(String),
}

/// Applies `sel` to `p`.
pub fn select(p: &Profile, sel: &Selection) -> Result<Profile, SelectError> {
    let thread_filter = !sel.pids.is_empty() || !sel.tids.is_empty() || sel.comm.is_some();
    let time_filter = sel.from_ns.is_some() || sel.to_ns.is_some();
    if thread_filter && (p.counts.is_some() || p.samples.thread.is_none()) {
        return Err(SelectError::NoThreads(p.title.clone()));
    }
    if time_filter && !p.has_times() {
        return Err(SelectError::NoTimes(p.title.clone()));
    }
    if !thread_filter && !time_filter && !sel.invert {
        return Ok(p.clone());
    }
    let keep_thread: Vec<bool> = p
        .threads
        .iter()
        .map(|t| {
            (sel.pids.is_empty() || sel.pids.contains(&t.pid))
                && (sel.tids.is_empty() || sel.tids.contains(&t.tid))
                && sel.comm.as_ref().is_none_or(|re| re.is_match(&t.comm))
        })
        .collect();
    let mut out = Profile::new(p.title.clone(), p.unit);
    out.start_unix_ns = p.start_unix_ns;
    out.time_origin_ns = p.time_origin_ns;
    out.events = p.events.clone();
    out.damage = p.damage.clone();
    let mut frame_map: FxHashMap<u32, u32> = FxHashMap::default();
    let mut node_map: FxHashMap<u32, u32> = FxHashMap::default();
    let mut thread_map: FxHashMap<u32, u32> = FxHashMap::default();
    let mut map_node = |out: &mut Profile, node: u32| -> u32 {
        if let Some(&n) = node_map.get(&node) {
            return n;
        }
        let mut frames = p.stack_frames(node);
        if sel.invert {
            frames.reverse();
        }
        let mut cur = NO_PARENT;
        for f in frames {
            let nf = *frame_map
                .entry(f)
                .or_insert_with(|| out.frame(p.frames[f as usize].clone()));
            cur = out.child(cur, nf);
        }
        node_map.insert(node, cur);
        cur
    };
    if let Some(counts) = &p.counts {
        let mut c: Vec<u64> = Vec::new();
        for (node, &w) in counts.iter().enumerate() {
            if w == 0 {
                continue;
            }
            let n = map_node(&mut out, node as u32);
            c.resize(out.node_count(), 0);
            c[n as usize] = c[n as usize].saturating_add(w);
        }
        c.resize(out.node_count(), 0);
        out.counts = Some(c);
        return Ok(out);
    }
    let s = &p.samples;
    let mut times = Vec::new();
    let mut threads = Vec::new();
    let mut weights = Vec::new();
    let mut cpus = Vec::new();
    for i in 0..s.len() {
        if let Some(t) = &s.thread {
            if !keep_thread[t[i] as usize] {
                continue;
            }
        }
        if let Some(t) = &s.time_ns {
            if sel.from_ns.is_some_and(|f| t[i] < f) || sel.to_ns.is_some_and(|e| t[i] >= e) {
                continue;
            }
            times.push(t[i]);
        }
        if let Some(t) = &s.thread {
            let th = *thread_map
                .entry(t[i])
                .or_insert_with(|| out.thread(p.threads[t[i] as usize].clone()));
            threads.push(th);
        }
        if let Some(w) = &s.weight {
            weights.push(w[i]);
        }
        if let Some(c) = &s.cpu {
            cpus.push(c[i]);
        }
        let n = map_node(&mut out, s.node[i]);
        out.samples.node.push(n);
    }
    // Times stay relative to the original first sample, so a range selected
    // with --from keeps the clock of the whole profile.
    out.samples.time_ns = s.time_ns.as_ref().map(|_| times);
    out.samples.thread = s.thread.as_ref().map(|_| threads);
    out.samples.weight = s.weight.as_ref().map(|_| weights);
    out.samples.cpu = s.cpu.as_ref().map(|_| cpus);
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_make_a_selection_or_name_the_wrong_flag() {
        let s = Selection::from_flags(&[1], &[], Some("^nginx"), Some(1.5), Some(2.0), true)
            .expect("valid flags");
        assert_eq!(
            (s.from_ns, s.to_ns, s.invert),
            (Some(1_500_000_000), Some(2_000_000_000), true)
        );
        let err =
            |from, to, comm| Selection::from_flags(&[], &[], comm, from, to, false).unwrap_err();
        assert!(err(Some(-1.0), None, None).starts_with("--from"));
        assert!(err(Some(2.0), Some(1.0), None).starts_with("--to"));
        assert!(err(None, None, Some("(")).starts_with("--comm"));
    }
}
