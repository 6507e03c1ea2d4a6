//! The V8 tick log reader (`node --prof`) must never panic, and what it
//! returns must be usable by every consumer. Symbols come from no file:
//! a fuzzed log must not make the target read the paths it names.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "stacks_common.rs"]
mod common;

struct NoSymbols;

impl keisoku_stacks::v8log::SymbolSource for NoSymbols {
    fn symbols(&mut self, _path: &str, _spans: &[u64]) -> Option<keisoku_stacks::v8log::Symbols> {
        None
    }
}

fuzz_target!(|data: &[u8]| {
    if let Ok(p) = keisoku_stacks::v8log::parse(data, "fuzz", &mut NoSymbols) {
        common::consume(&p);
    }
});
