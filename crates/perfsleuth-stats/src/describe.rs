//! Descriptive statistics of one sample set: location, spread, percentiles,
//! the distribution-free median CI and modified z-score outliers.

use crate::binomial::median_ci_rank;
use crate::valid_confidence;

/// Confidence level used by [`summarize`] for `median_ci`.
pub const DEFAULT_CONFIDENCE: f64 = 0.95;

/// Modified z-score cutoff used by [`summarize`] (Iglewicz & Hoaglin).
pub const MODIFIED_Z_THRESHOLD: f64 = 3.5;

/// 0.6745 ~ Phi^-1(0.75): rescales MAD to sigma units for normal data
/// (the conventional rounded constant from Iglewicz & Hoaglin).
const MODIFIED_Z_SCALE: f64 = 0.6745;

/// A closed interval [lo, hi].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Interval {
    /// Lower bound (inclusive).
    pub lo: f64,
    /// Upper bound (inclusive).
    pub hi: f64,
}

impl Interval {
    /// Whether `x` lies in [lo, hi].
    pub fn contains(&self, x: f64) -> bool {
        self.lo <= x && x <= self.hi
    }

    /// hi - lo.
    pub fn width(&self) -> f64 {
        self.hi - self.lo
    }
}

/// Descriptive statistics of one sample set.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    /// Number of values.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n - 1 denominator); 0 when n == 1.
    pub stddev: f64,
    /// Median (mean of the two middle values for even n).
    pub median: f64,
    /// 95% distribution-free CI of the median; [min, max] when n is too small.
    pub median_ci: Interval,
    /// Raw median absolute deviation (not scaled by 1.4826).
    pub mad: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// 5th percentile (linear interpolation, R type 7).
    pub p5: f64,
    /// 95th percentile (linear interpolation, R type 7).
    pub p95: f64,
    /// Input indices with modified z-score above 3.5; empty when MAD == 0.
    pub outliers: Vec<usize>,
}

/// True when the slice is usable as a sample: non-empty and all finite.
fn is_clean(values: &[f64]) -> bool {
    !values.is_empty() && values.iter().all(|v| v.is_finite())
}

/// Median of a non-empty sorted slice.
fn median_of_sorted(sorted: &[f64]) -> f64 {
    let n = sorted.len();
    if n % 2 == 1 {
        sorted[n / 2]
    } else {
        f64::midpoint(sorted[n / 2 - 1], sorted[n / 2])
    }
}

/// Median of a non-empty, NaN-free buffer in O(n); reorders the buffer.
/// Shared with the bootstrap, which calls it on every resample.
pub(crate) fn median_in_place(buf: &mut [f64]) -> f64 {
    let n = buf.len();
    let (left, mid, _) = buf.select_nth_unstable_by(n / 2, f64::total_cmp);
    let upper = *mid;
    if n % 2 == 1 {
        upper
    } else {
        // The lower middle value is the largest element left of the pivot.
        let lower = left.iter().copied().fold(f64::NEG_INFINITY, f64::max);
        f64::midpoint(lower, upper)
    }
}

/// The `p`-th percentile of `values` as [`percentile`] gives it for them
/// sorted, found by selection (O(n), not a sort); reorders `values`.
pub(crate) fn percentile_in_place(values: &mut [f64], p: f64) -> Option<f64> {
    let (lo, frac) = percentile_rank(values.len(), p)?;
    let (_, at, above) = values.select_nth_unstable_by(lo, f64::total_cmp);
    // The next order statistic is the smallest of those above.
    let next = above.iter().copied().min_by(f64::total_cmp);
    interpolate(*at, next, frac)
}

/// Where the `p`-th percentile of `n` sorted values lies: the index below
/// it and the fraction of the way to the next; `None` for no values or a
/// `p` outside 0–100.
fn percentile_rank(n: usize, p: f64) -> Option<(usize, f64)> {
    if n == 0 || !(0.0..=100.0).contains(&p) {
        return None;
    }
    let h = (p / 100.0) * (n - 1) as f64;
    let lo = (h.floor() as usize).min(n - 1);
    Some((lo, h - lo as f64))
}

/// The value `frac` of the way from `a` to `next` (`a` without a next).
fn interpolate(a: f64, next: Option<f64>, frac: f64) -> Option<f64> {
    let value = match next {
        Some(b) if frac != 0.0 => {
            // Interpolate from the nearer end, as numpy does, so results
            // match it bit for bit and stay monotone in p.
            if frac >= 0.5 {
                b - (b - a) * (1.0 - frac)
            } else {
                a + (b - a) * frac
            }
        }
        _ => a,
    };
    if value.is_nan() { None } else { Some(value) }
}

