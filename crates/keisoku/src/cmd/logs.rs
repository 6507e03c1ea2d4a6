//! `keisoku logs`: alp-compatible access-log analysis per route, faster,
//! with timelines, the slowest requests and dump diffs.

use crate::exit::{bad_input, BadInput, GATE_FAILED, OK};
use anyhow::Context as _;
use clap::Parser as _;
use keisoku_logs::render::{self, Column, OutputFormat, RenderOptions, SortKey};
use keisoku_logs::{dump, engine, filter::Filter, format, group::Grouper, input, view};
use keisoku_logs::{Analysis, Config, FieldNames, Format, LineParser, QueryMode, RouteStats};
use std::io::{IsTerminal, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

const ABOUT: &str = "Analyse access logs per route (alp-compatible).";

const LONG_ABOUT: &str = "\
Analyse access logs per route: requests, status classes, response time
(min, max, sum, avg, percentiles, stddev) and body sizes. Command lines of
alp (v1.0.x) work with `alp` replaced by `keisoku logs`; the input is parsed
on all cores and may be gzip-compressed.

Counts, status classes, min, max, sum, avg and the body columns use alp's
exact arithmetic and `%.3f` formatting. Percentiles come from an
HdrHistogram (3 significant digits, 1 µs resolution): each is within 0.1%
(or 1 µs) of the sample alp picks by sorting every value, using alp's rank
rule; p0/p100 are exact. Memory stays flat however large the log.";

const AFTER: &str = "\
Examples:
  keisoku logs ltsv access.log -m '/users/[0-9]+,/items/.+' --sort sum -r
  keisoku logs ltsv access.log.gz --auto-group --timeline 1s
  keisoku logs json --file access.json --slow 20 -f 'Status >= 500'
  keisoku logs regexp access.log --dump before.json
  keisoku logs diff before.json after.json --sort sum -r
  keisoku logs last --sort p99 -r            # a run recorded with --access-log
  keisoku logs diff before-run after-run     # two stored runs, route by route

Exit status: 0 ok, 1 runtime failure, 2 bad usage or input (including a
file that is not a log of the chosen format), 3 `diff --fail-over` tripped.";

/// Flags of `keisoku logs`.
#[derive(clap::Args, Debug)]
#[command(about = ABOUT, long_about = LONG_ABOUT, after_help = AFTER)]
pub struct Args {
    #[command(subcommand)]
    cmd: Sub,
}

#[derive(clap::Subcommand, Debug)]
enum Sub {
    /// Analyse an LTSV log (labels: uri method time apptime reqtime size status).
    #[command(long_about = LONG_ABOUT, after_help = AFTER)]
    Ltsv {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        labels: LtsvLabels,
    },
    /// Analyse a JSON-lines log (keys: uri method time response_time request_time body_bytes status).
    #[command(long_about = LONG_ABOUT, after_help = AFTER)]
    Json {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        keys: JsonKeys,
    },
    /// Analyse any line format with a regular expression with named groups
    /// (default: combined log format followed by response and request time).
    #[command(long_about = LONG_ABOUT, after_help = AFTER)]
    Regexp {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        subexp: RegexpNames,
    },
    /// Compare two dumps (from --dump) or stored runs route by route:
    /// `value (+change)`.
    Diff(DiffArgs),
    /// `keisoku logs RUN [flags]`: the route table of a stored run's access
    /// log (RUN: id, id prefix, name or `last`; see `keisoku logs RUN --help`).
    #[command(external_subcommand)]
    Stored(Vec<String>),
}

#[derive(clap::Args, Debug)]
struct Common {
    /// Log files (`-` or none: standard input). gzip is detected and decoded.
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,
    /// The access log file (alp's flag; same as a positional FILE).
    #[arg(long, value_name = "FILE")]
    file: Option<PathBuf>,
    /// Save the aggregated statistics as JSON (reload with --load, compare with `diff`).
    #[arg(long, value_name = "FILE")]
    dump: Option<PathBuf>,
    /// Print statistics saved by --dump instead of reading a log.
    #[arg(long, value_name = "FILE")]
    load: Option<PathBuf>,
    #[command(flatten)]
    view: ViewFlags,
    /// Include the query string in the route (parameters sorted).
    #[arg(short = 'q', long = "query-string")]
    query_string: bool,
    /// With -q: keep parameter names only, values become `xxx`.
    #[arg(long = "qs-ignore-values")]
    qs_ignore_values: bool,
    /// Group URIs by regular expressions, comma-separated; the first match
    /// names the route (alp's -m).
    #[arg(short = 'm', long = "matching-groups", value_name = "REGEX,REGEX")]
    matching_groups: Option<String>,
    /// Replace id-like path segments (numbers, UUIDs, dates, hex ids, long
    /// tokens) with :id, :uuid, :date, :hex, :token.
    #[arg(long = "auto-group")]
    auto_group: bool,
    /// Only count requests matching an expression, e.g.
    /// 'Status >= 500 and Uri matches "^/api"' (Uri, Method, Time,
    /// ResponseTime, BodyBytes, Status; == != < <= > >= matches contains
    /// startsWith endsWith in, and or not, TimeAgo("5m")).
    #[arg(short = 'f', long, value_name = "EXPR")]
    filters: Option<String>,
    /// Most distinct routes allowed (alp's --limit); beyond it, group URIs.
    #[arg(long, default_value_t = 5000, value_name = "N")]
    limit: usize,
    /// Per-bucket counts, rps, p50/p99 per route and requests in flight,
    /// e.g. 1s, 500ms, 1m. Shown instead of the route table (sparklines for
    /// table/markdown, rows for csv/tsv, an object for json).
    #[arg(long, value_name = "DUR")]
    timeline: Option<String>,
    /// Also list the N slowest single requests with time, route and line number.
    #[arg(long, value_name = "N")]
    slow: Option<usize>,
    /// Unit of the response-time fields: s (nginx, alp), ms, or us (Apache %D).
    #[arg(long = "time-unit", default_value = "s", value_parser = ["s", "ms", "us"])]
    time_unit: String,
    /// Treat any malformed line as an error (exit 2) instead of skipping it.
    #[arg(long)]
    strict: bool,
    /// Parsing threads (default: all cores).
    #[arg(long, value_name = "N")]
    threads: Option<usize>,
    /// Position file: start reading at the byte offset stored there and store
    /// the new end (alp's --pos; plain files only).
    #[arg(long = "pos", value_name = "FILE")]
    pos: Option<PathBuf>,
    /// With --pos: read from the stored position but do not update it.
    #[arg(long = "nosave-pos")]
    nosave_pos: bool,
    /// Never show the progress line.
    #[arg(long = "no-progress")]
    no_progress: bool,
    /// Accepted for alp compatibility (time zone of filter times); times
    /// without a zone are read as UTC.
    #[arg(long, hide = true)]
    location: Option<String>,
    /// Accepted for alp compatibility (html pagination).
    #[arg(long, hide = true)]
    page: Option<usize>,
    /// The run store, when FILE names a stored run (default:
    /// $KEISOKU_STORE, else ./.keisoku/runs.db).
    #[arg(long, value_name = "PATH")]
    store: Option<PathBuf>,
}

#[derive(clap::Args, Debug)]
struct ViewFlags {
    /// table, markdown (md), tsv, csv, json or html.
    #[arg(long, default_value = "table")]
    format: String,
    /// count, uri, method, max, min, avg, sum, stddev, pNN, max-body,
    /// min-body, avg-body, sum-body.
    #[arg(long, default_value = "count")]
    sort: String,
    /// Sort in descending order.
    #[arg(short = 'r', long)]
    reverse: bool,
    /// No header line (tsv, csv).
    #[arg(long)]
    noheaders: bool,
    /// Add a totals line (table, markdown).
    #[arg(long = "show-footers")]
    show_footers: bool,
    /// Columns, comma-separated (count,1xx,...,uri,min,max,sum,avg,pNN,stddev,
    /// min_body,max_body,sum_body,avg_body), or all.
    #[arg(short = 'o', long, default_value = "all")]
    output: String,
    /// Percentile columns, comma-separated integers 0-100. From an
    /// HdrHistogram (3 significant digits, 1 µs): each within 0.1% (or 1 µs)
    /// of the value alp prints; p0/p100 exact; exact below ~2 s for
    /// millisecond logs (nginx).
    #[arg(long, default_value = "90,95,99")]
    percentiles: String,
    /// Show URIs percent-decoded.
    #[arg(long = "decode-uri")]
    decode_uri: bool,
}

#[derive(clap::Args, Debug)]
struct LtsvLabels {
    /// Label of the request URI.
    #[arg(long = "uri-label", default_value = "uri")]
    uri: String,
    /// Label of the method.
    #[arg(long = "method-label", default_value = "method")]
    method: String,
    /// Label of the timestamp.
    #[arg(long = "time-label", default_value = "time")]
    time: String,
    /// Label of the upstream time (preferred when it is a number).
    #[arg(long = "apptime-label", default_value = "apptime")]
    apptime: String,
    /// Label of the request time (used when apptime is `-` or missing).
    #[arg(long = "reqtime-label", default_value = "reqtime")]
    reqtime: String,
    /// Label of the body size.
    #[arg(long = "size-label", default_value = "size")]
    size: String,
    /// Label of the status code.
    #[arg(long = "status-label", default_value = "status")]
    status: String,
}

#[derive(clap::Args, Debug)]
struct JsonKeys {
    /// Key of the request URI.
    #[arg(long = "uri-key", default_value = "uri")]
    uri: String,
    /// Key of the method.
    #[arg(long = "method-key", default_value = "method")]
    method: String,
    /// Key of the timestamp.
    #[arg(long = "time-key", default_value = "time")]
    time: String,
    /// Key of the response time (preferred when it is a number).
    #[arg(long = "response-time-key", default_value = "response_time")]
    response_time: String,
    /// Key of the request time (used when the response time is not a number).
    #[arg(long = "request-time-key", default_value = "request_time")]
    request_time: String,
    /// Key of the body size.
    #[arg(long = "body-bytes-key", default_value = "body_bytes")]
    body_bytes: String,
    /// Key of the status code.
    #[arg(long = "status-key", default_value = "status")]
    status: String,
}

#[derive(clap::Args, Debug)]
struct RegexpNames {
    /// The pattern; named groups hold the fields.
    #[arg(long, default_value = format::DEFAULT_PATTERN, hide_default_value = true)]
    pattern: String,
    /// Group of the request URI.
    #[arg(long = "uri-subexp", default_value = "uri")]
    uri: String,
    /// Group of the method.
    #[arg(long = "method-subexp", default_value = "method")]
    method: String,
    /// Group of the timestamp.
    #[arg(long = "time-subexp", default_value = "time")]
    time: String,
    /// Group of the response time (preferred when it is a number).
    #[arg(long = "response-time-subexp", default_value = "response_time")]
    response_time: String,
    /// Group of the request time.
    #[arg(long = "request-time-subexp", default_value = "request_time")]
    request_time: String,
    /// Group of the body size.
    #[arg(long = "body-bytes-subexp", default_value = "body_bytes")]
    body_bytes: String,
    /// Group of the status code.
    #[arg(long = "status-subexp", default_value = "status")]
    status: String,
}

#[derive(clap::Args, Debug)]
struct DiffArgs {
    /// The earlier dump, or a stored run (id, prefix, name, `last`).
    from: PathBuf,
    /// The later dump, or a stored run.
    to: PathBuf,
    #[command(flatten)]
    view: ViewFlags,
    /// Exit 3 if any route's p99 grew by more than this fraction (0.2 = 20%).
    #[arg(long = "fail-over", value_name = "FRACTION")]
    fail_over: Option<f64>,
    /// The run store, for BEFORE/AFTER given as stored runs (default:
    /// $KEISOKU_STORE, else ./.keisoku/runs.db).
    #[arg(long, value_name = "PATH")]
    store: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    match args.cmd {
        Sub::Ltsv { common, labels: l } => {
            let names = FieldNames {
                uri: l.uri,
                method: l.method,
                time: l.time,
                response_time: l.apptime,
                request_time: l.reqtime,
                body_bytes: l.size,
                status: l.status,
            };
            analyse(common, Format::Ltsv(names))
        }
        Sub::Json { common, keys: k } => {
            let names = FieldNames {
                uri: k.uri,
                method: k.method,
                time: k.time,
                response_time: k.response_time,
                request_time: k.request_time,
                body_bytes: k.body_bytes,
                status: k.status,
            };
            analyse(common, Format::Json(names))
        }
        Sub::Regexp { common, subexp: s } => {
            let names = FieldNames {
                uri: s.uri,
                method: s.method,
                time: s.time,
                response_time: s.response_time,
                request_time: s.request_time,
                body_bytes: s.body_bytes,
                status: s.status,
            };
            let format = Format::regexp(&s.pattern, names)
                .map_err(|e| bad_input(format!("--pattern: {}", format::regex_message(&e))))?;
            analyse(common, format)
        }
        Sub::Diff(d) => diff(d),
        Sub::Stored(argv) => {
            let args = StoredArgs::parse_from(
                std::iter::once("keisoku logs RUN".to_string()).chain(argv.iter().skip(1).cloned()),
            );
            let spec = argv.first().cloned().unwrap_or_default();
            stored_run(&spec, args)
        }
    }
}

struct View {
    format: OutputFormat,
    sort: SortKey,
    reverse: bool,
    opts: RenderOptions,
}

fn parse_view(v: &ViewFlags) -> anyhow::Result<View> {
    let format = OutputFormat::parse(&v.format).ok_or_else(|| {
        bad_input(format!(
            "--format {:?}: use table, markdown, tsv, csv, json or html",
            v.format
        ))
    })?;
    let sort = SortKey::parse(&v.sort).ok_or_else(|| {
        bad_input(format!(
            "--sort {:?}: use count, uri, method, max, min, avg, sum, stddev, pNN (0-100), max-body, min-body, avg-body or sum-body",
            v.sort
        ))
    })?;
    let mut percentiles = Vec::new();
    for p in v
        .percentiles
        .split(',')
        .map(str::trim)
        .filter(|p| !p.is_empty())
    {
        match p.parse::<u32>() {
            Ok(n) if n <= 100 => percentiles.push(n),
            _ => {
                return Err(bad_input(format!(
                    "--percentiles: {p:?} is not an integer from 0 to 100"
                )))
            }
        }
    }
    let columns = Column::parse_list(&v.output, &percentiles)
        .map_err(|bad| bad_input(format!("-o: invalid keywords: {bad}")))?;
    Ok(View {
        format,
        sort,
        reverse: v.reverse,
        opts: RenderOptions {
            columns,
            no_headers: v.noheaders,
            show_footers: v.show_footers,
            decode_uri: v.decode_uri,
        },
    })
}

fn write_out(s: &str) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(s.as_bytes()).and_then(|_| out.flush()) {
        // A closed pipe (`| head`) is the reader's choice, not a failure.
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => Ok(()),
        r => r.context("writing output"),
    }
}

