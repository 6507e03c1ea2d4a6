//! The sampler against a fake /proc tree: exact rates from known counter
//! deltas, and one note (not an abort) per missing source.

mod common;

use std::fs;
use std::time::{Duration, Instant};

use common::{by_name, proc_stat, write};
use keisoku_probe::{Collector, SamplerConfig};

fn stat(user0: u64, idle0: u64, ctxt: u64) -> String {
    format!(
        "cpu  {u} 0 {s} {i} 0 0 0 0 0 0\n\
         cpu0 {user0} 0 10 {idle0} 0 0 0 0 0 0\n\
         cpu1 50 0 10 100 0 0 0 0 0 0\n\
         intr 1 2 3\nctxt {ctxt}\nbtime 1\nprocesses 700\nprocs_running 3\nprocs_blocked 1\n",
        u = user0 + 50,
        s = 20,
        i = idle0 + 100
    )
}

/// The fake server's stat line (its only thread's too).
fn thread_stat(pid: u32, utime: u64, stime: u64, cpu: u32) -> String {
    proc_stat(pid, "fake server", 1, utime, stime, cpu)
}

#[test]
fn rates_from_known_deltas_and_notes_for_missing_sources() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().join("proc");
    let sys = dir.path().join("sys");
    write(&root, "stat", &stat(100, 100, 1000));
    write(
        &root,
        "meminfo",
        "MemTotal: 1000 kB\nMemFree: 500 kB\nMemAvailable: 600 kB\nCached: 100 kB\n\
         Active(file): 10 kB\nInactive(file): 20 kB\nWriteback: 0 kB\nAnonPages: 30 kB\n",
    );
    write(
        &root,
        "net/dev",
        "Inter-|   Receive |  Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop fifo colls carrier compressed\n\
         \x20 lo: 1000 10 0 0 0 0 0 0 1000 10 0 0 0 0 0 0\n",
    );
    write(
        &root,
        "diskstats",
        "   8 0 sda 10 0 80 5 20 0 160 15 0 12 20\n   8 1 sda1 10 0 80 5 20 0 160 15 0 12 20\n",
    );
    fs::create_dir_all(sys.join("block/sda")).unwrap();
    let pid = 4242u32;
    write(&root, &format!("{pid}/stat"), &thread_stat(pid, 100, 50, 0));
    write(
        &root,
        &format!("{pid}/task/{pid}/stat"),
        &thread_stat(pid, 100, 50, 0),
    );
    write(
        &root,
        &format!("{pid}/task/{pid}/schedstat"),
        "1000000000 5000000 10\n",
    );

    let mut cfg = SamplerConfig::new(Instant::now());
    cfg.proc_root = root.clone();
    cfg.sys_root = sys;
    cfg.pid = Some(pid);
    let mut col = Collector::new(&cfg).unwrap();
    let mut out = Vec::new();
    col.sample(Duration::from_secs(10), &mut out);

    // One second later: cpu0 used 30 user ticks of 100; 500 context switches;
    // the disk did 10 reads (4 KiB) in 10 ms of I/O; lo got 2000 bytes;
    // the process used 40 user + 10 system ticks, 0.5 s on core 1 by
    // schedstat, waited 20 ms in the run queue.
    write(&root, "stat", &stat(130, 170, 1500));
    write(
        &root,
        "net/dev",
        "Inter-|   Receive |  Transmit\n face |bytes packets errs drop fifo frame compressed multicast|bytes packets errs drop fifo colls carrier compressed\n\
         \x20 lo: 3000 20 0 1 0 0 0 0 1500 15 0 2 0 0 0 0\n",
    );
    write(
        &root,
        "diskstats",
        "   8 0 sda 20 0 88 15 20 0 160 15 0 112 20\n   8 1 sda1 20 0 88 15 20 0 160 15 0 112 20\n",
    );
    write(&root, &format!("{pid}/stat"), &thread_stat(pid, 140, 60, 1));
    write(
        &root,
        &format!("{pid}/task/{pid}/stat"),
        &thread_stat(pid, 140, 60, 1),
    );
    write(
        &root,
        &format!("{pid}/task/{pid}/schedstat"),
        "1500000000 25000000 20\n",
    );
    let first = out.len();
    col.sample(Duration::from_secs(11), &mut out);
    let s = by_name(&out[first..]);
    let v = |n: &str| -> f64 {
        s.get(n)
            .unwrap_or_else(|| panic!("no {n}; have {:?}", s.keys()))[0]
            .1
    };
    assert_eq!(s["cpu.0.user"][0].0, 11_000_000_000);
    assert!((v("cpu.0.user") - 30.0).abs() < 1e-9);
    assert!((v("cpu.0.idle") - 70.0).abs() < 1e-9);
    // cpu1's counters did not move: no split to report, so no point.
    assert!(!s.contains_key("cpu.1.idle"));
    assert!((v("cpu.all.user") - 30.0).abs() < 1e-9);
    assert!((v("sched.ctxt") - 500.0).abs() < 1e-9);
    assert_eq!(v("sched.procs_blocked"), 1.0);
    assert_eq!(v("mem.free"), 500.0 * 1024.0);
    assert!((v("net.lo.rx_bytes") - 2000.0).abs() < 1e-9);
    assert!((v("net.lo.tx_packets") - 5.0).abs() < 1e-9);
    assert!((v("net.lo.drops") - 3.0).abs() < 1e-9);
    assert!((v("disk.sda.r_iops") - 10.0).abs() < 1e-9);
    assert!((v("disk.sda.r_bytes") - 8.0 * 512.0).abs() < 1e-9);
    assert!((v("disk.sda.await_ms") - 1.0).abs() < 1e-9);
    assert!((v("disk.sda.util") - 10.0).abs() < 1e-9);
    assert!(
        !s.contains_key("disk.sda1.r_iops"),
        "partitions are not disks"
    );
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    assert!((v("proc.cpu_user") - 40.0 / hz * 100.0).abs() < 1e-9);
    assert!((v("proc.cpu_system") - 10.0 / hz * 100.0).abs() < 1e-9);
    assert!((v("proc.core.1") - 50.0).abs() < 1e-9);
    assert_eq!(v("proc.core.0"), 0.0);
    assert!((v("proc.runq_delay_ms") - 20.0).abs() < 1e-9);
    assert_eq!(v("proc.rss"), 10.0 * 4096.0);

    // Each missing source or column is said once, and nothing aborted.
    let notes = col.notes().join("\n");
    for what in [
        "vmstat",
        "pressure",
        "mem.dirty",
        "net/snmp",
        "proc.migrations",
        "proc.read_bytes",
    ] {
        assert_eq!(
            col.notes()
                .iter()
                .filter(|n| n.contains(what))
                .count()
                .min(1),
            1,
            "no note about {what} in:\n{notes}"
        );
    }
    let again = col.notes().len();
    col.sample(Duration::from_secs(12), &mut out);
    assert_eq!(
        col.notes().len(),
        again,
        "notes repeat:\n{}",
        col.notes().join("\n")
    );
    assert!(!out.iter().any(|p| p.name.starts_with("vm.")));
}

