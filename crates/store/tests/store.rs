//! The run store end to end: round trips, concurrent readers, size budget.

use hdrhistogram::Histogram;
use keisoku_stacks::model::NO_PARENT;
use keisoku_stacks::{json, FrameKind, Profile, Thread, Unit};
use keisoku_store::*;
use std::collections::BTreeMap;

fn new_run(name: &str, started: i64) -> NewRun {
    NewRun {
        name: name.into(),
        tags: BTreeMap::from([("commit".to_string(), "abc".to_string())]),
        started_unix_ms: started,
        target: Some("http://127.0.0.1:1/".into()),
        command: "keisoku run".into(),
        machine: Machine {
            hostname: local_hostname(),
            cores: 2,
            kernel: "6.1".into(),
            memory_bytes: 1 << 30,
        },
        model: Some("closed".into()),
    }
}

fn profile(samples: usize) -> Profile {
    // Five distinct stacks, two threads, 99 Hz.
    let mut p = Profile::new("perf", Unit::Samples);
    let frames: Vec<u32> = [
        ("main", "nginx", FrameKind::Native),
        ("ngx_process", "nginx", FrameKind::Native),
        ("read", "[kernel]", FrameKind::Kernel),
        ("write", "[kernel]", FrameKind::Kernel),
    ]
    .into_iter()
    .map(|(name, module, kind)| p.frame_parts(name, module, kind))
    .collect();
    // Parents [-1, 0, 1, 1, 0], frames [0, 1, 2, 3, 3].
    for (parent, frame) in [(NO_PARENT, 0), (0, 1), (1, 2), (1, 3), (0, 3)] {
        p.child(parent, frames[frame]);
    }
    for tid in [10, 11] {
        p.thread(Thread {
            pid: 10,
            tid,
            comm: "nginx".into(),
        });
    }
    p.samples.node = (0..samples).map(|i| (i * 7 % 5) as u32).collect();
    p.samples.time_ns = Some((0..samples).map(|i| i as u64 * 5_051_000).collect());
    p.samples.thread = Some((0..samples).map(|i| (i % 2) as u32).collect());
    p.start_unix_ns = Some(1_763_760_600_000_000_000);
    p
}

/// A profile as its readers see it: its profile JSON.
fn json_of(p: &Profile) -> String {
    String::from_utf8(json::profile_json(p, json::JsonOptions::default())).unwrap()
}

