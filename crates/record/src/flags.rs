//! The recorder's flags, as `keisoku run` and `keisoku record` take them,
//! checked and turned into recording [`Options`]. The binary only maps its
//! clap fields into a [`RecorderFlags`]; every check and default lives here
//! so both commands refuse the same input with the same words.

use crate::follow::{self, Keep};
use crate::recorder::{alive, Options, ProfileKind};
use keisoku_store::NewRun;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The recorder's flag values, unparsed, as the user gave them.
#[derive(Debug, Clone, Default)]
pub struct RecorderFlags<'a> {
    /// `--pid`: the server process to watch.
    pub pid: Option<u32>,
    /// `--pidof`: watch the oldest process with this command name.
    pub pidof: Option<&'a str>,
    /// `--profile`, when given (None: perf once a server process is known).
    pub profile: Option<ProfileKind>,
    /// `--profile-hz`.
    pub profile_hz: u32,
    /// `--profile-all-cpus`.
    pub profile_all_cpus: bool,
    /// `--wall-profile`.
    pub wall_profile: crate::WallProfile,
    /// `--access-log`.
    pub access_log: Option<&'a Path>,
    /// `--log-format`: ltsv, json or regexp.
    pub log_format: &'a str,
    /// `--log-regexp`.
    pub log_regexp: Option<&'a str>,
    /// `--log-lines-max`, a size such as `1GiB`.
    pub log_lines_max: &'a str,
    /// `--no-log-lines`.
    pub no_log_lines: bool,
    /// `--interval`, a duration such as `1s`.
    pub interval: &'a str,
    /// `--tag K=V`, repeated.
    pub tags: &'a [String],
    /// The run store file (`--store`, resolved).
    pub store_path: PathBuf,
}

/// A recorder flag the user got wrong (the binary exits with status 2).
/// The texts are the ones `keisoku run` and `keisoku record` have always
/// printed.
#[derive(Debug, thiserror::Error)]
pub enum FlagError {
    /// `--pid` names no running process.
    #[error("--pid {0}: no such process")]
    NoSuchPid(u32),
    /// `--pidof` found no process (or could not look).
    #[error("--pidof {name}: {source}")]
    Pidof {
        /// The command name asked for.
        name: String,
        /// Why no process was found.
        source: keisoku_probe::ProbeError,
    },
    /// A `--tag` is not `KEY=VALUE` with a non-blank key.
    #[error("--tag {0:?}: expected KEY=VALUE")]
    Tag(String),
    /// `--interval` is not a duration.
    #[error("--interval: {0}")]
    Interval(#[source] keisoku_common::DurationError),
    /// `--interval` is shorter than the probes can sample.
    #[error("--interval {0}: must be at least 100ms")]
    IntervalTooShort(String),
    /// `--log-lines-max` is not a size.
    #[error("--log-lines-max {0:?}: use a size such as 1GiB, 200MB, 64KiB or a number of bytes")]
    LogLinesMax(String),
    /// `--log-format`/`--log-regexp` do not make a parser.
    #[error("{0}")]
    LogFormat(String),
    /// `--log-regexp` lacks a named group every route needs.
    #[error("--log-regexp {pattern:?}: no named group (?P<{group}>...); it needs uri, method and status, and response_time or request_time for latencies")]
    LogRegexpGroups {
        /// The pattern as given.
        pattern: String,
        /// The first group missing.
        group: &'static str,
    },
    /// `--access-log` names a directory, or a file in a directory that
    /// does not exist.
    #[error("--access-log {path}: {why}")]
    AccessLogPath {
        /// The path as given.
        path: String,
        /// What is wrong with it.
        why: String,
    },
    /// `--profile-hz` outside what a profiler can sample.
    #[error("--profile-hz {0}: use 1 to {max}", max = MAX_PROFILE_HZ)]
    ProfileHz(u32),
}

/// The highest `--profile-hz` accepted: beyond it perf throttles itself
/// (kernel.perf_event_max_sample_rate) and the profiler costs more than the
/// server it watches.
pub const MAX_PROFILE_HZ: u32 = 10_000;

impl Options {
    /// Checks the recorder's flags and builds the options of a recording
    /// whose run is `new_run` (its tags come from `--tag`). The checks run
    /// in the order the commands always made them: the process, the tags,
    /// the interval, then the access log.
    pub fn from_flags(flags: &RecorderFlags, mut new_run: NewRun) -> Result<Options, FlagError> {
        let pid = flags.process()?;
        new_run.tags = tag_map(flags.tags)?;
        let interval = interval(flags.interval)?;
        if flags.profile_hz == 0 || flags.profile_hz > MAX_PROFILE_HZ {
            return Err(FlagError::ProfileHz(flags.profile_hz));
        }
        let access_log = flags.access_log()?;
        let profile = match flags.profile {
            Some(p) => p,
            None if pid.is_some() || flags.profile_all_cpus => ProfileKind::Perf,
            None => ProfileKind::None,
        };
        Ok(Options {
            store_path: flags.store_path.clone(),
            new_run,
            interval,
            pid,
            profile,
            profile_hz: flags.profile_hz,
            all_cpus: flags.profile_all_cpus,
            wall_profile: flags.wall_profile,
            access_log,
            profile_auto: flags.profile.is_none(),
        })
    }
}

impl RecorderFlags<'_> {
    /// The watched process from `--pid` / `--pidof`.
    fn process(&self) -> Result<Option<u32>, FlagError> {
        if let Some(pid) = self.pid {
            if !alive(pid) {
                return Err(FlagError::NoSuchPid(pid));
            }
            return Ok(Some(pid));
        }
        if let Some(name) = self.pidof {
            let pid = keisoku_probe::pidof(Path::new("/proc"), name).map_err(|source| {
                FlagError::Pidof {
                    name: name.to_string(),
                    source,
                }
            })?;
            return Ok(Some(pid));
        }
        Ok(None)
    }

