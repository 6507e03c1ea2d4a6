//! Any bytes as a log of every built-in format (common, combined, Apache
//! %D/%T, Caddy, CloudFront, ELB/ALB, S3) through the aggregator and every
//! output, and through format recognition: nothing may panic.
#![no_main]
use keisoku_logs::builtin::{Builtin, Kind};
use keisoku_logs::{format, Format, LineParser, QueryMode};
use libfuzzer_sys::fuzz_target;

#[path = "logs_common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, data)) = data.split_first() else {
        return;
    };
    let kind = Kind::ALL[usize::from(pick) % Kind::ALL.len()];
    let parser = LineParser::new(Format::Builtin(Builtin::new(kind)), QueryMode::Keep, 1.0);
    common::run(parser, None, data);
    let lines: Vec<&[u8]> = data.split(|&b| b == b'\n').take(20).collect();
    let _ = format::candidates(&lines);
    let _ = format::detected(&lines);
});
