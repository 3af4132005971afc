//! A run's summary: per-benchmark statistics and, with several benchmarks,
//! each compared with the reference under the in-run rule of the one
//! verdict (`perfsleuth_stats::decide`). [`analyze`] computes every
//! statistic once; every renderer (`perfsleuth-report`) and the server read
//! the same [`RunReport`], so no output disagrees about a number, and the
//! presentation layer judges nothing.

#![forbid(unsafe_code)]

use perfsleuth_model::quantity::TimeUnit;
use perfsleuth_model::{Benchmark, JudgedTime, Metric, Run, Sample};
use perfsleuth_stats::{
    Direction, Evidence, RESAMPLES, SEED, Verdict, VerdictRule, decide, estimate, summarize,
};
use std::collections::BTreeMap;

pub use perfsleuth_stats::{Interval, RatioEstimate, Summary};

/// Confidence level of every interval this crate reports.
pub const CONFIDENCE: f64 = perfsleuth_stats::DEFAULT_CONFIDENCE;

/// Per-benchmark statistics used by every renderer.
#[derive(Debug, Clone, PartialEq)]
pub struct BenchmarkReport {
    /// Display name of the benchmark.
    pub name: String,
    /// The command, parameters substituted.
    pub command: String,
    /// Parameter values of this benchmark.
    pub parameters: BTreeMap<String, String>,
    /// Number of samples (every timed iteration, failed ones included).
    pub runs: usize,
    /// Samples whose exit was non-zero or that were killed by a signal.
    pub failed_runs: usize,
    /// Wall-clock time in ns; `None` without samples.
    pub wall: Option<Summary>,
    /// User CPU time in ns; `None` without samples.
    pub user: Option<Summary>,
    /// System CPU time in ns; `None` without samples.
    pub sys: Option<Summary>,
    /// Peak resident set size in bytes; `None` without samples.
    pub peak_rss: Option<Summary>,
    /// Wall-time outliers (modified z-score above 3.5).
    pub outliers: usize,
    /// Medians of the known counters every sample recorded (perf_event,
    /// callgrind, scale), in the order of `perfsleuth_model::COUNTERS`.
    pub counters: Vec<(perfsleuth_model::Counter, f64)>,
}

/// A benchmark compared with the reference benchmark of the same run.
#[derive(Debug, Clone, PartialEq)]
pub struct Comparison {
    /// Index of the compared benchmark in `Run::benchmarks`.
    pub index: usize,
    /// Index of the reference benchmark in `Run::benchmarks`.
    pub reference: usize,
    /// Median wall time ratio candidate/reference with its 95% bootstrap CI;
    /// `significant` when the in-run verdict is regressed or improved.
    pub time: Option<RatioEstimate>,
    /// Median peak RSS ratio candidate/reference, like `time`; `None` when
    /// either side has no samples or the reference's median is 0.
    pub peak_rss: Option<RatioEstimate>,
    /// Two-sided Mann-Whitney U p-value for wall time.
    pub time_p_value: Option<f64>,
    /// The bootstrap CI and the rank test disagree about wall time (one says
    /// different, the other not): no claim either way. Never for a paired
    /// estimate, whose interval and test are one.
    pub time_inconclusive: bool,
    /// The judged time and why ([`perfsleuth_model::judged_time`]).
    pub judged: JudgedTime,
    /// Adjacent pairs of runs the time estimate came from; `None` when
    /// too few were paired and the sides were judged unpaired.
    pub pairs: Option<usize>,
}

/// Everything the renderers need: per-benchmark summaries and comparisons.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// One report per benchmark, in run order.
    pub benchmarks: Vec<BenchmarkReport>,
    /// Index of the benchmark the others are compared with.
    pub reference: usize,
    /// One comparison per non-reference benchmark, in run order (or as
    /// [`RunReport::sort`] put them); empty with fewer than two benchmarks.
    pub comparisons: Vec<Comparison>,
    /// The order benchmarks are shown in: indices into `benchmarks`.
    pub order: Vec<usize>,
    /// Every time in this unit (hyperfine's `--time-unit`); `None`: the unit
    /// that suits each benchmark's median.
    pub time_unit: Option<TimeUnit>,
    /// The level of the comparisons' intervals: 95 %, or more where the run
    /// went on measuring while its comparison was undecided ([`in_run_rule`]).
    pub confidence: f64,
}

