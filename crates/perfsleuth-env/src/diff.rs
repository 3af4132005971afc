//! What changed between two environments, ordered by impact, each change
//! with one line on why it can move results.

use perfsleuth_model::{Environment, ImpactClass};
use std::collections::BTreeSet;

/// One changed fact (or a group of related ones, like the ISA flags).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Change {
    /// The fact's key.
    pub key: String,
    /// The more severe of the two sides' classes.
    pub class: ImpactClass,
    /// Value on side A (`None`: not recorded there).
    pub before: Option<String>,
    /// Value on side B.
    pub after: Option<String>,
    /// What changed, in words: "L2 512 KiB → 1280 KiB".
    pub summary: String,
    /// Why it can move results.
    pub why: &'static str,
}

/// The facts that differ between `a` and `b`, identity first, then
/// performance, then context; within a class, CPU before kernel before the rest.
pub fn diff(a: &Environment, b: &Environment) -> Vec<Change> {
    let keys: BTreeSet<&String> = a.facts.keys().chain(b.facts.keys()).collect();
    let mut changes: Vec<Change> = keys
        .into_iter()
        .filter_map(|key| {
            let fa = a.facts.get(key);
            let fb = b.facts.get(key);
            let va = fa.map(|f| f.value.as_str());
            let vb = fb.map(|f| f.value.as_str());
            if va == vb {
                return None;
            }
            let mut class = match (fa, fb) {
                (Some(x), Some(y)) => x.class.min(y.class),
                (Some(x), None) | (None, Some(x)) => x.class,
                (None, None) => return None,
            };
            // A fact one side could not read, or did not record at all (an
            // older perfsleuth), says nothing about the machines differing:
            // shown as context, never judged. Boot parameters and mitigation
            // files are the exception: their absence is itself the state.
            let absence_is_state =
                key.starts_with("kernel.param.") || key.starts_with("mitigation.");
            let unknown = |v: Option<&str>| v == Some(perfsleuth_model::UNKNOWN);
            if unknown(va) || unknown(vb) || ((va.is_none() || vb.is_none()) && !absence_is_state) {
                class = ImpactClass::Context;
            }
            Some(Change {
                key: key.clone(),
                class,
                before: va.map(str::to_string),
                after: vb.map(str::to_string),
                summary: summarize(key, va, vb),
                why: why(key),
            })
        })
        .collect();
    changes.sort_by_key(|c| (c.class, rank(&c.key), c.key.clone()));
    fold_cpu_identity(&mut changes);
    changes
}

/// Changes that decide whether two environments count as different (context
/// facts like load and uptime always differ and never count).
pub fn significant(changes: &[Change]) -> impl Iterator<Item = &Change> {
    changes.iter().filter(|c| c.class != ImpactClass::Context)
}

fn rank(key: &str) -> usize {
    // By impact: what changes the machine first, then what changes how it
    // runs the code (quotas and frequency before mitigations and boot text).
    // Entries ending in '.' are prefixes; the others are exact keys.
    const ORDER: [&str; 30] = [
        "cpu.model",
        "cpu.brand",
        "cpu.vendor",
        "cpu.family",
        "cpu.model_id",
        "cpu.stepping",
        "virt.hypervisor",
        "virt.dmi.",
        "cpu.logical_cores",
        "cpu.physical_cores",
        "cpu.sockets",
        "cpu.cache.",
        "cpu.flags",
        "cpu.isa_level",
        "kernel.release",
        "libc.version",
        "libc.hwcaps",
        "cgroup.cpu.",
        "cpu.freq.",
        "cpu.boost",
        "cpu.smt",
        "process.affinity",
        "cgroup.cpuset",
        "mitigation.",
        "libc.",
        "env.",
        "cpu.",
        "mem.",
        "kernel.param.",
        "kernel.",
    ];
    let base = ORDER
        .iter()
        .position(|p| {
            if p.ends_with('.') {
                key.starts_with(p)
            } else {
                key == *p
            }
        })
        .unwrap_or(ORDER.len());
    // Within a cache level the size comes first; the boot command line last.
    let minor = if key.starts_with("cpu.cache.") && !key.ends_with(".size") {
        1
    } else if key == "kernel.cmdline" {
        2
    } else {
        0
    };
    base * 3 + minor
}

