//! The measurement engine behind `perfsleuth run` and `perfsleuth scale`:
//! preparing benchmarks in the spawner, warmups, the pipelined interleaved
//! schedule with its adaptive stop, the concurrency sweep, the probe suite,
//! counters, and the end of a run.
//!
//! It talks to process execution through [`Spawn`] (the spawner implements
//! it; the tests use a scripted fake) and to storage and progress display
//! through [`Sink`], so it never prints and never opens a store. Errors are
//! typed ([`RunError`]); the binary turns them into `error:` / `hint:` lines.

#![forbid(unsafe_code)]

mod check;
pub mod counters;
mod error;
mod following;
pub mod locks;
mod probes;
pub mod profile;
mod schedule;
mod scratch;
mod simulation;
mod spawn;
pub mod sweep;

pub use check::check;
pub use counters::Counters;
pub use error::Role;
pub use error::{RunError, SinkError, Stop};
pub use probes::probe_suite;
pub use schedule::{Bench, Measured, Planned, Schedule, StopRule, Variant, benchmarks, prepare};
pub use scratch::ScratchDir;
pub use simulation::{
    CPUID_KEY, DEFAULT_RUNS as SIMULATION_RUNS, PROFILE_FUNCTIONS, Portable, PortableChoice,
    Simulation, cpuid_check, nondeterminism,
};
pub use spawn::Spawn;

use perfsleuth_model::{ImpactClass, Profile, Run, RunStatus, Sample, rfc3339};
use std::time::{Duration, SystemTime};

/// Where measured results go while measuring: the store, a progress line.
/// Every method but [`Sink::sample`] has a do-nothing default.
pub trait Sink {
    /// A timed sample of benchmark `bench` (its index in the plan). Called
    /// while the next run executes, so its cost is off the critical path.
    fn sample(&mut self, bench: usize, sample: &Sample) -> Result<(), SinkError>;

    /// Whether [`Sink::sample`] wants the samples at all; a sink that keeps
    /// nothing spares the schedule a copy of every sample.
    fn keeps_samples(&self) -> bool {
        true
    }

    /// Benchmark `bench`'s simulation profile, once measuring is over.
    fn profile(&mut self, _bench: usize, _profile: &Profile) -> Result<(), SinkError> {
        Ok(())
    }

    /// Measuring waits for a run: until it ends, however long that takes,
    /// when `blocking`; else it looks again in a few milliseconds. A sink
    /// holding samples back commits them here when it should.
    fn waiting(&mut self, _blocking: bool) -> Result<(), SinkError> {
        Ok(())
    }

    /// Where measuring stands, after each run.
    fn progress(&mut self, _progress: &Progress<'_>) {}

    /// One probe's results, as soon as the probe has finished.
    fn probe_results(
        &mut self,
        _results: &[perfsleuth_model::ProbeResult],
    ) -> Result<(), SinkError> {
        Ok(())
    }

    /// The run has ended: status, end time and context facts are final.
    fn finish(&mut self, _run: &Run) -> Result<(), SinkError> {
        Ok(())
    }
}

/// A sink that keeps nothing (`--no-store` without a display).
#[derive(Debug, Default)]
pub struct Discard;

impl Sink for Discard {
    fn sample(&mut self, _bench: usize, _sample: &Sample) -> Result<(), SinkError> {
        Ok(())
    }

    fn keeps_samples(&self) -> bool {
        false
    }
}

/// A snapshot of measuring progress.
#[derive(Debug, Clone, Copy)]
pub struct Progress<'a> {
    /// What is being done, e.g. "Measuring 2/3 commands".
    pub phase: &'a str,
    /// Done so far, 0 … 1.
    pub fraction: f64,
    /// Runs measured so far.
    pub runs: u64,
    /// Time since measuring began.
    pub elapsed: Duration,
    /// Estimated time left.
    pub eta: Duration,
    /// Runs measured so far of each benchmark being measured, in plan order
    /// (all of them when interleaved; one at a time with --no-interleave;
    /// empty where the phase has no benchmarks of its own).
    pub per_benchmark: &'a [u64],
}

/// The machine's fingerprint, with the `perf.*` facts from the code that
/// opens counters for a run (a tree has no kernel to ask).
pub fn capture_environment(src: &perfsleuth_env::Source) -> perfsleuth_model::Environment {
    let counters = src
        .is_live()
        .then(perfsleuth_measure::counters::availability);
    perfsleuth_env::capture(src, counters.as_ref().map(|c| c.as_slice()))
}

/// Ends a measured run: its status from how measuring ended, the end time,
/// the spawner's peak-RSS floor, then hands the final run to the sink
/// (shared by `run` and `scale`).
pub fn conclude(
    run: &mut Run,
    result: &Result<(), Stop>,
    spawner: &impl Spawn,
    sink: &mut impl Sink,
) -> Result<(), RunError> {
    run.status = match result {
        Ok(()) => RunStatus::Complete,
        Err(Stop::Interrupted) => RunStatus::Interrupted,
        Err(Stop::Failed(_)) => RunStatus::Failed,
    };
    run.ended_at = Some(rfc3339(SystemTime::now()));
    // Children report at least the spawner's own peak RSS; read it last, when
    // it is highest (it grows a little while serving the first requests).
    run.environment.set_opt(
        "measure.peak_rss_floor_bytes",
        spawner.peak_rss_floor().map(|b| b.to_string()),
        ImpactClass::Context,
    );
    sink.finish(run).map_err(RunError::Sink)
}

#[cfg(test)]
mod fake;

#[cfg(test)]
mod tests {
    #[test]
    fn live_counter_facts_come_from_the_measuring_code() {
        let env = super::capture_environment(&perfsleuth_env::Source::live());
        let groups = perfsleuth_measure::counters::availability();
        for (key, group) in [
            ("perf.hw_counters", "hardware"),
            ("perf.sw_counters", "software"),
            ("perf.tracepoints", "tracepoints"),
        ] {
            let fact = env.get(key).expect(key);
            let (_, answer) = groups.iter().find(|(g, _)| *g == group).expect(group);
            match answer {
                Ok(()) => assert_eq!(fact, "available", "{key}"),
                Err(why) => {
                    assert_eq!(fact, why, "{key}");
                    assert!(!why.is_empty() && !why.contains('\n'), "{key}: {why}");
                }
            }
        }
    }
}

/// When to use an instrument that may be impossible here (`--locks`,
/// `--profile`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum When {
    /// Not at all.
    Off,
    /// Where the kernel and privileges allow; otherwise a note says why.
    Auto,
    /// Always; an error where it cannot be.
    On,
}
