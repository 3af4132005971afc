//! The percentile bootstrap of a ratio of medians without resampling: for
//! small samples the distribution of a resample's median is computed
//! exactly (order statistics of draws with replacement are binomial), and
//! the ratio's quantiles are found by bisection over the two independent
//! distributions. This is the interval 10 000 resamples approximate — the
//! same estimator with its Monte-Carlo noise gone — at a few microseconds a
//! benchmark instead of a millisecond, which is what a comparison of 100 000
//! benchmarks needs (docs/PERFORMANCE.md, "compare at scale").

use crate::describe::Interval;

/// Largest sample, a side, whose resample-median distribution is computed
/// exactly: the even case enumerates pairs of middle values (n² / 2 of
/// them, n³ work for their ties), and binomial coefficients stay exact in an
/// f64 up to here. Larger samples are resampled.
pub const EXACT_MAX: usize = 64;

/// Pairs of medians (baseline × candidate support) up to which the ratio's
/// distribution is listed and sorted rather than searched by bisection.
const ENUMERATE_MAX: usize = 1024;

/// A discrete distribution: ascending values with their probabilities.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Discrete {
    values: Vec<f64>,
    /// Probability of each value, same order.
    probs: Vec<f64>,
    /// Running sums of `probs`: `cumulative[i]` is P(X ≤ values[i]).
    cumulative: Vec<f64>,
}

impl Discrete {
    fn new(mut pairs: Vec<(f64, f64)>) -> Discrete {
        pairs.retain(|&(_, p)| p > 0.0);
        pairs.sort_by(|a, b| a.0.total_cmp(&b.0));
        // Equal values (two pairs of middle draws with one mean) are one.
        pairs.dedup_by(|later, kept| {
            let same = later.0 == kept.0;
            if same {
                kept.1 += later.1;
            }
            same
        });
        let (values, probs): (Vec<f64>, Vec<f64>) = pairs.into_iter().unzip();
        let mut sum = 0.0;
        let cumulative = probs
            .iter()
            .map(|p| {
                sum += p;
                sum
            })
            .collect();
        Discrete {
            values,
            probs,
            cumulative,
        }
    }

    /// P(X ≤ x).
    fn cdf(&self, x: f64) -> f64 {
        let k = self.values.partition_point(|&v| v <= x);
        if k == 0 { 0.0 } else { self.cumulative[k - 1] }
    }
}

/// Pascal's triangle to row `n` (≤ [`EXACT_MAX`], where every entry is an
/// integer an f64 holds exactly): `pascal[r][k]` is C(r, k).
fn pascal(n: usize) -> Vec<Vec<f64>> {
    let mut rows: Vec<Vec<f64>> = vec![vec![1.0]];
    for r in 1..=n {
        let prev = &rows[r - 1];
        let row = (0..=r)
            .map(|k| {
                let left = if k == 0 { 0.0 } else { prev[k - 1] };
                left + prev.get(k).copied().unwrap_or(0.0)
            })
            .collect();
        rows.push(row);
    }
    rows
}

/// The distribution of the median (the mean of the two middle values for
/// an even size) of `n` draws with replacement from `sample`, exactly.
/// `sample` must be non-empty, finite, at most [`EXACT_MAX`] long.
pub(crate) fn resample_median(sample: &[f64]) -> Discrete {
    let n = sample.len();
    let mut sorted = sample.to_vec();
    sorted.sort_by(f64::total_cmp);
    // Distinct values and the share of draws at or below each: the last
    // position of each value, counted from one, over n.
    let mut last: Vec<(f64, f64)> = sorted
        .iter()
        .enumerate()
        .map(|(i, &v)| (v, (i + 1) as f64 / n as f64))
        .collect();
    last.reverse();
    last.dedup_by(|later, kept| later.0 == kept.0);
    last.reverse();
    let (distinct, at_or_below): (Vec<f64>, Vec<f64>) = last.into_iter().unzip();
    let below = |i: usize| if i == 0 { 0.0 } else { at_or_below[i - 1] };
    let table = pascal(n);
    let c = &table[n];
    let d = distinct.len();
    if n % 2 == 1 {
        // The median is the m-th draw in order: at or below a value when at
        // least m draws are, a binomial tail.
        let m = n.div_ceil(2);
        let tail = |f: f64| -> f64 {
            (m..=n)
                .map(|k| c[k] * f.powi(k as i32) * (1.0 - f).powi((n - k) as i32))
                .sum()
        };
        let mut previous = 0.0;
        let pairs = (0..d)
            .map(|i| {
                let now = if i + 1 == d {
                    1.0
                } else {
                    tail(at_or_below[i])
                };
                let p = (now - previous).max(0.0);
                previous = now;
                (distinct[i], p)
            })
            .collect();
        return Discrete::new(pairs);
    }
    // Even: the m-th and (m+1)-th draws in order. Distinct values a_i < a_j:
    // exactly m draws at or below a_i, one of them at a_i, and the other
    // n − m at or above a_j, one of them at a_j.
    let m = n / 2;
    let (mi, mi32, rest32) = (m, m as i32, (n - m) as i32);
    let mut pairs = Vec::with_capacity(d * (d + 1) / 2);
    for i in 0..d {
        let low = at_or_below[i].powi(mi32) - below(i).powi(mi32);
        for j in i + 1..d {
            let high = (1.0 - below(j)).powi(rest32) - (1.0 - at_or_below[j]).powi(rest32);
            pairs.push((f64::midpoint(distinct[i], distinct[j]), c[mi] * low * high));
        }
        // Both middle draws at a_i: fewer than m draws below it, more than m
        // at or below it.
        let (under, here, over) = (below(i), at_or_below[i] - below(i), 1.0 - at_or_below[i]);
        let same: f64 = c[..m]
            .iter()
            .enumerate()
            .map(|(s, cs_n)| {
                let left = n - s;
                let cs = &table[left];
                let at: f64 = (m + 1 - s..=left)
                    .map(|t| cs[t] * here.powi(t as i32) * over.powi((left - t) as i32))
                    .sum();
                cs_n * under.powi(s as i32) * at
            })
            .sum();
        pairs.push((distinct[i], same));
    }
    Discrete::new(pairs)
}

