//! Captures built byte by byte: every link type, both byte orders, both
//! time resolutions, reordering, retransmission, and a cut at every byte.

use super::*;
use proptest::prelude::*;

const CLIENT: [u8; 4] = [127, 0, 0, 1];
const SERVER_PORT: u16 = 8080;

#[derive(Clone, Copy)]
enum Link {
    Ethernet,
    Sll,
    Sll2,
    Null,
    Raw,
}

struct Cap {
    big: bool,
    nano: bool,
    link: Link,
    v6: bool,
    out: Vec<u8>,
}

impl Cap {
    fn new(big: bool, nano: bool, link: Link, v6: bool) -> Cap {
        let mut c = Cap {
            big,
            nano,
            link,
            v6,
            out: Vec::new(),
        };
        let magic: u32 = if nano { 0xa1b2_3c4d } else { 0xa1b2_c3d4 };
        let linktype: u32 = match link {
            Link::Ethernet => 1,
            Link::Sll => 113,
            Link::Sll2 => 276,
            Link::Null => 0,
            Link::Raw => 101,
        };
        for w in [magic, 0x0004_0002, 0, 0, 262_144, linktype] {
            c.word(w);
        }
        // version is two u16: 2 then 4, written as one word above only
        // matters for its length.
        c
    }

    fn word(&mut self, w: u32) {
        if self.big {
            self.out.extend(w.to_be_bytes());
        } else {
            self.out.extend(w.to_le_bytes());
        }
    }

    /// A segment at `ms` milliseconds: `to_server` decides its direction.
    fn seg(
        &mut self,
        ms: u64,
        to_server: bool,
        client_port: u16,
        seq: u32,
        flags: u8,
        payload: &[u8],
    ) {
        let (sport, dport) = if to_server {
            (client_port, SERVER_PORT)
        } else {
            (SERVER_PORT, client_port)
        };
        let mut tcp = Vec::new();
        tcp.extend(sport.to_be_bytes());
        tcp.extend(dport.to_be_bytes());
        tcp.extend(seq.to_be_bytes());
        tcp.extend(0u32.to_be_bytes());
        tcp.push(5 << 4);
        tcp.push(flags);
        tcp.extend([0u8; 6]);
        tcp.extend(payload);
        let ip = if self.v6 {
            let mut ip = vec![0x60, 0, 0, 0];
            ip.extend((tcp.len() as u16).to_be_bytes());
            ip.push(6);
            ip.push(64);
            let one = std::net::Ipv6Addr::LOCALHOST.octets();
            ip.extend(one);
            ip.extend(one);
            ip.extend(&tcp);
            ip
        } else {
            let mut ip = vec![0x45, 0];
            ip.extend(((20 + tcp.len()) as u16).to_be_bytes());
            ip.extend([0, 0, 0x40, 0, 64, 6, 0, 0]);
            ip.extend(CLIENT);
            ip.extend(CLIENT);
            ip.extend(&tcp);
            ip
        };
        let ethertype: u16 = if self.v6 { 0x86dd } else { 0x0800 };
        let mut frame = Vec::new();
        match self.link {
            Link::Ethernet => {
                frame.extend([0u8; 12]);
                frame.extend(ethertype.to_be_bytes());
            }
            Link::Sll => {
                frame.extend([0u8; 14]);
                frame.extend(ethertype.to_be_bytes());
            }
            Link::Sll2 => {
                frame.extend(ethertype.to_be_bytes());
                frame.extend([0u8; 18]);
            }
            Link::Null => {
                let family: u32 = if self.v6 { 30 } else { 2 };
                if self.big {
                    frame.extend(family.to_be_bytes());
                } else {
                    frame.extend(family.to_le_bytes());
                }
            }
            Link::Raw => {}
        }
        frame.extend(&ip);
        if matches!(self.link, Link::Ethernet) {
            // Ethernet pads short frames: the IP length must bound TCP.
            frame.extend([0u8; 6]);
        }
        let (sec, frac) = (ms / 1000, ms % 1000);
        self.word(sec as u32);
        self.word(if self.nano {
            frac * 1_000_000
        } else {
            frac * 1000
        } as u32);
        self.word(frame.len() as u32);
        self.word(frame.len() as u32);
        self.out.extend(frame);
    }
}

const SYN: u8 = 0x02;
const FIN: u8 = 0x01;
const ACK: u8 = 0x10;

