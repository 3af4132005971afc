//! Which time a verdict judges: CPU time where it measures the code, wall
//! time where the program waits or runs in parallel (docs/COMPARE.md,
//! "Which time is judged").
//!
//! On a guest whose hypervisor steals 5–40 % of the CPU, wall time carries
//! the steal and CPU time does not: the kernel charges user and system time
//! from the scheduler's runtime, from which paravirtual steal is
//! subtracted. For a program that keeps one CPU busy and never blocks, the
//! two measure the same code, and CPU time has a third of the noise
//! (docs/NOISE.md). A program that sleeps, does I/O, takes locks or runs
//! threads spends time that CPU time does not see, so wall time stays the
//! judged one there.

use crate::{Metric, Sample};

/// Fewest CPUs a side keeps busy on the median run for CPU time to stand
/// for it: below, more than half of the wall time is spent off the CPU
/// (waiting, or — on the worst guests measured, 41 % steal — stolen).
pub const BUSY_MIN: f64 = 0.5;

/// Most CPUs a side keeps busy for CPU time to stand for it: above, the
/// program runs threads in parallel and its CPU time is not its cost.
pub const BUSY_MAX: f64 = 1.1;

/// Most voluntary context switches a run (mean) of a program that does not
/// wait: a CPU-bound program started by the spawner makes one (measured:
/// 1.00 a run for the cpu, alloc and io programs of bench/validation); a
/// program that sleeps, reads a pipe or waits on a lock makes one more per
/// wait.
pub const WAITS_MAX: f64 = 2.0;

/// The time a verdict judges for one benchmark, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct JudgedTime {
    /// [`Metric::Cpu`] or [`Metric::Wall`].
    pub metric: Metric,
    /// One clause saying why, for the report ("keeps 0.98 CPUs busy; …").
    pub why: String,
}

/// How one side uses the CPU: the median run's CPUs kept busy (CPU time
/// over wall time) and the mean voluntary context switches a run.
fn usage(samples: &[&Sample]) -> Option<(f64, f64)> {
    let mut busy: Vec<f64> = samples
        .iter()
        .filter(|s| s.wall_ns > 0)
        .map(|s| Metric::Cpu.of(s) / Metric::Wall.of(s))
        .filter(|b| b.is_finite())
        .collect();
    if busy.is_empty() {
        return None;
    }
    busy.sort_by(f64::total_cmp);
    let median = busy[busy.len() / 2];
    let waits = samples.iter().map(|s| s.voluntary_cs as f64).sum::<f64>() / samples.len() as f64;
    Some((median, waits))
}

/// Chooses the judged time of a benchmark from both sides' samples: CPU
/// time when each side keeps between [`BUSY_MIN`] and [`BUSY_MAX`] CPUs
/// busy and makes at most [`WAITS_MAX`] voluntary context switches a run,
/// the same number on both sides (within 10 % or half a switch: a change
/// that adds a wait adds a switch, and is then judged on wall time, where
/// the waiting shows); wall time otherwise, and wherever CPU time was not
/// recorded (imports, a program that only sleeps).
pub fn judged_time(base: &[&Sample], cand: &[&Sample]) -> JudgedTime {
    let wall = |why: String| JudgedTime {
        metric: Metric::Wall,
        why,
    };
    let (Some((busy_b, waits_b)), Some((busy_c, waits_c))) = (usage(base), usage(cand)) else {
        return wall("no samples on a side to tell how it uses the CPU".into());
    };
    if busy_b == 0.0 && busy_c == 0.0 {
        return wall("no CPU time was recorded".into());
    }
    let (lo, hi) = (busy_b.min(busy_c), busy_b.max(busy_c));
    if hi > BUSY_MAX {
        return wall(format!(
            "the program runs in parallel ({hi:.2} CPUs busy): its CPU time is not its cost"
        ));
    }
    if lo < BUSY_MIN {
        return wall(format!(
            "the program waits (it keeps {lo:.2} CPUs busy): CPU time does not see the waiting"
        ));
    }
    let waits = waits_b.max(waits_c);
    // One more wait a run (a sleep the change added, a read that now
    // blocks) moves the mean by a whole switch: the program of the study
    // made 1.00 a run on every side (STATISTICS.md §8).
    let moved = (waits_c - waits_b).abs() > (0.1 * waits_b).max(0.5);
    if waits > WAITS_MAX || moved {
        return wall(format!(
            "the program waits ({waits_b:.1} → {waits_c:.1} voluntary context switches a run): CPU time does not see the waiting"
        ));
    }
    JudgedTime {
        metric: Metric::Cpu,
        why: format!(
            "keeps {:.2} CPUs busy without waiting; wall time includes {:.0}% off the CPU (stolen or taken by other processes)",
            (busy_b + busy_c) / 2.0,
            100.0 * (1.0 - lo.min(1.0))
        ),
    }
}

