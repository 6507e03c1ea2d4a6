//! `keisoku show`: a stored run's summary, as `keisoku run` printed it.

use crate::exit::OK;
use crate::shared::store::{self, StoreArg};
use keisoku_record::summary;
use std::io::Write;

/// Flags of `keisoku show`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Print a stored run's summary",
    after_help = "RUN is a run id, a unique prefix of one, a run name (its newest run) or `last`.\n\n\
Examples:\n  keisoku show last\n  keisoku show 20261121-2130\n  keisoku show baseline --output server.stderr"
)]
pub struct Args {
    /// The run: id, unique id prefix, name, or `last`.
    #[arg(value_name = "RUN")]
    run: String,
    /// Print one stored output stream instead: server.stdout, server.stderr (of --server-cmd) or notes.
    #[arg(long, value_name = "STREAM")]
    output: Option<String>,
    #[command(flatten)]
    store: StoreArg,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    show(args)
}

fn show(args: Args) -> anyhow::Result<u8> {
    let store = store::open_existing(&args.store.path())?;
    let id = store::resolve(&store, &args.run)?;
    let mut out = std::io::stdout().lock();
    if let Some(stream) = &args.output {
        let bytes = store.output(&id, stream).map_err(store::store_error)?;
        out.write_all(&bytes)?;
        return Ok(OK);
    }
    let run = store.load(&id).map_err(store::store_error)?;
    let notes = store.output(&id, "notes").map_err(store::store_error)?;
    write!(out, "{}", summary::stored(run, &notes))?;
    Ok(OK)
}