#[test]
fn a_run_round_trips_through_the_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("sub").join("runs.db");
    let store = Store::open(&path).unwrap();
    let run = store
        .create_run(&new_run("before", 1_763_760_600_000))
        .unwrap();
    assert_eq!(store.run_info(&run).unwrap().status, "running");

    store
        .put_phase(
            &run,
            &Phase {
                index: 0,
                label: "warmup".into(),
                start_ms: 0.0,
                end_ms: 1000.0,
                warmup: true,
                connections: Some(4),
                rate: None,
            },
        )
        .unwrap();
    store
        .put_phase(
            &run,
            &Phase {
                index: 1,
                label: "c=4".into(),
                start_ms: 1000.0,
                end_ms: 3000.0,
                warmup: false,
                connections: Some(4),
                rate: None,
            },
        )
        .unwrap();
    let mut buf = SeriesBuffer::default();
    for sec in 0..3 {
        buf.push("cpu.0.user", "%", sec as f64 * 1000.0, 10.0 + sec as f64);
        buf.push("proc.rss", "bytes", sec as f64 * 1000.0, 1e6);
        if sec == 1 {
            buf.flush(&store, &run).unwrap();
        }
    }
    buf.flush(&store, &run).unwrap();
    assert!(buf.is_empty());

    let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    h.record(1500).unwrap();
    h.record(2500).unwrap();
    store
        .put_route_seconds(
            &run,
            RouteSource::AccessLog,
            &[RouteSecond {
                method: "GET".into(),
                route: "/a".into(),
                second: 2,
                histogram: h.clone(),
                errors: 1,
                transport_errors: 0,
            }],
        )
        .unwrap();
    let row = RouteRow {
        method: "GET".into(),
        uri: "/a".into(),
        count: 2,
        s2xx: 2,
        p99: 2.5,
        ..RouteRow::default()
    };
    store
        .put_routes(&run, RouteSource::AccessLog, std::slice::from_ref(&row))
        .unwrap();
    store
        .put_routes(&run, RouteSource::Client, std::slice::from_ref(&row))
        .unwrap();
    let results = serde_json::json!({"rps": 123.0});
    store
        .put_results(&run, &results, Some(123.0), Some(2.5))
        .unwrap();
    let p = profile(1000);
    store.put_profile(&run, &p).unwrap();
    store
        .add_findings(&run, &[serde_json::json!({"rule": "cpu-saturated"})])
        .unwrap();
    store
        .append_output(&run, "server.stdout", b"hello ")
        .unwrap();
    store
        .append_output(&run, "server.stdout", b"world")
        .unwrap();
    store.finish(&run, RunStatus::Complete, 3000.0).unwrap();

    let json = store.load(&run).unwrap();
    assert_eq!(json.run.name, "before");
    assert_eq!(json.run.status, "complete");
    assert!(!json.run.interrupted);
    assert_eq!(json.run.duration_ms, 3000.0);
    assert_eq!(json.run.tags["commit"], "abc");
    assert_eq!(json.phases.len(), 2);
    assert!(json.phases[0].warmup);
    assert_eq!(json.series.len(), 2);
    assert_eq!(json.series[0].name, "cpu.0.user");
    assert_eq!(json.series[0].t_ms, vec![0.0, 1000.0, 2000.0]);
    assert_eq!(json.series[0].v, vec![10.0, 11.0, 12.0]);
    assert_eq!(json.routes.access_log, vec![row.clone()]);
    assert_eq!(json.routes.client, vec![row]);
    // The route's second in Run JSON: stamped at its end, with its buckets.
    let rs = &json.route_seconds.access_log;
    assert_eq!(rs.len(), 1);
    assert_eq!((rs[0].method.as_str(), rs[0].route.as_str()), ("GET", "/a"));
    assert_eq!(rs[0].t_ms, vec![3000.0]);
    assert_eq!(rs[0].count, vec![h.len()]);
    assert_eq!(rs[0].errors, vec![1]);
    assert_eq!(rs[0].hist[0].iter().map(|b| b.1).sum::<u64>(), h.len());
    let p99_us = keisoku_common::bucket_percentile_us(&rs[0].hist[0], 99.0);
    assert!((2500.0..2500.0 * 1.1).contains(&p99_us), "{p99_us}");
    assert!(json.route_seconds.client.is_empty());
    assert_eq!(json.results, results);
    assert_eq!(json.profile.as_ref().map(json_of), Some(json_of(&p)));
    assert_eq!(json.findings.len(), 1);
    assert_eq!(store.output(&run, "server.stdout").unwrap(), b"hello world");
    let hs = store.route_seconds(&run, RouteSource::AccessLog).unwrap();
    assert_eq!(hs.len(), 1);
    assert_eq!(hs[0].histogram.len(), 2);
    assert_eq!(hs[0].histogram.max(), h.max());

    // The JSON form parses back into the same model (the report crate's path).
    let text = serde_json::to_string(&json).unwrap();
    let back: RunJson = serde_json::from_str(&text).unwrap();
    assert_eq!(back, json);
    let v: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(v["routes"]["access_log"][0]["2xx"], 2);
    assert!(v["profile"]["samples"]["time_ms"].is_array());
}

