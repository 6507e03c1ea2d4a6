//! `keisoku rm`: delete stored runs.

use crate::exit::{bad_input, OK};
use crate::shared::store::{self, StoreArg};

/// Flags of `keisoku rm`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Delete stored runs",
    after_help = "Every RUN is resolved before anything is deleted: one unknown RUN, or one still being recorded, deletes nothing (exit 2).\n\n\
Examples:\n  keisoku rm last\n  keisoku rm 20261121-2130 baseline"
)]
pub struct Args {
    /// Runs: ids, unique id prefixes, names, or `last`.
    #[arg(value_name = "RUN", required = true)]
    runs: Vec<String>,
    #[command(flatten)]
    store: StoreArg,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let store = store::open_existing(&args.store.path())?;
    let mut ids = Vec::new();
    for spec in &args.runs {
        let id = store::resolve(&store, spec)?;
        if !ids.contains(&id) {
            ids.push(id);
        }
    }
    // A run still being recorded would lose its summary, and its recorder
    // would fail at the end: nothing is deleted while one of them runs.
    let mut running = Vec::new();
    for id in &ids {
        let info = store.run_info(id).map_err(store::store_error)?;
        if info.status == keisoku_store::RunStatus::Running.as_str() {
            running.push(id.as_str());
        }
    }
    if !running.is_empty() {
        return Err(bad_input(format!(
            "run {} is still recording (status running); stop its keisoku first, nothing was removed",
            running.join(", ")
        )));
    }
    for id in &ids {
        store.remove(id).map_err(store::store_error)?;
        eprintln!("removed {id}");
    }
    Ok(OK)
}
