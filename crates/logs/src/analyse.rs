//! `keisoku logs FORMAT [FILE...]`: log files (or standard input, or a
//! saved dump) analysed per route, from a saved position with `--pos`,
//! checked for being logs of the chosen format.

use crate::error::{Error, Result};
use crate::format::{self, Format};
use crate::options::{Options, Reporter, Warning};
use crate::stats::{Analysis, Config};
use crate::{engine, input, output};
use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// How an input is named in messages: its path, or `<stdin>` for `-`.
pub fn display(p: &Path) -> String {
    if p == Path::new("-") {
        "<stdin>".into()
    } else {
        p.display().to_string()
    }
}

/// Analyses `opts.files` (standard input when there are none) as lines of
/// `format`, or prints `opts.load`, and returns the text to print: the
/// route table, or the timeline and the slowest requests when asked for.
/// Writes `opts.dump` and `opts.pos` as asked.
pub fn files(format: Format, opts: &Options, reporter: &dyn Reporter) -> Result<String> {
    let opts = &shown_for(&format, opts);
    let (routes, analysis) = analysed(format, opts, reporter)?;
    output::render(opts, routes, analysis.as_ref())
}

/// [`files`], with the text written through to `to` as it is made rather
/// than returned whole (see [`output::write`] for the two errors).
pub fn files_to(
    format: Format,
    opts: &Options,
    reporter: &dyn Reporter,
    to: &mut dyn std::io::Write,
) -> Result<std::io::Result<()>> {
    let opts = &shown_for(&format, opts);
    let (routes, analysis) = analysed(format, opts, reporter)?;
    output::write(opts, routes, analysis.as_ref(), to)
}

/// `opts` with the view a log of `format` can show: time columns absent
/// when it logs no times.
pub(crate) fn shown_for<'a>(format: &Format, opts: &'a Options) -> std::borrow::Cow<'a, Options> {
    if format.has_times() {
        std::borrow::Cow::Borrowed(opts)
    } else {
        let mut o = opts.clone();
        o.view.absent_times = true;
        std::borrow::Cow::Owned(o)
    }
}

/// The routes to print and the analysis they came from (none for a
/// loaded dump).
fn analysed(
    format: Format,
    opts: &Options,
    reporter: &dyn Reporter,
) -> Result<(Vec<crate::stats::RouteStats>, Option<Analysis>)> {
    let format_has_times = format.has_times();
    let (_, cfg, threads) = opts.setup(format)?;
    let (routes, analysis) = if let Some(load) = &opts.load {
        (crate::load::routes(load, opts)?, None)
    } else {
        let mut files = opts.files.clone();
        if files.is_empty() {
            if std::io::stdin().is_terminal() {
                return Err(Error::input(
                    "no input: give a log FILE (or --file), or pipe one into standard input",
                ));
            }
            files.push(PathBuf::from("-"));
        }
        if opts.pos.is_some() && (files.len() != 1 || files[0] == Path::new("-")) {
            return Err(Error::input(
                "--pos needs exactly one log file (not standard input)",
            ));
        }
        let mut total: Option<Analysis> = None;
        for f in &files {
            let a = match &opts.pos {
                Some(pos) => from_pos(&cfg, f, pos, opts, threads)?,
                None => one(&cfg, f, opts, threads, reporter)?,
            };
            match &mut total {
                Some(t) => t.merge(a),
                None => total = Some(a),
            }
        }
        let mut a = total.unwrap_or_else(|| unreachable!("at least one input"));
        if let Some(t) = a.timeline.as_mut() {
            t.absent_times = !format_has_times;
        }
        (std::mem::take(&mut a.routes), Some(a))
    };
    Ok((routes, analysis))
}

/// One file (or `-`) through the parallel analysis.
fn one(
    cfg: &Arc<Config>,
    path: &Path,
    opts: &Options,
    threads: usize,
    reporter: &dyn Reporter,
) -> Result<Analysis> {
    let name = display(path);
    let read = Arc::new(AtomicU64::new(0));
    // Whose fault a failure is follows from its kind (Error::cause).
    let opened = input::open_as(Some(path), Arc::clone(&read), opts.pcap.as_ref())
        .map_err(|e| Error::io("opening", &name, e))?;
    let analysis = reader(
        cfg,
        &name,
        opened.reader,
        opened.size,
        read,
        opts,
        threads,
        reporter,
    )?;
    if matches!(cfg.parser.format(), Format::Json(_))
        && analysis.counts.malformed > analysis.malformed.len() as u64
        && path != Path::new("-")
    {
        // The kept examples held no broken JSON, but later malformed lines
        // might: find the first in one sequential pass (rare: only logs
        // with more malformed lines than examples come here).
        if let Some((line, text)) = first_broken_json(cfg, path)? {
            return Err(broken_json(&name, line, &text));
        }
    }
    Ok(analysis)
}

