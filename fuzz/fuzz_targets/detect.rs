//! Format detection plus the chosen parser, through the gzip-aware input.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let reader = Box::new(std::io::Cursor::new(data.to_vec()));
    if let Ok(input) = keisoku_stacks::Input::from_reader("fuzz".into(), reader) {
        let _ = keisoku_stacks::read_input(input, &Default::default());
    }
});
