//! Allocation-free reading of /proc files: files stay open and are re-read
//! with `pread` at offset 0 (seq_file regenerates its text on every read from
//! the start), and numbers are scanned straight from the bytes.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// A growable byte buffer that keeps its capacity between reads.
#[derive(Default)]
pub(crate) struct Buf {
    data: Vec<u8>,
    len: usize,
}

impl Buf {
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.data[..self.len]
    }
}

/// One /proc file kept open across samples.
pub(crate) struct ProcFile {
    file: File,
}

impl ProcFile {
    pub(crate) fn open(path: &Path) -> io::Result<ProcFile> {
        Ok(ProcFile {
            file: File::open(path)?,
        })
    }

    /// Reads the whole file into `buf`, reusing its memory.
    pub(crate) fn read(&self, buf: &mut Buf) -> io::Result<()> {
        // Large enough for /proc/net/tcp to come in few reads: each read of a
        // seq_file may restart its walk.
        if buf.data.len() < 64 * 1024 {
            buf.data.resize(64 * 1024, 0);
        }
        buf.len = 0;
        loop {
            if buf.len == buf.data.len() {
                let grown = buf.data.len() * 2;
                buf.data.resize(grown, 0);
            }
            match self.file.read_at(&mut buf.data[buf.len..], buf.len as u64) {
                Ok(0) => return Ok(()),
                Ok(n) => buf.len += n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
    }
}

/// Whitespace-separated fields of a line.
pub(crate) fn fields(line: &[u8]) -> impl Iterator<Item = &[u8]> {
    line.split(|&c| c == b' ' || c == b'\t')
        .filter(|f| !f.is_empty())
}

pub(crate) fn lines(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    text.split(|&c| c == b'\n').filter(|l| !l.is_empty())
}

/// Parses a decimal unsigned integer; `None` for anything else.
pub(crate) fn parse_u64(b: &[u8]) -> Option<u64> {
    if b.is_empty() {
        return None;
    }
    let mut v: u64 = 0;
    for &c in b {
        if !c.is_ascii_digit() {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(u64::from(c - b'0'))?;
    }
    Some(v)
}

pub(crate) fn parse_hex(b: &[u8]) -> Option<u64> {
    if b.is_empty() || b.len() > 16 {
        return None;
    }
    let mut v: u64 = 0;
    for &c in b {
        let d = match c {
            b'0'..=b'9' => c - b'0',
            b'a'..=b'f' => c - b'a' + 10,
            b'A'..=b'F' => c - b'A' + 10,
            _ => return None,
        };
        v = (v << 4) | u64::from(d);
    }
    Some(v)
}

/// For `key: value` files (meminfo, status, sched): the value's first field.
pub(crate) fn value_after_colon(line: &[u8]) -> Option<&[u8]> {
    let colon = line.iter().position(|&c| c == b':')?;
    fields(&line[colon + 1..]).next()
}

/// The text of /proc/PID/stat after the `(comm)` field, whose name may hold
/// spaces or parentheses; field 3 (state) is index 0 of what this returns.
pub(crate) fn stat_after_comm(stat: &[u8]) -> Option<&[u8]> {
    let close = stat.iter().rposition(|&c| c == b')')?;
    stat.get(close + 1..)
}

/// The `comm` field of /proc/PID/stat.
pub(crate) fn stat_comm(stat: &[u8]) -> Option<&[u8]> {
    let open = stat.iter().position(|&c| c == b'(')?;
    let close = stat.iter().rposition(|&c| c == b')')?;
    stat.get(open + 1..close)
}

/// Field `n` (1-based, as in proc(5)) of /proc/PID/stat, for n >= 3.
pub(crate) fn stat_field(stat: &[u8], n: usize) -> Option<u64> {
    let rest = stat_after_comm(stat)?;
    let f = fields(rest).nth(n.checked_sub(3)?)?;
    parse_u64(f)
}

/// Several fields of /proc/PID/stat in one pass; `wanted` are 1-based field
/// numbers (>= 3) in ascending order.
pub(crate) fn stat_fields<const N: usize>(stat: &[u8], wanted: [usize; N]) -> [Option<u64>; N] {
    let mut out = [None; N];
    let Some(rest) = stat_after_comm(stat) else {
        return out;
    };
    let mut next = 0;
    for (i, f) in fields(rest).enumerate() {
        if next == N {
            break;
        }
        if i + 3 == wanted[next] {
            out[next] = parse_u64(f);
            next += 1;
        }
    }
    out
}

/// A directory whose numeric entries (pids, tids) are listed with
/// `getdents64` into a reused buffer: std's `read_dir` allocates per entry.
pub(crate) struct NumericDir {
    fd: libc::c_int,
    buf: Vec<u8>,
}

impl NumericDir {
    pub(crate) fn open(path: &Path) -> io::Result<NumericDir> {
        let c = CString::new(path.as_os_str().as_bytes())
            .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "path holds a NUL byte"))?;
        // SAFETY: `c` is a valid NUL-terminated string for the call's duration.
        let fd = unsafe {
            libc::open(
                c.as_ptr(),
                libc::O_RDONLY | libc::O_DIRECTORY | libc::O_CLOEXEC,
            )
        };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        Ok(NumericDir {
            fd,
            buf: vec![0u8; 16 * 1024],
        })
    }

    /// Calls `f` with each entry name, `.` and `..` included.
    fn for_each_entry(&mut self, mut f: impl FnMut(&[u8])) -> io::Result<()> {
        // SAFETY: fd is an open directory owned by self.
        if unsafe { libc::lseek(self.fd, 0, libc::SEEK_SET) } < 0 {
            return Err(io::Error::last_os_error());
        }
        loop {
            // SAFETY: buf is valid for buf.len() writable bytes.
            let n = unsafe {
                libc::syscall(
                    libc::SYS_getdents64,
                    self.fd,
                    self.buf.as_mut_ptr(),
                    self.buf.len(),
                )
            };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            if n == 0 {
                return Ok(());
            }
            let n = n as usize;
            let mut off = 0usize;
            // linux_dirent64: u64 ino, i64 off, u16 reclen, u8 type, name (NUL-terminated).
            while off + 19 <= n {
                let reclen = u16::from_ne_bytes([self.buf[off + 16], self.buf[off + 17]]) as usize;
                if reclen == 0 || off + reclen > n {
                    break;
                }
                let name = &self.buf[off + 19..off + reclen];
                let end = name.iter().position(|&c| c == 0).unwrap_or(name.len());
                f(&name[..end]);
                off += reclen;
            }
        }
    }

    /// Replaces `out` with the numeric entry names.
    pub(crate) fn scan(&mut self, out: &mut Vec<u32>) -> io::Result<()> {
        out.clear();
        self.for_each_entry(|name| {
            if let Some(v) = parse_u64(name).and_then(|v| u32::try_from(v).ok()) {
                out.push(v);
            }
        })
    }

    /// Counts entries other than `.` and `..`.
    pub(crate) fn count_entries(&mut self) -> io::Result<u64> {
        let mut count = 0u64;
        self.for_each_entry(|name| {
            if name != b"." && name != b".." {
                count += 1;
            }
        })?;
        Ok(count)
    }
}

impl Drop for NumericDir {
    fn drop(&mut self) {
        // SAFETY: fd is owned by self and closed exactly once.
        unsafe {
            libc::close(self.fd);
        }
    }
}

/// Number of open descriptors of a process. Linux 6.2+ reports it as the
/// size of /proc/PID/fd, which saves listing the directory; older kernels
/// report 0 there and the caller falls back to counting entries.
pub(crate) fn fd_dir_size(path: &std::ffi::CStr) -> Option<u64> {
    // SAFETY: zeroed stat is a valid out-parameter; path is NUL-terminated.
    let mut st: libc::stat = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::stat(path.as_ptr(), &mut st) };
    if rc == 0 && st.st_size > 0 {
        Some(st.st_size as u64)
    } else {
        None
    }
}

