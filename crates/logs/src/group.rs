//! Route grouping: alp's matching groups (`-m`), and automatic grouping of
//! id-like path segments (`--auto-group`), which alp cannot do.

use std::borrow::Cow;

/// Turns a normalised URI into a route name.
#[derive(Debug, Clone, Default)]
pub struct Grouper {
    groups: Vec<(regex::Regex, String)>,
    auto: bool,
}

/// A matching-group pattern that does not compile.
#[derive(Debug, thiserror::Error)]
#[error("matching group {pattern:?}: {}", crate::format::regex_message(source))]
pub struct GroupError {
    /// The pattern as given.
    pub pattern: String,
    /// The regex error.
    #[source]
    pub source: regex::Error,
}

impl Grouper {
    /// Groups by `patterns` (first match wins, the pattern text is the
    /// route name, as in alp), then, if `auto`, by id-like segments.
    pub fn new(patterns: &[String], auto: bool) -> Result<Grouper, GroupError> {
        let groups = patterns
            .iter()
            .map(|p| {
                regex::Regex::new(p)
                    .map(|re| (re, p.clone()))
                    .map_err(|source| GroupError {
                        pattern: p.clone(),
                        source,
                    })
            })
            .collect::<Result<_, _>>()?;
        Ok(Grouper { groups, auto })
    }

    /// Whether any grouping is configured.
    pub fn is_active(&self) -> bool {
        self.auto || !self.groups.is_empty()
    }

    /// The route name for `uri`.
    pub fn route<'a>(&self, uri: &'a str) -> Cow<'a, str> {
        for (re, name) in &self.groups {
            if re.is_match(uri) {
                return Cow::Owned(name.clone());
            }
        }
        if self.auto {
            return auto_group(uri);
        }
        Cow::Borrowed(uri)
    }
}

fn is_uuid(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 36
        && b.iter().enumerate().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => *c == b'-',
            _ => c.is_ascii_hexdigit(),
        })
}

fn is_date(s: &str) -> bool {
    let b = s.as_bytes();
    b.len() == 10
        && b[4] == b'-'
        && b[7] == b'-'
        && b.iter()
            .enumerate()
            .all(|(i, c)| i == 4 || i == 7 || c.is_ascii_digit())
}

/// The placeholder for an id-like path segment, if it is one.
fn placeholder(seg: &str) -> Option<&'static str> {
    if seg.is_empty() {
        return None;
    }
    let b = seg.as_bytes();
    if b.iter().all(u8::is_ascii_digit) {
        return Some(":id");
    }
    if is_uuid(seg) {
        return Some(":uuid");
    }
    if is_date(seg) {
        return Some(":date");
    }
    let digits = b.iter().filter(|c| c.is_ascii_digit()).count();
    if b.len() >= 8 && digits > 0 && b.iter().all(u8::is_ascii_hexdigit) {
        return Some(":hex");
    }
    // Long mixed letter/digit tokens (session ids, base64url keys).
    let letters = b.iter().filter(|c| c.is_ascii_alphabetic()).count();
    if b.len() >= 20
        && digits >= 2
        && letters >= 2
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || *c == b'-' || *c == b'_')
    {
        return Some(":token");
    }
    None
}

/// Splits "123.json" into ("123", ".json") so the extension survives grouping.
fn stem_ext(seg: &str) -> (&str, &str) {
    match seg.rfind('.') {
        Some(d)
            if d > 0
                && d + 1 < seg.len()
                && seg[d + 1..].bytes().all(|c| c.is_ascii_alphabetic()) =>
        {
            seg.split_at(d)
        }
        _ => (seg, ""),
    }
}

/// Replaces id-like path segments (numbers, UUIDs, dates, hex ids, long
/// tokens) with `:id`, `:uuid`, `:date`, `:hex`, `:token`; the query string,
/// if kept, is left alone.
pub fn auto_group(uri: &str) -> Cow<'_, str> {
    let (path, rest) = match uri.find(['?', '#']) {
        Some(i) => uri.split_at(i),
        None => (uri, ""),
    };
    if !path
        .split('/')
        .any(|s| placeholder(stem_ext(s).0).is_some())
    {
        return Cow::Borrowed(uri);
    }
    let mut out = String::with_capacity(uri.len());
    for (i, seg) in path.split('/').enumerate() {
        if i > 0 {
            out.push('/');
        }
        let (stem, ext) = stem_ext(seg);
        match placeholder(stem) {
            Some(p) => {
                out.push_str(p);
                out.push_str(ext);
            }
            None => out.push_str(seg),
        }
    }
    out.push_str(rest);
    Cow::Owned(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_match_wins_and_names_the_route() {
        let g = Grouper::new(&["/users/[0-9]+$".into(), "/users/.+".into()], false).unwrap();
        assert_eq!(g.route("/users/12"), "/users/[0-9]+$");
        assert_eq!(g.route("/users/ab"), "/users/.+");
        assert_eq!(g.route("/items/1"), "/items/1");
    }

    #[test]
    fn auto() {
        assert_eq!(
            auto_group("/users/123/posts/2026-11-21"),
            "/users/:id/posts/:date"
        );
        assert_eq!(
            auto_group("/o/550e8400-e29b-41d4-a716-446655440000"),
            "/o/:uuid"
        );
        assert_eq!(auto_group("/blob/9f86d081884c7d65"), "/blob/:hex");
        assert_eq!(auto_group("/img/42.png?x=1"), "/img/:id.png?x=1");
        assert_eq!(auto_group("/static/deadbeef"), "/static/deadbeef");
        assert_eq!(auto_group("/api/v2/users"), "/api/v2/users");
    }

    #[test]
    fn bad_pattern_is_reported() {
        let e = Grouper::new(&["(".into()], false).unwrap_err();
        assert!(e.to_string().contains("matching group \"(\""));
    }
}
