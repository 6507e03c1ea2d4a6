//! The followed access log's own lines, kept with the run in compressed
//! chunks, so everything `keisoku logs` does on a file (filters, query
//! strings, single slow requests, timelines by the log's own timestamps)
//! also works on a stored run.
//!
//! Lines are appended as they are read: a chunk is written once it holds
//! [`CHUNK_BYTES`] of raw lines or its first line is a second old, so a
//! reader sees lines while the run is written and a killed keisoku loses at
//! most the last second. A reader decompresses one chunk at a time, so
//! memory stays flat however many lines a run kept.

use crate::{AccessLog, Result, Store, StoreError};
use flate2::read::DeflateDecoder;
use flate2::write::DeflateEncoder;
use flate2::Compression;
use rusqlite::{params, OptionalExtension};
use std::io::{self, Read, Write};

/// Raw bytes of lines per stored chunk: large enough to compress well
/// (about 10x on nginx LTSV), small enough to bound a reader's memory.
pub const CHUNK_BYTES: usize = 1 << 20;

/// Deflate level: level 3 compresses LTSV about 10x at over 100 MB/s
/// (bench/log-lines.sh); higher levels gain a few percent for half the speed.
const LEVEL: u32 = 3;

/// How long a line may wait in memory before its chunk is written, in ms.
const MAX_WAIT_MS: f64 = 1000.0;

/// Keeps a run's access-log lines: applies the size cap, batches lines into
/// chunks, compresses and appends them, and keeps the run's counters (lines
/// followed, kept, truncation) current in the store.
#[derive(Debug)]
pub struct LogLinesWriter {
    run: String,
    info: AccessLog,
    buf: Vec<u8>,
    buf_lines: u64,
    first_ms: f64,
    last_ms: f64,
    seq: i64,
    /// Counters changed since they were last written.
    dirty: bool,
    last_write_ms: f64,
}

