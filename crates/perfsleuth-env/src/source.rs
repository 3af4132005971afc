//! Where facts come from: a root directory (default `/`) and a CPUID source.
//! With a root other than `/`, nothing describing the host is consulted: no
//! host CPUID, no host environment variables, no host `ld.so`.

use crate::cpuid::CpuidTable;
use crate::error::{EnvError, Unknown};
use perfsleuth_model::input::{self, Accept, InputError};
use std::path::{Path, PathBuf};

/// Where facts are read from.
#[derive(Debug, Clone)]
pub struct Source {
    root: PathBuf,
    /// The root with symlinks resolved: nothing outside it is read.
    real_root: PathBuf,
    cpuid: Cpuid,
}

/// Largest file read whole; /proc/cpuinfo of a 512-CPU machine is ~1 MiB.
const MAX_FILE_BYTES: u64 = 16 * 1024 * 1024;

/// Largest `cpuid -r` dump: every leaf of 512 CPUs is under 2 MiB.
const MAX_CPUID_DUMP_BYTES: u64 = 8 * 1024 * 1024;

#[derive(Debug, Clone)]
enum Cpuid {
    /// Execute the CPUID instruction on this machine.
    Live,
    /// Values dumped from another machine (`cpuid -r` format).
    Table(CpuidTable),
    /// Not available (a fixture tree without a dump).
    None(Unknown),
}

impl Source {
    /// The live machine.
    pub fn live() -> Source {
        Source {
            root: PathBuf::from("/"),
            real_root: PathBuf::from("/"),
            cpuid: Cpuid::Live,
        }
    }

    /// A tree laid out like `/` (`proc/cpuinfo`, `sys/devices/...`,
    /// `etc/os-release`, `proc/self/environ`). CPUID comes from `cpuid.txt`
    /// at the top of the tree when present (the raw format of `cpuid -r`).
    pub fn root(root: impl Into<PathBuf>) -> Source {
        let root = root.into();
        if root == Path::new("/") {
            return Source::live();
        }
        let dump = root.join("cpuid.txt");
        let cpuid = match read_regular(&dump) {
            Ok(bytes) => match CpuidTable::parse(&String::from_utf8_lossy(&bytes)) {
                Ok(table) => Cpuid::Table(table),
                Err(source) => Cpuid::None(EnvError::CpuidDump { path: dump, source }.into()),
            },
            Err(_) => Cpuid::None(format!("no CPUID dump ({} missing)", dump.display()).into()),
        };
        let real_root = std::fs::canonicalize(&root).unwrap_or_else(|_| root.clone());
        Source {
            root,
            real_root,
            cpuid,
        }
    }

    /// Replaces the CPUID source with a dump file (`cpuid -r` format).
    pub fn with_cpuid_file(mut self, path: &Path) -> Result<Source, EnvError> {
        let text =
            input::read_text(path, MAX_CPUID_DUMP_BYTES, Accept::Regular).map_err(|source| {
                EnvError::CpuidFile {
                    path: path.to_path_buf(),
                    source,
                }
            })?;
        let table = CpuidTable::parse(&text).map_err(|source| EnvError::CpuidDump {
            path: path.to_path_buf(),
            source,
        })?;
        self.cpuid = Cpuid::Table(table);
        Ok(self)
    }

    /// Whether this reads the machine perfsleuth runs on.
    pub fn is_live(&self) -> bool {
        self.root == Path::new("/")
    }

    /// The root directory.
    pub fn root_dir(&self) -> &Path {
        &self.root
    }

    /// The path of `path` (written as absolute, e.g. `/proc/cpuinfo`) under the root.
    pub fn path(&self, path: &str) -> PathBuf {
        self.root.join(path.trim_start_matches('/'))
    }

    /// Reads a file under the root as text; the error is the reason to record.
    /// Only regular files are read (a FIFO would block, a device never
    /// end), at most 16 MiB of them, and in a tree never through a symlink
    /// that leads out of it (onto the live machine).
    pub fn read(&self, path: &str) -> Result<String, EnvError> {
        let full = self.inside(path)?;
        read_regular(&full)
            .map(|bytes| String::from_utf8_lossy(&bytes).into_owned())
            .map_err(|source| EnvError::Read {
                path: path.to_string(),
                source,
            })
    }

