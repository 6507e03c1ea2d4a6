//! `keisoku demo`: start the built-in bid server as a child process (the
//! same binary, `--target-only`), sweep connections against it with the
//! load engine, print the sweep table, the knee and the SLO verdict, stop it.
//! The target runs as its own process so a profiler can watch it alone.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use anyhow::{anyhow, Context};
use keisoku_demo::harness::{self, Side, DEFAULT_SLO, DEFAULT_SWEEP};
use keisoku_demo::measure::{self, RunPlace, Schedule, SideResult};
use keisoku_demo::{DemoServer, Knobs, TargetProcess};
use keisoku_load::RunControl;

use crate::exit::{bad_input, GATE_FAILED, OK};
use crate::shared::output::{self, Progress};
use crate::shared::recorder::{self as recording, record_error};

/// Flags of `keisoku demo`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
The target is a bid server (POST /bid, GET /health, GET /stats) started on a free 127.0.0.1 port \
as a child process. By default it runs twice, every knob naive then every knob tuned, under the \
same sweep, and compares the two.

Knobs (each reproduces a case from the field notes; see docs/demo.md):
  json-cache          cache JSON text and parse it on every hit
  formatter           compile regexes and the timestamp format per request
  per-request-init    read and parse the config file per request
  sync-log-rollover   log under one lock; roll by copying and compressing inside a request
  single-worker       one event-loop thread instead of one per core
  no-keepalive        a new backend connection per call
  sync-external-call  wait for a slow external logger (5-20 ms) inside the request
  unpinned            workers not pinned to cores

Examples:
  keisoku demo                           naive then tuned, compared
  keisoku demo --knob json-cache         only that knob naive, then all tuned
  keisoku demo --tuned --sweep 1..64:8   one sweep of the tuned target
  keisoku demo --serve --knob formatter  leave the target running for your own tools

Exit status: 0 done, 1 runtime failure, 2 bad flags, 3 the tuned target failed the SLO.")]
pub struct Args {
    /// Turn on a single knob: only NAME is naive on the naive side.
    #[arg(long, value_name = "NAME", conflicts_with = "knobs")]
    knob: Option<String>,
    /// Run only the naive side.
    #[arg(long, conflicts_with = "tuned")]
    naive: bool,
    /// Run only the tuned side.
    #[arg(long)]
    tuned: bool,
    /// Leave the target running (naive unless --tuned), print its URL, PID and knobs; Ctrl-C stops it.
    #[arg(long)]
    serve: bool,
    /// Connections per phase: a list (1,2,4,8) or A..B:STEP.
    #[arg(long, value_name = "LIST", default_value = DEFAULT_SWEEP)]
    sweep: String,
    /// How long each phase lasts.
    #[arg(long, value_name = "DUR", default_value = "4s")]
    step_duration: String,
    /// Warm-up before the first phase (excluded from the results).
    #[arg(long, value_name = "DUR", default_value = "1s")]
    warmup: String,
    /// The SLO each phase is judged against.
    #[arg(long, value_name = "SLO", default_value = DEFAULT_SLO)]
    slo: String,
    /// Also write machine-readable results to FILE (`-`: stdout; tables then go to stderr).
    #[arg(long, value_name = "FILE")]
    json: Option<String>,
    /// A short sweep (1,4,16 connections, 1s phases, no warm-up) for tests and smoke checks.
    #[arg(long, hide = true)]
    quick: bool,
    /// Where report.html (the naive side) and compare.html go.
    #[arg(long, value_name = "DIR", default_value = "keisoku-demo")]
    out_dir: std::path::PathBuf,
    /// The run store both sides are recorded into [default: $KEISOKU_STORE, else ./.keisoku/runs.db].
    #[arg(long, value_name = "PATH")]
    store: Option<std::path::PathBuf>,
    /// Run only the target: print its URL on the first line of stdout and serve until killed.
    #[arg(long, hide = true)]
    target_only: bool,
    /// With --target-only: the address to listen on.
    #[arg(long, hide = true, value_name = "ADDR", default_value = "127.0.0.1:0")]
    listen: String,
    /// With --target-only: knob settings, `name=naive|tuned,...` (`all=naive` for every knob).
    #[arg(long, hide = true, value_name = "LIST")]
    knobs: Option<String>,
    /// With --target-only: worker threads when single-worker is tuned.
    #[arg(long, hide = true, value_name = "N")]
    workers: Option<usize>,
    /// With --target-only: roll the access log every N MiB.
    #[arg(long, hide = true, value_name = "MIB")]
    log_roll_mb: Option<u64>,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    if args.target_only {
        return target_only(&args);
    }
    let sides = harness::sides(args.knob.as_deref(), args.naive || args.serve, args.tuned)
        .map_err(bad_input)?;
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst))
            .context("cannot install the Ctrl-C handler")?;
    }
    if args.serve {
        return serve(&args, &sides, &stop);
    }
    let schedule = Schedule::from_flags(
        &args.slo,
        args.quick,
        &args.sweep,
        &args.step_duration,
        &args.warmup,
    )
    .map_err(bad_input)?;

    let json_to_stdout = args.json.as_deref() == Some("-");
    // With --json - the tables go to stderr; a progress line would mix in.
    let progress = Progress::new(json_to_stdout);
    let mut out: Box<dyn Write> = if json_to_stdout {
        Box::new(std::io::stderr())
    } else {
        Box::new(std::io::stdout())
    };
    let mut results: Vec<SideResult> = Vec::new();
    let mut run_ids: Vec<(String, String)> = Vec::new();
    for side in &sides {
        if stop.load(Ordering::SeqCst) {
            break;
        }
        let target = spawn_target(&side.knobs, None)?;
        write!(
            out,
            "{}",
            measure::render_side_header(side, &target.url, target.pid())
        )?;
        out.flush()?;
        let plan = harness::plan_for(&target.url, &schedule.sweep, schedule.step, schedule.warmup)?;
        let ctl = RunControl {
            stop: stop.clone(),
            progress: progress.for_load(),
            live: None,
        };
        let measured = measure::measure(
            side,
            target,
            &plan,
            &schedule.slo,
            &ctl,
            RunPlace {
                store_path: keisoku_store::store_path(args.store.as_deref()),
                command: recording::command_line(),
            },
            || progress.clear(),
        )
        .map_err(record_error)?;
        let done = measure::conclude(side, measured);
        recording::print_notes(&done.notes);
        run_ids.push((side.name.clone(), done.run_id));
        let (result, text) = done.side?;
        write!(out, "{text}")?;
        results.push(result);
    }
    let partial = stop.load(Ordering::SeqCst);
    if partial {
        writeln!(
            out,
            "interrupted: the results above cover what was measured until Ctrl-C"
        )?;
    }
    let comparison = measure::comparison(&results);
    if let Some(c) = &comparison {
        write!(out, "\n{c}")?;
    }
    if let Err(e) = write_pages(&args, &run_ids, &mut out) {
        writeln!(out, "keisoku: note: the HTML pages were not written: {e:#}")?;
    }
    if let Some(path) = &args.json {
        let doc = measure::results_json(&args.slo, partial, &results, comparison.as_ref());
        let text = serde_json::to_string_pretty(&doc)?;
        output::write_to(std::path::Path::new(path), (text + "\n").as_bytes())?;
    }
    out.flush()?;
    // The gate is the demo's claim: the tuned target meets the SLO.
    let tuned_failed = measure::tuned_failed(&results);
    Ok(if tuned_failed && !partial {
        GATE_FAILED
    } else {
        OK
    })
}

