//! One estimate of a difference between two sets of samples: the relative
//! change of the median with its bootstrap CI, and the rank test, with one
//! set of constants, so that every command states differences alike.

use crate::bootstrap::{RelativeChange, bootstrap_relative_change, bootstrap_relative_change_runs};
use crate::mann_whitney::mann_whitney_u;
use crate::normal::{normal_cdf, t_quantile};

/// Bootstrap resamples per estimate: enough that the 2.5 % and 97.5 %
/// percentiles move by well under the printed precision between seeds.
pub const RESAMPLES: usize = 10_000;

/// The bootstrap seed ("perfsleu" in ASCII), so the same inputs always give
/// the same interval; callers that estimate many metrics mix a per-metric key
/// into it so the estimates are not correlated.
pub const SEED: u64 = 0x7065_7266_736c_6575;

/// A difference between a baseline and a candidate, before any verdict.
#[derive(Debug, Clone, PartialEq)]
pub struct Estimate {
    /// Relative change of the median with its CI; `None` when undefined
    /// (a side empty or non-finite, a baseline median of 0).
    pub change: Option<RelativeChange>,
    /// Two-sided Mann-Whitney U p-value on the pooled samples.
    pub p_value: Option<f64>,
    /// Baseline samples, pooled over its groups.
    pub n_baseline: usize,
    /// Candidate samples, pooled over its groups.
    pub n_candidate: usize,
}

