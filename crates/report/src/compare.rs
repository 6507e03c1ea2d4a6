//! Comparing two runs: headline numbers, per-route deltas, both sweeps, and
//! the regression gate (`--fail-on-regression 'p99>+10%,rps<-5%'`).
//!
//! Everything here reads Run JSON (docs/run-json.md) leniently: a run
//! recorded without load (`keisoku record`) simply has fewer metrics, and a
//! gate clause naming a metric one of the runs lacks is an input error
//! rather than a silent pass.

use serde::Serialize;
use serde_json::Value;
use std::collections::BTreeMap;
use std::fmt;

use crate::ReportError;

/// Headline metrics in display order, with their unit and whether a larger
/// value is better (drives the colour of a delta).
pub const METRICS: &[(&str, &str, bool)] = &[
    ("rps", "req/s", true),
    ("requests", "requests", true),
    ("errors", "errors", false),
    ("error_rate", "%", false),
    ("mean", "ms", false),
    ("p50", "ms", false),
    ("p80", "ms", false),
    ("p90", "ms", false),
    ("p99", "ms", false),
    ("p99.9", "ms", false),
    ("max", "ms", false),
];

/// What one run contributes to a comparison.
#[derive(Debug, Clone, Serialize)]
pub struct RunSummary {
    /// The run's id (`run.id`).
    pub id: String,
    /// The run's name, or its id when unnamed.
    pub name: String,
    /// What was loaded.
    pub target: String,
    /// Wall-clock start, milliseconds since the Unix epoch.
    pub started_unix_ms: f64,
    /// Length of the run in milliseconds.
    pub duration_ms: f64,
    /// Whether the run was cut short.
    pub interrupted: bool,
    /// Headline metrics by name (see [`METRICS`]); absent when not measured.
    pub metrics: BTreeMap<String, f64>,
    /// One point per sweep phase.
    pub sweep: Vec<SweepPoint>,
    /// Per-route rows (client side, or the access log when the client has none).
    pub routes: Vec<RouteRow>,
}

/// One sweep phase: what was varied and what it bought.
#[derive(Debug, Clone, Serialize)]
pub struct SweepPoint {
    /// Phase label, e.g. `c=10`.
    pub label: String,
    /// Connections of a closed-model phase.
    pub connections: Option<f64>,
    /// Offered rate (req/s) of an open-model phase.
    pub rate: Option<f64>,
    /// Achieved throughput, req/s.
    pub rps: Option<f64>,
    /// Median latency, ms.
    pub p50: Option<f64>,
    /// 80th percentile latency, ms.
    pub p80: Option<f64>,
    /// 99th percentile latency, ms.
    pub p99: Option<f64>,
}

/// One route's numbers (alp columns that matter for a comparison).
#[derive(Debug, Clone, Serialize)]
pub struct RouteRow {
    /// HTTP method.
    pub method: String,
    /// Normalised path.
    pub uri: String,
    /// Requests.
    pub count: f64,
    /// Mean latency, ms.
    pub avg: Option<f64>,
    /// 99th percentile latency, ms.
    pub p99: Option<f64>,
    /// Requests answered 5xx.
    pub status_5xx: f64,
}

/// How one headline metric moved from A to B.
#[derive(Debug, Clone, Serialize)]
pub struct Delta {
    /// Metric name (see [`METRICS`]).
    pub metric: String,
    /// Unit of `a`, `b` and `abs`.
    pub unit: String,
    /// Value in run A (the baseline).
    pub a: f64,
    /// Value in run B.
    pub b: f64,
    /// `b - a`.
    pub abs: f64,
    /// Relative change in percent; `None` when A is zero and B is not.
    pub pct: Option<f64>,
    /// Whether the move is an improvement (`None` when nothing moved).
    pub better: Option<bool>,
}

/// How one route moved from A to B; routes present on one side only keep
/// `None` for the other.
#[derive(Debug, Clone, Serialize)]
pub struct RouteDelta {
    /// HTTP method.
    pub method: String,
    /// Normalised path.
    pub uri: String,
    /// Requests in A.
    pub count_a: Option<f64>,
    /// Requests in B.
    pub count_b: Option<f64>,
    /// Mean latency in A, ms.
    pub avg_a: Option<f64>,
    /// Mean latency in B, ms.
    pub avg_b: Option<f64>,
    /// p99 in A, ms.
    pub p99_a: Option<f64>,
    /// p99 in B, ms.
    pub p99_b: Option<f64>,
    /// Relative change of p99, percent.
    pub p99_pct: Option<f64>,
}

