//! The error every command returns for user-facing failures: one line saying
//! what went wrong, one hint saying what to do, and its kind, from which the
//! exit code follows. The libraries' typed errors become `Fail`s through
//! `From` where their variant says what to do (`StoreError` in `output`,
//! `SelectError` in `sides`, `RunError` in `session`), so `?` converts them.

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
    /// What kind of failure, which decides the exit code.
    pub kind: FailKind,
}

/// What kind of failure a [`Fail`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailKind {
    /// A usage, input or I/O error, a failed benchmark, a machine that
    /// cannot do what was asked: exit 2.
    Usage,
    /// Stopped by this signal (where known) before finishing: exit 128 + the signal.
    Interrupted(Option<i32>),
}

impl Fail {
    /// A usage, input or I/O error (exit 2). The message is any error's
    /// text, so a library's typed error needs no conversion at the call.
    pub fn usage(message: impl fmt::Display, hint: impl Into<String>) -> Fail {
        Fail {
            message: message.to_string(),
            details: Vec::new(),
            hint: hint.into(),
            kind: FailKind::Usage,
        }
    }

    /// Stopped by the signal that interrupted the measurement (exit 128 + it).
    pub fn interrupted(
        message: impl fmt::Display,
        hint: impl Into<String>,
        signal: Option<i32>,
    ) -> Fail {
        Fail {
            kind: FailKind::Interrupted(signal),
            ..Fail::usage(message, hint)
        }
    }

    /// The process's exit code for this failure.
    pub fn code(&self) -> i32 {
        match self.kind {
            FailKind::Usage => ExitCode::USAGE,
            FailKind::Interrupted(signal) => ExitCode::interrupted_by(signal),
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

/// Longest message, detail or hint line an error prints, in characters.
const MAX_LINE: usize = 600;

/// `s` as one bounded line a terminal prints as text: control characters
/// (a file's escape sequences could retitle or clear the terminal) written
/// as `\u{1B}`, and past [`MAX_LINE`] characters cut, saying how much was
/// left out — an error quoting a 3 MB CSV cell stays one readable line.
pub fn safe_line(s: &str) -> String {
    let mut out = String::new();
    for (shown, (i, c)) in s.char_indices().enumerate() {
        if shown == MAX_LINE {
            out.push_str(&format!("… ({} more bytes)", s.len() - i));
            break;
        }
        if c.is_control() && c != '\t' {
            out.push_str(&format!("\\u{{{:X}}}", c as u32));
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::safe_line;

    #[test]
    fn error_lines_are_bounded_and_print_no_control_characters() {
        assert_eq!(safe_line("plain"), "plain");
        assert_eq!(
            safe_line("a\u{1b}]0;owned\u{7}b\n"),
            "a\\u{1B}]0;owned\\u{7}b\\u{A}"
        );
        let long = "x".repeat(3_000_000);
        let line = safe_line(&long);
        assert!(line.chars().count() < 700, "{}", line.len());
        assert!(line.ends_with(&format!("… ({} more bytes)", 3_000_000 - 600)));
    }
}
