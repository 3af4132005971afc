//! The measuring loop: the runs of every benchmark requested round by
//! round (interleaved, serpentine order), collected, and stopped by rule.

use crate::Progress;
use crate::Schedule;
use crate::Sink;
use crate::check::check;
use crate::error::Role;
use crate::error::RunError;
use crate::error::Stop;
use crate::schedule::MIN_WARMUPS;
use crate::schedule::ONE_AT_A_TIME_FROM;
use crate::schedule::POLL_BELOW;
use crate::schedule::POLL_INTERVAL;
use crate::schedule::bench::Bench;
use crate::schedule::bench::StopRule;
use crate::simulation::Simulation;
use crate::spawn::Spawn;
use perfsleuth_measure::CommandId;
use perfsleuth_measure::Outcome;
use perfsleuth_measure::Tolerate;
use perfsleuth_model::Environment;
use perfsleuth_model::Sample;
use std::collections::VecDeque;
use std::time::Duration;
use std::time::Instant;

/// One request in the timed pipeline.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Step {
    pub(crate) bench: usize,
    pub(crate) kind: StepKind,
    pub(crate) iteration: u32,
}

/// What a step runs: the benchmarked command or one of its untimed helpers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StepKind {
    Prepare,
    Timed,
    Conclude,
}

pub(crate) struct Measure<'a, S: Spawn, K: Sink> {
    pub(crate) spawner: &'a mut S,
    pub(crate) sink: &'a mut K,
    pub(crate) schedule: &'a Schedule,
    /// `--counters auto` still to be decided (before the first timed run).
    pub(crate) auto_counters: bool,
    /// When the whole measurement began (its first round).
    pub(crate) started: Instant,
    /// A measured sample not yet handed to the sink: (benchmark index, sample).
    pub(crate) pending: Option<(usize, Sample)>,
    /// Simulation mode: where each run's callgrind output is read from.
    pub(crate) simulation: Option<&'a Simulation>,
    pub(crate) counter_env: Environment,
    pub(crate) notes: Vec<String>,
    /// The progress line's runs per benchmark, kept to reuse its allocation.
    pub(crate) per_benchmark: Vec<u64>,
}