/// Folds the CPU's vendor/family/model/stepping/brand changes into the
/// `cpu.model` line: one CPU change, one line.
fn fold_cpu_identity(changes: &mut Vec<Change>) {
    let Some(model) = changes.iter().position(|c| c.key == "cpu.model") else {
        return;
    };
    let parts = [
        ("cpu.vendor", "vendor"),
        ("cpu.family", "family"),
        ("cpu.model_id", "model"),
        ("cpu.stepping", "stepping"),
    ];
    let mut details = Vec::new();
    for (key, name) in parts {
        if let Some(c) = changes.iter().find(|c| c.key == key) {
            details.push(format!(
                "{name} {} → {}",
                c.before.as_deref().unwrap_or("?"),
                c.after.as_deref().unwrap_or("?")
            ));
        }
    }
    if !details.is_empty() {
        changes[model]
            .summary
            .push_str(&format!(" ({})", details.join(", ")));
    }
    changes.retain(|c| {
        !matches!(
            c.key.as_str(),
            "cpu.vendor" | "cpu.family" | "cpu.model_id" | "cpu.stepping" | "cpu.brand"
        )
    });
}

/// "Mitigation: Retpolines; IBPB: conditional; …" → "Retpolines".
fn short_mitigation(v: &str) -> &str {
    let v = v.strip_prefix("Mitigation: ").unwrap_or(v);
    v.split(';').next().unwrap_or(v).trim()
}

fn summarize(key: &str, a: Option<&str>, b: Option<&str>) -> String {
    // A boot parameter or variable missing on one side was not set there.
    let absent = if key.starts_with("kernel.param.") || key.starts_with("env.") {
        "(not set)"
    } else {
        "(not recorded)"
    };
    let show = |v: Option<&str>| v.unwrap_or(absent).to_string();
    if key.starts_with("mitigation.") {
        let (sa, sb) = (a.map(short_mitigation), b.map(short_mitigation));
        if sa != sb {
            return format!("{}: {} → {}", label(key), show(sa), show(sb));
        }
    }
    if key == "cpu.flags" {
        if let (Some(a), Some(b)) = (a, b) {
            return flag_summary(a, b);
        }
    }
    format!("{}: {} → {}", label(key), show(a), show(b))
}

/// "ISA flags: 27 only in B (avx512f, avx512bw, …); 2 only in A (…)".
fn flag_summary(a: &str, b: &str) -> String {
    let sa: BTreeSet<&str> = a.split_whitespace().collect();
    let sb: BTreeSet<&str> = b.split_whitespace().collect();
    let list = |mut set: Vec<&&str>, side: &str| {
        // The vector extensions matter most to performance: name them first.
        set.sort_by_key(|f| {
            (
                !f.starts_with("avx512") && !f.starts_with("amx"),
                !f.starts_with("avx"),
                **f,
            )
        });
        let shown: Vec<&str> = set.iter().take(8).map(|s| **s).collect();
        let more = if set.len() > 8 { ", …" } else { "" };
        format!("{} only in {side} ({}{more})", set.len(), shown.join(", "))
    };
    let only_b: Vec<&&str> = sb.difference(&sa).collect();
    let only_a: Vec<&&str> = sa.difference(&sb).collect();
    let mut parts = Vec::new();
    if !only_b.is_empty() {
        parts.push(list(only_b, "B"));
    }
    if !only_a.is_empty() {
        parts.push(list(only_a, "A"));
    }
    format!("ISA flags: {}", parts.join("; "))
}

/// A short human name for well-known keys; the key itself otherwise.
fn label(key: &str) -> String {
    if let Some(rest) = key.strip_prefix("cpu.cache.") {
        let (level, what) = rest.split_once('.').unwrap_or((rest, ""));
        let level = level.to_uppercase().replace('D', "d").replace('I', "i");
        return match what {
            "size" => level,
            "" => key.to_string(),
            other => format!("{level} {}", other.replace('_', " ")),
        };
    }
    if let Some(name) = key.strip_prefix("mitigation.") {
        return name.to_string();
    }
    match key {
        "cpu.model" => "CPU".into(),
        "cpu.flags" => "ISA flags".into(),
        "cgroup.cpu.quota" => "cgroup CPU quota".into(),
        "cpu.freq.governor" => "frequency governor".into(),
        "cpu.boost" => "turbo/boost".into(),
        "kernel.release" => "kernel".into(),
        "libc.version" => "libc".into(),
        "libc.hwcaps" => "glibc-hwcaps level".into(),
        "virt.hypervisor" => "hypervisor".into(),
        _ => key.to_string(),
    }
}

