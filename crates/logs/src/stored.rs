//! Stored runs: `keisoku logs RUN` answers from a run's kept log lines,
//! replayed through the same pipeline as a file, or, when the run kept no
//! lines, from its stored per-route rows and per-second histograms
//! converted back into [`RouteStats`].

use crate::error::{Error, Result};
use crate::format::{self, Format};
use crate::group::Grouper;
use crate::options::{self, Options, Reporter, Warning};
use crate::stats::{Analysis, LineCounts, RouteStats};
use crate::summary::{Moments, Summary};
use crate::{analyse, dump, input, output, render};
use keisoku_store::{AccessLog, RouteRow, RouteSecond, RouteSource, Store};
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// `keisoku logs [FORMAT] RUN`: the text `keisoku logs` prints for `run`,
/// from its kept lines (parsed as `format`, else as the run was recorded)
/// or, without lines, from its stored per-route statistics.
pub fn analyse(
    store: &Store,
    run: &str,
    opts: &Options,
    format: Option<Format>,
    reporter: &dyn Reporter,
) -> Result<String> {
    let opts = &match &format {
        Some(f) => crate::analyse::shown_for(f, opts),
        None => std::borrow::Cow::Borrowed(opts),
    };
    for (flag, used) in [
        ("--pos", opts.pos.is_some()),
        ("--load", opts.load.is_some()),
    ] {
        if used {
            return Err(Error::input(format!(
                "{flag} does not apply to a stored run ({run})"
            )));
        }
    }
    let log = store.access_log(run).map_err(Error::store(run))?;
    let line_options: Vec<&str> = [
        ("-f", opts.filters.is_some()),
        ("-q", opts.query_string || opts.qs_ignore_values),
        ("--timeline", opts.timeline.is_some()),
        ("--slow", opts.slow.is_some()),
        ("--time-unit", opts.time_unit != options::TimeUnit::Seconds),
        ("--strict", opts.strict),
    ]
    .into_iter()
    .filter(|o| o.1)
    .map(|o| o.0)
    .collect();
    let kept = log.as_ref().filter(|l| l.kept_lines > 0);
    let use_lines = match kept {
        None => false,
        Some(l) if l.truncated && line_options.is_empty() => {
            // The statistics cover every line; use the kept lines only if
            // the recording never got to store them (killed keisoku).
            store
                .routes(run, RouteSource::AccessLog)
                .map_err(Error::store(run))?
                .is_empty()
        }
        Some(_) => true,
    };
    let Some(log) = kept.filter(|_| use_lines) else {
        if !line_options.is_empty() {
            return Err(refusal(run, &line_options, log.as_ref()));
        }
        let view = opts.view.parse()?;
        let grouper = options::grouper(opts.matching_groups.as_deref(), opts.auto_group)?;
        let mut routes = table(store, run)?;
        if grouper.is_active() {
            routes = regroup(routes, &grouper);
        }
        if let Some(path) = opts
            .dump
            .as_ref()
            .filter(|p| crate::alp_dump::wants_yaml(p))
        {
            // Never JSON under a .yaml name: alp could not read it.
            return Err(Error::input(format!(
                "--dump {}: alp's YAML holds every response time, and run {run} keeps only per-route statistics (recorded without its log lines); give a .json name for keisoku's dump",
                path.display()
            )));
        }
        if let Some(path) = &opts.dump {
            // Every stored request parsed: the rows count only those.
            let n: u64 = routes.iter().map(|r| r.count).sum();
            let counts = LineCounts {
                lines: n,
                parsed: n,
                ..Default::default()
            };
            std::fs::write(path, dump::to_json(&routes, &counts))
                .map_err(|e| Error::io("writing", path.display(), e))?;
        }
        render::sort_routes(&mut routes, view.sort, view.reverse);
        return Ok(render::render(&routes, None, view.format, &view.opts));
    };
    let mut analysis = lines(store, run, opts, format, log, reporter)?;
    let routes = std::mem::take(&mut analysis.routes);
    output::render(opts, routes, Some(&analysis))
}

