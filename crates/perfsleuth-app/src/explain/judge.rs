//! Judging each experiment against the observed change: how much of it the
//! difference reproduces, and the conclusion in words.

use crate::explain::changed;
use crate::explain::sides::From;
use perfsleuth_model::Mode;
use perfsleuth_model::quantity::MISSING;
use perfsleuth_model::schema;
use perfsleuth_model::schema::ExplainBenchmark;
use perfsleuth_model::schema::ExplainFinding;
use perfsleuth_model::schema::ExplainOutcome;
use perfsleuth_model::schema::ExplainRatio;
use perfsleuth_model::schema::VerdictLabel;
use perfsleuth_report::format_change;

pub(crate) fn ratio_of(change: &Option<schema::RelativeChange>) -> Option<ExplainRatio> {
    let c = change.as_ref()?;
    let (r, lo, hi) = (c.change?, c.ci_low?, c.ci_high?);
    Some(ExplainRatio {
        ratio: 1.0 + r,
        ci_low: 1.0 + lo,
        ci_high: 1.0 + hi,
    })
}

pub(crate) fn observed_row<'a>(
    doc: &'a schema::CompareDoc,
    key: &str,
) -> Option<&'a schema::CompareRow> {
    doc.rows.iter().find(|r| r.key == key && r.gating)
}

pub(crate) fn nothing_to_explain(doc: &schema::CompareDoc, key: &str) -> ExplainBenchmark {
    let row = observed_row(doc, key);
    let verdict = row.map(|r| r.verdict);
    ExplainBenchmark {
        key: key.to_string(),
        metric: row.map_or(perfsleuth_model::Metric::Wall, |r| r.metric),
        unit: row.map_or(String::new(), |r| r.unit.clone()),
        observed: row.and_then(|r| ratio_of(&r.change)),
        observed_verdict: verdict,
        expected: None,
        findings: Vec::new(),
        conclusion: match verdict {
            Some(VerdictLabel::Inconclusive) => {
                "the two sides cannot be told apart or shown equal (inconclusive): measure more before explaining".into()
            }
            Some(VerdictLabel::InsufficientData) => {
                "too few samples on a side to tell whether they differ: nothing to explain yet".into()
            }
            _ => "no difference beyond noise: nothing to explain".into(),
        },
    }
}

pub(crate) fn planned_only(
    observed: Option<&schema::CompareDoc>,
    key: &str,
    from: From,
    mode: Mode,
) -> ExplainBenchmark {
    let row = observed.and_then(|d| observed_row(d, key));
    let ratio = row.and_then(|r| ratio_of(&r.change));
    // What `compare` would gate on in this mode.
    let metric = row.map(|r| r.metric).unwrap_or_else(|| match mode {
        Mode::Simulation => {
            perfsleuth_model::Metric::parse("Ir").unwrap_or(perfsleuth_model::Metric::Wall)
        }
        _ => perfsleuth_model::Metric::Wall,
    });
    ExplainBenchmark {
        key: key.to_string(),
        metric,
        unit: row.map_or(metric.unit().to_string(), |r| r.unit.clone()),
        expected: ratio.as_ref().map(|r| expected(r.ratio, from)),
        observed: ratio,
        observed_verdict: row.map(|r| r.verdict),
        findings: Vec::new(),
        conclusion: "not measured".into(),
    }
}

/// The effect here of reproducing all of an observed ratio `r`: the ratio
/// itself when starting from the baseline, its inverse from the candidate.
pub(crate) fn expected(r: f64, from: From) -> f64 {
    match from {
        From::Baseline => r,
        From::Candidate => 1.0 / r,
    }
}

