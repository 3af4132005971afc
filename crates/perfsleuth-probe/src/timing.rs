//! Timing machinery shared by the probes: sample collection, summaries
//! (median and relative inter-quartile spread), CPU pinning and the
//! dependent-add loop that estimates the core clock.

use crate::{CalibratedClock, ProbeError, ProbeResult};
use std::time::{Duration, Instant};

/// A number is called stable when its relative spread (IQR / median) is at
/// most this and it rests on at least three samples.
pub const STABLE_SPREAD: f64 = 0.10;
/// Fewer samples than this are never called stable.
pub const MIN_STABLE_SAMPLES: usize = 3;

/// Median and relative inter-quartile spread of a sample set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Median.
    pub median: f64,
    /// (p75 - p25) / median; 0 for a single sample.
    pub spread: f64,
    /// Best value (minimum; callers wanting the maximum use `max`).
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// Number of samples.
    pub n: usize,
}

impl Summary {
    /// A summary for a value derived from others (a plateau of ladder
    /// points), with their spread; stable when the spread is small.
    pub fn point(median: f64, spread: f64) -> Summary {
        Summary {
            median,
            spread,
            min: median,
            max: median,
            n: MIN_STABLE_SAMPLES,
        }
    }

    /// Whether the number is stable by the crate's rule.
    pub fn stable(&self) -> bool {
        self.n >= MIN_STABLE_SAMPLES && self.spread <= STABLE_SPREAD
    }
}

/// Summarises finite positive samples; `None` when there are none.
pub fn summarize(samples: &[f64]) -> Option<Summary> {
    let mut v: Vec<f64> = samples.iter().copied().filter(|x| x.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let median = perfsleuth_stats::percentile(&v, 50.0)?;
    let p25 = perfsleuth_stats::percentile(&v, 25.0)?;
    let p75 = perfsleuth_stats::percentile(&v, 75.0)?;
    let spread = if median > 0.0 {
        (p75 - p25) / median
    } else {
        0.0
    };
    Some(Summary {
        median,
        spread,
        min: v[0],
        max: v[v.len() - 1],
        n: v.len(),
    })
}

/// Builds a measurement from a summary; `ghz` adds estimated cycles for "ns" values.
pub fn measurement(
    probe: &str,
    metric: &str,
    s: &Summary,
    unit: &str,
    lower_is_better: bool,
    ghz: Option<f64>,
) -> ProbeResult {
    ProbeResult {
        probe: probe.to_string(),
        metric: metric.to_string(),
        value: s.median,
        unit: unit.to_string(),
        lower_is_better,
        cycles: if unit == "ns" {
            ghz.map(|g| s.median * g)
        } else {
            None
        },
        spread: s.spread,
        stable: s.stable(),
        headline: false,
        note: None,
    }
}

/// Nanoseconds elapsed since `t`.
pub fn ns_since(t: Instant) -> f64 {
    t.elapsed().as_nanos() as f64
}

/// How long one sample should take and how many to take.
#[derive(Debug, Clone, Copy)]
pub struct Plan {
    /// Target duration of one sample.
    pub sample: Duration,
    /// Number of timed samples.
    pub samples: usize,
}

impl Plan {
    /// The plan of the short per-call probes: 15 samples of 0.3 ms in
    /// quick mode, else `samples` of 0.5 ms.
    pub fn short(quick: bool, samples: usize) -> Plan {
        if quick {
            Plan {
                sample: Duration::from_micros(300),
                samples: 15,
            }
        } else {
            Plan {
                sample: Duration::from_micros(500),
                samples,
            }
        }
    }
}

/// Finds an iteration count for which `f(iters)` takes about `target`:
/// doubles from 1 until a run takes at least a tenth of it, then scales.
/// The doubling runs double as warm-up.
pub fn iterations_for(target: Duration, mut f: impl FnMut(u64)) -> u64 {
    let target_ns = target.as_nanos().max(1) as f64;
    let mut iters: u64 = 1;
    loop {
        let t = Instant::now();
        f(iters);
        let ns = ns_since(t).max(1.0);
        if ns >= target_ns / 10.0 || iters >= 1 << 40 {
            let scaled = (iters as f64 * target_ns / ns).round();
            return (scaled as u64).max(1);
        }
        iters *= 2;
    }
}

/// Context switches (voluntary + involuntary) of the calling thread so far.
pub fn thread_switches() -> u64 {
    // SAFETY: rusage is plain data filled by the kernel.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_THREAD, &mut ru) != 0 {
            return 0;
        }
        (ru.ru_nvcsw + ru.ru_nivcsw) as u64
    }
}

