//! `keisoku logs diff`: two route tables side by side (`value (+change)`)
//! and the `--fail-over` gate on each route's p99.

use crate::options::View;
use crate::render;
use crate::stats::RouteStats;
use std::fmt;

/// A route whose p99 grew past the gate.
#[derive(Debug, Clone, PartialEq)]
pub struct Regression {
    /// HTTP method.
    pub method: String,
    /// Route.
    pub uri: String,
    /// p99 before, in seconds.
    pub before: f64,
    /// p99 after, in seconds.
    pub after: f64,
}

impl fmt::Display for Regression {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} {}: p99 {:.3} -> {:.3} s",
            self.method, self.uri, self.before, self.after
        )
    }
}

/// What `keisoku logs diff` found.
#[derive(Debug, Clone, PartialEq)]
pub struct Diff {
    /// The table to print: `to`'s routes with their change from `from`.
    pub text: String,
    /// Routes that tripped `--fail-over`, in table order (empty without a
    /// gate, or when it held).
    pub regressions: Vec<Regression>,
}

impl Diff {
    /// Whether the gate tripped (the command then exits 3).
    pub fn failed(&self) -> bool {
        !self.regressions.is_empty()
    }
}

/// Compares `to` with `from` route by route, shown as `view`; with
/// `fail_over`, every route present in both whose p99 grew by more than
/// that fraction (0.2 = 20%) is a regression, counting only routes with at
/// least `min_count` requests on both sides (a p99 of three requests is
/// noise, not a regression).
pub fn diff(
    from: &[RouteStats],
    mut to: Vec<RouteStats>,
    view: &View,
    fail_over: Option<f64>,
    min_count: u64,
) -> Diff {
    render::sort_routes(&mut to, view.sort, view.reverse);
    let text = render::render(&to, Some(from), view.format, &view.opts);
    let regressions = match fail_over {
        Some(limit) => regressions(from, &to, limit, min_count),
        None => Vec::new(),
    };
    Diff { text, regressions }
}

/// The routes of `to` whose p99 exceeds `from`'s by more than `limit` (a
/// fraction). A route new in `to`, or without a p99 in `from`, has nothing
/// to regress from; neither has a route with fewer than `min_count` requests
/// on either side.
pub fn regressions(
    from: &[RouteStats],
    to: &[RouteStats],
    limit: f64,
    min_count: u64,
) -> Vec<Regression> {
    let mut worse = Vec::new();
    for r in to.iter().filter(|r| r.count >= min_count) {
        if let Some(f) = from
            .iter()
            .find(|f| f.method == r.method && f.uri == r.uri && f.count >= min_count)
        {
            let (a, b) = (f.percentile(99.0), r.percentile(99.0));
            if a > 0.0 && b > a * (1.0 + limit) {
                worse.push(Regression {
                    method: r.method.clone(),
                    uri: r.uri.clone(),
                    before: a,
                    after: b,
                });
            }
        }
    }
    worse
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::options::ViewSpec;

    /// A route of `n` requests taking `secs` each.
    fn route(uri: &str, secs: f64, n: u64) -> RouteStats {
        let mut r = RouteStats::new("GET".into(), uri.into());
        for _ in 0..n {
            r.add(200, secs, 10.0);
        }
        r
    }

    #[test]
    fn the_gate_names_routes_whose_p99_grew_past_the_fraction() {
        let from = vec![route("/a", 0.100, 10), route("/b", 0.100, 10)];
        let to = vec![
            route("/a", 0.119, 10),
            route("/b", 0.200, 10),
            route("/new", 9.0, 10),
        ];
        let view = ViewSpec::default().parse().unwrap();
        let d = diff(&from, to, &view, Some(0.2), 0);
        assert!(d.failed());
        assert_eq!(d.regressions.len(), 1, "{:?}", d.regressions);
        assert_eq!(d.regressions[0].uri, "/b");
        assert_eq!(d.regressions[0].to_string(), "GET /b: p99 0.100 -> 0.200 s");
        assert!(d.text.contains("(+"), "{}", d.text);
    }

    #[test]
    fn without_a_fraction_there_is_no_gate() {
        let from = vec![route("/a", 0.1, 5)];
        let to = vec![route("/a", 5.0, 5)];
        let view = ViewSpec::default().parse().unwrap();
        assert!(!diff(&from, to, &view, None, 0).failed());
    }

    #[test]
    fn a_growth_at_the_fraction_holds_and_a_zero_p99_never_trips() {
        let from = vec![route("/a", 0.1, 5), route("/z", 0.0, 5)];
        let to = vec![route("/a", 0.1, 5), route("/z", 1.0, 5)];
        assert!(regressions(&from, &to, 0.0, 0).is_empty());
    }

    #[test]
    fn min_count_leaves_out_routes_with_few_requests() {
        let from = vec![route("/few", 0.1, 3), route("/busy", 0.1, 50)];
        let to = vec![route("/few", 9.0, 3), route("/busy", 0.5, 50)];
        let all = regressions(&from, &to, 0.2, 0);
        assert_eq!(all.len(), 2);
        let busy = regressions(&from, &to, 0.2, 10);
        assert_eq!(busy.len(), 1);
        assert_eq!(busy[0].uri, "/busy");
        // Few requests on one side only is enough to leave a route out.
        let to = vec![route("/busy", 0.5, 5)];
        assert!(regressions(&from, &to, 0.2, 10).is_empty());
    }
}
