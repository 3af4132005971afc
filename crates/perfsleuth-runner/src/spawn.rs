//! The seam between the schedule and process execution.

use perfsleuth_measure::{
    CommandId, CounterConfig, CounterStatus, IoConfig, MeasureError, Outcome, Spawner,
};

/// What the engine asks of process execution. [`Spawner`] is the real one;
/// the tests drive the schedule with a scripted fake.
///
/// Runs are requested with [`Spawn::begin`] and answered in order by
/// [`Spawn::finish`] / [`Spawn::try_finish`], so several can be queued.
pub trait Spawn {
    /// Checks and registers a command; runs refer to it by the id.
    fn prepare(&mut self, argv: &[String], io: &IoConfig) -> Result<CommandId, MeasureError>;
    /// Opens perf_event counters for every later run.
    fn enable_counters(&mut self, cfg: &CounterConfig) -> Result<CounterStatus, MeasureError>;
    /// Queues one run (`capture_stderr`: keep its stderr for a failure report).
    fn begin(
        &mut self,
        id: CommandId,
        iteration: u32,
        capture_stderr: bool,
    ) -> Result<(), MeasureError>;
    /// The oldest queued run's outcome, waiting for it.
    fn finish(&mut self) -> Result<Outcome, MeasureError>;
    /// The oldest queued run's outcome if it is there, without waiting.
    fn try_finish(&mut self) -> Result<Option<Outcome>, MeasureError>;
    /// Runs once to completion, stderr kept.
    fn run_once(&mut self, id: CommandId, iteration: u32) -> Result<Outcome, MeasureError> {
        self.begin(id, iteration, true)?;
        self.finish()
    }
    /// Runs once even after a failure halted the queue (diagnosis, cleanup).
    fn run_anyway(&mut self, id: CommandId) -> Result<Outcome, MeasureError>;
    /// Lifts the halt a failure put on the queue (once its queued replies
    /// are collected): runs requested from now on execute.
    fn resume(&mut self) -> Result<(), MeasureError>;
    /// The last `lines` lines of the command's kept stderr.
    fn stderr_tail(&mut self, id: CommandId, lines: usize) -> String;
    /// The executor's own peak RSS: the floor of every child's reported peak.
    fn peak_rss_floor(&self) -> Option<u64>;
    /// Says that the next run requested is timed iteration `iteration`
    /// although it keeps its stderr (the scale sweep's runs); only the
    /// run-numbering wrapper cares.
    fn note_timed(&mut self, _iteration: u32) {}
}

impl Spawn for Spawner {
    fn prepare(&mut self, argv: &[String], io: &IoConfig) -> Result<CommandId, MeasureError> {
        Spawner::prepare(self, argv, io)
    }
    fn enable_counters(&mut self, cfg: &CounterConfig) -> Result<CounterStatus, MeasureError> {
        Spawner::enable_counters(self, cfg)
    }
    fn begin(
        &mut self,
        id: CommandId,
        iteration: u32,
        capture_stderr: bool,
    ) -> Result<(), MeasureError> {
        Spawner::begin(self, id, iteration, capture_stderr)
    }
    fn finish(&mut self) -> Result<Outcome, MeasureError> {
        Spawner::finish(self)
    }
    fn try_finish(&mut self) -> Result<Option<Outcome>, MeasureError> {
        Spawner::try_finish(self)
    }
    fn run_once(&mut self, id: CommandId, iteration: u32) -> Result<Outcome, MeasureError> {
        Spawner::run_once(self, id, iteration)
    }
    fn run_anyway(&mut self, id: CommandId) -> Result<Outcome, MeasureError> {
        Spawner::run_anyway(self, id)
    }
    fn resume(&mut self) -> Result<(), MeasureError> {
        Spawner::resume(self)
    }
    fn stderr_tail(&mut self, id: CommandId, lines: usize) -> String {
        Spawner::stderr_tail(self, id, lines)
    }
    fn peak_rss_floor(&self) -> Option<u64> {
        Spawner::peak_rss_floor(self)
    }
}
