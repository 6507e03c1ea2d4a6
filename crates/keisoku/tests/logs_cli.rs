//! `keisoku logs` features beyond alp: timeline, slowest requests, dumps and
//! diffs, auto-grouping, stdin, position files, html.

use std::io::Write;
use std::process::{Command, Stdio};

fn keisoku(args: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_keisoku"))
        .args(args)
        .output()
        .expect("run keisoku")
}

fn ok(args: &[&str]) -> String {
    let out = keisoku(args);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// 60 s of traffic: /fast every 100 ms, /orders/N slow from second 45 on
/// (the "cascade" the timeline must point at).
fn cascade_log() -> String {
    let mut s = String::new();
    for i in 0..600u32 {
        let t = 1_763_719_200.0 + f64::from(i) * 0.1;
        let sec = (t as u64) % 60;
        let ts = format!("2025-11-21T10:00:{sec:02}+00:00");
        s.push_str(&format!("time:{ts}\tmethod:GET\turi:/fast?x={i}\tstatus:200\tsize:100\treqtime:0.005\tapptime:0.004\n"));
        if i % 5 == 0 {
            let (rt, st) = if sec >= 45 {
                (3.0 + f64::from(i % 7) * 0.1, 504)
            } else {
                (0.050, 200)
            };
            s.push_str(&format!(
                "time:{ts}\tmethod:POST\turi:/orders/{}\tstatus:{st}\tsize:20\treqtime:{rt:.3}\tapptime:{rt:.3}\n",
                1000 + i
            ));
        }
    }
    s
}

fn write_log(dir: &std::path::Path, name: &str, text: &str) -> String {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p.to_str().unwrap().to_string()
}

#[test]
fn timeline_points_at_the_cascade() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "a.log", &cascade_log());
    let text = ok(&["logs", "ltsv", &log, "--auto-group", "--timeline", "1s"]);
    assert!(
        text.contains("Timeline: 60 buckets of 1s from 2025-11-21T10:00:00Z"),
        "{text}"
    );
    assert!(
        text.contains("latency first jumped at 2025-11-21T10:00:45Z"),
        "{text}"
    );
    assert!(
        text.contains("slowest route there: POST /orders/:id"),
        "{text}"
    );
    assert!(text.contains("req/s"));

    let json = ok(&[
        "logs",
        "ltsv",
        &log,
        "--auto-group",
        "--timeline",
        "1s",
        "--format",
        "json",
    ]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    let b = v["timeline"]["buckets"].as_array().unwrap();
    assert_eq!(b.len(), 60);
    assert_eq!(b[0]["count"], 12);
    assert_eq!(b[50]["errors"], 2);
    // Slow requests (3 s+) overlap: several are in flight at once late in the log.
    assert!(b[54]["in_flight"].as_f64().unwrap() > 5.0, "{}", b[54]);
    assert!(b[10]["in_flight"].as_f64().unwrap() < 1.0);
    let orders = b[50]["routes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["uri"] == "/orders/:id")
        .unwrap();
    assert!(orders["p99"].as_f64().unwrap() >= 3.0);
    assert!(v["routes"].is_array(), "alp's rows stay under \"routes\"");

    let csv = ok(&[
        "logs",
        "ltsv",
        &log,
        "--auto-group",
        "--timeline",
        "10s",
        "--format",
        "csv",
    ]);
    let mut lines = csv.lines();
    assert_eq!(
        lines.next(),
        Some("time,start,method,uri,count,rps,errors,p50,p99,in_flight")
    );
    assert!(
        csv.contains("2025-11-21T10:00:50Z,1763719250,*,*,120,12.000,20,"),
        "{csv}"
    );
}

#[test]
fn slow_requests_with_line_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "a.log", &cascade_log());
    let out = ok(&[
        "logs",
        "ltsv",
        &log,
        "--auto-group",
        "--slow",
        "3",
        "-o",
        "count,method,uri",
    ]);
    assert!(out.contains("Slowest 3 requests"), "{out}");
    // The slowest is 3.6 s (i % 7 == 6, sec >= 45): its exact line is known.
    let text = cascade_log();
    let lines: Vec<&str> = text.lines().collect();
    let (idx, _) = lines
        .iter()
        .enumerate()
        .find(|(_, l)| l.contains("reqtime:3.600"))
        .unwrap();
    assert!(
        out.contains(&format!("| {} ", idx + 1)),
        "line {} missing: {out}",
        idx + 1
    );
    assert!(out.contains("/orders/:id"));
    let json = ok(&["logs", "ltsv", &log, "--slow", "2", "--format", "json"]);
    let v: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(v["slow"].as_array().unwrap().len(), 2);
    assert_eq!(v["slow"][0]["response_time"], 3.6);
}

