//! Samples and benchmarks: one timed run each, grouped by round and
//! paired, and a summary reported by another tool.

use super::*;

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

/// Reads a number that JSON may hold as null (serde_json writes NaN so) as NaN.
pub(crate) fn f64_or_nan<'de, D: serde::Deserializer<'de>>(de: D) -> Result<f64, D::Error> {
    Ok(Option::<f64>::deserialize(de)?.unwrap_or(f64::NAN))
}
