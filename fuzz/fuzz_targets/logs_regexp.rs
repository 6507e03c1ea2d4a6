//! Any bytes as an nginx combined log (alp's default `regexp` pattern, times
//! in milliseconds) through the aggregator and every output.
#![no_main]
use keisoku_logs::format::DEFAULT_PATTERN;
use keisoku_logs::{FieldNames, Format, LineParser, QueryMode};
use libfuzzer_sys::fuzz_target;

#[path = "logs_common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let format = Format::regexp(DEFAULT_PATTERN, FieldNames::json()).unwrap();
    let parser = LineParser::new(format, QueryMode::Drop, 1e-3);
    common::run(parser, None, data);
});
