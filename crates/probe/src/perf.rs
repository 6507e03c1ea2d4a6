//! Drives `perf record` on the run's clock and turns the recording into
//! `perf script` text for crates/stacks.

use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::child::{die_with_parent, drain, first_line, interrupt, run_bounded};

/// Maps perf's sample timestamps to the run's clock.
///
/// perf records with `-k CLOCK_MONOTONIC`, the clock `Instant` uses on
/// Linux, so a perf time minus the monotonic time of the run's origin is
/// the sample's offset into the run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClockMap {
    /// CLOCK_MONOTONIC reading (ns) at the run's origin `Instant`.
    pub origin_monotonic_ns: u64,
}

impl ClockMap {
    /// The map for a run whose clock starts at `origin`.
    pub fn for_origin(origin: Instant) -> ClockMap {
        let now = crate::procfs::monotonic_ns();
        let since = u64::try_from(origin.elapsed().as_nanos()).unwrap_or(u64::MAX);
        ClockMap {
            origin_monotonic_ns: now.saturating_sub(since),
        }
    }

    /// Run time (ns since origin; negative before it) of a perf timestamp in ns.
    pub fn to_run_ns(&self, perf_ns: u64) -> i64 {
        perf_ns as i64 - self.origin_monotonic_ns as i64
    }

    /// Run time of a timestamp as `perf script` prints it (`1234.567890`).
    pub fn perf_secs_to_run_ns(&self, perf_secs: f64) -> i64 {
        (perf_secs * 1e9).round() as i64 - self.origin_monotonic_ns as i64
    }
}

/// What `perf record` watches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PerfTarget {
    /// These processes with all their threads (and children they start later).
    Pids(Vec<u32>),
    /// Every CPU (`perf record -a`), which needs more privilege.
    AllCpus,
}

/// How to run perf.
#[derive(Clone, Debug)]
pub struct PerfOptions {
    /// Sampling frequency in Hz (default 99: off the beat of 100 Hz timers).
    pub hz: u32,
    /// What to record.
    pub target: PerfTarget,
    /// Directory for `perf.data` and `perf.script`.
    pub output_dir: PathBuf,
    /// The perf executable.
    pub perf: PathBuf,
    /// `--call-graph` mode: `fp` (frame pointers, cheap) or `dwarf`.
    pub call_graph: String,
    /// Processes that may be JIT runtimes (JVM, Node): their perf maps are
    /// written or checked before `perf script`. Defaults to the target pids.
    pub jit_pids: Vec<u32>,
    /// The run's clock origin.
    pub origin: Instant,
}

impl PerfOptions {
    /// 99 Hz, frame-pointer call graphs, `perf` from PATH.
    pub fn new(target: PerfTarget, output_dir: impl Into<PathBuf>, origin: Instant) -> PerfOptions {
        let jit_pids = match &target {
            PerfTarget::Pids(p) => p.clone(),
            PerfTarget::AllCpus => Vec::new(),
        };
        PerfOptions {
            hz: 99,
            target,
            output_dir: output_dir.into(),
            perf: PathBuf::from("perf"),
            call_graph: "fp".to_string(),
            jit_pids,
            origin,
        }
    }
}

/// Why profiling is unavailable or failed. Callers go on without a profile.
#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    /// The profiler is not installed.
    #[error("{tool} is not installed ({detail}); fix: {fix}")]
    ToolMissing {
        /// `perf` or `py-spy`.
        tool: &'static str,
        /// What was seen.
        detail: String,
        /// How to install it.
        fix: &'static str,
    },
    /// The kernel refuses (perf_event_paranoid, missing capability, ptrace scope).
    #[error("{tool} is not permitted here: {detail}; fix: {fix}")]
    NotPermitted {
        /// `perf` or `py-spy`.
        tool: &'static str,
        /// The profiler's own words, first line.
        detail: String,
        /// How to allow it.
        fix: &'static str,
    },
    /// Anything else the profiler reported.
    #[error("{what} failed: {detail}")]
    Failed {
        /// The command that failed.
        what: String,
        /// Its error output, shortened.
        detail: String,
    },
    /// Files could not be written.
    #[error("{what}: {source}")]
    Io {
        /// What was being done.
        what: String,
        /// The cause.
        source: std::io::Error,
    },
}

