//! alp's dump (`alp ... --dump FILE`): the YAML list of alp's per-route
//! statistics, read into [`RouteStats`] and written from them, so alp
//! users' dump files work with `--load` and `diff`, and alp loads ours.
//!
//! alp keeps every response time of a route (its `percentiles` list, in
//! line order when dumped), so a YAML dump holds more than keisoku's JSON
//! dump: percentiles and stddev read back exactly. Its body-size columns
//! come from `request_body_bytes` (alp records the response body there and
//! prints from there; `response_body_bytes` stays zero).

use crate::error::{Error, Result};
use crate::stats::RouteStats;
use crate::summary::Summary;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// One route as alp's YAML has it (field order as alp writes them).
#[derive(Debug, Serialize, Deserialize)]
struct AlpStat {
    uri: String,
    count: u64,
    status1xx: u64,
    status2xx: u64,
    status3xx: u64,
    status4xx: u64,
    status5xx: u64,
    method: String,
    response_time: AlpValues,
    request_body_bytes: AlpValues,
    #[serde(default)]
    response_body_bytes: AlpValues,
    #[serde(default)]
    time: String,
}

/// Minimum, maximum and sum of one quantity, and its values when alp kept
/// them (response times only).
#[derive(Debug, Default, Serialize, Deserialize)]
struct AlpValues {
    max: f64,
    min: f64,
    sum: f64,
    #[serde(default)]
    usepercentile: bool,
    #[serde(default)]
    percentiles: Vec<f64>,
}

/// Whether `path` names an alp dump to write: alp writes YAML, keisoku
/// JSON, and the file name says which the user wants (`.yaml`/`.yml`).
pub fn wants_yaml(path: &Path) -> bool {
    path.extension()
        .and_then(|e| e.to_str())
        .is_some_and(|e| e.eq_ignore_ascii_case("yaml") || e.eq_ignore_ascii_case("yml"))
}

/// Whether `text` is a keisoku JSON dump rather than alp's YAML (a JSON
/// object, where alp writes a list).
pub fn is_keisoku_json(text: &str) -> bool {
    text.trim_start().starts_with('{')
}

/// alp's YAML for `routes`. Each route must hold its response times in
/// line order ([`RouteStats::line_order`]) as alp's does; a route without
/// them is refused, since alp could not print its percentiles.
pub fn to_yaml(routes: &[RouteStats]) -> Result<String> {
    let mut stats = Vec::with_capacity(routes.len());
    for r in routes {
        let times = match &r.line_order {
            Some(t) if t.len() as u64 == r.count => t.clone(),
            _ => {
                return Err(Error::input(format!(
                    "route {} {}: its response times are not kept, so alp's YAML dump cannot be written (use a .json dump)",
                    r.method, r.uri
                )))
            }
        };
        stats.push(AlpStat {
            uri: r.uri.clone(),
            count: r.count,
            status1xx: r.status[0],
            status2xx: r.status[1],
            status3xx: r.status[2],
            status4xx: r.status[3],
            status5xx: r.status[4],
            method: r.method.clone(),
            response_time: AlpValues {
                max: r.time.max,
                min: r.time.min,
                sum: r.time.sum,
                usepercentile: true,
                percentiles: times,
            },
            request_body_bytes: AlpValues {
                max: r.body.max,
                min: r.body.min,
                sum: r.body.sum,
                usepercentile: false,
                percentiles: Vec::new(),
            },
            response_body_bytes: AlpValues::default(),
            time: String::new(),
        });
    }
    serde_yaml::to_string(&stats).map_err(|e| Error::input(format!("alp dump: {e}")))
}

/// Reads alp's YAML dump back into routes, in the file's order (alp's
/// first-seen order, which its sort starts from).
pub fn from_yaml(text: &str) -> Result<Vec<RouteStats>> {
    // A list starts with "-" or "[" after comments and "---": anything
    // else (a log given by mistake, 64 MiB on one line) is refused before
    // the YAML parser spends minutes and gigabytes on it.
    let first = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty() && !l.starts_with('#') && *l != "---");
    if first.is_some_and(|l| !l.starts_with('-') && !l.starts_with('[')) {
        return Err(Error::input(
            "not a keisoku logs dump (a JSON object) nor an alp dump (a YAML list of routes)",
        ));
    }
    let stats: Vec<AlpStat> = serde_yaml::from_str(text).map_err(|e| {
        Error::input(format!(
            "not a keisoku logs dump (a JSON object) nor an alp dump (a YAML list of routes): {e}"
        ))
    })?;
    let mut out = Vec::with_capacity(stats.len());
    for s in stats {
        let times = &s.response_time.percentiles;
        let status_total = [
            s.status1xx,
            s.status2xx,
            s.status3xx,
            s.status4xx,
            s.status5xx,
        ]
        .iter()
        .try_fold(0u64, |a, &b| a.checked_add(b));
        if times.len() as u64 != s.count || !status_total.is_some_and(|t| t <= s.count) {
            return Err(Error::input(format!(
                "route {} {}: count {} but {} response times and status counts {:?}: an alp dump keeps one response time per request",
                s.method,
                s.uri,
                s.count,
                times.len(),
                status_total
            )));
        }
        let mut r = RouteStats::new(s.method, s.uri);
        // Every response time in the order alp kept them: exact
        // percentiles, alp's stddev and its line-order stddev sort.
        for &t in times {
            r.add(0, t, 0.0);
        }
        r.status = [
            s.status1xx,
            s.status2xx,
            s.status3xx,
            s.status4xx,
            s.status5xx,
        ];
        r.time = summary(&s.response_time, s.count, times.contains(&0.0));
        let body = &s.request_body_bytes;
        r.body = summary(body, s.count, body.min == 0.0);
        r.line_order = Some(times.clone());
        out.push(r);
    }
    Ok(out)
}

