//! A scripted stand-in for the spawner: the schedule's tests see every run
//! it asks for, in order, without starting a process.

use crate::Sink;
use crate::error::SinkError;
use crate::spawn::Spawn;
use perfsleuth_measure::{
    CommandId, CounterConfig, CounterStatus, IoConfig, MeasureError, Outcome, Tolerate,
};
use perfsleuth_model::{Profile, Run, Sample};
use std::collections::VecDeque;
use std::time::Duration;

/// One run the fake executed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ran {
    /// The command's first word.
    pub program: String,
    /// The iteration number the schedule gave it.
    pub iteration: u32,
    /// Whether stderr was kept (warmups, helpers, re-runs), i.e. not timed.
    pub untimed: bool,
}

impl Ran {
    /// Shorthand for a log line: `a#2` timed, `a~0` untimed.
    pub fn short(&self) -> String {
        format!(
            "{}{}{}",
            self.program,
            if self.untimed { "~" } else { "#" },
            self.iteration
        )
    }
}

type Script = Box<dyn FnMut(&str, usize) -> Outcome>;

/// The fake spawner. `script(program, n)` decides the outcome of the n-th
/// execution (0-based, counting every kind) of that program.
pub struct FakeSpawner {
    commands: Vec<(String, Tolerate)>,
    queue: VecDeque<(CommandId, u32, bool)>,
    /// Every run executed, in order.
    pub log: Vec<Ran>,
    script: Script,
    /// After a failure, queued runs are answered `Skipped`, as the spawner does.
    halted: bool,
    /// The counter configurations asked for.
    pub counters: Vec<CounterConfig>,
    /// The most runs ever queued at once.
    pub max_queued: usize,
    /// `try_finish` answers "not yet" this many times before each reply, as
    /// the spawner does while a short run is still executing.
    pub not_ready: u32,
    pending_not_ready: u32,
    /// Polls that found nothing.
    pub empty_polls: u32,
}

impl FakeSpawner {
    /// A fake whose runs end as `script` says.
    pub fn new(script: impl FnMut(&str, usize) -> Outcome + 'static) -> FakeSpawner {
        FakeSpawner {
            commands: Vec::new(),
            queue: VecDeque::new(),
            log: Vec::new(),
            script: Box::new(script),
            halted: false,
            counters: Vec::new(),
            max_queued: 0,
            not_ready: 0,
            pending_not_ready: 0,
            empty_polls: 0,
        }
    }

    /// The log in shorthand.
    pub fn trace(&self) -> Vec<String> {
        self.log.iter().map(Ran::short).collect()
    }

    /// Runs still queued (a schedule must leave none).
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    fn execute(&mut self, id: CommandId, iteration: u32, untimed: bool) -> Outcome {
        let (program, tolerate) = self.commands[id.index() as usize].clone();
        let n = self.log.iter().filter(|r| r.program == program).count();
        self.log.push(Ran {
            program: program.clone(),
            iteration,
            untimed,
        });
        let outcome = (self.script)(&program, n);
        if outcome.halts(&tolerate) {
            self.halted = true;
        }
        outcome
    }
}

/// A successful run of this many nanoseconds.
pub fn ok(wall_ns: u64) -> Outcome {
    Outcome::Completed(Sample {
        wall_ns,
        exit_code: Some(0),
        ..Sample::default()
    })
}

/// A run that exited with `code`.
pub fn exit(code: i32) -> Outcome {
    Outcome::Completed(Sample {
        wall_ns: 1_000_000,
        exit_code: Some(code),
        ..Sample::default()
    })
}

impl Spawn for FakeSpawner {
    fn prepare(&mut self, argv: &[String], io: &IoConfig) -> Result<CommandId, MeasureError> {
        let program = argv
            .first()
            .cloned()
            .ok_or_else(|| MeasureError::NotFound(String::new()))?;
        self.commands.push((program, io.tolerate.clone()));
        Ok(CommandId::from_index(self.commands.len() as u32 - 1))
    }

    fn enable_counters(&mut self, cfg: &CounterConfig) -> Result<CounterStatus, MeasureError> {
        self.counters.push(cfg.clone());
        Ok(CounterStatus::default())
    }

    fn begin(
        &mut self,
        id: CommandId,
        iteration: u32,
        capture_stderr: bool,
    ) -> Result<(), MeasureError> {
        self.queue.push_back((id, iteration, capture_stderr));
        self.max_queued = self.max_queued.max(self.queue.len());
        Ok(())
    }

    fn finish(&mut self) -> Result<Outcome, MeasureError> {
        let (id, iteration, untimed) = self
            .queue
            .pop_front()
            .expect("finish() without a queued run");
        if self.halted {
            return Ok(Outcome::Skipped);
        }
        Ok(self.execute(id, iteration, untimed))
    }

    fn try_finish(&mut self) -> Result<Option<Outcome>, MeasureError> {
        if self.pending_not_ready < self.not_ready {
            self.pending_not_ready += 1;
            self.empty_polls += 1;
            return Ok(None);
        }
        self.pending_not_ready = 0;
        self.finish().map(Some)
    }

    fn run_anyway(&mut self, id: CommandId) -> Result<Outcome, MeasureError> {
        Ok(self.execute(id, 0, true))
    }

    fn resume(&mut self) -> Result<(), MeasureError> {
        self.halted = false;
        Ok(())
    }

    fn stderr_tail(&mut self, id: CommandId, _lines: usize) -> String {
        format!("stderr of {}", self.commands[id.index() as usize].0)
    }

    fn peak_rss_floor(&self) -> Option<u64> {
        Some(1 << 20)
    }
}

/// A sink that keeps what it is given.
#[derive(Default)]
pub struct Collect {
    /// (benchmark index, sample), in the order handed over.
    pub samples: Vec<(usize, Sample)>,
    /// Profiles handed over.
    pub profiles: Vec<(usize, Profile)>,
    /// Progress updates seen.
    pub progress: usize,
    /// The ETA of each progress update, in order.
    pub etas: Vec<Duration>,
    /// The final run, once finished.
    pub finished: Option<Run>,
    /// Fail the n-th sample write.
    pub fail_at: Option<usize>,
}

impl Sink for Collect {
    fn sample(&mut self, bench: usize, sample: &Sample) -> Result<(), SinkError> {
        if self.fail_at == Some(self.samples.len()) {
            return Err("disk full".into());
        }
        self.samples.push((bench, sample.clone()));
        Ok(())
    }

    fn profile(&mut self, bench: usize, profile: &Profile) -> Result<(), SinkError> {
        self.profiles.push((bench, profile.clone()));
        Ok(())
    }

    fn progress(&mut self, progress: &crate::Progress<'_>) {
        self.progress += 1;
        self.etas.push(progress.eta);
    }

    fn finish(&mut self, run: &Run) -> Result<(), SinkError> {
        self.finished = Some(run.clone());
        Ok(())
    }
}
