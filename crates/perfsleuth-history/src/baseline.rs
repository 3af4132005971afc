//! The default baseline `compare` picks when history exists: the last run
//! of the latest stable segment, and a word when it sits just after a
//! change point.

use crate::{Filter, Options, Order};
use perfsleuth_compare::benchmark_key;
use perfsleuth_model::{Metric, Run};
use perfsleuth_store::{EntryScope, Store};

/// The runs before the candidate the stable-segment correction reads (of
/// every machine class): its latest segments, at a cost that does not grow
/// with the store.
const STABLE_WINDOW: usize = 2_000;

/// The default baseline's stable-segment correction: for the candidate's
/// first benchmark, the series on the chosen baseline's machine class (runs
/// before the candidate). When the latest segment is too short to be a
/// level, the baseline becomes the last run of the latest stable segment;
/// either way a note says when the baseline sits just after a change point.
/// `None` keeps `chosen` (too little history, or nothing to say).
pub fn stable_default(
    store: &dyn Store,
    candidate: &Run,
    chosen: &Run,
) -> Option<(i64, Vec<String>)> {
    let bench = candidate.benchmarks.first()?;
    let key = benchmark_key(&bench.name, &bench.parameters);
    let chosen_id = chosen.id?;
    let exclude = candidate.id;
    // The benchmark's points among the newest runs before the candidate:
    // the latest segments are all this looks at.
    let scope = EntryScope {
        names: perfsleuth_compare::key_names(&key),
        before_run: exclude,
        newest_runs: Some(STABLE_WINDOW),
        summary_of: Some(Metric::Wall),
    };
    let entries: Vec<_> = store
        .history_entries_in(&scope)
        .ok()?
        .into_iter()
        .filter(|e| {
            Some(e.run_id) != exclude
                && exclude.is_none_or(|c| e.run_id < c)
                && e.mode == chosen.mode
                && benchmark_key(&e.name, &e.parameters) == key
        })
        .collect();
    if entries.len() < crate::MIN_POINTS {
        return None;
    }
    let class = crate::machine_class(&chosen.environment);
    let env_ids: Vec<i64> = entries.iter().map(|e| e.environment_id).collect();
    let envs = store.environments(&env_ids).ok()?;
    let runs = store
        .run_environments(&crate::newest_runs(&entries))
        .unwrap_or_default();
    let points = crate::load(store, entries, Metric::Wall).ok()?.points;
    let doc = crate::build(
        points,
        &envs,
        &runs,
        Metric::Wall,
        &Order::Time,
        &Filter::default(),
        &Options::default(),
    );
    let series = doc
        .series
        .iter()
        .find(|s| s.machine.as_deref() == Some(class.as_str()))?;
    if !series.points.iter().any(|p| p.run_id == Some(chosen_id)) {
        return None;
    }
    let (idx, just_after) = crate::stable_baseline(series)?;
    let id = series.points[idx].run_id?;
    let mut notes = Vec::new();
    if id != chosen_id {
        let skipped = series.points.len() - 1 - idx;
        let cp = series.change_points.last();
        notes.push(format!(
            "baseline: run {id}, the last run of the latest stable segment of `{key}`; the {skipped} run{} after the change point {} are too few to be a level yet (pass BASELINE to choose another)",
            if skipped == 1 { "" } else { "s" },
            cp.map(|c| c.summary.as_str()).unwrap_or("")
        ));
    }
    if let Some(c) = just_after {
        notes.push(format!(
            "the baseline sits just after a change point of `{key}`: {}",
            c.summary
        ));
    }
    if id == chosen_id && notes.is_empty() {
        return None;
    }
    Some((id, notes))
}
