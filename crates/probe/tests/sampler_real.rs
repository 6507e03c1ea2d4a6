//! The sampler against this machine's real /proc.

mod common;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{busy, by_name, kill_and_cpu, named_shell, spawn_copied};
use keisoku_probe::{pidof, process_tree, Collector, ProbeError, Sampler, SamplerConfig};

fn config(pid: Option<u32>) -> SamplerConfig {
    let mut c = SamplerConfig::new(Instant::now());
    c.pid = pid;
    c
}

/// Waits (up to 30 s, for a loaded machine) until `parent`'s tree has `n`
/// processes, its own children all named `comm`: a shell forks its children
/// when the scheduler lets it, and a child has the shell's name until it
/// has exec'd, not within a fixed time.
fn wait_tree(parent: u32, n: usize, comm: &str) -> Vec<keisoku_probe::ProcessInfo> {
    let start = Instant::now();
    loop {
        let tree = process_tree(Path::new("/proc"), parent).unwrap();
        let named = tree
            .iter()
            .filter(|p| p.ppid == parent)
            .all(|p| p.comm == comm);
        if (tree.len() >= n && named) || start.elapsed() > Duration::from_secs(30) {
            return tree;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn host_series_are_present_and_sane() {
    let cfg = config(None);
    let mut col = Collector::new(&cfg).unwrap();
    let mut out = Vec::new();
    col.sample(cfg.origin.elapsed(), &mut out);
    // Create some loopback traffic and context switches between the samples.
    let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let _c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
    std::thread::sleep(Duration::from_millis(400));
    let t_first = out.len();
    col.sample(cfg.origin.elapsed(), &mut out);
    let s = by_name(&out[t_first..]);
    for name in [
        "cpu.all.user",
        "cpu.all.idle",
        "cpu.0.user",
        "cpu.0.steal",
        "sched.ctxt",
        "sched.forks",
        "sched.procs_running",
        "mem.free",
        "mem.cached",
        "mem.active_file",
        "mem.anon",
        "vm.pgfault",
        "vm.pgmajfault",
        "net.lo.rx_bytes",
        "tcp.active_opens",
        "tcp.passive_opens",
        "tcp.retrans",
        "tcp.listen_overflows",
        "tcp.estab",
        "tcp.time_wait",
    ] {
        assert!(s.contains_key(name), "missing {name}; have {:?}", s.keys());
    }
    let v = |n: &str| s[n][0].1;
    let cpu_sum: f64 = [
        "user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal",
    ]
    .iter()
    .map(|c| v(&format!("cpu.all.{c}")))
    .sum();
    assert!((cpu_sum - 100.0).abs() < 0.01, "cpu.all sums to {cpu_sum}");
    let cores = std::thread::available_parallelism().unwrap().get();
    assert!(s.contains_key(&format!("cpu.{}.user", cores - 1)));
    assert!(v("mem.free") > 0.0 && v("mem.free") <= v("mem.total"));
    assert!(v("sched.ctxt") > 0.0, "a live machine switches context");
    assert!(
        v("tcp.active_opens") >= 1.0 / 0.4 * 0.5,
        "our connect counts"
    );
    assert!(v("tcp.estab") >= 2.0, "both ends of our connection");
    // The state table is read at the first sample (then every 10 s).
    let first = by_name(&out[..t_first]);
    assert!(first["tcp.state.listen"][0].1 >= 1.0);
    assert!(
        col.notes().iter().all(|n| !n.contains("cpu.")),
        "{:?}",
        col.notes()
    );
}

#[test]
fn busy_child_shows_its_cpu_and_a_core() {
    let dir = tempfile::tempdir().unwrap();
    let sh = named_shell(dir.path(), "kprobe-busy");
    let mut child = busy(&sh);
    let cfg = config(Some(child.id()));
    let mut col = Collector::new(&cfg).unwrap();
    let mut out = Vec::new();
    col.sample(cfg.origin.elapsed(), &mut out);
    // Sample until the loop has had a fair amount of CPU: on a loaded
    // machine it may get a small share of a core.
    let mut prev = cfg.origin.elapsed();
    let mut so_far = 0.0;
    for _ in 0..32 {
        std::thread::sleep(Duration::from_millis(250));
        let from = out.len();
        let now = cfg.origin.elapsed();
        col.sample(now, &mut out);
        let pct: f64 = out[from..]
            .iter()
            .filter(|p| &*p.name == "proc.cpu_user" || &*p.name == "proc.cpu_system")
            .map(|p| p.value)
            .sum();
        so_far += pct / 100.0 * (now - prev).as_secs_f64();
        prev = now;
        if so_far > 0.5 {
            break;
        }
    }
    let truth = kill_and_cpu(&mut child).as_secs_f64();
    let s = by_name(&out);
    let integrate = |name: &str| -> f64 {
        let Some(points) = s.get(name) else {
            return 0.0;
        };
        let mut prev_t = 0u64;
        let mut total = 0.0;
        // Each rate point covers the interval since the previous sample.
        let times: Vec<u64> = s["proc.threads"].iter().map(|p| p.0).collect();
        for &(t, v) in points {
            prev_t = times
                .iter()
                .copied()
                .filter(|&x| x < t)
                .max()
                .unwrap_or(prev_t);
            total += v / 100.0 * (t - prev_t) as f64 / 1e9;
        }
        total
    };
    let sampled = integrate("proc.cpu_user") + integrate("proc.cpu_system");
    assert!(
        truth > 0.3,
        "the busy loop got only {truth:.3} s of CPU in 8 s"
    );
    assert!(
        (sampled - truth).abs() <= 0.05 + 0.15 * truth,
        "sampled {sampled:.3} s of CPU, the kernel accounted {truth:.3} s"
    );
    let cores: f64 = s
        .keys()
        .filter(|k| k.starts_with("proc.core."))
        .map(|k| integrate(k))
        .sum();
    assert!(
        (cores - sampled).abs() <= 0.05 + 0.2 * sampled,
        "per-core total {cores:.3} s vs process total {sampled:.3} s"
    );
    let busiest = s
        .iter()
        .filter(|(k, _)| k.starts_with("proc.core."))
        .map(|(_, v)| v.iter().map(|p| p.1).fold(0.0, f64::max))
        .fold(0.0, f64::max);
    assert!(busiest > 5.0, "no core shows the busy loop: {busiest}");
    for &(_, v) in &s["proc.threads"] {
        assert_eq!(v, 1.0);
    }
    assert!(s.contains_key("proc.nivcsw") && s.contains_key("proc.migrations"));
    assert!(s.contains_key("proc.runq_delay_ms") && s.contains_key("proc.fds"));
}

#[test]
fn sleeping_process_shows_no_cpu() {
    let mut child = Command::new("sleep").arg("30").spawn().unwrap();
    let cfg = config(Some(child.id()));
    let mut col = Collector::new(&cfg).unwrap();
    let mut out = Vec::new();
    for _ in 0..4 {
        col.sample(cfg.origin.elapsed(), &mut out);
        std::thread::sleep(Duration::from_millis(200));
    }
    let _ = child.kill();
    let _ = child.wait();
    let s = by_name(&out);
    let n = s["proc.cpu_user"].len();
    assert!(n >= 3, "{n} cpu points");
    for name in ["proc.cpu_user", "proc.cpu_system", "proc.core.0"] {
        for &(_, v) in &s[name] {
            assert!(v <= 2.0, "{name} = {v} for a sleeping process");
        }
    }
    assert!(s["proc.rss"][0].1 > 0.0);
    assert!(s["proc.fds"][0].1 >= 3.0);
    assert_eq!(s["proc.processes"][0].1, 1.0);
}

#[test]
fn children_and_their_threads_are_counted() {
    let mut parent = Command::new("sh")
        .arg("-c")
        .arg("sleep 30 & sleep 30 & wait")
        .spawn()
        .unwrap();
    let tree = wait_tree(parent.id(), 3, "sleep");
    assert_eq!(tree.len(), 3, "{tree:?}");
    assert_eq!(tree[0].pid, parent.id());
    assert!(tree[1..]
        .iter()
        .all(|p| p.ppid == parent.id() && p.comm == "sleep"));

    let cfg = config(Some(parent.id()));
    let mut col = Collector::new(&cfg).unwrap();
    let mut out = Vec::new();
    col.sample(cfg.origin.elapsed(), &mut out);
    let s = by_name(&out);
    assert_eq!(s["proc.processes"][0].1, 3.0);
    assert_eq!(s["proc.threads"][0].1, 3.0);
    assert_eq!(col.target_pids().len(), 3);
    // Killing a child shrinks the tree at the next rescan.
    unsafe { libc::kill(tree[1].pid as i32, libc::SIGKILL) };
    std::thread::sleep(Duration::from_millis(1100));
    let mut out = Vec::new();
    col.sample(cfg.origin.elapsed(), &mut out);
    unsafe { libc::kill(tree[2].pid as i32, libc::SIGKILL) };
    let _ = parent.kill();
    let _ = parent.wait();
    let s = by_name(&out);
    assert_eq!(s["proc.processes"][0].1, 2.0);
}

#[test]
fn target_exit_is_a_note_not_an_error() {
    let mut child = Command::new("sleep").arg("0.2").spawn().unwrap();
    let cfg = config(Some(child.id()));
    let mut col = Collector::new(&cfg).unwrap();
    let mut out = Vec::new();
    col.sample(cfg.origin.elapsed(), &mut out);
    let _ = child.wait();
    col.sample(cfg.origin.elapsed(), &mut out);
    assert_eq!(col.target_alive(), Some(false));
    assert!(
        col.notes().iter().any(|n| n.contains("exited")),
        "{:?}",
        col.notes()
    );
    // Host series go on.
    let before = out.len();
    col.sample(cfg.origin.elapsed(), &mut out);
    assert!(out[before..].iter().any(|p| &*p.name == "mem.free"));
    assert!(out[before..].iter().all(|p| !p.name.starts_with("proc.")));
}

#[test]
fn missing_pid_is_an_error() {
    let cfg = config(Some(u32::MAX - 7));
    assert!(matches!(
        Collector::new(&cfg),
        Err(ProbeError::NoSuchProcess { .. })
    ));
}

#[test]
fn sampler_thread_ticks_on_the_run_clock_and_stops() {
    let origin = Instant::now() - Duration::from_secs(5);
    let mut cfg = SamplerConfig::new(origin);
    cfg.interval = Duration::from_millis(100);
    cfg.pid = Some(std::process::id());
    let (sampler, rx) = Sampler::start_channel(cfg).unwrap();
    // Seven samples, however long a busy machine makes them take.
    let mut batches = Vec::new();
    let waited = Instant::now();
    while batches.len() < 7 {
        match rx.recv_timeout(Duration::from_secs(30)) {
            Ok(b) => batches.push(b),
            Err(e) => panic!("{} samples, then {e}", batches.len()),
        }
    }
    let waited = waited.elapsed();
    let report = sampler.stop();
    batches.extend(rx.try_iter());
    assert_eq!(batches.len() as u64, report.samples);
    let times: Vec<u64> = batches.iter().map(|b| b[0].t_ns).collect();
    assert!(
        times[0] >= 5_000_000_000,
        "t is counted from the given origin"
    );
    assert!(times.windows(2).all(|w| w[1] > w[0]));
    for b in &batches {
        assert!(b.iter().all(|p| p.t_ns == b[0].t_ns));
    }
    // Never two samples closer than half the interval (a stalled sampler
    // skips ticks instead of bursting), and about one per interval: the
    // median gap is near 100 ms (a slower grid would be far off; a starved
    // thread delays some ticks, not most).
    let mut gaps: Vec<f64> = times
        .windows(2)
        .take(times.len().saturating_sub(2))
        .map(|w| (w[1] - w[0]) as f64 / 1e6)
        .collect();
    assert!(gaps.iter().all(|&g| g >= 50.0), "gaps {gaps:?} ms");
    gaps.sort_by(f64::total_cmp);
    let median = gaps[gaps.len() / 2];
    assert!(
        (80.0..=300.0).contains(&median),
        "median gap {median} ms over {waited:?}"
    );
    assert!(report.cpu_time > Duration::ZERO);
    assert!(batches
        .iter()
        .flatten()
        .any(|p| &*p.name == "proc.cpu_user"));
}

#[test]
fn intervals_below_100ms_are_refused() {
    let mut cfg = SamplerConfig::new(Instant::now());
    cfg.interval = Duration::from_millis(50);
    assert!(matches!(
        Sampler::start(cfg, |_| {}),
        Err(ProbeError::IntervalTooShort(_))
    ));
}

#[test]
fn pidof_picks_the_parent_of_same_named_processes() {
    let dir = tempfile::tempdir().unwrap();
    let sh = named_shell(dir.path(), "kprobe-pidof");
    // The subshell is a forked child with the same command name.
    let mut parent = spawn_copied(
        Command::new(&sh)
            .arg("-c")
            .arg("(while :; do sleep 1; done) & wait")
            .stdout(Stdio::null()),
    );
    let tree = wait_tree(parent.id(), 2, "kprobe-pidof");
    let found = pidof(Path::new("/proc"), "kprobe-pidof");
    for p in tree.iter().rev() {
        unsafe { libc::kill(p.pid as i32, libc::SIGKILL) };
    }
    let _ = parent.wait();
    assert!(
        tree.iter().filter(|p| p.comm == "kprobe-pidof").count() >= 2,
        "{tree:?}"
    );
    assert_eq!(found.unwrap(), parent.id());
    assert!(matches!(
        pidof(Path::new("/proc"), "kprobe-no-such-name"),
        Err(ProbeError::NoProcessNamed(_))
    ));
}

#[test]
fn a_child_started_later_joins_the_tree() {
    use std::io::Write;
    let mut parent = Command::new("sh")
        .arg("-c")
        .arg("read go; sleep 30 & wait")
        .stdin(Stdio::piped())
        .spawn()
        .unwrap();
    let cfg = config(Some(parent.id()));
    let mut col = Collector::new(&cfg).unwrap();
    let mut out = Vec::new();
    col.sample(cfg.origin.elapsed(), &mut out);
    assert_eq!(by_name(&out)["proc.processes"][0].1, 1.0);
    std::thread::sleep(Duration::from_millis(1100));
    col.sample(cfg.origin.elapsed(), &mut out);
    let asked = Instant::now();
    parent.stdin.as_mut().unwrap().write_all(b"go\n").unwrap();
    wait_tree(parent.id(), 2, "sleep");
    // The sampler re-lists /proc at most once a second (after a fork).
    std::thread::sleep(Duration::from_millis(1100).saturating_sub(asked.elapsed()));
    let mut last = Vec::new();
    col.sample(cfg.origin.elapsed(), &mut last);
    let pids = col.target_pids().to_vec();
    for p in pids.iter().rev() {
        unsafe { libc::kill(*p as i32, libc::SIGKILL) };
    }
    let _ = parent.wait();
    assert_eq!(by_name(&last)["proc.processes"][0].1, 2.0, "pids {pids:?}");
}

/// A process opening connections that live a few microseconds (a server
/// calling its backend without keep-alive, on loopback): they are its own
/// `proc.tcp_connected`, although none is ever alive when /proc and
/// sock_diag are read.
#[test]
fn connections_shorter_than_a_sample_are_counted() {
    use std::sync::atomic::{AtomicU64, Ordering};
    use std::sync::Arc;
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let accepted = Arc::new(AtomicU64::new(0));
    let counter = Arc::clone(&accepted);
    std::thread::spawn(move || {
        for s in listener.incoming() {
            drop(s);
            counter.fetch_add(1, Ordering::Relaxed);
        }
    });
    let mut child = Command::new("python3")
        .arg("-c")
        .arg(format!(
            "import socket\nwhile True:\n s = socket.create_connection(('127.0.0.1', {port}))\n s.close()"
        ))
        .spawn()
        .unwrap();
    let wait_for = |n: u64| {
        let start = Instant::now();
        while accepted.load(Ordering::Relaxed) < n && start.elapsed() < Duration::from_secs(60) {
            std::thread::sleep(Duration::from_millis(5));
        }
        accepted.load(Ordering::Relaxed)
    };
    // The interpreter has started and connects.
    wait_for(10);
    let cfg = config(Some(child.id()));
    let mut col = Collector::new(&cfg).unwrap();
    let mut out = Vec::new();
    col.sample(cfg.origin.elapsed(), &mut out);
    let from = accepted.load(Ordering::Relaxed);
    let mut last = Vec::new();
    let mut total = 0.0;
    // Two more samples: the first one drains the connects that taught the
    // backend, the second counts every connection to it.
    for _ in 0..2 {
        let t0 = cfg.origin.elapsed();
        let before = accepted.load(Ordering::Relaxed);
        wait_for(before + 300);
        last.clear();
        col.sample(cfg.origin.elapsed(), &mut last);
        let dt = (cfg.origin.elapsed() - t0).as_secs_f64();
        total = by_name(&last)
            .get("proc.tcp_connected")
            .map_or(0.0, |v| v[0].1 * dt);
    }
    let to = accepted.load(Ordering::Relaxed);
    let _ = child.kill();
    let _ = child.wait();
    assert!(to - from >= 600, "only {} connections", to - from);
    assert!(
        total >= 200.0,
        "{total:.0} connections counted of ~300+ in the last sample; notes {:?}",
        col.notes()
    );
}
