//! Per-route statistics, the streaming accumulator that feeds them line by
//! line, and the mergeable result of an analysis.

use crate::filter::Filter;
use crate::format::{trim_line, LineError, LineParser, Record};
use crate::group::Grouper;
use crate::summary::{Moments, Summary};
use crate::timeline::{Timeline, TimelineAcc};
use crate::times::{micros, Times};
use crate::timestamp;
use rustc_hash::FxHashMap;
use serde::{Deserialize, Serialize};
use std::collections::BinaryHeap;
use std::sync::Arc;

pub use crate::times::HISTOGRAM_SIGFIGS;

/// Everything an analysis needs to know besides the input.
#[derive(Debug, Clone)]
pub struct Config {
    /// The line parser (format, field names, query handling, time unit).
    pub parser: LineParser,
    /// Route grouping.
    pub grouper: Grouper,
    /// Only lines matching this are counted.
    pub filter: Option<Filter>,
    /// Bucket width in seconds for the timeline, if wanted.
    pub timeline: Option<f64>,
    /// How many of the slowest single requests to keep.
    pub slow: usize,
    /// At most this many distinct routes (alp's `--limit`), so memory stays
    /// bounded on ungrouped logs.
    pub route_limit: usize,
    /// How many malformed lines to keep as examples.
    pub malformed_examples: usize,
    /// Keep every route's response times in line order (8 bytes a
    /// request), for alp's `--sort stddev`.
    pub keep_line_order: bool,
}

impl Config {
    /// A configuration with alp's defaults around `parser`.
    pub fn new(parser: LineParser) -> Config {
        Config {
            parser,
            grouper: Grouper::default(),
            filter: None,
            timeline: None,
            slow: 0,
            route_limit: 5000,
            malformed_examples: 5,
            keep_line_order: false,
        }
    }

    fn needs_time(&self) -> bool {
        self.timeline.is_some()
    }
}

/// Statistics of one route (method + grouped URI), exact where alp is exact.
#[derive(Debug, Clone)]
pub struct RouteStats {
    /// HTTP method.
    pub method: String,
    /// Route name: the normalised URI or the matching group / auto-group name.
    pub uri: String,
    /// Number of requests.
    pub count: u64,
    /// Requests per status class: 1xx, 2xx, 3xx, 4xx, 5xx.
    pub status: [u64; 5],
    /// Response time (seconds), alp's min/max/sum arithmetic.
    pub time: Summary,
    /// Response body bytes, alp's min/max/sum arithmetic.
    pub body: Summary,
    /// Moments of the response time, for the standard deviation.
    pub moments: Moments,
    /// True smallest response time (alp's `min` column has a quirk; see [`Summary`]).
    pub low: f64,
    /// The response times: the values while that is cheap (alp's exact
    /// percentiles and stddev), a histogram beyond (see [`crate::times`]).
    pub times: Times,
    /// The response times in line order, when the configuration asks for
    /// them ([`Config::keep_line_order`]).
    pub line_order: Option<Vec<f64>>,
    /// Whether every response time was a whole number of milliseconds (as
    /// nginx writes them); percentiles then snap to the millisecond inside
    /// their histogram bucket, which makes them exact below about 2 s.
    pub ms_grid: bool,
}

/// alp's percentile rank: the 0-based index of the sorted sample it prints.
pub fn alp_rank(n: u64, p: f64) -> u64 {
    if p <= 0.0 {
        return 0;
    }
    if p >= 100.0 {
        return n.saturating_sub(1);
    }
    // In floats: `n + 1` overflows for a dump that claims u64::MAX requests.
    let pos = ((n as f64 + 1.0) * (p / 100.0)) as u64;
    pos.saturating_sub(1)
}

impl RouteStats {
    /// An empty route.
    pub fn new(method: String, uri: String) -> RouteStats {
        RouteStats {
            method,
            uri,
            count: 0,
            status: [0; 5],
            time: Summary::default(),
            body: Summary::default(),
            moments: Moments::default(),
            low: f64::INFINITY,
            times: Times::new(),
            line_order: None,
            ms_grid: true,
        }
    }

    /// Counts one request in order (updates the order-dependent summaries too).
    pub fn add(&mut self, status: i64, response_time: f64, body: f64) {
        self.add_unordered(status, response_time);
        self.time.add(response_time);
        self.body.add(body);
    }

