//! `coherency`: what sharing a cache line between cores costs.
//!
//! Round trip: two threads pinned to two CPUs pass a counter back and forth
//! on one cache line with compare-and-swap (the first moves it from even to
//! odd, the second from odd to even), as core-to-core-latency does; one
//! round trip is two ownership transfers of the line.
//!
//! Counters: N threads increment for a fixed time (a) one counter under a
//! mutex, (b) one shared atomic (`fetch_add`), (c) one counter per thread,
//! each on its own 128-byte slot, and (d) one counter per thread, adjacent in
//! one cache line (false sharing). (c) and (d) use a plain load and store of
//! the thread's own counter, so the only difference between them is layout.

use crate::timing::{self, measurement};
use crate::{ProbeOptions, ProbeResult};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Barrier, Mutex};
use std::time::{Duration, Instant};

#[repr(align(128))]
struct Padded<T>(T);

/// CPUs to use: the allowed ones, at most `opts.cpus`.
fn cpus(opts: &ProbeOptions, ctx: &mut crate::Ctx) -> Vec<Option<usize>> {
    let n = opts.cpus.max(1);
    if !opts.pin {
        return vec![None; n];
    }
    match &ctx.allowed {
        Ok(c) if !c.is_empty() => c.iter().copied().take(n).map(Some).collect(),
        Ok(_) => vec![None; n],
        Err(e) => {
            ctx.messages.push(format!(
                "coherency: the allowed CPUs are unknown ({e}); threads run unpinned"
            ));
            vec![None; n]
        }
    }
}

fn pin(cpu: Option<usize>, errors: &Mutex<Vec<String>>) -> Option<timing::Pinned> {
    let cpu = cpu?;
    match timing::pin_to(cpu) {
        Ok(p) => Some(p),
        Err(e) => {
            errors
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(e.to_string());
            None
        }
    }
}

/// Round trips per second-ish sample between two CPUs; ns per round trip.
fn round_trip(
    a: Option<usize>,
    b: Option<usize>,
    samples: usize,
    trips: u64,
    budget: Duration,
    errors: &Mutex<Vec<String>>,
) -> Vec<f64> {
    let line = Padded(AtomicU64::new(0));
    let stop = Padded(AtomicBool::new(false));
    let deadline = Instant::now() + budget;
    let mut out = Vec::new();
    std::thread::scope(|s| {
        let line = &line.0;
        let stop = &stop.0;
        s.spawn(move || {
            let _pin = pin(b, errors);
            let mut v = 1u64;
            // Moves odd → even until told to stop.
            'outer: loop {
                let mut spins = 0u32;
                while line
                    .compare_exchange(v, v + 1, Ordering::AcqRel, Ordering::Relaxed)
                    .is_err()
                {
                    spins = spins.wrapping_add(1);
                    if spins % 1024 == 0 && stop.load(Ordering::Relaxed) {
                        break 'outer;
                    }
                    std::hint::spin_loop();
                }
                v += 2;
            }
        });
        let _pin = pin(a, errors);
        let mut v = 0u64;
        let mut run = |n: u64| -> bool {
            for _ in 0..n {
                let mut spins = 0u32;
                while line
                    .compare_exchange(v, v + 1, Ordering::AcqRel, Ordering::Relaxed)
                    .is_err()
                {
                    spins = spins.wrapping_add(1);
                    if spins % 1024 == 0 && Instant::now() > deadline {
                        return false;
                    }
                    std::hint::spin_loop();
                }
                v += 2;
            }
            true
        };
        if run(trips / 4) {
            // Samples during which this thread was preempted are dropped; the
            // partner's preemptions show as outliers the median ignores.
            while out.len() < samples {
                let pre = timing::thread_preemptions();
                let t = Instant::now();
                if !run(trips) {
                    break;
                }
                let ns = timing::ns_since(t) / trips as f64;
                if timing::thread_preemptions() == pre {
                    out.push(ns);
                }
                if Instant::now() > deadline {
                    break;
                }
            }
        }
        stop.store(true, Ordering::Relaxed);
    });
    out
}

#[derive(Clone, Copy)]
enum Variant {
    Mutex,
    Atomic,
    Padded,
    Unpadded,
}

