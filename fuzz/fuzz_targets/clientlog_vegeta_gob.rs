//! Any bytes as VegetaGob results (`keisoku import`, `record --client-results`):
//! the reader and the aggregator never panic, and their counts agree.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "clientlog_common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    common::run(keisoku_clientlog::Encoding::VegetaGob, data);
});
