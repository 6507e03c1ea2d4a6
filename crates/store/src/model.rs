//! The run model: serde types of the Run JSON (docs/run-json.md), shared by
//! the store, `keisoku export` and the report crate.

use keisoku_stacks::json::{self, JsonOptions};
use keisoku_stacks::Profile;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Version of the Run JSON this crate writes.
pub const RUN_JSON_VERSION: u32 = 1;

/// One stored run, everything on one clock (ms since the run's start).
/// `Default` is an empty run of the current version (for tests and tools).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct RunJson {
    /// Format version ([`RUN_JSON_VERSION`]).
    pub version: u32,
    /// Identity and context of the run.
    pub run: RunInfo,
    /// What `keisoku bench --json` printed for the load; `null` for `record`.
    pub results: serde_json::Value,
    /// The load's phases (sweep steps), in order.
    pub phases: Vec<Phase>,
    /// Host, process, client and access-log time series.
    pub series: Vec<Series>,
    /// Per-route aggregates from the client and from the access log.
    pub routes: Routes,
    /// Per-route per-second counts, percentiles and sparse latency buckets
    /// from both sources (additive to version 1: empty in older runs).
    #[serde(default)]
    pub route_seconds: RouteSecondsBySource,
    /// The CPU profile, if one was recorded: the stacks crate's model, its
    /// sample times counted from the run's t = 0 and `start_unix_ns` the
    /// run's start. In JSON it is profile JSON (docs/profile-json.md),
    /// written and read by `keisoku_stacks::json`.
    #[serde(default, with = "profile_field")]
    pub profile: Option<Profile>,
    /// The wall-clock profile, if one was recorded (py-spy `--idle`: every
    /// thread at every tick, waiting or running), on the same clock as the
    /// CPU profile. Additive: absent in older runs and when not recorded.
    #[serde(
        default,
        with = "profile_field",
        skip_serializing_if = "Option::is_none"
    )]
    pub wall_profile: Option<Profile>,
    /// Findings (crates/findings); empty until it reports.
    pub findings: Vec<serde_json::Value>,
}

/// Profiles compare by their profile JSON: the model keeps interning
/// indexes that are not part of its value, and the JSON is what a run's
/// profile is to its readers.
impl PartialEq for RunJson {
    fn eq(&self, other: &RunJson) -> bool {
        // Destructured so that a new field cannot be left out of the comparison.
        let RunJson {
            version,
            run,
            results,
            phases,
            series,
            routes,
            route_seconds,
            profile,
            wall_profile,
            findings,
        } = self;
        let profile_json = |p: &Option<Profile>| {
            p.as_ref()
                .map(|p| json::profile_json(p, JsonOptions::default()))
        };
        *version == other.version
            && *run == other.run
            && *results == other.results
            && *phases == other.phases
            && *series == other.series
            && *routes == other.routes
            && *route_seconds == other.route_seconds
            && *findings == other.findings
            && profile_json(profile) == profile_json(&other.profile)
            && profile_json(wall_profile) == profile_json(&other.wall_profile)
    }
}

/// The `profile` field as profile JSON, byte for byte what the stacks
/// crate's writer makes (a raw value, not a re-serialised tree), and read
/// back with its reader.
mod profile_field {
    use keisoku_stacks::json::{self, JsonOptions};
    use keisoku_stacks::Profile;
    use serde::ser::Error as _;
    use serde::{Deserialize, Deserializer, Serializer};
    use serde_json::value::RawValue;

    pub fn serialize<S: Serializer>(p: &Option<Profile>, s: S) -> Result<S::Ok, S::Error> {
        let Some(p) = p else {
            return s.serialize_none();
        };
        let text = String::from_utf8(json::profile_json(p, JsonOptions::default()))
            .map_err(S::Error::custom)?;
        let raw = RawValue::from_string(text).map_err(S::Error::custom)?;
        s.serialize_some(&raw)
    }

    /// One profile, read by the stacks crate's profile JSON reader.
    struct Read(Profile);

