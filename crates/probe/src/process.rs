//! The server process, all its threads and all its descendants, summed into
//! `proc.*` series; plus process selection (`--pid`, `--pidof`, the tree).

use std::collections::HashMap;
use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::error::ProbeError;
use crate::procfs::{
    fd_dir_size, fields, lines, parse_u64, stat_comm, stat_field, stat_fields, value_after_colon,
    Buf, NumericDir, ProcFile,
};
use crate::series::{Notes, Series, SeriesPoint};
use crate::threads::{Delta, Worker, WorkerTable};

/// Descendants are rediscovered at most this often: finding them means
/// reading the stat file of every process on the host (no
/// /proc/PID/task/TID/children without CONFIG_PROC_CHILDREN).
const TREE_SCAN_EVERY: Duration = Duration::from_secs(1);

/// Replaces `buf` with `root/pid[/rest...]` without allocating once warm.
fn pid_path(buf: &mut PathBuf, root: &Path, pid: u32, rest: &[&str]) {
    buf.as_mut_os_string().clear();
    buf.push(root);
    let mut digits = [0u8; 10];
    let mut i = digits.len();
    let mut v = pid;
    loop {
        i -= 1;
        digits[i] = b'0' + (v % 10) as u8;
        v /= 10;
        if v == 0 {
            break;
        }
    }
    buf.push(std::ffi::OsStr::from_bytes(&digits[i..]));
    for r in rest {
        buf.push(r);
    }
}

#[derive(Clone, Copy)]
struct ProcPrev {
    utime: u64,
    stime: u64,
    majflt: u64,
    io: Option<(u64, u64)>,
}

struct ProcSlot {
    stat: ProcFile,
    io: Option<ProcFile>,
    fd_path: CString,
    fd_dir: Option<NumericDir>,
    task_dir: Option<NumericDir>,
    prev: Option<ProcPrev>,
    gen: u64,
}

#[derive(Clone, Copy, Default)]
struct ThreadPrev {
    ticks: u64,
    run_ns: Option<u64>,
    wait_ns: Option<u64>,
    /// Times it got a CPU (schedstat's third field).
    slices: Option<u64>,
    processor: Option<usize>,
    migrations: Option<u64>,
    nvcsw: Option<u64>,
    nivcsw: Option<u64>,
}

struct ThreadSlot {
    stat: ProcFile,
    sched: Option<ProcFile>,
    schedstat: Option<ProcFile>,
    status: Option<ProcFile>,
    prev: Option<ThreadPrev>,
    gen: u64,
    worker: Worker,
}

impl AsMut<Worker> for ThreadSlot {
    fn as_mut(&mut self) -> &mut Worker {
        &mut self.worker
    }
}

/// What the host sample of the same moment tells the process sampler.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct HostView {
    /// Cores in /proc/stat (per-core series are emitted for all of them).
    pub(crate) cores: usize,
    /// Forks since boot (/proc/stat `processes`), when host sampling is on.
    pub(crate) forks_total: Option<u64>,
}

/// Samples one process tree.
pub(crate) struct ProcessCollector {
    proc_root: PathBuf,
    root_pid: u32,
    alive: bool,
    procfs: bool,
    hz: f64,
    page: f64,
    buf: Buf,
    path: PathBuf,
    gen: u64,
    procs: HashMap<u32, ProcSlot>,
    threads: HashMap<u32, ThreadSlot>,
    members: Vec<u32>,
    tids: Vec<u32>,
    all_pids: Vec<u32>,
    pairs: Vec<(u32, u32)>,
    ppids: HashMap<u32, (u32, u64)>,
    tree_gen: u64,
    stale: Vec<u32>,
    proc_dir: Option<NumericDir>,
    last_tree_scan: Option<Duration>,
    forks_at_scan: Option<u64>,
    cpu_user: Series,
    cpu_system: Series,
    /// The tree's own major page faults: the host's count (vm.pgmajfault)
    /// includes every other process's on a shared host.
    majflt: Series,
    rss: Series,
    nthreads: Series,
    nprocs: Series,
    nvcsw: Series,
    nivcsw: Series,
    migrations: Series,
    runq: Series,
    read_bytes: Series,
    write_bytes: Series,
    fds: Series,
    /// The tree's TCP connections by side (None once sock_diag failed).
    conns: Option<crate::sockdiag::ConnTracker>,
    /// The host's connects by pid (None until the first sample, or when the
    /// tracepoint is unavailable: sock_diag alone then learns backends).
    connects: Option<crate::connects::ConnectWatch>,
    connects_tried: bool,
    inodes: std::collections::HashSet<u32>,
    tcp_accepted: Series,
    tcp_connected: Series,
    tcp_closed_by_server: Series,
    tcp_closed_by_peer: Series,
    cores: Vec<Series>,
    core_acc: Vec<f64>,
    workers: WorkerTable,
}

