//! Classic pcap files (what `tcpdump -w` writes and alp reads through
//! gopacket's `pcapgo`): both byte orders, micro- and nanosecond
//! timestamps, gzip-compressed or not. Packets are read one at a time into
//! a reused buffer, so a capture of any size is read in constant memory.
//!
//! pcapng is not read: alp's reader refuses it too ("Unknown magic"), and
//! `tcpdump -w` writes classic pcap.

use std::io::{self, BufRead, BufReader, Read};

/// The largest packet record accepted whatever the header's snapshot
/// length says: a corrupt length must not become a multi-GB allocation.
const MAX_RECORD: u32 = 16 << 20;

/// Why a capture cannot be read. Every variant names the byte offset (in
/// the decompressed stream) where reading stopped, so the user can look.
#[derive(Debug, thiserror::Error)]
pub enum PcapError {
    /// The file ends inside its 24-byte header.
    #[error("not a pcap capture: the file ends inside the 24-byte pcap header ({0} bytes)")]
    ShortHeader(usize),
    /// The first four bytes are no pcap magic number.
    #[error("not a pcap capture: unknown magic number {0:#010x}{hint}", hint = magic_hint(*.0))]
    Magic(u32),
    /// The link layer is one this reader does not decode.
    #[error("link type {0} is not supported (supported: Ethernet 1, Linux cooked SLL 113 and SLL2 276, BSD loopback 0 and 108, raw IP 101, 228, 229)")]
    LinkType(u32),
    /// A packet record is cut short by the end of the file.
    #[error("truncated capture: the packet record at byte {offset} is cut short ({have} of {want} bytes)")]
    Truncated {
        /// Where the record starts.
        offset: u64,
        /// Bytes present.
        have: usize,
        /// Bytes its header (or the record header) promises.
        want: usize,
    },
    /// A record claims more bytes than the capture's snapshot length.
    #[error("corrupt capture: the packet record at byte {offset} holds {len} bytes, more than the snapshot length {snaplen}")]
    TooLong {
        /// Where the record starts.
        offset: u64,
        /// The record's captured length.
        len: u32,
        /// The header's snapshot length.
        snaplen: u32,
    },
    /// Reading failed.
    #[error("{0}")]
    Io(#[from] io::Error),
}

fn magic_hint(magic: u32) -> &'static str {
    if magic == 0x0a0d_0d0a {
        " (this is pcapng, which alp does not read either: convert it with `tcpdump -r in.pcapng -w out.pcap`)"
    } else {
        ""
    }
}

impl From<PcapError> for io::Error {
    fn from(e: PcapError) -> io::Error {
        match e {
            PcapError::Io(io) => io,
            other => io::Error::new(io::ErrorKind::InvalidData, other.to_string()),
        }
    }
}

/// The capture's link layer: how a packet's bytes begin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkType {
    /// Ethernet II (`tcpdump -i lo` on Linux).
    Ethernet,
    /// Linux cooked capture v1 (older `tcpdump -i any`).
    LinuxSll,
    /// Linux cooked capture v2 (`tcpdump -i any` since libpcap 1.10).
    LinuxSll2,
    /// BSD loopback: a 4-byte address family in the writer's byte order.
    Null,
    /// OpenBSD loopback: a 4-byte big-endian address family.
    Loop,
    /// Raw IPv4 or IPv6, told apart by the version nibble.
    Raw,
}

impl LinkType {
    fn from_header(v: u32) -> Result<LinkType, PcapError> {
        // The upper 16 bits carry FCS information, not the type.
        match v & 0xffff {
            1 => Ok(LinkType::Ethernet),
            113 => Ok(LinkType::LinuxSll),
            276 => Ok(LinkType::LinuxSll2),
            0 => Ok(LinkType::Null),
            108 => Ok(LinkType::Loop),
            101 | 228 | 229 => Ok(LinkType::Raw),
            _ => Err(PcapError::LinkType(v & 0xffff)),
        }
    }
}

/// One packet of a capture, borrowed from the reader's buffer.
#[derive(Debug)]
pub struct Packet<'a> {
    /// When it was captured, in nanoseconds since the Unix epoch.
    pub time_ns: i64,
    /// The captured bytes (possibly fewer than were on the wire).
    pub data: &'a [u8],
}

