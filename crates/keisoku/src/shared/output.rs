//! Output, handled once for every command: the writer that understands
//! `-`, the one progress line, and what a closed pipe means (the reader had
//! enough: `keisoku report RUN -o - | head -c1` ends quietly with exit 0, as
//! ripgrep does).

use anyhow::Context;
use std::io::{IsTerminal, Write};
use std::path::Path;

/// Whether an error is a write to a reader that went away (EPIPE).
pub fn is_broken_pipe(err: &anyhow::Error) -> bool {
    err.chain().any(|e| {
        e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// Whether `path` means standard output.
pub fn is_stdout(path: &Path) -> bool {
    path.as_os_str() == "-"
}

/// Writes `body` to the file `path`, or to standard output for `-`.
pub fn write_to(path: &Path, body: &[u8]) -> anyhow::Result<()> {
    if is_stdout(path) {
        let mut out = std::io::stdout().lock();
        out.write_all(body)
            .and_then(|()| out.flush())
            .context("cannot write to standard output")
    } else {
        std::fs::write(path, body).with_context(|| format!("cannot write {}", path.display()))
    }
}

/// A buffered writer to the file `path`, or to standard output for `-`.
pub fn create(path: &Path) -> anyhow::Result<Box<dyn Write>> {
    if is_stdout(path) {
        Ok(Box::new(std::io::BufWriter::new(std::io::stdout().lock())))
    } else {
        let f = std::fs::File::create(path)
            .with_context(|| format!("cannot write {}", path.display()))?;
        Ok(Box::new(std::io::BufWriter::new(f)))
    }
}

/// Writes `text` to standard output (a closed pipe is an error the caller
/// passes up with `?`, which `main` turns into a quiet exit 0).
pub fn print(text: &str) -> std::io::Result<()> {
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())?;
    out.flush()
}

/// A size in bytes for "wrote FILE (SIZE)" messages: `12.3 MiB`, `46 KiB`.
pub fn size(bytes: usize) -> String {
    if bytes >= 1 << 20 {
        format!("{:.1} MiB", bytes as f64 / (1u64 << 20) as f64)
    } else {
        format!("{:.0} KiB", (bytes as f64 / 1024.0).ceil())
    }
}

/// The one progress line of long commands (load, sweeps, demo): redrawn in
/// place on standard error, only when standard error is a terminal and the
/// command was not asked to be quiet.
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    shown: bool,
}

impl Progress {
    /// A progress line that shows unless `quiet` or stderr is not a terminal.
    pub fn new(quiet: bool) -> Progress {
        Progress {
            shown: !quiet && std::io::stderr().is_terminal(),
        }
    }

    /// Whether the line is drawn at all.
    pub fn shown(self) -> bool {
        self.shown
    }

    /// Redraws the line with `text`.
    pub fn draw(self, text: &str) {
        if self.shown {
            let mut e = std::io::stderr().lock();
            let _ = write!(e, "\r\x1b[2K{text}");
            let _ = e.flush();
        }
    }

    /// Clears the line (before the command prints its results).
    pub fn clear(self) {
        self.draw("");
    }

    /// The load engine's progress callback drawing this line.
    pub fn for_load(self) -> Option<keisoku_load::ProgressFn> {
        self.shown.then(|| -> keisoku_load::ProgressFn {
            Box::new(move |p| self.draw(&keisoku_load::render::progress_line(p)))
        })
    }
}
