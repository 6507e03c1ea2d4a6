//! Differential profiles: per-function self and total weight before and
//! after, with the change and whether it can be told from sampling noise.

use crate::model::{Profile, NO_PARENT};
use rustc_hash::{FxHashMap, FxHashSet};

/// One function's change.
#[derive(Clone, Debug, PartialEq)]
pub struct DiffRow {
    /// Function name.
    pub frame: String,
    /// Module (from whichever side has it).
    pub module: String,
    /// Weight in the function itself, before.
    pub before_self: u64,
    /// Weight in the function itself, after.
    pub after_self: u64,
    /// Weight of stacks through the function, before.
    pub before_total: u64,
    /// Weight of stacks through the function, after.
    pub after_total: u64,
    /// Relative change of self weight in percent (of shares when normalised);
    /// `None` when the function is new (infinite growth) or absent on both sides.
    pub delta_self_pct: Option<f64>,
    /// Relative change of total weight in percent, as above.
    pub delta_total_pct: Option<f64>,
    /// Whether the change is within sampling noise (|a-b| < 2·sqrt(a+b),
    /// Poisson counts, after scaling in normalised mode).
    pub noisy: bool,
    /// Share of all samples through the function, before, in percent.
    pub before_share_pct: f64,
    /// Share of all samples through the function, after, in percent.
    pub after_share_pct: f64,
}

/// Share changes smaller than this (in percentage points) are rounding
/// dust of the division, not a change.
const SHARE_DUST: f64 = 1e-9;

impl DiffRow {
    /// Change of the function's share of all samples, in percentage points:
    /// the ranking key. A relative change ranks a 1 -> 3 sample function
    /// above `[libz.so]` going from 63% to 92%; a share change does not.
    pub fn delta_share_pp(&self) -> f64 {
        self.after_share_pct - self.before_share_pct
    }

    /// Whether the function's share grew (a regression); a function that
    /// only kept its share is neither a regression nor an improvement.
    pub fn grew(&self) -> bool {
        self.delta_share_pp() > SHARE_DUST
    }

    /// Whether the function's share fell (an improvement).
    pub fn shrank(&self) -> bool {
        self.delta_share_pp() < -SHARE_DUST
    }
}

/// Orders rows as every table shows them: rows that can be told from noise
/// first, then by the absolute change of share (percentage points), largest
/// first; ties by name so the order is stable.
pub fn rank_rows(rows: &mut [DiffRow]) {
    rows.sort_by(|x, y| {
        x.noisy
            .cmp(&y.noisy)
            .then_with(|| {
                y.delta_share_pp()
                    .abs()
                    .total_cmp(&x.delta_share_pp().abs())
            })
            .then_with(|| x.frame.cmp(&y.frame))
    });
}

/// Two profiles and their per-function comparison.
pub struct Diff {
    /// Before.
    pub before: Profile,
    /// After.
    pub after: Profile,
    /// Compare shares of each total instead of absolute weights.
    pub normalized: bool,
    /// Rows in [`rank_rows`] order: beyond noise first, then by the
    /// absolute change of share in percentage points.
    pub table: Vec<DiffRow>,
}

/// Self and total weight per function name (recursion counted once).
pub fn per_function(p: &Profile) -> FxHashMap<String, (u64, u64, String)> {
    let self_w = p.self_weights();
    let mut out: FxHashMap<String, (u64, u64, String)> = FxHashMap::default();
    let mut seen: FxHashSet<u32> = FxHashSet::default();
    for (node, &w) in self_w.iter().enumerate() {
        if w == 0 {
            continue;
        }
        let leaf = &p.frames[p.node_frame[node] as usize];
        let e = out
            .entry(leaf.name.clone())
            .or_insert((0, 0, leaf.module.clone()));
        // Weights are input numbers: saturate rather than overflow.
        e.0 = e.0.saturating_add(w);
        seen.clear();
        let mut n = node as u32;
        while n != NO_PARENT {
            let f = p.node_frame[n as usize];
            // Distinct frame ids may share a name (different modules).
            if seen.insert(f) {
                let fr = &p.frames[f as usize];
                let e = out
                    .entry(fr.name.clone())
                    .or_insert((0, 0, fr.module.clone()));
                e.1 = e.1.saturating_add(w);
            }
            n = p.parent[n as usize];
        }
    }
    // A name reached through two frame ids in one stack was added twice;
    // recount those exactly by names (rare: same function, two modules).
    let dup_names = {
        let mut names: FxHashMap<&str, u32> = FxHashMap::default();
        for f in &p.frames {
            *names.entry(f.name.as_str()).or_insert(0) += 1;
        }
        names
            .into_iter()
            .filter(|&(_, c)| c > 1)
            .map(|(n, _)| n.to_owned())
            .collect::<FxHashSet<_>>()
    };
    if !dup_names.is_empty() {
        for name in &dup_names {
            if let Some(e) = out.get_mut(name) {
                e.1 = 0;
            }
        }
        let mut names_seen: FxHashSet<&str> = FxHashSet::default();
        for (node, &w) in self_w.iter().enumerate() {
            if w == 0 {
                continue;
            }
            names_seen.clear();
            let mut n = node as u32;
            while n != NO_PARENT {
                let name = p.frames[p.node_frame[n as usize] as usize].name.as_str();
                if dup_names.contains(name) && names_seen.insert(name) {
                    if let Some(e) = out.get_mut(name) {
                        e.1 = e.1.saturating_add(w);
                    }
                }
                n = p.parent[n as usize];
            }
        }
    }
    out
}

