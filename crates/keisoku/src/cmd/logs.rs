//! `keisoku logs`: alp-compatible access-log analysis per route, faster,
//! with timelines, the slowest requests and dump diffs.

use crate::exit::{bad_input, input_error, GATE_FAILED, OK};
use crate::shared::output;
use crate::shared::store::StoreArg;
use clap::Parser as _;
use keisoku_logs::alp_config::AlpConfig;
use keisoku_logs::{analyse, format, stored, Cause, FieldNames, Format, RouteStats};
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
    /// alp's YAML configuration file, given before the format as alp's
    /// global flag (`keisoku logs --config alp.yaml ltsv`); the same as
    /// `--config` after it.
    #[arg(long = "config", value_name = "FILE")]
    top_config: Option<PathBuf>,
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
        #[command(subcommand)]
        alp: Option<Box<AlpSub>>,
    },
    /// Analyse a JSON-lines log (keys: uri method time response_time request_time body_bytes status).
    #[command(long_about = LONG_ABOUT, after_help = AFTER)]
    Json {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        keys: JsonKeys,
        #[command(subcommand)]
        alp: Option<Box<AlpSub>>,
    },
    /// Analyse any line format with a regular expression with named groups
    /// (default: combined log format followed by response and request time).
    #[command(long_about = LONG_ABOUT, after_help = AFTER)]
    Regexp {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        subexp: RegexpNames,
        #[command(subcommand)]
        alp: Option<Box<AlpSub>>,
    },
    /// Analyse the HTTP/1.x exchanges in a packet capture (classic pcap from
    /// `tcpdump -w`, as alp's `pcap`): each response paired with its
    /// request, the response time from the capture times.
    #[command(long_about = LONG_ABOUT, after_help = PCAP_AFTER)]
    Pcap {
        #[command(flatten)]
        common: Common,
        #[command(flatten)]
        server: PcapFlags,
        #[command(subcommand)]
        alp: Option<Box<AlpSub>>,
    },
    /// Compare two dumps (from --dump) or stored runs route by route:
    /// `value (+change)`.
    Diff(DiffArgs),
    /// `keisoku logs RUN [flags]`: the route table of a stored run's access
    /// log (RUN: id, id prefix, name or `last`; see `keisoku logs RUN --help`).
    #[command(external_subcommand)]
    Stored(Vec<String>),
}

const PCAP_AFTER: &str = "\
Examples:
  tcpdump -i lo -w http.pcap 'tcp port 8080'
  keisoku logs pcap http.pcap --pcap-server-port 8080 -m '/users/[0-9]+'
  keisoku logs pcap topN 10 --file http.pcap --pcap-server-port 8080 -r

Reads Ethernet, Linux cooked (SLL, SLL2: tcpdump -i any), BSD loopback and
raw IP captures, IPv4 and IPv6, gzip-compressed or not; pcapng is refused
(convert with `tcpdump -r in.pcapng -w out.pcap`). A truncated capture or an
unknown link type exits 2 with the reason.";

/// alp's flags naming the HTTP server in a capture.
#[derive(clap::Args, Debug)]
struct PcapFlags {
    /// HTTP server IP address of the captured packets; repeatable or
    /// comma-separated (default 127.0.0.1, alp's first interface address).
    #[arg(long = "pcap-server-ip", value_name = "IP", global = true)]
    ips: Vec<String>,
    /// HTTP server TCP port of the captured packets (default 80).
    #[arg(long = "pcap-server-port", value_name = "PORT", global = true)]
    port: Option<u16>,
}

impl PcapFlags {
    /// The server, from the flags, else the config file's `pcap:` keys,
    /// else alp's defaults.
    fn server(&self, cfg: &AlpConfig) -> anyhow::Result<keisoku_logs::pcap::Server> {
        let mut server = keisoku_logs::pcap::Server::default();
        let file = cfg.pcap.clone().unwrap_or_default();
        let ips = if self.ips.is_empty() {
            file.server_ips.unwrap_or_default()
        } else {
            self.ips.clone()
        };
        if !ips.is_empty() {
            server.ips = keisoku_logs::pcap::Server::parse_ips(&ips)
                .map_err(|e| bad_input(format!("--pcap-server-ip: {e}")))?;
        }
        if let Some(port) = self.port.or(file.server_port) {
            server.port = port;
        }
        Ok(server)
    }
}

#[derive(clap::Args, Debug)]
struct Common {
    /// Log files (`-` or none: standard input). gzip is detected and decoded.
    #[arg(value_name = "FILE")]
    files: Vec<PathBuf>,
    /// The access log file (alp's flag; same as a positional FILE). Given
    /// more than once, the last one is read, as alp does (a warning names
    /// the others; give several logs as positional FILEs).
    #[arg(long, value_name = "FILE")]
    file: Vec<PathBuf>,
    /// alp's YAML configuration file: every key alp reads (file, sort,
    /// format, matching_groups, percentiles, ltsv:, json:, regexp: ...);
    /// flags given on the command line win over it.
    #[arg(long, value_name = "FILE", global = true)]
    config: Option<PathBuf>,
    /// Save the aggregated statistics (reload with --load, compare with
    /// `diff`): alp's YAML for a .yaml/.yml name, else keisoku's JSON.
    #[arg(long, value_name = "FILE")]
    dump: Option<PathBuf>,
    /// Print statistics saved by --dump (keisoku's JSON or alp's YAML)
    /// instead of reading a log; -m and --auto-group regroup them.
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
    /// Most distinct routes allowed (alp's --limit; default 5000); beyond
    /// it, group URIs.
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
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
    /// The zone `-f` reads a time without an offset in, in the log or in
    /// BetweenTime's bounds (as alp): Local (default), UTC or a zone name
    /// such as Asia/Tokyo.
    #[arg(long, value_name = "ZONE")]
    location: Option<String>,
    /// Accepted for alp compatibility (html pagination).
    #[arg(long, hide = true)]
    page: Option<usize>,
    #[command(flatten)]
    store: StoreArg,
}