fn display(p: &Path) -> String {
    if p == Path::new("-") {
        "<stdin>".into()
    } else {
        p.display().to_string()
    }
}

/// Shows "read 1.2 GB of 4.0 GB (30%)" on stderr while a long input is read.
struct Progress {
    done: Arc<AtomicBool>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Progress {
    fn start(name: String, size: Option<u64>, read: Arc<AtomicU64>, enabled: bool) -> Progress {
        let done = Arc::new(AtomicBool::new(false));
        let big = !matches!(size, Some(s) if s < 64 << 20);
        if !enabled || !big || !std::io::stderr().is_terminal() {
            return Progress { done, handle: None };
        }
        let flag = Arc::clone(&done);
        let handle = std::thread::spawn(move || {
            let start = std::time::Instant::now();
            let mut shown = false;
            while !flag.load(Ordering::Relaxed) {
                std::thread::sleep(std::time::Duration::from_millis(250));
                if start.elapsed().as_millis() < 500 || flag.load(Ordering::Relaxed) {
                    continue;
                }
                let n = read.load(Ordering::Relaxed) as f64;
                let rate = n / start.elapsed().as_secs_f64() / 1e6;
                let msg = match size {
                    Some(s) if s > 0 => format!(
                        "{name}: {:.0} / {:.0} MB ({:.0}%), {rate:.0} MB/s",
                        n / 1e6,
                        s as f64 / 1e6,
                        n * 100.0 / s as f64
                    ),
                    _ => format!("{name}: {:.0} MB, {rate:.0} MB/s", n / 1e6),
                };
                eprint!("\r\x1b[2K{msg}");
                shown = true;
            }
            if shown {
                eprint!("\r\x1b[2K");
            }
        });
        Progress {
            done,
            handle: Some(handle),
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.done.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
    }
}

fn read_pos(pos: &Path) -> anyhow::Result<u64> {
    match std::fs::read_to_string(pos) {
        Ok(s) if s.trim().is_empty() => Ok(0),
        Ok(s) => s.trim().parse().map_err(|_| {
            bad_input(format!(
                "{}: not a byte offset: {:?}",
                pos.display(),
                s.trim()
            ))
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(0),
        Err(e) => Err(e).with_context(|| format!("reading {}", pos.display())),
    }
}

fn analyse_one(
    cfg: &Arc<Config>,
    path: &Path,
    c: &Common,
    threads: usize,
) -> anyhow::Result<Analysis> {
    let name = display(path);
    let read = Arc::new(AtomicU64::new(0));
    let opened = input::open(Some(path), Arc::clone(&read)).map_err(|e| {
        if e.kind() == std::io::ErrorKind::NotFound
            || e.kind() == std::io::ErrorKind::PermissionDenied
        {
            bad_input(format!("{name}: {e}"))
        } else {
            anyhow::Error::new(e).context(format!("opening {name}"))
        }
    })?;
    analyse_reader(cfg, &name, opened.reader, opened.size, read, c, threads)
}

/// Runs the parallel analysis over one input (a file or a run's kept
/// lines) with a progress line, then checks it as [`checked`] does.
fn analyse_reader(
    cfg: &Arc<Config>,
    name: &str,
    reader: impl std::io::Read + Send + 'static,
    size: Option<u64>,
    read: Arc<AtomicU64>,
    c: &Common,
    threads: usize,
) -> anyhow::Result<Analysis> {
    let progress = Progress::start(name.to_string(), size, read, !c.no_progress);
    let analysis = engine::analyze(Arc::clone(cfg), reader, threads).map_err(|e| match e {
        engine::Error::Feed(f) => bad_input(format!("{name}: {f}")),
        engine::Error::Io(io) => anyhow::Error::new(io).context(format!("reading {name}")),
    })?;
    drop(progress);
    checked(name, cfg, c, analysis)
}

/// Refuses an input that is not a log of the chosen format, and reports
/// (or with --strict refuses) its malformed lines.
fn checked(
    name: &str,
    cfg: &Config,
    c: &Common,
    mut analysis: Analysis,
) -> anyhow::Result<Analysis> {
    check_format(name, cfg, &analysis)?;
    if analysis.counts.malformed > 0 {
        let first = analysis.malformed.first();
        if c.strict {
            let detail = first
                .map(|m| format!(": line {}: {}: {}", m.line, m.reason, m.text))
                .unwrap_or_default();
            return Err(bad_input(format!(
                "{name}: {} malformed line{} (--strict){detail}",
                analysis.counts.malformed,
                if analysis.counts.malformed == 1 {
                    ""
                } else {
                    "s"
                }
            )));
        }
        eprintln!(
            "keisoku: warning: {name}: skipped {} malformed of {} lines; first:",
            analysis.counts.malformed, analysis.counts.lines
        );
        for m in &analysis.malformed {
            eprintln!("  line {}: {}: {}", m.line, m.reason, m.text);
        }
    }
    if analysis.counts.bad_time > 0 && cfg.timeline.is_some() {
        eprintln!(
            "keisoku: warning: {name}: {} requests have no readable timestamp and are left out of the timeline",
            analysis.counts.bad_time
        );
    }
    analysis.head.clear();
    Ok(analysis)
}

/// Exit 2 with a useful hint when nothing in the input is a line of the
/// chosen format.
fn check_format(name: &str, cfg: &Config, a: &Analysis) -> anyhow::Result<()> {
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
    Err(bad_input(format!(
        "{name}: no line is a valid {chosen} access-log line; {hint}"
    )))
}

/// The view, the analysis configuration and the thread count of `c`.
fn setup(c: &Common, format: Format) -> anyhow::Result<(View, Arc<Config>, usize)> {
    let view = parse_view(&c.view)?;
    let time_scale = match c.time_unit.as_str() {
        "ms" => 1e-3,
        "us" => 1e-6,
        _ => 1.0,
    };
    let query = match (c.query_string, c.qs_ignore_values) {
        (false, _) => QueryMode::Drop,
        (true, false) => QueryMode::Keep,
        (true, true) => QueryMode::IgnoreValues,
    };
    let grouper = grouper(c.matching_groups.as_deref(), c.auto_group)?;
    let filter = match &c.filters {
        Some(f) => Some(Filter::new(f).map_err(|e| bad_input(format!("-f: {e}")))?),
        None => None,
    };
    let timeline = match &c.timeline {
        Some(d) => Some(keisoku_logs::timestamp::parse_duration(d).ok_or_else(|| {
            bad_input(format!(
                "--timeline {d:?}: use a duration such as 1s, 500ms or 1m"
            ))
        })?),
        None => None,
    };
    if c.limit == 0 {
        return Err(bad_input("--limit must be at least 1"));
    }
    let mut cfg = Config::new(LineParser::new(format, query, time_scale));
    cfg.grouper = grouper;
    cfg.filter = filter;
    cfg.timeline = timeline;
    cfg.slow = c.slow.unwrap_or(0);
    cfg.route_limit = c.limit;
    let cfg = Arc::new(cfg);
    let threads = c
        .threads
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(2, |n| n.get()))
        .max(1);
    Ok((view, cfg, threads))
}

/// The files (or standard input) `c` names.
fn input_files(c: &Common) -> Vec<PathBuf> {
    c.file
        .iter()
        .cloned()
        .chain(c.files.iter().cloned())
        .collect()
}

fn analyse(c: Common, format: Format) -> anyhow::Result<u8> {
    if c.load.is_none() {
        // A RUN where a FILE would be, when no such file exists.
        if let [only] = input_files(&c).as_slice() {
            if let Some(spec) = only
                .to_str()
                .filter(|_| !only.exists() && only != Path::new("-"))
            {
                if let Some((store, run)) = find_run(spec, c.store.as_deref())? {
                    return analyse_run(&store, &run, c, Some(format));
                }
            }
        }
    }
    let (_, cfg, threads) = setup(&c, format)?;
    let (routes, analysis) = if let Some(load) = &c.load {
        let text = std::fs::read_to_string(load)
            .map_err(|e| bad_input(format!("{}: {e}", load.display())))?;
        let (routes, _) =
            dump::from_json(&text).map_err(|e| bad_input(format!("{}: {e}", load.display())))?;
        (routes, None)
    } else {
        let mut files = input_files(&c);
        if files.is_empty() {
            if std::io::stdin().is_terminal() {
                return Err(bad_input(
                    "no input: give a log FILE (or --file), or pipe one into standard input",
                ));
            }
            files.push(PathBuf::from("-"));
        }
        if c.pos.is_some() && (files.len() != 1 || files[0] == Path::new("-")) {
            return Err(bad_input(
                "--pos needs exactly one log file (not standard input)",
            ));
        }
        let mut total: Option<Analysis> = None;
        for f in &files {
            let a = if let Some(pos) = &c.pos {
                analyse_from_pos(&cfg, f, pos, &c, threads)?
            } else {
                analyse_one(&cfg, f, &c, threads)?
            };
            match &mut total {
                Some(t) => t.merge(a),
                None => total = Some(a),
            }
        }
        let a = total.unwrap_or_else(|| unreachable!("at least one input"));
        (a.routes.clone(), Some(a))
    };
    output(&c, routes, analysis)
}

/// Prints the route table (or the timeline, the slowest requests) of an
/// analysis, and writes its dump, as every `keisoku logs` input does.
fn output(
    c: &Common,
    mut routes: Vec<RouteStats>,
    analysis: Option<Analysis>,
) -> anyhow::Result<u8> {
    let view = parse_view(&c.view)?;
    if let Some(a) = &analysis {
        if a.routes.len() > c.limit {
            return Err(bad_input(format!("more than {} distinct routes; group them with -m or --auto-group, or raise --limit", c.limit)));
        }
    }
    if let (Some(path), Some(a)) = (&c.dump, &analysis) {
        std::fs::write(path, dump::to_json(&a.routes, &a.counts))
            .with_context(|| format!("writing {}", path.display()))?;
    }

    render::sort_routes(&mut routes, view.sort, view.reverse);
    let mut out = String::new();
    let tl = analysis.as_ref().and_then(|a| a.timeline.as_ref());
    let slow = analysis
        .as_ref()
        .map(|a| a.slow.as_slice())
        .filter(|s| !s.is_empty() || c.slow.is_some());
    if view.format == OutputFormat::Json && (tl.is_some() || slow.is_some()) {
        // One JSON document: alp's route rows plus the extras.
        let rows: serde_json::Value = serde_json::from_str(&render::render(
            &routes,
            None,
            OutputFormat::Json,
            &view.opts,
        ))
        .unwrap_or_default();
        let mut obj = serde_json::json!({ "routes": rows });
        if let Some(t) = tl {
            obj["timeline"] = serde_json::from_str(&view::timeline_json(t)).unwrap_or_default();
        }
        if let Some(s) = slow {
            obj["slow"] = serde_json::to_value(s).unwrap_or_default();
        }
        out.push_str(&obj.to_string());
        out.push('\n');
    } else if let Some(t) = tl {
        match view.format {
            OutputFormat::Csv => out.push_str(&view::timeline_csv(t, ',')),
            OutputFormat::Tsv => out.push_str(&view::timeline_csv(t, '\t')),
            _ => out.push_str(&view::timeline_text(t, 10, 80)),
        }
    } else {
        out.push_str(&render::render(&routes, None, view.format, &view.opts));
    }
    if let (Some(s), false) = (slow, view.format == OutputFormat::Json) {
        out.push('\n');
        out.push_str(&view::slow_view(s, view.format));
    }
    write_out(&out)?;
    Ok(OK)
}

fn analyse_from_pos(
    cfg: &Arc<Config>,
    file: &Path,
    pos: &Path,
    c: &Common,
    threads: usize,
) -> anyhow::Result<Analysis> {
    use std::io::{Read, Seek, SeekFrom};
    let start = read_pos(pos)?;
    let name = display(file);
    let mut f = std::fs::File::open(file).map_err(|e| bad_input(format!("{name}: {e}")))?;
    let len = f.metadata().map(|m| m.len()).unwrap_or(0);
    // A log rotated since the position was saved starts over.
    let start = if start > len { 0 } else { start };
    f.seek(SeekFrom::Start(start))
        .with_context(|| format!("seeking {name}"))?;
    let reader = f.take(len - start);
    let a = engine::analyze(Arc::clone(cfg), reader, threads).map_err(|e| match e {
        engine::Error::Feed(f) => bad_input(format!("{name}: {f}")),
        engine::Error::Io(io) => anyhow::Error::new(io).context(format!("reading {name}")),
    })?;
    if start == 0 {
        check_format(&name, cfg, &a)?;
    }
    if c.strict && a.counts.malformed > 0 {
        return Err(bad_input(format!(
            "{name}: {} malformed lines after offset {start} (--strict)",
            a.counts.malformed
        )));
    }
    if !c.nosave_pos {
        std::fs::write(pos, len.to_string())
            .with_context(|| format!("writing {}", pos.display()))?;
    }
    Ok(a)
}

fn load_dump(p: &Path, store_flag: Option<&Path>) -> anyhow::Result<Vec<RouteStats>> {
    if let Some(spec) = p.to_str().filter(|_| !p.exists()) {
        if let Some((store, run)) = find_run(spec, store_flag)? {
            return run_routes(&store, &run);
        }
    }
    let text =
        std::fs::read_to_string(p).map_err(|e| bad_input(format!("{}: {e}", p.display())))?;
    let (routes, _) = dump::from_json(&text)
        .map_err(|e| anyhow::Error::new(BadInput(format!("{}: {e}", p.display()))))?;
    Ok(routes)
}

fn diff(d: DiffArgs) -> anyhow::Result<u8> {
    let view = parse_view(&d.view)?;
    let from = load_dump(&d.from, d.store.as_deref())?;
    let mut to = load_dump(&d.to, d.store.as_deref())?;
    render::sort_routes(&mut to, view.sort, view.reverse);
    write_out(&render::render(&to, Some(&from), view.format, &view.opts))?;
    if let Some(limit) = d.fail_over {
        let mut worse = Vec::new();
        for r in &to {
            if let Some(f) = from.iter().find(|f| f.method == r.method && f.uri == r.uri) {
                let (a, b) = (f.percentile(99.0), r.percentile(99.0));
                if a > 0.0 && b > a * (1.0 + limit) {
                    worse.push(format!(
                        "{} {}: p99 {:.3} -> {:.3} s",
                        r.method, r.uri, a, b
                    ));
                }
            }
        }
        if !worse.is_empty() {
            eprintln!(
                "keisoku: regression: p99 grew more than {:.0}% on {} route(s):",
                limit * 100.0,
                worse.len()
            );
            for w in &worse {
                eprintln!("  {w}");
            }
            return Ok(GATE_FAILED);
        }
    }
    Ok(OK)
}

const STORED_ABOUT: &str = "\
The access-log analysis of a stored run (recorded by `keisoku run` or
`keisoku record` with --access-log). RUN is a run id, a unique id prefix, a
run name or `last` (see `keisoku runs`).

A run keeps the log lines it followed (up to --log-lines-max, 1 GiB by
default, about a tenth of that compressed), so every option of `keisoku logs
ltsv|json|regexp FILE` works and prints what it prints for a file holding
those lines: -f, -q, --qs-ignore-values, -m, --auto-group, --slow (line N is
the run's N-th kept line: `keisoku export RUN --format log | sed -n Np`),
--timeline, --strict, every sort, column, percentile and format, --dump.
The lines are parsed with the run's --log-format (`keisoku logs ltsv RUN`
chooses another, with its label flags).

A run without its lines (recorded with --no-log-lines, or by a keisoku that
did not keep them) still has per-route statistics and per-second
histograms: the plain table, sorts, columns, percentiles, formats, -m,
--auto-group and --dump work from those; -f, -q, --slow, --timeline,
--time-unit and --strict are refused (exit 2). When --log-lines-max cut the
lines short, the plain table comes from the statistics (they cover every
line) and the options that need lines use the kept ones, with a warning
naming how many lines and until when.";

/// Flags of `keisoku logs RUN` (those of `keisoku logs ltsv FILE`).
#[derive(clap::Parser, Debug)]
#[command(about = STORED_ABOUT, after_help = "Examples:\n  keisoku logs last\n  \
keisoku logs before --sort p99 -r --percentiles 50,99 --format md\n  \
keisoku logs last -f 'Status >= 500' --slow 10\n  keisoku logs last --auto-group --timeline 1s\n  \
keisoku logs last -q --qs-ignore-values --dump after.json\n  keisoku logs diff before after")]
// A run is the input: the file flags stay parseable (to refuse them with a
// reason) but out of the help.
#[command(
    mut_arg("files", |a| a.hide(true)),
    mut_arg("file", |a| a.hide(true)),
    mut_arg("load", |a| a.hide(true)),
    mut_arg("pos", |a| a.hide(true)),
    mut_arg("nosave_pos", |a| a.hide(true))
)]
struct StoredArgs {
    #[command(flatten)]
    common: Common,
}