/// Median absolute deviation about `center`, for a non-empty finite slice.
fn mad_about(values: &[f64], center: f64) -> f64 {
    let mut dev: Vec<f64> = values.iter().map(|v| (v - center).abs()).collect();
    median_in_place(&mut dev)
}

/// Outlier indices given a precomputed median and MAD.
fn outliers_given(values: &[f64], median: f64, mad: f64, threshold: f64) -> Vec<usize> {
    // MAD == 0 means more than half the values are identical; every other
    // value would have an infinite score, which flags nothing useful, so we
    // report no outliers instead of dividing by zero.
    if mad == 0.0 || threshold.is_nan() {
        return Vec::new();
    }
    values
        .iter()
        .enumerate()
        .filter(|&(_, &x)| (MODIFIED_Z_SCALE * (x - median) / mad).abs() > threshold)
        .map(|(i, _)| i)
        .collect()
}

/// Descriptive statistics; None on empty input or any non-finite value.
pub fn summarize(values: &[f64]) -> Option<Summary> {
    if !is_clean(values) {
        return None;
    }
    let n = values.len();
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    let nf = n as f64;
    let mean = values.iter().sum::<f64>() / nf;
    // Two-pass variance: avoids the cancellation of the sum-of-squares form.
    let stddev = if n > 1 {
        (values.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (nf - 1.0)).sqrt()
    } else {
        0.0
    };
    let median = median_of_sorted(&sorted);
    let mad = mad_about(values, median);
    Some(Summary {
        n,
        mean,
        stddev,
        median,
        median_ci: median_ci(&sorted, DEFAULT_CONFIDENCE)?,
        mad,
        min: sorted[0],
        max: sorted[n - 1],
        p5: percentile(&sorted, 5.0)?,
        p95: percentile(&sorted, 95.0)?,
        outliers: outliers_given(values, median, mad, MODIFIED_Z_THRESHOLD),
    })
}

/// Median in O(n); None on empty input or any non-finite value.
pub fn median(values: &[f64]) -> Option<f64> {
    if !is_clean(values) {
        return None;
    }
    Some(median_in_place(&mut values.to_vec()))
}

/// Raw median absolute deviation; None on empty input or any non-finite value.
pub fn mad(values: &[f64]) -> Option<f64> {
    let m = median(values)?;
    Some(mad_about(values, m))
}

/// Percentile `p` in [0, 100] of an ascending slice by linear interpolation
/// (R type 7, numpy's default). None if empty, p is outside [0, 100] or NaN,
/// or the interpolation yields NaN (NaN or opposite infinities in the input).
pub fn percentile(sorted: &[f64], p: f64) -> Option<f64> {
    let (lo, frac) = percentile_rank(sorted.len(), p)?;
    interpolate(sorted[lo], sorted.get(lo + 1).copied(), frac)
}

/// Distribution-free CI of the median of an ascending slice:
/// [x(k), x(n-k+1)] with k from [`median_ci_rank`], or [min, max] when n is
/// too small for the confidence. None if empty or confidence not in (0, 1).
pub fn median_ci(sorted: &[f64], confidence: f64) -> Option<Interval> {
    if sorted.is_empty() || !valid_confidence(confidence) {
        return None;
    }
    let n = sorted.len();
    let k = median_ci_rank(n, confidence).unwrap_or(1);
    Some(Interval {
        lo: sorted[k - 1],
        hi: sorted[n - k],
    })
}

/// Half-width of the median CI relative to the median, for the adaptive
/// stopping rule: max(median - lo, hi - median) / |median|. None if n < 2,
/// median == 0, any value is non-finite or confidence is not in (0, 1).
pub fn relative_median_ci_halfwidth(values: &[f64], confidence: f64) -> Option<f64> {
    if values.len() < 2 || !is_clean(values) {
        return None;
    }
    let mut sorted = values.to_vec();
    sorted.sort_unstable_by(f64::total_cmp);
    let median = median_of_sorted(&sorted);
    if median == 0.0 {
        return None;
    }
    let ci = median_ci(&sorted, confidence)?;
    Some(f64::max(median - ci.lo, ci.hi - median) / median.abs())
}

