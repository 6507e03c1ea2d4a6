//! Profile model and parsers (perf script and perf.data, folded,
//! cpuprofile, pprof, speedscope, bpftrace and DTrace aggregations);
//! collapse, diff and heat-map buckets.
//!
//! Every input format sits behind [`read_profile`], which detects the
//! format from content (plain or gzip, file or stdin) with the registry in
//! [`format`] (one module per format) and returns one [`Profile`]:
//! samples with time, thread, CPU and weight, and stacks interned in a
//! prefix tree. The stackcollapse-perf.pl compatible folder
//! is [`collapse::fold_perf`].

#![deny(missing_docs)]

pub mod bpftrace;
pub mod callgraph;
pub mod chrometrace;
pub mod collapse;
pub mod cpuprofile;
pub mod diff;
pub mod dtrace;
pub mod error;
pub mod filter;
pub mod folded;
pub mod format;
pub mod input;
pub mod jfr;
pub mod json;
pub mod marshal;
pub mod model;
pub mod normalise;
pub mod perf;
pub mod perfdata;
pub mod pprof;
pub mod pstats;
pub mod scope;
pub mod speedscope;
pub mod summary;
pub mod v8log;
pub mod v8pre;

pub use error::{Error, Result};
pub use format::{detect, Format, FormatInfo, Parsed, FORMATS};
pub use input::Input;
pub use model::{Frame, FrameKind, Profile, Thread, Unit};

/// Whether text starts like `perf script` output (see [`perf::looks_like`]).
pub fn looks_like_perf(head: &[u8]) -> bool {
    perf::looks_like(head)
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

/// The format to read an opened input as: `forced`, or the one [`detect`]
/// finds; an empty or unrecognised input is an error naming it.
pub fn format_of(input: &Input, forced: Option<Format>) -> Result<Format> {
    match forced.or_else(|| detect(&input.head)) {
        Some(f) => Ok(f),
        None if input.head.is_empty() => Err(Error::Empty {
            path: input.name.clone(),
            why: "the input is empty".into(),
        }),
        None => Err(Error::UnknownFormat {
            path: input.name.clone(),
        }),
    }
}

/// Reads and parses a profile from an opened input, in the forced format
/// or the one [`detect`] finds.
pub fn read_input(input: Input, opts: &ReadOptions) -> Result<Loaded> {
    let format = format_of(&input, opts.format)?;
    format::check_text(&input, format)?;
    let Parsed {
        profile,
        dropped_events,
    } = (format.info().read)(input, opts)?;
    Ok(Loaded {
        profile,
        format,
        dropped_events,
    })
}

/// Opens `path` ("-" for stdin) and reads a profile from it; a directory
/// is read as werkzeug's per-request cProfile files ([`pstats::read_dir`]).
pub fn read_profile(path: &str, opts: &ReadOptions) -> Result<Loaded> {
    if opts.format.is_none_or(|f| f == Format::Pstats) {
        if let Some(loaded) = pstats::read_dir(path, opts)? {
            return Ok(loaded);
        }
    }
    read_input(Input::open(path)?, opts)
}
