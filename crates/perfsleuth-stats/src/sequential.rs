//! Comparisons that may be extended: `ab` and `run --baseline` judge their
//! planned rounds, and while the answer is inconclusive they measure more
//! and judge again. Every such look may end in a verdict, so every look is
//! a chance of a false alarm: judged at α each, an A/A pair flagged 6.7 % of
//! the time where one look flags under 1 % (docs/STATISTICS.md §8.7).
//!
//! The looks spend the error rate in halves — α/2 at the planned look, α/4
//! at the next, α/8 … — so whatever the correlation between looks (they
//! share most of their pairs) their false alarms add up to at most α
//! (Bonferroni over the looks). Halving would starve the later looks if
//! every round were a look, so they are made on a geometric grid: each has
//! at least [`LOOK_GROWTH`] times the rounds of the one before, and the
//! interval narrows between looks faster than the level widens it.

/// The least growth of the rounds from one look to the next.
pub const LOOK_GROWTH: f64 = 1.5;

/// The significance level of look `look` (0: the planned rounds) of a
/// comparison that may be extended: alpha / 2^(look + 1). Their sum over
/// every look stays below `alpha`.
pub fn look_alpha(alpha: f64, look: u32) -> f64 {
    alpha / 2f64.powi(look.min(1000) as i32 + 1)
}

/// The rounds at which look `look` is made when `planned` rounds were
/// planned: planned · 1.5^look rounded up, and always at least one round
/// after the look before it.
pub fn look_rounds(planned: u32, look: u32) -> u32 {
    let planned = planned.max(1);
    let mut rounds = planned;
    for _ in 0..look {
        let grown = (f64::from(rounds) * LOOK_GROWTH).ceil();
        rounds = if grown >= f64::from(u32::MAX) {
            u32::MAX
        } else {
            (grown as u32).max(rounds.saturating_add(1))
        };
    }
    rounds
}

/// The look a comparison stopped at, from the rounds `planned` and the
/// rounds `measured`: the first look with at least that many rounds (it
/// stops only at a look, so that is the one).
pub fn look_for_rounds(planned: u32, measured: u32) -> u32 {
    let mut look = 0;
    // 60 looks exceed u32 rounds from any start: the loop always ends.
    while look < 60 && look_rounds(planned, look) < measured {
        look += 1;
    }
    look
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn looks_spend_at_most_alpha_in_all() {
        assert_eq!(look_alpha(0.05, 0), 0.025);
        assert_eq!(look_alpha(0.05, 1), 0.0125);
        let total: f64 = (0..200).map(|k| look_alpha(0.05, k)).sum();
        assert!(total <= 0.05 && total > 0.0499, "{total}");
        assert!(look_alpha(0.05, u32::MAX) < 1e-300);
    }

    #[test]
    fn looks_grow_geometrically_and_strictly() {
        let grid: Vec<u32> = (0..6).map(|k| look_rounds(10, k)).collect();
        assert_eq!(grid, vec![10, 15, 23, 35, 53, 80]);
        // One planned round: 1, 2, 3, 5, 8 — every look has new rounds.
        let small: Vec<u32> = (0..5).map(|k| look_rounds(1, k)).collect();
        assert_eq!(small, vec![1, 2, 3, 5, 8]);
        assert_eq!(look_rounds(0, 0), 1);
        assert_eq!(look_rounds(u32::MAX - 1, 3), u32::MAX);
    }

    #[test]
    fn the_rounds_measured_name_the_look() {
        assert_eq!(look_for_rounds(10, 10), 0);
        assert_eq!(look_for_rounds(10, 15), 1);
        assert_eq!(look_for_rounds(10, 80), 5);
        assert_eq!(look_for_rounds(5, 3), 0);
        // Interrupted between looks: counted as the next one (stricter).
        assert_eq!(look_for_rounds(10, 12), 1);
        assert_eq!(look_for_rounds(1, u32::MAX), 54);
    }
}
