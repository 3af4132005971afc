//! Multiple comparisons. Benjamini–Hochberg false discovery rate control:
//! with many benchmarks and metrics compared at once, some p-values fall
//! below α by chance alone; BH bounds the expected share of false "changed"
//! verdicts instead. Holm's step-down adjustment bounds the chance of any
//! false one (the family-wise error rate), for the few experiments of
//! `explain`, where each finding is a claim about a cause.

/// True for a usable p-value: a number in [0, 1].
fn is_p(p: f64) -> bool {
    (0.0..=1.0).contains(&p)
}

/// BH-adjusted p-values (as R's `p.adjust(p, "BH")` and scipy's
/// `false_discovery_control(p, method="bh")`), in input order:
/// p_adj(i) = min over ranks j >= rank(i) of m p(j) / j, capped at 1, so
/// they are monotone in p. Entries that are not p-values (NaN, outside
/// [0, 1]) come back NaN and do not count towards m, as in R, because a
/// missing test is not a test that was passed.
pub fn bh_adjusted(p_values: &[f64]) -> Vec<f64> {
    let mut adjusted = vec![f64::NAN; p_values.len()];
    let mut order: Vec<usize> = (0..p_values.len()).filter(|&i| is_p(p_values[i])).collect();
    // Stable sort: ties keep input order; the running minimum below gives
    // tied p-values the same adjusted value whatever their order.
    order.sort_by(|&i, &j| p_values[i].total_cmp(&p_values[j]));
    let m = order.len() as f64;
    let mut running_min = 1.0_f64;
    for (rank0, &i) in order.iter().enumerate().rev() {
        // p * (m / rank), in scipy's order of operations: results agree
        // with it bit for bit, and the largest p is never scaled at all.
        let scaled = p_values[i] * (m / (rank0 + 1) as f64);
        running_min = running_min.min(scaled);
        adjusted[i] = running_min;
    }
    adjusted
}

/// Which hypotheses the BH step-up procedure rejects at false discovery
/// rate `q`, in input order. Decided as adjusted p <= q (equivalent to the
/// step-up rule p(k) <= k q / m), so the flags always agree with the
/// adjusted p-values a report prints next to them. NaN or out-of-range
/// p-values are never rejected; a NaN `q` rejects nothing.
pub fn benjamini_hochberg(p_values: &[f64], q: f64) -> Vec<bool> {
    bh_adjusted(p_values).into_iter().map(|p| p <= q).collect()
}

