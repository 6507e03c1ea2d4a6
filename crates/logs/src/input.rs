//! Opening inputs: files or stdin, gzip detected by its magic bytes and
//! decoded transparently, with a byte counter for progress displays. Every
//! input is read under the shared limits (`keisoku_common::limits`): a line
//! longer than the limit or a gzip bomb fails the read as the user's input,
//! so `/dev/zero` is refused in a second instead of exhausting memory.

use keisoku_common::limits::{Guard, Limits};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// Counts the raw (possibly compressed) bytes read through it.
pub use keisoku_common::limits::Counting;

/// An opened input.
pub struct Input {
    /// Decoded bytes.
    pub reader: Box<dyn Read + Send>,
    /// Size on disk, when known (for progress).
    pub size: Option<u64>,
    /// Whether the input is gzip-compressed.
    pub gzip: bool,
}

/// Opens `path` (`None` or `-` for stdin); `read` counts raw bytes consumed.
pub fn open(path: Option<&Path>, read: Arc<AtomicU64>) -> io::Result<Input> {
    open_limited(path, read, &Limits::current())
}

/// The file at `path` (its size, if a regular file), or standard input
/// for none or `-`.
fn raw_input(path: Option<&Path>) -> io::Result<(Box<dyn Read + Send>, Option<u64>)> {
    Ok(match path {
        Some(p) if p != Path::new("-") => {
            let f = File::open(p)?;
            let size = f.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
            (Box::new(f), size)
        }
        _ => (Box::new(io::stdin()), None),
    })
}

/// [`open`] under explicit limits.
pub fn open_limited(
    path: Option<&Path>,
    read: Arc<AtomicU64>,
    limits: &Limits,
) -> io::Result<Input> {
    let (raw, size) = raw_input(path)?;
    let mut buffered = BufReader::with_capacity(1 << 20, Counting::new(raw, Arc::clone(&read)));
    let head = buffered.fill_buf()?;
    let gzip = head.len() >= 2 && head[0] == 0x1f && head[1] == 0x8b;
    let reader: Box<dyn Read + Send> = if gzip {
        Box::new(
            Guard::new(flate2::read::MultiGzDecoder::new(buffered))
                .ratio(limits, read)
                .lines(limits),
        )
    } else {
        Box::new(Guard::new(buffered).lines(limits))
    };
    Ok(Input { reader, size, gzip })
}

/// The first `n` non-blank lines of `path` (gzip decoded), without their
/// terminators, each cut at 4 KiB: what format detection looks at.
pub fn head_lines(path: &Path, n: usize) -> io::Result<Vec<Vec<u8>>> {
    let opened = open(Some(path), Arc::new(AtomicU64::new(0)))?;
    let mut reader = BufReader::new(opened.reader.take(1 << 20));
    let mut lines = Vec::with_capacity(n);
    let mut line = Vec::new();
    while lines.len() < n {
        line.clear();
        if reader.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        let text = crate::format::trim_line(&line);
        if !text.is_empty() {
            lines.push(text[..text.len().min(4096)].to_vec());
        }
    }
    Ok(lines)
}

/// Opens `path` as [`open`] does, or, with `pcap`, as a packet capture of
/// that server whose HTTP exchanges read as LTSV lines (a capture is
/// binary: the line limits do not apply to it).
pub fn open_as(
    path: Option<&Path>,
    read: Arc<AtomicU64>,
    pcap: Option<&crate::pcap::Server>,
) -> io::Result<Input> {
    let Some(server) = pcap else {
        return open(path, read);
    };
    let (raw, size) = raw_input(path)?;
    let counted = Counting::new(raw, read);
    let exchanges = crate::pcap::exchanges(counted, server.clone()).map_err(io::Error::from)?;
    Ok(Input {
        reader: Box::new(crate::pcap::LtsvStream::new(exchanges)),
        size,
        gzip: false,
    })
}
