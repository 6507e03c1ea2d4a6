//! The report crate's error type.

/// Why a report, comparison or served page could not be produced.
#[derive(Debug, thiserror::Error)]
pub enum ReportError {
    /// The Run JSON is not JSON at all.
    #[error("run JSON is malformed: {0}")]
    Json(#[from] serde_json::Error),
    /// The Run JSON parsed but is not a run this version understands.
    #[error("run JSON is not usable: {0}")]
    Invalid(String),
    /// The web bundle lacks a page (a build problem, not the user's).
    #[error("the web bundle has no page {0:?}; was web/ built?")]
    MissingPage(String),
    /// The HTTP server could not start.
    #[error("cannot listen on {addr}: {reason}")]
    Bind {
        /// The address asked for.
        addr: String,
        /// What the OS said.
        reason: String,
    },
}