    /// The order-independent part of [`RouteStats::add`].
    #[inline]
    fn add_unordered(&mut self, status: i64, rt: f64) {
        self.count += 1;
        if (100..600).contains(&status) {
            self.status[(status / 100 - 1) as usize] += 1;
        }
        self.moments.add(rt);
        if rt < self.low {
            self.low = rt;
        }
        self.ms_grid &= micros(rt) % 1000 == 0;
        self.times.record(rt);
    }

    /// Adds the order-independent parts of `o` (histogram, moments, counts).
    fn merge_unordered(&mut self, o: &RouteStats) {
        self.count += o.count;
        for (a, b) in self.status.iter_mut().zip(o.status) {
            *a += b;
        }
        self.moments.merge(&o.moments);
        self.low = self.low.min(o.low);
        self.ms_grid &= o.ms_grid;
        self.times.add(&o.times);
    }

    /// Appends `later`, the statistics of lines after these ones.
    pub fn merge(&mut self, later: &RouteStats) {
        self.merge_unordered(later);
        self.time.merge(&later.time);
        self.body.merge(&later.body);
    }

    /// Mean response time (alp: sum / count).
    pub fn avg(&self) -> f64 {
        self.time.avg()
    }

    /// Population standard deviation of the response time: alp's own
    /// float steps while the values are held, else from the moments.
    pub fn stddev(&self) -> f64 {
        if self.count > 0 {
            if let Some(sd) = self.times.alp_stddev(self.avg(), self.count) {
                return sd;
            }
        }
        self.moments.stddev()
    }

    /// The standard deviation alp computes before its percentile columns
    /// sort the values (what its `--sort stddev` compares): squared
    /// deviations added in line order. Falls back to [`RouteStats::stddev`].
    pub fn stddev_line_order(&self) -> f64 {
        match &self.line_order {
            Some(values) if self.count > 0 && values.len() as u64 == self.count => {
                let avg = self.avg();
                let mut stdd = 0.0f64;
                for v in values {
                    stdd += (v - avg) * (v - avg);
                }
                (stdd / self.count as f64).sqrt()
            }
            _ => self.stddev(),
        }
    }

    /// The `p`th percentile response time in seconds, using alp's rank rule
    /// on the histogram: within 0.1% (or 1 µs) of alp's value, and exactly
    /// alp's value at p0 and p100.
    pub fn percentile(&self, p: f64) -> f64 {
        if self.count == 0 {
            return 0.0;
        }
        if p >= 100.0 {
            return self.time.max;
        }
        if let Some(v) = self.times.at_rank(alp_rank(self.count, p)) {
            return v;
        }
        let rank = alp_rank(self.count, p) + 1;
        // The extremes are known exactly.
        if rank >= self.count {
            return self.time.max;
        }
        if rank == 1 && self.low.is_finite() {
            return self.low;
        }
        let mut seen = 0u64;
        let mut value = self.times.max_micros();
        for (top, count) in self.times.buckets() {
            seen += count;
            if seen >= rank {
                value = Times::median_equivalent(top);
                if self.ms_grid {
                    let lo = Times::lowest_equivalent(top).div_ceil(1000);
                    let hi = Times::highest_equivalent(top) / 1000;
                    if lo <= hi {
                        value = ((value + 500) / 1000).clamp(lo, hi) * 1000;
                    }
                }
                break;
            }
        }
        let secs = value as f64 / 1e6;
        secs.clamp(self.low.min(self.time.max), self.time.max)
    }

    /// The histogram as `(microseconds, count)` pairs, for dumps.
    pub fn hist_pairs(&self) -> Vec<(u64, u64)> {
        self.times.buckets()
    }

    /// Rebuilds the times as a histogram from [`RouteStats::hist_pairs`]
    /// (no longer exact).
    pub fn set_hist_pairs(&mut self, pairs: &[(u64, u64)]) {
        self.times = Times::from_micros_buckets(pairs.iter().copied());
    }
}

/// One line that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Malformed {
    /// 1-based line number.
    pub line: u64,
    /// What was wrong.
    pub reason: String,
    /// The start of the line.
    pub text: String,
}

/// One of the slowest requests.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SlowRequest {
    /// Response time in seconds.
    pub response_time: f64,
    /// 1-based line number.
    pub line: u64,
    /// Timestamp as written in the log.
    pub time: String,
    /// Method.
    pub method: String,
    /// The request's URI as written in the log, query string included
    /// whatever `-q` says (`-q` shapes routes, not requests).
    pub uri: String,
    /// Its route (grouped).
    pub route: String,
    /// Status code.
    pub status: i64,
    /// Body bytes.
    pub body_bytes: f64,
}

