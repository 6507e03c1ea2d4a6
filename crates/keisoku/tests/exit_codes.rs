//! One exit-code policy (issue 15, item 13): anything about the user's
//! input (a file that cannot be read, a directory, a truncated gzip, a
//! malformed file) is exit 2 with the file named, whichever command reads
//! it. Before, permission denied was 1 from `flame` and 2 from `logs`, a
//! directory 2 from `collapse` and 1 from `flame`, a truncated gzip 1 from
//! `logs`; `collapse` said only "cannot read it" and `compare` did not name
//! a malformed file.

mod common;

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

/// Every command reading a user's file, with `F` where the file goes.
const COMMANDS: &[&[&str]] = &[
    &["collapse", "F"],
    &["collapse", "perf", "F"],
    &["flame", "F", "-o", "out.html"],
    &["scope", "F", "-o", "out.html"],
    &["diff", "F", "ok.folded", "-o", "out.html"],
    &["logs", "ltsv", "F"],
    &["logs", "json", "F"],
    &["logs", "diff", "F", "ok.dump"],
    &["report", "F", "-o", "out.html"],
    &["compare", "F", "F", "-o", "out.html"],
    &["bench", "--targets", "F", "-d", "1s"],
];

/// A directory with good inputs and one of each bad kind.
fn inputs() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    // Readable by an unprivileged user (see `keisoku`), so only the file
    // made unreadable is.
    std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(p.join("ok.folded"), "main;a;b 3\nmain;c 2\n").unwrap();
    std::fs::write(p.join("noperm"), "main;a 1\n").unwrap();
    std::fs::set_permissions(p.join("noperm"), std::fs::Permissions::from_mode(0o000)).unwrap();
    std::fs::create_dir(p.join("adir")).unwrap();
    std::fs::set_permissions(p.join("adir"), std::fs::Permissions::from_mode(0o755)).unwrap();
    // A gzip cut in the middle of its deflate stream.
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    for i in 0..20_000 {
        writeln!(enc, "main;f{i} 1").unwrap();
    }
    let gz = enc.finish().unwrap();
    std::fs::write(p.join("trunc.gz"), &gz[..gz.len() / 2]).unwrap();
    std::fs::write(p.join("bad.txt"), "this is not it {\n").unwrap();
    // A logs dump to pair with the bad one.
    let ltsv = p.join("ok.ltsv");
    std::fs::write(
        &ltsv,
        "time:2024-01-01T00:00:00+00:00\tmethod:GET\turi:/a\tstatus:200\tsize:1\treqtime:0.001\n",
    )
    .unwrap();
    let out = Command::new(common::BIN)
        .args(["logs", "ltsv", "ok.ltsv", "--dump", "ok.dump"])
        .current_dir(p)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for f in std::fs::read_dir(p).unwrap() {
        let f = f.unwrap().path();
        if !f.ends_with("noperm") {
            let mode = if f.is_dir() { 0o755 } else { 0o644 };
            std::fs::set_permissions(&f, std::fs::Permissions::from_mode(mode)).unwrap();
        }
    }
    dir
}

/// keisoku as an unprivileged user when the tests run as root (root reads
/// any file, so "permission denied" would not happen).
fn keisoku(dir: &Path, args: &[&str]) -> Output {
    // Our effective user is the owner of the directory we just created.
    let owner = std::os::unix::fs::MetadataExt::uid(&std::fs::metadata(dir).unwrap());
    let mut cmd = if owner == 0 {
        let mut c = Command::new(common::bin_for_nobody(dir));
        c.uid(65534).gid(65534);
        c
    } else {
        Command::new(common::BIN)
    };
    cmd.args(args)
        .current_dir(dir)
        .env("KEISOKU_STORE", dir.join("no-store.db"))
        .stdin(Stdio::null());
    cmd.output().expect("run keisoku")
}

fn check(dir: &Path, file: &str) {
    for template in COMMANDS {
        let args: Vec<&str> = template
            .iter()
            .map(|a| if *a == "F" { file } else { a })
            .collect();
        let out = keisoku(dir, &args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(
            out.status.code(),
            Some(2),
            "keisoku {}: expected exit 2: {err}",
            args.join(" ")
        );
        assert!(
            err.contains(file),
            "keisoku {} should name {file}: {err}",
            args.join(" ")
        );
    }
}

#[test]
fn permission_denied_is_bad_input_everywhere() {
    let dir = inputs();
    check(dir.path(), "noperm");
}

#[test]
fn a_directory_is_bad_input_everywhere() {
    let dir = inputs();
    check(dir.path(), "adir");
}

#[test]
fn a_truncated_gzip_is_bad_input_everywhere() {
    let dir = inputs();
    check(dir.path(), "trunc.gz");
}

#[test]
fn a_malformed_file_is_bad_input_everywhere() {
    let dir = inputs();
    check(dir.path(), "bad.txt");
}

#[test]
fn collapse_says_why_it_cannot_read() {
    let dir = inputs();
    let out = keisoku(dir.path(), &["collapse", "adir"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("adir") && err.contains("directory"), "{err}");
}
