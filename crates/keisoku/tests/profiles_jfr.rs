//! JDK Flight Recorder input on a real recording (issue 16): a small Java
//! program compiled with javac at test time, recorded with
//! `jcmd PID JFR.start` + `JFR.dump`, read by keisoku and by the JDK's own
//! `jfr print --json`. Execution samples (per function, per thread and in
//! a time window), allocation samples (bytes) and monitor waits (time)
//! must agree within 1% of the total.

mod common;
use common::{have, wait_for, BIN};

use serde_json::Value;
use std::collections::HashMap;
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::sync::mpsc;
use std::time::Duration;

/// Four kinds of work on named threads: two CPU loops, an allocating
/// loop and two threads fighting over one monitor. It prints `ready`,
/// starts when the file named by its argument appears, works for five
/// seconds, prints `done` and waits for stdin to close.
const PROGRAM: &str = r#"
import java.nio.file.*;
import java.util.*;
public class KeisokuJfr {
    static volatile long sink;
    static final Object lock = new Object();
    static volatile boolean stop;
    static long spin(int n) { long s = 0; for (int i = 0; i < n; i++) s += (i * 31L) ^ (s >>> 3); return s; }
    static long hashy(int n) { long s = 0; for (int i = 0; i < n; i++) s += Long.hashCode(s * 7 + i); return s; }
    static List<int[]> alloc(int n) { List<int[]> l = new ArrayList<>(); for (int i = 0; i < n; i++) l.add(new int[64]); return l; }
    static void locked() { synchronized (lock) { sink += spin(300_000); } }
    static Thread worker(String name, Runnable r) {
        Thread t = new Thread(() -> { while (!stop) r.run(); }, name);
        t.setDaemon(true);
        return t;
    }
    public static void main(String[] a) throws Exception {
        System.out.println("ready");
        Path go = Paths.get(a[0]);
        while (!Files.exists(go)) Thread.sleep(10);
        List<Thread> ts = List.of(
            worker("spinner", () -> sink += spin(1_000_000)),
            worker("hasher", () -> sink += hashy(1_000_000)),
            worker("allocator", () -> sink += alloc(10_000).size()),
            worker("locker-1", KeisokuJfr::locked),
            worker("locker-2", KeisokuJfr::locked));
        for (Thread t : ts) t.start();
        Thread.sleep(5000);
        stop = true;
        for (Thread t : ts) t.join();
        System.out.println("done");
        System.in.read();
    }
}
"#;

fn run(cmd: &mut Command) -> Output {
    let out = cmd.output().expect("start a tool");
    assert!(
        out.status.success(),
        "{cmd:?}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// The two tests run one at a time: each keeps five threads busy, and on
/// a small machine the other's JVM would starve its samples.
static ONE_JVM: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// Kills the JVM when the test ends, however it ends.
struct Jvm(Child);
impl Drop for Jvm {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Compiles the program and starts it with `jvm_args`; returns it and a
/// channel of its output lines.
fn start(dir: &Path, jvm_args: &[&str]) -> (Jvm, mpsc::Receiver<String>) {
    std::fs::write(dir.join("KeisokuJfr.java"), PROGRAM).unwrap();
    run(Command::new("javac")
        .arg("KeisokuJfr.java")
        .current_dir(dir));
    let mut jvm = Jvm(Command::new("java")
        .args(jvm_args)
        .args(["-cp", ".", "KeisokuJfr"])
        .arg(dir.join("go"))
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("start java"));
    let (tx, rx) = mpsc::channel();
    let stdout = jvm.0.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            let _ = tx.send(line);
        }
    });
    (jvm, rx)
}

/// Waits for the line `what` (async-profiler prints its own lines first).
fn expect(rx: &mpsc::Receiver<String>, what: &str) {
    loop {
        let line = rx
            .recv_timeout(Duration::from_secs(60))
            .unwrap_or_else(|_| panic!("the JVM never printed {what:?}"));
        if line == what {
            return;
        }
    }
}

/// Runs the program, records it with jcmd and returns the recording's path.
fn record(dir: &Path) -> PathBuf {
    let (mut jvm, rx) = start(dir, &[]);
    let go = dir.join("go");
    expect(&rx, "ready");
    let pid = jvm.0.id().to_string();
    run(Command::new("jcmd").args([&pid, "JFR.start", "name=keisoku", "settings=profile"]));
    std::fs::write(&go, "").unwrap();
    expect(&rx, "done");
    let rec = dir.join("rec.jfr");
    let dump = format!("filename={}", rec.display());
    run(Command::new("jcmd").args([&pid, "JFR.dump", "name=keisoku", dump.as_str()]));
    let _ = jvm.0.stdin.take().map(|mut s| s.write_all(b"\n"));
    wait_for(Duration::from_secs(10), "the recording file", || {
        rec.metadata().ok().filter(|m| m.len() > 0)
    });
    rec
}

