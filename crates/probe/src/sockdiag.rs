//! TCP connections by state through the kernel's sock_diag netlink
//! interface: the counts /proc/net/tcp and /proc/net/tcp6 give, at about a
//! tenth of their cost. Both walk the whole established hash table (sized
//! by RAM, not by sockets: 262,144 buckets on a 4 GB machine), but the
//! seq_files restart that walk on every read call and format a text line
//! per socket; a netlink dump walks it once per family and sends a few
//! bytes per socket (measured: 45 ms against 3.4 ms on that machine).

use std::collections::{HashMap, HashSet};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
use std::os::unix::ffi::OsStrExt;
use std::path::Path;

/// netlink message type of a sock_diag request and of each answer.
const SOCK_DIAG_BY_FAMILY: u16 = 20;
/// Size of `struct nlmsghdr`.
const NLMSG_HDR: usize = 16;
/// Size of `struct inet_diag_req_v2`.
const REQ_LEN: usize = 56;

/// Adds the TCP sockets of both address families to `counts`, indexed by
/// kernel state (1 = ESTABLISHED ... 12 = NEW_SYN_RECV) minus one.
pub(crate) fn tcp_states(counts: &mut [u64; 12], buf: &mut Vec<u8>) -> io::Result<()> {
    each_socket(buf, |msg| {
        // inet_diag_msg starts with family, then state.
        if let Some(c) = msg
            .get(1)
            .and_then(|s| (*s as usize).checked_sub(1))
            .and_then(|i| counts.get_mut(i))
        {
            *c += 1;
        }
    })
}

/// Calls `f` with each TCP socket's `inet_diag_msg` of both families.
fn each_socket(buf: &mut Vec<u8>, mut f: impl FnMut(&[u8])) -> io::Result<()> {
    // SAFETY: socket(2) with constant arguments; the descriptor is owned
    // (and closed) by the OwnedFd right after.
    let fd = unsafe {
        libc::socket(
            libc::AF_NETLINK,
            libc::SOCK_RAW | libc::SOCK_CLOEXEC,
            libc::NETLINK_SOCK_DIAG,
        )
    };
    if fd < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: `fd` is a fresh descriptor nobody else owns.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    if buf.len() < 64 * 1024 {
        buf.resize(64 * 1024, 0);
    }
    for (seq, family) in [libc::AF_INET, libc::AF_INET6].into_iter().enumerate() {
        dump(&fd, family as u8, seq as u32 + 1, &mut f, buf)?;
    }
    Ok(())
}

