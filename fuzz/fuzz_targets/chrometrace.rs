//! The Chrome trace reader must never panic, and what it returns must be
//! usable by every consumer.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "stacks_common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = keisoku_stacks::chrometrace::parse(data, "fuzz") {
        common::consume(&p);
    }
});
