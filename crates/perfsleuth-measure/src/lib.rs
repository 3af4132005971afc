//! Process execution and timing: spawn a command in its own process group,
//! wait for exactly that child with `wait4`, and turn its resource usage into
//! a [`Sample`]. Also splits command lines and resolves programs before any
//! timing starts, so bad input fails fast.

pub mod alloc;
pub mod callgrind;
pub mod counters;
mod exec;
mod interrupt;
mod launch;
mod perf;
mod procstat;
pub mod sampler;
mod settings;
mod spawner;
mod words;

pub use counters::{CounterConfig, CounterSelection, CounterStatus, Counters};
pub use exec::{Executor, IoConfig, Outcome, OutputTarget, Tolerate, resolve_program};
pub use interrupt::{
    install_interrupt_handler, interrupted, interrupting_signal, reset_interrupted,
};
pub use procstat::{CpuShares, CpuTicks, CpuTimes, CpuUsage, ProcStatError};
pub use settings::{ChildSettings, MAX_CPU, Policy, SettingError, check_possible, parse_cpu_list};
pub use spawner::{CommandId, Spawner};
pub use words::{SplitError, split_command};

use std::path::PathBuf;

/// Errors from preparing or running a command.
#[derive(Debug, thiserror::Error)]
pub enum MeasureError {
    /// The program was not found on `PATH` or at the given path.
    #[error("command not found: `{0}`")]
    NotFound(String),
    /// The path names a directory.
    #[error("`{}` is a directory", .0.display())]
    IsDirectory(PathBuf),
    /// The program exists but cannot be executed.
    #[error("`{}` is not executable", .0.display())]
    NotExecutable(PathBuf),
    /// The command line could not be split into words.
    #[error(transparent)]
    Split(#[from] SplitError),
    /// An input or output file could not be opened.
    #[error("cannot open {}: {source}", path.display())]
    File {
        /// The file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A per-command setting (CPU set, THP, nice) could not be applied.
    #[error("cannot apply the command's settings: {0}")]
    Setting(String),
    /// The child did not get what was set for it (checked in `/proc`).
    #[error("the command did not get its settings: {0}")]
    NotApplied(String),
    /// Ctrl-C or SIGTERM arrived while waiting for the spawner.
    #[error("interrupted")]
    Interrupted,
    /// The file is executable but not a program the kernel can start.
    #[error("`{}` is not a program: {reason}", path.display())]
    NotAProgram {
        /// The file.
        path: PathBuf,
        /// What its first bytes are instead.
        reason: String,
    },
    /// A `#!` script whose interpreter does not exist (execve's bare ENOENT
    /// would blame the script itself).
    #[error("`{}` names the interpreter `{interpreter}` in its #! line, and it does not exist", path.display())]
    MissingInterpreter {
        /// The script.
        path: PathBuf,
        /// The path after `#!`.
        interpreter: String,
    },
    /// Spawning or waiting for the child failed.
    #[error("cannot run `{program}`: {source}")]
    Spawn {
        /// The program.
        program: String,
        /// The OS error.
        source: std::io::Error,
    },
}
