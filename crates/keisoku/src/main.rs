//! The `keisoku` binary: argument parsing and wiring only. Every capability
//! lives in a library crate; each subcommand's flags and glue live in
//! `cmd/<name>.rs`.

mod cmd;
mod exit;
mod shared;
mod signals;

use clap::Parser;
use std::process::ExitCode;

/// keisoku (計測, "measurement"): a performance lab for web services.
///
/// Drive HTTP load at a target, record the host, the server process, its CPU
/// profile and its access log on one clock, and explain the result with
/// tables, flame graphs, heat maps, comparisons and findings.
#[derive(Parser, Debug)]
#[command(name = "keisoku", version, about, long_about, propagate_version = true)]
#[command(
    after_help = "Exit status: 0 ok, 1 runtime failure, 2 bad usage or bad input, 3 an SLO or regression gate failed."
)]
struct Cli {
    #[command(subcommand)]
    command: cmd::Command,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    // Input limits raised through the environment are read by every reader;
    // a value that is not a size is refused once, here, before any work.
    if let Err(e) = keisoku_common::Limits::from_env() {
        eprintln!("keisoku: error: {e}");
        return ExitCode::from(exit::BAD_INPUT);
    }
    match cmd::dispatch(cli.command) {
        Ok(code) => ExitCode::from(code),
        // The reader of our output went away (`| head`): it had enough.
        Err(err) if shared::output::is_broken_pipe(&err) => ExitCode::from(exit::OK),
        Err(err) => {
            eprintln!("keisoku: error: {err:#}");
            ExitCode::from(exit::code_for(&err))
        }
    }
}
