//! The timed schedule of `perfsleuth run`: setups, warmups, then timed runs
//! interleaved over the benchmarks in sweeps that alternate direction (pipelined: the spawner is kept ahead
//! while this process stores the previous sample), each benchmark stopping by
//! the adaptive rule; cleanups last, and after a failure too.

use crate::Sink;
use crate::error::{RunError, Stop};
use crate::simulation::Simulation;
use crate::spawn::Spawn;
use perfsleuth_measure::Tolerate;
use perfsleuth_model::Environment;
use std::time::{Duration, Instant};

mod bench;
mod rounds;
use crate::schedule::rounds::*;
pub use bench::*;

/// Runs shorter than this are collected by polling rather than blocking.
const POLL_BELOW: Duration = Duration::from_millis(5);
/// Runs at least this long are requested one at a time: the bookkeeping
/// between them is a fraction of a percent of a run, and a run queued
/// ahead would be one more than the stopping rule wanted (a whole run of
/// a slow command; hyperfine's `--min-runs 1` of `sleep 4` runs once).
const ONE_AT_A_TIME_FROM: Duration = Duration::from_millis(50);
/// How long to sleep between polls for short runs.
const POLL_INTERVAL: Duration = Duration::from_millis(2);

/// Warmups always run, up to the count asked, before the time limit applies.
pub const MIN_WARMUPS: u32 = 3;

/// How to measure: the stop rule, warmups, order, tolerated failures.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// When a benchmark has enough runs.
    pub rule: StopRule,
    /// Untimed runs of each benchmark first.
    pub warmup: u32,
    /// Round-robin over the benchmarks (else one after another).
    pub interleave: bool,
    /// Which failed exits still count as measurements.
    pub tolerate: Tolerate,
    /// Whether the spawner may be kept ahead (and the sink written while a
    /// run is in flight); off on a single CPU, where that work would compete
    /// with the measured child, and in simulation mode, where each run's
    /// output must be read before the next run writes its own.
    pub overlap: bool,
    /// `--counters auto`: decide the software counters from the warmups.
    pub auto_counters: bool,
    /// Where this round sits among the rounds of one measurement, so the
    /// progress line counts the whole measurement and not one round.
    pub progress: RoundProgress,
}

/// The progress line's view of the rounds around the one being measured.
#[derive(Debug, Clone, Copy, Default)]
pub struct RoundProgress {
    /// When the measurement's first round began; this round's start if `None`.
    pub origin: Option<Instant>,
    /// Rounds still to come after this one (the planned `--rounds`; rounds
    /// added while a comparison is inconclusive are not known in advance).
    pub rounds_after: u32,
}

impl Schedule {
    /// A schedule with `overlap` decided for this machine.
    pub fn new(
        rule: StopRule,
        warmup: u32,
        interleave: bool,
        tolerate: Tolerate,
        simulated: bool,
        auto_counters: bool,
    ) -> Schedule {
        let overlap = !simulated && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
        Schedule {
            rule,
            warmup,
            interleave,
            tolerate,
            overlap,
            auto_counters,
            progress: RoundProgress::default(),
        }
    }

    /// Measures `benches`, handing every sample to `sink` as it comes. A
    /// benchmark whose run fails is set aside and the others measured to
    /// the end; the result is then the first failure.
    pub fn measure(
        &self,
        spawner: &mut impl Spawn,
        sink: &mut impl Sink,
        benches: &mut [Bench],
        simulation: Option<&Simulation>,
    ) -> Measured {
        let mut measured = self.measure_round(spawner, sink, benches, simulation);
        end_with_failures(&mut measured, benches);
        measured
    }

    /// [`Schedule::measure`], with a failed benchmark's failure left on it
    /// (`Ok` where only benchmarks failed): the rounds go on without it.
    fn measure_round(
        &self,
        spawner: &mut impl Spawn,
        sink: &mut impl Sink,
        benches: &mut [Bench],
        simulation: Option<&Simulation>,
    ) -> Measured {
        let mut m = Measure {
            spawner,
            sink,
            schedule: self,
            auto_counters: self.auto_counters,
            started: self.progress.origin.unwrap_or_else(Instant::now),
            pending: None,
            simulation,
            counter_env: Environment::default(),
            notes: Vec::new(),
            per_benchmark: Vec::new(),
        };
        let mut result = m.all(benches);
        if let Err(stop) = m.flush() {
            result = result.and(Err(stop));
        }
        // Profiles are kept even after a failure, like the samples before it.
        for (i, b) in benches.iter().enumerate() {
            if let Some(profile) = &b.profile
                && let Err(e) = m.sink.profile(i, profile)
            {
                result = result.and(Err(Stop::Failed(RunError::Sink(e))));
                break;
            }
        }
        Measured {
            result,
            counter_env: m.counter_env,
            notes: m.notes,
        }
    }
}

