//! Any bytes as what a client sent `keisoku serve` so far (its own HTTP
//! parser, crates/report/src/serve/http.rs): no panic; a request still
//! incomplete never needs more than a head and a body at their limits (a
//! client cannot make the server buffer without bound); a parsed request
//! has an upper-case method, header names without blanks or controls and
//! a body within the limit; a refusal is a 4xx or 505.
#![no_main]
use keisoku_report::serve::{parse_request, MAX_BODY, MAX_HEAD};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|buf: &[u8]| {
    match parse_request(buf) {
        None => assert!(
            buf.len() <= MAX_HEAD + 4 + MAX_BODY,
            "{} bytes still incomplete",
            buf.len()
        ),
        Some(Ok(req)) => {
            assert!(!req.method.is_empty());
            assert!(req.method.bytes().all(|b| b.is_ascii_uppercase()));
            assert!(req
                .headers
                .iter()
                .all(|(k, _)| !k.is_empty() && k.bytes().all(|b| b > b' ')));
            assert!(req.body.len() <= MAX_BODY);
            assert!(!req.target.contains(' '));
        }
        Some(Err(reply)) => assert!(
            (400..500).contains(&reply.status) || reply.status == 505,
            "refused with {}",
            reply.status
        ),
    }
});
