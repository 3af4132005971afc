//! A benchmark: one command, its samples and what profiled it, and a
//! summary reported by another tool.

use crate::allocs::AllocProfile;
use crate::callgrind::Profile;
use crate::environment::Environment;
use crate::environment::is_empty_env;
use crate::locks::LockReport;
use crate::metric::COUNTERS;
use crate::metric::Counter;
use crate::metric::Metric;
use crate::metric::Sample;
use crate::stacks::StackProfile;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use std::collections::BTreeMap;

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
    // This and the other reports are boxed: most benchmarks have none, and
    // inline they made every benchmark 840 bytes (a 100 000-benchmark run
    // held 84 MB of empty reports).
    /// Per-function costs of the last iteration (simulation mode).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub profile: Option<Box<Profile>>,
    /// What another tool reported where it kept no samples (an import of a
    /// summary-only format): per metric, its centre and spread.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub summaries: Vec<ReportedSummary>,
    /// Where its threads waited for locks (`run --locks`, `scale --locks`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locks: Option<Box<LockReport>>,
    /// Where its runs spent their time on CPU: sampled call stacks
    /// (`run --profile`, docs/PROFILES.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stacks: Option<Box<StackProfile>>,
    /// What its runs allocated, exactly, and where (sampled stacks)
    /// (`run --profile=alloc`, docs/PROFILES.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allocs: Option<Box<AllocProfile>>,
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
