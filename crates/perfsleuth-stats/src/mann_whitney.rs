//! Two-sided Mann-Whitney U (Wilcoxon rank-sum) test: a distribution-free
//! check that one sample tends to be larger than the other.

use crate::normal::normal_cdf;

/// Largest n1 + n2 for which the exact null distribution is used (when there
/// are no ties); C(50, 25) ~ 1.3e14 keeps all counts exact in integers.
pub const EXACT_MAX_TOTAL: usize = 50;

/// Two-sided Mann-Whitney U test result.
#[derive(Debug, Clone, PartialEq)]
pub struct MannWhitney {
    /// U statistic of the first sample: #{(a, b): a > b} + #{a == b} / 2.
    pub u: f64,
    /// Two-sided p-value.
    pub p_value: f64,
    /// Whether `p_value` comes from the exact null distribution.
    pub exact: bool,
}

/// Two-sided Mann-Whitney U test. Exact when n1 + n2 <= [`EXACT_MAX_TOTAL`]
/// and there are no ties; otherwise the normal approximation with tie and
/// continuity correction (as scipy's `mannwhitneyu`). None if either side is
/// empty or contains a non-finite value.
pub fn mann_whitney_u(a: &[f64], b: &[f64]) -> Option<MannWhitney> {
    let clean = |s: &[f64]| !s.is_empty() && s.iter().all(|v| v.is_finite());
    if !clean(a) || !clean(b) {
        return None;
    }
    let (n1, n2) = (a.len(), b.len());
    let total = n1 + n2;
    let mut pooled: Vec<(f64, bool)> = a
        .iter()
        .map(|&x| (x, true))
        .chain(b.iter().map(|&x| (x, false)))
        .collect();
    pooled.sort_unstable_by(|x, y| x.0.total_cmp(&y.0));

    // Midranks for tied groups; tie_term = sum(t^3 - t) feeds the variance.
    let mut rank_sum_a = 0.0;
    let mut tie_term = 0.0;
    let mut i = 0;
    while i < total {
        let mut j = i + 1;
        // `==` (not total_cmp) so that -0.0 and 0.0 count as a tie.
        while j < total && pooled[j].0 == pooled[i].0 {
            j += 1;
        }
        let midrank = (i + 1 + j) as f64 / 2.0;
        let in_a = pooled[i..j].iter().filter(|p| p.1).count();
        rank_sum_a += midrank * in_a as f64;
        let t = (j - i) as f64;
        tie_term += t * t * t - t;
        i = j;
    }
    let (n1f, n2f) = (n1 as f64, n2 as f64);
    let u1 = rank_sum_a - n1f * (n1f + 1.0) / 2.0;
    let u_big = u1.max(n1f * n2f - u1);

    if tie_term == 0.0 && total <= EXACT_MAX_TOTAL {
        let p = 2.0 * exact_upper_tail(n1, n2, u_big as usize);
        return Some(MannWhitney {
            u: u1,
            p_value: p.min(1.0),
            exact: true,
        });
    }

    let nf = total as f64;
    let mu = n1f * n2f / 2.0;
    let var = n1f * n2f / 12.0 * ((nf + 1.0) - tie_term / (nf * (nf - 1.0)));
    // All values tied: no information at all, so nothing can be rejected.
    let p = if var > 0.0 {
        let z = (u_big - mu - 0.5) / var.sqrt();
        (2.0 * normal_cdf(-z)).min(1.0)
    } else {
        1.0
    };
    Some(MannWhitney {
        u: u1,
        p_value: p,
        exact: false,
    })
}

