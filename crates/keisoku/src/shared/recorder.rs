//! The recorder's flags shared by `run` and `record`, and how a recording's
//! errors and notes reach the user. The recording itself is crates/record.

use crate::exit::bad_input;
use crate::shared::store::{open_error, store_error, StoreArg};
use keisoku_record::{Options, ProfileKind, RecorderFlags};
use std::path::PathBuf;

/// Maps a recording's error to the exit status its cause deserves.
pub fn record_error(e: keisoku_record::Error) -> anyhow::Error {
    match e {
        keisoku_record::Error::OpenStore(e) => open_error(e),
        keisoku_record::Error::Store(e) => store_error(e),
        keisoku_record::Error::Input(msg) => bad_input(msg),
        other => anyhow::Error::new(other),
    }
}

/// Recorder flags shared by `keisoku run` and `keisoku record`.
#[derive(clap::Args, Debug, Clone)]
pub struct RecorderArgs {
    /// Watch this server process (with its threads and children).
    #[arg(long, value_name = "PID", conflicts_with = "pidof")]
    pub pid: Option<u32>,
    /// Watch the oldest process with this command name.
    #[arg(long, value_name = "NAME")]
    pub pidof: Option<String>,
    /// Profiler [default: perf when a server process is known, else none].
    #[arg(long, value_enum, value_name = "PROFILER")]
    pub profile: Option<ProfileArg>,
    /// Profiler sampling frequency in Hz.
    #[arg(long, value_name = "HZ", default_value_t = 99)]
    pub profile_hz: u32,
    /// perf: sample every CPU, not only the server's processes.
    #[arg(long)]
    pub profile_all_cpus: bool,
    /// A wall-clock profile beside the CPU profile (`flame --kind wall`): auto = py-spy's
    /// second, `--idle` recording (read by blocking-wait); on = also async-profiler's wall
    /// mode in a JVM server under perf (an agent loaded into the JVM with jcmd, which stays
    /// loaded after the run; read by blocking-wait too); off = the CPU profile only.
    #[arg(long, value_enum, value_name = "WHEN", default_value = "auto")]
    pub wall_profile: WallProfileArg,
    /// Follow this access log during the run (survives rotation and truncation).
    #[arg(long, value_name = "FILE")]
    pub access_log: Option<PathBuf>,
    /// Access log format: ltsv, json, regexp, or a built-in one with response
    /// times (apache-us, apache-s, caddy, cloudfront, elb, alb, s3; see `keisoku logs caddy --help`).
    #[arg(long, value_name = "FORMAT", default_value = "ltsv", value_parser = keisoku_logs::Format::names())]
    pub log_format: String,
    /// --log-format regexp: the pattern (named groups as alp) [default: alp's combined-log pattern].
    #[arg(long, value_name = "REGEXP")]
    pub log_regexp: Option<String>,
    /// Raw bytes of access-log lines kept with the run (for `keisoku logs RUN -f/-q/--slow/--timeline`),
    /// e.g. 1GiB, 200MB (0: as --no-log-lines). Stored compressed, about a tenth of the raw size for nginx logs.
    /// Past the cap lines still count in the route table but are not kept.
    #[arg(long, value_name = "SIZE", default_value = "1GiB")]
    pub log_lines_max: String,
    /// Do not keep the access-log lines, only per-route statistics and per-second histograms.
    #[arg(long)]
    pub no_log_lines: bool,
    /// Host and process sampling interval (100ms or more).
    #[arg(long, value_name = "DUR", default_value = "1s")]
    pub interval: String,
    /// A name for the run (`keisoku show NAME` finds its newest run).
    #[arg(long, value_name = "NAME", default_value = "")]
    pub name: String,
    /// A tag k=v stored with the run (repeatable).
    #[arg(long = "tag", value_name = "K=V")]
    pub tags: Vec<String>,
    #[command(flatten)]
    pub store: StoreArg,
}

impl RecorderArgs {
    /// Recorder options for a run described by `new_run` (its tags come
    /// from `--tag`); the checks are keisoku-record's, a refused flag is
    /// bad input. The watched process (`--pid`/`--pidof`) is in `pid`.
    pub fn options(&self, new_run: keisoku_store::NewRun) -> anyhow::Result<Options> {
        let flags = RecorderFlags {
            pid: self.pid,
            pidof: self.pidof.as_deref(),
            profile: self.profile.map(ProfileArg::kind),
            profile_hz: self.profile_hz,
            profile_all_cpus: self.profile_all_cpus,
            wall_profile: self.wall_profile.kind(),
            access_log: self.access_log.as_deref(),
            log_format: &self.log_format,
            log_regexp: self.log_regexp.as_deref(),
            log_lines_max: &self.log_lines_max,
            no_log_lines: self.no_log_lines,
            interval: &self.interval,
            tags: &self.tags,
            store_path: self.store.path(),
        };
        Options::from_flags(&flags, new_run).map_err(bad_input)
    }
}

/// `--wall-profile`: whether a wall-clock profile is recorded (the record
/// crate's [`keisoku_record::WallProfile`], spelled for the command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum WallProfileArg {
    /// py-spy's `--idle` recording beside py-spy; none for a JVM.
    Auto,
    /// Also async-profiler's wall mode in a JVM server under perf.
    On,
    /// The CPU profile only.
    Off,
}

impl WallProfileArg {
    /// The choice this flag value names.
    pub fn kind(self) -> keisoku_record::WallProfile {
        match self {
            WallProfileArg::Auto => keisoku_record::WallProfile::Auto,
            WallProfileArg::On => keisoku_record::WallProfile::On,
            WallProfileArg::Off => keisoku_record::WallProfile::Off,
        }
    }
}

/// `--profile`: which profiler to run (the record crate's
/// [`ProfileKind`], spelled for the command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProfileArg {
    /// `perf record -g` (native, kernel, JIT with perf maps); with
    /// `--wall-profile on`, for a JVM server also a wall-clock profile
    /// (async-profiler's wall mode, attached with jcmd).
    Perf,
    /// py-spy for Python servers (and a second, `--idle` py-spy: the
    /// wall-clock profile).
    PySpy,
    /// No profile.
    None,
}

impl ProfileArg {
    /// The profiler this flag value names.
    pub fn kind(self) -> ProfileKind {
        match self {
            ProfileArg::Perf => ProfileKind::Perf,
            ProfileArg::PySpy => ProfileKind::PySpy,
            ProfileArg::None => ProfileKind::None,
        }
    }
}

/// The command line as typed, for the run's record.
pub fn command_line() -> String {
    std::env::args()
        .map(|a| {
            if a.is_empty() || a.contains(|c: char| c.is_whitespace() || "'\"$`\\".contains(c)) {
                format!("'{}'", a.replace('\'', "'\\''"))
            } else {
                a
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Prints notes to stderr, one per line.
pub fn print_notes(notes: &[String]) {
    for n in notes {
        eprintln!("keisoku: note: {n}");
    }
}

/// Says what the run could not keep (a full disk mid-run, an access log
/// that broke a size limit) and whether
/// anything was lost: the run is then `partial` (or interrupted) and the
/// command exits 1.
pub fn report_lost(run: &str, status: &str, lost: &[String]) -> bool {
    if lost.is_empty() {
        return false;
    }
    eprintln!("keisoku: error: run {run} could not keep everything (the store failed, or the access log broke a limit); kept as far as it could be, marked {status}:");
    for l in lost {
        eprintln!("  not kept: {l}");
    }
    true
}
