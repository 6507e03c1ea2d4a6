//! `keisoku diff`: not built yet; its issue replaces this module.

/// Flags of `keisoku diff`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("`keisoku diff` is not available in this build yet")
}
