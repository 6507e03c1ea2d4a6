//! `keisoku run`: not built yet; its issue replaces this module.

/// Flags of `keisoku run`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("`keisoku run` is not available in this build yet")
}
