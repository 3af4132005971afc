//! The error every command returns for user-facing failures: one line saying
//! what went wrong, one hint saying what to do, and the exit code.

use std::fmt;

use perfsleuth_model::exit::ExitCode;

/// A user-facing failure.
#[derive(Debug)]
pub struct Fail {
    /// What went wrong, one line.
    pub message: String,
    /// Extra lines of evidence (e.g. the command's last stderr lines).
    pub details: Vec<String>,
    /// What to do about it.
    pub hint: String,
    /// Process exit code.
    pub code: i32,
}

impl Fail {
    /// A usage, input or I/O error (exit 2).
    pub fn usage(message: impl Into<String>, hint: impl Into<String>) -> Fail {
        Fail {
            message: message.into(),
            details: Vec::new(),
            hint: hint.into(),
            code: ExitCode::USAGE,
        }
    }

    /// Adds evidence lines shown between the message and the hint.
    pub fn with_details(mut self, details: Vec<String>) -> Fail {
        self.details = details;
        self
    }
}

impl fmt::Display for Fail {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Fail {}