/// alp stops at the first line that is not a JSON object (its decoder's
/// error, exit 1, no table) where it skips a line that lacks a field; so
/// does keisoku, with exit 2 and the line.
fn broken_json(name: &str, line: u64, text: &str) -> Error {
    Error::input(format!(
        "{name}: line {line}: not a JSON object: {text}; alp stops at such a line too (it prints no table): mend or remove the line"
    ))
}

/// Stops at a JSON line that is not an object among the malformed-line
/// examples: they are the first malformed lines in order, so the first
/// broken one among them is the first of the input.
fn first_broken_example(name: &str, cfg: &Config, a: &Analysis) -> Result<()> {
    if matches!(cfg.parser.format(), Format::Json(_)) {
        let syntax = format::LineError::Syntax("JSON").to_string();
        if let Some(m) = a.malformed.iter().find(|m| m.reason == syntax) {
            return Err(broken_json(name, m.line, &m.text));
        }
    }
    Ok(())
}

/// The first line of `path` that is not a JSON object, read in order.
fn first_broken_json(cfg: &Config, path: &Path) -> Result<Option<(u64, String)>> {
    use std::io::BufRead;
    let name = display(path);
    let opened = input::open(Some(path), Arc::new(AtomicU64::new(0)))
        .map_err(|e| Error::io("opening", &name, e))?;
    let mut r = std::io::BufReader::new(opened.reader);
    let mut buf = Vec::new();
    let mut n = 0u64;
    loop {
        buf.clear();
        if r.read_until(b'\n', &mut buf)
            .map_err(|e| Error::io("reading", &name, e))?
            == 0
        {
            return Ok(None);
        }
        n += 1;
        let line = format::trim_line(&buf);
        if !line.is_empty() && cfg.parser.parse(line) == Err(format::LineError::Syntax("JSON")) {
            let text = String::from_utf8_lossy(&line[..line.len().min(120)]).into_owned();
            return Ok(Some((n, text)));
        }
    }
}

/// Runs the parallel analysis over one input (a file or a run's kept
/// lines), reporting its progress, then checks it as [`checked`] does.
#[allow(clippy::too_many_arguments)]
pub(crate) fn reader(
    cfg: &Arc<Config>,
    name: &str,
    reader: impl std::io::Read + Send + 'static,
    size: Option<u64>,
    read: Arc<AtomicU64>,
    opts: &Options,
    threads: usize,
    reporter: &dyn Reporter,
) -> Result<Analysis> {
    let progress = reporter.reading(name, size, read);
    let analysis =
        engine::analyze(Arc::clone(cfg), reader, threads).map_err(|e| engine_error(name, e))?;
    drop(progress);
    checked(name, cfg, opts.strict, analysis, reporter)
}

/// An engine failure as this crate's error: a broken limit is the input's
/// fault, a read error the machine's.
fn engine_error(name: &str, e: engine::Error) -> Error {
    match e {
        engine::Error::Feed(f) => Error::input(format!("{name}: {f}")),
        engine::Error::Io(io) => Error::io("reading", name, io),
    }
}

/// Refuses an input that is not a log of the chosen format, and reports
/// (or with `strict` refuses) its malformed lines.
fn checked(
    name: &str,
    cfg: &Config,
    strict: bool,
    mut analysis: Analysis,
    reporter: &dyn Reporter,
) -> Result<Analysis> {
    check_format(name, cfg, &analysis)?;
    first_broken_example(name, cfg, &analysis)?;
    if analysis.counts.malformed > 0 {
        if strict {
            let detail = analysis
                .malformed
                .first()
                .map(|m| format!(": line {}: {}: {}", m.line, m.reason, m.text))
                .unwrap_or_default();
            return Err(Error::input(format!(
                "{name}: {} malformed line{} (--strict){detail}",
                analysis.counts.malformed,
                if analysis.counts.malformed == 1 {
                    ""
                } else {
                    "s"
                }
            )));
        }
        reporter.warning(&Warning::Malformed {
            input: name.to_string(),
            malformed: analysis.counts.malformed,
            lines: analysis.counts.lines,
            first: analysis.malformed.clone(),
        });
    }
    if analysis.counts.bad_time > 0 && cfg.timeline.is_some() {
        reporter.warning(&Warning::NoTimestamp {
            input: name.to_string(),
            requests: analysis.counts.bad_time,
        });
    }
    analysis.head.clear();
    Ok(analysis)
}

/// Refuses, with a hint at the right format or flags, an input in which no
/// line is a line of the chosen format.
pub fn check_format(name: &str, cfg: &Config, a: &Analysis) -> Result<()> {
    if a.counts.parsed > 0 || a.counts.malformed == 0 {
        return Ok(());
    }
    let chosen = cfg.parser.format().name();
    let heads: Vec<&[u8]> = a.head.iter().map(Vec::as_slice).collect();
    let hint = match format::detect(&heads) {
        Some(f) if f == chosen => {
            let why = a
                .malformed
                .first()
                .map(|m| format!(" (line {}: {})", m.line, m.reason))
                .unwrap_or_default();
            format!("it is {f} but lacks the fields asked for{why}; check the --*-label/--*-key/--*-subexp flags")
        }
        Some(f) if f.contains(' ') => format!("it looks like a {f}"),
        Some(f) => format!("it looks like a {f} log: try `keisoku logs {f}`"),
        None => "it does not look like an access log".into(),
    };
    Err(Error::input(format!(
        "{name}: no line is a valid {chosen} access-log line; {hint}"
    )))
}