fn rel_change(before: f64, after: f64) -> Option<f64> {
    if before > 0.0 {
        Some((after / before - 1.0) * 100.0)
    } else if after > 0.0 {
        None
    } else {
        Some(0.0)
    }
}

/// Compares two profiles.
pub fn diff(before: Profile, after: Profile, normalized: bool) -> Diff {
    let b = per_function(&before);
    let a = per_function(&after);
    let tb = before.total_weight().max(1) as f64;
    let ta = after.total_weight().max(1) as f64;
    // In normalised mode "after" is scaled to "before"'s total.
    let scale = if normalized { tb / ta } else { 1.0 };
    let mut names: Vec<&String> = b.keys().chain(a.keys()).collect();
    names.sort();
    names.dedup();
    let mut table: Vec<DiffRow> = names
        .into_iter()
        .map(|name| {
            let (bs, bt, bm) = b.get(name).cloned().unwrap_or((0, 0, String::new()));
            let (as_, at, am) = a.get(name).cloned().unwrap_or((0, 0, String::new()));
            let at_s = at as f64 * scale;
            let noisy = (at_s - bt as f64).abs() < 2.0 * (at_s + bt as f64).sqrt();
            DiffRow {
                frame: name.clone(),
                module: if am.is_empty() { bm } else { am },
                before_self: bs,
                after_self: as_,
                before_total: bt,
                after_total: at,
                delta_self_pct: rel_change(bs as f64, as_ as f64 * scale),
                delta_total_pct: rel_change(bt as f64, at_s),
                noisy,
                before_share_pct: 100.0 * bt as f64 / tb,
                after_share_pct: 100.0 * at as f64 / ta,
            }
        })
        .filter(|r| r.before_total != r.after_total || r.before_self != r.after_self || normalized)
        .collect();
    rank_rows(&mut table);
    Diff {
        before,
        after,
        normalized,
        table,
    }
}

/// A `--fail-if` gate: functions matching `pattern` must not grow by more
/// than `max_growth_pct` percent (of total weight, or of share when normalised).
#[derive(Clone, Debug)]
pub struct Gate {
    /// Which functions the gate watches.
    pub pattern: regex::Regex,
    /// Allowed growth in percent.
    pub max_growth_pct: f64,
}

impl Gate {
    /// Parses `REGEX>+5%` (also `REGEX>5%`, `REGEX>+5`, `REGEX>=5%`): a
    /// clause of keisoku's one gate grammar ([`keisoku_common::gate`]),
    /// split at its last operator since a regex may hold `<` or `>`.
    pub fn parse(spec: &str) -> Result<Gate, String> {
        use keisoku_common::{gate, Quantity};
        let usage = || format!("--fail-if {spec:?}: expected REGEX>+N% (e.g. 'malloc>+5%')");
        let c = gate::clause_last_op(spec).map_err(|_| usage())?;
        if c.op.is_upper_bound() {
            return Err(usage());
        }
        let max_growth_pct = match Quantity::parse(c.value) {
            Some(Quantity::Percent(v) | Quantity::Number(v)) if v >= 0.0 => v,
            _ => {
                return Err(format!(
                    "--fail-if {spec:?}: expected a growth like +5% after '>', got {:?}",
                    c.value
                ))
            }
        };
        let pattern = regex::Regex::new(c.subject)
            .map_err(|e| format!("--fail-if {spec:?}: bad regex: {e}"))?;
        Ok(Gate {
            pattern,
            max_growth_pct,
        })
    }

