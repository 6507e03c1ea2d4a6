//! Outbound TCP connects of every process on the host, from the kernel's
//! `sock:inet_sock_set_state` tracepoint: a socket entering SYN_SENT is a
//! connect, and the event fires in the connecting task's own context, so it
//! carries that task's pid.
//!
//! sock_diag alone learns that a process talks to a backend only from a
//! socket that is alive in the dump *and* listed among the process's
//! descriptors. On loopback a per-request backend connection lives well
//! under a millisecond, less than the gap between those two reads: node-bff
//! without keep-alive opened ~1,500 backend connections a second while
//! `proc.tcp_connected` stayed 0 (2026-11-24, 1 of 2 runs on a quiet host).
//! The tracepoint sees every connect, however short; the connections are
//! still counted from sock_diag, which also says who closed them.

use std::ffi::CString;
use std::fmt;
use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{fence, Ordering};

use crate::sockdiag::Endpoint;

/// Where tracefs is found, newest place first.
const TRACEFS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];
/// The tracepoint under tracefs's `events/`.
const EVENT: &str = "sock/inet_sock_set_state";
/// `TCP_SYN_SENT`: the state a socket enters in connect().
const TCP_SYN_SENT: u64 = 2;
const IPPROTO_TCP: u64 = 6;
const AF_INET: u64 = 2;
const AF_INET6: u64 = 10;

/// `PERF_TYPE_TRACEPOINT`.
const PERF_TYPE_TRACEPOINT: u32 = 2;
/// `PERF_SAMPLE_TID | PERF_SAMPLE_RAW`.
const SAMPLE_TYPE: u64 = (1 << 1) | (1 << 10);
/// `PERF_ATTR_SIZE_VER0`: the fields this watch sets are all in it.
const ATTR_SIZE: usize = 64;
/// `PERF_FLAG_FD_CLOEXEC`.
const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 8;
/// `PERF_EVENT_IOC_SET_FILTER`: `_IOW('$', 6, char *)`.
const PERF_EVENT_IOC_SET_FILTER: libc::c_ulong = 0x4008_2406;
/// `PERF_RECORD_SAMPLE`.
const PERF_RECORD_SAMPLE: u32 = 9;
/// Data pages of each CPU's ring (a power of two): 64 KiB holds ~600
/// connects, more than a 200-ms sample sees from most servers; a lost
/// record only delays learning a backend until the next connect to it.
const RING_DATA_PAGES: usize = 16;
/// Offsets in `struct perf_event_mmap_page`.
const DATA_HEAD: usize = 1024;
const DATA_TAIL: usize = 1032;
const DATA_OFFSET: usize = 1040;
const DATA_SIZE: usize = 1048;

/// Why the connects cannot be watched.
#[derive(Debug)]
pub(crate) struct Unavailable(String);

impl fmt::Display for Unavailable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// Byte offsets of the tracepoint's fields in its raw record, from the
/// event's `format` file (they differ between kernels).
#[derive(Clone, Copy, Debug, PartialEq)]
struct Fields {
    newstate: (usize, usize),
    dport: (usize, usize),
    family: (usize, usize),
    protocol: Option<(usize, usize)>,
    daddr: usize,
    daddr_v6: usize,
}

impl Fields {
    /// Reads `field:TYPE NAME;\toffset:N;\tsize:M;` lines.
    fn parse(format: &str) -> Option<Fields> {
        let get = |want: &str| -> Option<(usize, usize)> {
            format.lines().find_map(|line| {
                let decl = line.trim().strip_prefix("field:")?;
                let (decl, rest) = decl.split_once(';')?;
                let name = decl.rsplit(' ').next()?;
                let name = name.split('[').next()?;
                if name != want {
                    return None;
                }
                let num = |key: &str| -> Option<usize> {
                    let at = rest.find(key)? + key.len();
                    rest[at..].split(';').next()?.trim().parse().ok()
                };
                Some((num("offset:")?, num("size:")?))
            })
        };
        let daddr = get("daddr")?;
        let daddr_v6 = get("daddr_v6")?;
        if daddr.1 != 4 || daddr_v6.1 != 16 {
            return None;
        }
        Some(Fields {
            newstate: get("newstate")?,
            dport: get("dport")?,
            family: get("family")?,
            protocol: get("protocol"),
            daddr: daddr.0,
            daddr_v6: daddr_v6.0,
        })
    }

