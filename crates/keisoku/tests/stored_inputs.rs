//! `keisoku flame/scope/diff` on stored runs: the same analyses as on files,
//! fed from the run store.

use keisoku_stacks::model::NO_PARENT;
use keisoku_stacks::{FrameKind, Profile, Thread, Unit};
use keisoku_store::{NewRun, RunStatus, Store};
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
    let mut time_ns: Vec<u64> = (0..work_samples)
        .map(|i| 10_000_000 * (i as u64 + 1))
        .collect();
    time_ns.push(1_500_000_000);
    let mut profile = Profile::new(name, Unit::Samples);
    let main = profile.frame_parts("main", "app", FrameKind::Native);
    let work = profile.frame_parts("work", "app", FrameKind::Native);
    let idle = profile.frame_parts("idle_wait", "app", FrameKind::Native);
    // Parents [-1, 0, 0], frames [0, 1, 2].
    let root = profile.child(NO_PARENT, main);
    profile.child(root, work);
    profile.child(root, idle);
    profile.thread(Thread {
        pid: 10,
        tid: 10,
        comm: "app".into(),
    });
    profile.samples.thread = Some(vec![0; node.len()]);
    profile.samples.node = node;
    profile.samples.time_ns = Some(time_ns);
    profile.start_unix_ns = Some(1_700_000_000_000_000_000);
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

/// `--store` works for every command that takes a run in place of a file,
/// as it does for `show`, `report` and `export` (it used to be an error).
#[test]
fn flame_scope_diff_and_logs_take_store() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("elsewhere.db");
    let store = Store::open(&db).unwrap();
    let before = store_run(&store, "before", 30);
    store_run(&store, "after", 90);
    let cwd = tempfile::tempdir().unwrap();
    let folded = dir.path().join("x.folded");
    let runs: [Vec<String>; 3] = [
        vec![
            "flame".into(),
            before.clone(),
            "-o".into(),
            folded.display().to_string(),
        ],
        vec![
            "scope".into(),
            "before".into(),
            "-o".into(),
            dir.path().join("s.html").display().to_string(),
        ],
        vec![
            "diff".into(),
            "before".into(),
            "after".into(),
            "-o".into(),
            dir.path().join("d.html").display().to_string(),
        ],
    ];
    for args in runs {
        let out = keisoku()
            .current_dir(cwd.path())
            .env_remove("KEISOKU_STORE")
            .args(&args)
            .arg("--store")
            .arg(&db)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "{args:?} --store: {}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    assert!(std::fs::read_to_string(&folded)
        .unwrap()
        .contains("app;main;work 30"));
    // logs: the run has no access log; with --store it is found and says so
    // (without, the name would be neither a file nor a run).
    let out = keisoku()
        .current_dir(cwd.path())
        .env_remove("KEISOKU_STORE")
        .args(["logs", "before", "--store"])
        .arg(&db)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{err}");
    assert!(!err.contains("no such file"), "{err}");
}
