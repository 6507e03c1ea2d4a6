//! alp's `--filters` expressions (a subset of the `expr` language alp uses):
//!
//! ```text
//! Status >= 500 and Method == "POST"
//! Uri matches "^/api/" && ResponseTime > 0.5
//! not (Status in [200, 304]) or BodyBytes > 10000
//! Time >= TimeAgo("5m")      BetweenTime(Time, "2026-11-21T10:00:00Z", "2026-11-21T10:05:00Z")
//! ```
//!
//! Variables: `Uri`, `Method`, `Time`, `ResponseTime`, `BodyBytes`, `Status`
//! (lower-case and snake_case spellings work too). Operators: `== != < <= >
//! >=`, `matches`, `contains`, `startsWith`, `endsWith`, `in [..]`, `not in`,
//! `and`/`&&`, `or`/`||`, `not`/`!`, parentheses.

use crate::format::Record;
use crate::timestamp;

/// A filter expression that does not parse.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("filter {expr:?}: {msg} (at offset {pos})")]
pub struct FilterError {
    /// The whole expression.
    pub expr: String,
    /// What is wrong.
    pub msg: String,
    /// Byte offset of the problem.
    pub pos: usize,
}

#[derive(Debug, Clone, PartialEq)]
enum Tok {
    Num(f64),
    Str(String),
    Ident(String),
    Op(&'static str),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Var {
    Uri,
    Method,
    Time,
    ResponseTime,
    BodyBytes,
    Status,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Cmp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

#[derive(Debug, Clone)]
enum Node {
    Num(f64),
    Str(String),
    Bool(bool),
    Var(Var),
    TimeAgo(f64),
    List(Vec<Node>),
    Not(Box<Node>),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Cmp(Cmp, Box<Node>, Box<Node>),
    Matches(Box<Node>, regex::Regex),
    Contains(Box<Node>, Box<Node>),
    StartsWith(Box<Node>, Box<Node>),
    EndsWith(Box<Node>, Box<Node>),
    In(Box<Node>, Box<Node>),
    Between(Box<Node>, Box<Node>, Box<Node>),
    /// `+ - * / % **` (expr's arithmetic, which alp's README lists).
    Arith(Arith, Box<Node>, Box<Node>),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Arith {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
    Pow,
}

#[derive(Debug, Clone, PartialEq)]
enum Val {
    Num(f64),
    Str(String),
    Bool(bool),
    /// Unix seconds.
    Time(Option<f64>),
    List(Vec<Val>),
}

/// A compiled filter.
#[derive(Debug, Clone)]
pub struct Filter {
    root: Node,
    needs_time: bool,
    zone: Zone,
}

/// The zone a time without an offset is read in.
type Zone = jiff::tz::TimeZone;

fn lex(src: &str) -> Result<Vec<(Tok, usize)>, (String, usize)> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    while i < b.len() {
        let c = b[i];
        if c.is_ascii_whitespace() {
            i += 1;
            continue;
        }
        let start = i;
        if c.is_ascii_digit() || (c == b'.' && b.get(i + 1).is_some_and(u8::is_ascii_digit)) {
            while i < b.len()
                && (b[i].is_ascii_digit()
                    || b[i] == b'.'
                    || b[i] == b'e'
                    || b[i] == b'E'
                    || b[i] == b'_')
            {
                i += 1;
            }
            let text: String = src[start..i].chars().filter(|c| *c != '_').collect();
            let v = text
                .parse::<f64>()
                .map_err(|_| (format!("bad number {text:?}"), start))?;
            out.push((Tok::Num(v), start));
        } else if c == b'"' || c == b'\'' || c == b'`' {
            let q = c;
            i += 1;
            let mut s = String::new();
            loop {
                let Some(&d) = b.get(i) else {
                    return Err(("unterminated string".into(), start));
                };
                if d == q {
                    i += 1;
                    break;
                }
                if d == b'\\' && q != b'`' {
                    let e = *b
                        .get(i + 1)
                        .ok_or(("unterminated string".to_string(), start))?;
                    s.push(match e {
                        b'n' => '\n',
                        b't' => '\t',
                        other => other as char,
                    });
                    i += 2;
                    continue;
                }
                let ch = src[i..]
                    .chars()
                    .next()
                    .ok_or(("bad string".to_string(), i))?;
                s.push(ch);
                i += ch.len_utf8();
            }
            out.push((Tok::Str(s), start));
        } else if c.is_ascii_alphabetic() || c == b'_' {
            while i < b.len() && (b[i].is_ascii_alphanumeric() || b[i] == b'_') {
                i += 1;
            }
            out.push((Tok::Ident(src[start..i].to_string()), start));
        } else {
            // Longest first: `**` before `*`.
            const OPS: [&str; 21] = [
                "==", "!=", "<=", ">=", "&&", "||", "**", "<", ">", "!", "(", ")", "[", "]", ",",
                "=", "-", "+", "*", "/", "%",
            ];
            let op = OPS
                .iter()
                .find(|o| src[i..].starts_with(**o))
                .ok_or((format!("unexpected {:?}", c as char), i))?;
            if *op == "=" {
                return Err(("use == to compare".into(), i));
            }
            i += op.len();
            out.push((Tok::Op(op), start));
        }
    }
    Ok(out)
}

/// Deepest expression accepted: parsing and evaluation recurse once per
/// level, and a 100,000-level `!!!!...` or `(((...` would overflow the stack.
const MAX_DEPTH: usize = 200;

struct P<'s> {
    toks: Vec<(Tok, usize)>,
    i: usize,
    len: usize,
    /// Current nesting (parentheses, operators, chained and/or terms).
    depth: usize,
    _src: &'s str,
}

impl P<'_> {
    fn peek(&self) -> Option<&Tok> {
        self.toks.get(self.i).map(|t| &t.0)
    }
    fn pos(&self) -> usize {
        self.toks.get(self.i).map_or(self.len, |t| t.1)
    }
    fn err<T>(&self, msg: impl Into<String>) -> Result<T, (String, usize)> {
        Err((msg.into(), self.pos()))
    }
    fn is_word(&self, w: &str) -> bool {
        matches!(self.peek(), Some(Tok::Ident(s)) if s == w)
    }
    fn is_op(&self, o: &str) -> bool {
        matches!(self.peek(), Some(Tok::Op(s)) if *s == o)
    }
    fn nest(&mut self) -> Result<(), (String, usize)> {
        self.depth += 1;
        if self.depth > MAX_DEPTH {
            return self.err(format!(
                "expression nested more than {MAX_DEPTH} levels deep"
            ));
        }
        Ok(())
    }
    fn expect_op(&mut self, o: &str) -> Result<(), (String, usize)> {
        if self.is_op(o) {
            self.i += 1;
            Ok(())
        } else {
            self.err(format!("expected {o:?}"))
        }
    }

