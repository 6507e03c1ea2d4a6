//! `keisoku bench` over the transports real services speak, end to end
//! against real nginx on loopback: https with a certificate made at test
//! time (with -k, with --cacert, with a client certificate nginx verifies),
//! TLS session resumption on and off as nginx's `$ssl_session_reused` sees
//! it, nginx on a Unix socket, a redirect chain, gzip, and a forward proxy
//! the test starts on 127.0.0.1 (plain and CONNECT).

mod common;

use common::{free_port, wait_for, BIN};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::Duration;

fn openssl(dir: &Path, args: &[&str]) {
    let out = Command::new("openssl")
        .current_dir(dir)
        .args(args)
        .output()
        .expect("openssl is not installed: run scripts/setup.sh");
    assert!(
        out.status.success(),
        "openssl {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A CA, a server certificate for localhost and 127.0.0.1 signed by it,
/// and a client certificate signed by it (X.509 v3, as webpki requires).
fn certificates(dir: &Path) {
    let days = ["-days", "2"];
    openssl(
        dir,
        &[
            &[
                "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "ca.key",
            ],
            &["-out", "ca.pem", "-subj", "/CN=keisoku test CA"][..],
            &days,
        ]
        .concat(),
    );
    std::fs::write(
        dir.join("srv.ext"),
        "subjectAltName=DNS:localhost,IP:127.0.0.1\n",
    )
    .unwrap();
    std::fs::write(dir.join("cli.ext"), "extendedKeyUsage=clientAuth\n").unwrap();
    for (name, cn) in [("srv", "/CN=localhost"), ("cli", "/CN=keisoku-client")] {
        let key = format!("{name}.key");
        let csr = format!("{name}.csr");
        let pem = format!("{name}.pem");
        let ext = format!("{name}.ext");
        openssl(
            dir,
            &[
                "req", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &csr, "-subj", cn,
            ],
        );
        openssl(
            dir,
            &[
                &[
                    "x509", "-req", "-in", &csr, "-CA", "ca.pem", "-CAkey", "ca.key",
                ],
                &["-CAcreateserial", "-out", &pem, "-extfile", &ext][..],
                &days,
            ]
            .concat(),
        );
    }
}

/// nginx with every server these tests load, under a temporary directory;
/// killed (by its own pid) when dropped.
struct Nginx {
    child: Child,
    dir: tempfile::TempDir,
    /// https, resumption cache, gzip, redirects.
    tls: u16,
    /// https that requires a client certificate signed by the test CA.
    mtls: u16,
    /// Plain HTTP with a redirect.
    plain: u16,
}

/// A body gzip shrinks a lot: the decoded size is known exactly.
const BIG: &str = "keisoku compresses this line well. ";
const BIG_REPEAT: usize = 100;

impl Nginx {
    fn start() -> Nginx {
        let dir = tempfile::tempdir().unwrap();
        certificates(dir.path());
        let (tls, mtls, plain) = (free_port(), free_port(), free_port());
        let d = dir.path().display();
        let big = BIG.repeat(BIG_REPEAT);
        let conf = format!(
            "worker_processes 1;\ndaemon off;\npid {d}/nginx.pid;\nerror_log {d}/error.log;\n\
events {{ worker_connections 1024; }}\n\
http {{\n  log_format ltsv \"uri:$request_uri\\tstatus:$status\\treused:$ssl_session_reused\\tdn:$ssl_client_s_dn\";\n\
  access_log {d}/access.log ltsv;\n\
  client_body_temp_path {d}; proxy_temp_path {d}; fastcgi_temp_path {d}; uwsgi_temp_path {d}; scgi_temp_path {d};\n\
  ssl_certificate {d}/srv.pem; ssl_certificate_key {d}/srv.key;\n\
  ssl_session_cache shared:S:1m;\n\
  gzip on; gzip_types text/plain; gzip_min_length 10;\n\
  server {{ listen 127.0.0.1:{tls} ssl;\n\
    location /r1 {{ return 302 /r2; }}\n\
    location /r2 {{ return 301 https://127.0.0.1:{tls}/end; }}\n\
    location /big {{ default_type text/plain; return 200 \"{big}\"; }}\n\
    location / {{ return 200 \"hello\\n\"; }} }}\n\
  server {{ listen 127.0.0.1:{mtls} ssl; ssl_client_certificate {d}/ca.pem; ssl_verify_client on;\n\
    location / {{ return 200 \"hello $ssl_client_s_dn\\n\"; }} }}\n\
  server {{ listen 127.0.0.1:{plain}; listen unix:{d}/nginx.sock;\n\
    location /r1 {{ return 302 /end; }}\n\
    location / {{ return 200 \"plain\\n\"; }} }}\n}}\n"
        );
        let path = dir.path().join("nginx.conf");
        std::fs::write(&path, conf).unwrap();
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
            tls,
            mtls,
            plain,
        };
        for port in [tls, mtls, plain] {
            wait_for(Duration::from_secs(20), "nginx to listen", || {
                std::net::TcpStream::connect(("127.0.0.1", port)).ok()
            });
        }
        let sock = n.path("nginx.sock");
        wait_for(Duration::from_secs(20), "nginx's Unix socket", || {
            std::os::unix::net::UnixStream::connect(&sock).ok()
        });
        n
    }

    fn path(&self, name: &str) -> PathBuf {
        self.dir.path().join(name)
    }

    fn file(&self, name: &str) -> String {
        self.path(name).to_str().unwrap().to_string()
    }

    /// Access-log lines whose uri is `uri`, waiting until there are `n`
    /// (nginx writes a line after the answer has left).
    fn lines(&self, uri: &str, n: usize) -> Vec<String> {
        let log = self.path("access.log");
        wait_for(Duration::from_secs(10), "nginx's access log lines", || {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            let lines: Vec<String> = text
                .lines()
                .filter(|l| l.starts_with(&format!("uri:{uri}\t")))
                .map(String::from)
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
fn bench_json(args: &[&str]) -> serde_json::Value {
    let out = bench(&[args, &["--json", "-"]].concat());
    assert!(
        out.status.success(),
        "keisoku bench {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("bench JSON")
}

fn u(v: &serde_json::Value, path: &str) -> u64 {
    v.pointer(path)
        .and_then(|x| x.as_u64())
        .unwrap_or_else(|| panic!("{path} in {v}"))
}

#[test]
fn https_needs_a_trusted_certificate_or_k() {
    let ng = Nginx::start();
    let url = format!("https://127.0.0.1:{}/", ng.tls);
    let out = bench(&["-n", "5", "-c", "1", "-t", "1", &url]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(
        err.contains("UnknownIssuer") && err.contains("--cacert") && err.contains("-k"),
        "{err}"
    );
    let v = bench_json(&["-k", "-n", "20", "-c", "2", "-t", "1", &url]);
    assert_eq!(u(&v, "/status/2xx"), 20);
    assert_eq!(u(&v, "/transport/tls/handshakes"), 2);
    assert_eq!(v["transport"]["tls"]["alpn"], "http/1.1");
    assert!(
        v["transport"]["tls"]["handshake_ms"]["mean"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    // The terminal says the same, apart from request latency.
    let out = bench(&["-k", "-n", "20", "-c", "2", "-t", "1", &url]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("tls       2 handshakes") && text.contains("resumption on"),
        "{text}"
    );
    // --cacert verifies the chain, by IP (SAN) and by name.
    let ca = ng.file("ca.pem");
    for host in ["127.0.0.1", "localhost"] {
        let url = format!("https://{host}:{}/", ng.tls);
        let v = bench_json(&["--cacert", &ca, "-n", "10", "-c", "1", "-t", "1", &url]);
        assert_eq!(u(&v, "/status/2xx"), 10, "{host}");
    }
    // A name the certificate does not carry fails with the hint.
    let url = format!("https://127.0.0.1:{}/", ng.tls);
    let out = bench(&[
        "--cacert",
        &ca,
        "--sni",
        "other.test",
        "-n",
        "3",
        "-c",
        "1",
        &url,
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("--sni"), "{err}");
    // A CA file that is not PEM is bad input.
    let out = bench(&["--cacert", &ng.file("nginx.conf"), "-n", "1", &url]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn session_resumption_on_and_off_as_nginx_sees_it() {
    let ng = Nginx::start();
    let n = 40;
    let ns = n.to_string();
    let common = ["-k", "--no-keepalive", "-n", &ns, "-c", "1", "-t", "1"];
    let on = format!("https://127.0.0.1:{}/resume-on", ng.tls);
    let v = bench_json(&[&common[..], &[&on]].concat());
    assert_eq!(u(&v, "/transport/tls/handshakes"), n);
    let resumed = u(&v, "/transport/tls/resumed");
    assert!(resumed >= n - 2, "only {resumed} of {n} resumed");
    assert_eq!(v["transport"]["tls"]["resumption"], true);
    let reused = ng
        .lines("/resume-on", n as usize)
        .iter()
        .filter(|l| l.contains("\treused:r\t"))
        .count() as u64;
    assert_eq!(reused, resumed, "nginx and keisoku agree");

    let off = format!("https://127.0.0.1:{}/resume-off", ng.tls);
    let v = bench_json(&[&common[..], &["--no-tls-resume", &off]].concat());
    assert_eq!(u(&v, "/transport/tls/handshakes"), n);
    assert_eq!(u(&v, "/transport/tls/resumed"), 0);
    assert_eq!(v["transport"]["tls"]["resumption"], false);
    let lines = ng.lines("/resume-off", n as usize);
    assert!(
        lines.iter().all(|l| l.contains("\treused:.\t")),
        "{lines:?}"
    );
}

#[test]
fn client_certificate_verified_by_nginx() {
    let ng = Nginx::start();
    let url = format!("https://127.0.0.1:{}/mtls", ng.mtls);
    let ca = ng.file("ca.pem");
    let base = ["--cacert", &ca, "-n", "10", "-c", "1", "-t", "1"];
    // Without one, nginx answers 400 ("No required SSL certificate").
    let v = bench_json(&[&base[..], &[&url]].concat());
    assert_eq!(u(&v, "/status_codes/400"), 10);
    let (cert, key) = (ng.file("cli.pem"), ng.file("cli.key"));
    let v = bench_json(&[&base[..], &["--cert", &cert, "--key", &key, &url]].concat());
    assert_eq!(u(&v, "/status/2xx"), 10);
    let lines = ng.lines("/mtls", 20);
    assert_eq!(
        lines
            .iter()
            .filter(|l| l.contains("status:200") && l.contains("CN=keisoku-client"))
            .count(),
        10,
        "{lines:?}"
    );
    // --cert without --key is refused before any load.
    let out = bench(&["--cert", &cert, "-n", "1", &url]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn unix_socket_gives_the_connection_the_url_gives_host_and_path() {
    let ng = Nginx::start();
    let sock = ng.file("nginx.sock");
    let v = bench_json(&[
        "--unix-socket",
        &sock,
        "-n",
        "50",
        "-c",
        "2",
        "-t",
        "1",
        "http://localhost/over-unix",
    ]);
    assert_eq!(u(&v, "/status/2xx"), 50);
    assert_eq!(ng.lines("/over-unix", 50).len(), 50);
    // A socket nobody listens on is a connect error with its path.
    let out = bench(&[
        "--unix-socket",
        &ng.file("missing.sock"),
        "-n",
        "2",
        "-c",
        "1",
        "http://localhost/",
    ]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("missing.sock"), "{err}");
}

#[test]
fn redirect_chains_are_followed_and_said() {
    let ng = Nginx::start();
    let url = format!("https://127.0.0.1:{}/r1", ng.tls);
    let base = ["-k", "-n", "20", "-c", "2", "-t", "1"];
    let v = bench_json(&[&base[..], &["--follow", "3", &url]].concat());
    assert_eq!(u(&v, "/status/2xx"), 20);
    assert_eq!(u(&v, "/transport/redirects_followed"), 40);
    assert_eq!(ng.lines("/end", 20).len(), 20);
    // The chain is longer than allowed: the last redirect is the answer.
    let v = bench_json(&[&base[..], &["--follow", "1", &url]].concat());
    assert_eq!(u(&v, "/status/3xx"), 20);
    // Without --follow redirects are answers, as before.
    let v = bench_json(&[&base[..], &[&url]].concat());
    assert_eq!(u(&v, "/status/3xx"), 20);
    assert!(v
        .get("transport")
        .is_some_and(|t| t["redirects_followed"] == 0));
    let plain = format!("http://127.0.0.1:{}/r1", ng.plain);
    let v = bench_json(&["--follow", "2", "-n", "10", "-c", "1", &plain]);
    assert_eq!(u(&v, "/status/2xx"), 10);
    assert!(v.get("transport").is_some(), "redirects are reported");
}

#[test]
fn compressed_bodies_are_decoded_and_both_sizes_reported() {
    let ng = Nginx::start();
    let url = format!("https://127.0.0.1:{}/big", ng.tls);
    let v = bench_json(&["-k", "--compressed", "-n", "15", "-c", "1", "-t", "1", &url]);
    assert_eq!(u(&v, "/transport/compressed_responses"), 15);
    let decoded = u(&v, "/transport/body_bytes_decoded");
    assert_eq!(decoded, (15 * BIG.len() * BIG_REPEAT) as u64);
    assert!(u(&v, "/transport/body_bytes_encoded") * 5 < decoded);
    // Without --compressed nginx sends it as is and nothing is decoded.
    let v = bench_json(&["-k", "-n", "5", "-c", "1", "-t", "1", &url]);
    let compressed = v.pointer("/transport/compressed_responses");
    assert!(compressed.is_none() || compressed == Some(&serde_json::json!(0)));
}

/// A forward proxy on 127.0.0.1 (absolute-form GET and CONNECT) that logs
/// each request line; prints its port when it listens.
const PROXY: &str = r#"
import socket, threading, select, sys
log = open(sys.argv[1], "a", buffering=1)
def pipe(a, b):
    try:
        while True:
            r, _, _ = select.select([a, b], [], [])
            for s in r:
                d = s.recv(65536)
                if not d:
                    return
                (b if s is a else a).sendall(d)
    finally:
        a.close(); b.close()
def handle(c):
    buf = b""
    while b"\r\n\r\n" not in buf:
        d = c.recv(65536)
        if not d:
            c.close(); return
        buf += d
    line = buf.split(b"\r\n", 1)[0].decode()
    log.write(line + "\n")
    m, t, _ = line.split(" ")
    if m == "CONNECT":
        h, p = t.rsplit(":", 1)
        u = socket.create_connection((h, int(p)))
        c.sendall(b"HTTP/1.1 200 Connection established\r\n\r\n")
    else:
        hp, path = t[len("http://"):].split("/", 1)
        h, p = hp.rsplit(":", 1)
        u = socket.create_connection((h, int(p)))
        u.sendall(buf.replace(t.encode(), ("/" + path).encode(), 1))
    pipe(c, u)
s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen(64)
print(s.getsockname()[1], flush=True)
while True:
    c, _ = s.accept()
    threading.Thread(target=handle, args=(c,), daemon=True).start()
"#;

struct Proxy(Child);

impl Drop for Proxy {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

#[test]
fn proxies_from_the_flag_and_the_environment() {
    use std::io::BufRead;
    let ng = Nginx::start();
    let log = ng.path("proxy.log");
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(PROXY)
        .arg(&log)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 is not installed: run scripts/setup.sh");
    let mut first = String::new();
    std::io::BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut first)
        .unwrap();
    let proxy = Proxy(child);
    let port: u16 = first.trim().parse().expect("the proxy's port");
    let purl = format!("http://127.0.0.1:{port}");
    let plain = format!("http://127.0.0.1:{}/via-proxy", ng.plain);
    let out = bench(&["--proxy", &purl, "-n", "10", "-c", "2", "-t", "1", &plain]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("goes through the proxy"), "{err}");
    let https = format!("https://127.0.0.1:{}/via-connect", ng.tls);
    let out = Command::new(BIN)
        .args([
            "bench", "-k", "-n", "10", "-c", "2", "-t", "1", "--json", "-", &https,
        ])
        .env("https_proxy", &purl)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(u(&v, "/status/2xx"), 10);
    assert_eq!(u(&v, "/transport/tls/handshakes"), 2);
    // --noproxy bypasses it.
    let direct = format!("http://127.0.0.1:{}/direct", ng.plain);
    let out = Command::new(BIN)
        .args([
            "bench",
            "--noproxy",
            "127.0.0.1",
            "-n",
            "5",
            "-c",
            "1",
            &direct,
        ])
        .env("http_proxy", &purl)
        .output()
        .unwrap();
    assert!(out.status.success());
    assert_eq!(ng.lines("/via-proxy", 10).len(), 10);
    assert_eq!(ng.lines("/via-connect", 10).len(), 10);
    assert_eq!(ng.lines("/direct", 5).len(), 5);
    let seen = std::fs::read_to_string(&log).unwrap();
    let absolute = format!("GET http://127.0.0.1:{}/via-proxy HTTP/1.1", ng.plain);
    let connect = format!("CONNECT 127.0.0.1:{} HTTP/1.1", ng.tls);
    assert_eq!(seen.lines().filter(|l| *l == absolute).count(), 2, "{seen}");
    assert_eq!(seen.lines().filter(|l| *l == connect).count(), 2, "{seen}");
    assert!(!seen.contains("/direct"), "{seen}");
    drop(proxy);
}

/// `keisoku run` stores the handshake numbers with each phase (the system
/// trust store is pointed at the test CA with SSL_CERT_FILE, as OpenSSL
/// and rustls-native-certs read it).
#[test]
fn stored_run_keeps_tls_handshakes_per_phase() {
    let ng = Nginx::start();
    let store = ng.path("runs.db");
    let url = format!("https://localhost:{}/stored", ng.tls);
    let out = Command::new(BIN)
        .args(["run", "--target", &url, "-n", "30", "-c", "2", "-t", "1"])
        .args(["--profile", "none", "--name", "tls-run", "--store"])
        .arg(&store)
        .env("SSL_CERT_FILE", ng.path("ca.pem"))
        .env_remove("https_proxy")
        .env_remove("HTTPS_PROXY")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value =
        serde_json::from_slice(&common::export(&store, "tls-run", "json")).unwrap();
    let phase = &json["results"]["phases"][0];
    assert_eq!(u(phase, "/transport/tls/handshakes"), 2, "{phase}");
    assert_eq!(phase["transport"]["tls"]["alpn"], "http/1.1");
}
