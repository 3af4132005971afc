//! The noise a change must leave to count: learned from the history of
//! same-binary runs, or assumed from the machine class.

use perfsleuth_model::Environment;
use perfsleuth_model::Metric;
use perfsleuth_model::Sample;
use perfsleuth_stats::median;

/// Same-binary runs needed before their spread counts as the learned noise.
pub const MIN_HISTORY: usize = 5;

/// The between-run noise of one benchmark and metric: how far one run's
/// median strays when nothing changed.
#[derive(Debug, Clone, PartialEq)]
pub struct Noise {
    /// Relative standard deviation of one run's median.
    pub sd: f64,
    /// The factor that makes `sd` a 95 % band: Student's t with runs − 1
    /// degrees of freedom for a learned spread, the normal 1.96 for a prior.
    pub q: f64,
    /// Same-binary runs it was learned from; 0 for a prior.
    pub runs: usize,
    /// Where it comes from, as the report says it.
    pub source: String,
}

impl Noise {
    /// An assumed noise raised to the spread the runs' own rounds show, when
    /// that is larger: on a machine whose speed wanders, a stretch of one
    /// run strays about as far as a whole run (STATISTICS.md §6.1).
    pub(crate) fn at_least(self, spread: f64) -> Noise {
        if spread <= self.sd {
            return self;
        }
        Noise {
            sd: spread,
            source: format!(
                "assumed from the spread of these runs' rounds, above the {:.1}% {}",
                100.0 * self.sd,
                self.source
            ),
            ..self
        }
    }

    /// The 95 % band of one run's median: "±x %".
    pub fn one_run(&self) -> f64 {
        self.q * self.sd
    }

    /// The 95 % band of a difference between sides made of `wb` and `wc`
    /// independent stretches of measuring (runs, or default-length parts of
    /// an extended run): what a change must exceed besides the threshold.
    pub fn band(&self, wb: f64, wc: f64) -> f64 {
        self.q * self.sd * (1.0 / wb.max(1.0) + 1.0 / wc.max(1.0)).sqrt()
    }
}

/// One common step of the machine: two or more relative changes of
/// byte-identical programs, all the same way, the largest at most twice the
/// smallest. Returns their range, or `None` when they are not one step.
/// `compare` applies it to the rows of two runs, `history` to the change
/// points of its series at one run.
pub fn common_step(changes: &[f64]) -> Option<(f64, f64)> {
    let (lo, hi) = changes
        .iter()
        .fold((f64::INFINITY, f64::NEG_INFINITY), |(l, h), &x| {
            (l.min(x), h.max(x))
        });
    let one = changes.len() >= 2
        && lo * hi > 0.0
        && hi.abs().max(lo.abs()) <= 2.0 * hi.abs().min(lo.abs());
    one.then_some((lo, hi))
}

/// Points from which a series' own noise is trusted alone: below it, at
/// least the machine's assumed noise ([`prior_noise`]) counts, since a
/// spread estimated from a handful of runs is often far too small and would
/// let noise through (docs/HISTORY.md, "Validation on this machine").
pub const LEARN_POINTS: usize = 20;

/// The one rule for a benchmark's between-run noise, applied by `compare`,
/// `history` and `run --repeat` alike: from [`MIN_HISTORY`] run medians
/// (oldest first) on, the robust spread of consecutive ones
/// ([`perfsleuth_stats::relative_noise`], which a step in the series barely
/// moves), raised to `prior` below [`LEARN_POINTS`]; with fewer, `prior`.
/// `what` names the medians in the source ("same-binary runs", "points").
pub fn series_noise(medians: &[f64], prior: Option<Noise>, what: &str) -> Option<Noise> {
    let n = medians.len();
    let learned = if n >= MIN_HISTORY {
        perfsleuth_stats::relative_noise(medians)
    } else {
        None
    };
    match (learned, prior) {
        (Some(l), Some(p)) if n < LEARN_POINTS && p.sd > l => Some(Noise {
            runs: n,
            source: format!(
                "{}, above the {} the {n} {what} show",
                p.source,
                percent_text(l)
            ),
            ..p
        }),
        (Some(l), _) => Some(Noise {
            sd: l,
            q: perfsleuth_stats::t_quantile(0.975, (n - 1) as f64),
            runs: n,
            source: format!("learned from {n} {what}"),
        }),
        (None, p) => p,
    }
}

