//! Hostile input never exhausts memory (issue 15, item 7): every reader of
//! a user's file refuses endless input (`/dev/zero`), a 64 MiB line and a
//! gzip bomb with exit 2 naming the file and the limit, within seconds and
//! under a 2 GiB address-space limit (before, `collapse perf /dev/zero`
//! aborted allocating 2 GiB and `logs ltsv /dev/zero` never finished).

mod common;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// Runs keisoku under `ulimit -v` (2 GiB) and fails the test when it runs
/// longer than a minute (it is killed then, so a hang cannot wedge the suite).
fn bounded(dir: &Path, args: &[&str]) -> (Output, Duration) {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("ulimit -v 2097152 && exec \"$0\" \"$@\"")
        .arg(common::BIN)
        .args(args)
        .current_dir(dir)
        .env_remove("KEISOKU_MAX_LINE")
        .env_remove("KEISOKU_MAX_INPUT")
        .env_remove("KEISOKU_MAX_RATIO")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let start = Instant::now();
    let mut child = cmd.spawn().expect("spawn keisoku");
    let deadline = start + Duration::from_secs(60);
    loop {
        if child.try_wait().expect("wait").is_some() {
            break;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let out = child.wait_with_output().expect("collect");
            panic!(
                "keisoku {args:?} ran over a minute: {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        // Polling the child's exit, not a fixed wait for an outcome.
        std::thread::sleep(Duration::from_millis(20));
    }
    (child.wait_with_output().expect("collect"), start.elapsed())
}

/// Files of every hostile shape, made once per test in a temp dir.
struct Hostile {
    dir: tempfile::TempDir,
}

impl Hostile {
    fn new() -> Hostile {
        let dir = tempfile::tempdir().expect("temp dir");
        // 64 MiB on one line.
        let mut f = std::fs::File::create(dir.path().join("line.txt")).unwrap();
        let block = vec![b'a'; 1 << 20];
        for _ in 0..64 {
            f.write_all(&block).unwrap();
        }
        // A gzip bomb: one member of 4 MiB of zeros (4 KiB compressed)
        // repeated 512 times decodes to 2 GiB from 2 MiB.
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(&vec![0u8; 4 << 20]).unwrap();
        let member = enc.finish().unwrap();
        let mut f = std::fs::File::create(dir.path().join("bomb.gz")).unwrap();
        for _ in 0..512 {
            f.write_all(&member).unwrap();
        }
        Hostile { dir }
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn inputs(&self) -> Vec<String> {
        vec![
            "/dev/zero".to_string(),
            self.path("line.txt").display().to_string(),
            self.path("bomb.gz").display().to_string(),
        ]
    }
}

fn refused(h: &Hostile, args: &[&str], file: &str, limit_var: &str) {
    let (out, took) = bounded(h.dir.path(), args);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(2),
        "keisoku {args:?}: expected exit 2, got {:?}: {err}",
        out.status
    );
    assert!(
        err.contains(file),
        "keisoku {args:?} should name {file}: {err}"
    );
    assert!(
        err.contains(limit_var),
        "keisoku {args:?} should name the limit {limit_var}: {err}"
    );
    assert!(
        took < Duration::from_secs(30),
        "keisoku {args:?} took {took:?}"
    );
}

#[test]
fn profile_readers_refuse_endless_and_one_line_input() {
    let h = Hostile::new();
    for input in h.inputs() {
        // Zeros are binary data: no text format reads them, forced or not,
        // so they are refused at once, before any line is read (issue 16).
        let zeros = !input.ends_with("line.txt");
        let why = if zeros {
            "binary data"
        } else {
            "KEISOKU_MAX_LINE"
        };
        refused(
            &h,
            &["collapse", "perf", &input],
            &input,
            "not a recognised profile",
        );
        refused(&h, &["collapse", "--format", "perf", &input], &input, why);
        refused(&h, &["collapse", "--format", "folded", &input], &input, why);
        refused(
            &h,
            &["flame", "--format", "perf", &input, "-o", "f.html"],
            &input,
            why,
        );
    }
    // Whole-document formats stop at the input size limit (256 MiB: the
    // 64 MiB line is within it and parsed, then refused as malformed); the
    // bomb meets the decompression ratio first.
    for input in [
        "/dev/zero".to_string(),
        h.path("bomb.gz").display().to_string(),
    ] {
        refused(
            &h,
            &["flame", "--format", "speedscope", &input, "-o", "f.html"],
            &input,
            "KEISOKU_MAX_",
        );
    }
}

#[test]
fn log_readers_refuse_endless_and_one_line_input() {
    let h = Hostile::new();
    let good = h.path("good.ltsv");
    std::fs::write(
        &good,
        "time:2024-01-01T00:00:00+00:00\tmethod:GET\turi:/a\tstatus:200\tsize:1\treqtime:0.001\n",
    )
    .unwrap();
    let dump = h.path("good.dump");
    let out = Command::new(common::BIN)
        .args(["logs", "ltsv"])
        .arg(&good)
        .arg("--dump")
        .arg(&dump)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dump = dump.display().to_string();
    for input in h.inputs() {
        for format in ["ltsv", "json", "regexp"] {
            refused(&h, &["logs", format, &input], &input, "KEISOKU_MAX_LINE");
        }
    }
    // `logs diff` reads dumps (one JSON document, not gzip) whole: endless
    // input stops at the input-size limit; 64 MiB of one line is within it
    // and refused as malformed, naming the file.
    let inputs = h.inputs();
    refused(
        &h,
        &["logs", "diff", &dump, &inputs[0]],
        &inputs[0],
        "KEISOKU_MAX_INPUT",
    );
    refused(&h, &["logs", "diff", &dump, &inputs[1]], &inputs[1], "");
}

#[test]
fn bench_and_report_files_refuse_endless_and_one_line_input() {
    let h = Hostile::new();
    let port = common::free_port();
    let url = format!("http://127.0.0.1:{port}/");
    for input in [
        "/dev/zero".to_string(),
        h.path("line.txt").display().to_string(),
    ] {
        refused(
            &h,
            &["bench", "--targets", &input, "-d", "1s"],
            &input,
            "KEISOKU_MAX",
        );
    }
    // A body is read whole: endless input stops at the input size limit
    // (a 64 MiB body is within it and sent).
    refused(
        &h,
        &["bench", &url, "--body", "@/dev/zero", "-d", "1s"],
        "/dev/zero",
        "KEISOKU_MAX_INPUT",
    );
    // A Run JSON is one document (on one line, as `export` writes it): the
    // input size bounds it (`read_whole`), not the line length; 64 MiB of
    // one line is read and refused as malformed, naming the file.
    let line = h.path("line.txt").display().to_string();
    refused(&h, &["report", &line, "-o", "r.html"], &line, "");
}

#[test]
fn a_run_json_longer_than_the_line_limit_is_read() {
    // A 1M-sample run exports to one JSON line of tens of MiB; the line
    // limit (8 MiB) once refused every such run.
    let h = Hostile::new();
    let big = "x".repeat(9 << 20);
    let run = format!(
        r#"{{"version":1,"run":{{"id":"20261124-000000-abcd","name":"big","tags":{{"pad":"{big}"}}}}}}"#
    );
    let f = h.path("big-run.json");
    std::fs::write(&f, run).unwrap();
    let out_html = h.path("big.html");
    let out = Command::new(common::BIN)
        .args(["report", &f.display().to_string(), "-o"])
        .arg(&out_html)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(std::fs::metadata(&out_html).unwrap().len() > 9 << 20);
}

#[test]
fn a_raised_limit_lets_a_long_line_through() {
    let h = Hostile::new();
    // A folded stack of a 9 MiB frame name: over the default, under 16 MiB.
    let f = h.path("deep.folded");
    let mut text = vec![b'f'; 9 << 20];
    text.extend_from_slice(b";leaf 3\n");
    std::fs::write(&f, &text).unwrap();
    let f = f.display().to_string();
    refused(
        &h,
        &["collapse", "--format", "folded", &f],
        &f,
        "KEISOKU_MAX_LINE",
    );
    let out = Command::new(common::BIN)
        .args(["collapse", "--format", "folded", &f])
        .env("KEISOKU_MAX_LINE", "16M")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(out.stdout.ends_with(b";leaf 3\n"));
    let out = Command::new(common::BIN)
        .args(["collapse", "--format", "folded", &f])
        .env("KEISOKU_MAX_LINE", "lots")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("KEISOKU_MAX_LINE=\"lots\""));
}

/// A server answering every request with 200 until the test ends.
fn answering_server() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for conn in listener.incoming().flatten() {
            std::thread::spawn(move || {
                use std::io::{BufRead, BufReader};
                let mut w = conn.try_clone().unwrap();
                let mut r = BufReader::new(conn);
                let mut line = String::new();
                loop {
                    line.clear();
                    match r.read_line(&mut line) {
                        Ok(0) | Err(_) => return,
                        Ok(_) if line == "\r\n" => {
                            let ok = b"HTTP/1.1 200 OK\r\nContent-Length: 3\r\n\r\nok\n";
                            if w.write_all(ok).is_err() {
                                return;
                            }
                        }
                        Ok(_) => {}
                    }
                }
            });
        }
    });
    url
}

