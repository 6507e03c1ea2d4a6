//! Host-wide series: CPU, scheduler, memory, vmstat, PSI, disks, network and
//! TCP, read from a /proc root (configurable so tests can use a fake one).

use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::procfs::{fields, lines, parse_hex, parse_u64, value_after_colon, Buf, ProcFile};
use crate::series::{Counter, Notes, Series, SeriesPoint};

/// The /proc/stat CPU columns we keep, in file order.
const CPU_COLS: [&str; 8] = [
    "user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal",
];

struct CpuSlot {
    series: [Series; 8],
    prev: Option<[u64; 8]>,
}

impl CpuSlot {
    fn new(prefix: &str) -> CpuSlot {
        CpuSlot {
            series: CPU_COLS.map(|c| Series::new(format!("{prefix}.{c}"), "%")),
            prev: None,
        }
    }

    fn update(&mut self, cur: [u64; 8], out: &mut Vec<SeriesPoint>, t_ns: u64) {
        if let Some(prev) = self.prev {
            let mut d = [0u64; 8];
            let mut total = 0u64;
            let mut backwards = false;
            for i in 0..8 {
                if cur[i] < prev[i] {
                    backwards = true;
                }
                d[i] = cur[i].saturating_sub(prev[i]);
                total += d[i];
            }
            // No ticks elapsed (sampling faster than USER_HZ) or a hot-unplug
            // reset: skip rather than emit a made-up split.
            if total > 0 && !backwards {
                for (series, d) in self.series.iter().zip(d) {
                    series.push(out, t_ns, d as f64 * 100.0 / total as f64);
                }
            }
        }
        self.prev = Some(cur);
    }
}

/// (meminfo key, series suffix); values are kB in the file, bytes in series.
const MEMINFO: [(&[u8], &str); 9] = [
    (b"MemTotal", "total"),
    (b"MemFree", "free"),
    (b"MemAvailable", "available"),
    (b"Cached", "cached"),
    (b"Active(file)", "active_file"),
    (b"Inactive(file)", "inactive_file"),
    (b"Dirty", "dirty"),
    (b"Writeback", "writeback"),
    (b"AnonPages", "anon"),
];

/// (vmstat key, index of the series it adds to). Newer kernels split some
/// counters (pgsteal by reclaimer, workingset_refault by anon/file).
const VMSTAT_KEYS: [(&[u8], usize); 14] = [
    (b"pgpgin", 0),
    (b"pgpgout", 1),
    (b"pgfault", 2),
    (b"pgmajfault", 3),
    (b"pgscan_kswapd", 4),
    (b"pgscan_direct", 5),
    (b"pgsteal_kswapd", 6),
    (b"pgsteal_direct", 6),
    (b"pgsteal_khugepaged", 6),
    (b"workingset_refault", 7),
    (b"workingset_refault_anon", 7),
    (b"workingset_refault_file", 7),
    (b"pswpin", 8),
    (b"pswpout", 9),
];
const VMSTAT_SERIES: [(&str, &str); 10] = [
    ("vm.pgpgin", "KiB/s"),
    ("vm.pgpgout", "KiB/s"),
    ("vm.pgfault", "/s"),
    ("vm.pgmajfault", "/s"),
    ("vm.pgscan_kswapd", "/s"),
    ("vm.pgscan_direct", "/s"),
    ("vm.pgsteal", "/s"),
    ("vm.workingset_refault", "/s"),
    ("vm.pswpin", "/s"),
    ("vm.pswpout", "/s"),
];

const PSI_RESOURCES: [&str; 3] = ["cpu", "memory", "io"];

/// (file, section, column, series). Counters from /proc/net/snmp and netstat.
const TCP_COUNTERS: [(usize, &[u8], &[u8], &str); 9] = [
    (0, b"Tcp:", b"RetransSegs", "tcp.retrans"),
    (0, b"Tcp:", b"ActiveOpens", "tcp.active_opens"),
    (0, b"Tcp:", b"PassiveOpens", "tcp.passive_opens"),
    (0, b"Tcp:", b"AttemptFails", "tcp.attempt_fails"),
    (0, b"Tcp:", b"EstabResets", "tcp.estab_resets"),
    (0, b"Tcp:", b"OutRsts", "tcp.out_rsts"),
    (1, b"TcpExt:", b"ListenOverflows", "tcp.listen_overflows"),
    (1, b"TcpExt:", b"ListenDrops", "tcp.listen_drops"),
    (1, b"TcpExt:", b"TCPTimeouts", "tcp.timeouts"),
];

