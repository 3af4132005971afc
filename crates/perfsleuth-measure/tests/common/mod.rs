//! What the integration tests that run real C programs share: a scratch
//! directory, gcc, argument vectors.

use perfsleuth_testkit::skip;
use std::path::{Path, PathBuf};
use std::process::Command;

/// A fresh directory for a test's binaries, removed when dropped.
pub struct Scratch(PathBuf);

impl std::ops::Deref for Scratch {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// A fresh scratch directory named after the test `kind` and `name`.
pub fn scratch(kind: &str, name: &str) -> Scratch {
    let dir = std::env::temp_dir().join(format!("perfsleuth-{kind}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    Scratch(dir)
}

/// `tests/progs/<name>.c`.
pub fn prog(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/progs")
        .join(format!("{name}.c"))
}

/// Compiles the C file `src` into `dir` as `name`; `None` (after printing
/// why) when gcc is not installed.
pub fn compile(dir: &Path, src: &Path, name: &str, flags: &[&str]) -> Option<PathBuf> {
    let out = dir.join(name);
    match Command::new("gcc")
        .args(flags)
        .arg("-o")
        .arg(&out)
        .arg(src)
        .status()
    {
        Ok(s) if s.success() => Some(out),
        Ok(s) => panic!("gcc failed on {}: {s}", src.display()),
        Err(_) => {
            skip("gcc", "gcc not installed");
            None
        }
    }
}

/// An argument vector.
pub fn argv(s: &[&str]) -> Vec<String> {
    s.iter().map(|x| x.to_string()).collect()
}
