//! Input limits every reader applies, so hostile or endless input (`/dev/zero`,
//! a one-line 2 GiB file, a gzip bomb) is refused within seconds and bounded
//! memory instead of growing until the machine gives up.
//!
//! Three limits, each raised with an environment variable so a user with a
//! genuinely huge input can still read it:
//! - the longest line of a text input ([`MAX_LINE_ENV`], default 8 MiB):
//!   streaming readers hold a whole line, so a line is what exhausts memory;
//! - the size of an input read whole ([`MAX_INPUT_ENV`], default 256 MiB):
//!   JSON, protobuf and request bodies are parsed from one buffer;
//! - the ratio of decompressed to compressed bytes of a gzip input
//!   ([`MAX_RATIO_ENV`], default 500, checked past 256 MiB decompressed):
//!   real logs compress about 10:1, a bomb of zeros about 1000:1.
//!
//! [`Guard`] is a `Read` wrapper that enforces them; it fails with an
//! `io::Error` of kind `InvalidData` whose inner error is an [`Exceeded`],
//! which callers recognise with [`exceeded`] (never by its text).

use std::fmt;
use std::io::{self, Read};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Environment variable raising the longest accepted line.
pub const MAX_LINE_ENV: &str = "KEISOKU_MAX_LINE";
/// Environment variable raising the largest input read whole.
pub const MAX_INPUT_ENV: &str = "KEISOKU_MAX_INPUT";
/// Environment variable raising the accepted gzip decompression ratio.
pub const MAX_RATIO_ENV: &str = "KEISOKU_MAX_RATIO";

/// Default longest line: far beyond any log line or folded stack, far below
/// what hurts a machine.
pub const DEFAULT_MAX_LINE: u64 = 8 << 20;
/// Default largest input read whole.
pub const DEFAULT_MAX_INPUT: u64 = 256 << 20;
/// Default largest decompression ratio.
pub const DEFAULT_MAX_RATIO: u64 = 500;
/// Decompressed bytes below which the ratio is not checked: a small file of
/// repeated lines may compress very well and is harmless.
pub const RATIO_FLOOR: u64 = 256 << 20;

/// Which limit an input broke.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    /// A line longer than the longest accepted.
    Line,
    /// An input read whole that is larger than accepted.
    Input,
    /// A gzip stream that decompresses beyond the accepted ratio.
    Ratio,
}

/// The limits a reader applies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Longest line in bytes.
    pub line: u64,
    /// Largest input read whole, in (decompressed) bytes.
    pub input: u64,
    /// Largest decompressed / compressed ratio of a gzip input.
    pub ratio: u64,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            line: DEFAULT_MAX_LINE,
            input: DEFAULT_MAX_INPUT,
            ratio: DEFAULT_MAX_RATIO,
        }
    }
}

/// An environment variable that does not hold a limit.
#[derive(Debug, thiserror::Error)]
#[error("{var}={value:?}: expected a size such as 64M or 2GiB (a ratio for {MAX_RATIO_ENV}: a whole number)")]
pub struct BadLimit {
    /// The variable.
    pub var: &'static str,
    /// Its value.
    pub value: String,
}

impl Limits {
    /// The defaults, raised (or lowered) by [`MAX_LINE_ENV`], [`MAX_INPUT_ENV`]
    /// and [`MAX_RATIO_ENV`]; a value that is not a size is an error, never
    /// silently ignored.
    pub fn from_env() -> Result<Limits, BadLimit> {
        let mut limits = Limits::default();
        for (var, slot) in [
            (MAX_LINE_ENV, &mut limits.line),
            (MAX_INPUT_ENV, &mut limits.input),
        ] {
            if let Some(value) = std::env::var_os(var) {
                let value = value.to_string_lossy().into_owned();
                *slot = crate::parse_size(&value)
                    .filter(|&n| n > 0)
                    .ok_or(BadLimit { var, value })?;
            }
        }
        if let Some(value) = std::env::var_os(MAX_RATIO_ENV) {
            let value = value.to_string_lossy().into_owned();
            limits.ratio = value
                .trim()
                .parse()
                .ok()
                .filter(|&n: &u64| n > 0)
                .ok_or(BadLimit {
                    var: MAX_RATIO_ENV,
                    value,
                })?;
        }
        Ok(limits)
    }

