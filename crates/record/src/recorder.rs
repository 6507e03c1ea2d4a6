//! One recording session: creates the run, then the sampler (series), the
//! profiler and the access-log follower all on the run's clock, and stores
//! what they collected when it finishes. Used by `run`, `record` and `demo`.

use super::follow::{Follower, Keep};
use crate::Error;
use keisoku_findings::Finding;
use keisoku_logs::LineParser;
use keisoku_probe::{
    PerfOptions, PerfRecorder, PerfTarget, PySpyFormat, PySpyOptions, PySpyRecorder, Sampler,
    SamplerConfig,
};
use keisoku_store::{
    Machine, NewRun, ProfileKind as StoreProfileKind, RouteSource, RunJson, RunStatus, Store,
};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::mpsc::RecvTimeoutError;
use std::thread::JoinHandle;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

/// How often sampled series are written to the store: often enough that a
/// killed keisoku loses little and a live reader sees progress.
const FLUSH_EVERY: Duration = Duration::from_secs(3);

/// Which profiler to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileKind {
    /// `perf record -g` (native, kernel, JIT with perf maps).
    Perf,
    /// py-spy for Python servers.
    PySpy,
    /// No profile.
    None,
}

/// Whether to record a wall-clock profile beside the CPU profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum WallProfile {
    /// Where a finding reads it: py-spy's second, `--idle` recording. Not
    /// for a JVM, whose wall profile no finding reads yet and whose agent
    /// stays loaded in the user's JVM after the run.
    #[default]
    Auto,
    /// Also async-profiler's wall mode in a JVM server under perf.
    On,
    /// The CPU profile only.
    Off,
}

/// Everything a recording needs.
pub struct Options {
    /// The run store file.
    pub store_path: PathBuf,
    /// Name, tags, target, command line, model.
    pub new_run: NewRun,
    /// Sampling interval.
    pub interval: Duration,
    /// The server process (root of its tree), if any.
    pub pid: Option<u32>,
    /// Profiler.
    pub profile: ProfileKind,
    /// Profiler frequency.
    pub profile_hz: u32,
    /// perf on every CPU instead of the server's processes.
    pub all_cpus: bool,
    /// The wall-clock profile beside the CPU profile.
    pub wall_profile: WallProfile,
    /// Access log to follow, with its parser and what to keep of its lines.
    pub access_log: Option<(PathBuf, LineParser, Keep)>,
    /// The profiler was not chosen: perf once a server process is known.
    pub profile_auto: bool,
}

enum Profiler {
    Perf(PerfRecorder),
    /// The CPU py-spy and, beside it, the wall-clock one (`--idle`) when it
    /// could start.
    PySpy(PySpyRecorder, Option<PySpyRecorder>),
}

/// What a finished recording hands back for the binary to print.
#[derive(Debug)]
pub struct Finished {
    /// The stored run, as `keisoku export RUN` gives it (with its findings
    /// when they could be stored).
    pub run: RunJson,
    /// The findings, judged on the stored run so `show` and `report` see the
    /// same ones, best first.
    pub findings: Vec<Finding>,
    /// Problems the recording survived, one line each.
    pub notes: Vec<String>,
    /// What the store could not keep (a full disk, an I/O error), one line
    /// each; when not empty a run that would be complete is `partial`.
    pub lost: Vec<String>,
}

/// A recording in progress.
pub struct Recording {
    /// The run's clock origin.
    pub origin: Instant,
    /// Wall-clock time of the origin.
    pub started_unix_ms: i64,
    /// The run id.
    pub run: String,
    store_path: PathBuf,
    store: Store,
    sampler: Option<Sampler>,
    writer: Option<JoinHandle<Vec<String>>>,
    profiler: Option<Profiler>,
    follower: Option<Follower>,
    workdir: PathBuf,
    /// Disk space held back for the run's last words.
    reserve: Reserve,
    notes: Vec<String>,
    /// Store writes that failed: what was not kept.
    lost: Vec<String>,
    /// Options until the recorders start.
    opts: Option<Options>,
    /// The process py-spy watches.
    py_pid: u32,
    /// The sampler could not start (already noted).
    sampler_failed: bool,
    /// The JVM's wall-clock profile beside perf (async-profiler `wall`).
    jvm_wall: Option<crate::jvmwall::JvmWall>,
}

/// This machine, for the run's context.
pub fn machine() -> Machine {
    let read = |p: &str| {
        std::fs::read_to_string(p)
            .map(|s| s.trim().to_string())
            .unwrap_or_default()
    };
    let memory_bytes = read("/proc/meminfo")
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024);
    Machine {
        hostname: keisoku_store::local_hostname(),
        cores: std::thread::available_parallelism().map_or(1, |n| n.get() as u32),
        kernel: read("/proc/sys/kernel/osrelease"),
        memory_bytes,
    }
}

/// Whether a process is alive (exists and is not a zombie).
pub fn alive(pid: u32) -> bool {
    match std::fs::read(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            // The state follows the command name's closing parenthesis.
            let state = stat
                .iter()
                .rposition(|&b| b == b')')
                .and_then(|i| stat.get(i + 2))
                .copied();
            !matches!(state, Some(b'Z') | Some(b'X') | None)
        }
        Err(_) => false,
    }
}

impl Recording {
    /// Creates the run and starts every recorder. Recorders that cannot
    /// start (no perf, no permission) become notes; the run goes on.
    pub fn start(opts: Options) -> Result<Recording, Error> {
        let mut rec = Recording::create(opts)?;
        rec.start_recorders()?;
        Ok(rec)
    }