/// The order benchmarks are shown in (hyperfine's `--sort`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortOrder {
    /// Benchmarks as given; comparisons fastest first, by the ratio they show.
    #[default]
    Auto,
    /// Benchmarks and comparisons as given.
    Command,
    /// Benchmarks and comparisons by mean wall time, fastest first.
    MeanTime,
}

impl RunReport {
    /// Puts the benchmarks (and the comparisons) in `order`.
    pub fn sort(&mut self, order: SortOrder) {
        let key = |r: &BenchmarkReport| r.wall.as_ref().map_or(f64::INFINITY, |w| w.mean);
        let benchmarks = &self.benchmarks;
        let by_mean = |a: &usize, b: &usize| {
            let (ka, kb) = (
                benchmarks.get(*a).map_or(f64::INFINITY, key),
                benchmarks.get(*b).map_or(f64::INFINITY, key),
            );
            ka.total_cmp(&kb)
        };
        let mut shown: Vec<usize> = (0..self.benchmarks.len()).collect();
        if order == SortOrder::MeanTime {
            shown.sort_by(by_mean);
        }
        match order {
            SortOrder::Command => self.comparisons.sort_by_key(|c| c.index),
            SortOrder::MeanTime => self.comparisons.sort_by(|a, b| by_mean(&a.index, &b.index)),
            // Fastest first by the ratio each line shows (the judged time's
            // median ratio), so the list reads in the order of its numbers;
            // the mean, which no line shows, broke ties only.
            SortOrder::Auto => self.comparisons.sort_by(|a, b| {
                let ratio = |c: &Comparison| c.time.as_ref().map_or(f64::INFINITY, |t| t.ratio);
                ratio(a)
                    .total_cmp(&ratio(b))
                    .then_with(|| by_mean(&a.index, &b.index))
            }),
        }
        self.order = shown;
    }
}

/// Computes summaries and (when >1 benchmark) comparisons of each other
/// benchmark with `reference` (default 0; an out-of-range index also means 0).
///
/// Comparisons are the ratio candidate/reference of medians with a 95%
/// bootstrap CI for wall time and peak RSS, plus the Mann-Whitney p for wall
/// time, from `perfsleuth_stats::estimate`. A ratio is marked significant
/// when `perfsleuth_stats::decide` under [`VerdictRule::IN_RUN`] says
/// regressed or improved: the CI excludes 1.0, the rank test agrees, and both
/// sides have at least its `min_samples`.
pub fn analyze(run: &Run, reference: Option<usize>) -> RunReport {
    let rule = in_run_rule(look_of(run));
    // An imported run's tool reported no CPU times: zeros there are not a
    // measurement, so they are not shown as "User: 0 ns".
    let imported = run.origin() == perfsleuth_model::RunOrigin::Import;
    let benchmarks: Vec<BenchmarkReport> = run
        .benchmarks
        .iter()
        .map(|b| benchmark_report(b, imported))
        .collect();
    let reference = reference.filter(|&r| r < run.benchmarks.len()).unwrap_or(0);
    let others: Vec<usize> = (0..run.benchmarks.len())
        .filter(|&i| i != reference)
        .collect();
    // Each comparison bootstraps on its own fixed seed, so splitting them
    // over the CPUs changes no number, only how long a run of many
    // benchmarks takes to summarise (docs/PERFORMANCE.md, "report").
    let threads = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(others.len().max(1));
    let chunk = others.len().div_ceil(threads).max(1);
    let comparisons: Vec<Comparison> = if run.benchmarks.len() > 1 {
        std::thread::scope(|scope| {
            let handles: Vec<_> = others
                .chunks(chunk)
                .map(|part| {
                    scope.spawn(move || {
                        part.iter()
                            .map(|&i| {
                                compare(
                                    &run.benchmarks[reference],
                                    &run.benchmarks[i],
                                    i,
                                    reference,
                                    &rule,
                                )
                            })
                            .collect::<Vec<_>>()
                    })
                })
                .collect();
            handles
                .into_iter()
                .flat_map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
                .collect()
        })
    } else {
        Vec::new()
    };
    RunReport {
        order: (0..benchmarks.len()).collect(),
        benchmarks,
        reference,
        comparisons,
        time_unit: None,
        confidence: 1.0 - rule.alpha,
    }
}

