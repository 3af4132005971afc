//! Sampled call stacks (`--profile`): frames, stacks per run, time off the
//! CPU and its reasons, and the functions they add up to.

use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;

/// A benchmark's sampled call stacks: the `cpu-clock` samples of its timed
/// runs' whole process trees, aggregated by stack, each stack counted per
/// run so that a share of the time has an interval across runs. A wall
/// profile also holds the time its threads spent off the CPU: stacks whose
/// leaf is an [`OFF_CPU_MODULE`] frame (`[off-cpu: poll]`), counted in
/// periods of the run (the time waited there ÷ the run's period, rounded so
/// that the run's periods add up to its exact total, [`Self::off_cpu_ns`]).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct StackProfile {
    /// The event sampled (`cpu-clock`: on-CPU time, user and, where
    /// permitted, kernel mode; off-CPU time is not sampled).
    pub event: String,
    /// CPU time per sample, in nanoseconds: the nominal sampling period.
    pub period_ns: u64,
    /// The period each profiled run was sampled at, in `iterations`' order
    /// (each run draws its own within ±10 % of `period_ns`, so that a
    /// program looping in step with the sampling cannot bias every run
    /// alike); empty: every run at `period_ns`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub periods_ns: Vec<u64>,
    /// Whether samples in kernel mode were taken (they show as `[kernel]`).
    pub kernel: bool,
    /// The timed iterations profiled (`Sample::iteration`), in order: the
    /// `counts` of every stack are in this order.
    pub iterations: Vec<u32>,
    /// Samples in these runs (every stack's counts summed).
    pub samples: u64,
    /// Samples the kernel dropped in the whole session, the ring buffer
    /// being full (not attributable to a run).
    pub lost: u64,
    /// Samples whose stack could not be unwound past the sampled function
    /// (no file for the code — a JIT —, or no unwind information).
    #[serde(default)]
    pub truncated: u64,
    /// The functions the stacks name; stacks refer to them by index.
    pub frames: Vec<ProfileFrame>,
    /// The distinct stacks, each with its sample count per profiled run.
    pub stacks: Vec<ProfileStack>,
    /// Where an imported profile came from (`perf script (perf.txt)`);
    /// absent for one perfsleuth sampled. An imported file is one run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// A wall profile's off-CPU time per profiled run (its threads' time
    /// switched out, summed over threads; waits for a child process not
    /// counted), ns, exact, in `iterations`' order; empty where off-CPU
    /// time was not recorded (`--profile=cpu`, a kernel that refused it, an
    /// import without it).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub off_cpu_ns: Vec<u64>,
}

/// The module of the pseudo-frames that end an off-CPU stack: the frame
/// `[off-cpu: REASON]` says why the thread was off the CPU there.
pub const OFF_CPU_MODULE: &str = "[off-cpu]";

/// The C library's calls that wait for a file, pipe or socket: a wait
/// in one is `I/O`.
pub(crate) const IO_CALLS: &[&str] = &[
    "read",
    "write",
    "pread",
    "pwrite",
    "readv",
    "writev",
    "preadv",
    "pwritev",
    "recv",
    "recvfrom",
    "recvmsg",
    "recvmmsg",
    "send",
    "sendto",
    "sendmsg",
    "sendmmsg",
    "accept",
    "accept4",
    "connect",
    "open",
    "openat",
    "fsync",
    "fdatasync",
    "sync_file_range",
    "syncfs",
    "sendfile",
    "splice",
    "copy_file_range",
    "io_uring_enter",
    "io_getevents",
    "msgrcv",
    "msgsnd",
    "flock",
    "fcntl",
];

/// Why a thread was off the CPU, as a wall profile tells it (the leaf
/// frame `[off-cpu: REASON]` of its stack).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum OffCpuReason {
    /// Waiting for a lock or condition (a futex: mutexes, condition
    /// variables, semaphores, thread joins).
    Lock,
    /// Waiting in poll, select or epoll for a file descriptor.
    Poll,
    /// Reading or writing a file, pipe or socket, or syncing a file.
    Io,
    /// Sleeping for a time (nanosleep, clock_nanosleep).
    Sleep,
    /// Ready to run but switched out: preempted by another task, or yielded.
    Runnable,
    /// Blocked in another system call, or in a page fault.
    Other,
}

