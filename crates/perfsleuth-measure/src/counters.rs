//! Performance counters through `perf_event_open`, counted per iteration.
//!
//! **How.** The process that spawns the benchmarked commands (the spawner,
//! see [`crate::Spawner::enable_counters`]) opens every counter on *itself*
//! (pid 0, any CPU) with `inherit`, `disabled` and `enable_on_exec`. A child
//! it spawns inherits disabled copies that start counting when the child
//! execs; the child's threads and children inherit them in turn, and when
//! they exit the kernel folds their counts into the spawner's events. The
//! spawner never execs, so its own work is never counted: reading its events
//! before the spawn and after `wait4` gives, as a delta, what that iteration's
//! whole process tree did from `exec` on. Both reads are outside the timed
//! region. A process the command leaves running in the background keeps
//! counting into whichever iteration reads it next.
//!
//! **The guard event.** The kernel swaps the perf contexts of two tasks whose
//! contexts are clones of each other instead of switching them out and in (a
//! context-switch shortcut). A child that inherited *every* event has such a
//! clone, so the spawner's own events could end up in the child, get enabled
//! by its exec and die with it: measured on 6.18, counting then stops for
//! good after the first or second iteration. One event that is *not*
//! inherited (a disabled dummy, and a disabled hardware event for kernels
//! before 6.2, which keep hardware events in a context of their own) makes
//! the contexts differ, and the shortcut never applies.
//!
//! **Reads.** Each group is read with one `read` (`PERF_FORMAT_GROUP`, which
//! works with `inherit` on current kernels; where the kernel refuses the
//! combination the counters are opened and read one by one). Values are
//! scaled for multiplexing, `value × time_enabled / time_running` over the
//! iteration; when any group ran for only part of the time,
//! `counters_running_fraction` holds the smallest `running / enabled`, and a
//! counter that never ran is left out rather than guessed.
//!
//! **Keys** in [`perfsleuth_model::Sample::counters`]:
//! - hardware (user space only unless [`CounterConfig::include_kernel`]):
//!   `instructions`, `cycles`, `cache_references`, `cache_misses`,
//!   `branches`, `branch_misses`, opened as the pairs
//!   (instructions, cycles), (cache_references, cache_misses),
//!   (branches, branch_misses) so that each ratio comes from one schedule;
//! - software (always including kernel mode, where context switches
//!   happen): `task_clock_ns`, `context_switches`, `cpu_migrations`,
//!   `page_faults`;
//! - tracepoints, only with [`CounterConfig::tracepoints`] (ids from tracefs
//!   at `/sys/kernel/tracing` or `/sys/kernel/debug/tracing`, never mounted
//!   by us): `futex_calls`
//!   (`syscalls:sys_enter_futex`; 64-bit `futex` only, not the futex2
//!   syscalls nor 32-bit compat calls) and `sched_switches`
//!   (`sched:sched_switch`, the times a counted task was switched out);
//! - `counters_running_fraction`, see above.
//!
//! Counters that cannot be opened are reported in [`CounterStatus`] with a
//! one-line reason; they never make a run fail.
//!
//! **Costs** (measured on a 2-CPU VM, kernel 6.18). Outside the timed
//! region: reading a group takes about 1 µs. Inside it: the kernel copies
//! every inherited event into each process *and thread* the command creates
//! and folds it back at exit, about 4 µs per software event and 15 µs per
//! tracepoint for each process (`/bin/true`: +15 µs with the four software
//! counters, +40–50 µs with the tracepoints too); this is a constant per
//! task, the same in every run with the same counters. And while a syscall
//! tracepoint exists, *every* system call on the machine takes the kernel's
//! traced slow path (about +30 ns each: `dd bs=1` ran 14 % slower), which is
//! why tracepoints are opt-in. `sched_switch` costs nothing measurable.

use std::collections::BTreeMap;
use std::os::fd::{AsRawFd, OwnedFd};
use std::path::{Path, PathBuf};

