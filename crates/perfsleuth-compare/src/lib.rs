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
mod attribute;
mod estimate;
mod format;
mod html;
mod json;
mod judge;
mod junit;
mod noise;
mod options;
mod outcome;
mod portable;
mod render;
mod sides;
mod stacks;

use estimate::*;
pub use noise::*;
pub use options::*;
pub use outcome::*;
use portable::*;
pub use sides::*;

pub use html::{changes_chart, render_html};
pub use json::{SCHEMA, SCHEMA_VERSION, to_json};
pub use junit::render_junit;
pub use render::{render_github_annotations, render_markdown, render_terminal, write_terminal};
pub use stacks::{TimeMove, time_attribution, time_moves};

use perfsleuth_env::Change;
use perfsleuth_model::ImpactClass;
pub use perfsleuth_model::schema::VerdictLabel;
use std::borrow::Cow;
/// What every stage of a comparison reads: the two sides, their
/// benchmarks by name and parameters, and the options in force.
pub(crate) struct Context<'a, 'o> {
    pub(crate) baseline: &'a Side,
    pub(crate) candidate: &'a Side,
    pub(crate) base: Entries<'a>,
    pub(crate) cand: Entries<'a>,
    pub(crate) opts: &'o Options,
}

/// Compares `candidate` against `baseline`: pairs benchmarks by name and
/// parameters, computes a row per paired benchmark and metric, and
/// attributes changes to the environment where the machines differ.
pub fn compare<'a>(baseline: &'a Side, candidate: &'a Side, opts: &Options) -> Comparison {
    let together = !opts.paired && measured_together(baseline, candidate);
    // The look `ab` stopped at, where it went on measuring (the same
    // level as its own verdict).
    let look = together
        .then(|| candidate.runs.first().and_then(perfsleuth_summary::look_of))
        .flatten();
    let mut notes = opening_notes(baseline, candidate, together, look, opts.rule.alpha);
    let opts = &options_in_force(baseline, candidate, opts, together, look);
    let ctx = Context {
        baseline,
        candidate,
        base: collect(baseline),
        cand: collect(candidate),
        opts,
    };
    let env_changes = environment_changes(baseline, candidate, &mut notes);
    let identity_changed = env_changes.iter().any(|c| c.class == ImpactClass::Identity);
    let perf_keys: Vec<String> = env_changes
        .iter()
        .filter(|c| c.class == ImpactClass::Performance)
        .map(|c| c.key.clone())
        .collect();

    let Estimated {
        mut rows,
        facts,
        failed_notes,
        paired,
    } = estimate_rows(&ctx, [baseline, candidate].map(imported_only));
    notes.extend(failed_notes);
    let fdr_applied = judge::adjust_p_values(&mut rows, opts, paired);
    judge::judge_rows(&ctx, &mut rows, &facts, fdr_applied);
    judge::machine_or_code(&ctx, &mut rows, &mut notes, identity_changed, &perf_keys);

    attribute::counted_functions(&ctx, &mut rows);
    let flames = attribute::flames(&ctx, &rows);
    attribute::timed_functions(&ctx, &mut rows);
    attribute::allocating_functions(&ctx, &mut rows);

    Comparison {
        baseline: baseline.label.clone(),
        candidate: candidate.label.clone(),
        env_changes,
        identity_changed,
        rows,
        flames,
        unpaired_baseline: unpaired(&ctx.base, &ctx.cand),
        unpaired_candidate: unpaired(&ctx.cand, &ctx.base),
        fdr_applied,
        notes,
        confidence: opts.confidence(),
    }
}

/// The options a comparison of these sides runs under: paired for two
/// sides measured together (at the look `ab` stopped at), simulation's and
/// scale sweeps' own, with allocation counts where both sides have them.
fn options_in_force<'o>(
    baseline: &Side,
    candidate: &Side,
    opts: &'o Options,
    together: bool,
    look: Option<u32>,
) -> Cow<'o, Options> {
    let mut o = if together {
        Cow::Owned(paired(opts).at_look(look))
    } else if simulated(baseline) && simulated(candidate) {
        Cow::Owned(simulation_options(opts))
    } else if scale_sweep(baseline) && scale_sweep(candidate) {
        Cow::Owned(scale_options(opts))
    } else {
        Cow::Borrowed(opts)
    };
    // Both sides allocation-profiled: their counts are shown beside time.
    if [baseline, candidate]
        .iter()
        .all(|side| allocation_profiled(side))
    {
        o = Cow::Owned(with_allocation_metrics(&o));
    }
    o
}

/// What is said of the sides before any row: where they came from, and
/// how two sides measured together are judged.
fn opening_notes(
    baseline: &Side,
    candidate: &Side,
    together: bool,
    look: Option<u32>,
    full_alpha: f64,
) -> Vec<String> {
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
    notes
}

/// The environment diff, newest run against newest run (context facts
/// left out; simulation's portable counts say which facts they follow).
fn environment_changes(baseline: &Side, candidate: &Side, notes: &mut Vec<String>) -> Vec<Change> {
    match (newest(baseline), newest(candidate)) {
        (Some(b), Some(c)) => {
            let changes = perfsleuth_env::diff(&counted_env(b), &counted_env(c));
            let changes = portable_context(b, c, changes, notes);
            changes
                .into_iter()
                .filter(|c| c.class != ImpactClass::Context)
                .collect()
        }
        _ => Vec::new(),
    }
}

/// A side made wholly of imported runs, whose zeros may be "not measured".
fn imported_only(side: &Side) -> bool {
    !side.runs.is_empty()
        && side
            .runs
            .iter()
            .all(|r| r.origin() == perfsleuth_model::RunOrigin::Import)
}

/// The benchmarks of `from` that `other` does not have.
fn unpaired(from: &Entries<'_>, other: &Entries<'_>) -> Vec<String> {
    from.list
        .iter()
        .filter(|e| other.find(e.name, e.parameters).is_none())
        .map(|e| benchmark_key(e.name, e.parameters))
        .collect()
}

#[cfg(test)]
mod tests;
