//! Why measuring stopped, as typed errors the binary turns into messages with hints.

use perfsleuth_measure::MeasureError;
use perfsleuth_measure::callgrind::SimError;
use std::path::PathBuf;

/// What a checked run was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// A timed run of a benchmarked command (its stderr was discarded).
    Timed,
    /// A warmup run of a benchmarked command (stderr kept).
    Untimed,
    /// A prepare/setup/cleanup command (stderr kept).
    Helper,
}

/// An error of the sink (the store), kept whole so the caller can recover its type.
pub type SinkError = Box<dyn std::error::Error + Send + Sync>;

/// Why measuring stopped early.
#[derive(Debug)]
pub enum Stop {
    /// Ctrl-C or SIGTERM.
    Interrupted,
    /// A failure that ends the run.
    Failed(RunError),
}

impl From<RunError> for Stop {
    fn from(e: RunError) -> Stop {
        Stop::Failed(e)
    }
}

/// A failure while preparing or measuring.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Preparing or running a command failed in the spawner (`what` names
    /// the command's role: `command`, `--prepare`, `--setup`, …).
    #[error("{what}: {source}")]
    Measure {
        /// The command's role.
        what: String,
        /// What the spawner reported.
        source: MeasureError,
    },
    /// A command exited unsuccessfully (and was not tolerated).
    #[error("{label} {how}")]
    CommandFailed {
        /// Which command, e.g. "command `sleep x`".
        label: String,
        /// How it ended, e.g. "exited with code 1".
        how: String,
        /// Evidence: its last stderr lines, whether a re-run succeeded.
        details: Vec<String>,
        /// What the failed run was.
        role: Role,
    },
    /// A command ran past `--timeout`.
    /// (The binary formats the duration with the report crate's formatter.)
    #[error("{label} timed out after {wall_ns} ns and was killed")]
    TimedOut {
        /// Which command.
        label: String,
        /// How long it ran.
        wall_ns: u64,
    },
    /// A queued run was skipped although nothing failed (a bug).
    #[error("{label} was not run because an earlier run failed")]
    Skipped {
        /// Which command.
        label: String,
    },
    /// The sink (the store) refused a write.
    #[error("cannot store the results: {0}")]
    Sink(SinkError),
    /// `--mode simulation` without valgrind on `PATH`.
    #[error("--mode simulation needs valgrind, which is not installed (not on PATH)")]
    NoValgrind,
    /// `--collect ''`.
    #[error("--collect is empty")]
    EmptyCollect,
    /// `--portable` asked for, and this machine cannot give verified portable counts.
    #[error("portable simulation counts are not possible here: {0}")]
    NotPortable(String),
    /// Callgrind's output of one run could not be read.
    #[error("{}", simulation_message(command, source))]
    Simulation {
        /// The benchmarked command.
        command: String,
        /// What went wrong.
        source: SimError,
    },
    /// `--collect FUNCTION` collected nothing: the function never ran.
    #[error(
        "--collect `{function}`: nothing was collected in `{command}`: the function never ran (or was inlined away)"
    )]
    NothingCollected {
        /// The `--collect` value.
        function: String,
        /// The benchmarked command.
        command: String,
    },
    /// A private temporary directory or file could not be created or read.
    #[error("{what} {}: {source}", path.display())]
    Scratch {
        /// What was attempted, e.g. "cannot create a temporary directory in".
        what: &'static str,
        /// The path.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// The sweep could not read a throughput from a run.
    #[error("{message}")]
    NoThroughput {
        /// What is missing, and at which level.
        message: String,
        /// How the program's output should look.
        expected: &'static str,
        /// The program's last stdout lines.
        excerpt: Vec<String>,
    },
    /// The sweep read a throughput that is not a positive number.
    #[error("throughput at {at} is {value}: it must be a positive number")]
    BadThroughput {
        /// The level, e.g. `threads=4`.
        at: String,
        /// What was read.
        value: f64,
    },
}

fn simulation_message(command: &str, e: &SimError) -> String {
    match e {
        SimError::NoOutput { .. } => {
            format!("`{command}` left no callgrind output: valgrind could not run it to the end")
        }
        SimError::Parse(p) => format!("cannot read callgrind's output for `{command}`: {p}"),
        other => format!("cannot read callgrind's output for `{command}`: {other}"),
    }
}
