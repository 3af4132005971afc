//! Lock-wait tracing with eBPF (docs/LOCKS.md): which lock the benchmarked
//! program's threads wait for, and where in its code they take it.
//!
//! The kernel side (`bpf/locks.bpf.c`) follows the process tree of the
//! spawner, times every futex wait, sums the waits per (run, futex address,
//! user stack) and each thread's off-CPU time in kernel maps, and sends one
//! register-and-stack sample per new (run, address, stack) through a ring
//! buffer. This crate loads it (aya), reads the samples while the runs go
//! on, and at the end unwinds and names the samples (`perfsleuth_unwind`) and
//! turns the sums into one [`LockReport`] per benchmark.

mod bpf;

use bpf::{Aggregates, Loaded, Stat, WaitAt};
use perfsleuth_model::{LockEvents, LockReport, LockSite};
use perfsleuth_unwind::{Frame, Symbolizer, UserStack};
use std::collections::{BTreeMap, BTreeSet, HashMap, HashSet};

/// Why locks cannot be traced here.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    /// Not x86-64: the program reads x86-64 registers and syscall numbers.
    #[error("lock tracing supports x86-64 only; this machine is {0}")]
    Unsupported(&'static str),
    /// Neither root nor CAP_BPF and CAP_PERFMON.
    #[error("tracing locks needs root (or CAP_BPF and CAP_PERFMON); this process has neither")]
    NotPermitted,
    /// The kernel exposes no BTF, so task fields cannot be located.
    #[error("the kernel has no BTF (/sys/kernel/btf/vmlinux: {0})")]
    NoBtf(String),
    /// Loading, verifying or attaching failed.
    #[error("the kernel refused the lock tracer: {0}")]
    Load(String),
    /// Reading the results failed.
    #[error("cannot read the lock tracer's maps: {0}")]
    Read(String),
}

/// The names of the kernel programs (as `bpftool prog` lists them).
pub fn program_names() -> impl Iterator<Item = &'static str> {
    bpf::PROGRAMS.iter().map(|(name, _)| *name)
}

/// The names of the BPF programs loaded in the kernel now, anyone's (what
/// `bpftool prog` lists); the tests check that none of ours stay behind.
pub fn loaded_programs() -> Vec<String> {
    aya::programs::loaded_programs()
        .filter_map(Result::ok)
        .filter_map(|p| p.name_as_str().map(str::to_string))
        .collect()
}

/// Whether this process may trace locks: the cheap checks, before loading.
pub fn check() -> Result<(), LockError> {
    if !cfg!(target_arch = "x86_64") {
        return Err(LockError::Unsupported(std::env::consts::ARCH));
    }
    if !privileged() {
        return Err(LockError::NotPermitted);
    }
    std::fs::metadata("/sys/kernel/btf/vmlinux").map_err(|e| LockError::NoBtf(e.to_string()))?;
    Ok(())
}

/// Root, or both capabilities in the effective set.
fn privileged() -> bool {
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } == 0 {
        return true;
    }
    const CAP_PERFMON: u32 = 38;
    const CAP_BPF: u32 = 39;
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            let hex = s
                .lines()
                .find_map(|l| l.strip_prefix("CapEff:"))?
                .trim()
                .to_string();
            u64::from_str_radix(&hex, 16).ok()
        })
        .is_some_and(|caps| caps & (1 << CAP_BPF) != 0 && caps & (1 << CAP_PERFMON) != 0)
}

/// An error and its causes on one line.
fn chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let t = c.to_string();
        if !s.contains(&t) {
            s.push_str(": ");
            s.push_str(&t);
        }
        cur = c.source();
    }
    s
}

/// The attached tracer. Every process `root` forks from now on is a new
/// run, numbered 1, 2, … in fork order; its descendants belong to it.
/// Dropping it (also on an error or Ctrl-C) detaches the programs and frees
/// the maps: nothing stays loaded.
pub struct Tracer {
    loaded: Loaded,
}

impl Tracer {
    /// Loads and attaches the tracer, following the children of `root`.
    pub fn start(root: u32) -> Result<Tracer, LockError> {
        check()?;
        Ok(Tracer {
            loaded: Loaded::start(root)?,
        })
    }

    /// Detaches, then unwinds and names what was seen.
    pub fn finish(self) -> Result<Traced, LockError> {
        let agg = self.loaded.finish()?;
        Ok(Traced::name(agg))
    }
}

/// A sampled stack, named.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct SiteKey {
    kind: String,
    function: String,
    location: String,
    caller: Option<(String, String)>,
    object: Option<String>,
}

