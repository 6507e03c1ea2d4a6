//! `keisoku rm`: not built yet; its issue replaces this module.

/// Flags of `keisoku rm`.
#[derive(clap::Args, Debug)]
pub struct Args {}

pub fn run(_args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("`keisoku rm` is not available in this build yet")
}
