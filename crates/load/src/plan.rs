//! What to run: targets, load model, phases, durations. Everything here is
//! plain data plus the parsers for the command-line forms (durations, URLs,
//! sweeps, targets files), so `keisoku bench`, `keisoku demo` and
//! `keisoku run` build the same [`Plan`] from the same strings.

use crate::error::LoadError;
use std::net::{SocketAddr, ToSocketAddrs};
use std::path::Path;
use std::time::Duration;

/// One request template: where it goes and the exact bytes sent.
#[derive(Debug, Clone, PartialEq)]
pub struct Target {
    /// The URL as given (used as the target's label in results).
    pub url: String,
    /// HTTP method, upper case.
    pub method: String,
    /// `host[:port]` for the Host header.
    pub authority: String,
    /// Resolved address to connect to.
    pub addr: SocketAddr,
    /// Path and query, starting with `/`.
    pub path: String,
    /// Request body (empty for none).
    pub body: Vec<u8>,
    /// Relative weight for rotation (URLs given on the command line weigh 1).
    pub weight: u32,
    /// `https://`: the connection speaks TLS.
    pub tls: bool,
    /// Host name or address as written (no brackets, no port): the TLS
    /// server name and the CONNECT authority's host.
    pub host: String,
    /// Headers of this target only (from its `--targets` lines); they
    /// replace a plan header of the same name.
    pub headers: Vec<(String, String)>,
}

impl Target {
    /// Builds a target from a URL; resolves the host once (load tests must
    /// not measure DNS).
    /// The path and query may hold templates (`{{seq}}`, see
    /// [`crate::template`]); the scheme, host and port may not, because the
    /// address is resolved once.
    pub fn new(method: &str, url: &str, body: Vec<u8>, weight: u32) -> Result<Target, LoadError> {
        let parsed = parse_template_url(url)?;
        let method = method.trim();
        if method.is_empty() || !method.bytes().all(|b| b.is_ascii_alphabetic()) {
            return Err(LoadError::BadInput(format!("bad HTTP method {method:?}")));
        }
        let addr = (parsed.host.as_str(), parsed.port)
            .to_socket_addrs()
            .map_err(|e| LoadError::Resolve {
                host: parsed.host.clone(),
                reason: e.to_string(),
            })?
            .next()
            .ok_or_else(|| LoadError::Resolve {
                host: parsed.host.clone(),
                reason: "no address".into(),
            })?;
        Ok(Target {
            url: url.to_string(),
            method: method.to_ascii_uppercase(),
            authority: parsed.authority,
            addr,
            path: parsed.path,
            body,
            weight,
            tls: parsed.tls,
            host: parsed.host,
            headers: Vec::new(),
        })
    }
}

/// [`parse_url`] for a URL whose path and query may hold templates: the
/// URL is checked as it renders (each placeholder standing for a value),
/// and the path keeps the placeholders.
fn parse_template_url(url: &str) -> Result<ParsedUrl, LoadError> {
    if !crate::template::has_placeholder(url.as_bytes()) {
        return parse_url(url);
    }
    let bad = |why: String| LoadError::BadInput(format!("bad URL {url:?}: {why}"));
    let shape = crate::template::skeleton(url).map_err(bad)?;
    let mut parsed = parse_url(&shape)?;
    // Everything before the path must read the same in both forms: a
    // placeholder in the host or port would need a resolve per request.
    let prefix = shape.len() - parsed.path.len() - shape.find('#').map_or(0, |i| shape.len() - i);
    let head = url.get(..prefix).filter(|h| shape.starts_with(*h));
    let Some(head) = head.filter(|h| !h.contains("{{")) else {
        return Err(bad(
            "templates go in the path and query, not in the scheme, host or port".into(),
        ));
    };
    let mut path = url[head.len()..].to_string();
    if let Some(i) = path.find('#') {
        path.truncate(i);
    }
    if !path.starts_with('/') {
        path.insert(0, '/');
    }
    parsed.path = path;
    Ok(parsed)
}

/// The parts of an `http://` URL keisoku needs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParsedUrl {
    /// Host name or address (without brackets for IPv6).
    pub host: String,
    /// TCP port (80 when absent).
    pub port: u16,
    /// `host[:port]` exactly as written, for the Host header.
    pub authority: String,
    /// Path and query, `/` when absent.
    pub path: String,
    /// `https://`.
    pub tls: bool,
}

