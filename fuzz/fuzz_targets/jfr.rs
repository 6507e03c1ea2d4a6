//! The JFR reader must never panic, whichever event is asked for, and what
//! it returns must be usable by every consumer. Seed the corpus with real
//! recordings (`jcmd PID JFR.dump`, async-profiler `-o jfr`): the format
//! is too structured for random bytes to get past the chunk header.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "stacks_common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the event, so the allocation and lock paths
    // (weights, durations) are fuzzed as well as execution samples.
    let Some((&pick, data)) = data.split_first() else {
        return;
    };
    let event = match pick % 4 {
        0 => None,
        1 => Some("jdk.ObjectAllocationSample"),
        2 => Some("jdk.JavaMonitorEnter"),
        _ => Some("jdk.ObjectAllocationInNewTLAB"),
    };
    let opts = keisoku_stacks::ReadOptions {
        format: None,
        event: event.map(str::to_owned),
    };
    if let Ok(p) = keisoku_stacks::jfr::parse(data, "fuzz", &opts) {
        common::consume(&p.profile);
    }
});
