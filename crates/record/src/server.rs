//! The server `keisoku run --server-cmd` starts: launched with `sh -c` in
//! its own process group, its output kept in the store, waited for until
//! the target accepts connections, stopped with TERM then KILL; and the
//! watch that ends the load early when the server dies.

use crate::{Finished, Recording};
use keisoku_store::{RunStatus, Store};
use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// A started server.
pub struct Server {
    child: Child,
    pumps: Vec<JoinHandle<()>>,
}

impl Server {
    /// Starts `cmd` with `sh -c`; its stdout/stderr go to the run's
    /// `server.stdout` / `server.stderr` streams as they arrive.
    pub fn start(cmd: &str, store_path: PathBuf, run: String) -> std::io::Result<Server> {
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(cmd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group, so TERM reaches the whole tree (workers, children).
            .process_group(0)
            .spawn()?;
        let mut pumps = Vec::new();
        if let Some(out) = child.stdout.take() {
            pumps.push(pump(out, "server.stdout", store_path.clone(), run.clone()));
        }
        if let Some(err) = child.stderr.take() {
            pumps.push(pump(err, "server.stderr", store_path, run));
        }
        Ok(Server { child, pumps })
    }

    /// The process id of the `sh -c` (the root of the server's tree).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the server has exited (and how).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Waits until `addr` accepts a TCP connection, the server exits, or
    /// `timeout` passes.
    pub fn wait_ready(&mut self, addr: SocketAddr, timeout: Duration) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.exited() {
                return Err(format!("the server exited before it answered ({status})"));
            }
            if TcpStream::connect_timeout(&addr, Duration::from_millis(200)).is_ok() {
                return Ok(());
            }
            if Instant::now() >= deadline {
                return Err(format!(
                    "the server did not accept connections on {addr} within {:.0?}",
                    timeout
                ));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    /// Stops the server: TERM to its process group, KILL after `grace`.
    /// Returns how it ended.
    pub fn stop(mut self, grace: Duration) -> String {
        let pgid = self.child.id() as i32;
        let status = match self.exited() {
            Some(s) => format!("had already exited ({s})"),
            None => {
                // SAFETY: kill(2) with a negative pid signals the group we created.
                unsafe { libc::kill(-pgid, libc::SIGTERM) };
                let deadline = Instant::now() + grace;
                loop {
                    if let Some(s) = self.exited() {
                        break format!("stopped with TERM ({s})");
                    }
                    if Instant::now() >= deadline {
                        // SAFETY: as above.
                        unsafe { libc::kill(-pgid, libc::SIGKILL) };
                        let s = self.child.wait();
                        break format!(
                            "did not stop within {grace:.0?} of TERM; killed ({})",
                            s.map_or_else(|e| e.to_string(), |s| s.to_string())
                        );
                    }
                    std::thread::sleep(Duration::from_millis(20));
                }
            }
        };
        // Stragglers of the group (workers whose parent died first).
        // SAFETY: as above; ESRCH when the group is gone is fine.
        unsafe { libc::kill(-pgid, libc::SIGKILL) };
        for p in self.pumps.drain(..) {
            let _ = p.join();
        }
        status
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            // SAFETY: signals only the process group this Server created.
            unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
            let _ = self.child.wait();
        }
    }
}

fn pump(
    mut from: impl Read + Send + 'static,
    stream: &'static str,
    store_path: PathBuf,
    run: String,
) -> JoinHandle<()> {
    std::thread::spawn(move || {
        let store = Store::open(&store_path).ok();
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match from.read(&mut buf) {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if let Some(s) = &store {
                        let _ = s.append_output(&run, stream, &buf[..n]);
                    }
                }
            }
        }
    })
}

/// How long a server has between TERM and KILL.
pub const STOP_GRACE: Duration = Duration::from_secs(5);

/// Why `run --server-cmd`'s server could not be used.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// `sh -c CMD` could not be started.
    #[error("cannot start the server with sh -c: {0}")]
    Spawn(std::io::Error),
    /// The recording could not start its sampler.
    #[error(transparent)]
    Record(#[from] crate::Error),
    /// The server exited or did not accept connections in time. The run is
    /// kept (with the server's output), marked interrupted.
    #[error("{why}; run {run} kept, marked interrupted{}", stderr_tail(.stderr))]
    NotReady {
        /// What went wrong.
        why: String,
        /// The kept run.
        run: String,
        /// The notes of the finished recording, to show.
        notes: Vec<String>,
        /// What the server wrote to stderr.
        stderr: String,
    },
}