/// Parses `http[s]://host[:port][/path][?query]` (port 80 or 443 when absent).
pub fn parse_url(url: &str) -> Result<ParsedUrl, LoadError> {
    let bad = |why: &str| LoadError::BadInput(format!("bad URL {url:?}: {why}"));
    let (rest, tls) = if let Some(r) = url.strip_prefix("http://") {
        (r, false)
    } else if let Some(r) = url.strip_prefix("https://") {
        (r, true)
    } else {
        return Err(bad("expected http://host[:port]/path or https://..."));
    };
    let default_port = if tls { 443 } else { 80 };
    let (authority, path) = match rest.find(['/', '?']) {
        Some(i) if rest.as_bytes()[i] == b'/' => (&rest[..i], rest[i..].to_string()),
        Some(i) => (&rest[..i], format!("/{}", &rest[i..])),
        None => (rest, "/".to_string()),
    };
    if let Some(i) = path.find('#') {
        // Fragments never go on the wire.
        return parse_url(&url[..url.len() - (path.len() - i)]);
    }
    if authority.is_empty() {
        return Err(bad("missing host"));
    }
    if authority.contains('@') {
        return Err(bad("user info is not supported"));
    }
    if path.bytes().any(|b| b <= b' ' || b == 0x7f) {
        return Err(bad("spaces or control characters in the path"));
    }
    let (host, port) = if let Some(v6) = authority.strip_prefix('[') {
        let end = v6.find(']').ok_or_else(|| bad("unclosed '[' in host"))?;
        let host = &v6[..end];
        let after = &v6[end + 1..];
        let port = match after.strip_prefix(':') {
            Some(p) => parse_port(p).ok_or_else(|| bad("bad port"))?,
            None if after.is_empty() => default_port,
            None => return Err(bad("junk after ']'")),
        };
        (host.to_string(), port)
    } else {
        match authority.rsplit_once(':') {
            Some((h, p)) => (h.to_string(), parse_port(p).ok_or_else(|| bad("bad port"))?),
            None => (authority.to_string(), default_port),
        }
    };
    if host.is_empty()
        || !host
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"-._:".contains(&b))
    {
        return Err(bad("bad host"));
    }
    Ok(ParsedUrl {
        host,
        port,
        authority: authority.to_string(),
        path,
        tls,
    })
}

fn parse_port(s: &str) -> Option<u16> {
    s.parse::<u16>().ok().filter(|p| *p != 0)
}

/// Parses a duration in keisoku's one grammar (`10s`, `500ms`, `2m`, `1h`,
/// `1d`, `1.5s`, `250us`; a bare number is seconds): see
/// [`keisoku_common::duration`].
pub fn parse_duration(s: &str) -> Result<Duration, LoadError> {
    keisoku_common::parse_duration(s).map_err(|e| LoadError::BadInput(e.to_string()))
}

/// Parses a sweep `A..B:STEP` (inclusive of B when the steps land on it).
pub fn parse_sweep(s: &str) -> Result<Vec<f64>, LoadError> {
    let bad = |why: &str| {
        LoadError::BadInput(format!(
            "bad sweep {s:?}: {why} (use A..B:STEP, e.g. 5..50:5)"
        ))
    };
    let (range, step) = s.split_once(':').ok_or_else(|| bad("missing :STEP"))?;
    let (a, b) = range.split_once("..").ok_or_else(|| bad("missing .."))?;
    let num = |x: &str| {
        x.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && *v > 0.0)
    };
    let (a, b, step) = match (num(a), num(b), num(step)) {
        (Some(a), Some(b), Some(st)) => (a, b, st),
        _ => return Err(bad("A, B and STEP must be positive numbers")),
    };
    if b < a {
        return Err(bad("B is below A"));
    }
    // Counted in floating point first: a range of 1e300 steps saturates the
    // integer conversion, and one more step would wrap to an empty sweep.
    let gaps = ((b - a) / step + 1e-9).floor();
    if gaps >= 1000.0 {
        return Err(bad("more than 1000 steps"));
    }
    let n = gaps as u64 + 1;
    Ok((0..n).map(|i| a + step * i as f64).collect())
}

/// Parses one `Name: value` header.
pub fn parse_header(s: &str) -> Result<(String, String), LoadError> {
    let bad = || LoadError::BadInput(format!("bad header {s:?} (use 'Name: value')"));
    let (name, value) = s.split_once(':').ok_or_else(bad)?;
    let name = name.trim();
    let value = value.trim();
    if name.is_empty()
        || !name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&b))
        || value.bytes().any(|b| b == b'\r' || b == b'\n')
    {
        return Err(bad());
    }
    Ok((name.to_string(), value.to_string()))
}

