//! `keisoku flame`: a flame graph (HTML, SVG or folded) from a profile file,
//! or a terminal summary of the hottest functions when no -o is given.

use crate::exit::{bad_input, OK};
use crate::shared::output::write_to;
use crate::shared::profile::{load_kind, selection, svg, FormatArg};
use crate::shared::store::StoreArg;
use anyhow::Context;
use keisoku_stacks::callgraph::CallGraph;
use keisoku_stacks::filter::select;
use keisoku_stacks::json::{profile_json, JsonOptions};
use keisoku_stacks::Format;

/// Flags of `keisoku flame`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Output type follows the -o extension: .html (interactive, offline), .svg (flamegraph.pl style), .folded, .speedscope.json (for speedscope.app) or .json (profile JSON).\n\nExamples:\n  keisoku flame perf.script -o flame.html\n  keisoku flame cpu.pprof -o flame.svg --title 'checkout service'\n  keisoku flame perf.script --comm nginx --from 10 --to 12\n  keisoku flame app.cpuprofile            # top functions in the terminal\n  keisoku flame py-spy.speedscope.json -o flame.html\n  keisoku flame isolate-0x1-123-v8.log -o p.speedscope.json\n  keisoku flame request.prof               # cProfile: pstats' table, sorted by tottime\n  keisoku flame profiles/ --callers 'send_log'   # werkzeug's per-request .prof files, merged"
)]
pub struct Args {
    /// Profile: perf script or perf.data, folded, .cpuprofile, pprof, speedscope, JFR, V8 tick log
    /// (node --prof) or its --preprocess JSON, a Chrome trace, bpftrace/DTrace stacks or
    /// cProfile/pstats (plain or gzip; "-" for stdin; a directory of werkzeug's per-request .prof
    /// files), or a stored run (id, id prefix, name or `last`) recorded with a profile.
    #[arg(value_name = "INPUT")]
    input: String,
    /// Output file: .html, .svg, .folded, .speedscope.json or .json (default: a summary on stdout).
    #[arg(short, long, value_name = "FILE")]
    output: Option<String>,
    /// Title shown on the graph (default: the input file name).
    #[arg(long)]
    title: Option<String>,
    /// Keep only these process ids (repeat or comma-separate).
    #[arg(long, value_delimiter = ',')]
    pid: Vec<u32>,
    /// Keep only these thread ids (repeat or comma-separate).
    #[arg(long, value_delimiter = ',')]
    tid: Vec<u32>,
    /// Keep only processes whose name matches this regex.
    #[arg(long, value_name = "REGEX")]
    comm: Option<String>,
    /// Keep samples from this second on: seconds after the first sample of a
    /// file, after the run's start for a stored run (the report's heat map and
    /// timelines use the same clock, so their range labels can be typed here).
    #[arg(long, value_name = "SEC")]
    from: Option<f64>,
    /// Keep samples before this second (same clock as --from).
    #[arg(long, value_name = "SEC")]
    to: Option<f64>,
    /// Invert stacks: leaf functions at the root, their callers above.
    #[arg(long)]
    invert: bool,
    /// Highlight functions matching this regex (HTML opens searching; the summary reports the share).
    #[arg(long, value_name = "REGEX")]
    search: Option<String>,
    /// perf script input with several events: the event to draw (default: the first);
    /// JFR: the event type to draw (default jdk.ExecutionSample; jdk.ObjectAllocationSample, jdk.JavaMonitorEnter...).
    #[arg(long, value_name = "EVENT")]
    event: Option<String>,
    /// Force the input format instead of detecting it.
    #[arg(long, value_name = "FORMAT", value_parser = FormatArg)]
    format: Option<Format>,
    /// Rows in the terminal summary.
    #[arg(long, default_value_t = 20)]
    top: usize,
    /// cProfile/pstats input: print the callers and callees of the functions
    /// whose pstats label matches this regex, with each edge's recorded numbers.
    #[arg(long, value_name = "REGEX")]
    callers: Option<String>,
    /// cProfile/pstats input: order of the terminal table, as pstats' sort_stats
    /// names it (tottime, cumtime or ncalls).
    #[arg(long, value_name = "KEY", default_value = "tottime", value_parser = ["tottime", "time", "cumtime", "cumulative", "ncalls", "calls"])]
    sort: String,
    /// A stored run's profile to draw: cpu (on-CPU samples) or wall (wall-clock:
    /// every thread at every tick, waiting or running; recorded with --profile py-spy).
    #[arg(long, value_name = "KIND", default_value = "cpu", value_parser = ["cpu", "wall"])]
    kind: String,
    #[command(flatten)]
    store: StoreArg,
}

/// Whether `-o` names a speedscope file (`x.speedscope.json`) rather than
/// keisoku's own profile JSON (`x.json`).
fn is_speedscope(path: &str) -> bool {
    path.to_ascii_lowercase().ends_with(".speedscope.json")
}

