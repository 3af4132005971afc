//! Judging each row: its rule (the benchmark's own alpha and threshold),
//! the between-run noise its interval must leave, the verdict, what would
//! decide an inconclusive one; then whether the machine, not the code,
//! explains what moved.

use crate::Context;
use crate::advice::{below_resolution, interleave_advice, noise_note, what_would_decide};
use crate::estimate::{RowFacts, SummaryKind, stats_direction};
use crate::noise::{Noise, common_step, history_noise, prior_noise};
use crate::outcome::{Row, SAME_BINARY_NOTE, changed, label};
use crate::sides::{Side, binary_hash, list_keys, newest};
use perfsleuth_model::schema::VerdictLabel;
use perfsleuth_model::{Metric, Sample};
use perfsleuth_stats::{
    Evidence, Interval, RelativeChange, Verdict, VerdictRule, bh_adjusted, decide, smallest_p,
};

/// Benjamini–Hochberg over the gating p-values of all paired benchmarks,
/// where asked and more than one is paired; whether it was applied.
pub(crate) fn adjust_p_values(rows: &mut [Row], opts: &crate::Options, paired: usize) -> bool {
    let fdr_applied = opts.fdr_q.is_some() && paired > 1;
    if fdr_applied {
        let idx: Vec<usize> = (0..rows.len()).filter(|&i| rows[i].gating).collect();
        let ps: Vec<f64> = idx
            .iter()
            .map(|&i| rows[i].p_value.unwrap_or(f64::NAN))
            .collect();
        for (&i, adj) in idx.iter().zip(bh_adjusted(&ps)) {
            rows[i].p_adjusted = adj.is_finite().then_some(adj);
        }
    }
    fdr_applied
}

/// Gives each row its verdict and the notes that explain it.
pub(crate) fn judge_rows(
    ctx: &Context<'_, '_>,
    rows: &mut [Row],
    facts: &[RowFacts],
    fdr_applied: bool,
) {
    let (baseline, candidate) = (ctx.baseline, ctx.candidate);
    // Children report at least the spawner's own peak RSS (recorded per run);
    // two medians at their floors say nothing about the programs.
    let floor = |side: &Side| {
        newest(side)
            .and_then(|r| r.environment.get("measure.peak_rss_floor_bytes"))
            .and_then(|v| v.parse::<f64>().ok())
    };
    let (floor_b, floor_c) = (floor(baseline), floor(candidate));
    let prior = newest(candidate)
        .or_else(|| newest(baseline))
        .map(|r| prior_noise(&r.environment));

    // Each row is judged from its own facts and what is only read here, so
    // rows are judged in parallel (100 000 rows took half a second alone).
    crate::estimate::par_each_mut(rows, |i, row| {
        judge_row(
            ctx,
            row,
            &facts[i],
            fdr_applied,
            (floor_b, floor_c),
            prior.as_ref(),
        );
        // A note's text was formatted into up to twice its room.
        row.notes.iter_mut().for_each(String::shrink_to_fit);
    });
}

/// One row's verdict and why, as [`judge_rows`] describes.
fn judge_row(
    ctx: &Context<'_, '_>,
    row: &mut Row,
    f: &RowFacts,
    fdr_applied: bool,
    (floor_b, floor_c): (Option<f64>, Option<f64>),
    prior: Option<&Noise>,
) {
    let opts = ctx.opts;
    let at_floor =
        |median: f64, floor: Option<f64>| floor.is_some_and(|f| f > 0.0 && median <= f * 1.02);
    {
        let RowFacts {
            exact,
            windows: (wb, wc),
            spread,
            cpu,
            kind,
        } = *f;
        let enough =
            row.n_baseline >= opts.rule.min_samples && row.n_candidate >= opts.rule.min_samples;
        if row.metric == Metric::PeakRss
            && enough
            && at_floor(row.baseline_median, floor_b)
            && at_floor(row.candidate_median, floor_c)
        {
            row.verdict = VerdictLabel::NoChange;
            row.notes.push(
                "both at the measurement floor of peak RSS: the programs are smaller than it"
                    .to_string(),
            );
            return;
        }
        if enough && let Some(why) = below_resolution(row) {
            row.verdict = VerdictLabel::InsufficientData;
            row.notes.push(why);
            return;
        }
        let mut rule = rule_for(opts, row);
        // The bootstrap interval before the between-run noise widened it.
        let sampled_ci = if exact {
            None
        } else {
            widen_by_noise(row, opts, prior, spread, (wb, wc))
        };
        let mut p = row.p_value.unwrap_or(f64::NAN);
        if fdr_applied && row.gating {
            // Adjusted p-values are held to the stricter of alpha and q.
            p = row.p_adjusted.unwrap_or(f64::NAN);
            if let Some(q) = opts.fdr_q {
                rule.alpha = rule.alpha.min(q);
            }
        }
        let verdict = verdict_of(row, kind, exact, &rule, p);
        why_undecided(ctx, row, verdict, f, &rule, p, sampled_ci);
        let mut verdict = verdict;
        // Measured interleaved, run by run, the machine cannot keep one
        // side from the CPU and not the other: the sides' difference is the
        // programs' (a longer sleep waits as often, on less of a CPU).
        if matches!(verdict, Verdict::Regressed | Verdict::Improved)
            && !opts.paired
            && let (Some(cpu), Some(change)) = (cpu, &row.change)
            && let Some(why) = cpu.explains(change.change, rule.noise_threshold)
        {
            verdict = Verdict::Inconclusive;
            row.notes.push(why);
        }
        row.verdict = label(verdict);
    }
}

