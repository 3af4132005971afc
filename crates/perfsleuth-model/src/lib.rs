//! The data model of perfsleuth: runs, benchmarks, samples, metrics and the
//! environment fingerprint. These types are what the store persists and what
//! the JSON export serialises, so changes here are schema changes: bump
//! [`SCHEMA_VERSION`] and document them in `docs/SCHEMA.md`.

#![forbid(unsafe_code)]

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;

pub mod allocs;
pub mod exit;
pub mod hex;
pub mod input;
mod judged;
pub mod quantity;

/// The share of a count by which a simulated benchmark's runs may differ
/// before it is called not deterministic: 0.01 %, a fiftieth of the
/// smallest threshold a comparison uses (0.2 %), so a spread below it
/// cannot turn a verdict (a thread's start, the size of the environment).
pub const NONDETERMINISM_WARNING: f64 = 1e-4;
pub mod schema;
pub mod url;

/// Characters of a commit hash shown for it: 12, as the Linux kernel's
/// convention, because a shown hash is pasted back (`ab --baseline`) and
/// git's minimum of 7 becomes ambiguous in large repositories.
pub const SHORT_COMMIT: usize = 12;

/// The first [`SHORT_COMMIT`] characters of a commit hash (all of a shorter one).
pub fn short_commit(commit: &str) -> &str {
    commit.get(..SHORT_COMMIT).unwrap_or(commit)
}

pub use allocs::{ALLOC_COUNTERS, AllocProfile, AllocStack, FunctionAllocs};
pub use judged::{BUSY_MAX, BUSY_MIN, JudgedTime, WAITS_MAX, judged_time};

/// Version of the JSON export schema and of the model as a whole.
pub const SCHEMA_VERSION: u32 = 1;

/// Name written into every exported document so a reader can tell what it holds.
pub const EXPORT_KIND_RUN: &str = "perfsleuth/run";

/// How much a fact matters when two environments are compared.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum ImpactClass {
    /// Results are not comparable across a change (CPU model, kernel release, libc, binary hash).
    Identity,
    /// Known to move results (governor, turbo, mitigations, quotas, affinity).
    Performance,
    /// Recorded for the record, never judged (hostname, load at start).
    Context,
}

impl ImpactClass {
    /// The lowercase name used in JSON and in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            ImpactClass::Identity => "identity",
            ImpactClass::Performance => "performance",
            ImpactClass::Context => "context",
        }
    }
}

/// The value written for a fact that could not be read.
pub const UNKNOWN: &str = "unknown";

/// One environment fact: a string value and its impact class.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Fact {
    /// The value as text; [`UNKNOWN`] when it could not be read.
    pub value: String,
    /// How a change of this fact affects comparability.
    pub class: ImpactClass,
    /// Why the value is [`UNKNOWN`] (file missing, permission denied, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

/// The environment fingerprint: facts keyed by dotted names (`cpu.model`, `kernel.release`).
///
/// New facts are new keys, so the fingerprint grows without schema changes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(transparent)]
pub struct Environment {
    /// All facts, ordered by key.
    pub facts: BTreeMap<String, Fact>,
}

impl Environment {
    /// Records a fact, replacing any earlier value under the same key.
    pub fn set(&mut self, key: impl Into<String>, value: impl Into<String>, class: ImpactClass) {
        self.facts.insert(
            key.into(),
            Fact {
                value: value.into(),
                class,
                reason: None,
            },
        );
    }

    /// Records a fact read from somewhere that can fail; on failure the value
    /// is [`UNKNOWN`] and the error text is kept as the reason.
    pub fn set_read(
        &mut self,
        key: impl Into<String>,
        value: Result<String, String>,
        class: ImpactClass,
    ) {
        match value {
            Ok(v) => self.set(key, v, class),
            Err(reason) => {
                self.facts.insert(
                    key.into(),
                    Fact {
                        value: UNKNOWN.to_string(),
                        class,
                        reason: Some(reason),
                    },
                );
            }
        }
    }

    /// Records a fact whose value may be missing; a missing value is stored as [`UNKNOWN`].
    pub fn set_opt(&mut self, key: impl Into<String>, value: Option<String>, class: ImpactClass) {
        self.set(key, value.unwrap_or_else(|| UNKNOWN.to_string()), class);
    }

    /// The value of a fact, if recorded.
    pub fn get(&self, key: &str) -> Option<&str> {
        self.facts.get(key).map(|f| f.value.as_str())
    }

    /// The facts of the given classes, in key order.
    pub fn facts_of<'a>(
        &'a self,
        classes: &'a [ImpactClass],
    ) -> impl Iterator<Item = (&'a String, &'a Fact)> + 'a {
        self.facts
            .iter()
            .filter(move |(_, f)| classes.contains(&f.class))
    }

    /// A copy holding only the facts of the given classes.
    pub fn only(&self, classes: &[ImpactClass]) -> Environment {
        Environment {
            facts: self
                .facts_of(classes)
                .map(|(k, f)| (k.clone(), f.clone()))
                .collect(),
        }
    }

    /// Merges `other` into `self`; facts in `other` win.
    pub fn merge(&mut self, other: Environment) {
        self.facts.extend(other.facts);
    }
}

