//! Call graphs as deterministic profilers record them (cProfile/pstats):
//! per function the exact call counts and times, and per caller edge the
//! same numbers for the calls made from that caller. Unlike sampled stacks
//! a call graph does not say which full stack a moment belongs to, so the
//! flame graph drawn from it ([`CallGraph::estimate`]) is an estimate, and
//! is labelled so wherever it is shown; the table ([`render_table`],
//! [`render_callers`]) carries the recorded numbers unchanged.

use crate::model::{FrameKind, Profile, Unit, NO_PARENT};
use rustc_hash::FxHashMap;
use serde::Serialize;
use std::fmt::Write;

/// The label every view of an estimated flame graph carries.
pub const ESTIMATED: &str = "estimated from a call graph";

/// A function as pstats keys it: file, first line and name.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize)]
pub struct FunctionKey {
    /// Source file, or `~` for built-in functions.
    pub file: String,
    /// First line of the function (0 for built-ins).
    pub line: i64,
    /// Function name (built-ins: `<built-in method ...>`).
    pub name: String,
}

impl FunctionKey {
    /// The name pstats prints (`pstats.func_std_string`):
    /// `file:line(name)`, or `{built-in method ...}` for built-ins.
    pub fn label(&self) -> String {
        if self.file == "~" && self.line == 0 {
            match self
                .name
                .strip_prefix('<')
                .and_then(|n| n.strip_suffix('>'))
            {
                Some(inner) => format!("{{{inner}}}"),
                None => self.name.clone(),
            }
        } else {
            format!("{}:{}({})", self.file, self.line, self.name)
        }
    }
}

/// The calls from one caller to one function.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Edge {
    /// Index of the caller in [`CallGraph::functions`].
    pub caller: usize,
    /// Calls, recursive ones included.
    pub nc: u64,
    /// Primitive (non-recursive) calls.
    pub cc: u64,
    /// Time in the function itself during these calls, in seconds.
    pub tt: f64,
    /// Time in the function and its callees during these calls, in seconds.
    pub ct: f64,
    /// Whether the recorder timed the edge (cProfile); the pure-Python
    /// `profile` module records only a call count per caller.
    pub timed: bool,
}

/// One function's recorded numbers.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Function {
    /// Its key.
    #[serde(flatten)]
    pub key: FunctionKey,
    /// The pstats label ([`FunctionKey::label`]).
    pub label: String,
    /// Primitive calls.
    pub cc: u64,
    /// All calls.
    pub nc: u64,
    /// Time in the function itself (tottime), in seconds.
    pub tt: f64,
    /// Time in the function and its callees (cumtime), in seconds.
    pub ct: f64,
    /// Who called it.
    pub callers: Vec<Edge>,
    /// Whether the profile lists the function itself (false for a caller
    /// that has no entry of its own, which pstats does not print).
    pub listed: bool,
}

impl Function {
    /// The `ncalls` column as pstats prints it: "nc/cc" when recursive calls
    /// make them differ.
    pub fn ncalls(&self) -> String {
        ncalls(self.nc, self.cc)
    }
}

fn ncalls(nc: u64, cc: u64) -> String {
    if nc == cc {
        nc.to_string()
    } else {
        format!("{nc}/{cc}")
    }
}

/// One request's profile in a directory written by werkzeug's
/// `ProfilerMiddleware` (`GET.orders.12ms.1700000000.prof`).
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Request {
    /// The file name.
    pub file: String,
    /// HTTP method, from the name.
    pub method: String,
    /// Path as the name spells it (`/` became `.`, `root` is `/`).
    pub path: String,
    /// Elapsed milliseconds, from the name.
    pub elapsed_ms: f64,
    /// Unix time the request was profiled, from the name.
    pub unix_time: Option<f64>,
    /// Total time of its functions (pstats' total), in seconds.
    pub total_tt: f64,
}

