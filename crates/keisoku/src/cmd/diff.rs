//! `keisoku diff`: compare two profiles: a differential flame graph, a
//! table of regressions and improvements, and a CI gate (`--fail-if`).

use crate::exit::{bad_input, GATE_FAILED, OK};
use crate::shared::output::write_to;
use crate::shared::profile::{self, FormatArg};
use crate::shared::store::StoreArg;
use anyhow::Context;
use keisoku_stacks::diff::{diff, diff_folded_text, diff_svg, render_table, Gate};
use keisoku_stacks::normalise::normalise;
use keisoku_stacks::Format;

/// Flags of `keisoku diff`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Output type follows the -o extension: .html (interactive), .svg (inferno differential) or .folded (difffolded.pl: stack before after).\n\nExamples:\n  keisoku diff before.perf after.perf -o diff.html --normalize\n  keisoku diff base.pprof new.pprof --fail-if 'json\\.Marshal>+5%'\n\nExit status 3 when a --fail-if gate fails."
)]
pub struct Args {
    /// The profile before the change (a file, or a stored run).
    #[arg(value_name = "BEFORE")]
    before: String,
    /// The profile after the change (a file, or a stored run).
    #[arg(value_name = "AFTER")]
    after: String,
    /// Output file: .html, .svg or .folded (default: the table on stdout).
    #[arg(short, long, value_name = "FILE")]
    output: Option<String>,
    /// Compare shares of each profile's total instead of absolute weights.
    #[arg(long)]
    normalize: bool,
    /// Keep raw frame names: by default JIT tier markers (`JS:*f` vs
    /// `JS:^f`), Java lambda/proxy numbers, addresses and perf-map pids are
    /// mapped to one name on both sides, so a re-JITted function is not
    /// reported as one vanished and one new function.
    #[arg(long = "no-normalise", alias = "no-normalize-names")]
    no_normalise: bool,
    /// Fail (exit 3) when a function matching REGEX grew by more than N percent
    /// of its total weight (of its share with --normalize), e.g. 'malloc>+5%'. Repeatable.
    #[arg(long = "fail-if", value_name = "REGEX>+N%")]
    fail_if: Vec<String>,
    /// Title of the page.
    #[arg(long)]
    title: Option<String>,
    /// Rows of the terminal table.
    #[arg(long, default_value_t = 15)]
    top: usize,
    /// perf script inputs with several events: the event to compare.
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
    let gates: Vec<Gate> = args
        .fail_if
        .iter()
        .map(|g| Gate::parse(g).map_err(bad_input))
        .collect::<anyhow::Result<_>>()?;
    let ext = args
        .output
        .as_deref()
        .map(|o| o.rsplit_once('.').map_or("", |(_, e)| e).to_owned());
    if let Some(e) = &ext {
        if !matches!(e.as_str(), "html" | "htm" | "svg" | "folded" | "txt") {
            return Err(bad_input(format!(
                "-o: unknown output type {e:?} (expected .html, .svg or .folded)"
            )));
        }
    }
    let before = profile::load(&args.before, args.format, args.event.clone(), &args.store)?;
    let after = profile::load(&args.after, args.format, args.event.clone(), &args.store)?;
    let (before, after) = if args.no_normalise {
        (before, after)
    } else {
        (normalise(&before), normalise(&after))
    };
    let d = diff(before, after, args.normalize);
    match (args.output.as_deref(), ext.as_deref()) {
        (None, _) => crate::shared::output::print(&render_table(&d, args.top))?,
        (Some(out), Some("html" | "htm")) => {
            let json = String::from_utf8(keisoku_stacks::json::diff_json(&d))
                .context("diff JSON is not UTF-8")?;
            let title = args
                .title
                .clone()
                .unwrap_or_else(|| format!("{} → {}", args.before, args.after));
            let page = keisoku_report::profile_pages::diff_page(&title, &json)
                .map_err(|e| anyhow::anyhow!("rendering the diff page: {e}"))?;
            write_to(std::path::Path::new(out), page.as_bytes())?;
            eprintln!("keisoku: wrote {out}");
        }
        (Some(out), Some("svg")) => {
            let title = args
                .title
                .clone()
                .unwrap_or_else(|| format!("{} → {}", args.before, args.after));
            write_to(std::path::Path::new(out), diff_svg(&d, &title).as_bytes())?;
            eprintln!("keisoku: wrote {out}");
        }
        (Some(out), _) => {
            write_to(std::path::Path::new(out), diff_folded_text(&d).as_bytes())?;
        }
    }
    let mut failed = false;
    for msg in gates.iter().flat_map(|g| g.failure_messages(&d)) {
        failed = true;
        eprintln!("keisoku: {msg}");
    }
    Ok(if failed { GATE_FAILED } else { OK })
}
