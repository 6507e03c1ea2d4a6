//! Service-level objectives: `p99<=1s,p80<=500ms,rps>=4000,errors<=0.1%`,
//! judged clause by clause with the margin left (or missed).

use crate::error::LoadError;
use crate::report::Stats;

/// What a clause measures.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
#[serde(rename_all = "snake_case", tag = "kind", content = "value")]
pub enum Metric {
    /// A latency percentile (e.g. 99.0, 99.9), in milliseconds.
    Percentile(f64),
    /// Mean latency, ms.
    Mean,
    /// Maximum latency, ms.
    Max,
    /// Requests per second.
    Rps,
    /// Errors (transport errors plus 5xx answers) as a percentage of attempts.
    ErrorRate,
    /// Errors (transport errors plus 5xx answers) as a count.
    ErrorCount,
}

/// Comparison of a clause.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
pub enum Op {
    /// `<=`
    #[serde(rename = "<=")]
    Le,
    /// `<`
    #[serde(rename = "<")]
    Lt,
    /// `>=`
    #[serde(rename = ">=")]
    Ge,
    /// `>`
    #[serde(rename = ">")]
    Gt,
}

impl Op {
    fn as_str(self) -> &'static str {
        match self {
            Op::Le => "<=",
            Op::Lt => "<",
            Op::Ge => ">=",
            Op::Gt => ">",
        }
    }
}

/// One clause, e.g. `p99<=1s`; the limit is kept in the metric's unit
/// (ms for latency, req/s, % or a count for errors).
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Clause {
    /// The clause as written.
    pub text: String,
    /// What is measured.
    pub metric: Metric,
    /// How it is compared.
    pub op: Op,
    /// The limit in the metric's unit.
    pub limit: f64,
}

/// A compound SLO: every clause must hold.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Slo {
    /// The clauses in the order given.
    pub clauses: Vec<Clause>,
}

/// The judgement of one clause.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct ClauseVerdict {
    /// The clause as written.
    pub clause: String,
    /// Whether it held.
    pub pass: bool,
    /// The measured value in the clause's unit.
    pub measured: f64,
    /// The limit in the clause's unit.
    pub limit: f64,
    /// Unit of `measured`, `limit` and `margin` (`ms`, `req/s`, `%`, `errors`).
    pub unit: &'static str,
    /// Room left before the limit (positive) or by how much it was missed
    /// (negative), in the clause's unit.
    pub margin: f64,
    /// `margin` as a percentage of the limit (0 when the limit is 0).
    pub margin_pct: f64,
}

/// The judgement of a whole SLO.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct Verdict {
    /// True when every clause passed.
    pub pass: bool,
    /// One verdict per clause.
    pub clauses: Vec<ClauseVerdict>,
}

impl Verdict {
    /// The clauses that failed, as written.
    pub fn failed(&self) -> Vec<&str> {
        self.clauses
            .iter()
            .filter(|c| !c.pass)
            .map(|c| c.clause.as_str())
            .collect()
    }
}

impl Slo {
    /// Parses `p99<=1s,p80<=500ms,rps>=4000,errors<=0.1%`. Latency metrics:
    /// `pNN[.N]`, `mean`, `max` with a duration limit (bare numbers are ms);
    /// `rps`; `errors` as a percentage (`0.1%`) or a count (`5`).
    pub fn parse(s: &str) -> Result<Slo, LoadError> {
        let mut clauses = Vec::new();
        for raw in s.split(',') {
            let text = raw.trim();
            if text.is_empty() {
                continue;
            }
            clauses.push(parse_clause(text)?);
        }
        if clauses.is_empty() {
            return Err(LoadError::BadInput(format!("empty SLO {s:?}")));
        }
        Ok(Slo { clauses })
    }

    /// Judges measured stats against every clause.
    pub fn judge(&self, stats: &Stats) -> Verdict {
        let clauses: Vec<ClauseVerdict> = self
            .clauses
            .iter()
            .map(|c| judge_clause(c, stats))
            .collect();
        Verdict {
            pass: clauses.iter().all(|c| c.pass),
            clauses,
        }
    }
}

