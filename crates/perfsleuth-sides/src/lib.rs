//! Choosing the sides of a comparison, and comparing stored runs: what a
//! selector names ([`resolve`]: a run id or UUID, `latest`, `latest~N`, a
//! branch, a git revision through the resolver the caller gives, or an
//! exported file), the default baseline, the same-binary history that
//! teaches the verdict the between-run noise, and what the machines' probes
//! say. The CLI (`compare`, `run --baseline`, `explain`) and the team
//! server's `compare` endpoint both resolve with [`resolve`] and compare
//! with [`compare_stored`], so they cannot disagree.

mod select;

pub use select::{
    GitResolver, Lookup, MAX_RUNS_PER_SIDE, file_side, is_uuid, read_export, resolve,
};

use perfsleuth_compare::{Comparison, Options, Side, benchmark_key, compare, newest};
use perfsleuth_model::{Environment, Mode, Run, Sample};
use perfsleuth_store::{EarlierRun, RunKind, Store, StoreError};

/// Same-binary runs looked at per benchmark, newest first.
const HISTORY_LIMIT: usize = 30;

/// Why sides could not be chosen; each says what to do instead.
#[derive(Debug, thiserror::Error)]
pub enum SelectError {
    /// No stored run has this id or spec.
    #[error("run {0} not found")]
    NoRun(String),
    /// The run measured the machine, not commands.
    #[error("run {0} is a `perfsleuth probe` run: it measured the machine, not commands")]
    ProbeRun(i64),
    /// No earlier run at all.
    #[error("there is no earlier run to compare with")]
    NoEarlier,
    /// Earlier runs exist, none that measured every benchmark of the candidate.
    #[error("no earlier run measured the same benchmarks ({0})")]
    NoSameBenchmarks(String),
    /// The sides were measured in different modes.
    #[error("{0}")]
    Modes(String),
    /// A selector ending in `.json` names no file.
    #[error("{0}: no such file")]
    NoSuchFile(String),
    /// A file that is not a readable run export.
    #[error("{path}: {why}")]
    BadExport {
        /// The file as given.
        path: String,
        /// Why it cannot be read.
        why: String,
    },
    /// A git revision with no complete run stored at its commit.
    #[error("no complete run is stored for {spec} (commit {short})")]
    NoRunsAtCommit {
        /// The revision as given.
        spec: String,
        /// Its short commit.
        short: String,
    },
    /// A path-like selector (`feature/x`) that is no file, branch or revision.
    #[error("{0}: no such file, and no branch or revision of that name")]
    NoSuchRevision(String),
    /// Nothing of that name.
    #[error("`{0}` is not a stored run, a branch with runs, a git revision or a file")]
    Unknown(String),
    /// The store failed.
    #[error(transparent)]
    Store(#[from] StoreError),
}

/// What a selector may name, for the hints.
const SELECTOR_HINT: &str = "give a run id, latest, latest~N, a branch, a git revision, or a file from --export-json (see `perfsleuth runs`)";

impl SelectError {
    /// What the user can do about it, for the binary's hint line and the API's error document.
    pub fn hint(&self) -> String {
        match self {
            SelectError::NoRun(_) => "list the stored runs with `perfsleuth runs`".into(),
            SelectError::ProbeRun(id) => format!(
                "compare probe runs with `perfsleuth probe diff OTHER_RUN {id}` (or `… current {id}`); `perfsleuth compare` compares runs of commands"
            ),
            SelectError::NoEarlier => "run `perfsleuth run` twice, or name both sides: perfsleuth compare BASELINE CANDIDATE".into(),
            SelectError::NoSameBenchmarks(_) => "name the baseline: perfsleuth compare BASELINE CANDIDATE (`perfsleuth runs` lists them)".into(),
            SelectError::Modes(_) => "compare runs of one mode (`perfsleuth runs` shows each run's mode); for simulation, run both sides with --mode simulation".into(),
            SelectError::NoSuchFile(_) | SelectError::NoSuchRevision(_) | SelectError::Unknown(_) => SELECTOR_HINT.into(),
            SelectError::BadExport { .. } => "give a file written by `perfsleuth run --export-json`".into(),
            SelectError::NoRunsAtCommit { .. } => "check it out and run `perfsleuth run` there, or list the stored runs with `perfsleuth runs`".into(),
            SelectError::Store(e) => e
                .to_string()
                .split_once(" (hint: ")
                .map(|(_, h)| h.trim_end_matches(')').to_string())
                .unwrap_or_default(),
        }
    }
}

/// Loads a stored run of commands.
pub fn load_side_run(store: &dyn Store, id: i64) -> Result<Run, SelectError> {
    let run = store
        .load_run(id)?
        .ok_or_else(|| SelectError::NoRun(id.to_string()))?;
    if run.mode == Mode::Probe {
        return Err(SelectError::ProbeRun(id));
    }
    Ok(run)
}

/// The side a stored-run selector names: a run id, `latest`, `latest~N`
/// (counting runs of commands) or a branch (its latest complete run);
/// `None` when it names none of these (the CLI goes on to git revisions
/// and files).
pub fn stored_side(store: &dyn Store, spec: &str) -> Result<Option<Side>, SelectError> {
    // `latest` and `latest~N` count runs of commands: a `perfsleuth probe`
    // run in between has no benchmarks to compare.
    if let Ok(id) = store.resolve_run_of(spec, RunKind::Benchmarks) {
        return Ok(Some(Side {
            label: format!("run {id}"),
            runs: vec![load_side_run(store, id)?],
        }));
    }
    if let Some(&id) = store.runs_on_branch(spec)?.first() {
        return Ok(Some(Side {
            label: format!("{spec} (run {id})"),
            runs: vec![load_side_run(store, id)?],
        }));
    }
    Ok(None)
}

/// The baseline when none is given: the latest earlier run measured the same
/// way (mode; sweeps with sweeps) that measured every benchmark of the
/// candidate (others besides are fine: `run 'a'` after `run 'a' 'b'`
/// compares `a`), on the candidate's branch, else on any branch. Never
/// simply "the run before": a run of other commands would pair nothing, and
/// a gate would pass without looking.
pub fn default_baseline(store: &dyn Store, candidate: &Side) -> Result<Side, SelectError> {
    let first = candidate.runs.first();
    let kind = first.map_or(RunKind::Benchmarks, |r| RunKind::Like {
        mode: r.mode,
        scale: r.is_scale_sweep(),
    });
    let wanted = first.map(|r| sorted_names(r.benchmarks.iter().map(|b| b.name.as_str())));
    let branch = first.and_then(|r| r.git.as_ref()?.branch.clone());
    // Earlier runs of the same kind, newest first (an exported file: every
    // stored run is earlier): the newest BASELINE_WINDOW first, so a large
    // store costs what a small one does; all of them only when none of
    // those will do.
    let before = first.and_then(|r| r.id);
    let mut earlier = store.earlier_runs(before, kind, Some(BASELINE_WINDOW))?;
    if earlier.len() == BASELINE_WINDOW
        && pick(&earlier, wanted.as_deref(), branch.as_deref()).is_none()
    {
        earlier = store.earlier_runs(before, kind, None)?;
    }
    let id = match (
        pick(&earlier, wanted.as_deref(), branch.as_deref()),
        earlier.is_empty(),
    ) {
        (Some(id), _) => id,
        (None, true) => return Err(SelectError::NoEarlier),
        (None, false) => {
            return Err(SelectError::NoSameBenchmarks(
                wanted.map(|w| w.join(", ")).unwrap_or_default(),
            ));
        }
    };
    Ok(Side {
        label: format!("run {id}"),
        runs: vec![load_side_run(store, id)?],
    })
}

/// A benchmark set as compared: names sorted, each once.
fn sorted_names<'a>(names: impl Iterator<Item = &'a str>) -> Vec<String> {
    let mut v: Vec<String> = names.map(str::to_string).collect();
    v.sort();
    v.dedup();
    v
}