/// `jfr print --json` of one event type, top frames only: the events.
fn jfr_events(rec: &Path, event: &str) -> Vec<Value> {
    let out = run(Command::new("jfr")
        .args(["print", "--json", "--stack-depth", "1", "--events", event])
        .arg(rec));
    let v: Value = serde_json::from_slice(&out.stdout).expect("jfr print --json");
    v["recording"]["events"]
        .as_array()
        .cloned()
        .unwrap_or_default()
}

/// The top frame as keisoku names it: `pkg.Class.method`, or the symbol
/// alone for a native frame whose "class" is its library (async-profiler).
fn top_frame(e: &Value) -> String {
    let m = &e["values"]["stackTrace"]["frames"][0]["method"];
    let class = m["type"]["name"].as_str().unwrap_or("").replace('/', ".");
    let name = m["name"].as_str().unwrap_or("");
    if class.ends_with(".so") || class.contains(".so.") || class.starts_with('[') {
        return name.to_owned();
    }
    format!("{class}.{name}")
}

/// An ISO-8601 instant (`2026-11-24T04:17:59.418220192Z`) as ns since the epoch.
fn instant_ns(s: &str) -> i128 {
    let (date, time) = s.trim_end_matches('Z').split_once('T').unwrap();
    let d: Vec<i64> = date.split('-').map(|x| x.parse().unwrap()).collect();
    // Days from the civil date (Howard Hinnant's algorithm).
    let (y, m) = if d[1] <= 2 {
        (d[0] - 1, d[1] + 9)
    } else {
        (d[0], d[1] - 3)
    };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let doy = (153 * m + 2) / 5 + d[2] - 1;
    let days = era * 146_097 + yoe * 365 + yoe / 4 - yoe / 100 + doy - 719_468;
    let (hms, frac) = time.split_once('.').unwrap_or((time, "0"));
    let t: Vec<i64> = hms.split(':').map(|x| x.parse().unwrap()).collect();
    let ns: i128 = format!("{frac:0<9}")[..9].parse().unwrap();
    (i128::from(days) * 86_400 + i128::from(t[0] * 3600 + t[1] * 60 + t[2])) * 1_000_000_000 + ns
}

/// An ISO-8601 duration as `jfr` prints it (`PT0.197584651S`, `PT1M2.5S`) in ns.
fn duration_ns(s: &str) -> u64 {
    let mut rest = s.strip_prefix("PT").unwrap();
    let mut ns = 0f64;
    for (unit, scale) in [('H', 3600e9), ('M', 60e9), ('S', 1e9)] {
        if let Some((n, r)) = rest.split_once(unit) {
            ns += n.parse::<f64>().unwrap() * scale;
            rest = r;
        }
    }
    ns.round() as u64
}

/// keisoku's folded output: weight per stack line.
fn keisoku_folded(args: &[&str], dir: &Path, name: &str) -> Vec<(Vec<String>, u64)> {
    let out_file = dir.join(name);
    let out = run(Command::new(BIN)
        .args(["flame"])
        .args(args)
        .arg("-o")
        .arg(&out_file));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("kept event "), "{stderr}");
    std::fs::read_to_string(&out_file)
        .unwrap()
        .lines()
        .map(|l| {
            let (stack, n) = l.rsplit_once(' ').unwrap();
            (
                stack.split(';').map(str::to_owned).collect(),
                n.parse().unwrap(),
            )
        })
        .collect()
}

/// Self weight per leaf function and per thread (the folded root).
fn by_leaf_and_thread(
    folded: &[(Vec<String>, u64)],
) -> (HashMap<String, u64>, HashMap<String, u64>) {
    let (mut leaf, mut thread) = (HashMap::new(), HashMap::new());
    for (stack, n) in folded {
        *leaf.entry(stack.last().unwrap().clone()).or_insert(0) += n;
        *thread.entry(stack[0].clone()).or_insert(0) += n;
    }
    (leaf, thread)
}

/// Every key of `theirs` within 1% of `total` in `ours`, and the totals equal.
fn agree(what: &str, ours: &HashMap<String, u64>, theirs: &HashMap<String, u64>) {
    let total: u64 = theirs.values().sum();
    let our_total: u64 = ours.values().sum();
    assert!(total > 0, "{what}: jfr print found nothing");
    assert!(
        our_total.abs_diff(total) * 100 <= total,
        "{what}: keisoku total {our_total}, jfr {total}"
    );
    let mut top: Vec<(&String, &u64)> = theirs.iter().collect();
    top.sort_by(|a, b| b.1.cmp(a.1).then(a.0.cmp(b.0)));
    for (k, &n) in top.iter().take(10) {
        let o = ours.get(*k).copied().unwrap_or(0);
        assert!(
            o.abs_diff(n) * 100 <= total,
            "{what}: {k}: keisoku {o}, jfr {n} (of {total})\nkeisoku: {ours:?}\njfr: {theirs:?}"
        );
    }
}

