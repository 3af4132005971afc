//! The `perf_event_open` ABI shared by the counters and the sampler: the
//! attribute struct, its constants, the call, and why it failed.

use std::os::fd::{FromRawFd, OwnedFd};

/// `struct perf_event_attr` as of `PERF_ATTR_SIZE_VER5`; newer kernels
/// accept a smaller struct and treat the missing tail as zero.
#[repr(C)]
#[derive(Default)]
pub(crate) struct PerfEventAttr {
    pub(crate) kind: u32,
    pub(crate) size: u32,
    pub(crate) config: u64,
    pub(crate) sample_period: u64,
    pub(crate) sample_type: u64,
    pub(crate) read_format: u64,
    pub(crate) flags: u64,
    pub(crate) wakeup_events: u32,
    pub(crate) bp_type: u32,
    pub(crate) config1: u64,
    pub(crate) config2: u64,
    pub(crate) branch_sample_type: u64,
    pub(crate) sample_regs_user: u64,
    pub(crate) sample_stack_user: u32,
    pub(crate) clockid: i32,
    pub(crate) sample_regs_intr: u64,
    pub(crate) aux_watermark: u32,
    pub(crate) sample_max_stack: u16,
    pub(crate) reserved: u16,
}

pub(crate) const PERF_ATTR_SIZE_VER5: usize = 112;
const _: () = assert!(std::mem::size_of::<PerfEventAttr>() == PERF_ATTR_SIZE_VER5);

pub(crate) const PERF_TYPE_HARDWARE: u32 = 0;
pub(crate) const PERF_TYPE_SOFTWARE: u32 = 1;
pub(crate) const PERF_TYPE_TRACEPOINT: u32 = 2;

pub(crate) const HW_CPU_CYCLES: u64 = 0;
pub(crate) const HW_INSTRUCTIONS: u64 = 1;
pub(crate) const HW_CACHE_REFERENCES: u64 = 2;
pub(crate) const HW_CACHE_MISSES: u64 = 3;
pub(crate) const HW_BRANCH_INSTRUCTIONS: u64 = 4;
pub(crate) const HW_BRANCH_MISSES: u64 = 5;

pub(crate) const SW_TASK_CLOCK: u64 = 1;
pub(crate) const SW_PAGE_FAULTS: u64 = 2;
pub(crate) const SW_CONTEXT_SWITCHES: u64 = 3;
pub(crate) const SW_CPU_MIGRATIONS: u64 = 4;
pub(crate) const SW_DUMMY: u64 = 9;
pub(crate) const SW_CPU_CLOCK: u64 = 0;

// perf_event_attr flag bits.
pub(crate) const DISABLED: u64 = 1 << 0;
pub(crate) const INHERIT: u64 = 1 << 1;
pub(crate) const EXCLUDE_KERNEL: u64 = 1 << 5;
pub(crate) const EXCLUDE_HV: u64 = 1 << 6;
pub(crate) const ENABLE_ON_EXEC: u64 = 1 << 12;
// Side-band records and sample layout bits (the sampler's).
pub(crate) const MMAP: u64 = 1 << 8;
pub(crate) const COMM: u64 = 1 << 9;
pub(crate) const TASK: u64 = 1 << 13;
pub(crate) const WATERMARK: u64 = 1 << 14;
pub(crate) const SAMPLE_ID_ALL: u64 = 1 << 18;
pub(crate) const EXCLUDE_CALLCHAIN_KERNEL: u64 = 1 << 21;
pub(crate) const EXCLUDE_CALLCHAIN_USER: u64 = 1 << 22;
pub(crate) const MMAP2: u64 = 1 << 23;
pub(crate) const COMM_EXEC: u64 = 1 << 24;
pub(crate) const USE_CLOCKID: u64 = 1 << 25;
/// `context_switch`: `PERF_RECORD_SWITCH` records at every switch in and out.
pub(crate) const CONTEXT_SWITCH: u64 = 1 << 26;
/// `PERF_EVENT_IOC_SET_OUTPUT`: `_IO('$', 5)`, another event's ring for this one's records.
pub(crate) const IOC_SET_OUTPUT: libc::c_ulong = 0x2405;

