//! The load flags and plan building shared by the commands that drive
//! load (`bench`, `run`), and how their results are written.

use crate::exit::bad_input;
use anyhow::Context;
use keisoku_load::{render, Job, LoadError, LoadSpec, Report};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// The load flags shared by every command that drives load (`bench`,
/// `run`), so they accept exactly the same options.
#[derive(clap::Args, Debug)]
#[command(next_help_heading = "Load")]
pub struct LoadArgs {
    /// Closed model: N connections. Open model: the connection cap.
    #[arg(short = 'c', long, value_name = "N", default_value_t = keisoku_load::spec::DEFAULT_CONNECTIONS)]
    connections: usize,
    /// Open model: RPS requests per second in total on a fixed schedule.
    #[arg(short = 'R', long, value_name = "RPS")]
    rate: Option<f64>,
    /// Event-loop threads [default: number of cores].
    #[arg(short = 't', long, value_name = "N")]
    threads: Option<usize>,
    /// Pin each event-loop thread to its own core.
    #[arg(long)]
    pin: bool,
    /// How long to run (e.g. 10s, 500ms, 2m).
    #[arg(short = 'd', long, value_name = "DUR", conflicts_with = "requests")]
    duration: Option<String>,
    /// Stop after N responses instead of after a duration.
    #[arg(short = 'n', long, value_name = "N")]
    requests: Option<u64>,
    /// Warm up for DUR at the first phase's load first (excluded from results).
    #[arg(long, value_name = "DUR")]
    warmup: Option<String>,
    /// HTTP method [default: GET, or POST with --body].
    #[arg(short = 'X', long = "method", value_name = "METHOD")]
    method: Option<String>,
    /// Extra request header 'Name: value' (repeatable).
    #[arg(short = 'H', long = "header", value_name = "HEADER")]
    headers: Vec<String>,
    /// Request body: a string, or @FILE to read it from a file.
    #[arg(long, value_name = "STRING|@FILE")]
    body: Option<String>,
    /// Per-request timeout (also the connect timeout).
    #[arg(long, value_name = "DUR", default_value = keisoku_load::spec::DEFAULT_TIMEOUT)]
    timeout: String,
    /// Open a new connection for every request.
    #[arg(long)]
    no_keepalive: bool,
    /// Requests from a file, one per line: [weight] METHOD URL [@bodyfile], each
    /// optionally followed by its own 'Name: value' header lines.
    #[arg(long, value_name = "FILE")]
    targets: Option<PathBuf>,
    /// One phase per connection count A, A+STEP, ... B.
    #[arg(long, value_name = "A..B:STEP", conflicts_with_all = ["sweep_rate", "requests"])]
    sweep_connections: Option<String>,
    /// One phase per rate A, A+STEP, ... B (open model).
    #[arg(long, value_name = "A..B:STEP", conflicts_with = "requests")]
    sweep_rate: Option<String>,
    /// Open model ramps: each stage DUR:RPS moves the rate linearly from the
    /// previous stage's (0 first) to RPS, e.g. 30s:100,2m:1000,30s:0; judged per stage.
    #[arg(long, visible_alias = "stages", value_name = "DUR:RPS,...")]
    stages_rate: Option<String>,
    /// Closed model ramps: each stage DUR:N moves the connections linearly to N.
    #[arg(long, value_name = "DUR:N,...", conflicts_with = "stages_rate")]
    stages_connections: Option<String>,
    /// Length of each sweep phase [default: --duration].
    #[arg(long, value_name = "DUR")]
    step_duration: Option<String>,
    /// Service-level objective, e.g. 'p99<=1s,p80<=500ms,rps>=4000,errors<=0.1%'; exit 3 when it fails.
    #[arg(long, value_name = "SLO")]
    slo: Option<String>,
    /// With --slo and the open model: search for the highest rate meeting the SLO
    /// (within --sweep-rate A..B:STEP, or up to --rate in steps of a twentieth).
    #[arg(long, requires = "slo")]
    find_max: bool,
    /// CSV file (header row names the columns) read by {{csv.COLUMN}} templates.
    #[arg(long, value_name = "FILE.csv")]
    data: Option<PathBuf>,
    /// How requests take --data rows: shared-sequential (default), shared-random,
    /// connection-sequential or connection-random (a connection keeps its row).
    #[arg(long, value_name = "MODE", requires = "data")]
    data_mode: Option<String>,
    /// A scenario file (YAML): steps with checks, extracted values, cookies
    /// and think time, run by each connection as a virtual user; the URL,
    /// if given, is the base of relative step URLs (docs/bench.md "Scenarios").
    #[arg(long, value_name = "FILE.yaml")]
    scenario: Option<PathBuf>,
    // Boxed: the flags of bench and run are parsed once, and the command
    // enum stays small (clippy's large_enum_variant).
    #[command(flatten)]
    transport: Box<TransportArgs>,
    #[command(flatten)]
    replay: Box<ReplayArgs>,
    #[command(flatten)]
    h2: Box<H2Args>,
}

