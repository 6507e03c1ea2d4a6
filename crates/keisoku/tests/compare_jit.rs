//! `keisoku diff` and `compare` on two real runs of the same Node program,
//! one with a planted hot function: V8 re-tiers functions between runs
//! (`JS:*f` in one, `JS:^f` in the other), and without normalising names
//! the real change is buried under renamed functions (issue 14). With the
//! default normalisation the planted function is the top mover and the
//! first regression row. The same for Java, whose lambda classes are
//! numbered per run (`KeisokuCmp$$Lambda$12/0x00007fd118009c00`).

mod common;
use common::{free_port, have, BIN};

use std::path::Path;
use std::process::Command;

/// The server: builds and renders a list per request; with PLANT=1 it
/// also checksums the body 40 times (the planted change).
const SERVER: &str = r#"const http = require('http');
const port = Number(process.argv[2]);
const plant = process.env.PLANT === '1';
function parseQuery(url) {
  const out = {};
  const q = url.split('?')[1] || 'a=1&b=2&c=3';
  for (const kv of q.split('&')) { const [k, v] = kv.split('='); out[k] = v; }
  return out;
}
function renderBody(items) {
  let s = '';
  for (let i = 0; i < items.length; i++) s += `<li>${items[i].name}:${items[i].v.toFixed(2)}</li>`;
  return s;
}
function buildItems(n) {
  const items = [];
  for (let i = 0; i < n; i++) items.push({ name: 'item' + i, v: Math.sqrt(i * 7919 % 104729) });
  return items;
}
function plantedChecksum(body) {
  let h = 2166136261;
  for (let r = 0; r < 40; r++) for (let i = 0; i < body.length; i++) { h ^= body.charCodeAt(i); h = Math.imul(h, 16777619) >>> 0; }
  return h;
}
http.createServer((req, res) => {
  const q = parseQuery(req.url);
  const body = renderBody(buildItems(300 + (q.a | 0)));
  const sum = plant ? plantedChecksum(body) : 0;
  res.setHeader('x-sum', String(sum));
  res.end(body);
}).listen(port, '127.0.0.1');
"#;

/// Records one profiled run named `name` of the server into `store`.
/// `--no-turbo-inlining`: TurboFan may inline the planted function into the
/// handler, whose frame would then carry its time; the test is about one
/// function across JIT tiers, so it keeps its own frame.
fn record(dir: &Path, store: &Path, name: &str, plant: bool) {
    let script = dir.join("server.js");
    std::fs::write(&script, SERVER).unwrap();
    let server = |port: u16| {
        format!(
            // In the temp dir: node with --perf-basic-prof writes an
            // isolate-*-v8.log into its working directory.
            "cd {} && exec node --perf-basic-prof --no-turbo-inlining {} {port}",
            dir.display(),
            script.display()
        )
    };
    record_profiled(store, name, plant, "5s", "499", server);
}

/// One `keisoku run` of the server `server(port)` with the planted function
/// on or off (`PLANT`), profiled by perf; the run must complete.
fn record_profiled(
    store: &Path,
    name: &str,
    plant: bool,
    duration: &str,
    hz: &str,
    server: impl Fn(u16) -> String,
) {
    let port = free_port();
    let out = Command::new(BIN)
        .env("PLANT", if plant { "1" } else { "0" })
        .args(["run", "--target", &format!("http://127.0.0.1:{port}/")])
        .args(["-c", "4", "-d", duration, "--name", name, "--server-cmd"])
        .arg(server(port))
        .args(["--profile", "perf", "--profile-hz", hz, "--store"])
        .arg(store)
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(0),
        "{name}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn keisoku(args: &[&str], store: &Path) -> (i32, String) {
    let out = Command::new(BIN)
        .args(args)
        .arg("--store")
        .arg(store)
        .output()
        .unwrap();
    assert!(
        out.status.code().is_some_and(|c| c == 0),
        "keisoku {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8_lossy(&out.stdout).into_owned(),
    )
}

/// The first row under "Largest regressions" of `keisoku diff`'s table.
fn first_regression(table: &str) -> &str {
    table
        .lines()
        .skip_while(|l| !l.starts_with("Largest regressions"))
        .nth(2)
        .unwrap_or("")
}

#[test]
fn planted_node_function_is_the_top_mover_after_normalising_jit_names() {
    assert!(
        have("node") && have("perf"),
        "node and perf are required: run scripts/setup.sh"
    );
    let dir = tempfile::tempdir().unwrap();
    let store = dir.path().join("runs.db");
    record(dir.path(), &store, "node-base", false);
    record(dir.path(), &store, "node-planted", true);

    let (_, table) = keisoku(&["diff", "node-base", "node-planted"], &store);
    assert!(
        first_regression(&table).contains("JS:plantedChecksum "),
        "{table}"
    );
    assert!(
        !table.contains("JS:*") && !table.contains("JS:^") && !table.contains("JS:~"),
        "tier markers are normalised away:\n{table}"
    );
    // Raw names keep the markers, so the normalisation did something.
    let (_, raw) = keisoku(
        &["diff", "node-base", "node-planted", "--no-normalise"],
        &store,
    );
    assert!(
        raw.contains("JS:*") || raw.contains("JS:^") || raw.contains("JS:~"),
        "{raw}"
    );

    let html = dir.path().join("compare.html");
    let (_, json) = keisoku(
        &[
            "compare",
            "node-base",
            "node-planted",
            "--json",
            "-o",
            html.to_str().unwrap(),
        ],
        &store,
    );
    let v: serde_json::Value = serde_json::from_str(&json).expect("compare --json is JSON");
    let top = v["top_mover"]["frame"].as_str().unwrap_or_default();
    assert!(top.starts_with("JS:plantedChecksum "), "top mover {top}");
    assert!(
        v["top_mover"]["after_self_share_pct"]
            .as_f64()
            .unwrap_or(0.0)
            > 20.0,
        "{}",
        v["top_mover"]
    );
    let rows = v["profile_changes"].as_array().expect("profile changes");
    let first_growth = rows
        .iter()
        .find(|r| r["delta_share_pp"].as_f64().unwrap_or(0.0) > 0.0)
        .expect("a growing function");
    assert_eq!(first_growth["frame"].as_str(), Some(top));
    assert!(v.get("diff").is_none(), "no embedded profiles in --json");
    assert!(v["findings"].is_array());
    assert!(v["timelines"]["a"]["t_s"]
        .as_array()
        .is_some_and(|t| t.len() >= 4));
    // The text summary states the top mover too.
    let (_, text) = keisoku(
        &[
            "compare",
            "node-base",
            "node-planted",
            "-o",
            html.to_str().unwrap(),
        ],
        &store,
    );
    assert!(text.contains("top mover: JS:plantedChecksum "), "{text}");
}