/// A run's routes for `keisoku logs diff`: its stored statistics, or, when
/// its recording was killed before storing them, its kept lines analysed
/// with the defaults of `keisoku logs RUN`.
pub fn routes(store: &Store, run: &str, reporter: &dyn Reporter) -> Result<Vec<RouteStats>> {
    let has_table = !store
        .routes(run, RouteSource::AccessLog)
        .map_err(Error::store(run))?
        .is_empty();
    match store.access_log(run).map_err(Error::store(run))? {
        Some(log) if !has_table && log.kept_lines > 0 => {
            Ok(lines(store, run, &Options::default(), None, &log, reporter)?.routes)
        }
        _ => table(store, run),
    }
}

/// The run's kept lines through the file pipeline, configured by `opts`.
fn lines(
    store: &Store,
    run: &str,
    opts: &Options,
    format: Option<Format>,
    log: &AccessLog,
    reporter: &dyn Reporter,
) -> Result<Analysis> {
    let recorded =
        Format::named(&log.format, log.pattern.as_deref()).map_err(|reason| Error::Recorded {
            run: run.to_string(),
            reason,
        })?;
    let format = match format {
        None => recorded,
        // `keisoku logs regexp RUN` without --pattern: the run's own pattern.
        Some(Format::Regexp { pattern, .. })
            if pattern.as_str() == format::DEFAULT_PATTERN
                && matches!(recorded, Format::Regexp { .. }) =>
        {
            recorded
        }
        Some(f) => f,
    };
    let (_, cfg, threads) = opts.setup(format)?;
    if log.truncated {
        reporter.warning(&Warning::Truncated {
            run: run.to_string(),
            kept_lines: log.kept_lines,
            lines: log.lines,
            kept_bytes: log.kept_bytes,
            at_ms: log.truncated_ms.unwrap_or(0.0),
        });
    }
    let name = format!("run {run}");
    let read = Arc::new(AtomicU64::new(0));
    let reader = input::Counting::new(
        store.log_lines(run).map_err(Error::store(run))?,
        Arc::clone(&read),
    );
    analyse::reader(
        &cfg,
        &name,
        reader,
        Some(log.kept_bytes),
        read,
        opts,
        threads,
        reporter,
    )
}

/// Why a run cannot answer options that need its log lines.
fn refusal(run: &str, options: &[&str], log: Option<&AccessLog>) -> Error {
    let why = match log {
        Some(l) if !l.keep_lines => {
            "it was recorded with --no-log-lines or --log-lines-max 0".to_string()
        }
        Some(l) if l.truncated => format!(
            "its first line was already larger than --log-lines-max ({} bytes)",
            l.max_bytes
        ),
        Some(_) => "its access log had no lines".to_string(),
        None => "it was recorded before keisoku kept them".to_string(),
    };
    Error::input(format!(
        "{}: run {run} keeps per-route statistics and per-second histograms, not the log lines {} need{} ({why}); run `keisoku logs ltsv|json|regexp FILE` on the access log itself, and record the next run without --no-log-lines (lines are kept up to --log-lines-max, 1GiB by default)",
        options.join(", "),
        if options.len() == 1 { "this option" } else { "these options" },
        if options.len() == 1 { "s" } else { "" },
    ))
}

/// Merges routes that `grouper` names alike (stored routes are in first-seen
/// order, so the merged rows keep alp's order-dependent minimum rule).
pub fn regroup(routes: Vec<RouteStats>, grouper: &Grouper) -> Vec<RouteStats> {
    let mut out: Vec<RouteStats> = Vec::new();
    let mut index: HashMap<(String, String), usize> = HashMap::new();
    for mut r in routes {
        r.uri = grouper.route(&r.uri).into_owned();
        match index.get(&(r.method.clone(), r.uri.clone())) {
            Some(&i) => out[i].merge(&r),
            None => {
                index.insert((r.method.clone(), r.uri.clone()), out.len());
                out.push(r);
            }
        }
    }
    out
}