    fn or(&mut self) -> Result<Node, (String, usize)> {
        let base = self.depth;
        let mut l = self.and()?;
        while self.is_word("or") || self.is_op("||") {
            self.i += 1;
            // Each term deepens the (left-leaning) tree by one.
            self.nest()?;
            l = Node::Or(Box::new(l), Box::new(self.and()?));
        }
        self.depth = base;
        Ok(l)
    }
    fn and(&mut self) -> Result<Node, (String, usize)> {
        let base = self.depth;
        let mut l = self.not()?;
        while self.is_word("and") || self.is_op("&&") {
            self.i += 1;
            self.nest()?;
            l = Node::And(Box::new(l), Box::new(self.not()?));
        }
        self.depth = base;
        Ok(l)
    }
    fn not(&mut self) -> Result<Node, (String, usize)> {
        self.nest()?;
        let n = self.not_inner();
        self.depth -= 1;
        n
    }
    fn not_inner(&mut self) -> Result<Node, (String, usize)> {
        if self.is_word("not") || self.is_op("!") {
            self.i += 1;
            return Ok(Node::Not(Box::new(self.not()?)));
        }
        self.cmp()
    }
    /// `a + b`, `a - b`, left to right, over products.
    fn sum(&mut self) -> Result<Node, (String, usize)> {
        let mut l = self.product()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Op("+")) => Arith::Add,
                Some(Tok::Op("-")) => Arith::Sub,
                _ => return Ok(l),
            };
            self.i += 1;
            self.nest()?;
            let r = self.product();
            self.depth -= 1;
            l = Node::Arith(op, Box::new(l), Box::new(r?));
        }
    }
    /// `a * b`, `a / b`, `a % b`, left to right, over powers.
    fn product(&mut self) -> Result<Node, (String, usize)> {
        let mut l = self.power()?;
        loop {
            let op = match self.peek() {
                Some(Tok::Op("*")) => Arith::Mul,
                Some(Tok::Op("/")) => Arith::Div,
                Some(Tok::Op("%")) => Arith::Rem,
                _ => return Ok(l),
            };
            self.i += 1;
            self.nest()?;
            let r = self.power();
            self.depth -= 1;
            l = Node::Arith(op, Box::new(l), Box::new(r?));
        }
    }
    /// `a ** b`, right to left as in expr.
    fn power(&mut self) -> Result<Node, (String, usize)> {
        let l = self.primary()?;
        if !self.is_op("**") {
            return Ok(l);
        }
        self.i += 1;
        self.nest()?;
        let r = self.power();
        self.depth -= 1;
        Ok(Node::Arith(Arith::Pow, Box::new(l), Box::new(r?)))
    }
    fn cmp(&mut self) -> Result<Node, (String, usize)> {
        let l = self.sum()?;
        let cmp = match self.peek() {
            Some(Tok::Op("==")) => Some(Cmp::Eq),
            Some(Tok::Op("!=")) => Some(Cmp::Ne),
            Some(Tok::Op("<")) => Some(Cmp::Lt),
            Some(Tok::Op("<=")) => Some(Cmp::Le),
            Some(Tok::Op(">")) => Some(Cmp::Gt),
            Some(Tok::Op(">=")) => Some(Cmp::Ge),
            _ => None,
        };
        if let Some(c) = cmp {
            self.i += 1;
            return Ok(Node::Cmp(c, Box::new(l), Box::new(self.sum()?)));
        }
        let negate = if self.is_word("not")
            && matches!(self.toks.get(self.i + 1), Some((Tok::Ident(s), _)) if s == "in")
        {
            self.i += 1;
            true
        } else {
            false
        };
        let word = match self.peek() {
            Some(Tok::Ident(w))
                if ["matches", "contains", "startsWith", "endsWith", "in"]
                    .contains(&w.as_str()) =>
            {
                w.clone()
            }
            _ => return Ok(l),
        };
        self.i += 1;
        let at = self.pos();
        let r = self.primary()?;
        let node = match word.as_str() {
            "matches" => {
                let Node::Str(pat) = &r else {
                    return Err(("matches needs a string pattern".into(), at));
                };
                let re = regex::Regex::new(pat).map_err(|e| {
                    (
                        format!("bad pattern: {}", crate::format::regex_message(&e)),
                        at,
                    )
                })?;
                Node::Matches(Box::new(l), re)
            }
            "contains" => Node::Contains(Box::new(l), Box::new(r)),
            "startsWith" => Node::StartsWith(Box::new(l), Box::new(r)),
            "endsWith" => Node::EndsWith(Box::new(l), Box::new(r)),
            _ => Node::In(Box::new(l), Box::new(r)),
        };
        Ok(if negate {
            Node::Not(Box::new(node))
        } else {
            node
        })
    }
    fn primary(&mut self) -> Result<Node, (String, usize)> {
        self.nest()?;
        let n = self.primary_inner();
        self.depth -= 1;
        n
    }
    fn primary_inner(&mut self) -> Result<Node, (String, usize)> {
        let at = self.pos();
        let Some((tok, _)) = self.toks.get(self.i).cloned() else {
            return self.err("unexpected end");
        };
        self.i += 1;
        match tok {
            Tok::Num(v) => Ok(Node::Num(v)),
            Tok::Str(s) => Ok(Node::Str(s)),
            Tok::Op("-") => match self.primary()? {
                Node::Num(v) => Ok(Node::Num(-v)),
                _ => Err(("'-' needs a number".into(), at)),
            },
            Tok::Op("(") => {
                let e = self.or()?;
                self.expect_op(")")?;
                Ok(e)
            }
            Tok::Op("[") => {
                let mut items = Vec::new();
                while !self.is_op("]") {
                    items.push(self.primary()?);
                    if !self.is_op("]") {
                        self.expect_op(",")?;
                    }
                }
                self.i += 1;
                Ok(Node::List(items))
            }
            Tok::Ident(w) => {
                let var = match w.as_str() {
                    "true" => return Ok(Node::Bool(true)),
                    "false" => return Ok(Node::Bool(false)),
                    "Uri" | "uri" | "URI" => Var::Uri,
                    "Method" | "method" => Var::Method,
                    "Time" | "time" => Var::Time,
                    "ResponseTime" | "response_time" | "responseTime" | "restime" => Var::ResponseTime,
                    "BodyBytes" | "body_bytes" | "bodyBytes" | "size" => Var::BodyBytes,
                    "Status" | "status" => Var::Status,
                    "TimeAgo" => {
                        self.expect_op("(")?;
                        let a = self.pos();
                        let Some((Tok::Str(d), _)) = self.toks.get(self.i).cloned() else {
                            return Err(("TimeAgo needs a duration string such as \"5m\"".into(), a));
                        };
                        self.i += 1;
                        self.expect_op(")")?;
                        let secs = timestamp::parse_duration(&d).ok_or((format!("bad duration {d:?}"), a))?;
                        return Ok(Node::TimeAgo(secs));
                    }
                    "BetweenTime" => {
                        self.expect_op("(")?;
                        let t = self.or()?;
                        self.expect_op(",")?;
                        let s = self.or()?;
                        self.expect_op(",")?;
                        let e = self.or()?;
                        self.expect_op(")")?;
                        return Ok(Node::Between(Box::new(t), Box::new(s), Box::new(e)));
                    }
                    other => return Err((format!("unknown name {other:?} (use Uri, Method, Time, ResponseTime, BodyBytes, Status)"), at)),
                };
                Ok(Node::Var(var))
            }
            Tok::Op(o) => Err((format!("unexpected {o:?}"), at)),
        }
    }
}