/// One line on why a change of this fact can move results.
pub fn why(key: &str) -> &'static str {
    const WHY: [(&str, &str); 32] = [
        (
            "cpu.cache.",
            "cache sizes decide which working sets fit; memory-bound code moves most",
        ),
        (
            "cpu.flags",
            "libraries choose code paths from CPU features at run time (glibc ifuncs, SIMD dispatch)",
        ),
        (
            "cpu.isa_level",
            "libraries choose code paths from CPU features at run time (glibc ifuncs, SIMD dispatch)",
        ),
        (
            "cpu.microcode",
            "microcode updates change mitigations and instruction costs",
        ),
        (
            "cpu.smt",
            "SMT siblings share one core's caches and execution units",
        ),
        (
            "cpu.freq.",
            "frequency scaling changes how fast the same instructions run",
        ),
        (
            "cpu.boost",
            "turbo clocks depend on temperature and on what other cores do",
        ),
        ("cpu.idle.", "deep idle states add wake-up latency"),
        (
            "cpu.online",
            "fewer online CPUs change parallel results and interference",
        ),
        (
            "cpu.logical_cores",
            "a different core count changes parallel results",
        ),
        (
            "cpu.physical_cores",
            "a different core count changes parallel results",
        ),
        (
            "cpu.sockets",
            "a different socket count changes memory placement and parallel results",
        ),
        (
            "cpu.",
            "a different CPU: results are not comparable; compare like with like",
        ),
        (
            "mem.numa",
            "memory placement across NUMA nodes changes latency and bandwidth",
        ),
        (
            "mem.thp",
            "transparent huge pages change TLB misses and page-fault costs",
        ),
        (
            "mem.",
            "memory size and page size change caching and paging",
        ),
        (
            "mitigation.",
            "indirect branches and system calls may cost more",
        ),
        (
            "kernel.param.",
            "boot parameters change isolation, idle and mitigation behaviour",
        ),
        (
            "kernel.cmdline",
            "boot parameters change isolation, idle and mitigation behaviour",
        ),
        (
            "kernel.aslr",
            "address randomisation changes alignment and cache conflicts from run to run",
        ),
        (
            "kernel.clocksource",
            "a slow clocksource makes every timing call expensive",
        ),
        (
            "kernel.perf_event_paranoid",
            "decides which hardware counters can be read",
        ),
        (
            "kernel.",
            "the kernel changes scheduling, system-call costs and mitigations",
        ),
        (
            "libc.tunables",
            "glibc tunables change malloc and string-function behaviour",
        ),
        (
            "libc.",
            "glibc picks memcpy/malloc variants by version, CPU level and cache sizes",
        ),
        (
            "env.",
            "this variable changes how the program or its libraries run",
        ),
        (
            "virt.container",
            "containers bring cgroup limits and different I/O paths",
        ),
        (
            "virt.",
            "a different hypervisor or instance type: results are not comparable",
        ),
        (
            "cgroup.cpu",
            "a CPU quota throttles the benchmark when it is exceeded",
        ),
        (
            "cgroup.memory",
            "a memory limit can force reclaim during the run",
        ),
        ("process.affinity", "which CPUs the benchmark may run on"),
        ("binary.", "a different binary: the code changed"),
    ];
    if key.starts_with("cgroup.cpuset") {
        return "which CPUs the benchmark may run on";
    }
    if key.starts_with("os.") {
        return "a different OS build brings different libraries and defaults";
    }
    WHY.iter()
        .find(|(prefix, _)| key.starts_with(prefix))
        .map_or("recorded for context; not judged", |(_, w)| w)
}

#[cfg(test)]
mod tests {
    use super::*;
    use ImpactClass::*;

    fn env(facts: &[(&str, &str, ImpactClass)]) -> Environment {
        let mut e = Environment::default();
        for (k, v, c) in facts {
            e.set(*k, *v, *c);
        }
        e
    }

    #[test]
    fn orders_by_impact_and_explains() {
        let a = env(&[
            ("cpu.model", "AMD EPYC 7763 64-Core Processor", Identity),
            ("cpu.cache.l2.size", "512 KiB", Identity),
            (
                "mitigation.spectre_v2",
                "Mitigation: Retpolines",
                Performance,
            ),
            ("noise.loadavg", "0.10 0.20 0.30", Context),
            ("kernel.release", "6.5.0", Identity),
        ]);
        let b = env(&[
            (
                "cpu.model",
                "Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz",
                Identity,
            ),
            ("cpu.cache.l2.size", "1280 KiB", Identity),
            ("mitigation.spectre_v2", "Mitigation: IBRS", Performance),
            ("noise.loadavg", "1.00 0.20 0.30", Context),
            ("kernel.release", "6.5.0", Identity),
        ]);
        let d = diff(&a, &b);
        let keys: Vec<&str> = d.iter().map(|c| c.key.as_str()).collect();
        assert_eq!(
            keys,
            [
                "cpu.model",
                "cpu.cache.l2.size",
                "mitigation.spectre_v2",
                "noise.loadavg"
            ]
        );
        assert_eq!(d[1].summary, "L2: 512 KiB → 1280 KiB");
        assert_eq!(d[2].summary, "spectre_v2: Retpolines → IBRS");
        assert!(d[2].why.contains("system calls"));
        assert_eq!(significant(&d).count(), 3);
        assert!(diff(&a, &a).is_empty());
    }