    /// [`Limits::from_env`], or the defaults when the environment is
    /// unusable; for readers that cannot report (fuzzing, tests). Commands
    /// call `from_env` first, so a bad variable is refused before this runs.
    pub fn current() -> Limits {
        Limits::from_env().unwrap_or_default()
    }
}

/// An input broke a limit; the inner error of the `io::Error` a [`Guard`]
/// returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Exceeded {
    /// Which limit.
    pub limit: Limit,
    /// Its value (bytes, or the ratio).
    pub max: u64,
}

impl fmt::Display for Exceeded {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.limit {
            Limit::Line => write!(
                f,
                "a line longer than {} (the limit; raise it with {MAX_LINE_ENV}=SIZE)",
                bytes(self.max)
            ),
            Limit::Input => write!(
                f,
                "larger than {} (the limit for an input read whole; raise it with {MAX_INPUT_ENV}=SIZE)",
                bytes(self.max)
            ),
            Limit::Ratio => write!(
                f,
                "the gzip stream decompresses to more than {} times its size (the limit; a gzip bomb? raise it with {MAX_RATIO_ENV}=N)",
                self.max
            ),
        }
    }
}

impl std::error::Error for Exceeded {}

fn bytes(n: u64) -> String {
    if n >= 1 << 30 && n & ((1 << 30) - 1) == 0 {
        format!("{} GiB", n >> 30)
    } else if n >= 1 << 20 && n & ((1 << 20) - 1) == 0 {
        format!("{} MiB", n >> 20)
    } else if n >= 1 << 10 && n & ((1 << 10) - 1) == 0 {
        format!("{} KiB", n >> 10)
    } else {
        format!("{n} bytes")
    }
}

/// The limit an I/O error reports, if it came from a [`Guard`].
pub fn exceeded(e: &io::Error) -> Option<&Exceeded> {
    e.get_ref()
        .and_then(|inner| inner.downcast_ref::<Exceeded>())
}

/// Whether an I/O error met while opening or reading an input the user
/// named is about that input (missing, unreadable, a directory, corrupt,
/// cut short, over a limit: exit 2) rather than about the machine (exit 1).
pub fn is_input_fault(e: &io::Error) -> bool {
    use io::ErrorKind::*;
    // EISDIR, ENOTDIR and ENAMETOOLONG (Linux numbers) by errno: their
    // ErrorKinds are newer than the workspace's minimum Rust version.
    const PATH_ERRNOS: [i32; 3] = [21, 20, 36];
    exceeded(e).is_some()
        || e.raw_os_error().is_some_and(|n| PATH_ERRNOS.contains(&n))
        || matches!(
            e.kind(),
            NotFound | PermissionDenied | InvalidData | InvalidInput | UnexpectedEof
        )
}

/// A `Read` wrapper applying [`Limits`]: line length for text, total size
/// for inputs read whole, and the decompression ratio for gzip.
pub struct Guard<R> {
    inner: R,
    max_line: Option<u64>,
    max_total: Option<u64>,
    ratio: Option<(u64, Arc<AtomicU64>)>,
    line: u64,
    total: u64,
    broken: Option<Exceeded>,
}

impl<R: Read> Guard<R> {
    /// A guard that checks nothing yet; add checks with the builders.
    pub fn new(inner: R) -> Guard<R> {
        Guard {
            inner,
            max_line: None,
            max_total: None,
            ratio: None,
            line: 0,
            total: 0,
            broken: None,
        }
    }

    /// Refuses a line longer than `limits.line`.
    pub fn lines(mut self, limits: &Limits) -> Guard<R> {
        self.max_line = Some(limits.line);
        self
    }

    /// Refuses more than `limits.input` bytes in all.
    pub fn whole(mut self, limits: &Limits) -> Guard<R> {
        self.max_total = Some(limits.input);
        self
    }

    /// Refuses decompressing beyond `limits.ratio` times the compressed
    /// bytes counted in `compressed` (once past [`RATIO_FLOOR`]).
    pub fn ratio(mut self, limits: &Limits, compressed: Arc<AtomicU64>) -> Guard<R> {
        self.ratio = Some((limits.ratio, compressed));
        self
    }