fn uses_time(n: &Node) -> bool {
    match n {
        Node::Var(Var::Time) | Node::TimeAgo(_) => true,
        Node::Not(a) | Node::Matches(a, _) => uses_time(a),
        Node::And(a, b)
        | Node::Or(a, b)
        | Node::Cmp(_, a, b)
        | Node::Contains(a, b)
        | Node::StartsWith(a, b)
        | Node::EndsWith(a, b)
        | Node::In(a, b)
        | Node::Arith(_, a, b) => uses_time(a) || uses_time(b),
        Node::Between(a, b, c) => uses_time(a) || uses_time(b) || uses_time(c),
        Node::List(v) => v.iter().any(uses_time),
        _ => false,
    }
}

/// The Go type name of an expression that cannot be a condition, as alp's
/// expr names it; `None` for a boolean (or not statically known) result.
fn non_bool_type(n: &Node) -> Option<&'static str> {
    match n {
        Node::Num(v) if v.fract() == 0.0 => Some("int"),
        Node::Num(_) => Some("float64"),
        Node::Str(_) => Some("string"),
        Node::Var(Var::Status) => Some("int"),
        Node::Var(Var::ResponseTime | Var::BodyBytes) => Some("float64"),
        Node::Var(Var::Uri | Var::Method | Var::Time) => Some("string"),
        Node::TimeAgo(_) => Some("time.Time"),
        Node::List(_) => Some("[]interface {}"),
        Node::Arith(Arith::Div | Arith::Pow, _, _) => Some("float64"),
        Node::Arith(_, a, b) => match (non_bool_type(a), non_bool_type(b)) {
            (Some("int"), Some("int")) => Some("int"),
            (Some("string"), Some("string")) => Some("string"),
            _ => Some("float64"),
        },
        _ => None,
    }
}

