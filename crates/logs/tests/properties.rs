//! Properties: parsers never panic on arbitrary bytes; the parallel engine
//! equals a sequential pass whatever the chunking; dumps round-trip.

use keisoku_logs::{
    dump, engine, filter::Filter, format, render, uri, Aggregator, Config, FieldNames, Format,
    LineParser, QueryMode,
};
use proptest::prelude::*;
use std::sync::Arc;

fn ltsv_cfg() -> Arc<Config> {
    let mut c = Config::new(LineParser::new(
        Format::Ltsv(FieldNames::ltsv()),
        QueryMode::Keep,
        1.0,
    ));
    c.timeline = Some(1.0);
    c.slow = 3;
    Arc::new(c)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn parsers_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..400)) {
        for f in [
            Format::Ltsv(FieldNames::ltsv()),
            Format::Json(FieldNames::json()),
            Format::regexp(format::DEFAULT_PATTERN, FieldNames::json()).unwrap(),
        ] {
            for q in [QueryMode::Drop, QueryMode::Keep, QueryMode::IgnoreValues] {
                let _ = LineParser::new(f.clone(), q, 1e-3).parse(&bytes);
            }
        }
        let _ = uri::normalize(&bytes, QueryMode::Keep);
        let _ = keisoku_logs::timestamp::parse(&bytes);
        let _ = format::detect(&[&bytes]);
        if let Ok(s) = std::str::from_utf8(&bytes) {
            let _ = Filter::new(s);
            let _ = keisoku_logs::group::auto_group(s);
            let _ = uri::decode_for_display(s);
        }
    }

    #[test]
    fn ltsv_like_lines_never_panic(
        fields in proptest::collection::vec(
            (prop::sample::select(vec!["uri", "method", "status", "size", "reqtime", "apptime", "time", "x"]),
             "[ -~]{0,12}"),
            0..10)
    ) {
        let line: Vec<String> = fields.iter().map(|(k, v)| format!("{k}:{v}")).collect();
        let mut agg = Aggregator::new(ltsv_cfg());
        agg.feed(line.join("\t").as_bytes()).unwrap();
        let a = agg.finish();
        prop_assert_eq!(a.counts.lines, 1);
    }

    #[test]
    fn parallel_equals_sequential(seed in any::<u64>(), n in 1usize..400) {
        let mut x = seed | 1;
        let mut log = String::new();
        for i in 0..n {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            let rt = match x % 5 { 0 => 0.0, 1 => 0.001, _ => (x % 997) as f64 / 1000.0 };
            if x % 23 == 0 { log.push_str("garbage\n"); continue; }
            log.push_str(&format!(
                "time:2026-11-21T10:00:{:02}Z\tmethod:{}\turi:/r/{}?b={}&a=1\tstatus:{}\tsize:{}\treqtime:{:.3}\n",
                i % 60, ["GET", "POST"][(x >> 3) as usize % 2], (x >> 5) % 7, x % 3, 200 + (x % 4) * 100, x % 5000, rt));
        }
        let mut agg = Aggregator::new(ltsv_cfg());
        for l in log.split_inclusive('\n') { agg.feed(l.as_bytes()).unwrap(); }
        let seq = agg.finish();
        // Tiny inputs make a single chunk; this compares the chunk folding
        // through the engine against the line-by-line aggregator.
        let par = engine::analyze(ltsv_cfg(), log.as_bytes(), 2).unwrap();
        prop_assert_eq!(seq.routes.len(), par.routes.len());
        for (a, b) in seq.routes.iter().zip(&par.routes) {
            prop_assert_eq!(&a.uri, &b.uri);
            prop_assert_eq!(a.count, b.count);
            prop_assert_eq!(a.status, b.status);
            prop_assert_eq!(a.time, b.time);
            prop_assert_eq!(a.body, b.body);
        }
        prop_assert_eq!(seq.counts, par.counts);
        prop_assert_eq!(seq.slow, par.slow);
        prop_assert_eq!(seq.malformed, par.malformed);
    }
}

/// A log larger than several engine chunks, so workers really split it.
fn big_log() -> String {
    let mut log = String::new();
    let mut x: u64 = 42;
    let mut i = 0u64;
    while log.len() < 3 * engine::CHUNK + 12345 {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let rt = if x % 11 == 0 {
            0.0
        } else {
            (x % 3001) as f64 / 1000.0
        };
        log.push_str(&format!(
            "time:2026-11-21T10:{:02}:{:02}Z\tmethod:GET\turi:/r/{}\tstatus:{}\tsize:{}\treqtime:{:.3}\n",
            (i / 60) % 60,
            i % 60,
            x % 13,
            200 + (x % 4) * 100,
            if x % 7 == 0 { 0 } else { x % 9000 },
            rt
        ));
        if i % 10_000 == 7 {
            log.push_str("broken line\n");
        }
        i += 1;
    }
    log
}

