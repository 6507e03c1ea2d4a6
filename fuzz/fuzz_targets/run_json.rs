//! Any text as a Run JSON given to `keisoku report FILE` (and served by
//! `keisoku serve`): no panic; a page made from it holds no more `</script`
//! or `<!--` than the page of an empty run (the run's text, names and
//! tags included, is embedded escaped, issue 15 item 6).
#![no_main]
use keisoku_report::run_page::{run_page, PageContext};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn counts(html: &str) -> (usize, usize) {
    let lower = html.to_ascii_lowercase();
    (
        lower.matches("</script").count(),
        lower.matches("<!--").count(),
    )
}

/// The page of an empty run: what the template itself holds.
fn template() -> Option<(usize, usize)> {
    static T: OnceLock<Option<(usize, usize)>> = OnceLock::new();
    *T.get_or_init(|| {
        run_page(r#"{"version":1,"run":{}}"#, &PageContext::default())
            .ok()
            .map(|h| counts(&h))
    })
}

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(html) = run_page(text, &PageContext::default()) else {
        return;
    };
    if let Some(base) = template() {
        assert_eq!(
            counts(&html),
            base,
            "the run's text broke out of its script"
        );
    }
});
