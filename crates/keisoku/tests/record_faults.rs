//! `keisoku record` end to end: access-log rotation and truncation, a store
//! read while written, SIGINT, a killed keisoku, perf unavailable.
//!
//! Every step that depends on keisoku having done something (started its
//! recorders, read a log line, stored a sample) waits for that condition,
//! observed from outside, instead of sleeping a fixed time: on a busy
//! machine start-up alone can take longer than any fixed sleep.

mod common;
use common::export_run;

use keisoku_store::RunJson;
use std::io::{BufRead, BufReader, Read, Write};
use std::path::Path;
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_keisoku");

/// Longest wait for a condition: far beyond what a loaded machine needs,
/// so only a real failure runs into it.
const PATIENCE: Duration = Duration::from_secs(40);

fn keisoku(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

/// The run as stored right now, or `None` while it does not exist yet.
fn export_live(store: &Path, run: &str) -> Option<RunJson> {
    let out = keisoku(&["export", run, "--store", store.to_str().unwrap()]);
    if !out.status.success() {
        return None;
    }
    serde_json::from_slice(&out.stdout).ok()
}

/// [`common::wait_for`] with this file's patience.
fn wait_for<T>(what: &str, cond: impl FnMut() -> Option<T>) -> T {
    common::wait_for(PATIENCE, what, cond)
}

/// Waits until `keisoku record` says its recorders run (it prints the run
/// id once they are started, before CMD starts), then keeps draining its
/// stderr so it never blocks; the returned handle yields the whole text.
fn wait_recording(child: &mut Child) -> std::thread::JoinHandle<String> {
    let mut err = BufReader::new(child.stderr.take().expect("stderr piped"));
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        let n = err.read_line(&mut line).unwrap();
        assert!(n > 0, "keisoku record ended before recording: {seen}");
        seen.push_str(&line);
        if line.contains("recording run") {
            break;
        }
    }
    std::thread::spawn(move || {
        let _ = err.read_to_string(&mut seen);
        seen
    })
}

/// A command that runs until `stop` exists, so the test decides when the
/// recording ends.
fn until(stop: &Path) -> [String; 3] {
    [
        "sh".into(),
        "-c".into(),
        format!("while [ ! -e '{}' ]; do sleep 0.05; done", stop.display()),
    ]
}

/// Requests the access-log follower has stored so far (sum of `log.rps`).
fn logged(store: &Path, run: &str) -> f64 {
    export_live(store, run)
        .and_then(|r| r.series.into_iter().find(|s| s.name == "log.rps"))
        .map_or(0.0, |s| s.v.iter().sum())
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
    let stop = dir.path().join("stop");
    // Lines from before the run do not count.
    append(&log, &ltsv("/old", 200).repeat(7));
    let mut child = Command::new(BIN)
        .args([
            "record",
            "--access-log",
            log.to_str().unwrap(),
            "--store",
            store.to_str().unwrap(),
            "--name",
            "rot",
            "--",
        ])
        .args(until(&stop))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = wait_recording(&mut child);
    // Half a line at the end of one write, the rest later: the follower
    // reads the half with the ten whole lines, and must neither count it
    // nor lose it.
    append(
        &log,
        &(ltsv("/a", 200).repeat(10) + "time:x\tmethod:GET\turi:/a\tstat"),
    );
    let n = wait_for("the first 10 lines stored", || {
        Some(logged(&store, "rot")).filter(|&n| n >= 10.0)
    });
    assert_eq!(n, 10.0, "the half line was counted");
    append(&log, "us:200\tsize:5\treqtime:0.001\n");
    // logrotate's create mode: rename, then the server writes a new file,
    // while it may still write a little to the old one.
    append(&log, &ltsv("/b", 500).repeat(3));
    std::fs::rename(&log, dir.path().join("access.log.1")).unwrap();
    append(&dir.path().join("access.log.1"), &ltsv("/b", 500).repeat(2));
    append(&log, &ltsv("/c", 200).repeat(4));
    let n = wait_for("the lines around the rotation stored", || {
        Some(logged(&store, "rot")).filter(|&n| n >= 20.0)
    });
    assert_eq!(n, 20.0);
    // copytruncate mode: the file is emptied in place and (here, before
    // the follower looks again) grows back past the old read position.
    std::fs::File::create(&log).unwrap();
    append(&log, &ltsv("/d", 404).repeat(5));
    std::fs::write(&stop, "").unwrap();
    let status = child.wait().unwrap();
    let stderr = stderr.join().unwrap();
    assert!(status.success(), "{stderr}");
    let run = export_run(&store, "rot");
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
    // Every line's body bytes (size:5), by the second it was read in.
    let bytes = run
        .series
        .iter()
        .find(|s| s.name == "log.body_bytes")
        .expect("log.body_bytes");
    assert_eq!(bytes.v.iter().sum::<f64>(), 125.0);
    // The run kept every line it counted, byte for byte and in order,
    // across the rotation and the truncation.
    let kept = run.routes.access_log_lines.as_ref().expect("lines kept");
    assert_eq!(
        (kept.lines, kept.kept_lines, kept.truncated),
        (25, 25, false)
    );
    let expected = ltsv("/a", 200).repeat(10)
        + "time:x\tmethod:GET\turi:/a\tstatus:200\tsize:5\treqtime:0.001\n"
        + &ltsv("/b", 500).repeat(5)
        + &ltsv("/c", 200).repeat(4)
        + &ltsv("/d", 404).repeat(5);
    assert_eq!(kept.kept_bytes, expected.len() as u64);
    assert_eq!(log_lines(&store, "rot"), expected);
}

