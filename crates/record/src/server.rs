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
    /// The process that kills the server's group when keisoku dies.
    keeper: Option<Child>,
}

impl Server {
    /// Starts `cmd` with `sh -c`; its stdout/stderr go to the run's
    /// `server.stdout` / `server.stderr` streams as they arrive.
    ///
    /// The server never outlives keisoku: `sh` gets SIGKILL when keisoku
    /// dies (parent-death signal), and a keeper process kills the server's
    /// whole process group (workers included, which the parent-death signal
    /// does not reach) once keisoku's end of its stdin closes, which the
    /// kernel does even on `kill -9`.
    pub fn start(cmd: &str, store_path: PathBuf, run: String) -> std::io::Result<Server> {
        let mut child = keisoku_probe::die_with_parent(&mut Command::new("sh"))
            .arg("-c")
            .arg(cmd)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            // Its own group, so TERM reaches the whole tree (workers, children).
            .process_group(0)
            .spawn()?;
        let keeper = match group_keeper(child.id()) {
            Ok(k) => Some(k),
            Err(e) => {
                // SAFETY: signals only the process group just created.
                unsafe { libc::kill(-(child.id() as i32), libc::SIGKILL) };
                let _ = child.wait();
                return Err(e);
            }
        };
        let mut pumps = Vec::new();
        if let Some(out) = child.stdout.take() {
            pumps.push(pump(out, "server.stdout", store_path.clone(), run.clone()));
        }
        if let Some(err) = child.stderr.take() {
            pumps.push(pump(err, "server.stderr", store_path, run));
        }
        Ok(Server {
            child,
            pumps,
            keeper,
        })
    }

    /// The process id of the `sh -c` (the root of the server's tree).
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// Whether the server has exited (and how).
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// Waits until `addr` accepts a TCP connection, the server exits,
    /// `timeout` passes or `stop` is set (Ctrl-C).
    pub fn wait_ready(
        &mut self,
        addr: SocketAddr,
        timeout: Duration,
        stop: &AtomicBool,
    ) -> Result<(), String> {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(status) = self.exited() {
                return Err(format!("the server exited before it answered ({status})"));
            }
            if stop.load(Ordering::SeqCst) {
                return Err(
                    "interrupted while waiting for the server to accept connections".into(),
                );
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
        self.release_keeper();
        for p in self.pumps.drain(..) {
            let _ = p.join();
        }
        status
    }

    /// Lets the keeper go once the group is gone: closing its stdin makes
    /// it signal an empty group and exit.
    fn release_keeper(&mut self) {
        if let Some(mut k) = self.keeper.take() {
            drop(k.stdin.take());
            let _ = k.wait();
        }
    }
}

/// Starts the keeper of the server's process group `pgid`: a shell that
/// joins the group (which a terminal's Ctrl-C does not reach: it is not
/// the foreground group), ignores the polite signals (TERM is how the
/// server is asked to stop), waits for end-of-file on its stdin (a pipe
/// only keisoku writes to) and then SIGKILLs its whole group, itself
/// included. A normal stop KILLs the group first, keeper and all.
fn group_keeper(pgid: u32) -> std::io::Result<Child> {
    Command::new("sh")
        .arg("-c")
        .arg("trap '' INT TERM HUP QUIT; while read -r _; do :; done; kill -9 0")
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .process_group(pgid as i32)
        .spawn()
}

impl Drop for Server {
    fn drop(&mut self) {
        if self.child.try_wait().ok().flatten().is_none() {
            // SAFETY: signals only the process group this Server created.
            unsafe { libc::kill(-(self.child.id() as i32), libc::SIGKILL) };
            let _ = self.child.wait();
        }
        self.release_keeper();
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
    /// Something already answers on the target's address: loading it would
    /// measure that process, not the one `--server-cmd` starts.
    #[error("{addr} already accepts connections{}; stop it or choose another port (nothing was started or stored)", holder_text(.holder))]
    PortTaken {
        /// The target's address.
        addr: SocketAddr,
        /// The process listening there, when /proc tells.
        holder: Option<PortHolder>,
    },
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

/// The process that listens on a port.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PortHolder {
    /// Its process id.
    pub pid: u32,
    /// Its command line (or command name), shortened.
    pub command: String,
}

fn holder_text(holder: &Option<PortHolder>) -> String {
    match holder {
        Some(h) => format!(" (held by process {}: {})", h.pid, h.command),
        None => " (by a process this user cannot see)".to_string(),
    }
}

/// Whether something already accepts connections on `addr`, and which
/// process listens there: the listening socket's inode from
/// /proc/net/tcp{,6}, then the process with that socket among its open
/// files in /proc/PID/fd.
pub fn port_taken(addr: SocketAddr) -> Option<Option<PortHolder>> {
    TcpStream::connect_timeout(&addr, Duration::from_millis(300)).ok()?;
    Some(port_holder(Path::new("/proc"), addr.port()))
}

/// The process listening on TCP `port` (any address), read from `proc`.
pub fn port_holder(proc: &Path, port: u16) -> Option<PortHolder> {
    let mut inodes = Vec::new();
    for table in ["net/tcp", "net/tcp6"] {
        let Ok(text) = std::fs::read_to_string(proc.join(table)) else {
            continue;
        };
        inodes.extend(listening_inodes(&text, port));
    }
    if inodes.is_empty() {
        return None;
    }
    let wanted: Vec<String> = inodes.iter().map(|i| format!("socket:[{i}]")).collect();
    let mut pids: Vec<u32> = std::fs::read_dir(proc)
        .ok()?
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse().ok())
        .collect();
    pids.sort_unstable();
    for pid in pids {
        let Ok(fds) = std::fs::read_dir(proc.join(format!("{pid}/fd"))) else {
            continue;
        };
        for fd in fds.flatten() {
            let Ok(link) = std::fs::read_link(fd.path()) else {
                continue;
            };
            if wanted.iter().any(|w| link.as_os_str() == w.as_str()) {
                return Some(PortHolder {
                    pid,
                    command: command_of(proc, pid),
                });
            }
        }
    }
    None
}

/// The inodes of sockets listening (state 0A) on `port` in one
/// /proc/net/tcp table.
fn listening_inodes(table: &str, port: u16) -> Vec<u64> {
    table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let f: Vec<&str> = line.split_whitespace().collect();
            let local = f.get(1)?;
            let (_, hex_port) = local.rsplit_once(':')?;
            let p = u16::from_str_radix(hex_port, 16).ok()?;
            (p == port && *f.get(3)? == "0A").then(|| f.get(9)?.parse().ok())?
        })
        .collect()
}

