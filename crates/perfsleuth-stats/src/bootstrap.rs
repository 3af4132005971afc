//! Percentile bootstrap of a ratio of medians, for "candidate is X% slower"
//! statements that do not assume any distribution of run times.

use crate::describe::{Interval, median_in_place, percentile_in_place};
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
    /// some resampled baseline medians were 0). For up to
    /// [`crate::EXACT_MAX`] positive samples a side the interval is the
    /// exact limit of resampling, computed rather than drawn, and this is
    /// the requested count it stands for.
    pub resamples: usize,
}

/// Relative change of the median, candidate against baseline, with a
/// bootstrap CI: the form verdicts are stated in ("+3.2% [+1.1%, +5.0%]").
#[derive(Debug, Clone, PartialEq)]
pub struct RelativeChange {
    /// Point estimate: median(candidate) / median(baseline) - 1.
    pub change: f64,
    /// Percentile-bootstrap confidence interval of the change.
    pub ci: Interval,
    /// Resamples that produced a finite ratio (see [`RatioEstimate::resamples`]).
    pub resamples: usize,
}

impl RelativeChange {
    /// A change known exactly (counts, or a summary without spread): its
    /// interval is the point itself, and nothing was resampled.
    pub fn exact(change: f64) -> RelativeChange {
        RelativeChange {
            change,
            ci: Interval {
                lo: change,
                hi: change,
            },
            resamples: 0,
        }
    }

    /// Restates a ratio estimate as a change; subtracting 1 is monotone, so
    /// the percentile CI of the ratio maps onto that of the change.
    fn from_ratio(r: &RatioEstimate) -> RelativeChange {
        RelativeChange {
            change: r.ratio - 1.0,
            ci: Interval {
                lo: r.ci.lo - 1.0,
                hi: r.ci.hi - 1.0,
            },
            resamples: r.resamples,
        }
    }
}

/// Fills `out` with a with-replacement resample of `src` (same length).
fn resample_into(rng: &mut Rng, src: &[f64], out: &mut [f64]) {
    for slot in out.iter_mut() {
        *slot = src[rng.below(src.len())];
    }
}

/// Two-stage resample of a side made of several runs: draws `runs.len()`
/// runs with replacement, then each drawn run's own length in samples with
/// replacement from that run, and pools everything into `out`. The
/// bootstrap takes its medians by [`Ranked`], which draws the same; this
/// is the plain statement of that draw, which the tests hold it to.
#[cfg(test)]
fn resample_runs_into(rng: &mut Rng, runs: &[Vec<f64>], out: &mut Vec<f64>) {
    out.clear();
    for _ in 0..runs.len() {
        // With a single run there is nothing to choose; not drawing keeps the
        // stream identical to the one-level bootstrap, so one run per side
        // reproduces `bootstrap_median_ratio` exactly for the same seed.
        let run = if runs.len() == 1 {
            &runs[0]
        } else {
            &runs[rng.below(runs.len())]
        };
        out.extend((0..run.len()).map(|_| run[rng.below(run.len())]));
    }
}

/// A side of a few hundred samples at most, prepared to take the median of
/// a two-stage resample by counting: each sample is replaced by its rank
/// among the side's distinct values, so a resample is a tally of ranks and
/// its median is read off the running total. It draws exactly what
/// [`resample_runs_into`] draws (groups, then samples, in that order) and
/// gives the same median bit for bit, without the selection over the
/// resample whose data-dependent branches cost most of a compare's time
/// (a 20-benchmark compare: PERFORMANCE.md, "Reads as the store grows").
struct Ranked {
    /// The side's distinct values, ascending by `total_cmp`.
    values: Vec<f64>,
    /// Each group's samples as indices into `values`, in the group's order.
    groups: Vec<Vec<u32>>,
    /// The tally of one resample, by rank.
    counts: Vec<u32>,
}

impl Ranked {
    fn new(groups: &[Vec<f64>]) -> Ranked {
        let mut values: Vec<f64> = groups.concat();
        values.sort_unstable_by(f64::total_cmp);
        values.dedup_by(|a, b| a.total_cmp(b).is_eq());
        let rank = |x: &f64| {
            // Present by construction; u32 holds it (at most DIRECT_MAX values).
            values.partition_point(|v| v.total_cmp(x).is_lt()) as u32
        };
        let groups = groups
            .iter()
            .map(|g| g.iter().map(rank).collect())
            .collect();
        Ranked {
            counts: vec![0; values.len()],
            values,
            groups,
        }
    }

