//! alp's `count --keys` and `topN [N]`: requests counted by the values of
//! any fields of the line (`count`), and the single requests with the
//! longest response times or largest bodies (`topN`), printed as alp does.
//!
//! A line counts only when it is a request alp would count (it parses as
//! one: uri, a time, a size and a status); `count` then skips a line that
//! lacks one of the keys asked for, as alp does.

use crate::error::{Error, Result};
use crate::format::{Format, LineParser};
use crate::render::{self, OutputFormat};
use crate::uri::QueryMode;
use std::collections::HashMap;
use std::io::BufRead;

/// The fields of one line by name, their values as alp prints them (JSON
/// numbers as Go's `%v` writes them); `None` for a line of another format.
pub fn fields(format: &Format, line: &[u8]) -> Option<HashMap<String, String>> {
    let text = String::from_utf8_lossy(crate::format::trim_line(line));
    match format {
        Format::Ltsv(_) => Some(
            text.split('\t')
                .filter_map(|f| f.split_once(':'))
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
        ),
        Format::Json(_) => {
            let serde_json::Value::Object(map) = serde_json::from_str(&text).ok()? else {
                return None;
            };
            Some(map.into_iter().map(|(k, v)| (k, go_value(&v))).collect())
        }
        Format::Regexp { pattern, .. } => {
            let caps = pattern.captures(crate::format::trim_line(line))?;
            Some(
                pattern
                    .capture_names()
                    .enumerate()
                    .filter_map(|(i, name)| {
                        let m = caps.get(i)?;
                        Some((
                            name?.to_string(),
                            String::from_utf8_lossy(m.as_bytes()).into_owned(),
                        ))
                    })
                    .collect(),
            )
        }
        // alp's subcommands exist only under ltsv, json and regexp.
        Format::Builtin(_) => None,
    }
}

/// A JSON value as Go's `fmt` `%v` prints the decoded value (numbers are
/// float64 in Go: `200`, `0.012`, `1e-05`, `1e+21`).
fn go_value(v: &serde_json::Value) -> String {
    match v {
        serde_json::Value::String(s) => s.clone(),
        serde_json::Value::Null => "<nil>".into(),
        serde_json::Value::Bool(b) => b.to_string(),
        serde_json::Value::Number(n) => n.as_f64().map_or_else(|| n.to_string(), go_float),
        other => other.to_string(),
    }
}

/// Go's `%v` of a float64: shortest digits, an exponent below 1e-4 or from
/// 1e21 on.
fn go_float(f: f64) -> String {
    if f == 0.0 || !f.is_finite() {
        return format!("{f}");
    }
    let exp = f.abs().log10().floor() as i32;
    if (-4..21).contains(&exp) {
        return format!("{f}");
    }
    let s = format!("{f:e}");
    match s.split_once('e') {
        Some((m, e)) => {
            let (sign, digits) = e.strip_prefix('-').map_or(("+", e), |d| ("-", d));
            format!("{m}e{sign}{digits:0>2}")
        }
        None => s,
    }
}

/// `count`: every distinct combination of the `keys`' values with its
/// number of requests, in alp's order (by count, ties as Go's sort leaves
/// them).
pub fn count(
    format: Format,
    input: impl BufRead,
    keys: &[String],
    reverse: bool,
) -> Result<Vec<(u64, Vec<String>)>> {
    if keys.is_empty() {
        return Err(Error::input(
            "count: --keys names the fields to count by, comma-separated (e.g. --keys method,status)",
        ));
    }
    let parser = LineParser::new(format, QueryMode::Drop, 1.0);
    let mut groups: Vec<(u64, Vec<String>)> = Vec::new();
    let mut index: HashMap<String, usize> = HashMap::new();
    for line in input.split(b'\n') {
        let line = line.map_err(|e| Error::io("reading", "the log", e))?;
        if parser.parse(&line).is_err() {
            continue;
        }
        let Some(f) = fields(parser.format(), &line) else {
            continue;
        };
        let Some(values) = keys
            .iter()
            .map(|k| f.get(k).cloned())
            .collect::<Option<Vec<String>>>()
        else {
            continue;
        };
        // alp's group key: the values joined by "_" (so "a_b","c" and
        // "a","b_c" are one group, shown with the first values seen).
        let key = values.join("_");
        let i = *index.entry(key).or_insert_with(|| {
            groups.push((0, values));
            groups.len() - 1
        });
        groups[i].0 += 1;
    }
    let perm = crate::gosort::permutation(groups.len(), |a, b| {
        let (x, y) = if reverse { (b, a) } else { (a, b) };
        groups[x].0 < groups[y].0
    });
    crate::gosort::apply_permutation(&mut groups, perm);
    Ok(groups)
}

