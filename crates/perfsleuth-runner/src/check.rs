//! Turning a run's outcome into a sample, or into the error that stops measuring.

use crate::error::{Role, RunError, Stop};
use crate::spawn::Spawn;
use perfsleuth_measure::{CommandId, Outcome, Tolerate};
use perfsleuth_model::Sample;

/// Turns an outcome into a sample, or into the error that stops the run. A
/// failed timed run is run once more, untimed, to show its stderr.
pub fn check(
    tolerate: &Tolerate,
    spawner: &mut impl Spawn,
    id: CommandId,
    label: impl Fn() -> String,
    role: Role,
    outcome: Outcome,
) -> Result<Sample, Stop> {
    // The common case first: no label is formatted for a run that succeeded.
    let outcome = match outcome {
        Outcome::Completed(s) if tolerate.accepts(&s) => return Ok(s),
        other => other,
    };
    let label = label();
    match outcome {
        Outcome::Interrupted => Err(Stop::Interrupted),
        Outcome::Skipped => Err(RunError::Skipped { label }.into()),
        Outcome::TimedOut(s) => Err(RunError::TimedOut {
            label,
            wall_ns: s.wall_ns,
        }
        .into()),
        Outcome::Completed(s) => {
            let how = match (s.exit_code, s.signal) {
                (Some(code), _) => format!("exited with code {code}"),
                (_, Some(sig)) => format!("was killed by signal {sig} ({})", signal_name(sig)),
                _ => "ended abnormally".to_string(),
            };
            let mut details = Vec::new();
            let mut heading = "its last stderr lines:";
            if role == Role::Timed {
                // Timed runs send stderr to /dev/null; run it once more, untimed, to show why.
                heading = "its last stderr lines (from a re-run to collect them):";
                match spawner.run_anyway(id) {
                    Ok(Outcome::Completed(again)) if tolerate.accepts(&again) => {
                        details.push("a re-run succeeded: the failure is intermittent".to_string());
                    }
                    Ok(_) => {}
                    Err(e) => details.push(format!("could not re-run it to collect stderr: {e}")),
                }
            }
            let tail = spawner.stderr_tail(id, 5);
            if !tail.is_empty() {
                details.push(heading.to_string());
                details.extend(tail.lines().map(|l| format!("  {l}")));
            }
            Err(RunError::CommandFailed {
                label,
                how,
                details,
                role,
            }
            .into())
        }
    }
}

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGHUP => "SIGHUP",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        libc::SIGPIPE => "SIGPIPE",
        _ => "signal",
    }
}