/// `; its stderr ends:` and the last 5 lines, indented; nothing when empty.
fn stderr_tail(stderr: &str) -> String {
    let lines: Vec<&str> = stderr.trim().lines().collect();
    let tail = lines[lines.len().saturating_sub(5)..].join("\n  ");
    if tail.is_empty() {
        String::new()
    } else {
        format!("; its stderr ends:\n  {tail}")
    }
}

impl Recording {
    /// Starts the server with `sh -c cmd`, samples the host and the server
    /// from its start (its start-up belongs to the run's timeline) and waits
    /// until `addr` accepts connections. When it does not, the recording
    /// ends here, kept and marked interrupted ([`ServerError::NotReady`]).
    pub fn start_server(
        mut self,
        cmd: &str,
        addr: SocketAddr,
        timeout: Duration,
    ) -> Result<(Recording, Server), ServerError> {
        let mut server = Server::start(cmd, self.store_path().to_path_buf(), self.run.clone())
            .map_err(ServerError::Spawn)?;
        self.set_pid(server.pid());
        self.start_sampler()?;
        match server.wait_ready(addr, timeout) {
            Ok(()) => {
                self.set_pid(server.pid());
                Ok((self, server))
            }
            Err(why) => {
                self.note(format!("server: {why}"));
                let how = server.stop(STOP_GRACE);
                self.note(format!("server {how}"));
                let store_path = self.store_path().to_path_buf();
                let done = self.finish(RunStatus::Interrupted)?;
                let stderr = Store::open(&store_path)
                    .and_then(|s| s.output(&done.run.run.id, "server.stderr"))
                    .unwrap_or_default();
                Err(ServerError::NotReady {
                    why,
                    run: done.run.run.id,
                    notes: done.notes,
                    stderr: String::from_utf8_lossy(&stderr).into_owned(),
                })
            }
        }
    }
}

impl Finished {
    /// Stops the server once the recording has ended (recorders stop first:
    /// perf maps are written while JITs still run) and adds how it ended to
    /// the run's stored notes and to `notes`.
    pub fn stop_server(&mut self, server: Server, store_path: &Path) {
        let how = format!("server {}", server.stop(STOP_GRACE));
        if let Ok(store) = Store::open(store_path) {
            let _ = store.append_output(&self.run.run.id, "notes", format!("{how}\n").as_bytes());
        }
        self.notes.push(how);
    }
}

/// Watches the server process while the load runs: when it dies, the load
/// is told to stop (the run is then kept, marked interrupted).
pub struct ProcessWatch {
    done: Arc<AtomicBool>,
    died: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl ProcessWatch {
    /// Checks `pid` every 100 ms (nothing to watch when `None`) and sets
    /// `stop` when it is gone.
    pub fn start(pid: Option<u32>, stop: Arc<AtomicBool>) -> ProcessWatch {
        let done = Arc::new(AtomicBool::new(false));
        let died = Arc::new(AtomicBool::new(false));
        let thread = pid.map(|p| {
            let done = Arc::clone(&done);
            let died = Arc::clone(&died);
            std::thread::spawn(move || {
                while !done.load(Ordering::Relaxed) {
                    if !crate::alive(p) {
                        died.store(true, Ordering::SeqCst);
                        stop.store(true, Ordering::SeqCst);
                        break;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            })
        });
        ProcessWatch { done, died, thread }
    }

    /// Stops watching; whether the process died meanwhile.
    pub fn end(mut self) -> bool {
        self.done.store(true, Ordering::Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
        self.died.load(Ordering::SeqCst)
    }
}

#[cfg(test)]
mod tests {
    use super::stderr_tail;

    #[test]
    fn the_stderr_tail_is_its_last_five_lines_indented() {
        assert_eq!(stderr_tail(""), "");
        assert_eq!(stderr_tail("\n  \n"), "");
        assert_eq!(stderr_tail("a\n"), "; its stderr ends:\n  a");
        assert_eq!(
            stderr_tail("1\n2\n3\n4\n5\n6\n"),
            "; its stderr ends:\n  2\n  3\n  4\n  5\n  6"
        );
    }
}
