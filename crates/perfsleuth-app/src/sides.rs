//! The CLI's side of choosing what `compare`, `run --baseline` and
//! `explain` compare: the store opened on first use, and the selection's
//! errors as usage errors. What a selector names is `perfsleuth-sides`'.

use crate::error::Fail;
use perfsleuth_compare::Side;
use perfsleuth_model::Environment;
use perfsleuth_model::schema::{self, Document, EnvironmentDoc, ProbeDoc, RunExport};
use perfsleuth_sides::{Lookup, SelectError};
use perfsleuth_store::Store;
use std::path::Path;

/// Resolves a selector to a side (see [`perfsleuth_sides::resolve`]), with
/// files and this repository's git revisions. `store` is opened on first
/// use, so two exported files compare without any store.
pub fn resolve(spec: &str, store: &mut StoreHandle) -> Result<Side, Fail> {
    if let Some(side) = perfsleuth_sides::file_side(spec).map_err(Fail::from)? {
        return Ok(side);
    }
    let git = |rev: &str| crate::git::resolve(Path::new("."), rev);
    let lookup = Lookup {
        files: true,
        git: Some(&git),
    };
    perfsleuth_sides::resolve(store.get()?, spec, lookup).map_err(Fail::from)
}

/// [`resolve`] of a candidate and a baseline at once, the baseline on a
/// connection of its own: a side of 100 000 benchmarks takes half a second
/// to load, and on two CPUs the two loads overlap. The answers are those
/// of resolving one after the other (stored runs do not change once
/// complete), and the caller reports the candidate's error first, as then.
pub fn resolve_both(
    candidate: &str,
    baseline: &str,
    store: &mut StoreHandle,
) -> (Result<Side, Fail>, Result<Side, Fail>) {
    // Opened here first, so a store that must be brought up to date is
    // migrated once, before the second connection opens it.
    let opened = store.get().is_ok();
    if !opened {
        // No store (two exported files, or an error each side reports).
        return (resolve(candidate, store), resolve(baseline, store));
    }
    let url = store.url.clone();
    std::thread::scope(|scope| {
        let other = scope.spawn(move || resolve(baseline, &mut StoreHandle::new(url)));
        let candidate = resolve(candidate, store);
        let baseline = other
            .join()
            .unwrap_or_else(|e| std::panic::resume_unwind(e));
        (candidate, baseline)
    })
}

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
impl From<SelectError> for Fail {
    fn from(e: SelectError) -> Fail {
        match e {
            SelectError::Store(e) => Fail::from(e),
            e => Fail::usage(e.to_string(), e.hint()),
        }
    }
}

/// The store, if a selector opened it (or it can be opened now); `None`
/// when there is none, e.g. when two exported files are compared.
pub fn existing_store(store: &mut StoreHandle) -> Option<&dyn Store> {
    store.get().ok()
}

/// The environment inside an exported file: a run export, an `env show --json`, or a bare fact map.
pub fn environment_file(path: &Path) -> Result<Environment, Fail> {
    let bad = |why: String| {
        Fail::usage(
            format!("{}: {why}", path.display()),
            "give a file written by `perfsleuth run --export-json` or `perfsleuth env show --json`",
        )
    };
    let (header, value) = crate::output::read_document(path, &bad)?;
    let malformed = |e: schema::ReadError| bad(format!("no environment facts in it: {e}"));
    // The documents that carry a fingerprint; a file without `schema` is a bare fact map.
    let env: Environment = match header.schema.as_deref() {
        Some(RunExport::SCHEMA) => {
            schema::document_from_value::<RunExport>(&header, value)
                .map_err(malformed)?
                .run
                .environment
        }
        Some(EnvironmentDoc::SCHEMA) => {
            schema::document_from_value::<EnvironmentDoc>(&header, value)
                .map_err(malformed)?
                .facts
        }
        Some(ProbeDoc::SCHEMA) => {
            schema::document_from_value::<ProbeDoc>(&header, value)
                .map_err(malformed)?
                .facts
        }
        _ => serde_json::from_value(value)
            .map_err(|e| bad(format!("no environment facts in it: {e}")))?,
    };
    if env.facts.is_empty() {
        return Err(bad("it holds no environment facts".into()));
    }
    Ok(env)
}
