//! Per-command scheduling settings (a variant's CPU set, transparent huge
//! pages, nice value): set on the spawning thread just before the spawn, so
//! the child inherits them and `posix_spawn` stays usable, and restored
//! once the child is reaped; then read back from `/proc/PID` to check that
//! the child really got them, with its environment and personality.

use std::fmt::Write as _;

/// Why a command's settings could not be set on the spawning thread, or
/// not set back: the caller refuses the variant or fails the run.
#[derive(Debug, thiserror::Error)]
pub enum SettingError {
    /// A system call refused.
    #[error("{call}: {source}")]
    Os {
        /// The call, and what it was to do.
        call: String,
        /// The OS error.
        source: std::io::Error,
    },
    /// A CPU or NUMA node number past what the kernel's masks hold.
    #[error("{what} {number} is beyond what the kernel interface takes")]
    Beyond {
        /// `CPU` or `NUMA node`.
        what: &'static str,
        /// The number asked for.
        number: usize,
    },
    /// Memory could not be bound to the node.
    #[error("{source} (binding memory to NUMA node {node})")]
    Bind {
        /// The node.
        node: usize,
        /// Why not.
        source: Box<SettingError>,
    },
    /// The memory policy could not be set back.
    #[error("restoring the memory policy: {0}")]
    RestoreMemPolicy(Box<SettingError>),
    /// Some of the thread's state could not be set back.
    #[error("{}", join(.0))]
    Restore(Vec<SettingError>),
    /// The thread that tried the settings panicked.
    #[error("the settings check panicked")]
    CheckPanicked,
    /// The settings cannot be set, or not undone, here.
    #[error(
        "{0}: perfsleuth must set its own state back after each run, which needs CAP_SYS_NICE (root) for a nice value or SCHED_IDLE"
    )]
    Impossible(Box<SettingError>),
}

/// The errors, `; `-separated.
fn join(errors: &[SettingError]) -> String {
    errors
        .iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join("; ")
}

/// What one command's process gets beyond perfsleuth's own state.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ChildSettings {
    /// The CPUs it may run on (`sched_setaffinity`).
    pub cpus: Option<Vec<usize>>,
    /// Transparent huge pages off for it (`PR_SET_THP_DISABLE`).
    pub thp_disable: bool,
    /// Its nice value (`setpriority`; below the current one needs root).
    pub nice: Option<i32>,
    /// Its scheduling policy: `SCHED_BATCH` or `SCHED_IDLE` (`sched_setscheduler`).
    pub policy: Option<Policy>,
    /// The NUMA node its memory is bound to (`set_mempolicy(MPOL_BIND)`).
    pub numa_node: Option<usize>,
}

/// A scheduling policy a variant may give its command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Policy {
    /// `SCHED_OTHER`: the normal time-sharing policy.
    Other,
    /// `SCHED_BATCH`: CPU-bound, never preempts on wake-up.
    Batch,
    /// `SCHED_IDLE`: runs only when nothing else wants the CPU.
    Idle,
}

impl Policy {
    fn raw(self) -> libc::c_int {
        match self {
            Policy::Other => libc::SCHED_OTHER,
            Policy::Batch => libc::SCHED_BATCH,
            Policy::Idle => libc::SCHED_IDLE,
        }
    }

    /// `other`, `batch`, `idle`.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Other => "other",
            Policy::Batch => "batch",
            Policy::Idle => "idle",
        }
    }

    /// The policy for a name [`Policy::name`] gives.
    pub fn parse(s: &str) -> Option<Policy> {
        [Policy::Other, Policy::Batch, Policy::Idle]
            .into_iter()
            .find(|p| p.name() == s)
    }
}

impl ChildSettings {
    /// Whether nothing is set.
    pub fn is_default(&self) -> bool {
        *self == ChildSettings::default()
    }
}

/// The spawning thread's state before [`apply`], restored on drop.
pub(crate) struct Applied {
    mask: Option<libc::cpu_set_t>,
    thp: Option<libc::c_int>,
    nice: Option<libc::c_int>,
    policy: Option<(libc::c_int, libc::c_int)>,
    mempolicy: Option<(libc::c_int, [libc::c_ulong; NODE_WORDS])>,
}

/// Words of a node mask: 1024 nodes, the most the kernel builds with.
const NODE_WORDS: usize = 16;
/// The highest NUMA node a variant may name.
pub const MAX_NODE: usize = NODE_WORDS * 64 - 1;
const MPOL_BIND: libc::c_int = 2;

