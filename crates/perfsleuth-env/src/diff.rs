//! Placeholder: being written.

use perfsleuth_model::Environment;

/// One changed fact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The key.
    pub key: String,
}

/// The facts that differ between two environments.
pub fn diff(_a: &Environment, _b: &Environment) -> Vec<Change> {
    Vec::new()
}
