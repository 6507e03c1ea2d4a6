//! `keisoku bench` end to end: the real binary against test servers on 127.0.0.1.

#[path = "../../load/tests/support/mod.rs"]
mod support;

use serde_json::Value;
use std::process::{Command, Output};
use std::time::Duration;
use support::{Config, TestServer};

fn bench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_keisoku"))
        .arg("bench")
        .args(args)
        .output()
        .expect("run keisoku")
}

fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

#[test]
fn bad_input_is_one_line_and_exit_2() {
    let dir = tempfile::tempdir().unwrap();
    let targets = dir.path().join("targets.txt");
    std::fs::write(&targets, "GET http://127.0.0.1:1/\nPOST\n").unwrap();
    let t = targets.to_str().unwrap();
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["ftp://x/"], "ftp://x/"),
        (vec!["http://127.0.0.1:99999/"], "bad URL"),
        (
            vec!["-d", "10 parsecs", "http://127.0.0.1:1/"],
            "--duration",
        ),
        (
            vec!["--timeout", "soon", "http://127.0.0.1:1/"],
            "--timeout",
        ),
        (vec!["--slo", "p99<=fast", "http://127.0.0.1:1/"], "--slo"),
        (
            vec!["--sweep-connections", "10..1:1", "http://127.0.0.1:1/"],
            "--sweep-connections",
        ),
        (vec!["-H", "no colon", "http://127.0.0.1:1/"], "-H"),
        (vec!["--targets", t], "targets.txt:2:"),
        (
            vec!["--body", "@/nonexistent/body", "http://127.0.0.1:1/"],
            "--body",
        ),
        (vec!["-c", "0", "http://127.0.0.1:1/"], "connections"),
        (
            vec!["--find-max", "--slo", "p99<=1s", "http://127.0.0.1:1/"],
            "--find-max",
        ),
        (vec![], "no target"),
        (
            vec!["--no-such-flag", "http://127.0.0.1:1/"],
            "--no-such-flag",
        ),
    ];
    for (args, needle) in cases {
        let o = bench(&args);
        let e = stderr(&o);
        assert_eq!(code(&o), 2, "{args:?}: {e}");
        assert!(e.contains(needle), "{args:?}: {e}");
        if !args.contains(&"--no-such-flag") {
            assert_eq!(e.trim().lines().count(), 1, "{args:?}: {e}");
        }
    }
}

#[test]
fn unreachable_target_exits_1_with_the_reason() {
    let port = support::closed_port();
    let url = format!("http://127.0.0.1:{port}/");
    let t0 = std::time::Instant::now();
    let o = bench(&["-c", "2", "-t", "1", "-d", "500ms", &url]);
    assert!(t0.elapsed() < Duration::from_secs(5));
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(
        stderr(&o).contains("not one request succeeded"),
        "{}",
        stderr(&o)
    );
    assert!(stderr(&o).contains("refused"), "{}", stderr(&o));
    assert!(stdout(&o).contains("connect_refused"), "{}", stdout(&o));
    // No latency figures for requests that never got an answer.
    assert!(stdout(&o).contains("no responses"), "{}", stdout(&o));
    assert!(!stdout(&o).contains("p99 0.00ms"), "{}", stdout(&o));
}

