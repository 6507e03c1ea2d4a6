//! cProfile input recorded at test time by the real tools: a Flask app
//! under werkzeug's `ProfilerMiddleware` (one `.prof` file per request),
//! with a synchronous call to a slow logger as in field notes §4, loaded by
//! `keisoku bench`. keisoku's tables must equal Python's own `pstats`
//! reading of the same files: one file (`python -m pstats`, `sort tottime`
//! and `sort cumtime`), and the directory merged (`pstats.Stats(*files)`).

mod common;
use common::{free_port, wait_for, BIN};

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const APP: &str = r#"
import http.server, sys, threading, urllib.request
from flask import Flask
from werkzeug.middleware.profiler import ProfilerMiddleware

port, logger_port, profile_dir = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]

class Logger(http.server.BaseHTTPRequestHandler):
    """The external logger: slow to answer, as the ISUCON team's was."""
    def do_POST(self):
        self.rfile.read(int(self.headers["Content-Length"]))
        threading.Event().wait(0.02)
        self.send_response(204)
        self.end_headers()
    def log_message(self, *a):
        pass

logger = http.server.ThreadingHTTPServer(("127.0.0.1", logger_port), Logger)
threading.Thread(target=logger.serve_forever, daemon=True).start()

app = Flask(__name__)

def send_log(event):
    req = urllib.request.Request(f"http://127.0.0.1:{logger_port}/log", data=event.encode(), method="POST")
    urllib.request.urlopen(req).read()

def price(items):
    return sum(i * 1.08 for i in items)

@app.route("/")
def index():
    return str(price(range(2000)))

@app.route("/orders/<int:n>", methods=["GET", "POST"])
def order(n):
    total = price(range(n * 100))
    send_log(f"order {n} {total}")
    return str(total)

app.wsgi_app = ProfilerMiddleware(app.wsgi_app, stream=None, profile_dir=profile_dir)
app.run("127.0.0.1", port, threaded=True)
"#;

/// Prints pstats' own reading of FILES (merged with `Stats(*files)`):
/// every function's numbers, and the rows `print_stats` prints sorted by
/// tottime and by cumtime.
const PSTATS: &str = r#"
import io, json, pstats, re, sys
s = pstats.Stats(*sys.argv[1:])
out = {"functions": {pstats.func_std_string(k): list(v[:4]) for k, v in s.stats.items()},
       "total_tt": s.total_tt, "total_calls": s.total_calls, "prim_calls": s.prim_calls}
for key in ("tottime", "cumtime"):
    buf = io.StringIO()
    pstats.Stats(*sys.argv[1:], stream=buf).sort_stats(key).print_stats(15)
    out[key] = [l for l in buf.getvalue().splitlines() if re.match(r"\s*\d+(/\d+)?\s+\d+\.\d{3}\s", l)]
print(json.dumps(out))
"#;

