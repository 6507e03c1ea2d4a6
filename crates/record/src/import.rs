//! Another load tool's client results (JMeter, k6, vegeta, wrk; read by
//! `keisoku_clientlog`) stored in a run in the shape keisoku's own load
//! takes (see [`crate::load`]): the results object with a `source`, one
//! phase spanning the requests, the `client.*` series, per-route seconds
//! and route rows, all on the run's clock. Every view then reads them as
//! it reads a `run`'s.
//!
//! Requests are placed by the time their response ended, Unix ms minus the
//! run's start; those outside the recording's window are kept and counted
//! in `source.before_run` / `source.after_run`. A file without request
//! times (wrk text) gives the results object alone: no phase, no series.

use crate::Recording;
use keisoku_clientlog::{Aggregator, Read, SecondAgg, Summary, Totals};
pub use keisoku_clientlog::{Encoding, Format};
use keisoku_load::report::LatencySummary;
use keisoku_store::{Phase, RouteRow, RouteSecond, RouteSource, SeriesBuffer, Store, StoreError};
use serde_json::{json, Value};
use std::path::Path;

/// Seconds of aggregates written to the store at once.
const BATCH_SECONDS: usize = 60;

/// Why results could not be imported.
#[derive(Debug, thiserror::Error)]
pub enum ImportError {
    /// The file could not be read or is not understood (the user's input).
    #[error(transparent)]
    Read(#[from] keisoku_clientlog::Error),
    /// The file holds no request.
    #[error("{0}: no requests in it (k6: no http_req_duration points)")]
    Empty(String),
    /// The run already has client results; importing would mix two loads.
    #[error("run {0} already has client results; import into a run recorded without them")]
    HasResults(String),
    /// Writing the run failed.
    #[error("storing the imported results: {0}")]
    Store(#[from] StoreError),
}

impl ImportError {
    /// True when the user's input is at fault (exit 2), not the machine.
    pub fn is_input(&self) -> bool {
        !matches!(self, ImportError::Store(_))
    }
}

/// What an import stored, for the command's message.
#[derive(Debug, Clone)]
pub struct Imported {
    /// The file's encoding.
    pub encoding: Encoding,
    /// Requests read (answers plus transport errors).
    pub requests: u64,
    /// Errors: 5xx plus transport (`None` for wrk, which does not tell
    /// 4xx from 5xx).
    pub errors: Option<u64>,
    /// Requests that ended before the run started / after it ended.
    pub before_run: u64,
    /// Requests that ended after the run's window.
    pub after_run: u64,
    /// False for a summary without request times (wrk).
    pub per_second: bool,
}

impl Recording {
    /// Imports a tool's results file into this recording (`record
    /// --client-results`), the window being the recording so far.
    pub fn import_client_results(
        &mut self,
        path: &Path,
        format: Option<Format>,
    ) -> Result<Imported, ImportError> {
        let window_ms = self.origin.elapsed().as_secs_f64() * 1000.0;
        import(
            self.store(),
            &self.run.clone(),
            self.started_unix_ms,
            window_ms,
            path,
            format,
        )
    }
}

/// Imports `path` into the stored run `run` (started at `started_unix_ms`,
/// recorded for `window_ms`), which must have no client results yet.
pub fn import(
    store: &Store,
    run: &str,
    started_unix_ms: i64,
    window_ms: f64,
    path: &Path,
    format: Option<Format>,
) -> Result<Imported, ImportError> {
    if !store.results(run)?.is_null() {
        return Err(ImportError::HasResults(run.to_string()));
    }
    let t0 = started_unix_ms as f64;
    let mut writer = SecondWriter {
        store,
        run,
        series: SeriesBuffer::default(),
        routes: Vec::new(),
        pending: 0,
        failed: None,
        before_seconds: 0,
    };
    let (encoding, read) = {
        let mut agg = Aggregator::new(Some(t0), |s| writer.add(s)).window(t0, t0 + window_ms);
        keisoku_clientlog::read(path, format, &mut agg)?
    };
    writer.flush();
    if let Some(e) = writer.failed.take() {
        return Err(e.into());
    }
    let shown = path.display().to_string();
    match read {
        Read::Samples(t) => {
            if t.samples == 0 {
                return Err(ImportError::Empty(shown));
            }
            store_totals(store, run, t0, &t, encoding, &shown, writer.before_seconds)?;
            Ok(Imported {
                encoding,
                requests: t.samples,
                errors: Some(t.errors),
                before_run: t.before_window,
                after_run: t.after_window,
                per_second: true,
            })
        }
        Read::Summary(s) => {
            if s.requests == 0 {
                return Err(ImportError::Empty(shown));
            }
            store_summary(store, run, &s, encoding, &shown)?;
            Ok(Imported {
                encoding,
                requests: s.requests,
                errors: None,
                before_run: 0,
                after_run: 0,
                per_second: false,
            })
        }
    }
}

/// Writes handed-on seconds in batches; remembers the first failure.
struct SecondWriter<'a> {
    store: &'a Store,
    run: &'a str,
    series: SeriesBuffer,
    routes: Vec<RouteSecond>,
    pending: usize,
    failed: Option<StoreError>,
    /// Seconds before the run's start: on the series, not in the per-route
    /// seconds (which count from the run's start).
    before_seconds: u64,
}

impl SecondWriter<'_> {
    fn add(&mut self, s: SecondAgg) {
        if self.failed.is_some() {
            return;
        }
        // A second's point sits at its end, as the load engine's do.
        let t = (s.second as f64 + 1.0) * 1000.0;
        let mut push = |name: &str, unit: &str, v: f64| self.series.push(name, unit, t, v);
        push("client.rps", "/s", s.responses as f64);
        push("client.errors", "/s", s.errors as f64);
        push("client.errors_transport", "/s", s.transport_errors as f64);
        for (i, class) in ["1xx", "2xx", "3xx", "4xx", "5xx"].iter().enumerate() {
            push(&format!("client.status_{class}"), "/s", s.status[i] as f64);
        }
        if !s.histogram.is_empty() {
            let q = |p: f64| s.histogram.value_at_quantile(p) as f64 / 1000.0;
            push("client.p50_ms", "ms", q(0.5));
            push("client.p90_ms", "ms", q(0.9));
            push("client.p99_ms", "ms", q(0.99));
            push("client.max_ms", "ms", s.histogram.max() as f64 / 1000.0);
        }
        match u32::try_from(s.second) {
            Ok(second) => {
                for r in s.routes.into_values() {
                    self.routes.push(RouteSecond {
                        method: r.method,
                        route: r.label,
                        second,
                        histogram: r.histogram,
                        errors: r.errors,
                        transport_errors: r.transport_errors,
                    });
                }
            }
            Err(_) => self.before_seconds += 1,
        }
        self.pending += 1;
        if self.pending >= BATCH_SECONDS {
            self.flush();
        }
    }

