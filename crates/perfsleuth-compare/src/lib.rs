//! `perfsleuth compare`: pairs the benchmarks of a baseline and a candidate,
//! states for every benchmark and metric whether it changed (relative change
//! of the median with a bootstrap CI, a rank-test p-value, the verdict rule),
//! attributes changes to the environment where the machines differ, and
//! renders the result for a terminal, a pull request (Markdown) or a program
//! (JSON).
//!
//! Everything here is pure: the caller loads the runs, this crate never
//! touches the store, the clock or the terminal.

#![forbid(unsafe_code)]

mod allocs;
mod format;
mod html;
mod json;
mod junit;
mod render;
mod stacks;

pub use html::{changes_chart, render_html};
pub use json::{SCHEMA, SCHEMA_VERSION, to_json};
pub use junit::render_junit;
pub use render::{render_github_annotations, render_markdown, render_terminal};
pub use stacks::{TimeMove, time_attribution, time_moves};

use perfsleuth_env::Change;
pub use perfsleuth_model::schema::VerdictLabel;
use perfsleuth_model::{
    Environment, ImpactClass, Metric, Mode, Profile, ReportedSummary, Run, Sample,
};
use perfsleuth_stats::{
    Evidence, Interval, RelativeChange, Verdict, VerdictRule, bh_adjusted, decide, mann_whitney_u,
    median, smallest_p,
};
use std::collections::{BTreeMap, HashMap, HashSet};

/// One side of a comparison: a label and the runs it consists of.
#[derive(Debug, Clone, PartialEq)]
pub struct Side {
    /// How the side is named in reports ("run 12", "main", "abc1234").
    pub label: String,
    /// Its runs; several runs are repeated runs of the same revision, and
    /// an empty list is treated as a side without benchmarks.
    pub runs: Vec<Run>,
}

/// Per-benchmark overrides of [`Options`] (from a config file); `None` keeps the global value.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct BenchmarkOptions {
    /// Significance level for this benchmark, replacing `Options::rule.alpha`.
    pub alpha: Option<f64>,
    /// Noise threshold for this benchmark, replacing `Options::rule.noise_threshold`.
    pub threshold: Option<f64>,
    /// Gating metrics for this benchmark, replacing `Options::gating`.
    pub metrics: Option<Vec<Metric>>,
}

/// What to compare and how strictly.
#[derive(Debug, Clone, PartialEq)]
pub struct Options {
    /// The verdict rule: alpha 0.05, noise threshold 1 %, at least 3 samples per side.
    pub rule: VerdictRule,
    /// Metrics whose regression fails a CI gate (default: wall time). Wall
    /// time stands for the judged time: a benchmark that keeps one CPU busy
    /// without waiting is judged on CPU time instead
    /// ([`perfsleuth_model::judged_time`]).
    pub gating: Vec<Metric>,
    /// Metrics shown, in this order (default: wall, CPU time, peak RSS);
    /// gating metrics are always shown. User and system time are shown on
    /// request: the kernel splits the exact CPU time between them in ticks.
    pub metrics: Vec<Metric>,
    /// Overrides keyed by benchmark name.
    pub per_benchmark: BTreeMap<String, BenchmarkOptions>,
    /// False discovery rate for Benjamini–Hochberg over the gating p-values
    /// when more than one benchmark is paired (default `Some(0.05)`; `None` turns it off).
    pub fdr_q: Option<f64>,
    /// Bootstrap resamples per comparison (default `perfsleuth_stats::RESAMPLES`;
    /// fewer only in quick tests). The seed is `perfsleuth_stats::SEED`.
    pub resamples: usize,
    /// Same-binary history keyed by benchmark key: each entry one earlier
    /// run's samples of that benchmark, with the same binary hash and
    /// arguments, in the same mode, on the same machine class (the store
    /// finds them). With [`MIN_HISTORY`] or more, their spread is the
    /// between-run noise a change must exceed.
    pub history: BTreeMap<String, Vec<Vec<Sample>>>,
    /// The user declined the same-binary history (`--no-history`): the
    /// notes say so instead of "no same-binary runs stored".
    pub history_declined: bool,
    /// Without enough history, assume a between-run noise from what the
    /// fingerprint says about the machine ([`prior_noise`]); off only in
    /// tests of the rule itself.
    pub prior: bool,
    /// The sides were measured interleaved (`ab`, `run --variant`,
    /// `explain`'s experiments): judged on the adjacent runs of both sides
    /// ([`perfsleuth_stats::estimate_pairs`]), which cancel the drift
    /// between runs, rounds and moments.
    pub paired: bool,
    /// Wall time in `gating` stands for the judged time: CPU time for a
    /// benchmark that keeps one CPU busy without waiting
    /// ([`perfsleuth_model::judged_time`]). Default on; off when the user
    /// named the gating metrics, who then gets exactly those.
    pub judge_time: bool,
    /// Rows of sides whose identity facts differ get the verdict
    /// `environment changed` instead of the rule's (default). Off only for
    /// `explain`, which needs the rule's verdict on a difference between
    /// machines to have something to explain.
    pub machine_override: bool,
    /// The user set the threshold (command line or config file): it then
    /// applies as given everywhere. Unset, sides measured interleaved flag
    /// changes beyond the in-run floor and call no change within the
    /// threshold ([`paired`]).
    pub threshold_given: bool,
}

impl Default for Options {
    fn default() -> Options {
        Options {
            rule: VerdictRule::default(),
            gating: vec![Metric::Wall],
            metrics: vec![Metric::Wall, Metric::Cpu, Metric::PeakRss],
            per_benchmark: BTreeMap::new(),
            fdr_q: Some(0.05),
            resamples: perfsleuth_stats::RESAMPLES,
            history: BTreeMap::new(),
            history_declined: false,
            prior: true,
            paired: false,
            judge_time: true,
            machine_override: true,
            threshold_given: false,
        }
    }
}

impl Options {
    /// The level of every interval judged under these options: 1 − α, so
    /// the interval and the verdict's test speak of one error rate.
    pub fn confidence(&self) -> f64 {
        1.0 - self.rule.alpha
    }

    /// These options at look `look` of a comparison that may be extended
    /// (`ab`, `run --baseline`): α spent in halves over the looks
    /// ([`perfsleuth_stats::look_alpha`]). `None`: a comparison made once,
    /// at the full α.
    pub fn at_look(&self, look: Option<u32>) -> Options {
        let mut opts = self.clone();
        if let Some(look) = look {
            opts.rule.alpha = perfsleuth_stats::look_alpha(self.rule.alpha, look);
        }
        opts
    }
}

/// The note on the level a comparison that may be extended was judged at
/// (`None` for one made once, at the full α).
pub fn look_note(look: Option<u32>, alpha: f64) -> Option<String> {
    let look = look?;
    let spent = perfsleuth_stats::look_alpha(alpha, look);
    Some(format!(
        "judged at look {} with α = {spent} ({} intervals): a comparison that may go on measuring spends α = {alpha} in halves over its looks (α/2, α/4, …), so looking again cannot add false alarms (docs/STATISTICS.md §8.7)",
        look + 1,
        perfsleuth_model::quantity::format_level(1.0 - spent)
    ))
}

/// Same-binary runs needed before their spread counts as the learned noise.
pub const MIN_HISTORY: usize = 5;

/// The between-run noise of one benchmark and metric: how far one run's
/// median strays when nothing changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Noise {
    /// Relative standard deviation of one run's median.
    pub sd: f64,
    /// The factor that makes `sd` a 95 % band: Student's t with runs − 1
    /// degrees of freedom for a learned spread, the normal 1.96 for a prior.
    pub q: f64,
    /// Same-binary runs it was learned from; 0 for a prior.
    pub runs: usize,
    /// Where it comes from, as the report says it.
    pub source: String,
}

impl Noise {
    /// An assumed noise raised to the spread the runs' own rounds show, when
    /// that is larger: on a machine whose speed wanders, a stretch of one
    /// run strays about as far as a whole run (STATISTICS.md §6.1).
    fn at_least(self, spread: f64) -> Noise {
        if spread <= self.sd {
            return self;
        }
        Noise {
            sd: spread,
            source: format!(
                "assumed from the spread of these runs' rounds, above the {:.1}% {}",
                100.0 * self.sd,
                self.source
            ),
            ..self
        }
    }

    /// The 95 % band of one run's median: "±x %".
    pub fn one_run(&self) -> f64 {
        self.q * self.sd
    }

    /// The 95 % band of a difference between sides made of `wb` and `wc`
    /// independent stretches of measuring (runs, or default-length parts of
    /// an extended run): what a change must exceed besides the threshold.
    pub fn band(&self, wb: f64, wc: f64) -> f64 {
        self.q * self.sd * (1.0 / wb.max(1.0) + 1.0 / wc.max(1.0)).sqrt()
    }
}

/// One common step of the machine: two or more relative changes of
/// byte-identical programs, all the same way, the largest at most twice the
/// smallest. Returns their range, or `None` when they are not one step.
/// `compare` applies it to the rows of two runs, `history` to the change
/// points of its series at one run.
pub fn common_step(changes: &[f64]) -> Option<(f64, f64)> {
    let (lo, hi) = changes
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
            (l.min(x), h.max(x))
        });
    let one = changes.len() >= 2
        && lo * hi > 0.0
        && hi.abs().max(lo.abs()) <= 2.0 * hi.abs().min(lo.abs());
    one.then_some((lo, hi))
}

/// Points from which a series' own noise is trusted alone: below it, at
/// least the machine's assumed noise ([`prior_noise`]) counts, since a
/// spread estimated from a handful of runs is often far too small and would
/// let noise through (docs/HISTORY.md, "Validation on this machine").
pub const LEARN_POINTS: usize = 20;

/// The one rule for a benchmark's between-run noise, applied by `compare`,
/// `history` and `run --repeat` alike: from [`MIN_HISTORY`] run medians
/// (oldest first) on, the robust spread of consecutive ones
/// ([`perfsleuth_stats::relative_noise`], which a step in the series barely
/// moves), raised to `prior` below [`LEARN_POINTS`]; with fewer, `prior`.
/// `what` names the medians in the source ("same-binary runs", "points").
pub fn series_noise(medians: &[f64], prior: Option<Noise>, what: &str) -> Option<Noise> {
    let n = medians.len();
    let learned = if n >= MIN_HISTORY {
        perfsleuth_stats::relative_noise(medians)
    } else {
        None
    };
    match (learned, prior) {
        (Some(l), Some(p)) if n < LEARN_POINTS && p.sd > l => Some(Noise {
            runs: n,
            source: format!(
                "{}, above the {} the {n} {what} show",
                p.source,
                percent_text(l)
            ),
            ..p
        }),
        (Some(l), _) => Some(Noise {
            sd: l,
            q: perfsleuth_stats::t_quantile(0.975, (n - 1) as f64),
            runs: n,
            source: format!("learned from {n} {what}"),
        }),
        (None, p) => p,
    }
}