/// The percentile interval at `confidence` of median(candidate*) /
/// median(baseline*) over every pair of resamples, exactly; None where the
/// exact route does not apply (a side larger than [`EXACT_MAX`], or a value
/// not positive: then a ratio's order is not its numerator's).
pub(crate) fn median_ratio_interval(
    baseline: &[f64],
    candidate: &[f64],
    confidence: f64,
) -> Option<Interval> {
    let usable = |s: &[f64]| {
        !s.is_empty() && s.len() <= EXACT_MAX && s.iter().all(|&v| v > 0.0 && v.is_finite())
    };
    if !usable(baseline) || !usable(candidate) {
        return None;
    }
    let (b, c) = (resample_median(baseline), resample_median(candidate));
    let alpha2 = (1.0 - confidence) / 2.0;
    // Few enough pairs of medians to list: the ratio's distribution itself.
    if b.values.len() * c.values.len() <= ENUMERATE_MAX {
        let mut ratios: Vec<(f64, f64)> = Vec::with_capacity(b.values.len() * c.values.len());
        for (&bk, &pk) in b.values.iter().zip(&b.probs) {
            for (&cl, &ql) in c.values.iter().zip(&c.probs) {
                ratios.push((cl / bk, pk * ql));
            }
        }
        ratios.sort_unstable_by(|x, y| x.0.total_cmp(&y.0));
        let quantile = |q: f64| {
            let mut sum = 0.0;
            for &(r, p) in &ratios {
                sum += p;
                // A hair under q counts as reaching it: the sum of the
                // probabilities rounds, the distribution does not.
                if sum >= q - 1e-12 {
                    return r;
                }
            }
            ratios[ratios.len() - 1].0
        };
        return Some(Interval {
            lo: quantile(alpha2),
            hi: quantile(1.0 - alpha2),
        });
    }
    Some(bisected(&b, &c, alpha2, 1.0 - alpha2))
}

