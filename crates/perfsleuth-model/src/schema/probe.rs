//! Probe results and their comparison.

use crate::CalibratedClock;
use crate::Environment;
use crate::ProbeResult;
use crate::RunStatus;
use crate::f64_or_nan;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;

/// `perfsleuth/probe`: a probe session (`probe --json`); `probe diff` reads it back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProbeDoc {
    /// Always `"perfsleuth/probe"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// Store id of the run; null with `--no-store`.
    #[serde(default)]
    pub run_id: Option<i64>,
    /// Lifecycle state.
    pub status: RunStatus,
    /// Start time, RFC 3339 UTC.
    pub started_at: String,
    /// End time, RFC 3339 UTC.
    pub ended_at: Option<String>,
    /// Version of perfsleuth that measured it.
    pub tool_version: String,
    /// Whether `--quick` was given.
    #[serde(default)]
    pub quick: Option<bool>,
    /// The comparability hash of `facts`.
    pub comparability: String,
    /// The calibrated core clock of the first probe that reports cycles.
    #[serde(default)]
    pub clock: Option<CalibratedClock>,
    /// One per probe, in the order run.
    pub reports: Vec<ProbeReportDoc>,
    /// The environment fingerprint.
    pub facts: Environment,
}
document!(ProbeDoc, "perfsleuth/probe", 1);

/// One probe's report in a [`ProbeDoc`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProbeReportDoc {
    /// The probe.
    pub probe: String,
    /// Wall time the probe took, in seconds.
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// The CPU the probe's thread was pinned to.
    #[serde(default)]
    pub pinned_cpu: Option<usize>,
    /// That probe's own clock calibration.
    #[serde(default)]
    pub clock: Option<CalibratedClock>,
    /// What it could not do, samples retaken.
    #[serde(default)]
    pub messages: Vec<String>,
    /// Its numbers.
    #[serde(default)]
    pub measurements: Vec<ProbeResult>,
}

/// One probe metric measured on both sides of a probe diff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProbeDelta {
    /// Probe name.
    pub probe: String,
    /// Metric name.
    pub metric: String,
    /// Unit of `a` and `b`.
    pub unit: String,
    /// Value on side A (the baseline).
    #[serde(deserialize_with = "f64_or_nan")]
    #[schemars(with = "Option<f64>")]
    pub a: f64,
    /// Value on side B.
    #[serde(deserialize_with = "f64_or_nan")]
    #[schemars(with = "Option<f64>")]
    pub b: f64,
    /// b / a.
    #[serde(deserialize_with = "f64_or_nan")]
    #[schemars(with = "Option<f64>")]
    pub ratio: f64,
    /// Whether B is worse than A (by the metric's direction).
    pub worse: bool,
    /// The change is at least 10 %, beyond the two values' spread bands
    /// (value ± spread·value / 2, about the inter-quartile ranges) and beyond
    /// `noise`.
    pub significant: bool,
    /// The band the change had to clear, as a share of `a`: the larger of the
    /// runs' spreads and the between-run noise of this metric (assumed per
    /// probe, widened where stored runs of the machine type spread further).
    #[serde(default)]
    pub noise: f64,
    /// Whether this metric is a headline number on either side.
    pub headline: bool,
    /// Changed facts under the probe's prefixes, "key: A → B".
    pub explanations: Vec<String>,
}

/// `perfsleuth/probe-diff`: two probe results compared (`probe diff --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProbeDiffDoc {
    /// Always `"perfsleuth/probe-diff"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// Side A.
    pub a: ProbeDiffSide,
    /// Side B.
    pub b: ProbeDiffSide,
    /// A headline metric differs significantly (the command then exits 1).
    pub differs: bool,
    /// Every metric measured on both sides, in A's order.
    pub deltas: Vec<ProbeDeltaRow>,
}
document!(ProbeDiffDoc, "perfsleuth/probe-diff", 1);

/// One side of a probe diff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProbeDiffSide {
    /// "run 4", "current (run 9)", a file name.
    pub label: String,
    /// Store id, when stored.
    pub run_id: Option<i64>,
    /// Whether it ran `--quick`, when known.
    pub quick: Option<bool>,
    /// The comparability hash of its environment.
    pub comparability: String,
    /// The probes with results, in suite order.
    pub probes: Vec<String>,
}

/// A [`ProbeDelta`] with its change in words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProbeDeltaRow {
    /// The delta.
    #[serde(flatten)]
    pub delta: ProbeDelta,
    /// "3.30× slower", "2.00× less", "unchanged".
    pub change: String,
}
