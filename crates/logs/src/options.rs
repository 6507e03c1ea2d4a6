//! What a `keisoku logs` analysis is asked to do, with the command's
//! defaults as a real [`Default`], and the hooks through which it reports
//! progress and warnings (it never prints: the caller decides how).

use crate::error::{Error, Result};
use crate::filter::Filter;
use crate::format::{Format, LineParser};
use crate::group::Grouper;
use crate::render::{Column, OutputFormat, RenderOptions, SortKey};
use crate::stats::{Config, Malformed};
use crate::uri::QueryMode;
use std::fmt;
use std::path::PathBuf;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// How the route table is shown, as the user spelled it (`--format`,
/// `--sort`, `-o`, `--percentiles`...); [`ViewSpec::parse`] checks it.
#[derive(Debug, Clone, PartialEq)]
pub struct ViewSpec {
    /// table, markdown (md), tsv, csv, json or html.
    pub format: String,
    /// A sort key (count, uri, pNN, ...).
    pub sort: String,
    /// Descending order.
    pub reverse: bool,
    /// No header line (tsv, csv).
    pub no_headers: bool,
    /// A totals line (table, markdown).
    pub show_footers: bool,
    /// Columns, comma-separated, or `all`.
    pub output: String,
    /// Percentile columns, comma-separated integers 0-100.
    pub percentiles: String,
    /// Show URIs percent-decoded.
    pub decode_uri: bool,
    /// The log has no response times (`common`, `combined`): the time
    /// columns print `-`. Set by the analysis from the format, not a flag.
    pub absent_times: bool,
}

impl Default for ViewSpec {
    /// alp's defaults: a table of every column sorted by count, with p90,
    /// p95 and p99.
    fn default() -> ViewSpec {
        ViewSpec {
            format: "table".into(),
            sort: "count".into(),
            reverse: false,
            no_headers: false,
            show_footers: false,
            output: "all".into(),
            percentiles: "90,95,99".into(),
            decode_uri: false,
            absent_times: false,
        }
    }
}

/// A checked [`ViewSpec`].
#[derive(Debug, Clone)]
pub struct View {
    /// The output format.
    pub format: OutputFormat,
    /// The sort key.
    pub sort: SortKey,
    /// Descending order.
    pub reverse: bool,
    /// Columns and table options.
    pub opts: RenderOptions,
}

impl ViewSpec {
    /// Checks every field, naming the flag of the first wrong one.
    pub fn parse(&self) -> Result<View> {
        let format = OutputFormat::parse(&self.format).ok_or_else(|| {
            Error::input(format!(
                "--format {:?}: use table, markdown, tsv, csv, json or html",
                self.format
            ))
        })?;
        let sort = SortKey::parse(&self.sort).ok_or_else(|| {
            Error::input(format!(
                "--sort {:?}: use count, uri, method, max, min, avg, sum, stddev, pNN (0-100), max-body, min-body, avg-body or sum-body",
                self.sort
            ))
        })?;
        let mut percentiles = Vec::new();
        for p in self
            .percentiles
            .split(',')
            .map(str::trim)
            .filter(|p| !p.is_empty())
        {
            match p.parse::<u32>() {
                Ok(n) if n <= 100 => percentiles.push(n),
                _ => {
                    return Err(Error::input(format!(
                        "--percentiles: {p:?} is not an integer from 0 to 100"
                    )))
                }
            }
        }
        let columns = Column::parse_list(&self.output, &percentiles)
            .map_err(|bad| Error::input(format!("-o: invalid keywords: {bad}")))?;
        Ok(View {
            format,
            sort,
            reverse: self.reverse,
            opts: RenderOptions {
                stddev_in_line_order: RenderOptions::alp_stddev_in_line_order(&columns, sort),
                columns,
                no_headers: self.no_headers,
                show_footers: self.show_footers,
                decode_uri: self.decode_uri,
                absent_times: self.absent_times,
            },
        })
    }
}

