//! Results of a run: per-phase and overall statistics, the per-second
//! timeline and per-target numbers, all built from HdrHistograms (never from
//! sorted samples). Serialises to the JSON documented in docs/bench-json.md.

use crate::plan::Model;
use crate::slo::Verdict;
use hdrhistogram::Histogram;
use serde::Serialize;

/// Significant digits of phase, target and run histograms.
pub const SIGFIG: u8 = 3;
/// Significant digits of per-second histograms (1% value precision keeps a
/// long run's memory bounded).
pub const SIGFIG_SECOND: u8 = 2;

/// Kinds of transport errors. A run's `errors` are these plus 5xx answers
/// (counted in [`StatusCounts`]); 4xx answers are not errors.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ErrorKind {
    /// The target refused the connection (nothing listening).
    ConnectRefused,
    /// The connection was not established within the timeout.
    ConnectTimeout,
    /// The connection was reset or closed before a complete response.
    Reset,
    /// No complete response within the timeout.
    ReadTimeout,
    /// The response was not valid HTTP/1.x.
    Malformed,
    /// Any other socket error.
    Other,
    /// HTTP/2: the server sent GOAWAY and the stream was not answered.
    GoAway,
    /// HTTP/2: the server reset the stream (RST_STREAM, any code but
    /// REFUSED_STREAM).
    StreamReset,
    /// HTTP/2: the server refused the stream (RST_STREAM REFUSED_STREAM:
    /// it did no work on it, e.g. above its concurrent-stream limit).
    RefusedStream,
}

impl ErrorKind {
    /// Every kind, in reporting order.
    pub const ALL: [ErrorKind; 9] = [
        ErrorKind::ConnectRefused,
        ErrorKind::ConnectTimeout,
        ErrorKind::Reset,
        ErrorKind::ReadTimeout,
        ErrorKind::Malformed,
        ErrorKind::Other,
        ErrorKind::GoAway,
        ErrorKind::StreamReset,
        ErrorKind::RefusedStream,
    ];

    /// The JSON key / table label of the kind.
    pub fn name(self) -> &'static str {
        match self {
            ErrorKind::ConnectRefused => "connect_refused",
            ErrorKind::ConnectTimeout => "connect_timeout",
            ErrorKind::Reset => "reset",
            ErrorKind::ReadTimeout => "read_timeout",
            ErrorKind::Malformed => "malformed",
            ErrorKind::Other => "other",
            ErrorKind::GoAway => "goaway",
            ErrorKind::StreamReset => "rst_stream",
            ErrorKind::RefusedStream => "refused_stream",
        }
    }
}

/// Transport errors by kind.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct ErrorCounts {
    /// Connection refused.
    pub connect_refused: u64,
    /// Connect did not complete within the timeout.
    pub connect_timeout: u64,
    /// Reset or closed before a complete response.
    pub reset: u64,
    /// No complete response within the timeout.
    pub read_timeout: u64,
    /// Not valid HTTP/1.x.
    pub malformed: u64,
    /// Other socket errors.
    pub other: u64,
    /// HTTP/2 streams lost to the server's GOAWAY (absent when none, so
    /// HTTP/1.1 results read as before).
    #[serde(skip_serializing_if = "is_zero")]
    pub goaway: u64,
    /// HTTP/2 streams the server reset (RST_STREAM).
    #[serde(skip_serializing_if = "is_zero")]
    pub rst_stream: u64,
    /// HTTP/2 streams the server refused (RST_STREAM REFUSED_STREAM).
    #[serde(skip_serializing_if = "is_zero")]
    pub refused_stream: u64,
}

fn is_zero(v: &u64) -> bool {
    *v == 0
}

impl ErrorCounts {
    /// Counts one error.
    pub fn add(&mut self, kind: ErrorKind) {
        *self.slot(kind) += 1;
    }

    /// The count of one kind.
    pub fn get(&self, kind: ErrorKind) -> u64 {
        match kind {
            ErrorKind::ConnectRefused => self.connect_refused,
            ErrorKind::ConnectTimeout => self.connect_timeout,
            ErrorKind::Reset => self.reset,
            ErrorKind::ReadTimeout => self.read_timeout,
            ErrorKind::Malformed => self.malformed,
            ErrorKind::Other => self.other,
            ErrorKind::GoAway => self.goaway,
            ErrorKind::StreamReset => self.rst_stream,
            ErrorKind::RefusedStream => self.refused_stream,
        }
    }

