//! The whole `keisoku logs` pipeline after parsing, shared by the access-log
//! targets: aggregation with timeline and slowest requests, every output
//! format (plain and as a diff against itself), the views, and a dump that
//! must read back.

#![allow(dead_code)] // each target uses part of it

use keisoku_logs::render::{self, Column, OutputFormat, RenderOptions, SortKey};
use keisoku_logs::{dump, filter::Filter, group::Grouper, view, Aggregator, Config, LineParser};
use std::sync::Arc;

const FORMATS: [OutputFormat; 6] = [
    OutputFormat::Table,
    OutputFormat::Markdown,
    OutputFormat::Tsv,
    OutputFormat::Csv,
    OutputFormat::Json,
    OutputFormat::Html,
];

/// Feeds every line of `data` and renders the result every way a user can ask
/// for; nothing may panic, and the dump must round-trip.
pub fn run(parser: LineParser, filter: Option<Filter>, data: &[u8]) {
    let mut cfg = Config::new(parser);
    // Minute buckets: a timeline costs one bucket per width of the logged
    // span (up to 200k, by design), which would otherwise dominate the run.
    cfg.timeline = Some(60.0);
    cfg.slow = 3;
    cfg.route_limit = 50;
    cfg.filter = filter;
    cfg.grouper = Grouper::new(&["^/api/[0-9]+".to_string()], true).unwrap();
    let mut agg = Aggregator::new(Arc::new(cfg));
    for line in data.split(|&b| b == b'\n') {
        let _ = agg.feed(line);
    }
    let mut a = agg.finish();
    render_all(&mut a.routes);
    if let Some(t) = &a.timeline {
        let _ = view::timeline_text(t, 3, 40);
        let _ = view::timeline_json(t);
        let _ = view::timeline_csv(t, ',');
    }
    for f in FORMATS {
        let _ = view::slow_view(&a.slow, f);
    }
    let text = dump::to_json(&a.routes, &a.counts);
    if let Err(e) = dump::from_json(&text) {
        panic!("a dump of an analysis does not read back: {e}\n{text}");
    }
}

/// Sorts by every key and renders every format, plain and as a diff.
pub fn render_all(routes: &mut [keisoku_logs::RouteStats]) {
    let mut opts = RenderOptions {
        columns: Column::all(&[50, 90, 95, 99]),
        no_headers: false,
        show_footers: true,
        decode_uri: true,
        stddev_in_line_order: false,
        absent_times: false,
    };
    for key in [
        "count", "uri", "method", "max", "min", "sum", "avg", "p99", "stddev", "max-body",
        "min-body", "avg-body", "sum-body",
    ] {
        if let Some(k) = SortKey::parse(key) {
            render::sort_routes(routes, k, true);
        }
    }
    let before = routes.to_vec();
    for f in FORMATS {
        let _ = render::render(routes, None, f, &opts);
        let _ = render::render(routes, Some(&before), f, &opts);
    }
    // alp's stddev over times still in line order is a second computation.
    opts.stddev_in_line_order = true;
    let _ = render::render(routes, None, OutputFormat::Table, &opts);
}
