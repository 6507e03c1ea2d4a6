//! `keisoku logs pcap` against alp's `pcap` on real captures: tcpdump
//! records loopback traffic while `keisoku bench` loads a real nginx
//! (keep-alive and `Connection: close`, 2xx/3xx/4xx/5xx, HEAD, query
//! strings, a slow upstream), then both tools read the same files with the
//! same flags and must print the same bytes.

#[path = "logs_nginx.rs"]
mod logs_nginx;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::Duration;

/// This file's nginx port (the pcap17 range).
const PORT: u16 = 19010;

fn tcpdump_bin() -> PathBuf {
    for p in ["/usr/bin/tcpdump", "/usr/sbin/tcpdump"] {
        if Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    panic!("tcpdump is not installed: run scripts/setup.sh");
}

/// tcpdump writing `file` until stopped.
struct Capture {
    child: Child,
}

impl Capture {
    /// Starts tcpdump on loopback for `port`, and returns once it says it
    /// is listening.
    fn start(file: &Path, port: u16) -> Capture {
        let mut child = Command::new(tcpdump_bin())
            .args(["-i", "lo", "-n", "-U", "-B", "16384", "-w"])
            .arg(file)
            .arg(format!("tcp port {port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .expect("start tcpdump");
        let stderr = child.stderr.take().expect("tcpdump stderr");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if line.contains("listening on") {
                    let _ = tx.send(line);
                }
            }
        });
        rx.recv_timeout(Duration::from_secs(30))
            .expect("tcpdump did not start listening (is it allowed to capture here?)");
        Capture { child }
    }

    /// Stops tcpdump (SIGINT: it writes out what it holds) and waits for it.
    fn stop(mut self) {
        // SAFETY: kill(2) on the tcpdump this test started.
        unsafe { libc::kill(self.child.id() as i32, libc::SIGINT) };
        let status = self.child.wait().expect("wait for tcpdump");
        assert!(status.success(), "tcpdump: {status}");
    }
}

fn targets(port: u16) -> String {
    let b = format!("http://127.0.0.1:{port}");
    let mut t = String::new();
    for id in 0..40 {
        t.push_str(&format!("3 GET {b}/api/users/{id}\n"));
        t.push_str(&format!(
            "GET {b}/api/items/{id}?sort=desc&page={}\n",
            id % 3
        ));
        if id % 4 == 0 {
            t.push_str(&format!("PUT {b}/api/users/{id}\n"));
        }
    }
    for line in [
        "2 POST {b}/api/orders",
        "2 GET {b}/static/small.txt",
        "GET {b}/static/big.bin",
        "GET {b}/static/a%20b.txt?x=%C3%A9",
        "GET {b}/static/missing.txt",
        "GET {b}/redirect",
        "GET {b}/teapot",
        "GET {b}/api/missing",
        "2 GET {b}/api/error",
        "GET {b}/api/slow",
        "GET {b}/api/items/7?page=2&sort=asc",
    ] {
        t.push_str(&line.replace("{b}", &b));
        t.push('\n');
    }
    t
}

fn keisoku() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_keisoku"))
}

