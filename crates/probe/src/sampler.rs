//! The sampling loop: a `Collector` that reads everything once per call, and
//! a `Sampler` thread that calls it every interval and hands the points on.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::error::ProbeError;
use crate::host::HostCollector;
use crate::process::{HostView, ProcessCollector};
use crate::series::{Notes, SeriesPoint};

/// The shortest supported interval: below it, tick-based counters (USER_HZ
/// is 100) become too coarse and the sampler's own cost grows past its budget.
pub const MIN_INTERVAL: Duration = Duration::from_millis(100);

/// What to sample and how often.
#[derive(Clone, Debug)]
pub struct SamplerConfig {
    /// Time between samples (default 1 s, at least 100 ms).
    pub interval: Duration,
    /// The run's clock origin, shared with the load engine: every point's
    /// `t_ns` counts from here.
    pub origin: Instant,
    /// Where procfs is mounted (tests point this at a fake tree).
    pub proc_root: PathBuf,
    /// Where sysfs is mounted (used only to tell whole disks from partitions).
    pub sys_root: PathBuf,
    /// The server process whose tree (threads and descendants) is sampled.
    pub pid: Option<u32>,
    /// Sample host-wide series (CPU, memory, disks, network, TCP).
    pub host: bool,
    /// How often to count TCP connections by state through sock_diag
    /// netlink, else /proc/net/tcp{,6} (`tcp.state.*`); `None` turns it
    /// off. Each count walks the kernel's
    /// whole connection hash table, milliseconds even when idle, hence its
    /// own cadence (default 10 s). `tcp.estab` and `tcp.time_wait` come
    /// from cheap counters every interval regardless.
    pub tcp_states_every: Option<Duration>,
}

impl SamplerConfig {
    /// Defaults: 1 s, real /proc and /sys, host series on, no process.
    pub fn new(origin: Instant) -> SamplerConfig {
        SamplerConfig {
            interval: Duration::from_secs(1),
            origin,
            proc_root: PathBuf::from("/proc"),
            sys_root: PathBuf::from("/sys"),
            pid: None,
            host: true,
            tcp_states_every: Some(Duration::from_secs(10)),
        }
    }
}

/// Reads every source once per `sample` call; the synchronous core of
/// `Sampler`, usable on its own for custom loops and tests.
pub struct Collector {
    host: Option<HostCollector>,
    process: Option<ProcessCollector>,
    notes: Notes,
    last: Option<Duration>,
    samples: u64,
}

impl Collector {
    /// Opens the sources. Missing ones become notes; only a missing target
    /// process is an error.
    pub fn new(config: &SamplerConfig) -> Result<Collector, ProbeError> {
        let mut notes = Notes::default();
        let process = match config.pid {
            Some(pid) => Some(ProcessCollector::new(&config.proc_root, pid)?),
            None => None,
        };
        let host = config.host.then(|| {
            HostCollector::new(
                &config.proc_root,
                &config.sys_root,
                config.tcp_states_every,
                &mut notes,
            )
        });
        Ok(Collector {
            host,
            process,
            notes,
            last: None,
            samples: 0,
        })
    }

    /// Samples everything at `elapsed` since the run's origin and appends
    /// the points to `out`. Rates cover the time since the previous call, so
    /// the first call yields gauges only.
    pub fn sample(&mut self, elapsed: Duration, out: &mut Vec<SeriesPoint>) {
        let first = self.last.is_none();
        let dt_s = match self.last {
            Some(last) => elapsed.saturating_sub(last).as_secs_f64(),
            None => 0.0,
        };
        let t_ns = u64::try_from(elapsed.as_nanos()).unwrap_or(u64::MAX);
        let mut cores = 0;
        let mut forks = None;
        if let Some(h) = self.host.as_mut() {
            h.sample(dt_s, t_ns, first, out, &mut self.notes);
            cores = h.cores;
            forks = h.forks_total;
        }
        if cores == 0 {
            cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        }
        if let Some(p) = self.process.as_mut() {
            let host = HostView {
                cores,
                forks_total: forks,
            };
            p.sample(elapsed, dt_s, t_ns, host, out, &mut self.notes);
        }
        self.last = Some(elapsed);
        self.samples += 1;
    }

    /// Notes about metrics left out so far, each given once.
    pub fn notes(&self) -> &[String] {
        &self.notes.list
    }

    /// `Some(false)` once the target process is gone; `None` without one.
    pub fn target_alive(&self) -> Option<bool> {
        self.process.as_ref().map(|p| p.alive())
    }

    /// The target's process tree at the last sample, root first.
    pub fn target_pids(&self) -> &[u32] {
        self.process.as_ref().map_or(&[], |p| p.members())
    }
}

/// What a stopped sampler reports.
#[derive(Clone, Debug, Default)]
pub struct SamplerReport {
    /// Metrics left out, each explained once.
    pub notes: Vec<String>,
    /// Number of samples taken.
    pub samples: u64,
    /// CPU time the sampling thread used (its own cost).
    pub cpu_time: Duration,
    /// Whether the target process exited while sampled.
    pub target_exited: bool,
}

