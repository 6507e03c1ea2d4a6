//! What `keisoku flame`, `scope`, `diff` and `collapse` do with a parsed
//! profile, shared by the profile targets: a parser's output must be
//! usable by every consumer, whatever the input was.

#![allow(dead_code)] // each target uses part of it

use keisoku_stacks::{collapse, diff, json, scope, summary, Profile};

/// Runs every consumer over `p`; nothing may panic.
pub fn consume(p: &Profile) {
    let total = p.total_weight();
    let selfs = p.self_weights();
    assert_eq!(selfs.len(), p.node_count());
    let folded = collapse::fold_profile(p, true);
    // Weights saturate, so folding can only lose weight at u64::MAX.
    let folded_total = folded.iter().fold(0u64, |a, s| a.saturating_add(s.1));
    assert!(folded_total == total || total == u64::MAX || folded_total == u64::MAX);
    let _ = summary::functions(p);
    let _ = json::profile_json(p, json::JsonOptions::default());
    let _ = json::profile_json(p, json::JsonOptions { counts_form: true });
    let _ = scope::heat_map(p, 49, true);
    let _ = scope::heat_map(p, 49, false);
    // One diff (normalized: the scaling arithmetic is the risky part);
    // the consumers above already cover the plain sums.
    let d = diff::diff(p.clone(), p.clone(), true);
    let _ = json::diff_json(&d);
    let _ = diff::diff_folded(&d);
}
