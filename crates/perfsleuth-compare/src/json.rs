//! The JSON form of a comparison (`perfsleuth/compare`, documented in
//! `docs/COMPARE.md`).

use crate::{Comparison, Row, RowVerdict, any_gating_regression};
use perfsleuth_stats::Verdict;
use serde_json::{Value, json};

/// Name written into every compare document.
pub const SCHEMA: &str = "perfsleuth/compare";

/// Layout version of the compare document.
pub const SCHEMA_VERSION: u32 = 1;

/// A finite number, or null (JSON has no NaN).
fn num(x: f64) -> Value {
    if x.is_finite() { json!(x) } else { Value::Null }
}

fn opt_num(x: Option<f64>) -> Value {
    x.map_or(Value::Null, num)
}

fn row_json(r: &Row) -> Value {
    let direction = match r.metric.direction() {
        perfsleuth_model::Direction::Lower => "lower",
        perfsleuth_model::Direction::Higher => "higher",
    };
    json!({
        "benchmark": r.benchmark,
        "parameters": r.parameters,
        "key": r.key(),
        "metric": r.metric.name(),
        "unit": r.metric.unit(),
        "better": direction,
        "gating": r.gating,
        "baseline_median": num(r.baseline_median),
        "candidate_median": num(r.candidate_median),
        "n_baseline": r.n_baseline,
        "n_candidate": r.n_candidate,
        "change": r.change.as_ref().map_or(Value::Null, |c| json!({
            "change": num(c.change),
            "ci_low": num(c.ci.lo),
            "ci_high": num(c.ci.hi),
            "confidence": perfsleuth_stats::DEFAULT_CONFIDENCE,
            "resamples": c.resamples,
        })),
        "p_value": opt_num(r.p_value),
        "p_adjusted": opt_num(r.p_adjusted),
        "verdict": r.verdict.as_str(),
        "notes": r.notes,
    })
}

/// Counts of rows by verdict, every verdict present (0 when none).
pub(crate) fn verdict_counts(c: &Comparison) -> Vec<(&'static str, usize)> {
    let all = [
        RowVerdict::Stat(Verdict::Regressed),
        RowVerdict::Stat(Verdict::Improved),
        RowVerdict::Stat(Verdict::WithinNoise),
        RowVerdict::Stat(Verdict::Unchanged),
        RowVerdict::Stat(Verdict::Inconclusive),
        RowVerdict::Stat(Verdict::InsufficientData),
        RowVerdict::EnvironmentChanged,
    ];
    all.iter()
        .map(|v| {
            (
                v.as_str(),
                c.rows.iter().filter(|r| r.verdict == *v).count(),
            )
        })
        .collect()
}

/// The comparison as a JSON document: `{"schema": "perfsleuth/compare",
/// "schema_version": 1, ...}` with every field of [`Comparison`] and [`Row`].
pub fn to_json(c: &Comparison) -> Value {
    let env: Vec<Value> = c
        .env_changes
        .iter()
        .map(|ch| {
            json!({
                "key": ch.key,
                "class": ch.class.as_str(),
                "before": ch.before,
                "after": ch.after,
                "summary": ch.summary,
                "why": ch.why,
            })
        })
        .collect();
    let counts: serde_json::Map<String, Value> = verdict_counts(c)
        .into_iter()
        .map(|(k, n)| (k.to_string(), json!(n)))
        .collect();
    json!({
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "baseline": c.baseline,
        "candidate": c.candidate,
        "identity_changed": c.identity_changed,
        "env_changes": env,
        "fdr_applied": c.fdr_applied,
        "fdr_comparisons": c.fdr_comparisons(),
        "rows": c.rows.iter().map(row_json).collect::<Vec<_>>(),
        "unpaired_baseline": c.unpaired_baseline,
        "unpaired_candidate": c.unpaired_candidate,
        "notes": c.notes,
        "summary": counts,
        "any_gating_regression": any_gating_regression(c),
    })
}
