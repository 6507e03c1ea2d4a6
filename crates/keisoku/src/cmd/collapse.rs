//! `keisoku collapse`: fold stacks. `collapse perf` is stackcollapse-perf.pl
//! compatible (same flags, byte-identical sorted output); `collapse FILE`
//! folds any supported profile format; `-o x.speedscope.json` (or
//! `--output-format speedscope`) writes speedscope JSON as `flame` does.

use crate::exit::{bad_input, OK};
use crate::shared::output::is_stdout;
use crate::shared::profile::{classify, FormatArg};
use anyhow::Context;
use keisoku_stacks::collapse::{fold_perf, fold_profile, PerfFoldOptions};
use keisoku_stacks::{Format, Input, ReadOptions};
use std::io::Write;

/// Flags of `keisoku collapse`.
#[derive(clap::Args, Debug)]
#[command(
    after_help = "Examples:\n  perf script | keisoku collapse perf > out.folded\n  keisoku collapse perf --all --pid perf.script.gz\n  keisoku collapse profile.cpuprofile\n  keisoku collapse cpu.pprof > go.folded\n  keisoku collapse --format speedscope py-spy.json\n  keisoku collapse app.jfr --event ObjectAllocationSample   # bytes allocated, per stack\n  keisoku collapse perf.script -o perf.speedscope.json       # for speedscope.app"
)]
pub struct Args {
    /// `perf` (then FILE), or a profile file in any supported format ("-" for stdin).
    #[arg(value_name = "perf|FILE")]
    first: String,
    /// The perf script file after `perf` (default: stdin).
    #[arg(value_name = "FILE")]
    file: Option<String>,
    /// Include the PID with process names.
    #[arg(long)]
    pid: bool,
    /// Include the TID and PID with process names.
    #[arg(long)]
    tid: bool,
    /// Annotate kernel functions with _[k].
    #[arg(long)]
    kernel: bool,
    /// Annotate JIT functions (from /tmp/perf-PID.map) with _[j].
    #[arg(long)]
    jit: bool,
    /// All annotations (--kernel --jit).
    #[arg(long)]
    all: bool,
    /// Include raw addresses where symbols cannot be found.
    #[arg(long)]
    addrs: bool,
    /// Keep only samples of this event (default: the first event in the input).
    #[arg(long, value_name = "EVENT")]
    event_filter: Option<String>,
    /// The event to fold, as `flame --event`: perf script input with several
    /// events (as --event-filter); JFR: the event type (default
    /// jdk.ExecutionSample; ObjectAllocationSample weighs bytes,
    /// JavaMonitorEnter and ThreadPark nanoseconds, or a wall-clock event).
    #[arg(long, value_name = "EVENT")]
    event: Option<String>,
    /// Write to this file instead of standard output; a name ending in
    /// `.speedscope.json` writes speedscope JSON.
    #[arg(short, long, value_name = "FILE")]
    output: Option<String>,
    /// `folded` (stackcollapse lines) or `speedscope` (speedscope's file
    /// format, as `flame -o x.speedscope.json` writes it). Default: from
    /// the -o name, else folded.
    #[arg(long, value_name = "FORMAT", value_parser = ["folded", "speedscope"])]
    output_format: Option<String>,
    /// Force the input format instead of detecting it.
    #[arg(long, value_name = "FORMAT", value_parser = FormatArg)]
    format: Option<Format>,
    /// Worker threads for perf script input (default: all cores).
    #[arg(long, short = 'j', value_name = "N")]
    threads: Option<usize>,
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let (path, perf_forced) = if args.first == "perf" {
        (args.file.clone().unwrap_or_else(|| "-".into()), true)
    } else {
        if args.file.is_some() {
            return Err(bad_input(format!(
                "collapse: unexpected second argument {:?} (only `collapse perf FILE` takes two)",
                args.file.as_deref().unwrap_or_default()
            )));
        }
        (args.first.clone(), false)
    };
    // `collapse perf` names what the user expects; detection still decides
    // (the same registry as every command), so bpftrace output, a
    // perf.data or random bytes are never folded as perf script text. Only
    // `--format perf` forces the perf folder, and even then not on binary data.
    // `--event` is `flame`'s name for what stackcollapse-perf.pl calls
    // `--event-filter`; two different answers to one question are refused.
    let event = match (&args.event, &args.event_filter) {
        (Some(a), Some(b)) if a != b => {
            return Err(bad_input(format!(
                "--event {a:?} and --event-filter {b:?} name different events; give one"
            )))
        }
        (a, b) => a.clone().or_else(|| b.clone()),
    };
    let speedscope = match args.output_format.as_deref() {
        Some(f) => f == "speedscope",
        None => args
            .output
            .as_deref()
            .is_some_and(|o| o.to_ascii_lowercase().ends_with(".speedscope.json")),
    };
    let input = Input::open(&path).map_err(classify)?;
    let format = keisoku_stacks::format_of(&input, args.format).map_err(classify)?;
    let perf_input = matches!(format, Format::Perf | Format::PerfData);
    // The stackcollapse-perf.pl options that shape folded names.
    let naming_flags = args.pid || args.tid || args.kernel || args.jit || args.all || args.addrs;
    if event.is_some() && !perf_input && format != Format::Jfr {
        return Err(bad_input(format!(
            "{}: --event applies to perf script and JFR input; this is {}",
            input.name,
            format.name()
        )));
    }
    if perf_forced && !matches!(format, Format::Perf | Format::PerfData) {
        eprintln!(
            "keisoku: {}: this is {}, not perf script text; reading it as such",
            input.name,
            format.info().description
        );
    }
    if speedscope {
        if naming_flags {
            return Err(bad_input(
                "--pid/--tid/--kernel/--jit/--all/--addrs shape folded lines; speedscope output keeps processes, threads and frames as read",
            ));
        }
        return write_speedscope(input, format, event, args.output.as_deref());
    }
    let sink: Box<dyn Write> = match args.output.as_deref() {
        Some(o) if !is_stdout(std::path::Path::new(o)) => {
            Box::new(std::fs::File::create(o).with_context(|| format!("cannot create {o}"))?)
        }
        _ => Box::new(std::io::stdout().lock()),
    };
    let mut out = std::io::BufWriter::with_capacity(1 << 20, sink);
    if perf_input {
        keisoku_stacks::format::check_text(&input, format).map_err(classify)?;
        let threads = args
            .threads
            .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
            .max(1);
        let opts = PerfFoldOptions {
            include_pid: args.pid || args.tid,
            include_tid: args.tid,
            annotate_kernel: args.kernel || args.all,
            annotate_jit: args.jit || args.all,
            include_addrs: args.addrs,
            event_filter: event.clone(),
            threads,
            chunk_bytes: 0,
        };
        let name = input.name.clone();
        // perf.data folds exactly as its `perf script` text would.
        let (input, script) = if format == Format::PerfData {
            eprintln!(
                "keisoku: {name}: a perf.data recording; running `{}`",
                keisoku_stacks::perfdata::command_line(&name)
            );
            let (text, script) = keisoku_stacks::perfdata::run_script(input).map_err(classify)?;
            (text, Some(script))
        } else {
            (input, None)
        };
        let mut reader = input.into_reader();
        let folded = fold_perf(&mut reader, &name, &opts);
        if let Some(script) = script {
            script.finish().map_err(classify)?;
        }
        let folded = folded.map_err(classify)?;
        // Skipping odd lines is stackcollapse-perf.pl's way; a file in
        // which no line was perf script output is not a profile at all,
        // and one with no sample says so rather than printing nothing.
        if folded.stacks.is_empty() {
            return Err(bad_input(if folded.unrecognised > 0 {
                format!(
                    "{name}: not perf script output (no sample recognised; first unrecognised line {})",
                    folded.first_unrecognised.unwrap_or(1)
                )
            } else if let (Some(ev), true) = (&event, folded.filtered_other_events) {
                format!("{name}: perf script text with no samples of event {ev:?}")
            } else {
                format!("{name}: perf script text with no samples in it")
            }));
        }
        for note in folded.notes(&name) {
            eprintln!("keisoku: {note}");
        }
        folded
            .write_sorted(&mut out)
            .context("writing folded stacks")?;
    } else {
        if naming_flags {
            return Err(bad_input(format!(
                "{}: --pid/--tid/--kernel/--jit/--all/--addrs apply to perf script input; this is {}",
                input.name,
                format.name()
            )));
        }
        let loaded = read_reporting(input, format, event)?;
        if loaded.profile.callgraph.is_some() {
            // The title says "estimated from a call graph"; folded text cannot.
            eprintln!("keisoku: {}: weights in nanoseconds", loaded.profile.title);
        }
        for (stack, w) in fold_profile(&loaded.profile, false) {
            writeln!(out, "{stack} {w}").context("writing folded stacks")?;
        }
    }
    match out.flush() {
        Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
        r => r.context("writing folded stacks")?,
    }
    Ok(OK)
}