#[derive(clap::Args, Debug)]
struct ViewFlags {
    /// table (the default), markdown (md), tsv, csv, json or html.
    #[arg(long)]
    format: Option<String>,
    /// count (the default), uri, method, max, min, avg, sum, stddev, pNN,
    /// max-body, min-body, avg-body, sum-body.
    #[arg(long)]
    sort: Option<String>,
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
    /// min_body,max_body,sum_body,avg_body), or all (the default).
    #[arg(short = 'o', long)]
    output: Option<String>,
    /// Percentile columns, comma-separated integers 0-100 (default
    /// 90,95,99): alp's values exactly (within 0.1% for a route of more
    /// than 20,000 distinct times).
    #[arg(long)]
    percentiles: Option<String>,
    /// Show URIs percent-decoded.
    #[arg(long = "decode-uri")]
    decode_uri: bool,
}

#[derive(clap::Args, Debug)]
struct LtsvLabels {
    /// Label of the request URI (default uri).
    #[arg(long = "uri-label", global = true)]
    uri: Option<String>,
    /// Label of the method (default method).
    #[arg(long = "method-label", global = true)]
    method: Option<String>,
    /// Label of the timestamp (default time).
    #[arg(long = "time-label", global = true)]
    time: Option<String>,
    /// Label of the upstream time (preferred when it is a number; default
    /// apptime).
    #[arg(long = "apptime-label", global = true)]
    apptime: Option<String>,
    /// Label of the request time (used when apptime is `-` or missing;
    /// default reqtime).
    #[arg(long = "reqtime-label", global = true)]
    reqtime: Option<String>,
    /// Label of the body size (default size).
    #[arg(long = "size-label", global = true)]
    size: Option<String>,
    /// Label of the status code (default status).
    #[arg(long = "status-label", global = true)]
    status: Option<String>,
}

#[derive(clap::Args, Debug)]
struct JsonKeys {
    /// Key of the request URI (default uri).
    #[arg(long = "uri-key", global = true)]
    uri: Option<String>,
    /// Key of the method (default method).
    #[arg(long = "method-key", global = true)]
    method: Option<String>,
    /// Key of the timestamp (default time).
    #[arg(long = "time-key", global = true)]
    time: Option<String>,
    /// Key of the response time (preferred when it is a number; default
    /// response_time).
    #[arg(
        long = "restime-key",
        visible_alias = "response-time-key",
        global = true
    )]
    response_time: Option<String>,
    /// Key of the request time (used when the response time is not a
    /// number; default request_time).
    #[arg(
        long = "reqtime-key",
        visible_alias = "request-time-key",
        global = true
    )]
    request_time: Option<String>,
    /// Key of the body size (default body_bytes).
    #[arg(long = "body-bytes-key", global = true)]
    body_bytes: Option<String>,
    /// Key of the status code (default status).
    #[arg(long = "status-key", global = true)]
    status: Option<String>,
}

#[derive(clap::Args, Debug)]
struct RegexpNames {
    /// The pattern; named groups hold the fields (default: combined log
    /// format followed by response and request time).
    #[arg(long, global = true)]
    pattern: Option<String>,
    /// Group of the request URI (default uri).
    #[arg(long = "uri-subexp", global = true)]
    uri: Option<String>,
    /// Group of the method (default method).
    #[arg(long = "method-subexp", global = true)]
    method: Option<String>,
    /// Group of the timestamp (default time).
    #[arg(long = "time-subexp", global = true)]
    time: Option<String>,
    /// Group of the response time (preferred when it is a number; default
    /// response_time).
    #[arg(
        long = "restime-subexp",
        visible_alias = "response-time-subexp",
        global = true
    )]
    response_time: Option<String>,
    /// Group of the request time (default request_time).
    #[arg(
        long = "reqtime-subexp",
        visible_alias = "request-time-subexp",
        global = true
    )]
    request_time: Option<String>,
    /// Group of the body size (default body_bytes).
    #[arg(long = "body-bytes-subexp", global = true)]
    body_bytes: Option<String>,
    /// Group of the status code (default status).
    #[arg(long = "status-subexp", global = true)]
    status: Option<String>,
}

/// alp's subcommands of a format (`alp ltsv count`, `alp ltsv topN`).
#[derive(clap::Subcommand, Debug)]
enum AlpSub {
    /// Count requests by the values of any fields of the line (alp's
    /// `count --keys`), fewest first (-r: most first).
    Count(CountArgs),
    /// The first N requests (default 50) by response time or body size,
    /// shortest first (-r: longest first), with the query string (alp's
    /// `topN`).
    #[command(name = "topN", visible_alias = "topn")]
    TopN(TopNArgs),
    /// alp's diff of two logs: FROM and TO analysed alike (or --load FROM
    /// and one log, TO), TO's routes with their change from FROM.
    Diff(LogDiffArgs),
}

