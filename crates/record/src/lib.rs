//! keisoku-record: one recording session as a library, shared by
//! `keisoku run`, `keisoku record` and `keisoku demo`.
//!
//! A [`Recording`] creates the run in the store, starts the host and
//! process sampler, the profiler (perf or py-spy), the access-log follower
//! and, for `run --server-cmd`, the server child ([`server::Server`]); each
//! writes to the store as its data arrives, so a killed keisoku loses
//! little. [`Recording::finish`] is the one place a run ends: it stores the
//! profile, the access-log routes, the notes and the findings
//! (`keisoku_findings::analyze` on the stored run) and hands back what the
//! binary prints; [`Recording::finish_with_load`] first stores a load's
//! report (results, phases, client series and client routes, see
//! [`load::store_report`]) for `run` and `demo`. [`summary`] renders the
//! text every command prints for a run. The library never prints.

#![deny(missing_docs)]

pub mod command;
pub mod flags;
pub mod follow;
pub mod import;
pub mod jvmwall;
pub mod load;
pub mod recorder;
pub mod server;
pub mod summary;

pub use flags::{FlagError, RecorderFlags};
pub use recorder::{alive, machine, Finished, Options, ProfileKind, Recording, WallProfile};

use keisoku_store::StoreError;

/// Why a recording could not be created, started or finished. Problems a
/// recording survives (no perf, an unreadable log) become notes instead.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The store file could not be opened or created for writing (a path
    /// the user gave that cannot hold a store is usually their input).
    #[error(transparent)]
    OpenStore(StoreError),
    /// Reading or writing the run in the store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// A recorder thread could not be started.
    #[error(transparent)]
    Io(#[from] std::io::Error),
    /// The user's input does not hold once the recording starts (an
    /// `--access-log` that still does not exist); nothing was loaded and the
    /// run was removed again.
    #[error("{0}")]
    Input(String),
}

// The summaries name times and durations as every command does.
pub(crate) use keisoku_common::{human_duration, utc};
