//! The engine against real servers on 127.0.0.1.

mod support;

use keisoku_load::{knee, run, Model, PhaseSpec, Plan, RunControl, Slo, Target};
use std::time::Duration;
use support::{Config, TestServer};

fn plan(urls: &[String], connections: usize, duration_ms: u64) -> Plan {
    let targets = urls
        .iter()
        .map(|u| Target::new("GET", u, Vec::new(), 1).unwrap())
        .collect();
    let mut p = Plan::new(targets);
    p.threads = 2;
    p.timeout = Duration::from_secs(2);
    p.phases = vec![PhaseSpec {
        connections,
        rate: None,
        duration: Duration::from_millis(duration_ms),
        requests: None,
        ramp: None,
    }];
    p
}

fn go(p: &Plan) -> keisoku_load::Report {
    run(p, &RunControl::default()).unwrap()
}

#[test]
fn request_count_matches_the_server() {
    let s = TestServer::start(Config::default());
    let r = go(&plan(&[s.url("/")], 8, 700));
    assert!(r.overall.requests > 100, "{}", r.overall.requests);
    assert_eq!(
        r.overall.requests,
        s.requests(),
        "client and server disagree"
    );
    assert_eq!(r.overall.errors, 0);
    assert_eq!(r.overall.status.s2xx, r.overall.requests);
    // Keep-alive: one connection per client connection.
    assert_eq!(s.connections(), 8);
}

#[test]
fn request_budget_is_exact() {
    let s = TestServer::start(Config::default());
    let mut p = plan(&[s.url("/")], 5, 0);
    p.phases[0].requests = Some(1234);
    let r = go(&p);
    assert_eq!(r.overall.requests, 1234);
    assert_eq!(s.requests(), 1234);
}

#[test]
fn no_keepalive_opens_a_connection_per_request() {
    let s = TestServer::start(Config::default());
    let mut p = plan(&[s.url("/")], 4, 0);
    p.keepalive = false;
    p.phases[0].requests = Some(300);
    let r = go(&p);
    assert_eq!(r.overall.requests, 300);
    assert_eq!(s.connections(), 300);
    assert!(!r.keepalive);
}

#[test]
fn server_closing_after_each_answer_is_not_an_error() {
    let s = TestServer::start(Config::default());
    let mut p = plan(&[s.url("/close")], 3, 0);
    p.phases[0].requests = Some(200);
    let r = go(&p);
    assert_eq!((r.overall.requests, r.overall.errors), (200, 0));
    assert_eq!(s.connections(), 200);
}

#[test]
fn status_classes_chunked_and_large_bodies() {
    let s = TestServer::start(Config::default());
    let urls = [
        s.url("/status/404"),
        s.url("/status/503"),
        s.url("/status/301"),
        s.url("/chunked"),
        s.url("/large/1000000"),
    ];
    let mut p = plan(&urls, 5, 0);
    p.phases[0].requests = Some(500);
    let r = go(&p);
    assert_eq!(r.overall.errors_transport, 0, "{:?}", r.error_reasons);
    let st = &r.overall.status;
    // 5xx answers are errors (issue 13: one definition everywhere).
    assert_eq!(r.overall.errors, st.s5xx);
    assert_eq!(r.overall.status_codes.get("503"), Some(&st.s5xx));
    assert_eq!(r.overall.status_codes.get("404"), Some(&st.s4xx));
    let attempts = r.overall.requests as f64;
    assert!((r.overall.error_rate - st.s5xx as f64 / attempts * 100.0).abs() < 1e-9);
    // Every second of the timeline counts its 5xx as errors, and the
    // timeline has no hole.
    let tl_errors: u64 = r.timeline.iter().map(|s| s.errors).sum();
    assert_eq!(tl_errors, st.s5xx);
    for w in r.timeline.windows(2) {
        assert_eq!(w[1].t_s, w[0].t_s + 1);
    }
    // Each thread rotates on its own, so a target's share may be off by one per thread.
    let near = |v: u64, want: u64| v.abs_diff(want) <= 2;
    assert!(
        near(st.s4xx, 100) && near(st.s5xx, 100) && near(st.s3xx, 100) && near(st.s2xx, 200),
        "{st:?}"
    );
    assert_eq!(st.s2xx + st.s3xx + st.s4xx + st.s5xx, 500);
    // 100 large bodies of 1 MB each were read in full.
    assert_eq!(r.targets.len(), 5);
    let large = &r.targets[4].stats;
    assert!(near(large.requests, 100));
    assert!(large.bytes >= large.requests * 1_000_000, "{}", large.bytes);
    assert_eq!(r.targets[3].stats.status.s2xx, r.targets[3].stats.requests);
}

