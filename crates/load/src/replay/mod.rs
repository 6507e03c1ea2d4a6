//! Replaying recorded traffic (`--replay FILE`): the requests of an access
//! log (every format `keisoku logs` reads) or of a HAR file, sent to the
//! target at their recorded pace, scaled (`--speed 2`), or as fast as the
//! connections allow (`--speed max`).
//!
//! The file is read twice, streamed both times: once when the plan is
//! built ([`scan`]: the count, the span, the routes, what cannot be sent
//! as recorded), and once while the load runs ([`feed::Feed`]: a reader
//! thread turning each request into its bytes and its intended send time,
//! which the open-model loop consumes in place of a fixed-rate schedule).
//!
//! When a request started: a HAR entry says (`startedDateTime`). An access
//! log stamps most lines when the response ended, so the start is the
//! stamp minus the request time when the format records one; otherwise the
//! pace is off by each request's response time. Stamps of whole seconds
//! (`$time_local`) are spread evenly across their second in log order.

pub mod feed;
pub mod har;

use crate::error::LoadError;
use keisoku_logs::group::Grouper;
use keisoku_logs::requests::{Next, RequestReader};
use std::collections::HashMap;
use std::ops::ControlFlow;
use std::path::PathBuf;
use std::time::Duration;

/// Routes reported one by one; the rest are summed into one row, so a log
/// of a million distinct URIs costs a bounded number of histograms.
pub const MAX_ROUTES: usize = 24;
/// Distinct routes counted while choosing the reported ones.
const MAX_COUNTED: usize = 100_000;
/// The label of the row that sums the routes beyond [`MAX_ROUTES`].
pub const OTHER_ROUTES: &str = "(other routes)";

/// How fast recorded requests are sent.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Speed {
    /// At the recorded pace divided by this factor (1: as recorded).
    Scaled(f64),
    /// As fast as the connections allow (closed model).
    Max,
}

impl Speed {
    /// Parses `--speed`: a positive factor (`1`, `2`, `0.5`) or `max`.
    pub fn parse(s: &str) -> Result<Speed, String> {
        if s.trim().eq_ignore_ascii_case("max") {
            return Ok(Speed::Max);
        }
        match s.trim().trim_end_matches(['x', 'X']).parse::<f64>() {
            Ok(v) if v.is_finite() && v > 0.0 && v <= 1e6 => Ok(Speed::Scaled(v)),
            _ => Err(format!(
                "{s:?}: use a positive factor (1 is the recorded pace, 2 twice as fast) or max"
            )),
        }
    }
}

/// The `--replay` options as given.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayOptions {
    /// The access log or HAR file.
    pub file: PathBuf,
    /// `--replay-format`: a log format name or `har`; `None` recognises it.
    pub format: Option<String>,
    /// `--replay-regexp`: the pattern of the `regexp` format.
    pub regexp: Option<String>,
    /// `--speed`.
    pub speed: Speed,
    /// `--loop`: start again at the end of the file (needs a duration).
    pub looped: bool,
    /// `--keep-host`: send the recorded Host (HAR, absolute-form logs).
    pub keep_host: bool,
    /// `--replay-cookies`: send a HAR's recorded cookies.
    pub cookies: bool,
    /// `--replay-group`: route patterns as `keisoku logs -m`.
    pub groups: Vec<String>,
    /// `--replay-auto-group`: id-like path segments grouped, as `logs --auto-group`.
    pub auto_group: bool,
}

/// One recorded request, from either kind of file.
#[derive(Debug, Clone, PartialEq)]
pub struct Call {
    /// When it started, Unix seconds (best estimate; see the module doc).
    pub start: f64,
    /// Method as recorded.
    pub method: String,
    /// Path and query, as they go on the wire.
    pub target: String,
    /// The recorded `host[:port]`, when the file has one.
    pub host: Option<String>,
    /// The path without its query, for grouping into routes.
    pub route: String,
    /// Recorded headers worth sending again (HAR only).
    pub headers: Vec<(String, String)>,
    /// Recorded body (HAR only).
    pub body: Vec<u8>,
    /// A method that usually carries a body, from a log that cannot hold it.
    pub body_lost: bool,
}

