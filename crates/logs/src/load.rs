//! `--load FILE`: a saved dump (keisoku's JSON or alp's YAML) in place of a
//! log, and `--dump FILE` written in the kind its name asks for.
//!
//! alp v1.0.21 loads a dump and silently ignores `-m` and `-f`. Here `-m`
//! and `--auto-group` regroup the loaded routes (merging their statistics),
//! and `-f`, which needs each request's fields, is refused with the reason
//! rather than ignored.

use crate::error::{Error, Result};
use crate::options::{self, Options};
use crate::stats::{LineCounts, RouteStats};
use crate::{alp_dump, dump, stored};
use std::path::Path;

/// The routes of the dump `path`, regrouped as `opts` asks.
pub fn routes(path: &Path, opts: &Options) -> Result<Vec<RouteStats>> {
    if let Some(f) = &opts.filters {
        return Err(Error::input(format!(
            "-f {f:?} with --load: a dump keeps per-route statistics, not the requests a filter selects; filter when reading the log (-f with --dump)"
        )));
    }
    let grouper = options::grouper(opts.matching_groups.as_deref(), opts.auto_group)?;
    let routes = alp_dump::load(path)?;
    Ok(if grouper.is_active() {
        stored::regroup(routes, &grouper)
    } else {
        routes
    })
}

/// Writes `routes` to `path`: alp's YAML for a `.yaml`/`.yml` name, else
/// keisoku's JSON dump.
pub fn write_dump(path: &Path, routes: &[RouteStats], counts: &LineCounts) -> Result<()> {
    let text = if alp_dump::wants_yaml(path) {
        alp_dump::to_yaml(routes)?
    } else {
        dump::to_json(routes, counts)
    };
    std::fs::write(path, text).map_err(|e| Error::io("writing", path.display(), e))
}

/// The routes of the log `path` (gzip is detected), read as `format` and
/// grouped and filtered as `opts` asks: one side of alp's `FORMAT diff`.
pub fn routes_of_log(
    format: crate::format::Format,
    opts: &Options,
    path: &Path,
) -> Result<Vec<RouteStats>> {
    use std::sync::atomic::AtomicU64;
    use std::sync::Arc;
    let name = crate::analyse::display(path);
    let opened = crate::input::open_as(Some(path), Arc::new(AtomicU64::new(0)), opts.pcap.as_ref())
        .map_err(|e| Error::io("opening", &name, e))?;
    routes_of_reader(format, opts, &name, opened.reader, true)
}

/// One side of alp's `FORMAT diff --pos`: the plain log `path` from byte
/// `start` to its end, and the position alp saves after it: `start` plus
/// the bytes it read, less those of blank lines (alp's parser returns
/// before counting a blank line). A position past the end is refused, as
/// alp's read fails there (it does not start over on a shorter log).
pub fn routes_of_log_from(
    format: crate::format::Format,
    opts: &Options,
    path: &Path,
    start: u64,
) -> Result<(Vec<RouteStats>, u64)> {
    use std::io::{Read, Seek, SeekFrom};
    let name = crate::analyse::display(path);
    let mut f = std::fs::File::open(path).map_err(|e| Error::io("opening", &name, e))?;
    let len = f
        .metadata()
        .map_err(|e| Error::io("reading", &name, e))?
        .len();
    if start > len {
        return Err(Error::input(format!(
            "{name}: the position {start} is past its end ({len} bytes): alp's diff fails there too (EOF)"
        )));
    }
    f.seek(SeekFrom::Start(start))
        .map_err(|e| Error::io("seeking", &name, e))?;
    let blank = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
    let counted = BlankBytes {
        inner: f.take(len - start),
        only_cr: true,
        line: 0,
        blank: std::sync::Arc::clone(&blank),
    };
    let reader = keisoku_common::Guard::new(counted).lines(&keisoku_common::Limits::current());
    // Only the start of a file says what format it is.
    let routes = routes_of_reader(format, opts, &name, reader, start == 0)?;
    let blank = blank.load(std::sync::atomic::Ordering::Relaxed);
    Ok((routes, len - blank))
}

/// Counts the bytes of blank lines (nothing but CRs before the LF, or a
/// last line of only CRs) passing through.
struct BlankBytes<R> {
    inner: R,
    /// Whether the current line has held only CRs so far.
    only_cr: bool,
    /// Bytes of the current line so far.
    line: u64,
    blank: std::sync::Arc<std::sync::atomic::AtomicU64>,
}

impl<R: std::io::Read> std::io::Read for BlankBytes<R> {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.inner.read(buf)?;
        let mut blank = 0;
        if n == 0 {
            // A last line without its LF.
            if self.line > 0 && self.only_cr {
                blank += self.line;
            }
            self.line = 0;
        }
        for &b in &buf[..n] {
            self.line += 1;
            if b == b'\n' {
                if self.only_cr {
                    blank += self.line;
                }
                self.line = 0;
                self.only_cr = true;
            } else if b != b'\r' {
                self.only_cr = false;
            }
        }
        if blank > 0 {
            self.blank
                .fetch_add(blank, std::sync::atomic::Ordering::Relaxed);
        }
        Ok(n)
    }
}

fn routes_of_reader(
    format: crate::format::Format,
    opts: &Options,
    name: &str,
    reader: impl std::io::Read + Send + 'static,
    check: bool,
) -> Result<Vec<RouteStats>> {
    use std::sync::Arc;
    let (_, cfg, threads) = opts.setup(format)?;
    let analysis =
        crate::engine::analyze(Arc::clone(&cfg), reader, threads).map_err(|e| match e {
            crate::engine::Error::Feed(f) => Error::input(format!("{name}: {f}")),
            crate::engine::Error::Io(io) => Error::io("reading", name, io),
        })?;
    if check {
        crate::analyse::check_format(name, &cfg, &analysis)?;
    }
    if analysis.routes.len() > opts.limit {
        return Err(Error::input(format!(
            "{name}: more than {} distinct routes; group them with -m or --auto-group, or raise --limit",
            opts.limit
        )));
    }
    Ok(analysis.routes)
}
