//! The run model and its SQLite persistence.
//!
//! A run store is one SQLite file (default `./.keisoku/runs.db`) in WAL mode,
//! so `keisoku runs`, `show` or a report can read while a run is being
//! written. Writers append as they go (series in chunks, histograms per
//! second), so a killed keisoku leaves a readable run; a run whose writer
//! process is gone is reported as interrupted. The schema is in
//! docs/store.md; [`model`] holds the serde types of the Run JSON
//! (docs/run-json.md).
//!
//! ```no_run
//! use keisoku_store::{Store, NewRun, RunStatus, SeriesBuffer};
//! let store = Store::open("runs.db".as_ref())?;
//! let run = store.create_run(&NewRun { name: "baseline".into(), ..NewRun::default() })?;
//! let mut buf = SeriesBuffer::default();
//! buf.push("cpu.0.user", "%", 0.0, 12.5);
//! buf.flush(&store, &run)?;
//! store.finish(&run, RunStatus::Complete, 1000.0)?;
//! let json = store.load(&run)?;
//! # Ok::<(), keisoku_store::StoreError>(())
//! ```

#![deny(missing_docs)]

pub mod codec;
pub mod csv;
mod error;
pub mod log_lines;
pub mod model;
mod profile;
mod schema;

pub use error::{Result, StoreError};
pub use log_lines::{LogLinesReader, LogLinesWriter};
pub use model::*;
pub use profile::ProfileKind;

use rusqlite::{
    params, Connection, OpenFlags, OptionalExtension, Transaction, TransactionBehavior,
};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Schema version this build writes and understands.
pub const SCHEMA_VERSION: i64 = schema::MIGRATIONS.len() as i64;

/// Environment variable naming the store file when `--store` is absent.
pub const STORE_ENV: &str = "KEISOKU_STORE";

/// The store path from a `--store` flag, else `$KEISOKU_STORE`, else
/// `./.keisoku/runs.db`.
pub fn store_path(flag: Option<&Path>) -> PathBuf {
    if let Some(p) = flag {
        return p.to_path_buf();
    }
    match std::env::var_os(STORE_ENV) {
        Some(v) if !v.is_empty() => PathBuf::from(v),
        _ => PathBuf::from(".keisoku").join("runs.db"),
    }
}

/// A run store: one SQLite connection. Open one per thread; SQLite's WAL
/// lets any number of readers work beside one writer.
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl std::fmt::Debug for Store {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Store").field("path", &self.path).finish()
    }
}

