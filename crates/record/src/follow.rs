//! Follows an access log while a run records: reads lines as the server
//! writes them (surviving rotation and truncation), aggregates routes with
//! crates/logs, stores per-second per-route histograms as they complete,
//! and keeps the lines themselves (up to a size cap) for `keisoku logs RUN`.

use hdrhistogram::Histogram;
use keisoku_logs::group::Grouper;
use keisoku_logs::{Aggregator, Config, Format, LineParser, QueryMode};
use keisoku_store::{AccessLog, LogLinesWriter, RouteRow, RouteSecond, RouteSource, Store};
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
/// Most distinct routes given per-second histograms, as the route table
/// (`keisoku logs --limit`): an ungrouped log with ids in its paths must not
/// make the recorder's memory grow with every id.
const ROUTE_LIMIT: usize = 5000;
/// Histograms built and stored per batch: each is ~190 KB while built
/// (1 µs to 1 h at 3 significant digits), so a second with thousands of
/// routes is stored a batch at a time.
const HISTOGRAM_BATCH: usize = 256;
/// Seconds a log second stays open before it is stored: a request that
/// ends now was in flight since `now - request_time`, so `log.inflight` of
/// the last few seconds is still growing. Requests longer than this count
/// in flight only for their last seconds of it, until the run ends (the
/// last seconds are stored when the follower stops).
const SETTLE_S: u32 = 5;

/// Builds the line parser for `--log-format`.
pub fn parser(format: &str, regexp: Option<&str>) -> Result<LineParser, String> {
    let format = Format::named(format, regexp)?;
    // A run's per-second latencies come from the log's times: a log without
    // any would store zeros as latencies.
    if !format.has_times() {
        return Err(format!(
            "--log-format {}: this format logs no response time, which a run needs for its latencies; log one (nginx $request_time, Apache %D) and use regexp or apache-us",
            format.name()
        ));
    }
    Ok(LineParser::new(format, QueryMode::Drop, 1.0))
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
    /// Why the log stopped being followed before the run ended (it broke a
    /// size limit): the requests logged after that are missing from the
    /// run, so it cannot end `complete`.
    pub abandoned: Option<String>,
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
    /// (second, method, route) -> latencies in µs and 5xx answers, made
    /// into histograms when the second is stored (4 bytes a request until
    /// then).
    open: BTreeMap<(u32, String, String), (Vec<u32>, u64)>,
    /// second -> every request of the second, for the `log.*` series
    /// (these count routes beyond ROUTE_LIMIT too).
    totals: BTreeMap<u32, LogSecond>,
    /// The first second whose `log.*` points are not stored yet.
    next_second: u32,
    /// (method, route) pairs given histograms so far.
    known: std::collections::HashSet<(String, String)>,
    /// Requests of routes beyond ROUTE_LIMIT.
    unrouted: u64,
    lines: u64,
    malformed: u64,
    reopened: u32,
    notes: Vec<String>,
    /// Keeps the lines in the store (`None` if it could not start).
    keeper: Option<LogLinesWriter>,
    /// The longest line accepted (`keisoku_common::limits`): a log without
    /// newlines (`/dev/zero`, a binary file) must not grow `partial` forever.
    max_line: u64,
    /// Set once the log broke a limit (why): it is no longer followed.
    given_up: Option<String>,
}

