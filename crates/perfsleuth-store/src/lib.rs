//! Persistence for perfsleuth runs.
//!
//! The rest of perfsleuth reads and writes through the [`Store`] trait, so a
//! second backend (PostgreSQL for the team server) can stand in for the
//! embedded one. [`SqliteStore`] is the embedded backend: one SQLite file per
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
//! `migrations` (recognising our files, forward migrations), `sqlite` (the
//! connection), `queries` (the SQLite reads and writes), `location`
//! (`--store` values, the default path), `hash` (environment hashes).

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
pub use sqlite::{BUSY_TIMEOUT, SqliteStore};

use perfsleuth_model::{
    Benchmark, Environment, GitInfo, Metric, Mode, ProbeResult, Profile, Run, RunStatus, Sample,
};
use std::collections::BTreeMap;

/// One metric of one benchmark of a complete run, summarised: what a
/// history point shows, cached by [`Store::put_metric_summaries`].
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
    /// The benchmark's row id, for [`Store::metric_values`].
    pub benchmark_id: i64,
    /// The run's id.
    pub run_id: i64,
    /// The run's start time, RFC 3339 UTC.
    pub started_at: String,
    /// The run's source-control state.
    pub git: Option<GitInfo>,
    /// The run's mode.
    pub mode: Mode,
    /// The run's environment row (identity and performance facts), for [`Store::environments`].
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

/// A run as [`Store::earlier_runs`] lists it.
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

/// What [`Store::ingest_run`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ingested {
    /// The run's id in this store.
    pub id: i64,
    /// Its UUID (the one sent, or a new one when it had none).
    pub uuid: String,
    /// False when a run with this UUID was already stored in the project: nothing was written.
    pub created: bool,
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

/// The operations perfsleuth performs on stored results, whatever the backend.
///
/// Object safe, so callers that do not care which backend they have can hold
/// a `&mut dyn Store`. Opening is not part of it: each backend has its own
/// way to be found and connected to ([`SqliteStore::open`], [`PgStore::connect`],
/// or [`StoreUrl::open`] for either by URL).
///
/// Runs belong to a project: "" for a local store, the `{project}` of the
/// API for a team server. Every operation on runs sees only the handle's
/// project ([`Store::use_project`]); environments are shared.
pub trait Store {
    /// Inserts the environment (deduplicated) and a run row with status `running`; `run.benchmarks` are not inserted. Returns the new run id.
    fn begin_run(&mut self, run: &Run) -> Result<i64, StoreError>;

    /// Inserts a benchmark row (name, command, argv, parameters) for a run and returns its id; insertion order is display order.
    fn add_benchmark(&mut self, run_id: i64, bench: &Benchmark) -> Result<i64, StoreError>;

    /// Inserts one sample and commits it at once, so a crash loses at most the sample in flight.
    fn add_sample(&mut self, benchmark_id: i64, sample: &Sample) -> Result<(), StoreError>;

    /// Replaces a run's context facts (those only known at the end, such as
    /// the measured peak-RSS floor); identity and performance facts are fixed
    /// at [`Store::begin_run`].
    fn update_context(&mut self, run_id: i64, env: &Environment) -> Result<(), StoreError>;

    /// Records a benchmark's per-function profile (simulation mode), once
    /// its runs are done.
    fn set_profile(&mut self, benchmark_id: i64, profile: &Profile) -> Result<(), StoreError>;

    /// Records where a benchmark's threads waited for locks (`--locks`),
    /// once its runs are done.
    fn set_locks(
        &mut self,
        benchmark_id: i64,
        locks: &perfsleuth_model::LockReport,
    ) -> Result<(), StoreError>;

    /// Records a benchmark's sampled call stacks (`--profile`), once its
    /// runs are done.
    fn set_stacks(
        &mut self,
        benchmark_id: i64,
        stacks: &perfsleuth_model::StackProfile,
    ) -> Result<(), StoreError>;