    /// Creates the run (its clock starts now) without starting recorders,
    /// so a server can be started and its output kept first.
    pub fn create(mut opts: Options) -> Result<Recording, Error> {
        let store = Store::open(&opts.store_path).map_err(Error::OpenStore)?;
        let origin = Instant::now();
        let started_unix_ms = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        opts.new_run.started_unix_ms = started_unix_ms;
        opts.new_run.machine = machine();
        let run = store.create_run(&opts.new_run)?;
        let reserve = Reserve::make(&opts.store_path, &run);
        let tmp = std::env::temp_dir();
        remove_stale_workdirs(&tmp);
        let workdir = tmp.join(workdir_name(std::process::id(), &run));
        Ok(Recording {
            origin,
            started_unix_ms,
            run,
            store_path: opts.store_path.clone(),
            store,
            sampler: None,
            writer: None,
            profiler: None,
            follower: None,
            workdir,
            reserve,
            notes: Vec::new(),
            lost: Vec::new(),
            py_pid: 0,
            sampler_failed: false,
            jvm_wall: None,
            opts: Some(opts),
        })
    }

    /// Ends a recording that never began (the server could not be
    /// started): its run is removed from the store, as if never created.
    pub fn discard(mut self) {
        self.reserve.release();
        let _ = std::fs::remove_dir_all(&self.workdir);
        let _ = self.store.remove(&self.run);
    }

    /// Sets the server process once it is known (before `start_recorders`).
    pub fn set_pid(&mut self, pid: u32) {
        if let Some(o) = self.opts.as_mut() {
            o.pid = Some(pid);
            if o.profile == ProfileKind::None && o.profile_auto {
                o.profile = ProfileKind::Perf;
            }
        }
    }

    /// Starts the host and process sampler alone, so the seconds before the
    /// load (a server starting up) are recorded too; `start_recorders`
    /// starts the rest. The process is the one set so far.
    pub fn start_sampler(&mut self) -> Result<(), Error> {
        if self.sampler.is_some() || self.sampler_failed {
            return Ok(());
        }
        let Some(opts) = self.opts.as_ref() else {
            return Ok(());
        };
        let mut config = SamplerConfig::new(self.origin);
        config.interval = opts.interval;
        config.pid = opts.pid;
        match Sampler::start_channel(config) {
            Ok((sampler, rx)) => {
                let store_path = opts.store_path.clone();
                let run_w = self.run.clone();
                let writer = std::thread::Builder::new()
                    .name("keisoku-series-writer".into())
                    .spawn(move || write_series(rx, &store_path, &run_w))?;
                self.sampler = Some(sampler);
                self.writer = Some(writer);
            }
            Err(e) => {
                self.sampler_failed = true;
                self.notes.push(format!("no host/process series: {e}"));
            }
        }
        Ok(())
    }

    /// Starts the sampler (unless already started), the profiler and the
    /// access-log follower.
    pub fn start_recorders(&mut self) -> Result<(), Error> {
        self.start_sampler()?;
        let Some(mut opts) = self.opts.take() else {
            return Ok(());
        };
        let origin = self.origin;
        let run = self.run.clone();
        let workdir = self.workdir.clone();
        let mut notes = Vec::new();

        let profiler = match opts.profile {
            ProfileKind::None => None,
            ProfileKind::Perf => {
                let target = if opts.all_cpus {
                    Some(PerfTarget::AllCpus)
                } else {
                    match opts.pid {
                        Some(pid) => Some(PerfTarget::Pids(settled_tree(pid))),
                        None => {
                            notes.push("no profile: --profile perf needs a server process (--server-cmd, --pid, --pidof) or --profile-all-cpus".into());
                            None
                        }
                    }
                };
                // A JVM among the server's processes also gets a wall-clock
                // profile when asked: perf cannot see a request thread that waits.
                let jvm_wall = opts.wall_profile == WallProfile::On;
                if let Some(PerfTarget::Pids(pids)) = target.as_ref().filter(|_| jvm_wall) {
                    if let Some(jvm) = crate::jvmwall::jvm_in(pids) {
                        let dir = workdir.join("async-profiler");
                        match crate::jvmwall::library(&dir)
                            .and_then(|lib| crate::jvmwall::JvmWall::start(jvm, lib, &dir))
                        {
                            Ok(w) => self.jvm_wall = Some(w),
                            Err(e) => notes.push(format!("no wall-clock profile: {e}")),
                        }
                    }
                }
                target.and_then(|t| {
                    let mut o = PerfOptions::new(t, workdir.join("perf"), origin);
                    o.hz = opts.profile_hz;
                    match PerfRecorder::start(o) {
                        Ok(r) => Some(Profiler::Perf(r)),
                        Err(e) => {
                            notes.push(format!("no profile: {e}"));
                            None
                        }
                    }
                })
            }
            ProfileKind::PySpy => match opts.pid {
                Some(pid) => {
                    self.py_pid = pid;
                    let mut o = PySpyOptions::new(pid, workdir.join("py-spy"), origin);
                    o.rate = opts.profile_hz;
                    o.format = PySpyFormat::Speedscope;
                    // A second py-spy with --idle gives the wall-clock profile:
                    // py-spy marks no sample as idle in any output (it only
                    // drops them without --idle), so one recording cannot be
                    // both, and the CPU profile stays what perf's means.
                    let mut wall = o.clone();
                    wall.idle = true;
                    wall.output_dir = workdir.join("py-spy-wall");
                    match PySpyRecorder::start(o) {
                        Ok(r) => {
                            let w = if opts.wall_profile == WallProfile::Off {
                                None
                            } else {
                                match PySpyRecorder::start(wall) {
                                    Ok(w) => Some(w),
                                    Err(e) => {
                                        notes.push(format!("no wall-clock profile: {e}"));
                                        None
                                    }
                                }
                            };
                            Some(Profiler::PySpy(r, w))
                        }
                        Err(e) => {
                            notes.push(format!("no profile: {e}"));
                            None
                        }
                    }
                }
                None => {
                    notes.push("no profile: --profile py-spy needs a server process (--server-cmd, --pid, --pidof)".into());
                    None
                }
            },
        };

        // A log that does not exist by now (a server started by `run` has
        // opened its log once it listens) is a mistyped path: refuse it
        // before any load, rather than report "0 of 0 lines" afterwards.
        if let Some((path, _, _)) = opts.access_log.as_ref() {
            if !path.exists() {
                let msg = format!(
                    "--access-log {}: no such file (nothing was loaded; run {} removed)",
                    path.display(),
                    self.run
                );
                self.reserve.release();
                let _ = self.store.remove(&self.run);
                return Err(Error::Input(msg));
            }
        }
        let follower = match opts.access_log.take() {
            Some((path, parser, keep)) => {
                match Follower::start(
                    &path,
                    parser,
                    keep,
                    opts.store_path.clone(),
                    run.clone(),
                    origin,
                ) {
                    Ok(f) => Some(f),
                    Err(e) => {
                        notes.push(format!("access log {} not followed: {e}", path.display()));
                        None
                    }
                }
            }
            None => None,
        };

        self.profiler = profiler;
        self.follower = follower;
        self.notes.extend(notes);
        Ok(())
    }