/// Lifecycle of a stored run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Measuring now, or the process died while measuring.
    Running,
    /// Every benchmark finished.
    Complete,
    /// Stopped by the user (Ctrl-C); the samples taken so far are kept.
    Interrupted,
    /// Stopped by an error (a failing command, a timeout).
    Failed,
}

impl RunStatus {
    /// The lowercase name used in JSON and in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
        }
    }

    /// Parses the lowercase name.
    pub fn parse(s: &str) -> Option<RunStatus> {
        Some(match s {
            "running" => RunStatus::Running,
            "complete" => RunStatus::Complete,
            "interrupted" => RunStatus::Interrupted,
            "failed" => RunStatus::Failed,
            _ => return None,
        })
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What was measured: wall-clock timing or a deterministic simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    /// Real processes timed with a monotonic clock.
    #[default]
    Walltime,
    /// Instruction counts under a simulator (callgrind).
    Simulation,
    /// Machine microbenchmarks (`perfsleuth probe`): results in [`Run::probes`], no benchmarks.
    Probe,
}

impl Mode {
    /// The lowercase name used in JSON and in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Walltime => "walltime",
            Mode::Simulation => "simulation",
            Mode::Probe => "probe",
        }
    }

    /// Parses the lowercase name.
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "walltime" => Some(Mode::Walltime),
            "simulation" => Some(Mode::Simulation),
            "probe" => Some(Mode::Probe),
            _ => None,
        }
    }
}

/// Source-control state of the working directory when the run started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GitInfo {
    /// Full commit hash of HEAD.
    pub commit: String,
    /// Branch name, or `None` on a detached HEAD.
    pub branch: Option<String>,
    /// Whether tracked files had uncommitted changes.
    pub dirty: bool,
}

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

