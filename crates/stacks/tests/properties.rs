//! Property tests: folded round trips, and no parser panics on any input.

use keisoku_stacks::collapse::{fold_perf, fold_profile, PerfFoldOptions};
use keisoku_stacks::{Input, ReadOptions};
use proptest::prelude::*;
use std::collections::BTreeMap;

fn frame() -> impl Strategy<Value = String> {
    "[a-zA-Z_:<>\\[\\]\\.]{1,12}"
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn folded_round_trip(stacks in prop::collection::vec((prop::collection::vec(frame(), 1..6), 1u64..1000), 1..30)) {
        let mut text = String::new();
        let mut expect: BTreeMap<String, u64> = BTreeMap::new();
        for (frames, n) in &stacks {
            let s = frames.join(";");
            text.push_str(&format!("{s} {n}\n"));
            *expect.entry(s).or_insert(0) += n;
        }
        let p = keisoku_stacks::folded::parse(&mut text.as_bytes(), "p").unwrap();
        // Annotation suffixes become kinds; folding writes names without them.
        let got: BTreeMap<String, u64> = fold_profile(&p, false).into_iter().collect();
        let strip = |s: &str| s.split(';').map(|f| f.trim_end_matches("_[k]").trim_end_matches("_[j]").trim_end_matches("_[i]").to_string()).collect::<Vec<_>>().join(";");
        let mut want: BTreeMap<String, u64> = BTreeMap::new();
        for (k, v) in expect { *want.entry(strip(&k)).or_insert(0) += v; }
        prop_assert_eq!(got, want);
    }

    #[test]
    fn speedscope_sampled_profiles_fold_to_their_stacks(
        frames in prop::collection::vec(frame(), 1..8),
        threads in prop::collection::vec(prop::collection::vec(prop::collection::vec(0usize..8, 0..5), 0..20), 1..4),
    ) {
        // Root-first stacks of indices into `frames` (taken modulo its length),
        // one speedscope profile per thread, 10 ms apart.
        let mut want: BTreeMap<String, u64> = BTreeMap::new();
        let mut profiles = Vec::new();
        for (t, samples) in threads.iter().enumerate() {
            let samples: Vec<Vec<usize>> = samples
                .iter()
                .map(|s| s.iter().map(|&i| i % frames.len()).collect())
                .collect();
            for s in &samples {
                if !s.is_empty() {
                    let names: Vec<&str> = s.iter().map(|&i| frames[i].as_str()).collect();
                    *want.entry(names.join(";")).or_insert(0) += 1;
                }
            }
            profiles.push(serde_json::json!({
                "type": "sampled", "name": format!("t{t}"), "unit": "milliseconds",
                "startValue": 0, "endValue": samples.len() * 10,
                "weights": vec![10; samples.len()], "samples": samples,
            }));
        }
        let doc = serde_json::json!({
            "profiles": profiles,
            "shared": {"frames": frames.iter().map(|f| serde_json::json!({"name": f})).collect::<Vec<_>>()},
        });
        let p = keisoku_stacks::speedscope::parse(doc.to_string().as_bytes(), "p").unwrap();
        prop_assert_eq!(p.threads.len(), threads.len());
        let got: BTreeMap<String, u64> = fold_profile(&p, false).into_iter().collect();
        prop_assert_eq!(got, want);
        let times = p.samples.time_ns.as_ref().unwrap();
        prop_assert!(times.iter().all(|t| t % 10_000_000 == 0));
    }

    #[test]
    fn no_panic_on_arbitrary_bytes(bytes in prop::collection::vec(any::<u8>(), 0..2048)) {
        let _ = keisoku_stacks::perf::parse(&mut &bytes[..], "x", &Default::default());
        let _ = fold_perf(&mut &bytes[..], "x", &PerfFoldOptions::default());
        let _ = keisoku_stacks::folded::parse(&mut &bytes[..], "x");
        let _ = keisoku_stacks::cpuprofile::parse(&bytes, "x");
        let _ = keisoku_stacks::pprof::parse(&bytes, "x");
        let _ = keisoku_stacks::speedscope::parse(&bytes, "x");
        let _ = keisoku_stacks::detect(&bytes);
        if let Ok(i) = Input::from_reader("x".into(), Box::new(std::io::Cursor::new(bytes.clone()))) {
            let _ = keisoku_stacks::read_input(i, &ReadOptions::default());
        }
    }

    #[test]
    fn no_panic_on_perf_like_text(lines in prop::collection::vec(prop_oneof![
        "[a-z ]{1,8} [0-9]{1,5}(/[0-9]{1,5})? (\\[[0-9]{3}\\] )?[0-9]{1,4}\\.[0-9]{6}: ([0-9]{1,7} )?[a-z-]{1,10}: ?",
        "\t +[0-9a-f]{1,16} [ -~]{0,30} \\([ -~]{0,20}\\)",
        "",
        "#[ -~]{0,20}",
        "[ -~]{0,40}",
    ], 0..60)) {
        let text = lines.join("\n");
        let a = fold_perf(&mut text.as_bytes(), "x", &PerfFoldOptions::default()).unwrap();
        // Cutting at sample boundaries must not change the result.
        let b = fold_perf(&mut text.as_bytes(), "x", &PerfFoldOptions { threads: 2, chunk_bytes: 64, ..Default::default() }).unwrap();
        let mut sa = Vec::new();
        let mut sb = Vec::new();
        a.write_sorted(&mut sa).unwrap();
        b.write_sorted(&mut sb).unwrap();
        prop_assert_eq!(sa, sb);
        let _ = keisoku_stacks::perf::parse(&mut text.as_bytes(), "x", &Default::default());
    }

    #[test]
    fn no_panic_on_mutated_pprof(flips in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 1..8)) {
        let mut raw = Vec::new();
        use std::io::Read;
        flate2::read::GzDecoder::new(std::fs::File::open(format!("{}/tests/data/go.pprof", env!("CARGO_MANIFEST_DIR"))).unwrap()).read_to_end(&mut raw).unwrap();
        for (i, b) in flips { let i = i.index(raw.len()); raw[i] = b; }
        let _ = keisoku_stacks::pprof::parse(&raw, "x");
    }

    #[test]
    fn no_panic_on_mutated_speedscope(digits in prop::collection::vec((any::<prop::sample::Index>(), 0u8..10), 1..8)) {
        // Changing digits keeps the JSON valid while frame indices go out
        // of range, weights and times change, and events reorder.
        let mut raw = std::fs::read(format!("{}/tests/data/py-spy.speedscope.json", env!("CARGO_MANIFEST_DIR"))).unwrap();
        let at: Vec<usize> = (0..raw.len()).filter(|&i| raw[i].is_ascii_digit()).collect();
        for (i, d) in digits { raw[at[i.index(at.len())]] = b'0' + d; }
        if let Ok(p) = keisoku_stacks::speedscope::parse(&raw, "x") {
            let _ = fold_profile(&p, true);
            let _ = keisoku_stacks::json::profile_json(&p, Default::default());
            let _ = keisoku_stacks::scope::heat_map(&p, 49, true);
        }
    }
}
