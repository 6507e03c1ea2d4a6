//! `keisoku record` judges the run it recorded, as `run` and `demo` do:
//! the findings are stored with the run (so `export` and `report` show
//! them) and printed after the summary.
//!
//! The recorded process is a real one (python3's http.server on 127.0.0.1,
//! loaded by `keisoku bench` as the user's own load tool); its access log
//! is written by the command in LTSV with one route taking most of the
//! request time, so the route-dominating rule has something to find
//! whatever the machine's speed.

mod common;
use common::{export_run, free_port, BIN};

use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// Kills the server when the test ends, however it ends.
struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// python3 -m http.server on 127.0.0.1:`port`, serving `dir`, once it
/// accepts connections.
fn http_server(dir: &std::path::Path, port: u16) -> Server {
    let child = Command::new("python3")
        .args(["-m", "http.server", "--bind", "127.0.0.1"])
        .arg(port.to_string())
        .current_dir(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 -m http.server");
    let server = Server(child);
    let start = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "python3 http.server did not listen on {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server
}

/// LTSV lines for `n` requests to `uri`, each taking `secs`.
fn ltsv(uri: &str, secs: f64, n: usize) -> String {
    format!("time:21/Nov/2026:21:30:00 +0000\tmethod:GET\turi:{uri}\tstatus:200\tsize:5\treqtime:{secs}\n")
        .repeat(n)
}

#[test]
fn record_stores_and_prints_the_findings_of_the_run_it_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let log = dir.path().join("access.log");
    let lines = dir.path().join("lines.ltsv");
    std::fs::write(dir.path().join("index.html"), "hello\n").unwrap();
    std::fs::write(&log, "").unwrap();
    // /slow: 20 requests of 0.5 s; /fast: 80 of 1 ms. /slow takes 99% of the time.
    std::fs::write(&lines, ltsv("/slow", 0.5, 20) + &ltsv("/fast", 0.001, 80)).unwrap();
    let port = free_port();
    let server = http_server(dir.path(), port);
    // The user's load tool, then the log lines (appended while recording:
    // lines from before the recording do not count). No pause is needed: the
    // follower reads the log to its end once more when the recording stops.
    let script = format!(
        "'{BIN}' bench -c 2 -d 1s http://127.0.0.1:{port}/ >/dev/null && cat '{}' >> '{}'",
        lines.display(),
        log.display()
    );
    let out = Command::new(BIN)
        .args([
            "record",
            "--profile",
            "none",
            "--interval",
            "200ms",
            "--pid",
        ])
        .arg(server.0.id().to_string())
        .arg("--access-log")
        .arg(&log)
        .arg("--store")
        .arg(&store)
        .args(["--", "sh", "-c", &script])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{stdout}\n{stderr}");
    drop(server);

    let run = export_run(&store, "last");
    assert_eq!(run.routes.access_log.len(), 2, "{stdout}\n{stderr}");
    assert!(
        !run.findings.is_empty(),
        "a recorded run stores its findings: {stdout}\n{stderr}"
    );
    assert!(
        run.findings.iter().any(|f| f["id"] == "route-dominating"),
        "{:?}",
        run.findings
    );
    // What is stored is what the rules give on the run as exported.
    let mut judged = run.clone();
    judged.findings.clear();
    let again = keisoku_findings::to_json(&keisoku_findings::analyze(&judged));
    assert_eq!(run.findings, again);
    // And printed after the summary, as `keisoku run` prints them.
    assert!(stdout.contains("Findings ("), "{stdout}");
    assert!(stdout.contains("(route-dominating)"), "{stdout}");
    assert!(
        stdout.find("Findings (") > stdout.find("Access log: top routes"),
        "{stdout}"
    );
}