/// A whole call graph, one profile or several merged.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct CallGraph {
    /// Functions in the order the profile lists them (merged profiles:
    /// the first profile's order, then new functions as met, as pstats'
    /// `add` keeps them).
    pub functions: Vec<Function>,
    /// How many profiles were merged into this one.
    pub profiles: usize,
    /// Per-request profiles of a werkzeug directory, slowest first.
    pub requests: Vec<Request>,
    /// Always [`ESTIMATED`]: what the flame graph drawn from this is.
    pub flame: &'static str,
    #[serde(skip)]
    index: FxHashMap<FunctionKey, usize>,
}

/// The order of the table, as pstats' `sort_stats` names it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SortKey {
    /// tottime, largest first (pstats' default for finding hot code).
    Tottime,
    /// cumtime, largest first.
    Cumtime,
    /// All calls, most first.
    Ncalls,
}

impl SortKey {
    /// The key with this pstats name (`tottime`/`time`, `cumtime`/`cumulative`, `ncalls`/`calls`).
    pub fn from_name(s: &str) -> Option<SortKey> {
        match s {
            "tottime" | "time" => Some(SortKey::Tottime),
            "cumtime" | "cumulative" => Some(SortKey::Cumtime),
            "ncalls" | "calls" => Some(SortKey::Ncalls),
            _ => None,
        }
    }
}

impl CallGraph {
    /// An empty graph.
    pub fn new() -> Self {
        CallGraph {
            flame: ESTIMATED,
            ..Default::default()
        }
    }

    /// The index of `key`, interning it as an unlisted function if new.
    pub fn intern(&mut self, key: FunctionKey) -> usize {
        if let Some(&i) = self.index.get(&key) {
            return i;
        }
        let i = self.functions.len();
        self.functions.push(Function {
            label: key.label(),
            key: key.clone(),
            cc: 0,
            nc: 0,
            tt: 0.0,
            ct: 0.0,
            callers: Vec::new(),
            listed: false,
        });
        self.index.insert(key, i);
        i
    }

    /// The function with this key, if any.
    pub fn find(&self, key: &FunctionKey) -> Option<usize> {
        self.index.get(key).copied()
    }

    /// Adds a function's own numbers (summed with what is there, as
    /// `pstats.add_func_stats` does).
    pub fn add_function(&mut self, key: FunctionKey, cc: u64, nc: u64, tt: f64, ct: f64) -> usize {
        let i = self.intern(key);
        let f = &mut self.functions[i];
        f.listed = true;
        f.cc = f.cc.saturating_add(cc);
        f.nc = f.nc.saturating_add(nc);
        f.tt += tt;
        f.ct += ct;
        i
    }

    /// Adds calls from `caller` to the function at `callee` (summed with an
    /// existing edge, as `pstats.add_callers` does).
    pub fn add_caller(&mut self, callee: usize, caller: FunctionKey, edge: Edge) {
        let c = self.intern(caller);
        let callers = &mut self.functions[callee].callers;
        match callers.iter_mut().find(|e| e.caller == c) {
            Some(e) => {
                e.nc = e.nc.saturating_add(edge.nc);
                e.cc = e.cc.saturating_add(edge.cc);
                e.tt += edge.tt;
                e.ct += edge.ct;
                e.timed &= edge.timed;
            }
            None => callers.push(Edge { caller: c, ..edge }),
        }
    }

    /// Adds another graph to this one with pstats' `Stats.add` semantics.
    pub fn merge(&mut self, other: &CallGraph) {
        // Functions first, so a caller listed later in `other` keeps its
        // place in `other`'s order rather than the first reference to it.
        let mut map = Vec::with_capacity(other.functions.len());
        for f in &other.functions {
            map.push(if f.listed {
                self.add_function(f.key.clone(), f.cc, f.nc, f.tt, f.ct)
            } else {
                self.intern(f.key.clone())
            });
        }
        for (i, f) in other.functions.iter().enumerate() {
            for e in &f.callers {
                let caller = other.functions[e.caller].key.clone();
                self.add_caller(map[i], caller, e.clone());
            }
        }
        self.profiles += other.profiles;
    }

    /// Listed functions only (what pstats counts and prints).
    pub fn listed(&self) -> impl Iterator<Item = (usize, &Function)> {
        self.functions.iter().enumerate().filter(|(_, f)| f.listed)
    }

