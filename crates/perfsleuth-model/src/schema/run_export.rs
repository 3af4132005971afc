//! The run export (`--export-json`, `show --json`) and what it holds.

use crate::Run;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use std::collections::BTreeMap;

/// `perfsleuth/run`: a run with all its samples and the derived statistics
/// (`run --export-json`, `show --json`); `compare` and `env diff` read it back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunExport {
    /// Always `"perfsleuth/run"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// The run exactly as stored.
    pub run: Run,
    /// Statistics derived from `run`, so consumers need not reimplement them.
    pub summary: RunSummary,
}
document!(RunExport, "perfsleuth/run", crate::SCHEMA_VERSION);

/// The derived statistics of a run export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunSummary {
    /// Index into `run.benchmarks` of the benchmark the others are compared with.
    pub reference: usize,
    /// One entry per benchmark, in run order.
    pub benchmarks: Vec<BenchmarkSummary>,
    /// One entry per benchmark other than the reference.
    pub comparisons: Vec<ComparisonSummary>,
}

/// One benchmark's statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BenchmarkSummary {
    /// As in `run.benchmarks[]`.
    pub name: String,
    /// As in `run.benchmarks[]`.
    pub command: String,
    /// As in `run.benchmarks[]`.
    pub parameters: BTreeMap<String, String>,
    /// Number of samples, failed ones included.
    pub runs: usize,
    /// Samples that exited non-zero or were killed by a signal (included in the statistics).
    pub failed_runs: usize,
    /// Wall time (ns); null without samples.
    pub wall: Option<Statistics>,
    /// User CPU time (ns).
    pub user: Option<Statistics>,
    /// System CPU time (ns).
    pub sys: Option<Statistics>,
    /// Peak RSS (bytes).
    pub peak_rss: Option<Statistics>,
    /// Perf_event counters every sample recorded: name → median and unit.
    #[serde(default)]
    pub counters: BTreeMap<String, CounterMedian>,
}

/// A counter's median over a benchmark's samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CounterMedian {
    /// The median.
    pub median: f64,
    /// The counter's unit.
    pub unit: String,
}

/// Summary statistics of one metric, in the metric's unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Statistics {
    /// Number of values.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 when n = 1.
    pub stddev: f64,
    /// Median.
    pub median: f64,
    /// Lower bound of the 95 % distribution-free CI of the median.
    pub median_ci_low: f64,
    /// Upper bound of that interval.
    pub median_ci_high: f64,
    /// Median absolute deviation, unscaled.
    pub mad: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// 5th percentile.
    pub p5: f64,
    /// 95th percentile.
    pub p95: f64,
    /// Positions in `samples` of outliers (modified z-score above 3.5).
    pub outliers: Vec<usize>,
}

/// One benchmark compared with the reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ComparisonSummary {
    /// Index of the compared benchmark.
    pub benchmark: usize,
    /// Index of the reference benchmark.
    pub reference: usize,
    /// Wall time, candidate / reference; null when it cannot be computed.
    pub time: Option<TimeRatio>,
    /// Peak RSS, candidate / reference.
    pub peak_rss: Option<Ratio>,
}

/// A ratio of medians with its bootstrap interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Ratio {
    /// median(candidate) / median(reference).
    pub ratio: f64,
    /// Lower bound of the interval: the sign test's over adjacent pairs where both were measured interleaved, the percentile bootstrap's otherwise.
    pub ci_low: f64,
    /// Upper bound.
    pub ci_high: f64,
    /// Confidence level of the interval.
    pub confidence: f64,
    /// Bootstrap resamples that gave a finite ratio; 0 for a paired interval, which resamples nothing.
    pub resamples: usize,
    /// The interval excludes 1 (time: and the rank test agrees), with at least 5 samples a side.
    pub significant: bool,
}

/// The wall-time ratio, with the rank test beside the bootstrap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimeRatio {
    /// The ratio and its interval.
    #[serde(flatten)]
    pub ratio: Ratio,
    /// Two-sided Mann–Whitney U p-value.
    pub p_value: Option<f64>,
    /// The bootstrap interval and the rank test disagree (unpaired estimates only).
    #[serde(default)]
    pub inconclusive: bool,
    /// The time judged: `wall`, or `cpu` for a benchmark that keeps one CPU
    /// busy without waiting (absent in documents before it: wall).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<crate::Metric>,
    /// Why that time was judged, in one clause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged: Option<String>,
    /// Adjacent pairs of runs the estimate came from (interleaved runs); absent when unpaired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairs: Option<usize>,
}