impl SiteKey {
    fn is_lock(&self) -> bool {
        perfsleuth_model::LockSite::is_lock_kind(&self.kind)
    }
}

/// What a trace saw, named; [`Traced::report`] per benchmark.
pub struct Traced {
    agg: Aggregates,
    /// (run, address, stack) → the site, where a sample named it.
    sites: HashMap<WaitAt, (SiteKey, Vec<String>)>,
    /// The named aggregates by kernel stack id, for waits without a sample.
    by_stack: HashMap<i64, Vec<WaitAt>>,
    /// The runs of the samples that could not be unwound.
    unresolved: Vec<u32>,
}

impl Traced {
    fn name(agg: Aggregates) -> Traced {
        let mut sym = Symbolizer::default();
        let mut sites = HashMap::new();
        let mut by_stack: HashMap<i64, Vec<WaitAt>> = HashMap::new();
        let mut unresolved = Vec::new();
        // Every (run, thread) seen: off CPU, or waiting in a sample.
        let threads: HashSet<(u32, u32)> = agg
            .off_cpu
            .keys()
            .copied()
            .chain(agg.samples.iter().map(|s| (s.seq, s.tid)))
            .collect();
        for s in &agg.samples {
            let frames = match s.maps.as_deref() {
                Some(maps) => sym.unwind(
                    &UserStack {
                        ip: s.ip,
                        sp: s.sp,
                        bp: s.bp,
                        stack: &s.stack,
                    },
                    maps,
                ),
                None => Vec::new(),
            };
            if frames.is_empty() {
                unresolved.push(s.seq);
                continue;
            }
            let object = s.maps.as_deref().and_then(|m| sym.object(m, s.uaddr));
            let at = WaitAt {
                seq: s.seq,
                uaddr: s.uaddr,
                stack_id: s.stack_id,
            };
            let stack = frames.iter().map(Frame::display).collect();
            let mut site = site_of(&frames, object);
            // glibc's join waits for the thread's id to clear, and its
            // own symbols may be stripped: a wait for a value that is a
            // thread of the same run is a join.
            if site.kind == "futex" && joins(&threads, s) {
                site.kind = "join".into();
            }
            sites.insert(at, (site, stack));
            by_stack.entry(at.stack_id).or_default().push(at);
        }
        Traced {
            agg,
            sites,
            by_stack,
            unresolved,
        }
    }

    /// The site of an aggregate: its own sample's, else that of a sample
    /// with the same kernel stack (a lost sample, or a wait that began
    /// before its run's first sample was taken).
    fn site(&self, at: &WaitAt) -> Option<&(SiteKey, Vec<String>)> {
        self.sites.get(at).or_else(|| {
            let named = self
                .by_stack
                .get(&at.stack_id)
                .filter(|_| at.stack_id >= 0)?;
            let other = named.iter().min_by_key(|k| (k.uaddr != at.uaddr, k.seq))?;
            self.sites.get(other)
        })
    }

