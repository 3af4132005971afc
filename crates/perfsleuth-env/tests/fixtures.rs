//! The fingerprint of three real kinds of machine (and one tree of junk),
//! read from the fixture trees under `tests/fixtures/` with
//! `Source::root`. The expected values are those of
//! `tests/fixtures/README.md`; the keys are those of `docs/ENVIRONMENT.md`.

use perfsleuth_env::{
    EnvError, Severity, Source, binary_facts, capture, check, diff, has_problems, significant,
};
use perfsleuth_model::{Environment, ImpactClass, UNKNOWN};
use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};

const INTEL: &str = "intel-xeon-8370c";
const AMD: &str = "amd-epyc-7763";
const CONTAINER: &str = "container-vm-cgroupv2";
const GARBAGE: &str = "garbage";
const REAL_TREES: [&str; 3] = [INTEL, AMD, CONTAINER];
const ALL_TREES: [&str; 4] = [INTEL, AMD, CONTAINER, GARBAGE];

/// The 13 files of `sys/devices/system/cpu/vulnerabilities/` in every tree.
const MITIGATIONS: [&str; 13] = [
    "gather_data_sampling",
    "itlb_multihit",
    "l1tf",
    "mds",
    "meltdown",
    "mmio_stale_data",
    "retbleed",
    "spec_rstack_overflow",
    "spec_store_bypass",
    "spectre_v1",
    "spectre_v2",
    "srbds",
    "tsx_async_abort",
];

/// The variables `env.<NAME>` is recorded for (docs/ENVIRONMENT.md, Process).
const ENV_NAMES: [&str; 20] = [
    "GLIBC_TUNABLES",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_BIND_NOW",
    "MALLOC_ARENA_MAX",
    "MALLOC_CONF",
    "MALLOC_TOP_PAD_",
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "OMP_NUM_THREADS",
    "OMP_PROC_BIND",
    "OMP_PLACES",
    "RAYON_NUM_THREADS",
    "GOMAXPROCS",
    "GOGC",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "OPENBLAS_CORETYPE",
    "PYTHONHASHSEED",
    "JAVA_TOOL_OPTIONS",
];

/// The `libc.ld_so.<name>` keys (docs/ENVIRONMENT.md, libc).
const LD_SO_NAMES: [&str; 6] = [
    "x86_data_cache_size",
    "x86_shared_cache_size",
    "x86_non_temporal_threshold",
    "x86_rep_movsb_threshold",
    "x86_rep_stosb_threshold",
    "isa_level",
];

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures")
        .join(name)
}

fn tree(name: &str) -> Environment {
    capture(&Source::root(fixture(name)), None)
}

/// The value of `key`, failing with the whole fact when it is absent.
#[track_caller]
fn val<'a>(env: &'a Environment, key: &str) -> &'a str {
    env.get(key)
        .unwrap_or_else(|| panic!("{key} is not recorded; keys: {:?}", env.facts.keys()))
}

/// Asserts a batch of (key, expected value) pairs, reporting every mismatch at once.
#[track_caller]
fn expect(env: &Environment, tree: &str, expected: &[(&str, &str)]) {
    let wrong: Vec<String> = expected
        .iter()
        .filter_map(|(k, want)| {
            let got = env.facts.get(*k);
            match got {
                Some(f) if f.value == *want => None,
                Some(f) => Some(format!(
                    "{k}: expected {want:?}, got {:?}{}",
                    f.value,
                    f.reason
                        .as_deref()
                        .map(|r| format!(" ({r})"))
                        .unwrap_or_default()
                )),
                None => Some(format!("{k}: expected {want:?}, not recorded")),
            }
        })
        .collect();
    assert!(
        wrong.is_empty(),
        "{tree}: {} wrong facts:\n  {}",
        wrong.len(),
        wrong.join("\n  ")
    );
}

/// Asserts that `key` is `unknown` with a reason containing `needle`.
#[track_caller]
fn expect_unknown(env: &Environment, key: &str, needle: &str) {
    let f = env
        .facts
        .get(key)
        .unwrap_or_else(|| panic!("{key} is not recorded"));
    assert_eq!(f.value, UNKNOWN, "{key} should be unknown: {f:?}");
    let reason = f.reason.as_deref().unwrap_or_default();
    assert!(
        reason.contains(needle),
        "{key}: reason {reason:?} does not mention {needle:?}"
    );
}

/// A fresh temporary directory (removed on drop); the crate has no tempfile.
struct TempDir(PathBuf);

impl TempDir {
    fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "perfsleuth-env-fixtures-{}-{tag}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::SeqCst)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn copy_tree(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), &target).unwrap();
        }
    }
}

/// A copy of a fixture tree in a temporary directory, to change files in.
fn copy_of(name: &str) -> (TempDir, PathBuf) {
    let tmp = TempDir::new(name);
    let root = tmp.0.join(name);
    copy_tree(&fixture(name), &root);
    (tmp, root)
}

