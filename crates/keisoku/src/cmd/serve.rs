//! `keisoku serve`: browse the run store in a web browser.

use std::net::SocketAddr;
use std::path::PathBuf;

use crate::exit::{bad_input, OK};
use crate::shared::store::{store_error, StoreArg};
use keisoku_report::serve::{App, Limits, Removal, RunListing, RunSource, Server, Site};
use serde_json::Value;

/// Flags of `keisoku serve`.
#[derive(clap::Args, Debug)]
#[command(after_help = "\
Pages: / (every run; pick one to open, two to compare), /runs/RUN,
/compare?a=RUN&b=RUN[&gate=EXPR]. JSON: /api/runs, /api/runs/RUN,
/api/runs/RUN/series/NAME?from=S&to=S. The run list deletes runs
(DELETE /api/runs/RUN with the page's token; cross-site requests are
refused).

Listens on loopback unless told otherwise: the pages show everything
recorded (commands, targets, profiles). Requests must name the server in
Host: by an IP address, localhost, or a name given with --allow-host
(a page elsewhere whose name resolves to this machine is refused).
Connections idle for --idle-timeout are closed; at --max-connections the
one idle longest gives way, so idle sockets cannot lock out a request.

Examples:
  keisoku serve
  keisoku serve --addr 127.0.0.1:0    # any free port; the URL is printed
  keisoku serve --addr 0.0.0.0:7070 --allow-host lab.internal")]
pub struct Args {
    /// Address to listen on (port 0 picks a free port).
    #[arg(long, value_name = "HOST:PORT", default_value = "127.0.0.1:7070")]
    pub addr: String,

    /// Also answer requests whose Host: is NAME (repeatable), e.g. the
    /// machine's DNS name when serving a team.
    #[arg(long = "allow-host", value_name = "NAME")]
    pub allow_host: Vec<String>,

    /// Most connections held open while they send their request.
    #[arg(long, value_name = "N", default_value_t = 1024,
          value_parser = clap::value_parser!(u32).range(1..=1_000_000))]
    pub max_connections: u32,

    /// Close a connection that sends nothing for this long.
    #[arg(long, value_name = "DUR", default_value = "10s")]
    pub idle_timeout: String,

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

/// Errors (transport plus 5xx, as the SLO counts them) and the SLO verdict
/// from a run's stored results.
fn outcome(results: &Value, l: &mut RunListing) {
    let count = |p: &str| results.pointer(p).and_then(Value::as_u64);
    if let Some(requests) = count("/requests") {
        // The sum by kind, not `errors`, so 5xx are never counted twice
        // whatever `errors` comes to include.
        let transport = results
            .get("errors_by_kind")
            .and_then(Value::as_object)
            .map(|kinds| kinds.values().filter_map(Value::as_u64).sum())
            .or_else(|| count("/errors"))
            .unwrap_or(0);
        let errors = transport + count("/status/5xx").unwrap_or(0);
        let attempts = requests + transport;
        l.requests = Some(requests);
        l.errors = Some(errors);
        l.error_rate_pct = Some(if attempts == 0 {
            0.0
        } else {
            errors as f64 * 100.0 / attempts as f64
        });
    }
    if let Some(slo) = results.get("slo").filter(|v| v.is_object()) {
        l.slo_pass = slo.get("pass").and_then(Value::as_bool);
        l.slo_failed = slo
            .get("clauses")
            .and_then(Value::as_array)
            .map(|cs| {
                cs.iter()
                    .filter(|c| c.get("pass").and_then(Value::as_bool) == Some(false))
                    .filter_map(|c| c.get("clause").and_then(Value::as_str))
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
    }
}

impl RunSource for StoreSource {
    fn list(&self) -> Result<Vec<RunListing>, String> {
        let db = self.open()?;
        let runs = db.list().map_err(|e| e.to_string())?;
        Ok(runs
            .into_iter()
            .map(|r| {
                // A run whose results cannot be read still lists.
                let results = db.results(&r.id).unwrap_or(Value::Null);
                let mut l = RunListing {
                    id: r.id,
                    name: r.name,
                    started_unix_ms: r.started_unix_ms as f64,
                    duration_ms: r.duration_ms,
                    target: r.target.unwrap_or_default(),
                    status: r.status,
                    rps: r.rps,
                    p99_ms: r.p99_ms,
                    tags: r.tags,
                    ..Default::default()
                };
                outcome(&results, &mut l);
                l
            })
            .collect())
    }

    fn remove(&self, id: &str) -> Result<Removal, String> {
        let db = self.open()?;
        let info = match db.run_info(id) {
            Ok(info) => info,
            Err(e) if e.is_user_error() => return Ok(Removal::Missing),
            Err(e) => return Err(e.to_string()),
        };
        if info.status == "running" {
            return Ok(Removal::Running);
        }
        match db.remove(id).map_err(|e| e.to_string())? {
            true => Ok(Removal::Removed),
            false => Ok(Removal::Missing),
        }
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
    let idle_timeout = keisoku_common::parse_duration(&args.idle_timeout)
        .ok()
        .filter(|d| !d.is_zero())
        .ok_or_else(|| {
            bad_input(format!(
                "--idle-timeout {:?} is not a positive duration (e.g. 10s, 500ms)",
                args.idle_timeout
            ))
        })?;
    let limits = Limits {
        max_connections: connection_cap(args.max_connections as usize),
        idle_timeout,
        request_timeout: Limits::default().request_timeout.max(idle_timeout),
        ..Limits::default()
    };
    let server = Server::bind(&addr.to_string(), limits)?;
    let site = Site::new(server.addr(), &args.allow_host);
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
    let source = StoreSource { path };
    server.run(&App::new(&source, &site));
    Ok(OK)
}

/// The connection cap, kept under the open-files limit (raised to the hard
/// limit when allowed) so accepting never runs out of descriptors first.
fn connection_cap(wanted: usize) -> usize {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit only read and write the struct given.
    let soft = unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return wanted.min(512);
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim.rlim_cur = lim.rlim_max;
            }
        }
        lim.rlim_cur
    };
    // Room for the store, the listener and the poller.
    let room = usize::try_from(soft)
        .unwrap_or(usize::MAX)
        .saturating_sub(64);
    wanted.min(room.max(1))
}