    /// The destination of a connect, or None for another transition, a
    /// protocol other than TCP or a record too short for the format.
    fn connect_destination(&self, raw: &[u8]) -> Option<Endpoint> {
        let uint = |(at, size): (usize, usize)| -> Option<u64> {
            let b = raw.get(at..at.checked_add(size)?)?;
            Some(match size {
                1 => u64::from(b[0]),
                2 => u64::from(u16::from_ne_bytes([b[0], b[1]])),
                4 => u64::from(u32::from_ne_bytes([b[0], b[1], b[2], b[3]])),
                _ => return None,
            })
        };
        if uint(self.newstate)? != TCP_SYN_SENT {
            return None;
        }
        if let Some(p) = self.protocol {
            if uint(p)? != IPPROTO_TCP {
                return None;
            }
        }
        let family = uint(self.family)?;
        let mut addr = [0u8; 16];
        match family {
            AF_INET => addr[..4].copy_from_slice(raw.get(self.daddr..self.daddr + 4)?),
            AF_INET6 => addr.copy_from_slice(raw.get(self.daddr_v6..self.daddr_v6 + 16)?),
            _ => return None,
        }
        Some(Endpoint {
            family: family as u8,
            addr,
            // The tracepoint stores ports in host order (ntohs).
            port: uint(self.dport)? as u16,
        })
    }
}

/// One CPU's event and its ring buffer.
struct Ring {
    fd: libc::c_int,
    base: *mut u8,
    len: usize,
    data_offset: usize,
    data_size: usize,
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: base/len are the mapping made in `Ring::open` and fd its
        // event; neither is used after this.
        unsafe {
            libc::munmap(self.base.cast(), self.len);
            libc::close(self.fd);
        }
    }
}

