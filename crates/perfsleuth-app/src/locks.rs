//! What a session instruments on the spawner for `run`, `ab`, `explain` and
//! `scale`: the perf_event counters and `--locks`' tracer started before
//! anything is stored, its errors in the CLI's terms, and the lock reports
//! kept with the run.

use crate::args::LockChoice;
use crate::error::Fail;
use crate::sink::StoreSink;
use perfsleuth_measure::Spawner;
use perfsleuth_model::{Environment, LockReport, Run};
use perfsleuth_runner::Counters;
use perfsleuth_runner::locks::{Following, LockError, Tracer};

/// The counters and the lock tracer of one session.
pub struct Instruments {
    tracer: Option<Tracer>,
    reports: Vec<Option<LockReport>>,
    /// What enabling them said (counters unavailable, `--locks=auto` off, …).
    pub notes: Vec<String>,
}

impl Instruments {
    /// Enables `counters` on the spawner (kernel mode too with `kernel`, the
    /// futex and sched_switch tracepoints with `tracepoints`), then starts
    /// `--locks`' tracer: before anything is stored, so a refusal leaves no
    /// run behind.
    pub fn start(
        spawner: &mut Spawner,
        counters: Counters,
        kernel: bool,
        tracepoints: bool,
        locks: LockChoice,
        env: &mut Environment,
    ) -> Result<Instruments, Fail> {
        let mut notes =
            perfsleuth_runner::counters::enable(spawner, counters, kernel, tracepoints, env);
        let (tracer, note) = start(locks, spawner.pid())?;
        notes.extend(note);
        Ok(Instruments {
            tracer,
            reports: Vec::new(),
            notes,
        })
    }

    /// Detaches the tracer (if any), reading which runs were each
    /// benchmark's (`ids`: their spawner command ids, in the run's order)
    /// from `following`.
    pub fn stop(
        &mut self,
        following: &Following<'_, Spawner>,
        ids: impl IntoIterator<Item = perfsleuth_measure::CommandId>,
    ) {
        let runs: Vec<Vec<u32>> = ids.into_iter().map(|id| following.runs_of(id)).collect();
        self.reports = finish(
            self.tracer.take(),
            &runs,
            following.forked(),
            &mut self.notes,
        );
    }

    /// Puts the lock reports on `run`'s benchmarks and into the store.
    pub fn attach(&mut self, run: &mut Run, sink: &mut StoreSink<'_>) -> Result<(), Fail> {
        attach(run, std::mem::take(&mut self.reports), sink)
    }
}

/// Starts tracing as `choice` asks; with `auto` where it cannot, the note why.
fn start(choice: LockChoice, spawner: u32) -> Result<(Option<Tracer>, Option<String>), Fail> {
    if choice != LockChoice::Off {
        // Loading takes ~0.1 s: Ctrl-C meanwhile must end as an interrupted
        // run (exit 130), not kill perfsleuth with the programs half set up.
        crate::term::catch_interrupts()?;
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
fn finish(
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
fn attach(
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