/// Holm-adjusted p-values (as R's `p.adjust(p, "holm")`), in input order:
/// the k-th smallest of m is scaled by m − k + 1, then made monotone by a
/// running maximum and capped at 1. Entries that are not p-values come back
/// NaN and do not count towards m, as in [`bh_adjusted`].
pub fn holm_adjusted(p_values: &[f64]) -> Vec<f64> {
    let mut adjusted = vec![f64::NAN; p_values.len()];
    let mut order: Vec<usize> = (0..p_values.len()).filter(|&i| is_p(p_values[i])).collect();
    order.sort_by(|&i, &j| p_values[i].total_cmp(&p_values[j]));
    let m = order.len();
    let mut running_max = 0.0_f64;
    for (rank0, &i) in order.iter().enumerate() {
        let scaled = ((m - rank0) as f64 * p_values[i]).min(1.0);
        running_max = running_max.max(scaled);
        adjusted[i] = running_max;
    }
    adjusted
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn holm_adjusts_step_down_and_keeps_the_order() {
        // R: p.adjust(c(0.01, 0.04, NA, 0.03), "holm") = 0.03 0.06 NA 0.06
        let p = holm_adjusted(&[0.01, 0.04, f64::NAN, 0.03]);
        assert!((p[0] - 0.03).abs() < 1e-12);
        assert!(p[2].is_nan());
        // 0.03 × 2 = 0.06, then 0.04 × 1 = 0.04 raised to the running 0.06.
        assert!((p[3] - 0.06).abs() < 1e-12);
        assert!((p[1] - 0.06).abs() < 1e-12);
        assert_eq!(holm_adjusted(&[0.5, 0.9]), vec![1.0, 1.0]);
    }

    /// Fixed p-values with a tie, a 0 and a 1.
    const P: [f64; 10] = [0.01, 0.04, 0.03, 0.005, 0.2, 0.04, 0.5, 0.0, 1.0, 0.012];

    /// scipy.stats.false_discovery_control(P, method='bh'), scipy 1.17.1.
    const P_ADJ: [f64; 10] = [
        0.03,
        0.057_142_857_142_857_16,
        0.057_142_857_142_857_16,
        0.025,
        0.25,
        0.057_142_857_142_857_16,
        0.555_555_555_555_555_6,
        0.0,
        1.0,
        0.03,
    ];

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-15 * b.abs().max(1e-300)
    }

    #[test]
    fn adjusted_matches_scipy() {
        let got = bh_adjusted(&P);
        for (g, w) in got.iter().zip(P_ADJ) {
            assert!(close(*g, w), "{got:?}");
        }
    }

    #[test]
    fn adjusted_is_monotone_and_capped() {
        let adj = bh_adjusted(&P);
        let mut pairs: Vec<(f64, f64)> = P.iter().copied().zip(adj).collect();
        pairs.sort_by(|x, y| x.0.total_cmp(&y.0));
        for w in pairs.windows(2) {
            assert!(w[0].1 <= w[1].1, "{pairs:?}");
        }
        assert!(pairs.iter().all(|&(p, a)| a >= p && a <= 1.0));
        // m p / rank above 1 is capped.
        assert_eq!(bh_adjusted(&[0.9, 0.95, 0.99]), vec![0.99, 0.99, 0.99]);
    }

    #[test]
    fn rejections_match_step_up_rule() {
        // m = 10, q = 0.05: sorted p = 0, 0.005, 0.01, 0.012, 0.03, 0.04,
        // 0.04, ...; the largest k with p(k) <= k q / m = 0.005 k is 4
        // (0.012 <= 0.02; 0.03 > 0.025, 0.04 > 0.035), as scipy's adjusted
        // values <= 0.05 also say.
        let r = benjamini_hochberg(&P, 0.05);
        let want = [
            true, false, false, true, false, false, false, true, false, true,
        ];
        assert_eq!(r, want);
        // At q = 0.06, k = 7 passes (0.04 <= 0.042): the 0.03 and both
        // 0.04s come in too (adjusted 0.0571).
        let r6 = benjamini_hochberg(&P, 0.06);
        assert_eq!(r6.iter().filter(|&&b| b).count(), 7);
        assert!(
            benjamini_hochberg(&P, 0.0)
                .iter()
                .zip(P)
                .all(|(&b, p)| b == (p == 0.0))
        );
        assert!(benjamini_hochberg(&P, f64::NAN).iter().all(|&b| !b));
        assert!(benjamini_hochberg(&P, 1.0).iter().all(|&b| b));
    }

    #[test]
    fn nan_in_nan_out_and_not_counted() {
        // scipy rejects NaN outright; we follow R instead. The valid entries
        // match scipy on [0.01, 0.02, 0.2] (m = 3): [0.03, 0.03, 0.2].
        let got = bh_adjusted(&[0.01, f64::NAN, 0.02, 1.5, 0.2, -0.1]);
        assert!(close(got[0], 0.03) && close(got[2], 0.03) && close(got[4], 0.2));
        assert!(got[1].is_nan() && got[3].is_nan() && got[5].is_nan());
        let rej = benjamini_hochberg(&[f64::NAN, 0.001], 0.05);
        assert_eq!(rej, vec![false, true]);
    }

    #[test]
    fn edge_sizes() {
        assert!(bh_adjusted(&[]).is_empty());
        assert!(benjamini_hochberg(&[], 0.05).is_empty());
        assert_eq!(bh_adjusted(&[0.03]), vec![0.03]);
        assert!(bh_adjusted(&[f64::NAN])[0].is_nan());
    }
}