/// A background thread sampling every `interval` until stopped.
pub struct Sampler {
    stop: mpsc::Sender<()>,
    handle: Option<JoinHandle<SamplerReport>>,
    notes: Arc<Mutex<Vec<String>>>,
    target_exited: Arc<AtomicBool>,
}

impl Sampler {
    /// Starts sampling; `sink` receives each sample's points (all with the
    /// same `t_ns`) on the sampling thread, so it should be quick (send them
    /// on, or buffer them).
    pub fn start<F>(config: SamplerConfig, mut sink: F) -> Result<Sampler, ProbeError>
    where
        F: FnMut(&[SeriesPoint]) + Send + 'static,
    {
        if config.interval < MIN_INTERVAL {
            return Err(ProbeError::IntervalTooShort(config.interval));
        }
        let mut collector = Collector::new(&config)?;
        let (stop, stopped) = mpsc::channel::<()>();
        let notes = Arc::new(Mutex::new(Vec::new()));
        let target_exited = Arc::new(AtomicBool::new(false));
        let shared_notes = Arc::clone(&notes);
        let shared_exited = Arc::clone(&target_exited);
        let interval = config.interval;
        let origin = config.origin;
        let handle = std::thread::Builder::new()
            .name("keisoku-sampler".into())
            .spawn(move || {
                let cpu0 = crate::procfs::thread_cpu_ns();
                let mut out: Vec<SeriesPoint> = Vec::with_capacity(512);
                let mut published = 0usize;
                let mut take = |collector: &mut Collector, out: &mut Vec<SeriesPoint>| {
                    out.clear();
                    collector.sample(origin.elapsed(), out);
                    if !out.is_empty() {
                        sink(out);
                    }
                    if collector.notes().len() > published {
                        if let Ok(mut n) = shared_notes.lock() {
                            n.extend_from_slice(&collector.notes()[published..]);
                        }
                        published = collector.notes().len();
                    }
                    if collector.target_alive() == Some(false) {
                        shared_exited.store(true, Ordering::Relaxed);
                    }
                };
                let start = Instant::now();
                take(&mut collector, &mut out);
                let mut last = start;
                let mut k: u32 = 1;
                loop {
                    let deadline = start + interval * k;
                    let now = Instant::now();
                    let wait = deadline.saturating_duration_since(now);
                    match stopped.recv_timeout(wait) {
                        Err(RecvTimeoutError::Timeout) => {
                            take(&mut collector, &mut out);
                            last = Instant::now();
                            // Stay on the grid of ticks, but after a stall skip
                            // the missed ones and any tick too close to this
                            // sample: a rate over a few milliseconds is noise.
                            k += 1;
                            while start + interval * k < last + interval / 2 {
                                k += 1;
                            }
                        }
                        Ok(()) | Err(RecvTimeoutError::Disconnected) => {
                            // A last partial interval, so the run's end is covered.
                            if last.elapsed() >= interval / 5 {
                                take(&mut collector, &mut out);
                            }
                            break;
                        }
                    }
                }
                SamplerReport {
                    notes: collector.notes().to_vec(),
                    samples: collector.samples,
                    cpu_time: Duration::from_nanos(
                        crate::procfs::thread_cpu_ns().saturating_sub(cpu0),
                    ),
                    target_exited: collector.target_alive() == Some(false),
                }
            })
            .map_err(ProbeError::Spawn)?;
        Ok(Sampler {
            stop,
            handle: Some(handle),
            notes,
            target_exited,
        })
    }

    /// Starts sampling and returns the points through a channel, one `Vec`
    /// per sample.
    pub fn start_channel(
        config: SamplerConfig,
    ) -> Result<(Sampler, mpsc::Receiver<Vec<SeriesPoint>>), ProbeError> {
        let (tx, rx) = mpsc::channel();
        let sampler = Sampler::start(config, move |points| {
            let _ = tx.send(points.to_vec());
        })?;
        Ok((sampler, rx))
    }

    /// Notes so far (metrics left out, the target exiting).
    pub fn notes(&self) -> Vec<String> {
        self.notes.lock().map(|n| n.clone()).unwrap_or_default()
    }

    /// Whether the target process has exited (false without a target).
    pub fn target_exited(&self) -> bool {
        self.target_exited.load(Ordering::Relaxed)
    }

    /// Takes a last sample, stops the thread and reports.
    pub fn stop(mut self) -> SamplerReport {
        self.finish()
    }

    fn finish(&mut self) -> SamplerReport {
        let _ = self.stop.send(());
        match self.handle.take() {
            Some(h) => h.join().unwrap_or_default(),
            None => SamplerReport::default(),
        }
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        if self.handle.is_some() {
            let _ = self.finish();
        }
    }
}
