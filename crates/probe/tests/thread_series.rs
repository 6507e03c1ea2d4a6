//! Per-thread series (`thread.<comm>:<pid>:<tid>.<metric>`) against a fake
//! /proc tree: exact rates from known counter deltas, only busy threads get
//! series, at most `THREADS_MAX_LIVE` at a time, and exited threads stop.

mod common;

use std::fs;
use std::path::Path;
use std::time::{Duration, Instant};

use common::{by_name, proc_stat, write};
use keisoku_probe::{
    Collector, SamplerConfig, THREADS_MAX_EVER, THREADS_MAX_LIVE, THREAD_IDLE_YIELD,
};

fn sched(comm: &str, pid: u32, migrations: u64, vol: u64, invol: u64) -> String {
    format!(
        "{comm} ({pid}, #threads: 1)\n-------------------------------------------\n\
         se.exec_start                                :      12345.678\n\
         se.nr_migrations                             :  {migrations:>10}\n\
         nr_switches                                  :  {:>10}\n\
         nr_voluntary_switches                        :  {vol:>10}\n\
         nr_involuntary_switches                      :  {invol:>10}\n",
        vol + invol
    )
}

/// Counters of one thread at one moment.
#[derive(Clone, Copy, Default)]
struct T {
    run_ns: u64,
    wait_ns: u64,
    migrations: u64,
    vol: u64,
    invol: u64,
    cpu: u32,
}

fn thread(root: &Path, pid: u32, tid: u32, comm: &str, t: T) {
    let base = format!("{pid}/task/{tid}");
    write(
        root,
        &format!("{base}/stat"),
        &proc_stat(tid, comm, 1, t.run_ns / 10_000_000, 0, t.cpu),
    );
    // Every switch or migration means it got a CPU: the slice count moves.
    write(
        root,
        &format!("{base}/schedstat"),
        &format!(
            "{} {} {}\n",
            t.run_ns,
            t.wait_ns,
            t.vol + t.invol + t.migrations
        ),
    );
    write(
        root,
        &format!("{base}/sched"),
        &sched(comm, tid, t.migrations, t.vol, t.invol),
    );
}

fn process(root: &Path, pid: u32, ppid: u32, comm: &str) {
    write(
        root,
        &format!("{pid}/stat"),
        &proc_stat(pid, comm, ppid, 0, 0, 0),
    );
}

fn collector(root: &Path, pid: u32) -> Collector {
    let mut cfg = SamplerConfig::new(Instant::now());
    cfg.proc_root = root.to_path_buf();
    cfg.host = false;
    cfg.pid = Some(pid);
    Collector::new(&cfg).unwrap()
}

