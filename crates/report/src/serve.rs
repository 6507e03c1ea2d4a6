//! `keisoku serve`: a small HTTP server over the run store. It serves the
//! same pages as the files (`report`, `compare`) plus a run list with a
//! trend per run name, and JSON for scripts. Every bad request gets a 4xx
//! and a one-line message; no request can stop the server.
//!
//! Routes (GET unless said):
//! - `/` the run list (trend per name, pick one to open, two to compare)
//! - `/runs/ID[?from=S&to=S]` a run's report, optionally with a time range selected
//! - `/compare?a=ID&b=ID[&gate=EXPR]` the comparison page
//! - `/api/runs[?limit=N]` the run list as JSON
//! - `/api/runs/ID` the Run JSON
//! - `/api/runs/ID/series/NAME[?from=S&to=S]` one series' points in a range
//! - `DELETE /api/runs/ID` (or `POST /api/runs/ID/delete`) deletes a run;
//!   only with the page's token in `X-Keisoku-Token` and, when the browser
//!   sends them, a same-origin `Origin` and `Sec-Fetch-Site`
//!
//! Every request must name this server in `Host:` (its address, an IP
//! literal, `localhost` or a name given with `--allow-host`): a page on
//! another site whose name was rebound to 127.0.0.1 is refused, since the
//! stored runs hold command lines and headers.

mod http;

#[doc(hidden)]
pub use http::{parse_request, MAX_BODY, MAX_HEAD};
pub use http::{Handler, Limits, Reply, Request, Server, Stopper};

use serde::Serialize;
use serde_json::{json, Value};
use std::collections::BTreeMap;
use std::net::SocketAddr;

use crate::assets;
use crate::compare;
use crate::compare_page;
use crate::run_page::{self, PageContext};

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
    /// Responses received, when load was driven.
    pub requests: Option<u64>,
    /// Failures as the SLO counts them (transport errors plus HTTP 5xx),
    /// when load was driven.
    pub errors: Option<u64>,
    /// `errors` as a percentage of attempts.
    pub error_rate_pct: Option<f64>,
    /// The SLO verdict over the whole run; `None` when no SLO was given.
    pub slo_pass: Option<bool>,
    /// The SLO clauses that failed, as written.
    pub slo_failed: Vec<String>,
}

/// What deleting a run came to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    /// The run and everything recorded with it are gone.
    Removed,
    /// No such run.
    Missing,
    /// The run is still being recorded; deleting it would lose the result.
    Running,
}

/// Where the served runs come from (the run store in the binary; anything
/// in tests).
pub trait RunSource: Send + Sync {
    /// Every run, newest first.
    fn list(&self) -> Result<Vec<RunListing>, String>;
    /// One run's Run JSON by id (or anything else the source resolves),
    /// `Ok(None)` when there is no such run.
    fn load(&self, id: &str) -> Result<Option<String>, String>;
    /// Deletes one run by its exact id.
    fn remove(&self, id: &str) -> Result<Removal, String>;
}

/// The longest URL answered; anything longer is a client error, not work.
const MAX_URL: usize = 8 * 1024;
/// The most runs one list request returns.
const MAX_LIMIT: usize = 100_000;
/// The header a delete must carry, holding [`Site::token`].
pub const TOKEN_HEADER: &str = "X-Keisoku-Token";

/// Who may talk to this server: the names it answers to and the secret the
/// run list page carries for deletes.
#[derive(Debug, Clone)]
pub struct Site {
    port: u16,
    names: Vec<String>,
    token: String,
}

impl Site {
    /// A site for a server bound to `addr`, answering also to `allow_hosts`
    /// (names, with or without `:port`), with a fresh random token.
    pub fn new(addr: SocketAddr, allow_hosts: &[String]) -> Site {
        let names = allow_hosts
            .iter()
            .map(|h| {
                let (name, _) = split_host(h.trim());
                name.to_ascii_lowercase()
            })
            .filter(|n| !n.is_empty())
            .collect();
        Site {
            port: addr.port(),
            names,
            token: random_hex(16),
        }
    }

    /// The token deletes must carry (placed in the run list page).
    pub fn token(&self) -> &str {
        &self.token
    }

