//! `keisoku record`: record host, process, profile and access log while any
//! command runs (ab, k6, JMeter, a test suite...).

use crate::exit::{bad_input, FAILURE, OK};
use crate::shared::recorder::{self as recording, record_error, RecorderArgs};
use keisoku_record::command::{CommandEnd, CommandError, Supervisor};
use keisoku_record::{summary, Recording};
use keisoku_store::{NewRun, RunStatus};

/// Flags of `keisoku record`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Record host, process, profile and access log while any command runs",
    long_about = "Run CMD (your own load tool: ab, k6, JMeter...) and record, on one clock, the host \
(per-core CPU, scheduler, memory, disk, network, TCP), the server process given by --pid/--pidof \
(CPU, RSS, threads, context switches, migrations, I/O), its CPU profile and its access log into the \
run store. Ctrl-C or the end of CMD stops the recording; an interrupted recording is kept, marked \
interrupted.",
    after_help = "Examples:\n  keisoku record --pidof nginx --access-log /var/log/nginx/access.log -- ab -n 10000 -c 20 http://127.0.0.1/\n  \
keisoku record --pid 4242 --profile perf --name k6-before -- k6 run script.js\n  keisoku record --interval 100ms -- sleep 60\n\n\
Exit status: 0 ok, 1 CMD failed or the recording was interrupted, 2 bad usage."
)]
pub struct Args {
    #[command(flatten)]
    rec: RecorderArgs,
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
    let done = rec.finish(status_word).map_err(record_error)?;
    let json = &done.run;
    crate::shared::output::print(&summary::recorded(json, &done.findings, &done.lost))?;
    recording::print_notes(&done.notes);
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