/// The noise learned from same-binary runs (each run's samples, newest
/// first, as the store returns them) by [`series_noise`].
pub fn history_noise(runs: &[Vec<Sample>], metric: Metric, prior: Option<Noise>) -> Option<Noise> {
    let medians: Vec<f64> = runs
        .iter()
        .rev()
        .filter_map(|r| {
            let v: Vec<f64> = r
                .iter()
                .map(|s| metric.of(s))
                .filter(|v| v.is_finite())
                .collect();
            median(&v)
        })
        .collect();
    series_noise(&medians, prior, "same-binary runs")
}

/// "±2.5 % per run (σ, assumed for a virtual machine)": one noise figure,
/// worded the same wherever it is shown.
pub fn noise_text(sd: f64, source: &str) -> String {
    format!("±{} per run (σ, {source})", percent_text(sd))
}

fn percent_text(x: f64) -> String {
    perfsleuth_model::quantity::format_share(x, 1)
}

/// The between-run noise assumed without history, from the machine's
/// fingerprint (STATISTICS.md §6): 1 % for a machine that shows no source
/// of drift; 2.5 % for a virtual machine or container; 5 % for one that
/// also has its CPU time stolen or contended (the shared cloud guest, whose
/// run-to-run offsets measured 4–8 % there).
pub fn prior_noise(env: &Environment) -> Noise {
    let known = |k: &str| {
        env.get(k)
            .filter(|v| !v.is_empty() && *v != perfsleuth_model::UNKNOWN && *v != "none")
    };
    let number = |k: &str| known(k).and_then(|v| v.parse::<f64>().ok());
    let mut guest: Vec<&str> = Vec::new();
    if known("virt.hypervisor").is_some() {
        guest.push("a virtual machine");
    }
    if known("virt.container").is_some() {
        guest.push("a container");
    }
    let mut shared: Vec<&str> = Vec::new();
    if number("noise.steal_pct").is_some_and(|v| v >= 1.0) {
        shared.push("stolen CPU time");
    }
    if number("noise.psi.cpu.some_avg10").is_some_and(|v| v >= 10.0) {
        shared.push("CPU pressure");
    }
    let (sd, source) = match (guest.is_empty(), shared.is_empty()) {
        (true, true) => (
            0.01,
            "assumed for a machine without known drift".to_string(),
        ),
        (false, true) => (0.025, format!("assumed for {}", guest.join(", "))),
        (true, false) => (0.025, format!("assumed for {}", shared.join(", "))),
        (false, false) => (
            0.05,
            format!(
                "assumed for {} with {}",
                guest.join(", "),
                shared.join(", ")
            ),
        ),
    };
    Noise {
        sd,
        q: perfsleuth_stats::normal_quantile(0.975),
        runs: 0,
        source,
    }
}

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
fn gating_regressions(c: &Comparison) -> impl Iterator<Item = &Row> {
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

/// One benchmark on one side: its samples grouped by run, and the facts of
/// the first occurrence (the binary hash).
struct Entry<'a> {
    name: &'a str,
    parameters: &'a BTreeMap<String, String>,
    facts: &'a Environment,
    /// The arguments actually executed: "same binary" also needs the same arguments.
    argv: &'a [String],
    /// One group per run and round that contains the benchmark (a run
    /// without samples gives one empty group).
    groups: Vec<Vec<&'a Sample>>,
    /// The newest per-function profile (simulation mode).
    profile: Option<&'a Profile>,
    /// The sampled stacks of each run that profiled it (`--profile`).
    stacks: Vec<&'a perfsleuth_model::StackProfile>,
    /// The allocation profile of each run that recorded it (`--profile=alloc`).
    allocs: Vec<&'a perfsleuth_model::AllocProfile>,
    /// What a tool reported where it kept no samples (summary-only imports).
    summaries: &'a [perfsleuth_model::ReportedSummary],
    /// Independent stretches of measuring: one per run, more for a run
    /// that measured more rounds than it was asked to (`run --baseline`
    /// extending while inconclusive).
    windows: f64,
}

/// How many default-length stretches a run's samples span: its rounds over
/// the rounds it was asked for, at least 1.
fn windows_of(run: &Run, samples: &[Sample]) -> f64 {
    let asked = run
        .options
        .get("rounds")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(1)
        .max(1);
    let measured = samples.iter().map(|s| s.round).max().map_or(1, |r| r + 1);
    (f64::from(measured) / asked as f64).max(1.0)
}

/// A side's benchmarks keyed by (name, parameters), in order of first
/// appearance, with an index: found by key in constant time, so comparing
/// 100 000 benchmarks stays linear (it was quadratic, issue 37).
struct Entries<'a> {
    list: Vec<Entry<'a>>,
    index: HashMap<(&'a str, &'a BTreeMap<String, String>), usize>,
}

impl<'a> Entries<'a> {
    /// The position of the benchmark `name` with `parameters`.
    fn find(&self, name: &str, parameters: &BTreeMap<String, String>) -> Option<usize> {
        self.index.get(&(name, parameters)).copied()
    }

    /// The entry of a row's benchmark.
    fn of(&self, row: &Row) -> Option<&Entry<'a>> {
        self.find(&row.benchmark, &row.parameters)
            .map(|i| &self.list[i])
    }

    /// The sampled stacks of a row's benchmark, one per profiled run.
    fn stacks_of(&self, row: &Row) -> Vec<&'a perfsleuth_model::StackProfile> {
        self.of(row).map(|e| e.stacks.clone()).unwrap_or_default()
    }

    /// The allocation profiles of a row's benchmark, one per profiled run.
    fn allocs_of(&self, row: &Row) -> Vec<&'a perfsleuth_model::AllocProfile> {
        self.of(row).map(|e| e.allocs.clone()).unwrap_or_default()
    }
}

/// The benchmarks of a side keyed by (name, parameters), in order of first appearance.
fn collect(side: &Side) -> Entries<'_> {
    let mut entries = Entries {
        list: Vec::new(),
        index: HashMap::new(),
    };
    for run in &side.runs {
        // Positions of entries already given a group from this run, so a
        // benchmark listed twice in one run adds to the same group.
        let mut seen_in_run: Vec<usize> = Vec::new();
        let mut seen: HashSet<usize> = HashSet::new();
        for b in &run.benchmarks {
            let idx = match entries.find(&b.name, &b.parameters) {
                Some(i) => i,
                None => {
                    entries.list.push(Entry {
                        name: &b.name,
                        parameters: &b.parameters,
                        facts: &b.facts,
                        argv: &b.argv,
                        groups: Vec::new(),
                        profile: None,
                        stacks: Vec::new(),
                        allocs: Vec::new(),
                        summaries: &b.summaries,
                        windows: 0.0,
                    });
                    let i = entries.list.len() - 1;
                    entries.index.insert((&b.name, &b.parameters), i);
                    i
                }
            };
            let entry = &mut entries.list[idx];
            if b.profile.is_some() {
                entry.profile = b.profile.as_ref();
            }
            if let Some(stacks) = &b.stacks {
                entry.stacks.push(stacks);
            }
            if let Some(allocs) = &b.allocs {
                entry.allocs.push(allocs);
            }
            if !b.summaries.is_empty() {
                entry.summaries = &b.summaries;
            }
            if seen.insert(idx) {
                seen_in_run.push(idx);
                entry.groups.push(b.samples.iter().collect());
                entry.windows += windows_of(run, &b.samples);
            } else if let Some(g) = entry.groups.last_mut() {
                g.extend(b.samples.iter());
            }
        }
        // A run's samples, split by round: rounds lie at different times,
        // and the machine's speed wanders between them (STATISTICS.md §4.3).
        for &idx in &seen_in_run {
            if let Some(g) = entries.list[idx].groups.pop() {
                entries.list[idx].groups.extend(by_round(g));
            }
        }
    }
    entries
}

/// Samples grouped by their round ([`perfsleuth_model::by_round`]); one
/// empty group for a run without samples.
fn by_round(samples: Vec<&Sample>) -> Vec<Vec<&Sample>> {
    let rounds = perfsleuth_model::by_round(samples);
    if rounds.is_empty() {
        return vec![Vec::new()];
    }
    rounds
}

fn binary_hash(b: &Environment) -> Option<&str> {
    b.get("binary.sha256")
        .filter(|h| !h.is_empty() && *h != perfsleuth_model::UNKNOWN)
}

/// The newest run of a side by start time (the later one in the list on a tie).
pub fn newest(side: &Side) -> Option<&Run> {
    side.runs
        .iter()
        .enumerate()
        .max_by(|(i, a), (j, b)| a.started_at.cmp(&b.started_at).then(i.cmp(j)))
        .map(|(_, r)| r)
}

/// A side's environment without facts about the benchmarked program, which
/// describe the code under test, not the machine.
fn machine_env(env: &Environment) -> Environment {
    Environment {
        facts: env
            .facts
            .iter()
            .filter(|(k, _)| !k.starts_with("binary."))
            .map(|(k, f)| (k.clone(), f.clone()))
            .collect(),
    }
}

fn run_label(run: &Run, index: usize) -> String {
    match run.id {
        Some(id) => format!("run {id}"),
        None => format!("run #{}", index + 1),
    }
}

/// Notes on runs of one side that disagree with each other or are partial.
fn side_notes(which: &str, side: &Side, notes: &mut Vec<String>) {
    if side.runs.is_empty() {
        notes.push(format!(
            "the {which} side ({}) has no runs: nothing to compare",
            side.label
        ));
        return;
    }
    for (i, run) in side.runs.iter().enumerate() {
        if run.status != perfsleuth_model::RunStatus::Complete {
            notes.push(format!(
                "{which} {} is {}: its samples may be partial",
                run_label(run, i),
                run.status
            ));
        }
    }
    let Some(first) = side.runs.first() else {
        return;
    };
    let first_env = machine_env(&first.environment);
    for class in [ImpactClass::Identity, ImpactClass::Performance] {
        let mut keys: Vec<String> = Vec::new();
        let mut others: Vec<String> = Vec::new();
        for (i, run) in side.runs.iter().enumerate().skip(1) {
            let changes = perfsleuth_env::diff(&first_env, &machine_env(&run.environment));
            let mut differs = false;
            for c in changes.iter().filter(|c| c.class == class) {
                differs = true;
                if !keys.contains(&c.key) {
                    keys.push(c.key.clone());
                }
            }
            if differs {
                others.push(run_label(run, i));
            }
        }
        if keys.is_empty() {
            continue;
        }
        let what = if class == ImpactClass::Identity {
            "ran on different machines"
        } else {
            "differ in performance-relevant settings"
        };
        notes.push(format!(
            "runs within the {which} side {what} ({} vs {}: {})",
            run_label(first, 0),
            others.join(", "),
            list_keys(&keys, 4)
        ));
    }
}

