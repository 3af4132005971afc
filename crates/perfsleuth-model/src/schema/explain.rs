//! The explanation document (`explain --format json`).

use crate::Direction;
use crate::ImpactClass;
use crate::Metric;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use std::collections::BTreeMap;

/// `perfsleuth/explain`: which differences between two set-ups reproduce a
/// result difference when tried on this machine (`explain --format json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExplainDoc {
    /// Always `"perfsleuth/explain"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// Label of the baseline side.
    pub baseline: String,
    /// Label of the candidate side.
    pub candidate: String,
    /// The side the experiments start from (`baseline` or `candidate`):
    /// the one this machine stands for.
    pub from: String,
    /// `walltime` or `simulation`.
    pub mode: String,
    /// The stored run holding the experiments' samples (null with
    /// `--no-store`, or when nothing was measured).
    pub run: Option<i64>,
    /// Whether experiments were measured (false when there was nothing to
    /// explain, or with `--plan`).
    pub measured: bool,
    /// The set-ups tried, each a variant of the stored run.
    pub experiments: Vec<ExplainExperiment>,
    /// Differences no experiment here reproduces, with the reason.
    pub untested: Vec<ExplainUntested>,
    /// One entry per benchmark explained.
    pub benchmarks: Vec<ExplainBenchmark>,
    /// Notes on the explanation as a whole.
    pub notes: Vec<String>,
}
document!(ExplainDoc, "perfsleuth/explain", 1);

/// One set-up tried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExplainExperiment {
    /// Its variant name (`isa`, `cache-sizes`, `glibc.cpu.hwcaps`, `env.NAME`, `all`, …).
    pub name: String,
    /// The facts it reproduces.
    pub facts: Vec<String>,
    /// What it does, in words.
    pub what: String,
    /// Its settings as a `--variant` SPEC (`;`-separated).
    pub spec: String,
    /// What was checked to have taken effect before measuring (glibc's
    /// reading of GLIBC_TUNABLES); settings of the process itself are
    /// checked on the running child.
    pub verified: Vec<String>,
}

/// A difference not tested here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExplainUntested {
    /// The fact's key.
    pub key: String,
    /// What differs, in words.
    pub summary: String,
    /// Why it is not tested.
    pub reason: String,
}

/// A ratio with its interval (candidate / baseline, or experiment / base).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExplainRatio {
    /// The ratio of medians.
    pub ratio: f64,
    /// Lower bound of its 95 % interval.
    pub ci_low: f64,
    /// Upper bound.
    pub ci_high: f64,
}

/// What one experiment did to one benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ExplainOutcome {
    /// It moves the result the observed way by at least half the difference.
    #[serde(rename = "reproduces")]
    Reproduces,
    /// It moves it the observed way, by less than half.
    #[serde(rename = "partly")]
    Partly,
    /// It moves it the other way.
    #[serde(rename = "opposite")]
    Opposite,
    /// It changes the result (no observed difference to measure it against).
    #[serde(rename = "changes")]
    Changes,
    /// No change beyond noise.
    #[serde(rename = "no effect")]
    NoEffect,
    /// Neither a change nor its absence could be shown.
    #[serde(rename = "inconclusive")]
    Inconclusive,
}

/// One experiment's effect on one benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExplainFinding {
    /// The experiment's name.
    pub experiment: String,
    /// Its effect: experiment / base, paired round by round.
    pub effect: Option<ExplainRatio>,
    /// The comparison's verdict (the one rule of `compare`, paired).
    pub verdict: VerdictLabel,
    /// Its p-value.
    pub p_value: Option<f64>,
    /// Holm-adjusted over the experiments of this benchmark.
    pub p_holm: Option<f64>,
    /// The share of the observed difference it reproduces (log scale:
    /// 1 = all of it), with its interval; null without an observed difference.
    pub share: Option<ExplainRatio>,
    /// What the effect amounts to.
    pub outcome: ExplainOutcome,
}

/// One benchmark's explanation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExplainBenchmark {
    /// The pairing key (`name` or `name [k=v]`).
    pub key: String,
    /// The metric explained.
    pub metric: Metric,
    /// Its unit.
    pub unit: String,
    /// The difference to explain: candidate / baseline (null when one side
    /// is a fingerprint without results).
    pub observed: Option<ExplainRatio>,
    /// Its verdict (the rule of `compare`, judged across the machines).
    pub observed_verdict: Option<VerdictLabel>,
    /// The effect an experiment that reproduced all of it would show here
    /// (the observed ratio, or its inverse when starting from the candidate).
    pub expected: Option<f64>,
    /// The experiments' effects, ranked by the share they explain.
    pub findings: Vec<ExplainFinding>,
    /// The answer in one sentence.
    pub conclusion: String,
}