/// `count`'s output: a `sum` column and one per key.
pub fn render_count(
    groups: &[(u64, Vec<String>)],
    keys: &[String],
    format: OutputFormat,
    no_headers: bool,
) -> Result<String> {
    let mut headers = vec!["sum".to_string()];
    headers.extend(keys.iter().cloned());
    let rows: Vec<Vec<String>> = groups
        .iter()
        .map(|(n, values)| {
            let mut row = vec![n.to_string()];
            row.extend(values.iter().cloned());
            row
        })
        .collect();
    let json_headers = headers.clone();
    grid(format, &headers, &json_headers, &rows, &rows, no_headers)
}

/// The rows in one of alp's formats; JSON's first row is `json_headers`
/// and its rows `json_rows` (alp quotes a URI with a comma there).
fn grid(
    format: OutputFormat,
    headers: &[String],
    json_headers: &[String],
    rows: &[Vec<String>],
    json_rows: &[Vec<String>],
    no_headers: bool,
) -> Result<String> {
    let mut out = render::Out::string();
    match format {
        OutputFormat::Table | OutputFormat::Markdown => {
            let titled: Vec<String> = headers.iter().map(|h| title(h)).collect();
            render::render_grid(
                &mut out,
                &titled,
                &rows.to_vec(),
                None,
                format == OutputFormat::Markdown,
            );
        }
        OutputFormat::Tsv | OutputFormat::Csv => {
            let sep = if format == OutputFormat::Tsv { "\t" } else { "," };
            if !no_headers {
                out.push_str(&headers.join(sep));
                out.push('\n');
            }
            for r in json_rows {
                out.push_str(&r.join(sep));
                out.push('\n');
            }
        }
        OutputFormat::Json => {
            let mut all: Vec<Vec<serde_json::Value>> = vec![json_headers
                .iter()
                .map(|h| serde_json::Value::String(h.clone()))
                .collect()];
            all.extend(
                json_rows
                    .iter()
                    .map(|r| r.iter().map(|c| render::json_value(c)).collect()),
            );
            out.push_str(&go_html_safe(
                &serde_json::to_string(&all).unwrap_or_default(),
            ));
            out.push('\n');
        }
        OutputFormat::Html => {
            return Err(Error::input(
                "--format html is not available for count and topN (use table, markdown, tsv, csv or json)",
            ))
        }
    }
    Ok(out.into_string())
}

/// JSON text as Go's encoder writes it: `&`, `<`, `>` and the line and
/// paragraph separators escaped (they only occur inside strings).
fn go_html_safe(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    for c in json.chars() {
        match c {
            '&' => out.push_str("\\u0026"),
            '<' => out.push_str("\\u003c"),
            '>' => out.push_str("\\u003e"),
            '\u{2028}' => out.push_str("\\u2028"),
            '\u{2029}' => out.push_str("\\u2029"),
            c => out.push(c),
        }
    }
    out
}

/// tablewriter's header title: `_` and a `.` between letters become
/// spaces, trimmed, upper-cased.
fn title(h: &str) -> String {
    let chars: Vec<char> = h.chars().collect();
    let num_or_space = |c: char| c.is_ascii_digit() || c == ' ';
    let t: String = chars
        .iter()
        .enumerate()
        .map(|(i, &c)| match c {
            '_' => ' ',
            '.' if (i != 0 && !num_or_space(chars[i - 1]))
                || (i + 1 != chars.len() && !num_or_space(chars[i + 1])) =>
            {
                ' '
            }
            c => c,
        })
        .collect();
    let t = t.trim();
    if t.is_empty() && !h.is_empty() {
        " ".into()
    } else {
        t.to_uppercase()
    }
}

/// The sort of `topN`: response time or body size.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TopSort {
    /// `restime`.
    ResponseTime,
    /// `bytes`.
    Bytes,
}

impl TopSort {
    /// Parses alp's `restime` or `bytes`.
    pub fn parse(s: &str) -> Result<TopSort> {
        match s {
            "restime" => Ok(TopSort::ResponseTime),
            "bytes" => Ok(TopSort::Bytes),
            other => Err(Error::input(format!(
                "--sort {other:?}: topN sorts by restime or bytes"
            ))),
        }
    }
}

/// One request of `topN`.
#[derive(Debug, Clone, PartialEq)]
pub struct TopRequest {
    /// The URI with its query string (parameters sorted, as alp does).
    pub uri: String,
    /// Method.
    pub method: String,
    /// Status.
    pub status: i64,
    /// Response time in seconds.
    pub response_time: f64,
    /// Body bytes.
    pub body_bytes: f64,
    /// The time as written in the log.
    pub time: String,
}