    /// Whether a `Host:` header names this server. IP literals cannot be
    /// rebound, `localhost` is the machine itself; any other name must have
    /// been given with `--allow-host`. The port must be the bound one.
    pub fn host_allowed(&self, host: &str) -> bool {
        let (name, port) = split_host(host.trim());
        let port_ok = match port {
            Some(p) => p.parse::<u16>().ok() == Some(self.port),
            None => self.port == 80,
        };
        let name = name.trim_end_matches('.').to_ascii_lowercase();
        let bare = name.trim_start_matches('[').trim_end_matches(']');
        let name_ok = bare.parse::<std::net::IpAddr>().is_ok()
            || name == "localhost"
            || self.names.contains(&name);
        port_ok && name_ok
    }

    /// Why a state-changing request is refused, if it is: the page's token
    /// must be present, and a browser's own provenance headers (which a
    /// page cannot forge) must say same origin.
    fn cross_site(&self, req: &Request) -> Option<String> {
        if let Some(site) = req.header("Sec-Fetch-Site") {
            if !site.eq_ignore_ascii_case("same-origin") {
                return Some(format!("refused: a {site} request may not change runs"));
            }
        }
        if let Some(origin) = req.header("Origin") {
            let own = req.header("Host").map(|h| format!("http://{h}"));
            if own.as_deref() != Some(origin) {
                return Some(format!("refused: origin {origin:?} may not change runs"));
            }
        }
        match req.header(TOKEN_HEADER) {
            Some(t) if constant_time_eq(t.as_bytes(), self.token.as_bytes()) => None,
            Some(_) => Some(format!(
                "refused: wrong {TOKEN_HEADER}; reload the run list"
            )),
            None => Some(format!(
                "refused: a delete needs the {TOKEN_HEADER} header from the run list page"
            )),
        }
    }
}

/// Splits `name:port` and `[v6]:port`.
fn split_host(host: &str) -> (&str, Option<&str>) {
    if host.starts_with('[') {
        return match host.find(']') {
            Some(i) => {
                let rest = &host[i + 1..];
                (&host[..=i], rest.strip_prefix(':'))
            }
            None => (host, None),
        };
    }
    match host.rsplit_once(':') {
        // More than one colon without brackets: a bare IPv6 address.
        Some((name, _)) if name.contains(':') => (host, None),
        Some((name, port)) => (name, Some(port)),
        None => (host, None),
    }
}

fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// `n` random bytes as hex, from the kernel; if that cannot be read, from
/// the standard library's randomly seeded hasher (still unguessable from
/// another origin, which is what the token and nonces need).
fn random_hex(n: usize) -> String {
    use std::io::Read;
    let mut bytes = vec![0u8; n];
    let from_kernel = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut bytes))
        .is_ok();
    if !from_kernel {
        use std::hash::{BuildHasher, Hasher};
        for chunk in bytes.chunks_mut(8) {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_u128(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos()),
            );
            let v = h.finish().to_le_bytes();
            chunk.copy_from_slice(&v[..chunk.len()]);
        }
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// The server's request handler: the run source and the site's rules.
pub struct App<'a> {
    source: &'a dyn RunSource,
    site: &'a Site,
}

impl<'a> App<'a> {
    /// Serves `source` under `site`'s rules.
    pub fn new(source: &'a dyn RunSource, site: &'a Site) -> App<'a> {
        App { source, site }
    }
}

impl Handler for App<'_> {
    fn handle(&self, req: &Request) -> Reply {
        let mut reply = respond(self.source, self.site, req);
        secure(&mut reply);
        reply
    }
}

/// Headers every answer carries. Pages are self-contained: scripts run
/// only with the page's nonce, nothing loads from elsewhere, no site may
/// frame them, and nothing is sniffed into another type.
fn secure(reply: &mut Reply) {
    let csp = match reply.headers.iter().position(|(k, _)| *k == "X-Nonce") {
        Some(i) => {
            let (_, nonce) = reply.headers.remove(i);
            format!(
                "default-src 'none'; script-src 'nonce-{nonce}'; style-src 'unsafe-inline'; \
img-src 'self' data: blob:; font-src data:; connect-src 'self'; form-action 'self'; \
base-uri 'none'; frame-ancestors 'none'"
            )
        }
        None => "default-src 'none'; frame-ancestors 'none'; sandbox".to_string(),
    };
    reply.headers.push(("Content-Security-Policy", csp));
    reply
        .headers
        .push(("X-Content-Type-Options", "nosniff".into()));
    reply.headers.push(("X-Frame-Options", "DENY".into()));
    reply
        .headers
        .push(("Referrer-Policy", "no-referrer".into()));
    reply
        .headers
        .push(("Cross-Origin-Opener-Policy", "same-origin".into()));
    reply
        .headers
        .push(("Cross-Origin-Resource-Policy", "same-origin".into()));
    reply.headers.push(("Cache-Control", "no-store".into()));
}