pub(crate) const FORMAT_TOTAL_TIME_ENABLED: u64 = 1 << 0;
pub(crate) const FORMAT_TOTAL_TIME_RUNNING: u64 = 1 << 1;
pub(crate) const FORMAT_GROUP: u64 = 1 << 3;

pub(crate) const PERF_FLAG_FD_CLOEXEC: libc::c_ulong = 1 << 3;

/// Opens an event on task `pid` (0: the calling thread) on any CPU.
pub(crate) fn perf_event_open(
    attr: &PerfEventAttr,
    pid: libc::pid_t,
    group_fd: libc::c_int,
) -> Result<OwnedFd, i32> {
    perf_event_open_on(attr, pid, -1, group_fd)
}

/// Opens an event on task `pid` (0: the calling thread; -1: any task) on
/// `cpu` (-1: any CPU).
pub(crate) fn perf_event_open_on(
    attr: &PerfEventAttr,
    pid: libc::pid_t,
    cpu: libc::c_int,
    group_fd: libc::c_int,
) -> Result<OwnedFd, i32> {
    // SAFETY: attr is a valid, fully initialised perf_event_attr whose `size`
    // field matches its length; cpu -1 = any CPU.
    let fd = unsafe {
        libc::syscall(
            libc::SYS_perf_event_open,
            attr as *const PerfEventAttr,
            pid,
            cpu,
            group_fd,
            PERF_FLAG_FD_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error()
            .raw_os_error()
            .unwrap_or(libc::EINVAL));
    }
    // SAFETY: the kernel just returned this descriptor, owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd as libc::c_int) })
}

/// A one-line reason why `perf_event_open` failed with `errno`.
pub(crate) fn open_error(errno: i32, kernel_mode: bool) -> String {
    let name = errno_name(errno);
    match errno {
        libc::ENOENT | libc::EOPNOTSUPP | libc::ENODEV => {
            format!("not supported by this CPU/hypervisor (perf_event_open: {name})")
        }
        // Root is not bound by perf_event_paranoid: something else refused.
        // SAFETY: geteuid has no preconditions.
        libc::EACCES | libc::EPERM if unsafe { libc::geteuid() } == 0 => format!(
            "not permitted, even as root (perf_event_open: {name}; a container's seccomp profile or a security module can cause this)"
        ),
        libc::EACCES | libc::EPERM => {
            let paranoid = std::fs::read_to_string("/proc/sys/kernel/perf_event_paranoid")
                .ok()
                .and_then(|s| s.trim().parse::<i32>().ok());
            match paranoid {
                Some(p) if p >= 3 => {
                    format!("perf_event_paranoid={p} forbids it (need ≤ 2 or CAP_PERFMON)")
                }
                Some(p) if p >= 2 && kernel_mode => format!(
                    "perf_event_paranoid={p} forbids counting in kernel mode (need ≤ 1 or CAP_PERFMON)"
                ),
                _ if errno == libc::EPERM => format!(
                    "not permitted (perf_event_open: {name}; a container's seccomp profile can cause this)"
                ),
                _ => format!("not permitted (perf_event_open: {name})"),
            }
        }
        libc::ENOSYS => format!("the kernel has no perf_event_open ({name})"),
        libc::EMFILE | libc::ENFILE => format!("too many open files (perf_event_open: {name})"),
        _ => format!("refused by the kernel (perf_event_open: {name})"),
    }
}

/// The errno's name (`EACCES`), for messages.
pub(crate) fn errno_name(errno: i32) -> String {
    match errno {
        libc::ENOENT => "ENOENT".into(),
        libc::EOPNOTSUPP => "EOPNOTSUPP".into(),
        libc::ENODEV => "ENODEV".into(),
        libc::EACCES => "EACCES".into(),
        libc::EPERM => "EPERM".into(),
        libc::ENOSYS => "ENOSYS".into(),
        libc::EMFILE => "EMFILE".into(),
        libc::ENFILE => "ENFILE".into(),
        libc::EINVAL => "EINVAL".into(),
        libc::E2BIG => "E2BIG".into(),
        libc::EBUSY => "EBUSY".into(),
        other => format!("errno {other}"),
    }
}