#[test]
fn dump_load_and_diff() {
    let dir = tempfile::tempdir().unwrap();
    let before = "method:GET\turi:/a\tstatus:200\tsize:10\treqtime:0.100\nmethod:GET\turi:/b\tstatus:200\tsize:10\treqtime:0.200\n";
    let after = format!("{before}method:GET\turi:/a\tstatus:500\tsize:30\treqtime:0.400\n");
    let la = write_log(dir.path(), "before.log", before);
    let lb = write_log(dir.path(), "after.log", &after);
    let da = dir.path().join("a.json");
    let db = dir.path().join("b.json");
    let table = ok(&["logs", "ltsv", &la, "--dump", da.to_str().unwrap()]);
    ok(&["logs", "ltsv", &lb, "--dump", db.to_str().unwrap()]);
    assert_eq!(ok(&["logs", "ltsv", "--load", da.to_str().unwrap()]), table);
    let diff = ok(&[
        "logs",
        "diff",
        da.to_str().unwrap(),
        db.to_str().unwrap(),
        "--format",
        "tsv",
        "-o",
        "count,5xx,uri,max,avg",
    ]);
    assert_eq!(diff, "Count\t5xx\tUri\tMax\tAvg\n1\t0\t/b\t0.200\t0.200\n2 (+1)\t1 (+1)\t/a\t0.400 (+0.300)\t0.250 (+0.150)\n");
    let gate = keisoku(&[
        "logs",
        "diff",
        da.to_str().unwrap(),
        db.to_str().unwrap(),
        "--fail-over",
        "0.5",
    ]);
    assert_eq!(gate.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&gate.stderr).contains("GET /a: p99 0.100 -> 0.400"));
    let fine = keisoku(&[
        "logs",
        "diff",
        da.to_str().unwrap(),
        da.to_str().unwrap(),
        "--fail-over",
        "0.5",
    ]);
    assert_eq!(fine.status.code(), Some(0));
    let bad = keisoku(&["logs", "diff", la.as_str(), db.to_str().unwrap()]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("not a keisoku logs dump"));
}

#[test]
fn sorting_reverse_and_limit_and_html() {
    let dir = tempfile::tempdir().unwrap();
    let mut s = String::new();
    for (uri, n, rt) in [("/a", 3, 0.3), ("/b", 1, 0.9), ("/c", 2, 0.1)] {
        for _ in 0..n {
            s.push_str(&format!(
                "method:GET\turi:{uri}\tstatus:200\tsize:{n}\treqtime:{rt}\n"
            ));
        }
    }
    let log = write_log(dir.path(), "a.log", &s);
    let order = |args: &[&str]| -> Vec<String> {
        let mut a = vec![
            "logs",
            "ltsv",
            log.as_str(),
            "--format",
            "tsv",
            "--noheaders",
            "-o",
            "uri",
        ];
        a.extend(args);
        ok(&a).lines().map(str::to_string).collect()
    };
    assert_eq!(order(&[]), ["/b", "/c", "/a"]);
    assert_eq!(order(&["-r"]), ["/a", "/c", "/b"]);
    assert_eq!(order(&["--sort", "max"]), ["/c", "/a", "/b"]);
    assert_eq!(order(&["--sort", "sum", "-r"]), ["/b", "/a", "/c"]);
    assert_eq!(order(&["--sort", "uri", "-r"]), ["/c", "/b", "/a"]);
    assert_eq!(order(&["--sort", "p99"]), ["/c", "/a", "/b"]);
    assert_eq!(order(&["--sort", "max-body", "-r"]), ["/a", "/c", "/b"]);
    assert_eq!(
        order(&["-f", "ResponseTime < 0.5", "--sort", "uri"]),
        ["/a", "/c"]
    );
    let html = ok(&["logs", "ltsv", &log, "--format", "html"]);
    assert!(html.starts_with("<!doctype html>") && html.contains("<td class=\"t\">/b</td>"));
    assert_eq!(
        keisoku(&["logs", "ltsv", &log, "--limit", "2"])
            .status
            .code(),
        Some(2)
    );
}

