//! The search of `perfsleuth bisect`: which commits of a first-parent range
//! changed a benchmark, found by interleaved, paired comparisons.
//!
//! The range is commits `0..=n`, 0 the baseline and `n` the candidate. The
//! caller measures what [`Search::next_probe`] asks for — a [`Probe`] of two or
//! three commits, measured interleaved in one session — judges each
//! adjacent pair of it by the rule of `ab`, and gives the verdicts back with
//! [`Search::record`]. A three-commit probe `lo, mid, hi` measures the
//! midpoint once and pairs it with both ends, so one session says which
//! half (or both: several culprits) holds the change. Every segment that
//! changed is split until its ends are adjacent commits; each such culprit
//! is then measured against its parent again, independently, before it is
//! reported ([`Search::verified`]). A pair that cannot be decided in its
//! budget stays undecided and is reported so: it is never taken for
//! "unchanged", and nothing inside it is named.
//!
//! No I/O here: the study (`examples/study.rs`, docs/BISECT.md) drives the
//! same search with simulated measurements, the app with real ones.

#![forbid(unsafe_code)]

use std::collections::BTreeSet;

pub mod study;

/// What the comparison of two commits said.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PairVerdict {
    /// Changed, unchanged, or undecided within the step's budget.
    pub call: Call,
    /// The change from the older to the newer commit (0.02 = +2 %).
    pub change: f64,
    /// Its interval, low end.
    pub lo: f64,
    /// Its interval, high end.
    pub hi: f64,
}

/// The decision on one pair of commits.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Call {
    /// The interval lies beyond the threshold: the pair differs.
    Changed,
    /// The interval lies within the no-change band.
    Same,
    /// Neither, in the budget the step had.
    Undecided,
}

/// Commits to measure interleaved in one session, oldest first: two (a
/// confirmation or a verification) or three (a split).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Probe {
    /// Why this probe is measured.
    pub kind: ProbeKind,
    /// The commits, as indices into the range, oldest first.
    pub commits: Vec<usize>,
}

/// Why a probe is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProbeKind {
    /// The two ends, before anything else: does the change reproduce here?
    Confirm,
    /// A segment known to change, split at its midpoint.
    Split,
    /// A culprit against its parent, measured again on its own.
    Verify,
}

/// A commit (or, around commits that could not be built, a run of
/// commits) that the search found changed the benchmark.
#[derive(Debug, Clone, PartialEq)]
pub struct Culprit {
    /// The commit before the change (the last one known unchanged).
    pub parent: usize,
    /// The commit that changed it. With `parent + 1 < commit` the commits
    /// between could not be measured, and the change lies in any of them.
    pub commit: usize,
    /// The verdict of the split that found it.
    pub found: PairVerdict,
    /// The verdict of its verification, once measured.
    pub verified: Option<PairVerdict>,
}

impl Culprit {
    /// Whether the verification called the same change (same direction).
    pub fn confirmed(&self) -> bool {
        self.verified.is_some_and(|v| {
            v.call == Call::Changed && v.change.signum() == self.found.change.signum()
        })
    }

    /// Its share of the total change, in logs (so shares of a chain of
    /// changes add up to 1), from the verification where there is one.
    pub fn share(&self, total: f64) -> f64 {
        let own = self.verified.unwrap_or(self.found).change;
        (1.0 + own).ln() / (1.0 + total).ln()
    }
}

/// Where the search stands.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Still measuring.
    Searching,
    /// The two ends did not differ here: nothing to bisect.
    NotReproduced(PairVerdict),
    /// The two ends could not be told apart or shown equal in the budget.
    EndsUndecided(PairVerdict),
    /// Done: the culprits (verified or not) and what stayed undecided.
    Done,
}

/// The search over commits `0..=n`.
#[derive(Debug, Clone)]
pub struct Search {
    n: usize,
    total: Option<PairVerdict>,
    open: Vec<(usize, usize, PairVerdict)>,
    culprits: Vec<Culprit>,
    undecided: Vec<(usize, usize, PairVerdict)>,
    vanished: Vec<(usize, usize)>,
    skipped: BTreeSet<usize>,
    outcome: Outcome,
    probes: usize,
    max_probes: usize,
}

impl Search {
    /// A search over commits `0..=n` (`n` ≥ 1) that measures at most
    /// `max_probes` probes (confirmation and verifications included).
    pub fn new(n: usize, max_probes: usize) -> Search {
        Search {
            n: n.max(1),
            total: None,
            open: Vec::new(),
            culprits: Vec::new(),
            undecided: Vec::new(),
            vanished: Vec::new(),
            skipped: BTreeSet::new(),
            outcome: Outcome::Searching,
            probes: 0,
            max_probes: max_probes.max(1),
        }
    }