#[test]
fn a_jcmd_recording_reads_as_jfr_print_reads_it() {
    assert!(
        have("javac") && have("jcmd") && have("jfr"),
        "javac, jcmd and jfr are needed (scripts/setup.sh installs openjdk-17-jdk-headless)"
    );
    let _one = ONE_JVM.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let rec = record(dir.path());
    let rec_s = rec.to_str().unwrap();

    // Execution samples: per top function and per thread.
    let events = jfr_events(&rec, "jdk.ExecutionSample");
    let (mut leaf, mut thread) = (HashMap::new(), HashMap::new());
    for e in &events {
        *leaf.entry(top_frame(e)).or_insert(0u64) += 1;
        // Folded stacks cannot hold spaces: "Attach Listener" roots as "Attach_Listener".
        let t = e["values"]["sampledThread"]["javaName"]
            .as_str()
            .unwrap_or("");
        *thread.entry(t.replace(' ', "_")).or_insert(0u64) += 1;
    }
    assert!(
        events.len() >= 10,
        "only {} execution samples",
        events.len()
    );
    let folded = keisoku_folded(&[rec_s], dir.path(), "cpu.folded");
    let (k_leaf, k_thread) = by_leaf_and_thread(&folded);
    agree("execution samples by function", &k_leaf, &leaf);
    agree("execution samples by thread", &k_thread, &thread);
    // Several chunks (as `jfr assemble` joins a repository's): the file
    // twice over reads as jfr reads it, every sample twice.
    let both = dir.path().join("both.jfr");
    let mut bytes = std::fs::read(&rec).unwrap();
    bytes.extend_from_slice(&bytes.clone());
    std::fs::write(&both, bytes).unwrap();
    let twice = jfr_events(&both, "jdk.ExecutionSample").len() as u64;
    assert_eq!(twice, 2 * events.len() as u64);
    let folded = keisoku_folded(&[both.to_str().unwrap()], dir.path(), "both.folded");
    assert_eq!(folded.iter().map(|(_, n)| n).sum::<u64>(), twice);

    // The thread filter reads JFR's thread names.
    let only = keisoku_folded(&[rec_s, "--comm", "^hasher$"], dir.path(), "hasher.folded");
    let n: u64 = only.iter().map(|(_, n)| n).sum();
    assert_eq!(n, thread["hasher"]);

    // Times: the first second after the first sample, as `scope` cuts it.
    let times: Vec<i128> = events
        .iter()
        .map(|e| instant_ns(e["values"]["startTime"].as_str().unwrap()))
        .collect();
    let t0 = *times.iter().min().unwrap();
    let first = times.iter().filter(|&&t| t - t0 < 1_000_000_000).count() as u64;
    let window = keisoku_folded(&[rec_s, "--from", "0", "--to", "1"], dir.path(), "w.folded");
    let n: u64 = window.iter().map(|(_, n)| n).sum();
    assert!(
        n.abs_diff(first) * 100 <= events.len() as u64,
        "first second: keisoku {n}, jfr {first}"
    );

    // Allocation samples, weighted by bytes.
    let events = jfr_events(&rec, "jdk.ObjectAllocationSample");
    let mut bytes = HashMap::new();
    for e in &events {
        *bytes.entry(top_frame(e)).or_insert(0u64) += e["values"]["weight"].as_u64().unwrap();
    }
    let folded = keisoku_folded(
        &[rec_s, "--event", "jdk.ObjectAllocationSample"],
        dir.path(),
        "alloc.folded",
    );
    agree(
        "allocated bytes by function",
        &by_leaf_and_thread(&folded).0,
        &bytes,
    );

    // Monitor waits, weighted by their duration.
    let events = jfr_events(&rec, "jdk.JavaMonitorEnter");
    let mut waits = HashMap::new();
    for e in &events {
        let d = duration_ns(e["values"]["duration"].as_str().unwrap());
        *waits.entry(top_frame(e)).or_insert(0u64) += d;
    }
    let folded = keisoku_folded(
        &[rec_s, "--event", "JavaMonitorEnter"],
        dir.path(),
        "lock.folded",
    );
    agree(
        "monitor wait time by function",
        &by_leaf_and_thread(&folded).0,
        &waits,
    );
    // `collapse --event` folds the same event as `flame --event` (issue 16).
    let out = run(Command::new(BIN).args(["collapse", rec_s, "--event", "JavaMonitorEnter"]));
    let collapsed: Vec<(Vec<String>, u64)> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let (stack, n) = l.rsplit_once(' ').unwrap();
            (
                stack.split(';').map(str::to_owned).collect(),
                n.parse().unwrap(),
            )
        })
        .collect();
    agree(
        "collapse --event: monitor wait time by function",
        &by_leaf_and_thread(&collapsed).0,
        &waits,
    );

    // An event the recording lacks: exit 2, naming the ones it has.
    let out = Command::new(BIN)
        .args(["flame", rec_s, "--event", "jdk.NoSuchEvent"])
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(
        err.contains("no jdk.NoSuchEvent events") && err.contains("jdk.ExecutionSample ("),
        "{err}"
    );
}

