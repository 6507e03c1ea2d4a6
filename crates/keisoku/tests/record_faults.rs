//! `keisoku record` end to end: access-log rotation and truncation, a store
//! read while written, SIGINT, a killed keisoku, perf unavailable.

use keisoku_store::RunJson;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_keisoku");

fn keisoku(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn export(store: &Path, run: &str) -> RunJson {
    let out = keisoku(&["export", run, "--store", store.to_str().unwrap()]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn ltsv(uri: &str, status: u16) -> String {
    format!("time:21/Nov/2026:21:30:00 +0000\tmethod:GET\turi:{uri}\tstatus:{status}\tsize:5\treqtime:0.002\n")
}

fn append(path: &Path, lines: &str) {
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    f.write_all(lines.as_bytes()).unwrap();
}

#[test]
fn the_access_log_is_followed_through_rotation_and_truncation() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let log = dir.path().join("access.log");
    // Lines from before the run do not count.
    append(&log, &ltsv("/old", 200).repeat(7));
    let child = Command::new(BIN)
        .args([
            "record",
            "--access-log",
            log.to_str().unwrap(),
            "--store",
            store.to_str().unwrap(),
            "--name",
            "rot",
            "--",
            "sleep",
            "3.2",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(700));
    append(&log, &ltsv("/a", 200).repeat(10));
    // Half a line now, the rest later: never counted twice or lost.
    append(&log, "time:x\tmethod:GET\turi:/a\tstat");
    std::thread::sleep(Duration::from_millis(500));
    append(&log, "us:200\tsize:5\treqtime:0.001\n");
    std::thread::sleep(Duration::from_millis(400));
    // logrotate's create mode: rename, then the server writes a new file.
    append(&log, &ltsv("/b", 500).repeat(3));
    std::fs::rename(&log, dir.path().join("access.log.1")).unwrap();
    append(&dir.path().join("access.log.1"), &ltsv("/b", 500).repeat(2));
    append(&log, &ltsv("/c", 200).repeat(4));
    std::thread::sleep(Duration::from_millis(600));
    // copytruncate mode: the file is emptied in place.
    std::fs::File::create(&log).unwrap();
    append(&log, &ltsv("/d", 404).repeat(5));
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = export(&store, "rot");
    let count = |uri: &str| {
        run.routes
            .access_log
            .iter()
            .filter(|r| r.uri == uri)
            .map(|r| r.count)
            .sum::<u64>()
    };
    assert_eq!(count("/old"), 0);
    assert_eq!(count("/a"), 11);
    assert_eq!(count("/b"), 5);
    assert_eq!(count("/c"), 4);
    assert_eq!(count("/d"), 5);
    assert_eq!(
        run.routes
            .access_log
            .iter()
            .find(|r| r.uri == "/b")
            .unwrap()
            .s5xx,
        5
    );
    let rps = run
        .series
        .iter()
        .find(|s| s.name == "log.rps")
        .expect("log.rps");
    assert_eq!(rps.v.iter().sum::<f64>(), 25.0);
}

#[test]
fn the_store_is_readable_while_a_run_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let s = store.to_str().unwrap();
    let mut child = Command::new(BIN)
        .args([
            "record",
            "--interval",
            "200ms",
            "--store",
            s,
            "--name",
            "live",
            "--",
            "sleep",
            "4.5",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(3600));
    let runs = keisoku(&["runs", "--json", "--store", s]);
    assert!(
        runs.status.success(),
        "{}",
        String::from_utf8_lossy(&runs.stderr)
    );
    let list: serde_json::Value = serde_json::from_slice(&runs.stdout).unwrap();
    assert_eq!(list[0]["status"], "running");
    let live = export(&store, "live");
    assert_eq!(live.run.status, "running");
    let cpu = live
        .series
        .iter()
        .find(|s| s.name == "cpu.all.user")
        .expect("series flushed while running");
    assert!(cpu.t_ms.len() >= 5, "{:?}", cpu.t_ms);
    assert!(child.wait().unwrap().success());
    let done = export(&store, "live");
    assert_eq!(done.run.status, "complete");
    let cpu_done = done
        .series
        .iter()
        .find(|s| s.name == "cpu.all.user")
        .unwrap();
    assert!(cpu_done.t_ms.len() > cpu.t_ms.len());
    // 200 ms sampling: about 5 points a second.
    assert!(cpu_done.t_ms.len() >= 15, "{}", cpu_done.t_ms.len());
}

#[test]
fn sigint_keeps_the_run_marked_interrupted_and_a_killed_keisoku_reads_as_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let s = store.to_str().unwrap();
    let child = Command::new(BIN)
        .args([
            "record", "--store", s, "--name", "ctrlc", "--", "sleep", "30",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(2200));
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let started = std::time::Instant::now();
    let out = child.wait_with_output().unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let run = export(&store, "ctrlc");
    assert_eq!(run.run.status, "interrupted");
    assert!(run
        .series
        .iter()
        .any(|s| s.name.starts_with("cpu.") && s.v.len() >= 2));

    // SIGKILL: no chance to finish; the data written so far is readable.
    let mut child = Command::new(BIN)
        .args([
            "record", "--store", s, "--name", "killed", "--", "sleep", "30",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(3800));
    child.kill().unwrap();
    child.wait().unwrap();
    let run = export(&store, "killed");
    assert_eq!(run.run.status, "interrupted");
    assert!(run
        .series
        .iter()
        .any(|s| s.name == "cpu.all.user" && !s.v.is_empty()));
    let show = keisoku(&["runs", "--store", s]);
    let text = String::from_utf8_lossy(&show.stdout);
    assert_eq!(text.matches("interrupted").count(), 2, "{text}");
}

#[test]
fn without_perf_the_run_goes_on_and_says_how_to_fix_it() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    // A PATH with sh and sleep but no perf.
    let bin = dir.path().join("bin");
    std::fs::create_dir(&bin).unwrap();
    for tool in ["sh", "sleep"] {
        let real = ["/bin", "/usr/bin"]
            .iter()
            .map(|d| Path::new(d).join(tool))
            .find(|p| p.exists())
            .unwrap();
        std::os::unix::fs::symlink(real, bin.join(tool)).unwrap();
    }
    let mut watched = Command::new("sleep").arg("10").spawn().unwrap();
    let pid = watched.id().to_string();
    let out = Command::new(BIN)
        .env("PATH", &bin)
        .args([
            "record",
            "--pid",
            &pid,
            "--profile",
            "perf",
            "--store",
            store.to_str().unwrap(),
            "--",
            "sleep",
            "1.5",
        ])
        .output()
        .unwrap();
    let _ = watched.kill();
    let _ = watched.wait();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stderr.contains("no profile") && stderr.contains("perf") && stderr.contains("install"),
        "{stderr}"
    );
    let run = export(&store, "last");
    assert_eq!(run.run.status, "complete");
    assert!(run.profile.is_none());
    assert!(
        run.series.iter().any(|s| s.name == "proc.rss"),
        "the watched process was still sampled"
    );
    let notes = keisoku(&[
        "show",
        "last",
        "--output",
        "notes",
        "--store",
        store.to_str().unwrap(),
    ]);
    assert!(String::from_utf8_lossy(&notes.stdout).contains("perf"));
}