/// Reads the summary of one run from its Run JSON.
pub fn summarize(run: &Value) -> Result<RunSummary, ReportError> {
    let meta = run
        .get("run")
        .filter(|m| m.is_object())
        .ok_or_else(|| ReportError::Invalid("no \"run\" object".into()))?;
    let id = str_of(meta.get("id")).unwrap_or_default();
    let name = str_of(meta.get("name"))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| id.clone());
    let results = run.get("results").unwrap_or(&Value::Null);
    let mut metrics = BTreeMap::new();
    headline(results, &mut metrics);
    let sweep = results
        .get("phases")
        .or_else(|| run.get("phases"))
        .and_then(Value::as_array)
        .map(|phases| phases.iter().map(sweep_point).collect())
        .unwrap_or_default();
    let routes_obj = run.get("routes").unwrap_or(&Value::Null);
    let mut routes = route_rows(routes_obj.get("client"));
    if routes.is_empty() {
        routes = route_rows(routes_obj.get("access_log"));
    }
    Ok(RunSummary {
        id,
        name,
        target: str_of(meta.get("target")).unwrap_or_default(),
        started_unix_ms: num(meta.get("started_unix_ms")).unwrap_or(0.0),
        duration_ms: num(meta.get("duration_ms")).unwrap_or(0.0),
        interrupted: meta
            .get("interrupted")
            .and_then(Value::as_bool)
            .unwrap_or(false),
        metrics,
        sweep,
        routes,
    })
}

/// The headline numbers of a bench results object (docs/bench-json.md).
fn headline(results: &Value, out: &mut BTreeMap<String, f64>) {
    if let Some(rps) = num(results.get("rps")) {
        out.insert("rps".into(), rps);
    }
    let requests = num(results.get("requests"));
    if let Some(r) = requests {
        out.insert("requests".into(), r);
    }
    if let Some((e, rate)) = errors_and_rate(results, requests) {
        out.insert("errors".into(), e);
        if let Some(rate) = rate {
            out.insert("error_rate".into(), rate);
        }
    }
    if let Some(lat) = results.get("latency_ms") {
        for key in ["min", "mean", "p50", "p80", "p90", "p99", "p99.9", "max"] {
            if let Some(v) = num(lat.get(key)) {
                out.insert(key.into(), v);
            }
        }
    }
}

/// Errors (transport errors plus 5xx answers, one definition everywhere)
/// and their rate in percent of attempts. Results written before errors
/// counted 5xx answers (no `errors_transport`) get their 5xx added; their
/// rate is then over the responses, as those files counted it.
fn errors_and_rate(results: &Value, requests: Option<f64>) -> Option<(f64, Option<f64>)> {
    let counted = error_count(results.get("errors"))?;
    if results.get("errors_transport").is_some() {
        let rate = num(results.get("error_rate")).or_else(|| {
            let transport = num(results.get("errors_transport")).unwrap_or(0.0);
            let attempts = requests.unwrap_or(0.0) + transport;
            (attempts > 0.0).then(|| 100.0 * counted / attempts)
        });
        return Some((counted, rate));
    }
    let s5xx = results
        .get("status")
        .and_then(|s| num(s.get("5xx")))
        .unwrap_or(0.0);
    let e = counted + s5xx;
    let rate = requests.filter(|r| *r > 0.0).map(|r| 100.0 * e / r);
    Some((e, rate))
}

/// Errors are a count, or an object of counts by kind (with or without a
/// `total`).
pub(crate) fn error_count(v: Option<&Value>) -> Option<f64> {
    match v? {
        Value::Number(n) => n.as_f64(),
        Value::Object(m) => num(m.get("total")).or_else(|| {
            let counts: Vec<f64> = m.values().filter_map(Value::as_f64).collect();
            (!counts.is_empty()).then(|| counts.iter().sum())
        }),
        _ => None,
    }
}

fn sweep_point(p: &Value) -> SweepPoint {
    let lat = p.get("latency_ms").unwrap_or(&Value::Null);
    SweepPoint {
        label: str_of(p.get("label")).unwrap_or_default(),
        connections: num(p.get("connections")),
        rate: num(p.get("rate")),
        rps: num(p.get("rps")),
        p50: num(lat.get("p50")),
        p80: num(lat.get("p80")),
        p99: num(lat.get("p99")),
    }
}

