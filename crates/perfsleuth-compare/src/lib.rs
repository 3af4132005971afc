//! `perfsleuth compare`: pairs the benchmarks of a baseline and a candidate,
//! states for every benchmark and metric whether it changed (relative change
//! of the median with a bootstrap CI, a rank-test p-value, the verdict rule),
//! attributes changes to the environment where the machines differ, and
//! renders the result for a terminal, a pull request (Markdown) or a program
//! (JSON).
//!
//! Everything here is pure: the caller loads the runs, this crate never
//! touches the store, the clock or the terminal.

#![forbid(unsafe_code)]

mod advice;
mod allocs;
mod estimate;
mod format;
mod html;
mod json;
mod junit;
mod noise;
mod options;
mod outcome;
mod portable;
mod render;
mod sides;
mod stacks;

use advice::*;
use estimate::*;
pub use noise::*;
pub use options::*;
pub use outcome::*;
use portable::*;
pub use sides::*;

pub use html::{changes_chart, render_html};
pub use json::{SCHEMA, SCHEMA_VERSION, to_json};
pub use junit::render_junit;
pub use render::{render_github_annotations, render_markdown, render_terminal};
pub use stacks::{TimeMove, time_attribution, time_moves};

use perfsleuth_env::Change;
pub use perfsleuth_model::schema::VerdictLabel;
use perfsleuth_model::{ImpactClass, Metric, Profile, Sample};
use perfsleuth_stats::{
    Evidence, Interval, RelativeChange, Verdict, bh_adjusted, decide, smallest_p,
};
use std::collections::HashSet;
/// Compares `candidate` against `baseline`: pairs benchmarks by name and
/// parameters, computes a row per paired benchmark and metric, and
/// attributes changes to the environment where the machines differ.
pub fn compare<'a>(baseline: &'a Side, candidate: &'a Side, opts: &Options) -> Comparison {
    let sim_opts;
    let together = !opts.paired && measured_together(baseline, candidate);
    // The look `ab` stopped at, where it went on measuring (the same
    // level as its own verdict).
    let look = together
        .then(|| candidate.runs.first().and_then(perfsleuth_summary::look_of))
        .flatten();
    let full_alpha = opts.rule.alpha;
    let opts = if together {
        sim_opts = paired(opts).at_look(look);
        &sim_opts
    } else if simulated(baseline) && simulated(candidate) {
        sim_opts = simulation_options(opts);
        &sim_opts
    } else if scale_sweep(baseline) && scale_sweep(candidate) {
        sim_opts = scale_options(opts);
        &sim_opts
    } else {
        opts
    };
    // Both sides allocation-profiled: their counts are shown beside time.
    let alloc_opts;
    let opts = if [baseline, candidate]
        .iter()
        .all(|side| allocation_profiled(side))
    {
        alloc_opts = with_allocation_metrics(opts);
        &alloc_opts
    } else {
        opts
    };
    let base_entries = collect(baseline);
    let cand_entries = collect(candidate);
    // Sides made wholly of imported runs, whose zeros may be "not measured".
    let imported = [baseline, candidate].map(|side| {
        !side.runs.is_empty()
            && side
                .runs
                .iter()
                .all(|r| r.origin() == perfsleuth_model::RunOrigin::Import)
    });
    let mut notes = Vec::new();
    side_notes("baseline", baseline, &mut notes);
    side_notes("candidate", candidate, &mut notes);
    if let Some(n) = origin_note(baseline, candidate) {
        notes.push(n);
    }
    if together {
        notes.push(
            "the two runs were measured interleaved (one `perfsleuth ab`): judged paired by adjacent runs, as `ab` judged them, without the between-run noise band"
                .to_string(),
        );
        notes.extend(look_note(look, full_alpha));
    }

    // The environment diff, newest run against newest run.
    let env_changes: Vec<Change> = match (newest(baseline), newest(candidate)) {
        (Some(b), Some(c)) => {
            let changes = perfsleuth_env::diff(&counted_env(b), &counted_env(c));
            let changes = portable_context(b, c, changes, &mut notes);
            changes
                .into_iter()
                .filter(|c| c.class != ImpactClass::Context)
                .collect()
        }
        _ => Vec::new(),
    };
    let identity_changed = env_changes.iter().any(|c| c.class == ImpactClass::Identity);
    let perf_keys: Vec<String> = env_changes
        .iter()
        .filter(|c| c.class == ImpactClass::Performance)
        .map(|c| c.key.clone())
        .collect();

    let unpaired_baseline: Vec<String> = base_entries
        .list
        .iter()
        .filter(|e| cand_entries.find(e.name, e.parameters).is_none())
        .map(|e| benchmark_key(e.name, e.parameters))
        .collect();
    let unpaired_candidate: Vec<String> = cand_entries
        .list
        .iter()
        .filter(|e| base_entries.find(e.name, e.parameters).is_none())
        .map(|e| benchmark_key(e.name, e.parameters))
        .collect();

    // Rows with their statistics, in candidate order.
    let mut rows: Vec<Row> = Vec::new();
    // Beside each row, what its verdict is decided from.
    let mut facts: Vec<RowFacts> = Vec::new();
    let mut failed_notes: Vec<String> = Vec::new();
    let mut paired = 0usize;
    for ce in &cand_entries.list {
        let Some(bi) = base_entries.find(ce.name, ce.parameters) else {
            continue;
        };
        let be = &base_entries.list[bi];
        paired += 1;
        let key = benchmark_key(ce.name, ce.parameters);
        let overrides = opts.per_benchmark.get(ce.name);
        let named = overrides.and_then(|o| o.metrics.as_deref());
        let mut gating: Vec<Metric> = named.unwrap_or(&opts.gating).to_vec();
        let mut judged_note = None;
        if opts.judge_time && named.is_none() && gating.contains(&Metric::Wall) {
            let flat = |e: &Entry<'a>| e.groups.iter().flatten().copied().collect::<Vec<_>>();
            let judged = perfsleuth_model::judged_time(&flat(be), &flat(ce));
            if judged.metric == Metric::Cpu {
                for m in gating.iter_mut().filter(|m| **m == Metric::Wall) {
                    *m = Metric::Cpu;
                }
            }
            judged_note = Some((judged.metric, judged.sentence()));
        }
        let gating = gating.as_slice();
        let mut metrics: Vec<Metric> = Vec::new();
        for &m in opts.metrics.iter().chain(gating) {
            push_unique(&mut metrics, m);
        }
        let failed =
            |groups: &[Vec<&Sample>]| groups.iter().flatten().filter(|s| !s.succeeded()).count();
        let (fb, fc) = (failed(&be.groups), failed(&ce.groups));
        if fb + fc > 0 {
            failed_notes.push(format!(
                "{key}: {fb} baseline and {fc} candidate samples exited unsuccessfully and are included"
            ));
        }
        // A metric neither side recorded at all (a summary-only import
        // has no user or system time; criterion and pytest-benchmark
        // samples carry zeros for CPU time and peak RSS, which their tools
        // never measured) is no row, unless it gates.
        let recorded = |e: &Entry<'_>, imported: bool, metric: Metric| {
            e.groups
                .iter()
                .flatten()
                .any(|s| !imported || metric.of(s) != 0.0)
                || e.summaries.iter().any(|s| s.metric == metric.name())
        };
        let metrics: Vec<Metric> = metrics
            .into_iter()
            .filter(|&m| {
                gating.contains(&m) || recorded(be, imported[0], m) || recorded(ce, imported[1], m)
            })
            .collect();
        // Each metric bootstraps on its own seed: measured on all CPUs, the
        // numbers are those of one (docs/PERFORMANCE.md, "compare").
        let measured = par_map(&metrics, |&metric| {
            let seed = perfsleuth_stats::SEED ^ fnv1a(&[&key, metric.name()]);
            match summary_sides(be, ce, metric) {
                Some((bs, cs)) => measure_summaries(&bs, &cs, metric, opts),
                None => (
                    measure(&be.groups, &ce.groups, metric, opts, seed),
                    SummaryKind::None,
                ),
            }
        });
        for (metric, (m, kind)) in metrics.into_iter().zip(measured) {
            facts.push(RowFacts {
                exact: m.exact,
                windows: (be.windows, ce.windows),
                spread: m.spread,
                cpu: m.cpu,
                kind,
            });
            let mut m = m;
            if let Some((judged, sentence)) = &judged_note {
                if metric == *judged {
                    m.notes.insert(0, sentence.clone());
                } else if metric == Metric::Wall {
                    m.notes.insert(
                        0,
                        "shown beside the judged CPU time; wall time does not gate this benchmark"
                            .to_string(),
                    );
                }
            }
            if let Some(n) = m.pairs
                && gating.contains(&metric)
            {
                m.notes.push(format!(
                    "paired: the change is the median of the {n} adjacent runs' ratios, its interval the sign test's, widened for neighbouring pairs that move together"
                ));
            }
            rows.push(Row {
                benchmark: ce.name.to_string(),
                parameters: ce.parameters.clone(),
                metric,
                gating: gating.contains(&metric),
                baseline_median: m.baseline_median,
                candidate_median: m.candidate_median,
                n_baseline: m.n_baseline,
                n_candidate: m.n_candidate,
                change: m.change,
                p_value: m.p_value,
                p_adjusted: None,
                verdict: VerdictLabel::InsufficientData,
                notes: m.notes,
                band: 0.0,
                noise: None,
                functions: Vec::new(),
                time_functions: Vec::new(),
            });
        }
    }
    notes.extend(failed_notes);

    // Benjamini–Hochberg over the gating p-values of all paired benchmarks.
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

    // Children report at least the spawner's own peak RSS (recorded per run);
    // two medians at their floors say nothing about the programs.
    let floor = |side: &Side| {
        newest(side)
            .and_then(|r| r.environment.get("measure.peak_rss_floor_bytes"))
            .and_then(|v| v.parse::<f64>().ok())
    };
    let (floor_b, floor_c) = (floor(baseline), floor(candidate));
    let at_floor =
        |median: f64, floor: Option<f64>| floor.is_some_and(|f| f > 0.0 && median <= f * 1.02);

    let prior = newest(candidate)
        .or_else(|| newest(baseline))
        .map(|r| prior_noise(&r.environment));
    let throughput = Metric::parse("throughput");

    // Verdicts and attribution.
    for (row, f) in rows.iter_mut().zip(&facts) {
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
            continue;
        }
        if enough && let Some(why) = below_resolution(row) {
            row.verdict = VerdictLabel::InsufficientData;
            row.notes.push(why);
            continue;
        }
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
        // The bootstrap interval before the between-run noise widened it.
        let mut sampled_ci: Option<Interval> = None;
        if !exact {
            let key = row.key();
            let history = opts.history.get(&key);
            let drifts = matches!(
                row.metric,
                Metric::Wall | Metric::Cpu | Metric::User | Metric::Sys
            ) || Some(row.metric) == throughput;
            let assumed = prior
                .clone()
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
        }
        let mut p = row.p_value.unwrap_or(f64::NAN);
        if fdr_applied && row.gating {
            // Adjusted p-values are held to the stricter of alpha and q.
            p = row.p_adjusted.unwrap_or(f64::NAN);
            if let Some(q) = opts.fdr_q {
                rule.alpha = rule.alpha.min(q);
            }
        }
        let direction = stats_direction(row.metric);
        let verdict = match &row.change {
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
                &rule,
                &Evidence::Bands {
                    change: change.change,
                    band,
                },
                direction,
            ),
            Some(_) if kind == SummaryKind::Point => Verdict::InsufficientData,
            Some(change) if exact => decide(&rule, &Evidence::Exact(change.change), direction),
            Some(change) => decide(
                &rule,
                &Evidence::Sampled {
                    change,
                    p_value: p,
                    n_baseline: row.n_baseline,
                    n_candidate: row.n_candidate,
                },
                direction,
            ),
            None => Verdict::InsufficientData,
        };
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
                    rule,
                    row.n_baseline.min(row.n_candidate),
                ));
            }
        }
        let mut verdict = verdict;
        if matches!(verdict, Verdict::Regressed | Verdict::Improved)
            && let (Some(cpu), Some(change)) = (cpu, &row.change)
            && let Some(why) = cpu.explains(change.change, rule.noise_threshold)
        {
            verdict = Verdict::Inconclusive;
            row.notes.push(why);
        }
        row.verdict = label(verdict);
    }
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
    let changed = |v: VerdictLabel| matches!(v, VerdictLabel::Regressed | VerdictLabel::Improved);
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
                list_keys(&perf_keys, 4)
            ));
        }
    }

    // Simulation: which functions the change of a counted event is in.
    for row in &mut rows {
        let (Metric::Counter(c), Some(change)) = (row.metric, &row.change) else {
            continue;
        };
        if !c.is_simulated() || change.change == 0.0 || c.key == "est_cycles" {
            continue;
        }
        let profile = |entries: &Entries<'a>| -> Option<&'a Profile> { entries.of(row)?.profile };
        if let (Some(b), Some(cp)) = (profile(&base_entries), profile(&cand_entries))
            && let Some((total, mut moved)) = function_moves(b, cp, c.key)
        {
            if let Some(note) = function_attribution(total, &moved, c.key, change.change) {
                row.notes.push(note);
            }
            moved.truncate(FUNCTIONS_SHOWN);
            row.functions = moved;
        }
    }

    // Wall and CPU time: which functions a judged change is in (`--profile`).
    let mut flames = Vec::new();
    for row in &rows {
        if row.metric != Metric::Wall {
            continue;
        }
        let (b, c) = (base_entries.stacks_of(row), cand_entries.stacks_of(row));
        if !b.is_empty() && !c.is_empty() {
            let samples = perfsleuth_report::in_samples(&b) || perfsleuth_report::in_samples(&c);
            flames.push(Flame {
                key: row.key(),
                before: perfsleuth_report::folded_per_run(&b, samples),
                after: perfsleuth_report::folded_per_run(&c, samples),
                unit: perfsleuth_report::flame_unit(samples),
            });
        }
    }
    // The one time row a benchmark's attribution goes on: its gating one
    // (CPU time for a program judged on it), else wall time.
    let gating_time: HashSet<String> = rows
        .iter()
        .filter(|r| r.gating && matches!(r.metric, Metric::Wall | Metric::Cpu))
        .map(Row::key)
        .collect();
    for row in &mut rows {
        let time = matches!(row.metric, Metric::Wall | Metric::Cpu);
        let Some(change) = row.change.as_ref().filter(|_| time) else {
            continue;
        };
        if !changed(row.verdict) || (!row.gating && gating_time.contains(&row.key())) {
            continue;
        }
        let (b, c) = (base_entries.stacks_of(row), cand_entries.stacks_of(row));
        match (b.is_empty(), c.is_empty()) {
            (true, true) => continue,
            (true, false) | (false, true) => {
                row.notes.push(format!(
                    "only the {} was profiled: profile both sides (--profile) to see which functions the change is in",
                    if b.is_empty() { "candidate" } else { "baseline" }
                ));
                continue;
            }
            (false, false) => {}
        }
        match time_moves(&b, &c, opts.confidence(), row.metric == Metric::Cpu) {
            Some(found) => {
                // CPU time: shares of its change. Wall time with a wall
                // profile of one thread (its time on and off the CPU is the
                // wall time, to a tenth): shares of the wall change; of
                // several threads, shares of their time's change. Wall time
                // with on-CPU profiles: shares of the change of the time on
                // CPU the samples saw.
                let one_thread = (found.baseline_profiled_ns / row.baseline_median - 1.0).abs()
                    < 0.1;
                let note = if row.metric == Metric::Cpu
                    || (row.metric == Metric::Wall && found.off_cpu && one_thread)
                {
                    time_attribution(
                        &found.moves,
                        row.metric.name(),
                        row.candidate_median - row.baseline_median,
                        change.change,
                    )
                } else if found.off_cpu {
                    time_attribution(
                        &found.moves,
                        stacks::THREADS,
                        found.profiled.shift,
                        change.change,
                    )
                } else {
                    time_attribution(
                        &found.moves,
                        stacks::ON_CPU,
                        found.profiled.shift,
                        change.change,
                    )
                };
                row.notes.extend(note);
                let mut moves = found.moves;
                moves.truncate(FUNCTIONS_SHOWN);
                row.time_functions = moves;
            }
            None => row.notes.push(format!(
                "profiled, but with fewer than {} runs a side or without sampling periods (an imported profile is one run; folded stacks have no times): no interval to say which functions the change is in; see the differential flame graph (`perfsleuth report`)",
                stacks::MIN_PROFILED_RUNS
            )),
        }
    }

    // Allocations: which functions a judged change of bytes or count is in.
    for row in &mut rows {
        let what = match row.metric {
            Metric::Counter(c) if c.key == "alloc_bytes" => allocs::AllocWhat::Bytes,
            Metric::Counter(c) if c.key == "alloc_count" => allocs::AllocWhat::Count,
            _ => continue,
        };
        if !changed(row.verdict) {
            continue;
        }
        let (b, c) = (base_entries.allocs_of(row), cand_entries.allocs_of(row));
        if b.is_empty() || c.is_empty() {
            continue;
        }
        let shift = row.candidate_median - row.baseline_median;
        match allocs::alloc_attribution(&b, &c, what, shift, opts.confidence()) {
            Some(note) => row.notes.push(note),
            None => row.notes.push(format!(
                "allocation-profiled, but with fewer than {} runs a side: no interval to say which functions the change is in",
                stacks::MIN_PROFILED_RUNS
            )),
        }
    }

    Comparison {
        baseline: baseline.label.clone(),
        candidate: candidate.label.clone(),
        env_changes,
        identity_changed,
        rows,
        flames,
        unpaired_baseline,
        unpaired_candidate,
        fdr_applied,
        notes,
        confidence: opts.confidence(),
    }
}

#[cfg(test)]
mod tests;
