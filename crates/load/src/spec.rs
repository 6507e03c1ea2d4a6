//! The load options as a command line gives them (strings and numbers,
//! not yet checked) and their validation into a [`Plan`], an [`Slo`] and a
//! `--find-max` [`Search`]. Every front end that drives load (`bench`,
//! `run`, the demo) fills a [`LoadSpec`] so they accept exactly the same
//! options and refuse bad ones with the same words.

use crate::plan::{default_threads, parse_duration, parse_header, parse_sweep, parse_targets_file};
use crate::stages::{parse_stages, Ramp};
use crate::template::{Data, DataMode};
use crate::{LoadError, Model, PhaseSpec, Plan, Report, RunControl, Search, Slo, Target};
use std::path::PathBuf;
use std::time::Duration;

/// The load options, unvalidated, one field per command-line flag. Error
/// messages from [`LoadSpec::build`] name the flags (`--rate`, `-H`...), so
/// the fields keep the flags' spelling of values.
#[derive(Debug, Clone, PartialEq)]
pub struct LoadSpec {
    /// `-c`: closed model connections, open model connection cap.
    pub connections: usize,
    /// `-R`: open model total rate, requests per second.
    pub rate: Option<f64>,
    /// `-t`: event-loop threads; `None` is one per core.
    pub threads: Option<usize>,
    /// `--pin`: pin each event-loop thread to its own core.
    pub pin: bool,
    /// `-d`: how long to run, as written (`10s`); `None` is 10 seconds.
    pub duration: Option<String>,
    /// `-n`: stop after this many responses.
    pub requests: Option<u64>,
    /// `--warmup`: warm-up length, as written.
    pub warmup: Option<String>,
    /// `-X`: HTTP method; `None` is GET, or POST when there is a body.
    pub method: Option<String>,
    /// `-H`: extra headers, `Name: value`.
    pub headers: Vec<String>,
    /// `--body`: a string, or `@FILE` to read it from a file.
    pub body: Option<String>,
    /// `--timeout`: per-request timeout, as written.
    pub timeout: String,
    /// `--no-keepalive`: a new connection for every request.
    pub no_keepalive: bool,
    /// `--targets`: a file of requests, one per line.
    pub targets: Option<PathBuf>,
    /// `--sweep-connections A..B:STEP`.
    pub sweep_connections: Option<String>,
    /// `--sweep-rate A..B:STEP`.
    pub sweep_rate: Option<String>,
    /// `--step-duration`: length of each sweep phase; `None` is the duration.
    pub step_duration: Option<String>,
    /// `--slo`: the service-level objective.
    pub slo: Option<String>,
    /// `--find-max`: search for the highest rate meeting the SLO.
    pub find_max: bool,
    /// `--data`: a CSV file whose columns `{{csv.COLUMN}}` templates read.
    pub data: Option<PathBuf>,
    /// `--data-mode`: how requests take rows (see [`DataMode::parse`]);
    /// `None` is shared-sequential.
    pub data_mode: Option<String>,
    /// `--stages-rate` (alias `--stages`): open-model ramps `DUR:RPS,...`.
    pub stages_rate: Option<String>,
    /// `--stages-connections`: closed-model ramps `DUR:N,...`.
    pub stages_connections: Option<String>,
    /// `--scenario`: a YAML file of steps each virtual user runs (the URL,
    /// if given, is the base of its relative step URLs).
    pub scenario: Option<PathBuf>,
    /// `--replay FILE` and its options: recorded requests at their pace.
    pub replay: Option<crate::replay::ReplayOptions>,
}

/// Connections of the closed model unless told otherwise (the flag's default too).
pub const DEFAULT_CONNECTIONS: usize = 50;
/// Per-request timeout unless told otherwise (the flag's default too).
pub const DEFAULT_TIMEOUT: &str = "10s";