fn route_rows(v: Option<&Value>) -> Vec<RouteRow> {
    let Some(rows) = v.and_then(Value::as_array) else {
        return Vec::new();
    };
    rows.iter()
        .map(|r| RouteRow {
            method: str_of(r.get("method")).unwrap_or_default(),
            uri: str_of(r.get("uri")).unwrap_or_default(),
            count: num(r.get("count")).unwrap_or(0.0),
            avg: num(r.get("avg")),
            p99: num(r.get("p99")),
            status_5xx: num(r.get("5xx")).unwrap_or(0.0),
        })
        .collect()
}

/// Headline deltas for every metric both runs have, in [`METRICS`] order.
pub fn deltas(a: &RunSummary, b: &RunSummary) -> Vec<Delta> {
    METRICS
        .iter()
        .filter_map(|&(metric, unit, higher_is_better)| {
            let (va, vb) = (*a.metrics.get(metric)?, *b.metrics.get(metric)?);
            let abs = vb - va;
            Some(Delta {
                metric: metric.into(),
                unit: unit.into(),
                a: va,
                b: vb,
                abs,
                pct: relative(va, vb),
                better: (abs != 0.0).then_some((abs > 0.0) == higher_is_better),
            })
        })
        .collect()
}

/// Per-route deltas, joined on method and path; busiest routes first.
pub fn route_deltas(a: &RunSummary, b: &RunSummary) -> Vec<RouteDelta> {
    type Sides<'r> = (Option<&'r RouteRow>, Option<&'r RouteRow>);
    let mut joined: BTreeMap<(String, String), Sides> = BTreeMap::new();
    for r in &a.routes {
        joined
            .entry((r.method.clone(), r.uri.clone()))
            .or_default()
            .0 = Some(r);
    }
    for r in &b.routes {
        joined
            .entry((r.method.clone(), r.uri.clone()))
            .or_default()
            .1 = Some(r);
    }
    let mut out: Vec<RouteDelta> = joined
        .into_iter()
        .map(|((method, uri), (ra, rb))| {
            let p99_a = ra.and_then(|r| r.p99);
            let p99_b = rb.and_then(|r| r.p99);
            RouteDelta {
                method,
                uri,
                count_a: ra.map(|r| r.count),
                count_b: rb.map(|r| r.count),
                avg_a: ra.and_then(|r| r.avg),
                avg_b: rb.and_then(|r| r.avg),
                p99_a,
                p99_b,
                p99_pct: p99_a.zip(p99_b).and_then(|(x, y)| relative(x, y)),
            }
        })
        .collect();
    out.sort_by(|x, y| {
        let cx = x.count_a.unwrap_or(0.0) + x.count_b.unwrap_or(0.0);
        let cy = y.count_a.unwrap_or(0.0) + y.count_b.unwrap_or(0.0);
        cy.total_cmp(&cx)
    });
    out
}

/// Percent change from `a` to `b`; `None` when `a` is zero and `b` is not.
fn relative(a: f64, b: f64) -> Option<f64> {
    if a == b {
        Some(0.0)
    } else if a == 0.0 {
        None
    } else {
        Some(100.0 * (b - a) / a.abs())
    }
}

/// Which way a gate clause fires.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Direction {
    /// Fails when the change is above the limit (`p99>+10%`).
    #[serde(rename = ">")]
    Above,
    /// Fails when the change is below the limit (`rps<-5%`).
    #[serde(rename = "<")]
    Below,
}

/// One clause of a regression gate: fail when `metric` changed by more than
/// `limit` in `direction`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GateClause {
    /// The clause as written.
    pub text: String,
    /// Metric name (see [`METRICS`]).
    pub metric: String,
    /// Which side of the limit fails.
    pub direction: Direction,
    /// The limit: percent when `relative`, else in the metric's unit.
    pub limit: f64,
    /// Whether `limit` is a relative change in percent.
    pub relative: bool,
}

/// Why a gate expression could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad regression gate clause {clause:?}: {reason}")]
pub struct GateParseError {
    /// The offending clause.
    pub clause: String,
    /// What was wrong with it.
    pub reason: String,
}

