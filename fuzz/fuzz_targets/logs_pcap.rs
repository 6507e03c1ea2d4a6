//! A packet capture given to `keisoku logs pcap`: any bytes must either be
//! refused with an error or read into exchanges whose response times are
//! finite and not negative, and whose LTSV lines are one line each.
#![no_main]
use keisoku_logs::pcap::{self, Server};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    // The first byte picks the server port among those a seed may use.
    let port = match data.first() {
        Some(b) if b % 2 == 0 => 80,
        _ => 19000,
    };
    let server = Server {
        ips: vec!["127.0.0.1".parse().unwrap(), "::1".parse().unwrap()],
        port,
    };
    let Ok(mut exchanges) = pcap::exchanges(std::io::Cursor::new(data.to_vec()), server) else {
        return;
    };
    let tz = pcap::TimeZone::UTC;
    let mut line = Vec::new();
    while let Ok(Some(e)) = exchanges.next_exchange() {
        assert!(
            e.response_time.is_finite() && e.response_time >= 0.0,
            "response time {} of {e:?}",
            e.response_time
        );
        line.clear();
        pcap::ltsv_line(&e, &tz, &mut line);
        assert_eq!(
            line.iter().filter(|&&b| b == b'\n').count(),
            1,
            "one exchange, one line: {:?}",
            String::from_utf8_lossy(&line)
        );
    }
});
