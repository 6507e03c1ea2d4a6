//! The `errors` rule: a run whose requests failed (HTTP 5xx answers or
//! transport errors, the one definition of errors) says how many, which
//! routes, and from which second, from the client's results and series
//! and the access log's.

use crate::model::{Evidence, Finding, Severity};
use keisoku_store::{RouteRow, RouteSeconds, RunJson, Series};

/// Errors as a share of attempts (%) from which the finding is high.
pub const ERRORS_HIGH_PCT: f64 = 1.0;

/// Errors seen by one source.
struct Seen {
    errors: u64,
    attempts: u64,
    /// (route, errors) most first.
    routes: Vec<(String, u64)>,
    /// First and last second with errors, ms on the run's clock (ends).
    range_ms: Option<[f64; 2]>,
    series: &'static str,
}

/// The finding when the client or the access log saw errors.
pub fn errors(run: &RunJson) -> Vec<Finding> {
    let client = client(run);
    let log = access_log(run);
    let Some(main) = client.as_ref().or(log.as_ref()) else {
        return Vec::new();
    };
    let rate = pct(main.errors, main.attempts);
    let mut text = Vec::new();
    let r = &run.results;
    if client.is_some() {
        let codes: Vec<String> = r["status_codes"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter(|(c, _)| c.starts_with('5'))
                    .filter_map(|(c, n)| n.as_u64().map(|n| format!("{n} × {c}")))
                    .collect()
            })
            .unwrap_or_default();
        let kinds: Vec<String> = r["errors_by_kind"]
            .as_object()
            .map(|m| {
                m.iter()
                    .filter_map(|(k, n)| n.as_u64().filter(|&n| n > 0).map(|n| format!("{n} {k}")))
                    .collect()
            })
            .unwrap_or_default();
        let s5xx = r["status"]["5xx"].as_u64().unwrap_or(0);
        let mut split = Vec::new();
        if s5xx > 0 {
            split.push(if codes.is_empty() {
                format!("{s5xx} answers 5xx")
            } else {
                format!("answers {}", codes.join(", "))
            });
        }
        if !kinds.is_empty() {
            split.push(format!("transport errors: {}", kinds.join(", ")));
        }
        text.push(format!(
            "the client counted {} errors in {} attempts ({}): {}",
            main.errors,
            main.attempts,
            fmt_pct(rate),
            split.join("; ")
        ));
    }
    for seen in [client.as_ref(), log.as_ref()].into_iter().flatten() {
        let who = if seen.series == "client.errors" {
            "client"
        } else {
            "access log"
        };
        if seen.series == "log.errors" {
            text.push(format!(
                "the access log recorded {} answers 5xx of {} ({}) over the whole recording",
                seen.errors,
                seen.attempts,
                fmt_pct(pct(seen.errors, seen.attempts))
            ));
        }
        if !seen.routes.is_empty() {
            let top: Vec<String> = seen
                .routes
                .iter()
                .take(3)
                .map(|(route, n)| format!("{route} {n}"))
                .collect();
            text.push(format!("errors by route ({who}): {}", top.join(", ")));
        }
        if let Some([a, b]) = seen.range_ms {
            text.push(format!(
                "{who}: errors from second {:.0} to second {:.0} of the run",
                (a / 1000.0 - 1.0).max(0.0),
                b / 1000.0
            ));
        }
    }
    let series: Vec<String> = [client.as_ref(), log.as_ref()]
        .into_iter()
        .flatten()
        .map(|s| s.series.to_string())
        .collect();
    let range_ms = match (
        client.as_ref().and_then(|c| c.range_ms),
        log.as_ref().and_then(|l| l.range_ms),
    ) {
        (Some([a, b]), Some([c, d])) => Some([a.min(c) - 1000.0, b.max(d)]),
        (Some([a, b]), None) | (None, Some([a, b])) => Some([a - 1000.0, b]),
        _ => None,
    }
    .map(|[a, b]| [a.max(0.0), b]);
    let top_route = main.routes.first().map(|(r, _)| r.clone());
    let title = match &top_route {
        Some(route) => format!(
            "{} requests failed ({}), most on {route}",
            main.errors,
            fmt_pct(rate)
        ),
        None => format!("{} requests failed ({})", main.errors, fmt_pct(rate)),
    };
    let severity = if rate >= ERRORS_HIGH_PCT {
        Severity::High
    } else {
        Severity::Warning
    };
    vec![Finding {
        id: "errors".into(),
        rule: "errors".into(),
        title,
        severity,
        // 0.1% scores 50, 1% 65, 10% and more 80+.
        score: (65.0 + 15.0 * rate.max(1e-6).log10()).clamp(30.0, 95.0),
        summary: format!(
            "{} of {} requests ended in an error (HTTP 5xx or no answer); errors count in the verdict, the timelines and every gate.",
            main.errors, main.attempts
        ),
        impact: format!("{} of requests failed", fmt_pct(rate)),
        suggestion: "read the server's error log for the failing route and the seconds named; a 503 usually means the server shed load or a dependency failed, a timeout that it could not answer within --timeout".into(),
        evidence: Evidence {
            text,
            series,
            range_ms,
            phases: Vec::new(),
            frames: Vec::new(),
        },
    }]
}

