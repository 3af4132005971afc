//! One measurement session, as `run`, `ab`, `explain` and variants make it:
//! the settings checked into a [`Checked`] configuration before the first
//! timed iteration (every check that can fail on user input happens here),
//! then [`measure`]: the store and its sink, counters, the lock tracer,
//! Ctrl-C, the noise snapshots, the runner's schedule, and conclude.

use crate::error::Fail;
use crate::output;
use perfsleuth_measure::{MeasureError, Spawner};
use perfsleuth_runner::{Role, RunError};

mod measure;
mod validate;
pub use measure::*;
pub use validate::*;

/// The spawner `main` forked early, or a new one when it could not.
pub fn spawner_or_start(spawner: Option<Spawner>) -> Result<Spawner, Fail> {
    match spawner {
        Some(s) => Ok(s),
        None => Spawner::start().map_err(|e| {
            Fail::usage(
                format!("cannot start the process spawner: {e}"),
                "check the process limit (ulimit -u)",
            )
        }),
    }
}

pub use crate::term::catch_interrupts;

/// The store a session writes to: `--store`'s (or the default), none with
/// `--no-store`.
pub fn open_store(url: Option<&str>, no_store: bool) -> Result<Option<output::AnyStore>, Fail> {
    if no_store {
        Ok(None)
    } else {
        output::open_store(url).map(Some)
    }
}

