//! Opening inputs: a file or stdin, plain or gzip, with a peek at the first
//! bytes for format detection that does not consume them. Every input is
//! read under the shared [`Limits`]: text readers refuse an over-long line,
//! whole-input readers an over-large input, and gzip a bomb, so `/dev/zero`
//! fails in a second as the user's input instead of exhausting memory.

use crate::error::{Error, Result};
use keisoku_common::limits::{Counting, Guard, Limits};
use std::fs::File;
use std::io::{self, BufRead, BufReader, Read};
use std::sync::atomic::AtomicU64;
use std::sync::Arc;

/// How many bytes detection looks at.
pub const PEEK: usize = 64 * 1024;

/// An opened input: its display name, the first bytes (already decompressed)
/// and a reader that yields the whole stream from the start.
pub struct Input {
    /// "<stdin>" or the path as given.
    pub name: String,
    /// The first up to [`PEEK`] bytes of the (decompressed) stream.
    pub head: Vec<u8>,
    /// Whether the input was gzip-compressed.
    pub gzip: bool,
    limits: Limits,
    reader: Box<dyn BufRead + Send>,
}

impl Input {
    /// Opens `path`, or stdin for "-".
    pub fn open(path: &str) -> Result<Input> {
        let (name, raw): (String, Box<dyn Read + Send>) = if path == "-" {
            ("<stdin>".to_owned(), Box::new(io::stdin()))
        } else {
            let f = File::open(path).map_err(|e| Error::io(path, e))?;
            (path.to_owned(), Box::new(f))
        };
        Self::from_reader(name, raw)
    }

    /// Wraps any reader (tests, fuzzing), under the limits of the
    /// environment ([`Limits::current`]).
    pub fn from_reader(name: String, raw: Box<dyn Read + Send>) -> Result<Input> {
        Self::with_limits(name, raw, Limits::current())
    }

    /// Wraps any reader under explicit limits.
    pub fn with_limits(name: String, raw: Box<dyn Read + Send>, limits: Limits) -> Result<Input> {
        let compressed = Arc::new(AtomicU64::new(0));
        let mut raw = BufReader::with_capacity(256 * 1024, Counting::new(raw, compressed.clone()));
        let magic = raw.fill_buf().map_err(|e| Error::io(&name, e))?;
        let gzip = magic.len() >= 2 && magic[0] == 0x1f && magic[1] == 0x8b;
        let mut reader: Box<dyn BufRead + Send> = if gzip {
            Box::new(BufReader::with_capacity(
                256 * 1024,
                Guard::new(flate2::read::MultiGzDecoder::new(raw)).ratio(&limits, compressed),
            ))
        } else {
            Box::new(raw)
        };
        let mut head = Vec::with_capacity(PEEK);
        (&mut reader)
            .take(PEEK as u64)
            .read_to_end(&mut head)
            .map_err(|e| Error::io(&name, e))?;
        let rest = reader;
        let reader: Box<dyn BufRead + Send> = Box::new(BufReader::with_capacity(
            256 * 1024,
            io::Cursor::new(head.clone()).chain(rest),
        ));
        Ok(Input {
            name,
            head,
            gzip,
            limits,
            reader,
        })
    }

    /// The whole stream from its start, as lines: a line longer than the
    /// limit fails the read.
    pub fn into_reader(self) -> Box<dyn BufRead + Send> {
        Box::new(BufReader::with_capacity(
            256 * 1024,
            Guard::new(self.reader).lines(&self.limits),
        ))
    }

    /// Reads the whole stream into memory (binary and JSON formats); an
    /// input larger than the limit fails the read.
    pub fn read_all(self) -> Result<(String, Vec<u8>)> {
        let name = self.name;
        let buf =
            keisoku_common::limits::read_to_end(Guard::new(self.reader).whole(&self.limits), None)
                .map_err(|e| Error::io(&name, e))?;
        Ok((name, buf))
    }
}
