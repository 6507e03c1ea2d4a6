//! A store nobody may write (a directory without write permission, a
//! read-only mount) can still be listed and read by `runs`, `show`,
//! `report` and `serve` (issue 15 item 11); writing to it fails with
//! SQLite's reason, not a misread.

use keisoku_store::{NewRun, RunStatus, Series, Store};
use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::{Command, Output, Stdio};

mod common;
use common::BIN;

fn is_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// keisoku as a user the file permissions apply to: root ignores them, so
/// root runs it as `nobody`.
fn keisoku_unprivileged(scratch: &Path, args: &[&str]) -> Command {
    if is_root() {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"]);
        c.arg(common::bin_for_nobody(scratch));
        c.args(args);
        c
    } else {
        let mut c = Command::new(BIN);
        c.args(args);
        c
    }
}

fn make_store(path: &Path) -> String {
    let store = Store::open(path).unwrap();
    let id = store
        .create_run(&NewRun {
            name: "ro-run".into(),
            started_unix_ms: 1_763_700_000_000,
            target: Some("http://127.0.0.1:9/".into()),
            ..NewRun::default()
        })
        .unwrap();
    store
        .append_series(
            &id,
            &[Series {
                name: "client.rps".into(),
                unit: "req/s".into(),
                t_ms: vec![1000.0, 2000.0],
                v: vec![50.0, 20.0],
            }],
        )
        .unwrap();
    store
        .put_results(
            &id,
            &serde_json::json!({"requests": 70, "rps": 35.0, "errors": 0,
                                "latency_ms": {"p50": 1.0, "p99": 2.0}}),
            Some(35.0),
            Some(2.0),
        )
        .unwrap();
    store.finish(&id, RunStatus::Complete, 2000.0).unwrap();
    id
}

fn ok(out: &Output, what: &str) -> String {
    assert!(
        out.status.success(),
        "{what}: exit {:?}\nstdout: {}\nstderr: {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Lists, shows, reports and serves the store at `db`, then checks a
/// delete is refused with a reason.
fn read_everything(db: &Path, id: &str, scratch: &Path) {
    let s = db.to_str().unwrap();
    let runs = ok(
        &keisoku_unprivileged(scratch, &["runs", "--store", s])
            .output()
            .unwrap(),
        "runs",
    );
    assert!(runs.contains("ro-run") && runs.contains(id), "{runs}");
    let show = ok(
        &keisoku_unprivileged(scratch, &["show", "ro-run", "--store", s])
            .output()
            .unwrap(),
        "show",
    );
    assert!(show.contains(id), "{show}");
    let html = ok(
        &keisoku_unprivileged(scratch, &["report", "ro-run", "--store", s, "-o", "-"])
            .output()
            .unwrap(),
        "report",
    );
    assert!(html.contains("keisoku-data") && html.contains("ro-run"));

    let mut serve =
        keisoku_unprivileged(scratch, &["serve", "--addr", "127.0.0.1:0", "--store", s])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
    let mut line = String::new();
    BufReader::new(serve.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let addr = line
        .split("http://")
        .nth(1)
        .and_then(|r| r.split('/').next())
        .map(str::to_string);
    let answer = addr.as_deref().map(|addr| {
        let mut c = std::net::TcpStream::connect(addr).unwrap();
        write!(c, "GET /api/runs HTTP/1.1\r\nHost: {addr}\r\n\r\n").unwrap();
        let mut resp = String::new();
        c.read_to_string(&mut resp).unwrap();
        resp
    });
    let _ = serve.kill();
    let _ = serve.wait();
    let resp = answer.unwrap_or_else(|| panic!("serve printed no URL: {line:?}"));
    assert!(resp.starts_with("HTTP/1.1 200"), "{resp}");
    assert!(resp.contains("ro-run"), "{resp}");

    let rm = keisoku_unprivileged(scratch, &["rm", "ro-run", "--store", s])
        .output()
        .unwrap();
    assert!(!rm.status.success(), "rm on a read-only store succeeded");
    let err = String::from_utf8_lossy(&rm.stderr);
    assert!(
        err.contains("readonly") || err.contains("read-only"),
        "{err}"
    );
}

#[test]
fn a_store_in_a_directory_without_write_permission_can_be_read() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join("lab");
    std::fs::create_dir(&store_dir).unwrap();
    let db = store_dir.join("runs.db");
    let id = make_store(&db);
    // The writer closed cleanly: no -wal or -shm beside the file, and none
    // can be created.
    assert!(!store_dir.join("runs.db-shm").exists());
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    std::fs::set_permissions(&store_dir, std::fs::Permissions::from_mode(0o555)).unwrap();
    read_everything(&db, &id, dir.path());
    std::fs::set_permissions(&store_dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    assert_eq!(
        std::fs::read_dir(&store_dir).unwrap().count(),
        1,
        "nothing written beside the store"
    );
}

/// A tmpfs this test mounts and remounts read-only; unmounted on drop.
struct Mount(std::path::PathBuf);

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

#[test]
fn a_store_on_a_read_only_mount_can_be_read() {
    if !is_root() {
        // Mounting needs root; the permission test above covers the rest.
        eprintln!("skipped: mounting a tmpfs needs root");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mnt = dir.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let mounted = Command::new("mount")
        .args(["-t", "tmpfs", "-o", "size=8m,mode=0755", "tmpfs"])
        .arg(&mnt)
        .status()
        .unwrap();
    if !mounted.success() {
        // Root without CAP_SYS_ADMIN (an unprivileged container): the
        // permission test above still runs.
        eprintln!("skipped: this root may not mount a tmpfs");
        return;
    }
    let guard = Mount(mnt.clone());
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let db = mnt.join("runs.db");
    let id = make_store(&db);
    std::fs::set_permissions(&db, std::fs::Permissions::from_mode(0o644)).unwrap();
    let ro = Command::new("mount")
        .args(["-o", "remount,ro"])
        .arg(&mnt)
        .status()
        .unwrap();
    assert!(ro.success(), "remount,ro failed");
    // As root too: a read-only mount binds everyone.
    let runs = Command::new(BIN)
        .args(["runs", "--store", db.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(ok(&runs, "runs as root").contains("ro-run"));
    read_everything(&db, &id, dir.path());
    drop(guard);
}