/// /proc/net/tcp state codes 1..=12 to series (12, NEW_SYN_RECV, counts as syn_recv).
const TCP_STATES: [&str; 11] = [
    "tcp.state.estab",
    "tcp.state.syn_sent",
    "tcp.state.syn_recv",
    "tcp.state.fin_wait1",
    "tcp.state.fin_wait2",
    "tcp.state.time_wait",
    "tcp.state.close",
    "tcp.state.close_wait",
    "tcp.state.last_ack",
    "tcp.state.listen",
    "tcp.state.closing",
];

struct DiskSlot {
    dev: Box<[u8]>,
    keep: bool,
    active: bool,
    seen: bool,
    r_iops: Counter,
    w_iops: Counter,
    r_bytes: Counter,
    w_bytes: Counter,
    await_ms: Series,
    util: Series,
    prev: Option<DiskCounters>,
}

#[derive(Clone, Copy)]
struct DiskCounters {
    ios: u64,
    io_ms: u64,
    ticks_ms: u64,
}

struct NetSlot {
    iface: Box<[u8]>,
    seen: bool,
    rx_bytes: Counter,
    tx_bytes: Counter,
    rx_packets: Counter,
    tx_packets: Counter,
    drops: Counter,
    errors: Counter,
}

/// Samples host-wide files; one instance per run.
pub(crate) struct HostCollector {
    sys_root: PathBuf,
    buf: Buf,
    stat: Option<ProcFile>,
    cpus: Vec<Option<CpuSlot>>,
    cpu_all: CpuSlot,
    ctxt: Counter,
    forks: Counter,
    running: Series,
    blocked: Series,
    meminfo: Option<ProcFile>,
    mem: Vec<Series>,
    vmstat: Option<ProcFile>,
    vm: Vec<Counter>,
    psi: Vec<(usize, ProcFile, Counter, Counter, bool)>,
    diskstats: Option<ProcFile>,
    disks: Vec<DiskSlot>,
    netdev: Option<ProcFile>,
    nets: Vec<NetSlot>,
    snmp: [Option<ProcFile>; 2],
    tcp: Vec<Counter>,
    tcp_found: Vec<bool>,
    tcp_tables: Vec<ProcFile>,
    tcp_states: Vec<Series>,
    tcp_states_every: Option<Duration>,
    tcp_states_last: Option<u64>,
    /// Counting states through sock_diag works here (real /proc, netlink
    /// allowed); otherwise /proc/net/tcp{,6} are read.
    tcp_diag: bool,
    tcp_diag_buf: Vec<u8>,
    sockstat: Option<ProcFile>,
    estab: Series,
    time_wait: Series,
    orphan: Series,
    inuse: Series,
    /// Number of cores seen in /proc/stat (for per-core process series).
    pub(crate) cores: usize,
    /// Processes forked since boot, as of the last sample.
    pub(crate) forks_total: Option<u64>,
}

fn open(root: &Path, rel: &str, notes: &mut Notes, what: &str) -> Option<ProcFile> {
    let path = root.join(rel);
    match ProcFile::open(&path) {
        Ok(f) => Some(f),
        Err(e) => {
            notes.once(rel, || {
                format!("{what} left out: cannot open {}: {e}", path.display())
            });
            None
        }
    }
}

