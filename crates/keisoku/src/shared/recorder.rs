//! The recorder's flags shared by `run` and `record`, and how a recording's
//! errors and notes reach the user. The recording itself is crates/record.

use crate::exit::bad_input;
use crate::shared::store::{open_error, store_error, StoreArg};
use keisoku_record::{follow, recorder, ProfileKind};
use std::path::{Path, PathBuf};

/// Maps a recording's error to the exit status its cause deserves.
pub fn record_error(e: keisoku_record::Error) -> anyhow::Error {
    match e {
        keisoku_record::Error::OpenStore(e) => open_error(e),
        keisoku_record::Error::Store(e) => store_error(e),
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
    /// Follow this access log during the run (survives rotation and truncation).
    #[arg(long, value_name = "FILE")]
    pub access_log: Option<PathBuf>,
    /// Access log format.
    #[arg(long, value_name = "FORMAT", default_value = "ltsv", value_parser = ["ltsv", "json", "regexp"])]
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
    /// Parsed `--tag` pairs.
    pub fn tag_map(&self) -> anyhow::Result<std::collections::BTreeMap<String, String>> {
        let mut m = std::collections::BTreeMap::new();
        for t in &self.tags {
            let (k, v) = t
                .split_once('=')
                .filter(|(k, _)| !k.trim().is_empty())
                .ok_or_else(|| bad_input(format!("--tag {t:?}: expected KEY=VALUE")))?;
            m.insert(k.trim().to_string(), v.to_string());
        }
        Ok(m)
    }

    /// The sampling interval.
    pub fn interval(&self) -> anyhow::Result<std::time::Duration> {
        let d = keisoku_load::plan::parse_duration(&self.interval)
            .map_err(|e| bad_input(format!("--interval: {e}")))?;
        if d < keisoku_probe::MIN_INTERVAL {
            return Err(bad_input(format!(
                "--interval {}: must be at least 100ms",
                self.interval
            )));
        }
        Ok(d)
    }

    /// The watched process from --pid / --pidof.
    pub fn process(&self) -> anyhow::Result<Option<u32>> {
        if let Some(pid) = self.pid {
            if !recorder::alive(pid) {
                return Err(bad_input(format!("--pid {pid}: no such process")));
            }
            return Ok(Some(pid));
        }
        if let Some(name) = &self.pidof {
            let pid = keisoku_probe::pidof(Path::new("/proc"), name)
                .map_err(|e| bad_input(format!("--pidof {name}: {e}")))?;
            return Ok(Some(pid));
        }
        Ok(None)
    }

    /// The access-log parser and what to keep of its lines, checked before
    /// anything starts.
    pub fn access_log(
        &self,
    ) -> anyhow::Result<Option<(PathBuf, keisoku_logs::LineParser, follow::Keep)>> {
        let max_bytes = keisoku_common::parse_size(&self.log_lines_max).ok_or_else(|| {
            bad_input(format!(
                "--log-lines-max {:?}: use a size such as 1GiB, 200MB, 64KiB or a number of bytes",
                self.log_lines_max
            ))
        })?;
        match &self.access_log {
            None => Ok(None),
            Some(p) => {
                let parser = follow::parser(&self.log_format, self.log_regexp.as_deref())
                    .map_err(bad_input)?;
                let keep = follow::Keep {
                    format: self.log_format.clone(),
                    pattern: self.log_regexp.clone(),
                    lines: !self.no_log_lines && max_bytes > 0,
                    max_bytes,
                };
                Ok(Some((p.clone(), parser, keep)))
            }
        }
    }

    /// Recorder options for a run whose server is `pid`.
    pub fn options(
        &self,
        pid: Option<u32>,
        new_run: keisoku_store::NewRun,
    ) -> anyhow::Result<recorder::Options> {
        let profile = match self.profile {
            Some(p) => p.kind(),
            None if pid.is_some() || self.profile_all_cpus => ProfileKind::Perf,
            None => ProfileKind::None,
        };
        Ok(recorder::Options {
            store_path: self.store.path(),
            new_run,
            interval: self.interval()?,
            pid,
            profile,
            profile_hz: self.profile_hz.clamp(1, 10_000),
            all_cpus: self.profile_all_cpus,
            access_log: self.access_log()?,
            profile_auto: self.profile.is_none(),
        })
    }
}

/// `--profile`: which profiler to run (the record crate's
/// [`ProfileKind`], spelled for the command line).
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum ProfileArg {
    /// `perf record -g` (native, kernel, JIT with perf maps).
    Perf,
    /// py-spy for Python servers.
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
