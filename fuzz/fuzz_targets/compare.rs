//! Two Run JSONs (the input split at its first NUL byte) given to
//! `keisoku compare A B --fail-on-regression ...`: no panic in the
//! comparison, its gate, its terminal text or its page; and a page made
//! from them holds no more `</script` or `<!--` than the page of two empty
//! runs (the runs' text is embedded escaped).
#![no_main]
use keisoku_report::compare::parse_gate;
use keisoku_report::compare_page::{compare_page, compare_with, CompareOptions};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn counts(html: &str) -> (usize, usize) {
    let lower = html.to_ascii_lowercase();
    (
        lower.matches("</script").count(),
        lower.matches("<!--").count(),
    )
}

/// The page of two empty runs: what the template itself holds.
fn template() -> Option<(usize, usize)> {
    static T: OnceLock<Option<(usize, usize)>> = OnceLock::new();
    *T.get_or_init(|| {
        let empty = r#"{"version":1,"run":{}}"#;
        let cmp = compare_with(empty, empty, None, CompareOptions::default()).ok()?;
        compare_page(&cmp, false).ok().map(|h| counts(&h))
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let (a, b) = text.split_once('\0').unwrap_or((text, text));
    let gate = parse_gate("p99>+10%,rps<-5%,p50>+2ms,errors>0").expect("a valid gate");
    for normalise_names in [true, false] {
        let opts = CompareOptions { normalise_names };
        let Ok(cmp) = compare_with(a, b, Some(&gate), opts) else {
            return;
        };
        let _ = cmp.to_string();
        let _ = cmp.summary_json();
        let Ok(html) = compare_page(&cmp, false) else {
            return;
        };
        if let Some(base) = template() {
            assert_eq!(counts(&html), base, "a run's text broke out of its script");
        }
    }
});
