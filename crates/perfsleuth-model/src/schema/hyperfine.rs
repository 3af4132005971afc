//! hyperfine's own export layout (`--export-hyperfine`).

use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use std::collections::BTreeMap;

/// hyperfine's JSON export shape (`run --export-hyperfine`): `{"results": [...]}`.
/// No `schema` header: it is hyperfine's document, which its scripts read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HyperfineDoc {
    /// One result per benchmark, in run order.
    pub results: Vec<HyperfineResult>,
}

/// One benchmark in hyperfine's terms; every time in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HyperfineResult {
    /// The benchmark's name (its command when it has no `--name`), as hyperfine writes it.
    pub command: String,
    /// Mean wall time.
    pub mean: f64,
    /// Sample standard deviation of the wall times; null with one run.
    pub stddev: Option<f64>,
    /// Median wall time.
    pub median: f64,
    /// Mean user CPU time.
    pub user: f64,
    /// Mean system CPU time.
    pub system: f64,
    /// Fastest run.
    pub min: f64,
    /// Slowest run.
    pub max: f64,
    /// Every run's wall time, in the order measured.
    pub times: Vec<f64>,
    /// Every run's peak resident set size in bytes.
    #[serde(default)]
    pub memory_usage_byte: Vec<u64>,
    /// Every run's exit code; null for a run killed by a signal.
    pub exit_codes: Vec<Option<i32>>,
    /// Parameter values (`-L`, `-P`), absent without parameters.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub parameters: BTreeMap<String, String>,
}
