//! Every read and write of the store, written once over [`Db`] for both
//! backends: the provided methods of the role traits, [`RunWriter`]
//! (`write`), [`RunReader`] (`read`, with its decoding in `load`) and
//! [`Admin`] (`admin`), over [`Backend`].
//!
//! Every query on runs is scoped to the connection's project, so a team
//! server's projects never see each other's runs and a local store (project
//! "") never sees a server's.

use crate::RunKind;
use crate::error::StoreError;
use crate::sql::{Db, Dialect, Row, Val};
use std::path::Path;

mod admin;
mod load;
mod read;
mod write;
pub use admin::Admin;
pub use read::{LIST_PAGE, RunReader};
pub use write::{Incoming, RunWriter};

/// A handle on a store, SQLite or PostgreSQL, in one project: what every
/// role shares. Only this crate's two backends implement it.
pub trait Backend: Db {
    /// Where the store is, as messages name it: the SQLite file, or the
    /// PostgreSQL URL without its password.
    fn location(&self) -> &Path {
        &self.session().place
    }

    /// A token that changes whenever a commit may have changed what this
    /// handle reads — its own or another connection's, in any project. An
    /// answer read after taking a token is the answer while the token is
    /// unchanged, so it may be kept and served again (the server's page
    /// cache). A process's handles on one store agree on the token once
    /// each has looked since the last commit.
    fn revision(&self) -> Result<String, StoreError> {
        self.data_revision()
    }

    /// The project this handle reads and writes runs of ("" for a local store).
    fn project(&self) -> &str {
        &self.session().project
    }

    /// Makes this handle read and write the runs of `project`.
    fn use_project(&mut self, project: &str) {
        self.session_mut().project = project.to_string();
    }
}

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
    /// The SQL condition on `runs`, under the alias `r`, selecting this kind.
    fn condition(self, dialect: Dialect, r: &str) -> String {
        match self {
            RunKind::Any => "1 = 1".into(),
            RunKind::Benchmarks => format!("{r}.mode <> 'probe'"),
            RunKind::Probes => format!("{r}.mode = 'probe'"),
            RunKind::Like { mode, scale } => format!(
                "{r}.mode = '{}' AND coalesce({}, '') {} '{}'",
                mode.as_str(),
                dialect.json_text(&format!("{r}.options"), "kind"),
                if scale { "=" } else { "<>" },
                perfsleuth_model::SCALE_KIND,
            ),
        }
    }
}

/// Ids one statement reads (`IN (…)`): short enough for either database's
/// statement, long enough that a history of thousands of runs is a few
/// statements, not one per run.
pub(crate) const ID_CHUNK: usize = 500;

/// `ids` without repeats as comma-separated lists of at most [`ID_CHUNK`]:
/// integers formatted here, so they go into the statement's text as they
/// are.
pub(crate) fn id_lists(ids: &[i64]) -> Vec<String> {
    distinct(ids)
        .chunks(ID_CHUNK)
        .map(|c| c.iter().map(i64::to_string).collect::<Vec<_>>().join(","))
        .collect()
}

/// `ids` sorted, without repeats.
fn distinct(ids: &[i64]) -> Vec<i64> {
    let mut ids = ids.to_vec();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// `ids` without repeats in chunks of [`ID_CHUNK`], each bound to the
/// parameters [`ID_PLACEHOLDERS`] names (a short last chunk repeats its last
/// id): every chunk is one statement text, prepared once, where a list in
/// the text is parsed and prepared anew for each chunk (a read of 100 000
/// benchmarks' samples is 200 of them).
pub(crate) fn id_params(ids: &[i64]) -> Vec<Vec<Val>> {
    padded(distinct(ids).into_iter().map(Val::Int).collect())
}

/// [`id_params`] of text keys (UUIDs, hashes).
pub(crate) fn text_params(keys: &[&str]) -> Vec<Vec<Val>> {
    let mut keys = keys.to_vec();
    keys.sort_unstable();
    keys.dedup();
    padded(keys.into_iter().map(Val::from).collect())
}

/// `values` in chunks of [`ID_CHUNK`], a short last one filled with its last value.
fn padded(values: Vec<Val>) -> Vec<Vec<Val>> {
    values
        .chunks(ID_CHUNK)
        .map(|c| {
            let last = c[c.len() - 1].clone();
            c.iter()
                .cloned()
                .chain(std::iter::repeat(last))
                .take(ID_CHUNK)
                .collect()
        })
        .collect()
}

/// `?1,?2,…` up to [`ID_CHUNK`]: the list of an `IN` that [`id_params`] binds.
pub(crate) static ID_PLACEHOLDERS: std::sync::LazyLock<String> = std::sync::LazyLock::new(|| {
    (1..=ID_CHUNK)
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(",")
});

/// A new random (version 4) UUID for a run: callers that keep the run in
/// memory (its exports) set it before [`RunWriter::begin_run`], so the
/// export and the store agree.
pub fn new_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}
