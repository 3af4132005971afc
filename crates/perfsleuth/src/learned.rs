//! Same-binary history for a comparison: earlier runs of exactly the
//! program a baseline benchmark ran (binary hash and arguments), in the same
//! mode, on the same machine class. Their spread is the between-run noise a
//! change must exceed; those at the baseline's own clean commit also join
//! the baseline, as repeated runs of it.

use perfsleuth_compare::{Options, Side, benchmark_key, newest};
use perfsleuth_model::{Benchmark, Run, Sample};
use perfsleuth_store::Store;

/// Same-binary runs looked at per benchmark, newest first.
const HISTORY_LIMIT: usize = 30;

/// Fills `opts.history` for every benchmark of the newest baseline run from
/// `store`, leaving out the runs in `exclude` (the candidate's), and adds to
/// `baseline` the same-binary runs made at the baseline run's commit from a
/// clean tree (each with that benchmark only). Returns the notes saying what
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
    for bench in &newest.benchmarks {
        let Ok(runs) = same_binary(store, &newest, bench) else {
            continue;
        };
        let key = benchmark_key(&bench.name, &bench.parameters);
        let others: Vec<&Run> = runs
            .iter()
            .filter(|r| r.id.is_some_and(|id| !exclude.contains(&id)))
            .collect();
        let samples = samples_of(others.iter().copied());
        if !samples.is_empty() {
            opts.history.insert(key.clone(), samples);
        }
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

/// The stored runs of exactly the program `bench` of `run` ran (see
/// [`Store::same_binary_runs`]), newest first, each with that benchmark
/// only; none when its binary hash is unknown.
pub fn same_binary(
    store: &dyn Store,
    run: &Run,
    bench: &Benchmark,
) -> Result<Vec<Run>, perfsleuth_store::StoreError> {
    match bench
        .facts
        .get("binary.sha256")
        .filter(|h| !h.is_empty() && *h != perfsleuth_model::UNKNOWN)
    {
        Some(hash) => {
            store.same_binary_runs(hash, &bench.argv, run.mode, &run.environment, HISTORY_LIMIT)
        }
        None => Ok(Vec::new()),
    }
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