#[test]
fn stdin_and_position_file() {
    let dir = tempfile::tempdir().unwrap();
    let line = "method:GET\turi:/a\tstatus:200\tsize:1\treqtime:0.1\n";
    let mut child = Command::new(env!("CARGO_BIN_EXE_keisoku"))
        .args(["logs", "ltsv", "-", "-o", "count,uri", "--format", "tsv"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(line.repeat(3).as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert_eq!(String::from_utf8_lossy(&out.stdout), "Count\tUri\n3\t/a\n");

    let log = write_log(dir.path(), "a.log", &line.repeat(2));
    let pos = dir.path().join("pos");
    let p = pos.to_str().unwrap();
    let args = [
        "logs",
        "ltsv",
        log.as_str(),
        "--pos",
        p,
        "-o",
        "count",
        "--format",
        "tsv",
        "--noheaders",
    ];
    assert_eq!(ok(&args), "2\n");
    std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .unwrap()
        .write_all(line.as_bytes())
        .unwrap();
    assert_eq!(ok(&args), "1\n", "only the appended line");
    assert_eq!(
        std::fs::read_to_string(&pos).unwrap(),
        (line.len() * 3).to_string()
    );
}

#[test]
fn apache_microseconds_and_custom_regexp() {
    let dir = tempfile::tempdir().unwrap();
    // LogFormat "%h %l %u %t \"%r\" %>s %b %D"
    let log = write_log(
        dir.path(),
        "apache.log",
        "127.0.0.1 - - [21/Nov/2025:10:00:00 +0000] \"GET /x HTTP/1.1\" 200 512 1500\n\
         127.0.0.1 - - [21/Nov/2025:10:00:01 +0000] \"GET /x HTTP/1.1\" 404 0 2500\n",
    );
    let pat = r#"^\S+ \S+ \S+ \[(?P<time>[^\]]+)\] "(?P<method>\S+) (?P<uri>\S+) [^"]*" (?P<status>\d+) (?P<body_bytes>\S+) (?P<response_time>\d+)$"#;
    let out = ok(&[
        "logs",
        "regexp",
        &log,
        "--pattern",
        pat,
        "--time-unit",
        "us",
        "-o",
        "count,4xx,uri,min,max,sum",
        "--format",
        "tsv",
    ]);
    assert_eq!(
        out,
        "Count\t4xx\tUri\tMin\tMax\tSum\n2\t1\t/x\t0.002\t0.003\t0.004\n"
    );
    let bad = keisoku(&["logs", "regexp", &log, "--pattern", "(unclosed"]);
    assert_eq!(bad.status.code(), Some(2));
}

/// Records `log_text` appended to an access log during `keisoku record`
/// (the recorded command writes it, so every line belongs to the run).
fn record_log(dir: &std::path::Path, name: &str, log_text: &str) -> String {
    record_log_with(dir, name, log_text, &[])
}

/// `record_log` with more `keisoku record` flags.
fn record_log_with(dir: &std::path::Path, name: &str, log_text: &str, flags: &[&str]) -> String {
    let seed = write_log(dir, &format!("{name}.seed"), log_text);
    let log = dir.join(format!("{name}.log"));
    std::fs::write(&log, "").unwrap();
    let store = dir.join("runs.db");
    let cmd = format!("cat '{seed}' >> '{}'", log.display());
    let mut args = vec![
        "record",
        "--access-log",
        log.to_str().unwrap(),
        "--profile",
        "none",
        "--store",
        store.to_str().unwrap(),
        "--name",
        name,
    ];
    args.extend_from_slice(flags);
    args.extend_from_slice(&["--", "sh", "-c", &cmd]);
    ok(&args);
    store.to_str().unwrap().to_string()
}

#[test]
fn a_stored_run_prints_the_tables_of_its_log_file() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = String::new();
    for i in 0..200u32 {
        let (uri, st) = match i % 4 {
            0 => (format!("/users/{}?page={}", i % 9, i % 3), 200),
            1 => (format!("/items/{}", i * 7), 404),
            2 => ("/".to_string(), 500),
            _ => (format!("/users/{}/posts", i % 5), 302),
        };
        let rt = 0.001 * f64::from(1 + (i * 37) % 250);
        text.push_str(&format!(
            "time:21/Nov/2026:21:30:00 +0000\tmethod:{}\turi:{uri}\tstatus:{st}\tsize:{}\treqtime:{rt:.3}\n",
            if i % 7 == 0 { "POST" } else { "GET" },
            100 + i
        ));
    }
    let store = record_log(dir.path(), "before", &text);
    let file = dir.path().join("before.seed");
    let file = file.to_str().unwrap();
    // The same table, columns, order and digits as the log file gives.
    for extra in [
        &[][..],
        &["--sort", "p99", "-r", "--format", "tsv"][..],
        &["--percentiles", "10,50,75", "--format", "json"][..],
        &[
            "--auto-group",
            "--sort",
            "sum",
            "--format",
            "md",
            "--show-footers",
        ][..],
        &[
            "-m",
            "^/users/[0-9]+/posts$,^/users/[0-9]+$",
            "--format",
            "csv",
        ][..],
        &["-o", "count,method,uri,p0,p100,stddev,avg_body"][..],
        // Options that need the lines themselves.
        &[
            "-f",
            "Status >= 400 and Uri matches \"^/users\"",
            "--slow",
            "4",
        ][..],
        &["-q", "--format", "tsv"][..],
        &[
            "-q",
            "--qs-ignore-values",
            "--auto-group",
            "--format",
            "json",
        ][..],
        &["--timeline", "1s"][..],
        &["--timeline", "500ms", "--format", "csv", "--auto-group"][..],
        &["--slow", "5", "--format", "json", "--strict"][..],
        &["--time-unit", "ms", "--sort", "max"][..],
    ] {
        let mut stored = vec!["logs", "before", "--store", &store];
        stored.extend_from_slice(extra);
        let mut logged = vec!["logs", "ltsv", file];
        logged.extend_from_slice(extra);
        assert_eq!(ok(&stored), ok(&logged), "{extra:?}");
    }
    // `keisoku logs ltsv RUN` reads the run too (KEISOKU_STORE names the store).
    let out = Command::new(env!("CARGO_BIN_EXE_keisoku"))
        .env("KEISOKU_STORE", &store)
        .args(["logs", "ltsv", "last", "--auto-group"])
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        ok(&["logs", "ltsv", file, "--auto-group"])
    );

    // A malformed line is named by its place among the run's lines.
    let bad_text = format!(
        "{}not a log line\n{}",
        &text[..text.find('\n').unwrap() + 1],
        &text
    );
    record_log(dir.path(), "bad", &bad_text);
    let out = keisoku(&["logs", "bad", "--store", &store, "--strict"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains("run ") && err.contains("line 2"), "{err}");

    // Without its lines (--no-log-lines) a run still prints its table from
    // the stored statistics, and refuses what needs lines with the reason.
    record_log_with(dir.path(), "nolines", &text, &["--no-log-lines"]);
    assert_eq!(
        ok(&["logs", "nolines", "--store", &store, "--sort", "sum"]),
        ok(&["logs", "ltsv", file, "--sort", "sum"])
    );
    for bad in [
        &["-f", "Status >= 500"][..],
        &["--timeline", "1s"][..],
        &["-q"][..],
        &["--slow", "3"][..],
    ] {
        let mut args = vec!["logs", "nolines", "--store", &store];
        args.extend_from_slice(bad);
        let out = keisoku(&args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad:?}: {err}");
        assert!(
            err.contains("not the log lines")
                && err.contains(bad[0])
                && err.contains("--no-log-lines"),
            "{err}"
        );
    }

    // Its dump is keisoku's JSON; alp's YAML (every response time) cannot
    // be made from statistics and is refused, never written as JSON.
    let yaml = dir.path().join("nolines.yaml");
    let out = keisoku(&[
        "logs",
        "nolines",
        "--store",
        &store,
        "--dump",
        yaml.to_str().unwrap(),
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(err.contains(".json") && !yaml.exists(), "{err}");
    let json = dir.path().join("nolines.json");
    ok(&[
        "logs",
        "nolines",
        "--store",
        &store,
        "--dump",
        json.to_str().unwrap(),
    ]);
    assert!(std::fs::read_to_string(&json).unwrap().starts_with('{'));

    // A tiny --log-lines-max keeps a prefix of whole lines: the plain table
    // still covers every line (from the statistics); options that need
    // lines use the kept ones and say so on stderr.
    record_log_with(dir.path(), "capped", &text, &["--log-lines-max", "3KiB"]);
    let kept = ok(&["export", "capped", "--format", "log", "--store", &store]);
    assert!(kept.len() <= 3072 && kept.len() > 2900 && text.starts_with(&kept));
    let prefix = write_log(dir.path(), "prefix.log", &kept);
    assert_eq!(
        ok(&["logs", "capped", "--store", &store]),
        ok(&["logs", "ltsv", file])
    );
    let out = keisoku(&["logs", "capped", "--store", &store, "--slow", "3", "-q"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{err}");
    let n = kept.lines().count();
    assert!(
        err.contains(&format!("kept only its first {n} of 200 log lines")),
        "{err}"
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        ok(&["logs", "ltsv", &prefix, "--slow", "3", "-q"])
    );
    let show = ok(&["show", "capped", "--store", &store]);
    assert!(
        show.contains(&format!("{n} of 200 lines kept")) && show.contains("truncated at"),
        "{show}"
    );
    let out = keisoku(&["logs", "no-such-run", "--store", &store]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("keisoku runs"));

    // Two stored runs compare like two dumps; the gate works on them.
    let slower: String = text
        .lines()
        .map(|l| l.replace("reqtime:0.", "reqtime:1.") + "\n")
        .collect();
    record_log(dir.path(), "after", &slower);
    let out = keisoku(&[
        "logs",
        "diff",
        "before",
        "after",
        "--store",
        &store,
        "--fail-over",
        "0.5",
    ]);
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dump = dir.path().join("before.json");
    ok(&[
        "logs",
        "before",
        "--store",
        &store,
        "--dump",
        dump.to_str().unwrap(),
    ]);
    // The same dump as the file's.
    let file_dump = dir.path().join("file.json");
    ok(&["logs", "ltsv", file, "--dump", file_dump.to_str().unwrap()]);
    assert_eq!(
        std::fs::read(&dump).unwrap(),
        std::fs::read(&file_dump).unwrap()
    );
    let same = ok(&[
        "logs",
        "diff",
        dump.to_str().unwrap(),
        "before",
        "--store",
        &store,
    ]);
    assert!(!same.contains("(+"), "{same}");
}

/// alp's `--location`: zone names it knows pass, anything else exits 2.
#[test]
fn location_is_validated_as_alp_does() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(dir.path(), "a.log", &cascade_log());
    for good in ["Local", "UTC", "Asia/Tokyo"] {
        ok(&["logs", "ltsv", &log, "--location", good, "--format", "tsv"]);
    }
    for bad in ["Bogus/Zone", "XYZ", "../../etc/passwd"] {
        let out = keisoku(&["logs", "ltsv", &log, "--location", bad]);
        assert_eq!(out.status.code(), Some(2), "{bad}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("Invalid timezone abbreviation"), "{err}");
    }
}

/// `diff --fail-over --min-count N`: a route with fewer than N requests on
/// either side cannot trip the gate.
#[test]
fn fail_over_min_count_ignores_thin_routes() {
    let dir = tempfile::tempdir().unwrap();
    let line = |uri: &str, t: f64| {
        format!("time:2025-11-21T10:00:00+00:00\tmethod:GET\turi:{uri}\tstatus:200\tsize:1\treqtime:{t:.3}\n")
    };
    let mut before = String::new();
    let mut after = String::new();
    for _ in 0..50 {
        before.push_str(&line("/busy", 0.100));
        after.push_str(&line("/busy", 0.105));
    }
    for _ in 0..3 {
        before.push_str(&line("/thin", 0.100));
        after.push_str(&line("/thin", 2.0));
    }
    let a = write_log(dir.path(), "a.log", &before);
    let b = write_log(dir.path(), "b.log", &after);
    let (da, db) = (dir.path().join("a.json"), dir.path().join("b.json"));
    ok(&["logs", "ltsv", &a, "--dump", da.to_str().unwrap()]);
    ok(&["logs", "ltsv", &b, "--dump", db.to_str().unwrap()]);
    let (da, db) = (da.to_str().unwrap(), db.to_str().unwrap());
    let out = keisoku(&["logs", "diff", da, db, "--fail-over", "20%"]);
    assert_eq!(out.status.code(), Some(3));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/thin"));
    let out = keisoku(&[
        "logs",
        "diff",
        da,
        db,
        "--fail-over",
        "20%",
        "--min-count",
        "10",
    ]);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `--slow` lists each request's own URI (query string included without
/// `-q`) in the table style `--format` asks for.
#[test]
fn slow_shows_the_full_uri_in_the_chosen_format() {
    let dir = tempfile::tempdir().unwrap();
    let log = write_log(
        dir.path(),
        "a.log",
        "method:GET\turi:/search?q=slow&page=2\tstatus:200\tsize:1\treqtime:2.500\n\
         method:GET\turi:/search?q=fast\tstatus:200\tsize:1\treqtime:0.010\n",
    );
    let table = ok(&["logs", "ltsv", &log, "--slow", "1"]);
    assert!(table.contains("/search?q=slow&page=2"), "{table}");
    let tail = &table[table.find("Slowest 1 requests").expect("slow list")..];
    assert!(tail.lines().nth(1).unwrap().starts_with("+-"), "{tail}");
    let md = ok(&["logs", "ltsv", &log, "--slow", "1", "--format", "md"]);
    let tail = &md[md.find("Slowest 1 requests").expect("slow list")..];
    assert!(tail.lines().nth(1).unwrap().starts_with("| "), "{tail}");
    assert!(!tail.contains("+-"), "{tail}");
}