/// The look a run that went on measuring while undecided stopped at, from
/// the rounds it planned and measured ([`Run::looks`]); `None` for a run
/// judged once.
pub fn look_of(run: &Run) -> Option<u32> {
    run.looks()
        .map(|(planned, measured)| perfsleuth_stats::look_for_rounds(planned, measured))
}

/// The in-run rule ([`VerdictRule::IN_RUN`]) at `look` of a run that went on
/// measuring while its comparison was undecided: α spent in halves over the
/// looks (`perfsleuth_stats::look_alpha`); the full α for a run judged once.
pub fn in_run_rule(look: Option<u32>) -> VerdictRule {
    let mut rule = VerdictRule::IN_RUN;
    if let Some(look) = look {
        rule.alpha = perfsleuth_stats::look_alpha(rule.alpha, look);
    }
    rule
}

/// Whether a comparison in `run`'s summary (as measured so far, at the look
/// its rounds make) is still undecided: not flagged, and its interval
/// reaches beyond ±1 % (the band within which interleaved comparisons call
/// no change). Two commands in one run measure more rounds while it is.
pub fn undecided(run: &Run, reference: Option<usize>) -> bool {
    let band = VerdictRule::default().noise_threshold;
    analyze(run, reference).comparisons.iter().any(|c| {
        c.time
            .as_ref()
            .is_some_and(|t| !t.significant && (t.ci.lo < 1.0 - band || t.ci.hi > 1.0 + band))
    })
}

/// Summaries of one benchmark. Failed samples stay in the statistics: they
/// were measured like the others, and the renderers warn about them.
fn benchmark_report(b: &Benchmark, imported: bool) -> BenchmarkReport {
    let wall = summarize(&b.values(Metric::Wall));
    let cpu = |m: Metric| {
        let v = b.values(m);
        if imported && v.iter().all(|x| *x == 0.0) {
            None
        } else {
            summarize(&v)
        }
    };
    BenchmarkReport {
        name: b.name.clone(),
        command: b.command.clone(),
        parameters: b.parameters.clone(),
        runs: b.samples.len(),
        failed_runs: b.samples.iter().filter(|s| !s.succeeded()).count(),
        outliers: wall.as_ref().map_or(0, |s| s.outliers.len()),
        wall,
        user: cpu(Metric::User),
        sys: cpu(Metric::Sys),
        peak_rss: summarize(&b.values(Metric::PeakRss)),
        counters: b
            .counters()
            .into_iter()
            .filter_map(|c| {
                let mut v = b.values(Metric::Counter(c));
                v.sort_by(f64::total_cmp);
                Some((c, perfsleuth_stats::median(&v)?))
            })
            .collect(),
    }
}