    fn fail(&mut self, limit: Limit, max: u64) -> io::Error {
        let e = Exceeded { limit, max };
        self.broken = Some(e);
        io::Error::new(io::ErrorKind::InvalidData, e)
    }
}

impl<R: Read> Read for Guard<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some(e) = self.broken {
            return Err(io::Error::new(io::ErrorKind::InvalidData, e));
        }
        let n = self.inner.read(buf)?;
        let got = &buf[..n];
        self.total += n as u64;
        if let Some(max) = self.max_total {
            if self.total > max {
                return Err(self.fail(Limit::Input, max));
            }
        }
        if let Some(max) = self.max_line {
            // A line of exactly the limit before its newline is accepted.
            let mut start = 0usize;
            let mut longest = 0u64;
            let mut carried = self.line;
            // Every line ending in this read: only a read longer than the
            // limit can hold a whole too-long line, so the common case looks
            // at the first and last newline only.
            let mut check = |end: usize, carried: &mut u64| {
                longest = longest.max(*carried + (end - start) as u64);
                *carried = 0;
                start = end + 1;
            };
            if n as u64 > max {
                for at in memchr::memchr_iter(b'\n', got) {
                    check(at, &mut carried);
                }
            } else if let Some(first) = memchr::memchr(b'\n', got) {
                check(first, &mut carried);
                if let Some(last) = memchr::memrchr(b'\n', got) {
                    start = last + 1;
                }
            }
            self.line = carried + (n - start) as u64;
            if longest.max(self.line) > max {
                return Err(self.fail(Limit::Line, max));
            }
        }
        if let Some((max, compressed)) = &self.ratio {
            let max = *max;
            let packed = compressed.load(Ordering::Relaxed).max(1);
            if self.total > RATIO_FLOOR && self.total / packed > max {
                return Err(self.fail(Limit::Ratio, max));
            }
        }
        Ok(n)
    }
}

/// Reads a whole file the user named, refusing one larger than
/// `limits.input` (a character device such as `/dev/zero` included) before
/// holding more than that in memory.
pub fn read_whole(path: &std::path::Path, limits: &Limits) -> io::Result<Vec<u8>> {
    let file = std::fs::File::open(path)?;
    let size = file
        .metadata()
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len());
    read_to_end(Guard::new(file).whole(limits), size)
}

