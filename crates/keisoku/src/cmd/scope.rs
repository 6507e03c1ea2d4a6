//! `keisoku scope`: FlameScope-style subsecond heat map of a profile with
//! per-sample times (perf script, .cpuprofile).

use crate::exit::{bad_input, OK};
use crate::shared::output::write_to;
use crate::shared::profile::{self, FormatArg};
use crate::shared::store::StoreArg;
use anyhow::Context;
use keisoku_stacks::json::{profile_json, JsonOptions};
use keisoku_stacks::Format;

/// Flags of `keisoku scope`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  keisoku scope perf.script -o scope.html\n  keisoku scope app.cpuprofile --rows 20     # heat map in the terminal"
)]
pub struct Args {
    /// Profile with sample times: perf script, .cpuprofile or speedscope (plain or gzip; "-" for stdin),
    /// or a stored run (id, id prefix, name or `last`) recorded with a profile.
    #[arg(value_name = "INPUT")]
    input: String,
    /// Output HTML file (default: a coarse heat map on stdout).
    #[arg(short, long, value_name = "FILE")]
    output: Option<String>,
    /// Cells per second (rows of the heat map).
    #[arg(long, default_value_t = 50)]
    rows: u32,
    /// Count idle samples (cpu_idle, swapper...) too.
    #[arg(long)]
    idle: bool,
    /// Keep only these process ids.
    #[arg(long, value_delimiter = ',')]
    pid: Vec<u32>,
    /// Keep only these thread ids.
    #[arg(long, value_delimiter = ',')]
    tid: Vec<u32>,
    /// Keep only processes whose name matches this regex.
    #[arg(long, value_name = "REGEX")]
    comm: Option<String>,
    /// Title of the page.
    #[arg(long)]
    title: Option<String>,
    /// perf script input with several events: the event to map.
    #[arg(long, value_name = "EVENT")]
    event: Option<String>,
    /// Force the input format instead of detecting it (for inputs too
    /// short or too damaged to detect).
    #[arg(long, value_name = "FORMAT", value_parser = FormatArg)]
    format: Option<Format>,
    #[command(flatten)]
    store: StoreArg,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    if !(1..=1000).contains(&args.rows) {
        return Err(bad_input(format!(
            "--rows {}: expected 1 to 1000",
            args.rows
        )));
    }
    let sel = profile::selection(
        &args.pid,
        &args.tid,
        args.comm.as_deref(),
        None,
        None,
        false,
    )?;
    let profile = profile::load(&args.input, args.format, args.event.clone(), &args.store)?;
    if !profile.has_times() {
        return Err(bad_input(format!(
            "{}: the profile has no per-sample times; scope needs perf script, .cpuprofile or speedscope input",
            args.input
        )));
    }
    let mut profile = keisoku_stacks::filter::select(&profile, &sel).map_err(bad_input)?;
    if let Some(t) = &args.title {
        profile.title = t.clone();
    }
    let Some(heat) = keisoku_stacks::scope::heat_map(&profile, args.rows, args.idle) else {
        return Err(bad_input(format!(
            "{}: no sample times, or samples spread over more than {} hours (one heat-map column per second)",
            args.input,
            keisoku_stacks::scope::MAX_COLUMNS / 3600
        )));
    };
    match &args.output {
        Some(out) => {
            let json = String::from_utf8(profile_json(&profile, JsonOptions::default()))
                .context("profile JSON")?;
            let view = keisoku_report::profile_pages::ScopeView {
                rows: args.rows,
                idle: args.idle,
            };
            let page = keisoku_report::profile_pages::scope_page(&profile.title, &json, &view)
                .map_err(|e| anyhow::anyhow!("rendering the heat map page: {e}"))?;
            write_to(std::path::Path::new(out), page.as_bytes())?;
            eprintln!(
                "keisoku: wrote {out} ({} samples over {} s, busiest cell {})",
                profile.samples.len(),
                heat.columns,
                heat.max
            );
        }
        None => crate::shared::output::print(&heat.render_text())?,
    }
    Ok(OK)
}
