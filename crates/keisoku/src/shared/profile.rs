//! Reading profiles for the commands that explain them (`flame`, `scope`,
//! `diff`, `collapse`): the `--format` flag built from the stacks crate's
//! format registry, error classification, stored runs in place of files,
//! sample selection and the SVG writer.

use crate::exit::bad_input;
use clap::builder::{PossibleValue, TypedValueParser};
use keisoku_stacks::filter::Selection;
use keisoku_stacks::{Format, Profile, ReadOptions, FORMATS};

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

/// Parse errors are the user's input being wrong (exit 2); I/O errors on
/// an opened input are runtime failures unless they mean a corrupt stream.
pub fn classify(e: keisoku_stacks::Error) -> anyhow::Error {
    match &e {
        keisoku_stacks::Error::Io { source, .. }
            if !matches!(
                source.kind(),
                std::io::ErrorKind::InvalidData
                    | std::io::ErrorKind::InvalidInput
                    | std::io::ErrorKind::UnexpectedEof
            ) =>
        {
            anyhow::Error::new(e)
        }
        _ => bad_input(e),
    }
}

/// Reads a profile for a command, reporting recovered damage and dropped events.
pub fn load(path: &str, format: Option<Format>, event: Option<String>) -> anyhow::Result<Profile> {
    // Not a file but a stored run: explain recorded runs like files.
    if format.is_none() {
        if let Some(profile) = crate::cmd::stored::profile(path)? {
            return Ok(profile);
        }
    }
    let loaded =
        keisoku_stacks::read_profile(path, &ReadOptions { format, event }).map_err(classify)?;
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

/// Builds a selection from the thread and time flags.
pub fn selection(
    pid: &[u32],
    tid: &[u32],
    comm: Option<&str>,
    from: Option<f64>,
    to: Option<f64>,
    invert: bool,
) -> anyhow::Result<Selection> {
    let secs = |v: Option<f64>, flag: &str| -> anyhow::Result<Option<u64>> {
        match v {
            Some(s) if !(s.is_finite() && s >= 0.0) => {
                Err(bad_input(format!("{flag} {s}: expected seconds >= 0")))
            }
            Some(s) => Ok(Some((s * 1e9) as u64)),
            None => Ok(None),
        }
    };
    let from_ns = secs(from, "--from")?;
    let to_ns = secs(to, "--to")?;
    if let (Some(f), Some(t)) = (from_ns, to_ns) {
        if t <= f {
            return Err(bad_input("--to must be after --from"));
        }
    }
    let comm = comm
        .map(|c| regex::Regex::new(c).map_err(|e| bad_input(format!("--comm {c:?}: {e}"))))
        .transpose()?;
    Ok(Selection {
        pids: pid.to_vec(),
        tids: tid.to_vec(),
        comm,
        from_ns,
        to_ns,
        invert,
    })
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
