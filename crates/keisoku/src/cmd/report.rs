//! `keisoku report`: one self-contained HTML report of a stored run.

use anyhow::Context;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::exit::{bad_input, OK};
use keisoku_report::run_page::{run_page, PageContext};
use keisoku_report::ReportError;

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

    /// The run store [default: $KEISOKU_STORE, else ./.keisoku/runs.db].
    #[arg(long, value_name = "PATH")]
    pub store: Option<PathBuf>,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let json = load_run_json(&args.run, args.store.as_deref())?;
    let html = run_page(&json, &PageContext::default()).map_err(|e| page_error(&args.run, e))?;
    write_output(&args.output, &html)?;
    if args.output.as_os_str() != "-" {
        eprintln!(
            "keisoku: wrote {} ({})",
            args.output.display(),
            size(html.len())
        );
    }
    Ok(OK)
}

/// The Run JSON of `spec`: a file when one exists at that path, else a run
/// in the store. Unknown runs and unreadable files are input errors.
pub(crate) fn load_run_json(spec: &str, store: Option<&Path>) -> anyhow::Result<String> {
    let path = Path::new(spec);
    if path.is_file() {
        return std::fs::read_to_string(path)
            .map_err(|e| bad_input(format!("cannot read {}: {e}", path.display())));
    }
    if spec.ends_with(".json") {
        return Err(bad_input(format!("no such file: {spec}")));
    }
    let store_file = keisoku_store::store_path(store);
    let db = keisoku_store::Store::open_existing(&store_file).map_err(store_error)?;
    let id = db.resolve(spec).map_err(store_error)?;
    let run = db
        .load(&id)
        .with_context(|| format!("cannot read run {id} from {}", store_file.display()))?;
    serde_json::to_string(&run).with_context(|| format!("cannot encode run {id}"))
}

/// Store errors about what the user asked for exit 2; the rest exit 1.
pub(crate) fn store_error(e: keisoku_store::StoreError) -> anyhow::Error {
    if e.is_user_error() {
        bad_input(format!("{e} (list runs with `keisoku runs`)"))
    } else {
        anyhow::Error::new(e)
    }
}

/// Malformed Run JSON is the user's input; a missing bundle is ours.
pub(crate) fn page_error(spec: &str, e: ReportError) -> anyhow::Error {
    match e {
        ReportError::Json(_) | ReportError::Invalid(_) => bad_input(format!("{spec}: {e}")),
        other => anyhow::Error::new(other),
    }
}

/// Writes a page to a file, or to stdout for `-`.
pub(crate) fn write_output(path: &Path, html: &str) -> anyhow::Result<()> {
    if path.as_os_str() == "-" {
        let mut out = std::io::stdout().lock();
        out.write_all(html.as_bytes())
            .and_then(|()| out.flush())
            .context("cannot write to standard output")
    } else {
        std::fs::write(path, html).with_context(|| format!("cannot write {}", path.display()))
    }
}

pub(crate) fn size(bytes: usize) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
    } else {
        format!("{:.0} KiB", (bytes as f64 / 1024.0).ceil())
    }
}
