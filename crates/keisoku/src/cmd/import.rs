//! `keisoku import`: attach another load tool's results (JMeter, k6,
//! vegeta, wrk) to a run recorded without them, on the run's clock.

use crate::exit::{bad_input, OK};
use crate::shared::store::{self, StoreArg};
use keisoku_record::import::{self as importer, Format};
use keisoku_record::summary;
use std::path::PathBuf;

/// Flags of `keisoku import`.
#[derive(clap::Args, Debug)]
#[command(
    about = "Import a load tool's results (JMeter JTL, k6 JSON, vegeta, wrk) into a stored run",
    long_about = "Read FILE, the results another load tool wrote, and store them as RUN's client \
results: throughput, errors and latency per second and per route (label), one phase spanning the \
requests, on the run's clock (requests are placed by when their response ended; those outside the \
recording are kept, and said so). Formats: JMeter JTL (CSV with its header line, or XML), k6 \
`--out json`, vegeta's binary output (what `vegeta attack` writes) or `vegeta encode --to csv` or \
`--to json`, wrk/wrk2 `--latency` text (a summary and \
latency distribution only: wrk prints no request times). The format is detected; a file matching \
none is refused, naming the formats tried. The run's findings are judged again.",
    after_help = "Examples:\n  keisoku record --pidof nginx --name jm -- jmeter -n -t plan.jmx -l out.jtl\n  \
keisoku import jm out.jtl\n  keisoku import last k6.json --client-format k6\n\n\
Exit status: 0 ok, 1 the store could not be written, 2 bad usage, an unknown run, a run that already \
has client results, or a file not understood."
)]
pub struct Args {
    /// The run: an id, a unique id prefix, a name, or `last`.
    #[arg(value_name = "RUN")]
    run: String,
    /// The tool's results file.
    #[arg(value_name = "FILE")]
    file: PathBuf,
    /// The format of FILE (detected when not given).
    #[arg(long, value_name = "FORMAT", value_parser = ["jtl", "k6", "vegeta", "wrk"])]
    client_format: Option<String>,
    #[command(flatten)]
    store: StoreArg,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let (store, id) = args.store.resolve(&args.run)?;
    let info = store.run_info(&id).map_err(store::store_error)?;
    if info.status == keisoku_store::RunStatus::Running.as_str() {
        return Err(bad_input(format!(
            "run {id} is still recording; use `record --client-results` or import once it ends"
        )));
    }
    let format = args.client_format.as_deref().and_then(Format::parse);
    let (imported, _) = match importer::import_into_stored(&store, &id, &args.file, format) {
        Ok(r) => r,
        Err(e) if e.is_input() => return Err(bad_input(e)),
        Err(e) => return Err(e.into()),
    };
    let mut line = format!(
        "keisoku: imported {} requests from {} ({}) into run {id}",
        imported.requests,
        args.file.display(),
        imported.encoding.describe()
    );
    if imported.before_run + imported.after_run > 0 {
        line.push_str(&format!(
            "; {} ended before the run started and {} after it ended (kept)",
            imported.before_run, imported.after_run
        ));
    }
    eprintln!("{line}");
    let json = store.load(&id).map_err(store::store_error)?;
    let mut text = summary::header(&json);
    text.push_str(&summary::client(&json));
    crate::shared::output::print(&text)?;
    Ok(OK)
}
