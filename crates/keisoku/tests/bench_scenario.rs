//! `keisoku bench --scenario` end to end (issue 18) against the small
//! log-in app of examples/scenario-app (Python stdlib): cookies kept per
//! virtual user (the app counts its sessions), 401s counted when the
//! log-in is left out, check and extraction failures counted by kind, and
//! every step's numbers equal to the app's own count of what it answered.

mod common;

use common::BIN;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

struct App {
    child: Child,
    port: u16,
}

impl Drop for App {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn app_script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../examples/scenario-app/app.py")
}

/// Starts the app on a free loopback port; returns once it says it listens.
fn start_app(dir: &Path) -> App {
    let mut child = Command::new("python3")
        .arg(app_script())
        .arg("0")
        .arg(dir.join("access.log"))
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("python3 (scripts/setup.sh installs it)");
    let out = child.stdout.take().unwrap();
    let mut line = String::new();
    BufReader::new(out).read_line(&mut line).unwrap();
    let port = line
        .trim()
        .strip_prefix("listening ")
        .and_then(|p| p.parse().ok())
        .unwrap_or_else(|| panic!("the app did not start: {line:?}"));
    App { child, port }
}

/// The app's own counts: sessions made and answers per "METHOD route".
fn stats(port: u16) -> serde_json::Value {
    let out = Command::new("curl")
        .args(["-sS", &format!("http://127.0.0.1:{port}/stats")])
        .output()
        .expect("curl");
    serde_json::from_slice(&out.stdout).expect("stats JSON")
}

/// Runs a scenario; returns the JSON report and the terminal text.
fn bench(dir: &Path, yaml: &str, port: u16, extra: &[&str]) -> (serde_json::Value, String) {
    let file = dir.join("s.yaml");
    std::fs::write(&file, yaml).unwrap();
    let json = dir.join("out.json");
    let out = Command::new(BIN)
        .arg("bench")
        .arg("--scenario")
        .arg(&file)
        .args(["-t", "1", "--json"])
        .arg(&json)
        .args(extra)
        .arg(format!("http://127.0.0.1:{port}"))
        .output()
        .unwrap();
    let text =
        String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.code().is_some_and(|c| c == 0 || c == 1),
        "{text}"
    );
    let v = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    (v, text)
}

fn step<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["scenario"]["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .unwrap_or_else(|| panic!("no step {name}"))
}

fn route<'a>(v: &'a serde_json::Value, name: &str) -> &'a serde_json::Value {
    v["targets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["url"] == name)
        .unwrap_or_else(|| panic!("no route {name}"))
}

fn n(v: &serde_json::Value) -> u64 {
    v.as_u64().unwrap_or(0)
}

const LOGIN: &str = r#"once:
  - name: login
    method: POST
    url: /login
    headers:
      Content-Type: application/json
    body: '{"user": "u{{seq}}"}'
    checks:
      status: 200
      json:
        - path: $.user
          exists: true
    extract:
      - var: token
        json: $.token
"#;

const ITERATION: &str = r#"steps:
  - name: me
    url: /me
    headers:
      X-Token: "{{var.token}}"
    checks:
      status: [200]
      body_contains: '"user"'
    extract:
      - var: id
        json: $.id
  - name: item
    url: /items/{{var.id}}
    checks:
      json:
        - path: $.owner
          exists: true
    think: 1ms..3ms
"#;

#[test]
fn cookies_per_user_and_step_counts_match_the_app() {
    let dir = tempfile::tempdir().unwrap();
    let app = start_app(dir.path());
    let (v, text) = bench(
        dir.path(),
        &format!("{LOGIN}{ITERATION}"),
        app.port,
        &["-c", "3", "-d", "1500ms"],
    );
    let s = stats(app.port);
    // One log-in per virtual user: each kept its own cookie.
    assert_eq!(n(&s["sessions"]), 3, "{s}\n{text}");
    let login = step(&v, "login");
    let me = step(&v, "me");
    let item = step(&v, "item");
    assert_eq!(n(&login["requests"]), 3, "{text}");
    assert_eq!(
        n(&me["requests"]),
        n(&s["requests"]["GET /me"]),
        "{s}\n{text}"
    );
    assert_eq!(
        n(&item["requests"]),
        n(&s["requests"]["GET /items/*"]),
        "{s}\n{text}"
    );
    assert!(n(&me["requests"]) >= 10, "{text}");
    for st in [login, me, item] {
        for k in [
            "check_status",
            "check_body",
            "check_json",
            "extract_missing",
            "errors_transport",
        ] {
            assert_eq!(n(&st[k]), 0, "{k} in {st}\n{text}");
        }
    }
    // Every /me was answered 200 (the cookie went with it) and every item
    // id came from /me's JSON (no 404).
    assert_eq!(
        n(&route(&v, "me")["status_codes"]["200"]),
        n(&me["requests"])
    );
    assert_eq!(
        n(&route(&v, "item")["status_codes"]["200"]),
        n(&item["requests"])
    );
    // Iterations: each ended one answered its item step.
    let sc = &v["scenario"];
    assert_eq!(sc["slo_basis"], "iterations");
    let done = n(&sc["iterations"]);
    assert!(
        done >= n(&item["requests"]) && done <= n(&item["requests"]),
        "{sc}"
    );
    assert_eq!(n(&sc["failed"]), 0, "{sc}");
    assert!(
        text.contains("Scenario ") && text.contains("an SLO judges iterations"),
        "{text}"
    );
    // The access log has exactly the requests the steps counted.
    let log = std::fs::read_to_string(dir.path().join("access.log")).unwrap();
    let total: u64 = ["login", "me", "item"]
        .iter()
        .map(|k| n(&step(&v, k)["requests"]))
        .sum();
    assert_eq!(log.lines().count() as u64, total);
}