/// HTTP/2 and gRPC.
#[derive(clap::Args, Debug)]
#[command(next_help_heading = "HTTP/2 and gRPC")]
pub struct H2Args {
    /// Speak HTTP/2: over TLS for https:// (ALPN h2, refused if the server
    /// does not choose it), prior-knowledge h2c for http:// and --unix-socket.
    #[arg(long)]
    h2: bool,
    /// HTTP/2: concurrent streams per connection. Each stream is one closed-model
    /// "connection": -c N --streams M keeps N x M requests in flight on N connections
    /// (open model: the cap). Default 1, as h2load and oha.
    #[arg(long, value_name = "M", value_parser = clap::value_parser!(u32).range(1..=keisoku_load::h2::MAX_STREAMS as i64))]
    streams: Option<u32>,
    /// gRPC unary calls of this method (/package.Service/Method) over HTTP/2 (implies --h2):
    /// --body @FILE is the protobuf-encoded request message (framed by keisoku);
    /// a grpc-status other than 0 is an error, counted per code.
    #[arg(long, value_name = "METHOD")]
    grpc: Option<String>,
}

impl H2Args {
    /// Makes the plan speak HTTP/2 (and gRPC), or says which flag is missing.
    fn apply(&self, plan: &mut keisoku_load::Plan) -> anyhow::Result<()> {
        use keisoku_load::h2::{grpc_targets, H2Options, DEFAULT_STREAMS};
        if !self.h2 && self.grpc.is_none() {
            if self.streams.is_some() {
                return Err(bad_input("--streams is for HTTP/2: add --h2"));
            }
            return Ok(());
        }
        if let Some(method) = &self.grpc {
            grpc_targets(plan, method).map_err(load_err)?;
        }
        plan.h2 = Some(H2Options {
            streams: self.streams.map_or(DEFAULT_STREAMS, |s| s as usize),
            grpc: self.grpc.is_some(),
        });
        Ok(())
    }
}

/// Replaying recorded traffic: an access log or a HAR file.
#[derive(clap::Args, Debug)]
#[command(next_help_heading = "Replay")]
pub struct ReplayArgs {
    /// Send the requests recorded in an access log (any format `keisoku logs`
    /// reads, recognised from its first lines) or a HAR file to the target URL
    /// (scheme, host and port only), at the recorded pace; results per route.
    #[arg(long, value_name = "FILE")]
    replay: Option<PathBuf>,
    /// The file's format: a log format of `keisoku logs` (ltsv, json, regexp,
    /// combined, ...) or har [default: recognised].
    #[arg(long, value_name = "FORMAT", requires = "replay")]
    replay_format: Option<String>,
    /// The pattern of --replay-format regexp (named groups as `keisoku logs regexp`).
    #[arg(long, value_name = "REGEXP", requires = "replay")]
    replay_regexp: Option<String>,
    /// Pace: 1 is the recorded pace, 2 twice as fast, max as fast as -c
    /// connections allow (closed model).
    #[arg(
        long,
        value_name = "FACTOR|max",
        default_value = "1",
        requires = "replay"
    )]
    speed: String,
    /// Start the file again at its end (needs -d or -n).
    #[arg(long = "loop", requires = "replay")]
    looped: bool,
    /// Send the recorded Host (HAR, absolute URIs) instead of the target's.
    #[arg(long, requires = "replay")]
    keep_host: bool,
    /// Send a HAR file's recorded cookies (left out by default).
    #[arg(long, requires = "replay")]
    replay_cookies: bool,
    /// Group URIs into routes by this regular expression, as `keisoku logs -m`
    /// (repeatable; the first that matches names the route).
    #[arg(long, value_name = "REGEXP", requires = "replay")]
    replay_group: Vec<String>,
    /// Group id-like path segments into routes, as `keisoku logs --auto-group`.
    #[arg(long, requires = "replay")]
    replay_auto_group: bool,
}