/// P(U >= u) under H0 without ties. The counts of U = 0..n1*n2 are the
/// coefficients of the Gaussian binomial [n1+n2 choose n1]_q, built as
/// prod_{i=1..m} (1 - q^(n+i)) / (1 - q^i), all in exact integers.
fn exact_upper_tail(n1: usize, n2: usize, u: usize) -> f64 {
    let (m, n) = (n1.min(n2), n1.max(n2));
    let max_u = m * n;
    if u > max_u {
        return 0.0;
    }
    // Room for the transient degree i*n + i before each division.
    let mut c = vec![0i128; max_u + m + 1];
    c[0] = 1;
    let mut degree = 0;
    for i in 1..=m {
        let shift = n + i;
        // Multiply by (1 - q^shift), high to low so sources are unmodified.
        for d in (shift..=degree + shift).rev() {
            c[d] -= c[d - shift];
        }
        // Divide by (1 - q^i): exact, so the recurrence leaves no remainder.
        for d in i..=degree + shift {
            c[d] += c[d - i];
        }
        degree += n;
    }
    let all: i128 = c[..=max_u].iter().sum();
    let tail: i128 = c[u..=max_u].iter().sum();
    tail as f64 / all as f64
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Relative closeness for p-values (all reference values from
    /// scipy.stats.mannwhitneyu, two-sided).
    fn close(a: f64, b: f64, tol: f64) -> bool {
        ((a - b) / b).abs() <= tol
    }

    #[test]
    fn exact_complete_separation() {
        // Only 2 of C(8, 3) = 56 rankings are this extreme: p = 2/56.
        let r = mann_whitney_u(&[1.1, 2.2, 3.3, 4.4, 5.5], &[6.6, 7.7, 8.8]).unwrap();
        assert_eq!(r.u, 0.0);
        assert!(r.exact);
        assert!(close(r.p_value, 2.0 / 56.0, 1e-14));
        let flipped = mann_whitney_u(&[6.6, 7.7, 8.8], &[1.1, 2.2, 3.3, 4.4, 5.5]).unwrap();
        assert_eq!(flipped.u, 15.0);
        assert_eq!(flipped.p_value, r.p_value);
    }

    #[test]
    fn exact_interleaved() {
        let a = [1.0, 4.0, 5.0, 8.0, 9.0, 12.0];
        let b = [2.0, 3.0, 6.0, 7.0, 10.0, 11.0, 13.0];
        let r = mann_whitney_u(&a, &b).unwrap();
        assert_eq!(r.u, 18.0);
        assert!(r.exact);
        assert!(
            close(r.p_value, 0.730_769_230_769_230_7, 1e-12),
            "{}",
            r.p_value
        );
    }

    #[test]
    fn exact_at_size_limit() {
        let a: Vec<f64> = (0..25).map(|i| f64::from(i) * 2.0).collect();
        let b: Vec<f64> = a.iter().map(|v| v + 1.5).collect();
        let r = mann_whitney_u(&a, &b).unwrap();
        assert_eq!(r.u, 300.0);
        assert!(r.exact);
        assert!(
            close(r.p_value, 0.817_504_341_283_324_2, 1e-12),
            "{}",
            r.p_value
        );
    }

    #[test]
    fn ties_use_normal_approximation() {
        let a = [1.0, 2.0, 2.0, 3.0, 4.0, 4.0, 5.0];
        let b = [2.0, 3.0, 3.0, 4.0, 6.0, 6.0, 7.0, 8.0];
        let r = mann_whitney_u(&a, &b).unwrap();
        assert_eq!(r.u, 14.0);
        assert!(!r.exact);
        assert!(
            close(r.p_value, 0.113_928_928_119_787_14, 1e-10),
            "{}",
            r.p_value
        );
    }

    #[test]
    fn large_samples_use_normal_approximation() {
        let a: Vec<f64> = (0..30).map(f64::from).collect();
        let b: Vec<f64> = a.iter().map(|v| v + 10.5).collect();
        let r = mann_whitney_u(&a, &b).unwrap();
        assert_eq!(r.u, 190.0);
        assert!(!r.exact);
        assert!(
            close(r.p_value, 1.247_705_378_909_993_3e-4, 1e-10),
            "{}",
            r.p_value
        );
    }

    #[test]
    fn degenerate_cases() {
        let tied = mann_whitney_u(&[3.0, 3.0, 3.0], &[3.0, 3.0]).unwrap();
        assert_eq!((tied.u, tied.p_value, tied.exact), (3.0, 1.0, false));
        let one = mann_whitney_u(&[1.0], &[2.0]).unwrap();
        assert_eq!((one.u, one.p_value, one.exact), (0.0, 1.0, true));
        // -0.0 and 0.0 are the same value, hence a tie.
        let z = mann_whitney_u(&[-0.0], &[0.0]).unwrap();
        assert_eq!((z.u, z.exact), (0.5, false));
        assert_eq!(mann_whitney_u(&[], &[1.0]), None);
        assert_eq!(mann_whitney_u(&[1.0], &[]), None);
        assert_eq!(mann_whitney_u(&[1.0], &[f64::NAN]), None);
    }

    #[test]
    fn gaussian_binomial_counts() {
        // [5 choose 2]_q = 1 + q + 2q^2 + 2q^3 + 2q^4 + q^5 + q^6 (sum 10).
        let tails = [10.0, 9.0, 8.0, 6.0, 4.0, 2.0, 1.0, 0.0];
        for (u, t) in tails.iter().enumerate() {
            assert_eq!(exact_upper_tail(2, 3, u), t / 10.0, "u = {u}");
            assert_eq!(exact_upper_tail(3, 2, u), t / 10.0, "u = {u}");
        }
    }
}