#[derive(clap::Args, Debug)]
struct LogDiffArgs {
    /// FROM and TO logs, or only TO with --load FROM.
    #[arg(value_name = "LOG", num_args = 1..=2, required = true)]
    logs: Vec<PathBuf>,
    /// A saved dump (keisoku's JSON or alp's YAML) as FROM.
    #[arg(long, value_name = "FILE")]
    load: Option<PathBuf>,
    /// Save TO's statistics (alp's YAML for a .yaml/.yml name, else JSON).
    #[arg(long, value_name = "FILE")]
    dump: Option<PathBuf>,
    #[command(flatten)]
    view: ViewFlags,
    /// Include the query string in the route.
    #[arg(short = 'q', long = "query-string")]
    query_string: bool,
    /// With -q: keep parameter names only.
    #[arg(long = "qs-ignore-values")]
    qs_ignore_values: bool,
    /// Group URIs by regular expressions, comma-separated.
    #[arg(short = 'm', long = "matching-groups", value_name = "REGEX,REGEX")]
    matching_groups: Option<String>,
    /// Only count requests matching an expression.
    #[arg(short = 'f', long, value_name = "EXPR")]
    filters: Option<String>,
    /// Most distinct routes allowed (default 5000).
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// The zone `-f` reads a time without an offset in (as `logs ltsv
    /// --location`).
    #[arg(long, value_name = "ZONE")]
    location: Option<String>,
    /// Accepted for alp compatibility (html pagination).
    #[arg(long, hide = true)]
    page: Option<usize>,
    /// Position file, as alp's diff uses it: FROM is read from the stored
    /// offset and its end stored, then TO is read from that end and its end
    /// stored (plain files only).
    #[arg(long = "pos", value_name = "FILE")]
    pos: Option<PathBuf>,
    /// With --pos: FROM and TO are both read from the stored offset, which
    /// is left as it was.
    #[arg(long = "nosave-pos")]
    nosave_pos: bool,
}

#[derive(clap::Args, Debug)]
struct CountArgs {
    /// Field names to count by, comma-separated (e.g. method,status).
    #[arg(long, value_name = "KEY,KEY")]
    keys: Option<String>,
    #[command(flatten)]
    input: AlpSubInput,
}

#[derive(clap::Args, Debug)]
struct TopNArgs {
    /// How many requests to show.
    #[arg(value_name = "N")]
    n: Option<usize>,
    /// restime (the default) or bytes.
    #[arg(long)]
    sort: Option<String>,
    /// Show URIs percent-decoded.
    #[arg(long = "decode-uri")]
    decode_uri: bool,
    /// Only requests matching an expression (as `logs ltsv -f`).
    #[arg(short = 'f', long, value_name = "EXPR")]
    filters: Option<String>,
    /// The zone `-f` reads a time without an offset in (as `logs ltsv
    /// --location`).
    #[arg(long, value_name = "ZONE")]
    location: Option<String>,
    /// Position file: start reading at the byte offset stored there and
    /// store the new end (alp's --pos; a plain file, not standard input).
    #[arg(long = "pos", value_name = "FILE")]
    pos: Option<PathBuf>,
    /// With --pos: read from the stored position but do not update it.
    #[arg(long = "nosave-pos")]
    nosave_pos: bool,
    #[command(flatten)]
    input: AlpSubInput,
}

/// Flags `count` and `topN` share with alp.
#[derive(clap::Args, Debug)]
struct AlpSubInput {
    /// The access log file (gzip is detected); none: standard input. Given
    /// more than once, the last one is read, as alp does.
    #[arg(long, value_name = "FILE")]
    file: Vec<PathBuf>,
    /// table (the default), markdown (md), tsv, csv or json.
    #[arg(long)]
    format: Option<String>,
    /// Reverse the order (most, longest or largest first).
    #[arg(short = 'r', long)]
    reverse: bool,
    /// No header line (tsv, csv).
    #[arg(long)]
    noheaders: bool,
    /// Accepted for alp compatibility (html pagination).
    #[arg(long, hide = true)]
    page: Option<usize>,
}

#[derive(clap::Args, Debug)]
struct DiffArgs {
    /// The earlier dump, or a stored run (id, prefix, name, `last`).
    from: PathBuf,
    /// The later dump, or a stored run.
    to: PathBuf,
    #[command(flatten)]
    view: ViewFlags,
    /// alp's YAML configuration file (its display keys: format, sort,
    /// reverse, output, percentiles ...); flags win over it.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
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
    ignored: DiffIgnored,
    #[command(flatten)]
    store: StoreArg,
}

/// Flags alp's `diff DUMP DUMP` accepts and ignores (a dump is already
/// grouped and filtered): accepted so alp's command lines run, with a
/// warning that they change nothing.
#[derive(clap::Args, Debug)]
struct DiffIgnored {
    #[arg(short = 'q', long = "query-string", hide = true)]
    query_string: bool,
    #[arg(long = "qs-ignore-values", hide = true)]
    qs_ignore_values: bool,
    #[arg(short = 'm', long = "matching-groups", hide = true)]
    matching_groups: Option<String>,
    #[arg(short = 'f', long, hide = true)]
    filters: Option<String>,
    #[arg(long, hide = true)]
    limit: Option<usize>,
    #[arg(long, hide = true)]
    location: Option<String>,
    #[arg(long, hide = true)]
    page: Option<usize>,
}

