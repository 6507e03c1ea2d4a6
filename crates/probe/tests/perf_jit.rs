//! JIT runtimes under perf: a Node server with --perf-basic-prof and a JVM
//! (perf map written by `jcmd PID Compiler.perfmap`) show their handler by
//! name; a Node server without the flag gets the hint.

use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use keisoku_probe::{PerfOptions, PerfRecorder, PerfTarget};

const NODE_SERVER: &str =
    "function kprobeHandler(n) { let s = 0; for (let i = 0; i < n; i++) { s += i % 7 } return s }
const end = Date.now() + 30000;
let runs = 0;
(function loop() { if (Date.now() < end) { kprobeHandler(200000); if (++runs === 50) console.log('ready'); setImmediate(loop) } })();
";

fn node(flags: &[&str]) -> (Child, tempfile::TempDir) {
    let dir = tempfile::tempdir().unwrap();
    let js = dir.path().join("kprobe-server.js");
    std::fs::write(&js, NODE_SERVER).unwrap();
    let child = Command::new("node")
        .args(flags)
        .arg(&js)
        .stdout(Stdio::piped())
        .spawn()
        .expect("node runs");
    (child, dir)
}

/// Waits until the server says it is running its hot loop (compiled by
/// then), however long a busy machine takes to get it there.
fn wait_ready(child: &mut Child) {
    let mut stdout = child.stdout.take().expect("stdout piped");
    let mut first = [0u8; 5];
    std::io::Read::read_exact(&mut stdout, &mut first).unwrap();
    assert_eq!(&first, b"ready");
}

fn record(pid: u32, ms: u64) -> (String, Vec<String>) {
    let dir = tempfile::tempdir().unwrap();
    let mut o = PerfOptions::new(PerfTarget::Pids(vec![pid]), dir.path(), Instant::now());
    o.hz = 199;
    let rec = PerfRecorder::start(o).expect("perf record starts");
    std::thread::sleep(Duration::from_millis(ms));
    let out = rec.stop().unwrap();
    let script = std::fs::read_to_string(&out.script_path).unwrap();
    let notes = out.notes;
    (script, notes)
}

fn stop(mut c: Child) {
    let _ = c.kill();
    let _ = c.wait();
}

#[test]
fn node_with_perf_basic_prof_shows_its_function() {
    // Without inlining, TurboFan keeps the handler a frame of its own (it
    // would otherwise be folded into its caller, as in any JIT).
    let (mut node, _dir) = node(&["--perf-basic-prof", "--no-turbo-inlining"]);
    wait_ready(&mut node);
    let pid = node.id();
    let (script, notes) = record(pid, 1500);
    stop(node);
    let _ = std::fs::remove_file(format!("/tmp/perf-{pid}.map"));
    assert!(
        script.contains("kprobeHandler"),
        "no JS frame named kprobeHandler; notes {notes:?}\n{}",
        &script[..script.len().min(1500)]
    );
    assert!(
        !notes.iter().any(|n| n.contains("--perf-basic-prof")),
        "{notes:?}"
    );
}

#[test]
fn node_without_the_flag_gets_the_hint() {
    let (mut node, _dir) = node(&[]);
    wait_ready(&mut node);
    let (_, notes) = record(node.id(), 300);
    stop(node);
    assert!(
        notes.iter().any(|n| n.contains("--perf-basic-prof")),
        "{notes:?}"
    );
}

#[test]
fn jvm_handler_is_named_through_jcmd_perfmap() {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("KprobeServer.java");
    std::fs::write(
        &src,
        "public class KprobeServer {\n\
           static long kprobeHandler(int n) { long s = 0; for (int i = 0; i < n; i++) { s += i % 7; } return s; }\n\
           public static void main(String[] a) { long end = System.currentTimeMillis() + 60000; long t = 0;\n\
             System.out.println(\"ready\");\n\
             while (System.currentTimeMillis() < end) { t += kprobeHandler(100000); }\n\
             System.out.println(t); }\n\
         }\n",
    )
    .unwrap();
    let mut java = Command::new("java")
        .arg("-XX:+PreserveFramePointer")
        .arg(&src)
        .stdout(Stdio::piped())
        .spawn()
        .expect("java runs");
    // Wait for the JVM to compile and start the class.
    wait_ready(&mut java);
    let pid = java.id();
    let (script, notes) = record(pid, 2000);
    stop(java);
    let map = format!("/tmp/perf-{pid}.map");
    let had_map = std::path::Path::new(&map).exists();
    let _ = std::fs::remove_file(&map);
    assert!(had_map, "jcmd wrote no perf map; notes {notes:?}");
    // The JVM runs with -XX:+PreserveFramePointer: the hint to add it would
    // be wrong (issue 14), so no note may name it.
    assert!(
        !notes.iter().any(|n| n.contains("PreserveFramePointer")),
        "{notes:?}"
    );
    assert!(
        script.contains("kprobeHandler"),
        "no Java frame named kprobeHandler; notes {notes:?}"
    );
}
