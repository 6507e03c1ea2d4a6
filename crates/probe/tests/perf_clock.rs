//! A CPU burst at a known moment of the run shows up at that moment in the
//! perf recording (alone in its binary: it records this test process).

use std::time::{Duration, Instant};

use keisoku_probe::{PerfOptions, PerfRecorder, PerfTarget};

/// CPU time this thread has used.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec we own.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

#[test]
fn a_burst_lands_at_its_run_time() {
    let dir = tempfile::tempdir().unwrap();
    let origin = Instant::now() - Duration::from_secs(3);
    let mut o = PerfOptions::new(
        PerfTarget::Pids(vec![std::process::id()]),
        dir.path(),
        origin,
    );
    o.hz = 499;
    let rec = PerfRecorder::start(o).expect("perf record starts");
    std::thread::sleep(Duration::from_millis(400));
    let tid = unsafe { libc::gettid() } as u32;
    let t0 = origin.elapsed();
    // 300 ms of this thread's own CPU time (perf samples CPU time: on a busy
    // machine the wall time it takes is longer, the sample count the same).
    let cpu0 = thread_cpu();
    let mut x = 0u64;
    while thread_cpu() - cpu0 < Duration::from_millis(300) {
        for _ in 0..10_000 {
            x = std::hint::black_box(x.wrapping_mul(6364136223846793005).wrapping_add(1));
        }
    }
    let t1 = origin.elapsed();
    std::thread::sleep(Duration::from_millis(400));
    let out = rec.stop().unwrap();
    let script = std::fs::read_to_string(&out.script_path).unwrap();
    let mut times = Vec::new();
    for line in script
        .lines()
        .filter(|l| !l.is_empty() && !l.starts_with(char::is_whitespace))
    {
        let mut f = line.split_whitespace();
        let Some(pt) = f.find(|x| x.contains('/')) else {
            continue;
        };
        let Some(Ok(t)) = pt.split('/').nth(1).map(str::parse::<u32>) else {
            continue;
        };
        if t != tid {
            continue;
        }
        if let Some(secs) = f.find_map(|x| x.strip_suffix(':').and_then(|x| x.parse::<f64>().ok()))
        {
            times.push(out.clock.perf_secs_to_run_ns(secs));
        }
    }
    assert!(
        times.len() >= 20,
        "{} samples of the burst thread",
        times.len()
    );
    let lo = t0.as_nanos() as i64 - 30_000_000;
    let hi = t1.as_nanos() as i64 + 30_000_000;
    let inside = times.iter().filter(|&&t| t >= lo && t <= hi).count();
    assert!(
        inside as f64 >= 0.95 * times.len() as f64,
        "{inside} of {} samples within the burst [{lo}, {hi}] ns; first {:?}",
        times.len(),
        &times[..times.len().min(5)]
    );
    // And the burst is there, spread over its span, not bunched at one end.
    let mid = (t0.as_nanos() as i64 + t1.as_nanos() as i64) / 2;
    assert!(times.iter().any(|&t| t < mid) && times.iter().any(|&t| t > mid));
}
