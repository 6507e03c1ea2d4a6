//! Measuring the demo's sides: the schedule the flags ask for, one side
//! loaded while recorded exactly as `keisoku run` records a run (through
//! keisoku-record), the results document of `--json`, and the texts the
//! command prints around them (`--serve`, `--target-only`). The binary
//! keeps the flags, the Ctrl-C wiring and the printing.

use crate::harness::{
    describe, knob_check, per_request, render_knob_check, render_side, Comparison, KnobCheck, Side,
};
use crate::{sample_requests, DemoConfig, DemoError, Knobs, TargetProcess};
use keisoku_load::{LoadError, Plan, Report, RunControl, Slo};
use keisoku_record::{Finished, Options, ProfileKind, Recording};
use keisoku_store::{NewRun, RunStatus};
use std::fmt::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::time::Duration;

/// A demo flag the user got wrong (the binary exits with status 2). The
/// texts are the ones `keisoku demo` has always printed.
#[derive(Debug, thiserror::Error)]
pub enum FlagError {
    /// `--slo` does not parse.
    #[error("--slo: {0}")]
    Slo(#[source] LoadError),
    /// `--sweep` is not a connection list.
    #[error("--sweep {0}")]
    Sweep(#[source] crate::harness::SweepError),
    /// `--step-duration` is not a duration.
    #[error("--step-duration: {0}")]
    StepDuration(#[source] LoadError),
    /// `--step-duration 0`: no phase would last.
    #[error("--step-duration must be above 0")]
    ZeroStep,
    /// `--warmup` is not a duration.
    #[error("--warmup: {0}")]
    Warmup(#[source] LoadError),
    /// `--listen` is not `IP:PORT`.
    #[error("--listen {0:?}: expected IP:PORT")]
    Listen(String),
    /// `--knobs` names an unknown knob or is malformed.
    #[error(transparent)]
    Knobs(DemoError),
    /// `--log-roll-mb 0`.
    #[error("--log-roll-mb must be at least 1")]
    LogRoll,
}

/// What each side is measured under: the SLO and the sweep.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// The SLO each phase is judged against.
    pub slo: Slo,
    /// Connections per phase.
    pub sweep: Vec<usize>,
    /// How long each phase lasts.
    pub step: Duration,
    /// Warm-up before the first phase.
    pub warmup: Duration,
}

impl Schedule {
    /// Checks `--slo`, `--sweep`, `--step-duration` and `--warmup`;
    /// `quick` replaces the sweep with 1, 4, 16 connections of 1 s each
    /// and no warm-up (for tests and smoke checks).
    pub fn from_flags(
        slo: &str,
        quick: bool,
        sweep: &str,
        step: &str,
        warmup: &str,
    ) -> Result<Schedule, FlagError> {
        let slo = Slo::parse(slo).map_err(FlagError::Slo)?;
        let (sweep, step, warmup) = if quick {
            (vec![1, 4, 16], Duration::from_secs(1), Duration::ZERO)
        } else {
            (
                crate::harness::parse_connections(sweep).map_err(FlagError::Sweep)?,
                keisoku_load::plan::parse_duration(step).map_err(FlagError::StepDuration)?,
                keisoku_load::plan::parse_duration(warmup).map_err(FlagError::Warmup)?,
            )
        };
        if step.is_zero() {
            return Err(FlagError::ZeroStep);
        }
        Ok(Schedule {
            slo,
            sweep,
            step,
            warmup,
        })
    }
}

/// The `--target-only` server's config from its hidden flags.
pub fn target_config(
    listen: &str,
    knobs: Option<&str>,
    workers: Option<usize>,
    log_roll_mb: Option<u64>,
) -> Result<DemoConfig, FlagError> {
    let listen: SocketAddr = listen
        .parse()
        .map_err(|_| FlagError::Listen(listen.to_string()))?;
    let knobs = Knobs::parse_list(knobs.unwrap_or("")).map_err(FlagError::Knobs)?;
    let mut config = DemoConfig {
        listen,
        knobs,
        workers,
        ..DemoConfig::default()
    };
    if let Some(mb) = log_roll_mb {
        if mb == 0 {
            return Err(FlagError::LogRoll);
        }
        config.log_roll_bytes = mb * 1024 * 1024;
    }
    Ok(config)
}

/// One side measured: its target loaded under the sweep while recorded.
#[derive(Debug)]
pub struct Measured {
    /// The load's report, judged against the SLO (or why the load failed).
    pub result: Result<Report, LoadError>,
    /// Whether the load met the SLO.
    pub pass: bool,
    /// The target's `GET /stats` counters after the load, when readable.
    pub stats: Option<serde_json::Value>,
    /// The stored run, its findings and the recording's notes.
    pub finished: Finished,
}

/// Where a side's run is stored and what started it.
#[derive(Debug, Clone)]
pub struct RunPlace {
    /// The run store file.
    pub store_path: PathBuf,
    /// The command line, kept with the run.
    pub command: String,
}

/// The run a side is recorded as: `demo-naive`, `demo-naiveKNOB` or
/// `demo-tuned`, tagged with its knobs.
fn new_run(side: &Side, target: &TargetProcess, command: String) -> NewRun {
    NewRun {
        name: format!("demo-{}", side.name.replace([' ', '(', ')'], "")),
        tags: [("knobs".to_string(), describe(&side.knobs))].into(),
        target: Some(format!("{}/bid", target.url)),
        command,
        model: Some("closed".into()),
        ..NewRun::default()
    }
}

/// Loads `target` with `plan` while recording it as `keisoku run` records
/// one (host, target process, perf profile, all into the store, then
/// judged by the rules), and stops the target. `loaded` is called as soon
/// as the load ends (to clear the progress line).
pub fn measure(
    side: &Side,
    target: TargetProcess,
    plan: &Plan,
    slo: &Slo,
    ctl: &RunControl,
    place: RunPlace,
    loaded: impl FnOnce(),
) -> Result<Measured, keisoku_record::Error> {
    let mut rec = Recording::create(Options {
        store_path: place.store_path,
        new_run: new_run(side, &target, place.command),
        interval: Duration::from_millis(200),
        pid: Some(target.pid()),
        profile: ProfileKind::Perf,
        profile_hz: 99,
        all_cpus: false,
        wall_profile: keisoku_record::WallProfile::Auto,
        access_log: None,
        profile_auto: true,
    })?;
    rec.start_recorders()?;
    let mut result = keisoku_load::run(plan, ctl);
    loaded();
    let stats = target.stats().ok();
    // Judged before it is stored, so the run's report shows the verdict.
    let pass = result.as_mut().is_ok_and(|r| keisoku_load::judge(r, slo));
    let status = if result.is_ok() && !ctl.stop.load(Ordering::SeqCst) {
        RunStatus::Complete
    } else {
        RunStatus::Interrupted
    };
    // Recorders stop before the target, so perf can still read its symbols.
    let finished = rec.finish_with_load(status, result.as_ref().ok())?;
    target.stop();
    Ok(Measured {
        result,
        pass,
        stats,
        finished,
    })
}

/// One side's results, as `--json` writes them.
#[derive(Debug)]
pub struct SideResult {
    /// The side's name.
    pub name: String,
    /// Its knobs.
    pub knobs: Knobs,
    /// Whether it met the SLO.
    pub pass: bool,
    /// The load's report.
    pub report: Report,
    /// The target's counters after the load.
    pub target_stats: Option<serde_json::Value>,
    /// The stored run's id.
    pub run_id: String,
    /// The findings, as `keisoku export` gives them.
    pub findings: Vec<serde_json::Value>,
    /// Which planted problems the findings named.
    pub knob_check: Vec<KnobCheck>,
}

/// Why a measured side has no results to show.
#[derive(Debug, thiserror::Error)]
pub enum SideError {
    /// The load itself failed.
    #[error("the load run failed")]
    Load(#[source] LoadError),
    /// The load ran but every request failed (the reasons, joined).
    #[error("not one request to the demo target succeeded: {0}")]
    NothingSucceeded(String),
}

/// A measured side, concluded: what the recording noted, the stored run,
/// and the side's results with the text the demo prints for them.
#[derive(Debug)]
pub struct Concluded {
    /// The recording's notes (printed whatever happened).
    pub notes: Vec<String>,
    /// The stored run's id (kept even when the load failed).
    pub run_id: String,
    /// The results and their text: the sweep table and verdict, the
    /// stored run, the findings and the knob check.
    pub side: Result<(SideResult, String), SideError>,
}

/// Concludes a measured `side`: checks the load succeeded at all, renders
/// its results and checks the findings against its naive knobs.
pub fn conclude(side: &Side, measured: Measured) -> Concluded {
    let Measured {
        result,
        pass,
        stats,
        finished:
            Finished {
                run: json,
                findings,
                notes,
                ..
            },
    } = measured;
    let run_id = json.run.id.clone();
    let side = result.map_err(SideError::Load).and_then(|report| {
        if report.nothing_succeeded() {
            return Err(SideError::NothingSucceeded(report.error_reasons.join("; ")));
        }
        let mut text = render_side(side, &report, pass, stats.as_ref());
        let _ = writeln!(text, "run {run_id} stored");
        text.push_str(&keisoku_findings::render_text(&findings));
        let knob_check = knob_check(&side.knobs, &findings);
        text.push_str(&render_knob_check(&knob_check));
        Ok((
            SideResult {
                name: side.name.clone(),
                knobs: side.knobs,
                pass,
                report,
                target_stats: stats,
                run_id: run_id.clone(),
                findings: keisoku_findings::to_json(&findings),
                knob_check,
            },
            text,
        ))
    });
    Concluded {
        notes,
        run_id,
        side,
    }
}

/// The naive-vs-tuned comparison, when both sides were measured.
pub fn comparison(results: &[SideResult]) -> Option<Comparison> {
    let naive = results.iter().find(|r| r.name.starts_with("naive"));
    let tuned = results.iter().find(|r| r.name == "tuned");
    naive
        .zip(tuned)
        .and_then(|(n, t)| crate::harness::compare(&n.report, &t.report))
}

/// The demo's gate: the tuned side was measured and missed the SLO.
pub fn tuned_failed(results: &[SideResult]) -> bool {
    results.iter().any(|r| r.name == "tuned" && !r.pass)
}

/// The `--json` document: the SLO text, whether Ctrl-C cut it short, each
/// side and the comparison.
pub fn results_json(
    slo: &str,
    partial: bool,
    results: &[SideResult],
    comparison: Option<&Comparison>,
) -> serde_json::Value {
    serde_json::json!({
        "slo": slo,
        "partial": partial,
        "sides": results.iter().map(|r| serde_json::json!({
            "name": r.name,
            "knobs": r.knobs,
            "slo_pass": r.pass,
            "target_stats": r.target_stats,
            "run_id": r.run_id,
            "findings": r.findings,
            "knob_check": r.knob_check,
            "report": r.report,
        })).collect::<Vec<_>>(),
        "comparison": comparison,
    })
}

/// The line that opens a side: its name, URL, PID and knobs.
pub fn render_side_header(side: &Side, url: &str, pid: u32) -> String {
    format!(
        "== {} target: {url} (pid {pid}; knobs: {})\n",
        side.name,
        describe(&side.knobs)
    )
}

/// What `--serve` prints once the target is up: where it is and what to
/// try against it.
pub fn render_serving(url: &str, pid: u32, knobs: &Knobs) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "demo target: {url} (pid {pid})");
    let _ = writeln!(out, "knobs: {knobs}");
    let _ = writeln!(out, "try:   curl -s {url}/health");
    let _ = writeln!(
        out,
        "       keisoku bench -c 16 -d 10s -X POST --body '{}' {url}/bid",
        sample_requests(1)
            .first()
            .map(String::as_str)
            .unwrap_or("{}"),
    );
    let _ = writeln!(out, "       perf record -g -p {pid}");
    let _ = writeln!(out, "Ctrl-C stops it.");
    out
}

/// What `--serve` prints when Ctrl-C stopped the target: the work it did,
/// from its counters when they could be read.
pub fn render_served(stats: Option<&serde_json::Value>) -> String {
    match stats {
        Some(s) => format!(
            "\nthe target served {} requests\ntarget work per request: {}\n",
            s["requests"],
            per_request(s)
        ),
        None => "\nthe target stopped before its counters could be read\n".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_quick_and_errors() {
        let s = Schedule::from_flags(crate::harness::DEFAULT_SLO, true, "x", "y", "z")
            .expect("quick ignores the sweep flags");
        assert_eq!(s.sweep, vec![1, 4, 16]);
        assert_eq!(s.step, Duration::from_secs(1));
        assert_eq!(s.warmup, Duration::ZERO);
        let s = Schedule::from_flags("p99<=50ms", false, "1,2", "2s", "0s").expect("schedule");
        assert_eq!(s.sweep, vec![1, 2]);
        let err = |r: Result<Schedule, FlagError>| r.expect_err("refused").to_string();
        assert_eq!(
            err(Schedule::from_flags("p99<=50ms", false, "1", "0s", "1s")),
            "--step-duration must be above 0"
        );
        assert!(
            err(Schedule::from_flags("p99<=50ms", false, "1", "soon", "1s"))
                .starts_with("--step-duration: ")
        );
        assert!(
            err(Schedule::from_flags("p99<=50ms", false, "1", "1s", "x")).starts_with("--warmup: ")
        );
        assert!(
            err(Schedule::from_flags("nonsense", false, "1", "1s", "1s")).starts_with("--slo: ")
        );
        assert!(
            err(Schedule::from_flags("p99<=50ms", false, "", "1s", "1s")).starts_with("--sweep ")
        );
    }

    #[test]
    fn target_config_checks_its_flags() {
        let c = target_config("127.0.0.1:0", Some("all=naive"), Some(2), Some(3)).expect("ok");
        assert_eq!(c.knobs, Knobs::all_naive());
        assert_eq!(c.workers, Some(2));
        assert_eq!(c.log_roll_bytes, 3 * 1024 * 1024);
        let err = |r: Result<DemoConfig, FlagError>| r.expect_err("refused").to_string();
        assert_eq!(
            err(target_config("nowhere", None, None, None)),
            "--listen \"nowhere\": expected IP:PORT"
        );
        assert_eq!(
            err(target_config("127.0.0.1:0", None, None, Some(0))),
            "--log-roll-mb must be at least 1"
        );
        assert!(err(target_config(
            "127.0.0.1:0",
            Some("bogus=naive"),
            None,
            None
        ))
        .contains("bogus"));
    }

    #[test]
    fn serve_texts() {
        let text = render_serving("http://127.0.0.1:9", 42, &Knobs::all_tuned());
        assert!(text.starts_with("demo target: http://127.0.0.1:9 (pid 42)\nknobs: "));
        assert!(text.contains("       perf record -g -p 42\nCtrl-C stops it.\n"));
        assert_eq!(
            render_served(None),
            "\nthe target stopped before its counters could be read\n"
        );
        let stats = serde_json::json!({"requests": 10});
        assert!(render_served(Some(&stats)).starts_with("\nthe target served 10 requests\n"));
        let side = Side {
            name: "tuned".into(),
            knobs: Knobs::all_tuned(),
        };
        assert_eq!(
            render_side_header(&side, "http://x", 7),
            "== tuned target: http://x (pid 7; knobs: all tuned)\n"
        );
    }
}
