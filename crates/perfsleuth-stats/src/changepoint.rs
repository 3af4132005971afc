//! Change points in a series: E-divisive means (Matteson & James 2014) over
//! sliding windows, each split kept only when Student's t-test finds the two
//! sides different, then weak points merged away bottom-up, as Apache Otava
//! (formerly Hunter; Fleming et al. 2023) does. docs/HISTORY.md gives the
//! method, the defaults and where this differs from Otava.

use crate::normal::t_quantile;

/// Otava's default window: each E-divisive pass sees this many points.
pub const DEFAULT_WINDOW: usize = 50;

/// Otava's default significance level of a change point.
pub const DEFAULT_MAX_P: f64 = 0.001;

/// How change points are searched for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ChangeOptions {
    /// Points per E-divisive window (at least 2); windows overlap by half.
    pub window: usize,
    /// A change point is kept only with a t-test p-value below this.
    pub max_p: f64,
    /// ... and a relative change of the means above this (0.02 = 2 %).
    pub min_magnitude: f64,
}

impl Default for ChangeOptions {
    fn default() -> Self {
        ChangeOptions {
            window: DEFAULT_WINDOW,
            max_p: DEFAULT_MAX_P,
            min_magnitude: 0.0,
        }
    }
}

/// One change point: the series steps between `index - 1` and `index`.
#[derive(Debug, Clone, PartialEq)]
pub struct ChangePoint {
    /// Index of the first point of the new level.
    pub index: usize,
    /// Mean of the segment before (back to the previous change point).
    pub mean_before: f64,
    /// Mean of the segment after (up to the next change point).
    pub mean_after: f64,
    /// Standard deviations of the two segments (population, as Otava).
    pub sd_before: f64,
    /// See `sd_before`.
    pub sd_after: f64,
    /// Points in each segment.
    pub n_before: usize,
    /// See `n_before`.
    pub n_after: usize,
    /// Two-sided p-value of Student's t-test between the segments.
    pub p: f64,
    /// The relative change of the means, `mean_after / mean_before - 1`.
    pub change: f64,
    /// Its 95 % interval from the same pooled variance the test uses, so
    /// it excludes 0 exactly when p < 0.05.
    pub ci: (f64, f64),
}

impl ChangePoint {
    /// Otava's magnitude: the larger of the forward and backward relative
    /// changes, so a halving and a doubling weigh the same.
    pub fn magnitude(&self) -> f64 {
        magnitude(self.mean_before, self.mean_after)
    }
}

fn magnitude(before: f64, after: f64) -> f64 {
    let fwd = if before == 0.0 {
        0.0
    } else {
        after / before - 1.0
    };
    let back = if after == 0.0 {
        0.0
    } else {
        before / after - 1.0
    };
    fwd.abs().max(back.abs())
}

/// The run-to-run noise of a series as a relative standard deviation,
/// learned from the series itself: the median absolute difference of
/// consecutive points (1.4826/√2 times it estimates σ for normal noise),
/// over the median level. A step moves one difference only, so it barely
/// moves this. `None` below 4 points or at a level of 0.
pub fn relative_noise(series: &[f64]) -> Option<f64> {
    if series.len() < 4 || series.iter().any(|v| !v.is_finite()) {
        return None;
    }
    let diffs: Vec<f64> = series.windows(2).map(|w| (w[1] - w[0]).abs()).collect();
    let level = crate::median(series)?.abs();
    let spread = crate::median(&diffs)? * 1.4826 / std::f64::consts::SQRT_2;
    (level > 0.0).then(|| spread / level)
}

/// How many run-to-run standard deviations a change must exceed to be
/// reported. 1.5: below it, seeded pure-noise series of 300 points showed
/// short blips that pass the t-test (the search over every split makes its
/// p optimistic); 1.96 (one run's 95 % band) missed 5 of 6 real +20 %
/// steps on the noisy VM (docs/HISTORY.md "Validation on this machine").
pub const FLOOR_SIGMAS: f64 = 1.5;

/// The smallest change worth reporting in a series with this relative
/// noise: [`FLOOR_SIGMAS`] standard deviations of one run.
pub fn noise_floor(noise: f64) -> f64 {
    FLOOR_SIGMAS * noise
}

