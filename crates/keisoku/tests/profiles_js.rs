//! JavaScript and JSON profile inputs recorded at test time by the real
//! tools (issue 16): `node --prof` tick logs and their `--prof-process
//! --preprocess` JSON against `node --prof-process`'s own bottom-up
//! profile, `node --cpu-prof` against DevTools' time weighting, a Chrome
//! trace from headless chromium, py-spy's speedscope and raw outputs, and
//! keisoku's own speedscope output against speedscope's schema.

mod common;
use common::have;

use std::collections::HashMap;
use std::path::Path;
use std::process::{Command, Output};

fn keisoku(args: &[&str]) -> Output {
    Command::new(common::BIN)
        .args(args)
        .output()
        .expect("run keisoku")
}

fn ok(o: &Output, what: &str) -> String {
    assert_eq!(
        o.status.code(),
        Some(0),
        "{what}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8_lossy(&o.stdout).into_owned()
}

/// A CPU-bound script: `fib` dominates, `hashy` and `work` follow.
const APP: &str = r#"
function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }
function hashy(s) { let h = 0; for (let i = 0; i < s.length; i++) h = (h * 31 + s.charCodeAt(i)) | 0; return h; }
function work(ms) {
  let t = 0;
  const end = Date.now() + ms;
  while (Date.now() < end) {
    t += fib(20);
    t += hashy(JSON.stringify({ a: t, b: [1, 2, 3] }).repeat(200));
  }
  return t;
}
console.log(work(Number(process.argv[2] || 1500)));
"#;

/// Leaf (self) weight per function name from `keisoku collapse` output.
fn self_by_leaf(folded: &str) -> (HashMap<String, u64>, u64) {
    let mut m: HashMap<String, u64> = HashMap::new();
    let mut total = 0;
    for line in folded.lines() {
        let (stack, n) = line.rsplit_once(' ').expect("a folded line");
        let n: u64 = n.parse().expect("a count");
        let leaf = stack.rsplit(';').next().unwrap_or(stack);
        *m.entry(leaf.to_owned()).or_default() += n;
        total += n;
    }
    (m, total)
}

/// `node --prof-process`'s reading: the total tick count from its header,
/// and the top level of its bottom-up profile for JS functions, summed per
/// function name over tiers (`JS: *fib /x.js:1:13` and `JS: ~fib ...`).
fn prof_process(log: &Path) -> (u64, HashMap<String, u64>) {
    let o = Command::new("node")
        .arg("--prof-process")
        .arg(log)
        .output()
        .expect("run node --prof-process");
    let text = ok(&o, "node --prof-process");
    let header = text.lines().next().unwrap_or_default();
    let total: u64 = header
        .split('(')
        .nth(1)
        .and_then(|s| s.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no tick count in {header:?}"));
    let mut top: HashMap<String, u64> = HashMap::new();
    let mut in_bottom_up = false;
    for line in text.lines() {
        if line.contains("[Bottom up (heavy) profile]") {
            in_bottom_up = true;
            continue;
        }
        if !in_bottom_up {
            continue;
        }
        // "    447   53.7%  JS: *fib /tmp/x/app.js:1:13": two spaces after
        // the percentage at the top level, more below it.
        let t = line.trim_start();
        let Some((ticks, rest)) = t.split_once(char::is_whitespace) else {
            continue;
        };
        let Ok(ticks) = ticks.parse::<u64>() else {
            continue;
        };
        let rest = rest.trim_start();
        let Some((_, name)) = rest.split_once('%') else {
            continue;
        };
        if !name.starts_with("  ") || name.starts_with("   ") {
            continue;
        }
        let Some(js) = name.trim_start().strip_prefix("JS: ") else {
            continue;
        };
        let js = js.trim_start_matches(['~', '*', '^', '+']);
        let func = match js.rsplit_once(' ') {
            Some((f, _)) if !f.is_empty() => f.to_owned(),
            _ => "(anonymous)".to_owned(),
        };
        *top.entry(func).or_default() += ticks;
    }
    (total, top)
}

fn record_prof(dir: &Path) -> std::path::PathBuf {
    std::fs::write(dir.join("app.js"), APP).unwrap();
    let o = Command::new("node")
        .args(["--prof", "app.js", "1500"])
        .current_dir(dir)
        .output()
        .expect("run node --prof");
    ok(&o, "node --prof app.js");
    std::fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok().map(|e| e.path()))
        .find(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("isolate-") && n.ends_with("-v8.log"))
        })
        .expect("node --prof wrote an isolate-*-v8.log")
}