    /// The access-log parser and what to keep of its lines. The size is
    /// checked even without `--access-log`, so a typo is caught early.
    #[allow(clippy::type_complexity)]
    fn access_log(&self) -> Result<Option<(PathBuf, keisoku_logs::LineParser, Keep)>, FlagError> {
        let max_bytes = keisoku_common::parse_size(self.log_lines_max)
            .ok_or_else(|| FlagError::LogLinesMax(self.log_lines_max.to_string()))?;
        let Some(path) = self.access_log else {
            return Ok(None);
        };
        if path.is_dir() {
            return Err(FlagError::AccessLogPath {
                path: path.display().to_string(),
                why: "is a directory, not a log file".into(),
            });
        }
        let parent = match path.parent() {
            Some(p) if !p.as_os_str().is_empty() => p,
            _ => Path::new("."),
        };
        if !parent.is_dir() {
            return Err(FlagError::AccessLogPath {
                path: path.display().to_string(),
                why: format!("the directory {} does not exist", parent.display()),
            });
        }
        let parser =
            follow::parser(self.log_format, self.log_regexp).map_err(FlagError::LogFormat)?;
        if let (Some(pattern), keisoku_logs::Format::Regexp { pattern: re, .. }) =
            (self.log_regexp, parser.format())
        {
            let has = |g: &str| re.capture_names().any(|n| n == Some(g));
            let missing = ["uri", "method", "status"]
                .into_iter()
                .find(|g| !has(g))
                .or_else(|| {
                    (!has("response_time") && !has("request_time")).then_some("response_time")
                });
            if let Some(group) = missing {
                return Err(FlagError::LogRegexpGroups {
                    pattern: pattern.to_string(),
                    group,
                });
            }
        }
        let keep = Keep {
            format: self.log_format.to_string(),
            pattern: self.log_regexp.map(str::to_string),
            lines: !self.no_log_lines && max_bytes > 0,
            max_bytes,
        };
        Ok(Some((path.to_path_buf(), parser, keep)))
    }
}

/// Parsed `--tag` pairs (keys trimmed, values as given).
fn tag_map(tags: &[String]) -> Result<BTreeMap<String, String>, FlagError> {
    let mut m = BTreeMap::new();
    for t in tags {
        let (k, v) = t
            .split_once('=')
            .filter(|(k, _)| !k.trim().is_empty())
            .ok_or_else(|| FlagError::Tag(t.clone()))?;
        m.insert(k.trim().to_string(), v.to_string());
    }
    Ok(m)
}

