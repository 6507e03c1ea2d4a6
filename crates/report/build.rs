//! Bundles the TypeScript UI in `web/` with esbuild and generates
//! `assets.rs`, a table of every bundled file, so HTML outputs can inline
//! them and stay self-contained. Needs Node.js; installs `web/node_modules`
//! from the lock file the first time.

use std::env;
use std::fmt::Write as _;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

fn main() {
    let manifest =
        PathBuf::from(env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR"));
    let web = manifest
        .join("../../web")
        .canonicalize()
        .expect("web/ exists beside crates/");
    let out = PathBuf::from(env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("web");

    for p in [
        "src",
        "build.mjs",
        "package.json",
        "package-lock.json",
        "tsconfig.json",
    ] {
        println!("cargo:rerun-if-changed={}", web.join(p).display());
    }
    if !web.join("node_modules/esbuild").exists() {
        run(
            Command::new("npm")
                .args(["ci", "--no-audit", "--no-fund"])
                .current_dir(&web),
            "npm ci in web/",
        );
    }
    let _ = fs::remove_dir_all(&out);
    run(
        Command::new("node")
            .arg("build.mjs")
            .arg("--outdir")
            .arg(&out)
            .current_dir(&web),
        "node web/build.mjs",
    );

    let mut names: Vec<String> = fs::read_dir(&out)
        .expect("bundle directory")
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    let mut table = String::from("/// Every bundled UI file: (file name, contents).\npub static ASSETS: &[(&str, &str)] = &[\n");
    for n in &names {
        let _ = writeln!(
            table,
            "    ({n:?}, include_str!({:?})),",
            out.join(n).display().to_string()
        );
    }
    table.push_str("];\n");
    fs::write(
        Path::new(&env::var("OUT_DIR").unwrap()).join("assets.rs"),
        table,
    )
    .expect("write assets.rs");
}

fn run(cmd: &mut Command, what: &str) {
    match cmd.status() {
        Ok(s) if s.success() => {}
        Ok(s) => panic!("{what} failed ({s}); is Node.js >= 18 installed? run scripts/setup.sh"),
        Err(e) => {
            panic!("{what} could not start: {e}; is Node.js >= 18 installed? run scripts/setup.sh")
        }
    }
}