    /// The median of one two-stage resample (one plain resample for one group).
    fn resample_median(&mut self, rng: &mut Rng) -> f64 {
        self.counts.fill(0);
        let n_groups = self.groups.len();
        let mut total = 0usize;
        for _ in 0..n_groups {
            // One group: nothing to choose, and no draw spent, as in
            // `resample_runs_into`.
            let g = if n_groups == 1 {
                0
            } else {
                rng.below(n_groups)
            };
            let group = &self.groups[g];
            for _ in 0..group.len() {
                self.counts[group[rng.below(group.len())] as usize] += 1;
            }
            total += group.len();
        }
        // The value at 0-based position `at` of the sorted resample.
        let (mut seen, mut upper_rank) = (0usize, 0usize);
        let upper_at = total / 2;
        for (r, &c) in self.counts.iter().enumerate() {
            seen += c as usize;
            if seen > upper_at {
                upper_rank = r;
                break;
            }
        }
        let upper = self.values[upper_rank];
        if total % 2 == 1 {
            return upper;
        }
        // The lower middle: the same value when the tally below it does
        // not reach it, else the nearest drawn value under it.
        let below: usize = seen - self.counts[upper_rank] as usize;
        let lower = if below < upper_at {
            upper
        } else {
            let r = (0..upper_rank)
                .rev()
                .find(|&r| self.counts[r] > 0)
                .unwrap_or(upper_rank);
            self.values[r]
        };
        f64::midpoint(lower, upper)
    }
}

/// Sides with more samples than this (pooled) are resampled through their
/// order statistics ([`OrderStats`]) instead of sample by sample: the direct
/// way costs O(n) per resample (48 s for 200 000 samples a side and 10 000
/// resamples), this one O(groups · log n). It was 4 000; at 500 a run
/// summary of 100 benchmarks × 1 000 samples (99 in-run ratios) takes 4.9 s
/// instead of 13.5 s (docs/PERFORMANCE.md, "report"), and the two ways
/// draw from the same distribution (the unit tests below); a side of one
/// group now draws its median from the uniform order statistics instead,
/// 0.29 s for that report. Below it the
/// direct resampling is kept, so small inputs give exactly the intervals
/// they always gave.
pub const DIRECT_MAX: usize = 500;

/// One side of a comparison, prepared to draw the median of a two-stage
/// resample (groups with replacement, then each drawn group's own size in
/// samples with replacement) without materialising the resample.
///
/// The resample's median is one of the side's values; which one is found by
/// bisection over the sorted distinct values: the number of resampled values
/// of group g at or below a split point is Binomial(draws_g, share_g), where
/// share_g is the fraction of the group's values in the current interval that
/// lie at or below the split, and the draws of each half are again binomial
/// within it. That is the exact distribution of the resample (up to the
/// binomial sampler, see [`Rng::binomial`]), in about log2(n) steps.
struct OrderStats {
    /// Distinct values of the side, ascending.
    values: Vec<f64>,
    /// Each group's values, ascending.
    groups: Vec<Vec<f64>>,
}

/// Draws in a value interval that was not searched, kept to find the next
/// order statistic above the one found (the upper middle of an even count).
struct Pending {
    lo: usize,
    hi: usize,
    draws: Vec<u64>,
}

impl OrderStats {
    fn new(groups: &[Vec<f64>]) -> OrderStats {
        let mut groups: Vec<Vec<f64>> = groups.to_vec();
        for g in &mut groups {
            g.sort_unstable_by(f64::total_cmp);
        }
        let mut values: Vec<f64> = groups.concat();
        values.sort_unstable_by(f64::total_cmp);
        values.dedup();
        OrderStats { values, groups }
    }