    /// pstats' header numbers: all calls, primitive calls and total time
    /// (the sum of tottime).
    pub fn totals(&self) -> (u64, u64, f64) {
        self.listed().fold((0u64, 0u64, 0.0), |(n, c, t), (_, f)| {
            (n.saturating_add(f.nc), c.saturating_add(f.cc), t + f.tt)
        })
    }

    /// Listed functions in table order: largest first by `key`; ties keep
    /// the profile's order, as pstats' stable sort does.
    pub fn sorted(&self, key: SortKey) -> Vec<usize> {
        let mut v: Vec<usize> = self.listed().map(|(i, _)| i).collect();
        let f = &self.functions;
        match key {
            SortKey::Tottime => v.sort_by(|&a, &b| f[b].tt.total_cmp(&f[a].tt)),
            SortKey::Cumtime => v.sort_by(|&a, &b| f[b].ct.total_cmp(&f[a].ct)),
            SortKey::Ncalls => v.sort_by(|&a, &b| f[b].nc.cmp(&f[a].nc)),
        }
        v
    }

    /// Per function, the functions it calls with the edge's numbers.
    pub fn callees(&self) -> Vec<Vec<(usize, &Edge)>> {
        let mut out: Vec<Vec<(usize, &Edge)>> = vec![Vec::new(); self.functions.len()];
        for (i, f) in self.functions.iter().enumerate() {
            for e in &f.callers {
                out[e.caller].push((i, e));
            }
        }
        out
    }

    /// The cumulative time of the edge `e` into function `f`: recorded by
    /// cProfile; for count-only edges, the function's cumtime shared by
    /// the edge's share of calls.
    fn edge_ct(&self, f: usize, e: &Edge) -> f64 {
        if e.timed {
            e.ct
        } else {
            let fun = &self.functions[f];
            if fun.nc == 0 {
                0.0
            } else {
                fun.ct * e.nc as f64 / fun.nc as f64
            }
        }
    }

    /// A flame graph estimated from the call graph, in nanoseconds.
    ///
    /// Each function met on a path from a root (a function no other calls)
    /// gets the share of its time that the edge it was reached by carries:
    /// the edge's cumtime over the function's cumtime, times the share its
    /// caller had on that path. Self time is tottime times that share.
    /// Calls back into a function already on the path (recursion) are not
    /// followed, as their time is inside the outer call; paths under
    /// `1e-6` of the total are cut, no function is drawn with more than its
    /// tottime, and time no path reached is drawn as roots of their own, so
    /// the graph's total stays pstats' total time. The title says it is an
    /// estimate.
    pub fn estimate(&self, title: &str) -> Profile {
        let mut p = Profile::new(format!("{title} ({ESTIMATED})"), Unit::Nanoseconds);
        let n = self.functions.len();
        let frames: Vec<u32> = self
            .functions
            .iter()
            .map(|f| {
                let kind = if f.key.file == "~" {
                    FrameKind::Native
                } else {
                    FrameKind::Interpreted
                };
                p.frame_parts(&f.label, &f.key.file, kind)
            })
            .collect();
        let callees: Vec<Vec<(usize, f64)>> = self
            .callees()
            .into_iter()
            .map(|v| {
                v.into_iter()
                    .map(|(g, e)| (g, self.edge_ct(g, e)))
                    .collect()
            })
            .collect();
        let (_, _, total) = self.totals();
        let cut = total * 1e-6;
        let mut self_s: Vec<f64> = Vec::new();
        let mut reached = vec![0.0f64; n];
        let mut on_path = vec![false; n];
        // Explicit stack: call chains can be thousands of functions deep.
        struct Step {
            f: usize,
            node: u32,
            fraction: f64,
            next: usize,
        }
        let roots: Vec<usize> = self
            .listed()
            .filter(|(i, f)| f.callers.iter().all(|e| e.caller == *i))
            .map(|(i, _)| i)
            .collect();
        for r in roots {
            let node = p.child(NO_PARENT, frames[r]);
            let mut stack = vec![Step {
                f: r,
                node,
                fraction: 1.0,
                next: 0,
            }];
            on_path[r] = true;
            add_self(&mut self_s, node, self.functions[r].tt);
            reached[r] += self.functions[r].tt;
            while let Some(top) = stack.last_mut() {
                let f = top.f;
                let Some(&(g, ct_e)) = callees[f].get(top.next) else {
                    on_path[f] = false;
                    stack.pop();
                    continue;
                };
                top.next += 1;
                let (parent_node, parent_fraction) = (top.node, top.fraction);
                let share = ct_e * parent_fraction;
                let gf = &self.functions[g];
                if on_path[g] || share <= cut || gf.ct <= 0.0 || !gf.listed {
                    continue;
                }
                let fraction = (share / gf.ct).min(1.0);
                let node = p.child(parent_node, frames[g]);
                // Inconsistent edges (mutual recursion counts nested time
                // on several edges) could draw more than the function's
                // tottime: never draw more than it has.
                let own = (gf.tt * fraction).min(gf.tt - reached[g]).max(0.0);
                add_self(&mut self_s, node, own);
                reached[g] += own;
                on_path[g] = true;
                stack.push(Step {
                    f: g,
                    node,
                    fraction,
                    next: 0,
                });
            }
        }
        for (i, f) in self.listed() {
            let left = f.tt - reached[i];
            if left > cut && left > f.tt * 1e-9 {
                let node = p.child(NO_PARENT, frames[i]);
                add_self(&mut self_s, node, left);
            }
        }
        self_s.resize(p.node_count(), 0.0);
        p.counts = Some(
            self_s
                .iter()
                .map(|s| (s.max(0.0) * 1e9).round() as u64)
                .collect(),
        );
        p
    }
}

