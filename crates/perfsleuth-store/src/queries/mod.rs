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
use crate::sql::{Db, Dialect, Row};
use std::path::Path;

mod admin;
mod load;
mod read;
mod write;
pub use admin::Admin;
pub use read::RunReader;
pub use write::RunWriter;

/// A handle on a store, SQLite or PostgreSQL, in one project: what every
/// role shares. Only this crate's two backends implement it.
pub trait Backend: Db {
    /// Where the store is, as messages name it: the SQLite file, or the
    /// PostgreSQL URL without its password.
    fn location(&self) -> &Path {
        &self.session().place
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
/// memory (its exports) set it before [`RunWriter::begin_run`], so the
/// export and the store agree.
pub fn new_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}