    /// The report of the runs numbered `runs` (one benchmark's).
    pub fn report(&self, runs: &[u32]) -> LockReport {
        let wanted: BTreeSet<u32> = runs.iter().copied().collect();
        let mut by_site: BTreeMap<SiteKey, (u64, u64, Vec<String>)> = BTreeMap::new();
        let mut addresses: BTreeMap<u32, BTreeSet<u64>> = BTreeMap::new();
        for (at, &(ns, count)) in self
            .agg
            .waits
            .iter()
            .filter(|(a, _)| wanted.contains(&a.seq))
        {
            let (key, stack) = match self.site(at) {
                Some((k, s)) => (k.clone(), s.clone()),
                None => (unknown_site(), Vec::new()),
            };
            if key.is_lock() {
                addresses.entry(at.seq).or_default().insert(at.uaddr);
            }
            let e = by_site.entry(key).or_insert((0, 0, stack));
            e.0 += ns;
            e.1 += count;
        }
        let mut sites: Vec<LockSite> = by_site
            .into_iter()
            .map(|(k, (wait_ns, waits, stack))| LockSite {
                kind: k.kind,
                function: k.function,
                location: k.location,
                caller_location: k.caller.as_ref().map(|c| c.1.clone()),
                caller: k.caller.map(|c| c.0),
                object: k.object,
                stack,
                wait_ns,
                waits,
            })
            .collect();
        sites.sort_by_key(|s| (!s.is_lock(), std::cmp::Reverse(s.wait_ns)));
        let (mut blocked_ns, mut preempted_ns) = (0, 0);
        let mut threads: BTreeMap<u32, u32> = BTreeMap::new();
        for (&(seq, _tid), &(b, p)) in &self.agg.off_cpu {
            if wanted.contains(&seq) {
                blocked_ns += b;
                preempted_ns += p;
                *threads.entry(seq).or_default() += 1;
            }
        }
        let st = |s: Stat| self.agg.stats[s as usize];
        let (locks, others): (Vec<&LockSite>, Vec<&LockSite>) =
            sites.iter().partition(|s| s.is_lock());
        LockReport {
            runs: runs.len() as u32,
            lock_wait_ns: locks.iter().map(|s| s.wait_ns).sum(),
            lock_waits: locks.iter().map(|s| s.waits).sum(),
            other_wait_ns: others.iter().map(|s| s.wait_ns).sum(),
            other_waits: others.iter().map(|s| s.waits).sum(),
            blocked_ns,
            preempted_ns,
            threads: threads.values().copied().max().unwrap_or(0),
            futexes: addresses
                .values()
                .map(|a| a.len() as u32)
                .max()
                .unwrap_or(0),
            events: LockEvents {
                waits: sites.iter().map(|s| s.waits).sum(),
                dropped_waits: st(Stat::WaitDrops),
                samples: self
                    .agg
                    .samples
                    .iter()
                    .filter(|s| wanted.contains(&s.seq))
                    .count() as u64,
                dropped_samples: st(Stat::SampleDrops),
                stack_failures: st(Stat::StackFails),
                unresolved_samples: self
                    .unresolved
                    .iter()
                    .filter(|s| wanted.contains(s))
                    .count() as u64,
                processes: st(Stat::Processes),
                dropped_processes: st(Stat::ProcessDrops),
                switches: st(Stat::Switches),
                dropped_switches: st(Stat::OffCpuDrops),
            },
            sites,
        }
    }

    /// Samples taken, for tests and diagnostics.
    pub fn samples(&self) -> usize {
        self.agg.samples.len()
    }

    /// Runs the kernel saw start: processes the root forked while attached.
    pub fn runs_seen(&self) -> u32 {
        self.agg.runs
    }
}

/// Whether the sample waits for a futex holding the id of another thread
/// of its run (how `pthread_join` waits).
fn joins(threads: &HashSet<(u32, u32)>, s: &bpf::Sample) -> bool {
    s.val != 0 && s.val != s.tid && threads.contains(&(s.seq, s.val))
}

fn unknown_site() -> SiteKey {
    SiteKey {
        kind: "unknown".into(),
        function: "?".into(),
        location: "no stack sample".into(),
        caller: None,
        object: None,
    }
}

/// Function names of lock, wait and thread machinery: the standard
/// libraries' and the common lock crates'. The site is the first frame
/// below them.
const MACHINERY: [&str; 12] = [
    "std::",
    "core::",
    "alloc::",
    "<std::",
    "<core::",
    "parking_lot",
    "<parking_lot",
    "lock_api::",
    "<lock_api::",
    "__lll_",
    "pthread_",
    "__pthread",
];

/// Source paths of the same machinery, for inlined frames, which
/// line-tables-only debug info names without their module (`lock`).
const MACHINERY_SOURCES: [&str; 6] = [
    "/rustc/",
    "/library/std/",
    "/library/core/",
    "/library/alloc/",
    "/parking_lot",
    "/lock_api",
];

fn is_machinery(f: &Frame) -> bool {
    f.system
        || MACHINERY.iter().any(|p| f.function.starts_with(p))
        || f.function == "syscall"
        || f.source
            .as_deref()
            .is_some_and(|s| MACHINERY_SOURCES.iter().any(|p| s.contains(p)))
}

/// The kind of wait, from the names on the stack.
fn kind_of(frames: &[Frame]) -> &'static str {
    let names: Vec<String> = frames
        .iter()
        .map(|f| f.function.to_ascii_lowercase())
        .collect();
    let any = |pats: &[&str]| names.iter().any(|n| pats.iter().any(|p| n.contains(p)));
    if any(&[
        "pthread_join",
        "clockjoin",
        "thread::scope",
        "joininner",
        "join_inner",
    ]) {
        "join"
    } else if any(&["pthread_cond_", "condvar"]) {
        "condvar"
    } else if any(&["rwlock"]) {
        "rwlock"
    } else if any(&["mutex", "lll_lock", "lock_contended", "raw_mutex"]) {
        "mutex"
    } else if any(&["::park", "parker", "park_timeout"]) {
        "park"
    } else {
        "futex"
    }
}

