#![no_main]
//! Any bytes through every access-log parser and the streaming aggregator
//! (timeline and slow requests on): nothing may panic.

use keisoku_logs::{format, Aggregator, Config, FieldNames, Format, LineParser, QueryMode};
use libfuzzer_sys::fuzz_target;
use std::sync::Arc;

fuzz_target!(|data: &[u8]| {
    let mut cfg = Config::new(LineParser::new(
        Format::Ltsv(FieldNames::ltsv()),
        QueryMode::Keep,
        1.0,
    ));
    cfg.timeline = Some(1.0);
    cfg.slow = 2;
    cfg.grouper = keisoku_logs::group::Grouper::new(&[], true).unwrap();
    let mut agg = Aggregator::new(Arc::new(cfg));
    for line in data.split(|&b| b == b'\n') {
        let _ = agg.feed(line);
    }
    let a = agg.finish();
    if let Some(t) = &a.timeline {
        let _ = keisoku_logs::view::timeline_text(t, 3, 40);
    }
    let json = LineParser::new(
        Format::Json(FieldNames::json()),
        QueryMode::IgnoreValues,
        1e-6,
    );
    let _ = json.parse(data);
    let _ = format::detect(&[data]);
});
