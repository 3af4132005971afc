//! Exact Binomial(n, 1/2) tail probabilities for the order-statistic median
//! CI. Uses Loader's saddle-point form of the pmf so that it keeps full
//! relative precision for any n (no 2^-n underflow, no lgamma cancellation),
//! and sums the lower tail locally, so one CDF costs O(sqrt(n)) rather than O(n).

use crate::normal::normal_quantile;
use crate::valid_confidence;
use std::f64::consts::PI;

/// ln(sqrt(2*pi)).
const LN_SQRT_2PI: f64 = 0.918_938_533_204_672_8;

/// Stirling-formula error delta(n) = ln n! - ((n + 1/2) ln n - n + ln sqrt(2 pi)).
fn stirlerr(n: f64) -> f64 {
    if n <= 15.0 {
        // Small n: direct evaluation; absolute error ~1e-15 is all we need
        // since the result is only ever exponentiated.
        let mut ln_fact = 0.0;
        let mut i = 2.0;
        while i <= n {
            ln_fact += f64::ln(i);
            i += 1.0;
        }
        ln_fact - ((n + 0.5) * n.ln() - n + LN_SQRT_2PI)
    } else {
        // Asymptotic series; the first omitted term is < 3e-16 for n > 15.
        const S0: f64 = 1.0 / 12.0;
        const S1: f64 = 1.0 / 360.0;
        const S2: f64 = 1.0 / 1260.0;
        const S3: f64 = 1.0 / 1680.0;
        const S4: f64 = 1.0 / 1188.0;
        let nn = n * n;
        (S0 - (S1 - (S2 - (S3 - S4 / nn) / nn) / nn) / nn) / n
    }
}

/// Deviance term bd0(x, m) = x ln(x/m) + m - x, computed by a series when
/// x is close to m because the direct formula cancels catastrophically there.
fn bd0(x: f64, m: f64) -> f64 {
    if (x - m).abs() < 0.1 * (x + m) {
        let v = (x - m) / (x + m);
        let v2 = v * v;
        let mut s = (x - m) * v;
        let mut ej = 2.0 * x * v;
        let mut j = 1.0;
        loop {
            ej *= v2;
            let s1 = s + ej / (2.0 * j + 1.0);
            if s1 == s {
                return s1;
            }
            s = s1;
            j += 1.0;
        }
    }
    x * (x / m).ln() + m - x
}

/// P(B = x) for B ~ Binomial(n, 1/2).
fn pmf_half(x: u64, n: u64) -> f64 {
    if x > n {
        return 0.0;
    }
    let nf = n as f64;
    if x == 0 || x == n {
        return (-nf * std::f64::consts::LN_2).exp();
    }
    let xf = x as f64;
    let yf = (n - x) as f64;
    let half = nf / 2.0;
    let lc = stirlerr(nf) - stirlerr(xf) - stirlerr(yf) - bd0(xf, half) - bd0(yf, half);
    lc.exp() * (nf / (2.0 * PI * xf * yf)).sqrt()
}

/// P(B <= m) for B ~ Binomial(n, 1/2); summed downwards from m, where the
/// terms shrink geometrically, so only O(sqrt(n)) terms matter.
fn cdf_half(m: u64, n: u64) -> f64 {
    if m >= n {
        return 1.0;
    }
    if 2 * m + 1 > n {
        // Upper half: terms grow downward for a while; use symmetry instead.
        return 1.0 - cdf_half(n - m - 1, n);
    }
    let nf = n as f64;
    let mut term = pmf_half(m, n);
    let mut sum = term;
    let mut j = m;
    while j > 0 && term > sum * 1e-17 {
        // pmf(j-1)/pmf(j) = j / (n - j + 1)
        term *= j as f64 / (nf - j as f64 + 1.0);
        sum += term;
        j -= 1;
    }
    sum
}

