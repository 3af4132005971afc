//! The two sides: their runs grouped into entries by benchmark, and what
//! is said of where they came from and how they were measured.

use crate::outcome::Row;
use perfsleuth_model::Environment;
use perfsleuth_model::ImpactClass;
use perfsleuth_model::Mode;
use perfsleuth_model::Profile;
use perfsleuth_model::Run;
use perfsleuth_model::Sample;
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::collections::HashSet;

/// One side of a comparison: a label and the runs it consists of.
#[derive(Debug, Clone, PartialEq)]
pub struct Side {
    /// How the side is named in reports ("run 12", "main", "abc1234").
    pub label: String,
    /// Its runs; several runs are repeated runs of the same revision, and
    /// an empty list is treated as a side without benchmarks.
    pub runs: Vec<Run>,
}

/// One benchmark on one side: its samples grouped by run, and the facts of
/// the first occurrence (the binary hash).
pub(crate) struct Entry<'a> {
    pub(crate) name: &'a str,
    pub(crate) parameters: &'a BTreeMap<String, String>,
    pub(crate) facts: &'a Environment,
    /// The arguments actually executed: "same binary" also needs the same arguments.
    pub(crate) argv: &'a [String],
    /// One group per run and round that contains the benchmark (a run
    /// without samples gives one empty group).
    pub(crate) groups: Vec<Vec<&'a Sample>>,
    /// The newest per-function profile (simulation mode).
    pub(crate) profile: Option<&'a Profile>,
    /// The sampled stacks of each run that profiled it (`--profile`).
    pub(crate) stacks: Vec<&'a perfsleuth_model::StackProfile>,
    /// The allocation profile of each run that recorded it (`--profile=alloc`).
    pub(crate) allocs: Vec<&'a perfsleuth_model::AllocProfile>,
    /// What a tool reported where it kept no samples (summary-only imports).
    pub(crate) summaries: &'a [perfsleuth_model::ReportedSummary],
    /// Independent stretches of measuring: one per run, more for a run
    /// that measured more rounds than it was asked to (`run --baseline`
    /// extending while inconclusive).
    pub(crate) windows: f64,
}

/// How many default-length stretches a run's samples span: its rounds over
/// the rounds it was asked for, at least 1.
pub(crate) fn windows_of(run: &Run, samples: &[Sample]) -> f64 {
    let asked = run
        .options
        .get("rounds")
        .and_then(serde_json::Value::as_u64)
        .unwrap_or(1)
        .max(1);
    let measured = samples.iter().map(|s| s.round).max().map_or(1, |r| r + 1);
    (f64::from(measured) / asked as f64).max(1.0)
}

/// A side's benchmarks keyed by (name, parameters), in order of first
/// appearance, with an index: found by key in constant time, so comparing
/// 100 000 benchmarks stays linear (it was quadratic, issue 37).
pub(crate) struct Entries<'a> {
    pub(crate) list: Vec<Entry<'a>>,
    pub(crate) index: HashMap<(&'a str, &'a BTreeMap<String, String>), usize>,
}

impl<'a> Entries<'a> {
    /// The position of the benchmark `name` with `parameters`.
    pub(crate) fn find(&self, name: &str, parameters: &BTreeMap<String, String>) -> Option<usize> {
        self.index.get(&(name, parameters)).copied()
    }

    /// The entry of a row's benchmark.
    pub(crate) fn of(&self, row: &Row) -> Option<&Entry<'a>> {
        self.find(&row.benchmark, &row.parameters)
            .map(|i| &self.list[i])
    }

    /// The sampled stacks of a row's benchmark, one per profiled run.
    pub(crate) fn stacks_of(&self, row: &Row) -> Vec<&'a perfsleuth_model::StackProfile> {
        self.of(row).map(|e| e.stacks.clone()).unwrap_or_default()
    }

    /// The allocation profiles of a row's benchmark, one per profiled run.
    pub(crate) fn allocs_of(&self, row: &Row) -> Vec<&'a perfsleuth_model::AllocProfile> {
        self.of(row).map(|e| e.allocs.clone()).unwrap_or_default()
    }
}

