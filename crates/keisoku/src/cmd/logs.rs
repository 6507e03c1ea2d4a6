//! `keisoku logs`: alp-compatible access-log analysis per route, faster,
//! with timelines, the slowest requests and dump diffs.

use crate::exit::{bad_input, input_error, GATE_FAILED, OK};
use crate::shared::output;
use crate::shared::store::StoreArg;
use clap::Parser as _;
use keisoku_logs::{analyse, dump, format, stored, Cause, FieldNames, Format, RouteStats};
use keisoku_logs::{Options, Reporter, TimeUnit, ViewSpec, Warning};
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

const ABOUT: &str = "Analyse access logs per route (alp-compatible).";

const LONG_ABOUT: &str = "\
Analyse access logs per route: requests, status classes, response time
(min, max, sum, avg, percentiles, stddev) and body sizes. Command lines of
alp (v1.0.x) work with `alp` replaced by `keisoku logs`; the input is parsed
on all cores and may be gzip-compressed.

Every column is alp's to the printed digit, in alp's row order (ties
included): alp's running sums, exact percentiles and stddev from each
route's values (kept as distinct value -> count; a route with more than
20,000 distinct response times falls back to an HdrHistogram, within 0.1%),
and `%.3f` formatting.";

const AFTER: &str = "\
Examples:
  keisoku logs ltsv access.log -m '/users/[0-9]+,/items/.+' --sort sum -r
  keisoku logs ltsv access.log.gz --auto-group --timeline 1s
  keisoku logs json --file access.json --slow 20 -f 'Status >= 500'
  keisoku logs regexp access.log --dump before.json
  keisoku logs diff before.json after.json --sort sum -r
  keisoku logs last --sort p99 -r            # a run recorded with --access-log
  keisoku logs diff before-run after-run     # two stored runs, route by route
  keisoku logs access.log --sort sum -r      # the format recognised from its first lines
  keisoku logs caddy access.json             # a built-in format (keisoku logs combined --help)

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
    /// Accepted for alp compatibility and validated as alp does (Local, UTC
    /// or a zone name); times without a zone are read as UTC.
    #[arg(long, hide = true)]
    location: Option<String>,
    /// Accepted for alp compatibility (html pagination).
    #[arg(long, hide = true)]
    page: Option<usize>,
    #[command(flatten)]
    store: StoreArg,
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
    /// Percentile columns, comma-separated integers 0-100: alp's values
    /// exactly (within 0.1% for a route of more than 20,000 distinct times).
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
    /// Exit 3 if any route's p99 grew by more than this: a fraction (0.2) or a percentage (20%).
    #[arg(long = "fail-over", value_name = "FRACTION|N%", value_parser = growth)]
    fail_over: Option<f64>,
    /// With --fail-over: only routes with at least N requests in both
    /// inputs can trip it (a p99 of a handful of requests is noise).
    #[arg(
        long = "min-count",
        value_name = "N",
        default_value_t = 0,
        requires = "fail_over"
    )]
    min_count: u64,
    #[command(flatten)]
    store: StoreArg,
}

/// `--fail-over`: a fraction as before, or a percentage in the gate grammar.
fn growth(text: &str) -> Result<f64, String> {
    use keisoku_common::Quantity;
    match Quantity::parse(text) {
        Some(Quantity::Number(f)) if f >= 0.0 => Ok(f),
        Some(Quantity::Percent(p)) if p >= 0.0 => Ok(p / 100.0),
        _ => Err(format!(
            "{text:?}: expected a fraction such as 0.2 or a percentage such as 20%"
        )),
    }
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    match args.cmd {
        Sub::Ltsv { common, labels: l } => files(
            common,
            Format::Ltsv(FieldNames {
                uri: l.uri,
                method: l.method,
                time: l.time,
                response_time: l.apptime,
                request_time: l.reqtime,
                body_bytes: l.size,
                status: l.status,
            }),
        ),
        Sub::Json { common, keys: k } => files(
            common,
            Format::Json(FieldNames {
                uri: k.uri,
                method: k.method,
                time: k.time,
                response_time: k.response_time,
                request_time: k.request_time,
                body_bytes: k.body_bytes,
                status: k.status,
            }),
        ),
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
            if let Some(missing) = format.missing_groups() {
                return Err(bad_input(format!(
                    "--pattern has no named group {missing} (rename a group with --*-subexp; a log without response times reads with `keisoku logs combined` or `common`)"
                )));
            }
            files(common, format)
        }
        Sub::Diff(d) => diff(d),
        Sub::Stored(argv) if argv.first().is_some_and(|n| BuiltinArgs::names(n)) => {
            let name = argv.first().cloned().unwrap_or_default();
            let args = BuiltinArgs::parse_from(
                std::iter::once(format!("keisoku logs {name}")).chain(argv.iter().skip(1).cloned()),
            );
            let format = Format::named(&name, None).map_err(bad_input)?;
            files(args.common, format)
        }
        Sub::Stored(argv) if argv.first().is_some_and(|f| Path::new(f).is_file()) => {
            let args = StoredArgs::parse_from(
                std::iter::once("keisoku logs FILE".to_string())
                    .chain(argv.iter().skip(1).cloned()),
            );
            let mut common = args.common;
            common.files.insert(0, PathBuf::from(&argv[0]));
            detected(common)
        }
        Sub::Stored(argv) => {
            let args = StoredArgs::parse_from(
                std::iter::once("keisoku logs RUN".to_string()).chain(argv.iter().skip(1).cloned()),
            );
            let spec = argv.first().cloned().unwrap_or_default();
            stored_run(&spec, args.common)
        }
    }
}