/// The store and run id `spec` names, or `None` when there is no store or
/// no such run (the caller then treats `spec` as a file name).
fn find_run(
    spec: &str,
    store_flag: Option<&Path>,
) -> anyhow::Result<Option<(keisoku_store::Store, String)>> {
    let path = keisoku_store::store_path(store_flag);
    if !path.exists() {
        return Ok(None);
    }
    let store = keisoku_store::Store::open_existing(&path)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    Ok(store.resolve(spec).ok().map(|run| (store, run)))
}

fn stored_run(spec: &str, a: StoredArgs) -> anyhow::Result<u8> {
    let c = a.common;
    let path = keisoku_store::store_path(c.store.as_deref());
    let Some((store, run)) = find_run(spec, c.store.as_deref())? else {
        return Err(bad_input(format!(
            "{spec}: not a subcommand (ltsv, json, regexp, diff) nor a run in {} (see `keisoku runs`)",
            path.display()
        )));
    };
    if let Some(f) = input_files(&c).first() {
        return Err(bad_input(format!(
            "{}: `keisoku logs RUN` reads the run's own lines; give a FILE to `keisoku logs ltsv|json|regexp` instead",
            f.display()
        )));
    }
    analyse_run(&store, &run, c, None)
}

/// `keisoku logs [FORMAT] RUN ...`: the run's kept lines through the same
/// pipeline as a file (parsed as `format`, else as the run was recorded),
/// or its stored per-route statistics when it has no lines.
fn analyse_run(
    store: &keisoku_store::Store,
    run: &str,
    c: Common,
    format: Option<Format>,
) -> anyhow::Result<u8> {
    for (flag, used) in [("--pos", c.pos.is_some()), ("--load", c.load.is_some())] {
        if used {
            return Err(bad_input(format!(
                "{flag} does not apply to a stored run ({run})"
            )));
        }
    }
    let damaged = |e: keisoku_store::StoreError| anyhow::anyhow!("run {run}: {e}");
    let log = store.access_log(run).map_err(damaged)?;
    let line_options: Vec<&str> = [
        ("-f", c.filters.is_some()),
        ("-q", c.query_string || c.qs_ignore_values),
        ("--timeline", c.timeline.is_some()),
        ("--slow", c.slow.is_some()),
        ("--time-unit", c.time_unit != "s"),
        ("--strict", c.strict),
    ]
    .into_iter()
    .filter(|o| o.1)
    .map(|o| o.0)
    .collect();
    let kept = log.as_ref().filter(|l| l.kept_lines > 0);
    let use_lines = match kept {
        None => false,
        Some(l) if l.truncated && line_options.is_empty() => {
            // The statistics cover every line; use the kept lines only if
            // the recording never got to store them (killed keisoku).
            store
                .routes(run, keisoku_store::RouteSource::AccessLog)
                .map_err(damaged)?
                .is_empty()
        }
        Some(_) => true,
    };
    if !use_lines {
        if !line_options.is_empty() {
            return Err(refusal(run, &line_options, log.as_ref()));
        }
        let view = parse_view(&c.view)?;
        return print_stored(
            store,
            run,
            &view,
            c.matching_groups.as_deref(),
            c.auto_group,
            c.dump.as_deref(),
        );
    }
    let Some(log) = kept else {
        unreachable!("lines are used only when kept")
    };
    let analysis = analyse_lines(store, run, &c, format, log)?;
    output(&c, analysis.routes.clone(), Some(analysis))
}