/// A classic pcap file read packet by packet.
pub struct PcapReader<R: Read> {
    input: R,
    big_endian: bool,
    /// 1,000 for microsecond captures, 1 for nanosecond ones.
    scale: i64,
    snaplen: u32,
    link: LinkType,
    /// Decoded bytes consumed so far (for error offsets).
    offset: u64,
    buf: Vec<u8>,
}

/// Opens `input` as a capture: gzip (as alp accepts) is detected by its
/// magic and decoded on the fly.
pub fn open(
    input: impl Read + Send + 'static,
) -> Result<PcapReader<Box<dyn Read + Send>>, PcapError> {
    let mut buffered = BufReader::with_capacity(1 << 20, input);
    let head = buffered.fill_buf()?;
    let reader: Box<dyn Read + Send> = if head.len() >= 2 && head[0] == 0x1f && head[1] == 0x8b {
        Box::new(BufReader::with_capacity(
            1 << 20,
            flate2::read::MultiGzDecoder::new(buffered),
        ))
    } else {
        Box::new(buffered)
    };
    PcapReader::new(reader)
}

/// Reads until `buf` is full or the input ends; returns how many bytes came.
fn fill(input: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match input.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(n) => got += n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

impl<R: Read> PcapReader<R> {
    /// Reads the file header of `input` (already decompressed).
    pub fn new(mut input: R) -> Result<PcapReader<R>, PcapError> {
        let mut h = [0u8; 24];
        let got = fill(&mut input, &mut h)?;
        if got < 4 {
            return Err(PcapError::ShortHeader(got));
        }
        let magic = u32::from_le_bytes([h[0], h[1], h[2], h[3]]);
        let (big_endian, scale) = match magic {
            0xa1b2_c3d4 => (false, 1_000),
            0xa1b2_3c4d => (false, 1),
            0xd4c3_b2a1 => (true, 1_000),
            0x4d3c_b2a1 => (true, 1),
            other => return Err(PcapError::Magic(other)),
        };
        if got < 24 {
            return Err(PcapError::ShortHeader(got));
        }
        let word = |at: usize| {
            let b = [h[at], h[at + 1], h[at + 2], h[at + 3]];
            if big_endian {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }
        };
        let snaplen = word(16);
        let link = LinkType::from_header(word(20))?;
        Ok(PcapReader {
            input,
            big_endian,
            scale,
            snaplen,
            link,
            offset: 24,
            buf: Vec::new(),
        })
    }

    /// The capture's link layer.
    pub fn link_type(&self) -> LinkType {
        self.link
    }

    /// Whether the writer was little-endian (BSD loopback headers are in
    /// its byte order).
    pub fn little_endian_writer(&self) -> bool {
        !self.big_endian
    }

    /// The next packet, or `None` at the end of the capture.
    pub fn next_packet(&mut self) -> Result<Option<Packet<'_>>, PcapError> {
        let start = self.offset;
        let mut h = [0u8; 16];
        let got = fill(&mut self.input, &mut h)?;
        if got == 0 {
            return Ok(None);
        }
        if got < 16 {
            return Err(PcapError::Truncated {
                offset: start,
                have: got,
                want: 16,
            });
        }
        let word = |at: usize| {
            let b = [h[at], h[at + 1], h[at + 2], h[at + 3]];
            if self.big_endian {
                u32::from_be_bytes(b)
            } else {
                u32::from_le_bytes(b)
            }
        };
        let (sec, frac, caplen) = (word(0), word(4), word(8));
        // gopacket refuses a record longer than the snapshot length (alp
        // then stops reading); so does this reader, with the offset.
        if caplen > self.snaplen || caplen > MAX_RECORD {
            return Err(PcapError::TooLong {
                offset: start,
                len: caplen,
                snaplen: self.snaplen,
            });
        }
        self.buf.clear();
        let want = caplen as usize;
        let have = (&mut self.input)
            .take(u64::from(caplen))
            .read_to_end(&mut self.buf)?;
        if have < want {
            return Err(PcapError::Truncated {
                offset: start,
                have: 16 + have,
                want: 16 + want,
            });
        }
        self.offset += 16 + u64::from(caplen);
        Ok(Some(Packet {
            time_ns: i64::from(sec) * 1_000_000_000 + i64::from(frac) * self.scale,
            data: &self.buf,
        }))
    }
}