/// A JDK HttpServer whose handler sums a stream through two lambdas; with
/// PLANT=1 it also hashes the body 600 times, which takes about as long as
/// the rest of the request: a regression that must lead even in a run
/// recorded on a crowded CI host, where the JIT compiler's own samples
/// move by a point or two between runs.
const JAVA_SERVER: &str = r#"import com.sun.net.httpserver.*;
import java.io.*;
import java.net.InetSocketAddress;
import java.util.concurrent.Executors;
import java.util.function.DoubleUnaryOperator;
import java.util.stream.IntStream;

public class KeisokuCmp {
    static final boolean PLANT = "1".equals(System.getenv("PLANT"));
    static long plantedHash(byte[] b) {
        long h = 1469598103934665603L;
        for (int r = 0; r < 600; r++) for (byte x : b) { h ^= x; h *= 1099511628211L; }
        return h;
    }
    public static void main(String[] args) throws Exception {
        DoubleUnaryOperator f = x -> Math.sqrt(x) * 1.0001;
        HttpServer s = HttpServer.create(new InetSocketAddress("127.0.0.1", Integer.parseInt(args[0])), 64);
        s.createContext("/", ex -> {
            double v = IntStream.range(0, 20000).mapToDouble(i -> f.applyAsDouble(i)).sum();
            byte[] body = String.valueOf(v).repeat(40).getBytes();
            long h = PLANT ? plantedHash(body) : 0;
            ex.getResponseHeaders().add("x-h", Long.toString(h));
            ex.sendResponseHeaders(200, body.length);
            try (OutputStream o = ex.getResponseBody()) { o.write(body); }
        });
        s.setExecutor(Executors.newFixedThreadPool(2));
        s.start();
    }
}
"#;

/// Records one profiled Java run. The lambda classes' methods and the
/// planted method are kept out of inlining so they have frames of their
/// own (the lambdas' named per run). `nodelay`: the JDK server writes
/// headers and body apart, and with Nagle on each request waits ~40 ms for
/// a delayed ACK, so the run would be mostly idle and hold few samples.
fn record_java(dir: &Path, store: &Path, name: &str, plant: bool) {
    let server = |port: u16| {
        format!(
            "exec java -XX:+PreserveFramePointer -Dsun.net.httpserver.nodelay=true -XX:CompileCommand=quiet \
             '-XX:CompileCommand=dontinline,*Lambda*::*' '-XX:CompileCommand=dontinline,KeisokuCmp::plantedHash' \
             -cp {} KeisokuCmp {port}",
            dir.display()
        )
    };
    record_profiled(store, name, plant, "6s", "999", server);
}

#[test]
fn java_lambda_numbering_is_normalised_and_the_planted_method_leads() {
    assert!(
        have("javac") && have("java") && have("perf"),
        "JDK 17 (javac, java) and perf are required: run scripts/setup.sh"
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("KeisokuCmp.java"), JAVA_SERVER).unwrap();
    let javac = Command::new("javac")
        .arg("-d")
        .arg(dir.path())
        .arg(dir.path().join("KeisokuCmp.java"))
        .output()
        .unwrap();
    assert!(
        javac.status.success(),
        "{}",
        String::from_utf8_lossy(&javac.stderr)
    );
    let store = dir.path().join("runs.db");
    record_java(dir.path(), &store, "java-base", false);
    record_java(dir.path(), &store, "java-planted", true);

    let numbered = regex::Regex::new(r"\$\$Lambda\$\d+/0x[0-9a-f]+").unwrap();
    let (_, raw) = keisoku(
        &[
            "diff",
            "java-base",
            "java-planted",
            "--no-normalise",
            "--top",
            "500",
        ],
        &store,
    );
    assert!(
        numbered.is_match(&raw),
        "lambda frames with per-run names:\n{raw}"
    );
    let (_, table) = keisoku(
        &["diff", "java-base", "java-planted", "--top", "500"],
        &store,
    );
    assert!(!numbered.is_match(&table), "normalised:\n{table}");
    assert!(
        table.contains("KeisokuCmp$$Lambda.applyAsDouble"),
        "{table}"
    );
    assert!(
        first_regression(&table).ends_with("KeisokuCmp.plantedHash"),
        "{table}"
    );
}