#[test]
fn json_schema_and_counts_match_the_server() {
    let s = TestServer::start(Config::default());
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let hlog = dir.path().join("out.hlog");
    let o = bench(&[
        "-c",
        "4",
        "-t",
        "2",
        "-n",
        "777",
        "--json",
        json.to_str().unwrap(),
        "--hdr-log",
        hlog.to_str().unwrap(),
        &s.url("/"),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(
        !stdout(&o).contains('\r') && !stderr(&o).contains('\r'),
        "no live progress off a terminal"
    );
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["requests"].as_u64(), Some(777));
    assert_eq!(s.requests(), 777);
    assert!(v["rps"].as_f64().unwrap() > 0.0);
    assert_eq!(v["errors"].as_u64(), Some(0));
    assert_eq!(v["model"], "closed");
    assert!(v["started_unix_ms"].as_u64().unwrap() > 1_600_000_000_000);
    for k in ["min", "mean", "max", "p50", "p80", "p90", "p99", "p99.9"] {
        assert!(
            v["latency_ms"][k].is_f64(),
            "latency_ms.{k}: {}",
            v["latency_ms"]
        );
    }
    let lat = &v["latency_ms"];
    assert!(
        lat["min"].as_f64() <= lat["p50"].as_f64() && lat["p50"].as_f64() <= lat["p99"].as_f64()
    );
    let phases = v["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 1);
    assert_eq!(phases[0]["connections"].as_u64(), Some(4));
    assert!(phases[0]["rate"].is_null());
    assert_eq!(phases[0]["requests"].as_u64(), Some(777));
    for k in ["min", "mean", "max", "p50", "p80", "p90", "p99", "p99.9"] {
        assert!(phases[0]["latency_ms"][k].is_f64());
    }
    assert!(phases[0]["end_ms"].as_f64() > phases[0]["start_ms"].as_f64());
    let tl = v["timeline"].as_array().unwrap();
    assert!(!tl.is_empty());
    assert_eq!(
        tl.iter()
            .map(|s| s["requests"].as_u64().unwrap())
            .sum::<u64>(),
        777
    );
    assert_eq!(v["status"]["2xx"].as_u64(), Some(777));
    let h = std::fs::read_to_string(&hlog).unwrap();
    assert!(h.contains("#[StartTime:"), "{h}");
    assert!(
        h.lines()
            .filter(|l| !l.starts_with('#') && !l.starts_with('"'))
            .count()
            >= 1,
        "{h}"
    );
}

#[test]
fn json_on_stdout_and_open_model() {
    let s = TestServer::start(Config::default());
    let o = bench(&[
        "-R",
        "200",
        "-c",
        "10",
        "-t",
        "1",
        "-d",
        "1s",
        "--warmup",
        "300ms",
        "--json",
        "-",
        &s.url("/"),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).expect("stdout is only JSON");
    assert_eq!(v["model"], "open");
    assert_eq!(v["phases"][0]["rate"].as_f64(), Some(200.0));
    assert!(v["service_ms"]["p99"].is_f64());
    assert!(v["schedule"]["intended"].as_u64().unwrap() >= 190);
    assert!(stderr(&o).contains("coordinated omission corrected"));
    // The warm-up is excluded from the numbers but placed on the run's clock.
    let warm_end = v["warmup"]["end_ms"].as_f64().unwrap();
    assert!(warm_end >= 300.0, "{}", v["warmup"]);
    assert!(v["phases"][0]["start_ms"].as_f64().unwrap() >= warm_end);
    assert!(
        v["requests"].as_u64().unwrap() + 40 < s.requests(),
        "warm-up requests are not counted"
    );
}

#[test]
fn slo_verdicts_and_exit_codes() {
    let s = TestServer::start(Config::default());
    let url = s.url("/");
    let o = bench(&[
        "-c",
        "2",
        "-t",
        "1",
        "-n",
        "300",
        "--slo",
        "p99<=5s,errors<=0.1%,rps>=1",
        &url,
    ]);
    assert_eq!(code(&o), 0, "{}", stdout(&o));
    assert!(stdout(&o).contains("SLO PASS"));
    let o = bench(&[
        "-c",
        "2",
        "-t",
        "1",
        "-n",
        "300",
        "--slo",
        "p99<=5s,p50<=0.001ms",
        "--json",
        "-",
        &url,
    ]);
    assert_eq!(code(&o), 3, "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let clauses = v["slo"]["clauses"].as_array().unwrap();
    assert_eq!(clauses[0]["pass"], true);
    assert_eq!(clauses[1]["pass"], false);
    assert!(clauses[1]["margin"].as_f64().unwrap() < 0.0);
    assert!(stderr(&o).contains("FAIL"));
    // 5xx answers count as errors for the SLO.
    let o = bench(&[
        "-c",
        "2",
        "-t",
        "1",
        "-n",
        "50",
        "--slo",
        "errors<=1%",
        &s.url("/status/500"),
    ]);
    assert_eq!(code(&o), 3, "{}", stdout(&o));
}

#[test]
fn sweep_finds_the_knee_of_a_four_slot_server() {
    let s = TestServer::start(Config {
        slots: Some(4),
        service: Duration::from_millis(40),
        ..Config::default()
    });
    let o = bench(&[
        "--sweep-connections",
        "2..8:2",
        "--step-duration",
        "1s",
        "-t",
        "1",
        "--slo",
        "mean<=55ms",
        "--json",
        "-",
        &s.url("/"),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let phases = v["phases"].as_array().unwrap();
    assert_eq!(phases.len(), 4);
    let knee = v["knee"]
        .as_u64()
        .map(|k| phases[k as usize]["connections"].as_u64().unwrap());
    let rps: Vec<f64> = phases.iter().map(|p| p["rps"].as_f64().unwrap()).collect();
    // Exactly 4 in theory; on a busy machine client and server wake-up jitter idles the
    // slots a little, so the plateau may only be reached one step later.
    assert!(
        matches!(knee, Some(4) | Some(6)),
        "knee {knee:?}, rps {rps:?}"
    );
    let best = v["best_passing_phase"]
        .as_u64()
        .map(|k| phases[k as usize]["connections"].as_u64().unwrap());
    assert_eq!(best, Some(4), "{}", stderr(&o));
    let text = stderr(&o);
    assert!(
        text.contains(&format!("knee: c={}", knee.unwrap_or(0))),
        "{text}"
    );
    assert!(text.contains("highest load meeting the SLO: c=4"), "{text}");
}

#[test]
fn find_max_brackets_the_capacity() {
    // 4 slots x 40 ms: at most ~100 req/s; above it latency explodes in the open model.
    let s = TestServer::start(Config {
        slots: Some(4),
        service: Duration::from_millis(40),
        ..Config::default()
    });
    let o = bench(&[
        "--sweep-rate",
        "25..200:25",
        "--step-duration",
        "1500ms",
        "-c",
        "40",
        "-t",
        "1",
        "--slo",
        "p99<=400ms",
        "--find-max",
        "--json",
        "-",
        &s.url("/"),
    ]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let phases = v["phases"].as_array().unwrap();
    assert!(phases.len() <= 2 + 3, "bounded: {} phases", phases.len());
    let max = v["max_rate"].as_f64();
    assert!(
        matches!(max, Some(m) if (50.0..=125.0).contains(&m)),
        "max_rate {max:?}: {}",
        stderr(&o)
    );
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    assert!(stderr(&o).contains("find-max: the highest rate meeting the SLO is"));
}

#[test]
fn targets_file_with_weights() {
    let s = TestServer::start(Config::default());
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("bid.json"), br#"{"id":"1"}"#).unwrap();
    let f = dir.path().join("targets.txt");
    std::fs::write(
        &f,
        format!(
            "# weights\n3 POST {} @bid.json\nGET {}\n",
            s.url("/bid"),
            s.url("/status/204")
        ),
    )
    .unwrap();
    let o = bench(&[
        "--targets",
        f.to_str().unwrap(),
        "-c",
        "1",
        "-t",
        "1",
        "-n",
        "400",
        "--json",
        "-",
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let t = v["targets"].as_array().unwrap();
    assert_eq!(t.len(), 2);
    assert_eq!(t[0]["method"], "POST");
    assert_eq!(t[0]["requests"].as_u64(), Some(300));
    assert_eq!(t[1]["requests"].as_u64(), Some(100));
    assert_eq!(t[1]["status"]["2xx"].as_u64(), Some(100));
    assert!(stderr(&o).contains("POST"), "per-target table");
}

#[test]
fn sigint_prints_partial_results() {
    let s = TestServer::start(Config::default());
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("partial.json");
    let child = Command::new(env!("CARGO_BIN_EXE_keisoku"))
        .args([
            "bench",
            "-c",
            "2",
            "-t",
            "1",
            "-d",
            "30s",
            "--json",
            json.to_str().unwrap(),
            &s.url("/"),
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    // SAFETY: sending a signal to our own child.
    unsafe { libc_kill(child.id() as i32, 2) };
    let o = child.wait_with_output().unwrap();
    assert_eq!(code(&o), 1, "{}", stderr(&o));
    assert!(stdout(&o).contains("PARTIAL"), "{}", stdout(&o));
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(v["partial"], true);
    assert!(v["requests"].as_u64().unwrap() > 0);
}

extern "C" {
    #[link_name = "kill"]
    fn libc_kill(pid: i32, sig: i32) -> i32;
}

/// Issue 13: the terminal timeline has one row a second, and a second in
/// which the server answered nothing is a row of 0 rps, not a gap; the JSON
/// timeline keeps every second too.
#[test]
fn a_stalled_second_is_a_zero_row_in_a_per_second_timeline() {
    // Every answer waits until the first 2.5 s of the server's life are over.
    let s = TestServer::start(Config {
        stall: Some((Duration::from_secs(600), Duration::from_millis(2500))),
        ..Config::default()
    });
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("out.json");
    let o = bench(&[
        "-c",
        "2",
        "-t",
        "1",
        "-d",
        "4s",
        "--json",
        json.to_str().unwrap(),
        &s.url("/"),
    ]);
    assert_eq!(code(&o), 0, "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let tl = v["timeline"].as_array().unwrap();
    let secs: Vec<u64> = tl.iter().map(|s| s["t_s"].as_u64().unwrap()).collect();
    assert_eq!(secs, (0..secs.len() as u64).collect::<Vec<_>>(), "{secs:?}");
    assert!(secs.len() >= 4, "{secs:?}");
    assert_eq!(tl[0]["requests"].as_u64(), Some(0), "{}", tl[0]);
    // Both connections waited through the stall.
    assert_eq!(tl[0]["inflight"].as_u64(), Some(2), "{}", tl[0]);
    assert_eq!(tl[0]["connections"].as_u64(), Some(2), "{}", tl[0]);
    assert!(tl.iter().any(|s| s["requests"].as_u64() > Some(0)));
    let out = stdout(&o);
    let table: Vec<&str> = out
        .lines()
        .skip_while(|l| !l.starts_with("timeline"))
        .skip(2)
        .take_while(|l| !l.trim().is_empty())
        .collect();
    assert_eq!(table.len(), secs.len(), "one row a second:\n{out}");
    let first: Vec<&str> = table[0].split_whitespace().collect();
    assert_eq!(
        &first[..3],
        &["0", "0", "0"],
        "second 0: 0 rps, 0 errors\n{out}"
    );
}
