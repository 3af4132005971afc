//! `perfsleuth/bisect`: what `bisect --format json` writes.

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `perfsleuth/bisect`: which commits of a first-parent range changed the
/// benchmarks, found by interleaved, paired comparisons (docs/BISECT.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BisectDoc {
    /// Always `"perfsleuth/bisect"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// The bisection's id: the same range and commands give the same id,
    /// which `--resume` and the team server's bisection page go by.
    #[serde(default)]
    pub id: String,
    /// How the search ended: `found` (culprits named), `not reproduced`
    /// (the ends do not differ here), `undecided` (the ends, or every
    /// segment that changed, could not be decided in the budget).
    pub outcome: String,
    /// The commits of the range, the baseline first and the candidate last.
    pub commits: Vec<BisectCommit>,
    /// The change between the two ends, as the confirmation measured it.
    pub total: Option<BisectChange>,
    /// The commits that changed it, oldest first, each verified against its parent.
    pub culprits: Vec<BisectCulprit>,
    /// Segments whose change could not be decided: a culprit may lie in each.
    pub undecided: Vec<BisectRange>,
    /// Commits that could not be built, skipped as `git bisect skip` does.
    pub skipped: Vec<String>,
    /// Every probe measured, in order.
    pub steps: Vec<BisectStep>,
    /// Runs measured in all (every commit of every probe).
    pub runs: u64,
    /// Seconds spent measuring (builds apart).
    pub measuring_s: f64,
    /// Seconds spent building.
    pub building_s: f64,
    /// Notes: how the metric was chosen, what the budget left undecided.
    pub notes: Vec<String>,
}

/// A commit of the range.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BisectCommit {
    /// Its full hash.
    pub commit: String,
    /// The first line of its message.
    pub subject: String,
    /// Its author.
    pub author: String,
    /// Its author date (ISO 8601).
    pub date: String,
}

/// The change between two commits as one probe judged it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BisectChange {
    /// `changed`, `same` or `undecided`.
    pub call: String,
    /// The change from the older to the newer commit (0.02 = +2 %); null when undecided for want of data.
    pub change: Option<f64>,
    /// Its interval's low end.
    pub lo: Option<f64>,
    /// Its interval's high end.
    pub hi: Option<f64>,
}

/// A culprit: the commit after the last unchanged one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BisectCulprit {
    /// The last commit before the change.
    pub parent: String,
    /// The commit that changed it; with skipped commits between, the change
    /// lies in one of them or in it.
    pub commit: String,
    /// The split that found it.
    pub found: BisectChange,
    /// Its verification against its parent, measured on its own.
    pub verified: Option<BisectChange>,
    /// Whether the verification called the same change.
    pub confirmed: bool,
    /// Its share of the total change, in logs (shares of a chain add up to 1).
    pub share: Option<f64>,
    /// For a merge: the merged branch's own commits, the range to bisect
    /// next to find which of them made the change.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merged: Option<BisectBranch>,
}

/// A merged branch's own commits: from the merge base (exclusive) to the
/// merged parent (inclusive), first parent by first parent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BisectBranch {
    /// The merge base of the merge's parents.
    pub from: String,
    /// The merge's second parent, the branch's last commit.
    pub to: String,
}

/// A range of commits (`from` exclusive, `to` inclusive).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BisectRange {
    /// The older end.
    pub from: String,
    /// The newer end.
    pub to: String,
    /// What the probe said of it.
    pub change: BisectChange,
}

/// One probe: commits measured interleaved in one session, one stored run each.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BisectStep {
    /// `confirm`, `split` or `verify`.
    pub kind: String,
    /// The commits, oldest first.
    pub commits: Vec<String>,
    /// Each adjacent pair's verdict, oldest pair first.
    pub verdicts: Vec<BisectChange>,
    /// The stored runs, one per commit (null with --no-store).
    pub runs: Vec<Option<i64>>,
    /// Rounds measured.
    pub rounds: u32,
    /// Seconds it took (0 for a step replayed from the store).
    pub seconds: f64,
    /// Judged again from the runs an interrupted bisection stored (`--resume`).
    pub resumed: bool,
}

document!(BisectDoc, "perfsleuth/bisect", 1);
