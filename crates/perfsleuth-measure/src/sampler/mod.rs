//! Wall-time profiles: `cpu-clock` samples of the benchmarked process trees
//! with their user stacks, through `perf_event_open` (docs/PROFILES.md).
//!
//! **How.** The event is opened by perfsleuth on the *spawner* (its pid),
//! once per online CPU, with `inherit`, `disabled` and `enable_on_exec`,
//! like the counters: every command the spawner starts inherits a disabled
//! copy that starts sampling when it execs, and so do its threads and
//! children; the spawner itself never samples. Inherited copies write into
//! the ring buffer of their CPU's event, mapped here (the kernel refuses to
//! map an inherited event that follows a task on any CPU), so the spawner
//! stays small (its memory is the floor of every child's peak RSS). A
//! non-inherited disabled event on the spawner keeps the kernel from
//! swapping the spawner's and a child's perf contexts (see the counters'
//! guard event).
//!
//! **What a sample carries.** The instruction pointer, the pid, the user
//! registers (`rip`, `rsp`, `rbp`) and a copy of the top of the user stack
//! ([`STACK_BYTES`]): unwound here with the files' `.eh_frame` (frame
//! pointers where a function has none), as `perf record --call-graph dwarf`
//! does, so programs and libraries built without frame pointers unwind
//! too. The side-band records say which files each process mapped
//! (`MMAP2`), which processes forked from which (`FORK`), which exec'd
//! (`COMM`) and exited (`EXIT`): a process perfsleuth has not seen fork that
//! execs is a new run, numbered 1, 2, … in order, as the lock tracer
//! numbers them; its descendants belong to it.
//!
//! **The period.** A program whose work repeats in step with the sampling
//! (a loop whose cycle is close to a multiple of the period) puts its
//! samples at the same phase of the cycle all run long, and since a run
//! starts the same way every time, the same functions get too many samples
//! in every run. So each run is sampled at its own period, drawn uniformly
//! within ±[`JITTER`] of the nominal one when the run before it starts (the
//! kernel gives a new child the parent event's period of the moment): the
//! phase error then differs from run to run, and widens the intervals
//! instead of biasing the shares. Each sample says its period, so a run's
//! time is its samples × its period.
//!
//! **The reader.** A thread drains the rings every few milliseconds (or when
//! one is half full), puts the records of all CPUs in time order (every
//! record carries its `CLOCK_MONOTONIC` time; only records older than the
//! moment the drain began are taken, so none can still be on its way), then
//! unwinds and names each sample and counts it per (run, stack). Samples the
//! kernel could not write, a ring being full, are counted from its `LOST`
//! records.
//!
//! **Off the CPU** (a wall profile, the default). The clock only runs while
//! a thread is on a CPU, so a second event per CPU, the `context-switches`
//! software event with a period of 1, writes into the same ring: a sample
//! at every switch-out of a measured thread, taken in that thread, with its
//! user registers and stack (where a blocked thread is: the system call it
//! made), and `PERF_RECORD_SWITCH` records, in and out, whose switch-out
//! says whether the thread was preempted (still runnable). The interval
//! from a thread's switch-out to its next switch-in is time it waited, added
//! to its stack with a leaf `[off-cpu: REASON]`: preempted is `runnable`;
//! otherwise the reason is the system call it blocked in, read from the
//! sample's kernel call chain (`__x64_sys_futex` is a `lock`, `ppoll`
//! `poll`, `read` `I/O`, `nanosleep` `sleep`), named with `/proc/kallsyms`;
//! where the kernel hides its addresses, from the C library function the
//! user stack ends in.
//! A process waiting for its child (`wait4`) is left out: the child's own
//! time is in the profile. This needs no tracefs and no BPF, only that the
//! event may count in kernel mode (root, or `perf_event_paranoid` ≤ 1);
//! where the kernel refuses it the profile is on-CPU only and says why.
//! Waits are summed in nanoseconds per (run, stack) and stored as periods
//! of the run (docs/PROFILES.md, "Off the CPU").

use crate::perf::*;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

mod collect;
mod ring;
use crate::sampler::ring::*;
pub use collect::*;