impl<S: Spawn, K: Sink> Measure<'_, S, K> {
    pub(crate) fn all(&mut self, benches: &mut [Bench]) -> Result<(), Stop> {
        let result = self.phases(benches);
        if matches!(result, Err(Stop::Failed(_))) {
            // What was set up is cleaned up, even after a failure (not after
            // Ctrl-C: the user wants out). Best effort: the failure is the news.
            for b in benches.iter_mut().filter(|b| b.set_up) {
                if let Some(id) = b.cleanup {
                    let _ = self.spawner.run_anyway(id);
                }
            }
        }
        result
    }

    pub(crate) fn phases(&mut self, benches: &mut [Bench]) -> Result<(), Stop> {
        let warmup = self.schedule.warmup;
        if self.schedule.interleave {
            for b in benches.iter_mut().filter(|b| !b.has_failed()) {
                let setup = self.aux(b.setup, "--setup", &b.plan.name);
                self.or_set_aside(b, setup)?;
                b.set_up = !b.has_failed();
            }
            let start = Instant::now();
            let limit = self.schedule.rule.budget * benches.len() as u32;
            for done in 0..warmup {
                if self.warmup_cut(done, warmup, start, limit) {
                    break;
                }
                for b in benches.iter_mut().filter(|b| !b.has_failed()) {
                    let warm = self.warm(b);
                    self.or_set_aside(b, warm)?;
                }
            }
            self.timed(benches, 0)?;
            for b in benches.iter_mut().filter(|b| b.set_up) {
                b.set_up = false;
                let cleanup = self.aux(b.cleanup, "--cleanup", &b.plan.name);
                self.or_set_aside(b, cleanup)?;
            }
        } else {
            for i in 0..benches.len() {
                let b = &mut benches[i];
                if b.has_failed() {
                    continue;
                }
                let setup = self.aux(b.setup, "--setup", &b.plan.name);
                self.or_set_aside(b, setup)?;
                if b.has_failed() {
                    continue;
                }
                b.set_up = true;
                let start = Instant::now();
                for done in 0..warmup {
                    if b.has_failed()
                        || self.warmup_cut(done, warmup, start, self.schedule.rule.budget)
                    {
                        break;
                    }
                    let warm = self.warm(b);
                    self.or_set_aside(b, warm)?;
                }
                self.timed(&mut benches[i..=i], i)?;
                let b = &mut benches[i];
                b.set_up = false;
                let cleanup = self.aux(b.cleanup, "--cleanup", &b.plan.name);
                self.or_set_aside(b, cleanup)?;
            }
        }
        Ok(())
    }

    /// After a run of `b` (or of a helper of its) failed, `b` is set aside:
    /// the spawner, halted by the failure, goes on, and the other
    /// benchmarks are measured on; the measurement ends with the failure.
    /// What is not one benchmark's failure (Ctrl-C, the store, the
    /// spawner itself) ends the measurement now.
    pub(crate) fn or_set_aside(
        &mut self,
        b: &mut Bench,
        result: Result<(), Stop>,
    ) -> Result<(), Stop> {
        match result {
            Ok(()) => Ok(()),
            Err(Stop::Failed(e @ (RunError::CommandFailed { .. } | RunError::TimedOut { .. }))) => {
                self.spawner.resume().map_err(|source| {
                    Stop::Failed(RunError::Measure {
                        what: "command".into(),
                        source,
                    })
                })?;
                b.failed = Some(e);
                Ok(())
            }
            Err(other) => Err(other),
        }
    }

    /// Collects the replies of the runs `queue` holds, which the spawner
    /// answers without running them after a failure; their timed runs are
    /// requested again (under the same iterations) if their benchmark goes on.
    pub(crate) fn drain_skipped(&mut self, queue: &mut VecDeque<Step>, benches: &mut [Bench]) {
        for s in queue.drain(..) {
            let _ = self.spawner.finish();
            if s.kind == StepKind::Timed {
                let b = &mut benches[s.bench];
                b.requested = b.requested.saturating_sub(1);
            }
        }
    }

    /// The timed runs, interleaved over `benches` (whose first has index
    /// `offset` in the plan). The spawner is kept ahead: while it runs
    /// iteration k+1, this process stores iteration k and applies the
    /// stopping rule, so none of that is on the critical path.
    pub(crate) fn timed(&mut self, benches: &mut [Bench], offset: usize) -> Result<(), Stop> {
        if self.auto_counters {
            // Once, before the first timed run, from the warmups seen so far
            // (with --no-interleave: the first command's).
            self.auto_counters = false;
            let fastest = benches.iter().filter_map(|b| b.last_unit).min();
            let notes = crate::counters::enable_auto(self.spawner, fastest, &mut self.counter_env);
            self.notes.extend(notes);
        }
        let rule = self.schedule.rule;
        let mut queue: VecDeque<Step> = VecDeque::new();
        // Each round starts with another benchmark, so no command is always first.
        let mut cursor = Serpentine::new(
            benches
                .first()
                .map_or(0, |b| b.round as usize % benches.len()),
        );
        loop {
            let (depth, poll) = self.pace(benches);
            while queue.iter().filter(|s| s.kind == StepKind::Timed).count() < depth {
                let Some(bench) = next_bench(benches, &rule, &mut cursor) else {
                    break;
                };
                let b = &mut benches[bench];
                let iteration = b.requested;
                b.requested += 1;
                if let Some(prep) = b.prepare {
                    self.begin(prep, 0, "--prepare")?;
                    queue.push_back(Step {
                        bench,
                        kind: StepKind::Prepare,
                        iteration,
                    });
                }
                self.begin(b.main, iteration, "command")?;
                queue.push_back(Step {
                    bench,
                    kind: StepKind::Timed,
                    iteration,
                });
                if let Some(conclude) = b.conclude {
                    self.begin(conclude, 0, "--conclude")?;
                    queue.push_back(Step {
                        bench,
                        kind: StepKind::Conclude,
                        iteration,
                    });
                }
            }
            let Some(&step) = queue.front() else {
                return Ok(());
            };
            let result = match self.wait_next(poll) {
                Ok(None) => continue,
                Ok(Some(outcome)) => {
                    queue.pop_front();
                    let tolerate = if step.kind == StepKind::Timed {
                        &self.schedule.tolerate
                    } else {
                        &Tolerate::Nothing
                    };
                    if outcome.halts(tolerate) {
                        // Collect the replies of runs already queued (the spawner
                        // answers them without running) before anything else is
                        // asked of it, such as a re-run to show the failure.
                        self.drain_skipped(&mut queue, benches);
                    }
                    // The next queued run is executing now: store the previous sample meanwhile.
                    self.flush().and_then(|()| {
                        self.complete(&mut benches[step.bench], offset + step.bench, step, outcome)
                    })
                }
                Err(stop) => {
                    // The failed request's reply (an error) was consumed.
                    queue.pop_front();
                    Err(stop)
                }
            };
            if let Err(stop) = result {
                // Runs already queued are answered without running (the spawner
                // halts after a failure); collect their replies to stay in step.
                self.drain_skipped(&mut queue, benches);
                self.or_set_aside(&mut benches[step.bench], Err(stop))?;
                continue;
            }
            if step.kind == StepKind::Timed {
                self.show_progress(benches);
            }
        }
    }

    /// How many runs to keep queued, and whether to poll instead of blocking.
    /// Short runs are polled: this process sleeps between looks, so the
    /// spawner's replies never have to wake it, and enough runs are queued to
    /// keep the spawner busy meanwhile. Long runs block (one wake-up per run
    /// is noise there). On one CPU nothing is queued ahead.
    pub(crate) fn pace(&self, benches: &[Bench]) -> (usize, bool) {
        if !self.schedule.overlap {
            return (1, false);
        }
        // Runs on every reply: no allocation.
        let (sum, count) = benches
            .iter()
            .filter(|b| b.wants_more(&self.schedule.rule))
            .filter_map(|b| b.last_unit)
            .fold((Duration::ZERO, 0u32), |(s, n), d| (s + d, n + 1));
        // Until a run's length is known (no warmup): one at a time.
        if count == 0 {
            return (1, false);
        }
        let typical = sum / count;
        if typical >= ONE_AT_A_TIME_FROM {
            return (1, false);
        }
        if typical >= POLL_BELOW {
            return (2, false);
        }
        let per_poll =
            (POLL_INTERVAL.as_secs_f64() / typical.as_secs_f64().max(1e-6)).ceil() as usize;
        ((per_poll + 2).clamp(2, 64), true)
    }

    /// The next reply: `None` when polling found nothing yet (after storing
    /// the pending sample and sleeping one poll interval).
    pub(crate) fn wait_next(&mut self, poll: bool) -> Result<Option<Outcome>, Stop> {
        let fail = |source| {
            Stop::Failed(RunError::Measure {
                what: "command".into(),
                source,
            })
        };
        if poll {
            return match self.spawner.try_finish().map_err(fail)? {
                Some(outcome) => Ok(Some(outcome)),
                None => {
                    self.flush()?;
                    self.waiting(false)?;
                    std::thread::sleep(POLL_INTERVAL);
                    Ok(None)
                }
            };
        }
        if !self.schedule.overlap {
            self.flush()?;
        }
        self.waiting(true)?;
        self.spawner.finish().map(Some).map_err(fail)
    }

    /// Checks one finished request and records it.
    pub(crate) fn complete(
        &mut self,
        b: &mut Bench,
        index: usize,
        step: Step,
        outcome: Outcome,
    ) -> Result<(), Stop> {
        let helper = match step.kind {
            StepKind::Prepare => Some((b.prepare, "--prepare")),
            StepKind::Conclude => Some((b.conclude, "--conclude")),
            StepKind::Timed => None,
        };
        if let Some((id, what)) = helper {
            let s = check(
                &Tolerate::Nothing,
                self.spawner,
                id.unwrap_or(b.main),
                || format!("{what} command of `{}`", b.plan.name),
                Role::Helper,
                outcome,
            )?;
            b.spent += Duration::from_nanos(s.wall_ns);
            // The helpers' time paces the pipeline as the command's does.
            if step.kind == StepKind::Prepare {
                b.prepare_wall = Duration::from_nanos(s.wall_ns);
            } else {
                b.conclude_wall = Duration::from_nanos(s.wall_ns);
            }
            return Ok(());
        }
        let mut sample = self.check_main(b, outcome, Role::Timed)?;
        sample.iteration = step.iteration;
        sample.round = b.round;
        if let (Some(sim), Some(dir)) = (self.simulation, &b.sim_dir) {
            b.profile = Some(sim.collect(dir, &b.plan.command, &mut sample)?);
        }
        b.spent += Duration::from_nanos(sample.wall_ns);
        b.last_unit = Some(b.prepare_wall + Duration::from_nanos(sample.wall_ns) + b.conclude_wall);
        if self.sink.keeps_samples() {
            self.pending = Some((index, sample.clone()));
        }
        b.samples.push(sample);
        b.update_done(&self.schedule.rule);
        Ok(())
    }

    /// Checks a benchmarked run against the `--ignore-failure` policy.
    pub(crate) fn check_main(
        &mut self,
        b: &Bench,
        outcome: Outcome,
        role: Role,
    ) -> Result<Sample, Stop> {
        let label = || format!("command `{}`", b.plan.command);
        check(
            &self.schedule.tolerate,
            self.spawner,
            b.main,
            label,
            role,
            outcome,
        )
    }

    /// Queues a run; timed runs discard stderr.
    pub(crate) fn begin(&mut self, id: CommandId, iteration: u32, what: &str) -> Result<(), Stop> {
        self.spawner
            .begin(id, iteration, what != "command")
            .map_err(|source| {
                Stop::Failed(RunError::Measure {
                    what: what.into(),
                    source,
                })
            })
    }

    /// Runs one untimed request to completion.
    pub(crate) fn exec(&mut self, id: CommandId, what: &str) -> Result<Outcome, Stop> {
        self.flush()?;
        self.spawner.run_once(id, 0).map_err(|source| {
            Stop::Failed(RunError::Measure {
                what: what.into(),
                source,
            })
        })
    }

    /// Tells the sink that measuring waits for a run ([`crate::Sink::waiting`]).
    fn waiting(&mut self, blocking: bool) -> Result<(), Stop> {
        self.sink
            .waiting(blocking)
            .map_err(|e| Stop::Failed(RunError::Sink(e)))
    }

    /// Hands the pending sample, if any, to the sink.
    pub(crate) fn flush(&mut self) -> Result<(), Stop> {
        if let Some((bench, sample)) = self.pending.take() {
            self.sink
                .sample(bench, &sample)
                .map_err(|e| Stop::Failed(RunError::Sink(e)))?;
        }
        Ok(())
    }

    /// Whether to stop warming up after `done` of `asked` warmups begun at
    /// `start`: never before [`MIN_WARMUPS`] (or the count asked), then once
    /// they took the time the timed runs get (`limit`), so `--warmup
    /// 4294967295` cannot run forever. Says so in a note.
    pub(crate) fn warmup_cut(
        &mut self,
        done: u32,
        asked: u32,
        start: Instant,
        limit: Duration,
    ) -> bool {
        let cut = done >= MIN_WARMUPS && start.elapsed() >= limit;
        if cut && !self.notes.iter().any(|n| n.starts_with("warmup stopped")) {
            self.notes.push(format!(
                "warmup stopped after {done} of {asked} runs: warmups may take as long as the timed runs' time budget ({:.1} s a round); raise --time-budget for more",
                self.schedule.rule.budget.as_secs_f64()
            ));
        }
        cut
    }

    pub(crate) fn warm(&mut self, b: &mut Bench) -> Result<(), Stop> {
        self.aux(b.prepare, "--prepare", &b.plan.name)?;
        let outcome = self.exec(b.main, "command")?;
        let s = self.check_main(b, outcome, Role::Untimed)?;
        b.last_unit = Some(Duration::from_nanos(s.wall_ns));
        self.aux(b.conclude, "--conclude", &b.plan.name)
    }

    /// Runs an untimed helper command (prepare/conclude/setup/cleanup); it must succeed.
    pub(crate) fn aux(
        &mut self,
        id: Option<CommandId>,
        what: &str,
        bench: &str,
    ) -> Result<(), Stop> {
        let Some(id) = id else { return Ok(()) };
        let outcome = self.exec(id, what)?;
        check(
            &Tolerate::Nothing,
            self.spawner,
            id,
            || format!("{what} command of `{bench}`"),
            Role::Helper,
            outcome,
        )
        .map(|_| ())
    }

    pub(crate) fn show_progress(&mut self, benches: &[Bench]) {
        let rule = &self.schedule.rule;
        let elapsed = self.started.elapsed();
        // This round's rest, then the rounds still planned, each as long as
        // a round of each benchmark takes.
        let after = self.schedule.progress.rounds_after;
        let eta: Duration = benches
            .iter()
            .map(|b| b.remaining(rule) + b.round_time(rule) * after)
            .sum();
        // Reused: this runs after every timed sample.
        self.per_benchmark.clear();
        self.per_benchmark
            .extend(benches.iter().map(|b| b.samples.len() as u64));
        let runs: u64 = self.per_benchmark.iter().sum();
        let total = elapsed + eta;
        let fraction = if total.is_zero() {
            1.0
        } else {
            elapsed.as_secs_f64() / total.as_secs_f64()
        };
        let active = benches.iter().filter(|b| !b.done).count();
        let phase = format!("Measuring {active}/{} commands", benches.len());
        self.sink.progress(&Progress {
            phase: &phase,
            fraction,
            runs,
            elapsed,
            eta,
            per_benchmark: &self.per_benchmark,
        });
    }
}