/// Position of a line before chunk offsets are known.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) struct Pos {
    pub chunk: u32,
    pub line: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct SlowEntry {
    pub pos: Pos,
    pub req: SlowRequest,
}

impl PartialEq for SlowEntry {
    fn eq(&self, o: &Self) -> bool {
        self.cmp(o) == std::cmp::Ordering::Equal
    }
}
impl Eq for SlowEntry {}
impl PartialOrd for SlowEntry {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for SlowEntry {
    /// Reversed so a `BinaryHeap` keeps the fastest of the kept requests on
    /// top; ties go to the earlier line.
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        o.req
            .response_time
            .total_cmp(&self.req.response_time)
            .then(self.pos.cmp(&o.pos))
    }
}

/// Counters of what happened to the lines.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LineCounts {
    /// All lines read.
    pub lines: u64,
    /// Empty lines (skipped silently, as alp does).
    pub blank: u64,
    /// Lines that parsed into a request.
    pub parsed: u64,
    /// Parsed requests excluded by the filter.
    pub filtered: u64,
    /// Lines that could not be read.
    pub malformed: u64,
    /// Requests whose timestamp could not be read (left out of the timeline).
    pub bad_time: u64,
}

impl LineCounts {
    fn add(&mut self, o: &LineCounts) {
        self.lines += o.lines;
        self.blank += o.blank;
        self.parsed += o.parsed;
        self.filtered += o.filtered;
        self.malformed += o.malformed;
        self.bad_time += o.bad_time;
    }
}

/// Why a line could not be counted in a route at all.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FeedError {
    /// More distinct routes than the configured limit.
    #[error("more than {0} distinct routes; group them with -m/--matching-groups or --auto-group, or raise --limit")]
    TooManyRoutes(usize),
}

/// The result of analysing a log: routes in first-seen order plus the
/// extras (slowest requests, timeline, malformed examples).
#[derive(Debug, Clone)]
pub struct Analysis {
    /// Routes in the order they first appear in the log.
    pub routes: Vec<RouteStats>,
    /// Line counters.
    pub counts: LineCounts,
    /// The first few malformed lines.
    pub malformed: Vec<Malformed>,
    /// The slowest requests, slowest first.
    pub slow: Vec<SlowRequest>,
    /// Per-bucket statistics, if asked for.
    pub timeline: Option<Timeline>,
    /// The first non-blank lines, to say what a wrong-format input looks like.
    pub head: Vec<Vec<u8>>,
}

fn route_key(method: &[u8], uri: &str, buf: &mut Vec<u8>) {
    buf.clear();
    buf.extend_from_slice(method);
    buf.push(0xff); // never valid UTF-8, so no method/uri pair can collide
    buf.extend_from_slice(uri.as_bytes());
}

impl Analysis {
    /// Appends `later` (the analysis of input that follows this one).
    pub fn merge(&mut self, later: Analysis) {
        let mut index: FxHashMap<(String, String), usize> = self
            .routes
            .iter()
            .enumerate()
            .map(|(i, r)| ((r.method.clone(), r.uri.clone()), i))
            .collect();
        for r in later.routes {
            match index.get(&(r.method.clone(), r.uri.clone())) {
                Some(&i) => self.routes[i].merge(&r),
                None => {
                    index.insert((r.method.clone(), r.uri.clone()), self.routes.len());
                    self.routes.push(r);
                }
            }
        }
        let base = self.counts.lines;
        self.counts.add(&later.counts);
        for mut m in later.malformed {
            if self.malformed.len() < 5 {
                m.line += base;
                self.malformed.push(m);
            }
        }
        let keep = self.slow.len().max(later.slow.len());
        self.slow.extend(later.slow.into_iter().map(|mut s| {
            s.line += base;
            s
        }));
        self.slow.sort_by(|a, b| {
            b.response_time
                .total_cmp(&a.response_time)
                .then(a.line.cmp(&b.line))
        });
        self.slow.truncate(keep);
        match (&mut self.timeline, later.timeline) {
            (Some(a), Some(b)) => a.merge(b),
            (t @ None, b) => *t = b,
            _ => {}
        }
        if self.head.is_empty() {
            self.head = later.head;
        }
    }