    fn slot(&mut self, kind: ErrorKind) -> &mut u64 {
        match kind {
            ErrorKind::ConnectRefused => &mut self.connect_refused,
            ErrorKind::ConnectTimeout => &mut self.connect_timeout,
            ErrorKind::Reset => &mut self.reset,
            ErrorKind::ReadTimeout => &mut self.read_timeout,
            ErrorKind::Malformed => &mut self.malformed,
            ErrorKind::Other => &mut self.other,
            ErrorKind::GoAway => &mut self.goaway,
            ErrorKind::StreamReset => &mut self.rst_stream,
            ErrorKind::RefusedStream => &mut self.refused_stream,
        }
    }

    /// All kinds together.
    pub fn total(&self) -> u64 {
        ErrorKind::ALL.iter().map(|k| self.get(*k)).sum()
    }

    /// Adds another set of counts.
    pub fn merge(&mut self, o: &ErrorCounts) {
        for k in ErrorKind::ALL {
            *self.slot(k) += o.get(k);
        }
    }
}

/// Responses by status class.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct StatusCounts {
    /// 1xx
    #[serde(rename = "1xx")]
    pub s1xx: u64,
    /// 2xx
    #[serde(rename = "2xx")]
    pub s2xx: u64,
    /// 3xx
    #[serde(rename = "3xx")]
    pub s3xx: u64,
    /// 4xx
    #[serde(rename = "4xx")]
    pub s4xx: u64,
    /// 5xx
    #[serde(rename = "5xx")]
    pub s5xx: u64,
}

impl StatusCounts {
    /// Counts one response.
    pub fn add(&mut self, status: u16) {
        match status / 100 {
            1 => self.s1xx += 1,
            2 => self.s2xx += 1,
            3 => self.s3xx += 1,
            4 => self.s4xx += 1,
            _ => self.s5xx += 1,
        }
    }

    /// Adds another set of counts.
    pub fn merge(&mut self, o: &StatusCounts) {
        self.s1xx += o.s1xx;
        self.s2xx += o.s2xx;
        self.s3xx += o.s3xx;
        self.s4xx += o.s4xx;
        self.s5xx += o.s5xx;
    }
}

/// Latency summary in milliseconds (floats, from the histogram).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct LatencySummary {
    /// Minimum.
    pub min: f64,
    /// Mean.
    pub mean: f64,
    /// Standard deviation.
    pub stdev: f64,
    /// Maximum.
    pub max: f64,
    /// Median.
    pub p50: f64,
    /// 75th percentile.
    pub p75: f64,
    /// 80th percentile.
    pub p80: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    #[serde(rename = "p99.9")]
    pub p99_9: f64,
    /// 99.99th percentile.
    #[serde(rename = "p99.99")]
    pub p99_99: f64,
}

fn us_to_ms(v: u64) -> f64 {
    v as f64 / 1000.0
}

impl LatencySummary {
    /// Summarises a histogram of microseconds.
    pub fn from_histogram(h: &Histogram<u64>) -> LatencySummary {
        if h.is_empty() {
            return LatencySummary::default();
        }
        let q = |p: f64| us_to_ms(h.value_at_quantile(p / 100.0));
        LatencySummary {
            min: us_to_ms(h.min()),
            mean: h.mean() / 1000.0,
            stdev: h.stdev() / 1000.0,
            max: us_to_ms(h.max()),
            p50: q(50.0),
            p75: q(75.0),
            p80: q(80.0),
            p90: q(90.0),
            p95: q(95.0),
            p99: q(99.0),
            p99_9: q(99.9),
            p99_99: q(99.99),
        }
    }
}

/// Open-model schedule keeping: how far sends fell behind their intended time.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ScheduleLag {
    /// Requests the schedule called for in the phase.
    pub intended: u64,
    /// Requests sent more than 1 ms after their intended time (no free
    /// connection, or the generator itself was late).
    pub late: u64,
    /// Of the late requests, those that waited because every connection
    /// (up to the `-c` cap) was busy: the target was slower than the rate
    /// needs. The rest of `late` is the generator's own lag.
    pub waited_for_connection: u64,
    /// Requests due but never sent before the phase ended. Each is charged
    /// in the latency percentiles as (end of the phase - its intended send
    /// time), the least it would have taken: leaving them out would hide
    /// the stall or backlog that kept them from being sent.
    pub unsent: u64,
    /// Largest delay between intended and actual send, ms.
    pub max_lag_ms: f64,
    /// Mean delay between intended and actual send, ms.
    pub mean_lag_ms: f64,
}

