//! Typed errors of the run store.

use std::path::PathBuf;

/// Everything that can go wrong while reading or writing the run store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store file could not be created or opened.
    #[error("cannot open run store {path}: {source}")]
    Open {
        /// The store file.
        path: PathBuf,
        /// What SQLite or the file system said.
        #[source]
        source: rusqlite::Error,
    },
    /// The directory that should hold the store could not be created.
    #[error("cannot create directory {path}: {source}")]
    CreateDir {
        /// The directory.
        path: PathBuf,
        /// What the file system said.
        #[source]
        source: std::io::Error,
    },
    /// A reader asked for a store that does not exist yet.
    #[error("no run store at {0} (record a run first with `keisoku run` or `keisoku record`, or pass --store PATH)")]
    Missing(PathBuf),
    /// The store was written by a newer keisoku.
    #[error("run store schema version {found} is newer than this keisoku understands ({supported}); upgrade keisoku")]
    TooNew {
        /// Version found in the file.
        found: i64,
        /// Highest version this build knows.
        supported: i64,
    },
    /// A store that cannot be written holds an older schema, which reading
    /// it would first have to migrate.
    #[error("run store {path} is read-only and has schema version {found}; this keisoku needs {supported}: open it once where it is writable to upgrade it")]
    ReadOnlyOld {
        /// The store file.
        path: PathBuf,
        /// Version found in the file.
        found: i64,
        /// The version this build writes.
        supported: i64,
    },
    /// No run matches what the user typed.
    #[error("no run matches {spec:?}; list stored runs with `keisoku runs`")]
    UnknownRun {
        /// What the user typed.
        spec: String,
    },
    /// Several runs match a prefix or name.
    #[error("{spec:?} matches several runs ({candidates}); give more of the id")]
    Ambiguous {
        /// What the user typed.
        spec: String,
        /// Comma-separated ids that matched.
        candidates: String,
    },
    /// A stored blob could not be decoded (a damaged or foreign file).
    #[error("run store data is damaged: {0}")]
    Corrupt(String),
    /// An HDR histogram could not be (de)serialized.
    #[error("histogram encoding failed: {0}")]
    Histogram(String),
    /// A JSON column could not be (de)serialized.
    #[error("JSON in the run store is invalid: {0}")]
    Json(#[from] serde_json::Error),
    /// Any other SQLite failure.
    #[error("run store: {0}")]
    Sql(#[from] rusqlite::Error),
}

impl StoreError {
    /// True when the error is about what the user asked for (unknown or
    /// ambiguous run, missing store) rather than a failure of the store.
    pub fn is_user_error(&self) -> bool {
        matches!(
            self,
            StoreError::UnknownRun { .. } | StoreError::Ambiguous { .. } | StoreError::Missing(_)
        )
    }
}

/// Result type of this crate.
pub type Result<T> = std::result::Result<T, StoreError>;
