//! Scenarios: each virtual user logs in once, then runs an iteration of
//! steps again and again, keeping its cookies and the values it took
//! from earlier responses (docs/bench.md "Scenarios").
//!
//! The file is parsed and every step compiled before any request, so a
//! bad JSON path, regex, duration or `{{var.NAME}}` that no earlier step
//! extracts is refused up front naming the file, line and key. At run
//! time the engine asks [`user`] for the next request when a response is
//! complete (no pipelining within a user: an extraction needs the body).

pub mod file;
pub mod report;
pub mod user;

use crate::error::LoadError;
use crate::plan::{parse_duration, parse_url, Target};
use std::time::Duration;

/// A compiled scenario: the steps of the `once` block followed by the
/// iteration's, each becoming one target of the plan (its route).
#[derive(Debug, Clone)]
pub struct Scenario {
    /// The file, for messages and results.
    pub source: String,
    /// Every step; the first [`Scenario::once`] are the once block.
    pub steps: Vec<Step>,
    /// How many steps the once block has.
    pub once: usize,
    /// Names of the variables, by slot.
    pub vars: Vec<String>,
}

/// One compiled step.
#[derive(Debug, Clone)]
pub struct Step {
    /// Its name (its route in the results).
    pub name: String,
    /// The request; `{{var.NAME}}` stands in it as the literal `0` (so it
    /// compiles), the real text is in `vars`.
    pub target: Target,
    /// When the step uses variables: its path, header values and body
    /// with the variables' slots, rendered per request.
    pub var_parts: Option<VarRequest>,
    /// What the response must satisfy.
    pub checks: Checks,
    /// What is taken from the response.
    pub extract: Vec<Extract>,
    /// Pause after the step.
    pub think: Option<Think>,
    /// The step sets its own `Cookie` header: the jar stays out of it.
    pub own_cookie: bool,
}

/// Think time: fixed (`low == high`) or uniform in a range.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Think {
    /// Shortest pause.
    pub low: Duration,
    /// Longest pause.
    pub high: Duration,
}

/// Text with variable slots.
#[derive(Debug, Clone, PartialEq)]
pub enum VarPart {
    /// Literal text (may hold other templates, compiled per request).
    Lit(String),
    /// The value of variable slot N.
    Var(usize),
}

/// The parts of a request that use variables.
#[derive(Debug, Clone, PartialEq)]
pub struct VarRequest {
    /// Path and query.
    pub path: Vec<VarPart>,
    /// Header values, by name.
    pub headers: Vec<(String, Vec<VarPart>)>,
    /// Body.
    pub body: Vec<VarPart>,
}

/// The checks of a step.
#[derive(Debug, Clone, Default)]
pub struct Checks {
    /// The status must be one of these (empty: any).
    pub status: Vec<u16>,
    /// The body must contain these bytes.
    pub body_contains: Option<Vec<u8>>,
    /// JSON path checks.
    pub json: Vec<JsonCheck>,
}

/// A JSON path check.
#[derive(Debug, Clone)]
pub struct JsonCheck {
    /// Where.
    pub path: JsonPath,
    /// What must be there.
    pub expect: JsonExpect,
}

/// What a JSON path check wants.
#[derive(Debug, Clone, PartialEq)]
pub enum JsonExpect {
    /// A value equal to this.
    Equals(serde_json::Value),
    /// Some value (true) or none (false).
    Exists(bool),
}

/// An extraction into a variable slot.
#[derive(Debug, Clone)]
pub struct Extract {
    /// The variable's slot.
    pub var: usize,
    /// Where the value comes from.
    pub from: Source,
}

/// Where an extracted value comes from.
#[derive(Debug, Clone)]
pub enum Source {
    /// A JSON path into the body.
    Json(JsonPath),
    /// A response header (first of that name).
    Header(String),
    /// The one group of a regex on the body.
    Regex(regex::bytes::Regex),
}

/// A JSON path: `$`, then `.name`, `['name']` or `[N]` steps.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonPath {
    /// As written, for messages.
    pub text: String,
    segs: Vec<Seg>,
}