    /// The store this recording writes to (for phases, results, outputs).
    pub fn store(&self) -> &Store {
        &self.store
    }

    /// The store file.
    pub fn store_path(&self) -> &Path {
        &self.store_path
    }

    /// Milliseconds since the run's origin.
    pub fn now_ms(&self) -> f64 {
        self.origin.elapsed().as_secs_f64() * 1000.0
    }

    /// Adds a line to the run's notes.
    pub fn note(&mut self, msg: impl Into<String>) {
        self.notes.push(msg.into());
    }

    /// Records that the store could not keep something (`what` says what
    /// and why): the run ends `partial` instead of `complete`, and the line
    /// joins its notes.
    pub fn lost(&mut self, what: impl Into<String>) {
        let what = what.into();
        if !self.lost.contains(&what) {
            self.lost.push(what);
        }
    }

    /// Stops every recorder, stores what they collected, marks the run
    /// `status` and judges it: the one end of every recording, so runs made
    /// by `run`, `record` and `demo` all store their findings. Returns the
    /// stored run, its findings and the notes to show.
    pub fn finish(mut self, status: RunStatus) -> Result<Finished, Error> {
        let duration_ms = self.now_ms();
        if let Some(f) = self.follower.take() {
            let followed = f.stop();
            if let Some(why) = followed.abandoned {
                self.lost(why);
            }
            let lines_lost = followed.notes.iter().any(|n| n.starts_with(LINES_LOST));
            if let (true, Some(k)) = (lines_lost, followed.kept.as_ref()) {
                // The stored line counters stop where the store failed; the
                // follower's own count says how many the run really read.
                self.notes.push(format!(
                    "access log: {} lines read during the run; the store failed after keeping at most {} of them",
                    followed.lines, k.kept_lines
                ));
            }
            for n in followed.notes {
                if is_store_loss(&n) {
                    self.lost(n);
                } else {
                    self.notes.push(n);
                }
            }
            if followed.malformed > 0 {
                self.notes.push(format!(
                    "access log: {} of {} lines did not parse with the chosen --log-format",
                    followed.malformed, followed.lines
                ));
            }
            if let Some(k) = followed.kept.as_ref().filter(|k| k.truncated) {
                self.notes.push(format!(
                    "access log: kept the first {} of {} lines ({} bytes, --log-lines-max reached at {:.1}s); later lines count in the route table but `keisoku logs RUN` options that need lines see only those",
                    k.kept_lines,
                    k.lines,
                    k.kept_bytes,
                    k.truncated_ms.unwrap_or(0.0) / 1000.0
                ));
            }
            if followed.reopened > 0 {
                self.notes.push(format!(
                    "access log: reopened {} time(s) after rotation or truncation",
                    followed.reopened
                ));
            }
            if let Err(e) =
                self.store
                    .put_routes(&self.run, RouteSource::AccessLog, &followed.routes)
            {
                self.lost(format!("storing access-log routes: {e}"));
            }
        }
        if let Some(s) = self.sampler.take() {
            let report = s.stop();
            self.notes.extend(report.notes);
        }
        if let Some(w) = self.writer.take() {
            match w.join() {
                Ok(errs) => {
                    for e in errs {
                        self.lost(e);
                    }
                }
                Err(_) => self
                    .notes
                    .push("the series writer stopped unexpectedly".into()),
            }
        }
        // After the series are stored: py-spy's samples are placed by them.
        if let Some(p) = self.profiler.take() {
            // The wall-clock py-spy stops after the CPU one (their spans
            // differ by that moment, which placement accounts for).
            let (p, wall) = match p {
                Profiler::PySpy(r, w) => (Profiler::PySpy(r, None), w),
                p => (p, None),
            };
            {
                match self.stop_profiler(p) {
                    Ok(profile) => {
                        if let Err(e) = self.store.put_profile(&self.run, &profile) {
                            self.lost(format!("storing the profile: {e}"));
                        }
                    }
                    Err(e) => self.notes.push(format!("no profile: {e}")),
                }
                if let Some(w) = wall {
                    match self.stop_wall_profiler(w) {
                        Ok(profile) => {
                            if let Err(e) = self.store.put_profile_of(
                                &self.run,
                                StoreProfileKind::Wall,
                                &profile,
                            ) {
                                self.lost(format!("storing the wall-clock profile: {e}"));
                            }
                        }
                        Err(e) => self.notes.push(format!("no wall-clock profile: {e}")),
                    }
                }
            }
        }
        if let Some(w) = self.jvm_wall.take() {
            match self.stop_jvm_wall(w) {
                Ok(profile) => {
                    if let Err(e) =
                        self.store
                            .put_profile_of(&self.run, StoreProfileKind::Wall, &profile)
                    {
                        self.lost(format!("storing the wall-clock profile: {e}"));
                    }
                }
                Err(e) => self.notes.push(format!("no wall-clock profile: {e}")),
            }
        }
        let _ = std::fs::remove_dir_all(&self.workdir);
        // The run's last words (notes, status, findings) need a little
        // room even when the disk filled: the reserve gives it back now.
        self.reserve.release();
        let lost = std::mem::take(&mut self.lost);
        let status = match status {
            RunStatus::Complete if !lost.is_empty() => RunStatus::Partial,
            s => s,
        };
        let kept: Vec<String> = lost
            .iter()
            .map(|l| format!("not kept: {l}"))
            .chain(self.notes.iter().cloned())
            .collect();
        if !kept.is_empty() {
            let text: String = kept.iter().map(|n| format!("{n}\n")).collect();
            if let Err(e) = self
                .store
                .append_output(&self.run, "notes", text.as_bytes())
            {
                self.notes.push(format!("storing the notes: {e}"));
            }
        }
        self.store.finish(&self.run, status, duration_ms)?;
        let mut run = self.store.load(&self.run)?;
        let mut notes = std::mem::take(&mut self.notes);
        // Findings are judged on the stored run, so `show` and `report` see the same ones.
        let findings = keisoku_findings::analyze(&run);
        let stored = keisoku_findings::to_json(&findings);
        match self.store.set_findings(&self.run, &stored) {
            Ok(()) => run.findings = stored,
            Err(e) => notes.push(format!("storing the findings: {e}")),
        }
        Ok(Finished {
            run,
            findings,
            notes,
            lost,
        })
    }

