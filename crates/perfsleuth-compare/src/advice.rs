//! Advice in words: what would decide an inconclusive change, and what
//! the noise and the resolution allow.

use crate::noise::MIN_HISTORY;
use crate::noise::Noise;
use crate::noise::noise_text;
use crate::noise::percent_text;
use crate::outcome::Row;
use crate::sides::Entry;
use crate::sides::Side;
use crate::sides::newest;
use perfsleuth_model::Metric;
use perfsleuth_stats::RelativeChange;
use perfsleuth_stats::VerdictRule;
use perfsleuth_stats::median;
use perfsleuth_stats::samples_to_narrow;

/// What would decide an inconclusive row, in one line: for an interval that
/// reaches across a band edge, about how many more samples per side would
/// narrow it (its half-width falls like 1/√n) to clear the edge nearest the
/// estimate; for an interval beyond the band that the test does not back, that
/// the two disagree.
pub(crate) fn what_would_decide(
    change: &RelativeChange,
    p: f64,
    rule: VerdictRule,
    n: usize,
) -> String {
    let t = rule.noise_threshold;
    let e = rule.no_change_band();
    let (lo, hi) = (change.ci.lo, change.ci.hi);
    let pct = percent_text;
    if lo > t || hi < -t {
        return format!(
            "inconclusive: the CI lies beyond ±{} but the rank test is not significant (p = {}): measure more runs",
            pct(t),
            perfsleuth_report::format_p_value(p)
        );
    }
    let half = (hi - lo) / 2.0;
    // The estimate's distance from the edge it can clear soonest: beyond
    // the floor (a change) or inside the no-change band; the CI must shrink
    // to that.
    let c = change.change.abs();
    let room = (c - t).max(e - c);
    let needed = match samples_to_narrow(n, half, room) {
        Some(needed) if room >= 0.05 * t.max(1e-3) => needed,
        _ => {
            return format!(
                "inconclusive: the change ({}) sits on the ±{} threshold; no number of runs decides it — change --threshold if this size matters",
                pct(change.change),
                pct(t)
            );
        }
    };
    let more = perfsleuth_report::format_count((needed - n as f64).max(1.0));
    if e > t {
        return format!(
            "inconclusive: the CI (±{}) neither clears the ±{} floor nor lies within ±{}; ≈ {more} more runs per side would narrow it enough to decide",
            pct(half),
            pct(t),
            pct(e)
        );
    }
    format!(
        "inconclusive: the CI (±{}) reaches across the ±{} threshold; ≈ {more} more runs per side would narrow it enough to decide",
        pct(half),
        pct(t),
    )
}

