//! Text from recordings shown in a terminal. Run names, tags, targets,
//! commands and frame names come from users, servers and profiled programs;
//! printed raw, an escape sequence in one can recolour the terminal, move
//! the cursor, rewrite earlier lines or set the window title. Every
//! terminal table and summary passes such text through [`terminal_safe`].

use std::borrow::Cow;

/// `text` with every character a terminal would act on written as a
/// visible escape: C0 controls (ESC, BEL, CR, LF, TAB, ...) and DEL as
/// `\x1b`-style, C1 controls and the bidirectional overrides and line
/// separators that reorder or split what is shown as `\u{202e}`-style.
/// Text without any is returned as is, without copying.
pub fn terminal_safe(text: &str) -> Cow<'_, str> {
    if !text.chars().any(needs_escape) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if !needs_escape(c) {
            out.push(c);
        } else if (c as u32) < 0x80 {
            out.push_str(&format!("\\x{:02x}", c as u32));
        } else {
            out.push_str(&format!("\\u{{{:x}}}", c as u32));
        }
    }
    Cow::Owned(out)
}

fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(c,
            // Bidirectional embeddings, overrides and isolates.
            '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}'
            // Line and paragraph separators.
            | '\u{2028}' | '\u{2029}')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_text_is_untouched_and_not_copied() {
        for s in [
            "checkout",
            "日本語 run",
            "a=b c",
            "std::vec::Vec<T>::push",
            "",
        ] {
            assert!(matches!(terminal_safe(s), Cow::Borrowed(x) if x == s));
        }
    }

    #[test]
    fn control_characters_become_visible() {
        assert_eq!(
            terminal_safe("\u{1b}]0;owned\u{7}x\u{1b}[2J"),
            "\\x1b]0;owned\\x07x\\x1b[2J"
        );
        assert_eq!(
            terminal_safe("a\nb\rc\td\u{7f}"),
            "a\\x0ab\\x0dc\\x09d\\x7f"
        );
        assert_eq!(terminal_safe("\u{9b}31m"), "\\u{9b}31m", "C1 CSI");
        assert_eq!(terminal_safe("abc\u{202e}fed"), "abc\\u{202e}fed");
        assert_eq!(terminal_safe("a\u{2028}b"), "a\\u{2028}b");
        let out = terminal_safe("\u{1b}\u{0}\u{9b}\u{2066}");
        assert!(!out.chars().any(needs_escape), "{out}");
    }
}
