//! `keisoku run` killed with SIGKILL mid-load (issue 15, item 1): the
//! client's seconds, its phase and the results so far were written as the
//! load ran, so the run keeps them and shows as interrupted.

mod common;
use common::{free_port, BIN};

use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A threaded Python server answering `ok`; it prints `ready` once it
/// listens.
const SERVER: &str = "import http.server, sys\n\
class H(http.server.BaseHTTPRequestHandler):\n    protocol_version = 'HTTP/1.1'\n    def do_GET(self):\n        self.send_response(200); self.send_header('Content-Length','2'); self.end_headers(); self.wfile.write(b'ok')\n    def log_message(self, *a): pass\n\
s = http.server.ThreadingHTTPServer(('127.0.0.1', int(sys.argv[1])), H)\nprint('ready', flush=True)\ns.serve_forever()\n";

/// Kills keisoku (if still alive) and the server when the test ends, pass or fail.
struct Reap(Vec<Child>);

impl Drop for Reap {
    fn drop(&mut self) {
        for c in &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// The stored run's client seconds and phases, read as any reader would
/// while keisoku writes (None until the run exists).
fn progress(store: &Path, name: &str) -> Option<(usize, usize)> {
    let s = keisoku_store::Store::open_existing(store).ok()?;
    let id = s.resolve(name).ok()?;
    let run = s.load(&id).ok()?;
    let seconds = run
        .series
        .iter()
        .find(|s| s.name == "client.rps")
        .map_or(0, |s| s.t_ms.len());
    Some((seconds, run.phases.len()))
}

#[test]
fn a_killed_run_keeps_its_client_seconds_phase_and_results() {
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let script = dir.path().join("server.py");
    std::fs::write(&script, SERVER).unwrap();
    let mut server = Command::new("python3")
        .arg(&script)
        .arg(port.to_string())
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 is installed");
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(server.stdout.take().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "ready");
    let store = dir.path().join("runs.db");
    let keisoku = Command::new(BIN)
        .args(["run", "--target"])
        .arg(format!("http://127.0.0.1:{port}/"))
        .args(["-c", "2", "-t", "1", "-d", "60s", "--profile", "none"])
        .args(["--name", "killed", "--store"])
        .arg(&store)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let pid = keisoku.id();
    let mut reap = Reap(vec![keisoku, server]);

    // Wait for the signal: three client seconds in the store.
    let start = Instant::now();
    let seen = loop {
        if let Some(p) = progress(&store, "killed").filter(|p| p.0 >= 3) {
            break p;
        }
        assert!(
            start.elapsed() < Duration::from_secs(50),
            "no 3 client seconds stored within 50 s"
        );
        std::thread::sleep(Duration::from_millis(100));
    };
    assert!(seen.1 >= 1, "the running phase is stored: {seen:?}");
    // SAFETY: plain kill(2) of the child we started.
    assert_eq!(unsafe { libc::kill(pid as i32, libc::SIGKILL) }, 0);
    let _ = reap.0[0].wait();

    let run = common::export_run(&store, "killed");
    assert_eq!(run.run.status, "interrupted");
    assert!(run.run.interrupted);
    let series = |name: &str| {
        run.series
            .iter()
            .find(|s| s.name == name)
            .unwrap_or_else(|| panic!("series {name} kept"))
    };
    let rps = series("client.rps");
    assert!(rps.t_ms.len() >= 3, "{:?}", rps.t_ms);
    assert!(rps.v.iter().any(|&v| v > 0.0), "{:?}", rps.v);
    for name in [
        "client.errors",
        "client.p99_ms",
        "client.inflight",
        "client.connections",
    ] {
        assert_eq!(series(name).t_ms, rps.t_ms, "{name}");
    }
    // The connections were open while it ran.
    assert!(series("client.connections").v.contains(&2.0));
    // The phase it was in, ending at its last stored second at least.
    assert_eq!(run.phases.len(), 1, "{:?}", run.phases);
    assert_eq!(run.phases[0].label, "c=2");
    let last = *rps.t_ms.last().unwrap();
    assert!(
        run.phases[0].end_ms >= last - 1.0,
        "{:?} {last}",
        run.phases
    );
    // The results so far, marked partial.
    assert_eq!(run.results["partial"], true, "{}", run.results);
    let requests = run.results["requests"].as_f64().unwrap();
    assert!(requests > 0.0, "{}", run.results);
    assert!((requests - rps.v.iter().sum::<f64>()).abs() < 1.0);
    // Per-route seconds too.
    assert_eq!(run.route_seconds.client.len(), 1);
    assert!(run.route_seconds.client[0].t_ms.len() >= 3);

    // `keisoku runs` and `show` say so.
    let out = Command::new(BIN)
        .args(["show", "killed", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains(": interrupted,"), "{text}");
    let out = Command::new(BIN)
        .args(["runs", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("interrupted"), "{text}");
}
