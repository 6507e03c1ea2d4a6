//! Schema and migrations. Each entry of [`MIGRATIONS`] moves the store from
//! version i to i + 1; `schema_version` holds the current version. SQL stays
//! plain (no SQLite-only features beyond WAL) so another backend can mirror it.

/// Migrations in order; index 0 creates version 1.
pub const MIGRATIONS: &[&str] = &[
    r#"
CREATE TABLE runs (
    id              TEXT PRIMARY KEY,
    name            TEXT NOT NULL DEFAULT '',
    started_unix_ms INTEGER NOT NULL,
    duration_ms     REAL NOT NULL DEFAULT 0,
    target          TEXT,
    command         TEXT NOT NULL DEFAULT '',
    machine         TEXT NOT NULL DEFAULT '{}',
    model           TEXT,
    status          TEXT NOT NULL,
    writer_pid      INTEGER,
    writer_host     TEXT,
    rps             REAL,
    p99_ms          REAL,
    results         TEXT
);
CREATE INDEX runs_started ON runs(started_unix_ms);
CREATE INDEX runs_name ON runs(name);
CREATE TABLE run_tags (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    key    TEXT NOT NULL,
    value  TEXT NOT NULL,
    PRIMARY KEY (run_id, key)
);
CREATE TABLE phases (
    run_id      TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    idx         INTEGER NOT NULL,
    label       TEXT NOT NULL,
    start_ms    REAL NOT NULL,
    end_ms      REAL NOT NULL,
    warmup      INTEGER NOT NULL,
    connections INTEGER,
    rate        REAL,
    PRIMARY KEY (run_id, idx)
);
CREATE TABLE series (
    id     INTEGER PRIMARY KEY,
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    name   TEXT NOT NULL,
    unit   TEXT NOT NULL,
    UNIQUE (run_id, name)
);
CREATE TABLE series_chunks (
    series_id INTEGER NOT NULL REFERENCES series(id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,
    n         INTEGER NOT NULL,
    t         BLOB NOT NULL,
    v         BLOB NOT NULL,
    PRIMARY KEY (series_id, seq)
);
CREATE TABLE route_histograms (
    run_id  TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    source  TEXT NOT NULL,
    method  TEXT NOT NULL,
    route   TEXT NOT NULL,
    second  INTEGER NOT NULL,
    hdr     BLOB NOT NULL,
    PRIMARY KEY (run_id, source, method, route, second)
);
CREATE TABLE route_stats (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    source TEXT NOT NULL,
    seq    INTEGER NOT NULL,
    method TEXT NOT NULL,
    uri    TEXT NOT NULL,
    count  INTEGER NOT NULL,
    row    TEXT NOT NULL,
    PRIMARY KEY (run_id, source, seq)
);
CREATE TABLE profiles (
    run_id        TEXT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    title         TEXT NOT NULL,
    unit          TEXT NOT NULL,
    kinds         TEXT NOT NULL,
    threads       TEXT NOT NULL,
    start_unix_ns INTEGER,
    duration_ms   REAL,
    counts        BLOB,
    sample_count  INTEGER NOT NULL DEFAULT 0,
    has_time      INTEGER NOT NULL DEFAULT 0,
    has_thread    INTEGER NOT NULL DEFAULT 0,
    has_weight    INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE profile_frames (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    id     INTEGER NOT NULL,
    name   TEXT NOT NULL,
    module TEXT NOT NULL,
    kind   INTEGER NOT NULL,
    PRIMARY KEY (run_id, id)
);
CREATE TABLE profile_nodes (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    id     INTEGER NOT NULL,
    parent INTEGER NOT NULL,
    frame  INTEGER NOT NULL,
    PRIMARY KEY (run_id, id)
);
CREATE TABLE profile_samples (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq    INTEGER NOT NULL,
    n      INTEGER NOT NULL,
    node   BLOB NOT NULL,
    time   BLOB,
    thread BLOB,
    weight BLOB,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE findings (
    run_id  TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq     INTEGER NOT NULL,
    finding TEXT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE outputs (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    stream TEXT NOT NULL,
    seq    INTEGER NOT NULL,
    data   BLOB NOT NULL,
    PRIMARY KEY (run_id, stream, seq)
);
"#,
    // Version 2: the followed access log's own lines, so every `keisoku
    // logs` option works on a stored run, and what was kept of them.
    r#"
CREATE TABLE access_logs (
    run_id       TEXT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    path         TEXT NOT NULL,
    format       TEXT NOT NULL,
    pattern      TEXT,
    keep_lines   INTEGER NOT NULL,
    max_bytes    INTEGER NOT NULL,
    lines        INTEGER NOT NULL DEFAULT 0,
    kept_lines   INTEGER NOT NULL DEFAULT 0,
    kept_bytes   INTEGER NOT NULL DEFAULT 0,
    stored_bytes INTEGER NOT NULL DEFAULT 0,
    truncated_ms REAL
);
CREATE TABLE log_chunks (
    run_id    TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,
    first_ms  REAL NOT NULL,
    last_ms   REAL NOT NULL,
    n         INTEGER NOT NULL,
    raw_bytes INTEGER NOT NULL,
    data      BLOB NOT NULL,
    PRIMARY KEY (run_id, seq)
);
"#,
    // Version 3: errors per route second: all of them (5xx answers and the
    // client's transport errors) and the transport ones, which have no
    // latency to put in the histogram.
    r#"
ALTER TABLE route_histograms ADD COLUMN errors INTEGER NOT NULL DEFAULT 0;
ALTER TABLE route_histograms ADD COLUMN transport_errors INTEGER NOT NULL DEFAULT 0;
"#,
    // Version 4: a run's wall-clock profile beside its CPU profile (py-spy
    // --idle: every thread at every tick, waiting or not), in tables shaped
    // as the CPU profile's so one reader serves both; a store without them
    // simply has no wall-clock profiles.
    r#"
CREATE TABLE wall_profiles (
    run_id        TEXT PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
    title         TEXT NOT NULL,
    unit          TEXT NOT NULL,
    kinds         TEXT NOT NULL,
    threads       TEXT NOT NULL,
    start_unix_ns INTEGER,
    duration_ms   REAL,
    counts        BLOB,
    sample_count  INTEGER NOT NULL DEFAULT 0,
    has_time      INTEGER NOT NULL DEFAULT 0,
    has_thread    INTEGER NOT NULL DEFAULT 0,
    has_weight    INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE wall_profile_frames (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    id     INTEGER NOT NULL,
    name   TEXT NOT NULL,
    module TEXT NOT NULL,
    kind   INTEGER NOT NULL,
    PRIMARY KEY (run_id, id)
);
CREATE TABLE wall_profile_nodes (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    id     INTEGER NOT NULL,
    parent INTEGER NOT NULL,
    frame  INTEGER NOT NULL,
    PRIMARY KEY (run_id, id)
);
CREATE TABLE wall_profile_samples (
    run_id TEXT NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
    seq    INTEGER NOT NULL,
    n      INTEGER NOT NULL,
    node   BLOB NOT NULL,
    time   BLOB,
    thread BLOB,
    weight BLOB,
    PRIMARY KEY (run_id, seq)
);
"#,
];