impl ProcessCollector {
    pub(crate) fn new(proc_root: &Path, pid: u32) -> Result<ProcessCollector, ProbeError> {
        let mut path = PathBuf::new();
        pid_path(&mut path, proc_root, pid, &["stat"]);
        if !path.exists() {
            return Err(ProbeError::NoSuchProcess {
                pid,
                path: path.display().to_string(),
            });
        }
        Ok(ProcessCollector {
            proc_root: proc_root.to_path_buf(),
            root_pid: pid,
            alive: true,
            procfs: crate::procfs::is_procfs(proc_root),
            hz: crate::procfs::clock_ticks() as f64,
            page: crate::procfs::page_size() as f64,
            buf: Buf::default(),
            path,
            gen: 0,
            procs: HashMap::new(),
            threads: HashMap::new(),
            members: vec![pid],
            tids: Vec::new(),
            all_pids: Vec::new(),
            pairs: Vec::new(),
            ppids: HashMap::new(),
            tree_gen: 0,
            stale: Vec::new(),
            proc_dir: NumericDir::open(proc_root).ok(),
            last_tree_scan: None,
            forks_at_scan: None,
            cpu_user: Series::new("proc.cpu_user", "%"),
            cpu_system: Series::new("proc.cpu_system", "%"),
            majflt: Series::new("proc.majflt", "/s"),
            rss: Series::new("proc.rss", "B"),
            nthreads: Series::new("proc.threads", "count"),
            nprocs: Series::new("proc.processes", "count"),
            nvcsw: Series::new("proc.nvcsw", "/s"),
            nivcsw: Series::new("proc.nivcsw", "/s"),
            migrations: Series::new("proc.migrations", "/s"),
            runq: Series::new("proc.runq_delay_ms", "ms/s"),
            read_bytes: Series::new("proc.read_bytes", "B/s"),
            write_bytes: Series::new("proc.write_bytes", "B/s"),
            fds: Series::new("proc.fds", "count"),
            conns: Some(crate::sockdiag::ConnTracker::default()),
            connects: None,
            connects_tried: false,
            inodes: std::collections::HashSet::new(),
            tcp_accepted: Series::new("proc.tcp_accepted", "/s"),
            tcp_connected: Series::new("proc.tcp_connected", "/s"),
            tcp_closed_by_server: Series::new("proc.tcp_closed_by_server", "/s"),
            tcp_closed_by_peer: Series::new("proc.tcp_closed_by_peer", "/s"),
            cores: Vec::new(),
            core_acc: Vec::new(),
            workers: WorkerTable::default(),
        })
    }

    /// Whether the root process was still there at the last sample.
    pub(crate) fn alive(&self) -> bool {
        self.alive
    }

    /// Pids of the tree at the last sample, root first.
    pub(crate) fn members(&self) -> &[u32] {
        &self.members
    }