/// The sentence that names the judged time, for a report's row.
impl JudgedTime {
    /// "judged on CPU time: keeps 0.98 CPUs busy …".
    pub fn sentence(&self) -> String {
        let what = if self.metric == Metric::Cpu {
            "CPU time"
        } else {
            "wall time"
        };
        format!("judged on {what}: {}", self.why)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(wall_ms: u64, cpu_ms: u64, waits: u64) -> Sample {
        Sample {
            wall_ns: wall_ms * 1_000_000,
            user_ns: cpu_ms * 900_000,
            sys_ns: cpu_ms * 100_000,
            voluntary_cs: waits,
            exit_code: Some(0),
            ..Sample::default()
        }
    }

    fn judge(b: &[Sample], c: &[Sample]) -> JudgedTime {
        let (rb, rc): (Vec<&Sample>, Vec<&Sample>) = (b.iter().collect(), c.iter().collect());
        judged_time(&rb, &rc)
    }

    fn five(s: Sample) -> Vec<Sample> {
        vec![s; 5]
    }

    #[test]
    fn a_busy_program_is_judged_on_cpu_time_even_with_steal() {
        // 27 % of the wall time stolen: still one CPU's work, no waits.
        let j = judge(&five(sample(100, 73, 1)), &five(sample(104, 76, 1)));
        assert_eq!(j.metric, Metric::Cpu);
        assert!(
            j.sentence().starts_with("judged on CPU time: keeps 0.7"),
            "{j:?}"
        );
        assert!(j.why.contains("27% off the CPU"), "{j:?}");
    }

    #[test]
    fn waiting_threads_and_missing_cpu_time_keep_wall_time() {
        // Sleeps: a tenth of a CPU.
        let sleeps = judge(&five(sample(100, 10, 1)), &five(sample(100, 10, 1)));
        assert_eq!(sleeps.metric, Metric::Wall);
        assert!(sleeps.why.contains("keeps 0.10 CPUs busy"), "{sleeps:?}");
        // A change that adds waiting to a busy program: judged on wall,
        // one added sleep a run (1 → 2 switches) as much as many.
        let waits = judge(&five(sample(100, 95, 0)), &five(sample(110, 95, 40)));
        assert_eq!(waits.metric, Metric::Wall);
        assert!(waits.why.contains("0.0 → 40.0 voluntary"), "{waits:?}");
        let one_more = judge(&five(sample(100, 95, 1)), &five(sample(102, 95, 2)));
        assert_eq!(one_more.metric, Metric::Wall, "{one_more:?}");
        // Two threads: CPU time above wall time.
        let threads = judge(&five(sample(100, 190, 0)), &five(sample(100, 190, 0)));
        assert_eq!(threads.metric, Metric::Wall);
        assert!(threads.why.contains("1.90 CPUs busy"), "{threads:?}");
        // An import (no CPU time) and an empty side.
        assert_eq!(
            judge(&five(sample(100, 0, 0)), &five(sample(100, 0, 0))).metric,
            Metric::Wall
        );
        assert_eq!(judge(&[], &[sample(100, 95, 0)]).metric, Metric::Wall);
    }
}