/// Reads a profile whole (not through the streaming perf folder), saying
/// on stderr what the reader noticed: recovered damage, a perf.data run
/// through `perf script`, the events left out.
fn read_reporting(
    input: Input,
    format: Format,
    event: Option<String>,
) -> anyhow::Result<keisoku_stacks::Loaded> {
    let name = input.name.clone();
    if format == Format::PerfData {
        eprintln!(
            "keisoku: {name}: a perf.data recording, read through `{}`",
            keisoku_stacks::perfdata::command_line(&name)
        );
    }
    let loaded = keisoku_stacks::read_input(
        input,
        &ReadOptions {
            format: Some(format),
            event,
        },
    )
    .map_err(classify)?;
    if let Some(msg) = loaded.profile.damage.report() {
        eprintln!("keisoku: {}: {msg}", loaded.profile.title);
    }
    if !loaded.dropped_events.is_empty() {
        let dropped: Vec<String> = loaded
            .dropped_events
            .iter()
            .map(|(e, n)| format!("{e} ({n} samples)"))
            .collect();
        eprintln!(
            "keisoku: {name}: kept event {}; dropped {} (choose with --event)",
            loaded.profile.events.first().map_or("?", String::as_str),
            dropped.join(", ")
        );
    }
    Ok(loaded)
}

/// speedscope JSON of the whole profile, exactly as `flame -o
/// x.speedscope.json` writes it (one profile per thread, samples in time
/// order), to `output` or standard output.
fn write_speedscope(
    input: Input,
    format: Format,
    event: Option<String>,
    output: Option<&str>,
) -> anyhow::Result<u8> {
    let loaded = read_reporting(input, format, event)?;
    if loaded.profile.total_weight() == 0 {
        return Err(bad_input(format!(
            "{}: no samples to write",
            loaded.profile.title
        )));
    }
    if loaded.profile.callgraph.is_some() {
        eprintln!(
            "keisoku: {}: the stacks are {}",
            loaded.profile.title,
            keisoku_stacks::callgraph::ESTIMATED
        );
    }
    let body = keisoku_stacks::speedscope::write(&loaded.profile);
    let path = std::path::Path::new(output.unwrap_or("-"));
    match crate::shared::output::write_to(path, &body) {
        Err(e) if crate::shared::output::is_broken_pipe(&e) => {}
        r => r?,
    }
    Ok(OK)
}