    fn flush(&mut self) {
        if self.failed.is_some() {
            return;
        }
        self.pending = 0;
        let routes = std::mem::take(&mut self.routes);
        let r = self.series.flush(self.store, self.run).and_then(|()| {
            self.store
                .put_route_seconds(self.run, RouteSource::Client, &routes)
        });
        if let Err(e) = r {
            self.failed = Some(e);
        }
    }
}

fn status_json(s: &[u64; 5]) -> Value {
    json!({"1xx": s[0], "2xx": s[1], "3xx": s[2], "4xx": s[3], "5xx": s[4]})
}

/// The tool behind an encoding, as a run's `source.tool` names it.
fn tool(e: Encoding) -> &'static str {
    match e.format() {
        Format::Jtl => "jmeter",
        Format::K6 => "k6",
        Format::Vegeta => "vegeta",
        Format::Wrk => "wrk",
    }
}

fn store_totals(
    store: &Store,
    run: &str,
    t0: f64,
    t: &Totals,
    encoding: Encoding,
    path: &str,
    before_seconds: u64,
) -> Result<(), StoreError> {
    let first = t.first_start_unix_ms.unwrap_or(t0);
    let last = t.last_end_unix_ms.unwrap_or(first);
    let secs = ((last - first) / 1000.0).max(1e-3);
    let attempts = t.responses + t.transport_errors;
    let error_rate = if attempts == 0 {
        0.0
    } else {
        t.errors as f64 / attempts as f64 * 100.0
    };
    let latency = LatencySummary::from_histogram(&t.histogram);
    let codes: serde_json::Map<String, Value> = t
        .status_codes
        .iter()
        .map(|(c, n)| (c.to_string(), json!(n)))
        .collect();
    let mut notes = Vec::new();
    if t.before_window > 0 || t.after_window > 0 {
        notes.push(format!(
            "{} requests ended before the run started and {} after it ended: kept, on the run's clock",
            t.before_window, t.after_window
        ));
    }
    if before_seconds > 0 {
        notes.push(format!(
            "{before_seconds} seconds before the run's start are in the series, not in the per-route seconds"
        ));
    }
    if t.late > 0 {
        notes.push(format!(
            "{} requests came more than {} s out of time order: in the totals, not in the per-second numbers",
            t.late,
            keisoku_clientlog::aggregate::LATE_WINDOW_S
        ));
    }
    if t.routes_folded > 0 {
        notes.push(format!(
            "{} requests past {} distinct labels are under \"{}\"",
            t.routes_folded,
            keisoku_clientlog::aggregate::MAX_ROUTES,
            keisoku_clientlog::aggregate::OTHER_ROUTES
        ));
    }
    let stats = json!({
        "requests": t.responses,
        "duration_s": secs,
        "rps": t.responses as f64 / secs,
        "bytes": t.bytes,
        "bytes_per_s": t.bytes as f64 / secs,
        "errors": t.errors,
        "error_rate": error_rate,
        "errors_transport": t.transport_errors,
        "status": status_json(&t.status),
        "status_codes": codes,
        "latency_ms": latency,
    });
    let phase_row = Phase {
        index: 0,
        label: tool(encoding).into(),
        start_ms: first - t0,
        end_ms: last - t0,
        warmup: false,
        connections: None,
        rate: None,
    };
    let mut phase = stats.clone();
    if let Value::Object(m) = &mut phase {
        m.insert("index".into(), json!(0));
        m.insert("label".into(), json!(phase_row.label));
        m.insert("connections".into(), Value::Null);
        m.insert("rate".into(), Value::Null);
        m.insert("start_ms".into(), json!(phase_row.start_ms));
        m.insert("end_ms".into(), json!(phase_row.end_ms));
    }
    let mut results = stats;
    if let Value::Object(m) = &mut results {
        m.insert("version".into(), json!(1));
        m.insert("partial".into(), json!(false));
        m.insert("phases".into(), json!([phase]));
        m.insert("notes".into(), json!(notes));
        m.insert(
            "source".into(),
            json!({
                "tool": tool(encoding),
                "format": encoding.format().name(),
                "encoding": encoding.name(),
                "describe": encoding.describe(),
                "file": path,
                "per_second": true,
                "samples": t.samples,
                "failed_by_tool": t.failed,
                "error_kinds": t.error_kinds,
                "before_run": t.before_window,
                "after_run": t.after_window,
                "late": t.late,
            }),
        );
    }
    let p99 = (!t.histogram.is_empty()).then_some(latency.p99);
    store.put_results(run, &results, Some(t.responses as f64 / secs), p99)?;
    store.put_phase(run, &phase_row)?;
    let rows: Vec<RouteRow> = t
        .routes
        .iter()
        .map(|r| {
            let l = LatencySummary::from_histogram(&r.histogram);
            let sized = r.sized.max(1) as f64;
            RouteRow {
                method: r.method.clone(),
                uri: r.label.clone(),
                count: r.responses,
                s1xx: r.status[0],
                s2xx: r.status[1],
                s3xx: r.status[2],
                s4xx: r.status[3],
                s5xx: r.status[4],
                min: l.min,
                max: l.max,
                sum: r.sum_ms,
                avg: if r.responses > 0 {
                    r.sum_ms / r.responses as f64
                } else {
                    0.0
                },
                p50: l.p50,
                p90: l.p90,
                p95: l.p95,
                p99: l.p99,
                stddev: l.stdev,
                min_body: if r.sized > 0 { r.bytes_min as f64 } else { 0.0 },
                max_body: r.bytes_max as f64,
                sum_body: r.bytes_sum as f64,
                avg_body: r.bytes_sum as f64 / sized,
            }
        })
        .collect();
    store.put_routes(run, RouteSource::Client, &rows)
}

