//! The folded stacks parser must never panic.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = keisoku_stacks::folded::parse(&mut &data[..], "fuzz");
});
