//! A benchmark's allocation profile (`--profile=alloc`, docs/PROFILES.md,
//! "Allocations"): per timed run the exact counts of allocations, bytes
//! asked for, frees and the peak of the live bytes; and by call stack,
//! estimates from allocations sampled on average once every
//! [`AllocProfile::sample_bytes`] bytes.

use crate::{ProfileFrame, pick};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The counters an allocation profile puts on each timed run's sample, so
/// that `compare`, `ab` and `history` judge them as metrics.
pub const ALLOC_COUNTERS: [&str; 3] = ["alloc_count", "alloc_bytes", "alloc_peak_bytes"];

/// Allocations of a benchmark's timed runs, whole process trees.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AllocProfile {
    /// Bytes allocated between sampled allocations, on average (a Poisson
    /// process over the bytes): the stacks' resolution.
    pub sample_bytes: u64,
    /// The timed iterations profiled, in order: every per-run vector is in
    /// this order.
    pub iterations: Vec<u32>,
    /// Allocations per run, exact: malloc, calloc, realloc (a free and an
    /// allocation, as valgrind's DHAT counts it), the aligned variants and
    /// anonymous mmap, over the run's processes.
    pub allocations: Vec<u64>,
    /// Bytes asked for per run, exact.
    pub bytes: Vec<u64>,
    /// Frees per run, exact.
    pub frees: Vec<u64>,
    /// Peak of the live bytes per run, in the allocator's usable sizes (the
    /// size it knows at a free), the highest of the run's processes.
    pub peak_live: Vec<u64>,
    /// Sampled stacks or followed blocks the recorder's tables had no room
    /// for, over the runs: their allocations are in the counts, not in the
    /// stacks.
    #[serde(default)]
    pub dropped: u64,
    /// The functions the stacks name; stacks refer to them by index.
    pub frames: Vec<ProfileFrame>,
    /// The distinct sampled stacks.
    pub stacks: Vec<AllocStack>,
}

/// One call stack's sampled allocations, per run.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AllocStack {
    /// Indexes into [`AllocProfile::frames`], outermost first, the
    /// function that called the allocator last.
    pub frames: Vec<u32>,
    /// Sampled allocations per run.
    pub samples: Vec<u32>,
    /// Estimated allocations per run (each sample of s bytes stands for
    /// 1 / (1 − e^(−s / sample_bytes)) of them).
    pub count: Vec<f64>,
    /// Estimated bytes per run.
    pub bytes: Vec<f64>,
    /// Estimated bytes still live when the live bytes last reached a new
    /// peak (within 5 % of it), per run.
    pub at_peak: Vec<f64>,
}

/// One function's estimated allocations per run.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionAllocs {
    /// The function.
    pub frame: ProfileFrame,
    /// Bytes it asked for itself (it called the allocator), per run.
    pub self_bytes: Vec<f64>,
    /// Bytes asked for by it or what it called, per run.
    pub inclusive_bytes: Vec<f64>,
    /// Allocations it made itself, per run.
    pub self_count: Vec<f64>,
    /// Bytes it allocated that were live at the peak, per run.
    pub at_peak: Vec<f64>,
}

impl FunctionAllocs {
    /// Self bytes over all runs.
    pub fn self_total(&self) -> f64 {
        self.self_bytes.iter().sum()
    }
}

impl AllocProfile {
    /// Every function's estimated allocations per run, the most bytes asked
    /// for itself first. The C library's and the C++ runtime's allocation
    /// entries (`operator new`, `strdup`) are passed over: their caller
    /// asked.
    pub fn functions(&self) -> Vec<FunctionAllocs> {
        let runs = self.iterations.len();
        let mut by: Vec<FunctionAllocs> = Vec::new();
        // One entry per (function, module): an inlined and an outlined copy
        // of a function are one function.
        let mut at: std::collections::HashMap<(&str, &str), usize> = Default::default();
        let mut of_frame = vec![0usize; self.frames.len()];
        for (i, f) in self.frames.iter().enumerate() {
            of_frame[i] = *at
                .entry((f.function.as_str(), f.module.as_str()))
                .or_insert_with(|| {
                    by.push(FunctionAllocs {
                        frame: ProfileFrame {
                            inlined: false,
                            ..f.clone()
                        },
                        self_bytes: vec![0.0; runs],
                        inclusive_bytes: vec![0.0; runs],
                        self_count: vec![0.0; runs],
                        at_peak: vec![0.0; runs],
                    });
                    by.len() - 1
                });
        }
        let mut seen = Vec::new();
        for s in &self.stacks {
            let frames: Vec<usize> = s
                .frames
                .iter()
                .map(|&f| f as usize)
                .filter(|&f| f < self.frames.len())
                .collect();
            // The innermost frame that is the program's, not the runtime's.
            let owner = frames
                .iter()
                .rposition(|&f| !is_runtime(&self.frames[f]))
                .or(frames.len().checked_sub(1));
            seen.clear();
            for (i, &f) in frames.iter().enumerate() {
                let k = of_frame[f];
                let first = !seen.contains(&k);
                seen.push(k);
                for r in 0..runs {
                    let bytes = s.bytes.get(r).copied().unwrap_or(0.0);
                    if first {
                        by[k].inclusive_bytes[r] += bytes;
                    }
                    if Some(i) == owner {
                        by[k].self_bytes[r] += bytes;
                        by[k].self_count[r] += s.count.get(r).copied().unwrap_or(0.0);
                        by[k].at_peak[r] += s.at_peak.get(r).copied().unwrap_or(0.0);
                    }
                }
            }
        }
        by.retain(|f| f.inclusive_bytes.iter().any(|&b| b > 0.0));
        by.sort_by(|a, b| {
            b.self_total()
                .total_cmp(&a.self_total())
                .then(a.frame.function.cmp(&b.frame.function))
        });
        by
    }

