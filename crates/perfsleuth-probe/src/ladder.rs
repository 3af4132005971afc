//! Plateau and step detection on a memory-latency ladder (pure; no timing).
//!
//! A ladder is latency per access against working-set size, sizes ascending
//! by a constant factor (√2 or 2). In theory latency never falls as the size
//! grows, so a point above a later point is noise (an interrupt, a preempted
//! vCPU): the analysis first replaces each latency by the minimum of it and
//! every later one (a suffix minimum), which removes upward spikes and keeps
//! real rises.
//!
//! Then, in log-latency, each rise between neighbours larger than a *small*
//! threshold starts or extends a rising region; a region whose total rise is
//! at least [`STEP_RISE`] is a step. The step's size is the last size before
//! the steepest rise inside the region: the largest working set that still
//! fitted. Points inside a region (neither plateau) are transitional; the
//! points between steps are plateaus, whose level is the median latency of
//! their points.

/// One point of the ladder.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LadderPoint {
    /// Working-set size in bytes.
    pub size: u64,
    /// Latency per dependent load in ns (median of its samples).
    pub ns: f64,
    /// Relative spread of this point's samples.
    pub spread: f64,
}

/// A stretch of sizes with about the same latency.
#[derive(Debug, Clone, PartialEq)]
pub struct Plateau {
    /// Index of the first point.
    pub first: usize,
    /// Index of the last point.
    pub last: usize,
    /// Median latency of the points, ns.
    pub level_ns: f64,
    /// Median of the points' own spreads.
    pub spread: f64,
}

/// Where latency steps up.
#[derive(Debug, Clone, PartialEq)]
pub struct Step {
    /// The last ladder size whose latency is below half-way between the
    /// two plateaus: the capacity estimate.
    pub size: u64,
    /// The ladder size after `size`.
    pub next_size: u64,
    /// The size (interpolated in log-size) at which latency is half-way,
    /// geometrically, between the plateaus before and after the step.
    pub crossing: f64,
    /// Total rise over the step's region, as a factor (e.g. 3.1 for ×3.1).
    pub rise: f64,
}

/// Plateaus and steps of a ladder; `plateaus.len() == steps.len() + 1`
/// unless the ladder is empty.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct LadderAnalysis {
    /// Plateaus, ascending by size.
    pub plateaus: Vec<Plateau>,
    /// Steps, ascending; step `k` lies between plateau `k` and `k + 1`.
    pub steps: Vec<Step>,
}

/// Smallest total rise (as a factor) that counts as a step.
pub const STEP_RISE: f64 = 1.5;

/// The rise between neighbours (per octave of size) above which a pair is
/// part of a rising region rather than a plateau's slow creep.
const CREEP_PER_OCTAVE: f64 = 1.20;

