//! Gate clauses: one grammar for SLOs (`p99<=1s,rps>=4000,errors<=0.1%`),
//! regression gates (`p99>+10%,rps<-5%,p50>+2ms`) and function gates
//! (`--fail-if 'malloc>+5%'`).
//!
//! A gate is a comma-separated list of clauses `SUBJECT OP VALUE`: OP is one
//! of `<=`, `>=`, `<`, `>`; VALUE is a number with an optional sign and an
//! optional unit: `%` (a percentage), a duration unit (`ms`, `s`, `us`, `m`,
//! ...; see [`crate::duration`]) or none. What a subject means and which
//! units it takes is up to the gate that reads the clause.

use std::time::Duration;

/// A comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// `<=`
    Le,
    /// `<`
    Lt,
    /// `>=`
    Ge,
    /// `>`
    Gt,
}

impl Op {
    /// The operator as written.
    pub fn as_str(self) -> &'static str {
        match self {
            Op::Le => "<=",
            Op::Lt => "<",
            Op::Ge => ">=",
            Op::Gt => ">",
        }
    }

    /// Whether `value OP limit` holds.
    pub fn holds(self, value: f64, limit: f64) -> bool {
        match self {
            Op::Le => value <= limit,
            Op::Lt => value < limit,
            Op::Ge => value >= limit,
            Op::Gt => value > limit,
        }
    }

    /// Whether the operator bounds from above (`<`, `<=`).
    pub fn is_upper_bound(self) -> bool {
        matches!(self, Op::Le | Op::Lt)
    }
}

/// A clause's value with its unit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Quantity {
    /// `10%`, `+10%`, `-5%`: a percentage.
    Percent(f64),
    /// `500ms`, `+2ms`, `1s`: a time, signed (a change may be negative).
    Time {
        /// The length.
        duration: Duration,
        /// Whether it was written with `-`.
        negative: bool,
    },
    /// `4000`, `-5`, `0.5`: a plain number.
    Number(f64),
}

impl Quantity {
    /// Parses `[+|-]NUMBER[%|duration unit]`.
    pub fn parse(text: &str) -> Option<Quantity> {
        let t = text.trim();
        let (negative, body) = match t.as_bytes().first() {
            Some(b'-') => (true, t[1..].trim_start()),
            Some(b'+') => (false, t[1..].trim_start()),
            _ => (false, t),
        };
        let sign = if negative { -1.0 } else { 1.0 };
        let number = |s: &str| -> Option<f64> {
            let s = s.trim();
            let ok = !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit() || b == b'.');
            ok.then(|| s.parse::<f64>().ok())
                .flatten()
                .filter(|v| v.is_finite())
        };
        if let Some(n) = body.strip_suffix('%') {
            return number(n).map(|v| Quantity::Percent(sign * v));
        }
        if let Some(v) = number(body) {
            return Some(Quantity::Number(sign * v));
        }
        crate::duration::parse_duration(body)
            .ok()
            .map(|duration| Quantity::Time { duration, negative })
    }

    /// The value in milliseconds when it is a time, signed.
    pub fn as_ms(&self) -> Option<f64> {
        match *self {
            Quantity::Time { duration, negative } => {
                let ms = duration.as_secs_f64() * 1e3;
                Some(if negative { -ms } else { ms })
            }
            _ => None,
        }
    }
}

/// One clause, split but not interpreted.
#[derive(Debug, Clone, PartialEq)]
pub struct Clause<'a> {
    /// The clause as written (trimmed).
    pub text: &'a str,
    /// What is compared, trimmed (`p99`, `rps`, a regex...).
    pub subject: &'a str,
    /// The comparison.
    pub op: Op,
    /// The limit as written, trimmed; see [`Quantity::parse`].
    pub value: &'a str,
}

/// Why a gate could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("bad clause {clause:?}: {reason}")]
pub struct GateError {
    /// The offending clause.
    pub clause: String,
    /// What was wrong with it.
    pub reason: String,
}

impl GateError {
    /// An error about `clause`.
    pub fn new(clause: &str, reason: impl Into<String>) -> GateError {
        GateError {
            clause: clause.to_string(),
            reason: reason.into(),
        }
    }
}

const OPS: [(&str, Op); 4] = [("<=", Op::Le), (">=", Op::Ge), ("<", Op::Lt), (">", Op::Gt)];

