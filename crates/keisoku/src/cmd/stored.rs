//! Stored runs as inputs: `keisoku flame RUN`, `scope RUN` and `diff A B`
//! accept a run (id, id prefix, name or `last`) wherever they accept a
//! profile file, so a recorded run is explained with the same commands as
//! the files users already have.

use crate::exit::bad_input;
use keisoku_stacks::Profile;
use std::path::Path;

/// The profile of the stored run `spec`, or `None` when `spec` names a file
/// (or stdin), which the caller then reads. A name that is neither a file
/// nor a run in the store (`KEISOKU_STORE` or `./.keisoku/runs.db`), or a
/// run without a profile, is bad input.
pub fn profile(spec: &str) -> anyhow::Result<Option<Profile>> {
    if spec == "-" || Path::new(spec).exists() {
        return Ok(None);
    }
    let path = keisoku_store::store_path(None);
    let no_such = || {
        bad_input(format!(
            "{spec}: no such file, nor a run in {} (see `keisoku runs`)",
            path.display()
        ))
    };
    if !path.exists() {
        return Err(no_such());
    }
    let store = keisoku_store::Store::open_existing(&path)
        .map_err(|e| anyhow::anyhow!("{}: {e}", path.display()))?;
    let run = store.resolve(spec).map_err(|_| no_such())?;
    let mut profile = store
        .profile(&run)
        .map_err(|e| anyhow::anyhow!("run {run} in {}: {e}", path.display()))?
        .ok_or_else(|| {
            bad_input(format!(
                "run {run} has no profile (was it recorded with --profile none, or did perf fail? see `keisoku show {run}`)"
            ))
        })?;
    // The store keeps the recorder's title; commands name the run.
    profile.title = format!("run {run}");
    Ok(Some(profile))
}
