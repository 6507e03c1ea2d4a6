//! Follows an access log while a run records: reads lines as the server
//! writes them (surviving rotation and truncation), aggregates routes with
//! crates/logs, stores per-second per-route histograms as they complete,
//! and keeps the lines themselves (up to a size cap) for `keisoku logs RUN`.

use hdrhistogram::Histogram;
use keisoku_logs::group::Grouper;
use keisoku_logs::{Aggregator, Config, FieldNames, Format, LineParser, QueryMode};
use keisoku_store::{AccessLog, LogLinesWriter, RouteRow, RouteSecond, RouteSource, Series, Store};
use std::collections::BTreeMap;
use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How often the file is checked for new lines.
const POLL: Duration = Duration::from_millis(200);
/// Bytes remembered at the read position to recognise the file.
const TAIL: usize = 64;
/// Largest latency kept in histograms: one hour in µs.
const MAX_US: u64 = 3_600_000_000;
/// Most bytes read from the log at once, so a large backlog is handled in
/// pieces instead of all in memory.
const READ_MAX: usize = 8 << 20;

/// Builds the line parser for `--log-format`.
pub fn parser(format: &str, regexp: Option<&str>) -> Result<LineParser, String> {
    Ok(LineParser::new(
        log_format(format, regexp)?,
        QueryMode::Drop,
        1.0,
    ))
}

/// The log format of `--log-format` (and `--log-regexp`), with the default
/// field names `keisoku logs` uses for it.
pub fn log_format(format: &str, regexp: Option<&str>) -> Result<Format, String> {
    Ok(match format {
        "ltsv" => Format::Ltsv(FieldNames::ltsv()),
        "json" => Format::Json(FieldNames::json()),
        "regexp" => {
            let pattern = regexp.unwrap_or(keisoku_logs::format::DEFAULT_PATTERN);
            Format::regexp(pattern, FieldNames::json()).map_err(|e| format!("--log-regexp: {e}"))?
        }
        other => {
            return Err(format!(
                "--log-format: unknown format {other:?} (ltsv, json or regexp)"
            ))
        }
    })
}

/// What to keep of the followed log's lines.
#[derive(Debug, Clone)]
pub struct Keep {
    /// `--log-format` and `--log-regexp`, stored so `keisoku logs RUN`
    /// parses the lines as the recording did.
    pub format: String,
    /// `--log-regexp`.
    pub pattern: Option<String>,
    /// False with `--no-log-lines`.
    pub lines: bool,
    /// `--log-lines-max`: raw bytes kept at most.
    pub max_bytes: u64,
}

/// What a stopped follower hands back.
pub struct Followed {
    /// Per-route rows in alp's columns (times in ms).
    pub routes: Vec<RouteRow>,
    /// Lines read, and lines that did not parse.
    pub lines: u64,
    /// Lines that could not be parsed.
    pub malformed: u64,
    /// Times the file was rotated or truncated under us.
    pub reopened: u32,
    /// Problems met (I/O, store), each once.
    pub notes: Vec<String>,
    /// What the run kept of the lines (`None` when that could not be stored).
    pub kept: Option<AccessLog>,
}

/// A running follower thread.
pub struct Follower {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Followed>>,
}

struct State {
    path: PathBuf,
    file: Option<File>,
    ino: Option<(u64, u64)>,
    offset: u64,
    /// The last bytes read, to notice a file truncated and regrown beyond
    /// our offset (its size alone would not tell).
    tail: Vec<u8>,
    partial: Vec<u8>,
    parser: LineParser,
    grouper: Grouper,
    agg: Aggregator,
    origin: Instant,
    /// An empty histogram with the bounds every route second uses.
    template: Histogram<u64>,
    /// (second, method, route) -> latencies in µs.
    open: BTreeMap<(u32, String, String), Histogram<u64>>,
    lines: u64,
    malformed: u64,
    reopened: u32,
    notes: Vec<String>,
    /// Keeps the lines in the store (`None` if it could not start).
    keeper: Option<LogLinesWriter>,
}