const fn lower(key: &'static str, unit: &'static str, about: &'static str) -> Counter {
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

fn is_zero(n: &u32) -> bool {
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

/// One benchmarked command (after parameter substitution) and its samples.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Benchmark {
    /// Display name (`--name`, else the command).
    pub name: String,
    /// The command as the user wrote it, parameters substituted.
    pub command: String,
    /// The argument vector actually executed.
    pub argv: Vec<String>,
    /// Parameter values used for this benchmark (`{VAR}` substitution).
    #[serde(default)]
    pub parameters: BTreeMap<String, String>,
    /// Facts about the benchmarked program itself (`binary.sha256`, `binary.abi`, ...).
    #[serde(default, skip_serializing_if = "is_empty_env")]
    pub facts: Environment,
    /// Timed samples in the order taken.
    #[serde(default)]
    pub samples: Vec<Sample>,
    /// Per-function costs of the last iteration (simulation mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<Profile>,
    /// What another tool reported where it kept no samples (an import of a
    /// summary-only format): per metric, its centre and spread.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summaries: Vec<ReportedSummary>,
    /// Where its threads waited for locks (`run --locks`, `scale --locks`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locks: Option<LockReport>,
    /// Where its runs spent their time on CPU: sampled call stacks
    /// (`run --profile`, docs/PROFILES.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stacks: Option<StackProfile>,
    /// What its runs allocated, exactly, and where (sampled stacks)
    /// (`run --profile=alloc`, docs/PROFILES.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocs: Option<AllocProfile>,
}

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
const IO_CALLS: &[&str] = &[
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
    fn bare(name: &str) -> &str {
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
fn is_c_library(frame: &ProfileFrame) -> bool {
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
    fn thread_entry(&self, frames: &[u32]) -> Option<u32> {
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
        // Frames are unique per (function, module, inlined); merge the
        // inlined and outlined copies of one function.
        let mut canonical: Vec<u32> = (0..self.frames.len() as u32).collect();
        {
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
        }
        let canon = |f: u32| canonical.get(f as usize).copied();
        // Off the CPU: the innermost frame outside the C library (the leaf
        // itself where every frame is in it) owns the wait, a function of
        // its own per (frame, reason, thread).
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
        // Pass one: every function's totals, in flat tables (no row per
        // frame), to rank them. `mark` counts a recursive function's stack
        // once: the stack that last counted each frame.
        let mut self_total = vec![0u64; self.frames.len()];
        let mut inclusive_total = vec![0u64; self.frames.len()];
        let mut mark = vec![u32::MAX; self.frames.len()];
        let visit = |si: usize, s: &ProfileStack, mark: &mut Vec<u32>, f: &mut dyn FnMut(u32)| {
            for &fr in &s.frames {
                if let Some(c) = canon(fr)
                    && mark[c as usize] != si as u32
                {
                    mark[c as usize] = si as u32;
                    f(c);
                }
            }
        };
        for (si, s) in self.stacks.iter().enumerate() {
            let n: u64 = s.counts.iter().take(runs).map(|&c| u64::from(c)).sum();
            visit(si, s, &mut mark, &mut |c| inclusive_total[c as usize] += n);
            match owners[si] {
                Some(w) => {
                    for (r, &c) in s.counts.iter().enumerate().take(runs) {
                        waiting[w].self_counts[r] += u64::from(c);
                        waiting[w].inclusive[r] += u64::from(c);
                    }
                }
                None => {
                    if let Some(leaf) = s.frames.last().and_then(|&f| canon(f)) {
                        self_total[leaf as usize] += n;
                    }
                }
            }
        }
        // The candidates in the order the rows were first listed (frames,
        // then waits), which breaks the ties of equal totals and names.
        #[derive(Clone, Copy)]
        enum Row {
            Frame(u32),
            Wait(usize),
        }
        let keyed = |row: Row| -> (u64, u64, &str) {
            match row {
                Row::Frame(i) => (
                    self_total[i as usize],
                    inclusive_total[i as usize],
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
                    && inclusive_total[i] > 0
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
        // Pass two: the per-run counts of the rows kept.
        let mut slot = vec![u32::MAX; self.frames.len()];
        let mut named: Vec<FunctionSamples> = Vec::with_capacity(rows.len());
        let mut waits = waiting.into_iter().map(Some).collect::<Vec<_>>();
        for &(_, row) in &rows {
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
        mark.fill(u32::MAX);
        for (si, s) in self.stacks.iter().enumerate() {
            let counts = &s.counts[..s.counts.len().min(runs)];
            visit(si, s, &mut mark, &mut |c| {
                if let Some(f) = named.get_mut(slot[c as usize] as usize) {
                    for (r, &n) in counts.iter().enumerate() {
                        f.inclusive[r] += u64::from(n);
                    }
                }
            });
            if owners[si].is_none()
                && let Some(leaf) = s.frames.last().and_then(|&f| canon(f))
                && let Some(f) = named.get_mut(slot[leaf as usize] as usize)
            {
                for (r, &n) in counts.iter().enumerate() {
                    f.self_counts[r] += u64::from(n);
                }
            }
        }
        TopFunctions {
            named,
            others: others_self.len(),
            others_self: others_self.iter().sum(),
        }
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
    fn totals_where(&self, pick: impl Fn(bool) -> bool) -> Vec<u64> {
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

    fn periods_as_ns(&self, totals: &[u64]) -> Vec<f64> {
        totals
            .iter()
            .enumerate()
            .map(|(i, &n)| n as f64 * self.period_of(i) as f64)
            .collect()
    }
}

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

/// One metric of a benchmark as a tool summarised it, without samples.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ReportedSummary {
    /// The metric's name (`wall`, or a counter key such as `throughput`).
    pub metric: String,
    /// What the tool reported as the centre, in the metric's unit (ns for wall).
    pub value: f64,
    /// What `value` is: `mean`, `median`, or `value` (a single figure).
    pub kind: String,
    /// The tool's lower bound, where it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub lower: Option<f64>,
    /// The tool's upper bound, where it gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub upper: Option<f64>,
    /// The standard deviation of the measurements, where given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stddev: Option<f64>,
    /// How many measurements the summary covers, where given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub n: Option<u64>,
}

/// Where the cost of simulated runs went, per function (callgrind): what the
/// parser in `perfsleuth-measure` produces and, cut to the top functions,
/// what a benchmark stores.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Profile {
    /// Event names (`Ir`, `Dr`, …), the order of every cost vector.
    pub events: Vec<String>,
    /// Program totals per event.
    pub totals: Vec<u64>,
    /// Functions with cost or calls: every one as parsed (in order of first
    /// appearance); a stored profile keeps the most expensive by inclusive
    /// Ir, most expensive first.
    pub functions: Vec<FunctionProfile>,
    /// The distinct `cmd:` lines seen, in order (parser bookkeeping, not stored).
    #[serde(skip)]
    pub commands: Vec<String>,
    /// How many files were parsed into this profile (not stored).
    #[serde(skip)]
    pub files_read: usize,
    /// How many parts (dumps) the files held in all (not stored).
    #[serde(skip)]
    pub parts: usize,
}

/// One function's costs, identified by object and name.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct FunctionProfile {
    /// Shared object or executable (`ob=`), empty when the file names none.
    pub object: String,
    /// Source file (`fl=`) the function was first seen in, when known
    /// (callgrind writes `???` without debug information).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub file: String,
    /// Function name as callgrind wrote it (`fib'2` is recursion level 2 of `fib`).
    pub function: String,
    /// Cost in the function itself, per event.
    pub self_cost: Vec<u64>,
    /// Cost including its callees, per event.
    pub inclusive: Vec<u64>,
    /// Calls into it.
    pub calls: u64,
}

impl Profile {
    /// Index of an event in the cost vectors.
    pub fn event(&self, name: &str) -> Option<usize> {
        self.events.iter().position(|e| e == name)
    }

    /// The total of `event`, `None` when the profile has no such event.
    pub fn total(&self, event: &str) -> Option<u64> {
        self.event(event)
            .map(|i| self.totals.get(i).copied().unwrap_or(0))
    }

    /// The sum of all functions' self costs per event (equal to the
    /// `totals:` lines of callgrind's files; may be a little below
    /// [`Profile::totals`], which prefers `summary:`).
    pub fn self_sum(&self) -> Vec<u64> {
        let mut sum = vec![0u64; self.events.len()];
        for f in &self.functions {
            for (s, c) in sum.iter_mut().zip(&f.self_cost) {
                *s = s.saturating_add(*c);
            }
        }
        sum
    }

    /// The `n` functions with the highest inclusive cost of `event`, ties by
    /// name; empty when the event is unknown.
    pub fn top_by_inclusive(&self, event: &str, n: usize) -> Vec<&FunctionProfile> {
        self.top_by(event, n, |f| &f.inclusive)
    }

    /// The `n` functions with the highest self cost of `event`, ties by name;
    /// empty when the event is unknown.
    pub fn top_by_self(&self, event: &str, n: usize) -> Vec<&FunctionProfile> {
        self.top_by(event, n, |f| &f.self_cost)
    }

    fn top_by(
        &self,
        event: &str,
        n: usize,
        costs: impl Fn(&FunctionProfile) -> &Vec<u64>,
    ) -> Vec<&FunctionProfile> {
        let Some(i) = self.event(event) else {
            return Vec::new();
        };
        let cost = |f: &FunctionProfile| costs(f).get(i).copied().unwrap_or(0);
        let mut all: Vec<&FunctionProfile> = self.functions.iter().collect();
        all.sort_by(|a, b| {
            cost(b)
                .cmp(&cost(a))
                .then_with(|| a.function.cmp(&b.function))
                .then_with(|| a.object.cmp(&b.object))
        });
        all.truncate(n);
        all
    }

    /// The stored form: events and totals, the `n` most expensive functions
    /// by inclusive Ir, and none of the parser's bookkeeping.
    pub fn top(&self, n: usize) -> Profile {
        Profile {
            events: self.events.clone(),
            totals: self.totals.clone(),
            functions: self
                .top_by_inclusive("Ir", n)
                .into_iter()
                .cloned()
                .collect(),
            ..Profile::default()
        }
    }

    /// Functions with exactly this name (several objects may define one).
    pub fn functions_named<'a>(
        &'a self,
        name: &str,
    ) -> impl Iterator<Item = &'a FunctionProfile> + use<'a> {
        let name = name.to_string();
        self.functions.iter().filter(move |f| f.function == name)
    }

    /// Adds `other` to this profile: events are united by name (an event
    /// missing on one side counts 0 there), totals add up, functions with the
    /// same (object, name) are summed (costs saturate instead of overflowing),
    /// new ones are appended, commands are united.
    pub fn merge(&mut self, other: Profile) {
        let map: Vec<usize> = other
            .events
            .iter()
            .map(|e| match self.event(e) {
                Some(i) => i,
                None => {
                    self.events.push(e.clone());
                    self.events.len() - 1
                }
            })
            .collect();
        let n = self.events.len();
        let widen = |v: &mut Vec<u64>| v.resize(n, 0);
        widen(&mut self.totals);
        for f in &mut self.functions {
            widen(&mut f.self_cost);
            widen(&mut f.inclusive);
        }
        let add = |dst: &mut Vec<u64>, src: &[u64]| {
            for (j, c) in src.iter().enumerate() {
                if let Some(&i) = map.get(j) {
                    dst[i] = dst[i].saturating_add(*c);
                }
            }
        };
        add(&mut self.totals, &other.totals);
        let mut index: std::collections::HashMap<(String, String), usize> = self
            .functions
            .iter()
            .enumerate()
            .map(|(i, f)| ((f.object.clone(), f.function.clone()), i))
            .collect();
        for f in other.functions {
            let key = (f.object.clone(), f.function.clone());
            let i = *index.entry(key).or_insert_with(|| {
                self.functions.push(FunctionProfile {
                    object: f.object.clone(),
                    file: f.file.clone(),
                    function: f.function.clone(),
                    self_cost: vec![0; n],
                    inclusive: vec![0; n],
                    calls: 0,
                });
                self.functions.len() - 1
            });
            let dst = &mut self.functions[i];
            add(&mut dst.self_cost, &f.self_cost);
            add(&mut dst.inclusive, &f.inclusive);
            dst.calls = dst.calls.saturating_add(f.calls);
        }
        for c in other.commands {
            if !self.commands.contains(&c) {
                self.commands.push(c);
            }
        }
        self.files_read += other.files_read;
        self.parts += other.parts;
    }
}

impl Benchmark {
    /// The values of one metric over all samples, in order; samples that
    /// did not record a counter are left out.
    pub fn values(&self, metric: Metric) -> Vec<f64> {
        self.samples
            .iter()
            .map(|s| metric.of(s))
            .filter(|v| !v.is_nan())
            .collect()
    }

    /// The known counters every sample of this benchmark recorded.
    pub fn counters(&self) -> Vec<Counter> {
        COUNTERS
            .iter()
            .copied()
            .filter(|c| {
                !self.samples.is_empty()
                    && self.samples.iter().all(|s| s.counters.contains_key(c.key))
            })
            .collect()
    }
}

fn is_empty_env(env: &Environment) -> bool {
    env.facts.is_empty()
}

/// One invocation of `perfsleuth run`: its benchmarks, environment and provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Run {
    /// Store id; `None` when the run was not stored.
    pub id: Option<i64>,
    /// Universally unique id, given when the run is first stored and kept
    /// wherever it is copied (exports, pushes to a team server), so the same
    /// run is recognised everywhere; `None` for a run never stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Start time, RFC 3339 UTC.
    pub started_at: String,
    /// End time, RFC 3339 UTC; `None` while running.
    pub ended_at: Option<String>,
    /// Lifecycle state.
    pub status: RunStatus,
    /// Version of perfsleuth that measured it.
    pub tool_version: String,
    /// Source-control state, when run inside a git repository.
    pub git: Option<GitInfo>,
    /// Measurement mode.
    pub mode: Mode,
    /// The options the run was made with, as given.
    pub options: serde_json::Value,
    /// The environment fingerprint at start.
    pub environment: Environment,
    /// The benchmarks, in the order given.
    pub benchmarks: Vec<Benchmark>,
    /// Machine microbenchmark results (`perfsleuth probe`), in the order measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<ProbeResult>,
}

/// One number measured by a machine microbenchmark (`perfsleuth probe`),
/// as the probes produce it, the store keeps it and the JSON documents hold it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProbeResult {
    /// The probe ("calls", "memory").
    pub probe: String,
    /// The metric ("indirect_call", "l2_latency", "read_bandwidth", "mutex_counter_t2").
    pub metric: String,
    /// The value: a median of samples (bandwidth: the best run); NaN when
    /// it could not be computed (JSON null).
    #[serde(deserialize_with = "f64_or_nan")]
    #[schemars(with = "Option<f64>")]
    pub value: f64,
    /// "ns", "GB/s", "ops/s", "bytes" or "ratio".
    pub unit: String,
    /// Whether smaller is better.
    pub lower_is_better: bool,
    /// The value in core cycles, for "ns" values, *estimated* with the
    /// probe's calibrated clock ([`CalibratedClock`]).
    #[serde(default)]
    pub cycles: Option<f64>,
    /// Relative spread: (p75 - p25) / median of the samples. For sizes
    /// ("bytes"), the memory ladder's resolution (factor − 1).
    #[serde(deserialize_with = "f64_or_nan")]
    #[schemars(with = "Option<f64>")]
    pub spread: f64,
    /// Spread ≤ 10 % over at least 3 samples. For sizes: the ladder points
    /// around the step were stable, and the cache was not found smaller than
    /// the fingerprint says (what a shared cache gives varies with its other users).
    pub stable: bool,
    /// One of the probe's main numbers (the rest is detail: per size, per CPU pair).
    pub headline: bool,
    /// How to read the number, where it needs saying.
    #[serde(default)]
    pub note: Option<String>,
}

/// The estimated core clock behind a probe's cycle counts and how it was obtained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CalibratedClock {
    /// Estimated core cycles per nanosecond (= GHz); `None` where no
    /// calibration loop exists for the architecture.
    pub ghz: Option<f64>,
    /// Relative spread (IQR / median) of the calibration samples.
    #[serde(deserialize_with = "f64_or_nan")]
    #[schemars(with = "Option<f64>")]
    pub spread: f64,
    /// The time-stamp counter's rate in GHz (x86-64 only): a fixed
    /// reference rate, not the core clock, shown for comparison.
    pub tsc_ghz: Option<f64>,
    /// How the estimate was made, in words.
    pub how: String,
}

impl CalibratedClock {
    /// Cycles for a duration in nanoseconds, when the clock is known.
    pub fn cycles(&self, ns: f64) -> Option<f64> {
        self.ghz.map(|g| ns * g)
    }
}

/// Reads a number that JSON may hold as null (serde_json writes NaN so) as NaN.
pub(crate) fn f64_or_nan<'de, D: serde::Deserializer<'de>>(de: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(de)?.unwrap_or(f64::NAN))
}

/// `options.kind` of a run made by `perfsleuth scale`.
pub const SCALE_KIND: &str = "scale";

/// `options.kind` of a run made by `perfsleuth import`.
pub const IMPORT_KIND: &str = "import";

/// What made a run, as its `options.kind` records it: the one reading of
/// that field, so no caller compares strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOrigin {
    /// Measured by perfsleuth (`run`, `ab`, `explain`, `probe`): no `kind`.
    Measured,
    /// A `perfsleuth scale` sweep ([`SCALE_KIND`]).
    Scale,
    /// Another tool's results, `perfsleuth import` ([`IMPORT_KIND`]).
    Import,
}

