//! Machine microbenchmarks ("probes") that explain why two machines, or two
//! boots of one machine, differ: function-call and indirect-branch cost,
//! system-call cost, the memory-latency ladder, memory bandwidth, cache-line
//! coherency between cores, clock cost and resolution, and process spawn.
//!
//! ```no_run
//! use perfsleuth_probe::{ProbeOptions, parse_names, run};
//! let names = parse_names(&["calls".to_string(), "memory".to_string()]).unwrap();
//! let opts = ProbeOptions { quick: true, ..ProbeOptions::default() };
//! for name in names {
//!     let report = run(name, &opts);
//!     for m in &report.measurements {
//!         println!("{} {} {} {}", m.probe, m.metric, m.value, m.unit);
//!     }
//!     for msg in &report.messages {
//!         eprintln!("{}: {msg}", report.probe);
//!     }
//! }
//! ```
//!
//! # Methodology
//!
//! - Each probe runs with its thread pinned to the CPU it is on (unless
//!   pinning is refused, e.g. in a container: then it says so and runs
//!   unpinned), warms up, and takes repeated samples sized to a fixed time.
//!   A number is the median of its samples (bandwidth: the best run, as
//!   STREAM reports); `spread` is the inter-quartile range over the median,
//!   and `stable` means a spread of at most 10 % over at least 3 samples.
//! - Work is kept from being optimised away with `#[inline(never)]` kernels
//!   and `std::hint::black_box`; on x86-64 the `calls` loops are assembly
//!   (64-byte aligned), so every build times the same instructions.
//! - Cycles are *estimated*: where no cycle counter can be read (VMs, no perf
//!   counters) a chain of dependent adds, one cycle each, gives the core
//!   clock ([`cycles_per_ns`]); [`ProbeReport::clock`] says how. The TSC is
//!   shown beside it but is a reference clock, not core cycles.
//! - Default: the whole suite in under 30 s; `quick`: under 5 s.
//! - Bad conditions never stop the other probes: an unknown name is refused
//!   by [`parse_names`] with the valid names; one CPU skips the core-to-core
//!   round trip; refused pinning and refused allocations (`try_reserve`,
//!   `max_buffer`, half of MemAvailable) shrink or skip a part with a message
//!   in [`ProbeReport::messages`]; a panic inside a probe becomes a message.
//!
//! `docs/PROBES.md` describes each probe, its metrics and reference values.

mod bandwidth;
mod calls;
mod clock;
mod coherency;
mod diff;
pub mod ladder;
mod memory;
mod spawn;
mod syscall;
mod timing;

pub use diff::{
    NoiseBands, SIGNIFICANT_CHANGE, assumed_noise, diff, diff_runs, explain, fact_prefixes,
};
pub use memory::fmt_bytes;
pub use perfsleuth_model::schema::ProbeDelta;
pub use perfsleuth_model::{CalibratedClock, ProbeResult};

/// Context fact holding how the core clock behind the cycle counts was estimated.
pub const CLOCK_FACT: &str = "probe.clock";
pub use timing::STABLE_SPREAD;

use perfsleuth_model::Environment;
use serde::{Deserialize, Serialize};
use std::fmt;
use std::time::{Duration, Instant};

/// Every probe, in the order the suite runs them.
pub const PROBES: [&str; 7] = [
    "calls",
    "syscall",
    "memory",
    "bandwidth",
    "coherency",
    "clock",
    "spawn",
];

/// One line on what a probe measures.
pub fn describe(probe: &str) -> &'static str {
    match probe {
        "calls" => "inlined loop vs direct, indirect and unpredictable indirect calls",
        "syscall" => "a cheap system call (getppid) vs the vDSO's clock_gettime",
        "memory" => "latency ladder 4 KiB .. beyond the LLC: L1/L2/L3/DRAM latency and cache sizes",
        "bandwidth" => "single-thread read, write and copy bandwidth (STREAM rules)",
        "coherency" => {
            "core-to-core round trip; mutex vs atomic vs padded vs falsely shared counters"
        }
        "clock" => "cost and resolution of reading the clocks",
        "spawn" => "spawn and reap a trivial process; fork + exit + wait",
        _ => "",
    }
}