    /// The path under the root, refusing one that resolves outside a tree.
    fn inside(&self, path: &str) -> Result<PathBuf, EnvError> {
        let full = self.path(path);
        if self.is_live() {
            return Ok(full);
        }
        match std::fs::canonicalize(&full) {
            Ok(real) if !real.starts_with(&self.real_root) => Err(EnvError::OutsideTree {
                path: path.to_string(),
                target: real,
            }),
            _ => Ok(full),
        }
    }

    /// Reads a one-line file, trimmed; empty files are an error too.
    pub fn read_line(&self, path: &str) -> Result<String, EnvError> {
        let text = self.read(path)?;
        let line = text.trim();
        if line.is_empty() {
            return Err(EnvError::Empty {
                path: path.to_string(),
            });
        }
        Ok(line.to_string())
    }

    /// Names of the entries of a directory under the root, sorted.
    pub fn list_dir(&self, path: &str) -> Result<Vec<String>, EnvError> {
        let entries = std::fs::read_dir(self.inside(path)?).map_err(|source| EnvError::List {
            path: path.to_string(),
            source,
        })?;
        let mut names: Vec<String> = entries
            .filter_map(|e| e.ok())
            .map(|e| e.file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        Ok(names)
    }

    /// Whether a path exists under the root.
    pub fn exists(&self, path: &str) -> bool {
        self.path(path).exists()
    }

    /// An environment variable of the process being described: the live
    /// process's own, or `proc/self/environ` of the tree.
    pub fn env_var(&self, name: &str) -> Option<String> {
        if self.is_live() {
            return std::env::var_os(name).map(|v| v.to_string_lossy().into_owned());
        }
        let raw = self.read("/proc/self/environ").ok()?.into_bytes();
        raw.split(|b| *b == 0).find_map(|entry| {
            let text = String::from_utf8_lossy(entry);
            let (k, v) = text.split_once('=')?;
            (k == name).then(|| v.to_string())
        })
    }

    /// CPUID leaf/subleaf as (eax, ebx, ecx, edx); the error is the reason.
    pub fn cpuid(&self, leaf: u32, subleaf: u32) -> Result<[u32; 4], Unknown> {
        match &self.cpuid {
            Cpuid::Live => crate::cpuid::live(leaf, subleaf),
            Cpuid::Table(t) => t
                .get(leaf, subleaf)
                .ok_or_else(|| format!("leaf {leaf:#x}/{subleaf:#x} not in the CPUID dump").into()),
            Cpuid::None(reason) => Err(reason.clone()),
        }
    }
}

/// A regular file's bytes, at most [`MAX_FILE_BYTES`].
fn read_regular(path: &Path) -> Result<Vec<u8>, InputError> {
    input::read(path, MAX_FILE_BYTES, Accept::Regular)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tree_is_never_left_and_special_files_are_not_read() {
        let dir = std::env::temp_dir().join(format!("perfsleuth-src-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("proc/sys/kernel")).unwrap();
        // An absolute symlink onto the live machine must not be followed.
        std::os::unix::fs::symlink(
            "/proc/sys/kernel/osrelease",
            dir.join("proc/sys/kernel/osrelease"),
        )
        .unwrap();
        // A device would never end; a FIFO would block.
        std::os::unix::fs::symlink("/dev/zero", dir.join("proc/cpuinfo")).unwrap();
        let fifo = dir.join("proc/loadavg");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let src = Source::root(&dir);
        assert!(
            src.read("/proc/sys/kernel/osrelease")
                .unwrap_err()
                .to_string()
                .contains("outside the tree")
        );
        assert!(src.read("/proc/cpuinfo").is_err());
        assert!(
            src.read("/proc/loadavg")
                .unwrap_err()
                .to_string()
                .contains("not a regular file")
        );
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
