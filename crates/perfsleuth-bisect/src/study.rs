//! The search driven by simulated measurements, for the study of
//! docs/BISECT.md: how often it names the right commits, how often it names
//! one where nothing changed, and how many runs it spends, beside a
//! Pinpoint-like ladder measured on the same simulated machine.
//!
//! A run's time is its commit's level times the machine's state: a slow
//! drift (an AR(1) walk of the log speed), episodes of lost speed (steal:
//! a few percent for a few dozen runs), and per-run noise with a heavy tail.
//! [`NoiseShape::measured`] holds the shape measured on the study's VM.
//! Each probe is judged as `ab` judges: the commits measured interleaved,
//! round after round, each pair of commits on its adjacent runs
//! ([`perfsleuth_stats::estimate_pairs`]), with looks at the planned rounds
//! and every growth by half, at α/2, α/4, … ([`perfsleuth_stats::look_alpha`]).

use crate::{Call, PairVerdict, Probe, Search};
use perfsleuth_stats::{Rng, Verdict, VerdictRule, estimate_pairs, look_alpha, look_rounds};

/// How a simulated machine's run times vary.
#[derive(Debug, Clone, Copy)]
pub struct NoiseShape {
    /// Per-run noise, standard deviation of the log time.
    pub sigma: f64,
    /// Share of runs whose noise is `tail`× wider.
    pub tail_share: f64,
    /// How much wider the tail runs' noise is.
    pub tail: f64,
    /// Drift: the standard deviation of the log speed's step per run.
    pub drift: f64,
    /// Drift: how much of the last run's offset the next keeps (AR(1)).
    pub keep: f64,
    /// Chance per run that an episode of lost speed starts.
    pub episode_rate: f64,
    /// Lost speed during an episode (0.05 = 5 % slower).
    pub episode_loss: f64,
    /// Mean length of an episode, in runs.
    pub episode_runs: f64,
}

impl NoiseShape {
    /// The CPU time of a ~34 ms CPU-bound program measured on the study's
    /// VM by bench/bisect/noise_shape.py (docs/BISECT.md, "Noise"): 1 500
    /// runs, no steal during them, so no episode either.
    pub fn measured() -> NoiseShape {
        NoiseShape {
            sigma: 0.0065,
            tail_share: 0.105,
            tail: 3.8,
            drift: 0.0017,
            keep: 0.976,
            episode_rate: 0.0,
            episode_loss: 0.0,
            episode_runs: 1.0,
        }
    }

    /// The noisiest session of ../NOISE.md scaled onto the measured shape:
    /// per-run noise and drift four times as large (its per-pair spread was
    /// 4–5 % against this VM's 0.9 %), and episodes of 5 % lost speed for
    /// about 30 runs starting once in 500 runs (steal of 11–41 %).
    pub fn noisy() -> NoiseShape {
        let m = NoiseShape::measured();
        NoiseShape {
            sigma: 4.0 * m.sigma,
            drift: 4.0 * m.drift,
            episode_rate: 0.002,
            episode_loss: 0.05,
            episode_runs: 30.0,
            ..m
        }
    }
}

/// A simulated machine: its state moves on with every run.
pub struct Machine {
    shape: NoiseShape,
    rng: Rng,
    offset: f64,
    episode_left: f64,
}

impl Machine {
    /// A machine of `shape`, its noise drawn from `seed`.
    pub fn new(shape: NoiseShape, seed: u64) -> Machine {
        Machine {
            shape,
            rng: Rng::new(seed),
            offset: 0.0,
            episode_left: 0.0,
        }
    }

    /// One run of a program whose log time is `level`: its time.
    pub fn run(&mut self, level: f64) -> f64 {
        let s = self.shape;
        self.offset = s.keep * self.offset + s.drift * self.rng.next_normal();
        if self.episode_left > 0.0 {
            self.episode_left -= 1.0;
        } else if self.rng.next_f64() < s.episode_rate {
            // Geometric length with the given mean.
            let u = self.rng.next_f64().max(1e-12);
            self.episode_left = (-u.ln() * s.episode_runs).ceil();
        }
        let episode = if self.episode_left > 0.0 {
            (1.0 + s.episode_loss).ln()
        } else {
            0.0
        };
        let wide = if self.rng.next_f64() < s.tail_share {
            s.tail
        } else {
            1.0
        };
        (level + self.offset + episode + s.sigma * wide * self.rng.next_normal()).exp()
    }
}

