//! History documents: series, change points and checks.

use crate::Direction;
use crate::ImpactClass;
use crate::Mode;
use crate::f64_or_nan;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;

/// `perfsleuth/history`: each benchmark's series over time, its change
/// points and the environment changes along it (`history --format json`,
/// `history fit --format json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryDoc {
    /// Always `"perfsleuth/history"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// The metrics shown, in order (`history fit`: `value`).
    pub metrics: Vec<String>,
    /// The git branch the runs were made on, when the series are limited to one.
    pub branch: Option<String>,
    /// How points are ordered: `git first-parent`, `time` or `file`.
    pub order: String,
    /// How change points were searched for.
    pub method: HistoryMethod,
    /// One series per benchmark, mode and machine, never joined.
    pub series: Vec<HistorySeries>,
    /// Notes on what was left out or could not be done.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The `--check` result, when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<HistoryCheck>,
}
document!(HistoryDoc, "perfsleuth/history", crate::SCHEMA_VERSION);

/// The change-point search's settings (docs/HISTORY.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryMethod {
    /// Points per E-divisive window.
    pub window: usize,
    /// Largest p-value a change point may have.
    pub max_p: f64,
    /// A fixed relative magnitude floor (`--min-change`); `None`: each series' own noise floor.
    pub min_change: Option<f64>,
}

/// One series: a benchmark on one machine in one mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistorySeries {
    /// Benchmark key (name with parameters), or the CSV column.
    pub benchmark: String,
    /// The metric (`value` for a CSV column).
    pub metric: String,
    /// Its unit ("ns", "bytes", ...; empty for a CSV column).
    pub unit: String,
    /// Which way is better; `None` for a CSV column (any change is reported, none is judged).
    pub direction: Option<Direction>,
    /// Measurement mode of its runs; `None` for a CSV column.
    pub mode: Option<Mode>,
    /// Machine class: a hash of the machine's identity facts other than its
    /// software (kernel, libc, OS), whose changes are markers instead.
    pub machine: Option<String>,
    /// The machine in words ("Intel(R) Xeon(R) Processor, 2 CPUs").
    pub machine_label: Option<String>,
    /// Run-to-run noise learned from the series (relative standard deviation).
    #[serde(deserialize_with = "f64_or_nan")]
    #[schemars(with = "Option<f64>")]
    pub noise: f64,
    /// Where `noise` comes from: learned from the series, or assumed for
    /// the machine while the series is too short to learn it.
    pub noise_source: String,
    /// Magnitude floor applied to its change points (relative).
    pub min_change: f64,
    /// The points, oldest first.
    pub points: Vec<HistoryPoint>,
    /// Environment changes between consecutive points.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub markers: Vec<HistoryMarker>,
    /// Change points, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub change_points: Vec<HistoryChange>,
    /// Why no change points were searched for, when none were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One point: one run's median of the metric (or one CSV row).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryPoint {
    /// Store id of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<i64>,
    /// The CSV row's label (`history fit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Git commit of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Whether the tree had uncommitted changes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dirty: bool,
    /// Start time, RFC 3339 UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// The run's median (the CSV value).
    pub value: f64,
    /// 95 % confidence interval of the median (order statistics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci: Option<[f64; 2]>,
    /// Samples behind the median.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<usize>,
    /// Comparability hash of the run's environment (all identity facts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparability: Option<String>,
    /// SHA-256 of the benchmarked program, when it was known: the same on
    /// both sides of a step means the program's code did not change there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary_sha256: Option<String>,
}

/// Environment facts that changed between point `index - 1` and `index`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryMarker {
    /// Index of the first point with the new environment.
    pub index: usize,
    /// The changes, most impactful first.
    pub changes: Vec<HistoryFactChange>,
}

/// One changed fact on a series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryFactChange {
    /// The fact's key.
    pub key: String,
    /// Its impact class.
    pub class: ImpactClass,
    /// In words: "kernel.release 6.1.0 → 6.8.0".
    pub summary: String,
}

/// What a change point is put down to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum HistoryCause {
    /// No environment change coincides: the commits in its range.
    Code,
    /// An environment change coincides: probably the machine.
    Environment,
    /// No recorded environment change, but several benchmarks whose
    /// programs are byte-identical either side stepped together at the same
    /// run: one common step of the machine, not the code.
    Machine,
}

/// One change point: the series stepped between two points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryChange {
    /// Index of the first point of the new level.
    pub index: usize,
    /// Commit (or label) of the last point before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    /// Commit (or label) of the first point after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// Relative change of the segments' means.
    pub change: f64,
    /// Its 95 % interval.
    pub ci: [f64; 2],
    /// Two-sided t-test p-value between the segments.
    pub p: f64,
    /// Mean of the segment before.
    pub mean_before: f64,
    /// Mean of the segment after.
    pub mean_after: f64,
    /// Points in the segment before.
    pub n_before: usize,
    /// Points in the segment after.
    pub n_after: usize,
    /// Worse by the metric's direction; `None` without one.
    pub regression: Option<bool>,
    /// Code or environment.
    pub cause: HistoryCause,
    /// The environment changes at (or next to) the step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub environment: Vec<String>,
    /// The alert in words.
    pub summary: String,
}

/// `history --check`: whether the latest run starts a regression the environment does not explain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryCheck {
    /// Whether the check fails (exit 1).
    pub failed: bool,
    /// One line per series that fails it or was set aside.
    pub reasons: Vec<String>,
}