    fn rescan_tree(&mut self) {
        let Some(dir) = self.proc_dir.as_mut() else {
            return;
        };
        if dir.scan(&mut self.all_pids).is_err() {
            return;
        }
        // A process's parent only changes when its parent dies (it is then
        // reparented out of the tree), so each process's stat is read once,
        // when first seen, rather than every rescan.
        self.tree_gen += 1;
        let gen = self.tree_gen;
        for &pid in &self.all_pids {
            if let Some(e) = self.ppids.get_mut(&pid) {
                e.1 = gen;
                continue;
            }
            pid_path(&mut self.path, &self.proc_root, pid, &["stat"]);
            let Ok(f) = ProcFile::open(&self.path) else {
                continue;
            };
            if f.read(&mut self.buf).is_err() {
                continue;
            }
            if let Some(ppid) = stat_field(self.buf.bytes(), 4) {
                self.ppids.insert(pid, (ppid as u32, gen));
            }
        }
        self.ppids.retain(|_, e| e.1 == gen);
        // Orphans were reparented (to init or to a subreaper, possibly the
        // server itself): read their parent again.
        self.stale.clear();
        for (&pid, &(ppid, _)) in &self.ppids {
            if ppid > 1 && !self.ppids.contains_key(&ppid) {
                self.stale.push(pid);
            }
        }
        for i in 0..self.stale.len() {
            let pid = self.stale[i];
            pid_path(&mut self.path, &self.proc_root, pid, &["stat"]);
            let ppid = ProcFile::open(&self.path)
                .ok()
                .filter(|f| f.read(&mut self.buf).is_ok())
                .and_then(|_| stat_field(self.buf.bytes(), 4));
            match ppid {
                Some(ppid) => {
                    self.ppids.insert(pid, (ppid as u32, gen));
                }
                None => {
                    self.ppids.remove(&pid);
                }
            }
        }
        self.pairs.clear();
        self.pairs
            .extend(self.ppids.iter().map(|(&pid, &(ppid, _))| (pid, ppid)));
        self.members.clear();
        self.members.push(self.root_pid);
        let mut i = 0;
        while i < self.members.len() {
            let parent = self.members[i];
            for &(pid, ppid) in &self.pairs {
                if ppid == parent && pid != self.root_pid && !self.members.contains(&pid) {
                    self.members.push(pid);
                }
            }
            i += 1;
        }
    }

    /// The tree's own TCP connections (`proc.tcp_*`): who opened them and
    /// who closed them, which the host-wide counters cannot say.
    fn sample_connections(
        &mut self,
        dt_s: f64,
        t_ns: u64,
        out: &mut Vec<SeriesPoint>,
        notes: &mut Notes,
    ) {
        if !self.procfs {
            return;
        }
        let Some(tracker) = self.conns.as_mut() else {
            return;
        };
        if !std::mem::replace(&mut self.connects_tried, true) {
            match crate::connects::ConnectWatch::open() {
                Ok(w) => self.connects = Some(w),
                Err(e) => notes.once("proc.tcp_connects", || {
                    format!("backend connections are found from sock_diag alone ({e}): one that lives under a millisecond can be missed, and proc.tcp_connected with it")
                }),
            }
        }
        if let Some(w) = self.connects.as_mut() {
            let members = &self.members;
            w.drain(|pid, dst| {
                if members.contains(&pid) {
                    tracker.learn_backend(dst);
                }
            });
        }
        crate::sockdiag::socket_inodes(&self.proc_root, &self.members, &mut self.inodes);
        match tracker.sample(&self.inodes) {
            Ok(Some(c)) if dt_s > 0.0 => {
                self.tcp_accepted.push(out, t_ns, c.accepted as f64 / dt_s);
                self.tcp_connected
                    .push(out, t_ns, c.connected as f64 / dt_s);
                self.tcp_closed_by_server
                    .push(out, t_ns, c.closed_by_server as f64 / dt_s);
                self.tcp_closed_by_peer
                    .push(out, t_ns, c.closed_by_peer as f64 / dt_s);
            }
            Ok(_) => {}
            Err(e) => {
                self.conns = None;
                notes.once("proc.tcp", || {
                    format!("proc.tcp_* series left out: sock_diag failed ({e})")
                });
            }
        }
    }