/// Finds the change points of `series` (finite values, in order), sorted by
/// index. A series shorter than 4 points has none.
pub fn change_points(series: &[f64], opts: &ChangeOptions) -> Vec<ChangePoint> {
    let n = series.len();
    if n < 4 || series.iter().any(|v| !v.is_finite()) {
        return Vec::new();
    }
    let sums = Sums::new(series);
    let window = opts.window.max(2);
    // Otava's first pass is ten times as lenient: weak points, most of which
    // the merge removes once each is tested against its whole segments.
    let first_p = if opts.max_p < 0.05 {
        opts.max_p * 10.0
    } else if opts.max_p < 0.5 {
        opts.max_p * 2.0
    } else {
        opts.max_p
    };
    let mut weak: Vec<usize> = Vec::new();
    let step = (window / 2).max(1);
    let mut start = 0;
    while start < n {
        let end = (start + window).min(n);
        let found = divisive(series, &sums, start, end, first_p);
        let last = found.last().copied().unwrap_or(0);
        for i in found {
            if !weak.contains(&i) {
                weak.push(i);
            }
        }
        start = last.max(start + step);
    }
    weak.sort_unstable();
    merge(&sums, weak, opts)
}

/// Prefix sums of the values and their squares (shifted by the first value,
/// so timings in nanoseconds keep their precision), for O(1) segment stats.
struct Sums {
    shift: f64,
    s1: Vec<f64>,
    s2: Vec<f64>,
}

impl Sums {
    fn new(series: &[f64]) -> Sums {
        let shift = series[0];
        let mut s1 = Vec::with_capacity(series.len() + 1);
        let mut s2 = Vec::with_capacity(series.len() + 1);
        let (mut a, mut b) = (0.0, 0.0);
        s1.push(0.0);
        s2.push(0.0);
        for v in series {
            let d = v - shift;
            a += d;
            b += d * d;
            s1.push(a);
            s2.push(b);
        }
        Sums { shift, s1, s2 }
    }

    /// Mean and population standard deviation of `[lo, hi)`.
    fn stats(&self, lo: usize, hi: usize) -> (f64, f64) {
        let n = (hi - lo) as f64;
        let m = (self.s1[hi] - self.s1[lo]) / n;
        let var = ((self.s2[hi] - self.s2[lo]) / n - m * m).max(0.0);
        (m + self.shift, if hi - lo >= 2 { var.sqrt() } else { 0.0 })
    }

    /// The t-test of `[lo, at)` against `[at, hi)`.
    fn test(&self, lo: usize, at: usize, hi: usize) -> ChangePoint {
        let (m1, s1) = self.stats(lo, at);
        let (m2, s2) = self.stats(at, hi);
        let (n1, n2) = (at - lo, hi - at);
        let (p, ci) = student(m1, s1, n1, m2, s2, n2);
        ChangePoint {
            index: at,
            mean_before: m1,
            mean_after: m2,
            sd_before: s1,
            sd_after: s2,
            n_before: n1,
            n_after: n2,
            p,
            change: if m1 == 0.0 { 0.0 } else { m2 / m1 - 1.0 },
            ci: if m1 == 0.0 {
                (0.0, 0.0)
            } else {
                (ci.0 / m1, ci.1 / m1)
            },
        }
    }
}

/// Student's two-sample t-test with pooled variance, from summary
/// statistics (scipy's `ttest_ind_from_stats`, as Otava calls it with
/// population standard deviations): the two-sided p-value and the 95 %
/// interval of `m2 - m1`.
fn student(m1: f64, s1: f64, n1: usize, m2: f64, s2: f64, n2: usize) -> (f64, (f64, f64)) {
    let d = m2 - m1;
    if n1 + n2 <= 2 {
        return (1.0, (f64::NEG_INFINITY, f64::INFINITY));
    }
    let df = (n1 + n2 - 2) as f64;
    let pooled = ((n1 as f64 - 1.0) * s1 * s1 + (n2 as f64 - 1.0) * s2 * s2) / df;
    let se = (pooled * (1.0 / n1 as f64 + 1.0 / n2 as f64)).sqrt();
    if se == 0.0 || !se.is_finite() {
        // Two constant sides: equal means are no change, different ones
        // are as certain as it gets.
        let p = if d == 0.0 { 1.0 } else { 0.0 };
        return (p, (d, d));
    }
    let t = d / se;
    let half = t_quantile(0.975, df) * se;
    (t_two_sided_p(t, df), (d - half, d + half))
}

