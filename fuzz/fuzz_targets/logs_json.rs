//! Any bytes as a JSON-lines access log (Apache `%D` microseconds, queries
//! kept without values) through the aggregator and every output.
#![no_main]
use keisoku_logs::{FieldNames, Format, LineParser, QueryMode};
use libfuzzer_sys::fuzz_target;

#[path = "logs_common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let parser = LineParser::new(
        Format::Json(FieldNames::json()),
        QueryMode::IgnoreValues,
        1e-6,
    );
    common::run(parser, None, data);
});
