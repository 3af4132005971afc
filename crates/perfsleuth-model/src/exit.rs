//! perfsleuth's process exit codes, part of its interface as much as the
//! JSON documents are: CI scripts branch on them.

/// Exit codes perfsleuth returns; a script can rely on these values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ExitCode;

impl ExitCode {
    /// Success (for gating commands: nothing regressed or differed).
    pub const OK: i32 = 0;
    /// A gating command found what it gates on: `compare --fail-on` a
    /// regression, `probe diff` or `env diff` a significant difference.
    pub const REGRESSION: i32 = 1;
    /// A usage, input or I/O error, a failed benchmark, or `env check`
    /// finding the machine unfit.
    pub const USAGE: i32 = 2;
    /// Stopped by Ctrl-C (128 + SIGINT), as shells report it.
    pub const INTERRUPTED: i32 = 130;
    /// Stopped by SIGTERM (128 + SIGTERM).
    pub const TERMINATED: i32 = 143;

    /// The code for a run stopped by `signal`: 128 + its number, as shells
    /// report it; [`ExitCode::INTERRUPTED`] when the signal is not known.
    pub fn interrupted_by(signal: Option<i32>) -> i32 {
        signal.map_or(Self::INTERRUPTED, |sig| 128 + sig)
    }

    /// [`ExitCode::REGRESSION`] when `found`, else [`ExitCode::OK`].
    pub fn gate(found: bool) -> i32 {
        if found { Self::REGRESSION } else { Self::OK }
    }
}

#[cfg(test)]
mod tests {
    use super::ExitCode;

    #[test]
    fn signals_map_as_shells_report_them() {
        assert_eq!(ExitCode::interrupted_by(Some(2)), ExitCode::INTERRUPTED);
        assert_eq!(ExitCode::interrupted_by(Some(15)), ExitCode::TERMINATED);
        assert_eq!(ExitCode::interrupted_by(None), 130);
        assert_eq!((ExitCode::gate(true), ExitCode::gate(false)), (1, 0));
    }
}
