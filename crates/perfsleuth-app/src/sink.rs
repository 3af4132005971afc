//! Where the runner's results go: the store (when storing) and the progress line.

use crate::error::Fail;
use crate::output;
use crate::term::{ProgressLine, Watchdog};
use perfsleuth_model::{Benchmark, ProbeResult, Profile, Run, Sample};
use perfsleuth_runner::{Progress, Sink, SinkError};
use perfsleuth_store::Store;

/// How long a measured sample may wait for its commit, so that samples
/// are committed a batch at a time: one commit per sample was ~5 % of an
/// iteration of a trivial program (docs/PERFORMANCE.md). A crash or
/// `kill -9` loses at most the samples of the last this-long, besides the
/// one the runner hands over while the next run executes (and the run
/// stays `running`, marked incomplete): a sample that arrives after a
/// quiet spell this long is committed at once, and so is everything held
/// when measuring is about to block on a run.
const COMMIT_EVERY: std::time::Duration = std::time::Duration::from_millis(100);

/// Commits samples to the store as they are measured, a batch at a time,
/// and draws progress.
pub struct StoreSink<'a> {
    store: Option<&'a mut dyn Store>,
    /// Samples measured and not committed yet, with their benchmark ids.
    pending: Vec<(i64, Sample)>,
    /// When samples were last committed.
    committed_at: std::time::Instant,
    /// Benchmark row ids, by plan index.
    ids: Vec<i64>,
    /// The runs' row ids: one, or one per side for `ab`.
    run_ids: Vec<i64>,
    /// Where the store is, for the "Stored as run N in …" line.
    path: Option<std::path::PathBuf>,
    /// The terminal progress line.
    pub progress: ProgressLine,
    /// Told of every sample and progress step, when runs have no timeout.
    pub watchdog: Option<Watchdog>,
    /// Named parts of the plan (`ab`'s sides), each counted on the progress line.
    pub sides: Vec<(&'static str, std::ops::Range<usize>)>,
}

impl<'a> StoreSink<'a> {
    /// Begins the run in the store (when there is one) with its benchmarks,
    /// so that every sample can be committed as it is measured.
    pub fn begin(
        store: Option<&'a mut dyn Store>,
        run: &mut Run,
        benchmarks: &[Benchmark],
        progress: ProgressLine,
    ) -> Result<StoreSink<'a>, Fail> {
        StoreSink::begin_runs(store, &mut [(run, benchmarks)], progress)
    }

    /// [`StoreSink::begin`] for several runs measured together (`ab`: one
    /// per side): the plan's benchmarks are the runs' benchmarks in order.
    pub fn begin_runs(
        store: Option<&'a mut dyn Store>,
        runs: &mut [(&mut Run, &[Benchmark])],
        progress: ProgressLine,
    ) -> Result<StoreSink<'a>, Fail> {
        let path = store.as_ref().map(|s| s.location().to_path_buf());
        let mut store: Option<&'a mut dyn Store> = store.map(|s| s as &mut dyn Store);
        let mut ids = Vec::new();
        let mut run_ids = Vec::new();
        if let Some(store) = store.as_deref_mut() {
            for (run, benchmarks) in runs.iter_mut() {
                // Given here, so the run's exports carry the UUID the store keeps.
                run.uuid.get_or_insert_with(perfsleuth_store::new_run_uuid);
                let id = store.begin_run(run).map_err(Fail::from)?;
                run.id = Some(id);
                run_ids.push(id);
                for b in benchmarks.iter() {
                    ids.push(store.add_benchmark(id, b).map_err(Fail::from)?);
                }
            }
        }
        Ok(StoreSink {
            store,
            pending: Vec::new(),
            committed_at: std::time::Instant::now(),
            ids,
            run_ids,
            path,
            progress,
            watchdog: None,
            sides: Vec::new(),
        })
    }
}

/// The progress phase with each named side's runs so far, so that one
/// side stalling (a hung build of its program, a slower revision) shows:
/// "Measuring 2/2 commands · baseline 40, candidate 38 runs".
fn sides_phase(
    phase: &str,
    sides: &[(&str, std::ops::Range<usize>)],
    per_benchmark: &[u64],
) -> String {
    if sides.is_empty() || per_benchmark.is_empty() {
        return phase.to_string();
    }
    let counts: Vec<String> = sides
        .iter()
        .map(|(label, range)| {
            let n: u64 = per_benchmark
                .get(range.clone())
                .unwrap_or_default()
                .iter()
                .sum();
            format!("{label} {n}")
        })
        .collect();
    format!("{phase} · {} runs", counts.join(", "))
}

