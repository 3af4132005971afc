//! The options a run was measured with, as stored.

use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;

/// The `options` of a run made by `perfsleuth scale` (stored in the run,
/// read back by the scale analysis). Not a document of its own: the run's
/// `options` stay free-form JSON for the other commands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScaleOptions {
    /// Always `"scale"` (`perfsleuth_model::SCALE_KIND`).
    pub kind: String,
    /// The parameter swept, e.g. `threads`.
    pub param: String,
    /// Its values as given, in order.
    #[serde(default)]
    pub values: Vec<String>,
    /// How throughput was read.
    #[serde(default)]
    pub throughput: Option<ThroughputMethod>,
    /// Timed rounds.
    #[serde(default)]
    pub runs: u32,
    /// Untimed rounds first.
    #[serde(default)]
    pub warmup: u32,
    /// `--shell`, when given.
    #[serde(default)]
    pub shell: Option<String>,
    /// `--timeout` in seconds, when given.
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// `--counters`.
    #[serde(default)]
    pub counters: String,
}

/// The `options` of a `perfsleuth probe` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProbeRunOptions {
    /// The probes asked for, in order.
    pub probes: Vec<String>,
    /// `--quick`.
    pub quick: bool,
}

/// `--ignore-failure` as a run stores it: `false`, `true` or the exit codes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum IgnoreFailure {
    /// `false` (nothing tolerated) or `true` (every exit).
    All(bool),
    /// Only these exit codes.
    Codes(Vec<i32>),
}

/// The `options` of a run made by `perfsleuth run`, as given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunOptions {
    /// The command templates.
    pub commands: Vec<String>,
    /// `--warmup`.
    pub warmup: u32,
    /// `--runs`.
    pub runs: Option<u32>,
    /// `--min-runs`.
    pub min_runs: u32,
    /// `--max-runs`.
    pub max_runs: Option<u32>,
    /// `--time-budget` in seconds.
    pub time_budget_s: f64,
    /// `--precision`.
    pub precision: f64,
    /// `--prepare` commands.
    pub prepare: Vec<String>,
    /// `--conclude` commands.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conclude: Vec<String>,
    /// `--setup` commands.
    pub setup: Vec<String>,
    /// `--cleanup` commands.
    pub cleanup: Vec<String>,
    /// `--shell`.
    pub shell: Option<String>,
    /// `--parameter-list`, flattened pairs.
    pub parameter_list: Vec<String>,
    /// `--parameter-scan`, flattened triples.
    pub parameter_scan: Vec<String>,
    /// `--step`.
    pub step: Option<String>,
    /// `--name` values.
    pub names: Vec<String>,
    /// `--ignore-failure`.
    pub ignore_failure: IgnoreFailure,
    /// `--timeout` in seconds.
    pub timeout_s: Option<f64>,
    /// `--output`.
    pub output: String,
    /// `--input`.
    pub input: Option<String>,
    /// Round-robin (not `--no-interleave`).
    pub interleave: bool,
    /// `--counters`.
    pub counters: String,
    /// `--mode`.
    pub mode: String,
    /// `--collect`.
    pub collect: Option<String>,
    /// `--counters-kernel`.
    pub counters_kernel: bool,
    /// `--rounds`.
    #[serde(default = "one")]
    pub rounds: u32,
    /// `--max-time` in seconds, when given.
    #[serde(default)]
    pub max_time_s: Option<f64>,
    /// The run's comparison could go on measuring while undecided (`ab`,
    /// `run --baseline`, two commands in one run): it was judged at looks
    /// as its rounds grew, α spent in halves over them, and its comparisons
    /// are judged at the level of the last look ([`crate::Run::looks`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sequential: bool,
}

/// The part of a run's options that says how its comparisons were looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Sequential {
    /// See [`RunOptions::sequential`].
    #[serde(default)]
    pub sequential: bool,
    /// See [`RunOptions::rounds`].
    #[serde(default = "one")]
    pub rounds: u32,
}

pub(crate) fn one() -> u32 {
    1
}

/// How a sweep reads throughput, as stored: `{"work": W}`,
/// `{"work_per_thread": W}`, `{"regex": RE}` or `{"json_field": F}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThroughputMethod {
    /// `--work`: units of work per run.
    Work(f64),
    /// `--work-per-thread`: units per thread (× N).
    WorkPerThread(f64),
    /// `--throughput-regex`, as given.
    Regex(String),
    /// `--throughput-json`, the field's dotted path.
    JsonField(String),
}