#[test]
fn runs_are_found_by_last_prefix_and_name_and_removed() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("runs.db")).unwrap();
    let a = store.create_run(&new_run("alpha", 1_000_000)).unwrap();
    let b = store.create_run(&new_run("beta", 2_000_000)).unwrap();
    store.finish(&a, RunStatus::Complete, 1.0).unwrap();
    store.finish(&b, RunStatus::Interrupted, 1.0).unwrap();
    let list = store.list().unwrap();
    assert_eq!(
        list.iter().map(|l| l.id.as_str()).collect::<Vec<_>>(),
        vec![b.as_str(), a.as_str()]
    );
    assert_eq!(list[0].status, "interrupted");
    assert_eq!(list[0].tags["commit"], "abc");
    assert_eq!(store.resolve("last").unwrap(), b);
    assert_eq!(store.resolve("alpha").unwrap(), a);
    assert_eq!(store.resolve(&a).unwrap(), a);
    assert_eq!(store.resolve(&b[..17]).unwrap(), b);
    // Both ids start with 1970: a prefix matching both is ambiguous.
    assert!(matches!(
        store.resolve("1970"),
        Err(StoreError::Ambiguous { .. })
    ));
    let err = store.resolve("nope").unwrap_err();
    assert!(err.is_user_error());
    assert!(err.to_string().contains("keisoku runs"), "{err}");
    assert!(matches!(
        store.resolve("%"),
        Err(StoreError::UnknownRun { .. })
    ));

    store
        .append_series(
            &a,
            &[Series {
                name: "x".into(),
                unit: "".into(),
                t_ms: vec![0.0],
                v: vec![1.0],
            }],
        )
        .unwrap();
    store.put_profile(&a, &profile(10)).unwrap();
    assert!(store.remove(&a).unwrap());
    assert!(!store.remove(&a).unwrap());
    assert_eq!(store.list().unwrap().len(), 1);
    assert!(store.series(&a).unwrap().is_empty());
    assert!(store.profile(&a).unwrap().is_none());
}

#[test]
fn a_run_whose_writer_died_reads_as_interrupted() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let store = Store::open(&path).unwrap();
    let run = store.create_run(&new_run("killed", 5_000)).unwrap();
    store
        .append_series(
            &run,
            &[Series {
                name: "cpu.all.user".into(),
                unit: "%".into(),
                t_ms: vec![0.0, 1000.0],
                v: vec![1.0, 2.0],
            }],
        )
        .unwrap();
    // Our own pid is alive: still running.
    assert_eq!(store.run_info(&run).unwrap().status, "running");
    // Pretend the writer was a process that has exited.
    let mut child = std::process::Command::new("true").spawn().unwrap();
    let dead = child.id();
    child.wait().unwrap();
    rusqlite::Connection::open(&path)
        .unwrap()
        .execute(
            "UPDATE runs SET writer_pid = ?1 WHERE id = ?2",
            rusqlite::params![dead, run],
        )
        .unwrap();
    let info = store.run_info(&run).unwrap();
    assert_eq!(info.status, "interrupted");
    assert!(info.interrupted);
    assert_eq!(info.duration_ms, 1000.0);
    assert_eq!(store.load(&run).unwrap().series[0].v, vec![1.0, 2.0]);
}

#[test]
fn readers_see_a_run_while_it_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let writer = Store::open(&path).unwrap();
    let run = writer.create_run(&new_run("live", 9_000)).unwrap();
    let reader_path = path.clone();
    let run_r = run.clone();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop_r = stop.clone();
    let reader = std::thread::spawn(move || {
        let reader = Store::open_existing(&reader_path).unwrap();
        let mut seen = 0usize;
        let mut reads = 0;
        while !stop_r.load(std::sync::atomic::Ordering::Relaxed) || reads == 0 {
            let json = reader.load(&run_r).unwrap();
            let n = json.series.first().map_or(0, |s| s.t_ms.len());
            assert!(n >= seen, "points went backwards");
            // Every series gets its chunk in one transaction: never torn.
            assert!(json.series.iter().all(|s| s.t_ms.len() == n));
            seen = n;
            reads += 1;
        }
        (seen, reads)
    });
    let mut buf = SeriesBuffer::default();
    for sec in 0..200 {
        for i in 0..20 {
            buf.push(&format!("s.{i}"), "", sec as f64 * 1000.0, sec as f64);
        }
        buf.flush(&writer, &run).unwrap();
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (seen, reads) = reader.join().unwrap();
    assert!(reads > 0 && seen <= 200);
    assert_eq!(writer.load(&run).unwrap().series[0].t_ms.len(), 200);
}

