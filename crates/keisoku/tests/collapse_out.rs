//! `keisoku collapse` outputs (issue 16): `-o FILE`, speedscope JSON equal to
//! what `flame -o x.speedscope.json` writes (accepted by speedscope's own
//! schema when scripts/setup.sh installed it), and `--event` refused where
//! the input has no events to choose from. Inputs are real recordings
//! (crates/stacks/tests/data, made by regen.sh).

mod common;

use std::path::Path;
use std::process::{Command, Output};

fn keisoku(args: &[&str]) -> Output {
    Command::new(common::BIN)
        .args(args)
        .output()
        .expect("run keisoku")
}

fn ok(o: &Output, what: &str) -> String {
    assert!(
        o.status.success(),
        "{what}: exit {:?}\n{}",
        o.status.code(),
        String::from_utf8_lossy(&o.stderr)
    );
    String::from_utf8(o.stdout.clone()).expect("UTF-8 output")
}

fn data(name: &str) -> String {
    format!("{}/../stacks/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// speedscope's schema from its npm package, where scripts/setup.sh
/// installed it with ajv.
fn speedscope_validator() -> Option<std::path::PathBuf> {
    let home = std::env::var_os("HOME")?;
    let dir = Path::new(&home).join(".cache/keisoku-tools/speedscope");
    dir.join("node_modules/speedscope/dist/release/file-format-schema.json")
        .exists()
        .then_some(dir)
}

fn validate(tools: &Path, file: &Path) {
    let script = r#"
const Ajv = require('ajv');
const schema = require('speedscope/dist/release/file-format-schema.json');
const doc = JSON.parse(require('fs').readFileSync(process.argv[1], 'utf8'));
const ajv = new Ajv({ strict: false });
const validate = ajv.compile(schema);
if (!validate(doc)) { console.error(JSON.stringify(validate.errors)); process.exit(1); }
"#;
    let o = Command::new("node")
        .args(["-e", script])
        .arg(file)
        .current_dir(tools)
        .output()
        .expect("run node");
    assert!(
        o.status.success(),
        "{}: speedscope's schema rejects the file: {}",
        file.display(),
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn collapse_writes_the_speedscope_file_flame_writes() {
    let dir = tempfile::tempdir().unwrap();
    let tools = speedscope_validator();
    // perf script (two processes' threads), a .cpuprofile, pprof, speedscope.
    for input in [
        "system.perf.gz",
        "node.cpuprofile.gz",
        "go.pprof",
        "py-spy.speedscope.json",
    ] {
        let ours = dir.path().join(format!("{input}.c.speedscope.json"));
        let theirs = dir.path().join(format!("{input}.f.speedscope.json"));
        ok(
            &keisoku(&["collapse", &data(input), "-o", ours.to_str().unwrap()]),
            input,
        );
        ok(
            &keisoku(&["flame", &data(input), "-o", theirs.to_str().unwrap()]),
            input,
        );
        let a = std::fs::read(&ours).unwrap();
        assert_eq!(
            a,
            std::fs::read(&theirs).unwrap(),
            "{input}: collapse and flame write different speedscope files"
        );
        let doc: serde_json::Value = serde_json::from_slice(&a).unwrap();
        assert_eq!(
            doc["$schema"],
            "https://www.speedscope.app/file-format-schema.json"
        );
        assert!(!doc["profiles"].as_array().unwrap().is_empty(), "{input}");
        // --output-format to standard output: the same bytes.
        let out = keisoku(&["collapse", &data(input), "--output-format", "speedscope"]);
        ok(&out, input);
        assert_eq!(out.stdout, a, "{input}: stdout differs from -o");
        if let Some(tools) = &tools {
            validate(tools, &ours);
        }
    }
    if tools.is_none() {
        eprintln!("speedscope's schema not installed (scripts/setup.sh): checked equality with flame only");
    }
    // `collapse perf` as well, with perf's event choice.
    let out = keisoku(&[
        "collapse",
        "perf",
        &data("two-events.perf.gz"),
        "--event",
        "task-clock",
        "--output-format",
        "speedscope",
    ]);
    let text = ok(&out, "two-events");
    let doc: serde_json::Value = serde_json::from_str(&text).unwrap();
    let flame = dir.path().join("two.speedscope.json");
    ok(
        &keisoku(&[
            "flame",
            &data("two-events.perf.gz"),
            "--event",
            "task-clock",
            "-o",
            flame.to_str().unwrap(),
        ]),
        "flame two-events",
    );
    assert_eq!(text.as_bytes(), std::fs::read(&flame).unwrap());
    assert!(doc["profiles"].is_array());
}

#[test]
fn collapse_o_writes_what_stdout_gets_and_event_is_as_event_filter() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("out.folded");
    let input = data("two-events.perf.gz");
    let stdout = ok(
        &keisoku(&["collapse", "perf", &input, "--event-filter", "task-clock"]),
        "stdout",
    );
    assert!(!stdout.is_empty());
    ok(
        &keisoku(&[
            "collapse",
            "perf",
            &input,
            "--event",
            "task-clock",
            "-o",
            file.to_str().unwrap(),
        ]),
        "-o",
    );
    assert_eq!(std::fs::read_to_string(&file).unwrap(), stdout);
    // The file the repository keeps for that event, as stackcollapse-perf.pl wrote it.
    let expected = std::fs::read_to_string(data("two-events.task.folded.expected")).unwrap();
    assert_eq!(stdout, expected);
}

#[test]
fn collapse_refuses_what_it_cannot_do_with_exit_2() {
    let cases: [(&[&str], &str); 4] = [
        (
            &["collapse", &data("node.cpuprofile.gz"), "--event", "cycles"],
            "--event applies to perf script and JFR input",
        ),
        (
            &[
                "collapse",
                &data("two-events.perf.gz"),
                "--event",
                "cycles",
                "--event-filter",
                "task-clock",
            ],
            "name different events",
        ),
        (
            &[
                "collapse",
                "perf",
                &data("c.perf.gz"),
                "--pid",
                "--output-format",
                "speedscope",
            ],
            "speedscope output keeps processes",
        ),
        (
            &[
                "collapse",
                &data("c.perf.gz"),
                "--output-format",
                "flamegraph",
            ],
            "",
        ),
    ];
    for (args, why) in cases {
        let o = keisoku(args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert_eq!(o.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains(why), "{args:?}: {err}");
    }
}