/// Unit of the response-time fields (`--time-unit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TimeUnit {
    /// Seconds (nginx, alp).
    #[default]
    Seconds,
    /// Milliseconds.
    Millis,
    /// Microseconds (Apache `%D`).
    Micros,
}

impl TimeUnit {
    /// Parses `s`, `ms` or `us`.
    pub fn parse(s: &str) -> Option<TimeUnit> {
        Some(match s {
            "s" => TimeUnit::Seconds,
            "ms" => TimeUnit::Millis,
            "us" => TimeUnit::Micros,
            _ => return None,
        })
    }

    /// Seconds per unit.
    pub fn scale(self) -> f64 {
        match self {
            TimeUnit::Seconds => 1.0,
            TimeUnit::Millis => 1e-3,
            TimeUnit::Micros => 1e-6,
        }
    }
}

/// Everything `keisoku logs FORMAT [FILE...]` and `keisoku logs RUN` are
/// asked to do, beyond the line format.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// Log files; none means standard input, as does `-`.
    pub files: Vec<PathBuf>,
    /// Save the aggregated statistics here (`--dump`).
    pub dump: Option<PathBuf>,
    /// Print a saved dump instead of reading a log (`--load`).
    pub load: Option<PathBuf>,
    /// How to show the result.
    pub view: ViewSpec,
    /// `-q`: include the query string in the route.
    pub query_string: bool,
    /// `--qs-ignore-values`: with `-q`, parameter names only.
    pub qs_ignore_values: bool,
    /// `-m`: grouping expressions, comma-separated.
    pub matching_groups: Option<String>,
    /// `--auto-group`: replace id-like path segments.
    pub auto_group: bool,
    /// `-f`: only count requests matching this expression.
    pub filters: Option<String>,
    /// `--location`: the zone `-f` reads a time without an offset in
    /// (see [`crate::timestamp::location`]); `None` is alp's `Local`.
    pub location: Option<String>,
    /// Most distinct routes allowed (`--limit`).
    pub limit: usize,
    /// `--timeline DUR`: the bucket width as the user wrote it (`1s`,
    /// `500ms`), checked with the other flags, in their order.
    pub timeline: Option<String>,
    /// `--slow N`: list the N slowest requests.
    pub slow: Option<usize>,
    /// Unit of the response-time fields.
    pub time_unit: TimeUnit,
    /// Refuse any malformed line instead of skipping it.
    pub strict: bool,
    /// Parsing threads (`None`: all cores).
    pub threads: Option<usize>,
    /// `--pos`: a position file to start from and update.
    pub pos: Option<PathBuf>,
    /// `--nosave-pos`: read from the position but do not update it.
    pub nosave_pos: bool,
    /// The inputs are packet captures of this HTTP server, read as alp's
    /// `pcap` reads them (each exchange becomes an LTSV line).
    pub pcap: Option<crate::pcap::Server>,
}

impl Default for Options {
    /// The defaults of `keisoku logs` with no flags: standard input, alp's
    /// table, 5000 routes at most, times in seconds.
    fn default() -> Options {
        Options {
            files: Vec::new(),
            dump: None,
            load: None,
            view: ViewSpec::default(),
            query_string: false,
            qs_ignore_values: false,
            matching_groups: None,
            auto_group: false,
            filters: None,
            location: None,
            limit: 5000,
            timeline: None,
            slow: None,
            time_unit: TimeUnit::Seconds,
            strict: false,
            threads: None,
            pos: None,
            nosave_pos: false,
            pcap: None,
        }
    }
}

/// The route grouper of `-m REGEX,REGEX` and `--auto-group`.
pub fn grouper(groups: Option<&str>, auto_group: bool) -> Result<Grouper> {
    let groups: Vec<String> = groups
        .map(|s| {
            s.split(',')
                .map(|g| g.trim().to_string())
                .filter(|g| !g.is_empty())
                .collect()
        })
        .unwrap_or_default();
    Grouper::new(&groups, auto_group).map_err(|e| Error::input(format!("-m: {e}")))
}

