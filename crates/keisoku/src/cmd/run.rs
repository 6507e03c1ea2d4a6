//! `keisoku run`: load a target while recording the host, the server
//! process, its profile and its access log into the run store.

use crate::exit::{bad_input, FAILURE, GATE_FAILED, OK};
use crate::shared::load::{self as bench, dur, LoadArgs};
use crate::shared::output::Progress;
use crate::shared::recorder::{self as recording, record_error, RecorderArgs};
use keisoku_load::{render, RunControl};
use keisoku_record::server::{ProcessWatch, ServerError};
use keisoku_record::{summary, Recording};
use keisoku_store::{NewRun, RunStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

/// Flags of `keisoku run`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Load a target while recording host, process, profile and access log into the run store",
    long_about = "Drive HTTP load at --target (as `keisoku bench` does) while recording, on one clock, \
the host (per-core CPU, scheduler, memory, disk, network, TCP), the server process (CPU, RSS, threads, \
context switches, migrations, I/O), its CPU profile (perf or py-spy) and its access log. With \
--server-cmd keisoku starts the server, waits until the target accepts connections, measures, then \
stops it (TERM, then KILL) and keeps its output. Everything lands in the run store; `keisoku show`, \
`export`, `report` and `compare` read it back. Ctrl-C or a dying server keeps what was recorded, \
marked interrupted.",
    after_help = "Examples:\n  keisoku run --target http://127.0.0.1:8080/ --server-cmd 'nginx -c /tmp/n.conf' --access-log /tmp/access.log -d 30s\n  \
keisoku run --target http://127.0.0.1:8080/bid --pidof java -R 2000 -d 1m --name bid-before --tag commit=abc123\n  \
keisoku run --target http://127.0.0.1:3000/ --server-cmd 'node --perf-basic-prof server.js' --sweep-connections 10..50:10 --step-duration 5s\n\n\
Exit status: 0 ok, 1 runtime failure (no response, server died, interrupted), 2 bad usage, 3 the SLO failed."
)]
pub struct Args {
    /// The URL to load (http://host[:port]/path); repeat to rotate several.
    #[arg(long, value_name = "URL")]
    target: Vec<String>,
    /// Start the server with `sh -c CMD` first; stopped (TERM, then KILL) afterwards.
    #[arg(long, value_name = "CMD", conflicts_with_all = ["pid", "pidof"])]
    server_cmd: Option<String>,
    /// How long to wait for a --server-cmd server to accept connections.
    #[arg(long, value_name = "DUR", default_value = "30s")]
    server_timeout: String,
    #[command(flatten)]
    load: LoadArgs,
    /// Also write the load results (as `keisoku bench --json`) to FILE ('-' for stdout).
    #[arg(long, value_name = "FILE|-")]
    json: Option<String>,
    /// Also write an HdrHistogram interval log (.hlog) of the load.
    #[arg(long, value_name = "FILE")]
    hdr_log: Option<std::path::PathBuf>,
    #[command(flatten)]
    rec: RecorderArgs,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let job = bench::build(&args.target, &args.load)?;
    bench::announce_proxy(&job);
    bench::check_outputs(args.json.as_deref(), args.hdr_log.as_deref())?;
    let plan = &job.plan;
    let server_timeout = dur("--server-timeout", &args.server_timeout)?;
    let new_run = NewRun {
        name: args.rec.name.clone(),
        // A replay's targets are the file's routes; the run's target is the URL.
        target: match plan.replay {
            Some(_) => args.target.first().cloned(),
            None => plan.targets.first().map(|t| t.url.clone()),
        },
        command: recording::command_line(),
        model: Some(plan.model.name().into()),
        ..NewRun::default()
    };
    let opts = args.rec.options(new_run)?;
    let pid = opts.pid;

    let progress = Progress::new(false);
    let mut ctl = RunControl {
        progress: progress.for_load(),
        ..RunControl::default()
    };
    let interrupted = Arc::new(AtomicBool::new(false));
    {
        let stop = Arc::clone(&ctl.stop);
        let interrupted = Arc::clone(&interrupted);
        crate::signals::on_interrupt(move || {
            interrupted.store(true, Ordering::SeqCst);
            stop.store(true, Ordering::SeqCst);
        });
    }

