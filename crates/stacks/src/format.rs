//! The input formats as one ordered registry, [`FORMATS`]: each format
//! says its name and aliases, a one-line description, whether the head of
//! an input looks like it, and how to read it. Detection, `--format`
//! names, help texts and the error for an unknown input all come from this
//! list, so adding a format is one module (`src/<format>.rs`, which defines
//! its `FORMAT` entry) plus one line here.

use crate::error::Result;
use crate::input::Input;
use crate::model::Profile;
use crate::{
    bpftrace, chrometrace, cpuprofile, dtrace, folded, jfr, perf, perfdata, pprof, pstats,
    speedscope, v8log, v8pre, ReadOptions,
};

/// Identifies a format; its value is its index in [`FORMATS`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Format {
    /// pprof protobuf.
    Pprof = 0,
    /// JDK Flight Recorder recordings (JDK, async-profiler `-o jfr`).
    Jfr = 1,
    /// speedscope JSON (py-spy, rbspy...).
    Speedscope = 2,
    /// Chrome trace / DevTools Performance export (ProfileChunk events).
    ChromeTrace = 3,
    /// Chrome/V8 `.cpuprofile` JSON.
    CpuProfile = 4,
    /// cProfile/pstats (Python marshal).
    Pstats = 5,
    /// `node --prof-process --preprocess` JSON.
    V8Pre = 6,
    /// V8 tick log (`node --prof`).
    V8Log = 7,
    /// `perf.data`, read through `perf script`.
    PerfData = 8,
    /// bpftrace stack maps (`@[kstack, ustack, comm] = count()`).
    Bpftrace = 9,
    /// DTrace aggregated stacks (`@[ustack()] = count()`).
    Dtrace = 10,
    /// `perf script` text.
    Perf = 11,
    /// Folded stacks.
    Folded = 12,
}

/// What a format's reader returns besides the profile.
pub struct Parsed {
    /// The profile.
    pub profile: Profile,
    /// perf script: events met but not kept, with sample counts.
    pub dropped_events: Vec<(String, u64)>,
}

impl From<Profile> for Parsed {
    fn from(profile: Profile) -> Self {
        Parsed {
            profile,
            dropped_events: Vec::new(),
        }
    }
}

/// One input format: how it is named, recognised and read.
pub struct FormatInfo {
    /// Its id.
    pub format: Format,
    /// The `--format` name, also shown in messages.
    pub name: &'static str,
    /// Other names `--format` accepts.
    pub aliases: &'static [&'static str],
    /// One line for help texts and error messages ("perf script text").
    pub description: &'static str,
    /// Text a tool printed: binary data is never detected or read as this
    /// format, even when `--format` forces it ([`not_text`]).
    pub text: bool,
    /// Whether the first bytes of an input (at most [`crate::input::PEEK`],
    /// decompressed) look like this format.
    pub looks_like: fn(&[u8]) -> bool,
    /// Reads a whole input in this format.
    pub read: fn(Input, &ReadOptions) -> Result<Parsed>,
}

/// Every supported format, in detection order: the most specific
/// signatures first (pprof's protobuf, JSON documents by their keys,
/// perf.data's magic), then the aggregation printers (bpftrace's `@[`,
/// DTrace's backtick frames), then perf script's header lines, and folded
/// stacks, which almost any text resembles, last.
pub const FORMATS: &[FormatInfo] = &[
    pprof::FORMAT,
    jfr::FORMAT,
    speedscope::FORMAT,
    chrometrace::FORMAT,
    cpuprofile::FORMAT,
    pstats::FORMAT,
    v8pre::FORMAT,
    v8log::FORMAT,
    perfdata::FORMAT,
    bpftrace::FORMAT,
    dtrace::FORMAT,
    perf::FORMAT,
    folded::FORMAT,
];