    pub(crate) fn sample(
        &mut self,
        elapsed: Duration,
        dt_s: f64,
        t_ns: u64,
        host: HostView,
        out: &mut Vec<SeriesPoint>,
        notes: &mut Notes,
    ) {
        if !self.alive {
            return;
        }
        // Listing /proc makes the kernel look up a dentry per process
        // (about a millisecond with a few hundred processes), and without a
        // fork on the host since the last scan there is no new child to find.
        let forks_total = host.forks_total;
        let host_cores = host.cores;
        let due = match self.last_tree_scan {
            None => true,
            Some(last) => {
                elapsed.saturating_sub(last) >= TREE_SCAN_EVERY
                    && (forks_total.is_none() || forks_total != self.forks_at_scan)
            }
        };
        if due {
            self.rescan_tree();
            self.last_tree_scan = Some(elapsed);
            self.forks_at_scan = forks_total;
        }
        self.gen += 1;
        let gen = self.gen;
        let hz = self.hz;

        let mut d_user = 0u64;
        let mut d_system = 0u64;
        let mut d_majflt = 0u64;
        let mut rss_pages = 0u64;
        let mut nthreads = 0u64;
        let mut nprocs = 0u64;
        let mut fds = 0u64;
        let mut d_read = 0u64;
        let mut d_write = 0u64;
        let mut have_cpu_delta = false;
        let mut have_io_delta = false;
        let mut io_available = false;

        let mut d_nvcsw = 0u64;
        let mut d_nivcsw = 0u64;
        let mut d_migr = 0u64;
        let mut d_wait_ns = 0u64;
        let mut have_thread_delta = false;
        let mut have_migr = false;
        let mut have_wait = false;
        let mut have_csw = false;
        self.core_acc.clear();
        self.core_acc.resize(host_cores, 0.0);

        let mut root_seen = false;
        for mi in 0..self.members.len() {
            let pid = self.members[mi];
            if !self.procs.contains_key(&pid) {
                pid_path(&mut self.path, &self.proc_root, pid, &["stat"]);
                let Ok(stat) = ProcFile::open(&self.path) else {
                    continue;
                };
                pid_path(&mut self.path, &self.proc_root, pid, &["io"]);
                let io = match ProcFile::open(&self.path) {
                    Ok(f) => Some(f),
                    Err(e) => {
                        notes.once("proc.io", || {
                            format!("proc.read_bytes and proc.write_bytes left out: cannot open /proc/{pid}/io: {e}")
                        });
                        None
                    }
                };
                pid_path(&mut self.path, &self.proc_root, pid, &["fd"]);
                let fd_path = CString::new(self.path.as_os_str().as_bytes()).unwrap_or_default();
                pid_path(&mut self.path, &self.proc_root, pid, &["task"]);
                let task_dir = NumericDir::open(&self.path).ok();
                self.procs.insert(
                    pid,
                    ProcSlot {
                        stat,
                        io,
                        fd_path,
                        fd_dir: None,
                        task_dir,
                        prev: None,
                        gen,
                    },
                );
            }
            let Some(slot) = self.procs.get_mut(&pid) else {
                continue;
            };
            if slot.stat.read(&mut self.buf).is_err() {
                continue;
            }
            let stat = self.buf.bytes();
            let [Some(majflt), Some(utime), Some(stime), Some(threads), Some(rss)] =
                stat_fields(stat, [12, 14, 15, 20, 24])
            else {
                continue;
            };
            // A zombie keeps its stat file; it has no threads left to sample.
            if crate::procfs::stat_after_comm(stat)
                .and_then(|r| fields(r).next())
                .is_some_and(|s| s == b"Z" || s == b"X")
            {
                continue;
            }
            if pid == self.root_pid {
                root_seen = true;
            }
            slot.gen = gen;
            nprocs += 1;
            nthreads += threads;
            rss_pages += rss;
            let mut io_now = None;
            if let Some(io) = &slot.io {
                if io.read(&mut self.buf).is_ok() {
                    let mut rb = None;
                    let mut wb = None;
                    for line in lines(self.buf.bytes()) {
                        if line.starts_with(b"read_bytes:") {
                            rb = value_after_colon(line).and_then(parse_u64);
                        } else if line.starts_with(b"write_bytes:") {
                            wb = value_after_colon(line).and_then(parse_u64);
                        }
                    }
                    if let (Some(r), Some(w)) = (rb, wb) {
                        io_now = Some((r, w));
                        io_available = true;
                    }
                }
            }
            if let Some(p) = slot.prev {
                if utime >= p.utime && stime >= p.stime {
                    d_user += utime - p.utime;
                    d_system += stime - p.stime;
                    d_majflt += majflt.saturating_sub(p.majflt);
                    have_cpu_delta = true;
                }
                if let (Some((r0, w0)), Some((r1, w1))) = (p.io, io_now) {
                    d_read += r1.saturating_sub(r0);
                    d_write += w1.saturating_sub(w0);
                    have_io_delta = true;
                }
            }
            slot.prev = Some(ProcPrev {
                utime,
                stime,
                majflt,
                io: io_now,
            });
            let size = if self.procfs {
                fd_dir_size(&slot.fd_path)
            } else {
                None
            };
            match size {
                Some(n) => fds += n,
                None => {
                    if slot.fd_dir.is_none() {
                        pid_path(&mut self.path, &self.proc_root, pid, &["fd"]);
                        slot.fd_dir = NumericDir::open(&self.path).ok();
                    }
                    if let Some(n) = slot.fd_dir.as_mut().and_then(|d| d.count_entries().ok()) {
                        fds += n;
                    }
                }
            }

            // Threads: scheduler counters exist per thread only.
            let Some(task_dir) = slot.task_dir.as_mut() else {
                continue;
            };
            if task_dir.scan(&mut self.tids).is_err() {
                continue;
            }
            for ti in 0..self.tids.len() {
                let tid = self.tids[ti];
                if !self.threads.contains_key(&tid) {
                    // Thread slots are created once per thread: allocating here is fine.
                    let base = self
                        .proc_root
                        .join(pid.to_string())
                        .join("task")
                        .join(tid.to_string());
                    let open_rel = |rel: &str| ProcFile::open(&base.join(rel));
                    let Ok(stat) = open_rel("stat") else { continue };
                    let sched = open_rel("sched").ok();
                    let schedstat = open_rel("schedstat").ok();
                    let status = if sched.is_none() {
                        notes.once("proc.migrations", || {
                            format!("proc.migrations left out: /proc/{pid}/task/{tid}/sched is missing (kernel without CONFIG_SCHED_DEBUG); context switches come from status")
                        });
                        open_rel("status").ok()
                    } else {
                        None
                    };
                    if schedstat.is_none() {
                        notes.once("proc.runq_delay_ms", || {
                            format!("proc.runq_delay_ms left out: /proc/{pid}/task/{tid}/schedstat is missing (kernel without CONFIG_SCHEDSTATS); per-core CPU uses clock ticks")
                        });
                    }
                    self.threads.insert(
                        tid,
                        ThreadSlot {
                            stat,
                            sched,
                            schedstat,
                            status,
                            prev: None,
                            gen,
                            worker: Worker::new(pid),
                        },
                    );
                }
                let Some(t) = self.threads.get_mut(&tid) else {
                    continue;
                };
                t.worker.delta = None;
                let mut sched = (None, None, None);
                if let Some(f) = &t.schedstat {
                    if f.read(&mut self.buf).is_ok() {
                        let mut it = fields(self.buf.bytes()).map(|x| parse_u64(trim_nl(x)));
                        sched = (
                            it.next().flatten(),
                            it.next().flatten(),
                            it.next().flatten(),
                        );
                    }
                }
                // A thread that has not been on a CPU since the last tick
                // (same run time, wait and slice count) has the same stat
                // and sched counters too: only running changes them. Most
                // threads of a JVM idle, so this spares two of three reads
                // for each of them.
                let unchanged = sched.2.is_some()
                    && t.prev
                        .is_some_and(|p| (p.run_ns, p.wait_ns, p.slices) == sched);
                let cur = match t.prev {
                    Some(p) if unchanged => p,
                    _ => {
                        if t.stat.read(&mut self.buf).is_err() {
                            continue;
                        }
                        let stat = self.buf.bytes();
                        if let Some(comm) = crate::procfs::stat_comm(stat) {
                            t.worker.set_comm(comm);
                        }
                        let [utime, stime, processor] = stat_fields(stat, [14, 15, 39]);
                        let mut cur = ThreadPrev {
                            ticks: utime.unwrap_or(0) + stime.unwrap_or(0),
                            run_ns: sched.0,
                            wait_ns: sched.1,
                            slices: sched.2,
                            processor: processor.map(|p| p as usize),
                            ..ThreadPrev::default()
                        };
                        let csw_source = t.sched.as_ref().or(t.status.as_ref());
                        if let Some(f) = csw_source {
                            if f.read(&mut self.buf).is_ok() {
                                for line in lines(self.buf.bytes()) {
                                    let key_end = line
                                        .iter()
                                        .position(|&c| c == b':' || c == b' ')
                                        .unwrap_or(line.len());
                                    let v = || value_after_colon(line).and_then(parse_u64);
                                    match &line[..key_end] {
                                        b"se.nr_migrations" => cur.migrations = v(),
                                        b"nr_voluntary_switches" | b"voluntary_ctxt_switches" => {
                                            cur.nvcsw = v()
                                        }
                                        b"nr_involuntary_switches"
                                        | b"nonvoluntary_ctxt_switches" => cur.nivcsw = v(),
                                        _ => {}
                                    }
                                }
                            }
                        }
                        cur
                    }
                };
                let processor = cur.processor;
                if let Some(p) = t.prev {
                    have_thread_delta = true;
                    // Nanosecond run time beats 10 ms ticks at short intervals.
                    let cpu_s = match (p.run_ns, cur.run_ns) {
                        (Some(a), Some(b)) => b.saturating_sub(a) as f64 / 1e9,
                        _ => cur.ticks.saturating_sub(p.ticks) as f64 / hz,
                    };
                    let mut delta = Delta {
                        cpu_s,
                        core: processor,
                        ..Delta::default()
                    };
                    if let Some(core) = processor {
                        if core >= self.core_acc.len() && core < 4096 {
                            self.core_acc.resize(core + 1, 0.0);
                        }
                        if let Some(acc) = self.core_acc.get_mut(core) {
                            *acc += cpu_s;
                        }
                    }
                    let diff = |a: Option<u64>, b: Option<u64>| Some(b?.saturating_sub(a?));
                    delta.wait_ns = diff(p.wait_ns, cur.wait_ns);
                    delta.migrations = diff(p.migrations, cur.migrations);
                    delta.nvcsw = diff(p.nvcsw, cur.nvcsw);
                    delta.nivcsw = diff(p.nivcsw, cur.nivcsw);
                    if let Some(d) = delta.wait_ns {
                        d_wait_ns += d;
                        have_wait = true;
                    }
                    if let Some(d) = delta.migrations {
                        d_migr += d;
                        have_migr = true;
                    }
                    if let Some(d) = delta.nvcsw {
                        d_nvcsw += d;
                        have_csw = true;
                    }
                    if let Some(d) = delta.nivcsw {
                        d_nivcsw += d;
                    }
                    t.worker.delta = Some(delta);
                }
                t.prev = Some(cur);
                t.gen = gen;
            }
        }
        self.procs.retain(|_, s| s.gen == gen);
        self.threads.retain(|_, t| t.gen == gen);

        if !root_seen {
            self.alive = false;
            let pid = self.root_pid;
            let secs = t_ns as f64 / 1e9;
            notes.once("target-exited", || {
                format!("process {pid} exited (seen gone at {secs:.1} s); proc.* series stop there")
            });
            return;
        }

        self.nprocs.push(out, t_ns, nprocs as f64);
        self.nthreads.push(out, t_ns, nthreads as f64);
        self.rss.push(out, t_ns, rss_pages as f64 * self.page);
        self.fds.push(out, t_ns, fds as f64);
        self.sample_connections(dt_s, t_ns, out, notes);
        if dt_s <= 0.0 {
            return;
        }
        if have_cpu_delta {
            let pct = 100.0 / hz / dt_s;
            self.cpu_user.push(out, t_ns, d_user as f64 * pct);
            self.cpu_system.push(out, t_ns, d_system as f64 * pct);
            self.majflt.push(out, t_ns, d_majflt as f64 / dt_s);
        }
        if have_io_delta && io_available {
            self.read_bytes.push(out, t_ns, d_read as f64 / dt_s);
            self.write_bytes.push(out, t_ns, d_write as f64 / dt_s);
        }
        if have_thread_delta {
            while self.cores.len() < self.core_acc.len() {
                let n = self.cores.len();
                self.cores.push(Series::new(format!("proc.core.{n}"), "%"));
            }
            for (s, v) in self.cores.iter().zip(&self.core_acc) {
                s.push(out, t_ns, v / dt_s * 100.0);
            }
            if have_csw {
                self.nvcsw.push(out, t_ns, d_nvcsw as f64 / dt_s);
                self.nivcsw.push(out, t_ns, d_nivcsw as f64 / dt_s);
            }
            if have_migr {
                self.migrations.push(out, t_ns, d_migr as f64 / dt_s);
            }
            if have_wait {
                self.runq.push(out, t_ns, d_wait_ns as f64 / 1e6 / dt_s);
            }
            self.workers.emit(&mut self.threads, dt_s, t_ns, out, notes);
        }
    }
}

