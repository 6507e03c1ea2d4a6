//! `keisoku serve`: a small HTTP server over the run store. It serves the
//! same pages as the files (`report`, `compare`) plus a run list, and JSON
//! for scripts. Every bad request gets a 4xx and a one-line message; no
//! request can stop the server.
//!
//! Routes (GET only):
//! - `/` the run list (pick one to open, two to compare)
//! - `/runs/ID[?from=S&to=S]` a run's report, optionally with a time range selected
//! - `/compare?a=ID&b=ID[&gate=EXPR]` the comparison page
//! - `/api/runs[?limit=N]` the run list as JSON
//! - `/api/runs/ID` the Run JSON
//! - `/api/runs/ID/series/NAME[?from=S&to=S]` one series' points in a range

use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;

use crate::compare;
use crate::compare_page;
use crate::run_page::{self, PageContext};
use crate::{assets, ReportError};

/// One line of the run list.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RunListing {
    /// The run's id.
    pub id: String,
    /// Its name ("" when unnamed).
    pub name: String,
    /// Wall-clock start, milliseconds since the Unix epoch.
    pub started_unix_ms: f64,
    /// Length in milliseconds.
    pub duration_ms: f64,
    /// What was loaded.
    pub target: String,
    /// `running`, `complete` or `interrupted`.
    pub status: String,
    /// Overall throughput, when load was driven.
    pub rps: Option<f64>,
    /// Overall p99 latency in ms, when load was driven.
    pub p99_ms: Option<f64>,
    /// The run's tags.
    pub tags: BTreeMap<String, String>,
}

/// Where the served runs come from (the run store in the binary; anything
/// in tests).
pub trait RunSource: Send + Sync {
    /// Every run, newest first.
    fn list(&self) -> Result<Vec<RunListing>, String>;
    /// One run's Run JSON by id (or anything else the source resolves),
    /// `Ok(None)` when there is no such run.
    fn load(&self, id: &str) -> Result<Option<String>, String>;
}

/// The longest URL answered; anything longer is a client error, not work.
const MAX_URL: usize = 8 * 1024;
/// The most runs one list request returns.
const MAX_LIMIT: usize = 100_000;

/// A bound server; [`Server::run`] answers requests until [`Stopper::stop`].
pub struct Server {
    http: Arc<tiny_http::Server>,
    addr: SocketAddr,
}

/// Stops a running [`Server`] from another thread.
#[derive(Clone)]
pub struct Stopper(Arc<tiny_http::Server>);

impl Stopper {
    /// Makes [`Server::run`] return once the requests in flight are answered.
    pub fn stop(&self) {
        // One unblock per worker thread.
        for _ in 0..WORKERS {
            self.0.unblock();
        }
    }
}

const WORKERS: usize = 4;

impl Server {
    /// Listens on `addr` (`127.0.0.1:7070`; port 0 picks a free one).
    pub fn bind(addr: &str) -> Result<Self, ReportError> {
        let bind_err = |reason: String| ReportError::Bind {
            addr: addr.to_string(),
            reason,
        };
        let http = tiny_http::Server::http(addr).map_err(|e| bind_err(e.to_string()))?;
        let bound = http
            .server_addr()
            .to_ip()
            .ok_or_else(|| bind_err("not an IP address".into()))?;
        Ok(Server {
            http: Arc::new(http),
            addr: bound,
        })
    }

    /// The address actually bound (useful with port 0).
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// A handle that stops [`Server::run`].
    pub fn stopper(&self) -> Stopper {
        Stopper(Arc::clone(&self.http))
    }

    /// Answers requests on a few threads until stopped. A slow page (a big
    /// run) does not hold up the run list.
    pub fn run(&self, source: &dyn RunSource) {
        std::thread::scope(|scope| {
            for _ in 0..WORKERS {
                scope.spawn(|| {
                    while let Ok(req) = self.http.recv() {
                        let reply = respond(source, req.method(), req.url());
                        let mut response = tiny_http::Response::from_data(reply.body)
                            .with_status_code(reply.status);
                        if let Ok(h) =
                            tiny_http::Header::from_bytes(&b"Content-Type"[..], reply.content_type)
                        {
                            response = response.with_header(h);
                        }
                        if let Ok(h) =
                            tiny_http::Header::from_bytes(&b"Cache-Control"[..], &b"no-store"[..])
                        {
                            response = response.with_header(h);
                        }
                        // The client may have gone; nothing to do about it.
                        let _ = req.respond(response);
                    }
                });
            }
        });
    }
}

/// A response before it goes on the wire.
#[derive(Debug)]
pub struct Reply {
    /// HTTP status.
    pub status: u16,
    /// MIME type.
    pub content_type: &'static str,
    /// Body bytes.
    pub body: Vec<u8>,
}