/// `get_mempolicy(mode, mask)` of the calling thread.
fn get_mempolicy() -> Result<(libc::c_int, [libc::c_ulong; NODE_WORDS]), SettingError> {
    let mut mode: libc::c_int = 0;
    let mut mask = [0 as libc::c_ulong; NODE_WORDS];
    // SAFETY: mode and mask are valid for the sizes passed; no address, no flags.
    let r = unsafe {
        libc::syscall(
            libc::SYS_get_mempolicy,
            &mut mode as *mut libc::c_int,
            mask.as_mut_ptr(),
            (NODE_WORDS * 64) as libc::c_ulong,
            std::ptr::null::<libc::c_void>(),
            0 as libc::c_ulong,
        )
    };
    if r != 0 {
        return Err(os_error("get_mempolicy"));
    }
    Ok((mode, mask))
}

/// `set_mempolicy(mode, mask)` of the calling thread.
fn set_mempolicy(
    mode: libc::c_int,
    mask: &[libc::c_ulong; NODE_WORDS],
) -> Result<(), SettingError> {
    // The default policy takes no nodes.
    let (ptr, max) = if mode == 0 {
        (std::ptr::null(), 0)
    } else {
        (mask.as_ptr(), (NODE_WORDS * 64) as libc::c_ulong)
    };
    // SAFETY: the mask is valid for `max` bits, or null with 0.
    let r = unsafe { libc::syscall(libc::SYS_set_mempolicy, mode, ptr, max) };
    if r != 0 {
        return Err(os_error("set_mempolicy"));
    }
    Ok(())
}

/// The calling thread's last OS error, from `call`.
fn os_error(call: impl Into<String>) -> SettingError {
    SettingError::Os {
        call: call.into(),
        source: std::io::Error::last_os_error(),
    }
}

fn tid() -> libc::id_t {
    // SAFETY: gettid has no preconditions.
    unsafe { libc::gettid() as libc::id_t }
}

/// Sets `s` on the calling thread (and, for THP, the process: the flag is
/// per process, inherited across fork and exec).
pub(crate) fn apply(s: &ChildSettings) -> Result<Applied, SettingError> {
    let mut applied = Applied {
        mask: None,
        thp: None,
        nice: None,
        policy: None,
        mempolicy: None,
    };
    if let Some(node) = s.numa_node {
        if node > MAX_NODE {
            return Err(SettingError::Beyond {
                what: "NUMA node",
                number: node,
            });
        }
        let old = get_mempolicy()?;
        let mut mask = [0 as libc::c_ulong; NODE_WORDS];
        mask[node / 64] |= 1 << (node % 64);
        set_mempolicy(MPOL_BIND, &mask).map_err(|e| SettingError::Bind {
            node,
            source: Box::new(e),
        })?;
        applied.mempolicy = Some(old);
    }
    if let Some(cpus) = &s.cpus {
        // SAFETY: cpu_set_t is plain data; zeroed is the empty set.
        let mut old: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        // SAFETY: the size matches the set passed.
        if unsafe { libc::sched_getaffinity(0, std::mem::size_of_val(&old), &mut old) } != 0 {
            return Err(os_error("sched_getaffinity"));
        }
        // SAFETY: as above.
        let mut set: libc::cpu_set_t = unsafe { std::mem::zeroed() };
        for &cpu in cpus {
            if cpu >= libc::CPU_SETSIZE as usize {
                return Err(SettingError::Beyond {
                    what: "CPU",
                    number: cpu,
                });
            }
            // SAFETY: cpu is within the set's size.
            unsafe { libc::CPU_SET(cpu, &mut set) };
        }
        // SAFETY: the size matches the set passed.
        if unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&set), &set) } != 0 {
            return Err(os_error(format!("sched_setaffinity to CPUs {cpus:?}")));
        }
        applied.mask = Some(old);
    }
    if s.thp_disable {
        // SAFETY: PR_GET_THP_DISABLE takes no further arguments.
        let old = unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) };
        if old < 0 {
            return Err(os_error("prctl(PR_GET_THP_DISABLE)"));
        }
        // SAFETY: sets a flag of this process.
        if unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0) } != 0 {
            return Err(os_error("prctl(PR_SET_THP_DISABLE)"));
        }
        applied.thp = Some(old);
    }
    if let Some(nice) = s.nice {
        // getpriority returns -1 both as a value and as an error: errno decides.
        // SAFETY: errno is thread-local; these calls concern this thread only.
        let old = unsafe {
            *libc::__errno_location() = 0;
            libc::getpriority(libc::PRIO_PROCESS, tid())
        };
        // SAFETY: reads this thread's errno.
        if old == -1 && unsafe { *libc::__errno_location() } != 0 {
            return Err(os_error("getpriority"));
        }
        // SAFETY: Linux keeps nice per thread; this sets the calling thread's.
        if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid(), nice) } != 0 {
            return Err(os_error(format!("setpriority to nice {nice}")));
        }
        applied.nice = Some(old);
    }
    if let Some(policy) = s.policy {
        let tid = tid() as libc::pid_t;
        // SAFETY: queries this thread's policy.
        let old = unsafe { libc::sched_getscheduler(tid) };
        // SAFETY: sched_param is plain data.
        let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
        // SAFETY: fills param for this thread.
        if old < 0 || unsafe { libc::sched_getparam(tid, &mut param) } != 0 {
            return Err(os_error("sched_getscheduler"));
        }
        // SAFETY: priority 0 is the only one the time-sharing policies take.
        let zero: libc::sched_param = unsafe { std::mem::zeroed() };
        // SAFETY: sets this thread's policy.
        if unsafe { libc::sched_setscheduler(tid, policy.raw(), &zero) } != 0 {
            return Err(os_error(format!(
                "sched_setscheduler to SCHED_{}",
                policy.name().to_uppercase()
            )));
        }
        applied.policy = Some((old, param.sched_priority));
    }
    Ok(applied)
}