impl OffCpuReason {
    /// Every reason, in the order the legend lists them.
    pub const ALL: [OffCpuReason; 6] = [
        OffCpuReason::Lock,
        OffCpuReason::Poll,
        OffCpuReason::Io,
        OffCpuReason::Sleep,
        OffCpuReason::Runnable,
        OffCpuReason::Other,
    ];

    /// Its word in the pseudo-frame and the attribution (`poll`).
    pub fn word(self) -> &'static str {
        match self {
            OffCpuReason::Lock => "lock",
            OffCpuReason::Poll => "poll",
            OffCpuReason::Io => "I/O",
            OffCpuReason::Sleep => "sleep",
            OffCpuReason::Runnable => "runnable",
            OffCpuReason::Other => "other",
        }
    }

    /// How a function's time waiting for this reason is named beside it:
    /// "off CPU: poll".
    pub fn describe(self) -> String {
        format!("off CPU: {}", self.word())
    }

    /// The pseudo-frame ending a stack that waited for this reason.
    pub fn frame(self) -> ProfileFrame {
        ProfileFrame {
            function: format!("[off-cpu: {}]", self.word()),
            module: OFF_CPU_MODULE.into(),
            inlined: false,
        }
    }

    /// The reason a pseudo-frame's function names (`[off-cpu: poll]`), if
    /// it is one.
    pub fn of_frame(function: &str) -> Option<OffCpuReason> {
        let word = function.strip_prefix("[off-cpu: ")?.strip_suffix(']')?;
        OffCpuReason::ALL.into_iter().find(|r| r.word() == word)
    }

    /// Whether `name` is one of the C library's blocking calls (`__poll`,
    /// `pthread_mutex_lock`, `__futex_abstimed_wait_common64`), by name.
    pub fn is_blocking_call(name: &str) -> bool {
        let n = Self::bare(name);
        n.contains("futex")
            || n.starts_with("lll_")
            || n.starts_with("mutex_lock")
            || n.starts_with("cond_")
            || n.starts_with("rwlock_")
            || n.starts_with("sem_")
            || n.starts_with("clockjoin")
            || IO_CALLS.contains(&n)
            || [
                "join",
                "poll",
                "ppoll",
                "select",
                "pselect",
                "pselect6",
                "epoll_wait",
                "epoll_pwait",
                "epoll_pwait2",
                "nanosleep",
                "clock_nanosleep",
                "usleep",
                "sleep",
                "pause",
                "wait4",
                "waitpid",
                "waitid",
                "syscall",
            ]
            .contains(&n)
    }

    /// A C library function's name without glibc's internal prefixes and
    /// suffixes: `__GI___poll` → `poll`, `__libc_read` → `read`,
    /// `___pthread_mutex_lock` → `mutex_lock`.
    pub(crate) fn bare(name: &str) -> &str {
        let mut n = name.trim_start_matches('_');
        for prefix in ["GI_", "libc_", "pthread_"] {
            if let Some(rest) = n.strip_prefix(prefix) {
                n = rest.trim_start_matches('_');
            }
        }
        n.trim_end_matches("_nocancel")
            .trim_end_matches("64")
            .trim_end_matches("_time")
    }

    /// Why a thread that switched out without being preempted waited,
    /// from the innermost function of its user stack (the C library's
    /// system-call wrapper it blocked in): glibc's internal spellings
    /// (`__GI___poll`, `__futex_abstimed_wait_common64`, `__libc_read`) and
    /// musl's plain ones alike.
    pub fn of_blocking_function(name: &str) -> OffCpuReason {
        let n = Self::bare(name);
        let any = |words: &[&str]| words.iter().any(|w| n.contains(w));
        let is = |words: &[&str]| words.contains(&n);
        if any(&[
            "futex", "lll_lock", "mutex", "cond_", "cond", "rwlock", "sem_", "barrier",
        ]) || is(&["join", "timedjoin", "clockjoin"])
        {
            OffCpuReason::Lock
        } else if any(&["poll", "select", "epoll"]) {
            OffCpuReason::Poll
        } else if any(&["sleep", "pause"]) {
            OffCpuReason::Sleep
        } else if is(IO_CALLS) {
            OffCpuReason::Io
        } else {
            OffCpuReason::Other
        }
    }
}

