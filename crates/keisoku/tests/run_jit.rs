//! `keisoku run` names the handlers of managed runtimes in the stored
//! profile: Java (perf, perf map written with jcmd), Node (perf,
//! --perf-basic-prof) and Python (py-spy, with sample times).

mod common;
use common::{free_port, have};

use keisoku_store::RunJson;
use std::path::Path;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_keisoku");

/// Runs 3 s of load at `port` against `server_cmd` with perf; returns the run.
fn profiled_run(dir: &Path, port: u16, server_cmd: &str) -> RunJson {
    profiled_run_with(dir, port, server_cmd, "perf")
}

fn profiled_run_with(dir: &Path, port: u16, server_cmd: &str, profiler: &str) -> RunJson {
    let store = dir.join("runs.db");
    let out = Command::new(BIN)
        .args([
            "run",
            "--target",
            &format!("http://127.0.0.1:{port}/"),
            "-c",
            "2",
            "-t",
            "1",
            "-d",
            "3s",
            "--server-cmd",
            server_cmd,
            "--profile",
            profiler,
            "--profile-hz",
            "499",
            "--store",
            store.to_str().unwrap(),
        ])
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(
        out.status.code(),
        Some(0),
        "stdout:\n{}\nstderr:\n{stderr}",
        String::from_utf8_lossy(&out.stdout)
    );
    let out = Command::new(BIN)
        .args(["export", "last", "--store", store.to_str().unwrap()])
        .output()
        .unwrap();
    serde_json::from_slice(&out.stdout).unwrap()
}

fn frames_matching<'a>(run: &'a RunJson, needle: &str) -> Vec<&'a str> {
    let p = run.profile.as_ref().expect("a profile");
    p.frames
        .iter()
        .map(|f| f.name.as_str())
        .filter(|n| n.contains(needle))
        .collect()
}

#[test]
fn java_handler_method_appears_by_name() {
    assert!(
        have("javac") && have("java") && have("jcmd"),
        "JDK 17 (javac, java, jcmd) is required: run scripts/setup.sh"
    );
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("KeisokuServer.java");
    std::fs::write(
        &src,
        r#"import com.sun.net.httpserver.*;
import java.io.*;
import java.net.InetSocketAddress;
import java.util.concurrent.Executors;

public class KeisokuServer {
    static double keisokuBurn(int n) {
        double x = 0;
        for (int i = 0; i < n; i++) x += Math.sqrt(i + x % 7);
        return x;
    }
    static class BusyHandler implements HttpHandler {
        public void handle(HttpExchange ex) throws IOException {
            byte[] body = String.valueOf(keisokuBurn(100000)).getBytes();
            ex.sendResponseHeaders(200, body.length);
            try (OutputStream o = ex.getResponseBody()) { o.write(body); }
        }
    }
    public static void main(String[] args) throws Exception {
        HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", Integer.parseInt(args[0])), 64);
        s.createContext("/", new BusyHandler());
        s.setExecutor(Executors.newFixedThreadPool(2));
        s.start();
    }
}
"#,
    )
    .unwrap();
    let javac = Command::new("javac")
        .arg("-d")
        .arg(dir.path())
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        javac.status.success(),
        "{}",
        String::from_utf8_lossy(&javac.stderr)
    );
    let port = free_port();
    let cmd = format!(
        "exec java -XX:+PreserveFramePointer -Xshare:auto -cp {} KeisokuServer {port}",
        dir.path().display()
    );
    let run = profiled_run(dir.path(), port, &cmd);
    let hits = frames_matching(&run, "KeisokuServer");
    assert!(
        !hits.is_empty(),
        "no Java frame of KeisokuServer among {:?}",
        frames_matching(&run, "::")
    );
}

#[test]
fn node_handler_function_appears_by_name() {
    assert!(have("node"), "node is required");
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let script = dir.path().join("server.js");
    std::fs::write(
        &script,
        format!(
            "const http = require('http');\n\
function keisokuBusyHandler(req, res) {{\n  let x = 0;\n  for (let i = 0; i < 300000; i++) x += Math.sqrt(i + (x % 7));\n  res.end(String(x));\n}}\n\
http.createServer(keisokuBusyHandler).listen({port}, '127.0.0.1');\n"
        ),
    )
    .unwrap();
    let run = profiled_run(
        dir.path(),
        port,
        // In the temp dir: node with --perf-basic-prof writes an
        // isolate-*-v8.log into its working directory.
        &format!(
            "cd {} && exec node --perf-basic-prof {}",
            dir.path().display(),
            script.display()
        ),
    );
    let hits = frames_matching(&run, "keisokuBusyHandler");
    assert!(
        !hits.is_empty(),
        "no keisokuBusyHandler frame among {} frames",
        run.profile.as_ref().map_or(0, |p| p.frames.len())
    );
}

#[test]
fn python_handler_appears_by_name_with_py_spy_sample_times() {
    assert!(
        have("py-spy") && have("python3"),
        "py-spy is required: run scripts/setup.sh"
    );
    let dir = tempfile::tempdir().unwrap();
    let port = free_port();
    let script = dir.path().join("server.py");
    std::fs::write(
        &script,
        format!(
            "import http.server, math\n\
def keisoku_busy_handler():\n    x = 0.0\n    for i in range(20000):\n        x += math.sqrt(i)\n    return str(x).encode()\n\
class H(http.server.BaseHTTPRequestHandler):\n    def do_GET(self):\n        b = keisoku_busy_handler()\n        self.send_response(200); self.send_header('Content-Length', str(len(b))); self.end_headers(); self.wfile.write(b)\n    def log_message(self, *a): pass\n\
http.server.ThreadingHTTPServer(('127.0.0.1', {port}), H).serve_forever()\n"
        ),
    )
    .unwrap();
    let run = profiled_run_with(
        dir.path(),
        port,
        &format!("exec python3 {}", script.display()),
        "py-spy",
    );
    assert!(
        !frames_matching(&run, "keisoku_busy_handler").is_empty(),
        "frames: {:?}",
        run.profile
            .as_ref()
            .map(|p| p.frames.iter().map(|f| &f.name).collect::<Vec<_>>())
    );
    let times: Vec<f64> = run
        .profile
        .as_ref()
        .unwrap()
        .samples
        .time_ns
        .as_ref()
        .unwrap()
        .iter()
        .map(|&ns| ns as f64 / 1e6)
        .collect();
    assert!(!times.is_empty());
    assert!(
        times
            .iter()
            .all(|&t| t > 0.0 && t < run.run.duration_ms + 1000.0),
        "{:?}..{:?}",
        times.first(),
        times.last()
    );
}
