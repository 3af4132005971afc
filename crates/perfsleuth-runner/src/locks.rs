//! Lock tracing around a measurement (`run --locks`, `scale --locks`):
//! starting the eBPF tracer on the spawner, numbering the runs the spawner
//! forks so each is attributed to its benchmark, and one report per
//! benchmark at the end (docs/LOCKS.md).

use crate::spawn::Spawn;
pub use perfsleuth_locks::{LockError, Tracer};
use perfsleuth_measure::{
    CommandId, CounterConfig, CounterStatus, IoConfig, MeasureError, Outcome,
};
use perfsleuth_model::LockReport;
use std::collections::VecDeque;

/// `--locks`: when to trace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockChoice {
    /// Not at all.
    Off,
    /// Where the kernel and privileges allow; otherwise a note, and the
    /// futex counts from the tracepoint stand in.
    Auto,
    /// Always; an error where it cannot.
    On,
}

/// Starts the tracer on the spawner `root` as `choice` asks: `Ok(None)`
/// for off, or for auto where tracing is impossible (with the note why);
/// `Err` only when asked for explicitly and impossible.
pub fn start(choice: LockChoice, root: u32) -> Result<(Option<Tracer>, Option<String>), LockError> {
    match choice {
        LockChoice::Off => Ok((None, None)),
        LockChoice::On => Tracer::start(root).map(|t| (Some(t), None)),
        LockChoice::Auto => match Tracer::start(root) {
            Ok(t) => Ok((Some(t), None)),
            Err(e) => Ok((
                None,
                Some(format!(
                    "locks not traced: {e}; the futex counts stand in for them"
                )),
            )),
        },
    }
}

/// A [`Spawn`] that remembers which command each run the spawner forked
/// belonged to: the kernel numbers the spawner's children 1, 2, … in fork
/// order, and runs are forked in the order they are queued.
pub struct Following<'a, S: Spawn> {
    inner: &'a mut S,
    queued: VecDeque<CommandId>,
    forked: Vec<CommandId>,
}

impl<'a, S: Spawn> Following<'a, S> {
    /// Wraps `inner`; every run from now on is counted.
    pub fn new(inner: &'a mut S) -> Self {
        Following {
            inner,
            queued: VecDeque::new(),
            forked: Vec::new(),
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
            .filter(|(_, c)| **c == id)
            .map(|(n, _)| n)
            .collect()
    }

    fn done(&mut self, id: Option<CommandId>, outcome: &Outcome) {
        // A run skipped after a failure never forked.
        if let Some(id) = id
            && !matches!(outcome, Outcome::Skipped)
        {
            self.forked.push(id);
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
        self.queued.push_back(id);
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
            self.done(Some(id), o);
        }
        outcome
    }
    fn stderr_tail(&mut self, id: CommandId, lines: usize) -> String {
        self.inner.stderr_tail(id, lines)
    }
    fn peak_rss_floor(&self) -> Option<u64> {
        self.inner.peak_rss_floor()
    }
}

/// Detaches the tracer and reports each benchmark's runs (`runs[i]`, from
/// [`Following::runs_of`]) when the kernel saw as many runs start as were
/// `forked`; otherwise (a run that failed to start, an interrupted queue,
/// another PID namespace) the numbers cannot be matched to benchmarks, and a
/// note says so rather than attribute waits to the wrong one. An error
/// reading the trace is a note too: the timings stand without it.
pub fn finish(
    tracer: Tracer,
    runs: &[Vec<u32>],
    forked: usize,
) -> (Vec<Option<LockReport>>, Option<String>) {
    let none = || vec![None; runs.len()];
    match tracer.finish() {
        Ok(traced) if traced.runs_seen() as usize == forked => {
            (runs.iter().map(|r| Some(traced.report(r))).collect(), None)
        }
        Ok(traced) => {
            let why = if traced.runs_seen() == 0 && forked > 0 {
                "the tracer followed no process: perfsleuth may run in a PID namespace of its own (a container), whose pids the kernel does not see"
                    .to_string()
            } else {
                format!(
                    "the kernel saw {} runs start and perfsleuth {forked}, so their waits cannot be matched to benchmarks (a run that failed to start, or an interrupted queue)",
                    traced.runs_seen()
                )
            };
            (none(), Some(format!("locks not reported: {why}")))
        }
        Err(e) => (none(), Some(format!("locks not reported: {e}"))),
    }
}