/// Compares `candidate` (at `index`) with `reference` (at `ref_index`) with
/// the one verdict of `perfsleuth-stats`, under its in-run rule. The two
/// were measured interleaved, so the estimate pairs their adjacent runs
/// ([`perfsleuth_stats::estimate_pairs`]); the time judged is CPU time for a
/// program that keeps one CPU busy without waiting, wall time otherwise.
fn compare(
    reference: &Benchmark,
    candidate: &Benchmark,
    index: usize,
    ref_index: usize,
    rule: &VerdictRule,
) -> Comparison {
    let level = 1.0 - rule.alpha;
    let (rounds_r, rounds_c) = (
        perfsleuth_model::by_round(&reference.samples),
        perfsleuth_model::by_round(&candidate.samples),
    );
    let pairs = perfsleuth_model::adjacent_pairs(&rounds_r, &rounds_c);
    let judge = |metric: Metric| {
        let values: Vec<(f64, f64)> = pairs
            .iter()
            .map(|(b, c)| (metric.of(b), metric.of(c)))
            .collect();
        let (est, n_pairs) = match perfsleuth_stats::estimate_pairs(&values, level) {
            Some(p) => (p.estimate, Some(p.pairs)),
            None => {
                let (base, cand) = (reference.values(metric), candidate.values(metric));
                (estimate(&[base], &[cand], level, RESAMPLES, SEED), None)
            }
        };
        let verdict = est.change.as_ref().map(|change| {
            decide(
                rule,
                &Evidence::Sampled {
                    change,
                    p_value: est.p_value.unwrap_or(f64::NAN),
                    n_baseline: est.n_baseline,
                    n_candidate: est.n_candidate,
                },
                Direction::LowerIsBetter,
            )
        });
        let ratio = est.change.as_ref().map(|c| RatioEstimate {
            ratio: 1.0 + c.change,
            ci: Interval {
                lo: 1.0 + c.ci.lo,
                hi: 1.0 + c.ci.hi,
            },
            significant: matches!(verdict, Some(Verdict::Regressed | Verdict::Improved)),
            resamples: c.resamples,
        });
        (ratio, est.p_value, verdict, n_pairs)
    };
    let (all_r, all_c): (Vec<&Sample>, Vec<&Sample>) = (
        reference.samples.iter().collect(),
        candidate.samples.iter().collect(),
    );
    let judged = perfsleuth_model::judged_time(&all_r, &all_c);
    // One seed for both, as the summary always had: a rerun prints the same intervals.
    let (time, time_p_value, time_verdict, pairs) = judge(judged.metric);
    let (peak_rss, _, _, _) = judge(Metric::PeakRss);
    // Under the in-run rule (zero threshold) "inconclusive" covers two cases
    // the summary words differently: the CI spans no change while the test
    // agrees (no significant difference), or the CI and the test disagree
    // (unpaired estimates only).
    let disagree = match (&time, time_p_value) {
        (Some(t), Some(p)) => (t.ci.lo > 1.0 || t.ci.hi < 1.0) != (p < rule.alpha),
        _ => false,
    };
    Comparison {
        index,
        reference: ref_index,
        time,
        peak_rss,
        time_p_value,
        time_inconclusive: time_verdict == Some(Verdict::Inconclusive) && disagree,
        judged,
        pairs,
    }
}

/// Whether both sides have enough samples for a significance claim.
pub fn enough_runs(a: usize, b: usize) -> bool {
    let n = VerdictRule::IN_RUN.min_samples;
    a >= n && b >= n
}

#[cfg(any(test, feature = "testutil"))]
#[doc(hidden)]
pub mod testutil {
    //! Hand-built runs shared by this crate's tests and the renderers'
    //! (`perfsleuth-report` turns the `testutil` feature on for its tests).

    use perfsleuth_model::{Benchmark, Environment, ImpactClass, Mode, Run, RunStatus, Sample};

    /// A successful sample with the given wall time and peak RSS; user and
    /// system time are fixed fractions so summaries are easy to predict.
    pub fn sample(iteration: u32, wall_ns: u64, rss: u64) -> Sample {
        Sample {
            iteration,
            round: 0,
            wall_ns,
            wall_exact_ns: None,
            user_ns: wall_ns * 8 / 10,
            sys_ns: wall_ns / 10,
            peak_rss_bytes: rss,
            minor_faults: 100 + u64::from(iteration),
            major_faults: 0,
            voluntary_cs: 2,
            involuntary_cs: 1,
            exit_code: Some(0),
            signal: None,
            counters: Default::default(),
        }
    }