/// Parses `'p99>+10%,rps<-5%,p50>+2ms'`: comma-separated clauses
/// `METRIC (>|<) [+|-]NUMBER[%|ms|s]`. `%` is a relative change; `ms`/`s`
/// (latency metrics) or a bare number is an absolute change.
pub fn parse_gate(text: &str) -> Result<Vec<GateClause>, GateParseError> {
    use keisoku_common::{gate, Quantity};
    let mut clauses = Vec::new();
    for raw in text.split(',') {
        let clause = raw.trim();
        if clause.is_empty() {
            continue;
        }
        let err = |reason: &str| GateParseError {
            clause: clause.to_string(),
            reason: reason.to_string(),
        };
        let c = gate::clause(clause).map_err(|e| err(&e.reason))?;
        // `>=` reads as `>`: a change that reaches the limit is let through either way.
        let direction = if c.op.is_upper_bound() {
            Direction::Below
        } else {
            Direction::Above
        };
        let metric = c.subject.to_ascii_lowercase();
        let metric = match metric.as_str() {
            "throughput" => "rps".to_string(),
            "p999" => "p99.9".to_string(),
            "avg" => "mean".to_string(),
            _ => metric,
        };
        let Some(&(_, unit, _)) = METRICS.iter().find(|(m, _, _)| *m == metric) else {
            let known: Vec<&str> = METRICS.iter().map(|(m, _, _)| *m).collect();
            return Err(err(&format!(
                "unknown metric {metric:?} (known: {})",
                known.join(", ")
            )));
        };
        let (limit, relative) = match Quantity::parse(c.value) {
            Some(Quantity::Percent(p)) => (p, true),
            Some(q @ Quantity::Time { .. }) => {
                if unit != "ms" {
                    return Err(err("a time limit (ms, s) only applies to latency metrics"));
                }
                (q.as_ms().unwrap_or(f64::NAN), false)
            }
            Some(Quantity::Number(n)) => (n, false),
            None => return Err(err("expected a number such as +10% or -5%")),
        };
        if !limit.is_finite() {
            return Err(err("the limit must be a finite number"));
        }
        clauses.push(GateClause {
            text: clause.to_string(),
            metric,
            direction,
            limit,
            relative,
        });
    }
    if clauses.is_empty() {
        return Err(GateParseError {
            clause: text.to_string(),
            reason: "no clauses".into(),
        });
    }
    Ok(clauses)
}

/// The verdict on one gate clause.
#[derive(Debug, Clone, Serialize)]
pub struct ClauseVerdict {
    /// The clause.
    pub clause: GateClause,
    /// The observed change, in the clause's terms (percent or absolute);
    /// `None` for a relative clause whose baseline is zero.
    pub change: Option<f64>,
    /// Whether the clause held (no regression).
    pub pass: bool,
}

/// The regression gate's verdict.
#[derive(Debug, Clone, Serialize)]
pub struct GateVerdict {
    /// One verdict per clause, in the order written.
    pub clauses: Vec<ClauseVerdict>,
    /// True when every clause passed.
    pub pass: bool,
}

impl fmt::Display for GateVerdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for c in &self.clauses {
            let change = match (c.change, c.clause.relative) {
                (Some(v), true) => format!("{v:+.2}%"),
                (Some(v), false) => format!("{v:+.3}"),
                (None, _) => "from zero".to_string(),
            };
            writeln!(
                f,
                "{}  {:<16} change {change}",
                if c.pass { "PASS" } else { "FAIL" },
                c.clause.text
            )?;
        }
        write!(
            f,
            "regression gate: {}",
            if self.pass { "PASS" } else { "FAIL" }
        )
    }
}

/// Judges the gate on A (baseline) to B. A clause naming a metric either run
/// lacks is an error: a gate must not pass for want of data.
pub fn judge_gate(
    clauses: &[GateClause],
    a: &RunSummary,
    b: &RunSummary,
) -> Result<GateVerdict, ReportError> {
    let mut out = Vec::with_capacity(clauses.len());
    for clause in clauses {
        let value = |run: &RunSummary| {
            run.metrics.get(&clause.metric).copied().ok_or_else(|| {
                ReportError::Invalid(format!(
                    "run {} has no {} to gate on (was it recorded without load?)",
                    run.name, clause.metric
                ))
            })
        };
        let (va, vb) = (value(a)?, value(b)?);
        let change = if clause.relative {
            relative(va, vb)
        } else {
            Some(vb - va)
        };
        let fails = match (change, clause.direction) {
            (Some(c), Direction::Above) => c > clause.limit,
            (Some(c), Direction::Below) => c < clause.limit,
            // From zero to anything: an infinite relative change.
            (None, Direction::Above) => vb > va,
            (None, Direction::Below) => vb < va,
        };
        out.push(ClauseVerdict {
            clause: clause.clone(),
            change,
            pass: !fails,
        });
    }
    let pass = out.iter().all(|c| c.pass);
    Ok(GateVerdict { clauses: out, pass })
}

