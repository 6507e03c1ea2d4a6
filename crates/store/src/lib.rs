//! The run model and its SQLite persistence.