impl DiffIgnored {
    /// The flags given that change nothing on two dumps.
    fn given(&self) -> Vec<&'static str> {
        [
            ("-q", self.query_string),
            ("--qs-ignore-values", self.qs_ignore_values),
            ("-m", self.matching_groups.is_some()),
            ("-f", self.filters.is_some()),
            ("--limit", self.limit.is_some()),
        ]
        .into_iter()
        .filter_map(|(f, given)| given.then_some(f))
        .collect()
    }
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
    let top_config = args.top_config;
    // alp's global --config before the format; one after it wins.
    let with_config = |mut c: Common| {
        if c.config.is_none() {
            c.config.clone_from(&top_config);
        }
        c
    };
    match args.cmd {
        Sub::Ltsv {
            common,
            labels: l,
            alp,
        } => {
            let mut common = with_config(common);
            let cfg = config(&mut common)?;
            let c = cfg.ltsv.clone().unwrap_or_default();
            let names = FieldNames {
                uri: pick(l.uri, c.uri_label, "uri"),
                method: pick(l.method, c.method_label, "method"),
                time: pick(l.time, c.time_label, "time"),
                response_time: pick(l.apptime, c.apptime_label, "apptime"),
                request_time: pick(l.reqtime, c.reqtime_label, "reqtime"),
                body_bytes: pick(l.size, c.size_label, "size"),
                status: pick(l.status, c.status_label, "status"),
            };
            let format = Format::Ltsv(names);
            match alp {
                Some(sub) => alp_sub(*sub, format, &cfg, None),
                None => files(common, format),
            }
        }
        Sub::Json {
            common,
            keys: k,
            alp,
        } => {
            let mut common = with_config(common);
            let cfg = config(&mut common)?;
            let c = cfg.json.clone().unwrap_or_default();
            let names = FieldNames {
                uri: pick(k.uri, c.uri_key, "uri"),
                method: pick(k.method, c.method_key, "method"),
                time: pick(k.time, c.time_key, "time"),
                response_time: pick(k.response_time, c.response_time_key, "response_time"),
                request_time: pick(k.request_time, c.request_time_key, "request_time"),
                body_bytes: pick(k.body_bytes, c.body_bytes_key, "body_bytes"),
                status: pick(k.status, c.status_key, "status"),
            };
            let format = Format::Json(names);
            match alp {
                Some(sub) => alp_sub(*sub, format, &cfg, None),
                None => files(common, format),
            }
        }
        Sub::Regexp {
            common,
            subexp: s,
            alp,
        } => {
            let mut common = with_config(common);
            let cfg = config(&mut common)?;
            let c = cfg.regexp.clone().unwrap_or_default();
            let names = FieldNames {
                uri: pick(s.uri, c.uri_subexp, "uri"),
                method: pick(s.method, c.method_subexp, "method"),
                time: pick(s.time, c.time_subexp, "time"),
                response_time: pick(s.response_time, c.response_time_subexp, "response_time"),
                request_time: pick(s.request_time, c.request_time_subexp, "request_time"),
                body_bytes: pick(s.body_bytes, c.body_bytes_subexp, "body_bytes"),
                status: pick(s.status, c.status_subexp, "status"),
            };
            let pattern = pick(s.pattern, c.pattern, format::DEFAULT_PATTERN);
            let format = Format::regexp(&pattern, names)
                .map_err(|e| bad_input(format!("--pattern: {}", format::regex_message(&e))))?;
            if let Some(missing) = format.missing_groups() {
                return Err(bad_input(format!(
                    "--pattern has no named group {missing} (rename a group with --*-subexp; a log without response times reads with `keisoku logs combined` or `common`)"
                )));
            }
            match alp {
                Some(sub) => alp_sub(*sub, format, &cfg, None),
                None => files(common, format),
            }
        }
        Sub::Pcap {
            common,
            server,
            alp,
        } => {
            let mut common = with_config(common);
            let cfg = config(&mut common)?;
            let server = server.server(&cfg)?;
            let format = Format::Ltsv(FieldNames::ltsv());
            match alp {
                Some(sub) => alp_sub(*sub, format, &cfg, Some(&server)),
                None => pcap_files(common, format, server),
            }
        }
        Sub::Diff(mut d) => {
            if d.config.is_none() {
                d.config = top_config;
            }
            diff(d)
        }
        Sub::Stored(argv) if argv.first().is_some_and(|n| BuiltinArgs::names(n)) => {
            let name = argv.first().cloned().unwrap_or_default();
            let args = BuiltinArgs::parse_from(
                std::iter::once(format!("keisoku logs {name}")).chain(argv.iter().skip(1).cloned()),
            );
            let format = Format::named(&name, None).map_err(bad_input)?;
            let mut common = with_config(args.common);
            config(&mut common)?;
            files(common, format)
        }
        Sub::Stored(argv)
            if argv
                .first()
                .is_some_and(|f| f == "-" || Path::new(f).is_file()) =>
        {
            let args = StoredArgs::parse_from(
                std::iter::once("keisoku logs FILE".to_string())
                    .chain(argv.iter().skip(1).cloned()),
            );
            let mut common = with_config(args.common);
            common.files.insert(0, PathBuf::from(&argv[0]));
            config(&mut common)?;
            detected(common)
        }
        Sub::Stored(argv) => {
            let args = StoredArgs::parse_from(
                std::iter::once("keisoku logs RUN".to_string()).chain(argv.iter().skip(1).cloned()),
            );
            let spec = argv.first().cloned().unwrap_or_default();
            stored_run(&spec, with_config(args.common))
        }
    }
}

/// What `count` or `topN` is asked, apart from its input.
enum Job {
    Count(Option<String>),
    TopN {
        n: Option<usize>,
        sort: Option<String>,
        decode_uri: bool,
        filters: Option<String>,
        location: Option<String>,
    },
}

/// alp's `--pos` for `topN`: where `file` was last read to, and where to
/// store its end.
struct Position {
    file: PathBuf,
    start: u64,
    end: u64,
    save: Option<PathBuf>,
}