/// What reading a file found besides its requests.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ReadStats {
    /// The format read (`ltsv`, `combined`, `har`, ...).
    pub format: String,
    /// Lines or entries that held no request to send.
    pub unread: u64,
    /// The first of them: where and why.
    pub first_unread: Option<String>,
    /// Log lines stamped in whole seconds.
    pub whole_seconds: u64,
    /// Most digits after the second seen in a stamp.
    pub fraction_digits: u8,
    /// Whether the format records request times (logs).
    pub request_times: bool,
    /// Whether the format stamps the arrival of a request, not its end.
    pub stamps_start: bool,
    /// HAR entries of other schemes (data:, blob:, ws:) left out.
    pub not_http: u64,
}

/// Reads every request of the file in file order, spreading whole-second
/// stamps over their second, and hands each to `f` until it breaks.
pub fn each_call(
    opts: &ReplayOptions,
    f: &mut dyn FnMut(Call) -> ControlFlow<()>,
) -> Result<ReadStats, LoadError> {
    if is_har(opts)? {
        return har::each_call(&opts.file, opts.cookies, f);
    }
    let format = match &opts.format {
        Some(name) => Some(
            keisoku_logs::Format::named(name, opts.regexp.as_deref())
                .map_err(|e| LoadError::BadInput(format!("--replay-format: {e}")))?,
        ),
        None => None,
    };
    let mut reader = RequestReader::open(&opts.file, format)
        .map_err(|e| LoadError::BadInput(format!("--replay {e}")))?;
    let mut stats = ReadStats {
        format: reader.format_name().to_string(),
        request_times: reader.has_request_times(),
        stamps_start: reader.stamps_start(),
        ..ReadStats::default()
    };
    let stamps_start = stats.stamps_start;
    let path = opts.file.display().to_string();
    // Lines stamped in the same whole second wait here until the second
    // changes, so they can be spread across it.
    let mut second: Vec<keisoku_logs::requests::Recorded> = Vec::new();
    let flush = |group: &mut Vec<keisoku_logs::requests::Recorded>,
                 f: &mut dyn FnMut(Call) -> ControlFlow<()>|
     -> ControlFlow<()> {
        let n = group.len() as f64;
        for (k, rec) in group.drain(..).enumerate() {
            let end = rec.time.floor() + (k as f64 + 0.5) / n;
            f(log_call(rec, end, stamps_start))?;
        }
        ControlFlow::Continue(())
    };
    loop {
        let next = reader
            .next_request()
            .map_err(|e| LoadError::BadInput(format!("--replay {e}")))?;
        let Some(next) = next else { break };
        let rec = match next {
            Next::Request(r) => r,
            Next::Unread(u) => {
                stats.unread += 1;
                if stats.first_unread.is_none() {
                    stats.first_unread = Some(format!("{path}:{}: {}", u.line, u.reason));
                }
                continue;
            }
        };
        stats.fraction_digits = stats.fraction_digits.max(rec.fraction_digits);
        if rec.fraction_digits == 0 {
            stats.whole_seconds += 1;
            if second.first().is_some_and(|s| s.time != rec.time)
                && flush(&mut second, f).is_break()
            {
                return Ok(stats);
            }
            second.push(rec);
            continue;
        }
        if flush(&mut second, f).is_break() {
            return Ok(stats);
        }
        let end = rec.time;
        if f(log_call(rec, end, stamps_start)).is_break() {
            return Ok(stats);
        }
    }
    let _ = flush(&mut second, f);
    Ok(stats)
}

/// A log line's request, started `request_time` before its stamp `end`
/// (or at its stamp, for a format that stamps the arrival).
fn log_call(rec: keisoku_logs::requests::Recorded, end: f64, stamps_start: bool) -> Call {
    let took = if stamps_start { None } else { rec.request_time };
    let start = end - took.unwrap_or(0.0).min(86_400.0);
    let raw = String::from_utf8_lossy(&rec.uri).into_owned();
    let (host, target) = split_absolute(&raw);
    let body_lost = matches!(rec.method.as_str(), "POST" | "PUT" | "PATCH");
    Call {
        start,
        method: rec.method.to_ascii_uppercase(),
        target,
        host,
        route: rec.route_uri,
        headers: Vec::new(),
        body: Vec::new(),
        body_lost,
    }
}

