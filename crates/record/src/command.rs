//! The command `keisoku record` runs while it records (the user's own load
//! tool: ab, k6, JMeter...): started, waited for, stopped on an
//! interruption (TERM, then KILL 5 s later), with a note when the watched
//! server exits meanwhile.

use crate::Recording;
use std::process::{Command, ExitStatus};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

/// How long an interrupted command has between TERM and KILL.
const GRACE: Duration = Duration::from_secs(5);

/// What ends the wait for the command.
enum Event {
    /// It exited (its status, when it could be read).
    Exited(Option<ExitStatus>),
    /// Ctrl-C, SIGINT or SIGTERM reached keisoku.
    Interrupt,
}

/// Hands an interruption (a signal keisoku received) to a [`Supervisor`];
/// cheap to clone into a signal handler.
#[derive(Clone)]
pub struct Interrupter(Sender<Event>);

impl Interrupter {
    /// Asks the supervised command to stop; the recording is then kept,
    /// marked interrupted.
    pub fn interrupt(&self) {
        let _ = self.0.send(Event::Interrupt);
    }
}

/// Why the command could not be run.
#[derive(Debug, thiserror::Error)]
pub enum CommandError {
    /// The program could not be started (not found, not executable).
    #[error("cannot run {program:?}: {source}")]
    Spawn {
        /// The program as given.
        program: String,
        /// Why.
        source: std::io::Error,
    },
    /// The thread that waits for it could not be started.
    #[error(transparent)]
    Thread(std::io::Error),
}

/// How the command ended.
#[derive(Debug)]
pub struct CommandEnd {
    /// Its exit status, when it could be read.
    pub status: Option<ExitStatus>,
    /// An interruption stopped it.
    pub interrupted: bool,
}

/// Runs one command while a recording goes on. Created before the signal
/// handler is installed, so an interruption that arrives before the
/// command starts still stops it.
pub struct Supervisor {
    events: Sender<Event>,
    happened: Receiver<Event>,
}

impl Default for Supervisor {
    fn default() -> Self {
        Supervisor::new()
    }
}

impl Supervisor {
    /// A supervisor with nothing started yet.
    pub fn new() -> Supervisor {
        let (events, happened) = mpsc::channel();
        Supervisor { events, happened }
    }

    /// What a signal handler calls.
    pub fn interrupter(&self) -> Interrupter {
        Interrupter(self.events.clone())
    }

    /// Starts `program` with `args` and waits until it exits or an
    /// interruption arrives (then stops it). While it runs, a note goes to
    /// `rec` when the `watched` process exits.
    pub fn run(
        self,
        program: &str,
        args: &[String],
        rec: &mut Recording,
        watched: Option<u32>,
    ) -> Result<CommandEnd, CommandError> {
        // It dies with keisoku (kill -9 included): a load tool left running
        // would load the server for nobody, and skew the next recording.
        let mut child = keisoku_probe::die_with_parent(&mut Command::new(program))
            .args(args)
            .spawn()
            .map_err(|source| CommandError::Spawn {
                program: program.to_string(),
                source,
            })?;
        let child_pid = child.id() as i32;
        let events = self.events;
        std::thread::Builder::new()
            .name("keisoku-cmd-wait".into())
            .spawn(move || {
                let _ = events.send(Event::Exited(child.wait().ok()));
            })
            .map_err(CommandError::Thread)?;
        // The thread sleeps until something happens (the command exits,
        // Ctrl-C) instead of polling: a recorder's own CPU use is part of
        // what it costs. Once a second it checks the watched process.
        let mut watched_gone = false;
        loop {
            match self.happened.recv_timeout(Duration::from_secs(1)) {
                Ok(Event::Exited(status)) => {
                    return Ok(CommandEnd {
                        status,
                        interrupted: false,
                    })
                }
                Ok(Event::Interrupt) => {
                    return Ok(CommandEnd {
                        status: stop(child_pid, &self.happened),
                        interrupted: true,
                    })
                }
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    return Ok(CommandEnd {
                        status: None,
                        interrupted: false,
                    })
                }
            }
            if let Some(p) = watched {
                if !watched_gone && !crate::alive(p) {
                    watched_gone = true;
                    rec.note(format!(
                        "the watched process {p} exited during the recording"
                    ));
                }
            }
        }
    }
}

/// Asks the command to stop after an interruption (TERM, KILL after
/// [`GRACE`]) and returns how it ended. A Ctrl-C from a terminal reached it
/// too; a signal sent to keisoku alone did not.
fn stop(pid: i32, happened: &Receiver<Event>) -> Option<ExitStatus> {
    // SAFETY: kill(2) on the child we started. Only its waiter reaps it and
    // reports at once, so the pid could only be someone else's if the pid
    // space wrapped around within those microseconds.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let deadline = Instant::now() + GRACE;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match happened.recv_timeout(left) {
            Ok(Event::Exited(s)) => return s,
            Ok(Event::Interrupt) => {}
            Err(RecvTimeoutError::Timeout) => break,
            Err(RecvTimeoutError::Disconnected) => return None,
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
