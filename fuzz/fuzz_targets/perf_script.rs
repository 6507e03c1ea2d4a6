//! The perf script profile parser must never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = keisoku_stacks::perf::parse(&mut &data[..], "fuzz", &Default::default());
});
