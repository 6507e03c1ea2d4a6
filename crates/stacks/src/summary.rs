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