fn trim_nl(b: &[u8]) -> &[u8] {
    b.strip_suffix(b"\n").unwrap_or(b)
}

/// One process of a tree, as `process_tree` lists it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProcessInfo {
    /// Process id.
    pub pid: u32,
    /// Parent process id.
    pub ppid: u32,
    /// The kernel's command name (at most 15 bytes).
    pub comm: String,
    /// Number of threads.
    pub threads: u32,
    /// Start time in clock ticks since boot (smaller is older).
    pub start_ticks: u64,
}

fn read_info(proc_root: &Path, pid: u32) -> Option<ProcessInfo> {
    let text = std::fs::read(proc_root.join(pid.to_string()).join("stat")).ok()?;
    Some(ProcessInfo {
        pid,
        ppid: stat_field(&text, 4)? as u32,
        comm: String::from_utf8_lossy(stat_comm(&text)?).into_owned(),
        threads: stat_field(&text, 20)? as u32,
        start_ticks: stat_field(&text, 22)?,
    })
}

fn all_processes(proc_root: &Path) -> Result<Vec<ProcessInfo>, ProbeError> {
    let mut dir = NumericDir::open(proc_root).map_err(|source| ProbeError::Read {
        path: proc_root.display().to_string(),
        source,
    })?;
    let mut pids = Vec::new();
    dir.scan(&mut pids).map_err(|source| ProbeError::Read {
        path: proc_root.display().to_string(),
        source,
    })?;
    Ok(pids
        .into_iter()
        .filter_map(|p| read_info(proc_root, p))
        .collect())
}