const PERF_INSTALL_FIX: &str =
    "install perf (Debian: apt-get install linux-perf; Ubuntu: linux-tools-$(uname -r))";
const PERF_PERMISSION_FIX: &str = "run as root, or `sysctl kernel.perf_event_paranoid=1` (per-process) / `=-1` (all CPUs), or grant CAP_PERFMON; in a container allow the perf_event_open syscall";

/// The result of a finished recording.
#[derive(Clone, Debug)]
pub struct PerfOutput {
    /// `perf script` text: fields comm, pid/tid, [cpu], time, event, and
    /// for each frame ip, symbol and (dso).
    pub script_path: PathBuf,
    /// The raw `perf.data`.
    pub data_path: PathBuf,
    /// perf time to run time.
    pub clock: ClockMap,
    /// Event sampled: `cycles`, or `cpu-clock` where hardware counters are
    /// unavailable (VMs, containers).
    pub event: String,
    /// Sample count perf reported, when it did.
    pub samples: Option<u64>,
    /// Hints and warnings (missing JIT maps, lost samples).
    pub notes: Vec<String>,
}

/// A running `perf record`.
pub struct PerfRecorder {
    child: Child,
    stderr: Option<JoinHandle<String>>,
    options: PerfOptions,
    data_path: PathBuf,
    event: String,
    clock: ClockMap,
}

fn classify(stderr: &str, what: &str) -> ProfileError {
    let lower = stderr.to_ascii_lowercase();
    if lower.contains("not found for kernel") || lower.contains("command not found") {
        return ProfileError::ToolMissing {
            tool: "perf",
            detail: first_line(stderr),
            fix: PERF_INSTALL_FIX,
        };
    }
    if lower.contains("perf_event_paranoid")
        || lower.contains("permission denied")
        || lower.contains("not permitted")
        || lower.contains("access to performance monitoring")
        || lower.contains("no permission")
    {
        return ProfileError::NotPermitted {
            tool: "perf",
            detail: first_line(stderr),
            fix: PERF_PERMISSION_FIX,
        };
    }
    ProfileError::Failed {
        what: what.to_string(),
        detail: first_line(stderr),
    }
}

