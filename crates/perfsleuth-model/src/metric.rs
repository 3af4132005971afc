//! Metrics: what a benchmark's samples measure, their units and directions,
//! and the counters a run may read.

use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use std::borrow::Cow;
use std::collections::BTreeMap;

/// Whether smaller or larger values of a metric are better.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Lower is better (time, memory).
    Lower,
    /// Higher is better (throughput).
    Higher,
}

/// A per-sample metric with its unit and direction: a field of [`Sample`],
/// or a counter recorded in [`Sample::counters`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Metric {
    /// Wall-clock time from spawn to exit.
    Wall,
    /// CPU time of the child's process tree: user + system. The kernel
    /// charges it from the scheduler's runtime, from which the hypervisor's
    /// stolen time is subtracted, and splits it into user and system by
    /// ticks: the split is coarse, the sum exact.
    Cpu,
    /// User CPU time of the child.
    User,
    /// System CPU time of the child.
    Sys,
    /// Peak resident set size of the child.
    PeakRss,
    /// Minor page faults.
    MinorFaults,
    /// Major page faults.
    MajorFaults,
    /// Voluntary context switches (the child blocked).
    VoluntaryCs,
    /// Involuntary context switches (the child was preempted).
    InvoluntaryCs,
    /// A counter from [`Sample::counters`].
    Counter(Counter),
}

/// Clock ticks per second of the CPU times Linux reports (`CLK_TCK`,
/// `USER_HZ`): fixed at 100 on every architecture perfsleuth runs on.
pub const USER_HZ: f64 = 100.0;

/// The page size peak RSS is counted in (bytes).
pub const PAGE_BYTES: f64 = 4096.0;

/// Counters perfsleuth records in [`Sample::counters`], by key.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Counter {
    /// Key in `Sample::counters` and name of the metric.
    pub key: &'static str,
    /// Unit of the values.
    pub unit: &'static str,
    /// Which way is better.
    pub direction: Direction,
    /// One line saying what it counts.
    pub about: &'static str,
}

pub(crate) const fn lower(key: &'static str, unit: &'static str, about: &'static str) -> Counter {
    Counter {
        key,
        unit,
        direction: Direction::Lower,
        about,
    }
}

/// Every counter perfsleuth knows: hardware and software perf_event
/// counters, tracepoints, callgrind's events (simulation mode) and the
/// throughput `scale` records, and the per-operation metrics imports bring.
pub const COUNTERS: [Counter; 29] = [
    lower("instructions", "count", "instructions retired (hardware)"),
    lower("cycles", "count", "CPU cycles (hardware)"),
    lower(
        "cache_references",
        "count",
        "last-level cache references (hardware)",
    ),
    lower(
        "cache_misses",
        "count",
        "last-level cache misses (hardware)",
    ),
    lower("branches", "count", "branch instructions (hardware)"),
    lower("branch_misses", "count", "mispredicted branches (hardware)"),
    lower("task_clock_ns", "ns", "CPU time of all threads (software)"),
    lower("context_switches", "count", "context switches (software)"),
    lower("cpu_migrations", "count", "moves between CPUs (software)"),
    lower("page_faults", "count", "page faults (software)"),
    lower(
        "futex_calls",
        "count",
        "futex system calls: lock waits and wakes (tracepoint)",
    ),
    lower("sched_switches", "count", "scheduler switches (tracepoint)"),
    lower("Ir", "count", "instructions executed (callgrind)"),
    lower("Dr", "count", "data reads (callgrind)"),
    lower("Dw", "count", "data writes (callgrind)"),
    lower(
        "I1mr",
        "count",
        "L1 instruction cache read misses (callgrind)",
    ),
    lower("D1mr", "count", "L1 data cache read misses (callgrind)"),
    lower("D1mw", "count", "L1 data cache write misses (callgrind)"),
    lower(
        "ILmr",
        "count",
        "last-level instruction read misses (callgrind)",
    ),
    lower("DLmr", "count", "last-level data read misses (callgrind)"),
    lower("DLmw", "count", "last-level data write misses (callgrind)"),
    lower(
        "est_cycles",
        "count",
        "estimated cycles: L1 hits + 5·LL hits + 35·RAM hits (callgrind)",
    ),
    Counter {
        key: "throughput",
        unit: "per_s",
        direction: Direction::Higher,
        about: "units of work per second (scale)",
    },
    lower("cpu_ns", "ns", "CPU time per iteration (imported)"),
    lower(
        "bytes_per_op",
        "bytes",
        "bytes allocated per operation (imported)",
    ),
    lower(
        "allocs_per_op",
        "count",
        "allocations per operation (imported)",
    ),
    lower(
        "alloc_count",
        "count",
        "allocations a run, exact (allocation profile)",
    ),
    lower(
        "alloc_bytes",
        "bytes",
        "bytes allocated a run, exact (allocation profile)",
    ),
    lower(
        "alloc_peak_bytes",
        "bytes",
        "peak of the live heap a run, usable bytes (allocation profile)",
    ),
];