    /// Totals over all routes: count and status classes.
    pub fn totals(&self) -> (u64, [u64; 5]) {
        let mut st = [0u64; 5];
        let mut n = 0;
        for r in &self.routes {
            n += r.count;
            for (a, b) in st.iter_mut().zip(r.status) {
                *a += b;
            }
        }
        (n, st)
    }
}

/// The order-dependent part of one chunk, folded chunk after chunk.
pub(crate) struct ChunkOrder {
    /// (route, time summary, body summary) in first-touch order.
    pub summaries: Vec<(u32, Summary, Summary)>,
    /// (route, response time, body bytes) per counted line, in line order.
    pub values: Vec<(u32, f64, f64)>,
}

/// What a [`ChunkOrder`] folds into: a route's two ordered summaries.
pub(crate) trait Ordered {
    /// The response-time and body summaries, and the line-order values if kept.
    fn summaries(&mut self) -> (&mut Summary, &mut Summary, Option<&mut Vec<f64>>);
}

impl Ordered for RouteStats {
    fn summaries(&mut self) -> (&mut Summary, &mut Summary, Option<&mut Vec<f64>>) {
        (&mut self.time, &mut self.body, self.line_order.as_mut())
    }
}

impl Ordered for (Summary, Summary, Option<Vec<f64>>) {
    fn summaries(&mut self) -> (&mut Summary, &mut Summary, Option<&mut Vec<f64>>) {
        (&mut self.0, &mut self.1, self.2.as_mut())
    }
}

impl ChunkOrder {
    /// Appends this chunk to `target[index(id)]` for each route id: min,
    /// max and count by merging, the sums by adding each value in line
    /// order as alp does.
    pub fn fold<T: Ordered>(self, target: &mut [T], index: impl Fn(u32) -> usize) {
        for (id, t, b) in &self.summaries {
            if let Some(r) = target.get_mut(index(*id)) {
                let (rt, rb, _) = r.summaries();
                rt.merge_keep_sum(t);
                rb.merge_keep_sum(b);
            }
        }
        for (id, t, b) in self.values {
            if let Some(r) = target.get_mut(index(id)) {
                let (rt, rb, order) = r.summaries();
                rt.sum += t;
                rb.sum += b;
                if let Some(o) = order {
                    o.push(t);
                }
            }
        }
    }
}

/// Line-by-line accumulator. One per worker thread; the parallel reader
/// folds the ordered parts chunk by chunk and merges the rest at the end.
pub(crate) struct Accumulator {
    pub cfg: Arc<Config>,
    index: FxHashMap<Box<[u8]>, u32>,
    pub routes: Vec<RouteStats>,
    /// Order-dependent summaries of the current chunk, per route.
    scratch: Vec<(Summary, Summary)>,
    /// (route, response time, body bytes) of every counted line of the
    /// current chunk in line order, to replay alp's running sums.
    pub values: Vec<(u32, f64, f64)>,
    /// Routes touched in the current chunk, in first-touch order.
    pub touched: Vec<u32>,
    /// Routes created in the current chunk.
    pub created: Vec<u32>,
    /// (method, normalised uri) -> route, skipping grouping for repeat URIs.
    cache: FxHashMap<Box<[u8]>, u32>,
    key: Vec<u8>,
    pub counts: LineCounts,
    pub malformed: Vec<(Pos, Malformed)>,
    pub slow: BinaryHeap<SlowEntry>,
    pub timeline: Option<TimelineAcc>,
    pub head: Vec<Vec<u8>>,
}

const CACHE_LIMIT: usize = 100_000;

impl Accumulator {
    pub fn new(cfg: Arc<Config>) -> Accumulator {
        let timeline = cfg.timeline.map(TimelineAcc::new);
        Accumulator {
            cfg,
            index: FxHashMap::default(),
            routes: Vec::new(),
            scratch: Vec::new(),
            values: Vec::new(),
            touched: Vec::new(),
            created: Vec::new(),
            cache: FxHashMap::default(),
            key: Vec::new(),
            counts: LineCounts::default(),
            malformed: Vec::new(),
            slow: BinaryHeap::new(),
            timeline,
            head: Vec::new(),
        }
    }

    /// Frees what only reading needs (the route index, the grouping cache,
    /// per-chunk scratch) once the worker has read its last chunk: with a
    /// million distinct URIs that is over 100 MB while the routes gather.
    pub fn shed(&mut self) {
        self.index = FxHashMap::default();
        self.cache = FxHashMap::default();
        self.scratch = Vec::new();
        self.values = Vec::new();
        self.touched = Vec::new();
        self.created = Vec::new();
        self.key = Vec::new();
    }

