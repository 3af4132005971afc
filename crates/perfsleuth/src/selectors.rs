//! Resolving what `compare` and `run --baseline` compare: a run id, `latest`,
//! `latest~N`, a branch (its latest run), a git revision (its complete runs),
//! or an exported JSON file.

use crate::error::Fail;
use crate::output::store_fail;
use perfsleuth_compare::Side;
use perfsleuth_history::stored::{SelectError, load_side_run, stored_side};
use perfsleuth_model::Run;
use perfsleuth_model::schema::{self, Document, ReadError, RunExport};
use perfsleuth_store::Store;
use std::path::Path;

/// At most this many runs of one revision make up a side.
const MAX_RUNS_PER_SIDE: usize = 10;

/// Resolves a selector to a side. `store` is opened on first use, so two
/// exported files compare without any store.
pub fn resolve(spec: &str, store: &mut StoreHandle) -> Result<Side, Fail> {
    let path = Path::new(spec);
    if crate::output::names_a_file(path) {
        return Ok(Side {
            label: spec.to_string(),
            runs: vec![from_export(path)?],
        });
    }
    // Names like `feature/x` or `origin/main` are branches and revisions, so
    // a path that does not exist is only reported once nothing else matched.
    if spec.ends_with(".json") {
        return Err(Fail::usage(format!("{spec}: no such file"), SELECTOR_HINT));
    }
    let store = store.get()?;
    if let Some(side) = stored_side(store, spec).map_err(select_fail)? {
        return Ok(side);
    }
    if let Some(commit) = git_commit(spec) {
        let ids = store.runs_at_commit(&commit).map_err(store_fail)?;
        if ids.is_empty() {
            return Err(Fail::usage(
                format!(
                    "no complete run is stored for {spec} (commit {})",
                    perfsleuth_model::short_commit(&commit)
                ),
                "check it out and run `perfsleuth run` there, or list the stored runs with `perfsleuth runs`",
            ));
        }
        let runs = ids
            .iter()
            .take(MAX_RUNS_PER_SIDE)
            .map(|&id| load_side_run(store, id))
            .collect::<Result<Vec<_>, _>>()
            .map_err(select_fail)?;
        let label = match runs.len() {
            1 => format!("{spec} (run {})", ids[0]),
            n => format!("{spec} ({n} runs)"),
        };
        return Ok(Side { label, runs });
    }
    if spec.contains('/') {
        return Err(Fail::usage(
            format!("{spec}: no such file, and no branch or revision of that name"),
            SELECTOR_HINT,
        ));
    }
    Err(Fail::usage(
        format!("`{spec}` is not a stored run, a branch with runs, a git revision or a file"),
        SELECTOR_HINT,
    ))
}

const SELECTOR_HINT: &str = "give a run id, latest, latest~N, a branch, a git revision, or a file from --export-json (see `perfsleuth runs`)";

/// The store, opened when a selector first needs it.
pub struct StoreHandle {
    url: Option<String>,
    store: Option<crate::output::AnyStore>,
}

impl StoreHandle {
    /// A handle for `--store URL` (or the default location).
    pub fn new(url: Option<String>) -> StoreHandle {
        StoreHandle { url, store: None }
    }

    /// Opens the store on first use.
    pub fn get(&mut self) -> Result<&dyn Store, Fail> {
        if self.store.is_none() {
            self.store = Some(crate::output::open_existing_store(self.url.as_deref())?);
        }
        match &self.store {
            Some(store) => Ok(&**store),
            None => Err(Fail::usage(
                "the store could not be opened",
                "check --store",
            )),
        }
    }
}

/// The comparison of stored runs failed to choose its sides: the message
/// and hint of [`SelectError`].
pub fn select_fail(e: SelectError) -> Fail {
    match e {
        SelectError::Store(e) => store_fail(e),
        e => Fail::usage(e.to_string(), e.hint()),
    }
}

/// The store, if a selector opened it (or it can be opened now); `None`
/// when there is none, e.g. when two exported files are compared.
pub fn existing_store(store: &mut StoreHandle) -> Option<&dyn Store> {
    store.get().ok()
}

/// A run from a `--export-json` file; the schema and its version are checked.
pub fn from_export(path: &Path) -> Result<Run, Fail> {
    let bad = |why: String| {
        Fail::usage(
            format!("{}: {why}", path.display()),
            "give a file written by `perfsleuth run --export-json`",
        )
    };
    let text = crate::output::read_user_file(
        path,
        crate::output::MAX_DOCUMENT_BYTES,
        perfsleuth_model::input::Accept::RegularOrPipe,
    )
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

/// The full commit hash `rev` names in the current repository, if any.
fn git_commit(rev: &str) -> Option<String> {
    crate::git::resolve(Path::new("."), rev)
}