#[test]
fn busy_threads_of_the_tree_get_series_with_exact_rates() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let (pid, child) = (500u32, 600u32);
    process(root, pid, 1, "server");
    process(root, child, pid, "server");
    let zero = T {
        run_ns: 1_000_000_000,
        migrations: 100,
        vol: 1000,
        invol: 10,
        ..T::default()
    };
    thread(root, pid, pid, "server", zero);
    thread(root, pid, 501, "demo-prefork-0", zero);
    thread(root, pid, 502, "idle helper", zero);
    thread(root, child, child, "nginx: worker", zero);
    let mut col = collector(root, pid);
    let mut out = Vec::new();
    col.sample(Duration::from_secs(1), &mut out);
    assert!(
        !out.iter().any(|p| p.name.starts_with("thread.")),
        "no rates on the first sample"
    );

    // Two seconds later: the prefork worker ran 1.2 s on core 1, moved 30
    // times, switched 400 + 60 times and waited 300 ms; the child's thread
    // ran 50 ms; the main thread 10 ms (0.5%: not busy); the helper moved
    // 30 times (15/s: busy by migrations alone).
    thread(
        root,
        pid,
        501,
        "demo-prefork-0",
        T {
            run_ns: 2_200_000_000,
            wait_ns: 300_000_000,
            migrations: 130,
            vol: 1400,
            invol: 70,
            cpu: 1,
        },
    );
    thread(
        root,
        child,
        child,
        "nginx: worker",
        T {
            run_ns: 1_050_000_000,
            ..zero
        },
    );
    thread(
        root,
        pid,
        pid,
        "server",
        T {
            run_ns: 1_010_000_000,
            ..zero
        },
    );
    thread(
        root,
        pid,
        502,
        "idle helper",
        T {
            migrations: 130,
            ..zero
        },
    );
    let first = out.len();
    col.sample(Duration::from_secs(3), &mut out);
    let s = by_name(&out[first..]);
    let v = |n: &str| -> f64 {
        s.get(n)
            .unwrap_or_else(|| panic!("no {n}; have {:?}", s.keys()))[0]
            .1
    };
    let w = "thread.demo-prefork-0:500:501";
    assert!((v(&format!("{w}.cpu")) - 60.0).abs() < 1e-9);
    assert!((v(&format!("{w}.migrations")) - 15.0).abs() < 1e-9);
    assert!((v(&format!("{w}.nvcsw")) - 200.0).abs() < 1e-9);
    assert!((v(&format!("{w}.nivcsw")) - 30.0).abs() < 1e-9);
    assert!((v(&format!("{w}.runq_delay_ms")) - 150.0).abs() < 1e-9);
    assert_eq!(v(&format!("{w}.core")), 1.0);
    // A child process's thread; comm sanitised to [A-Za-z0-9_-].
    assert!((v("thread.nginx__worker:600:600.cpu") - 2.5).abs() < 1e-9);
    assert!((v("thread.idle_helper:500:502.migrations") - 15.0).abs() < 1e-9);
    assert!(
        !s.keys().any(|k| k.starts_with("thread.server:")),
        "a thread under 1% CPU without migrations has no series: {:?}",
        s.keys()
    );
    // The per-thread numbers add up to the process's.
    assert!((v("proc.migrations") - 30.0).abs() < 1e-9);
    assert!((v("proc.runq_delay_ms") - 150.0).abs() < 1e-9);
    for k in s.keys().filter(|k| k.starts_with("thread.")) {
        let unit = out[first..]
            .iter()
            .find(|p| &*p.name == k.as_str())
            .unwrap()
            .unit;
        let expected = match k.rsplit('.').next().unwrap() {
            "cpu" => "%",
            "runq_delay_ms" => "ms/s",
            "core" => "core",
            _ => "/s",
        };
        assert_eq!(unit, expected, "{k}");
    }

    // An idle tick: threads with series keep them (a continuous series);
    // then the worker exits and its series stop.
    let mid = out.len();
    col.sample(Duration::from_secs(4), &mut out);
    let s = by_name(&out[mid..]);
    assert_eq!(s[&format!("{w}.cpu")][0].1, 0.0);
    fs::remove_dir_all(root.join(format!("{pid}/task/501"))).unwrap();
    let end = out.len();
    col.sample(Duration::from_secs(5), &mut out);
    let s = by_name(&out[end..]);
    assert!(!s.keys().any(|k| k.starts_with(w)), "{:?}", s.keys());
    assert!(s.contains_key("thread.nginx__worker:600:600.cpu"));
}

#[test]
fn at_most_the_cap_busiest_threads_and_idle_ones_give_way() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let pid = 700u32;
    let n = THREADS_MAX_LIVE as u32 + 8;
    process(root, pid, 1, "jvm");
    let at = |tid: u32, run_ns: u64| {
        thread(
            root,
            pid,
            tid,
            &format!("worker-{tid}"),
            T {
                run_ns,
                ..T::default()
            },
        )
    };
    for tid in pid..pid + n {
        at(tid, 0);
    }
    let mut col = collector(root, pid);
    let mut out = Vec::new();
    col.sample(Duration::from_secs(1), &mut out);
    // Every thread busy, thread k at (k + 1)% of a core.
    let mut run = vec![0u64; n as usize];
    for (k, tid) in (pid..pid + n).enumerate() {
        run[k] += (k as u64 + 1) * 10_000_000;
        at(tid, run[k]);
    }
    let first = out.len();
    col.sample(Duration::from_secs(2), &mut out);
    let s = by_name(&out[first..]);
    let with: Vec<u32> = s
        .keys()
        .filter(|k| k.ends_with(".cpu"))
        .map(|k| k.split(':').nth(2).unwrap().split('.').next().unwrap())
        .map(|t| t.parse().unwrap())
        .collect();
    assert_eq!(with.len(), THREADS_MAX_LIVE);
    // The busiest: the last THREADS_MAX_LIVE.
    assert!(with.iter().all(|&t| t >= pid + 8), "{with:?}");
    assert!(col.notes().iter().any(|n| n.contains("8 left out")));

    // Ten idle seconds later the left-out threads get busy: they take the
    // places of the idle ones.
    col.sample(Duration::from_secs(12), &mut out);
    for (k, tid) in (pid..pid + 8).enumerate() {
        run[k] += 500_000_000;
        at(tid, run[k]);
    }
    let later = out.len();
    col.sample(Duration::from_secs(13), &mut out);
    let s = by_name(&out[later..]);
    let cpu: Vec<&String> = s.keys().filter(|k| k.ends_with(".cpu")).collect();
    assert_eq!(cpu.len(), THREADS_MAX_LIVE, "{cpu:?}");
    for tid in pid..pid + 8 {
        let name = format!("thread.worker-{tid}:{pid}:{tid}.cpu");
        assert!((s[&name][0].1 - 50.0).abs() < 1e-9, "{name}");
    }
    // One note, not one per tick.
    assert_eq!(
        col.notes()
            .iter()
            .filter(|n| n.starts_with("thread."))
            .count(),
        1
    );
}

