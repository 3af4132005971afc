//! Wall-time profiles, end to end: a real program compiled with gcc, run
//! through the spawner while the sampler follows it, unwound and named.
//! Where the kernel refuses the `cpu-clock` event the test says so and
//! skips (fails when `PERFSLEUTH_TEST_REQUIRE` names `perf_software`).

use perfsleuth_measure::sampler::{Sampler, SamplerConfig};
use perfsleuth_measure::{IoConfig, Outcome, Spawner};
use perfsleuth_model::StackProfile;
mod common;

use common::argv;
use perfsleuth_testkit::skip;
use std::path::{Path, PathBuf};

/// The studies' program (bench/profiles/three.c): alpha, beta and gamma_
/// doing the given millions of iterations each.
fn three(dir: &Path) -> Option<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/profiles/three.c");
    common::compile(dir, &src, "three", &["-O2", "-g"])
}

/// Starts the sampler on the spawner with `config`, or skips the test saying why.
fn sampler(sp: &Spawner, config: SamplerConfig) -> Option<Sampler> {
    match Sampler::start(sp.pid(), config) {
        Ok(s) => Some(s),
        Err(e) => {
            skip("perf_software", format!("cpu-clock sampling: {e}"));
            None
        }
    }
}

/// Each function's self samples over all runs.
fn self_counts(p: &StackProfile) -> std::collections::HashMap<String, u64> {
    let mut out = std::collections::HashMap::new();
    for s in &p.stacks {
        let leaf = &p.frames[*s.frames.last().unwrap() as usize].function;
        *out.entry(leaf.clone()).or_default() +=
            s.counts.iter().map(|&c| u64::from(c)).sum::<u64>();
    }
    out
}

#[test]
fn samples_name_the_hot_functions_in_their_shares_unwound_to_main() {
    let dir = common::scratch("sampler", "three");
    // -O2 without frame pointers: the stacks are unwound with .eh_frame.
    let Some(prog) = three(&dir) else {
        return;
    };
    let mut sp = Spawner::start().unwrap();
    let Some(sampler) = sampler(&sp, SamplerConfig::default_for_this_process()) else {
        return;
    };
    let id = sp
        .prepare(
            &argv(&[prog.to_str().unwrap(), "50", "30", "20"]),
            &IoConfig::default(),
        )
        .unwrap();
    for i in 0..5 {
        match sp.run_once(id, i).unwrap() {
            Outcome::Completed(s) if s.succeeded() => {}
            other => panic!("{other:?}"),
        }
    }
    let collected = sampler.finish();
    assert_eq!(collected.runs_seen, 5, "{collected:?}");
    let runs: Vec<(u32, u32)> = (1..=5).map(|r| (r, r - 1)).collect();
    let p = collected.report(&runs);
    assert_eq!(p.iterations, vec![0, 1, 2, 3, 4]);
    // Each run at its own period, within ±10 % of the nominal one.
    assert_eq!(p.periods_ns.len(), 5);
    for &q in &p.periods_ns {
        let r = q as f64 / p.period_ns as f64;
        assert!((0.899..=1.101).contains(&r), "{:?}", p.periods_ns);
    }
    let mut distinct = p.periods_ns.clone();
    distinct.sort_unstable();
    distinct.dedup();
    assert!(
        distinct.len() >= 4,
        "periods not redrawn: {:?}",
        p.periods_ns
    );
    let totals = p.run_totals();
    // ~100 ms of CPU per run at ~1 kHz.
    for t in &totals {
        assert!((40..=400).contains(t), "samples per run {totals:?}");
    }
    let counts = self_counts(&p);
    let share = |f: &str| counts.get(f).copied().unwrap_or(0) as f64 / p.samples as f64;
    println!(
        "alpha {:.3} beta {:.3} gamma {:.3} of {} samples, {} lost, {} truncated",
        share("alpha"),
        share("beta"),
        share("gamma_"),
        p.samples,
        p.lost,
        p.truncated
    );
    // 50 %, 30 %, 20 % of the loop work; start-up and noise take a little.
    assert!((0.38..0.60).contains(&share("alpha")), "{counts:?}");
    assert!((0.20..0.40).contains(&share("beta")), "{counts:?}");
    assert!((0.12..0.28).contains(&share("gamma_")), "{counts:?}");
    // Unwound through `work` to `main` without frame pointers.
    let through_main = p
        .stacks
        .iter()
        .filter(|s| {
            let names: Vec<&str> = s
                .frames
                .iter()
                .map(|&f| p.frames[f as usize].function.as_str())
                .collect();
            names.windows(2).any(|w| w == ["main", "work"])
        })
        .map(|s| s.counts.iter().map(|&c| u64::from(c)).sum::<u64>())
        .sum::<u64>();
    assert!(
        through_main as f64 >= 0.9 * p.samples as f64,
        "{through_main} of {} samples unwound to main: {:#?}",
        p.samples,
        p.frames
    );
}

#[test]
fn a_ring_that_overflows_counts_the_samples_the_kernel_lost() {
    let dir = common::scratch("sampler", "overflow");
    let Some(prog) = common::compile(&dir, &common::prog("spin2"), "spin2", &["-O2", "-pthread"])
    else {
        return;
    };
    let mut sp = Spawner::start().unwrap();
    // 20 kHz into the smallest rings (64 KiB a CPU: seven 8 KiB stacks),
    // drained every 10 ms: two busy threads fill them many times over.
    let config = SamplerConfig {
        rate_hz: 20_000,
        ring_bytes: 0,
        ..SamplerConfig::default_for_this_process()
    };
    let Some(sampler) = sampler(&sp, config) else {
        return;
    };
    let id = sp
        .prepare(
            &argv(&[prog.to_str().unwrap(), "300"]),
            &IoConfig::default(),
        )
        .unwrap();
    match sp.run_once(id, 0).unwrap() {
        Outcome::Completed(s) if s.succeeded() => {}
        other => panic!("{other:?}"),
    }
    let collected = sampler.finish();
    assert_eq!(collected.runs_seen, 1);
    let p = collected.report(&[(1, 0)]);
    println!(
        "kept {} samples, lost {}, throttled {} times",
        p.samples, p.lost, collected.throttled
    );
    assert!(p.lost > 0, "nothing lost: {collected:?}");
    assert_eq!(p.lost, collected.lost);
    assert!(p.samples > 0, "and some kept");
}