/// The benchmarks of a side keyed by (name, parameters), in order of first appearance.
pub(crate) fn collect(side: &Side) -> Entries<'_> {
    // Room for the first run's benchmarks (usually all of them) up front:
    // growing by doubling to 100 000 entries cost a tenth of a compare.
    let first = side.runs.first().map_or(0, |r| r.benchmarks.len());
    let mut entries = Entries {
        list: Vec::with_capacity(first),
        index: HashMap::with_capacity(first),
    };
    for run in &side.runs {
        // Positions of entries already given a group from this run, so a
        // benchmark listed twice in one run adds to the same group.
        let mut seen_in_run: Vec<usize> = Vec::with_capacity(run.benchmarks.len());
        let mut seen: HashSet<usize> = HashSet::with_capacity(run.benchmarks.len());
        for b in &run.benchmarks {
            let idx = match entries.find(&b.name, &b.parameters) {
                Some(i) => i,
                None => {
                    entries.list.push(Entry {
                        name: &b.name,
                        parameters: &b.parameters,
                        facts: &b.facts,
                        argv: &b.argv,
                        groups: Vec::new(),
                        profile: None,
                        stacks: Vec::new(),
                        allocs: Vec::new(),
                        summaries: &b.summaries,
                        windows: 0.0,
                    });
                    let i = entries.list.len() - 1;
                    entries.index.insert((&b.name, &b.parameters), i);
                    i
                }
            };
            let entry = &mut entries.list[idx];
            if b.profile.is_some() {
                entry.profile = b.profile.as_deref();
            }
            if let Some(stacks) = &b.stacks {
                entry.stacks.push(stacks);
            }
            if let Some(allocs) = &b.allocs {
                entry.allocs.push(allocs);
            }
            if !b.summaries.is_empty() {
                entry.summaries = &b.summaries;
            }
            if seen.insert(idx) {
                seen_in_run.push(idx);
                entry.groups.push(b.samples.iter().collect());
                entry.windows += windows_of(run, &b.samples);
            } else if let Some(g) = entry.groups.last_mut() {
                g.extend(b.samples.iter());
            }
        }
        // A run's samples, split by round: rounds lie at different times,
        // and the machine's speed wanders between them (STATISTICS.md §4.3).
        for &idx in &seen_in_run {
            if let Some(g) = entries.list[idx].groups.pop() {
                entries.list[idx].groups.extend(by_round(g));
            }
        }
    }
    entries
}

/// Samples grouped by their round ([`perfsleuth_model::by_round`]); one
/// empty group for a run without samples.
pub(crate) fn by_round(samples: Vec<&Sample>) -> Vec<Vec<&Sample>> {
    // Most runs measure one round: their group is kept as it is.
    if let Some(first) = samples.first()
        && samples.iter().all(|s| s.round == first.round)
    {
        return vec![samples];
    }
    let rounds = perfsleuth_model::by_round(samples);
    if rounds.is_empty() {
        return vec![Vec::new()];
    }
    rounds
}

pub(crate) fn binary_hash(b: &Environment) -> Option<&str> {
    b.get("binary.sha256")
        .filter(|h| !h.is_empty() && *h != perfsleuth_model::UNKNOWN)
}

/// The newest run of a side by start time (the later one in the list on a tie).
pub fn newest(side: &Side) -> Option<&Run> {
    side.runs
        .iter()
        .enumerate()
        .max_by(|(i, a), (j, b)| a.started_at.cmp(&b.started_at).then(i.cmp(j)))
        .map(|(_, r)| r)
}

/// A side's environment without facts about the benchmarked program, which
/// describe the code under test, not the machine.
pub(crate) fn machine_env(env: &Environment) -> Environment {
    Environment {
        facts: env
            .facts
            .iter()
            .filter(|(k, _)| !k.starts_with("binary."))
            .map(|(k, f)| (k.clone(), f.clone()))
            .collect(),
    }
}

pub(crate) fn run_label(run: &Run, index: usize) -> String {
    match run.id {
        Some(id) => format!("run {id}"),
        None => format!("run #{}", index + 1),
    }
}

/// Notes on runs of one side that disagree with each other or are partial.
pub(crate) fn side_notes(which: &str, side: &Side, notes: &mut Vec<String>) {
    if side.runs.is_empty() {
        notes.push(format!(
            "the {which} side ({}) has no runs: nothing to compare",
            side.label
        ));
        return;
    }
    for (i, run) in side.runs.iter().enumerate() {
        if run.status != perfsleuth_model::RunStatus::Complete {
            notes.push(format!(
                "{which} {} is {}: its samples may be partial",
                run_label(run, i),
                run.status
            ));
        }
    }
    let Some(first) = side.runs.first() else {
        return;
    };
    let first_env = machine_env(&first.environment);
    for class in [ImpactClass::Identity, ImpactClass::Performance] {
        let mut keys: Vec<String> = Vec::new();
        let mut others: Vec<String> = Vec::new();
        for (i, run) in side.runs.iter().enumerate().skip(1) {
            let changes = perfsleuth_env::diff(&first_env, &machine_env(&run.environment));
            let mut differs = false;
            for c in changes.iter().filter(|c| c.class == class) {
                differs = true;
                if !keys.contains(&c.key) {
                    keys.push(c.key.clone());
                }
            }
            if differs {
                others.push(run_label(run, i));
            }
        }
        if keys.is_empty() {
            continue;
        }
        let what = if class == ImpactClass::Identity {
            "ran on different machines"
        } else {
            "differ in performance-relevant settings"
        };
        notes.push(format!(
            "runs within the {which} side {what} ({} vs {}: {})",
            run_label(first, 0),
            others.join(", "),
            list_keys(&keys, 4)
        ));
    }
}