/// The default sampling rate: about 1 kHz, and prime, so that it does not
/// beat with the millisecond timers and loops of the programs sampled.
pub const DEFAULT_RATE_HZ: u32 = 997;

/// The bytes of user stack copied with each sample (what
/// `perf record --call-graph dwarf` copies by default).
pub const STACK_BYTES: u32 = 8192;

/// The ring buffers' data size over all CPUs asked for first (each CPU's a
/// power of two, at least [`MIN_RING_BYTES`]), then halved on refusal (an
/// unprivileged user may lock only `perf_event_mlock_kb`, 516 KiB by default).
pub const RING_BYTES: usize = 8 << 20;
/// The smallest ring buffer per CPU.
pub const MIN_RING_BYTES: usize = 64 << 10;

/// How far a run's sampling period may be from the nominal one.
pub const JITTER: f64 = 0.1;

/// `PERF_EVENT_IOC_PERIOD`: `_IOW('$', 4, __u64)`.
const IOC_PERIOD: libc::c_ulong = 0x4008_2404;

/// How old a record must be before it is put in order and read.
const ORDER_MARGIN_NS: u64 = 20_000_000;

/// How often the reader drains the ring when it is not half full.
const DRAIN_EVERY: Duration = Duration::from_millis(10);

const SAMPLE_IP: u64 = 1 << 0;
const SAMPLE_TID: u64 = 1 << 1;
const SAMPLE_TIME: u64 = 1 << 2;
const SAMPLE_PERIOD: u64 = 1 << 8;
const SAMPLE_CALLCHAIN: u64 = 1 << 5;
const SAMPLE_REGS_USER: u64 = 1 << 12;
const SAMPLE_STACK_USER: u64 = 1 << 13;

// x86-64 `perf_regs` numbers (reported in this order): a system call's
// third, second and first arguments (dx, si, di), then bp, sp, ip.
const REG_DX: u64 = 3;
const REG_SI: u64 = 4;
const REG_DI: u64 = 5;
const REG_BP: u64 = 6;
const REG_SP: u64 = 7;
const REG_IP: u64 = 8;

const RECORD_MMAP2: u32 = 10;
const RECORD_LOST: u32 = 2;
const RECORD_COMM: u32 = 3;
const RECORD_EXIT: u32 = 4;
const RECORD_THROTTLE: u32 = 5;
const RECORD_FORK: u32 = 7;
const RECORD_SAMPLE: u32 = 9;
const RECORD_LOST_SAMPLES: u32 = 13;
const RECORD_SWITCH: u32 = 14;
/// `PERF_RECORD_MISC_SWITCH_OUT` (a switch record's misc; shares its bit
/// with `MISC_COMM_EXEC`).
const MISC_SWITCH_OUT: u16 = 1 << 13;
/// `PERF_RECORD_MISC_SWITCH_OUT_PREEMPT`: switched out while runnable.
const MISC_SWITCH_OUT_PREEMPT: u16 = 1 << 14;
const MISC_CPUMODE_MASK: u16 = 7;
const MISC_KERNEL: u16 = 1;
const MISC_COMM_EXEC: u16 = 1 << 13;

/// What to sample.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SamplerConfig {
    /// Samples per second of CPU time.
    pub rate_hz: u32,
    /// Sample kernel mode too (needs `perf_event_paranoid` ≤ 1 or
    /// CAP_PERFMON); else user mode only.
    pub kernel: bool,
    /// The ring buffers' size over all CPUs, bytes ([`RING_BYTES`]).
    pub ring_bytes: usize,
    /// Record the time threads spend off the CPU too (a wall profile).
    pub off_cpu: bool,
}

impl SamplerConfig {
    /// The default rate, kernel mode where this process may sample it.
    pub fn default_for_this_process() -> SamplerConfig {
        SamplerConfig {
            rate_hz: DEFAULT_RATE_HZ,
            kernel: may_sample_kernel(),
            ring_bytes: RING_BYTES,
            off_cpu: true,
        }
    }

    /// The CPU time each sample stands for, in nanoseconds.
    pub fn period_ns(&self) -> u64 {
        1_000_000_000 / u64::from(self.rate_hz.max(1))
    }
}

