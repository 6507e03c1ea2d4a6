//! `keisoku bench`: drive HTTP load at a target and measure latency honestly.

use crate::exit::{bad_input, FAILURE, GATE_FAILED, OK};
use anyhow::Context;
use keisoku_load::plan::{parse_duration, parse_header, parse_sweep, parse_targets_file};
use keisoku_load::{
    render, LoadError, Model, PhaseSpec, Plan, Report, RunControl, Search, Slo, Target,
};
use std::io::{IsTerminal, Write};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// Flags of `keisoku bench`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Drive HTTP load at a target and measure latency honestly",
    long_about = "Drive HTTP/1.1 load at one or more URLs (rotated) and report throughput, \
latency percentiles from HdrHistograms, status classes, errors by kind and a per-second timeline.\n\n\
Closed model (-c): each connection sends its next request when the previous answer arrives; \
latency is service time. Open model (-R): requests go out on a fixed schedule and latency counts \
from each request's intended send time, so a stalled server shows in the percentiles \
(coordinated omission corrected, as wrk2 does); service time is reported beside it.",
    after_help = "Examples:\n  keisoku bench -c 50 -d 30s http://127.0.0.1:8080/health\n  \
keisoku bench -R 4000 -d 1m --slo 'p99<=1s,p80<=500ms,errors<=0.1%' http://127.0.0.1:8080/bid\n  \
keisoku bench --sweep-connections 5..50:5 --step-duration 10s http://127.0.0.1:8080/\n  \
keisoku bench --sweep-rate 1000..8000:1000 --slo 'p99<=100ms' --find-max http://127.0.0.1:8080/\n\n\
Exit status: 0 ok, 1 no request succeeded or interrupted, 2 bad input, 3 the SLO failed."
)]
pub struct Args {
    /// Target URLs (http://host[:port]/path); several are rotated.
    #[arg(value_name = "URL")]
    urls: Vec<String>,
    #[command(flatten)]
    load: LoadArgs,
    /// Write machine-readable results to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE|-")]
    json: Option<String>,
    /// Write an HdrHistogram interval log (.hlog), one interval per second.
    #[arg(long, value_name = "FILE")]
    hdr_log: Option<PathBuf>,
}

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
pub(crate) fn dur(flag: &str, s: &str) -> anyhow::Result<Duration> {
    parse_duration(s).map_err(|e| bad_input(format!("{flag}: {e}")))
}

/// `--body STRING|@FILE` as bytes (a missing file is bad input).
pub(crate) fn read_body(body: Option<&str>) -> anyhow::Result<Vec<u8>> {
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
pub(crate) fn load_err(e: LoadError) -> anyhow::Error {
    if e.is_bad_input() {
        bad_input(e)
    } else {
        anyhow::Error::new(e)
    }
}

/// A load plan and what judges it, built from the shared load flags.
pub(crate) struct Job {
    pub plan: Plan,
    pub slo: Option<Slo>,
    /// `--find-max`: search for the highest rate meeting the SLO.
    pub search: Option<Search>,
}

/// Builds the load job from target URLs and the shared load flags; every
/// problem is bad input (exit 2) naming the flag.
pub(crate) fn build(urls: &[String], a: &LoadArgs) -> anyhow::Result<Job> {
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

pub fn run(args: Args) -> anyhow::Result<u8> {
    let job = build(&args.urls, &args.load)?;
    let ctl = RunControl {
        progress: progress_printer(),
        ..RunControl::default()
    };
    let stop = ctl.stop.clone();
    // A second Ctrl-C while results are being written leaves at once.
    let _ = ctrlc::set_handler(move || {
        if stop.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
    });
    let mut report = match (&job.search, &job.slo) {
        (Some(search), Some(slo)) => keisoku_load::find_max(&job.plan, slo, *search, &ctl),
        _ => keisoku_load::run(&job.plan, &ctl),
    }
    .map_err(load_err)?;
    if ctl.progress.is_some() {
        eprint!("\r\x1b[2K");
    }
    let gate_pass = match &job.slo {
        Some(slo) if job.search.is_none() => keisoku_load::judge(&mut report, slo),
        Some(_) => report.max_rate.is_some(),
        None => true,
    };
    write_outputs(args.json.as_deref(), args.hdr_log.as_deref(), &report)?;
    if report.nothing_succeeded() {
        let why = if report.error_reasons.is_empty() {
            "no response arrived".to_string()
        } else {
            report.error_reasons.join("; ")
        };
        eprintln!("keisoku: error: not one request succeeded: {why}");
        return Ok(FAILURE);
    }
    if report.partial {
        eprintln!("keisoku: interrupted: the results above are partial");
        return Ok(FAILURE);
    }
    Ok(if gate_pass { OK } else { GATE_FAILED })
}

/// Prints the summary and writes `--json` / `--hdr-log`; with `--json -`
/// the JSON owns stdout and the summary goes to stderr.
pub(crate) fn write_outputs(
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
        print!("{text}");
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

/// Live progress on stderr, only when stdout is a terminal (a pipe or file
/// gets the final results and nothing else).
fn progress_printer() -> Option<keisoku_load::ProgressFn> {
    if !std::io::stdout().is_terminal() || !std::io::stderr().is_terminal() {
        return None;
    }
    Some(Box::new(|p| {
        let mut e = std::io::stderr().lock();
        let _ = write!(e, "\r\x1b[2K{}", render::progress_line(p));
        let _ = e.flush();
    }))
}