fn add_self(v: &mut Vec<f64>, node: u32, s: f64) {
    let i = node as usize;
    if v.len() <= i {
        v.resize(i + 1, 0.0);
    }
    v[i] += s;
}

fn f8(x: f64) -> String {
    format!("{x:8.3}")
}

fn row(out: &mut String, nc: u64, cc: u64, tt: f64, ct: f64, label: &str) {
    let per_tt = if nc == 0 {
        " ".repeat(8)
    } else {
        f8(tt / nc as f64)
    };
    let per_ct = if cc == 0 {
        " ".repeat(8)
    } else {
        f8(ct / cc as f64)
    };
    let _ = writeln!(
        out,
        "{:>9} {} {} {} {} {label}",
        ncalls(nc, cc),
        f8(tt),
        per_tt,
        f8(ct),
        per_ct
    );
}

/// The terminal table of a call graph, in pstats' `print_stats` layout
/// (ncalls, tottime, percall, cumtime, percall, function), the `top`
/// functions by `key`, limited to labels matching `only` when given.
pub fn render_table(
    g: &CallGraph,
    key: SortKey,
    top: usize,
    only: Option<&regex::Regex>,
) -> String {
    let mut out = String::new();
    let (calls, prim, total) = g.totals();
    let sources = if g.profiles > 1 {
        format!(" in {} profiles", g.profiles)
    } else {
        String::new()
    };
    let _ = writeln!(
        out,
        "{calls} function calls ({prim} primitive calls) in {total:.3} seconds{sources}"
    );
    let order = match key {
        SortKey::Tottime => "internal time",
        SortKey::Cumtime => "cumulative time",
        SortKey::Ncalls => "call count",
    };
    let _ = writeln!(out, "Ordered by: {order}\n");
    let _ = writeln!(
        out,
        "   ncalls  tottime  percall  cumtime  percall filename:lineno(function)"
    );
    for i in g
        .sorted(key)
        .into_iter()
        .filter(|&i| only.is_none_or(|re| re.is_match(&g.functions[i].label)))
        .take(top)
    {
        let f = &g.functions[i];
        row(&mut out, f.nc, f.cc, f.tt, f.ct, &f.label);
    }
    out
}

