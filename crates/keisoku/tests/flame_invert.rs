//! `keisoku flame --invert` names the right self functions: on a real perf
//! recording, the self shares it prints equal `perf report --no-children`'s
//! for every named symbol of perf's top ten (issue 13: it printed the
//! outermost caller, `__libc_start_call_main`, as 57.8% self).

mod common;
use common::{have, BIN};

use std::process::Command;

/// `  6.01%  [.] list_sort_impl   -  -` -> ("list_sort_impl", 6.01).
fn perf_report_self(text: &str) -> Vec<(String, f64)> {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .filter_map(|l| {
            let (pct, rest) = l.trim().split_once('%')?;
            let pct: f64 = pct.trim().parse().ok()?;
            let sym = rest
                .trim()
                .strip_prefix("[.]")
                .or_else(|| rest.trim().strip_prefix("[k]"))?;
            let sym = sym.trim().split("  ").next()?.trim().to_string();
            Some((sym, pct))
        })
        .collect()
}

#[test]
fn inverted_summary_matches_perf_report_no_children() {
    assert!(
        have("perf") && have("python3"),
        "perf and python3 are required: run scripts/setup.sh"
    );
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("perf.data");
    let rec = Command::new("perf")
        .args(["record", "-F", "999", "-g", "-o"])
        .arg(&data)
        .args([
            "--",
            "python3",
            "-c",
            "import hashlib\nx = b'a' * 1000\nfor i in range(200000):\n    hashlib.sha256(x).digest(); sorted(range(30))",
        ])
        .output()
        .unwrap();
    assert!(
        rec.status.success(),
        "{}",
        String::from_utf8_lossy(&rec.stderr)
    );
    let report = Command::new("perf")
        .args([
            "report",
            "--no-children",
            "--stdio",
            "--sort",
            "symbol",
            "-g",
            "none",
            "-i",
        ])
        .arg(&data)
        .output()
        .unwrap();
    assert!(report.status.success());
    let script = Command::new("perf")
        .args(["script", "-i"])
        .arg(&data)
        .output()
        .unwrap();
    assert!(script.status.success());
    let perf_txt = dir.path().join("p.perf");
    std::fs::write(&perf_txt, &script.stdout).unwrap();

    let named: Vec<(String, f64)> = perf_report_self(&String::from_utf8_lossy(&report.stdout))
        .into_iter()
        .take(10)
        .filter(|(s, _)| !s.starts_with("0x"))
        .collect();
    assert!(named.len() >= 3, "perf report named too little: {named:?}");
    let summary = |invert: bool| {
        let mut c = Command::new(BIN);
        c.args(["flame", perf_txt.to_str().unwrap(), "--top", "40"]);
        if invert {
            c.arg("--invert");
        }
        let out = c.output().unwrap();
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let inverted = common::top_self(&summary(true));
    for (sym, pct) in &named {
        let got = inverted.get(sym).copied();
        assert!(
            got.is_some_and(|g| (g - pct).abs() < 0.02),
            "{sym}: perf report --no-children {pct}%, keisoku flame --invert {got:?}"
        );
    }
    // No outermost caller poses as a self function.
    for caller in ["__libc_start_call_main", "_start", "main", "Py_RunMain"] {
        assert!(
            inverted.get(caller).is_none_or(|s| *s < 1.0),
            "{caller} listed as self {:?}",
            inverted.get(caller)
        );
    }
    assert_eq!(
        inverted,
        common::top_self(&summary(false)),
        "inverting changes no self time"
    );
}
