//! Opening inputs: files or stdin, gzip detected by its magic bytes and
//! decoded transparently, with a byte counter for progress displays.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Counts the raw (possibly compressed) bytes read through it.
pub struct Counting<R> {
    inner: R,
    read: Arc<AtomicU64>,
}

impl<R> Counting<R> {
    /// Wraps `inner`, adding every byte read to `read`.
    pub fn new(inner: R, read: Arc<AtomicU64>) -> Counting<R> {
        Counting { inner, read }
    }
}

impl<R: Read> Read for Counting<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.read.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

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
    let (raw, size): (Box<dyn Read + Send>, Option<u64>) = match path {
        Some(p) if p != Path::new("-") => {
            let f = File::open(p)?;
            let size = f.metadata().ok().filter(|m| m.is_file()).map(|m| m.len());
            (Box::new(f), size)
        }
        _ => (Box::new(io::stdin()), None),
    };
    let mut buffered = BufReader::with_capacity(1 << 20, Counting { inner: raw, read });
    let head = buffered.fill_buf()?;
    let gzip = head.len() >= 2 && head[0] == 0x1f && head[1] == 0x8b;
    let reader: Box<dyn Read + Send> = if gzip {
        Box::new(flate2::read::MultiGzDecoder::new(buffered))
    } else {
        Box::new(buffered)
    };
    Ok(Input { reader, size, gzip })
}
