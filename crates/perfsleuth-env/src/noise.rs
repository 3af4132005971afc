//! Placeholder: being written.

use crate::Source;
use perfsleuth_model::Environment;

/// Captures this group of facts.
pub fn capture(_src: &Source, _env: &mut Environment) {}