/// The access-log lines a run kept (`keisoku export RUN --format log`).
fn log_lines(store: &Path, run: &str) -> String {
    String::from_utf8(common::export(store, run, "log")).expect("UTF-8 lines")
}

#[test]
fn the_store_is_readable_while_a_run_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let stop = dir.path().join("stop");
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
        ])
        .args(until(&stop))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    // Series reach the store every few seconds while the run goes on.
    let live = wait_for("cpu.all.user stored while running", || {
        export_live(&store, "live").filter(|r| {
            r.series
                .iter()
                .any(|s| s.name == "cpu.all.user" && s.t_ms.len() >= 5)
        })
    });
    assert_eq!(live.run.status, "running");
    let runs = keisoku(&["runs", "--json", "--store", s]);
    assert!(
        runs.status.success(),
        "{}",
        String::from_utf8_lossy(&runs.stderr)
    );
    let list: serde_json::Value = serde_json::from_slice(&runs.stdout).unwrap();
    assert_eq!(list[0]["status"], "running");
    let cpu = live
        .series
        .iter()
        .find(|s| s.name == "cpu.all.user")
        .unwrap();
    // Whatever the sampler does in this half second (a tick, or nothing and
    // then a last sample at the stop), the finished run has more points.
    std::thread::sleep(Duration::from_millis(500));
    std::fs::write(&stop, "").unwrap();
    assert!(child.wait().unwrap().success());
    let done = export_run(&store, "live");
    assert_eq!(done.run.status, "complete");
    let cpu_done = done
        .series
        .iter()
        .find(|s| s.name == "cpu.all.user")
        .unwrap();
    assert!(cpu_done.t_ms.len() > cpu.t_ms.len());
    // 200 ms sampling: about 5 points a second (half of that allows for a
    // starved sampler thread; 1 s sampling would give a fifth).
    let expected = done.run.duration_ms / 200.0;
    assert!(
        cpu_done.t_ms.len() as f64 >= expected * 0.5,
        "{} points in {} ms",
        cpu_done.t_ms.len(),
        done.run.duration_ms
    );
}

