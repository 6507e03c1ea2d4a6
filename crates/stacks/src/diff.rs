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
    /// Share of all samples in the function itself, before, in percent.
    pub before_self_share_pct: f64,
    /// Share of all samples in the function itself, after, in percent.
    pub after_self_share_pct: f64,
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

    /// Change of the share of samples in the function itself, in
    /// percentage points: where a change lands when callers only pass it on.
    pub fn delta_self_share_pp(&self) -> f64 {
        self.after_self_share_pct - self.before_self_share_pct
    }

    /// The change that ranks and classifies the row: of the self share
    /// when it moved, else of the total share (a caller whose callees grew).
    pub fn ranking_change_pp(&self) -> f64 {
        let s = self.delta_self_share_pp();
        if s.abs() > SHARE_DUST {
            s
        } else {
            self.delta_share_pp()
        }
    }

    /// Whether the function's share grew (a regression); a function that
    /// only kept its share is neither a regression nor an improvement.
    pub fn grew(&self) -> bool {
        self.ranking_change_pp() > SHARE_DUST
    }

    /// Whether the function's share fell (an improvement).
    pub fn shrank(&self) -> bool {
        self.ranking_change_pp() < -SHARE_DUST
    }
}

/// Orders rows as every table shows them: rows that can be told from noise
/// first, then by the absolute change of the function's own (self) share
/// in percentage points, then of its total share, largest first; ties by
/// name so the order is stable. Self first because it is where time is
/// spent and it does not depend on how well callers were unwound: in JIT
/// profiles a caller such as `emit` may be cut from most of A's stacks and
/// present in B's, so its total share "grows" more than the planted change.
pub fn rank_rows(rows: &mut [DiffRow]) {
    rows.sort_by(|x, y| {
        x.noisy
            .cmp(&y.noisy)
            .then_with(|| {
                y.delta_self_share_pp()
                    .abs()
                    .total_cmp(&x.delta_self_share_pp().abs())
            })
            .then_with(|| {
                y.delta_share_pp()
                    .abs()
                    .total_cmp(&x.delta_share_pp().abs())
            })
            .then_with(|| x.frame.cmp(&y.frame))
    });
}

/// The function where the largest change landed: the row beyond noise
/// whose own (self) share moved most, since every caller on its path shows
/// the same change of total share. `None` when nothing moved beyond noise.
pub fn top_mover(d: &Diff) -> Option<&DiffRow> {
    d.table
        .iter()
        .filter(|r| !r.noisy && r.delta_self_share_pp().abs() > SHARE_DUST)
        .max_by(|x, y| {
            x.delta_self_share_pp()
                .abs()
                .total_cmp(&y.delta_self_share_pp().abs())
                .then_with(|| y.frame.cmp(&x.frame))
        })
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
    /// absolute change of self share, then of total share, in percentage
    /// points.
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
                before_self_share_pct: 100.0 * bs as f64 / tb,
                after_self_share_pct: 100.0 * as_ as f64 / ta,
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

/// Whether folded diff lines start with the process name, as
/// `flame -o x.folded` and stackcollapse-perf.pl write them: when both
/// sides know their processes (otherwise their stacks could not line up).
fn process_root(d: &Diff) -> bool {
    d.before.samples.thread.is_some()
        && d.after.samples.thread.is_some()
        && d.before.counts.is_none()
        && d.after.counts.is_none()
}

/// difffolded.pl output: `stack before after` for every stack on either
/// side (vanished stacks keep their before count; new ones have before 0).
/// Normalised mode scales before counts to after's total, as `difffolded -n`.
pub fn diff_folded(d: &Diff) -> Vec<(String, u64, u64)> {
    let root = process_root(d);
    let b = crate::collapse::fold_profile(&d.before, root);
    let a = crate::collapse::fold_profile(&d.after, root);
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

/// One frame of the differential SVG's merged tree.
struct SvgNode {
    name: String,
    children: std::collections::BTreeMap<String, usize>,
    /// Before, scaled to after's total in normalised mode (unrounded, so
    /// an unchanged frame shows no change).
    before: f64,
    after: u64,
    /// Layout width: after's weight, or before's for stacks that vanished.
    width: u64,
}

fn xml_escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            // Control characters are not allowed in XML 1.0.
            c if (c as u32) < 0x20 && c != '\t' => o.push(' '),
            c => o.push(c),
        }
    }
    o
}

