//! `keisoku export`: a stored run as Run JSON or its series as CSV.

use crate::exit::{bad_input, OK};
use crate::shared::store::{self, StoreArg};
use anyhow::Context as _;
use std::io::Write;

/// Flags of `keisoku export`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Export a stored run as JSON or CSV",
    after_help = "json: the Run JSON of docs/run-json.md (run, results, phases, series, routes, profile, findings).\n\
csv: the run's time series; --csv-form long (default) writes series,unit,t_ms,value per point, \
--csv-form wide one row per time and one column per series (empty where a series has no point).\n\
log: the access-log lines the run kept, byte for byte (line N is the N of `keisoku logs RUN --slow`).\n\n\
Examples:\n  keisoku export last --format json > run.json\n  keisoku export baseline --format csv --csv-form wide -o series.csv\n  \
keisoku export last --format log | sed -n 1234p"
)]
pub struct Args {
    /// The run: id, unique id prefix, name, or `last`.
    #[arg(value_name = "RUN")]
    run: String,
    /// Output format.
    #[arg(long, value_name = "FORMAT", default_value = "json", value_parser = ["json", "csv", "log"])]
    format: String,
    /// CSV layout: long (one row per point) or wide (one column per series).
    #[arg(long, value_name = "FORM", default_value = "long", value_parser = ["long", "wide"])]
    csv_form: String,
    /// Only series whose name starts with this prefix (csv and json), e.g. cpu. or proc.
    #[arg(long, value_name = "PREFIX")]
    series: Option<String>,
    /// Write to FILE instead of stdout.
    #[arg(short = 'o', long, value_name = "FILE")]
    output: Option<std::path::PathBuf>,
    #[command(flatten)]
    store: StoreArg,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    export(args)
}

fn export(args: Args) -> anyhow::Result<u8> {
    let store = store::open_existing(&args.store.path())?;
    let id = store::resolve(&store, &args.run)?;
    let mut out: Box<dyn Write> = match &args.output {
        Some(p) => Box::new(std::io::BufWriter::new(
            std::fs::File::create(p).map_err(|e| bad_input(format!("{}: {e}", p.display())))?,
        )),
        None => Box::new(std::io::BufWriter::new(std::io::stdout().lock())),
    };
    let keep = |name: &str| args.series.as_deref().is_none_or(|p| name.starts_with(p));
    if args.format == "log" {
        let log = store.access_log(&id).map_err(store::store_error)?;
        if log.as_ref().is_none_or(|l| l.kept_lines == 0) {
            return Err(bad_input(format!(
                "run {id} kept no access-log lines{}",
                match &log {
                    None => " (no --access-log, or recorded before keisoku kept lines)",
                    Some(l) if !l.keep_lines => " (recorded with --no-log-lines)",
                    Some(_) => "",
                }
            )));
        }
        let mut lines = store.log_lines(&id).map_err(store::store_error)?;
        // Context keeps the io::Error in the chain: a closed pipe stays quiet.
        std::io::copy(&mut lines, &mut out)
            .with_context(|| format!("run {id}: copying its access-log lines"))?;
    } else if args.format == "csv" {
        let mut series = store.series(&id).map_err(store::store_error)?;
        series.retain(|s| keep(&s.name));
        if args.csv_form == "wide" {
            keisoku_store::csv::write_wide(&mut out, &series)?;
        } else {
            keisoku_store::csv::write_long(&mut out, &series)?;
        }
    } else {
        let mut run = store.load(&id).map_err(store::store_error)?;
        run.series.retain(|s| keep(&s.name));
        serde_json::to_writer(&mut out, &run)?;
        writeln!(out)?;
    }
    out.flush()?;
    Ok(OK)
}
