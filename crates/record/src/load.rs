//! A load report (crates/load) turned into the run's rows: results,
//! phases, client series, per-second per-route histograms and client
//! routes, on the run's clock. Shared by `keisoku run` and `keisoku demo`,
//! whose loads are recorded alike.

use crate::{Error, Finished, Recording};
use hdrhistogram::Histogram;
use keisoku_load::Report;
use keisoku_store::{Phase, RouteRow, RouteSecond, RouteSource, RunStatus, Series};

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
            if let Err(e) = store_report(&self, r) {
                self.lost(format!("storing the load results: {e}"));
            }
        }
        self.finish(status)
    }
}

/// Stores the load's results, phases, client series, per-second per-route
/// histograms and route rows, shifted onto the run's clock.
pub fn store_report(rec: &Recording, r: &Report) -> keisoku_store::Result<()> {
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
    let series =
        |name: &str, unit: &str, f: &dyn Fn(&keisoku_load::report::Second) -> f64| Series {
            name: name.into(),
            unit: unit.into(),
            // A second's point sits at its end, like the sampler's rates.
            t_ms: r
                .timeline
                .iter()
                .map(|s| offset + (s.t_s as f64 + 1.0) * 1000.0)
                .collect(),
            v: r.timeline.iter().map(f).collect(),
        };
    store.append_series(
        run,
        &[
            series("client.rps", "/s", &|s| s.rps),
            series("client.errors", "/s", &|s| s.errors as f64),
            series("client.p50_ms", "ms", &|s| s.p50_ms),
            series("client.p99_ms", "ms", &|s| s.p99_ms),
        ],
    )?;
    // Targets that share a method and path (one URL with several bodies) are
    // one route, as the access log sees them; the store keys routes by method
    // and path, so separate rows would also overwrite each other's seconds.
    let routes = client_routes(&r.targets);
    let base_second = (offset / 1000.0).max(0.0).round() as u32;
    let mut seconds = Vec::new();
    for s in &r.timeline {
        let second = base_second + s.t_s as u32;
        for route in &routes {
            let mut merged: Option<Histogram<u64>> = None;
            for &i in &route.targets {
                let h = if s.per_target.is_empty() {
                    Some(&s.histogram)
                } else {
                    s.per_target.get(i).and_then(Option::as_ref)
                };
                let Some(h) = h.filter(|h| !h.is_empty()) else {
                    continue;
                };
                match merged.as_mut() {
                    Some(m) => keisoku_load::report::add_hist(m, h),
                    None => merged = Some(h.clone()),
                }
            }
            if let Some(histogram) = merged {
                seconds.push(RouteSecond {
                    method: route.method.clone(),
                    route: route.path.clone(),
                    second,
                    histogram,
                });
            }
        }
    }
    store.put_route_seconds(run, RouteSource::Client, &seconds)?;
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

fn client_routes(targets: &[keisoku_load::report::TargetReport]) -> Vec<ClientRoute> {
    let mut routes: Vec<ClientRoute> = Vec::new();
    for (i, t) in targets.iter().enumerate() {
        let path = path_of(&t.url);
        match routes
            .iter_mut()
            .find(|r| r.method == t.method && r.path == path)
        {
            Some(r) => r.targets.push(i),
            None => routes.push(ClientRoute {
                method: t.method.clone(),
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
            Some(h) => keisoku_load::report::add_hist(h, &s.histogram),
            None => histogram = Some(s.histogram.clone()),
        }
    }
    let l = keisoku_load::report::LatencySummary::from_histogram(&histogram?);
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
