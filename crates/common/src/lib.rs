//! The small grammars every keisoku command and library shares, so a
//! duration, a size, a time or a gate clause is read and written the same
//! way everywhere: `--interval`, `--timeline`, `-d`, `--step-duration` and an
//! SLO's `p99<=1s` accept the same durations; `--log-lines-max` and friends
//! the same sizes; SLOs, regression gates and `--fail-if` the same clauses.
//!
//! Terminal output of recorded text goes through [`terminal_safe`].
//!
//! The crate has no dependencies on the rest of the workspace; its only I/O
//! is [`limits::Guard`], the `Read` wrapper every input reader applies.

#![deny(missing_docs)]

pub mod buckets;
pub mod duration;
pub mod gate;
pub mod idle;
pub mod limits;
pub mod size;
pub mod text;
pub mod time;

pub use buckets::{bucket_percentile_us, bucket_upper_us, latency_bucket};
pub use duration::{parse_duration, DurationError};
pub use gate::{Clause, GateError, Op, Quantity};
pub use idle::{is_idle_frame, IDLE_FRAMES};
pub use limits::{Guard, Limits};
pub use size::parse_size;
pub use text::terminal_safe;
pub use time::{civil_from_unix, human_duration, utc, utc_iso};
