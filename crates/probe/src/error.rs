//! Errors of the samplers and the profiler drivers.

use std::time::Duration;

/// Why a sampler could not start.
#[derive(Debug, thiserror::Error)]
pub enum ProbeError {
    /// The interval is shorter than the supported minimum.
    #[error("sampling interval {0:?} is below the 100 ms minimum")]
    IntervalTooShort(Duration),
    /// The target process does not exist.
    #[error("no process with pid {pid} ({path} does not exist)")]
    NoSuchProcess {
        /// The pid asked for.
        pid: u32,
        /// The /proc path looked at.
        path: String,
    },
    /// `pidof` found nothing.
    #[error("no running process is named {0:?}")]
    NoProcessNamed(String),
    /// A /proc directory could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The path.
        path: String,
        /// The cause.
        source: std::io::Error,
    },
    /// The sampling thread could not be started.
    #[error("cannot start the sampler thread: {0}")]
    Spawn(std::io::Error),
}