    /// Stops the profiler and reads what it recorded as the stacks
    /// crate's profile, sample times moved onto the run's clock (t = 0 is
    /// the run's origin, `start_unix_ns` its start).
    fn stop_profiler(&mut self, p: Profiler) -> Result<keisoku_stacks::Profile, String> {
        let (mut profile, offset_ns) = match p {
            Profiler::Perf(r) => {
                let out = r.stop().map_err(|e| e.to_string())?;
                self.notes.extend(out.notes.iter().cloned());
                let file = std::fs::File::open(&out.script_path)
                    .map_err(|e| format!("{}: {e}", out.script_path.display()))?;
                // An empty script is no samples, not a malformed one.
                if file.metadata().is_ok_and(|m| m.len() == 0) {
                    return Err("perf recorded no samples".into());
                }
                let (mut profile, _) = keisoku_stacks::perf::parse(
                    &mut std::io::BufReader::new(file),
                    "perf",
                    &keisoku_stacks::perf::PerfOptions { event: None },
                )
                .map_err(|e| e.to_string())?;
                // The parser counts from the first sample and keeps its
                // time on perf's clock as the origin.
                let t0 = profile.time_origin_ns.ok_or("perf recorded no samples")?;
                let offset = out.clock.to_run_ns(t0);
                // After the shift, time zero is the run's origin on perf's clock.
                profile.time_origin_ns = t0.checked_add_signed(-offset);
                profile.title = format!("perf ({}) {}", out.event, self.run);
                (profile, offset)
            }
            Profiler::PySpy(r, _) => {
                let stopped_ms = self.now_ms();
                let out = r.stop().map_err(|e| e.to_string())?;
                self.notes.extend(out.notes.iter().cloned());
                let text =
                    std::fs::read(&out.path).map_err(|e| format!("{}: {e}", out.path.display()))?;
                let mut profile = keisoku_stacks::speedscope::parse(&text, "py-spy output")
                    .map_err(|e| e.to_string())?;
                // speedscope has no pid; py-spy watched this one. Its
                // threads stay numbered by profile, as py-spy names them.
                profile.set_pid(self.py_pid);
                profile.title = format!("py-spy {}", self.run);
                let started_ms = out.started_run_ns as f64 / 1e6;
                let (cpu, thread_cpu) = self.server_cpu_series();
                if !place_pyspy_samples(&mut profile, &cpu, &thread_cpu, started_ms, stopped_ms) {
                    self.notes.push(format!(
                        "py-spy: no server CPU series to place its samples by; spread evenly over its {:.1} s",
                        (stopped_ms - started_ms) / 1000.0
                    ));
                }
                // Placed on the run's clock already.
                (profile, 0)
            }
        };
        if let Some(t) = profile.samples.time_ns.as_mut() {
            for x in t.iter_mut() {
                // A sample before the run's origin (none expected) is placed at it.
                *x = x.checked_add_signed(offset_ns).unwrap_or(if offset_ns < 0 {
                    0
                } else {
                    u64::MAX
                });
            }
        }
        profile.start_unix_ns = u64::try_from(self.started_unix_ms)
            .ok()
            .map(|ms| ms.saturating_mul(1_000_000));
        Ok(profile)
    }
}

impl Recording {
    /// Stops the wall-clock py-spy and reads its profile, samples placed on
    /// the run's clock by [`place_wall_samples`].
    fn stop_wall_profiler(&mut self, r: PySpyRecorder) -> Result<keisoku_stacks::Profile, String> {
        let stopped_ms = self.now_ms();
        let out = r.stop().map_err(|e| e.to_string())?;
        self.notes.extend(out.notes.iter().cloned());
        let text = std::fs::read(&out.path).map_err(|e| format!("{}: {e}", out.path.display()))?;
        let mut profile = keisoku_stacks::speedscope::parse(&text, "py-spy --idle output")
            .map_err(|e| e.to_string())?;
        profile.set_pid(self.py_pid);
        profile.title = format!("py-spy --idle (wall-clock) {}", self.run);
        place_wall_samples(&mut profile, out.started_run_ns as f64 / 1e6, stopped_ms);
        profile.start_unix_ns = u64::try_from(self.started_unix_ms)
            .ok()
            .map(|ms| ms.saturating_mul(1_000_000));
        Ok(profile)
    }
}

impl Recording {
    /// Stops the JVM's async-profiler session and reads its recording, its
    /// sample times (JFR's, since the Unix epoch) moved onto the run's clock.
    fn stop_jvm_wall(
        &mut self,
        w: crate::jvmwall::JvmWall,
    ) -> Result<keisoku_stacks::Profile, String> {
        let path = w.stop()?;
        let mut profile = crate::jvmwall::read(&path)?;
        profile.title = format!("async-profiler wall (wall-clock) {}", self.run);
        let run_start_ns = i128::from(self.started_unix_ms) * 1_000_000;
        let first_ns = i128::from(
            profile
                .start_unix_ns
                .ok_or("a JFR recording without times")?,
        );
        if let Some(t) = profile.samples.time_ns.as_mut() {
            for x in t.iter_mut() {
                // A sample before the run's origin (none expected) is placed at it.
                *x = u64::try_from((first_ns + i128::from(*x) - run_start_ns).max(0))
                    .unwrap_or(u64::MAX);
            }
        }
        profile.time_origin_ns = None;
        profile.start_unix_ns = u64::try_from(self.started_unix_ms)
            .ok()
            .map(|ms| ms.saturating_mul(1_000_000));
        Ok(profile)
    }
}

