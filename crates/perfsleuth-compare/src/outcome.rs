//! What a comparison produces: its rows, their verdicts, and the gate CI
//! reads from them.

use crate::noise::Noise;
use crate::stacks::TimeMove;
use perfsleuth_env::Change;
use perfsleuth_model::ImpactClass;
use perfsleuth_model::Metric;
use perfsleuth_model::schema::VerdictLabel;
use perfsleuth_stats::RelativeChange;
use perfsleuth_stats::Verdict;
use std::collections::BTreeMap;

/// The label of the verdict rule's answer: the rule's five verdicts are a
/// part of the one vocabulary ([`VerdictLabel`], with its one text), which
/// adds what a comparison says besides (`environment changed`, `not
/// compared`). `perfsleuth-stats` depends on no crate, so its `Verdict`
/// cannot be that type.
pub fn label(v: Verdict) -> VerdictLabel {
    match v {
        Verdict::Regressed => VerdictLabel::Regressed,
        Verdict::Improved => VerdictLabel::Improved,
        Verdict::NoChange => VerdictLabel::NoChange,
        Verdict::Inconclusive => VerdictLabel::Inconclusive,
        Verdict::InsufficientData => VerdictLabel::InsufficientData,
    }
}

/// One benchmark and metric compared.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Benchmark name.
    pub benchmark: String,
    /// Its parameter values (part of the pairing key).
    pub parameters: BTreeMap<String, String>,
    /// The metric compared.
    pub metric: Metric,
    /// Whether this metric gates for this benchmark (see [`any_gating_regression`]).
    pub gating: bool,
    /// Median of all baseline samples pooled, in the metric's unit (NaN without samples).
    pub baseline_median: f64,
    /// Median of all candidate samples pooled (NaN without samples).
    pub candidate_median: f64,
    /// Baseline samples, all runs together.
    pub n_baseline: usize,
    /// Candidate samples, all runs together.
    pub n_candidate: usize,
    /// Relative change of the median with its 95 % bootstrap CI; `None` when it cannot be computed.
    pub change: Option<RelativeChange>,
    /// Two-sided Mann–Whitney U p-value on the pooled samples.
    pub p_value: Option<f64>,
    /// Benjamini–Hochberg adjusted p-value (gating metrics, when FDR control applied).
    pub p_adjusted: Option<f64>,
    /// The verdict.
    pub verdict: VerdictLabel,
    /// Explanations attached to this row (attribution, why data is insufficient).
    pub notes: Vec<String>,
    /// The between-run noise of a difference between these two sides (95 %,
    /// relative): `change.ci` is at least this wide around the change; 0
    /// where no noise applies.
    pub band: f64,
    /// The between-run noise behind `band`, learned or assumed; `None` for
    /// exact (simulated) counts and metrics that do not drift with the machine.
    pub noise: Option<Noise>,
    /// Simulation: the functions whose own cost of this event moved most,
    /// biggest first (at most [`FUNCTIONS_SHOWN`]); empty otherwise.
    pub functions: Vec<FunctionMove>,
    /// Wall time, both sides profiled (`--profile`), a judged change: the
    /// functions whose on-CPU time moved most, biggest first (at most
    /// [`FUNCTIONS_SHOWN`]); empty otherwise.
    pub time_functions: Vec<TimeMove>,
}

/// One benchmark's stacks on both sides, folded per run (on-CPU µs, or
/// samples where a side has no sampling period).
#[derive(Debug, Clone, PartialEq)]
pub struct Flame {
    /// The pairing key, as rows show it.
    pub key: String,
    /// The baseline's folded stacks.
    pub before: String,
    /// The candidate's folded stacks.
    pub after: String,
    /// Their counts' unit (µs or samples a run).
    pub unit: &'static str,
}

/// Functions kept per row in [`Row::functions`].
pub const FUNCTIONS_SHOWN: usize = 10;

/// One function's own cost of an event on both sides.
#[derive(Debug, Clone, PartialEq)]
pub struct FunctionMove {
    /// Function name as callgrind wrote it.
    pub function: String,
    /// Its object's file name (`libc.so.6`, the program).
    pub object: String,
    /// Self cost in the baseline.
    pub baseline: f64,
    /// Self cost in the candidate.
    pub candidate: f64,
}

impl Row {
    /// The pairing key as shown: `name` or `name [k=v, …]`.
    pub fn key(&self) -> String {
        benchmark_key(&self.benchmark, &self.parameters)
    }

    /// The p-value the verdict used: adjusted when FDR control applied.
    pub fn p_shown(&self) -> Option<f64> {
        self.p_adjusted.or(self.p_value)
    }
}

/// The result of comparing a candidate with its baseline.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Label of the baseline side.
    pub baseline: String,
    /// Label of the candidate side.
    pub candidate: String,
    /// Identity and performance facts that differ, baseline → candidate (newest run of each side).
    pub env_changes: Vec<Change>,
    /// Whether any identity fact differs: then every verdict is `environment changed`.
    pub identity_changed: bool,
    /// One row per paired benchmark and metric, candidate order.
    pub rows: Vec<Row>,
    /// The benchmarks both sides profiled (`--profile`), for a
    /// differential flame graph each.
    pub flames: Vec<Flame>,
    /// Keys of benchmarks found only in the baseline.
    pub unpaired_baseline: Vec<String>,
    /// Keys of benchmarks found only in the candidate.
    pub unpaired_candidate: Vec<String>,
    /// Whether gating p-values were adjusted by Benjamini–Hochberg.
    pub fdr_applied: bool,
    /// Notes on the comparison as a whole (mixed machines within a side, partial runs, …).
    pub notes: Vec<String>,
    /// The level of every row's interval (1 − the α it was judged at: 95 %,
    /// or more at a later look of an extended comparison).
    pub confidence: f64,
}