/// `http://host/path?q` as its host and its origin-form target; a target
/// already in origin form is kept (an `OPTIONS *` too).
pub fn split_absolute(uri: &str) -> (Option<String>, String) {
    for scheme in ["http://", "https://"] {
        if let Some(rest) = uri.strip_prefix(scheme) {
            let i = rest.find(['/', '?']).unwrap_or(rest.len());
            let mut target = rest[i..].to_string();
            if !target.starts_with('/') {
                target.insert(0, '/');
            }
            return (Some(rest[..i].to_string()), target);
        }
    }
    (None, uri.to_string())
}

/// Whether the file is read as a HAR file: named so, or JSON whose first
/// key is `log`.
fn is_har(opts: &ReplayOptions) -> Result<bool, LoadError> {
    match opts.format.as_deref() {
        Some(f) if f.eq_ignore_ascii_case("har") => return Ok(true),
        Some(_) => return Ok(false),
        None => {}
    }
    use std::io::Read;
    let mut head = Vec::with_capacity(4096);
    std::fs::File::open(&opts.file)
        .and_then(|f| f.take(4096).read_to_end(&mut head))
        .map_err(|e| LoadError::BadInput(format!("--replay {}: {e}", opts.file.display())))?;
    let text = String::from_utf8_lossy(&head);
    let t = text.trim_start_matches('\u{feff}').trim_start();
    Ok(t.strip_prefix('{')
        .is_some_and(|r| r.trim_start().starts_with("\"log\"")))
}

/// What the plan-time pass over the file found.
#[derive(Debug, Clone, PartialEq)]
pub struct ReplayPlan {
    /// The options.
    pub opts: ReplayOptions,
    /// Requests in the file.
    pub count: u64,
    /// Start of the first request (earliest), Unix seconds.
    pub first: f64,
    /// From the first start to the last, seconds.
    pub span: f64,
    /// The most a request's start precedes an earlier line's: how far the
    /// reader must look ahead to send in start order.
    pub backstep: f64,
    /// Reported routes, (method, route), most requests first; their
    /// index is their target's.
    pub routes: Vec<(String, String)>,
    /// Whether more routes than [`MAX_ROUTES`] exist: one more target,
    /// [`OTHER_ROUTES`], sums them.
    pub other_routes: bool,
    /// Notes for the report (how the pace was recovered).
    pub notes: Vec<String>,
    /// What could not be replayed as recorded (notes of the report too:
    /// its warnings are about the generator).
    pub warnings: Vec<String>,
    grouper: GrouperSpec,
}

/// The route grouping, kept as given so the plan can be cloned and compared.
#[derive(Debug, Clone, PartialEq)]
struct GrouperSpec {
    groups: Vec<String>,
    auto: bool,
}

impl GrouperSpec {
    fn build(&self) -> Result<Grouper, LoadError> {
        Grouper::new(&self.groups, self.auto)
            .map_err(|e| LoadError::BadInput(format!("--replay-group: {e}")))
    }
}

/// Maps a call to its reported route's index.
pub(crate) struct RouteIndex {
    grouper: Grouper,
    index: HashMap<(String, String), usize>,
    other: usize,
}

impl RouteIndex {
    pub(crate) fn new(plan: &ReplayPlan) -> Result<RouteIndex, LoadError> {
        let index = plan
            .routes
            .iter()
            .enumerate()
            .map(|(i, r)| (r.clone(), i))
            .collect();
        Ok(RouteIndex {
            grouper: plan.grouper.build()?,
            index,
            // Without an "other" row (the file changed since it was
            // planned), an unknown route joins the last one.
            other: if plan.other_routes {
                plan.routes.len()
            } else {
                plan.routes.len().saturating_sub(1)
            },
        })
    }

    fn key(&self, call: &Call) -> (String, String) {
        (
            call.method.clone(),
            self.grouper.route(&call.route).into_owned(),
        )
    }

    /// The target index of `call` (the last one sums the other routes).
    pub(crate) fn of(&self, call: &Call) -> usize {
        self.index
            .get(&self.key(call))
            .copied()
            .unwrap_or(self.other)
    }
}