/// Whether `path` is on a procfs mount (a fake /proc in tests is not, and
/// its directory sizes mean nothing).
pub(crate) fn is_procfs(path: &Path) -> bool {
    let Ok(c) = CString::new(path.as_os_str().as_bytes()) else {
        return false;
    };
    // SAFETY: zeroed statfs is a valid out-parameter; c is NUL-terminated.
    let mut st: libc::statfs = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::statfs(c.as_ptr(), &mut st) };
    const PROC_SUPER_MAGIC: i64 = 0x9fa0;
    rc == 0 && st.f_type as i64 == PROC_SUPER_MAGIC
}

/// Clock ticks per second for utime/stime (USER_HZ).
pub(crate) fn clock_ticks() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if v > 0 {
        v as u64
    } else {
        100
    }
}

pub(crate) fn page_size() -> u64 {
    // SAFETY: sysconf has no preconditions.
    let v = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if v > 0 {
        v as u64
    } else {
        4096
    }
}

/// CLOCK_MONOTONIC now, in nanoseconds (the clock `Instant` and `perf -k
/// CLOCK_MONOTONIC` both use on Linux).
pub(crate) fn monotonic_ns() -> u64 {
    clock_ns(libc::CLOCK_MONOTONIC)
}

/// CPU time the calling thread has used, in nanoseconds.
pub(crate) fn thread_cpu_ns() -> u64 {
    clock_ns(libc::CLOCK_THREAD_CPUTIME_ID)
}

fn clock_ns(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid out-parameter.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    (ts.tv_sec as u64)
        .saturating_mul(1_000_000_000)
        .saturating_add(ts.tv_nsec as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_fields_survive_odd_comm() {
        let s = b"42 (we ird) x) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 5 0 999 1000 250 18446744073709551615";
        assert_eq!(stat_comm(s), Some(&b"we ird) x"[..]));
        assert_eq!(stat_field(s, 4), Some(1));
        assert_eq!(stat_field(s, 14), Some(7));
        assert_eq!(stat_field(s, 15), Some(3));
        assert_eq!(stat_field(s, 20), Some(5));
        assert_eq!(stat_field(s, 24), Some(250));
        assert_eq!(
            stat_fields(s, [4, 14, 15, 24, 39]),
            [Some(1), Some(7), Some(3), Some(250), None]
        );
    }

    #[test]
    fn numbers() {
        assert_eq!(parse_u64(b"123"), Some(123));
        assert_eq!(parse_u64(b"-1"), None);
        assert_eq!(parse_u64(b"99999999999999999999999"), None);
        assert_eq!(parse_hex(b"0A"), Some(10));
        assert_eq!(value_after_colon(b"MemFree:   123 kB"), Some(&b"123"[..]));
    }

    #[test]
    fn numeric_dir_lists_this_process() {
        let mut d = NumericDir::open(Path::new("/proc")).unwrap();
        let mut pids = Vec::new();
        d.scan(&mut pids).unwrap();
        assert!(pids.contains(&std::process::id()));
        let mut fd = NumericDir::open(Path::new("/proc/self/fd")).unwrap();
        assert!(fd.count_entries().unwrap() >= 3);
    }
}