/// One function of a profile.
#[derive(
    Debug, Clone, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
pub struct ProfileFrame {
    /// The function's name, demangled (`file+0x…` where the file names
    /// none, `[kernel]` for kernel mode, `[unknown]` for code in no file).
    pub function: String,
    /// The binary or library's file name.
    pub module: String,
    /// Inlined into its caller (named from the line tables' inlining records).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub inlined: bool,
}

/// One distinct call stack and how often each profiled run was sampled in it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProfileStack {
    /// Indexes into [`StackProfile::frames`], outermost (the program's
    /// entry) first, the sampled function last.
    pub frames: Vec<u32>,
    /// Samples per run, in [`StackProfile::iterations`]' order.
    pub counts: Vec<u32>,
}

/// The functions a profile's headline names, and the rest in two numbers
/// ([`StackProfile::top_functions`]).
#[derive(Debug, Clone, PartialEq)]
pub struct TopFunctions {
    /// The first functions, in [`StackProfile::functions`]' order.
    pub named: Vec<FunctionSamples>,
    /// How many of the others have samples of their own.
    pub others: usize,
    /// Their self samples, over all runs.
    pub others_self: u64,
}

/// One function's samples in each profiled run of a [`StackProfile`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct FunctionSamples {
    /// The function (an inlined one is a function of its own).
    pub frame: ProfileFrame,
    /// Time the function spent off the CPU for this reason, rather than
    /// on it: the function is the innermost of the program's frames (the
    /// C library's are passed over) where a thread blocked or was switched
    /// out; its self counts are periods waited ([`StackProfile`]).
    pub off_cpu: Option<OffCpuReason>,
    /// For time off the CPU in a thread other than the main one: the
    /// function that thread started in (`waiter`), which thread waited.
    pub thread: Option<String>,
    /// Samples in the function itself, per run.
    pub self_counts: Vec<u64>,
    /// Samples in it or in what it called, per run (a recursive function's
    /// stack counts once).
    pub inclusive: Vec<u64>,
}

impl FunctionSamples {
    /// The function as the profile lines name it: "`fetch_row`", and for
    /// time off the CPU "`fetch_row` (off CPU: poll)".
    pub fn label(&self) -> String {
        off_cpu_label(&self.frame.function, self.off_cpu, self.thread.as_deref())
    }

    /// Self samples over all runs.
    pub fn self_total(&self) -> u64 {
        self.self_counts.iter().sum()
    }

    /// Inclusive samples over all runs.
    pub fn inclusive_total(&self) -> u64 {
        self.inclusive.iter().sum()
    }
}

/// "`fetch_row`", "`fetch_row` (off CPU: poll)", "`take_lock` (off CPU:
/// lock, in thread `waiter`)": a function as the profile lines name it.
pub fn off_cpu_label(
    function: &str,
    off_cpu: Option<OffCpuReason>,
    thread: Option<&str>,
) -> String {
    match (off_cpu, thread) {
        (Some(reason), Some(t)) => format!("`{function}` ({}, in thread `{t}`)", reason.describe()),
        (Some(reason), None) => format!("`{function}` ({})", reason.describe()),
        (None, _) => format!("`{function}`"),
    }
}

/// The elements of `v` whose `keep` is true: a profile's per-run vectors
/// for the runs kept.
pub(crate) fn pick<T: Copy>(v: &[T], keep: &[bool]) -> Vec<T> {
    v.iter()
        .zip(keep)
        .filter(|(_, k)| **k)
        .map(|(x, _)| *x)
        .collect()
}

/// Whether `frame` is the C library's (or its dynamic loader's): where a
/// thread blocks, not why. Frames of imported folded stacks have no module:
/// then the C library's blocking calls are known by name.
pub(crate) fn is_c_library(frame: &ProfileFrame) -> bool {
    let module = frame.module.as_str();
    if module.is_empty() {
        return OffCpuReason::is_blocking_call(&frame.function);
    }
    [
        "libc.so",
        "libc-",
        "ld-linux",
        "ld-musl",
        "libpthread",
        "librt.so",
        "libc.musl",
    ]
    .iter()
    .any(|p| module.starts_with(p))
}

