//! A run's profile in the store: the stacks crate's model, persisted as
//! rows (frames, nodes) and compact sample blobs (docs/store.md).
//!
//! The schema predates this model and is kept as it is: kinds and times
//! are stored as profile JSON writes them (kind indexes into a name list,
//! times in whole microseconds, weights as f64), so this module converts
//! between nanosecond integers and those columns, and nothing else.
//! `duration_ms` is stored for SQL users and not read back: the model
//! derives it from the sample times.

use crate::codec;
use crate::error::{Result, StoreError};
use crate::Store;
use keisoku_stacks::model::{StoredNodeError, NO_PARENT};
use keisoku_stacks::{FrameKind, Profile, Thread};
use rusqlite::{params, OptionalExtension};
use serde::{Deserialize, Serialize};

/// Profile samples per stored chunk; bounds the memory of one read.
const SAMPLE_CHUNK: usize = 1 << 16;

/// One entry of the `threads` column (JSON `[{pid,tid,comm}]`).
#[derive(Serialize, Deserialize)]
struct StoredThread {
    pid: i64,
    tid: i64,
    #[serde(default)]
    comm: String,
}

/// Weights and counts are stored as f64 (the schema's value blob); they
/// are whole numbers the model wrote, so rounding only guards damage.
fn whole(v: f64) -> u64 {
    // `as` saturates, and NaN becomes 0.
    v.max(0.0).round() as u64
}

fn corrupt(why: String) -> StoreError {
    StoreError::Corrupt(format!("stored profile: {why}"))
}

/// Which of a run's profiles: what a sample means.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ProfileKind {
    /// On-CPU samples (perf, py-spy without `--idle`): where CPU time goes.
    #[default]
    Cpu,
    /// Wall-clock samples (py-spy `--idle`): every thread at every tick,
    /// running or waiting, so a blocking call shows as the time it holds
    /// a worker.
    Wall,
}

impl ProfileKind {
    /// Every kind, in the order pages show them.
    pub const ALL: [ProfileKind; 2] = [ProfileKind::Cpu, ProfileKind::Wall];

    /// The kind's name (`cpu`, `wall`), as flags and pages spell it.
    pub fn name(self) -> &'static str {
        match self {
            ProfileKind::Cpu => "cpu",
            ProfileKind::Wall => "wall",
        }
    }

    /// The kind a name spells, if any.
    pub fn from_name(name: &str) -> Option<ProfileKind> {
        ProfileKind::ALL.into_iter().find(|k| k.name() == name)
    }

    /// The tables holding this kind: the CPU profile keeps the original
    /// names, so older stores read as they did.
    fn table(self, base: &str) -> String {
        match self {
            ProfileKind::Cpu => base.to_string(),
            ProfileKind::Wall => format!("wall_{base}"),
        }
    }
}

impl Store {
    /// Stores (or replaces) the run's CPU profile ([`Store::put_profile_of`]).
    pub fn put_profile(&self, run: &str, p: &Profile) -> Result<()> {
        self.put_profile_of(run, ProfileKind::Cpu, p)
    }

    /// The run's CPU profile, if one was stored ([`Store::profile_of`]).
    pub fn profile(&self, run: &str) -> Result<Option<Profile>> {
        self.profile_of(run, ProfileKind::Cpu)
    }

