//! The demo target over real sockets: routes, answers, and what each knob
//! changes in the work done, read from `GET /stats` counters.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::time::Duration;

use keisoku_demo::{
    sample_request, sample_requests, BidResponse, DemoConfig, DemoHandle, DemoServer, Knobs,
    StatsSnapshot,
};

/// One request on its own connection; returns status and body.
fn http(addr: SocketAddr, method: &str, path: &str, body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
    s.write_all(req.as_bytes()).unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let status = out[9..12].parse().unwrap();
    let body = out
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_string())
        .unwrap_or_default();
    (status, body)
}

fn start(knobs: Knobs) -> DemoHandle {
    DemoServer::start(&DemoConfig {
        knobs,
        workers: Some(2),
        logger_delay_ms: (1, 3),
        log_roll_bytes: 32 * 1024,
        ..Default::default()
    })
    .unwrap()
}

fn stats_of(addr: SocketAddr) -> (serde_json::Value, StatsSnapshot) {
    let (status, body) = http(addr, "GET", "/stats", "");
    assert_eq!(status, 200);
    let v: serde_json::Value = serde_json::from_str(&body).unwrap();
    let s: StatsSnapshot = serde_json::from_value(v.clone()).unwrap();
    (v, s)
}

/// Sends `n` sample bids over one keep-alive connection.
fn load(addr: SocketAddr, n: usize) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    // One write per request: split writes would meet Nagle and delayed ACKs.
    s.set_nodelay(true).unwrap();
    let mut buf = vec![0u8; 64 * 1024];
    for body in sample_requests(n) {
        let req = format!(
            "POST /bid HTTP/1.1\r\nHost: t\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
            body.len()
        );
        s.write_all(req.as_bytes()).unwrap();
        // Read one whole response: head, then Content-Length bytes (204 has none).
        let mut got = Vec::new();
        loop {
            let n = s.read(&mut buf).unwrap();
            assert!(n > 0, "server closed a keep-alive connection");
            got.extend_from_slice(&buf[..n]);
            let text = String::from_utf8_lossy(&got);
            if let Some((head, rest)) = text.split_once("\r\n\r\n") {
                let len = head
                    .lines()
                    .find_map(|l| l.strip_prefix("Content-Length: "))
                    .map(|v| v.trim().parse::<usize>().unwrap())
                    .unwrap_or(0);
                if rest.len() >= len {
                    assert!(
                        head.starts_with("HTTP/1.1 200") || head.starts_with("HTTP/1.1 204"),
                        "{head}"
                    );
                    break;
                }
            }
        }
    }
}

#[test]
fn bid_no_bid_bad_request_health_and_stats() {
    let h = start(Knobs::all_tuned());
    let addr = h.addr();
    assert_eq!(http(addr, "GET", "/health", "").0, 200);

    let req = sample_request(0);
    let (status, body) = http(addr, "POST", "/bid", &serde_json::to_string(&req).unwrap());
    assert_eq!(status, 200, "{body}");
    let resp: BidResponse = serde_json::from_str(&body).unwrap();
    assert_eq!(resp.id, req.id);
    let bids = &resp.seatbid[0].bid;
    assert!(!bids.is_empty());
    for bid in bids {
        let imp = req.imp.iter().find(|i| i.id == bid.impid).unwrap();
        assert!(
            bid.price > imp.bidfloor,
            "price {} <= floor {}",
            bid.price,
            imp.bidfloor
        );
        assert!(!bid.adm.is_empty() && !bid.crid.is_empty());
    }

    // Request 7 of the sample mix is built to get no bid.
    let (status, body) = http(
        addr,
        "POST",
        "/bid",
        &serde_json::to_string(&sample_request(7)).unwrap(),
    );
    assert_eq!((status, body.as_str()), (204, ""));

    let (status, body) = http(addr, "POST", "/bid", "{\"id\": \"x\", \"imp\": [");
    assert_eq!(status, 400);
    assert!(body.contains("malformed bid request"), "{body}");
    let (status, body) = http(
        addr,
        "POST",
        "/bid",
        r#"{"id":"x","imp":[{"id":"1"}],"site":{"domain":"not a domain"}}"#,
    );
    assert_eq!(status, 400);
    assert!(body.contains("not a valid site.domain"), "{body}");
    assert_eq!(http(addr, "GET", "/bid", "").0, 405);
    assert_eq!(http(addr, "GET", "/nope", "").0, 404);

    let (json, stats) = stats_of(addr);
    assert_eq!(json["knobs"]["json-cache"], "tuned");
    assert_eq!(stats.bids, 1);
    assert_eq!(stats.no_bids, 1);
    assert_eq!(stats.bad_requests, 4);
    h.stop();
    assert!(
        TcpStream::connect_timeout(&addr, Duration::from_millis(300)).is_err(),
        "still listening after stop"
    );
}

