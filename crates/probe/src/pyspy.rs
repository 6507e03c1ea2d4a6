//! Drives `py-spy record` for Python servers.
//!
//! py-spy's clock starts when it attaches, so the map to the run's clock is
//! the run time at which py-spy says it samples (`started_run_ns`); that
//! line and its first sample are milliseconds apart, the alignment error.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::child::{die_with_parent, drain, first_line, interrupt, wait_timeout};
use crate::perf::ProfileError;

/// py-spy output formats that keep what crates/stacks needs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PySpyFormat {
    /// speedscope JSON: one sampled profile per thread, `samples` in time
    /// order, each `weights[i]` = 1/rate seconds, `startValue` 0 = attach
    /// time; a sample's time is startValue + the sum of earlier weights.
    Speedscope,
    /// Chrome trace JSON: `B`/`E` events with `ts` in microseconds since
    /// attach (consecutive equal stacks merged into one span).
    Chrometrace,
    /// Folded stacks (`a;b;c count`): no time at all.
    Raw,
}

impl PySpyFormat {
    fn arg(self) -> &'static str {
        match self {
            PySpyFormat::Speedscope => "speedscope",
            PySpyFormat::Chrometrace => "chrometrace",
            PySpyFormat::Raw => "raw",
        }
    }

    fn file_name(self) -> &'static str {
        match self {
            PySpyFormat::Speedscope => "py-spy.speedscope.json",
            PySpyFormat::Chrometrace => "py-spy.trace.json",
            PySpyFormat::Raw => "py-spy.folded",
        }
    }
}

/// How to run py-spy.
#[derive(Clone, Debug)]
pub struct PySpyOptions {
    /// The Python process.
    pub pid: u32,
    /// Samples per second (default 99).
    pub rate: u32,
    /// Output format (default speedscope).
    pub format: PySpyFormat,
    /// Also sample subprocesses (gunicorn/uwsgi workers).
    pub subprocesses: bool,
    /// Include threads that are not on a CPU (blocked in accept, recv,
    /// locks). Off by default so the profile means CPU time, like perf's.
    pub idle: bool,
    /// Put a `thread (0x...)` root frame on each stack (py-spy --threads).
    pub threads: bool,
    /// Read the stacks without stopping the process (py-spy
    /// --nonblocking). On by default: stopping every thread at each
    /// sample wakes the idle ones too (~460 voluntary switches a second
    /// per gunicorn worker at 199 Hz), and on a crowded host each resume
    /// waits for a core (250 ms of run-queue wait a second per worker
    /// using 2% CPU), which the server's own series then show as its
    /// switches and its wait. The price is a rare torn stack.
    pub nonblocking: bool,
    /// Directory for the output file.
    pub output_dir: PathBuf,
    /// The py-spy executable.
    pub py_spy: PathBuf,
    /// The run's clock origin.
    pub origin: Instant,
}

impl PySpyOptions {
    /// 99 Hz, speedscope, subprocesses included, on-CPU samples only,
    /// without stopping the process, `py-spy` from PATH.
    pub fn new(pid: u32, output_dir: impl Into<PathBuf>, origin: Instant) -> PySpyOptions {
        PySpyOptions {
            pid,
            rate: 99,
            format: PySpyFormat::Speedscope,
            subprocesses: true,
            idle: false,
            threads: false,
            nonblocking: true,
            output_dir: output_dir.into(),
            py_spy: PathBuf::from("py-spy"),
            origin,
        }
    }
}

/// A finished py-spy recording.
#[derive(Clone, Debug)]
pub struct PySpyOutput {
    /// The profile file.
    pub path: PathBuf,
    /// Its format.
    pub format: PySpyFormat,
    /// Run time (ns since origin) when py-spy began sampling (when it was
    /// started, if it never said so): add it to the file's relative times
    /// to place samples on the run's clock.
    pub started_run_ns: u64,
    /// Warnings py-spy printed.
    pub notes: Vec<String>,
}

/// A running `py-spy record`.
pub struct PySpyRecorder {
    child: Child,
    stderr: Option<JoinHandle<String>>,
    path: PathBuf,
    format: PySpyFormat,
    started_run_ns: u64,
    stdout: Option<JoinHandle<String>>,
}

const PYSPY_INSTALL_FIX: &str = "pip install py-spy";
const PYSPY_PERMISSION_FIX: &str = "run as root or with CAP_SYS_PTRACE, or `sysctl kernel.yama.ptrace_scope=0`; in Docker add --cap-add SYS_PTRACE";

