//! A `--load` dump: any text must either be refused with an error or read
//! back into routes that render in every format and dump again.
#![no_main]
use keisoku_logs::dump;
use libfuzzer_sys::fuzz_target;

#[path = "logs_common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok((mut routes, counts)) = dump::from_json(text) else {
        return;
    };
    common::render_all(&mut routes);
    let again = dump::to_json(&routes, &counts);
    if let Err(e) = dump::from_json(&again) {
        panic!("a dump that was read does not read back once written: {e}\n{again}");
    }
});