/// Two-sided p-value of Student's t: `I_{df/(df+t²)}(df/2, 1/2)`.
pub fn t_two_sided_p(t: f64, df: f64) -> f64 {
    if !t.is_finite() {
        return if t.is_nan() { f64::NAN } else { 0.0 };
    }
    let x = df / (df + t * t);
    incomplete_beta(x, df / 2.0, 0.5).clamp(0.0, 1.0)
}

/// The regularized incomplete beta function `I_x(a, b)`, by Lentz's
/// continued fraction on the side where it converges fast.
fn incomplete_beta(x: f64, a: f64, b: f64) -> f64 {
    if x <= 0.0 {
        return 0.0;
    }
    if x >= 1.0 {
        return 1.0;
    }
    let ln_front = ln_gamma(a + b) - ln_gamma(a) - ln_gamma(b) + a * x.ln() + b * (1.0 - x).ln();
    let front = ln_front.exp();
    if x < (a + 1.0) / (a + b + 2.0) {
        front * beta_fraction(x, a, b) / a
    } else {
        1.0 - front * beta_fraction(1.0 - x, b, a) / b
    }
}

fn beta_fraction(x: f64, a: f64, b: f64) -> f64 {
    const TINY: f64 = 1e-300;
    let mut c = 1.0;
    let mut d = 1.0 - (a + b) * x / (a + 1.0);
    if d.abs() < TINY {
        d = TINY;
    }
    d = 1.0 / d;
    let mut h = d;
    for m in 1..300 {
        let m = m as f64;
        // Even step, then odd step of the fraction.
        let num = m * (b - m) * x / ((a + 2.0 * m - 1.0) * (a + 2.0 * m));
        d = 1.0 + num * d;
        d = if d.abs() < TINY { 1.0 / TINY } else { 1.0 / d };
        c = 1.0 + num / c;
        if c.abs() < TINY {
            c = TINY;
        }
        h *= d * c;
        let num = -(a + m) * (a + b + m) * x / ((a + 2.0 * m) * (a + 2.0 * m + 1.0));
        d = 1.0 + num * d;
        d = if d.abs() < TINY { 1.0 / TINY } else { 1.0 / d };
        c = 1.0 + num / c;
        if c.abs() < TINY {
            c = TINY;
        }
        let delta = d * c;
        h *= delta;
        if (delta - 1.0).abs() < 1e-15 {
            break;
        }
    }
    h
}

/// ln Γ(x) for x > 0 (Lanczos, g = 7, 9 terms; ~1e-15 relative).
fn ln_gamma(x: f64) -> f64 {
    const G: [f64; 9] = [
        0.999_999_999_999_809_9,
        676.520_368_121_885_1,
        -1_259.139_216_722_402_8,
        771.323_428_777_653_1,
        -176.615_029_162_140_6,
        12.507_343_278_686_905,
        -0.138_571_095_265_720_12,
        9.984_369_578_019_572e-6,
        1.505_632_735_149_311_6e-7,
    ];
    if x < 0.5 {
        // Reflection keeps the series in its accurate range.
        let pi = std::f64::consts::PI;
        return (pi / (pi * x).sin()).ln() - ln_gamma(1.0 - x);
    }
    let x = x - 1.0;
    let mut a = G[0];
    let t = x + 7.5;
    for (i, g) in G.iter().enumerate().skip(1) {
        a += g / (x + i as f64);
    }
    0.5 * (2.0 * std::f64::consts::PI).ln() + (x + 0.5) * t.ln() - t + a.ln()
}