impl Comparison {
    /// How many p-values the Benjamini–Hochberg adjustment covered.
    pub fn fdr_comparisons(&self) -> usize {
        self.rows.iter().filter(|r| r.p_adjusted.is_some()).count()
    }

    /// The performance-class changes among `env_changes`.
    pub fn performance_changes(&self) -> impl Iterator<Item = &Change> {
        self.env_changes
            .iter()
            .filter(|c| c.class == ImpactClass::Performance)
    }
}

/// The note on a changed row when the benchmarked binary is the same on both sides.
pub const SAME_BINARY_NOTE: &str = "same binary, different result — environment or noise, not code";

/// The sentence that opens every report whose sides ran on different machines.
pub const MACHINES_DIFFER: &str = "The machines differ: results are not comparable; every verdict is marked `environment changed`.";

/// Whether a gating metric of any benchmark regressed (what `--fail-on regressed` checks).
pub fn any_gating_regression(c: &Comparison) -> bool {
    gating_regressions(c).next().is_some()
}

/// Whether a gating row is inconclusive: more samples would decide it.
pub fn any_gating_inconclusive(c: &Comparison) -> bool {
    c.rows
        .iter()
        .any(|r| r.gating && r.verdict == VerdictLabel::Inconclusive)
}

/// The gating rows that regressed.
pub(crate) fn gating_regressions(c: &Comparison) -> impl Iterator<Item = &Row> {
    c.rows
        .iter()
        .filter(|r| r.gating && r.verdict == VerdictLabel::Regressed)
}

/// What a `--fail-on regressed` gate concludes about a comparison.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gate {
    /// Every benchmark of the baseline was compared and none regressed.
    Pass,
    /// These gating rows (benchmark keys and metrics) regressed.
    Regressed(Vec<String>),
    /// These benchmarks of the baseline are missing from the candidate: a
    /// gate that passed them would pass without looking.
    Missing(Vec<String>),
    /// The two sides share no benchmark at all.
    NothingShared,
}

impl Gate {
    /// Whether the gate fails (exit 1).
    pub fn fails(&self) -> bool {
        !matches!(self, Gate::Pass)
    }

    /// One line saying why the gate failed; `None` when it passed.
    pub fn reason(&self) -> Option<String> {
        let list = |v: &[String]| {
            let shown: Vec<&str> = v.iter().take(5).map(String::as_str).collect();
            let more = v.len().saturating_sub(shown.len());
            let tail = if more > 0 {
                format!(" and {more} more")
            } else {
                String::new()
            };
            format!("`{}`{tail}", shown.join("`, `"))
        };
        match self {
            Gate::Pass => None,
            Gate::Regressed(rows) => Some(format!("gate failed: {} regressed", list(rows))),
            Gate::Missing(keys) => Some(format!(
                "gate failed: {} of the baseline {} not in the candidate (pass --allow-missing to accept that)",
                list(keys),
                if keys.len() == 1 { "is" } else { "are" }
            )),
            Gate::NothingShared => Some(
                "gate failed: the two sides share no benchmark, so nothing was compared (pass --allow-missing to accept that)"
                    .to_string(),
            ),
        }
    }
}

/// The `--fail-on regressed` gate: fails on a gating regression, and — unless
/// `allow_missing` — when a benchmark of the baseline is missing from the
/// candidate or the sides share none, so that a gate never passes silently.
pub fn gate(c: &Comparison, allow_missing: bool) -> Gate {
    let regressed: Vec<String> = gating_regressions(c)
        .map(|r| format!("{} {}", r.key(), r.metric.name()))
        .collect();
    if !regressed.is_empty() {
        return Gate::Regressed(regressed);
    }
    if allow_missing {
        return Gate::Pass;
    }
    if c.rows.is_empty() {
        return Gate::NothingShared;
    }
    if !c.unpaired_baseline.is_empty() {
        return Gate::Missing(c.unpaired_baseline.clone());
    }
    Gate::Pass
}

/// `name`, or `name [k=v, …]` when the benchmark has parameters.
pub fn benchmark_key(name: &str, parameters: &BTreeMap<String, String>) -> String {
    // A `--variant` benchmark's name already ends in its set-up
    // (`./bench [fast]`): its `variant` parameter is not said twice.
    let params: Vec<String> = parameters
        .iter()
        .filter(|(k, v)| !(k.as_str() == "variant" && name.ends_with(&format!(" [{v}]"))))
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    if params.is_empty() {
        return name.to_string();
    }
    format!("{name} [{}]", params.join(", "))
}

/// The benchmark names `key` (a name, or a [`benchmark_key`] with its
/// parameters) may stand for: itself, and what comes before each ` [`.
pub fn key_names(key: &str) -> Vec<String> {
    let mut names = vec![key.to_string()];
    names.extend(key.match_indices(" [").map(|(i, _)| key[..i].to_string()));
    names
}

/// Whether a verdict says the benchmark moved.
pub(crate) fn changed(v: VerdictLabel) -> bool {
    matches!(v, VerdictLabel::Regressed | VerdictLabel::Improved)
}