#[test]
fn errors_by_kind() {
    let s = TestServer::start(Config::default());
    for (path, kind) in [("/cut", "reset"), ("/garbage", "malformed")] {
        let r = go(&plan(&[s.url(path)], 2, 300));
        assert_eq!(r.overall.requests, 0, "{path}");
        assert!(r.overall.errors > 0, "{path}");
        let n = match kind {
            "reset" => r.overall.errors_by_kind.reset,
            _ => r.overall.errors_by_kind.malformed,
        };
        assert_eq!(
            n, r.overall.errors,
            "{path}: {:?}",
            r.overall.errors_by_kind
        );
        assert!(
            r.error_reasons[0].starts_with(kind),
            "{:?}",
            r.error_reasons
        );
        assert!(r.nothing_succeeded());
    }
}

#[test]
fn timeouts_are_counted_and_do_not_hang() {
    let s = TestServer::start(Config::default());
    let mut p = plan(&[s.url("/hang")], 3, 500);
    p.timeout = Duration::from_millis(200);
    let t0 = std::time::Instant::now();
    let r = go(&p);
    assert!(
        t0.elapsed() < Duration::from_secs(3),
        "took {:?}",
        t0.elapsed()
    );
    assert_eq!(r.overall.requests, 0);
    assert!(
        r.overall.errors_by_kind.read_timeout >= 3,
        "{:?}",
        r.overall.errors_by_kind
    );
    assert_eq!(r.overall.errors_by_kind.read_timeout, r.overall.errors);
}

#[test]
fn refused_connections() {
    let port = support::closed_port();
    let r = go(&plan(&[format!("http://127.0.0.1:{port}/")], 2, 300));
    assert_eq!(r.overall.requests, 0);
    assert!(r.overall.errors_by_kind.connect_refused > 0);
    assert!(
        r.error_reasons[0].contains("refused"),
        "{:?}",
        r.error_reasons
    );
    // Backoff keeps a dead target from being hammered in a tight loop.
    assert!(
        r.overall.errors < 2 * 2 * 300 / 10 + 10,
        "{}",
        r.overall.errors
    );
}

#[test]
fn open_model_holds_the_rate() {
    let s = TestServer::start(Config::default());
    let mut p = plan(&[s.url("/")], 20, 10_000);
    p.model = Model::Open;
    p.phases[0].rate = Some(1000.0);
    let r = go(&p);
    let sent = r.overall.requests as f64;
    assert!(
        (sent - 10_000.0).abs() <= 200.0,
        "sent {sent} for 10000 intended"
    );
    assert!(
        (r.overall.rps - 1000.0).abs() <= 20.0,
        "rps {}",
        r.overall.rps
    );
    assert_eq!(s.requests(), r.overall.requests);
    let lag = r.overall.schedule.as_ref().unwrap();
    assert!(lag.intended >= 9_900, "{lag:?}");
    assert!(r.overall.service_ms.is_some());
}

