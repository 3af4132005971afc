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
use perfsleuth_model::{OffCpuReason, ProfileFrame, ProfileStack, StackProfile};
use perfsleuth_unwind::{Mapping, Maps, Symbolizer, UserStack};
use std::collections::HashMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

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
                Err(why) => refused = Some(why),
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
) -> Result<OwnedFd, String> {
    // open_error says why, and for perf_event_paranoid what it needs.
    let fd = perf_event_open_on(attr, pid, cpu, -1).map_err(|errno| {
        format!(
            "the kernel refused the context-switch event: {}",
            open_error(errno, true)
        )
    })?;
    // SAFETY: both are perf events of ours on the same CPU; the call takes
    // the target's descriptor as its argument.
    let set = unsafe { libc::ioctl(fd.as_raw_fd(), IOC_SET_OUTPUT, ring.event.as_raw_fd()) };
    if set != 0 {
        return Err(format!(
            "the kernel would not put context switches into the sampling ring ({})",
            std::io::Error::last_os_error()
        ));
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

/// The mapped ring buffer of the event.
struct Ring {
    event: OwnedFd,
    /// The context-switch event writing into this ring (a wall profile).
    switches: Option<OwnedFd>,
    base: *mut u8,
    len: usize,
    data_offset: usize,
    data_size: usize,
}

// SAFETY: the mapping is owned by the Ring and only used by the one thread
// that holds it (it is moved into the reader once).
unsafe impl Send for Ring {}

impl Ring {
    fn map(event: OwnedFd, bytes: usize) -> Result<Ring, SamplerError> {
        // SAFETY: sysconf has no preconditions.
        let page = usize::try_from(unsafe { libc::sysconf(libc::_SC_PAGESIZE) })
            .ok()
            .filter(|&p| p > 0)
            .unwrap_or(4096);
        let data = bytes;
        let len = page + data;
        // SAFETY: maps `len` bytes of the perf event's buffer, shared; the
        // kernel checks the size (1 + 2^n pages) and the lock limit.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_SHARED,
                event.as_raw_fd(),
                0,
            )
        };
        if base == libc::MAP_FAILED {
            let err = std::io::Error::last_os_error();
            return Err(SamplerError::Map(format!(
                "{err} ({} KiB a CPU; perf_event_mlock_kb and RLIMIT_MEMLOCK limit it)",
                data >> 10
            )));
        }
        let base = base.cast::<u8>();
        // SAFETY: the first page is the kernel's perf_event_mmap_page;
        // data_offset and data_size are at 1040 and 1048.
        let (off, size) = unsafe {
            (
                std::ptr::read_volatile(base.add(1040).cast::<u64>()),
                std::ptr::read_volatile(base.add(1048).cast::<u64>()),
            )
        };
        let (data_offset, data_size) = if size == 0 {
            (page, data)
        } else {
            (off as usize, size as usize)
        };
        Ok(Ring {
            event,
            switches: None,
            base,
            len,
            data_offset,
            data_size,
        })
    }

    fn head(&self) -> u64 {
        // SAFETY: data_head at offset 1024 of the control page, written by the
        // kernel; the acquire pairs with its write of the records.
        let head = unsafe { &*self.base.add(1024).cast::<std::sync::atomic::AtomicU64>() };
        head.load(Ordering::Acquire)
    }

    fn set_tail(&self, tail: u64) {
        // SAFETY: data_tail at offset 1032, ours to write; release so the
        // kernel sees the records read before it reuses the space.
        let t = unsafe { &*self.base.add(1032).cast::<std::sync::atomic::AtomicU64>() };
        t.store(tail, Ordering::Release);
    }

    fn tail(&self) -> u64 {
        // SAFETY: as in set_tail.
        let t = unsafe { &*self.base.add(1032).cast::<std::sync::atomic::AtomicU64>() };
        t.load(Ordering::Relaxed)
    }

    /// Copies `len` bytes at ring position `pos`, wrapping around the end.
    fn copy(&self, pos: u64, len: usize, out: &mut Vec<u8>) {
        out.clear();
        let start = (pos % self.data_size as u64) as usize;
        let first = len.min(self.data_size - start);
        // SAFETY: both ranges lie inside the data area of the mapping.
        unsafe {
            let data = self.base.add(self.data_offset);
            out.extend_from_slice(std::slice::from_raw_parts(data.add(start), first));
            out.extend_from_slice(std::slice::from_raw_parts(data, len - first));
        }
    }

    /// Takes every complete record up to the head, with its time.
    fn drain(&self, pending: &mut Vec<(u64, Vec<u8>)>) {
        let head = self.head();
        let mut tail = self.tail();
        let mut header = Vec::with_capacity(8);
        while tail + 8 <= head {
            self.copy(tail, 8, &mut header);
            let size = u16::from_ne_bytes([header[6], header[7]]) as u64;
            if size < 8 || tail + size > head {
                break;
            }
            let mut record = Vec::with_capacity(size as usize);
            self.copy(tail, size as usize, &mut record);
            pending.push((record_time(&record), record));
            tail += size;
        }
        self.set_tail(tail);
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly what `map` mapped.
        unsafe { libc::munmap(self.base.cast(), self.len) };
    }
}

