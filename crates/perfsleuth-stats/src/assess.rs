//! One estimate of a difference between two sets of samples: the relative
//! change of the median with its bootstrap CI, and the rank test, with one
//! set of constants, so that every command states differences alike.

use crate::bootstrap::{RelativeChange, bootstrap_relative_change, bootstrap_relative_change_runs};
use crate::describe::DEFAULT_CONFIDENCE;
use crate::mann_whitney::mann_whitney_u;

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
/// of samples (one group per run). With several groups on a side the
/// bootstrap is two-stage (groups, then samples), so a shift between runs
/// widens the CI instead of passing for a change; the rank test pools.
/// `resamples` is [`RESAMPLES`] everywhere but in quick tests.
pub fn estimate(
    baseline: &[Vec<f64>],
    candidate: &[Vec<f64>],
    resamples: usize,
    seed: u64,
) -> Estimate {
    let (bp, cp) = (baseline.concat(), candidate.concat());
    let change = if baseline.len() > 1 || candidate.len() > 1 {
        bootstrap_relative_change_runs(baseline, candidate, DEFAULT_CONFIDENCE, resamples, seed)
    } else {
        bootstrap_relative_change(&bp, &cp, DEFAULT_CONFIDENCE, resamples, seed)
    };
    Estimate {
        change,
        p_value: mann_whitney_u(&bp, &cp).map(|t| t.p_value),
        n_baseline: bp.len(),
        n_candidate: cp.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_group_a_side_is_the_plain_bootstrap_and_several_widen_it() {
        let base: Vec<f64> = (0..20).map(|i| 100.0 + (i % 5) as f64).collect();
        let cand: Vec<f64> = base.iter().map(|x| x * 1.05).collect();
        let one = estimate(
            std::slice::from_ref(&base),
            std::slice::from_ref(&cand),
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
        let two = estimate(&[a.to_vec(), shifted], &[cand], RESAMPLES, SEED);
        let w = |e: &Estimate| e.change.as_ref().map(|c| c.ci.hi - c.ci.lo).unwrap();
        assert!(w(&two) > w(&one), "{two:?} vs {one:?}");
    }

    #[test]
    fn undefined_changes_have_no_estimate() {
        let e = estimate(
            &[vec![0.0, 0.0, 0.0]],
            &[vec![1.0, 2.0, 3.0]],
            RESAMPLES,
            SEED,
        );
        assert!(e.change.is_none());
        let e = estimate(&[], &[vec![1.0]], RESAMPLES, SEED);
        assert!(e.change.is_none() && e.p_value.is_none());
    }
}
