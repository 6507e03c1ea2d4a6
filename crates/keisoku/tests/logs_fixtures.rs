//! `keisoku logs` against outputs of real alp v1.0.21 stored with the
//! fixture logs (crates/logs/tests/fixtures; regenerate with
//! bench/alp/make-fixtures.sh). Runs offline.

#[path = "logs_common.rs"]
mod logs_common;

use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../logs/tests/fixtures")
}

fn keisoku(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_keisoku"))
        .args(args)
        .output()
        .expect("run keisoku")
}

fn format_of(args: &[String]) -> String {
    args.iter()
        .position(|a| a == "--format")
        .map(|i| args[i + 1].clone())
        .unwrap_or_else(|| "table".into())
}

#[test]
fn every_fixture_case_matches_alp() {
    let dir = fixtures();
    let cases: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(dir.join("cases.json")).expect("cases.json"))
            .expect("json");
    let mut exact = 0;
    let mut checked = 0;
    for case in cases.as_array().expect("array") {
        let name = case["name"].as_str().expect("name");
        let cmd = case["cmd"].as_str().expect("cmd");
        let file = dir.join(case["file"].as_str().expect("file"));
        let args: Vec<String> = case["args"]
            .as_array()
            .expect("args")
            .iter()
            .map(|a| a.as_str().expect("arg").to_string())
            .collect();
        let want = std::fs::read_to_string(dir.join("expected").join(format!("{name}.out")))
            .expect("expected output");
        let mut all: Vec<&str> = vec!["logs", cmd, file.to_str().expect("utf-8 path")];
        all.extend(args.iter().map(String::as_str));
        let out = keisoku(&all);
        assert!(
            out.status.success(),
            "{name}: exit {:?}: {}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        let got = String::from_utf8(out.stdout).expect("utf-8");
        checked += 1;
        if got == want {
            exact += 1;
            continue;
        }
        // Not byte-identical: only percentile cells may differ (histogram error).
        let fmt = format_of(&args);
        let headers = !args.iter().any(|a| a == "--noheaders");
        let a = logs_common::parse(&want, &fmt, headers);
        let o = logs_common::parse(&got, &fmt, headers);
        logs_common::assert_same(&a, &o, name);
        logs_common::assert_same_order(&a, &o, &args, name);
    }
    assert!(checked >= 19, "only {checked} cases ran");
    // Layouts are alp's byte for byte: every case whose percentiles all land
    // on exact histogram values prints identically (tables, markdown, csv,
    // tsv, json; LTSV, JSON and regexp inputs). Values over 2 s can round a
    // percentile by a millisecond, which the cell comparison above allows.
    assert!(
        exact >= 6,
        "only {exact} of {checked} cases were byte-identical to alp"
    );
}

#[test]
fn malformed_lines_are_reported_with_line_numbers_and_skipped() {
    let f = fixtures().join("mixed.ltsv");
    let out = keisoku(&["logs", "ltsv", f.to_str().unwrap(), "-o", "count,uri"]);
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("skipped 2 malformed of 243 lines"), "{err}");
    assert!(
        err.contains("line 83: not a LTSV line: this is not ltsv"),
        "{err}"
    );
    assert!(err.contains("line 124: status is not an integer"), "{err}");
    let strict = keisoku(&["logs", "ltsv", f.to_str().unwrap(), "--strict"]);
    assert_eq!(strict.status.code(), Some(2));
    let err = String::from_utf8_lossy(&strict.stderr);
    assert!(err.contains("line 83"), "{err}");
}

#[test]
fn wrong_format_exits_2_and_names_the_right_one() {
    let dir = fixtures();
    let out = keisoku(&["logs", "ltsv", dir.join("mixed.json").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("looks like a json log: try `keisoku logs json`"),
        "{err}"
    );
    let out = keisoku(&["logs", "json", dir.join("mixed.ltsv").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("looks like a ltsv log"));
    let out = keisoku(&["logs", "ltsv", dir.join("mixed.combined").to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("looks like a regexp log"));
}

#[test]
fn bad_flags_exit_2_with_a_message() {
    let f = fixtures().join("mixed.ltsv");
    let f = f.to_str().unwrap();
    for (args, needle) in [
        (vec!["--sort", "bogus"], "--sort"),
        (vec!["--format", "xml"], "--format"),
        (vec!["-o", "count,nope"], "invalid keywords: nope"),
        (vec!["-m", "("], "-m"),
        (vec!["-f", "Status >"], "-f"),
        (vec!["--percentiles", "101"], "--percentiles"),
        (vec!["--timeline", "soon"], "--timeline"),
        (vec!["--limit", "3"], "distinct routes"),
    ] {
        let mut all = vec!["logs", "ltsv", f];
        all.extend(args.iter());
        let out = keisoku(&all);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(
            err.lines().count(),
            1,
            "{args:?}: one-line message expected: {err}"
        );
    }
    let out = keisoku(&["logs", "ltsv", "/nonexistent/access.log"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/access.log"));
}

#[test]
fn gzip_input_and_multiple_threads_give_the_same_table() {
    use std::io::Write;
    let src = std::fs::read(fixtures().join("mixed.ltsv")).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let gz = dir.path().join("a.log.gz");
    let mut enc = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::fast(),
    );
    enc.write_all(&src).unwrap();
    enc.finish().unwrap();
    let plain = fixtures().join("mixed.ltsv");
    let a = keisoku(&[
        "logs",
        "ltsv",
        plain.to_str().unwrap(),
        "--threads",
        "1",
        "--no-progress",
    ]);
    let b = keisoku(&["logs", "ltsv", gz.to_str().unwrap(), "--threads", "2"]);
    assert!(a.status.success() && b.status.success());
    assert_eq!(a.stdout, b.stdout);
}
