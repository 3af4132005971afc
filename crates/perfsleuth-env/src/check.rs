//! Placeholder: being written.

use perfsleuth_model::Environment;

/// How serious a finding is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Severity {
    /// Worth knowing.
    Info,
    /// May add noise.
    Warning,
    /// Makes results unreliable.
    Problem,
}

/// One finding of `env check`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finding {
    /// How serious.
    pub severity: Severity,
    /// The fact(s) it is about.
    pub key: String,
    /// What was found.
    pub message: String,
    /// What to do.
    pub recommendation: String,
}

/// Judges whether the machine described by `env` is fit to benchmark on.
pub fn check(_env: &Environment) -> Vec<Finding> {
    Vec::new()
}