/// The run's kept lines through the file pipeline, configured by `c`.
fn analyse_lines(
    store: &keisoku_store::Store,
    run: &str,
    c: &Common,
    format: Option<Format>,
    log: &keisoku_store::AccessLog,
) -> anyhow::Result<Analysis> {
    let damaged = |e: keisoku_store::StoreError| anyhow::anyhow!("run {run}: {e}");
    let recorded = crate::recording::follow::log_format(&log.format, log.pattern.as_deref())
        .map_err(|e| anyhow::anyhow!("run {run}: {e}"))?;
    let format = match format {
        None => recorded,
        // `keisoku logs regexp RUN` without --pattern: the run's own pattern.
        Some(Format::Regexp { pattern, .. })
            if pattern.as_str() == format::DEFAULT_PATTERN
                && matches!(recorded, Format::Regexp { .. }) =>
        {
            recorded
        }
        Some(f) => f,
    };
    let (_, cfg, threads) = setup(c, format)?;
    if log.truncated {
        eprintln!(
            "keisoku: warning: run {run} kept only its first {} of {} log lines ({} bytes, --log-lines-max reached {:.1}s into the run); this output covers those lines only",
            log.kept_lines,
            log.lines,
            log.kept_bytes,
            log.truncated_ms.unwrap_or(0.0) / 1000.0
        );
    }
    let name = format!("run {run}");
    let read = Arc::new(AtomicU64::new(0));
    let reader = input::Counting::new(store.log_lines(run).map_err(damaged)?, Arc::clone(&read));
    analyse_reader(&cfg, &name, reader, Some(log.kept_bytes), read, c, threads)
}