impl Applied {
    /// Sets the thread's state back, saying what could not be: a thread
    /// left niced or idle would pass it on to every later command.
    pub(crate) fn restore(mut self) -> Result<(), SettingError> {
        self.undo()
    }

    fn undo(&mut self) -> Result<(), SettingError> {
        let mut failed = Vec::new();
        if let Some(mask) = self.mask.take() {
            // SAFETY: restores the set sched_getaffinity returned.
            if unsafe { libc::sched_setaffinity(0, std::mem::size_of_val(&mask), &mask) } != 0 {
                failed.push(os_error("restoring the CPU set"));
            }
        }
        if let Some(old) = self.thp.take() {
            // SAFETY: restores the flag PR_GET_THP_DISABLE returned.
            if unsafe { libc::prctl(libc::PR_SET_THP_DISABLE, old as libc::c_ulong, 0, 0, 0) } != 0
            {
                failed.push(os_error("restoring THP"));
            }
        }
        if let Some(old) = self.nice.take() {
            // SAFETY: restores this thread's nice value.
            if unsafe { libc::setpriority(libc::PRIO_PROCESS, tid(), old) } != 0 {
                failed.push(os_error(format!("restoring nice {old}")));
            }
        }
        if let Some((mode, mask)) = self.mempolicy.take()
            && let Err(e) = set_mempolicy(mode, &mask)
        {
            failed.push(SettingError::RestoreMemPolicy(Box::new(e)));
        }
        if let Some((policy, priority)) = self.policy.take() {
            // SAFETY: sched_param is plain data.
            let mut param: libc::sched_param = unsafe { std::mem::zeroed() };
            param.sched_priority = priority;
            // SAFETY: restores the policy sched_getscheduler returned.
            if unsafe { libc::sched_setscheduler(tid() as libc::pid_t, policy, &param) } != 0 {
                failed.push(os_error("restoring the scheduling policy"));
            }
        }
        if failed.is_empty() {
            Ok(())
        } else {
            Err(SettingError::Restore(failed))
        }
    }
}

impl Drop for Applied {
    fn drop(&mut self) {
        // An error path: nothing to report to, and the run is failing anyway.
        let _ = self.undo();
    }
}

/// Whether `s` can be applied and undone here: tried on a thread of its
/// own, which is then discarded, so nothing of this process changes but
/// THP's per-process flag, which is undone at once. Nice values and
/// SCHED_IDLE can be entered without CAP_SYS_NICE but not left.
pub fn check_possible(s: &ChildSettings) -> Result<(), SettingError> {
    let s = s.clone();
    std::thread::spawn(move || apply(&s)?.restore())
        .join()
        .unwrap_or(Err(SettingError::CheckPanicked))
        .map_err(|e| SettingError::Impossible(Box::new(e)))
}

