//! The estimation of each benchmark and metric: medians, intervals and
//! p-values, over a small thread pool.

use crate::Context;
use crate::noise::group_spread;
use crate::options::Options;
use crate::options::push_unique;
use crate::outcome::{Row, benchmark_key};
use crate::sides::{Entry, fnv1a};
use perfsleuth_model::Metric;
use perfsleuth_model::ReportedSummary;
use perfsleuth_model::Sample;
use perfsleuth_model::schema::VerdictLabel;
use perfsleuth_stats::Interval;
use perfsleuth_stats::RelativeChange;
use perfsleuth_stats::mann_whitney_u;
use perfsleuth_stats::median;

/// The statistics of one (benchmark, metric) before any verdict.
pub(crate) struct Measured {
    pub(crate) baseline_median: f64,
    pub(crate) candidate_median: f64,
    pub(crate) n_baseline: usize,
    pub(crate) n_candidate: usize,
    pub(crate) change: Option<RelativeChange>,
    pub(crate) p_value: Option<f64>,
    pub(crate) notes: Vec<String>,
    /// Simulated counts (near-)identical within each side: the change is exact.
    pub(crate) exact: bool,
    /// How much this metric's stretches of measuring vary: the larger of the
    /// two sides' relative sd of their group medians (0 below 3 groups).
    pub(crate) spread: f64,
    /// For wall time: how the CPU time and the waiting moved beside it.
    pub(crate) cpu: Option<CpuShare>,
    /// Adjacent pairs of runs the paired estimate came from.
    pub(crate) pairs: Option<usize>,
}

/// What a wall-time change did to the CPU time: a program that got slower
/// in wall time but used no more CPU time, and did not wait more often, was
/// kept from running — by another process or the hypervisor (the machine),
/// not by its code.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct CpuShare {
    /// CPU time (user + sys) over wall time, all samples of a side.
    pub(crate) share_b: f64,
    pub(crate) share_c: f64,
    /// Relative change of the median CPU time per run. User and system time
    /// are split in scheduler ticks, but their sum is the scheduler's exact
    /// runtime, so it is judged to the microsecond.
    pub(crate) cpu_change: f64,
    /// Voluntary context switches per run (sleeps, I/O, lock waits).
    pub(crate) voluntary_b: f64,
    pub(crate) voluntary_c: f64,
}

