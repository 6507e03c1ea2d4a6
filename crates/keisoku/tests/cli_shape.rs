//! Behaviours every command shares, checked on the real binary: a closed
//! pipe ends a command quietly with exit 0, one store error text, one
//! duration grammar.

mod common;

use common::BIN;
use std::io::{Read, Write};
use std::process::{Command, Stdio};

/// Runs keisoku with `args`, reads `keep` bytes of its stdout, closes the
/// pipe and returns its exit code (a reader that had enough, as `| head`).
fn exit_after_reading(args: &[&str], keep: usize) -> (Option<i32>, String) {
    let mut child = Command::new(BIN)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start keisoku");
    let mut out = child.stdout.take().expect("stdout");
    let mut buf = vec![0u8; keep];
    out.read_exact(&mut buf).expect("the first bytes of output");
    drop(out);
    let mut err = String::new();
    child
        .stderr
        .take()
        .expect("stderr")
        .read_to_string(&mut err)
        .expect("stderr text");
    let status = child.wait().expect("wait for keisoku");
    (status.code(), err)
}

/// A perf script with `n` samples, far more output than a pipe buffers.
fn big_perf_script(n: usize) -> String {
    let mut s = String::with_capacity(n * 120);
    for i in 0..n {
        s.push_str(&format!(
            "app 42/42 [000] {}.{:06}: 10101010 cpu-clock:\n\
             \t    55d0 leaf_{i}+0x1 (/usr/bin/app)\n\
             \t    55c0 middle+0x2 (/usr/bin/app)\n\
             \t    55b0 main+0x3 (/usr/bin/app)\n\n",
            1000 + i / 1000,
            i % 1000 * 1000
        ));
    }
    s
}

#[test]
fn a_closed_pipe_ends_collapse_and_report_with_exit_0() {
    let dir = tempfile::tempdir().unwrap();
    let perf = dir.path().join("big.perf");
    std::fs::write(&perf, big_perf_script(20_000)).unwrap();
    let (code, err) = exit_after_reading(&["collapse", "perf", perf.to_str().unwrap()], 1);
    assert_eq!(code, Some(0), "collapse | head -1: {err}");
    assert!(!err.contains("error"), "{err}");

    // A stored run to report on: the page is far larger than a pipe buffer.
    let store_path = dir.path().join("runs.db");
    let store = keisoku_store::Store::open(&store_path).unwrap();
    let run = store.create_run(&keisoku_store::NewRun::default()).unwrap();
    store
        .finish(&run, keisoku_store::RunStatus::Complete, 1000.0)
        .unwrap();
    drop(store);
    let (code, err) = exit_after_reading(
        &[
            "report",
            &run,
            "-o",
            "-",
            "--store",
            store_path.to_str().unwrap(),
        ],
        1,
    );
    assert_eq!(code, Some(0), "report -o - | head -c1: {err}");
    assert!(!err.contains("error"), "{err}");
}

#[test]
fn an_unknown_run_is_named_once_with_one_hint() {
    let dir = tempfile::tempdir().unwrap();
    let store_path = dir.path().join("runs.db");
    keisoku_store::Store::open(&store_path).unwrap();
    for cmd in ["report", "show", "export"] {
        let out = Command::new(BIN)
            .args([cmd, "no-such-run", "--store"])
            .arg(&store_path)
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{cmd}: {err}");
        assert_eq!(err.matches("keisoku runs").count(), 1, "{cmd}: {err}");
    }
}

#[test]
fn record_takes_the_durations_logs_takes() {
    let dir = tempfile::tempdir().unwrap();
    let store_path = dir.path().join("runs.db");
    // `logs --timeline 1d` is accepted; so is `record --interval 1d`.
    let out = Command::new(BIN)
        .args(["record", "--interval", "1d", "--profile", "none", "--store"])
        .arg(&store_path)
        .args(["--", "true"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "record --interval 1d: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut log = tempfile::NamedTempFile::new().unwrap();
    writeln!(
        log,
        "time:2026-11-23T10:00:00+00:00\tmethod:GET\turi:/a\tstatus:200\tsize:10\treqtime:0.010"
    )
    .unwrap();
    let out = Command::new(BIN)
        .args(["logs", "ltsv", "--timeline", "1d"])
        .arg(log.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "logs --timeline 1d: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// ARCHITECTURE.md: no command module imports another; what commands share
/// lives in src/shared/.
#[test]
fn no_command_imports_another() {
    let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/cmd");
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().is_some_and(|n| n == "mod.rs") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        for (i, line) in text.lines().enumerate() {
            assert!(
                !line.contains("crate::cmd::") && !line.contains("super::"),
                "{}:{}: a command imports another: {line}",
                path.display(),
                i + 1
            );
        }
    }
}
