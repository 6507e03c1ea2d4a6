//! Parsers on real captures from this machine (see data/regen.sh).

use keisoku_stacks::collapse::{fold_perf, fold_profile, PerfFoldOptions};
use keisoku_stacks::model::{FrameKind, Location};
use keisoku_stacks::{read_profile, Format, Input, ReadOptions};
use std::io::Read;

fn data(name: &str) -> String {
    format!("{}/tests/data/{name}", env!("CARGO_MANIFEST_DIR"))
}

fn text(name: &str) -> String {
    let input = Input::open(&data(name)).unwrap();
    let (_, bytes) = input.read_all().unwrap();
    String::from_utf8(bytes).unwrap()
}

/// Sample header lines in perf script text.
fn event_lines(t: &str) -> usize {
    t.lines()
        .filter(|l| !l.starts_with('#') && keisoku_stacks::perf::event_line(l.as_bytes()).is_some())
        .count()
}

fn names(p: &keisoku_stacks::Profile, kind: FrameKind) -> Vec<String> {
    p.frames
        .iter()
        .filter(|f| f.kind == kind)
        .map(|f| f.name.clone())
        .collect()
}

#[test]
fn perf_c_program_is_read_sample_by_sample() {
    let l = read_profile(&data("c.perf.gz"), &ReadOptions::default()).unwrap();
    assert_eq!(l.format, Format::Perf);
    let p = &l.profile;
    assert_eq!(p.samples.len(), event_lines(&text("c.perf.gz")));
    assert!(p.damage.report().is_none());
    let native = names(p, FrameKind::Native);
    assert!(native.contains(&"leaf_sqrt".to_string()), "{native:?}");
    assert!(native.contains(&"main".to_string()));
    // Times are ascending offsets from the first sample; perf sampled at 999 Hz.
    let t = p.samples.time_ns.as_ref().unwrap();
    assert_eq!(t[0], 0);
    assert!(t.windows(2).all(|w| w[0] <= w[1]));
    let per_sample = *t.last().unwrap() as f64 / (t.len() - 1) as f64;
    assert!((0.5e6..5e6).contains(&per_sample), "{per_sample}");
    // Every stack is rooted at the outermost caller.
    for &n in &p.samples.node {
        let root = p.stack_frames(n)[0];
        assert_ne!(p.frames[root as usize].name, "leaf_sqrt");
    }
}

#[test]
fn perf_header_and_field_sets_parse_alike() {
    let plain = read_profile(&data("c.perf.gz"), &ReadOptions::default())
        .unwrap()
        .profile;
    let header = read_profile(&data("c-header.perf.gz"), &ReadOptions::default())
        .unwrap()
        .profile;
    let fields = read_profile(&data("c-fields.perf.gz"), &ReadOptions::default())
        .unwrap()
        .profile;
    assert_eq!(header.samples.len(), 100);
    assert_eq!(fields.samples.len(), 100);
    // -F with pid/tid gives real pids; the default output gives only tids,
    // and each thread then stands for its own process (issue 16: not all
    // of them for one "process 0").
    assert!(fields.threads.iter().all(|t| t.pid != 0 && t.pid == t.tid));
    assert!(plain.threads.iter().all(|t| t.pid == t.tid && t.tid != 0));
    let a: Vec<_> = fold_profile(&header, true);
    let b: Vec<_> = fold_profile(&fields, true);
    assert_eq!(a, b, "same samples, different field sets");
}

#[test]
fn system_wide_capture_has_kernel_frames_cpus_and_threads() {
    let p = read_profile(&data("system.perf.gz"), &ReadOptions::default())
        .unwrap()
        .profile;
    assert!(names(&p, FrameKind::Kernel)
        .iter()
        .any(|n| n.contains("page_fault")));
    assert!(
        names(&p, FrameKind::Unknown).contains(&"[unknown]".to_string()),
        "[unknown] frames are kept"
    );
    let cpus = p.samples.cpu.as_ref().unwrap();
    assert!(cpus.contains(&0) && cpus.contains(&1));
    assert!(
        p.threads.iter().any(|t| t.comm.contains(' ')),
        "comm with spaces"
    );
    assert!(p.threads.len() > 3);
}