    impl<'de> Deserialize<'de> for Read {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Read, D::Error> {
            json::deserialize_profile(d).map(Read)
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Profile>, D::Error> {
        Ok(Option::<Read>::deserialize(d)?.map(|r| r.0))
    }
}

impl Default for RunJson {
    fn default() -> RunJson {
        RunJson {
            version: RUN_JSON_VERSION,
            run: RunInfo::default(),
            results: serde_json::Value::Null,
            phases: Vec::new(),
            series: Vec::new(),
            routes: Routes::default(),
            route_seconds: RouteSecondsBySource::default(),
            profile: None,
            wall_profile: None,
            findings: Vec::new(),
        }
    }
}

/// Identity and context of a run.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RunInfo {
    /// Unique id, `YYYYMMDD-HHMMSS-xxxx` (UTC start time plus 4 hex digits).
    pub id: String,
    /// The user's name for the run (`--name`), or "".
    pub name: String,
    /// `--tag k=v` pairs.
    pub tags: BTreeMap<String, String>,
    /// Wall-clock time of the run's clock origin (t = 0).
    pub started_unix_ms: i64,
    /// Length of the run; for a run still being written, up to its last data.
    pub duration_ms: f64,
    /// The load's target URL; `null` for `keisoku record`.
    pub target: Option<String>,
    /// The keisoku command line that made the run.
    pub command: String,
    /// The machine the run was recorded on.
    pub machine: Machine,
    /// True when the run did not finish (Ctrl-C, dying server, killed keisoku).
    pub interrupted: bool,
    /// "closed" or "open" load model; `null` when keisoku did not drive the load.
    pub model: Option<String>,
    /// "running", "complete" or "interrupted" (additive to version 1).
    #[serde(default = "default_status")]
    pub status: String,
}

fn default_status() -> String {
    RunStatus::Complete.as_str().to_string()
}

/// The machine a run was recorded on.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct Machine {
    /// Host name.
    pub hostname: String,
    /// Online CPU cores.
    pub cores: u32,
    /// Kernel release (`uname -r`).
    pub kernel: String,
    /// Total memory.
    pub memory_bytes: u64,
}

/// Lifecycle of a stored run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunStatus {
    /// Being written now.
    Running,
    /// Finished as planned.
    Complete,
    /// Stopped early; everything recorded until then is kept.
    Interrupted,
    /// Ran to its end, but the store could not keep everything (a full
    /// disk): its notes say what is missing.
    Partial,
}

impl RunStatus {
    /// The word stored in the database and shown to users.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Partial => "partial",
        }
    }

    /// Parses the stored word.
    pub fn parse(s: &str) -> Option<RunStatus> {
        match s {
            "running" => Some(RunStatus::Running),
            "complete" => Some(RunStatus::Complete),
            "interrupted" => Some(RunStatus::Interrupted),
            "partial" => Some(RunStatus::Partial),
            _ => None,
        }
    }
}

/// One step of the load (a connection count or a rate), or the whole run.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Phase {
    /// Position in the run, from 0.
    pub index: u32,
    /// Short label, e.g. "c=10" or "rate=500".
    pub label: String,
    /// Start on the run's clock.
    pub start_ms: f64,
    /// End on the run's clock.
    pub end_ms: f64,
    /// Warm-up phases are excluded from results.
    pub warmup: bool,
    /// Connections of a closed-model phase.
    pub connections: Option<u64>,
    /// Target rate (requests/s) of an open-model phase.
    pub rate: Option<f64>,
}

/// A named time series.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct Series {
    /// Dot-separated name, e.g. `cpu.0.user` (docs/run-json.md lists them).
    pub name: String,
    /// Unit: "%", "/s", "bytes", "ms", "count"...
    pub unit: String,
    /// Times on the run's clock, ascending.
    pub t_ms: Vec<f64>,
    /// One value per time.
    pub v: Vec<f64>,
}

/// The thread a per-thread series belongs to: series named
/// `thread.<comm>:<pid>:<tid>.<metric>` (docs/run-json.md), with `comm`
/// sanitised by the recorder to `[A-Za-z0-9_-]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct SeriesThread {
    /// The kernel's thread name, sanitised.
    pub comm: String,
    /// Process id.
    pub pid: u32,
    /// Thread id.
    pub tid: u32,
}

impl SeriesThread {
    /// Splits a per-thread series name into its thread and metric; `None`
    /// for any other name.
    pub fn parse(name: &str) -> Option<(SeriesThread, &str)> {
        let rest = name.strip_prefix("thread.")?;
        let (who, metric) = rest.split_once('.')?;
        let mut parts = who.rsplitn(3, ':');
        let tid = parts.next()?.parse().ok()?;
        let pid = parts.next()?.parse().ok()?;
        let comm = parts.next()?.to_string();
        Some((SeriesThread { comm, pid, tid }, metric))
    }

