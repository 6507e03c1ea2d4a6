//! Reading profiles for the commands that explain them (`flame`, `scope`,
//! `diff`, `collapse`): the `--format` flag built from the stacks crate's
//! format registry, error classification, stored runs in place of files,
//! sample selection and the SVG writer.

use crate::exit::{bad_input, input_error};
use crate::shared::store::{store_error, StoreArg};
use clap::builder::{PossibleValue, TypedValueParser};
use keisoku_stacks::filter::Selection;
use keisoku_stacks::{Format, Profile, ReadOptions, FORMATS};
use keisoku_store::ProfileKind;

/// The `--format` value parser of every command reading profiles, built
/// from the stacks crate's format registry: `--help` lists each format with
/// its description, and an unknown name is refused naming them all.
#[derive(Clone, Copy, Debug)]
pub struct FormatArg;

impl TypedValueParser for FormatArg {
    type Value = Format;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &std::ffi::OsStr,
    ) -> Result<Format, clap::Error> {
        let name = value.to_string_lossy();
        Format::from_name(&name).ok_or_else(|| {
            clap::Error::raw(
                clap::error::ErrorKind::InvalidValue,
                format!("--format {name:?}: expected {}\n", Format::names()),
            )
            .with_cmd(cmd)
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(FORMATS.iter().map(|f| {
            PossibleValue::new(f.name)
                .aliases(f.aliases.iter().copied())
                .help(f.description)
        })))
    }
}

/// The user's input being wrong (exit 2) as the stacks crate classifies
/// it by error type and I/O error kind; otherwise a runtime failure (exit 1).
/// The cause chain is kept so the message says why a file could not be read.
pub fn classify(e: keisoku_stacks::Error) -> anyhow::Error {
    if e.is_input() {
        input_error(e)
    } else {
        anyhow::Error::new(e)
    }
}

/// Reads a profile for a command, reporting recovered damage and dropped events.
pub fn load(
    path: &str,
    format: Option<Format>,
    event: Option<String>,
    store: &StoreArg,
) -> anyhow::Result<Profile> {
    load_kind(path, format, event, store, ProfileKind::Cpu)
}

/// [`load`] of one kind of a stored run's profiles (`--kind`); a file has
/// one profile, so a kind other than CPU is refused for it.
pub fn load_kind(
    path: &str,
    format: Option<Format>,
    event: Option<String>,
    store: &StoreArg,
    kind: ProfileKind,
) -> anyhow::Result<Profile> {
    // Not a file but a stored run: explain recorded runs like files.
    if format.is_none() {
        if let Some(profile) = stored_profile(path, store, kind)? {
            return Ok(profile);
        }
    }
    if kind != ProfileKind::Cpu {
        return Err(bad_input(format!(
            "--kind {} reads a stored run's profile; {path} is a file",
            kind.name()
        )));
    }
    let loaded =
        keisoku_stacks::read_profile(path, &ReadOptions { format, event }).map_err(classify)?;
    if loaded.format == Format::PerfData {
        eprintln!(
            "keisoku: {path}: a perf.data recording, read through `{}`",
            keisoku_stacks::perfdata::command_line(path)
        );
    }
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
            "keisoku: {}: kept event {}; dropped {} (choose with --event)",
            loaded.profile.title,
            loaded.profile.events.first().map_or("?", String::as_str),
            dropped.join(", ")
        );
    }
    Ok(loaded.profile)
}

/// Builds a selection from the thread and time flags (bad flags: exit 2).
pub fn selection(
    pid: &[u32],
    tid: &[u32],
    comm: Option<&str>,
    from: Option<f64>,
    to: Option<f64>,
    invert: bool,
) -> anyhow::Result<Selection> {
    Selection::from_flags(pid, tid, comm, from, to, invert).map_err(bad_input)
}

/// A flamegraph.pl-compatible SVG via inferno.
pub fn svg(p: &Profile, folded: &str) -> anyhow::Result<Vec<u8>> {
    let mut opts = inferno::flamegraph::Options::default();
    opts.title = p.title.clone();
    opts.count_name = p.unit.name().to_string();
    let mut out = Vec::new();
    inferno::flamegraph::from_lines(&mut opts, folded.lines(), &mut out)
        .map_err(|e| anyhow::anyhow!("drawing the SVG flame graph: {e}"))?;
    Ok(out)
}

/// The profile of the stored run `spec`, or `None` when `spec` names a file
/// (or stdin), which the caller then reads. A name that is neither a file
/// nor a run in the store, or a run without a profile, is bad input.
fn stored_profile(
    spec: &str,
    store: &StoreArg,
    kind: ProfileKind,
) -> anyhow::Result<Option<Profile>> {
    let Some((db, run)) = store.file_or_run(spec)? else {
        return Ok(None);
    };
    let mut profile = db.profile_of(&run, kind).map_err(store_error)?.ok_or_else(|| {
        bad_input(match kind {
            ProfileKind::Cpu => format!(
                "run {run} has no profile (was it recorded with --profile none, or did perf fail? see `keisoku show {run}`)"
            ),
            ProfileKind::Wall => format!(
                "run {run} has no wall-clock profile (one is recorded with --profile py-spy, or --profile perf for a JVM server; see `keisoku show {run}`)"
            ),
        })
    })?;
    // The store keeps the recorder's title; commands name the run.
    profile.title = match kind {
        ProfileKind::Cpu => format!("run {run}"),
        ProfileKind::Wall => format!("run {run} (wall-clock)"),
    };
    Ok(Some(profile))
}