impl Ring {
    fn open(id: u64, cpu: i32, filter: &CString) -> io::Result<Ring> {
        let mut attr = [0u8; ATTR_SIZE];
        attr[0..4].copy_from_slice(&PERF_TYPE_TRACEPOINT.to_ne_bytes());
        attr[4..8].copy_from_slice(&(ATTR_SIZE as u32).to_ne_bytes());
        attr[8..16].copy_from_slice(&id.to_ne_bytes());
        // sample_period 1: every event is a record.
        attr[16..24].copy_from_slice(&1u64.to_ne_bytes());
        attr[24..32].copy_from_slice(&SAMPLE_TYPE.to_ne_bytes());
        // Flags (offset 40) all clear: enabled at once, kernel events kept.
        // SAFETY: attr is a valid perf_event_attr of the size it declares.
        let fd = unsafe {
            libc::syscall(
                libc::SYS_perf_event_open,
                attr.as_ptr(),
                -1 as libc::pid_t,
                cpu,
                -1 as libc::c_int,
                PERF_FLAG_FD_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = fd as libc::c_int;
        // Without the filter every state change of every TCP socket is a
        // record; the records are checked anyway, so a kernel refusing it
        // costs only ring space.
        // SAFETY: fd is the event just opened and filter a C string.
        unsafe { libc::ioctl(fd, PERF_EVENT_IOC_SET_FILTER as _, filter.as_ptr()) };
        let page = crate::procfs::page_size() as usize;
        let len = page * (1 + RING_DATA_PAGES);
        // SAFETY: mapping the event's ring as perf_event_open(2) documents.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                fd,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            let e = io::Error::last_os_error();
            // SAFETY: fd is ours and not used after.
            unsafe { libc::close(fd) };
            return Err(e);
        }
        let base = base.cast::<u8>();
        // SAFETY: the metadata page is mapped; kernels before 4.1 leave
        // data_offset/data_size 0, and the data then follows the first page.
        let (off, size) = unsafe {
            (
                std::ptr::read_volatile(base.add(DATA_OFFSET).cast::<u64>()) as usize,
                std::ptr::read_volatile(base.add(DATA_SIZE).cast::<u64>()) as usize,
            )
        };
        let (data_offset, data_size) = if off == 0 || size == 0 || off + size > len {
            (page, len - page)
        } else {
            (off, size)
        };
        Ok(Ring {
            fd,
            base,
            len,
            data_offset,
            data_size,
        })
    }

    /// Passes each sample record's bytes after its header to `f`, and
    /// frees the ring's space.
    fn drain(&mut self, record: &mut Vec<u8>, mut f: impl FnMut(&[u8])) {
        // SAFETY: head is written by the kernel; the acquire fence orders
        // the data reads after it, as perf_event_open(2) prescribes.
        let head = unsafe { std::ptr::read_volatile(self.base.add(DATA_HEAD).cast::<u64>()) };
        fence(Ordering::Acquire);
        // SAFETY: tail is ours to write and read.
        let mut tail = unsafe { std::ptr::read_volatile(self.base.add(DATA_TAIL).cast::<u64>()) };
        let size = self.data_size as u64;
        // SAFETY: the data area is mapped for the watch's life; the kernel
        // writes only past `head`, which this drain does not read.
        let data =
            unsafe { std::slice::from_raw_parts(self.base.add(self.data_offset), self.data_size) };
        while tail < head {
            // A record may wrap around the ring's end: at most two pieces.
            let copy = |at: u64, out: &mut Vec<u8>, n: usize| {
                out.clear();
                let start = (at % size) as usize;
                let first = n.min(data.len() - start);
                out.extend_from_slice(&data[start..start + first]);
                out.extend_from_slice(&data[..n - first]);
            };
            copy(tail, record, 8);
            let kind = u32::from_ne_bytes([record[0], record[1], record[2], record[3]]);
            let len = u64::from(u16::from_ne_bytes([record[6], record[7]]));
            if len < 8 || tail + len > head {
                // A corrupt header: drop what is left rather than loop.
                tail = head;
                break;
            }
            if kind == PERF_RECORD_SAMPLE {
                copy(tail + 8, record, (len - 8) as usize);
                f(record);
            }
            tail += len;
        }
        fence(Ordering::Release);
        // SAFETY: as above.
        unsafe { std::ptr::write_volatile(self.base.add(DATA_TAIL).cast::<u64>(), tail) };
    }
}

/// Every CPU's connect events, drained at each sample.
pub(crate) struct ConnectWatch {
    rings: Vec<Ring>,
    fields: Fields,
    record: Vec<u8>,
}

// SAFETY: the rings' mappings are owned by the watch alone.
unsafe impl Send for ConnectWatch {}

impl ConnectWatch {
    /// Opens the tracepoint on every online CPU; mounts tracefs first when
    /// no tracefs is mounted, as perf does.
    pub(crate) fn open() -> Result<ConnectWatch, Unavailable> {
        let dir = match tracepoint_dir() {
            Some(d) => d,
            None => {
                mount_tracefs();
                tracepoint_dir().ok_or_else(|| {
                    Unavailable(format!(
                        "no {EVENT} tracepoint under {} (tracefs not mounted, or not root)",
                        TRACEFS.join(" or ")
                    ))
                })?
            }
        };
        let read = |name: &str| {
            std::fs::read_to_string(dir.join(name))
                .map_err(|e| Unavailable(format!("{}: {e}", dir.join(name).display())))
        };
        let id: u64 = read("id")?.trim().parse().map_err(|_| {
            Unavailable(format!("{}: not a tracepoint id", dir.join("id").display()))
        })?;
        let fields = Fields::parse(&read("format")?).ok_or_else(|| {
            Unavailable(format!(
                "{}: fields newstate, dport, family, daddr, daddr_v6 not as expected",
                dir.join("format").display()
            ))
        })?;
        let filter = CString::new(format!("newstate == {TCP_SYN_SENT}"))
            .map_err(|e| Unavailable(e.to_string()))?;
        let mut rings = Vec::new();
        for cpu in online_cpus() {
            let ring = Ring::open(id, cpu, &filter).map_err(|e| {
                Unavailable(format!("perf_event_open of {EVENT} on CPU {cpu}: {e}"))
            })?;
            rings.push(ring);
        }
        if rings.is_empty() {
            return Err(Unavailable("no online CPU listed".into()));
        }
        Ok(ConnectWatch {
            rings,
            fields,
            record: Vec::new(),
        })
    }