#[test]
fn java_perf_map_frames_are_jit_or_interpreted() {
    let p = read_profile(&data("java.perf.gz"), &ReadOptions::default())
        .unwrap()
        .profile;
    let jit_modules: Vec<_> = p
        .frames
        .iter()
        .filter(|f| f.kind == FrameKind::Jit)
        .map(|f| f.module.clone())
        .collect();
    assert!(!jit_modules.is_empty());
    assert!(jit_modules
        .iter()
        .all(|m| m.starts_with("/tmp/perf-") && m.ends_with(".map")));
    assert!(names(&p, FrameKind::Interpreted).contains(&"Interpreter".to_string()));
}

#[test]
fn node_perf_basic_prof_names_js_functions() {
    let p = read_profile(&data("node.perf.gz"), &ReadOptions::default())
        .unwrap()
        .profile;
    let js: Vec<_> = p
        .frames
        .iter()
        .filter(|f| f.name.contains("fib") && f.module.contains("perf-"))
        .collect();
    assert!(!js.is_empty());
    assert!(js
        .iter()
        .all(|f| matches!(f.kind, FrameKind::Jit | FrameKind::Interpreted)));
}

#[test]
fn python_capture_parses_without_damage() {
    let p = read_profile(&data("python.perf.gz"), &ReadOptions::default())
        .unwrap()
        .profile;
    assert_eq!(p.samples.len(), event_lines(&text("python.perf.gz")));
    assert!(p.damage.report().is_none());
}

#[test]
fn several_events_keep_the_first_or_the_chosen_one() {
    let all = text("two-events.perf.gz");
    let cpu = all.lines().filter(|l| l.ends_with(" cpu-clock: ")).count();
    let task = all.lines().filter(|l| l.ends_with(" task-clock: ")).count();
    assert!(cpu > 0 && task > 0);
    let l = read_profile(&data("two-events.perf.gz"), &ReadOptions::default()).unwrap();
    assert_eq!(l.profile.samples.len(), cpu);
    assert_eq!(
        l.dropped_events,
        vec![("task-clock".to_string(), task as u64)]
    );
    let opts = ReadOptions {
        event: Some("task-clock".into()),
        ..Default::default()
    };
    let l = read_profile(&data("two-events.perf.gz"), &opts).unwrap();
    assert_eq!(l.profile.samples.len(), task);
    let opts = ReadOptions {
        event: Some("cycles".into()),
        ..Default::default()
    };
    let err = read_profile(&data("two-events.perf.gz"), &opts)
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("no samples of event \"cycles\""), "{err}");
}

#[test]
fn model_folding_agrees_with_the_perl_compatible_folder() {
    for name in ["c.perf.gz", "system.perf.gz", "python.perf.gz"] {
        let p = read_profile(&data(name), &ReadOptions::default())
            .unwrap()
            .profile;
        let mut r = Input::open(&data(name)).unwrap().into_reader();
        let perl = fold_perf(&mut r, name, &PerfFoldOptions::default()).unwrap();
        let mut perl: Vec<(String, u64)> = perl
            .stacks
            .iter()
            .map(|(k, v)| (String::from_utf8_lossy(k).replace(' ', "_"), *v / 1_001_001))
            .filter(|(k, _)| k.contains(';'))
            .collect();
        perl.sort();
        let mut ours: Vec<(String, u64)> = fold_profile(&p, true)
            .into_iter()
            .map(|(k, v)| (k.replace(' ', "_"), v))
            // A sample without frames is the bare process name in Perl; the
            // model gives it one frame named after the process.
            .filter(|(k, _)| k.split_once(';').is_some_and(|(a, b)| a != b))
            .collect();
        ours.sort();
        assert_eq!(ours, perl, "{name}");
    }
}