#[test]
fn a_thread_that_did_not_run_is_not_read_again() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let pid = 800u32;
    process(root, pid, 1, "jvm");
    let t0 = T {
        run_ns: 1_000_000_000,
        migrations: 5,
        vol: 50,
        invol: 5,
        ..T::default()
    };
    thread(root, pid, pid, "main", t0);
    thread(root, pid, 801, "worker", t0);
    let mut col = collector(root, pid);
    let mut out = Vec::new();
    col.sample(Duration::from_secs(1), &mut out);
    // The worker runs 0.5 s; the main thread's schedstat stays as it was,
    // while its stat and sched (which the sampler must not read again)
    // claim otherwise.
    thread(
        root,
        pid,
        801,
        "worker",
        T {
            run_ns: 1_500_000_000,
            migrations: 9,
            ..t0
        },
    );
    let base = format!("{pid}/task/{pid}");
    write(
        root,
        &format!("{base}/stat"),
        &proc_stat(pid, "main", 1, 500, 0, 1),
    );
    write(
        root,
        &format!("{base}/sched"),
        &sched("main", pid, 99, 999, 99),
    );
    let first = out.len();
    col.sample(Duration::from_secs(2), &mut out);
    let s = by_name(&out[first..]);
    // Only the worker's counters moved.
    assert_eq!(s["proc.migrations"][0].1, 4.0);
    assert_eq!(s["proc.core.1"][0].1, 0.0);
    assert!((s["thread.worker:800:801.cpu"][0].1 - 50.0).abs() < 1e-9);
    assert!(!s.keys().any(|k| k.starts_with("thread.main:")));
    // Once it runs, everything is read again.
    let mut ss = t0;
    ss.run_ns += 20_000_000;
    write(
        root,
        &format!("{base}/schedstat"),
        &format!("{} 0 60\n", ss.run_ns),
    );
    let next = out.len();
    col.sample(Duration::from_secs(3), &mut out);
    let s = by_name(&out[next..]);
    assert_eq!(s["proc.migrations"][0].1, 94.0);
    assert!((s["thread.main:800:800.cpu"][0].1 - 2.0).abs() < 1e-9);
    assert_eq!(s["thread.main:800:800.core"][0].1, 1.0);
}

#[test]
fn a_thread_past_the_run_cap_takes_no_idle_threads_place() {
    // A thread-per-connection server: waves of THREADS_MAX_LIVE threads,
    // each busy once and then gone, until THREADS_MAX_EVER threads had
    // series; the last wave then idles.
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    let pid = 900u32;
    let live = THREADS_MAX_LIVE as u32;
    let waves = (THREADS_MAX_EVER / THREADS_MAX_LIVE) as u32;
    process(root, pid, 1, "server");
    thread(root, pid, pid, "server", T::default());
    let mut col = collector(root, pid);
    let mut out = Vec::new();
    let mut now = 1;
    col.sample(Duration::from_secs(now), &mut out);
    let first_tid = |wave: u32| pid + 1 + wave * live;
    for wave in 0..waves {
        if wave > 0 {
            for tid in first_tid(wave - 1)..first_tid(wave) {
                fs::remove_dir_all(root.join(format!("{pid}/task/{tid}"))).unwrap();
            }
        }
        let tids = first_tid(wave)..first_tid(wave + 1);
        for tid in tids.clone() {
            thread(root, pid, tid, "conn", T::default());
        }
        now += 1;
        col.sample(Duration::from_secs(now), &mut out);
        for tid in tids {
            let busy = T {
                run_ns: 500_000_000,
                ..T::default()
            };
            thread(root, pid, tid, "conn", busy);
        }
        now += 1;
        col.sample(Duration::from_secs(now), &mut out);
    }
    // The last wave idles past THREAD_IDLE_YIELD; then one more thread,
    // never seen before, gets busy.
    let last = first_tid(waves - 1)..first_tid(waves);
    now += THREAD_IDLE_YIELD.as_secs() + 1;
    col.sample(Duration::from_secs(now), &mut out);
    let late = first_tid(waves);
    thread(root, pid, late, "conn", T::default());
    now += 1;
    col.sample(Duration::from_secs(now), &mut out);
    thread(
        root,
        pid,
        late,
        "conn",
        T {
            run_ns: 500_000_000,
            ..T::default()
        },
    );
    let at = out.len();
    now += 1;
    col.sample(Duration::from_secs(now), &mut out);
    let s = by_name(&out[at..]);
    assert!(
        !s.contains_key(&format!("thread.conn:{pid}:{late}.cpu")),
        "past the run's cap"
    );
    assert!(col
        .notes()
        .iter()
        .any(|n| n.contains("threads busy later have none")));
    // It could not have series, so no idle thread gave up its place for it.
    for tid in last {
        let name = format!("thread.conn:{pid}:{tid}.cpu");
        assert_eq!(s.get(&name).map(|p| p[0].1), Some(0.0), "{name}");
    }
}