impl Follower {
    /// Starts following `path`. Lines already in the file are skipped: only
    /// what the server writes from now on belongs to the run.
    pub fn start(
        path: &Path,
        parser: LineParser,
        keep: Keep,
        store_path: PathBuf,
        run: String,
        origin: Instant,
    ) -> Result<Follower, String> {
        let store = Store::open(&store_path).map_err(|e| e.to_string())?;
        let mut notes = Vec::new();
        let log = AccessLog {
            path: path.display().to_string(),
            format: keep.format,
            pattern: keep.pattern,
            keep_lines: keep.lines,
            max_bytes: keep.max_bytes,
            ..AccessLog::default()
        };
        let keeper = match LogLinesWriter::start(&store, &run, log) {
            Ok(w) => Some(w),
            Err(e) => {
                notes.push(format!("access-log lines not kept: {e}"));
                None
            }
        };
        let mut cfg = Config::new(parser.clone());
        cfg.grouper = Grouper::default();
        let mut st = State {
            path: path.to_path_buf(),
            file: None,
            ino: None,
            offset: 0,
            tail: Vec::new(),
            partial: Vec::new(),
            parser,
            grouper: Grouper::default(),
            agg: Aggregator::new(Arc::new(cfg)),
            origin,
            template: Histogram::new_with_bounds(1, MAX_US, 3).map_err(|e| e.to_string())?,
            open: BTreeMap::new(),
            lines: 0,
            malformed: 0,
            reopened: 0,
            notes,
            keeper,
        };
        if let Ok(f) = File::open(path) {
            let meta = f
                .metadata()
                .map_err(|e| format!("{}: {e}", path.display()))?;
            st.ino = Some((meta.dev(), meta.ino()));
            st.offset = meta.len();
            st.file = Some(f);
            st.tail = vec![0; (st.offset as usize).min(TAIL)];
            let from = st.offset - st.tail.len() as u64;
            let read = st.file.as_mut().map(|f| {
                f.seek(SeekFrom::Start(from))
                    .and_then(|_| f.read_exact(&mut st.tail))
            });
            if !matches!(read, Some(Ok(()))) {
                st.tail.clear();
            }
        }
        let stop = Arc::new(AtomicBool::new(false));
        let stop_t = Arc::clone(&stop);
        let handle = std::thread::Builder::new()
            .name("keisoku-access-log".into())
            .spawn(move || {
                loop {
                    let stopping = stop_t.load(Ordering::Relaxed);
                    st.poll(&store);
                    st.flush_seconds(&store, &run, !stopping);
                    st.keep_due(&store, stopping);
                    if stopping {
                        break;
                    }
                    std::thread::sleep(POLL);
                }
                st.finish()
            })
            .map_err(|e| e.to_string())?;
        Ok(Follower {
            stop,
            handle: Some(handle),
        })
    }

    /// Reads what is left, stores the last seconds and returns the routes.
    pub fn stop(mut self) -> Followed {
        self.stop.store(true, Ordering::Relaxed);
        match self.handle.take().map(|h| h.join()) {
            Some(Ok(f)) => f,
            _ => Followed {
                routes: Vec::new(),
                lines: 0,
                malformed: 0,
                reopened: 0,
                notes: vec!["access-log follower stopped unexpectedly".into()],
                kept: None,
            },
        }
    }
}

impl Drop for Follower {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

impl State {
    fn note(&mut self, msg: String) {
        if !self.notes.contains(&msg) {
            self.notes.push(msg);
        }
    }

    /// Reads new bytes; follows the name to a new file after rotation and
    /// restarts from the top after truncation.
    fn poll(&mut self, store: &Store) {
        let current = std::fs::metadata(&self.path)
            .ok()
            .map(|m| ((m.dev(), m.ino()), m.len()));
        match (current, self.ino) {
            (Some((ino, _)), Some(old)) if ino != old => {
                // Rotated: finish the old file (the server may have written
                // more before it reopened), then switch to the new one.
                self.read_available(store);
                self.open_new(0);
                self.reopened += 1;
            }
            (Some((_, len)), Some(_)) if len < self.offset || !self.tail_matches() => {
                // Truncated in place (copytruncate), possibly already
                // regrown past our offset: start over from the top.
                self.offset = 0;
                self.partial.clear();
                self.tail.clear();
                self.reopened += 1;
            }
            (Some(_), None) => self.open_new(0),
            _ => {}
        }
        self.read_available(store);
    }