#[derive(Debug, Clone, PartialEq)]
enum Seg {
    Key(String),
    Index(usize),
}

impl JsonPath {
    /// Parses `$.a.b[0]['c d']`.
    pub fn parse(s: &str) -> Result<JsonPath, String> {
        let bad = |why: &str| {
            format!("bad JSON path {s:?}: {why} (write $.name, $.list[0], $['odd key'])")
        };
        let mut rest = s
            .trim()
            .strip_prefix('$')
            .ok_or_else(|| bad("it must start with $"))?;
        let mut segs = Vec::new();
        while !rest.is_empty() {
            if let Some(r) = rest.strip_prefix('.') {
                let end = r.find(['.', '[']).unwrap_or(r.len());
                let key = &r[..end];
                if key.is_empty() {
                    return Err(bad("empty name after '.'"));
                }
                segs.push(Seg::Key(key.to_string()));
                rest = &r[end..];
            } else if let Some(r) = rest.strip_prefix('[') {
                let end = r.find(']').ok_or_else(|| bad("'[' without ']'"))?;
                let inner = r[..end].trim();
                let quoted = inner
                    .strip_prefix('\'')
                    .and_then(|x| x.strip_suffix('\''))
                    .or_else(|| inner.strip_prefix('"').and_then(|x| x.strip_suffix('"')));
                match quoted {
                    Some(k) => segs.push(Seg::Key(k.to_string())),
                    None => segs.push(Seg::Index(
                        inner
                            .parse()
                            .map_err(|_| bad("an index must be a number or a quoted name"))?,
                    )),
                }
                rest = &r[end + 1..];
            } else {
                return Err(bad("expected '.' or '['"));
            }
        }
        Ok(JsonPath {
            text: s.to_string(),
            segs,
        })
    }

    /// The value the path leads to, if any.
    pub fn find<'v>(&self, v: &'v serde_json::Value) -> Option<&'v serde_json::Value> {
        let mut cur = v;
        for s in &self.segs {
            cur = match s {
                Seg::Key(k) => cur.as_object()?.get(k)?,
                Seg::Index(i) => cur.as_array()?.get(*i)?,
            };
        }
        Some(cur)
    }
}

/// A problem in the scenario file: where and what.
fn at(source: &str, line: usize, key: &str, why: impl std::fmt::Display) -> LoadError {
    LoadError::BadInput(format!("--scenario {source}:{line}: {key}: {why}"))
}

/// Splits `{{var.NAME}}` out of text, assigning slots to names in `vars`;
/// `known` are the names extracted by earlier steps.
fn var_parts(text: &str, vars: &[String], known: &[usize]) -> Result<Option<Vec<VarPart>>, String> {
    if !text.contains("{{var.") {
        return Ok(None);
    }
    let mut parts = Vec::new();
    let mut rest = text;
    while let Some(i) = rest.find("{{var.") {
        parts.push(VarPart::Lit(rest[..i].to_string()));
        let after = &rest[i + 6..];
        let end = after
            .find("}}")
            .ok_or_else(|| format!("unclosed {{{{var. in {text:?}"))?;
        let name = after[..end].trim();
        let slot = vars
            .iter()
            .position(|v| v == name)
            .filter(|s| known.contains(s))
            .ok_or_else(|| {
                format!("{{{{var.{name}}}}}: no earlier step extracts a variable {name:?}")
            })?;
        parts.push(VarPart::Var(slot));
        rest = &after[end + 2..];
    }
    parts.push(VarPart::Lit(rest.to_string()));
    Ok(Some(parts))
}

/// The text with every variable standing as `0` (what compiles and
/// resolves up front).
fn skeleton(parts: &Option<Vec<VarPart>>, text: &str) -> String {
    match parts {
        None => text.to_string(),
        Some(p) => p
            .iter()
            .map(|x| match x {
                VarPart::Lit(l) => l.as_str(),
                VarPart::Var(_) => "0",
            })
            .collect(),
    }
}