/// A candidate row of [`StackProfile::top_functions`]: a frame (its
/// canonical index) or a wait off the CPU (its index among the waits).
#[derive(Clone, Copy)]
enum Row {
    Frame(u32),
    Wait(usize),
}

/// Every function's totals over the runs (by canonical frame), to rank
/// them by.
struct Totals {
    self_total: Vec<u64>,
    inclusive_total: Vec<u64>,
}

/// Calls `f` with the canonical frame of each of stack `si`'s frames once,
/// however often recursion repeats it: `mark` holds the stack that last
/// counted each frame.
fn visit_once(
    si: usize,
    s: &ProfileStack,
    canonical: &[u32],
    mark: &mut [u32],
    f: &mut dyn FnMut(u32),
) {
    for &fr in &s.frames {
        if let Some(&c) = canonical.get(fr as usize)
            && mark[c as usize] != si as u32
        {
            mark[c as usize] = si as u32;
            f(c);
        }
    }
}

impl StackProfile {
    /// Whether off-CPU time was recorded (a wall profile), or an imported
    /// profile has stacks of it.
    pub fn has_off_cpu(&self) -> bool {
        !self.off_cpu_ns.is_empty() || self.stacks.iter().any(|s| self.off_cpu_reason(s).is_some())
    }

    /// The profile of the time on the CPU only: a wall profile without its
    /// waits (what a change of CPU time is attributed from).
    pub fn on_cpu_only(&self) -> StackProfile {
        let mut p = self.clone();
        p.stacks.retain(|s| self.off_cpu_reason(s).is_none());
        p.off_cpu_ns.clear();
        p.samples = p.run_totals().iter().sum();
        p
    }

    /// Why stack `s` was off the CPU, if it is an off-CPU stack.
    pub fn off_cpu_reason(&self, s: &ProfileStack) -> Option<OffCpuReason> {
        let leaf = self.frames.get(*s.frames.last()? as usize)?;
        if leaf.module != OFF_CPU_MODULE {
            return None;
        }
        OffCpuReason::of_frame(&leaf.function).or(Some(OffCpuReason::Other))
    }

    /// The function a thread other than the main one started in, from a
    /// stack's frames (outermost first): its outermost frame of the
    /// program's own, past the C library's thread start (`clone3`,
    /// `start_thread`, often unnamed in a stripped C library) and a
    /// language runtime's (`std::…`); `None` for the main thread (its
    /// stack starts at `_start` or runs through `main`).
    pub(crate) fn thread_entry(&self, frames: &[u32]) -> Option<u32> {
        let frame = |f: u32| self.frames.get(f as usize);
        if frames
            .iter()
            .any(|&f| frame(f).is_some_and(|f| f.function == "main" || f.function == "_start"))
        {
            return None;
        }
        frames.iter().copied().find(|&f| {
            frame(f).is_some_and(|f| {
                let n = f.function.as_str();
                !is_c_library(f)
                    && !["start_thread", "clone", "clone3", "thread_start"].contains(&n)
                    && !n.contains("thread_start")
                    && !["std::", "core::", "alloc::"]
                        .iter()
                        .any(|p| n.starts_with(p))
                    && !n.starts_with('[')
            })
        })
    }

    /// Every function's samples per run, the most self samples first (ties
    /// by inclusive samples, then name). An off-CPU stack's periods are the
    /// self time of its innermost program frame, as a function of its own
    /// for each reason (`fetch_row` off the CPU in poll is not `fetch_row`
    /// on it); the `[off-cpu: …]` pseudo-frames are no function.
    pub fn functions(&self) -> Vec<FunctionSamples> {
        self.top_functions(usize::MAX).named
    }

