//! Typed errors of the load engine.

/// Why a run could not be planned or carried out. Problems with individual
/// requests are not errors: they are counted by kind in the results.
#[derive(Debug, thiserror::Error)]
pub enum LoadError {
    /// The plan or one of its inputs is malformed (a URL, duration, sweep,
    /// header, targets file line). Callers map this to exit status 2.
    #[error("{0}")]
    BadInput(String),
    /// A target's host name did not resolve.
    #[error("cannot resolve {host}: {reason}")]
    Resolve {
        /// The host as written in the URL.
        host: String,
        /// The resolver's message.
        reason: String,
    },
    /// The engine itself failed (epoll, threads); not the target's fault.
    #[error("load engine: {0}")]
    Engine(String),
    /// Writing a results file failed.
    #[error("{path}: {source}")]
    Io {
        /// The file being written.
        path: String,
        /// The underlying error.
        source: std::io::Error,
    },
}

impl LoadError {
    /// True when the user's input is at fault (exit status 2).
    pub fn is_bad_input(&self) -> bool {
        matches!(self, LoadError::BadInput(_) | LoadError::Resolve { .. })
    }
}