/// A library failure as an exit status: the user's input 2, else 1.
fn fail(e: keisoku_logs::Error) -> anyhow::Error {
    match e.cause() {
        Cause::Input => input_error(e),
        Cause::Environment => anyhow::Error::new(e),
    }
}

fn view_spec(v: &ViewFlags) -> ViewSpec {
    ViewSpec {
        format: v.format.clone(),
        sort: v.sort.clone(),
        reverse: v.reverse,
        no_headers: v.noheaders,
        show_footers: v.show_footers,
        output: v.output.clone(),
        percentiles: v.percentiles.clone(),
        decode_uri: v.decode_uri,
        absent_times: false,
    }
}

/// The analysis options `c` asks for.
fn options(c: &Common) -> anyhow::Result<Options> {
    Ok(Options {
        files: c.file.iter().chain(&c.files).cloned().collect(),
        dump: c.dump.clone(),
        load: c.load.clone(),
        view: view_spec(&c.view),
        query_string: c.query_string,
        qs_ignore_values: c.qs_ignore_values,
        matching_groups: c.matching_groups.clone(),
        auto_group: c.auto_group,
        filters: c.filters.clone(),
        limit: c.limit,
        timeline: c.timeline.clone(),
        slow: c.slow,
        time_unit: TimeUnit::parse(&c.time_unit)
            .ok_or_else(|| bad_input(format!("--time-unit {:?}: use s, ms or us", c.time_unit)))?,
        strict: c.strict,
        threads: c.threads,
        pos: c.pos.clone(),
        nosave_pos: c.nosave_pos,
    })
}

/// Prints an analysis's text, or fails with its error.
fn print(text: keisoku_logs::error::Result<String>) -> anyhow::Result<u8> {
    output::print(&text.map_err(fail)?)?;
    Ok(OK)
}

/// Warnings on stderr, and a progress line while a big input is read.
struct Console {
    progress: bool,
}

impl Reporter for Console {
    fn reading(
        &self,
        input: &str,
        size: Option<u64>,
        read: Arc<AtomicU64>,
    ) -> Box<dyn std::any::Any> {
        Box::new(output::ByteMeter::start(
            input.to_string(),
            size,
            read,
            self.progress,
        ))
    }

    fn warning(&self, w: &Warning) {
        eprintln!("keisoku: warning: {w}");
    }
}

/// `keisoku logs FORMAT [FILE...]`, or `keisoku logs FORMAT RUN` when the
/// only FILE does not exist but names a stored run.
/// alp's `--location`: `Local`, `UTC` or an IANA zone name the system knows
/// (Go's `time.LoadLocation`); anything else is refused as alp refuses it.
fn check_location(loc: &str) -> anyhow::Result<()> {
    let known = matches!(loc, "" | "Local" | "UTC")
        || (!loc.starts_with('/')
            && !loc.split('/').any(|p| p == "..")
            && ["/usr/share/zoneinfo", "/usr/lib/zoneinfo", "/etc/zoneinfo"]
                .iter()
                .any(|d| Path::new(d).join(loc).is_file()));
    if known {
        Ok(())
    } else {
        Err(bad_input(format!(
            "--location {loc:?}: Invalid timezone abbreviation (use Local, UTC or a zone name such as Asia/Tokyo)"
        )))
    }
}