/// Whether a process with this pid exists under `proc_root`.
pub fn process_exists(proc_root: &Path, pid: u32) -> bool {
    proc_root.join(pid.to_string()).join("stat").exists()
}

/// The process `pid` and all its descendants, root first, each after its
/// parent.
pub fn process_tree(proc_root: &Path, pid: u32) -> Result<Vec<ProcessInfo>, ProbeError> {
    let all = all_processes(proc_root)?;
    let Some(root) = all.iter().find(|p| p.pid == pid).cloned() else {
        return Err(ProbeError::NoSuchProcess {
            pid,
            path: proc_root.join(pid.to_string()).display().to_string(),
        });
    };
    let mut tree = vec![root];
    let mut i = 0;
    while i < tree.len() {
        let parent = tree[i].pid;
        for p in &all {
            if p.ppid == parent && p.pid != pid && !tree.iter().any(|t| t.pid == p.pid) {
                tree.push(p.clone());
            }
        }
        i += 1;
    }
    Ok(tree)
}

/// Like `pidof NAME`, but one answer: among processes whose command name or
/// argv[0] base name is `name`, the oldest whose parent is not itself a
/// match (the master of nginx, the parent of gunicorn workers).
pub fn pidof(proc_root: &Path, name: &str) -> Result<u32, ProbeError> {
    let own = std::process::id();
    let all = all_processes(proc_root)?;
    // The kernel truncates comm to 15 bytes.
    let short: &[u8] = &name.as_bytes()[..name.len().min(15)];
    let matches: Vec<&ProcessInfo> = all
        .iter()
        .filter(|p| p.pid != own)
        .filter(|p| {
            if p.comm.as_bytes() == short {
                return true;
            }
            let Ok(cmdline) = std::fs::read(proc_root.join(p.pid.to_string()).join("cmdline"))
            else {
                return false;
            };
            let argv0 = cmdline.split(|&c| c == 0).next().unwrap_or(&[]);
            let base = argv0.rsplit(|&c| c == b'/').next().unwrap_or(argv0);
            // nginx titles itself "nginx: master process ..." in argv[0].
            let base = base
                .split(|&c| c == b':' || c == b' ')
                .next()
                .unwrap_or(base);
            base == name.as_bytes()
        })
        .collect();
    matches
        .iter()
        .filter(|p| !matches.iter().any(|q| q.pid == p.ppid))
        .min_by_key(|p| (p.start_ticks, p.pid))
        .map(|p| p.pid)
        .ok_or_else(|| ProbeError::NoProcessNamed(name.to_string()))
}
