//! The server `keisoku run --server-cmd` starts: launched with `sh -c` in
//! its own process group, its output kept in the store, waited for until
//! the target accepts connections, stopped with TERM then KILL.

use keisoku_store::Store;
use std::io::Read;
use std::net::{SocketAddr, TcpStream};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
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