    /// Finds the `m`-th smallest (1-based) of the draws in `[values[lo],
    /// values[hi]]` (`draws[g]` of them from group g). Returns its value index
    /// and its rank among the draws equal to it; `draws` ends as the counts at
    /// that value. Intervals passed over on the right go to `pending`.
    ///
    /// Each group's values inside the current interval are kept as a range of
    /// its sorted slice, so a bisection step costs one binary search within
    /// that range per drawing group (not four over the whole group), and no
    /// allocation: 200 000 samples a side, 1.08 → 0.81 s a compare
    /// (docs/PERFORMANCE.md). The random draws are the same as before, so
    /// every interval is unchanged.
    fn select(
        &self,
        rng: &mut Rng,
        mut m: u64,
        (mut lo, mut hi): (usize, usize),
        draws: &mut [u64],
        mut pending: Option<&mut Vec<Pending>>,
    ) -> (usize, u64) {
        let (va, vb) = (self.values[lo], self.values[hi]);
        let mut ranges: Vec<(usize, usize)> = self
            .groups
            .iter()
            .map(|s| {
                (
                    s.partition_point(|&x| x < va),
                    s.partition_point(|&x| x <= vb),
                )
            })
            .collect();
        let mut left = vec![0u64; draws.len()];
        let mut splits = vec![0usize; draws.len()];
        while lo < hi {
            let mid = lo + (hi - lo) / 2;
            let vm = self.values[mid];
            let mut left_total = 0u64;
            for (g, k) in draws.iter().enumerate() {
                left[g] = 0;
                // A group not drawn stays undrawn on both sides: its range
                // is never needed again.
                if *k == 0 {
                    continue;
                }
                let (a, b) = ranges[g];
                let below = self.groups[g][a..b].partition_point(|&x| x <= vm);
                splits[g] = a + below;
                let all = b - a;
                let l = if all == 0 {
                    0
                } else {
                    rng.binomial(*k, below as f64 / all as f64)
                };
                left[g] = l;
                left_total += l;
            }
            let drawn = |g: usize, draws: &[u64]| draws[g] > 0;
            if m <= left_total {
                if let Some(p) = pending.as_deref_mut() {
                    p.push(Pending {
                        lo: mid + 1,
                        hi,
                        draws: draws.iter().zip(&left).map(|(k, l)| k - l).collect(),
                    });
                }
                for g in 0..draws.len() {
                    if drawn(g, draws) {
                        ranges[g].1 = splits[g];
                    }
                }
                draws.copy_from_slice(&left);
                hi = mid;
            } else {
                m -= left_total;
                for g in 0..draws.len() {
                    if drawn(g, draws) {
                        ranges[g].0 = splits[g];
                    }
                }
                for (k, l) in draws.iter_mut().zip(&left) {
                    *k -= l;
                }
                lo = mid + 1;
            }
        }
        (lo, m)
    }

    /// The median of a plain resample of the one group, from the uniform
    /// order statistics: a resample of n values is x[floor(n·U_j)] for n
    /// uniforms U_j, so its k-th smallest is x[floor(n·U_(k))], and U_(k)
    /// is Beta(k, n − k + 1). For an even n the next one up is U_(k) plus
    /// the smallest of the n − k uniforms above it, drawn by inversion.
    /// Two gamma variates and a uniform a resample instead of log2(n)
    /// rounds of binomial draws; exact in distribution like the bisection.
    fn plain_resample_median(&self, rng: &mut Rng) -> f64 {
        let x = &self.groups[0];
        let n = x.len();
        let at = |u: f64| x[((n as f64 * u) as usize).min(n - 1)];
        if n % 2 == 1 {
            let k = n.div_ceil(2) as f64;
            return at(rng.beta(k, n as f64 - k + 1.0));
        }
        let k = (n / 2) as f64;
        let lower = rng.beta(k, n as f64 - k + 1.0);
        // P(min of n − k uniforms on (lower, 1) > lower + t(1 − lower)) is
        // (1 − t)^(n − k); 1 − next_f64 is in (0, 1].
        let v = 1.0 - rng.next_f64();
        let upper = lower + (1.0 - lower) * (1.0 - v.powf(1.0 / (n as f64 - k)));
        (at(lower) + at(upper)) / 2.0
    }

    /// The median of one two-stage resample.
    fn resample_median(&self, rng: &mut Rng) -> f64 {
        if self.groups.len() == 1 && self.groups[0].len() > DIRECT_MAX {
            // A single group at or below DIRECT_MAX (the small side of an
            // unbalanced comparison) keeps the bisection below, so its
            // intervals stay as published.
            return self.plain_resample_median(rng);
        }
        let n_groups = self.groups.len();
        let mut draws = vec![0u64; n_groups];
        if n_groups == 1 {
            draws[0] = self.groups[0].len() as u64;
        } else {
            for _ in 0..n_groups {
                let g = rng.below(n_groups);
                draws[g] += self.groups[g].len() as u64;
            }
        }
        let total: u64 = draws.iter().sum();
        let last = self.values.len() - 1;
        if total % 2 == 1 {
            let (i, _) = self.select(rng, total.div_ceil(2), (0, last), &mut draws, None);
            return self.values[i];
        }
        let mut pending = Vec::new();
        let (i, rank) = self.select(rng, total / 2, (0, last), &mut draws, Some(&mut pending));
        let at_value: u64 = draws.iter().sum();
        if rank < at_value {
            return self.values[i];
        }
        // The upper middle is the smallest draw above: in the nearest interval
        // passed over on the right that holds any.
        while let Some(mut p) = pending.pop() {
            if p.draws.iter().sum::<u64>() > 0 {
                let (j, _) = self.select(rng, 1, (p.lo, p.hi), &mut p.draws, None);
                return (self.values[i] + self.values[j]) / 2.0;
            }
        }
        self.values[i]
    }
}