/// What `perfsleuth ab` compared: two revisions measured in the same rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AbInfo {
    /// The baseline revision.
    pub baseline: AbSide,
    /// The candidate revision.
    pub candidate: AbSide,
    /// Rounds measured (each measures both sides).
    pub rounds: u32,
    /// Benchmarks whose program was byte-identical on both sides (they do not gate).
    pub identical_binaries: Vec<String>,
}

/// One revision of an `ab` comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AbSide {
    /// Its stored run; null with --no-store.
    pub run: Option<i64>,
    /// The commit checked out (for a dirty candidate: HEAD's).
    pub commit: String,
    /// The working tree's uncommitted changes and untracked files were measured too.
    pub dirty: bool,
    /// How the revision was chosen ("merge base of HEAD and main", "--candidate v2").
    pub chosen: String,
    /// The `--build` that ran in its worktree; null without --build.
    pub build: Option<AbBuild>,
}

/// A side's `--build`, which succeeded (a failing one stops `ab`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AbBuild {
    /// The command, run with `sh -c` in the worktree.
    pub command: String,
    /// Its wall time in seconds.
    pub wall_s: f64,
}

/// A fact that differs between the sides of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompareEnvChange {
    /// The fact's key.
    pub key: String,
    /// The more severe of the two sides' classes.
    pub class: ImpactClass,
    /// Baseline value (null: not recorded there).
    pub before: Option<String>,
    /// Candidate value.
    pub after: Option<String>,
    /// What changed, in words.
    pub summary: String,
    /// Why it can move results.
    pub why: String,
}

/// One benchmark and metric compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompareRow {
    /// Benchmark name.
    pub benchmark: String,
    /// Its parameter values.
    pub parameters: BTreeMap<String, String>,
    /// The pairing key as shown: `name` or `name [k=v, …]`.
    pub key: String,
    /// The metric.
    pub metric: Metric,
    /// The metric's unit.
    pub unit: String,
    /// Which way is better.
    pub better: Direction,
    /// Whether this metric gates.
    pub gating: bool,
    /// Median of the baseline's samples (null without samples).
    pub baseline_median: Option<f64>,
    /// Median of the candidate's samples.
    pub candidate_median: Option<f64>,
    /// Baseline samples, all runs together.
    pub n_baseline: usize,
    /// Candidate samples, all runs together.
    pub n_candidate: usize,
    /// Relative change of the median with its bootstrap interval.
    pub change: Option<RelativeChange>,
    /// Two-sided Mann–Whitney U p-value.
    pub p_value: Option<f64>,
    /// Benjamini–Hochberg adjusted p-value.
    pub p_adjusted: Option<f64>,
    /// The verdict.
    pub verdict: VerdictLabel,
    /// Explanations attached to this row.
    pub notes: Vec<String>,
    /// The between-run noise of this difference (relative, ±, 95 %): the
    /// interval in `change` is at least this wide around the change.
    #[serde(default)]
    pub band: Option<f64>,
    /// The between-run noise behind `band`, learned from same-binary runs or
    /// assumed from the fingerprint; absent where none applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<CompareNoise>,
    /// Wall time with both sides profiled, a judged change: the functions
    /// whose on-CPU time moved most, biggest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub time_functions: Vec<CompareTimeFunction>,
}

/// One function's on-CPU time per run, baseline against candidate
/// (`--profile`), in nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompareTimeFunction {
    /// The function's name, demangled.
    pub function: String,
    /// Its binary or library's file name.
    pub object: String,
    /// Its time off the CPU for this reason (`lock`, `poll`, `I/O`,
    /// `sleep`, `runnable`, `other`; a wall profile), not on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off_cpu: Option<String>,
    /// For a wait in a thread other than the main one: the function that
    /// thread started in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    /// Median self time per run in the baseline.
    pub baseline_self_ns: f64,
    /// Median self time per run in the candidate.
    pub candidate_self_ns: f64,
    /// Shift of the self time per run, candidate − baseline.
    pub self_shift_ns: f64,
    /// Its interval, low end.
    pub self_shift_low_ns: f64,
    /// Its interval, high end.
    pub self_shift_high_ns: f64,
    /// Shift of the inclusive time per run (the function and its callees).
    pub inclusive_shift_ns: f64,
    /// Its interval, low end.
    pub inclusive_shift_low_ns: f64,
    /// Its interval, high end.
    pub inclusive_shift_high_ns: f64,
    /// The self shift's interval holds 0.
    pub in_the_noise: bool,
}