#[test]
fn multi_chunk_parallel_run_equals_sequential_aggregator() {
    let log = big_log();
    let mut agg = Aggregator::new(ltsv_cfg());
    for l in log.split_inclusive('\n') {
        agg.feed(l.as_bytes()).unwrap();
    }
    let seq = agg.finish();
    for threads in [1, 2, 3] {
        let par = engine::analyze(ltsv_cfg(), log.as_bytes(), threads).unwrap();
        assert_eq!(seq.counts, par.counts);
        assert_eq!(
            seq.malformed, par.malformed,
            "line numbers of malformed lines"
        );
        assert_eq!(seq.slow, par.slow, "slow requests and their line numbers");
        let names: Vec<_> = seq.routes.iter().map(|r| (&r.method, &r.uri)).collect();
        let pnames: Vec<_> = par.routes.iter().map(|r| (&r.method, &r.uri)).collect();
        assert_eq!(names, pnames, "first-seen order");
        for (a, b) in seq.routes.iter().zip(&par.routes) {
            assert_eq!(a.count, b.count);
            assert_eq!(a.status, b.status);
            assert_eq!(a.time.min, b.time.min, "alp's order-dependent min");
            assert_eq!(a.time.max, b.time.max);
            assert_eq!(a.body.min, b.body.min);
            assert_eq!(render::fmt3(a.time.sum), render::fmt3(b.time.sum));
            assert_eq!(render::fmt3(a.avg()), render::fmt3(b.avg()));
            assert_eq!(a.percentile(99.0), b.percentile(99.0));
            assert!((a.stddev() - b.stddev()).abs() < 1e-9);
        }
        let (ta, tb) = (
            seq.timeline.as_ref().unwrap().buckets(),
            par.timeline.as_ref().unwrap().buckets(),
        );
        assert_eq!(ta.len(), tb.len());
        for (x, y) in ta.iter().zip(&tb) {
            assert_eq!(x.count, y.count);
            assert_eq!(x.p99, y.p99);
            assert!((x.in_flight - y.in_flight).abs() < 1e-6);
        }
    }
}

#[test]
fn dump_round_trips_and_diff_shows_changes() {
    let log = "method:GET\turi:/a\tstatus:200\tsize:10\treqtime:0.100\nmethod:GET\turi:/a\tstatus:500\tsize:20\treqtime:0.300\n";
    let a = engine::analyze(ltsv_cfg(), log.as_bytes(), 1).unwrap();
    let text = dump::to_json(&a.routes, &a.counts);
    let (back, counts) = dump::from_json(&text).unwrap();
    assert_eq!(counts, a.counts);
    assert_eq!(back[0].time, a.routes[0].time);
    assert_eq!(back[0].percentile(50.0), a.routes[0].percentile(50.0));
    let opts = render::RenderOptions {
        columns: render::Column::parse_list("count,5xx,uri,max", &[]).unwrap(),
        no_headers: false,
        show_footers: false,
        decode_uri: false,
        stddev_in_line_order: false,
        absent_times: false,
    };
    let later = engine::analyze(
        ltsv_cfg(),
        format!("{log}method:GET\turi:/a\tstatus:200\tsize:1\treqtime:0.500\n").as_bytes(),
        1,
    )
    .unwrap();
    let out = render::render(&later.routes, Some(&back), render::OutputFormat::Tsv, &opts);
    assert_eq!(out, "Count\t5xx\tUri\tMax\n3 (+1)\t1\t/a\t0.500 (+0.200)\n");
    assert!(dump::from_json("{\"format\":\"other\",\"counts\":{},\"routes\":[]}").is_err());
    assert!(dump::from_json("not json").is_err());
}

#[test]
fn streaming_snapshot_continues() {
    let mut agg = Aggregator::new(ltsv_cfg());
    agg.feed(b"method:GET\turi:/a\tstatus:200\tsize:1\treqtime:0.0\n")
        .unwrap();
    agg.feed(b"method:GET\turi:/a\tstatus:200\tsize:1\treqtime:0.2\n")
        .unwrap();
    let s1 = agg.snapshot();
    assert_eq!(s1.routes[0].count, 2);
    assert_eq!(s1.routes[0].time.min, 0.2, "alp's zero quirk");
    agg.feed(b"method:GET\turi:/a\tstatus:404\tsize:1\treqtime:0.1\n")
        .unwrap();
    let s2 = agg.finish();
    assert_eq!(s2.routes[0].count, 3);
    assert_eq!(s2.routes[0].time.min, 0.1);
    assert_eq!(s2.routes[0].status, [0, 2, 0, 1, 0]);
}

#[test]
fn route_limit_stops_an_ungrouped_flood() {
    let mut log = String::new();
    for i in 0..100 {
        log.push_str(&format!(
            "method:GET\turi:/u/{i}\tstatus:200\tsize:1\treqtime:0.1\n"
        ));
    }
    let mut c = Config::new(LineParser::new(
        Format::Ltsv(FieldNames::ltsv()),
        QueryMode::Drop,
        1.0,
    ));
    c.route_limit = 10;
    assert!(engine::analyze(Arc::new(c.clone()), log.as_bytes(), 2).is_err());
    c.grouper = keisoku_logs::group::Grouper::new(&[], true).unwrap();
    let a = engine::analyze(Arc::new(c), log.as_bytes(), 2).unwrap();
    assert_eq!(a.routes.len(), 1);
    assert_eq!(a.routes[0].uri, "/u/:id");
}