impl ScheduleLag {
    /// Adds another thread's counts (max of maxima, weighted mean).
    pub fn merge(&mut self, o: &ScheduleLag) {
        let sent_a = self.intended.saturating_sub(self.unsent) as f64;
        let sent_b = o.intended.saturating_sub(o.unsent) as f64;
        if sent_a + sent_b > 0.0 {
            self.mean_lag_ms =
                (self.mean_lag_ms * sent_a + o.mean_lag_ms * sent_b) / (sent_a + sent_b);
        }
        self.intended += o.intended;
        self.late += o.late;
        self.waited_for_connection += o.waited_for_connection;
        self.unsent += o.unsent;
        self.max_lag_ms = self.max_lag_ms.max(o.max_lag_ms);
    }
}

/// Statistics of one slice of a run (a phase, a target or the whole run).
#[derive(Debug, Clone, Serialize)]
pub struct Stats {
    /// Complete responses received (any status).
    pub requests: u64,
    /// Wall time of the slice, seconds.
    pub duration_s: f64,
    /// Responses per second.
    pub rps: f64,
    /// Response bytes received (head and body).
    pub bytes: u64,
    /// Response bytes per second.
    pub bytes_per_s: f64,
    /// Errors: transport errors plus 5xx answers (one definition for every
    /// report, gate and SLO).
    pub errors: u64,
    /// `errors` as a percentage of attempts (responses plus transport errors).
    pub error_rate: f64,
    /// Of `errors`, the transport errors (all kinds).
    pub errors_transport: u64,
    /// Transport errors by kind.
    pub errors_by_kind: ErrorCounts,
    /// Responses by status class.
    pub status: StatusCounts,
    /// Responses by exact status code (`"200"`, `"503"`).
    pub status_codes: std::collections::BTreeMap<String, u64>,
    /// TCP connections the client opened.
    pub connects: u64,
    /// Responses with `Connection: close` and connections the server closed
    /// (idle, or reset mid-request).
    pub server_closed: u64,
    /// Requests still unanswered when the duration ended (after a grace of
    /// at most 1 s): not responses, not errors; their outcome is unknown.
    pub unfinished: u64,
    /// Latency. Open model: from each request's intended send time
    /// (coordinated omission corrected). Closed model: service time.
    pub latency_ms: LatencySummary,
    /// Open model only: service time, from the actual send.
    pub service_ms: Option<LatencySummary>,
    /// Open model only: schedule keeping.
    pub schedule: Option<ScheduleLag>,
    /// The latency histogram (µs), for storage and further slicing.
    #[serde(skip)]
    pub histogram: Histogram<u64>,
    /// TLS handshakes, redirects followed, decoded sizes; absent for plain
    /// HTTP runs.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub transport: Option<crate::transport::TransportStats>,
    /// gRPC calls by `grpc-status` code (`"0"` is OK; every other code is
    /// counted in `errors`); absent for plain HTTP runs.
    #[serde(skip_serializing_if = "std::collections::BTreeMap::is_empty")]
    pub grpc_status: std::collections::BTreeMap<String, u64>,
}

impl Stats {
    /// The latency at percentile `q` (0-100) in ms, from the histogram.
    pub fn latency_hist_ms(&self, q: f64) -> f64 {
        if self.histogram.is_empty() {
            return 0.0;
        }
        us_to_ms(self.histogram.value_at_quantile(q / 100.0))
    }

    /// Failures as the SLO counts them: transport errors plus 5xx answers
    /// (the same as [`Stats::errors`]).
    pub fn slo_errors(&self) -> u64 {
        self.errors
    }

    /// [`Stats::errors`] as a percentage of attempts (responses + transport
    /// errors).
    pub fn error_rate_pct(&self) -> f64 {
        self.error_rate
    }
}

