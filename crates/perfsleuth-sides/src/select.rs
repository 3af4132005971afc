//! What a selector names. Files come first (a path needs no store, so two
//! exports compare without one), then the store: a run UUID, a run id,
//! `latest`, `latest~N`, a branch; then a git revision, resolved by the
//! caller's resolver (the CLI runs git; the server has no repository).

use crate::{SelectError, load_side_run, stored_side};
use perfsleuth_compare::Side;
use perfsleuth_model::Run;
use perfsleuth_model::input::{Accept, MAX_DOCUMENT_BYTES, read_text};
use perfsleuth_model::schema::{self, Document, ReadError, RunExport};
use perfsleuth_store::Store;
use std::path::Path;

/// At most this many runs of one revision make up a side.
pub const MAX_RUNS_PER_SIDE: usize = 10;

/// Resolves a git revision to its full commit hash.
pub type GitResolver<'a> = &'a dyn Fn(&str) -> Option<String>;

/// Where a selector may look besides the store's ids and branches.
#[derive(Default, Clone, Copy)]
pub struct Lookup<'a> {
    /// Files (`--export-json` documents) may be named: the CLI's
    /// selectors may, the server's never.
    pub files: bool,
    /// Resolves a git revision to its full commit hash, where there is a
    /// repository to ask.
    pub git: Option<GitResolver<'a>>,
}

/// The side an exported file makes, when `spec` names a file; `Ok(None)`
/// when it names none, so the store is asked next. A name ending in `.json`
/// that does not exist is an error here: it cannot be a run or a branch.
pub fn file_side(spec: &str) -> Result<Option<Side>, SelectError> {
    let path = Path::new(spec);
    if std::fs::metadata(path).is_ok_and(|m| !m.is_dir()) {
        return Ok(Some(Side {
            label: spec.to_string(),
            runs: vec![read_export(path)?],
        }));
    }
    if spec.ends_with(".json") {
        return Err(SelectError::NoSuchFile(spec.to_string()));
    }
    Ok(None)
}

/// A run from a `--export-json` file; the schema and its version are checked.
pub fn read_export(path: &Path) -> Result<Run, SelectError> {
    let bad = |why: String| SelectError::BadExport {
        path: path.display().to_string(),
        why,
    };
    let text = read_text(path, MAX_DOCUMENT_BYTES, Accept::RegularOrPipe)
        .map_err(|e| bad(format!("cannot read: {e}")))?;
    let doc: RunExport = schema::read_document(&text).map_err(|e| {
        bad(match e {
            ReadError::NotJson(e) => format!("not JSON: {e}"),
            ReadError::WrongSchema(_) => format!(
                "not a perfsleuth run export (no \"schema\": \"{}\")",
                RunExport::SCHEMA
            ),
            ReadError::WrongVersion(Some(v)) => format!(
                "schema version {v}; this perfsleuth reads version {}",
                RunExport::VERSION
            ),
            ReadError::WrongVersion(None) => "no schema_version".into(),
            ReadError::Malformed(e) => format!("malformed run: {e}"),
        })
    })?;
    Ok(doc.run)
}

/// Whether `s` is written as a run UUID (8-4-4-4-12 hex digits).
pub fn is_uuid(s: &str) -> bool {
    s.len() == 36
        && s.char_indices().all(|(i, c)| match i {
            8 | 13 | 18 | 23 => c == '-',
            _ => c.is_ascii_hexdigit(),
        })
}

/// The side a selector names in `store` (after [`file_side`] where files
/// may be named): a run UUID, a run id, `latest`, `latest~N`, a branch (its
/// latest complete run), or a git revision (its complete runs, newest
/// first, at most [`MAX_RUNS_PER_SIDE`]).
pub fn resolve(store: &dyn Store, spec: &str, lookup: Lookup<'_>) -> Result<Side, SelectError> {
    if is_uuid(spec) {
        let id = store
            .run_by_uuid(&spec.to_ascii_lowercase())?
            .ok_or_else(|| SelectError::NoRun(spec.to_string()))?;
        return Ok(Side {
            label: format!("run {id}"),
            runs: vec![load_side_run(store, id)?],
        });
    }
    if let Some(side) = stored_side(store, spec)? {
        return Ok(side);
    }
    if let Some(commit) = lookup.git.and_then(|git| git(spec)) {
        let ids = store.runs_at_commit(&commit)?;
        if ids.is_empty() {
            return Err(SelectError::NoRunsAtCommit {
                spec: spec.to_string(),
                short: perfsleuth_model::short_commit(&commit).to_string(),
            });
        }
        let runs = ids
            .iter()
            .take(MAX_RUNS_PER_SIDE)
            .map(|&id| load_side_run(store, id))
            .collect::<Result<Vec<_>, _>>()?;
        let label = match runs.len() {
            1 => format!("{spec} (run {})", ids[0]),
            n => format!("{spec} ({n} runs)"),
        };
        return Ok(Side { label, runs });
    }
    // Names like `feature/x` or `origin/main` are branches and revisions, so
    // a path that does not exist is only reported once nothing else matched.
    if lookup.files && spec.contains('/') {
        return Err(SelectError::NoSuchRevision(spec.to_string()));
    }
    Err(SelectError::Unknown(spec.to_string()))
}
