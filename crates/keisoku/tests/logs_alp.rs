//! `keisoku logs` against alp v1.0.21 itself, on a log written by a real
//! nginx (Debian nginx-light) under varied load: every route's count,
//! status classes, min, max, sum, avg, stddev and body columns must be
//! identical text; percentiles within the documented histogram error.
//!
//! alp is built by bench/alp/build.sh (Go module proxy) and cached in
//! bench/tools/. If nginx or alp cannot be had, the test FAILS with the
//! reason: it never passes without comparing.

mod common;
use common::free_port;

#[path = "logs_common.rs"]
mod logs_common;
#[path = "logs_nginx.rs"]
mod logs_nginx;
use logs_nginx::{alp, request, start_nginx, upstream};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Varied load: many routes, several methods, every status class, zero-time
/// static files next to slow upstream calls, query strings in any order.
fn generate_load(port: u16, n: usize) {
    let threads = 8;
    std::thread::scope(|s| {
        for t in 0..threads {
            s.spawn(move || {
                let mut x: u64 = 0x9e37_79b9 + t as u64;
                for i in 0..n / threads {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    let id = x % 40;
                    match (x >> 8) % 16 {
                        0..=3 => request(port, "GET", &format!("/api/users/{id}"), b""),
                        4 | 5 => request(
                            port,
                            "GET",
                            &format!("/api/items/{id}?sort=desc&page={}", i % 3),
                            b"",
                        ),
                        6 => request(port, "POST", "/api/orders", b"{\"item\":1}"),
                        7 => request(port, "GET", "/static/small.txt", b""),
                        8 => request(port, "GET", "/static/big.bin", b""),
                        9 => request(port, "GET", "/static/a%20b.txt", b""),
                        10 => request(port, "GET", "/static/missing.txt", b""),
                        11 => request(port, "GET", "/redirect", b""),
                        12 => request(port, "GET", "/api/error", b""),
                        13 => request(port, "GET", "/api/slow", b""),
                        14 => request(port, "HEAD", "/static/big.bin", b""),
                        _ => request(
                            port,
                            if id & 1 == 0 { "DELETE" } else { "PUT" },
                            &format!("/api/users/{id}"),
                            b"x",
                        ),
                    }
                    if i % 50 == 0 {
                        request(port, "GET", "/teapot", b"");
                        request(port, "GET", "/api/missing", b"");
                    }
                }
            });
        }
    });
}

fn run(bin: &Path, args: &[&str]) -> String {
    let out = Command::new(bin).args(args).output().expect("run");
    assert!(
        out.status.success(),
        "{} {args:?}: {}",
        bin.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("utf-8")
}

#[test]
fn real_nginx_log_matches_alp() {
    let alp = alp();
    let keisoku = PathBuf::from(env!("CARGO_BIN_EXE_keisoku"));
    let dir = tempfile::tempdir().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let up = upstream(Arc::clone(&stop));
    let port = free_port();
    {
        let _nginx = start_nginx(dir.path(), port, up);
        generate_load(port, 2400);
    }
    stop.store(true, Ordering::Relaxed);
    let log = dir.path().join("access.log");
    let text = std::fs::read_to_string(&log).unwrap();
    let lines = text.lines().count();
    assert!(lines >= 2400, "nginx wrote only {lines} lines");
    assert!(text.contains("apptime:-"), "no static requests in the log");
    let log = log.to_str().unwrap();

    let groups = "/api/users/[0-9]+,/api/items/[0-9]+";
    let cases: Vec<(Vec<&str>, &str, bool)> = vec![
        (vec!["-m", groups, "--format", "tsv"], "tsv", true),
        (vec!["--format", "tsv"], "tsv", true),
        (vec!["-q", "--format", "tsv"], "tsv", true),
        (
            vec!["-q", "--qs-ignore-values", "--format", "csv"],
            "csv",
            true,
        ),
        (
            vec!["-m", groups, "--sort", "sum", "-r", "--show-footers"],
            "table",
            true,
        ),
        (
            vec![
                "-m",
                groups,
                "--format",
                "json",
                "--percentiles",
                "50,90,99",
            ],
            "json",
            true,
        ),
        (
            vec![
                "-m",
                groups,
                "-f",
                "Status >= 400 or ResponseTime > 0.1",
                "--format",
                "md",
            ],
            "md",
            true,
        ),
        (
            vec![
                "-m",
                groups,
                "--format",
                "tsv",
                "--noheaders",
                "--sort",
                "max-body",
            ],
            "tsv",
            false,
        ),
    ];
    let mut cells = 0;
    for (args, fmt, headers) in &cases {
        let mut a = vec!["ltsv", "--file", log];
        a.extend(args.iter());
        let want = run(&alp, &a);
        let mut k = vec!["logs", "ltsv", log];
        k.extend(args.iter());
        let got = run(&keisoku, &k);
        let pa = logs_common::parse(&want, fmt, *headers);
        let pk = logs_common::parse(&got, fmt, *headers);
        assert!(
            pa.rows.len() >= 5,
            "{args:?}: alp found only {} routes",
            pa.rows.len()
        );
        cells += logs_common::assert_same(&pa, &pk, &format!("{args:?}"));
    }
    assert!(cells > 500, "compared only {cells} cells");

    // Both cores or one: the same answer.
    let one = run(
        &keisoku,
        &["logs", "ltsv", log, "-m", groups, "--threads", "1"],
    );
    let two = run(
        &keisoku,
        &["logs", "ltsv", log, "-m", groups, "--threads", "2"],
    );
    assert_eq!(one, two);

    // The timeline accounts for every request, and nginx's concurrency shows.
    let tl = run(
        &keisoku,
        &["logs", "ltsv", log, "--timeline", "1s", "--format", "json"],
    );
    let v: serde_json::Value = serde_json::from_str(&tl).unwrap();
    let buckets = v["timeline"]["buckets"].as_array().unwrap();
    let total: u64 = buckets.iter().map(|b| b["count"].as_u64().unwrap()).sum();
    assert_eq!(total as usize, lines);
    assert!(buckets
        .iter()
        .any(|b| b["in_flight"].as_f64().unwrap() > 0.0));
}