    /// The route key bytes of local route `id`.
    pub fn key_of(&self, id: u32) -> Vec<u8> {
        let r = &self.routes[id as usize];
        let mut k = Vec::new();
        route_key(r.method.as_bytes(), &r.uri, &mut k);
        k
    }

    fn route_id(&mut self, rec: &Record<'_>) -> Result<u32, FeedError> {
        route_key(&rec.method, &rec.uri, &mut self.key);
        if let Some(&id) = self.cache.get(self.key.as_slice()) {
            return Ok(id);
        }
        let grouped = self.cfg.grouper.route(&rec.uri);
        let mut rkey = Vec::new();
        route_key(&rec.method, &grouped, &mut rkey);
        let id = match self.index.get(rkey.as_slice()) {
            Some(&id) => id,
            None => {
                if self.routes.len() >= self.cfg.route_limit {
                    return Err(FeedError::TooManyRoutes(self.cfg.route_limit));
                }
                let id = self.routes.len() as u32;
                self.index.insert(rkey.into_boxed_slice(), id);
                let mut route = RouteStats::new(
                    String::from_utf8_lossy(&rec.method).into_owned(),
                    grouped.into_owned(),
                );
                if self.cfg.keep_line_order {
                    route.line_order = Some(Vec::new());
                }
                self.routes.push(route);
                self.scratch.push((Summary::default(), Summary::default()));
                self.created.push(id);
                id
            }
        };
        if self.cache.len() >= CACHE_LIMIT {
            self.cache.clear();
        }
        self.cache.insert(self.key.clone().into_boxed_slice(), id);
        Ok(id)
    }

    /// Feeds one raw line (terminator optional). `pos` locates it for reports.
    pub fn feed(&mut self, raw: &[u8], pos: Pos) -> Result<(), FeedError> {
        self.counts.lines += 1;
        let line = trim_line(raw);
        if line.is_empty() {
            self.counts.blank += 1;
            return Ok(());
        }
        if self.head.len() < 5 && pos.chunk == 0 {
            self.head.push(line[..line.len().min(512)].to_vec());
        }
        // No Arc clone here: a shared refcount touched per line would
        // bounce a cache line between the parsing threads.
        let rec = match self.cfg.parser.parse(line) {
            Ok(r) => r,
            // A format's own header line (CloudFront's #Fields) is no request.
            Err(LineError::Header) => {
                self.counts.blank += 1;
                return Ok(());
            }
            Err(e) => {
                self.bad_line(line, e, pos);
                return Ok(());
            }
        };
        self.counts.parsed += 1;
        if let Some(f) = &self.cfg.filter {
            if !f.matches(&rec) {
                self.counts.filtered += 1;
                return Ok(());
            }
        }
        let id = self.route_id(&rec)?;
        let r = &mut self.routes[id as usize];
        r.add_unordered(rec.status, rec.response_time);
        let sc = &mut self.scratch[id as usize];
        if sc.0.n == 0 {
            self.touched.push(id);
        }
        sc.0.add(rec.response_time);
        sc.1.add(rec.body_bytes);
        self.values.push((id, rec.response_time, rec.body_bytes));
        if self.cfg.needs_time() {
            match timestamp::parse(&rec.time) {
                Some(t) => {
                    // A whole-second stamp (nginx $time_iso8601/$time_local)
                    // means "ended during that second": count it there but
                    // take mid-second as the end for time in flight.
                    let whole = !rec.time.contains(&b'.');
                    if let Some(tl) = &mut self.timeline {
                        tl.add(
                            id,
                            t,
                            if whole { t + 0.5 } else { t },
                            rec.response_time,
                            rec.status,
                        );
                    }
                }
                None => self.counts.bad_time += 1,
            }
        }
        if self.cfg.slow > 0 {
            self.offer_slow(&rec, id, pos);
        }
        Ok(())
    }

    fn offer_slow(&mut self, rec: &Record<'_>, id: u32, pos: Pos) {
        let n = self.cfg.slow;
        if self.slow.len() >= n {
            if let Some(top) = self.slow.peek() {
                if rec.response_time <= top.req.response_time {
                    return;
                }
            }
        }
        let r = &self.routes[id as usize];
        self.slow.push(SlowEntry {
            pos,
            req: SlowRequest {
                response_time: rec.response_time,
                line: pos.line,
                time: String::from_utf8_lossy(&rec.time).into_owned(),
                method: r.method.clone(),
                uri: String::from_utf8_lossy(&rec.raw_uri).into_owned(),
                route: r.uri.clone(),
                status: rec.status,
                body_bytes: rec.body_bytes,
            },
        });
        if self.slow.len() > n {
            self.slow.pop();
        }
    }