/// Which counters to open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum CounterSelection {
    /// None: nothing is opened and samples carry no counters.
    #[default]
    None,
    /// Software counters (and tracepoints with [`CounterConfig::tracepoints`]).
    Software,
    /// Hardware counters too.
    All,
}

/// What to count.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CounterConfig {
    /// Which counters.
    pub selection: CounterSelection,
    /// Count hardware events in kernel mode too (needs
    /// `perf_event_paranoid` ≤ 1 or CAP_PERFMON). Software counters and
    /// tracepoints always include kernel mode.
    pub include_kernel: bool,
    /// With `Software` or `All`, also count the `futex_calls` and
    /// `sched_switches` tracepoints. Off by default: while the syscall
    /// tracepoint is open every system call on the machine is slower (see
    /// the module docs).
    pub tracepoints: bool,
    /// Where tracefs is mounted; `None` looks at `/sys/kernel/tracing`, then
    /// `/sys/kernel/debug/tracing`.
    pub tracefs: Option<PathBuf>,
}

/// What [`Counters::open`] managed to open.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CounterStatus {
    /// Keys of the counters that are counted, in opening order.
    pub opened: Vec<String>,
    /// A counter, or a whole group (`hardware`, `software`, `tracepoints`)
    /// when all its counters failed alike, with a one-line reason.
    pub unavailable: Vec<(String, String)>,
}

/// Key of the smallest `time_running / time_enabled` of an iteration in
/// which some counter was multiplexed.
pub const RUNNING_FRACTION_KEY: &str = "counters_running_fraction";
use crate::perf::*;

// ---- what to open ----------------------------------------------------------

#[derive(Clone, Copy)]
enum Source {
    Hardware(u64),
    Software(u64),
    /// `subsystem/event` under tracefs `events/`.
    Tracepoint(&'static str),
}

#[derive(Clone, Copy)]
struct Spec {
    key: &'static str,
    source: Source,
}

const fn spec(key: &'static str, source: Source) -> Spec {
    Spec { key, source }
}

const SOFTWARE: [Spec; 4] = [
    spec("task_clock_ns", Source::Software(SW_TASK_CLOCK)),
    spec("context_switches", Source::Software(SW_CONTEXT_SWITCHES)),
    spec("cpu_migrations", Source::Software(SW_CPU_MIGRATIONS)),
    spec("page_faults", Source::Software(SW_PAGE_FAULTS)),
];
const TRACEPOINTS: [Spec; 2] = [
    spec(
        "futex_calls",
        Source::Tracepoint("syscalls/sys_enter_futex"),
    ),
    spec("sched_switches", Source::Tracepoint("sched/sched_switch")),
];
const HARDWARE: [[Spec; 2]; 3] = [
    [
        spec("instructions", Source::Hardware(HW_INSTRUCTIONS)),
        spec("cycles", Source::Hardware(HW_CPU_CYCLES)),
    ],
    [
        spec("cache_references", Source::Hardware(HW_CACHE_REFERENCES)),
        spec("cache_misses", Source::Hardware(HW_CACHE_MISSES)),
    ],
    [
        spec("branches", Source::Hardware(HW_BRANCH_INSTRUCTIONS)),
        spec("branch_misses", Source::Hardware(HW_BRANCH_MISSES)),
    ],
];

/// Where tracefs is looked for when [`CounterConfig::tracefs`] is `None`.
pub const TRACEFS_DIRS: [&str; 2] = ["/sys/kernel/tracing", "/sys/kernel/debug/tracing"];

// ---- the open counters -------------------------------------------------------

/// One reading of a counter: value, time enabled, time running.
#[derive(Debug, Clone, Copy, Default)]
struct Reading {
    value: u64,
    enabled: u64,
    running: u64,
}

#[derive(Debug)]
struct Group {
    /// With `grouped`, `fds[0]` is the leader and one read returns all.
    fds: Vec<OwnedFd>,
    keys: Vec<&'static str>,
    grouped: bool,
    /// The readings taken by [`Counters::start`].
    before: Vec<Reading>,
}

/// Counters opened on the calling thread, inherited by the processes it
/// spawns afterwards. Spawn the measured child from this same thread, and
/// only one at a time: every child's counts land in the same events.
#[derive(Debug, Default)]
pub struct Counters {
    groups: Vec<Group>,
    /// Non-inherited events that keep children's perf contexts from being
    /// clones of ours (see the module docs). Never enabled.
    _guards: Vec<OwnedFd>,
    buf: Vec<u64>,
    /// Whether [`Counters::start`] read all groups.
    started: bool,
}

impl Counters {
    /// Opens the selected counters on the calling thread. Counters that fail
    /// are reported in the status, never as an error.
    pub fn open(cfg: &CounterConfig) -> (Counters, CounterStatus) {
        Counters::open_with(cfg, true)
    }

