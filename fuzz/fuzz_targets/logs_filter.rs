//! A `--filters` expression (the first line) applied to an LTSV log (the
//! rest): compiling and evaluating any expression on any record must not
//! panic.
#![no_main]
use keisoku_logs::{filter::Filter, FieldNames, Format, LineParser, QueryMode};
use libfuzzer_sys::fuzz_target;

#[path = "logs_common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let (expr, log) = match data.iter().position(|&b| b == b'\n') {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &b""[..]),
    };
    let Ok(expr) = std::str::from_utf8(expr) else {
        return;
    };
    let Ok(filter) = Filter::new(expr) else {
        return;
    };
    let parser = LineParser::new(Format::Ltsv(FieldNames::ltsv()), QueryMode::Keep, 1.0);
    common::run(parser, Some(filter), log);
});