impl Position {
    /// Reads the offset in `pos` (0 when the file is missing or empty; a
    /// log shorter than it was rotated and starts over).
    fn open(log: Option<&Path>, pos: &Path, nosave: bool) -> anyhow::Result<Position> {
        let Some(log) = log.filter(|p| *p != Path::new("-")) else {
            return Err(bad_input(
                "--pos needs a log file (--file), not standard input",
            ));
        };
        let text = match std::fs::read_to_string(pos) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(e) => return Err(bad_input(format!("{}: {e}", pos.display()))),
        };
        let start: u64 = match text.trim() {
            "" => 0,
            t => t.parse().map_err(|_| {
                bad_input(format!(
                    "{}: not a position file (expected a byte offset, found {t:?})",
                    pos.display()
                ))
            })?,
        };
        let end = std::fs::metadata(log)
            .map_err(|e| bad_input(format!("{}: {e}", log.display())))?
            .len();
        Ok(Position {
            file: log.to_path_buf(),
            start: if start > end { 0 } else { start },
            end,
            save: (!nosave).then(|| pos.to_path_buf()),
        })
    }

    /// The log from the stored offset to the end it had when opened.
    fn reader(&self) -> anyhow::Result<Box<dyn std::io::BufRead>> {
        use std::io::{Read as _, Seek as _};
        let mut f = std::fs::File::open(&self.file)
            .map_err(|e| bad_input(format!("{}: {e}", self.file.display())))?;
        f.seek(std::io::SeekFrom::Start(self.start))?;
        Ok(Box::new(std::io::BufReader::new(
            f.take(self.end - self.start),
        )))
    }

    fn save(&self) -> anyhow::Result<()> {
        if let Some(p) = &self.save {
            std::fs::write(p, self.end.to_string())
                .map_err(|e| anyhow::anyhow!("writing {}: {e}", p.display()))?;
        }
        Ok(())
    }
}

/// `count` and `topN` on one log (the last --file, or standard input).
fn alp_sub(
    sub: AlpSub,
    format: Format,
    parent: &AlpConfig,
    pcap: Option<&keisoku_logs::pcap::Server>,
) -> anyhow::Result<u8> {
    use keisoku_logs::count;
    use keisoku_logs::render::OutputFormat;
    let mut pos: Option<(PathBuf, bool)> = None;
    let (input, job) = match sub {
        AlpSub::Count(_) if pcap.is_some() => {
            return Err(bad_input(
                "pcap has no count subcommand (alp's pcap has topN and diff)",
            ))
        }
        AlpSub::Count(c) => (c.input, Job::Count(c.keys)),
        AlpSub::TopN(t) => (
            {
                pos = t
                    .pos
                    .or_else(|| parent.pos_file.as_ref().map(PathBuf::from))
                    .map(|p| (p, t.nosave_pos || parent.nosave_pos.unwrap_or(false)));
                t.input
            },
            Job::TopN {
                n: t.n,
                sort: t.sort,
                decode_uri: t.decode_uri,
                filters: t.filters,
                location: t.location,
            },
        ),
        AlpSub::Diff(d) => return log_diff(d, format, parent, pcap),
    };
    let cfg = parent;
    let file = input
        .file
        .last()
        .cloned()
        .or_else(|| cfg.file.as_ref().map(PathBuf::from));
    let fmt_name = pick(input.format.clone(), cfg.format.clone(), "table");
    let out_format = OutputFormat::parse(&fmt_name).ok_or_else(|| {
        bad_input(format!(
            "--format {fmt_name:?}: use table, markdown, tsv, csv or json"
        ))
    })?;
    let no_headers = input.noheaders || cfg.noheaders.unwrap_or(false);
    if pcap.is_some() && pos.is_some() {
        return Err(pcap_pos());
    }
    let position = match &pos {
        Some((p, nosave)) => Some(Position::open(file.as_deref(), p, *nosave)?),
        None => None,
    };
    let shown = file
        .as_deref()
        .filter(|p| *p != Path::new("-"))
        .map_or("<stdin>".to_string(), |p| p.display().to_string());
    // The reading error names the file, not "the log".
    let named = |e: keisoku_logs::Error| match e {
        keisoku_logs::Error::Io { action, source, .. } => fail(keisoku_logs::Error::Io {
            action,
            path: shown.clone(),
            source,
        }),
        other => fail(other),
    };
    let reader: Box<dyn std::io::BufRead> = if let Some(p) = &position {
        p.reader()?
    } else {
        let path = file.as_deref().filter(|p| *p != Path::new("-"));
        if path.is_none() && std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            return Err(bad_input(
                "no input: give the log with --file, or pipe it into standard input",
            ));
        }
        let name = path.map_or("<stdin>".to_string(), |p| p.display().to_string());
        let opened = keisoku_logs::input::open_as(path, Arc::new(AtomicU64::new(0)), pcap)
            .map_err(|e| bad_input(format!("{name}: {e}")))?;
        Box::new(std::io::BufReader::new(opened.reader))
    };
    let text = match job {
        Job::Count(keys) => {
            let keys: Vec<String> = keys
                .map(|k| {
                    k.split(',')
                        .map(|s| s.trim().to_string())
                        .filter(|s| !s.is_empty())
                        .collect()
                })
                .or_else(|| cfg.count.as_ref().and_then(|c| c.keys.clone()))
                .unwrap_or_default();
            let reverse = input.reverse || cfg.reverse.unwrap_or(false);
            let groups = count::count(format, reader, &keys, reverse).map_err(named)?;
            count::render_count(&groups, &keys, out_format, no_headers).map_err(fail)?
        }
        Job::TopN {
            n,
            sort,
            decode_uri,
            filters,
            location,
        } => {
            if let Some(loc) = location.as_ref().or(cfg.location.as_ref()) {
                check_location(loc)?;
            }
            let top_cfg = cfg.top_n.clone().unwrap_or_default();
            let sort = pick(sort, top_cfg.sort, "restime");
            let sort = count::TopSort::parse(&sort).map_err(fail)?;
            let reverse = input.reverse || top_cfg.reverse.unwrap_or(false);
            let filter = match filters.or(cfg.filters.clone()) {
                Some(f) => {
                    let loc = location.or(cfg.location.clone());
                    Some(
                        keisoku_logs::filter::Filter::new(&f)
                            .map_err(|e| bad_input(format!("-f: {e}")))?
                            .in_zone(zone_of(loc.as_deref())?),
                    )
                }
                None => None,
            };
            let top = count::top_n(
                format,
                reader,
                filter.as_ref(),
                sort,
                reverse,
                n.unwrap_or(50),
            )
            .map_err(named)?;
            let decode = decode_uri || cfg.decode_uri.unwrap_or(false);
            count::render_top(&top, out_format, no_headers, decode).map_err(fail)?
        }
    };
    if let Some(p) = &position {
        p.save()?;
    }
    output::print(&text)?;
    Ok(OK)
}

