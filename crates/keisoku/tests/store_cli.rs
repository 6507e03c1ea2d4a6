//! `keisoku runs`, `show`, `export`, `rm` on a store built through the
//! store API: naming runs, formats, errors.

use keisoku_store::{NewRun, RunStatus, Series, Store};
use std::process::{Command, Output};

const BIN: &str = env!("CARGO_BIN_EXE_keisoku");

fn keisoku(args: &[&str]) -> Output {
    Command::new(BIN).args(args).output().unwrap()
}

fn make_store(path: &std::path::Path) -> (String, String) {
    let store = Store::open(path).unwrap();
    let mk = |name: &str, started: i64| {
        let id = store
            .create_run(&NewRun {
                name: name.into(),
                started_unix_ms: started,
                target: Some("http://127.0.0.1:9/".into()),
                ..NewRun::default()
            })
            .unwrap();
        store
            .append_series(
                &id,
                &[
                    Series {
                        name: "cpu.0.idle".into(),
                        unit: "%".into(),
                        t_ms: vec![1000.0, 2000.0],
                        v: vec![50.0, 20.0],
                    },
                    Series {
                        name: "sched.ctxt".into(),
                        unit: "/s".into(),
                        t_ms: vec![1000.0],
                        v: vec![1234.0],
                    },
                ],
            )
            .unwrap();
        store.put_results(&id, &serde_json::json!({"requests": 10, "rps": 5.0, "errors": 0, "latency_ms": {"p50": 1.0, "p99": 2.0}}), Some(5.0), Some(2.0)).unwrap();
        store.finish(&id, RunStatus::Complete, 2000.0).unwrap();
        id
    };
    (mk("old", 1_763_700_000_000), mk("new", 1_763_800_000_000))
}

#[test]
fn runs_show_export_and_rm() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let s = path.to_str().unwrap();
    let (old, new) = make_store(&path);

    let out = keisoku(&["runs", "--store", s]);
    assert!(out.status.success());
    let text = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert!(
        lines[0].starts_with("ID") && lines[0].contains("P99"),
        "{text}"
    );
    assert!(
        lines[1].starts_with(&new) && lines[2].starts_with(&old),
        "newest first:\n{text}"
    );
    assert!(
        lines[1].contains("5.0") && lines[1].contains("2.00ms"),
        "{text}"
    );

    // The environment variable names the store too.
    let out = Command::new(BIN)
        .args(["runs", "--json"])
        .env("KEISOKU_STORE", s)
        .output()
        .unwrap();
    let list: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(list.as_array().unwrap().len(), 2);

    let out = keisoku(&["show", "old", "--store", s]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains(&old) && text.contains("cpu0") && text.contains("context switches/s"),
        "{text}"
    );
    // cpu0 busy: 50 and 80 -> min 50, avg 65, max 80.
    assert!(
        text.contains("50.0") && text.contains("65.0") && text.contains("80.0"),
        "{text}"
    );

    let out = keisoku(&["export", &new[..17], "--format", "csv", "--store", s]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "series,unit,t_ms,value\ncpu.0.idle,%,1000,50\ncpu.0.idle,%,2000,20\nsched.ctxt,/s,1000,1234\n"
    );
    let out = keisoku(&[
        "export",
        "last",
        "--format",
        "csv",
        "--csv-form",
        "wide",
        "--store",
        s,
    ]);
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        "t_ms,cpu.0.idle,sched.ctxt\n1000,50,1234\n2000,20,\n"
    );
    let out = keisoku(&["export", "last", "--series", "sched.", "--store", s]);
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(json["version"], 1);
    assert_eq!(json["series"].as_array().unwrap().len(), 1);
    assert_eq!(json["run"]["id"], new.as_str());

    // Unknown runs: exit 2 with the hint; rm deletes nothing then.
    for cmd in [["show", "nope"], ["export", "nope"], ["rm", "nope"]] {
        let out = keisoku(&[cmd[0], cmd[1], "--store", s]);
        assert_eq!(out.status.code(), Some(2), "{cmd:?}");
        assert!(String::from_utf8_lossy(&out.stderr).contains("keisoku runs"));
    }
    let out = keisoku(&["rm", "old", "nope", "--store", s]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(Store::open(&path).unwrap().list().unwrap().len(), 2);
    // Both share the "2025" prefix: ambiguous, exit 2.
    let out = keisoku(&["show", "2025", "--store", s]);
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let out = keisoku(&["rm", "old", "last", "--store", s]);
    assert!(out.status.success());
    assert!(Store::open(&path).unwrap().list().unwrap().is_empty());
}

#[test]
fn a_missing_store_is_bad_input_and_an_empty_list() {
    let dir = tempfile::tempdir().unwrap();
    let s = dir.path().join("none.db");
    let s = s.to_str().unwrap();
    let out = keisoku(&["show", "last", "--store", s]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no run store"));
    let out = keisoku(&["runs", "--store", s]);
    assert!(out.status.success());
    assert!(
        !std::path::Path::new(s).exists(),
        "listing must not create a store"
    );
}
