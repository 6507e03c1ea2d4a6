//! `perf.data` given directly: perf's binary recording is only read by
//! perf itself (its layout follows the kernel's and perf's versions), so
//! keisoku runs `perf script` on it, as the user would, and reads the text.
//! Without perf installed the error says what to run and where.

use crate::error::{Error, Result};
use crate::format::{Format, FormatInfo, Parsed};
use crate::input::Input;
use crate::model::Location;
use crate::ReadOptions;
use std::io::Write;
use std::process::{Command, Stdio};

/// The magic at the start of every perf.data file (perf's header v2).
pub const MAGIC: &[u8] = b"PERFILE2";

/// This format's entry in [`crate::format::FORMATS`].
pub const FORMAT: FormatInfo = FormatInfo {
    format: Format::PerfData,
    name: "perf.data",
    aliases: &["perfdata"],
    description: "perf.data (through `perf script`)",
    text: false,
    looks_like,
    read,
};

/// Whether the input is a perf.data recording.
pub fn looks_like(head: &[u8]) -> bool {
    head.starts_with(MAGIC)
}

/// The command keisoku runs, for messages: `perf script -F+pid -i PATH`.
pub fn command_line(path: &str) -> String {
    format!("perf script -F+pid -i {path}")
}

/// `perf script` running on a perf.data input, for [`PerfScript::finish`]
/// to check how perf ended once its text is read.
pub struct PerfScript {
    name: String,
    child: std::process::Child,
    errs: std::thread::JoinHandle<String>,
    temp: Option<std::path::PathBuf>,
}

impl PerfScript {
    /// Waits for perf: a failed run is an error naming perf's last words,
    /// since its text may have been cut short.
    pub fn finish(mut self) -> Result<()> {
        let status = self.child.wait().map_err(|e| Error::io(&self.name, e));
        let err_text = self.errs.join().unwrap_or_default();
        if let Some(t) = &self.temp {
            let _ = std::fs::remove_file(t);
        }
        let status = status?;
        if status.success() {
            return Ok(());
        }
        let why = err_text
            .lines()
            .rev()
            .find(|l| !l.trim().is_empty())
            .unwrap_or("");
        Err(Error::malformed(
            &self.name,
            Location::Byte(0),
            format!("a perf.data that `perf script` reads ({status}: {why})"),
        ))
    }
}

/// Starts `perf script` on a perf.data input (written to a temporary file
/// first when it comes from stdin or gzip: perf reads files only); returns
/// its text as an [`Input`] under the usual limits, and the running perf.
pub fn run_script(input: Input) -> Result<(Input, PerfScript)> {
    let name = input.name.clone();
    if !looks_like(&input.head) {
        return Err(Error::malformed(
            &name,
            Location::Byte(0),
            "a perf.data recording (it starts with PERFILE2)",
        ));
    }
    let mut temp: Option<std::path::PathBuf> = None;
    let path = if name == "<stdin>" || input.gzip {
        let (_, bytes) = input.read_all()?;
        static SEQ: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = SEQ.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let t = std::env::temp_dir().join(format!("keisoku-{}-{n}-perf.data", std::process::id()));
        let mut f = std::fs::File::create(&t).map_err(|e| Error::io(&name, e))?;
        f.write_all(&bytes).map_err(|e| Error::io(&name, e))?;
        temp = Some(t.clone());
        t
    } else {
        std::path::PathBuf::from(&name)
    };
    let run = Command::new("perf")
        .args(["script", "-F+pid", "-i"])
        .arg(&path)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn();
    let mut child = match run {
        Ok(c) => c,
        Err(e) => {
            if let Some(t) = &temp {
                let _ = std::fs::remove_file(t);
            }
            if e.kind() != std::io::ErrorKind::NotFound {
                return Err(Error::io(&name, e));
            }
            return Err(Error::Empty {
                path: name.clone(),
                why: format!(
                    "a perf.data recording, which only perf reads, and perf is not installed here: \
                     install it (Debian: linux-perf) or run `{}` where it is and give keisoku that text",
                    command_line(&name)
                ),
            });
        }
    };
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| Error::io(&name, std::io::Error::other("perf script has no stdout")))?;
    // stderr is drained on its own thread so a chatty perf cannot block on
    // a full pipe while its stdout is read.
    let mut stderr = child.stderr.take();
    let errs = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(e) = stderr.as_mut() {
            let _ = std::io::Read::read_to_string(e, &mut s);
        }
        s
    });
    let text = match Input::from_reader(name.clone(), Box::new(stdout)) {
        Ok(t) => t,
        Err(e) => {
            let _ = child.kill();
            let _ = child.wait();
            return Err(e);
        }
    };
    Ok((
        text,
        PerfScript {
            name,
            child,
            errs,
            temp,
        },
    ))
}

fn read(input: Input, opts: &ReadOptions) -> Result<Parsed> {
    let name = input.name.clone();
    let (text, script) = run_script(input)?;
    let parsed = crate::perf::parse(
        &mut text.into_reader(),
        &name,
        &crate::perf::PerfOptions {
            event: opts.event.clone(),
        },
    );
    // perf's own failure explains a cut-short text better than the parser.
    script.finish()?;
    let (profile, report) = parsed?;
    Ok(Parsed {
        profile,
        dropped_events: report.dropped,
    })
}