    /// The steps a search of `n` commits takes for one culprit: the
    /// confirmation, ⌈log₂ n⌉ splits, one verification.
    pub fn expected_probes(n: usize) -> usize {
        let splits = (usize::BITS - n.max(1).saturating_sub(1).leading_zeros()) as usize;
        splits + 2
    }

    /// What to measure next; `None` once the search is over.
    pub fn next_probe(&mut self) -> Option<Probe> {
        if self.outcome != Outcome::Searching {
            return None;
        }
        if self.total.is_none() {
            return Some(Probe {
                kind: ProbeKind::Confirm,
                commits: vec![0, self.n],
            });
        }
        if self.probes >= self.max_probes {
            self.give_up_open();
            self.outcome = Outcome::Done;
            return None;
        }
        while let Some(&(lo, hi, verdict)) = self.open.first() {
            match self.midpoint(lo, hi) {
                Some(mid) => {
                    return Some(Probe {
                        kind: ProbeKind::Split,
                        commits: vec![lo, mid, hi],
                    });
                }
                None => {
                    self.open.remove(0);
                    self.culprits.push(Culprit {
                        parent: lo,
                        commit: hi,
                        found: verdict,
                        verified: None,
                    });
                }
            }
        }
        if let Some(c) = self.culprits.iter().find(|c| c.verified.is_none()) {
            return Some(Probe {
                kind: ProbeKind::Verify,
                commits: vec![c.parent, c.commit],
            });
        }
        self.outcome = Outcome::Done;
        None
    }

    /// The verdicts of `probe`'s adjacent pairs, oldest pair first.
    pub fn record(&mut self, probe: &Probe, verdicts: &[PairVerdict]) {
        self.probes += 1;
        match (probe.kind, &probe.commits[..], verdicts) {
            (ProbeKind::Confirm, _, [v]) => {
                self.total = Some(*v);
                match v.call {
                    Call::Changed => self.open.push((0, self.n, *v)),
                    Call::Same => self.outcome = Outcome::NotReproduced(*v),
                    Call::Undecided => self.outcome = Outcome::EndsUndecided(*v),
                }
            }
            (ProbeKind::Split, &[lo, mid, hi], &[left, right]) => {
                if let Some(i) = self.open.iter().position(|s| (s.0, s.1) == (lo, hi)) {
                    self.open.remove(i);
                }
                for (a, b, v) in [(lo, mid, left), (mid, hi, right)] {
                    match v.call {
                        Call::Changed => self.open.push((a, b, v)),
                        Call::Same => {}
                        Call::Undecided => self.undecided.push((a, b, v)),
                    }
                }
                if left.call == Call::Same && right.call == Call::Same {
                    // The change the segment showed is gone in both halves:
                    // noise then, or a change too small to place.
                    self.vanished.push((lo, hi));
                }
            }
            (ProbeKind::Verify, &[parent, commit], &[v]) => {
                if let Some(c) = self
                    .culprits
                    .iter_mut()
                    .find(|c| (c.parent, c.commit) == (parent, commit))
                {
                    c.verified = Some(v);
                }
            }
            _ => {}
        }
    }

    /// `commit` could not be built or run: the search goes around it, as
    /// `git bisect skip` does.
    pub fn skip(&mut self, commit: usize) {
        if commit == 0 || commit == self.n {
            return;
        }
        self.skipped.insert(commit);
    }

    /// The commit between `lo` and `hi` (exclusive) nearest their middle
    /// that was not skipped.
    fn midpoint(&self, lo: usize, hi: usize) -> Option<usize> {
        if hi <= lo + 1 {
            return None;
        }
        let mid = lo + (hi - lo) / 2;
        (0..hi - lo)
            .flat_map(|d| [mid.checked_sub(d), mid.checked_add(d)])
            .flatten()
            .find(|&c| c > lo && c < hi && !self.skipped.contains(&c))
    }

    /// Out of probes: the segments still open are reported undecided.
    fn give_up_open(&mut self) {
        for (lo, hi, v) in self.open.drain(..) {
            self.undecided.push((lo, hi, v));
        }
    }

    /// Where the search stands.
    pub fn outcome(&self) -> &Outcome {
        &self.outcome
    }

    /// The change between the two ends, once confirmed.
    pub fn total(&self) -> Option<PairVerdict> {
        self.total
    }

    /// Every culprit found, verified or not, oldest first.
    pub fn culprits(&self) -> Vec<Culprit> {
        let mut c = self.culprits.clone();
        c.sort_by_key(|c| c.commit);
        c
    }

    /// The culprits whose verification called the same change.
    pub fn verified(&self) -> Vec<Culprit> {
        self.culprits()
            .into_iter()
            .filter(Culprit::confirmed)
            .collect()
    }

    /// Segments whose change could not be decided: a culprit may lie in each.
    pub fn undecided(&self) -> &[(usize, usize, PairVerdict)] {
        &self.undecided
    }

    /// Segments whose change vanished in both halves.
    pub fn vanished(&self) -> &[(usize, usize)] {
        &self.vanished
    }

