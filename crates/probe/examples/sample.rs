//! Samples /proc like `keisoku record` would and prints the points, or with
//! `--quiet` only the sampler's own CPU cost (used by bench/probe.sh).
//!
//! Usage: sample [--interval-ms N] [--seconds N] [--pid PID | --pidof NAME] [--no-tcp-states] [--quiet | --out FILE]

use std::io::Write;
use std::path::Path;
use std::time::{Duration, Instant};

use keisoku_probe::{pidof, Sampler, SamplerConfig};

fn main() {
    let mut interval_ms = 1000u64;
    let mut seconds = 5u64;
    let mut pid = None;
    let mut quiet = false;
    let mut tcp_states = true;
    let mut out_path: Option<String> = None;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().unwrap_or_default();
        match a.as_str() {
            "--interval-ms" => interval_ms = value().parse().unwrap_or(1000),
            "--seconds" => seconds = value().parse().unwrap_or(5),
            "--pid" => pid = value().parse().ok(),
            "--pidof" => match pidof(Path::new("/proc"), &value()) {
                Ok(p) => pid = Some(p),
                Err(e) => {
                    eprintln!("sample: {e}");
                    std::process::exit(2);
                }
            },
            "--quiet" => quiet = true,
            "--no-tcp-states" => tcp_states = false,
            "--out" => out_path = Some(value()),
            other => {
                eprintln!("sample: unknown argument {other:?}");
                std::process::exit(2);
            }
        }
    }
    let mut config = SamplerConfig::new(Instant::now());
    config.interval = Duration::from_millis(interval_ms);
    config.pid = pid;
    if !tcp_states {
        config.tcp_states_every = None;
    }
    // Points are written like a collector would keep them (sadc and dool
    // write files too): buffered, one write per sample.
    let mut sink: Box<dyn Write + Send> = match (&out_path, quiet) {
        (Some(p), _) => match std::fs::File::create(p) {
            Ok(f) => Box::new(std::io::BufWriter::with_capacity(64 * 1024, f)),
            Err(e) => {
                eprintln!("sample: cannot create {p}: {e}");
                std::process::exit(2);
            }
        },
        (None, true) => Box::new(std::io::sink()),
        (None, false) => Box::new(std::io::BufWriter::new(std::io::stdout())),
    };
    let sampler = match Sampler::start(config, move |points| {
        for p in points {
            let _ = writeln!(
                sink,
                "{:.3}\t{}\t{:.3}\t{}",
                p.t_ns as f64 / 1e9,
                p.name,
                p.value,
                p.unit
            );
        }
        let _ = sink.flush();
    }) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("sample: {e}");
            std::process::exit(2);
        }
    };
    std::thread::sleep(Duration::from_secs(seconds));
    let report = sampler.stop();
    for n in &report.notes {
        eprintln!("note: {n}");
    }
    eprintln!(
        "samples={} sampler_cpu_ms={:.3} per_sample_us={:.1}",
        report.samples,
        report.cpu_time.as_secs_f64() * 1e3,
        report.cpu_time.as_secs_f64() * 1e6 / report.samples.max(1) as f64
    );
}