    fn open_with(cfg: &CounterConfig, try_group: bool) -> (Counters, CounterStatus) {
        let mut counters = Counters::default();
        let mut status = CounterStatus::default();
        if cfg.selection == CounterSelection::None {
            return (counters, status);
        }
        // The guard comes first: an event inherited before it exists would
        // not be affected, but no child is spawned while we open anyway.
        let guard = PerfEventAttr {
            kind: PERF_TYPE_SOFTWARE,
            config: SW_DUMMY,
            flags: DISABLED | EXCLUDE_KERNEL | EXCLUDE_HV,
            ..attr_base()
        };
        match perf_event_open(&guard, 0, -1) {
            Ok(fd) => counters._guards.push(fd),
            Err(errno) => {
                let why = open_error(errno, false);
                let mut groups = vec!["software"];
                if cfg.selection == CounterSelection::All {
                    groups.insert(0, "hardware");
                }
                if cfg.tracepoints {
                    groups.push("tracepoints");
                }
                for g in groups {
                    status.unavailable.push((g.to_string(), why.clone()));
                }
                return (counters, status);
            }
        }

        if cfg.selection == CounterSelection::All {
            let mut failures = Vec::new();
            for pair in &HARDWARE {
                let group = open_group(pair, !cfg.include_kernel, None, try_group, &mut failures);
                counters.add(group, &mut status);
            }
            if !counters.groups.is_empty() {
                // Kernels before 6.2 keep hardware events in a perf context of
                // their own, which needs its own guard.
                let hw_guard = PerfEventAttr {
                    kind: PERF_TYPE_HARDWARE,
                    config: HW_INSTRUCTIONS,
                    flags: DISABLED | EXCLUDE_KERNEL | EXCLUDE_HV,
                    ..attr_base()
                };
                if let Ok(fd) = perf_event_open(&hw_guard, 0, -1) {
                    counters._guards.push(fd);
                }
            }
            report(&mut status, "hardware", 6, failures);
        }

        let mut failures = Vec::new();
        let group = open_group(&SOFTWARE, false, None, try_group, &mut failures);
        counters.add(group, &mut status);
        report(&mut status, "software", SOFTWARE.len(), failures);

        if cfg.tracepoints {
            let mut failures = Vec::new();
            let tracefs = find_tracefs(cfg.tracefs.as_deref());
            let group = open_group(
                &TRACEPOINTS,
                false,
                Some(&tracefs),
                try_group,
                &mut failures,
            );
            counters.add(group, &mut status);
            report(&mut status, "tracepoints", TRACEPOINTS.len(), failures);
        }

        (counters, status)
    }

    fn add(&mut self, group: Option<Group>, status: &mut CounterStatus) {
        if let Some(g) = group {
            status.opened.extend(g.keys.iter().map(|k| k.to_string()));
            self.groups.push(g);
        }
    }

    /// Whether nothing is counted.
    pub fn is_empty(&self) -> bool {
        self.groups.is_empty()
    }