    /// A benchmark whose samples have the given wall times and a constant RSS.
    pub fn bench(name: &str, walls: &[u64], rss: u64) -> Benchmark {
        Benchmark {
            locks: None,
            stacks: None,
            allocs: None,
            name: name.to_string(),
            command: name.to_string(),
            argv: name.split(' ').map(str::to_string).collect(),
            parameters: Default::default(),
            facts: Default::default(),
            samples: walls
                .iter()
                .enumerate()
                .map(|(i, &w)| sample(i as u32, w, rss))
                .collect(),
            profile: None,
            summaries: Vec::new(),
        }
    }

    /// A complete run holding `benchmarks`.
    pub fn run(benchmarks: Vec<Benchmark>) -> Run {
        let mut environment = Environment::default();
        environment.set("cpu.model", "Test CPU @ 3.0GHz", ImpactClass::Identity);
        environment.set("cpu.governor", "performance", ImpactClass::Performance);
        Run {
            id: Some(12),
            uuid: None,
            started_at: "2024-02-29T12:34:56.123Z".to_string(),
            ended_at: Some("2024-02-29T12:35:06.456Z".to_string()),
            status: RunStatus::Complete,
            tool_version: "0.1.0".to_string(),
            git: None,
            mode: Mode::Walltime,
            options: serde_json::json!({"warmup": 3}),
            environment,
            benchmarks,
            probes: Vec::new(),
        }
    }

