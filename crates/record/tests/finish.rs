//! The one end of a recording, in process (no server, no profiler): what
//! `finish` returns is what it stored, findings included, for every
//! command that records.

use keisoku_record::{follow, Options, ProfileKind, Recording};
use keisoku_store::{NewRun, RunStatus, Store};
use std::io::Write;
use std::time::Duration;

/// LTSV lines for `n` requests to `uri`, each taking `secs`.
fn ltsv(uri: &str, secs: f64, n: usize) -> String {
    format!("time:21/Nov/2026:21:30:00 +0000\tmethod:GET\turi:{uri}\tstatus:200\tsize:5\treqtime:{secs}\n")
        .repeat(n)
}

#[test]
fn finish_stores_the_findings_it_returns_and_keeps_the_notes() {
    let dir = tempfile::tempdir().unwrap();
    let store_path = dir.path().join("runs.db");
    let log = dir.path().join("access.log");
    // Lines from before the recording are not the run's.
    std::fs::write(&log, ltsv("/old", 9.0, 50)).unwrap();
    let keep = follow::Keep {
        format: "ltsv".into(),
        pattern: None,
        lines: true,
        max_bytes: 1 << 20,
    };
    let mut rec = Recording::start(Options {
        store_path: store_path.clone(),
        new_run: NewRun {
            name: "finish-test".into(),
            ..NewRun::default()
        },
        interval: Duration::from_millis(200),
        pid: None,
        profile: ProfileKind::None,
        profile_hz: 99,
        all_cpus: false,
        wall_profile: keisoku_record::WallProfile::Auto,
        access_log: Some((log.clone(), follow::parser("ltsv", None).unwrap(), keep)),
        profile_auto: false,
    })
    .unwrap();
    // /slow takes 99% of the request time: the route-dominating rule fires.
    std::fs::OpenOptions::new()
        .append(true)
        .open(&log)
        .unwrap()
        .write_all((ltsv("/slow", 0.5, 20) + &ltsv("/fast", 0.001, 80)).as_bytes())
        .unwrap();
    rec.note("a note from the command");
    let done = rec.finish(RunStatus::Complete).unwrap();

    assert!(
        done.findings.iter().any(|f| f.id == "route-dominating"),
        "{:?}",
        done.findings.iter().map(|f| &f.id).collect::<Vec<_>>()
    );
    assert!(done.notes.iter().any(|n| n == "a note from the command"));
    let store = Store::open_existing(&store_path).unwrap();
    let stored = store.load(&done.run.run.id).unwrap();
    assert_eq!(stored.run.name, "finish-test");
    assert_eq!(stored.run.status, "complete");
    assert_eq!(
        stored.routes.access_log.len(),
        2,
        "the old lines do not count"
    );
    assert_eq!(stored.findings, keisoku_findings::to_json(&done.findings));
    assert_eq!(stored, done.run, "finish returns the run as stored");
    let notes = store.output(&done.run.run.id, "notes").unwrap();
    assert!(String::from_utf8_lossy(&notes).contains("a note from the command"));
}
