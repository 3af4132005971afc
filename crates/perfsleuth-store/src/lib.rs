//! Persistence for perfsleuth runs.
//!
//! The rest of perfsleuth reads and writes through the [`Store`] trait (or
//! one of its roles: [`RunWriter`], [`RunReader`], [`Admin`]), so a second
//! backend (PostgreSQL for the team server) can stand in for the embedded
//! one. [`SqliteStore`] is the embedded backend: one SQLite file per
//! store, versioned with `PRAGMA user_version` and marked as ours with
//! `PRAGMA application_id`.
//!
//! The store is written while measuring, one committed row per sample, so a
//! crash loses at most the sample in flight. It runs in WAL mode with a long
//! busy timeout so several perfsleuth processes can share one store.
//!
//! Opening is careful never to modify a file that is not ours: the SQLite
//! header is checked by hand before SQLite sees the file, and every check runs
//! before the first write (switching to WAL mode is a write).
//!
//! Modules: `error` (the error type), `schema` (table DDL),
//! `migrations` (recognising our files, forward migrations), `sql` (the
//! primitives both backends provide), `sqlite` and `postgres` (the
//! backends), `queries` (the roles' reads and writes, once for both),
//! `location` (`--store` values, the default path), `hash` (environment
//! hashes).

#![forbid(unsafe_code)]

mod error;
mod hash;
mod location;
mod migrations;
mod postgres;
mod queries;
mod schema;
mod sql;
mod sqlite;

pub use error::StoreError;
pub use hash::{comparability_hash, sha256_hex};
pub use location::StoreUrl;
pub use migrations::{APPLICATION_ID, STORE_SCHEMA_VERSION};
pub use postgres::PgStore;
pub use queries::new_uuid as new_run_uuid;
pub use queries::{Admin, Backend, Incoming, LIST_PAGE, RunReader, RunWriter};
pub use sql::statements_issued;
pub use sqlite::{BUSY_TIMEOUT, SqliteStore};

use perfsleuth_model::{GitInfo, Mode};
use std::collections::BTreeMap;

/// One metric of one benchmark of a complete run, summarised: what a
/// history point shows, cached by [`RunWriter::put_metric_summaries`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MetricSummary {
    /// Finite values behind it.
    pub n: usize,
    /// Their median.
    pub median: f64,
    /// Lower end of the median's 95 % CI.
    pub lo: f64,
    /// Upper end.
    pub hi: f64,
}

/// One benchmark of one complete run, without its samples: a point of
/// `perfsleuth history` before its values are read.
#[derive(Debug, Clone, PartialEq)]
pub struct HistoryEntry {
    /// The benchmark's row id, for [`RunReader::metric_values`].
    pub benchmark_id: i64,
    /// The run's id.
    pub run_id: i64,
    /// The run's start time, RFC 3339 UTC.
    pub started_at: String,
    /// The run's source-control state.
    pub git: Option<GitInfo>,
    /// The run's mode.
    pub mode: Mode,
    /// The run's environment row (identity and performance facts), for [`RunReader::environments`].
    pub environment_id: i64,
    /// Benchmark name.
    pub name: String,
    /// Its parameters.
    pub parameters: BTreeMap<String, String>,
    /// The benchmarked program's `binary.sha256`, when it was known.
    pub binary_sha256: Option<String>,
    /// The argument vector executed, as stored (JSON text): with the hash,
    /// what says two points ran exactly the same program.
    pub argv: String,
    /// The cached summary of the metric [`EntryScope::summary_of`] named,
    /// read with the entry (inside, `None` where none is cached yet);
    /// `None` when no metric was named.
    pub summary: Option<(perfsleuth_model::Metric, Option<MetricSummary>)>,
}

