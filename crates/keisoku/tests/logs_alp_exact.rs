//! Byte-for-byte against alp v1.0.21: a real nginx under `keisoku bench`
//! load on many routes writes the same requests as LTSV, JSON and combined
//! logs; alp and `keisoku logs` run with the same flags (alp's README list:
//! every sort key with and without -r, -q, --qs-ignore-values, -m,
//! --percentiles, every --format, -o, --limit, --filters, --noheaders,
//! --show-footers) and their standard output must be identical, numbers,
//! row order of ties and layout included.
//!
//! alp and nginx are real and required: if either cannot be had the test
//! fails with the reason, it never passes without comparing.

mod common;
use common::free_port;

#[path = "logs_nginx.rs"]
mod logs_nginx;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// A targets file for `keisoku bench`: many routes, several methods, query
/// strings, static files, redirects, every status class.
fn targets(port: u16) -> String {
    let base = format!("http://127.0.0.1:{port}");
    let mut t = String::new();
    for id in 0..60 {
        t.push_str(&format!("3 GET {base}/api/users/{id}\n"));
        t.push_str(&format!(
            "GET {base}/api/items/{id}?sort=desc&page={}\n",
            id % 3
        ));
        if id % 4 == 0 {
            t.push_str(&format!("DELETE {base}/api/users/{id}\n"));
            t.push_str(&format!("PUT {base}/api/users/{id}\n"));
        }
    }
    for line in [
        "2 POST {b}/api/orders",
        "2 GET {b}/static/small.txt",
        "GET {b}/static/big.bin",
        "HEAD {b}/static/big.bin",
        "GET {b}/static/a%20b.txt",
        "GET {b}/static/missing.txt",
        "GET {b}/redirect",
        "GET {b}/teapot",
        "GET {b}/api/missing",
        "2 GET {b}/api/error",
        "2 GET {b}/api/slow",
        "GET {b}/api/items/7?page=2&sort=asc",
        "GET {b}/api/items/7?sort=asc&page=2",
    ] {
        t.push_str(&line.replace("{b}", &base));
        t.push('\n');
    }
    t
}

fn raw_get(port: u16, path: &[u8]) {
    use std::io::{Read, Write};
    let mut s = std::net::TcpStream::connect(("127.0.0.1", port)).expect("connect nginx");
    let mut req = b"GET ".to_vec();
    req.extend_from_slice(path);
    req.extend_from_slice(b" HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n");
    s.write_all(&req).expect("send");
    // The response's end (nginx closes) is the signal the line is logged.
    let mut sink = Vec::new();
    let _ = s.read_to_end(&mut sink);
}

fn output(bin: &Path, args: &[&str], cwd: &Path) -> (bool, Vec<u8>) {
    let out = Command::new(bin)
        .args(args)
        .current_dir(cwd)
        .output()
        .expect("run");
    (out.status.success(), out.stdout)
}

/// The flag sets of alp's README, each run on every log.
fn flag_sets() -> Vec<Vec<String>> {
    let groups = "/api/users/[0-9]+,/api/items/[0-9]+";
    let mut sets: Vec<Vec<&str>> = vec![
        vec![],
        vec!["-q"],
        vec!["-q", "--qs-ignore-values"],
        vec!["-m", groups],
        vec!["-m", groups, "--percentiles", "0,25,50,75,100"],
        vec!["-m", groups, "--show-footers"],
        vec!["--format", "md", "--show-footers"],
        vec!["--format", "markdown"],
        vec!["--format", "tsv"],
        vec!["--format", "tsv", "--noheaders"],
        vec!["--format", "csv", "-q"],
        vec!["--format", "json", "-m", groups],
        vec!["-o", "count,method,uri,stddev,p99,sum,avg"],
        vec!["-o", "uri,avg,max_body,min_body,sum_body,avg_body"],
        vec!["--limit", "1000"],
        vec!["--decode-uri"],
        vec!["--decode-uri", "-q", "--format", "md"],
        vec!["-f", "Status >= 400 || ResponseTime > 0.05"],
        vec!["-f", "Method == \"GET\" && Uri matches \"^/api\""],
    ];
    let sorts = [
        "count", "uri", "method", "max", "min", "avg", "sum", "stddev", "p90", "p99", "max-body",
        "min-body", "avg-body", "sum-body",
    ];
    let mut owned: Vec<Vec<String>> = sets
        .drain(..)
        .map(|s| s.iter().map(|x| x.to_string()).collect())
        .collect();
    for s in sorts {
        for r in [false, true] {
            for g in [false, true] {
                let mut v = vec![
                    "--format".to_string(),
                    "tsv".into(),
                    "--sort".into(),
                    s.into(),
                ];
                if r {
                    v.push("-r".into());
                }
                if g {
                    v.push("-m".into());
                    v.push(groups.into());
                }
                owned.push(v);
            }
        }
    }
    owned
}

