//! Kernel facts: release, the boot parameters known to move results, CPU
//! vulnerability mitigations and a few sysctls. Also holds the small text
//! helpers the other readers of this crate share (values from files that may
//! hold anything at all in a copied or damaged tree).

use crate::Source;
use crate::error::{Record, Unknown};
use perfsleuth_model::{Environment, ImpactClass};

/// Boot parameters recorded as `kernel.param.<name>` when present: they
/// isolate CPUs, switch mitigations, idle states, clocks or huge pages.
const PARAMS: &[&str] = &[
    "isolcpus",
    "nohz_full",
    "rcu_nocbs",
    "mitigations",
    "spectre_v2",
    "spectre_v2_user",
    "pti",
    "nosmt",
    "intel_pstate",
    "processor.max_cstate",
    "intel_idle.max_cstate",
    "idle",
    "transparent_hugepage",
    "hugepages",
    "default_hugepagesz",
    "clocksource",
    "tsc",
];

/// The fixed keys this reader always sets.
#[cfg(test)]
pub(crate) const KEYS: &[&str] = &[
    "kernel.release",
    "kernel.version",
    "kernel.cmdline",
    "kernel.aslr",
    "kernel.clocksource",
    "kernel.perf_event_paranoid",
    "kernel.sched_autogroup",
];

const VULNERABILITIES: &str = "/sys/devices/system/cpu/vulnerabilities";

