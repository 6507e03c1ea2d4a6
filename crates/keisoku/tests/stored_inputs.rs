//! `keisoku flame/scope/diff` on stored runs: the same analyses as on files,
//! fed from the run store.

use keisoku_store::{Frames, NewRun, Nodes, Profile, RunStatus, Samples, Store, ThreadInfo};
use std::process::Command;

fn keisoku() -> Command {
    Command::new(env!("CARGO_BIN_EXE_keisoku"))
}

/// A run whose profile has two stacks: main;work (`work_samples` samples,
/// 10 ms apart from 10 ms) and main;idle_wait (1 sample at 1500 ms).
fn store_run(store: &Store, name: &str, work_samples: usize) -> String {
    let run = store
        .create_run(&NewRun {
            name: name.into(),
            ..NewRun::default()
        })
        .unwrap();
    let mut node = vec![1u32; work_samples];
    node.push(2);
    let mut time_ms: Vec<f64> = (0..work_samples).map(|i| 10.0 * (i + 1) as f64).collect();
    time_ms.push(1500.0);
    let profile = Profile {
        version: 1,
        title: name.into(),
        unit: "samples".into(),
        kinds: keisoku_stacks::FrameKind::NAMES.map(String::from).to_vec(),
        frames: Frames {
            name: vec!["main".into(), "work".into(), "idle_wait".into()],
            module: vec!["app".into(), "app".into(), "app".into()],
            kind: vec![1, 1, 1],
        },
        nodes: Nodes {
            parent: vec![-1, 0, 0],
            frame: vec![0, 1, 2],
        },
        threads: vec![ThreadInfo {
            pid: 10,
            tid: 10,
            comm: "app".into(),
        }],
        samples: Some(Samples {
            thread: Some(vec![0; node.len()]),
            node,
            weight: None,
            time_ms: Some(time_ms),
        }),
        counts: None,
        start_unix_ns: Some(1_700_000_000_000_000_000),
        duration_ms: Some(2000.0),
    };
    store.put_profile(&run, &profile).unwrap();
    store.finish(&run, RunStatus::Complete, 2000.0).unwrap();
    run
}

#[test]
fn flame_scope_and_diff_read_stored_runs() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let store = Store::open(&db).unwrap();
    let before = store_run(&store, "before", 30);
    store_run(&store, "after", 90);

    let folded = dir.path().join("before.folded");
    let out = keisoku()
        .env("KEISOKU_STORE", &db)
        .args(["flame", &before, "-o"])
        .arg(&folded)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&folded).unwrap();
    let mut lines: Vec<&str> = text.lines().collect();
    lines.sort();
    // Folded output starts with the process name, as stackcollapse-perf.pl does.
    assert_eq!(lines, ["app;main;idle_wait 1", "app;main;work 30"]);

    // A time range selects samples by their stored times.
    let out = keisoku()
        .env("KEISOKU_STORE", &db)
        .args(["flame", "before", "--from", "1", "--to", "2", "-o"])
        .arg(&folded)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        std::fs::read_to_string(&folded).unwrap().trim(),
        "app;main;idle_wait 1"
    );

    let out = keisoku()
        .env("KEISOKU_STORE", &db)
        .args(["scope", "last"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("busiest cell"));

    let out = keisoku()
        .env("KEISOKU_STORE", &db)
        .args(["diff", "before", "after", "--fail-if", "work>+5%"])
        .output()
        .unwrap();
    assert_eq!(
        out.status.code(),
        Some(3),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn neither_file_nor_run_is_bad_input() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let store = Store::open(&db).unwrap();
    let run = store
        .create_run(&NewRun {
            name: "no-profile".into(),
            ..NewRun::default()
        })
        .unwrap();
    store.finish(&run, RunStatus::Complete, 1.0).unwrap();

    let out = keisoku()
        .env("KEISOKU_STORE", &db)
        .args(["flame", "no-such-thing"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no such file, nor a run"));

    let out = keisoku()
        .env("KEISOKU_STORE", &db)
        .args(["flame", "no-profile"])
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("has no profile"));
}
