//! Whole-machine CPU time from `/proc/stat`, read before and after a run so
//! that `scale` can say how busy, idle, waiting or stolen the CPUs were while
//! it ran (what `mpstat` shows, without a second tool).

use std::path::Path;

/// Cumulative CPU time of one CPU (or all of them), in clock ticks.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CpuTicks {
    /// Time in user mode, `nice`d included (guest time is already counted here).
    pub user: u64,
    /// Time in the kernel, hard and soft interrupts included.
    pub system: u64,
    /// Idle time.
    pub idle: u64,
    /// Idle while a disk request was outstanding.
    pub iowait: u64,
    /// Time the hypervisor ran something else while this CPU wanted to run.
    pub steal: u64,
}

impl CpuTicks {
    /// Saturating: [`CpuTimes::parse`] refuses lines whose total does not
    /// fit, but the fields are public.
    fn total(&self) -> u64 {
        [self.system, self.idle, self.iowait, self.steal]
            .iter()
            .fold(self.user, |t, v| t.saturating_add(*v))
    }
}

/// One reading of `/proc/stat`: the `cpu` line and every `cpuN` line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CpuTimes {
    /// All CPUs together.
    pub total: CpuTicks,
    /// Per CPU, in the order the kernel lists them, with the CPU number.
    pub per_cpu: Vec<(usize, CpuTicks)>,
}

/// Shares of the elapsed CPU time, each in 0..=1, summing to 1.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct CpuShares {
    /// User mode.
    pub user: f64,
    /// Kernel mode.
    pub system: f64,
    /// Idle.
    pub idle: f64,
    /// Idle waiting for I/O.
    pub iowait: f64,
    /// Stolen by the hypervisor.
    pub steal: f64,
}

impl CpuShares {
    /// User + system: the share the CPUs were doing work.
    pub fn busy(&self) -> f64 {
        self.user + self.system
    }
}

/// CPU usage between two readings.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct CpuUsage {
    /// Clock ticks (USER_HZ, usually 100 per second) that passed, all CPUs
    /// together: the shares' resolution. A run of a few ticks gives shares
    /// rounded to whole ticks, so callers weigh or pool by this.
    pub ticks: u64,
    /// All CPUs together.
    pub total: CpuShares,
    /// Per CPU number.
    pub per_cpu: Vec<(usize, CpuShares)>,
}

/// Why `/proc/stat` (or a file in its format) could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ProcStatError {
    /// The file could not be read.
    #[error("cannot read {path}: {source}")]
    Read {
        /// The file.
        path: std::path::PathBuf,
        /// What reading it said.
        source: std::io::Error,
    },
    /// A line is not what the kernel writes.
    #[error("line `{label}`: {what}")]
    Line {
        /// The line's first word (`cpu`, `cpu3`).
        label: String,
        /// What is wrong with it.
        what: String,
    },
    /// The file has no `cpu` line (all CPUs together).
    #[error("no `cpu` line")]
    NoTotal,
    /// The same, with the file it came from.
    #[error("{path}: {inner}")]
    In {
        /// The file.
        path: std::path::PathBuf,
        /// What was wrong in it.
        inner: Box<ProcStatError>,
    },
}

impl CpuTimes {
    /// Reads `/proc/stat`.
    pub fn read() -> Result<CpuTimes, ProcStatError> {
        Self::read_from(Path::new("/proc/stat"))
    }

    /// Reads a file in `/proc/stat` format.
    pub fn read_from(path: &Path) -> Result<CpuTimes, ProcStatError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProcStatError::Read {
            path: path.to_path_buf(),
            source,
        })?;
        Self::parse(&text).map_err(|e| ProcStatError::In {
            path: path.to_path_buf(),
            inner: Box::new(e),
        })
    }

    /// Parses `/proc/stat` text.
    pub fn parse(text: &str) -> Result<CpuTimes, ProcStatError> {
        let mut times = CpuTimes::default();
        let mut seen_total = false;
        for line in text.lines() {
            let mut words = line.split_ascii_whitespace();
            let Some(label) = words.next() else { continue };
            let Some(rest) = label.strip_prefix("cpu") else {
                continue;
            };
            let bad = |what: String| ProcStatError::Line {
                label: label.to_string(),
                what,
            };
            let mut fields = [0u64; 8];
            let mut count = 0;
            for (slot, word) in fields.iter_mut().zip(words) {
                *slot = word
                    .parse()
                    .map_err(|_| bad(format!("`{word}` is not a number")))?;
                count += 1;
            }
            // Kernels since 2.6.11 have at least the eight fields up to steal.
            if count < 4 {
                return Err(bad(format!("has {count} fields, expected at least 4")));
            }
            let [user, nice, system, idle, iowait, irq, softirq, steal] = fields;
            let overflow = || bad("the times overflow 64 bits".to_string());
            let ticks = CpuTicks {
                user: user.checked_add(nice).ok_or_else(overflow)?,
                system: system
                    .checked_add(irq)
                    .and_then(|s| s.checked_add(softirq))
                    .ok_or_else(overflow)?,
                idle,
                iowait,
                steal,
            };
            [ticks.system, idle, iowait, steal]
                .iter()
                .try_fold(ticks.user, |t, v| t.checked_add(*v))
                .ok_or_else(overflow)?;
            if rest.is_empty() {
                times.total = ticks;
                seen_total = true;
            } else {
                let cpu = rest
                    .parse()
                    .map_err(|_| bad("is not a CPU line".to_string()))?;
                times.per_cpu.push((cpu, ticks));
            }
        }
        if !seen_total {
            return Err(ProcStatError::NoTotal);
        }
        Ok(times)
    }

    /// Usage from `self` (earlier) to `later`; None when no time passed.
    pub fn usage_until(&self, later: &CpuTimes) -> Option<CpuUsage> {
        let total = shares(&self.total, &later.total)?;
        let per_cpu = later
            .per_cpu
            .iter()
            .filter_map(|(cpu, after)| {
                let before = self.per_cpu.iter().find(|(c, _)| c == cpu)?;
                Some((*cpu, shares(&before.1, after)?))
            })
            .collect();
        Some(CpuUsage {
            ticks: later.total.total().saturating_sub(self.total.total()),
            total,
            per_cpu,
        })
    }
}