/// Cache sizes in bytes, as the fingerprint reports them (per instance).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CacheSizes {
    /// L1 data cache.
    pub l1d: Option<u64>,
    /// L2 cache.
    pub l2: Option<u64>,
    /// L3 (last-level) cache.
    pub l3: Option<u64>,
}

impl CacheSizes {
    /// Reads `cpu.cache.{l1d,l2,l3}.size` ("32 KiB", "1024 KiB", "32 MiB",
    /// or bytes) from a fingerprint; unknown or unparsable sizes are `None`.
    pub fn from_environment(env: &Environment) -> CacheSizes {
        let get = |level: &str| {
            env.get(&format!("cpu.cache.{level}.size"))
                .and_then(parse_size)
        };
        CacheSizes {
            l1d: get("l1d"),
            l2: get("l2"),
            l3: get("l3"),
        }
    }
}

/// Parses "32 KiB", "1 MiB", "48K", "4096", "4096 bytes" into bytes;
/// `None` for zero, for junk and for sizes beyond `u64`.
pub fn parse_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let n: u64 = num.parse().ok()?;
    let mult = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" | "bytes" => 1,
        "k" | "kb" | "kib" => 1 << 10,
        "m" | "mb" | "mib" => 1 << 20,
        "g" | "gb" | "gib" => 1 << 30,
        _ => return None,
    };
    n.checked_mul(mult).filter(|_| n > 0)
}

/// What a probe run may do.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ProbeOptions {
    /// Fewer samples and a coarser memory ladder (factor 2, to 4× LLC): the
    /// suite in under 5 s instead of under 30 s.
    pub quick: bool,
    /// The fingerprint's cache sizes; they size the buffers and name the
    /// memory ladder's levels. Without them a 32 MiB LLC is assumed.
    pub caches: CacheSizes,
    /// CPUs the coherency probe may use (at most the allowed ones).
    pub cpus: usize,
    /// Pin threads to CPUs (default true).
    pub pin: bool,
    /// The largest buffer to allocate, in bytes (e.g. from a cgroup memory
    /// limit); half of MemAvailable applies in any case.
    pub max_buffer: Option<u64>,
}

impl Default for ProbeOptions {
    /// Not quick, no cache sizes, the CPUs this process may run on, pinning on.
    fn default() -> Self {
        let cpus = timing::allowed_cpus()
            .map(|c| c.len())
            .ok()
            .filter(|&n| n > 0)
            .or_else(|| std::thread::available_parallelism().ok().map(|n| n.get()))
            .unwrap_or(1);
        ProbeOptions {
            quick: false,
            caches: CacheSizes::default(),
            cpus,
            pin: true,
            max_buffer: None,
        }
    }
}

/// What one probe produced.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq)]
pub struct ProbeReport {
    /// The probe's name.
    pub probe: String,
    /// Its numbers (none when it could not run at all).
    pub measurements: Vec<ProbeResult>,
    /// Skipped parts and warnings, one sentence each.
    pub messages: Vec<String>,
    /// Wall time the probe took.
    pub duration: Duration,
    /// The core clock estimate its cycles come from, when it reports cycles.
    pub clock: Option<CalibratedClock>,
    /// The CPU the probe's thread was pinned to, if it was.
    pub pinned_cpu: Option<usize>,
}

/// A probe name that does not exist.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnknownProbe {
    /// The name given.
    pub name: String,
}

impl fmt::Display for UnknownProbe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.name.trim().is_empty() {
            return write!(
                f,
                "an empty probe name; the probes are: {}",
                PROBES.join(", ")
            );
        }
        write!(
            f,
            "unknown probe `{}`; the probes are: {}",
            self.name,
            PROBES.join(", ")
        )
    }
}

impl std::error::Error for UnknownProbe {}

