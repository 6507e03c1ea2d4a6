//! `keisoku bench --compressed` against a real server that sends brotli:
//! a small Python HTTP/1.1 server (Debian's python3-brotli, installed by
//! scripts/setup.sh) that answers `Content-Encoding: br` only when the
//! request offers `br`, and logs what it sent, so decoded and wire sizes
//! are known exactly.

mod common;

use common::BIN;
use std::io::BufRead;
use std::process::{Child, Command, Stdio};

/// Serves `/text` on `argv[1]`: 400 lines of text, brotli-compressed when
/// Accept-Encoding offers br; prints the plain and compressed sizes, then
/// `listening`; logs each answer's encoding to `argv[2]`.
const SERVER: &str = r#"
import sys, brotli
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

port, log = int(sys.argv[1]), open(sys.argv[2], "a", buffering=1)
plain = b"keisoku brotli body line\n" * 400
packed = brotli.compress(plain)

class H(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    def do_GET(self):
        offered = [e.strip().split(";")[0] for e in self.headers.get("Accept-Encoding", "").split(",")]
        body, enc = (packed, "br") if "br" in offered else (plain, "identity")
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        if enc == "br":
            self.send_header("Content-Encoding", "br")
        self.end_headers()
        self.wfile.write(body)
        log.write(enc + "\n")
    def log_message(self, *a):
        pass

srv = ThreadingHTTPServer(("127.0.0.1", port), H)
print(len(plain), len(packed), flush=True)
print("listening", flush=True)
srv.serve_forever()
"#;

struct Server {
    child: Child,
    plain: u64,
    packed: u64,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start(dir: &std::path::Path, port: u16) -> Server {
    let script = dir.join("br.py");
    std::fs::write(&script, SERVER).unwrap();
    let mut child = Command::new("/usr/bin/python3")
        .arg(&script)
        .arg(port.to_string())
        .arg(dir.join("answers.log"))
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("/usr/bin/python3 with python3-brotli: run scripts/setup.sh");
    let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
    let mut sizes = String::new();
    out.read_line(&mut sizes).unwrap();
    let mut ready = String::new();
    out.read_line(&mut ready).unwrap();
    assert_eq!(ready.trim(), "listening", "the brotli server: {sizes}");
    let mut it = sizes.split_whitespace().map(|s| s.parse::<u64>().unwrap());
    let (plain, packed) = (it.next().unwrap(), it.next().unwrap());
    Server {
        child,
        plain,
        packed,
    }
}

fn bench_json(args: &[&str]) -> serde_json::Value {
    let out = Command::new(BIN)
        .arg("bench")
        .args(args)
        .args(["--json", "-"])
        .env_remove("http_proxy")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "keisoku bench {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("bench JSON")
}

#[test]
fn brotli_bodies_are_asked_for_decoded_and_both_sizes_reported() {
    let dir = tempfile::tempdir().unwrap();
    let s = start(dir.path(), 19120);
    let url = "http://127.0.0.1:19120/text";
    let j = bench_json(&["--compressed", "-n", "20", "-c", "2", "-t", "1", url]);
    let n = |p: &str| {
        j.pointer(p)
            .and_then(|v| v.as_u64())
            .unwrap_or_else(|| panic!("{p} in {j}"))
    };
    assert_eq!(n("/requests"), 20);
    assert_eq!(n("/transport/compressed_responses"), 20);
    assert_eq!(n("/transport/body_bytes_decoded"), 20 * s.plain);
    assert_eq!(n("/transport/body_bytes_encoded"), 20 * s.packed);
    // Without --compressed br is not offered, so the server sends it plain.
    let j = bench_json(&["-n", "5", "-c", "1", "-t", "1", url]);
    let compressed = j.pointer("/transport/compressed_responses");
    assert!(compressed.is_none() || compressed == Some(&serde_json::json!(0)));
    let log = std::fs::read_to_string(dir.path().join("answers.log")).unwrap();
    assert_eq!(log.lines().filter(|l| *l == "br").count(), 20, "{log}");
    assert_eq!(log.lines().filter(|l| *l == "identity").count(), 5);
}