/// `FORMAT diff --dump`: TO's routes saved, every counted line parsed.
fn dump_routes(path: &Path, to: &[keisoku_logs::RouteStats]) -> anyhow::Result<()> {
    let n: u64 = to.iter().map(|r| r.count).sum();
    let counts = keisoku_logs::LineCounts {
        lines: n,
        parsed: n,
        ..Default::default()
    };
    keisoku_logs::load::write_dump(path, to, &counts).map_err(fail)
}

/// alp's `FORMAT diff [FROM] TO`: both logs analysed with the same flags.
fn log_diff(
    mut d: LogDiffArgs,
    format: Format,
    cfg: &AlpConfig,
    pcap: Option<&keisoku_logs::pcap::Server>,
) -> anyhow::Result<u8> {
    config_view(&mut d.view, cfg);
    if let Some(loc) = d.location.as_ref().or(cfg.location.as_ref()) {
        check_location(loc)?;
    }
    let opts = Options {
        view: view_spec(&d.view),
        query_string: d.query_string || cfg.query_string.unwrap_or(false),
        qs_ignore_values: d.qs_ignore_values || cfg.query_string_ignore_values.unwrap_or(false),
        matching_groups: d.matching_groups.clone().or(cfg.matching_groups_flag()),
        filters: d.filters.clone().or(cfg.filters.clone()),
        location: d.location.clone().or(cfg.location.clone()),
        limit: d.limit.or(cfg.limit).unwrap_or(Options::default().limit),
        // alp's YAML dump keeps the response times: the analysis must too.
        dump: d.dump.clone(),
        pcap: pcap.cloned(),
        ..Options::default()
    };
    let view = opts.view.parse().map_err(fail)?;
    let pos = d
        .pos
        .clone()
        .or_else(|| cfg.pos_file.as_ref().map(PathBuf::from));
    if let Some(pos) = &pos {
        if pcap.is_some() {
            return Err(pcap_pos());
        }
        let nosave = d.nosave_pos || cfg.nosave_pos.unwrap_or(false);
        return diff_from_pos(&d, format, &opts, &view, pos, nosave);
    }
    let (from, to) = match (&d.load, d.logs.as_slice()) {
        (Some(dump), [to]) => (
            keisoku_logs::alp_dump::load(dump).map_err(fail)?,
            to.clone(),
        ),
        (None, [from, to]) => (
            keisoku_logs::load::routes_of_log(format.clone(), &opts, from).map_err(fail)?,
            to.clone(),
        ),
        (Some(_), _) => return Err(bad_input("diff --load FROM takes one log, TO")),
        (None, _) => {
            return Err(bad_input(
                "diff takes two logs, FROM and TO (or --load FROM and TO)",
            ))
        }
    };
    let to = keisoku_logs::load::routes_of_log(format, &opts, &to).map_err(fail)?;
    if let Some(path) = &d.dump {
        dump_routes(path, &to)?;
    }
    let text = if d.load.is_some() {
        // alp prints TO unsorted (first-seen order) when FROM is loaded:
        // its profile of TO skips the sort under --load.
        keisoku_logs::render::render(&to, Some(&from), view.format, &view.opts)
    } else {
        keisoku_logs::diff::diff(&from, to, &view, None, 0).text
    };
    output::print(&text)?;
    Ok(OK)
}