/// Analyses a ladder (points ascending by size, at least one).
pub fn analyze(points: &[LadderPoint]) -> LadderAnalysis {
    let n = points.len();
    if n == 0 {
        return LadderAnalysis::default();
    }
    // Suffix minimum in log space.
    let mut y: Vec<f64> = points.iter().map(|p| p.ns.max(1e-6).ln()).collect();
    for i in (0..n.saturating_sub(1)).rev() {
        y[i] = y[i].min(y[i + 1]);
    }
    // Jumps and the small threshold scaled to the ladder's step factor.
    let jumps: Vec<f64> = (0..n.saturating_sub(1)).map(|i| y[i + 1] - y[i]).collect();
    let small = |i: usize| {
        let octaves = (points[i + 1].size as f64 / points[i].size as f64)
            .log2()
            .max(0.1);
        CREEP_PER_OCTAVE.ln() * octaves
    };
    // Rising regions [a, b] of jump indices.
    let mut regions: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < jumps.len() {
        if jumps[i] > small(i) {
            let a = i;
            while i + 1 < jumps.len() && jumps[i + 1] > small(i + 1) {
                i += 1;
            }
            let total: f64 = jumps[a..=i].iter().sum();
            if total >= STEP_RISE.ln() {
                regions.push((a, i));
            }
        }
        i += 1;
    }
    let mut out = LadderAnalysis::default();
    let mut start = 0;
    for &(a, b) in &regions {
        out.plateaus.push(plateau(points, start, a));
        start = b + 1;
    }
    out.plateaus.push(plateau(points, start, n - 1));
    let logsize = |i: usize| (points[i].size as f64).ln();
    for (k, &(a, b)) in regions.iter().enumerate() {
        // Half-way (geometrically) between the two plateaus' levels.
        let mid = (out.plateaus[k].level_ns.ln() + out.plateaus[k + 1].level_ns.ln()) / 2.0;
        let i = (a..=b).find(|&i| y[i + 1] >= mid).unwrap_or(b);
        let frac = if y[i + 1] > y[i] {
            ((mid - y[i]) / (y[i + 1] - y[i])).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let crossing = (logsize(i) + frac * (logsize(i + 1) - logsize(i))).exp();
        // The last ladder size still below half-way: the largest working set
        // that (mostly) fits.
        let at = i;
        out.steps.push(Step {
            size: points[at].size,
            next_size: points[(at + 1).min(n - 1)].size,
            crossing,
            rise: jumps[a..=b].iter().sum::<f64>().exp(),
        });
    }
    out
}

fn plateau(points: &[LadderPoint], first: usize, last: usize) -> Plateau {
    let med = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        perfsleuth_stats::percentile(&v, 50.0).unwrap_or(f64::NAN)
    };
    let pts = &points[first..=last];
    Plateau {
        first,
        last,
        level_ns: med(pts.iter().map(|p| p.ns).collect()),
        spread: med(pts.iter().map(|p| p.spread).collect()),
    }
}

/// Sizes from `min` to at least `max`, each `factor` times the previous,
/// rounded to whole cache lines (64 bytes); ascending and distinct.
pub fn sizes(min: u64, max: u64, factor: f64) -> Vec<u64> {
    let mut out = Vec::new();
    let mut k = 0i32;
    loop {
        let s = (min as f64 * factor.powi(k)).round() as u64;
        let s = (s / 64).max(1) * 64;
        if out.last() != Some(&s) {
            out.push(s);
        }
        if s >= max {
            return out;
        }
        k += 1;
    }
}

/// Distance between two sizes in ladder steps of `factor` (log ratio).
pub fn steps_apart(a: u64, b: u64, factor: f64) -> f64 {
    ((a as f64 / b as f64).ln() / factor.ln()).abs()
}

#[cfg(test)]
mod tests {
    use super::*;

    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * 1024;

    /// A synthetic ladder: caches (size, latency) then memory latency,
    /// with a miss mix for sizes between caches (random replacement model).
    fn synthetic(factor: f64, caches: &[(u64, f64)], dram: f64, max: u64) -> Vec<LadderPoint> {
        sizes(4 * KIB, max, factor)
            .into_iter()
            .map(|s| {
                let mut ns = dram;
                // Walk down: the fraction that fits in each level.
                for &(cap, lat) in caches.iter().rev() {
                    if s <= cap {
                        ns = lat;
                    } else {
                        let hit = (cap as f64 / s as f64).powi(3);
                        ns = hit * lat + (1.0 - hit) * ns;
                        break;
                    }
                }
                LadderPoint {
                    size: s,
                    ns,
                    spread: 0.01,
                }
            })
            .collect()
    }

    fn zen4() -> [(u64, f64); 3] {
        [(32 * KIB, 0.9), (MIB, 3.4), (32 * MIB, 11.0)]
    }

    #[test]
    fn finds_three_steps_on_a_clean_sqrt2_ladder() {
        let pts = synthetic(2f64.sqrt(), &zen4(), 95.0, 256 * MIB);
        let a = analyze(&pts);
        let steps: Vec<u64> = a.steps.iter().map(|s| s.size).collect();
        assert_eq!(steps, vec![32 * KIB, MIB, 32 * MIB], "{a:#?}");
        assert_eq!(a.plateaus.len(), 4);
        assert!((a.plateaus[0].level_ns - 0.9).abs() < 1e-9);
        assert!((a.plateaus[1].level_ns - 3.4).abs() < 0.2);
        assert!((a.plateaus[2].level_ns - 11.0).abs() < 1.0);
        assert!(a.plateaus[3].level_ns > 60.0);
    }

