//! The stackcollapse-perf.pl compatible folder must never panic under any
//! combination of its flags, and cutting the input at sample boundaries
//! (several threads, tiny work units) must not change its output.
#![no_main]
use keisoku_stacks::collapse::{fold_perf, PerfFoldOptions};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the flags, so every flag combination is explored
    // on the same perf text; the rest is the input.
    let Some((&flags, text)) = data.split_first() else {
        return;
    };
    let base = PerfFoldOptions {
        include_pid: flags & 1 != 0,
        include_tid: flags & 2 != 0,
        annotate_kernel: flags & 4 != 0,
        annotate_jit: flags & 8 != 0,
        include_addrs: flags & 16 != 0,
        // An event name that appears in the seeds, or one that never does.
        event_filter: match flags >> 5 {
            1 => Some("cycles".into()),
            2 => Some("cpu-clock".into()),
            3 => Some("no-such-event".into()),
            _ => None,
        },
        ..Default::default()
    };
    let one = fold_perf(&mut &text[..], "fuzz", &base);
    let split = PerfFoldOptions {
        threads: 2,
        chunk_bytes: 32,
        ..base.clone()
    };
    let two = fold_perf(&mut &text[..], "fuzz", &split);
    match (one, two) {
        (Ok(a), Ok(b)) => {
            let (mut x, mut y) = (Vec::new(), Vec::new());
            a.write_sorted(&mut x).unwrap();
            b.write_sorted(&mut y).unwrap();
            assert_eq!(x, y);
            assert_eq!(a.unrecognised, b.unrecognised);
        }
        (Err(_), Err(_)) => {}
        (a, b) => panic!(
            "one thread and split folding disagree: {:?} vs {:?}",
            a.is_ok(),
            b.is_ok()
        ),
    }
});