#[test]
fn cpuprofile_keeps_per_sample_times() {
    let raw = text("node.cpuprofile.gz");
    let doc: serde_json::Value = serde_json::from_str(&raw).unwrap();
    let n = doc["samples"].as_array().unwrap().len();
    let deltas: f64 = doc["timeDeltas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| d.as_f64().unwrap())
        .sum();
    let l = read_profile(&data("node.cpuprofile.gz"), &ReadOptions::default()).unwrap();
    assert_eq!(l.format, Format::CpuProfile);
    let p = l.profile;
    assert_eq!(p.samples.len(), n);
    let t = p.samples.time_ns.as_ref().unwrap();
    assert!(t.windows(2).all(|w| w[0] <= w[1]));
    // The span of sample times is the sum of the deltas after the first.
    let first = doc["timeDeltas"][0].as_f64().unwrap();
    let span_us = (*t.last().unwrap() - t[0]) as f64 / 1000.0;
    assert!(
        (span_us - (deltas - first)).abs() < 5.0,
        "{span_us} vs {}",
        deltas - first
    );
    assert!(p
        .frames
        .iter()
        .any(|f| f.name == "fib" && f.kind == FrameKind::Jit));
    assert!(!p.frames.iter().any(|f| f.name == "(root)"));
}

#[test]
fn cpuprofile_weighs_each_sample_by_the_time_to_the_next() {
    // DevTools' and speedscope's reading: sample i lasts until sample i+1
    // (the last one until endTime). Self time per function name, from the
    // raw document, against keisoku's.
    let raw = text("node.cpuprofile.gz");
    let doc: serde_json::Value = serde_json::from_str(&raw).unwrap();
    let names: std::collections::HashMap<u64, String> = doc["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| {
            let f = n["callFrame"]["functionName"].as_str().unwrap();
            let f = if f.is_empty() { "(anonymous)" } else { f };
            (n["id"].as_u64().unwrap(), f.to_owned())
        })
        .collect();
    let samples: Vec<u64> = doc["samples"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    let mut t = doc["startTime"].as_f64().unwrap();
    let times: Vec<f64> = doc["timeDeltas"]
        .as_array()
        .unwrap()
        .iter()
        .map(|d| {
            t += d.as_f64().unwrap();
            t
        })
        .collect();
    let end = doc["endTime"].as_f64().unwrap();
    let mut want: std::collections::HashMap<&str, f64> = Default::default();
    let mut total = 0.0;
    for (i, s) in samples.iter().enumerate() {
        let d = (times.get(i + 1).copied().unwrap_or(end) - times[i]).max(0.0);
        total += d;
        *want.entry(names[s].as_str()).or_default() += d;
    }
    let p = read_profile(&data("node.cpuprofile.gz"), &ReadOptions::default())
        .unwrap()
        .profile;
    assert_eq!(p.unit, keisoku_stacks::Unit::Nanoseconds);
    let got = keisoku_stacks::summary::functions(&p);
    let total_ns = p.total_weight() as f64;
    assert!(
        (total_ns / 1000.0 - total).abs() / total < 0.001,
        "{total_ns} vs {total}"
    );
    for f in got.iter().take(10) {
        let share = f.self_weight as f64 / total_ns;
        let expected = want.get(f.name.as_str()).copied().unwrap_or(0.0) / total;
        assert!(
            (share - expected).abs() < 0.001,
            "{}: {share} vs {expected}",
            f.name
        );
    }
}

#[test]
fn pprof_matches_go_tool_pprof() {
    // `go tool pprof -top` on this file: 1110ms total, runtime.asyncPreempt
    // flat 440ms (39.64%); the profile samples every 10ms.
    let l = read_profile(&data("go.pprof"), &ReadOptions::default()).unwrap();
    assert_eq!(l.format, Format::Pprof);
    let p = l.profile;
    assert_eq!(p.total_weight(), 111);
    let top = &keisoku_stacks::summary::functions(&p)[0];
    assert_eq!(
        (top.name.as_str(), top.self_weight),
        ("runtime.asyncPreempt", 44)
    );
    assert!(p.start_unix_ns.is_some());
    let folded = fold_profile(&p, false);
    assert!(folded
        .iter()
        .all(|(s, _)| s.starts_with("runtime.main;main.main;") || s.starts_with("runtime.")));
}

#[test]
fn folded_round_trips() {
    let text = "a;b;c 3\na;b 2\nx 1\na;b;c 4\n";
    let p = keisoku_stacks::folded::parse(&mut text.as_bytes(), "t").unwrap();
    assert_eq!(
        fold_profile(&p, false),
        vec![("a;b".into(), 2), ("a;b;c".into(), 7), ("x".into(), 1)]
    );
}

#[test]
fn damage_is_counted_and_located() {
    let text = "a;b 1\nnot a stack\na 2\nalso bad x\n";
    let p = keisoku_stacks::folded::parse(&mut text.as_bytes(), "t.folded").unwrap();
    assert_eq!(
        p.damage.report().unwrap(),
        "skipped 2 malformed samples, first at line 2 (a folded stack line (frame;frame;... count))"
    );
    // perf script: a garbled stack line drops its sample and says where.
    let mut t = text_of_first_samples("c.perf.gz", 3);
    let second = t.match_indices("\n\n").next().unwrap().0 + 2;
    let line_no = t[..second].lines().count() + 2;
    let insert_at = t[second..].find('\n').unwrap() + second + 1;
    t.insert_str(insert_at, "\t!!garbage!!\n");
    let (p, _) =
        keisoku_stacks::perf::parse(&mut t.as_bytes(), "g.perf", &Default::default()).unwrap();
    assert_eq!(p.samples.len(), 2);
    assert_eq!(p.damage.skipped, 1);
    assert_eq!(
        p.damage.first.as_ref().unwrap().0,
        Location::Line(line_no as u64)
    );
}

fn text_of_first_samples(name: &str, n: usize) -> String {
    let t = text(name);
    let mut out = String::new();
    for s in t.split_inclusive("\n\n").take(n) {
        out.push_str(s);
    }
    out
}

#[test]
fn unreadable_inputs_name_the_file_and_place() {
    let err = keisoku_stacks::folded::parse(&mut "no count here\n".as_bytes(), "x.folded")
        .err()
        .unwrap();
    assert_eq!(
        err.to_string(),
        "x.folded: line 1: expected a folded stack line (frame;frame;... count)"
    );
    let err = keisoku_stacks::cpuprofile::parse(br#"{"nodes": [{"id": 1, "#, "p.cpuprofile")
        .err()
        .unwrap();
    assert!(
        err.to_string()
            .starts_with("p.cpuprofile: line 1: expected a V8 .cpuprofile JSON document"),
        "{err}"
    );
    // A pprof cut in the middle of a field.
    let mut raw = Vec::new();
    flate2::read::GzDecoder::new(std::fs::File::open(data("go.pprof")).unwrap())
        .read_to_end(&mut raw)
        .unwrap();
    let cut = &raw[..raw.len() / 2];
    let err = keisoku_stacks::pprof::parse(cut, "cut.pprof")
        .err()
        .unwrap()
        .to_string();
    assert!(err.starts_with("cut.pprof: byte "), "{err}");
    assert!(err.contains("expected"), "{err}");
    // Text that is no profile at all.
    let input = Input::from_reader("junk.txt".into(), Box::new(&b"hello\nworld\n"[..])).unwrap();
    let err = keisoku_stacks::read_input(input, &ReadOptions::default())
        .err()
        .unwrap()
        .to_string();
    assert!(
        err.starts_with("junk.txt: not a recognised profile"),
        "{err}"
    );
}

#[test]
fn a_truncated_perf_file_keeps_complete_samples_and_reports_the_cut() {
    let t = text_of_first_samples("c.perf.gz", 5);
    let cut = &t[..t.len() - 40];
    let (p, _) =
        keisoku_stacks::perf::parse(&mut cut.as_bytes(), "cut.perf", &Default::default()).unwrap();
    assert_eq!(p.samples.len(), 4);
    assert!(p.damage.report().unwrap().contains("file truncated?"));
}

#[test]
fn gzip_truncation_is_an_error_not_silence() {
    let gz = std::fs::read(data("c.perf.gz")).unwrap();
    let input = Input::from_reader(
        "c.perf.gz".into(),
        Box::new(std::io::Cursor::new(gz[..gz.len() / 2].to_vec())),
    );
    let result = input.and_then(|i| keisoku_stacks::read_input(i, &ReadOptions::default()));
    let err = result
        .err()
        .expect("a cut gzip stream must fail")
        .to_string();
    assert!(err.starts_with("c.perf.gz: "), "{err}");
}

#[test]
fn profile_json_follows_the_contract() {
    let p = read_profile(&data("system.perf.gz"), &ReadOptions::default())
        .unwrap()
        .profile;
    let json = keisoku_stacks::json::profile_json(&p, Default::default());
    let v: serde_json::Value = serde_json::from_slice(&json).unwrap();
    assert_eq!(v["version"], 1);
    let parents = v["nodes"]["parent"].as_array().unwrap();
    for (i, par) in parents.iter().enumerate() {
        let par = par.as_i64().unwrap();
        assert!(par == -1 || (par as usize) < i);
    }
    let n = v["samples"]["node"].as_array().unwrap().len();
    assert_eq!(n, p.samples.len());
    assert_eq!(v["samples"]["time_ms"].as_array().unwrap().len(), n);
    assert_eq!(v["samples"]["thread"].as_array().unwrap().len(), n);
    assert!(v["counts"].is_null());
    let t = v["samples"]["time_ms"].as_array().unwrap();
    let last = t.last().unwrap().as_f64().unwrap();
    assert!((last - p.duration_ns().unwrap() as f64 / 1e6).abs() < 0.001);
    assert_eq!(
        v["frames"]["name"].as_array().unwrap().len(),
        p.frames.len()
    );
    let folded = keisoku_stacks::folded::parse(&mut "a;b\"\\;c 3\n".as_bytes(), "q\"t").unwrap();
    let v: serde_json::Value = serde_json::from_slice(&keisoku_stacks::json::profile_json(
        &folded,
        Default::default(),
    ))
    .unwrap();
    assert_eq!(v["title"], "q\"t");
    assert_eq!(v["frames"]["name"][1], "b\"\\");
    assert_eq!(
        v["counts"]
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c.as_u64().unwrap())
            .sum::<u64>(),
        3
    );
}

#[test]
fn heat_map_counts_every_non_idle_sample_once() {
    let p = read_profile(&data("system.perf.gz"), &ReadOptions::default())
        .unwrap()
        .profile;
    let h = keisoku_stacks::scope::heat_map(&p, 50, true).unwrap();
    assert_eq!(h.cells.iter().sum::<u64>(), p.samples.len() as u64);
    assert_eq!(
        h.columns as u64,
        p.duration_ns().unwrap() / 1_000_000_000 + 1
    );
    let no_idle = keisoku_stacks::scope::heat_map(&p, 50, false).unwrap();
    assert_eq!(
        no_idle.cells.iter().sum::<u64>() + no_idle.idle_samples,
        p.samples.len() as u64
    );
    let q = read_profile(&data("node.cpuprofile.gz"), &ReadOptions::default())
        .unwrap()
        .profile;
    // A .cpuprofile weighs time (issue 16): its cells hold nanoseconds.
    let h = keisoku_stacks::scope::heat_map(&q, 10, true).unwrap();
    assert_eq!(h.cells.iter().sum::<u64>(), q.total_weight());
    assert!(keisoku_stacks::scope::heat_map(
        &read_profile(&data("go.pprof"), &ReadOptions::default())
            .unwrap()
            .profile,
        10,
        true
    )
    .is_none());
}

#[test]
fn perf_keeps_the_first_sample_time_as_time_origin() {
    let l = read_profile(&data("c.perf.gz"), &ReadOptions::default()).unwrap();
    // The first sample header's timestamp ("1234.567890:"), in ns.
    let t = text("c.perf.gz");
    let header = t
        .lines()
        .find(|l| !l.starts_with('#') && keisoku_stacks::perf::event_line(l.as_bytes()).is_some())
        .unwrap();
    let stamp = header
        .split_whitespace()
        .find_map(|w| w.strip_suffix(':').filter(|s| s.contains('.')))
        .unwrap();
    let (secs, frac) = stamp.split_once('.').unwrap();
    let ns = secs.parse::<u64>().unwrap() * 1_000_000_000
        + format!("{frac:0<9}").parse::<u64>().unwrap();
    assert_eq!(l.profile.time_origin_ns, Some(ns));
    assert_eq!(l.profile.samples.time_ns.as_ref().unwrap()[0], 0);
    // Inputs without a clock of their own have no origin.
    let l = read_profile(&data("node.cpuprofile.gz"), &ReadOptions::default()).unwrap();
    assert_eq!(l.profile.time_origin_ns, None);
}

#[test]
fn py_spy_speedscope_output_is_read_per_thread() {
    let bytes = std::fs::read(data("py-spy.speedscope.json")).unwrap();
    let p = keisoku_stacks::speedscope::parse(&bytes, "py-spy.speedscope.json").unwrap();
    let doc: serde_json::Value = serde_json::from_slice(&bytes).unwrap();
    let profiles = doc["profiles"].as_array().unwrap();
    // One thread per speedscope profile, named as py-spy names it.
    assert_eq!(p.threads.len(), profiles.len());
    for (i, (t, sp)) in p.threads.iter().zip(profiles).enumerate() {
        assert_eq!((t.pid, t.tid as usize), (0, i));
        assert_eq!(t.comm, sp["name"].as_str().unwrap());
    }
    assert!(p.threads.iter().any(|t| t.comm.contains("worker")));
    // Every non-empty stack is a sample; empty ones (idle) are not.
    let non_empty: usize = profiles
        .iter()
        .map(|sp| {
            sp["samples"]
                .as_array()
                .unwrap()
                .iter()
                .filter(|s| !s.as_array().unwrap().is_empty())
                .count()
        })
        .sum();
    assert_eq!(p.samples.len(), non_empty);
    // py-spy samples at a fixed interval: sample counts, times in order,
    // within the longest profile's endValue.
    assert_eq!(p.unit, keisoku_stacks::Unit::Samples);
    assert!(p.samples.weight.is_none());
    let times = p.samples.time_ns.as_ref().unwrap();
    assert!(times.windows(2).all(|w| w[0] <= w[1]));
    let end_ns = profiles
        .iter()
        .map(|sp| sp["endValue"].as_f64().unwrap() * 1e9)
        .fold(0.0, f64::max);
    assert!((*times.last().unwrap() as f64) < end_ns);
    // Python functions with their files, root first.
    assert!(p
        .frames
        .iter()
        .all(|f| f.kind == FrameKind::Interpreted && !f.module.is_empty()));
    let leaf_of_worker = p
        .samples
        .node
        .iter()
        .zip(p.samples.thread.as_ref().unwrap())
        .filter(|(_, &t)| p.threads[t as usize].comm.contains("worker"))
        .map(|(&n, _)| {
            let st = p.stack_frames(n);
            (
                p.frames[st[0] as usize].name.clone(),
                p.frames[*st.last().unwrap() as usize].name.clone(),
            )
        })
        .collect::<Vec<_>>();
    assert!(leaf_of_worker
        .iter()
        .any(|(root, leaf)| root == "Thread._bootstrap" && leaf == "leaf"));
    assert_eq!(p.time_origin_ns, None);
    assert!(p.damage.report().is_none());
    // Detected as speedscope (not folded stacks), plain or forced.
    let l = read_profile(&data("py-spy.speedscope.json"), &ReadOptions::default()).unwrap();
    assert_eq!(l.format, Format::Speedscope);
    assert_eq!(l.profile.samples.len(), p.samples.len());
    let forced = ReadOptions {
        format: Format::from_name("speedscope"),
        event: None,
    };
    let l = read_profile(&data("py-spy.speedscope.json"), &forced).unwrap();
    assert_eq!(l.format, Format::Speedscope);
}

/// Default `perf script` prints `comm tid time:` with no pid field (issue
/// 16: a real capture read as "process 0: all 75 threads"). Each thread
/// then stands for its own process, its id as the pid, never pid 0 for all.
#[test]
fn default_perf_script_without_pids_never_makes_one_process_0() {
    let text = "\
node   4101 100.000001:     250000 cpu-clock: 
\t    55d0c0a01000 work (/usr/bin/node)
\t    55d0c0a00100 main (/usr/bin/node)

node   4102 100.000002:     250000 cpu-clock: 
\t    55d0c0a01000 work (/usr/bin/node)
\t    55d0c0a00100 main (/usr/bin/node)

nginx   77 100.000003:     250000 cpu-clock: 
\t    7f0000001000 ngx_worker (/usr/sbin/nginx)

";
    let dir = std::env::temp_dir().join(format!("keisoku-nopid-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join("default.perf");
    std::fs::write(&f, text).unwrap();
    let p = read_profile(f.to_str().unwrap(), &ReadOptions::default())
        .unwrap()
        .profile;
    std::fs::remove_dir_all(&dir).unwrap();
    let mut threads: Vec<(i64, i64, &str)> = p
        .threads
        .iter()
        .map(|t| (t.pid as i64, t.tid as i64, t.comm.as_str()))
        .collect();
    threads.sort();
    assert_eq!(
        threads,
        [
            (77, 77, "nginx"),
            (4101, 4101, "node"),
            (4102, 4102, "node")
        ]
    );
    // Folded, each stack is rooted at its command, as stackcollapse-perf.pl does.
    let mut folded = fold_profile(&p, true);
    folded.sort();
    assert_eq!(
        folded,
        [
            ("nginx;ngx_worker".to_owned(), 1),
            ("node;main;work".to_owned(), 2)
        ]
    );
}
