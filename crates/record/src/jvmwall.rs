//! The wall-clock profile of a JVM server: async-profiler's `wall` mode
//! attached to the running JVM while perf records its CPU profile.
//!
//! perf sees only the CPU a thread burns, so a request thread blocked on a
//! socket read is invisible to it; the wall-clock profile samples every
//! thread whether it runs or waits. A user who profiles a Java server with
//! `--profile perf --wall-profile on` gets both, as `--profile py-spy` gives
//! both for Python, and `blocking-wait` then measures the requests' waits
//! and names the Java methods they wait in. It is not the default, because
//! the agent stays loaded in the user's JVM.
//!
//! The agent is loaded into the running JVM through the JDK's `jcmd
//! PID JVMTI.agent_load` (the attach API: no JVM flag is needed), records
//! JFR, and is told to stop the same way. The library comes from
//! `KEISOKU_ASYNC_PROFILER` (a `libasyncProfiler.so`) or from async-profiler's
//! Maven Central jar in the local Maven repository, extracted with `jar`.

use std::path::{Path, PathBuf};
use std::process::Command;

/// async-profiler's version whose Maven Central jar is looked for.
pub const ASYNC_PROFILER_VERSION: &str = "4.2";

/// Wall-clock sampling interval: every thread is sampled at this period,
/// waiting or not (async-profiler's default for `wall` is 50 ms, too coarse
/// for a request of a few tens of milliseconds).
pub const WALL_INTERVAL_MS: u32 = 10;

/// The JVM among a server's processes, if any: the process whose
/// executable is named `java`.
pub fn jvm_in(pids: &[u32]) -> Option<u32> {
    pids.iter().copied().find(|pid| {
        std::fs::read_link(format!("/proc/{pid}/exe"))
            .ok()
            .and_then(|p| p.file_name().map(|n| n == "java"))
            .unwrap_or(false)
    })
}

/// async-profiler's library: `KEISOKU_ASYNC_PROFILER`, or the one inside
/// the jar of the local Maven repository, extracted into `dir`.
pub fn library(dir: &Path) -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os("KEISOKU_ASYNC_PROFILER") {
        let p = PathBuf::from(p);
        return if p.is_file() {
            Ok(p)
        } else {
            Err(format!(
                "KEISOKU_ASYNC_PROFILER={}: no such file",
                p.display()
            ))
        };
    }
    let home = std::env::var_os("HOME").ok_or("no HOME to find async-profiler's jar in")?;
    let v = ASYNC_PROFILER_VERSION;
    let jar = Path::new(&home).join(format!(
        ".m2/repository/tools/profiler/async-profiler/{v}/async-profiler-{v}.jar"
    ));
    if !jar.is_file() {
        return Err(format!(
            "async-profiler is not installed ({} is missing; `mvn dependency:get -Dartifact=tools.profiler:async-profiler:{v}` or KEISOKU_ASYNC_PROFILER=path/to/libasyncProfiler.so)",
            jar.display()
        ));
    }
    let platform = match std::env::consts::ARCH {
        "aarch64" => "linux-arm64",
        _ => "linux-x64",
    };
    let member = format!("{platform}/libasyncProfiler.so");
    std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let out = Command::new("jar")
        .arg("xf")
        .arg(&jar)
        .arg(&member)
        .current_dir(dir)
        .output()
        .map_err(|e| format!("running `jar` to extract async-profiler: {e}"))?;
    let lib = dir.join(&member);
    if !out.status.success() || !lib.is_file() {
        return Err(format!(
            "`jar xf {} {member}` did not extract the library: {}",
            jar.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(lib)
}

/// An async-profiler wall-clock session in a running JVM.
#[derive(Debug)]
pub struct JvmWall {
    pid: u32,
    lib: PathBuf,
    /// The JFR recording the agent writes.
    pub path: PathBuf,
}

/// Loads the agent with `command` through jcmd; jcmd exits 0 even when the
/// agent refused, so its "return code" line is read too.
fn agent_load(pid: u32, lib: &Path, command: &str) -> Result<(), String> {
    // Quoted: jcmd's own parser takes an unquoted `a=b` for one of its
    // options, and the agent then reads "event must not be empty".
    let out = Command::new("jcmd")
        .arg(pid.to_string())
        .arg("JVMTI.agent_load")
        .arg(lib)
        .arg(format!("\"{command}\""))
        .output()
        .map_err(|e| format!("running jcmd (a JDK is needed to attach async-profiler): {e}"))?;
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let refused = text
        .lines()
        .filter_map(|l| {
            l.trim()
                .to_lowercase()
                .strip_prefix("return code:")
                .map(|c| c.trim().to_string())
        })
        .any(|c| c != "0");
    if !out.status.success() || refused {
        return Err(format!(
            "jcmd {pid} JVMTI.agent_load ... {command}: {}",
            text.trim()
        ));
    }
    Ok(())
}

impl JvmWall {
    /// Starts wall-clock sampling of every thread of `pid` into
    /// `dir/wall.jfr`.
    pub fn start(pid: u32, lib: PathBuf, dir: &Path) -> Result<JvmWall, String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        let path = dir.join("wall.jfr");
        agent_load(
            pid,
            &lib,
            &format!(
                "start,event=wall,interval={WALL_INTERVAL_MS}ms,jfr,file={}",
                path.display()
            ),
        )?;
        Ok(JvmWall { pid, lib, path })
    }

    /// Stops the session; the JFR recording is complete when this returns.
    pub fn stop(self) -> Result<PathBuf, String> {
        agent_load(
            self.pid,
            &self.lib,
            &format!("stop,file={}", self.path.display()),
        )?;
        if !self.path.is_file() {
            return Err(format!(
                "async-profiler wrote no recording at {}",
                self.path.display()
            ));
        }
        Ok(self.path)
    }
}

/// Reads the wall-clock recording: async-profiler writes its wall samples
/// as `profiler.WallClockSample` (several idle ticks batched into one event
/// with their count), older versions as execution samples.
pub fn read(path: &Path) -> Result<keisoku_stacks::Profile, String> {
    let data = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
    let name = path.display().to_string();
    let mut last = String::new();
    for event in ["profiler.WallClockSample", "jdk.ExecutionSample"] {
        let opts = keisoku_stacks::ReadOptions {
            event: Some(event.into()),
            ..Default::default()
        };
        match keisoku_stacks::jfr::parse(&data, &name, &opts) {
            Ok(p) => return Ok(p.profile),
            Err(e) => last = e.to_string(),
        }
    }
    Err(last)
}

#[cfg(test)]
mod tests {
    use super::jvm_in;

    #[test]
    fn a_process_that_is_not_java_is_no_jvm() {
        // This test binary is not a JVM; a pid that does not exist is none either.
        assert_eq!(jvm_in(&[std::process::id(), u32::MAX]), None);
    }
}