/// The start of a line for an error message, quoted with control
/// characters escaped: a line of a million NUL bytes is not echoed whole.
fn excerpt(line: &str) -> String {
    const SHOWN: usize = 60;
    let head: String = line.chars().take(SHOWN).collect();
    if head.len() < line.len() {
        format!("{head:?} (first {SHOWN} of {} bytes)", line.len())
    } else {
        format!("{head:?}")
    }
}

/// Reads a targets file: one request per line, `[weight] METHOD URL [@bodyfile]`,
/// each optionally followed by header lines `Name: value` (as vegeta's
/// targets) that belong to it. Blank lines and lines starting with `#` are
/// skipped; body files are relative to the targets file.
pub fn parse_targets_file(path: &Path) -> Result<Vec<Target>, LoadError> {
    let limits = keisoku_common::Limits::current();
    let text = keisoku_common::limits::read_whole_string(path, &limits)
        .map_err(|e| LoadError::BadInput(format!("{}: {e}", path.display())))?;
    let base = path.parent().unwrap_or_else(|| Path::new("."));
    let mut targets: Vec<Target> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |why: String| LoadError::BadInput(format!("{}:{}: {why}", path.display(), i + 1));
        if is_header_line(line) {
            let Some(t) = targets.last_mut() else {
                return Err(at(format!(
                    "header line {} before any request line",
                    excerpt(line)
                )));
            };
            let (name, value) = parse_header(line).map_err(|e| at(e.to_string()))?;
            if ["content-length", "connection", "transfer-encoding"]
                .iter()
                .any(|n| name.eq_ignore_ascii_case(n))
            {
                return Err(at(format!(
                    "{name} cannot be set per target (framing and connection reuse are run-wide: use -H)"
                )));
            }
            t.headers.retain(|(n, _)| !n.eq_ignore_ascii_case(&name));
            t.headers.push((name, value));
            continue;
        }
        let mut words: Vec<&str> = line.split_whitespace().collect();
        let mut weight = 1;
        if let Some(w) = words.first().and_then(|w| w.parse::<u32>().ok()) {
            if w == 0 {
                return Err(at("weight must be at least 1".into()));
            }
            weight = w;
            words.remove(0);
        }
        let mut body = Vec::new();
        if let Some(last) = words.last() {
            if let Some(file) = last.strip_prefix('@') {
                let p = base.join(file);
                body = keisoku_common::limits::read_whole(&p, &limits)
                    .map_err(|e| at(format!("body file {}: {e}", p.display())))?;
                words.pop();
            }
        }
        let (method, url) = match words.as_slice() {
            [m, u] => (*m, *u),
            _ => {
                return Err(at(format!(
                    "expected '[weight] METHOD URL [@bodyfile]', got {}",
                    excerpt(line)
                )))
            }
        };
        let t = Target::new(method, url, body, weight).map_err(|e| at(e.to_string()))?;
        targets.push(t);
    }
    if targets.is_empty() {
        return Err(LoadError::BadInput(format!(
            "{}: no targets in the file",
            path.display()
        )));
    }
    Ok(targets)
}

/// A `Name: value` line in a targets file: its first word ends with ':'
/// (a method never holds one; a request line's URL is its second word).
fn is_header_line(line: &str) -> bool {
    line.split_whitespace()
        .next()
        .is_some_and(|w| w.len() > 1 && w.ends_with(':') && !w[..w.len() - 1].contains(':'))
        || (line
            .split_once(':')
            .is_some_and(|(n, _)| !n.is_empty() && !n.contains(char::is_whitespace))
            && !line.contains("://"))
}

/// How requests are issued.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Model {
    /// Each connection sends its next request when the previous answer
    /// arrives; latency is closed-model service time.
    Closed,
    /// Requests go out on a fixed schedule; latency counts from the intended
    /// send time (coordinated omission corrected), connections are a cap.
    Open,
}

impl Model {
    /// The model's name as stored and serialised: `closed` or `open`.
    pub fn name(self) -> &'static str {
        match self {
            Model::Closed => "closed",
            Model::Open => "open",
        }
    }
}