/// The server stalls every `period` for `stall`; the open model must show
/// it in p99, the closed model hides it (coordinated omission).
#[test]
fn stalls_show_in_the_open_model_only() {
    let stall = Duration::from_millis(400);
    let s = TestServer::start(Config {
        stall: Some((Duration::from_millis(2000), stall)),
        ..Config::default()
    });
    let mut closed = plan(&[s.url("/")], 4, 4000);
    closed.threads = 1;
    let rc = go(&closed);
    let mut open = plan(&[s.url("/")], 50, 4000);
    open.threads = 1;
    open.model = Model::Open;
    open.phases[0].rate = Some(500.0);
    let ro = go(&open);
    let stall_ms = stall.as_secs_f64() * 1e3;
    assert!(
        rc.overall.latency_ms.p99 < stall_ms / 4.0,
        "closed p99 {}",
        rc.overall.latency_ms.p99
    );
    assert!(
        rc.overall.latency_ms.max >= stall_ms * 0.5,
        "closed max {}",
        rc.overall.latency_ms.max
    );
    assert!(
        ro.overall.latency_ms.p99 >= stall_ms * 0.5,
        "open p99 {}",
        ro.overall.latency_ms.p99
    );
    // Service time (from the actual send) hides most of it, which is the point of reporting both.
    let svc = ro.overall.service_ms.as_ref().unwrap();
    assert!(svc.p50 < ro.overall.latency_ms.p90);
}

#[test]
fn knee_of_a_four_slot_server() {
    // 40 ms per request keeps scheduler noise on a busy machine small against the service time.
    let s = TestServer::start(Config {
        slots: Some(4),
        service: Duration::from_millis(40),
        ..Config::default()
    });
    let mut p = plan(&[s.url("/")], 1, 0);
    p.threads = 1;
    p.phases = [1usize, 2, 3, 4, 6, 8]
        .iter()
        .map(|&c| PhaseSpec {
            connections: c,
            rate: None,
            duration: Duration::from_millis(1000),
            requests: None,
            ramp: None,
        })
        .collect();
    let mut r = go(&p);
    let rps: Vec<f64> = r.phases.iter().map(|p| p.stats.rps).collect();
    let k = knee(&r.phases);
    assert_eq!(r.knee, k);
    let at = k.map(|k| r.phases[k].connections);
    assert!(
        matches!(at, Some(4) | Some(3) | Some(6)),
        "knee at {at:?}, rps {rps:?}"
    );
    // Throughput stops near 4 slots x 25/s.
    assert!(rps[5] < 110.0 && rps[5] > 70.0, "{rps:?}");
    let slo = Slo::parse("mean<=55ms").unwrap();
    let pass = keisoku_load::judge(&mut r, &slo);
    let p99: Vec<f64> = r.phases.iter().map(|p| p.stats.latency_ms.p99).collect();
    assert!(pass, "rps {rps:?} p99 {p99:?}");
    let best = r.best_passing_phase.map(|b| r.phases[b].connections);
    assert!(matches!(best, Some(3) | Some(4)), "{best:?}");
}

#[test]
fn stop_flag_gives_a_partial_report() {
    let s = TestServer::start(Config::default());
    let p = plan(&[s.url("/")], 4, 30_000);
    let ctl = RunControl::default();
    let stop = ctl.stop.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(500));
        stop.store(true, std::sync::atomic::Ordering::Relaxed);
    });
    let t0 = std::time::Instant::now();
    let r = run(&p, &ctl).unwrap();
    assert!(t0.elapsed() < Duration::from_secs(3));
    assert!(r.partial);
    assert!(r.overall.requests > 0);
}

#[test]
fn hdr_interval_log_reads_back() {
    use hdrhistogram::serialization::interval_log::{IntervalLogIterator, LogEntry};
    use hdrhistogram::serialization::Deserializer;
    let s = TestServer::start(Config::default());
    let mut p = plan(&[s.url("/")], 2, 0);
    p.phases[0].requests = Some(500);
    let r = go(&p);
    let mut buf = Vec::new();
    keisoku_load::hlog::write_hlog(&r, &mut buf).unwrap();
    let mut de = Deserializer::new();
    let mut total = 0;
    let mut intervals = 0;
    for entry in IntervalLogIterator::new(&buf) {
        if let LogEntry::Interval(h) = entry.unwrap() {
            let bytes = base64_decode(h.encoded_histogram());
            let hist: hdrhistogram::Histogram<u64> = de.deserialize(&mut bytes.as_slice()).unwrap();
            total += hist.len();
            intervals += 1;
        }
    }
    assert!(intervals >= 1);
    assert_eq!(total, 500);
}

