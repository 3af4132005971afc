//! Resolving what `compare` and `run --baseline` compare: a run id, `latest`,
//! `latest~N`, a branch (its latest run), a git revision (its complete runs),
//! or an exported JSON file.

use crate::error::Fail;
use crate::output::store_fail;
use perfsleuth_compare::Side;
use perfsleuth_model::Run;
use perfsleuth_model::schema::{self, Document, ReadError, RunExport};
use perfsleuth_store::{RunKind, SqliteStore, Store as _};
use std::path::Path;
use std::process::{Command, Stdio};

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
    // `latest` and `latest~N` count runs of commands: a `perfsleuth probe`
    // run in between has no benchmarks to compare.
    if let Ok(id) = store.resolve_run_of(spec, RunKind::Benchmarks) {
        return Ok(Side {
            label: format!("run {id}"),
            runs: vec![load(store, id)?],
        });
    }
    let on_branch = store.runs_on_branch(spec).map_err(store_fail)?;
    if let Some(&id) = on_branch.first() {
        return Ok(Side {
            label: format!("{spec} (run {id})"),
            runs: vec![load(store, id)?],
        });
    }
    if let Some(commit) = git_commit(spec) {
        let ids = store.runs_at_commit(&commit).map_err(store_fail)?;
        if ids.is_empty() {
            return Err(Fail::usage(
                format!(
                    "no complete run is stored for {spec} (commit {})",
                    &commit[..commit.len().min(12)]
                ),
                "check it out and run `perfsleuth run` there, or list the stored runs with `perfsleuth runs`",
            ));
        }
        let runs = ids
            .iter()
            .take(MAX_RUNS_PER_SIDE)
            .map(|&id| load(store, id))
            .collect::<Result<Vec<_>, _>>()?;
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
    store: Option<SqliteStore>,
}

impl StoreHandle {
    /// A handle for `--store URL` (or the default location).
    pub fn new(url: Option<String>) -> StoreHandle {
        StoreHandle { url, store: None }
    }

    /// Opens the store on first use.
    pub fn get(&mut self) -> Result<&SqliteStore, Fail> {
        if self.store.is_none() {
            self.store = Some(crate::output::open_existing_store(self.url.as_deref())?);
        }
        self.store
            .as_ref()
            .ok_or_else(|| Fail::usage("the store could not be opened", "check --store"))
    }
}

/// The baseline when none is given: the latest earlier run measured the same
/// way (mode; sweeps with sweeps) with the same benchmark names, on the
/// candidate's branch, else on any branch. Never simply "the run before": a
/// run of other commands would pair nothing, and a gate would pass without
/// looking.
pub fn default_baseline(candidate: &Side, store: &mut StoreHandle) -> Result<Side, Fail> {
    let store = store.get()?;
    let first = candidate.runs.first();
    let kind = first.map_or(RunKind::Benchmarks, |r| RunKind::Like {
        mode: r.mode,
        scale: r.is_scale_sweep(),
    });
    let names = |it: &mut dyn Iterator<Item = &String>| {
        let mut v: Vec<String> = it.cloned().collect();
        v.sort();
        v.dedup();
        v
    };
    let wanted = first.map(|r| names(&mut r.benchmarks.iter().map(|b| &b.name)));
    let branch = first.and_then(|r| r.git.as_ref()?.branch.clone());
    // Earlier runs of the same kind, newest first.
    let mut earlier = Vec::new();
    let mut cursor = match first.and_then(|r| r.id) {
        Some(id) => store.run_before_of(id, kind).map_err(store_fail)?,
        // An exported file: every stored run is earlier.
        None => store.resolve_run_of("latest", kind).ok(),
    };
    while let Some(id) = cursor {
        earlier.push(id);
        cursor = store.run_before_of(id, kind).map_err(store_fail)?;
    }
    let listings: std::collections::HashMap<i64, perfsleuth_store::RunListing> = store
        .list_runs(None)
        .map_err(store_fail)?
        .into_iter()
        .map(|l| (l.id, l))
        .collect();
    let same_names = |id: &i64| match (&wanted, listings.get(id)) {
        (Some(w), Some(l)) => names(&mut l.benchmarks.iter()) == *w,
        (None, _) => true,
        (Some(_), None) => false,
    };
    let on_branch = |id: &i64| {
        branch.is_some()
            && listings
                .get(id)
                .and_then(|l| l.git.as_ref()?.branch.as_ref())
                == branch.as_ref()
    };
    let chosen = earlier
        .iter()
        .find(|id| same_names(id) && on_branch(id))
        .or_else(|| earlier.iter().find(|id| same_names(id)));
    let id = match (chosen, earlier.is_empty()) {
        (Some(id), _) => *id,
        (None, true) => {
            return Err(Fail::usage(
                "there is no earlier run to compare with",
                "run `perfsleuth run` twice, or name both sides: perfsleuth compare BASELINE CANDIDATE",
            ));
        }
        (None, false) => {
            return Err(Fail::usage(
                format!(
                    "no earlier run measured the same benchmarks ({})",
                    wanted.map(|w| w.join(", ")).unwrap_or_default()
                ),
                "name the baseline: perfsleuth compare BASELINE CANDIDATE (`perfsleuth runs` lists them)",
            ));
        }
    };
    Ok(Side {
        label: format!("run {id}"),
        runs: vec![load(store, id)?],
    })
}

fn load(store: &SqliteStore, id: i64) -> Result<Run, Fail> {
    let run = store.load_run(id).map_err(store_fail)?.ok_or_else(|| {
        Fail::usage(
            format!("run {id} not found"),
            "list the stored runs with `perfsleuth runs`",
        )
    })?;
    if run.mode == perfsleuth_model::Mode::Probe {
        return Err(Fail::usage(
            format!("run {id} is a `perfsleuth probe` run: it measured the machine, not commands"),
            format!(
                "compare probe runs with `perfsleuth probe diff OTHER_RUN {id}` (or `… current {id}`); `perfsleuth compare` compares runs of commands"
            ),
        ));
    }
    Ok(run)
}

/// The store, if a selector opened it (or it can be opened now); `None`
/// when there is none, e.g. when two exported files are compared.
pub fn existing_store(store: &mut StoreHandle) -> Option<&SqliteStore> {
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
    if rev.starts_with('-') {
        return None;
    }
    let out = Command::new("git")
        .args(["rev-parse", "--verify", "-q", &format!("{rev}^{{commit}}")])
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .ok()?;
    let hash = String::from_utf8_lossy(&out.stdout).trim().to_string();
    (out.status.success() && !hash.is_empty()).then_some(hash)
}
