//! Access-log analysis, alp-compatible: parse LTSV, JSON or regexp logs,
//! group requests into routes, and compute per-route statistics with alp's
//! exact arithmetic (count, status classes, min/max/sum/avg, body sizes) and
//! bounded-memory percentiles (exact values while a route has few requests,
//! then HdrHistogram, 3 significant digits: [`latency`]).
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
//! - [`count`]: alp's `count --keys` and `topN`;
//! - [`render`]: alp's table, markdown, tsv, csv, json and html outputs;
//! - [`view`]: slowest requests and timeline views (sparklines, JSON, CSV);
//! - [`dump`]: save and reload aggregated statistics;
//! - [`alp_dump`]: alp's YAML dump, read and written; [`alp_config`]: alp's
//!   YAML `--config` file.
//!
//! And the `keisoku logs` command as calls (the binary only maps flags to
//! [`Options`] and prints what comes back):
//! - [`analyse::files`]: files, standard input, `--pos`, `--load`;
//! - [`stored`]: a stored run, from its kept lines or its route rows;
//! - [`requests`]: the recorded requests one by one, for a replay;
//! - [`diff`]: two route tables and the `--fail-over` gate;
//! - [`options`]: the options with their defaults, the progress and
//!   warning hooks ([`Reporter`]); [`error`]: typed failures.

#![deny(missing_docs)]

pub mod alp_config;
pub mod alp_dump;
pub mod analyse;
pub mod builtin;
pub mod count;
pub mod diff;
pub mod dump;
pub mod engine;
pub mod error;
pub mod filter;
pub mod format;
pub mod gosort;
pub mod group;
pub mod input;
pub mod load;
pub mod options;
pub mod output;
pub mod pcap;
pub mod render;
pub mod requests;
pub mod stats;
pub mod stored;
pub mod summary;
pub mod timeline;
pub mod times;
pub mod timestamp;
pub mod uri;
pub mod view;

pub use error::{Cause, Error};
pub use format::{FieldNames, Format, LineError, LineParser, Record};
pub use options::{Options, Quiet, Reporter, TimeUnit, View, ViewSpec, Warning};
pub use stats::{
    Aggregator, Analysis, Config, FeedError, LineCounts, Malformed, RouteStats, SlowRequest,
};
pub use uri::QueryMode;
