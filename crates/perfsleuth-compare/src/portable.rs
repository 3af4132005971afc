//! Simulation (portable counts): the environment that matters to counted
//! work, and which functions' cost moved.

use crate::outcome::FunctionMove;
use crate::sides::list_keys;
use crate::sides::machine_env;
use perfsleuth_env::Change;
use perfsleuth_model::Environment;
use perfsleuth_model::ImpactClass;
use perfsleuth_model::Mode;
use perfsleuth_model::Profile;
use perfsleuth_model::Run;
use std::collections::BTreeMap;

/// The run fact naming objects that execute CPUID (`perfsleuth_runner::CPUID_KEY`).
pub(crate) const CPUID_FACT: &str = "sim.cpuid_dispatch";

/// The machine facts of a run, with `sim.portable = off` for a simulation
/// run made before portable mode existed (it has no `sim.*` facts), so that
/// it does not compare as equal to a portable one: the counts were made
/// differently.
pub(crate) fn counted_env(run: &Run) -> Environment {
    let mut env = machine_env(&run.environment);
    if run.mode == Mode::Simulation && !env.facts.contains_key("sim.portable") {
        env.set("sim.portable", "off", ImpactClass::Identity);
    }
    env
}

/// Facts portable simulation counts do not depend on: the CPU as glibc
/// would see it (its dispatch is fixed), what the loader derived from it,
/// the parent's own tunables (the child's are `sim.glibc_tunables`) and the
/// host. Core counts stay: programs size thread pools and malloc arenas by them.
pub(crate) fn cpu_dependent(key: &str) -> bool {
    (key.starts_with("cpu.")
        && !matches!(
            key,
            "cpu.logical_cores" | "cpu.physical_cores" | "cpu.sockets" | "cpu.online" | "cpu.smt"
        ))
        || key == "libc.hwcaps"
        || key.starts_with("libc.ld_so.")
        || key == "libc.tunables"
        || key == "env.GLIBC_TUNABLES"
        || key == "virt.hypervisor"
        || key.starts_with("virt.dmi.")
}

/// When both runs counted in portable simulation mode at the same
/// baseline, CPU differences become context (with a note saying so);
/// glibc version, binary and every other change stay as they are.
pub(crate) fn portable_context(
    baseline: &Run,
    candidate: &Run,
    mut changes: Vec<Change>,
    notes: &mut Vec<String>,
) -> Vec<Change> {
    let level = |r: &Run| {
        (r.mode == Mode::Simulation)
            .then(|| r.environment.get("sim.portable"))
            .flatten()
            .filter(|l| *l != "off")
            .map(str::to_string)
    };
    let (Some(b), Some(c)) = (level(baseline), level(candidate)) else {
        return changes;
    };
    if b != c {
        return changes;
    }
    // Code that dispatches on CPUID itself is not made portable by glibc's
    // tunables: then the CPU still matters (and an unrecorded scan is unknown).
    let own: Vec<String> = [baseline, candidate]
        .iter()
        .map(|r| r.environment.get(CPUID_FACT).unwrap_or("not recorded"))
        .filter(|v| *v != "none")
        .map(str::to_string)
        .collect();
    if !own.is_empty() {
        notes.push(format!(
            "counts made portable ({b}), but CPU differences still apply: {} runs CPUID itself",
            own.join("; ")
        ));
        return changes;
    }
    let mut demoted = Vec::new();
    for change in &mut changes {
        if change.class != ImpactClass::Context && cpu_dependent(&change.key) {
            change.class = ImpactClass::Context;
            demoted.push(change.key.clone());
        }
    }
    if !demoted.is_empty() {
        notes.push(format!(
            "counts made portable ({b}) on both sides: CPU differences do not apply ({})",
            list_keys(&demoted, 4)
        ));
    }
    changes
}

/// The functions whose own (self) cost of `event` moved between two
/// profiles, biggest move first, and the move of the total.
pub(crate) fn function_moves<'a>(
    base: &'a Profile,
    cand: &'a Profile,
    event: &str,
) -> Option<(f64, Vec<FunctionMove>)> {
    let (bi, ci) = (base.event(event)?, cand.event(event)?);
    let total = *cand.totals.get(ci)? as f64 - *base.totals.get(bi)? as f64;
    // Shared libraries are matched by file name; programs by function alone,
    // since the baseline and candidate executables usually differ in path
    // and name (./old/prog vs ./new/prog).
    let basename = |o: &'a str| -> &'a str { o.rsplit('/').next().unwrap_or(o) };
    let key = |o: &'a str| -> &'a str {
        let b = basename(o);
        if b.contains(".so") { b } else { "" }
    };
    // (baseline, candidate, object shown) per function.
    let mut costs: BTreeMap<(&str, &str), (f64, f64, &str)> = BTreeMap::new();
    for f in &base.functions {
        let e =
            costs
                .entry((key(&f.object), &f.function))
                .or_insert((0.0, 0.0, basename(&f.object)));
        e.0 += f.self_cost.get(bi).copied().unwrap_or(0) as f64;
    }
    for f in &cand.functions {
        let e =
            costs
                .entry((key(&f.object), &f.function))
                .or_insert((0.0, 0.0, basename(&f.object)));
        e.1 += f.self_cost.get(ci).copied().unwrap_or(0) as f64;
        e.2 = basename(&f.object);
    }
    let mut moved: Vec<FunctionMove> = costs
        .into_iter()
        .filter(|(_, (b, c, _))| b != c)
        .map(|((_, function), (b, c, object))| FunctionMove {
            function: function.to_string(),
            object: object.to_string(),
            baseline: b,
            candidate: c,
        })
        .collect();
    let delta = |m: &FunctionMove| m.candidate - m.baseline;
    moved.sort_by(|a, b| {
        delta(b)
            .abs()
            .total_cmp(&delta(a).abs())
            .then(a.function.cmp(&b.function))
    });
    Some((total, moved))
}

/// "91 % of +12.0 % Ir is in `_int_malloc` (libc.so.6); 6 % in …": the
/// functions whose own (self) cost moved most, as shares of the total move.
pub(crate) fn function_attribution(
    total: f64,
    moved: &[FunctionMove],
    event: &str,
    change: f64,
) -> Option<String> {
    if total == 0.0 {
        return None;
    }
    let mut parts = Vec::new();
    let mut covered = 0.0;
    for m in moved.iter().take(3) {
        let (function, object, d) = (&m.function, &m.object, m.candidate - m.baseline);
        let share = d / total;
        if share.abs() < 0.05 {
            break;
        }
        parts.push(format!("{:.0}% in `{function}` ({object})", 100.0 * share));
        covered += share;
        if covered >= 0.9 {
            break;
        }
    }
    let (first, rest) = parts.split_first()?;
    let first = first.replacen(
        " in ",
        &format!(" of {:+.1}% {event} is in ", 100.0 * change),
        1,
    );
    Some(
        std::iter::once(first)
            .chain(rest.iter().cloned())
            .collect::<Vec<_>>()
            .join("; "),
    )
}