/// The byte offset saved in a position file (0 when it is missing or
/// empty).
fn read_pos(pos: &Path) -> Result<u64> {
    match keisoku_common::limits::read_whole_string(pos, &keisoku_common::Limits::current()) {
        Ok(s) if s.trim().is_empty() => Ok(0),
        Ok(s) => s.trim().parse().map_err(|_| {
            Error::input(format!(
                "{}: not a byte offset: {:?}",
                pos.display(),
                s.trim()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(Error::io("reading", pos.display(), e)),
    }
}

/// alp's `--pos`: `file` from the offset saved in `pos` to its current
/// end, which is then saved (unless `--nosave-pos`).
fn from_pos(
    cfg: &Arc<Config>,
    file: &Path,
    pos: &Path,
    opts: &Options,
    threads: usize,
) -> Result<Analysis> {
    use std::io::{Read, Seek, SeekFrom};
    let start = read_pos(pos)?;
    let name = display(file);
    let mut f = std::fs::File::open(file).map_err(|e| Error::input(format!("{name}: {e}")))?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    // A log rotated since the position was saved starts over.
    let start = if start > len { 0 } else { start };
    f.seek(SeekFrom::Start(start))
        .map_err(|e| Error::io("seeking", &name, e))?;
    let reader =
        keisoku_common::Guard::new(f.take(len - start)).lines(&keisoku_common::Limits::current());
    let a =
        engine::analyze(Arc::clone(cfg), reader, threads).map_err(|e| engine_error(&name, e))?;
    // Only the start of a file says what format it is: a later offset may
    // well begin mid-way through malformed lines.
    if start == 0 {
        check_format(&name, cfg, &a)?;
    }
    // Line numbers count from the saved offset here.
    let from = if start == 0 {
        name.clone()
    } else {
        format!("{name} (from byte {start})")
    };
    first_broken_example(&from, cfg, &a)?;
    if opts.strict && a.counts.malformed > 0 {
        return Err(Error::input(format!(
            "{name}: {} malformed lines after offset {start} (--strict)",
            a.counts.malformed
        )));
    }
    if !opts.nosave_pos {
        std::fs::write(pos, len.to_string()).map_err(|e| Error::io("writing", pos.display(), e))?;
    }
    Ok(a)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::Quiet;
    use crate::FieldNames;

    const LINE: &str =
        "time:2024-01-01T00:00:00+00:00\tmethod:GET\turi:/a\tstatus:200\tsize:10\treqtime:0.100\n";

    fn ltsv() -> Format {
        Format::Ltsv(FieldNames::ltsv())
    }

    #[test]
    fn a_position_file_resumes_where_the_last_read_ended() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("access.log");
        let pos = dir.path().join("pos");
        std::fs::write(&log, LINE.repeat(3)).unwrap();
        let opts = Options {
            files: vec![log.clone()],
            pos: Some(pos.clone()),
            view: crate::options::ViewSpec {
                format: "tsv".into(),
                output: "count,uri".into(),
                ..Default::default()
            },
            ..Options::default()
        };
        assert_eq!(files(ltsv(), &opts, &Quiet).unwrap(), "Count\tUri\n3\t/a\n");
        assert_eq!(
            std::fs::read_to_string(&pos).unwrap(),
            (LINE.len() * 3).to_string()
        );
        let mut f = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
        std::io::Write::write_all(&mut f, LINE.as_bytes()).unwrap();
        assert_eq!(files(ltsv(), &opts, &Quiet).unwrap(), "Count\tUri\n1\t/a\n");
    }

    #[test]
    fn a_bad_position_file_is_the_users_to_fix() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("access.log");
        let pos = dir.path().join("pos");
        std::fs::write(&log, LINE).unwrap();
        std::fs::write(&pos, "soon").unwrap();
        let opts = Options {
            files: vec![log],
            pos: Some(pos),
            ..Options::default()
        };
        let e = files(ltsv(), &opts, &Quiet).unwrap_err();
        assert_eq!(e.cause(), crate::error::Cause::Input);
        assert!(e.to_string().contains("not a byte offset"), "{e}");
    }

    #[test]
    fn a_log_of_another_format_is_refused_with_a_hint() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("access.json");
        std::fs::write(&log, "{\"uri\":\"/a\",\"method\":\"GET\",\"status\":200}\n").unwrap();
        let opts = Options {
            files: vec![log],
            ..Options::default()
        };
        let e = files(ltsv(), &opts, &Quiet).unwrap_err();
        assert_eq!(e.cause(), crate::error::Cause::Input);
        assert!(e.to_string().contains("try `keisoku logs json`"), "{e}");
    }
}
