//! Counters of the work the target did, served on `GET /stats` so tests and
//! findings can check what each knob changed without trusting timings.

use serde::{Deserialize, Serialize};
use std::sync::atomic::{AtomicU64, Ordering};

macro_rules! counters {
    ($($(#[$doc:meta])* $name:ident),* $(,)?) => {
        /// Live counters, updated by every worker.
        #[derive(Debug, Default)]
        pub struct Counters {
            $($(#[$doc])* pub $name: AtomicU64,)*
        }

        /// A copy of [`Counters`] at one moment (the body of `GET /stats`).
        #[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
        pub struct StatsSnapshot {
            $($(#[$doc])* pub $name: u64,)*
        }

        impl Counters {
            /// Reads every counter.
            pub fn snapshot(&self) -> StatsSnapshot {
                StatsSnapshot { $($name: self.$name.load(Ordering::Relaxed),)* }
            }
        }
    };
}

counters! {
    /// HTTP requests answered by the target, any route.
    requests,
    /// `POST /bid` answered with a bid (200).
    bids,
    /// `POST /bid` answered with no bid (204).
    no_bids,
    /// Requests answered 400 (malformed JSON, bad fields) or 404/405/413.
    bad_requests,
    /// TCP connections accepted by the bid server.
    connections_accepted,
    /// Times the bidder config file was opened and parsed.
    config_loads,
    /// Regex compilations.
    regex_compiles,
    /// Timestamp format descriptions built.
    formatter_builds,
    /// Campaign-cache hits.
    cache_hits,
    /// Campaign-cache misses (each a backend call).
    cache_misses,
    /// JSON documents parsed from the campaign cache on a hit.
    cache_json_parses,
    /// Calls from the bid server to the in-process backend.
    backend_calls,
    /// TCP connections the bid server opened to the backend.
    backend_connects,
    /// TCP connections the backend accepted.
    backend_accepts,
    /// Bid events produced for the external logger.
    external_events,
    /// HTTP posts to the external logger (one per event when synchronous, one per batch when queued).
    external_posts,
    /// TCP connections the bid server opened to the external logger.
    external_connects,
    /// Events dropped because the external logger queue was full.
    external_dropped,
    /// Nanoseconds request handlers spent waiting on the external logger.
    external_wait_ns,
    /// Access-log lines written.
    log_lines,
    /// Log rollovers.
    log_rollovers,
    /// Log rollovers done inside a request, under the log lock every worker waits on.
    log_rollovers_blocking,
    /// Total nanoseconds spent rolling the log (holding the log lock when synchronous).
    log_rollover_ns,
    /// The longest single rollover in nanoseconds.
    log_rollover_max_ns,
    /// Worker threads serving the bid server.
    workers,
    /// Worker threads pinned to a core.
    workers_pinned,
}

impl Counters {
    /// Adds one to a counter.
    pub fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds `n` to a counter.
    pub fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Raises a counter to `n` if it is lower.
    pub fn max(counter: &AtomicU64, n: u64) {
        counter.fetch_max(n, Ordering::Relaxed);
    }
}
