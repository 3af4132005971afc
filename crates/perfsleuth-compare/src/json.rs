//! The JSON form of a comparison (`perfsleuth/compare`, documented in
//! `docs/COMPARE.md`).

use crate::{Comparison, Row, any_gating_regression};
use perfsleuth_model::schema::{
    CompareDoc, CompareEnvChange, CompareNoise, CompareRow, Document, RelativeChange,
    VerdictCounts, VerdictLabel,
};

/// Name written into every compare document.
pub const SCHEMA: &str = CompareDoc::SCHEMA;

/// Layout version of the compare document.
pub const SCHEMA_VERSION: u32 = CompareDoc::VERSION;

/// A finite number, or `None` (JSON has no NaN).
fn num(x: f64) -> Option<f64> {
    x.is_finite().then_some(x)
}

fn row_doc(r: &Row, confidence: f64) -> CompareRow {
    CompareRow {
        benchmark: r.benchmark.clone(),
        parameters: r.parameters.clone(),
        key: r.key(),
        metric: r.metric,
        unit: r.metric.unit().to_string(),
        better: r.metric.direction(),
        gating: r.gating,
        baseline_median: num(r.baseline_median),
        candidate_median: num(r.candidate_median),
        n_baseline: r.n_baseline,
        n_candidate: r.n_candidate,
        change: r.change.as_ref().map(|c| RelativeChange {
            change: num(c.change),
            ci_low: num(c.ci.lo),
            ci_high: num(c.ci.hi),
            confidence,
            resamples: c.resamples,
        }),
        p_value: r.p_value.and_then(num),
        p_adjusted: r.p_adjusted.and_then(num),
        verdict: r.verdict,
        notes: r.notes.clone(),
        band: num(r.band),
        noise: r.noise.as_ref().map(|n| CompareNoise {
            sd: n.sd,
            one_run: n.one_run(),
            runs: n.runs,
            source: n.source.clone(),
        }),
        time_functions: r
            .time_functions
            .iter()
            .map(|m| perfsleuth_model::schema::CompareTimeFunction {
                function: m.function.clone(),
                object: m.object.clone(),
                off_cpu: m.off_cpu.map(|r| r.word().to_string()),
                thread: m.thread.clone(),
                baseline_self_ns: m.baseline_self_ns,
                candidate_self_ns: m.candidate_self_ns,
                self_shift_ns: m.self_shift.shift,
                self_shift_low_ns: m.self_shift.ci.lo,
                self_shift_high_ns: m.self_shift.ci.hi,
                inclusive_shift_ns: m.inclusive_shift.shift,
                inclusive_shift_low_ns: m.inclusive_shift.ci.lo,
                inclusive_shift_high_ns: m.inclusive_shift.ci.hi,
                in_the_noise: m.in_the_noise(),
            })
            .collect(),
    }
}

/// Counts of rows by verdict, every verdict present (0 when none), then
/// the benchmarks not compared.
pub(crate) fn verdict_counts(c: &Comparison) -> Vec<(&'static str, usize)> {
    VerdictLabel::ALL
        .iter()
        .map(|v| {
            let n = match v {
                // A benchmark on one side only is never a row.
                VerdictLabel::NotCompared => c.unpaired_baseline.len() + c.unpaired_candidate.len(),
                v => c.rows.iter().filter(|r| r.verdict == *v).count(),
            };
            (v.as_str(), n)
        })
        .collect()
}

/// The comparison as its typed JSON document (`perfsleuth/compare`) with
/// every field of [`Comparison`] and [`Row`]; serialise it with
/// `perfsleuth_model::schema::to_json_pretty`.
pub fn to_json(c: &Comparison) -> CompareDoc {
    let mut summary = VerdictCounts::default();
    for r in &c.rows {
        summary.add(r.verdict);
    }
    for _ in c.unpaired_baseline.iter().chain(&c.unpaired_candidate) {
        summary.add(VerdictLabel::NotCompared);
    }
    CompareDoc {
        schema: SCHEMA.to_string(),
        schema_version: SCHEMA_VERSION,
        baseline: c.baseline.clone(),
        candidate: c.candidate.clone(),
        identity_changed: c.identity_changed,
        env_changes: c
            .env_changes
            .iter()
            .map(|ch| CompareEnvChange {
                key: ch.key.clone(),
                class: ch.class,
                before: ch.before.clone(),
                after: ch.after.clone(),
                summary: ch.summary.clone(),
                why: ch.why.to_string(),
            })
            .collect(),
        fdr_applied: c.fdr_applied,
        fdr_comparisons: c.fdr_comparisons(),
        rows: c.rows.iter().map(|r| row_doc(r, c.confidence)).collect(),
        unpaired_baseline: c.unpaired_baseline.clone(),
        unpaired_candidate: c.unpaired_candidate.clone(),
        notes: c.notes.clone(),
        summary,
        any_gating_regression: any_gating_regression(c),
        ab: None,
    }
}