#[test]
fn the_sample_mix_bids_mostly() {
    let h = start(Knobs::all_tuned());
    load(h.addr(), 200);
    let s = h.stats();
    assert_eq!(s.bids + s.no_bids, 200);
    assert!(s.bids > 100 && s.no_bids > 10, "{s:?}");
    h.stop();
}

/// Runs the same load with the knob naive and tuned (everything else tuned).
fn both(name: &str, n: usize) -> (StatsSnapshot, StatsSnapshot, Vec<String>) {
    let naive = start(Knobs::only(name).unwrap());
    load(naive.addr(), n);
    // Queued writers post on their own schedule: let them drain.
    std::thread::sleep(Duration::from_millis(300));
    let files = naive
        .work_dir()
        .map(|d| {
            std::fs::read_dir(d)
                .unwrap()
                .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    let a = naive.stats();
    naive.stop();
    let tuned = start(Knobs::all_tuned());
    load(tuned.addr(), n);
    std::thread::sleep(Duration::from_millis(300));
    let b = tuned.stats();
    tuned.stop();
    (a, b, files)
}

const N: usize = 120;

#[test]
fn json_cache_parses_on_every_hit_only_when_naive() {
    let (naive, tuned) = {
        let (a, b, _) = both("json-cache", N);
        (a, b)
    };
    assert!(
        naive.cache_json_parses >= naive.cache_hits && naive.cache_hits > N as u64 / 2,
        "{naive:?}"
    );
    assert_eq!(tuned.cache_json_parses, 0);
    assert!(tuned.cache_hits > N as u64 / 2);
}

#[test]
fn formatter_compiles_per_request_only_when_naive() {
    let (naive, tuned, _) = both("formatter", N);
    assert_eq!(naive.regex_compiles, 2 + 2 * N as u64);
    assert_eq!(naive.formatter_builds, 1 + N as u64);
    assert_eq!(tuned.regex_compiles, 2);
    assert_eq!(tuned.formatter_builds, 1);
}

#[test]
fn per_request_init_reads_the_config_per_request_only_when_naive() {
    let (naive, tuned, _) = both("per-request-init", N);
    assert_eq!(naive.config_loads, 1 + N as u64);
    assert_eq!(tuned.config_loads, 1);
}

#[test]
fn sync_log_rollover_rolls_inside_requests_only_when_naive() {
    let (naive, tuned, files) = both("sync-log-rollover", 300);
    assert_eq!(naive.log_lines, 300);
    assert_eq!(tuned.log_lines, 300);
    assert!(naive.log_rollovers >= 2, "{naive:?}");
    assert_eq!(naive.log_rollovers_blocking, naive.log_rollovers);
    assert!(tuned.log_rollovers >= 2, "{tuned:?}");
    assert_eq!(tuned.log_rollovers_blocking, 0);
    assert!(files.iter().any(|f| f.ends_with(".log.gz")), "{files:?}");
}

#[test]
fn single_worker_runs_one_event_loop_only_when_naive() {
    let (naive, tuned, _) = both("single-worker", 10);
    assert_eq!(naive.workers, 1);
    assert_eq!(tuned.workers, 2);
}

#[test]
fn no_keepalive_connects_per_backend_call_only_when_naive() {
    let (naive, tuned, _) = both("no-keepalive", N);
    assert_eq!(naive.backend_connects, naive.backend_calls);
    assert!(naive.backend_accepts >= naive.backend_calls, "{naive:?}");
    assert!(tuned.backend_calls >= N as u64);
    // One pooled connection per worker that called, at most.
    assert!(tuned.backend_connects <= 2, "{tuned:?}");
}

#[test]
fn sync_external_call_waits_in_the_request_only_when_naive() {
    let (naive, tuned, _) = both("sync-external-call", N);
    assert!(naive.external_events > N as u64 / 2);
    assert_eq!(naive.external_posts, naive.external_events);
    // Each synchronous post waited at least the logger's 1 ms.
    assert!(
        naive.external_wait_ns >= naive.external_events * 1_000_000,
        "{naive:?}"
    );
    assert!(tuned.external_events > N as u64 / 2);
    // Batches: fewer posts than events, none of them waited for by a request.
    assert!(tuned.external_posts < tuned.external_events, "{tuned:?}");
    assert_eq!(tuned.external_wait_ns, 0);
    assert_eq!(tuned.external_dropped, 0);
}

#[test]
fn unpinned_leaves_workers_free_only_when_naive() {
    let (naive, tuned, _) = both("unpinned", 10);
    assert_eq!(naive.workers_pinned, 0);
    assert_eq!(tuned.workers_pinned, tuned.workers);
}

#[test]
fn all_naive_still_answers_correctly() {
    let h = start(Knobs::all_naive());
    load(h.addr(), 40);
    let s = h.stats();
    assert_eq!(s.bids + s.no_bids, 40);
    assert_eq!(s.workers, 1);
    h.stop();
}

#[test]
fn pipelined_requests_are_answered_in_order() {
    let h = start(Knobs::all_tuned());
    let mut s = TcpStream::connect(h.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    s.write_all(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\nGET /nope HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    let first = out.find("HTTP/1.1 200").unwrap();
    let second = out.find("HTTP/1.1 404").unwrap();
    assert!(first < second, "{out}");
    h.stop();
}

/// Sends one `GET /health` on a kept-alive connection and returns the
/// response head.
fn health_on(s: &mut TcpStream) -> String {
    s.write_all(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    let mut got = Vec::new();
    let mut buf = [0u8; 4096];
    loop {
        let n = s.read(&mut buf).unwrap();
        assert!(n > 0, "server closed before answering");
        got.extend_from_slice(&buf[..n]);
        let text = String::from_utf8_lossy(&got).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            if body.ends_with('}') {
                return head.to_string();
            }
        }
    }
}

#[test]
fn unpinned_naive_serves_from_a_prefork_pool_that_hands_connections_back() {
    let h = start(Knobs::only("unpinned").unwrap());
    // The request cap: the 100th answer on one connection closes it.
    let mut a = TcpStream::connect(h.addr()).unwrap();
    a.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    for i in 1..100 {
        let head = health_on(&mut a);
        assert!(!head.contains("Connection: close"), "answer {i}: {head}");
    }
    assert!(health_on(&mut a).contains("Connection: close"));
    assert_eq!(a.read(&mut [0u8; 16]).unwrap(), 0);

    // The idle timeout: two workers, both holding an idle kept-alive
    // connection; a third connection is served once they are dropped.
    let mut idle = Vec::new();
    for _ in 0..2 {
        let mut s = TcpStream::connect(h.addr()).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        assert!(health_on(&mut s).starts_with("HTTP/1.1 200"));
        idle.push((s, std::time::Instant::now()));
    }
    let mut c = TcpStream::connect(h.addr()).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    assert!(health_on(&mut c).starts_with("HTTP/1.1 200"));
    for (mut s, answered) in idle {
        assert_eq!(s.read(&mut [0u8; 16]).unwrap(), 0, "idle connection kept");
        assert!(answered.elapsed() >= Duration::from_millis(90));
    }
    let st = h.stats();
    assert_eq!(st.workers, 2);
    assert_eq!(st.workers_pinned, 0);
    assert_eq!(st.connections_accepted, 4);
    // c is still open and idle: it must not hold up the shutdown.
    h.stop();
}

#[test]
fn a_pinned_prefork_pool_pins_every_worker_and_counts_bad_requests() {
    let h = DemoServer::start(&DemoConfig {
        knobs: Knobs::all_tuned(),
        workers: Some(3),
        prefork: true,
        ..Default::default()
    })
    .unwrap();
    let (status, _) = http(h.addr(), "POST", "/bid", "{not json");
    assert_eq!(status, 400);
    let mut s = TcpStream::connect(h.addr()).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(b"NOT HTTP AT ALL\r\n\r\n").unwrap();
    let mut out = String::new();
    s.read_to_string(&mut out).unwrap();
    assert!(out.starts_with("HTTP/1.1 400"), "{out}");
    load(h.addr(), 20);
    let st = h.stats();
    assert_eq!(st.workers, 3);
    assert_eq!(st.workers_pinned, 3);
    assert_eq!(st.bad_requests, 2);
    assert_eq!(st.requests, 22);
    assert_eq!(st.bids + st.no_bids, 20);
    h.stop();
}