/// Indices (input order) whose modified z-score |0.6745 (x - median) / MAD|
/// exceeds `threshold`. Empty when MAD == 0 (no scale to divide by), on
/// empty input, any non-finite value, or a NaN threshold.
pub fn modified_z_outliers(values: &[f64], threshold: f64) -> Vec<usize> {
    if !is_clean(values) {
        return Vec::new();
    }
    let median = median_in_place(&mut values.to_vec());
    let mad = mad_about(values, median);
    outliers_given(values, median, mad, threshold)
}

#[cfg(test)]
mod tests {

    #[test]
    fn selection_gives_what_sorting_gives() {
        // Ties and signed zeros included: the in-place median and
        // percentiles must be the sorted slice's, bit for bit.
        let mut rng = crate::rng::Rng::new(5);
        for n in 1..60 {
            for _ in 0..20 {
                let v: Vec<f64> = (0..n)
                    .map(|_| match rng.below(4) {
                        0 => 0.0,
                        1 => -0.0,
                        _ => (rng.below(7) as f64) - 3.0 + rng.next_f64(),
                    })
                    .collect();
                let mut sorted = v.clone();
                sorted.sort_by(f64::total_cmp);
                let want = median_of_sorted(&sorted);
                assert_eq!(
                    median_in_place(&mut v.clone()).to_bits(),
                    want.to_bits(),
                    "{v:?}"
                );
                for p in [0.0, 1.25, 2.5, 50.0, 97.5, 98.75, 100.0] {
                    let got = percentile_in_place(&mut v.clone(), p).unwrap();
                    assert_eq!(
                        got.to_bits(),
                        percentile(&sorted, p).unwrap().to_bits(),
                        "{v:?} {p}"
                    );
                }
            }
        }
        assert_eq!(percentile_in_place(&mut [], 50.0), None);
        assert_eq!(percentile_in_place(&mut [1.0], f64::NAN), None);
    }

    use super::*;