/// What the client saw, from its results (older runs counted only
/// transport errors in `errors`: their 5xx are added).
fn client(run: &RunJson) -> Option<Seen> {
    let r = &run.results;
    let requests = r["requests"].as_u64()?;
    let s5xx = r["status"]["5xx"].as_u64().unwrap_or(0);
    let counted = r["errors"].as_u64().unwrap_or(0);
    let (errors, transport) = if r.get("errors_transport").is_some() {
        (counted, r["errors_transport"].as_u64().unwrap_or(0))
    } else {
        (counted + s5xx, counted)
    };
    if errors == 0 {
        return None;
    }
    // The results leave the warm-up out: so do the route counts.
    let warmup_end = run
        .phases
        .iter()
        .filter(|p| p.warmup)
        .map(|p| p.end_ms)
        .fold(f64::NEG_INFINITY, f64::max);
    let routes = if run.route_seconds.client.is_empty() {
        by_rows(&run.routes.client)
    } else {
        by_seconds(&run.route_seconds.client, warmup_end)
    };
    Some(Seen {
        errors,
        attempts: requests + transport,
        routes,
        range_ms: range(series(run, "client.errors")),
        series: "client.errors",
    })
}

/// What the access log saw: its 5xx answers.
fn access_log(run: &RunJson) -> Option<Seen> {
    let rows = &run.routes.access_log;
    let errors: u64 = rows.iter().map(|r| r.s5xx).sum();
    if errors == 0 {
        return None;
    }
    let routes = if run.route_seconds.access_log.is_empty() {
        by_rows(rows)
    } else {
        by_seconds(&run.route_seconds.access_log, f64::NEG_INFINITY)
    };
    Some(Seen {
        errors,
        attempts: rows.iter().map(|r| r.count).sum(),
        routes,
        range_ms: range(series(run, "log.errors")),
        series: "log.errors",
    })
}

fn series<'a>(run: &'a RunJson, name: &str) -> Option<&'a Series> {
    run.series.iter().find(|s| s.name == name)
}

/// First and last point with errors (each stamped at its second's end).
fn range(s: Option<&Series>) -> Option<[f64; 2]> {
    let s = s?;
    let mut hits = s.t_ms.iter().zip(&s.v).filter(|(_, v)| **v > 0.0);
    let first = *hits.next()?.0;
    let last = hits.next_back().map_or(first, |(t, _)| *t);
    Some([first, last])
}

