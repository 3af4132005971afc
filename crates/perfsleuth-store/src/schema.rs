//! The tables' DDL, one constant per schema change, in the order
//! [`crate::migrations`] applies them.
//!
//! These texts are what stores in the wild have already run: a released
//! constant must never change, not even its indentation (SQLite keeps the
//! `CREATE` text verbatim in `sqlite_schema`); a schema change is a new
//! constant and a new migration step.

use crate::error::{At, StoreError};
use rusqlite::{Connection, OptionalExtension};
use std::path::Path;

/// Version 1: environments, runs, benchmarks and samples.
pub(crate) const INITIAL_TABLES: &str = "CREATE TABLE environments (
        id INTEGER PRIMARY KEY,
        hash TEXT NOT NULL UNIQUE,
        facts TEXT NOT NULL
    );
    CREATE TABLE runs (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        started_at TEXT NOT NULL,
        ended_at TEXT,
        status TEXT NOT NULL,
        tool_version TEXT NOT NULL,
        git_commit TEXT,
        git_branch TEXT,
        git_dirty INTEGER,
        mode TEXT NOT NULL,
        options TEXT NOT NULL,
        environment_id INTEGER NOT NULL REFERENCES environments(id),
        context TEXT NOT NULL
    );
    CREATE INDEX runs_environment ON runs(environment_id);
    CREATE TABLE benchmarks (
        id INTEGER PRIMARY KEY,
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        name TEXT NOT NULL,
        command TEXT NOT NULL,
        argv TEXT NOT NULL,
        parameters TEXT NOT NULL,
        UNIQUE (run_id, position)
    );
    CREATE TABLE samples (
        benchmark_id INTEGER NOT NULL REFERENCES benchmarks(id) ON DELETE CASCADE,
        iteration INTEGER NOT NULL,
        wall_ns INTEGER NOT NULL,
        user_ns INTEGER NOT NULL,
        sys_ns INTEGER NOT NULL,
        peak_rss_bytes INTEGER NOT NULL,
        minor_faults INTEGER NOT NULL,
        major_faults INTEGER NOT NULL,
        voluntary_cs INTEGER NOT NULL,
        involuntary_cs INTEGER NOT NULL,
        exit_code INTEGER,
        signal INTEGER,
        counters TEXT,
        PRIMARY KEY (benchmark_id, iteration)
    ) WITHOUT ROWID;";

/// Version 2: facts about each benchmarked program (hash, ELF class, ABI), JSON.
pub(crate) const BENCHMARK_FACTS: &str = "ALTER TABLE benchmarks ADD COLUMN facts TEXT";

/// Version 3: the per-function profile of a simulation-mode benchmark, JSON.
pub(crate) const BENCHMARK_PROFILE: &str = "ALTER TABLE benchmarks ADD COLUMN profile TEXT";

/// Version 4: machine microbenchmark results (`perfsleuth probe`), one row per
/// metric. REAL columns are nullable: SQLite stores NaN as NULL.
pub(crate) const PROBE_RESULTS: &str = "CREATE TABLE probe_results (
        run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
        position INTEGER NOT NULL,
        probe TEXT NOT NULL,
        metric TEXT NOT NULL,
        value REAL,
        unit TEXT NOT NULL,
        lower_is_better INTEGER NOT NULL,
        cycles REAL,
        spread REAL,
        stable INTEGER NOT NULL,
        headline INTEGER NOT NULL,
        note TEXT,
        PRIMARY KEY (run_id, position)
    ) WITHOUT ROWID;";

/// Version 5: the round of the run each sample was measured in.
pub(crate) const SAMPLE_ROUND: &str =
    "ALTER TABLE samples ADD COLUMN round INTEGER NOT NULL DEFAULT 0";

/// Version 6: per-benchmark summaries of one metric (median and its CI),
/// derived from the samples of a complete run and cached for `history`.
pub(crate) const METRIC_SUMMARIES: &str = "CREATE TABLE metric_summaries (
        benchmark_id INTEGER NOT NULL REFERENCES benchmarks(id) ON DELETE CASCADE,
        metric TEXT NOT NULL,
        n INTEGER NOT NULL,
        median REAL,
        lo REAL,
        hi REAL,
        PRIMARY KEY (benchmark_id, metric)
    ) WITHOUT ROWID;";

/// Version 7: the wall time with its fraction of a nanosecond (imported
/// per-iteration times); NULL for measured samples, whose `wall_ns` is exact.
pub(crate) const SAMPLE_WALL_EXACT: &str = "ALTER TABLE samples ADD COLUMN wall_exact_ns REAL";

/// Version 8: what another tool reported for a benchmark it kept no samples
/// of (summary-only imports), JSON; NULL otherwise.
pub(crate) const BENCHMARK_SUMMARIES: &str = "ALTER TABLE benchmarks ADD COLUMN summaries TEXT";

/// Version 10: where a benchmark's threads waited for locks (`--locks`),
/// a `LockReport` as JSON; NULL when not traced.
pub(crate) const BENCHMARK_LOCKS: &str = "ALTER TABLE benchmarks ADD COLUMN locks TEXT";

