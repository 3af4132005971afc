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
    let mut cpu_ns = Vec::new();
    for i in 0..5 {
        match sp.run_once(id, i).unwrap() {
            Outcome::Completed(s) if s.succeeded() => cpu_ns.push(s.user_ns + s.sys_ns),
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
    let totals = p.run_samples();
    // One sample per period of the run's own CPU time (rusage's, itself
    // sampled at the tick): a loaded or stolen-from machine stretches the
    // CPU time and the samples alike, so no band of absolute counts holds.
    for (t, cpu) in totals.iter().zip(&cpu_ns) {
        let expected = *cpu as f64 / p.period_ns as f64;
        assert!(
            *t as f64 >= 0.5 * expected && *t as f64 <= 1.5 * expected + 5.0,
            "samples per run {totals:?}, CPU time per run {cpu_ns:?} ns, period {} ns",
            p.period_ns
        );
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

/// The wait program (bench/profiles/waits.c).
fn waits(dir: &Path) -> Option<PathBuf> {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/profiles/waits.c");
    common::compile(dir, &src, "waits", &["-O2", "-g", "-pthread"])
}

/// Runs `args` of the wait program `runs` times under a wall-profile
/// sampler: its profile and each run's wall time less its CPU time (ns);
/// `None` (the skip said) where the kernel refuses either event.
fn wall_profile(name: &str, args: &[&str], runs: u32) -> Option<(StackProfile, Vec<f64>)> {
    let dir = common::scratch("sampler", name);
    let prog = waits(&dir)?;
    let mut sp = Spawner::start().unwrap();
    let s = sampler(&sp, SamplerConfig::default_for_this_process())?;
    if let Some(why) = s.off_cpu_refused() {
        skip("perf_software", format!("off-CPU time: {why}"));
        return None;
    }
    let mut argv_: Vec<&str> = vec![prog.to_str().unwrap()];
    argv_.extend(args);
    let id = sp.prepare(&argv(&argv_), &IoConfig::default()).unwrap();
    let mut off = Vec::new();
    for i in 0..runs {
        match sp.run_once(id, i).unwrap() {
            Outcome::Completed(s) if s.succeeded() => {
                off.push(s.wall_ns as f64 - (s.user_ns + s.sys_ns) as f64);
            }
            other => panic!("{other:?}"),
        }
    }
    let collected = s.finish();
    assert_eq!(collected.runs_seen, runs, "{collected:?}");
    let pairs: Vec<(u32, u32)> = (1..=runs).map(|r| (r, r - 1)).collect();
    Some((collected.report(&pairs), off))
}

/// Per off-CPU reason and waiting function: ns per run, from the periods.
fn waited_ms(p: &StackProfile) -> Vec<(String, String, f64)> {
    let runs = p.iterations.len() as f64;
    let mut out: Vec<(String, String, f64)> = p
        .functions()
        .into_iter()
        .filter_map(|f| {
            let reason = f.off_cpu?;
            let ns: f64 = f
                .self_counts
                .iter()
                .enumerate()
                .map(|(i, &c)| c as f64 * p.period_of(i) as f64)
                .sum();
            Some((f.frame.function, reason.word().to_string(), ns / runs / 1e6))
        })
        .collect();
    out.sort_by(|a, b| b.2.total_cmp(&a.2));
    out
}

#[test]
fn a_wait_in_poll_is_off_cpu_time_in_the_function_that_polled() {
    // 20 requests: ~0.5 ms of CPU in crunch, then 2 ms in poll each.
    let Some((p, reference)) = wall_profile("poll", &["requests", "20", "400", "2000"], 4) else {
        return;
    };
    let waited = waited_ms(&p);
    println!(
        "{waited:?}; off-CPU ns per run {:?}, wall − CPU {reference:?}",
        p.off_cpu_ns
    );
    let (function, reason, ms) = &waited[0];
    assert_eq!((function.as_str(), reason.as_str()), ("fetch_row", "poll"));
    // 40 ms a run at least (the kernel may wake a poll late).
    assert!(*ms >= 38.0, "{waited:?}");
    // One thread: its time off the CPU is the run's wall time less its CPU
    // time (less the start and end of the process, which are not waits).
    for (&ns, &r) in p.off_cpu_ns.iter().zip(&reference) {
        assert!(
            (ns as f64 - r).abs() <= 0.1 * r + 2e6,
            "{:?} vs {reference:?}",
            p.off_cpu_ns
        );
    }
    // The periods add up to the exact total, to a period a run.
    let off: Vec<u64> = p
        .run_totals()
        .iter()
        .zip(p.run_samples())
        .map(|(all, on)| all - on)
        .collect();
    for (i, (&periods, &ns)) in off.iter().zip(&p.off_cpu_ns).enumerate() {
        let as_periods = ns as f64 / p.period_of(i) as f64;
        assert!(
            (periods as f64 - as_periods).abs() <= 0.5 + 1e-9,
            "{off:?} {:?}",
            p.off_cpu_ns
        );
    }
    // On the CPU, crunch as before.
    let on = self_counts(&p);
    assert!(on.get("crunch").copied().unwrap_or(0) > 0, "{on:?}");
}

#[test]
fn a_contended_mutex_is_the_waiting_threads_lock_wait() {
    // The holder keeps the mutex 2 ms, 30 times; the waiter waits for it.
    let Some((p, _)) = wall_profile("lock", &["lock", "30", "2000"], 3) else {
        return;
    };
    let mut waited = waited_ms(&p);
    println!("{waited:?}");
    // Time runnable (preempted) is the machine's load, not the program's:
    // the program's own waits are the blocked ones.
    waited.retain(|w| w.1 != "runnable");
    let (function, reason, ms) = &waited[0];
    assert_eq!((function.as_str(), reason.as_str()), ("take_lock", "lock"));
    // Its only blocking wait (how long depends on how the two threads are
    // scheduled); main's wait to join them is not a wait.
    assert!(*ms > 0.0, "{waited:?}");
    assert!(!waited.iter().any(|w| w.0 == "main"), "{waited:?}");
    // Which thread waited: the one that started in `waiter`.
    let take = p
        .functions()
        .into_iter()
        .find(|f| f.frame.function == "take_lock" && f.off_cpu.is_some())
        .unwrap();
    assert_eq!(take.thread.as_deref(), Some("waiter"), "{take:?}");
    assert_eq!(
        take.label(),
        "`take_lock` (off CPU: lock, in thread `waiter`)"
    );
    // The holder spins on the clock, in the vDSO (no file): read from
    // perfsleuth's own, it is named and unwound to the function that spins.
    let names = |s: &perfsleuth_model::ProfileStack| -> Vec<String> {
        s.frames
            .iter()
            .map(|&f| p.frames[f as usize].function.clone())
            .collect()
    };
    let in_vdso: Vec<Vec<String>> = p
        .stacks
        .iter()
        .map(names)
        .filter(|n| n.last().is_some_and(|l| l.contains("clock_gettime")))
        .collect();
    assert!(!in_vdso.is_empty(), "{:#?}", p.frames);
    assert!(
        in_vdso.iter().all(|n| n.iter().any(|f| f == "hold")),
        "{in_vdso:?}"
    );
}

#[test]
fn a_cpu_profile_records_no_off_cpu_time() {
    let dir = common::scratch("sampler", "cpu-only");
    let Some(prog) = waits(&dir) else {
        return;
    };
    let mut sp = Spawner::start().unwrap();
    let config = SamplerConfig {
        off_cpu: false,
        ..SamplerConfig::default_for_this_process()
    };
    let Some(s) = sampler(&sp, config) else {
        return;
    };
    let id = sp
        .prepare(
            &argv(&[prog.to_str().unwrap(), "requests", "10", "400", "2000"]),
            &IoConfig::default(),
        )
        .unwrap();
    sp.run_once(id, 0).unwrap();
    let p = s.finish().report(&[(1, 0)]);
    assert!(!p.has_off_cpu(), "{p:?}");
    assert!(p.off_cpu_ns.is_empty());
}
