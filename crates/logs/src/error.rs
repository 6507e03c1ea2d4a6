//! Why a `keisoku logs` analysis failed, and whose fault it was: the
//! caller maps [`Cause::Input`] to "bad usage or input" (exit 2) and
//! [`Cause::Environment`] to "runtime failure" (exit 1).

use std::fmt;

/// Whose problem an [`Error`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cause {
    /// The flags or the input files are wrong; the user can fix them.
    Input,
    /// The machine failed us: I/O, a damaged run store.
    Environment,
}

/// An analysis failure. The `Display` text is the whole message for every
/// variant but [`Error::Io`], whose I/O error is its `source` (so a caller
/// printing the chain shows it once).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A flag value or an input is wrong; the text says which and why.
    #[error("{0}")]
    Input(String),
    /// Opening, reading, seeking or writing a file failed.
    #[error("{action} {path}")]
    Io {
        /// What was being done: "opening", "reading", "seeking", "writing".
        action: &'static str,
        /// The file, as the user named it (`<stdin>` for standard input).
        path: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The run store could not give a run's data.
    #[error("run {run}: {error}")]
    Store {
        /// The run id.
        run: String,
        /// The store's error (its text is part of this one's).
        error: keisoku_store::StoreError,
    },
    /// A stored run's recording settings cannot be used (a log format this
    /// keisoku does not know).
    #[error("run {run}: {reason}")]
    Recorded {
        /// The run id.
        run: String,
        /// What is wrong with the stored settings.
        reason: String,
    },
}

impl Error {
    /// Whose problem this is.
    pub fn cause(&self) -> Cause {
        match self {
            Error::Input(_) => Cause::Input,
            // A file the user named that is missing, unreadable, a
            // directory, corrupt, cut short or over a limit is theirs to
            // fix; writing our output, or any other failure, is the machine's.
            Error::Io { action, source, .. }
                if *action != "writing" && keisoku_common::limits::is_input_fault(source) =>
            {
                Cause::Input
            }
            Error::Io { .. } | Error::Store { .. } | Error::Recorded { .. } => Cause::Environment,
        }
    }

    /// An input error with `message`.
    pub(crate) fn input(message: impl fmt::Display) -> Error {
        Error::Input(message.to_string())
    }

    /// An I/O failure while `action` on `path`.
    pub(crate) fn io(
        action: &'static str,
        path: impl fmt::Display,
        source: std::io::Error,
    ) -> Error {
        Error::Io {
            action,
            path: path.to_string(),
            source,
        }
    }

    /// A store failure while reading `run`.
    pub(crate) fn store(run: &str) -> impl Fn(keisoku_store::StoreError) -> Error + '_ {
        move |error| Error::Store {
            run: run.to_string(),
            error,
        }
    }
}

/// The result of every fallible call in this crate's command layer.
pub type Result<T> = std::result::Result<T, Error>;