// ---------------------------------------------------------------------------
// The keys of docs/ENVIRONMENT.md
// ---------------------------------------------------------------------------

/// Expands `cpu.cache.{l1d,l1i,l2,l3}.size` into its four keys.
fn expand_braces(key: &str) -> Vec<String> {
    match (key.find('{'), key.find('}')) {
        (Some(open), Some(close)) if open < close => key[open + 1..close]
            .split(',')
            .flat_map(|alt| {
                expand_braces(&format!(
                    "{}{}{}",
                    &key[..open],
                    alt.trim(),
                    &key[close + 1..]
                ))
            })
            .collect(),
        _ => vec![key.to_string()],
    }
}

/// Every fixed key in the tables of docs/ENVIRONMENT.md with its class
/// (templated keys like `mitigation.<name>` are left out; `binary.*`,
/// `measure.*` and `sim.*` are set per benchmark and by `perfsleuth run`,
/// not by `capture`).
fn documented_keys() -> Vec<(String, ImpactClass)> {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../docs/ENVIRONMENT.md");
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    let mut keys = Vec::new();
    let mut section_class = None;
    for line in text.lines() {
        if line.starts_with('#') {
            section_class = line.contains("all context").then_some(ImpactClass::Context);
            continue;
        }
        if !line.starts_with("| `") {
            continue;
        }
        let cells: Vec<&str> = line.split('|').map(str::trim).collect();
        // cells[0] is empty (the line starts with '|').
        let class = match cells.get(2).copied() {
            Some(c) if c.starts_with("identity") => ImpactClass::Identity,
            Some(c) if c.starts_with("performance") => ImpactClass::Performance,
            Some(c) if c.starts_with("context") => ImpactClass::Context,
            _ => section_class
                .unwrap_or_else(|| panic!("no class for the row {line:?} of ENVIRONMENT.md")),
        };
        for (i, span) in cells[1].split('`').enumerate() {
            // measure.*, sim.*, variant* and noise.run.* are recorded by a run, not by a capture.
            if i % 2 == 0
                || span.contains('<')
                || span.starts_with("measure.")
                || span.starts_with("sim.")
                || span == "variant"
                || span.starts_with("variant.")
                || span.starts_with("noise.run.")
            {
                continue;
            }
            for key in expand_braces(span) {
                keys.push((key, class));
            }
        }
    }
    keys
}

/// The fixed keys plus the enumerated families (env vars, ld.so values).
fn all_fixed_keys() -> Vec<(String, ImpactClass)> {
    let mut keys = documented_keys();
    keys.extend(
        ENV_NAMES
            .iter()
            .map(|n| (format!("env.{n}"), ImpactClass::Performance)),
    );
    keys.extend(
        LD_SO_NAMES
            .iter()
            .map(|n| (format!("libc.ld_so.{n}"), ImpactClass::Performance)),
    );
    keys
}

#[test]
fn the_documented_key_list_is_read_completely() {
    let keys = documented_keys();
    let names: BTreeSet<&str> = keys.iter().map(|(k, _)| k.as_str()).collect();
    for k in [
        "cpu.vendor",
        "cpu.family",
        "cpu.model_id",
        "cpu.stepping",
        "cpu.cache.l1d.size",
        "cpu.cache.l3.shared_cpus",
        "cpu.cache.cpuid_check",
        "cpu.freq.min_khz",
        "mem.thp.defrag",
        "kernel.sched_autogroup",
        "libc.hwcaps",
        "virt.dmi.product",
        "cgroup.cpu.throttled_usec",
        "process.affinity",
        "noise.steal_pct",
        "noise.iowait_pct",
        "os.arch",
        "host.name",
    ] {
        assert!(
            names.contains(k),
            "{k} not parsed from ENVIRONMENT.md: {names:?}"
        );
    }
    assert!(keys.len() >= 70, "only {} keys parsed", keys.len());
}

#[test]
fn every_documented_key_is_in_every_capture() {
    let keys = all_fixed_keys();
    for name in ALL_TREES {
        let env = tree(name);
        let mut missing = Vec::new();
        let mut no_reason = Vec::new();
        for (key, _) in &keys {
            match env.facts.get(key) {
                None => missing.push(key.clone()),
                Some(f) if f.value == UNKNOWN => {
                    if f.reason.as_deref().is_none_or(|r| r.trim().is_empty()) {
                        no_reason.push(key.clone());
                    }
                }
                Some(f) => assert!(!f.value.is_empty(), "{name}: {key} has an empty value"),
            }
        }
        for m in MITIGATIONS {
            let key = format!("mitigation.{m}");
            if !env.facts.contains_key(&key) {
                missing.push(key);
            }
        }
        assert!(missing.is_empty(), "{name}: missing keys {missing:?}");
        assert!(
            no_reason.is_empty(),
            "{name}: unknown without a reason: {no_reason:?}"
        );
    }
}

