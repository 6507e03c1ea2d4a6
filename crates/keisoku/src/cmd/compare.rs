//! `keisoku compare`: two runs side by side, and a regression gate for CI.

use std::path::PathBuf;

use crate::exit::{bad_input, GATE_FAILED, OK};
use crate::shared::output;
use crate::shared::page::{page_error, write_page};
use crate::shared::store::StoreArg;
use keisoku_report::compare::parse_gate;
use keisoku_report::compare_page::{compare_page, compare_with, CompareOptions};

/// Flags of `keisoku compare`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Gate clauses: METRIC (>|<) [+|-]NUMBER[%|ms|s], comma-separated. `%` is a
change relative to RUN_A; ms/s (latency) or a bare number is an absolute
change. The gate fails (exit 3) when any clause's condition holds:
  p99>+10%     p99 grew by more than 10%
  rps<-5%      throughput fell by more than 5%
  p50>+2ms     median grew by more than 2 ms
Metrics: rps, requests, errors, error_rate, mean, p50, p80, p90, p99, p99.9, max.

Examples:
  keisoku compare before after
  keisoku compare main-build last --fail-on-regression 'p99>+10%,rps<-5%'")]
pub struct Args {
    /// The baseline run (id, prefix, name, `last`, or a Run JSON file).
    pub run_a: String,

    /// The run judged against it.
    pub run_b: String,

    /// Where to write the comparison page; `-` writes to standard output.
    #[arg(short, long, value_name = "FILE", default_value = "compare.html")]
    pub output: PathBuf,

    /// Exit 3 when B regressed past these limits, e.g. 'p99>+10%,rps<-5%'.
    #[arg(long, value_name = "GATE")]
    pub fail_on_regression: Option<String>,

    /// Print the comparison as JSON (deltas, routes, findings new/resolved/
    /// unchanged, top profile changes, gate) instead of the text summary.
    #[arg(long)]
    pub json: bool,

    /// Diff the profiles with raw frame names: keep JIT tier markers
    /// (`JS:*f` vs `JS:^f`), lambda/proxy numbers and addresses.
    #[arg(long = "no-normalise", alias = "no-normalize")]
    pub no_normalise: bool,

    #[command(flatten)]
    pub store: StoreArg,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    // A typo in the gate should fail before any work is done.
    let gate = args
        .fail_on_regression
        .as_deref()
        .map(parse_gate)
        .transpose()
        .map_err(bad_input)?;
    let a = args.store.run_json(&args.run_a)?;
    let b = args.store.run_json(&args.run_b)?;
    let opts = CompareOptions {
        normalise_names: !args.no_normalise,
    };
    let cmp = compare_with(&a, &b, gate.as_deref(), opts).map_err(|e| {
        // Name the input at fault: comparing a run with itself fails only
        // when that run is bad (the error path alone pays for this).
        let culprit = if compare_with(&a, &a, None, opts).is_err() {
            args.run_a.as_str()
        } else if compare_with(&b, &b, None, opts).is_err() {
            args.run_b.as_str()
        } else {
            "compare"
        };
        page_error(culprit, e)
    })?;
    let html = compare_page(&cmp, false).map_err(|e| page_error("compare", e))?;
    write_page(&args.output, html.as_bytes())?;

    // The terminal gets the headline deltas and the verdict (stderr when
    // the page itself went to stdout).
    let text = if args.json {
        format!("{}\n", cmp.summary_json())
    } else {
        cmp.to_string()
    };
    if output::is_stdout(&args.output) {
        eprint!("{text}");
    } else {
        output::print(&text)?;
    }
    Ok(match &cmp.gate {
        Some(v) if !v.pass => GATE_FAILED,
        _ => OK,
    })
}
