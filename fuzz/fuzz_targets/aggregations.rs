//! The bpftrace and DTrace aggregation readers must never panic, and what
//! they return must be usable by every consumer.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "stacks_common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let _ = keisoku_stacks::bpftrace::looks_like(data);
    let _ = keisoku_stacks::dtrace::looks_like(data);
    if let Ok(p) = keisoku_stacks::bpftrace::parse(&mut &data[..], "fuzz") {
        common::consume(&p);
    }
    if let Ok(p) = keisoku_stacks::dtrace::parse(&mut &data[..], "fuzz") {
        common::consume(&p);
    }
});
