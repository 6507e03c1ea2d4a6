//! End-to-end tests of `keisoku collapse|flame|diff|scope` on the real
//! captures in crates/stacks/tests/data.

use std::io::{Read, Write};
use std::process::{Command, Output, Stdio};

fn data(name: &str) -> String {
    format!("{}/../stacks/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn keisoku(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_keisoku"))
        .args(args)
        .output()
        .expect("run keisoku")
}

fn expected(name: &str) -> String {
    let path = data(name);
    let raw = std::fs::read(&path)
        .or_else(|_| std::fs::read(format!("{path}.gz")))
        .unwrap();
    if raw.starts_with(&[0x1f, 0x8b]) {
        let mut s = String::new();
        flate2::read::GzDecoder::new(&raw[..])
            .read_to_string(&mut s)
            .unwrap();
        s
    } else {
        String::from_utf8(raw).unwrap()
    }
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn collapse_perf_matches_the_reviewed_outputs_for_every_flag() {
    let cases: &[(&str, &[&str], &str)] = &[
        ("c.perf.gz", &[], "c.folded.expected"),
        ("c-header.perf.gz", &[], "c-header.folded.expected"),
        ("c-fields.perf.gz", &[], "c-fields.folded.expected"),
        ("system.perf.gz", &[], "system.folded.expected"),
        ("two-events.perf.gz", &[], "two-events.folded.expected"),
        ("java.perf.gz", &[], "java.folded.expected"),
        ("node.perf.gz", &[], "node.folded.expected"),
        ("python.perf.gz", &[], "python.folded.expected"),
        ("java.perf.gz", &["--all"], "java.all.folded.expected"),
        (
            "system.perf.gz",
            &["--pid", "--kernel"],
            "system.pid-kernel.folded.expected",
        ),
        (
            "system.perf.gz",
            &["--tid", "--all", "--addrs"],
            "system.tid-all-addrs.folded.expected",
        ),
        (
            "node.perf.gz",
            &["--tid", "--addrs"],
            "node.tid-addrs.folded.expected",
        ),
        (
            "two-events.perf.gz",
            &["--event-filter", "task-clock"],
            "two-events.task.folded.expected",
        ),
    ];
    for (input, flags, want) in cases {
        for threads in ["1", "2"] {
            let path = data(input);
            let mut args = vec!["collapse", "perf", "-j", threads];
            args.extend_from_slice(flags);
            args.push(&path);
            let o = keisoku(&args);
            assert!(o.status.success(), "{input} {flags:?}: {}", stderr(&o));
            assert_eq!(stdout(&o), expected(want), "{input} {flags:?} -j{threads}");
        }
    }
}

#[test]
fn collapse_reads_stdin_and_says_which_event_it_kept() {
    let mut child = Command::new(env!("CARGO_BIN_EXE_keisoku"))
        .args(["collapse", "perf"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let gz = std::fs::read(data("two-events.perf.gz")).unwrap();
    child.stdin.take().unwrap().write_all(&gz).unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success());
    assert_eq!(stdout(&o), expected("two-events.folded.expected"));
    assert!(
        stderr(&o).contains("filtering for events of type: cpu-clock"),
        "{}",
        stderr(&o)
    );
}

#[test]
fn collapse_other_formats() {
    let o = keisoku(&["collapse", &data("go.pprof")]);
    assert!(o.status.success(), "{}", stderr(&o));
    let total: u64 = stdout(&o)
        .lines()
        .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
        .sum();
    assert_eq!(total, 111);
    let o = keisoku(&["collapse", &data("node.cpuprofile.gz")]);
    assert!(o.status.success());
    assert!(stdout(&o).lines().any(|l| l.contains(";fib ")));
    // Auto-detected perf script folds like `collapse perf`.
    let o = keisoku(&["collapse", &data("java.perf.gz")]);
    assert_eq!(stdout(&o), expected("java.folded.expected"));
    // Folded in, folded out.
    let dir = tempfile::tempdir().unwrap();
    let f = dir.path().join("in.folded");
    std::fs::write(&f, "a;b 2\na;b 3\nc 1\n").unwrap();
    let o = keisoku(&["collapse", f.to_str().unwrap()]);
    assert_eq!(stdout(&o), "a;b 5\nc 1\n");
}

#[test]
fn bad_input_exits_2_naming_file_and_place() {
    let dir = tempfile::tempdir().unwrap();
    let junk = dir.path().join("junk.txt");
    std::fs::write(&junk, "hello\nthis is not a profile\n").unwrap();
    let o = keisoku(&["flame", junk.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("junk.txt: not a recognised profile"),
        "{}",
        stderr(&o)
    );
    let bad = dir.path().join("bad.folded");
    std::fs::write(&bad, "a;b 1\na;c 2\noops\n").unwrap();
    let o = keisoku(&["flame", bad.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0));
    assert!(
        stderr(&o).contains("skipped 1 malformed sample, first at line 3"),
        "{}",
        stderr(&o)
    );
    let cpu = dir.path().join("cut.cpuprofile");
    std::fs::write(&cpu, "{\"nodes\": [{\"id\": 1,\n \"callFrame\": ").unwrap();
    let o = keisoku(&["flame", cpu.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2));
    assert!(
        stderr(&o).contains("cut.cpuprofile: line 2: expected a V8 .cpuprofile"),
        "{}",
        stderr(&o)
    );
    let o = keisoku(&["collapse", "perf", "/nonexistent/perf.txt"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("/nonexistent/perf.txt"));
    let o = keisoku(&["scope", &data("go.pprof")]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no per-sample times"), "{}", stderr(&o));
    let o = keisoku(&["flame", &data("c.perf.gz"), "-o", "x.png"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn format_forces_what_detection_cannot_tell() {
    // Half of the lines are damaged: too few good ones to detect folded stacks.
    let dir = tempfile::tempdir().unwrap();
    let short = dir.path().join("short.txt");
    std::fs::write(&short, "main;work 3\nnot a stack\n").unwrap();
    let short = short.to_str().unwrap();
    let out = dir.path().join("d.html");
    let out = out.to_str().unwrap();
    for cmd in [
        vec!["flame", short, "-o", out],
        vec!["diff", short, short, "-o", out],
    ] {
        let o = keisoku(&cmd);
        assert_eq!(o.status.code(), Some(2), "{cmd:?}");
        assert!(stderr(&o).contains("--format forces one"), "{}", stderr(&o));
        let mut forced = cmd.clone();
        forced.extend(["--format", "folded"]);
        let o = keisoku(&forced);
        assert_eq!(o.status.code(), Some(0), "{forced:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("skipped 1 malformed sample"),
            "{}",
            stderr(&o)
        );
    }
    // scope needs times: forcing folded gets past detection to that reason.
    let o = keisoku(&["scope", short, "--format", "folded", "-o", out]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("no per-sample times"), "{}", stderr(&o));
    let o = keisoku(&["scope", short, "--format", "svg"]);
    assert_eq!(o.status.code(), Some(2));
    assert!(stderr(&o).contains("--format \"svg\""), "{}", stderr(&o));
}

#[test]
fn flame_writes_html_svg_and_folded() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("f.html");
    let o = keisoku(&[
        "flame",
        &data("system.perf.gz"),
        "-o",
        html.to_str().unwrap(),
        "--title",
        "sys <test>",
        "--search",
        "sort_work",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.starts_with("<!doctype html>"));
    assert!(page.contains("sys &lt;test&gt;"));
    assert!(page.contains("\"sort_work.constprop.0\""));
    assert!(page.contains("\"search\":\"sort_work\""));
    assert!(!page.contains("src=\"http"), "self-contained");
    let svg = dir.path().join("f.svg");
    let o = keisoku(&["flame", &data("c.perf.gz"), "-o", svg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let s = std::fs::read_to_string(&svg).unwrap();
    assert!(s.contains("<svg") && s.contains("leaf_sqrt"));
    let folded = dir.path().join("f.folded");
    let o = keisoku(&[
        "flame",
        &data("system.perf.gz"),
        "-o",
        folded.to_str().unwrap(),
        "--comm",
        "^busy$",
    ]);
    assert!(o.status.success());
    let f = std::fs::read_to_string(&folded).unwrap();
    assert!(
        !f.is_empty() && f.lines().all(|l| l.starts_with("busy;")),
        "{f}"
    );
}

#[test]
fn flame_filters_by_time_and_inverts() {
    let dir = tempfile::tempdir().unwrap();
    let all = dir.path().join("all.folded");
    let early = dir.path().join("early.folded");
    let inv = dir.path().join("inv.folded");
    let p = data("c.perf.gz");
    assert!(keisoku(&["flame", &p, "-o", all.to_str().unwrap()])
        .status
        .success());
    assert!(
        keisoku(&["flame", &p, "--to", "0.1", "-o", early.to_str().unwrap()])
            .status
            .success()
    );
    assert!(
        keisoku(&["flame", &p, "--invert", "-o", inv.to_str().unwrap()])
            .status
            .success()
    );
    let sum = |path: &std::path::Path| -> u64 {
        std::fs::read_to_string(path)
            .unwrap()
            .lines()
            .map(|l| l.rsplit_once(' ').unwrap().1.parse::<u64>().unwrap())
            .sum()
    };
    let n = sum(&all);
    let e = sum(&early);
    // 999 Hz for 0.1 s: about 100 samples, certainly fewer than all.
    assert!(e > 50 && e < 150 && e < n, "{e} of {n}");
    assert_eq!(sum(&inv), n);
    let inv_text = std::fs::read_to_string(&inv).unwrap();
    assert!(
        inv_text
            .lines()
            .any(|l| l.starts_with("busy;leaf_sqrt;main;")),
        "{inv_text}"
    );
}

#[test]
fn flame_summary_lists_top_functions() {
    let o = keisoku(&[
        "flame",
        &data("go.pprof"),
        "--top",
        "3",
        "--search",
        "sha256",
    ]);
    assert!(o.status.success());
    let s = stdout(&o);
    assert!(s.contains("111 samples"), "{s}");
    assert!(s.contains("39.64%   39.64%  runtime.asyncPreempt"), "{s}");
    assert!(s.contains("search \"sha256\": "), "{s}");
}

#[test]
fn diff_gate_and_outputs() {
    let dir = tempfile::tempdir().unwrap();
    let before = dir.path().join("before.folded");
    let after = dir.path().join("after.folded");
    std::fs::write(
        &before,
        "main;parse;json_decode 1000\nmain;handle 1000\nmain;old_path 300\n",
    )
    .unwrap();
    std::fs::write(
        &after,
        "main;parse;json_decode 1400\nmain;handle 1000\nmain;new_path 200\n",
    )
    .unwrap();
    let (b, a) = (before.to_str().unwrap(), after.to_str().unwrap());
    let o = keisoku(&["diff", b, a, "--fail-if", "json_decode>+5%"]);
    assert_eq!(o.status.code(), Some(3), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("gate failed: json_decode grew +40.0%"),
        "{}",
        stderr(&o)
    );
    assert!(stdout(&o).contains("json_decode"));
    let o = keisoku(&["diff", b, a, "--fail-if", "json_decode>+50%"]);
    assert_eq!(o.status.code(), Some(0));
    let o = keisoku(&["diff", b, a, "--fail-if", "handle>5%"]);
    assert_eq!(o.status.code(), Some(0));
    let o = keisoku(&["diff", b, a, "--fail-if", "oops"]);
    assert_eq!(o.status.code(), Some(2));
    let folded = dir.path().join("d.folded");
    assert!(keisoku(&["diff", b, a, "-o", folded.to_str().unwrap()])
        .status
        .success());
    let f = std::fs::read_to_string(&folded).unwrap();
    assert!(
        f.contains("main;old_path 300 0\n"),
        "vanished stacks stay: {f}"
    );
    assert!(f.contains("main;new_path 0 200\n"), "{f}");
    let html = dir.path().join("d.html");
    let o = keisoku(&["diff", b, a, "--normalize", "-o", html.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    assert!(page.contains("\"mode\":\"normalized\"") && page.contains("\"old_path\""));
    let svg = dir.path().join("d.svg");
    assert!(keisoku(&["diff", b, a, "-o", svg.to_str().unwrap()])
        .status
        .success());
    assert!(std::fs::read_to_string(&svg).unwrap().contains("<svg"));
}

#[test]
fn scope_writes_a_heat_map_page_and_a_terminal_map() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("s.html");
    let o = keisoku(&[
        "scope",
        &data("node.cpuprofile.gz"),
        "-o",
        html.to_str().unwrap(),
        "--rows",
        "25",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let page = std::fs::read_to_string(&html).unwrap();
    // The page keeps per-sample times (the heat map needs them) in its
    // compact column form (docs/profile-json.md, "In HTML pages").
    assert!(page.contains("\"rows\":25"), "the page's view keeps --rows");
    assert!(
        page.contains("id=\"keisoku-col-sample-time\" data-enc=\"delta-zigzag\""),
        "the page embeds per-sample times"
    );
    let o = keisoku(&["scope", &data("system.perf.gz"), "--rows", "4", "--idle"]);
    assert!(o.status.success());
    let s = stdout(&o);
    assert_eq!(s.lines().count(), 5, "{s}");
    assert!(s.starts_with("1 s x 4 rows/s"), "{s}");
}

/// Non-empty stacks in a speedscope file, each as `root;...;leaf`.
fn speedscope_stacks(path: &str) -> Vec<String> {
    let doc: serde_json::Value = serde_json::from_slice(&std::fs::read(path).unwrap()).unwrap();
    let frames = doc["shared"]["frames"].as_array().unwrap();
    let mut out = Vec::new();
    for p in doc["profiles"].as_array().unwrap() {
        for s in p["samples"].as_array().unwrap() {
            let names: Vec<&str> = s
                .as_array()
                .unwrap()
                .iter()
                .map(|i| {
                    frames[i.as_u64().unwrap() as usize]["name"]
                        .as_str()
                        .unwrap()
                })
                .collect();
            if !names.is_empty() {
                out.push(names.join(";"));
            }
        }
    }
    out
}

#[test]
fn speedscope_files_are_read_not_taken_for_folded_stacks() {
    // py-spy's output under a name that says nothing: detected by content.
    let dir = tempfile::tempdir().unwrap();
    let x = dir.path().join("x.json");
    std::fs::copy(data("py-spy.speedscope.json"), &x).unwrap();
    let x = x.to_str().unwrap();
    let mut want: Vec<(String, u64)> = Vec::new();
    for s in speedscope_stacks(x) {
        match want.iter_mut().find(|(k, _)| *k == s) {
            Some((_, n)) => *n += 1,
            None => want.push((s, 1)),
        }
    }
    want.sort();
    let want: String = want.iter().map(|(s, n)| format!("{s} {n}\n")).collect();
    for args in [
        vec!["collapse", x],
        vec!["collapse", "--format", "speedscope", x],
    ] {
        let o = keisoku(&args);
        assert_eq!(o.status.code(), Some(0), "{args:?}: {}", stderr(&o));
        let text = stdout(&o);
        let mut got: Vec<&str> = text.lines().collect();
        got.sort();
        let got: String = got.iter().map(|l| format!("{l}\n")).collect();
        assert_eq!(got, want, "{args:?}");
    }
    // The flame summary names Python functions, not a JSON blob.
    let o = keisoku(&["flame", x]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(stdout(&o).contains("leaf"), "{}", stdout(&o));
    assert!(!stdout(&o).contains("$schema"), "{}", stdout(&o));
    let html = dir.path().join("f.html");
    let o = keisoku(&["flame", x, "-o", html.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    assert!(std::fs::read_to_string(&html).unwrap().contains("leaf"));
    // speedscope carries per-sample times, so scope maps it.
    let heat = dir.path().join("s.html");
    let o = keisoku(&["scope", x, "-o", heat.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    let o = keisoku(&["scope", x]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
    // A JSON document that is no known profile is refused, naming the
    // formats tried and how to force one.
    let other = dir.path().join("other.json");
    std::fs::write(&other, "{\"hello\": [1, 2],\n \"a;b\": 3}\n").unwrap();
    let other = other.to_str().unwrap();
    for cmd in ["flame", "collapse", "scope"] {
        let o = keisoku(&[cmd, other]);
        assert_eq!(o.status.code(), Some(2), "{cmd}: {}", stderr(&o));
        let e = stderr(&o);
        assert!(e.contains("other.json: not a recognised profile"), "{e}");
        for name in ["perf", "folded", "cpuprofile", "pprof", "speedscope"] {
            assert!(e.contains(name), "{cmd}: {name} missing from {e}");
        }
        assert!(e.contains("--format forces one"), "{e}");
    }
    let o = keisoku(&["diff", other, x]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("not a recognised profile"));
}

#[test]
fn every_command_lists_the_same_formats() {
    for cmd in ["flame", "collapse", "diff", "scope"] {
        let o = keisoku(&[cmd, "--help"]);
        assert_eq!(o.status.code(), Some(0), "{cmd}");
        let help = stdout(&o);
        for (name, description) in [
            ("perf", "perf script text"),
            ("folded", "folded stacks"),
            ("cpuprofile", "Chrome/V8 .cpuprofile JSON"),
            ("pprof", "pprof protobuf"),
            ("speedscope", "speedscope JSON"),
        ] {
            let item = format!("- {name}:");
            assert!(
                help.lines()
                    .any(|l| l.trim_start().starts_with(&item) && l.ends_with(description)),
                "{cmd} --help lacks {name}: {description}:\n{help}"
            );
        }
        // An unknown name is refused with the list (exit 2); aliases work.
        let o = keisoku(&[cmd, "--format", "svg", "x"]);
        assert_eq!(o.status.code(), Some(2), "{cmd}");
        let e = stderr(&o);
        assert!(
            e.contains(
                "--format \"svg\": expected pprof, speedscope, cpuprofile, pstats, perf, folded"
            ),
            "{cmd}: {e}"
        );
    }
    let o = keisoku(&["collapse", "--format", "v8", &data("node.cpuprofile.gz")]);
    assert_eq!(o.status.code(), Some(0), "{}", stderr(&o));
}