impl LogLinesWriter {
    /// Records that `run` follows the access log `log` (its counters are
    /// taken as they are: usually zero) and starts keeping its lines.
    pub fn start(store: &Store, run: &str, log: AccessLog) -> Result<LogLinesWriter> {
        store.conn.execute(
            "INSERT OR REPLACE INTO access_logs (run_id, path, format, pattern, keep_lines, max_bytes, lines, kept_lines, kept_bytes, stored_bytes, truncated_ms)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            params![
                run,
                log.path,
                log.format,
                log.pattern,
                log.keep_lines,
                clamp_i64(log.max_bytes),
                clamp_i64(log.lines),
                clamp_i64(log.kept_lines),
                clamp_i64(log.kept_bytes),
                clamp_i64(log.stored_bytes),
                log.truncated_ms
            ],
        )?;
        let seq: i64 = store.conn.query_row(
            "SELECT COALESCE(MAX(seq) + 1, 0) FROM log_chunks WHERE run_id = ?1",
            [run],
            |r| r.get(0),
        )?;
        Ok(LogLinesWriter {
            run: run.to_string(),
            info: log,
            buf: Vec::new(),
            buf_lines: 0,
            first_ms: 0.0,
            last_ms: 0.0,
            seq,
            dirty: false,
            last_write_ms: f64::NEG_INFINITY,
        })
    }

    /// The counters so far (including lines not yet written).
    pub fn info(&self) -> &AccessLog {
        &self.info
    }

    /// Adds complete lines, each ending with `\n`, read at `t_ms` on the
    /// run's clock. Lines beyond the size cap are counted, not kept; from
    /// the first line that does not fit on, none is kept, so the kept lines
    /// are always a prefix of the log. Writes every chunk that fills up.
    pub fn push(&mut self, store: &Store, lines: &[u8], t_ms: f64) -> Result<()> {
        if lines.is_empty() {
            return Ok(());
        }
        let n = memchr::memchr_iter(b'\n', lines).count() as u64;
        self.info.lines += n;
        self.dirty = true;
        if !self.info.keep_lines || self.info.truncated {
            return Ok(());
        }
        let room = self.info.max_bytes.saturating_sub(self.info.kept_bytes);
        let keep = if lines.len() as u64 <= room {
            lines
        } else {
            // The longest prefix of whole lines that fits.
            let limit = usize::try_from(room).unwrap_or(usize::MAX).min(lines.len());
            let cut = memchr::memrchr(b'\n', &lines[..limit]).map_or(0, |i| i + 1);
            self.info.truncated = true;
            self.info.truncated_ms = Some(t_ms);
            &lines[..cut]
        };
        let mut rest = keep;
        while !rest.is_empty() {
            let space = CHUNK_BYTES.saturating_sub(self.buf.len());
            // Chunks end at a line boundary: take the whole lines that fit,
            // or one whole line when even that is larger than a chunk.
            let take = if rest.len() <= space {
                rest.len()
            } else {
                match memchr::memrchr(b'\n', &rest[..space]) {
                    Some(i) => i + 1,
                    None if self.buf.is_empty() => {
                        memchr::memchr(b'\n', rest).map_or(rest.len(), |i| i + 1)
                    }
                    None => 0,
                }
            };
            if take > 0 {
                let piece = &rest[..take];
                if self.buf.is_empty() {
                    self.first_ms = t_ms;
                }
                self.last_ms = t_ms;
                self.buf.extend_from_slice(piece);
                let k = memchr::memchr_iter(b'\n', piece).count() as u64;
                self.buf_lines += k;
                self.info.kept_lines += k;
                self.info.kept_bytes += take as u64;
                rest = &rest[take..];
            }
            if self.buf.len() >= CHUNK_BYTES || take == 0 {
                self.write_chunk(store, t_ms)?;
            }
        }
        Ok(())
    }

    /// Writes what is due at `now_ms`: the buffered chunk once its first
    /// line waited a second, and changed counters once a second. Counters
    /// go with chunks while lines are buffered, so the stored ones always
    /// describe the stored chunks.
    pub fn tick(&mut self, store: &Store, now_ms: f64) -> Result<()> {
        if !self.buf.is_empty() {
            if now_ms - self.first_ms >= MAX_WAIT_MS {
                return self.write_chunk(store, now_ms);
            }
            Ok(())
        } else if self.dirty && now_ms - self.last_write_ms >= MAX_WAIT_MS {
            self.write_counters(store, now_ms)
        } else {
            Ok(())
        }
    }

    /// Writes every buffered line and the counters (at the end of a run, or
    /// on an interruption).
    pub fn flush(&mut self, store: &Store, now_ms: f64) -> Result<()> {
        if !self.buf.is_empty() {
            self.write_chunk(store, now_ms)
        } else if self.dirty {
            self.write_counters(store, now_ms)
        } else {
            Ok(())
        }
    }

    fn write_chunk(&mut self, store: &Store, now_ms: f64) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        let mut enc = DeflateEncoder::new(
            Vec::with_capacity(self.buf.len() / 8),
            Compression::new(LEVEL),
        );
        enc.write_all(&self.buf)
            .map_err(|e| StoreError::Corrupt(format!("compressing log lines: {e}")))?;
        let data = enc
            .finish()
            .map_err(|e| StoreError::Corrupt(format!("compressing log lines: {e}")))?;
        let stored = self.info.stored_bytes + data.len() as u64;
        let tx = store.write_transaction()?;
        tx.execute(
            "INSERT INTO log_chunks (run_id, seq, first_ms, last_ms, n, raw_bytes, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            params![
                self.run,
                self.seq,
                self.first_ms,
                self.last_ms,
                clamp_i64(self.buf_lines),
                self.buf.len() as i64,
                data
            ],
        )?;
        let mut info = self.info.clone();
        info.stored_bytes = stored;
        update_counters(&tx, &self.run, &info)?;
        tx.commit()?;
        self.info.stored_bytes = stored;
        self.seq += 1;
        self.buf.clear();
        self.buf_lines = 0;
        self.dirty = false;
        self.last_write_ms = now_ms;
        Ok(())
    }

    fn write_counters(&mut self, store: &Store, now_ms: f64) -> Result<()> {
        update_counters(&store.conn, &self.run, &self.info)?;
        self.dirty = false;
        self.last_write_ms = now_ms;
        Ok(())
    }
}

fn update_counters(conn: &rusqlite::Connection, run: &str, info: &AccessLog) -> Result<()> {
    conn.execute(
        "UPDATE access_logs SET lines = ?2, kept_lines = ?3, kept_bytes = ?4, stored_bytes = ?5, truncated_ms = ?6 WHERE run_id = ?1",
        params![
            run,
            clamp_i64(info.lines),
            clamp_i64(info.kept_lines),
            clamp_i64(info.kept_bytes),
            clamp_i64(info.stored_bytes),
            info.truncated_ms
        ],
    )?;
    Ok(())
}

