//! Any bytes as a HAR file for `keisoku bench --replay`: no panic; every
//! request read has an upper-case method of letters, a target that goes on
//! the wire (starting with `/`, no spaces or control bytes), a route
//! without the query, and no header that describes one hop or that the
//! replay recomputes (Host, Content-Length, Connection, pseudo-headers).
#![no_main]
use libfuzzer_sys::fuzz_target;
use std::ops::ControlFlow;

fuzz_target!(|data: &[u8]| {
    for cookies in [false, true] {
        let _ = keisoku_load::replay::har::read(data, cookies, &mut |c| {
            assert!(!c.method.is_empty() && c.method.bytes().all(|b| b.is_ascii_uppercase()));
            assert!(c.target.starts_with('/'), "{:?}", c.target);
            assert!(!c.target.bytes().any(|b| b <= b' ' || b == 0x7f));
            assert!(!c.route.contains('?'));
            for (n, v) in &c.headers {
                let lower = n.to_ascii_lowercase();
                assert!(!lower.starts_with(':'));
                assert!(!["host", "content-length", "connection", "transfer-encoding"].contains(&lower.as_str()));
                assert!(!v.bytes().any(|b| b == b'\r' || b == b'\n'));
                assert!(cookies || lower != "cookie");
            }
            assert!(c.start.is_finite());
            ControlFlow::Continue(())
        });
    }
});