impl ReplayArgs {
    fn options(&self) -> Result<Option<keisoku_load::replay::ReplayOptions>, LoadError> {
        let Some(file) = &self.replay else {
            return Ok(None);
        };
        let speed = keisoku_load::replay::Speed::parse(&self.speed)
            .map_err(|e| LoadError::BadInput(format!("--speed {e}")))?;
        Ok(Some(keisoku_load::replay::ReplayOptions {
            file: file.clone(),
            format: self.replay_format.clone(),
            regexp: self.replay_regexp.clone(),
            speed,
            looped: self.looped,
            keep_host: self.keep_host,
            cookies: self.replay_cookies,
            groups: self.replay_group.clone(),
            auto_group: self.replay_auto_group,
        }))
    }
}

impl LoadArgs {
    /// The flags as the load crate's unvalidated options.
    pub fn spec(&self) -> Result<LoadSpec, LoadError> {
        Ok(LoadSpec {
            connections: self.connections,
            rate: self.rate,
            threads: self.threads,
            pin: self.pin,
            duration: self.duration.clone(),
            requests: self.requests,
            warmup: self.warmup.clone(),
            method: self.method.clone(),
            headers: self.headers.clone(),
            body: self.body.clone(),
            timeout: self.timeout.clone(),
            no_keepalive: self.no_keepalive,
            targets: self.targets.clone(),
            sweep_connections: self.sweep_connections.clone(),
            sweep_rate: self.sweep_rate.clone(),
            step_duration: self.step_duration.clone(),
            slo: self.slo.clone(),
            find_max: self.find_max,
            data: self.data.clone(),
            data_mode: self.data_mode.clone(),
            stages_rate: self.stages_rate.clone(),
            stages_connections: self.stages_connections.clone(),
            scenario: self.scenario.clone(),
            replay: self.replay.options()?,
        })
    }
}

/// How connections reach the target: TLS, a Unix socket, a proxy,
/// redirects, compression.
#[derive(clap::Args, Debug)]
#[command(next_help_heading = "Transport")]
pub struct TransportArgs {
    /// https: accept any server certificate (self-signed, wrong name).
    #[arg(short = 'k', long)]
    insecure: bool,
    /// https: trust the CA certificates in this PEM file instead of the system's.
    #[arg(long, value_name = "FILE")]
    cacert: Option<PathBuf>,
    /// https: client certificate chain (PEM), with --key.
    #[arg(long, value_name = "FILE", requires = "key")]
    cert: Option<PathBuf>,
    /// https: private key of --cert (PEM).
    #[arg(long, value_name = "FILE", requires = "cert")]
    key: Option<PathBuf>,
    /// https: no session resumption, every new connection pays a full handshake.
    #[arg(long)]
    no_tls_resume: bool,
    /// https: server name to send (SNI) and verify [default: the URL's host].
    #[arg(long, value_name = "NAME")]
    sni: Option<String>,
    /// Connect to this Unix domain socket; the URL still gives Host and path.
    #[arg(long, value_name = "PATH")]
    unix_socket: Option<PathBuf>,
    /// Follow up to N redirects per request (same origin); the final answer is counted.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(0..=keisoku_load::transport::MAX_FOLLOW as i64))]
    follow: Option<u32>,
    /// Send requests through this HTTP proxy (http://host:port; CONNECT for https)
    /// [default: http_proxy / https_proxy from the environment].
    #[arg(long, value_name = "URL")]
    proxy: Option<String>,
    /// Hosts that bypass the proxy (comma-separated, '*' for all), as no_proxy.
    #[arg(long, value_name = "LIST")]
    noproxy: Option<String>,
    /// Ask for gzip, deflate and br bodies and decode them (decoded sizes beside wire
    /// sizes), over HTTP/1.1 and HTTP/2.
    #[arg(long)]
    compressed: bool,
}

