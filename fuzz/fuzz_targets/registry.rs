//! Any bytes read with `--format NAME` forced, for every format in the
//! registry (the first byte picks it): the text check, then that format's
//! reader, as `keisoku flame --format NAME FILE` reads a file of another
//! kind. The profile must be usable by every consumer.
#![no_main]
use keisoku_stacks::{Format, Input, ReadOptions, FORMATS};
use libfuzzer_sys::fuzz_target;

#[path = "stacks_common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, data)) = data.split_first() else {
        return;
    };
    let format = FORMATS[usize::from(pick) % FORMATS.len()].format;
    // perf.data is read by running perf on a file: not this target's.
    if format == Format::PerfData {
        return;
    }
    let reader = Box::new(std::io::Cursor::new(data.to_vec()));
    let Ok(input) = Input::from_reader("fuzz".into(), reader) else {
        return;
    };
    let opts = ReadOptions {
        format: Some(format),
        event: None,
    };
    if let Ok(loaded) = keisoku_stacks::read_input(input, &opts) {
        assert_eq!(
            loaded.format, format,
            "a forced format was not the one read"
        );
        common::consume(&loaded.profile);
    }
});