/// A keep-alive connection with two exchanges (the second chunked) and a
/// closed connection with a body delimited by its end.
fn conversation(c: &mut Cap) {
    let req1 = b"GET /users/1?b=2&a=1 HTTP/1.1\r\nHost: t\r\n\r\n";
    let res1 = b"HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";
    let req2 = b"POST /items HTTP/1.1\r\nHost: t\r\nContent-Length: 3\r\n\r\nabc";
    let res2 = b"HTTP/1.1 404 Not Found\r\nTransfer-Encoding: chunked\r\n\r\n4\r\nmiss\r\n3\r\ning\r\n0\r\n\r\n";
    c.seg(1000, true, 40000, 100, SYN, b"");
    c.seg(1000, false, 40000, 500, SYN | ACK, b"");
    c.seg(1001, true, 40000, 101, ACK, req1);
    c.seg(1011, false, 40000, 501, ACK, res1);
    let s2 = 101 + req1.len() as u32;
    c.seg(1020, true, 40000, s2, ACK, req2);
    let r2 = 501 + res1.len() as u32;
    c.seg(1270, false, 40000, r2, ACK, &res2[..30]);
    c.seg(1271, false, 40000, r2 + 30, ACK, &res2[30..]);
    c.seg(1300, true, 40000, s2 + req2.len() as u32, FIN | ACK, b"");
    c.seg(1300, false, 40000, r2 + res2.len() as u32, FIN | ACK, b"");
    let req3 = b"GET /close HTTP/1.0\r\n\r\n";
    let res3 = b"HTTP/1.0 500 Internal Server Error\r\n\r\nbroken!";
    c.seg(2000, true, 40001, 7, SYN, b"");
    c.seg(2000, false, 40001, 9, SYN | ACK, b"");
    c.seg(2000, true, 40001, 8, ACK, req3);
    c.seg(2500, false, 40001, 10, ACK, res3);
    c.seg(2501, false, 40001, 10 + res3.len() as u32, FIN | ACK, b"");
}

fn server() -> Server {
    Server {
        ips: vec!["127.0.0.1".parse().unwrap(), "::1".parse().unwrap()],
        port: SERVER_PORT,
    }
}

fn all(data: Vec<u8>) -> Result<Vec<Exchange>, PcapError> {
    let mut x = exchanges(std::io::Cursor::new(data), server())?;
    let mut out = Vec::new();
    while let Some(e) = x.next_exchange()? {
        out.push(e);
    }
    Ok(out)
}

fn expected() -> Vec<(String, String, u16, i64, f64, i64)> {
    vec![
        (
            "GET".into(),
            "/users/1?b=2&a=1".into(),
            200,
            5,
            0.01,
            1_001_000_000,
        ),
        ("POST".into(), "/items".into(), 404, 7, 0.25, 1_020_000_000),
        ("GET".into(), "/close".into(), 500, 7, 0.5, 2_000_000_000),
    ]
}

fn summary(x: &[Exchange]) -> Vec<(String, String, u16, i64, f64, i64)> {
    x.iter()
        .map(|e| {
            (
                e.method.clone(),
                e.uri.clone(),
                e.status,
                e.body_bytes,
                (e.response_time * 1e6).round() / 1e6,
                e.time_ns,
            )
        })
        .collect()
}

#[test]
fn every_link_type_byte_order_and_resolution_reads_the_same_exchanges() {
    for link in [Link::Ethernet, Link::Sll, Link::Sll2, Link::Null, Link::Raw] {
        for big in [false, true] {
            for nano in [false, true] {
                for v6 in [false, true] {
                    let mut c = Cap::new(big, nano, link, v6);
                    conversation(&mut c);
                    let got = all(c.out).unwrap();
                    assert_eq!(summary(&got), expected(), "big {big} nano {nano} v6 {v6}");
                }
            }
        }
    }
}

#[test]
fn gzip_compressed_captures_read_as_alp_reads_them() {
    use std::io::Write as _;
    let mut c = Cap::new(false, false, Link::Ethernet, false);
    conversation(&mut c);
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(&c.out).unwrap();
    assert_eq!(summary(&all(gz.finish().unwrap()).unwrap()), expected());
}

#[test]
fn reordered_and_retransmitted_segments_are_read_once_in_order() {
    let mut c = Cap::new(false, false, Link::Ethernet, false);
    let req = b"GET /a HTTP/1.1\r\nHost: t\r\n\r\n";
    let res = b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n0123456789";
    c.seg(0, true, 5000, 1, SYN, b"");
    c.seg(0, false, 5000, 1, SYN | ACK, b"");
    c.seg(1, true, 5000, 2, ACK, req);
    c.seg(2, true, 5000, 2, ACK, req); // retransmitted
                                       // The response's second half arrives first.
    c.seg(5, false, 5000, 2 + 20, ACK, &res[20..]);
    c.seg(6, false, 5000, 2, ACK, &res[..20]);
    c.seg(7, false, 5000, 2, ACK, &res[..20]); // retransmitted
    let got = all(c.out).unwrap();
    assert_eq!(got.len(), 1, "{got:?}");
    assert_eq!(got[0].body_bytes, 10);
    assert_eq!(got[0].status, 200);
    // The response's time is that of its first piece (captured at 6 ms).
    assert!(
        (got[0].response_time - 0.005).abs() < 1e-12,
        "{}",
        got[0].response_time
    );
}

#[test]
fn traffic_of_another_server_is_passed_over() {
    let mut c = Cap::new(false, false, Link::Ethernet, false);
    conversation(&mut c);
    let other = Server {
        ips: vec!["127.0.0.1".parse().unwrap()],
        port: 80,
    };
    let mut x = exchanges(std::io::Cursor::new(c.out), other).unwrap();
    assert!(x.next_exchange().unwrap().is_none());
}