impl Counter {
    /// Whether the counter comes from callgrind's simulation: exact and
    /// repeatable for a deterministic program, so one run per side decides.
    pub fn is_simulated(&self) -> bool {
        self.about.ends_with("(callgrind)")
    }

    /// Whether the counter counts what the program did rather than timing
    /// it (callgrind's events, an allocation profile's counts): exact and
    /// repeatable for a deterministic program, so one run per side decides.
    pub fn is_deterministic(&self) -> bool {
        self.is_simulated() || self.about.ends_with("(allocation profile)")
    }

    /// The known counter with this key.
    pub fn find(key: &str) -> Option<Counter> {
        COUNTERS.iter().copied().find(|c| c.key == key)
    }
}

impl Metric {
    /// Every built-in metric, in display order.
    pub const ALL: [Metric; 9] = [
        Metric::Wall,
        Metric::Cpu,
        Metric::User,
        Metric::Sys,
        Metric::PeakRss,
        Metric::MinorFaults,
        Metric::MajorFaults,
        Metric::VoluntaryCs,
        Metric::InvoluntaryCs,
    ];

    /// Stable name (JSON, CSV headers, `--metric`): snake_case for the
    /// built-in metrics, the counter's key for counters.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Wall => "wall",
            Metric::Cpu => "cpu",
            Metric::User => "user",
            Metric::Sys => "sys",
            Metric::PeakRss => "peak_rss",
            Metric::MinorFaults => "minor_faults",
            Metric::MajorFaults => "major_faults",
            Metric::VoluntaryCs => "voluntary_cs",
            Metric::InvoluntaryCs => "involuntary_cs",
            Metric::Counter(c) => c.key,
        }
    }

    /// The metric with this name, built-in or counter.
    pub fn parse(name: &str) -> Option<Metric> {
        Metric::ALL
            .into_iter()
            .find(|m| m.name() == name)
            .or_else(|| Counter::find(name).map(Metric::Counter))
    }

    /// Every metric name `parse` accepts.
    pub fn names() -> Vec<&'static str> {
        Metric::ALL
            .iter()
            .map(|m| m.name())
            .chain(COUNTERS.iter().map(|c| c.key))
            .collect()
    }

    /// Unit of the raw values.
    pub fn unit(self) -> &'static str {
        match self {
            Metric::Wall | Metric::Cpu | Metric::User | Metric::Sys => "ns",
            Metric::PeakRss => "bytes",
            Metric::Counter(c) => c.unit,
            _ => "count",
        }
    }

    /// Which way is better.
    pub fn direction(self) -> Direction {
        match self {
            Metric::Counter(c) => c.direction,
            _ => Direction::Lower,
        }
    }

    /// The smallest step the metric is measured in, in its unit; `None`
    /// where it is finer than anything a comparison could resolve. User and
    /// system time are split by the kernel in scheduler ticks (Linux reports
    /// them in `USER_HZ` = 100 ticks per second, so 10 ms), peak RSS counts
    /// pages (4 KiB), faults and context switches are whole counts. A change
    /// smaller than one step, or a side below one step, cannot be judged.
    pub fn resolution(self) -> Option<f64> {
        match self {
            Metric::User | Metric::Sys => Some(1e9 / USER_HZ),
            Metric::PeakRss => Some(PAGE_BYTES),
            Metric::MinorFaults
            | Metric::MajorFaults
            | Metric::VoluntaryCs
            | Metric::InvoluntaryCs => Some(1.0),
            Metric::Wall | Metric::Cpu | Metric::Counter(_) => None,
        }
    }

    /// Reads this metric from a sample; NaN when a counter was not recorded.
    pub fn of(self, s: &Sample) -> f64 {
        match self {
            Metric::Wall => s.wall_exact_ns.unwrap_or(s.wall_ns as f64),
            Metric::Cpu => s.user_ns.saturating_add(s.sys_ns) as f64,
            Metric::User => s.user_ns as f64,
            Metric::Sys => s.sys_ns as f64,
            Metric::PeakRss => s.peak_rss_bytes as f64,
            Metric::MinorFaults => s.minor_faults as f64,
            Metric::MajorFaults => s.major_faults as f64,
            Metric::VoluntaryCs => s.voluntary_cs as f64,
            Metric::InvoluntaryCs => s.involuntary_cs as f64,
            Metric::Counter(c) => s.counters.get(c.key).copied().unwrap_or(f64::NAN),
        }
    }
}

