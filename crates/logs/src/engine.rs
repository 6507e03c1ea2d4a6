//! Parallel analysis of a whole input.
//!
//! One reader thread fills large buffers cut at line boundaries (and does
//! gzip decoding, if any); worker threads parse chunks independently, each
//! into its own [`Accumulator`]; the calling thread folds the per-chunk
//! order-dependent summaries in chunk order, so min/sum/first-seen order are
//! those of a sequential pass. Memory is a few buffers plus per-route state,
//! whatever the input size.

use crate::stats::{
    Accumulator, Analysis, ChunkOrder, Config, FeedError, Malformed, Pos, SlowRequest,
};
use crate::summary::Summary;
use rustc_hash::FxHashMap;
use std::collections::BTreeMap;
use std::io::Read;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, sync_channel, Receiver, TrySendError};
use std::sync::{Arc, Mutex};

/// Bytes per chunk handed to a worker.
pub const CHUNK: usize = 4 << 20;

/// Why an analysis failed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Reading the input failed.
    #[error("read error: {0}")]
    Io(#[from] std::io::Error),
    /// The input breaks a limit.
    #[error(transparent)]
    Feed(#[from] FeedError),
}

struct Chunk {
    index: u32,
    data: Vec<u8>,
}

struct Partial {
    index: u32,
    worker: usize,
    lines: u64,
    /// Routes created by this worker in this chunk: (local id, key).
    created: Vec<(u32, Vec<u8>)>,
    /// The chunk's order-dependent part, in local ids.
    ordered: ChunkOrder,
    malformed: Vec<(Pos, Malformed)>,
}

fn count_lines(data: &[u8]) -> u64 {
    let n = memchr::memchr_iter(b'\n', data).count() as u64;
    n + u64::from(data.last().is_some_and(|&b| b != b'\n'))
}

fn reader_loop(
    mut input: impl Read,
    work: std::sync::mpsc::SyncSender<Chunk>,
    free: Receiver<Vec<u8>>,
    abort: &AtomicBool,
) -> std::io::Result<()> {
    let mut carry: Vec<u8> = Vec::new();
    let mut index = 0u32;
    loop {
        if abort.load(Ordering::Relaxed) {
            return Ok(());
        }
        let mut buf = free
            .try_recv()
            .unwrap_or_else(|_| Vec::with_capacity(CHUNK + 64 * 1024));
        buf.clear();
        buf.append(&mut carry);
        let mut eof = false;
        // Fill to CHUNK; keep going past it only while no newline was seen
        // (a single line longer than a chunk).
        loop {
            if buf.len() >= CHUNK && memchr::memchr(b'\n', &buf).is_some() {
                break;
            }
            let want = if buf.len() < CHUNK {
                CHUNK - buf.len()
            } else {
                CHUNK
            };
            // Zero the room once and fill it over as many reads as the
            // input needs: a reader that returns a line or a pipe's 64 KiB
            // per call must not cost a 4 MiB memset per call.
            let start = buf.len();
            let end = start + want;
            buf.resize(end, 0);
            let mut filled = start;
            while filled < end {
                match input.read(&mut buf[filled..end]) {
                    Ok(0) => {
                        eof = true;
                        break;
                    }
                    Ok(n) => filled += n,
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(e),
                }
            }
            buf.truncate(filled);
            if eof {
                break;
            }
        }
        if !eof {
            if let Some(nl) = memchr::memrchr(b'\n', &buf) {
                carry.extend_from_slice(&buf[nl + 1..]);
                buf.truncate(nl + 1);
            }
        }
        if !buf.is_empty() {
            let mut chunk = Chunk { index, data: buf };
            // Poll instead of blocking so a worker that gave up (route limit)
            // cannot leave the reader stuck on a full queue.
            loop {
                match work.try_send(chunk) {
                    Ok(()) => break,
                    Err(TrySendError::Full(c)) => {
                        if abort.load(Ordering::Relaxed) {
                            return Ok(());
                        }
                        chunk = c;
                        std::thread::sleep(std::time::Duration::from_micros(200));
                    }
                    Err(TrySendError::Disconnected(_)) => return Ok(()),
                }
            }
        }
        index += 1;
        if eof {
            return Ok(());
        }
    }
}

/// Analyses everything `input` yields with `threads` parsing threads.
pub fn analyze(
    cfg: Arc<Config>,
    input: impl Read + Send,
    threads: usize,
) -> Result<Analysis, Error> {
    let threads = threads.max(1);
    let abort = AtomicBool::new(false);
    let (work_tx, work_rx) = sync_channel::<Chunk>(threads + 1);
    let work_rx = &Mutex::new(work_rx);
    let (free_tx, free_rx) = channel::<Vec<u8>>();
    let (part_tx, part_rx) = channel::<Partial>();

    std::thread::scope(|s| {
        let abort = &abort;
        let reader = s.spawn(move || reader_loop(input, work_tx, free_rx, abort));
        let mut workers = Vec::new();
        for w in 0..threads {
            let cfg = Arc::clone(&cfg);
            let part_tx = part_tx.clone();
            let free_tx = free_tx.clone();
            workers.push(s.spawn(move || -> Result<Accumulator, FeedError> {
                let mut acc = Accumulator::new(cfg);
                loop {
                    let next = match work_rx.lock() {
                        Ok(rx) => rx.recv(),
                        Err(_) => break,
                    };
                    let Ok(chunk) = next else { break };
                    let mut line_no = 0u64;
                    let mut failed = None;
                    let data = &chunk.data;
                    let mut start = 0;
                    while start < data.len() {
                        let end = memchr::memchr(b'\n', &data[start..])
                            .map_or(data.len(), |i| start + i + 1);
                        line_no += 1;
                        if let Err(e) = acc.feed(
                            &data[start..end],
                            Pos {
                                chunk: chunk.index,
                                line: line_no,
                            },
                        ) {
                            failed = Some(e);
                            break;
                        }
                        start = end;
                    }
                    let created = acc.created.iter().map(|&id| (id, acc.key_of(id))).collect();
                    let partial = Partial {
                        index: chunk.index,
                        worker: w,
                        lines: count_lines(data),
                        created,
                        ordered: acc.take_chunk(),
                        malformed: std::mem::take(&mut acc.malformed),
                    };
                    let _ = free_tx.send(chunk.data);
                    if let Some(e) = failed {
                        abort.store(true, Ordering::Relaxed);
                        return Err(e);
                    }
                    if part_tx.send(partial).is_err() {
                        break;
                    }
                }
                acc.shed();
                Ok(acc)
            }));
        }
        drop(part_tx);
        drop(free_tx);

        let collected = collect(
            part_rx,
            threads,
            cfg.malformed_examples,
            cfg.keep_line_order,
        );
        let read_result = reader.join().unwrap_or(Ok(()));
        let mut accs = Vec::new();
        let mut feed_err = None;
        for w in workers {
            match w.join() {
                Ok(Ok(acc)) => accs.push(acc),
                Ok(Err(e)) => feed_err = Some(e),
                Err(_) => {}
            }
        }
        if let Some(e) = feed_err {
            return Err(Error::Feed(e));
        }
        read_result?;
        Ok(finish(collected, accs, &cfg))
    })
}

struct Collected {
    /// Global routes: key and ordered summaries, in first-seen order.
    keys: Vec<Vec<u8>>,
    summaries: Vec<(Summary, Summary, Option<Vec<f64>>)>,
    /// Per worker: local id -> global id.
    maps: Vec<Vec<u32>>,
    /// Per chunk index: lines before it.
    chunk_base: Vec<u64>,
    malformed: Vec<Malformed>,
}

fn collect(rx: Receiver<Partial>, threads: usize, keep: usize, line_order: bool) -> Collected {
    let mut c = Collected {
        keys: Vec::new(),
        summaries: Vec::new(),
        maps: vec![Vec::new(); threads],
        chunk_base: Vec::new(),
        malformed: Vec::new(),
    };
    let mut index: FxHashMap<Vec<u8>, u32> = FxHashMap::default();
    let mut pending: BTreeMap<u32, Partial> = BTreeMap::new();
    let mut next = 0u32;
    let mut base = 0u64;
    for p in rx {
        pending.insert(p.index, p);
        while let Some(p) = pending.remove(&next) {
            c.chunk_base.push(base);
            let map = &mut c.maps[p.worker];
            for (local, key) in p.created {
                let g = *index.entry(key.clone()).or_insert_with(|| {
                    c.keys.push(key);
                    c.summaries.push((
                        Summary::default(),
                        Summary::default(),
                        line_order.then(Vec::new),
                    ));
                    (c.keys.len() - 1) as u32
                });
                if map.len() <= local as usize {
                    map.resize(local as usize + 1, u32::MAX);
                }
                map[local as usize] = g;
            }
            let map: &[u32] = map;
            p.ordered.fold(&mut c.summaries, |local| {
                map.get(local as usize).map_or(usize::MAX, |&g| g as usize)
            });
            for (pos, mut m) in p.malformed {
                if c.malformed.len() < keep {
                    m.line = base + pos.line;
                    c.malformed.push(m);
                }
            }
            base += p.lines;
            next += 1;
        }
    }
    c.chunk_base.push(base);
    c
}

fn finish(mut c: Collected, accs: Vec<Accumulator>, cfg: &Arc<Config>) -> Analysis {
    // The keys are only needed to number the routes; with a million
    // distinct URIs they are 50 MB better freed before the routes gather.
    let n_routes = c.keys.len();
    c.keys = Vec::new();
    let mut routes: Vec<Option<crate::stats::RouteStats>> = (0..n_routes).map(|_| None).collect();
    let mut counts = crate::stats::LineCounts::default();
    let mut slow: Vec<SlowRequest> = Vec::new();
    let mut timeline = cfg.timeline.map(crate::timeline::TimelineAcc::new);
    let mut head = Vec::new();
    for (w, acc) in accs.into_iter().enumerate() {
        let map = c.maps.get(w).cloned().unwrap_or_default();
        counts.lines += acc.counts.lines;
        counts.blank += acc.counts.blank;
        counts.parsed += acc.counts.parsed;
        counts.filtered += acc.counts.filtered;
        counts.malformed += acc.counts.malformed;
        counts.bad_time += acc.counts.bad_time;
        if head.is_empty() {
            head = acc.head.clone();
        }
        if let (Some(t), Some(o)) = (&mut timeline, &acc.timeline) {
            t.merge_remapped(o, &map);
        }
        for e in acc.slow {
            let mut r = e.req;
            r.line = c.chunk_base.get(e.pos.chunk as usize).copied().unwrap_or(0) + e.pos.line;
            slow.push(r);
        }
        for (local, r) in acc.routes.into_iter().enumerate() {
            let Some(&g) = map.get(local) else { continue };
            let Some(slot) = routes.get_mut(g as usize) else {
                continue;
            };
            match slot {
                Some(existing) => existing.merge(&r),
                None => *slot = Some(r),
            }
        }
    }
    let mut out = Vec::with_capacity(routes.len());
    for (g, r) in routes.into_iter().enumerate() {
        if let Some(mut r) = r {
            // The ordered summaries come from the chunk-order fold, not the workers.
            let (time, body, order) = std::mem::take(&mut c.summaries[g]);
            r.time = time;
            r.body = body;
            r.line_order = order;
            out.push(r);
        }
    }
    slow.sort_by(|a, b| {
        b.response_time
            .total_cmp(&a.response_time)
            .then(a.line.cmp(&b.line))
    });
    slow.truncate(cfg.slow);
    // Timeline route ids are global ids; `out` keeps global order (every
    // global id has a route). The names are copied only for a timeline.
    let timeline = timeline.map(|t| {
        let names: Vec<(String, String)> = out
            .iter()
            .map(|r| (r.method.clone(), r.uri.clone()))
            .collect();
        t.finish(&names)
    });
    Analysis {
        routes: out,
        counts,
        malformed: c.malformed,
        slow,
        timeline,
        head,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::{FieldNames, Format, LineParser};
    use crate::uri::QueryMode;

    /// Across several 4 MiB chunks on two threads, every route's sum is the
    /// running float sum in line order, bit for bit (adding per-chunk
    /// partial sums gave 0.066 where alp prints 0.06599999999999999).
    #[test]
    fn sums_are_running_sums_in_line_order_across_chunks() {
        let mut log = String::new();
        let mut want = [0.0f64; 3];
        let mut x: u64 = 7;
        let mut n = 0usize;
        while log.len() < 3 * CHUNK + 12_345 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let route = (x % 3) as usize;
            let ms = (x >> 8) % 997;
            let text = format!("{}.{:03}", ms / 1000, ms % 1000);
            want[route] += text.parse::<f64>().unwrap();
            log.push_str(&format!(
                "method:GET\turi:/r{route}\tstatus:200\tsize:10\treqtime:{text}\tpad:{}\n",
                "x".repeat((x % 40) as usize)
            ));
            n += 1;
        }
        let cfg = Arc::new(Config::new(LineParser::new(
            Format::Ltsv(FieldNames::ltsv()),
            QueryMode::Drop,
            1.0,
        )));
        let a = analyze(cfg, log.as_bytes(), 2).unwrap();
        assert_eq!(a.counts.parsed as usize, n);
        for r in &a.routes {
            let i: usize = r.uri[2..].parse().unwrap();
            assert_eq!(r.time.sum.to_bits(), want[i].to_bits(), "{}", r.uri);
        }
    }

    /// A reader that hands out a few bytes per call and is interrupted
    /// between calls (a pipe under signals, a capture's one-line reads)
    /// loses nothing: an `Interrupted` read used to end the input there.
    #[test]
    fn small_and_interrupted_reads_lose_no_line() {
        struct Trickle<'a> {
            data: &'a [u8],
            calls: u64,
        }
        impl std::io::Read for Trickle<'_> {
            fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
                self.calls += 1;
                if self.calls % 3 == 0 {
                    return Err(std::io::ErrorKind::Interrupted.into());
                }
                let n = buf
                    .len()
                    .min(self.data.len())
                    .min(7 + (self.calls % 50) as usize);
                buf[..n].copy_from_slice(&self.data[..n]);
                self.data = &self.data[n..];
                Ok(n)
            }
        }
        let mut log = String::new();
        for i in 0..20_000 {
            log.push_str(&format!(
                "method:GET\turi:/r{}\tstatus:200\tsize:10\treqtime:0.{:03}\n",
                i % 7,
                i % 1000
            ));
        }
        let cfg = Arc::new(Config::new(LineParser::new(
            Format::Ltsv(FieldNames::ltsv()),
            QueryMode::Drop,
            1.0,
        )));
        let a = analyze(
            cfg,
            Trickle {
                data: log.as_bytes(),
                calls: 0,
            },
            2,
        )
        .unwrap();
        assert_eq!(a.counts.parsed, 20_000);
        assert_eq!(a.routes.len(), 7);
    }
}