/// Where a side's numbers came from: "criterion.rs (imported)" for a run
/// `perfsleuth import` stored, "perfsleuth" for a measured one.
fn origin(side: &Side) -> String {
    let Some(run) = side.runs.first() else {
        return "perfsleuth".into();
    };
    if run.origin() == perfsleuth_model::RunOrigin::Import {
        let tool = run.options["import"]["tool"]
            .as_str()
            .unwrap_or("another tool");
        format!("{tool} (imported)")
    } else {
        "perfsleuth".into()
    }
}

/// A note when the two sides were measured by different tools (an
/// imported criterion run against a measured one): allowed, since the names
/// match, but what a sample is may differ (an iteration, a process).
fn origin_note(baseline: &Side, candidate: &Side) -> Option<String> {
    let (b, c) = (origin(baseline), origin(candidate));
    (b != c).then(|| {
        format!(
            "the sides were measured by different tools (baseline: {b}, candidate: {c}); the benchmarks pair by name, but a sample may not mean the same on both (one iteration, one whole process)"
        )
    })
}

/// "a, b, c, d and 3 more".
fn list_keys(keys: &[String], max: usize) -> String {
    let shown: Vec<&str> = keys.iter().take(max).map(String::as_str).collect();
    let mut s = shown.join(", ");
    if keys.len() > max {
        s.push_str(&format!(" and {} more", keys.len() - max));
    }
    s
}

/// A stable 64-bit FNV-1a hash, to give each row its own bootstrap stream
/// that does not depend on the order of rows.
fn fnv1a(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in part.as_bytes().iter().chain(std::iter::once(&0xFF)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// The statistics of one (benchmark, metric) before any verdict.
struct Measured {
    baseline_median: f64,
    candidate_median: f64,
    n_baseline: usize,
    n_candidate: usize,
    change: Option<RelativeChange>,
    p_value: Option<f64>,
    notes: Vec<String>,
    /// Simulated counts (near-)identical within each side: the change is exact.
    exact: bool,
    /// How much this metric's stretches of measuring vary: the larger of the
    /// two sides' relative sd of their group medians (0 below 3 groups).
    spread: f64,
    /// For wall time: how the CPU time and the waiting moved beside it.
    cpu: Option<CpuShare>,
    /// Adjacent pairs of runs the paired estimate came from.
    pairs: Option<usize>,
}

/// What a wall-time change did to the CPU time: a program that got slower
/// in wall time but used no more CPU time, and did not wait more often, was
/// kept from running — by another process or the hypervisor (the machine),
/// not by its code.
#[derive(Debug, Clone, Copy, PartialEq)]
struct CpuShare {
    /// CPU time (user + sys) over wall time, all samples of a side.
    share_b: f64,
    share_c: f64,
    /// Relative change of the median CPU time per run. User and system time
    /// are split in scheduler ticks, but their sum is the scheduler's exact
    /// runtime, so it is judged to the microsecond.
    cpu_change: f64,
    /// Voluntary context switches per run (sleeps, I/O, lock waits).
    voluntary_b: f64,
    voluntary_c: f64,
}

impl CpuShare {
    fn of(base: &[Vec<&Sample>], cand: &[Vec<&Sample>]) -> Option<CpuShare> {
        let side = |groups: &[Vec<&Sample>]| -> Option<(f64, f64, f64)> {
            let samples: Vec<&Sample> = groups.iter().flatten().copied().collect();
            let wall: f64 = samples.iter().map(|s| Metric::Wall.of(s)).sum();
            let cpus: Vec<f64> = samples
                .iter()
                .map(|s| (s.user_ns + s.sys_ns) as f64)
                .collect();
            let vol = samples.iter().map(|s| s.voluntary_cs as f64).sum::<f64>();
            let n = samples.len() as f64;
            (wall > 0.0).then(|| {
                (
                    cpus.iter().sum::<f64>() / wall,
                    median(&cpus).unwrap_or(0.0),
                    vol / n,
                )
            })
        };
        let (b, c) = (side(base)?, side(cand)?);
        (b.1 > 0.0).then(|| CpuShare {
            share_b: b.0,
            share_c: c.0,
            cpu_change: c.1 / b.1 - 1.0,
            voluntary_b: b.2,
            voluntary_c: c.2,
        })
    }

    /// Why a wall-time `change` is the machine's, or `None`: one side kept
    /// about one CPU busy (50–105 % of its wall time: a CPU-bound,
    /// single-threaded program — a sleeping or multi-threaded one changes
    /// its share by itself), the share moved with the wall time, the CPU
    /// time moved by under a quarter of the wall time's change (either way:
    /// sharing a core costs a memory-bound program CPU time too, 12 % on the
    /// study's VM), and the voluntary context switches per run stayed within
    /// 10 % (or half a switch). A real change measured while the machine
    /// took the CPU is then not judged either: inconclusive, never wrong.
    fn explains(&self, change: f64, threshold: f64) -> Option<String> {
        let cpu_bound = (0.5..=1.05).contains(&self.share_b.max(self.share_c));
        let share_moved = if change > 0.0 {
            self.share_c < self.share_b
        } else {
            self.share_c > self.share_b
        };
        let cpu_still = self.cpu_change.abs() <= (change.abs() / 4.0).max(threshold);
        let waits_still =
            (self.voluntary_c - self.voluntary_b).abs() <= (0.1 * self.voluntary_b).max(0.5);
        (cpu_bound && share_moved && cpu_still && waits_still).then(|| {
            format!(
                "the machine, not the code: wall time {:+.1}% but CPU time {:+.1}%, and the program did not wait more often ({:.1} → {:.1} voluntary context switches a run); it was kept from running — it got {:.0}% of a CPU against {:.0}% — by other processes or the hypervisor (stolen time): not judged; rerun on a quieter machine, or compare in one run",
                100.0 * change,
                100.0 * self.cpu_change,
                self.voluntary_b,
                self.voluntary_c,
                100.0 * self.share_c,
                100.0 * self.share_b
            )
        })
    }
}

/// The relative standard deviation of the medians of groups with at least
/// 3 samples, or 0 when fewer than 3 such groups.
fn group_spread(groups: &[Vec<f64>]) -> f64 {
    let medians: Vec<f64> = groups
        .iter()
        .filter(|g| g.len() >= 3)
        .filter_map(|g| median(g))
        .collect();
    let n = medians.len();
    if n < 3 {
        return 0.0;
    }
    let mean = medians.iter().sum::<f64>() / n as f64;
    if mean <= 0.0 {
        return 0.0;
    }
    let var = medians.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    var.sqrt() / mean
}

fn measure(
    base: &[Vec<&Sample>],
    cand: &[Vec<&Sample>],
    metric: Metric,
    opts: &Options,
    seed: u64,
) -> Measured {
    let values = |groups: &[Vec<&Sample>]| -> Vec<Vec<f64>> {
        groups
            .iter()
            .map(|g| {
                g.iter()
                    .map(|s| metric.of(s))
                    .filter(|v| !v.is_nan())
                    .collect::<Vec<f64>>()
            })
            .filter(|g| !g.is_empty())
            .collect()
    };
    let (bg, cg) = (values(base), values(cand));
    let (bp, cp) = (bg.concat(), cg.concat());
    let mut m = Measured {
        baseline_median: median(&bp).unwrap_or(f64::NAN),
        candidate_median: median(&cp).unwrap_or(f64::NAN),
        n_baseline: bp.len(),
        n_candidate: cp.len(),
        change: None,
        p_value: mann_whitney_u(&bp, &cp).map(|t| t.p_value),
        notes: Vec::new(),
        exact: false,
        spread: group_spread(&bg).max(group_spread(&cg)),
        cpu: (metric == Metric::Wall)
            .then(|| CpuShare::of(base, cand))
            .flatten(),
        pairs: None,
    };
    if bp.is_empty() || cp.is_empty() {
        let which = match (bp.is_empty(), cp.is_empty()) {
            (true, true) => "either side",
            (true, false) => "the baseline side",
            _ => "the candidate side",
        };
        m.notes.push(format!("no samples on {which}"));
        return m;
    }
    // A deterministic program under simulation counts the same every run:
    // one run per side decides, and no test is needed.
    // Counts that wobble by a few instructions (a thread start, a signal) are
    // as good as exact when the wobble is far inside the noise threshold.
    let simulated = matches!(metric, Metric::Counter(c) if c.is_deterministic());
    let spread = |v: &[f64]| {
        let (lo, hi) = v
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), x| {
                (l.min(*x), h.max(*x))
            });
        if hi == lo { 0.0 } else { (hi - lo) / lo.abs() }
    };
    let wobble = spread(&bp).max(spread(&cp));
    if simulated && wobble <= 0.1 * opts.rule.noise_threshold {
        if wobble > 0.0 {
            m.notes.push(format!(
                "counts vary by up to {:.4}% within a side (the program is not quite deterministic), far inside the ±{}% threshold: judged on the medians",
                100.0 * wobble,
                100.0 * opts.rule.noise_threshold
            ));
        }
        let change = match (m.baseline_median, m.candidate_median) {
            (b, c) if b == c => Some(0.0),
            (0.0, _) => None,
            (b, c) => Some(c / b - 1.0),
        };
        match change {
            Some(change) => {
                m.exact = true;
                m.p_value = None;
                m.change = Some(RelativeChange::exact(change));
            }
            None => m
                .notes
                .push("baseline count is 0: a relative change is undefined".to_string()),
        }
        return m;
    }
    let min = opts.rule.min_samples;
    if bp.len() < min || cp.len() < min {
        m.notes.push(format!(
            "too few samples ({} vs {}; at least {min} per side needed)",
            bp.len(),
            cp.len()
        ));
    }
    if m.baseline_median == 0.0 {
        if bp.iter().chain(&cp).all(|&v| v == 0.0) {
            // All zero on both sides (sys time of a trivial program, an
            // unmeasured counter): no change at all, though not a ratio —
            // exactly, so no between-run noise widens it.
            m.exact = true;
            m.change = Some(RelativeChange {
                change: 0.0,
                ci: Interval { lo: 0.0, hi: 0.0 },
                resamples: 0,
            });
        } else {
            m.notes
                .push("baseline median is 0: a relative change is undefined".to_string());
        }
        return m;
    }
    let level = opts.confidence();
    m.change = if opts.paired {
        // The adjacent runs of both sides, each pair a few milliseconds
        // apart: the estimate and its test come from their ratios.
        let pairs: Vec<(f64, f64)> = perfsleuth_model::adjacent_pairs(base, cand)
            .into_iter()
            .map(|(b, c)| (metric.of(b), metric.of(c)))
            .collect();
        match perfsleuth_stats::estimate_pairs(&pairs, level) {
            Some(est) => {
                m.p_value = est.estimate.p_value;
                m.pairs = Some(est.pairs);
                est.estimate.change
            }
            None => {
                m.notes.push(format!(
                    "only {} adjacent pairs of runs with a usable value, too few for a {} interval of their median (at least {} independent ones needed at 95%): judged unpaired",
                    pairs
                        .iter()
                        .filter(|(b, c)| *b > 0.0 && *c > 0.0 && b.is_finite() && c.is_finite())
                        .count(),
                    perfsleuth_model::quantity::format_level(level),
                    perfsleuth_stats::MIN_PAIRS
                ));
                perfsleuth_stats::estimate(&bg, &cg, level, opts.resamples, seed).change
            }
        }
    } else {
        perfsleuth_stats::estimate(&bg, &cg, level, opts.resamples, seed).change
    };
    if m.change.is_none() {
        m.notes
            .push("the bootstrap gave no usable interval".to_string());
    }
    m
}

