//! URI normalisation with the same results as alp, which runs every URI
//! through Go's `net/url` (`url.Parse` then `URL.String()`): routes must get
//! the same names here as there, or per-route numbers cannot be compared.

use std::borrow::Cow;

/// How query strings take part in the route name.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum QueryMode {
    /// Drop the query string (alp's default).
    #[default]
    Drop,
    /// Keep it, with parameters sorted by name (`-q`).
    Keep,
    /// Keep parameter names only, every value replaced by `xxx` (`-q --qs-ignore-values`).
    IgnoreValues,
}

fn is_hex(b: u8) -> bool {
    b.is_ascii_hexdigit()
}

fn hex_val(b: u8) -> u8 {
    match b {
        b'0'..=b'9' => b - b'0',
        b'a'..=b'f' => b - b'a' + 10,
        _ => b - b'A' + 10,
    }
}

const HEX: &[u8; 16] = b"0123456789ABCDEF";

/// Bytes Go accepts verbatim in an already-escaped path (`validEncoded`).
fn path_ok_verbatim(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-_.~$&+,/:;=@!'()*[]%".contains(&b)
}

/// Bytes Go leaves unescaped when it escapes a path from scratch.
fn path_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-_.~$&+,/:;=@".contains(&b)
}

fn query_unreserved(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b"-_.~".contains(&b)
}

/// Percent-decodes `s`; `plus_is_space` for query components. `None` on a
/// malformed escape, which makes Go reject the whole URI (or query pair).
fn unescape(s: &[u8], plus_is_space: bool) -> Option<Vec<u8>> {
    let mut out = Vec::with_capacity(s.len());
    let mut i = 0;
    while i < s.len() {
        match s[i] {
            b'%' => {
                if i + 2 < s.len() && is_hex(s[i + 1]) && is_hex(s[i + 2]) {
                    out.push(hex_val(s[i + 1]) << 4 | hex_val(s[i + 2]));
                    i += 3;
                } else {
                    return None;
                }
            }
            b'+' if plus_is_space => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    Some(out)
}

fn valid_escapes(s: &[u8]) -> bool {
    let mut i = 0;
    while i < s.len() {
        if s[i] == b'%' {
            if i + 2 >= s.len() || !is_hex(s[i + 1]) || !is_hex(s[i + 2]) {
                return false;
            }
            i += 3;
        } else {
            i += 1;
        }
    }
    true
}

fn push_escaped(out: &mut String, bytes: &[u8], keep: fn(u8) -> bool, space_as_plus: bool) {
    for &b in bytes {
        if keep(b) {
            out.push(b as char);
        } else if b == b' ' && space_as_plus {
            out.push('+');
        } else {
            out.push('%');
            out.push(HEX[(b >> 4) as usize] as char);
            out.push(HEX[(b & 15) as usize] as char);
        }
    }
}

/// The escaped path as Go's `URL.EscapedPath` prints it.
fn escaped_path(path: &[u8]) -> Option<Cow<'_, str>> {
    if !valid_escapes(path) {
        return None;
    }
    if path.iter().all(|&b| path_ok_verbatim(b)) {
        // All ASCII, so this cannot fail.
        return std::str::from_utf8(path).ok().map(Cow::Borrowed);
    }
    let raw = unescape(path, false)?;
    let mut out = String::with_capacity(raw.len() + 8);
    push_escaped(&mut out, &raw, path_unreserved, false);
    Some(Cow::Owned(out))
}

/// Re-encodes a query the way Go's `Values.Encode` does after `ParseQuery`:
/// parameters sorted by name (stable for repeated names), each component
/// query-escaped. Pairs Go refuses (bad escapes, `;`) are dropped.
fn encode_query(raw: &[u8], ignore_values: bool) -> String {
    let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
    for part in raw.split(|&b| b == b'&') {
        if part.is_empty() || part.contains(&b';') {
            continue;
        }
        let (k, v) = match memchr::memchr(b'=', part) {
            Some(i) => (&part[..i], &part[i + 1..]),
            None => (part, &b""[..]),
        };
        let (Some(k), Some(v)) = (unescape(k, true), unescape(v, true)) else {
            continue;
        };
        pairs.push((k, v));
    }
    if ignore_values {
        // Go's `Values.Set` leaves one "xxx" per name.
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
        pairs.dedup_by(|a, b| a.0 == b.0);
        for p in &mut pairs {
            p.1 = b"xxx".to_vec();
        }
    } else {
        pairs.sort_by(|a, b| a.0.cmp(&b.0));
    }
    let mut out = String::new();
    for (i, (k, v)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push('&');
        }
        push_escaped(&mut out, k, query_unreserved, true);
        out.push('=');
        push_escaped(&mut out, v, query_unreserved, true);
    }
    out
}

