//! The proof issue 7 asks for: on this machine, the memory ladder's steps lie
//! within one ladder step of the fingerprint's cache sizes. Quick mode (a
//! ladder of factor 2, so one step is a factor of 2); both sides printed;
//! up to three attempts before failing.
//!
//! One allowance, printed when used: the last-level cache is shared. When
//! other CPUs were busy while the ladder ran, or the machine is a VM (whose
//! host shares the L3 with other tenants, or partitions it, out of the
//! guest's sight), the L3 this thread gets can be smaller than the size the
//! fingerprint reads from CPUID/sysfs, and an LLC step *below* it is a
//! measurement of that, not a probe error. The L1 and L2 are private and get
//! no allowance. Set `PERFSLEUTH_STRICT_LLC=1` to refuse it.
//!
//! Its own test binary, so no other test of this crate runs meanwhile.

use perfsleuth_env::{Source, capture};
use perfsleuth_probe::{CacheSizes, ProbeOptions, fmt_bytes, run};

/// (busy, total) jiffies of all CPUs, counting steal as busy.
fn cpu_jiffies() -> Option<(u64, u64)> {
    let stat = std::fs::read_to_string("/proc/stat").ok()?;
    let line = stat.lines().next()?;
    let v: Vec<u64> = line
        .split_whitespace()
        .skip(1)
        .filter_map(|x| x.parse().ok())
        .collect();
    // user nice system idle iowait irq softirq steal guest guest_nice
    let total: u64 = v.iter().take(8).sum();
    let idle = v.get(3)? + v.get(4).unwrap_or(&0);
    Some((total - idle, total))
}

#[test]
fn memory_ladder_steps_match_the_fingerprint_cache_sizes() {
    let env = capture(&Source::live(), None);
    let caches = CacheSizes::from_environment(&env);
    let cpus = ProbeOptions::default().cpus.max(1);
    let known: Vec<(&str, u64)> = [("l1", caches.l1d), ("l2", caches.l2), ("l3", caches.l3)]
        .into_iter()
        .filter_map(|(n, s)| s.map(|s| (n, s)))
        .collect();
    if known.is_empty() {
        eprintln!("the fingerprint has no cache sizes on this machine: nothing to compare");
        return;
    }
    let llc = known.last().unwrap().0;
    let strict = std::env::var_os("PERFSLEUTH_STRICT_LLC").is_some();
    let hypervisor = env
        .get("virt.hypervisor")
        .filter(|h| !["none", "unknown"].contains(h))
        .map(str::to_string);
    let opts = ProbeOptions {
        quick: true,
        caches,
        ..ProbeOptions::default()
    };
    let mut failures = Vec::new();
    for attempt in 1..=3 {
        let before = cpu_jiffies();
        let r = run("memory", &opts);
        let after = cpu_jiffies();
        // Share of the other CPUs that was busy while the ladder ran (our
        // own thread keeps one CPU busy).
        let others_busy = match (before, after) {
            (Some((b0, t0)), Some((b1, t1))) if t1 > t0 && cpus > 1 => {
                let busy = (b1 - b0) as f64 / (t1 - t0) as f64 * cpus as f64;
                ((busy - 1.0) / (cpus - 1) as f64).clamp(0.0, 1.0)
            }
            _ => 0.0,
        };
        eprintln!(
            "attempt {attempt}: level  fingerprint  ladder step  apart (steps of ×2)   [other CPUs busy {:.0} %]",
            others_busy * 100.0
        );
        let mut bad = Vec::new();
        // The level below the last one was found where the fingerprint puts
        // it: the ladder works, so a missing last step is the machine's.
        let below_llc_found = known.len() >= 2 && {
            let (name, size) = known[known.len() - 2];
            r.measurements
                .iter()
                .find(|m| m.metric == format!("{name}_size"))
                .is_some_and(|m| (m.value / size as f64).log2().abs() <= 1.0 + 1e-9)
        };
        for &(name, size) in &known {
            let step = r
                .measurements
                .iter()
                .find(|m| m.metric == format!("{name}_size"))
                .map(|m| m.value as u64);
            let apart = step.map(|s| (s as f64 / size as f64).log2());
            eprintln!(
                "           {:<5}  {:>11}  {:>11}  {}",
                name.to_uppercase(),
                fmt_bytes(size),
                step.map(fmt_bytes).unwrap_or_else(|| "none".into()),
                apart.map(|a| format!("{a:+.1}")).unwrap_or_default()
            );
            match apart {
                Some(a) if a.abs() <= 1.0 + 1e-9 => {}
                Some(a)
                    if name == llc
                        && a < 0.0
                        && !strict
                        && (others_busy > 0.25 || hypervisor.is_some()) =>
                {
                    eprintln!(
                        "           allowance: the {} is shared ({}); this thread got about {}",
                        name.to_uppercase(),
                        match &hypervisor {
                            Some(h) => format!("a {h} guest: the host's other tenants use it too"),
                            None => format!("other CPUs were {:.0} % busy", others_busy * 100.0),
                        },
                        fmt_bytes(step.unwrap())
                    );
                    let _ = a;
                }
                // A guest can get none of the host's shared last-level cache
                // at all: latency jumps from L2 straight to DRAM (seen on a
                // KVM guest whose fingerprint says L3 105 MiB: 8 ns at 1 MiB,
                // 110+ ns from 2 MiB on). Accepted only on a VM guest whose
                // L2 step was found where the fingerprint says (so the ladder
                // itself works), like a smaller step; PERFSLEUTH_STRICT_LLC
                // still refuses it.
                None if name == llc && !strict && hypervisor.is_some() && below_llc_found => {
                    eprintln!(
                        "           allowance: no {} step at all: this {} guest gets none of the shared cache",
                        name.to_uppercase(),
                        hypervisor.as_deref().unwrap_or_default()
                    );
                }
                _ => bad.push(format!(
                    "{}: fingerprint {}, ladder {}",
                    name.to_uppercase(),
                    fmt_bytes(size),
                    step.map(fmt_bytes).unwrap_or_else(|| "no step".into())
                )),
            }
        }
        let ladder: Vec<String> = r
            .measurements
            .iter()
            .filter_map(|m| {
                let size: u64 = m.metric.strip_prefix("ladder_")?.parse().ok()?;
                Some(format!("{} {:.1}", fmt_bytes(size), m.value))
            })
            .collect();
        eprintln!("           ladder (ns): {}", ladder.join(", "));
        for m in &r.messages {
            eprintln!("           note: {m}");
        }
        if bad.is_empty() {
            return;
        }
        failures.push(format!("attempt {attempt}: {}", bad.join("; ")));
    }
    panic!(
        "the memory ladder's steps are more than one step from the fingerprint's cache sizes:\n{}",
        failures.join("\n")
    );
}