/// Callers and callees of every function whose label matches `re`, with
/// each edge's recorded numbers (pstats' `print_callers`/`print_callees`):
/// the edge's calls, and the tottime and cumtime of the function during
/// the calls over that edge.
pub fn render_callers(g: &CallGraph, re: &regex::Regex) -> String {
    let mut out = String::new();
    let callees = g.callees();
    let edge = |out: &mut String, e: &Edge, label: &str| {
        if e.timed {
            let _ = writeln!(
                out,
                "    {:>9} {} {}  {label}",
                ncalls(e.nc, e.cc),
                f8(e.tt),
                f8(e.ct)
            );
        } else {
            let _ = writeln!(out, "    {:>9} {:>8} {:>8}  {label}", e.nc, "", "");
        }
    };
    for i in g.sorted(SortKey::Cumtime) {
        let f = &g.functions[i];
        if !re.is_match(&f.label) {
            continue;
        }
        let _ = writeln!(out, "{}", f.label);
        let _ = writeln!(
            out,
            "  {} calls, tottime {:.6} s, cumtime {:.6} s",
            f.ncalls(),
            f.tt,
            f.ct
        );
        let _ = writeln!(out, "  called by:   ncalls  tottime  cumtime");
        let mut callers: Vec<&Edge> = f.callers.iter().collect();
        callers.sort_by(|a, b| b.ct.total_cmp(&a.ct));
        if callers.is_empty() {
            let _ = writeln!(out, "    (nothing: a root)");
        }
        for e in callers {
            edge(&mut out, e, &g.functions[e.caller].label);
        }
        let _ = writeln!(out, "  calls:       ncalls  tottime  cumtime");
        let mut own: Vec<&(usize, &Edge)> = callees[i].iter().collect();
        own.sort_by(|a, b| b.1.ct.total_cmp(&a.1.ct));
        if own.is_empty() {
            let _ = writeln!(out, "    (nothing)");
        }
        for (c, e) in own {
            edge(&mut out, e, &g.functions[*c].label);
        }
        out.push('\n');
    }
    out
}

/// The table of per-request profiles, slowest first by the time in their
/// names: elapsed ms, method, path, profiled time and file.
pub fn render_requests(g: &CallGraph, top: usize) -> String {
    let mut out = String::new();
    if g.requests.is_empty() {
        return out;
    }
    let _ = writeln!(
        out,
        "{} request profiles, slowest {} by the time in their names:",
        g.requests.len(),
        top.min(g.requests.len())
    );
    let _ = writeln!(
        out,
        "{:>10} {:>10}  {:<6} {:<30} file",
        "elapsed", "profiled", "method", "path"
    );
    for r in g.requests.iter().take(top) {
        let _ = writeln!(
            out,
            "{:>8}ms {:>9.3}s  {:<6} {:<30} {}",
            fmt_ms(r.elapsed_ms),
            r.total_tt,
            r.method,
            r.path,
            r.file
        );
    }
    out.push('\n');
    out
}

