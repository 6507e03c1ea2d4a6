//! `keisoku record`: record host, process, profile and access log while any
//! command runs (ab, k6, JMeter, a test suite...).

use crate::exit::{bad_input, FAILURE, OK};
use crate::shared::recorder::{self as recording, record_error, RecorderArgs};
use keisoku_record::command::{CommandEnd, CommandError, Supervisor};
use keisoku_record::import::Format;
use keisoku_record::{summary, Recording};
use keisoku_store::{NewRun, RunStatus};
use std::path::PathBuf;

/// Flags of `keisoku record`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Record host, process, profile and access log while any command runs",
    long_about = "Run CMD (your own load tool: ab, k6, JMeter...) and record, on one clock, the host \
(per-core CPU, scheduler, memory, disk, network, TCP), the server process given by --pid/--pidof \
(CPU, RSS, threads, context switches, migrations, I/O), its CPU profile and its access log into the \
run store. Ctrl-C or the end of CMD stops the recording; an interrupted recording is kept, marked \
interrupted. With --client-results, the tool's own results file (JMeter JTL, k6 JSON, vegeta \
CSV/JSON, wrk text) is read when CMD ends and stored as the run's client results, on the run's clock.",
    after_help = "Examples:\n  keisoku record --pidof nginx --access-log /var/log/nginx/access.log -- ab -n 10000 -c 20 http://127.0.0.1/\n  \
keisoku record --pid 4242 --profile perf --name k6-before --client-results out.json -- k6 run --out json=out.json script.js\n  \
keisoku record --pidof nginx --client-results out.jtl -- jmeter -n -t plan.jmx -l out.jtl\n  \
keisoku record --interval 100ms -- sleep 60\n\n\
Exit status: 0 ok, 1 CMD failed or the recording was interrupted, 2 bad usage or a results file not understood."
)]
pub struct Args {
    #[command(flatten)]
    rec: RecorderArgs,
    /// The load tool's results file, read when CMD ends: a JMeter JTL (CSV or XML), k6 `--out
    /// json`, vegeta's binary output or `vegeta encode --to csv|json`, or wrk `--latency` text
    /// (summary only).
    #[arg(long, value_name = "FILE")]
    client_results: Option<PathBuf>,
    /// The format of --client-results (detected when not given; a file matching none is refused).
    #[arg(long, value_name = "FORMAT", value_parser = ["jtl", "k6", "vegeta", "wrk"], requires = "client_results")]
    client_format: Option<String>,
    /// The command to run while recording.
    #[arg(last = true, required = true, value_name = "CMD")]
    command: Vec<String>,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let new_run = NewRun {
        name: args.rec.name.clone(),
        command: recording::command_line(),
        ..NewRun::default()
    };
    let opts = args.rec.options(new_run)?;
    let pid = opts.pid;
    let Some((program, rest)) = args.command.split_first() else {
        return Err(bad_input("no command given after --"));
    };
    let supervisor = Supervisor::new();
    let on_signal = supervisor.interrupter();
    crate::signals::on_interrupt(move || on_signal.interrupt());
    let mut rec = Recording::start(opts).map_err(record_error)?;
    eprintln!(
        "keisoku: recording run {} while `{}` runs",
        rec.run,
        args.command.join(" ")
    );
    let CommandEnd {
        status,
        interrupted,
    } = match supervisor.run(program, rest, &mut rec, pid) {
        Ok(end) => end,
        Err(CommandError::Spawn { source, .. }) => {
            rec.note(format!("could not start {program}: {source}"));
            let done = rec.finish(RunStatus::Interrupted).map_err(record_error)?;
            recording::print_notes(&done.notes);
            return Err(bad_input(format!("cannot run {program:?}: {source}")));
        }
        Err(e) => return Err(e.into()),
    };
    let status_word = if interrupted {
        RunStatus::Interrupted
    } else {
        RunStatus::Complete
    };
    // The tool wrote its results by the time it exited: read them before
    // the run is finished, so its findings see the client side too.
    let mut refused = None;
    if let Some(path) = &args.client_results {
        let format = args.client_format.as_deref().and_then(Format::parse);
        match rec.import_client_results(path, format) {
            Ok(i) => eprintln!("keisoku: {}", import_line(path, &i)),
            Err(e) if e.is_input() => {
                rec.note(format!("client results not imported: {e}"));
                refused = Some(e.to_string());
            }
            Err(e) => rec.lost(format!("client results: {e}")),
        }
    }
    let done = rec.finish(status_word).map_err(record_error)?;
    let json = &done.run;
    let mut text = summary::header(json);
    text.push_str(&summary::client(json));
    let rest = summary::recorded(json, &done.findings, &done.lost);
    text.push_str(
        rest.strip_prefix(summary::header(json).as_str())
            .unwrap_or(&rest),
    );
    crate::shared::output::print(&text)?;
    recording::print_notes(&done.notes);
    if let Some(reason) = refused {
        eprintln!("keisoku: run {} kept without client results", json.run.id);
        return Err(bad_input(reason));
    }
    if recording::report_lost(&json.run.id, &json.run.status, &done.lost) {
        return Ok(FAILURE);
    }
    if interrupted {
        eprintln!(
            "keisoku: interrupted: run {} kept, marked interrupted",
            json.run.id
        );
        return Ok(FAILURE);
    }
    match status {
        Some(s) if s.success() => Ok(OK),
        Some(s) => {
            eprintln!(
                "keisoku: {program} exited with {s}; run {} kept",
                json.run.id
            );
            Ok(FAILURE)
        }
        None => Ok(FAILURE),
    }
}

/// One line saying what was imported and what lies outside the run.
fn import_line(path: &std::path::Path, i: &keisoku_record::import::Imported) -> String {
    let mut line = format!(
        "imported {} requests from {} ({})",
        i.requests,
        path.display(),
        i.encoding.describe()
    );
    if i.before_run + i.after_run > 0 {
        line.push_str(&format!(
            "; {} ended before the recording started and {} after it ended (kept)",
            i.before_run, i.after_run
        ));
    }
    if !i.per_second {
        line.push_str("; no request times in it: summary and latency distribution only");
    }
    line
}