fn dump(
    fd: &OwnedFd,
    family: u8,
    seq: u32,
    f: &mut impl FnMut(&[u8]),
    buf: &mut [u8],
) -> io::Result<()> {
    let mut req = [0u8; NLMSG_HDR + REQ_LEN];
    req[0..4].copy_from_slice(&((NLMSG_HDR + REQ_LEN) as u32).to_ne_bytes());
    req[4..6].copy_from_slice(&SOCK_DIAG_BY_FAMILY.to_ne_bytes());
    let flags = (libc::NLM_F_REQUEST | libc::NLM_F_DUMP) as u16;
    req[6..8].copy_from_slice(&flags.to_ne_bytes());
    req[8..12].copy_from_slice(&seq.to_ne_bytes());
    // inet_diag_req_v2: family, protocol, ext, pad, states (every state).
    req[NLMSG_HDR] = family;
    req[NLMSG_HDR + 1] = libc::IPPROTO_TCP as u8;
    req[NLMSG_HDR + 4..NLMSG_HDR + 8].copy_from_slice(&u32::MAX.to_ne_bytes());
    // SAFETY: sends `req.len()` bytes from a live buffer.
    let sent = unsafe { libc::send(fd.as_raw_fd(), req.as_ptr().cast(), req.len(), 0) };
    if sent < 0 {
        return Err(io::Error::last_os_error());
    }
    let bad = |why: &str| io::Error::new(io::ErrorKind::InvalidData, format!("sock_diag: {why}"));
    loop {
        // SAFETY: receives at most `buf.len()` bytes into a live buffer.
        let n = unsafe { libc::recv(fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
        if n < 0 {
            let e = io::Error::last_os_error();
            if e.kind() == io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        let n = n as usize;
        if n == 0 {
            return Err(bad("the kernel closed the dump"));
        }
        let mut off = 0;
        while off + NLMSG_HDR <= n {
            let word =
                |at: usize| u32::from_ne_bytes([buf[at], buf[at + 1], buf[at + 2], buf[at + 3]]);
            let len = word(off) as usize;
            let kind = u16::from_ne_bytes([buf[off + 4], buf[off + 5]]);
            if len < NLMSG_HDR || off + len > n {
                return Err(bad("truncated message"));
            }
            match kind {
                k if k == libc::NLMSG_DONE as u16 => return Ok(()),
                k if k == libc::NLMSG_ERROR as u16 => {
                    let errno = if len >= NLMSG_HDR + 4 {
                        -(word(off + NLMSG_HDR) as i32)
                    } else {
                        libc::EIO
                    };
                    return Err(io::Error::from_raw_os_error(errno));
                }
                SOCK_DIAG_BY_FAMILY if len >= NLMSG_HDR + 2 => {
                    f(&buf[off + NLMSG_HDR..off + len]);
                }
                _ => {}
            }
            off += (len + 3) & !3;
        }
    }
}

/// Size of `struct inet_diag_msg`: family, state, timer, retrans, the
/// socket id (ports, addresses, interface, cookie), expires, queues, uid,
/// inode.
const DIAG_MSG_LEN: usize = 72;
/// Kernel TCP states.
const TCP_TIME_WAIT: u8 = 6;
const TCP_LISTEN: u8 = 10;

/// An address and port as sock_diag gives them (IPv4 in the first 4 bytes).
#[derive(Clone, Copy, PartialEq, Eq, Hash, Debug)]
pub(crate) struct Endpoint {
    pub(crate) family: u8,
    pub(crate) addr: [u8; 16],
    pub(crate) port: u16,
}

/// One TCP socket of the dump.
#[derive(Clone, Copy, Debug)]
struct Sock {
    state: u8,
    src: Endpoint,
    dst: Endpoint,
    inode: u32,
    /// Milliseconds until the socket's timer fires (`idiag_expires`): for a
    /// TIME_WAIT socket, until it is gone.
    expires: u32,
}

fn parse_sock(msg: &[u8]) -> Option<Sock> {
    if msg.len() < DIAG_MSG_LEN {
        return None;
    }
    let family = msg[0];
    let port = |at: usize| u16::from_be_bytes([msg[at], msg[at + 1]]);
    let addr = |at: usize| {
        let mut a = [0u8; 16];
        a.copy_from_slice(&msg[at..at + 16]);
        a
    };
    Some(Sock {
        state: msg[1],
        src: Endpoint {
            family,
            addr: addr(8),
            port: port(4),
        },
        dst: Endpoint {
            family,
            addr: addr(24),
            port: port(6),
        },
        inode: u32::from_ne_bytes([msg[68], msg[69], msg[70], msg[71]]),
        expires: u32::from_ne_bytes([msg[52], msg[53], msg[54], msg[55]]),
    })
}

/// A connection: its server end (the listening side) and its client end.
type Conn = (Endpoint, Endpoint);

/// New connections of one process between two samples, by side.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub(crate) struct ConnCounts {
    /// Connections accepted on the process's own listening ports from
    /// others (keisoku's client, a proxy).
    pub(crate) accepted: u64,
    /// Connections the process opened to a backend (including its own
    /// listening ports: a server calling itself).
    pub(crate) connected: u64,
    /// Accepted connections the process closed first (its TIME_WAIT).
    pub(crate) closed_by_server: u64,
    /// Accepted connections the peer closed first (the peer's TIME_WAIT,
    /// visible when it is on this host, as every keisoku client is).
    pub(crate) closed_by_peer: u64,
}

/// The TCP connections of one server process, by the process's socket
/// inodes rather than the host's counters: on a shared host those count
/// every other process's connections too.
///
/// Every connection ends with a TIME_WAIT socket on the side that closed
/// first, kept 60 s, so a connection of a millisecond is still seen by a
/// sampler running every 200 ms: a connection is counted when its
/// (server end, client end) first appears, in any state.
#[derive(Default)]
pub(crate) struct ConnTracker {
    buf: Vec<u8>,
    socks: Vec<Sock>,
    /// Endpoints the process was seen connecting to.
    backends: HashSet<Endpoint>,
    seen: HashSet<Conn>,
    closed_server: HashSet<Conn>,
    closed_peer: HashSet<Conn>,
    /// The TIME_WAIT timer of each connection at the last sample.
    time_wait: HashMap<Conn, u32>,
    primed: bool,
}

/// A TIME_WAIT timer this much above the last sample's is a new connection
/// on the same address pair: the old one's timer only counts down.
const TIME_WAIT_REUSED_MS: u32 = 1000;

impl ConnTracker {
    /// Marks an endpoint the process was seen connecting to by other means
    /// (the connect tracepoint): a backend connection too short to be
    /// caught alive among the process's descriptors is then still counted
    /// from the TIME_WAIT it leaves.
    pub(crate) fn learn_backend(&mut self, dst: Endpoint) {
        self.backends.insert(dst);
    }

    /// Counts the connections new since the last call, of the process
    /// owning the socket `inodes`; `None` on the first call (a baseline).
    pub(crate) fn sample(&mut self, inodes: &HashSet<u32>) -> io::Result<Option<ConnCounts>> {
        self.socks.clear();
        let socks = &mut self.socks;
        each_socket(&mut self.buf, |m| socks.extend(parse_sock(m)))?;
        Ok(self.count(inodes))
    }

    fn count(&mut self, inodes: &HashSet<u32>) -> Option<ConnCounts> {
        let mut host_listen: HashSet<u16> = HashSet::new();
        let mut own_listen: HashSet<u16> = HashSet::new();
        for s in self.socks.iter().filter(|s| s.state == TCP_LISTEN) {
            host_listen.insert(s.src.port);
            if inodes.contains(&s.inode) {
                own_listen.insert(s.src.port);
            }
        }
        for s in &self.socks {
            if s.state != TCP_LISTEN
                && s.inode != 0
                && inodes.contains(&s.inode)
                && !host_listen.contains(&s.src.port)
            {
                self.backends.insert(s.dst);
            }
        }
        let mut seen = HashSet::with_capacity(self.seen.len());
        let mut closed_server = HashSet::new();
        let mut closed_peer = HashSet::new();
        let mut time_wait = HashMap::new();
        let mut c = ConnCounts::default();
        for s in self.socks.iter().filter(|s| s.state != TCP_LISTEN) {
            // Which end is this socket: the listening side's, or the caller's.
            let (conn, server_side) = if host_listen.contains(&s.src.port) {
                ((s.src, s.dst), true)
            } else if host_listen.contains(&s.dst.port) || self.backends.contains(&s.dst) {
                ((s.dst, s.src), false)
            } else {
                continue;
            };
            let outbound = self.backends.contains(&conn.0);
            let inbound = own_listen.contains(&conn.0.port) && !outbound;
            if !inbound && !outbound {
                continue;
            }
            // On loopback the kernel reuses an address pair still in
            // TIME_WAIT for a new connection (tcp_tw_reuse): at hundreds of
            // connections a second a per-request backend connection often
            // lands on a pair seen before. Its timer starts again.
            let reused = s.state == TCP_TIME_WAIT && {
                let before = self.time_wait.get(&conn).copied();
                let now = time_wait.entry(conn).or_insert(s.expires);
                *now = (*now).max(s.expires);
                before.is_some_and(|b| s.expires > b.saturating_add(TIME_WAIT_REUSED_MS))
            };
            if (seen.insert(conn) && !self.seen.contains(&conn)) || reused {
                if outbound {
                    c.connected += 1;
                } else {
                    c.accepted += 1;
                }
            }
            if inbound && s.state == TCP_TIME_WAIT {
                let (now, before, n) = if server_side {
                    (
                        &mut closed_server,
                        &self.closed_server,
                        &mut c.closed_by_server,
                    )
                } else {
                    (&mut closed_peer, &self.closed_peer, &mut c.closed_by_peer)
                };
                if (now.insert(conn) && !before.contains(&conn)) || reused {
                    *n += 1;
                }
            }
        }
        self.seen = seen;
        self.closed_server = closed_server;
        self.closed_peer = closed_peer;
        self.time_wait = time_wait;
        let primed = std::mem::replace(&mut self.primed, true);
        primed.then_some(c)
    }
}

/// The socket inodes of processes, from the `socket:[N]` links in
/// `/proc/PID/fd`; processes and descriptors that vanish meanwhile are
/// skipped.
pub(crate) fn socket_inodes(proc_root: &Path, pids: &[u32], out: &mut HashSet<u32>) {
    out.clear();
    for pid in pids {
        let Ok(dir) = std::fs::read_dir(proc_root.join(pid.to_string()).join("fd")) else {
            continue;
        };
        for e in dir.flatten() {
            let Ok(link) = std::fs::read_link(e.path()) else {
                continue;
            };
            let l = link.as_os_str().as_bytes();
            if let Some(n) = l
                .strip_prefix(b"socket:[")
                .and_then(|r| r.strip_suffix(b"]"))
                .and_then(|d| std::str::from_utf8(d).ok())
                .and_then(|d| d.parse().ok())
            {
                out.insert(n);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_a_listening_and_an_established_socket() {
        let mut before = [0u64; 12];
        let mut buf = Vec::new();
        if tcp_states(&mut before, &mut buf).is_err() {
            // A sandbox without sock_diag: the sampler falls back to /proc.
            return;
        }
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
        let (s, _) = l.accept().unwrap();
        let mut after = [0u64; 12];
        tcp_states(&mut after, &mut buf).unwrap();
        // Other processes open and close sockets meanwhile; ours are there.
        assert!(after[0] >= 2, "established {after:?}");
        assert!(after[9] >= 1, "listening {after:?}");
        drop((c, s));
    }

    #[test]
    fn tracks_a_process_connections_by_side_and_who_closed() {
        use std::io::{Read, Write};
        let mut probe = [0u64; 12];
        if tcp_states(&mut probe, &mut Vec::new()).is_err() {
            return;
        }
        // This test process is the "server": its listener and its sockets.
        let me = std::process::id();
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let mut inodes = HashSet::new();
        let mut t = ConnTracker::default();
        socket_inodes(Path::new("/proc"), &[me], &mut inodes);
        assert!(
            t.sample(&inodes).unwrap().is_none(),
            "first sample is a baseline"
        );
        // Three connections the server closes first, two the client does.
        for server_closes in [true, true, true, false, false] {
            let mut c = std::net::TcpStream::connect(l.local_addr().unwrap()).unwrap();
            let (mut s, _) = l.accept().unwrap();
            if server_closes {
                drop(s);
                let _ = c.read(&mut [0u8; 1]);
                drop(c);
            } else {
                drop(c);
                let _ = s.read(&mut [0u8; 1]);
                let _ = s.write(b"");
                drop(s);
            }
        }
        socket_inodes(Path::new("/proc"), &[me], &mut inodes);
        let n = t.sample(&inodes).unwrap().unwrap();
        // Other tests' sockets of this process may show up as well.
        assert!(n.accepted >= 5, "{n:?}");
        assert!(n.closed_by_server >= 3, "{n:?}");
        assert!(n.closed_by_peer >= 2, "{n:?}");
        // Nothing new: nothing counted again.
        socket_inodes(Path::new("/proc"), &[me], &mut inodes);
        let again = t.sample(&inodes).unwrap().unwrap();
        assert!(
            again.accepted <= 1 && again.closed_by_server == 0,
            "{again:?}"
        );
    }

    #[test]
    fn a_time_wait_pair_reused_by_a_new_connection_counts_again() {
        let ep = |port: u16| Endpoint {
            family: 2,
            addr: [127, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
            port,
        };
        let listen = Sock {
            state: TCP_LISTEN,
            src: ep(8080),
            dst: ep(0),
            inode: 7,
            expires: 0,
        };
        // The server closed first: its end of the pair is in TIME_WAIT.
        let tw = |expires: u32| Sock {
            state: TCP_TIME_WAIT,
            src: ep(8080),
            dst: ep(40000),
            inode: 0,
            expires,
        };
        let inodes: HashSet<u32> = [7].into_iter().collect();
        let mut t = ConnTracker {
            socks: vec![listen],
            ..ConnTracker::default()
        };
        assert_eq!(t.count(&inodes), None, "a baseline");
        t.socks = vec![listen, tw(59_800)];
        let n = t.count(&inodes).unwrap();
        assert_eq!((n.accepted, n.closed_by_server), (1, 1));
        // The same connection, its timer running down: nothing new.
        t.socks = vec![listen, tw(58_200)];
        let n = t.count(&inodes).unwrap();
        assert_eq!((n.accepted, n.closed_by_server), (0, 0));
        // The pair reused by a new connection, closed again: its timer restarted.
        t.socks = vec![listen, tw(59_900)];
        let n = t.count(&inodes).unwrap();
        assert_eq!((n.accepted, n.closed_by_server), (1, 1));
    }
}