    /// The first `n` of [`StackProfile::functions`], and how many of the
    /// others have time of their own and how much: what a profile's
    /// headline needs, without building a row for each of millions of
    /// frames (an imported profile may name that many).
    pub fn top_functions(&self, n: usize) -> TopFunctions {
        let runs = self.iterations.len();
        let canonical = self.canonical_frames();
        let (mut waiting, owners) = self.off_cpu_owners(&canonical, runs);
        let totals = self.totals(&canonical, &owners, &mut waiting, runs);
        let (rows, others_self) = self.rank(&totals, &canonical, &waiting, n);
        let named = self.count_rows(&rows, waiting, &canonical, &owners, runs);
        TopFunctions {
            named,
            others: others_self.len(),
            others_self: others_self.iter().sum(),
        }
    }

    /// Each frame's canonical frame: frames are unique per (function,
    /// module, inlined), and the inlined and outlined copies of one
    /// function merge into the first of them.
    fn canonical_frames(&self) -> Vec<u32> {
        let mut canonical: Vec<u32> = (0..self.frames.len() as u32).collect();
        // Only the names some inlined frame has can have two frames: a
        // table of those (few) rather than of every frame (an imported
        // profile may name millions).
        fn key(f: &ProfileFrame) -> (&str, &str) {
            (f.function.as_str(), f.module.as_str())
        }
        let mut first: foldhash::HashMap<(&str, &str), u32> = self
            .frames
            .iter()
            .filter(|f| f.inlined)
            .map(|f| (key(f), u32::MAX))
            .collect();
        if !first.is_empty() {
            for (i, f) in self.frames.iter().enumerate() {
                if let Some(at) = first.get_mut(&key(f)) {
                    if *at == u32::MAX {
                        *at = i as u32;
                    }
                    canonical[i] = *at;
                }
            }
        }
        canonical
    }

    /// The waits off the CPU, as functions of their own with no samples
    /// yet, and the wait each stack's samples go to (`None`: an on-CPU
    /// stack). The innermost frame outside the C library (the leaf itself
    /// where every frame is in it) owns the wait, a function of its own
    /// per (frame, reason, thread).
    fn off_cpu_owners(
        &self,
        canonical: &[u32],
        runs: usize,
    ) -> (Vec<FunctionSamples>, Vec<Option<usize>>) {
        let canon = |f: u32| canonical.get(f as usize).copied();
        let mut waiting: Vec<FunctionSamples> = Vec::new();
        let mut waiting_at: foldhash::HashMap<(u32, OffCpuReason, u32), usize> =
            foldhash::HashMap::default();
        let owners: Vec<Option<usize>> = self
            .stacks
            .iter()
            .map(|s| {
                let reason = self.off_cpu_reason(s)?;
                let inner = &s.frames[..s.frames.len() - 1];
                let at = inner
                    .iter()
                    .rev()
                    .find(|&&f| {
                        self.frames
                            .get(f as usize)
                            .is_some_and(|f| !is_c_library(f))
                    })
                    .or(inner.last())
                    .and_then(|&f| canon(f));
                let entry = self.thread_entry(inner).and_then(canon);
                let key = (at.unwrap_or(u32::MAX), reason, entry.unwrap_or(u32::MAX));
                Some(*waiting_at.entry(key).or_insert_with(|| {
                    let frame = at
                        .and_then(|c| self.frames.get(c as usize).cloned())
                        .unwrap_or_else(|| ProfileFrame {
                            function: "[unknown]".into(),
                            module: String::new(),
                            inlined: false,
                        });
                    waiting.push(FunctionSamples {
                        frame,
                        off_cpu: Some(reason),
                        thread: entry
                            .and_then(|e| self.frames.get(e as usize))
                            .map(|f| f.function.clone()),
                        self_counts: vec![0; runs],
                        inclusive: vec![0; runs],
                    });
                    waiting.len() - 1
                }))
            })
            .collect();
        (waiting, owners)
    }