/// Asserts keisoku's self weights agree with `--prof-process` for every
/// JS function it lists at 1% or more, within 1% of all ticks.
fn assert_agrees(what: &str, folded: &str, total: u64, top: &HashMap<String, u64>) {
    let (ours, our_total) = self_by_leaf(folded);
    assert_eq!(our_total, total, "{what}: every tick is one sample");
    let listed: Vec<_> = top.iter().filter(|(_, &n)| n * 100 >= total).collect();
    assert!(
        listed.iter().any(|(f, _)| f.as_str() == "fib"),
        "{what}: --prof-process lists no fib: {top:?}"
    );
    for (f, &n) in listed {
        let got = ours.get(f.as_str()).copied().unwrap_or(0);
        let diff = (got as f64 - n as f64).abs() / total as f64;
        assert!(
            diff <= 0.01,
            "{what}: {f}: keisoku {got} ticks, --prof-process {n} of {total}"
        );
    }
}

#[test]
fn node_prof_tick_logs_and_their_preprocessed_json_agree_with_prof_process() {
    assert!(have("node"), "node is required: run scripts/setup.sh");
    let dir = tempfile::tempdir().unwrap();
    let log = record_prof(dir.path());
    let (total, top) = prof_process(&log);
    let log_s = log.to_str().unwrap();

    // The tick log, detected by content.
    let folded = ok(&keisoku(&["collapse", log_s]), "collapse isolate log");
    assert_agrees("tick log", &folded, total, &top);
    // Native frames are named from node's own symbols: some C++ frame of
    // V8 shows up (node's binary is not stripped on the test machines).
    assert!(
        folded.contains("v8::internal::"),
        "no V8 C++ frame named in:\n{}",
        &folded[..folded.len().min(2000)]
    );
    // Per-tick times: scope draws a heat map.
    let heat = dir.path().join("heat.html");
    ok(
        &keisoku(&["scope", log_s, "-o", heat.to_str().unwrap()]),
        "scope isolate log",
    );

    // The preprocessed JSON of the same log.
    let pre = dir.path().join("pre.json");
    let o = Command::new("node")
        .args(["--prof-process", "--preprocess"])
        .arg(&log)
        .output()
        .expect("run node --prof-process --preprocess");
    std::fs::write(&pre, ok(&o, "--preprocess")).unwrap();
    let folded = ok(
        &keisoku(&["collapse", pre.to_str().unwrap()]),
        "collapse preprocessed JSON",
    );
    assert_agrees("preprocessed JSON", &folded, total, &top);

    // A log cut before its first tick is recognised and says it has none.
    let text = std::fs::read_to_string(&log).unwrap();
    let head: String = text
        .lines()
        .take_while(|l| !l.starts_with("tick,"))
        .map(|l| format!("{l}\n"))
        .collect();
    let cut = dir.path().join("isolate-cut-v8.log");
    std::fs::write(&cut, head).unwrap();
    let o = keisoku(&["flame", cut.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&o.stderr).contains("no tick lines"),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
}

/// Self time per function name of a V8 CPU profile as DevTools reads it:
/// sample i lasts until sample i+1, the last until `endTime`.
fn devtools_self_times(doc: &serde_json::Value) -> (HashMap<String, f64>, f64) {
    let names: HashMap<u64, String> = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let f = n["callFrame"]["functionName"].as_str().unwrap_or_default();
            let f = if f.is_empty() { "(anonymous)" } else { f };
            (n["id"].as_u64().unwrap(), f.to_owned())
        })
        .collect();
    let mut t = doc["startTime"].as_f64().unwrap();
    let times: Vec<f64> = doc["timeDeltas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            t += d.as_f64().unwrap();
            t
        })
        .collect();
    let end = doc["endTime"].as_f64().unwrap();
    let mut m: HashMap<String, f64> = HashMap::new();
    let mut total = 0.0;
    for (i, s) in doc["samples"].as_array().unwrap().iter().enumerate() {
        let name = &names[&s.as_u64().unwrap()];
        if name == "(root)" {
            continue;
        }
        let d = (times.get(i + 1).copied().unwrap_or(end) - times[i]).max(0.0);
        *m.entry(name.clone()).or_default() += d;
        total += d;
    }
    (m, total)
}