impl Schedule {
    /// Measures as [`Schedule::measure`] does, then further rounds: setups,
    /// as many timed runs per benchmark as the first round took (each round
    /// starting with the next benchmark), cleanups; no warmup. At least
    /// `min_rounds` in all (`run --rounds`); then, where `max_time` allows
    /// more, the comparison that follows is looked at (`undecided(benches,
    /// look)`, look 0 first) and while it does not decide yet, further rounds
    /// up to the next look ([`perfsleuth_stats::look_rounds`]: 1.5× the
    /// rounds of the one before), as long as they fit in `max_time` at the
    /// pace of the rounds so far. Samples carry their round and continue the
    /// iteration numbers. Returns how it ended, the rounds measured, and the
    /// last look made (`None` where `max_time` is zero: the comparison is
    /// made once, at its full α; its last look otherwise, whose data the
    /// final comparison sees).
    #[allow(clippy::too_many_arguments)]
    pub fn measure_until(
        &self,
        spawner: &mut impl Spawn,
        sink: &mut impl Sink,
        benches: &mut [Bench],
        simulation: Option<&Simulation>,
        min_rounds: u32,
        max_time: std::time::Duration,
        mut undecided: impl FnMut(&[Bench], u32) -> bool,
    ) -> (Measured, u32, Option<u32>) {
        let started = Instant::now();
        let first_round = Schedule {
            progress: RoundProgress {
                origin: Some(started),
                rounds_after: min_rounds.saturating_sub(1),
            },
            ..self.clone()
        };
        let mut measured = first_round.measure_round(spawner, sink, benches, simulation);
        let first = started.elapsed();
        let per_round: Vec<u32> = benches.iter().map(|b| b.runs()).collect();
        let mut rounds = 1;
        let mut next = Schedule {
            warmup: 0,
            auto_counters: false,
            ..self.clone()
        };
        let mut another = |benches: &mut [Bench], rounds: u32, target: u32| {
            for (b, n) in benches.iter_mut().zip(&per_round) {
                b.until = Some(b.runs() + n);
                b.round_runs = Some(*n);
                b.done = false;
                b.round = rounds;
            }
            next.progress = RoundProgress {
                origin: Some(started),
                rounds_after: target.saturating_sub(rounds + 1),
            };
            next.measure_round(spawner, sink, benches, simulation)
        };
        let absorb = |measured: &mut Measured, more: Measured| {
            measured.result = more.result;
            measured.notes.extend(more.notes);
            measured.counter_env.merge(more.counter_env);
        };
        while measured.result.is_ok() && rounds < min_rounds {
            let more = another(benches, rounds, min_rounds);
            absorb(&mut measured, more);
            rounds += 1;
        }
        if max_time.is_zero() {
            end_with_failures(&mut measured, benches);
            return (measured, rounds, None);
        }
        let mut look = 0;
        // A failed benchmark ends the comparison: no rounds for it.
        while measured.result.is_ok()
            && !benches.iter().any(Bench::has_failed)
            && undecided(benches, look)
        {
            let target = perfsleuth_stats::look_rounds(min_rounds, look + 1);
            // The pace of the rounds after the first (which had the warmups).
            let pace = if rounds > 1 {
                started.elapsed().saturating_sub(first) / (rounds - 1)
            } else {
                first
            };
            let needed = pace.saturating_mul(target - rounds);
            if started.elapsed().saturating_add(needed) > max_time {
                break;
            }
            while measured.result.is_ok() && rounds < target {
                let more = another(benches, rounds, target);
                absorb(&mut measured, more);
                rounds += 1;
            }
            look += 1;
        }
        end_with_failures(&mut measured, benches);
        (measured, rounds, Some(look))
    }
}

/// Where benchmarks failed and the measurement otherwise ended well: it
/// ends with the first one's failure, the others' said with it.
fn end_with_failures(measured: &mut Measured, benches: &mut [Bench]) {
    if measured.result.is_err() {
        return;
    }
    let mut failures = benches.iter_mut().filter_map(|b| b.failed.take());
    let Some(mut first) = failures.next() else {
        return;
    };
    let others: Vec<String> = failures.map(|e| format!("also: {e}")).collect();
    if let RunError::CommandFailed { details, .. } = &mut first {
        details.extend(others);
    }
    measured.result = Err(Stop::Failed(first));
}

/// How measuring ended, and what it decided about counters.
#[derive(Debug)]
pub struct Measured {
    /// `Ok` when every benchmark was measured to the end.
    pub result: Result<(), Stop>,
    /// Facts about counters decided while measuring (`--counters auto`).
    pub counter_env: Environment,
    /// Notes about counters and cut-short warmups, to print after the results.
    pub notes: Vec<String>,
}

#[cfg(test)]
mod tests;