/// E-divisive on `series[start..end]`: repeatedly split the segment whose
/// best split has the largest energy statistic q̂, while the split's t-test
/// p-value is at most `max_p`. Returns absolute indexes, sorted.
fn divisive(series: &[f64], sums: &Sums, start: usize, end: usize, max_p: f64) -> Vec<usize> {
    let w = &series[start..end];
    let m = w.len();
    // Column prefix sums of the distance matrix: col[j][i] = Σ_{k<i} |w_k - w_j|.
    let mut col = vec![0.0; m * (m + 1)];
    for j in 0..m {
        let row = &mut col[j * (m + 1)..(j + 1) * (m + 1)];
        for i in 0..m {
            row[i + 1] = row[i] + (w[i] - w[j]).abs();
        }
    }
    let colsum = |j: usize, lo: usize, hi: usize| col[j * (m + 1) + hi] - col[j * (m + 1) + lo];
    let mut cps: Vec<usize> = Vec::new();
    loop {
        let mut bounds = vec![0];
        bounds.extend(cps.iter().copied());
        bounds.push(m);
        let mut best: Option<(f64, usize, usize, usize)> = None;
        for seg in bounds.windows(2) {
            let (lo, hi) = (seg[0], seg[1]);
            if hi - lo < 2 {
                continue;
            }
            if let Some((q, tau)) = best_split(lo, hi, &colsum)
                && best.is_none_or(|b| q > b.0)
            {
                best = Some((q, tau, lo, hi));
            }
        }
        let Some((_, tau, lo, hi)) = best else { break };
        let cp = sums.test(start + lo, start + tau, start + hi);
        if cp.p <= max_p {
            cps.push(tau);
            cps.sort_unstable();
        } else {
            break;
        }
    }
    cps.into_iter().map(|i| i + start).collect()
}

/// The split `tau` of `[lo, hi)` maximising q̂ over every right end κ:
/// `Q(τ, κ) = 2/(n+k)·ΣΣ|x−y| − 2k/((n+k)(n−1))·Σ|x−x'| − 2n/((n+k)(k−1))·Σ|y−y'|`
/// with X = `[lo, τ)` (n points) and Y = `[τ, κ)` (k points). O((hi−lo)²).
fn best_split(
    lo: usize,
    hi: usize,
    colsum: &impl Fn(usize, usize, usize) -> f64,
) -> Option<(f64, usize)> {
    let mut best: Option<(f64, usize)> = None;
    // within_x = Σ_{lo≤i<k<τ} |w_i − w_k|, grown with τ.
    let mut within_x = 0.0;
    for tau in lo + 1..hi {
        within_x += colsum(tau - 1, lo, tau - 1);
        let n = (tau - lo) as f64;
        let (mut between, mut within_y) = (0.0, 0.0);
        for kappa in tau + 1..=hi {
            let j = kappa - 1;
            between += colsum(j, lo, tau);
            within_y += colsum(j, tau, j);
            let k = (kappa - tau) as f64;
            let a = 2.0 / (n + k) * between;
            let b = if n > 1.0 {
                2.0 * k / ((n + k) * (n - 1.0)) * within_x
            } else {
                0.0
            };
            let c = if k > 1.0 {
                2.0 * n / ((n + k) * (k - 1.0)) * within_y
            } else {
                0.0
            };
            let q = a - b - c;
            if best.is_none_or(|(bq, _)| q > bq) {
                best = Some((q, tau));
            }
        }
    }
    best
}

