//! Exit statuses shared by every subcommand.
//!
//! 0 ok, 1 runtime failure, 2 bad usage or bad input, 3 an SLO or
//! regression gate failed. Subcommands return `Ok(code)` for gates and wrap
//! input problems in [`BadInput`] so `main` can map them to 2.

/// Everything went as asked.
pub const OK: u8 = 0;
/// The work could not be done (unreachable target, I/O failure...).
pub const FAILURE: u8 = 1;
/// The user's flags or input files are wrong.
pub const BAD_INPUT: u8 = 2;
/// An SLO or regression gate failed.
pub const GATE_FAILED: u8 = 3;

/// Marks an error as the user's input being wrong (exit status 2).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct BadInput(pub String);

/// Wraps any displayable problem as [`BadInput`].
#[allow(dead_code)]
pub fn bad_input(msg: impl std::fmt::Display) -> anyhow::Error {
    anyhow::Error::new(BadInput(msg.to_string()))
}

/// Marks a typed error as the user's input being wrong (exit status 2),
/// keeping its causes: `{:#}` still prints why a file could not be read.
#[derive(Debug)]
pub struct InputError(pub Box<dyn std::error::Error + Send + Sync>);

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.fmt(f)
    }
}

impl std::error::Error for InputError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        self.0.source()
    }
}

/// Wraps a typed error as [`InputError`].
pub fn input_error(e: impl std::error::Error + Send + Sync + 'static) -> anyhow::Error {
    anyhow::Error::new(InputError(Box::new(e)))
}

/// The exit status for an error that reached `main`.
pub fn code_for(err: &anyhow::Error) -> u8 {
    if err
        .chain()
        .any(|e| e.is::<BadInput>() || e.is::<InputError>())
    {
        BAD_INPUT
    } else {
        FAILURE
    }
}