    fn bad_line(&mut self, line: &[u8], e: LineError, pos: Pos) {
        self.counts.malformed += 1;
        if self.malformed.len() < self.cfg.malformed_examples {
            let text = String::from_utf8_lossy(&line[..line.len().min(120)]).into_owned();
            self.malformed.push((
                pos,
                Malformed {
                    line: pos.line,
                    reason: e.to_string(),
                    text,
                },
            ));
        }
    }

    /// Takes the current chunk's ordered parts: summaries in first-touch
    /// order and the values in line order.
    pub fn take_chunk(&mut self) -> ChunkOrder {
        let summaries = self
            .touched
            .iter()
            .map(|&id| {
                let s = std::mem::take(&mut self.scratch[id as usize]);
                (id, s.0, s.1)
            })
            .collect();
        self.touched.clear();
        self.created.clear();
        ChunkOrder {
            summaries,
            values: std::mem::take(&mut self.values),
        }
    }

    /// Folds the current chunk into the routes' own summaries (sequential use).
    pub fn fold_chunk(&mut self) {
        let chunk = self.take_chunk();
        chunk.fold(&mut self.routes, |id| id as usize);
    }

    /// The analysis of everything fed so far (sequential use: line numbers are absolute).
    pub fn into_analysis(mut self) -> Analysis {
        self.fold_chunk();
        self.analysis_clone()
    }

    fn analysis_clone(&self) -> Analysis {
        let mut slow: Vec<SlowRequest> = self.slow.iter().map(|e| e.req.clone()).collect();
        slow.sort_by(|a, b| {
            b.response_time
                .total_cmp(&a.response_time)
                .then(a.line.cmp(&b.line))
        });
        let names: Vec<(String, String)> = self
            .routes
            .iter()
            .map(|r| (r.method.clone(), r.uri.clone()))
            .collect();
        Analysis {
            routes: self.routes.clone(),
            counts: self.counts,
            malformed: self.malformed.iter().map(|(_, m)| m.clone()).collect(),
            slow,
            timeline: self.timeline.as_ref().map(|t| t.finish(&names)),
            head: self.head.clone(),
        }
    }
}

/// A streaming analysis fed one line at a time, e.g. while following a live
/// access log. Mergeable, so several threads can each own one.
pub struct Aggregator {
    acc: Accumulator,
}

impl Aggregator {
    /// An empty aggregator.
    pub fn new(cfg: Arc<Config>) -> Aggregator {
        Aggregator {
            acc: Accumulator::new(cfg),
        }
    }

    /// Feeds one line (with or without its `\n`).
    pub fn feed(&mut self, line: &[u8]) -> Result<(), FeedError> {
        let n = self.acc.counts.lines + 1;
        self.acc.feed(line, Pos { chunk: 0, line: n })
    }

    /// Lines fed so far.
    pub fn lines(&self) -> u64 {
        self.acc.counts.lines
    }

    /// The analysis so far; the aggregator keeps going afterwards.
    pub fn snapshot(&mut self) -> Analysis {
        self.acc.fold_chunk();
        self.acc.analysis_clone()
    }

    /// The final analysis.
    pub fn finish(self) -> Analysis {
        self.acc.into_analysis()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_follow_alps_rank_rule() {
        let mut r = RouteStats::new("GET".into(), "/".into());
        for v in [0.001, 0.002, 0.003, 1.249, 0.5, 2.5, 0.0] {
            r.add(200, v, 1.0);
        }
        // sorted: 0 .001 .002 .003 .5 1.249 2.5; alp rank(7, 90) = int(8*0.9)-1 = 6
        assert_eq!(alp_rank(7, 90.0), 6);
        assert!(
            (r.percentile(90.0) - 2.5).abs() < 0.0025,
            "{}",
            r.percentile(90.0)
        );
        assert!(
            (r.percentile(50.0) - 0.003).abs() < 1e-6,
            "{}",
            r.percentile(50.0)
        );
        assert_eq!(r.percentile(100.0), 2.5);
        assert_eq!(r.percentile(0.0), 0.0);
    }
}
