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

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn alp() -> PathBuf {
    let build = repo().join("bench/alp/build.sh");
    let out = Command::new("bash")
        .arg(&build)
        .output()
        .expect("run bench/alp/build.sh");
    assert!(
        out.status.success(),
        "cannot build alp v1.0.21 with {} (needs Go and the Go module proxy): {}",
        build.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let alp = repo().join("bench/tools/alp");
    assert!(
        alp.exists(),
        "bench/alp/build.sh did not produce {}",
        alp.display()
    );
    alp
}

fn nginx_bin() -> PathBuf {
    for p in ["/usr/sbin/nginx", "/usr/bin/nginx"] {
        if Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    panic!("nginx is not installed: run scripts/setup.sh (Debian package nginx-light)");
}

/// A tiny upstream: latency and body size depend on the path, so nginx logs
/// varied `$upstream_response_time` and sizes.
fn upstream(stop: Arc<AtomicBool>) -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = l.local_addr().unwrap().port();
    l.set_nonblocking(true).unwrap();
    std::thread::spawn(move || {
        while !stop.load(Ordering::Relaxed) {
            match l.accept() {
                Ok((s, _)) => {
                    std::thread::spawn(move || serve_upstream(s));
                }
                Err(_) => std::thread::sleep(Duration::from_millis(2)),
            }
        }
    });
    port
}

fn serve_upstream(mut s: TcpStream) {
    s.set_nonblocking(false).ok();
    s.set_read_timeout(Some(Duration::from_secs(5))).ok();
    let mut buf = Vec::new();
    let mut tmp = [0u8; 4096];
    let head_end = loop {
        let Ok(n) = s.read(&mut tmp) else { return };
        if n == 0 {
            return;
        }
        buf.extend_from_slice(&tmp[..n]);
        if let Some(i) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break i + 4;
        }
    };
    let head = String::from_utf8_lossy(&buf[..head_end]).to_string();
    let len: usize = head
        .lines()
        .find_map(|l| {
            l.to_ascii_lowercase()
                .strip_prefix("content-length:")
                .map(|v| v.trim().parse().unwrap_or(0))
        })
        .unwrap_or(0);
    while buf.len() < head_end + len {
        let Ok(n) = s.read(&mut tmp) else { return };
        if n == 0 {
            break;
        }
        buf.extend_from_slice(&tmp[..n]);
    }
    let path = head.split_whitespace().nth(1).unwrap_or("/").to_string();
    let h = path
        .bytes()
        .fold(7u64, |a, b| a.wrapping_mul(31).wrapping_add(u64::from(b)));
    let (status, delay_ms, size) = if path.starts_with("/api/error") {
        ("500 Internal Server Error", 3, 20)
    } else if path.starts_with("/api/slow") {
        ("200 OK", 120 + h % 100, 300)
    } else if path.starts_with("/api/orders") {
        ("201 Created", 5 + h % 20, 64)
    } else if path.starts_with("/api/missing") {
        ("404 Not Found", 1, 0)
    } else {
        ("200 OK", h % 15, (h % 5000) as usize)
    };
    std::thread::sleep(Duration::from_millis(delay_ms));
    let body = vec![b'x'; size];
    let _ = write!(
        s,
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = s.write_all(&body);
}

struct Nginx {
    child: Child,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        // The whole process group: killing the master alone left its worker
        // running, one orphan nginx per test run.
        // SAFETY: kill(2) on the process group this test created for nginx.
        unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
        let _ = self.child.wait();
    }
}

fn start_nginx(dir: &Path, port: u16, up: u16) -> Nginx {
    let www = dir.join("www/static");
    std::fs::create_dir_all(&www).unwrap();
    std::fs::write(www.join("small.txt"), "hello\n").unwrap();
    std::fs::write(www.join("big.bin"), vec![b'b'; 65_536]).unwrap();
    std::fs::write(www.join("a b.txt"), "space\n").unwrap();
    std::fs::create_dir_all(dir.join("tmp")).unwrap();
    let root = Command::new("id")
        .arg("-u")
        .output()
        .map(|o| o.stdout == b"0\n")
        .unwrap_or(false);
    let d = dir.display();
    let conf = format!(
        r#"{user}
worker_processes 1;
daemon off;
pid {d}/nginx.pid;
error_log {d}/error.log;
events {{ worker_connections 512; }}
http {{
  log_format ltsv "time:$time_iso8601\thost:$remote_addr\tmethod:$request_method\turi:$request_uri\tstatus:$status\tsize:$body_bytes_sent\treqtime:$request_time\tapptime:$upstream_response_time\tua:$http_user_agent";
  access_log {d}/access.log ltsv;
  client_body_temp_path {d}/tmp/body;
  proxy_temp_path {d}/tmp/proxy;
  fastcgi_temp_path {d}/tmp/fastcgi;
  uwsgi_temp_path {d}/tmp/uwsgi;
  scgi_temp_path {d}/tmp/scgi;
  server {{
    listen 127.0.0.1:{port};
    root {d}/www;
    location /api/ {{ proxy_pass http://127.0.0.1:{up}; }}
    location = /redirect {{ return 301 /static/small.txt; }}
    location = /teapot {{ return 418; }}
    location = /early {{ return 103; }}
  }}
}}
"#,
        user = if root { "user root;" } else { "" }
    );
    let conf_path = dir.join("nginx.conf");
    std::fs::write(&conf_path, conf).unwrap();
    let child = Command::new(nginx_bin())
        // Its own process group, so Drop stops the master and its worker.
        .process_group(0)
        .args([
            "-p",
            &d.to_string(),
            "-c",
            conf_path.to_str().unwrap(),
            "-e",
            &format!("{d}/error.log"),
        ])
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start nginx");
    let n = Nginx { child };
    let t0 = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            t0.elapsed() < Duration::from_secs(10),
            "nginx did not start: {}",
            std::fs::read_to_string(dir.join("error.log")).unwrap_or_default()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    n
}

fn request(port: u16, method: &str, path: &str, body: &[u8]) {
    let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)) else {
        return;
    };
    s.set_read_timeout(Some(Duration::from_secs(10))).ok();
    let _ = write!(
        s,
        "{method} {path} HTTP/1.1\r\nHost: t\r\nUser-Agent: keisoku-test\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = s.write_all(body);
    let mut sink = Vec::new();
    let _ = s.read_to_end(&mut sink);
}

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