/// Puts py-spy `--idle` samples on the run's clock.
///
/// With `--idle` py-spy keeps every thread at every tick, so a thread's
/// samples are its ticks in order; their speedscope file still gives each
/// the same 1/rate and no time (see [`place_pyspy_samples`]). The ticks are
/// spread at equal steps over py-spy's span, the step measured rather than
/// taken from the rate (a late py-spy on a crowded host takes fewer ticks
/// than it asked for): span / the most samples any thread has. A thread
/// with fewer ticks than that started after py-spy did (a worker's
/// helper thread, started by its first request), so its ticks end at the
/// stop rather than start at the attach.
fn place_wall_samples(profile: &mut keisoku_stacks::Profile, from_ms: f64, to_ms: f64) {
    let to_ms = to_ms.max(from_ms);
    let n = profile.samples.len();
    let thread_of: Vec<u32> = profile.samples.thread.clone().unwrap_or_else(|| vec![0; n]);
    let mut order: Vec<usize> = (0..n).collect();
    if let Some(t) = profile.samples.time_ns.as_ref() {
        order.sort_by_key(|&i| (thread_of[i], t[i], i));
    } else {
        order.sort_by_key(|&i| (thread_of[i], i));
    }
    let groups: Vec<&[usize]> = order
        .chunk_by(|&x, &y| thread_of[x] == thread_of[y])
        .collect();
    let most = groups.iter().map(|g| g.len()).max().unwrap_or(0).max(1);
    let step = (to_ms - from_ms) / most as f64;
    let mut times = vec![0u64; n];
    for group in groups {
        let k = group.len();
        for (j, &i) in group.iter().enumerate() {
            let t_ms = to_ms - (k - j) as f64 * step + step / 2.0;
            times[i] = (t_ms.max(0.0) * 1e6) as u64;
        }
    }
    profile.samples.time_ns = Some(times);
    profile.time_origin_ns = None;
}

/// CPU over time: (end of a sampler interval in ms on the run's clock,
/// % of one core over it).
type CpuPoints = Vec<(f64, f64)>;

impl Recording {
    /// The server's CPU (`proc.cpu_user` + `proc.cpu_system`, % of one
    /// core) per sampler interval as stored, and each thread's with a
    /// series (`thread.*.cpu`, by tid): (end of the interval in ms on the
    /// run's clock, value).
    fn server_cpu_series(&self) -> (CpuPoints, HashMap<u32, CpuPoints>) {
        let Ok(series) = self.store.series(&self.run) else {
            return (Vec::new(), HashMap::new());
        };
        let mut by_t: BTreeMap<u64, (f64, f64)> = BTreeMap::new();
        let mut threads: HashMap<u32, CpuPoints> = HashMap::new();
        let finite = |t: &f64, v: &f64| t.is_finite() && v.is_finite() && *t >= 0.0;
        for s in &series {
            if s.name == "proc.cpu_user" || s.name == "proc.cpu_system" {
                for (t, v) in s.t_ms.iter().zip(&s.v).filter(|(t, v)| finite(t, v)) {
                    // Keyed by µs so user and system of one interval add up.
                    let e = by_t.entry((t * 1000.0).round() as u64).or_insert((*t, 0.0));
                    e.1 += v.max(0.0);
                }
            } else if let Some((th, "cpu")) = keisoku_store::SeriesThread::parse(&s.name) {
                threads.entry(th.tid).or_default().extend(
                    s.t_ms
                        .iter()
                        .zip(&s.v)
                        .filter(|(t, v)| finite(t, v))
                        .map(|(t, v)| (*t, v.max(0.0))),
                );
            }
        }
        (by_t.into_values().collect(), threads)
    }
}

/// The cumulative CPU (ms of one core) at the ends of linear pieces over
/// [from_ms, to_ms], from (end of interval ms, % of one core) points.
fn cpu_curve(cpu: &[(f64, f64)], from_ms: f64, to_ms: f64) -> Vec<(f64, f64)> {
    let mut curve: Vec<(f64, f64)> = vec![(from_ms, 0.0)];
    let mut prev_t = f64::NEG_INFINITY;
    let mut last_rate = 0.0;
    for &(t, pct) in cpu {
        let rate = pct / 100.0;
        let (a, b) = (prev_t.max(from_ms), t.min(to_ms));
        if b > a {
            let (_, c) = curve[curve.len() - 1];
            curve.push((b, c + rate * (b - a)));
        }
        prev_t = t;
        last_rate = rate;
    }
    // py-spy stops after the sampler's last interval: that rate goes on.
    if let Some(&(t, c)) = curve.last() {
        if to_ms > t {
            curve.push((to_ms, c + last_rate * (to_ms - t)));
        }
    }
    curve
}

/// The time at which a curve reaches `f` (0-1) of its total.
fn curve_at(curve: &[(f64, f64)], f: f64) -> f64 {
    let total = curve.last().map_or(0.0, |&(_, c)| c);
    let want = f * total;
    let i = curve.partition_point(|&(_, c)| c < want).max(1);
    let Some(&(t1, c1)) = curve.get(i) else {
        return curve.last().map_or(0.0, |&(t, _)| t);
    };
    let (t0, c0) = curve[i - 1];
    if c1 > c0 {
        t0 + (want - c0) / (c1 - c0) * (t1 - t0)
    } else {
        t1
    }
}

