//! The load flags and plan building shared by the commands that drive
//! load (`bench`, `run`), and how their results are written.

use crate::exit::bad_input;
use anyhow::Context;
use keisoku_load::plan::{parse_duration, parse_header, parse_sweep, parse_targets_file};
use keisoku_load::{render, LoadError, Model, PhaseSpec, Plan, Report, Search, Slo, Target};
use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

/// The load flags shared by every command that drives load (`bench`,
/// `run`), so they accept exactly the same options.
#[derive(clap::Args, Debug)]
#[command(next_help_heading = "Load")]
pub struct LoadArgs {
    /// Closed model: N connections. Open model: the connection cap.
    #[arg(short = 'c', long, value_name = "N", default_value_t = 50)]
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
    #[arg(long, value_name = "DUR", default_value = "10s")]
    timeout: String,
    /// Open a new connection for every request.
    #[arg(long)]
    no_keepalive: bool,
    /// Requests from a file, one per line: [weight] METHOD URL [@bodyfile].
    #[arg(long, value_name = "FILE")]
    targets: Option<PathBuf>,
    /// One phase per connection count A, A+STEP, ... B.
    #[arg(long, value_name = "A..B:STEP", conflicts_with_all = ["sweep_rate", "requests"])]
    sweep_connections: Option<String>,
    /// One phase per rate A, A+STEP, ... B (open model).
    #[arg(long, value_name = "A..B:STEP", conflicts_with = "requests")]
    sweep_rate: Option<String>,
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
}

/// Parses a duration flag; the error names the flag (exit 2). Shared with
/// the other commands that drive load.
pub fn dur(flag: &str, s: &str) -> anyhow::Result<Duration> {
    parse_duration(s).map_err(|e| bad_input(format!("{flag}: {e}")))
}

/// `--body STRING|@FILE` as bytes (a missing file is bad input).
pub fn read_body(body: Option<&str>) -> anyhow::Result<Vec<u8>> {
    Ok(match body {
        None => Vec::new(),
        Some(b) => match b.strip_prefix('@') {
            Some(file) => {
                std::fs::read(file).map_err(|e| bad_input(format!("--body: {file}: {e}")))?
            }
            None => b.as_bytes().to_vec(),
        },
    })
}

/// Maps a load-engine error to the binary's exit statuses (bad input: 2).
pub fn load_err(e: LoadError) -> anyhow::Error {
    if e.is_bad_input() {
        bad_input(e)
    } else {
        anyhow::Error::new(e)
    }
}

/// A load plan and what judges it, built from the shared load flags.
pub struct Job {
    pub plan: Plan,
    pub slo: Option<Slo>,
    /// `--find-max`: search for the highest rate meeting the SLO.
    pub search: Option<Search>,
}