impl Variant {
    const ALL: [Variant; 4] = [
        Variant::Mutex,
        Variant::Atomic,
        Variant::Padded,
        Variant::Unpadded,
    ];
    fn name(self) -> &'static str {
        match self {
            Variant::Mutex => "mutex_counter",
            Variant::Atomic => "atomic_counter",
            Variant::Padded => "padded_counter",
            Variant::Unpadded => "false_sharing_counter",
        }
    }
}

/// Total increments per second of `threads` threads running together for
/// about `dur`: the sum of each thread's own rate over its own window.
/// `None` when a thread was preempted by other work meanwhile.
fn counters(
    variant: Variant,
    cpus: &[Option<usize>],
    threads: usize,
    dur: Duration,
    errors: &Mutex<Vec<String>>,
) -> (f64, bool) {
    let mutex = Padded(Mutex::new(0u64));
    let shared = Padded(AtomicU64::new(0));
    let padded: Vec<Padded<AtomicU64>> = (0..threads).map(|_| Padded(AtomicU64::new(0))).collect();
    let unpadded = Padded([const { AtomicU64::new(0) }; 16]);
    let start = Barrier::new(threads + 1);
    let mut rate = 0.0;
    let mut preempted = false;
    std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let (mutex, shared, padded, unpadded, start) =
                    (&mutex.0, &shared.0, &padded, &unpadded.0, &start);
                let cpu = cpus[t % cpus.len()];
                s.spawn(move || {
                    let _pin = pin(cpu, errors);
                    let own = match variant {
                        Variant::Padded => &padded[t].0,
                        _ => &unpadded[t % 16],
                    };
                    start.wait();
                    // Each thread stops itself at its deadline: a main
                    // thread waking up to say "stop" would preempt one of
                    // them on a machine with no spare CPU.
                    let pre = timing::thread_preemptions();
                    let t0 = Instant::now();
                    let deadline = t0 + dur;
                    let mut ops = 0u64;
                    loop {
                        for _ in 0..4096 {
                            match variant {
                                Variant::Mutex => {
                                    *mutex.lock().unwrap_or_else(|e| e.into_inner()) += 1;
                                }
                                Variant::Atomic => {
                                    shared.fetch_add(1, Ordering::Relaxed);
                                }
                                Variant::Padded | Variant::Unpadded => {
                                    own.store(own.load(Ordering::Relaxed) + 1, Ordering::Relaxed);
                                }
                            }
                        }
                        ops += 4096;
                        if Instant::now() >= deadline {
                            break;
                        }
                    }
                    let ns = timing::ns_since(t0);
                    (ops as f64 / ns * 1e9, timing::thread_preemptions() != pre)
                })
            })
            .collect();
        start.wait();
        for h in handles {
            let (r, p) = h.join().unwrap_or((0.0, true));
            rate += r;
            preempted |= p;
        }
    });
    (rate, preempted)
}

/// Thread counts: 1..=n when n ≤ 8, else powers of two and n.
fn thread_counts(n: usize) -> Vec<usize> {
    if n <= 8 {
        return (1..=n).collect();
    }
    let mut v: Vec<usize> = (0..).map(|k| 1usize << k).take_while(|&t| t < n).collect();
    v.push(n);
    v
}

/// CPU pairs for the round trip: all pairs up to 8 CPUs, else the first CPU
/// with every other one (at most 32).
fn pairs(n: usize) -> Vec<(usize, usize)> {
    if n <= 8 {
        (0..n)
            .flat_map(|a| (a + 1..n).map(move |b| (a, b)))
            .collect()
    } else {
        (1..n).take(32).map(|b| (0, b)).collect()
    }
}