fn header_pairs(
    m: Option<&serde_yaml::Mapping>,
    source: &str,
    line: impl Fn() -> usize,
) -> Result<Vec<(String, String)>, LoadError> {
    let mut out = Vec::new();
    for (k, v) in m.into_iter().flatten() {
        let name = k
            .as_str()
            .ok_or_else(|| at(source, line(), "headers", "a header name must be text"))?;
        let value = match v {
            serde_yaml::Value::String(s) => s.clone(),
            serde_yaml::Value::Number(n) => n.to_string(),
            serde_yaml::Value::Bool(b) => b.to_string(),
            _ => {
                return Err(at(
                    source,
                    line(),
                    &format!("headers.{name}"),
                    "a header value must be text",
                ))
            }
        };
        let (n, v) = crate::plan::parse_header(&format!("{name}: {value}"))
            .map_err(|e| at(source, line(), &format!("headers.{name}"), e))?;
        if n.eq_ignore_ascii_case("content-length") || n.eq_ignore_ascii_case("connection") {
            return Err(at(
                source,
                line(),
                &format!("headers.{name}"),
                "set by keisoku (from the body and keep-alive); drop it",
            ));
        }
        out.push((n, v));
    }
    Ok(out)
}

/// `500ms` or `200ms..1s`.
pub fn parse_think(s: &str) -> Result<Think, String> {
    let (a, b) = match s.split_once("..") {
        Some((a, b)) => (a, b),
        None => (s, s),
    };
    let low = parse_duration(a.trim()).map_err(|e| e.to_string())?;
    let high = parse_duration(b.trim()).map_err(|e| e.to_string())?;
    if high < low {
        return Err(format!("{s:?}: the range runs backwards"));
    }
    if high > Duration::from_secs(3600) {
        return Err(format!("{s:?}: at most 1h"));
    }
    Ok(Think { low, high })
}

impl Scenario {
    /// Reads and compiles a scenario file; `base` is the command line's URL
    /// when the file has no `base:`.
    pub fn load(path: &std::path::Path, base: Option<&str>) -> Result<Scenario, LoadError> {
        let source = path.display().to_string();
        let text =
            keisoku_common::limits::read_whole_string(path, &keisoku_common::Limits::current())
                .map_err(|e| LoadError::BadInput(format!("--scenario {source}: {e}")))?;
        Scenario::compile(&source, &text, base)
    }