/// Where a side's numbers came from: "criterion.rs (imported)" for a run
/// `perfsleuth import` stored, "perfsleuth" for a measured one.
pub(crate) fn origin(side: &Side) -> String {
    let Some(run) = side.runs.first() else {
        return "perfsleuth".into();
    };
    if run.origin() == perfsleuth_model::RunOrigin::Import {
        let tool = run.options["import"]["tool"]
            .as_str()
            .unwrap_or("another tool");
        format!("{tool} (imported)")
    } else {
        "perfsleuth".into()
    }
}

/// A note when the two sides were measured by different tools (an
/// imported criterion run against a measured one): allowed, since the names
/// match, but what a sample is may differ (an iteration, a process).
pub(crate) fn origin_note(baseline: &Side, candidate: &Side) -> Option<String> {
    let (b, c) = (origin(baseline), origin(candidate));
    (b != c).then(|| {
        format!(
            "the sides were measured by different tools (baseline: {b}, candidate: {c}); the benchmarks pair by name, but a sample may not mean the same on both (one iteration, one whole process)"
        )
    })
}

/// "a, b, c, d and 3 more".
pub(crate) fn list_keys(keys: &[String], max: usize) -> String {
    let shown: Vec<&str> = keys.iter().take(max).map(String::as_str).collect();
    let mut s = shown.join(", ");
    if keys.len() > max {
        s.push_str(&format!(" and {} more", keys.len() - max));
    }
    s
}

/// A stable 64-bit FNV-1a hash, to give each row its own bootstrap stream
/// that does not depend on the order of rows.
pub(crate) fn fnv1a(parts: &[&str]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for part in parts {
        for &b in part.as_bytes().iter().chain(std::iter::once(&0xFF)) {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    h
}

/// Whether every run of the side ran under simulation.
pub(crate) fn simulated(side: &Side) -> bool {
    !side.runs.is_empty() && side.runs.iter().all(|r| r.mode == Mode::Simulation)
}

/// Why the two sides cannot be compared, when they were measured in
/// different modes: valgrind's wall time against a native one, or callgrind
/// counts against nothing, would be a verdict on the measuring, not on the
/// code. Callers check this before [`compare`].
pub fn mode_mismatch(baseline: &Side, candidate: &Side) -> Option<String> {
    mismatch(
        &baseline.label,
        side_modes(baseline),
        &candidate.label,
        side_modes(candidate),
    )
}

/// [`mode_mismatch`] for a candidate not yet measured, labelled `label`.
pub fn mode_mismatch_with(baseline: &Side, label: &str, mode: Mode) -> Option<String> {
    mismatch(
        &baseline.label,
        side_modes(baseline),
        label,
        vec![mode.as_str()],
    )
}

/// The distinct modes of a side's runs, sorted.
pub(crate) fn side_modes(s: &Side) -> Vec<&'static str> {
    let mut m: Vec<&'static str> = s.runs.iter().map(|r| r.mode.as_str()).collect();
    m.sort_unstable();
    m.dedup();
    m
}

pub(crate) fn mismatch(b_label: &str, b: Vec<&str>, c_label: &str, c: Vec<&str>) -> Option<String> {
    if b.is_empty() || c.is_empty() || b == c {
        return None;
    }
    Some(format!(
        "the baseline ({b_label}) ran in {} mode and the candidate ({c_label}) in {} mode: they measure different things",
        b.join("+"),
        c.join("+")
    ))
}

/// Whether some run of the side recorded allocations (`--profile=alloc`).
pub(crate) fn allocation_profiled(side: &Side) -> bool {
    side.runs
        .iter()
        .any(|r| r.benchmarks.iter().any(|b| b.allocs.is_some()))
}

/// Whether every run of the side is a `perfsleuth scale` sweep.
pub(crate) fn scale_sweep(side: &Side) -> bool {
    !side.runs.is_empty() && side.runs.iter().all(Run::is_scale_sweep)
}

/// Whether the two sides are the two halves of one interleaved
/// measurement (`ab` stores its baseline and candidate as two runs of one
/// measurement): one run each, both marked `ab`, started together. Such
/// sides are judged paired, as `ab` judged them, whatever command asks.
pub fn measured_together(baseline: &Side, candidate: &Side) -> bool {
    match (baseline.runs.as_slice(), candidate.runs.as_slice()) {
        ([b], [c]) => {
            let ab = |r: &Run| {
                r.options
                    .get("ab")
                    .is_some_and(serde_json::Value::is_object)
            };
            ab(b) && ab(c) && b.started_at == c.started_at && b.id != c.id
        }
        _ => false,
    }
}