/// One step of the run: a load level held for a duration or a request count.
#[derive(Debug, Clone, PartialEq)]
pub struct PhaseSpec {
    /// Connections (closed model) or the connection cap (open model).
    pub connections: usize,
    /// Requests per second in total (open model only).
    pub rate: Option<f64>,
    /// How long the phase lasts (ignored when `requests` is set).
    pub duration: Duration,
    /// Stop after this many responses instead of after `duration`.
    pub requests: Option<u64>,
    /// A `--stages` ramp: the level moves linearly from `from` to `to`
    /// (the rate in the open model, where `rate` is `to`; connections in
    /// the closed model, where `connections` is the larger of the two).
    pub ramp: Option<crate::stages::Ramp>,
}

impl PhaseSpec {
    /// Short label, `c=10` or `r=4000`.
    pub fn label(&self) -> String {
        if let Some(r) = self.ramp {
            let what = if self.rate.is_some() { "r" } else { "c" };
            return format!("{what}={}..{}", fmt_num(r.from), fmt_num(r.to));
        }
        match self.rate {
            Some(r) => format!("r={}", fmt_num(r)),
            None => format!("c={}", self.connections),
        }
    }

    /// The load level this phase varies (connections or rate).
    pub fn load(&self) -> f64 {
        if let Some(r) = self.ramp {
            return r.to;
        }
        self.rate.unwrap_or(self.connections as f64)
    }
}

/// Shortest decimal form of `v` (`99.9`, `1000`, `0.1`).
pub(crate) fn fmt_num_trim(v: f64) -> String {
    let s = format!("{v:.6}");
    let s = s.trim_end_matches('0').trim_end_matches('.');
    s.to_string()
}

pub(crate) fn fmt_num(v: f64) -> String {
    if v.fract() == 0.0 && v.abs() < 1e15 {
        format!("{}", v as i64)
    } else {
        format!("{v:.1}")
    }
}

/// Everything a run needs. Build with [`Plan::new`] and adjust fields.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Request templates, rotated by weight.
    pub targets: Vec<Target>,
    /// Extra headers sent with every request.
    pub headers: Vec<(String, String)>,
    /// Closed or open model.
    pub model: Model,
    /// Phases in order (one for a plain run, one per step for sweeps).
    pub phases: Vec<PhaseSpec>,
    /// Warm-up before the first phase at the first phase's load, excluded
    /// from results.
    pub warmup: Duration,
    /// Event-loop threads (clamped to the connection count).
    pub threads: usize,
    /// Pin each thread to one core.
    pub pin: bool,
    /// Per-request timeout (also the connect timeout and histogram range).
    pub timeout: Duration,
    /// Reuse connections (HTTP/1.1 keep-alive).
    pub keepalive: bool,
    /// How connections reach the targets: TLS, Unix socket, proxy,
    /// redirects, compression.
    pub transport: crate::transport::Transport,
    /// `--data`: the CSV rows `{{csv.COLUMN}}` templates read.
    pub data: Option<crate::template::Data>,
    /// `--h2`: speak HTTP/2 (and gRPC) instead of HTTP/1.1.
    pub h2: Option<crate::h2::H2Options>,
    /// `--scenario`: the targets are its steps, run in order by virtual users.
    pub scenario: Option<std::sync::Arc<crate::scenario::Scenario>>,
    /// `--replay`: the recorded requests replace the targets' own (the
    /// targets are then the file's routes, for results per route).
    pub replay: Option<std::sync::Arc<crate::replay::ReplayPlan>>,
}

impl Plan {
    /// A plan with the documented defaults: closed model, 50 connections,
    /// 10 s, one thread per core, 10 s timeout, keep-alive.
    pub fn new(targets: Vec<Target>) -> Plan {
        Plan {
            targets,
            headers: Vec::new(),
            model: Model::Closed,
            phases: vec![PhaseSpec {
                connections: 50,
                rate: None,
                duration: Duration::from_secs(10),
                requests: None,
                ramp: None,
            }],
            warmup: Duration::ZERO,
            threads: default_threads(),
            pin: false,
            timeout: Duration::from_secs(10),
            keepalive: true,
            transport: crate::transport::Transport::default(),
            data: None,
            h2: None,
            scenario: None,
            replay: None,
        }
    }

