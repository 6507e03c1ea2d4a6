//! A load report (crates/load) turned into the run's rows: results,
//! phases, client series, per-second per-route histograms and client
//! routes, on the run's clock. Shared by `keisoku run` and `keisoku demo`,
//! whose loads are recorded alike. [`LoadStream`] writes the seconds and
//! phases while the load runs, so a killed keisoku keeps them.

use crate::{Error, Finished, Recording};
use hdrhistogram::Histogram;
use keisoku_load::report::{add_hist, LatencySummary, StatusCounts};
use keisoku_load::{Live, LiveFn, PhaseReport, Report, Second, Span};
use keisoku_store::{Phase, RouteRow, RouteSecond, RouteSource, RunStatus, SeriesBuffer, Store};
use std::path::Path;
use std::sync::mpsc::{Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

impl Recording {
    /// Ends a recording that loaded the target (`run`, `demo`): stores the
    /// load's results, phases, client series and routes (a failure becomes a
    /// note: the recording itself is still worth keeping), then
    /// [`Recording::finish`]es.
    pub fn finish_with_load(
        mut self,
        status: RunStatus,
        load: Option<&Report>,
    ) -> Result<Finished, Error> {
        if let Some(r) = load {
            if let Err(e) = store_report(&self, r, false) {
                self.lost(format!("storing the load results: {e}"));
            }
        }
        self.finish(status)
    }

    /// [`Recording::finish_with_load`] for a load whose seconds and phases
    /// `stream` already stored: waits for its writer, then stores the final
    /// results and routes.
    pub fn finish_with_streamed_load(
        mut self,
        status: RunStatus,
        load: Option<&Report>,
        stream: LoadStream,
    ) -> Result<Finished, Error> {
        let (notes, complete) = stream.end();
        // The live writer's notes are writes that failed: the run is partial
        // unless the batch path below stores it all after all.
        let failed = notes;
        if let Some(r) = load {
            // A writer that failed part-way leaves the batch path to store it all.
            match store_report(&self, r, complete) {
                Ok(()) => {
                    for n in failed {
                        self.note(n);
                    }
                }
                Err(e) => {
                    for n in failed {
                        self.lost(n);
                    }
                    self.lost(format!("storing the load results: {e}"));
                }
            }
        } else {
            for n in failed {
                self.lost(n);
            }
        }
        self.finish(status)
    }

    /// Starts writing a load's seconds and phases to this run as they
    /// become final; give [`LoadStream::live`] to the load's `RunControl`.
    /// `targets` are the plan's (method, URL), in order.
    pub fn load_stream(&self, targets: &[(String, String)]) -> Result<LoadStream, Error> {
        let (tx, rx) = std::sync::mpsc::channel();
        let store_path = self.store_path().to_path_buf();
        let run = self.run.clone();
        let started = self.started_unix_ms;
        let routes = client_routes(targets);
        let handle = std::thread::Builder::new()
            .name("keisoku-load-writer".into())
            .spawn(move || write_live(rx, &store_path, &run, started, &routes))?;
        Ok(LoadStream {
            tx: Arc::new(Mutex::new(Some(tx))),
            handle,
        })
    }
}

/// What the load hands the writer thread.
enum Msg {
    Started(u64),
    Second(Box<Second>),
    Warmup(Span),
    PhaseStart(Phase),
    Phase(Box<PhaseReport>),
}

/// The writer's problems, and whether it stored everything it was given.
type WriterEnd = (Vec<String>, bool);

/// A load's results on their way to the store while it runs.
pub struct LoadStream {
    /// The one sender, shared with the callback, so ending the stream ends
    /// the writer even while the callback is still alive.
    tx: Arc<Mutex<Option<Sender<Msg>>>>,
    handle: JoinHandle<WriterEnd>,
}

impl LoadStream {
    /// The callback for `RunControl::live`: hands each final second and
    /// phase to the writer thread (the load never waits for the store).
    pub fn live(&self) -> LiveFn {
        let tx = Arc::clone(&self.tx);
        Box::new(move |ev: Live<'_>| {
            let msg = match ev {
                Live::Started(ms) => Msg::Started(ms),
                Live::Second(s) => Msg::Second(Box::new(s.clone())),
                Live::Warmup(w) => Msg::Warmup(w.clone()),
                Live::PhaseStart {
                    label,
                    connections,
                    rate,
                    start_ms,
                } => Msg::PhaseStart(Phase {
                    index: 0,
                    label,
                    start_ms,
                    end_ms: start_ms,
                    warmup: false,
                    connections: Some(connections as u64),
                    rate,
                }),
                Live::Phase(p) => Msg::Phase(Box::new(p.clone())),
            };
            if let Ok(guard) = tx.lock() {
                if let Some(tx) = guard.as_ref() {
                    let _ = tx.send(msg);
                }
            }
        })
    }

    /// Waits for the writer; returns its problems and whether it stored
    /// every second and phase it was given.
    fn end(self) -> WriterEnd {
        if let Ok(mut t) = self.tx.lock() {
            t.take();
        }
        match self.handle.join() {
            Ok(r) => r,
            Err(_) => (vec!["the load writer stopped unexpectedly".into()], false),
        }
    }
}

