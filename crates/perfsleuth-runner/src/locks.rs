//! Lock tracing around a measurement (`run --locks`, `scale --locks`):
//! starting the eBPF tracer on the spawner, numbering the runs the spawner
//! forks so each is attributed to its benchmark, and one report per
//! benchmark at the end (docs/LOCKS.md).

pub use crate::When;
pub use crate::following::Following;
pub use perfsleuth_locks::{LockError, Tracer};
use perfsleuth_model::LockReport;

/// Starts the tracer on the spawner `root` as `choice` asks: `Ok(None)`
/// for off, or for auto where tracing is impossible (with the note why);
/// `Err` only when asked for explicitly and impossible.
pub fn start(choice: When, root: u32) -> Result<(Option<Tracer>, Option<String>), LockError> {
    match choice {
        When::Off => Ok((None, None)),
        When::On => Tracer::start(root).map(|t| (Some(t), None)),
        When::Auto => match Tracer::start(root) {
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