/// The OS thread id in a py-spy thread name (`Process 31536 Thread 31536
/// "MainThread"`, `Thread 1946 ""`).
fn pyspy_tid(comm: &str) -> Option<u32> {
    let rest = &comm[comm.find("Thread ")? + "Thread ".len()..];
    let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
    digits.parse().ok()
}

/// Puts py-spy's samples on the run's clock; false when there was no CPU
/// to place them by and they were spread evenly over py-spy's span.
///
/// py-spy without `--idle` skips the ticks at which a thread waits, and
/// its speedscope output gives every kept sample the same 1/rate with no
/// time of its own: counted from attach, a slow service's samples crowd
/// the start of the run. Its other outputs do not say more: raw has no
/// time, and chrometrace merges consecutive equal stacks into spans whose
/// ends absorb the skipped waits, so how many samples a span holds is
/// lost. On-CPU samples fall where the thread spends CPU, so each
/// thread's samples, in their order, are placed at equal steps of its
/// cumulative CPU between py-spy's start and stop: its own `thread.*.cpu`
/// series when the sampler kept one for its tid (`thread_cpu`), else the
/// server's (`cpu`; both as end of each sampler interval in ms, % of one
/// core over it); a second with twice the CPU gets twice the samples.
/// Placement is as fine as the sampler's interval: within a second,
/// samples are evenly spaced.
fn place_pyspy_samples(
    profile: &mut keisoku_stacks::Profile,
    cpu: &[(f64, f64)],
    thread_cpu: &HashMap<u32, CpuPoints>,
    from_ms: f64,
    to_ms: f64,
) -> bool {
    let to_ms = to_ms.max(from_ms);
    let process = cpu_curve(cpu, from_ms, to_ms);
    let by_cpu = process.last().is_some_and(|&(_, c)| c > 0.0);
    let n = profile.samples.len();
    let thread_of: Vec<u32> = profile.samples.thread.clone().unwrap_or_else(|| vec![0; n]);
    let mut order: Vec<usize> = (0..n).collect();
    // A thread's samples keep their order (py-spy wrote them in time order).
    if let Some(t) = profile.samples.time_ns.as_ref() {
        order.sort_by_key(|&i| (thread_of[i], t[i], i));
    } else {
        order.sort_by_key(|&i| (thread_of[i], i));
    }
    let mut times = vec![0u64; n];
    for group in order.chunk_by(|&x, &y| thread_of[x] == thread_of[y]) {
        // A thread's own CPU when the sampler kept it (a worker that spent
        // its first second importing has its import there, not smeared
        // over the run), else the whole server's.
        let own = profile
            .threads
            .get(thread_of[group[0]] as usize)
            .and_then(|t| pyspy_tid(&t.comm))
            .and_then(|tid| thread_cpu.get(&tid))
            .map(|c| cpu_curve(c, from_ms, to_ms))
            .filter(|c| c.last().is_some_and(|&(_, c)| c > 0.0));
        let curve = own.as_ref().unwrap_or(&process);
        let k = group.len() as f64;
        for (j, &i) in group.iter().enumerate() {
            let f = (j as f64 + 0.5) / k;
            let t_ms = if by_cpu || own.is_some() {
                curve_at(curve, f)
            } else {
                from_ms + f * (to_ms - from_ms)
            };
            times[i] = (t_ms.max(0.0) * 1e6) as u64;
        }
    }
    profile.samples.time_ns = Some(times);
    profile.time_origin_ns = None;
    by_cpu
}

/// How the follower's note begins when the store failed to keep the
/// access log's lines (`summary::stored` looks for it too).
pub const LINES_LOST: &str = "storing access-log lines";

/// Whether a recorder's note says the store failed to keep something:
/// the access-log follower words those "storing ...: error" or "... not
/// kept: error".
fn is_store_loss(note: &str) -> bool {
    note.starts_with("storing ") || note.contains(" not kept: ")
}

/// How much disk space a recording holds back beside its store, so that a
/// disk that fills mid-run still lets it store its notes, its status
/// (`partial`) and its findings.
const RESERVE_BYTES: usize = 512 * 1024;

/// A file of [`RESERVE_BYTES`] beside the store, named with the owner's
/// pid (stale ones, whose keisoku is gone, are removed by the next
/// recording in that directory) and removed when the recording finishes.
struct Reserve(Option<PathBuf>);