    /// The name of this thread's series of `metric`.
    pub fn series(&self, metric: &str) -> String {
        format!("thread.{}:{}:{}.{metric}", self.comm, self.pid, self.tid)
    }

    /// How people read it: `demo-prefork-3 (tid 4250)`, or `(pid N)` for a
    /// process's main thread.
    pub fn label(&self) -> String {
        let what = if self.pid == self.tid { "pid" } else { "tid" };
        format!("{} ({what} {})", self.comm, self.tid)
    }
}

/// Per-route aggregates.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct Routes {
    /// As the load client saw them.
    pub client: Vec<RouteRow>,
    /// As the server's access log recorded them.
    pub access_log: Vec<RouteRow>,
    /// The followed access log and what the run kept of its lines; `null`
    /// when no log was followed or the run predates kept lines (additive to
    /// version 1).
    #[serde(default)]
    pub access_log_lines: Option<AccessLog>,
}

/// Per-route seconds of each source (`route_seconds` in Run JSON).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct RouteSecondsBySource {
    /// As the load client saw them.
    pub client: Vec<RouteSeconds>,
    /// As the server's access log recorded them.
    pub access_log: Vec<RouteSeconds>,
}

/// One route's seconds: parallel arrays, one entry per second in which the
/// route had requests, so a time range can be re-aggregated exactly as the
/// buckets allow (percentiles of a range come from summed `hist`).
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
#[serde(default)]
pub struct RouteSeconds {
    /// HTTP method.
    pub method: String,
    /// Normalised route.
    pub route: String,
    /// End of each second on the run's clock, ms.
    pub t_ms: Vec<f64>,
    /// Requests ended in the second: answers, plus the client's transport
    /// errors (which have no latency, so `hist` holds only the answers).
    pub count: Vec<u64>,
    /// Of those, errors: 5xx answers plus transport errors.
    pub errors: Vec<u64>,
    /// Median latency, ms.
    pub p50_ms: Vec<f64>,
    /// 99th percentile latency, ms.
    pub p99_ms: Vec<f64>,
    /// Slowest request, ms.
    pub max_ms: Vec<f64>,
    /// The second's latencies as sparse `[k, n]` log buckets
    /// (`keisoku_common::latency_bucket`).
    pub hist: Vec<Vec<(u32, u64)>>,
}

/// The access log a run followed, and what it kept of its lines.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct AccessLog {
    /// The followed file, as given to `--access-log`.
    pub path: String,
    /// `--log-format`: "ltsv", "json" or "regexp".
    pub format: String,
    /// `--log-regexp`, when one was given.
    pub pattern: Option<String>,
    /// False when the run was recorded with `--no-log-lines`.
    pub keep_lines: bool,
    /// `--log-lines-max`: raw bytes of lines the run keeps at most.
    pub max_bytes: u64,
    /// Complete lines read from the log during the run.
    pub lines: u64,
    /// Lines kept, the first `kept_lines` of `lines` in order.
    pub kept_lines: u64,
    /// Raw bytes of the kept lines (newlines included).
    pub kept_bytes: u64,
    /// Bytes the kept lines take in the store, compressed.
    pub stored_bytes: u64,
    /// True when `--log-lines-max` stopped the keeping: later lines count
    /// in the route aggregates but are not kept.
    pub truncated: bool,
    /// When the cap was reached, on the run's clock.
    pub truncated_ms: Option<f64>,
}

