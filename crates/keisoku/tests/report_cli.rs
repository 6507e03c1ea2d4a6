//! End-to-end tests of `keisoku report`, `compare` and `serve` through the
//! real binary: self-contained output, exit statuses (0, 2 bad input, 3 gate
//! failed), and `serve` answering bad requests with 4xx, never crashing.

use serde_json::{json, Value};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

fn keisoku() -> Command {
    Command::new(env!("CARGO_BIN_EXE_keisoku"))
}

fn run_json(name: &str, p99: f64, rps: f64) -> Value {
    json!({
        "version": 1,
        "run": {"id": format!("20261121-2100{}", name.len()), "name": name,
                "started_unix_ms": 1763760600000u64, "duration_ms": 4000.0,
                "target": "http://127.0.0.1:1/bid", "interrupted": false, "model": "closed"},
        "results": {"requests": 4000, "rps": rps, "errors": 0,
                    "latency_ms": {"p50": 1.0, "p80": 2.0, "p99": p99},
                    "phases": [{"label": "c=1", "connections": 1, "rps": rps,
                                "latency_ms": {"p50": 1.0, "p80": 2.0, "p99": p99}}]},
        "phases": [],
        "series": [{"name": "client.rps", "unit": "req/s", "t_ms": [0, 1000, 2000, 3000], "v": [rps, rps, rps, rps]}],
        "routes": {"client": [{"method": "POST", "uri": "/bid", "count": 4000, "p99": p99, "avg": 1.0}], "access_log": []},
        "profile": null,
        "findings": []
    })
}

fn write(dir: &Path, name: &str, v: &Value) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, v.to_string()).unwrap();
    p
}

fn out(cmd: &mut Command) -> Output {
    cmd.output().expect("keisoku runs")
}

#[test]
fn report_is_one_self_contained_file() {
    let dir = tempfile::tempdir().unwrap();
    let run = write(dir.path(), "run.json", &run_json("before", 10.0, 1000.0));
    let html = dir.path().join("r.html");
    let o = out(keisoku().arg("report").arg(&run).arg("-o").arg(&html));
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("keisoku report: before"));
    assert!(page.contains("\"client.rps\""));
    // Nothing fetched: no external scripts, stylesheets or images.
    for needle in [
        "<script src",
        "<link",
        "src=\"http",
        "href=\"http",
        "@import",
    ] {
        assert!(!page.contains(needle), "page references {needle}");
    }
    // `-o -` writes the page to stdout.
    let o = out(keisoku().arg("report").arg(&run).arg("-o").arg("-"));
    assert!(o.status.success());
    assert!(String::from_utf8_lossy(&o.stdout).starts_with("<!doctype html>"));
}

#[test]
fn report_bad_input_exits_2_with_the_cause() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("r.html");
    let broken = dir.path().join("broken.json");
    std::fs::write(&broken, "{\"version\": 1, \"run\": ").unwrap();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["missing.json".into()], "no such file"),
        (vec![broken.display().to_string()], "broken.json"),
        (
            vec![
                "last".into(),
                "--store".into(),
                dir.path().join("none.db").display().to_string(),
            ],
            "none.db",
        ),
    ];
    for (args, want) in cases {
        let o = out(keisoku().arg("report").args(&args).arg("-o").arg(&html));
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    }
}

#[test]
fn compare_gate_exit_statuses() {
    let dir = tempfile::tempdir().unwrap();
    let a = write(dir.path(), "a.json", &run_json("base", 10.0, 1000.0));
    let b = write(dir.path(), "b.json", &run_json("slower", 12.0, 980.0));
    let html = dir.path().join("c.html");
    let gate = |g: &str| {
        out(keisoku()
            .arg("compare")
            .arg(&a)
            .arg(&b)
            .arg("-o")
            .arg(&html)
            .args(["--fail-on-regression", g]))
    };
    let o = gate("p99>+10%,rps<-5%");
    assert_eq!(o.status.code(), Some(3), "p99 grew 20%");
    let text = String::from_utf8_lossy(&o.stdout);
    assert!(text.contains("FAIL  p99>+10%"), "{text}");
    assert!(text.contains("PASS  rps<-5%"), "{text}");
    assert!(std::fs::read_to_string(&html).unwrap().contains("\"gate\""));
    assert_eq!(gate("p99>+25%,rps<-5%").status.code(), Some(0));
    assert_eq!(gate("p99>+1ms").status.code(), Some(3), "absolute: +2 ms");
    let bad = gate("latency>+5%");
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("unknown metric"));
    // Without a gate: exit 0, page written.
    let o = out(keisoku()
        .arg("compare")
        .arg(&a)
        .arg(&b)
        .arg("-o")
        .arg(&html));
    assert_eq!(o.status.code(), Some(0));
}