/// Whether this process runs as root (not bound by `perf_event_paranoid`).
pub fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions.
    unsafe { libc::geteuid() == 0 }
}

/// Whether the kernel lets this process sample kernel mode.
fn may_sample_kernel() -> bool {
    running_as_root() || paranoid().is_some_and(|p| p <= 1)
}

fn paranoid() -> Option<i32> {
    std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
        .ok()
        .and_then(|s| s.trim().parse().ok())
}

/// Why sampling cannot start.
#[derive(Debug, thiserror::Error)]
pub enum SamplerError {
    /// Not x86-64: the unwinder reads x86-64 registers.
    #[error("profiling supports x86-64 only; this machine is {0}")]
    Unsupported(&'static str),
    /// The kernel refused the event.
    #[error("the kernel refused the cpu-clock sampling event: {0}")]
    Open(String),
    /// The ring buffer could not be mapped.
    #[error("cannot map the sampling ring buffer: {0}")]
    Map(String),
}

/// Why off-CPU time cannot be recorded: not a [`SamplerError`], since
/// sampling goes on without it and the reason becomes a note.
#[derive(Debug, thiserror::Error)]
enum OffCpuRefused {
    /// The kernel refused the context-switch event.
    #[error("the kernel refused the context-switch event: {0}")]
    Open(String),
    /// The context switches could not go into the sampling ring.
    #[error("the kernel would not put context switches into the sampling ring ({0})")]
    NotRouted(std::io::Error),
}

/// Sampling, started on the spawner. [`Sampler::finish`] stops it.
pub struct Sampler {
    stop: Arc<AtomicBool>,
    reader: Option<std::thread::JoinHandle<Collected>>,
    _guard: OwnedFd,
    config: SamplerConfig,
    /// Why off-CPU time is not recorded although it was asked for.
    off_cpu_refused: Option<String>,
}

impl Sampler {
    /// Opens the event on process `root` (the spawner) on every online CPU
    /// and starts the reader.
    pub fn start(root: u32, config: SamplerConfig) -> Result<Sampler, SamplerError> {
        if !cfg!(target_arch = "x86_64") {
            return Err(SamplerError::Unsupported(std::env::consts::ARCH));
        }
        let pid = root as libc::pid_t;
        let mut flags = DISABLED
            | INHERIT
            | ENABLE_ON_EXEC
            | EXCLUDE_HV
            | MMAP
            | COMM
            | TASK
            | WATERMARK
            | SAMPLE_ID_ALL
            | EXCLUDE_CALLCHAIN_KERNEL
            | MMAP2
            | COMM_EXEC
            | USE_CLOCKID;
        if !config.kernel {
            flags |= EXCLUDE_KERNEL;
        }
        let cpus = online_cpus();
        let mut per_cpu = (config.ring_bytes / cpus.len().max(1))
            .next_power_of_two()
            .max(MIN_RING_BYTES);
        if per_cpu * cpus.len() > config.ring_bytes {
            per_cpu /= 2;
        }
        let mut per_cpu = per_cpu.max(MIN_RING_BYTES);
        // Every CPU's ring the same size: the kernel's lock limit is per CPU
        // (`perf_event_mlock_kb` each, plus RLIMIT_MEMLOCK), so a refusal
        // closes them all and tries again at half the size.
        let (rings, off_cpu_refused) = loop {
            match open_rings(&cpus, pid, flags, config, per_cpu) {
                Ok(opened) => break opened,
                Err(SamplerError::Map(_)) if per_cpu / 2 >= MIN_RING_BYTES => per_cpu /= 2,
                Err(e) => return Err(e),
            }
        };
        // Not inherited: keeps the spawner's context unlike its children's.
        let guard = PerfEventAttr {
            kind: PERF_TYPE_SOFTWARE,
            size: PERF_ATTR_SIZE_VER5 as u32,
            config: SW_DUMMY,
            flags: DISABLED | EXCLUDE_HV | if config.kernel { 0 } else { EXCLUDE_KERNEL },
            ..PerfEventAttr::default()
        };
        let guard = perf_event_open(&guard, pid, -1)
            .map_err(|errno| SamplerError::Open(open_error(errno, config.kernel)))?;
        let stop = Arc::new(AtomicBool::new(false));
        // Read before the first run: reading them when the first wait is
        // seen would hold up the reader, and the periods it redraws.
        let kernel = off_cpu_refused
            .is_none()
            .then(|| config.off_cpu.then(KernelSymbols::load))
            .flatten();
        let reader = {
            let stop = Arc::clone(&stop);
            std::thread::Builder::new()
                .name("perfsleuth-sampler".into())
                .spawn(move || read(rings, config.period_ns(), kernel, &stop))
                .map_err(|e| SamplerError::Map(format!("cannot start the reader thread: {e}")))?
        };
        Ok(Sampler {
            stop,
            reader: Some(reader),
            _guard: guard,
            config: SamplerConfig {
                off_cpu: config.off_cpu && off_cpu_refused.is_none(),
                ..config
            },
            off_cpu_refused,
        })
    }
}

/// What every sample carries, on- and off-CPU alike (one record layout).
const SAMPLE_TYPE: u64 =
    SAMPLE_IP | SAMPLE_TID | SAMPLE_TIME | SAMPLE_PERIOD | SAMPLE_REGS_USER | SAMPLE_STACK_USER;

/// Opens the sampling event on `pid` on every CPU and maps a ring of
/// `per_cpu` bytes for each; with `config.off_cpu`, the context-switch
/// event too, into the same rings, or the reason it was refused.
fn open_rings(
    cpus: &[i32],
    pid: libc::pid_t,
    flags: u64,
    config: SamplerConfig,
    per_cpu: usize,
) -> Result<(Vec<Ring>, Option<String>), SamplerError> {
    let attr = PerfEventAttr {
        kind: PERF_TYPE_SOFTWARE,
        size: PERF_ATTR_SIZE_VER5 as u32,
        config: SW_CPU_CLOCK,
        sample_period: config.period_ns(),
        sample_type: SAMPLE_TYPE,
        flags,
        // With `watermark`, wake the reader when half a ring is full.
        wakeup_events: (per_cpu / 2) as u32,
        sample_regs_user: (1 << REG_BP) | (1 << REG_SP) | (1 << REG_IP),
        sample_stack_user: STACK_BYTES,
        clockid: libc::CLOCK_MONOTONIC,
        ..PerfEventAttr::default()
    };
    // A sample at every switch-out (in kernel mode by nature: it cannot
    // exclude the kernel), and the switch records; no side-band of its own.
    // Its kernel call chain names the system call the thread blocked in.
    let switches = PerfEventAttr {
        config: SW_CONTEXT_SWITCHES,
        sample_period: 1,
        sample_type: SAMPLE_TYPE | SAMPLE_CALLCHAIN,
        // A blocked thread's user registers are those it entered the
        // system call with: its first three arguments say what it waits on.
        sample_regs_user: (1 << REG_DX)
            | (1 << REG_SI)
            | (1 << REG_DI)
            | (1 << REG_BP)
            | (1 << REG_SP)
            | (1 << REG_IP),
        flags: DISABLED
            | INHERIT
            | ENABLE_ON_EXEC
            | EXCLUDE_HV
            | SAMPLE_ID_ALL
            | EXCLUDE_CALLCHAIN_USER
            | USE_CLOCKID
            | CONTEXT_SWITCH,
        wakeup_events: 0,
        ..attr
    };
    let mut rings = Vec::with_capacity(cpus.len());
    let mut refused = (!config.off_cpu).then(String::new);
    for &cpu in cpus {
        let event = perf_event_open_on(&attr, pid, cpu, -1)
            .map_err(|errno| SamplerError::Open(open_error(errno, config.kernel)))?;
        let mut ring = Ring::map(event, per_cpu)?;
        if refused.is_none() {
            match open_switches(&switches, pid, cpu, &ring) {
                Ok(fd) => ring.switches = Some(fd),
                Err(why) => refused = Some(why.to_string()),
            }
        }
        rings.push(ring);
    }
    if refused.is_some() {
        // All CPUs or none: a wait seen on some CPUs only would mislead.
        for ring in &mut rings {
            ring.switches = None;
        }
    }
    Ok((rings, refused.filter(|why| !why.is_empty())))
}

/// Opens the context-switch event on `cpu` and sends its records to `ring`.
fn open_switches(
    attr: &PerfEventAttr,
    pid: libc::pid_t,
    cpu: i32,
    ring: &Ring,
) -> Result<OwnedFd, OffCpuRefused> {
    // open_error says why, and for perf_event_paranoid what it needs.
    let fd = perf_event_open_on(attr, pid, cpu, -1)
        .map_err(|errno| OffCpuRefused::Open(open_error(errno, true)))?;
    // SAFETY: both are perf events of ours on the same CPU; the call takes
    // the target's descriptor as its argument.
    let set = unsafe { libc::ioctl(fd.as_raw_fd(), IOC_SET_OUTPUT, ring.event.as_raw_fd()) };
    if set != 0 {
        return Err(OffCpuRefused::NotRouted(std::io::Error::last_os_error()));
    }
    Ok(fd)
}

impl Sampler {
    /// The configuration sampled with (`off_cpu` as granted).
    pub fn config(&self) -> SamplerConfig {
        self.config
    }