impl Store {
    /// Opens the store for writing, creating the file, its directory and
    /// the schema when missing, and migrating an older schema.
    pub fn open(path: &Path) -> Result<Store> {
        if let Some(dir) = path.parent() {
            if !dir.as_os_str().is_empty() && !dir.exists() {
                std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
                    path: dir.to_path_buf(),
                    source,
                })?;
            }
        }
        let conn = Connection::open(path).map_err(|source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        })?;
        let store = Store::configure(conn, path)?;
        store.migrate()?;
        Ok(store)
    }

    /// Opens an existing store; a missing file is [`StoreError::Missing`]
    /// rather than an empty store, so readers do not litter directories.
    /// A store that cannot be opened for writing (a read-only mount, a
    /// directory without write permission) is opened read-only instead:
    /// it can be listed and read, and a write names SQLite's refusal.
    pub fn open_existing(path: &Path) -> Result<Store> {
        if !path.exists() {
            return Err(StoreError::Missing(path.to_path_buf()));
        }
        let writable = Connection::open_with_flags(
            path,
            OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )
        .map_err(|source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        })
        .and_then(|conn| Store::configure(conn, path))
        .and_then(|store| store.migrate().map(|()| store));
        match writable {
            Ok(store) => Ok(store),
            Err(e @ StoreError::TooNew { .. }) => Err(e),
            // The first error says more when read-only fails too.
            Err(e) => Store::open_read_only(path).map_err(|ro| match ro {
                StoreError::TooNew { .. } | StoreError::ReadOnlyOld { .. } => ro,
                _ => e,
            }),
        }
    }

    /// Opens an existing store for reading only, changing nothing on disk.
    /// `mode=ro` first, which sees a live writer's recent data; when SQLite
    /// cannot create the shared-memory file it needs for that (a directory
    /// without write permission, a read-only mount), `immutable=1`, which
    /// reads the file as it is, without locks.
    pub fn open_read_only(path: &Path) -> Result<Store> {
        let mut first_err = None;
        for mode in ["mode=ro", "immutable=1"] {
            let uri = format!("file:{}?{mode}", uri_path(path));
            let opened = Connection::open_with_flags(
                &uri,
                OpenFlags::SQLITE_OPEN_READ_ONLY
                    | OpenFlags::SQLITE_OPEN_URI
                    | OpenFlags::SQLITE_OPEN_NO_MUTEX,
            )
            .and_then(|conn| {
                conn.busy_timeout(Duration::from_secs(10))?;
                let found: Option<i64> =
                    conn.query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0))?;
                Ok((conn, found.unwrap_or(0)))
            });
            match opened {
                Ok((conn, found)) => {
                    if found > SCHEMA_VERSION {
                        return Err(StoreError::TooNew {
                            found,
                            supported: SCHEMA_VERSION,
                        });
                    }
                    if found < SCHEMA_VERSION {
                        return Err(StoreError::ReadOnlyOld {
                            path: path.to_path_buf(),
                            found,
                            supported: SCHEMA_VERSION,
                        });
                    }
                    conn.pragma_update(None, "foreign_keys", "ON")?;
                    return Ok(Store {
                        conn,
                        path: path.to_path_buf(),
                    });
                }
                Err(source) => {
                    first_err.get_or_insert(source);
                }
            }
        }
        Err(StoreError::Open {
            path: path.to_path_buf(),
            source: first_err.unwrap_or(rusqlite::Error::InvalidQuery),
        })
    }

    /// Begins a write transaction that takes the write lock at once. A
    /// deferred transaction that reads first (a series id, the next finding
    /// number) and then writes cannot wait for the lock: if another
    /// connection (the live series writer, a second keisoku) committed in
    /// between, SQLite answers "database is locked" at once, busy timeout or
    /// not. Taking the lock up front makes it wait, as the timeout intends.
    pub(crate) fn write_transaction(&self) -> Result<Transaction<'_>> {
        Ok(Transaction::new_unchecked(
            &self.conn,
            TransactionBehavior::Immediate,
        )?)
    }

    fn configure(conn: Connection, path: &Path) -> Result<Store> {
        // Writers from several threads (sampler, log follower, load) and
        // readers from other processes share the file: wait instead of failing.
        conn.busy_timeout(Duration::from_secs(10))?;
        let open_err = |source| StoreError::Open {
            path: path.to_path_buf(),
            source,
        };
        conn.pragma_update(None, "journal_mode", "WAL")
            .map_err(open_err)?;
        conn.pragma_update(None, "synchronous", "NORMAL")?;
        conn.pragma_update(None, "foreign_keys", "ON")?;
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    fn migrate(&self) -> Result<()> {
        let tx = self.conn.unchecked_transaction()?;
        tx.execute_batch("CREATE TABLE IF NOT EXISTS schema_version (version INTEGER NOT NULL)")?;
        let current: i64 = tx
            .query_row("SELECT MAX(version) FROM schema_version", [], |r| {
                r.get::<_, Option<i64>>(0)
            })?
            .unwrap_or(0);
        if current > SCHEMA_VERSION {
            return Err(StoreError::TooNew {
                found: current,
                supported: SCHEMA_VERSION,
            });
        }
        for (i, sql) in schema::MIGRATIONS.iter().enumerate().skip(current as usize) {
            tx.execute_batch(sql)?;
            tx.execute(
                "INSERT INTO schema_version (version) VALUES (?1)",
                [i as i64 + 1],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// The file this store lives in.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Creates a run with status "running", owned by this process.
    pub fn create_run(&self, new: &NewRun) -> Result<String> {
        let machine = serde_json::to_string(&new.machine)?;
        let host = new.machine.hostname.clone();
        let mut attempt = 0u32;
        loop {
            let id = run_id(new.started_unix_ms, attempt);
            let tx = self.write_transaction()?;
            let inserted = tx.execute(
                "INSERT OR IGNORE INTO runs (id, name, started_unix_ms, target, command, machine, model, status, writer_pid, writer_host)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, 'running', ?8, ?9)",
                params![id, new.name, new.started_unix_ms, new.target, new.command, machine, new.model, i64::from(std::process::id()), host],
            )?;
            if inserted == 0 {
                attempt += 1;
                continue;
            }
            for (k, v) in &new.tags {
                tx.execute(
                    "INSERT INTO run_tags (run_id, key, value) VALUES (?1, ?2, ?3)",
                    params![id, k, v],
                )?;
            }
            tx.commit()?;
            return Ok(id);
        }
    }

    /// Adds or replaces a phase.
    pub fn put_phase(&self, run: &str, phase: &Phase) -> Result<()> {
        self.conn.execute(
            "INSERT OR REPLACE INTO phases (run_id, idx, label, start_ms, end_ms, warmup, connections, rate)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            params![
                run,
                phase.index,
                phase.label,
                phase.start_ms,
                phase.end_ms,
                phase.warmup,
                phase.connections.map(|c| c as i64),
                phase.rate
            ],
        )?;
        Ok(())
    }

    /// Appends one chunk of points to each given series (created on first
    /// use) in one transaction, and advances the run's duration to the
    /// latest point so a run cut short still shows how long it lasted.
    pub fn append_series(&self, run: &str, chunks: &[Series]) -> Result<()> {
        self.append_series_with(run, chunks, &mut SeriesIds::default())
    }

    /// `append_series` for a writer that appends to the same series again
    /// and again: `ids` remembers each series' id and next chunk number, so
    /// a known series costs one INSERT instead of two lookups more. Only
    /// valid while this writer is the only one appending to those series.
    pub fn append_series_with<'a>(
        &self,
        run: &str,
        chunks: impl IntoIterator<Item = &'a Series>,
        ids: &mut SeriesIds,
    ) -> Result<()> {
        let result = self.append_series_tx(run, chunks, ids);
        if result.is_err() {
            // The transaction rolled back: what was remembered may be ahead.
            ids.known.clear();
        }
        result
    }

    fn append_series_tx<'a>(
        &self,
        run: &str,
        chunks: impl IntoIterator<Item = &'a Series>,
        ids: &mut SeriesIds,
    ) -> Result<()> {
        let tx = self.write_transaction()?;
        let mut last_t = f64::NEG_INFINITY;
        {
            let mut find =
                tx.prepare_cached("SELECT id FROM series WHERE run_id = ?1 AND name = ?2")?;
            let mut create =
                tx.prepare_cached("INSERT INTO series (run_id, name, unit) VALUES (?1, ?2, ?3)")?;
            let mut next_seq = tx.prepare_cached(
                "SELECT COALESCE(MAX(seq) + 1, 0) FROM series_chunks WHERE series_id = ?1",
            )?;
            let mut insert = tx.prepare_cached(
                "INSERT INTO series_chunks (series_id, seq, n, t, v) VALUES (?1, ?2, ?3, ?4, ?5)",
            )?;
            for s in chunks {
                let n = s.t_ms.len().min(s.v.len());
                if n == 0 {
                    continue;
                }
                let (id, seq) = match ids.known.get_mut(s.name.as_str()) {
                    Some(known) => {
                        known.1 += 1;
                        (known.0, known.1 - 1)
                    }
                    None => {
                        let id: i64 = match find
                            .query_row(params![run, s.name], |r| r.get(0))
                            .optional()?
                        {
                            Some(id) => id,
                            None => {
                                create.execute(params![run, s.name, s.unit])?;
                                tx.last_insert_rowid()
                            }
                        };
                        let seq: i64 = next_seq.query_row([id], |r| r.get(0))?;
                        ids.known.insert(s.name.clone(), (id, seq + 1));
                        (id, seq)
                    }
                };
                insert.execute(params![
                    id,
                    seq,
                    n as i64,
                    codec::encode_times(&s.t_ms[..n]),
                    codec::encode_values(&s.v[..n])
                ])?;
                last_t = last_t.max(s.t_ms[n - 1]);
            }
        }
        if last_t.is_finite() {
            tx.execute(
                "UPDATE runs SET duration_ms = MAX(duration_ms, ?2) WHERE id = ?1",
                params![run, last_t],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Stores one second of per-route histograms (HdrHistogram V2 encoding).
    pub fn put_route_seconds(
        &self,
        run: &str,
        source: RouteSource,
        seconds: &[RouteSecond],
    ) -> Result<()> {
        use hdrhistogram::serialization::{Serializer, V2Serializer};
        let tx = self.write_transaction()?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT OR REPLACE INTO route_histograms (run_id, source, method, route, second, hdr, errors, transport_errors)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?;
            let mut ser = V2Serializer::new();
            let mut buf = Vec::new();
            for s in seconds {
                buf.clear();
                ser.serialize(&s.histogram, &mut buf)
                    .map_err(|e| StoreError::Histogram(format!("{e:?}")))?;
                insert.execute(params![
                    run,
                    source.as_str(),
                    s.method,
                    s.route,
                    s.second,
                    buf,
                    i64::try_from(s.errors).unwrap_or(i64::MAX),
                    i64::try_from(s.transport_errors).unwrap_or(i64::MAX)
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Reads the per-second per-route histograms of one source, ordered by
    /// route then second.
    pub fn route_seconds(&self, run: &str, source: RouteSource) -> Result<Vec<RouteSecond>> {
        use hdrhistogram::serialization::Deserializer;
        let mut stmt = self.conn.prepare(
            "SELECT method, route, second, hdr, errors, transport_errors FROM route_histograms
             WHERE run_id = ?1 AND source = ?2 ORDER BY method, route, second",
        )?;
        let rows = stmt.query_map(params![run, source.as_str()], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, u32>(2)?,
                r.get::<_, Vec<u8>>(3)?,
                r.get::<_, i64>(4)?,
                r.get::<_, i64>(5)?,
            ))
        })?;
        let mut de = Deserializer::new();
        let mut out = Vec::new();
        for row in rows {
            let (method, route, second, hdr, errors, transport) = row?;
            let histogram = de
                .deserialize(&mut hdr.as_slice())
                .map_err(|e| StoreError::Histogram(format!("{e:?}")))?;
            out.push(RouteSecond {
                method,
                route,
                second,
                histogram,
                errors: u64::try_from(errors).unwrap_or(0),
                transport_errors: u64::try_from(transport).unwrap_or(0),
            });
        }
        Ok(out)
    }

    /// One source's per-route seconds as Run JSON's `route_seconds` entries:
    /// one per route, seconds ascending, each stamped at its end.
    pub fn route_seconds_json(&self, run: &str, source: RouteSource) -> Result<Vec<RouteSeconds>> {
        use hdrhistogram::serialization::Deserializer;
        // Row by row: a run's histograms together can be large (~190 KB
        // each while decoded), their buckets are a few pairs.
        let mut stmt = self.conn.prepare(
            "SELECT method, route, second, hdr, errors, transport_errors FROM route_histograms
             WHERE run_id = ?1 AND source = ?2 ORDER BY method, route, second",
        )?;
        let mut rows = stmt.query(params![run, source.as_str()])?;
        let mut de = Deserializer::new();
        let mut out: Vec<RouteSeconds> = Vec::new();
        while let Some(row) = rows.next()? {
            let hdr: Vec<u8> = row.get(3)?;
            let histogram = de
                .deserialize(&mut hdr.as_slice())
                .map_err(|e| StoreError::Histogram(format!("{e:?}")))?;
            let second = RouteSecond {
                method: row.get(0)?,
                route: row.get(1)?,
                second: row.get(2)?,
                histogram,
                errors: u64::try_from(row.get::<_, i64>(4)?).unwrap_or(0),
                transport_errors: u64::try_from(row.get::<_, i64>(5)?).unwrap_or(0),
            };
            push_route_second(&mut out, &second);
        }
        Ok(out)
    }

    /// Replaces the per-route aggregate table of one source.
    pub fn put_routes(&self, run: &str, source: RouteSource, rows: &[RouteRow]) -> Result<()> {
        let tx = self.write_transaction()?;
        tx.execute(
            "DELETE FROM route_stats WHERE run_id = ?1 AND source = ?2",
            params![run, source.as_str()],
        )?;
        {
            let mut insert = tx.prepare_cached(
                "INSERT INTO route_stats (run_id, source, seq, method, uri, count, row) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)",
            )?;
            for (i, row) in rows.iter().enumerate() {
                insert.execute(params![
                    run,
                    source.as_str(),
                    i as i64,
                    row.method,
                    row.uri,
                    row.count as i64,
                    serde_json::to_string(row)?
                ])?;
            }
        }
        tx.commit()?;
        Ok(())
    }

    /// Stores the load's results (the `keisoku bench --json` object) and the
    /// headline numbers `keisoku runs` lists.
    pub fn put_results(
        &self,
        run: &str,
        results: &serde_json::Value,
        rps: Option<f64>,
        p99_ms: Option<f64>,
    ) -> Result<()> {
        self.conn.execute(
            "UPDATE runs SET results = ?2, rps = ?3, p99_ms = ?4 WHERE id = ?1",
            params![run, serde_json::to_string(results)?, rps, p99_ms],
        )?;
        Ok(())
    }

    /// Appends findings (any JSON objects from crates/findings).
    pub fn add_findings(&self, run: &str, findings: &[serde_json::Value]) -> Result<()> {
        let tx = self.write_transaction()?;
        let base: i64 = tx.query_row(
            "SELECT COALESCE(MAX(seq) + 1, 0) FROM findings WHERE run_id = ?1",
            [run],
            |r| r.get(0),
        )?;
        for (i, f) in findings.iter().enumerate() {
            tx.execute(
                "INSERT INTO findings (run_id, seq, finding) VALUES (?1, ?2, ?3)",
                params![run, base + i as i64, serde_json::to_string(f)?],
            )?;
        }
        tx.commit()?;
        Ok(())
    }

    /// Replaces the run's findings.
    pub fn set_findings(&self, run: &str, findings: &[serde_json::Value]) -> Result<()> {
        self.conn
            .execute("DELETE FROM findings WHERE run_id = ?1", [run])?;
        self.add_findings(run, findings)
    }

    /// Appends bytes to one of the run's output streams (e.g. the started
    /// server's "server.stdout").
    pub fn append_output(&self, run: &str, stream: &str, data: &[u8]) -> Result<()> {
        if data.is_empty() {
            return Ok(());
        }
        self.conn.execute(
            "INSERT INTO outputs (run_id, stream, seq, data)
             VALUES (?1, ?2, (SELECT COALESCE(MAX(seq) + 1, 0) FROM outputs WHERE run_id = ?1 AND stream = ?2), ?3)",
            params![run, stream, data],
        )?;
        Ok(())
    }

    /// The whole of one output stream.
    pub fn output(&self, run: &str, stream: &str) -> Result<Vec<u8>> {
        let mut stmt = self
            .conn
            .prepare("SELECT data FROM outputs WHERE run_id = ?1 AND stream = ?2 ORDER BY seq")?;
        let mut out = Vec::new();
        for chunk in stmt.query_map(params![run, stream], |r| r.get::<_, Vec<u8>>(0))? {
            out.extend_from_slice(&chunk?);
        }
        Ok(out)
    }

    /// Marks the run finished (complete or interrupted) with its length.
    pub fn finish(&self, run: &str, status: RunStatus, duration_ms: f64) -> Result<()> {
        self.conn.execute(
            "UPDATE runs SET status = ?2, duration_ms = MAX(duration_ms, ?3), writer_pid = NULL WHERE id = ?1",
            params![run, status.as_str(), duration_ms],
        )?;
        Ok(())
    }

    /// Every run, newest first.
    pub fn list(&self) -> Result<Vec<RunListing>> {
        let mut stmt = self.conn.prepare(
            "SELECT id, name, started_unix_ms, duration_ms, target, status, rps, p99_ms, writer_pid, writer_host
             FROM runs ORDER BY started_unix_ms DESC, id DESC",
        )?;
        let rows = stmt.query_map([], |r| {
            Ok((
                RunListing {
                    id: r.get(0)?,
                    name: r.get(1)?,
                    started_unix_ms: r.get(2)?,
                    duration_ms: r.get(3)?,
                    target: r.get(4)?,
                    status: r.get(5)?,
                    rps: r.get(6)?,
                    p99_ms: r.get(7)?,
                    tags: BTreeMap::new(),
                },
                r.get::<_, Option<i64>>(8)?,
                r.get::<_, Option<String>>(9)?,
            ))
        })?;
        let mut out = Vec::new();
        for row in rows {
            let (mut l, pid, host) = row?;
            l.status = effective_status(&l.status, pid, host.as_deref()).to_string();
            out.push(l);
        }
        let mut tags = self
            .conn
            .prepare("SELECT run_id, key, value FROM run_tags")?;
        let mut by_run: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for t in tags.query_map([], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, String>(2)?,
            ))
        })? {
            let (run, k, v) = t?;
            by_run.entry(run).or_default().insert(k, v);
        }
        for l in &mut out {
            if let Some(t) = by_run.remove(&l.id) {
                l.tags = t;
            }
        }
        Ok(out)
    }

    /// Finds the run the user means: `last`, a full id, a unique id prefix,
    /// or a name (the newest run of that name).
    pub fn resolve(&self, spec: &str) -> Result<String> {
        let spec_t = spec.trim();
        let unknown = || StoreError::UnknownRun {
            spec: spec.to_string(),
        };
        if spec_t.is_empty() {
            return Err(unknown());
        }
        if spec_t == "last" || spec_t == "latest" {
            return self
                .conn
                .query_row(
                    "SELECT id FROM runs ORDER BY started_unix_ms DESC, id DESC LIMIT 1",
                    [],
                    |r| r.get(0),
                )
                .optional()?
                .ok_or_else(unknown);
        }
        let exact: Option<String> = self
            .conn
            .query_row("SELECT id FROM runs WHERE id = ?1", [spec_t], |r| r.get(0))
            .optional()?;
        if let Some(id) = exact {
            return Ok(id);
        }
        let by_name: Option<String> = self
            .conn
            .query_row(
                "SELECT id FROM runs WHERE name = ?1 ORDER BY started_unix_ms DESC, id DESC LIMIT 1",
                [spec_t],
                |r| r.get(0),
            )
            .optional()?;
        if let Some(id) = by_name {
            return Ok(id);
        }
        // substr() rather than LIKE: ids never contain wildcards, user input might.
        let mut stmt = self.conn.prepare(
            "SELECT id FROM runs WHERE substr(id, 1, length(?1)) = ?1 ORDER BY id LIMIT 6",
        )?;
        let ids: Vec<String> = stmt
            .query_map([spec_t], |r| r.get(0))?
            .collect::<rusqlite::Result<_>>()?;
        match ids.len() {
            0 => Err(unknown()),
            1 => Ok(ids.into_iter().next().unwrap_or_default()),
            _ => Err(StoreError::Ambiguous {
                spec: spec.to_string(),
                candidates: ids.join(", "),
            }),
        }
    }

    /// Deletes a run and everything recorded with it.
    pub fn remove(&self, run: &str) -> Result<bool> {
        let n = self.conn.execute("DELETE FROM runs WHERE id = ?1", [run])?;
        Ok(n > 0)
    }

    /// Reads the run's identity and context.
    pub fn run_info(&self, run: &str) -> Result<RunInfo> {
        let row = self
            .conn
            .query_row(
                "SELECT id, name, started_unix_ms, duration_ms, target, command, machine, model, status, writer_pid, writer_host
                 FROM runs WHERE id = ?1",
                [run],
                |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, i64>(2)?,
                        r.get::<_, f64>(3)?,
                        r.get::<_, Option<String>>(4)?,
                        r.get::<_, String>(5)?,
                        r.get::<_, String>(6)?,
                        r.get::<_, Option<String>>(7)?,
                        r.get::<_, String>(8)?,
                        r.get::<_, Option<i64>>(9)?,
                        r.get::<_, Option<String>>(10)?,
                    ))
                },
            )
            .optional()?
            .ok_or_else(|| StoreError::UnknownRun {
                spec: run.to_string(),
            })?;
        let (id, name, started, duration, target, command, machine, model, status, pid, host) = row;
        let status = effective_status(&status, pid, host.as_deref());
        let mut tags = BTreeMap::new();
        let mut stmt = self
            .conn
            .prepare("SELECT key, value FROM run_tags WHERE run_id = ?1 ORDER BY key")?;
        for t in stmt.query_map([run], |r| {
            Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?))
        })? {
            let (k, v) = t?;
            tags.insert(k, v);
        }
        Ok(RunInfo {
            id,
            name,
            tags,
            started_unix_ms: started,
            duration_ms: duration,
            target,
            command,
            machine: serde_json::from_str(&machine)?,
            interrupted: status == "interrupted",
            model,
            status: status.to_string(),
        })
    }

    /// Names and units of the run's series, in name order, without points.
    pub fn series_names(&self, run: &str) -> Result<Vec<(String, String)>> {
        let mut stmt = self
            .conn
            .prepare("SELECT name, unit FROM series WHERE run_id = ?1 ORDER BY name")?;
        let out = stmt
            .query_map([run], |r| Ok((r.get(0)?, r.get(1)?)))?
            .collect::<rusqlite::Result<_>>()?;
        Ok(out)
    }

    /// Every series of the run, points in time order, sorted by name.
    pub fn series(&self, run: &str) -> Result<Vec<Series>> {
        let mut stmt = self.conn.prepare(
            "SELECT s.name, s.unit, c.n, c.t, c.v FROM series s JOIN series_chunks c ON c.series_id = s.id
             WHERE s.run_id = ?1 ORDER BY s.name, c.seq",
        )?;
        let rows = stmt.query_map([run], |r| {
            Ok((
                r.get::<_, String>(0)?,
                r.get::<_, String>(1)?,
                r.get::<_, i64>(2)?,
                r.get::<_, Vec<u8>>(3)?,
                r.get::<_, Vec<u8>>(4)?,
            ))
        })?;
        let mut out: Vec<Series> = Vec::new();
        for row in rows {
            let (name, unit, n, t, v) = row?;
            let n = usize::try_from(n).map_err(|_| StoreError::Corrupt("negative count".into()))?;
            if out.last().is_none_or(|s| s.name != name) {
                out.push(Series {
                    name,
                    unit,
                    t_ms: Vec::new(),
                    v: Vec::new(),
                });
            }
            if let Some(s) = out.last_mut() {
                codec::decode_times(&t, n, &mut s.t_ms)?;
                codec::decode_values(&v, n, &mut s.v)?;
            }
        }
        Ok(out)
    }

    /// The run's phases in order.
    pub fn phases(&self, run: &str) -> Result<Vec<Phase>> {
        let mut stmt = self.conn.prepare(
            "SELECT idx, label, start_ms, end_ms, warmup, connections, rate FROM phases WHERE run_id = ?1 ORDER BY idx",
        )?;
        let out = stmt
            .query_map([run], |r| {
                Ok(Phase {
                    index: r.get(0)?,
                    label: r.get(1)?,
                    start_ms: r.get(2)?,
                    end_ms: r.get(3)?,
                    warmup: r.get(4)?,
                    connections: r.get::<_, Option<i64>>(5)?.map(|c| c.max(0) as u64),
                    rate: r.get(6)?,
                })
            })?
            .collect::<rusqlite::Result<_>>()?;
        Ok(out)
    }

    /// Per-route aggregates of one source.
    pub fn routes(&self, run: &str, source: RouteSource) -> Result<Vec<RouteRow>> {
        let mut stmt = self.conn.prepare(
            "SELECT row FROM route_stats WHERE run_id = ?1 AND source = ?2 ORDER BY seq",
        )?;
        let rows = stmt.query_map(params![run, source.as_str()], |r| r.get::<_, String>(0))?;
        let mut out = Vec::new();
        for row in rows {
            out.push(serde_json::from_str(&row?)?);
        }
        Ok(out)
    }

    /// The load's results object, `null` when none was stored.
    pub fn results(&self, run: &str) -> Result<serde_json::Value> {
        let raw: Option<String> = self
            .conn
            .query_row("SELECT results FROM runs WHERE id = ?1", [run], |r| {
                r.get(0)
            })
            .optional()?
            .flatten();
        match raw {
            Some(s) => Ok(serde_json::from_str(&s)?),
            None => Ok(serde_json::Value::Null),
        }
    }

    /// The run's findings in the order they were added.
    pub fn findings(&self, run: &str) -> Result<Vec<serde_json::Value>> {
        let mut stmt = self
            .conn
            .prepare("SELECT finding FROM findings WHERE run_id = ?1 ORDER BY seq")?;
        let rows = stmt.query_map([run], |r| r.get::<_, String>(0))?;
        let mut out = Vec::new();
        for row in rows {
            out.push(serde_json::from_str(&row?)?);
        }
        Ok(out)
    }

    /// The whole run as the Run JSON model.
    pub fn load(&self, run: &str) -> Result<RunJson> {
        // One read transaction: a run being written shows one consistent moment.
        let tx = self.conn.unchecked_transaction()?;
        let out = RunJson {
            version: RUN_JSON_VERSION,
            run: self.run_info(run)?,
            results: self.results(run)?,
            phases: self.phases(run)?,
            series: self.series(run)?,
            routes: Routes {
                client: self.routes(run, RouteSource::Client)?,
                access_log: self.routes(run, RouteSource::AccessLog)?,
                access_log_lines: self.access_log(run)?,
            },
            route_seconds: RouteSecondsBySource {
                client: self.route_seconds_json(run, RouteSource::Client)?,
                access_log: self.route_seconds_json(run, RouteSource::AccessLog)?,
            },
            profile: self.profile(run)?,
            wall_profile: self.profile_of(run, ProfileKind::Wall)?,
            findings: self.findings(run)?,
        };
        tx.finish()?;
        Ok(out)
    }
}

