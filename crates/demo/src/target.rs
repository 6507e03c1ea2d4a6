//! The demo target as a child process: the keisoku binary run with
//! `demo --target-only`, so a profiler can watch the target alone and
//! keisoku's own load does not count as the target's work.

use crate::Knobs;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

/// How long the child may take to print its URL.
const STARTUP_TIMEOUT: Duration = Duration::from_secs(15);

/// Why the target child could not be started or asked for its counters.
#[derive(Debug, thiserror::Error)]
pub enum TargetError {
    /// The child process could not be spawned.
    #[error("cannot start the demo target: {0}")]
    Spawn(std::io::Error),
    /// The child's stdout was not captured.
    #[error("the demo target has no stdout")]
    NoStdout,
    /// The child did not print a line in time (or its stdout failed).
    #[error("the demo target did not report its address ({0})")]
    NoAddress(String),
    /// The first line was not `http://IP:PORT`.
    #[error("the demo target printed {0:?} instead of its URL")]
    NotUrl(String),
    /// `GET /stats` failed on the socket.
    #[error("reading the target's /stats: {0}")]
    Io(#[from] std::io::Error),
    /// `GET /stats` answered something that is not HTTP with a JSON body.
    #[error("malformed /stats answer: {0}")]
    Stats(String),
}

/// The running demo target.
pub struct TargetProcess {
    child: Child,
    addr: SocketAddr,
    /// `http://IP:PORT`, as the target printed it.
    pub url: String,
}

impl TargetProcess {
    /// Starts `exe demo --target-only` with `knobs` (and `workers` worker
    /// threads when given) on a free loopback port and waits for its URL.
    pub fn spawn(
        exe: &Path,
        knobs: &Knobs,
        workers: Option<usize>,
    ) -> Result<TargetProcess, TargetError> {
        let mut cmd = Command::new(exe);
        cmd.args([
            "demo",
            "--target-only",
            "--listen",
            "127.0.0.1:0",
            "--knobs",
        ])
        .arg(knobs.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit());
        if let Some(w) = workers {
            cmd.arg("--workers").arg(w.to_string());
        }
        // Its own process group: Ctrl-C reaches keisoku alone, which then
        // reads the target's counters before stopping it.
        cmd.process_group(0);
        // SAFETY: the closure runs in the forked child before exec and only
        // calls prctl(2), which is async-signal-safe.
        unsafe {
            cmd.pre_exec(|| {
                // Should keisoku itself be killed, the target must not outlive it.
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let mut child = cmd.spawn().map_err(TargetError::Spawn)?;
        let Some(stdout) = child.stdout.take() else {
            let _ = child.kill();
            let _ = child.wait();
            return Err(TargetError::NoStdout);
        };
        let (tx, rx) = mpsc::channel();
        std::thread::spawn(move || {
            let mut line = String::new();
            let mut reader = BufReader::new(stdout);
            let _ = tx.send(reader.read_line(&mut line).map(|_| line));
            // Keep draining so the target never blocks on a full pipe.
            let mut sink = Vec::new();
            let _ = reader.read_to_end(&mut sink);
        });
        let line = match rx.recv_timeout(STARTUP_TIMEOUT) {
            Ok(Ok(line)) => line,
            other => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(TargetError::NoAddress(match other {
                    Ok(Err(e)) => e.to_string(),
                    _ => "timed out".into(),
                }));
            }
        };
        let url = line.trim().to_string();
        let addr: SocketAddr = match url.strip_prefix("http://").and_then(|a| a.parse().ok()) {
            Some(a) => a,
            None => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(TargetError::NotUrl(url));
            }
        };
        Ok(TargetProcess { child, addr, url })
    }

    /// The child's process id (what the recorder and perf watch).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the target has exited on its own (and how).
    pub fn exited(&mut self) -> std::io::Result<Option<ExitStatus>> {
        self.child.try_wait()
    }

    /// The target's `GET /stats` counters.
    pub fn stats(&self) -> Result<serde_json::Value, TargetError> {
        let mut s = TcpStream::connect_timeout(&self.addr, Duration::from_secs(2))?;
        s.set_read_timeout(Some(Duration::from_secs(5)))?;
        s.write_all(b"GET /stats HTTP/1.1\r\nHost: demo\r\nConnection: close\r\n\r\n")?;
        let mut text = String::new();
        s.read_to_string(&mut text)?;
        let body = text
            .split_once("\r\n\r\n")
            .map(|(_, b)| b)
            .ok_or_else(|| TargetError::Stats("no body".into()))?;
        serde_json::from_str(body).map_err(|e| TargetError::Stats(e.to_string()))
    }

    /// SIGTERM, then SIGKILL if it has not exited within 5 s.
    pub fn stop(mut self) {
        self.terminate();
    }

    fn terminate(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: kill(2) on our own child's pid; it is not reaped yet, so the pid is still ours.
            unsafe {
                libc::kill(pid, libc::SIGTERM);
            }
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for TargetProcess {
    fn drop(&mut self) {
        self.terminate();
    }
}