/// `topN`: the first `n` requests by `sort` (ascending, or descending with
/// `reverse`, ties as Go's sort leaves them), of those `filter` keeps.
pub fn top_n(
    format: Format,
    input: impl BufRead,
    filter: Option<&crate::filter::Filter>,
    sort: TopSort,
    reverse: bool,
    n: usize,
) -> Result<Vec<TopRequest>> {
    let parser = LineParser::new(format, QueryMode::Keep, 1.0);
    let mut all = Vec::new();
    for line in input.split(b'\n') {
        let line = line.map_err(|e| Error::io("reading", "the log", e))?;
        let Ok(r) = parser.parse(&line) else {
            continue;
        };
        if filter.is_some_and(|f| !f.matches(&r)) {
            continue;
        }
        all.push(TopRequest {
            uri: r.uri.into_owned(),
            method: String::from_utf8_lossy(&r.method).into_owned(),
            status: r.status,
            response_time: r.response_time,
            body_bytes: r.body_bytes,
            time: String::from_utf8_lossy(&r.time).into_owned(),
        });
    }
    let key = |t: &TopRequest| match sort {
        TopSort::ResponseTime => t.response_time,
        TopSort::Bytes => t.body_bytes,
    };
    let perm = crate::gosort::permutation(all.len(), |a, b| {
        let (x, y) = if reverse { (b, a) } else { (a, b) };
        key(&all[x]) < key(&all[y])
    });
    crate::gosort::apply_permutation(&mut all, perm);
    all.truncate(n);
    Ok(all)
}

/// `topN`'s output: rank, uri, method, status, response time, body bytes
/// and time.
pub fn render_top(
    top: &[TopRequest],
    format: OutputFormat,
    no_headers: bool,
    decode_uri: bool,
) -> Result<String> {
    let headers: Vec<String> = [
        "",
        "Uri",
        "Method",
        "Status",
        "Response Time",
        "Body Bytes",
        "Time",
    ]
    .map(String::from)
    .to_vec();
    let keys: Vec<String> = [
        "rank", "uri", "method", "status", "restime", "bytes", "time",
    ]
    .map(String::from)
    .to_vec();
    let row = |(i, t): (usize, &TopRequest), quote: bool| {
        let uri = if quote && t.uri.contains(',') {
            format!("\"{}\"", t.uri)
        } else if decode_uri {
            crate::uri::decode_for_display(&t.uri)
        } else {
            t.uri.clone()
        };
        vec![
            (i + 1).to_string(),
            uri,
            t.method.clone(),
            t.status.to_string(),
            render::fmt3(t.response_time),
            render::fmt3(t.body_bytes),
            t.time.clone(),
        ]
    };
    let plain: Vec<Vec<String>> = top.iter().enumerate().map(|x| row(x, false)).collect();
    let quoted: Vec<Vec<String>> = top.iter().enumerate().map(|x| row(x, true)).collect();
    // alp quotes a URI with a comma in csv and json, not in tsv.
    let rows = if format == OutputFormat::Tsv {
        &plain
    } else {
        &quoted
    };
    grid(format, &headers, &keys, &plain, rows, no_headers)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::FieldNames;

    #[test]
    fn json_numbers_read_as_go_prints_them() {
        assert_eq!(go_float(200.0), "200");
        assert_eq!(go_float(0.012), "0.012");
        assert_eq!(go_float(0.00001), "1e-05");
        assert_eq!(go_float(1e21), "1e+21");
    }

    #[test]
    fn json_escapes_as_go_does() {
        assert_eq!(
            go_html_safe(r#"["a&b<c>"]"#),
            r#"["a\u0026b\u003cc\u003e"]"#
        );
    }

    #[test]
    fn headers_are_titled_as_tablewriter_does() {
        assert_eq!(title("body_bytes"), "BODY BYTES");
        assert_eq!(title("a.b"), "A B");
        assert_eq!(title(""), "");
    }

    #[test]
    fn count_groups_by_the_keys_and_skips_lines_without_them() {
        let log = "method:GET\turi:/a\tstatus:200\tsize:1\treqtime:0.1\nmethod:GET\turi:/b\tstatus:200\tsize:1\treqtime:0.1\nmethod:POST\turi:/a\tstatus:500\tsize:1\treqtime:0.1\nuri:/a\tstatus:200\tsize:1\treqtime:0.1\n";
        let keys = vec!["method".to_string()];
        let g = count(
            Format::Ltsv(FieldNames::ltsv()),
            log.as_bytes(),
            &keys,
            true,
        )
        .unwrap();
        assert_eq!(
            g,
            vec![(2, vec!["GET".to_string()]), (1, vec!["POST".to_string()])]
        );
        assert!(count(Format::Ltsv(FieldNames::ltsv()), log.as_bytes(), &[], false).is_err());
    }
}