fn classify(stderr: &str) -> ProfileError {
    let lower = stderr.to_ascii_lowercase();
    if lower.contains("permission denied") || lower.contains("operation not permitted") {
        ProfileError::NotPermitted {
            tool: "py-spy",
            detail: first_line(stderr),
            fix: PYSPY_PERMISSION_FIX,
        }
    } else {
        ProfileError::Failed {
            what: "py-spy record".into(),
            detail: first_line(stderr),
        }
    }
}

impl PySpyRecorder {
    /// Starts py-spy on the process.
    pub fn start(o: PySpyOptions) -> Result<PySpyRecorder, ProfileError> {
        if !crate::process::process_exists(Path::new("/proc"), o.pid) {
            return Err(ProfileError::Failed {
                what: "py-spy record".into(),
                detail: format!("no process with pid {}", o.pid),
            });
        }
        std::fs::create_dir_all(&o.output_dir).map_err(|e| ProfileError::Io {
            what: format!("creating {}", o.output_dir.display()),
            source: e,
        })?;
        let path = o.output_dir.join(o.format.file_name());
        let mut cmd = Command::new(&o.py_spy);
        die_with_parent(&mut cmd);
        cmd.arg("record")
            .arg("--pid")
            .arg(o.pid.to_string())
            .arg("--rate")
            .arg(o.rate.to_string())
            .arg("--format")
            .arg(o.format.arg())
            .arg("--output")
            .arg(&path)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        if o.subprocesses {
            cmd.arg("--subprocesses");
        }
        if o.idle {
            cmd.arg("--idle");
        }
        if o.threads {
            cmd.arg("--threads");
        }
        if o.nonblocking {
            cmd.arg("--nonblocking");
        }
        let started_run_ns = u64::try_from(o.origin.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let mut child = cmd.spawn().map_err(|e| {
            if e.kind() == std::io::ErrorKind::NotFound {
                ProfileError::ToolMissing {
                    tool: "py-spy",
                    detail: format!("{} not found in PATH", o.py_spy.display()),
                    fix: PYSPY_INSTALL_FIX,
                }
            } else {
                ProfileError::Io {
                    what: format!("starting {}", o.py_spy.display()),
                    source: e,
                }
            }
        })?;
        let stderr = child.stderr.take().map(|e| drain(e, None));
        // py-spy says on stdout when it samples; stopping it before that
        // (a busy machine can take seconds to attach) leaves no file.
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let stdout = child
            .stdout
            .take()
            .map(|out| drain(out, Some((ready_tx, "Sampling process"))));
        let mut rec = PySpyRecorder {
            child,
            stderr,
            stdout,
            path,
            format: o.format,
            started_run_ns,
        };
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            if ready_rx.recv_timeout(Duration::from_millis(20)).is_ok() {
                // Its first sample follows: the start of its time line.
                rec.started_run_ns =
                    u64::try_from(o.origin.elapsed().as_nanos()).unwrap_or(u64::MAX);
                break;
            }
            // py-spy exits at once when it cannot attach (not Python, no
            // permission, an interpreter still starting).
            if let Some(status) = wait_timeout(&mut rec.child, Duration::ZERO) {
                if !status.success() {
                    let text = rec
                        .stderr
                        .take()
                        .and_then(|h| h.join().ok())
                        .unwrap_or_default();
                    return Err(classify(&text));
                }
                break;
            }
            if Instant::now() >= until {
                break;
            }
        }
        Ok(rec)
    }

    /// Stops py-spy with SIGINT; it then writes the file.
    pub fn stop(mut self) -> Result<PySpyOutput, ProfileError> {
        interrupt(&mut self.child, Duration::from_secs(30));
        if let Some(h) = self.stdout.take() {
            let _ = h.join();
        }
        let stderr = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        if !file_nonempty(&self.path) {
            return Err(ProfileError::Failed {
                what: "py-spy record".into(),
                detail: format!(
                    "no profile written to {} ({})",
                    self.path.display(),
                    first_line(&stderr)
                ),
            });
        }
        let notes = stderr
            .lines()
            .map(str::trim)
            .filter(|l| l.contains("Warning") || l.contains("rror"))
            .map(|l| format!("py-spy: {l}"))
            .collect();
        Ok(PySpyOutput {
            path: self.path.clone(),
            format: self.format,
            started_run_ns: self.started_run_ns,
            notes,
        })
    }
}

impl Drop for PySpyRecorder {
    fn drop(&mut self) {
        interrupt(&mut self.child, Duration::from_secs(5));
    }
}

fn file_nonempty(p: &Path) -> bool {
    std::fs::metadata(p).is_ok_and(|m| m.len() > 0)
}