#[test]
fn node_cpu_prof_is_weighted_by_time_as_devtools_reads_it() {
    assert!(have("node"), "node is required: run scripts/setup.sh");
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("app.js"), APP).unwrap();
    let o = Command::new("node")
        .args([
            "--cpu-prof",
            "--cpu-prof-name",
            "app.cpuprofile",
            "app.js",
            "1500",
        ])
        .current_dir(dir.path())
        .output()
        .expect("run node --cpu-prof");
    ok(&o, "node --cpu-prof");
    let path = dir.path().join("app.cpuprofile");
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&path).unwrap()).unwrap();
    let (want, total) = devtools_self_times(&doc);
    let folded = ok(&keisoku(&["collapse", path.to_str().unwrap()]), "collapse");
    let (ours, our_total) = self_by_leaf(&folded);
    // Weights are nanoseconds; the document's times are microseconds.
    let our_total = our_total as f64 / 1000.0;
    assert!(
        (our_total - total).abs() / total < 0.001,
        "total {our_total} µs vs {total} µs"
    );
    let mut listed = 0;
    for (f, &us) in want.iter().filter(|(_, &us)| us >= total * 0.01) {
        let got = ours.get(f).copied().unwrap_or(0) as f64 / 1000.0;
        assert!(
            (got - us).abs() / total <= 0.01,
            "{f}: keisoku {got} µs, DevTools {us} µs of {total}"
        );
        listed += 1;
    }
    assert!(listed >= 2 && want.contains_key("fib"), "{want:?}");
}

#[test]
fn chrome_trace_from_headless_chromium_is_read_per_thread() {
    assert!(
        have("chromium"),
        "chromium is required: run scripts/setup.sh"
    );
    let dir = tempfile::tempdir().unwrap();
    let page = dir.path().join("page.html");
    std::fs::write(
        &page,
        "<html><body><script>\n\
         function fib(n) { return n < 2 ? n : fib(n - 1) + fib(n - 2); }\n\
         function spin() { const end = performance.now() + 1500; let t = 0; while (performance.now() < end) t += fib(18); return t; }\n\
         document.title = String(spin());\n\
         </script></body></html>\n",
    )
    .unwrap();
    let trace = dir.path().join("trace.json");
    let o = Command::new("chromium")
        .args([
            "--headless=old",
            "--no-sandbox",
            "--disable-gpu",
            "--trace-startup=-*,disabled-by-default-v8.cpu_profiler",
            "--trace-startup-format=json",
            "--trace-startup-duration=0",
            "--dump-dom",
        ])
        .arg(format!(
            "--user-data-dir={}",
            dir.path().join("ud").display()
        ))
        .arg(format!("--trace-startup-file={}", trace.display()))
        .arg(format!("file://{}", page.display()))
        .output()
        .expect("run chromium");
    assert!(
        o.status.success(),
        "chromium: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    // The oracle: each profile's chunks joined and weighed as DevTools does.
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let mut joined: HashMap<(i64, String), serde_json::Value> = HashMap::new();
    for e in doc["traceEvents"].as_array().unwrap() {
        let key = (
            e["pid"].as_i64().unwrap_or(0),
            e["id"].as_str().unwrap_or_default().to_owned(),
        );
        let p = joined.entry(key).or_insert_with(|| {
            serde_json::json!({"nodes": [], "samples": [], "timeDeltas": [], "startTime": 0.0, "endTime": null})
        });
        match e["name"].as_str() {
            Some("Profile") => p["startTime"] = e["args"]["data"]["startTime"].clone(),
            Some("ProfileChunk") => {
                let d = &e["args"]["data"];
                for (k, v) in [
                    ("nodes", &d["cpuProfile"]["nodes"]),
                    ("samples", &d["cpuProfile"]["samples"]),
                    ("timeDeltas", &d["timeDeltas"]),
                ] {
                    if let Some(a) = v.as_array() {
                        p[k].as_array_mut().unwrap().extend(a.iter().cloned());
                    }
                }
                if !d["endTime"].is_null() {
                    p["endTime"] = d["endTime"].clone();
                }
            }
            _ => {}
        }
    }
    let mut want_fib = 0.0;
    let mut want_total = 0.0;
    for p in joined.values_mut() {
        if p["samples"].as_array().unwrap().is_empty() {
            continue;
        }
        if p["endTime"].is_null() {
            // No end: the last sample lasts nothing, as keisoku reads it.
            let mut t = p["startTime"].as_f64().unwrap();
            for d in p["timeDeltas"].as_array().unwrap() {
                t += d.as_f64().unwrap();
            }
            p["endTime"] = serde_json::json!(t);
        }
        let (m, total) = devtools_self_times(p);
        want_fib += m.get("fib").copied().unwrap_or(0.0);
        want_total += total;
    }
    assert!(
        want_fib > 0.2 * want_total,
        "fib {want_fib} of {want_total}"
    );
    let folded = ok(
        &keisoku(&["collapse", trace.to_str().unwrap()]),
        "collapse trace",
    );
    let (ours, our_total) = self_by_leaf(&folded);
    let fib = ours.get("fib").copied().unwrap_or(0) as f64 / 1000.0;
    let our_total = our_total as f64 / 1000.0;
    assert!(
        (our_total - want_total).abs() / want_total < 0.001,
        "{our_total} vs {want_total}"
    );
    assert!(
        (fib - want_fib).abs() / want_total <= 0.01,
        "fib: keisoku {fib} µs, DevTools {want_fib} µs of {want_total}"
    );
    // The renderer's main thread is named by the trace's metadata.
    let o = keisoku(&["flame", trace.to_str().unwrap(), "--comm", "CrRendererMain"]);
    assert!(ok(&o, "flame --comm").contains("fib"));
}

const PY: &str = r#"
import threading, time
def leaf_a():
    s = 0
    for i in range(20000):
        s += i * i
    return s
def worker():
    end = time.time() + 1.5
    while time.time() < end:
        leaf_a()
def main():
    t = threading.Thread(target=worker, name="worker")
    t.start()
    end = time.time() + 1.5
    x = 0
    while time.time() < end:
        x += sum(range(1000))
    t.join()
main()
"#;

/// Non-empty stacks of a speedscope file per profile, `root;...;leaf`.
fn speedscope_stacks(doc: &serde_json::Value) -> Vec<Vec<String>> {
    let frames = doc["shared"]["frames"].as_array().unwrap();
    doc["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| {
            p["samples"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| {
                    s.as_array()
                        .unwrap()
                        .iter()
                        .map(|i| {
                            frames[i.as_u64().unwrap() as usize]["name"]
                                .as_str()
                                .unwrap()
                        })
                        .collect::<Vec<_>>()
                        .join(";")
                })
                .filter(|s| !s.is_empty())
                .collect()
        })
        .collect()
}