    /// Keeps only the runs of `iterations` (a run cut short by Ctrl-C was
    /// recorded but not kept).
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
        self.allocations = pick(&self.allocations, &keep);
        self.bytes = pick(&self.bytes, &keep);
        self.frees = pick(&self.frees, &keep);
        self.peak_live = pick(&self.peak_live, &keep);
        for s in &mut self.stacks {
            s.samples = pick(&s.samples, &keep);
            s.count = pick(&s.count, &keep);
            s.bytes = pick(&s.bytes, &keep);
            s.at_peak = pick(&s.at_peak, &keep);
        }
        self.stacks.retain(|s| s.samples.iter().any(|&n| n > 0));
    }

    /// The counters of run `i` for its sample ([`ALLOC_COUNTERS`]).
    pub fn counters_of(&self, i: usize) -> Option<[(&'static str, f64); 3]> {
        Some([
            (ALLOC_COUNTERS[0], *self.allocations.get(i)? as f64),
            (ALLOC_COUNTERS[1], *self.bytes.get(i)? as f64),
            (ALLOC_COUNTERS[2], *self.peak_live.get(i)? as f64),
        ])
    }
}

/// Whether `f` is the C library's or the C++ runtime's (an allocation entry
/// such as `operator new` or `strdup`, or the allocator itself): the
/// allocation is its caller's.
fn is_runtime(f: &ProfileFrame) -> bool {
    let m = f.module.as_str();
    m.starts_with("libc.so")
        || m.starts_with("libc-")
        || m.starts_with("libstdc++")
        || m.starts_with("libc++")
        || m.starts_with("ld-linux")
        || m.starts_with("ld-musl")
        || f.function.starts_with("operator new")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn frame(f: &str, m: &str) -> ProfileFrame {
        ProfileFrame {
            function: f.into(),
            module: m.into(),
            inlined: false,
        }
    }

    #[test]
    fn an_allocation_is_the_programs_function_that_asked_and_runs_are_kept_or_dropped_together() {
        let mut p = AllocProfile {
            sample_bytes: 524_288,
            iterations: vec![0, 1],
            allocations: vec![10, 12],
            bytes: vec![1000, 1200],
            frees: vec![9, 11],
            peak_live: vec![500, 600],
            dropped: 0,
            frames: vec![
                frame("main", "prog"),
                frame("intern", "prog"),
                frame("operator new(unsigned long)", "libstdc++.so.6"),
                frame("make_row", "prog"),
            ],
            stacks: vec![
                AllocStack {
                    frames: vec![0, 1, 2],
                    samples: vec![2, 3],
                    count: vec![4.0, 6.0],
                    bytes: vec![400.0, 600.0],
                    at_peak: vec![100.0, 150.0],
                },
                AllocStack {
                    frames: vec![0, 3],
                    samples: vec![1, 0],
                    count: vec![1.0, 0.0],
                    bytes: vec![100.0, 0.0],
                    at_peak: vec![0.0, 0.0],
                },
            ],
        };
        let f = p.functions();
        assert_eq!(f[0].frame.function, "intern");
        assert_eq!(f[0].self_bytes, vec![400.0, 600.0]);
        assert_eq!(f[1].frame.function, "make_row");
        let main = f.iter().find(|f| f.frame.function == "main").unwrap();
        assert_eq!(main.inclusive_bytes, vec![500.0, 600.0]);
        assert_eq!(main.self_total(), 0.0);
        assert_eq!(
            p.counters_of(1).unwrap(),
            [
                ("alloc_count", 12.0),
                ("alloc_bytes", 1200.0),
                ("alloc_peak_bytes", 600.0)
            ]
        );
        p.keep_iterations(&[1]);
        assert_eq!(
            (p.iterations.clone(), p.allocations.clone()),
            (vec![1], vec![12])
        );
        assert_eq!(p.stacks.len(), 1, "make_row was sampled in run 0 only");
    }
}