/// Groups stored route seconds (ordered by route, then second) into one
/// [`RouteSeconds`] per route, with sparse log buckets from each histogram.
pub fn route_seconds_json(seconds: &[RouteSecond]) -> Vec<RouteSeconds> {
    let mut out: Vec<RouteSeconds> = Vec::new();
    for s in seconds {
        push_route_second(&mut out, s);
    }
    out
}

/// Adds one stored second to its route's entry (the last one when the
/// seconds come ordered by route).
fn push_route_second(out: &mut Vec<RouteSeconds>, s: &RouteSecond) {
    {
        let same = out
            .last()
            .is_some_and(|r| r.method == s.method && r.route == s.route);
        if !same {
            out.push(RouteSeconds {
                method: s.method.clone(),
                route: s.route.clone(),
                ..RouteSeconds::default()
            });
        }
        let Some(r) = out.last_mut() else { return };
        let h = &s.histogram;
        let q = |p: f64| {
            if h.is_empty() {
                0.0
            } else {
                h.value_at_quantile(p) as f64 / 1000.0
            }
        };
        r.t_ms.push((f64::from(s.second) + 1.0) * 1000.0);
        r.count.push(h.len() + s.transport_errors);
        r.errors.push(s.errors);
        r.p50_ms.push(q(0.5));
        r.p99_ms.push(q(0.99));
        r.max_ms.push(if h.is_empty() {
            0.0
        } else {
            h.max() as f64 / 1000.0
        });
        r.hist.push(sparse_buckets(h));
    }
}