/// The `lo_q` and `hi_q` quantiles of c / b (b > 0) by bisection over
/// P(c / b ≤ t) = Σ_k P(b = b_k) · P(c ≤ t·b_k): for supports too large to
/// list, in log space to the last bit, landing on the attained ratio at
/// the jump.
fn bisected(b: &Discrete, c: &Discrete, lo_q: f64, hi_q: f64) -> Interval {
    let cdf = |t: f64| -> f64 {
        b.values
            .iter()
            .zip(&b.probs)
            .map(|(&bk, &pk)| pk * c.cdf(t * bk))
            .sum()
    };
    let (lowest, highest) = (
        c.values[0] / b.values[b.values.len() - 1],
        c.values[c.values.len() - 1] / b.values[0],
    );
    let quantile = |q: f64| -> f64 {
        // As when listing: a sum a hair under q reaches it.
        let q = q - 1e-12;
        if cdf(lowest) >= q {
            return lowest;
        }
        let (mut lo, mut hi) = (lowest.ln(), highest.ln());
        for _ in 0..200 {
            let mid = f64::midpoint(lo, hi);
            if mid <= lo || mid >= hi {
                break;
            }
            if cdf(mid.exp()) >= q {
                hi = mid;
            } else {
                lo = mid;
            }
        }
        hi.exp()
    };
    Interval {
        lo: quantile(lo_q),
        hi: quantile(hi_q),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bootstrap::bootstrap_median_ratio;
    use crate::rng::Rng;

    /// The exact distribution against a million resamples, odd and even
    /// sizes, with ties.
    #[test]
    fn the_resample_median_distribution_is_the_one_resampling_draws() {
        for sample in [
            vec![3.0, 1.0, 2.0, 5.0, 4.0],
            vec![1.0, 2.0, 2.0, 7.0],
            vec![4.0, 4.0, 4.0, 1.0, 9.0, 9.0],
            vec![2.5],
        ] {
            let exact = resample_median(&sample);
            let total: f64 = exact.probs.iter().sum();
            assert!((total - 1.0).abs() < 1e-12, "{sample:?}: {total}");
            let mut rng = Rng::new(7);
            let draws = 1_000_000;
            let mut counts = std::collections::BTreeMap::new();
            let mut buf = vec![0.0; sample.len()];
            for _ in 0..draws {
                for b in buf.iter_mut() {
                    *b = sample[rng.below(sample.len())];
                }
                let m = crate::describe::median_in_place(&mut buf);
                *counts.entry(m.to_bits()).or_insert(0u64) += 1;
            }
            for (v, p) in exact.values.iter().zip(&exact.probs) {
                let seen = counts.get(&v.to_bits()).copied().unwrap_or(0) as f64 / draws as f64;
                assert!(
                    (seen - p).abs() < 0.003,
                    "{sample:?} at {v}: exact {p}, drawn {seen}"
                );
            }
            assert_eq!(counts.len(), exact.values.len(), "{sample:?}");
        }
    }

    /// The exact interval is the one 10 000 resamples approximate: within
    /// their Monte-Carlo noise on every case, odd and even, tied and not.
    #[test]
    fn the_exact_interval_matches_the_resampled_one() {
        let mut rng = Rng::new(3);
        for (nb, nc) in [(5, 5), (4, 6), (10, 10), (7, 30), (64, 63)] {
            let base: Vec<f64> = (0..nb).map(|_| 1.0 + 0.05 * rng.next_f64()).collect();
            let cand: Vec<f64> = (0..nc).map(|_| 1.02 + 0.05 * rng.next_f64()).collect();
            let exact = median_ratio_interval(&base, &cand, 0.95).unwrap();
            let drawn = bootstrap_median_ratio(&base, &cand, 0.95, 200_000, 11).unwrap();
            for (e, d) in [(exact.lo, drawn.ci.lo), (exact.hi, drawn.ci.hi)] {
                assert!(
                    (e - d).abs() < 2e-3,
                    "{nb}/{nc}: exact {exact:?}, drawn {:?}",
                    drawn.ci
                );
            }
        }
    }

    /// Listing the ratio's distribution and searching it by bisection give
    /// one interval.
    #[test]
    fn listing_and_bisection_agree() {
        let mut rng = Rng::new(5);
        for (nb, nc) in [(5, 5), (9, 7), (12, 11)] {
            let base: Vec<f64> = (0..nb).map(|_| 1.0 + 0.05 * rng.next_f64()).collect();
            let cand: Vec<f64> = (0..nc).map(|_| 1.01 + 0.05 * rng.next_f64()).collect();
            let listed = median_ratio_interval(&base, &cand, 0.95).unwrap();
            let (b, c) = (resample_median(&base), resample_median(&cand));
            let searched = bisected(&b, &c, 0.025, 0.975);
            assert!(
                (listed.lo - searched.lo).abs() < 1e-9,
                "{listed:?} {searched:?}"
            );
            assert!(
                (listed.hi - searched.hi).abs() < 1e-9,
                "{listed:?} {searched:?}"
            );
        }
    }

    #[test]
    fn where_the_exact_route_does_not_apply_it_says_so() {
        assert!(median_ratio_interval(&[1.0; 65], &[1.0; 5], 0.95).is_none());
        assert!(median_ratio_interval(&[0.0, 1.0, 2.0], &[1.0; 5], 0.95).is_none());
        assert!(median_ratio_interval(&[], &[1.0], 0.95).is_none());
        // One value a side: the ratio itself, both ends.
        let one = median_ratio_interval(&[2.0], &[3.0], 0.95).unwrap();
        assert!(
            (one.lo - 1.5).abs() < 1e-12 && (one.hi - 1.5).abs() < 1e-12,
            "{one:?}"
        );
    }
}
