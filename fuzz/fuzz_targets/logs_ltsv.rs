//! Any bytes as an LTSV access log through the aggregator and every output:
//! nothing may panic. Format detection runs on the same bytes.
#![no_main]
use keisoku_logs::{format, FieldNames, Format, LineParser, QueryMode};
use libfuzzer_sys::fuzz_target;

#[path = "logs_common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let parser = LineParser::new(Format::Ltsv(FieldNames::ltsv()), QueryMode::Keep, 1.0);
    common::run(parser, None, data);
    let lines: Vec<&[u8]> = data.split(|&b| b == b'\n').take(8).collect();
    let _ = format::detect(&lines);
});