/// A stored run's access-log routes as `keisoku logs` computes them, from
/// its stored route rows and per-second histograms.
pub fn table(store: &Store, run: &str) -> Result<Vec<RouteStats>> {
    let rows = store
        .routes(run, RouteSource::AccessLog)
        .map_err(Error::store(run))?;
    let seconds = store
        .route_seconds(run, RouteSource::AccessLog)
        .map_err(Error::store(run))?;
    if rows.is_empty() {
        return Err(Error::input(if seconds.is_empty() {
            format!("run {run} has no access-log data (record it with --access-log FILE)")
        } else {
            format!("run {run} has per-second access-log histograms but no route table: its recording was killed before it finished (`keisoku export {run}` has the histograms)")
        }));
    }
    Ok(from_rows(&rows, &seconds))
}

/// Routes from stored rows: the exact columns from the rows (ms there,
/// seconds here), the latency histogram from the per-second histograms
/// merged (seconds of routes without a row are ignored).
pub fn from_rows(rows: &[RouteRow], seconds: &[RouteSecond]) -> Vec<RouteStats> {
    let mut routes: Vec<RouteStats> = Vec::with_capacity(rows.len());
    let mut index: HashMap<(&str, &str), usize> = HashMap::new();
    for row in rows {
        let whole_ms = |v: f64| (v - v.round()).abs() < 1e-6;
        let mut r = RouteStats::new(row.method.clone(), row.uri.clone());
        r.count = row.count;
        r.status = [row.s1xx, row.s2xx, row.s3xx, row.s4xx, row.s5xx];
        r.time = Summary {
            n: row.count,
            min: from_ms(row.min),
            saw_zero: false,
            max: from_ms(row.max),
            sum: from_ms(row.sum),
        };
        r.body = Summary {
            n: row.count,
            min: row.min_body,
            saw_zero: false,
            max: row.max_body,
            sum: row.sum_body,
        };
        let sd = from_ms(row.stddev);
        r.times = crate::times::Times::from_micros_buckets(std::iter::empty());
        r.moments = Moments {
            n: row.count,
            mean: if row.count > 0 {
                r.time.sum / row.count as f64
            } else {
                0.0
            },
            m2: sd * sd * row.count as f64,
        };
        r.low = r.time.min;
        // The stored percentiles were snapped to whole milliseconds when
        // every response time was one (nginx); none is otherwise, bar chance.
        r.ms_grid = [row.min, row.max, row.p50, row.p90, row.p95, row.p99]
            .into_iter()
            .all(whole_ms);
        index.insert((row.method.as_str(), row.uri.as_str()), routes.len());
        routes.push(r);
    }
    for sec in seconds {
        let Some(&i) = index.get(&(sec.method.as_str(), sec.route.as_str())) else {
            continue;
        };
        routes[i].times.record_micros_buckets(
            sec.histogram
                .iter_recorded()
                .map(|v| (v.value_iterated_to(), v.count_at_value())),
        );
    }
    routes
}

