//! Findings on real recorded runs of the demo target: with one knob naive,
//! its finding is reported and ranked in the top 3; with every knob tuned,
//! no problem is reported. Each run is a short recorded, profiled sweep
//! (`keisoku run --server-cmd 'keisoku demo --target-only ...'`); the runs
//! take turns so that they do not load each other on a small machine.

mod common;
use common::{free_port, BIN};

use std::path::Path;
use std::process::Command;
use std::sync::Mutex;

static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// Records one run of the target with `knobs` (two phases of `step` each)
/// and returns its exported JSON.
fn record(dir: &Path, knobs: &str, extra_target_flags: &str, step: &str) -> serde_json::Value {
    let body = dir.join("bid.json");
    std::fs::write(&body, &keisoku_demo::sample_requests(1)[0]).expect("write body");
    let store = dir.join("runs.db");
    let port = free_port();
    let out = Command::new(BIN)
        .args([
            "run",
            "--target",
            &format!("http://127.0.0.1:{port}/bid"),
            "--server-cmd",
            &format!("'{BIN}' demo --target-only --listen 127.0.0.1:{port} --knobs {knobs} {extra_target_flags}"),
            "--body",
            &format!("@{}", body.display()),
            "-H",
            "Content-Type: application/json",
            "--sweep-connections",
            "1..8:7",
            "--step-duration",
            step,
            "--warmup",
            "500ms",
            "--interval",
            "100ms",
            "--store",
        ])
        .arg(&store)
        .output()
        .expect("run keisoku");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.code() == Some(0),
        "keisoku run failed: {}\n{}",
        text,
        String::from_utf8_lossy(&out.stderr)
    );
    let exported = common::export(&store, "last", "json");
    keep(knobs, &exported);
    serde_json::from_slice(&exported).expect("run JSON")
}

/// With `KEISOKU_KEEP_RUNS=DIR`, keeps each exported run for tuning rules
/// (`cargo run -p keisoku-findings --example analyze -- DIR/*.json`).
fn keep(knobs: &str, json: &[u8]) {
    let Some(dir) = std::env::var_os("KEISOKU_KEEP_RUNS") else {
        return;
    };
    let stamp = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis());
    let name = knobs.replace(['=', ','], "_");
    let path = Path::new(&dir).join(format!("{name}-{stamp}.json"));
    if let Err(e) = std::fs::write(&path, json) {
        eprintln!("could not keep {}: {e}", path.display());
    }
}

fn ids(run: &serde_json::Value) -> Vec<(String, String)> {
    run["findings"]
        .as_array()
        .map(|a| {
            a.iter()
                .map(|f| {
                    (
                        f["id"].as_str().unwrap_or("").to_string(),
                        f["severity"].as_str().unwrap_or("").to_string(),
                    )
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Runs the knob naive and checks that one of the findings naming it
/// (`Knobs::finding_ids`, the ground truth `keisoku demo` also reports) is
/// among the first three.
fn knob(name: &str, needs_profile: bool, extra: &str) {
    knob_for(name, needs_profile, extra, "2500ms");
}

fn knob_for(name: &str, needs_profile: bool, extra: &str, step: &str) {
    let want = keisoku_demo::Knobs::finding_ids(name);
    assert!(!want.is_empty(), "unknown knob {name}");
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("temp dir");
    let run = record(dir.path(), &format!("{name}=naive"), extra, step);
    if needs_profile && run["profile"].is_null() {
        // perf missing or not permitted here: the run says so in its notes.
        eprintln!("skipping {name}: no CPU profile was recorded (perf unavailable)");
        return;
    }
    let found = ids(&run);
    let top: Vec<&str> = found.iter().take(3).map(|(id, _)| id.as_str()).collect();
    assert!(
        top.iter().any(|id| want.contains(id)),
        "{name}: expected one of {want:?} in the top 3, got {found:?}"
    );
}

#[test]
fn json_cache_is_json_parsing() {
    knob("json-cache", true, "");
}

#[test]
fn formatter_is_regex_or_formatter_construction() {
    knob("formatter", true, "");
}

#[test]
fn per_request_init_is_config_load_or_file_open() {
    knob("per-request-init", true, "");
}

#[test]
fn sync_log_rollover_is_a_stall() {
    // Rollovers come with logged bytes, so with 4 s phases a slow run
    // (~800 req/s at 1 connection) saw one rollover or none in the measured
    // phases and the test failed 1 run in 3; 6 s phases give a slow run at
    // least one inside the measured window. The target's default 16 MiB
    // roll stalled ~0.15-0.6 s on the hosts of 2026-11-24, but ~50 ms on a
    // faster one (2026-11-25, Intel Xeon: 3,200 req/s at 1 connection),
    // half a 100-ms bin, and the stall was missed in 1 run of 4 and in a
    // fresh-clone CI run. 32 MiB rolls stall ~100-150 ms there, 3-4 times
    // in the 8-connection phase (6 of 6 runs).
    knob_for("sync-log-rollover", true, "--log-roll-mb 32", "6s");
}

#[test]
fn single_worker_is_one_core() {
    knob("single-worker", true, "");
}

#[test]
fn no_keepalive_is_connection_churn() {
    knob("no-keepalive", false, "");
}

#[test]
fn sync_external_call_is_a_blocking_wait() {
    knob("sync-external-call", false, "");
}

#[test]
#[ignore = "needs a host with several L3/NUMA domains: on this 2-core host (one shared L3) migrations cost nothing measurable; even a 32-worker pool at 0.3-0.7 migrations per request used no more CPU per request than pinned (docs/findings.md)"]
fn unpinned_is_scheduler_churn() {
    knob("unpinned", false, "");
}

#[test]
fn all_tuned_reports_no_problem() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner());
    let dir = tempfile::tempdir().expect("temp dir");
    let run = record(dir.path(), "all=tuned", "", "2500ms");
    let problems: Vec<(String, String)> = ids(&run)
        .into_iter()
        .filter(|(_, sev)| sev != "info")
        .collect();
    assert!(problems.is_empty(), "false alarms: {problems:?}");
}
