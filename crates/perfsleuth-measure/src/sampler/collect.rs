//! What the reader makes of the records: stacks unwound and named per run,
//! waits off the CPU with their reasons, the kernel's symbols.

use crate::sampler::IOC_PERIOD;
use crate::sampler::JITTER;
use crate::sampler::MISC_COMM_EXEC;
use crate::sampler::MISC_CPUMODE_MASK;
use crate::sampler::MISC_KERNEL;
use crate::sampler::MISC_SWITCH_OUT;
use crate::sampler::MISC_SWITCH_OUT_PREEMPT;
use crate::sampler::ring::c_str;
use crate::sampler::ring::u32_at;
use crate::sampler::ring::u64_at;
use crate::sampler::{
    RECORD_COMM, RECORD_EXIT, RECORD_FORK, RECORD_LOST, RECORD_LOST_SAMPLES, RECORD_MMAP2,
    RECORD_SAMPLE, RECORD_SWITCH, RECORD_THROTTLE,
};
use perfsleuth_model::OffCpuReason;
use perfsleuth_model::ProfileFrame;
use perfsleuth_model::ProfileStack;
use perfsleuth_model::StackProfile;
use perfsleuth_unwind::Mapping;
use perfsleuth_unwind::Maps;
use perfsleuth_unwind::Symbolizer;
use perfsleuth_unwind::UserStack;
use std::collections::HashMap;
use std::path::PathBuf;

/// Whether `source` is a file of a language's standard library, inlined
/// from its headers or sources: Rust's (`/rustc/HASH/library/…`, or a
/// local rust-src), C and C++'s system headers.
pub(crate) fn is_library_source(source: Option<&str>) -> bool {
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
    pub(crate) period_ns: u64,
    pub(crate) kernel: bool,
    /// Whether off-CPU time was recorded.
    pub(crate) off_cpu: bool,
    /// Context switches out of measured threads seen (off-CPU samples).
    pub switches: u64,
    pub(crate) frames: Vec<ProfileFrame>,
    pub(crate) frame_ids: HashMap<ProfileFrame, u32>,
    pub(crate) stacks: Vec<Vec<u32>>,
    pub(crate) stack_ids: HashMap<Vec<u32>, u32>,
    /// (run, stack) → samples.
    pub(crate) counts: HashMap<(u32, u32), u32>,
    /// run → (sum of its samples' periods, samples): a run's processes may
    /// have been sampled at different periods.
    pub(crate) periods: HashMap<u32, (u64, u64)>,
    /// run → samples not unwound past the sampled function.
    pub(crate) truncated: HashMap<u32, u64>,
    /// (run, stack ending in its `[off-cpu: …]` frame) → ns waited.
    pub(crate) waited: HashMap<(u32, u32), u64>,
    /// run → ns its threads waited off the CPU, in all.
    pub(crate) waited_total: HashMap<u32, u64>,
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

    pub(crate) fn frame(&mut self, f: ProfileFrame) -> u32 {
        if let Some(&id) = self.frame_ids.get(&f) {
            return id;
        }
        let id = self.frames.len() as u32;
        self.frames.push(f.clone());
        self.frame_ids.insert(f, id);
        id
    }

    pub(crate) fn stack(&mut self, stack: Vec<u32>) -> u32 {
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

    pub(crate) fn count(&mut self, run: u32, stack: Vec<u32>) {
        let id = self.stack(stack);
        *self.counts.entry((run, id)).or_default() += 1;
    }

    /// Adds `ns` waited by a thread of `run` in `stack` (ending in its
    /// reason's frame).
    pub(crate) fn wait(&mut self, run: u32, stack: Vec<u32>, ns: u64) {
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
pub(crate) fn in_periods(waits: &[(u32, u64)], period_ns: u64) -> Vec<(u32, u32)> {
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
pub(crate) struct Wait {
    pub(crate) run: u32,
    /// Its stack's frames, outermost first (the reason's frame not yet on).
    pub(crate) frames: Vec<u32>,
    pub(crate) reason: OffCpuReason,
    pub(crate) since: u64,
}

/// The processes followed, their maps, and the counts so far.
#[derive(Default)]
pub(crate) struct State {
    /// The per-CPU events, whose period is redrawn for each run.
    pub(crate) events: Vec<std::os::fd::RawFd>,
    pub(crate) nominal_ns: u64,
    /// xorshift state for the periods.
    pub(crate) rng: u64,
    /// pid → its run.
    pub(crate) run_of: HashMap<u32, u32>,
    pub(crate) maps: HashMap<u32, Maps>,
    pub(crate) symbolizer: Symbolizer,
    pub(crate) collected: Collected,
    /// tid → the wait it switched out for.
    pub(crate) waits: HashMap<u32, Wait>,
    /// The kernel's function addresses, read at the first switch-out.
    pub(crate) kernel: Option<KernelSymbols>,
    /// tid → pid of the threads the followed processes started.
    pub(crate) threads: HashMap<u32, u32>,
}

/// What a thread blocked in, from its kernel call chain.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Blocked {
    /// A system call, by name (`futex`, `ppoll`).
    Call(String),
    /// A page fault.
    Fault,
}

/// The kernel's text symbols from `/proc/kallsyms`: their addresses in
/// order, and for the system-call entry points and the page-fault handler
/// what they are (the others are only boundaries).
#[derive(Default)]
pub(crate) struct KernelSymbols {
    pub(crate) starts: Vec<u64>,
    /// Parallel to `starts`: `Some` for the symbols a wait is told by.
    pub(crate) what: Vec<Option<Blocked>>,
}

impl KernelSymbols {
    /// Reads `/proc/kallsyms`; empty where the kernel hides its addresses
    /// (`kptr_restrict`, not root): then no wait is told by its chain.
    pub(crate) fn load() -> KernelSymbols {
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
    pub(crate) fn blocked_in(&self, chain: &[u64]) -> Option<Blocked> {
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
    pub(crate) fn is_join(&self, pid: u32, op: u64, val: u64) -> bool {
        // FUTEX_WAIT and FUTEX_WAIT_BITSET, any flags.
        let cmd = op & 0x7f;
        (cmd == 0 || cmd == 9)
            && u32::try_from(val & 0xffff_ffff)
                .ok()
                .and_then(|tid| self.threads.get(&tid))
                .is_some_and(|&p| p == pid)
    }

    pub(crate) fn kernel_symbols(&mut self) -> &KernelSymbols {
        self.kernel.get_or_insert_with(KernelSymbols::load)
    }

    pub(crate) fn record(&mut self, r: &[u8]) {
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
    pub(crate) fn redraw_period(&mut self) {
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

    pub(crate) fn mmap2(&mut self, r: &[u8]) {
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
    pub(crate) fn switch(&mut self, r: &[u8], misc: u16) {
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

    pub(crate) fn sample(&mut self, r: &[u8], misc: u16) {
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
    pub(crate) fn frame_ids(
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
pub(crate) fn is_child_wait(function: &str) -> bool {
    let n = function.trim_start_matches('_');
    let n = n.strip_prefix("GI_").unwrap_or(n).trim_start_matches('_');
    let n = n.strip_prefix("libc_").unwrap_or(n);
    matches!(n, "wait4" | "waitpid" | "waitid" | "wait" | "wait3")
}