fn clamp_i64(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

fn to_u64(v: i64) -> u64 {
    u64::try_from(v).unwrap_or(0)
}

impl Store {
    /// The access log `run` followed and what it kept of its lines, or
    /// `None` when it followed none (or predates kept lines).
    pub fn access_log(&self, run: &str) -> Result<Option<AccessLog>> {
        let row = self
            .conn
            .query_row(
                "SELECT path, format, pattern, keep_lines, max_bytes, lines, kept_lines, kept_bytes, stored_bytes, truncated_ms
                 FROM access_logs WHERE run_id = ?1",
                [run],
                |r| {
                    Ok(AccessLog {
                        path: r.get(0)?,
                        format: r.get(1)?,
                        pattern: r.get(2)?,
                        keep_lines: r.get(3)?,
                        max_bytes: to_u64(r.get(4)?),
                        lines: to_u64(r.get(5)?),
                        kept_lines: to_u64(r.get(6)?),
                        kept_bytes: to_u64(r.get(7)?),
                        stored_bytes: to_u64(r.get(8)?),
                        truncated: r.get::<_, Option<f64>>(9)?.is_some(),
                        truncated_ms: r.get(9)?,
                    })
                },
            )
            .optional()?;
        Ok(row)
    }

    /// A reader of the lines `run` kept, in order, exactly as they were in
    /// the log. It has its own connection (so it can move to another
    /// thread) and reads the chunks present when it was made, one at a time.
    pub fn log_lines(&self, run: &str) -> Result<LogLinesReader> {
        let end: i64 = self.conn.query_row(
            "SELECT COALESCE(MAX(seq) + 1, 0) FROM log_chunks WHERE run_id = ?1",
            [run],
            |r| r.get(0),
        )?;
        Ok(LogLinesReader {
            store: Store::open_existing(&self.path)?,
            run: run.to_string(),
            next: 0,
            end,
            buf: Vec::new(),
            pos: 0,
        })
    }
}

/// Reads a run's kept access-log lines (see [`Store::log_lines`]).
#[derive(Debug)]
pub struct LogLinesReader {
    store: Store,
    run: String,
    next: i64,
    end: i64,
    buf: Vec<u8>,
    pos: usize,
}

impl LogLinesReader {
    /// Decompresses the next chunk into `buf`; false at the end.
    fn next_chunk(&mut self) -> Result<bool> {
        if self.next >= self.end {
            return Ok(false);
        }
        let row = self
            .store
            .conn
            .prepare_cached(
                "SELECT seq, raw_bytes, data FROM log_chunks WHERE run_id = ?1 AND seq >= ?2 AND seq < ?3 ORDER BY seq LIMIT 1",
            )?
            .query_row(params![self.run, self.next, self.end], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, Vec<u8>>(2)?))
            })
            .optional()?;
        let Some((seq, raw, data)) = row else {
            self.next = self.end;
            return Ok(false);
        };
        self.next = seq + 1;
        let raw = usize::try_from(raw)
            .map_err(|_| StoreError::Corrupt(format!("log chunk {seq}: negative size")))?;
        self.buf.clear();
        self.pos = 0;
        // Never inflate more than the chunk claims: a damaged blob cannot
        // make a reader allocate without bound.
        DeflateDecoder::new(data.as_slice())
            .take(raw as u64 + 1)
            .read_to_end(&mut self.buf)
            .map_err(|e| StoreError::Corrupt(format!("log chunk {seq}: {e}")))?;
        if self.buf.len() != raw {
            return Err(StoreError::Corrupt(format!(
                "log chunk {seq}: {} bytes, expected {raw}",
                self.buf.len()
            )));
        }
        Ok(true)
    }
}

impl Read for LogLinesReader {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.pos >= self.buf.len() {
            match self.next_chunk() {
                Ok(true) => {}
                Ok(false) => return Ok(0),
                Err(e) => return Err(io::Error::new(io::ErrorKind::InvalidData, e)),
            }
        }
        let n = out.len().min(self.buf.len() - self.pos);
        out[..n].copy_from_slice(&self.buf[self.pos..self.pos + n]);
        self.pos += n;
        Ok(n)
    }
}
