//! The bid server's access log, in the two shapes of the field notes' §1:
//! logback's synchronous appender whose rollover copies and compresses the
//! active file while every logging call waits on its lock, and the fix, a
//! queued appender that rolls by rename and compresses off the request path.

use std::fs::{self, File, OpenOptions};
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Instant;

use flate2::write::GzEncoder;
use flate2::Compression;

use crate::stats::Counters;
use crate::DemoError;

/// Rolled archives kept on disk; older ones are deleted so the demo's disk use stays bounded.
const KEEP_ARCHIVES: u64 = 2;

/// Where the log lives and when it rolls.
#[derive(Debug, Clone)]
pub(crate) struct LogPlan {
    pub dir: PathBuf,
    pub roll_bytes: u64,
}

impl LogPlan {
    fn active(&self) -> PathBuf {
        self.dir.join("access.log")
    }
    fn archive(&self, generation: u64) -> PathBuf {
        self.dir.join(format!("access.{generation}.log"))
    }
}

/// The access log, synchronous or queued.
pub(crate) enum AccessLog {
    Sync(SyncLog),
    Queued(QueuedLog),
}

impl AccessLog {
    pub(crate) fn open(
        plan: LogPlan,
        synchronous: bool,
        counters: Arc<Counters>,
    ) -> Result<AccessLog, DemoError> {
        let file = open_active(&plan.active())?;
        Ok(if synchronous {
            AccessLog::Sync(SyncLog {
                plan,
                counters,
                state: Mutex::new(SyncState {
                    file,
                    written: 0,
                    generation: 0,
                }),
            })
        } else {
            let (tx, rx) = sync_channel::<Vec<u8>>(64 * 1024);
            let thread = std::thread::Builder::new()
                .name("demo-log-writer".into())
                .spawn(move || queued_writer(plan, file, rx, counters))
                .map_err(|e| DemoError::Thread(e.to_string()))?;
            AccessLog::Queued(QueuedLog {
                tx: Mutex::new(Some(tx)),
                thread: Mutex::new(Some(thread)),
            })
        })
    }

    /// Appends one line (which must end in `\n`).
    pub(crate) fn write_line(&self, line: Vec<u8>) -> Result<(), DemoError> {
        match self {
            AccessLog::Sync(log) => log.write_line(&line),
            AccessLog::Queued(log) => {
                let tx = log.tx.lock().ok().and_then(|g| g.clone());
                match tx {
                    // Blocking send: backpressure rather than silently losing lines.
                    Some(tx) => tx
                        .send(line)
                        .map_err(|_| DemoError::Log("log writer stopped".into())),
                    None => Err(DemoError::Log("log closed".into())),
                }
            }
        }
    }

    /// Flushes and stops the writer thread, if any.
    pub(crate) fn close(&self) {
        if let AccessLog::Queued(log) = self {
            if let Ok(mut tx) = log.tx.lock() {
                tx.take();
            }
            if let Some(t) = log.thread.lock().ok().and_then(|mut t| t.take()) {
                let _ = t.join();
            }
        }
    }
}

pub(crate) struct SyncLog {
    plan: LogPlan,
    counters: Arc<Counters>,
    state: Mutex<SyncState>,
}

struct SyncState {
    file: File,
    written: u64,
    generation: u64,
}

impl SyncLog {
    fn write_line(&self, line: &[u8]) -> Result<(), DemoError> {
        let mut st = self
            .state
            .lock()
            .map_err(|_| DemoError::Log("log lock poisoned".into()))?;
        // Unbuffered, one write(2) per line under the lock: logback's immediateFlush.
        st.file
            .write_all(line)
            .map_err(|e| log_err(&self.plan.active(), e))?;
        st.written += line.len() as u64;
        Counters::bump(&self.counters.log_lines);
        if st.written >= self.plan.roll_bytes {
            let started = Instant::now();
            st.generation += 1;
            let generation = st.generation;
            // Every other worker's logging call waits here for the copy.
            copy_compressed(
                &self.plan.active(),
                &self.plan.archive(generation),
                Durability::Synced,
            )?;
            st.file
                .set_len(0)
                .map_err(|e| log_err(&self.plan.active(), e))?;
            st.written = 0;
            prune(&self.plan, generation);
            record_rollover(&self.counters, started);
            Counters::bump(&self.counters.log_rollovers_blocking);
        }
        Ok(())
    }
}

