//! perf driven for real on this machine (root or perf_event_paranoid <= 1
//! required: scripts/setup.sh installs perf), and a fake perf for the
//! fallback and error paths.

mod common;

use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{busy, kill_and_cpu, named_shell, spawn_copied};
use keisoku_probe::{PerfOptions, PerfRecorder, PerfTarget, ProfileError};

/// (comm, pid, tid, time in seconds) of each sample header in perf script text.
fn headers(script: &str) -> Vec<(String, u32, u32, f64)> {
    let mut v = Vec::new();
    for line in script.lines() {
        if line.is_empty() || line.starts_with(char::is_whitespace) {
            continue;
        }
        // "comm  pid/tid [cpu] secs.usec: event:"; comm may hold spaces.
        let Some(slash) = line.find('/') else {
            continue;
        };
        let before = &line[..slash];
        let Some(sp) = before.trim_end().rfind(' ') else {
            continue;
        };
        let comm = before[..sp].trim().to_string();
        let Ok(pid) = before[sp + 1..].trim().parse() else {
            continue;
        };
        let rest = &line[slash + 1..];
        let mut f = rest.split_whitespace();
        let Some(Ok(tid)) = f.next().map(str::parse) else {
            continue;
        };
        let Some(t) = f.find_map(|x| x.strip_suffix(':').and_then(|x| x.parse::<f64>().ok()))
        else {
            continue;
        };
        v.push((comm, pid, tid, t));
    }
    v
}

fn proc_cpu_s(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap();
    let rest = &stat[stat.rfind(')').unwrap() + 2..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: f64 = f[11].parse::<f64>().unwrap() + f[12].parse::<f64>().unwrap();
    ticks / unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64
}

#[test]
fn records_a_busy_process_with_its_command_name() {
    let dir = tempfile::tempdir().unwrap();
    let sh = named_shell(dir.path(), "kperfbusy");
    let mut child = busy(&sh);
    let origin = Instant::now();
    let mut o = PerfOptions::new(
        PerfTarget::Pids(vec![child.id()]),
        dir.path().join("prof"),
        origin,
    );
    o.hz = 199;
    let rec = PerfRecorder::start(o)
        .expect("perf record starts (run as root or lower perf_event_paranoid)");
    assert!(["cycles", "cpu-clock"].contains(&rec.event()));
    let cpu0 = proc_cpu_s(child.id());
    std::thread::sleep(Duration::from_millis(1500));
    // The CPU the loop got while recorded: the machine may be busy.
    let cpu = proc_cpu_s(child.id()) - cpu0;
    let stop_ms = origin.elapsed().as_secs_f64() * 1e3;
    let out = rec.stop().unwrap();
    kill_and_cpu(&mut child);
    let script = std::fs::read_to_string(&out.script_path).unwrap();
    let h = headers(&script);
    let ours = h
        .iter()
        .filter(|(c, p, _, _)| c == "kperfbusy" && *p == child.id())
        .count();
    // At 199 Hz over the CPU time the loop really got, minus generous slack.
    let expected = (cpu * 199.0 * 0.5) as usize;
    // On a loaded machine the loop may get little CPU; perf then samples it
    // proportionally less, which is right.
    assert!(cpu > 0.05, "the loop got only {cpu:.2} s of CPU");
    assert!(
        ours >= expected.max(5),
        "{ours} samples of kperfbusy (cpu {cpu:.2} s)\n{}",
        &script[..script.len().min(2000)]
    );
    assert_eq!(ours, h.len(), "only the target is recorded");
    // Frames follow each header with ip, symbol and (dso).
    assert!(
        script.contains("(/") || script.contains("([kernel.kallsyms])"),
        "{}",
        &script[..script.len().min(1000)]
    );
    assert!(out.samples.unwrap_or(0) as usize >= ours);
    // perf's clock is the run's clock: samples fall within the recording.
    for (_, _, _, t) in &h {
        let run_ms = out.clock.perf_secs_to_run_ns(*t) as f64 / 1e6;
        assert!(
            (0.0..=stop_ms + 300.0).contains(&run_ms),
            "sample at {run_ms} ms of the run, stopped at {stop_ms} ms"
        );
    }
}

#[test]
fn missing_perf_is_a_clear_error() {
    let dir = tempfile::tempdir().unwrap();
    let mut o = PerfOptions::new(PerfTarget::AllCpus, dir.path(), Instant::now());
    o.perf = PathBuf::from("/nonexistent/perf");
    let e = PerfRecorder::start(o).err().expect("no perf, no recorder");
    assert!(matches!(e, ProfileError::ToolMissing { .. }), "{e}");
    assert!(e.to_string().contains("apt-get install linux-perf"), "{e}");
}

fn fake_perf(dir: &Path, record_case: &str) -> PathBuf {
    let log = dir.join("perf.log");
    let path = dir.join("perf");
    let script = format!(
        r#"#!/bin/sh
echo "$*" >> {log}
case "$1" in
  --version) echo "perf version 6.1.fake"; exit 0;;
  script) echo "fake 7/7 [000] 1.000000: cpu-clock:"; echo "	1 main (/fake)"; exit 0;;
  evlist) exit 0;;
  record) ;;
  *) echo "unexpected perf command: $1" >&2; exit 1;;