/// Shared percentile-bootstrap loop: calls `draw` `resamples` times with one
/// RNG seeded by `seed`, keeps the finite ratios and returns their central
/// `confidence` interval and count. None if no draw was finite.
fn percentile_bootstrap(
    confidence: f64,
    resamples: usize,
    seed: u64,
    mut draw: impl FnMut(&mut Rng) -> f64,
) -> Option<(Interval, usize)> {
    let mut rng = Rng::new(seed);
    let mut ratios = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        let r = draw(&mut rng);
        // A resampled baseline median of 0 gives inf/NaN; such draws carry
        // no usable ratio, so they are dropped and reported via `resamples`.
        if r.is_finite() {
            ratios.push(r);
        }
    }
    if ratios.is_empty() {
        return None;
    }
    // Two selections, not a sort: the same two order statistics each.
    let alpha2 = (1.0 - confidence) / 2.0;
    let ci = Interval {
        lo: percentile_in_place(&mut ratios, 100.0 * alpha2)?,
        hi: percentile_in_place(&mut ratios, 100.0 * (1.0 - alpha2))?,
    };
    Some((ci, ratios.len()))
}

/// Builds the estimate from the full-sample ratio and the bootstrap result.
fn ratio_estimate(ratio: f64, (ci, resamples): (Interval, usize)) -> RatioEstimate {
    RatioEstimate {
        ratio,
        ci,
        significant: ci.lo > 1.0 || ci.hi < 1.0,
        resamples,
    }
}

/// True when the slice is usable as a sample: non-empty and all finite.
fn clean(s: &[f64]) -> bool {
    !s.is_empty() && s.iter().all(|v| v.is_finite())
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
    // Small positive samples: the bootstrap's own limit, computed, not drawn.
    if let Some(ci) = crate::exact::median_ratio_interval(baseline, candidate, confidence) {
        return Some(ratio_estimate(ratio, (ci, resamples)));
    }
    if baseline.len().max(candidate.len()) > DIRECT_MAX {
        let (b, c) = (
            OrderStats::new(&[baseline.to_vec()]),
            OrderStats::new(&[candidate.to_vec()]),
        );
        let boot = percentile_bootstrap(confidence, resamples, seed, |rng| {
            c.resample_median(rng) / b.resample_median(rng)
        })?;
        return Some(ratio_estimate(ratio, boot));
    }
    let (mut b, mut c) = (
        Ranked::new(&[baseline.to_vec()]),
        Ranked::new(&[candidate.to_vec()]),
    );
    let boot = percentile_bootstrap(confidence, resamples, seed, |rng| {
        let base = b.resample_median(rng);
        c.resample_median(rng) / base
    })?;
    Some(ratio_estimate(ratio, boot))
}

/// An absolute difference median(candidate) − median(baseline) with its
/// percentile-bootstrap CI: for amounts that may be 0 on one side (a
/// function's time in a profile), where a ratio is undefined.
#[derive(Debug, Clone, PartialEq)]
pub struct MedianShift {
    /// Point estimate on the full samples.
    pub shift: f64,
    /// Percentile-bootstrap confidence interval of the shift.
    pub ci: Interval,
}

impl MedianShift {
    /// Whether the interval holds 0: no shift shown at this confidence.
    pub fn in_the_noise(&self) -> bool {
        self.ci.contains(0.0)
    }
}

