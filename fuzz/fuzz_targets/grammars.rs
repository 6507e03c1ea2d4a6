//! Any text as the value of a flag with a grammar of its own: durations
//! (`-d`, `--timeline`), sizes (`--log-lines-max`), gate clauses (`--slo`,
//! `compare --fail-on-regression`), sweeps, target URLs and `-H` headers,
//! and the timestamps `keisoku logs` reads from a log line. The first byte
//! picks the grammar. No panic, and what is accepted is usable: a URL
//! keeps a host and a path that go on the wire, a header a name without
//! blanks, a sweep finite steps, and a timestamp formats as a date.
#![no_main]
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&pick, data)) = data.split_first() else {
        return;
    };
    if pick % 10 == 8 {
        // Log timestamps are bytes, as they come from the line.
        if let Some(secs) = keisoku_logs::timestamp::parse(data) {
            assert!(secs.is_finite(), "{secs}");
            let _ = keisoku_logs::timestamp::format_utc(secs);
        }
        return;
    }
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    match pick % 10 {
        0 => {
            let _ = keisoku_common::parse_duration(text);
            if let Some(s) = keisoku_logs::timestamp::parse_duration(text) {
                assert!(s > 0.0);
            }
        }
        1 => {
            let _ = keisoku_common::parse_size(text);
        }
        2 => {
            if let Ok(clauses) = keisoku_common::gate::clauses(text) {
                for c in clauses {
                    let _ = keisoku_common::Quantity::parse(c.value).map(|q| q.as_ms());
                }
            }
            let _ = keisoku_common::gate::clause_last_op(text);
            let _ = keisoku_common::Quantity::parse(text);
        }
        3 => {
            let _ = keisoku_report::compare::parse_gate(text);
        }
        4 => {
            if let Ok(slo) = keisoku_load::Slo::parse(text) {
                assert!(!slo.clauses.is_empty());
            }
        }
        5 => {
            if let Ok(steps) = keisoku_load::plan::parse_sweep(text) {
                assert!(steps.iter().all(|s| s.is_finite() && *s > 0.0), "{steps:?}");
            }
        }
        6 => {
            if let Ok(u) = keisoku_load::plan::parse_url(text) {
                assert!(!u.host.is_empty());
                assert!(u.path.starts_with('/'), "{:?}", u.path);
                assert!(!u.path.bytes().any(|b| b <= b' ' || b == 0x7f));
                assert!(!u.authority.bytes().any(|b| b <= b' ' || b == 0x7f));
            }
        }
        7 => {
            if let Ok((name, value)) = keisoku_load::plan::parse_header(text) {
                assert!(!name.is_empty());
                assert!(!name.bytes().any(|b| b <= b' ' || b == b':'), "{name:?}");
                assert!(
                    !value.bytes().any(|b| b == b'\r' || b == b'\n'),
                    "{value:?}"
                );
            }
        }
        _ => {
            // Times as the terminal shows them: ms since the epoch, seconds,
            // a duration in ms.
            if let Ok(ms) = text.trim().parse::<i64>() {
                let _ = keisoku_common::utc(ms);
            }
            if let Ok(secs) = text.trim().parse::<f64>() {
                let _ = keisoku_common::utc_iso(secs);
                let _ = keisoku_common::human_duration(secs);
            }
        }
    }
});