    /// Writes kept lines and counters that are due (all when `all`).
    fn keep_due(&mut self, store: &Store, all: bool) {
        let now_ms = self.origin.elapsed().as_secs_f64() * 1000.0;
        let Some(k) = self.keeper.as_mut() else {
            return;
        };
        let r = if all {
            k.flush(store, now_ms)
        } else {
            k.tick(store, now_ms)
        };
        if let Err(e) = r {
            self.note(format!("storing access-log lines: {e}"));
        }
    }

    /// Whether the bytes just before our offset are still the ones we read.
    fn tail_matches(&mut self) -> bool {
        let n = self.tail.len() as u64;
        if n == 0 || n > self.offset {
            return true;
        }
        let Some(f) = self.file.as_mut() else {
            return true;
        };
        let mut now = vec![0u8; n as usize];
        if f.seek(SeekFrom::Start(self.offset - n)).is_err() || f.read_exact(&mut now).is_err() {
            return true;
        }
        now == self.tail
    }

    fn open_new(&mut self, offset: u64) {
        match File::open(&self.path) {
            Ok(f) => {
                self.ino = f.metadata().ok().map(|m| (m.dev(), m.ino()));
                self.file = Some(f);
                self.offset = offset;
                self.partial.clear();
                self.tail.clear();
            }
            Err(e) => {
                let msg = format!("access log {}: {e}", self.path.display());
                self.note(msg);
            }
        }
    }

    fn read_available(&mut self, store: &Store) {
        let mut buf = Vec::new();
        loop {
            let Some(f) = self.file.as_mut() else { return };
            if f.seek(SeekFrom::Start(self.offset)).is_err() {
                return;
            }
            buf.clear();
            match f.by_ref().take(READ_MAX as u64).read_to_end(&mut buf) {
                Ok(n) => self.offset += n as u64,
                Err(e) => {
                    let msg = format!("reading access log {}: {e}", self.path.display());
                    self.note(msg);
                    return;
                }
            }
            if buf.is_empty() {
                return;
            }
            let more = buf.len() == READ_MAX;
            self.take_bytes(&buf, store);
            if !more {
                return;
            }
        }
    }

    /// Handles bytes just read: remembers the tail, and hands every
    /// completed line to the aggregator and the line keeper.
    fn take_bytes(&mut self, buf: &[u8], store: &Store) {
        let keep = buf.len().min(TAIL);
        if keep == TAIL {
            self.tail.clear();
        } else if self.tail.len() + keep > TAIL {
            self.tail.drain(..self.tail.len() + keep - TAIL);
        }
        self.tail.extend_from_slice(&buf[buf.len() - keep..]);
        let second = (self.origin.elapsed().as_millis() / 1000) as u32;
        self.partial.extend_from_slice(buf);
        let Some(last_nl) = self.partial.iter().rposition(|&b| b == b'\n') else {
            return;
        };
        let rest = self.partial.split_off(last_nl + 1);
        let complete = std::mem::replace(&mut self.partial, rest);
        if let Some(k) = self.keeper.as_mut() {
            let now_ms = self.origin.elapsed().as_secs_f64() * 1000.0;
            if let Err(e) = k.push(store, &complete, now_ms) {
                self.note(format!("storing access-log lines: {e}"));
            }
        }
        for line in complete.split(|&b| b == b'\n') {
            if line.iter().all(|b| b.is_ascii_whitespace()) {
                continue;
            }
            self.line(line, second);
        }
    }