fn html(body: String) -> Reply {
    // The page's one executable script follows the data element, whose
    // JSON holds no `<` (assets::escape_json_in_script): the first
    // "</script>\n<script>" is where it starts.
    let nonce = random_hex(16);
    let body = body.replacen(
        "</script>\n<script>",
        &format!("</script>\n<script nonce=\"{nonce}\">"),
        1,
    );
    Reply {
        status: 200,
        content_type: "text/html; charset=utf-8",
        headers: vec![("X-Nonce", nonce)],
        body: body.into_bytes(),
    }
}

fn json_reply(body: String) -> Reply {
    Reply {
        status: 200,
        content_type: "application/json",
        headers: Vec::new(),
        body: body.into_bytes(),
    }
}

/// Answers one request; pure apart from reading (and, for a delete,
/// changing) `source`, so tests can drive it without sockets.
pub fn respond(source: &dyn RunSource, site: &Site, req: &Request) -> Reply {
    match req.header("Host") {
        Some(host) if site.host_allowed(host) => {}
        Some(host) => {
            return Reply::error(
                421,
                format!(
                    "Host {host:?} is not this server; open it by its address, or start serve with --allow-host NAME"
                ),
            )
        }
        None => return Reply::error(400, "a Host header is required"),
    }
    let url = req.target.as_str();
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
    let method = req.method.as_str();
    let result = match (method, segs.as_slice()) {
        ("DELETE", ["api", "runs", id]) | ("POST", ["api", "runs", id, "delete"]) => {
            delete(source, site, req, id)
        }
        ("GET" | "HEAD", segs) => get(source, site, segs, path, &query),
        _ => Err(Reply::error(
            405,
            format!("method {method} not allowed here; use GET (deletes: DELETE /api/runs/RUN)"),
        )),
    };
    result.unwrap_or_else(|reply| reply)
}

fn get(source: &dyn RunSource, site: &Site, segs: &[&str], path: &str, query: &Query) -> Answer {
    match segs {
        [] => index(source, site),
        // Browsers ask on their own; an empty answer keeps consoles quiet.
        ["favicon.ico"] => Ok(Reply {
            status: 204,
            content_type: "image/x-icon",
            headers: Vec::new(),
            body: Vec::new(),
        }),
        ["runs", id] => report(source, id, query),
        ["compare"] => compare_runs(source, query),
        ["api", "runs"] => api_list(source, query),
        ["api", "runs", id] => load(source, id).map(json_reply),
        ["api", "runs", id, "series", name] => api_series(source, id, name, query),
        _ => Err(Reply::error(404, format!("no page at {path}"))),
    }
}

fn delete(source: &dyn RunSource, site: &Site, req: &Request, id: &str) -> Answer {
    if let Some(why) = site.cross_site(req) {
        return Err(Reply::error(403, why));
    }
    match source.remove(id).map_err(|e| Reply::error(500, e))? {
        Removal::Removed => Ok(json_reply(json!({ "removed": id }).to_string())),
        Removal::Missing => Err(Reply::error(404, format!("no run {id:?} in the store"))),
        Removal::Running => Err(Reply::error(
            409,
            format!("run {id:?} is still recording; stop it before deleting it"),
        )),
    }
}

type Answer = Result<Reply, Reply>;