/// The rule a row is judged by: the comparison's, with its benchmark's own
/// alpha and threshold where given.
fn rule_for(opts: &crate::Options, row: &Row) -> VerdictRule {
    let o = opts.per_benchmark.get(&row.benchmark);
    let mut rule = opts.rule;
    if let Some(a) = o.and_then(|o| o.alpha) {
        rule.alpha = a;
    }
    if let Some(t) = o.and_then(|o| o.threshold) {
        // A benchmark's own threshold applies as given.
        rule.noise_threshold = t;
        rule.no_change_within = 0.0;
    }
    rule
}

/// Widens a row's interval by the between-run noise its history (or the
/// machine class's prior) shows, and returns the interval the samples
/// alone gave.
fn widen_by_noise(
    row: &mut Row,
    opts: &crate::Options,
    prior: Option<&Noise>,
    spread: f64,
    (wb, wc): (f64, f64),
) -> Option<Interval> {
    let throughput = Metric::parse("throughput");
    let mut sampled_ci: Option<Interval> = None;
    let key = row.key();
    let history = opts.history.get(&key);
    let drifts = matches!(
        row.metric,
        Metric::Wall | Metric::Cpu | Metric::User | Metric::Sys
    ) || Some(row.metric) == throughput;
    let assumed = prior
        .cloned()
        .filter(|_| opts.prior && drifts)
        .map(|p| p.at_least(spread));
    let runs: &[Vec<Sample>] = history.map(Vec::as_slice).unwrap_or_default();
    let noise = history_noise(runs, row.metric, assumed);
    if let Some(noise) = noise {
        let band = noise.band(wb, wc);
        if row.gating {
            row.notes.push(noise_note(
                &key,
                &noise,
                (history.map_or(0, Vec::len), opts.history_declined),
                band,
                (wb, wc),
            ));
        }
        // Two runs of the same program differ by up to `band` on
        // their own: the interval of the change is at least that
        // wide around it, and it is this interval the rule judges
        // and the report prints.
        if let Some(change) = row.change.as_mut() {
            sampled_ci = Some(change.ci);
            change.ci.lo = change.ci.lo.min(change.change - band);
            change.ci.hi = change.ci.hi.max(change.change + band);
        }
        row.band = band;
        row.noise = Some(noise);
    }
    sampled_ci
}

/// The rule's verdict on a row's change, by how it was measured: sampled,
/// exact counts, or a tool's summary bounds.
fn verdict_of(row: &Row, kind: SummaryKind, exact: bool, rule: &VerdictRule, p: f64) -> Verdict {
    let direction = stats_direction(row.metric);
    match &row.change {
        // Bounds wider than the threshold that hold the change cannot
        // show it is absent either: that is not "no change".
        Some(change)
            if let SummaryKind::Bands(band) = kind
                && band > rule.noise_threshold
                && change.change.abs() <= band =>
        {
            Verdict::Inconclusive
        }
        Some(change) if let SummaryKind::Bands(band) = kind => decide(
            rule,
            &Evidence::Bands {
                change: change.change,
                band,
            },
            direction,
        ),
        Some(_) if kind == SummaryKind::Point => Verdict::InsufficientData,
        Some(change) if exact => decide(rule, &Evidence::Exact(change.change), direction),
        Some(change) => decide(
            rule,
            &Evidence::Sampled {
                change,
                p_value: p,
                n_baseline: row.n_baseline,
                n_candidate: row.n_candidate,
            },
            direction,
        ),
        None => Verdict::InsufficientData,
    }
}