impl RunOrigin {
    /// The `options.kind` it is stored as; `None` for a measured run.
    pub const fn kind(self) -> Option<&'static str> {
        match self {
            RunOrigin::Measured => None,
            RunOrigin::Scale => Some(SCALE_KIND),
            RunOrigin::Import => Some(IMPORT_KIND),
        }
    }
}

/// The sample counter keys a `perfsleuth scale` run writes (beside those of
/// perf_event counters): what the sweep stores and the scale analysis reads.
pub mod scale_keys {
    /// Units of work per second in that run.
    pub const THROUGHPUT: &str = "throughput";
    /// Units of work done in that run.
    pub const WORK: &str = "work";
    /// The machine's CPU time shares during the run (all CPUs together).
    pub const CPU_KEYS: [&str; 5] = [
        "cpu_user",
        "cpu_system",
        "cpu_idle",
        "cpu_iowait",
        "cpu_steal",
    ];
    /// Clock ticks the CPU shares of a run rest on (all CPUs together).
    pub const CPU_TICKS: &str = "cpu_ticks";
    /// Prefix of the per-CPU busy shares (`cpu_busy.3`).
    pub const CPU_BUSY_PREFIX: &str = "cpu_busy.";
}

impl Run {
    /// For a run whose comparison went on measuring while undecided
    /// (`options.sequential`): the rounds planned and the rounds measured,
    /// from which the look it stopped at follows
    /// (`perfsleuth_stats::look_for_rounds`). `None` for a run judged once.
    pub fn looks(&self) -> Option<(u32, u32)> {
        let o = schema::Sequential::deserialize(&self.options).ok()?;
        if !o.sequential {
            return None;
        }
        let measured = self
            .benchmarks
            .iter()
            .flat_map(|b| &b.samples)
            .map(|s| s.round.saturating_add(1))
            .max()
            .unwrap_or(0);
        Some((o.rounds, measured.max(o.rounds)))
    }