/// Involuntary context switches of the calling thread so far (preemptions
/// by other work; blocking on a lock or a child is voluntary and not counted).
pub fn thread_preemptions() -> u64 {
    // SAFETY: rusage is plain data filled by the kernel.
    unsafe {
        let mut ru: libc::rusage = std::mem::zeroed();
        if libc::getrusage(libc::RUSAGE_THREAD, &mut ru) != 0 {
            return 0;
        }
        ru.ru_nivcsw as u64
    }
}

/// Counts of samples retaken because the thread was switched out while
/// timing (another process got the CPU), and of those kept anyway.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct Interruptions {
    /// Samples thrown away and taken again.
    pub retaken: usize,
    /// Samples kept although interrupted (every attempt was); they are
    /// timed by the thread's CPU time.
    pub kept: usize,
}

/// Attempts per sample before an interrupted one is kept.
const ATTEMPTS: usize = 4;

/// CPU time of the calling thread in ns (a system call, not the vDSO).
pub fn thread_cpu_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: ts is a valid timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

/// Times `f` once in wall-clock ns, again when the thread was switched out
/// meanwhile (up to four attempts). When every attempt was interrupted, the
/// last one's thread CPU time is returned instead of its wall time, so the
/// time other processes had the CPU is still left out.
pub fn time_clean(intr: &mut Interruptions, mut f: impl FnMut()) -> f64 {
    let mut attempt = 0;
    loop {
        let before = thread_switches();
        let c0 = thread_cpu_ns();
        let t = Instant::now();
        f();
        let ns = ns_since(t);
        let c1 = thread_cpu_ns();
        if thread_switches() == before {
            return ns;
        }
        attempt += 1;
        if attempt == ATTEMPTS {
            intr.kept += 1;
            return (c1.saturating_sub(c0) as f64).min(ns);
        }
        intr.retaken += 1;
    }
}

/// Times `f(iters)` `plan.samples` times with an iteration count sized to
/// `plan.sample` (each sample retaken when interrupted), and returns
/// nanoseconds per iteration of each sample.
pub fn sample_per_iter(plan: Plan, intr: &mut Interruptions, mut f: impl FnMut(u64)) -> Vec<f64> {
    let iters = iterations_for(plan.sample, &mut f);
    f(iters); // one full-size warm-up
    (0..plan.samples)
        .map(|_| time_clean(intr, || f(iters)) / iters as f64)
        .collect()
}

// ---------------------------------------------------------------------------
// CPU pinning

/// The CPUs this thread may run on, ascending; `Err` with the reason if the
/// kernel refuses to say.
pub fn allowed_cpus() -> Result<Vec<usize>, ProbeError> {
    // SAFETY: cpu_set_t is plain data; sched_getaffinity fills it.
    unsafe {
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut set) != 0 {
            return Err(ProbeError::last_os("sched_getaffinity"));
        }
        Ok((0..libc::CPU_SETSIZE as usize)
            .filter(|&c| libc::CPU_ISSET(c, &set))
            .collect())
    }
}

/// The CPU this thread runs on now, if the kernel says.
pub fn current_cpu() -> Option<usize> {
    // SAFETY: sched_getcpu has no arguments and no side effects.
    let c = unsafe { libc::sched_getcpu() };
    (c >= 0).then_some(c as usize)
}