    /// Sample with one gross outlier (index 9); reference values from numpy.
    const SAMPLE: [f64; 12] = [
        10.2, 9.8, 10.0, 10.1, 9.9, 10.3, 9.7, 10.0, 10.4, 25.0, 9.6, 10.05,
    ];

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * b.abs().max(1.0)
    }

    #[test]
    fn summarize_matches_numpy() {
        let s = summarize(&SAMPLE).unwrap();
        assert_eq!(s.n, 12);
        assert!(close(s.mean, 11.254_166_666_666_668), "{}", s.mean);
        assert!(close(s.stddev, 4.335_134_386_788_39), "{}", s.stddev);
        assert!(close(s.median, 10.025));
        assert!(close(s.mad, 0.2), "{}", s.mad);
        assert_eq!((s.min, s.max), (9.6, 25.0));
        assert!(close(s.p5, 9.655), "{}", s.p5);
        assert!(close(s.p95, 16.97), "{}", s.p95);
        // n = 12 at 95%: k = 3, so [x(3), x(10)] of the sorted sample.
        assert_eq!(s.median_ci, Interval { lo: 9.8, hi: 10.3 });
        assert_eq!(s.outliers, vec![9]);
    }

    #[test]
    fn summarize_single_value() {
        let s = summarize(&[4.5]).unwrap();
        assert_eq!(s.n, 1);
        assert_eq!((s.mean, s.stddev, s.median, s.mad), (4.5, 0.0, 4.5, 0.0));
        assert_eq!(s.median_ci, Interval { lo: 4.5, hi: 4.5 });
        assert_eq!((s.p5, s.p95), (4.5, 4.5));
        assert!(s.outliers.is_empty());
    }

    #[test]
    fn summarize_rejects_bad_input() {
        assert_eq!(summarize(&[]), None);
        assert_eq!(summarize(&[1.0, f64::NAN]), None);
        assert_eq!(summarize(&[1.0, f64::INFINITY]), None);
    }

    #[test]
    fn median_odd_even_and_bad() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), Some(2.0));
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), Some(2.5));
        assert_eq!(median(&[7.0]), Some(7.0));
        assert_eq!(median(&[]), None);
        assert_eq!(median(&[1.0, f64::NAN, 2.0]), None);
    }

    #[test]
    fn mad_raw_unscaled() {
        // |x - 3| = 2,1,0,1,6 -> median 1.
        assert_eq!(mad(&[1.0, 2.0, 3.0, 4.0, 9.0]), Some(1.0));
        assert_eq!(mad(&[]), None);
    }

    #[test]
    fn percentile_type7_matches_numpy() {
        let s = [1.0, 2.0, 4.0, 8.0, 16.0];
        let cases = [
            (0.0, 1.0),
            (12.5, 1.5),
            (33.0, 2.64),
            (50.0, 4.0),
            (99.9, 15.968),
            (100.0, 16.0),
        ];
        for (p, want) in cases {
            let got = percentile(&s, p).unwrap();
            assert!(close(got, want), "p{p}: {got} vs {want}");
        }
        assert_eq!(percentile(&[5.0], 37.0), Some(5.0));
        assert_eq!(percentile(&[], 50.0), None);
        assert_eq!(percentile(&s, -0.1), None);
        assert_eq!(percentile(&s, 100.1), None);
        assert_eq!(percentile(&s, f64::NAN), None);
        assert_eq!(percentile(&[1.0, f64::NAN], 50.0), None);
    }

    #[test]
    fn median_ci_known_ranks() {
        let x10: Vec<f64> = (1..=10).map(f64::from).collect();
        assert_eq!(median_ci(&x10, 0.95), Some(Interval { lo: 2.0, hi: 9.0 }));
        let x20: Vec<f64> = (1..=20).map(f64::from).collect();
        assert_eq!(median_ci(&x20, 0.95), Some(Interval { lo: 6.0, hi: 15.0 }));
        let x100: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(
            median_ci(&x100, 0.95),
            Some(Interval { lo: 40.0, hi: 61.0 })
        );
    }

    #[test]
    fn median_ci_small_n_falls_back_to_range() {
        let x = [1.0, 2.0, 3.0, 4.0, 5.0];
        assert_eq!(median_ci(&x, 0.95), Some(Interval { lo: 1.0, hi: 5.0 }));
        assert_eq!(median_ci(&[2.0], 0.95), Some(Interval { lo: 2.0, hi: 2.0 }));
        assert_eq!(median_ci(&[], 0.95), None);
        assert_eq!(median_ci(&x, 1.5), None);
    }

    #[test]
    fn relative_halfwidth() {
        // Sorted SAMPLE: CI [9.8, 10.3] around 10.025 -> 0.275 / 10.025.
        let got = relative_median_ci_halfwidth(&SAMPLE, 0.95).unwrap();
        assert!(close(got, 0.275 / 10.025), "{got}");
        let neg: Vec<f64> = SAMPLE.iter().map(|v| -v).collect();
        let got_neg = relative_median_ci_halfwidth(&neg, 0.95).unwrap();
        assert!(close(got_neg, 0.275 / 10.025), "{got_neg}");
        assert_eq!(relative_median_ci_halfwidth(&[1.0], 0.95), None);
        assert_eq!(relative_median_ci_halfwidth(&[-1.0, 0.0, 1.0], 0.95), None);
        assert_eq!(relative_median_ci_halfwidth(&[1.0, f64::NAN], 0.95), None);
        assert_eq!(relative_median_ci_halfwidth(&[1.0, 2.0], 0.0), None);
    }

    #[test]
    fn relative_halfwidth_large_sample_uses_exact_ranks() {
        // 10_000..=1 (unsorted input on purpose): median 5000.5, k = 4902,
        // CI [4902, 5099] -> max(98.5, 98.5) / 5000.5.
        let x: Vec<f64> = (1..=10_000).rev().map(f64::from).collect();
        let got = relative_median_ci_halfwidth(&x, 0.95).unwrap();
        assert!(close(got, 98.5 / 5000.5), "{got}");
    }

    #[test]
    fn outliers_modified_z() {
        assert_eq!(modified_z_outliers(&SAMPLE, 3.5), vec![9]);
        // Lower threshold also catches the tails: scores 1.43 (9.6), 1.26 (10.4).
        assert_eq!(modified_z_outliers(&SAMPLE, 1.25), vec![8, 9, 10]);
        // MAD == 0: no scale, so nothing is flagged by design.
        assert!(modified_z_outliers(&[1.0, 1.0, 1.0, 50.0], 3.5).is_empty());
        assert!(modified_z_outliers(&[], 3.5).is_empty());
        assert!(modified_z_outliers(&[1.0, f64::NAN], 3.5).is_empty());
        assert!(modified_z_outliers(&SAMPLE, f64::NAN).is_empty());
    }

    #[test]
    fn interval_helpers() {
        let i = Interval { lo: 1.0, hi: 3.0 };
        assert!(i.contains(1.0) && i.contains(3.0) && !i.contains(3.5));
        assert_eq!(i.width(), 2.0);
    }
}
