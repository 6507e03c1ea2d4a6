//! The run store as every command sees it: the `--store` flag (with
//! `KEISOKU_STORE`), opening it, one error text, and the one resolver of
//! `RUN` arguments (an id, a unique id prefix, a name or `last`) used by
//! every command that takes a run, including those that take a run in
//! place of a file (`flame`, `scope`, `diff`, `logs`, `report`).

use crate::exit::bad_input;
use keisoku_store::{Store, StoreError};
use std::path::{Path, PathBuf};

/// The `--store` flag every command that reads or writes runs takes.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct StoreArg {
    /// The run store [default: $KEISOKU_STORE, else ./.keisoku/runs.db].
    #[arg(long, value_name = "PATH")]
    pub store: Option<PathBuf>,
}

impl StoreArg {
    /// The store file this flag names (the flag, else `KEISOKU_STORE`,
    /// else `./.keisoku/runs.db`).
    pub fn path(&self) -> PathBuf {
        keisoku_store::store_path(self.store.as_deref())
    }

    /// Opens the existing store for reading.
    pub fn open(&self) -> anyhow::Result<Store> {
        open_existing(&self.path())
    }

    /// Opens the store and resolves `spec` to a run id.
    pub fn resolve(&self, spec: &str) -> anyhow::Result<(Store, String)> {
        let store = self.open()?;
        let id = resolve(&store, spec)?;
        Ok((store, id))
    }

    /// The store and run `spec` names, or `None` when there is no store
    /// there or no such run (the caller then takes `spec` for a file name).
    /// A prefix of several runs is an error that lists them.
    pub fn find(&self, spec: &str) -> anyhow::Result<Option<(Store, String)>> {
        let path = self.path();
        if !path.exists() {
            return Ok(None);
        }
        let store = open_existing(&path)?;
        match store.resolve(spec) {
            Ok(id) => Ok(Some((store, id))),
            Err(e @ StoreError::Ambiguous { .. }) => Err(store_error(e)),
            Err(e) if e.is_user_error() => Ok(None),
            Err(e) => Err(anyhow::Error::new(e)),
        }
    }

    /// For commands that take a file or a run: `Ok(None)` when `spec` is a
    /// file (or `-`); else the store and the run id. A name that is neither
    /// is bad input with one text: "SPEC: no such file, nor a run in STORE".
    pub fn file_or_run(&self, spec: &str) -> anyhow::Result<Option<(Store, String)>> {
        if spec == "-" || Path::new(spec).exists() {
            return Ok(None);
        }
        match self.find(spec)? {
            Some(found) => Ok(Some(found)),
            None => Err(bad_input(format!(
                "{spec}: no such file, nor a run in {} (list stored runs with `keisoku runs`)",
                self.path().display()
            ))),
        }
    }
}

/// Maps store errors the user caused (unknown run, no store, ambiguous
/// prefix) to exit 2 and the rest to exit 1. The store's own texts already
/// say how to list runs; nothing is added.
pub fn store_error(e: StoreError) -> anyhow::Error {
    if e.is_user_error() {
        bad_input(e)
    } else {
        anyhow::Error::new(e)
    }
}

/// Opens an existing store for reading.
pub fn open_existing(path: &Path) -> anyhow::Result<Store> {
    Store::open_existing(path).map_err(store_error)
}

/// Maps a failure to open a store for writing: a path the user gave that
/// cannot hold a store is their input (exit 2).
pub fn open_error(e: StoreError) -> anyhow::Error {
    match e {
        StoreError::CreateDir { .. } | StoreError::Open { .. } | StoreError::TooNew { .. } => {
            bad_input(e)
        }
        other => anyhow::Error::new(other),
    }
}

/// Resolves `RUN` (id, unique id prefix, name or `last`) to an id.
pub fn resolve(store: &Store, spec: &str) -> anyhow::Result<String> {
    store.resolve(spec).map_err(store_error)
}

impl StoreArg {
    /// The Run JSON of `spec`: a file when one exists at that path (as
    /// `keisoku export RUN --format json` writes), else a stored run.
    /// Unknown runs and unreadable files are input errors.
    pub fn run_json(&self, spec: &str) -> anyhow::Result<String> {
        use anyhow::Context;
        let path = Path::new(spec);
        if path.is_dir() {
            return Err(bad_input(format!(
                "{}: a directory, not a Run JSON file nor a run",
                path.display()
            )));
        }
        if path.is_file() {
            return keisoku_common::limits::read_document(path, &keisoku_common::Limits::current())
                .map_err(|e| bad_input(format!("cannot read {}: {e}", path.display())));
        }
        if spec.ends_with(".json") {
            return Err(bad_input(format!("no such file: {spec}")));
        }
        let (store, id) = self.resolve(spec)?;
        let run = store
            .load(&id)
            .with_context(|| format!("cannot read run {id} from {}", self.path().display()))?;
        serde_json::to_string(&run).with_context(|| format!("cannot encode run {id}"))
    }
}
