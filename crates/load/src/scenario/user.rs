//! A virtual user at run time: where it is in the scenario, its
//! variables and its cookies; what a response means for it (checks,
//! extractions, `Set-Cookie`); and the next request's bytes.

use super::{JsonExpect, Scenario, Source, Step, VarPart};
use crate::http::Capture;
use crate::template::{ConnDraw, Counters, Data, Rng};
use std::time::Instant;

/// Why a step failed although its response arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The status was not one of `checks.status`.
    Status,
    /// The body did not contain `checks.body_contains`.
    Body,
    /// A `checks.json` path check failed (or the body is not JSON).
    Json,
    /// An extraction found nothing (or a value a header cannot carry).
    Extract,
}

/// One cookie of the jar. Expiry is not tracked (a run is short);
/// `Max-Age=0` deletes, as servers log out that way.
#[derive(Debug, Clone, PartialEq)]
pub struct Cookie {
    /// Its name.
    pub name: String,
    /// Its value.
    pub value: String,
    /// Sent on request paths under this one (`/` when not given).
    pub path: String,
}

/// A small cookie jar: one per virtual user, one host (the target's).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Jar {
    /// The cookies, in the order first set.
    pub cookies: Vec<Cookie>,
}

impl Jar {
    /// Takes one `Set-Cookie` value: `name=value; Path=/p; ...`.
    pub fn set(&mut self, header: &[u8]) {
        let Ok(h) = std::str::from_utf8(header) else {
            return;
        };
        let mut attrs = h.split(';');
        let Some((name, value)) = attrs.next().and_then(|nv| nv.split_once('=')) else {
            return;
        };
        let name = name.trim();
        if name.is_empty() {
            return;
        }
        let value = value.trim().trim_matches('"').to_string();
        let mut path = "/".to_string();
        let mut delete = false;
        for a in attrs {
            let (k, v) = a.split_once('=').unwrap_or((a, ""));
            let k = k.trim();
            if k.eq_ignore_ascii_case("path") && v.trim().starts_with('/') {
                path = v.trim().to_string();
            } else if k.eq_ignore_ascii_case("max-age")
                && v.trim().parse::<i64>().is_ok_and(|n| n <= 0)
            {
                delete = true;
            }
        }
        self.cookies.retain(|c| !(c.name == name && c.path == path));
        if !delete {
            self.cookies.push(Cookie {
                name: name.to_string(),
                value,
                path,
            });
        }
    }

    /// The `Cookie` header value for a request path, if any cookie applies.
    pub fn header(&self, req_path: &[u8]) -> Option<Vec<u8>> {
        let p = req_path.split(|b| *b == b'?').next().unwrap_or(b"/");
        let mut out = Vec::new();
        for c in &self.cookies {
            let cp = c.path.as_bytes();
            let under = p.starts_with(cp)
                && (cp.ends_with(b"/") || p.len() == cp.len() || p.get(cp.len()) == Some(&b'/'));
            if !under {
                continue;
            }
            if !out.is_empty() {
                out.extend_from_slice(b"; ");
            }
            out.extend_from_slice(c.name.as_bytes());
            out.push(b'=');
            out.extend_from_slice(c.value.as_bytes());
        }
        (!out.is_empty()).then_some(out)
    }
}

/// A virtual user.
#[derive(Debug, Clone)]
pub struct User {
    /// The once block has succeeded.
    pub once_done: bool,
    /// An iteration (or the once block before it) is under way.
    pub in_iteration: bool,
    /// The step running or next.
    pub step: usize,
    /// The iteration's start: its intended start in the open model.
    pub started: Instant,
    /// Variable values by slot.
    pub vars: Vec<Option<String>>,
    /// Cookies.
    pub jar: Jar,
    /// Identifies the pending think-time timer (stale ones are ignored).
    pub timer: u64,
    /// Suspended by think time.
    pub thinking: bool,
}

impl User {
    /// A user that has run nothing yet.
    pub fn new(s: &Scenario, now: Instant) -> User {
        User {
            once_done: s.once == 0,
            in_iteration: false,
            step: 0,
            started: now,
            vars: vec![None; s.vars.len()],
            jar: Jar::default(),
            timer: 0,
            thinking: false,
        }
    }