    /// Why off-CPU time is not recorded although it was asked for.
    pub fn off_cpu_refused(&self) -> Option<&str> {
        self.off_cpu_refused.as_deref()
    }

    /// Stops the reader after it has read what the rings hold (call it once
    /// the runs have been waited for), and returns what it counted.
    pub fn finish(mut self) -> Collected {
        self.stop.store(true, Ordering::Release);
        let mut collected = match self.reader.take().map(|r| r.join()) {
            Some(Ok(c)) => c,
            Some(Err(panic)) => Collected {
                failed: Some(
                    panic
                        .downcast_ref::<String>()
                        .cloned()
                        .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                        .unwrap_or_else(|| "it panicked".into()),
                ),
                ..Collected::default()
            },
            None => Collected::default(),
        };
        collected.period_ns = self.config.period_ns();
        collected.kernel = self.config.kernel;
        collected.off_cpu = self.config.off_cpu;
        collected
    }
}

impl Drop for Sampler {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Release);
        if let Some(r) = self.reader.take() {
            let _ = r.join();
        }
    }
}

/// The online CPUs (`/sys/devices/system/cpu/online`), else 0..nprocs.
fn online_cpus() -> Vec<i32> {
    std::fs::read_to_string("/sys/devices/system/cpu/online")
        .ok()
        .and_then(|s| crate::settings::parse_cpu_list(s.trim()))
        .map(|v| v.into_iter().map(|c| c as i32).collect::<Vec<_>>())
        .filter(|v| !v.is_empty())
        .unwrap_or_else(|| {
            // SAFETY: sysconf has no preconditions.
            let n = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1);
            (0..n as i32).collect()
        })
}