    /// What made this run (`options.kind`).
    pub fn origin(&self) -> RunOrigin {
        match self.options["kind"].as_str() {
            Some(SCALE_KIND) => RunOrigin::Scale,
            Some(IMPORT_KIND) => RunOrigin::Import,
            _ => RunOrigin::Measured,
        }
    }

    /// The typed options of a run `perfsleuth run` (or `ab`, `explain`) made;
    /// `None` for imports, sweeps and probe runs.
    pub fn run_options(&self) -> Option<schema::RunOptions> {
        if self.origin() != RunOrigin::Measured || self.mode == Mode::Probe {
            return None;
        }
        schema::RunOptions::deserialize(&self.options).ok()
    }

    /// Whether `perfsleuth scale` made this run (`options.kind`).
    pub fn is_scale_sweep(&self) -> bool {
        self.scale_options().is_some()
    }

    /// The typed options of a `perfsleuth scale` run; `None` for other runs.
    pub fn scale_options(&self) -> Option<schema::ScaleOptions> {
        let o = schema::ScaleOptions::deserialize(&self.options).ok()?;
        (o.kind == SCALE_KIND).then_some(o)
    }
}

/// Formats a `SystemTime` as RFC 3339 UTC with millisecond precision.
pub fn rfc3339(t: std::time::SystemTime) -> String {
    let d = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, day) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60,
        d.subsec_millis()
    )
}