/// A process's command line, NULs as spaces and at most 200 characters,
/// control characters escaped (it is printed on a terminal).
fn command_of(proc: &Path, pid: u32) -> String {
    let raw = std::fs::read(proc.join(format!("{pid}/cmdline"))).unwrap_or_default();
    let mut text: String = String::from_utf8_lossy(&raw)
        .trim_end_matches('\0')
        .replace('\0', " ");
    if text.trim().is_empty() {
        text = std::fs::read_to_string(proc.join(format!("{pid}/comm")))
            .unwrap_or_default()
            .trim()
            .to_string();
    }
    text.chars()
        .take(200)
        .flat_map(|c| {
            if c.is_control() {
                c.escape_default().collect::<Vec<_>>()
            } else {
                vec![c]
            }
        })
        .collect()
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
    ///
    /// When something already answers on `addr`, nothing is started and the
    /// run is removed again ([`ServerError::PortTaken`]).
    pub fn start_server(
        self,
        cmd: &str,
        addr: SocketAddr,
        timeout: Duration,
    ) -> Result<(Recording, Server), ServerError> {
        self.start_server_until(cmd, addr, timeout, &AtomicBool::new(false))
    }

    /// [`Recording::start_server`], giving up the wait when `stop` is set
    /// (Ctrl-C): the server is stopped and the run kept, interrupted.
    pub fn start_server_until(
        mut self,
        cmd: &str,
        addr: SocketAddr,
        timeout: Duration,
        stop: &AtomicBool,
    ) -> Result<(Recording, Server), ServerError> {
        if let Some(holder) = port_taken(addr) {
            self.discard();
            return Err(ServerError::PortTaken { addr, holder });
        }
        let mut server = Server::start(cmd, self.store_path().to_path_buf(), self.run.clone())
            .map_err(ServerError::Spawn)?;
        self.set_pid(server.pid());
        self.start_sampler()?;
        match server.wait_ready(addr, timeout, stop) {
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
    use super::{listening_inodes, port_holder, stderr_tail};
    use std::net::TcpListener;

    #[test]
    fn only_listening_sockets_on_the_port_are_found() {
        let table = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:46A5 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4242 1 0000000000000000 100 0 0 10 0
   1: 0100007F:46A5 0100007F:9C40 01 00000000:00000000 00:00000000 00000000  1000        0 4343 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 4444 1 0000000000000000 100 0 0 10 0
";
        assert_eq!(listening_inodes(table, 0x46A5), vec![4242]);
        assert_eq!(listening_inodes(table, 0x1F90), vec![4444]);
        assert!(listening_inodes(table, 80).is_empty());
        assert!(listening_inodes("garbage\nmore garbage 1 2\n", 80).is_empty());
    }

    #[test]
    fn the_holder_of_a_listening_port_is_this_process() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let holder = port_holder(std::path::Path::new("/proc"), port).expect("found");
        assert_eq!(holder.pid, std::process::id());
        assert!(!holder.command.is_empty());
    }

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
