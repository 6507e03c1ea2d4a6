//! A real nginx for the alp comparisons: an upstream whose latency and body
//! size depend on the path, and nginx writing the same requests to three
//! access logs at once: `access.log` (LTSV), `access.json` (JSON with
//! `escape=json`) and `access.combined` (combined plus upstream and request
//! time, alp's default regexp).

#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn alp() -> PathBuf {
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

pub fn nginx_bin() -> PathBuf {
    for p in ["/usr/sbin/nginx", "/usr/bin/nginx"] {
        if Path::new(p).exists() {
            return PathBuf::from(p);
        }
    }
    panic!("nginx is not installed: run scripts/setup.sh (Debian package nginx-light)");
}

/// A tiny upstream: latency and body size depend on the path, so nginx logs
/// varied `$upstream_response_time` and sizes.
pub fn upstream(stop: Arc<AtomicBool>) -> u16 {
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

pub struct Nginx {
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

pub fn start_nginx(dir: &Path, port: u16, up: u16) -> Nginx {
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
  log_format js escape=json '{{"time":"$time_iso8601","host":"$remote_addr","method":"$request_method","uri":"$request_uri","status":$status,"body_bytes":$body_bytes_sent,"response_time":$request_time,"request_time":$request_time,"ua":"$http_user_agent"}}';
  access_log {d}/access.json js;
  log_format comb '$remote_addr - $remote_user [$time_local] "$request" $status $body_bytes_sent "$http_referer" "$http_user_agent" $upstream_response_time $request_time';
  access_log {d}/access.combined comb;
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

pub fn request(port: u16, method: &str, path: &str, body: &[u8]) {
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