fn now_secs() -> f64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0.0, |d| d.as_secs_f64())
}

impl Filter {
    /// Compiles an expression.
    pub fn new(expr: &str) -> Result<Filter, FilterError> {
        let wrap = |(msg, pos): (String, usize)| FilterError {
            expr: expr.to_string(),
            msg,
            pos,
        };
        let toks = lex(expr).map_err(wrap)?;
        let mut p = P {
            len: expr.len(),
            toks,
            i: 0,
            depth: 0,
            _src: expr,
        };
        let root = p.or().map_err(wrap)?;
        if p.i < p.toks.len() {
            return Err(wrap(("unexpected trailing input".into(), p.pos())));
        }
        // alp (expr) rejects a filter that is not a condition, e.g. `Status`,
        // instead of reading a value as true or false.
        if let Some(t) = non_bool_type(&root) {
            return Err(wrap((format!("expected bool, but got {t}"), 0)));
        }
        Ok(Filter {
            needs_time: uses_time(&root),
            root,
            zone: Zone::UTC,
        })
    }

    /// The filter reading a time without an offset (in the log, or in a
    /// string it is compared with as a time) as a wall clock in `zone`, as
    /// alp does in its `--location`; UTC without this.
    pub fn in_zone(mut self, zone: Zone) -> Filter {
        self.zone = zone;
        self
    }