    /// Whether every group is read with a single `read` (`PERF_FORMAT_GROUP`).
    pub fn group_reads(&self) -> bool {
        self.groups.iter().all(|g| g.grouped)
    }

    /// Reads every counter before the child is spawned.
    pub fn start(&mut self) {
        self.started = true;
        for i in 0..self.groups.len() {
            match read_group(&self.groups[i], &mut self.buf) {
                Some(readings) => self.groups[i].before = readings,
                None => self.started = false,
            }
        }
    }

    /// Reads every counter after the child was reaped and adds the
    /// iteration's (scaled) counts to `out`. Adds nothing if a read failed.
    pub fn finish(&mut self, out: &mut BTreeMap<String, f64>) {
        if !std::mem::take(&mut self.started) {
            return;
        }
        let mut min_fraction = 1.0f64;
        let mut values = Vec::with_capacity(self.groups.len() * 4);
        for group in &self.groups {
            let Some(after) = read_group(group, &mut self.buf) else {
                return;
            };
            for ((key, b), a) in group.keys.iter().zip(&group.before).zip(&after) {
                let (value, fraction) = scale(b, a);
                min_fraction = min_fraction.min(fraction);
                if let Some(v) = value {
                    values.push((*key, v));
                }
            }
        }
        for (k, v) in values {
            out.insert(k.to_string(), v);
        }
        if min_fraction < 1.0 {
            out.insert(RUNNING_FRACTION_KEY.to_string(), min_fraction);
        }
    }
}

/// The counter's delta between two readings, scaled by enabled / running
/// time, and the fraction of the time it ran. `None` when it was enabled
/// but never ran (multiplexed out the whole time).
fn scale(before: &Reading, after: &Reading) -> (Option<f64>, f64) {
    let value = after.value.wrapping_sub(before.value) as f64;
    let enabled = after.enabled.saturating_sub(before.enabled);
    let running = after.running.saturating_sub(before.running);
    if running >= enabled {
        (Some(value), 1.0)
    } else if running == 0 {
        (None, 0.0)
    } else {
        (
            Some(value * enabled as f64 / running as f64),
            running as f64 / enabled as f64,
        )
    }
}

fn read_group(group: &Group, buf: &mut Vec<u64>) -> Option<Vec<Reading>> {
    if group.grouped {
        // { nr, time_enabled, time_running, value[nr] }
        let n = 3 + group.keys.len();
        buf.resize(n, 0);
        read_u64s(&group.fds[0], &mut buf[..n])?;
        if buf[0] as usize != group.keys.len() {
            return None;
        }
        Some(
            buf[3..n]
                .iter()
                .map(|&value| Reading {
                    value,
                    enabled: buf[1],
                    running: buf[2],
                })
                .collect(),
        )
    } else {
        // { value, time_enabled, time_running } per descriptor.
        let mut out = Vec::with_capacity(group.fds.len());
        let mut one = [0u64; 3];
        for fd in &group.fds {
            read_u64s(fd, &mut one)?;
            out.push(Reading {
                value: one[0],
                enabled: one[1],
                running: one[2],
            });
        }
        Some(out)
    }
}

fn read_u64s(fd: &OwnedFd, buf: &mut [u64]) -> Option<()> {
    let bytes = std::mem::size_of_val(buf);
    // SAFETY: buf is valid for `bytes` bytes of writes.
    let n = unsafe { libc::read(fd.as_raw_fd(), buf.as_mut_ptr().cast(), bytes) };
    (n == bytes as isize).then_some(())
}

/// Zeroed attr with size, read format for single reads, nothing else.
fn attr_base() -> PerfEventAttr {
    PerfEventAttr {
        size: PERF_ATTR_SIZE_VER5 as u32,
        read_format: FORMAT_TOTAL_TIME_ENABLED | FORMAT_TOTAL_TIME_RUNNING,
        ..Default::default()
    }
}

/// Opens `specs` as one group (or, where the kernel refuses group reads
/// with `inherit`, one by one). Failures go to `failures` as (key, reason).
fn open_group(
    specs: &[Spec],
    exclude_kernel_hw: bool,
    tracefs: Option<&Result<PathBuf, TracefsError>>,
    try_group: bool,
    failures: &mut Vec<(&'static str, String)>,
) -> Option<Group> {
    let mut resolved = Vec::new();
    for s in specs {
        let (kind, config, kernel_mode) = match s.source {
            Source::Hardware(c) => (PERF_TYPE_HARDWARE, c, !exclude_kernel_hw),
            Source::Software(c) => (PERF_TYPE_SOFTWARE, c, true),
            Source::Tracepoint(name) => {
                let dir = match tracefs {
                    Some(Ok(dir)) => dir,
                    Some(Err(why)) => {
                        failures.push((s.key, why.to_string()));
                        continue;
                    }
                    None => unreachable!("tracepoints need a tracefs lookup"),
                };
                match tracepoint_id(dir, name) {
                    Ok(id) => (PERF_TYPE_TRACEPOINT, id, true),
                    Err(why) => {
                        failures.push((s.key, why.to_string()));
                        continue;
                    }
                }
            }
        };
        let mut flags = DISABLED | INHERIT | ENABLE_ON_EXEC;
        if kind == PERF_TYPE_HARDWARE {
            flags |= EXCLUDE_HV;
            if !kernel_mode {
                flags |= EXCLUDE_KERNEL;
            }
        }
        resolved.push((
            s.key,
            PerfEventAttr {
                kind,
                config,
                flags,
                ..attr_base()
            },
            kernel_mode,
        ));
    }
    if resolved.is_empty() {
        return None;
    }
    if try_group {
        let mut fds: Vec<OwnedFd> = Vec::new();
        let mut keys = Vec::new();
        let mut group_failures = Vec::new();
        let mut refused = false;
        for (key, attr, kernel_mode) in &resolved {
            let attr = PerfEventAttr {
                read_format: attr.read_format | FORMAT_GROUP,
                ..*attr
            };
            let leader = fds.first().map_or(-1, |f| f.as_raw_fd());
            match perf_event_open(&attr, 0, leader) {
                Ok(fd) => {
                    fds.push(fd);
                    keys.push(*key);
                }
                // EINVAL: maybe this kernel refuses PERF_FORMAT_GROUP with
                // inherit; the one-by-one attempt below tells.
                Err(libc::EINVAL) => {
                    refused = true;
                    break;
                }
                Err(errno) => group_failures.push((*key, open_error(errno, *kernel_mode))),
            }
        }
        if !refused {
            failures.extend(group_failures);
            return (!fds.is_empty()).then(|| Group {
                before: vec![Reading::default(); keys.len()],
                fds,
                keys,
                grouped: true,
            });
        }
    }
    let mut fds = Vec::new();
    let mut keys = Vec::new();
    for (key, attr, kernel_mode) in &resolved {
        match perf_event_open(attr, 0, -1) {
            Ok(fd) => {
                fds.push(fd);
                keys.push(*key);
            }
            Err(errno) => failures.push((*key, open_error(errno, *kernel_mode))),
        }
    }
    (!fds.is_empty()).then(|| Group {
        before: vec![Reading::default(); keys.len()],
        fds,
        keys,
        grouped: false,
    })
}

/// Reports a category's failures: once for the whole category when every
/// counter in it failed for the same reason, else one by one.
fn report(
    status: &mut CounterStatus,
    category: &str,
    total: usize,
    failures: Vec<(&'static str, String)>,
) {
    let all_alike = failures.len() == total && failures.windows(2).all(|w| w[0].1 == w[1].1);
    if all_alike && total > 0 {
        status
            .unavailable
            .push((category.to_string(), failures[0].1.clone()));
    } else {
        status
            .unavailable
            .extend(failures.into_iter().map(|(k, why)| (k.to_string(), why)));
    }
}

/// Why tracepoints cannot be opened: reported as the reason a tracepoint
/// counter (or the whole group) is unavailable.
#[derive(Debug, thiserror::Error)]
enum TracefsError {
    /// tracefs is there but this process may not read it.
    #[error("tracefs not readable at {} (permission denied)", .0.display())]
    Denied(PathBuf),
    /// tracefs is at none of the places looked at.
    #[error("tracefs is not mounted at {}", .0.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(" or "))]
    NotMounted(Vec<PathBuf>),
    /// A tracepoint's id file holds no number.
    #[error("unexpected tracepoint id in {}", .0.display())]
    BadId(PathBuf),
    /// The kernel has no system-call tracepoints.
    #[error("no syscalls:{0} tracepoint (kernel built without CONFIG_FTRACE_SYSCALLS)")]
    NoSyscallTracepoint(String),
    /// The kernel has no such tracepoint.
    #[error("no {subsystem}:{event} tracepoint in {}", tracefs.display())]
    NoTracepoint {
        /// The tracepoint's subsystem.
        subsystem: String,
        /// The tracepoint's event.
        event: String,
        /// The tracefs it was looked for in.
        tracefs: PathBuf,
    },
    /// A tracepoint's id file could not be read.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        /// The id file.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
}

/// The tracefs directory to read tracepoint ids from, or why there is none.
fn find_tracefs(configured: Option<&Path>) -> Result<PathBuf, TracefsError> {
    let candidates: Vec<&Path> = match configured {
        Some(p) => vec![p],
        None => TRACEFS_DIRS.iter().map(Path::new).collect(),
    };
    let mut denied = None;
    for dir in &candidates {
        match std::fs::metadata(dir.join("events")) {
            Ok(m) if m.is_dir() => return Ok(dir.to_path_buf()),
            Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
                denied.get_or_insert(*dir);
            }
            _ => {}
        }
    }
    Err(match denied {
        Some(dir) => TracefsError::Denied(dir.to_path_buf()),
        None => TracefsError::NotMounted(candidates.iter().map(|p| p.to_path_buf()).collect()),
    })
}

/// The id of tracepoint `name` (`subsystem/event`) under `tracefs`.
fn tracepoint_id(tracefs: &Path, name: &str) -> Result<u64, TracefsError> {
    let path = tracefs.join("events").join(name).join("id");
    let (subsystem, event) = name.split_once('/').unwrap_or(("", name));
    match std::fs::read_to_string(&path) {
        Ok(text) => text.trim().parse().map_err(|_| TracefsError::BadId(path)),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => {
            Err(TracefsError::Denied(tracefs.to_path_buf()))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(if subsystem == "syscalls" {
            TracefsError::NoSyscallTracepoint(event.to_string())
        } else {
            TracefsError::NoTracepoint {
                subsystem: subsystem.to_string(),
                event: event.to_string(),
                tracefs: tracefs.to_path_buf(),
            }
        }),
        Err(source) => Err(TracefsError::Read { path, source }),
    }
}

/// Which counter groups this process may open — `hardware`, `software`,
/// `tracepoints` — each `Ok` or the one-line reason the kernel (or a missing
/// tracefs) refused it. Opens the groups exactly as a measured run would and
/// closes them again, so the environment fingerprint and `run` never disagree.
pub fn availability() -> [(&'static str, Result<(), String>); 3] {
    let cfg = CounterConfig {
        selection: CounterSelection::All,
        include_kernel: false,
        tracepoints: true,
        tracefs: None,
    };
    let (counters, status) = Counters::open(&cfg);
    drop(counters);
    let hardware: Vec<&str> = HARDWARE.iter().flatten().map(|s| s.key).collect();
    let software: Vec<&str> = SOFTWARE.iter().map(|s| s.key).collect();
    let tracepoints: Vec<&str> = TRACEPOINTS.iter().map(|s| s.key).collect();
    let answer = |group: &str, keys: &[&str]| -> Result<(), String> {
        if status.opened.iter().any(|k| keys.contains(&k.as_str())) {
            return Ok(());
        }
        let why = status
            .unavailable
            .iter()
            .find(|(what, _)| what == group || keys.contains(&what.as_str()))
            .map_or_else(|| "not opened".to_string(), |(_, why)| why.clone());
        Err(why)
    };
    [
        ("hardware", answer("hardware", &hardware)),
        ("software", answer("software", &software)),
        ("tracepoints", answer("tracepoints", &tracepoints)),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn software() -> CounterConfig {
        CounterConfig {
            selection: CounterSelection::Software,
            ..Default::default()
        }
    }

    #[test]
    fn scaling_for_multiplexing() {
        let b = Reading {
            value: 100,
            enabled: 1000,
            running: 1000,
        };
        let full = Reading {
            value: 600,
            enabled: 2000,
            running: 2000,
        };
        assert_eq!(scale(&b, &full), (Some(500.0), 1.0));
        let half = Reading {
            value: 600,
            enabled: 2000,
            running: 1500,
        };
        assert_eq!(scale(&b, &half), (Some(1000.0), 0.5));
        let never = Reading {
            value: 100,
            enabled: 2000,
            running: 1000,
        };
        assert_eq!(scale(&b, &never), (None, 0.0));
        // Not enabled at all in the interval (no exec): zero, not scaled.
        assert_eq!(scale(&b, &b), (Some(0.0), 1.0));
    }

    #[test]
    fn attr_is_the_ver5_size() {
        assert_eq!(std::mem::size_of::<PerfEventAttr>(), 112);
        assert_eq!(std::mem::offset_of!(PerfEventAttr, config1), 56);
        assert_eq!(std::mem::offset_of!(PerfEventAttr, sample_regs_intr), 96);
    }

    #[test]
    fn none_opens_nothing() {
        let (c, status) = Counters::open(&CounterConfig::default());
        assert!(c.is_empty());
        assert_eq!(status, CounterStatus::default());
    }

    #[test]
    fn a_missing_tracefs_is_reported_once_for_the_group() {
        let cfg = CounterConfig {
            tracepoints: true,
            tracefs: Some(PathBuf::from("/nonexistent/tracefs")),
            ..software()
        };
        let (_c, status) = Counters::open(&cfg);
        assert!(
            status.unavailable.contains(&(
                "tracepoints".into(),
                "tracefs is not mounted at /nonexistent/tracefs".into()
            )),
            "{status:?}"
        );
    }

    #[test]
    fn one_by_one_reads_match_the_group_layout() {
        // Forces the fallback a kernel without group reads for inherited
        // events would take, and checks that it opens the same counters.
        let (grouped, s1) = Counters::open_with(&software(), true);
        let (single, s2) = Counters::open_with(&software(), false);
        assert_eq!(s1, s2);
        if grouped.is_empty() {
            perfsleuth_testkit::skip(
                "perf_software",
                format!("software counters: {:?}", s1.unavailable),
            );
            return;
        }
        assert!(grouped.group_reads());
        assert!(!single.group_reads());
        let mut c = single;
        c.start();
        let mut out = BTreeMap::new();
        c.finish(&mut out);
        // This process never execs, so nothing was counted.
        assert_eq!(out.get("task_clock_ns"), Some(&0.0), "{out:?}");
    }

    #[test]
    fn reasons_name_the_cause() {
        assert!(open_error(libc::ENOENT, false).contains("not supported"));
        assert!(open_error(libc::ENOENT, false).contains("ENOENT"));
        assert!(open_error(libc::ENOSYS, false).contains("ENOSYS"));
        let denied = open_error(libc::EACCES, true);
        assert!(
            denied.contains("perf_event_paranoid") || denied.contains("not permitted"),
            "{denied}"
        );
    }
}