    /// Commits skipped.
    pub fn skipped(&self) -> &BTreeSet<usize> {
        &self.skipped
    }

    /// Probes measured so far.
    pub fn probes(&self) -> usize {
        self.probes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verdict(change: f64) -> PairVerdict {
        let call = if change.abs() > 0.005 {
            Call::Changed
        } else {
            Call::Same
        };
        PairVerdict {
            call,
            change,
            lo: change - 0.002,
            hi: change + 0.002,
        }
    }

    /// Drives a search with exact answers: `effects[c]` is commit c's own change.
    fn run(effects: &[f64], skip: &[usize]) -> Search {
        let n = effects.len() - 1;
        let mut s = Search::new(n, 100);
        let level = |c: usize| effects[1..=c].iter().map(|e| (1.0 + e).ln()).sum::<f64>();
        while let Some(p) = s.next_probe() {
            if let Some(&bad) = p.commits.iter().find(|c| skip.contains(c)) {
                s.skip(bad);
                continue;
            }
            let v: Vec<PairVerdict> = p
                .commits
                .windows(2)
                .map(|w| verdict((level(w[1]) - level(w[0])).exp() - 1.0))
                .collect();
            s.record(&p, &v);
        }
        s
    }

    #[test]
    fn one_culprit_among_128_is_found_in_log_steps_and_verified() {
        let mut effects = vec![0.0; 129];
        effects[77] = 0.02;
        let s = run(&effects, &[]);
        let v = s.verified();
        assert_eq!(v.len(), 1, "{:?}", s.culprits());
        assert_eq!((v[0].parent, v[0].commit), (76, 77));
        assert!((v[0].share(s.total().unwrap().change) - 1.0).abs() < 1e-9);
        assert_eq!(s.probes(), Search::expected_probes(128));
        assert_eq!(*s.outcome(), Outcome::Done);
    }

    #[test]
    fn two_culprits_are_both_named_with_shares_that_add_up() {
        let mut effects = vec![0.0; 65];
        effects[10] = 0.015;
        effects[50] = 0.02;
        let s = run(&effects, &[]);
        let v = s.verified();
        let commits: Vec<usize> = v.iter().map(|c| c.commit).collect();
        assert_eq!(commits, vec![10, 50]);
        let total = s.total().unwrap().change;
        let shares: f64 = v.iter().map(|c| c.share(total)).sum();
        assert!((shares - 1.0).abs() < 1e-9, "{shares}");
    }

    #[test]
    fn unchanged_ends_name_no_culprit() {
        let s = run(&[0.0; 33], &[]);
        assert!(matches!(s.outcome(), Outcome::NotReproduced(_)));
        assert!(s.culprits().is_empty());
        assert_eq!(s.probes(), 1);
    }

    #[test]
    fn a_skipped_commit_next_to_the_culprit_widens_it_to_a_range() {
        let mut effects = vec![0.0; 17];
        effects[9] = 0.03;
        let s = run(&effects, &[8]);
        let v = s.verified();
        assert_eq!(v.len(), 1);
        // 8 could not be built: the change lies in 8 or 9.
        assert_eq!((v[0].parent, v[0].commit), (7, 9));
        assert!(s.skipped().contains(&8));
    }

    #[test]
    fn an_undecided_half_is_reported_and_nothing_inside_it_is_named() {
        let mut s = Search::new(8, 100);
        let p = s.next_probe().unwrap();
        s.record(&p, &[verdict(0.02)]);
        let p = s.next_probe().unwrap();
        assert_eq!(p.commits, vec![0, 4, 8]);
        let undecided = PairVerdict {
            call: Call::Undecided,
            change: 0.01,
            lo: -0.001,
            hi: 0.021,
        };
        s.record(&p, &[undecided, verdict(0.0)]);
        assert!(s.next_probe().is_none());
        assert!(s.culprits().is_empty());
        assert_eq!(s.undecided().len(), 1);
        assert_eq!((s.undecided()[0].0, s.undecided()[0].1), (0, 4));
    }

    #[test]
    fn out_of_probes_the_open_segments_are_undecided() {
        let mut effects = vec![0.0f64; 1025];
        effects[300] = 0.02;
        let n = effects.len() - 1;
        let mut s = Search::new(n, 4);
        let level = |c: usize| effects[1..=c].iter().map(|e| (1.0 + e).ln()).sum::<f64>();
        while let Some(p) = s.next_probe() {
            let v: Vec<PairVerdict> = p
                .commits
                .windows(2)
                .map(|w| verdict((level(w[1]) - level(w[0])).exp() - 1.0))
                .collect();
            s.record(&p, &v);
        }
        assert_eq!(s.probes(), 4);
        assert!(s.culprits().is_empty());
        let (lo, hi, _) = s.undecided()[0];
        assert!(lo < 300 && 300 <= hi, "{lo}..{hi}");
    }
}