fn index(source: &dyn RunSource, site: &Site) -> Answer {
    let runs = source.list().map_err(|e| Reply::error(500, e))?;
    let data = json!({ "runs": runs, "token": site.token() }).to_string();
    assets::page("keisoku runs", "serve", &data)
        .map(html)
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
        .map(html)
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
        .map(html)
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
        .map(json_reply)
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
    Ok(json_reply(out.to_string()))
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
    use std::sync::Mutex;

    struct Fixed(Mutex<Vec<(RunListing, String)>>);

    impl RunSource for Fixed {
        fn list(&self) -> Result<Vec<RunListing>, String> {
            Ok(self
                .0
                .lock()
                .unwrap()
                .iter()
                .map(|(l, _)| l.clone())
                .collect())
        }
        fn load(&self, id: &str) -> Result<Option<String>, String> {
            Ok(self
                .0
                .lock()
                .unwrap()
                .iter()
                .find(|(l, _)| l.id == id)
                .map(|(_, j)| j.clone()))
        }
        fn remove(&self, id: &str) -> Result<Removal, String> {
            let mut runs = self.0.lock().unwrap();
            match runs.iter().position(|(l, _)| l.id == id) {
                Some(i) if runs[i].0.status == "running" => Ok(Removal::Running),
                Some(i) => {
                    runs.remove(i);
                    Ok(Removal::Removed)
                }
                None => Ok(Removal::Missing),
            }
        }
    }

    fn source() -> Fixed {
        let run = |id: &str, p99: f64, name: &str, status: &str| {
            (
                RunListing {
                    id: id.into(),
                    name: name.into(),
                    status: status.into(),
                    ..Default::default()
                },
                json!({"version": 1, "run": {"id": id, "name": name, "duration_ms": 10000.0},
                       "results": {"rps": 10.0, "latency_ms": {"p99": p99}},
                       "series": [{"name": "client.rps", "unit": "req/s",
                                   "t_ms": [0, 1000, 2000, 3000], "v": [1, 2, 3, 4]}],
                       "routes": {"client": [], "access_log": []}})
                .to_string(),
            )
        };
        Fixed(Mutex::new(vec![
            run("a1", 10.0, "name-a1", "complete"),
            run(
                "b2",
                20.0,
                "<!--x </script><script>alert(1)</script>\u{2028}",
                "complete",
            ),
            run("c3", 20.0, "busy", "running"),
        ]))
    }

    fn site() -> Site {
        Site::new("127.0.0.1:7070".parse().unwrap(), &["lab.example".into()])
    }

    fn request(method: &str, url: &str, headers: &[(&str, &str)]) -> Request {
        let mut all = vec![("Host".to_string(), "127.0.0.1:7070".to_string())];
        for (k, v) in headers {
            all.retain(|(n, _)| !n.eq_ignore_ascii_case(k));
            all.push((k.to_string(), v.to_string()));
        }
        Request {
            method: method.into(),
            target: url.into(),
            headers: all,
            ..Default::default()
        }
    }

    fn get_from(src: &Fixed, url: &str) -> Reply {
        App::new(src, &site()).handle(&request("GET", url, &[]))
    }

    fn get(url: &str) -> Reply {
        get_from(&source(), url)
    }

    fn text(r: &Reply) -> String {
        String::from_utf8_lossy(&r.body).into_owned()
    }

    fn header<'a>(r: &'a Reply, name: &str) -> Option<&'a str> {
        r.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
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
    fn a_hostile_run_name_leaves_the_list_and_its_report_intact() {
        for url in ["/", "/runs/b2", "/compare?a=a1&b=b2"] {
            let page = text(&get(url));
            let start = page.find("id=\"keisoku-data\">").unwrap() + "id=\"keisoku-data\">".len();
            let end = start + page[start..].find("</script>").unwrap();
            let data: Value = serde_json::from_str(&page[start..end]).expect(url);
            assert!(data.to_string().contains("<!--x </script>"), "{url}");
            assert_eq!(
                page.matches("<script").count(),
                page.matches("</script>").count(),
                "{url}"
            );
        }
    }

    #[test]
    fn pages_carry_security_headers_and_a_script_nonce() {
        let r = get("/");
        let csp = header(&r, "Content-Security-Policy").unwrap();
        assert!(csp.contains("frame-ancestors 'none'") && csp.contains("default-src 'none'"));
        let nonce = csp
            .split("'nonce-")
            .nth(1)
            .and_then(|s| s.split('\'').next())
            .unwrap();
        assert!(text(&r).contains(&format!("<script nonce=\"{nonce}\">")));
        assert_ne!(
            header(&get("/"), "Content-Security-Policy").unwrap(),
            csp,
            "a fresh nonce per page"
        );
        assert_eq!(header(&r, "X-Content-Type-Options"), Some("nosniff"));
        assert!(header(&r, "X-Nonce").is_none());
        let api = get("/api/runs");
        assert!(header(&api, "Content-Security-Policy")
            .unwrap()
            .contains("sandbox"));
        assert_eq!(header(&get("/nowhere"), "X-Frame-Options"), Some("DENY"));
    }

    #[test]
    fn only_this_servers_names_are_answered() {
        let s = site();
        for ok in [
            "127.0.0.1:7070",
            "localhost:7070",
            "LOCALHOST.:7070",
            "[::1]:7070",
            "lab.example:7070",
            "10.1.2.3:7070",
        ] {
            assert!(s.host_allowed(ok), "{ok}");
        }
        for bad in [
            "evil.example:7070",
            "localhost:7071",
            "localhost",
            "127.0.0.1",
            "lab.example.evil:7070",
            "",
        ] {
            assert!(!s.host_allowed(bad), "{bad}");
        }
        let src = source();
        let app = App::new(&src, &s);
        let rebound = app.handle(&request(
            "GET",
            "/api/runs/a1",
            &[("Host", "evil.example:7070")],
        ));
        assert_eq!(rebound.status, 421);
        assert!(text(&rebound).contains("--allow-host"));
        let mut no_host = request("GET", "/", &[]);
        no_host.headers.clear();
        assert_eq!(app.handle(&no_host).status, 400);
    }

    #[test]
    fn deletes_need_the_token_and_the_same_origin() {
        let src = source();
        let s = site();
        let app = App::new(&src, &s);
        let token = s.token().to_string();
        let del =
            |url: &str, method: &str, hs: &[(&str, &str)]| app.handle(&request(method, url, hs));
        for (hs, why) in [
            (vec![], "needs the X-Keisoku-Token"),
            (vec![(TOKEN_HEADER, "00")], "wrong"),
            (
                vec![
                    (TOKEN_HEADER, token.as_str()),
                    ("Sec-Fetch-Site", "cross-site"),
                ],
                "cross-site",
            ),
            (
                vec![
                    (TOKEN_HEADER, token.as_str()),
                    ("Origin", "http://evil.example"),
                ],
                "origin",
            ),
        ] {
            let r = del("/api/runs/a1", "DELETE", &hs);
            assert_eq!(r.status, 403, "{hs:?}: {}", text(&r));
            assert!(text(&r).contains(why), "{}", text(&r));
        }
        assert_eq!(del("/api/runs/a1", "GET", &[]).status, 200, "still there");
        assert_eq!(del("/api/runs/a1/delete", "GET", &[]).status, 404);
        let ok = [
            (TOKEN_HEADER, token.as_str()),
            ("Origin", "http://127.0.0.1:7070"),
            ("Sec-Fetch-Site", "same-origin"),
        ];
        assert_eq!(del("/api/runs/c3", "DELETE", &ok).status, 409, "running");
        assert_eq!(del("/api/runs/a1/delete", "POST", &ok).status, 200);
        assert_eq!(del("/api/runs/a1", "DELETE", &ok).status, 404);
        assert_eq!(get_from(&src, "/runs/a1").status, 404);
        assert_eq!(del("/", "PUT", &[]).status, 405);
        assert_eq!(del("/", "POST", &[]).status, 405);
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
    }

    fn exchange(addr: SocketAddr, raw: &[u8]) -> String {
        use std::io::{Read, Write};
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        c.write_all(raw).unwrap();
        let mut resp = String::new();
        c.read_to_string(&mut resp).unwrap();
        resp
    }

    #[test]
    fn serves_over_http_closes_idle_connections_and_stops() {
        use std::io::Read;
        let limits = Limits {
            max_connections: 8,
            idle_timeout: std::time::Duration::from_millis(300),
            ..Limits::default()
        };
        let server = Server::bind("127.0.0.1:0", limits).unwrap();
        let addr = server.addr();
        let stopper = server.stopper();
        let src = source();
        let s = Site::new(addr, &[]);
        std::thread::scope(|scope| {
            scope.spawn(|| server.run(&App::new(&src, &s)));
            let host = format!("Host: {addr}\r\n");
            let resp = exchange(
                addr,
                format!("GET /runs/missing HTTP/1.1\r\n{host}\r\n").as_bytes(),
            );
            assert!(resp.starts_with("HTTP/1.1 404"), "{resp}");
            assert!(resp.contains("no run \"missing\""));
            assert!(resp.contains("X-Content-Type-Options: nosniff"));
            // More idle sockets than the cap: the oldest give way, and a
            // real request is still answered.
            let idle: Vec<_> = (0..20)
                .map(|_| std::net::TcpStream::connect(addr).unwrap())
                .collect();
            let resp = exchange(
                addr,
                format!("GET /api/runs HTTP/1.1\r\n{host}\r\n").as_bytes(),
            );
            assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
            // A silent connection is closed by the server (EOF, not a hang).
            let mut last = idle.into_iter().last().unwrap();
            last.set_read_timeout(Some(std::time::Duration::from_secs(20)))
                .unwrap();
            let mut buf = [0u8; 16];
            assert_eq!(last.read(&mut buf).unwrap_or(0), 0);
            stopper.stop();
        });
    }
}