fn shares(before: &CpuTicks, after: &CpuTicks) -> Option<CpuShares> {
    // A CPU brought offline and back can restart its counters: saturate.
    let d = |a: u64, b: u64| b.saturating_sub(a) as f64;
    let parts = [
        d(before.user, after.user),
        d(before.system, after.system),
        d(before.idle, after.idle),
        d(before.iowait, after.iowait),
        d(before.steal, after.steal),
    ];
    // The sum of the parts, not the difference of the totals: when one
    // counter went back (a restart) the totals' difference is smaller than
    // the others' growth, and the shares would pass 1.
    let elapsed: f64 = parts.iter().sum();
    if elapsed <= 0.0 {
        return None;
    }
    let [user, system, idle, iowait, steal] = parts.map(|p| p / elapsed);
    Some(CpuShares {
        user,
        system,
        idle,
        iowait,
        steal,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const BEFORE: &str = "cpu  100 0 50 800 10 0 0 40 0 0\n\
        cpu0 50 0 25 400 5 0 0 20 0 0\n\
        cpu1 50 0 25 400 5 0 0 20 0 0\n\
        intr 12345 0 0\nctxt 999\n";
    const AFTER: &str = "cpu  250 10 80 900 10 5 5 40 0 0\n\
        cpu0 150 10 40 400 5 5 5 20 0 0\n\
        cpu1 100 0 40 500 5 0 0 20 0 0\n";

    #[test]
    fn shares_of_busy_idle_and_steal() {
        let a = CpuTimes::parse(BEFORE).expect("parse");
        let b = CpuTimes::parse(AFTER).expect("parse");
        let u = a.usage_until(&b).expect("usage");
        assert_eq!(u.ticks, 300);
        // Elapsed: user 160, system 40, idle 100 → 300 ticks.
        assert!((u.total.user - 160.0 / 300.0).abs() < 1e-12);
        assert!((u.total.system - 40.0 / 300.0).abs() < 1e-12);
        assert!((u.total.idle - 100.0 / 300.0).abs() < 1e-12);
        assert_eq!(u.total.steal, 0.0);
        assert!((u.total.busy() + u.total.idle - 1.0).abs() < 1e-12);
        assert_eq!(u.per_cpu.len(), 2);
        assert_eq!(u.per_cpu[0].0, 0);
        assert!((u.per_cpu[0].1.busy() - 1.0).abs() < 1e-12);
        assert!((u.per_cpu[1].1.idle - 100.0 / 165.0).abs() < 1e-12);
    }

    #[test]
    fn malformed_or_empty_input_is_an_error_and_no_time_is_none() {
        assert!(CpuTimes::parse("").is_err());
        assert!(CpuTimes::parse("cpu 1 2 x 4\n").is_err());
        assert!(CpuTimes::parse("cpu 1 2\n").is_err());
        let a = CpuTimes::parse(BEFORE).expect("parse");
        assert_eq!(a.usage_until(&a), None);
    }

    #[test]
    fn times_beyond_64_bits_are_an_error_not_a_panic() {
        // Found by tests/fuzz_callgrind.rs: `user + nice` and the total
        // overflowed (a panic in debug builds, wrapped shares in release).
        let max = u64::MAX;
        assert!(CpuTimes::parse(&format!("cpu {max} 1 0 0\n")).is_err());
        assert!(CpuTimes::parse(&format!("cpu 0 0 {max} 0 0 1 0 0\n")).is_err());
        let e = CpuTimes::parse(&format!("cpu 1 0 0 0 0 0 0 {max}\n")).unwrap_err();
        assert!(e.to_string().contains("overflow"), "{e}");
        assert!(CpuTimes::parse(&format!("cpu {max} 0 0 0\n")).is_ok());
    }

    #[test]
    fn a_counter_that_went_back_keeps_the_shares_within_one() {
        // Found by tests/fuzz_callgrind.rs: idle restarted from 0 while
        // user grew, and user's share came out as 150 / 50 = 3.
        let a = CpuTimes::parse("cpu 0 0 0 100\n").unwrap();
        let b = CpuTimes::parse("cpu 150 0 0 0\n").unwrap();
        let u = a.usage_until(&b).expect("user time passed");
        assert_eq!(u.total.user, 1.0);
        assert_eq!(u.total.idle, 0.0);
    }

    #[test]
    fn the_live_file_parses() {
        let t = CpuTimes::read().expect("/proc/stat");
        assert!(!t.per_cpu.is_empty());
        assert!(t.total.total() > 0);
    }
}