impl HostCollector {
    pub(crate) fn new(
        proc_root: &Path,
        sys_root: &Path,
        tcp_states_every: Option<Duration>,
        notes: &mut Notes,
    ) -> HostCollector {
        let tcp_states = tcp_states_every.is_some();
        let mut psi = Vec::new();
        let has_psi = proc_root.join("pressure").is_dir();
        if !has_psi {
            notes.once("pressure", || {
                format!(
                    "psi.* left out: {} is missing (kernel without CONFIG_PSI, or booted with psi=0)",
                    proc_root.join("pressure").display()
                )
            });
        }
        for (i, r) in PSI_RESOURCES.iter().enumerate().filter(|_| has_psi) {
            let rel = format!("pressure/{r}");
            if let Some(f) = open(proc_root, &rel, notes, "pressure stall (PSI) series") {
                psi.push((
                    i,
                    f,
                    Counter::new(format!("psi.{r}.some"), "%"),
                    Counter::new(format!("psi.{r}.full"), "%"),
                    false,
                ));
            }
        }
        let mut tcp_tables = Vec::new();
        if tcp_states {
            for rel in ["net/tcp", "net/tcp6"] {
                if let Some(f) = open(proc_root, rel, notes, "TCP connection states") {
                    tcp_tables.push(f);
                }
            }
        }
        HostCollector {
            sys_root: sys_root.to_path_buf(),
            buf: Buf::default(),
            stat: open(proc_root, "stat", notes, "CPU and scheduler series"),
            cpus: Vec::new(),
            cpu_all: CpuSlot::new("cpu.all"),
            ctxt: Counter::new("sched.ctxt", "/s"),
            forks: Counter::new("sched.forks", "/s"),
            running: Series::new("sched.procs_running", "count"),
            blocked: Series::new("sched.procs_blocked", "count"),
            meminfo: open(proc_root, "meminfo", notes, "memory series"),
            mem: MEMINFO
                .iter()
                .map(|(_, s)| Series::new(format!("mem.{s}"), "B"))
                .collect(),
            vmstat: open(proc_root, "vmstat", notes, "vm series"),
            vm: VMSTAT_SERIES
                .iter()
                .map(|(n, u)| Counter::new(*n, u))
                .collect(),
            psi,
            diskstats: open(proc_root, "diskstats", notes, "disk series"),
            disks: Vec::new(),
            netdev: open(proc_root, "net/dev", notes, "network interface series"),
            nets: Vec::new(),
            snmp: [
                open(proc_root, "net/snmp", notes, "TCP counters"),
                open(proc_root, "net/netstat", notes, "TCP extended counters"),
            ],
            tcp: TCP_COUNTERS
                .iter()
                .map(|(_, _, _, n)| Counter::new(*n, "/s"))
                .collect(),
            tcp_found: vec![false; TCP_COUNTERS.len()],
            tcp_states: if tcp_states {
                TCP_STATES
                    .iter()
                    .map(|n| Series::new(*n, "count"))
                    .collect()
            } else {
                Vec::new()
            },
            tcp_tables,
            tcp_states_every,
            tcp_states_last: None,
            tcp_diag: tcp_states && crate::procfs::is_procfs(proc_root),
            tcp_diag_buf: Vec::new(),
            sockstat: open(
                proc_root,
                "net/sockstat",
                notes,
                "tcp.time_wait, tcp.orphan and tcp.inuse",
            ),
            estab: Series::new("tcp.estab", "count"),
            time_wait: Series::new("tcp.time_wait", "count"),
            orphan: Series::new("tcp.orphan", "count"),
            inuse: Series::new("tcp.inuse", "count"),
            cores: 0,
            forks_total: None,
        }
    }

    pub(crate) fn sample(
        &mut self,
        dt_s: f64,
        t_ns: u64,
        first: bool,
        out: &mut Vec<SeriesPoint>,
        notes: &mut Notes,
    ) {
        self.sample_stat(dt_s, t_ns, out, notes);
        self.sample_meminfo(t_ns, first, out, notes);
        self.sample_vmstat(dt_s, t_ns, first, out, notes);
        self.sample_psi(dt_s, t_ns, first, out, notes);
        self.sample_disks(dt_s, t_ns, out, notes);
        self.sample_net(dt_s, t_ns, out, notes);
        self.sample_tcp(dt_s, t_ns, first, out, notes);
    }

    fn read(file: &Option<ProcFile>, buf: &mut Buf, notes: &mut Notes, rel: &str) -> bool {
        let Some(f) = file else { return false };
        match f.read(buf) {
            Ok(()) => true,
            Err(e) => {
                notes.once(rel, || {
                    format!("reading /proc/{rel} failed, series from it have gaps: {e}")
                });
                false
            }
        }
    }

