//! The verdict rule: turns a relative change with its CI and a test p-value
//! into one word. A change is only called a regression or an improvement
//! when it is both statistically significant and too large to be noise.

use crate::bootstrap::RelativeChange;

/// Which way a metric gets better; defined here so the statistics do not
/// depend on the model crate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Smaller is better: times, memory, cycles.
    LowerIsBetter,
    /// Larger is better: throughput, operations per second.
    HigherIsBetter,
}

/// Outcome of comparing a candidate with its baseline on one metric.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Verdict {
    /// Significant, and the whole CI is beyond the threshold on the bad side.
    Regressed,
    /// Significant, and the whole CI is beyond the threshold on the good side.
    Improved,
    /// The whole CI lies inside the noise band: whatever changed is smaller
    /// than the threshold.
    NoChange,
    /// Neither: the CI reaches across an edge of the noise band (too wide to
    /// decide), or it lies beyond the band while the rank test is not
    /// significant (the two disagree). More samples decide it.
    Inconclusive,
    /// Too few samples or unusable numbers to say anything.
    InsufficientData,
}

/// Parameters of the verdict rule.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VerdictRule {
    /// Significance level the p-value must fall below (default 0.05).
    pub alpha: f64,
    /// Relative change the whole CI must exceed, e.g. 0.01 = 1% (default).
    pub noise_threshold: f64,
    /// Fewest samples per side for any verdict but insufficient data (default 3).
    pub min_samples: usize,
    /// Where wider than `noise_threshold`, the band the whole CI must lie in
    /// for `no change` (default 0: the threshold itself). Interleaved
    /// comparisons flag a change beyond a floor of ±0.2 % but still call no
    /// change within ±1 %: the floor lets +1 % be caught, the wider band
    /// lets an unchanged program end `no change` without the thousands of
    /// pairs a ±0.2 % interval takes (STATISTICS.md §8.5).
    pub no_change_within: f64,
}

impl Default for VerdictRule {
    fn default() -> VerdictRule {
        VerdictRule {
            alpha: 0.05,
            noise_threshold: 0.01,
            min_samples: 3,
            no_change_within: 0.0,
        }
    }
}

impl VerdictRule {
    /// The rule for benchmarks compared inside one run (the run summary):
    /// interleaved, so no between-run offset to allow for, only a floor of
    /// ±0.2 % the whole interval must pass — two identical commands in one
    /// run differed by 0.1–0.25 % on the 2-vCPU study host (which slot of
    /// the schedule each had), a systematic offset that enough pairs would
    /// otherwise call significant (docs/STATISTICS.md §8) — and at least 5
    /// samples a side, below which a bootstrap of medians has too few
    /// distinct values to exclude anything on real evidence.
    pub const IN_RUN: VerdictRule = VerdictRule {
        alpha: 0.05,
        noise_threshold: 0.002,
        min_samples: 5,
        no_change_within: 0.0,
    };

    /// Whether alpha is in (0, 1] and the threshold finite and >= 0; lets a
    /// config loader reject a rule before it silently yields
    /// insufficient data everywhere.
    pub fn is_valid(&self) -> bool {
        self.alpha > 0.0
            && self.alpha <= 1.0
            && self.noise_threshold >= 0.0
            && self.noise_threshold.is_finite()
            && self.no_change_within >= 0.0
            && self.no_change_within.is_finite()
    }

    /// The half-width of the band a CI must lie in for `no change`.
    pub fn no_change_band(&self) -> f64 {
        self.noise_threshold.max(self.no_change_within)
    }
}

/// About how many samples per side an interval of half-width `half` from
/// `n` samples needs to shrink to `room`: half-widths fall like 1/√n. None
/// when nothing can be said (no samples, no room, numbers not finite).
pub fn samples_to_narrow(n: usize, half: f64, room: f64) -> Option<f64> {
    (n > 0 && room > 0.0 && half.is_finite() && room.is_finite())
        .then(|| (n as f64 * (half / room).powi(2)).ceil())
}