/// Why a run cannot answer options that need its log lines.
fn refusal(run: &str, options: &[&str], log: Option<&keisoku_store::AccessLog>) -> anyhow::Error {
    let why = match log {
        Some(l) if !l.keep_lines => {
            "it was recorded with --no-log-lines or --log-lines-max 0".to_string()
        }
        Some(l) if l.truncated => format!(
            "its first line was already larger than --log-lines-max ({} bytes)",
            l.max_bytes
        ),
        Some(_) => "its access log had no lines".to_string(),
        None => "it was recorded before keisoku kept them".to_string(),
    };
    bad_input(format!(
        "{}: run {run} keeps per-route statistics and per-second histograms, not the log lines {} need{} ({why}); run `keisoku logs ltsv|json|regexp FILE` on the access log itself, and record the next run without --no-log-lines (lines are kept up to --log-lines-max, 1GiB by default)",
        options.join(", "),
        if options.len() == 1 { "this option" } else { "these options" },
        if options.len() == 1 { "s" } else { "" },
    ))
}

/// A run's routes for `keisoku logs diff`: its stored statistics, or, when
/// its recording was killed before storing them, its kept lines.
fn run_routes(store: &keisoku_store::Store, run: &str) -> anyhow::Result<Vec<RouteStats>> {
    let damaged = |e: keisoku_store::StoreError| anyhow::anyhow!("run {run}: {e}");
    let has_table = !store
        .routes(run, keisoku_store::RouteSource::AccessLog)
        .map_err(damaged)?
        .is_empty();
    match store.access_log(run).map_err(damaged)? {
        Some(log) if !has_table && log.kept_lines > 0 => {
            // The defaults of `keisoku logs RUN`, as a parse of no flags.
            let c = StoredArgs::try_parse_from(["keisoku logs RUN", "--no-progress"])
                .map_err(|e| anyhow::anyhow!("{e}"))?
                .common;
            Ok(analyse_lines(store, run, &c, None, &log)?.routes)
        }
        _ => stored_routes(store, run),
    }
}

