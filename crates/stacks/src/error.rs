//! Typed errors of the profile parsers.

use crate::model::Location;

/// Why a profile could not be read.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The input could not be read at all.
    #[error("{path}: cannot read it")]
    Io {
        /// File name (or "<stdin>").
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// The input is not in the expected shape.
    #[error("{path}: {at}: expected {expected}")]
    Malformed {
        /// File name (or "<stdin>").
        path: String,
        /// Where the problem is.
        at: Location,
        /// What the parser expected there.
        expected: String,
    },
    /// No supported format recognised the input.
    #[error(
        "{path}: not a recognised profile (tried {}; --format forces one: {})",
        crate::format::Format::descriptions(),
        crate::format::Format::names()
    )]
    UnknownFormat {
        /// File name (or "<stdin>").
        path: String,
    },
    /// The input parsed but holds no samples the caller can use.
    #[error("{path}: {why}")]
    Empty {
        /// File name (or "<stdin>").
        path: String,
        /// What was missing.
        why: String,
    },
}

impl Error {
    /// Whether the problem is the user's input (exit 2): a malformed,
    /// unrecognised or empty profile, or an input that cannot be opened or
    /// read because of what it is (missing, unreadable, a directory, cut
    /// short, over a limit); otherwise the machine failed (exit 1).
    pub fn is_input(&self) -> bool {
        match self {
            Error::Io { source, .. } => keisoku_common::limits::is_input_fault(source),
            Error::Malformed { .. } | Error::UnknownFormat { .. } | Error::Empty { .. } => true,
        }
    }

    pub(crate) fn io(path: &str, source: std::io::Error) -> Self {
        // A gzip stream cut short surfaces as an I/O error deep in flate2;
        // name it for what it is so the user knows the file is truncated.
        Error::Io {
            path: path.to_owned(),
            source,
        }
    }

    pub(crate) fn malformed(path: &str, at: Location, expected: impl Into<String>) -> Self {
        Error::Malformed {
            path: path.to_owned(),
            at,
            expected: expected.into(),
        }
    }
}

/// Result alias for this crate.
pub type Result<T> = std::result::Result<T, Error>;