/// Applies the verdict rule to a change (with its CI) and a p-value from a
/// test on the same samples (n_base and n_cand of them). In order:
/// 1. invalid rule, n < min_samples on either side, non-finite change or CI
///    bounds, lo > hi, or a p-value outside [0, 1] → insufficient data;
/// 2. NaN p-value: no change if the change and the whole CI are exactly 0
///    (both sides constant and equal: nothing moved, even though a test such
///    as Welch's has no variance to work with), otherwise insufficient data;
/// 3. p < alpha and the whole CI beyond +threshold or below -threshold →
///    regressed or improved, according to `direction`;
/// 4. the whole CI within ±threshold (or ±`no_change_within`, where wider) → no change;
/// 5. otherwise (the CI straddles a band edge, or lies beyond the band with
///    p >= alpha) → inconclusive.
///
/// Zero-variance samples need no special case beyond 2: both sides constant
/// and equal give a CI of [0, 0] and a rank-test p of 1 (no change); both
/// constant but different give a point CI at the true change, so the
/// threshold and the test's p decide as for any other data.
pub fn verdict(
    rule: &VerdictRule,
    change: &RelativeChange,
    p_value: f64,
    n_base: usize,
    n_cand: usize,
    direction: Direction,
) -> Verdict {
    let ci = change.ci;
    // Branch 1: nothing below is meaningful without these. NaN p is left
    // to branch 2.
    if !rule.is_valid()
        || n_base < rule.min_samples
        || n_cand < rule.min_samples
        || !change.change.is_finite()
        || !ci.lo.is_finite()
        || !ci.hi.is_finite()
        || ci.lo > ci.hi
        || (!p_value.is_nan() && !(0.0..=1.0).contains(&p_value))
    {
        return Verdict::InsufficientData;
    }
    // Branch 2: no p-value. A CI that is the point 0 already shows that no
    // resample moved the median at all: no change by any test.
    if p_value.is_nan() {
        let all_zero = change.change == 0.0 && ci.lo == 0.0 && ci.hi == 0.0;
        return if all_zero {
            Verdict::NoChange
        } else {
            Verdict::InsufficientData
        };
    }
    let t = rule.noise_threshold;
    // Branch 3: significant, and the whole CI clears the noise band, not just
    // the point estimate, so a barely-significant 0.5 % shift is no regression.
    if p_value < rule.alpha && (ci.lo > t || ci.hi < -t) {
        return signed(ci.lo, direction);
    }
    // Branch 4: the whole CI inside the band: whatever moved is noise-sized,
    // significant or not.
    let e = rule.no_change_band();
    if ci.lo >= -e && ci.hi <= e {
        return Verdict::NoChange;
    }
    // Branch 5: the CI reaches across a band edge, or it lies beyond the band
    // while the test is not significant. Calling either "unchanged" would
    // contradict the printed interval; calling it a change would be a guess.
    Verdict::Inconclusive
}

/// What a verdict is decided on.
#[derive(Debug, Clone, Copy)]
pub enum Evidence<'a> {
    /// An exact change: deterministic counts (simulation), identical within
    /// each side, so no test is needed.
    Exact(f64),
    /// A change estimated from samples, with its CI and a rank-test p-value.
    Sampled {
        /// The relative change and its CI.
        change: &'a RelativeChange,
        /// The test's p-value (NaN when it has none), BH-adjusted where that applies.
        p_value: f64,
        /// Samples on the baseline side.
        n_baseline: usize,
        /// Samples on the candidate side.
        n_candidate: usize,
    },
    /// A change between two summary values (machine probes: medians with an
    /// inter-quartile spread, no samples kept), with the half-width of their
    /// spread bands relative to the baseline value.
    Bands {
        /// candidate / baseline − 1.
        change: f64,
        /// (spread_a·a + spread_b·b) / 2, relative to a.
        band: f64,
    },
    /// A quantity estimated with a standard error (a fitted coefficient,
    /// USL's α and β), against zero: its normal interval at the rule's
    /// level. A NaN error (an exact fit) leaves the value itself, as
    /// [`Evidence::Exact`].
    Estimate {
        /// The estimate.
        value: f64,
        /// Its standard error.
        se: f64,
    },
}