struct Server(Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

fn keisoku(args: &[&str]) -> String {
    let out = Command::new(BIN).args(args).output().expect("run keisoku");
    assert!(
        out.status.success(),
        "keisoku {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).expect("UTF-8 output")
}

fn python(script: &str, args: &[&Path]) -> serde_json::Value {
    let out = Command::new("python3")
        .arg("-c")
        .arg(script)
        .args(args)
        .output()
        .expect("run python3");
    assert!(
        out.status.success(),
        "python3: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("pstats JSON")
}

/// Rows of keisoku's pstats-layout table (after the column header).
fn table_rows(text: &str) -> Vec<String> {
    text.lines()
        .skip_while(|l| !l.contains("filename:lineno(function)"))
        .skip(1)
        .take_while(|l| !l.is_empty())
        .map(str::to_owned)
        .collect()
}

fn profile_dir_with_requests(dir: &Path) -> (PathBuf, Vec<PathBuf>) {
    let profiles = dir.join("profiles");
    std::fs::create_dir(&profiles).unwrap();
    let app = dir.join("app.py");
    std::fs::write(&app, APP).unwrap();
    let (port, logger_port) = (free_port(), free_port());
    let mut server = Server(
        Command::new("python3")
            .arg(&app)
            .arg(port.to_string())
            .arg(logger_port.to_string())
            .arg(&profiles)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("python3 with Flask (scripts/setup.sh installs it)"),
    );
    wait_for(Duration::from_secs(20), "the Flask app's port", || {
        if let Ok(Some(status)) = server.0.try_wait() {
            panic!("the Flask app exited: {status} (is Flask installed? scripts/setup.sh)");
        }
        std::net::TcpStream::connect(("127.0.0.1", port)).ok()
    });
    let base = format!("http://127.0.0.1:{port}");
    keisoku(&[
        "bench",
        &format!("{base}/orders/3"),
        &format!("{base}/"),
        &format!("{base}/orders/40"),
        "-c",
        "2",
        "-t",
        "1",
        "-n",
        "60",
    ]);
    // The middleware writes each file before the response goes out, so
    // every answered request has its file now. Names carry the time in
    // whole seconds, so two requests to one path with the same elapsed ms
    // in one second share a name and the later file replaces the earlier
    // (werkzeug's behaviour): fewer files than requests is expected. On a
    // quiet host the 60 requests take well under a second and ~1 ms each,
    // so most share a name: a fresh-clone CI run kept 8 (2026-11-25). The
    // test needs each path's file and a directory of several to merge.
    let mut files: Vec<PathBuf> = std::fs::read_dir(&profiles)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "prof"))
        .collect();
    files.sort();
    assert!(files.len() >= 3, "only {} .prof files", files.len());
    drop(server);
    (profiles, files)
}

fn assert_same_functions(keisoku_json: &str, pstats: &serde_json::Value) {
    let doc: serde_json::Value = serde_json::from_str(keisoku_json).unwrap();
    let g = &doc["callgraph"];
    assert_eq!(g["flame"], "estimated from a call graph");
    assert!(doc["title"]
        .as_str()
        .unwrap()
        .contains("estimated from a call graph"));
    let ours: Vec<&serde_json::Value> = g["functions"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["listed"] == true)
        .collect();
    let theirs = pstats["functions"].as_object().unwrap();
    assert_eq!(ours.len(), theirs.len());
    for f in ours {
        let label = f["label"].as_str().unwrap();
        let t = theirs
            .get(label)
            .unwrap_or_else(|| panic!("{label} not in pstats"));
        assert_eq!(f["cc"], t[0], "{label} cc");
        assert_eq!(f["nc"], t[1], "{label} nc");
        // The same sums in the same order: equal to the last bit.
        assert_eq!(f["tt"].as_f64(), t[2].as_f64(), "{label} tottime");
        assert_eq!(f["ct"].as_f64(), t[3].as_f64(), "{label} cumtime");
    }
    // The estimated flame graph draws pstats' total time (in ns).
    let total_ns: f64 = doc["counts"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c.as_f64().unwrap())
        .sum();
    let total = pstats["total_tt"].as_f64().unwrap() * 1e9;
    assert!(
        (total_ns - total).abs() <= total * 0.01,
        "flame total {total_ns} vs pstats {total}"
    );
}

#[test]
fn werkzeug_profiles_read_as_pstats_reads_them() {
    let dir = tempfile::tempdir().unwrap();
    let (profiles, files) = profile_dir_with_requests(dir.path());

    // One request's file: the table rows equal pstats' rows, both orders.
    let slowest = files
        .iter()
        .find(|f| f.to_string_lossy().contains("orders.40."))
        .expect("a profile of /orders/40");
    let one = slowest.to_str().unwrap();
    let theirs = python(PSTATS, &[slowest]);
    for key in ["tottime", "cumtime"] {
        let text = keisoku(&["flame", one, "--sort", key, "--top", "15"]);
        let expected: Vec<String> = theirs[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap().to_owned())
            .collect();
        assert_eq!(table_rows(&text), expected, "sort {key}:\n{text}");
    }
    let json_path = dir.path().join("one.json");
    keisoku(&["flame", one, "-o", json_path.to_str().unwrap()]);
    assert_same_functions(&std::fs::read_to_string(&json_path).unwrap(), &theirs);

    // The directory: merged as pstats.Stats(*files) merges, requests
    // listed slowest first, and the logger call found as the cause.
    let dir_arg = profiles.to_str().unwrap();
    let file_refs: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let merged = python(PSTATS, &file_refs);
    let text = keisoku(&["flame", dir_arg, "--sort", "cumtime", "--top", "15"]);
    assert!(
        text.starts_with(&format!("{} request profiles", files.len())),
        "{text}"
    );
    let first_request = text.lines().nth(2).unwrap();
    assert!(first_request.contains("/orders/"), "{text}");
    let expected: Vec<String> = merged["cumtime"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l.as_str().unwrap().to_owned())
        .collect();
    assert_eq!(table_rows(&text), expected, "merged, sort cumtime:\n{text}");
    let json_path = dir.path().join("merged.json");
    keisoku(&["flame", dir_arg, "-o", json_path.to_str().unwrap()]);
    assert_same_functions(&std::fs::read_to_string(&json_path).unwrap(), &merged);

    let callers = keisoku(&["flame", dir_arg, "--callers", r"\(send_log\)"]);
    assert!(callers.contains("(order)"), "{callers}");
    assert!(callers.contains("urlopen"), "{callers}");

    // Two sets of requests: the existing diff reads two directories.
    let half = dir.path().join("half");
    std::fs::create_dir(&half).unwrap();
    for f in files
        .iter()
        .filter(|f| !f.to_string_lossy().contains("orders.40."))
    {
        std::fs::copy(f, half.join(f.file_name().unwrap())).unwrap();
    }
    let mut half_files: Vec<PathBuf> = std::fs::read_dir(&half)
        .unwrap()
        .map(|e| e.unwrap().path())
        .collect();
    half_files.sort();
    let half_refs: Vec<&Path> = half_files.iter().map(PathBuf::as_path).collect();
    let before = python(PSTATS, &half_refs)["total_tt"].as_f64().unwrap() * 1e9;
    let after = merged["total_tt"].as_f64().unwrap() * 1e9;
    let diff = keisoku(&["diff", half.to_str().unwrap(), dir_arg]);
    let head = diff.lines().next().unwrap_or_default();
    let ns: Vec<f64> = head
        .split(|c: char| !c.is_ascii_digit())
        .filter_map(|w| w.parse().ok())
        .collect();
    assert_eq!(ns.len(), 2, "{diff}");
    assert!(
        (ns[0] - before).abs() <= before * 0.01,
        "{head} vs {before}"
    );
    assert!((ns[1] - after).abs() <= after * 0.01, "{head} vs {after}");
}

#[test]
fn damaged_and_empty_inputs_exit_2_naming_why() {
    let dir = tempfile::tempdir().unwrap();
    let cut = dir.path().join("GET.root.1ms.1700000000.prof");
    // The head of a real pstats file, cut short.
    let out = Command::new("python3")
        .arg("-c")
        .arg("import cProfile,sys; p=cProfile.Profile(); p.enable(); sum(range(9)); p.disable(); p.dump_stats(sys.argv[1])")
        .arg(&cut)
        .output()
        .expect("python3");
    assert!(out.status.success());
    let data = std::fs::read(&cut).unwrap();
    std::fs::write(&cut, &data[..data.len() / 2]).unwrap();
    let empty_dir = dir.path().join("empty");
    std::fs::create_dir(&empty_dir).unwrap();
    let empty_prof = dir.path().join("empty.prof");
    std::fs::write(&empty_prof, b"{0").unwrap();
    for (input, why) in [
        (cut.to_str().unwrap(), "data ends inside"),
        (dir.path().to_str().unwrap(), "data ends inside"),
        (empty_dir.to_str().unwrap(), "without .prof files"),
        (empty_prof.to_str().unwrap(), "no functions"),
    ] {
        let out = Command::new(BIN).args(["flame", input]).output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{input}: {stderr}");
        assert!(stderr.contains(why), "{input}: {stderr}");
    }
}

/// The pure-Python `profile` module: callers carry call counts only, and
/// the root entry is keyed by a code object, whose repr pstats prints with
/// an address of its own process (left out on both sides here).
#[test]
fn the_profile_module_reads_as_pstats_reads_it() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("small.py");
    std::fs::write(
        &script,
        "def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n\ndef main():\n    for _ in range(3):\n        fib(15)\n\nmain()\n",
    )
    .unwrap();
    let prof = dir.path().join("small.prof");
    let out = Command::new("python3")
        .args(["-m", "profile", "-o"])
        .arg(&prof)
        .arg(&script)
        .output()
        .expect("python3 -m profile");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let theirs = python(PSTATS, &[&prof]);
    let no_address = |l: &str| match l.find(" at 0x") {
        Some(i) => {
            let end = l[i + 6..].find(',').map_or(l.len(), |j| i + 6 + j);
            format!("{}{}", &l[..i], &l[end..])
        }
        None => l.to_owned(),
    };
    for key in ["tottime", "cumtime"] {
        let text = keisoku(&[
            "flame",
            prof.to_str().unwrap(),
            "--sort",
            key,
            "--top",
            "15",
        ]);
        let expected: Vec<String> = theirs[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| no_address(l.as_str().unwrap()))
            .collect();
        assert_eq!(table_rows(&text), expected, "sort {key}:\n{text}");
    }
    let callers = keisoku(&["flame", prof.to_str().unwrap(), "--callers", r"\(fib\)"]);
    assert!(callers.contains("small.py:4(main)"), "{callers}");
}