fn serve(args: &Args, sides: &[Side], stop: &AtomicBool) -> anyhow::Result<u8> {
    let side = sides.first().ok_or_else(|| anyhow!("no side to serve"))?;
    let target = spawn_target(&side.knobs, args.workers)?;
    output::print(&measure::render_serving(
        &target.url,
        target.pid(),
        &side.knobs,
    ))?;
    let mut target = target;
    while !stop.load(Ordering::SeqCst) {
        if let Some(status) = target.exited()? {
            return Err(anyhow!("the demo target exited on its own ({status})"));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    let stats = target.stats().ok();
    target.stop();
    output::print(&measure::render_served(stats.as_ref()))?;
    Ok(OK)
}

/// Starts the demo target: this same binary, run with `--target-only`.
fn spawn_target(knobs: &Knobs, workers: Option<usize>) -> anyhow::Result<TargetProcess> {
    let exe =
        std::env::current_exe().context("cannot find the keisoku binary to run the target")?;
    Ok(TargetProcess::spawn(&exe, knobs, workers)?)
}

/// `--target-only`: serve until SIGINT/SIGTERM.
fn target_only(args: &Args) -> anyhow::Result<u8> {
    let config = measure::target_config(
        &args.listen,
        args.knobs.as_deref(),
        args.workers,
        args.log_roll_mb,
    )
    .map_err(bad_input)?;
    let stop = Arc::new(AtomicBool::new(false));
    {
        let stop = stop.clone();
        ctrlc::set_handler(move || stop.store(true, Ordering::SeqCst))
            .context("cannot install the signal handler")?;
    }
    let handle = DemoServer::start(&config).context("cannot start the demo target")?;
    output::print(&format!("{}\n", handle.url()))?;
    while !stop.load(Ordering::SeqCst) {
        std::thread::sleep(Duration::from_millis(50));
    }
    handle.stop();
    Ok(OK)
}

/// Writes report.html (the naive side, where the findings are; the only
/// side when one ran) and compare.html (naive vs tuned) into --out-dir.
fn write_pages(args: &Args, runs: &[(String, String)], out: &mut dyn Write) -> anyhow::Result<()> {
    let Some((_, first)) = runs.first() else {
        return Ok(());
    };
    std::fs::create_dir_all(&args.out_dir)
        .with_context(|| format!("cannot create {}", args.out_dir.display()))?;
    let store = crate::shared::store::StoreArg {
        store: args.store.clone(),
    };
    let a = store.run_json(first)?;
    let html = keisoku_report::run_page::run_page(&a, &Default::default())
        .map_err(|e| anyhow!("report: {e}"))?;
    let report = args.out_dir.join("report.html");
    std::fs::write(&report, html).with_context(|| format!("cannot write {}", report.display()))?;
    writeln!(out, "wrote {}", report.display())?;
    if let Some((_, second)) = runs.get(1) {
        let b = store.run_json(second)?;
        let cmp = keisoku_report::compare_page::compare(&a, &b, None)
            .map_err(|e| anyhow!("compare: {e}"))?;
        let html = keisoku_report::compare_page::compare_page(&cmp, false)
            .map_err(|e| anyhow!("compare: {e}"))?;
        let page = args.out_dir.join("compare.html");
        std::fs::write(&page, html).with_context(|| format!("cannot write {}", page.display()))?;
        writeln!(out, "wrote {}", page.display())?;
    }
    Ok(())
}