/// Otava's merge: while some change point fails the p-value or the
/// magnitude floor, drop the weakest (largest p first, then smallest
/// magnitude) and re-test the rest against their new neighbours.
fn merge(sums: &Sums, mut idx: Vec<usize>, opts: &ChangeOptions) -> Vec<ChangePoint> {
    let n = sums.s1.len() - 1;
    let test_all = |idx: &[usize]| -> Vec<ChangePoint> {
        (0..idx.len())
            .map(|i| {
                let lo = if i == 0 { 0 } else { idx[i - 1] };
                let hi = if i + 1 == idx.len() { n } else { idx[i + 1] };
                sums.test(lo, idx[i], hi)
            })
            .collect()
    };
    loop {
        let cps = test_all(&idx);
        if cps.is_empty() {
            return cps;
        }
        // The first of equals, as Python's max/min pick.
        let mut weakest = 0;
        for (i, c) in cps.iter().enumerate() {
            if c.p > cps[weakest].p {
                weakest = i;
            }
        }
        if cps[weakest].p < opts.max_p {
            weakest = 0;
            for (i, c) in cps.iter().enumerate() {
                if c.magnitude() < cps[weakest].magnitude() {
                    weakest = i;
                }
            }
            if cps[weakest].magnitude() > opts.min_magnitude {
                return cps;
            }
        }
        idx.remove(weakest);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Rng;

    fn indexes(series: &[f64], opts: ChangeOptions) -> Vec<usize> {
        change_points(series, &opts)
            .into_iter()
            .map(|c| c.index)
            .collect()
    }

    #[test]
    fn t_p_values_match_scipy() {
        // scipy.stats: 2 * t.sf(t, df).
        for (t, df, want) in [
            (2.0, 10.0, 0.073_388_034_770_740_37),
            (5.0, 3.0, 0.015_392_438_073_302_294),
            (0.5, 1.0, 0.704_832_764_699_133_5),
            (10.0, 30.0, 4.575_251_408_229_618e-11),
            (1.0, 2.0, 0.422_649_730_810_374_2),
            (3.3, 100.0, 0.001_340_619_521_960_094_2),
            (40.0, 18.0, 4.865_261_692_304_997e-19),
        ] {
            let got = t_two_sided_p(t, df);
            assert!(
                (got - want).abs() <= 1e-9 * want,
                "t={t} df={df}: {got} vs {want}"
            );
        }
        // scipy.stats.ttest_ind_from_stats(1.0, 0.02, 10, 0.8, 0.03, 5).
        let (p, _) = student(1.0, 0.02, 10, 0.8, 0.03, 5);
        assert!((p - 9.090_525_377_776_818e-10).abs() < 1e-15, "{p}");
    }

    /// Otava's tests/analysis_test.py `test_single_series`.
    #[test]
    fn otava_single_series() {
        let s = [
            1.02, 0.95, 0.99, 1.00, 1.12, 1.00, 1.01, 0.98, 1.01, 0.96, 0.50, 0.51, 0.48, 0.48,
            0.55, 0.50, 0.49, 0.51, 0.50, 0.49,
        ];
        let opts = ChangeOptions {
            window: 10,
            max_p: 0.0001,
            min_magnitude: 0.0,
        };
        assert_eq!(indexes(&s, opts), [10]);
        // Otava's p for it: 1.427e-17.
        let cp = &change_points(&s, &opts)[0];
        assert!(cp.p < 1e-16 && cp.p > 1e-18, "{}", cp.p);
    }

    /// Otava's tests/change_point_divisive_test.py sequence: changes at 5 and 8.
    #[test]
    fn otava_divisive_sequence() {
        let s = [
            0.3, 2.4, 1.5, -0.9, -0.5, 99.7, 98.3, 99.1, 149.0, 149.7, 149.5, 149.1, 148.8, 150.0,
        ];
        for max_p in [0.01, 0.001] {
            let opts = ChangeOptions {
                max_p,
                ..ChangeOptions::default()
            };
            assert_eq!(indexes(&s, opts), [5, 8]);
        }
        // The detector alone on the whole series (Otava's test_ttest).
        let sums = Sums::new(&s);
        assert_eq!(divisive(&s, &sums, 0, s.len(), 0.01), [5, 8]);
    }

    /// Otava's examples/csv/data/local_sample.csv: −12.9 % at the 7th
    /// point of metric2, nothing in metric1.
    #[test]
    fn otava_csv_example() {
        let m1 = [
            154023.0, 138455.0, 143112.0, 149190.0, 132098.0, 151344.0, 155145.0, 148889.0,
            149466.0, 148209.0,
        ];
        let m2 = [
            10.43, 10.23, 10.29, 10.91, 10.34, 10.69, 9.23, 9.11, 9.13, 9.03,
        ];
        let opts = ChangeOptions::default();
        assert!(indexes(&m1, opts).is_empty());
        let cps = change_points(&m2, &opts);
        assert_eq!(cps.len(), 1);
        assert_eq!(cps[0].index, 6);
        assert!((cps[0].change * 100.0 - -12.943_234_218_476_707).abs() < 1e-9);
        assert!((cps[0].p - 4.985_262_183_171_655e-6).abs() < 1e-12);
        assert!(cps[0].ci.0 < cps[0].change && cps[0].change < cps[0].ci.1 && cps[0].ci.1 < 0.0);
    }

    #[test]
    fn brute_force_q_agrees_with_the_prefix_sums() {
        let mut rng = Rng::new(7);
        let w: Vec<f64> = (0..17)
            .map(|i| rng.next_normal() + if i > 9 { 3.0 } else { 0.0 })
            .collect();
        let m = w.len();
        let d = |i: usize, j: usize| (w[i] - w[j]).abs();
        let mut best = (f64::NEG_INFINITY, 0);
        for tau in 1..m {
            for kappa in tau + 1..=m {
                let (n, k) = ((tau) as f64, (kappa - tau) as f64);
                let mut a = 0.0;
                for i in 0..tau {
                    for j in tau..kappa {
                        a += d(i, j);
                    }
                }
                let mut b = 0.0;
                for i in 0..tau {
                    for j in i + 1..tau {
                        b += d(i, j);
                    }
                }
                let mut c = 0.0;
                for i in tau..kappa {
                    for j in i + 1..kappa {
                        c += d(i, j);
                    }
                }
                let q = 2.0 / (n + k) * a
                    - if n > 1.0 {
                        2.0 * k / ((n + k) * (n - 1.0)) * b
                    } else {
                        0.0
                    }
                    - if k > 1.0 {
                        2.0 * n / ((n + k) * (k - 1.0)) * c
                    } else {
                        0.0
                    };
                if q > best.0 {
                    best = (q, tau);
                }
            }
        }
        let mut col = vec![0.0; m * (m + 1)];
        for j in 0..m {
            for i in 0..m {
                col[j * (m + 1) + i + 1] = col[j * (m + 1) + i] + d(i, j);
            }
        }
        let colsum = |j: usize, lo: usize, hi: usize| col[j * (m + 1) + hi] - col[j * (m + 1) + lo];
        let (q, tau) = best_split(0, m, &colsum).unwrap();
        assert_eq!(tau, best.1);
        assert!((q - best.0).abs() < 1e-9 * best.0.abs());
    }

    #[test]
    fn seeded_steps_of_3_to_8_percent_under_1_percent_noise_are_found_within_2_points() {
        for (seed, step) in [
            (1, 0.03),
            (2, 0.04),
            (3, 0.05),
            (4, 0.06),
            (5, 0.08),
            (6, -0.03),
        ] {
            let mut rng = Rng::new(seed);
            let at = 40 + (seed as usize * 7) % 30;
            let s: Vec<f64> = (0..120)
                .map(|i| {
                    let level = if i >= at { 1.0 + step } else { 1.0 };
                    level * (1.0 + 0.01 * rng.next_normal())
                })
                .collect();
            let opts = ChangeOptions {
                min_magnitude: noise_floor(relative_noise(&s).unwrap()),
                ..ChangeOptions::default()
            };
            let cps = change_points(&s, &opts);
            assert_eq!(cps.len(), 1, "seed {seed} step {step}: {cps:?}");
            assert!(
                cps[0].index.abs_diff(at) <= 2,
                "seed {seed}: {} vs {at}",
                cps[0].index
            );
            assert!((cps[0].change - step).abs() < 0.01, "{cps:?}");
        }
    }

    #[test]
    fn three_hundred_points_of_2_percent_noise_have_no_change_point() {
        for seed in 1..=20 {
            let mut rng = Rng::new(100 + seed);
            let s: Vec<f64> = (0..300).map(|_| 1.0 + 0.02 * rng.next_normal()).collect();
            let noise = relative_noise(&s).unwrap();
            assert!((noise - 0.02).abs() < 0.004, "{noise}");
            let opts = ChangeOptions {
                min_magnitude: noise_floor(noise),
                ..ChangeOptions::default()
            };
            let cps = change_points(&s, &opts);
            assert!(cps.is_empty(), "seed {seed}: {cps:?}");
        }
    }

    #[test]
    fn short_constant_and_non_finite_series_have_none() {
        let opts = ChangeOptions::default();
        assert!(indexes(&[1.0, 2.0, 3.0], opts).is_empty());
        assert!(indexes(&[5.0; 40], opts).is_empty());
        assert!(indexes(&[1.0, f64::NAN, 1.0, 1.0, 1.0], opts).is_empty());
        // A clean step between constants is certain.
        let s: Vec<f64> = (0..20).map(|i| if i < 10 { 1.0 } else { 2.0 }).collect();
        assert_eq!(indexes(&s, opts), [10]);
    }
}
