//! Property tests of the JavaScript profile readers: tick logs resolve
//! each address to the code at it, a Chrome trace reads the same however
//! its samples are cut into chunks, speedscope output reads back, and no
//! reader panics on damaged input.

use keisoku_stacks::collapse::fold_profile;
use keisoku_stacks::v8log::SymbolSource;
use proptest::prelude::*;
use std::collections::BTreeMap;

struct NoSymbols;

impl SymbolSource for NoSymbols {
    fn symbols(&mut self, _path: &str, _spans: &[u64]) -> Option<keisoku_stacks::v8log::Symbols> {
        None
    }
}

fn folded(p: &keisoku_stacks::Profile) -> BTreeMap<String, u64> {
    fold_profile(p, false).into_iter().collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn tick_stacks_name_the_code_at_each_address(
        ticks in prop::collection::vec((prop::collection::vec(0usize..8, 1..8), 0u64..0x100), 1..40),
    ) {
        // Eight functions at 0x10000 * (i + 1), 0x100 bytes each; a tick
        // hits any offset inside them, the stack listed leaf first.
        let mut log = String::from("v8-version,11,3,244,8,-node.38,0\n");
        for i in 0..8u64 {
            log.push_str(&format!(
                "code-creation,JS,10,{i},0x{:x},256,f{i} /app/x.js:{i}:1,0x9{i},*\n",
                0x10000 * (i + 1)
            ));
        }
        let mut want: BTreeMap<String, u64> = BTreeMap::new();
        for (n, (stack, off)) in ticks.iter().enumerate() {
            let addrs: Vec<String> = stack
                .iter()
                .map(|&f| format!("0x{:x}", 0x10000 * (f as u64 + 1) + off))
                .collect();
            log.push_str(&format!("tick,{},{},0,0x0,0,{}\n", addrs[0], 1000 + n, addrs[1..].join(",")));
            let names: Vec<String> = stack.iter().rev().map(|f| format!("f{f}")).collect();
            *want.entry(names.join(";")).or_default() += 1;
        }
        let p = keisoku_stacks::v8log::parse(log.as_bytes(), "p", &mut NoSymbols).unwrap();
        prop_assert_eq!(folded(&p), want);
        prop_assert_eq!(p.samples.len(), ticks.len());
    }

    #[test]
    fn chrome_trace_chunks_do_not_change_the_profile(
        samples in prop::collection::vec((2u64..6, 1u32..500), 1..60),
        cut in any::<prop::sample::Index>(),
    ) {
        // Nodes 2..5 in a chain under the root; samples with their deltas,
        // once in one chunk, once cut in two (nodes in the first).
        let nodes = r#"[{"id":1,"callFrame":{"functionName":"(root)"}},
            {"id":2,"parent":1,"callFrame":{"functionName":"a","url":"u"}},
            {"id":3,"parent":2,"callFrame":{"functionName":"b","url":"u"}},
            {"id":4,"parent":3,"callFrame":{"functionName":"c","url":"u"}},
            {"id":5,"parent":2,"callFrame":{"functionName":"d","url":"u"}}]"#;
        let chunk = |s: &[(u64, u32)], with_nodes: bool| {
            let ids: Vec<String> = s.iter().map(|x| x.0.to_string()).collect();
            let ds: Vec<String> = s.iter().map(|x| x.1.to_string()).collect();
            format!(
                r#"{{"pid":1,"tid":1,"ph":"P","name":"ProfileChunk","id":"0x1","args":{{"data":{{"cpuProfile":{{"nodes":{},"samples":[{}]}},"timeDeltas":[{}]}}}}}}"#,
                if with_nodes { nodes } else { "[]" },
                ids.join(","),
                ds.join(",")
            )
        };
        let head = r#"{"pid":1,"tid":1,"ph":"P","name":"Profile","id":"0x1","args":{"data":{"startTime":5}}}"#;
        let one = format!("[{head},{}]", chunk(&samples, true));
        let k = cut.index(samples.len());
        let two = format!("[{head},{},{}]", chunk(&samples[..k], true), chunk(&samples[k..], false));
        let a = keisoku_stacks::chrometrace::parse(one.as_bytes(), "t").unwrap();
        let b = keisoku_stacks::chrometrace::parse(two.as_bytes(), "t").unwrap();
        prop_assert_eq!(folded(&a), folded(&b));
        // Each sample weighs the time to the next: all but the last delta.
        let span: u64 = samples.iter().skip(1).map(|x| u64::from(x.1)).sum();
        prop_assert_eq!(a.total_weight(), span * 1000);
    }

    #[test]
    fn speedscope_output_reads_back(
        stacks in prop::collection::vec((prop::collection::vec("[a-z]{1,6}", 1..5), 1u64..50), 1..20),
    ) {
        let text: String = stacks.iter().map(|(f, n)| format!("{} {n}\n", f.join(";"))).collect();
        let p = keisoku_stacks::folded::parse(&mut text.as_bytes(), "p").unwrap();
        let out = keisoku_stacks::speedscope::write(&p);
        let q = keisoku_stacks::speedscope::parse(&out, "q").unwrap();
        let (a, b) = (folded(&p), folded(&q));
        let (ta, tb) = (p.total_weight() as f64, q.total_weight() as f64);
        prop_assert_eq!(a.len(), b.len());
        for (s, w) in &a {
            let back = b.get(s).copied().unwrap_or(0) as f64 / tb;
            prop_assert!((*w as f64 / ta - back).abs() < 1e-9, "{}", s);
        }
    }

    #[test]
    fn no_reader_panics_on_damaged_input(lines in prop::collection::vec(
        prop_oneof![
            Just("tick,0x10,5,0,0x0,0,0x20".to_owned()),
            Just("code-creation,JS,10,1,0x10,16,f a.js:1:1,0x9,~".to_owned()),
            Just("code-move,0x10,0x20".to_owned()),
            Just("code-delete,0x20".to_owned()),
            Just("shared-library,/nonexistent/lib.so,0x0,0xffffffffffffffff,0".to_owned()),
            "[ -~]{0,40}",
        ], 0..30)) {
        let log = format!("v8-version,11\n{}\n", lines.join("\n"));
        let _ = keisoku_stacks::v8log::parse(log.as_bytes(), "p", &mut NoSymbols);
        let json = lines.join(",");
        let _ = keisoku_stacks::v8pre::parse(format!("{{\"code\":[{json}],\"ticks\":[{json}]}}").as_bytes(), "p");
        let _ = keisoku_stacks::chrometrace::parse(format!("[{json}").as_bytes(), "p");
    }
}