/// `CLOCK_MONOTONIC` now, in nanoseconds (the records' clock).
fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: a valid timespec to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn waits_become_periods_that_add_up_to_the_runs_total() {
        // 0.4 + 0.4 + 0.4 + 2.7 periods: 3.9, so 4 periods in all; the
        // whole ones first, then the largest remainders.
        let p = 1_000_000;
        let out = in_periods(
            &[(1, 400_000), (2, 400_000), (3, 400_000), (4, 2_700_000)],
            p,
        );
        let total: u32 = out.iter().map(|&(_, n)| n).sum();
        assert_eq!(total, 4, "{out:?}");
        assert!(out.contains(&(4, 3)), "{out:?}");
        // Small waits are not all rounded away.
        assert_eq!(in_periods(&[(1, 300_000), (2, 300_000)], p), vec![(1, 1)]);
        assert_eq!(in_periods(&[(1, 200_000)], p), vec![]);
        assert_eq!(in_periods(&[], p), vec![]);
    }

    #[test]
    fn child_waits_are_known_in_glibcs_spellings() {
        for name in ["wait4", "__GI___wait4", "__libc_waitpid", "waitid"] {
            assert!(is_child_wait(name), "{name}");
        }
        assert!(!is_child_wait("wait_for_it"));
    }
}