    /// Each target's method and label for results: its URL, or with
    /// `--scenario` its step's name (a scenario's routes are its steps).
    pub fn target_labels(&self) -> Vec<(String, String)> {
        self.targets
            .iter()
            .enumerate()
            .map(|(k, t)| {
                let label = self
                    .scenario
                    .as_ref()
                    .and_then(|s| s.steps.get(k))
                    .map_or_else(|| t.url.clone(), |s| s.name.clone());
                (t.method.clone(), label)
            })
            .collect()
    }

    /// Checks the plan is runnable; the error names the offending field.
    pub fn validate(&self) -> Result<(), LoadError> {
        let bad = |m: &str| Err(LoadError::BadInput(m.to_string()));
        if self.targets.is_empty() {
            return bad("no target URL");
        }
        if self.phases.is_empty() {
            return bad("no phase to run");
        }
        if let Some(s) = &self.scenario {
            if s.steps.len() != self.targets.len() {
                return bad("--scenario: the targets must be the scenario's steps");
            }
            if self.transport.follow > 0 {
                return bad("--scenario with --follow: not supported (a step's checks read the answer it got; add a step for the redirect's target)");
            }
        }
        // Each of these drives the connections its own way; none knows the others yet.
        if self.h2.is_some() && self.scenario.is_some() {
            return bad(
                "--h2/--grpc with --scenario: not supported yet (scenarios speak HTTP/1.1)",
            );
        }
        if self.h2.is_some() && self.replay.is_some() {
            return bad("--h2/--grpc with --replay: not supported yet (replay speaks HTTP/1.1)");
        }
        if self.scenario.is_some() && self.replay.is_some() {
            return bad("--scenario with --replay: choose one (a replay sends recorded requests, a scenario its steps)");
        }
        if self.threads == 0 {
            return bad("--threads must be at least 1");
        }
        if self.timeout < Duration::from_millis(1) {
            return bad("--timeout must be at least 1ms");
        }
        for p in &self.phases {
            if p.connections == 0 {
                return bad("--connections must be at least 1");
            }
            if p.connections > 100_000 {
                return bad("--connections above 100000");
            }
            match (self.model, p.rate) {
                (Model::Open, Some(r)) if r > 0.0 && r.is_finite() => {}
                (Model::Open, Some(r)) if p.ramp.is_some() && r == 0.0 => {}
                (Model::Open, _) => return bad("the open model needs a positive --rate"),
                (Model::Closed, Some(_)) => return bad("a rate was given for the closed model"),
                (Model::Closed, None) => {}
            }
            if p.requests == Some(0) {
                return bad("--requests must be at least 1");
            }
            if p.requests.is_none() && p.duration.is_zero() {
                return bad("--duration must be above 0");
            }
        }
        Ok(())
    }
}