impl Default for LoadSpec {
    /// The command line's defaults: [`DEFAULT_CONNECTIONS`], [`DEFAULT_TIMEOUT`].
    fn default() -> Self {
        LoadSpec {
            connections: DEFAULT_CONNECTIONS,
            rate: None,
            threads: None,
            pin: false,
            duration: None,
            requests: None,
            warmup: None,
            method: None,
            headers: Vec::new(),
            body: None,
            timeout: DEFAULT_TIMEOUT.to_string(),
            no_keepalive: false,
            targets: None,
            sweep_connections: None,
            sweep_rate: None,
            step_duration: None,
            slo: None,
            find_max: false,
            data: None,
            data_mode: None,
            stages_rate: None,
            stages_connections: None,
            scenario: None,
            replay: None,
        }
    }
}

/// A load plan and what judges it, built from a [`LoadSpec`].
#[derive(Debug)]
pub struct Job {
    /// What to send, how, for how long.
    pub plan: Plan,
    /// `--slo`, parsed.
    pub slo: Option<Slo>,
    /// `--find-max`: search for the highest rate meeting the SLO.
    pub search: Option<Search>,
}

impl Job {
    /// Runs the job: the `--find-max` search when there is one (it needs
    /// the SLO to judge each rate), every phase of the plan otherwise.
    pub fn run(&self, ctl: &RunControl) -> Result<Report, LoadError> {
        match (&self.search, &self.slo) {
            (Some(search), Some(slo)) => crate::find_max(&self.plan, slo, *search, ctl),
            _ => crate::run(&self.plan, ctl),
        }
    }

    /// Whether the report passes the SLO, recording the verdicts in it. A
    /// search passes when it found a rate meeting the SLO (each step was
    /// judged during the search); without an SLO everything passes.
    pub fn judge(&self, report: &mut Report) -> bool {
        match &self.slo {
            Some(_) if self.search.is_some() => report.max_rate.is_some(),
            Some(slo) => crate::judge(report, slo),
            None => true,
        }
    }
}

fn bad(msg: impl Into<String>) -> LoadError {
    LoadError::BadInput(msg.into())
}

/// Parses a duration flag's value; the error names the flag.
pub fn duration_flag(flag: &str, s: &str) -> Result<Duration, LoadError> {
    parse_duration(s).map_err(|e| bad(format!("{flag}: {e}")))
}

/// `--body STRING|@FILE` as bytes; a missing file is bad input.
pub fn read_body(body: Option<&str>) -> Result<Vec<u8>, LoadError> {
    Ok(match body {
        None => Vec::new(),
        Some(b) => match b.strip_prefix('@') {
            Some(file) => keisoku_common::limits::read_whole(
                std::path::Path::new(file),
                &keisoku_common::Limits::current(),
            )
            .map_err(|e| bad(format!("--body: {file}: {e}")))?,
            None => b.as_bytes().to_vec(),
        },
    })
}