    fn sample_stat(&mut self, dt_s: f64, t_ns: u64, out: &mut Vec<SeriesPoint>, notes: &mut Notes) {
        if !Self::read(&self.stat, &mut self.buf, notes, "stat") {
            return;
        }
        let mut cores = 0usize;
        for line in lines(self.buf.bytes()) {
            let mut f = fields(line);
            let Some(key) = f.next() else { continue };
            if let Some(rest) = key.strip_prefix(b"cpu") {
                let mut vals = [0u64; 8];
                for v in vals.iter_mut() {
                    *v = f.next().and_then(parse_u64).unwrap_or(0);
                }
                if rest.is_empty() {
                    self.cpu_all.update(vals, out, t_ns);
                } else if let Some(n) = parse_u64(rest).and_then(|n| usize::try_from(n).ok()) {
                    if n >= 4096 {
                        continue;
                    }
                    if self.cpus.len() <= n {
                        self.cpus.resize_with(n + 1, || None);
                    }
                    let slot =
                        self.cpus[n].get_or_insert_with(|| CpuSlot::new(&format!("cpu.{n}")));
                    slot.update(vals, out, t_ns);
                    cores = cores.max(n + 1);
                }
                continue;
            }
            let v = f.next().and_then(parse_u64);
            let Some(v) = v else { continue };
            match key {
                b"ctxt" => self.ctxt.update(v, dt_s, 1.0, out, t_ns),
                b"processes" => {
                    self.forks_total = Some(v);
                    self.forks.update(v, dt_s, 1.0, out, t_ns)
                }
                b"procs_running" => self.running.push(out, t_ns, v as f64),
                b"procs_blocked" => self.blocked.push(out, t_ns, v as f64),
                _ => {}
            }
        }
        self.cores = self.cores.max(cores);
    }

    fn sample_meminfo(
        &mut self,
        t_ns: u64,
        first: bool,
        out: &mut Vec<SeriesPoint>,
        notes: &mut Notes,
    ) {
        if !Self::read(&self.meminfo, &mut self.buf, notes, "meminfo") {
            return;
        }
        let mut found = [false; MEMINFO.len()];
        for line in lines(self.buf.bytes()) {
            let Some(colon) = line.iter().position(|&c| c == b':') else {
                continue;
            };
            let key = &line[..colon];
            if let Some(i) = MEMINFO.iter().position(|(k, _)| *k == key) {
                if let Some(v) = value_after_colon(line).and_then(parse_u64) {
                    self.mem[i].push(out, t_ns, v as f64 * 1024.0);
                    found[i] = true;
                }
            }
        }
        if first {
            for (i, ok) in found.iter().enumerate() {
                if !ok {
                    let key = String::from_utf8_lossy(MEMINFO[i].0).into_owned();
                    let series = self.mem[i].name.clone();
                    notes.once(&format!("meminfo:{key}"), || {
                        format!("{series} left out: /proc/meminfo has no {key}")
                    });
                }
            }
        }
    }

    fn sample_vmstat(
        &mut self,
        dt_s: f64,
        t_ns: u64,
        first: bool,
        out: &mut Vec<SeriesPoint>,
        notes: &mut Notes,
    ) {
        if !Self::read(&self.vmstat, &mut self.buf, notes, "vmstat") {
            return;
        }
        let mut sums = [0u64; VMSTAT_SERIES.len()];
        let mut found = [false; VMSTAT_SERIES.len()];
        let mut split_refault = false;
        for line in lines(self.buf.bytes()) {
            let mut f = fields(line);
            let (Some(key), Some(v)) = (f.next(), f.next()) else {
                continue;
            };
            if let Some(&(k, i)) = VMSTAT_KEYS.iter().find(|(k, _)| *k == key) {
                if let Some(v) = parse_u64(v) {
                    if k.starts_with(b"workingset_refault_") {
                        split_refault = true;
                    }
                    // Some kernels show both the total and the split refault
                    // counters; the split ones are then the source of truth.
                    if k == b"workingset_refault" && split_refault {
                        continue;
                    }
                    sums[i] = sums[i].saturating_add(v);
                    found[i] = true;
                }
            }
        }
        for i in 0..VMSTAT_SERIES.len() {
            if found[i] {
                self.vm[i].update(sums[i], dt_s, 1.0, out, t_ns);
            } else if first {
                let name = VMSTAT_SERIES[i].0;
                notes.once(name, || {
                    format!("{name} left out: /proc/vmstat has no such counter")
                });
            }
        }
    }