/// The sampling interval, at least what the probes can sample.
fn interval(text: &str) -> Result<std::time::Duration, FlagError> {
    let d = keisoku_common::parse_duration(text).map_err(FlagError::Interval)?;
    if d < keisoku_probe::MIN_INTERVAL {
        return Err(FlagError::IntervalTooShort(text.to_string()));
    }
    Ok(d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flags<'a>(tags: &'a [String]) -> RecorderFlags<'a> {
        RecorderFlags {
            profile_hz: 99,
            log_format: "ltsv",
            log_lines_max: "1GiB",
            interval: "1s",
            tags,
            store_path: PathBuf::from("x.db"),
            ..RecorderFlags::default()
        }
    }

    fn err(f: &RecorderFlags) -> String {
        match Options::from_flags(f, NewRun::default()) {
            Ok(_) => panic!("accepted"),
            Err(e) => e.to_string(),
        }
    }

    #[test]
    fn the_wall_clock_profile_choice_reaches_the_recorder() {
        let tags = Vec::new();
        let mut f = flags(&tags);
        let o = Options::from_flags(&f, NewRun::default()).expect("options");
        assert_eq!(o.wall_profile, crate::WallProfile::Auto);
        f.wall_profile = crate::WallProfile::On;
        let o = Options::from_flags(&f, NewRun::default()).expect("options");
        assert_eq!(o.wall_profile, crate::WallProfile::On);
    }

    #[test]
    fn defaults_build_options_without_a_profiler() {
        let tags = vec![" k =v=w".to_string()];
        let o = Options::from_flags(&flags(&tags), NewRun::default()).expect("options");
        assert_eq!(o.new_run.tags.get("k").map(String::as_str), Some("v=w"));
        assert_eq!(o.interval, std::time::Duration::from_secs(1));
        assert_eq!(o.profile, ProfileKind::None);
        assert!(o.profile_auto);
        assert!(o.access_log.is_none());
        assert_eq!(o.store_path, PathBuf::from("x.db"));
    }

    #[test]
    fn all_cpus_defaults_to_perf_and_hz_out_of_range_is_refused() {
        let mut f = flags(&[]);
        f.profile_all_cpus = true;
        f.profile_hz = 0;
        assert_eq!(err(&f), "--profile-hz 0: use 1 to 10000");
        f.profile_hz = 10_001;
        assert_eq!(err(&f), "--profile-hz 10001: use 1 to 10000");
        f.profile_hz = 1;
        let o = Options::from_flags(&f, NewRun::default()).expect("options");
        assert_eq!(o.profile, ProfileKind::Perf);
        assert_eq!(o.profile_hz, 1);
        f.profile = Some(ProfileKind::None);
        let o = Options::from_flags(&f, NewRun::default()).expect("options");
        assert_eq!(o.profile, ProfileKind::None);
        assert!(!o.profile_auto);
    }

    #[test]
    fn bad_flags_keep_their_messages() {
        let tags = vec!["=v".to_string()];
        assert_eq!(err(&flags(&tags)), "--tag \"=v\": expected KEY=VALUE");
        let mut f = flags(&[]);
        f.interval = "50ms";
        assert_eq!(err(&f), "--interval 50ms: must be at least 100ms");
        f.interval = "soon";
        assert!(err(&f).starts_with("--interval: "));
        let mut f = flags(&[]);
        f.log_lines_max = "lots";
        assert_eq!(
            err(&f),
            "--log-lines-max \"lots\": use a size such as 1GiB, 200MB, 64KiB or a number of bytes"
        );
        let mut f = flags(&[]);
        f.pid = Some(u32::MAX);
        assert_eq!(err(&f), format!("--pid {}: no such process", u32::MAX));
    }

    #[test]
    fn access_log_keeps_lines_unless_capped_to_zero() {
        let mut f = flags(&[]);
        f.access_log = Some(Path::new("/tmp/access.log"));
        f.log_lines_max = "0";
        let o = Options::from_flags(&f, NewRun::default()).expect("options");
        let (path, _, keep) = o.access_log.expect("log");
        assert_eq!(path, Path::new("/tmp/access.log"));
        assert!(!keep.lines);
        assert_eq!(keep.format, "ltsv");
    }

    #[test]
    fn a_log_path_in_no_directory_or_a_directory_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let mut f = flags(&[]);
        let missing = dir.path().join("nope/access.log");
        f.access_log = Some(&missing);
        assert!(err(&f).contains("does not exist"), "{}", err(&f));
        f.access_log = Some(dir.path());
        assert!(err(&f).contains("is a directory"), "{}", err(&f));
        // A file that does not exist yet may be created by the server.
        let later = dir.path().join("access.log");
        f.access_log = Some(&later);
        assert!(Options::from_flags(&f, NewRun::default()).is_ok());
    }

    #[test]
    fn a_log_regexp_without_the_route_groups_is_refused() {
        let mut f = flags(&[]);
        f.access_log = Some(Path::new("/tmp/access.log"));
        f.log_format = "regexp";
        f.log_regexp = Some(".*");
        assert!(err(&f).contains("(?P<uri>...)"), "{}", err(&f));
        f.log_regexp = Some(r"(?P<method>\S+) (?P<uri>\S+) (?P<status>\d+)");
        assert!(err(&f).contains("(?P<response_time>...)"), "{}", err(&f));
        f.log_regexp =
            Some(r"(?P<method>\S+) (?P<uri>\S+) (?P<status>\d+) (?P<request_time>[\d.]+)");
        assert!(Options::from_flags(&f, NewRun::default()).is_ok());
    }
}