    #[test]
    fn finds_steps_on_a_factor_two_ladder() {
        let pts = synthetic(2.0, &zen4(), 95.0, 128 * MIB);
        let a = analyze(&pts);
        let steps: Vec<u64> = a.steps.iter().map(|s| s.size).collect();
        assert_eq!(steps, vec![32 * KIB, MIB, 32 * MIB], "{a:#?}");
    }

    #[test]
    fn ignores_upward_spikes_and_slow_creep() {
        let mut pts = synthetic(2f64.sqrt(), &zen4(), 95.0, 256 * MIB);
        // A preempted sample inside the L2 plateau, another inside L3.
        let i = pts.iter().position(|p| p.size >= 256 * KIB).unwrap();
        pts[i].ns *= 2.5;
        let j = pts.iter().position(|p| p.size >= 8 * MIB).unwrap();
        pts[j].ns *= 4.0;
        // TLB-like creep of 8 % per point across the L3 plateau.
        for p in pts.iter_mut() {
            if p.size > 2 * MIB && p.size <= 32 * MIB {
                p.ns *= 1.0 + 0.08 * (p.size as f64 / (2 * MIB) as f64).log2() * 2.0;
            }
        }
        let a = analyze(&pts);
        let steps: Vec<u64> = a.steps.iter().map(|s| s.size).collect();
        assert_eq!(steps, vec![32 * KIB, MIB, 32 * MIB], "{a:#?}");
    }

    #[test]
    fn a_flat_ladder_has_one_plateau_and_no_step() {
        let pts: Vec<LadderPoint> = sizes(4 * KIB, MIB, 2.0)
            .into_iter()
            .map(|s| LadderPoint {
                size: s,
                ns: 1.0 + (s % 7) as f64 * 0.01,
                spread: 0.0,
            })
            .collect();
        let a = analyze(&pts);
        assert!(a.steps.is_empty());
        assert_eq!(a.plateaus.len(), 1);
        assert_eq!(
            (a.plateaus[0].first, a.plateaus[0].last),
            (0, pts.len() - 1)
        );
        assert_eq!(analyze(&[]), LadderAnalysis::default());
        let one = analyze(&pts[..1]);
        assert_eq!(one.plateaus.len(), 1);
    }

    #[test]
    fn a_gradual_ramp_is_one_step_placed_below_half_way() {
        // 1 ns up to 64 KiB, then ×1.4, ×2.5, ×1.3 and flat at 4.55 ns.
        let lat = [1.0, 1.0, 1.0, 1.0, 1.0, 1.4, 3.5, 4.55, 4.55, 4.55];
        let pts: Vec<LadderPoint> = sizes(4 * KIB, 2 * MIB, 2.0)
            .into_iter()
            .zip(lat)
            .map(|(size, ns)| LadderPoint {
                size,
                ns,
                spread: 0.0,
            })
            .collect();
        let a = analyze(&pts);
        assert_eq!(a.steps.len(), 1, "{a:#?}");
        assert_eq!(a.steps[0].size, 128 * KIB);
        assert_eq!(a.steps[0].next_size, 256 * KIB);
        assert!((a.steps[0].rise - 4.55).abs() < 1e-9);
        assert_eq!(a.plateaus[0].last, 4);
        assert_eq!(a.plateaus[1].first, 7);
    }

    #[test]
    fn sizes_are_lines_and_reach_the_max() {
        let s = sizes(4096, 128 * MIB, 2f64.sqrt());
        assert_eq!(s[0], 4096);
        assert_eq!(s[2], 8192);
        assert!(s.iter().all(|x| x % 64 == 0));
        assert!(*s.last().unwrap() >= 128 * MIB);
        assert!(s.windows(2).all(|w| w[0] < w[1]));
        assert_eq!(steps_apart(32 * KIB, 64 * KIB, 2.0), 1.0);
        assert!((steps_apart(32 * KIB, 64 * KIB, 2f64.sqrt()) - 2.0).abs() < 1e-12);
    }
}