/// Builds the load job from target URLs and the shared load flags; every
/// problem is bad input (exit 2) naming the flag.
pub fn build(urls: &[String], a: &LoadArgs) -> anyhow::Result<Job> {
    let body = read_body(a.body.as_deref())?;
    let method = a
        .method
        .clone()
        .unwrap_or_else(|| if a.body.is_some() { "POST" } else { "GET" }.to_string());
    let mut targets: Vec<Target> = Vec::new();
    for u in urls {
        targets.push(Target::new(&method, u, body.clone(), 1).map_err(load_err)?);
    }
    if let Some(f) = &a.targets {
        targets.extend(parse_targets_file(f).map_err(load_err)?);
    }
    if targets.is_empty() {
        return Err(bad_input("no target: give a URL or --targets FILE"));
    }
    let mut plan = Plan::new(targets);
    for h in &a.headers {
        plan.headers
            .push(parse_header(h).map_err(|e| bad_input(format!("-H: {e}")))?);
    }
    plan.threads = a
        .threads
        .unwrap_or_else(keisoku_load::plan::default_threads);
    plan.pin = a.pin;
    plan.timeout = dur("--timeout", &a.timeout)?;
    plan.keepalive = !a.no_keepalive;
    if let Some(w) = &a.warmup {
        plan.warmup = dur("--warmup", w)?;
    }
    let duration = match &a.duration {
        Some(d) => dur("--duration", d)?,
        None => Duration::from_secs(10),
    };
    let step = match &a.step_duration {
        Some(d) => dur("--step-duration", d)?,
        None => duration,
    };
    if let Some(r) = a.rate {
        if !(r.is_finite() && r > 0.0) {
            return Err(bad_input(format!(
                "--rate: must be a positive number, got {r}"
            )));
        }
    }
    let one = |connections: usize, rate: Option<f64>, duration: Duration| PhaseSpec {
        connections,
        rate,
        duration,
        requests: a.requests,
    };
    plan.model = if a.rate.is_some() || a.sweep_rate.is_some() {
        Model::Open
    } else {
        Model::Closed
    };
    let mut search = None;
    plan.phases = if let Some(s) = &a.sweep_connections {
        if a.rate.is_some() {
            return Err(bad_input(
                "--sweep-connections is for the closed model; drop --rate",
            ));
        }
        let steps = parse_sweep(s).map_err(|e| bad_input(format!("--sweep-connections: {e}")))?;
        if steps.iter().any(|v| v.fract() != 0.0) {
            return Err(bad_input(format!(
                "--sweep-connections: {s:?}: connection counts must be whole numbers"
            )));
        }
        steps.iter().map(|&c| one(c as usize, None, step)).collect()
    } else if let Some(s) = &a.sweep_rate {
        let steps = parse_sweep(s).map_err(|e| bad_input(format!("--sweep-rate: {e}")))?;
        if a.find_max {
            let st = s
                .rsplit_once(':')
                .and_then(|(_, st)| st.trim().parse::<f64>().ok())
                .unwrap_or(1.0);
            search = Some(Search {
                low: steps[0],
                high: *steps.last().unwrap_or(&steps[0]),
                step: st,
            });
        }
        steps
            .iter()
            .map(|&r| one(a.connections, Some(r), step))
            .collect()
    } else {
        if a.find_max {
            let r = a.rate.ok_or_else(|| {
                bad_input(
                    "--find-max needs the open model: give --rate MAX or --sweep-rate A..B:STEP",
                )
            })?;
            search = Some(Search {
                low: r / 20.0,
                high: r,
                step: r / 20.0,
            });
        }
        vec![one(
            a.connections,
            a.rate,
            if search.is_some() { step } else { duration },
        )]
    };
    let slo = match &a.slo {
        Some(s) => Some(Slo::parse(s).map_err(|e| bad_input(format!("--slo: {e}")))?),
        None => None,
    };
    plan.validate().map_err(load_err)?;
    Ok(Job { plan, slo, search })
}

/// Prints the summary and writes `--json` / `--hdr-log`; with `--json -`
/// the JSON owns stdout and the summary goes to stderr.
pub fn write_outputs(
    json: Option<&str>,
    hdr_log: Option<&std::path::Path>,
    report: &Report,
) -> anyhow::Result<()> {
    let text = render::summary(report);
    let json_to_stdout = json == Some("-");
    if json_to_stdout {
        eprint!("{text}");
        let stdout = std::io::stdout();
        let mut out = stdout.lock();
        serde_json::to_writer_pretty(&mut out, report).context("writing JSON to stdout")?;
        writeln!(out).context("writing JSON to stdout")?;
    } else {
        crate::shared::output::print(&text)?;
        if let Some(path) = json {
            let f = std::fs::File::create(path)
                .with_context(|| format!("--json: cannot create {path}"))?;
            let mut w = std::io::BufWriter::new(f);
            serde_json::to_writer_pretty(&mut w, report)
                .with_context(|| format!("--json: writing {path}"))?;
            w.flush()
                .with_context(|| format!("--json: writing {path}"))?;
        }
    }
    if let Some(path) = hdr_log {
        keisoku_load::hlog::write_hlog_file(report, path)
            .map_err(|e| anyhow::anyhow!("--hdr-log: {e}"))?;
    }
    Ok(())
}