    /// Whether evaluating needs the request timestamp.
    pub fn needs_time(&self) -> bool {
        self.needs_time
    }

    /// Whether `rec` passes.
    pub fn matches(&self, rec: &Record<'_>) -> bool {
        truthy(&eval(&self.root, rec, &self.zone))
    }
}

fn truthy(v: &Val) -> bool {
    match v {
        Val::Bool(b) => *b,
        Val::Num(n) => *n != 0.0,
        Val::Str(s) => !s.is_empty(),
        Val::Time(t) => t.is_some(),
        Val::List(l) => !l.is_empty(),
    }
}

fn as_time(v: &Val, z: &Zone) -> Option<f64> {
    match v {
        Val::Time(t) => *t,
        Val::Str(s) => timestamp::parse_in(s.as_bytes(), z),
        Val::Num(n) => Some(*n),
        _ => None,
    }
}

fn equal(a: &Val, b: &Val, z: &Zone) -> bool {
    match (a, b) {
        (Val::Time(_), _) | (_, Val::Time(_)) => {
            as_time(a, z).is_some() && as_time(a, z) == as_time(b, z)
        }
        (Val::Num(x), Val::Num(y)) => x == y,
        (Val::Str(x), Val::Str(y)) => x == y,
        (Val::Bool(x), Val::Bool(y)) => x == y,
        _ => false,
    }
}

fn order(a: &Val, b: &Val, z: &Zone) -> Option<std::cmp::Ordering> {
    match (a, b) {
        (Val::Time(_), _) | (_, Val::Time(_)) => as_time(a, z)?.partial_cmp(&as_time(b, z)?),
        (Val::Num(x), Val::Num(y)) => x.partial_cmp(y),
        (Val::Str(x), Val::Str(y)) => Some(x.cmp(y)),
        _ => None,
    }
}

fn text(v: &Val) -> Option<&str> {
    match v {
        Val::Str(s) => Some(s),
        _ => None,
    }
}