/// Between-run noise of one benchmark and metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompareNoise {
    /// Relative standard deviation of one run's median.
    pub sd: f64,
    /// The 95 % band of one run's median (the "±x %" reported).
    pub one_run: f64,
    /// Same-binary runs it was learned from; 0 when assumed.
    pub runs: usize,
    /// Where it comes from ("12 same-binary runs", "assumed for a virtual machine").
    pub source: String,
}

/// A relative change with its interval (null members: not finite).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RelativeChange {
    /// candidate / baseline − 1.
    pub change: Option<f64>,
    /// Lower bound of the bootstrap interval.
    pub ci_low: Option<f64>,
    /// Upper bound.
    pub ci_high: Option<f64>,
    /// Confidence level.
    pub confidence: f64,
    /// Bootstrap resamples used.
    pub resamples: usize,
}

/// A row's verdict as written in reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum VerdictLabel {
    /// Worse beyond noise.
    #[serde(rename = "regressed")]
    Regressed,
    /// Better beyond noise.
    #[serde(rename = "improved")]
    Improved,
    /// The whole CI inside the noise band.
    #[serde(rename = "no change")]
    NoChange,
    /// The CI lies beyond the threshold but the test is not significant: no claim.
    #[serde(rename = "inconclusive")]
    Inconclusive,
    /// Too few samples to tell.
    #[serde(rename = "insufficient data")]
    InsufficientData,
    /// Identity facts differ: no verdict is meaningful.
    #[serde(rename = "environment changed")]
    EnvironmentChanged,
    /// The benchmark is on one side only (listed in `unpaired_*`, counted
    /// in the summary, never a row).
    #[serde(rename = "not compared")]
    NotCompared,
}

impl VerdictLabel {
    /// Every verdict, in the order summaries count them (`not compared` last).
    pub const ALL: [VerdictLabel; 7] = [
        VerdictLabel::Regressed,
        VerdictLabel::Improved,
        VerdictLabel::NoChange,
        VerdictLabel::Inconclusive,
        VerdictLabel::InsufficientData,
        VerdictLabel::EnvironmentChanged,
        VerdictLabel::NotCompared,
    ];

    /// The label as every output writes it (the JSON name): the one
    /// mapping of verdicts to words, which compare's rows and explain's
    /// tables print through.
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictLabel::Regressed => "regressed",
            VerdictLabel::Improved => "improved",
            VerdictLabel::NoChange => "no change",
            VerdictLabel::Inconclusive => "inconclusive",
            VerdictLabel::InsufficientData => "insufficient data",
            VerdictLabel::EnvironmentChanged => "environment changed",
            VerdictLabel::NotCompared => "not compared",
        }
    }
}

impl std::fmt::Display for VerdictLabel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Rows per verdict.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VerdictCounts {
    /// `regressed` rows.
    pub regressed: usize,
    /// `improved` rows.
    pub improved: usize,
    /// `no change` rows.
    #[serde(rename = "no change")]
    pub no_change: usize,
    /// `inconclusive` rows.
    pub inconclusive: usize,
    /// `insufficient data` rows.
    #[serde(rename = "insufficient data")]
    pub insufficient_data: usize,
    /// `environment changed` rows.
    #[serde(rename = "environment changed")]
    pub environment_changed: usize,
    /// Benchmarks on one side only: `not compared`.
    #[serde(rename = "not compared", default)]
    pub not_compared: usize,
}

impl VerdictCounts {
    /// Counts one row of this verdict.
    pub fn add(&mut self, v: VerdictLabel) {
        *match v {
            VerdictLabel::Regressed => &mut self.regressed,
            VerdictLabel::Improved => &mut self.improved,
            VerdictLabel::NoChange => &mut self.no_change,
            VerdictLabel::Inconclusive => &mut self.inconclusive,
            VerdictLabel::InsufficientData => &mut self.insufficient_data,
            VerdictLabel::EnvironmentChanged => &mut self.environment_changed,
            VerdictLabel::NotCompared => &mut self.not_compared,
        } += 1;
    }
}
