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