    let mut rec = Recording::create(opts).map_err(record_error)?;
    eprintln!("keisoku: run {} -> {}", rec.run, rec.store_path().display());
    let mut server = None;
    if let Some(cmd) = &args.server_cmd {
        let addr = plan.targets[0].addr;
        match rec.start_server_until(cmd, addr, server_timeout, &ctl.stop) {
            Ok((r, s)) => {
                rec = r;
                server = Some(s);
            }
            Err(ServerError::Record(e)) => return Err(record_error(e)),
            Err(e) => {
                if let ServerError::NotReady { notes, .. } = &e {
                    recording::print_notes(notes);
                }
                return Err(e.into());
            }
        }
    }
    rec.start_recorders().map_err(record_error)?;
    // Seconds and phases go to the store as they end: a killed run keeps them.
    let targets: Vec<(String, String)> = plan.target_labels();
    let stream = rec.load_stream(&targets).map_err(record_error)?;
    ctl.live = Some(stream.live());

    // Watch the server: a dying server ends the load early, run kept as interrupted.
    let watch = ProcessWatch::start(
        server.as_ref().map(|s| s.pid()).or(pid),
        Arc::clone(&ctl.stop),
    );

    let result = job.run(&ctl);
    progress.clear();
    let died = watch.end();
    let mut report = match result {
        Ok(r) => Some(r),
        Err(e) => {
            rec.note(format!("load: {e}"));
            None
        }
    };
    let gate_pass = report.as_mut().is_none_or(|r| job.judge(r));
    let was_interrupted = interrupted.load(Ordering::SeqCst);
    if died {
        rec.note("the server exited during the run; the load stopped early");
    }
    let status = if died || was_interrupted || report.is_none() {
        RunStatus::Interrupted
    } else {
        RunStatus::Complete
    };
    // Recorders stop before the server: perf maps are written while JITs still run.
    let store_path = rec.store_path().to_path_buf();
    let mut done = rec
        .finish_with_streamed_load(status, report.as_ref(), stream)
        .map_err(record_error)?;
    if let Some(s) = server {
        done.stop_server(s, &store_path);
    }
    let keisoku_record::Finished {
        run: json,
        findings,
        notes,
        lost,
    } = done;
    if let (Some(r), Some(dest)) = (&report, &args.json) {
        let text = render::json(r)?;
        if dest == "-" {
            crate::shared::output::print(&text)?;
        } else {
            std::fs::write(dest, text).map_err(|e| bad_input(format!("--json {dest}: {e}")))?;
        }
    }
    if let (Some(r), Some(path)) = (&report, &args.hdr_log) {
        keisoku_load::hlog::write_hlog_file(r, path)
            .map_err(|e| anyhow::anyhow!("--hdr-log: {e}"))?;
    }
    let to_stdout = args.json.as_deref() != Some("-");
    let mut text = String::new();
    if let Some(r) = &report {
        text.push_str(&render::summary(r));
    }
    text.push_str(&summary::recorded(&json, &findings, &lost));
    if to_stdout {
        crate::shared::output::print(&text)?;
    } else {
        eprint!("{text}");
    }
    recording::print_notes(&notes);
    if recording::report_lost(&json.run.id, &json.run.status, &lost) {
        return Ok(FAILURE);
    }
    let Some(report) = report else {
        eprintln!(
            "keisoku: error: the load could not run; run {} kept, marked interrupted",
            json.run.id
        );
        return Ok(FAILURE);
    };
    if died {
        eprintln!(
            "keisoku: error: the server exited during the run; run {} kept, marked interrupted",
            json.run.id
        );
        return Ok(FAILURE);
    }
    if was_interrupted {
        eprintln!(
            "keisoku: interrupted: run {} kept, marked interrupted",
            json.run.id
        );
        return Ok(FAILURE);
    }
    if report.nothing_succeeded() {
        let why = report.failure_reason();
        eprintln!("keisoku: error: not one request succeeded: {why}");
        return Ok(FAILURE);
    }
    Ok(if gate_pass { OK } else { GATE_FAILED })
}