/// Mutable accumulator behind [`Stats`]; mergeable across threads.
#[derive(Debug, Clone)]
pub struct Tally {
    /// Complete responses.
    pub requests: u64,
    /// Response bytes.
    pub bytes: u64,
    /// Transport errors by kind.
    pub errors: ErrorCounts,
    /// Responses by status class.
    pub status: StatusCounts,
    /// Latency (µs), corrected in the open model.
    pub latency: Histogram<u64>,
    /// Service time (µs), open model only.
    pub service: Option<Histogram<u64>>,
    /// Schedule keeping, open model only.
    pub schedule: Option<ScheduleLag>,
    /// Responses by exact status code; a handful of codes, so a short list.
    pub codes: Vec<(u16, u64)>,
    /// TCP connections opened.
    pub connects: u64,
    /// Responses with `Connection: close`, and connections the server closed.
    pub server_closed: u64,
    /// Requests still unanswered when the duration (plus a short grace)
    /// ended: neither responses nor errors, because their outcome is unknown.
    pub unfinished: u64,
    /// TLS handshakes, redirects, compression.
    pub transport: crate::transport::TransportTally,
    /// gRPC calls by `grpc-status` code; a handful of codes, so a short list.
    pub grpc: Vec<(u32, u64)>,
}

impl Tally {
    /// Counts one response's exact status code.
    pub fn add_code(&mut self, status: u16) {
        match self.codes.iter_mut().find(|(c, _)| *c == status) {
            Some(slot) => slot.1 += 1,
            None => self.codes.push((status, 1)),
        }
    }

    /// Counts one gRPC call's `grpc-status` (0 is OK, any other code an error).
    pub fn add_grpc(&mut self, code: u32) {
        match self.grpc.iter_mut().find(|(c, _)| *c == code) {
            Some(slot) => slot.1 += 1,
            None => self.grpc.push((code, 1)),
        }
    }

    /// gRPC calls that ended with a non-OK `grpc-status`.
    pub fn grpc_errors(&self) -> u64 {
        self.grpc
            .iter()
            .filter(|(c, _)| *c != 0)
            .map(|(_, n)| n)
            .sum()
    }

    /// An empty tally with histograms tracking 1 µs to `high_us`.
    pub fn new(high_us: u64, sigfig: u8, open: bool) -> Tally {
        let h = || new_histogram(high_us, sigfig);
        Tally {
            requests: 0,
            bytes: 0,
            errors: ErrorCounts::default(),
            status: StatusCounts::default(),
            latency: h(),
            service: open.then(h),
            schedule: open.then(ScheduleLag::default),
            codes: Vec::new(),
            connects: 0,
            server_closed: 0,
            unfinished: 0,
            transport: crate::transport::TransportTally::default(),
            grpc: Vec::new(),
        }
    }

    /// Adds another tally (histograms merge losslessly when their precision matches).
    pub fn merge(&mut self, o: &Tally) {
        self.requests += o.requests;
        self.bytes += o.bytes;
        self.errors.merge(&o.errors);
        self.status.merge(&o.status);
        for &(code, n) in &o.codes {
            match self.codes.iter_mut().find(|(c, _)| *c == code) {
                Some(slot) => slot.1 += n,
                None => self.codes.push((code, n)),
            }
        }
        for &(code, n) in &o.grpc {
            match self.grpc.iter_mut().find(|(c, _)| *c == code) {
                Some(slot) => slot.1 += n,
                None => self.grpc.push((code, n)),
            }
        }
        self.connects += o.connects;
        self.server_closed += o.server_closed;
        self.unfinished += o.unfinished;
        self.transport.merge(&o.transport);
        add_hist(&mut self.latency, &o.latency);
        match (&mut self.service, &o.service) {
            (Some(a), Some(b)) => add_hist(a, b),
            (None, Some(b)) => self.service = Some(b.clone()),
            _ => {}
        }
        match (&mut self.schedule, &o.schedule) {
            (Some(a), Some(b)) => a.merge(b),
            (None, Some(b)) => self.schedule = Some(b.clone()),
            _ => {}
        }
    }

    /// Errors: transport errors plus 5xx answers plus gRPC calls whose
    /// `grpc-status` was not OK.
    pub fn errors(&self) -> u64 {
        self.errors.total() + self.status.s5xx + self.grpc_errors()
    }

    /// [`Tally::errors`] as a percentage of attempts (responses plus
    /// transport errors); 0 without attempts.
    pub fn error_rate_pct(&self) -> f64 {
        let attempts = self.requests + self.errors.total();
        if attempts == 0 {
            0.0
        } else {
            self.errors() as f64 / attempts as f64 * 100.0
        }
    }