/// The noise learned from same-binary runs (each run's samples, newest
/// first, as the store returns them) by [`series_noise`].
pub fn history_noise(runs: &[Vec<Sample>], metric: Metric, prior: Option<Noise>) -> Option<Noise> {
    let medians: Vec<f64> = runs
        .iter()
        .rev()
        .filter_map(|r| {
            let v: Vec<f64> = r
                .iter()
                .map(|s| metric.of(s))
                .filter(|v| v.is_finite())
                .collect();
            median(&v)
        })
        .collect();
    series_noise(&medians, prior, "same-binary runs")
}

/// "±2.5 % per run (σ, assumed for a virtual machine)": one noise figure,
/// worded the same wherever it is shown.
pub fn noise_text(sd: f64, source: &str) -> String {
    format!("±{} per run (σ, {source})", percent_text(sd))
}

pub(crate) fn percent_text(x: f64) -> String {
    perfsleuth_model::quantity::format_share(x, 1)
}

/// The between-run noise assumed without history, from the machine's
/// fingerprint (STATISTICS.md §6): 1 % for a machine that shows no source
/// of drift; 2.5 % for a virtual machine or container; 5 % for one that
/// also has its CPU time stolen or contended (the shared cloud guest, whose
/// run-to-run offsets measured 4–8 % there).
pub fn prior_noise(env: &Environment) -> Noise {
    let known = |k: &str| {
        env.get(k)
            .filter(|v| !v.is_empty() && *v != perfsleuth_model::UNKNOWN && *v != "none")
    };
    let number = |k: &str| known(k).and_then(|v| v.parse::<f64>().ok());
    let mut guest: Vec<&str> = Vec::new();
    if known("virt.hypervisor").is_some() {
        guest.push("a virtual machine");
    }
    if known("virt.container").is_some() {
        guest.push("a container");
    }
    let mut shared: Vec<&str> = Vec::new();
    if number("noise.steal_pct").is_some_and(|v| v >= 1.0) {
        shared.push("stolen CPU time");
    }
    if number("noise.psi.cpu.some_avg10").is_some_and(|v| v >= 10.0) {
        shared.push("CPU pressure");
    }
    let (sd, source) = match (guest.is_empty(), shared.is_empty()) {
        (true, true) => (
            0.01,
            "assumed for a machine without known drift".to_string(),
        ),
        (false, true) => (0.025, format!("assumed for {}", guest.join(", "))),
        (true, false) => (0.025, format!("assumed for {}", shared.join(", "))),
        (false, false) => (
            0.05,
            format!(
                "assumed for {} with {}",
                guest.join(", "),
                shared.join(", ")
            ),
        ),
    };
    Noise {
        sd,
        q: perfsleuth_stats::normal_quantile(0.975),
        runs: 0,
        source,
    }
}

/// The relative standard deviation of the medians of groups with at least
/// 3 samples, or 0 when fewer than 3 such groups.
pub(crate) fn group_spread(groups: &[Vec<f64>]) -> f64 {
    let medians: Vec<f64> = groups
        .iter()
        .filter(|g| g.len() >= 3)
        .filter_map(|g| median(g))
        .collect();
    let n = medians.len();
    if n < 3 {
        return 0.0;
    }
    let mean = medians.iter().sum::<f64>() / n as f64;
    if mean <= 0.0 {
        return 0.0;
    }
    let var = medians.iter().map(|m| (m - mean).powi(2)).sum::<f64>() / (n - 1) as f64;
    var.sqrt() / mean
}