/// The reader thread: drain, order, count; sleep until a ring is half full
/// or [`DRAIN_EVERY`] has passed.
fn read(
    rings: Vec<Ring>,
    period_ns: u64,
    kernel: Option<KernelSymbols>,
    stop: &AtomicBool,
) -> Collected {
    let mut state = State {
        events: rings.iter().map(|r| r.event.as_raw_fd()).collect(),
        nominal_ns: period_ns,
        rng: monotonic_ns() | 1,
        kernel,
        ..State::default()
    };
    let mut pending: Vec<(u64, Vec<u8>)> = Vec::new();
    let mut fds: Vec<libc::pollfd> = rings
        .iter()
        .map(|r| libc::pollfd {
            fd: r.event.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    loop {
        // Checked before draining, so what was written before the stop is read.
        let stopping = stop.load(Ordering::Acquire);
        // Every record older than this is in its ring by now: a record is
        // written when its event happens; the margin covers a virtual CPU
        // paused between the two.
        let cutoff = monotonic_ns().saturating_sub(ORDER_MARGIN_NS);
        for ring in &rings {
            ring.drain(&mut pending);
        }
        pending.sort_by_key(|(t, _)| *t);
        let ready = if stopping {
            pending.len()
        } else {
            pending.partition_point(|(t, _)| *t < cutoff)
        };
        for (_, record) in pending.drain(..ready) {
            state.record(&record);
        }
        if stopping {
            break;
        }
        for f in &mut fds {
            f.revents = 0;
        }
        // SAFETY: valid pollfds; a bounded timeout.
        unsafe {
            libc::poll(
                fds.as_mut_ptr(),
                fds.len() as libc::nfds_t,
                DRAIN_EVERY.as_millis() as libc::c_int,
            )
        };
    }
    state.collected
}

/// A record's time: a sample's own field, else the trailing `sample_id`'s
/// (`sample_id_all`: pid/tid, then time, last in the record).
fn record_time(r: &[u8]) -> u64 {
    match u32_at(r, 0) {
        Some(RECORD_SAMPLE) => u64_at(r, 24),
        _ => r.len().checked_sub(8).and_then(|i| u64_at(r, i)),
    }
    .unwrap_or(0)
}

/// Whether `source` is a file of a language's standard library, inlined
/// from its headers or sources: Rust's (`/rustc/HASH/library/…`, or a
/// local rust-src), C and C++'s system headers.
fn is_library_source(source: Option<&str>) -> bool {
    source.is_some_and(|s| {
        s.starts_with("/rustc/")
            || s.contains("/lib/rustlib/src/rust/library/")
            || s.starts_with("/usr/include/")
            || s.starts_with("/usr/lib/gcc/")
    })
}

/// What the reader counted, by kernel run number; [`Collected::report`]
/// per benchmark.
#[derive(Debug, Default)]
pub struct Collected {
    /// Runs seen starting (processes the spawner started that exec'd).
    pub runs_seen: u32,
    /// Samples lost by the kernel (ring full), in the whole session.
    pub lost: u64,
    /// Times the kernel throttled the event (too many samples per second).
    pub throttled: u64,
    /// Samples of processes no run started (none expected).
    pub outside: u64,
    /// Why the reader stopped before the end, if it did (nothing was counted then).
    pub failed: Option<String>,
    period_ns: u64,
    kernel: bool,
    /// Whether off-CPU time was recorded.
    off_cpu: bool,
    /// Context switches out of measured threads seen (off-CPU samples).
    pub switches: u64,
    frames: Vec<ProfileFrame>,
    frame_ids: HashMap<ProfileFrame, u32>,
    stacks: Vec<Vec<u32>>,
    stack_ids: HashMap<Vec<u32>, u32>,
    /// (run, stack) → samples.
    counts: HashMap<(u32, u32), u32>,
    /// run → (sum of its samples' periods, samples): a run's processes may
    /// have been sampled at different periods.
    periods: HashMap<u32, (u64, u64)>,
    /// run → samples not unwound past the sampled function.
    truncated: HashMap<u32, u64>,
    /// (run, stack ending in its `[off-cpu: …]` frame) → ns waited.
    waited: HashMap<(u32, u32), u64>,
    /// run → ns its threads waited off the CPU, in all.
    waited_total: HashMap<u32, u64>,
}

impl Collected {
    /// The profile of the runs `runs`, each given as (kernel run number,
    /// timed iteration), in the order of the iterations.
    pub fn report(&self, runs: &[(u32, u32)]) -> StackProfile {
        let mut by_stack: HashMap<u32, Vec<u32>> = HashMap::new();
        let period_of = |r: &u32| match self.periods.get(r) {
            Some(&(sum, n)) if n > 0 => (sum as f64 / n as f64).round() as u64,
            _ => self.period_ns,
        };
        for (i, (run, _)) in runs.iter().enumerate() {
            for (&(r, stack), &n) in &self.counts {
                if r == *run {
                    by_stack.entry(stack).or_insert_with(|| vec![0; runs.len()])[i] += n;
                }
            }
            let waits: Vec<(u32, u64)> = self
                .waited
                .iter()
                .filter(|((r, _), _)| r == run)
                .map(|(&(_, stack), &ns)| (stack, ns))
                .collect();
            for (stack, n) in in_periods(&waits, period_of(run)) {
                by_stack.entry(stack).or_insert_with(|| vec![0; runs.len()])[i] += n;
            }
        }
        // Only the frames these stacks use, renumbered; stacks sorted by
        // their frames' names so the document is stable.
        let mut used: Vec<(Vec<&ProfileFrame>, Vec<u32>)> = by_stack
            .into_iter()
            .map(|(id, counts)| {
                let frames = self.stacks[id as usize]
                    .iter()
                    .map(|&f| &self.frames[f as usize])
                    .collect();
                (frames, counts)
            })
            .collect();
        used.sort();
        let mut frames: Vec<ProfileFrame> = Vec::new();
        let mut index: HashMap<&ProfileFrame, u32> = HashMap::new();
        let mut stacks = Vec::with_capacity(used.len());
        for (names, counts) in used {
            let ids = names
                .into_iter()
                .map(|f| {
                    *index.entry(f).or_insert_with(|| {
                        frames.push(f.clone());
                        (frames.len() - 1) as u32
                    })
                })
                .collect();
            stacks.push(ProfileStack {
                frames: ids,
                counts,
            });
        }
        let samples = stacks
            .iter()
            .flat_map(|s| &s.counts)
            .map(|&c| u64::from(c))
            .sum();
        StackProfile {
            event: "cpu-clock".into(),
            period_ns: self.period_ns,
            kernel: self.kernel,
            iterations: runs.iter().map(|&(_, it)| it).collect(),
            periods_ns: runs.iter().map(|(r, _)| period_of(r)).collect(),
            samples,
            lost: self.lost,
            truncated: runs
                .iter()
                .map(|(r, _)| self.truncated.get(r).copied().unwrap_or(0))
                .sum(),
            frames,
            stacks,
            source: None,
            off_cpu_ns: if self.off_cpu {
                runs.iter()
                    .map(|(r, _)| self.waited_total.get(r).copied().unwrap_or(0))
                    .collect()
            } else {
                Vec::new()
            },
        }
    }

    fn frame(&mut self, f: ProfileFrame) -> u32 {
        if let Some(&id) = self.frame_ids.get(&f) {
            return id;
        }
        let id = self.frames.len() as u32;
        self.frames.push(f.clone());
        self.frame_ids.insert(f, id);
        id
    }

    fn stack(&mut self, stack: Vec<u32>) -> u32 {
        match self.stack_ids.get(&stack) {
            Some(&id) => id,
            None => {
                let id = self.stacks.len() as u32;
                self.stacks.push(stack.clone());
                self.stack_ids.insert(stack, id);
                id
            }
        }
    }

    fn count(&mut self, run: u32, stack: Vec<u32>) {
        let id = self.stack(stack);
        *self.counts.entry((run, id)).or_default() += 1;
    }

    /// Adds `ns` waited by a thread of `run` in `stack` (ending in its
    /// reason's frame).
    fn wait(&mut self, run: u32, stack: Vec<u32>, ns: u64) {
        let id = self.stack(stack);
        *self.waited.entry((run, id)).or_default() += ns;
        *self.waited_total.entry(run).or_default() += ns;
    }
}

/// One run's waits per stack (ns) as periods of `period_ns`: each stack its
/// whole periods, and the periods the run's total rounds to beyond those
/// to the stacks with the largest remainders, so that the run's periods
/// are its total time to the nearest period and no stack is rounded away
/// systematically.
fn in_periods(waits: &[(u32, u64)], period_ns: u64) -> Vec<(u32, u32)> {
    let period = period_ns.max(1);
    let total: u64 = waits.iter().map(|(_, ns)| ns).sum();
    let mut out: Vec<(u32, u32, u64)> = waits
        .iter()
        .map(|&(stack, ns)| (stack, (ns / period) as u32, ns % period))
        .collect();
    let whole: u64 = out.iter().map(|&(_, n, _)| u64::from(n)).sum();
    let extra = ((total + period / 2) / period).saturating_sub(whole) as usize;
    // Largest remainder first; ties by stack, so the result is stable.
    out.sort_by(|a, b| b.2.cmp(&a.2).then(a.0.cmp(&b.0)));
    for e in out.iter_mut().take(extra) {
        e.1 += 1;
    }
    out.into_iter()
        .filter(|&(_, n, _)| n > 0)
        .map(|(stack, n, _)| (stack, n))
        .collect()
}

/// Where a thread switched out, until it switches back in.
struct Wait {
    run: u32,
    /// Its stack's frames, outermost first (the reason's frame not yet on).
    frames: Vec<u32>,
    reason: OffCpuReason,
    since: u64,
}

/// The processes followed, their maps, and the counts so far.
#[derive(Default)]
struct State {
    /// The per-CPU events, whose period is redrawn for each run.
    events: Vec<std::os::fd::RawFd>,
    nominal_ns: u64,
    /// xorshift state for the periods.
    rng: u64,
    /// pid → its run.
    run_of: HashMap<u32, u32>,
    maps: HashMap<u32, Maps>,
    symbolizer: Symbolizer,
    collected: Collected,
    /// tid → the wait it switched out for.
    waits: HashMap<u32, Wait>,
    /// The kernel's function addresses, read at the first switch-out.
    kernel: Option<KernelSymbols>,
    /// tid → pid of the threads the followed processes started.
    threads: HashMap<u32, u32>,
}

fn u32_at(b: &[u8], i: usize) -> Option<u32> {
    Some(u32::from_ne_bytes(b.get(i..i + 4)?.try_into().ok()?))
}

fn u64_at(b: &[u8], i: usize) -> Option<u64> {
    Some(u64::from_ne_bytes(b.get(i..i + 8)?.try_into().ok()?))
}

/// The NUL-terminated string at `i`.
fn c_str(b: &[u8], i: usize) -> Option<String> {
    let rest = b.get(i..)?;
    let end = rest.iter().position(|&c| c == 0).unwrap_or(rest.len());
    Some(String::from_utf8_lossy(&rest[..end]).into_owned())
}

/// What a thread blocked in, from its kernel call chain.
#[derive(Debug, Clone, PartialEq)]
enum Blocked {
    /// A system call, by name (`futex`, `ppoll`).
    Call(String),
    /// A page fault.
    Fault,
}

/// The kernel's text symbols from `/proc/kallsyms`: their addresses in
/// order, and for the system-call entry points and the page-fault handler
/// what they are (the others are only boundaries).
#[derive(Default)]
struct KernelSymbols {
    starts: Vec<u64>,
    /// Parallel to `starts`: `Some` for the symbols a wait is told by.
    what: Vec<Option<Blocked>>,
}

impl KernelSymbols {
    /// Reads `/proc/kallsyms`; empty where the kernel hides its addresses
    /// (`kptr_restrict`, not root): then no wait is told by its chain.
    fn load() -> KernelSymbols {
        let Ok(text) = std::fs::read_to_string("/proc/kallsyms") else {
            return KernelSymbols::default();
        };
        let mut all: Vec<(u64, Option<Blocked>)> = Vec::new();
        for line in text.lines() {
            let mut parts = line.split_whitespace();
            let (Some(addr), Some(kind), Some(name)) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            if !matches!(kind, "t" | "T") {
                continue;
            }
            let Ok(addr) = u64::from_str_radix(addr, 16) else {
                continue;
            };
            if addr == 0 {
                // Hidden addresses read as zeros.
                return KernelSymbols::default();
            }
            let what = if let Some(call) = name
                .strip_prefix("__x64_sys_")
                .or_else(|| name.strip_prefix("__ia32_sys_"))
            {
                Some(Blocked::Call(call.to_string()))
            } else if name == "exc_page_fault" || name == "asm_exc_page_fault" {
                Some(Blocked::Fault)
            } else {
                None
            };
            all.push((addr, what));
        }
        all.sort_by_key(|(a, _)| *a);
        let (starts, what) = all.into_iter().unzip();
        KernelSymbols { starts, what }
    }

    /// The innermost system call or page fault in `chain` (kernel
    /// addresses, innermost first; context markers skipped).
    fn blocked_in(&self, chain: &[u64]) -> Option<Blocked> {
        // PERF_CONTEXT_* markers are the top 4095 values.
        const MARKERS: u64 = u64::MAX - 4095;
        chain.iter().filter(|&&a| a < MARKERS).find_map(|&a| {
            let at = self.starts.partition_point(|&s| s <= a).checked_sub(1)?;
            self.what[at].clone()
        })
    }
}

impl State {
    /// Whether a futex call of process `pid` with operation `op` and
    /// expected value `val` waits for one of its threads to end: a plain
    /// wait on the thread's id (mutexes and condition variables wait on
    /// small counters, robust mutexes on an owner id with the waiters bit).
    fn is_join(&self, pid: u32, op: u64, val: u64) -> bool {
        // FUTEX_WAIT and FUTEX_WAIT_BITSET, any flags.
        let cmd = op & 0x7f;
        (cmd == 0 || cmd == 9)
            && u32::try_from(val & 0xffff_ffff)
                .ok()
                .and_then(|tid| self.threads.get(&tid))
                .is_some_and(|&p| p == pid)
    }

    fn kernel_symbols(&mut self) -> &KernelSymbols {
        self.kernel.get_or_insert_with(KernelSymbols::load)
    }

    fn record(&mut self, r: &[u8]) {
        let (Some(kind), Some(misc)) = (u32_at(r, 0), r.get(4..6)) else {
            return;
        };
        let misc = u16::from_ne_bytes([misc[0], misc[1]]);
        match kind {
            RECORD_SAMPLE => self.sample(r, misc),
            RECORD_MMAP2 => self.mmap2(r),
            RECORD_COMM if misc & MISC_COMM_EXEC != 0 => {
                let Some(pid) = u32_at(r, 8) else { return };
                if !self.run_of.contains_key(&pid) {
                    self.collected.runs_seen += 1;
                    self.run_of.insert(pid, self.collected.runs_seen);
                    // This run has its period; the next one gets another.
                    self.redraw_period();
                }
                // A new program: the old mappings are gone.
                self.maps.insert(pid, Maps::default());
            }
            RECORD_FORK => {
                let (Some(pid), Some(ppid)) = (u32_at(r, 8), u32_at(r, 12)) else {
                    return;
                };
                if pid != ppid
                    && let Some(&run) = self.run_of.get(&ppid)
                {
                    self.run_of.insert(pid, run);
                    let maps = self.maps.get(&ppid).cloned().unwrap_or_default();
                    self.maps.insert(pid, maps);
                }
                // A new thread of a followed process (pid, ppid, tid, ptid).
                if pid == ppid
                    && self.run_of.contains_key(&pid)
                    && let Some(tid) = u32_at(r, 16)
                {
                    self.threads.insert(tid, pid);
                }
            }
            RECORD_EXIT => {
                let (Some(pid), Some(tid)) = (u32_at(r, 8), u32_at(r, 16)) else {
                    return;
                };
                // A thread's last switch-out is its end, not a wait.
                self.waits.remove(&tid);
                self.threads.remove(&tid);
                if pid == tid {
                    self.run_of.remove(&pid);
                    self.maps.remove(&pid);
                }
            }
            RECORD_LOST => self.collected.lost += u64_at(r, 16).unwrap_or(0),
            RECORD_LOST_SAMPLES => self.collected.lost += u64_at(r, 8).unwrap_or(0),
            RECORD_THROTTLE => self.collected.throttled += 1,
            RECORD_SWITCH => self.switch(r, misc),
            _ => {}
        }
    }

    /// Sets a period within ±[`JITTER`] of the nominal one on the events,
    /// for the runs started from now on.
    fn redraw_period(&mut self) {
        if self.nominal_ns == 0 {
            return;
        }
        self.rng ^= self.rng << 13;
        self.rng ^= self.rng >> 7;
        self.rng ^= self.rng << 17;
        let u = (self.rng >> 11) as f64 / (1u64 << 53) as f64;
        let mut period = (self.nominal_ns as f64 * (1.0 + JITTER * (2.0 * u - 1.0))) as u64;
        for &fd in &self.events {
            // SAFETY: `fd` is one of our open perf events; the kernel reads
            // one u64 through the pointer.
            unsafe { libc::ioctl(fd, IOC_PERIOD, &mut period as *mut u64) };
        }
    }

    fn mmap2(&mut self, r: &[u8]) {
        let (Some(pid), Some(start), Some(len), Some(offset), Some(prot)) = (
            u32_at(r, 8),
            u64_at(r, 16),
            u64_at(r, 24),
            u64_at(r, 32),
            u32_at(r, 64),
        ) else {
            return;
        };
        let Some(path) = c_str(r, 72) else { return };
        let maps = self.maps.entry(pid).or_default();
        let end = start.saturating_add(len);
        // A new mapping replaces whatever it overlaps.
        maps.mappings.retain(|m| m.end <= start || m.start >= end);
        let at = maps.mappings.partition_point(|m| m.start < start);
        maps.mappings.insert(
            at,
            Mapping {
                start,
                end,
                offset,
                executable: prot & libc::PROT_EXEC as u32 != 0,
                path: Some(PathBuf::from(path)),
            },
        );
    }

    /// A switch record: the end of a thread's wait (in), or that the
    /// thread left the CPU still runnable (out, preempted).
    fn switch(&mut self, r: &[u8], misc: u16) {
        // sample_id: pid, tid, time.
        let (Some(tid), Some(time)) = (u32_at(r, 12), u64_at(r, 16)) else {
            return;
        };
        if misc & MISC_SWITCH_OUT != 0 {
            if misc & MISC_SWITCH_OUT_PREEMPT != 0
                && let Some(w) = self.waits.get_mut(&tid)
            {
                w.reason = OffCpuReason::Runnable;
            }
            return;
        }
        let Some(w) = self.waits.remove(&tid) else {
            return;
        };
        let mut frames = w.frames;
        frames.push(self.collected.frame(w.reason.frame()));
        self.collected
            .wait(w.run, frames, time.saturating_sub(w.since));
    }

    fn sample(&mut self, r: &[u8], misc: u16) {
        // ip, pid/tid, time, period, regs_user (abi + bp, sp, ip), stack_user.
        let (Some(ip), Some(pid)) = (u64_at(r, 8), u32_at(r, 16)) else {
            return;
        };
        let period = u64_at(r, 32);
        // The context-switch event's samples: a thread leaving the CPU.
        let switched_out = period == Some(1);
        let Some(&run) = self.run_of.get(&pid) else {
            if !switched_out {
                self.collected.outside += 1;
            }
            return;
        };
        if let Some(period) = period.filter(|_| !switched_out) {
            let e = self.collected.periods.entry(run).or_default();
            e.0 = e.0.saturating_add(period);
            e.1 += 1;
        }
        let mut at = 8 + 8 + 8 + 8 + 8;
        // A switch-out's kernel call chain: nr, then the addresses.
        let mut syscall = None;
        if switched_out {
            let nr = usize::try_from(u64_at(r, at).unwrap_or(0)).unwrap_or(0);
            let chain: Vec<u64> = (0..nr.min(256))
                .filter_map(|i| u64_at(r, at + 8 + 8 * i))
                .collect();
            syscall = self.kernel_symbols().blocked_in(&chain);
            at += 8 + 8 * nr;
        }
        let abi = u64_at(r, at).unwrap_or(0);
        at += 8;
        // A switch-out's system-call arguments: di, si, dx.
        let mut args = [0u64; 3];
        if switched_out && abi != 0 {
            for (i, a) in [2, 1, 0].into_iter().zip(0..) {
                args[i] = u64_at(r, at + 8 * a).unwrap_or(0);
            }
            at += 24;
        }
        let regs = if abi != 0 {
            let regs = (u64_at(r, at), u64_at(r, at + 8), u64_at(r, at + 16));
            at += 24;
            match regs {
                (Some(bp), Some(sp), Some(ip)) => Some((bp, sp, ip)),
                _ => None,
            }
        } else {
            None
        };
        let size = usize::try_from(u64_at(r, at).unwrap_or(0)).unwrap_or(usize::MAX);
        at += 8;
        let end = at.saturating_add(size);
        let stack = r.get(at..end).unwrap_or(&[]);
        let dyn_size = if size > 0 {
            usize::try_from(u64_at(r, end).unwrap_or(0)).unwrap_or(0)
        } else {
            0
        };
        let stack = &stack[..dyn_size.min(stack.len())];
        let kernel = misc & MISC_CPUMODE_MASK == MISC_KERNEL && !switched_out;
        let frames = match (regs, self.maps.get(&pid)) {
            (Some((bp, sp, uip)), Some(maps)) => self.symbolizer.unwind(
                &UserStack {
                    ip: uip,
                    sp,
                    bp,
                    stack,
                },
                maps,
            ),
            _ => Vec::new(),
        };
        if switched_out {
            let (Some(tid), Some(time)) = (u32_at(r, 20), u64_at(r, 24)) else {
                return;
            };
            self.collected.switches += 1;
            // The system call, else the C library function the stack ends in.
            let blocked = syscall.unwrap_or_else(|| {
                let leaf = frames.first().map_or("", |f| f.function.as_str());
                Blocked::Call(leaf.to_string())
            });
            let reason = match &blocked {
                // Waiting for a child: the child's time is the child's.
                Blocked::Call(name) if is_child_wait(name) => return,
                // Joining a thread: glibc waits on the futex word that holds
                // the thread's id until the kernel clears it at its exit;
                // the thread's time is its own.
                Blocked::Call(name) if name == "futex" && self.is_join(pid, args[1], args[2]) => {
                    return;
                }
                Blocked::Call(name) => OffCpuReason::of_blocking_function(name),
                Blocked::Fault => OffCpuReason::Other,
            };
            let ids = self.frame_ids(pid, regs.map_or(ip, |(_, _, uip)| uip), frames);
            self.waits.insert(
                tid,
                Wait {
                    run,
                    frames: ids,
                    reason,
                    since: time,
                },
            );
            return;
        }
        if frames.len() <= 1 {
            *self.collected.truncated.entry(run).or_default() += 1;
        }
        let mut ids = self.frame_ids(pid, regs.map_or(ip, |(_, _, uip)| uip), frames);
        if kernel {
            ids.push(self.collected.frame(ProfileFrame {
                function: "[kernel]".into(),
                module: "[kernel]".into(),
                inlined: false,
            }));
        }
        self.collected.count(run, ids);
    }

    /// The frame ids of an unwound stack (`frames` innermost first),
    /// outermost first; where nothing unwound, the file or JIT code
    /// `user_ip` is in.
    fn frame_ids(
        &mut self,
        pid: u32,
        user_ip: u64,
        mut frames: Vec<perfsleuth_unwind::Frame>,
    ) -> Vec<u32> {
        let mut ids = Vec::with_capacity(frames.len() + 1);
        if frames.is_empty() {
            let module = self
                .maps
                .get(&pid)
                .and_then(|m| m.find(user_ip))
                .and_then(|m| m.path.as_ref())
                .map(|p| {
                    p.file_name().map_or_else(
                        || p.display().to_string(),
                        |n| n.to_string_lossy().into_owned(),
                    )
                });
            // Code in no file (a JIT's, `//anon` in the mmap records) or
            // in a file that could not be read.
            let anonymous = module
                .as_deref()
                .is_none_or(|m| m == "anon" || m.starts_with("[anon") || m.starts_with("memfd:"));
            ids.push(self.collected.frame(if anonymous {
                ProfileFrame {
                    function: "[anonymous code]".into(),
                    module: "[anon]".into(),
                    inlined: false,
                }
            } else {
                let m = module.unwrap_or_default();
                ProfileFrame {
                    function: format!("[{m}]"),
                    module: m,
                    inlined: false,
                }
            }));
        }
        // Outermost first.
        frames.reverse();
        for f in frames {
            // A standard library function inlined into the program's own
            // (`Range::next`, `u64::lt`) is no call of its own: its time is
            // its caller's.
            if f.inlined && is_library_source(f.source.as_deref()) {
                continue;
            }
            ids.push(self.collected.frame(ProfileFrame {
                function: f.function,
                module: f.file,
                inlined: f.inlined,
            }));
        }
        ids
    }
}

/// Whether a thread blocked in `function` waits for a child process.
fn is_child_wait(function: &str) -> bool {
    let n = function.trim_start_matches('_');
    let n = n.strip_prefix("GI_").unwrap_or(n).trim_start_matches('_');
    let n = n.strip_prefix("libc_").unwrap_or(n);
    matches!(n, "wait4" | "waitpid" | "waitid" | "wait" | "wait3")
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