/// Reads the whole file once (streamed) and plans its replay.
pub fn scan(opts: &ReplayOptions) -> Result<ReplayPlan, LoadError> {
    let grouper = GrouperSpec {
        groups: opts.groups.clone(),
        auto: opts.auto_group,
    };
    let g = grouper.build()?;
    let mut count = 0u64;
    let (mut first, mut last, mut latest, mut backstep) =
        (f64::INFINITY, f64::NEG_INFINITY, f64::NEG_INFINITY, 0.0f64);
    let mut counted: HashMap<(String, String), u64> = HashMap::new();
    let mut body_lost = 0u64;
    let stats = each_call(opts, &mut |call| {
        count += 1;
        first = first.min(call.start);
        last = last.max(call.start);
        backstep = backstep.max(latest - call.start);
        latest = latest.max(call.start);
        body_lost += u64::from(call.body_lost);
        let key = (call.method.clone(), g.route(&call.route).into_owned());
        if let Some(n) = counted.get_mut(&key) {
            *n += 1;
        } else if counted.len() < MAX_COUNTED {
            counted.insert(key, 1);
        }
        ControlFlow::Continue(())
    })?;
    let path = opts.file.display();
    if count == 0 {
        let why = stats
            .first_unread
            .as_deref()
            .map(|w| format!(" (first: {w})"))
            .unwrap_or_default();
        return Err(LoadError::BadInput(format!(
            "--replay {path}: no request to replay in this {} file{why}",
            stats.format
        )));
    }
    if stats.unread > count {
        return Err(LoadError::BadInput(format!(
            "--replay {path}: {} of {} lines are not {} requests (first: {}); name the format with --replay-format",
            stats.unread,
            stats.unread + count,
            stats.format,
            stats.first_unread.as_deref().unwrap_or("-")
        )));
    }
    let mut ranked: Vec<((String, String), u64)> = counted.into_iter().collect();
    ranked.sort_by(|a, b| b.1.cmp(&a.1).then_with(|| a.0.cmp(&b.0)));
    let other_routes = ranked.len() > MAX_ROUTES || ranked.len() >= MAX_COUNTED;
    let routes: Vec<(String, String)> = ranked
        .into_iter()
        .take(MAX_ROUTES)
        .map(|(k, _)| k)
        .collect();
    let span = (last - first).max(0.0);
    let mut notes = vec![format!(
        "replay: {count} requests from {path} ({}) recorded over {span:.3} s{}",
        stats.format,
        match opts.speed {
            Speed::Scaled(s) if s != 1.0 => format!(", sent {s}x as fast ({:.3} s)", span / s),
            Speed::Scaled(_) => ", sent at the recorded pace".to_string(),
            Speed::Max => ", sent as fast as the connections allow (--speed max)".to_string(),
        }
    )];
    let mut warnings = Vec::new();
    if stats.format != "har" {
        if stats.whole_seconds > 0 {
            notes.push(format!(
                "replay: {} of {count} timestamps have whole-second resolution: the requests of one second are spread evenly across it in log order",
                stats.whole_seconds
            ));
        } else {
            notes.push(format!(
                "replay: timestamps resolve to 1e-{} s",
                stats.fraction_digits
            ));
        }
        if stats.stamps_start {
            notes.push(format!(
                "replay: the {} format stamps each request when it arrived: it is sent at its logged time",
                stats.format
            ));
        } else if stats.request_times {
            notes.push(
                "replay: each request starts at its logged time minus its request time (logs stamp the end of a request)".into(),
            );
        } else {
            notes.push(format!(
                "replay: the {} format records no request time, so each request is sent at its logged time, which is when it ended: the pace is approximate by the recorded response times",
                stats.format
            ));
        }
        if body_lost > 0 {
            warnings.push(format!(
                "replay: not as recorded: {body_lost} POST/PUT/PATCH requests are sent without a body (an access log does not record bodies)"
            ));
        }
    }
    if stats.unread > 0 {
        warnings.push(format!(
            "replay: not as recorded: {} lines held no request to replay and were left out (first: {})",
            stats.unread,
            stats.first_unread.as_deref().unwrap_or("-")
        ));
    }
    if stats.not_http > 0 {
        warnings.push(format!(
            "replay: not as recorded: {} HAR entries are not http(s) requests (data:, blob:, ws:) and were left out",
            stats.not_http
        ));
    }
    Ok(ReplayPlan {
        opts: opts.clone(),
        count,
        first,
        span,
        backstep,
        routes,
        other_routes,
        notes,
        warnings,
        grouper,
    })
}