/// What would decide a benchmark that two separate runs cannot: both sides
/// measured interleaved in one job (`ab` between the two commits, or one
/// `run` of both commands while the baseline's program is still on disk),
/// with about how many adjacent pairs and how long that takes: enough
/// pairs for an 80 % chance at α = 0.05 to see a change the size of the
/// threshold (at least 1 %), from the spread
/// of single runs inside the candidate's rounds (a pair's log-ratio varies
/// √2 times that; a median needs π/2 the samples of a mean).
pub(crate) fn interleave_advice(
    baseline: &Side,
    candidate: &Side,
    be: &Entry<'_>,
    ce: &Entry<'_>,
    threshold: f64,
) -> String {
    let commit = |s: &Side| {
        newest(s)
            .and_then(|r| r.git.as_ref())
            .map(|g| perfsleuth_model::short_commit(&g.commit).to_string())
    };
    let command = ce.argv.join(" ");
    let how = match (commit(baseline), commit(candidate)) {
        (Some(b), Some(c)) if b != c => format!(
            "`perfsleuth ab --baseline {b} --candidate {c} --build '…' -- '{command}'` measures both in one job, paired run by run"
        ),
        _ if be.argv != ce.argv => format!(
            "`perfsleuth run '{}' '{command}'` measures both in one run, paired run by run",
            be.argv.join(" ")
        ),
        _ => "keep a copy of the baseline's program and measure both in one `perfsleuth run` (or `perfsleuth ab` between their commits), paired run by run".to_string(),
    };
    let wall = |e: &Entry<'_>| {
        let v: Vec<f64> = e
            .groups
            .iter()
            .flatten()
            .map(|s| Metric::Wall.of(s))
            .collect();
        median(&v)
    };
    // The relative spread of single runs within a round (MAD, scaled to an sd).
    let spread = {
        let rel: Vec<f64> = ce
            .groups
            .iter()
            .filter_map(|g| {
                let v: Vec<f64> = g.iter().map(|s| Metric::Wall.of(s)).collect();
                let m = median(&v)?;
                let mad = perfsleuth_stats::mad(&v)?;
                (m > 0.0).then(|| 1.4826 * mad / m)
            })
            .collect();
        median(&rel)
    };
    let (Some(b), Some(c), Some(sd)) = (wall(be), wall(ce), spread) else {
        return format!("{how}.");
    };
    let effect = threshold.max(0.01);
    let pair_sd = std::f64::consts::SQRT_2 * sd.max(0.002);
    let z = 1.959_964 + 0.841_621;
    let pairs = ((std::f64::consts::FRAC_PI_2 * (z * pair_sd / effect).powi(2)).ceil() as usize)
        .max(perfsleuth_stats::MIN_PAIRS * 4);
    format!(
        "{how}: about {} pairs (≈ {} of measuring) would decide a change of ±{:.0}% at this run-to-run spread (±{:.1}% a run).",
        perfsleuth_report::format_count(pairs as f64),
        perfsleuth_report::format_duration_ns(pairs as f64 * (b + c)),
        100.0 * effect,
        100.0 * sd
    )
}

/// "noise for `w` on this machine class: ±1.2 % per run (σ, learned from 12
/// same-binary runs); …": where the row's band comes from, and that of this
/// difference.
pub(crate) fn noise_note(
    key: &str,
    noise: &Noise,
    (history, declined): (usize, bool),
    band: f64,
    (wb, wc): (f64, f64),
) -> String {
    let pct = percent_text;
    let mut s = format!(
        "noise for `{key}` on this machine class: {}",
        noise_text(noise.sd, &noise.source)
    );
    if history == 0 && declined {
        s.push_str("; same-binary runs not consulted (--no-history)");
    } else if history == 0 {
        s.push_str("; no same-binary runs stored to learn it from (`perfsleuth run --repeat 5` on the baseline does)");
    } else if history < MIN_HISTORY {
        s.push_str(&format!(
            "; only {history} same-binary run{} stored, {MIN_HISTORY} are needed to learn it",
            if history == 1 { " is" } else { "s are" }
        ));
    }
    let stretches = |w: f64| match w {
        1.0 => "1 run".to_string(),
        w if w.fract() == 0.0 => format!("{w} runs"),
        w => format!("{w:.1} runs' worth"),
    };
    s.push_str(&format!(
        "; between {} of baseline and {} of candidate that is ±{}, and the CI is at least that wide",
        stretches(wb),
        stretches(wc),
        pct(band)
    ));
    s
}

/// Why a row cannot be judged at its metric's resolution (a change below one
/// step, or a side below one step), or `None` when it can.
pub(crate) fn below_resolution(row: &Row) -> Option<String> {
    let r = row.metric.resolution()?;
    let (b, c) = (row.baseline_median, row.candidate_median);
    // Zero on both sides is no change at any resolution; equal medians of at
    // least one step each are left to the rule.
    if !(b.is_finite() && c.is_finite()) || (b == 0.0 && c == 0.0) || (b == c && b >= r) {
        return None;
    }
    let step = match row.metric {
        Metric::User | Metric::Sys => format!(
            "{} time is counted in {} ms scheduler ticks",
            if row.metric == Metric::User {
                "user"
            } else {
                "system"
            },
            r / 1e6
        ),
        Metric::PeakRss => format!("peak RSS is counted in {} KiB pages", r / 1024.0),
        _ => "it is counted in whole events".to_string(),
    };
    if b.min(c) < r {
        return Some(format!(
            "{step}: one side's median is below one — not judged"
        ));
    }
    if (c - b).abs() < r {
        return Some(format!(
            "{step}: the medians differ by less than one — not judged"
        ));
    }
    None
}