/// One second of the log across routes.
#[derive(Default)]
struct LogSecond {
    /// Latencies in µs.
    latencies: Vec<u32>,
    /// Answers by status class, 1xx..5xx.
    status: [u64; 5],
    /// Milliseconds of requests in flight within the second (their
    /// `[time - request_time, time]` overlap), summed: divided by 1000 it
    /// is the mean number in flight.
    busy_ms: f64,
    /// Response body bytes of the second's answers: with `log.rps` it
    /// shows responses that grow over a run (a query without a limit).
    body_bytes: f64,
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
            totals: BTreeMap::new(),
            next_second: (origin.elapsed().as_millis() / 1000) as u32,
            known: Default::default(),
            unrouted: 0,
            lines: 0,
            malformed: 0,
            reopened: 0,
            notes,
            keeper,
            max_line: keisoku_common::Limits::current().line,
            given_up: None,
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
                notes: Vec::new(),
                kept: None,
                abandoned: Some("the access-log follower stopped unexpectedly".into()),
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
        if self.given_up.is_some() {
            return;
        }
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
            self.note(format!("{}: {e}", crate::recorder::LINES_LOST));
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
        let now_ms = self.origin.elapsed().as_secs_f64() * 1000.0;
        self.partial.extend_from_slice(buf);
        let Some(last_nl) = self.partial.iter().rposition(|&b| b == b'\n') else {
            self.check_line_limit();
            return;
        };
        let rest = self.partial.split_off(last_nl + 1);
        let complete = std::mem::replace(&mut self.partial, rest);
        if let Some(k) = self.keeper.as_mut() {
            let now_ms = self.origin.elapsed().as_secs_f64() * 1000.0;
            if let Err(e) = k.push(store, &complete, now_ms) {
                self.note(format!("{}: {e}", crate::recorder::LINES_LOST));
            }
        }
        for line in complete.split(|&b| b == b'\n') {
            if line.iter().all(|b| b.is_ascii_whitespace()) {
                continue;
            }
            self.line(line, now_ms);
        }
        self.check_line_limit();
    }

    /// Stops following a log whose unfinished line is over the limit (an
    /// endless device or a binary file), with a note saying so, instead of
    /// holding it all in memory and reading it forever.
    fn check_line_limit(&mut self) {
        if (self.partial.len() as u64) <= self.max_line {
            return;
        }
        let limit = keisoku_common::limits::Exceeded {
            limit: keisoku_common::limits::Limit::Line,
            max: self.max_line,
        };
        let msg = format!(
            "access log {}: {limit}; stopped following it, so the requests it logged after that are missing",
            self.path.display()
        );
        self.given_up = Some(msg);
        self.file = None;
        self.partial = Vec::new();
    }

    /// One log line, read at `now_ms` on the run's clock: the request ended
    /// when the server wrote it (we read within one poll of that).
    fn line(&mut self, line: &[u8], now_ms: f64) {
        let second = (now_ms / 1000.0) as u32;
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
        let us = (rec.response_time * 1e6).round().clamp(1.0, MAX_US as f64) as u32;
        let server_error = rec.status >= 500;
        let total = self.totals.entry(second).or_default();
        total.latencies.push(us);
        if rec.body_bytes.is_finite() && rec.body_bytes > 0.0 {
            total.body_bytes += rec.body_bytes;
        }
        if let Some(slot) = usize::try_from(rec.status / 100)
            .ok()
            .and_then(|c| c.checked_sub(1))
            .and_then(|i| total.status.get_mut(i))
        {
            *slot += 1;
        }
        // Spread the request's time in flight over the seconds it covers
        // (those not yet stored).
        let start_ms = (now_ms - f64::from(us) / 1000.0).max(0.0);
        let mut sec = ((start_ms / 1000.0) as u32).max(self.next_second);
        while f64::from(sec) * 1000.0 < now_ms {
            let lo = (f64::from(sec) * 1000.0).max(start_ms);
            let hi = (f64::from(sec + 1) * 1000.0).min(now_ms);
            if hi > lo {
                self.totals.entry(sec).or_default().busy_ms += hi - lo;
            }
            sec += 1;
        }
        let route = self.grouper.route(&rec.uri).into_owned();
        let method = String::from_utf8_lossy(&rec.method).into_owned();
        let key = (method, route);
        if !self.known.contains(&key) {
            if self.known.len() >= ROUTE_LIMIT {
                self.unrouted += 1;
                return;
            }
            self.known.insert(key.clone());
        }
        let slot = self.open.entry((second, key.0, key.1)).or_default();
        slot.0.push(us);
        slot.1 += u64::from(server_error);
    }

    /// A histogram of latencies in µs with the bounds every route second uses.
    fn histogram(&self, values: &[u32]) -> Histogram<u64> {
        let mut h = self.template.clone();
        for &v in values {
            let _ = h.record(u64::from(v));
        }
        h
    }

    /// Stores every settled second (all when `keep_current` is false):
    /// per-route histograms and the `log.*` series, a point for every
    /// second (0 when no line came).
    fn flush_seconds(&mut self, store: &Store, run: &str, keep_current: bool) {
        let now = (self.origin.elapsed().as_millis() / 1000) as u32;
        // Stored up to (not including) `until`.
        let until = if keep_current {
            now.saturating_sub(SETTLE_S)
        } else {
            let last = self.totals.keys().next_back().map_or(0, |s| s + 1);
            last.max(now + 1)
        };
        if until <= self.next_second {
            return;
        }
        let done: Vec<(u32, String, String)> =
            self.open.keys().filter(|k| k.0 < until).cloned().collect();
        let mut failed = None;
        for batch in done.chunks(HISTOGRAM_BATCH) {
            let mut seconds = Vec::with_capacity(batch.len());
            for key in batch {
                if let Some((values, errors)) = self.open.remove(key) {
                    seconds.push(RouteSecond {
                        method: key.1.clone(),
                        route: key.2.clone(),
                        second: key.0,
                        histogram: self.histogram(&values),
                        errors,
                        transport_errors: 0,
                    });
                }
            }
            if let Err(e) = store.put_route_seconds(run, RouteSource::AccessLog, &seconds) {
                failed = Some(e);
            }
        }
        let mut buf = keisoku_store::SeriesBuffer::default();
        // Seconds before the first stored one (a long request reaching
        // back) cannot be stored any more.
        let stale: Vec<u32> = self
            .totals
            .keys()
            .copied()
            .take_while(|&s| s < self.next_second)
            .collect();
        for s in stale {
            self.totals.remove(&s);
        }
        for sec in self.next_second..until {
            let second = self.totals.remove(&sec).unwrap_or_default();
            let h = self.histogram(&second.latencies);
            let q = |p: f64| {
                if h.is_empty() {
                    0.0
                } else {
                    h.value_at_quantile(p) as f64 / 1000.0
                }
            };
            // A second's point sits at its end, like the sampler's rates.
            let t = f64::from(sec + 1) * 1000.0;
            let st = &second.status;
            for (name, unit, v) in [
                ("log.rps", "/s", h.len() as f64),
                ("log.errors", "/s", st[4] as f64),
                ("log.status_2xx", "/s", st[1] as f64),
                ("log.status_3xx", "/s", st[2] as f64),
                ("log.status_4xx", "/s", st[3] as f64),
                ("log.status_5xx", "/s", st[4] as f64),
                ("log.p50_ms", "ms", q(0.5)),
                ("log.p99_ms", "ms", q(0.99)),
                ("log.inflight", "req", second.busy_ms / 1000.0),
                ("log.body_bytes", "B/s", second.body_bytes),
            ] {
                buf.push(name, unit, t, v);
            }
        }
        self.next_second = until;
        if let Err(e) = buf.flush(store, run) {
            failed = Some(e);
        }
        if let Some(e) = failed {
            self.note(format!("storing access-log seconds: {e}"));
        }
    }

    fn finish(mut self) -> Followed {
        if self.unrouted > 0 {
            let msg = format!(
                "access log: more than {ROUTE_LIMIT} distinct routes; {} requests of later routes have no per-second route histograms (they count in log.rps and log.p99_ms; group the URLs with `keisoku logs RUN -m` or `--auto-group`)",
                self.unrouted
            );
            self.note(msg);
        }
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
            abandoned: self.given_up,
        }
    }
}