impl LoadSpec {
    /// Builds the load job from target URLs and these options. Every
    /// problem with the options is [`LoadError::BadInput`] naming the flag.
    pub fn build(&self, urls: &[String]) -> Result<Job, LoadError> {
        if let Some(r) = &self.replay {
            return crate::replay::job(self, urls, r);
        }
        let a = self;
        let body = read_body(a.body.as_deref())?;
        let method = a
            .method
            .clone()
            .unwrap_or_else(|| if a.body.is_some() { "POST" } else { "GET" }.to_string());
        let mut targets: Vec<Target> = Vec::new();
        let mut scenario = None;
        if let Some(f) = &a.scenario {
            let clash = [
                ("--targets", a.targets.is_some()),
                ("-X", a.method.is_some()),
                ("--body", a.body.is_some()),
                ("--find-max", a.find_max),
                ("a second URL", urls.len() > 1),
            ];
            if let Some((other, _)) = clash.iter().find(|(_, given)| *given) {
                return Err(bad(format!(
                    "--scenario gives the requests (steps); drop {other} (a URL, if given, is the base of relative step URLs)"
                )));
            }
            let s = crate::scenario::Scenario::load(f, urls.first().map(String::as_str))?;
            targets = s.targets();
            scenario = Some(std::sync::Arc::new(s));
        } else {
            for u in urls {
                targets.push(Target::new(&method, u, body.clone(), 1)?);
            }
        }
        if let Some(f) = &a.targets {
            targets.extend(parse_targets_file(f)?);
        }
        if targets.is_empty() {
            return Err(bad("no target: give a URL or --targets FILE"));
        }
        let mut plan = Plan::new(targets);
        plan.scenario = scenario;
        let mut close = a.no_keepalive;
        let mut chunked = false;
        for h in &a.headers {
            let (name, value) = parse_header(h).map_err(|e| bad(format!("-H: {e}")))?;
            // Headers that change how requests are framed or connections
            // reused are honoured, not silently replaced by the engine's.
            if name.eq_ignore_ascii_case("connection") {
                match value.to_ascii_lowercase().as_str() {
                    "close" => close = true,
                    "keep-alive" => {}
                    _ => {
                        return Err(bad(format!(
                            "-H {h:?}: Connection must be close or keep-alive"
                        )))
                    }
                }
                continue;
            }
            if name.eq_ignore_ascii_case("transfer-encoding") {
                if !value.eq_ignore_ascii_case("chunked") {
                    return Err(bad(format!(
                        "-H {h:?}: only Transfer-Encoding: chunked is supported"
                    )));
                }
                chunked = true;
            }
            if name.eq_ignore_ascii_case("content-length") {
                return Err(bad(format!(
                    "-H {h:?}: Content-Length comes from the body; drop the header"
                )));
            }
            plan.headers.push((name, value));
        }
        if chunked {
            // The body goes as one chunk and the last chunk; the request
            // then carries no Content-Length (both would be ambiguous).
            for t in &mut plan.targets {
                t.body = chunk(&t.body);
            }
        }
        let mode = match &a.data_mode {
            Some(m) => DataMode::parse(m).map_err(|e| bad(format!("--data-mode: {e}")))?,
            None => DataMode::default(),
        };
        if let Some(f) = &a.data {
            let text =
                keisoku_common::limits::read_whole_string(f, &keisoku_common::Limits::current())
                    .map_err(|e| bad(format!("--data: {}: {e}", f.display())))?;
            let data = Data::parse(&f.display().to_string(), &text, mode)
                .map_err(|e| bad(format!("--data: {e}")))?;
            plan.data = Some(data);
        } else if a.data_mode.is_some() {
            return Err(bad("--data-mode needs --data FILE.csv"));
        }
        plan.threads = a.threads.unwrap_or_else(default_threads);
        plan.pin = a.pin;
        plan.timeout = duration_flag("--timeout", &a.timeout)?;
        plan.keepalive = !close;
        if let Some(w) = &a.warmup {
            plan.warmup = duration_flag("--warmup", w)?;
        }
        let duration = match &a.duration {
            Some(d) => duration_flag("--duration", d)?,
            None => Duration::from_secs(10),
        };
        let step = match &a.step_duration {
            Some(d) => duration_flag("--step-duration", d)?,
            None => duration,
        };
        if let Some(r) = a.rate {
            if !(r.is_finite() && r > 0.0) {
                return Err(bad(format!("--rate: must be a positive number, got {r}")));
            }
            if r > MAX_RATE {
                return Err(bad(format!(
                    "--rate {r}: at most {MAX_RATE} requests per second"
                )));
            }
        }
        let one = |connections: usize, rate: Option<f64>, duration: Duration| PhaseSpec {
            connections,
            rate,
            duration,
            requests: a.requests,
            ramp: None,
        };
        plan.model = if a.rate.is_some() || a.sweep_rate.is_some() || a.stages_rate.is_some() {
            Model::Open
        } else {
            Model::Closed
        };
        let mut search = None;
        let staged = match (&a.stages_rate, &a.stages_connections) {
            (Some(_), Some(_)) => {
                return Err(bad("--stages-rate and --stages-connections: give one"))
            }
            (Some(s), None) => Some(("--stages-rate", s, true)),
            (None, Some(s)) => Some(("--stages-connections", s, false)),
            (None, None) => None,
        };
        if let Some((flag, _, _)) = staged {
            let clash = [
                ("--rate", a.rate.is_some()),
                ("--sweep-connections", a.sweep_connections.is_some()),
                ("--sweep-rate", a.sweep_rate.is_some()),
                ("--requests", a.requests.is_some()),
                ("--duration", a.duration.is_some()),
                ("--step-duration", a.step_duration.is_some()),
                ("--find-max", a.find_max),
                ("--warmup", a.warmup.is_some()),
            ];
            if let Some((other, _)) = clash.iter().find(|(_, given)| *given) {
                return Err(bad(format!(
                    "{flag} sets the load and the length of each stage; drop {other}"
                )));
            }
        }
        plan.phases = if let Some((flag, s, open)) = staged {
            let stages = parse_stages(s).map_err(|e| bad(format!("{flag}: {e}")))?;
            let mut from = 0.0;
            let mut phases = Vec::with_capacity(stages.len());
            for st in stages {
                if open && st.level > MAX_RATE {
                    return Err(bad(format!(
                        "{flag} {s}: {} is above {MAX_RATE} requests per second",
                        st.level
                    )));
                }
                if !open && st.level.fract() != 0.0 {
                    return Err(bad(format!(
                        "{flag} {s}: connection counts must be whole numbers"
                    )));
                }
                let ramp = Ramp { from, to: st.level };
                phases.push(PhaseSpec {
                    connections: if open {
                        a.connections
                    } else {
                        from.max(st.level).max(1.0) as usize
                    },
                    rate: open.then_some(st.level),
                    duration: st.duration,
                    requests: None,
                    ramp: Some(ramp),
                });
                from = st.level;
            }
            phases
        } else if let Some(s) = &a.sweep_connections {
            if a.rate.is_some() {
                return Err(bad(
                    "--sweep-connections is for the closed model; drop --rate",
                ));
            }
            let steps = parse_sweep(s).map_err(|e| bad(format!("--sweep-connections: {e}")))?;
            if steps.iter().any(|v| v.fract() != 0.0) {
                return Err(bad(format!(
                    "--sweep-connections: {s:?}: connection counts must be whole numbers"
                )));
            }
            steps.iter().map(|&c| one(c as usize, None, step)).collect()
        } else if let Some(s) = &a.sweep_rate {
            let steps = parse_sweep(s).map_err(|e| bad(format!("--sweep-rate: {e}")))?;
            if let Some(r) = steps.iter().find(|&&r| r > MAX_RATE) {
                return Err(bad(format!(
                    "--sweep-rate {s}: {r} is above {MAX_RATE} requests per second"
                )));
            }
            if a.find_max {
                // The sweep's STEP is the search's resolution.
                let st = s
                    .rsplit_once(':')
                    .and_then(|(_, st)| st.trim().parse::<f64>().ok())
                    .unwrap_or(1.0);
                let low = steps.first().copied().unwrap_or(0.0);
                search = Some(Search {
                    low,
                    high: steps.last().copied().unwrap_or(low),
                    step: st,
                });
            }
            steps
                .iter()
                .map(|&r| one(a.connections, Some(r), step))
                .collect()
        } else {
            if a.find_max {
                let r = a.rate.ok_or_else(|| {
                    bad("--find-max needs the open model: give --rate MAX or --sweep-rate A..B:STEP")
                })?;
                // Without a sweep, search up to --rate in twentieths.
                search = Some(Search {
                    low: r / 20.0,
                    high: r,
                    step: r / 20.0,
                });
            }
            vec![one(
                a.connections,
                a.rate,
                if search.is_some() { step } else { duration },
            )]
        };
        let slo = match &a.slo {
            Some(s) => Some(Slo::parse(s).map_err(|e| bad(format!("--slo: {e}")))?),
            None => None,
        };
        plan.validate()?;
        // Templates are compiled now so a placeholder that is not understood
        // is refused before the load starts (and before --json is opened).
        for t in &plan.targets {
            crate::build_request(t, &plan.headers, plan.keepalive, plan.data.as_ref())?;
        }
        let needed = plan.phases.iter().map(|p| p.connections).max().unwrap_or(0);
        ensure_open_files(needed as u64 + FILES_BESIDES_CONNECTIONS)?;
        Ok(Job { plan, slo, search })
    }
}