    #[test]
    fn one_cpu_change_is_one_line() {
        let a = env(&[
            ("cpu.model", "AMD EPYC 7763", Identity),
            ("cpu.vendor", "AuthenticAMD", Identity),
            ("cpu.family", "25", Identity),
            ("cpu.model_id", "1", Identity),
            ("cpu.brand", "AMD EPYC 7763", Identity),
        ]);
        let b = env(&[
            ("cpu.model", "Xeon 8370C", Identity),
            ("cpu.vendor", "GenuineIntel", Identity),
            ("cpu.family", "6", Identity),
            ("cpu.model_id", "106", Identity),
            ("cpu.brand", "Xeon 8370C", Identity),
        ]);
        let d = diff(&a, &b);
        assert_eq!(d.len(), 1);
        assert_eq!(
            d[0].summary,
            "CPU: AMD EPYC 7763 → Xeon 8370C (vendor AuthenticAMD → GenuineIntel, family 25 → 6, model 1 → 106)"
        );
    }

    #[test]
    fn quota_comes_before_mitigations_and_boot_text() {
        let a = env(&[
            ("kernel.cmdline", "ro quiet", Performance),
            ("mitigation.mds", "Vulnerable", Performance),
            ("cgroup.cpu.quota", "none", Performance),
        ]);
        let b = env(&[
            ("kernel.cmdline", "ro", Performance),
            ("mitigation.mds", "Not affected", Performance),
            ("cgroup.cpu.quota", "0.5 CPU", Performance),
        ]);
        let keys: Vec<String> = diff(&a, &b).into_iter().map(|c| c.key).collect();
        assert_eq!(
            keys,
            ["cgroup.cpu.quota", "mitigation.mds", "kernel.cmdline"]
        );
    }

    #[test]
    fn unread_or_unrecorded_facts_are_not_judged() {
        let mut a = env(&[
            ("cpu.model", "X", Identity),
            ("kernel.param.isolcpus", "2", Performance),
        ]);
        a.set_read("cpu.cache.l3.size", Err("cannot read".into()), Identity);
        let b = env(&[
            ("cpu.model", "X", Identity),
            ("cpu.cache.l3.size", "32768 KiB", Identity),
            ("cpu.family", "25", Identity),
        ]);
        let d = diff(&a, &b);
        assert_eq!(
            significant(&d).map(|c| c.key.as_str()).collect::<Vec<_>>(),
            ["kernel.param.isolcpus"]
        );
        assert!(
            d.iter()
                .any(|c| c.key == "cpu.family" && c.class == Context)
        );
    }

    #[test]
    fn flags_are_compared_as_sets() {
        let a = env(&[("cpu.flags", "avx avx2 fpu sse", Identity)]);
        let b = env(&[("cpu.flags", "avx avx2 avx512bw avx512f fpu", Identity)]);
        let d = diff(&a, &b);
        assert_eq!(
            d[0].summary,
            "ISA flags: 2 only in B (avx512bw, avx512f); 1 only in A (sse)"
        );
    }

    #[test]
    fn missing_on_one_side_is_a_change() {
        let a = env(&[("cgroup.cpu.quota", "none", Performance)]);
        let b = env(&[
            ("cgroup.cpu.quota", "0.5 CPU", Performance),
            ("env.OMP_NUM_THREADS", "4", Performance),
        ]);
        let d = diff(&a, &b);
        assert_eq!(d.len(), 2);
        let quota = d.iter().find(|c| c.key == "cgroup.cpu.quota").unwrap();
        assert_eq!(quota.summary, "cgroup CPU quota: none → 0.5 CPU");
        let omp = d.iter().find(|c| c.key == "env.OMP_NUM_THREADS").unwrap();
        assert_eq!(omp.before, None);
        assert!(omp.summary.contains("(not set) → 4"));
    }
}