pub(crate) fn num(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64).filter(|x| x.is_finite())
}

pub(crate) fn str_of(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str).map(str::to_string)
}

// ---- Findings of both runs: resolved, new, unchanged (issue 14) ----

/// One finding as a comparison names it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FindingRef {
    /// The finding's stable id: rule plus qualifier (`hot-code.json-parse`).
    pub id: String,
    /// The rule that produced it.
    pub rule: String,
    /// What is wrong, in one line.
    pub title: String,
    /// `high`, `warning` or `info`.
    pub severity: String,
    /// Ranking score, 0-100.
    pub score: f64,
}

/// How a finding moved from A to B.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum FindingChange {
    /// In B only: a problem that appeared.
    New,
    /// In A only: a problem that went away.
    Resolved,
    /// In both runs.
    Unchanged,
}

impl FindingChange {
    /// The word shown in the terminal and on the page.
    pub fn as_str(self) -> &'static str {
        match self {
            FindingChange::New => "new",
            FindingChange::Resolved => "resolved",
            FindingChange::Unchanged => "unchanged",
        }
    }
}

/// One finding of either run, matched across both by id.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FindingDelta {
    /// The id both runs share (rule plus qualifier).
    pub id: String,
    /// Whether it appeared, went away or stayed.
    pub change: FindingChange,
    /// The finding in A, when A has it.
    pub a: Option<FindingRef>,
    /// The finding in B, when B has it.
    pub b: Option<FindingRef>,
}

/// The findings of a Run JSON, read leniently: a run stored before findings
/// existed, or one whose findings array is malformed, has none; an entry
/// without an id is keyed by its rule.
pub fn findings_of(run: &Value) -> Vec<FindingRef> {
    let Some(list) = run.get("findings").and_then(Value::as_array) else {
        return Vec::new();
    };
    list.iter()
        .filter_map(|f| {
            let rule = str_of(f.get("rule")).unwrap_or_default();
            let id = str_of(f.get("id"))
                .filter(|i| !i.is_empty())
                .unwrap_or_else(|| rule.clone());
            (!id.is_empty()).then(|| FindingRef {
                id,
                rule,
                title: str_of(f.get("title")).unwrap_or_default(),
                severity: str_of(f.get("severity")).unwrap_or_else(|| "info".into()),
                score: num(f.get("score")).unwrap_or(0.0),
            })
        })
        .collect()
}

fn severity_rank(s: &str) -> u8 {
    match s {
        "high" => 0,
        "warning" => 1,
        "info" => 2,
        _ => 3,
    }
}

/// Matches the findings of A and B by id (rule plus qualifier): new ones
/// first, then resolved, then unchanged; within each, the most severe and
/// highest-scored first. A run listing one id twice is matched once.
pub fn finding_changes(a: &[FindingRef], b: &[FindingRef]) -> Vec<FindingDelta> {
    let mut joined: BTreeMap<&str, (Option<&FindingRef>, Option<&FindingRef>)> = BTreeMap::new();
    for f in a {
        joined.entry(f.id.as_str()).or_default().0.get_or_insert(f);
    }
    for f in b {
        joined.entry(f.id.as_str()).or_default().1.get_or_insert(f);
    }
    let mut out: Vec<FindingDelta> = joined
        .into_iter()
        .map(|(id, (fa, fb))| FindingDelta {
            id: id.to_string(),
            change: match (fa, fb) {
                (Some(_), Some(_)) => FindingChange::Unchanged,
                (Some(_), None) => FindingChange::Resolved,
                _ => FindingChange::New,
            },
            a: fa.cloned(),
            b: fb.cloned(),
        })
        .collect();
    let order = |d: &FindingDelta| {
        let f = d.b.as_ref().or(d.a.as_ref());
        let change = match d.change {
            FindingChange::New => 0,
            FindingChange::Resolved => 1,
            FindingChange::Unchanged => 2,
        };
        (
            change,
            f.map_or(3, |f| severity_rank(&f.severity)),
            f.map_or(0.0, |f| f.score),
        )
    };
    out.sort_by(|x, y| {
        let (cx, sx, fx) = order(x);
        let (cy, sy, fy) = order(y);
        cx.cmp(&cy)
            .then(sx.cmp(&sy))
            .then(fy.total_cmp(&fx))
            .then_with(|| x.id.cmp(&y.id))
    });
    out
}

