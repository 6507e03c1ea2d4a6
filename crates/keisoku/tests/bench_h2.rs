//! `keisoku bench --h2` and `--grpc` end to end against real servers on
//! loopback: nginx over HTTP/2 with TLS (ALPN h2) and in prior-knowledge
//! h2c, whose access log (`$server_protocol`, `$connection`,
//! `$connection_requests`) proves what went on the wire; and a Python
//! grpcio server whose flaky method fails every fourth call, so the
//! per-code counts are known exactly.

mod common;

use common::{free_port, wait_for, BIN};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

/// A self-signed certificate for 127.0.0.1 (X.509 v3, as webpki requires).
fn certificate(dir: &Path) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args([
            "req",
            "-x509",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-keyout",
            "srv.key",
            "-out",
            "srv.pem",
            "-subj",
            "/CN=localhost",
            "-days",
            "2",
            "-addext",
            "subjectAltName=DNS:localhost,IP:127.0.0.1",
        ])
        .output()
        .expect("openssl is not installed: run scripts/setup.sh");
    assert!(
        out.status.success(),
        "openssl: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// nginx serving HTTP/2 over TLS, h2c, and HTTP/1.1-only TLS; killed by
/// its own pid when dropped.
struct Nginx {
    child: Child,
    dir: tempfile::TempDir,
    h2: u16,
    h2c: u16,
    h1: u16,
}

impl Nginx {
    fn start() -> Nginx {
        let dir = tempfile::tempdir().unwrap();
        certificate(dir.path());
        let (h2, h2c, h1) = (free_port(), free_port(), free_port());
        let d = dir.path().display();
        // `listen ... http2` is the form nginx 1.22 (Debian 12) reads;
        // `http2 on` came with 1.25.
        let conf = format!(
            "worker_processes 1;\ndaemon off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
events {{ worker_connections 1024; }}\n\
http {{\n  log_format h2 \"uri:$request_uri\\tproto:$server_protocol\\tconn:$connection\\treqs:$connection_requests\\tstatus:$status\";\n\
  access_log {d}/access.log h2;\n\
  client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d}; uwsgi_temp_path {d}; scgi_temp_path {d};\n\
  ssl_certificate {d}/srv.pem; ssl_certificate_key {d}/srv.key;\n\
  keepalive_requests 100000;\n\
  server {{ listen 127.0.0.1:{h2} ssl http2;\n\
    location /fail {{ return 503 \"no\\n\"; }}\n\
    location /gz/ {{ root {d}/www; gzip on; gzip_types text/plain; gzip_min_length 1; }}\n\
    location / {{ return 200 \"hello\\n\"; }} }}\n\
  server {{ listen 127.0.0.1:{h2c} http2;\n\
    location / {{ return 200 \"plain\\n\"; }} }}\n\
  server {{ listen 127.0.0.1:{h1} ssl;\n\
    location / {{ return 200 \"h1\\n\"; }} }}\n}}\n"
        );
        let path = dir.path().join("nginx.conf");
        std::fs::write(&path, conf).unwrap();
        std::fs::create_dir_all(dir.path().join("www/gz")).unwrap();
        std::fs::write(dir.path().join("www/gz/page.txt"), gz_page()).unwrap();
        let child = Command::new(common::nginx_bin())
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nginx");
        let n = Nginx {
            child,
            dir,
            h2,
            h2c,
            h1,
        };
        for port in [h2, h2c, h1] {
            wait_for(Duration::from_secs(20), "nginx to listen", || {
                std::net::TcpStream::connect(("127.0.0.1", port)).ok()
            });
        }
        n
    }

    /// Access-log lines of `uri`, waiting until there are `n`.
    fn lines(&self, uri: &str, n: usize) -> Vec<BTreeMap<String, String>> {
        let log = self.dir.path().join("access.log");
        wait_for(Duration::from_secs(10), "nginx's access log lines", || {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let lines: Vec<BTreeMap<String, String>> = text
                .lines()
                .filter(|l| l.starts_with(&format!("uri:{uri}\t")))
                .map(|l| {
                    l.split('\t')
                        .filter_map(|f| f.split_once(':'))
                        .map(|(k, v)| (k.to_string(), v.to_string()))
                        .collect()
                })
                .collect();
            (lines.len() >= n).then_some(lines)
        })
    }
}

impl Drop for Nginx {
    fn drop(&mut self) {
        common::stop_nginx(&mut self.child);
    }
}

/// The text nginx serves gzip-compressed under /gz/.
fn gz_page() -> String {
    (0..500)
        .map(|i| format!("line {i} of a page that compresses well\n"))
        .collect()
}

fn bench(args: &[&str]) -> Output {
    Command::new(BIN)
        .arg("bench")
        .args(args)
        .env_remove("http_proxy")
        .env_remove("https_proxy")
        .env_remove("HTTPS_PROXY")
        .output()
        .unwrap()
}

/// `bench ARGS --json -`: the JSON, after checking the exit status.
fn bench_json(args: &[&str], code: i32) -> serde_json::Value {
    let out = bench(&[args, &["--json", "-"]].concat());
    assert_eq!(
        out.status.code(),
        Some(code),
        "bench {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!("{e}: {}", String::from_utf8_lossy(&out.stdout));
    })
}

#[test]
fn http2_over_tls_multiplexes_streams_on_few_connections() {
    let n = Nginx::start();
    let url = format!("https://127.0.0.1:{}/", n.h2);
    let j = bench_json(
        &[
            "--h2",
            "-k",
            "-c",
            "2",
            "--streams",
            "8",
            "-t",
            "1",
            "-n",
            "400",
            &url,
        ],
        0,
    );
    assert_eq!(j["protocol"], "h2");
    assert_eq!(j["streams"], 8);
    assert_eq!(j["requests"], 400);
    assert_eq!(j["errors"], 0);
    assert_eq!(j["status"]["2xx"], 400);
    assert_eq!(j["connects"], 2, "{j}");
    assert_eq!(j["transport"]["tls"]["alpn"], "h2");
    assert_eq!(j["transport"]["tls"]["handshakes"], 2);
    // Requests went up to 16 at a time over the 2 connections.
    let peak = j["timeline"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["inflight"].as_u64().unwrap())
        .max()
        .unwrap();
    assert!(peak > 2 && peak <= 16, "peak in flight {peak}");
    let lines = n.lines("/", 400);
    assert_eq!(lines.len(), 400);
    assert!(lines.iter().all(|l| l["proto"] == "HTTP/2.0"), "{lines:?}");
    let conns: std::collections::BTreeSet<&String> = lines.iter().map(|l| &l["conn"]).collect();
    assert_eq!(conns.len(), 2, "{conns:?}");
    let most = lines
        .iter()
        .map(|l| l["reqs"].parse::<u64>().unwrap())
        .max()
        .unwrap();
    assert!(most >= 200, "at most {most} requests on one connection");
    // The terminal summary names the protocol.
    let out = bench(&["--h2", "-k", "-c", "1", "-n", "20", &url]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("HTTP/2 (h2)"), "{text}");
}

/// `--compressed` over HTTP/2: nginx's gzip answers are decoded and both
/// sizes reported, as over HTTP/1.1 (it was refused with --h2).
#[test]
fn compressed_answers_over_http2_are_decoded_and_sized() {
    let n = Nginx::start();
    let url = format!("https://127.0.0.1:{}/gz/page.txt", n.h2);
    let plain = gz_page().len() as u64;
    let j = bench_json(
        &[
            "--h2",
            "-k",
            "--compressed",
            "-c",
            "1",
            "--streams",
            "4",
            "-n",
            "40",
            &url,
        ],
        0,
    );
    let num = |p: &str| {
        j.pointer(p)
            .and_then(|v| v.as_u64())
            .unwrap_or_else(|| panic!("{p}: {j}"))
    };
    assert_eq!(num("/requests"), 40, "{j}");
    assert_eq!(num("/errors"), 0, "{j}");
    assert_eq!(num("/transport/compressed_responses"), 40, "{j}");
    assert_eq!(num("/transport/body_bytes_decoded"), 40 * plain, "{j}");
    let wire = num("/transport/body_bytes_encoded");
    assert!(
        wire > 0 && wire * 5 < 40 * plain,
        "gzip on the wire: {wire} vs {plain} x 40"
    );
    // Without --compressed nothing is offered, and nginx sends it plain.
    let j = bench_json(&["--h2", "-k", "-c", "1", "-n", "5", &url], 0);
    assert!(
        j.pointer("/transport/compressed_responses")
            .and_then(|v| v.as_u64())
            .unwrap_or(0)
            == 0,
        "{j}"
    );
}

#[test]
fn h2c_prior_knowledge_errors_and_the_open_model() {
    let n = Nginx::start();
    let url = format!("http://127.0.0.1:{}/c", n.h2c);
    let j = bench_json(&["--h2", "-c", "1", "--streams", "4", "-n", "100", &url], 0);
    assert_eq!(j["protocol"], "h2c");
    assert_eq!(
        (j["requests"].as_u64(), j["connects"].as_u64()),
        (Some(100), Some(1))
    );
    let lines = n.lines("/c", 100);
    assert!(lines.iter().all(|l| l["proto"] == "HTTP/2.0"));
    // 5xx answers are errors over HTTP/2 as over HTTP/1.1.
    let fail = format!("https://127.0.0.1:{}/fail", n.h2);
    let j = bench_json(&["--h2", "-k", "-c", "2", "-n", "30", &fail], 0);
    assert_eq!(
        (j["errors"].as_u64(), j["status"]["5xx"].as_u64()),
        (Some(30), Some(30))
    );
    // The open model: intended send times, a schedule, no lag to speak of.
    let url = format!("http://127.0.0.1:{}/open", n.h2c);
    let j = bench_json(
        &[
            "--h2",
            "-R",
            "200",
            "-d",
            "2s",
            "-c",
            "2",
            "--streams",
            "4",
            &url,
        ],
        0,
    );
    let s = &j["schedule"];
    let intended = s["intended"].as_u64().unwrap();
    assert!((380..=420).contains(&intended), "{s}");
    assert_eq!(
        j["requests"].as_u64().unwrap() + s["unsent"].as_u64().unwrap(),
        intended
    );
    assert!(j["service_ms"]["p50"].as_f64().unwrap() > 0.0);
}

#[test]
fn a_server_that_does_not_choose_h2_is_an_error_not_http11() {
    let n = Nginx::start();
    let url = format!("https://127.0.0.1:{}/", n.h1);
    let out = bench(&["--h2", "-k", "-c", "1", "-d", "1s", &url]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("did not choose HTTP/2 by ALPN"), "{err}");
    // What --h2 does not do is refused before any request.
    for (flags, why) in [
        (&["--no-keepalive"][..], "drop --no-keepalive"),
        (&["--follow", "2"][..], "--follow"),
    ] {
        let out = bench(&[&["--h2", "-k", "-n", "1"], flags, &[&url]].concat());
        assert_eq!(out.status.code(), Some(2), "{flags:?}");
        assert!(
            String::from_utf8_lossy(&out.stderr).contains(why),
            "{flags:?}"
        );
    }
    let out = bench(&["--streams", "4", "-n", "1", &url]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("add --h2"));
}

/// A gRPC server with one generic handler: `/keisoku.Test/Flaky` answers
/// every call with its request message, except every fourth call, which
/// fails INVALID_ARGUMENT; a request message other than the expected one
/// fails DATA_LOSS (so a framing mistake cannot pass).
const GRPC_SERVER: &str = r#"
import sys, threading
from concurrent import futures
import grpc

port, ready = int(sys.argv[1]), sys.argv[2]
expected = open(sys.argv[3], "rb").read()
lock = threading.Lock()
calls = [0]

def flaky(request, context):
    if request != expected:
        context.abort(grpc.StatusCode.DATA_LOSS, "unexpected message %r" % request[:40])
    with lock:
        calls[0] += 1
        n = calls[0]
    if n % 4 == 0:
        context.abort(grpc.StatusCode.INVALID_ARGUMENT, "every fourth call fails")
    return request

handler = grpc.method_handlers_generic_handler(
    "keisoku.Test", {"Flaky": grpc.unary_unary_rpc_method_handler(flaky)})
server = grpc.server(futures.ThreadPoolExecutor(max_workers=8))
server.add_generic_rpc_handlers((handler,))
server.add_insecure_port("127.0.0.1:%d" % port)
server.start()
open(ready, "w").write("ready\n")
server.wait_for_termination()
"#;

/// Debian's python3-grpcio is installed for /usr/bin/python3; a python3
/// earlier on PATH (pyenv) may not have it.
fn python_with_grpc() -> &'static str {
    ["/usr/bin/python3", "python3"]
        .into_iter()
        .find(|p| {
            Command::new(p)
                .args(["-c", "import grpc"])
                .output()
                .is_ok_and(|o| o.status.success())
        })
        .expect("python3 with grpcio: run scripts/setup.sh")
}

struct Grpc {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
    message: PathBuf,
}

impl Grpc {
    fn start() -> Grpc {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("server.py");
        std::fs::write(&script, GRPC_SERVER).unwrap();
        // A protobuf message: field 1 (string) "keisoku", field 2 (varint) 150.
        let message = dir.path().join("req.bin");
        std::fs::write(&message, b"\x0a\x07keisoku\x10\x96\x01").unwrap();
        let ready = dir.path().join("ready");
        let port = free_port();
        let child = Command::new(python_with_grpc())
            .arg(&script)
            .arg(port.to_string())
            .arg(&ready)
            .arg(&message)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 with grpcio: run scripts/setup.sh");
        wait_for(Duration::from_secs(30), "the gRPC server", || {
            std::fs::metadata(&ready).ok()
        });
        Grpc {
            child,
            port,
            _dir: dir,
            message,
        }
    }
}

impl Drop for Grpc {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn grpc_statuses_are_counted_per_code_exactly() {
    let g = Grpc::start();
    let url = format!("http://127.0.0.1:{}", g.port);
    let body = format!("@{}", g.message.display());
    let j = bench_json(
        &[
            "--grpc",
            "/keisoku.Test/Flaky",
            "--body",
            &body,
            "-c",
            "2",
            "--streams",
            "4",
            "-n",
            "200",
            &url,
        ],
        0,
    );
    assert_eq!(j["protocol"], "h2c+grpc");
    assert_eq!(j["requests"], 200, "{j}");
    assert_eq!(j["status"]["2xx"], 200);
    assert_eq!(j["grpc_status"]["0"], 150, "{}", j["grpc_status"]);
    assert_eq!(j["grpc_status"]["3"], 50, "{}", j["grpc_status"]);
    assert_eq!(j["errors"], 50);
    assert_eq!(j["errors_transport"], 0);
    // The echoed message came back framed: 5 + 12 bytes per OK call.
    assert_eq!(j["bytes"], 150 * 17);
    // A wrong message is the server's DATA_LOSS, counted as code 15.
    let wrong = g._dir.path().join("wrong.bin");
    std::fs::write(&wrong, b"\x0a\x01x").unwrap();
    let j = bench_json(
        &[
            "--grpc",
            "/keisoku.Test/Flaky",
            "--body",
            &format!("@{}", wrong.display()),
            "-n",
            "10",
            "-c",
            "1",
            &url,
        ],
        0,
    );
    assert_eq!(j["grpc_status"]["15"], 10, "{}", j["grpc_status"]);
    assert_eq!(j["errors"], 10);
    let out = bench(&["--grpc", "Flaky", "-n", "1", &url]);
    assert_eq!(out.status.code(), Some(2));
}

/// nginx h2c on a port of this test's own, with `extra` in its `http`
/// block (a GOAWAY or stream limit); logs `uri status connection`.
struct LimitedNginx {
    child: Child,
    dir: tempfile::TempDir,
    port: u16,
}

impl LimitedNginx {
    fn start(port: u16, extra: &str) -> LimitedNginx {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path().display();
        let conf = format!(
            "worker_processes 1;\ndaemon off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
events {{ worker_connections 1024; }}\n\
http {{\n  log_format l \"$request_uri $status $connection\";\n  access_log {d}/access.log l;\n\
  client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d}; uwsgi_temp_path {d}; scgi_temp_path {d};\n\
  {extra}\n\
  server {{ listen 127.0.0.1:{port} http2;\n    location / {{ return 200 \"ok\\n\"; }} }}\n}}\n"
        );
        let path = dir.path().join("nginx.conf");
        std::fs::write(&path, conf).unwrap();
        std::fs::create_dir_all(dir.path().join("www/gz")).unwrap();
        std::fs::write(dir.path().join("www/gz/page.txt"), gz_page()).unwrap();
        let child = Command::new(common::nginx_bin())
            .arg("-p")
            .arg(dir.path())
            .arg("-c")
            .arg(&path)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start nginx");
        let n = LimitedNginx { child, dir, port };
        wait_for(Duration::from_secs(20), "nginx to listen", || {
            std::net::TcpStream::connect(("127.0.0.1", port)).ok()
        });
        n
    }

    /// (answered requests, distinct connections) in the access log, once
    /// it has `n` lines.
    fn answered(&self, n: usize) -> (usize, usize) {
        let log = self.dir.path().join("access.log");
        wait_for(Duration::from_secs(10), "nginx's access log lines", || {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let lines: Vec<&str> = text.lines().collect();
            (lines.len() >= n).then(|| {
                let ok = lines.iter().filter(|l| l.contains(" 200 ")).count();
                let conns: std::collections::BTreeSet<&str> =
                    lines.iter().filter_map(|l| l.rsplit(' ').next()).collect();
                (ok, conns.len())
            })
        })
    }
}

impl Drop for LimitedNginx {
    fn drop(&mut self) {
        common::stop_nginx(&mut self.child);
    }
}

fn kind(j: &serde_json::Value, k: &str) -> u64 {
    j["errors_by_kind"][k].as_u64().unwrap_or(0)
}

#[test]
fn goaway_after_n_requests_reconnects_and_loses_or_counts_nothing_twice() {
    // nginx ends an HTTP/2 connection with GOAWAY after 10 requests.
    let n = LimitedNginx::start(19110, "keepalive_requests 10;");
    let url = format!("http://127.0.0.1:{}/g", n.port);
    let j = bench_json(
        &[
            "--h2",
            "-c",
            "2",
            "--streams",
            "4",
            "-t",
            "1",
            "-n",
            "300",
            &url,
        ],
        0,
    );
    let answered = j["requests"].as_u64().unwrap();
    let goaway = kind(&j, "goaway");
    let refused = kind(&j, "refused_stream");
    let (logged, conns) = n.answered(answered as usize);
    // Every answer nginx logged is counted once; every request of the 300
    // is either answered or counted as lost to the GOAWAY.
    assert_eq!(answered as usize, logged, "{j}");
    assert_eq!(answered + goaway + refused, 300, "{j}");
    assert_eq!(
        j["errors_transport"].as_u64(),
        Some(goaway + refused),
        "{j}"
    );
    // At most 10 answers a connection, so the run reconnected.
    assert!(
        conns * 10 >= logged && conns > 2,
        "{conns} connections for {logged} answers"
    );
    assert!(j["connects"].as_u64().unwrap() >= conns as u64, "{j}");
}

#[test]
fn more_streams_than_the_server_allows_wait_for_a_free_one() {
    let n = LimitedNginx::start(19111, "http2_max_concurrent_streams 4;");
    let url = format!("http://127.0.0.1:{}/s", n.port);
    let j = bench_json(
        &[
            "--h2",
            "-c",
            "1",
            "--streams",
            "16",
            "-t",
            "1",
            "-n",
            "400",
            &url,
        ],
        0,
    );
    let (logged, conns) = n.answered(j["requests"].as_u64().unwrap() as usize);
    // Streams opened before the server's SETTINGS arrived may be refused
    // (REFUSED_STREAM) at the start: counted, never lost.
    let refused = kind(&j, "refused_stream");
    assert_eq!(j["requests"].as_u64().unwrap() + refused, 400, "{j}");
    assert_eq!(j["errors"].as_u64(), Some(refused), "{j}");
    assert!(refused <= 12, "{j}");
    assert_eq!((logged as u64 + refused, conns), (400, 1));
}

/// An h2c server (Python `h2`, Debian's python3-h2) on `argv[1]` whose
/// `/faults` answers 200 except every fourth request, which it resets
/// (RST_STREAM INTERNAL_ERROR), and every fourth plus one, which it
/// refuses (RST_STREAM REFUSED_STREAM); each outcome is logged to `argv[2]`.
const FAULT_SERVER: &str = r#"
import socket, sys, threading
import h2.config, h2.connection, h2.errors, h2.events

port, log = int(sys.argv[1]), open(sys.argv[2], "a", buffering=1)
lock = threading.Lock()
count = [0]

def serve(sock):
    conn = h2.connection.H2Connection(
        config=h2.config.H2Configuration(client_side=False, header_encoding="utf-8"))
    conn.initiate_connection()
    sock.sendall(conn.data_to_send())
    while True:
        try:
            data = sock.recv(65536)
        except OSError:
            break
        if not data:
            break
        for ev in conn.receive_data(data):
            if isinstance(ev, h2.events.RequestReceived):
                with lock:
                    count[0] += 1
                    n = count[0]
                sid = ev.stream_id
                if n % 4 == 0:
                    conn.reset_stream(sid, h2.errors.ErrorCodes.INTERNAL_ERROR)
                    log.write("rst\n")
                elif n % 4 == 1:
                    conn.reset_stream(sid, h2.errors.ErrorCodes.REFUSED_STREAM)
                    log.write("refused\n")
                else:
                    conn.send_headers(sid, [(":status", "200"), ("content-length", "3")])
                    conn.send_data(sid, b"ok\n", end_stream=True)
                    log.write("ok\n")
        sock.sendall(conn.data_to_send())
    sock.close()

srv = socket.socket()
srv.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
srv.bind(("127.0.0.1", port))
srv.listen(64)
print("listening", flush=True)
while True:
    s, _ = srv.accept()
    threading.Thread(target=serve, args=(s,), daemon=True).start()
"#;

#[test]
fn reset_and_refused_streams_from_a_real_server_are_counted_by_kind() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("faults.py");
    std::fs::write(&script, FAULT_SERVER).unwrap();
    let log = dir.path().join("outcomes.log");
    let port = 19112u16;
    let mut child = Command::new("/usr/bin/python3")
        .arg(&script)
        .arg(port.to_string())
        .arg(&log)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("/usr/bin/python3 with python3-h2: run scripts/setup.sh");
    // Ready when it says so.
    let mut line = String::new();
    let stdout = child.stdout.take().unwrap();
    std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line).unwrap();
    assert_eq!(line.trim(), "listening", "the fault server did not start");
    let url = format!("http://127.0.0.1:{port}/faults");
    let j = bench_json(
        &[
            "--h2",
            "-c",
            "2",
            "--streams",
            "2",
            "-t",
            "1",
            "-n",
            "200",
            &url,
        ],
        0,
    );
    let _ = child.kill();
    let _ = child.wait();
    let text = std::fs::read_to_string(&log).unwrap();
    let count = |k: &str| text.lines().filter(|l| *l == k).count() as u64;
    assert_eq!(count("ok") + count("rst") + count("refused"), 200, "{text}");
    assert_eq!(j["requests"].as_u64(), Some(count("ok")), "{j}");
    assert_eq!(kind(&j, "rst_stream"), count("rst"), "{j}");
    assert_eq!(kind(&j, "refused_stream"), count("refused"), "{j}");
    assert_eq!(
        j["errors_transport"].as_u64(),
        Some(count("rst") + count("refused"))
    );
    assert_eq!((count("rst"), count("refused")), (50, 50));
}