    /// Pass one: every function's totals, in flat tables (no row per
    /// frame), to rank them; the waits get their per-run counts here, as
    /// they are few.
    fn totals(
        &self,
        canonical: &[u32],
        owners: &[Option<usize>],
        waiting: &mut [FunctionSamples],
        runs: usize,
    ) -> Totals {
        let mut totals = Totals {
            self_total: vec![0u64; self.frames.len()],
            inclusive_total: vec![0u64; self.frames.len()],
        };
        let mut mark = vec![u32::MAX; self.frames.len()];
        for (si, s) in self.stacks.iter().enumerate() {
            let n: u64 = s.counts.iter().take(runs).map(|&c| u64::from(c)).sum();
            visit_once(si, s, canonical, &mut mark, &mut |c| {
                totals.inclusive_total[c as usize] += n
            });
            match owners[si] {
                Some(w) => {
                    for (r, &c) in s.counts.iter().enumerate().take(runs) {
                        waiting[w].self_counts[r] += u64::from(c);
                        waiting[w].inclusive[r] += u64::from(c);
                    }
                }
                None => {
                    if let Some(leaf) = s.frames.last().and_then(|&f| canonical.get(f as usize)) {
                        totals.self_total[*leaf as usize] += n;
                    }
                }
            }
        }
        totals
    }

    /// The first `n` rows, the most self samples first (ties by inclusive
    /// samples, then name, then the order the rows were first listed:
    /// frames, then waits), and the self totals of the others that have any.
    fn rank(
        &self,
        totals: &Totals,
        canonical: &[u32],
        waiting: &[FunctionSamples],
        n: usize,
    ) -> (Vec<Row>, Vec<u64>) {
        let keyed = |row: Row| -> (u64, u64, &str) {
            match row {
                Row::Frame(i) => (
                    totals.self_total[i as usize],
                    totals.inclusive_total[i as usize],
                    self.frames[i as usize].function.as_str(),
                ),
                Row::Wait(w) => (
                    waiting[w].self_total(),
                    waiting[w].inclusive_total(),
                    waiting[w].frame.function.as_str(),
                ),
            }
        };
        let mut rows: Vec<(usize, Row)> = (0..self.frames.len())
            .filter(|&i| {
                canonical[i] == i as u32
                    && self.frames[i].module != OFF_CPU_MODULE
                    && totals.inclusive_total[i] > 0
            })
            .map(|i| Row::Frame(i as u32))
            .chain((0..waiting.len()).map(Row::Wait))
            .enumerate()
            .collect();
        let order = |a: &(usize, Row), b: &(usize, Row)| {
            let (ka, kb) = (keyed(a.1), keyed(b.1));
            kb.0.cmp(&ka.0)
                .then(kb.1.cmp(&ka.1))
                .then(ka.2.cmp(kb.2))
                .then(a.0.cmp(&b.0))
        };
        if n < rows.len() {
            rows.select_nth_unstable_by(n, order);
        }
        let rest = rows.split_off(n.min(rows.len()));
        rows.sort_unstable_by(order);
        let others_self: Vec<u64> = rest
            .iter()
            .map(|&(_, r)| keyed(r).0)
            .filter(|&t| t > 0)
            .collect();
        (rows.into_iter().map(|(_, r)| r).collect(), others_self)
    }

    /// Pass two: the rows kept, with their per-run counts.
    fn count_rows(
        &self,
        rows: &[Row],
        waiting: Vec<FunctionSamples>,
        canonical: &[u32],
        owners: &[Option<usize>],
        runs: usize,
    ) -> Vec<FunctionSamples> {
        let mut slot = vec![u32::MAX; self.frames.len()];
        let mut named: Vec<FunctionSamples> = Vec::with_capacity(rows.len());
        let mut waits = waiting.into_iter().map(Some).collect::<Vec<_>>();
        for &row in rows {
            match row {
                Row::Frame(i) => {
                    slot[i as usize] = named.len() as u32;
                    let mut frame = self.frames[i as usize].clone();
                    frame.inlined = false;
                    named.push(FunctionSamples {
                        frame,
                        off_cpu: None,
                        thread: None,
                        self_counts: vec![0; runs],
                        inclusive: vec![0; runs],
                    });
                }
                Row::Wait(w) => {
                    let mut f = waits[w].take().unwrap_or_default();
                    f.frame.inlined = false;
                    named.push(f);
                }
            }
        }
        let mut mark = vec![u32::MAX; self.frames.len()];
        for (si, s) in self.stacks.iter().enumerate() {
            let counts = &s.counts[..s.counts.len().min(runs)];
            visit_once(si, s, canonical, &mut mark, &mut |c| {
                if let Some(f) = named.get_mut(slot[c as usize] as usize) {
                    for (r, &n) in counts.iter().enumerate() {
                        f.inclusive[r] += u64::from(n);
                    }
                }
            });
            if owners[si].is_none()
                && let Some(&leaf) = s.frames.last().and_then(|&f| canonical.get(f as usize))
                && let Some(f) = named.get_mut(slot[leaf as usize] as usize)
            {
                for (r, &n) in counts.iter().enumerate() {
                    f.self_counts[r] += u64::from(n);
                }
            }
        }
        named
    }