// ---- Both runs' timelines on one relative axis ----

/// One run's headline series on seconds since its load started, so two
/// runs that started at different times (and whose seconds sit on
/// different sub-second offsets) share one x axis.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RelativeTimeline {
    /// Where the series came from: `client` or `log` (the access log, for
    /// runs without client series), or "" when the run has neither.
    pub source: String,
    /// Whole seconds since the load started, one per point (the end of
    /// each second).
    pub t_s: Vec<f64>,
    /// Responses per second.
    pub rps: Vec<Option<f64>>,
    /// 99th percentile latency per second, ms.
    pub p99_ms: Vec<Option<f64>>,
    /// Errors per second (transport errors plus 5xx).
    pub errors: Vec<Option<f64>>,
}

/// A series of the Run JSON by name: its times and values.
fn series_of<'v>(run: &'v Value, name: &str) -> Option<(&'v Vec<Value>, &'v Vec<Value>)> {
    let s = run
        .get("series")?
        .as_array()?
        .iter()
        .find(|s| s.get("name").and_then(Value::as_str) == Some(name))?;
    Some((s.get("t_ms")?.as_array()?, s.get("v")?.as_array()?))
}

/// When the load started on the run's clock, ms: its first phase, else
/// one second before the first client point (points mark a second's end).
fn load_start_ms(run: &Value, first_point_ms: Option<f64>) -> f64 {
    run.get("phases")
        .and_then(Value::as_array)
        .and_then(|p| p.first())
        .and_then(|p| num(p.get("start_ms")))
        .or_else(|| first_point_ms.map(|t| (t - 1000.0).max(0.0)))
        .unwrap_or(0.0)
}

