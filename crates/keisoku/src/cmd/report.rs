//! `keisoku report`: one self-contained HTML report of a stored run.

use std::path::PathBuf;

use crate::exit::OK;
use crate::shared::page::{page_error, write_page};
use crate::shared::store::StoreArg;
use keisoku_report::run_page::{run_page, PageContext};

/// Flags of `keisoku report`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
The report is one HTML file with everything inlined (charts, flame graph,
data): it opens offline from file:// and fetches nothing.

Examples:
  keisoku report last
  keisoku report bid-before -o before.html
  keisoku export last --format json > run.json && keisoku report run.json")]
pub struct Args {
    /// The run: an id, a unique id prefix, a name, `last`, or a Run JSON
    /// file written by `keisoku export RUN --format json`.
    pub run: String,

    /// Where to write the report; `-` writes to standard output.
    #[arg(short, long, value_name = "FILE", default_value = "report.html")]
    pub output: PathBuf,

    #[command(flatten)]
    pub store: StoreArg,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let json = args.store.run_json(&args.run)?;
    let html = run_page(&json, &PageContext::default()).map_err(|e| page_error(&args.run, e))?;
    write_page(&args.output, html.as_bytes())?;
    Ok(OK)
}
