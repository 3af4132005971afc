//! Welch's unequal-variance t-test: the test hyperfine's comparison script
//! uses, kept here so the validation study can run the peer on the same data.

use crate::student_t::student_t_two_sided;

/// Result of a two-sided Welch t-test.
#[derive(Debug, Clone, PartialEq)]
pub struct WelchT {
    /// t statistic (mean(a) - mean(b)) / sqrt(var(a)/n_a + var(b)/n_b).
    pub t: f64,
    /// Welch–Satterthwaite degrees of freedom (generally not an integer).
    pub df: f64,
    /// Two-sided p-value from Student's t with `df` degrees of freedom.
    pub p_value: f64,
}

/// Mean and sample variance (n - 1) by two passes, which avoids the
/// cancellation of the sum-of-squares form for tightly clustered timings.
fn mean_var(x: &[f64]) -> (f64, f64) {
    let n = x.len() as f64;
    let mean = x.iter().sum::<f64>() / n;
    let var = x.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / (n - 1.0);
    (mean, var)
}

/// Two-sided Welch t-test, as scipy's `ttest_ind(a, b, equal_var=False)`.
/// None if either side has fewer than 2 values or a non-finite one, if both
/// sides have zero variance (t is 0/0 or x/0: no scale to judge by), or if
/// the arithmetic overflows.
pub fn welch_t_test(a: &[f64], b: &[f64]) -> Option<WelchT> {
    let usable = |s: &[f64]| s.len() >= 2 && s.iter().all(|v| v.is_finite());
    if !usable(a) || !usable(b) {
        return None;
    }
    let (mean_a, var_a) = mean_var(a);
    let (mean_b, var_b) = mean_var(b);
    let (na, nb) = (a.len() as f64, b.len() as f64);
    let (sa, sb) = (var_a / na, var_b / nb);
    let se2 = sa + sb;
    if !(se2 > 0.0 && se2.is_finite()) {
        return None;
    }
    let t = (mean_a - mean_b) / se2.sqrt();
    // df = se2^2 / (sa^2/(na-1) + sb^2/(nb-1)), written with the shares
    // sa/se2 and sb/se2 so tiny variances do not underflow to 0/0.
    let (fa, fb) = (sa / se2, sb / se2);
    let df = 1.0 / (fa * fa / (na - 1.0) + fb * fb / (nb - 1.0));
    if t.is_nan() || !df.is_finite() {
        return None;
    }
    Some(WelchT {
        t,
        df,
        p_value: student_t_two_sided(t, df),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel_close(a: f64, b: f64, tol: f64) -> bool {
        (a - b).abs() <= tol * b.abs()
    }

    /// Checks t, df and p against scipy.stats.ttest_ind(a, b,
    /// equal_var=False) from scipy 1.17.1 (statistic, df, pvalue).
    fn check(a: &[f64], b: &[f64], t: f64, df: f64, p: f64) {
        let r = welch_t_test(a, b).unwrap();
        assert!(rel_close(r.t, t, 1e-12), "t {} vs {t}", r.t);
        assert!(rel_close(r.df, df, 1e-12), "df {} vs {df}", r.df);
        assert!(rel_close(r.p_value, p, 1e-10), "p {} vs {p}", r.p_value);
        // Swapping the sides flips t only.
        let s = welch_t_test(b, a).unwrap();
        assert_eq!((s.t, s.df, s.p_value), (-r.t, r.df, r.p_value));
    }

    #[test]
    fn moderate_samples() {
        check(
            &[10.2, 9.8, 10.0, 10.1, 9.9, 10.3, 9.7],
            &[10.6, 10.9, 10.4, 11.0, 10.7],
            -5.356_652_586_949_173,
            8.181_094_102_466_513,
            6.314_599_989_651_267e-4,
        );
    }

    #[test]
    fn small_df() {
        check(
            &[1.0, 1.1],
            &[5.0, 9.0, 2.0],
            -2.111_884_957_281_9,
            2.002_431_691_043_034,
            0.168_939_003_751_505_64,
        );
        // df barely above 1: the heavy Cauchy-like tail.
        check(
            &[3.0, 3.5],
            &[0.0, 10.0],
            -0.349_563_318_607_245_6,
            1.004_999_968_750_195_4,
            0.785_688_891_943_49,
        );
    }

    #[test]
    fn one_constant_side() {
        // var(a) = 0, so df = n_b - 1 = 3 exactly.
        check(
            &[5.0, 5.0, 5.0],
            &[4.0, 6.0, 5.5, 7.0],
            -1.0,
            3.0,
            0.391_002_218_955_770_5,
        );
    }

    #[test]
    fn far_apart_samples_keep_tail_precision() {
        check(
            &[1.0, 1.01, 0.99, 1.02, 0.98, 1.0],
            &[2.0, 2.01, 1.99, 2.02, 1.98, 2.0, 2.01],
            -130.172_432_062_113_44,
            10.499_861_278_091_17,
            3.457_087_551_137_245e-18,
        );
    }

    #[test]
    fn large_samples() {
        let a: Vec<f64> = (0..200)
            .map(|i| 100.0 + f64::from(i * 37 % 101) / 10.0)
            .collect();
        let b: Vec<f64> = (0..300)
            .map(|i| 100.8 + f64::from(i * 53 % 97) / 9.0)
            .collect();
        check(
            &a,
            &b,
            -4.010_296_425_689_892,
            444.087_434_115_313_67,
            7.113_610_377_051_03e-5,
        );
    }

    #[test]
    fn identical_samples_give_p_one() {
        let x = [1.0, 2.0, 3.0, 4.0];
        let r = welch_t_test(&x, &x).unwrap();
        assert_eq!((r.t, r.p_value), (0.0, 1.0));
        assert!(rel_close(r.df, 6.0, 1e-15));
    }

    #[test]
    fn degenerate_inputs() {
        assert_eq!(welch_t_test(&[1.0], &[1.0, 2.0]), None);
        assert_eq!(welch_t_test(&[1.0, 2.0], &[]), None);
        assert_eq!(welch_t_test(&[1.0, f64::NAN], &[1.0, 2.0]), None);
        assert_eq!(welch_t_test(&[1.0, 2.0], &[1.0, f64::INFINITY]), None);
        // Both constant: no variance to scale the difference by.
        assert_eq!(welch_t_test(&[3.0, 3.0], &[3.0, 3.0, 3.0]), None);
        assert_eq!(welch_t_test(&[3.0, 3.0], &[4.0, 4.0]), None);
        // Overflowing sums give NaN moments, not a bogus result.
        assert_eq!(welch_t_test(&[1e308, 1e308, -1e308], &[1.0, 2.0]), None);
    }
}
