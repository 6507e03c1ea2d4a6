//! HTML outputs: flame graphs, heat maps, run reports, comparisons and the
//! serve command's pages. The browser code is TypeScript in `web/`, bundled
//! at build time and inlined so every page works offline from `file://`.

#![deny(missing_docs)]

pub mod assets;
pub mod compare;
pub mod compare_page;
mod embed;
mod error;
pub mod profile_pages;
pub mod run_page;
pub mod serve;

pub use error::ReportError;
