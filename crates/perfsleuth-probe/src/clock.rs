//! `clock`: what reading the time costs and how fine it is. For each clock:
//! the cost of one read (ns), and the observed resolution (the smallest
//! non-zero difference between consecutive reads, which for a fine clock is
//! bounded by the read cost itself). `clock_getres` is reported too, as the
//! kernel's claim.

use crate::timing::{self, Plan, Summary, measurement};
use crate::{ProbeOptions, ProbeResult};
use std::hint::black_box;
use std::time::Duration;

fn read(clock: libc::clockid_t) -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec.
    unsafe { libc::clock_gettime(clock, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[inline(never)]
fn read_loop(clock: libc::clockid_t, n: u64) {
    for _ in 0..n {
        black_box(read(black_box(clock)));
    }
}

#[cfg(target_arch = "x86_64")]
#[inline(never)]
fn tsc_loop(n: u64) {
    for _ in 0..n {
        // SAFETY: RDTSC exists on every x86-64 CPU.
        black_box(unsafe { core::arch::x86_64::_rdtsc() });
    }
}

/// Smallest non-zero step between consecutive reads, over `reads` reads or
/// at most `budget` (a coarse clock needs milliseconds to tick at all).
fn observed_resolution(clock: libc::clockid_t, reads: u64, budget: Duration) -> Option<f64> {
    let deadline = std::time::Instant::now() + budget;
    let mut best = u64::MAX;
    let mut prev = read(clock);
    let mut i = 0u64;
    while i < reads || best == u64::MAX {
        let now = read(clock);
        if now > prev {
            best = best.min(now - prev);
        }
        prev = now;
        i += 1;
        if i % 256 == 0 && std::time::Instant::now() > deadline {
            break;
        }
    }
    (best != u64::MAX).then_some(best as f64)
}

fn getres(clock: libc::clockid_t) -> Option<f64> {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec.
    let rc = unsafe { libc::clock_getres(clock, &mut ts) };
    (rc == 0).then_some(ts.tv_sec as f64 * 1e9 + ts.tv_nsec as f64)
}

pub(crate) fn run(opts: &ProbeOptions, ctx: &mut crate::Ctx) -> Vec<ProbeResult> {
    let plan = Plan::short(opts.quick, 41);
    let ghz = ctx.ghz();
    let mut out = Vec::new();
    let clocks = [
        ("monotonic", libc::CLOCK_MONOTONIC, true),
        ("monotonic_coarse", libc::CLOCK_MONOTONIC_COARSE, false),
        ("process_cputime", libc::CLOCK_PROCESS_CPUTIME_ID, false),
    ];
    for (name, id, headline) in clocks {
        let v = timing::sample_per_iter(plan, &mut ctx.intr, |n| read_loop(id, n));
        let s = timing::summarize(&v).expect("samples");
        let mut m = measurement("clock", &format!("{name}_read"), &s, "ns", true, ghz);
        m.headline = headline;
        out.push(m);
        // Resolution: repeat a few times; the smallest step is the answer,
        // the spread says how often it is seen.
        let res: Vec<f64> = (0..if opts.quick { 3 } else { 5 })
            .filter_map(|_| observed_resolution(id, 20_000, Duration::from_millis(30)))
            .collect();
        match timing::summarize(&res) {
            Some(s) => {
                let mut m =
                    measurement("clock", &format!("{name}_resolution"), &s, "ns", true, None);
                m.value = s.min;
                m.headline = headline;
                m.note = Some(format!(
                    "smallest step seen between consecutive reads{}",
                    getres(id)
                        .map(|r| format!("; clock_getres says {r} ns"))
                        .unwrap_or_default()
                ));
                out.push(m);
            }
            None => ctx
                .messages
                .push(format!("clock: {name} did not advance within 30 ms")),
        }
    }
    #[cfg(target_arch = "x86_64")]
    {
        let v = timing::sample_per_iter(plan, &mut ctx.intr, tsc_loop);
        let s: Summary = timing::summarize(&v).expect("samples");
        let mut m = measurement("clock", "tsc_read", &s, "ns", true, ghz);
        m.note = Some("RDTSC, the counter the vDSO reads for the tsc clocksource".into());
        out.push(m);
    }
    out
}