#[test]
fn alp_and_keisoku_print_the_same_bytes_on_real_nginx_logs() {
    let alp = logs_nginx::alp();
    let keisoku = PathBuf::from(env!("CARGO_BIN_EXE_keisoku"));
    let dir = tempfile::tempdir().unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let up = logs_nginx::upstream(Arc::clone(&stop));
    let port = free_port();
    {
        let _nginx = logs_nginx::start_nginx(dir.path(), port, up);
        let tf = dir.path().join("targets.txt");
        std::fs::write(&tf, targets(port)).unwrap();
        let (ok, _) = output(
            &keisoku,
            &[
                "bench",
                "--targets",
                tf.to_str().unwrap(),
                "-n",
                "4000",
                "-c",
                "8",
            ],
            dir.path(),
        );
        assert!(ok, "keisoku bench against nginx failed");
        // Non-ASCII paths: raw UTF-8, percent-encoded CJK (for
        // --decode-uri widths) and a byte that is not UTF-8, which nginx's
        // escape=json writes raw into the JSON log.
        let raw: [&[u8]; 4] = [
            "/検索/東京".as_bytes(),
            b"/%E6%A4%9C%E7%B4%A2?q=%E6%9D%B1%E4%BA%AC",
            b"/caf\xe9",
            b"/static/a%20b.txt?x=%C3%A9",
        ];
        for _ in 0..5 {
            for path in raw {
                raw_get(port, path);
            }
        }
    }
    stop.store(true, Ordering::Relaxed);
    let logs = [
        ("ltsv", dir.path().join("access.log")),
        ("json", dir.path().join("access.json")),
        ("regexp", dir.path().join("access.combined")),
    ];
    for (_, p) in &logs {
        let n = std::fs::read(p).unwrap().split(|&b| b == b'\n').count() - 1;
        assert!(n >= 4020, "{}: only {n} lines", p.display());
    }
    let mut compared = 0;
    let mut differences = Vec::new();
    for (fmt, log) in &logs {
        let log = log.to_str().unwrap();
        for flags in flag_sets() {
            let mut a: Vec<&str> = vec![fmt, "--file", log];
            a.extend(flags.iter().map(String::as_str));
            let want = output(&alp, &a, dir.path());
            let mut k: Vec<&str> = vec!["logs", fmt, "--file", log];
            k.extend(flags.iter().map(String::as_str));
            let got = output(&keisoku, &k, dir.path());
            assert!(want.0, "alp {a:?} failed");
            compared += 1;
            if want != got {
                let w = String::from_utf8_lossy(&want.1);
                let g = String::from_utf8_lossy(&got.1);
                let first = w
                    .lines()
                    .zip(g.lines())
                    .find(|(x, y)| x != y)
                    .map(|(x, y)| format!("alp:     {x}\nkeisoku: {y}"))
                    .unwrap_or_else(|| {
                        format!(
                            "lengths {} vs {} lines",
                            w.lines().count(),
                            g.lines().count()
                        )
                    });
                differences.push(format!("{fmt} {flags:?} (exit ok {}):\n{first}", got.0));
            }
        }
    }
    // A keisoku dump reloaded prints alp's table of the log itself.
    for (fmt, log) in &logs {
        let log = log.to_str().unwrap();
        let dump = dir.path().join(format!("{fmt}.dump.json"));
        let dump = dump.to_str().unwrap();
        let (ok, _) = output(
            &keisoku,
            &["logs", fmt, "--file", log, "--dump", dump],
            dir.path(),
        );
        assert!(ok, "--dump failed");
        for flags in [
            vec![],
            vec!["--format", "tsv", "--sort", "p99", "-r"],
            vec![
                "--format",
                "csv",
                "--percentiles",
                "1,50,99,100",
                "--sort",
                "avg",
            ],
        ] {
            let mut a: Vec<&str> = vec![fmt, "--file", log];
            a.extend(flags.iter());
            let want = output(&alp, &a, dir.path());
            let mut k: Vec<&str> = vec!["logs", fmt, "--load", dump];
            k.extend(flags.iter());
            let got = output(&keisoku, &k, dir.path());
            compared += 1;
            if want != got {
                differences.push(format!(
                    "--load {fmt} {flags:?}:\n{}\nvs\n{}",
                    String::from_utf8_lossy(&want.1),
                    String::from_utf8_lossy(&got.1)
                ));
            }
        }
    }
    let json = std::fs::read(dir.path().join("access.json")).unwrap();
    assert!(
        json.windows(4).any(|w| w == b"caf\xe9"),
        "nginx did not write the raw byte into the JSON log"
    );
    assert!(compared >= 150, "compared only {compared} outputs");
    assert!(
        differences.is_empty(),
        "{} of {compared} outputs differ:\n{}",
        differences.len(),
        differences.join("\n\n")
    );
}