    fn sample_psi(
        &mut self,
        dt_s: f64,
        t_ns: u64,
        first: bool,
        out: &mut Vec<SeriesPoint>,
        notes: &mut Notes,
    ) {
        for (res, file, some, full, _) in self.psi.iter_mut() {
            if file.read(&mut self.buf).is_err() {
                continue;
            }
            let mut got_full = false;
            for line in lines(self.buf.bytes()) {
                let mut f = fields(line);
                let Some(kind) = f.next() else { continue };
                let total = f
                    .find_map(|x| x.strip_prefix(b"total="))
                    .and_then(parse_u64);
                let Some(total) = total else { continue };
                // total is microseconds stalled; per second of wall time that
                // is a share of the interval: 1e6 us/s = 100%.
                match kind {
                    b"some" => some.update(total, dt_s, 1e-4, out, t_ns),
                    b"full" => {
                        got_full = true;
                        full.update(total, dt_s, 1e-4, out, t_ns)
                    }
                    _ => {}
                }
            }
            if first && !got_full {
                let r = PSI_RESOURCES[*res];
                notes.once(&format!("psi.{r}.full"), || {
                    format!("psi.{r}.full left out: /proc/pressure/{r} has no 'full' line")
                });
            }
        }
    }

    fn sample_disks(
        &mut self,
        dt_s: f64,
        t_ns: u64,
        out: &mut Vec<SeriesPoint>,
        notes: &mut Notes,
    ) {
        if !Self::read(&self.diskstats, &mut self.buf, notes, "diskstats") {
            return;
        }
        for d in self.disks.iter_mut() {
            d.seen = false;
        }
        for line in lines(self.buf.bytes()) {
            let mut f = fields(line);
            let (Some(_major), Some(_minor), Some(dev)) = (f.next(), f.next(), f.next()) else {
                continue;
            };
            let mut v = [0u64; 11];
            if parse_into(f, &mut v) < 11 {
                continue;
            }
            let idx = match self.disks.iter().position(|d| &*d.dev == dev) {
                Some(i) => i,
                None => {
                    let name = sanitize(dev);
                    // Whole disks only (partitions would double count), and no
                    // loop or RAM disks, which only add noise to a web run.
                    let sys_block = self.sys_root.join("block");
                    let keep = !(dev.starts_with(b"loop") || dev.starts_with(b"ram"))
                        && (!sys_block.is_dir()
                            || sys_block
                                .join(String::from_utf8_lossy(dev).as_ref())
                                .exists());
                    let p = format!("disk.{name}");
                    self.disks.push(DiskSlot {
                        dev: dev.into(),
                        keep,
                        active: false,
                        seen: false,
                        r_iops: Counter::new(format!("{p}.r_iops"), "/s"),
                        w_iops: Counter::new(format!("{p}.w_iops"), "/s"),
                        r_bytes: Counter::new(format!("{p}.r_bytes"), "B/s"),
                        w_bytes: Counter::new(format!("{p}.w_bytes"), "B/s"),
                        await_ms: Series::new(format!("{p}.await_ms"), "ms"),
                        util: Series::new(format!("{p}.util"), "%"),
                        prev: None,
                    });
                    self.disks.len() - 1
                }
            };
            let d = &mut self.disks[idx];
            d.seen = true;
            if !d.keep {
                continue;
            }
            // reads, reads merged, sectors read, ms reading, writes, writes
            // merged, sectors written, ms writing, in flight, ms doing I/O, weighted ms.
            let (reads, rsect, rms, writes, wsect, wms, ticks) =
                (v[0], v[2], v[3], v[4], v[6], v[7], v[9]);
            if !d.active && reads == 0 && writes == 0 {
                continue;
            }
            d.active = true;
            d.r_iops.update(reads, dt_s, 1.0, out, t_ns);
            d.w_iops.update(writes, dt_s, 1.0, out, t_ns);
            d.r_bytes.update(rsect, dt_s, 512.0, out, t_ns);
            d.w_bytes.update(wsect, dt_s, 512.0, out, t_ns);
            let cur = DiskCounters {
                ios: reads + writes,
                io_ms: rms + wms,
                ticks_ms: ticks,
            };
            if let Some(p) = d.prev {
                if cur.ios >= p.ios
                    && cur.io_ms >= p.io_ms
                    && cur.ticks_ms >= p.ticks_ms
                    && dt_s > 0.0
                {
                    let dios = cur.ios - p.ios;
                    let await_ms = if dios == 0 {
                        0.0
                    } else {
                        (cur.io_ms - p.io_ms) as f64 / dios as f64
                    };
                    d.await_ms.push(out, t_ns, await_ms);
                    let util =
                        ((cur.ticks_ms - p.ticks_ms) as f64 / (dt_s * 1000.0) * 100.0).min(100.0);
                    d.util.push(out, t_ns, util);
                }
            }
            d.prev = Some(cur);
        }
        self.disks.retain(|d| d.seen);
    }

