//! Where a judged change sits: in simulation the functions whose counted
//! cost moved; with `--profile` the differential flame graphs and the
//! functions whose time moved; with allocation profiles the functions that
//! allocate more.

use crate::Context;
use crate::allocs;
use crate::outcome::{FUNCTIONS_SHOWN, Flame, Row, changed};
use crate::portable::{function_attribution, function_moves};
use crate::sides::Entries;
use crate::stacks::{self, time_attribution, time_moves};
use perfsleuth_model::{Metric, Profile};
use std::collections::HashSet;

/// Simulation: which functions the change of a counted event is in.
pub(crate) fn counted_functions<'a>(ctx: &Context<'a, '_>, rows: &mut [Row]) {
    let (base_entries, cand_entries) = (&ctx.base, &ctx.cand);
    for row in rows.iter_mut() {
        let (Metric::Counter(c), Some(change)) = (row.metric, &row.change) else {
            continue;
        };
        if !c.is_simulated() || change.change == 0.0 || c.key == "est_cycles" {
            continue;
        }
        let profile = |entries: &Entries<'a>| -> Option<&'a Profile> { entries.of(row)?.profile };
        if let (Some(b), Some(cp)) = (profile(base_entries), profile(cand_entries))
            && let Some((total, mut moved)) = function_moves(b, cp, c.key)
        {
            if let Some(note) = function_attribution(total, &moved, c.key, change.change) {
                row.notes.push(note);
            }
            moved.truncate(FUNCTIONS_SHOWN);
            row.functions = moved;
        }
    }
}

/// A differential flame graph per wall-time row both sides profiled.
pub(crate) fn flames(ctx: &Context<'_, '_>, rows: &[Row]) -> Vec<Flame> {
    let (base_entries, cand_entries) = (&ctx.base, &ctx.cand);
    let mut flames = Vec::new();
    for row in rows {
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
    flames
}

/// Wall and CPU time: which functions a judged change is in (`--profile`).
pub(crate) fn timed_functions(ctx: &Context<'_, '_>, rows: &mut [Row]) {
    let opts = ctx.opts;
    let (base_entries, cand_entries) = (&ctx.base, &ctx.cand);
    // The one time row a benchmark's attribution goes on: its gating one
    // (CPU time for a program judged on it), else wall time.
    let gating_time: HashSet<String> = rows
        .iter()
        .filter(|r| r.gating && matches!(r.metric, Metric::Wall | Metric::Cpu))
        .map(Row::key)
        .collect();
    for row in rows.iter_mut() {
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
}

/// Allocations: which functions a judged change of bytes or count is in.
pub(crate) fn allocating_functions(ctx: &Context<'_, '_>, rows: &mut [Row]) {
    let opts = ctx.opts;
    let (base_entries, cand_entries) = (&ctx.base, &ctx.cand);
    for row in rows.iter_mut() {
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
}
