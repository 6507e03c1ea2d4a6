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
    let spinner = std::thread::spawn(move || {
        while !s2.load(std::sync::atomic::Ordering::Relaxed) {
            std::hint::spin_loop();
        }
    });
    std::thread::sleep(Duration::from_millis(100));
    let expected = task_count();
    let mut cfg = SamplerConfig::new(Instant::now());
    cfg.pid = Some(std::process::id());
    cfg.host = false;
    let mut col = Collector::new(&cfg).unwrap();
    let mut out = Vec::new();
    col.sample(cfg.origin.elapsed(), &mut out);
    std::thread::sleep(Duration::from_millis(500));
    col.sample(cfg.origin.elapsed(), &mut out);
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
    assert!(
        core_total > 20.0,
        "the spinning thread shows on the cores: {core_total}"
    );
    // No host series when host sampling is off.
    assert!(s.keys().all(|k| k.starts_with("proc.")));
}