    /// Records a benchmark's allocation profile (`--profile=alloc`), once its
    /// runs are done, and each profiled run's counts on its sample
    /// (`counters`: iteration and that sample's counters, the counts among them).
    fn set_allocs(
        &mut self,
        benchmark_id: i64,
        allocs: &perfsleuth_model::AllocProfile,
        counters: &[(u32, &std::collections::BTreeMap<String, f64>)],
    ) -> Result<(), StoreError>;

    /// Gives benchmark `position` of a stored run the stacks a profiler took
    /// elsewhere (`import --into`), unless it has some: `false` then, and
    /// nothing changed.
    fn attach_stacks(
        &mut self,
        run_id: i64,
        position: usize,
        stacks: &perfsleuth_model::StackProfile,
    ) -> Result<bool, StoreError>;

    /// Appends probe results to a run in one transaction (after any stored
    /// before), so each probe's numbers are kept as soon as it finishes.
    fn add_probe_results(&mut self, run_id: i64, results: &[ProbeResult])
    -> Result<(), StoreError>;

    /// Sets a run's final status and end time.
    fn finish_run(
        &mut self,
        run_id: i64,
        status: RunStatus,
        ended_at: &str,
    ) -> Result<(), StoreError>;

    /// Stores a whole run (benchmarks, samples, probe results, its own
    /// status) in one transaction, so it is either wholly stored or not at
    /// all. Idempotent by UUID: a run whose UUID the project already holds
    /// is not written again.
    fn ingest_run(&mut self, run: &Run) -> Result<Ingested, StoreError>;

    /// The id of the project's run with this UUID.
    fn run_by_uuid(&self, uuid: &str) -> Result<Option<i64>, StoreError>;

    /// Loads a whole run: environment merged from its env row and context, benchmarks in insertion order, samples in iteration order, probe results in the order stored; `Ok(None)` if no such id.
    fn load_run(&self, id: i64) -> Result<Option<Run>, StoreError>;

    /// [`Store::load_run`] without the sampled profiles (`stacks` and
    /// `allocs` are `None`): for what reads the measurements or the
    /// environment only, where a large profile would cost seconds.
    fn load_run_measurements(&self, id: i64) -> Result<Option<Run>, StoreError>;

    /// Lists runs newest first, at most `limit` of them.
    fn list_runs(&self, limit: Option<usize>) -> Result<Vec<RunListing>, StoreError>;

    /// The listing of one run of the project.
    fn run_listing(&self, id: i64) -> Result<Option<RunListing>, StoreError>;

    /// Resolves "latest", "latest~N" (the N-th run before the latest) or a numeric id to a run id.
    fn resolve_run(&self, spec: &str) -> Result<i64, StoreError> {
        self.resolve_run_of(spec, RunKind::Any)
    }

    /// Like [`Store::resolve_run`], but `latest` and `latest~N` count only
    /// runs of `kind`; a numeric id names any run.
    fn resolve_run_of(&self, spec: &str, kind: RunKind) -> Result<i64, StoreError>;

    /// Complete runs of commands (not `probe` runs) made at this git commit
    /// (full hash), newest first.
    fn runs_at_commit(&self, commit: &str) -> Result<Vec<i64>, StoreError>;

    /// Complete runs of commands (not `probe` runs) made on this git branch, newest first.
    fn runs_on_branch(&self, branch: &str) -> Result<Vec<i64>, StoreError>;

    /// The newest run stored before run `id`, if any.
    fn run_before(&self, id: i64) -> Result<Option<i64>, StoreError> {
        self.run_before_of(id, RunKind::Any)
    }

    /// The newest run of `kind` stored before run `id`, if any.
    fn run_before_of(&self, id: i64, kind: RunKind) -> Result<Option<i64>, StoreError>;

    /// Every run of `kind` stored before run `before` (all of them with
    /// `None`), newest first, with its branch and benchmark names: what the
    /// default baseline is chosen from, in one query.
    fn earlier_runs(
        &self,
        before: Option<i64>,
        kind: RunKind,
    ) -> Result<Vec<EarlierRun>, StoreError>;