impl Reply {
    fn html(body: String) -> Reply {
        Reply {
            status: 200,
            content_type: "text/html; charset=utf-8",
            body: body.into_bytes(),
        }
    }

    fn json(body: String) -> Reply {
        Reply {
            status: 200,
            content_type: "application/json",
            body: body.into_bytes(),
        }
    }

    fn error(status: u16, msg: impl Into<String>) -> Reply {
        let mut body = msg.into();
        body.push('\n');
        Reply {
            status,
            content_type: "text/plain; charset=utf-8",
            body: body.into_bytes(),
        }
    }
}

/// Answers one request; pure apart from reading `source`, so tests can
/// drive it without sockets.
pub fn respond(source: &dyn RunSource, method: &tiny_http::Method, url: &str) -> Reply {
    if !matches!(method, tiny_http::Method::Get | tiny_http::Method::Head) {
        return Reply::error(405, format!("method {method} not allowed; use GET"));
    }
    if url.len() > MAX_URL {
        return Reply::error(414, format!("URL longer than {MAX_URL} bytes"));
    }
    let (path, query) = url.split_once('?').unwrap_or((url, ""));
    let query = match parse_query(query) {
        Ok(q) => q,
        Err(e) => return Reply::error(400, e),
    };
    let segments: Result<Vec<String>, String> = path
        .split('/')
        .filter(|s| !s.is_empty())
        .map(percent_decode)
        .collect();
    let segments = match segments {
        Ok(s) => s,
        Err(e) => return Reply::error(400, e),
    };
    let segs: Vec<&str> = segments.iter().map(String::as_str).collect();
    let result = match segs.as_slice() {
        [] => index(source),
        // Browsers ask on their own; an empty answer keeps consoles quiet.
        ["favicon.ico"] => Ok(Reply {
            status: 204,
            content_type: "image/x-icon",
            body: Vec::new(),
        }),
        ["runs", id] => report(source, id, &query),
        ["compare"] => compare_runs(source, &query),
        ["api", "runs"] => api_list(source, &query),
        ["api", "runs", id] => load(source, id).map(Reply::json),
        ["api", "runs", id, "series", name] => api_series(source, id, name, &query),
        _ => Err(Reply::error(404, format!("no page at {path}"))),
    };
    result.unwrap_or_else(|reply| reply)
}

type Answer = Result<Reply, Reply>;

fn index(source: &dyn RunSource) -> Answer {
    let runs = source.list().map_err(|e| Reply::error(500, e))?;
    let data = json!({ "runs": runs }).to_string();
    assets::page("keisoku runs", "serve", &data)
        .map(Reply::html)
        .ok_or_else(|| Reply::error(500, "the web bundle has no serve page"))
}

fn load(source: &dyn RunSource, id: &str) -> Result<String, Reply> {
    match source.load(id) {
        Ok(Some(json)) => Ok(json),
        Ok(None) => Err(Reply::error(404, format!("no run {id:?} in the store"))),
        Err(e) => Err(Reply::error(500, e)),
    }
}

fn report(source: &dyn RunSource, id: &str, query: &Query) -> Answer {
    let json = load(source, id)?;
    let range_ms = match (query.get("from"), query.get("to")) {
        (None, None) => None,
        (Some(_), None) | (None, Some(_)) => {
            return Err(Reply::error(400, "give both from and to (seconds)"))
        }
        (Some(_), Some(_)) => {
            let duration = serde_json::from_str::<Value>(&json)
                .ok()
                .and_then(|v| v.pointer("/run/duration_ms").and_then(Value::as_f64))
                .unwrap_or(f64::INFINITY);
            Some(range(query, duration)?)
        }
    };
    let ctx = PageContext {
        served: true,
        range_ms,
    };
    run_page::run_page(&json, &ctx)
        .map(Reply::html)
        .map_err(|e| Reply::error(422, format!("run {id:?}: {e}")))
}

fn compare_runs(source: &dyn RunSource, query: &Query) -> Answer {
    let (Some(a), Some(b)) = (query.get("a"), query.get("b")) else {
        return Err(Reply::error(
            400,
            "compare needs two runs: /compare?a=RUN&b=RUN",
        ));
    };
    let gate = match query.get("gate").filter(|g| !g.trim().is_empty()) {
        Some(g) => Some(compare::parse_gate(g).map_err(|e| Reply::error(400, e.to_string()))?),
        None => None,
    };
    let (ja, jb) = (load(source, a)?, load(source, b)?);
    let cmp = compare_page::compare(&ja, &jb, gate.as_deref())
        .map_err(|e| Reply::error(422, e.to_string()))?;
    compare_page::compare_page(&cmp, true)
        .map(Reply::html)
        .map_err(|e| Reply::error(500, e.to_string()))
}

