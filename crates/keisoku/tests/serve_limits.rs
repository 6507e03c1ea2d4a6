//! `keisoku serve` under hostile clients (issue 15 item 10): 3,000 idle
//! connections must not hold 3,000 threads, a real request is still
//! answered beside them, silent connections are closed, and a `Host:`
//! that is not this server is refused.

use keisoku_store::{NewRun, RunStatus, Store};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const BIN: &str = env!("CARGO_BIN_EXE_keisoku");
const IDLE: usize = 3000;

struct Serve(Child);

impl Drop for Serve {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Raises this process's open-files limit so it can hold the sockets.
fn raise_nofile(want: u64) -> u64 {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain struct in, plain struct out.
    unsafe {
        libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim);
        let cur = want.min(lim.rlim_max);
        let new = libc::rlimit {
            rlim_cur: cur,
            rlim_max: lim.rlim_max,
        };
        if libc::setrlimit(libc::RLIMIT_NOFILE, &new) == 0 {
            cur
        } else {
            lim.rlim_cur
        }
    }
}

fn threads(pid: u32) -> usize {
    std::fs::read_dir(format!("/proc/{pid}/task"))
        .map(|d| d.count())
        .unwrap_or(0)
}

fn get(addr: &str, host: &str, path: &str) -> String {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    write!(c, "GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n").unwrap();
    let mut resp = String::new();
    c.read_to_string(&mut resp).unwrap();
    resp
}

#[test]
fn idle_connections_hold_no_threads_and_are_closed() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    {
        let store = Store::open(&db).unwrap();
        let id = store
            .create_run(&NewRun {
                name: "limits".into(),
                started_unix_ms: 1_763_700_000_000,
                ..NewRun::default()
            })
            .unwrap();
        store.finish(&id, RunStatus::Complete, 1000.0).unwrap();
    }
    let limit = raise_nofile(IDLE as u64 + 512);
    assert!(
        limit >= IDLE as u64 + 100,
        "the open-files hard limit ({limit}) is too low for this test"
    );
    let mut child = Command::new(BIN)
        .args(["serve", "--addr", "127.0.0.1:0", "--idle-timeout", "2s"])
        .arg("--store")
        .arg(&db)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let pid = child.id();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let serve = Serve(child);
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_string();
    // One answered request: the worker pool is up.
    assert!(get(&addr, &addr, "/api/runs").starts_with("HTTP/1.1 200"));
    let before = threads(pid);

    let idle: Vec<TcpStream> = (0..IDLE)
        .map(|i| TcpStream::connect(&addr).unwrap_or_else(|e| panic!("connection {i}: {e}")))
        .collect();
    // Answered beside 3,000 idle sockets: by then the server has accepted
    // every one that came before (one accept queue, in order).
    let resp = get(&addr, &addr, "/api/runs");
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    assert!(resp.contains("limits"));
    let during = threads(pid);
    assert!(
        during <= before && during < 16,
        "{IDLE} idle connections hold {during} threads (before: {before})"
    );

    // Every silent connection ends with EOF from the server (an evicted
    // one at once, the rest after the idle timeout), not a hang.
    for (i, mut c) in idle.into_iter().enumerate().step_by(97) {
        c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
        let mut buf = [0u8; 64];
        match c.read(&mut buf) {
            Ok(0) => {}
            Ok(n) => panic!("connection {i}: unexpected {n} bytes"),
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionReset => {}
            Err(e) => panic!("connection {i} not closed: {e}"),
        }
    }

    // DNS rebinding: another name for 127.0.0.1 is refused.
    let port = addr.rsplit(':').next().unwrap_or_default();
    let rebound = get(&addr, &format!("attacker.example:{port}"), "/api/runs");
    assert!(rebound.starts_with("HTTP/1.1 421"), "{rebound}");
    let local = get(&addr, &format!("localhost:{port}"), "/api/runs");
    assert!(local.starts_with("HTTP/1.1 200"), "{local}");
    drop(serve);
}
