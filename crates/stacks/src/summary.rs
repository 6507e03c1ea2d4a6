//! Terminal summaries: the functions with the most self and total weight.

use crate::model::Profile;

/// One function's weights.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FunctionWeight {
    /// Function name.
    pub name: String,
    /// Module.
    pub module: String,
    /// Weight in the function itself.
    pub self_weight: u64,
    /// Weight of stacks through the function.
    pub total_weight: u64,
}

/// All functions, sorted by self weight (largest first), then name.
pub fn functions(p: &Profile) -> Vec<FunctionWeight> {
    let mut v: Vec<FunctionWeight> = crate::diff::per_function(p)
        .into_iter()
        .map(|(name, (s, t, module))| FunctionWeight {
            name,
            module,
            self_weight: s,
            total_weight: t,
        })
        .collect();
    v.sort_by(|a, b| {
        b.self_weight
            .cmp(&a.self_weight)
            .then_with(|| a.name.cmp(&b.name))
    });
    v
}

/// Weight of samples whose stack has a frame matching `re` (each sample once,
/// however many matching frames it has).
pub fn matched_weight(p: &Profile, re: &regex::Regex) -> u64 {
    let hit: Vec<bool> = p.frames.iter().map(|f| re.is_match(&f.name)).collect();
    let mut node_hit = vec![false; p.node_count()];
    for n in 0..p.node_count() {
        let parent = p.parent[n];
        node_hit[n] = hit[p.node_frame[n] as usize]
            || (parent != crate::model::NO_PARENT && node_hit[parent as usize]);
    }
    p.self_weights()
        .iter()
        .enumerate()
        .filter(|(n, _)| node_hit[*n])
        .fold(0, |a, (_, w)| a.saturating_add(*w))
}

/// How many lines `flame -o x.folded` writes: distinct stacks with weight,
/// per process name when the profile has threads (the folded root), not
/// the prefix tree's nodes (every caller of a stack is a node too).
pub fn distinct_stacks(p: &Profile) -> usize {
    match (&p.samples.thread, &p.counts) {
        (Some(threads), None) => {
            let mut seen: rustc_hash::FxHashSet<(u32, &str)> = Default::default();
            for (i, &node) in p.samples.node.iter().enumerate() {
                if p.samples.weight_of(i) > 0 {
                    let comm = threads
                        .get(i)
                        .and_then(|&t| p.threads.get(t as usize))
                        .map_or("", |t| t.comm.as_str());
                    seen.insert((node, comm));
                }
            }
            seen.len()
        }
        _ => p.self_weights().iter().filter(|&&w| w > 0).count(),
    }
}

/// The terminal summary of `keisoku flame` without `-o`: a header line
/// (samples, duration, functions, stacks), the share matching `search`,
/// then the `top` functions by self and by total weight.
pub fn render_text(p: &Profile, search: Option<&regex::Regex>, top: usize) -> String {
    use std::fmt::Write;
    let total = p.total_weight().max(1) as f64;
    let funcs = functions(p);
    let mut o = String::new();
    // Wall-clock duration only means something for sampled profiles, not
    // for counted ones (allocations, events).
    let dur = p
        .duration_ns()
        .filter(|_| p.counts.is_none())
        .map(|ns| format!(", {:.1} s", ns as f64 / 1e9))
        .unwrap_or_default();
    // Writing to a String cannot fail.
    let _ = writeln!(
        o,
        "{}: {} {}{dur}, {} functions, {} distinct stacks",
        keisoku_common::terminal_safe(&p.title),
        p.total_weight(),
        p.unit.name(),
        p.frames.len(),
        distinct_stacks(p)
    );
    if let Some(re) = search {
        let m = matched_weight(p, re);
        let _ = writeln!(
            o,
            "search {:?}: {:.2}% of all ({m} {})",
            re.as_str(),
            m as f64 * 100.0 / total,
            p.unit.name()
        );
    }
    // Two tables of one shape: by self weight, then by total weight.
    let table = |o: &mut String, by: &str, rows: &[FunctionWeight], first_self: bool| {
        let (a, b) = if first_self {
            ("self%", "total%")
        } else {
            ("total%", "self%")
        };
        let _ = writeln!(o, "\nTop functions by {by}:");
        let _ = writeln!(o, "{a:>8} {b:>8}  function");
        for f in rows.iter().take(top) {
            let (s, t) = (f.self_weight as f64, f.total_weight as f64);
            let (x, y) = if first_self { (s, t) } else { (t, s) };
            let _ = writeln!(
                o,
                "{:>7.2}% {:>7.2}%  {}",
                x * 100.0 / total,
                y * 100.0 / total,
                keisoku_common::terminal_safe(&f.name)
            );
        }
    };
    table(&mut o, "self", &funcs, true);
    let mut by_total = funcs;
    by_total.sort_by(|a, b| {
        b.total_weight
            .cmp(&a.total_weight)
            .then_with(|| a.name.cmp(&b.name))
    });
    table(&mut o, "total", &by_total, false);
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_text_lists_self_then_total() {
        let text = "main;work 3\nmain;idle 1\n";
        let p = crate::folded::parse(&mut text.as_bytes(), "t").expect("folded");
        let re = regex::Regex::new("work").expect("regex");
        let s = render_text(&p, Some(&re), 2);
        let lines: Vec<&str> = s.lines().collect();
        assert!(lines[0].starts_with("t: 4 "), "{s}");
        assert!(
            // Two folded lines, not the prefix tree's three nodes.
            lines[0].ends_with(", 3 functions, 2 distinct stacks"),
            "{s}"
        );
        assert!(
            lines[1].starts_with("search \"work\": 75.00% of all (3 "),
            "{s}"
        );
        assert_eq!(lines[3], "Top functions by self:");
        assert_eq!(lines[4], "   self%   total%  function");
        assert_eq!(lines[5], "  75.00%   75.00%  work");
        assert_eq!(lines[6], "  25.00%   25.00%  idle");
        assert_eq!(lines[8], "Top functions by total:");
        assert_eq!(lines[10], " 100.00%    0.00%  main");
        assert_eq!(lines.len(), 12);
    }
}