/// 1-based rank k of the lower end of the distribution-free median CI: the
/// largest k with P(Binomial(n, 1/2) < k) <= (1 - confidence)/2; the upper
/// end is rank n - k + 1. None when no k >= 1 qualifies (n too small for
/// the requested confidence), when n == 0 or the confidence is not in (0, 1).
pub fn median_ci_rank(n: usize, confidence: f64) -> Option<usize> {
    if n == 0 || !valid_confidence(confidence) {
        return None;
    }
    let alpha2 = (1.0 - confidence) / 2.0;
    let n64 = n as u64;
    // k <= n - k + 1 keeps the interval non-inverted.
    let cap = (n64 - 1) / 2;
    // Start at the normal approximation (off by at most a few ranks) and
    // walk to the exact answer; m = k - 1.
    let z = -normal_quantile(alpha2);
    let nf = n as f64;
    let guess = (nf / 2.0 - z * nf.sqrt() / 2.0 - 1.0).floor();
    let mut m = if guess.is_finite() && guess > 0.0 {
        (guess as u64).min(cap)
    } else {
        0
    };
    if cdf_half(m, n64) <= alpha2 {
        while m < cap && cdf_half(m + 1, n64) <= alpha2 {
            m += 1;
        }
        Some(m as usize + 1)
    } else {
        while m > 0 {
            m -= 1;
            if cdf_half(m, n64) <= alpha2 {
                return Some(m as usize + 1);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pmf_and_cdf_exact_small_n() {
        // Binomial(10, 1/2): C(10, k) / 1024.
        let want = [1.0, 10.0, 45.0, 120.0, 210.0, 252.0];
        for (k, c) in want.iter().enumerate() {
            let got = pmf_half(k as u64, 10);
            assert!((got - c / 1024.0).abs() < 1e-15, "k = {k}");
        }
        assert!((cdf_half(2, 10) - 56.0 / 1024.0).abs() < 1e-15);
        assert!((cdf_half(7, 10) - 968.0 / 1024.0).abs() < 1e-15);
        assert_eq!(cdf_half(10, 10), 1.0);
    }

    #[test]
    fn cdf_large_n_matches_scipy() {
        // scipy.stats.binom.cdf(m, n, 0.5)
        let cases = [
            (469, 1001, 0.024_992_261_751_377_19),
            (4901, 10_000, 0.024_416_474_948_190_593),
            (499_019, 1_000_000, 0.024_939_484_326_184_31),
            (499_020, 1_000_000, 0.025_056_366_266_390_226),
            (49_990_199, 100_000_000, 0.024_992_051_355_257_93),
        ];
        for (m, n, want) in cases {
            let got = cdf_half(m, n);
            assert!(
                ((got - want) / want).abs() < 1e-9,
                "n = {n}: {got} vs {want}"
            );
        }
    }

    #[test]
    fn ranks_match_known_tables() {
        // Largest k with P(B < k) <= alpha/2, checked against scipy.stats.binom.
        let cases: [(usize, f64, Option<usize>); 17] = [
            (5, 0.95, None),
            (6, 0.95, Some(1)),
            (7, 0.95, Some(1)),
            (10, 0.95, Some(2)),
            (12, 0.95, Some(3)),
            (20, 0.95, Some(6)),
            (100, 0.95, Some(40)),
            (101, 0.95, Some(41)),
            (1000, 0.95, Some(469)),
            (1001, 0.95, Some(470)),
            (10_000, 0.95, Some(4902)),
            (123_457, 0.95, Some(61_384)),
            (1_000_000, 0.95, Some(499_020)),
            (100_000_000, 0.95, Some(49_990_200)),
            (10, 0.99, Some(1)),
            (100, 0.99, Some(37)),
            (1_000_000, 0.99, Some(498_712)),
        ];
        for (n, conf, want) in cases {
            assert_eq!(
                median_ci_rank(n, conf),
                want,
                "n = {n}, confidence = {conf}"
            );
        }
    }

    #[test]
    fn low_confidence_ranks_stay_ordered() {
        assert_eq!(median_ci_rank(5, 0.5), Some(2));
        assert_eq!(median_ci_rank(100, 0.5), Some(47));
        // Confidence -> 0: for even n the interval shrinks to the two middle
        // values; for odd n P(B <= (n-1)/2) = 1/2 exceeds alpha/2 < 1/2, so
        // it stops one rank short of the median.
        assert_eq!(median_ci_rank(10, 1e-9), Some(5));
        assert_eq!(median_ci_rank(9, 1e-9), Some(4));
        assert_eq!(median_ci_rank(1, 1e-9), None);
    }

    #[test]
    fn invalid_inputs() {
        assert_eq!(median_ci_rank(0, 0.95), None);
        assert_eq!(median_ci_rank(10, 0.0), None);
        assert_eq!(median_ci_rank(10, 1.0), None);
        assert_eq!(median_ci_rank(10, f64::NAN), None);
        assert_eq!(median_ci_rank(1_000, 1.0 - 1e-300), None);
    }
}