#[test]
fn a_cut_at_every_byte_is_an_error_or_the_exchanges_so_far_never_a_panic() {
    let mut c = Cap::new(false, false, Link::Ethernet, false);
    conversation(&mut c);
    let data = c.out;
    // Record boundaries: where a cut is a shorter but whole capture.
    let mut bounds = vec![24usize];
    let mut at = 24;
    while at < data.len() {
        let len = u32::from_le_bytes(data[at + 8..at + 12].try_into().unwrap()) as usize;
        at += 16 + len;
        bounds.push(at);
    }
    for cut in 0..data.len() {
        let r = all(data[..cut].to_vec());
        if bounds.contains(&cut) {
            assert!(r.is_ok(), "cut at a record boundary {cut}: {r:?}");
        } else {
            let e = r.expect_err(&format!("cut inside a record at {cut}"));
            let text = e.to_string();
            assert!(
                text.contains("truncated") || text.contains("not a pcap"),
                "cut at {cut}: {text}"
            );
        }
    }
}

#[test]
fn unknown_link_types_and_pcapng_are_refused_with_the_reason() {
    let mut c = Cap::new(false, false, Link::Ethernet, false);
    c.out[20..24].copy_from_slice(&147u32.to_le_bytes());
    let e = all(c.out).unwrap_err().to_string();
    assert!(e.contains("link type 147 is not supported"), "{e}");
    let e = all(vec![0x0a, 0x0d, 0x0d, 0x0a, 0, 0, 0, 0])
        .unwrap_err()
        .to_string();
    assert!(e.contains("pcapng"), "{e}");
}

#[test]
fn a_record_longer_than_the_snapshot_length_is_refused() {
    let mut c = Cap::new(false, false, Link::Ethernet, false);
    conversation(&mut c);
    c.out[16..20].copy_from_slice(&40u32.to_le_bytes());
    let e = all(c.out).unwrap_err().to_string();
    assert!(e.contains("more than the snapshot length 40"), "{e}");
}

#[test]
fn times_print_as_go_prints_rfc3339() {
    let utc = TimeZone::UTC;
    assert_eq!(
        rfc3339(1_700_000_000_123_000_000, &utc),
        "2023-11-14T22:13:20Z"
    );
    let tokyo = TimeZone::get("Asia/Tokyo").unwrap();
    assert_eq!(
        rfc3339(1_700_000_000_000_000_000, &tokyo),
        "2023-11-15T07:13:20+09:00"
    );
    let ny = TimeZone::get("America/New_York").unwrap();
    assert_eq!(
        rfc3339(1_700_000_000_000_000_000, &ny),
        "2023-11-14T17:13:20-05:00"
    );
}

proptest! {
    #[test]
    fn any_bytes_after_a_header_are_read_or_refused(tail in proptest::collection::vec(any::<u8>(), 0..600)) {
        let mut data = Cap::new(false, false, Link::Ethernet, false).out;
        data.extend(tail);
        let _ = all(data);
    }

    #[test]
    fn any_payloads_in_a_conversation_never_panic(req in proptest::collection::vec(any::<u8>(), 0..200), res in proptest::collection::vec(any::<u8>(), 0..200)) {
        let mut c = Cap::new(false, false, Link::Ethernet, false);
        c.seg(0, true, 1, 0, SYN, b"");
        c.seg(0, false, 1, 0, SYN, b"");
        c.seg(1, true, 1, 1, ACK, &req);
        c.seg(2, false, 1, 1, ACK, &res);
        for e in all(c.out).unwrap() {
            prop_assert!(e.response_time.is_finite() && e.response_time >= 0.0);
        }
    }
}

/// Read through [`LtsvStream`] with one large buffer, a capture cut inside
/// its last record gives every line before the cut and then the error: the
/// stream fills the buffer with several lines, and the error met after
/// them is returned by the next read, not dropped.
#[test]
fn a_cut_capture_read_as_lines_keeps_the_lines_and_the_error() {
    use std::io::Read as _;
    let mut c = Cap::new(false, false, Link::Ethernet, false);
    conversation(&mut c);
    let data = c.out;
    let cut = data.len() - 3;
    let x = exchanges(std::io::Cursor::new(data[..cut].to_vec()), server()).unwrap();
    let mut stream = LtsvStream::new(x);
    let mut buf = vec![0u8; 1 << 16];
    let mut text = Vec::new();
    let err = loop {
        match stream.read(&mut buf) {
            Ok(0) => panic!("a cut capture ended without an error"),
            Ok(n) => text.extend_from_slice(&buf[..n]),
            Err(e) => break e,
        }
    };
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("truncated"), "{err}");
    let text = String::from_utf8(text).unwrap();
    // The third exchange's body ends with its connection, in the record cut.
    assert_eq!(text.lines().count(), 2, "{text}");
    assert!(text.contains("uri:/users/1?b=2&a=1\t"), "{text}");
    assert!(text.contains("uri:/items\t"), "{text}");
}