    /// Starts an iteration at `intended` (the once block first, if it has
    /// not succeeded yet); returns the first step.
    pub fn begin(&mut self, s: &Scenario, intended: Instant) -> usize {
        self.in_iteration = true;
        self.thinking = false;
        self.started = intended;
        self.step = if self.once_done { s.once } else { 0 };
        self.step
    }

    /// Judges step `self.step`'s response and takes its cookies and values.
    pub fn judge(
        &mut self,
        step: &Step,
        status: u16,
        cap: Option<&Capture>,
    ) -> Result<(), Failure> {
        let empty = Capture::default();
        let cap = cap.unwrap_or(&empty);
        for (n, v) in &cap.headers {
            if n.eq_ignore_ascii_case("set-cookie") {
                self.jar.set(v);
            }
        }
        let c = &step.checks;
        if !c.status.is_empty() && !c.status.contains(&status) {
            return Err(Failure::Status);
        }
        if let Some(want) = &c.body_contains {
            if !want.is_empty() && !cap.body.windows(want.len()).any(|w| w == want.as_slice()) {
                return Err(Failure::Body);
            }
        }
        let needs_json = !c.json.is_empty()
            || step
                .extract
                .iter()
                .any(|e| matches!(e.from, Source::Json(_)));
        let json: Option<serde_json::Value> = if needs_json {
            serde_json::from_slice(&cap.body).ok()
        } else {
            None
        };
        for j in &c.json {
            let Some(doc) = &json else {
                return Err(Failure::Json);
            };
            let found = j.path.find(doc);
            let ok = match &j.expect {
                JsonExpect::Exists(want) => found.is_some() == *want,
                JsonExpect::Equals(want) => found.is_some_and(|v| json_equal(v, want)),
            };
            if !ok {
                return Err(Failure::Json);
            }
        }
        for e in &step.extract {
            let value: Option<String> = match &e.from {
                Source::Json(p) => json.as_ref().and_then(|d| p.find(d)).map(|v| match v {
                    serde_json::Value::String(s) => s.clone(),
                    other => other.to_string(),
                }),
                Source::Header(h) => cap
                    .headers
                    .iter()
                    .find(|(n, _)| n.eq_ignore_ascii_case(h))
                    .and_then(|(_, v)| std::str::from_utf8(v).ok())
                    .map(|v| v.trim().to_string()),
                Source::Regex(re) => re
                    .captures(&cap.body)
                    .and_then(|m| m.get(1))
                    .and_then(|m| std::str::from_utf8(m.as_bytes()).ok())
                    .map(str::to_string),
            };
            // A value that would break the request's framing is as good as none.
            match value.filter(|v| !v.bytes().any(|b| b == b'\r' || b == b'\n' || b == 0)) {
                Some(v) => {
                    if let Some(slot) = self.vars.get_mut(e.var) {
                        *slot = Some(v);
                    }
                }
                None => return Err(Failure::Extract),
            }
        }
        Ok(())
    }

    fn var(&self, slot: usize) -> &str {
        self.vars.get(slot).and_then(|v| v.as_deref()).unwrap_or("")
    }

    /// Renders the text of a variable part; braces in values are escaped
    /// (`{{` stays literal) and URL values percent-encoded.
    fn text(&self, parts: &[VarPart], url: bool) -> String {
        let mut out = String::new();
        for p in parts {
            match p {
                VarPart::Lit(l) => out.push_str(l),
                VarPart::Var(slot) => {
                    let v = self.var(*slot);
                    if url {
                        for b in v.bytes() {
                            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                                out.push(b as char);
                            } else {
                                out.push_str(&format!("%{b:02X}"));
                            }
                        }
                    } else {
                        out.push_str(&v.replace("{{", "{{{{"));
                    }
                }
            }
        }
        out
    }
}

/// What a request is built from besides the step: the run's headers and
/// keep-alive choice, `--data`, and the template counters.
pub(crate) struct Inputs<'a> {
    /// Plan headers (plus what the transport adds).
    pub headers: &'a [(String, String)],
    /// Keep-alive.
    pub keepalive: bool,
    /// `--data` rows.
    pub data: Option<&'a Data>,
    /// `{{seq}}` and the row cursor.
    pub counters: &'a Counters,
    /// Through a plain proxy: the request line carries the absolute form.
    pub absolute_form: bool,
}