fn api_list(source: &dyn RunSource, query: &Query) -> Answer {
    let mut runs = source.list().map_err(|e| Reply::error(500, e))?;
    if let Some(limit) = query.get("limit") {
        let n: usize = limit
            .parse()
            .map_err(|_| Reply::error(400, format!("limit {limit:?} is not a count")))?;
        if n == 0 || n > MAX_LIMIT {
            return Err(Reply::error(
                400,
                format!("limit must be between 1 and {MAX_LIMIT}"),
            ));
        }
        runs.truncate(n);
    }
    serde_json::to_string(&runs)
        .map(Reply::json)
        .map_err(|e| Reply::error(500, e.to_string()))
}

fn api_series(source: &dyn RunSource, id: &str, name: &str, query: &Query) -> Answer {
    let json = load(source, id)?;
    let run: Value =
        serde_json::from_str(&json).map_err(|e| Reply::error(422, format!("run {id:?}: {e}")))?;
    let duration = run
        .pointer("/run/duration_ms")
        .and_then(Value::as_f64)
        .unwrap_or(f64::INFINITY);
    let (from, to) = if query.get("from").is_some() || query.get("to").is_some() {
        range(query, duration)?
    } else {
        (f64::NEG_INFINITY, f64::INFINITY)
    };
    let series = run
        .get("series")
        .and_then(Value::as_array)
        .and_then(|all| {
            all.iter()
                .find(|s| s.get("name").and_then(Value::as_str) == Some(name))
        })
        .ok_or_else(|| Reply::error(404, format!("run {id:?} has no series {name:?}")))?;
    let empty = Vec::new();
    let t = series
        .get("t_ms")
        .and_then(Value::as_array)
        .unwrap_or(&empty);
    let v = series.get("v").and_then(Value::as_array).unwrap_or(&empty);
    let (mut ts, mut vs) = (Vec::new(), Vec::new());
    for (ti, vi) in t.iter().zip(v) {
        if let Some(x) = ti.as_f64().filter(|x| (from..=to).contains(x)) {
            ts.push(x);
            vs.push(vi.clone());
        }
    }
    let out = json!({"name": name, "unit": series.get("unit"), "t_ms": ts, "v": vs});
    Ok(Reply::json(out.to_string()))
}

/// Reads `from`/`to` (seconds since the run's start) into milliseconds,
/// refusing ranges that are malformed, inverted or far outside the run.
fn range(query: &Query, duration_ms: f64) -> Result<(f64, f64), Reply> {
    let secs = |key: &str| -> Result<f64, Reply> {
        let raw = query
            .get(key)
            .ok_or_else(|| Reply::error(400, format!("missing {key} (seconds)")))?;
        let x: f64 = raw
            .trim_end_matches('s')
            .parse()
            .map_err(|_| Reply::error(400, format!("{key}={raw:?} is not a number of seconds")))?;
        if !x.is_finite() {
            return Err(Reply::error(400, format!("{key}={raw:?} is not finite")));
        }
        Ok(x * 1000.0)
    };
    let (from, to) = (secs("from")?, secs("to")?);
    if from < 0.0 || to <= from {
        return Err(Reply::error(
            400,
            format!("range {}..{} s is empty or negative", from / 1e3, to / 1e3),
        ));
    }
    // A little slack: the last sample may land just after the nominal end.
    let limit = duration_ms + 60_000.0;
    if to > limit {
        return Err(Reply::error(
            416,
            format!(
                "range {}..{} s lies outside the run (0..{} s)",
                from / 1e3,
                to / 1e3,
                (duration_ms / 1e3).ceil()
            ),
        ));
    }
    Ok((from, to))
}

/// Decoded query parameters; repeated keys keep the last value.
type Query = BTreeMap<String, String>;

fn parse_query(q: &str) -> Result<Query, String> {
    let mut out = Query::new();
    for pair in q.split('&').filter(|p| !p.is_empty()) {
        let (k, v) = pair.split_once('=').unwrap_or((pair, ""));
        let k = percent_decode(&k.replace('+', " "))?;
        let v = percent_decode(&v.replace('+', " "))?;
        out.insert(k, v);
    }
    Ok(out)
}

