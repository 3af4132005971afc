//! The options of a comparison: its thresholds and rule, and the variants
//! that simulation, allocation profiles, scale sweeps and paired runs need.

use perfsleuth_model::Metric;
use perfsleuth_model::Sample;
use perfsleuth_stats::VerdictRule;
use std::collections::BTreeMap;

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

/// Options for two simulation runs: the clock timed valgrind, so time and
/// memory metrics become instruction counts (wall → Ir; user, sys and peak
/// RSS dropped; estimated cycles shown beside Ir).
pub(crate) fn simulation_options(opts: &Options) -> Options {
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

/// Options that show the allocation counts too (after the metrics asked for).
pub(crate) fn with_allocation_metrics(opts: &Options) -> Options {
    let mut o = opts.clone();
    for key in perfsleuth_model::ALLOC_COUNTERS {
        if let Some(m) = Metric::parse(key) {
            push_unique(&mut o.metrics, m);
        }
    }
    o
}

/// Options for two scale sweeps: throughput is what a sweep measures, so it
/// gates and comes first (wall time is shown beside it).
pub(crate) fn scale_options(opts: &Options) -> Options {
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

pub(crate) fn push_unique(list: &mut Vec<Metric>, m: Metric) {
    if !list.contains(&m) {
        list.push(m);
    }
}