/// Why a probe's step could not run: the probe skips that part, or runs
/// unpinned, and says so in a message.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ProbeError {
    /// A system call failed.
    #[error("{call}: {source}")]
    Os {
        /// The call.
        call: &'static str,
        /// The OS error.
        source: std::io::Error,
    },
    /// A CPU number past what the kernel's CPU mask holds.
    #[error("CPU {0} is beyond CPU_SETSIZE")]
    BeyondSetSize(usize),
    /// The kernel would not move the thread to the CPU.
    #[error("cannot pin to CPU {cpu}: {source}")]
    Pin {
        /// The CPU.
        cpu: usize,
        /// The OS error.
        source: std::io::Error,
    },
    /// A buffer could not be allocated.
    #[error("cannot allocate {}: {source}", memory::fmt_bytes(*bytes))]
    Allocate {
        /// The buffer's size.
        bytes: u64,
        /// The allocator's refusal.
        source: std::collections::TryReserveError,
    },
}

impl ProbeError {
    /// The calling thread's last OS error, from `call`.
    pub(crate) fn last_os(call: &'static str) -> ProbeError {
        ProbeError::Os {
            call,
            source: std::io::Error::last_os_error(),
        }
    }
}

/// Resolves probe names (case-insensitive; "all" means every probe; an empty
/// list means every probe), in the suite's order, without duplicates.
pub fn parse_names(names: &[String]) -> Result<Vec<&'static str>, UnknownProbe> {
    let mut want = [false; PROBES.len()];
    if names.is_empty() {
        want = [true; PROBES.len()];
    }
    for n in names {
        for part in n.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let lower = part.to_ascii_lowercase();
            if lower == "all" {
                want = [true; PROBES.len()];
            } else if let Some(i) = PROBES.iter().position(|p| *p == lower) {
                want[i] = true;
            } else {
                return Err(UnknownProbe {
                    name: part.to_string(),
                });
            }
        }
    }
    // `probe ''` (or `probe ,`) asked for something, just not any probe.
    if !names.is_empty() && !want.contains(&true) {
        return Err(UnknownProbe {
            name: String::new(),
        });
    }
    Ok(PROBES
        .iter()
        .zip(want)
        .filter(|(_, w)| *w)
        .map(|(p, _)| *p)
        .collect())
}

/// Estimates the core clock (cycles per ns = GHz) with a chain of dependent
/// adds; see [`CalibratedClock::how`]. Takes about 20 ms.
pub fn cycles_per_ns() -> CalibratedClock {
    timing::calibrate(false)
}

/// State a probe shares with the runner: messages and the lazily
/// calibrated clock.
pub(crate) struct Ctx {
    pub(crate) messages: Vec<String>,
    pub(crate) intr: timing::Interruptions,
    /// The CPUs the caller may run on, read before the probe pinned itself.
    pub(crate) allowed: Result<Vec<usize>, ProbeError>,
    clock: Option<CalibratedClock>,
    quick: bool,
}

impl Ctx {
    /// The estimated GHz, calibrating on first use (on the pinned CPU).
    pub(crate) fn ghz(&mut self) -> Option<f64> {
        let quick = self.quick;
        self.clock
            .get_or_insert_with(|| timing::calibrate(quick))
            .ghz
    }
}