fn spawn_perf(perf: &Path) -> Result<(), ProfileError> {
    match Command::new(perf)
        .arg("--version")
        .stdin(Stdio::null())
        .output()
    {
        Ok(o) if o.status.success() => Ok(()),
        Ok(o) => {
            let text = String::from_utf8_lossy(&o.stderr).into_owned()
                + &String::from_utf8_lossy(&o.stdout);
            Err(match classify(&text, "perf --version") {
                ProfileError::Failed { detail, .. } => ProfileError::ToolMissing {
                    tool: "perf",
                    detail,
                    fix: PERF_INSTALL_FIX,
                },
                e => e,
            })
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(ProfileError::ToolMissing {
            tool: "perf",
            detail: format!("{} not found in PATH", perf.display()),
            fix: PERF_INSTALL_FIX,
        }),
        Err(e) => Err(ProfileError::Io {
            what: format!("running {}", perf.display()),
            source: e,
        }),
    }
}

fn record_args(o: &PerfOptions, event: &str, out: &Path, no_bpf: bool) -> Vec<String> {
    let mut a = vec![
        "record".to_string(),
        "-e".into(),
        event.into(),
        "-F".into(),
        o.hz.to_string(),
        "--call-graph".into(),
        o.call_graph.clone(),
        // Per-thread recordings leave the CPU out unless asked.
        "--sample-cpu".into(),
        "-k".into(),
        "CLOCK_MONOTONIC".into(),
        "-o".into(),
        out.display().to_string(),
    ];
    // Start with events off and enable them 1 ms after setup: perf then
    // prints "Events enabled", which tells `start` that recording has
    // really begun (attaching to a big JIT process can take seconds, and
    // a SIGINT before that leaves an empty perf.data).
    a.push("-D".into());
    a.push("1".into());
    if no_bpf {
        // Listing BPF programs at startup costs about a second and a web
        // server's profile does not need them.
        a.push("--no-bpf-event".into());
    }
    match &o.target {
        PerfTarget::Pids(pids) => {
            a.push("-p".into());
            a.push(
                pids.iter()
                    .map(u32::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            );
        }
        PerfTarget::AllCpus => a.push("-a".into()),
    }
    a
}

/// Tries `event` with a recording of `true` (or of all CPUs while `true`
/// runs), which fails fast where the event or the privilege is missing.
/// Returns the event perf really used: perf itself quietly swaps `cycles`
/// for `cpu-clock` on machines without a usable PMU.
fn probe_event(o: &PerfOptions, event: &str, no_bpf: bool) -> Result<String, ProfileError> {
    let probe_out = o.output_dir.join(".perf-probe.data");
    let mut args = record_args(o, event, &probe_out, no_bpf);
    // Replace the target with a trivial child of the same privilege class.
    if let Some(i) = args.iter().position(|a| a == "-p") {
        args.truncate(i);
    }
    if let Some(i) = args.iter().position(|a| a == "-a") {
        args.truncate(i + 1);
    }
    args.push("-q".into());
    args.push("--".into());
    args.push("true".into());
    let out = die_with_parent(&mut Command::new(&o.perf))
        .args(&args)
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .output()
        .map_err(|e| ProfileError::Io {
            what: format!("running {}", o.perf.display()),
            source: e,
        })?;
    if out.status.success() {
        let used = run_bounded(
            Command::new(&o.perf)
                .arg("evlist")
                .arg("-i")
                .arg(&probe_out),
            Duration::from_secs(10),
        )
        .ok()
        .and_then(|b| {
            b.stdout
                .lines()
                .next()
                .map(|l| l.trim().split(':').next().unwrap_or("").to_string())
        })
        .filter(|e| !e.is_empty())
        .unwrap_or_else(|| event.to_string());
        let _ = std::fs::remove_file(&probe_out);
        Ok(used)
    } else {
        let _ = std::fs::remove_file(&probe_out);
        Err(classify(
            &String::from_utf8_lossy(&out.stderr),
            &format!("perf record -e {event}"),
        ))
    }
}

fn exe_name(pid: u32) -> String {
    std::fs::read_link(format!("/proc/{pid}/exe"))
        .ok()
        .and_then(|p| p.file_name().map(|n| n.to_string_lossy().into_owned()))
        .or_else(|| {
            std::fs::read_to_string(format!("/proc/{pid}/comm"))
                .ok()
                .map(|s| s.trim().to_string())
        })
        .unwrap_or_default()
}

/// The sample count from perf's summary line, "[ perf record: Captured and
/// wrote 0.020 MB perf.data (93 samples) ]"; perf leaves the count out when
/// there were none.
fn sample_count(stderr: &str) -> Option<u64> {
    let line = stderr
        .lines()
        .find(|l| l.contains("perf record: Captured"))?;
    let Some(open) = line.rfind('(') else {
        return Some(0);
    };
    let mut words = line[open + 1..].split_whitespace();
    match (words.next().map(str::parse::<u64>), words.next()) {
        (Some(Ok(n)), Some(w)) if w.starts_with("sample") => Some(n),
        _ => Some(0),
    }
}

impl PerfRecorder {
    /// Checks perf and the event, then starts recording. An error means no
    /// profile for this run, with the reason and the fix.
    pub fn start(options: PerfOptions) -> Result<PerfRecorder, ProfileError> {
        if let PerfTarget::Pids(p) = &options.target {
            if p.is_empty() {
                return Err(ProfileError::Failed {
                    what: "perf record".into(),
                    detail: "no process to record".into(),
                });
            }
        }
        spawn_perf(&options.perf)?;
        std::fs::create_dir_all(&options.output_dir).map_err(|e| ProfileError::Io {
            what: format!("creating {}", options.output_dir.display()),
            source: e,
        })?;
        // Hardware cycles where the CPU exposes them; the cpu-clock software
        // event (timer based, works in VMs and containers) otherwise.
        let mut no_bpf = true;
        let first = match probe_event(&options, "cycles", no_bpf) {
            Err(ProfileError::Failed { detail, .. }) if detail.contains("no-bpf-event") => {
                // A perf older than 5.1 does not know the option.
                no_bpf = false;
                probe_event(&options, "cycles", no_bpf)
            }
            r => r,
        };
        let event = match first {
            Ok(used) if used.starts_with("cpu-clock") => "cpu-clock".to_string(),
            Ok(_) => "cycles".to_string(),
            Err(e @ (ProfileError::NotPermitted { .. } | ProfileError::ToolMissing { .. })) => {
                return Err(e)
            }
            Err(_) => {
                probe_event(&options, "cpu-clock", no_bpf)?;
                "cpu-clock".to_string()
            }
        };
        let data_path = options.output_dir.join("perf.data");
        let args = record_args(&options, &event, &data_path, no_bpf);
        let clock = ClockMap::for_origin(options.origin);
        let mut child = die_with_parent(&mut Command::new(&options.perf))
            .args(&args)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| ProfileError::Io {
                what: format!("starting {}", options.perf.display()),
                source: e,
            })?;
        let (ready_tx, ready_rx) = std::sync::mpsc::channel();
        let stderr = child
            .stderr
            .take()
            .map(|e| drain(e, Some((ready_tx, "Events enabled"))));
        let mut rec = PerfRecorder {
            child,
            stderr,
            options,
            data_path,
            event,
            clock,
        };
        // Wait until perf records, or fails (the target is not attachable).
        let until = Instant::now() + Duration::from_secs(20);
        loop {
            match ready_rx.recv_timeout(Duration::from_millis(20)) {
                Ok(()) => break,
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected)
                | Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            }
            if let Ok(Some(status)) = rec.child.try_wait() {
                let text = rec
                    .stderr
                    .take()
                    .and_then(|h| h.join().ok())
                    .unwrap_or_default();
                if !status.success() {
                    return Err(classify(&text, "perf record"));
                }
                break;
            }
            if Instant::now() >= until {
                break;
            }
        }
        Ok(rec)
    }

    /// The clock map of this recording.
    pub fn clock(&self) -> ClockMap {
        self.clock
    }

    /// The event being sampled.
    pub fn event(&self) -> &str {
        &self.event
    }

    /// Stops perf with SIGINT (it then writes its buffers), writes JIT
    /// maps, and runs `perf script`.
    pub fn stop(mut self) -> Result<PerfOutput, ProfileError> {
        let mut notes = Vec::new();
        // Ask running JVMs for their perf map while they are still up.
        for &pid in &self.options.jit_pids {
            let exe = exe_name(pid);
            if exe == "java" {
                let map = PathBuf::from(format!("/tmp/perf-{pid}.map"));
                match run_bounded(
                    Command::new("jcmd").arg(pid.to_string()).arg("Compiler.perfmap"),
                    Duration::from_secs(30),
                ) {
                    Ok(b) if b.status.is_some_and(|s| s.success()) && map.exists() => {}
                    Ok(b) => notes.push(format!(
                        "JVM {pid}: `jcmd {pid} Compiler.perfmap` did not write {} ({}); Java frames will show as addresses",
                        map.display(),
                        if b.status.is_none() { "timed out after 30 s".to_string() } else { first_line(&b.stderr) }
                    )),
                    Err(e) => notes.push(format!(
                        "JVM {pid}: cannot run jcmd ({e}); install a JDK for Java frame names"
                    )),
                }
                // Only when the flag is really absent: the JVM's own
                // command line says (a later -XX:-PreserveFramePointer wins).
                if !preserves_frame_pointer(
                    &std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default(),
                ) {
                    notes.push(format!(
                        "JVM {pid}: Java stacks are complete only with -XX:+PreserveFramePointer"
                    ));
                }
            } else if exe == "node" || exe == "nodejs" {
                let map = format!("/tmp/perf-{pid}.map");
                if !Path::new(&map).exists() {
                    notes.push(format!(
                        "Node {pid}: {map} is missing; start node with --perf-basic-prof (or --perf-basic-prof-only-functions) for JavaScript frame names"
                    ));
                }
            }
        }

        if !interrupt(&mut self.child, Duration::from_secs(30)) {
            notes.push("perf record did not stop within 30 s of SIGINT and was killed; the profile may be cut short".into());
        }
        let stderr = self
            .stderr
            .take()
            .and_then(|h| h.join().ok())
            .unwrap_or_default();
        let samples = sample_count(&stderr);
        for l in stderr.lines() {
            let t = l.trim();
            if t.contains("lost") || t.starts_with("Warning") {
                notes.push(format!("perf: {t}"));
            }
        }
        if samples.is_none() {
            let last = stderr
                .lines()
                .map(str::trim)
                .rfind(|l| !l.is_empty())
                .unwrap_or("(no output)");
            notes.push(format!(
                "perf record ended without its summary line; the profile may be cut short: {last}"
            ));
        }
        let data_ok = std::fs::metadata(&self.data_path).is_ok_and(|m| m.len() > 0);
        if !data_ok {
            return Err(ProfileError::Failed {
                what: "perf record".into(),
                detail: format!(
                    "no data written to {} ({})",
                    self.data_path.display(),
                    first_line(&stderr)
                ),
            });
        }

        let script_path = self.options.output_dir.join("perf.script");
        let script_out = File::create(&script_path).map_err(|e| ProfileError::Io {
            what: format!("creating {}", script_path.display()),
            source: e,
        })?;
        let out = die_with_parent(&mut Command::new(&self.options.perf))
            .arg("script")
            .arg("-i")
            .arg(&self.data_path)
            .arg("-F")
            .arg("comm,pid,tid,cpu,time,event,ip,sym,dso")
            .stdin(Stdio::null())
            .stdout(script_out)
            .stderr(Stdio::piped())
            .output()
            .map_err(|e| ProfileError::Io {
                what: "running perf script".into(),
                source: e,
            })?;
        if !out.status.success() {
            return Err(ProfileError::Failed {
                what: "perf script".into(),
                detail: first_line(&String::from_utf8_lossy(&out.stderr)),
            });
        }
        if samples == Some(0) {
            notes.push("perf recorded no samples (the process was idle or exited)".into());
        }
        Ok(PerfOutput {
            script_path,
            data_path: self.data_path.clone(),
            clock: self.clock,
            event: self.event.clone(),
            samples,
            notes,
        })
    }
}

