//! Judging two sides that are summaries, not samples: what a tool reported
//! (mean, standard deviation, count) where it kept no measurements.

use crate::bootstrap::RelativeChange;
use crate::describe::Interval;
use crate::normal::t_quantile;

/// One side as a tool summarised it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MeanSd {
    /// The mean of the measurements.
    pub mean: f64,
    /// Their standard deviation.
    pub sd: f64,
    /// How many there were.
    pub n: u64,
}

/// The two-sided p-value of Welch's t statistic `t` at `df` degrees of
/// freedom, by inverting [`t_quantile`] (bisection; the quantile's own
/// accuracy bounds it, ample for a verdict at α of a few percent).
fn t_two_sided_p(t: f64, df: f64) -> f64 {
    let t = t.abs();
    if !t.is_finite() || !df.is_finite() {
        return f64::NAN;
    }
    let (mut lo, mut hi) = (0.5_f64, 1.0 - 1e-15);
    if t_quantile(hi, df) <= t {
        return 2.0 * (1.0 - hi);
    }
    for _ in 0..80 {
        let mid = 0.5 * (lo + hi);
        if t_quantile(mid, df) < t {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    2.0 * (1.0 - 0.5 * (lo + hi))
}

/// Relative change of the mean (candidate / baseline − 1) between two
/// summaries, with Welch's test: the p-value of the difference of the means,
/// and a `confidence` interval of the ratio by the delta method (so the
/// baseline's own uncertainty counts), at Welch–Satterthwaite degrees of
/// freedom. None unless both sides have n ≥ 2, a finite standard deviation
/// ≥ 0, and the baseline a mean above 0, and `confidence` is in (0, 1).
pub fn welch_relative_change(
    baseline: MeanSd,
    candidate: MeanSd,
    confidence: f64,
) -> Option<(RelativeChange, f64)> {
    let ok = |s: &MeanSd| s.n >= 2 && s.mean.is_finite() && s.sd.is_finite() && s.sd >= 0.0;
    if !ok(&baseline) || !ok(&candidate) || baseline.mean <= 0.0 {
        return None;
    }
    if !(confidence > 0.0 && confidence < 1.0) {
        return None;
    }
    let (vb, vc) = (
        baseline.sd * baseline.sd / baseline.n as f64,
        candidate.sd * candidate.sd / candidate.n as f64,
    );
    let ratio = candidate.mean / baseline.mean;
    let change = ratio - 1.0;
    if vb + vc == 0.0 {
        // No spread on either side: the change is what it is.
        let p = if change == 0.0 { 1.0 } else { 0.0 };
        return Some((RelativeChange::exact(change), p));
    }
    let df = (vb + vc).powi(2)
        / (vb * vb / (baseline.n - 1) as f64 + vc * vc / (candidate.n - 1) as f64);
    let df = df.max(1.0);
    let p = t_two_sided_p((candidate.mean - baseline.mean) / (vb + vc).sqrt(), df);
    let rel_var = vc / (candidate.mean * candidate.mean).max(f64::MIN_POSITIVE)
        + vb / (baseline.mean * baseline.mean);
    let se = ratio.abs() * rel_var.sqrt();
    let t = t_quantile(0.5 + confidence / 2.0, df);
    let ci = Interval {
        lo: ratio - t * se - 1.0,
        hi: ratio + t * se - 1.0,
    };
    Some((
        RelativeChange {
            change,
            ci,
            resamples: 0,
        },
        p,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn p_values_match_the_t_distribution() {
        // t = 2.228 at 10 df is the 97.5 % point: p = 0.05.
        assert!((t_two_sided_p(2.228, 10.0) - 0.05).abs() < 0.002);
        assert!((t_two_sided_p(-1.96, 1e6) - 0.05).abs() < 0.001);
        assert!((t_two_sided_p(0.0, 5.0) - 1.0).abs() < 1e-6);
        assert!(t_two_sided_p(50.0, 30.0) < 1e-10);
    }

    #[test]
    fn a_clear_change_is_significant_and_noise_is_not() {
        let b = MeanSd {
            mean: 100.0,
            sd: 2.0,
            n: 20,
        };
        let slow = MeanSd {
            mean: 110.0,
            sd: 2.0,
            n: 20,
        };
        let (c, p) = welch_relative_change(b, slow, 0.95).unwrap();
        assert!((c.change - 0.10).abs() < 1e-12);
        assert!(p < 1e-6 && c.ci.lo > 0.08 && c.ci.hi < 0.12, "{c:?} {p}");
        let same = MeanSd {
            mean: 100.5,
            sd: 5.0,
            n: 5,
        };
        let (c, p) = welch_relative_change(b, same, 0.95).unwrap();
        assert!(p > 0.5 && c.ci.lo < 0.0 && c.ci.hi > 0.0, "{c:?} {p}");
    }

    #[test]
    fn unusable_summaries_give_none() {
        let b = MeanSd {
            mean: 100.0,
            sd: 2.0,
            n: 20,
        };
        assert!(welch_relative_change(MeanSd { n: 1, ..b }, b, 0.95).is_none());
        assert!(welch_relative_change(MeanSd { mean: 0.0, ..b }, b, 0.95).is_none());
        assert!(welch_relative_change(b, MeanSd { sd: f64::NAN, ..b }, 0.95).is_none());
        assert!(welch_relative_change(b, b, 1.0).is_none());
        let exact = MeanSd { sd: 0.0, ..b };
        assert_eq!(welch_relative_change(exact, exact, 0.95).unwrap().1, 1.0);
    }
}