#[test]
fn py_spy_speedscope_and_raw_outputs_are_read_whole() {
    assert!(
        have("py-spy") && have("python3"),
        "py-spy is required: run scripts/setup.sh"
    );
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("app.py"), PY).unwrap();
    let ss = dir.path().join("py.speedscope.json");
    let raw = dir.path().join("py.raw.txt");
    for (format, out) in [("speedscope", &ss), ("raw", &raw)] {
        let o = Command::new("py-spy")
            .args(["record", "--rate", "200", "--format", format, "-o"])
            .arg(out)
            .args(["--", "python3", "app.py"])
            .current_dir(dir.path())
            .output()
            .expect("run py-spy");
        assert!(
            o.status.success(),
            "py-spy {format}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }
    // speedscope: every profile (thread) in the file, every sample.
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&ss).unwrap()).unwrap();
    let per_profile = speedscope_stacks(&doc);
    assert!(
        per_profile.len() >= 2,
        "py-spy wrote {} profiles",
        per_profile.len()
    );
    let mut want: HashMap<String, u64> = HashMap::new();
    for s in per_profile.iter().flatten() {
        *want.entry(s.clone()).or_default() += 1;
    }
    let folded = ok(
        &keisoku(&["collapse", ss.to_str().unwrap()]),
        "collapse speedscope",
    );
    let mut got: HashMap<String, u64> = HashMap::new();
    for l in folded.lines() {
        let (s, n) = l.rsplit_once(' ').unwrap();
        *got.entry(s.to_owned()).or_default() += n.parse::<u64>().unwrap();
    }
    assert_eq!(got, want);
    assert!(got.keys().any(|k| k.contains("leaf_a")));
    // `--comm` selects a speedscope profile by its name. py-spy names the
    // thread `Thread TID "worker"`, but on a busy host it sometimes cannot
    // read the Python name in time and writes `Thread TID ""`: select the
    // profile that ran leaf_a by its thread id, which it always writes.
    let names: Vec<&str> = doc["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["name"].as_str().unwrap_or_default())
        .collect();
    let (worker, _) = names
        .iter()
        .zip(&per_profile)
        .max_by_key(|(_, stacks)| stacks.iter().filter(|s| s.contains("leaf_a")).count())
        .unwrap();
    let tid = worker
        .split_whitespace()
        .take(2)
        .collect::<Vec<_>>()
        .join(" ");
    assert!(tid.starts_with("Thread "), "py-spy profile name {worker:?}");
    let o = keisoku(&["flame", ss.to_str().unwrap(), "--comm", &format!("^{tid} ")]);
    assert!(ok(&o, "flame --comm").contains("leaf_a"));
    let o = keisoku(&["flame", ss.to_str().unwrap(), "--comm", "^no such thread$"]);
    assert_ne!(
        o.status.code(),
        Some(0),
        "--comm matching nothing must fail"
    );
    // raw is folded stacks: read as they are. A line with no frames
    // (" 7": threads py-spy saw idle in native code) names nothing and
    // is reported as skipped, as the empty speedscope samples above are.
    let text = std::fs::read_to_string(&raw).unwrap();
    let mut want: Vec<String> = text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with(' '))
        .map(str::to_owned)
        .collect();
    want.sort();
    let folded = ok(
        &keisoku(&["collapse", raw.to_str().unwrap()]),
        "collapse raw",
    );
    let mut got: Vec<String> = folded.lines().map(str::to_owned).collect();
    got.sort();
    let sum = |v: &[String]| -> u64 {
        v.iter()
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum()
    };
    assert_eq!(sum(&got), sum(&want));
    assert!(got.iter().any(|l| l.contains("leaf_a")));
}