/// One benchmark's findings, ranked, and the sentence that sums them up.
pub(crate) fn judge(
    key: &str,
    observed: Option<&schema::CompareDoc>,
    from: From,
    effects: &[(String, schema::CompareDoc)],
    alpha: f64,
) -> ExplainBenchmark {
    let row = observed.and_then(|d| observed_row(d, key));
    let obs = row.and_then(|r| ratio_of(&r.change));
    let obs_verdict = row.map(|r| r.verdict);
    // Shares only of a difference beyond noise.
    let target = obs
        .as_ref()
        .filter(|_| obs_verdict.is_some_and(changed))
        .map(|r| expected(r.ratio, from))
        .filter(|e| e.is_finite() && *e > 0.0 && (e.ln()).abs() > 1e-9);
    let rows: Vec<Option<&schema::CompareRow>> = effects
        .iter()
        .map(|(_, d)| d.rows.iter().find(|r| r.key == key && r.gating))
        .collect();
    let p: Vec<f64> = rows
        .iter()
        .map(|r| r.and_then(|r| r.p_value).unwrap_or(f64::NAN))
        .collect();
    let adjusted = perfsleuth_stats::holm_adjusted(&p)
        .into_iter()
        .map(|p| (!p.is_nan()).then_some(p));
    let mut findings: Vec<ExplainFinding> = effects
        .iter()
        .zip(&rows)
        .zip(adjusted)
        .map(|(((name, _), r), p_holm)| {
            let effect = r.and_then(|r| ratio_of(&r.change));
            let verdict = r.map_or(VerdictLabel::InsufficientData, |r| r.verdict);
            let significant = changed(verdict) && p_holm.is_none_or(|p| p <= alpha);
            let share = match (&effect, target) {
                (Some(e), Some(t)) => {
                    let s = |x: f64| x.ln() / t.ln();
                    let (a, b) = (s(e.ci_low), s(e.ci_high));
                    Some(ExplainRatio {
                        ratio: s(e.ratio),
                        ci_low: a.min(b),
                        ci_high: a.max(b),
                    })
                    .filter(|x| {
                        x.ratio.is_finite() && x.ci_low.is_finite() && x.ci_high.is_finite()
                    })
                }
                _ => None,
            };
            let outcome = if !significant {
                if verdict == VerdictLabel::NoChange {
                    ExplainOutcome::NoEffect
                } else {
                    ExplainOutcome::Inconclusive
                }
            } else {
                match &share {
                    None => ExplainOutcome::Changes,
                    Some(s) if s.ratio < 0.0 => ExplainOutcome::Opposite,
                    Some(s) if s.ratio >= 0.5 => ExplainOutcome::Reproduces,
                    Some(_) => ExplainOutcome::Partly,
                }
            };
            ExplainFinding {
                experiment: name.clone(),
                effect,
                verdict,
                p_value: r.and_then(|r| r.p_value),
                p_holm,
                share,
                outcome,
            }
        })
        .collect();
    let rank = |f: &ExplainFinding| match f.outcome {
        ExplainOutcome::Reproduces => 0,
        ExplainOutcome::Partly => 1,
        ExplainOutcome::Changes => 2,
        ExplainOutcome::Opposite => 3,
        ExplainOutcome::Inconclusive => 4,
        ExplainOutcome::NoEffect => 5,
    };
    let size = |f: &ExplainFinding| {
        f.share
            .as_ref()
            .map(|s| (s.ratio - 1.0).abs())
            .or(f.effect.as_ref().map(|e| -e.ratio.ln().abs()))
            .unwrap_or(0.0)
    };
    // `all` comes last: what the experiments do together, after each alone.
    findings.sort_by(|a, b| {
        (a.experiment == "all")
            .cmp(&(b.experiment == "all"))
            .then(rank(a).cmp(&rank(b)))
            .then(
                size(a)
                    .partial_cmp(&size(b))
                    .unwrap_or(std::cmp::Ordering::Equal),
            )
    });
    let conclusion = conclusion(&findings, target.is_some(), obs_verdict);
    ExplainBenchmark {
        key: key.to_string(),
        metric: row
            .or(rows.iter().flatten().next().copied())
            .map_or(perfsleuth_model::Metric::Wall, |r| r.metric),
        unit: row
            .or(rows.iter().flatten().next().copied())
            .map_or(String::new(), |r| r.unit.clone()),
        observed: obs,
        observed_verdict: obs_verdict,
        expected: target,
        findings,
        conclusion,
    }
}

/// Counted (simulated) effects have no spread: their interval is a point.
pub fn exact(r: &ExplainRatio) -> bool {
    (r.ci_high - r.ci_low).abs() <= 1e-12 * r.ratio.abs().max(1.0)
}

/// An effect as text: the change and its interval, or "(exact)".
pub fn change_text(r: &ExplainRatio) -> String {
    if exact(r) {
        return format!("{} (exact)", format_change(r.ratio - 1.0));
    }
    format!(
        "{} ({} … {})",
        format_change(r.ratio - 1.0),
        format_change(r.ci_low - 1.0),
        format_change(r.ci_high - 1.0)
    )
}

/// The answer for one benchmark, from its ranked findings: the experiment
/// that reproduces the difference, or that none does. Never a guess.
pub fn conclusion(
    findings: &[ExplainFinding],
    has_target: bool,
    observed: Option<VerdictLabel>,
) -> String {
    let named = |f: &ExplainFinding| format!("`{}`", f.experiment);
    let eff = |f: &ExplainFinding| f.effect.as_ref().map_or(MISSING.into(), change_text);
    let pct = |f: &ExplainFinding| {
        f.share.as_ref().map_or(String::new(), |s| {
            perfsleuth_model::quantity::format_share(s.ratio, 0)
        })
    };
    if !has_target {
        if observed.is_some() {
            let why = match observed {
                Some(VerdictLabel::Inconclusive) => {
                    "the two sides cannot be told apart or shown equal (inconclusive)"
                }
                _ => "no difference beyond noise between the two sides",
            };
            return format!("{why}: nothing to explain");
        }
        let moving: Vec<String> = findings
            .iter()
            .filter(|f| f.outcome == ExplainOutcome::Changes)
            .map(|f| format!("{} {}", named(f), eff(f)))
            .collect();
        return if moving.is_empty() {
            "no experiment changes the result beyond noise here".into()
        } else {
            format!("changes the result here: {}", moving.join("; "))
        };
    }
    let singles: Vec<&ExplainFinding> = findings.iter().filter(|f| f.experiment != "all").collect();
    let all = findings.iter().find(|f| f.experiment == "all");
    let best = singles
        .iter()
        .find(|f| f.outcome == ExplainOutcome::Reproduces);
    if let Some(f) = best {
        let others: Vec<String> = singles
            .iter()
            .filter(|o| o.outcome == ExplainOutcome::NoEffect)
            .map(|o| named(o))
            .collect();
        return format!(
            "{} reproduces the difference: {} here, {} of the observed difference{}",
            named(f),
            eff(f),
            pct(f),
            if others.is_empty() {
                String::new()
            } else {
                format!("; no effect: {}", others.join(", "))
            }
        );
    }
    if let Some(a) = all.filter(|a| a.outcome == ExplainOutcome::Reproduces) {
        return format!(
            "the experiments together reproduce the difference ({} here, {}), no single one does",
            eff(a),
            pct(a)
        );
    }
    let partly: Vec<String> = singles
        .iter()
        .filter(|f| f.outcome == ExplainOutcome::Partly)
        .map(|f| format!("{} {}", named(f), pct(f)))
        .collect();
    if !partly.is_empty() {
        return format!(
            "nothing tested reproduces most of the difference; part of it: {}. The rest is not explained by what could be tested here",
            partly.join(", ")
        );
    }
    "nothing tested here reproduces the difference: its cause is not among the experiments (see what could not be tested)".into()
}