esac
{record_case}
out=""
prev=""
quick=no
for a in "$@"; do
  [ "$prev" = "-o" ] && out="$a"
  [ "$a" = "true" ] && quick=yes
  prev="$a"
done
echo data > "$out"
[ $quick = yes ] && exit 0
echo "Events disabled" >&2
echo "Events enabled" >&2
trap 'echo "[ perf record: Captured and wrote 0.1 MB $out (7 samples) ]" >&2; exit 0' INT
while :; do sleep 0.05; done
"#,
        log = log.display()
    );
    std::fs::write(&path, script).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    // Another test thread may have forked while the script was open for
    // writing; its child holds the descriptor until it execs, and the
    // recorder's own exec of the script would fail with ETXTBSY (seen in a
    // fresh-clone CI run, 2026-11-25). One exec that succeeds, retried past
    // that race, means no such descriptor is left.
    let status = spawn_copied(Command::new(&path).arg("--version").stdout(Stdio::null()))
        .wait()
        .unwrap();
    assert!(status.success(), "the fake perf answers --version");
    std::fs::remove_file(&log).unwrap();
    path
}

#[test]
fn falls_back_to_cpu_clock_without_hardware_cycles() {
    let dir = tempfile::tempdir().unwrap();
    let perf = fake_perf(
        dir.path(),
        r#"case "$*" in *"-e cycles"*) echo "Error: cycles: PMU Hardware doesn't support sampling/overflow-interrupts." >&2; exit 255;; esac"#,
    );
    let mut o = PerfOptions::new(
        PerfTarget::Pids(vec![std::process::id()]),
        dir.path().join("out"),
        Instant::now(),
    );
    o.perf = perf;
    let rec = PerfRecorder::start(o).unwrap();
    assert_eq!(rec.event(), "cpu-clock");
    std::thread::sleep(Duration::from_millis(100));
    let out = rec.stop().unwrap();
    assert_eq!(out.event, "cpu-clock");
    assert_eq!(
        out.samples,
        Some(7),
        "perf was stopped with SIGINT and reported"
    );
    let log = std::fs::read_to_string(dir.path().join("perf.log")).unwrap();
    let rec_line = log
        .lines()
        .find(|l| l.starts_with("record") && !l.ends_with("true"))
        .unwrap();
    for arg in [
        "-e cpu-clock",
        "-k CLOCK_MONOTONIC",
        "--call-graph fp",
        &format!("-p {}", std::process::id()),
    ] {
        assert!(rec_line.contains(arg), "{arg} missing from: {rec_line}");
    }
    assert!(log
        .lines()
        .any(|l| l.starts_with("script") && l.contains("comm,pid,tid,cpu,time,event,ip,sym,dso")));
    assert!(std::fs::read_to_string(out.script_path)
        .unwrap()
        .contains("main (/fake)"));
}

#[test]
fn paranoid_kernel_is_not_permitted_with_the_fix() {
    let dir = tempfile::tempdir().unwrap();
    let perf = fake_perf(
        dir.path(),
        r#"echo "Error:
Access to performance monitoring and observability operations is limited.
Consider adjusting /proc/sys/kernel/perf_event_paranoid setting to open" >&2; exit 255"#,
    );
    let mut o = PerfOptions::new(PerfTarget::AllCpus, dir.path().join("out"), Instant::now());
    o.perf = perf;
    let e = PerfRecorder::start(o).err().expect("refused");
    assert!(matches!(e, ProfileError::NotPermitted { .. }), "{e}");
    let msg = e.to_string();
    assert!(
        msg.contains("perf_event_paranoid") && msg.contains("Access to performance monitoring"),
        "{msg}"
    );
}
