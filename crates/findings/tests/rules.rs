//! Each rule on synthetic runs: it fires on the evidence it names and stays
//! quiet on a healthy run that differs only in that evidence.

use keisoku_findings::{analyze, from_json, render_text, to_json, Finding, Severity};
use keisoku_stacks::model::NO_PARENT;
use keisoku_stacks::{FrameKind, Profile, Thread, Unit};
use keisoku_store::{Machine, Phase, RouteRow, Routes, RunInfo, RunJson, Series};
use serde_json::json;

const PHASE_MS: f64 = 4000.0;

/// A healthy closed-model run: 3 phases (c=1,4,8) of 4 s, 1000 req/s per
/// connection up to 2 cores, series every 100 ms, no profile.
fn base() -> RunJson {
    let conns = [1u64, 4, 8];
    let phases: Vec<Phase> = conns
        .iter()
        .enumerate()
        .map(|(i, c)| Phase {
            index: i as u32,
            label: format!("c={c}"),
            start_ms: i as f64 * PHASE_MS,
            end_ms: (i + 1) as f64 * PHASE_MS,
            warmup: false,
            connections: Some(*c),
            rate: None,
        })
        .collect();
    let rps = [1000.0, 3000.0, 3500.0];
    let results = json!({
        "started_unix_ms": 1_000_000,
        "knee": null,
        "generator": [{"thread": 0, "cpu_pct": 30.0}],
        "warnings": [],
        "schedule": null,
        "timeline": (0..12).map(|s| json!({"t_s": s, "max_ms": 3.0})).collect::<Vec<_>>(),
        "phases": conns.iter().zip(rps).map(|(c, r)| json!({
            "requests": r * PHASE_MS / 1000.0, "rps": r,
            "latency_ms": {"mean": *c as f64 / r * 1000.0, "p99": 3.0}
        })).collect::<Vec<_>>(),
    });
    let mut run = RunJson {
        version: 1,
        run: RunInfo {
            id: "20261121-000000-abcd".into(),
            name: "synthetic".into(),
            tags: Default::default(),
            started_unix_ms: 1_000_000,
            duration_ms: 3.0 * PHASE_MS,
            target: Some("http://127.0.0.1:1/".into()),
            command: "keisoku run".into(),
            machine: Machine {
                hostname: "h".into(),
                cores: 2,
                kernel: "6.1".into(),
                memory_bytes: 1 << 30,
            },
            interrupted: false,
            model: Some("closed".into()),
            status: "complete".into(),
        },
        results,
        phases,
        series: Vec::new(),
        routes: Routes::default(),
        route_seconds: Default::default(),
        profile: None,
        wall_profile: None,
        findings: Vec::new(),
    };
    // CPU per request 0.2 ms; the rest of a request is network and client.
    set(&mut run, "proc.cpu_user", |_, rps| {
        rps * 0.2 / 1000.0 * 100.0 * 0.8
    });
    set(&mut run, "proc.cpu_system", |_, rps| {
        rps * 0.2 / 1000.0 * 100.0 * 0.2
    });
    set(&mut run, "proc.runq_delay_ms", |_, rps| rps * 0.01);
    set(&mut run, "proc.nivcsw", |_, rps| rps * 0.5);
    set(&mut run, "proc.nvcsw", |_, rps| rps * 2.0);
    set(&mut run, "proc.migrations", |_, rps| rps * 0.001);
    set(&mut run, "tcp.active_opens", |_, _| 2.0);
    set(&mut run, "tcp.passive_opens", |_, _| 2.0);
    set(&mut run, "cpu.all.idle", |_, rps| 100.0 - rps / 40.0);
    set(&mut run, "vm.pgmajfault", |_, _| 0.0);
    set(&mut run, "vm.pgpgin", |_, _| 0.0);
    set(&mut run, "disk.vda.r_iops", |t, _| 5.0 + (t / 1000.0) % 3.0);
    set(&mut run, "disk.vda.w_iops", |t, _| 50.0 + (t / 700.0) % 5.0);
    run
}

/// Sets phase `i`'s throughput and mean latency; it served `rps` for the
/// whole phase.
fn set_phase(run: &mut RunJson, i: usize, rps: f64, mean_ms: f64) {
    let p = &mut run.results["phases"][i];
    p["rps"] = json!(rps);
    p["requests"] = json!(rps * PHASE_MS / 1000.0);
    p["latency_ms"]["mean"] = json!(mean_ms);
}

/// Request rate of the phase holding t.
fn rps_at(run: &RunJson, t: f64) -> f64 {
    let i = ((t - 1.0) / PHASE_MS) as usize;
    run.results["phases"][i.min(2)]["rps"]
        .as_f64()
        .unwrap_or(0.0)
}

/// Sets (or replaces) a series sampled every 100 ms from f(t, rps).
fn set(run: &mut RunJson, name: &str, f: impl Fn(f64, f64) -> f64) {
    let t: Vec<f64> = (1..=120).map(|i| i as f64 * 100.0).collect();
    let v = t.iter().map(|t| f(*t, rps_at(run, *t))).collect();
    run.series.retain(|s| s.name != name);
    run.series.push(Series {
        name: name.into(),
        unit: "/s".into(),
        t_ms: t,
        v,
    });
}