    /// Freezes the tally over `duration_s` seconds.
    pub fn stats(&self, duration_s: f64) -> Stats {
        let per_s = |v: u64| {
            if duration_s > 0.0 {
                v as f64 / duration_s
            } else {
                0.0
            }
        };
        Stats {
            requests: self.requests,
            duration_s,
            rps: per_s(self.requests),
            bytes: self.bytes,
            bytes_per_s: per_s(self.bytes),
            errors: self.errors(),
            error_rate: self.error_rate_pct(),
            errors_transport: self.errors.total(),
            errors_by_kind: self.errors.clone(),
            status: self.status.clone(),
            status_codes: self
                .codes
                .iter()
                .map(|(c, n)| (c.to_string(), *n))
                .collect(),
            connects: self.connects,
            server_closed: self.server_closed,
            unfinished: self.unfinished,
            latency_ms: LatencySummary::from_histogram(&self.latency),
            service_ms: self.service.as_ref().map(LatencySummary::from_histogram),
            schedule: self.schedule.clone(),
            histogram: self.latency.clone(),
            transport: self.transport.stats(),
            grpc_status: self.grpc.iter().map(|(c, n)| (c.to_string(), *n)).collect(),
        }
    }
}

pub(crate) fn new_histogram(high_us: u64, sigfig: u8) -> Histogram<u64> {
    // low = 1 µs, high clamped to >= 2 and sigfig in 1..=5 are always valid bounds.
    Histogram::new_with_bounds(1, high_us.max(2), sigfig.clamp(1, 5))
        .expect("histogram bounds are valid by construction")
}

/// Adds `b` into `a`; values beyond `a`'s range saturate at its top rather
/// than being lost.
pub fn add_hist(a: &mut Histogram<u64>, b: &Histogram<u64>) {
    if a.add(b).is_err() {
        for v in b.iter_recorded() {
            a.saturating_record_n(v.value_iterated_to(), v.count_at_value());
        }
    }
}

/// One second of the run.
#[derive(Debug, Clone, Serialize)]
pub struct Second {
    /// Seconds since the run started (`started_unix_ms`).
    pub t_s: u64,
    /// Responses completed in this second.
    pub requests: u64,
    /// Responses per second (equals `requests`).
    pub rps: f64,
    /// Errors in this second: transport errors plus 5xx answers.
    pub errors: u64,
    /// Of `errors`, transport errors.
    pub errors_transport: u64,
    /// Of the transport errors, timeouts (connect and read).
    pub timeouts: u64,
    /// Responses by status class.
    pub status: StatusCounts,
    /// Median latency, ms.
    pub p50_ms: f64,
    /// 90th percentile latency, ms.
    pub p90_ms: f64,
    /// 99th percentile latency, ms.
    pub p99_ms: f64,
    /// Maximum latency, ms.
    pub max_ms: f64,
    /// Requests in flight: the most within the second, summed over the
    /// load threads (each thread's own maximum).
    pub inflight: u64,
    /// Connections open at the end of the second.
    pub connections: u64,
    /// TCP connections opened in the second.
    pub connects: u64,
    /// Responses with `Connection: close` and connections the server
    /// closed, in the second.
    pub server_closed: u64,
    /// Latency histogram of this second (µs, 2 significant digits).
    #[serde(skip)]
    pub histogram: Histogram<u64>,
    /// Per-target histograms of this second, indexed like [`Report::targets`]
    /// (`None` where a target had no response that second). Empty when the
    /// run has one target (then `histogram` is that target's).
    #[serde(skip)]
    pub per_target: Vec<Option<Histogram<u64>>>,
    /// Per target (when several): (errors, of which transport errors) in
    /// this second.
    #[serde(skip)]
    pub per_target_errors: Vec<(u64, u64)>,
}

/// One phase: a load level held for a while.
#[derive(Debug, Clone, Serialize)]
pub struct PhaseReport {
    /// 0-based position among the measured phases.
    pub index: usize,
    /// `c=10` or `r=4000`.
    pub label: String,
    /// Connections (closed model) or the connection cap (open model).
    pub connections: usize,
    /// Offered rate, requests/s (open model), else null.
    pub rate: Option<f64>,
    /// Start, ms since `started_unix_ms`.
    pub start_ms: f64,
    /// End, ms since `started_unix_ms`.
    pub end_ms: f64,
    /// The phase's numbers.
    #[serde(flatten)]
    pub stats: Stats,
    /// The SLO verdict of this phase, when an SLO was given.
    pub slo: Option<Verdict>,
    /// A `--stages` phase: the level it ramped from and to (rate or
    /// connections); absent for a phase held at one level.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ramp: Option<crate::stages::Ramp>,
}

impl PhaseReport {
    /// The load level the phase held (rate in the open model, else
    /// connections); a ramp's level at its end.
    pub fn load(&self) -> f64 {
        if let Some(r) = self.ramp {
            return r.to;
        }
        self.rate.unwrap_or(self.connections as f64)
    }
}

