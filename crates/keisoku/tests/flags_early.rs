//! Every flag is checked before any load starts (issue 15 item 12): each
//! bad value ends with exit 2 and the reason, and the target never sees a
//! connection. Headers that change framing are honoured on the wire, a low
//! open-files limit is raised or refused, and `-d` bounds a load against a
//! server that never answers.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::process::{Command, Output};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

const BIN: &str = env!("CARGO_BIN_EXE_keisoku");

fn text(b: &[u8]) -> String {
    String::from_utf8_lossy(b).into_owned()
}

/// A target that counts connections and keeps every request's bytes;
/// `answer` says whether it replies (200 "ok") or stays silent.
struct Target {
    port: u16,
    accepted: Arc<AtomicUsize>,
    requests: Arc<Mutex<Vec<Vec<u8>>>>,
}

impl Target {
    fn start(answer: bool) -> Target {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let requests = Arc::new(Mutex::new(Vec::new()));
        let (a, r) = (Arc::clone(&accepted), Arc::clone(&requests));
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                a.fetch_add(1, Ordering::SeqCst);
                let r = Arc::clone(&r);
                std::thread::spawn(move || serve(conn, answer, &r));
            }
        });
        Target {
            port,
            accepted,
            requests,
        }
    }

    fn url(&self) -> String {
        format!("http://127.0.0.1:{}/", self.port)
    }
}

/// One connection: reads requests (headers, then a Content-Length or a
/// chunked body) and answers each while `answer`; EOF ends it.
fn serve(mut conn: TcpStream, answer: bool, seen: &Mutex<Vec<Vec<u8>>>) {
    let mut buf = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        match conn.read(&mut chunk) {
            Ok(0) | Err(_) => return,
            Ok(n) => buf.extend_from_slice(&chunk[..n]),
        }
        while let Some(end) = complete(&buf) {
            let req: Vec<u8> = buf.drain(..end).collect();
            seen.lock().unwrap().push(req);
            if answer
                && conn
                    .write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
                    .is_err()
            {
                return;
            }
        }
    }
}

/// The length of the first complete request in `buf`, if there is one.
fn complete(buf: &[u8]) -> Option<usize> {
    let head = buf.windows(4).position(|w| w == b"\r\n\r\n")? + 4;
    let headers = text(&buf[..head]).to_ascii_lowercase();
    if headers.contains("transfer-encoding: chunked") {
        let body = &buf[head..];
        let end = body.windows(5).position(|w| w == b"0\r\n\r\n")? + 5;
        return Some(head + end);
    }
    let len = headers
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok())
        .unwrap_or(0);
    (buf.len() >= head + len).then_some(head + len)
}

fn keisoku(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

/// Runs keisoku with `args` and checks it refused at once: exit 2, the
/// reason containing `why`, and no connection to the target.
fn refused(target: &Target, args: &[&str], why: &str) {
    let started = Instant::now();
    let out = keisoku(args);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
    assert!(err.contains(why), "{args:?}: expected {why:?} in {err}");
    assert_eq!(
        target.accepted.load(Ordering::SeqCst),
        0,
        "{args:?} connected to the target before refusing"
    );
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "{args:?} took {:?}",
        started.elapsed()
    );
}

#[test]
fn bad_flags_fail_fast_before_any_request() {
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    let s = store.to_str().unwrap();
    let d = dir.path().to_str().unwrap();
    let log = dir.path().join("access.log");
    std::fs::write(&log, "").unwrap();
    let l = log.to_str().unwrap();
    let missing = dir.path().join("mistyped.log");
    let m = missing.to_str().unwrap();
    let nodir = dir.path().join("no/such/access.log");
    let t = Target::start(true);
    let url = t.url();
    let u = url.as_str();
    let run = |extra: &[&str]| -> Vec<String> {
        let mut v: Vec<String> = ["run", "--target", u, "-d", "2s", "--store", s]
            .iter()
            .map(|x| x.to_string())
            .collect();
        v.extend(extra.iter().map(|x| x.to_string()));
        v
    };
    let refused_run = |extra: &[&str], why: &str| {
        let args = run(extra);
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        refused(&t, &args, why);
    };
    refused_run(&["--access-log", m], "no such file");
    refused_run(&["--access-log", nodir.to_str().unwrap()], "does not exist");
    refused_run(&["--access-log", d], "is a directory");
    refused_run(&["--json", d], "--json");
    refused_run(&["--hdr-log", d], "--hdr-log");
    refused_run(&["--profile-hz", "0"], "--profile-hz 0");
    refused_run(
        &[
            "--access-log",
            l,
            "--log-format",
            "regexp",
            "--log-regexp",
            ".*",
        ],
        "(?P<uri>...)",
    );
    refused_run(&["-R", "10000000000"], "--rate");
    refused_run(&["-H", "Connection: upgrade"], "Connection");
    refused(&t, &["bench", u, "-d", "2s", "--json", d], "is a directory");
    refused(
        &t,
        &["bench", u, "-d", "2s", "--hdr-log", d],
        "is a directory",
    );
    refused(
        &t,
        &["bench", u, "-d", "2s", "-R", "10000000000"],
        "at most",
    );
    // Nothing was kept of the refused runs.
    if store.exists() {
        let runs = keisoku(&["runs", "--store", s]);
        assert!(!text(&runs.stdout).contains(u), "{}", text(&runs.stdout));
    }
}