/// Reads back what child `pid` got: `Ok(true)` when every setting, the
/// environment changes and the ASLR personality are as asked, `Ok(false)`
/// when it has already exited and cannot tell, `Err` with what differs.
pub(crate) fn verify(
    pid: libc::pid_t,
    s: &ChildSettings,
    aslr_off: bool,
    env: &[(String, Option<String>)],
) -> Result<bool, String> {
    let proc_file = |name: &str| std::fs::read(format!("/proc/{pid}/{name}")).ok();
    // A child that execs on (valgrind's launcher script → valgrind → its
    // tool) may change image while it is read: what was read then belongs
    // to no one image, so it cannot tell (a later run is checked instead).
    let image = || std::fs::read_link(format!("/proc/{pid}/exe")).ok();
    let first_image = image();
    let Some(status) = proc_file("status").map(|b| String::from_utf8_lossy(&b).into_owned()) else {
        return Ok(false);
    };
    let field = |key: &str| {
        status.lines().find_map(|l| {
            l.strip_prefix(key)
                .and_then(|r| r.strip_prefix(':'))
                .map(|v| v.trim().to_string())
        })
    };
    if field("State").is_some_and(|st| st.starts_with('Z') || st.starts_with('X')) {
        return Ok(false);
    }
    let mut wrong = String::new();
    let mut numa_unknown = false;
    if let Some(cpus) = &s.cpus {
        let got = field("Cpus_allowed_list").and_then(|l| parse_cpu_list(&l));
        let mut want = cpus.clone();
        want.sort_unstable();
        want.dedup();
        if got.as_ref() != Some(&want) {
            let _ = write!(wrong, "; CPUs {want:?} asked, the child may run on {got:?}");
        }
    }
    if s.thp_disable {
        // THP_enabled is absent once the child has exited (no memory map).
        match field("THP_enabled") {
            Some(v) if v == "0" => {}
            Some(v) => {
                let _ = write!(wrong, "; THP off asked, THP_enabled is {v}");
            }
            None => return Ok(false),
        }
    }
    if let Some(nice) = s.nice {
        let stat = proc_file("stat").map(|b| String::from_utf8_lossy(&b).into_owned());
        // Field 19 (nice); the fields after `)` start at field 3.
        let got = stat.as_deref().and_then(|st| {
            let rest = &st[st.rfind(')')? + 1..];
            rest.split_whitespace().nth(16)?.parse::<i32>().ok()
        });
        if got != Some(nice) {
            let _ = write!(wrong, "; nice {nice} asked, the child has {got:?}");
        }
    }
    if let Some(policy) = s.policy {
        let stat = proc_file("stat").map(|b| String::from_utf8_lossy(&b).into_owned());
        // Field 41 (policy).
        let got = stat.as_deref().and_then(|st| {
            let rest = &st[st.rfind(')')? + 1..];
            rest.split_whitespace().nth(38)?.parse::<libc::c_int>().ok()
        });
        if got != Some(policy.raw()) {
            let _ = write!(
                wrong,
                "; SCHED_{} asked, the child's policy is {got:?}",
                policy.name().to_uppercase()
            );
        }
    }
    if let Some(node) = s.numa_node {
        // Each mapping's line names its policy; the stack's is the task's.
        // Between fork and exec (or on its way out) there may be no stack
        // mapping to read: then this one setting cannot tell, the others still do.
        let maps = proc_file("numa_maps")
            .map(|b| String::from_utf8_lossy(&b).into_owned())
            .unwrap_or_default();
        let want = format!("bind:{node}");
        match maps
            .lines()
            .find(|l| l.split_whitespace().any(|t| t == "stack"))
        {
            Some(line) if line.split_whitespace().nth(1) == Some(want.as_str()) => {}
            Some(line) => {
                let got = line.split_whitespace().nth(1).unwrap_or("?");
                let _ = write!(
                    wrong,
                    "; memory on node {node} asked, the child's policy is {got}"
                );
            }
            None => numa_unknown = true,
        }
    }
    if aslr_off {
        const ADDR_NO_RANDOMIZE: u64 = 0x0040000;
        let got = proc_file("personality")
            .and_then(|b| u64::from_str_radix(String::from_utf8_lossy(&b).trim(), 16).ok());
        if got.is_none_or(|p| p & ADDR_NO_RANDOMIZE == 0) {
            let _ = write!(wrong, "; ASLR off asked, personality is {got:x?}");
        }
    }
    if !env.is_empty() {
        let Some(environ) = proc_file("environ") else {
            return Ok(false);
        };
        if environ.is_empty() {
            return Ok(false);
        }
        let vars: Vec<&[u8]> = environ.split(|b| *b == 0).collect();
        // glibc parses GLIBC_TUNABLES in place at start-up (the copy in
        // /proc/PID/environ ends at its first `:` afterwards): what it did
        // with it is checked through ld.so where it matters.
        // The child has the last change of each variable.
        let mut last: Vec<&(String, Option<String>)> = Vec::new();
        for change in env.iter().rev() {
            if !last.iter().any(|(k, _)| *k == change.0) {
                last.push(change);
            }
        }
        for (key, value) in last.into_iter().filter(|(k, _)| k != "GLIBC_TUNABLES") {
            let prefix = format!("{key}=");
            let found = vars
                .iter()
                .find(|v| v.starts_with(prefix.as_bytes()))
                .map(|v| String::from_utf8_lossy(&v[prefix.len()..]).into_owned());
            if found.as_ref() != value.as_ref()
                && !launcher_changed(key, value.as_deref(), found.as_deref())
            {
                let _ = write!(wrong, "; {key} asked {value:?}, the child has {found:?}");
            }
        }
    }
    if wrong.is_empty() {
        Ok(!numa_unknown)
    } else if first_image.is_none() || image() != first_image {
        Ok(false)
    } else {
        Err(wrong.trim_start_matches("; ").to_string())
    }
}