/// Running totals of the streamed seconds, for the results so far.
struct SoFar {
    requests: u64,
    errors: u64,
    errors_transport: u64,
    status: StatusCounts,
    histogram: Option<Histogram<u64>>,
    first_ms: Option<f64>,
    last_ms: f64,
    phases: Vec<serde_json::Value>,
}

impl SoFar {
    fn add(&mut self, s: &Second, warmup_end_ms: Option<f64>) {
        let end_ms = (s.t_s as f64 + 1.0) * 1000.0;
        // Warm-up seconds are outside every number, as in the final report.
        if warmup_end_ms.is_some_and(|w| end_ms <= w) {
            return;
        }
        self.first_ms.get_or_insert((s.t_s as f64) * 1000.0);
        self.last_ms = end_ms;
        self.requests += s.requests;
        self.errors += s.errors;
        self.errors_transport += s.errors_transport;
        self.status.merge(&s.status);
        match self.histogram.as_mut() {
            Some(h) => add_hist(h, &s.histogram),
            None => self.histogram = Some(s.histogram.clone()),
        }
    }

    /// The results object so far: the final report's headline fields,
    /// marked partial, so a killed run still says what it measured.
    fn json(&self) -> serde_json::Value {
        let secs = ((self.last_ms - self.first_ms.unwrap_or(self.last_ms)) / 1000.0).max(1e-3);
        let latency = self
            .histogram
            .as_ref()
            .map(LatencySummary::from_histogram)
            .unwrap_or_default();
        let attempts = self.requests + self.errors_transport;
        serde_json::json!({
            "version": 1,
            "partial": true,
            "requests": self.requests,
            "duration_s": secs,
            "rps": self.requests as f64 / secs,
            "errors": self.errors,
            "errors_transport": self.errors_transport,
            "error_rate": if attempts == 0 { 0.0 } else { self.errors as f64 / attempts as f64 * 100.0 },
            "status": self.status,
            "latency_ms": latency,
            "phases": self.phases,
        })
    }
}

/// The load writer thread: stores each second's client series and route
/// seconds, each phase, and the results so far, as they arrive.
fn write_live(
    rx: Receiver<Msg>,
    store_path: &Path,
    run: &str,
    started_unix_ms: i64,
    routes: &[ClientRoute],
) -> WriterEnd {
    let store = match Store::open(store_path) {
        Ok(s) => s,
        Err(e) => return (vec![format!("load results not stored live: {e}")], false),
    };
    let mut notes: Vec<String> = Vec::new();
    let mut complete = true;
    let mut fail = |what: &str, e: keisoku_store::StoreError, notes: &mut Vec<String>| {
        complete = false;
        let msg = format!("storing the load's {what} as it ran: {e}");
        if !notes.contains(&msg) {
            notes.push(msg);
        }
    };
    let mut offset = 0.0;
    let mut index = 0u32;
    let mut warmup_end = None;
    // The phase running now: stored when it starts and its end moved on
    // with every second, so a killed run has the phase it was in.
    let mut open_phase: Option<Phase> = None;
    let mut buf = SeriesBuffer::default();
    let mut so_far = SoFar {
        requests: 0,
        errors: 0,
        errors_transport: 0,
        status: StatusCounts::default(),
        histogram: None,
        first_ms: None,
        last_ms: 0.0,
        phases: Vec::new(),
    };
    for msg in rx {
        match msg {
            Msg::Started(ms) => offset = ms as f64 - started_unix_ms as f64,
            Msg::Second(s) => {
                for (name, unit, v) in second_points(&s) {
                    buf.push(name, unit, offset + (s.t_s as f64 + 1.0) * 1000.0, v);
                }
                if let Err(e) = buf.flush(&store, run) {
                    fail("series", e, &mut notes);
                }
                let seconds = route_seconds(routes, std::slice::from_ref(&s), offset);
                if let Err(e) = store.put_route_seconds(run, RouteSource::Client, &seconds) {
                    fail("route seconds", e, &mut notes);
                }
                if let Some(p) = open_phase.as_mut() {
                    p.end_ms = p.end_ms.max(offset + (s.t_s as f64 + 1.0) * 1000.0);
                    if let Err(e) = store.put_phase(run, p) {
                        fail("phases", e, &mut notes);
                    }
                }
                so_far.add(&s, warmup_end);
                let h = so_far.histogram.as_ref();
                let p99 = h
                    .filter(|h| !h.is_empty())
                    .map(|h| h.value_at_quantile(0.99) as f64 / 1000.0);
                let results = so_far.json();
                let rps = results.get("rps").and_then(serde_json::Value::as_f64);
                if let Err(e) = store.put_results(run, &results, rps, p99) {
                    fail("results", e, &mut notes);
                }
            }
            Msg::Warmup(w) => {
                warmup_end = Some(w.end_ms);
                // The warm-up's load level is the first phase's, known when
                // the load ends; store_report rewrites the row with it.
                let row = Phase {
                    index,
                    label: "warmup".into(),
                    start_ms: w.start_ms + offset,
                    end_ms: w.end_ms + offset,
                    warmup: true,
                    connections: None,
                    rate: None,
                };
                if let Err(e) = store.put_phase(run, &row) {
                    fail("phases", e, &mut notes);
                }
                index += 1;
            }
            Msg::PhaseStart(mut p) => {
                p.index = index;
                p.start_ms += offset;
                p.end_ms += offset;
                if let Err(e) = store.put_phase(run, &p) {
                    fail("phases", e, &mut notes);
                }
                open_phase = Some(p);
            }
            Msg::Phase(p) => {
                open_phase = None;
                let row = Phase {
                    index,
                    label: p.label.clone(),
                    start_ms: p.start_ms + offset,
                    end_ms: p.end_ms + offset,
                    warmup: false,
                    connections: Some(p.connections as u64),
                    rate: p.rate,
                };
                if let Err(e) = store.put_phase(run, &row) {
                    fail("phases", e, &mut notes);
                }
                index += 1;
                if let Ok(v) = serde_json::to_value(&*p) {
                    so_far.phases.push(v);
                }
            }
        }
    }
    (notes, complete)
}

