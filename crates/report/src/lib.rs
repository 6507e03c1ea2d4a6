//! HTML outputs: flame graphs, heat maps, run reports, comparisons and the
//! serve command's pages. The browser code is TypeScript in `web/`, bundled
//! at build time and inlined so every page works offline from `file://`.

pub mod assets;