/// An access log that breaks the line limit mid-run (`/dev/zero`) is no
/// longer followed: the run keeps what it measured and ends `partial`,
/// exit 1, saying why (it ended `complete`, exit 0, with only a note).
#[test]
fn an_access_log_that_breaks_a_limit_ends_the_run_partial() {
    let dir = tempfile::tempdir().unwrap();
    let url = answering_server();
    let store = dir.path().join("runs.db");
    let (out, _) = bounded(
        dir.path(),
        &[
            "run",
            "--target",
            &url,
            "-d",
            "2s",
            "-c",
            "2",
            "--access-log",
            "/dev/zero",
            "--store",
            &store.display().to_string(),
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("not kept: access log /dev/zero:"), "{err}");
    assert!(err.contains("stopped following it"), "{err}");
    let runs = Command::new(common::BIN)
        .args(["export", "last", "--store"])
        .arg(&store)
        .output()
        .unwrap();
    let run: serde_json::Value = serde_json::from_slice(&runs.stdout).unwrap();
    assert_eq!(run["run"]["status"], "partial", "{err}");
    assert!(
        run["results"]["requests"].as_u64().unwrap_or(0) > 0,
        "{err}"
    );
}

/// Peak RSS in KiB of `keisoku args` (stdout to a file), from the kernel's
/// accounting of that one child (`wait4`), not of the test process's others.
// Reaped by wait4 below, which also gives its rusage (Child::wait does not).
#[allow(clippy::zombie_processes)]
fn peak_rss_kib(args: &[&str], stdout: &Path) -> u64 {
    let child = Command::new(common::BIN)
        .args(args)
        .stdout(std::fs::File::create(stdout).unwrap())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut status = 0;
    // SAFETY: an all-zero rusage is valid; wait4 fills it for our child.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: the pid is our own unreaped child; both pointers are live.
    let rc = unsafe { libc::wait4(child.id() as i32, &mut status, 0, &mut usage) };
    assert_eq!(rc, child.id() as i32, "wait4");
    assert!(
        libc::WIFEXITED(status) && libc::WEXITSTATUS(status) == 0,
        "keisoku {args:?}: status {status}"
    );
    u64::try_from(usage.ru_maxrss).unwrap()
}

/// Issue 15 item 8, scaled down: printing the route table of a log where
/// every request has its own URI takes no more memory than analysing it,
/// in every format (printing a million rows built every cell first, and
/// the html page whole: 2.1 GB for the table, 1.4 GB for html, against
/// 0.93 GB for the analysis). Allowed: 100 bytes a route above the
/// analysis alone (`-o count`); building the cells took over 1 KB a route.
#[test]
fn printing_a_table_of_distinct_routes_costs_no_memory_per_route() {
    const ROUTES: usize = 50_000;
    let dir = tempfile::tempdir().unwrap();
    let log = dir.path().join("routes.ltsv");
    let mut text = String::with_capacity(ROUTES * 100);
    for i in 0..ROUTES {
        text.push_str(&format!(
            "time:2026-11-24T00:00:{:02}+00:00\tmethod:GET\turi:/items/{i}/view\tstatus:{}\tsize:{}\treqtime:0.{:03}\n",
            i % 60,
            if i % 50 == 0 { 500 } else { 200 },
            100 + i % 4900,
            1 + i % 999
        ));
    }
    std::fs::write(&log, text).unwrap();
    let log = log.display().to_string();
    let limit = (ROUTES + 1).to_string();
    let out = dir.path().join("out");
    let base = ["logs", "ltsv", &log, "--limit", &limit, "--format"];
    let analysis = peak_rss_kib(&[&base[..], &["tsv", "-o", "count"]].concat(), &out);
    for format in ["table", "md", "tsv", "csv", "json", "html"] {
        let peak = peak_rss_kib(&[&base[..], &[format]].concat(), &out);
        let rows = std::fs::read_to_string(&out)
            .unwrap()
            .matches("/view")
            .count();
        assert_eq!(rows, ROUTES, "{format}: {rows} rows");
        let per_route = (peak.saturating_sub(analysis) * 1024) as usize / ROUTES;
        eprintln!("{format}: peak {peak} KiB, analysis alone {analysis} KiB");
        assert!(
            per_route <= 100,
            "{format}: peak {peak} KiB against {analysis} KiB for the analysis alone: {per_route} bytes a route"
        );
    }
}