    /// Compiles the text of a scenario file (resolving its host once).
    pub fn compile(source: &str, text: &str, base: Option<&str>) -> Result<Scenario, LoadError> {
        let f = file::parse(text)
            .map_err(|(line, e)| LoadError::BadInput(format!("--scenario {source}:{line}: {e}")))?;
        if f.steps.is_empty() {
            return Err(at(
                source,
                file::line_of(text, None, "steps"),
                "steps",
                "no step: the iteration needs at least one",
            ));
        }
        let base = match (&f.base, base) {
            (Some(b), _) => Some(b.clone()),
            (None, Some(b)) => Some(b.to_string()),
            (None, None) => None,
        };
        if let Some(b) = &base {
            parse_url(b).map_err(|e| at(source, file::line_of(text, None, "base"), "base", e))?;
        }
        let common = header_pairs(f.headers.as_ref(), source, || {
            file::line_of(text, None, "headers")
        })?;
        let mut vars: Vec<String> = Vec::new();
        let mut known: Vec<usize> = Vec::new();
        let mut steps = Vec::new();
        let mut names: Vec<String> = Vec::new();
        let once = f.once.len();
        for (k, s) in f.once.iter().chain(&f.steps).enumerate() {
            let name = s.name.trim().to_string();
            let line = |key: &str| file::line_of(text, Some(&name), key);
            let key = |k2: &str| {
                format!(
                    "{} step {:?}, key {k2}",
                    if k < once { "once" } else { "steps" },
                    name
                )
            };
            if name.is_empty() {
                return Err(at(source, line("name"), "name", "a step needs a name"));
            }
            if names.contains(&name) {
                return Err(at(
                    source,
                    file::line_of_nth(text, &name, 1),
                    &key("name"),
                    "two steps have this name; each step is a route of its own",
                ));
            }
            names.push(name.clone());
            // Names of variables this step extracts get slots now; they are
            // known to the steps after it (and to its next iterations).
            let url_parts = var_parts(&s.url, &vars, &known)
                .map_err(|e| at(source, line("url"), &key("url"), e))?;
            let url = skeleton(&url_parts, &s.url);
            let abs_of = |u: &str| -> Option<String> {
                if u.starts_with("http://") || u.starts_with("https://") {
                    return Some(u.to_string());
                }
                let b = base.as_ref()?;
                let rel = if u.starts_with('/') {
                    u.to_string()
                } else {
                    format!("/{u}")
                };
                Some(format!("{}{rel}", b.trim_end_matches('/')))
            };
            if let Some(full) = abs_of(&s.url) {
                let after = full.split_once("://").map_or(full.as_str(), |(_, r)| r);
                let authority = after.split(['/', '?']).next().unwrap_or("");
                if authority.contains("{{") {
                    return Err(at(
                        source,
                        line("url"),
                        &key("url"),
                        "variables and templates go in the path and query, not in the host or port",
                    ));
                }
            }
            let Some(absolute) = abs_of(&url) else {
                return Err(at(
                    source,
                    line("url"),
                    &key("url"),
                    "a relative URL needs base: in the file or a URL on the command line",
                ));
            };
            let body_parts = match &s.body {
                Some(b) => var_parts(b, &vars, &known)
                    .map_err(|e| at(source, line("body"), &key("body"), e))?,
                None => None,
            };
            let body = s
                .body
                .as_deref()
                .map(|b| skeleton(&body_parts, b))
                .unwrap_or_default();
            let method = s
                .method
                .clone()
                .unwrap_or_else(|| if s.body.is_some() { "POST" } else { "GET" }.into());
            let mut target = Target::new(&method, &absolute, body.into_bytes(), 1)
                .map_err(|e| at(source, line("url"), &key("url"), e))?;
            let own = header_pairs(s.headers.as_ref(), source, || line("headers"))?;
            let mut headers: Vec<(String, String)> = common
                .iter()
                .filter(|(n, _)| !own.iter().any(|(o, _)| o.eq_ignore_ascii_case(n)))
                .cloned()
                .collect();
            headers.extend(own);
            let mut var_headers = Vec::new();
            for (n, v) in &mut headers {
                if let Some(p) = var_parts(v, &vars, &known)
                    .map_err(|e| at(source, line("headers"), &key(&format!("headers.{n}")), e))?
                {
                    *v = skeleton(&Some(p.clone()), v);
                    var_headers.push((n.clone(), p));
                }
            }
            let own_cookie = headers
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case("cookie"));
            target.headers = headers;
            // Checks that the skeleton compiles now, so a bad {{...}} is
            // refused before any request.
            crate::build_request(&target, &[], true, None)
                .map_err(|e| at(source, line("url"), &key("request"), e))?;
            let var_parts =
                if url_parts.is_some() || body_parts.is_some() || !var_headers.is_empty() {
                    let path_text = target.path.clone();
                    // The path keeps the URL's variables: the URL's skeleton
                    // turned each into `0`; re-split the path the same way.
                    let path = match (&url_parts, abs_of(&s.url)) {
                        (Some(_), Some(full)) => {
                            // The path and query after the authority, variables kept.
                            let after = full.split_once("://").map_or(full.as_str(), |(_, r)| r);
                            let rel = match after.find(['/', '?']) {
                                Some(i) if after.as_bytes()[i] == b'/' => after[i..].to_string(),
                                Some(i) => format!("/{}", &after[i..]),
                                None => "/".to_string(),
                            };
                            let rel = rel.split('#').next().unwrap_or("/").to_string();
                            var_parts(&rel, &vars, &known)
                                .map_err(|e| at(source, line("url"), &key("url"), e))?
                                .unwrap_or_else(|| vec![VarPart::Lit(path_text.clone())])
                        }
                        _ => vec![VarPart::Lit(path_text)],
                    };
                    Some(VarRequest {
                        path,
                        headers: var_headers,
                        body: body_parts.unwrap_or_else(|| {
                            vec![VarPart::Lit(
                                String::from_utf8_lossy(&target.body).into_owned(),
                            )]
                        }),
                    })
                } else {
                    None
                };
            let mut checks = Checks::default();
            if let Some(c) = &s.checks {
                checks.status = match &c.status {
                    None => Vec::new(),
                    Some(file::OneOrMany::One(x)) => vec![*x],
                    Some(file::OneOrMany::Many(v)) => v.clone(),
                };
                if let Some(bad) = checks.status.iter().find(|x| !(100..=599).contains(*x)) {
                    return Err(at(
                        source,
                        line("status"),
                        &key("checks.status"),
                        format!("{bad} is not an HTTP status"),
                    ));
                }
                checks.body_contains = c.body_contains.as_ref().map(|b| b.as_bytes().to_vec());
                for j in &c.json {
                    let path = JsonPath::parse(&j.path)
                        .map_err(|e| at(source, line("path"), &key("checks.json.path"), e))?;
                    let expect = match (&j.equals, j.exists) {
                        (Some(v), None) => {
                            JsonExpect::Equals(serde_json::to_value(v).map_err(|e| {
                                at(source, line("equals"), &key("checks.json.equals"), e)
                            })?)
                        }
                        (None, Some(b)) => JsonExpect::Exists(b),
                        _ => {
                            return Err(at(
                                source,
                                line("path"),
                                &key("checks.json"),
                                "give exactly one of equals: or exists:",
                            ))
                        }
                    };
                    checks.json.push(JsonCheck { path, expect });
                }
            }
            let mut extract = Vec::new();
            for e in &s.extract {
                let var = e.var.trim();
                if var.is_empty() || !var.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
                    return Err(at(
                        source,
                        line("var"),
                        &key("extract.var"),
                        format!("{var:?}: a variable name is letters, digits and _"),
                    ));
                }
                let from = match (&e.json, &e.header, &e.regex) {
                    (Some(p), None, None) => Source::Json(
                        JsonPath::parse(p)
                            .map_err(|x| at(source, line("json"), &key("extract.json"), x))?,
                    ),
                    (None, Some(h), None) => Source::Header(h.trim().to_string()),
                    (None, None, Some(r)) => {
                        let re = regex::bytes::Regex::new(r)
                            .map_err(|x| at(source, line("regex"), &key("extract.regex"), x))?;
                        if re.captures_len() != 2 {
                            return Err(at(
                                source,
                                line("regex"),
                                &key("extract.regex"),
                                format!(
                                    "{r:?} needs exactly one group (...), it has {}",
                                    re.captures_len() - 1
                                ),
                            ));
                        }
                        Source::Regex(re)
                    }
                    _ => {
                        return Err(at(
                            source,
                            line("var"),
                            &key("extract"),
                            "give exactly one of json:, header:, regex:",
                        ))
                    }
                };
                let slot = match vars.iter().position(|v| v == var) {
                    Some(i) => i,
                    None => {
                        vars.push(var.to_string());
                        vars.len() - 1
                    }
                };
                extract.push(Extract { var: slot, from });
            }
            for x in &extract {
                if !known.contains(&x.var) {
                    known.push(x.var);
                }
            }
            let think = match &s.think {
                Some(t) => {
                    Some(parse_think(t).map_err(|e| at(source, line("think"), &key("think"), e))?)
                }
                None => None,
            };
            steps.push(Step {
                name,
                target,
                var_parts,
                checks,
                extract,
                think,
                own_cookie,
            });
        }
        Ok(Scenario {
            source: source.to_string(),
            steps,
            once,
            vars,
        })
    }

    /// The plan's targets: one per step, in order.
    pub fn targets(&self) -> Vec<Target> {
        self.steps.iter().map(|s| s.target.clone()).collect()
    }
}