fn fmt_ms(ms: f64) -> String {
    if ms.fract() == 0.0 {
        format!("{ms:.0}")
    } else {
        format!("{ms:.1}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(name: &str) -> FunctionKey {
        FunctionKey {
            file: "app.py".into(),
            line: 1,
            name: name.into(),
        }
    }

    fn timed(nc: u64, tt: f64, ct: f64) -> Edge {
        Edge {
            caller: 0,
            nc,
            cc: nc,
            tt,
            ct,
            timed: true,
        }
    }

    /// main -> a (2 s) -> c; main -> b (1 s) -> c; c: 1.5 s self in total,
    /// 1 s of it from a and 0.5 s from b.
    fn diamond() -> CallGraph {
        let mut g = CallGraph::new();
        g.profiles = 1;
        g.add_function(key("main"), 1, 1, 0.5, 3.5);
        let a = g.add_function(key("a"), 1, 1, 1.0, 2.0);
        let b = g.add_function(key("b"), 1, 1, 0.5, 1.0);
        let c = g.add_function(key("c"), 2, 2, 1.5, 1.5);
        g.add_caller(a, key("main"), timed(1, 1.0, 2.0));
        g.add_caller(b, key("main"), timed(1, 0.5, 1.0));
        g.add_caller(c, key("a"), timed(1, 1.0, 1.0));
        g.add_caller(c, key("b"), timed(1, 0.5, 0.5));
        g
    }

    #[test]
    fn labels_are_pstats_labels() {
        assert_eq!(key("f").label(), "app.py:1(f)");
        let b = FunctionKey {
            file: "~".into(),
            line: 0,
            name: "<built-in method time.sleep>".into(),
        };
        assert_eq!(b.label(), "{built-in method time.sleep}");
        let m = FunctionKey {
            file: "~".into(),
            line: 0,
            name: "<method 'join' of 'str' objects>".into(),
        };
        assert_eq!(m.label(), "{method 'join' of 'str' objects}");
    }

    #[test]
    fn estimate_shares_time_by_edge_cumtime() {
        let p = diamond().estimate("t");
        assert!(p.title.contains(ESTIMATED));
        let folded = crate::collapse::folded_text(&p);
        let lines: Vec<&str> = folded.lines().collect();
        assert!(
            lines.contains(&"app.py:1(main);app.py:1(a);app.py:1(c) 1000000000"),
            "{folded}"
        );
        assert!(
            lines.contains(&"app.py:1(main);app.py:1(b);app.py:1(c) 500000000"),
            "{folded}"
        );
        // The whole of pstats' total time is drawn.
        assert_eq!(p.total_weight(), 3_500_000_000);
    }

    #[test]
    fn recursion_and_orphans_keep_the_total() {
        let mut g = CallGraph::new();
        let f = g.add_function(key("f"), 1, 5, 2.0, 2.0);
        g.add_caller(
            f,
            key("f"),
            Edge {
                nc: 4,
                cc: 0,
                ..timed(4, 1.6, 1.6)
            },
        );
        // A cycle no root reaches.
        let x = g.add_function(key("x"), 1, 1, 0.25, 0.5);
        let y = g.add_function(key("y"), 1, 1, 0.25, 0.5);
        g.add_caller(x, key("y"), timed(1, 0.25, 0.5));
        g.add_caller(y, key("x"), timed(1, 0.25, 0.5));
        let p = g.estimate("t");
        assert_eq!(p.total_weight(), 2_500_000_000);
        assert_eq!(g.functions[f].ncalls(), "5/1");
    }

    #[test]
    fn merge_adds_like_pstats() {
        let mut g = diamond();
        g.merge(&diamond());
        let c = g.find(&key("c")).unwrap();
        assert_eq!(g.functions[c].nc, 4);
        assert_eq!(g.functions[c].tt, 3.0);
        assert_eq!(g.functions[c].callers.len(), 2);
        assert_eq!(g.functions[c].callers[0].ct, 2.0);
        assert_eq!(g.profiles, 2);
        let (calls, prim, total) = g.totals();
        assert_eq!((calls, prim, total), (10, 10, 7.0));
    }

    #[test]
    fn tables_carry_the_recorded_numbers() {
        let g = diamond();
        let t = render_table(&g, SortKey::Tottime, 2, None);
        assert!(t.starts_with("5 function calls (5 primitive calls) in 3.500 seconds"));
        let rows: Vec<&str> = t.lines().skip(4).collect();
        assert_eq!(rows.len(), 2);
        assert!(rows[0].ends_with("app.py:1(c)"), "{t}");
        assert!(
            rows[0].contains("   1.500    0.750    1.500    0.750"),
            "{t}"
        );
        let c = render_callers(&g, &regex::Regex::new(r"\(c\)").unwrap());
        assert!(c.contains("1    1.000    1.000  app.py:1(a)"), "{c}");
        assert!(c.contains("(nothing)"), "{c}");
        assert_eq!(SortKey::from_name("cumulative"), Some(SortKey::Cumtime));
        let order = g.sorted(SortKey::Cumtime);
        assert_eq!(g.functions[order[0]].key.name, "main");
    }
}