#[test]
fn a_long_run_with_a_large_profile_stays_under_50_mb() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let store = Store::open(&path).unwrap();
    let run = store.create_run(&new_run("big", 1_000)).unwrap();
    // 10 minutes at 1 s, 300 series, flushed every 5 s as the recorder does.
    let mut buf = SeriesBuffer::default();
    for sec in 0..600 {
        for i in 0..300 {
            let v = ((sec * 31 + i * 17) % 1000) as f64 / 7.0;
            buf.push(&format!("series.{i}"), "%", sec as f64 * 1000.0 + 0.5, v);
        }
        if sec % 5 == 4 {
            buf.flush(&store, &run).unwrap();
        }
    }
    buf.flush(&store, &run).unwrap();
    // Per-second histograms for 10 routes from two sources.
    for src in [RouteSource::Client, RouteSource::AccessLog] {
        let mut secs = Vec::new();
        for sec in 0..600u32 {
            for r in 0..10 {
                let mut h = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
                for k in 0..200u64 {
                    h.record(500 + k * 37 + u64::from(sec)).unwrap();
                }
                secs.push(RouteSecond {
                    method: "GET".into(),
                    route: format!("/r{r}"),
                    second: sec,
                    histogram: h,
                    errors: 0,
                    transport_errors: 0,
                });
            }
        }
        store.put_route_seconds(&run, src, &secs).unwrap();
    }
    // A profile with 1,000,000 samples over 2,000 distinct stacks.
    let mut p = Profile::new("perf", Unit::Samples);
    let frames: Vec<u32> = (0..500)
        .map(|i| p.frame_parts(&format!("function_{i}"), "app", FrameKind::Native))
        .collect();
    for i in 0..2000u32 {
        let parent = if i < 10 { NO_PARENT } else { i / 3 };
        assert_eq!(p.child(parent, frames[(i % 500) as usize]), i);
    }
    for tid in [10, 11] {
        p.thread(Thread {
            pid: 10,
            tid,
            comm: "nginx".into(),
        });
    }
    let n: usize = 1_000_000;
    p.samples.node = (0..n).map(|i| ((i * 7919) % 2000) as u32).collect();
    p.samples.time_ns = Some(
        (0..n)
            .map(|i| i as u64 * 600_000 + (i % 3) as u64 * 13_700)
            .collect(),
    );
    p.samples.thread = Some((0..n).map(|i| (i % 2) as u32).collect());
    store.put_profile(&run, &p).unwrap();
    store.finish(&run, RunStatus::Complete, 600_000.0).unwrap();
    drop(store);
    let store = Store::open(&path).unwrap();
    // Fold the WAL into the main file so its size is the store's size.
    drop(store);
    let size = std::fs::metadata(&path).unwrap().len()
        + std::fs::metadata(path.with_extension("db-wal")).map_or(0, |m| m.len());
    eprintln!("store size: {:.1} MB", size as f64 / 1e6);
    assert!(size < 50_000_000, "store is {size} bytes");
    let store = Store::open_existing(&path).unwrap();
    let loaded = store.profile(&run).unwrap().unwrap();
    assert_eq!(loaded.samples.node.len(), n);
    assert_eq!(loaded.samples.node, p.samples.node);
    assert_eq!(loaded.samples.thread, p.samples.thread);
    assert_eq!(loaded.samples.weight, p.samples.weight);
    // Times are kept to the microsecond (cut, as profile JSON writes them).
    assert_eq!(
        loaded.samples.time_ns,
        p.samples
            .time_ns
            .map(|t| t.iter().map(|x| x / 1000 * 1000).collect())
    );
    let series = store.series(&run).unwrap();
    assert_eq!(series.len(), 300);
    assert!(series.iter().all(|s| s.t_ms.len() == 600));
}

#[test]
fn missing_store_and_damaged_data_are_errors() {
    let dir = tempfile::tempdir().unwrap();
    let err = Store::open_existing(&dir.path().join("none.db")).unwrap_err();
    assert!(err.is_user_error());
    let junk = dir.path().join("junk.db");
    std::fs::write(
        &junk,
        b"this is not a database, just text that is long enough to look like a header..",
    )
    .unwrap();
    assert!(Store::open_existing(&junk).is_err());
}

fn access_log(max_bytes: u64) -> AccessLog {
    AccessLog {
        path: "/var/log/nginx/access.log".into(),
        format: "ltsv".into(),
        pattern: None,
        keep_lines: true,
        max_bytes,
        ..AccessLog::default()
    }
}

fn read_lines(store: &Store, run: &str) -> Vec<u8> {
    use std::io::Read;
    let mut out = Vec::new();
    store.log_lines(run).unwrap().read_to_end(&mut out).unwrap();
    out
}

