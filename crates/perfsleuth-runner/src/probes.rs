//! `perfsleuth probe`: the machine microbenchmarks of perfsleuth-probe run
//! one after another in this process, each probe's results handed to the
//! sink as soon as it finishes, Ctrl-C honoured between probes.

use crate::error::RunError;
use crate::{Progress, Sink};
use perfsleuth_model::{ImpactClass, Run, RunStatus, rfc3339};
use perfsleuth_probe::{CLOCK_FACT, ProbeOptions, ProbeReport};
use std::time::{Duration, Instant, SystemTime};

/// Runs the probes `names` in order into `run` (its `probes` grow as they
/// finish), then ends it: `interrupted` (Ctrl-C between probes; a probe runs
/// in this thread and cannot be cut short), `failed` (nothing measured) or
/// `complete`, with the calibrated clock and each probe's messages as
/// context facts, and hands the final run to the sink. `each` sees every
/// report as it arrives. Returns the reports.
pub fn probe_suite(
    names: &[&'static str],
    opts: &ProbeOptions,
    run: &mut Run,
    sink: &mut impl Sink,
    mut each: impl FnMut(&ProbeReport),
) -> Result<Vec<ProbeReport>, RunError> {
    let started = Instant::now();
    let mut reports: Vec<ProbeReport> = Vec::new();
    let mut interrupted = false;
    for (i, name) in names.iter().enumerate() {
        if perfsleuth_measure::interrupted() {
            interrupted = true;
            break;
        }
        let phase = format!("{name}: {}", perfsleuth_probe::describe(name));
        sink.progress(&Progress {
            phase: &phase,
            fraction: i as f64 / names.len().max(1) as f64,
            runs: i as u64,
            elapsed: started.elapsed(),
            eta: Duration::ZERO,
            per_benchmark: &[],
        });
        let report = perfsleuth_probe::run(name, opts);
        if let Err(e) = sink.probe_results(&report.measurements) {
            run.status = RunStatus::Failed;
            run.ended_at = Some(rfc3339(SystemTime::now()));
            let _ = sink.finish(run);
            return Err(RunError::Sink(e));
        }
        run.probes.extend(report.measurements.iter().cloned());
        each(&report);
        reports.push(report);
    }
    interrupted |= perfsleuth_measure::interrupted();
    run.status = if interrupted {
        RunStatus::Interrupted
    } else if run.probes.is_empty() {
        RunStatus::Failed
    } else {
        RunStatus::Complete
    };
    run.ended_at = Some(rfc3339(SystemTime::now()));
    // Recorded with the run, so `show` can say how cycles were estimated and
    // what a probe could not do; context facts are never judged in a diff.
    if let Some(clock) = reports.iter().find_map(|r| r.clock.as_ref()) {
        run.environment
            .set(CLOCK_FACT, clock.how.clone(), ImpactClass::Context);
    }
    for r in reports.iter().filter(|r| !r.messages.is_empty()) {
        run.environment.set(
            format!("probe.{}.messages", r.probe),
            r.messages.join(" | "),
            ImpactClass::Context,
        );
    }
    sink.finish(run).map_err(RunError::Sink)?;
    Ok(reports)
}