    /// Calls `f(pid, destination)` for each connect since the last call.
    pub(crate) fn drain(&mut self, mut f: impl FnMut(u32, Endpoint)) {
        let fields = self.fields;
        for ring in &mut self.rings {
            ring.drain(&mut self.record, |r| {
                if let Some((pid, dst)) = sample_connect(&fields, r) {
                    f(pid, dst);
                }
            });
        }
    }
}

/// A sample record's body (after the 8-byte header) as PERF_SAMPLE_TID |
/// PERF_SAMPLE_RAW lays it out: pid, tid, the raw size, the raw record.
fn sample_connect(fields: &Fields, body: &[u8]) -> Option<(u32, Endpoint)> {
    let word = |at: usize| -> Option<u32> {
        let b = body.get(at..at + 4)?;
        Some(u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
    };
    let pid = word(0)?;
    let raw_len = word(8)? as usize;
    let raw = body.get(12..12usize.checked_add(raw_len)?)?;
    Some((pid, fields.connect_destination(raw)?))
}

fn tracepoint_dir() -> Option<PathBuf> {
    TRACEFS
        .iter()
        .map(|t| Path::new(t).join("events").join(EVENT))
        .find(|d| d.join("id").is_file())
}

/// Mounts tracefs at its usual place if nothing is mounted there; fails
/// quietly (not root, no such filesystem): the caller then reports the
/// tracepoint missing.
fn mount_tracefs() {
    let target = Path::new(TRACEFS[0]);
    if !target.is_dir() || target.join("events").exists() {
        return;
    }
    // SAFETY: constant C strings; a failed mount changes nothing.
    unsafe {
        libc::mount(
            c"nodev".as_ptr(),
            c"/sys/kernel/tracing".as_ptr(),
            c"tracefs".as_ptr(),
            0,
            std::ptr::null(),
        );
    }
}

/// CPU numbers from /sys/devices/system/cpu/online ("0-3,5"), or all the
/// configured ones when it cannot be read.
fn online_cpus() -> Vec<i32> {
    if let Ok(s) = std::fs::read_to_string("/sys/devices/system/cpu/online") {
        if let Some(v) = parse_cpu_list(&s) {
            return v;
        }
    }
    // SAFETY: sysconf has no preconditions.
    let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_CONF) }.max(1);
    (0..n as i32).collect()
}