/// median(candidate) − median(baseline) with a percentile bootstrap CI,
/// each side resampled independently as in [`bootstrap_median_ratio`].
/// None if either side is empty or has a non-finite value, `resamples` is 0
/// or confidence is not in (0, 1).
pub fn bootstrap_median_shift(
    baseline: &[f64],
    candidate: &[f64],
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Option<MedianShift> {
    if !clean(baseline) || !clean(candidate) || resamples == 0 || !valid_confidence(confidence) {
        return None;
    }
    let mut base_buf = baseline.to_vec();
    let mut cand_buf = candidate.to_vec();
    let shift = median_in_place(&mut cand_buf) - median_in_place(&mut base_buf);
    let (ci, _) = percentile_bootstrap(confidence, resamples, seed, |rng| {
        resample_into(rng, baseline, &mut base_buf);
        resample_into(rng, candidate, &mut cand_buf);
        median_in_place(&mut cand_buf) - median_in_place(&mut base_buf)
    })?;
    Some(MedianShift { shift, ci })
}

/// Relative change median(candidate)/median(baseline) - 1 with a percentile
/// bootstrap CI; the same resampling (and the same None cases) as
/// [`bootstrap_median_ratio`], restated as a change.
pub fn bootstrap_relative_change(
    baseline: &[f64],
    candidate: &[f64],
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Option<RelativeChange> {
    bootstrap_median_ratio(baseline, candidate, confidence, resamples, seed)
        .map(|r| RelativeChange::from_ratio(&r))
}

/// Relative change of the median when each side consists of several runs
/// (each run a vector of samples), by a two-stage bootstrap: runs are
/// resampled with replacement, then samples within each drawn run. A shift
/// between runs (another boot, another thermal state) then widens the CI
/// instead of passing for a code change. The point estimate is the median
/// of all samples of a side pooled. With one run per side this equals
/// [`bootstrap_relative_change`] for the same seed. None if a side has no
/// runs, any run is empty or has a non-finite value, the pooled baseline
/// median is 0, `resamples` is 0, confidence is not in (0, 1), or no
/// resample gave a finite ratio.
pub fn bootstrap_relative_change_runs(
    baseline_runs: &[Vec<f64>],
    candidate_runs: &[Vec<f64>],
    confidence: f64,
    resamples: usize,
    seed: u64,
) -> Option<RelativeChange> {
    let clean_runs = |runs: &[Vec<f64>]| !runs.is_empty() && runs.iter().all(|r| clean(r));
    if !clean_runs(baseline_runs)
        || !clean_runs(candidate_runs)
        || resamples == 0
        || !valid_confidence(confidence)
    {
        return None;
    }
    // One run a side: the two-stage resample is the plain one, whose
    // interval small samples get exactly.
    if let ([b], [c]) = (baseline_runs, candidate_runs) {
        return bootstrap_relative_change(b, c, confidence, resamples, seed);
    }
    // Statistic: median of the pooled resample, not the median of run
    // medians. It is the same estimator as the single-run bootstrap (so one
    // run per side agrees with it exactly), weights runs by their sample
    // counts, and stays smooth with 2-3 runs per side, where a median of
    // 2-3 run medians could take only a handful of values. Between-run
    // variation still enters through the first stage: a resample that draws
    // the slow run twice has a slower pooled median.
    let mut base_buf: Vec<f64> = baseline_runs.concat();
    let mut cand_buf: Vec<f64> = candidate_runs.concat();
    let base_median = median_in_place(&mut base_buf);
    if base_median == 0.0 {
        return None;
    }
    let ratio = median_in_place(&mut cand_buf) / base_median;
    if base_buf.len().max(cand_buf.len()) > DIRECT_MAX {
        let (b, c) = (
            OrderStats::new(baseline_runs),
            OrderStats::new(candidate_runs),
        );
        let boot = percentile_bootstrap(confidence, resamples, seed, |rng| {
            c.resample_median(rng) / b.resample_median(rng)
        })?;
        return Some(RelativeChange::from_ratio(&ratio_estimate(ratio, boot)));
    }
    // Resampling within runs too (not only whole runs) counts the
    // within-run variance somewhat twice, so the CI errs on the wide side;
    // for verdicts a slightly conservative CI is the safe direction.
    let (mut b, mut c) = (Ranked::new(baseline_runs), Ranked::new(candidate_runs));
    let boot = percentile_bootstrap(confidence, resamples, seed, |rng| {
        let base = b.resample_median(rng);
        c.resample_median(rng) / base
    })?;
    Some(RelativeChange::from_ratio(&ratio_estimate(ratio, boot)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::describe::percentile;

    #[test]
    fn the_tally_draws_and_takes_the_median_as_the_resample_does() {
        // Group shapes from one value to hundreds, with ties and equal
        // groups: the same median bit for bit, and the generator left in
        // the same state (every later interval depends on it).
        let mut shape = Rng::new(17);
        for case in 0..300 {
            let groups: Vec<Vec<f64>> = (0..1 + shape.below(6))
                .map(|_| {
                    (0..1 + shape.below(if case % 10 == 0 { 90 } else { 12 }))
                        .map(|_| {
                            (shape.below(9) as f64)
                                + if case % 3 == 0 { 0.0 } else { shape.next_f64() }
                        })
                        .collect()
                })
                .collect();
            let mut ranked = Ranked::new(&groups);
            let (mut a, mut b) = (Rng::new(case), Rng::new(case));
            let mut buf = Vec::new();
            for _ in 0..50 {
                resample_runs_into(&mut a, &groups, &mut buf);
                let want = median_in_place(&mut buf);
                let got = ranked.resample_median(&mut b);
                assert_eq!(got.to_bits(), want.to_bits(), "{groups:?}");
            }
            assert_eq!(a.next_u64(), b.next_u64());
        }
    }

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
        // Larger than EXACT_MAX: resampled, so the seed shows.
        let base: Vec<f64> = (0..70).map(|i| f64::from(i * 7 % 23) + 1.0).collect();
        let cand: Vec<f64> = (0..80).map(|i| f64::from(i * 5 % 19) + 2.0).collect();
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
    #[test]
    fn relative_change_restates_the_ratio() {
        let base: Vec<f64> = (0..40).map(|i| 100.0 + f64::from(i % 9)).collect();
        let cand: Vec<f64> = (0..35).map(|i| 104.0 + f64::from(i % 11)).collect();
        let r = bootstrap_median_ratio(&base, &cand, 0.95, 1_000, 12).unwrap();
        let c = bootstrap_relative_change(&base, &cand, 0.95, 1_000, 12).unwrap();
        assert_eq!(c.change, r.ratio - 1.0);
        assert_eq!(
            c.ci,
            Interval {
                lo: r.ci.lo - 1.0,
                hi: r.ci.hi - 1.0
            }
        );
        assert_eq!(c.resamples, r.resamples);
        assert!(c.ci.contains(c.change));
        // The exact-distribution case from above: ratio 3 in [2, 6].
        let e = bootstrap_relative_change(&[1.0, 2.0, 3.0], &[6.0], 0.95, 10_000, 1).unwrap();
        assert_eq!(e.change, 2.0);
        assert_eq!(e.ci, Interval { lo: 1.0, hi: 5.0 });
        assert_eq!(bootstrap_relative_change(&[], &[1.0], 0.95, 10, 0), None);
    }

    #[test]
    fn one_run_per_side_equals_the_plain_bootstrap() {
        let base: Vec<f64> = (0..30).map(|i| f64::from(i * 7 % 23) + 50.0).collect();
        let cand: Vec<f64> = (0..25).map(|i| f64::from(i * 5 % 19) + 52.0).collect();
        for seed in [0, 1, 99] {
            let plain = bootstrap_relative_change(&base, &cand, 0.95, 800, seed);
            let runs = bootstrap_relative_change_runs(
                std::slice::from_ref(&base),
                std::slice::from_ref(&cand),
                0.95,
                800,
                seed,
            );
            assert!(plain.is_some());
            assert_eq!(plain, runs);
        }
    }

    /// Runs of 20 samples: a small within-run jitter (+-0.45%) around a
    /// per-run level, so `levels` sets the run-to-run shift.
    fn runs_at(levels: &[f64]) -> Vec<Vec<f64>> {
        levels
            .iter()
            .map(|&l| {
                (0..20)
                    .map(|i| l * (1.0 + 0.001 * f64::from(i * 7 % 10) - 0.0045))
                    .collect()
            })
            .collect()
    }

    #[test]
    fn between_run_spread_widens_the_ci() {
        // Each run sits up to 5% off 100 on both sides; the candidate's runs
        // happen to land 2% higher on average. Pooling all samples ignores
        // the run structure and reports a precise +2% change; the two-stage
        // bootstrap must see that 5 runs per side cannot tell that apart
        // from the run-to-run shift.
        let base = runs_at(&[100.0, 104.0, 97.0, 102.0, 98.0]);
        let cand = runs_at(&[103.0, 101.0, 105.0, 99.0, 104.0]);
        let hier = bootstrap_relative_change_runs(&base, &cand, 0.95, 2_000, 5).unwrap();
        let pooled =
            bootstrap_relative_change(&base.concat(), &cand.concat(), 0.95, 2_000, 5).unwrap();
        assert_eq!(hier.change, pooled.change);
        assert!(
            hier.ci.width() > 2.0 * pooled.ci.width(),
            "hier {:?} pooled {:?}",
            hier.ci,
            pooled.ci
        );
        // The pooled CI clears the 1% noise band (it would read as a code
        // change); the hierarchical one includes 0.
        assert!(pooled.ci.lo > 0.01, "{:?}", pooled.ci);
        assert!(hier.ci.contains(0.0), "{:?}", hier.ci);
        assert_eq!(hier.resamples, 2_000);
    }

    #[test]
    fn stable_runs_keep_the_ci_close_to_pooling() {
        // No run-to-run shift: the two-stage CI stays of the same width as
        // pooling (over seeds 0-5 its width ratio was 0.84-1.2; the median
        // of these few distinct values is lumpy), and around the true +3%.
        let base = runs_at(&[100.0; 5]);
        let cand = runs_at(&[103.0; 5]);
        let hier = bootstrap_relative_change_runs(&base, &cand, 0.95, 2_000, 8).unwrap();
        let pooled =
            bootstrap_relative_change(&base.concat(), &cand.concat(), 0.95, 2_000, 8).unwrap();
        assert!((hier.change - 0.03).abs() < 1e-12, "{}", hier.change);
        assert!(hier.ci.width() >= pooled.ci.width() * 0.7);
        assert!(
            hier.ci.width() < pooled.ci.width() * 1.5,
            "{:?} {:?}",
            hier.ci,
            pooled.ci
        );
        assert!(hier.ci.lo > 0.02 && hier.ci.hi < 0.04, "{:?}", hier.ci);
    }

    #[test]
    fn runs_of_unequal_length_and_reproducibility() {
        let base = vec![vec![10.0, 10.5, 9.8], vec![10.2; 7], vec![9.9, 10.1]];
        let cand = vec![vec![11.0, 11.2, 10.9, 11.1], vec![10.8, 11.3]];
        let a = bootstrap_relative_change_runs(&base, &cand, 0.9, 500, 3).unwrap();
        let b = bootstrap_relative_change_runs(&base, &cand, 0.9, 500, 3).unwrap();
        assert_eq!(a, b);
        // Pooled medians: 10.2 and 11.05.
        assert!((a.change - (11.05 / 10.2 - 1.0)).abs() < 1e-12);
        assert!(a.ci.lo <= a.ci.hi && a.ci.lo > 0.0, "{:?}", a.ci);
    }

    #[test]
    fn runs_invalid_inputs() {
        let ok = vec![vec![1.0, 2.0]];
        let f = |b: &[Vec<f64>], c: &[Vec<f64>]| bootstrap_relative_change_runs(b, c, 0.95, 10, 0);
        assert_eq!(f(&[], &ok), None);
        assert_eq!(f(&ok, &[]), None);
        assert_eq!(f(&[vec![1.0], vec![]], &ok), None);
        assert_eq!(f(&ok, &[vec![1.0, f64::INFINITY]]), None);
        assert_eq!(f(&[vec![0.0], vec![0.0, 0.0]], &ok), None);
        assert_eq!(bootstrap_relative_change_runs(&ok, &ok, 0.95, 0, 0), None);
        assert_eq!(
            bootstrap_relative_change_runs(&ok, &ok, f64::NAN, 10, 0),
            None
        );
        assert!(f(&ok, &ok).is_some());
    }

    /// Medians of `k` resamples, drawn directly (sample by sample) or through
    /// order statistics, sorted.
    fn medians(groups: &[Vec<f64>], k: usize, seed: u64, fast: bool) -> Vec<f64> {
        let mut rng = Rng::new(seed);
        let os = OrderStats::new(groups);
        let mut buf = Vec::new();
        let mut out: Vec<f64> = (0..k)
            .map(|_| {
                if fast {
                    os.resample_median(&mut rng)
                } else {
                    resample_runs_into(&mut rng, groups, &mut buf);
                    median_in_place(&mut buf)
                }
            })
            .collect();
        out.sort_unstable_by(f64::total_cmp);
        out
    }

    #[test]
    fn order_statistic_medians_have_the_exact_small_distribution() {
        // {1, 2, 3}: the resampled median is 1 or 3 with 7/27 each, 2 with 13/27.
        let m = medians(&[vec![3.0, 1.0, 2.0]], 27_000, 5, true);
        let share = |v: f64| m.iter().filter(|&&x| x == v).count() as f64 / m.len() as f64;
        for (v, p) in [(1.0, 7.0 / 27.0), (2.0, 13.0 / 27.0), (3.0, 7.0 / 27.0)] {
            assert!((share(v) - p).abs() < 0.01, "{v}: {} vs {p}", share(v));
        }
        // An even count averages the two middle draws: {1, 2} gives 1, 1.5 or 2.
        let m = medians(&[vec![1.0, 2.0]], 20_000, 6, true);
        let share = |v: f64| m.iter().filter(|&&x| x == v).count() as f64 / m.len() as f64;
        for (v, p) in [(1.0, 0.25), (1.5, 0.5), (2.0, 0.25)] {
            assert!((share(v) - p).abs() < 0.015, "{v}: {} vs {p}", share(v));
        }
    }

    #[test]
    fn order_statistic_resampling_matches_direct_resampling() {
        // Skewed, tied, grouped data: three runs with their own offsets.
        let run = |n: usize, shift: f64| -> Vec<f64> {
            (0..n)
                .map(|i| shift + ((i * 7919) % 97) as f64 + if i % 11 == 0 { 40.0 } else { 0.0 })
                .collect()
        };
        for groups in [
            vec![run(301, 0.0)],
            vec![run(300, 0.0)],
            vec![run(200, 0.0), run(150, 6.0), run(251, -4.0)],
        ] {
            let direct = medians(&groups, 20_000, 11, false);
            let fast = medians(&groups, 20_000, 12, true);
            for q in [2.5, 25.0, 50.0, 75.0, 97.5] {
                let (a, b) = (
                    percentile(&direct, q).unwrap(),
                    percentile(&fast, q).unwrap(),
                );
                // Monte Carlo error of a percentile of 20 000 draws, on data
                // whose values are 1 apart: within 2 units.
                assert!(
                    (a - b).abs() <= 2.0,
                    "{} groups, q {q}: {a} vs {b}",
                    groups.len()
                );
            }
        }
    }

    #[test]
    fn one_large_group_draws_its_median_from_the_uniform_order_statistics() {
        // Above DIRECT_MAX a single group takes `plain_resample_median`;
        // its percentiles must match sample-by-sample resampling, odd and even.
        let data = |n: usize| -> Vec<f64> {
            (0..n)
                .map(|i| ((i * 7919) % 97) as f64 + if i % 11 == 0 { 40.0 } else { 0.0 })
                .collect()
        };
        for n in [DIRECT_MAX + 101, DIRECT_MAX + 100] {
            let groups = vec![data(n)];
            let direct = medians(&groups, 20_000, 21, false);
            let fast = medians(&groups, 20_000, 22, true);
            for q in [2.5, 25.0, 50.0, 75.0, 97.5] {
                let (a, b) = (
                    percentile(&direct, q).unwrap(),
                    percentile(&fast, q).unwrap(),
                );
                assert!((a - b).abs() <= 2.0, "n {n}, q {q}: {a} vs {b}");
            }
            // Half-integers appear only for an even n (the two middles differ).
            let halves = fast.iter().filter(|m| m.fract() != 0.0).count();
            assert_eq!(halves > 0, n % 2 == 0, "n {n}");
        }
    }

    #[test]
    fn large_sides_take_the_order_statistic_path_with_a_sane_interval() {
        let n = 50_000;
        let base: Vec<f64> = (0..n)
            .map(|i| 1000.0 + ((i * 7919) % 1000) as f64 / 10.0)
            .collect();
        let cand: Vec<f64> = base.iter().map(|x| x * 1.02).collect();
        assert!(n > DIRECT_MAX);
        let r = bootstrap_median_ratio(&base, &cand, 0.95, 2_000, 1).unwrap();
        assert!((r.ratio - 1.02).abs() < 1e-9);
        assert!(
            r.ci.lo < 1.02 && r.ci.hi > 1.02 && r.ci.hi - r.ci.lo < 0.01,
            "{r:?}"
        );
        let (a, b) = base.split_at(n / 2);
        let runs = bootstrap_relative_change_runs(
            &[a.to_vec(), b.to_vec()],
            std::slice::from_ref(&cand),
            0.95,
            2_000,
            1,
        )
        .unwrap();
        assert!(runs.ci.lo < 0.02 && runs.ci.hi > 0.02, "{runs:?}");
    }

    #[test]
    fn a_median_shift_is_absolute_and_its_interval_covers_zero_only_without_a_shift() {
        let base: Vec<f64> = (0..20).map(|i| 100.0 + f64::from(i % 5)).collect();
        let shifted: Vec<f64> = base.iter().map(|v| v + 30.0).collect();
        let s = bootstrap_median_shift(&base, &shifted, 0.95, 2000, 7).unwrap();
        assert_eq!(s.shift, 30.0);
        assert!(
            !s.in_the_noise() && s.ci.lo > 25.0 && s.ci.hi < 35.0,
            "{s:?}"
        );
        // From nothing (a function absent from the baseline): still defined.
        let zeros = vec![0.0; 10];
        let some: Vec<f64> = (0..10).map(|i| 5.0 + f64::from(i % 3)).collect();
        let s = bootstrap_median_shift(&zeros, &some, 0.95, 2000, 7).unwrap();
        assert!(s.shift > 0.0 && !s.in_the_noise(), "{s:?}");
        let same = bootstrap_median_shift(&base, &base, 0.95, 2000, 7).unwrap();
        assert!(same.in_the_noise(), "{same:?}");
        assert_eq!(bootstrap_median_shift(&[], &base, 0.95, 100, 7), None);
    }
}