/// The route grouper of `-m REGEX,REGEX` and `--auto-group`.
fn grouper(groups: Option<&str>, auto_group: bool) -> anyhow::Result<Grouper> {
    let groups: Vec<String> = groups
        .map(|s| {
            s.split(',')
                .map(|g| g.trim().to_string())
                .filter(|g| !g.is_empty())
                .collect()
        })
        .unwrap_or_default();
    Grouper::new(&groups, auto_group).map_err(|e| bad_input(format!("-m: {e}")))
}

fn print_stored(
    store: &keisoku_store::Store,
    run: &str,
    view: &View,
    groups: Option<&str>,
    auto_group: bool,
    dump_to: Option<&Path>,
) -> anyhow::Result<u8> {
    let grouper = grouper(groups, auto_group)?;
    let mut routes = stored_routes(store, run)?;
    if grouper.is_active() {
        routes = regroup(routes, &grouper);
    }
    if let Some(path) = dump_to {
        let n: u64 = routes.iter().map(|r| r.count).sum();
        let counts = keisoku_logs::stats::LineCounts {
            lines: n,
            parsed: n,
            ..Default::default()
        };
        std::fs::write(path, dump::to_json(&routes, &counts))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    render::sort_routes(&mut routes, view.sort, view.reverse);
    write_out(&render::render(&routes, None, view.format, &view.opts))?;
    Ok(OK)
}

/// Merges routes that `grouper` names alike (stored routes are in first-seen
/// order, so the merged rows keep alp's order-dependent minimum rule).
fn regroup(routes: Vec<RouteStats>, grouper: &Grouper) -> Vec<RouteStats> {
    let mut out: Vec<RouteStats> = Vec::new();
    let mut index: std::collections::HashMap<(String, String), usize> = Default::default();
    for mut r in routes {
        r.uri = grouper.route(&r.uri).into_owned();
        match index.get(&(r.method.clone(), r.uri.clone())) {
            Some(&i) => out[i].merge(&r),
            None => {
                index.insert((r.method.clone(), r.uri.clone()), out.len());
                out.push(r);
            }
        }
    }
    out
}

/// A stored run's access-log routes as `keisoku logs` computes them: the
/// exact columns from the stored rows (ms there, seconds here), the
/// latency histogram from the per-second histograms merged.
fn stored_routes(store: &keisoku_store::Store, run: &str) -> anyhow::Result<Vec<RouteStats>> {
    use keisoku_store::RouteSource;
    let damaged = |e: keisoku_store::StoreError| anyhow::anyhow!("run {run}: {e}");
    let rows = store.routes(run, RouteSource::AccessLog).map_err(damaged)?;
    let seconds = store
        .route_seconds(run, RouteSource::AccessLog)
        .map_err(damaged)?;
    if rows.is_empty() {
        return Err(bad_input(if seconds.is_empty() {
            format!("run {run} has no access-log data (record it with --access-log FILE)")
        } else {
            format!("run {run} has per-second access-log histograms but no route table: its recording was killed before it finished (`keisoku export {run}` has the histograms)")
        }));
    }
    let mut routes: Vec<RouteStats> = Vec::with_capacity(rows.len());
    let mut index: std::collections::HashMap<(&str, &str), usize> = Default::default();
    for row in &rows {
        let whole_ms = |v: f64| (v - v.round()).abs() < 1e-6;
        let mut r = RouteStats::new(row.method.clone(), row.uri.clone());
        r.count = row.count;
        r.status = [row.s1xx, row.s2xx, row.s3xx, row.s4xx, row.s5xx];
        r.time = keisoku_logs::summary::Summary {
            n: row.count,
            min: from_ms(row.min),
            saw_zero: false,
            max: from_ms(row.max),
            sum: from_ms(row.sum),
        };
        r.body = keisoku_logs::summary::Summary {
            n: row.count,
            min: row.min_body,
            saw_zero: false,
            max: row.max_body,
            sum: row.sum_body,
        };
        let sd = from_ms(row.stddev);
        r.moments = keisoku_logs::summary::Moments {
            n: row.count,
            mean: if row.count > 0 {
                r.time.sum / row.count as f64
            } else {
                0.0
            },
            m2: sd * sd * row.count as f64,
        };
        r.low = r.time.min;
        // The stored percentiles were snapped to whole milliseconds when
        // every response time was one (nginx); none is otherwise, bar chance.
        r.ms_grid = [row.min, row.max, row.p50, row.p90, row.p95, row.p99]
            .into_iter()
            .all(whole_ms);
        index.insert((row.method.as_str(), row.uri.as_str()), routes.len());
        routes.push(r);
    }
    for sec in &seconds {
        let Some(&i) = index.get(&(sec.method.as_str(), sec.route.as_str())) else {
            continue;
        };
        for v in sec.histogram.iter_recorded() {
            let n = u32::try_from(v.count_at_value()).unwrap_or(u32::MAX);
            let _ = routes[i].hist.record_n(v.value_iterated_to(), n);
        }
    }
    Ok(routes)
}

/// Seconds from a stored millisecond value: the double whose product by
/// 1000 is the stored value, when one is within a few units in the last
/// place of `ms / 1000` (almost always), so sums and averages print the
/// digits the log file gives even at a rounding tie.
fn from_ms(ms: f64) -> f64 {
    let guess = ms / 1000.0;
    if !(guess.is_finite() && guess > 0.0) || guess * 1000.0 == ms {
        return guess;
    }
    let bits = guess.to_bits();
    (1..=4u64)
        .flat_map(|k| [bits + k, bits.saturating_sub(k)])
        .map(f64::from_bits)
        .find(|y| y * 1000.0 == ms)
        .unwrap_or(guess)
}