/// Which of the project's history entries [`RunReader::history_entries_in`]
/// reads; the default is all of them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct EntryScope {
    /// Only benchmarks of these names (all when empty).
    pub names: Vec<String>,
    /// Only runs with a smaller id (those stored before this one).
    pub before_run: Option<i64>,
    /// Only the newest this many runs of commands (below `before_run`),
    /// whether or not they hold a benchmark of `names`.
    pub newest_runs: Option<usize>,
    /// Read each entry's cached summary of this metric with it, in the
    /// same statement ([`HistoryEntry::summary`]): a history's points
    /// without a look-up per few hundred of them.
    pub summary_of: Option<perfsleuth_model::Metric>,
}

// The `perfsleuth/runs` entries are part of the typed schema in the model.
pub use perfsleuth_model::schema::RunListing;

/// Whether `name` may name a project: 1–64 of `A-Z a-z 0-9 . _ -`, starting
/// with a letter or digit. No slashes, no `..`, nothing to escape in a URL
/// or a page.
pub fn valid_project(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name.starts_with(|c: char| c.is_ascii_alphanumeric())
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
}

/// Which runs `latest` and `latest~N` count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunKind {
    /// Every run.
    Any,
    /// Runs that measured commands: every mode but `probe`.
    Benchmarks,
    /// Runs of `perfsleuth probe`.
    Probes,
    /// Runs measured like this one: the same mode, and `scale` sweeps only
    /// with `scale` sweeps (a default baseline must measure the same things).
    Like {
        /// The mode.
        mode: Mode,
        /// Whether it is a `perfsleuth scale` sweep.
        scale: bool,
    },
}

/// A run as [`RunReader::earlier_runs`] lists it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EarlierRun {
    /// Its id.
    pub id: i64,
    /// Its git branch.
    pub branch: Option<String>,
    /// Its benchmarks' names, in display order.
    pub benchmarks: Vec<String>,
    /// When it was measured (RFC 3339, UTC): the order runs are "earlier" in.
    pub started_at: String,
}

/// What [`RunWriter::ingest_run`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ingested {
    /// The run's id in this store.
    pub id: i64,
    /// Its UUID (the one sent, or a new one when it had none).
    pub uuid: String,
    /// False when a run with this UUID was already stored in the project: nothing was written.
    pub created: bool,
    /// The ids of the benchmarks written, in the run's order; empty when
    /// nothing was.
    pub benchmark_ids: Vec<i64>,
}

/// A team server's project.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProjectInfo {
    /// Its name (the `{project}` of the API's paths).
    pub name: String,
    /// Whether reading it needs no token.
    pub public_read: bool,
    /// When it was created, RFC 3339 UTC.
    pub created_at: String,
    /// How many runs it holds.
    pub runs: u64,
}

/// A team server's API token, as stored: only the SHA-256 of its secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TokenRecord {
    /// Its id (`server token revoke ID`).
    pub id: i64,
    /// The project it opens.
    pub project: String,
    /// A name for people ("ci", "alice's laptop").
    pub name: String,
    /// Hex SHA-256 of the secret.
    pub hash: String,
    /// Its scopes: `ingest`, `read`, `admin`.
    pub scopes: Vec<String>,
    /// When it was created, RFC 3339 UTC.
    pub created_at: String,
    /// When it was revoked; `None` while it is valid.
    pub revoked_at: Option<String>,
}

/// Every operation perfsleuth performs on stored results, whatever the
/// backend: the three roles at once, for callers that need more than one.
///
/// Object safe, so callers that do not care which backend they have can hold
/// a `&mut dyn Store`; a caller that only writes, reads or administers may
/// take that role alone ([`RunWriter`], [`RunReader`], [`Admin`]). Opening is
/// not part of it: each backend has its own way to be found and connected to
/// ([`SqliteStore::open`], [`PgStore::connect`], or [`StoreUrl::open`] for
/// either by URL).
///
/// Runs belong to a project: "" for a local store, the `{project}` of the
/// API for a team server. Every operation on runs sees only the handle's
/// project ([`Backend::use_project`]); environments are shared.
pub trait Store: RunWriter + RunReader + Admin {}

impl<T: RunWriter + RunReader + Admin + ?Sized> Store for T {}