/// Normalises a request URI into a route name exactly as alp does.
///
/// Returns `None` where alp skips the line: Go's URL parser rejects the URI
/// (control characters, malformed `%` escapes, a colon in a relative first
/// segment) or the result is empty.
pub fn normalize(raw: &[u8], mode: QueryMode) -> Option<Cow<'_, str>> {
    if raw.iter().any(|&b| b < 0x20 || b == 0x7f) {
        return None;
    }
    let (rest, fragment) = match memchr::memchr(b'#', raw) {
        Some(i) => (&raw[..i], Some(&raw[i + 1..])),
        None => (raw, None),
    };
    let (path, query) = match memchr::memchr(b'?', rest) {
        Some(i) => (&rest[..i], Some(&rest[i + 1..])),
        None => (rest, None),
    };
    if let Some(colon) = memchr::memchr(b':', path) {
        // Go reads "scheme:..." as an absolute URL; alp keeps its String() form,
        // which is the input for the usual cases. A colon before any slash in a
        // relative reference is an error there.
        let slash = memchr::memchr(b'/', path).unwrap_or(path.len());
        if colon < slash
            && !path[..colon]
                .first()
                .is_some_and(|b| b.is_ascii_alphabetic())
        {
            return None;
        }
    }
    let epath = escaped_path(path)?;
    let out: Cow<'_, str> = match (query, mode) {
        (None, _) => epath,
        // "/a?" keeps its lone question mark in Go (ForceQuery).
        (Some(b""), _) => Cow::Owned(format!("{epath}?")),
        (Some(_), QueryMode::Drop) => epath,
        (Some(q), m) => {
            let enc = encode_query(q, m == QueryMode::IgnoreValues);
            if enc.is_empty() {
                epath
            } else {
                Cow::Owned(format!("{epath}?{enc}"))
            }
        }
    };
    let out = match fragment {
        Some(f) => {
            let mut s = out.into_owned();
            s.push('#');
            let f = unescape(f, false)?;
            push_escaped(&mut s, &f, |b| path_ok_verbatim(b) || b == b'?', false);
            Cow::Owned(s)
        }
        None => out,
    };
    if out.is_empty() {
        None
    } else {
        Some(out)
    }
}

/// [`normalize`] for text that may be owned (JSON values).
pub fn normalize_cow(raw: Cow<'_, [u8]>, mode: QueryMode) -> Option<Cow<'_, str>> {
    match raw {
        Cow::Borrowed(b) => normalize(b, mode),
        Cow::Owned(v) => normalize(&v, mode).map(|c| Cow::Owned(c.into_owned())),
    }
}

/// alp's `--decode-uri` view of a stored route name: path and query
/// percent-decoded for display.
pub fn decode_for_display(uri: &str) -> String {
    let (path, query) = match uri.find('?') {
        Some(i) => (&uri[..i], Some(&uri[i + 1..])),
        None => (uri, None),
    };
    let dpath = unescape(path.as_bytes(), false)
        .map(|v| String::from_utf8_lossy(&v).into_owned())
        .unwrap_or_default();
    match query {
        Some(q) if !q.is_empty() => {
            let enc = encode_query(q.as_bytes(), false);
            let dq = unescape(enc.as_bytes(), true)
                .map(|v| String::from_utf8_lossy(&v).into_owned())
                .unwrap_or_default();
            format!("{dpath}?{dq}")
        }
        _ => dpath,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn n(s: &str, m: QueryMode) -> Option<String> {
        normalize(s.as_bytes(), m).map(|c| c.into_owned())
    }

    #[test]
    fn plain_paths_are_kept() {
        assert_eq!(n("/a/b", QueryMode::Drop).as_deref(), Some("/a/b"));
        assert_eq!(n("/a%2Fb", QueryMode::Drop).as_deref(), Some("/a%2Fb"));
        assert_eq!(n("/a(b)!", QueryMode::Drop).as_deref(), Some("/a(b)!"));
    }

    #[test]
    fn unsafe_bytes_are_escaped_like_go() {
        assert_eq!(n("/a b", QueryMode::Drop).as_deref(), Some("/a%20b"));
        assert_eq!(
            n("/%41 (x)", QueryMode::Drop).as_deref(),
            Some("/A%20%28x%29")
        );
        assert_eq!(n("/é", QueryMode::Drop).as_deref(), Some("/%C3%A9"));
    }

    #[test]
    fn queries() {
        assert_eq!(n("/a?b=2&a=1", QueryMode::Drop).as_deref(), Some("/a"));
        assert_eq!(
            n("/a?b=2&a=1", QueryMode::Keep).as_deref(),
            Some("/a?a=1&b=2")
        );
        assert_eq!(
            n("/a?b=2&a=1&b=3", QueryMode::IgnoreValues).as_deref(),
            Some("/a?a=xxx&b=xxx")
        );
        assert_eq!(
            n("/a?x=a b+c", QueryMode::Keep).as_deref(),
            Some("/a?x=a+b+c")
        );
        assert_eq!(n("/a?", QueryMode::Drop).as_deref(), Some("/a?"));
    }

    #[test]
    fn rejects_what_go_rejects() {
        assert_eq!(n("/a%zz", QueryMode::Drop), None);
        assert_eq!(n("/a\x01", QueryMode::Drop), None);
        assert_eq!(n("", QueryMode::Drop), None);
        assert_eq!(n("?a=1", QueryMode::Drop), None);
    }

    #[test]
    fn decode() {
        assert_eq!(decode_for_display("/a%20b?x=a+b"), "/a b?x=a b");
    }
}
