//! The list of stored runs.

use crate::GitInfo;
use crate::Mode;
use crate::RunStatus;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;

/// `perfsleuth/runs`: the stored runs, newest first (`runs --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunsDoc {
    /// Always `"perfsleuth/runs"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// The runs.
    pub runs: Vec<RunListing>,
}
document!(RunsDoc, "perfsleuth/runs", crate::SCHEMA_VERSION);

/// One row of `perfsleuth runs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunListing {
    /// Store id.
    pub id: i64,
    /// The run's UUID, the same in every store it was copied to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Start time, RFC 3339 UTC.
    pub started_at: String,
    /// End time; `None` while running or after a crash.
    pub ended_at: Option<String>,
    /// Lifecycle state.
    pub status: RunStatus,
    /// Measurement mode.
    pub mode: Mode,
    /// Source-control state at start.
    pub git: Option<GitInfo>,
    /// Benchmark names in display order.
    pub benchmarks: Vec<String>,
    /// Number of samples over all benchmarks.
    pub samples: u64,
    /// The `cpu.model` fact.
    pub cpu_model: Option<String>,
    /// The `host.name` fact.
    pub host: Option<String>,
    /// Hash of the identity facts: runs with equal hashes ran on comparable machines.
    pub comparability: String,
    /// Probes with stored results (`perfsleuth probe` runs), in the order measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<String>,
}

/// A run measured for a bisection, with its place in it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BisectionRun {
    /// The step (1 = the confirmation of the ends).
    pub step: u64,
    /// `confirm`, `split` or `verify`.
    pub kind: String,
    /// The run.
    pub run: RunListing,
}

/// A bisection whose runs are stored: the range and how many runs it measured.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BisectionListing {
    /// The bisection's id (`perfsleuth/bisect`'s `id`).
    pub id: String,
    /// The range's older end (full hash).
    pub baseline: Option<String>,
    /// The range's newer end (full hash).
    pub candidate: Option<String>,
    /// Runs stored for it.
    pub runs: u64,
    /// When its first stored run started.
    pub started_at: String,
    /// When its last stored run started.
    pub last_at: String,
}