impl StoreSink<'_> {
    /// Commits the samples not committed yet.
    fn commit(&mut self) -> Result<(), perfsleuth_store::StoreError> {
        match self.store.as_deref_mut() {
            Some(store) if !self.pending.is_empty() => {
                store.add_samples(&self.pending)?;
                self.pending.clear();
                self.committed_at = std::time::Instant::now();
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Stores benchmark `bench`'s lock report (`--locks`), once its runs are done.
    pub fn set_locks(
        &mut self,
        bench: usize,
        locks: &perfsleuth_model::LockReport,
    ) -> Result<(), crate::error::Fail> {
        self.commit().map_err(Fail::from)?;
        if let (Some(store), Some(&id)) = (self.store.as_deref_mut(), self.ids.get(bench)) {
            store.set_locks(id, locks).map_err(Fail::from)?;
        }
        Ok(())
    }

    /// Stores benchmark `bench`'s sampled stacks (`--profile`), once its runs are done.
    pub fn set_stacks(
        &mut self,
        bench: usize,
        stacks: &perfsleuth_model::StackProfile,
    ) -> Result<(), crate::error::Fail> {
        self.commit().map_err(Fail::from)?;
        if let (Some(store), Some(&id)) = (self.store.as_deref_mut(), self.ids.get(bench)) {
            store.set_stacks(id, stacks).map_err(Fail::from)?;
        }
        Ok(())
    }

    /// Stores benchmark `bench`'s allocation profile (`--profile=alloc`) and
    /// its runs' counts on their samples, once its runs are done.
    pub fn set_allocs(
        &mut self,
        bench: usize,
        allocs: &perfsleuth_model::AllocProfile,
        counters: &[(u32, &std::collections::BTreeMap<String, f64>)],
    ) -> Result<(), crate::error::Fail> {
        // Its counts go onto stored samples: they must be there.
        self.commit().map_err(Fail::from)?;
        if let (Some(store), Some(&id)) = (self.store.as_deref_mut(), self.ids.get(bench)) {
            store.set_allocs(id, allocs, counters).map_err(Fail::from)?;
        }
        Ok(())
    }

    /// The dimmed "Stored as run N in PATH" line, when the run was stored.
    pub fn stored_note(&self, color: bool) -> Option<String> {
        let path = self.path.as_ref()?;
        let runs = match self.run_ids.as_slice() {
            [] => return None,
            [id] => format!("run {id}"),
            [ids @ .., last] => format!(
                "runs {} and {last}",
                ids.iter()
                    .map(i64::to_string)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        };
        let note = format!("Stored as {runs} in {}\n", path.display());
        Some(output::dim(&note, color))
    }
}

impl StoreSink<'_> {
    fn beat(&self) {
        if let Some(w) = &self.watchdog {
            w.beat();
        }
    }
}

impl Sink for StoreSink<'_> {
    fn keeps_samples(&self) -> bool {
        self.store.is_some()
    }

    fn sample(&mut self, bench: usize, sample: &Sample) -> Result<(), SinkError> {
        self.beat();
        if let (Some(_), Some(&id)) = (self.store.as_ref(), self.ids.get(bench)) {
            self.pending.push((id, sample.clone()));
            if self.committed_at.elapsed() >= COMMIT_EVERY {
                self.commit()?;
            }
        }
        Ok(())
    }

    fn waiting(&mut self, blocking: bool) -> Result<(), SinkError> {
        if blocking || self.committed_at.elapsed() >= COMMIT_EVERY {
            self.commit()?;
        }
        Ok(())
    }

    fn profile(&mut self, bench: usize, profile: &Profile) -> Result<(), SinkError> {
        self.commit()?;
        if let (Some(store), Some(&id)) = (self.store.as_deref_mut(), self.ids.get(bench)) {
            store.set_profile(id, profile)?;
        }
        Ok(())
    }

    fn probe_results(&mut self, results: &[ProbeResult]) -> Result<(), SinkError> {
        self.commit()?;
        if let (Some(store), Some(&id)) = (self.store.as_deref_mut(), self.run_ids.first()) {
            store.add_probe_results(id, results)?;
        }
        Ok(())
    }

    fn progress(&mut self, p: &Progress<'_>) {
        self.beat();
        if !self.progress.due() {
            return;
        }
        let phase = sides_phase(p.phase, &self.sides, p.per_benchmark);
        self.progress
            .update(&phase, p.fraction, p.runs, p.elapsed, p.eta);
    }

    /// Ends every run this sink began the way `run` ended (the runs of one
    /// measurement share its status, end time and machine).
    fn finish(&mut self, run: &Run) -> Result<(), SinkError> {
        self.commit()?;
        if let Some(store) = self.store.as_deref_mut() {
            for &id in &self.run_ids {
                store.update_context(id, &run.environment)?;
                store.finish_run(id, run.status, run.ended_at.as_deref().unwrap_or_default())?;
            }
        }
        Ok(())
    }
}

impl Drop for StoreSink<'_> {
    /// A run that ends without `finish` (an error on the way) keeps every
    /// sample it measured; it stays `running`, marked incomplete.
    fn drop(&mut self) {
        let _ = self.commit();
    }
}

#[cfg(test)]
mod tests {
    use super::sides_phase;

    #[test]
    fn the_progress_phase_counts_each_side() {
        let sides = [("baseline", 0..2), ("candidate", 2..4)];
        assert_eq!(
            sides_phase("Measuring 4/4 commands", &sides, &[3, 4, 5, 1]),
            "Measuring 4/4 commands · baseline 7, candidate 6 runs"
        );
        // A plain run, or a phase without benchmarks, is left as it is.
        assert_eq!(sides_phase("Measuring", &[], &[3]), "Measuring");
        assert_eq!(sides_phase("probe", &sides, &[]), "probe");
    }
}
