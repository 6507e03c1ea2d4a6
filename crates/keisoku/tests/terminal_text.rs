//! Recorded text is shown, never obeyed, in a terminal (issue 15 item 6):
//! escape sequences in a run name, tag, target or command print as visible
//! escapes in `runs` and `show`.

use keisoku_store::{NewRun, RunStatus, Store};
use std::collections::BTreeMap;
use std::process::Command;

const BIN: &str = env!("CARGO_BIN_EXE_keisoku");
/// Sets the terminal title, clears the screen, and reverses the text after it.
const HOSTILE: &str = "\u{1b}]0;owned\u{7}\u{1b}[2Jx\u{202e}y\u{9b}1m";

#[test]
fn runs_and_show_escape_control_characters() {
    let dir = tempfile::tempdir().unwrap();
    let db = dir.path().join("runs.db");
    let store = Store::open(&db).unwrap();
    let id = store
        .create_run(&NewRun {
            name: format!("n{HOSTILE}"),
            started_unix_ms: 1_763_700_000_000,
            target: Some(format!("http://127.0.0.1:9/{HOSTILE}")),
            command: format!("curl {HOSTILE}"),
            tags: BTreeMap::from([("k".to_string(), HOSTILE.to_string())]),
            ..NewRun::default()
        })
        .unwrap();
    store.finish(&id, RunStatus::Complete, 1000.0).unwrap();
    drop(store);
    let s = db.to_str().unwrap();
    for args in [
        vec!["runs", "--store", s],
        vec!["show", id.as_str(), "--store", s],
    ] {
        let out = Command::new(BIN).args(&args).output().unwrap();
        assert!(
            out.status.success(),
            "{args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        assert!(
            !text.contains(['\u{1b}', '\u{7}', '\u{9b}', '\u{202e}']),
            "{args:?} printed a raw control character: {text:?}"
        );
        assert!(text.contains("\\x1b]0;owned\\x07"), "{args:?}: {text}");
        if args[0] == "show" {
            assert!(text.contains("curl \\x1b"), "the command line: {text}");
            assert!(text.contains("k=\\x1b"), "the tags: {text}");
        }
    }
}