/// A second's client series points: (name, unit, value); docs/run-json.md
/// lists them.
fn second_points(s: &Second) -> [(&'static str, &'static str, f64); 17] {
    [
        ("client.rps", "/s", s.rps),
        ("client.errors", "/s", s.errors as f64),
        ("client.errors_transport", "/s", s.errors_transport as f64),
        ("client.timeouts", "/s", s.timeouts as f64),
        ("client.status_1xx", "/s", s.status.s1xx as f64),
        ("client.status_2xx", "/s", s.status.s2xx as f64),
        ("client.status_3xx", "/s", s.status.s3xx as f64),
        ("client.status_4xx", "/s", s.status.s4xx as f64),
        ("client.status_5xx", "/s", s.status.s5xx as f64),
        ("client.p50_ms", "ms", s.p50_ms),
        ("client.p90_ms", "ms", s.p90_ms),
        ("client.p99_ms", "ms", s.p99_ms),
        ("client.max_ms", "ms", s.max_ms),
        ("client.inflight", "req", s.inflight as f64),
        ("client.connections", "conn", s.connections as f64),
        ("client.connects", "/s", s.connects as f64),
        ("client.server_closed", "/s", s.server_closed as f64),
    ]
}

/// Per-route seconds of timeline seconds, on the run's clock.
fn route_seconds(routes: &[ClientRoute], timeline: &[Second], offset: f64) -> Vec<RouteSecond> {
    let base_second = (offset / 1000.0).max(0.0).round() as u32;
    let mut seconds = Vec::new();
    for s in timeline {
        let second = base_second + s.t_s as u32;
        for route in routes {
            let mut merged: Option<Histogram<u64>> = None;
            let (mut errors, mut transport) = (0u64, 0u64);
            for &i in &route.targets {
                let h = if s.per_target.is_empty() {
                    errors += s.errors;
                    transport += s.errors_transport;
                    Some(&s.histogram)
                } else {
                    if let Some(e) = s.per_target_errors.get(i) {
                        errors += e.0;
                        transport += e.1;
                    }
                    s.per_target.get(i).and_then(Option::as_ref)
                };
                let Some(h) = h.filter(|h| !h.is_empty()) else {
                    continue;
                };
                match merged.as_mut() {
                    Some(m) => add_hist(m, h),
                    None => merged = Some(h.clone()),
                }
            }
            let histogram = match merged {
                Some(h) => h,
                // A second with only transport errors has no latency, but it is
                // the route's second all the same.
                None if errors > 0 => {
                    let mut h = s.histogram.clone();
                    h.reset();
                    h
                }
                None => continue,
            };
            seconds.push(RouteSecond {
                method: route.method.clone(),
                route: route.path.clone(),
                second,
                histogram,
                errors,
                transport_errors: transport,
            });
        }
    }
    seconds
}