/// The newest of `earlier` that measured every one of the `wanted`
/// benchmarks (any run, when `None`), on `branch` if one is, else on any
/// branch.
fn pick(earlier: &[EarlierRun], wanted: Option<&[String]>, branch: Option<&str>) -> Option<i64> {
    let same_names =
        |r: &&EarlierRun| wanted.is_none_or(|w| w.iter().all(|name| r.benchmarks.contains(name)));
    let on_branch = |r: &&EarlierRun| branch.is_some() && r.branch.as_deref() == branch;
    earlier
        .iter()
        .find(|r| same_names(r) && on_branch(r))
        .or_else(|| earlier.iter().find(same_names))
        .map(|r| r.id)
}

/// How many earlier runs [`default_baseline`] reads first: its baseline is
/// nearly always among them, and reading them costs the same in a store of
/// 100 000 runs as in one of 2 000.
const BASELINE_WINDOW: usize = 2_000;

/// How many runs before the listed ones [`default_baselines_exist`] looks
/// through: enough for any CI history's baseline, few enough that a
/// project page costs the same at 5 000 runs as at 50.
const BASELINE_SEARCH: usize = 200;

/// Whether each listed run has a default baseline (the dashboard links
/// only comparisons that can be made) among the [`BASELINE_SEARCH`] runs
/// before them. Probe runs have none; a scale sweep is taken for a plain
/// run here, and a baseline further back is not looked for: both can only
/// hide a link, never show a broken one. One query per mode among `runs`.
pub fn default_baselines_exist(
    store: &dyn Store,
    runs: &[perfsleuth_store::RunListing],
) -> Vec<bool> {
    let mut by_mode: Vec<(Mode, Vec<EarlierRun>)> = Vec::new();
    runs.iter()
        .map(|run| {
            if run.mode == Mode::Probe || run.benchmarks.is_empty() {
                return false;
            }
            let i = match by_mode.iter().position(|(m, _)| *m == run.mode) {
                Some(i) => i,
                None => {
                    let kind = RunKind::Like {
                        mode: run.mode,
                        scale: false,
                    };
                    let runs = store
                        .earlier_runs(None, kind, Some(runs.len() + BASELINE_SEARCH))
                        .unwrap_or_default();
                    by_mode.push((run.mode, runs));
                    by_mode.len() - 1
                }
            };
            // Newest first: the runs before this one are a suffix.
            let all = &by_mode[i].1;
            let before = all
                .iter()
                .position(|r| (r.started_at.as_str(), r.id) < (run.started_at.as_str(), run.id))
                .unwrap_or(all.len());
            let wanted = sorted_names(run.benchmarks.iter().map(String::as_str));
            let branch = run.git.as_ref().and_then(|g| g.branch.as_deref());
            pick(&all[before..], Some(&wanted), branch).is_some()
        })
        .collect()
}