    /// Rows that break the gate (noisy rows never do: noise must not fail CI).
    pub fn violations<'d>(&self, d: &'d Diff) -> Vec<&'d DiffRow> {
        d.table
            .iter()
            .filter(|r| self.pattern.is_match(&r.frame) && !r.noisy)
            .filter(|r| r.delta_total_pct.is_none_or(|p| p > self.max_growth_pct))
            .filter(|r| r.after_total > 0)
            .collect()
    }
}

/// difffolded.pl output: `stack before after` for every stack on either
/// side (vanished stacks keep their before count; new ones have before 0).
/// Normalised mode scales before counts to after's total, as `difffolded -n`.
pub fn diff_folded(d: &Diff) -> Vec<(String, u64, u64)> {
    let b = crate::collapse::fold_profile(&d.before, false);
    let a = crate::collapse::fold_profile(&d.after, false);
    let tb = d.before.total_weight().max(1) as f64;
    let ta = d.after.total_weight().max(1) as f64;
    let mut map: std::collections::BTreeMap<String, (u64, u64)> = std::collections::BTreeMap::new();
    for (s, w) in b {
        let w = if d.normalized {
            (w as f64 * ta / tb).round() as u64
        } else {
            w
        };
        let e = map.entry(s).or_default();
        e.0 = e.0.saturating_add(w);
    }
    for (s, w) in a {
        let e = map.entry(s).or_default();
        e.1 = e.1.saturating_add(w);
    }
    map.into_iter().map(|(s, (x, y))| (s, x, y)).collect()
}

/// [`diff_folded`] as text, one `stack before after` line each: the input
/// of difffolded-style SVG drawing and the `.folded` output of `keisoku diff`.
pub fn diff_folded_text(d: &Diff) -> String {
    let mut text = String::new();
    for (s, b, a) in diff_folded(d) {
        text.push_str(&format!("{s} {b} {a}\n"));
    }
    text
}

/// A change in percent as the table shows it; `new` when it grew from nothing.
fn pct(p: Option<f64>) -> String {
    p.map_or("new".into(), |p| format!("{p:+.1}%"))
}

impl Gate {
    /// One message per row breaking the gate, e.g. `gate failed: f grew
    /// +12.0% (total 10 -> 20), limit +5% for /f/` (the caller adds its prefix).
    pub fn failure_messages(&self, d: &Diff) -> Vec<String> {
        self.violations(d)
            .into_iter()
            .map(|r| {
                format!(
                    "gate failed: {} grew {} (total {} -> {}), limit +{}% for /{}/",
                    r.frame,
                    pct(r.delta_total_pct),
                    r.before_total,
                    r.after_total,
                    self.max_growth_pct,
                    self.pattern.as_str()
                )
            })
            .collect()
    }
}

/// A share change in percentage points, e.g. `+29.3pp`.
fn pp(v: f64) -> String {
    format!("{v:+.1}pp")
}