/// An HdrHistogram of µs as sparse `(bucket, count)` pairs, ascending.
pub fn sparse_buckets(h: &hdrhistogram::Histogram<u64>) -> Vec<(u32, u64)> {
    let mut out: Vec<(u32, u64)> = Vec::new();
    for v in h.iter_recorded() {
        // The bucket of the value's equivalence range midpoint: HdrHistogram
        // keeps values only to its precision.
        let us = h.median_equivalent(v.value_iterated_to()) as f64;
        let k = keisoku_common::latency_bucket(us);
        match out.last_mut() {
            Some(last) if last.0 == k => last.1 += v.count_at_value(),
            _ => out.push((k, v.count_at_value())),
        }
    }
    out
}

/// A run left "running" by a process that no longer exists on this host was
/// cut short (killed keisoku, power loss): report it as interrupted.
fn effective_status(stored: &str, pid: Option<i64>, host: Option<&str>) -> &'static str {
    match RunStatus::parse(stored) {
        Some(RunStatus::Running) => {
            let alive = match (pid, host) {
                (Some(pid), Some(h)) if h == local_hostname() => {
                    Path::new(&format!("/proc/{pid}")).exists()
                }
                // Another host's writer: trust the stored word.
                (Some(_), Some(_)) => true,
                _ => false,
            };
            if alive {
                "running"
            } else {
                "interrupted"
            }
        }
        Some(s) => s.as_str(),
        None => "interrupted",
    }
}

