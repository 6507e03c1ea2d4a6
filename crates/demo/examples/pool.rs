//! Serves the demo target with its prefork-style pool, pinned or free, to
//! compare the two under a recorder (the `unpinned` knob's tuned side
//! otherwise keeps the event-loop workers):
//!
//! ```text
//! cargo run -p keisoku-demo --example pool -- 127.0.0.1:8080 pinned|free [WORKERS]
//! cargo run -p keisoku-demo --example pool -- body > bid.json
//! ```
//!
//! `body` prints a sample bid request to load it with. WORKERS is the pool
//! size (default: 4 per usable core).

use keisoku_demo::{DemoConfig, DemoServer, Knobs, Setting};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("body") {
        println!("{}", keisoku_demo::sample_requests(1).concat());
        return;
    }
    let (Some(listen), Some(mode)) = (args.first(), args.get(1)) else {
        eprintln!("usage: pool ADDR pinned|free [WORKERS], or pool body");
        std::process::exit(2);
    };
    let Ok(listen) = listen.parse() else {
        eprintln!("pool: `{listen}` is not an address like 127.0.0.1:8080");
        std::process::exit(2);
    };
    let unpinned = match mode.as_str() {
        "pinned" => Setting::Tuned,
        "free" => Setting::Naive,
        other => {
            eprintln!("pool: `{other}` is neither pinned nor free");
            std::process::exit(2);
        }
    };
    let workers = match args.get(2).map(|w| w.parse::<usize>()) {
        None => None,
        Some(Ok(n)) if n > 0 => Some(n),
        Some(_) => {
            eprintln!("pool: WORKERS must be a positive number");
            std::process::exit(2);
        }
    };
    let knobs = Knobs {
        unpinned,
        ..Knobs::all_tuned()
    };
    let config = DemoConfig {
        listen,
        knobs,
        prefork: true,
        workers,
        ..DemoConfig::default()
    };
    match DemoServer::start(&config) {
        Ok(handle) => {
            let s = handle.stats();
            println!(
                "prefork pool ({mode}) on {}: {} workers, {} pinned",
                handle.url(),
                s.workers,
                s.workers_pinned
            );
            loop {
                std::thread::park();
            }
        }
        Err(e) => {
            eprintln!("pool: {e}");
            std::process::exit(1);
        }
    }
}