impl Options {
    /// The checked view, the analysis configuration for lines of `format`
    /// and the thread count. Flags are checked in the order the help lists
    /// them, so the first wrong one is the one named.
    pub(crate) fn setup(&self, format: Format) -> Result<(View, Arc<Config>, usize)> {
        let view = self.view.parse()?;
        crate::builtin::check_options(&format, self, view.sort)?;
        let query = match (self.query_string, self.qs_ignore_values) {
            (false, _) => QueryMode::Drop,
            (true, false) => QueryMode::Keep,
            (true, true) => QueryMode::IgnoreValues,
        };
        let grouper = grouper(self.matching_groups.as_deref(), self.auto_group)?;
        let filter = match &self.filters {
            Some(f) => {
                let filter = Filter::new(f).map_err(|e| Error::input(format!("-f: {e}")))?;
                let loc = self.location.as_deref().unwrap_or("Local");
                let zone = crate::timestamp::location(loc).ok_or_else(|| {
                    Error::input(format!(
                        "--location {loc:?}: Invalid timezone abbreviation (use Local, UTC or a zone name such as Asia/Tokyo)"
                    ))
                })?;
                Some(filter.in_zone(zone))
            }
            None => None,
        };
        let timeline = match &self.timeline {
            Some(d) => Some(crate::timestamp::parse_duration(d).ok_or_else(|| {
                Error::input(format!(
                    "--timeline {d:?}: use a duration such as 1s, 500ms or 1m"
                ))
            })?),
            None => None,
        };
        if self.limit == 0 {
            return Err(Error::input("--limit must be at least 1"));
        }
        let mut cfg = Config::new(LineParser::new(format, query, self.time_unit.scale()));
        cfg.grouper = grouper;
        cfg.filter = filter;
        cfg.timeline = timeline;
        cfg.slow = self.slow.unwrap_or(0);
        cfg.route_limit = self.limit;
        // alp's stddev sort runs before any percentile column sorts the
        // values, so it sums squared deviations in line order.
        // So does its stddev column when no percentile sorted the times first.
        // alp's YAML dump keeps every response time in line order.
        cfg.keep_line_order = view.sort == crate::render::SortKey::Stddev
            || view.opts.stddev_in_line_order
            || self
                .dump
                .as_deref()
                .is_some_and(crate::alp_dump::wants_yaml);
        let threads = self
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
            .max(1);
        Ok((view, Arc::new(cfg), threads))
    }
}

/// Something worth telling the user that does not stop the analysis.
#[derive(Debug, Clone, PartialEq)]
pub enum Warning {
    /// Lines that did not parse were skipped.
    Malformed {
        /// The input, as named to the user.
        input: String,
        /// Malformed lines.
        malformed: u64,
        /// All lines.
        lines: u64,
        /// The first few malformed lines.
        first: Vec<Malformed>,
    },
    /// Requests without a readable timestamp are not in the timeline.
    NoTimestamp {
        /// The input, as named to the user.
        input: String,
        /// Requests left out.
        requests: u64,
    },
    /// A stored run kept only a prefix of its log lines (`--log-lines-max`).
    Truncated {
        /// The run id.
        run: String,
        /// Lines kept.
        kept_lines: u64,
        /// Lines the run read.
        lines: u64,
        /// Raw bytes kept.
        kept_bytes: u64,
        /// When the cap was reached, in ms on the run's clock.
        at_ms: f64,
    },
}

