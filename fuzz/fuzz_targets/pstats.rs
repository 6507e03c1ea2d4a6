//! The marshal reader and the pstats reader must never panic on any bytes;
//! a call graph they return must estimate a usable flame graph and render
//! its tables.
#![no_main]
use libfuzzer_sys::fuzz_target;

#[path = "stacks_common.rs"]
mod common;

fuzz_target!(|data: &[u8]| {
    let _ = keisoku_stacks::marshal::loads(data);
    if let Ok(g) = keisoku_stacks::pstats::parse(data, "fuzz") {
        common::consume(&g.estimate("fuzz"));
        let all = regex::Regex::new(".").expect("a valid regex");
        let _ = keisoku_stacks::callgraph::render_table(
            &g,
            keisoku_stacks::callgraph::SortKey::Tottime,
            20,
            None,
        );
        let _ = keisoku_stacks::callgraph::render_callers(&g, &all);
    }
});
