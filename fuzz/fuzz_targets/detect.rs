//! Format detection plus the chosen parser, through the gzip-aware input,
//! as `keisoku flame FILE` reads any file; the profile must be usable by
//! every consumer.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "stacks_common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let reader = Box::new(std::io::Cursor::new(data.to_vec()));
    if let Ok(input) = keisoku_stacks::Input::from_reader("fuzz".into(), reader) {
        // perf.data is read by running perf on a file: not this target's.
        if keisoku_stacks::detect(&input.head) == Some(keisoku_stacks::Format::PerfData) {
            return;
        }
        if let Ok(loaded) = keisoku_stacks::read_input(input, &Default::default()) {
            common::consume(&loaded.profile);
        }
    }
});