/// The one verdict of perfsleuth: every comparison — `run`'s summary,
/// `compare`, `run --baseline`, sweeps level by level — is decided here.
///
/// An exact change is judged by the threshold alone (0 → unchanged, within
/// the threshold → within noise). A sampled change whose sample counts
/// cannot reach significance at all (3 vs 3 samples: the smallest possible
/// rank-test p is 0.10) is insufficient data; otherwise [`verdict`] decides.
/// A change between spread bands is unchanged while the bands overlap and
/// within noise below the threshold; at or beyond it, it counts.
pub fn decide(rule: &VerdictRule, evidence: &Evidence<'_>, direction: Direction) -> Verdict {
    match *evidence {
        Evidence::Exact(change) => {
            if change == 0.0 {
                return Verdict::NoChange;
            }
            if !change.is_finite() || !rule.is_valid() {
                return Verdict::InsufficientData;
            }
            if change.abs() <= rule.noise_threshold {
                return Verdict::NoChange;
            }
            signed(change, direction)
        }
        Evidence::Sampled {
            change,
            p_value,
            n_baseline,
            n_candidate,
        } => {
            if smallest_p(n_baseline, n_candidate) > rule.alpha {
                return Verdict::InsufficientData;
            }
            verdict(rule, change, p_value, n_baseline, n_candidate, direction)
        }
        Evidence::Estimate { value, se } => {
            if se.is_nan() {
                return decide(rule, &Evidence::Exact(value), direction);
            }
            if !value.is_finite() || !se.is_finite() || se < 0.0 || !rule.is_valid() {
                return Verdict::InsufficientData;
            }
            let half = crate::normal_quantile(1.0 - rule.alpha / 2.0) * se;
            let (lo, hi) = (value - half, value + half);
            if lo > rule.noise_threshold || hi < -rule.noise_threshold {
                signed(value, direction)
            } else if lo >= -rule.noise_threshold && hi <= rule.noise_threshold {
                Verdict::NoChange
            } else {
                Verdict::Inconclusive
            }
        }
        Evidence::Bands { change, band } => {
            if !change.is_finite() || !band.is_finite() || !rule.is_valid() {
                return Verdict::InsufficientData;
            }
            if change.abs() <= band.abs() || change.abs() < rule.noise_threshold {
                return Verdict::NoChange;
            }
            signed(change, direction)
        }
    }
}

/// Regressed or improved, by which way the metric gets better.
fn signed(change: f64, direction: Direction) -> Verdict {
    let worse = match direction {
        Direction::LowerIsBetter => change > 0.0,
        Direction::HigherIsBetter => change < 0.0,
    };
    if worse {
        Verdict::Regressed
    } else {
        Verdict::Improved
    }
}