/// The line a measurement stopped by Ctrl-C ends with: what of `what`
/// ("the samples taken so far") is stored in the runs `ids`, then `after`.
pub fn interrupted_line(what: &str, ids: &[i64], after: &str) -> String {
    let stored = match ids {
        [] => String::new(),
        [id] => format!("; {what} are stored as run {id} (status interrupted)"),
        [a, b] => format!("; {what} are stored as runs {a} and {b} (status interrupted)"),
        more => format!(
            "; {what} are stored as runs {} (status interrupted)",
            more.iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    format!("Interrupted{stored}{after}.\n")
}

/// A spawner error on `what` (a command, `--shell`, …) as a one-line usage error.
pub fn measure_fail(e: MeasureError, what: &str) -> Fail {
    match e {
        MeasureError::NotFound(p) if what == "--shell" => Fail::usage(
            format!("--shell program not found: `{p}`"),
            "give an installed shell, e.g. --shell sh or --shell bash",
        ),
        MeasureError::NotFound(p) => Fail::usage(
            format!("{what} not found: `{p}`"),
            "check the spelling and your PATH; use --shell for shell builtins",
        ),
        MeasureError::NotAProgram { path, reason } => Fail::usage(
            format!("{what} `{}` cannot be executed: {reason}", path.display()),
            "run it through an interpreter (e.g. --shell sh) or add a #! line",
        ),
        MeasureError::MissingInterpreter { .. } => Fail::usage(
            format!("{what} {e}"),
            "install the interpreter, or fix the #! line (e.g. #!/usr/bin/env python3)",
        ),
        MeasureError::Spawn { program, source } if program != "perfsleuth spawner" => Fail::usage(
            format!("cannot run `{program}`: {source}"),
            "is it a program for this machine and kernel? (check with `file`)",
        ),
        MeasureError::IsDirectory(p) => Fail::usage(
            format!("{what} `{}` is a directory, not a program", p.display()),
            "name the program inside it, e.g. ./dir/program",
        ),
        MeasureError::NotExecutable(p) => Fail::usage(
            format!("{what} `{}` is not executable", p.display()),
            format!("chmod +x {}", p.display()),
        ),
        MeasureError::File { path, source } => Fail::usage(
            format!("cannot open {}: {source}", path.display()),
            "check the path and its permissions",
        ),
        MeasureError::Setting(why) => Fail::usage(
            format!("{what}: a --variant setting could not be applied: {why}"),
            "check the CPUs this process may use (taskset -p $$) and its privileges (nice values and sched:idle need CAP_SYS_NICE)",
        ),
        MeasureError::NotApplied(why) => Fail::usage(
            format!("{what} did not get its --variant settings: {why}"),
            "something between perfsleuth and the program changes them (a wrapper script, a cgroup, the program itself)",
        ),
        other => Fail::usage(
            format!("{other}"),
            "this is likely a perfsleuth bug or a resource limit; please report it",
        ),
    }
}

/// The runner's errors as one-line messages with a hint.
impl From<RunError> for Fail {
    fn from(e: RunError) -> Fail {
        use perfsleuth_measure::callgrind::{INSTALL_HINT, SimError};
        let message = e.to_string();
        match e {
            RunError::Measure { what, source } => measure_fail(source, &what),
            RunError::CommandFailed { details, role, .. } => Fail::usage(
                message,
                if role == Role::Helper {
                    "helper commands must succeed; fix it or remove the option"
                } else {
                    "fix the command, or pass --ignore-failure (or --ignore-failure=CODES) to measure it anyway"
                },
            )
            .with_details(details),
            RunError::TimedOut { label, wall_ns } => Fail::usage(
                format!(
                    "{label} timed out after {} and was killed",
                    perfsleuth_report::format_duration_ns(wall_ns as f64)
                ),
                "raise --timeout, or check why it hangs (does it wait for input? try --input FILE)",
            ),
            RunError::Skipped { .. } => {
                Fail::usage(message, "this should not be reported; please report it")
            }
            RunError::Sink(e) => match e.downcast::<perfsleuth_store::StoreError>() {
                Ok(store) => Fail::from(*store),
                Err(other) => Fail::usage(
                    format!("cannot store the results: {other}"),
                    "check the --store path",
                ),
            },
            RunError::NoValgrind => Fail::usage(message, INSTALL_HINT),
            RunError::NotPortable(_) => Fail::usage(
                message,
                "drop --portable to count as this CPU dispatches (the run then says the counts are not portable)",
            ),
            RunError::EmptyCollect => Fail::usage(
                message,
                "name a function, e.g. --collect parse_input (callgrind's * and ? wildcards work)",
            ),
            RunError::Simulation { source, .. } => Fail::usage(
                message,
                match source {
                    SimError::NoOutput { .. } => {
                        "run it by hand under `valgrind --tool=callgrind` to see why"
                    }
                    SimError::Parse(_) => "the file is kept for inspection; please report this with it",
                    _ => "check the temporary directory ($TMPDIR)",
                },
            ),
            RunError::NothingCollected { .. } => Fail::usage(
                message,
                "check the name in `callgrind_annotate` output (wildcards work: --collect 'parse*'); build with -fno-inline or #[inline(never)] to keep it",
            ),
            RunError::Scratch { what, .. } => Fail::usage(
                message,
                if what.starts_with("cannot create") {
                    "set TMPDIR to a writable directory"
                } else if what.starts_with("cannot read") {
                    "check the temporary directory ($TMPDIR)"
                } else {
                    "check the space in the temporary directory ($TMPDIR)"
                },
            ),
            RunError::NoThroughput {
                expected, excerpt, ..
            } => Fail::usage(message, expected).with_details(excerpt),
            RunError::BadThroughput { .. } => {
                Fail::usage(message, "check what the command reports, or the --work value")
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::{fitting_rounds, interrupted_line};

    #[test]
    fn the_interrupted_line_says_which_runs_keep_what() {
        assert_eq!(
            interrupted_line("the runs so far", &[], ""),
            "Interrupted.\n"
        );
        assert_eq!(
            interrupted_line("the samples taken so far", &[4], ""),
            "Interrupted; the samples taken so far are stored as run 4 (status interrupted).\n"
        );
        assert_eq!(
            interrupted_line("the samples taken so far", &[4, 5], "; worktrees removed"),
            "Interrupted; the samples taken so far are stored as runs 4 and 5 (status interrupted); worktrees removed.\n"
        );
    }

    #[test]
    fn rounds_shrink_until_their_shares_fit_the_run_limits() {
        // The default: 10 runs at least, no maximum — five rounds of two.
        assert_eq!(fitting_rounds(5, None, 10, None), 5);
        // --min-runs 2 --max-runs 3: three rounds of one run each.
        assert_eq!(fitting_rounds(5, None, 2, Some(3)), 3);
        // --min-runs 7 --max-runs 7: only one round keeps exactly 7.
        assert_eq!(fitting_rounds(5, None, 7, Some(7)), 1);
        // --runs 12 --rounds 5: four rounds of three; --runs 7: one round.
        assert_eq!(fitting_rounds(5, Some(12), 10, None), 4);
        assert_eq!(fitting_rounds(5, Some(7), 10, None), 1);
        assert_eq!(fitting_rounds(1, None, 10, None), 1);
    }
}