    fn line(&mut self, line: &[u8], second: u32) {
        self.lines += 1;
        let _ = self.agg.feed(line);
        let line = keisoku_logs::format::trim_line(line);
        let rec = match self.parser.parse(line) {
            Ok(r) => r,
            Err(_) => {
                self.malformed += 1;
                return;
            }
        };
        let route = self.grouper.route(&rec.uri).into_owned();
        let method = String::from_utf8_lossy(&rec.method).into_owned();
        let us = (rec.response_time * 1e6).round().clamp(1.0, MAX_US as f64) as u64;
        let template = &self.template;
        let h = self
            .open
            .entry((second, method, route))
            .or_insert_with(|| template.clone());
        let _ = h.record(us);
    }

    /// Stores every completed second (all when `keep_current` is false),
    /// with the `log.rps` and `log.p99_ms` series.
    fn flush_seconds(&mut self, store: &Store, run: &str, keep_current: bool) {
        let now = (self.origin.elapsed().as_millis() / 1000) as u32;
        let done: Vec<(u32, String, String)> = self
            .open
            .keys()
            .filter(|k| !keep_current || k.0 < now)
            .cloned()
            .collect();
        if done.is_empty() {
            return;
        }
        let mut seconds = Vec::with_capacity(done.len());
        let mut per_second: BTreeMap<u32, Histogram<u64>> = BTreeMap::new();
        for key in done {
            if let Some(h) = self.open.remove(&key) {
                seconds.push(RouteSecond {
                    method: key.1,
                    route: key.2,
                    second: key.0,
                    histogram: h,
                });
            }
        }
        for s in &seconds {
            match per_second.get_mut(&s.second) {
                Some(t) => {
                    let _ = t.add(&s.histogram);
                }
                None => {
                    per_second.insert(s.second, s.histogram.clone());
                }
            }
        }
        let mut rps = Series {
            name: "log.rps".into(),
            unit: "/s".into(),
            t_ms: Vec::new(),
            v: Vec::new(),
        };
        let mut p99 = Series {
            name: "log.p99_ms".into(),
            unit: "ms".into(),
            t_ms: Vec::new(),
            v: Vec::new(),
        };
        for (sec, h) in &per_second {
            // A second's point sits at its end, like the sampler's rates.
            let t = f64::from(sec + 1) * 1000.0;
            rps.t_ms.push(t);
            rps.v.push(h.len() as f64);
            p99.t_ms.push(t);
            p99.v.push(h.value_at_quantile(0.99) as f64 / 1000.0);
        }
        let r1 = store.put_route_seconds(run, RouteSource::AccessLog, &seconds);
        let r2 = store.append_series(run, &[rps, p99]);
        if let Err(e) = r1.and(r2) {
            self.note(format!("storing access-log seconds: {e}"));
        }
    }

    fn finish(self) -> Followed {
        let analysis = self.agg.finish();
        let routes = analysis
            .routes
            .iter()
            .map(|r| RouteRow {
                method: r.method.clone(),
                uri: r.uri.clone(),
                count: r.count,
                s1xx: r.status[0],
                s2xx: r.status[1],
                s3xx: r.status[2],
                s4xx: r.status[3],
                s5xx: r.status[4],
                min: r.time.min * 1000.0,
                max: r.time.max * 1000.0,
                sum: r.time.sum * 1000.0,
                avg: r.avg() * 1000.0,
                p50: r.percentile(50.0) * 1000.0,
                p90: r.percentile(90.0) * 1000.0,
                p95: r.percentile(95.0) * 1000.0,
                p99: r.percentile(99.0) * 1000.0,
                stddev: r.stddev() * 1000.0,
                min_body: r.body.min,
                max_body: r.body.max,
                sum_body: r.body.sum,
                avg_body: if r.count > 0 {
                    r.body.sum / r.count as f64
                } else {
                    0.0
                },
            })
            .collect();
        Followed {
            routes,
            lines: self.lines,
            malformed: self.malformed,
            reopened: self.reopened,
            notes: self.notes,
            kept: self.keeper.map(|k| k.info().clone()),
        }
    }
}
