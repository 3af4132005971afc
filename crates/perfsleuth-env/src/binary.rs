//! Placeholder: being written.

use perfsleuth_model::Environment;
use std::path::Path;

/// Identity facts of the benchmarked program (hash, ELF class, ABI, build-id).
pub fn binary_facts(_path: &Path) -> Environment {
    Environment::default()
}