/// The terminal table of `keisoku diff` without `-o`: the totals, then the
/// `top` largest regressions and improvements ranked as [`rank_rows`] does
/// (share change in percentage points, rows within noise last and marked).
pub fn render_table(d: &Diff, top: usize) -> String {
    use std::fmt::Write;
    let mut o = String::new();
    let (tb, ta) = (d.before.total_weight(), d.after.total_weight());
    // Writing to a String cannot fail.
    let _ = writeln!(
        o,
        "before: {tb} {}, after: {ta} {} ({} comparison)",
        d.before.unit.name(),
        d.after.unit.name(),
        if d.normalized {
            "normalised: shares of each total"
        } else {
            "absolute"
        }
    );
    for (title, rows) in [
        (
            "Largest regressions (share of all samples):",
            d.table
                .iter()
                .filter(|r| r.grew())
                .take(top)
                .collect::<Vec<_>>(),
        ),
        (
            "Largest improvements (share of all samples):",
            d.table.iter().filter(|r| r.shrank()).take(top).collect(),
        ),
    ] {
        let _ = writeln!(o, "\n{title}");
        let _ = writeln!(
            o,
            "{:>9} {:>9} {:>17} {:>9} {:>8} {:>8} {:>6}  function",
            "before", "after", "share", "change", "total", "self", ""
        );
        for r in rows {
            let _ = writeln!(
                o,
                "{:>9} {:>9} {:>17} {:>9} {:>8} {:>8} {:>6}  {}",
                r.before_total,
                r.after_total,
                format!("{:.1}% -> {:.1}%", r.before_share_pct, r.after_share_pct),
                pp(r.delta_share_pp()),
                pct(r.delta_total_pct),
                pct(r.delta_self_pct),
                if r.noisy { "noise?" } else { "" },
                r.frame
            );
        }
    }
    if d.table.iter().take(top * 2).any(|r| r.noisy) {
        let _ = writeln!(
            o,
            "\nnoise?: too few samples on either side to tell the change from sampling noise (listed last)."
        );
    }
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_at_u64_max_saturate() {
        // Crash input for the folded fuzz target: two stacks ending in `b`
        // whose weights add past u64::MAX in the per-function sums.
        let text = "a;b 18446744073709551615\nc;b 1\n";
        let p = crate::folded::parse(&mut text.as_bytes(), "t").unwrap();
        let f = crate::summary::functions(&p);
        assert_eq!((f[0].name.as_str(), f[0].self_weight), ("b", u64::MAX));
        let d = diff(p.clone(), p, false);
        let rows = diff_folded(&d);
        assert!(rows.iter().any(|r| r.1 == u64::MAX && r.2 == u64::MAX));
    }

    #[test]
    fn renders_table_folded_text_and_gate_messages() {
        let before = crate::folded::parse(&mut "main;a 100\nmain;b 100\n".as_bytes(), "b").unwrap();
        let after = crate::folded::parse(&mut "main;a 300\nmain;c 10\n".as_bytes(), "a").unwrap();
        let d = diff(before, after, false);
        let t = render_table(&d, 5);
        let lines: Vec<&str> = t.lines().collect();
        assert!(lines[0].starts_with("before: 200 "), "{t}");
        assert!(lines[0].ends_with(" (absolute comparison)"), "{t}");
        assert_eq!(lines[2], "Largest regressions (share of all samples):");
        assert_eq!(
            lines[3],
            "   before     after             share    change    total     self         function"
        );
        assert_eq!(
            lines[4], "      100       300    50.0% -> 96.8%   +46.8pp  +200.0%  +200.0%         a",
            "{t}"
        );
        assert!(
            t.contains(
                "        0        10      0.0% -> 3.2%    +3.2pp      new      new         c\n"
            ),
            "{t}"
        );
        assert!(
            t.contains("Largest improvements (share of all samples):"),
            "{t}"
        );
        assert!(
            t.contains(
                "      100         0     50.0% -> 0.0%   -50.0pp  -100.0%  -100.0%         b\n"
            ),
            "{t}"
        );
        assert_eq!(
            diff_folded_text(&d),
            "main;a 100 300\nmain;b 100 0\nmain;c 0 10\n"
        );
        let g = Gate::parse("^a$>+5%").unwrap();
        assert_eq!(
            g.failure_messages(&d),
            vec!["gate failed: a grew +200.0% (total 100 -> 300), limit +5% for /^a$/".to_string()]
        );
    }

    /// Issue 13: `_int_malloc` 56 -> 246 samples must rank above functions
    /// that went from nothing to a handful of samples, whose relative
    /// change is infinite but whose share barely moved.
    #[test]
    fn share_change_ranks_above_new_handfuls_and_noise_goes_last() {
        let mut before = String::from("main;work 900\nmain;_int_malloc 56\nmain;old 3\n");
        let mut after = String::from("main;work 700\nmain;_int_malloc 246\n");
        for i in 0..30 {
            after.push_str(&format!("main;fresh{i} 6\n"));
            before.push_str(&format!("main;tiny{i} 1\n"));
            after.push_str(&format!("main;tiny{i} 3\n"));
        }
        let p = |t: &str| crate::folded::parse(&mut t.as_bytes(), "t").unwrap();
        for normalized in [false, true] {
            let d = diff(p(&before), p(&after), normalized);
            let first: Vec<&str> = d.table.iter().take(2).map(|r| r.frame.as_str()).collect();
            assert_eq!(first, ["work", "_int_malloc"], "{normalized}");
            let t = render_table(&d, 5);
            let reg = t
                .lines()
                .skip_while(|l| !l.starts_with("Largest regressions"))
                .nth(2)
                .unwrap();
            assert!(reg.ends_with("  _int_malloc"), "{t}");
            let noisy_from = d.table.iter().position(|r| r.noisy).unwrap();
            assert!(
                d.table[noisy_from..].iter().all(|r| r.noisy),
                "noisy rows last"
            );
            assert!(d.table[..noisy_from].iter().any(|r| r.frame == "fresh0"));
            assert!(d.table[noisy_from..].iter().any(|r| r.frame == "tiny0"));
        }
    }
}