#[test]
fn sigint_keeps_the_run_marked_interrupted_and_a_killed_keisoku_reads_as_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let s = store.to_str().unwrap();
    let log = dir.path().join("access.log");
    std::fs::write(&log, "").unwrap();
    let l = log.to_str().unwrap();
    let mut child = Command::new(BIN)
        .args([
            "record",
            "--store",
            s,
            "--name",
            "ctrlc",
            "--access-log",
            l,
            "--",
            "sleep",
            "60",
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let stderr = wait_recording(&mut child);
    let live = wait_for("two cpu samples stored", || {
        export_live(&store, "ctrlc").and_then(|r| {
            r.series
                .into_iter()
                .find(|s| s.name == "cpu.all.user" && s.v.len() >= 2)
        })
    });
    // Lines written just before the interruption are still kept: the
    // follower reads and stores what is left when it stops.
    append(&log, &ltsv("/late", 200).repeat(3));
    // SAFETY: signalling the child this test started.
    unsafe { libc::kill(child.id() as i32, libc::SIGINT) };
    let started = Instant::now();
    let status = child.wait().unwrap();
    let stderr = stderr.join().unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(status.code(), Some(1), "{stderr}");
    let run = export_run(&store, "ctrlc");
    assert_eq!(run.run.status, "interrupted");
    let cpu = run
        .series
        .iter()
        .find(|s| s.name == "cpu.all.user")
        .expect("cpu.all.user kept");
    assert!(cpu.v.len() >= live.v.len(), "{cpu:?} after {live:?}");
    // The points sampled after the last periodic write are kept too: the
    // newest is from the moment of the interruption, not seconds before.
    let newest = cpu.t_ms.last().copied().unwrap_or(0.0);
    assert!(
        newest >= run.run.duration_ms - 1000.0,
        "newest point at {newest} ms, run ended at {} ms",
        run.run.duration_ms
    );
    assert_eq!(log_lines(&store, "ctrlc"), ltsv("/late", 200).repeat(3));

    // SIGKILL: no chance to finish; the data written so far is readable.
    let stop = dir.path().join("stop");
    let mut child = Command::new(BIN)
        .args([
            "record",
            "--store",
            s,
            "--name",
            "killed",
            "--access-log",
            l,
            "--",
        ])
        .args(until(&stop))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    wait_for("series stored before the kill", || {
        export_live(&store, "killed").filter(|r| {
            r.series
                .iter()
                .any(|s| s.name == "cpu.all.user" && !s.v.is_empty())
        })
    });
    // Lines are written about a second after they are read.
    let before = ltsv("/kept", 200).repeat(4) + &ltsv("/kept", 503);
    append(&log, &before);
    wait_for("the log lines stored before the kill", || {
        let out = keisoku(&["export", "killed", "--format", "log", "--store", s]);
        (out.stdout == before.as_bytes()).then_some(())
    });
    child.kill().unwrap();
    child.wait().unwrap();
    // The orphaned CMD may go now.
    std::fs::write(&stop, "").unwrap();
    let run = export_run(&store, "killed");
    assert_eq!(run.run.status, "interrupted");
    assert!(run
        .series
        .iter()
        .any(|s| s.name == "cpu.all.user" && !s.v.is_empty()));
    // The killed run never stored its route table, yet its kept lines
    // answer every `keisoku logs` option.
    assert_eq!(log_lines(&store, "killed"), before);
    let out = keisoku(&[
        "logs",
        "killed",
        "--store",
        s,
        "--format",
        "tsv",
        "-o",
        "count,5xx,uri",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "Count\t5xx\tUri\n5\t1\t/kept\n"
    );
    // ... and `keisoku logs diff`.
    let out = keisoku(&[
        "logs", "diff", "killed", "killed", "--store", s, "--format", "tsv",
    ]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success() && text.contains("/kept"),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
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
    let run = export_run(&store, "last");
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

#[test]
fn a_log_with_an_id_in_every_path_keeps_memory_bounded_and_counts_every_request() {
    // 6,000 distinct paths in one burst: more routes than keisoku gives
    // per-second histograms, each of which would cost ~190 KB.
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let log = dir.path().join("access.log");
    let seed = dir.path().join("seed.log");
    let text: String = (0..6000).map(|i| ltsv(&format!("/u/{i}"), 200)).collect();
    std::fs::write(&seed, &text).unwrap();
    std::fs::write(&log, "").unwrap();
    let s = store.to_str().unwrap();
    let out = Command::new("/usr/bin/time")
        .args(["-f", "%M", BIN, "record", "--store", s, "--name", "ids"])
        .args(["--profile", "none", "--access-log", log.to_str().unwrap()])
        .args(["--", "sh", "-c"])
        .arg(format!("cat '{}' >> '{}'", seed.display(), log.display()))
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    let rss_kb: u64 = err.lines().last().unwrap().trim().parse().unwrap();
    assert!(rss_kb < 400_000, "keisoku record peaked at {rss_kb} KB");
    assert!(err.contains("more than 5000 distinct routes"), "{err}");
    let run = export_run(&store, "ids");
    let rps = run.series.iter().find(|s| s.name == "log.rps").unwrap();
    assert_eq!(rps.v.iter().sum::<f64>(), 6000.0);
    assert_eq!(log_lines(&store, "ids"), text);
}