/// alp's `FORMAT diff --pos P [FROM] TO`: FROM (unless loaded from a dump,
/// which ignores the position) is read from the offset in P and its end
/// saved to P; TO is then read from the offset P holds (FROM's end, or the
/// original one with --nosave-pos) and its end saved.
fn diff_from_pos(
    d: &LogDiffArgs,
    format: Format,
    opts: &Options,
    view: &keisoku_logs::options::View,
    pos: &Path,
    nosave: bool,
) -> anyhow::Result<u8> {
    use keisoku_logs::load::routes_of_log_from;
    let mut start = read_position(pos)?;
    let save = |end: u64| -> anyhow::Result<()> {
        if !nosave {
            std::fs::write(pos, end.to_string())
                .map_err(|e| anyhow::anyhow!("writing {}: {e}", pos.display()))?;
        }
        Ok(())
    };
    let (from, to) = match (&d.load, d.logs.as_slice()) {
        (Some(dump), [to]) => (
            keisoku_logs::alp_dump::load(dump).map_err(fail)?,
            to.clone(),
        ),
        (None, [from, to]) => {
            let (routes, end) =
                routes_of_log_from(format.clone(), opts, from, start).map_err(fail)?;
            save(end)?;
            if !nosave {
                start = end;
            }
            (routes, to.clone())
        }
        (Some(_), _) => return Err(bad_input("diff --load FROM takes one log, TO")),
        (None, _) => {
            return Err(bad_input(
                "diff takes two logs, FROM and TO (or --load FROM and TO)",
            ))
        }
    };
    let (to, end) = routes_of_log_from(format, opts, &to, start).map_err(fail)?;
    save(end)?;
    if let Some(path) = &d.dump {
        dump_routes(path, &to)?;
    }
    let text = if d.load.is_some() {
        keisoku_logs::render::render(&to, Some(&from), view.format, &view.opts)
    } else {
        keisoku_logs::diff::diff(&from, to, view, None, 0).text
    };
    output::print(&text)?;
    Ok(OK)
}

/// The offset a position file holds (0 when it is missing or empty).
fn read_position(pos: &Path) -> anyhow::Result<u64> {
    let text = match std::fs::read_to_string(pos) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            // alp opens it with O_CREATE, --nosave-pos or not.
            std::fs::write(pos, "")
                .map_err(|e| anyhow::anyhow!("creating {}: {e}", pos.display()))?;
            String::new()
        }
        Err(e) => return Err(bad_input(format!("{}: {e}", pos.display()))),
    };
    match text.trim() {
        "" => Ok(0),
        t => t.parse().map_err(|_| {
            bad_input(format!(
                "{}: not a position file (expected a byte offset, found {t:?})",
                pos.display()
            ))
        }),
    }
}

/// A flag's value, else the config file's, else alp's default.
fn pick(flag: Option<String>, file: Option<String>, default: &str) -> String {
    flag.or(file).unwrap_or_else(|| default.to_string())
}

/// Reads `--config` and fills in what the command line left unset (flags
/// win over the file, as in alp); returns the file's settings for the
/// format's own section.
fn config(c: &mut Common) -> anyhow::Result<AlpConfig> {
    let Some(path) = &c.config else {
        return Ok(AlpConfig::default());
    };
    let cfg = AlpConfig::load(path).map_err(fail)?;
    fn fill<T: Clone>(flag: &mut Option<T>, file: Option<T>) {
        if flag.is_none() {
            *flag = file;
        }
    }
    if c.file.is_empty() && c.files.is_empty() {
        c.file.extend(cfg.file.as_ref().map(PathBuf::from));
    }
    fill(&mut c.dump, cfg.dump.as_ref().map(PathBuf::from));
    fill(&mut c.load, cfg.load.as_ref().map(PathBuf::from));
    fill(&mut c.pos, cfg.pos_file.as_ref().map(PathBuf::from));
    c.nosave_pos |= cfg.nosave_pos.unwrap_or(false);
    c.query_string |= cfg.query_string.unwrap_or(false);
    c.qs_ignore_values |= cfg.query_string_ignore_values.unwrap_or(false);
    fill(&mut c.matching_groups, cfg.matching_groups_flag());
    fill(&mut c.filters, cfg.filters.clone());
    fill(&mut c.limit, cfg.limit);
    fill(&mut c.location, cfg.location.clone());
    fill(&mut c.page, cfg.pagination_limit);
    config_view(&mut c.view, &cfg);
    Ok(cfg)
}

/// The display settings of alp's config file under the flags given.
fn config_view(v: &mut ViewFlags, cfg: &AlpConfig) {
    if v.format.is_none() {
        v.format = cfg.format.clone();
    }
    if v.sort.is_none() {
        v.sort = cfg.sort.clone();
    }
    if v.output.is_none() {
        v.output = cfg.output.clone();
    }
    if v.percentiles.is_none() {
        v.percentiles = cfg.percentiles_flag();
    }
    v.reverse |= cfg.reverse.unwrap_or(false);
    v.noheaders |= cfg.noheaders.unwrap_or(false);
    v.show_footers |= cfg.show_footers.unwrap_or(false);
    v.decode_uri |= cfg.decode_uri.unwrap_or(false);
}

/// A library failure as an exit status: the user's input 2, else 1.
fn fail(e: keisoku_logs::Error) -> anyhow::Error {
    match e.cause() {
        Cause::Input => input_error(e),
        Cause::Environment => anyhow::Error::new(e),
    }
}

fn view_spec(v: &ViewFlags) -> ViewSpec {
    let d = ViewSpec::default();
    ViewSpec {
        format: v.format.clone().unwrap_or(d.format),
        sort: v.sort.clone().unwrap_or(d.sort),
        reverse: v.reverse,
        no_headers: v.noheaders,
        show_footers: v.show_footers,
        output: v.output.clone().unwrap_or(d.output),
        percentiles: v.percentiles.clone().unwrap_or(d.percentiles),
        decode_uri: v.decode_uri,
        absent_times: false,
    }
}