/// Where the interleaved order stands: sweeps over the benchmarks from a
/// round's first one, every other sweep backwards (A B B A A B ...). Each
/// side of an adjacent pair then runs first as often as second, in every
/// round: measured on the 2-vCPU study host, the second run of a pair read
/// 0.1–0.3 % faster on CPU time, and plain round-robin within a round (A B A
/// B, so A always first) turned that into a bias of the paired estimate.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Serpentine {
    pub(crate) start: usize,
    pub(crate) step: usize,
}

impl Serpentine {
    pub(crate) fn new(start: usize) -> Self {
        Serpentine { start, step: 0 }
    }

    /// The benchmark at slot `step` of the order, for `n` benchmarks.
    pub(crate) fn at(&self, step: usize, n: usize) -> usize {
        let (sweep, pos) = (step / n, step % n);
        let offset = if sweep % 2 == 0 { pos } else { n - 1 - pos };
        (self.start + offset) % n
    }
}

/// The next benchmark in the interleaved order that wants another run.
pub(crate) fn next_bench(
    benches: &[Bench],
    rule: &StopRule,
    cursor: &mut Serpentine,
) -> Option<usize> {
    let n = benches.len();
    // Two sweeps visit every benchmark at least once.
    let skip = (0..2 * n).find(|&k| benches[cursor.at(cursor.step + k, n)].wants_more(rule))?;
    let found = cursor.at(cursor.step + skip, n);
    cursor.step += skip + 1;
    Some(found)
}