    /// `n` wall times spread evenly around `center_ns` by +-`spread_ns`, in a
    /// shuffled order so medians do not depend on input order.
    pub fn spread(n: usize, center_ns: u64, spread_ns: u64) -> Vec<u64> {
        (0..n)
            .map(|i| {
                let k = (i * 7) % n;
                let offset = if n > 1 {
                    (2 * spread_ns * k as u64) / (n as u64 - 1)
                } else {
                    spread_ns
                };
                center_ns - spread_ns + offset
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::testutil::*;
    use super::*;
    use perfsleuth_model::RunStatus;

    #[test]
    fn summaries_cover_every_benchmark() {
        let r = run(vec![bench("a", &[10, 20, 30], 1000), bench("b", &[], 0)]);
        let rep = analyze(&r, None);
        assert_eq!(rep.benchmarks.len(), 2);
        let a = &rep.benchmarks[0];
        assert_eq!((a.runs, a.failed_runs, a.outliers), (3, 0, 0));
        assert_eq!(a.wall.as_ref().unwrap().median, 20.0);
        assert_eq!(a.peak_rss.as_ref().unwrap().median, 1000.0);
        let b = &rep.benchmarks[1];
        assert_eq!(b.runs, 0);
        assert!(b.wall.is_none() && b.peak_rss.is_none());
        assert_eq!(rep.comparisons.len(), 1);
        assert!(rep.comparisons[0].time.is_none());
        assert!(rep.comparisons[0].time_p_value.is_none());
    }

    #[test]
    fn failed_samples_are_counted() {
        let mut b = bench("a", &[10, 20, 30, 40], 1000);
        b.samples[1].exit_code = Some(1);
        b.samples[3].exit_code = None;
        b.samples[3].signal = Some(9);
        let rep = analyze(&run(vec![b]), None);
        assert_eq!(rep.benchmarks[0].failed_runs, 2);
        assert_eq!(rep.benchmarks[0].runs, 4);
        assert!(rep.comparisons.is_empty());
    }

    #[test]
    fn comparisons_skip_the_reference() {
        let r = run(vec![
            bench("a", &spread(20, 1_000_000, 10_000), 1 << 20),
            bench("b", &spread(20, 1_000_000, 10_000), 1 << 20),
            bench("c", &spread(20, 1_000_000, 10_000), 1 << 20),
        ]);
        let rep = analyze(&r, Some(1));
        assert_eq!(rep.reference, 1);
        let idx: Vec<_> = rep
            .comparisons
            .iter()
            .map(|c| (c.index, c.reference))
            .collect();
        assert_eq!(idx, vec![(0, 1), (2, 1)]);
        // Out of range falls back to the first benchmark instead of panicking.
        assert_eq!(analyze(&r, Some(9)).reference, 0);
    }

    #[test]
    fn a_clear_slowdown_is_significant_and_equal_samples_are_not() {
        let r = run(vec![
            bench("base", &spread(30, 1_000_000, 10_000), 1 << 20),
            bench("slow", &spread(30, 1_200_000, 10_000), 1 << 20),
            bench("same", &spread(30, 1_000_000, 10_000), 1 << 20),
        ]);
        let rep = analyze(&r, None);
        let slow = rep.comparisons[0].time.as_ref().unwrap();
        assert!((slow.ratio - 1.2).abs() < 1e-6);
        assert!(slow.significant && slow.ci.lo > 1.0);
        assert!(rep.comparisons[0].time_p_value.unwrap() < 0.001);
        let same = rep.comparisons[1].time.as_ref().unwrap();
        assert!(!same.significant && same.ci.contains(1.0));
        assert!(rep.comparisons[1].time_p_value.unwrap() > 0.5);
        // Constant equal RSS on both sides: the ratio is exactly 1.
        let rss = rep.comparisons[0].peak_rss.as_ref().unwrap();
        assert_eq!((rss.ratio, rss.significant), (1.0, false));
    }

    #[test]
    fn a_time_difference_is_claimed_only_when_ci_and_rank_test_agree() {
        // Shifts from none to large, with overlapping noise: somewhere the two
        // tests disagree, and then no claim may be made.
        let base: Vec<u64> = (0..12).map(|i| 1_000 + (i * 37) % 100).collect();
        for shift in 0..60u64 {
            let cand: Vec<u64> = base.iter().map(|w| w + shift).collect();
            let report = analyze(&run(vec![bench("a", &base, 1), bench("b", &cand, 1)]), None);
            let c = &report.comparisons[0];
            let est = c.time.as_ref().unwrap();
            let p = c.time_p_value.unwrap();
            let ci_excludes = !est.ci.contains(1.0);
            let floor = VerdictRule::IN_RUN.noise_threshold;
            let beyond_floor = est.ci.lo > 1.0 + floor || est.ci.hi < 1.0 - floor;
            assert_eq!(
                est.significant,
                beyond_floor && p < VerdictRule::IN_RUN.alpha,
                "shift {shift}"
            );
            assert_eq!(
                c.time_inconclusive,
                ci_excludes != (p < VerdictRule::IN_RUN.alpha),
                "shift {shift}"
            );
        }
    }

    #[test]
    fn in_run_comparisons_pair_adjacent_runs_and_say_which_time_they_judge() {
        // Unequal counts (a side stopped early): the runs without a partner
        // are left out; the pairs decide.
        let r = run(vec![
            bench("a", &spread(30, 1_000_000, 10_000), 1),
            bench("b", &spread(20, 1_100_000, 10_000), 1),
        ]);
        let c = &analyze(&r, None).comparisons[0];
        assert_eq!(c.pairs, Some(20));
        assert_eq!(c.judged.metric, Metric::Cpu, "{c:?}");
        assert!(c.time.as_ref().unwrap().significant);
        // Fewer than 5 pairs: the unpaired estimate, which says nothing here.
        let r = run(vec![
            bench("a", &[100, 110, 120], 1),
            bench("b", &[200, 210, 220], 1),
        ]);
        let c = &analyze(&r, None).comparisons[0];
        assert_eq!(c.pairs, None);
        assert!(!c.time.as_ref().unwrap().significant);
        // A program that only sleeps has no CPU time: judged on wall time.
        let asleep = |name: &str, center: u64| {
            let mut b = bench(name, &spread(20, center, 10_000), 1);
            for s in &mut b.samples {
                (s.user_ns, s.sys_ns) = (0, 0);
            }
            b
        };
        let r = run(vec![asleep("a", 1_000_000), asleep("b", 1_200_000)]);
        let c = &analyze(&r, None).comparisons[0];
        assert_eq!(c.judged.metric, Metric::Wall, "{c:?}");
        assert!((c.time.as_ref().unwrap().ratio - 1.2).abs() < 0.01);
        // Two busy threads (CPU time above wall time): wall time.
        let threads = |name: &str| {
            let mut b = bench(name, &spread(20, 1_000_000, 10_000), 1);
            for s in &mut b.samples {
                s.user_ns = 2 * s.wall_ns;
            }
            b
        };
        let r = run(vec![threads("a"), threads("b")]);
        let c = &analyze(&r, None).comparisons[0];
        assert_eq!(c.judged.metric, Metric::Wall);
        assert!(c.judged.why.contains("runs in parallel"), "{c:?}");
    }

    #[test]
    fn too_few_runs_are_never_significant() {
        let r = run(vec![bench("a", &[100], 1000), bench("b", &[200], 2000)]);
        let rep = analyze(&r, None);
        let c = &rep.comparisons[0];
        let time = c.time.as_ref().unwrap();
        // One sample each: the bootstrap CI is the single point 2.0, which
        // excludes 1.0 but proves nothing.
        assert_eq!((time.ratio, time.ci.lo, time.ci.hi), (2.0, 2.0, 2.0));
        assert!(!time.significant);
        assert!(!c.peak_rss.as_ref().unwrap().significant);
    }

    #[test]
    fn analysis_is_reproducible() {
        let r = run(vec![
            bench("a", &spread(25, 5_000_000, 400_000), 1 << 20),
            bench("b", &spread(25, 5_100_000, 400_000), 1 << 21),
        ]);
        assert_eq!(analyze(&r, None), analyze(&r, None));
    }

    #[test]
    fn odd_runs_do_not_panic() {
        let mut empty = run(vec![]);
        empty.status = RunStatus::Interrupted;
        let rep = analyze(&empty, Some(3));
        assert!(rep.benchmarks.is_empty() && rep.comparisons.is_empty());
        let zeros = run(vec![bench("z", &[0, 0], 0), bench("y", &[0], 0)]);
        let rep = analyze(&zeros, None);
        assert!(rep.comparisons[0].time.is_none());
        assert!(rep.comparisons[0].peak_rss.is_none());
        assert_eq!(rep.comparisons[0].time_p_value, Some(1.0));
    }
}

#[cfg(test)]
mod order_tests {
    use super::testutil::{bench, run, spread};
    use super::{SortOrder, analyze};

    #[test]
    fn comparisons_read_in_the_order_of_the_ratios_they_show() {
        // `a` is faster by its median (what its line shows) but slower by its
        // mean (one slow run, which no line shows): "Comparison with" listed
        // it after `b`, in neither command nor time order (issue 38).
        let mut a = spread(20, 2_000_000, 10_000);
        a[7] = 100_000_000;
        let r = run(vec![
            bench("ref", &spread(20, 1_000_000, 10_000), 1 << 20),
            bench("b", &spread(20, 3_000_000, 10_000), 1 << 20),
            bench("a", &a, 1 << 20),
        ]);
        let mut rep = analyze(&r, None);
        rep.sort(SortOrder::Auto);
        let shown: Vec<usize> = rep.comparisons.iter().map(|c| c.index).collect();
        assert_eq!(shown, [2, 1], "fastest ratio first");
        rep.sort(SortOrder::MeanTime);
        let shown: Vec<usize> = rep.comparisons.iter().map(|c| c.index).collect();
        assert_eq!(shown, [1, 2], "hyperfine's mean-time order");
        rep.sort(SortOrder::Command);
        let shown: Vec<usize> = rep.comparisons.iter().map(|c| c.index).collect();
        assert_eq!(shown, [1, 2]);
    }
}
