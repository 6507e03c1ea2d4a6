//! What several commands share, in one place, so no command module imports
//! another: output handling, the run store and its `RUN` resolver, pages.

pub mod load;
pub mod output;
pub mod page;
pub mod profile;
pub mod recorder;
pub mod store;