/// Results for one target URL over the whole run (warm-up excluded).
#[derive(Debug, Clone, Serialize)]
pub struct TargetReport {
    /// HTTP method.
    pub method: String,
    /// URL as given.
    pub url: String,
    /// Rotation weight.
    pub weight: u32,
    /// The target's numbers.
    #[serde(flatten)]
    pub stats: Stats,
}

/// One thread's CPU use, the basis of the generator self-check.
#[derive(Debug, Clone, Serialize)]
pub struct ThreadCpu {
    /// Thread index.
    pub thread: usize,
    /// CPU time the thread used / wall time, percent of one core.
    pub cpu_pct: f64,
}

/// A warm-up interval (excluded from every number).
#[derive(Debug, Clone, Serialize)]
pub struct Span {
    /// Start, ms since `started_unix_ms`.
    pub start_ms: f64,
    /// End, ms since `started_unix_ms`.
    pub end_ms: f64,
}

/// Everything a run measured.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    /// Schema version of the JSON.
    pub version: u32,
    /// `closed` or `open`.
    pub model: Model,
    /// Wall-clock anchor: Unix time in ms when the run (its warm-up, if
    /// any) started. Every `*_ms` offset and `t_s` counts from here.
    pub started_unix_ms: u64,
    /// Run length including warm-up, ms.
    pub duration_ms: f64,
    /// True when the run was interrupted (Ctrl-C) and the numbers cover only
    /// what was measured until then.
    pub partial: bool,
    /// Event-loop threads used.
    pub threads: usize,
    /// Whether connections were reused.
    pub keepalive: bool,
    /// `h2` (HTTP/2 over TLS, negotiated by ALPN) or `h2c` (HTTP/2 over
    /// plain TCP, prior knowledge), with `+grpc` for gRPC calls; absent for
    /// HTTP/1.1, so those results read as before.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub protocol: Option<String>,
    /// HTTP/2: concurrent streams per connection (`--streams`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub streams: Option<usize>,
    /// The warm-up interval, if any.
    pub warmup: Option<Span>,
    /// Totals over all measured phases.
    #[serde(flatten)]
    pub overall: Stats,
    /// One entry per measured phase, in the order run.
    pub phases: Vec<PhaseReport>,
    /// Index into `phases` of the knee (see [`crate::knee`]); null when the
    /// run has fewer than three phases or throughput never stopped rising.
    pub knee: Option<usize>,
    /// The SLO verdict over the whole run, when an SLO was given.
    pub slo: Option<Verdict>,
    /// Index of the highest-load phase that met the SLO.
    pub best_passing_phase: Option<usize>,
    /// `--find-max`: the highest rate found to meet the SLO.
    pub max_rate: Option<f64>,
    /// Per-target results.
    pub targets: Vec<TargetReport>,
    /// Per-second timeline over the whole run, warm-up included (its seconds
    /// are inside `warmup`).
    pub timeline: Vec<Second>,
    /// Per-thread CPU use.
    pub generator: Vec<ThreadCpu>,
    /// Self-check warnings: when present, the numbers may describe keisoku,
    /// not the target.
    pub warnings: Vec<String>,
    /// Observations about the target (e.g. the open model's connection cap
    /// was reached), not about the generator.
    pub notes: Vec<String>,
    /// The first message seen for each error kind (e.g. the OS error of a
    /// refused connect), to say why a run failed.
    pub error_reasons: Vec<String>,
    /// `--scenario`: iterations and per-step failures (the steps' own
    /// numbers are in `targets`, one per step).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub scenario: Option<crate::scenario::report::ScenarioReport>,
}

impl Report {
    /// True when not a single response arrived (the target is unreachable
    /// or broken); [`Report::error_reasons`] says why.
    pub fn nothing_succeeded(&self) -> bool {
        self.overall.requests == 0
    }

    /// Why nothing succeeded, for the one-line error: the distinct error
    /// reasons, or that no response arrived when there were none.
    pub fn failure_reason(&self) -> String {
        if self.error_reasons.is_empty() && self.overall.unfinished > 0 {
            format!(
                "no response arrived: {} requests were still unanswered when the duration ended",
                self.overall.unfinished
            )
        } else if self.error_reasons.is_empty() {
            "no response arrived".to_string()
        } else {
            self.error_reasons.join("; ")
        }
    }
}