#[test]
fn without_the_login_me_is_401_and_failures_are_counted_by_kind() {
    let dir = tempfile::tempdir().unwrap();
    let app = start_app(dir.path());
    // No checks on /me: its 401s are counted as the step's statuses and
    // the id it should give is missing.
    let no_checks = "steps:\n  - name: me\n    url: /me\n    extract:\n      - var: id\n        json: $.id\n  - name: item\n    url: /items/{{var.id}}\n";
    let (v, text) = bench(dir.path(), no_checks, app.port, &["-c", "2", "-d", "1s"]);
    let s = stats(app.port);
    assert_eq!(n(&s["sessions"]), 0);
    let me = step(&v, "me");
    let reqs = n(&me["requests"]);
    assert!(reqs >= 10, "{text}");
    assert_eq!(reqs, n(&s["requests"]["GET /me"]), "{s}");
    assert_eq!(n(&route(&v, "me")["status_codes"]["401"]), reqs, "{text}");
    assert_eq!(n(&me["extract_missing"]), reqs, "{text}");
    assert_eq!(n(&me["check_status"]), 0);
    assert_eq!(n(&step(&v, "item")["requests"]), 0);
    assert_eq!(n(&v["scenario"]["failed"]), reqs);

    // A status check fails first, and only it is counted.
    let checked = "steps:\n  - name: me\n    url: /me\n    checks:\n      status: 200\n    extract:\n      - var: id\n        json: $.id\n  - name: item\n    url: /items/{{var.id}}\n";
    let (v, text) = bench(dir.path(), checked, app.port, &["-c", "2", "-d", "1s"]);
    let me = step(&v, "me");
    assert_eq!(n(&me["check_status"]), n(&me["requests"]), "{text}");
    assert_eq!(n(&me["extract_missing"]), 0);

    // Logged in, a body check that cannot hold fails every item answer.
    let body_check = format!(
        "{LOGIN}steps:\n  - name: me\n    url: /me\n    extract:\n      - var: id\n        json: $.id\n  - name: item\n    url: /items/{{{{var.id}}}}\n    checks:\n      body_contains: nothing-like-this\n      status: [200]\n"
    );
    let (v, text) = bench(dir.path(), &body_check, app.port, &["-c", "2", "-d", "1s"]);
    let item = step(&v, "item");
    assert!(n(&item["requests"]) > 0, "{text}");
    assert_eq!(n(&item["check_body"]), n(&item["requests"]), "{text}");
    assert_eq!(n(&v["scenario"]["failed"]), n(&item["requests"]), "{text}");
}

#[test]
fn bad_scenario_files_exit_2_naming_file_line_and_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.yaml");
    let cases = [
        ("steps:\n  - name: a\n    url: /x\n    chekcs: {}\n", "chekcs", ":4"),
        ("steps:\n  - name: a\n    url: /x\n    think: soon\n", "think", ":4"),
        ("steps:\n  - name: a\n    url: /items/{{var.id}}\n", "var.id", ":3"),
        ("steps:\n  - name: a\n    url: /x\n    extract:\n      - var: v\n        regex: 'no group'\n", "exactly one group", ":6"),
        ("steps:\n  - name: a\n    url: /x\n    checks:\n      json:\n        - path: a.b\n          exists: true\n", "must start with $", ":6"),
    ];
    for (yaml, want, line) in cases {
        std::fs::write(&file, yaml).unwrap();
        let out = Command::new(BIN)
            .args(["bench", "-d", "1s", "--scenario"])
            .arg(&file)
            .arg("http://127.0.0.1:9")
            .output()
            .unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{yaml}: {err}");
        assert!(
            err.contains(want) && err.contains("bad.yaml"),
            "{yaml}: {err}"
        );
        assert!(err.contains(line), "{yaml}: want line {line}: {err}");
    }
}

/// The open model starts one iteration per intended start time on a free
/// user: every intended start is an iteration that ended, was cut by the
/// end of the run or was never started (charged); users log in once each.
#[test]
fn open_model_starts_iterations_on_free_users() {
    let dir = tempfile::tempdir().unwrap();
    let app = start_app(dir.path());
    let (v, text) = bench(
        dir.path(),
        &format!("{LOGIN}{ITERATION}"),
        app.port,
        &["-R", "60", "-c", "8", "-d", "2s", "--slo", "p99<=5s"],
    );
    let sc = &v["scenario"];
    let intended = n(&v["schedule"]["intended"]);
    assert!(intended >= 100, "{text}");
    assert_eq!(
        n(&sc["iterations"]) + n(&sc["unfinished"]) + n(&sc["unsent"]),
        intended,
        "{sc}\n{text}"
    );
    let s = stats(app.port);
    let users = n(&s["sessions"]);
    assert!((1..=8).contains(&users), "{s}");
    assert_eq!(n(&step(&v, "login")["requests"]), users);
    assert_eq!(n(&step(&v, "me")["requests"]), n(&s["requests"]["GET /me"]));
    // The SLO judged the iterations: its p99 is the iterations' p99.
    assert_eq!(
        v["slo"]["clauses"][0]["measured"], sc["latency_ms"]["p99"],
        "{text}"
    );
}