/// How each probe is measured and judged.
#[derive(Debug, Clone, Copy)]
pub struct Budget {
    /// Rounds planned (one run of every commit of the probe per round).
    pub rounds: u32,
    /// Looks after the planned one: each grows the rounds by half.
    pub extra_looks: u32,
    /// The rule (ab's paired rule unless a study changes it).
    pub rule: VerdictRule,
}

impl Budget {
    /// `ab`'s for the study's ~34 ms program: its 3 s time budget per side
    /// is 88 runs, and `--max-time` 60 s reaches 5 looks more (669 pairs);
    /// flagged beyond ±0.2 %, no change within ±1 %.
    pub fn ab() -> Budget {
        Budget {
            rounds: 88,
            extra_looks: 5,
            rule: VerdictRule {
                no_change_within: 0.01,
                ..VerdictRule::IN_RUN
            },
        }
    }
}

/// Measures `probe` on `machine` as `ab` would and judges each adjacent
/// pair; returns the verdicts and the runs spent.
pub fn measure_probe(
    machine: &mut Machine,
    levels: &[f64],
    probe: &Probe,
    budget: &Budget,
) -> (Vec<PairVerdict>, u64) {
    let k = probe.commits.len();
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); k];
    let mut runs = 0u64;
    let mut verdicts = Vec::new();
    for look in 0..=budget.extra_looks {
        let target = look_rounds(budget.rounds, look) as usize;
        while times[0].len() < target {
            let round = times[0].len();
            // Each round starts with the next commit, as ab's rounds do.
            for j in 0..k {
                let side = (round + j) % k;
                let t = machine.run(levels[probe.commits[side]]);
                times[side].push(t);
                runs += 1;
            }
        }
        let alpha = look_alpha(budget.rule.alpha, look);
        verdicts = (0..k - 1)
            .map(|j| judge(&times[j], &times[j + 1], alpha, &budget.rule))
            .collect();
        if verdicts.iter().all(|v| v.call != Call::Undecided) {
            break;
        }
    }
    (verdicts, runs)
}

/// One pair of commits judged on its rounds' pairs of runs.
fn judge(older: &[f64], newer: &[f64], alpha: f64, rule: &VerdictRule) -> PairVerdict {
    let pairs: Vec<(f64, f64)> = older.iter().copied().zip(newer.iter().copied()).collect();
    let undecided = PairVerdict {
        call: Call::Undecided,
        change: 0.0,
        lo: f64::NEG_INFINITY,
        hi: f64::INFINITY,
    };
    let Some(e) = estimate_pairs(&pairs, 1.0 - alpha) else {
        return undecided;
    };
    let (Some(change), Some(p)) = (e.estimate.change, e.estimate.p_value) else {
        return undecided;
    };
    let rule = VerdictRule { alpha, ..*rule };
    let call = match perfsleuth_stats::verdict(
        &rule,
        &change,
        p,
        pairs.len(),
        pairs.len(),
        perfsleuth_stats::Direction::LowerIsBetter,
    ) {
        Verdict::Regressed | Verdict::Improved => Call::Changed,
        Verdict::NoChange => Call::Same,
        Verdict::Inconclusive | Verdict::InsufficientData => Call::Undecided,
    };
    PairVerdict {
        call,
        change: change.change,
        lo: change.ci.lo,
        hi: change.ci.hi,
    }
}

/// What one simulated bisection found and spent.
#[derive(Debug, Clone)]
pub struct Trial {
    /// The verified culprits' commits.
    pub named: Vec<usize>,
    /// Runs measured in all.
    pub runs: u64,
    /// Probes measured.
    pub probes: usize,
}

