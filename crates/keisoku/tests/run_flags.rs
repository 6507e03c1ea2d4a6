//! `keisoku run` drives load with exactly the flags `keisoku bench` has
//! (one shared definition): every bench flag is in run's help, and a
//! transport flag given to run (`--unix-socket`) really reaches the load.

mod common;

use common::BIN;
use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::os::unix::net::UnixListener;
use std::process::Command;

/// The long flags a command's `--help` lists.
fn long_flags(cmd: &str) -> BTreeSet<String> {
    let out = Command::new(BIN)
        .args([cmd, "--help"])
        .output()
        .expect("run keisoku --help");
    assert!(out.status.success(), "keisoku {cmd} --help failed");
    let text = String::from_utf8_lossy(&out.stdout);
    // A flag's line is "  -c, --connections <N>  Description": only the part
    // before the description names flags (descriptions mention others).
    text.lines()
        .filter(|l| {
            let indent = l.len() - l.trim_start().len();
            indent <= 6 && l.trim_start().starts_with('-')
        })
        .flat_map(|l| {
            let head = l.trim_start().split("  ").next().unwrap_or_default();
            head.split([' ', ',', '='])
                .filter(|w| w.starts_with("--") && w.len() > 2)
                .map(str::to_string)
                .collect::<Vec<_>>()
        })
        .collect()
}

#[test]
fn run_accepts_every_load_flag_of_bench() {
    let bench = long_flags("bench");
    let run = long_flags("run");
    // The flags the transport and replay gained must be there at all, or
    // the comparison below would pass on two empty sets.
    for f in [
        "--unix-socket",
        "--insecure",
        "--follow",
        "--proxy",
        "--compressed",
        "--stages-rate",
        "--data",
    ] {
        assert!(bench.contains(f), "bench lacks {f}: {bench:?}");
    }
    let missing: Vec<&String> = bench.difference(&run).collect();
    assert!(
        missing.is_empty(),
        "run lacks these flags of bench: {missing:?}"
    );
}

/// A one-connection HTTP/1.1 server on a Unix socket answering every
/// request with 200 and a 2-byte body; returns how many it answered.
fn serve_unix(listener: UnixListener) -> std::thread::JoinHandle<usize> {
    std::thread::spawn(move || {
        let mut answered = 0;
        for stream in listener.incoming() {
            let Ok(stream) = stream else { break };
            let mut w = stream.try_clone().expect("clone the stream");
            let mut r = BufReader::new(stream);
            let mut line = String::new();
            loop {
                line.clear();
                match r.read_line(&mut line) {
                    Ok(0) | Err(_) => break,
                    Ok(_) => {}
                }
                if line == "\r\n" {
                    answered += 1;
                    if w.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                        .is_err()
                    {
                        break;
                    }
                }
            }
            if answered >= 5 {
                break;
            }
        }
        answered
    })
}

#[test]
fn run_reaches_a_server_on_a_unix_socket() {
    let dir = tempfile::tempdir().expect("temp dir");
    let sock = dir.path().join("app.sock");
    let listener = UnixListener::bind(&sock).expect("bind the Unix socket");
    let server = serve_unix(listener);
    let store = dir.path().join("store.db");
    let out = Command::new(BIN)
        .args([
            "run",
            "--target",
            "http://localhost/health",
            "--unix-socket",
        ])
        .arg(&sock)
        .args(["-c", "1", "-t", "1", "-n", "5", "--store"])
        .arg(&store)
        .arg("--json")
        .arg(dir.path().join("load.json"))
        .output()
        .expect("run keisoku run");
    let stderr = String::from_utf8_lossy(&out.stderr);
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(out.status.success(), "keisoku run: {stderr}\n{stdout}");
    assert_eq!(server.join().expect("server thread"), 5, "{stdout}");
    let json: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("load.json")).expect("--json written"),
    )
    .expect("load JSON");
    assert_eq!(json["requests"], 5, "{json}");
    assert_eq!(json["status"]["2xx"], 5, "{json}");
}
