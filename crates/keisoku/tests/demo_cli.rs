//! `keisoku demo` end to end: the real binary starts its target as a child
//! process, sweeps it, reports, and leaves no process behind.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

fn keisoku() -> Command {
    // The demo records into ./.keisoku and writes ./keisoku-demo: keep both out of the tree.
    let dir = std::env::temp_dir().join(format!("keisoku-demo-cli-{}", std::process::id()));
    let _ = std::fs::create_dir_all(&dir);
    let mut c = Command::new(env!("CARGO_BIN_EXE_keisoku"));
    c.current_dir(dir);
    c
}

fn demo(args: &[&str]) -> Output {
    keisoku()
        .arg("demo")
        .args(args)
        .output()
        .expect("run keisoku")
}

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// The pids of the targets a run printed (`(pid N; ...`).
fn target_pids(out: &str) -> Vec<u32> {
    out.lines()
        .filter_map(|l| l.split("(pid ").nth(1))
        .filter_map(|rest| rest.split(|c: char| !c.is_ascii_digit()).next())
        .filter_map(|n| n.parse().ok())
        .collect()
}

/// True once /proc no longer lists `pid` (or lists another process's
/// zombie-free entry that is not a keisoku demo target).
fn gone(pid: u32) -> bool {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    !text(&cmdline).contains("--target-only")
}