/// `n` LTSV-like lines of varied length, numbered from `from`.
fn log_text(from: usize, n: usize) -> Vec<u8> {
    let mut s = String::new();
    for i in from..from + n {
        s.push_str(&format!(
            "time:2026-11-21T21:30:{:02}+00:00\tmethod:GET\turi:/items/{}?q={}\tstatus:200\treqtime:0.{:03}\n",
            i % 60,
            i * 7,
            "x".repeat(i % 13),
            i % 1000
        ));
    }
    s.into_bytes()
}

#[test]
fn kept_log_lines_read_back_byte_for_byte_across_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("runs.db")).unwrap();
    let run = store.create_run(&new_run("lines", 1_000)).unwrap();
    let mut w = LogLinesWriter::start(&store, &run, access_log(1 << 40)).unwrap();
    let mut all = Vec::new();
    // Pieces of every size, some larger than a chunk, on a moving clock.
    let mut next = 0;
    for (i, n) in [1usize, 30, 20_000, 5, 0, 9_000, 1].into_iter().enumerate() {
        let text = log_text(next, n);
        next += n;
        w.push(&store, &text, i as f64 * 300.0).unwrap();
        w.tick(&store, i as f64 * 300.0).unwrap();
        all.extend_from_slice(&text);
    }
    // One line longer than a chunk stays whole.
    let long = format!(
        "uri:/{}\n",
        "y".repeat(keisoku_store::log_lines::CHUNK_BYTES + 10)
    );
    w.push(&store, long.as_bytes(), 2500.0).unwrap();
    all.extend_from_slice(long.as_bytes());
    w.flush(&store, 2600.0).unwrap();
    let got = read_lines(&store, &run);
    assert_eq!(got.len(), all.len());
    assert!(got == all, "lines differ");
    let info = store.access_log(&run).unwrap().unwrap();
    assert_eq!(info.lines, next as u64 + 1);
    assert_eq!(info.kept_lines, info.lines);
    assert_eq!(info.kept_bytes, all.len() as u64);
    assert!(!info.truncated && info.truncated_ms.is_none());
    // The JSON of the run says so too, and the lines compress.
    let json = store.load(&run).unwrap();
    assert_eq!(json.routes.access_log_lines.as_ref(), Some(&info));
    assert!(
        info.stored_bytes * 4 < info.kept_bytes,
        "{} stored for {} raw",
        info.stored_bytes,
        info.kept_bytes
    );
    // Removing the run removes its lines.
    assert!(store.remove(&run).unwrap());
    assert!(store.access_log(&run).unwrap().is_none());
    assert!(read_lines(&store, &run).is_empty());
}

#[test]
fn the_size_cap_keeps_a_prefix_of_whole_lines_and_says_when() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("runs.db")).unwrap();
    let run = store.create_run(&new_run("cap", 1_000)).unwrap();
    let text = log_text(0, 100);
    let cap = 2_000u64;
    let mut w = LogLinesWriter::start(&store, &run, access_log(cap)).unwrap();
    for (i, line) in text.split_inclusive(|&b| b == b'\n').enumerate() {
        w.push(&store, line, 10.0 * i as f64).unwrap();
    }
    // A line that would fit after the cut is not kept either: no gaps.
    w.push(&store, b"x\n", 5000.0).unwrap();
    w.flush(&store, 5000.0).unwrap();
    let info = store.access_log(&run).unwrap().unwrap();
    let got = read_lines(&store, &run);
    assert!(got.len() as u64 <= cap && got.len() as u64 > cap - 120);
    assert!(text.starts_with(&got) && got.ends_with(b"\n"));
    assert_eq!(info.lines, 101);
    assert_eq!(
        info.kept_lines,
        got.iter().filter(|&&b| b == b'\n').count() as u64
    );
    assert_eq!(info.kept_bytes, got.len() as u64);
    assert!(info.truncated);
    let first_dropped = info.kept_lines as f64 * 10.0;
    assert_eq!(info.truncated_ms, Some(first_dropped));

    // --no-log-lines: counted, nothing kept, not "truncated".
    let run2 = store.create_run(&new_run("none", 2_000)).unwrap();
    let mut off = access_log(cap);
    off.keep_lines = false;
    let mut w = LogLinesWriter::start(&store, &run2, off).unwrap();
    w.push(&store, &text, 0.0).unwrap();
    w.flush(&store, 0.0).unwrap();
    let info = store.access_log(&run2).unwrap().unwrap();
    assert_eq!(
        (info.lines, info.kept_lines, info.truncated),
        (100, 0, false)
    );
    assert!(read_lines(&store, &run2).is_empty());
}