/// alp's min/max/sum as dumped (its sum is the running sum in line order,
/// which re-adding would only reproduce). Whether a value was 0 (which
/// alp's min forgets) is known for response times, from the values; for
/// bodies it is taken as "the min is 0", which matters only when `-m`
/// merges loaded routes.
fn summary(v: &AlpValues, n: u64, saw_zero: bool) -> Summary {
    Summary {
        n,
        min: v.min,
        saw_zero,
        max: v.max,
        sum: v.sum,
    }
}

/// The routes of the dump at `path`, keisoku's JSON or alp's YAML (told
/// apart by their content); an unreadable or invalid file is the user's
/// to fix.
pub fn load(path: &Path) -> Result<Vec<RouteStats>> {
    let text = keisoku_common::limits::read_document(path, &keisoku_common::Limits::current())
        .map_err(|e| Error::Input(format!("{}: {e}", path.display())))?;
    if is_keisoku_json(&text) {
        crate::dump::from_json(&text)
            .map(|(routes, _)| routes)
            .map_err(|e| Error::Input(format!("{}: {e}", path.display())))
    } else {
        from_yaml(&text).map_err(|e| Error::Input(format!("{}: {e}", path.display())))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(uri: &str, times: &[(i64, f64, f64)]) -> RouteStats {
        let mut r = RouteStats::new("GET".into(), uri.into());
        r.line_order = Some(Vec::new());
        for &(status, t, body) in times {
            r.add(status, t, body);
            if let Some(l) = r.line_order.as_mut() {
                l.push(t);
            }
        }
        r
    }

    #[test]
    fn a_yaml_dump_reads_back_to_the_same_columns() {
        let routes = vec![
            route("/a", &[(200, 0.1, 10.0), (200, 0.05, 20.0)]),
            route("/b", &[(503, 0.0, 0.0), (404, 0.013000000000000001, 5.0)]),
        ];
        let text = to_yaml(&routes).unwrap();
        assert!(text.starts_with("- uri: /a\n  count: 2\n"), "{text}");
        let back = from_yaml(&text).unwrap();
        for (a, b) in routes.iter().zip(&back) {
            assert_eq!(
                (&a.method, &a.uri, a.count, a.status),
                (&b.method, &b.uri, b.count, b.status)
            );
            assert_eq!(a.time, b.time);
            // Whether a body was 0 is not in alp's YAML (its min forgets
            // a zero); it only matters when -m merges loaded routes.
            let body = |s: &Summary| (s.n, s.min, s.max, s.sum);
            assert_eq!(body(&a.body), body(&b.body));
            assert_eq!(a.percentile(50.0).to_bits(), b.percentile(50.0).to_bits());
            assert_eq!(a.stddev().to_bits(), b.stddev().to_bits());
            assert_eq!(a.line_order, b.line_order);
        }
    }

    #[test]
    fn alps_own_dump_is_read() {
        // As alp v1.0.21 writes it (yaml.v2: integers for whole floats).
        let text = "- uri: /a\n  count: 2\n  status1xx: 0\n  status2xx: 2\n  status3xx: 0\n  status4xx: 0\n  status5xx: 0\n  method: GET\n  response_time:\n    max: 0.1\n    min: 0.05\n    sum: 0.15000000000000002\n    usepercentile: true\n    percentiles:\n    - 0.1\n    - 0.05\n  request_body_bytes:\n    max: 20\n    min: 10\n    sum: 30\n    usepercentile: false\n    percentiles: []\n  response_body_bytes:\n    max: 0\n    min: 0\n    sum: 0\n    usepercentile: false\n    percentiles: []\n  time: \"\"\n";
        let r = &from_yaml(text).unwrap()[0];
        assert_eq!(r.count, 2);
        assert_eq!(r.time.sum, 0.15000000000000002);
        assert_eq!(r.body.sum, 30.0);
        assert_eq!(r.percentile(99.0), 0.1);
    }

    #[test]
    fn a_dump_without_its_times_is_refused() {
        let text = "- uri: /a\n  count: 2\n  status1xx: 0\n  status2xx: 2\n  status3xx: 0\n  status4xx: 0\n  status5xx: 0\n  method: GET\n  response_time: {max: 1, min: 1, sum: 2, percentiles: [1]}\n  request_body_bytes: {max: 0, min: 0, sum: 0}\n";
        let e = from_yaml(text).unwrap_err();
        assert_eq!(e.cause(), crate::error::Cause::Input);
        assert!(
            e.to_string().contains("one response time per request"),
            "{e}"
        );
        assert!(from_yaml("{format: 1}").is_err());
        assert!(from_yaml(&"x".repeat(1000)).is_err());
    }
}