fn wait_gone(pid: u32) -> bool {
    let deadline = Instant::now() + Duration::from_secs(5);
    while Instant::now() < deadline {
        if gone(pid) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    false
}

#[test]
fn quick_demo_prints_tables_knee_and_slo_and_stops_its_targets() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("demo.json");
    let o = demo(&["--quick", "--json", json.to_str().unwrap()]);
    let out = text(&o.stdout);
    assert!(
        o.status.code() == Some(0) || o.status.code() == Some(3),
        "status {:?}\n{out}\n{}",
        o.status,
        text(&o.stderr)
    );
    assert!(out.contains("== naive target: http://127.0.0.1:"), "{out}");
    assert!(out.contains("== tuned target: http://127.0.0.1:"), "{out}");
    let tables = out
        .lines()
        .filter(|l| l.trim_start().starts_with("connections "))
        .count();
    assert_eq!(tables, 2, "one sweep table per side\n{out}");
    assert_eq!(out.matches("\nknee: ").count(), 2, "{out}");
    assert_eq!(
        out.matches("\nSLO PASS: ").count() + out.matches("\nSLO FAIL: ").count(),
        2,
        "{out}"
    );
    assert!(
        out.contains("target work per request: 1.00 config loads, 2.00 regex compiles"),
        "{out}"
    );
    assert!(
        out.contains("target work per request: 0.00 config loads, 0.00 regex compiles"),
        "{out}"
    );
    assert!(out.contains("peak throughput: "), "{out}");
    // Every knob naive caps the target near one worker / the logger's delay:
    // the tuned side must be several times faster.
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(doc["sides"].as_array().unwrap().len(), 2);
    assert_eq!(doc["sides"][0]["knobs"]["sync-external-call"], "naive");
    assert_eq!(doc["sides"][1]["knobs"]["sync-external-call"], "tuned");
    assert_eq!(
        doc["sides"][0]["report"]["phases"]
            .as_array()
            .unwrap()
            .len(),
        3
    );
    let gain = doc["comparison"]["throughput_gain"].as_f64().unwrap();
    assert!(gain > 3.0, "tuned/naive throughput {gain}");
    assert_eq!(doc["sides"][1]["target_stats"]["config_loads"], 1);
    // Each side names its stored run and carries the findings printed for it.
    for side in doc["sides"].as_array().unwrap() {
        let id = side["run_id"].as_str().unwrap();
        assert!(out.contains(&format!("run {id} stored")), "{id}\n{out}");
        assert!(side["findings"].is_array(), "{side}");
    }
    // Each naive knob is checked against the findings: found means that
    // finding sits at that rank, not found means none of its ids fired.
    let naive = &doc["sides"][0];
    let checks = naive["knob_check"].as_array().unwrap();
    assert_eq!(checks.len(), 8, "{naive}");
    let ids: Vec<&str> = naive["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["id"].as_str().unwrap())
        .collect();
    for c in checks {
        let expected: Vec<&str> = c["expected"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e.as_str().unwrap())
            .collect();
        match c["found"].as_str() {
            Some(id) => {
                let rank = c["rank"].as_u64().unwrap() as usize;
                assert_eq!(ids[rank - 1], id, "{c}");
                assert!(expected.contains(&id), "{c}");
                assert!(!ids[..rank - 1].iter().any(|i| expected.contains(i)), "{c}");
            }
            None => assert!(!ids.iter().any(|i| expected.contains(i)), "{c} {ids:?}"),
        }
    }
    assert!(
        out.contains("Naive knobs and the findings that name them"),
        "{out}"
    );
    assert_eq!(doc["sides"][1]["knob_check"].as_array().unwrap().len(), 0);

    let pids = target_pids(&out);
    assert_eq!(pids.len(), 2, "{out}");
    for pid in pids {
        assert!(wait_gone(pid), "target pid {pid} outlived keisoku demo");
    }
}

#[test]
fn single_knob_and_single_side() {
    let o = demo(&["--quick", "--naive", "--knob", "per-request-init"]);
    let out = text(&o.stdout);
    assert_eq!(o.status.code(), Some(0), "{out}{}", text(&o.stderr));
    assert!(
        out.contains("naive: per-request-init; the rest tuned"),
        "{out}"
    );
    assert!(!out.contains("== tuned"), "{out}");
    assert!(
        out.contains("1.00 config loads, 0.00 regex compiles"),
        "{out}"
    );
}

#[test]
fn bad_flags_are_one_line_and_exit_2() {
    for (args, needle) in [
        (vec!["--knob", "warp-drive"], "unknown knob `warp-drive`"),
        (vec!["--sweep", "1,x"], "--sweep"),
        (vec!["--sweep", "0,4"], "--sweep"),
        (vec!["--step-duration", "soon"], "--step-duration"),
        (vec!["--slo", "p99<<1s"], "--slo"),
        (
            vec!["--target-only", "--knobs", "json-cache=slow"],
            "naive nor tuned",
        ),
        (vec!["--target-only", "--listen", "nowhere"], "--listen"),
    ] {
        let o = demo(&args);
        let err = text(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(needle), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{args:?}: {err}");
    }
}

#[test]
fn target_only_prints_its_url_first_and_stops_on_sigterm() {
    let mut child = keisoku()
        .args(["demo", "--target-only", "--knobs", "formatter=naive"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .trim()
        .strip_prefix("http://")
        .expect("URL first")
        .to_string();
    let mut s = TcpStream::connect(&addr).unwrap();
    s.write_all(b"GET /stats HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut body = String::new();
    s.read_to_string(&mut body).unwrap();
    assert!(body.contains("\"formatter\":\"naive\""), "{body}");
    // SAFETY-free: kill(1) keeps the test free of libc.
    Command::new("kill")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            assert!(status.success(), "{status}");
            break;
        }
        assert!(Instant::now() < deadline, "target ignored SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn serve_runs_until_interrupted_then_reports_and_stops_the_target() {
    let mut child = keisoku()
        .args(["demo", "--serve", "--tuned"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let mut first = String::new();
    reader.read_line(&mut first).unwrap();
    assert!(
        first.starts_with("demo target: http://127.0.0.1:"),
        "{first}"
    );
    let pid = target_pids(&first)[0];
    assert!(Path::new(&format!("/proc/{pid}")).exists());
    let addr = first
        .split_whitespace()
        .nth(2)
        .and_then(|u| u.strip_prefix("http://"))
        .unwrap()
        .to_string();
    let mut s = TcpStream::connect(&addr).unwrap();
    s.write_all(b"GET /health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .unwrap();
    let mut resp = String::new();
    s.read_to_string(&mut resp).unwrap();
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");

    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let mut rest = String::new();
    reader.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    assert!(status.success(), "{status}\n{rest}");
    assert!(rest.contains("the target served"), "{rest}");
    assert!(
        wait_gone(pid),
        "target pid {pid} outlived keisoku demo --serve"
    );
}

/// The demo target's answered bids (`bids` + `no_bids` of its /stats), or
/// `None` while it does not answer.
fn bids_answered(target: &str) -> Option<u64> {
    let addr = target.strip_prefix("http://")?;
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(5))).ok()?;
    write!(
        s,
        "GET /stats HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut resp = String::new();
    s.read_to_string(&mut resp).ok()?;
    let body = resp.split("\r\n\r\n").nth(1)?;
    let v: serde_json::Value = serde_json::from_str(body).ok()?;
    // The counters sit at the top level, beside the knobs.
    Some(v["bids"].as_u64()? + v["no_bids"].as_u64()?)
}

#[test]
fn ctrl_c_prints_what_was_measured_and_stops_the_target() {
    let mut child = keisoku()
        .args([
            "demo",
            "--naive",
            "--knob",
            "formatter",
            "--sweep",
            "1,2,4,8,16",
            "--step-duration",
            "1s",
            "--warmup",
            "0s",
        ])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // The first line names the target; interrupt once it has answered a
    // bid (a measured request), whatever the machine's load: a fixed
    // sleep interrupted before the first request on a busy machine.
    let mut stdout = BufReader::new(child.stdout.take().expect("stdout piped"));
    let mut first = String::new();
    stdout.read_line(&mut first).unwrap();
    let target = first
        .split("target: ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .unwrap_or_else(|| panic!("no target in the first line: {first}"))
        .to_string();
    let start = Instant::now();
    while bids_answered(&target).unwrap_or(0) == 0 {
        assert!(
            start.elapsed() < Duration::from_secs(60),
            "the demo target at {target} answered no bid within 60 s"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let status = child.wait().unwrap();
    let out = format!("{first}{rest}");
    assert!(status.success(), "{status:?}\n{out}");
    assert!(out.contains("PARTIAL"), "{out}");
    assert!(out.contains("interrupted"), "{out}");
    // What was measured is printed: the target's work per request shows
    // the naive formatter's regex compiles. Their exact ratio depends on
    // where in a phase the interruption lands, so only its presence counts.
    let compiles: f64 = out
        .split("target work per request: ")
        .nth(1)
        .and_then(|r| r.split(", ").nth(1))
        .and_then(|c| c.strip_suffix(" regex compiles"))
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no target work per request: {out}"));
    assert!(compiles > 0.0, "{out}");
    let pid = target_pids(&out)[0];
    assert!(
        wait_gone(pid),
        "target pid {pid} outlived the interrupted demo"
    );
}