#[test]
fn every_documented_key_has_its_documented_class() {
    let env = tree(INTEL);
    let wrong: Vec<String> = all_fixed_keys()
        .iter()
        .filter_map(|(key, class)| {
            let f = env.facts.get(key)?;
            (f.class != *class)
                .then(|| format!("{key}: documented {class:?}, captured {:?}", f.class))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn no_unknown_fact_lacks_a_reason_in_any_tree() {
    for name in ALL_TREES {
        let env = tree(name);
        for (key, f) in &env.facts {
            if f.value == UNKNOWN {
                assert!(
                    f.reason.as_deref().is_some_and(|r| !r.trim().is_empty()),
                    "{name}: {key} is unknown without a reason"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------
// The three real machines
// ---------------------------------------------------------------------------

#[test]
fn intel_xeon_8370c_on_hyper_v() {
    let env = tree(INTEL);
    let brand = "Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz";
    let tunables = "glibc.malloc.hugetlb=1:glibc.cpu.x86_rep_movsb_threshold=4096";
    expect(
        &env,
        INTEL,
        &[
            ("cpu.vendor", "GenuineIntel"),
            ("cpu.family", "6"),
            ("cpu.model_id", "106"),
            ("cpu.stepping", "6"),
            ("cpu.model", brand),
            ("cpu.brand", brand),
            ("cpu.microcode", "0xffffffff"),
            ("cpu.isa_level", "x86-64-v4"),
            ("cpu.logical_cores", "2"),
            ("cpu.physical_cores", "1"),
            ("cpu.sockets", "1"),
            ("cpu.online", "0-1"),
            ("cpu.smt", "on"),
            ("cpu.cache.l1d.size", "48 KiB"),
            ("cpu.cache.l1d.ways", "12"),
            ("cpu.cache.l1d.line", "64"),
            ("cpu.cache.l1d.shared_cpus", "0-1"),
            ("cpu.cache.l1i.size", "32 KiB"),
            ("cpu.cache.l2.size", "1280 KiB"),
            ("cpu.cache.l2.ways", "20"),
            ("cpu.cache.l3.size", "49152 KiB"),
            ("cpu.cache.l3.ways", "12"),
            ("cpu.cache.cpuid_check", "agrees"),
            ("cpu.idle.driver", "none"),
            ("mem.total", "7929 MiB"),
            ("mem.numa.nodes", "1"),
            ("mem.numa.node0.cpus", "0-1"),
            ("mem.thp.enabled", "madvise"),
            ("mem.thp.defrag", "madvise"),
            ("kernel.release", "6.5.0-1025-azure"),
            (
                "kernel.version",
                "#26~22.04.1-Ubuntu SMP Thu Jul 11 22:33:04 UTC 2024",
            ),
            ("kernel.clocksource", "hyperv_clocksource_tsc_page"),
            ("kernel.perf_event_paranoid", "4"),
            (
                "mitigation.spectre_v2",
                "Mitigation: Enhanced / Automatic IBRS; IBPB: conditional; RSB filling; PBRSB-eIBRS: SW sequence; BHI: SW loop, KVM: SW loop",
            ),
            (
                "mitigation.mmio_stale_data",
                "Mitigation: Clear CPU buffers; SMT Host state unknown",
            ),
            ("mitigation.meltdown", "Not affected"),
            // The value carries the library's name: `glibc 2.35`.
            ("libc.version", "glibc 2.35"),
            ("libc.hwcaps", "x86-64-v4"),
            ("libc.tunables", tunables),
            ("virt.hypervisor", "Hyper-V"),
            ("virt.dmi.vendor", "Microsoft Corporation"),
            ("virt.dmi.product", "Virtual Machine"),
            ("virt.container", "none"),
            ("cgroup.version", "v2"),
            ("cgroup.path", "/user.slice/user-1000.slice/session-1.scope"),
            ("cgroup.cpu.max", "max 100000"),
            ("cgroup.cpu.quota", "none"),
            ("cgroup.cpuset", "0-1"),
            ("cgroup.memory.max", "max"),
            ("cgroup.cpu.nr_throttled", "0"),
            ("process.affinity", "0-1"),
            ("env.GLIBC_TUNABLES", tunables),
            ("env.OMP_NUM_THREADS", "unset"),
            ("env.MALLOC_ARENA_MAX", "unset"),
            ("noise.loadavg", "0.08 0.11 0.09"),
            ("noise.runnable", "1"),
            ("os.name", "Ubuntu 22.04.4 LTS"),
            ("host.name", "bench-d2sv5"),
        ],
    );
    // Azure's Hyper-V exposes no P-state interface and this kernel no PSI.
    for key in [
        "cpu.freq.driver",
        "cpu.freq.governor",
        "cpu.freq.min_khz",
        "cpu.freq.max_khz",
    ] {
        expect_unknown(&env, key, "cpufreq");
    }
    assert_eq!(val(&env, "cpu.boost"), UNKNOWN);
    expect_unknown(
        &env,
        "noise.psi.cpu.some_avg10",
        "No such file or directory",
    );
    for param in [
        "isolcpus",
        "nohz_full",
        "mitigations",
        "transparent_hugepage",
    ] {
        assert!(
            env.get(&format!("kernel.param.{param}")).is_none(),
            "kernel.param.{param} recorded though the cmdline has none"
        );
    }
    let flags: BTreeSet<&str> = val(&env, "cpu.flags").split_whitespace().collect();
    for f in ["avx512f", "avx512bw", "avx512vl", "avx2", "sha_ni", "vaes"] {
        assert!(flags.contains(f), "{f} missing from cpu.flags");
    }
}

#[test]
fn amd_epyc_7763_on_hyper_v() {
    let env = tree(AMD);
    let brand = "AMD EPYC 7763 64-Core Processor";
    expect(
        &env,
        AMD,
        &[
            ("cpu.vendor", "AuthenticAMD"),
            ("cpu.family", "25"),
            ("cpu.model_id", "1"),
            ("cpu.stepping", "1"),
            ("cpu.model", brand),
            // The dump pads the brand string with spaces: they are trimmed.
            ("cpu.brand", brand),
            ("cpu.microcode", "0xffffffff"),
            ("cpu.isa_level", "x86-64-v3"),
            ("cpu.logical_cores", "2"),
            ("cpu.physical_cores", "1"),
            ("cpu.smt", "on"),
            ("cpu.cache.l1d.size", "32 KiB"),
            ("cpu.cache.l1d.ways", "8"),
            ("cpu.cache.l1i.size", "32 KiB"),
            ("cpu.cache.l2.size", "512 KiB"),
            ("cpu.cache.l2.ways", "8"),
            ("cpu.cache.l3.size", "32768 KiB"),
            ("cpu.cache.l3.ways", "16"),
            ("cpu.freq.driver", "acpi-cpufreq"),
            ("cpu.freq.governor", "schedutil"),
            ("cpu.freq.min_khz", "1500000"),
            ("cpu.freq.max_khz", "2450000"),
            ("cpu.boost", "on"),
            ("mem.total", "7941 MiB"),
            ("mem.thp.enabled", "madvise"),
            ("kernel.release", "6.5.0-1025-azure"),
            (
                "mitigation.spectre_v2",
                "Mitigation: Retpolines; STIBP: disabled; RSB filling; PBRSB-eIBRS: Not affected; BHI: Not affected",
            ),
            (
                "mitigation.spec_rstack_overflow",
                "Vulnerable: Safe RET, no microcode",
            ),
            ("mitigation.spec_store_bypass", "Vulnerable"),
            ("libc.version", "glibc 2.35"),
            ("libc.hwcaps", "x86-64-v3"),
            ("libc.tunables", "unset"),
            ("virt.hypervisor", "Hyper-V"),
            ("virt.container", "none"),
            ("cgroup.version", "v2"),
            ("cgroup.cpu.quota", "none"),
            ("cgroup.cpuset", "0-1"),
            ("process.affinity", "0-1"),
            ("env.GLIBC_TUNABLES", "unset"),
            ("env.OMP_NUM_THREADS", "unset"),
            ("noise.psi.cpu.some_avg10", "0.00"),
            ("os.name", "Ubuntu 22.04.4 LTS"),
            ("host.name", "bench-d2asv5"),
        ],
    );
    let flags: BTreeSet<&str> = val(&env, "cpu.flags").split_whitespace().collect();
    assert!(
        !flags.iter().any(|f| f.starts_with("avx512")),
        "Milan has no AVX-512: {flags:?}"
    );
    assert!(flags.contains("avx2") && flags.contains("sse4a"));
}

/// README: `cpu.cache.cpuid_check` is "agrees (0x8000001D)" for the EPYC.
/// The dump (like `cpuid -r` on this part) lists 0x8000001D subleaves 0-3,
/// all four real caches, and no null subleaf after them.
#[test]
fn amd_cache_sizes_agree_with_cpuid_leaf_0x8000001d() {
    let env = tree(AMD);
    expect(&env, AMD, &[("cpu.cache.cpuid_check", "agrees")]);
}

#[test]
fn docker_container_in_a_kvm_guest_with_cgroup_v2_limits() {
    let env = tree(CONTAINER);
    let brand = "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz";
    expect(
        &env,
        CONTAINER,
        &[
            ("cpu.vendor", "GenuineIntel"),
            ("cpu.family", "6"),
            ("cpu.model_id", "85"),
            ("cpu.stepping", "4"),
            ("cpu.model", brand),
            ("cpu.brand", brand),
            ("cpu.microcode", "0x2007006"),
            ("cpu.isa_level", "x86-64-v4"),
            ("cpu.logical_cores", "8"),
            ("cpu.physical_cores", "8"),
            ("cpu.sockets", "1"),
            ("cpu.online", "0-7"),
            ("cpu.smt", "notsupported"),
            ("cpu.cache.l1d.size", "32 KiB"),
            ("cpu.cache.l1d.shared_cpus", "0"),
            ("cpu.cache.l2.size", "1024 KiB"),
            ("cpu.cache.l2.ways", "16"),
            ("cpu.cache.l3.size", "28160 KiB"),
            ("cpu.cache.l3.ways", "11"),
            ("cpu.cache.l3.shared_cpus", "0-7"),
            ("cpu.cache.cpuid_check", "agrees"),
            ("cpu.freq.governor", "performance"),
            ("cpu.freq.max_khz", "2401000"),
            ("cpu.idle.driver", "haltpoll"),
            ("mem.total", "32104 MiB"),
            ("mem.numa.node0.cpus", "0-7"),
            ("mem.thp.enabled", "never"),
            ("mem.thp.defrag", "never"),
            ("kernel.release", "5.15.0-107-generic"),
            ("kernel.clocksource", "kvm-clock"),
            ("kernel.perf_event_paranoid", "2"),
            ("kernel.param.isolcpus", "6-7"),
            ("kernel.param.nohz_full", "6-7"),
            ("kernel.param.mitigations", "auto"),
            ("kernel.param.transparent_hugepage", "never"),
            ("kernel.param.clocksource", "kvm-clock"),
            (
                "mitigation.spectre_v2",
                "Mitigation: IBRS; IBPB: conditional; STIBP: disabled; RSB filling; PBRSB-eIBRS: Not affected; BHI: SW loop, KVM: SW loop",
            ),
            ("mitigation.meltdown", "Mitigation: PTI"),
            ("mitigation.l1tf", "Mitigation: PTE Inversion"),
            ("libc.version", "glibc 2.31"),
            // glibc-hwcaps came with 2.33.
            ("libc.hwcaps", "none"),
            ("libc.tunables", "unset"),
            ("virt.hypervisor", "KVM"),
            ("virt.dmi.vendor", "QEMU"),
            ("virt.dmi.product", "Standard PC (Q35 + ICH9, 2009)"),
            ("virt.container", "docker"),
            ("cgroup.version", "v2"),
            ("cgroup.path", "/"),
            ("cgroup.cpu.max", "50000 100000"),
            ("cgroup.cpu.quota", "0.5 CPU"),
            ("cgroup.cpuset", "0-3"),
            ("cgroup.memory.max", "2147483648"),
            ("cgroup.cpu.nr_throttled", "61237"),
            ("cgroup.cpu.throttled_usec", "3011482911"),
            ("process.affinity", "0-3"),
            ("env.GLIBC_TUNABLES", "unset"),
            ("env.OMP_NUM_THREADS", "4"),
            ("env.MALLOC_ARENA_MAX", "2"),
            ("noise.loadavg", "3.91 3.72 3.40"),
            ("noise.runnable", "3"),
            ("noise.psi.cpu.some_avg10", "41.37"),
            ("os.name", "Debian GNU/Linux 11 (bullseye)"),
            ("host.name", "3f2a9c7d1e4b"),
        ],
    );
}

#[test]
fn nothing_is_taken_from_the_live_host() {
    let live_host = std::fs::read_to_string("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .unwrap_or_default();
    for name in REAL_TREES {
        let env = tree(name);
        expect_unknown(&env, "os.arch", "tree");
        expect_unknown(&env, "mem.page_size", "tree");
        for n in LD_SO_NAMES {
            let key = format!("libc.ld_so.{n}");
            assert_eq!(val(&env, &key), UNKNOWN, "{name}: {key} came from the host");
            assert!(env.facts[&key].reason.is_some(), "{name}: {key}");
        }
        assert_ne!(
            val(&env, "host.name"),
            live_host,
            "{name}: host name came from the host"
        );
        // The process facts come from the tree's proc/self.
        let affinity = val(&env, "process.affinity");
        let want = if name == CONTAINER { "0-3" } else { "0-1" };
        assert_eq!(affinity, want, "{name}: process.affinity");
        assert_eq!(val(&env, "cgroup.cpuset"), want, "{name}: cgroup.cpuset");
    }
}

// ---------------------------------------------------------------------------
// garbage/
// ---------------------------------------------------------------------------

#[test]
fn garbage_tree_gives_reasons_not_panics() {
    let env = tree(GARBAGE);
    for (key, _) in all_fixed_keys() {
        assert!(env.facts.contains_key(&key), "garbage: {key} missing");
    }
    // The CPUID dump is rejected, so everything CPUID-only is unknown with the parse error.
    for key in ["cpu.brand", "cpu.cache.cpuid_check"] {
        expect_unknown(&env, key, "cpuid.txt");
    }
    // Absurd numbers must not survive validation.
    for key in [
        "mem.total",
        "noise.uptime_s",
        "noise.steal_pct",
        "noise.loadavg",
        "cgroup.cpu.throttled_usec",
        "process.affinity",
        "kernel.release",
        "libc.version",
        "os.arch",
    ] {
        let f = &env.facts[key];
        assert_eq!(f.value, UNKNOWN, "garbage: {key} = {:?} survived", f.value);
        assert!(f.reason.as_deref().is_some_and(|r| !r.is_empty()), "{key}");
    }
    // diff and check of junk do not panic either.
    let intel = tree(INTEL);
    let d = diff(&env, &intel);
    assert!(significant(&d).count() > 0);
    let d = diff(&intel, &env);
    assert!(significant(&d).count() > 0);
    assert!(diff(&env, &env).is_empty());
    let findings = check(&env);
    // nr_throttled is "-1" in the junk: an unreadable counter is no problem.
    assert!(
        !findings.iter().any(|f| f.key == "cgroup.cpu.nr_throttled"),
        "{findings:?}"
    );
    let _ = has_problems(&findings);
}

/// The readers of kernel, libc, virt and process facts replace control
/// characters (kernel::clean); the CPU facts from /proc/cpuinfo do not, so
/// the garbage cpuinfo's `vendor_id` with a NUL byte ends up in the value.
#[test]
fn garbage_values_hold_no_control_characters() {
    let env = tree(GARBAGE);
    let bad: Vec<String> = env
        .facts
        .iter()
        .filter(|(_, f)| f.value.chars().any(char::is_control))
        .map(|(k, f)| format!("{k} = {:?}", f.value.chars().take(40).collect::<String>()))
        .collect();
    assert!(
        bad.is_empty(),
        "values with control characters:\n{}",
        bad.join("\n")
    );
}

// ---------------------------------------------------------------------------
// diff and check
// ---------------------------------------------------------------------------

#[test]
fn diff_amd_to_intel_is_a_cpu_change_on_the_same_image() {
    let amd = tree(AMD);
    let intel = tree(INTEL);
    let changes = diff(&amd, &intel);
    let sig: Vec<_> = significant(&changes).collect();
    let find = |key: &str| {
        sig.iter()
            .find(|c| c.key == key)
            .unwrap_or_else(|| panic!("{key} not among the significant changes: {sig:#?}"))
    };
    let model = find("cpu.model");
    assert_eq!(model.class, ImpactClass::Identity);
    assert_eq!(
        model.before.as_deref(),
        Some("AMD EPYC 7763 64-Core Processor")
    );
    assert_eq!(
        model.after.as_deref(),
        Some("Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz")
    );
    assert!(
        find("cpu.cache.l1d.size")
            .summary
            .contains("32 KiB → 48 KiB")
    );
    assert_eq!(find("cpu.cache.l2.size").summary, "L2: 512 KiB → 1280 KiB");
    assert!(
        find("cpu.cache.l3.size")
            .summary
            .contains("32768 KiB → 49152 KiB")
    );
    let isa = find("cpu.isa_level");
    assert_eq!(isa.before.as_deref(), Some("x86-64-v3"));
    assert_eq!(isa.after.as_deref(), Some("x86-64-v4"));

    let flags = find("cpu.flags");
    let fa: BTreeSet<&str> = val(&amd, "cpu.flags").split_whitespace().collect();
    let fb: BTreeSet<&str> = val(&intel, "cpu.flags").split_whitespace().collect();
    let only_b = fb.difference(&fa).count();
    assert!(only_b > 0);
    assert!(
        flags
            .summary
            .starts_with(&format!("ISA flags: {only_b} only in B (")),
        "{}",
        flags.summary
    );
    assert!(flags.summary.contains("avx512"), "{}", flags.summary);
    assert!(flags.summary.contains("only in A"), "{}", flags.summary);

    // Same OS image: kernel, libc and os-release are byte-identical.
    for key in [
        "kernel.release",
        "kernel.version",
        "kernel.cmdline",
        "libc.version",
        "libc.path",
        "os.name",
        "virt.hypervisor",
        "cgroup.version",
    ] {
        assert!(
            !changes.iter().any(|c| c.key == key),
            "{key} should not differ: {changes:#?}"
        );
    }
    // Identity first, then performance, then context.
    let classes: Vec<ImpactClass> = changes.iter().map(|c| c.class).collect();
    let mut sorted = classes.clone();
    sorted.sort();
    assert_eq!(classes, sorted, "changes not ordered by impact");
    let first_perf = changes
        .iter()
        .position(|c| c.class == ImpactClass::Performance)
        .expect("some performance change (mitigations, frequency)");
    assert!(
        changes[..first_perf]
            .iter()
            .all(|c| c.class == ImpactClass::Identity)
    );
    assert!(first_perf >= 8, "few identity changes: {changes:#?}");
    assert!(
        changes
            .iter()
            .any(|c| c.key == "mitigation.spectre_v2" && c.class == ImpactClass::Performance)
    );
    assert_eq!(changes[0].key, "cpu.model", "the CPU comes first");
    for c in &changes {
        assert!(!c.why.is_empty(), "{} has no explanation", c.key);
    }
    assert!(diff(&intel, &intel).is_empty());
}

/// One CPU change is one line: vendor, family, model and stepping are
/// folded into the `cpu.model` change, and the cache sizes follow it.
#[test]
fn diff_folds_the_cpu_identity_into_one_line() {
    let changes = diff(&tree(AMD), &tree(INTEL));
    assert_eq!(changes[0].key, "cpu.model");
    assert!(
        changes[0].summary.contains("family 25 → 6")
            && changes[0].summary.contains("model 1 → 106"),
        "{}",
        changes[0].summary
    );
    for folded in [
        "cpu.brand",
        "cpu.vendor",
        "cpu.family",
        "cpu.model_id",
        "cpu.stepping",
    ] {
        assert!(
            !changes.iter().any(|c| c.key == folded),
            "{folded} is listed separately"
        );
    }
    assert!(
        changes
            .iter()
            .any(|c| c.summary == "L2: 512 KiB → 1280 KiB")
    );
}

#[test]
fn check_container_finds_throttling_and_the_quota() {
    let findings = check(&tree(CONTAINER));
    assert!(has_problems(&findings), "{findings:#?}");
    let throttled = findings
        .iter()
        .find(|f| f.key == "cgroup.cpu.nr_throttled")
        .unwrap_or_else(|| panic!("no throttling finding: {findings:#?}"));
    assert_eq!(throttled.severity, Severity::Problem);
    assert!(throttled.message.contains("61237"), "{throttled:?}");
    assert!(!throttled.recommendation.is_empty());
    let quota = findings
        .iter()
        .find(|f| f.key == "cgroup.cpu.quota")
        .unwrap_or_else(|| panic!("no quota finding: {findings:#?}"));
    assert_eq!(quota.severity, Severity::Warning);
    assert!(quota.message.contains("0.5 CPU"), "{quota:?}");
    // Most serious first.
    assert_eq!(findings[0].severity, Severity::Problem);
    let sev: Vec<Severity> = findings.iter().map(|f| f.severity).collect();
    let mut sorted = sev.clone();
    sorted.sort_by(|a, b| b.cmp(a));
    assert_eq!(sev, sorted);
    // isolcpus is set: no "no CPUs are isolated" finding.
    assert!(!findings.iter().any(|f| f.key == "kernel.param.isolcpus"));
}

#[test]
fn check_azure_vms_find_no_problem() {
    for name in [INTEL, AMD] {
        let findings = check(&tree(name));
        assert!(!has_problems(&findings), "{name}: {findings:#?}");
        assert!(
            !findings.iter().any(|f| f.key.starts_with("cgroup.")),
            "{name}: {findings:#?}"
        );
    }
}

/// kernel.aslr is recorded as off/partial/full; check must not call
/// `off` "on".
#[test]
fn check_does_not_report_aslr_when_it_is_off() {
    let (_tmp, root) = copy_of(CONTAINER);
    std::fs::write(root.join("proc/sys/kernel/randomize_va_space"), "0\n").unwrap();
    let env = capture(&Source::root(&root), None);
    assert_eq!(val(&env, "kernel.aslr"), "off");
    let findings = check(&env);
    assert!(
        !findings.iter().any(|f| f.key == "kernel.aslr"),
        "ASLR reported although off: {findings:#?}"
    );
}

// ---------------------------------------------------------------------------
// CPUID from another file
// ---------------------------------------------------------------------------

#[test]
fn a_tree_without_a_dump_takes_cpuid_from_an_explicit_file() {
    let (_tmp, root) = copy_of(INTEL);
    std::fs::remove_file(root.join("cpuid.txt")).unwrap();

    let without = capture(&Source::root(&root), None);
    expect_unknown(&without, "cpu.brand", "cpuid.txt");
    expect_unknown(&without, "cpu.cache.cpuid_check", "cpuid.txt");
    // cpuinfo still gives the rest.
    assert_eq!(
        val(&without, "cpu.model"),
        "Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz"
    );
    assert_eq!(val(&without, "cpu.vendor"), "GenuineIntel");
    assert_eq!(val(&without, "cpu.model_id"), "106");

    // Its own dump, given explicitly: the same as with cpuid.txt in place.
    let own = Source::root(&root)
        .with_cpuid_file(&fixture(INTEL).join("cpuid.txt"))
        .unwrap();
    let own = capture(&own, None);
    expect(
        &own,
        "intel + own dump",
        &[
            ("cpu.brand", "Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz"),
            ("cpu.cache.cpuid_check", "agrees"),
            ("virt.hypervisor", "Hyper-V"),
        ],
    );

    // Another machine's dump: CPUID facts follow the dump, cpuinfo facts the tree.
    let other = Source::root(&root)
        .with_cpuid_file(&fixture(CONTAINER).join("cpuid.txt"))
        .unwrap();
    let other = capture(&other, None);
    expect(
        &other,
        "intel + container dump",
        &[
            ("cpu.brand", "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz"),
            ("cpu.model", "Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz"),
            ("cpu.family", "6"),
            ("cpu.model_id", "85"),
            ("cpu.stepping", "4"),
            ("virt.hypervisor", "KVM"),
        ],
    );
    let check = val(&other, "cpu.cache.cpuid_check");
    assert!(
        check.starts_with("differs: ") && check.contains("l1d sysfs 48 KiB vs cpuid 32 KiB"),
        "{check}"
    );

    // The explicit file also replaces a tree's own dump.
    let replaced = Source::root(fixture(AMD))
        .with_cpuid_file(&fixture(INTEL).join("cpuid.txt"))
        .unwrap();
    let replaced = capture(&replaced, None);
    assert_eq!(val(&replaced, "cpu.vendor"), "GenuineIntel");
    assert_eq!(
        val(&replaced, "cpu.model"),
        "AMD EPYC 7763 64-Core Processor"
    );
}

#[test]
fn a_bad_cpuid_file_is_an_error() {
    let garbage = Source::root(fixture(INTEL)).with_cpuid_file(&fixture(GARBAGE).join("cpuid.txt"));
    let err = garbage.expect_err("the garbage dump must be rejected");
    assert!(matches!(err, EnvError::CpuidDump { .. }), "{err}");
    assert!(err.to_string().contains("cpuid.txt"), "{err}");
    let missing = Source::root(fixture(INTEL)).with_cpuid_file(Path::new("/nonexistent/cpuid.txt"));
    let err = missing.expect_err("a missing dump is an error");
    assert!(matches!(err, EnvError::CpuidFile { .. }), "{err}");
    assert!(err.to_string().contains("/nonexistent/cpuid.txt"), "{err}");
}

// ---------------------------------------------------------------------------
// binary_facts
// ---------------------------------------------------------------------------

fn system_true() -> PathBuf {
    ["/bin/true", "/usr/bin/true"]
        .into_iter()
        .map(PathBuf::from)
        .find(|p| p.exists())
        .expect("a true binary")
}

#[test]
fn binary_facts_of_an_elf_program() {
    let path = system_true();
    let f = binary_facts(&path);
    let sha = val(&f, "binary.sha256");
    assert_eq!(sha.len(), 64, "{sha}");
    assert!(
        sha.chars()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()),
        "{sha}"
    );
    if cfg!(target_arch = "x86_64") {
        expect(
            &f,
            "true",
            &[
                ("binary.elf_class", "ELF64"),
                ("binary.machine", "x86-64"),
                ("binary.abi", "x86-64"),
            ],
        );
    }
    let build_id = val(&f, "binary.build_id");
    assert!(
        build_id != UNKNOWN && !build_id.is_empty(),
        "build id: {:?}",
        f.facts["binary.build_id"]
    );
    assert!(
        build_id.chars().all(|c| c.is_ascii_hexdigit()),
        "{build_id}"
    );
    let interp = val(&f, "binary.interpreter");
    assert!(
        interp.starts_with('/') && interp.contains("ld-"),
        "{interp}"
    );
    // binary.path is the resolved file.
    let resolved = std::fs::canonicalize(&path).unwrap();
    assert_eq!(val(&f, "binary.path"), resolved.display().to_string());
    for fact in f.facts.values() {
        assert_eq!(fact.class, ImpactClass::Identity);
    }
    // The hash matches sha256sum where that exists.
    if let Ok(out) = std::process::Command::new("sha256sum").arg(&path).output() {
        if out.status.success() {
            let text = String::from_utf8_lossy(&out.stdout);
            assert_eq!(text.split_whitespace().next(), Some(sha));
        }
    }
}

#[test]
fn binary_facts_of_a_script() {
    let tmp = TempDir::new("script");
    let script = tmp.0.join("bench.sh");
    std::fs::write(&script, "#!/bin/sh -e\necho hi\n").unwrap();
    let f = binary_facts(&script);
    assert_eq!(val(&f, "binary.interpreter"), "#!/bin/sh -e");
    // SHA-256 of "#!/bin/sh -e\necho hi\n".
    let sha = val(&f, "binary.sha256");
    assert_eq!(sha.len(), 64);
    let other = tmp.0.join("other.sh");
    std::fs::write(&other, "#!/bin/sh -e\necho ho\n").unwrap();
    assert_ne!(val(&binary_facts(&other), "binary.sha256"), sha);
    assert_eq!(val(&binary_facts(&script), "binary.sha256"), sha);
    assert_eq!(val(&f, "binary.elf_class"), "not ELF");

    let missing = binary_facts(&tmp.0.join("nope"));
    expect_unknown(&missing, "binary.sha256", "nope");
    expect_unknown(&missing, "binary.interpreter", "nope");
}
