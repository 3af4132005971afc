//! Every read and write of the store, written once over [`Db`] for both
//! backends; [`crate::Store`] delegates here (`impl_store!`).
//!
//! Every query on runs is scoped to the connection's project, so a team
//! server's projects never see each other's runs and a local store (project
//! "") never sees a server's.

use crate::RunKind;
use crate::error::StoreError;
use crate::sql::{Dialect, Row};
use std::path::Path;

mod admin;
mod history;
mod load;
mod write;
pub(crate) use admin::*;
pub(crate) use history::*;
pub(crate) use load::*;
pub(crate) use write::*;

const SAMPLE_COLUMNS: &str = "benchmark_id, iteration, wall_ns, user_ns, sys_ns, \
    peak_rss_bytes, minor_faults, major_faults, voluntary_cs, involuntary_cs, exit_code, signal, counters, \
    round, wall_exact_ns";

/// Stores u64 counters in the databases' i64; the bit pattern round-trips exactly.
fn to_i64(v: u64) -> i64 {
    v as i64
}

/// Inverse of [`to_i64`].
fn to_u64(v: i64) -> u64 {
    v as u64
}

/// Attaches the store's place to JSON errors.
fn json<T>(place: &Path, r: Result<T, serde_json::Error>) -> Result<T, StoreError> {
    r.map_err(|source| StoreError::Json {
        path: place.to_path_buf(),
        source,
    })
}

/// Column `i` of `row`, JSON or NULL, parsed where it lies.
fn opt_json<T: serde::de::DeserializeOwned>(
    place: &Path,
    row: &Row,
    i: usize,
) -> Result<Option<T>, StoreError> {
    row.opt_str(i)?
        .map(|text| json(place, serde_json::from_str(text)))
        .transpose()
}

impl RunKind {
    /// The SQL condition on `runs` (aliased `r`) selecting this kind.
    fn condition(self, dialect: Dialect) -> String {
        match self {
            RunKind::Any => "1 = 1".into(),
            RunKind::Benchmarks => "r.mode <> 'probe'".into(),
            RunKind::Probes => "r.mode = 'probe'".into(),
            RunKind::Like { mode, scale } => format!(
                "r.mode = '{}' AND coalesce({}, '') {} '{}'",
                mode.as_str(),
                dialect.json_text("r.options", "kind"),
                if scale { "=" } else { "<>" },
                perfsleuth_model::SCALE_KIND,
            ),
        }
    }
}

