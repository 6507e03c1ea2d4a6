//! Helpers shared by the end-to-end tests (`mod common;` in each test file;
//! a directory, so cargo does not build it as a test of its own). Not every
//! test uses every helper.
#![allow(dead_code)]

use std::path::Path;
use std::process::Command;

/// The keisoku binary under test.
pub const BIN: &str = env!("CARGO_BIN_EXE_keisoku");

/// A port on 127.0.0.1 that was free a moment ago.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port on 127.0.0.1")
}

/// `keisoku export RUN --format FORMAT --store STORE`'s output; panics with
/// keisoku's stderr when it fails.
pub fn export(store: &Path, run: &str, format: &str) -> Vec<u8> {
    let out = Command::new(BIN)
        .args(["export", run, "--format", format, "--store"])
        .arg(store)
        .output()
        .expect("run keisoku export");
    assert!(
        out.status.success(),
        "keisoku export {run} --format {format}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    out.stdout
}

/// The stored run as the Run JSON (docs/run-json.md).
pub fn export_run(store: &Path, run: &str) -> keisoku_store::RunJson {
    serde_json::from_slice(&export(store, run, "json")).expect("Run JSON")
}

/// Polls `cond` every 50 ms until it yields a value; panics naming `what`
/// after `patience`. Tests wait for a signal this way, never a fixed sleep.
pub fn wait_for<T>(
    patience: std::time::Duration,
    what: &str,
    mut cond: impl FnMut() -> Option<T>,
) -> T {
    let start = std::time::Instant::now();
    loop {
        if let Some(v) = cond() {
            return v;
        }
        assert!(
            start.elapsed() < patience,
            "gave up after {patience:?} waiting for {what}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Whether `tool` is on the PATH.
pub fn have(tool: &str) -> bool {
    Command::new("sh")
        .arg("-c")
        .arg(format!("command -v {tool}"))
        .output()
        .is_ok_and(|o| o.status.success())
}

/// keisoku flame's "Top functions by self" rows: function -> self%.
pub fn top_self(summary: &str) -> std::collections::HashMap<String, f64> {
    summary
        .lines()
        .skip_while(|l| !l.starts_with("Top functions by self"))
        .skip(2)
        .take_while(|l| !l.trim().is_empty())
        .filter_map(|l| {
            let mut it = l.split_whitespace();
            let s: f64 = it.next()?.trim_end_matches('%').parse().ok()?;
            let _total = it.next()?;
            Some((it.collect::<Vec<_>>().join(" "), s))
        })
        .collect()
}

/// The keisoku binary as a path `nobody` can run (tests that drop root to
/// see file permissions apply). A checkout inside a private directory
/// (`mktemp -d` makes them 0700) is out of nobody's reach: then the binary
/// is linked (or copied) into `scratch/.bin/`, a directory the test owns
/// and removes with its temp dir.
pub fn bin_for_nobody(scratch: &Path) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let reachable = Path::new(BIN)
        .ancestors()
        .all(|p| std::fs::metadata(p).map_or(true, |m| m.permissions().mode() & 0o001 != 0));
    if reachable {
        return BIN.into();
    }
    for p in scratch.ancestors() {
        let mode = std::fs::metadata(p)
            .map(|m| m.permissions().mode())
            .unwrap_or(0o001);
        assert!(
            mode & 0o001 != 0,
            "{} is not searchable by others (mode {:o}): nobody cannot reach the test's files",
            p.display(),
            mode & 0o7777
        );
    }
    let dir = scratch.join(".bin");
    let bin = dir.join("keisoku");
    if !bin.exists() {
        std::fs::create_dir_all(&dir).expect("create .bin");
        std::fs::set_permissions(&dir, std::fs::Permissions::from_mode(0o755)).expect("chmod .bin");
        if std::fs::hard_link(BIN, &bin).is_err() {
            std::fs::copy(BIN, &bin).expect("copy the keisoku binary");
        }
        std::fs::set_permissions(&bin, std::fs::Permissions::from_mode(0o755))
            .expect("chmod keisoku");
    }
    bin
}

/// The nginx binary (Debian's nginx-light, installed by scripts/setup.sh).
pub fn nginx_bin() -> std::path::PathBuf {
    ["/usr/sbin/nginx", "/usr/bin/nginx"]
        .iter()
        .map(std::path::PathBuf::from)
        .find(|p| p.exists())
        .expect("nginx is not installed: run scripts/setup.sh")
}

/// Stops an nginx master the test started with TERM and waits for it: the
/// master then stops its workers too, where a killed master leaves them
/// serving the port for the next test.
pub fn stop_nginx(master: &mut std::process::Child) {
    // SAFETY: plain kill(2) of our own child.
    unsafe { libc::kill(master.id() as libc::pid_t, libc::SIGTERM) };
    let _ = master.wait();
}