/// A profile whose samples follow `stack_at(i, t)` -> (frames root first, thread).
fn profile(
    run: &mut RunJson,
    threads: &[&str],
    n: usize,
    stack_at: impl Fn(usize, f64) -> Option<(Vec<&'static str>, u32)>,
) {
    let mut p = Profile::new("t", Unit::Samples);
    p.samples.time_ns = Some(Vec::new());
    p.samples.thread = Some(Vec::new());
    let span = run.run.duration_ms;
    for i in 0..n {
        let t = (i as f64 + 0.5) * span / n as f64;
        let Some((stack, thread)) = stack_at(i, t) else {
            continue;
        };
        let mut parent = NO_PARENT;
        for name in stack {
            let f = p.frame_parts(name, "app", FrameKind::Native);
            parent = p.child(parent, f);
        }
        p.samples.node.push(parent);
        if let Some(v) = p.samples.time_ns.as_mut() {
            v.push((t * 1e6).round() as u64);
        }
        if let Some(v) = p.samples.thread.as_mut() {
            v.push(thread);
        }
    }
    for (i, c) in threads.iter().enumerate() {
        p.thread(Thread {
            pid: 1,
            tid: i as u32 + 1,
            comm: (*c).into(),
        });
    }
    p.start_unix_ns = Some(1_000_000 * 1_000_000);
    run.profile = Some(p);
}

/// A healthy two-worker profile: the auction's own work.
fn healthy_profile(run: &mut RunJson) {
    profile(run, &["worker-0", "worker-1"], 2000, |i, _| {
        let leaf = ["score", "auction", "write_response"][i % 3];
        Some((vec!["main", "handle", leaf], (i % 2) as u32))
    });
}

fn ids(run: &RunJson) -> Vec<String> {
    analyze(run)
        .into_iter()
        .filter(Finding::is_problem)
        .map(|f| f.id)
        .collect()
}

#[test]
fn healthy_run_has_no_problem() {
    let mut run = base();
    healthy_profile(&mut run);
    assert_eq!(ids(&run), Vec::<String>::new());
    let all = analyze(&run);
    assert!(all.iter().any(|f| f.id == "hot-code.top-self"));
}

#[test]
fn saturation_cpu_bound_is_info_and_idle_knee_is_a_problem() {
    let mut run = base();
    run.results["knee"] = json!(1);
    set(&mut run, "cpu.all.idle", |_, _| 3.0);
    let f = analyze(&run);
    let s = f
        .iter()
        .find(|f| f.rule == "saturation")
        .expect("saturation");
    assert_eq!(s.id, "saturation.cpu-bound");
    assert_eq!(s.severity, Severity::Info);
    assert_eq!(s.evidence.phases, vec![1, 2]);

    // Busy cores, but the server used a tenth of one: someone else's CPU.
    let mut quiet = run.clone();
    set(&mut quiet, "proc.cpu_user", |_, _| 8.0);
    set(&mut quiet, "proc.cpu_system", |_, _| 2.0);
    let f = analyze(&quiet);
    assert!(f
        .iter()
        .any(|f| f.id == "saturation.host-busy" && !f.is_problem()));

    set(&mut run, "cpu.all.idle", |_, _| 60.0);
    assert!(ids(&run).contains(&"saturation.not-cpu-bound".to_string()));
    run.results["knee"] = json!(null);
    assert!(!analyze(&run).iter().any(|f| f.rule == "saturation"));
}

#[test]
fn single_core_fires_for_one_worker_not_for_two() {
    let mut run = base();
    set(&mut run, "proc.cpu_user", |_, _| 95.0);
    set(&mut run, "proc.cpu_system", |_, _| 5.0);
    profile(&mut run, &["worker-0", "backend-0"], 2000, |i, _| {
        Some((vec!["main", "handle", "score"], u32::from(i % 10 == 0)))
    });
    assert_eq!(ids(&run)[0], "single-core");
    // Two workers, even unevenly loaded, can use two cores.
    profile(&mut run, &["worker-0", "worker-1"], 2000, |i, _| {
        Some((vec!["main", "handle", "score"], u32::from(i % 5 == 0)))
    });
    assert!(!ids(&run).contains(&"single-core".to_string()));
}

#[test]
fn single_core_leaves_out_runtime_helpers_that_share_the_process_name() {
    // One Node process: the event loop does the requests; V8's platform
    // workers (all named `node`, like it) compile and mark in the
    // background at 5-8% of its samples each.
    let mut run = base();
    set(&mut run, "proc.cpu_user", |_, _| 95.0);
    set(&mut run, "proc.cpu_system", |_, _| 5.0);
    let threads = ["node", "node", "node", "node"];
    profile(&mut run, &threads, 2000, |i, _| match i % 16 {
        0 => Some((
            vec![
                "start_thread",
                "node::(anonymous namespace)::PlatformWorkerThread",
                "v8::internal::OptimizingCompileDispatcher::CompileTask::RunInternal",
                "v8::internal::compiler::GraphReducer::ReduceTop",
            ],
            1,
        )),
        1 => Some((
            vec![
                "start_thread",
                "node::(anonymous namespace)::PlatformWorkerThread",
                "v8::platform::DefaultJobWorker::Run",
                "v8::internal::ConcurrentMarking::RunMajor",
            ],
            2,
        )),
        2 => Some((
            vec![
                "start_thread",
                "node::(anonymous namespace)::PlatformWorkerThread",
            ],
            3,
        )),
        _ => Some((vec!["node::Start", "uv_run", "JS:handle"], 0)),
    });
    let f = analyze(&run);
    let single = f
        .iter()
        .find(|f| f.id == "single-core")
        .unwrap_or_else(|| panic!("single-core in {}", render_text(&f)));
    assert!(
        single
            .evidence
            .text
            .iter()
            .any(|t| t.contains("3 runtime helper threads")),
        "{:?}",
        single.evidence.text
    );
    // Two processes of the same name serving requests (a cluster) are workers.
    profile(&mut run, &threads, 2000, |i, _| {
        Some((
            vec!["node::Start", "uv_run", "JS:handle"],
            u32::from(i % 5 == 0),
        ))
    });
    assert!(!ids(&run).contains(&"single-core".to_string()));
}

#[test]
fn single_core_counts_a_starved_workers_wait_for_a_core() {
    // A busy host: the one worker runs 55% of a core and waits runnable
    // for another 350 ms each second; alone it is still the whole server.
    let mut run = base();
    set(&mut run, "proc.cpu_user", |_, _| 60.0);
    set(&mut run, "proc.cpu_system", |_, _| 5.0);
    profile(&mut run, &["worker-0", "backend-0"], 2000, |i, _| {
        Some((vec!["main", "handle", "score"], u32::from(i % 6 == 0)))
    });
    assert!(!ids(&run).contains(&"single-core".to_string()));
    set(&mut run, "proc.runq_delay_ms", |_, _| 350.0);
    assert_eq!(ids(&run)[0], "single-core");
}

#[test]
fn single_core_on_a_busy_host_counts_from_half_a_core_when_the_worker_is_starved() {
    // Load 20 on 2 cores: the lone worker runs 35% of a core and waits
    // 25% for one; the starved load generator leaves it idle the rest.
    let mut run = base();
    set(&mut run, "cpu.all.idle", |_, _| 0.0);
    set(&mut run, "proc.cpu_user", |_, _| 35.0);
    set(&mut run, "proc.cpu_system", |_, _| 3.0);
    profile(&mut run, &["worker-0", "backend-0"], 2000, |i, _| {
        Some((vec!["main", "handle", "score"], u32::from(i % 20 == 0)))
    });
    set(&mut run, "thread.worker-0:1:1.cpu", |_, _| 35.0);
    set(&mut run, "thread.worker-0:1:1.runq_delay_ms", |_, _| 250.0);
    assert_eq!(ids(&run)[0], "single-core");
    // Not when it is not kept waiting: then it simply has little to do.
    set(&mut run, "thread.worker-0:1:1.runq_delay_ms", |_, _| 100.0);
    set(&mut run, "thread.worker-0:1:1.cpu", |_, _| 45.0);
    assert!(!ids(&run).contains(&"single-core".to_string()));
    // Nor on a host with idle cores, where it could have run.
    set(&mut run, "thread.worker-0:1:1.runq_delay_ms", |_, _| 250.0);
    set(&mut run, "thread.worker-0:1:1.cpu", |_, _| 35.0);
    set(&mut run, "cpu.all.idle", |_, _| 40.0);
    assert!(!ids(&run).contains(&"single-core".to_string()));
}

#[test]
fn single_core_uses_the_threads_own_wait_when_it_has_series() {
    // The process waits 350 ms/s for a core, but from its own series the
    // worker waits only 50 ms/s: the rest is other threads' waiting, and
    // the worker (55% + 5%) is not saturated.
    let mut run = base();
    set(&mut run, "proc.cpu_user", |_, _| 60.0);
    set(&mut run, "proc.cpu_system", |_, _| 5.0);
    set(&mut run, "proc.runq_delay_ms", |_, _| 350.0);
    profile(&mut run, &["worker-0", "backend-0"], 2000, |i, _| {
        Some((vec!["main", "handle", "score"], u32::from(i % 6 == 0)))
    });
    // The profile helper gives thread k pid 1 and tid k + 1.
    set(&mut run, "thread.worker-0:1:1.cpu", |_, _| 55.0);
    set(&mut run, "thread.worker-0:1:1.runq_delay_ms", |_, _| 50.0);
    set(&mut run, "thread.backend-0:1:2.cpu", |_, _| 10.0);
    set(&mut run, "thread.backend-0:1:2.runq_delay_ms", |_, _| 300.0);
    assert!(!ids(&run).contains(&"single-core".to_string()));
    // Its own wait of 350 ms/s makes it saturated.
    set(&mut run, "thread.worker-0:1:1.runq_delay_ms", |_, _| 350.0);
    let f = analyze(&run);
    let sc = f
        .iter()
        .find(|f| f.id == "single-core")
        .expect("single-core");
    assert!(
        sc.evidence.text[0].contains("~90% with its time waiting")
            && sc.evidence.text[0].contains("its own thread series"),
        "{:?}",
        sc.evidence.text
    );
    assert!(sc
        .evidence
        .series
        .contains(&"thread.worker-0:1:1.runq_delay_ms".to_string()));
    // Another process's thread with the same tid is not the worker.
    set(&mut run, "thread.other:7:1.cpu", |_, _| 5.0);
    set(&mut run, "thread.other:7:1.runq_delay_ms", |_, _| 0.0);
    assert!(ids(&run).contains(&"single-core".to_string()));
}

#[test]
fn single_core_from_thread_series_without_a_profile() {
    // `keisoku record --profile none`: only the per-thread series say
    // which thread works.
    let mut run = base();
    set(&mut run, "proc.cpu_user", |_, _| 85.0);
    set(&mut run, "proc.cpu_system", |_, _| 10.0);
    set(&mut run, "thread.loop-0:9:9.cpu", |_, _| 88.0);
    set(&mut run, "thread.loop-0:9:9.runq_delay_ms", |_, _| 20.0);
    set(&mut run, "thread.gc:9:12.cpu", |_, _| 7.0);
    let f = analyze(&run);
    let sc = f
        .iter()
        .find(|f| f.id == "single-core")
        .expect("single-core");
    assert!(
        sc.title
            .starts_with("One thread (loop-0) does 93% of the server's work"),
        "{}",
        sc.title
    );
    assert!(
        sc.evidence.text[0].contains("no profile"),
        "{:?}",
        sc.evidence.text
    );
    assert_eq!(
        sc.evidence.series,
        vec!["thread.loop-0:9:9.cpu", "thread.loop-0:9:9.runq_delay_ms"]
    );
    // A second loop of the same family doing real work: the server spreads.
    set(&mut run, "thread.loop-1:9:10.cpu", |_, _| 30.0);
    assert!(!ids(&run).contains(&"single-core".to_string()));
    // One busy thread that is not saturated is not a single-core server.
    let mut run = base();
    set(&mut run, "thread.loop-0:9:9.cpu", |_, _| 40.0);
    assert!(!ids(&run).contains(&"single-core".to_string()));
}

#[test]
fn regexes_a_formatter_compiles_while_it_is_built_are_the_formatters_cost() {
    // JDK 17 building a currency NumberFormat per bid item: its regex
    // compilation is inside the formatter's construction, and building the
    // formatter once removes both. A regex compiled by the request itself
    // is still its own cause.
    let stacks = |own_regex: bool| {
        move |i: usize, _| {
            let stack = match i % 10 {
                0..=2 => vec![
                    "bidder.Bidder.bid",
                    "java.text.NumberFormat.getInstance",
                    "java.text.DecimalFormat.applyPattern",
                    "java.util.regex.Pattern.compile",
                ],
                3 if own_regex => vec!["bidder.Bidder.bid", "java.util.regex.Pattern.compile"],
                _ => vec!["bidder.Bidder.bid", "bidder.Bidder.score"],
            };
            Some((stack, (i % 2) as u32))
        }
    };
    for own_regex in [false, true] {
        let mut run = base();
        profile(&mut run, &["worker-0", "worker-1"], 2000, stacks(own_regex));
        let found = ids(&run);
        let has = |id: &str| found.iter().any(|f| f == id);
        assert!(has("hot-code.formatter"), "{found:?}");
        assert_eq!(has("hot-code.regex-compile"), own_regex, "{found:?}");
    }
}

#[test]
fn hot_code_names_known_expensive_work_with_frames() {
    for (frame, id, share_every) in [
        ("serde_json::de::from_str", "hot-code.json-parse", 3),
        (
            "regex::regex::string::Regex::new",
            "hot-code.regex-compile",
            8,
        ),
        (
            "time::format_description::parse_borrowed",
            "hot-code.formatter",
            10,
        ),
        ("do_sys_openat2", "hot-code.file-open", 20),
        ("app::Config::load", "hot-code.config-load", 10),
    ] {
        let mut run = base();
        profile(&mut run, &["worker-0", "worker-1"], 2000, |i, _| {
            let stack = if i % share_every == 0 {
                vec!["main", "handle", frame, "inner"]
            } else {
                vec!["main", "handle", "score"]
            };
            Some((stack, (i % 2) as u32))
        });
        let f = analyze(&run);
        let hit = f
            .iter()
            .find(|f| f.id == id)
            .unwrap_or_else(|| panic!("{id}"));
        assert!(hit.is_problem());
        assert_eq!(hit.evidence.frames[0].name, frame);
        let want = 1.0 / share_every as f64;
        assert!((hit.evidence.frames[0].share - want).abs() < 0.01, "{id}");
        // Below its threshold the same work is not reported.
        let mut run = base();
        profile(&mut run, &["worker-0", "worker-1"], 2000, |i, _| {
            let stack = if i % 100 == 0 {
                vec!["main", "handle", frame]
            } else {
                vec!["main", "handle", "score"]
            };
            Some((stack, (i % 2) as u32))
        });
        assert!(!ids(&run).contains(&id.to_string()), "{id} at 1%");
    }
}

/// Samples thin out to one thread copying a log in [6.0 s, 6.4 s); the
/// client's slowest request that second waited 380 ms.
fn stalled(run: &mut RunJson, copy_frame: &'static str) {
    profile(run, &["worker-0", "worker-1"], 2400, move |i, t| {
        if (6000.0..6400.0).contains(&t) {
            (i % 10 == 0).then(|| (vec!["main", "handle", "log", copy_frame], 0))
        } else {
            Some((vec!["main", "handle", "score"], (i % 2) as u32))
        }
    });
    let tl = run.results["timeline"].as_array_mut().unwrap();
    tl[6]["max_ms"] = json!(380.0);
}

#[test]
fn stalls_fire_with_copy_work_and_name_the_frames() {
    let mut run = base();
    stalled(&mut run, "accesslog::copy_compressed");
    let f = analyze(&run);
    let s = f.iter().find(|f| f.id == "stalls").expect("stall");
    let [a, b] = s.evidence.range_ms.expect("range");
    assert!(a >= 5900.0 && b <= 6500.0 && b - a >= 300.0, "{a}-{b}");
    assert_eq!(s.evidence.frames[0].name, "accesslog::copy_compressed");
    // Same dip without latency rising: not a stall.
    let mut run = base();
    stalled(&mut run, "accesslog::copy_compressed");
    run.results["timeline"][6]["max_ms"] = json!(3.0);
    assert!(!ids(&run).contains(&"stalls".to_string()));
    // A dip with nothing of the server's own in it (another tenant): not reported.
    let mut run = base();
    stalled(&mut run, "score");
    assert!(!ids(&run).contains(&"stalls".to_string()));
}

/// A 2-core stall: the thread copying under the lock is as busy as the
/// workers were, so samples do not fall, but nothing else runs in
/// [6.0 s, 6.4 s); `copier` is the thread doing the copy.
fn copy_fills_the_window(run: &mut RunJson, copier: u32) {
    profile(
        run,
        &["worker-0", "worker-1", "log-writer"],
        2400,
        move |i, t| {
            if (6000.0..6400.0).contains(&t) {
                Some((vec!["main", "roll", "flate2::deflate"], copier))
            } else {
                Some((vec!["main", "handle", "score"], (i % 2) as u32))
            }
        },
    );
    let tl = run.results["timeline"].as_array_mut().unwrap();
    tl[6]["max_ms"] = json!(380.0);
}

#[test]
fn stalls_fire_when_copying_fills_the_window_on_a_request_thread() {
    let mut run = base();
    copy_fills_the_window(&mut run, 0);
    let f = analyze(&run);
    let s = f.iter().find(|f| f.id == "stalls").expect("stall");
    let [a, b] = s.evidence.range_ms.expect("range");
    assert!(a >= 5900.0 && b <= 6500.0 && b - a >= 300.0, "{a}-{b}");
    // The same copy on a background writer thread holds up no request.
    let mut run = base();
    copy_fills_the_window(&mut run, 2);
    assert!(!ids(&run).contains(&"stalls".to_string()));
}

#[test]
fn scheduler_churn_needs_migrations_per_request_and_per_core() {
    let mut run = base();
    set(&mut run, "proc.migrations", |_, rps| rps * 0.5);
    assert!(ids(&run).contains(&"scheduler-churn".to_string()));
    // The same per-request ratio at a trickle of requests is idle threads moving.
    let mut run = base();
    set(&mut run, "proc.migrations", |_, _| 20.0);
    set(&mut run, "proc.nivcsw", |_, _| 20.0);
    for p in run.results["phases"].as_array_mut().unwrap() {
        p["rps"] = json!(40.0);
        p["requests"] = json!(160.0);
    }
    assert!(!ids(&run).contains(&"scheduler-churn".to_string()));
    let mut run = base();
    set(&mut run, "proc.nivcsw", |_, rps| rps * 12.0);
    assert!(ids(&run).contains(&"scheduler-churn".to_string()));
}

#[test]
fn oversubscribed_cpu_bound_workers_are_churn_even_when_cpu_per_request_holds() {
    // 8 prefork workers on 2 cores, CPU per request flat (a quiet host):
    // at c=8 the workers want 7 cores (CPU plus run-queue wait) and each
    // request blocks ~0.6 times (waiting for the next one).
    let mut run = base();
    set(&mut run, "proc.nivcsw", |_, rps| rps * 0.3);
    set(&mut run, "proc.nvcsw", |_, rps| rps * 0.6);
    set(&mut run, "proc.runq_delay_ms", |t, _| {
        if t > 2.0 * PHASE_MS {
            6000.0
        } else {
            200.0
        }
    });
    for w in 0..8 {
        set(
            &mut run,
            &format!("thread.starman:{}:{}.cpu", 100 + w, 100 + w),
            |_, rps| rps * 0.2 / 1000.0 * 100.0 / 8.0,
        );
    }
    let f = analyze(&run);
    let churn = f
        .iter()
        .find(|f| f.id == "scheduler-churn")
        .expect("scheduler-churn for 8 CPU-bound workers wanting 7 cores");
    assert!(
        churn.title.contains("8 busy server threads"),
        "{}",
        churn.title
    );
    assert!(churn.title.contains("want a core"), "{}", churn.title);
    // The same threads blocking on I/O twice per request (a pool behind an
    // acceptor, a backend call): waiting on a crowded host, not churn.
    set(&mut run, "proc.nvcsw", |_, rps| rps * 2.0);
    assert!(!ids(&run).contains(&"scheduler-churn".to_string()));
    // ... even when their CPU per request doubles with the neighbours.
    set(&mut run, "proc.cpu_user", |t, rps| {
        rps * 0.2 / 1000.0 * 100.0 * if t > 2.0 * PHASE_MS { 2.0 } else { 1.0 }
    });
    set(&mut run, "proc.nivcsw", |_, rps| rps * 4.0);
    assert!(!ids(&run).contains(&"scheduler-churn".to_string()));
    // Two workers cannot want more than two cores.
    let mut two = base();
    set(&mut two, "proc.nivcsw", |_, rps| rps * 0.3);
    set(&mut two, "proc.nvcsw", |_, rps| rps * 0.6);
    for w in 0..2 {
        set(
            &mut two,
            &format!("thread.starman:{}:{}.cpu", 100 + w, 100 + w),
            |_, rps| rps * 0.2 / 1000.0 * 100.0 / 2.0,
        );
    }
    set(&mut two, "proc.runq_delay_ms", |_, _| 1200.0);
    assert!(!ids(&two).contains(&"scheduler-churn".to_string()));
}

#[test]
fn scheduler_churn_names_the_threads_that_move_most() {
    let mut run = base();
    set(&mut run, "proc.migrations", |_, rps| rps * 0.5);
    let churn = |run: &RunJson| {
        analyze(run)
            .into_iter()
            .find(|f| f.id == "scheduler-churn")
            .expect("scheduler-churn")
    };
    // Without thread series: the process's numbers only.
    let f = churn(&run);
    assert!(!f.evidence.text.iter().any(|t| t.contains("most")));
    // Prefork workers (processes: pid = tid) and a helper thread.
    set(&mut run, "thread.worker-0:100:100.migrations", |_, rps| {
        rps * 0.3
    });
    set(&mut run, "thread.worker-1:101:101.migrations", |_, rps| {
        rps * 0.15
    });
    set(&mut run, "thread.helper:100:107.migrations", |_, _| 0.0);
    set(&mut run, "thread.worker-1:101:101.nivcsw", |_, rps| {
        rps * 0.2
    });
    let f = churn(&run);
    let mig = f
        .evidence
        .text
        .iter()
        .find(|t| t.starts_with("most migrations"))
        .expect("threads named");
    assert!(
        mig.starts_with("most migrations: worker-0 (pid 100) 750/s, worker-1 (pid 101) 375/s; 2 of 3 threads with series, 90% of the process's"),
        "{mig}"
    );
    assert!(f
        .evidence
        .text
        .iter()
        .any(|t| t.starts_with("most involuntary switches: worker-1 (pid 101) 500/s")));
    assert!(f
        .evidence
        .series
        .contains(&"thread.worker-0:100:100.migrations".to_string()));
    assert!(!f.evidence.series.iter().any(|s| s.contains("helper")));
}

#[test]
fn connection_churn_counts_new_connections_per_request() {
    let mut run = base();
    set(&mut run, "tcp.active_opens", |_, rps| rps);
    set(&mut run, "tcp.passive_opens", |_, rps| rps);
    let f = analyze(&run);
    let c = f
        .iter()
        .find(|f| f.id == "connection-churn")
        .expect("churn");
    assert!(c.title.starts_with("1.00 new TCP connections per request"));
    set(&mut run, "tcp.active_opens", |_, rps| rps * 0.1);
    set(&mut run, "tcp.passive_opens", |_, rps| rps * 0.1);
    assert!(!ids(&run).contains(&"connection-churn".to_string()));
}

fn route(uri: &str, count: u64, avg: f64) -> RouteRow {
    RouteRow {
        method: "GET".into(),
        uri: uri.into(),
        count,
        avg,
        sum: count as f64 * avg,
        ..RouteRow::default()
    }
}

#[test]
fn route_dominating_uses_the_sum_column() {
    let mut run = base();
    run.routes.access_log = vec![route("/search", 100, 80.0), route("/item/:id", 1000, 1.0)];
    let f = analyze(&run);
    let r = f
        .iter()
        .find(|f| f.id == "route-dominating")
        .expect("route");
    assert!(r.title.contains("/search") && r.title.contains("89%"));
    run.routes.access_log = vec![route("/search", 100, 8.0), route("/item/:id", 1000, 1.0)];
    assert!(!ids(&run).contains(&"route-dominating".to_string()));
    // One route alone dominates nothing.
    run.routes.access_log = vec![route("/bid", 100, 8.0)];
    assert!(!ids(&run).contains(&"route-dominating".to_string()));
}

/// One route whose body bytes per response follow `bytes(t)` (ms -> bytes),
/// as the followed access log's `log.*` series show it (a point a second).
fn logged_bytes(run: &mut RunJson, bytes: impl Fn(f64) -> f64) {
    let t: Vec<f64> = (1..=12).map(|s| s as f64 * 1000.0).collect();
    let rps: Vec<f64> = t.iter().map(|t| rps_at(run, *t)).collect();
    let body: Vec<f64> = t.iter().zip(&rps).map(|(t, r)| r * bytes(*t)).collect();
    for (name, v) in [("log.rps", rps.clone()), ("log.body_bytes", body.clone())] {
        run.series.retain(|s| s.name != name);
        run.series.push(Series {
            name: name.into(),
            unit: "/s".into(),
            t_ms: t.clone(),
            v,
        });
    }
    let count: f64 = rps.iter().sum();
    let sum_body: f64 = body.iter().sum();
    let mut row = route("/items", count as u64, 2.0);
    row.sum_body = sum_body;
    row.avg_body = sum_body / count;
    row.min_body = bytes(0.0);
    row.max_body = bytes(12_000.0);
    run.routes.access_log = vec![row];
}

#[test]
fn unbounded_response_fires_when_a_routes_answers_grow() {
    let mut run = base();
    // A list without a limit: 20 kB at the start, 60 kB at the end.
    logged_bytes(&mut run, |t| 20_000.0 + 40_000.0 * t / 12_000.0);
    let f = analyze(&run);
    let u = f
        .iter()
        .find(|f| f.id == "unbounded-response")
        .unwrap_or_else(|| panic!("unbounded-response in {}", render_text(&f)));
    assert_eq!(u.severity, Severity::Warning);
    assert!(u.title.contains("GET /items"), "{}", u.title);
    assert!(u.suggestion.contains("paginate"), "{}", u.suggestion);
    // A bounded page: the same size all run, or growing by a few bytes.
    logged_bytes(&mut run, |_| 20_000.0);
    assert!(!ids(&run).contains(&"unbounded-response".to_string()));
    logged_bytes(&mut run, |t| 200.0 + 400.0 * t / 12_000.0);
    assert!(!ids(&run).contains(&"unbounded-response".to_string()));
    // Very large answers count even when they do not grow.
    logged_bytes(&mut run, |_| 3.0 * 1024.0 * 1024.0);
    assert!(ids(&run).contains(&"unbounded-response".to_string()));
    // Not when another route takes most of the request time.
    logged_bytes(&mut run, |t| 20_000.0 + 40_000.0 * t / 12_000.0);
    run.routes.access_log.push(route("/search", 100, 2000.0));
    assert!(!ids(&run).contains(&"unbounded-response".to_string()));
}

#[test]
fn blocking_wait_fires_when_latency_is_mostly_off_cpu() {
    let mut run = base();
    // 15 ms per request at c=1, 0.2 ms of it on CPU.
    for (i, c) in [1.0, 4.0, 8.0].iter().enumerate() {
        let rps = c * 1000.0 / 15.0;
        set_phase(&mut run, i, rps, 15.0);
    }
    set(&mut run, "proc.cpu_user", |_, rps| rps * 0.02);
    set(&mut run, "proc.cpu_system", |_, _| 0.0);
    let f = analyze(&run);
    let b = f.iter().find(|f| f.id == "blocking-wait").expect("wait");
    assert_eq!(b.evidence.phases, vec![0]);
    // Waiting to run (an overloaded machine) is not waiting on a downstream.
    set(&mut run, "proc.runq_delay_ms", |_, rps| rps * 14.0);
    assert!(!ids(&run).contains(&"blocking-wait".to_string()));
}

#[test]
fn blocking_wait_discounts_queueing_behind_other_requests() {
    // One heavy phase: 32 requests in flight (4000 req/s x 8 ms) on a
    // CPU-bound 2-core server. Most of each request's 8 ms is its turn
    // behind the others, not a downstream wait.
    let mut run = base();
    for i in 0..3 {
        set_phase(&mut run, i, 4000.0, 8.0);
    }
    set(&mut run, "proc.cpu_user", |_, _| 190.0);
    set(&mut run, "proc.cpu_system", |_, _| 0.0);
    assert!(!ids(&run).contains(&"blocking-wait".to_string()));
    // The same 32 in flight with the CPU idle: 107 req/s, 300 ms each.
    for i in 0..3 {
        set_phase(&mut run, i, 107.0, 300.0);
    }
    set(&mut run, "proc.cpu_user", |_, _| 5.0);
    assert!(ids(&run).contains(&"blocking-wait".to_string()));
}

#[test]
fn blocking_wait_judges_the_wait_per_request_not_only_its_share() {
    // 3 ms per request at c=1 of which 0.2 ms CPU: 93% waiting, but 2.8 ms
    // of it, what a kept-alive call to another service costs.
    let mut run = base();
    for (i, c) in [1.0, 4.0, 8.0].iter().enumerate() {
        let rps = c * 1000.0 / 3.0;
        set_phase(&mut run, i, rps, 3.0);
    }
    set(&mut run, "proc.cpu_user", |_, rps| rps * 0.02);
    set(&mut run, "proc.cpu_system", |_, _| 0.0);
    let f = analyze(&run);
    let b = f
        .iter()
        .find(|f| f.rule == "blocking-wait")
        .expect("a description of the wait");
    assert_eq!(b.severity, Severity::Info, "{}", b.title);
    assert!(b.title.contains("2.8 ms"), "{}", b.title);
    // 45 ms per request with the same CPU: a worker held by the wait.
    for (i, c) in [1.0, 4.0, 8.0].iter().enumerate() {
        let rps = c * 1000.0 / 45.0;
        set_phase(&mut run, i, rps, 45.0);
    }
    set(&mut run, "proc.cpu_user", |_, rps| rps * 0.02);
    let f = analyze(&run);
    let b = f.iter().find(|f| f.rule == "blocking-wait").expect("wait");
    assert_eq!(b.severity, Severity::High, "{}", b.title);
    assert!(b.title.contains("(44 ms each)"), "{}", b.title);
}

#[test]
fn generator_saturation_is_reported_first() {
    let mut run = base();
    healthy_profile(&mut run);
    run.results["generator"] = json!([{"thread": 0, "cpu_pct": 97.0}]);
    set(&mut run, "tcp.active_opens", |_, rps| rps);
    set(&mut run, "tcp.passive_opens", |_, rps| rps);
    let f = analyze(&run);
    assert_eq!(f[0].id, "generator-saturated");
    run.results["generator"] = json!([{"thread": 0, "cpu_pct": 60.0}]);
    assert!(!ids(&run).contains(&"generator-saturated".to_string()));
}

#[test]
fn page_cache_thrash_needs_faults_reads_up_and_writes_down() {
    let mut run = base();
    let wave = |t: f64| ((t / 500.0).sin() + 1.0) * 50.0;
    set(&mut run, "vm.pgmajfault", move |t, rps| {
        rps * 0.004 * wave(t)
    });
    set(&mut run, "vm.pgpgin", move |t, _| wave(t) * 40.0);
    set(&mut run, "disk.vda.r_iops", move |t, _| wave(t) * 10.0);
    set(&mut run, "disk.vda.w_iops", move |t, _| {
        1000.0 - wave(t) * 9.0
    });
    assert!(ids(&run).contains(&"page-cache-thrash".to_string()));
    // The server's own faults as many as the host's: still thrash; the
    // host's faults from another process (the server has none): not the
    // server's.
    set(&mut run, "proc.majflt", move |t, rps| rps * 0.004 * wave(t));
    assert!(ids(&run).contains(&"page-cache-thrash".to_string()));
    set(&mut run, "proc.majflt", |_, _| 0.0);
    assert!(!ids(&run).contains(&"page-cache-thrash".to_string()));
    set(&mut run, "proc.majflt", move |t, rps| rps * 0.004 * wave(t));
    // Writes rising with reads (a busy disk, not eviction): no thrash.
    set(&mut run, "disk.vda.w_iops", move |t, _| wave(t) * 9.0);
    assert!(!ids(&run).contains(&"page-cache-thrash".to_string()));
}

#[test]
fn findings_round_trip_through_json_and_render() {
    let mut run = base();
    stalled(&mut run, "flate2::deflate");
    let f = analyze(&run);
    let back = from_json(&to_json(&f));
    assert_eq!(back, f);
    let text = render_text(&f);
    assert!(text.contains("[high]") && text.contains("try: "), "{text}");
    let v = &to_json(&f)[0];
    for key in [
        "id",
        "title",
        "severity",
        "score",
        "impact",
        "suggestion",
        "evidence",
    ] {
        assert!(v.get(key).is_some(), "{key}");
    }
    assert!(v["evidence"]["range_ms"].is_array());
    assert_eq!(
        render_text(&[]),
        "Findings: none (no rule saw a problem in this run)\n"
    );
}

#[test]
fn empty_and_odd_runs_do_not_panic() {
    let mut run = base();
    run.phases.clear();
    run.series.clear();
    run.results = serde_json::Value::Null;
    run.run.machine.cores = 0;
    assert!(ids(&run).is_empty());
    let mut run = base();
    profile(&mut run, &[], 10, |_, _| Some((vec!["x"], 7)));
    if let Some(p) = run.profile.as_mut() {
        p.parent[0] = 99;
    }
    let _ = analyze(&run);
}

// ---- issue 14: rules that hold on real services ----

/// A run exported from a corpus service (examples/, trimmed: see
/// fixtures/README.md).
fn fixture(name: &str) -> RunJson {
    let path = format!("{}/tests/fixtures/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let bytes = std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_slice(&bytes).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// Problem ids, ranked.
fn ranked(run: &RunJson) -> Vec<String> {
    ids(run)
}

#[test]
fn real_java_log_rollover_is_a_stall_named_by_libz() {
    // logback's RollingFileAppender gzips bids.log under the appender lock:
    // perf sees `[libz.so...]` frames without callers.
    let run = fixture("java-bidder-naive-rollover");
    let f = analyze(&run);
    let top: Vec<&str> = f
        .iter()
        .filter(|f| f.is_problem())
        .take(3)
        .map(|f| f.id.as_str())
        .collect();
    assert!(top.contains(&"stalls"), "{top:?}");
    let s = f.iter().find(|f| f.id == "stalls").unwrap();
    assert!(
        s.evidence.frames.iter().any(|fr| {
            let n = fr.name.to_lowercase();
            n.contains("libz") || n.contains("deflat") || n.contains("gzip")
        }),
        "{:?}",
        s.evidence.frames
    );
    // The tuned bidder (async appender, rollover without compression on
    // the request path): no problem at all.
    assert_eq!(
        ranked(&fixture("java-bidder-tuned-none")),
        Vec::<String>::new()
    );
}

#[test]
fn real_node_di_container_reading_files_is_config_load() {
    // A container building a new ArticleRenderer per lookup, whose
    // constructor reads the template and the site config (loadConfig,
    // inlined by V8 into the constructor once optimised).
    let run = fixture("node-bff-naive-di");
    let top: Vec<String> = ranked(&run).into_iter().take(3).collect();
    assert!(top.contains(&"hot-code.config-load".to_string()), "{top:?}");
}

#[test]
fn real_python_config_parse_per_request_is_config_load() {
    let run = fixture("flask-shop-naive-config");
    let f = analyze(&run);
    let top: Vec<&str> = f
        .iter()
        .filter(|f| f.is_problem())
        .take(3)
        .map(|f| f.id.as_str())
        .collect();
    assert!(top.contains(&"hot-code.config-load"), "{top:?}");
    // py-spy's frames carry the line sampled; one function is one frame.
    let c = f.iter().find(|f| f.id == "hot-code.config-load").unwrap();
    let names: Vec<&str> = c.evidence.frames.iter().map(|f| f.name.as_str()).collect();
    let mut dedup = names.clone();
    dedup.sort();
    dedup.dedup();
    assert_eq!(dedup.len(), names.len(), "{names:?}");
}

#[test]
fn real_perl_oversubscribed_prefork_is_scheduler_churn_and_tuned_is_clean() {
    // 8 Starman workers on 2 cores against one pinned worker per core.
    let run = fixture("perl-dsp-naive-oversubscribed");
    assert!(
        ranked(&run).contains(&"scheduler-churn".to_string()),
        "{:?}",
        ranked(&run)
    );
    assert_eq!(
        ranked(&fixture("perl-dsp-tuned-none")),
        Vec::<String>::new()
    );
}

#[test]
fn stall_work_is_matched_by_module_and_case_insensitively() {
    for frame in [
        "[libz.so.1.2.13]",
        "void java.util.zip.GZIPOutputStream.finish()",
        "java.util.zip.Deflater.deflateBytesBytes",
        "ch.qos.logback.core.rolling.RollingFileAppender.rollover",
    ] {
        let mut run = base();
        stalled(&mut run, frame);
        assert!(ids(&run).contains(&"stalls".to_string()), "{frame}");
    }
}

#[test]
fn stalls_count_requests_completing_after_the_window_and_empty_seconds() {
    // The slowest request completed the second after the stall: it waited
    // through it all the same.
    let mut run = base();
    stalled(&mut run, "accesslog::copy_compressed");
    run.results["timeline"][6]["max_ms"] = json!(3.0);
    run.results["timeline"][7]["max_ms"] = json!(1200.0);
    assert!(ids(&run).contains(&"stalls".to_string()));
    // A second with no completed response (the row is there with 0
    // requests, or missing): everything in flight waited through it.
    let mut run = base();
    stalled(&mut run, "accesslog::copy_compressed");
    run.results["timeline"][6] = json!({"t_s": 6, "requests": 0, "max_ms": 0.0});
    assert!(ids(&run).contains(&"stalls".to_string()));
    let mut run = base();
    stalled(&mut run, "accesslog::copy_compressed");
    run.results["timeline"].as_array_mut().unwrap().remove(6);
    assert!(ids(&run).contains(&"stalls".to_string()));
    // A request that ended before the stall began does not count.
    let mut run = base();
    stalled(&mut run, "accesslog::copy_compressed");
    run.results["timeline"][6]["max_ms"] = json!(3.0);
    run.results["timeline"][4]["max_ms"] = json!(900.0);
    assert!(!ids(&run).contains(&"stalls".to_string()));
}

#[test]
fn json_parse_under_threshold_is_named_when_causes_are_stacked() {
    // JSON.parse of cached text at 9% beside regex compilation (30%) and
    // formatter construction (20%): 9% of all samples, 18% of the rest.
    let stacked = |json_every: usize| {
        let mut run = base();
        profile(&mut run, &["worker-0", "worker-1"], 4000, move |i, _| {
            let leaf = match i % 100 {
                k if k < 30 => "java.util.regex.Pattern.compile",
                k if k < 50 => "JS:*Intl.DateTimeFormat",
                k if k < 50 + json_every => "JSON.parse",
                _ => "score",
            };
            Some((vec!["main", "handle", leaf], (i % 2) as u32))
        });
        run
    };
    let run = stacked(9);
    let ids = ids(&run);
    assert!(ids.contains(&"hot-code.json-parse".to_string()), "{ids:?}");
    assert!(ids.contains(&"hot-code.regex-compile".to_string()));
    // At 4% it is not named even then: under half its threshold.
    assert!(!super_ids(&stacked(4)).contains(&"hot-code.json-parse".to_string()));
    // Alone at 9%: under the threshold.
    let mut run = base();
    profile(&mut run, &["worker-0", "worker-1"], 4000, |i, _| {
        let leaf = if i % 100 < 9 { "JSON.parse" } else { "score" };
        Some((vec!["main", "handle", leaf], (i % 2) as u32))
    });
    assert!(!super_ids(&run).contains(&"hot-code.json-parse".to_string()));
}

fn super_ids(run: &RunJson) -> Vec<String> {
    ids(run)
}

#[test]
fn config_load_matches_js_naming_and_constructors_reading_files() {
    for stack in [
        vec![
            "main",
            "JS:^handle /srv/app.js:3:1",
            "JS:*loadConfig /srv/app.js:83:22",
        ],
        vec![
            "main",
            "JS:^resolve /srv/di.js:107:12",
            "Builtins_JSConstructStubGeneric",
            "JS:*ArticleRenderer /srv/app.js:87:16",
            "JS:*readFileSync node:fs:441:22",
        ],
    ] {
        let mut run = base();
        let s = stack.clone();
        profile(&mut run, &["worker-0", "worker-1"], 2000, move |i, _| {
            Some((
                if i % 10 == 0 {
                    s.clone()
                } else {
                    vec!["main", "handle", "score"]
                },
                (i % 2) as u32,
            ))
        });
        let f = analyze(&run);
        let c = f
            .iter()
            .find(|f| f.id == "hot-code.config-load")
            .unwrap_or_else(|| panic!("{stack:?}"));
        assert!(!c.evidence.frames[0].name.contains("ConstructStub"));
    }
    // A constructor that reads no file is not configuration loading.
    let mut run = base();
    profile(&mut run, &["worker-0", "worker-1"], 2000, |i, _| {
        Some((
            if i % 10 == 0 {
                vec![
                    "main",
                    "Builtins_JSConstructStubGeneric",
                    "JS:*Point /a.js:1:1",
                ]
            } else {
                vec!["main", "handle", "score"]
            },
            (i % 2) as u32,
        ))
    });
    assert!(!ids(&run).contains(&"hot-code.config-load".to_string()));
}

#[test]
fn python_line_numbers_do_not_split_a_function() {
    let mut run = base();
    profile(&mut run, &["worker-0", "worker-1"], 2000, |i, _| {
        let leaf = ["load_settings (app.py:40)", "load_settings (app.py:41)"][i % 2];
        Some((
            if i % 5 == 0 {
                vec!["main", "handle (app.py:10)", leaf]
            } else {
                vec!["main", "handle (app.py:12)", "score (app.py:3)"]
            },
            (i % 2) as u32,
        ))
    });
    let f = analyze(&run);
    let c = f
        .iter()
        .find(|f| f.id == "hot-code.config-load")
        .expect("config-load");
    assert_eq!(c.evidence.frames.len(), 1, "{:?}", c.evidence.frames);
    assert_eq!(c.evidence.frames[0].name, "load_settings (app.py)");
    assert!((c.evidence.frames[0].share - 0.2).abs() < 0.01);
}

#[test]
fn connection_churn_names_the_side_from_the_servers_own_sockets() {
    let churn = |run: &RunJson| {
        analyze(run)
            .into_iter()
            .find(|f| f.id == "connection-churn")
    };
    // The server closes every connection and that costs a large share of a
    // cheap request (0.2 ms CPU): keep-alive on the server.
    let mut run = base();
    set(&mut run, "proc.tcp_accepted", |_, rps| rps);
    set(&mut run, "proc.tcp_connected", |_, _| 0.0);
    set(&mut run, "proc.tcp_closed_by_server", |_, rps| rps);
    set(&mut run, "proc.tcp_closed_by_peer", |_, _| 0.0);
    let f = churn(&run).expect("server closes");
    assert!(f.title.starts_with("The server closes"), "{}", f.title);
    assert!(f.suggestion.contains("gunicorn"));
    // The same at 2 ms of CPU per request (a gunicorn sync worker telling
    // keisoku `Connection: close`): an accept per request is ~1.5% of it,
    // no finding.
    let mut slow = run.clone();
    set(&mut slow, "proc.cpu_user", |_, rps| {
        rps * 2.0 / 1000.0 * 100.0
    });
    let requests: f64 = [1000.0, 3000.0, 3500.0].iter().sum::<f64>() * 4.0;
    slow.results["requests"] = json!(requests);
    slow.results["connects"] = json!(requests);
    slow.results["server_closed"] = json!(requests);
    assert!(churn(&slow).is_none());
    // Accepted beyond keisoku's own connects: the server calling its own
    // listening port per request (an in-process backend).
    let mut inproc = slow.clone();
    inproc.results["connects"] = json!(8.0);
    inproc.results["server_closed"] = json!(0.0);
    let f = churn(&inproc).expect("in-process backend");
    assert!(f.title.contains("backends"), "{}", f.title);
    // Backend calls without keep-alive: named as such whatever the cost.
    let mut run = base();
    set(&mut run, "proc.tcp_accepted", |_, _| 0.0);
    set(&mut run, "proc.tcp_connected", |_, rps| rps);
    set(&mut run, "proc.tcp_closed_by_server", |_, _| 0.0);
    set(&mut run, "proc.tcp_closed_by_peer", |_, _| 0.0);
    set(&mut run, "proc.cpu_user", |_, rps| {
        rps * 2.0 / 1000.0 * 100.0
    });
    let f = churn(&run).expect("backend");
    assert!(f.title.contains("backends"), "{}", f.title);
    // The server's own sockets win over busy host-wide counters (another
    // tenant's connections).
    let mut run = base();
    set(&mut run, "tcp.active_opens", |_, rps| rps * 3.0);
    set(&mut run, "tcp.passive_opens", |_, rps| rps * 3.0);
    for n in [
        "proc.tcp_accepted",
        "proc.tcp_connected",
        "proc.tcp_closed_by_server",
        "proc.tcp_closed_by_peer",
    ] {
        set(&mut run, n, |_, rps| rps * 0.01);
    }
    assert!(churn(&run).is_none());
}

#[test]
fn connection_churn_reads_the_clients_counts_when_the_run_has_them() {
    // contract 4: keisoku's client counts its connects and the closes by the server.
    let mut run = base();
    let requests: f64 = [1000.0, 3000.0, 3500.0].iter().sum::<f64>() * 4.0;
    run.results["requests"] = json!(requests);
    run.results["connects"] = json!(requests);
    run.results["server_closed"] = json!(requests);
    let f = analyze(&run)
        .into_iter()
        .find(|f| f.id == "connection-churn")
        .expect("churn");
    assert!(f.title.starts_with("The server closes"), "{}", f.title);
}

#[test]
fn scheduler_churn_subtracts_what_neighbours_cause() {
    // 12 involuntary switches per request, but the host has 6 runnable
    // threads on 2 cores while the server wants under one: neighbours.
    let mut run = base();
    set(&mut run, "proc.nivcsw", |_, rps| rps * 12.0);
    set(&mut run, "sched.procs_running", |_, _| 6.0);
    assert!(!ids(&run).contains(&"scheduler-churn".to_string()));
    // The server's own 8 busy threads on 2 cores: its own doing.
    let mut run = base();
    set(&mut run, "proc.nivcsw", |_, rps| rps * 12.0);
    set(&mut run, "sched.procs_running", |_, _| 8.0);
    set(&mut run, "proc.runq_delay_ms", |_, _| 6000.0);
    assert!(ids(&run).contains(&"scheduler-churn".to_string()));
}

#[test]
fn migrations_are_judged_by_cost() {
    // 0.3 migrations per request at 2 ms of CPU per request: ~22 µs of
    // 2000, ~1%: nothing to buy back by pinning.
    let mut run = base();
    set(&mut run, "proc.migrations", |_, rps| rps * 0.3);
    set(&mut run, "proc.cpu_user", |_, rps| {
        rps * 2.0 / 1000.0 * 100.0
    });
    assert!(!ids(&run).contains(&"scheduler-churn".to_string()));
}

#[test]
fn a_route_busy_because_it_serves_most_requests_is_info() {
    let mut run = base();
    run.routes.access_log = vec![route("/bid", 9000, 2.0), route("/health", 1000, 0.5)];
    let f = analyze(&run);
    let r = f
        .iter()
        .find(|f| f.id == "route-dominating")
        .expect("route");
    assert_eq!(r.severity, Severity::Info);
}

#[test]
fn a_reverse_proxy_waiting_for_its_upstream_is_info() {
    let mut run = base();
    for (i, c) in [1.0, 4.0, 8.0].iter().enumerate() {
        let rps = c * 1000.0 / 15.0;
        set_phase(&mut run, i, rps, 15.0);
    }
    set(&mut run, "proc.cpu_user", |_, rps| rps * 0.02);
    set(&mut run, "proc.cpu_system", |_, _| 0.0);
    set(&mut run, "thread.nginx:10:10.cpu", |_, _| 1.0);
    set(&mut run, "thread.nginx:11:11.cpu", |_, _| 1.0);
    let f = analyze(&run);
    let b = f.iter().find(|f| f.rule == "blocking-wait").expect("wait");
    assert_eq!(b.severity, Severity::Info);
    assert!(
        b.title.starts_with("nginx waits for its upstream"),
        "{}",
        b.title
    );
    // An application server with the same numbers: a blocking call.
    set(&mut run, "thread.nginx:11:11.cpu", |_, _| 0.0);
    set(&mut run, "thread.gunicorn:12:12.cpu", |_, _| 1.0);
    assert!(ids(&run).contains(&"blocking-wait".to_string()));
}

#[test]
fn a_config_load_owns_the_file_read_and_json_parse_below_it() {
    // loadConfig reads and parses a file in 30% of the samples; elsewhere
    // JSON.parse of cached text runs in 15%: config-load is 30%, json-parse
    // only its own 15%, and the read is not a second cause.
    let mut run = base();
    profile(&mut run, &["worker-0", "worker-1"], 2000, |i, _| {
        let stack = match i % 20 {
            0..=5 => vec!["main", "handle", "JS:*loadConfig", "Builtin_JsonParse"],
            6 => vec!["main", "handle", "JS:*loadConfig", "JS:*readFileSync"],
            7..=9 => vec!["main", "handle", "JS:*cachedArticles", "Builtin_JsonParse"],
            _ => vec!["main", "handle", "score"],
        };
        Some((stack, (i % 2) as u32))
    });
    let f = analyze(&run);
    let share = |id: &str| {
        f.iter()
            .find(|f| f.id == id)
            .map(|f| f.evidence.frames.iter().map(|fr| fr.share).sum::<f64>())
    };
    assert!((share("hot-code.config-load").expect("config-load") - 0.35).abs() < 0.01);
    assert!((share("hot-code.json-parse").expect("json-parse") - 0.15).abs() < 0.01);
    assert_eq!(share("hot-code.file-open"), None, "{:?}", ids(&run));
}

#[test]
fn the_hottest_function_is_named_past_the_interpreter() {
    let mut run = base();
    profile(&mut run, &["worker-0", "worker-1"], 2000, |i, _| {
        let leaf = match i % 10 {
            0..=3 => "Interpreter",
            4..=6 => "java.util.List bidder.Table.selectAll",
            _ => "score",
        };
        Some((vec!["main", "handle", leaf], (i % 2) as u32))
    });
    let f = analyze(&run);
    let top = f
        .iter()
        .find(|f| f.id == "hot-code.top-self")
        .expect("top-self");
    assert!(
        top.title.contains("bidder.Table.selectAll (30%"),
        "{}",
        top.title
    );
    // The evidence keeps every frame, the interpreter first.
    assert_eq!(top.evidence.frames[0].name, "Interpreter");
}

#[test]
fn real_java_stacked_causes_are_each_named() {
    // Four causes at once on a crowded host: the rollover's gzip (libz) took
    // more self time than the unbounded scan, and regex compilation held
    // 3.5% of the request path. The stall's samples are the stall's: left
    // out of the request work, the scan is the hottest function and regex
    // compilation (never needed per request) counts from 3%.
    let run = fixture("java-bidder-naive-stacked");
    let f = analyze(&run);
    let has = |id: &str| f.iter().any(|x| x.id == id);
    assert!(has("stalls"), "{:?}", ranked(&run));
    assert!(has("hot-code.regex-compile"), "{:?}", ranked(&run));
    assert!(has("hot-code.formatter"), "{:?}", ranked(&run));
    let top = f
        .iter()
        .find(|x| x.id == "hot-code.top-self")
        .expect("top-self");
    assert!(
        top.title.contains("selectBySegmentUnbounded"),
        "{}",
        top.title
    );
}

#[test]
fn a_stalls_samples_are_not_request_work() {
    // Between stalls the workers spread their work over 40 functions; in
    // the stall [6.0, 6.4) s one worker compresses a log, more samples than
    // any one function gets: counted as request work, the compression
    // would be the hottest function of the run.
    let leaves: Vec<&'static str> = (0..40)
        .map(|k| &*Box::leak(format!("bid_step_{k}").into_boxed_str()))
        .collect();
    let mut run = base();
    profile(&mut run, &["worker-0", "worker-1"], 2400, move |i, t| {
        if (6000.0..6400.0).contains(&t) {
            Some((vec!["main", "handle", "log", "[libz.so.1.2.13]"], 0))
        } else {
            Some((vec!["main", "handle", leaves[i % 40]], (i % 2) as u32))
        }
    });
    run.results["timeline"][6]["max_ms"] = json!(380.0);
    let f = analyze(&run);
    assert!(f.iter().any(|x| x.id == "stalls"), "{:?}", ranked(&run));
    let top = f
        .iter()
        .find(|x| x.id == "hot-code.top-self")
        .expect("top-self");
    assert!(top.title.contains("bid_step_"), "{}", top.title);
    assert!(
        top.evidence
            .text
            .iter()
            .any(|t| t.contains("samples in the stalls left out")),
        "{:?}",
        top.evidence.text
    );
    assert!(
        top.evidence
            .frames
            .iter()
            .all(|fr| !fr.name.contains("libz")),
        "{:?}",
        top.evidence.frames
    );
}

#[test]
fn a_stall_names_the_code_that_called_the_compression() {
    // perf shows most of the gzip as `[libz.so...]` without callers; the
    // stacks that do walk up show logback's appender calling
    // GZIPOutputStream through interpreted rollover methods.
    let run = fixture("java-bidder-naive-stacked");
    let f = analyze(&run);
    let s = f.iter().find(|x| x.id == "stalls").expect("stalls");
    assert!(
        s.summary.contains("GZIPOutputStream") && s.summary.contains("ch.qos.logback"),
        "{}",
        s.summary
    );
    // A synthetic copy called from the server's own `log`: both named.
    let mut run = base();
    stalled(&mut run, "accesslog::copy_compressed");
    let f = analyze(&run);
    let s = f.iter().find(|x| x.id == "stalls").expect("stalls");
    assert!(
        s.summary
            .contains("accesslog::copy_compressed running, called from log"),
        "{}",
        s.summary
    );
}

#[test]
fn a_mostly_idle_servers_rollover_is_the_copys_bins_not_the_quiet_around_it() {
    // The bidder waiting 40 ms a request on its audit call: ~6 samples per
    // 100 ms at c=2, so the bins beside the 500-ms gzip that held requests
    // 489 ms are as thin as the gzip's are full of it. Merged with them the
    // window was 1 s long, the slowest request under half of it, and the
    // stall went unreported (bench/corpus.sh, 2026-11-25 00:26 UTC).
    let run = fixture("java-bidder-naive-stacked-audit");
    let f = analyze(&run);
    let s = f.iter().find(|x| x.id == "stalls").expect("stalls");
    let [a, b] = s.evidence.range_ms.expect("range");
    assert!(a <= 8300.0 && b >= 8500.0, "{a}-{b}");
    // (unbounded-response reads the access log's series, trimmed from the fixture.)
    for id in [
        "blocking-wait",
        "hot-code.regex-compile",
        "hot-code.formatter",
    ] {
        assert!(f.iter().any(|x| x.id == id), "{id}: {:?}", ranked(&run));
    }
}

#[test]
fn a_starved_servers_long_stall_is_found() {
    // Beside a busy neighbour on a crowded host the bidder answered ~7 bids
    // a second, got a sample or two per 100 ms, and its rollover's gzip ran
    // from 8 s to the end of the run: 100 ms bins were too thin to judge,
    // and the seconds without a response are one wait, not many of 1 s.
    let run = fixture("java-bidder-naive-rollover-starved");
    let f = analyze(&run);
    let s = f.iter().find(|x| x.id == "stalls").expect("stalls");
    assert!(s.title.contains("ms"), "{}", s.title);
    let [a, b] = s.evidence.range_ms.expect("range");
    assert!(b - a >= 1000.0, "{a}-{b}");
}

/// Frames root first as (function, file), a thread, and a number of ticks.
type PyTicks<'a> = (&'a [(&'a str, &'a str)], u32, usize);

/// A py-spy-like profile of two sync workers (threads 0 and 1): `stacks`
/// as (frames root first as (function, file), thread, ticks), each
/// thread's at 10-ms ticks from 10 ms, in order.
fn python_profile(stacks: &[PyTicks]) -> Profile {
    let mut p = Profile::new("py-spy", Unit::Samples);
    for tid in [100, 101] {
        p.thread(Thread {
            pid: 7,
            tid,
            comm: format!("Thread {tid}"),
        });
    }
    let (mut time, mut thread) = (Vec::new(), Vec::new());
    let mut ticks_of = [0u64; 2];
    for (frames, th, ticks) in stacks {
        let mut parent = NO_PARENT;
        for (name, file) in frames.iter() {
            let f = p.frame_parts(name, file, FrameKind::Interpreted);
            parent = p.child(parent, f);
        }
        for _ in 0..*ticks {
            p.samples.node.push(parent);
            thread.push(*th);
            ticks_of[*th as usize] += 1;
            time.push(ticks_of[*th as usize] * 10_000_000);
        }
    }
    p.samples.time_ns = Some(time);
    p.samples.thread = Some(thread);
    p
}

const SYNC_PY: &str = "/venv/lib/python3.11/site-packages/gunicorn/workers/sync.py";
/// A sync worker waiting for its next connection.
const IDLE_PY: &[(&str, &str)] = &[
    ("SyncWorker.run (sync.py:1)", SYNC_PY),
    ("SyncWorker.wait (sync.py:2)", SYNC_PY),
];
/// A request blocked in a call to a backend.
const CALL_PY: &[(&str, &str)] = &[
    ("SyncWorker.run (sync.py:1)", SYNC_PY),
    ("fetch_stock (app.py:10)", "/srv/shop/app.py"),
    (
        "SocketIO.readinto (socket.py:4)",
        "/usr/lib/python3.11/socket.py",
    ),
];
/// A request parsing settings on the CPU.
const PARSE_PY: &[(&str, &str)] = &[
    ("SyncWorker.run (sync.py:1)", SYNC_PY),
    ("load_settings (app.py:20)", "/srv/shop/app.py"),
    (
        "RawConfigParser._read (configparser.py:5)",
        "/usr/lib/python3.11/configparser.py",
    ),
];

#[test]
fn a_measured_wait_shorter_than_the_wait_for_a_core_describes_the_host() {
    // c=1 at 10 req/s, 100 ms each, 0.2 ms of CPU: the wall-clock profile
    // has the worker half of the first phase in a call to a backend, 50 ms
    // per request, which alone is a worker held by a wait.
    let mut run = base();
    for i in 0..3 {
        set_phase(&mut run, i, 10.0, 100.0);
    }
    set(&mut run, "proc.cpu_user", |_, rps| rps * 0.02);
    set(&mut run, "proc.cpu_system", |_, _| 0.0);
    run.wall_profile = Some(python_profile(&[(IDLE_PY, 0, 200), (CALL_PY, 0, 200)]));
    run.profile = Some(python_profile(&[(IDLE_PY, 0, 4)]));
    let wait = |run: &RunJson| {
        analyze(run)
            .into_iter()
            .find(|f| f.rule == "blocking-wait")
            .expect("a blocking-wait finding")
    };
    let b = wait(&run);
    assert_eq!(b.severity, Severity::High, "{}", b.title);
    assert_eq!(b.id, "blocking-wait", "{}", b.title);
    assert!(
        b.evidence
            .frames
            .iter()
            .any(|f| f.name.contains("fetch_stock")),
        "the wait is named: {:?}",
        b.evidence.frames
    );
    // Waiting 30 ms for a core, less than the call: still the call.
    set(&mut run, "proc.runq_delay_ms", |_, rps| rps * 30.0);
    assert_eq!(wait(&run).id, "blocking-wait");
    // The same wait on a host where each request also waits 80 ms for a
    // core: a downstream on this host answers late by its own run-queue
    // waits, so it is said as information about the host.
    set(&mut run, "proc.runq_delay_ms", |_, rps| rps * 80.0);
    let b = wait(&run);
    assert_eq!(b.id, "blocking-wait.crowded", "{}", b.title);
    assert_eq!(b.severity, Severity::Info, "{}", b.title);
    assert!(b.title.contains("50.0 ms"), "{}", b.title);
    assert!(
        b.title.contains("80 ms they wait for a core"),
        "{}",
        b.title
    );
    assert!(!ids(&run).iter().any(|id| id.starts_with("blocking-wait")));
}

#[test]
fn one_worker_busy_with_requests_is_the_limit_though_half_its_time_is_a_wait() {
    // One sync worker: each request parses settings on the CPU (~55% of a
    // core) and waits in a backend call. Offered 4 and 8 at a time it is
    // inside a request all the time; its CPU alone never reaches 70% of a
    // core, so the CPU profile does not say "one worker".
    let mut run = base();
    for (i, c) in [1.0, 4.0, 8.0].iter().enumerate() {
        set_phase(&mut run, i, 10.0, 100.0 * c);
    }
    set(&mut run, "proc.cpu_user", |_, _| 55.0);
    set(&mut run, "proc.cpu_system", |_, _| 0.0);
    set(&mut run, "cpu.all.idle", |_, _| 65.0);
    // Wall clock: idle for the first second, then requests back to back;
    // the second worker (thread 1) waits for connections throughout.
    let busy: Vec<PyTicks> = std::iter::once((IDLE_PY, 0, 100))
        .chain((0..55).flat_map(|_| [(CALL_PY, 0, 9), (PARSE_PY, 0, 11)]))
        .chain(std::iter::once((IDLE_PY, 1, 1200)))
        .collect();
    run.wall_profile = Some(python_profile(&busy));
    // On the CPU: the parsing ticks of the same requests.
    let cpu: Vec<PyTicks> = std::iter::once((&[][..], 0, 100))
        .chain((0..55).flat_map(|_| [(&[][..], 0, 9), (PARSE_PY, 0, 11)]))
        .collect();
    run.profile = Some(python_profile(&cpu));
    let f = analyze(&run);
    let lone = f
        .iter()
        .find(|f| f.id == "single-core.lone-worker")
        .unwrap_or_else(|| panic!("the lone worker in {}", render_text(&f)));
    assert_eq!(lone.severity, Severity::High);
    assert!(
        lone.title.contains("One worker (Thread 100)"),
        "{}",
        lone.title
    );
    assert!(lone.title.contains("100%"), "{}", lone.title);
    assert_eq!(lone.evidence.phases, vec![2]);
    assert!(
        lone.evidence.text[1].contains("45% blocked"),
        "{:?}",
        lone.evidence.text
    );
    // A second worker inside requests half the time: two workers serve.
    let mut two = busy.clone();
    two.pop();
    two.extend([(IDLE_PY, 1, 600), (CALL_PY, 1, 600)]);
    run.wall_profile = Some(python_profile(&two));
    assert!(!ids(&run).iter().any(|id| id.starts_with("single-core")));
    // The lone worker offered one request at a time: all it is asked for.
    run.wall_profile = Some(python_profile(&busy));
    for i in 0..3 {
        run.phases[i].connections = Some(1);
    }
    assert!(!ids(&run).iter().any(|id| id.starts_with("single-core")));
    // Without a wall-clock profile there is nothing to tell it by.
    for (i, c) in [1u64, 4, 8].iter().enumerate() {
        run.phases[i].connections = Some(*c);
    }
    run.wall_profile = None;
    assert!(!ids(&run).iter().any(|id| id.starts_with("single-core")));
}

#[test]
fn migrations_of_threads_waking_from_a_wait_are_not_churn() {
    // java-bidder with a 40-ms synchronous audit call per bid: 43 ms per
    // request of which 2.8 ms CPU, and 2.1 migrations per request as the
    // pool's threads wake from the call on whichever core is idle.
    let mut run = base();
    for (i, rps) in [45.0, 117.0, 185.0].iter().enumerate() {
        set_phase(&mut run, i, *rps, 43.0);
    }
    set(&mut run, "proc.cpu_user", |_, rps| {
        rps * 2.8 / 1000.0 * 100.0
    });
    set(&mut run, "proc.cpu_system", |_, _| 0.0);
    set(&mut run, "proc.migrations", |_, rps| rps * 2.1);
    set(&mut run, "proc.nivcsw", |_, rps| rps * 0.5);
    assert!(!ids(&run).contains(&"scheduler-churn".to_string()));
    // The same migrations in 4-ms requests that are mostly CPU: churn.
    for i in 0..3 {
        run.results["phases"][i]["latency_ms"]["mean"] = json!(4.0);
    }
    assert!(ids(&run).contains(&"scheduler-churn".to_string()));
}