#[test]
fn a_reader_sees_lines_a_second_after_they_were_read() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let store = Store::open(&path).unwrap();
    let run = store.create_run(&new_run("live", 1_000)).unwrap();
    let mut w = LogLinesWriter::start(&store, &run, access_log(1 << 30)).unwrap();
    let reader = Store::open_existing(&path).unwrap();
    w.push(&store, &log_text(0, 10), 100.0).unwrap();
    w.tick(&store, 900.0).unwrap();
    assert!(read_lines(&reader, &run).is_empty());
    assert_eq!(reader.access_log(&run).unwrap().unwrap().lines, 0);
    w.tick(&store, 1100.0).unwrap();
    assert_eq!(read_lines(&reader, &run), log_text(0, 10));
    let info = reader.access_log(&run).unwrap().unwrap();
    assert_eq!((info.lines, info.kept_lines), (10, 10));
    // The writer going away without a flush (a killed keisoku) keeps every
    // chunk already written.
    w.push(&store, &log_text(10, 5), 1200.0).unwrap();
    drop(w);
    assert_eq!(read_lines(&reader, &run), log_text(0, 10));
}

#[test]
fn a_damaged_log_chunk_is_an_error_not_garbage() {
    use std::io::Read;
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let store = Store::open(&path).unwrap();
    let run = store.create_run(&new_run("bad", 1_000)).unwrap();
    let mut w = LogLinesWriter::start(&store, &run, access_log(1 << 30)).unwrap();
    w.push(&store, &log_text(0, 50), 0.0).unwrap();
    w.flush(&store, 0.0).unwrap();
    let conn = rusqlite::Connection::open(&path).unwrap();
    conn.execute("UPDATE log_chunks SET raw_bytes = raw_bytes + 7", [])
        .unwrap();
    let err = store
        .log_lines(&run)
        .unwrap()
        .read_to_end(&mut Vec::new())
        .unwrap_err();
    assert!(err.to_string().contains("log chunk 0"), "{err}");
    conn.execute("UPDATE log_chunks SET data = x'00ff00ff'", [])
        .unwrap();
    assert!(store
        .log_lines(&run)
        .unwrap()
        .read_to_end(&mut Vec::new())
        .is_err());
}

#[test]
fn a_profile_reads_back_as_it_was_put_in_every_form() {
    let dir = tempfile::tempdir().unwrap();
    let store = Store::open(&dir.path().join("runs.db")).unwrap();
    let run = store.create_run(&new_run("forms", 1_000)).unwrap();
    // Per-sample weights, more samples than one stored chunk.
    let mut weighted = profile(70_000);
    weighted.unit = Unit::Nanoseconds;
    weighted.samples.weight = Some((0..70_000).map(|i| 1 + i % 17).collect());
    // No times, no threads.
    let mut untimed = profile(3);
    untimed.samples.time_ns = None;
    untimed.samples.thread = None;
    untimed.start_unix_ns = None;
    // The counts form (folded stacks).
    let folded =
        keisoku_stacks::folded::parse(&mut "a;b 3\na;c 2\nd 1\n".as_bytes(), "folded").unwrap();
    for p in [weighted, untimed, folded, profile(0)] {
        store.put_profile(&run, &p).unwrap();
        let back = store.profile(&run).unwrap().unwrap();
        assert_eq!(json_of(&back), json_of(&p), "{}", p.title);
        assert_eq!(back.counts, p.counts);
        assert_eq!(back.samples.weight, p.samples.weight);
    }
}

