//! Private temporary directories for captured output and callgrind files.

use crate::error::RunError;
use std::path::{Path, PathBuf};

/// A private temporary directory, removed with its contents when dropped.
#[derive(Debug)]
pub struct ScratchDir {
    dir: PathBuf,
}

impl ScratchDir {
    /// Creates `$TMPDIR/perfsleuth-WHAT-PID-N`.
    pub fn new(what: &str) -> Result<ScratchDir, RunError> {
        let base = std::env::temp_dir();
        let fail = |source: std::io::Error| RunError::Scratch {
            what: "cannot create a temporary directory in",
            path: base.clone(),
            source,
        };
        for attempt in 0..100u32 {
            let dir = base.join(format!(
                "perfsleuth-{what}-{}-{attempt}",
                std::process::id()
            ));
            match std::fs::create_dir(&dir) {
                Ok(()) => return Ok(ScratchDir { dir }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(fail(e)),
            }
        }
        Err(fail(std::io::Error::other("every candidate name is taken")))
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.dir
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