/// A scenario as the workers run it: the compiled steps plus the run's
/// headers, which a step with variables needs to rebuild its request.
#[derive(Debug)]
pub struct Prepared {
    /// The scenario.
    pub scenario: std::sync::Arc<Scenario>,
    /// The plan's headers with what the transport adds.
    pub headers: Vec<(String, String)>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn compile(text: &str) -> Result<Scenario, String> {
        Scenario::compile("s.yaml", text, Some("http://127.0.0.1:1/api")).map_err(|e| e.to_string())
    }

    #[test]
    fn json_paths() {
        let doc = serde_json::json!({"a": {"b": [10, {"c d": true}]}});
        let p = |s: &str| JsonPath::parse(s).unwrap();
        assert_eq!(p("$.a.b[0]").find(&doc), Some(&serde_json::json!(10)));
        assert_eq!(
            p("$.a.b[1]['c d']").find(&doc),
            Some(&serde_json::json!(true))
        );
        assert_eq!(p("$").find(&doc), Some(&doc));
        assert!(p("$.a.x").find(&doc).is_none());
        assert!(p("$.a.b[9]").find(&doc).is_none());
        for bad in ["a.b", "$.", "$[x", "$[x]", "$a"] {
            assert!(JsonPath::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn steps_compile_with_variables_base_and_once() {
        let s = compile(
            "once:\n  - name: login\n    method: post\n    url: login\n    body: '{\"u\":1}'\n    extract:\n      - var: id\n        json: $.id\nsteps:\n  - name: item\n    url: /items/{{var.id}}?q={{seq}}\n    headers:\n      X-Id: 'v{{var.id}}'\n    think: 10ms..20ms\n",
        )
        .unwrap();
        assert_eq!(s.once, 1);
        assert_eq!(s.steps[0].target.method, "POST");
        assert_eq!(s.steps[0].target.path, "/api/login");
        let item = &s.steps[1];
        assert_eq!(item.target.path, "/api/items/0?q={{seq}}");
        let vr = item.var_parts.as_ref().unwrap();
        assert_eq!(
            vr.path,
            vec![
                VarPart::Lit("/api/items/".into()),
                VarPart::Var(0),
                VarPart::Lit("?q={{seq}}".into())
            ]
        );
        assert_eq!(vr.headers[0].0, "X-Id");
        assert_eq!(
            item.think,
            Some(Think {
                low: Duration::from_millis(10),
                high: Duration::from_millis(20)
            })
        );
    }

    #[test]
    fn refusals_name_the_line_and_key() {
        let cases = [
            ("steps:\n  - name: a\n    url: /x\n    bogus: 1\n", "s.yaml:4:", "bogus"),
            ("steps:\n  - name: a\n    url: /{{var.x}}\n", "s.yaml:3:", "var.x"),
            ("steps:\n  - name: a\n    url: /x\n  - name: a\n    url: /y\n", "s.yaml:4:", "two steps"),
            ("steps:\n  - name: a\n    url: /x\n    checks:\n      status: 999\n", "s.yaml:5:", "checks.status"),
            ("steps:\n  - name: a\n    url: /x\n    think: 2s..1s\n", "s.yaml:4:", "backwards"),
            ("steps:\n  - name: a\n    url: http://{{var.h}}:1/x\n", "s.yaml:3:", "url"),
            ("steps: []\n", "s.yaml:1:", "at least one"),
            ("steps:\n  - name: a\n    url: /x\n    extract:\n      - var: v\n        json: $.a\n        header: X\n", "s.yaml:5:", "exactly one of"),
        ];
        for (text, at, what) in cases {
            let e = compile(text)
                .err()
                .unwrap_or_else(|| panic!("{text} compiled"));
            assert!(e.contains(at) && e.contains(what), "{text}: {e}");
        }
    }
}