/// A new random (version 4) UUID for a run: callers that keep the run in
/// memory (its exports) set it before [`crate::Store::begin_run`], so the
/// export and the store agree.
pub fn new_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Implements [`crate::Store`] for a [`Db`] by delegating to this module.
macro_rules! impl_store {
    ($t:ty) => {
        impl $crate::Store for $t {
            fn begin_run(&mut self, run: &Run) -> Result<i64, StoreError> {
                queries::begin_run(self, run)
            }
            fn add_benchmark(&mut self, run_id: i64, bench: &Benchmark) -> Result<i64, StoreError> {
                queries::add_benchmark(self, run_id, bench)
            }
            fn add_sample(&mut self, benchmark_id: i64, sample: &Sample) -> Result<(), StoreError> {
                queries::add_sample(self, benchmark_id, sample)
            }
            fn update_context(&mut self, run_id: i64, env: &Environment) -> Result<(), StoreError> {
                queries::update_context(self, run_id, env)
            }
            fn set_locks(
                &mut self,
                benchmark_id: i64,
                locks: &perfsleuth_model::LockReport,
            ) -> Result<(), StoreError> {
                queries::set_locks(self, benchmark_id, locks)
            }
            fn set_profile(
                &mut self,
                benchmark_id: i64,
                profile: &Profile,
            ) -> Result<(), StoreError> {
                queries::set_profile(self, benchmark_id, profile)
            }
            fn set_stacks(
                &mut self,
                benchmark_id: i64,
                stacks: &perfsleuth_model::StackProfile,
            ) -> Result<(), StoreError> {
                queries::set_stacks(self, benchmark_id, stacks)
            }
            fn attach_stacks(
                &mut self,
                run_id: i64,
                position: usize,
                stacks: &perfsleuth_model::StackProfile,
            ) -> Result<bool, StoreError> {
                queries::attach_stacks(self, run_id, position, stacks)
            }
            fn set_allocs(
                &mut self,
                benchmark_id: i64,
                allocs: &perfsleuth_model::AllocProfile,
                counters: &[(u32, &std::collections::BTreeMap<String, f64>)],
            ) -> Result<(), StoreError> {
                queries::set_allocs(self, benchmark_id, allocs, counters)
            }
            fn add_probe_results(
                &mut self,
                run_id: i64,
                results: &[ProbeResult],
            ) -> Result<(), StoreError> {
                queries::add_probe_results(self, run_id, results)
            }
            fn finish_run(
                &mut self,
                run_id: i64,
                status: RunStatus,
                ended_at: &str,
            ) -> Result<(), StoreError> {
                queries::finish_run(self, run_id, status, ended_at)
            }
            fn ingest_run(&mut self, run: &Run) -> Result<Ingested, StoreError> {
                queries::ingest_run(self, run)
            }
            fn run_by_uuid(&self, uuid: &str) -> Result<Option<i64>, StoreError> {
                queries::run_by_uuid(self, uuid)
            }
            fn load_run(&self, id: i64) -> Result<Option<Run>, StoreError> {
                queries::load_run(self, id, true)
            }
            fn load_run_measurements(&self, id: i64) -> Result<Option<Run>, StoreError> {
                queries::load_run(self, id, false)
            }
            fn list_runs(&self, limit: Option<usize>) -> Result<Vec<RunListing>, StoreError> {
                queries::list_runs(self, limit)
            }
            fn run_listing(&self, id: i64) -> Result<Option<RunListing>, StoreError> {
                queries::run_listing(self, id)
            }
            fn resolve_run_of(&self, spec: &str, kind: RunKind) -> Result<i64, StoreError> {
                queries::resolve_run_of(self, spec, kind)
            }
            fn runs_at_commit(&self, commit: &str) -> Result<Vec<i64>, StoreError> {
                queries::runs_at_commit(self, commit)
            }
            fn runs_on_branch(&self, branch: &str) -> Result<Vec<i64>, StoreError> {
                queries::runs_on_branch(self, branch)
            }
            fn run_before_of(&self, id: i64, kind: RunKind) -> Result<Option<i64>, StoreError> {
                queries::run_before_of(self, id, kind)
            }
            fn earlier_runs(
                &self,
                before: Option<i64>,
                kind: RunKind,
            ) -> Result<Vec<$crate::EarlierRun>, StoreError> {
                queries::earlier_runs(self, before, kind)
            }
            fn same_binary_runs(
                &self,
                hash: &str,
                argv: &[String],
                mode: Mode,
                env: &Environment,
                limit: usize,
            ) -> Result<Vec<Run>, StoreError> {
                queries::same_binary_runs(self, hash, argv, mode, env, limit)
            }
            fn latest_probe_run_for(&self, env: &Environment) -> Result<Option<i64>, StoreError> {
                queries::latest_probe_run_for(self, env)
            }
            fn history_entries(&self) -> Result<Vec<HistoryEntry>, StoreError> {
                queries::history_entries(self)
            }
            fn metric_values(
                &self,
                benchmark_ids: &[i64],
                metric: Metric,
            ) -> Result<Vec<Vec<f64>>, StoreError> {
                queries::metric_values(self, benchmark_ids, metric)
            }
            fn metric_summaries(
                &self,
                benchmark_ids: &[i64],
                metric: Metric,
            ) -> Result<Vec<Option<MetricSummary>>, StoreError> {
                queries::metric_summaries(self, benchmark_ids, metric)
            }
            fn put_metric_summaries(
                &mut self,
                metric: Metric,
                rows: &[(i64, MetricSummary)],
            ) -> Result<(), StoreError> {
                queries::put_metric_summaries(self, metric, rows)
            }
            fn environments(&self, ids: &[i64]) -> Result<BTreeMap<i64, Environment>, StoreError> {
                queries::environments(self, ids)
            }
            fn run_environments(
                &self,
                run_ids: &[i64],
            ) -> Result<BTreeMap<i64, Environment>, StoreError> {
                queries::run_environments(self, run_ids)
            }
            fn location(&self) -> &std::path::Path {
                $crate::sql::Db::place(self)
            }
            fn project(&self) -> &str {
                $crate::sql::Db::project(self)
            }
            fn use_project(&mut self, project: &str) {
                self.project = project.to_string();
            }
            fn public_read(&self, name: &str) -> Result<Option<bool>, StoreError> {
                queries::public_read(self, name)
            }
            fn projects(&self) -> Result<Vec<ProjectInfo>, StoreError> {
                queries::projects(self)
            }
            fn ensure_project(&mut self, name: &str, created_at: &str) -> Result<(), StoreError> {
                queries::ensure_project(self, name, created_at)
            }
            fn set_public_read(&mut self, name: &str, public: bool) -> Result<(), StoreError> {
                queries::set_public_read(self, name, public)
            }
            fn add_token(&mut self, token: &TokenRecord) -> Result<i64, StoreError> {
                queries::add_token(self, token)
            }
            fn tokens(&self, project: Option<&str>) -> Result<Vec<TokenRecord>, StoreError> {
                queries::tokens(self, project)
            }
            fn token_by_hash(&self, hash: &str) -> Result<Option<TokenRecord>, StoreError> {
                queries::token_by_hash(self, hash)
            }
            fn revoke_token(&mut self, id: i64, revoked_at: &str) -> Result<bool, StoreError> {
                queries::revoke_token(self, id, revoked_at)
            }
        }
    };
}
pub(crate) use impl_store;
