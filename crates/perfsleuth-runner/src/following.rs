//! Numbering the runs the spawner forks, for the instruments that follow
//! its children from the kernel's side (the lock tracer, the sampler): both
//! number the spawner's runs 1, 2, … in the order they start, and this
//! wrapper remembers which command — and which timed iteration — each was.

use crate::spawn::Spawn;
use perfsleuth_measure::{
    CommandId, CounterConfig, CounterStatus, IoConfig, MeasureError, Outcome,
};
use std::collections::VecDeque;

/// One run the spawner forked: its command, and its timed iteration
/// (`None` for warmups, set-ups and other untimed runs).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Forked {
    id: CommandId,
    timed: Option<u32>,
}

/// A [`Spawn`] that remembers which command each run the spawner forked
/// belonged to: the kernel numbers the spawner's children 1, 2, … in fork
/// order, and runs are forked in the order they are queued. Timed runs are
/// the ones queued without keeping stderr (the schedule's `begin` for a
/// benchmark's command); their iteration is kept.
pub struct Following<'a, S: Spawn> {
    inner: &'a mut S,
    queued: VecDeque<Forked>,
    forked: Vec<Forked>,
    /// [`Spawn::note_timed`]: the next run's timed iteration.
    next_timed: Option<u32>,
}

impl<'a, S: Spawn> Following<'a, S> {
    /// Wraps `inner`; every run from now on is counted.
    pub fn new(inner: &'a mut S) -> Self {
        Following {
            inner,
            queued: VecDeque::new(),
            forked: Vec::new(),
            next_timed: None,
        }
    }

    /// Runs forked so far (the kernel numbers them 1..=this).
    pub fn forked(&self) -> usize {
        self.forked.len()
    }

    /// The kernel's numbers of the runs of command `id`.
    pub fn runs_of(&self, id: CommandId) -> Vec<u32> {
        (1u32..)
            .zip(&self.forked)
            .filter(|(_, c)| c.id == id)
            .map(|(n, _)| n)
            .collect()
    }

    /// The runs of command `id` in the order they ran, each with its
    /// timed iteration (`None`: a warmup).
    pub fn runs_in_order(&self, id: CommandId) -> Vec<Option<u32>> {
        self.forked
            .iter()
            .filter(|c| c.id == id)
            .map(|c| c.timed)
            .collect()
    }

    /// The kernel's numbers of the timed runs of command `id`, each with
    /// its iteration, in the order they ran.
    pub fn timed_runs_of(&self, id: CommandId) -> Vec<(u32, u32)> {
        (1u32..)
            .zip(&self.forked)
            .filter(|(_, c)| c.id == id)
            .filter_map(|(n, c)| Some((n, c.timed?)))
            .collect()
    }

    fn done(&mut self, run: Option<Forked>, outcome: &Outcome) {
        // A run skipped after a failure never forked.
        if let Some(run) = run
            && !matches!(outcome, Outcome::Skipped)
        {
            self.forked.push(run);
        }
    }
}

impl<S: Spawn> Spawn for Following<'_, S> {
    fn prepare(&mut self, argv: &[String], io: &IoConfig) -> Result<CommandId, MeasureError> {
        self.inner.prepare(argv, io)
    }
    fn enable_counters(&mut self, cfg: &CounterConfig) -> Result<CounterStatus, MeasureError> {
        self.inner.enable_counters(cfg)
    }
    fn begin(
        &mut self,
        id: CommandId,
        iteration: u32,
        capture_stderr: bool,
    ) -> Result<(), MeasureError> {
        self.inner.begin(id, iteration, capture_stderr)?;
        let noted = self.next_timed.take();
        self.queued.push_back(Forked {
            id,
            timed: noted.or((!capture_stderr).then_some(iteration)),
        });
        Ok(())
    }
    fn finish(&mut self) -> Result<Outcome, MeasureError> {
        let outcome = self.inner.finish();
        let id = self.queued.pop_front();
        if let Ok(o) = &outcome {
            self.done(id, o);
        }
        outcome
    }
    fn try_finish(&mut self) -> Result<Option<Outcome>, MeasureError> {
        let outcome = self.inner.try_finish();
        match &outcome {
            Ok(Some(o)) => {
                let id = self.queued.pop_front();
                self.done(id, o);
            }
            // The oldest run is answered, with an error: as in `finish`.
            Err(_) => {
                self.queued.pop_front();
            }
            Ok(None) => {}
        }
        outcome
    }
    fn run_anyway(&mut self, id: CommandId) -> Result<Outcome, MeasureError> {
        let outcome = self.inner.run_anyway(id);
        if let Ok(o) = &outcome {
            self.done(Some(Forked { id, timed: None }), o);
        }
        outcome
    }
    fn stderr_tail(&mut self, id: CommandId, lines: usize) -> String {
        self.inner.stderr_tail(id, lines)
    }
    fn resume(&mut self) -> Result<(), MeasureError> {
        self.inner.resume()
    }
    fn peak_rss_floor(&self) -> Option<u64> {
        self.inner.peak_rss_floor()
    }
    fn note_timed(&mut self, iteration: u32) {
        self.next_timed = Some(iteration);
    }
}
