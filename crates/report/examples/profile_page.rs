//! Writes the flame graph or heat map page of a profile JSON file exactly
//! as `keisoku flame`/`keisoku scope` would, for benchmarks and tests that
//! build profiles directly (bench/flame-paint.mjs).
//!
//!     cargo run -p keisoku-report --example profile_page -- flame|scope PROFILE.json OUT.html

use keisoku_report::profile_pages::{flame_page, scope_page, ScopeView};
use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [kind, input, output] = args.as_slice() else {
        eprintln!("usage: profile_page flame|scope PROFILE.json OUT.html");
        return ExitCode::from(2);
    };
    let json = match std::fs::read_to_string(input) {
        Ok(j) => j,
        Err(e) => {
            eprintln!("profile_page: cannot read {input}: {e}");
            return ExitCode::from(2);
        }
    };
    let title = std::path::Path::new(input).file_stem().map_or_else(
        || "profile".to_string(),
        |s| s.to_string_lossy().into_owned(),
    );
    let page = match kind.as_str() {
        "flame" => flame_page(&title, &json),
        "scope" => scope_page(&title, &json, &ScopeView::default()),
        other => {
            eprintln!("profile_page: unknown page {other:?} (flame or scope)");
            return ExitCode::from(2);
        }
    };
    match page.map(|html| std::fs::write(output, html)) {
        Ok(Ok(())) => ExitCode::SUCCESS,
        Ok(Err(e)) => {
            eprintln!("profile_page: cannot write {output}: {e}");
            ExitCode::from(1)
        }
        Err(e) => {
            eprintln!("profile_page: {e}");
            ExitCode::from(1)
        }
    }
}