/// Converts days since 1970-01-01 to a proleptic Gregorian (year, month, day).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    // Howard Hinnant's algorithm: exact for every day in the i64 range we use.
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn a_blocking_call_is_told_by_its_c_library_name_in_any_spelling() {
        use OffCpuReason::*;
        for (name, reason) in [
            ("__GI___poll", Poll),
            ("ppoll", Poll),
            ("epoll_wait", Poll),
            ("__futex_abstimed_wait_common64", Lock),
            ("__lll_lock_wait", Lock),
            ("___pthread_cond_wait", Lock),
            ("__libc_read", Io),
            ("__GI___libc_write", Io),
            ("fsync", Io),
            ("__GI___clock_nanosleep", Sleep),
            ("__nanosleep", Sleep),
            ("madvise", Other),
            ("fetch_row", Other),
        ] {
            assert_eq!(OffCpuReason::of_blocking_function(name), reason, "{name}");
        }
        assert!(OffCpuReason::is_blocking_call("__poll"));
        assert!(!OffCpuReason::is_blocking_call("poll_events"));
        for r in OffCpuReason::ALL {
            assert_eq!(OffCpuReason::of_frame(&r.frame().function), Some(r));
        }
        assert_eq!(OffCpuReason::of_frame("[off-cpu: nap]"), None);
    }

    #[test]
    fn a_wait_is_the_time_of_the_innermost_program_function_and_apart_from_its_cpu() {
        let f = |n: &str, m: &str| ProfileFrame {
            function: n.into(),
            module: m.into(),
            inlined: false,
        };
        let p = StackProfile {
            event: "cpu-clock".into(),
            period_ns: 1_000_000,
            iterations: vec![0, 1],
            samples: 30,
            frames: vec![
                f("main", "prog"),
                f("fetch_row", "prog"),
                f("__poll", "libc.so.6"),
                OffCpuReason::Poll.frame(),
            ],
            stacks: vec![
                ProfileStack {
                    frames: vec![0, 1],
                    counts: vec![2, 3],
                },
                ProfileStack {
                    frames: vec![0, 1, 2, 3],
                    counts: vec![12, 13],
                },
            ],
            off_cpu_ns: vec![12_100_000, 12_900_000],
            ..StackProfile::default()
        };
        assert!(p.has_off_cpu());
        let functions = p.functions();
        let label: Vec<String> = functions.iter().map(FunctionSamples::label).collect();
        // The wait first, then fetch_row's own CPU; the pseudo-frame and the
        // C library's wrapper own nothing.
        assert_eq!(label[0], "`fetch_row` (off CPU: poll)");
        assert_eq!(functions[0].self_counts, vec![12, 13]);
        assert_eq!(label[1], "`fetch_row`");
        assert_eq!(functions[1].self_counts, vec![2, 3]);
        assert_eq!(functions[1].inclusive, vec![14, 16]);
        assert!(!label.iter().any(|l| l.contains("[off-cpu")), "{label:?}");
        assert_eq!(p.run_samples(), vec![2, 3]);
        assert_eq!(p.run_totals(), vec![14, 16]);
        assert_eq!(p.run_cpu_ns(), vec![2e6, 3e6]);
        assert_eq!(p.run_time_ns(), vec![14e6, 16e6]);
        assert_eq!(p.on_cpu_samples(), 5);
    }

    #[test]
    fn the_top_functions_are_the_first_rows_of_all_and_the_rest_is_counted() {
        let f = |n: &str, inlined: bool| ProfileFrame {
            function: n.into(),
            module: "m".into(),
            inlined,
        };
        let stack = |frames: Vec<u32>, counts: Vec<u32>| ProfileStack { frames, counts };
        let p = StackProfile {
            event: "cpu-clock".into(),
            period_ns: 1_000_000,
            iterations: vec![0, 1],
            frames: vec![
                f("main", false),
                f("rec", false),
                f("tie_b", false),
                f("tie_a", false),
                f("hot", true),
                f("hot", false),
                ProfileFrame {
                    module: "libc.so.6".into(),
                    ..f("__poll", false)
                },
                OffCpuReason::Poll.frame(),
                f("cold", false),
            ],
            stacks: vec![
                // `rec` calls itself: its stack counts once in its total.
                stack(vec![0, 1, 1, 1], vec![3, 4]),
                // Equal totals: the name breaks the tie, then the order.
                stack(vec![0, 2], vec![2, 2]),
                stack(vec![0, 3], vec![2, 2]),
                // The inlined and outlined copies of `hot` are one function.
                stack(vec![0, 4], vec![5, 0]),
                stack(vec![0, 5], vec![0, 6]),
                stack(vec![0, 1, 6, 7], vec![1, 1]),
                stack(vec![0, 8], vec![0, 1]),
            ],
            ..StackProfile::default()
        };
        let all = p.functions();
        let label: Vec<String> = all.iter().map(FunctionSamples::label).collect();
        assert_eq!(
            label,
            [
                "`hot`",
                "`rec`",
                "`tie_a`",
                "`tie_b`",
                "`rec` (off CPU: poll)",
                "`cold`",
                "`main`",
                "`__poll`"
            ]
        );
        assert_eq!(all[0].self_counts, vec![5, 6]);
        assert_eq!(all[1].inclusive, vec![4, 5]);
        assert_eq!(all[6].inclusive, vec![13, 16]);
        for n in 0..=all.len() + 1 {
            let top = p.top_functions(n);
            let rest = &all[n.min(all.len())..];
            assert_eq!(top.named, all[..n.min(all.len())], "{n}");
            assert_eq!(
                top.others,
                rest.iter().filter(|f| f.self_total() > 0).count(),
                "{n}"
            );
            assert_eq!(
                top.others_self,
                rest.iter().map(FunctionSamples::self_total).sum::<u64>(),
                "{n}"
            );
        }
    }

    #[test]
    fn a_profile_keeps_only_the_runs_whose_samples_were_kept() {
        let f = |n: &str| ProfileFrame {
            function: n.into(),
            module: "m".into(),
            inlined: false,
        };
        let mut p = StackProfile {
            event: "cpu-clock".into(),
            period_ns: 1_000_000,
            periods_ns: vec![900_000, 1_000_000, 1_100_000],
            iterations: vec![0, 1, 2],
            samples: 16,
            frames: vec![f("main"), f("a"), f("b")],
            stacks: vec![
                ProfileStack {
                    frames: vec![0, 1],
                    counts: vec![5, 5, 0],
                },
                ProfileStack {
                    frames: vec![0, 2],
                    counts: vec![0, 0, 6],
                },
            ],
            ..StackProfile::default()
        };
        // Run 2 was cut short: its samples and the frame only it saw go.
        p.keep_iterations(&[0, 1]);
        assert_eq!(p.iterations, vec![0, 1]);
        assert_eq!(p.periods_ns, vec![900_000, 1_000_000]);
        assert_eq!(p.samples, 10);
        assert_eq!(p.stacks.len(), 1);
        assert_eq!(p.frames, vec![f("main"), f("a")]);
        assert_eq!(p.stacks[0].frames, vec![0, 1]);
    }

    #[test]
    fn floats_read_back_to_the_same_bits() {
        // Found by tests/fuzz_schema.rs: serde_json's default float parser
        // is off by one unit in the last place for some values, so a document
        // read back was not the one written (and a re-export not byte-stable).
        for v in [30461527329.522346f64, -4.1525251228329174e-231] {
            let text = crate::schema::to_json_pretty(&v).expect("serialises");
            let back: f64 = serde_json::from_str(&text).expect("reads");
            assert_eq!(back.to_bits(), v.to_bits(), "{v} came back as {back}");
        }
    }

    #[test]
    fn rfc3339_formats_known_instants() {
        assert_eq!(rfc3339(UNIX_EPOCH), "1970-01-01T00:00:00.000Z");
        let t = UNIX_EPOCH + Duration::from_millis(1_709_210_096_123);
        assert_eq!(rfc3339(t), "2024-02-29T12:34:56.123Z");
    }

    #[test]
    fn environment_json_is_a_flat_map_of_facts() {
        let mut env = Environment::default();
        env.set("cpu.model", "Test CPU", ImpactClass::Identity);
        env.set_opt("host.name", None, ImpactClass::Context);
        let json = serde_json::to_value(&env).unwrap();
        assert_eq!(json["cpu.model"]["class"], "identity");
        assert_eq!(json["host.name"]["value"], UNKNOWN);
        let back: Environment = serde_json::from_value(json).unwrap();
        assert_eq!(back, env);
        assert_eq!(env.only(&[ImpactClass::Identity]).facts.len(), 1);
    }

    #[test]
    fn probe_results_read_null_numbers_as_nan() {
        let r = ProbeResult {
            probe: "memory".into(),
            metric: "dram_latency".into(),
            value: f64::NAN,
            unit: "ns".into(),
            lower_is_better: true,
            cycles: None,
            spread: f64::NAN,
            stable: false,
            headline: true,
            note: None,
        };
        let json = serde_json::to_value(&r).unwrap();
        assert_eq!(json["value"], serde_json::Value::Null);
        let back: ProbeResult = serde_json::from_value(json).unwrap();
        assert!(back.value.is_nan() && back.spread.is_nan());
        let mode: Mode = serde_json::from_value(serde_json::json!("probe")).unwrap();
        assert_eq!(
            (mode, Mode::parse("probe")),
            (Mode::Probe, Some(Mode::Probe))
        );
        assert_eq!(Mode::Probe.as_str(), "probe");
        // Runs written before probes existed have no `probes` key.
        let run: Run = serde_json::from_value(serde_json::json!({
            "id": null, "started_at": "x", "ended_at": null, "status": "complete",
            "tool_version": "0.1.0", "git": null, "mode": "walltime", "options": null,
            "environment": {}, "benchmarks": []
        }))
        .unwrap();
        assert!(run.probes.is_empty());
        assert!(serde_json::to_value(&run).unwrap().get("probes").is_none());
    }

    #[test]
    fn scale_runs_are_told_by_their_typed_options() {
        let mut run: Run = serde_json::from_value(serde_json::json!({
            "id": null, "started_at": "x", "ended_at": null, "status": "complete",
            "tool_version": "0.1.0", "git": null, "mode": "walltime",
            "options": {"kind": "scale", "param": "threads", "values": ["1", "2"],
                        "throughput": {"work_per_thread": 1000.0}, "runs": 5, "warmup": 1,
                        "shell": null, "timeout_s": null, "counters": "software"},
            "environment": {}, "benchmarks": []
        }))
        .unwrap();
        let o = run.scale_options().expect("a sweep");
        assert_eq!(o.param, "threads");
        assert_eq!(
            o.throughput,
            Some(schema::ThroughputMethod::WorkPerThread(1000.0))
        );
        // Written back, the options are the same JSON.
        let back = serde_json::to_value(&o).unwrap();
        assert_eq!(back, run.options);
        // Only kind and param are needed; a run of `perfsleuth run` is no sweep.
        run.options = serde_json::json!({"kind": "scale", "param": "n"});
        assert!(run.is_scale_sweep());
        assert_eq!(run.origin(), RunOrigin::Scale);
        run.options = serde_json::json!({"commands": ["true"], "warmup": 3});
        assert!(!run.is_scale_sweep());
        run.options = serde_json::Value::Null;
        assert!(!run.is_scale_sweep());
    }

    #[test]
    fn metric_reads_the_matching_sample_field() {
        let s = Sample {
            wall_ns: 5,
            peak_rss_bytes: 7,
            involuntary_cs: 9,
            ..Sample::default()
        };
        assert_eq!(Metric::Wall.of(&s), 5.0);
        assert_eq!(Metric::PeakRss.of(&s), 7.0);
        assert_eq!(Metric::InvoluntaryCs.of(&s), 9.0);
        let ir = Metric::parse("Ir").expect("Ir is a counter");
        assert!(ir.of(&s).is_nan());
        let mut with = s.clone();
        with.counters.insert("Ir".into(), 1234.0);
        assert_eq!(ir.of(&with), 1234.0);
        assert_eq!(
            Metric::parse("throughput").map(|m| m.direction()),
            Some(Direction::Higher)
        );
        assert_eq!(Metric::parse("wall"), Some(Metric::Wall));
        assert_eq!(Metric::parse("nope"), None);
        assert_eq!(serde_json::to_value(ir).unwrap(), "Ir");
        let back: Metric = serde_json::from_value(serde_json::json!("peak_rss")).unwrap();
        assert_eq!(back, Metric::PeakRss);
        let b = Benchmark {
            locks: None,
            stacks: None,
            allocs: None,
            name: "b".into(),
            command: "b".into(),
            argv: vec![],
            parameters: Default::default(),
            facts: Default::default(),
            samples: vec![with.clone(), s.clone()],
            profile: None,
            summaries: Vec::new(),
        };
        assert_eq!(b.values(ir), vec![1234.0]);
        assert!(b.counters().is_empty(), "one sample lacks Ir");
        assert_eq!(
            RunStatus::parse("interrupted"),
            Some(RunStatus::Interrupted)
        );
    }
}

#[cfg(test)]
mod short_commit_tests {
    #[test]
    fn a_commit_is_shown_by_its_first_twelve_characters_and_never_cut_inside_one() {
        let full = "0123456789abcdef0123456789abcdef01234567";
        assert_eq!(crate::short_commit(full), "0123456789ab");
        assert_eq!(crate::short_commit("abc"), "abc");
        // A pushed run's commit is any text: `runs` sliced it by bytes and
        // would have panicked inside a multi-byte character.
        assert_eq!(crate::short_commit("aéééééééé"), "aéééééééé");
    }
}
