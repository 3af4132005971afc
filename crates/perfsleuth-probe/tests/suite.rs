//! Every probe in quick mode on this machine: the results are well formed
//! (finite, positive, the expected metrics present). No timing thresholds.
//! Plus the bad-input paths: one CPU, no pinning, a small memory limit.

use perfsleuth_env::{Source, capture};
use perfsleuth_probe::{CacheSizes, PROBES, ProbeOptions, ProbeReport, ProbeResult, run};

fn opts() -> ProbeOptions {
    // Only the cache sizes are needed: no counter probe.
    let env = capture(&Source::live(), None);
    ProbeOptions {
        quick: true,
        caches: CacheSizes::from_environment(&env),
        ..ProbeOptions::default()
    }
}

fn well_formed(r: &ProbeReport) {
    assert!(
        !r.measurements.is_empty(),
        "{}: no measurements: {:?}",
        r.probe,
        r.messages
    );
    for m in &r.measurements {
        assert_eq!(m.probe, r.probe);
        assert!(m.value.is_finite() && m.value > 0.0, "{m:?}");
        assert!(m.spread.is_finite() && m.spread >= 0.0, "{m:?}");
        assert!(
            ["ns", "GB/s", "ops/s", "bytes", "ratio"].contains(&m.unit.as_str()),
            "{m:?}"
        );
        if let Some(c) = m.cycles {
            assert!(c.is_finite() && c > 0.0 && m.unit == "ns", "{m:?}");
        }
        // Sizes carry the ladder's resolution as their spread.
        if m.stable && m.unit != "bytes" {
            assert!(m.spread <= perfsleuth_probe::STABLE_SPREAD, "{m:?}");
        }
    }
    let mut names: Vec<&str> = r.measurements.iter().map(|m| m.metric.as_str()).collect();
    names.sort();
    let n = names.len();
    names.dedup();
    assert_eq!(n, names.len(), "duplicate metrics in {}", r.probe);
    assert!(r.measurements.iter().any(|m| m.headline), "{}", r.probe);
}

fn has(r: &ProbeReport, metrics: &[&str]) {
    for want in metrics {
        assert!(
            r.measurements.iter().any(|m| m.metric == *want),
            "{}: {want} missing; have {:?}; messages {:?}",
            r.probe,
            r.measurements.iter().map(|m| &m.metric).collect::<Vec<_>>(),
            r.messages
        );
    }
}

fn print(r: &ProbeReport) {
    eprintln!("{} ({:.2} s)", r.probe, r.duration.as_secs_f64());
    for m in r.measurements.iter().filter(|m| m.headline) {
        eprintln!(
            "  {:<34} {:>12.3} {:<6} spread {:.1} %{}",
            m.metric,
            m.value,
            m.unit,
            m.spread * 100.0,
            if m.stable { "" } else { " UNSTABLE" }
        );
    }
    for msg in &r.messages {
        eprintln!("  note: {msg}");
    }
}

