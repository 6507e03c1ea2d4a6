//! `keisoku record`: record host, process, profile and access log while any
//! command runs (ab, k6, JMeter, a test suite...).

use crate::exit::{bad_input, FAILURE, OK};
use crate::recording::{self, record_error, RecorderArgs};
use keisoku_record::{summary, Recording};
use keisoku_store::{NewRun, RunStatus};
use std::process::ExitStatus;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

/// What ends the wait for CMD.
enum Event {
    /// CMD exited (its status, when it could be read).
    Exited(Option<ExitStatus>),
    /// Ctrl-C, SIGINT or SIGTERM reached keisoku.
    Interrupt,
}

/// Asks CMD to stop after an interruption (TERM, KILL 5 s later) and
/// returns how it ended. A Ctrl-C from a terminal reached CMD too; a signal
/// sent to keisoku alone did not.
fn stop_cmd(pid: i32, happened: &mpsc::Receiver<Event>) -> Option<ExitStatus> {
    // SAFETY: kill(2) on the child we started. Only its waiter reaps it and
    // reports at once, so the pid could only be someone else's if the pid
    // space wrapped around within those microseconds.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        match happened.recv_timeout(left) {
            Ok(Event::Exited(s)) => return s,
            Ok(Event::Interrupt) => {}
            Err(mpsc::RecvTimeoutError::Timeout) => break,
            Err(mpsc::RecvTimeoutError::Disconnected) => return None,
        }
    }
    // SAFETY: as above; the waiter has not reported an exit.
    unsafe { libc::kill(pid, libc::SIGKILL) };
    loop {
        match happened.recv() {
            Ok(Event::Exited(s)) => return s,
            Ok(Event::Interrupt) => {}
            Err(_) => return None,
        }
    }
}

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
    // The main thread sleeps until something happens (CMD exits, Ctrl-C)
    // instead of polling: a recorder's own CPU use is part of what it costs.
    let (events, happened) = mpsc::channel::<Event>();
    let stop = Arc::new(AtomicBool::new(false));
    let stop_h = Arc::clone(&stop);
    let on_signal = events.clone();
    let _ = ctrlc::set_handler(move || {
        if stop_h.swap(true, Ordering::SeqCst) {
            std::process::exit(130);
        }
        let _ = on_signal.send(Event::Interrupt);
    });
    let mut rec = Recording::start(opts).map_err(record_error)?;
    eprintln!(
        "keisoku: recording run {} while `{}` runs",
        rec.run,
        args.command.join(" ")
    );
    let mut child = match std::process::Command::new(program).args(rest).spawn() {
        Ok(c) => c,
        Err(e) => {
            rec.note(format!("could not start {program}: {e}"));
            let done = rec.finish(RunStatus::Interrupted).map_err(record_error)?;
            recording::print_notes(&done.notes);
            return Err(bad_input(format!("cannot run {program:?}: {e}")));
        }
    };
    let child_pid = child.id() as i32;
    std::thread::Builder::new()
        .name("keisoku-cmd-wait".into())
        .spawn(move || {
            let _ = events.send(Event::Exited(child.wait().ok()));
        })?;
    let mut interrupted = false;
    let mut watched_gone = false;
    let status = loop {
        match happened.recv_timeout(Duration::from_secs(1)) {
            Ok(Event::Exited(s)) => break s,
            Ok(Event::Interrupt) => {
                interrupted = true;
                break stop_cmd(child_pid, &happened);
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break None,
        }
        if let Some(p) = pid {
            if !watched_gone && !keisoku_record::alive(p) {
                watched_gone = true;
                rec.note(format!(
                    "the watched process {p} exited during the recording"
                ));
            }
        }
    };
    let status_word = if interrupted {
        RunStatus::Interrupted
    } else {
        RunStatus::Complete
    };
    let done = rec.finish(status_word).map_err(record_error)?;
    let json = &done.run;
    print!("{}", summary::header(json));
    print!("{}", summary::server(json));
    print!("{}", keisoku_findings::render_text(&done.findings));
    recording::print_notes(&done.notes);
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
