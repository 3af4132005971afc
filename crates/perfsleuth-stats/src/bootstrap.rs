//! Percentile bootstrap of a ratio of medians, for "candidate is X% slower"
//! statements that do not assume any distribution of run times.

use crate::describe::{Interval, median_in_place, percentile};
use crate::rng::Rng;
use crate::valid_confidence;

/// Ratio candidate/baseline of a location statistic with a bootstrap CI.
#[derive(Debug, Clone, PartialEq)]
pub struct RatioEstimate {
    /// Point estimate: median(candidate) / median(baseline) on the full samples.
    pub ratio: f64,
    /// Percentile-bootstrap confidence interval of the ratio.
    pub ci: Interval,
    /// Whether the CI excludes 1.0 (a real difference at that confidence).
    pub significant: bool,
    /// Resamples that produced a finite ratio (the requested count unless
    /// some resampled baseline medians were 0).
    pub resamples: usize,
}

/// Fills `out` with a with-replacement resample of `src` (same length).
fn resample_into(rng: &mut Rng, src: &[f64], out: &mut [f64]) {
    for slot in out.iter_mut() {
        *slot = src[rng.below(src.len())];
    }
}

/// Percentile bootstrap of median(candidate)/median(baseline): each side is
/// resampled independently with replacement `resamples` times from a PRNG
/// seeded with `seed`, so equal inputs give equal results. None if either
/// side is empty or has a non-finite value, the baseline median is 0,
/// `resamples` is 0, confidence is not in (0, 1), or no resample gave a
/// finite ratio.
pub fn bootstrap_median_ratio(
    baseline: &[f64],
    candidate: &[f64],
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Option<RatioEstimate> {
    let clean = |s: &[f64]| !s.is_empty() && s.iter().all(|v| v.is_finite());
    if !clean(baseline) || !clean(candidate) || resamples == 0 || !valid_confidence(confidence) {
        return None;
    }
    // Buffers are allocated once and reused: select_nth reorders them, but
    // every resample overwrites them completely anyway.
    let mut base_buf = baseline.to_vec();
    let mut cand_buf = candidate.to_vec();
    let base_median = median_in_place(&mut base_buf);
    if base_median == 0.0 {
        return None;
    }
    let ratio = median_in_place(&mut cand_buf) / base_median;

    let mut rng = Rng::new(seed);
    let mut ratios = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        resample_into(&mut rng, baseline, &mut base_buf);
        resample_into(&mut rng, candidate, &mut cand_buf);
        let r = median_in_place(&mut cand_buf) / median_in_place(&mut base_buf);
        // A resampled baseline median of 0 gives inf/NaN; such draws carry
        // no usable ratio, so they are dropped and reported via `resamples`.
        if r.is_finite() {
            ratios.push(r);
        }
    }
    if ratios.is_empty() {
        return None;
    }
    ratios.sort_unstable_by(f64::total_cmp);
    let alpha2 = (1.0 - confidence) / 2.0;
    let ci = Interval {
        lo: percentile(&ratios, 100.0 * alpha2)?,
        hi: percentile(&ratios, 100.0 * (1.0 - alpha2))?,
    };
    Some(RatioEstimate {
        ratio,
        ci,
        significant: ci.lo > 1.0 || ci.hi < 1.0,
        resamples: ratios.len(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resampled_median_distribution_is_exact() {
        // Baseline {1, 2, 3}: the median of 3 draws with replacement is 1 or 3
        // with probability 7/27 each and 2 with 13/27, so the ratio 6/median
        // takes values {6, 3, 2}; the 2.5% and 97.5% points are 2 and 6.
        let r = bootstrap_median_ratio(&[1.0, 2.0, 3.0], &[6.0], 0.95, 10_000, 1).unwrap();
        assert_eq!(r.ratio, 3.0);
        assert_eq!(r.ci, Interval { lo: 2.0, hi: 6.0 });
        // Every possible resampled ratio is >= 2, so 1.0 is excluded.
        assert!(r.significant);
        assert_eq!(r.resamples, 10_000);
    }

    #[test]
    fn resample_frequencies_match_theory() {
        // The median of 3 draws from {1, 2, 3} is 1 with probability 7/27.
        let mut rng = Rng::new(5);
        let src = [1.0, 2.0, 3.0];
        let mut buf = [0.0; 3];
        let trials = 27_000;
        let mut ones = 0;
        for _ in 0..trials {
            resample_into(&mut rng, &src, &mut buf);
            if median_in_place(&mut buf) == 1.0 {
                ones += 1;
            }
        }
        // Expected 7000, sd ~72; a 5 sigma band.
        assert!((ones as i64 - 7000).abs() < 360, "{ones}");
    }

    #[test]
    fn constant_samples_give_degenerate_ci() {
        let r = bootstrap_median_ratio(&[2.0; 5], &[3.0; 7], 0.95, 200, 9).unwrap();
        assert_eq!(r.ratio, 1.5);
        assert_eq!(r.ci, Interval { lo: 1.5, hi: 1.5 });
        assert!(r.significant);
    }

    #[test]
    fn identical_samples_are_not_significant() {
        let x: Vec<f64> = (0..200).map(|i| 100.0 + f64::from(i % 17)).collect();
        let r = bootstrap_median_ratio(&x, &x, 0.95, 2_000, 3).unwrap();
        assert_eq!(r.ratio, 1.0);
        assert!(r.ci.contains(1.0));
        assert!(!r.significant);
    }

    #[test]
    fn clear_slowdown_is_significant() {
        let base: Vec<f64> = (0..100).map(|i| 100.0 + f64::from(i % 10)).collect();
        let cand: Vec<f64> = base.iter().map(|v| v * 1.2).collect();
        let r = bootstrap_median_ratio(&base, &cand, 0.95, 2_000, 4).unwrap();
        assert!((r.ratio - 1.2).abs() < 1e-12);
        assert!(r.ci.lo > 1.0 && r.ci.contains(1.2), "{:?}", r.ci);
        assert!(r.significant);
    }

    #[test]
    fn same_seed_same_result_other_seed_differs() {
        let base: Vec<f64> = (0..50).map(|i| f64::from(i * 7 % 23) + 1.0).collect();
        let cand: Vec<f64> = (0..60).map(|i| f64::from(i * 5 % 19) + 2.0).collect();
        let a = bootstrap_median_ratio(&base, &cand, 0.9, 500, 77);
        let b = bootstrap_median_ratio(&base, &cand, 0.9, 500, 77);
        let c = bootstrap_median_ratio(&base, &cand, 0.9, 500, 78);
        assert_eq!(a, b);
        assert_ne!(a, c);
    }

    #[test]
    fn zero_baseline_resamples_are_dropped() {
        // Baseline median is 1, but resamples with two or more zeros have
        // median 0 (probability 7/27); those ratios are infinite and dropped.
        let r = bootstrap_median_ratio(&[0.0, 1.0, 2.0], &[4.0], 0.95, 2_700, 2).unwrap();
        assert!(
            r.resamples < 2_700 && r.resamples > 1_700,
            "{}",
            r.resamples
        );
        assert_eq!(r.ci, Interval { lo: 2.0, hi: 4.0 });
    }

    #[test]
    fn invalid_inputs() {
        assert_eq!(bootstrap_median_ratio(&[], &[1.0], 0.95, 10, 0), None);
        assert_eq!(bootstrap_median_ratio(&[1.0], &[], 0.95, 10, 0), None);
        assert_eq!(
            bootstrap_median_ratio(&[0.0, 0.0], &[1.0], 0.95, 10, 0),
            None
        );
        assert_eq!(bootstrap_median_ratio(&[1.0], &[1.0], 0.95, 0, 0), None);
        assert_eq!(bootstrap_median_ratio(&[1.0], &[1.0], 1.0, 10, 0), None);
        assert_eq!(
            bootstrap_median_ratio(&[f64::NAN], &[1.0], 0.95, 10, 0),
            None
        );
        // Half zeros: the full-sample median is 0.5, so this is accepted even
        // though many resamples have baseline median 0.
        assert!(bootstrap_median_ratio(&[0.0, 0.0, 1.0, 1.0], &[1.0], 0.95, 10, 0).is_some());
    }
}
