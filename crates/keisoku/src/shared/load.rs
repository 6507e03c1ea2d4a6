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
}

impl LoadArgs {
    /// The flags as the load crate's unvalidated options.
    pub fn spec(&self) -> LoadSpec {
        LoadSpec {
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
    a.spec().build(urls).map_err(load_err)
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