fn parse_cpu_list(s: &str) -> Option<Vec<i32>> {
    let mut v = Vec::new();
    for part in s.trim().split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                let (a, b): (i32, i32) = (a.parse().ok()?, b.parse().ok()?);
                if b < a || b - a > 65536 {
                    return None;
                }
                v.extend(a..=b);
            }
            None => v.push(part.parse().ok()?),
        }
    }
    (!v.is_empty()).then_some(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The format file of this event on Linux 6.18 (kernel output).
    const FORMAT: &str = "name: inet_sock_set_state
ID: 2287
format:
\tfield:unsigned short common_type;\toffset:0;\tsize:2;\tsigned:0;
\tfield:unsigned char common_flags;\toffset:2;\tsize:1;\tsigned:0;
\tfield:unsigned char common_preempt_count;\toffset:3;\tsize:1;\tsigned:0;
\tfield:int common_pid;\toffset:4;\tsize:4;\tsigned:1;

\tfield:const void * skaddr;\toffset:8;\tsize:8;\tsigned:0;
\tfield:int oldstate;\toffset:16;\tsize:4;\tsigned:1;
\tfield:int newstate;\toffset:20;\tsize:4;\tsigned:1;
\tfield:__u16 sport;\toffset:24;\tsize:2;\tsigned:0;
\tfield:__u16 dport;\toffset:26;\tsize:2;\tsigned:0;
\tfield:__u16 family;\toffset:28;\tsize:2;\tsigned:0;
\tfield:__u16 protocol;\toffset:30;\tsize:2;\tsigned:0;
\tfield:__u8 saddr[4];\toffset:32;\tsize:4;\tsigned:0;
\tfield:__u8 daddr[4];\toffset:36;\tsize:4;\tsigned:0;
\tfield:__u8 saddr_v6[16];\toffset:40;\tsize:16;\tsigned:0;
\tfield:__u8 daddr_v6[16];\toffset:56;\tsize:16;\tsigned:0;

print fmt: \"family=%s ...\"
";

    fn raw(newstate: i32, family: u16, protocol: u16, dport: u16) -> Vec<u8> {
        let mut r = vec![0u8; 72];
        r[20..24].copy_from_slice(&newstate.to_ne_bytes());
        r[26..28].copy_from_slice(&dport.to_ne_bytes());
        r[28..30].copy_from_slice(&family.to_ne_bytes());
        r[30..32].copy_from_slice(&protocol.to_ne_bytes());
        r[36..40].copy_from_slice(&[127, 0, 0, 1]);
        r[56..72].copy_from_slice(&[0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1]);
        r
    }

    #[test]
    fn reads_the_field_offsets_of_the_format_file() {
        let f = Fields::parse(FORMAT).unwrap();
        assert_eq!(f.newstate, (20, 4));
        assert_eq!(f.dport, (26, 2));
        assert_eq!(f.protocol, Some((30, 2)));
        assert_eq!((f.daddr, f.daddr_v6), (36, 56));
        assert_eq!(
            Fields::parse("format:\n\tfield:int newstate;\toffset:20;\tsize:4;"),
            None
        );
    }

    #[test]
    fn only_a_tcp_socket_entering_syn_sent_is_a_connect() {
        let f = Fields::parse(FORMAT).unwrap();
        let v4 = f.connect_destination(&raw(2, 2, 6, 8081)).unwrap();
        assert_eq!(
            (v4.family, v4.port, &v4.addr[..5]),
            (2, 8081, &[127, 0, 0, 1, 0][..])
        );
        let v6 = f.connect_destination(&raw(2, 10, 6, 443)).unwrap();
        assert_eq!((v6.family, v6.addr[15], v6.addr[0]), (10, 1, 0));
        // ESTABLISHED, SCTP, a unix family, a truncated record: not connects.
        assert!(f.connect_destination(&raw(1, 2, 6, 80)).is_none());
        assert!(f.connect_destination(&raw(2, 2, 132, 80)).is_none());
        assert!(f.connect_destination(&raw(2, 1, 6, 80)).is_none());
        assert!(f.connect_destination(&raw(2, 2, 6, 80)[..38]).is_none());
    }

    #[test]
    fn a_sample_body_gives_the_pid_and_the_raw_record() {
        let f = Fields::parse(FORMAT).unwrap();
        let r = raw(2, 2, 6, 9000);
        let mut body = Vec::new();
        body.extend_from_slice(&4242u32.to_ne_bytes());
        body.extend_from_slice(&4243u32.to_ne_bytes());
        body.extend_from_slice(&(r.len() as u32).to_ne_bytes());
        body.extend_from_slice(&r);
        let (pid, dst) = sample_connect(&f, &body).unwrap();
        assert_eq!((pid, dst.port), (4242, 9000));
        // A raw size beyond the record is refused, not read past.
        body[8..12].copy_from_slice(&1000u32.to_ne_bytes());
        assert!(sample_connect(&f, &body).is_none());
    }

    #[test]
    fn cpu_lists() {
        assert_eq!(parse_cpu_list("0-1\n"), Some(vec![0, 1]));
        assert_eq!(parse_cpu_list("0,2-3,5"), Some(vec![0, 2, 3, 5]));
        assert_eq!(parse_cpu_list("x"), None);
        assert_eq!(parse_cpu_list("3-1"), None);
    }

    /// The real tracepoint (root, as the project's tests run): each of this
    /// process's connects, however short, is seen with its destination.
    #[test]
    fn sees_every_short_connect_of_this_process() {
        let mut w = ConnectWatch::open().unwrap_or_else(|e| panic!("connect watch: {e}"));
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        for _ in 0..20 {
            drop(std::net::TcpStream::connect(("127.0.0.1", port)).unwrap());
            drop(listener.accept().unwrap());
        }
        let me = std::process::id();
        let mut seen = 0;
        w.drain(|pid, dst| {
            if pid == me && dst.port == port {
                assert_eq!((dst.family, &dst.addr[..4]), (2, &[127, 0, 0, 1][..]));
                seen += 1;
            }
        });
        assert_eq!(seen, 20);
    }
}