    /// Stores (or replaces) the run's profile of one kind: frames and nodes as rows,
    /// samples as compact blobs in chunks. Sample times are kept to the
    /// microsecond, as profile JSON writes them; CPUs, events and parse
    /// damage are not stored (profile JSON has none of them).
    pub fn put_profile_of(&self, run: &str, kind: ProfileKind, p: &Profile) -> Result<()> {
        let t = |base: &str| kind.table(base);
        let tx = self.write_transaction()?;
        for table in [
            "profiles",
            "profile_frames",
            "profile_nodes",
            "profile_samples",
        ] {
            tx.execute(
                &format!("DELETE FROM {} WHERE run_id = ?1", t(table)),
                [run],
            )?;
        }
        // The counts form wins, as in profile JSON.
        let samples = p.counts.is_none().then_some(&p.samples);
        let threads: Vec<StoredThread> = p
            .threads
            .iter()
            .map(|t| StoredThread {
                pid: i64::from(t.pid),
                tid: i64::from(t.tid),
                comm: t.comm.clone(),
            })
            .collect();
        // To the microsecond, the value profile JSON gives it.
        let duration_ms = samples
            .and_then(|_| p.duration_ns())
            .map(|ns| (ns / 1000) as f64 / 1000.0);
        let counts = p
            .counts
            .as_ref()
            .map(|c| codec::encode_values(&c.iter().map(|&v| v as f64).collect::<Vec<_>>()));
        tx.execute(
            &format!("INSERT INTO {} (run_id, title, unit, kinds, threads, start_unix_ns, duration_ms, counts, sample_count, has_time, has_thread, has_weight)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)", t("profiles")),
            params![
                run,
                p.title,
                p.unit.name(),
                serde_json::to_string(&FrameKind::NAMES)?,
                serde_json::to_string(&threads)?,
                p.start_unix_ns.and_then(|v| i64::try_from(v).ok()),
                duration_ms,
                counts,
                samples.map_or(0, |s| s.len() as i64),
                samples.is_some_and(|s| s.time_ns.is_some()),
                samples.is_some_and(|s| s.thread.is_some()),
                samples.is_some_and(|s| s.weight.is_some()),
            ],
        )?;
        {
            let mut ins = tx.prepare_cached(&format!(
                "INSERT INTO {} (run_id, id, name, module, kind) VALUES (?1, ?2, ?3, ?4, ?5)",
                t("profile_frames")
            ))?;
            for (i, f) in p.frames.iter().enumerate() {
                ins.execute(params![run, i as i64, f.name, f.module, f.kind as u32])?;
            }
            let mut ins = tx.prepare_cached(&format!(
                "INSERT INTO {} (run_id, id, parent, frame) VALUES (?1, ?2, ?3, ?4)",
                t("profile_nodes")
            ))?;
            for (i, (&parent, &frame)) in p.parent.iter().zip(&p.node_frame).enumerate() {
                let parent = if parent == NO_PARENT {
                    -1
                } else {
                    i64::from(parent)
                };
                ins.execute(params![run, i as i64, parent, frame])?;
            }
        }
        if let Some(s) = samples {
            let mut ins = tx.prepare_cached(&format!(
                "INSERT INTO {} (run_id, seq, n, node, time, thread, weight) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
                t("profile_samples")
            ))?;
            for (seq, start) in (0..s.len()).step_by(SAMPLE_CHUNK).enumerate() {
                let end = (start + SAMPLE_CHUNK).min(s.len());
                // Columns have the samples' length (the model's rule); a
                // shorter one stores what it has rather than panic.
                let part = |v: &[u32]| v.get(start..end.min(v.len())).unwrap_or(&[]).to_vec();
                let times = s
                    .time_ns
                    .as_ref()
                    .map(|t| codec::encode_times_ns(t.get(start..end.min(t.len())).unwrap_or(&[])));
                let threads = s.thread.as_ref().map(|t| codec::encode_indexes(&part(t)));
                let weights = s.weight.as_ref().map(|w| {
                    let w = w.get(start..end.min(w.len())).unwrap_or(&[]);
                    codec::encode_values(&w.iter().map(|&v| v as f64).collect::<Vec<_>>())
                });
                ins.execute(params![
                    run,
                    seq as i64,
                    (end - start) as i64,
                    codec::encode_indexes(&s.node[start..end]),
                    times,
                    threads,
                    weights
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// The run's profile of one kind, if one was stored: sample times
    /// count from the run's t = 0 and `start_unix_ns` is the run's start.
    pub fn profile_of(&self, run: &str, kind: ProfileKind) -> Result<Option<Profile>> {
        let t = |base: &str| kind.table(base);
        let head = self
            .conn
            .query_row(
                &format!("SELECT title, unit, kinds, threads, start_unix_ns, counts, sample_count, has_time, has_thread, has_weight
                 FROM {} WHERE run_id = ?1", t("profiles")),
                [run],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, Option<i64>>(4)?,
                        r.get::<_, Option<Vec<u8>>>(5)?,
                        r.get::<_, i64>(6)?,
                        r.get::<_, bool>(7)?,
                        r.get::<_, bool>(8)?,
                        r.get::<_, bool>(9)?,
                    ))
                },
            )
            .optional()?;
        let Some((
            title,
            unit,
            kinds,
            threads,
            start_unix_ns,
            counts,
            n,
            has_time,
            has_thread,
            has_weight,
        )) = head
        else {
            return Ok(None);
        };
        let unit = keisoku_stacks::json::unit_from_name(&unit)
            .ok_or_else(|| corrupt(format!("unknown unit {unit:?}")))?;
        let mut p = Profile::new(title, unit);
        let kinds: Vec<String> = serde_json::from_str(&kinds)?;
        let mut frames = Vec::new();
        let mut stmt = self.conn.prepare(&format!(
            "SELECT name, module, kind FROM {} WHERE run_id = ?1 ORDER BY id",
            t("profile_frames")
        ))?;
        for f in stmt.query_map([run], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
            ))
        })? {
            let (name, module, kind) = f?;
            let kind = usize::try_from(kind)
                .ok()
                .and_then(|k| kinds.get(k))
                .ok_or_else(|| corrupt(format!("frame kind {kind} is not in {kinds:?}")))?;
            frames.push(p.frame_parts(&name, &module, FrameKind::from_name(Some(kind))));
        }
        // Rows are interned again; for a profile this crate stored the ids
        // come out the same, and parents precede children (the stored rule),
        // so one pass maps them.
        let mut nodes: Vec<u32> = Vec::new();
        let mut stmt = self.conn.prepare(&format!(
            "SELECT parent, frame FROM {} WHERE run_id = ?1 ORDER BY id",
            t("profile_nodes")
        ))?;
        for row in stmt.query_map([run], |r| Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?)))? {
            let (parent, frame) = row?;
            // A negative frame id is no frame either.
            let frame_id = u64::try_from(frame).unwrap_or(u64::MAX);
            p.rebuild_node(parent, frame_id, &frames, &mut nodes)
                .map_err(|e| match e {
                    StoredNodeError::Frame => {
                        corrupt(format!("node refers to missing frame {frame}"))
                    }
                    StoredNodeError::Parent => {
                        corrupt(format!("node refers to a later parent {parent}"))
                    }
                })?;
        }
        let stored: Vec<StoredThread> = serde_json::from_str(&threads)?;
        let threads: Vec<u32> = stored
            .into_iter()
            .map(|t| p.thread(Thread::from_stored(t.pid, t.tid, t.comm)))
            .collect();
        let map = |ids: &[u32], v: u32, what: &str| -> Result<u32> {
            ids.get(v as usize)
                .copied()
                .ok_or_else(|| corrupt(format!("sample refers to missing {what} {v}")))
        };
        if let Some(blob) = counts.filter(|_| n == 0) {
            let mut c = Vec::new();
            codec::decode_values(&blob, blob.len() / 8, &mut c)?;
            let mut out = vec![0u64; p.node_count()];
            for (i, w) in c.into_iter().enumerate() {
                let id = map(&nodes, i as u32, "node")? as usize;
                out[id] = out[id].saturating_add(whole(w));
            }
            p.counts = Some(out);
        } else {
            let cap = usize::try_from(n).unwrap_or(0);
            let s = &mut p.samples;
            s.node.reserve(cap);
            s.weight = has_weight.then(|| Vec::with_capacity(cap));
            s.time_ns = has_time.then(|| Vec::with_capacity(cap));
            s.thread = has_thread.then(|| Vec::with_capacity(cap));
            let mut stmt = self.conn.prepare(&format!(
                "SELECT n, node, time, thread, weight FROM {} WHERE run_id = ?1 ORDER BY seq",
                t("profile_samples")
            ))?;
            let rows = stmt.query_map([run], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, Vec<u8>>(1)?,
                    r.get::<_, Option<Vec<u8>>>(2)?,
                    r.get::<_, Option<Vec<u8>>>(3)?,
                    r.get::<_, Option<Vec<u8>>>(4)?,
                ))
            })?;
            let mut ix = Vec::new();
            let mut values = Vec::new();
            for row in rows {
                let (cn, node, time, thread, weight) = row?;
                let cn = usize::try_from(cn).map_err(|_| corrupt("negative count".into()))?;
                ix.clear();
                codec::decode_indexes(&node, cn, &mut ix)?;
                for &v in &ix {
                    s.node.push(map(&nodes, v, "node")?);
                }
                if let (Some(out), Some(b)) = (s.time_ns.as_mut(), time) {
                    codec::decode_times_ns(&b, cn, out)?;
                }
                if let (Some(out), Some(b)) = (s.thread.as_mut(), thread) {
                    ix.clear();
                    codec::decode_indexes(&b, cn, &mut ix)?;
                    for &v in &ix {
                        out.push(map(&threads, v, "thread")?);
                    }
                }
                if let (Some(out), Some(b)) = (s.weight.as_mut(), weight) {
                    values.clear();
                    codec::decode_values(&b, cn, &mut values)?;
                    out.extend(values.iter().map(|&v| whole(v)));
                }
            }
            let len = s.node.len();
            let short = |c: Option<usize>| c.is_some_and(|l| l != len);
            if short(s.time_ns.as_ref().map(Vec::len))
                || short(s.thread.as_ref().map(Vec::len))
                || short(s.weight.as_ref().map(Vec::len))
            {
                return Err(corrupt("sample columns differ in length".into()));
            }
        }
        p.start_unix_ns = start_unix_ns.and_then(|v| u64::try_from(v).ok());
        Ok(Some(p))
    }
}