/// speedscope's schema from its npm package, where scripts/setup.sh
/// installed it with ajv.
fn speedscope_validator() -> Option<std::path::PathBuf> {
    let home = std::env::var_os("HOME")?;
    let dir = Path::new(&home).join(".cache/keisoku-tools/speedscope");
    dir.join("node_modules/speedscope/dist/release/file-format-schema.json")
        .exists()
        .then_some(dir)
}

#[test]
fn flame_writes_speedscope_files_that_the_schema_accepts_and_that_read_back() {
    let data = |n: &str| format!("{}/../stacks/tests/data/{n}", env!("CARGO_MANIFEST_DIR"));
    let dir = tempfile::tempdir().unwrap();
    let tools = speedscope_validator();
    for input in ["node.cpuprofile.gz", "py-spy.speedscope.json", "go.pprof"] {
        let out = dir.path().join(format!("{input}.speedscope.json"));
        let out_s = out.to_str().unwrap();
        ok(&keisoku(&["flame", &data(input), "-o", out_s]), input);
        let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(&out).unwrap()).unwrap();
        assert_eq!(
            doc["$schema"],
            "https://www.speedscope.app/file-format-schema.json"
        );
        // Read back: the same stacks with the same shares (equal weights
        // read back as sample counts).
        let a = ok(&keisoku(&["collapse", &data(input)]), input);
        let b = ok(&keisoku(&["collapse", out_s]), out_s);
        let norm = |t: &str| {
            let mut m: HashMap<String, f64> = HashMap::new();
            let mut total = 0.0;
            for l in t.lines() {
                let (s, n) = l.rsplit_once(' ').unwrap();
                let n = n.parse::<f64>().unwrap();
                *m.entry(s.to_owned()).or_default() += n;
                total += n;
            }
            m.values_mut().for_each(|v| *v /= total);
            m
        };
        let (a, b) = (norm(&a), norm(&b));
        assert_eq!(a.len(), b.len(), "{input}");
        for (s, share) in &a {
            let back = b.get(s).copied().unwrap_or(-1.0);
            assert!(
                (share - back).abs() < 1e-9,
                "{input}: {s}: {share} vs {back}"
            );
        }
        if let Some(tools) = &tools {
            let script = r#"
const Ajv = require('ajv');
const schema = require('speedscope/dist/release/file-format-schema.json');
const doc = JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8'));
const ajv = new Ajv({ strict: false });
const validate = ajv.compile(schema);
if (!validate(doc)) { console.error(JSON.stringify(validate.errors)); process.exit(1); }
"#;
            let o = Command::new("node")
                .args(["-e", script, out_s])
                .current_dir(tools)
                .output()
                .expect("run node");
            assert!(
                o.status.success(),
                "{input}: speedscope's schema rejects the file: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        } else {
            eprintln!(
                "speedscope's schema not installed (scripts/setup.sh): checked the read-back only"
            );
        }
    }
}