/// A path as the path part of an SQLite `file:` URI: bytes other than
/// unreserved characters and `/` percent-encoded (`?`, `#`, `%` and spaces
/// occur in real directory names).
fn uri_path(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut out = String::new();
    for &b in path.as_os_str().as_bytes() {
        if b.is_ascii_alphanumeric() || b"/-._~".contains(&b) {
            out.push(char::from(b));
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// This machine's host name (from /proc, "" when unknown).
pub fn local_hostname() -> String {
    std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|s| s.trim().to_string())
        .unwrap_or_default()
}

/// A run id from its start time: `YYYYMMDD-HHMMSS-xxxx`, the suffix
/// derived from the clock's sub-second bits, the pid and `attempt`.
fn run_id(started_unix_ms: i64, attempt: u32) -> String {
    let secs = started_unix_ms.div_euclid(1000);
    let (y, mo, d, h, mi, s) = civil_from_unix(secs);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or(0);
    let mut x =
        u64::from(nanos) ^ (u64::from(std::process::id()) << 20) ^ (u64::from(attempt) << 40);
    // splitmix64 finaliser: spreads close inputs over all four hex digits.
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58476d1ce4e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d049bb133111eb);
    x ^= x >> 31;
    format!("{y:04}{mo:02}{d:02}-{h:02}{mi:02}{s:02}-{:04x}", x & 0xffff)
}

/// UTC calendar fields of a Unix time: keisoku's one calendar.
pub use keisoku_common::civil_from_unix;

/// Series ids and next chunk numbers a writer has seen (see
/// [`Store::append_series_with`]).
#[derive(Debug, Default)]
pub struct SeriesIds {
    known: HashMap<String, (i64, i64)>,
}

/// Buffers series points between flushes so the store gets one chunk per
/// series every few seconds instead of one row per point. Meant for one
/// writer per series: it remembers series ids between flushes, and keeps
/// names and buffers so a steady stream of points allocates nothing.
#[derive(Debug, Default)]
pub struct SeriesBuffer {
    pending: BTreeMap<String, Series>,
    ids: SeriesIds,
}

impl SeriesBuffer {
    /// Adds one point.
    pub fn push(&mut self, name: &str, unit: &str, t_ms: f64, v: f64) {
        let s = match self.pending.get_mut(name) {
            Some(s) => s,
            None => self
                .pending
                .entry(name.to_string())
                .or_insert_with(|| Series {
                    name: name.to_string(),
                    unit: unit.to_string(),
                    t_ms: Vec::new(),
                    v: Vec::new(),
                }),
        };
        s.t_ms.push(t_ms);
        s.v.push(v);
    }

    /// Points waiting to be written.
    pub fn len(&self) -> usize {
        self.pending.values().map(|s| s.t_ms.len()).sum()
    }

    /// True when nothing waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Writes every pending point as one chunk per series and empties the
    /// buffer (series without points are left out).
    pub fn flush(&mut self, store: &Store, run: &str) -> Result<()> {
        if self.is_empty() {
            return Ok(());
        }
        let result = store.append_series_with(run, self.pending.values(), &mut self.ids);
        for s in self.pending.values_mut() {
            s.t_ms.clear();
            s.v.clear();
        }
        result
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_unix(0), (1970, 1, 1, 0, 0, 0));
        assert_eq!(civil_from_unix(1_763_760_600), (2025, 11, 21, 21, 30, 0));
        assert_eq!(civil_from_unix(951_782_400), (2000, 2, 29, 0, 0, 0));
    }

    #[test]
    fn a_version_1_store_migrates_and_keeps_its_runs() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("old.db");
        {
            // A store as keisoku wrote it before kept log lines.
            let conn = Connection::open(&path).unwrap();
            conn.execute_batch(schema::MIGRATIONS[0]).unwrap();
            conn.execute_batch(
                "CREATE TABLE schema_version (version INTEGER NOT NULL);
                 INSERT INTO schema_version VALUES (1);
                 INSERT INTO runs (id, name, started_unix_ms, status) VALUES ('20261121-213000-a1b2', 'old', 1763760600000, 'complete');
                 ",
            )
            .unwrap();
            let row = RouteRow {
                method: "GET".into(),
                uri: "/".into(),
                count: 3,
                ..RouteRow::default()
            };
            conn.execute(
                "INSERT INTO route_stats (run_id, source, seq, method, uri, count, row)
                 VALUES ('20261121-213000-a1b2', 'access_log', 0, 'GET', '/', 3, ?1)",
                [serde_json::to_string(&row).unwrap()],
            )
            .unwrap();
        }
        let store = Store::open_existing(&path).unwrap();
        let version: i64 = store
            .conn
            .query_row("SELECT MAX(version) FROM schema_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(version, SCHEMA_VERSION);
        let run = store.resolve("old").unwrap();
        let json = store.load(&run).unwrap();
        assert_eq!(json.routes.access_log.len(), 1);
        assert_eq!(json.routes.access_log[0].count, 3);
        assert!(json.routes.access_log_lines.is_none());
        // The new tables work on the migrated file.
        let mut w = LogLinesWriter::start(
            &store,
            &run,
            AccessLog {
                path: "a.log".into(),
                format: "ltsv".into(),
                keep_lines: true,
                max_bytes: 100,
                ..AccessLog::default()
            },
        )
        .unwrap();
        w.push(&store, b"uri:/\n", 0.0).unwrap();
        w.flush(&store, 0.0).unwrap();
        assert_eq!(store.access_log(&run).unwrap().unwrap().kept_lines, 1);
        // Opening again applies nothing twice.
        drop(store);
        assert!(Store::open(&path).is_ok());
    }

    #[test]
    fn run_ids_have_the_documented_shape() {
        let id = run_id(1_763_760_600_000, 0);
        assert!(id.starts_with("20251121-213000-"), "{id}");
        assert_eq!(id.len(), 20);
    }
}