/// One thread per online core.
pub fn default_threads() -> usize {
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_line_of_nul_bytes_is_not_echoed_whole() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("targets");
        std::fs::write(&path, vec![0u8; 100_000]).unwrap();
        let e = parse_targets_file(&path).unwrap_err().to_string();
        assert!(e.len() < 600, "a {}-byte message", e.len());
        assert!(e.contains("\\0\\0") && e.contains("of 100000 bytes"), "{e}");
    }

    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s").unwrap(), Duration::from_secs(10));
        assert_eq!(parse_duration("500ms").unwrap(), Duration::from_millis(500));
        assert_eq!(parse_duration("2m").unwrap(), Duration::from_secs(120));
        assert_eq!(parse_duration("1.5s").unwrap(), Duration::from_millis(1500));
        assert_eq!(parse_duration("3").unwrap(), Duration::from_secs(3));
        for bad in ["", "s", "10x", "-1s", "1..2s", "ms10"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn urls() {
        let u = parse_url("http://127.0.0.1:8080/bid?x=1").unwrap();
        assert_eq!(
            (u.host.as_str(), u.port, u.path.as_str()),
            ("127.0.0.1", 8080, "/bid?x=1")
        );
        let u = parse_url("http://localhost").unwrap();
        assert_eq!(
            (u.port, u.path.as_str(), u.authority.as_str()),
            (80, "/", "localhost")
        );
        let u = parse_url("http://[::1]:9/a#frag").unwrap();
        assert_eq!((u.host.as_str(), u.port, u.path.as_str()), ("::1", 9, "/a"));
        let u = parse_url("http://h?q").unwrap();
        assert_eq!(u.path, "/?q");
        // https was refused before TLS existed; now it parses with port 443.
        let u = parse_url("https://x/").unwrap();
        assert_eq!((u.port, u.tls), (443, true));
        assert!(!parse_url("http://x/").unwrap().tls);
        for bad in [
            "ftp://x",
            "x",
            "http://",
            "http://h:0/",
            "http://h:99999/",
            "http://h:p/",
            "http://a b/",
            "http://h/a b",
        ] {
            assert!(parse_url(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn sweeps() {
        assert_eq!(parse_sweep("5..20:5").unwrap(), vec![5.0, 10.0, 15.0, 20.0]);
        assert_eq!(parse_sweep("1..4:2").unwrap(), vec![1.0, 3.0]);
        assert_eq!(parse_sweep("0.5..1:0.25").unwrap(), vec![0.5, 0.75, 1.0]);
        for bad in ["5..1:1", "1..5", "1:5", "a..b:1", "1..5:0", "1..100000:1"] {
            assert!(parse_sweep(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_sweep_of_more_steps_than_a_u64_holds_is_refused() {
        // Found by the grammars fuzz target: the step count saturated at
        // u64::MAX and one more overflowed (wrapping, in a release build,
        // to an empty sweep).
        let e = parse_sweep("11..6464222222222222222222222222222222222222222222222222222222222222222222222222222222222:9")
            .unwrap_err();
        assert!(e.to_string().contains("more than 1000 steps"), "{e}");
        assert!(parse_sweep("1..1e308:1e-300").is_err());
        assert_eq!(parse_sweep("1..1000:1").unwrap().len(), 1000);
        assert!(parse_sweep("1..1001:1").is_err());
    }

    #[test]
    fn headers() {
        assert_eq!(
            parse_header("X-A:  b c ").unwrap(),
            ("X-A".into(), "b c".into())
        );
        assert!(parse_header("no colon").is_err());
        assert!(parse_header("Bad Name: v").is_err());
        assert!(parse_header(": v").is_err());
    }

    #[test]
    fn targets_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("b.json"), b"{\"id\":1}").unwrap();
        let f = dir.path().join("t.txt");
        std::fs::write(
            &f,
            "# comment\n\nGET http://127.0.0.1:1/health\n3 POST http://127.0.0.1:1/bid @b.json\n",
        )
        .unwrap();
        let t = parse_targets_file(&f).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(t[1].weight, 3);
        assert_eq!(t[1].body, b"{\"id\":1}");
        std::fs::write(&f, "GET http://127.0.0.1:1/\nPOST\n").unwrap();
        let e = parse_targets_file(&f).unwrap_err().to_string();
        assert!(e.contains("t.txt:2:"), "{e}");
        std::fs::write(&f, "GET http://127.0.0.1:1/ @missing\n").unwrap();
        assert!(parse_targets_file(&f)
            .unwrap_err()
            .to_string()
            .contains(":1:"));
        std::fs::write(&f, "0 GET http://127.0.0.1:1/\n").unwrap();
        assert!(parse_targets_file(&f).is_err());
    }

    #[test]
    fn targets_file_header_lines_belong_to_the_request_above() {
        let dir = tempfile::tempdir().unwrap();
        let f = dir.path().join("t.txt");
        std::fs::write(
            &f,
            "GET http://127.0.0.1:1/a\nAuthorization: Bearer {{csv.token}}\nX-Id:7\n\n2 GET http://127.0.0.1:1/b?u={{seq}}\nReferer: http://x/\n",
        )
        .unwrap();
        let t = parse_targets_file(&f).unwrap();
        assert_eq!(t.len(), 2);
        assert_eq!(
            t[0].headers,
            vec![
                (
                    "Authorization".to_string(),
                    "Bearer {{csv.token}}".to_string()
                ),
                ("X-Id".to_string(), "7".to_string())
            ]
        );
        assert_eq!(t[1].headers, vec![("Referer".into(), "http://x/".into())]);
        assert_eq!((t[1].weight, t[1].path.as_str()), (2, "/b?u={{seq}}"));
        std::fs::write(&f, "X-A: 1\nGET http://127.0.0.1:1/\n").unwrap();
        let e = parse_targets_file(&f).unwrap_err().to_string();
        assert!(
            e.contains(":1: header line") && e.contains("before any request"),
            "{e}"
        );
        std::fs::write(&f, "GET http://127.0.0.1:1/\nContent-Length: 3\n").unwrap();
        let e = parse_targets_file(&f).unwrap_err().to_string();
        assert!(
            e.contains(":2: Content-Length cannot be set per target"),
            "{e}"
        );
    }
}
