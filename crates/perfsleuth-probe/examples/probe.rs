//! Runs probes and prints their numbers, without the CLI:
//! `cargo run --release -p perfsleuth-probe --example probe -- [--quick] [--json] [--all] [NAME...]`
//!
//! Cache sizes come from `/sys/devices/system/cpu/cpu0/cache` (read here,
//! since the probe crate itself takes them from the fingerprint). Headline
//! numbers only, unless `--all`. `--json` prints the reports as JSON.

use perfsleuth_probe::{CacheSizes, ProbeOptions, fmt_bytes, parse_names, parse_size, run};
use std::time::Instant;

fn sysfs_caches() -> CacheSizes {
    let mut c = CacheSizes::default();
    for i in 0..8 {
        let dir = format!("/sys/devices/system/cpu/cpu0/cache/index{i}");
        let read = |f: &str| std::fs::read_to_string(format!("{dir}/{f}")).ok();
        let (Some(level), Some(kind), Some(size)) = (read("level"), read("type"), read("size"))
        else {
            continue;
        };
        let size = parse_size(&size);
        match (level.trim(), kind.trim()) {
            ("1", "Data") => c.l1d = size,
            ("2", _) => c.l2 = size,
            ("3", _) => c.l3 = size,
            _ => {}
        }
    }
    c
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let quick = args.iter().any(|a| a == "--quick");
    let json = args.iter().any(|a| a == "--json");
    let all = args.iter().any(|a| a == "--all");
    let names: Vec<String> = args
        .iter()
        .filter(|a| !a.starts_with("--"))
        .cloned()
        .collect();
    let names = match parse_names(&names) {
        Ok(n) => n,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let opts = ProbeOptions {
        quick,
        caches: sysfs_caches(),
        ..ProbeOptions::default()
    };
    let c = opts.caches;
    let show = |s: Option<u64>| s.map(fmt_bytes).unwrap_or_else(|| "?".into());
    eprintln!(
        "caches: L1d {}  L2 {}  L3 {}; cpus {}; {}",
        show(c.l1d),
        show(c.l2),
        show(c.l3),
        opts.cpus,
        if quick { "quick" } else { "default" }
    );
    let t = Instant::now();
    let mut reports = Vec::new();
    for name in names {
        let r = run(name, &opts);
        if !json {
            println!("{} ({:.2} s)", r.probe, r.duration.as_secs_f64());
            if let Some(clock) = &r.clock {
                println!("  clock: {}", clock.how);
            }
            for m in r.measurements.iter().filter(|m| all || m.headline) {
                let value = match m.unit.as_str() {
                    "bytes" => fmt_bytes(m.value as u64),
                    "ops/s" => format!("{:.3e} ops/s", m.value),
                    "ns" if m.value >= 10_000.0 => format!("{:.1} µs", m.value / 1e3),
                    u => format!("{:.3} {u}", m.value),
                };
                let cycles = m
                    .cycles
                    .map(|c| format!("  ~{c:.1} cycles"))
                    .unwrap_or_default();
                let spread = if m.unit == "bytes" {
                    "±1 ladder step".to_string()
                } else {
                    format!("±{:.1}%", m.spread * 100.0)
                };
                println!(
                    "  {:<36} {:>16}{cycles}  {spread}{}{}",
                    m.metric,
                    value,
                    if m.stable { "" } else { "  UNSTABLE" },
                    m.note
                        .as_ref()
                        .map(|n| format!("  ({n})"))
                        .unwrap_or_default()
                );
            }
            for msg in &r.messages {
                println!("  note: {msg}");
            }
        }
        reports.push(r);
    }
    if json {
        println!(
            "{}",
            serde_json::to_string_pretty(&reports).expect("reports serialise")
        );
    }
    eprintln!("total {:.2} s", t.elapsed().as_secs_f64());
}