/// Reads `reader` to its end in small steps, so memory holds what was read
/// (plus growth) rather than a zeroed buffer twice the limit; `size`, when
/// known, is reserved at once.
pub fn read_to_end(mut reader: impl Read, size: Option<u64>) -> io::Result<Vec<u8>> {
    let mut buf = Vec::with_capacity(size.map_or(0, |n| n.min(DEFAULT_MAX_INPUT) as usize));
    let mut step = vec![0u8; 256 * 1024];
    loop {
        match reader.read(&mut step) {
            Ok(0) => return Ok(buf),
            Ok(n) => buf.extend_from_slice(&step[..n]),
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
}

/// [`read_whole`] as UTF-8 text (`InvalidData` when it is not), refusing
/// also a line longer than `limits.line`.
pub fn read_whole_string(path: &std::path::Path, limits: &Limits) -> io::Result<String> {
    let file = std::fs::File::open(path)?;
    let size = file
        .metadata()
        .ok()
        .filter(|m| m.is_file())
        .map(|m| m.len());
    let bytes = read_to_end(Guard::new(file).whole(limits).lines(limits), size)?;
    String::from_utf8(bytes).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

/// One document read whole as UTF-8 text (a Run JSON, a logs dump: one JSON
/// line however large), bounded by `limits.input` only; the line limit is
/// for line-oriented inputs and would refuse every large document.
pub fn read_document(path: &std::path::Path, limits: &Limits) -> io::Result<String> {
    String::from_utf8(read_whole(path, limits)?).map_err(|_| {
        io::Error::new(
            io::ErrorKind::InvalidData,
            "stream did not contain valid UTF-8",
        )
    })
}

/// Counts the bytes read through it into a shared counter (the compressed
/// side of a gzip input, for [`Guard::ratio`] and progress displays).
pub struct Counting<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R> Counting<R> {
    /// Wraps `inner`, adding every byte read to `read`.
    pub fn new(inner: R, read: Arc<AtomicU64>) -> Counting<R> {
        Counting { inner, read }
    }
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(mut r: impl Read) -> io::Result<u64> {
        io::copy(&mut r, &mut io::sink())
    }

    #[test]
    fn a_line_over_the_limit_is_refused_and_one_at_it_is_kept() {
        let limits = Limits {
            line: 10,
            ..Limits::default()
        };
        let ok = b"0123456789\nabc\n0123456789".to_vec();
        assert_eq!(
            drain(Guard::new(&ok[..]).lines(&limits)).unwrap(),
            ok.len() as u64
        );
        let long = b"short\n01234567890\n".to_vec();
        let e = drain(Guard::new(&long[..]).lines(&limits)).unwrap_err();
        assert_eq!(
            exceeded(&e),
            Some(&Exceeded {
                limit: Limit::Line,
                max: 10
            })
        );
        assert!(is_input_fault(&e));
        assert!(e.to_string().contains("a line longer than 10 bytes"));
    }

    #[test]
    fn endless_input_is_refused_at_the_line_limit() {
        let limits = Limits {
            line: 1 << 20,
            ..Limits::default()
        };
        let e = drain(Guard::new(io::repeat(0)).lines(&limits)).unwrap_err();
        assert_eq!(exceeded(&e).map(|x| x.limit), Some(Limit::Line));
        // Many short lines are fine however many there are.
        let e = drain(Guard::new(io::repeat(b'\n').take(5 << 20)).lines(&limits));
        assert_eq!(e.unwrap(), 5 << 20);
    }

    #[test]
    fn whole_inputs_are_refused_past_the_limit() {
        let limits = Limits {
            input: 1000,
            ..Limits::default()
        };
        assert_eq!(
            drain(Guard::new(io::repeat(1).take(1000)).whole(&limits)).unwrap(),
            1000
        );
        let e = drain(Guard::new(io::repeat(1).take(1001)).whole(&limits)).unwrap_err();
        assert_eq!(exceeded(&e).map(|x| x.limit), Some(Limit::Input));
        assert!(e.to_string().contains(MAX_INPUT_ENV));
    }

    #[test]
    fn a_decompression_ratio_beyond_the_limit_is_refused() {
        let limits = Limits {
            ratio: 100,
            ..Limits::default()
        };
        let packed = Arc::new(AtomicU64::new(1 << 20));
        let e = drain(Guard::new(io::repeat(b'\n')).ratio(&limits, packed.clone())).unwrap_err();
        assert_eq!(exceeded(&e).map(|x| x.limit), Some(Limit::Ratio));
        // Past the floor but within the ratio: accepted.
        packed.store(10 << 20, Ordering::Relaxed);
        let n = drain(
            Guard::new(io::repeat(b'\n').take(RATIO_FLOOR + 1)).ratio(&limits, packed.clone()),
        )
        .unwrap();
        assert_eq!(n, RATIO_FLOOR + 1);
    }

    #[test]
    fn whole_files_are_read_within_the_limit() {
        let limits = Limits {
            input: 1 << 20,
            line: 100,
            ..Limits::default()
        };
        let e = read_whole(std::path::Path::new("/dev/zero"), &limits).unwrap_err();
        assert_eq!(exceeded(&e).map(|x| x.limit), Some(Limit::Input));
        let e = read_whole_string(std::path::Path::new("/dev/zero"), &limits).unwrap_err();
        assert_eq!(exceeded(&e).map(|x| x.limit), Some(Limit::Line));
        let e = read_whole(std::path::Path::new("/"), &limits).unwrap_err();
        assert!(is_input_fault(&e), "{e:?}");
    }

    #[test]
    fn other_io_errors_are_classified_by_kind() {
        assert!(is_input_fault(&io::Error::from(io::ErrorKind::NotFound)));
        assert!(is_input_fault(&io::Error::from(
            io::ErrorKind::PermissionDenied
        )));
        assert!(!is_input_fault(&io::Error::from(
            io::ErrorKind::OutOfMemory
        )));
        assert!(!is_input_fault(&io::Error::other("disk on fire")));
    }
}
