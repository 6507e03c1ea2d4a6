//! Access-log analysis, alp-compatible: parse LTSV, JSON or regexp logs,
//! group requests into routes, and compute per-route statistics with alp's
//! exact arithmetic (count, status classes, min/max/sum/avg, body sizes) and
//! bounded-memory percentiles (HdrHistogram, 3 significant digits).
//!
//! Pieces, usable on their own:
//! - [`format`]: line parsers ([`LineParser`]) configured like alp (labels,
//!   keys, regexp with named groups);
//! - [`group`]: matching groups and automatic grouping of id-like segments;
//! - [`filter`]: alp's `--filters` expressions;
//! - [`Aggregator`]: a streaming accumulator fed line by line (e.g. from a
//!   live log), [`Analysis::merge`] to combine results across threads;
//! - [`engine::analyze`]: a whole input, parsed in parallel;
//! - [`timeline`]: per-bucket counts, latency and requests in flight;
//! - [`render`]: alp's table, markdown, tsv, csv, json and html outputs;
//! - [`view`]: slowest requests and timeline views (sparklines, JSON, CSV);
//! - [`dump`]: save and reload aggregated statistics.

pub mod dump;
pub mod engine;
pub mod filter;
pub mod format;
pub mod group;
pub mod input;
pub mod render;
pub mod stats;
pub mod summary;
pub mod timeline;
pub mod timestamp;
pub mod uri;
pub mod view;

pub use format::{FieldNames, Format, LineError, LineParser, Record};
pub use stats::{
    Aggregator, Analysis, Config, FeedError, LineCounts, Malformed, RouteStats, SlowRequest,
};
pub use uri::QueryMode;