    fn sample_net(&mut self, dt_s: f64, t_ns: u64, out: &mut Vec<SeriesPoint>, notes: &mut Notes) {
        if !Self::read(&self.netdev, &mut self.buf, notes, "net/dev") {
            return;
        }
        for n in self.nets.iter_mut() {
            n.seen = false;
        }
        for line in lines(self.buf.bytes()) {
            let Some(colon) = line.iter().position(|&c| c == b':') else {
                continue;
            };
            let iface = trim(&line[..colon]);
            if iface.is_empty() || iface.contains(&b'|') {
                continue;
            }
            let mut v = [0u64; 16];
            if parse_into(fields(&line[colon + 1..]), &mut v) < 12 {
                continue;
            }
            let idx = match self.nets.iter().position(|s| &*s.iface == iface) {
                Some(i) => i,
                None => {
                    let p = format!("net.{}", sanitize(iface));
                    self.nets.push(NetSlot {
                        iface: iface.into(),
                        seen: false,
                        rx_bytes: Counter::new(format!("{p}.rx_bytes"), "B/s"),
                        tx_bytes: Counter::new(format!("{p}.tx_bytes"), "B/s"),
                        rx_packets: Counter::new(format!("{p}.rx_packets"), "/s"),
                        tx_packets: Counter::new(format!("{p}.tx_packets"), "/s"),
                        drops: Counter::new(format!("{p}.drops"), "/s"),
                        errors: Counter::new(format!("{p}.errors"), "/s"),
                    });
                    self.nets.len() - 1
                }
            };
            let s = &mut self.nets[idx];
            s.seen = true;
            s.rx_bytes.update(v[0], dt_s, 1.0, out, t_ns);
            s.rx_packets.update(v[1], dt_s, 1.0, out, t_ns);
            s.tx_bytes.update(v[8], dt_s, 1.0, out, t_ns);
            s.tx_packets.update(v[9], dt_s, 1.0, out, t_ns);
            s.errors.update(v[2] + v[10], dt_s, 1.0, out, t_ns);
            s.drops.update(v[3] + v[11], dt_s, 1.0, out, t_ns);
        }
        self.nets.retain(|n| n.seen);
    }