impl ReplayPlan {
    /// Seconds the replay takes at its speed (0 for `--speed max`).
    pub fn paced_span(&self) -> f64 {
        match self.opts.speed {
            Speed::Scaled(s) => self.span / s,
            Speed::Max => 0.0,
        }
    }
}

/// The job of `--replay`: the other load flags are checked as for any
/// load (through a plain job on the target URL), then the targets become
/// the file's routes and the one phase paces the recorded requests.
pub(crate) fn job(
    spec: &crate::LoadSpec,
    urls: &[String],
    opts: &ReplayOptions,
) -> Result<crate::Job, LoadError> {
    let clash = [
        ("--rate", spec.rate.is_some()),
        ("--sweep-connections", spec.sweep_connections.is_some()),
        ("--sweep-rate", spec.sweep_rate.is_some()),
        ("--stages-rate", spec.stages_rate.is_some()),
        ("--stages-connections", spec.stages_connections.is_some()),
        ("--step-duration", spec.step_duration.is_some()),
        ("--find-max", spec.find_max),
        ("--warmup", spec.warmup.is_some()),
        ("--targets", spec.targets.is_some()),
        ("--body", spec.body.is_some()),
        ("--method", spec.method.is_some()),
        ("--data", spec.data.is_some()),
    ];
    if let Some((flag, _)) = clash.iter().find(|(_, given)| *given) {
        return Err(LoadError::BadInput(format!(
            "--replay sends the recorded requests at their pace; drop {flag}"
        )));
    }
    let [url] = urls else {
        return Err(LoadError::BadInput(format!(
            "--replay needs exactly one target URL (scheme, host and port the recorded requests go to), got {}",
            urls.len()
        )));
    };
    if opts.looped && spec.duration.is_none() && spec.requests.is_none() {
        return Err(LoadError::BadInput(
            "--loop replays the file again and again: give -d DURATION or -n N".into(),
        ));
    }
    let plain = crate::LoadSpec {
        replay: None,
        ..spec.clone()
    };
    let mut job = plain.build(urls)?;
    let base = job.plan.targets[0].clone();
    if base.path != "/" {
        return Err(LoadError::BadInput(format!(
            "--replay {url}: give the target without a path (the recorded paths are sent as they are)"
        )));
    }
    let replay = scan(opts)?;
    let mut targets: Vec<crate::Target> = replay
        .routes
        .iter()
        .map(|(method, route)| crate::Target {
            url: route.clone(),
            method: method.clone(),
            body: Vec::new(),
            weight: 1,
            headers: Vec::new(),
            ..base.clone()
        })
        .collect();
    if replay.other_routes {
        targets.push(crate::Target {
            url: OTHER_ROUTES.into(),
            method: "*".into(),
            body: Vec::new(),
            weight: 1,
            headers: Vec::new(),
            ..base.clone()
        });
    }
    job.plan.targets = targets;
    let paced = replay.paced_span();
    let duration = match &spec.duration {
        Some(d) => crate::spec::duration_flag("--duration", d)?,
        // The whole file, then its last answers.
        None => Duration::from_secs_f64(paced) + job.plan.timeout,
    };
    let requests = match (spec.requests, spec.duration.is_some() || opts.looped) {
        (Some(n), _) => Some(n),
        (None, false) => Some(replay.count),
        (None, true) => None,
    };
    let connections = spec.connections;
    let (model, rate) = match opts.speed {
        Speed::Max => (crate::Model::Closed, None),
        Speed::Scaled(_) => (
            crate::Model::Open,
            Some((replay.count as f64 / paced.max(1e-3)).min(crate::spec::MAX_RATE)),
        ),
    };
    job.plan.model = model;
    job.plan.phases = vec![crate::PhaseSpec {
        connections,
        rate,
        duration,
        requests,
        ramp: None,
    }];
    job.plan.replay = Some(std::sync::Arc::new(replay));
    job.search = None;
    job.plan.validate()?;
    Ok(job)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn speeds() {
        assert_eq!(Speed::parse("2"), Ok(Speed::Scaled(2.0)));
        assert_eq!(Speed::parse("0.5x"), Ok(Speed::Scaled(0.5)));
        assert_eq!(Speed::parse("MAX"), Ok(Speed::Max));
        assert!(Speed::parse("0").is_err());
        assert!(Speed::parse("fast").is_err());
    }

    #[test]
    fn absolute_targets_lose_their_host() {
        assert_eq!(
            split_absolute("http://example.com:8080/a?b=1"),
            (Some("example.com:8080".into()), "/a?b=1".into())
        );
        assert_eq!(
            split_absolute("http://example.com?x"),
            (Some("example.com".into()), "/?x".into())
        );
        assert_eq!(split_absolute("/p"), (None, "/p".into()));
    }

    fn opts(file: PathBuf) -> ReplayOptions {
        ReplayOptions {
            file,
            format: None,
            regexp: None,
            speed: Speed::Scaled(1.0),
            looped: false,
            keep_host: false,
            cookies: false,
            groups: vec!["^/users/[0-9]+$".into()],
            auto_group: false,
        }
    }

    #[test]
    fn a_log_plans_its_routes_span_and_order() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("a.log");
        // The second line ended later but started first (a slow request).
        let line = |t: &str, uri: &str, rt: &str| {
            format!("time:{t}\tmethod:GET\turi:{uri}\tstatus:200\tsize:1\treqtime:{rt}\n")
        };
        let text = [
            line("1700000000.100", "/users/1", "0.000"),
            line("1700000000.900", "/users/2?x=1", "0.850"),
            line("1700000001.100", "/items", "0.000"),
        ]
        .concat();
        std::fs::write(&f, text).unwrap();
        let plan = scan(&opts(f)).unwrap();
        assert_eq!(plan.count, 3);
        assert!(
            (plan.first - 1_700_000_000.05).abs() < 1e-6,
            "{}",
            plan.first
        );
        assert!((plan.span - 1.05).abs() < 1e-6, "{}", plan.span);
        assert!((plan.backstep - 0.05).abs() < 1e-6, "{}", plan.backstep);
        assert_eq!(
            plan.routes,
            vec![
                ("GET".into(), "^/users/[0-9]+$".into()),
                ("GET".into(), "/items".into())
            ]
        );
        assert!(
            plan.notes.iter().any(|n| n.contains("1e-3")),
            "{:?}",
            plan.notes
        );
    }

    #[test]
    fn whole_seconds_are_spread_and_bodies_counted() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("c.log");
        let line = |s: u32, m: &str| {
            format!("127.0.0.1 - - [24/Nov/2026:10:00:{s:02} +0000] \"{m} /x HTTP/1.1\" 200 3 \"-\" \"curl/8\"\n")
        };
        std::fs::write(
            &f,
            [line(1, "GET"), line(1, "POST"), line(2, "GET")].concat(),
        )
        .unwrap();
        let mut starts = Vec::new();
        let stats = each_call(&opts(f.clone()), &mut |c| {
            starts.push(c.start);
            ControlFlow::Continue(())
        })
        .unwrap();
        assert_eq!(stats.whole_seconds, 3);
        let base = starts[0].floor();
        let rel: Vec<f64> = starts.iter().map(|s| s - base).collect();
        assert_eq!(rel, vec![0.25, 0.75, 1.5]);
        let plan = scan(&opts(f)).unwrap();
        assert!(
            plan.warnings.iter().any(|w| w.contains("1 POST/PUT/PATCH")),
            "{:?}",
            plan.warnings
        );
        assert!(
            plan.notes.iter().any(|n| n.contains("approximate")),
            "{:?}",
            plan.notes
        );
    }

    #[test]
    fn a_file_of_no_requests_is_refused_with_the_line() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("x.log");
        std::fs::write(
            &f,
            "time:x\tmethod:GET\turi:/a\tstatus:200\tsize:1\treqtime:0.1\n",
        )
        .unwrap();
        let e = scan(&opts(f)).unwrap_err().to_string();
        assert!(e.contains("x.log:1") && e.contains("not a time"), "{e}");
    }
}