fn parse_clause(text: &str) -> Result<Clause, LoadError> {
    use keisoku_common::{gate, Quantity};
    let bad = |why: &str| {
        LoadError::BadInput(format!(
            "bad SLO clause {text:?}: {why} (use e.g. p99<=1s, p80<=500ms, rps>=4000, errors<=0.1%)"
        ))
    };
    let c = gate::clause(text).map_err(|e| bad(&e.reason))?;
    let op = match c.op {
        gate::Op::Le => Op::Le,
        gate::Op::Lt => Op::Lt,
        gate::Op::Ge => Op::Ge,
        gate::Op::Gt => Op::Gt,
    };
    let name = c.subject.to_ascii_lowercase();
    let value = Quantity::parse(c.value);
    let metric = match name.as_str() {
        "mean" | "avg" => Metric::Mean,
        "max" => Metric::Max,
        "rps" => Metric::Rps,
        "errors" | "error" => {
            if matches!(value, Some(Quantity::Percent(_))) {
                Metric::ErrorRate
            } else {
                Metric::ErrorCount
            }
        }
        n if n.starts_with('p') => {
            let q: f64 = n[1..].parse().map_err(|_| bad("bad percentile"))?;
            if !(q > 0.0 && q <= 100.0) {
                return Err(bad("percentile must be in (0, 100]"));
            }
            Metric::Percentile(q)
        }
        _ => return Err(bad("unknown metric")),
    };
    // Latency limits: a duration, or a bare number of ms.
    let limit = match (&metric, value) {
        (Metric::Percentile(_) | Metric::Mean | Metric::Max, Some(Quantity::Number(ms))) => ms,
        (Metric::Percentile(_) | Metric::Mean | Metric::Max, Some(q @ Quantity::Time { .. })) => {
            q.as_ms().unwrap_or(f64::NAN)
        }
        (Metric::Percentile(_) | Metric::Mean | Metric::Max, _) => return Err(bad("bad duration")),
        (Metric::ErrorRate, Some(Quantity::Percent(p))) => p,
        (Metric::ErrorRate, _) => return Err(bad("bad percentage")),
        (Metric::Rps | Metric::ErrorCount, Some(Quantity::Number(n))) => n,
        (Metric::Rps | Metric::ErrorCount, _) => return Err(bad("bad number")),
    };
    if !limit.is_finite() || limit < 0.0 {
        return Err(bad("limit must be a non-negative number"));
    }
    Ok(Clause {
        text: c.text.to_string(),
        metric,
        op,
        limit,
    })
}

/// The value a metric takes in `stats`, in the metric's unit.
pub fn measure(metric: &Metric, stats: &Stats) -> f64 {
    match metric {
        Metric::Percentile(q) => stats.latency_hist_ms(*q),
        Metric::Mean => stats.latency_ms.mean,
        Metric::Max => stats.latency_ms.max,
        Metric::Rps => stats.rps,
        Metric::ErrorRate => stats.error_rate_pct(),
        Metric::ErrorCount => stats.slo_errors() as f64,
    }
}

fn judge_clause(c: &Clause, stats: &Stats) -> ClauseVerdict {
    let measured = measure(&c.metric, stats);
    let pass = match c.op {
        Op::Le => measured <= c.limit,
        Op::Lt => measured < c.limit,
        Op::Ge => measured >= c.limit,
        Op::Gt => measured > c.limit,
    };
    let margin = match c.op {
        Op::Le | Op::Lt => c.limit - measured,
        Op::Ge | Op::Gt => measured - c.limit,
    };
    let unit = match c.metric {
        Metric::Percentile(_) | Metric::Mean | Metric::Max => "ms",
        Metric::Rps => "req/s",
        Metric::ErrorRate => "%",
        Metric::ErrorCount => "errors",
    };
    ClauseVerdict {
        clause: format!(
            "{}{}{}",
            metric_name(&c.metric),
            c.op.as_str(),
            fmt_limit(c)
        ),
        pass,
        measured,
        limit: c.limit,
        unit,
        margin,
        margin_pct: if c.limit > 0.0 {
            margin / c.limit * 100.0
        } else {
            0.0
        },
    }
}

fn metric_name(m: &Metric) -> String {
    match m {
        Metric::Percentile(q) => format!("p{}", crate::plan::fmt_num_trim(*q)),
        Metric::Mean => "mean".into(),
        Metric::Max => "max".into(),
        Metric::Rps => "rps".into(),
        Metric::ErrorRate | Metric::ErrorCount => "errors".into(),
    }
}

fn fmt_limit(c: &Clause) -> String {
    let n = crate::plan::fmt_num_trim(c.limit);
    match c.metric {
        Metric::Percentile(_) | Metric::Mean | Metric::Max => format!("{n}ms"),
        Metric::ErrorRate => format!("{n}%"),
        _ => n,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_issue_example() {
        let s = Slo::parse("p99<=1s,p80<=500ms,rps>=4000,errors<=0.1%").unwrap();
        assert_eq!(s.clauses.len(), 4);
        assert_eq!(s.clauses[0].metric, Metric::Percentile(99.0));
        assert_eq!(s.clauses[0].limit, 1000.0);
        assert_eq!(s.clauses[1].limit, 500.0);
        assert_eq!(s.clauses[2].metric, Metric::Rps);
        assert_eq!(s.clauses[2].op, Op::Ge);
        assert_eq!(s.clauses[3].metric, Metric::ErrorRate);
        assert_eq!(s.clauses[3].limit, 0.1);
        let s = Slo::parse("p99.9 < 20, errors<=3, mean<2ms, max>0").unwrap();
        assert_eq!(s.clauses[0].metric, Metric::Percentile(99.9));
        assert_eq!(s.clauses[0].op, Op::Lt);
        assert_eq!(s.clauses[0].limit, 20.0);
        assert_eq!(s.clauses[1].metric, Metric::ErrorCount);
        assert_eq!(s.clauses[3].op, Op::Gt);
    }

    #[test]
    fn rejects_nonsense() {
        for bad in [
            "",
            "p99",
            "p99<=",
            "p101<=1s",
            "q<=1",
            "rps>=fast",
            "p99<=1x",
            "errors<=-1%",
            ",",
        ] {
            assert!(Slo::parse(bad).is_err(), "{bad}");
        }
    }
}
