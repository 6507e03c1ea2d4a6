//! `keisoku serve`: browse the run store in a web browser.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::exit::{bad_input, OK};
use crate::shared::store::{store_error, StoreArg};
use keisoku_report::serve::{RunListing, RunSource, Server};

/// Flags of `keisoku serve`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Pages: / (every run; pick one to open, two to compare), /runs/RUN,
/compare?a=RUN&b=RUN[&gate=EXPR]. JSON: /api/runs, /api/runs/RUN,
/api/runs/RUN/series/NAME?from=S&to=S.

Listens on loopback unless told otherwise: the pages show everything
recorded (commands, targets, profiles).

Examples:
  keisoku serve
  keisoku serve --addr 127.0.0.1:0    # any free port; the URL is printed")]
pub struct Args {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:7070")]
    pub addr: String,

    #[command(flatten)]
    pub store: StoreArg,
}

/// The run store as the server's source; one connection per request so a
/// slow page does not block the list (SQLite WAL allows many readers).
struct StoreSource {
    path: PathBuf,
}

impl StoreSource {
    fn open(&self) -> Result<keisoku_store::Store, String> {
        keisoku_store::Store::open_existing(&self.path).map_err(|e| e.to_string())
    }
}

impl RunSource for StoreSource {
    fn list(&self) -> Result<Vec<RunListing>, String> {
        let runs = self.open()?.list().map_err(|e| e.to_string())?;
        Ok(runs
            .into_iter()
            .map(|r| RunListing {
                id: r.id,
                name: r.name,
                started_unix_ms: r.started_unix_ms as f64,
                duration_ms: r.duration_ms,
                target: r.target.unwrap_or_default(),
                status: r.status,
                rps: r.rps,
                p99_ms: r.p99_ms,
                tags: r.tags,
            })
            .collect())
    }

    fn load(&self, spec: &str) -> Result<Option<String>, String> {
        let db = self.open()?;
        let id = match db.resolve(spec) {
            Ok(id) => id,
            Err(e) if e.is_user_error() => return Ok(None),
            Err(e) => return Err(e.to_string()),
        };
        let run = db.load(&id).map_err(|e| e.to_string())?;
        serde_json::to_string(&run)
            .map(Some)
            .map_err(|e| e.to_string())
    }
}

pub fn run(args: Args) -> anyhow::Result<u8> {
    let addr: SocketAddr = args.addr.parse().map_err(|_| {
        bad_input(format!(
            "--addr {:?} is not HOST:PORT with an IP address (e.g. 127.0.0.1:7070)",
            args.addr
        ))
    })?;
    let path = args.store.path();
    // Fail now, not on the first request, when there is no store.
    keisoku_store::Store::open_existing(&path).map_err(store_error)?;
    let server = Server::bind(&addr.to_string())?;
    if !server.addr().ip().is_loopback() {
        eprintln!(
            "keisoku: warning: serving on {} — anyone who can reach it can read every run",
            server.addr()
        );
    }
    let stopper = server.stopper();
    // Ctrl-C answers the requests in flight, then exits cleanly.
    let _ = ctrlc::set_handler(move || stopper.stop());
    crate::shared::output::print(&format!(
        "keisoku serve: http://{}/  (store {}; Ctrl-C to stop)\n",
        server.addr(),
        path.display()
    ))?;
    server.run(&StoreSource { path });
    Ok(OK)
}