/// Errors by route in the seconds ending after `after_ms`.
fn by_seconds(routes: &[RouteSeconds], after_ms: f64) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = routes
        .iter()
        .map(|r| {
            let n = r
                .t_ms
                .iter()
                .zip(&r.errors)
                .filter(|(t, _)| **t > after_ms)
                .map(|(_, e)| *e)
                .sum();
            (format!("{} {}", r.method, r.route), n)
        })
        .filter(|(_, n)| *n > 0)
        .collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

fn by_rows(rows: &[RouteRow]) -> Vec<(String, u64)> {
    let mut out: Vec<(String, u64)> = rows
        .iter()
        .map(|r| (format!("{} {}", r.method, r.uri), r.s5xx))
        .filter(|(_, n)| *n > 0)
        .collect();
    out.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
    out
}

fn pct(n: u64, of: u64) -> f64 {
    if of == 0 {
        0.0
    } else {
        n as f64 / of as f64 * 100.0
    }
}

fn fmt_pct(v: f64) -> String {
    if v < 0.1 {
        format!("{v:.3}%")
    } else {
        format!("{v:.1}%")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use keisoku_store::{RouteSecondsBySource, RunJson};
    use serde_json::{json, Value};

    fn run_with(results: Value, seconds: Vec<RouteSeconds>, errors: &[f64]) -> RunJson {
        RunJson {
            results,
            series: vec![Series {
                name: "client.errors".into(),
                unit: "/s".into(),
                t_ms: (1..=errors.len())
                    .map(|i| i as f64 * 1000.0 + 200.0)
                    .collect(),
                v: errors.to_vec(),
            }],
            route_seconds: RouteSecondsBySource {
                client: seconds,
                access_log: Vec::new(),
            },
            ..RunJson::default()
        }
    }

    fn route(path: &str, errors: Vec<u64>) -> RouteSeconds {
        RouteSeconds {
            method: "GET".into(),
            route: path.into(),
            t_ms: (1..=errors.len()).map(|i| i as f64 * 1000.0).collect(),
            count: vec![100; errors.len()],
            errors,
            ..RouteSeconds::default()
        }
    }

    #[test]
    fn five_xx_make_a_finding_naming_the_route_and_the_seconds() {
        let results = json!({"requests": 1000, "errors": 40, "errors_transport": 0,
            "status": {"5xx": 40}, "status_codes": {"200": 960, "503": 40}});
        let run = run_with(
            results,
            vec![route("/ok", vec![0, 0, 0]), route("/busy", vec![0, 10, 30])],
            &[0.0, 10.0, 30.0],
        );
        let f = errors(&run);
        assert_eq!(f.len(), 1);
        let f = &f[0];
        assert_eq!(f.severity, Severity::High);
        assert!(f.title.contains("40 requests failed (4.0%)"), "{}", f.title);
        assert!(f.title.contains("GET /busy"), "{}", f.title);
        let text = f.evidence.text.join("\n");
        assert!(text.contains("40 × 503"), "{text}");
        assert!(text.contains("GET /busy 40"), "{text}");
        assert!(!text.contains("/ok"), "{text}");
        assert!(text.contains("from second 1 to second 3"), "{text}");
        assert_eq!(f.evidence.series, vec!["client.errors".to_string()]);
        assert_eq!(f.evidence.range_ms, Some([1200.0, 3200.0]));
    }

    #[test]
    fn older_results_count_their_5xx_and_clean_runs_have_no_finding() {
        // Written before 5xx were errors: `errors` held transport errors only.
        let old = json!({"requests": 1000, "errors": 1, "status": {"5xx": 4},
            "errors_by_kind": {"reset": 1}});
        let f = errors(&run_with(old, Vec::new(), &[]));
        assert!(
            f[0].title.starts_with("5 requests failed"),
            "{}",
            f[0].title
        );
        assert_eq!(f[0].severity, Severity::Warning);
        let clean = json!({"requests": 1000, "errors": 0, "errors_transport": 0,
            "status": {"5xx": 0}});
        assert!(errors(&run_with(clean, Vec::new(), &[0.0])).is_empty());
        assert!(errors(&RunJson::default()).is_empty());
    }
}