impl fmt::Display for Warning {
    /// The warning's text; a multi-line one continues on indented lines.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Warning::Malformed {
                input,
                malformed,
                lines,
                first,
            } => {
                write!(
                    f,
                    "{input}: skipped {malformed} malformed of {lines} lines; first:"
                )?;
                for m in first {
                    write!(f, "\n  line {}: {}: {}", m.line, m.reason, m.text)?;
                }
                Ok(())
            }
            Warning::NoTimestamp { input, requests } => write!(
                f,
                "{input}: {requests} requests have no readable timestamp and are left out of the timeline"
            ),
            Warning::Truncated {
                run,
                kept_lines,
                lines,
                kept_bytes,
                at_ms,
            } => write!(
                f,
                "run {run} kept only its first {kept_lines} of {lines} log lines ({kept_bytes} bytes, --log-lines-max reached {:.1}s into the run); this output covers those lines only",
                at_ms / 1000.0
            ),
        }
    }
}

/// Kept alive while an input is read; dropping it ends the progress shown.
pub type ReadingGuard = Box<dyn std::any::Any>;

/// How an analysis tells its caller what happens, as it happens.
pub trait Reporter {
    /// Reading `input` (of `size` bytes when known) starts; `read` counts
    /// the bytes consumed so far. The guard returned is dropped when the
    /// reading ends.
    fn reading(&self, input: &str, size: Option<u64>, read: Arc<AtomicU64>) -> ReadingGuard {
        let _ = (input, size, read);
        Box::new(())
    }

    /// Something the user should know.
    fn warning(&self, warning: &Warning) {
        let _ = warning;
    }
}

/// A [`Reporter`] that shows nothing.
#[derive(Debug, Clone, Copy, Default)]
pub struct Quiet;

impl Reporter for Quiet {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_view_is_alps_table() {
        let v = ViewSpec::default().parse().unwrap();
        assert_eq!(v.format, OutputFormat::Table);
        assert_eq!(v.sort, SortKey::Count);
        assert!(!v.reverse);
        assert!(v.opts.columns.iter().any(|c| c.keyword() == "p99"));
    }

    #[test]
    fn a_wrong_view_flag_is_named() {
        for (spec, flag) in [
            (
                ViewSpec {
                    format: "xml".into(),
                    ..ViewSpec::default()
                },
                "--format",
            ),
            (
                ViewSpec {
                    sort: "p101".into(),
                    ..ViewSpec::default()
                },
                "--sort",
            ),
            (
                ViewSpec {
                    percentiles: "50,x".into(),
                    ..ViewSpec::default()
                },
                "--percentiles",
            ),
        ] {
            let e = spec.parse().unwrap_err();
            assert_eq!(e.cause(), crate::error::Cause::Input);
            assert!(e.to_string().starts_with(flag), "{e}");
        }
    }

    #[test]
    fn default_options_configure_alps_defaults() {
        let (_, cfg, threads) = Options::default()
            .setup(Format::Ltsv(crate::FieldNames::ltsv()))
            .unwrap();
        assert_eq!(cfg.route_limit, 5000);
        assert_eq!(cfg.slow, 0);
        assert!(cfg.timeline.is_none() && cfg.filter.is_none());
        assert!(!cfg.grouper.is_active());
        assert!(threads >= 1);
    }

    #[test]
    fn warnings_read_as_the_command_prints_them() {
        let w = Warning::Malformed {
            input: "a.log".into(),
            malformed: 2,
            lines: 10,
            first: vec![Malformed {
                line: 3,
                reason: "no uri".into(),
                text: "junk".into(),
            }],
        };
        assert_eq!(
            w.to_string(),
            "a.log: skipped 2 malformed of 10 lines; first:\n  line 3: no uri: junk"
        );
        let w = Warning::Truncated {
            run: "r1".into(),
            kept_lines: 5,
            lines: 9,
            kept_bytes: 300,
            at_ms: 1250.0,
        };
        assert!(w.to_string().starts_with(
            "run r1 kept only its first 5 of 9 log lines (300 bytes, --log-lines-max reached 1.2s"
        ));
    }

    #[test]
    fn a_zero_limit_is_refused() {
        let o = Options {
            limit: 0,
            ..Options::default()
        };
        let e = o
            .setup(Format::Json(crate::FieldNames::json()))
            .unwrap_err();
        assert_eq!(e.to_string(), "--limit must be at least 1");
    }
}
