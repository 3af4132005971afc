//! Lock traces (`--locks`): the waits per lock site and their events.

use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;

/// A benchmark's futex waits, traced with eBPF over its timed and warmup
/// runs (docs/LOCKS.md): where its threads waited for locks, ranked.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LockReport {
    /// Runs of the command traced (warmups included).
    pub runs: u32,
    /// Time threads spent waiting for locks (mutexes, rwlocks, unknown
    /// futexes), summed over threads and runs. A futex wait that returned at
    /// once (EAGAIN: the lock changed before the thread slept) is not a wait.
    pub lock_wait_ns: u64,
    /// Lock waits (futex wait calls on locks).
    pub lock_waits: u64,
    /// Futex waits that are not lock waits (thread joins, condition
    /// variables, thread parking): summed time.
    pub other_wait_ns: u64,
    /// Futex waits that are not lock waits: their number.
    pub other_waits: u64,
    /// The threads' off-CPU time, blocked (sleeping) part.
    pub blocked_ns: u64,
    /// The threads' off-CPU time, preempted (runnable, waiting for a CPU) part.
    pub preempted_ns: u64,
    /// Threads seen going off CPU.
    pub threads: u32,
    /// The most distinct lock addresses waited on in one run.
    pub futexes: u32,
    /// Where the waits happened, ranked by wait time (lock waits first,
    /// then the others).
    pub sites: Vec<LockSite>,
    /// What the tracer saw and lost.
    pub events: LockEvents,
}

/// One place threads waited: the lock's call site.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LockSite {
    /// What was waited for: `mutex`, `rwlock`, `futex` (a lock not
    /// recognised), `unknown` (no stack) — lock waits — or `condvar`,
    /// `join`, `park`, `runtime` (a C library's or runtime's internal lock,
    /// with no frame of the program's own on the stack).
    pub kind: String,
    /// The first function of the program's own code on the stack (below the
    /// lock implementation), demangled.
    pub function: String,
    /// `file:line` of that frame where debug info exists, else the binary
    /// or library it is in.
    pub location: String,
    /// Its caller (in the program's own code where there is one), where the
    /// stack had one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller: Option<String>,
    /// The caller's `file:line` or binary.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub caller_location: Option<String>,
    /// The lock's own name where it is a static variable with a symbol.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub object: Option<String>,
    /// The whole unwound stack, innermost first (`function (location)`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub stack: Vec<String>,
    /// Wait time here, summed over threads and runs.
    pub wait_ns: u64,
    /// Waits here.
    pub waits: u64,
}

impl LockSite {
    /// Whether this is a wait for a lock (not a join, condition variable or park).
    pub fn is_lock(&self) -> bool {
        LockSite::is_lock_kind(&self.kind)
    }

    /// Whether a site of this kind is a lock wait.
    pub fn is_lock_kind(kind: &str) -> bool {
        !matches!(kind, "condvar" | "join" | "park" | "runtime")
    }
}

/// The tracer's own accounting: every loss is counted and reported. The
/// waits and samples are this benchmark's; the losses and the processes and
/// switches are the whole trace's (the kernel cannot tell whose a lost
/// event was).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct LockEvents {
    /// Futex waits timed in the kernel.
    pub waits: u64,
    /// Waits not counted because a kernel map was full.
    pub dropped_waits: u64,
    /// Stack samples sent through the ring buffer.
    pub samples: u64,
    /// Stack samples lost because the ring buffer was full.
    pub dropped_samples: u64,
    /// Waits whose kernel stack id could not be taken (a stack map bucket
    /// taken by another stack, or an unreadable stack): they are summed
    /// without one, named by their own sample.
    #[serde(default)]
    pub stack_failures: u64,
    /// Samples whose stack could not be unwound or symbolised.
    pub unresolved_samples: u64,
    /// Processes followed (the command and what it forked).
    pub processes: u64,
    /// Processes not followed because the map was full.
    pub dropped_processes: u64,
    /// Context switches timed.
    pub switches: u64,
    /// Off-CPU intervals not counted because a kernel map was full.
    pub dropped_switches: u64,
}

impl LockReport {
    /// The threads' off-CPU time (blocked and preempted).
    pub fn off_cpu_ns(&self) -> u64 {
        self.blocked_ns.saturating_add(self.preempted_ns)
    }

    /// The lock waits' share of the off-CPU time not spent in joins,
    /// condition variables or parking, 0..=1; `None` without off-CPU time.
    pub fn lock_share_of_off_cpu(&self) -> Option<f64> {
        let base = self.off_cpu_ns().saturating_sub(self.other_wait_ns);
        (base > 0).then(|| (self.lock_wait_ns as f64 / base as f64).min(1.0))
    }

    /// The lock-wait sites, ranked.
    pub fn locks(&self) -> impl Iterator<Item = &LockSite> {
        self.sites.iter().filter(|s| s.is_lock())
    }

    /// Whether the tracer lost anything.
    pub fn lost_anything(&self) -> bool {
        let e = &self.events;
        e.dropped_waits > 0
            || e.dropped_samples > 0
            || e.dropped_processes > 0
            || e.dropped_switches > 0
    }
}