    fn sample_tcp(
        &mut self,
        dt_s: f64,
        t_ns: u64,
        first: bool,
        out: &mut Vec<SeriesPoint>,
        notes: &mut Notes,
    ) {
        for file in 0..2 {
            let rel = if file == 0 { "net/snmp" } else { "net/netstat" };
            if !Self::read(&self.snmp[file], &mut self.buf, notes, rel) {
                continue;
            }
            // Each section is a header line of names and a line of values.
            let mut it = lines(self.buf.bytes());
            while let Some(header) = it.next() {
                let Some(values) = it.next() else { break };
                let mut hf = fields(header);
                let mut vf = fields(values);
                let (Some(section), Some(_)) = (hf.next(), vf.next()) else {
                    continue;
                };
                if !TCP_COUNTERS.iter().any(|c| c.0 == file && c.1 == section) {
                    continue;
                }
                for (name, value) in hf.zip(vf) {
                    // CurrEstab is a gauge (ESTABLISHED + CLOSE_WAIT), not a counter.
                    if name == b"CurrEstab" {
                        if let Some(v) = parse_u64(value) {
                            self.estab.push(out, t_ns, v as f64);
                        }
                        continue;
                    }
                    if let Some(i) = TCP_COUNTERS
                        .iter()
                        .position(|c| c.0 == file && c.1 == section && c.2 == name)
                    {
                        if let Some(v) = parse_u64(value) {
                            self.tcp[i].update(v, dt_s, 1.0, out, t_ns);
                            self.tcp_found[i] = true;
                        }
                    }
                }
            }
        }
        if first {
            for (i, c) in TCP_COUNTERS.iter().enumerate() {
                if !self.tcp_found[i] {
                    let file = if c.0 == 0 { "net/snmp" } else { "net/netstat" };
                    let col = String::from_utf8_lossy(c.2).into_owned();
                    notes.once(c.3, || {
                        format!("{} left out: /proc/{file} has no {col}", c.3)
                    });
                }
            }
        }
        if Self::read(&self.sockstat, &mut self.buf, notes, "net/sockstat") {
            for line in lines(self.buf.bytes()) {
                let Some(rest) = line.strip_prefix(b"TCP:") else {
                    continue;
                };
                let mut f = fields(rest);
                while let (Some(k), Some(v)) = (f.next(), f.next()) {
                    let Some(v) = parse_u64(v) else { continue };
                    match k {
                        b"inuse" => self.inuse.push(out, t_ns, v as f64),
                        b"orphan" => self.orphan.push(out, t_ns, v as f64),
                        b"tw" => self.time_wait.push(out, t_ns, v as f64),
                        _ => {}
                    }
                }
            }
        }
        // /proc/net/tcp walks the whole established hash table (sized by
        // RAM, not by socket count): milliseconds per read, so it is read on
        // its own, slower cadence.
        let Some(every) = self.tcp_states_every else {
            return;
        };
        if self.tcp_tables.is_empty() && !self.tcp_diag {
            return;
        }
        let every_ns = u64::try_from(every.as_nanos()).unwrap_or(u64::MAX);
        if let Some(last) = self.tcp_states_last {
            if t_ns.saturating_sub(last) < every_ns {
                return;
            }
        }
        self.tcp_states_last = Some(t_ns);
        let mut counts = [0u64; 11];
        if self.tcp_diag {
            let mut by_state = [0u64; 12];
            match crate::sockdiag::tcp_states(&mut by_state, &mut self.tcp_diag_buf) {
                Ok(()) => {
                    counts.copy_from_slice(&by_state[..11]);
                    // NEW_SYN_RECV (a request socket) is a connection in SYN_RECV.
                    counts[2] += by_state[11];
                    for (s, c) in self.tcp_states.iter().zip(counts) {
                        s.push(out, t_ns, c as f64);
                    }
                    return;
                }
                // Not allowed here (a sandbox): /proc's tables from now on.
                Err(_) => self.tcp_diag = false,
            }
        }
        for f in &self.tcp_tables {
            if f.read(&mut self.buf).is_err() {
                continue;
            }
            for line in lines(self.buf.bytes()).skip(1) {
                let Some(st) = fields(line).nth(3).and_then(parse_hex) else {
                    continue;
                };
                let i = match st {
                    1..=11 => st as usize - 1,
                    12 => 2,
                    _ => continue,
                };
                counts[i] += 1;
            }
        }
        for (s, c) in self.tcp_states.iter().zip(counts) {
            s.push(out, t_ns, c as f64);
        }
    }
}

/// Fills `out` from leading numeric fields; returns how many were numbers.
fn parse_into<'a>(fields: impl Iterator<Item = &'a [u8]>, out: &mut [u64]) -> usize {
    let mut n = 0;
    for (slot, x) in out.iter_mut().zip(fields) {
        match parse_u64(x) {
            Some(x) => {
                *slot = x;
                n += 1;
            }
            None => break,
        }
    }
    n
}

fn trim(b: &[u8]) -> &[u8] {
    let start = b
        .iter()
        .position(|c| !c.is_ascii_whitespace())
        .unwrap_or(b.len());
    let end = b
        .iter()
        .rposition(|c| !c.is_ascii_whitespace())
        .map_or(start, |e| e + 1);
    &b[start..end]
}

/// Series names are dot-separated: a device or interface name must not add
/// levels of its own.
pub(crate) fn sanitize(b: &[u8]) -> String {
    String::from_utf8_lossy(b)
        .chars()
        .map(|c| {
            if c == '.' || c == '/' || c.is_whitespace() {
                '_'
            } else {
                c
            }
        })
        .collect()
}