impl Serialize for Metric {
    fn serialize<S: serde::Serializer>(&self, ser: S) -> Result<S::Ok, S::Error> {
        ser.serialize_str(self.name())
    }
}

impl JsonSchema for Metric {
    fn schema_name() -> Cow<'static, str> {
        "Metric".into()
    }

    fn json_schema(_: &mut schemars::SchemaGenerator) -> schemars::Schema {
        schemars::json_schema!({
            "type": "string",
            "description": "A metric's stable name: wall, cpu, user, sys, peak_rss, minor_faults, major_faults, voluntary_cs, involuntary_cs, or a counter key (perfsleuth_model::COUNTERS)"
        })
    }
}

impl<'de> Deserialize<'de> for Metric {
    fn deserialize<D: serde::Deserializer<'de>>(de: D) -> Result<Metric, D::Error> {
        let name = String::deserialize(de)?;
        Metric::parse(&name)
            .ok_or_else(|| serde::de::Error::custom(format!("unknown metric `{name}`")))
    }
}

pub(crate) fn is_zero(n: &u32) -> bool {
    *n == 0
}

/// One timed iteration of one benchmark.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Sample {
    /// 0-based index among this benchmark's timed iterations.
    pub iteration: u32,
    /// 0-based round of the run it was measured in (`run --rounds`, and the
    /// rounds `run --baseline` adds while undecided); omitted when 0.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub round: u32,
    /// Wall-clock time from spawn to exit, from a monotonic clock.
    pub wall_ns: u64,
    /// The wall time with its fraction of a nanosecond, where the source
    /// has one: an imported per-iteration time (criterion, Google
    /// Benchmark, go test) of a few nanoseconds would lose whole percents
    /// to rounding. `wall_ns` is it rounded; [`Metric::of`] reads this one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub wall_exact_ns: Option<f64>,
    /// User CPU time of this child (from `wait4`).
    pub user_ns: u64,
    /// System CPU time of this child (from `wait4`).
    pub sys_ns: u64,
    /// Peak resident set size of this child.
    pub peak_rss_bytes: u64,
    /// Minor page faults.
    pub minor_faults: u64,
    /// Major page faults.
    pub major_faults: u64,
    /// Voluntary context switches.
    pub voluntary_cs: u64,
    /// Involuntary context switches.
    pub involuntary_cs: u64,
    /// Exit code, when the child exited normally.
    pub exit_code: Option<i32>,
    /// Terminating signal, when the child was killed.
    pub signal: Option<i32>,
    /// Extra counters (e.g. hardware events), keyed by name.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub counters: BTreeMap<String, f64>,
}

impl Sample {
    /// Whether the child exited with status 0.
    pub fn succeeded(&self) -> bool {
        self.exit_code == Some(0) && self.signal.is_none()
    }
}

/// Samples grouped by their round, rounds ascending, each in the order
/// measured; no groups for no samples.
pub fn by_round<'a>(samples: impl IntoIterator<Item = &'a Sample>) -> Vec<Vec<&'a Sample>> {
    let mut rounds: BTreeMap<u32, Vec<&Sample>> = BTreeMap::new();
    for s in samples {
        rounds.entry(s.round).or_default().push(s);
    }
    rounds.into_values().collect()
}

/// The runs of two benchmarks measured interleaved, paired as they ran:
/// round k of one with round k of the other, and within a round the i-th
/// run of each (the schedule takes them round-robin, so they ran next to
/// each other and share the machine's state of that moment). In measuring
/// order; the runs of a side without a partner are left out. Each side's
/// groups hold one round each ([`by_round`]).
pub fn adjacent_pairs<'a>(
    base: &[Vec<&'a Sample>],
    cand: &[Vec<&'a Sample>],
) -> Vec<(&'a Sample, &'a Sample)> {
    let round = |g: &Vec<&Sample>| g.first().map(|s| s.round);
    base.iter()
        .filter_map(|b| {
            Some((
                b,
                cand.iter()
                    .find(|c| round(c) == round(b) && round(b).is_some())?,
            ))
        })
        .flat_map(|(b, c)| b.iter().copied().zip(c.iter().copied()))
        .collect()
}
