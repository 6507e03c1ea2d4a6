//! Any text as a `keisoku bench --scenario FILE` (YAML): no panic; a file
//! that compiles has its once block and iteration as steps, each with a
//! name, a method and a path that starts with `/`, and every refusal names
//! the file and a line (`--scenario FILE:LINE: ...`).
//!
//! Compiling resolves each step's host once, so only texts whose URLs name
//! literal addresses or `localhost` are compiled: a fuzzer must not send
//! name lookups to the network. The base is a literal loopback address.
#![no_main]
use libfuzzer_sys::fuzz_target;

/// Whether compiling `text` could look a name up.
fn looks_up_names(text: &str) -> bool {
    text.match_indices("://").any(|(i, _)| {
        let host: String = text[i + 3..]
            .chars()
            .take_while(|c| !matches!(c, '/' | ':' | '?' | '#' | '\'' | '"' | ' ' | '\n'))
            .collect();
        host != "localhost"
            && host.trim_matches(['[', ']']).parse::<std::net::IpAddr>().is_err()
    }) || text.contains("base")
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The shape alone never looks anything up.
    let _ = keisoku_load::scenario::file::parse(text);
    if looks_up_names(text) {
        return;
    }
    match keisoku_load::scenario::Scenario::compile("fuzz.yaml", text, Some("http://127.0.0.1:1")) {
        Ok(s) => {
            assert!(!s.steps.is_empty() && s.once < s.steps.len());
            for st in &s.steps {
                assert!(!st.name.is_empty());
                assert!(!st.target.method.is_empty());
                assert!(st.target.path.starts_with('/'), "{}", st.target.path);
            }
        }
        Err(e) => {
            let m = e.to_string();
            assert!(m.contains("--scenario fuzz.yaml:"), "{m}");
        }
    }
});