fn store_summary(
    store: &Store,
    run: &str,
    s: &Summary,
    encoding: Encoding,
    path: &str,
) -> Result<(), StoreError> {
    let q = |p: f64| s.quantiles.iter().find(|(x, _)| *x == p).map(|(_, v)| *v);
    let secs = s.duration_s.max(1e-3);
    let transport: u64 = s.socket_errors.iter().sum();
    let results = json!({
        "version": 1,
        "partial": false,
        "requests": s.requests,
        "duration_s": s.duration_s,
        "rps": s.requests as f64 / secs,
        "bytes": s.bytes,
        // wrk does not tell 4xx from 5xx: keisoku's error count (5xx plus
        // transport) is unknown, and left so rather than guessed.
        "errors": Value::Null,
        "errors_transport": transport,
        "non_2xx_3xx": s.non_2xx_3xx,
        "socket_errors": {"connect": s.socket_errors[0], "read": s.socket_errors[1],
                          "write": s.socket_errors[2], "timeout": s.socket_errors[3]},
        "latency_ms": {"mean": s.mean_ms, "stdev": s.stdev_ms, "max": s.max_ms,
                       "p50": q(50.0), "p75": q(75.0), "p90": q(90.0), "p99": q(99.0)},
        "latency_distribution": s.quantiles.iter().map(|(p, v)| json!([p, v])).collect::<Vec<_>>(),
        "connections": s.connections,
        "threads": s.threads,
        "target": s.url,
        "phases": [],
        "notes": ["wrk prints no request times: a summary and its latency distribution, no per-second numbers"],
        "source": {
            "tool": tool(encoding),
            "format": encoding.format().name(),
            "encoding": encoding.name(),
            "describe": encoding.describe(),
            "file": path,
            "per_second": false,
            "samples": s.requests,
        },
    });
    store.put_results(run, &results, Some(s.requests as f64 / secs), q(99.0))
}

/// Stored-run import for `keisoku import`: the run's window is its stored
/// length; the findings are judged again with the client results in.
pub fn import_into_stored(
    store: &Store,
    run: &str,
    path: &Path,
    format: Option<Format>,
) -> Result<(Imported, Vec<keisoku_findings::Finding>), ImportError> {
    let info = store.run_info(run)?;
    let imported = import(
        store,
        run,
        info.started_unix_ms,
        info.duration_ms,
        path,
        format,
    )?;
    let json = store.load(run)?;
    let findings = keisoku_findings::analyze(&json);
    store.set_findings(run, &keisoku_findings::to_json(&findings))?;
    Ok((imported, findings))
}