/// Captures the kernel facts.
pub fn capture(src: &Source, env: &mut Environment) {
    use ImpactClass::*;
    env.record(
        "kernel.release",
        line(src, "/proc/sys/kernel/osrelease"),
        Identity,
    );
    env.record(
        "kernel.version",
        line(src, "/proc/sys/kernel/version"),
        Performance,
    );
    let cmdline = line(src, "/proc/cmdline");
    if let Ok(text) = &cmdline {
        for (name, value) in boot_params(text) {
            env.set(format!("kernel.param.{name}"), value, Performance);
        }
    }
    env.record("kernel.cmdline", cmdline, Performance);

    // Every file present, whatever its name: new kernels add new ones and a
    // mitigation appearing or changing is exactly what we want to see.
    if let Ok(names) = src.list_dir(VULNERABILITIES) {
        for name in names.iter().filter(|n| key_safe(n)) {
            env.record(
                format!("mitigation.{name}"),
                line(src, &format!("{VULNERABILITIES}/{name}")),
                Performance,
            );
        }
    }

    let aslr = line(src, "/proc/sys/kernel/randomize_va_space").and_then(|v| match v.as_str() {
        "0" => Ok("off".to_string()),
        "1" => Ok("partial".to_string()),
        "2" => Ok("full".to_string()),
        _ => Err(unexpected("/proc/sys/kernel/randomize_va_space", &v)),
    });
    env.record("kernel.aslr", aslr, Performance);
    env.record(
        "kernel.clocksource",
        line(
            src,
            "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        ),
        Performance,
    );
    let paranoid = "/proc/sys/kernel/perf_event_paranoid";
    env.record(
        "kernel.perf_event_paranoid",
        line(src, paranoid).and_then(|v| {
            v.parse::<i64>()
                .map(|n| n.to_string())
                .map_err(|_| unexpected(paranoid, &v))
        }),
        Performance,
    );
    let autogroup = "/proc/sys/kernel/sched_autogroup_enabled";
    env.record(
        "kernel.sched_autogroup",
        line(src, autogroup).and_then(|v| match v.as_str() {
            "0" => Ok("off".to_string()),
            "1" => Ok("on".to_string()),
            _ => Err(unexpected(autogroup, &v)),
        }),
        Context,
    );
}

/// The selected boot parameters of a command line, as (name, value). Bare
/// flags (`nosmt`) get the value `on`; the last occurrence wins, as in the
/// kernel; arguments after `--` belong to init and are ignored.
fn boot_params(cmdline: &str) -> Vec<(&'static str, String)> {
    let mut found: Vec<(&'static str, String)> = Vec::new();
    for token in split_cmdline(cmdline) {
        if token == "--" {
            break;
        }
        let (name, value) = match token.split_once('=') {
            Some((n, v)) => (n.to_string(), v.replace('"', "")),
            None => (token.replace('"', ""), "on".to_string()),
        };
        // The kernel treats `-` and `_` in parameter names alike.
        let name = name.replace('-', "_");
        if let Some(known) = PARAMS.iter().find(|p| **p == name) {
            let value = if value.is_empty() {
                "(empty)".to_string()
            } else {
                value
            };
            found.retain(|(n, _)| n != known);
            found.push((known, value));
        }
    }
    found
}

/// Splits a kernel command line on whitespace outside double quotes, the way
/// the kernel's `next_arg` does (`param="a b"` is one argument).
fn split_cmdline(cmdline: &str) -> Vec<String> {
    let mut tokens = Vec::new();
    let mut current = String::new();
    let mut quoted = false;
    for c in cmdline.chars() {
        if c == '"' {
            quoted = !quoted;
        }
        if c.is_whitespace() && !quoted {
            if !current.is_empty() {
                tokens.push(std::mem::take(&mut current));
            }
        } else {
            current.push(c);
        }
    }
    if !current.is_empty() {
        tokens.push(current);
    }
    tokens
}

/// Longest value kept from a file: a garbage file must not put megabytes
/// into every stored fingerprint. Long enough for any real command line.
const MAX_VALUE_CHARS: usize = 8192;

/// A one-line value from a file: the first line, control characters
/// replaced, at most [`MAX_VALUE_CHARS`] characters.
pub(crate) fn clean(text: &str) -> String {
    let first = text.trim().lines().next().unwrap_or("").trim();
    first
        .chars()
        .take(MAX_VALUE_CHARS)
        .map(|c| if c.is_control() { '?' } else { c })
        .collect()
}

/// Reads a one-line file as a cleaned value; empty files are an error.
pub(crate) fn line(src: &Source, path: &str) -> Result<String, Unknown> {
    let value = clean(&src.read_line(path)?);
    if value.is_empty() {
        return Err(format!("{path} holds no text").into());
    }
    Ok(value)
}

/// The reason for a value that is not of the expected form, quoting a short
/// prefix of it (a garbage file must not make the reason huge).
pub(crate) fn unexpected(path: &str, value: &str) -> Unknown {
    format!("unexpected content in {path}: {:?}", short(value)).into()
}

/// At most 40 characters of a value, for reasons.
pub(crate) fn short(value: &str) -> String {
    let mut s: String = value.chars().take(40).collect();
    if value.chars().count() > 40 {
        s.push('…');
    }
    s
}

/// Whether a directory entry name can be a key part: what sysfs uses, and
/// never anything a garbage tree could use to forge other keys.
pub(crate) fn key_safe(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-' || c == '.')
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Temporary trees and random bytes for the tests of this crate's readers.

    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicU64, Ordering};

    /// A directory under the system temp dir, removed on drop.
    pub struct TempTree {
        pub root: PathBuf,
    }

    impl TempTree {
        /// A new empty tree.
        pub fn new(tag: &str) -> TempTree {
            static COUNTER: AtomicU64 = AtomicU64::new(0);
            let n = COUNTER.fetch_add(1, Ordering::Relaxed);
            let nanos = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.subsec_nanos())
                .unwrap_or(0);
            let root = std::env::temp_dir().join(format!(
                "perfsleuth-env-{tag}-{}-{n}-{nanos}",
                std::process::id()
            ));
            std::fs::create_dir_all(&root).unwrap();
            TempTree { root }
        }

        /// Writes a file (absolute-looking path) under the tree.
        pub fn write(&self, path: &str, content: impl AsRef<[u8]>) -> &TempTree {
            let full = self.root.join(path.trim_start_matches('/'));
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, content).unwrap();
            self
        }

        /// The full path of a file under the tree.
        pub fn path(&self, path: &str) -> PathBuf {
            self.root.join(path.trim_start_matches('/'))
        }

        /// The source reading this tree.
        pub fn source(&self) -> crate::Source {
            crate::Source::root(&self.root)
        }
    }

    impl Drop for TempTree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.root);
        }
    }

    /// Deterministic pseudo-random bytes (xorshift), including NULs,
    /// newlines and invalid UTF-8.
    pub fn random_bytes(seed: u64, len: usize) -> Vec<u8> {
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        (0..len)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 32) as u8
            })
            .collect()
    }

    /// Every file a reader of this crate may open, relative to the root.
    pub const ALL_FILES: &[&str] = &[
        "/proc/sys/kernel/osrelease",
        "/proc/sys/kernel/version",
        "/proc/cmdline",
        "/proc/sys/kernel/randomize_va_space",
        "/sys/devices/system/clocksource/clocksource0/current_clocksource",
        "/proc/sys/kernel/perf_event_paranoid",
        "/proc/sys/kernel/sched_autogroup_enabled",
        "/sys/devices/system/cpu/vulnerabilities/spectre_v2",
        "/sys/devices/system/cpu/vulnerabilities/meltdown",
        "/proc/cpuinfo",
        "/proc/self/environ",
        "/proc/self/status",
        "/proc/self/cgroup",
        "/proc/self/maps",
        "/proc/1/cgroup",
        "/proc/1/environ",
        "/proc/loadavg",
        "/proc/stat",
        "/proc/uptime",
        "/proc/pressure/cpu",
        "/lib/x86_64-linux-gnu/libc.so.6",
        "/sys/hypervisor/type",
        "/sys/class/dmi/id/sys_vendor",
        "/sys/class/dmi/id/product_name",
        "/run/systemd/container",
        "/sys/fs/cgroup/cgroup.controllers",
        "/sys/fs/cgroup/cpu.max",
        "/sys/fs/cgroup/cpu.stat",
        "/sys/fs/cgroup/cpuset.cpus.effective",
        "/sys/fs/cgroup/memory.max",
        "/sys/fs/cgroup/user.slice/cpu.max",
        "/sys/fs/cgroup/user.slice/cpu.stat",
        "/sys/fs/cgroup/user.slice/memory.max",
        "/sys/fs/cgroup/cpu/cpu.cfs_quota_us",
        "/sys/fs/cgroup/cpu/cpu.cfs_period_us",
        "/sys/fs/cgroup/cpu/cpu.stat",
        "/sys/fs/cgroup/cpuset/cpuset.effective_cpus",
        "/sys/fs/cgroup/memory/memory.limit_in_bytes",
        "/cpuid.txt",
    ];

    /// Fills every file of [`ALL_FILES`] with `content(index)`.
    pub fn fill(tree: &TempTree, content: impl Fn(usize) -> Vec<u8>) {
        for (i, f) in ALL_FILES.iter().enumerate() {
            tree.write(f, content(i));
        }
    }

    /// Asserts that every key is set.
    pub fn assert_keys(env: &perfsleuth_model::Environment, keys: &[&str]) {
        for k in keys {
            assert!(
                env.facts.contains_key(*k),
                "missing {k} in {:#?}",
                env.facts.keys().collect::<Vec<_>>()
            );
        }
    }

    /// Whether a path exists (for skipping tests on machines without it).
    pub fn have(path: &str) -> bool {
        Path::new(path).exists()
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;

    fn real_tree() -> TempTree {
        let t = TempTree::new("kernel");
        t.write("/proc/sys/kernel/osrelease", "6.1.0-18-amd64\n")
            .write("/proc/sys/kernel/version", "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)\n")
            .write(
                "/proc/cmdline",
                "BOOT_IMAGE=/boot/vmlinuz-6.1.0-18-amd64 root=UUID=4f1c ro quiet isolcpus=2,3 nohz-full=2-3 mitigations=off nosmt \
                 intel_idle.max_cstate=1 dyndbg=\"file x.c +p\" isolcpus=domain,2-3 -- tsc=unstable\n",
            )
            .write(
                "/sys/devices/system/cpu/vulnerabilities/spectre_v2",
                "Mitigation: Retpolines; IBPB: conditional; IBRS_FW; STIBP: disabled; RSB filling; PBRSB-eIBRS: Not affected; BHI: Not affected\n",
            )
            .write("/sys/devices/system/cpu/vulnerabilities/meltdown", "Not affected\n")
            .write("/sys/devices/system/cpu/vulnerabilities/spec_store_bypass", "Mitigation: Speculative Store Bypass disabled via prctl\n")
            .write("/proc/sys/kernel/randomize_va_space", "2\n")
            .write("/sys/devices/system/clocksource/clocksource0/current_clocksource", "tsc\n")
            .write("/proc/sys/kernel/perf_event_paranoid", "2\n")
            .write("/proc/sys/kernel/sched_autogroup_enabled", "1\n");
        t
    }

    #[test]
    fn reads_a_real_format_tree() {
        let t = real_tree();
        let mut env = Environment::default();
        capture(&t.source(), &mut env);
        assert_keys(&env, KEYS);
        assert_eq!(env.get("kernel.release"), Some("6.1.0-18-amd64"));
        assert_eq!(env.get("kernel.aslr"), Some("full"));
        assert_eq!(env.get("kernel.clocksource"), Some("tsc"));
        assert_eq!(env.get("kernel.perf_event_paranoid"), Some("2"));
        assert_eq!(env.get("kernel.sched_autogroup"), Some("on"));
        assert_eq!(env.get("kernel.param.isolcpus"), Some("domain,2-3"));
        assert_eq!(env.get("kernel.param.nohz_full"), Some("2-3"));
        assert_eq!(env.get("kernel.param.mitigations"), Some("off"));
        assert_eq!(env.get("kernel.param.nosmt"), Some("on"));
        assert_eq!(env.get("kernel.param.intel_idle.max_cstate"), Some("1"));
        assert_eq!(
            env.get("kernel.param.tsc"),
            None,
            "after -- belongs to init"
        );
        assert_eq!(
            env.facts
                .keys()
                .filter(|k| k.starts_with("kernel.param."))
                .count(),
            5
        );
        assert!(
            env.get("mitigation.spectre_v2")
                .unwrap()
                .starts_with("Mitigation: Retpolines; IBPB")
        );
        assert_eq!(env.get("mitigation.meltdown"), Some("Not affected"));
        assert_eq!(
            env.facts
                .keys()
                .filter(|k| k.starts_with("mitigation."))
                .count(),
            3
        );
        assert_eq!(
            env.facts["mitigation.meltdown"].class,
            ImpactClass::Performance
        );
        assert_eq!(env.facts["kernel.release"].class, ImpactClass::Identity);
    }

    #[test]
    fn an_empty_tree_gives_unknowns_with_reasons() {
        let t = TempTree::new("kernel-empty");
        let mut env = Environment::default();
        capture(&t.source(), &mut env);
        assert_keys(&env, KEYS);
        assert_eq!(env.get("kernel.release"), Some("unknown"));
        assert!(
            env.facts["kernel.release"]
                .reason
                .as_deref()
                .unwrap()
                .contains("osrelease")
        );
        assert!(
            !env.facts
                .keys()
                .any(|k| k.starts_with("mitigation.") || k.starts_with("kernel.param."))
        );
    }

    #[test]
    fn odd_values_are_unknown_not_invented() {
        let t = real_tree();
        t.write("/proc/sys/kernel/randomize_va_space", "7\n")
            .write("/proc/sys/kernel/perf_event_paranoid", "high\n")
            .write("/proc/cmdline", "");
        let mut env = Environment::default();
        capture(&t.source(), &mut env);
        assert_eq!(env.get("kernel.aslr"), Some("unknown"));
        assert!(
            env.facts["kernel.aslr"]
                .reason
                .as_deref()
                .unwrap()
                .contains("\"7\"")
        );
        assert_eq!(env.get("kernel.perf_event_paranoid"), Some("unknown"));
        assert_eq!(env.get("kernel.cmdline"), Some("unknown"));
    }

    #[test]
    fn garbage_everywhere_does_not_panic() {
        for seed in 0..8u64 {
            let t = TempTree::new("kernel-garbage");
            fill(&t, |i| {
                random_bytes(
                    seed * 100 + i as u64,
                    1 + (seed as usize * 997 + i * 131) % 5000,
                )
            });
            t.write(
                "/sys/devices/system/cpu/vulnerabilities/\u{1F600}odd name",
                random_bytes(seed, 10),
            );
            let mut env = Environment::default();
            capture(&t.source(), &mut env);
            assert_keys(&env, KEYS);
            assert!(env.facts.keys().all(|k| !k.contains(' ')));
            assert!(
                env.facts
                    .values()
                    .all(|f| f.value.chars().count() <= MAX_VALUE_CHARS && !f.value.contains('\n'))
            );
        }
    }

    #[test]
    fn cmdline_splitting_respects_quotes() {
        assert_eq!(split_cmdline("a b=\"c d\"  e"), vec!["a", "b=\"c d\"", "e"]);
        assert_eq!(
            boot_params("spectre_v2=\"retpoline,generic\" pti= "),
            vec![
                ("spectre_v2", "retpoline,generic".to_string()),
                ("pti", "(empty)".to_string())
            ]
        );
    }

    #[test]
    fn live_kernel_facts() {
        if !have("/proc/sys/kernel/osrelease") {
            return;
        }
        let mut env = Environment::default();
        capture(&Source::live(), &mut env);
        assert_keys(&env, KEYS);
        assert_ne!(env.get("kernel.release"), Some("unknown"));
        if have(VULNERABILITIES) {
            assert!(env.facts.keys().any(|k| k.starts_with("mitigation.")));
        }
    }
}
