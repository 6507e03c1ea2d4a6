//! The built-in demo target: a bid server with knobs that reproduce known
//! performance problems.
//!
//! `POST /bid` takes an OpenRTB-like bid request and answers a bid (200) or
//! no bid (204); `GET /health` answers 200; `GET /stats` serves the
//! counters of the work done (config loads, regex compiles, backend
//! connections...), so tests and findings can see what a knob changed.
//! Each [`Knobs`] field switches one piece of real work between the naive
//! code of a case in the field notes and its fix; see docs/demo.md.
//!
//! ```no_run
//! use keisoku_demo::{DemoConfig, DemoServer, Knobs};
//! let handle = DemoServer::start(&DemoConfig { knobs: Knobs::only("json-cache")?, ..Default::default() })?;
//! println!("bid server on {}", handle.url());
//! handle.stop();
//! # Ok::<(), keisoku_demo::DemoError>(())
//! ```

#![deny(missing_docs)]

mod accesslog;
mod bid;
mod events;
pub mod harness;
mod http;
mod knobs;
pub mod measure;
mod sample;
mod server;
mod stats;
pub mod target;
mod upstream;

pub use bid::{
    AppInfo, Banner, Bid, BidRequest, BidResponse, BidderConfig, Device, Imp, ResponseExt, SeatBid,
    Site, User,
};
pub use knobs::{Knobs, Setting};
pub use sample::{sample_request, sample_requests};
pub use server::{DemoConfig, DemoHandle, DemoServer};
pub use stats::StatsSnapshot;
pub use target::{TargetError, TargetProcess};
pub use upstream::{campaigns_for, user_profile, Campaign, UserProfile, SIZES};

/// What can go wrong starting or running the demo target.
#[derive(Debug, thiserror::Error)]
pub enum DemoError {
    /// A knob name that does not exist.
    #[error("unknown knob `{0}` (known: json-cache, formatter, per-request-init, sync-log-rollover, single-worker, no-keepalive, sync-external-call, unpinned)")]
    UnknownKnob(String),
    /// A malformed knob list.
    #[error("bad knob list: {0}")]
    BadKnobList(String),
    /// A socket could not be bound.
    #[error("cannot listen for the {what}: {source}")]
    Bind {
        /// Which server.
        what: String,
        /// Why.
        source: std::io::Error,
    },
    /// A thread or poller could not be created.
    #[error("cannot start a demo thread: {0}")]
    Thread(String),
    /// The config file or a setting is wrong.
    #[error("demo config: {0}")]
    Config(String),
    /// The backend or the external logger failed.
    #[error("upstream: {0}")]
    Upstream(String),
    /// The access log could not be written.
    #[error("access log: {0}")]
    Log(String),
}
