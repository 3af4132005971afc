//! `--locks` for `run` and `scale`: the tracer started on the spawner, its
//! errors in the CLI's terms, and the reports kept with the run.

use crate::args::LockChoice;
use crate::error::Fail;
use crate::sink::StoreSink;
use perfsleuth_model::{LockReport, Run};
use perfsleuth_runner::locks::{LockError, Tracer};

/// Starts tracing as `choice` asks; with `auto` where it cannot, the note why.
pub fn start(choice: LockChoice, spawner: u32) -> Result<(Option<Tracer>, Option<String>), Fail> {
    if choice != LockChoice::Off {
        // Loading takes ~0.1 s: Ctrl-C meanwhile must end as an interrupted
        // run (exit 130), not kill perfsleuth with the programs half set up.
        perfsleuth_measure::install_interrupt_handler().map_err(|e| {
            Fail::usage(
                format!("cannot install the Ctrl-C handler: {e}"),
                "this should not happen; please report it",
            )
        })?;
    }
    perfsleuth_runner::locks::start(choice.runner(), spawner).map_err(|e| {
        let hint = match e {
            LockError::NotPermitted => {
                "run perfsleuth as root (or with CAP_BPF and CAP_PERFMON), or drop --locks"
            }
            LockError::Unsupported(_) => {
                "drop --locks; the futex counts (--counters all) still show that threads block"
            }
            LockError::NoBtf(_) => {
                "lock tracing needs a kernel built with BTF (CONFIG_DEBUG_INFO_BTF; Linux 5.18 or later); drop --locks"
            }
            LockError::Load(_) | LockError::Read(_) => {
                "lock tracing needs raw tracepoints, BPF ring buffers and BTF (Linux 5.18 or later); drop --locks, or use --locks=auto"
            }
        };
        Fail::usage(format!("cannot trace locks: {e}"), hint)
    })
}

/// Detaches the tracer (if any) and reports each benchmark's runs.
pub fn finish(
    tracer: Option<Tracer>,
    runs: &[Vec<u32>],
    forked: usize,
    notes: &mut Vec<String>,
) -> Vec<Option<LockReport>> {
    let Some(tracer) = tracer else {
        return Vec::new();
    };
    let (reports, note) = perfsleuth_runner::locks::finish(tracer, runs, forked);
    notes.extend(note);
    reports
}

/// Puts the reports on the run's benchmarks and into the store.
pub fn attach(
    run: &mut Run,
    reports: Vec<Option<LockReport>>,
    sink: &mut StoreSink<'_>,
) -> Result<(), Fail> {
    for (i, report) in reports.into_iter().enumerate() {
        let (Some(report), Some(bench)) = (report, run.benchmarks.get_mut(i)) else {
            continue;
        };
        sink.set_locks(i, &report)?;
        bench.locks = Some(report);
    }
    Ok(())
}