/// Whether `got` is `asked` as Debian's `valgrind` launcher (a shell
/// script, the child in simulation mode) rewrites it before starting
/// valgrind: it appends its debug-library directory to LD_LIBRARY_PATH
/// (`/usr/lib/debug`, or `…:/usr/lib/debug`). The program under valgrind
/// sees that too, on both sides of a comparison alike.
fn launcher_changed(key: &str, asked: Option<&str>, got: Option<&str>) -> bool {
    const DEBIAN_DBGPATH: &str = "/usr/lib/debug";
    key == "LD_LIBRARY_PATH"
        && match (asked, got) {
            (None | Some(""), Some(g)) => g == DEBIAN_DBGPATH,
            (Some(a), Some(g)) => g == format!("{a}:{DEBIAN_DBGPATH}"),
            _ => false,
        }
}

/// The highest CPU number a list may name (the kernel's `cpu_set_t`).
pub const MAX_CPU: usize = libc::CPU_SETSIZE as usize - 1;

/// `0-3,8,10-11` as CPU numbers, sorted; `None` for a malformed list or a
/// CPU above [`MAX_CPU`].
pub fn parse_cpu_list(list: &str) -> Option<Vec<usize>> {
    let mut set = vec![false; MAX_CPU + 1];
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let (a, b) = match part.split_once('-') {
            Some((a, b)) => (
                a.trim().parse::<usize>().ok()?,
                b.trim().parse::<usize>().ok()?,
            ),
            None => {
                let n = part.trim().parse::<usize>().ok()?;
                (n, n)
            }
        };
        if a > b || b > MAX_CPU {
            return None;
        }
        set[a..=b].iter_mut().for_each(|x| *x = true);
    }
    let out: Vec<usize> = (0..=MAX_CPU).filter(|&i| set[i]).collect();
    (!out.is_empty()).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_valgrind_launchers_debug_path_is_not_a_mismatch() {
        assert!(launcher_changed(
            "LD_LIBRARY_PATH",
            None,
            Some("/usr/lib/debug")
        ));
        assert!(launcher_changed(
            "LD_LIBRARY_PATH",
            Some("/x"),
            Some("/x:/usr/lib/debug")
        ));
        assert!(!launcher_changed(
            "LD_LIBRARY_PATH",
            Some("/x"),
            Some("/y:/usr/lib/debug")
        ));
        assert!(!launcher_changed(
            "LD_PRELOAD",
            None,
            Some("/usr/lib/debug")
        ));
        assert!(!launcher_changed("LD_LIBRARY_PATH", None, Some("/other")));
    }

    #[test]
    fn cpu_lists_parse_like_the_kernel_prints_them() {
        assert_eq!(
            parse_cpu_list("0-3,8,10-11"),
            Some(vec![0, 1, 2, 3, 8, 10, 11])
        );
        assert_eq!(parse_cpu_list("1"), Some(vec![1]));
        assert_eq!(parse_cpu_list("3-1"), None);
        assert_eq!(parse_cpu_list(""), None);
        assert_eq!(parse_cpu_list("x"), None);
    }

    #[test]
    fn a_child_without_its_settings_is_caught() {
        // A child started plainly, checked against settings it never got.
        let mut child = std::process::Command::new("sleep")
            .arg("5")
            .spawn()
            .expect("sleep starts");
        let pid = child.id() as libc::pid_t;
        // Until exec has run, the child is this test binary's copy.
        for _ in 0..100 {
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            if comm.trim() == "sleep" {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        let asked = ChildSettings {
            cpus: Some(vec![0]),
            thp_disable: true,
            nice: Some(7),
            policy: Some(Policy::Idle),
            numa_node: Some(0),
        };
        let env = [("PERFSLEUTH_NOT_SET".to_string(), Some("x".to_string()))];
        // "Cannot tell yet" (Ok(false)) while exec is still setting up.
        let mut got = verify(pid, &asked, true, &env);
        for _ in 0..50 {
            if got != Ok(false) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
            got = verify(pid, &asked, true, &env);
        }
        let _ = child.kill();
        let _ = child.wait();
        let wrong = got.expect_err("nothing was applied");
        let online = std::fs::read_to_string("/sys/devices/system/cpu/online").unwrap();
        if online.trim() != "0" {
            assert!(wrong.contains("CPUs [0] asked"), "{wrong}");
        }
        for needle in [
            "THP off asked",
            "nice 7 asked",
            "ASLR off asked",
            "PERFSLEUTH_NOT_SET asked",
            "memory on node 0 asked",
        ] {
            assert!(wrong.contains(needle), "{needle}: {wrong}");
        }
        // An exited child cannot tell: not a mismatch.
        assert_eq!(verify(pid, &asked, true, &env), Ok(false));
    }

    #[test]
    fn the_spawning_thread_gets_its_state_back() {
        let before = std::fs::read_to_string("/proc/thread-self/status").unwrap();
        let cpus = |s: &str| {
            s.lines()
                .find(|l| l.starts_with("Cpus_allowed_list"))
                .map(str::to_string)
        };
        let settings = ChildSettings {
            cpus: Some(vec![0]),
            thp_disable: true,
            nice: None,
            policy: Some(Policy::Batch),
            numa_node: None,
        };
        let applied = apply(&settings).unwrap();
        let during = std::fs::read_to_string("/proc/thread-self/status").unwrap();
        assert_eq!(cpus(&during).as_deref(), Some("Cpus_allowed_list:\t0"));
        // SAFETY: queries this thread's policy.
        assert_eq!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_BATCH);
        drop(applied);
        // SAFETY: as above.
        assert_eq!(unsafe { libc::sched_getscheduler(0) }, libc::SCHED_OTHER);
        let after = std::fs::read_to_string("/proc/thread-self/status").unwrap();
        assert_eq!(cpus(&after), cpus(&before));
        // SAFETY: PR_GET_THP_DISABLE takes no further arguments.
        let thp = unsafe { libc::prctl(libc::PR_GET_THP_DISABLE, 0, 0, 0, 0) };
        assert_eq!(thp, 0);
    }

    #[test]
    fn memory_bound_to_a_node_reaches_the_child_and_the_thread_gets_its_policy_back() {
        // Node 0 exists on every Linux machine; binding to it is the
        // mechanism `numa:N` uses on machines with several.
        std::thread::spawn(|| {
            let settings = ChildSettings {
                numa_node: Some(0),
                ..ChildSettings::default()
            };
            let before = get_mempolicy().unwrap().0;
            let applied = apply(&settings).unwrap();
            let (mode, mask) = get_mempolicy().unwrap();
            assert_eq!(mode, MPOL_BIND);
            assert_eq!(mask[0] & 1, 1);
            // Forked from this thread: the child inherits the policy.
            let mut child = std::process::Command::new("sleep")
                .arg("5")
                .spawn()
                .expect("sleep starts");
            applied.restore().unwrap();
            assert_eq!(get_mempolicy().unwrap().0, before);
            let pid = child.id() as libc::pid_t;
            // Until exec has mapped the stack, the answer may be "cannot tell".
            let mut got = Ok(false);
            for _ in 0..50 {
                got = verify(pid, &settings, false, &[]);
                if got != Ok(false) {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            let _ = child.kill();
            let _ = child.wait();
            assert_eq!(got, Ok(true));
        })
        .join()
        .unwrap();
    }
}