/// Moves a default baseline to the last run of the latest stable segment
/// of the stored history when there is one (see [`crate::stable_default`]);
/// returns its notes.
pub fn stable_baseline(
    store: &dyn Store,
    candidate: &Side,
    baseline: &mut Side,
) -> Result<Vec<String>, SelectError> {
    let (Some(cand), Some(chosen)) = (candidate.runs.first(), baseline.runs.first()) else {
        return Ok(Vec::new());
    };
    let Some((id, notes)) = perfsleuth_history::stable_default(store, cand, chosen) else {
        return Ok(Vec::new());
    };
    if Some(id) != chosen.id {
        *baseline = Side {
            label: format!("run {id}"),
            runs: vec![load_side_run(store, id)?],
        };
    }
    Ok(notes)
}

/// Fills `opts.history` for every benchmark of the newest baseline run from
/// `store` (its same-binary runs, the candidate's included), and adds to
/// `baseline` the same-binary runs made at the baseline run's commit from a
/// clean tree (each with that benchmark only), leaving out the runs in
/// `exclude` (the candidate's). Returns the notes saying what
/// was added. Store errors leave the comparison without history: it is an
/// aid, and the verdict says which noise it used.
pub fn add_history(
    store: &dyn Store,
    baseline: &mut Side,
    exclude: &[i64],
    opts: &mut Options,
) -> Vec<String> {
    let Some(newest) = newest(baseline).cloned() else {
        return Vec::new();
    };
    let in_side: Vec<i64> = baseline.runs.iter().filter_map(|r| r.id).collect();
    let mut notes = Vec::new();
    let mut pooled: Vec<Run> = Vec::new();
    let Ok(all) = same_binary(store, &newest) else {
        return Vec::new();
    };
    for (bench, runs) in newest.benchmarks.iter().zip(all) {
        let key = benchmark_key(&bench.name, &bench.parameters);
        // The noise is the series' (every run of this program, the
        // candidate's too, as `history` counts it), so both show one figure;
        // only the pooling below leaves the candidate's runs out.
        let samples = samples_of(runs.iter());
        if !samples.is_empty() {
            opts.history.insert(key.clone(), samples);
        }
        let others: Vec<&Run> = runs
            .iter()
            .filter(|r| r.id.is_some_and(|id| !exclude.contains(&id)))
            .collect();
        let same_commit: Vec<&Run> = others
            .iter()
            .copied()
            .filter(|r| {
                r.id.is_some_and(|id| !in_side.contains(&id)) && at_clean_commit_of(r, &newest)
            })
            .collect();
        if same_commit.is_empty() {
            continue;
        }
        let ids: Vec<String> = same_commit
            .iter()
            .filter_map(|r| r.id.map(|id| id.to_string()))
            .collect();
        notes.push(format!(
            "baseline for `{key}` includes {} more run{} of the same binary at the same commit (run{} {})",
            ids.len(),
            if ids.len() == 1 { "" } else { "s" },
            if ids.len() == 1 { "" } else { "s" },
            ids.join(", ")
        ));
        for r in same_commit {
            // Each added run keeps only this benchmark, renamed to the
            // baseline's, so it pairs with the candidate's.
            let mut r = r.clone();
            for b in &mut r.benchmarks {
                b.name = bench.name.clone();
                b.parameters = bench.parameters.clone();
            }
            pooled.push(r);
        }
    }
    baseline.runs.extend(pooled);
    notes
}

