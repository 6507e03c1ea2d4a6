//! The load options as a command line gives them (strings and numbers,
//! not yet checked) and their validation into a [`Plan`], an [`Slo`] and a
//! `--find-max` [`Search`]. Every front end that drives load (`bench`,
//! `run`, the demo) fills a [`LoadSpec`] so they accept exactly the same
//! options and refuse bad ones with the same words.

use crate::plan::{default_threads, parse_duration, parse_header, parse_sweep, parse_targets_file};
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
        let a = self;
        let body = read_body(a.body.as_deref())?;
        let method = a
            .method
            .clone()
            .unwrap_or_else(|| if a.body.is_some() { "POST" } else { "GET" }.to_string());
        let mut targets: Vec<Target> = Vec::new();
        for u in urls {
            targets.push(Target::new(&method, u, body.clone(), 1)?);
        }
        if let Some(f) = &a.targets {
            targets.extend(parse_targets_file(f)?);
        }
        if targets.is_empty() {
            return Err(bad("no target: give a URL or --targets FILE"));
        }
        let mut plan = Plan::new(targets);
        for h in &a.headers {
            plan.headers
                .push(parse_header(h).map_err(|e| bad(format!("-H: {e}")))?);
        }
        plan.threads = a.threads.unwrap_or_else(default_threads);
        plan.pin = a.pin;
        plan.timeout = duration_flag("--timeout", &a.timeout)?;
        plan.keepalive = !a.no_keepalive;
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
        }
        let one = |connections: usize, rate: Option<f64>, duration: Duration| PhaseSpec {
            connections,
            rate,
            duration,
            requests: a.requests,
        };
        plan.model = if a.rate.is_some() || a.sweep_rate.is_some() {
            Model::Open
        } else {
            Model::Closed
        };
        let mut search = None;
        plan.phases = if let Some(s) = &a.sweep_connections {
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
        Ok(Job { plan, slo, search })
    }
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
    fn model_names_match_their_serialisation() {
        for m in [Model::Closed, Model::Open] {
            let json = serde_json::to_string(&m).expect("json");
            assert_eq!(json, format!("{:?}", m.name()));
        }
    }
}