/// Minimal standard base64 decoder (the test only needs to read what the crate wrote).
fn base64_decode(s: &str) -> Vec<u8> {
    let val = |c: u8| match c {
        b'A'..=b'Z' => c - b'A',
        b'a'..=b'z' => c - b'a' + 26,
        b'0'..=b'9' => c - b'0' + 52,
        b'+' => 62,
        _ => 63,
    };
    let bytes: Vec<u8> = s.bytes().filter(|&c| c != b'=').collect();
    let mut out = Vec::new();
    for chunk in bytes.chunks(4) {
        let mut acc = 0u32;
        for (i, &c) in chunk.iter().enumerate() {
            acc |= (val(c) as u32) << (18 - 6 * i);
        }
        out.extend_from_slice(&acc.to_be_bytes()[1..chunk.len()]);
    }
    out
}

/// The live stream (issue 15: what a recorder stores as the load runs):
/// the clock first, then every second once and in order, quiet seconds
/// included, the same seconds the final timeline holds, and each phase
/// started before it ends, across a warm-up and a sweep.
#[test]
fn live_results_come_once_in_order_and_match_the_report() {
    use keisoku_load::Live;
    use std::sync::{Arc, Mutex};
    let s = TestServer::start(Config {
        service: Duration::from_millis(2),
        ..Config::default()
    });
    let mut p = plan(&[s.url("/a"), s.url("/b")], 2, 1300);
    p.warmup = Duration::from_millis(600);
    p.phases.push(PhaseSpec {
        connections: 4,
        rate: None,
        duration: Duration::from_millis(1300),
        requests: None,
        ramp: None,
    });
    let events: Arc<Mutex<Vec<String>>> = Arc::default();
    let seconds: Arc<Mutex<Vec<(u64, u64, u64)>>> = Arc::default();
    let (e, sec) = (Arc::clone(&events), Arc::clone(&seconds));
    let ctl = RunControl {
        live: Some(Box::new(move |ev: Live<'_>| {
            let mut e = e.lock().unwrap();
            match ev {
                Live::Started(ms) => e.push(format!("started {}", ms > 0)),
                Live::Second(s) => {
                    e.push("second".into());
                    sec.lock().unwrap().push((s.t_s, s.requests, s.errors));
                }
                Live::Warmup(_) => e.push("warmup".into()),
                Live::PhaseStart { label, .. } => e.push(format!("start {label}")),
                Live::Phase(p) => e.push(format!("end {}", p.label)),
            }
        })),
        ..RunControl::default()
    };
    let r = run(&p, &ctl).unwrap();
    let events = events.lock().unwrap().clone();
    let order: Vec<&str> = events
        .iter()
        .map(String::as_str)
        .filter(|e| *e != "second")
        .collect();
    assert_eq!(
        order,
        [
            "started true",
            "warmup",
            "start c=2",
            "end c=2",
            "start c=4",
            "end c=4"
        ],
        "{events:?}"
    );
    let seconds = seconds.lock().unwrap().clone();
    let want: Vec<(u64, u64, u64)> = r
        .timeline
        .iter()
        .map(|s| (s.t_s, s.requests, s.errors))
        .collect();
    assert_eq!(seconds, want);
    assert_eq!(
        seconds.iter().map(|s| s.0).collect::<Vec<_>>(),
        (0..seconds.len() as u64).collect::<Vec<_>>()
    );
    // Every response is in exactly one second.
    let total: u64 = seconds.iter().map(|s| s.1).sum();
    let warm_and_measured = s.requests();
    assert_eq!(total, warm_and_measured);
    // Both connections were open and busy in a second of the first phase.
    assert!(r
        .timeline
        .iter()
        .any(|s| s.connections >= 2 && s.inflight >= 2));
    assert!(r.overall.connects >= 4, "{}", r.overall.connects);
}