fn bench(dir: &Path, extra: &[&str]) {
    let tf = dir.join("targets.txt");
    std::fs::write(&tf, targets(PORT)).unwrap();
    let out = Command::new(keisoku())
        .args(["bench", "--targets", tf.to_str().unwrap()])
        .args(extra)
        .current_dir(dir)
        .output()
        .expect("run keisoku bench");
    assert!(
        out.status.success(),
        "keisoku bench failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// stdout of `bin args` with TZ set, and whether it succeeded.
fn run(bin: &Path, args: &[String], dir: &Path) -> (bool, Vec<u8>, String) {
    let out = Command::new(bin)
        .args(args)
        .env("TZ", "Asia/Tokyo")
        .current_dir(dir)
        .output()
        .expect("run");
    (
        out.status.success(),
        out.stdout,
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

fn strings(v: &[&str]) -> Vec<String> {
    v.iter().map(|s| s.to_string()).collect()
}

/// Runs alp with `alp_args` and keisoku with `k_args`; a difference is
/// described in `diffs`.
fn compare(
    alp: &Path,
    alp_args: &[String],
    k_args: &[String],
    dir: &Path,
    diffs: &mut Vec<String>,
) {
    let (a_ok, a, a_err) = run(alp, alp_args, dir);
    let (k_ok, k, k_err) = run(&keisoku(), k_args, dir);
    assert!(a_ok, "alp {alp_args:?} failed: {a_err}");
    if !k_ok {
        diffs.push(format!("keisoku {k_args:?} failed: {k_err}"));
    } else if a != k {
        let (a, k) = (String::from_utf8_lossy(&a), String::from_utf8_lossy(&k));
        let first = a
            .lines()
            .zip(k.lines())
            .find(|(x, y)| x != y)
            .map(|(x, y)| format!("alp:     {x}\nkeisoku: {y}"))
            .unwrap_or_else(|| format!("{} vs {} lines", a.lines().count(), k.lines().count()));
        diffs.push(format!("{alp_args:?}:\n{first}"));
    }
}

#[test]
fn captures_of_real_nginx_traffic_read_as_alp_reads_them() {
    let alp = logs_nginx::alp();
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let stop = Arc::new(AtomicBool::new(false));
    let up = logs_nginx::upstream(Arc::clone(&stop));
    let nginx = logs_nginx::start_nginx(d, PORT, up);
    let kept = d.join("keepalive.pcap");
    let cap = Capture::start(&kept, PORT);
    bench(d, &["-n", "3000", "-c", "8"]);
    cap.stop();
    let mixed = d.join("mixed.pcap");
    let cap = Capture::start(&mixed, PORT);
    bench(d, &["-n", "600", "-c", "4", "-H", "Connection: close"]);
    bench(d, &["-n", "600", "-c", "2"]);
    // HEAD answered with a Content-Length: alp reads it without its
    // request, so the connection's next response is taken as its body.
    for _ in 0..3 {
        logs_nginx::request(PORT, "HEAD", "/static/big.bin", b"");
        logs_nginx::request(PORT, "GET", "/static/small.txt?b=1&a=2", b"");
    }
    cap.stop();
    drop(nginx);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);

    let port = PORT.to_string();
    let groups = "/api/users/[0-9]+,/api/items/[0-9]+";
    let flag_sets: Vec<Vec<&str>> = vec![
        vec![],
        vec!["--format", "json"],
        vec!["--format", "tsv"],
        vec!["--format", "csv", "--noheaders"],
        vec!["--format", "md", "--show-footers"],
        vec!["-q"],
        vec!["-q", "--qs-ignore-values"],
        vec!["-m", groups],
        vec!["-m", groups, "--sort", "sum", "-r"],
        vec!["--sort", "p99", "-r", "--percentiles", "50,90,99"],
        vec!["--sort", "avg-body"],
        vec!["--sort", "uri", "-r", "-o", "count,method,uri,min,max,avg"],
        vec!["--decode-uri", "-q"],
        vec!["-f", "Status >= 400"],
        vec![
            "--limit",
            "10000",
            "--pcap-server-ip",
            "::1",
            "--pcap-server-ip",
            "127.0.0.1",
        ],
    ];
    let mut diffs = Vec::new();
    for cap in [&kept, &mixed] {
        let file = cap.to_str().unwrap();
        for flags in &flag_sets {
            let mut a = strings(&["pcap", "--file", file, "--pcap-server-port", &port]);
            a.extend(strings(flags));
            let mut k = vec!["logs".to_string()];
            k.extend(a.iter().cloned());
            compare(&alp, &a, &k, d, &mut diffs);
        }
        for top in [
            vec!["20"],
            vec!["15", "-r"],
            vec!["10", "--sort", "bytes", "-r", "--format", "tsv"],
            vec!["50", "--format", "json"],
        ] {
            let mut a = strings(&["pcap", "topN"]);
            a.extend(strings(&top));
            a.extend(strings(&["--file", file, "--pcap-server-port", &port]));
            let mut k = vec!["logs".to_string()];
            k.extend(a.iter().cloned());
            compare(&alp, &a, &k, d, &mut diffs);
        }
    }
    // alp's diff of two captures, and with the first loaded from a dump.
    let (k_s, m_s) = (kept.to_str().unwrap(), mixed.to_str().unwrap());
    for extra in [vec![], vec!["-m", groups, "--sort", "sum", "-r"]] {
        let mut a = strings(&["pcap", "diff", k_s, m_s, "--pcap-server-port", &port]);
        a.extend(strings(&extra));
        let mut k = vec!["logs".to_string()];
        k.extend(a.iter().cloned());
        compare(&alp, &a, &k, d, &mut diffs);
    }
    // The dump round trip, each tool loading the other's dump.
    let alp_dump = d.join("alp.yaml");
    let k_dump = d.join("keisoku.yaml");
    let (ok, _, err) = run(
        &alp,
        &strings(&[
            "pcap",
            "--file",
            k_s,
            "--pcap-server-port",
            &port,
            "--dump",
            alp_dump.to_str().unwrap(),
        ]),
        d,
    );
    assert!(ok, "alp --dump: {err}");
    let (ok, _, err) = run(
        &keisoku(),
        &strings(&[
            "logs",
            "pcap",
            "--file",
            k_s,
            "--pcap-server-port",
            &port,
            "--dump",
            k_dump.to_str().unwrap(),
        ]),
        d,
    );
    assert!(ok, "keisoku --dump: {err}");
    for dump in [&alp_dump, &k_dump] {
        for flags in [vec![], vec!["--sort", "max", "-r", "--format", "tsv"]] {
            // alp opens the capture (--file) before it loads the dump.
            let mut a = strings(&["pcap", "--file", k_s, "--load", dump.to_str().unwrap()]);
            a.extend(strings(&flags));
            let mut k = vec!["logs".to_string()];
            k.extend(a.iter().cloned());
            compare(&alp, &a, &k, d, &mut diffs);
        }
    }
    let a = strings(&[
        "pcap",
        "diff",
        "--load",
        alp_dump.to_str().unwrap(),
        m_s,
        "--pcap-server-port",
        &port,
    ]);
    let mut k = vec!["logs".to_string()];
    k.extend(a.iter().cloned());
    compare(&alp, &a, &k, d, &mut diffs);
    assert!(
        diffs.is_empty(),
        "{} differences from alp:\n{}",
        diffs.len(),
        diffs.join("\n\n")
    );
}

#[test]
fn captures_that_cannot_be_read_exit_2_naming_the_file_and_the_reason() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A header, then one record cut short.
    let mut cut = Vec::new();
    for w in [0xa1b2_c3d4u32, 0x0004_0002, 0, 0, 65_535, 1] {
        cut.extend(w.to_le_bytes());
    }
    for w in [1u32, 0, 60, 60] {
        cut.extend(w.to_le_bytes());
    }
    cut.extend([0u8; 20]);
    let mut linktype = cut[..24].to_vec();
    linktype[20] = 147;
    let cases: [(&str, Vec<u8>, &str); 4] = [
        ("cut.pcap", cut, "truncated capture"),
        ("link.pcap", linktype, "link type 147 is not supported"),
        (
            "ng.pcap",
            vec![0x0a, 0x0d, 0x0d, 0x0a, 28, 0, 0, 0],
            "pcapng",
        ),
        (
            "text.pcap",
            b"GET / HTTP/1.1\r\n".to_vec(),
            "not a pcap capture",
        ),
    ];
    for (name, bytes, reason) in cases {
        let path = d.join(name);
        std::fs::write(&path, bytes).unwrap();
        for args in [
            vec!["logs", "pcap", path.to_str().unwrap()],
            vec!["logs", "pcap", "topN", "--file", path.to_str().unwrap()],
        ] {
            let out = Command::new(keisoku()).args(&args).output().unwrap();
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
            assert!(
                err.contains(name) && err.contains(reason),
                "{args:?}: {err}"
            );
        }
    }
    let out = Command::new(keisoku())
        .args(["logs", "pcap", "--pcap-server-ip", "localhost", "x.pcap"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("failed to parse ip: localhost"));
}