/// The run's rps, p99 and errors per second on seconds since its load
/// started, each point rounded to its whole second so both runs land on
/// one grid; client series when recorded, else the access log's.
pub fn relative_timeline(run: &Value) -> RelativeTimeline {
    for (source, names) in [
        ("client", ["client.rps", "client.p99_ms", "client.errors"]),
        ("log", ["log.rps", "log.p99_ms", "log.errors"]),
    ] {
        let Some((t_rps, _)) = series_of(run, names[0]) else {
            continue;
        };
        let first = t_rps.first().and_then(Value::as_f64);
        let start = load_start_ms(run, first);
        let mut grid: BTreeMap<i64, [Option<f64>; 3]> = BTreeMap::new();
        for (k, name) in names.iter().enumerate() {
            let Some((ts, vs)) = series_of(run, name) else {
                continue;
            };
            for (t, v) in ts.iter().zip(vs) {
                let (Some(t), Some(v)) = (t.as_f64(), v.as_f64()) else {
                    continue;
                };
                if !t.is_finite() || !v.is_finite() {
                    continue;
                }
                let sec = ((t - start) / 1000.0).round() as i64;
                grid.entry(sec).or_default()[k] = Some(v);
            }
        }
        let mut out = RelativeTimeline {
            source: source.into(),
            ..RelativeTimeline::default()
        };
        for (sec, [rps, p99, errors]) in grid {
            out.t_s.push(sec as f64);
            out.rps.push(rps);
            out.p99_ms.push(p99);
            out.errors.push(errors);
        }
        return out;
    }
    RelativeTimeline::default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn run(rps: f64, p99: f64, routes: Value) -> Value {
        json!({
            "version": 1,
            "run": {"id": "r1", "name": "n", "target": "http://x", "started_unix_ms": 1.0,
                    "duration_ms": 1000.0, "interrupted": false},
            "results": {"requests": 1000, "rps": rps, "errors": {"reset": 3, "refused": 1},
                        "latency_ms": {"p50": 1.0, "p99": p99},
                        "phases": [{"label": "c=1", "connections": 1, "rps": rps,
                                    "latency_ms": {"p50": 1.0, "p80": 2.0, "p99": p99}}]},
            "routes": {"client": routes, "access_log": []}
        })
    }

    #[test]
    fn gate_parses_relative_and_absolute_clauses() {
        let g = parse_gate("p99>+10%, rps<-5%,p50>2ms,p999>=0.5s").unwrap();
        assert_eq!(g.len(), 4);
        assert_eq!(g[0].direction, Direction::Above);
        assert!(g[0].relative && g[0].limit == 10.0);
        assert_eq!(g[1].direction, Direction::Below);
        assert!(g[1].relative && g[1].limit == -5.0);
        assert!(!g[2].relative && g[2].limit == 2.0);
        assert_eq!(g[3].metric, "p99.9");
        assert_eq!(g[3].limit, 500.0);
    }

    #[test]
    fn gate_rejects_nonsense_with_the_clause_named() {
        for bad in [
            "", "p99", "p99>>", "foo>+1%", "rps<-5ms", "p99>+x%", "p99>1<2",
        ] {
            let e = parse_gate(bad).unwrap_err();
            assert!(e.to_string().contains("clause"), "{bad}: {e}");
        }
    }

    #[test]
    fn gate_fails_on_regression_and_passes_within_limits() {
        let a = summarize(&run(1000.0, 10.0, json!([]))).unwrap();
        let worse = summarize(&run(940.0, 11.5, json!([]))).unwrap();
        let same = summarize(&run(990.0, 10.5, json!([]))).unwrap();
        let gate = parse_gate("p99>+10%,rps<-5%").unwrap();
        let v = judge_gate(&gate, &a, &worse).unwrap();
        assert!(!v.pass);
        assert!(!v.clauses[0].pass && !v.clauses[1].pass);
        assert!((v.clauses[0].change.unwrap() - 15.0).abs() < 1e-9);
        let v = judge_gate(&gate, &a, &same).unwrap();
        assert!(v.pass, "{v}");
    }

    #[test]
    fn gate_on_a_missing_metric_is_an_error() {
        let a = summarize(&run(1000.0, 10.0, json!([]))).unwrap();
        let gate = parse_gate("p80>+1%").unwrap();
        assert!(judge_gate(&gate, &a, &a).is_err());
    }

    #[test]
    fn errors_count_5xx_answers_in_new_and_old_results() {
        let mut faulty = run(1000.0, 10.0, json!([]));
        faulty["results"] = json!({"requests": 1000, "rps": 1000.0, "errors": 40,
            "errors_transport": 0, "error_rate": 4.0, "status": {"5xx": 40},
            "latency_ms": {"p99": 10.0}});
        let s = summarize(&faulty).unwrap();
        assert_eq!(s.metrics["errors"], 40.0);
        assert_eq!(s.metrics["error_rate"], 4.0);
        // An older file counted only transport errors in `errors`.
        faulty["results"] = json!({"requests": 1000, "rps": 1000.0, "errors": 2,
            "status": {"5xx": 38}, "latency_ms": {"p99": 10.0}});
        let s = summarize(&faulty).unwrap();
        assert_eq!(s.metrics["errors"], 40.0);
        assert!((s.metrics["error_rate"] - 4.0).abs() < 1e-12);
        let clean = summarize(&run(1000.0, 10.0, json!([]))).unwrap();
        let gate = parse_gate("errors>0,error_rate>0").unwrap();
        assert!(!judge_gate(&gate, &clean, &s).unwrap().pass);
    }

    #[test]
    fn errors_by_kind_are_summed() {
        let s = summarize(&run(1.0, 1.0, json!([]))).unwrap();
        assert_eq!(s.metrics["errors"], 4.0);
        assert!((s.metrics["error_rate"] - 0.4).abs() < 1e-12);
    }

    #[test]
    fn deltas_say_which_way_is_better() {
        let a = summarize(&run(1000.0, 10.0, json!([]))).unwrap();
        let b = summarize(&run(1100.0, 20.0, json!([]))).unwrap();
        let d = deltas(&a, &b);
        let rps = d.iter().find(|d| d.metric == "rps").unwrap();
        assert_eq!(rps.better, Some(true));
        assert!((rps.pct.unwrap() - 10.0).abs() < 1e-9);
        let p99 = d.iter().find(|d| d.metric == "p99").unwrap();
        assert_eq!(p99.better, Some(false));
        assert_eq!(p99.pct, Some(100.0));
    }

    #[test]
    fn route_deltas_keep_routes_seen_on_one_side() {
        let a = summarize(&run(
            1.0,
            1.0,
            json!([{"method": "GET", "uri": "/a", "count": 10, "p99": 2.0},
                   {"method": "GET", "uri": "/gone", "count": 1, "p99": 1.0}]),
        ))
        .unwrap();
        let b = summarize(&run(
            1.0,
            1.0,
            json!([{"method": "GET", "uri": "/a", "count": 12, "p99": 3.0},
                   {"method": "POST", "uri": "/new", "count": 5, "p99": 1.0}]),
        ))
        .unwrap();
        let d = route_deltas(&a, &b);
        assert_eq!(d.len(), 3);
        assert_eq!(d[0].uri, "/a");
        assert_eq!(d[0].p99_pct, Some(50.0));
        assert!(d.iter().any(|r| r.uri == "/gone" && r.count_b.is_none()));
        assert!(d.iter().any(|r| r.uri == "/new" && r.count_a.is_none()));
    }

    fn finding(id: &str, severity: &str, score: f64) -> Value {
        json!({"id": id, "rule": id.split('.').next().unwrap_or(id), "title": format!("t {id}"),
               "severity": severity, "score": score})
    }

    #[test]
    fn findings_are_matched_by_rule_and_qualifier() {
        let a = json!({"findings": [finding("hot-code.json-parse", "warning", 40.0),
                                     finding("saturation", "high", 90.0),
                                     finding("hot-code.regex", "warning", 30.0)]});
        let b = json!({"findings": [finding("hot-code.regex", "warning", 35.0),
                                     finding("log-rollover-stall", "high", 80.0),
                                     finding("hot-code.compression", "info", 10.0),
                                     finding("saturation", "high", 70.0)]});
        let d = finding_changes(&findings_of(&a), &findings_of(&b));
        let got: Vec<(&str, &str)> = d
            .iter()
            .map(|d| (d.id.as_str(), d.change.as_str()))
            .collect();
        assert_eq!(
            got,
            [
                ("log-rollover-stall", "new"),
                ("hot-code.compression", "new"),
                ("hot-code.json-parse", "resolved"),
                ("saturation", "unchanged"),
                ("hot-code.regex", "unchanged"),
            ]
        );
        let sat = &d[3];
        assert_eq!(
            (sat.a.as_ref().unwrap().score, sat.b.as_ref().unwrap().score),
            (90.0, 70.0)
        );
        assert!(d[0].a.is_none() && d[2].b.is_none());
    }

    #[test]
    fn findings_are_read_leniently() {
        assert!(findings_of(&json!({})).is_empty());
        assert!(findings_of(&json!({"findings": "nope"})).is_empty());
        let f = findings_of(&json!({"findings": [{"rule": "saturation"}, {"title": "no id"}]}));
        assert_eq!(f.len(), 1);
        assert_eq!(
            (f[0].id.as_str(), f[0].severity.as_str()),
            ("saturation", "info")
        );
        let twice = [f[0].clone(), f[0].clone()];
        assert_eq!(finding_changes(&twice, &[]).len(), 1);
    }

    #[test]
    fn timelines_share_one_relative_axis() {
        // Load starts at 2 s; client points at x.586 s; the log at whole seconds.
        let run = json!({
            "phases": [{"index": 0, "start_ms": 2000.0, "end_ms": 5000.0}],
            "series": [
                {"name": "client.rps", "unit": "/s", "t_ms": [2586.0, 3586.0, 4586.0], "v": [10.0, 0.0, 12.0]},
                {"name": "client.p99_ms", "unit": "ms", "t_ms": [2586.0, 4586.0], "v": [5.0, 7.0]},
                {"name": "client.errors", "unit": "/s", "t_ms": [2586.0, 3586.0, 4586.0], "v": [0.0, 3.0, 0.0]},
                {"name": "log.rps", "unit": "/s", "t_ms": [3000.0], "v": [9.0]}
            ]
        });
        let t = relative_timeline(&run);
        assert_eq!(t.source, "client");
        assert_eq!(t.t_s, [1.0, 2.0, 3.0]);
        assert_eq!(t.rps, [Some(10.0), Some(0.0), Some(12.0)]);
        assert_eq!(t.p99_ms, [Some(5.0), None, Some(7.0)]);
        assert_eq!(t.errors, [Some(0.0), Some(3.0), Some(0.0)]);
        // Without client series the access log's are used; without phases
        // the load starts a second before the first point.
        let log_only =
            json!({"series": [{"name": "log.rps", "t_ms": [6000.0, 7000.0], "v": [4.0, 5.0]}]});
        let t = relative_timeline(&log_only);
        assert_eq!((t.source.as_str(), t.t_s.clone()), ("log", vec![1.0, 2.0]));
        assert_eq!(t.p99_ms, [None, None]);
        assert_eq!(relative_timeline(&json!({})).source, "");
    }
}