/// The highest `--rate` accepted: far above what one machine can send
/// (a few million requests per second), low enough that schedules and
/// counters never overflow.
pub const MAX_RATE: f64 = 10_000_000.0;

/// Files a load needs besides its connections: the store, logs, the
/// profiler's pipes, epoll instances.
const FILES_BESIDES_CONNECTIONS: u64 = 256;

/// `body` as one chunk and the last chunk (RFC 9112 §7.1).
fn chunk(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + 16);
    if !body.is_empty() {
        out.extend_from_slice(format!("{:x}\r\n", body.len()).as_bytes());
        out.extend_from_slice(body);
        out.extend_from_slice(b"\r\n");
    }
    out.extend_from_slice(b"0\r\n\r\n");
    out
}

/// Makes sure `needed` files can be open at once: the soft RLIMIT_NOFILE
/// is raised (up to the hard limit) when it is lower; when even the hard
/// limit is lower, the load is refused before it starts, instead of
/// thousands of "Too many open files" errors in its results.
pub fn ensure_open_files(needed: u64) -> Result<(), LoadError> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit fills the struct we own.
    if unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } != 0 {
        return Ok(());
    }
    if lim.rlim_cur == libc::RLIM_INFINITY || lim.rlim_cur >= needed {
        return Ok(());
    }
    if lim.rlim_max != libc::RLIM_INFINITY && lim.rlim_max < needed {
        return Err(bad(format!(
            "-c needs about {needed} open files but the limit is {} (hard limit {}); raise it (ulimit -n) or use fewer connections",
            lim.rlim_cur, lim.rlim_max
        )));
    }
    let raised = libc::rlimit {
        rlim_cur: needed,
        rlim_max: lim.rlim_max,
    };
    // SAFETY: setrlimit reads the struct we own.
    if unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &raised) } != 0 {
        return Err(bad(format!(
            "-c needs about {needed} open files but the limit is {} and could not be raised: {}",
            lim.rlim_cur,
            std::io::Error::last_os_error()
        )));
    }
    Ok(())
}

