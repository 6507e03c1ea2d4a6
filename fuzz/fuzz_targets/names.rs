//! Any text as a run, tag or frame name shown in a terminal
//! (`keisoku_common::terminal_safe`) and as a frame or module name
//! normalised for diff and compare (`keisoku_stacks::normalise`): no
//! panic; the terminal text holds no character a terminal acts on and is
//! the input itself when it needed no escape; a normalised name holds no
//! address of five or more hex digits.
#![no_main]
use keisoku_common::terminal_safe;
use keisoku_stacks::normalise;
use libfuzzer_sys::fuzz_target;

fn acted_on(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}')
}

/// `0x` and at least five hex digits.
fn has_address(s: &str) -> bool {
    s.match_indices("0x").any(|(i, _)| {
        s[i + 2..]
            .bytes()
            .take_while(|b| b.is_ascii_hexdigit())
            .count()
            >= 5
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let shown = terminal_safe(text);
    assert!(!shown.chars().any(acted_on), "{shown:?}");
    if !text.chars().any(acted_on) {
        assert_eq!(shown, text);
    }
    let name = normalise::name(text);
    assert!(!has_address(&name), "{text:?} -> {name:?}");
    let _ = normalise::module(text);
});