pub(crate) fn run(opts: &ProbeOptions, ctx: &mut crate::Ctx) -> Vec<ProbeResult> {
    let cpus = cpus(opts, ctx);
    let errors = Mutex::new(Vec::new());
    let ghz = ctx.ghz();
    let mut out = Vec::new();
    let (samples, trips, pair_budget, dur, reps) = if opts.quick {
        (
            9,
            1_000,
            Duration::from_millis(150),
            Duration::from_millis(2),
            5,
        )
    } else {
        (
            31,
            1_000,
            Duration::from_millis(600),
            Duration::from_millis(2),
            11,
        )
    };
    if cpus.len() < 2 {
        ctx.messages.push(format!(
            "coherency: the core-to-core round trip needs two CPUs, this process may use {}; skipped (counters run with one thread)",
            cpus.len()
        ));
    } else {
        let mut medians = Vec::new();
        let mut spreads = Vec::new();
        for (i, j) in pairs(cpus.len()) {
            let v = round_trip(cpus[i], cpus[j], samples, trips, pair_budget, &errors);
            let label = match (cpus[i], cpus[j]) {
                (Some(a), Some(b)) => format!("cpu{a}_cpu{b}"),
                _ => format!("threads{i}_{j}"),
            };
            match timing::summarize(&v) {
                Some(s) => {
                    let mut m = measurement("coherency", &format!("round_trip_{label}"), &s, "ns", true, ghz);
                    m.note = Some("CAS ping-pong; one round trip = two line transfers".into());
                    medians.push(s.median);
                    spreads.push(s.spread);
                    out.push(m);
                }
                None => ctx.messages.push(format!(
                    "coherency: no round trip completed between {label} in {} ms (a CPU busy with other work?)",
                    pair_budget.as_millis()
                )),
            }
        }
        if let Some(s) = timing::summarize(&medians) {
            let mut m = measurement("coherency", "core_to_core_round_trip", &s, "ns", true, ghz);
            // Stability is that of the pairs' own samples, not the pairs' spread.
            let worst = spreads.iter().copied().fold(0.0, f64::max);
            m.spread = worst.max(if medians.len() > 1 { 0.0 } else { s.spread });
            m.stable = m.spread <= timing::STABLE_SPREAD;
            m.headline = true;
            m.note = Some(format!(
                "median over {} CPU pair(s) (min {:.0} ns, max {:.0} ns)",
                medians.len(),
                s.min,
                s.max
            ));
            out.push(m);
        }
    }
    let counts = thread_counts(cpus.len());
    let max_t = *counts.last().unwrap_or(&1);
    for &t in &counts {
        for v in Variant::ALL {
            // Windows in which a thread was preempted by other work are
            // biased (a descheduled partner contends less): each is taken
            // again, up to six times; only clean ones count, unless fewer
            // than three are clean.
            let mut clean = Vec::new();
            let mut dirty = Vec::new();
            for _ in 0..reps {
                for attempt in 1..=6 {
                    let (rate, preempted) = counters(v, &cpus, t, dur, &errors);
                    if !preempted {
                        clean.push(rate);
                        break;
                    }
                    if attempt == 6 {
                        ctx.intr.kept += 1;
                        dirty.push(rate);
                    } else {
                        ctx.intr.retaken += 1;
                    }
                }
            }
            let biased = clean.len() < 3;
            let rates: Vec<f64> = if biased {
                clean.iter().chain(&dirty).copied().collect()
            } else {
                clean.clone()
            };
            let s = timing::summarize(&rates).expect("reps");
            let mut m = measurement(
                "coherency",
                &format!("{}_t{t}", v.name()),
                &s,
                "ops/s",
                false,
                None,
            );
            if biased {
                m.stable = false;
                m.note = Some(format!(
                    "only {} of {reps} windows ran without a thread being preempted by other work",
                    clean.len()
                ));
            }
            m.headline = t == max_t || t == 1;
            out.push(m);
        }
    }
    let mut errs = errors.into_inner().unwrap_or_else(|e| e.into_inner());
    errs.sort();
    errs.dedup();
    for e in errs {
        ctx.messages
            .push(format!("coherency: {e}; that thread ran unpinned"));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_counts_and_pairs() {
        assert_eq!(thread_counts(1), vec![1]);
        assert_eq!(thread_counts(4), vec![1, 2, 3, 4]);
        assert_eq!(thread_counts(12), vec![1, 2, 4, 8, 12]);
        assert_eq!(thread_counts(16), vec![1, 2, 4, 8, 16]);
        assert_eq!(pairs(2), vec![(0, 1)]);
        assert_eq!(pairs(3), vec![(0, 1), (0, 2), (1, 2)]);
        assert_eq!(pairs(64).len(), 32);
    }
}