#[test]
fn connection_close_and_chunked_bodies_reach_the_wire() {
    let t = Target::start(true);
    let url = t.url();
    let out = keisoku(&[
        "bench",
        &url,
        "-c",
        "1",
        "-n",
        "3",
        "-H",
        "Connection: close",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let reqs = t.requests.lock().unwrap().clone();
    assert!(reqs.len() >= 3, "{} requests", reqs.len());
    assert!(
        reqs.iter()
            .all(|r| text(r).to_ascii_lowercase().contains("connection: close")),
        "{:?}",
        reqs.iter().map(|r| text(r)).collect::<Vec<_>>()
    );
    // One connection per request: the header was not dropped.
    assert!(t.accepted.load(Ordering::SeqCst) >= 3);

    let t = Target::start(true);
    let url = t.url();
    let out = keisoku(&[
        "bench",
        &url,
        "-c",
        "1",
        "-n",
        "1",
        "-H",
        "Transfer-Encoding: chunked",
        "--body",
        "abc",
    ]);
    assert!(out.status.success(), "{}", text(&out.stderr));
    let reqs = t.requests.lock().unwrap().clone();
    let first = text(reqs.first().expect("a request"));
    assert!(
        !first.to_ascii_lowercase().contains("content-length"),
        "{first}"
    );
    assert!(
        first.ends_with("\r\n\r\n3\r\nabc\r\n0\r\n\r\n"),
        "{first:?}"
    );
}

/// `sh -c 'ulimit ...; exec keisoku ARGS'`.
fn with_limit(limit: &str, args: &[&str]) -> Output {
    let quoted: Vec<String> = std::iter::once(BIN)
        .chain(args.iter().copied())
        .map(|a| format!("'{}'", a.replace('\'', "'\\''")))
        .collect();
    Command::new("sh")
        .arg("-c")
        .arg(format!("{limit}; exec {}", quoted.join(" ")))
        .output()
        .unwrap()
}

#[test]
fn a_low_open_files_limit_is_raised_or_refused_before_starting() {
    let t = Target::start(true);
    let url = t.url();
    // Soft 64, hard untouched: raised, and no "Too many open files".
    let out = with_limit(
        "ulimit -S -n 64",
        &[
            "bench", &url, "-c", "200", "-t", "1", "-d", "1s", "--json", "-",
        ],
    );
    let err = text(&out.stderr);
    assert!(out.status.success(), "{err}");
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["errors"].as_u64(), Some(0), "{json}");
    assert!(!text(&out.stdout).contains("Too many open files"));

    // Hard limit too low: refused before the first connection.
    let t = Target::start(true);
    let url = t.url();
    let out = with_limit("ulimit -n 128", &["bench", &url, "-c", "2000", "-d", "1s"]);
    let err = text(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("open files"), "{err}");
    assert_eq!(t.accepted.load(Ordering::SeqCst), 0);
}

#[test]
fn a_server_that_never_answers_ends_near_duration_plus_timeout() {
    let t = Target::start(false);
    let url = t.url();
    let started = Instant::now();
    let out = keisoku(&["bench", &url, "-c", "2", "-d", "2s", "--timeout", "1s"]);
    let took = started.elapsed();
    assert_eq!(out.status.code(), Some(1), "{}", text(&out.stderr));
    assert!(t.accepted.load(Ordering::SeqCst) > 0);
    // 2 s of load, then at most one timeout for what is in flight.
    assert!(
        took < Duration::from_secs(6),
        "-d 2s --timeout 1s took {took:?}"
    );
}

/// Issue 15 item 12: with the default 10 s timeout, `-d 2s` against a
/// listening socket that never answers ends about 1 s after the duration
/// (it ran 10 s, the read timeout), and says what was still in flight.
#[test]
fn the_duration_ends_a_load_whose_server_never_answers() {
    let t = Target::start(false);
    let url = t.url();
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("bench.json");
    let store = dir.path().join("runs.db");
    for args in [
        vec!["bench", &url, "-c", "3", "-d", "2s", "--json"],
        vec!["run", "--target", &url, "-c", "3", "-d", "2s", "--store"],
    ] {
        let mut cmd = Command::new(BIN);
        cmd.args(&args);
        cmd.arg(if args[0] == "bench" { &json } else { &store });
        let started = Instant::now();
        let out = cmd.output().unwrap();
        let took = started.elapsed();
        let (stdout, err) = (text(&out.stdout), text(&out.stderr));
        assert_eq!(out.status.code(), Some(1), "{stdout}{err}");
        assert!(
            took < Duration::from_secs(6),
            "{} -d 2s against a silent server took {took:?}",
            args[0]
        );
        let all = format!("{stdout}{err}");
        assert!(
            all.contains("3 requests were still unanswered when the duration ended"),
            "{all}"
        );
    }
    let show = Command::new(BIN)
        .args(["show", "last", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let shown = text(&show.stdout);
    assert!(shown.contains("unfinished 3 (still unanswered"), "{shown}");
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    assert_eq!(report["unfinished"], 3, "{report}");
    assert_eq!(report["requests"], 0, "{report}");
    assert_eq!(report["errors"], 0, "{report}");
}
