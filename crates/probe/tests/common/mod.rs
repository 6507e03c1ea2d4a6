//! Helpers shared by the probe tests.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use keisoku_probe::SeriesPoint;

/// Points grouped by series name, in time order.
pub fn by_name(points: &[SeriesPoint]) -> BTreeMap<String, Vec<(u64, f64)>> {
    let mut m: BTreeMap<String, Vec<(u64, f64)>> = BTreeMap::new();
    for p in points {
        m.entry(p.name.to_string())
            .or_default()
            .push((p.t_ns, p.value));
    }
    m
}

/// Writes `text` to `root/rel` (a fake /proc file), creating its folders.
pub fn write(root: &Path, rel: &str, text: &str) {
    let p = root.join(rel);
    std::fs::create_dir_all(p.parent().expect("a file under root")).expect("create dirs");
    std::fs::write(p, text).expect("write fake /proc file");
}

/// A /proc/PID[/task/TID]/stat line: comm, ppid, utime and stime (clock
/// ticks) and the core it last ran on (field 39); one thread, 10 pages RSS.
pub fn proc_stat(id: u32, comm: &str, ppid: u32, utime: u64, stime: u64, cpu: u32) -> String {
    let mut f: Vec<String> = (3..=52).map(|_| "0".to_string()).collect();
    f[0] = "S".into();
    f[4 - 3] = ppid.to_string();
    f[14 - 3] = utime.to_string();
    f[15 - 3] = stime.to_string();
    f[20 - 3] = "1".into();
    f[22 - 3] = "100".into();
    f[24 - 3] = "10".into();
    f[39 - 3] = cpu.to_string();
    format!("{id} ({comm}) {}\n", f.join(" "))
}

/// A copy of /bin/sh under a distinctive name, so its processes have a
/// command name (comm) nothing else on the machine has.
pub fn named_shell(dir: &Path, name: &str) -> PathBuf {
    let path = dir.join(name);
    std::fs::copy("/bin/sh", &path).expect("copy /bin/sh");
    path
}

/// A child process that burns one core until killed.
pub fn busy(shell: &Path) -> Child {
    spawn_copied(
        Command::new(shell)
            .arg("-c")
            .arg("while :; do :; done")
            .stdout(Stdio::null()),
    )
}

/// Spawns a program that a test has just written (a copied shell). While
/// the copy was open for writing, another test thread may have forked, and
/// its child holds the write descriptor until it execs: exec then fails with
/// ETXTBSY for a moment (a known race of multi-threaded test binaries).
pub fn spawn_copied(cmd: &mut Command) -> Child {
    let mut tries = 0;
    loop {
        match cmd.spawn() {
            Err(e) if e.raw_os_error() == Some(libc::ETXTBSY) && tries < 50 => {
                tries += 1;
                std::thread::sleep(Duration::from_millis(20));
            }
            other => return other.expect("spawn a copied program"),
        }
    }
}

/// Kills and reaps a child, returning the CPU time it used (user + system)
/// as the kernel accounted it (wait4 rusage): the ground truth for rates.
pub fn kill_and_cpu(child: &mut Child) -> Duration {
    let _ = child.kill();
    let mut status = 0;
    // SAFETY: zeroed rusage is a valid out-parameter; the pid is our child.
    let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::wait4(child.id() as libc::pid_t, &mut status, 0, &mut ru) };
    assert!(rc > 0, "wait4 failed");
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    tv(ru.ru_utime) + tv(ru.ru_stime)
}