impl Format {
    /// Its registry entry.
    pub fn info(self) -> &'static FormatInfo {
        // Ids are registry indices (checked by a test).
        &FORMATS[self as usize]
    }

    /// The format with this `--format` name or alias.
    pub fn from_name(s: &str) -> Option<Format> {
        FORMATS
            .iter()
            .find(|f| f.name == s || f.aliases.contains(&s))
            .map(|f| f.format)
    }

    /// The `--format` name.
    pub fn name(self) -> &'static str {
        self.info().name
    }

    /// Every `--format` name, comma-separated, in registry order
    /// ("pprof, speedscope, ..."), for messages.
    pub fn names() -> String {
        FORMATS
            .iter()
            .map(|f| f.name)
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The descriptions of all formats as a phrase ("a, b and c"), for the
    /// error naming what was tried.
    pub fn descriptions() -> String {
        let d: Vec<&str> = FORMATS.iter().map(|f| f.description).collect();
        match d.split_last() {
            Some((last, rest)) if !rest.is_empty() => format!("{} or {last}", rest.join(", ")),
            Some((last, _)) => (*last).to_owned(),
            None => String::new(),
        }
    }
}

impl std::fmt::Display for Format {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Detects the format of the first bytes of an input: the first format in
/// [`FORMATS`] whose signature matches.
pub fn detect(head: &[u8]) -> Option<Format> {
    let binary = not_text(head).is_some();
    FORMATS
        .iter()
        .find(|f| !(f.text && binary) && (f.looks_like)(head))
        .map(|f| f.format)
}

/// Why the first bytes of an input cannot be text output of a tool: a NUL
/// byte (perf script, folded stacks and the aggregation printers never
/// write one; random or binary data of 64 KiB almost surely has one).
pub fn not_text(head: &[u8]) -> Option<&'static str> {
    if head.starts_with(b"PERFILE2") {
        Some("this is a perf.data recording: run `perf script -i FILE` on it, or give it to keisoku where perf is installed")
    } else if memchr::memchr(0, head).is_some() {
        Some("this is binary data, not text")
    } else {
        None
    }
}

/// Refuses binary data for a text format (even a forced one), so random
/// bytes never come out as junk stacks.
pub fn check_text(input: &Input, format: Format) -> Result<()> {
    let info = format.info();
    match not_text(&input.head) {
        Some(why) if info.text => Err(crate::error::Error::malformed(
            &input.name,
            crate::model::Location::Line(1),
            format!("{} ({why})", info.description),
        )),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_are_registry_indices_and_names_are_unique() {
        let mut seen = std::collections::HashSet::new();
        for (i, f) in FORMATS.iter().enumerate() {
            assert_eq!(f.format as usize, i, "{}", f.name);
            for n in std::iter::once(&f.name).chain(f.aliases) {
                assert!(seen.insert(*n), "{n} named twice");
                assert_eq!(Format::from_name(n), Some(f.format));
            }
        }
        assert_eq!(Format::from_name("svg"), None);
        assert!(Format::descriptions().contains(" or "));
    }

    #[test]
    fn what_no_format_recognises_is_not_guessed() {
        // Random bytes: binary, so no text format claims them.
        let mut seed = 0x9E3779B97F4A7C15u64;
        let bytes: Vec<u8> = (0..4096)
            .map(|_| {
                seed ^= seed << 13;
                seed ^= seed >> 7;
                seed ^= seed << 17;
                seed as u8
            })
            .collect();
        assert_eq!(detect(&bytes), None);
        // bpftrace's banner has the shape of a perf header line.
        assert_eq!(
            detect(b"Attaching 1 probe...\n\n@[\n    f+1\n]: 3\n"),
            Some(Format::Bpftrace)
        );
        assert_eq!(detect(b"PERFILE2\x68\0\0\0"), Some(Format::PerfData));
        assert_eq!(
            detect(b"busy 1/1 1.0: 1 cpu-clock:\n\t 1 f (/b)\n  f.c:3\n\n"),
            Some(Format::Perf)
        );
    }

    #[test]
    fn json_is_never_taken_for_folded_stacks() {
        assert_eq!(detect(b"{\"a;b\": 1}\n"), None);
        assert_eq!(detect(b"[\"a;b 1\"]\n"), None);
        assert_eq!(detect(b"a;b 1\n"), Some(Format::Folded));
    }
}