/// Renders step `step`'s request for `user` into `draw.buf`: `fixed` or
/// the template already rendered there (`rendered`) when the step has no
/// variables, else rebuilt from the variables' values; then the jar's
/// `Cookie` header goes in. Returns false when the request cannot be
/// built (a value the template refuses).
#[allow(clippy::too_many_arguments)]
pub(crate) fn render(
    user: &User,
    step: &Step,
    fixed: &[u8],
    rendered: bool,
    draw: &mut ConnDraw,
    rng: &mut Rng,
    inp: &Inputs<'_>,
) -> bool {
    if let Some(vr) = &step.var_parts {
        let mut t = step.target.clone();
        t.path = user.text(&vr.path, true);
        for (n, parts) in &vr.headers {
            let v = user.text(parts, false);
            if let Some(h) = t.headers.iter_mut().find(|(hn, _)| hn == n) {
                h.1 = v;
            }
        }
        t.body = user.text(&vr.body, false).into_bytes();
        if inp.absolute_form {
            t.path = crate::transport::absolute_target(&t);
        }
        match crate::build_request(&t, inp.headers, inp.keepalive, inp.data) {
            Ok(crate::Request::Fixed(b)) => {
                draw.buf.clear();
                draw.buf.extend_from_slice(&b);
            }
            Ok(crate::Request::Templated(tpl)) => tpl.render(draw, inp.counters, inp.data, rng),
            Err(_) => return false,
        }
    } else if !rendered {
        draw.buf.clear();
        draw.buf.extend_from_slice(fixed);
    }
    if step.own_cookie || user.jar.cookies.is_empty() {
        return true;
    }
    let path = request_path(&draw.buf);
    if let Some(cookie) = user.jar.header(path) {
        // The head ends at the first blank line; the cookie goes before it.
        if let Some(end) = draw.buf.windows(4).position(|w| w == b"\r\n\r\n") {
            let mut line = Vec::with_capacity(cookie.len() + 10);
            line.extend_from_slice(b"Cookie: ");
            line.extend_from_slice(&cookie);
            line.extend_from_slice(b"\r\n");
            let at = end + 2;
            draw.buf.splice(at..at, line);
        }
    }
    true
}

/// The request line's target (path and query; the absolute form's path).
fn request_path(req: &[u8]) -> &[u8] {
    let line = req.split(|b| *b == b'\r').next().unwrap_or(b"");
    let t = line.split(|b| *b == b' ').nth(1).unwrap_or(b"/");
    match t.windows(3).position(|w| w == b"://") {
        Some(i) => {
            let rest = &t[i + 3..];
            rest.iter()
                .position(|b| *b == b'/')
                .map_or(b"/".as_slice(), |j| &rest[j..])
        }
        None => t,
    }
}

/// JSON equality where numbers compare by value (`1` equals `1.0`).
fn json_equal(a: &serde_json::Value, b: &serde_json::Value) -> bool {
    use serde_json::Value as V;
    match (a, b) {
        (V::Number(x), V::Number(y)) => x.as_f64() == y.as_f64(),
        (V::Array(x), V::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(p, q)| json_equal(p, q))
        }
        (V::Object(x), V::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| json_equal(v, w)))
        }
        _ => a == b,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn jar_keeps_replaces_deletes_and_scopes_by_path() {
        let mut j = Jar::default();
        j.set(b"sid=abc; Path=/; HttpOnly");
        j.set(b"pref=dark; Path=/app");
        assert_eq!(j.header(b"/me").unwrap(), b"sid=abc");
        assert_eq!(j.header(b"/app/x?y=1").unwrap(), b"sid=abc; pref=dark");
        assert_eq!(j.header(b"/apple").unwrap(), b"sid=abc");
        j.set(b"sid=def");
        assert_eq!(j.header(b"/").unwrap(), b"sid=def");
        j.set(b"sid=; Max-Age=0");
        assert!(j.header(b"/").is_none());
        j.set(b"novalue");
        assert!(j.cookies.iter().all(|c| c.name != "novalue"));
    }

    #[test]
    fn json_numbers_compare_by_value() {
        assert!(json_equal(&serde_json::json!(1), &serde_json::json!(1.0)));
        assert!(!json_equal(&serde_json::json!("1"), &serde_json::json!(1)));
    }
}
