//! Threads of the target are counted and sampled one by one. Alone in its
//! own test binary so no other test adds threads meanwhile.

mod common;

use std::sync::mpsc;
use std::time::{Duration, Instant};

use common::by_name;
use keisoku_probe::{Collector, SamplerConfig};

fn task_count() -> usize {
    std::fs::read_dir("/proc/self/task").unwrap().count()
}

fn process_cpu_s() -> f64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    unsafe { libc::clock_gettime(libc::CLOCK_PROCESS_CPUTIME_ID, &mut ts) };
    ts.tv_sec as f64 + ts.tv_nsec as f64 / 1e9
}

#[test]
fn threads_of_the_target_are_counted() {
    let (tx, rx) = mpsc::channel::<()>();
    let rx = std::sync::Arc::new(std::sync::Mutex::new(rx));
    let mut handles = Vec::new();
    for _ in 0..4 {
        let rx = rx.clone();
        handles.push(std::thread::spawn(move || {
            let _ = rx.lock().map(|r| r.recv_timeout(Duration::from_secs(30)));
        }));
    }
    // One spinning thread, to see per-thread CPU land on a core.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let s2 = stop.clone();
    let spinner = std::thread::Builder::new()
        .name("ks-spinner".into())
        .spawn(move || {
            while !s2.load(std::sync::atomic::Ordering::Relaxed) {
                std::hint::spin_loop();
            }
        })
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let expected = task_count();
    let mut cfg = SamplerConfig::new(Instant::now());
    cfg.pid = Some(std::process::id());
    cfg.host = false;
    let mut col = Collector::new(&cfg).unwrap();
    let mut out = Vec::new();
    let cpu0 = process_cpu_s();
    let t0 = cfg.origin.elapsed();
    col.sample(t0, &mut out);
    // Long enough for the spinner to get real CPU on a loaded machine.
    for _ in 0..40 {
        std::thread::sleep(Duration::from_millis(200));
        if process_cpu_s() - cpu0 > 0.25 {
            break;
        }
    }
    let t1 = cfg.origin.elapsed();
    col.sample(t1, &mut out);
    let cpu = process_cpu_s() - cpu0;
    let after = task_count();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    drop(tx);
    spinner.join().unwrap();
    for h in handles {
        h.join().unwrap();
    }
    let s = by_name(&out);
    assert!(expected >= 6);
    for &(_, v) in &s["proc.threads"] {
        assert!(
            v as usize == expected || v as usize == after,
            "{v} threads, /proc/self/task has {expected}"
        );
    }
    let core_total: f64 = s
        .iter()
        .filter(|(k, _)| k.starts_with("proc.core."))
        .map(|(_, v)| v.last().unwrap().1)
        .sum();
    // Per-thread run time summed by core equals what the kernel charged the
    // process (on a loaded machine the spinner may get little of a core).
    let sampled = core_total / 100.0 * (t1 - t0).as_secs_f64();
    assert!(cpu > 0.2, "the spinner got only {cpu:.3} s of CPU in 8 s");
    assert!(
        (sampled - cpu).abs() <= 0.03 + 0.2 * cpu,
        "cores show {sampled:.3} s, the process used {cpu:.3} s"
    );
    // The spinner has its own series, holding nearly all of the process's
    // CPU; the idle threads have none.
    let pid = std::process::id();
    let spin: Vec<(&String, f64)> = s
        .iter()
        .filter(|(k, _)| k.starts_with(&format!("thread.ks-spinner:{pid}:")) && k.ends_with(".cpu"))
        .map(|(k, v)| (k, v.last().unwrap().1))
        .collect();
    assert_eq!(spin.len(), 1, "{:?}", s.keys());
    assert!(
        spin[0].1 > 0.5 * core_total && spin[0].1 <= core_total + 1e-6,
        "spinner {:.1}% of {core_total:.1}%",
        spin[0].1
    );
    let with_series = s.keys().filter(|k| k.ends_with(".cpu")).count();
    assert!(
        with_series < expected,
        "idle threads got series: {:?}",
        s.keys()
    );
    // No host series when host sampling is off.
    assert!(s
        .keys()
        .all(|k| k.starts_with("proc.") || k.starts_with("thread.")));
}