pub(crate) struct QueuedLog {
    tx: Mutex<Option<SyncSender<Vec<u8>>>>,
    thread: Mutex<Option<JoinHandle<()>>>,
}

fn queued_writer(plan: LogPlan, file: File, rx: Receiver<Vec<u8>>, counters: Arc<Counters>) {
    // Rollover compression is background work: at a lower priority it
    // yields the cores to the request workers instead of stalling them.
    // SAFETY: gettid has no preconditions; setpriority on our own thread id
    // only lowers this thread's priority, and a failure just leaves it as is.
    unsafe {
        let tid = libc::gettid();
        libc::setpriority(libc::PRIO_PROCESS, tid as libc::id_t, 10);
    }
    let mut out = BufWriter::with_capacity(64 * 1024, file);
    let mut written = 0u64;
    let mut generation = 0u64;
    while let Ok(line) = rx.recv() {
        let mut batch = vec![line];
        batch.extend(rx.try_iter().take(4096));
        for line in &batch {
            if out.write_all(line).is_err() {
                return;
            }
            written += line.len() as u64;
        }
        Counters::add(&counters.log_lines, batch.len() as u64);
        if out.flush().is_err() {
            return;
        }
        if written >= plan.roll_bytes {
            let started = Instant::now();
            generation += 1;
            let rolled = plan.archive(generation).with_extension("log.tmp");
            // A rename is O(1): the request path never waits for the copy.
            if fs::rename(plan.active(), &rolled).is_err() {
                return;
            }
            match open_active(&plan.active()) {
                Ok(f) => out = BufWriter::with_capacity(64 * 1024, f),
                Err(_) => return,
            }
            written = 0;
            record_rollover(&counters, started);
            if copy_compressed(&rolled, &plan.archive(generation), Durability::Cached).is_ok() {
                let _ = fs::remove_file(&rolled);
            }
            prune(&plan, generation);
        }
    }
}

fn open_active(path: &Path) -> Result<File, DemoError> {
    OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .map_err(|e| log_err(path, e))
}

fn log_err(path: &Path, e: std::io::Error) -> DemoError {
    DemoError::Log(format!("{}: {e}", path.display()))
}

/// How an archive reaches the disk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Durability {
    /// Maximum compression and fsync before the rollover returns: what a
    /// rollover that must not lose a rotated file (an audit or billing log)
    /// does, and what made logback's synchronous rollover stall for
    /// hundreds of milliseconds in the field (notes §1).
    Synced,
    /// Default compression, left to the page cache: background work.
    Cached,
}

/// Copies `from` into a gzip archive at `to` through a small buffer, the way
/// logback's FixedWindowRollingPolicy compresses during rollover.
fn copy_compressed(from: &Path, to: &Path, durability: Durability) -> Result<(), DemoError> {
    let mut src = File::open(from).map_err(|e| log_err(from, e))?;
    let dst = File::create(to.with_extension("log.gz")).map_err(|e| log_err(to, e))?;
    let level = match durability {
        Durability::Synced => Compression::best(),
        Durability::Cached => Compression::default(),
    };
    let mut gz = GzEncoder::new(dst, level);
    let mut buf = [0u8; 8192];
    loop {
        let n = src.read(&mut buf).map_err(|e| log_err(from, e))?;
        if n == 0 {
            break;
        }
        gz.write_all(&buf[..n]).map_err(|e| log_err(to, e))?;
    }
    let dst = gz.finish().map_err(|e| log_err(to, e))?;
    if durability == Durability::Synced {
        dst.sync_all().map_err(|e| log_err(to, e))?;
    }
    Ok(())
}

fn prune(plan: &LogPlan, generation: u64) {
    if generation > KEEP_ARCHIVES {
        let old = plan.archive(generation - KEEP_ARCHIVES);
        let _ = fs::remove_file(old.with_extension("log.gz"));
    }
}

fn record_rollover(counters: &Counters, started: Instant) {
    let ns = started.elapsed().as_nanos() as u64;
    Counters::bump(&counters.log_rollovers);
    Counters::add(&counters.log_rollover_ns, ns);
    Counters::max(&counters.log_rollover_max_ns, ns);
}