/// Restores the thread's previous CPU affinity when dropped.
pub struct Pinned {
    old: libc::cpu_set_t,
    /// The CPU the thread is pinned to.
    pub cpu: usize,
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: restoring a mask the kernel gave us for this thread.
        unsafe {
            libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &self.old);
        }
    }
}

/// Pins the calling thread to `cpu` until the guard is dropped.
pub fn pin_to(cpu: usize) -> Result<Pinned, ProbeError> {
    if cpu >= libc::CPU_SETSIZE as usize {
        return Err(ProbeError::BeyondSetSize(cpu));
    }
    // SAFETY: cpu_set_t is plain data; both calls only read/write the sets given.
    unsafe {
        let mut old: libc::cpu_set_t = std::mem::zeroed();
        if libc::sched_getaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &mut old) != 0 {
            return Err(ProbeError::last_os("sched_getaffinity"));
        }
        let mut set: libc::cpu_set_t = std::mem::zeroed();
        libc::CPU_SET(cpu, &mut set);
        if libc::sched_setaffinity(0, std::mem::size_of::<libc::cpu_set_t>(), &set) != 0 {
            return Err(ProbeError::Pin {
                cpu,
                source: std::io::Error::last_os_error(),
            });
        }
        Ok(Pinned { old, cpu })
    }
}

/// Pins the calling thread to the CPU it runs on now (or the first allowed
/// one). On failure, pushes a message and returns `None`: the probe then
/// runs unpinned.
pub fn pin_here(enabled: bool, messages: &mut Vec<String>) -> Option<Pinned> {
    if !enabled {
        return None;
    }
    let cpu = current_cpu()
        .or_else(|| allowed_cpus().ok().and_then(|c| c.first().copied()))
        .unwrap_or(0);
    match pin_to(cpu) {
        Ok(p) => Some(p),
        Err(e) => {
            messages.push(format!(
                "{e}; measuring unpinned (the scheduler may move the thread)"
            ));
            None
        }
    }
}

// ---------------------------------------------------------------------------
// Clock calibration

/// Runs `blocks` blocks of 100 dependent register adds (x86-64, AArch64):
/// 100 cycles per block on any core that executes one dependent integer add
/// per cycle, which all current x86 and Arm application cores do.
#[inline(never)]
fn add_chain(blocks: u64) -> u64 {
    let mut x: u64 = 1;
    let y: u64 = std::hint::black_box(3);
    let n = blocks.max(1);
    #[cfg(target_arch = "x86_64")]
    // SAFETY: register-only arithmetic and a counted loop.
    unsafe {
        std::arch::asm!(
            "2:",
            ".rept 100",
            "add {x}, {y}",
            ".endr",
            "dec {n}",
            "jnz 2b",
            x = inout(reg) x,
            y = in(reg) y,
            n = inout(reg) n => _,
            options(nomem, nostack),
        );
    }
    #[cfg(target_arch = "aarch64")]
    // SAFETY: register-only arithmetic and a counted loop.
    unsafe {
        std::arch::asm!(
            "2:",
            ".rept 100",
            "add {x}, {x}, {y}",
            ".endr",
            "subs {n}, {n}, #1",
            "b.ne 2b",
            x = inout(reg) x,
            y = in(reg) y,
            n = inout(reg) n => _,
            options(nomem, nostack),
        );
    }
    #[cfg(not(any(target_arch = "x86_64", target_arch = "aarch64")))]
    {
        let _ = (y, n);
    }
    x
}

/// Whether [`add_chain`] is real on this architecture.
pub const CALIBRATION_AVAILABLE: bool = cfg!(any(target_arch = "x86_64", target_arch = "aarch64"));

#[cfg(target_arch = "x86_64")]
fn rdtsc() -> u64 {
    // SAFETY: RDTSC is available on every x86-64 CPU.
    unsafe { core::arch::x86_64::_rdtsc() }
}