/// For each benchmark of `run`, the stored runs of exactly the program it
/// ran (see [`RunReader::same_binary_runs`](perfsleuth_store::RunReader::same_binary_runs)),
/// newest first, each with that benchmark only; none for a benchmark whose
/// binary hash is unknown. One look-up for all of them.
pub fn same_binary(store: &dyn Store, run: &Run) -> Result<Vec<Vec<Run>>, StoreError> {
    let hashes: Vec<Option<&str>> = run
        .benchmarks
        .iter()
        .map(|b| {
            b.facts
                .get("binary.sha256")
                .filter(|h| !h.is_empty() && *h != perfsleuth_model::UNKNOWN)
        })
        .collect();
    let programs: Vec<(&str, &[String])> = run
        .benchmarks
        .iter()
        .zip(&hashes)
        .filter_map(|(b, h)| Some(((*h)?, b.argv.as_slice())))
        .collect();
    let mut found = store
        .same_binary_runs_of(&programs, run.mode, &run.environment, HISTORY_LIMIT)?
        .into_iter();
    Ok(hashes
        .iter()
        .map(|h| match h {
            Some(_) => found.next().unwrap_or_default(),
            None => Vec::new(),
        })
        .collect())
}

/// Each run's samples of its one benchmark.
pub fn samples_of<'a>(runs: impl Iterator<Item = &'a Run>) -> Vec<Vec<Sample>> {
    runs.filter_map(|r| r.benchmarks.first().map(|b| b.samples.clone()))
        .collect()
}

/// Whether `run` was made at `baseline`'s git commit, both from clean trees.
fn at_clean_commit_of(run: &Run, baseline: &Run) -> bool {
    match (&run.git, &baseline.git) {
        (Some(a), Some(b)) => a.commit == b.commit && !a.dirty && !b.dirty,
        _ => false,
    }
}

/// What the newest probe runs of two machines say about their difference
/// (see [`perfsleuth_report::probe::compare_notes`]). Empty when either machine has
/// no probe run, both map to the same one, or nothing differs; lookup errors
/// are not the comparison's concern and yield nothing.
pub fn probe_notes(
    store: &dyn Store,
    baseline: &Environment,
    candidate: &Environment,
) -> Vec<String> {
    let (Ok(Some(ia)), Ok(Some(ib))) = (
        store.latest_probe_run_for(baseline),
        store.latest_probe_run_for(candidate),
    ) else {
        return Vec::new();
    };
    if ia == ib {
        return Vec::new();
    }
    let (Ok(Some(ra)), Ok(Some(rb))) = (store.load_run(ia), store.load_run(ib)) else {
        return Vec::new();
    };
    perfsleuth_report::probe::compare_notes(ia, &ra, ib, &rb)
}

/// A comparison of stored runs, as `perfsleuth compare` makes it.
#[derive(Debug)]
pub struct StoredComparison {
    /// The baseline side as compared (with same-commit runs pooled in).
    pub baseline: Side,
    /// The candidate side.
    pub candidate: Side,
    /// The comparison, its notes included.
    pub comparison: Comparison,
}

/// Compares `candidate` with `baseline` (or, when `None`, the default
/// baseline moved to the stable segment's end) the way `perfsleuth compare`
/// does: the same-binary history of the store joins the verdict unless
/// `history` is false, and the notes say what the baseline's choice, the
/// history and the machines' probes add. Sides measured in different modes
/// are refused ([`perfsleuth_compare::mode_mismatch`]).
pub fn compare_stored(
    store: &dyn Store,
    baseline: Option<Side>,
    candidate: Side,
    mut opts: Options,
    history: bool,
) -> Result<StoredComparison, SelectError> {
    let mut notes = Vec::new();
    let mut baseline = match baseline {
        Some(side) => side,
        None => {
            let mut side = default_baseline(store, &candidate)?;
            notes.extend(stable_baseline(store, &candidate, &mut side)?);
            side
        }
    };
    if let Some(why) = perfsleuth_compare::mode_mismatch(&baseline, &candidate) {
        return Err(SelectError::Modes(why));
    }
    // Two halves of one interleaved measurement need no history: their
    // pairs cancel the drift a history would stand for.
    if history && !perfsleuth_compare::measured_together(&baseline, &candidate) {
        let exclude: Vec<i64> = candidate.runs.iter().filter_map(|r| r.id).collect();
        notes.extend(add_history(store, &mut baseline, &exclude, &mut opts));
    }
    let mut comparison = compare(&baseline, &candidate, &opts);
    comparison.notes.extend(notes);
    let env = |s: &Side| newest(s).map(|r| r.environment.clone());
    if let (Some(a), Some(b)) = (env(&baseline), env(&candidate)) {
        comparison.notes.extend(probe_notes(store, &a, &b));
    }
    Ok(StoredComparison {
        baseline,
        candidate,
        comparison,
    })
}
