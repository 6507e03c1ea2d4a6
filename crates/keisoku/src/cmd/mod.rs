//! One module per subcommand. Each exposes `Args` (its clap flags) and
//! `run(args) -> anyhow::Result<u8>` returning the exit status.

use clap::Subcommand;

pub mod bench;
pub mod collapse;
pub mod compare;
pub mod demo;
pub mod diff;
pub mod export;
pub mod flame;
pub mod import;
pub mod logs;
pub mod record;
pub mod report;
pub mod rm;
pub mod run;
pub mod runs;
pub mod scope;
pub mod serve;
pub mod show;

/// The subcommands. Bench, Run and Logs are boxed: their many flags make
/// them far larger than the others.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Drive HTTP load at a target and measure latency honestly.
    Bench(Box<bench::Args>),
    /// Start the built-in demo target, load it, and explain what was found.
    Demo(demo::Args),
    /// Fold stacks from a profile (stackcollapse-perf.pl compatible for perf script input).
    Collapse(collapse::Args),
    /// Draw a flame graph (HTML, SVG or folded) from a profile or a stored run.
    Flame(flame::Args),
    /// Compare two profiles: a differential flame graph and a table of regressions.
    Diff(diff::Args),
    /// Subsecond heat map of a profile (FlameScope style).
    Scope(scope::Args),
    /// Analyse access logs per route (alp-compatible).
    Logs(Box<logs::Args>),
    /// Load a target while recording host, process, profile and access log into the run store.
    Run(Box<run::Args>),
    /// Record host, process, profile and access log while any command runs.
    Record(record::Args),
    /// Import a load tool's results (JMeter JTL, k6 JSON, vegeta, wrk) into a stored run.
    Import(import::Args),
    /// List stored runs, newest first.
    Runs(runs::Args),
    /// Print a stored run's summary.
    Show(show::Args),
    /// Export a stored run as JSON or CSV.
    Export(export::Args),
    /// Delete stored runs.
    Rm(rm::Args),
    /// Write one self-contained HTML report for a stored run.
    Report(report::Args),
    /// Compare two stored runs (HTML page and regression gate).
    Compare(compare::Args),
    /// Browse stored runs in a web browser.
    Serve(serve::Args),
}

pub fn dispatch(command: Command) -> anyhow::Result<u8> {
    match command {
        Command::Bench(a) => bench::run(*a),
        Command::Demo(a) => demo::run(a),
        Command::Collapse(a) => collapse::run(a),
        Command::Flame(a) => flame::run(a),
        Command::Diff(a) => diff::run(a),
        Command::Scope(a) => scope::run(a),
        Command::Logs(a) => logs::run(*a),
        Command::Run(a) => run::run(*a),
        Command::Record(a) => record::run(a),
        Command::Import(a) => import::run(a),
        Command::Runs(a) => runs::run(a),
        Command::Show(a) => show::run(a),
        Command::Export(a) => export::run(a),
        Command::Rm(a) => rm::run(a),
        Command::Report(a) => report::run(a),
        Command::Compare(a) => compare::run(a),
        Command::Serve(a) => serve::run(a),
    }
}
