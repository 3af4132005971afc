//! Environment documents (`env show --json`, `env diff --json`).

use crate::Environment;
use crate::ImpactClass;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;

/// `perfsleuth/environment`: a fingerprint (`env show --json`); `env diff` reads it back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EnvironmentDoc {
    /// Always `"perfsleuth/environment"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// "current machine", "run 12", "tree DIR" or a file name.
    pub source: String,
    /// The comparability hash of the facts.
    pub comparability: String,
    /// The facts.
    pub facts: Environment,
}
document!(
    EnvironmentDoc,
    "perfsleuth/environment",
    crate::SCHEMA_VERSION
);

/// `perfsleuth/env-diff`: what changed between two environments (`env diff --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EnvDiffDoc {
    /// Always `"perfsleuth/env-diff"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// Label of side A.
    pub a: String,
    /// Label of side B.
    pub b: String,
    /// Comparability hashes of both sides.
    pub comparability: ComparabilityPair,
    /// No identity or performance fact differs.
    pub identical: bool,
    /// The changes, most important first (context facts only with `--all`).
    pub changes: Vec<EnvDiffChange>,
}
document!(EnvDiffDoc, "perfsleuth/env-diff", crate::SCHEMA_VERSION);

/// The comparability hashes of two sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ComparabilityPair {
    /// Side A.
    pub a: String,
    /// Side B.
    pub b: String,
}

/// One changed fact in an [`EnvDiffDoc`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EnvDiffChange {
    /// The fact's key.
    pub key: String,
    /// The more severe of the two sides' classes.
    pub class: ImpactClass,
    /// Value on side A (null: absent there).
    pub a: Option<String>,
    /// Value on side B.
    pub b: Option<String>,
    /// What changed, in words.
    pub summary: String,
    /// Why it can move results.
    pub why: String,
}

/// `perfsleuth/env-check`: is this machine fit to benchmark on (`env check --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EnvCheckDoc {
    /// Always `"perfsleuth/env-check"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// False when any finding is a problem (the command then exits 2).
    pub fit: bool,
    /// The findings, most serious first.
    pub findings: Vec<Finding>,
}
document!(EnvCheckDoc, "perfsleuth/env-check", crate::SCHEMA_VERSION);

/// How serious an `env check` finding is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; results stay usable.
    Info,
    /// Adds noise or limits what can be measured.
    Warning,
    /// Makes results unreliable.
    Problem,
}

impl Severity {
    /// Lowercase name for output.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Problem => "problem",
        }
    }
}

/// One finding of `env check`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    /// How serious.
    pub severity: Severity,
    /// The fact it is about.
    pub key: String,
    /// What was found.
    pub message: String,
    /// What to do.
    pub recommendation: String,
}