impl Reserve {
    /// Holds the space back; none when it cannot (a disk full already).
    fn make(store: &Path, run: &str) -> Reserve {
        let dir = match store.parent() {
            Some(d) if !d.as_os_str().is_empty() => d.to_path_buf(),
            _ => PathBuf::from("."),
        };
        let Some(file) = store.file_name().and_then(|f| f.to_str()) else {
            return Reserve(None);
        };
        let prefix = format!(".{file}.reserve-pid");
        if let Ok(entries) = std::fs::read_dir(&dir) {
            for e in entries.flatten() {
                let name = e.file_name();
                let pid = name
                    .to_str()
                    .and_then(|n| n.strip_prefix(&prefix))
                    .and_then(|rest| rest.split_once('-'))
                    .and_then(|(pid, _)| pid.parse::<u32>().ok());
                if pid.is_some_and(|p| !owner_alive(p)) {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        let path = dir.join(format!("{prefix}{}-{run}", std::process::id()));
        // Real blocks (not a sparse file): zeros written, then synced.
        let made = std::fs::File::create(&path).and_then(|mut f| {
            use std::io::Write;
            f.write_all(&vec![0u8; RESERVE_BYTES])?;
            f.sync_all()
        });
        match made {
            Ok(()) => Reserve(Some(path)),
            Err(_) => {
                let _ = std::fs::remove_file(&path);
                Reserve(None)
            }
        }
    }

    /// Gives the space back.
    fn release(&mut self) {
        if let Some(p) = self.0.take() {
            let _ = std::fs::remove_file(p);
        }
    }
}

impl Drop for Reserve {
    fn drop(&mut self) {
        self.release();
    }
}

/// What a recording's temporary directory is named: the owner's pid
/// first, so a later keisoku can tell a dead owner's leftovers.
fn workdir_name(pid: u32, run: &str) -> String {
    format!("keisoku-pid{pid}-{run}")
}

/// Removes the working directories of recordings whose keisoku is gone
/// (killed with -9, power loss): only names [`workdir_name`] makes, and
/// only when their pid is no longer a keisoku.
fn remove_stale_workdirs(tmp: &Path) {
    let Ok(entries) = std::fs::read_dir(tmp) else {
        return;
    };
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .and_then(|n| n.strip_prefix("keisoku-pid"))
            .and_then(|rest| rest.split_once('-'))
            .and_then(|(pid, _)| pid.parse::<u32>().ok())
        else {
            continue;
        };
        if !owner_alive(pid) {
            let _ = std::fs::remove_dir_all(entry.path());
        }
    }
}

/// Whether `pid` is a live keisoku (a recycled pid running something else
/// does not keep a directory alive).
fn owner_alive(pid: u32) -> bool {
    alive(pid)
        && std::fs::read_to_string(format!("/proc/{pid}/comm"))
            .map(|c| c.trim().starts_with("keisoku"))
            .unwrap_or(true)
}

/// The server's process tree once it stops changing (at most 2 s): perf
/// attaches to the processes that exist when it starts, and a server that
/// answers on its port may still be forking its workers (nginx's master
/// listens before it forks them).
fn settled_tree(pid: u32) -> Vec<u32> {
    let read = || -> Vec<u32> {
        let mut pids: Vec<u32> = keisoku_probe::process_tree(Path::new("/proc"), pid)
            .map(|t| t.into_iter().map(|p| p.pid).collect())
            .unwrap_or_else(|_| vec![pid]);
        pids.sort_unstable();
        pids
    };
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut last = read();
    loop {
        std::thread::sleep(Duration::from_millis(150));
        let now = read();
        if now == last || Instant::now() >= deadline {
            return now;
        }
        last = now;
    }
}

/// Sampler points waiting to be written, grouped by series. Emptied
/// completely at every flush, names included: a server that starts and
/// ends threads all the time names new `thread.*` series every second, and
/// a buffer that remembered every name it ever saw grew without bound over
/// a long recording (issue 15 item 9). Memory is one flush's points.
#[derive(Default)]
struct PendingSeries {
    by_name: std::collections::BTreeMap<std::sync::Arc<str>, keisoku_store::Series>,
}

impl PendingSeries {
    fn push(&mut self, p: keisoku_probe::SeriesPoint) {
        let s = self
            .by_name
            .entry(p.name)
            .or_insert_with(|| keisoku_store::Series {
                name: String::new(),
                unit: p.unit.to_string(),
                t_ms: Vec::new(),
                v: Vec::new(),
            });
        s.t_ms.push(p.t_ns as f64 / 1e6);
        s.v.push(p.value);
    }

    /// Series held (each with at least one point).
    #[cfg(test)]
    fn held(&self) -> usize {
        self.by_name.len()
    }

    /// Writes every pending point and forgets everything, written or not
    /// (a failed write is reported; keeping its points would only grow).
    fn flush(&mut self, store: &Store, run: &str) -> keisoku_store::Result<()> {
        if self.by_name.is_empty() {
            return Ok(());
        }
        let chunks: Vec<keisoku_store::Series> = std::mem::take(&mut self.by_name)
            .into_iter()
            .map(|(name, s)| keisoku_store::Series {
                name: name.to_string(),
                ..s
            })
            .collect();
        store.append_series(run, &chunks)
    }
}

/// The series writer thread: buffers sampler points and writes them every
/// few seconds; returns problems met.
fn write_series(
    rx: std::sync::mpsc::Receiver<Vec<keisoku_probe::SeriesPoint>>,
    store_path: &Path,
    run: &str,
) -> Vec<String> {
    let store = match Store::open(store_path) {
        Ok(s) => s,
        Err(e) => return vec![format!("series not stored: {e}")],
    };
    let mut errors = Vec::new();
    let mut buf = PendingSeries::default();
    // The first write comes after about a second (the first rates), so a
    // recording killed early still leaves its first points.
    let mut last = Instant::now()
        .checked_sub(FLUSH_EVERY - Duration::from_millis(1100))
        .unwrap_or_else(Instant::now);
    loop {
        let done = match rx.recv_timeout(Duration::from_millis(500)) {
            Ok(points) => {
                for p in points {
                    buf.push(p);
                }
                false
            }
            Err(RecvTimeoutError::Timeout) => false,
            Err(RecvTimeoutError::Disconnected) => true,
        };
        if done || last.elapsed() >= FLUSH_EVERY {
            if let Err(e) = buf.flush(&store, run) {
                let msg = format!("storing series: {e}");
                if !errors.contains(&msg) {
                    errors.push(msg);
                }
            }
            last = Instant::now();
        }
        if done {
            return errors;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{
        place_pyspy_samples, place_wall_samples, remove_stale_workdirs, workdir_name, PendingSeries,
    };

    /// A py-spy speedscope file: two threads, 4 and 2 samples at 100 Hz,
    /// counted from attach as py-spy writes them.
    fn pyspy_profile() -> keisoku_stacks::Profile {
        let doc = r#"{"$schema":"https://www.speedscope.app/file-format-schema.json",
          "profiles":[
            {"type":"sampled","name":"Thread 1","unit":"seconds","startValue":0,"endValue":0.04,
             "samples":[[0],[0,1],[0,1],[0]],"weights":[0.01,0.01,0.01,0.01]},
            {"type":"sampled","name":"Thread 2","unit":"seconds","startValue":0,"endValue":0.02,
             "samples":[[0],[0]],"weights":[0.01,0.01]}],
          "shared":{"frames":[{"name":"handle","file":"app.py","line":1},{"name":"price","file":"app.py","line":2}]}}"#;
        keisoku_stacks::speedscope::parse(doc.as_bytes(), "py-spy").expect("speedscope")
    }

    #[test]
    fn wall_clock_samples_are_ticks_over_the_span_and_a_later_thread_ends_at_the_stop() {
        // py-spy --idle from 1 s to 5 s: the first thread was sampled at
        // all 4 ticks it managed, the second (started later) at the last 2.
        let mut p = pyspy_profile();
        place_wall_samples(&mut p, 1000.0, 5000.0);
        let t = p.samples.time_ns.clone().expect("times");
        let th = p.samples.thread.clone().expect("threads");
        let of = |k: u32| -> Vec<u64> {
            let mut v: Vec<u64> = t
                .iter()
                .zip(&th)
                .filter(|(_, &x)| x == k)
                .map(|(&t, _)| t / 1_000_000)
                .collect();
            v.sort_unstable();
            v
        };
        assert_eq!(of(0), vec![1500, 2500, 3500, 4500]);
        assert_eq!(of(1), vec![3500, 4500]);
    }

    #[test]
    fn pyspy_samples_fall_where_the_server_spent_cpu() {
        let mut p = pyspy_profile();
        // py-spy from 1 s to 5 s; the server idle until 3 s, then one core busy.
        let cpu = [(1000.0, 0.0), (2000.0, 0.0), (3000.0, 0.0), (4000.0, 100.0)];
        assert!(place_pyspy_samples(
            &mut p,
            &cpu,
            &Default::default(),
            1000.0,
            5000.0
        ));
        let t = p.samples.time_ns.clone().expect("times");
        let thread = p.samples.thread.clone().expect("threads");
        for (i, ns) in t.iter().enumerate() {
            let ms = *ns as f64 / 1e6;
            assert!((3000.0..=5000.0).contains(&ms), "sample {i} at {ms} ms");
        }
        // Each thread's samples keep their order and spread over the busy time.
        let first: Vec<f64> = (0..t.len())
            .filter(|&i| thread[i] == thread[0])
            .map(|i| t[i] as f64 / 1e6)
            .collect();
        assert_eq!(first.len(), 4);
        assert!(first.windows(2).all(|w| w[0] < w[1]), "{first:?}");
        assert!((first[0] - 3250.0).abs() < 1.0, "{first:?}");
        assert!((first[3] - 4750.0).abs() < 1.0, "{first:?}");
        // A thread with its own series follows it: thread 1 busy only in
        // its first second (a worker importing), thread 2 the server's CPU.
        let mut p = pyspy_profile();
        let mut own = std::collections::HashMap::new();
        own.insert(1u32, vec![(2000.0, 100.0), (3000.0, 0.0), (5000.0, 0.0)]);
        assert!(place_pyspy_samples(&mut p, &cpu, &own, 1000.0, 5000.0));
        let t = p.samples.time_ns.clone().expect("times");
        for (i, ns) in t.iter().enumerate() {
            let ms = *ns as f64 / 1e6;
            let want = if thread[i] == thread[0] {
                1000.0..=2000.0
            } else {
                3000.0..=5000.0
            };
            assert!(want.contains(&ms), "sample {i} at {ms} ms");
        }
        // Without a CPU series they spread over py-spy's span, and say so.
        let mut p = pyspy_profile();
        assert!(!place_pyspy_samples(
            &mut p,
            &[],
            &Default::default(),
            1000.0,
            5000.0
        ));
        let t = p.samples.time_ns.expect("times");
        assert!((t[0] as f64 / 1e6 - 1500.0).abs() < 1.0, "{t:?}");
    }
    use keisoku_store::{NewRun, Store};

    #[test]
    fn pending_series_forget_every_name_at_each_flush() {
        let dir = tempfile::tempdir().expect("tempdir");
        let store = Store::open(&dir.path().join("s.db")).expect("store");
        let run = store.create_run(&NewRun::default()).expect("run");
        let mut buf = PendingSeries::default();
        // Ten flushes of threads that live one second each: 500 names.
        for second in 0..10u64 {
            for tid in 0..50u64 {
                buf.push(keisoku_probe::SeriesPoint {
                    name: format!("thread.py:1:{}.cpu", second * 50 + tid).into(),
                    unit: "%",
                    t_ns: second * 1_000_000_000,
                    value: 1.0,
                });
            }
            assert_eq!(buf.held(), 50);
            buf.flush(&store, &run).expect("flush");
            assert_eq!(buf.held(), 0, "names outlived their flush");
        }
        let names = store.series_names(&run).expect("names");
        assert_eq!(names.len(), 500);
        // A series seen again continues where it stopped.
        buf.push(keisoku_probe::SeriesPoint {
            name: "thread.py:1:0.cpu".into(),
            unit: "%",
            t_ns: 11_000_000_000,
            value: 2.0,
        });
        buf.flush(&store, &run).expect("flush");
        let run_json = store.load(&run).expect("load");
        let s = run_json
            .series
            .iter()
            .find(|s| s.name == "thread.py:1:0.cpu")
            .expect("series");
        assert_eq!(s.v, vec![1.0, 2.0]);
    }

    #[test]
    fn only_a_dead_owners_working_directories_are_removed() {
        let tmp = tempfile::tempdir().expect("tempdir");
        // A pid above the kernel's maximum (4194304) never runs.
        let dead = tmp
            .path()
            .join(workdir_name(4_194_999, "20261124-010000-abcd"));
        let mine = tmp
            .path()
            .join(workdir_name(std::process::id(), "20261124-010000-beef"));
        let foreign = tmp.path().join("keisoku-demo-x1");
        for d in [&dead, &mine, &foreign] {
            std::fs::create_dir_all(d.join("perf")).expect("mkdir");
        }
        remove_stale_workdirs(tmp.path());
        assert!(!dead.exists(), "a dead owner's directory stays");
        assert!(
            foreign.exists(),
            "a directory keisoku did not name this way went"
        );
        // This test process is no keisoku unless its name says so.
        let me = std::fs::read_to_string("/proc/self/comm").unwrap_or_default();
        assert_eq!(mine.exists(), me.trim().starts_with("keisoku"));
    }
}
