//! `keisoku show`: not built yet; its issue replaces this module.

/// Flags of `keisoku show`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("`keisoku show` is not available in this build yet")
}