fn site_of(frames: &[Frame], object: Option<String>) -> SiteKey {
    let mut kind = kind_of(frames).to_string();
    // Rust's C `main` is the runtime's shim: a wait in the runtime's own
    // start or clean-up (`std::rt::…`) sits right below it.
    let runtime_main = |i: usize| {
        frames[i].function == "main" && i > 0 && frames[i - 1].function.starts_with("std::rt::")
    };
    let user = (0..frames.len()).find(|&i| !is_machinery(&frames[i]) && !runtime_main(i));
    // No frame of the program's own at all: the C library's or runtime's
    // internal lock (thread start and exit, the stack cache), not a lock
    // the program takes.
    if user.is_none() && kind != "join" && kind != "condvar" {
        kind = "runtime".into();
    }
    // Without a frame of the program's own (a wait inside a library), the
    // outermost library frame sampled names it.
    let at = user.unwrap_or(frames.len().saturating_sub(1));
    let f = &frames[at];
    SiteKey {
        kind,
        function: f.function.clone(),
        location: f.where_(),
        // The caller in the program's own code where there is one.
        caller: frames[at + 1..]
            .iter()
            .find(|c| !is_machinery(c))
            .or_else(|| frames.get(at + 1))
            .map(|c| (c.function.clone(), c.where_())),
        object,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(function: &str, system: bool) -> Frame {
        Frame {
            function: function.into(),
            line: (!system).then(|| "two.c:7".into()),
            file: if system { "libc.so.6" } else { "two" }.into(),
            source: None,
            system,
            inlined: false,
        }
    }

    #[test]
    fn the_site_is_the_first_frame_below_the_lock_machinery() {
        let frames = [
            frame("__lll_lock_wait", true),
            frame("pthread_mutex_lock", true),
            frame("hot_add", false),
            frame("worker", false),
        ];
        let s = site_of(&frames, Some("hot".into()));
        assert_eq!((s.kind.as_str(), s.function.as_str()), ("mutex", "hot_add"));
        assert_eq!(s.location, "two.c:7");
        assert_eq!(s.caller, Some(("worker".into(), "two.c:7".into())));
        let rust = [
            frame("syscall", true),
            frame("std::sys::sync::mutex::futex::Mutex::lock_contended", false),
            frame("counters::count_locked", false),
            frame("counters::main::{{closure}}", false),
        ];
        let s = site_of(&rust, None);
        assert_eq!(
            (s.kind.as_str(), s.function.as_str()),
            ("mutex", "counters::count_locked")
        );
    }

    #[test]
    fn a_wait_without_a_frame_of_the_program_is_the_runtime_s() {
        let frames = [
            frame("__lll_lock_wait_private", true),
            frame("start_thread", true),
        ];
        let s = site_of(&frames, None);
        assert_eq!(s.kind, "runtime");
        assert!(!s.is_lock());
    }

    #[test]
    fn the_rust_runtime_s_own_lock_below_its_main_shim_is_the_runtime_s() {
        let frames = [
            frame("syscall", true),
            frame(
                "std::sys::pal::unix::stack_overflow::thread_info::delete_current_info",
                false,
            ),
            frame("std::rt::lang_start_internal", false),
            frame("main", false),
            frame("__libc_start_main", true),
        ];
        assert_eq!(site_of(&frames, None).kind, "runtime");
        // A C program's own main is the program's.
        let c = [frame("pthread_mutex_lock", true), frame("main", false)];
        assert_eq!(site_of(&c, None).function, "main");
    }

    #[test]
    fn joins_condition_variables_and_parking_are_not_lock_waits() {
        let join = [
            frame("__futex_abstimed_wait_common", true),
            frame("pthread_join", true),
            frame("main", false),
        ];
        assert_eq!(kind_of(&join), "join");
        let park = [
            frame("std::thread::park", false),
            frame("std::thread::scope", false),
        ];
        assert_eq!(
            kind_of(&park),
            "join",
            "a scope's wait for its threads is a join"
        );
        let cv = [frame("pthread_cond_wait", true), frame("consumer", false)];
        assert_eq!(kind_of(&cv), "condvar");
        let rw = [frame(
            "std::sys::sync::rwlock::futex::RwLock::read_contended",
            false,
        )];
        assert_eq!(kind_of(&rw), "rwlock");
        let site = LockSite {
            kind: "join".into(),
            ..LockSite::default()
        };
        assert!(!site.is_lock());
    }
}