impl TransportArgs {
    /// The flags as the load crate's transport options.
    pub fn transport(&self) -> keisoku_load::transport::Transport {
        use keisoku_load::transport::{Proxies, Transport};
        let mut proxy = match &self.proxy {
            Some(url) => Proxies::all(url),
            None => Proxies::from_env(|k| std::env::var(k).ok()),
        };
        if let Some(list) = &self.noproxy {
            proxy.no_proxy = list
                .split(',')
                .map(|s| s.trim().to_ascii_lowercase())
                .filter(|s| !s.is_empty())
                .collect();
        }
        Transport {
            tls: keisoku_load::tls::TlsOptions {
                insecure: self.insecure,
                cacert: self.cacert.clone(),
                cert: self.cert.clone(),
                key: self.key.clone(),
                resume: !self.no_tls_resume,
                sni: self.sni.clone(),
            },
            unix_socket: self.unix_socket.clone(),
            follow: self.follow.unwrap_or(0),
            proxy,
            compressed: self.compressed,
        }
    }
}

/// Parses a duration flag; the error names the flag (exit 2).
pub fn dur(flag: &str, s: &str) -> anyhow::Result<Duration> {
    keisoku_load::spec::duration_flag(flag, s).map_err(load_err)
}

/// Maps a load-engine error to the binary's exit statuses (bad input: 2).
pub fn load_err(e: LoadError) -> anyhow::Error {
    if e.is_bad_input() {
        bad_input(e)
    } else {
        anyhow::Error::new(e)
    }
}

/// Builds the load job from target URLs and the shared load flags; every
/// problem is bad input (exit 2) naming the flag.
pub fn build(urls: &[String], a: &LoadArgs) -> anyhow::Result<Job> {
    let mut job = a.spec().and_then(|s| s.build(urls)).map_err(load_err)?;
    job.plan.transport = a.transport.transport();
    a.h2.apply(&mut job.plan)?;
    Ok(job)
}

/// Says on stderr when the targets go through a proxy (from `--proxy` or
/// the environment), so a load that measures a proxy never passes unnoticed.
pub fn announce_proxy(job: &Job) {
    let transport = &job.plan.transport;
    if transport.unix_socket.is_some() {
        return;
    }
    for t in &job.plan.targets {
        if let Some(p) = transport.proxy.for_target(t.tls, &t.host) {
            eprintln!("keisoku: {} goes through the proxy {p}", t.url);
            break;
        }
    }
}

/// Checks `--json FILE` ('-' is stdout) and `--hdr-log FILE` before any
/// load starts, so a directory or a missing directory is refused at once
/// (exit 2) rather than after the whole load.
pub fn check_outputs(json: Option<&str>, hdr_log: Option<&std::path::Path>) -> anyhow::Result<()> {
    if let Some(j) = json.filter(|j| *j != "-") {
        keisoku_load::spec::check_output_file("--json", std::path::Path::new(j))
            .map_err(load_err)?;
    }
    if let Some(h) = hdr_log {
        keisoku_load::spec::check_output_file("--hdr-log", h).map_err(load_err)?;
    }
    Ok(())
}

/// Prints the summary and writes `--json` / `--hdr-log`; with `--json -`
/// the JSON owns stdout and the summary goes to stderr.
pub fn write_outputs(
    json: Option<&str>,
    hdr_log: Option<&std::path::Path>,
    report: &Report,
) -> anyhow::Result<()> {
    let text = render::summary(report);
    if json == Some("-") {
        eprint!("{text}");
        let body = render::json(report).context("writing JSON to stdout")?;
        crate::shared::output::print(&body).context("writing JSON to stdout")?;
    } else {
        crate::shared::output::print(&text)?;
        if let Some(path) = json {
            let mut f = std::fs::File::create(path)
                .with_context(|| format!("--json: cannot create {path}"))?;
            let body = render::json(report).with_context(|| format!("--json: writing {path}"))?;
            f.write_all(body.as_bytes())
                .with_context(|| format!("--json: writing {path}"))?;
        }
    }
    if let Some(path) = hdr_log {
        keisoku_load::hlog::write_hlog_file(report, path)
            .map_err(|e| anyhow::anyhow!("--hdr-log: {e}"))?;
    }
    Ok(())
}