/// `f` over `items` on up to all CPUs, results in order. Worth it where
/// each item is a bootstrap of many samples; the work is pure, so only the
/// time changes.
fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let cpus = std::thread::available_parallelism().map_or(1, |n| n.get());
    if cpus <= 1 || items.len() <= 1 {
        return items.iter().map(f).collect();
    }
    // A thread per item while there are few (a benchmark's 3–5 metrics):
    // three bootstraps on two CPUs then take one and a half bootstraps'
    // time, not two.
    let chunk = if items.len() <= 4 * cpus {
        1
    } else {
        items.len().div_ceil(cpus)
    };
    let f = &f;
    std::thread::scope(|scope| {
        let handles: Vec<_> = items
            .chunks(chunk)
            .map(|part| scope.spawn(move || part.iter().map(f).collect::<Vec<R>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// What a row's verdict is decided from beside the row itself: how it was
/// measured, kept together so the judging loop reads one value per row.
#[derive(Debug, Clone, Copy)]
struct RowFacts {
    /// The metric is exact (simulation counts): no interval to widen.
    exact: bool,
    /// (baseline, candidate) run windows of the row's benchmark.
    windows: (f64, f64),
    /// The spread of the runs the estimate came from (for the prior noise).
    spread: f64,
    /// What the CPU time did, for a wall-time row.
    cpu: Option<CpuShare>,
    /// How it was judged when a side had only a tool's summary.
    kind: SummaryKind,
}

/// How a row was judged when a side had only a tool's summary.
#[derive(Debug, Clone, Copy, PartialEq)]
enum SummaryKind {
    /// From samples on both sides, as usual.
    None,
    /// Means, standard deviations and counts on both sides: Welch's t.
    Welch,
    /// Lower and upper bounds on both sides: the bands' overlap, whose
    /// half-widths (relative to each side's value) add up to this.
    Bands(f64),
    /// A bare figure on a side: no spread to judge by.
    Point,
}

/// Each side's summary of `metric` when at least one side has no samples
/// of it but a tool's summary: the summary, or for a side with samples
/// their mean, standard deviation and count.
fn summary_sides(
    be: &Entry<'_>,
    ce: &Entry<'_>,
    metric: Metric,
) -> Option<(ReportedSummary, ReportedSummary)> {
    let values = |e: &Entry<'_>| -> Vec<f64> {
        e.groups
            .iter()
            .flatten()
            .map(|s| metric.of(s))
            .filter(|v| v.is_finite())
            .collect()
    };
    let (vb, vc) = (values(be), values(ce));
    if !vb.is_empty() && !vc.is_empty() {
        return None;
    }
    let side = |e: &Entry<'_>, v: &[f64]| -> Option<ReportedSummary> {
        if let Some(s) = e.summaries.iter().find(|s| s.metric == metric.name()) {
            return Some(s.clone());
        }
        if v.is_empty() {
            return None;
        }
        let n = v.len() as f64;
        let mean = v.iter().sum::<f64>() / n;
        let sd = if v.len() > 1 {
            (v.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
        } else {
            f64::NAN
        };
        Some(ReportedSummary {
            metric: metric.name().to_string(),
            value: mean,
            kind: "mean".into(),
            lower: None,
            upper: None,
            stddev: sd.is_finite().then_some(sd),
            n: Some(v.len() as u64),
        })
    };
    Some((side(be, &vb)?, side(ce, &vc)?))
}

/// "mean 88.0 ± 1.2 sd (n = 10)" or "value 88.0 [87.0 … 90.2]": a summary as the note shows it.
fn describe_summary(s: &ReportedSummary, metric: Metric) -> String {
    let f = |v: f64| perfsleuth_report::format_metric(metric, v);
    let mut out = format!("{} {}", s.kind, f(s.value));
    if let Some(sd) = s.stddev {
        out.push_str(&format!(" ± {} sd", f(sd)));
    }
    if let (Some(l), Some(u)) = (s.lower, s.upper) {
        out.push_str(&format!(" [{} … {}]", f(l), f(u)));
    }
    if let Some(n) = s.n {
        out.push_str(&format!(" (n = {n})"));
    }
    out
}

/// A row from two summaries: Welch's t where both give a mean, spread and
/// count; the overlap of their bands where both give bounds; else the bare
/// change, which no rule can judge.
fn measure_summaries(
    b: &ReportedSummary,
    c: &ReportedSummary,
    metric: Metric,
    opts: &Options,
) -> (Measured, SummaryKind) {
    let mut m = Measured {
        baseline_median: b.value,
        candidate_median: c.value,
        n_baseline: b.n.unwrap_or(1) as usize,
        n_candidate: c.n.unwrap_or(1) as usize,
        change: None,
        p_value: None,
        notes: vec![format!(
            "summary only (a side has no samples): baseline {}, candidate {}",
            describe_summary(b, metric),
            describe_summary(c, metric)
        )],
        exact: false,
        spread: 0.0,
        cpu: None,
        pairs: None,
    };
    if !(b.value > 0.0 && c.value.is_finite()) {
        m.notes
            .push("baseline value is not above 0: a relative change is undefined".into());
        return (m, SummaryKind::Point);
    }
    let change = c.value / b.value - 1.0;
    let mean_sd = |s: &ReportedSummary| {
        Some(perfsleuth_stats::MeanSd {
            mean: s.value,
            sd: s.stddev?,
            n: s.n?,
        })
    };
    if let (Some(mb), Some(mc)) = (mean_sd(b), mean_sd(c))
        && let Some((est, p)) =
            perfsleuth_stats::welch_relative_change(mb, mc, 1.0 - opts.rule.alpha)
    {
        m.change = Some(est);
        m.p_value = Some(p);
        m.notes
            .push("judged by Welch's t on the reported means and spreads".into());
        return (m, SummaryKind::Welch);
    }
    let half = |s: &ReportedSummary| match (s.lower, s.upper) {
        (Some(l), Some(u)) if u >= l && s.value > 0.0 => Some((u - l) / 2.0 / s.value),
        _ => None,
    };
    m.change = Some(RelativeChange::exact(change));
    if let (Some(hb), Some(hc)) = (half(b), half(c)) {
        let band = hb + hc;
        if let Some(ch) = m.change.as_mut() {
            ch.ci = Interval {
                lo: change - band,
                hi: change + band,
            };
        }
        m.notes.push(format!(
            "judged by the overlap of the reported bounds (±{:.1}% together)",
            100.0 * band
        ));
        return (m, SummaryKind::Bands(band));
    }
    m.notes.push(
        "no spread reported on a side: the change cannot be told from noise (import results with their samples or bounds)"
            .into(),
    );
    (m, SummaryKind::Point)
}

fn stats_direction(metric: Metric) -> perfsleuth_stats::Direction {
    match metric.direction() {
        perfsleuth_model::Direction::Lower => perfsleuth_stats::Direction::LowerIsBetter,
        perfsleuth_model::Direction::Higher => perfsleuth_stats::Direction::HigherIsBetter,
    }
}

fn push_unique(list: &mut Vec<Metric>, m: Metric) {
    if !list.contains(&m) {
        list.push(m);
    }
}

/// What would decide an inconclusive row, in one line: for an interval that
/// reaches across a band edge, about how many more samples per side would
/// narrow it (its half-width falls like 1/√n) to clear the edge nearest the
/// estimate; for an interval beyond the band that the test does not back, that
/// the two disagree.
fn what_would_decide(change: &RelativeChange, p: f64, rule: VerdictRule, n: usize) -> String {
    let t = rule.noise_threshold;
    let e = rule.no_change_band();
    let (lo, hi) = (change.ci.lo, change.ci.hi);
    let pct = percent_text;
    if lo > t || hi < -t {
        return format!(
            "inconclusive: the CI lies beyond ±{} but the rank test is not significant (p = {}): measure more runs",
            pct(t),
            perfsleuth_report::format_p_value(p)
        );
    }
    let half = (hi - lo) / 2.0;
    // The estimate's distance from the edge it can clear soonest: beyond
    // the floor (a change) or inside the no-change band; the CI must shrink
    // to that.
    let c = change.change.abs();
    let room = (c - t).max(e - c);
    if n == 0 || room < 0.05 * t.max(1e-3) {
        return format!(
            "inconclusive: the change ({}) sits on the ±{} threshold; no number of runs decides it — change --threshold if this size matters",
            pct(change.change),
            pct(t)
        );
    }
    let needed = (n as f64 * (half / room).powi(2)).ceil();
    let more = perfsleuth_report::format_count((needed - n as f64).max(1.0));
    if e > t {
        return format!(
            "inconclusive: the CI (±{}) neither clears the ±{} floor nor lies within ±{}; ≈ {more} more runs per side would narrow it enough to decide",
            pct(half),
            pct(t),
            pct(e)
        );
    }
    format!(
        "inconclusive: the CI (±{}) reaches across the ±{} threshold; ≈ {more} more runs per side would narrow it enough to decide",
        pct(half),
        pct(t),
    )
}

/// What would decide a benchmark that two separate runs cannot: both sides
/// measured interleaved in one job (`ab` between the two commits, or one
/// `run` of both commands while the baseline's program is still on disk),
/// with about how many adjacent pairs and how long that takes: enough
/// pairs for an 80 % chance at α = 0.05 to see a change the size of the
/// threshold (at least 1 %), from the spread
/// of single runs inside the candidate's rounds (a pair's log-ratio varies
/// √2 times that; a median needs π/2 the samples of a mean).
fn interleave_advice(
    baseline: &Side,
    candidate: &Side,
    be: &Entry<'_>,
    ce: &Entry<'_>,
    threshold: f64,
) -> String {
    let commit = |s: &Side| {
        newest(s)
            .and_then(|r| r.git.as_ref())
            .map(|g| perfsleuth_model::short_commit(&g.commit).to_string())
    };
    let command = ce.argv.join(" ");
    let how = match (commit(baseline), commit(candidate)) {
        (Some(b), Some(c)) if b != c => format!(
            "`perfsleuth ab --baseline {b} --candidate {c} --build '…' -- '{command}'` measures both in one job, paired run by run"
        ),
        _ if be.argv != ce.argv => format!(
            "`perfsleuth run '{}' '{command}'` measures both in one run, paired run by run",
            be.argv.join(" ")
        ),
        _ => "keep a copy of the baseline's program and measure both in one `perfsleuth run` (or `perfsleuth ab` between their commits), paired run by run".to_string(),
    };
    let wall = |e: &Entry<'_>| {
        let v: Vec<f64> = e
            .groups
            .iter()
            .flatten()
            .map(|s| Metric::Wall.of(s))
            .collect();
        median(&v)
    };
    // The relative spread of single runs within a round (MAD, scaled to an sd).
    let spread = {
        let rel: Vec<f64> = ce
            .groups
            .iter()
            .filter_map(|g| {
                let v: Vec<f64> = g.iter().map(|s| Metric::Wall.of(s)).collect();
                let m = median(&v)?;
                let mad = perfsleuth_stats::mad(&v)?;
                (m > 0.0).then(|| 1.4826 * mad / m)
            })
            .collect();
        median(&rel)
    };
    let (Some(b), Some(c), Some(sd)) = (wall(be), wall(ce), spread) else {
        return format!("{how}.");
    };
    let effect = threshold.max(0.01);
    let pair_sd = std::f64::consts::SQRT_2 * sd.max(0.002);
    let z = 1.959_964 + 0.841_621;
    let pairs = ((std::f64::consts::FRAC_PI_2 * (z * pair_sd / effect).powi(2)).ceil() as usize)
        .max(perfsleuth_stats::MIN_PAIRS * 4);
    format!(
        "{how}: about {} pairs (≈ {} of measuring) would decide a change of ±{:.0}% at this run-to-run spread (±{:.1}% a run).",
        perfsleuth_report::format_count(pairs as f64),
        perfsleuth_report::format_duration_ns(pairs as f64 * (b + c)),
        100.0 * effect,
        100.0 * sd
    )
}

/// "noise for `w` on this machine class: ±1.2 % per run (σ, learned from 12
/// same-binary runs); …": where the row's band comes from, and that of this
/// difference.
fn noise_note(
    key: &str,
    noise: &Noise,
    (history, declined): (usize, bool),
    band: f64,
    (wb, wc): (f64, f64),
) -> String {
    let pct = percent_text;
    let mut s = format!(
        "noise for `{key}` on this machine class: {}",
        noise_text(noise.sd, &noise.source)
    );
    if history == 0 && declined {
        s.push_str("; same-binary runs not consulted (--no-history)");
    } else if history == 0 {
        s.push_str("; no same-binary runs stored to learn it from (`perfsleuth run --repeat 5` on the baseline does)");
    } else if history < MIN_HISTORY {
        s.push_str(&format!(
            "; only {history} same-binary run{} stored, {MIN_HISTORY} are needed to learn it",
            if history == 1 { " is" } else { "s are" }
        ));
    }
    let stretches = |w: f64| match w {
        1.0 => "1 run".to_string(),
        w if w.fract() == 0.0 => format!("{w} runs"),
        w => format!("{w:.1} runs' worth"),
    };
    s.push_str(&format!(
        "; between {} of baseline and {} of candidate that is ±{}, and the CI is at least that wide",
        stretches(wb),
        stretches(wc),
        pct(band)
    ));
    s
}

/// Why a row cannot be judged at its metric's resolution (a change below one
/// step, or a side below one step), or `None` when it can.
fn below_resolution(row: &Row) -> Option<String> {
    let r = row.metric.resolution()?;
    let (b, c) = (row.baseline_median, row.candidate_median);
    // Zero on both sides is no change at any resolution; equal medians of at
    // least one step each are left to the rule.
    if !(b.is_finite() && c.is_finite()) || (b == 0.0 && c == 0.0) || (b == c && b >= r) {
        return None;
    }
    let step = match row.metric {
        Metric::User | Metric::Sys => format!(
            "{} time is counted in {} ms scheduler ticks",
            if row.metric == Metric::User {
                "user"
            } else {
                "system"
            },
            r / 1e6
        ),
        Metric::PeakRss => format!("peak RSS is counted in {} KiB pages", r / 1024.0),
        _ => "it is counted in whole events".to_string(),
    };
    if b.min(c) < r {
        return Some(format!(
            "{step}: one side's median is below one — not judged"
        ));
    }
    if (c - b).abs() < r {
        return Some(format!(
            "{step}: the medians differ by less than one — not judged"
        ));
    }
    None
}

/// The run fact naming objects that execute CPUID (`perfsleuth_runner::CPUID_KEY`).
const CPUID_FACT: &str = "sim.cpuid_dispatch";

/// The machine facts of a run, with `sim.portable = off` for a simulation
/// run made before portable mode existed (it has no `sim.*` facts), so that
/// it does not compare as equal to a portable one: the counts were made
/// differently.
fn counted_env(run: &Run) -> Environment {
    let mut env = machine_env(&run.environment);
    if run.mode == Mode::Simulation && !env.facts.contains_key("sim.portable") {
        env.set("sim.portable", "off", ImpactClass::Identity);
    }
    env
}

/// Facts portable simulation counts do not depend on: the CPU as glibc
/// would see it (its dispatch is fixed), what the loader derived from it,
/// the parent's own tunables (the child's are `sim.glibc_tunables`) and the
/// host. Core counts stay: programs size thread pools and malloc arenas by them.
fn cpu_dependent(key: &str) -> bool {
    (key.starts_with("cpu.")
        && !matches!(
            key,
            "cpu.logical_cores" | "cpu.physical_cores" | "cpu.sockets" | "cpu.online" | "cpu.smt"
        ))
        || key == "libc.hwcaps"
        || key.starts_with("libc.ld_so.")
        || key == "libc.tunables"
        || key == "env.GLIBC_TUNABLES"
        || key == "virt.hypervisor"
        || key.starts_with("virt.dmi.")
}

/// When both runs counted in portable simulation mode at the same
/// baseline, CPU differences become context (with a note saying so);
/// glibc version, binary and every other change stay as they are.
fn portable_context(
    baseline: &Run,
    candidate: &Run,
    mut changes: Vec<Change>,
    notes: &mut Vec<String>,
) -> Vec<Change> {
    let level = |r: &Run| {
        (r.mode == Mode::Simulation)
            .then(|| r.environment.get("sim.portable"))
            .flatten()
            .filter(|l| *l != "off")
            .map(str::to_string)
    };
    let (Some(b), Some(c)) = (level(baseline), level(candidate)) else {
        return changes;
    };
    if b != c {
        return changes;
    }
    // Code that dispatches on CPUID itself is not made portable by glibc's
    // tunables: then the CPU still matters (and an unrecorded scan is unknown).
    let own: Vec<String> = [baseline, candidate]
        .iter()
        .map(|r| r.environment.get(CPUID_FACT).unwrap_or("not recorded"))
        .filter(|v| *v != "none")
        .map(str::to_string)
        .collect();
    if !own.is_empty() {
        notes.push(format!(
            "counts made portable ({b}), but CPU differences still apply: {} runs CPUID itself",
            own.join("; ")
        ));
        return changes;
    }
    let mut demoted = Vec::new();
    for change in &mut changes {
        if change.class != ImpactClass::Context && cpu_dependent(&change.key) {
            change.class = ImpactClass::Context;
            demoted.push(change.key.clone());
        }
    }
    if !demoted.is_empty() {
        notes.push(format!(
            "counts made portable ({b}) on both sides: CPU differences do not apply ({})",
            list_keys(&demoted, 4)
        ));
    }
    changes
}

/// Whether every run of the side ran under simulation.
fn simulated(side: &Side) -> bool {
    !side.runs.is_empty() && side.runs.iter().all(|r| r.mode == Mode::Simulation)
}

/// Options for two simulation runs: the clock timed valgrind, so time and
/// memory metrics become instruction counts (wall → Ir; user, sys and peak
/// RSS dropped; estimated cycles shown beside Ir).
fn simulation_options(opts: &Options) -> Options {
    let ir = Metric::parse("Ir").unwrap_or(Metric::Wall);
    let cycles = Metric::parse("est_cycles").unwrap_or(Metric::Wall);
    let map = |list: &[Metric], extra: bool| -> Vec<Metric> {
        let mut out = Vec::new();
        for &m in list {
            match m {
                Metric::Wall => {
                    push_unique(&mut out, ir);
                    if extra {
                        push_unique(&mut out, cycles);
                    }
                }
                Metric::Cpu | Metric::User | Metric::Sys | Metric::PeakRss => {}
                other => push_unique(&mut out, other),
            }
        }
        if out.is_empty() {
            out.push(ir);
        }
        out
    };
    let mut o = opts.clone();
    o.gating = map(&opts.gating, false);
    o.metrics = map(&opts.metrics, true);
    for b in o.per_benchmark.values_mut() {
        if let Some(g) = &b.metrics {
            b.metrics = Some(map(g, false));
        }
    }
    o
}

/// Why the two sides cannot be compared, when they were measured in
/// different modes: valgrind's wall time against a native one, or callgrind
/// counts against nothing, would be a verdict on the measuring, not on the
/// code. Callers check this before [`compare`].
pub fn mode_mismatch(baseline: &Side, candidate: &Side) -> Option<String> {
    mismatch(
        &baseline.label,
        side_modes(baseline),
        &candidate.label,
        side_modes(candidate),
    )
}

/// [`mode_mismatch`] for a candidate not yet measured, labelled `label`.
pub fn mode_mismatch_with(baseline: &Side, label: &str, mode: Mode) -> Option<String> {
    mismatch(
        &baseline.label,
        side_modes(baseline),
        label,
        vec![mode.as_str()],
    )
}

/// The distinct modes of a side's runs, sorted.
fn side_modes(s: &Side) -> Vec<&'static str> {
    let mut m: Vec<&'static str> = s.runs.iter().map(|r| r.mode.as_str()).collect();
    m.sort_unstable();
    m.dedup();
    m
}

fn mismatch(b_label: &str, b: Vec<&str>, c_label: &str, c: Vec<&str>) -> Option<String> {
    if b.is_empty() || c.is_empty() || b == c {
        return None;
    }
    Some(format!(
        "the baseline ({b_label}) ran in {} mode and the candidate ({c_label}) in {} mode: they measure different things",
        b.join("+"),
        c.join("+")
    ))
}

/// Whether some run of the side recorded allocations (`--profile=alloc`).
fn allocation_profiled(side: &Side) -> bool {
    side.runs
        .iter()
        .any(|r| r.benchmarks.iter().any(|b| b.allocs.is_some()))
}

/// Options that show the allocation counts too (after the metrics asked for).
fn with_allocation_metrics(opts: &Options) -> Options {
    let mut o = opts.clone();
    for key in perfsleuth_model::ALLOC_COUNTERS {
        if let Some(m) = Metric::parse(key) {
            push_unique(&mut o.metrics, m);
        }
    }
    o
}

/// Whether every run of the side is a `perfsleuth scale` sweep.
fn scale_sweep(side: &Side) -> bool {
    !side.runs.is_empty() && side.runs.iter().all(Run::is_scale_sweep)
}

/// Options for two scale sweeps: throughput is what a sweep measures, so it
/// gates and comes first (wall time is shown beside it).
fn scale_options(opts: &Options) -> Options {
    let Some(throughput) = Metric::parse("throughput") else {
        return opts.clone();
    };
    let mut o = opts.clone();
    let mut shown = Vec::new();
    for &m in &opts.metrics {
        if m == Metric::Wall {
            push_unique(&mut shown, throughput);
        }
        push_unique(&mut shown, m);
    }
    o.metrics = shown;
    o.gating = opts
        .gating
        .iter()
        .map(|&m| if m == Metric::Wall { throughput } else { m })
        .collect();
    o
}

/// The functions whose own (self) cost of `event` moved between two
/// profiles, biggest move first, and the move of the total.
fn function_moves<'a>(
    base: &'a Profile,
    cand: &'a Profile,
    event: &str,
) -> Option<(f64, Vec<FunctionMove>)> {
    let (bi, ci) = (base.event(event)?, cand.event(event)?);
    let total = *cand.totals.get(ci)? as f64 - *base.totals.get(bi)? as f64;
    // Shared libraries are matched by file name; programs by function alone,
    // since the baseline and candidate executables usually differ in path
    // and name (./old/prog vs ./new/prog).
    let basename = |o: &'a str| -> &'a str { o.rsplit('/').next().unwrap_or(o) };
    let key = |o: &'a str| -> &'a str {
        let b = basename(o);
        if b.contains(".so") { b } else { "" }
    };
    // (baseline, candidate, object shown) per function.
    let mut costs: BTreeMap<(&str, &str), (f64, f64, &str)> = BTreeMap::new();
    for f in &base.functions {
        let e =
            costs
                .entry((key(&f.object), &f.function))
                .or_insert((0.0, 0.0, basename(&f.object)));
        e.0 += f.self_cost.get(bi).copied().unwrap_or(0) as f64;
    }
    for f in &cand.functions {
        let e =
            costs
                .entry((key(&f.object), &f.function))
                .or_insert((0.0, 0.0, basename(&f.object)));
        e.1 += f.self_cost.get(ci).copied().unwrap_or(0) as f64;
        e.2 = basename(&f.object);
    }
    let mut moved: Vec<FunctionMove> = costs
        .into_iter()
        .filter(|(_, (b, c, _))| b != c)
        .map(|((_, function), (b, c, object))| FunctionMove {
            function: function.to_string(),
            object: object.to_string(),
            baseline: b,
            candidate: c,
        })
        .collect();
    let delta = |m: &FunctionMove| m.candidate - m.baseline;
    moved.sort_by(|a, b| {
        delta(b)
            .abs()
            .total_cmp(&delta(a).abs())
            .then(a.function.cmp(&b.function))
    });
    Some((total, moved))
}