    /// Keeps only the runs of `iterations` (those whose samples were kept:
    /// a run cut short by Ctrl-C was sampled but not stored), and the
    /// stacks and frames still sampled in them.
    pub fn keep_iterations(&mut self, iterations: &[u32]) {
        let keep: Vec<bool> = self
            .iterations
            .iter()
            .map(|i| iterations.contains(i))
            .collect();
        if keep.iter().all(|&k| k) {
            return;
        }
        self.iterations = pick(&self.iterations, &keep);
        if !self.periods_ns.is_empty() {
            self.periods_ns = pick(&self.periods_ns, &keep);
        }
        if !self.off_cpu_ns.is_empty() {
            self.off_cpu_ns = pick(&self.off_cpu_ns, &keep);
        }
        for s in &mut self.stacks {
            s.counts = pick(&s.counts, &keep);
        }
        self.stacks.retain(|s| s.counts.iter().any(|&c| c > 0));
        // Renumber the frames still used.
        let mut map = vec![u32::MAX; self.frames.len()];
        let mut frames = Vec::new();
        for s in &mut self.stacks {
            for f in &mut s.frames {
                let i = *f as usize;
                if map[i] == u32::MAX {
                    map[i] = frames.len() as u32;
                    frames.push(self.frames[i].clone());
                }
                *f = map[i];
            }
        }
        self.frames = frames;
        self.samples = self.run_totals().iter().sum();
        // Counted over all runs: at most what is left.
        self.truncated = self.truncated.min(self.samples);
    }

    /// The sampling period of profiled run `i`, ns.
    pub fn period_of(&self, i: usize) -> u64 {
        self.periods_ns.get(i).copied().unwrap_or(self.period_ns)
    }

    /// The CPU time the samples of each profiled run stand for, ns (its
    /// on-CPU stacks only).
    pub fn run_cpu_ns(&self) -> Vec<f64> {
        self.periods_as_ns(&self.totals_where(|off| !off))
    }

    /// The time each profiled run's stacks stand for, ns: on the CPU, and
    /// off it in a wall profile (its threads' time, summed).
    pub fn run_time_ns(&self) -> Vec<f64> {
        self.periods_as_ns(&self.run_totals())
    }

    /// The periods of each profiled run, in `iterations`' order: samples,
    /// and in a wall profile the periods waited off the CPU.
    pub fn run_totals(&self) -> Vec<u64> {
        self.totals_where(|_| true)
    }

    /// The on-CPU samples of each profiled run, in `iterations`' order.
    pub fn run_samples(&self) -> Vec<u64> {
        self.totals_where(|off| !off)
    }

    /// Samples taken on the CPU, over all runs (`samples` less the periods
    /// waited off it).
    pub fn on_cpu_samples(&self) -> u64 {
        self.run_samples().iter().sum()
    }

    /// Per run, the counts of the stacks `pick` keeps (given whether the
    /// stack is off the CPU).
    pub(crate) fn totals_where(&self, pick: impl Fn(bool) -> bool) -> Vec<u64> {
        let mut totals = vec![0u64; self.iterations.len()];
        for s in &self.stacks {
            if !pick(self.off_cpu_reason(s).is_some()) {
                continue;
            }
            for (t, &c) in totals.iter_mut().zip(&s.counts) {
                *t += u64::from(c);
            }
        }
        totals
    }

    pub(crate) fn periods_as_ns(&self, totals: &[u64]) -> Vec<f64> {
        totals
            .iter()
            .enumerate()
            .map(|(i, &n)| n as f64 * self.period_of(i) as f64)
            .collect()
    }
}
