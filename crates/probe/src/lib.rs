//! Host and process samplers from /proc, the perf driver and JIT symbol maps.
//!
//! - [`Sampler`] reads /proc every interval on a background thread and emits
//!   [`SeriesPoint`]s named as in docs/run-json.md, on the run's clock:
//!   host, the server's process tree summed (`proc.*`) and its busiest
//!   threads one by one (`thread.<comm>:<pid>:<tid>.*`).
//! - [`PerfRecorder`] drives `perf record`/`perf script` with the monotonic
//!   clock so samples land on the same timeline; [`PySpyRecorder`] does the
//!   same for Python servers with py-spy.
//! - [`pidof`] and [`process_tree`] choose the process to watch.
//!
//! Nothing here prints or exits; metrics this kernel lacks become notes.

#![deny(missing_docs)]

mod child;
mod connects;
mod error;
mod host;
mod perf;
mod process;
mod procfs;
mod pyspy;
mod sampler;
mod series;
mod sockdiag;
mod threads;

pub use child::die_with_parent;
pub use error::ProbeError;
pub use perf::{ClockMap, PerfOptions, PerfOutput, PerfRecorder, PerfTarget, ProfileError};
pub use process::{pidof, process_exists, process_tree, ProcessInfo};
pub use pyspy::{PySpyFormat, PySpyOptions, PySpyOutput, PySpyRecorder};
pub use sampler::{Collector, Sampler, SamplerConfig, SamplerReport, MIN_INTERVAL};
pub use series::SeriesPoint;
pub use threads::{
    THREADS_MAX_EVER, THREADS_MAX_LIVE, THREAD_BUSY_CPU_PCT, THREAD_BUSY_MIGRATIONS_S,
    THREAD_IDLE_YIELD,
};