/// "91 % of +12.0 % Ir is in `_int_malloc` (libc.so.6); 6 % in …": the
/// functions whose own (self) cost moved most, as shares of the total move.
fn function_attribution(
    total: f64,
    moved: &[FunctionMove],
    event: &str,
    change: f64,
) -> Option<String> {
    if total == 0.0 {
        return None;
    }
    let mut parts = Vec::new();
    let mut covered = 0.0;
    for m in moved.iter().take(3) {
        let (function, object, d) = (&m.function, &m.object, m.candidate - m.baseline);
        let share = d / total;
        if share.abs() < 0.05 {
            break;
        }
        parts.push(format!("{:.0}% in `{function}` ({object})", 100.0 * share));
        covered += share;
        if covered >= 0.9 {
            break;
        }
    }
    let (first, rest) = parts.split_first()?;
    let first = first.replacen(
        " in ",
        &format!(" of {:+.1}% {event} is in ", 100.0 * change),
        1,
    );
    Some(
        std::iter::once(first)
            .chain(rest.iter().cloned())
            .collect::<Vec<_>>()
            .join("; "),
    )
}

/// Whether the two sides are the two halves of one interleaved
/// measurement (`ab` stores its baseline and candidate as two runs of one
/// measurement): one run each, both marked `ab`, started together. Such
/// sides are judged paired, as `ab` judged them, whatever command asks.
pub fn measured_together(baseline: &Side, candidate: &Side) -> bool {
    match (baseline.runs.as_slice(), candidate.runs.as_slice()) {
        ([b], [c]) => {
            let ab = |r: &Run| {
                r.options
                    .get("ab")
                    .is_some_and(serde_json::Value::is_object)
            };
            ab(b) && ab(c) && b.started_at == c.started_at && b.id != c.id
        }
        _ => false,
    }
}

