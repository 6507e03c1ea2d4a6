//! Running profiler processes: bounded waits, SIGINT-then-kill stops and
//! short error lines from their output.

use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::{Child, Command, ExitStatus};
use std::sync::mpsc::Sender;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Makes the child die with keisoku: the kernel sends it SIGKILL when the
/// thread that started it ends (keisoku killed with -9, a panic), so no
/// `perf record`, profiler or user command outlives the recording that
/// needs it. Set between fork and exec, and kept across exec.
///
/// The signal follows the starting *thread*: start long-lived children
/// from a thread that outlives them (the main thread, or the one that
/// waits for them).
pub fn die_with_parent(cmd: &mut Command) -> &mut Command {
    let parent = std::process::id() as libc::pid_t;
    // SAFETY: the closure runs in the forked child before exec and calls
    // only async-signal-safe functions (prctl, getppid, raise).
    unsafe {
        cmd.pre_exec(move || {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL, 0, 0, 0) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            // keisoku died between fork and prctl: the signal will never come.
            if libc::getppid() != parent {
                libc::raise(libc::SIGKILL);
            }
            Ok(())
        })
    }
}

/// Waits up to `limit` for the child to exit.
pub(crate) fn wait_timeout(child: &mut Child, limit: Duration) -> Option<ExitStatus> {
    let until = Instant::now() + limit;
    loop {
        match child.try_wait() {
            Ok(Some(s)) => return Some(s),
            Ok(None) if Instant::now() < until => std::thread::sleep(Duration::from_millis(20)),
            _ => return None,
        }
    }
}

/// Stops a profiler the way it expects (SIGINT makes perf and py-spy write
/// their output), killing it after `grace`. Returns false if it had to be killed.
pub(crate) fn interrupt(child: &mut Child, grace: Duration) -> bool {
    if child.try_wait().ok().flatten().is_none() {
        // SAFETY: signalling our own child by its pid.
        unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGINT) };
    }
    if wait_timeout(child, grace).is_some() {
        return true;
    }
    let _ = child.kill();
    let _ = child.wait();
    false
}

/// The first meaningful line of a tool's error output, shortened.
pub(crate) fn first_line(s: &str) -> String {
    let line = s
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with("Error:"))
        .or_else(|| s.lines().map(str::trim).find(|l| !l.is_empty()))
        .unwrap_or("(no output)");
    line.chars().take(300).collect()
}

/// Collects a child's output on a thread (bounded to 64 KiB); with `ready`,
/// tells it once the output contains `marker`.
pub(crate) fn drain(
    mut r: impl Read + Send + 'static,
    ready: Option<(Sender<()>, &'static str)>,
) -> JoinHandle<String> {
    std::thread::spawn(move || {
        let mut all = Vec::new();
        let mut chunk = [0u8; 4096];
        let mut ready = ready;
        while let Ok(n) = r.read(&mut chunk) {
            if n == 0 {
                break;
            }
            if all.len() < 64 * 1024 {
                all.extend_from_slice(&chunk[..n]);
            }
            if let Some((_, marker)) = &ready {
                if String::from_utf8_lossy(&all).contains(marker) {
                    if let Some((tx, _)) = ready.take() {
                        let _ = tx.send(());
                    }
                }
            }
        }
        String::from_utf8_lossy(&all).into_owned()
    })
}

/// What a bounded run of a helper command produced.
pub(crate) struct Bounded {
    /// None when it ran past its limit and was killed.
    pub(crate) status: Option<ExitStatus>,
    pub(crate) stdout: String,
    pub(crate) stderr: String,
}

/// Runs a short helper (perf evlist, jcmd) with piped output, killing it if
/// it takes longer than `limit`: a hung JVM must not hang the run's end.
pub(crate) fn run_bounded(
    cmd: &mut std::process::Command,
    limit: Duration,
) -> std::io::Result<Bounded> {
    use std::process::Stdio;
    let mut child = die_with_parent(cmd)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()?;
    let out = child.stdout.take().map(|o| drain(o, None));
    let err = child.stderr.take().map(|e| drain(e, None));
    let status = wait_timeout(&mut child, limit);
    if status.is_none() {
        let _ = child.kill();
        let _ = child.wait();
    }
    Ok(Bounded {
        status,
        stdout: out.and_then(|h| h.join().ok()).unwrap_or_default(),
        stderr: err.and_then(|h| h.join().ok()).unwrap_or_default(),
    })
}
