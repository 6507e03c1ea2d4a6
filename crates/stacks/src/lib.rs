//! Profile model and parsers (perf script, folded, cpuprofile, pprof);
//! collapse, diff and heat-map buckets.
//!
//! Every input format sits behind [`read_profile`], which detects the
//! format from content (plain or gzip, file or stdin) and returns one
//! [`Profile`]: samples with time, thread, CPU and weight, and stacks
//! interned in a prefix tree. The stackcollapse-perf.pl compatible folder
//! is [`collapse::fold_perf`].

pub mod collapse;
pub mod cpuprofile;
pub mod diff;
pub mod error;
pub mod filter;
pub mod folded;
pub mod input;
pub mod json;
pub mod model;
pub mod perf;
pub mod pprof;
pub mod scope;
pub mod speedscope;
pub mod summary;

pub use error::{Error, Result};
pub use input::Input;
pub use model::{Frame, FrameKind, Profile, Thread, Unit};

/// The supported input formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// `perf script` text.
    Perf,
    /// Folded stacks.
    Folded,
    /// Chrome/V8 `.cpuprofile` JSON.
    CpuProfile,
    /// pprof protobuf.
    Pprof,
}

impl Format {
    /// Parses a `--format` value.
    pub fn from_name(s: &str) -> Option<Format> {
        match s {
            "perf" | "perf-script" => Some(Format::Perf),
            "folded" | "collapsed" => Some(Format::Folded),
            "cpuprofile" | "v8" | "chrome" => Some(Format::CpuProfile),
            "pprof" => Some(Format::Pprof),
            _ => None,
        }
    }

    /// Display name.
    pub fn name(self) -> &'static str {
        match self {
            Format::Perf => "perf",
            Format::Folded => "folded",
            Format::CpuProfile => "cpuprofile",
            Format::Pprof => "pprof",
        }
    }
}

/// Whether text starts like `perf script` output: after comments and blank
/// lines, a sample header line followed by a stack line or a blank line.
pub fn looks_like_perf(head: &[u8]) -> bool {
    let mut lines = head.split(|&b| b == b'\n').filter(|l| !l.starts_with(b"#"));
    loop {
        match lines.next() {
            None => return false,
            Some(l) if l.iter().all(|&b| perf::is_space(b)) => continue,
            Some(l) => {
                if perf::event_line(l).is_none() {
                    return false;
                }
                return match lines.next() {
                    None => true,
                    Some(next) => {
                        next.is_empty()
                            || perf::stack_line(next).is_some()
                            || perf::event_line(next).is_some()
                    }
                };
            }
        }
    }
}

/// Detects the format of the first bytes of an input.
pub fn detect(head: &[u8]) -> Option<Format> {
    if pprof::looks_like(head) {
        Some(Format::Pprof)
    } else if cpuprofile::looks_like(head) {
        Some(Format::CpuProfile)
    } else if looks_like_perf(head) {
        Some(Format::Perf)
    } else if folded::looks_like(head) {
        Some(Format::Folded)
    } else {
        None
    }
}

/// How to read a profile.
#[derive(Clone, Debug, Default)]
pub struct ReadOptions {
    /// Force a format instead of detecting it.
    pub format: Option<Format>,
    /// perf script: the event to keep (default: the first one seen).
    pub event: Option<String>,
}

/// A profile read from an input, with what the reader noticed on the way.
pub struct Loaded {
    /// The profile.
    pub profile: Profile,
    /// The format it was read as.
    pub format: Format,
    /// perf script: events met but not kept, with sample counts.
    pub dropped_events: Vec<(String, u64)>,
}

/// Reads and parses a profile from an opened input.
pub fn read_input(input: Input, opts: &ReadOptions) -> Result<Loaded> {
    let format = match opts.format.or_else(|| detect(&input.head)) {
        Some(f) => f,
        None if input.head.is_empty() => {
            return Err(Error::Empty {
                path: input.name,
                why: "the input is empty".into(),
            })
        }
        None => return Err(Error::UnknownFormat { path: input.name }),
    };
    let mut dropped_events = Vec::new();
    let profile = match format {
        Format::Perf => {
            let name = input.name.clone();
            let mut r = input.into_reader();
            let (p, report) = perf::parse(
                &mut r,
                &name,
                &perf::PerfOptions {
                    event: opts.event.clone(),
                },
            )?;
            dropped_events = report.dropped;
            p
        }
        Format::Folded => {
            let name = input.name.clone();
            let mut r = input.into_reader();
            folded::parse(&mut r, &name)?
        }
        Format::CpuProfile => {
            let (name, data) = input.read_all()?;
            cpuprofile::parse(&data, &name)?
        }
        Format::Pprof => {
            let (name, data) = input.read_all()?;
            pprof::parse(&data, &name)?
        }
    };
    Ok(Loaded {
        profile,
        format,
        dropped_events,
    })
}

/// Opens `path` ("-" for stdin) and reads a profile from it.
pub fn read_profile(path: &str, opts: &ReadOptions) -> Result<Loaded> {
    read_input(Input::open(path)?, opts)
}