fn eval(n: &Node, r: &Record<'_>, z: &Zone) -> Val {
    match n {
        Node::Num(v) => Val::Num(*v),
        Node::Str(s) => Val::Str(s.clone()),
        Node::Bool(b) => Val::Bool(*b),
        Node::Var(v) => match v {
            Var::Uri => Val::Str(r.uri.to_string()),
            Var::Method => Val::Str(String::from_utf8_lossy(&r.method).into_owned()),
            // alp binds `Time` as the log's text: against a string it compares text (a line
            // at `08:10:00+00:00` is after `"08:10:00"`, being longer), and only against
            // `TimeAgo` (a time.Time) or in `BetweenTime` is it read as an instant.
            Var::Time => Val::Str(String::from_utf8_lossy(&r.time).into_owned()),
            Var::ResponseTime => Val::Num(r.response_time),
            Var::BodyBytes => Val::Num(r.body_bytes),
            Var::Status => Val::Num(r.status as f64),
        },
        Node::TimeAgo(secs) => Val::Time(Some(now_secs() - secs)),
        Node::List(items) => Val::List(items.iter().map(|i| eval(i, r, z)).collect()),
        Node::Not(a) => Val::Bool(!truthy(&eval(a, r, z))),
        Node::And(a, b) => Val::Bool(truthy(&eval(a, r, z)) && truthy(&eval(b, r, z))),
        Node::Or(a, b) => Val::Bool(truthy(&eval(a, r, z)) || truthy(&eval(b, r, z))),
        Node::Cmp(c, a, b) => {
            let (a, b) = (eval(a, r, z), eval(b, r, z));
            Val::Bool(match c {
                Cmp::Eq => equal(&a, &b, z),
                Cmp::Ne => !equal(&a, &b, z),
                Cmp::Lt => order(&a, &b, z).is_some_and(|o| o.is_lt()),
                Cmp::Le => order(&a, &b, z).is_some_and(|o| o.is_le()),
                Cmp::Gt => order(&a, &b, z).is_some_and(|o| o.is_gt()),
                Cmp::Ge => order(&a, &b, z).is_some_and(|o| o.is_ge()),
            })
        }
        Node::Matches(a, re) => Val::Bool(text(&eval(a, r, z)).is_some_and(|s| re.is_match(s))),
        Node::Contains(a, b) => {
            let (a, b) = (eval(a, r, z), eval(b, r, z));
            Val::Bool(matches!((text(&a), text(&b)), (Some(x), Some(y)) if x.contains(y)))
        }
        Node::StartsWith(a, b) => {
            let (a, b) = (eval(a, r, z), eval(b, r, z));
            Val::Bool(matches!((text(&a), text(&b)), (Some(x), Some(y)) if x.starts_with(y)))
        }
        Node::EndsWith(a, b) => {
            let (a, b) = (eval(a, r, z), eval(b, r, z));
            Val::Bool(matches!((text(&a), text(&b)), (Some(x), Some(y)) if x.ends_with(y)))
        }
        Node::In(a, b) => {
            let a = eval(a, r, z);
            Val::Bool(match eval(b, r, z) {
                Val::List(items) => items.iter().any(|i| equal(&a, i, z)),
                Val::Str(s) => text(&a).is_some_and(|x| s.contains(x)),
                _ => false,
            })
        }
        Node::Arith(op, a, b) => match (eval(a, r, z), eval(b, r, z)) {
            (Val::Num(x), Val::Num(y)) => Val::Num(match op {
                Arith::Add => x + y,
                Arith::Sub => x - y,
                Arith::Mul => x * y,
                Arith::Div => x / y,
                Arith::Rem => x % y,
                Arith::Pow => x.powf(y),
            }),
            (Val::Str(x), Val::Str(y)) if *op == Arith::Add => Val::Str(x + &y),
            // expr refuses other operands at run time: nothing compares
            // equal to, or in order with, NaN.
            _ => Val::Num(f64::NAN),
        },
        Node::Between(t, s, e) => {
            let (t, s, e) = (
                as_time(&eval(t, r, z), z),
                as_time(&eval(s, r, z), z),
                as_time(&eval(e, r, z), z),
            );
            Val::Bool(matches!((t, s, e), (Some(t), Some(s), Some(e)) if s <= t && t <= e))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_is_not_a_condition() {
        for (expr, t) in [
            ("Status", "int"),
            ("Uri", "string"),
            ("ResponseTime", "float64"),
        ] {
            let e = Filter::new(expr).unwrap_err();
            assert_eq!(e.msg, format!("expected bool, but got {t}"));
        }
        assert!(Filter::new("Status == 200").is_ok());
        assert!(Filter::new("not (Status == 200)").is_ok());
    }
    use std::borrow::Cow;

    #[test]
    fn deep_nesting_is_an_error_not_a_stack_overflow() {
        // Crash inputs for the logs_filter fuzz target, grown past the
        // fuzzer's length limit: each level recursed once while parsing.
        for deep in [
            "!".repeat(100_000) + "true",
            "(".repeat(100_000) + "true" + &")".repeat(100_000),
            "-".repeat(100_000) + "1 == 1",
            vec!["Status == 200"; 50_000].join(" and "),
        ] {
            let e = Filter::new(&deep).unwrap_err();
            assert!(e.msg.contains("nested more than"), "{}", e.msg);
        }
        let ok = "(".repeat(40) + "!(Status in [200, 304]) or Status >= 500" + &")".repeat(40);
        assert!(Filter::new(&ok).unwrap().matches(&rec()));
        let terms = vec!["Status > 1"; 100].join(" and ");
        assert!(Filter::new(&terms).unwrap().matches(&rec()));
    }

    fn rec() -> Record<'static> {
        Record {
            uri: Cow::Borrowed("/api/users"),
            raw_uri: Cow::Borrowed(b"/api/users?page=2"),
            method: Cow::Borrowed(b"POST"),
            time: Cow::Borrowed(b"2026-11-21T10:00:30+00:00"),
            response_time: 0.75,
            body_bytes: 1234.0,
            status: 503,
        }
    }

    fn t(e: &str) -> bool {
        Filter::new(e).unwrap().matches(&rec())
    }

    /// In `--location`, a bound without an offset is a wall clock there;
    /// the record's `+00:00` stays an instant (alp's parser reads it as a
    /// Tokyo wall clock too: a deliberate difference, docs/logs.md).
    #[test]
    fn bounds_without_an_offset_are_wall_clocks_in_the_zone() {
        let tokyo = crate::timestamp::location("Asia/Tokyo").unwrap();
        let z = |e: &str| {
            Filter::new(e)
                .unwrap()
                .in_zone(tokyo.clone())
                .matches(&rec())
        };
        // The record is at 10:00:30+00:00, 19:00:30 in Tokyo.
        assert!(z(
            "BetweenTime(Time, '2026-11-21T19:00:00', '2026-11-21T19:01:00')"
        ));
        assert!(!z(
            "BetweenTime(Time, '2026-11-21T10:00:00', '2026-11-21T10:01:00')"
        ));
        assert!(t(
            "BetweenTime(Time, '2026-11-21T10:00:00', '2026-11-21T10:01:00')"
        ));
    }

    #[test]
    fn expressions() {
        assert!(t("Status >= 500"));
        assert!(t("Status == 503 && Method == 'POST'"));
        assert!(!t("Status < 500 or Method == \"GET\""));
        assert!(t("Uri matches '^/api/'"));
        assert!(t("not (Status in [200, 304])"));
        assert!(t("Status not in [200, 304]"));
        assert!(t("ResponseTime > 0.5 and BodyBytes <= 1234"));
        assert!(t(
            "Uri startsWith '/api' and Uri endsWith 'users' and Uri contains 'pi/u'"
        ));
        assert!(t(
            "Time >= '2026-11-21T10:00:00Z' and Time < '2026-11-21T10:01:00Z'"
        ));
        assert!(t(
            "BetweenTime(Time, '2026-11-21T10:00:00Z', '2026-11-21T10:00:59Z')"
        ));
        assert!(!t("Time >= TimeAgo('5m')"));
        // As alp: against a string, `Time` is text (longer is later, `Z` is not `+00:00`);
        // against `TimeAgo` and in `BetweenTime` it is an instant.
        assert!(t("Time > '2026-11-21T10:00:30'"));
        assert!(!t("Time == '2026-11-21T10:00:30Z'"));
        assert!(t("Time == '2026-11-21T10:00:30+00:00'"));
        assert!(t(
            "BetweenTime(Time, '2026-11-21T10:00:30Z', '2026-11-21T10:00:30Z')"
        ));
        assert!(t("status == 503"));
        // expr's arithmetic, as alp's README lists it.
        assert!(t("Status % 100 == 3"));
        assert!(t("BodyBytes * 2 > 2000 and BodyBytes / 2 < 1000"));
        assert!(t("Status - 3 == 250 * 2"));
        assert!(t("2 ** 3 ** 2 == 512"));
        assert!(t("1 + 2 * 3 == 7"));
        assert!(t("(1 + 2) * 3 == 9"));
        assert!(t("-1 + 2 == 1"));
        assert!(t("Method + 'X' == 'POSTX'"));
        assert!(!t("Method * 2 == 0"));
        assert!(Filter::new("Status + 1").unwrap_err().msg.contains("int"));
    }

    #[test]
    fn errors_say_where() {
        let e = Filter::new("Status >").unwrap_err();
        assert_eq!(e.pos, 8);
        assert!(Filter::new("Status = 5").unwrap_err().msg.contains("=="));
        assert!(Filter::new("Bogus == 1")
            .unwrap_err()
            .msg
            .contains("unknown name"));
        assert!(Filter::new("Uri matches '('").is_err());
        assert!(Filter::new("(Status == 1").is_err());
        assert!(Filter::new("Status == 1 2").is_err());
    }
}