/// A store with two real runs, written through the store's API.
fn store_with_runs(dir: &Path) -> (PathBuf, Vec<String>) {
    use keisoku_store::{Machine, NewRun, RunStatus, Series, Store};
    let path = dir.join("runs.db");
    let store = Store::open(&path).unwrap();
    let mut ids = Vec::new();
    for (i, p99) in [10.0, 13.0].into_iter().enumerate() {
        let id = store
            .create_run(&NewRun {
                name: format!("run{i}"),
                started_unix_ms: 1763760600000 + i as i64 * 60_000,
                target: Some("http://127.0.0.1:1/".into()),
                command: "test".into(),
                machine: Machine {
                    hostname: "h".into(),
                    cores: 2,
                    ..Default::default()
                },
                model: Some("closed".into()),
                ..Default::default()
            })
            .unwrap();
        store
            .append_series(
                &id,
                &[Series {
                    name: "client.rps".into(),
                    unit: "req/s".into(),
                    t_ms: vec![0.0, 1000.0, 2000.0],
                    v: vec![100.0, 110.0, 105.0],
                }],
            )
            .unwrap();
        let results = json!({"requests": 300, "rps": 105.0, "errors": 0,
                             "latency_ms": {"p50": 1.0, "p99": p99}, "phases": []});
        store
            .put_results(&id, &results, Some(105.0), Some(p99))
            .unwrap();
        store.finish(&id, RunStatus::Complete, 3000.0).unwrap();
        ids.push(id);
    }
    (path, ids)
}

struct Served {
    child: Child,
    addr: SocketAddr,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn serve(store: &Path) -> Served {
    let mut child = keisoku()
        .args(["serve", "--addr", "127.0.0.1:0", "--store"])
        .arg(store)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"));
    let addr = url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .parse()
        .unwrap();
    Served { child, addr }
}

fn get(addr: SocketAddr, path: &str) -> (u16, String) {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(
        c,
        // serve answers only requests that name it (DNS rebinding).
        "GET {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut resp = String::new();
    c.read_to_string(&mut resp).unwrap();
    let status = resp
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let body = resp
        .split_once("\r\n\r\n")
        .map_or("", |(_, b)| b)
        .to_string();
    (status, body)
}

#[test]
fn serve_lists_opens_compares_and_refuses_bad_requests() {
    let dir = tempfile::tempdir().unwrap();
    let (store, ids) = store_with_runs(dir.path());
    let s = serve(&store);
    assert!(s.addr.ip().is_loopback());
    let (st, body) = get(s.addr, "/");
    assert_eq!(st, 200);
    assert!(body.contains(&ids[0]) && body.contains(&ids[1]));
    let (st, body) = get(s.addr, &format!("/runs/{}", ids[0]));
    assert_eq!(st, 200);
    assert!(body.contains("keisoku report: run0"));
    let (st, _) = get(s.addr, "/runs/last");
    assert_eq!(st, 200, "run specs resolve as on the command line");
    let (st, body) = get(
        s.addr,
        &format!("/compare?a={}&b={}&gate=p99%3E%2B10%25", ids[0], ids[1]),
    );
    assert_eq!(st, 200);
    assert!(body.contains("\"pass\":false"), "p99 grew 30%");
    let (st, body) = get(s.addr, "/api/runs");
    assert_eq!(st, 200);
    let list: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(list.as_array().map(Vec::len), Some(2));
    let (st, body) = get(
        s.addr,
        &format!("/api/runs/{}/series/client.rps?from=0.5&to=2", ids[1]),
    );
    assert_eq!(st, 200);
    let series: Value = serde_json::from_str(&body).unwrap();
    assert_eq!(series["v"], json!([110.0, 105.0]));

    let bad = [
        ("/runs/no-such-run".to_string(), 404),
        (format!("/runs/{}?from=abc&to=1", ids[0]), 400),
        (format!("/runs/{}?from=0&to=99999999999", ids[0]), 416),
        (format!("/runs/{}?from=3&to=1", ids[0]), 400),
        ("/compare?a=only-one".to_string(), 400),
        (format!("/compare?a={}&b={}&gate=p99", ids[0], ids[1]), 400),
        (
            format!("/api/runs/{}/series/client.rps?from=0&to=1e15", ids[0]),
            416,
        ),
        ("/api/runs?limit=zero".to_string(), 400),
        ("/runs/%G0".to_string(), 400),
        (format!("/{}", "x".repeat(9000)), 414),
        ("/etc/passwd".to_string(), 404),
    ];
    for (path, want) in &bad {
        let (st, body) = get(s.addr, path);
        assert_eq!(st, *want, "{}: {body}", &path[..path.len().min(60)]);
        assert!(!body.trim().is_empty(), "a message for {path}");
    }
    // Still serving after all that.
    assert_eq!(get(s.addr, "/").0, 200);
}

#[test]
fn serve_refuses_a_bad_address_or_missing_store() {
    let dir = tempfile::tempdir().unwrap();
    let o = out(keisoku()
        .args(["serve", "--addr", "localhost:http", "--store"])
        .arg(dir.path().join("x.db")));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--addr"));
    let o = out(keisoku()
        .args(["serve", "--addr", "127.0.0.1:0", "--store"])
        .arg(dir.path().join("x.db")));
    assert_eq!(o.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&o.stderr).contains("x.db"));
}