/// Seconds from a stored millisecond value: the double whose product by
/// 1000 is the stored value, when one is within a few units in the last
/// place of `ms / 1000` (almost always), so sums and averages print the
/// digits the log file gives even at a rounding tie.
fn from_ms(ms: f64) -> f64 {
    let guess = ms / 1000.0;
    if !(guess.is_finite() && guess > 0.0) || guess * 1000.0 == ms {
        return guess;
    }
    let bits = guess.to_bits();
    (1..=4u64)
        .flat_map(|k| [bits + k, bits.saturating_sub(k)])
        .map(f64::from_bits)
        .find(|y| y * 1000.0 == ms)
        .unwrap_or(guess)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::format::FieldNames;
    use crate::options::{Quiet, ViewSpec};
    use crate::render::OutputFormat;
    use crate::{Aggregator, Config, LineParser, QueryMode};

    const LINES: [&str; 4] = [
        "method:GET\turi:/users/1\tstatus:200\tsize:10\treqtime:0.100",
        "method:GET\turi:/users/2\tstatus:200\tsize:20\treqtime:0.200",
        "method:GET\turi:/users/1\tstatus:500\tsize:30\treqtime:0.300",
        "method:POST\turi:/orders\tstatus:201\tsize:5\treqtime:0.007",
    ];

    /// What the file pipeline makes of [`LINES`].
    fn from_log() -> Vec<RouteStats> {
        let cfg = Config::new(LineParser::new(
            Format::Ltsv(FieldNames::ltsv()),
            QueryMode::Drop,
            1.0,
        ));
        let mut agg = Aggregator::new(Arc::new(cfg));
        for l in LINES {
            agg.feed(l.as_bytes()).unwrap();
        }
        agg.finish().routes
    }

    /// A histogram of latencies in microseconds, as the recorder stores.
    fn hist(us: &[u64]) -> hdrhistogram::Histogram<u64> {
        let mut h = hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for &v in us {
            h.record(v).unwrap();
        }
        h
    }

    /// [`LINES`] as the recorder stores them: rows in ms, one histogram per
    /// route and second.
    fn stored() -> (Vec<RouteRow>, Vec<RouteSecond>) {
        let sd = |v: &[f64]| {
            let m = v.iter().sum::<f64>() / v.len() as f64;
            (v.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / v.len() as f64).sqrt()
        };
        let rows = vec![
            RouteRow {
                method: "GET".into(),
                uri: "/users/1".into(),
                count: 2,
                s2xx: 1,
                s5xx: 1,
                min: 100.0,
                max: 300.0,
                sum: 400.0,
                avg: 200.0,
                p50: 100.0,
                p90: 300.0,
                p95: 300.0,
                p99: 300.0,
                stddev: sd(&[100.0, 300.0]),
                min_body: 10.0,
                max_body: 30.0,
                sum_body: 40.0,
                avg_body: 20.0,
                ..RouteRow::default()
            },
            RouteRow {
                method: "GET".into(),
                uri: "/users/2".into(),
                count: 1,
                s2xx: 1,
                min: 200.0,
                max: 200.0,
                sum: 200.0,
                avg: 200.0,
                p50: 200.0,
                p90: 200.0,
                p95: 200.0,
                p99: 200.0,
                min_body: 20.0,
                max_body: 20.0,
                sum_body: 20.0,
                avg_body: 20.0,
                ..RouteRow::default()
            },
            RouteRow {
                method: "POST".into(),
                uri: "/orders".into(),
                count: 1,
                s2xx: 1,
                min: 7.0,
                max: 7.0,
                sum: 7.0,
                avg: 7.0,
                p50: 7.0,
                p90: 7.0,
                p95: 7.0,
                p99: 7.0,
                min_body: 5.0,
                max_body: 5.0,
                sum_body: 5.0,
                avg_body: 5.0,
                ..RouteRow::default()
            },
        ];
        let second = |method: &str, route: &str, second, us: &[u64]| RouteSecond {
            method: method.into(),
            route: route.into(),
            second,
            histogram: hist(us),
            errors: 0,
            transport_errors: 0,
        };
        let seconds = vec![
            second("GET", "/users/1", 0, &[100_000]),
            second("GET", "/users/1", 1, &[300_000]),
            second("GET", "/users/2", 0, &[200_000]),
            second("POST", "/orders", 1, &[7_000]),
            // A route without a row (cut by a limit) is left out.
            second("GET", "/elsewhere", 1, &[1_000]),
        ];
        (rows, seconds)
    }

    fn tsv(routes: &[RouteStats]) -> String {
        let view = ViewSpec {
            format: "tsv".into(),
            output: "all".into(),
            percentiles: "0,50,90,99,100".into(),
            ..ViewSpec::default()
        }
        .parse()
        .unwrap();
        assert_eq!(view.format, OutputFormat::Tsv);
        render::render(routes, None, view.format, &view.opts)
    }

    #[test]
    fn stored_rows_and_seconds_give_the_table_the_log_gives() {
        let (rows, seconds) = stored();
        let routes = from_rows(&rows, &seconds);
        assert_eq!(routes.len(), 3);
        assert_eq!(tsv(&routes), tsv(&from_log()));
        assert!(routes.iter().all(|r| r.ms_grid));
        assert_eq!(routes[0].times.len(), 2);
    }

    #[test]
    fn regrouping_stored_routes_merges_them_as_the_log_would_group() {
        let (rows, seconds) = stored();
        let grouper = options::grouper(Some("^/users/[0-9]+$"), false).unwrap();
        let merged = regroup(from_rows(&rows, &seconds), &grouper);
        let mut grouped = from_log();
        grouped = regroup(grouped, &grouper);
        assert_eq!(merged.len(), 2);
        assert_eq!(merged[0].count, 3);
        assert_eq!(merged[0].uri, "^/users/[0-9]+$");
        assert_eq!(tsv(&merged), tsv(&grouped));
    }

    #[test]
    fn milliseconds_convert_to_the_seconds_the_log_wrote() {
        for s in ["0.001", "0.007", "0.1", "0.3", "1.249", "6.999", "12.345"] {
            let secs: f64 = s.parse().unwrap();
            let ms = secs * 1000.0;
            assert_eq!(from_ms(ms) * 1000.0, ms, "{s}");
            assert!((from_ms(ms) - secs).abs() < 1e-12, "{s}");
        }
        assert_eq!(from_ms(0.0), 0.0);
    }

    fn store_with(
        rows: &[RouteRow],
        seconds: &[RouteSecond],
    ) -> (tempfile::TempDir, Store, String) {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open(&dir.path().join("runs.db")).unwrap();
        let run = store.create_run(&Default::default()).unwrap();
        store
            .put_routes(&run, RouteSource::AccessLog, rows)
            .unwrap();
        store
            .put_route_seconds(&run, RouteSource::AccessLog, seconds)
            .unwrap();
        (dir, store, run)
    }

    #[test]
    fn a_run_without_lines_prints_its_stored_table_and_refuses_line_options() {
        let (rows, seconds) = stored();
        let (_dir, store, run) = store_with(&rows, &seconds);
        let opts = Options {
            view: ViewSpec {
                format: "tsv".into(),
                percentiles: "0,50,90,99,100".into(),
                ..ViewSpec::default()
            },
            ..Options::default()
        };
        // Sorted by count, as the default view asks.
        let mut by_count = from_log();
        render::sort_routes(&mut by_count, crate::render::SortKey::Count, false);
        assert_eq!(
            analyse(&store, &run, &opts, None, &Quiet).unwrap(),
            tsv(&by_count)
        );
        let e = analyse(
            &store,
            &run,
            &Options {
                slow: Some(3),
                strict: true,
                ..Options::default()
            },
            None,
            &Quiet,
        )
        .unwrap_err();
        assert_eq!(e.cause(), crate::Cause::Input);
        let text = e.to_string();
        assert!(
            text.starts_with("--slow, --strict: run ")
                && text.contains("not the log lines these options need")
                && text.contains("recorded before keisoku kept them"),
            "{text}"
        );
        // `logs diff` takes the same table.
        assert_eq!(
            tsv(&routes(&store, &run, &Quiet).unwrap()),
            tsv(&from_log())
        );
    }

    #[test]
    fn a_run_killed_before_its_table_says_so() {
        let (_, seconds) = stored();
        let (_dir, store, run) = store_with(&[], &seconds);
        let e = table(&store, &run).unwrap_err();
        assert_eq!(e.cause(), crate::Cause::Input);
        assert!(e.to_string().contains("recording was killed"), "{e}");
        let (_dir, store, run) = store_with(&[], &[]);
        let e = table(&store, &run).unwrap_err();
        assert!(e.to_string().contains("no access-log data"), "{e}");
    }
}