/// The colour of a frame whose weight changed by `delta` when the largest
/// change anywhere is `max`: saturation scales with the largest change, not
/// a fixed 100%, so the frame that moved most is always fully red or blue
/// (inferno colours only each stack's leaf by its own line's change, and
/// the graph comes out almost white). The square root spreads small changes.
fn svg_diff_colour(delta: f64, max: f64) -> String {
    if delta == 0.0 || max <= 0.0 {
        return "rgb(228,228,224)".into();
    }
    let f = (delta.abs() / max).clamp(0.0, 1.0).sqrt();
    let s = 0.15 + 0.85 * f;
    let low = (245.0 - s * 190.0).round() as u8;
    if delta > 0.0 {
        format!("rgb(245,{low},{low})")
    } else {
        format!("rgb({low},{low},245)")
    }
}

/// A differential flame graph as a standalone SVG: frame widths from
/// after (vanished stacks at their before width, so they are still drawn),
/// colour from the change of each frame's total, red grew and blue shrank,
/// saturated by the largest change. Shares when normalised, else samples.
pub fn diff_svg(d: &Diff, title: &str) -> String {
    use std::fmt::Write;
    let mut nodes = vec![SvgNode {
        name: "all".into(),
        children: Default::default(),
        before: 0.0,
        after: 0,
        width: 0,
    }];
    let tb = d.before.total_weight().max(1) as f64;
    let ta = d.after.total_weight().max(1) as f64;
    let scale_before = if d.normalized { ta / tb } else { 1.0 };
    let mut lines: std::collections::BTreeMap<String, (f64, u64)> = Default::default();
    let root = process_root(d);
    for (s, w) in crate::collapse::fold_profile(&d.before, root) {
        lines.entry(s).or_default().0 += w as f64 * scale_before;
    }
    for (s, w) in crate::collapse::fold_profile(&d.after, root) {
        let e = lines.entry(s).or_default();
        e.1 = e.1.saturating_add(w);
    }
    for (stack, (b, a)) in lines {
        // Vanished stacks keep their (scaled) before width.
        let w = if a > 0 { a } else { b.round().max(1.0) as u64 };
        let mut cur = 0;
        for part in std::iter::once(None).chain(stack.split(';').map(Some)) {
            if let Some(name) = part {
                cur = match nodes[cur].children.get(name) {
                    Some(&c) => c,
                    None => {
                        nodes.push(SvgNode {
                            name: name.to_string(),
                            children: Default::default(),
                            before: 0.0,
                            after: 0,
                            width: 0,
                        });
                        let id = nodes.len() - 1;
                        nodes[cur].children.insert(name.to_string(), id);
                        id
                    }
                };
            }
            let n = &mut nodes[cur];
            n.before += b;
            n.after = n.after.saturating_add(a);
            n.width = n.width.saturating_add(w);
        }
    }
    let delta = |n: &SvgNode| {
        let x = n.after as f64 - n.before;
        // Scaling leaves rounding dust: it must not colour unchanged frames.
        let x = if x.abs() < 1e-6 * ta { 0.0 } else { x };
        if d.normalized {
            100.0 * x / ta
        } else {
            x
        }
    };
    let max = nodes
        .iter()
        .skip(1)
        .map(|n| delta(n).abs())
        .fold(0.0, f64::max);
    // Depth-first layout: (node, depth, x in weight units).
    let mut depth_max = 0usize;
    let mut placed: Vec<(usize, usize, u64)> = Vec::new();
    let mut stack = vec![(0usize, 0usize, 0u64)];
    while let Some((n, depth, x)) = stack.pop() {
        placed.push((n, depth, x));
        depth_max = depth_max.max(depth);
        let mut cx = x;
        for &c in nodes[n].children.values() {
            stack.push((c, depth + 1, cx));
            cx = cx.saturating_add(nodes[c].width);
        }
    }
    const WIDTH: f64 = 1200.0;
    const PAD: f64 = 10.0;
    const ROW: f64 = 16.0;
    const HEAD: f64 = 56.0;
    let height = HEAD + (depth_max + 1) as f64 * ROW + 2.0 * PAD;
    let scale = (WIDTH - 2.0 * PAD) / nodes[0].width.max(1) as f64;
    let mut o = String::new();
    let _ = write!(
        o,
        "<?xml version=\"1.0\" standalone=\"no\"?>\n<svg version=\"1.1\" width=\"{WIDTH}\" height=\"{height}\" viewBox=\"0 0 {WIDTH} {height}\" xmlns=\"http://www.w3.org/2000/svg\" font-family=\"Verdana, sans-serif\" font-size=\"12\">\n<rect width=\"100%\" height=\"100%\" fill=\"#fafafa\"/>\n"
    );
    let what = if d.normalized {
        "change of share of all samples, normalised"
    } else {
        "change in samples"
    };
    let _ = writeln!(
        o,
        "<text x=\"{}\" y=\"22\" text-anchor=\"middle\" font-size=\"17\">{}</text>\n<text x=\"{}\" y=\"42\" text-anchor=\"middle\" fill=\"#555\">red grew, blue shrank ({what}); the strongest colour is the largest change, {}</text>",
        WIDTH / 2.0,
        xml_escape(title),
        WIDTH / 2.0,
        if d.normalized {
            format!("{max:.1} pp")
        } else {
            format!("{max:.0} samples")
        }
    );
    for (n, depth, x) in placed {
        let node = &nodes[n];
        let w = node.width as f64 * scale;
        if w < 0.1 {
            continue;
        }
        let px = PAD + x as f64 * scale;
        let y = HEAD + (depth_max - depth) as f64 * ROW + PAD;
        let dv = delta(node);
        let change = if d.normalized {
            format!("{dv:+.2} pp")
        } else {
            format!("{dv:+.0}")
        };
        let _ = write!(
            o,
            "<g><title>{} (before {:.0}, after {}, {change})</title><rect x=\"{px:.2}\" y=\"{y:.1}\" width=\"{:.2}\" height=\"{:.1}\" fill=\"{}\" rx=\"2\"/>",
            xml_escape(&node.name),
            node.before,
            node.after,
            (w - 0.5).max(0.1),
            ROW - 1.0,
            svg_diff_colour(dv, max)
        );
        // Verdana at 12 px: about 7 px a character.
        let fits = ((w - 6.0) / 7.0).floor();
        if fits >= 3.0 {
            let fits = fits as usize;
            let label: String = if node.name.chars().count() > fits {
                let mut l: String = node.name.chars().take(fits.saturating_sub(2)).collect();
                l.push_str("..");
                l
            } else {
                node.name.clone()
            };
            let _ = write!(
                o,
                "<text x=\"{:.2}\" y=\"{:.1}\">{}</text>",
                px + 3.0,
                y + ROW - 4.5,
                xml_escape(&label)
            );
        }
        o.push_str("</g>\n");
    }
    o.push_str("</svg>\n");
    o
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
/// (change of self share, then of total share, in percentage points; rows
/// within noise last and marked).
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
            "{:>9} {:>9} {:>17} {:>9} {:>9} {:>8} {:>8} {:>6}  function",
            "before", "after", "share", "change", "self chg", "total", "self", ""
        );
        for r in rows {
            let _ = writeln!(
                o,
                "{:>9} {:>9} {:>17} {:>9} {:>9} {:>8} {:>8} {:>6}  {}",
                r.before_total,
                r.after_total,
                format!("{:.1}% -> {:.1}%", r.before_share_pct, r.after_share_pct),
                pp(r.delta_share_pp()),
                pp(r.delta_self_share_pp()),
                pct(r.delta_total_pct),
                pct(r.delta_self_pct),
                if r.noisy { "noise?" } else { "" },
                keisoku_common::terminal_safe(&r.frame)
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
    fn folded_and_svg_keep_the_process_root_as_flame_does() {
        let perf = |t: &str| {
            crate::perf::parse(&mut t.as_bytes(), "t", &Default::default())
                .unwrap()
                .0
        };
        let a = perf("busy 1/1 1.0: 1 cpu-clock:\n\t 1 f (/b)\n\t 2 main (/b)\n\n");
        let b = perf("busy 1/1 1.0: 1 cpu-clock:\n\t 1 g (/b)\n\t 2 main (/b)\n\n");
        assert_eq!(crate::collapse::folded_text(&a), "busy;main;f 1\n");
        let d = diff(a, b, false);
        assert_eq!(diff_folded_text(&d), "busy;main;f 1 0\nbusy;main;g 0 1\n");
        assert!(diff_svg(&d, "t").contains("<title>busy ("));
    }

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
            "   before     after             share    change  self chg    total     self         function"
        );
        assert_eq!(
            lines[4],
            "      100       300    50.0% -> 96.8%   +46.8pp   +46.8pp  +200.0%  +200.0%         a",
            "{t}"
        );
        assert!(
            t.contains(
                "        0        10      0.0% -> 3.2%    +3.2pp    +3.2pp      new      new         c\n"
            ),
            "{t}"
        );
        assert!(
            t.contains("Largest improvements (share of all samples):"),
            "{t}"
        );
        assert!(
            t.contains(
                "      100         0     50.0% -> 0.0%   -50.0pp   -50.0pp  -100.0%  -100.0%         b\n"
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

    #[test]
    fn top_mover_is_where_the_change_lands_not_its_callers() {
        let p = |t: &str| crate::folded::parse(&mut t.as_bytes(), "t").unwrap();
        let d = diff(
            p("main;serve;handler;work 500\nmain;serve;idle 500\n"),
            p("main;serve;handler;work 500\nmain;serve;handler;hot 400\nmain;serve;idle 100\n"),
            true,
        );
        // handler and hot gained the same share; hot is where it landed.
        let top = top_mover(&d).unwrap();
        assert_eq!(top.frame, "hot");
        assert!(
            (top.delta_share_pp() - 40.0).abs() < 1e-9,
            "{}",
            top.delta_share_pp()
        );
        let pos = |f: &str| d.table.iter().position(|r| r.frame == f).unwrap();
        assert!(
            pos("hot") < pos("handler"),
            "the same share change: self decides"
        );
        let same = diff(p("main;a 10\n"), p("main;a 20\n"), true);
        assert!(top_mover(&same).is_none());
    }

    /// Issue 13: the differential SVG was almost white. The frame with the
    /// largest change is drawn fully saturated, and a vanished stack is drawn.
    #[test]
    fn diff_svg_saturates_the_largest_change() {
        let p = |t: &str| crate::folded::parse(&mut t.as_bytes(), "t").unwrap();
        let d = diff(
            p("main;work 700\nmain;deflate 300\nmain;gone 20\n"),
            p("main;work 700\nmain;deflate 600\n"),
            true,
        );
        let svg = diff_svg(&d, "t <1>");
        assert!(svg.starts_with("<?xml"));
        assert!(svg.contains("t &lt;1&gt;"));
        let fill = |name: &str| {
            let at = svg.find(&format!("<title>{name} (")).unwrap();
            let f = &svg[at..];
            let s = f.find("fill=\"").unwrap() + 6;
            f[s..s + f[s..].find('"').unwrap()].to_string()
        };
        assert_eq!(
            fill("deflate"),
            "rgb(245,55,55)",
            "largest change: saturated red"
        );
        assert!(fill("work").starts_with("rgb("), "{svg}");
        assert!(fill("work").ends_with(",245)"), "work lost share: blue");
        assert!(svg.contains("<title>gone ("), "vanished stack drawn");
        assert_eq!(
            fill("all"),
            "rgb(228,228,224)",
            "the root's share never changes"
        );
    }
}