#[test]
fn run_json_carries_the_profile_json_byte_for_byte() {
    let p = profile(50);
    let run = RunJson {
        profile: Some(p.clone()),
        ..RunJson::default()
    };
    let text = serde_json::to_string(&run).unwrap();
    assert!(
        text.contains(&format!("\"profile\":{},\"findings\"", json_of(&p))),
        "{text}"
    );
    // Read back from text and from a parsed value (the report crate's path).
    let back: RunJson = serde_json::from_str(&text).unwrap();
    assert_eq!(back.profile.as_ref().map(json_of), Some(json_of(&p)));
    let value: serde_json::Value = serde_json::from_str(&text).unwrap();
    let back: RunJson = serde_json::from_value(value).unwrap();
    assert_eq!(back, run);
    // No profile, and an older file without the field, read as none.
    let none = serde_json::to_string(&RunJson::default()).unwrap();
    assert!(none.contains("\"profile\":null"), "{none}");
    let mut v: serde_json::Value = serde_json::from_str(&none).unwrap();
    v.as_object_mut().unwrap().remove("profile");
    assert!(serde_json::from_value::<RunJson>(v)
        .unwrap()
        .profile
        .is_none());
    // A damaged profile is an error naming what was expected.
    let bad = text.replacen("\"version\":1,\"title\"", "\"version\":9,\"title\"", 1);
    let err = serde_json::from_str::<RunJson>(&bad)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("profile: expected profile JSON version 1"),
        "{err}"
    );
}

/// Two writers on one store (the live series writer and the recorder, or
/// two keisoku processes) append series at once. Each append reads a series
/// id and then writes; a deferred transaction could not wait for the lock
/// and failed at once with "database is locked" whatever the busy timeout.
#[test]
fn two_writers_appending_series_at_once_both_wait_for_the_lock() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let store = Store::open(&path).unwrap();
    let run = store.create_run(&new_run("a", 1_700_000_000_000)).unwrap();
    drop(store);
    let writers: Vec<_> = (0..2)
        .map(|w| {
            let path = path.clone();
            let run = run.clone();
            std::thread::spawn(move || {
                let store = Store::open_existing(&path).unwrap();
                for i in 0..300 {
                    let series = Series {
                        // A new name every time: the append reads, misses and inserts.
                        name: format!("w{w}.s{i}"),
                        unit: "count".into(),
                        t_ms: vec![i as f64],
                        v: vec![1.0],
                    };
                    store.append_series(&run, &[series])?;
                }
                Ok::<(), StoreError>(())
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap().unwrap();
    }
}

#[test]
fn a_wall_clock_profile_is_kept_beside_the_cpu_profile_and_older_stores_read_as_before() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("runs.db");
    let run;
    {
        let store = Store::open(&path).unwrap();
        run = store.create_run(&new_run("kinds", 1_000)).unwrap();
        store.put_profile(&run, &profile(100)).unwrap();
        store.finish(&run, RunStatus::Complete, 1000.0).unwrap();
    }
    {
        // A store as version 3 wrote it: no wall-clock tables at all.
        rusqlite::Connection::open(&path)
            .unwrap()
            .execute_batch(
                "DROP TABLE wall_profile_samples; DROP TABLE wall_profile_nodes;
                 DROP TABLE wall_profile_frames; DROP TABLE wall_profiles;
                 DELETE FROM schema_version WHERE version > 3;",
            )
            .unwrap();
    }
    let store = Store::open(&path).unwrap();
    let json = store.load(&run).unwrap();
    assert_eq!(
        json.profile.as_ref().map(json_of),
        Some(json_of(&profile(100)))
    );
    assert!(json.wall_profile.is_none());
    // Its Run JSON has no wall_profile field at all (readers of version 1 see no change).
    assert!(!serde_json::to_string(&json)
        .unwrap()
        .contains("wall_profile"));
    // The wall-clock profile goes beside the CPU one; neither replaces the other.
    store
        .put_profile_of(&run, ProfileKind::Wall, &profile(300))
        .unwrap();
    let json = store.load(&run).unwrap();
    assert_eq!(
        json.profile.as_ref().map(json_of),
        Some(json_of(&profile(100)))
    );
    assert_eq!(
        json.wall_profile.as_ref().map(json_of),
        Some(json_of(&profile(300)))
    );
    let text = serde_json::to_string(&json).unwrap();
    let back: RunJson = serde_json::from_str(&text).unwrap();
    assert_eq!(back, json);
    assert_eq!(ProfileKind::from_name("wall"), Some(ProfileKind::Wall));
    assert_eq!(ProfileKind::from_name("off-cpu"), None);
    // Removing the run removes both.
    assert!(store.remove(&run).unwrap());
    assert!(store.profile_of(&run, ProfileKind::Wall).unwrap().is_none());
}