/// async-profiler's library from its Maven Central jar (scripts/setup.sh
/// fetches it with mvn), extracted with the JDK's `jar`.
fn async_profiler(dir: &Path) -> PathBuf {
    let home = std::env::var("HOME").unwrap_or_default();
    let jar = Path::new(&home)
        .join(".m2/repository/tools/profiler/async-profiler/4.2/async-profiler-4.2.jar");
    assert!(
        jar.exists(),
        "{} is missing: scripts/setup.sh fetches it (mvn dependency:get)",
        jar.display()
    );
    let platform = match std::env::consts::ARCH {
        "aarch64" => "linux-arm64",
        _ => "linux-x64",
    };
    let lib = format!("{platform}/libasyncProfiler.so");
    run(Command::new("jar")
        .arg("xf")
        .arg(&jar)
        .arg(&lib)
        .current_dir(dir));
    dir.join(lib)
}

#[test]
fn an_async_profiler_recording_reads_as_jfr_print_reads_it() {
    assert!(
        have("javac") && have("jar") && have("jfr"),
        "javac, jar and jfr are needed (scripts/setup.sh installs openjdk-17-jdk-headless)"
    );
    let _one = ONE_JVM.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let lib = async_profiler(dir.path());
    let rec = dir.path().join("ap.jfr");
    // itimer: perf events may be closed to us; the recording is written
    // when the JVM exits.
    let agent = format!(
        "-agentpath:{}=start,event=itimer,interval=5ms,wall=20ms,alloc,lock=1ms,file={}",
        lib.display(),
        rec.display()
    );
    std::fs::write(dir.path().join("go"), "").unwrap();
    let (mut jvm, rx) = start(dir.path(), &[agent.as_str()]);
    expect(&rx, "done");
    drop(jvm.0.stdin.take());
    wait_for(Duration::from_secs(60), "the JVM to exit", || {
        jvm.0.try_wait().ok().flatten()
    });
    let rec_s = rec.to_str().unwrap();

    let events = jfr_events(&rec, "jdk.ExecutionSample");
    assert!(
        events.len() >= 10,
        "only {} execution samples",
        events.len()
    );
    let (mut leaf, mut thread) = (HashMap::new(), HashMap::new());
    for e in &events {
        *leaf.entry(top_frame(e)).or_insert(0u64) += 1;
        let t = e["values"]["sampledThread"]["javaName"]
            .as_str()
            .or_else(|| e["values"]["sampledThread"]["osName"].as_str())
            .unwrap_or("");
        *thread.entry(t.replace(' ', "_")).or_insert(0u64) += 1;
    }
    let folded = keisoku_folded(&[rec_s], dir.path(), "cpu.folded");
    let (k_leaf, k_thread) = by_leaf_and_thread(&folded);
    agree("async-profiler samples by function", &k_leaf, &leaf);
    agree("async-profiler samples by thread", &k_thread, &thread);

    let events = jfr_events(&rec, "jdk.ObjectAllocationInNewTLAB");
    let mut bytes = HashMap::new();
    for e in &events {
        *bytes.entry(top_frame(e)).or_insert(0u64) += e["values"]["tlabSize"].as_u64().unwrap();
    }
    let folded = keisoku_folded(
        &[rec_s, "--event", "ObjectAllocationInNewTLAB"],
        dir.path(),
        "alloc.folded",
    );
    agree(
        "async-profiler TLAB bytes by function",
        &by_leaf_and_thread(&folded).0,
        &bytes,
    );

    // Wall-clock samples: one event may stand for many samples of an idle thread.
    let events = jfr_events(&rec, "profiler.WallClockSample");
    let mut wall = HashMap::new();
    for e in &events {
        *wall.entry(top_frame(e)).or_insert(0u64) += e["values"]["samples"].as_u64().unwrap();
    }
    let folded = keisoku_folded(
        &[rec_s, "--event", "profiler.WallClockSample"],
        dir.path(),
        "wall.folded",
    );
    agree(
        "async-profiler wall-clock samples by function",
        &by_leaf_and_thread(&folded).0,
        &wall,
    );
}