/// Says what keeps a row from a decision: too few samples to reach
/// significance, or, for an inconclusive one, the noise band or the runs
/// that would decide it.
fn why_undecided(
    ctx: &Context<'_, '_>,
    row: &mut Row,
    verdict: Verdict,
    facts: &RowFacts,
    rule: &VerdictRule,
    p: f64,
    sampled_ci: Option<Interval>,
) {
    let (kind, exact) = (facts.kind, facts.exact);
    let (baseline, candidate) = (ctx.baseline, ctx.candidate);
    let (base_entries, cand_entries) = (&ctx.base, &ctx.cand);
    // With few samples the rank test cannot reach significance at all
    // (3 vs 3: p ≥ 0.10): say so instead of calling a large change "no change".
    let best_p = smallest_p(row.n_baseline, row.n_candidate);
    let judged_by_samples = matches!(kind, SummaryKind::None | SummaryKind::Welch);
    if !exact && judged_by_samples && row.change.is_some() && best_p > rule.alpha {
        row.notes.push(format!(
            "{} vs {} samples cannot show significance at α = {} (the smallest possible p is {best_p:.2}): measure more runs",
            row.n_baseline, row.n_candidate, rule.alpha
        ));
    } else if verdict == Verdict::Inconclusive
        && judged_by_samples
        && let Some(change) = &row.change
    {
        let t = rule.noise_threshold;
        let decided_by_samples =
            sampled_ci.is_some_and(|ci| ci.lo > t || ci.hi < -t || (ci.lo >= -t && ci.hi <= t));
        // The between-run band does not narrow with more runs of one
        // invocation: where it alone reaches across the threshold edge
        // nearest the change, only measuring both sides interleaved decides.
        let room = (change.change.abs() - t).abs();
        if row.band > 0.0 && row.band >= room {
            // Worked out only for the rows that need it: it reads every sample.
            let advice = match (base_entries.of(row), cand_entries.of(row)) {
                (Some(be), Some(ce)) => {
                    interleave_advice(baseline, candidate, be, ce, rule.noise_threshold)
                }
                _ => String::new(),
            };
            row.notes.push(format!(
                "inconclusive: two separate runs of one program differ by up to ±{:.1}% here, more than the change ({:+.1}%) lies from the ±{:.1}% threshold, and no number of runs in one invocation narrows that; {advice}",
                100.0 * row.band,
                100.0 * change.change,
                100.0 * t
            ));
        } else if decided_by_samples {
            row.notes.push(format!(
                "inconclusive: the samples alone would decide, but the change ({:+.1}%) is within the ±{:.1}% two such runs differ by on their own; more runs of each side (or same-binary runs of the baseline, `perfsleuth run --repeat 5`) decide it",
                100.0 * change.change,
                100.0 * row.band
            ));
        } else {
            // More runs narrow the sampled interval, not the band.
            let sampled = RelativeChange {
                ci: sampled_ci.unwrap_or(change.ci),
                ..change.clone()
            };
            row.notes.push(what_would_decide(
                &sampled,
                p,
                *rule,
                row.n_baseline.min(row.n_candidate),
            ));
        }
    }
}

/// Byte-identical programs on both sides: a change cannot come from the
/// code, and several that moved alike are one step of the machine; where
/// the machines differ, the verdicts say so.
pub(crate) fn machine_or_code(
    ctx: &Context<'_, '_>,
    rows: &mut [Row],
    notes: &mut Vec<String>,
    identity_changed: bool,
    perf_keys: &[String],
) {
    let opts = ctx.opts;
    let (base_entries, cand_entries) = (&ctx.base, &ctx.cand);
    // Same binary on both sides: a change cannot come from the code. Judged
    // per benchmark on its gating verdicts, before any environment override.
    let same_binary = |row: &Row| -> bool {
        let (b, c) = (base_entries.of(row), cand_entries.of(row));
        let same_args = matches!((b, c), (Some(x), Some(y)) if x.argv == y.argv);
        match (
            b.and_then(|e| binary_hash(e.facts)),
            c.and_then(|e| binary_hash(e.facts)),
        ) {
            (Some(x), Some(y)) => x == y && same_args,
            _ => false,
        }
    };
    let flags: Vec<bool> = rows
        .iter()
        .map(|r| r.gating && changed(r.verdict) && same_binary(r))
        .collect();
    // Several byte-identical programs that all moved the same way by a
    // similar amount: one step of the machine, not of the code.
    let steps: Vec<f64> = rows
        .iter()
        .zip(&flags)
        .filter(|(_, same)| **same)
        .filter_map(|(r, _)| r.change.as_ref().map(|c| c.change))
        .collect();
    let common = common_step(&steps);
    let common_step = common.is_some();
    if let Some((lo, hi)) = common {
        notes.push(format!(
            "{} benchmarks whose programs are byte-identical on both sides all moved {:+.1}% … {:+.1}%: one common step — the machine, not the code; not judged",
            steps.len(),
            100.0 * lo,
            100.0 * hi
        ));
    }
    for (row, same) in rows.iter_mut().zip(flags) {
        if same && common_step {
            row.verdict = VerdictLabel::Inconclusive;
            row.notes.push(
                "moved with the other byte-identical benchmarks: the machine's step (see the notes)"
                    .to_string(),
            );
        }
        if same {
            row.notes.push(SAME_BINARY_NOTE.to_string());
        }
        if identity_changed && opts.machine_override {
            if changed(row.verdict) {
                row.notes.push(format!(
                    "statistically {}, but the machines differ",
                    row.verdict
                ));
            }
            row.verdict = VerdictLabel::EnvironmentChanged;
        } else if !perf_keys.is_empty() && changed(row.verdict) {
            row.notes.push(format!(
                "possibly environmental: {}",
                list_keys(perf_keys, 4)
            ));
        }
    }
}