/// Bisects commits `0..=n` whose own changes are `effects` (commit → its
/// change) on a machine of `shape`.
pub fn bisect(
    n: usize,
    effects: &[(usize, f64)],
    shape: NoiseShape,
    budget: &Budget,
    seed: u64,
) -> Trial {
    let levels = levels(n, effects);
    let mut machine = Machine::new(shape, seed);
    let mut search = Search::new(n, 4 * Search::expected_probes(n) + 8);
    let mut runs = 0;
    while let Some(probe) = search.next_probe() {
        let (v, spent) = measure_probe(&mut machine, &levels, &probe, budget);
        runs += spent;
        search.record(&probe, &v);
    }
    Trial {
        named: search.verified().iter().map(|c| c.commit).collect(),
        runs,
        probes: search.probes(),
    }
}

/// The log level of every commit: the sum of the changes up to it.
fn levels(n: usize, effects: &[(usize, f64)]) -> Vec<f64> {
    let mut level = 0.0;
    (0..=n)
        .map(|c| {
            level += effects
                .iter()
                .filter(|(e, _)| *e == c)
                .map(|(_, x)| (1.0 + x).ln())
                .sum::<f64>();
            level
        })
        .collect()
}

/// A Pinpoint-like ladder on the same machine, for the runs it spends: the
/// two commits of a comparison measured alternately (as Pinpoint schedules
/// a pair's attempts together) 10, then 20, 40, 80, 160 times each while
/// undecided, judged unpaired on the pooled samples as Pinpoint judges
/// them; DIFFERENT when the Mann-Whitney p is below 0.01, SAME above 0.5 (a
/// simplification of its size-dependent thresholds), else measured
/// further. A commit's samples are kept and reused by later comparisons, as
/// Pinpoint reuses a change's attempts. A binary search over the range,
/// the culprit the commit after the last SAME.
pub fn pinpoint_like(n: usize, effects: &[(usize, f64)], shape: NoiseShape, seed: u64) -> Trial {
    let levels = levels(n, effects);
    let mut machine = Machine::new(shape, seed);
    let mut samples: Vec<Vec<f64>> = vec![Vec::new(); n + 1];
    let mut runs = 0u64;
    let mut differs = |a: usize, b: usize| -> Option<bool> {
        for count in [10, 20, 40, 80, 160] {
            while samples[a].len() < count || samples[b].len() < count {
                for c in [a, b] {
                    if samples[c].len() < count {
                        samples[c].push(machine.run(levels[c]));
                        runs += 1;
                    }
                }
            }
            let p = perfsleuth_stats::mann_whitney_u(&samples[a], &samples[b])
                .map_or(1.0, |m| m.p_value);
            if p < 0.01 {
                return Some(true);
            }
            if p > 0.5 {
                return Some(false);
            }
        }
        None
    };
    let (mut lo, mut hi) = (0, n);
    let mut probes = 1;
    let mut named = Vec::new();
    if differs(lo, hi) == Some(true) {
        while hi > lo + 1 {
            let mid = lo + (hi - lo) / 2;
            probes += 1;
            match differs(lo, mid) {
                Some(true) => hi = mid,
                Some(false) => lo = mid,
                None => break,
            }
        }
        if hi == lo + 1 {
            named.push(hi);
        }
    }
    Trial {
        named,
        runs,
        probes,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_simulated_two_percent_culprit_is_found_and_unchanged_ends_name_none() {
        // A small, seeded version of the study: the numbers are the
        // simulation's, the same on every machine.
        let budget = Budget::ab();
        let shape = NoiseShape::measured();
        let mut right = 0;
        let mut false_named = 0;
        for seed in 0..20 {
            let culprit = 1 + (seed as usize * 37) % 63;
            let t = bisect(64, &[(culprit, 0.02)], shape, &budget, seed);
            right += usize::from(t.named == vec![culprit]);
            let t = bisect(64, &[], shape, &budget, 1000 + seed);
            false_named += usize::from(!t.named.is_empty());
        }
        assert!(right >= 18, "{right} of 20 right");
        assert!(false_named <= 1, "{false_named} of 20 named a culprit");
    }

    #[test]
    fn the_machine_keeps_a_commit_level_within_its_noise() {
        let mut m = Machine::new(NoiseShape::measured(), 7);
        let times: Vec<f64> = (0..2000).map(|_| m.run(0.0)).collect();
        let median = perfsleuth_stats::median(&times).unwrap();
        assert!((median - 1.0).abs() < 0.05, "{median}");
    }
}