#[test]
fn every_probe_runs_in_quick_mode_and_is_well_formed() {
    let o = opts();
    let mut total = std::time::Duration::ZERO;
    for name in PROBES {
        let r = run(name, &o);
        print(&r);
        total += r.duration;
        well_formed(&r);
        let expected: &[&str] = match name {
            "calls" => &[
                "inline_loop",
                "direct_call",
                "indirect_call",
                "indirect_call_unpredictable",
                "direct_call_ratio",
                "indirect_call_ratio",
                "indirect_call_unpredictable_ratio",
            ],
            "syscall" => &[
                "getppid",
                "clock_gettime_vdso",
                "clock_gettime_syscall",
                "vdso_speedup",
            ],
            "memory" => &["l1_latency", "dram_latency", "ladder_4096"],
            "bandwidth" => &["read_bandwidth", "write_bandwidth", "copy_bandwidth"],
            "coherency" => &[
                "mutex_counter_t1",
                "atomic_counter_t1",
                "padded_counter_t1",
                "false_sharing_counter_t1",
            ],
            "clock" => &[
                "monotonic_read",
                "monotonic_resolution",
                "monotonic_coarse_read",
            ],
            "spawn" => &["fork_wait"],
            _ => unreachable!(),
        };
        has(&r, expected);
        if ["calls", "syscall", "memory", "clock"].contains(&name) {
            let c = r.clock.as_ref().expect("a calibrated clock");
            assert!(c.how.contains("estimated") || c.ghz.is_none(), "{c:?}");
        }
        if name == "memory" && o.caches.l2.is_some() {
            has(&r, &["l2_latency"]);
        }
        if name == "coherency" && o.cpus >= 2 {
            has(
                &r,
                &[
                    "core_to_core_round_trip",
                    "mutex_counter_t2",
                    "false_sharing_counter_t2",
                ],
            );
        }
        // Reports travel as JSON (the store, `--json`).
        let json = serde_json::to_string(&r).unwrap();
        let back: ProbeReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back.measurements.len(), r.measurements.len());
        for (x, y) in back.measurements.iter().zip(&r.measurements) {
            assert_eq!(
                (&x.metric, &x.unit, x.stable),
                (&y.metric, &y.unit, y.stable)
            );
            assert!((x.value - y.value).abs() <= 1e-12 * y.value.abs());
        }
        assert_eq!(back.messages, r.messages);
    }
    eprintln!("quick suite: {:.2} s", total.as_secs_f64());
}

#[test]
fn one_cpu_skips_the_round_trip_and_says_why() {
    let o = ProbeOptions { cpus: 1, ..opts() };
    let r = run("coherency", &o);
    print(&r);
    well_formed(&r);
    assert!(
        r.messages.iter().any(|m| m.contains("needs two CPUs")),
        "{:?}",
        r.messages
    );
    assert!(
        !r.measurements
            .iter()
            .any(|m| m.metric.starts_with("round_trip"))
    );
    has(&r, &["mutex_counter_t1", "false_sharing_counter_t1"]);
}

#[test]
fn unpinned_and_memory_limited_runs_still_measure() {
    let o = ProbeOptions {
        pin: false,
        max_buffer: Some(16 << 20),
        ..opts()
    };
    let r = run("memory", &o);
    print(&r);
    well_formed(&r);
    assert!(r.pinned_cpu.is_none());
    assert!(
        r.messages.iter().any(|m| m.contains("memory limit")),
        "{:?}",
        r.messages
    );
    let top: u64 = r
        .measurements
        .iter()
        .filter_map(|m: &ProbeResult| m.metric.strip_prefix("ladder_")?.parse().ok())
        .max()
        .unwrap();
    assert!(top <= 16 << 20, "{top}");
    let r = run("bandwidth", &o);
    well_formed(&r);
    assert!(
        r.messages.iter().any(|m| m.contains("memory limit")),
        "{:?}",
        r.messages
    );
}

#[test]
fn a_huge_last_level_cache_does_not_make_the_buffers_huge() {
    // The fingerprint of a 260 MiB L3 (the Xeon that made the suite take
    // half a minute): the ladder and the arrays stay capped, and the ladder
    // says it stopped before DRAM.
    let mut o = opts();
    o.caches.l3 = Some(260 << 20);
    let memory = run("memory", &o);
    let said = memory
        .messages
        .iter()
        .find(|m| m.contains("stopped at"))
        .unwrap_or_else(|| panic!("{:?}", memory.messages));
    assert!(
        said.contains("before DRAM") && said.contains("capped"),
        "{said}"
    );
    assert!(said.contains("512 MiB"), "quick mode's cap: {said}");
    let bandwidth = run("bandwidth", &o);
    assert!(
        bandwidth
            .measurements
            .iter()
            .all(|m| !m.note.as_deref().unwrap_or("").contains("1 GiB")),
        "{:?}",
        bandwidth.measurements
    );
    assert!(
        bandwidth
            .messages
            .iter()
            .any(|m| m.contains("at most 512 MiB")),
        "{:?}",
        bandwidth.messages
    );
}