/// Checks an output file flag (`--json FILE`, `--hdr-log FILE`) before any
/// load starts: not a directory, in a directory that exists and can be
/// written. Nothing is created.
pub fn check_output_file(flag: &str, path: &std::path::Path) -> Result<(), LoadError> {
    use std::os::unix::ffi::OsStrExt;
    let refuse = |why: String| Err(bad(format!("{flag} {}: {why}", path.display())));
    if path.is_dir() {
        return refuse("is a directory; give a file name".into());
    }
    let parent = match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => std::path::Path::new("."),
    };
    if !parent.is_dir() {
        return refuse(format!("the directory {} does not exist", parent.display()));
    }
    let probe = if path.exists() { path } else { parent };
    let Ok(c) = std::ffi::CString::new(probe.as_os_str().as_bytes()) else {
        return refuse("contains a NUL byte".into());
    };
    // SAFETY: access(2) reads the NUL-terminated path we own.
    if unsafe { libc::access(c.as_ptr(), libc::W_OK) } != 0 {
        return refuse(format!(
            "cannot be written: {}",
            std::io::Error::last_os_error()
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn url() -> Vec<String> {
        vec!["http://127.0.0.1:8080/".to_string()]
    }

    fn msg(spec: &LoadSpec, urls: &[String]) -> String {
        match spec.build(urls) {
            Err(e @ LoadError::BadInput(_)) => e.to_string(),
            other => panic!("expected bad input, got {other:?}"),
        }
    }

    #[test]
    fn framing_headers_are_honoured_or_refused() {
        let spec = |h: &str| LoadSpec {
            headers: vec![h.to_string()],
            body: Some("abc".into()),
            ..LoadSpec::default()
        };
        let job = spec("Connection: close").build(&url()).expect("job");
        assert!(!job.plan.keepalive);
        assert!(job.plan.headers.is_empty());
        let job = spec("connection: Keep-Alive").build(&url()).expect("job");
        assert!(job.plan.keepalive);
        let job = spec("Transfer-Encoding: chunked")
            .build(&url())
            .expect("job");
        assert_eq!(job.plan.targets[0].body, b"3\r\nabc\r\n0\r\n\r\n");
        assert!(msg(&spec("Connection: upgrade"), &url()).contains("close or keep-alive"));
        assert!(msg(&spec("Transfer-Encoding: gzip"), &url()).contains("only"));
        assert!(msg(&spec("Content-Length: 9"), &url()).contains("drop the header"));
    }

    #[test]
    fn absurd_rates_are_refused() {
        let spec = LoadSpec {
            rate: Some(1e10),
            ..LoadSpec::default()
        };
        assert!(msg(&spec, &url()).contains("at most 10000000"));
        let spec = LoadSpec {
            sweep_rate: Some("1000000..30000000:10000000".into()),
            ..LoadSpec::default()
        };
        assert!(msg(&spec, &url()).contains("above 10000000"));
    }

    #[test]
    fn output_files_are_checked_before_the_load() {
        let dir = tempfile::tempdir().expect("tempdir");
        let check = |p: &std::path::Path| match check_output_file("--json", p) {
            Err(LoadError::BadInput(m)) => m,
            other => panic!("{other:?}"),
        };
        assert!(check(dir.path()).contains("is a directory"));
        assert!(check(&dir.path().join("no/x.json")).contains("does not exist"));
        check_output_file("--json", &dir.path().join("x.json")).expect("writable");
        assert!(!dir.path().join("x.json").exists(), "nothing is created");
    }

    #[test]
    fn defaults_give_one_closed_ten_second_get_phase() {
        let job = LoadSpec::default().build(&url()).expect("job");
        assert_eq!(job.plan.model, Model::Closed);
        assert_eq!(job.plan.phases.len(), 1);
        assert_eq!(job.plan.phases[0].connections, 50);
        assert_eq!(job.plan.phases[0].duration, Duration::from_secs(10));
        assert_eq!(job.plan.timeout, Duration::from_secs(10));
        assert_eq!(job.plan.targets[0].method, "GET");
        assert!(job.slo.is_none() && job.search.is_none());
    }

    #[test]
    fn a_body_makes_the_default_method_post() {
        let spec = LoadSpec {
            body: Some("x=1".into()),
            ..LoadSpec::default()
        };
        let job = spec.build(&url()).expect("job");
        assert_eq!(job.plan.targets[0].method, "POST");
    }

    #[test]
    fn errors_name_the_flag() {
        assert_eq!(
            msg(&LoadSpec::default(), &[]),
            "no target: give a URL or --targets FILE"
        );
        let rate = LoadSpec {
            rate: Some(0.0),
            ..LoadSpec::default()
        };
        assert_eq!(
            msg(&rate, &url()),
            "--rate: must be a positive number, got 0"
        );
        let both = LoadSpec {
            rate: Some(10.0),
            sweep_connections: Some("1..3:1".into()),
            ..LoadSpec::default()
        };
        assert_eq!(
            msg(&both, &url()),
            "--sweep-connections is for the closed model; drop --rate"
        );
        let find = LoadSpec {
            find_max: true,
            slo: Some("p99<=1s".into()),
            ..LoadSpec::default()
        };
        assert_eq!(
            msg(&find, &url()),
            "--find-max needs the open model: give --rate MAX or --sweep-rate A..B:STEP"
        );
        let d = LoadSpec {
            duration: Some("soon".into()),
            ..LoadSpec::default()
        };
        assert!(msg(&d, &url()).starts_with("--duration: "));
        let h = LoadSpec {
            headers: vec!["nocolon".into()],
            ..LoadSpec::default()
        };
        assert!(msg(&h, &url()).starts_with("-H: "));
        let body = LoadSpec {
            body: Some("@/nonexistent/keisoku-body".into()),
            ..LoadSpec::default()
        };
        assert!(msg(&body, &url()).starts_with("--body: /nonexistent/keisoku-body: "));
    }

    #[test]
    fn sweep_rate_with_find_max_searches_the_sweep() {
        let spec = LoadSpec {
            sweep_rate: Some("100..400:100".into()),
            slo: Some("p99<=1s".into()),
            find_max: true,
            step_duration: Some("2s".into()),
            ..LoadSpec::default()
        };
        let job = spec.build(&url()).expect("job");
        assert_eq!(job.plan.model, Model::Open);
        assert_eq!(job.plan.phases.len(), 4);
        assert_eq!(job.plan.phases[0].duration, Duration::from_secs(2));
        let s = job.search.expect("search");
        assert_eq!((s.low, s.high, s.step), (100.0, 400.0, 100.0));
        assert!(job.slo.is_some());
    }

    #[test]
    fn find_max_with_rate_searches_in_twentieths() {
        let spec = LoadSpec {
            rate: Some(2000.0),
            slo: Some("p99<=1s".into()),
            find_max: true,
            ..LoadSpec::default()
        };
        let s = spec.build(&url()).expect("job").search.expect("search");
        assert_eq!((s.low, s.high, s.step), (100.0, 2000.0, 100.0));
    }

    #[test]
    fn fractional_connection_sweep_is_refused() {
        let spec = LoadSpec {
            sweep_connections: Some("1..2:0.5".into()),
            ..LoadSpec::default()
        };
        assert!(msg(&spec, &url()).contains("connection counts must be whole numbers"));
    }

    #[test]
    fn stages_become_ramped_phases() {
        let spec = LoadSpec {
            stages_rate: Some("2s:100,4s:300,2s:0".into()),
            connections: 20,
            ..LoadSpec::default()
        };
        let job = spec.build(&url()).expect("job");
        assert_eq!(job.plan.model, Model::Open);
        let p = &job.plan.phases;
        assert_eq!(p.len(), 3);
        assert_eq!(
            p[1].ramp,
            Some(Ramp {
                from: 100.0,
                to: 300.0
            })
        );
        assert_eq!((p[2].rate, p[2].connections), (Some(0.0), 20));
        assert_eq!(p[1].label(), "r=100..300");
        let spec = LoadSpec {
            stages_connections: Some("1s:10,1s:2".into()),
            ..LoadSpec::default()
        };
        let job = spec.build(&url()).expect("job");
        assert_eq!(job.plan.model, Model::Closed);
        assert_eq!(job.plan.phases[1].connections, 10);
        assert_eq!(job.plan.phases[1].label(), "c=10..2");
        let clash = LoadSpec {
            stages_rate: Some("1s:10".into()),
            duration: Some("5s".into()),
            ..LoadSpec::default()
        };
        assert!(msg(&clash, &url()).contains("drop --duration"));
        let frac = LoadSpec {
            stages_connections: Some("1s:2.5".into()),
            ..LoadSpec::default()
        };
        assert!(msg(&frac, &url()).contains("whole numbers"));
    }

    #[test]
    fn model_names_match_their_serialisation() {
        for m in [Model::Closed, Model::Open] {
            let json = serde_json::to_string(&m).expect("json");
            assert_eq!(json, format!("{:?}", m.name()));
        }
    }
}
