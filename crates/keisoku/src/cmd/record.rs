//! `keisoku record`: record host, process, profile and access log while any
//! command runs (ab, k6, JMeter, a test suite...).

use crate::exit::{bad_input, FAILURE, OK};
use crate::recording::{self, recorder::Recording, summary, RecorderArgs};
use keisoku_store::{NewRun, RunStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

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
    let pid = args.rec.process()?;
    let tags = args.rec.tag_map()?;
    let new_run = NewRun {
        name: args.rec.name.clone(),
        tags,
        command: recording::command_line(),
        ..NewRun::default()
    };
    let opts = args.rec.options(pid, new_run)?;
    let Some((program, rest)) = args.command.split_first() else {
        return Err(bad_input("no command given after --"));
    };
    let stop = Arc::new(AtomicBool::new(false));
    let stop_h = Arc::clone(&stop);
    let _ = ctrlc::set_handler(move || {
        if stop_h.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
    });
    let mut rec = Recording::start(opts)?;
    eprintln!(
        "keisoku: recording run {} while `{}` runs",
        rec.run,
        args.command.join(" ")
    );
    let mut child = match std::process::Command::new(program).args(rest).spawn() {
        Ok(c) => c,
        Err(e) => {
            rec.note(format!("could not start {program}: {e}"));
            let (_, notes) = rec.finish(RunStatus::Interrupted)?;
            recording::print_notes(&notes);
            return Err(bad_input(format!("cannot run {program:?}: {e}")));
        }
    };
    let mut interrupted = false;
    let mut watched_gone = false;
    let status = loop {
        if let Ok(Some(s)) = child.try_wait() {
            break Some(s);
        }
        if stop.load(Ordering::SeqCst) {
            interrupted = true;
            // A Ctrl-C from a terminal reached CMD too; a signal sent to
            // keisoku alone did not: ask CMD to stop as well.
            // SAFETY: kill(2) on the child we started.
            unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            let deadline = std::time::Instant::now() + Duration::from_secs(5);
            while std::time::Instant::now() < deadline {
                if let Ok(Some(_)) = child.try_wait() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(20));
            }
            let _ = child.kill();
            break child.wait().ok();
        }
        if let Some(p) = pid {
            if !watched_gone && !recording::recorder::alive(p) {
                watched_gone = true;
                rec.note(format!(
                    "the watched process {p} exited during the recording"
                ));
            }
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let status_word = if interrupted {
        RunStatus::Interrupted
    } else {
        RunStatus::Complete
    };
    let (json, notes) = rec.finish(status_word)?;
    print!("{}", summary::header(&json));
    print!("{}", summary::server(&json));
    recording::print_notes(&notes);
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