/// Splits one clause at its first operator (the longest one at that
/// place: `<=` before `<`).
pub fn clause(text: &str) -> Result<Clause<'_>, GateError> {
    let t = text.trim();
    let (pos, op, len) = OPS
        .iter()
        .filter_map(|(s, op)| t.find(s).map(|p| (p, *op, s.len())))
        .min_by_key(|(p, _, len)| (*p, usize::MAX - len))
        .ok_or_else(|| GateError::new(t, "missing <=, <, >= or >"))?;
    split_at(t, pos, op, len)
}

/// Splits one clause at its last operator, for subjects that may contain
/// `<` or `>` themselves (a regular expression matching `Vec<u8>`).
pub fn clause_last_op(text: &str) -> Result<Clause<'_>, GateError> {
    let t = text.trim();
    let pos = t
        .rfind(['<', '>'])
        .ok_or_else(|| GateError::new(t, "missing <=, <, >= or >"))?;
    let op_char = t.as_bytes()[pos];
    // `>=` is written with the `=` after the angle.
    let (op, len) = match (op_char, t.as_bytes().get(pos + 1)) {
        (b'<', Some(b'=')) => (Op::Le, 2),
        (b'>', Some(b'=')) => (Op::Ge, 2),
        (b'<', _) => (Op::Lt, 1),
        _ => (Op::Gt, 1),
    };
    split_at(t, pos, op, len)
}

fn split_at(t: &str, pos: usize, op: Op, len: usize) -> Result<Clause<'_>, GateError> {
    let subject = t[..pos].trim();
    let value = t[pos + len..].trim();
    if subject.is_empty() {
        return Err(GateError::new(t, "nothing before the operator"));
    }
    if value.is_empty() {
        return Err(GateError::new(t, "no limit after the operator"));
    }
    Ok(Clause {
        text: t,
        subject,
        op,
        value,
    })
}

/// The clauses of a comma-separated gate, empty ones skipped.
pub fn clauses(text: &str) -> Result<Vec<Clause<'_>>, GateError> {
    let out: Vec<Clause<'_>> = text
        .split(',')
        .map(str::trim)
        .filter(|c| !c.is_empty())
        .map(clause)
        .collect::<Result<_, _>>()?;
    if out.is_empty() {
        return Err(GateError::new(text, "no clauses"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_clauses() {
        let c = clauses("p99<=1s, rps>=4000,,errors<0.1%").unwrap();
        assert_eq!(c.len(), 3);
        assert_eq!((c[0].subject, c[0].op, c[0].value), ("p99", Op::Le, "1s"));
        assert_eq!((c[1].subject, c[1].op, c[1].value), ("rps", Op::Ge, "4000"));
        assert_eq!(
            (c[2].subject, c[2].op, c[2].value),
            ("errors", Op::Lt, "0.1%")
        );
        assert!(clauses(" , ").is_err());
        assert!(clause("p99").is_err());
        assert!(clause("<1s").is_err());
        assert!(clause("p99<").is_err());
    }

    #[test]
    fn regex_subjects_split_at_the_last_operator() {
        let c = clause_last_op("Vec<u8>::push>+5%").unwrap();
        assert_eq!((c.subject, c.op, c.value), ("Vec<u8>::push", Op::Gt, "+5%"));
        let c = clause_last_op("malloc>=2").unwrap();
        assert_eq!((c.subject, c.op, c.value), ("malloc", Op::Ge, "2"));
    }

    #[test]
    fn quantities() {
        assert_eq!(Quantity::parse("+10%"), Some(Quantity::Percent(10.0)));
        assert_eq!(Quantity::parse("-5%"), Some(Quantity::Percent(-5.0)));
        assert_eq!(Quantity::parse("4000"), Some(Quantity::Number(4000.0)));
        assert_eq!(Quantity::parse("-0.5"), Some(Quantity::Number(-0.5)));
        assert_eq!(Quantity::parse("+2ms").and_then(|q| q.as_ms()), Some(2.0));
        assert_eq!(
            Quantity::parse("-1s").and_then(|q| q.as_ms()),
            Some(-1000.0)
        );
        for bad in ["", "%", "fast", "1e9", "--1", "10%%"] {
            assert_eq!(Quantity::parse(bad), None, "{bad}");
        }
    }

    #[test]
    fn ops_hold() {
        assert!(Op::Le.holds(1.0, 1.0));
        assert!(!Op::Lt.holds(1.0, 1.0));
        assert!(Op::Gt.holds(2.0, 1.0));
        assert!(Op::Le.is_upper_bound() && !Op::Ge.is_upper_bound());
    }
}
