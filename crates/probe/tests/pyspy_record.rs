//! py-spy on a real Python process (py-spy from PyPI: `pip install py-spy`).

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use keisoku_probe::{ProfileError, PySpyFormat, PySpyOptions, PySpyRecorder};

const SERVER: &str = r#"
import time
def kprobe_handler():
    s = 0
    for i in range(20000):
        s += i
    return s
end = time.time() + 20
kprobe_handler()
print("ready", flush=True)
while time.time() < end:
    kprobe_handler()
"#;

#[test]
fn records_python_frames_with_times() {
    let mut py = Command::new("python3")
        .arg("-c")
        .arg(SERVER)
        .stdout(Stdio::piped())
        .spawn()
        .expect("python3 runs");
    // Attach once the interpreter runs the loop: py-spy cannot read a
    // Python that is still starting ("failed to find python version").
    let mut ready = [0u8; 5];
    std::io::Read::read_exact(py.stdout.as_mut().unwrap(), &mut ready).unwrap();
    assert_eq!(&ready, b"ready");
    let dir = tempfile::tempdir().unwrap();
    let origin = Instant::now();
    let rec = PySpyRecorder::start(PySpyOptions::new(py.id(), dir.path(), origin))
        .expect("py-spy attaches (pip install py-spy; root or CAP_SYS_PTRACE)");
    let returned = origin.elapsed();
    std::thread::sleep(Duration::from_millis(1200));
    let out = rec.stop().unwrap();
    let _ = py.kill();
    let _ = py.wait();
    assert_eq!(out.format, PySpyFormat::Speedscope);
    // py-spy's start is stamped on the run's clock, before start() returned
    // (however long a busy machine made that).
    assert!(
        out.started_run_ns > 0 && u128::from(out.started_run_ns) <= returned.as_nanos(),
        "started at {} ns, start() returned at {returned:?}",
        out.started_run_ns
    );
    let text = std::fs::read_to_string(&out.path).unwrap();
    assert!(
        text.contains("\"kprobe_handler\""),
        "{}",
        &text[..text.len().min(500)]
    );
    // speedscope sampled profile: a sample's time = sum of earlier weights.
    assert!(text.contains("\"type\":\"sampled\"") && text.contains("\"weights\""));
}

#[test]
fn a_process_that_is_not_there_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let e = PySpyRecorder::start(PySpyOptions::new(u32::MAX - 3, dir.path(), Instant::now()))
        .err()
        .expect("nothing to attach to");
    assert!(
        matches!(
            e,
            ProfileError::Failed { .. } | ProfileError::NotPermitted { .. }
        ),
        "{e}"
    );
    let mut o = PySpyOptions::new(1, dir.path(), Instant::now());
    o.py_spy = "/nonexistent/py-spy".into();
    let e = PySpyRecorder::start(o).err().expect("no py-spy");
    assert!(e.to_string().contains("pip install py-spy"), "{e}");
}