fn files(c: Common, format: Format) -> anyhow::Result<u8> {
    if let Some(loc) = &c.location {
        check_location(loc)?;
    }
    let opts = options(&c)?;
    let console = Console {
        progress: !c.no_progress,
    };
    if let ([only], None) = (opts.files.as_slice(), &opts.load) {
        if let Some(spec) = only
            .to_str()
            .filter(|_| !only.exists() && only != Path::new("-"))
        {
            if let Some((store, run)) = c.store.find(spec)? {
                return print(stored::analyse(&store, &run, &opts, Some(format), &console));
            }
        }
    }
    // Written as it is made: a table of a million routes is hundreds of MB.
    let mut stdout = std::io::stdout().lock();
    analyse::files_to(format, &opts, &console, &mut stdout).map_err(fail)??;
    Ok(OK)
}

/// A dump file, or a stored run's routes.
fn routes(p: &Path, store_arg: &StoreArg) -> anyhow::Result<Vec<RouteStats>> {
    if let Some(spec) = p.to_str().filter(|_| !p.exists()) {
        if let Some((store, run)) = store_arg.find(spec)? {
            return stored::routes(&store, &run, &Console { progress: false }).map_err(fail);
        }
    }
    dump::load(p).map_err(fail)
}

fn diff(d: DiffArgs) -> anyhow::Result<u8> {
    let view = view_spec(&d.view).parse().map_err(fail)?;
    let from = routes(&d.from, &d.store)?;
    let to = routes(&d.to, &d.store)?;
    let result = keisoku_logs::diff::diff(&from, to, &view, d.fail_over, d.min_count);
    output::print(&result.text)?;
    if let (Some(limit), true) = (d.fail_over, result.failed()) {
        eprintln!(
            "keisoku: regression: p99 grew more than {:.0}% on {} route(s):",
            limit * 100.0,
            result.regressions.len()
        );
        for w in &result.regressions {
            eprintln!("  {w}");
        }
        return Ok(GATE_FAILED);
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

fn stored_run(spec: &str, c: Common) -> anyhow::Result<u8> {
    let Some((store, run)) = c.store.find(spec)? else {
        return Err(bad_input(format!(
            "{spec}: not a file, a format ({}), a subcommand (diff) nor a run in {} (see `keisoku runs`)",
            Format::names().join(", "),
            c.store.path().display()
        )));
    };
    if let Some(f) = c.file.iter().chain(&c.files).next() {
        return Err(bad_input(format!(
            "{}: `keisoku logs RUN` reads the run's own lines; give a FILE to `keisoku logs ltsv|json|regexp` instead",
            f.display()
        )));
    }
    let console = Console {
        progress: !c.no_progress,
    };
    print(stored::analyse(&store, &run, &options(&c)?, None, &console))
}

const BUILTIN_ABOUT: &str = "\
Analyse an access log of a built-in format (the name before the files):
every flag of `keisoku logs ltsv` but the label flags. `common` and
`combined` log no response time: their time columns print `-`, and a time
sort, --slow, --timeline, --dump and -f on ResponseTime are refused.";

/// Flags of `keisoku logs FORMAT FILE...` for a built-in format.
#[derive(clap::Parser, Debug)]
#[command(about = BUILTIN_ABOUT, after_help = builtin_help())]
struct BuiltinArgs {
    #[command(flatten)]
    common: Common,
}

/// The built-in formats, one a line, from the library's list.
fn builtin_help() -> String {
    let mut s = String::from("Formats:\n");
    for k in keisoku_logs::builtin::Kind::ALL {
        s.push_str(&format!("  {:<11} {}\n", k.name(), k.about()));
    }
    s.push_str(
        "`keisoku logs FILE` (no format) recognises these and ltsv, json and regexp\nfrom the file's first lines.",
    );
    s
}

impl BuiltinArgs {
    /// Whether `name` is a built-in format's (a subcommand of its own).
    fn names(name: &str) -> bool {
        keisoku_logs::builtin::Kind::from_name(name).is_some()
    }
}

/// `keisoku logs FILE...`: the format recognised from the first file's
/// first lines, or exit 2 naming the formats tried (or the candidates).
fn detected(c: Common) -> anyhow::Result<u8> {
    let Some(first) = c.files.first() else {
        return Err(bad_input("no input: give a log FILE"));
    };
    let head = keisoku_logs::input::head_lines(first, 20).map_err(|e| {
        fail(keisoku_logs::Error::Io {
            action: "reading",
            path: first.display().to_string(),
            source: e,
        })
    })?;
    let lines: Vec<&[u8]> = head.iter().map(Vec::as_slice).collect();
    let format =
        format::detected(&lines).map_err(|why| bad_input(format!("{}: {why}", first.display())))?;
    files(c, format)
}