    /// Runs that measured the same program on the same kind of machine: the
    /// newest (at most `limit`) complete runs in `mode` on a machine with
    /// `env`'s [`comparability_hash`] that contain a benchmark whose
    /// `binary.sha256` is `hash` and whose argv is `argv`. Each run is
    /// returned with that benchmark only (its first occurrence).
    fn same_binary_runs(
        &self,
        hash: &str,
        argv: &[String],
        mode: Mode,
        env: &Environment,
        limit: usize,
    ) -> Result<Vec<Run>, StoreError>;

    /// The newest run with probe results made on the machine `env` describes:
    /// one with the same identity and performance facts if there is one (so a
    /// changed mitigation or governor finds its own probes), else one with
    /// the same [`comparability_hash`].
    fn latest_probe_run_for(&self, env: &Environment) -> Result<Option<i64>, StoreError>;

    /// Every benchmark of every complete run of commands (not probes, not
    /// `scale` sweeps), oldest run first, in display order within a run.
    fn history_entries(&self) -> Result<Vec<HistoryEntry>, StoreError>;

    /// The values of `metric` of each benchmark in `benchmark_ids` (same
    /// order), in iteration order; a counter a sample lacks is NaN.
    fn metric_values(
        &self,
        benchmark_ids: &[i64],
        metric: Metric,
    ) -> Result<Vec<Vec<f64>>, StoreError>;

    /// The cached summaries of `metric` for these benchmarks (same order);
    /// `None` where none is cached yet.
    fn metric_summaries(
        &self,
        benchmark_ids: &[i64],
        metric: Metric,
    ) -> Result<Vec<Option<MetricSummary>>, StoreError>;

    /// Caches summaries of `metric` (benchmark id, summary) in one transaction.
    /// Only for complete runs, whose samples no longer change.
    fn put_metric_summaries(
        &mut self,
        metric: Metric,
        rows: &[(i64, MetricSummary)],
    ) -> Result<(), StoreError>;

    /// The stored environments (identity and performance facts) with these ids.
    fn environments(&self, ids: &[i64]) -> Result<BTreeMap<i64, Environment>, StoreError>;

    /// The whole environment (the machine's facts and the run's context,
    /// as [`Store::load_run`] gives it) of each run in `run_ids`, without
    /// its benchmarks and samples.
    fn run_environments(&self, run_ids: &[i64]) -> Result<BTreeMap<i64, Environment>, StoreError>;

    /// Where the store is, as messages name it: the SQLite file, or the
    /// PostgreSQL URL without its password.
    fn location(&self) -> &std::path::Path;

    /// The project this handle reads and writes runs of ("" for a local store).
    fn project(&self) -> &str;

    /// Makes this handle read and write the runs of `project`.
    fn use_project(&mut self, project: &str);

    /// Whether a project's reads are public; `None` when there is no such project.
    fn public_read(&self, name: &str) -> Result<Option<bool>, StoreError>;

    /// Every project created on this store, by name.
    fn projects(&self) -> Result<Vec<ProjectInfo>, StoreError>;

    /// Creates a project (private) unless it exists.
    fn ensure_project(&mut self, name: &str, created_at: &str) -> Result<(), StoreError>;

    /// Makes a project's reads public (no token) or private again.
    fn set_public_read(&mut self, name: &str, public: bool) -> Result<(), StoreError>;

    /// Stores a new token (its `id` is ignored) and returns its id.
    fn add_token(&mut self, token: &TokenRecord) -> Result<i64, StoreError>;

    /// Tokens, of one project or of all, oldest first (revoked ones too).
    fn tokens(&self, project: Option<&str>) -> Result<Vec<TokenRecord>, StoreError>;

    /// The token whose secret hashes to `hash`, revoked or not.
    fn token_by_hash(&self, hash: &str) -> Result<Option<TokenRecord>, StoreError>;

    /// Revokes a token; false when there is no such valid token.
    fn revoke_token(&mut self, id: i64, revoked_at: &str) -> Result<bool, StoreError>;
}
