//! Environment fingerprint capture. Every reader takes a root directory so
//! tests can run against fixture trees of other machines; with a root other
//! than `/`, nothing is read from the live machine (no syscalls that describe
//! the host), and facts missing from the tree are `unknown`.

use perfsleuth_model::{Environment, ImpactClass};
use std::path::{Path, PathBuf};

/// Where facts are read from.
#[derive(Debug, Clone)]
pub struct Source {
    root: PathBuf,
}

impl Source {
    /// The live machine.
    pub fn live() -> Source {
        Source {
            root: PathBuf::from("/"),
        }
    }

    /// A fixture tree laid out like `/` (`proc/cpuinfo`, `etc/os-release`, ...).
    pub fn root(root: impl Into<PathBuf>) -> Source {
        Source { root: root.into() }
    }

    /// Whether this reads the machine perfsleuth runs on.
    pub fn is_live(&self) -> bool {
        self.root == Path::new("/")
    }

    /// Reads a file under the root as text; `None` if it is missing or unreadable.
    pub fn read(&self, path: &str) -> Option<String> {
        std::fs::read_to_string(self.root.join(path.trim_start_matches('/'))).ok()
    }

    /// Reads a one-line file, trimmed; `None` if missing or empty.
    pub fn read_line(&self, path: &str) -> Option<String> {
        self.read(path)
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    }
}

/// Captures the basic fingerprint: CPU model, cores, kernel, OS, libc, host.
pub fn capture(src: &Source) -> Environment {
    let mut env = Environment::default();
    use ImpactClass::{Context, Identity, Performance};

    let cpuinfo = src.read("proc/cpuinfo").unwrap_or_default();
    let first = |key: &str| cpuinfo_field(&cpuinfo, key);
    env.set_opt("cpu.vendor", first("vendor_id"), Identity);
    env.set_opt("cpu.model", first("model name"), Identity);
    let logical = cpuinfo
        .lines()
        .filter(|l| l.split(':').next().map(str::trim) == Some("processor"))
        .count();
    env.set_opt(
        "cpu.logical_cores",
        (logical > 0).then(|| logical.to_string()),
        Identity,
    );
    env.set_opt(
        "cpu.online",
        src.read_line("sys/devices/system/cpu/online"),
        Performance,
    );

    env.set_opt(
        "kernel.release",
        src.read_line("proc/sys/kernel/osrelease"),
        Identity,
    );
    env.set_opt(
        "kernel.version",
        src.read_line("proc/sys/kernel/version"),
        Performance,
    );
    let os_release = src
        .read("etc/os-release")
        .or_else(|| src.read("usr/lib/os-release"));
    env.set_opt(
        "os.name",
        os_release
            .as_deref()
            .and_then(|t| os_release_field(t, "PRETTY_NAME")),
        Identity,
    );
    env.set_opt(
        "os.arch",
        src.is_live().then(|| std::env::consts::ARCH.to_string()),
        Identity,
    );
    env.set_opt(
        "libc.version",
        src.is_live().then(live_glibc_version).flatten(),
        Identity,
    );
    env.set_opt(
        "host.name",
        src.read_line("proc/sys/kernel/hostname"),
        Context,
    );
    env.set_opt(
        "load.avg1",
        src.read_line("proc/loadavg")
            .and_then(|l| l.split_whitespace().next().map(str::to_string)),
        Context,
    );
    env
}

/// The first value of `key` in `/proc/cpuinfo` text.
fn cpuinfo_field(cpuinfo: &str, key: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (k, v) = line.split_once(':')?;
        (k.trim() == key)
            .then(|| v.trim().to_string())
            .filter(|v| !v.is_empty())
    })
}

/// A field of `/etc/os-release`, unquoted.
fn os_release_field(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|line| {
        let (k, v) = line.split_once('=')?;
        (k.trim() == key).then(|| v.trim().trim_matches('"').trim_matches('\'').to_string())
    })
}

/// The running glibc's version, asked of glibc itself (not a subprocess).
fn live_glibc_version() -> Option<String> {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        // SAFETY: gnu_get_libc_version returns a static NUL-terminated string.
        let ptr = unsafe { libc::gnu_get_libc_version() };
        if ptr.is_null() {
            return None;
        }
        // SAFETY: non-null, static, NUL-terminated.
        let version = unsafe { std::ffi::CStr::from_ptr(ptr) };
        Some(format!("glibc {}", version.to_string_lossy()))
    }
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fixture_tree_is_read_and_host_is_not() {
        let dir = std::env::temp_dir().join(format!("perfsleuth-env-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("proc/sys/kernel")).unwrap();
        std::fs::create_dir_all(dir.join("etc")).unwrap();
        std::fs::write(
            dir.join("proc/cpuinfo"),
            "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7763 64-Core Processor\n\nprocessor\t: 1\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 7763 64-Core Processor\n",
        )
        .unwrap();
        std::fs::write(dir.join("proc/sys/kernel/osrelease"), "6.5.0-1025-azure\n").unwrap();
        std::fs::write(
            dir.join("etc/os-release"),
            "NAME=\"Ubuntu\"\nPRETTY_NAME=\"Ubuntu 22.04.4 LTS\"\n",
        )
        .unwrap();

        let env = capture(&Source::root(&dir));
        assert_eq!(
            env.get("cpu.model"),
            Some("AMD EPYC 7763 64-Core Processor")
        );
        assert_eq!(env.get("cpu.vendor"), Some("AuthenticAMD"));
        assert_eq!(env.get("cpu.logical_cores"), Some("2"));
        assert_eq!(env.get("kernel.release"), Some("6.5.0-1025-azure"));
        assert_eq!(env.get("os.name"), Some("Ubuntu 22.04.4 LTS"));
        // Not in the tree, and never taken from the host when a root is given.
        assert_eq!(env.get("libc.version"), Some("unknown"));
        assert_eq!(env.get("os.arch"), Some("unknown"));
        assert_eq!(env.get("host.name"), Some("unknown"));
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn live_capture_has_the_basics() {
        let env = capture(&Source::live());
        for key in [
            "cpu.model",
            "cpu.logical_cores",
            "kernel.release",
            "libc.version",
            "host.name",
        ] {
            let v = env.get(key).unwrap();
            assert!(!v.is_empty() && v != "unknown", "{key} = {v}");
        }
        assert_eq!(env.facts["host.name"].class, ImpactClass::Context);
    }
}