impl CpuShare {
    pub(crate) fn of(base: &[Vec<&Sample>], cand: &[Vec<&Sample>]) -> Option<CpuShare> {
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
    pub(crate) fn explains(&self, change: f64, threshold: f64) -> Option<String> {
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

pub(crate) fn measure(
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
pub(crate) fn par_map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let cpus = cpus();
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

/// The CPUs this process may use, asked once: the answer reads cgroup
/// files, which per call cost more than an exact interval does.
fn cpus() -> usize {
    static CPUS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *CPUS.get_or_init(|| std::thread::available_parallelism().map_or(1, |n| n.get()))
}

/// `f(i, item)` for every item, in place, on up to all CPUs once there are
/// enough items (a row's judgement takes microseconds: a thread is worth it
/// for thousands, not for a few).
pub(crate) fn par_each_mut<T: Send>(items: &mut [T], f: impl Fn(usize, &mut T) + Sync) {
    const ALONE: usize = 2_000;
    let cpus = cpus();
    if cpus <= 1 || items.len() <= ALONE {
        items.iter_mut().enumerate().for_each(|(i, t)| f(i, t));
        return;
    }
    let chunk = items.len().div_ceil(cpus);
    let f = &f;
    std::thread::scope(|scope| {
        for (k, part) in items.chunks_mut(chunk).enumerate() {
            scope.spawn(move || {
                for (j, t) in part.iter_mut().enumerate() {
                    f(k * chunk + j, t);
                }
            });
        }
    });
}

/// What a row's verdict is decided from beside the row itself: how it was
/// measured, kept together so the judging loop reads one value per row.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RowFacts {
    /// The metric is exact (simulation counts): no interval to widen.
    pub(crate) exact: bool,
    /// (baseline, candidate) run windows of the row's benchmark.
    pub(crate) windows: (f64, f64),
    /// The spread of the runs the estimate came from (for the prior noise).
    pub(crate) spread: f64,
    /// What the CPU time did, for a wall-time row.
    pub(crate) cpu: Option<CpuShare>,
    /// How it was judged when a side had only a tool's summary.
    pub(crate) kind: SummaryKind,
}

/// How a row was judged when a side had only a tool's summary.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum SummaryKind {
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
pub(crate) fn summary_sides(
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
pub(crate) fn describe_summary(s: &ReportedSummary, metric: Metric) -> String {
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
pub(crate) fn measure_summaries(
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

pub(crate) fn stats_direction(metric: Metric) -> perfsleuth_stats::Direction {
    match metric.direction() {
        perfsleuth_model::Direction::Lower => perfsleuth_stats::Direction::LowerIsBetter,
        perfsleuth_model::Direction::Higher => perfsleuth_stats::Direction::HigherIsBetter,
    }
}

/// The rows of a comparison, with their statistics: one per paired
/// benchmark and metric, in candidate order, and beside each what its
/// verdict is decided from.
pub(crate) struct Estimated {
    pub(crate) rows: Vec<Row>,
    pub(crate) facts: Vec<RowFacts>,
    /// Notes on samples that exited unsuccessfully.
    pub(crate) failed_notes: Vec<String>,
    /// How many benchmarks both sides have.
    pub(crate) paired: usize,
}

/// Estimates every paired benchmark's metrics (`imported`: the sides made
/// wholly of imported runs, whose zeros may be "not measured").
/// One paired benchmark's estimates to make: its two entries and what is
/// measured of them.
struct Job<'e, 'a> {
    be: &'e Entry<'a>,
    ce: &'e Entry<'a>,
    key: String,
    gating: Vec<Metric>,
    metrics: Vec<Metric>,
    judged_note: Option<(Metric, String)>,
}

pub(crate) fn estimate_rows<'a>(ctx: &Context<'a, '_>, imported: [bool; 2]) -> Estimated {
    let (base_entries, cand_entries, opts) = (&ctx.base, &ctx.cand, ctx.opts);
    let mut rows: Vec<Row> = Vec::new();
    // Beside each row, what its verdict is decided from.
    let mut facts: Vec<RowFacts> = Vec::new();
    let mut failed_notes: Vec<String> = Vec::new();
    let mut paired = 0usize;
    // First what each paired benchmark measures (cheap), then every
    // (benchmark, metric) estimate over all CPUs at once — a few threads for
    // a few benchmarks, chunks of thousands for a hundred thousand — then
    // the rows in order.
    let mut jobs: Vec<Job<'_, 'a>> = Vec::new();
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
        jobs.push(Job {
            be,
            ce,
            key,
            gating: gating.to_vec(),
            metrics,
            judged_note,
        });
    }
    // Each metric bootstraps on its own seed: measured on all CPUs, the
    // numbers are those of one (docs/PERFORMANCE.md, "compare").
    let work: Vec<(usize, Metric)> = jobs
        .iter()
        .enumerate()
        .flat_map(|(j, job)| job.metrics.iter().map(move |&m| (j, m)))
        .collect();
    let mut measured = par_map(&work, |&(j, metric)| {
        let Job { be, ce, key, .. } = &jobs[j];
        let seed = perfsleuth_stats::SEED ^ fnv1a(&[key, metric.name()]);
        match summary_sides(be, ce, metric) {
            Some((bs, cs)) => measure_summaries(&bs, &cs, metric, opts),
            None => (
                measure(&be.groups, &ce.groups, metric, opts, seed),
                SummaryKind::None,
            ),
        }
    })
    .into_iter();
    // Sized once: a vector grown by doubling to 100 000 rows leaves the
    // copies it outgrew in the heap.
    rows.reserve_exact(work.len());
    facts.reserve_exact(work.len());
    for job in jobs {
        let Job {
            be,
            ce,
            gating,
            metrics,
            judged_note,
            ..
        } = job;
        let gating = gating.as_slice();
        for (metric, (m, kind)) in metrics.into_iter().zip(measured.by_ref()) {
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
    Estimated {
        rows,
        facts,
        failed_notes,
        paired,
    }
}