/// Estimates the core clock with a chain of dependent adds (one cycle each):
/// 25 samples of about 0.3 ms (9 when `quick`), each retaken when the thread
/// was switched out; the median rate is the estimate.
/// The result is an *estimate*: it assumes one add per cycle and measures the
/// clock the core actually ran at (turbo included), which in a VM is the only
/// clock there is to measure.
pub fn calibrate(quick: bool) -> CalibratedClock {
    if !CALIBRATION_AVAILABLE {
        return CalibratedClock {
            ghz: None,
            spread: 0.0,
            tsc_ghz: None,
            how: format!(
                "no calibration loop for {}; cycles are not reported",
                std::env::consts::ARCH
            ),
        };
    }
    let plan = Plan {
        sample: Duration::from_micros(300),
        samples: if quick { 9 } else { 25 },
    };
    // ns per block of 100 cycles → GHz = 100 / ns.
    let mut intr = Interruptions::default();
    let per_block = sample_per_iter(plan, &mut intr, |n| {
        std::hint::black_box(add_chain(n));
    });
    let rates: Vec<f64> = per_block.iter().map(|ns| 100.0 / ns).collect();
    let s = summarize(&rates).expect("calibration samples");
    #[cfg(target_arch = "x86_64")]
    let tsc_ghz = {
        let (t0, c0) = (Instant::now(), rdtsc());
        std::hint::black_box(add_chain(20_000));
        let (ns, c1) = (ns_since(t0), rdtsc());
        Some((c1.wrapping_sub(c0)) as f64 / ns)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let tsc_ghz = None;
    CalibratedClock {
        ghz: Some(s.median),
        spread: s.spread,
        tsc_ghz,
        how: format!(
            "estimated: chains of dependent adds (1 cycle each) ran at {:.2} GHz (spread {:.1}%){}",
            s.median,
            s.spread * 100.0,
            tsc_ghz
                .map(|t| format!("; TSC ticks at {t:.2} GHz"))
                .unwrap_or_default()
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summary_of_known_values() {
        let s = summarize(&[1.0, 2.0, 3.0, 4.0, 5.0]).unwrap();
        assert_eq!(s.median, 3.0);
        assert!((s.spread - 2.0 / 3.0).abs() < 1e-12);
        assert_eq!((s.min, s.max, s.n), (1.0, 5.0, 5));
        assert!(!s.stable());
        let s = summarize(&[10.0, 10.1, 10.0, 9.9, 10.0]).unwrap();
        assert!(s.stable());
        assert!(summarize(&[f64::NAN]).is_none());
    }

    #[test]
    fn pinning_to_an_impossible_cpu_is_a_clear_error() {
        let e = pin_to(100_000).err().unwrap();
        assert!(matches!(e, ProbeError::BeyondSetSize(100_000)), "{e}");
        assert!(e.to_string().contains("CPU 100000"), "{e}");
        // A CPU outside the allowed set (there is always one below CPU_SETSIZE
        // on test machines with fewer than 1024 CPUs).
        let allowed = allowed_cpus().unwrap();
        if let Some(c) = (0..1024).find(|c| !allowed.contains(c)) {
            let e = pin_to(c).err().unwrap();
            assert!(e.to_string().contains("cannot pin"), "{e}");
        }
        let mut msgs = Vec::new();
        assert!(pin_here(false, &mut msgs).is_none());
        assert!(msgs.is_empty());
    }

    #[test]
    fn calibration_gives_a_plausible_clock() {
        let c = calibrate(true);
        if CALIBRATION_AVAILABLE {
            let g = c.ghz.unwrap();
            // Not a timing threshold: any real core runs between 0.1 and 10 GHz.
            assert!(g > 0.1 && g < 10.0, "{c:?}");
            assert!(c.how.starts_with("estimated"));
        } else {
            assert!(c.ghz.is_none());
        }
    }
}