/// Stores the load's results, phases, client series, per-second per-route
/// histograms and route rows, shifted onto the run's clock. `streamed`:
/// the seconds and phases are already stored ([`LoadStream`]).
pub fn store_report(rec: &Recording, r: &Report, streamed: bool) -> keisoku_store::Result<()> {
    let store = rec.store();
    let run = &rec.run;
    // The engine's clock starts when the load starts; ours when the run did.
    let offset = r.started_unix_ms as f64 - rec.started_unix_ms as f64;
    let results = serde_json::to_value(r)?;
    store.put_results(
        run,
        &results,
        Some(r.overall.rps),
        Some(r.overall.latency_ms.p99),
    )?;
    // Phases are rewritten either way: the warm-up row learns its load level.
    let mut index = 0u32;
    if let Some(w) = &r.warmup {
        store.put_phase(
            run,
            &Phase {
                index,
                label: "warmup".into(),
                start_ms: w.start_ms + offset,
                end_ms: w.end_ms + offset,
                warmup: true,
                connections: r.phases.first().map(|p| p.connections as u64),
                rate: r.phases.first().and_then(|p| p.rate),
            },
        )?;
        index += 1;
    }
    for p in &r.phases {
        store.put_phase(
            run,
            &Phase {
                index,
                label: p.label.clone(),
                start_ms: p.start_ms + offset,
                end_ms: p.end_ms + offset,
                warmup: false,
                connections: Some(p.connections as u64),
                rate: p.rate,
            },
        )?;
        index += 1;
    }
    let targets: Vec<(String, String)> = r
        .targets
        .iter()
        .map(|t| (t.method.clone(), t.url.clone()))
        .collect();
    let routes = client_routes(&targets);
    if !streamed {
        let mut buf = SeriesBuffer::default();
        for s in &r.timeline {
            for (name, unit, v) in second_points(s) {
                // A second's point sits at its end, like the sampler's rates.
                buf.push(name, unit, offset + (s.t_s as f64 + 1.0) * 1000.0, v);
            }
        }
        buf.flush(store, run)?;
        store.put_route_seconds(
            run,
            RouteSource::Client,
            &route_seconds(&routes, &r.timeline, offset),
        )?;
    }
    let rows: Vec<RouteRow> = routes
        .iter()
        .filter_map(|route| route_row(route, &r.targets))
        .collect();
    store.put_routes(run, RouteSource::Client, &rows)
}

/// Load targets grouped by method and path, in the order first given.
struct ClientRoute {
    method: String,
    path: String,
    targets: Vec<usize>,
}

/// Targets that share a method and path (one URL with several bodies) are
/// one route, as the access log sees them; the store keys routes by method
/// and path, so separate rows would also overwrite each other's seconds.
fn client_routes(targets: &[(String, String)]) -> Vec<ClientRoute> {
    let mut routes: Vec<ClientRoute> = Vec::new();
    for (i, (method, url)) in targets.iter().enumerate() {
        let path = path_of(url);
        match routes
            .iter_mut()
            .find(|r| &r.method == method && r.path == path)
        {
            Some(r) => r.targets.push(i),
            None => routes.push(ClientRoute {
                method: method.clone(),
                path,
                targets: vec![i],
            }),
        }
    }
    routes
}

/// One route's row: counts summed, latency from the merged histograms.
fn route_row(
    route: &ClientRoute,
    targets: &[keisoku_load::report::TargetReport],
) -> Option<RouteRow> {
    let mut histogram: Option<Histogram<u64>> = None;
    let mut row = RouteRow {
        method: route.method.clone(),
        uri: route.path.clone(),
        ..RouteRow::default()
    };
    for t in route.targets.iter().filter_map(|&i| targets.get(i)) {
        let s = &t.stats;
        row.count += s.requests;
        row.s1xx += s.status.s1xx;
        row.s2xx += s.status.s2xx;
        row.s3xx += s.status.s3xx;
        row.s4xx += s.status.s4xx;
        row.s5xx += s.status.s5xx;
        row.sum += s.latency_ms.mean * s.requests as f64;
        match histogram.as_mut() {
            Some(h) => add_hist(h, &s.histogram),
            None => histogram = Some(s.histogram.clone()),
        }
    }
    let l = LatencySummary::from_histogram(&histogram?);
    row.min = l.min;
    row.max = l.max;
    row.avg = if row.count > 0 {
        row.sum / row.count as f64
    } else {
        0.0
    };
    row.p50 = l.p50;
    row.p90 = l.p90;
    row.p95 = l.p95;
    row.p99 = l.p99;
    row.stddev = l.stdev;
    Some(row)
}

/// The path (without the query) of a URL, as access logs group it.
fn path_of(url: &str) -> String {
    keisoku_load::plan::parse_url(url)
        .map(|u| u.path.split('?').next().unwrap_or("/").to_string())
        .unwrap_or_else(|_| url.to_string())
}