/// The smallest two-sided p-value a rank test can give for `n` vs `m`
/// samples without ties: 2 / C(n + m, n).
pub fn smallest_p(n: usize, m: usize) -> f64 {
    if n == 0 || m == 0 {
        return 1.0;
    }
    // C(n + m, n) grows fast; past 1e6 the bound is far below any alpha.
    let mut c = 1.0f64;
    for i in 0..n.min(m) {
        c = c * (n + m - i) as f64 / (i + 1) as f64;
        if c > 1e6 {
            return 0.0;
        }
    }
    (2.0 / c).min(1.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_estimate_counts_when_its_normal_interval_excludes_zero() {
        let rule = VerdictRule {
            noise_threshold: 0.0,
            ..VerdictRule::default()
        };
        let d = |value: f64, se: f64| {
            decide(
                &rule,
                &Evidence::Estimate { value, se },
                Direction::LowerIsBetter,
            )
        };
        // 1.96 standard errors at α = 0.05.
        assert_eq!(d(0.0197, 0.01), Verdict::Regressed);
        assert_eq!(d(0.0195, 0.01), Verdict::Inconclusive);
        assert_eq!(d(-0.03, 0.01), Verdict::Improved);
        // An exact fit (no error) is the value itself.
        assert_eq!(d(0.001, f64::NAN), Verdict::Regressed);
        assert_eq!(d(0.0, f64::NAN), Verdict::NoChange);
        assert_eq!(d(f64::INFINITY, 0.01), Verdict::InsufficientData);
        assert_eq!(d(0.01, -1.0), Verdict::InsufficientData);
    }
    use crate::bootstrap::bootstrap_relative_change;
    use crate::describe::Interval;
    use crate::mann_whitney::mann_whitney_u;

    fn rc(change: f64, lo: f64, hi: f64) -> RelativeChange {
        RelativeChange {
            change,
            ci: Interval { lo, hi },
            resamples: 1000,
        }
    }

    const LOWER: Direction = Direction::LowerIsBetter;
    const HIGHER: Direction = Direction::HigherIsBetter;

    fn v(c: &RelativeChange, p: f64, dir: Direction) -> Verdict {
        verdict(&VerdictRule::default(), c, p, 10, 10, dir)
    }

    #[test]
    fn default_rule() {
        let r = VerdictRule::default();
        assert_eq!((r.alpha, r.noise_threshold, r.min_samples), (0.05, 0.01, 3));
        assert!(r.is_valid());
    }

    #[test]
    fn lower_is_better() {
        assert_eq!(v(&rc(0.05, 0.03, 0.07), 0.001, LOWER), Verdict::Regressed);
        assert_eq!(v(&rc(-0.05, -0.07, -0.03), 0.001, LOWER), Verdict::Improved);
        // The CI reaches across the +-1% band's edge: significant, but too
        // wide to say whether the change is beyond the threshold.
        assert_eq!(
            v(&rc(0.02, 0.005, 0.03), 0.001, LOWER),
            Verdict::Inconclusive
        );
        assert_eq!(
            v(&rc(-0.02, -0.03, -0.01), 0.001, LOWER),
            Verdict::Inconclusive
        );
        // The whole CI inside the band: no change, significant or not.
        assert_eq!(v(&rc(0.003, 0.001, 0.005), 0.001, LOWER), Verdict::NoChange);
        assert_eq!(v(&rc(0.0, -0.008, 0.009), 0.6, LOWER), Verdict::NoChange);
        // Not significant although the CI clears the threshold: the two
        // disagree, and "no change" would contradict the printed interval.
        assert_eq!(v(&rc(0.05, 0.03, 0.07), 0.2, LOWER), Verdict::Inconclusive);
        // Not significant and wider than the band: too wide to decide.
        assert_eq!(v(&rc(0.05, 0.005, 0.07), 0.2, LOWER), Verdict::Inconclusive);
        assert_eq!(v(&rc(0.0, -0.02, 0.02), 0.6, LOWER), Verdict::Inconclusive);
    }

    #[test]
    fn higher_is_better_reverses_sides() {
        assert_eq!(v(&rc(0.05, 0.03, 0.07), 0.001, HIGHER), Verdict::Improved);
        assert_eq!(
            v(&rc(-0.05, -0.07, -0.03), 0.001, HIGHER),
            Verdict::Regressed
        );
        assert_eq!(
            v(&rc(0.02, 0.005, 0.03), 0.001, HIGHER),
            Verdict::Inconclusive
        );
        assert_eq!(v(&rc(0.05, 0.03, 0.07), 0.2, HIGHER), Verdict::Inconclusive);
    }

    #[test]
    fn boundaries() {
        // p == alpha is not below alpha.
        assert_eq!(v(&rc(0.05, 0.03, 0.07), 0.05, LOWER), Verdict::Inconclusive);
        assert_eq!(
            v(&rc(0.05, -0.01, 0.07), 0.05, LOWER),
            Verdict::Inconclusive
        );
        // A CI edge exactly on the threshold is not beyond it…
        assert_eq!(
            v(&rc(0.05, 0.01, 0.07), 0.001, LOWER),
            Verdict::Inconclusive
        );
        assert_eq!(
            v(&rc(-0.05, -0.07, -0.01), 0.001, LOWER),
            Verdict::Inconclusive
        );
        // …but counts as inside the band.
        assert_eq!(v(&rc(0.0, -0.01, 0.01), 0.5, LOWER), Verdict::NoChange);
        // A zero threshold makes any CI excluding 0 decisive.
        let strict = VerdictRule {
            noise_threshold: 0.0,
            ..VerdictRule::default()
        };
        assert_eq!(
            verdict(&strict, &rc(0.002, 0.001, 0.003), 0.01, 5, 5, LOWER),
            Verdict::Regressed
        );
    }

    #[test]
    fn too_few_samples() {
        let c = rc(0.05, 0.03, 0.07);
        let rule = VerdictRule::default();
        assert_eq!(
            verdict(&rule, &c, 0.001, 2, 10, LOWER),
            Verdict::InsufficientData
        );
        assert_eq!(
            verdict(&rule, &c, 0.001, 10, 2, LOWER),
            Verdict::InsufficientData
        );
        assert_eq!(verdict(&rule, &c, 0.001, 3, 3, LOWER), Verdict::Regressed);
    }

    #[test]
    fn unusable_numbers() {
        let bad = [
            rc(f64::NAN, 0.03, 0.07),
            rc(0.05, f64::NEG_INFINITY, 0.07),
            rc(0.05, 0.03, f64::INFINITY),
            rc(0.05, 0.07, 0.03),
        ];
        for c in &bad {
            assert_eq!(v(c, 0.001, LOWER), Verdict::InsufficientData, "{c:?}");
        }
        let c = rc(0.05, 0.03, 0.07);
        assert_eq!(v(&c, f64::NAN, LOWER), Verdict::InsufficientData);
        assert_eq!(v(&c, -0.1, LOWER), Verdict::InsufficientData);
        assert_eq!(v(&c, 1.5, LOWER), Verdict::InsufficientData);
        // NaN p with a CI that is exactly 0: constant and equal sides.
        assert_eq!(v(&rc(0.0, 0.0, 0.0), f64::NAN, LOWER), Verdict::NoChange);
    }

    #[test]
    fn a_floor_below_the_no_change_band_flags_small_changes_and_still_ends_unchanged_ones() {
        // Interleaved comparisons: changes beyond ±0.2 % are flagged, an
        // interval within ±1 % is no change; between the two, the evidence
        // of a change wins (it is significant beyond the floor).
        let r = VerdictRule {
            noise_threshold: 0.002,
            no_change_within: 0.01,
            ..VerdictRule::default()
        };
        let at = |c, lo, hi, p| verdict(&r, &rc(c, lo, hi), p, 50, 50, LOWER);
        assert_eq!(
            at(0.009, 0.004, 0.014, 0.001),
            Verdict::Regressed,
            "+1 % caught"
        );
        assert_eq!(at(0.005, 0.003, 0.008, 0.001), Verdict::Regressed);
        assert_eq!(
            at(-0.001, -0.007, 0.006, 0.7),
            Verdict::NoChange,
            "A/A ends"
        );
        assert_eq!(at(0.004, -0.004, 0.012, 0.3), Verdict::Inconclusive);
        assert_eq!(
            at(0.001, 0.0005, 0.0015, 0.01),
            Verdict::NoChange,
            "inside the floor"
        );
        assert_eq!(r.no_change_band(), 0.01);
        assert_eq!(VerdictRule::default().no_change_band(), 0.01);
        assert!(
            !VerdictRule {
                no_change_within: f64::NAN,
                ..r
            }
            .is_valid()
        );
    }

    #[test]
    fn invalid_rules_give_insufficient_data() {
        let c = rc(0.05, 0.03, 0.07);
        let bad = [
            VerdictRule {
                alpha: 0.0,
                ..VerdictRule::default()
            },
            VerdictRule {
                alpha: f64::NAN,
                ..VerdictRule::default()
            },
            VerdictRule {
                alpha: 1.5,
                ..VerdictRule::default()
            },
            VerdictRule {
                noise_threshold: -0.01,
                ..VerdictRule::default()
            },
            VerdictRule {
                noise_threshold: f64::NAN,
                ..VerdictRule::default()
            },
            VerdictRule {
                noise_threshold: f64::INFINITY,
                ..VerdictRule::default()
            },
        ];
        for rule in &bad {
            assert!(!rule.is_valid());
            assert_eq!(
                verdict(rule, &c, 0.001, 10, 10, LOWER),
                Verdict::InsufficientData
            );
        }
    }

    /// End to end with the crate's own bootstrap and rank test.
    fn from_samples(base: &[f64], cand: &[f64]) -> Verdict {
        let change = bootstrap_relative_change(base, cand, 0.95, 2_000, 1).unwrap();
        let p = mann_whitney_u(base, cand).unwrap().p_value;
        verdict(
            &VerdictRule::default(),
            &change,
            p,
            base.len(),
            cand.len(),
            LOWER,
        )
    }

    #[test]
    fn zero_variance_samples() {
        // Constant and equal: CI [0, 0], rank-test p = 1.
        assert_eq!(from_samples(&[5.0; 6], &[5.0; 6]), Verdict::NoChange);
        // Constant and 20% apart: point CI at +0.2; the tie-corrected rank
        // test gives p ~ 0.0047 for 5 vs 5 (scipy.stats.mannwhitneyu).
        assert_eq!(from_samples(&[5.0; 5], &[6.0; 5]), Verdict::Regressed);
        assert_eq!(from_samples(&[6.0; 5], &[5.0; 5]), Verdict::Improved);
        // Constant and 0.5% apart: significant, but inside the noise band.
        assert_eq!(from_samples(&[200.0; 5], &[201.0; 5]), Verdict::NoChange);
        // 2 vs 2 constant: the rank test cannot reach p < 0.05 (and n < 3).
        assert_eq!(
            from_samples(&[5.0; 2], &[6.0; 2]),
            Verdict::InsufficientData
        );
    }

    #[test]
    fn noisy_end_to_end() {
        let base: Vec<f64> = (0..30)
            .map(|i| 100.0 + f64::from(i * 7 % 11) * 0.3)
            .collect();
        let slow: Vec<f64> = base.iter().map(|v| v * 1.10).collect();
        let tiny: Vec<f64> = base.iter().map(|v| v * 1.002).collect();
        assert_eq!(from_samples(&base, &slow), Verdict::Regressed);
        assert_eq!(from_samples(&slow, &base), Verdict::Improved);
        assert_eq!(from_samples(&base, &base), Verdict::NoChange);
        assert_ne!(from_samples(&base, &tiny), Verdict::Regressed);
    }

    #[test]
    fn decide_judges_exact_changes_by_the_threshold_alone() {
        let r = VerdictRule::default();
        assert_eq!(decide(&r, &Evidence::Exact(0.0), LOWER), Verdict::NoChange);
        assert_eq!(
            decide(&r, &Evidence::Exact(0.005), LOWER),
            Verdict::NoChange
        );
        assert_eq!(decide(&r, &Evidence::Exact(0.2), LOWER), Verdict::Regressed);
        assert_eq!(decide(&r, &Evidence::Exact(0.2), HIGHER), Verdict::Improved);
        assert_eq!(
            decide(&r, &Evidence::Exact(f64::NAN), LOWER),
            Verdict::InsufficientData
        );
    }

    #[test]
    fn decide_refuses_sample_counts_that_cannot_reach_significance() {
        let c = rc(0.5, 0.3, 0.7);
        let sampled = |n| Evidence::Sampled {
            change: &c,
            p_value: 0.1,
            n_baseline: n,
            n_candidate: n,
        };
        let r = VerdictRule::default();
        // 3 vs 3: the smallest possible p is 2/20 = 0.10 > 0.05.
        assert!((smallest_p(3, 3) - 0.1).abs() < 1e-12);
        assert_eq!(decide(&r, &sampled(3), LOWER), Verdict::InsufficientData);
        // 4 vs 4 can (2/70): the rule decides, here inconclusive (p 0.1).
        assert_eq!(decide(&r, &sampled(4), LOWER), Verdict::Inconclusive);
        assert_eq!(smallest_p(0, 5), 1.0);
        assert_eq!(smallest_p(400, 400), 0.0);
    }

    #[test]
    fn decide_on_spread_bands() {
        let r = VerdictRule {
            noise_threshold: 0.10,
            ..VerdictRule::default()
        };
        let bands = |change, band| decide(&r, &Evidence::Bands { change, band }, LOWER);
        assert_eq!(bands(0.5, 0.6), Verdict::NoChange, "bands overlap");
        assert_eq!(bands(0.05, 0.01), Verdict::NoChange);
        assert_eq!(
            bands(0.10, 0.01),
            Verdict::Regressed,
            "the threshold counts"
        );
        assert_eq!(bands(-0.2, 0.01), Verdict::Improved);
    }
}