#[test]
fn garbage_files_yield_no_points_and_no_panic() {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path();
    write(
        root,
        "stat",
        "cpu x y z\ncpu0\nctxt\nctxt -5\nprocesses 99999999999999999999999\n\0\0\0",
    );
    write(root, "meminfo", "MemFree 12\n:::\nMemFree: kB\n");
    write(root, "vmstat", "pgfault\npgfault abc\n");
    write(root, "diskstats", "8 0\n8 0 sda 1 2 3\n");
    write(root, "net/dev", "lo: 1 2\n: 1 2 3 4 5 6 7 8 9 10 11 12\n");
    write(root, "net/snmp", "Tcp: A B\nTcp: 1\nTcp:\n");
    write(root, "pressure/cpu", "some total=\nfull avg10=1 total=-3\n");
    write(root, "9/stat", "9 (x");
    let mut cfg = SamplerConfig::new(Instant::now());
    cfg.proc_root = root.to_path_buf();
    cfg.pid = Some(9);
    let mut col = Collector::new(&cfg).unwrap();
    let mut out = Vec::new();
    col.sample(Duration::from_secs(1), &mut out);
    col.sample(Duration::from_secs(2), &mut out);
    let bad: Vec<_> = out
        .iter()
        .filter(|p| !p.name.starts_with("tcp.state."))
        .collect();
    assert!(bad.is_empty(), "points from garbage: {bad:?}");
    assert!(out.iter().all(|p| p.value.is_finite()));
}