/// The verdict options for sides measured interleaved: paired by adjacent
/// runs, with no between-run band (no history, no prior): the drift that
/// separates runs is what the pairing cancels. Unless the user set the
/// threshold, a change is flagged beyond the in-run floor
/// ([`VerdictRule::IN_RUN`], ±0.2 %) and `no change` still means the whole
/// interval lies within the threshold (±1 %): a ±1 % floor made +1 %
/// uncatchable however many pairs were measured, and a ±0.2 % band alone
/// would keep every unchanged program measuring until `ab`'s time limit.
pub fn paired(opts: &Options) -> Options {
    let mut rule = opts.rule;
    if !opts.threshold_given {
        rule.no_change_within = rule.no_change_within.max(rule.noise_threshold);
        rule.noise_threshold = rule
            .noise_threshold
            .min(VerdictRule::IN_RUN.noise_threshold);
    }
    Options {
        rule,
        history: BTreeMap::new(),
        prior: false,
        paired: true,
        ..opts.clone()
    }
}

/// Compares `candidate` against `baseline`: pairs benchmarks by name and
/// parameters, computes a row per paired benchmark and metric, and
/// attributes changes to the environment where the machines differ.
pub fn compare<'a>(baseline: &'a Side, candidate: &'a Side, opts: &Options) -> Comparison {
    let sim_opts;
    let together = !opts.paired && measured_together(baseline, candidate);
    // The look `ab` stopped at, where it went on measuring (the same
    // level as its own verdict).
    let look = together
        .then(|| candidate.runs.first().and_then(perfsleuth_summary::look_of))
        .flatten();
    let full_alpha = opts.rule.alpha;
    let opts = if together {
        sim_opts = paired(opts).at_look(look);
        &sim_opts
    } else if simulated(baseline) && simulated(candidate) {
        sim_opts = simulation_options(opts);
        &sim_opts
    } else if scale_sweep(baseline) && scale_sweep(candidate) {
        sim_opts = scale_options(opts);
        &sim_opts
    } else {
        opts
    };
    // Both sides allocation-profiled: their counts are shown beside time.
    let alloc_opts;
    let opts = if [baseline, candidate]
        .iter()
        .all(|side| allocation_profiled(side))
    {
        alloc_opts = with_allocation_metrics(opts);
        &alloc_opts
    } else {
        opts
    };
    let base_entries = collect(baseline);
    let cand_entries = collect(candidate);
    // Sides made wholly of imported runs, whose zeros may be "not measured".
    let imported = [baseline, candidate].map(|side| {
        !side.runs.is_empty()
            && side
                .runs
                .iter()
                .all(|r| r.origin() == perfsleuth_model::RunOrigin::Import)
    });
    let mut notes = Vec::new();
    side_notes("baseline", baseline, &mut notes);
    side_notes("candidate", candidate, &mut notes);
    if let Some(n) = origin_note(baseline, candidate) {
        notes.push(n);
    }
    if together {
        notes.push(
            "the two runs were measured interleaved (one `perfsleuth ab`): judged paired by adjacent runs, as `ab` judged them, without the between-run noise band"
                .to_string(),
        );
        notes.extend(look_note(look, full_alpha));
    }

    // The environment diff, newest run against newest run.
    let env_changes: Vec<Change> = match (newest(baseline), newest(candidate)) {
        (Some(b), Some(c)) => {
            let changes = perfsleuth_env::diff(&counted_env(b), &counted_env(c));
            let changes = portable_context(b, c, changes, &mut notes);
            changes
                .into_iter()
                .filter(|c| c.class != ImpactClass::Context)
                .collect()
        }
        _ => Vec::new(),
    };
    let identity_changed = env_changes.iter().any(|c| c.class == ImpactClass::Identity);
    let perf_keys: Vec<String> = env_changes
        .iter()
        .filter(|c| c.class == ImpactClass::Performance)
        .map(|c| c.key.clone())
        .collect();

    let unpaired_baseline: Vec<String> = base_entries
        .list
        .iter()
        .filter(|e| cand_entries.find(e.name, e.parameters).is_none())
        .map(|e| benchmark_key(e.name, e.parameters))
        .collect();
    let unpaired_candidate: Vec<String> = cand_entries
        .list
        .iter()
        .filter(|e| base_entries.find(e.name, e.parameters).is_none())
        .map(|e| benchmark_key(e.name, e.parameters))
        .collect();

    // Rows with their statistics, in candidate order.
    let mut rows: Vec<Row> = Vec::new();
    // Beside each row, what its verdict is decided from.
    let mut facts: Vec<RowFacts> = Vec::new();
    let mut failed_notes: Vec<String> = Vec::new();
    let mut paired = 0usize;
    for ce in &cand_entries.list {
        let Some(bi) = base_entries.find(ce.name, ce.parameters) else {
            continue;
        };
        let be = &base_entries.list[bi];
        paired += 1;
        let key = benchmark_key(ce.name, ce.parameters);
        let overrides = opts.per_benchmark.get(ce.name);
        let named = overrides.and_then(|o| o.metrics.as_deref());
        let mut gating: Vec<Metric> = named.unwrap_or(&opts.gating).to_vec();
        let mut judged_note = None;
        if opts.judge_time && named.is_none() && gating.contains(&Metric::Wall) {
            let flat = |e: &Entry<'a>| e.groups.iter().flatten().copied().collect::<Vec<_>>();
            let judged = perfsleuth_model::judged_time(&flat(be), &flat(ce));
            if judged.metric == Metric::Cpu {
                for m in gating.iter_mut().filter(|m| **m == Metric::Wall) {
                    *m = Metric::Cpu;
                }
            }
            judged_note = Some((judged.metric, judged.sentence()));
        }
        let gating = gating.as_slice();
        let mut metrics: Vec<Metric> = Vec::new();
        for &m in opts.metrics.iter().chain(gating) {
            push_unique(&mut metrics, m);
        }
        let failed =
            |groups: &[Vec<&Sample>]| groups.iter().flatten().filter(|s| !s.succeeded()).count();
        let (fb, fc) = (failed(&be.groups), failed(&ce.groups));
        if fb + fc > 0 {
            failed_notes.push(format!(
                "{key}: {fb} baseline and {fc} candidate samples exited unsuccessfully and are included"
            ));
        }
        // A metric neither side recorded at all (a summary-only import
        // has no user or system time; criterion and pytest-benchmark
        // samples carry zeros for CPU time and peak RSS, which their tools
        // never measured) is no row, unless it gates.
        let recorded = |e: &Entry<'_>, imported: bool, metric: Metric| {
            e.groups
                .iter()
                .flatten()
                .any(|s| !imported || metric.of(s) != 0.0)
                || e.summaries.iter().any(|s| s.metric == metric.name())
        };
        let metrics: Vec<Metric> = metrics
            .into_iter()
            .filter(|&m| {
                gating.contains(&m) || recorded(be, imported[0], m) || recorded(ce, imported[1], m)
            })
            .collect();
        // Each metric bootstraps on its own seed: measured on all CPUs, the
        // numbers are those of one (docs/PERFORMANCE.md, "compare").
        let measured = par_map(&metrics, |&metric| {
            let seed = perfsleuth_stats::SEED ^ fnv1a(&[&key, metric.name()]);
            match summary_sides(be, ce, metric) {
                Some((bs, cs)) => measure_summaries(&bs, &cs, metric, opts),
                None => (
                    measure(&be.groups, &ce.groups, metric, opts, seed),
                    SummaryKind::None,
                ),
            }
        });
        for (metric, (m, kind)) in metrics.into_iter().zip(measured) {
            facts.push(RowFacts {
                exact: m.exact,
                windows: (be.windows, ce.windows),
                spread: m.spread,
                cpu: m.cpu,
                kind,
            });
            let mut m = m;
            if let Some((judged, sentence)) = &judged_note {
                if metric == *judged {
                    m.notes.insert(0, sentence.clone());
                } else if metric == Metric::Wall {
                    m.notes.insert(
                        0,
                        "shown beside the judged CPU time; wall time does not gate this benchmark"
                            .to_string(),
                    );
                }
            }
            if let Some(n) = m.pairs
                && gating.contains(&metric)
            {
                m.notes.push(format!(
                    "paired: the change is the median of the {n} adjacent runs' ratios, its interval the sign test's, widened for neighbouring pairs that move together"
                ));
            }
            rows.push(Row {
                benchmark: ce.name.to_string(),
                parameters: ce.parameters.clone(),
                metric,
                gating: gating.contains(&metric),
                baseline_median: m.baseline_median,
                candidate_median: m.candidate_median,
                n_baseline: m.n_baseline,
                n_candidate: m.n_candidate,
                change: m.change,
                p_value: m.p_value,
                p_adjusted: None,
                verdict: VerdictLabel::InsufficientData,
                notes: m.notes,
                band: 0.0,
                noise: None,
                functions: Vec::new(),
                time_functions: Vec::new(),
            });
        }
    }
    notes.extend(failed_notes);

    // Benjamini–Hochberg over the gating p-values of all paired benchmarks.
    let fdr_applied = opts.fdr_q.is_some() && paired > 1;
    if fdr_applied {
        let idx: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].gating).collect();
        let ps: Vec<f64> = idx
            .iter()
            .map(|&i| rows[i].p_value.unwrap_or(f64::NAN))
            .collect();
        for (&i, adj) in idx.iter().zip(bh_adjusted(&ps)) {
            rows[i].p_adjusted = adj.is_finite().then_some(adj);
        }
    }

    // Children report at least the spawner's own peak RSS (recorded per run);
    // two medians at their floors say nothing about the programs.
    let floor = |side: &Side| {
        newest(side)
            .and_then(|r| r.environment.get("measure.peak_rss_floor_bytes"))
            .and_then(|v| v.parse::<f64>().ok())
    };
    let (floor_b, floor_c) = (floor(baseline), floor(candidate));
    let at_floor =
        |median: f64, floor: Option<f64>| floor.is_some_and(|f| f > 0.0 && median <= f * 1.02);

    let prior = newest(candidate)
        .or_else(|| newest(baseline))
        .map(|r| prior_noise(&r.environment));
    let throughput = Metric::parse("throughput");

    // Verdicts and attribution.
    for (row, f) in rows.iter_mut().zip(&facts) {
        let RowFacts {
            exact,
            windows: (wb, wc),
            spread,
            cpu,
            kind,
        } = *f;
        let enough =
            row.n_baseline >= opts.rule.min_samples && row.n_candidate >= opts.rule.min_samples;
        if row.metric == Metric::PeakRss
            && enough
            && at_floor(row.baseline_median, floor_b)
            && at_floor(row.candidate_median, floor_c)
        {
            row.verdict = VerdictLabel::NoChange;
            row.notes.push(
                "both at the measurement floor of peak RSS: the programs are smaller than it"
                    .to_string(),
            );
            continue;
        }
        if enough && let Some(why) = below_resolution(row) {
            row.verdict = VerdictLabel::InsufficientData;
            row.notes.push(why);
            continue;
        }
        let o = opts.per_benchmark.get(&row.benchmark);
        let mut rule = opts.rule;
        if let Some(a) = o.and_then(|o| o.alpha) {
            rule.alpha = a;
        }
        if let Some(t) = o.and_then(|o| o.threshold) {
            // A benchmark's own threshold applies as given.
            rule.noise_threshold = t;
            rule.no_change_within = 0.0;
        }
        // The bootstrap interval before the between-run noise widened it.
        let mut sampled_ci: Option<Interval> = None;
        if !exact {
            let key = row.key();
            let history = opts.history.get(&key);
            let drifts = matches!(
                row.metric,
                Metric::Wall | Metric::Cpu | Metric::User | Metric::Sys
            ) || Some(row.metric) == throughput;
            let assumed = prior
                .clone()
                .filter(|_| opts.prior && drifts)
                .map(|p| p.at_least(spread));
            let runs: &[Vec<Sample>] = history.map(Vec::as_slice).unwrap_or_default();
            let noise = history_noise(runs, row.metric, assumed);
            if let Some(noise) = noise {
                let band = noise.band(wb, wc);
                if row.gating {
                    row.notes.push(noise_note(
                        &key,
                        &noise,
                        (history.map_or(0, Vec::len), opts.history_declined),
                        band,
                        (wb, wc),
                    ));
                }
                // Two runs of the same program differ by up to `band` on
                // their own: the interval of the change is at least that
                // wide around it, and it is this interval the rule judges
                // and the report prints.
                if let Some(change) = row.change.as_mut() {
                    sampled_ci = Some(change.ci);
                    change.ci.lo = change.ci.lo.min(change.change - band);
                    change.ci.hi = change.ci.hi.max(change.change + band);
                }
                row.band = band;
                row.noise = Some(noise);
            }
        }
        let mut p = row.p_value.unwrap_or(f64::NAN);
        if fdr_applied && row.gating {
            // Adjusted p-values are held to the stricter of alpha and q.
            p = row.p_adjusted.unwrap_or(f64::NAN);
            if let Some(q) = opts.fdr_q {
                rule.alpha = rule.alpha.min(q);
            }
        }
        let direction = stats_direction(row.metric);
        let verdict = match &row.change {
            // Bounds wider than the threshold that hold the change cannot
            // show it is absent either: that is not "no change".
            Some(change)
                if let SummaryKind::Bands(band) = kind
                    && band > rule.noise_threshold
                    && change.change.abs() <= band =>
            {
                Verdict::Inconclusive
            }
            Some(change) if let SummaryKind::Bands(band) = kind => decide(
                &rule,
                &Evidence::Bands {
                    change: change.change,
                    band,
                },
                direction,
            ),
            Some(_) if kind == SummaryKind::Point => Verdict::InsufficientData,
            Some(change) if exact => decide(&rule, &Evidence::Exact(change.change), direction),
            Some(change) => decide(
                &rule,
                &Evidence::Sampled {
                    change,
                    p_value: p,
                    n_baseline: row.n_baseline,
                    n_candidate: row.n_candidate,
                },
                direction,
            ),
            None => Verdict::InsufficientData,
        };
        // With few samples the rank test cannot reach significance at all
        // (3 vs 3: p ≥ 0.10): say so instead of calling a large change "no change".
        let best_p = smallest_p(row.n_baseline, row.n_candidate);
        let judged_by_samples = matches!(kind, SummaryKind::None | SummaryKind::Welch);
        if !exact && judged_by_samples && row.change.is_some() && best_p > rule.alpha {
            row.notes.push(format!(
                "{} vs {} samples cannot show significance at α = {} (the smallest possible p is {best_p:.2}): measure more runs",
                row.n_baseline, row.n_candidate, rule.alpha
            ));
        } else if verdict == Verdict::Inconclusive
            && judged_by_samples
            && let Some(change) = &row.change
        {
            let t = rule.noise_threshold;
            let decided_by_samples =
                sampled_ci.is_some_and(|ci| ci.lo > t || ci.hi < -t || (ci.lo >= -t && ci.hi <= t));
            // The between-run band does not narrow with more runs of one
            // invocation: where it alone reaches across the threshold edge
            // nearest the change, only measuring both sides interleaved decides.
            let room = (change.change.abs() - t).abs();
            if row.band > 0.0 && row.band >= room {
                // Worked out only for the rows that need it: it reads every sample.
                let advice = match (base_entries.of(row), cand_entries.of(row)) {
                    (Some(be), Some(ce)) => {
                        interleave_advice(baseline, candidate, be, ce, rule.noise_threshold)
                    }
                    _ => String::new(),
                };
                row.notes.push(format!(
                    "inconclusive: two separate runs of one program differ by up to ±{:.1}% here, more than the change ({:+.1}%) lies from the ±{:.1}% threshold, and no number of runs in one invocation narrows that; {advice}",
                    100.0 * row.band,
                    100.0 * change.change,
                    100.0 * t
                ));
            } else if decided_by_samples {
                row.notes.push(format!(
                    "inconclusive: the samples alone would decide, but the change ({:+.1}%) is within the ±{:.1}% two such runs differ by on their own; more runs of each side (or same-binary runs of the baseline, `perfsleuth run --repeat 5`) decide it",
                    100.0 * change.change,
                    100.0 * row.band
                ));
            } else {
                // More runs narrow the sampled interval, not the band.
                let sampled = RelativeChange {
                    ci: sampled_ci.unwrap_or(change.ci),
                    ..change.clone()
                };
                row.notes.push(what_would_decide(
                    &sampled,
                    p,
                    rule,
                    row.n_baseline.min(row.n_candidate),
                ));
            }
        }
        let mut verdict = verdict;
        if matches!(verdict, Verdict::Regressed | Verdict::Improved)
            && let (Some(cpu), Some(change)) = (cpu, &row.change)
            && let Some(why) = cpu.explains(change.change, rule.noise_threshold)
        {
            verdict = Verdict::Inconclusive;
            row.notes.push(why);
        }
        row.verdict = label(verdict);
    }
    // Same binary on both sides: a change cannot come from the code. Judged
    // per benchmark on its gating verdicts, before any environment override.
    let same_binary = |row: &Row| -> bool {
        let (b, c) = (base_entries.of(row), cand_entries.of(row));
        let same_args = matches!((b, c), (Some(x), Some(y)) if x.argv == y.argv);
        match (
            b.and_then(|e| binary_hash(e.facts)),
            c.and_then(|e| binary_hash(e.facts)),
        ) {
            (Some(x), Some(y)) => x == y && same_args,
            _ => false,
        }
    };
    let changed = |v: VerdictLabel| matches!(v, VerdictLabel::Regressed | VerdictLabel::Improved);
    let flags: Vec<bool> = rows
        .iter()
        .map(|r| r.gating && changed(r.verdict) && same_binary(r))
        .collect();
    // Several byte-identical programs that all moved the same way by a
    // similar amount: one step of the machine, not of the code.
    let steps: Vec<f64> = rows
        .iter()
        .zip(&flags)
        .filter(|(_, same)| **same)
        .filter_map(|(r, _)| r.change.as_ref().map(|c| c.change))
        .collect();
    let common = common_step(&steps);
    let common_step = common.is_some();
    if let Some((lo, hi)) = common {
        notes.push(format!(
            "{} benchmarks whose programs are byte-identical on both sides all moved {:+.1}% … {:+.1}%: one common step — the machine, not the code; not judged",
            steps.len(),
            100.0 * lo,
            100.0 * hi
        ));
    }
    for (row, same) in rows.iter_mut().zip(flags) {
        if same && common_step {
            row.verdict = VerdictLabel::Inconclusive;
            row.notes.push(
                "moved with the other byte-identical benchmarks: the machine's step (see the notes)"
                    .to_string(),
            );
        }
        if same {
            row.notes.push(SAME_BINARY_NOTE.to_string());
        }
        if identity_changed && opts.machine_override {
            if changed(row.verdict) {
                row.notes.push(format!(
                    "statistically {}, but the machines differ",
                    row.verdict
                ));
            }
            row.verdict = VerdictLabel::EnvironmentChanged;
        } else if !perf_keys.is_empty() && changed(row.verdict) {
            row.notes.push(format!(
                "possibly environmental: {}",
                list_keys(&perf_keys, 4)
            ));
        }
    }

    // Simulation: which functions the change of a counted event is in.
    for row in &mut rows {
        let (Metric::Counter(c), Some(change)) = (row.metric, &row.change) else {
            continue;
        };
        if !c.is_simulated() || change.change == 0.0 || c.key == "est_cycles" {
            continue;
        }
        let profile = |entries: &Entries<'a>| -> Option<&'a Profile> { entries.of(row)?.profile };
        if let (Some(b), Some(cp)) = (profile(&base_entries), profile(&cand_entries))
            && let Some((total, mut moved)) = function_moves(b, cp, c.key)
        {
            if let Some(note) = function_attribution(total, &moved, c.key, change.change) {
                row.notes.push(note);
            }
            moved.truncate(FUNCTIONS_SHOWN);
            row.functions = moved;
        }
    }

    // Wall and CPU time: which functions a judged change is in (`--profile`).
    let mut flames = Vec::new();
    for row in &rows {
        if row.metric != Metric::Wall {
            continue;
        }
        let (b, c) = (base_entries.stacks_of(row), cand_entries.stacks_of(row));
        if !b.is_empty() && !c.is_empty() {
            let samples = perfsleuth_report::in_samples(&b) || perfsleuth_report::in_samples(&c);
            flames.push(Flame {
                key: row.key(),
                before: perfsleuth_report::folded_per_run(&b, samples),
                after: perfsleuth_report::folded_per_run(&c, samples),
                unit: perfsleuth_report::flame_unit(samples),
            });
        }
    }
    // The one time row a benchmark's attribution goes on: its gating one
    // (CPU time for a program judged on it), else wall time.
    let gating_time: HashSet<String> = rows
        .iter()
        .filter(|r| r.gating && matches!(r.metric, Metric::Wall | Metric::Cpu))
        .map(Row::key)
        .collect();
    for row in &mut rows {
        let time = matches!(row.metric, Metric::Wall | Metric::Cpu);
        let Some(change) = row.change.as_ref().filter(|_| time) else {
            continue;
        };
        if !changed(row.verdict) || (!row.gating && gating_time.contains(&row.key())) {
            continue;
        }
        let (b, c) = (base_entries.stacks_of(row), cand_entries.stacks_of(row));
        match (b.is_empty(), c.is_empty()) {
            (true, true) => continue,
            (true, false) | (false, true) => {
                row.notes.push(format!(
                    "only the {} was profiled: profile both sides (--profile) to see which functions the change is in",
                    if b.is_empty() { "candidate" } else { "baseline" }
                ));
                continue;
            }
            (false, false) => {}
        }
        match time_moves(&b, &c, opts.confidence(), row.metric == Metric::Cpu) {
            Some(found) => {
                // CPU time: shares of its change. Wall time with a wall
                // profile of one thread (its time on and off the CPU is the
                // wall time, to a tenth): shares of the wall change; of
                // several threads, shares of their time's change. Wall time
                // with on-CPU profiles: shares of the change of the time on
                // CPU the samples saw.
                let one_thread = (found.baseline_profiled_ns / row.baseline_median - 1.0).abs()
                    < 0.1;
                let note = if row.metric == Metric::Cpu
                    || (row.metric == Metric::Wall && found.off_cpu && one_thread)
                {
                    time_attribution(
                        &found.moves,
                        row.metric.name(),
                        row.candidate_median - row.baseline_median,
                        change.change,
                    )
                } else if found.off_cpu {
                    time_attribution(
                        &found.moves,
                        stacks::THREADS,
                        found.profiled.shift,
                        change.change,
                    )
                } else {
                    time_attribution(
                        &found.moves,
                        stacks::ON_CPU,
                        found.profiled.shift,
                        change.change,
                    )
                };
                row.notes.extend(note);
                let mut moves = found.moves;
                moves.truncate(FUNCTIONS_SHOWN);
                row.time_functions = moves;
            }
            None => row.notes.push(format!(
                "profiled, but with fewer than {} runs a side or without sampling periods (an imported profile is one run; folded stacks have no times): no interval to say which functions the change is in; see the differential flame graph (`perfsleuth report`)",
                stacks::MIN_PROFILED_RUNS
            )),
        }
    }

    // Allocations: which functions a judged change of bytes or count is in.
    for row in &mut rows {
        let what = match row.metric {
            Metric::Counter(c) if c.key == "alloc_bytes" => allocs::AllocWhat::Bytes,
            Metric::Counter(c) if c.key == "alloc_count" => allocs::AllocWhat::Count,
            _ => continue,
        };
        if !changed(row.verdict) {
            continue;
        }
        let (b, c) = (base_entries.allocs_of(row), cand_entries.allocs_of(row));
        if b.is_empty() || c.is_empty() {
            continue;
        }
        let shift = row.candidate_median - row.baseline_median;
        match allocs::alloc_attribution(&b, &c, what, shift, opts.confidence()) {
            Some(note) => row.notes.push(note),
            None => row.notes.push(format!(
                "allocation-profiled, but with fewer than {} runs a side: no interval to say which functions the change is in",
                stacks::MIN_PROFILED_RUNS
            )),
        }
    }

    Comparison {
        baseline: baseline.label.clone(),
        candidate: candidate.label.clone(),
        env_changes,
        identity_changed,
        rows,
        flames,
        unpaired_baseline,
        unpaired_candidate,
        fdr_applied,
        notes,
        confidence: opts.confidence(),
    }
}

#[cfg(test)]
mod tests;