impl Drop for PerfRecorder {
    fn drop(&mut self) {
        // A recorder dropped without stop() must not leave perf running.
        interrupt(&mut self.child, Duration::from_secs(5));
    }
}

/// Whether a JVM's command line (`/proc/PID/cmdline`: NUL-separated
/// arguments) turns on `-XX:+PreserveFramePointer`, the last setting
/// winning; `JAVA_TOOL_OPTIONS` and `JDK_JAVA_OPTIONS` are not on it, so a
/// flag set there still draws the hint.
fn preserves_frame_pointer(cmdline: &[u8]) -> bool {
    cmdline
        .split(|b| *b == 0)
        .rev()
        .find_map(|a| match a {
            b"-XX:+PreserveFramePointer" => Some(true),
            b"-XX:-PreserveFramePointer" => Some(false),
            _ => None,
        })
        .unwrap_or(false)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_count_from_the_summary_line() {
        let with = "[ perf record: Woken up 1 times to write data ]\n[ perf record: Captured and wrote 0.020 MB /tmp/n (93 samples) ]\n";
        assert_eq!(sample_count(with), Some(93));
        let none = "[ perf record: Captured and wrote 0.001 MB /tmp/x.data ]\n";
        assert_eq!(sample_count(none), Some(0));
        assert_eq!(sample_count("Events disabled\nEvents enabled\n"), None);
    }

    #[test]
    fn clock_map_round_trip() {
        let c = ClockMap {
            origin_monotonic_ns: 5_000_000_000,
        };
        assert_eq!(c.to_run_ns(6_500_000_000), 1_500_000_000);
        assert_eq!(c.perf_secs_to_run_ns(6.5), 1_500_000_000);
        assert_eq!(c.to_run_ns(4_000_000_000), -1_000_000_000);
    }

    #[test]
    fn frame_pointer_flag_read_from_the_jvm_command_line() {
        assert!(preserves_frame_pointer(
            b"java\0-XX:+PreserveFramePointer\0-cp\0.\0Main\0"
        ));
        assert!(!preserves_frame_pointer(b"java\0-cp\0.\0Main\0"));
        assert!(!preserves_frame_pointer(
            b"java\0-XX:+PreserveFramePointer\0-XX:-PreserveFramePointer\0Main\0"
        ));
    }
}
