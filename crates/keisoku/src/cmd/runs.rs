//! `keisoku runs`: the stored runs, newest first.

use crate::exit::OK;
use crate::shared::store::{self, StoreArg};
use std::io::Write;

/// Flags of `keisoku runs`.
#[derive(clap::Args, Debug)]
#[command(
    about = "List stored runs, newest first",
    after_help = "Columns: id, name, started (UTC), duration, target, status (running, complete, \
interrupted), requests/s and p99 latency of the measured phases.\n\n\
Examples:\n  keisoku runs\n  keisoku runs --json | jq '.[0].id'\n  keisoku runs --store /data/lab.db"
)]
pub struct Args {
    /// Print a JSON array instead of the table.
    #[arg(long)]
    json: bool,
    #[command(flatten)]
    store: StoreArg,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    runs(args)
}

fn runs(args: Args) -> anyhow::Result<u8> {
    let path = args.store.path();
    let runs = if path.exists() {
        store::open_existing(&path)?
            .list()
            .map_err(store::store_error)?
    } else {
        Vec::new()
    };
    let mut out = std::io::stdout().lock();
    if args.json {
        serde_json::to_writer_pretty(&mut out, &runs)?;
        writeln!(out)?;
        return Ok(OK);
    }
    if runs.is_empty() {
        eprintln!(
            "no runs in {} yet; record one with `keisoku run --target URL` or `keisoku record -- CMD`",
            path.display()
        );
        return Ok(OK);
    }
    write!(out, "{}", keisoku_record::summary::runs_table(&runs))?;
    Ok(OK)
}