/// Version 11: a benchmark's sampled call stacks (`--profile`), a
/// `StackProfile` as JSON; NULL when not profiled.
pub(crate) const BENCHMARK_STACKS: &str = "ALTER TABLE benchmarks ADD COLUMN stacks TEXT";

/// Version 12: a benchmark's allocation profile (`--profile=alloc`), an
/// `AllocProfile` as JSON; NULL when not profiled. Its per-run counts are
/// also counters of the samples (`alloc_count`, `alloc_bytes`,
/// `alloc_peak_bytes`).
pub(crate) const BENCHMARK_ALLOCS: &str = "ALTER TABLE benchmarks ADD COLUMN allocs TEXT";

/// Version 13: the bisection a run was measured for (`options.bisect.id`),
/// so a server lists a bisection's runs without reading every run's options;
/// runs stored before it get theirs from their options.
pub(crate) const RUN_BISECTION: &str = "ALTER TABLE runs ADD COLUMN bisection TEXT;
    UPDATE runs SET bisection = json_extract(options, '$.bisect.id')
        WHERE options LIKE '%\"bisect\"%';
    CREATE INDEX runs_bisection ON runs (project, bisection) WHERE bisection IS NOT NULL;";

/// Version 14: the hash of a benchmark's program (its `binary.sha256`
/// fact), indexed, so the noise of a program is learned from its earlier
/// runs by an index look-up, not a text match over every benchmark; rows
/// stored before it get theirs from their facts.
pub(crate) const BENCHMARK_BINARY: &str = "ALTER TABLE benchmarks ADD COLUMN binary_sha256 TEXT;
    UPDATE benchmarks SET binary_sha256 = json_extract(facts, '$.\"binary.sha256\".value')
        WHERE facts LIKE '%binary.sha256%';
    CREATE INDEX benchmarks_binary ON benchmarks (binary_sha256, run_id)
        WHERE binary_sha256 IS NOT NULL;";

/// Version 15: the indexes that keep reads of one benchmark or of the
/// newest runs at the cost of what they return: a benchmark's history by
/// name (it scanned every benchmark of the project), and `latest`, which
/// orders by start time (it sorted every run).
pub(crate) const READ_INDEXES: &str = "CREATE INDEX benchmarks_name ON benchmarks (name, run_id);
    CREATE INDEX runs_started ON runs (project, started_at, id);";

/// Version 16: nothing in SQLite, whose per-row check of `samples`' key
/// on `benchmarks` is a B-tree look-up in C; PostgreSQL's step (its
/// `SAMPLE_KEY_PER_STATEMENT`) checks that key once per statement.
pub(crate) const SAMPLE_KEY_PER_STATEMENT: &str =
    "-- samples.benchmark_id keeps its row-level foreign key in SQLite";

/// Version 9: each run's UUID (kept wherever the run is copied; existing
/// runs get a random one) and project ("" in a local store), and a team
/// server's projects and API tokens (only the SHA-256 of a secret is kept).
pub(crate) const PROJECTS_AND_TOKENS: &str = "ALTER TABLE runs ADD COLUMN uuid TEXT;
    UPDATE runs SET uuid = lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' ||
        substr(hex(randomblob(2)), 2) || '-' || substr('89ab', 1 + abs(random() % 4), 1) ||
        substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)));
    ALTER TABLE runs ADD COLUMN project TEXT NOT NULL DEFAULT '';
    CREATE UNIQUE INDEX runs_project_uuid ON runs(project, uuid);
    CREATE INDEX runs_project ON runs(project, id);
    CREATE TABLE projects (
        name TEXT PRIMARY KEY,
        public_read INTEGER NOT NULL,
        created_at TEXT NOT NULL
    ) WITHOUT ROWID;
    CREATE TABLE tokens (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        project TEXT NOT NULL,
        name TEXT NOT NULL,
        hash TEXT NOT NULL UNIQUE,
        scopes TEXT NOT NULL,
        created_at TEXT NOT NULL,
        revoked_at TEXT
    );";

/// Touches the root page of every table of schema `version`, so a damaged
/// store fails on open rather than halfway through a run, and before
/// anything is written.
pub(crate) fn probe(conn: &Connection, path: &Path, version: u32) -> Result<(), StoreError> {
    let since_4 = ["SELECT 1 FROM probe_results LIMIT 1"];
    let since_6 = ["SELECT 1 FROM metric_summaries LIMIT 1"];
    let since_9 = [
        "SELECT 1 FROM projects LIMIT 1",
        "SELECT 1 FROM tokens LIMIT 1",
    ];
    for sql in [
        "SELECT 1 FROM environments LIMIT 1",
        "SELECT max(id) FROM runs",
        "SELECT 1 FROM benchmarks LIMIT 1",
        "SELECT 1 FROM samples LIMIT 1",
    ]
    .into_iter()
    .chain(since_4.into_iter().filter(|_| version >= 4))
    .chain(since_6.into_iter().filter(|_| version >= 6))
    .chain(since_9.into_iter().filter(|_| version >= 9))
    {
        conn.query_row(sql, [], |_| Ok(())).optional().at(path)?;
    }
    Ok(())
}
