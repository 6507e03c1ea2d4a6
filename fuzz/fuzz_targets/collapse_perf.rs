//! The stackcollapse-perf.pl compatible folder must never panic, and
//! cutting the input at sample boundaries must not change its output.
#![no_main]
use keisoku_stacks::collapse::{fold_perf, PerfFoldOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let one = fold_perf(&mut &data[..], "fuzz", &PerfFoldOptions::default());
    let split = PerfFoldOptions { threads: 2, chunk_bytes: 32, ..Default::default() };
    let two = fold_perf(&mut &data[..], "fuzz", &split);
    if let (Ok(a), Ok(b)) = (one, two) {
        let (mut x, mut y) = (Vec::new(), Vec::new());
        a.write_sorted(&mut x).unwrap();
        b.write_sorted(&mut y).unwrap();
        assert_eq!(x, y);
    }
});
