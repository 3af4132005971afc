//! The comparison document (`compare --format json`).

use crate::schema::explain::AbInfo;
use crate::schema::explain::CompareEnvChange;
use crate::schema::explain::CompareRow;
use crate::schema::explain::VerdictCounts;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;

/// `perfsleuth/compare`: baseline vs candidate (`compare --format json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompareDoc {
    /// Always `"perfsleuth/compare"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// Label of the baseline side.
    pub baseline: String,
    /// Label of the candidate side.
    pub candidate: String,
    /// Whether an identity fact differs (every verdict is then `environment changed`).
    pub identity_changed: bool,
    /// Identity and performance facts that differ, baseline → candidate.
    pub env_changes: Vec<CompareEnvChange>,
    /// Whether gating p-values were adjusted by Benjamini–Hochberg.
    pub fdr_applied: bool,
    /// How many p-values the adjustment covered.
    pub fdr_comparisons: usize,
    /// One row per paired benchmark and metric.
    pub rows: Vec<CompareRow>,
    /// Benchmarks found only in the baseline.
    pub unpaired_baseline: Vec<String>,
    /// Benchmarks found only in the candidate.
    pub unpaired_candidate: Vec<String>,
    /// Notes on the comparison as a whole.
    pub notes: Vec<String>,
    /// Rows per verdict, every verdict present.
    pub summary: VerdictCounts,
    /// Whether a gating metric of any benchmark regressed.
    pub any_gating_regression: bool,
    /// `perfsleuth ab`: the two revisions, their builds and the rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ab: Option<AbInfo>,
}
document!(CompareDoc, "perfsleuth/compare", 2);