fn percent_decode(s: &str) -> Result<String, String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = bytes
                .get(i + 1..i + 3)
                .and_then(|h| std::str::from_utf8(h).ok())
                .and_then(|h| u8::from_str_radix(h, 16).ok())
                .ok_or_else(|| format!("bad percent escape in {s:?}"))?;
            out.push(hex);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).map_err(|_| format!("{s:?} is not UTF-8 once decoded"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use tiny_http::Method;

    struct Fixed(Vec<(RunListing, String)>);

    impl RunSource for Fixed {
        fn list(&self) -> Result<Vec<RunListing>, String> {
            Ok(self.0.iter().map(|(l, _)| l.clone()).collect())
        }
        fn load(&self, id: &str) -> Result<Option<String>, String> {
            Ok(self
                .0
                .iter()
                .find(|(l, _)| l.id == id)
                .map(|(_, j)| j.clone()))
        }
    }

    fn source() -> Fixed {
        let run = |id: &str, p99: f64| {
            (
                RunListing {
                    id: id.into(),
                    name: format!("name-{id}"),
                    ..Default::default()
                },
                json!({"version": 1, "run": {"id": id, "duration_ms": 10000.0},
                       "results": {"rps": 10.0, "latency_ms": {"p99": p99}},
                       "series": [{"name": "client.rps", "unit": "req/s",
                                   "t_ms": [0, 1000, 2000, 3000], "v": [1, 2, 3, 4]}],
                       "routes": {"client": [], "access_log": []}})
                .to_string(),
            )
        };
        Fixed(vec![run("a1", 10.0), run("b2", 20.0)])
    }

    fn get(url: &str) -> Reply {
        respond(&source(), &Method::Get, url)
    }

    fn text(r: &Reply) -> String {
        String::from_utf8_lossy(&r.body).into_owned()
    }

    #[test]
    fn pages_and_api_answer() {
        let r = get("/");
        assert_eq!(r.status, 200);
        assert!(text(&r).contains("name-a1"));
        assert_eq!(get("/runs/a1").status, 200);
        assert_eq!(get("/favicon.ico").status, 204);
        assert_eq!(get("/runs/a1?from=1&to=2").status, 200);
        assert_eq!(get("/compare?a=a1&b=b2&gate=p99%3E%2B10%25").status, 200);
        let list: Value = serde_json::from_slice(&get("/api/runs?limit=1").body).unwrap();
        assert_eq!(list.as_array().unwrap().len(), 1);
        let s: Value =
            serde_json::from_slice(&get("/api/runs/a1/series/client.rps?from=1&to=2").body)
                .unwrap();
        assert_eq!(s["v"], json!([2, 3]));
    }

    #[test]
    fn bad_requests_get_4xx_with_a_message() {
        for (url, status, words) in [
            ("/runs/nope", 404, "no run"),
            ("/compare?a=a1", 400, "two runs"),
            ("/compare?a=a1&b=zz", 404, "no run"),
            ("/compare?a=a1&b=b2&gate=p99", 400, "gate"),
            ("/runs/a1?from=x&to=2", 400, "not a number"),
            ("/runs/a1?from=1", 400, "both"),
            ("/runs/a1?from=5&to=1", 400, "empty"),
            ("/runs/a1?from=0&to=1e300", 416, "outside"),
            ("/runs/a1?from=0&to=inf", 400, "finite"),
            ("/api/runs?limit=-1", 400, "limit"),
            ("/api/runs?limit=0", 400, "limit"),
            ("/api/runs/a1/series/nope", 404, "no series"),
            (
                "/api/runs/a1/series/client.rps?from=0&to=1e12",
                416,
                "outside",
            ),
            ("/runs/%zz", 400, "percent"),
            ("/runs/a1?x=%ff", 400, "UTF-8"),
            ("/nowhere", 404, "no page"),
        ] {
            let r = get(url);
            assert_eq!(r.status, status, "{url}: {}", text(&r));
            assert!(text(&r).contains(words), "{url}: {}", text(&r));
        }
        let long = format!("/runs/{}", "a".repeat(MAX_URL));
        assert_eq!(get(&long).status, 414);
        assert_eq!(respond(&source(), &Method::Post, "/").status, 405);
    }

    #[test]
    fn serves_over_http_and_stops() {
        use std::io::{Read, Write};
        let server = Server::bind("127.0.0.1:0").unwrap();
        let addr = server.addr();
        let stopper = server.stopper();
        let src = source();
        std::thread::scope(|s| {
            s.spawn(|| server.run(&src));
            let mut c = std::net::TcpStream::connect(addr).unwrap();
            c.write_all(b"GET /runs/missing HTTP/1.0\r\nHost: x\r\n\r\n")
                .unwrap();
            let mut resp = String::new();
            c.read_to_string(&mut resp).unwrap();
            assert!(resp.starts_with("HTTP/1.0 404") || resp.starts_with("HTTP/1.1 404"));
            assert!(resp.contains("no run \"missing\""));
            stopper.stop();
        });
    }
}