/// Runs one probe. Never panics and never fails: what could not be measured
/// is said in the report's messages (an unknown name too).
pub fn run(name: &str, opts: &ProbeOptions) -> ProbeReport {
    let start = Instant::now();
    let mut ctx = Ctx {
        messages: Vec::new(),
        intr: timing::Interruptions::default(),
        allowed: timing::allowed_cpus(),
        clock: None,
        quick: opts.quick,
    };
    // Multi-threaded probes pin their own threads.
    let pinned = timing::pin_here(opts.pin && name != "coherency", &mut ctx.messages);
    let pinned_cpu = pinned.as_ref().map(|p| p.cpu);
    let probe: Option<fn(&ProbeOptions, &mut Ctx) -> Vec<ProbeResult>> = match name {
        "calls" => Some(calls::run),
        "syscall" => Some(syscall::run),
        "memory" => Some(memory::run),
        "bandwidth" => Some(bandwidth::run),
        "coherency" => Some(coherency::run),
        "clock" => Some(clock::run),
        "spawn" => Some(spawn::run),
        _ => None,
    };
    let measurements = match probe {
        None => {
            ctx.messages.push(
                UnknownProbe {
                    name: name.to_string(),
                }
                .to_string(),
            );
            Vec::new()
        }
        Some(f) => {
            match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| f(opts, &mut ctx))) {
                Ok(m) => m,
                Err(e) => {
                    let what = e
                        .downcast_ref::<&str>()
                        .map(|s| s.to_string())
                        .or_else(|| e.downcast_ref::<String>().cloned())
                        .unwrap_or_else(|| "unknown panic".into());
                    ctx.messages.push(format!("{name} failed: {what}"));
                    Vec::new()
                }
            }
        }
    };
    drop(pinned);
    let intr = ctx.intr;
    if intr.retaken + intr.kept > 0 {
        ctx.messages.push(format!(
            "{} sample(s) were taken again because the thread was switched out (other processes want this CPU){}",
            intr.retaken + intr.kept,
            if intr.kept > 0 {
                format!(
                    "; {} interrupted on every attempt were kept (timed by thread CPU time where timed): expect noise",
                    intr.kept
                )
            } else {
                String::new()
            }
        ));
    }
    ProbeReport {
        probe: PROBES
            .iter()
            .find(|p| **p == name)
            .map(|p| p.to_string())
            .unwrap_or_else(|| name.to_string()),
        measurements,
        messages: ctx.messages,
        duration: start.elapsed(),
        clock: ctx.clock,
        pinned_cpu,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfsleuth_model::ImpactClass;

    #[test]
    fn names_resolve_in_suite_order() {
        let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(parse_names(&[]).unwrap(), PROBES.to_vec());
        assert_eq!(parse_names(&s(&["all"])).unwrap(), PROBES.to_vec());
        assert_eq!(
            parse_names(&s(&["spawn", "Memory,calls", "spawn"])).unwrap(),
            vec!["calls", "memory", "spawn"]
        );
        for empty in [&[""][..], &[" , "], &["", ""]] {
            let e = parse_names(&s(empty)).unwrap_err();
            assert!(e.to_string().starts_with("an empty probe name"), "{e}");
        }
        let e = parse_names(&s(&["calls", "cache"])).unwrap_err();
        assert_eq!(e.name, "cache");
        let text = e.to_string();
        assert!(text.contains("`cache`"));
        for p in PROBES {
            assert!(text.contains(p), "{text}");
            assert!(!describe(p).is_empty());
        }
    }

    #[test]
    fn running_an_unknown_probe_says_so() {
        let r = run("nope", &ProbeOptions::default());
        assert!(r.measurements.is_empty());
        assert!(
            r.messages[0].contains("unknown probe `nope`"),
            "{:?}",
            r.messages
        );
    }

    #[test]
    fn cache_sizes_from_a_fingerprint() {
        let mut env = Environment::default();
        env.set("cpu.cache.l1d.size", "48 KiB", ImpactClass::Identity);
        env.set("cpu.cache.l2.size", "1280 KiB", ImpactClass::Identity);
        env.set("cpu.cache.l3.size", "unknown", ImpactClass::Identity);
        let c = CacheSizes::from_environment(&env);
        assert_eq!(c.l1d, Some(48 * 1024));
        assert_eq!(c.l2, Some(1280 * 1024));
        assert_eq!(c.l3, None);
        assert_eq!(parse_size("32M"), Some(32 << 20));
        assert_eq!(parse_size("4096"), Some(4096));
        assert_eq!(parse_size("0 KiB"), None);
        assert_eq!(parse_size("lots"), None);
    }

    #[test]
    fn a_size_beyond_64_bits_is_none_not_an_overflow() {
        // Found by tests/fuzz_probe.rs: `n * mult` panicked in debug builds
        // and wrapped to a small buffer size in release.
        assert_eq!(parse_size("18446744073709551615 KiB"), None);
        assert_eq!(parse_size("17179869184 GiB"), None);
        assert_eq!(parse_size("17179869183 GiB"), Some(17179869183 << 30));
    }
}
