//! Writing the HTML pages (`report`, `compare`, `flame`, `scope`, `diff`):
//! errors from building a page, and the one "wrote FILE (SIZE)" line.

use crate::exit::bad_input;
use crate::shared::output;
use keisoku_report::ReportError;
use std::path::Path;

/// Malformed Run JSON is the user's input; a missing bundle is ours.
pub fn page_error(spec: &str, e: ReportError) -> anyhow::Error {
    match e {
        ReportError::Json(_) | ReportError::Invalid(_) => bad_input(format!("{spec}: {e}")),
        other => anyhow::Error::new(other),
    }
}

/// Writes a page to `path` (`-`: standard output) and, for a file, says
/// so on standard error.
pub fn write_page(path: &Path, html: &[u8]) -> anyhow::Result<()> {
    output::write_to(path, html)?;
    if !output::is_stdout(path) {
        eprintln!(
            "keisoku: wrote {} ({})",
            path.display(),
            output::size(html.len())
        );
    }
    Ok(())
}