fn extension(path: &str) -> &str {
    let p = path.strip_suffix(".gz").unwrap_or(path);
    p.rsplit_once('.').map_or("", |(_, e)| e)
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let search = args
        .search
        .as_deref()
        .map(|s| regex::Regex::new(s).map_err(|e| bad_input(format!("--search {s:?}: {e}"))))
        .transpose()?;
    let sel = selection(
        &args.pid,
        &args.tid,
        args.comm.as_deref(),
        args.from,
        args.to,
        args.invert,
    )?;
    let kind = args.output.as_deref().map(extension);
    if let Some(k) = kind {
        if !matches!(k, "html" | "htm" | "svg" | "folded" | "txt" | "json") {
            return Err(bad_input(format!(
                "-o {}: unknown output type {k:?} (expected .html, .svg, .folded, .speedscope.json or .json)",
                args.output.as_deref().unwrap_or_default()
            )));
        }
    }
    let callers = args
        .callers
        .as_deref()
        .map(|s| regex::Regex::new(s).map_err(|e| bad_input(format!("--callers {s:?}: {e}"))))
        .transpose()?;
    if callers.is_some() && args.output.is_some() {
        return Err(bad_input(
            "--callers prints a table on the terminal; leave out -o",
        ));
    }
    let profile_kind = keisoku_store::ProfileKind::from_name(&args.kind)
        .ok_or_else(|| bad_input(format!("--kind {}: expected cpu or wall", args.kind)))?;
    let loaded = load_kind(
        &args.input,
        args.format,
        args.event.clone(),
        &args.store,
        profile_kind,
    )?;
    if callers.is_some() && loaded.callgraph.is_none() {
        return Err(bad_input(format!(
            "--callers needs a call-graph profile (cProfile/pstats); {} holds sampled stacks",
            args.input
        )));
    }
    // The summary and the HTML page read the stacks root first: inverted,
    // a stack's last frame is its outermost caller, and the summary would
    // name `__libc_start_call_main` as the top self function (issue 13).
    // The page inverts in the browser, where its function table knows.
    let drawn_inverted = args.invert
        && (matches!(kind, Some("svg" | "folded" | "txt"))
            || args.output.as_deref().is_some_and(is_speedscope));
    let sel = keisoku_stacks::filter::Selection {
        invert: drawn_inverted,
        ..sel
    };
    let mut profile = select(&loaded, &sel).map_err(bad_input)?;
    drop(loaded);
    if let Some(t) = &args.title {
        profile.title = t.clone();
    }
    if profile.total_weight() == 0 {
        return Err(bad_input(format!(
            "{}: no samples left after filtering",
            args.input
        )));
    }
    let Some(output) = args.output.as_deref() else {
        let text = match profile.callgraph.as_deref() {
            Some(g) => call_graph_text(g, &args, search.as_ref(), callers.as_ref()),
            None => keisoku_stacks::summary::render_text(&profile, search.as_ref(), args.top),
        };
        crate::shared::output::print(&text)?;
        return Ok(OK);
    };
    let body: Vec<u8> = match kind.unwrap_or("") {
        "html" | "htm" => {
            let json = profile_json(&profile, JsonOptions::default());
            let json = String::from_utf8(json).context("profile JSON is not UTF-8")?;
            let view = keisoku_report::profile_pages::FlameView {
                search: args.search.clone(),
                icicle: false,
                invert: args.invert,
            };
            keisoku_report::profile_pages::flame_page_with(&profile.title, &json, &view)
                .map_err(|e| anyhow::anyhow!("rendering the flame graph page: {e}"))?
                .into_bytes()
        }
        "svg" => svg(&profile, &keisoku_stacks::collapse::folded_text(&profile))?,
        "json" if is_speedscope(output) => keisoku_stacks::speedscope::write(&profile),
        "json" => profile_json(&profile, JsonOptions::default()),
        _ => keisoku_stacks::collapse::folded_text(&profile).into_bytes(),
    };
    write_to(std::path::Path::new(output), &body)?;
    if profile.callgraph.is_some() {
        eprintln!(
            "keisoku: {output}: the stacks are {}",
            keisoku_stacks::callgraph::ESTIMATED
        );
    }
    eprintln!(
        "keisoku: wrote {output} ({} samples, {} functions, {} stacks)",
        profile.total_weight(),
        profile.frames.len(),
        // The folded file's line count, not the prefix tree's nodes.
        keisoku_stacks::summary::distinct_stacks(&profile)
    );
    Ok(OK)
}

/// The terminal text of a call-graph input: the requests of a werkzeug
/// directory, then pstats' table, or the callers and callees asked for.
fn call_graph_text(
    g: &CallGraph,
    args: &Args,
    search: Option<&regex::Regex>,
    callers: Option<&regex::Regex>,
) -> String {
    use keisoku_stacks::callgraph::{render_callers, render_requests, render_table, SortKey};
    if let Some(re) = callers {
        return render_callers(g, re);
    }
    // The value parser admits only pstats' names.
    let key = SortKey::from_name(&args.sort).unwrap_or(SortKey::Tottime);
    let mut text = render_requests(g, args.top);
    text.push_str(&render_table(g, key, args.top, search));
    text.push_str(&format!(
        "\nThe table is as recorded; flame graphs of this input (-o) are {}.\n",
        keisoku_stacks::callgraph::ESTIMATED
    ));
    text
}
