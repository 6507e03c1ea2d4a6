//! Prints the findings of exported runs: `cargo run -p keisoku-findings
//! --example analyze -- run.json...` (from `keisoku export RUN --format json`).
//! Useful when tuning a rule against recorded runs.

fn main() {
    for path in std::env::args().skip(1) {
        let run: keisoku_store::RunJson = match std::fs::read(&path)
            .map_err(|e| e.to_string())
            .and_then(|b| serde_json::from_slice(&b).map_err(|e| e.to_string()))
        {
            Ok(r) => r,
            Err(e) => {
                eprintln!("{path}: {e}");
                std::process::exit(2);
            }
        };
        println!("== {path}");
        print!(
            "{}",
            keisoku_findings::render_text(&keisoku_findings::analyze(&run))
        );
    }
}