/// One route's aggregate in alp's columns. Times in milliseconds, body
/// sizes in bytes.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq)]
pub struct RouteRow {
    /// HTTP method.
    pub method: String,
    /// Normalised path (`/orders/:id`).
    pub uri: String,
    /// Requests.
    pub count: u64,
    /// Responses with status 1xx.
    #[serde(rename = "1xx", default)]
    pub s1xx: u64,
    /// Responses with status 2xx.
    #[serde(rename = "2xx", default)]
    pub s2xx: u64,
    /// Responses with status 3xx.
    #[serde(rename = "3xx", default)]
    pub s3xx: u64,
    /// Responses with status 4xx.
    #[serde(rename = "4xx", default)]
    pub s4xx: u64,
    /// Responses with status 5xx.
    #[serde(rename = "5xx", default)]
    pub s5xx: u64,
    /// Fastest response.
    pub min: f64,
    /// Slowest response.
    pub max: f64,
    /// Sum of response times.
    pub sum: f64,
    /// Mean response time.
    pub avg: f64,
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 95th percentile.
    pub p95: f64,
    /// 99th percentile.
    pub p99: f64,
    /// Standard deviation.
    pub stddev: f64,
    /// Smallest body.
    #[serde(default)]
    pub min_body: f64,
    /// Largest body.
    #[serde(default)]
    pub max_body: f64,
    /// Sum of body sizes.
    #[serde(default)]
    pub sum_body: f64,
    /// Mean body size.
    #[serde(default)]
    pub avg_body: f64,
}

/// One line of `keisoku runs`.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct RunListing {
    /// Run id.
    pub id: String,
    /// User's name for it.
    pub name: String,
    /// Wall-clock start.
    pub started_unix_ms: i64,
    /// Length so far.
    pub duration_ms: f64,
    /// Load target, if keisoku drove the load.
    pub target: Option<String>,
    /// "running", "complete" or "interrupted".
    pub status: String,
    /// Throughput of the measured phases.
    pub rps: Option<f64>,
    /// 99th percentile latency of the measured phases.
    pub p99_ms: Option<f64>,
    /// `--tag` pairs.
    pub tags: BTreeMap<String, String>,
}

/// What a new run starts with.
#[derive(Debug, Clone, Default)]
pub struct NewRun {
    /// `--name`, or "".
    pub name: String,
    /// `--tag` pairs.
    pub tags: BTreeMap<String, String>,
    /// Wall-clock time of t = 0.
    pub started_unix_ms: i64,
    /// Target URL, if keisoku drives the load.
    pub target: Option<String>,
    /// The command line.
    pub command: String,
    /// Where it runs.
    pub machine: Machine,
    /// "closed"/"open", if keisoku drives the load.
    pub model: Option<String>,
}

/// Where per-route data came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RouteSource {
    /// The load client.
    Client,
    /// The server's access log.
    AccessLog,
}

impl RouteSource {
    /// The word stored in the database.
    pub fn as_str(self) -> &'static str {
        match self {
            RouteSource::Client => "client",
            RouteSource::AccessLog => "access_log",
        }
    }
}

/// One second of one route's latency histogram (microseconds).
#[derive(Debug, Clone)]
pub struct RouteSecond {
    /// HTTP method.
    pub method: String,
    /// Normalised route.
    pub route: String,
    /// Second on the run's clock (0 = the first second).
    pub second: u32,
    /// Latencies in microseconds.
    pub histogram: hdrhistogram::Histogram<u64>,
    /// Errors in the second: 5xx answers plus transport errors.
    pub errors: u64,
    /// Of `errors`, transport errors (client only): requests without an
    /// answer, so without a latency in `histogram`.
    pub transport_errors: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_series_names_round_trip_and_others_are_not_threads() {
        let (t, metric) =
            SeriesThread::parse("thread.demo-prefork-3:4242:4250.migrations").unwrap();
        assert_eq!(metric, "migrations");
        assert_eq!(
            (t.comm.as_str(), t.pid, t.tid),
            ("demo-prefork-3", 4242, 4250)
        );
        assert_eq!(t.series("cpu"), "thread.demo-prefork-3:4242:4250.cpu");
        assert_eq!(t.label(), "demo-prefork-3 (tid 4250)");
        // A comm may hold ':' from an unsanitised older run: pid and tid are the last two.
        let (t, _) = SeriesThread::parse("thread.a:b:1:2.cpu").unwrap();
        assert_eq!((t.comm.as_str(), t.pid, t.tid), ("a:b", 1, 2));
        assert_eq!(
            SeriesThread::parse("thread.nginx:7:7.cpu")
                .unwrap()
                .0
                .label(),
            "nginx (pid 7)"
        );
        for other in [
            "proc.cpu_user",
            "thread.x.cpu",
            "thread.x:1.cpu",
            "thread.x:a:1.cpu",
            "thread.x:1:2",
        ] {
            assert!(SeriesThread::parse(other).is_none(), "{other}");
        }
    }
}