/// The analysis options `c` asks for.
fn options(c: &Common) -> anyhow::Result<Options> {
    Ok(Options {
        // alp reads the last --file given.
        files: c.file.last().into_iter().chain(&c.files).cloned().collect(),
        dump: c.dump.clone(),
        load: c.load.clone(),
        view: view_spec(&c.view),
        query_string: c.query_string,
        qs_ignore_values: c.qs_ignore_values,
        matching_groups: c.matching_groups.clone(),
        auto_group: c.auto_group,
        filters: c.filters.clone(),
        location: c.location.clone(),
        limit: c.limit.unwrap_or(Options::default().limit),
        timeline: c.timeline.clone(),
        slow: c.slow,
        time_unit: TimeUnit::parse(&c.time_unit)
            .ok_or_else(|| bad_input(format!("--time-unit {:?}: use s, ms or us", c.time_unit)))?,
        strict: c.strict,
        threads: c.threads,
        pos: c.pos.clone(),
        nosave_pos: c.nosave_pos,
        pcap: None,
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

/// The zone `-f` reads times without an offset in: `--location`, alp's
/// `Local` when not given.
fn zone_of(loc: Option<&str>) -> anyhow::Result<keisoku_logs::timestamp::Zone> {
    let loc = loc.unwrap_or("Local");
    check_location(loc)?;
    keisoku_logs::timestamp::location(loc)
        .ok_or_else(|| bad_input(format!("--location {loc:?}: the zone cannot be read")))
}

fn files(c: Common, format: Format) -> anyhow::Result<u8> {
    if let Some(loc) = &c.location {
        check_location(loc)?;
    }
    if let [earlier @ .., last] = c.file.as_slice() {
        if !earlier.is_empty() {
            let names: Vec<String> = earlier.iter().map(|p| p.display().to_string()).collect();
            eprintln!(
                "keisoku: warning: --file given {} times: reading only the last, {}, as alp does (not {}); give several logs as FILE arguments to read them all",
                c.file.len(),
                last.display(),
                names.join(", ")
            );
        }
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

/// `--pos` on a capture: alp's pcap reader cannot seek ("not supported").
fn pcap_pos() -> anyhow::Error {
    bad_input("--pos: a packet capture has no position to resume from (alp's pcap refuses it too: \"not supported\")")
}

/// `keisoku logs pcap CAPTURE...`: the captures' exchanges as LTSV lines
/// through the log analysis.
fn pcap_files(c: Common, format: Format, server: keisoku_logs::pcap::Server) -> anyhow::Result<u8> {
    if let Some(loc) = &c.location {
        check_location(loc)?;
    }
    if c.pos.is_some() {
        return Err(pcap_pos());
    }
    let mut opts = options(&c)?;
    opts.pcap = Some(server);
    let console = Console {
        progress: !c.no_progress,
    };
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
    keisoku_logs::alp_dump::load(p).map_err(fail)
}

fn diff(mut d: DiffArgs) -> anyhow::Result<u8> {
    if let Some(loc) = &d.ignored.location {
        check_location(loc)?;
    }
    let ignored = d.ignored.given();
    if !ignored.is_empty() {
        eprintln!(
            "keisoku: warning: {} change(s) nothing in `diff` of two dumps (as in alp): give them when the dumps are made, or regroup one with `keisoku logs FORMAT --load DUMP -m ...`",
            ignored.join(", ")
        );
    }
    if let Some(path) = &d.config {
        config_view(&mut d.view, &AlpConfig::load(path).map_err(fail)?);
    }
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

fn stored_run(spec: &str, mut c: Common) -> anyhow::Result<u8> {
    let named_a_file = !c.file.is_empty() || !c.files.is_empty();
    config(&mut c)?;
    if !named_a_file {
        // A config's `file:` is for `logs FORMAT`; the run is the input here.
        c.file.clear();
    }
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
    let reading = |e: std::io::Error| {
        fail(keisoku_logs::Error::Io {
            action: "reading",
            path: first.display().to_string(),
            source: e,
        })
    };
    let head = if first == Path::new("-") {
        stdin_head().map_err(reading)?
    } else {
        keisoku_logs::input::head_lines(first, 20).map_err(reading)?
    };
    if head.is_empty() && first == Path::new("-") {
        return Err(bad_input(
            "-: no whole line on standard input to recognise the format from (compressed, or a first line over 8 KiB); name it: keisoku logs ltsv|json|regexp|combined|... -",
        ));
    }
    let lines: Vec<&[u8]> = head.iter().map(Vec::as_slice).collect();
    let format =
        format::detected(&lines).map_err(|why| bad_input(format!("{}: {why}", first.display())))?;
    files(c, format)
}

/// The first whole lines standard input holds, looked at without being
/// consumed: they stay in the process's stdin buffer (8 KiB), so the
/// analysis that follows reads them again. A line longer than that buffer,
/// or a writer that has sent no whole line yet, leaves nothing to
/// recognise: the format must then be named (`keisoku logs ltsv -`).
fn stdin_head() -> std::io::Result<Vec<Vec<u8>>> {
    use std::io::BufRead as _;
    if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
        return Ok(Vec::new());
    }
    let mut stdin = std::io::stdin().lock();
    let buf = stdin.fill_buf()?;
    if buf.starts_with(&[0x1f, 0x8b]) {
        // Compressed: the first lines are not in the raw bytes.
        return Ok(Vec::new());
    }
    // The last piece is a whole line only at the end of the input.
    let whole = if buf.ends_with(b"\n") {
        buf
    } else {
        buf.iter()
            .rposition(|&b| b == b'\n')
            .map_or(&buf[..0], |end| &buf[..=end])
    };
    Ok(whole
        .split(|&b| b == b'\n')
        .map(keisoku_logs::format::trim_line)
        .filter(|l| !l.is_empty())
        .take(20)
        .map(<[u8]>::to_vec)
        .collect())
}