/// Estimates the change from `baseline` to `candidate`, each given as groups
/// of samples (one group per run and round). With several groups on a side
/// the bootstrap is two-stage (groups, then samples), so a shift between
/// rounds or runs widens the CI instead of passing for a change, and the
/// interval is expanded for the few groups it learned that spread from
/// ([`expanded_confidence`]); the rank test pools.
/// `confidence` is the interval's level (1 − the rule's α, so the interval
/// and the verdict's test speak of one error rate); `resamples` is
/// [`RESAMPLES`] everywhere but in quick tests.
pub fn estimate(
    baseline: &[Vec<f64>],
    candidate: &[Vec<f64>],
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Estimate {
    let (bp, cp) = (baseline.concat(), candidate.concat());
    let change = if baseline.len() > 1 || candidate.len() > 1 {
        let level = expanded_confidence(confidence, baseline.len(), candidate.len());
        bootstrap_relative_change_runs(baseline, candidate, level, resamples, seed)
    } else {
        bootstrap_relative_change(&bp, &cp, confidence, resamples, seed)
    };
    Estimate {
        change,
        p_value: mann_whitney_u(&bp, &cp).map(|t| t.p_value),
        n_baseline: bp.len(),
        n_candidate: cp.len(),
    }
}

/// The percentile level that gives `confidence` coverage when a side's
/// spread is learned from only a few groups (Hesterberg's expanded
/// percentile interval): a bootstrap of G group means sees their variance
/// shrunk by (G-1)/G and takes normal quantiles where Student's t belongs,
/// so three rounds a side cover well under 95 %. The level is widened until its normal quantile equals
/// sqrt(G/(G-1)) t(df); G is the fewest groups of a side that has more
/// than one (a side with one group adds no between-group spread to learn),
/// df the groups less one summed over such sides.
pub fn expanded_confidence(confidence: f64, base_groups: usize, cand_groups: usize) -> f64 {
    let learned: Vec<f64> = [base_groups, cand_groups]
        .into_iter()
        .filter(|&g| g > 1)
        .map(|g| g as f64)
        .collect();
    let Some(g) = learned.iter().copied().reduce(f64::min) else {
        return confidence;
    };
    // Degrees of freedom as Welch would count them for equal spreads: each
    // side with several groups contributes its groups less one.
    let df: f64 = learned.iter().map(|g| g - 1.0).sum();
    let z = (g / (g - 1.0)).sqrt() * t_quantile(0.5 + confidence / 2.0, df);
    let wider = 1.0 - 2.0 * normal_cdf(-z);
    if !wider.is_finite() || wider <= confidence {
        confidence
    } else {
        // Beyond what 10 000 resamples resolve (two groups and one), the
        // extreme resamples are the interval.
        wider.min(1.0 - 1e-9)
    }
}

#[cfg(test)]
mod tests {

    use super::*;
    use crate::describe::DEFAULT_CONFIDENCE;

    #[test]
    fn one_group_a_side_is_the_plain_bootstrap_and_several_widen_it() {
        let base: Vec<f64> = (0..20).map(|i| 100.0 + (i % 5) as f64).collect();
        let cand: Vec<f64> = base.iter().map(|x| x * 1.05).collect();
        let one = estimate(
            std::slice::from_ref(&base),
            std::slice::from_ref(&cand),
            DEFAULT_CONFIDENCE,
            RESAMPLES,
            SEED,
        );
        let plain =
            bootstrap_relative_change(&base, &cand, DEFAULT_CONFIDENCE, RESAMPLES, SEED).unwrap();
        assert_eq!(one.change.as_ref(), Some(&plain));
        assert_eq!((one.n_baseline, one.n_candidate), (20, 20));
        assert!(one.p_value.unwrap() < 0.001);
        // The same samples as two runs that disagree by 4 %: a wider CI.
        let (a, b) = base.split_at(10);
        let shifted: Vec<f64> = b.iter().map(|x| x * 1.04).collect();
        let two = estimate(
            &[a.to_vec(), shifted],
            &[cand],
            DEFAULT_CONFIDENCE,
            RESAMPLES,
            SEED,
        );
        let w = |e: &Estimate| e.change.as_ref().map(|c| c.ci.hi - c.ci.lo).unwrap();
        assert!(w(&two) > w(&one), "{two:?} vs {one:?}");
    }

    #[test]
    fn undefined_changes_have_no_estimate() {
        let e = estimate(
            &[vec![0.0, 0.0, 0.0]],
            &[vec![1.0, 2.0, 3.0]],
            DEFAULT_CONFIDENCE,
            RESAMPLES,
            SEED,
        );
        assert!(e.change.is_none());
        let e = estimate(&[], &[vec![1.0]], DEFAULT_CONFIDENCE, RESAMPLES, SEED);
        assert!(e.change.is_none() && e.p_value.is_none());
    }

    #[test]
    fn expanded_level_widens_only_for_few_groups() {
        assert_eq!(expanded_confidence(0.95, 1, 1), 0.95);
        let five = expanded_confidence(0.95, 5, 5);
        // sqrt(5/4) * t(8) = 2.58: a two-sided level of 99.0 %.
        assert!((five - 0.990).abs() < 5e-4, "{five}");
        let thirty = expanded_confidence(0.95, 30, 30);
        assert!(thirty > 0.95 && thirty < 0.97, "{thirty}");
        assert!(expanded_confidence(0.95, 2, 1) > 0.9999);
    }

    #[test]
    fn five_rounds_a_side_cover_the_true_change_about_95_percent() {
        // Each side: 5 rounds whose offsets vary (sd 3 %) far more than the
        // samples inside a round (sd 0.5 %), the shape measured on the VMs.
        // Identical sides: a 95 % interval must exclude 0 in about 5 % of
        // trials at most; the plain percentile interval misses 16 of these
        // 300 (5.3 %), the expanded one 7.
        let mut rng = crate::rng::Rng::new(42);
        let side = |rng: &mut crate::rng::Rng| -> Vec<Vec<f64>> {
            (0..ROUNDS)
                .map(|_| {
                    let offset = 1.0 + 0.03 * rng.next_normal();
                    (0..10)
                        .map(|_| 100.0 * offset * (1.0 + 0.005 * rng.next_normal()))
                        .collect()
                })
                .collect()
        };
        let trials = 300;
        const ROUNDS: usize = 5;
        let mut missed = 0;
        for t in 0..trials {
            let (b, c) = (side(&mut rng), side(&mut rng));
            let e = estimate(&b, &c, DEFAULT_CONFIDENCE, 1000, SEED ^ t);
            let ci = e.change.unwrap().ci;
            if ci.lo > 0.0 || ci.hi < 0.0 {
                missed += 1;
            }
        }
        assert!(missed <= 15, "{missed} of {trials} intervals missed 0");
    }
}
