//! Benchmark history: each benchmark's series of stored runs per machine
//! class, its change points (E-divisive means, Otava's method), the
//! environment changes along it, and the CI check built on them.
//!
//! A series holds one benchmark in one mode on one machine: runs on
//! machines whose hardware identity differs are never joined. Software
//! identity (kernel, libc, OS) and performance facts (mitigations,
//! governor, quotas, tunables) are markers on the series instead, because a
//! kernel update on the same machine is exactly the step a user needs to
//! see next to the code's (CASES.md, case E). docs/HISTORY.md has the rules.
//!
//! Modules: `baseline` (the stable segment `compare`'s default baseline
//! moves to), `csv` (`history fit` input), `render` (terminal and
//! Markdown), `stored` (the history and environment-diff documents read
//! from a store, shared by the CLI and the team server).

#![forbid(unsafe_code)]

mod baseline;
mod csv;
mod html;
mod render;
pub mod stored;

pub use baseline::stable_default;
pub use csv::{CsvError, CsvSeries, read_csv};
pub use html::{render_html, series_chart};
pub use render::{render_markdown, render_terminal, sparkline, value as format_value};

use perfsleuth_compare::benchmark_key;
use perfsleuth_model::schema::{
    Document, HistoryCause, HistoryChange, HistoryCheck, HistoryDoc, HistoryFactChange,
    HistoryMarker, HistoryMethod, HistoryPoint, HistorySeries,
};
use perfsleuth_model::{Direction, Environment, ImpactClass, Metric, Mode, short_commit};
use perfsleuth_stats::{ChangeOptions, change_points, median_ci, noise_floor};
use perfsleuth_store::{EntryScope, HistoryEntry, MetricSummary, Store, comparability_hash};
use std::collections::{BTreeMap, HashMap};

/// Fewest points a change-point search is run on.
pub const MIN_POINTS: usize = 4;

pub use perfsleuth_compare::LEARN_POINTS;

/// Identity facts describing the machine's software, not its hardware: a
/// change is a marker on the series, not a new series.
const SOFTWARE_IDENTITY: [&str; 3] = ["kernel.", "libc.", "os."];

/// How change points are searched for.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Options {
    /// Points per E-divisive window.
    pub window: usize,
    /// Largest p-value a change point may have.
    pub max_p: f64,
    /// A fixed relative magnitude floor; `None`: [`perfsleuth_stats::FLOOR_SIGMAS`] × the series' noise.
    pub min_change: Option<f64>,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            window: perfsleuth_stats::DEFAULT_WINDOW,
            max_p: perfsleuth_stats::DEFAULT_MAX_P,
            min_change: None,
        }
    }
}

impl Options {
    fn method(&self) -> HistoryMethod {
        HistoryMethod {
            window: self.window,
            max_p: self.max_p,
            min_change: self.min_change,
        }
    }
}

/// How the points of a series are ordered.
#[derive(Debug, Clone, PartialEq)]
pub enum Order {
    /// By start time.
    Time,
    /// By position on the branch's first-parent chain (commit → 0 for the
    /// oldest), then start time; used only when every point's commit is on it.
    Git(HashMap<String, usize>),
}

/// Which stored points a history shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// Benchmark keys or names; empty: all.
    pub benchmarks: Vec<String>,
    /// Only runs recorded on this git branch.
    pub branch: Option<String>,
    /// Only runs started at or after this RFC 3339 time.
    pub since_time: Option<String>,
    /// Only runs at or after this commit (a full hash on the first-parent chain of [`Order::Git`]).
    pub since_commit: Option<String>,
    /// Only the last N points of each series.
    pub last: Option<usize>,
}

/// Why a history cannot be built; the binary adds the hint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HistoryError {
    /// No stored run passes the branch and time filters.
    NoRuns(String),
    /// A named benchmark has no stored run; the known keys follow.
    UnknownBenchmark(String, Vec<String>),
    /// `since_commit` is not on the branch's first-parent chain.
    CommitNotOnBranch(String),
}

impl std::fmt::Display for HistoryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HistoryError::NoRuns(what) => write!(f, "no complete run {what}"),
            HistoryError::UnknownBenchmark(b, _) => {
                write!(f, "no stored run has a benchmark `{b}`")
            }
            HistoryError::CommitNotOnBranch(c) => {
                write!(
                    f,
                    "commit {} is not on the branch's first-parent history",
                    short_commit(c)
                )
            }
        }
    }
}

impl std::error::Error for HistoryError {}

/// The entries `filter` keeps, oldest first; an error when none is left or
/// a named benchmark has no run at all.
pub fn select(
    entries: Vec<HistoryEntry>,
    filter: &Filter,
    order: &Order,
) -> Result<Vec<HistoryEntry>, HistoryError> {
    for b in &filter.benchmarks {
        let found = entries
            .iter()
            .any(|e| e.name == *b || benchmark_key(&e.name, &e.parameters) == *b);
        if !found {
            let mut known: Vec<String> = entries
                .iter()
                .map(|e| benchmark_key(&e.name, &e.parameters))
                .collect();
            known.sort();
            known.dedup();
            return Err(HistoryError::UnknownBenchmark(b.clone(), known));
        }
    }
    let since_pos = match (&filter.since_commit, order) {
        (Some(c), Order::Git(pos)) => Some(
            *pos.get(c)
                .ok_or_else(|| HistoryError::CommitNotOnBranch(c.clone()))?,
        ),
        (Some(c), Order::Time) => return Err(HistoryError::CommitNotOnBranch(c.clone())),
        (None, _) => None,
    };
    let kept: Vec<HistoryEntry> = entries
        .into_iter()
        .filter(|e| {
            let branch = filter
                .branch
                .as_deref()
                .is_none_or(|b| e.git.as_ref().and_then(|g| g.branch.as_deref()) == Some(b));
            let time = filter
                .since_time
                .as_deref()
                .is_none_or(|t| e.started_at.as_str() >= t);
            let commit = since_pos.is_none_or(|p| {
                let Order::Git(pos) = order else { return true };
                e.git
                    .as_ref()
                    .and_then(|g| pos.get(&g.commit))
                    .is_some_and(|q| *q >= p)
            });
            let bench = filter.benchmarks.is_empty()
                || filter
                    .benchmarks
                    .iter()
                    .any(|b| e.name == *b || benchmark_key(&e.name, &e.parameters) == *b);
            branch && time && commit && bench
        })
        .collect();
    if kept.is_empty() {
        let mut what = Vec::new();
        if let Some(b) = &filter.branch {
            what.push(format!("on branch `{b}`"));
        }
        if let Some(t) = &filter.since_time {
            what.push(format!("since {t}"));
        }
        if let Some(c) = &filter.since_commit {
            what.push(format!("since commit {}", short_commit(c)));
        }
        if what.is_empty() {
            what.push("of commands is stored".to_string());
        }
        return Err(HistoryError::NoRuns(what.join(" ")));
    }
    Ok(kept)
}

/// What the store must read for `filter`: the benchmarks it names (each
/// key by the names it may stand for), all without any, with their cached
/// summaries of `summary_of`; [`select`] then keeps the exact ones.
pub fn scope(filter: &Filter, summary_of: Option<Metric>) -> EntryScope {
    let mut names: Vec<String> = filter
        .benchmarks
        .iter()
        .flat_map(|b| perfsleuth_compare::key_names(b))
        .collect();
    names.sort();
    names.dedup();
    EntryScope {
        names,
        summary_of,
        ..EntryScope::default()
    }
}

/// `err` from [`select`] over entries read by [`scope`], with the list of
/// known benchmarks made whole: those entries held only the named ones.
/// The whole history is read here, on this error's path alone.
pub fn with_every_key(err: HistoryError, store: &dyn Store) -> HistoryError {
    match err {
        HistoryError::UnknownBenchmark(b, _) => {
            let mut known: Vec<String> = store
                .history_entries()
                .unwrap_or_default()
                .iter()
                .map(|e| benchmark_key(&e.name, &e.parameters))
                .collect();
            known.sort();
            known.dedup();
            HistoryError::UnknownBenchmark(b, known)
        }
        other => other,
    }
}

/// One point before its series is known: an entry and its metric's summary.
pub struct Stored {
    /// The entry.
    pub entry: HistoryEntry,
    /// Its metric's median and CI; `None` without a finite value.
    pub summary: Option<MetricSummary>,
}

/// A point's summary of one metric's values: the median of the finite
/// ones with its 95 % distribution-free (order-statistic) interval.
pub fn summarize(values: &[f64]) -> Option<MetricSummary> {
    let mut v: Vec<f64> = values.iter().copied().filter(|v| v.is_finite()).collect();
    if v.is_empty() {
        return None;
    }
    v.sort_by(f64::total_cmp);
    let median = perfsleuth_stats::median(&v)?;
    let ci = median_ci(&v, perfsleuth_stats::DEFAULT_CONFIDENCE)?;
    Some(MetricSummary {
        n: v.len(),
        median,
        lo: ci.lo,
        hi: ci.hi,
    })
}

/// What [`load`] read.
pub struct Loaded {
    /// The points, in the entries' order.
    pub points: Vec<Stored>,
    /// The summaries computed from samples (not cached yet), by benchmark
    /// id, for the caller to cache ([`RunWriter::put_metric_summaries`](perfsleuth_store::RunWriter::put_metric_summaries)) when it may write.
    pub fresh: Vec<(i64, MetricSummary)>,
}

/// The points of `entries` for `metric`: cached summaries where the store
/// has them, the rest summarised from their samples.
pub fn load(
    store: &dyn Store,
    entries: Vec<HistoryEntry>,
    metric: Metric,
) -> Result<Loaded, perfsleuth_store::StoreError> {
    let ids: Vec<i64> = entries.iter().map(|e| e.benchmark_id).collect();
    // What the entries were read with ([`EntryScope::summary_of`]), the
    // rest looked up.
    let carried = |e: &HistoryEntry| e.summary.filter(|(m, _)| *m == metric).map(|(_, s)| s);
    let unknown: Vec<usize> = (0..ids.len())
        .filter(|&i| carried(&entries[i]).is_none())
        .collect();
    let unknown_ids: Vec<i64> = unknown.iter().map(|&i| ids[i]).collect();
    let mut cached: Vec<Option<MetricSummary>> =
        entries.iter().map(|e| carried(e).flatten()).collect();
    for (&i, s) in unknown
        .iter()
        .zip(store.metric_summaries(&unknown_ids, metric)?)
    {
        cached[i] = s;
    }
    let missing: Vec<usize> = (0..ids.len()).filter(|&i| cached[i].is_none()).collect();
    let missing_ids: Vec<i64> = missing.iter().map(|&i| ids[i]).collect();
    let mut fresh = Vec::new();
    for (&i, values) in missing
        .iter()
        .zip(store.metric_values(&missing_ids, metric)?)
    {
        cached[i] = summarize(&values);
        if let Some(s) = cached[i] {
            fresh.push((ids[i], s));
        }
    }
    let points = entries
        .into_iter()
        .zip(cached)
        .map(|(entry, summary)| Stored { entry, summary })
        .collect();
    Ok(Loaded { points, fresh })
}

/// The run ids whose whole environment [`build`] takes its series' assumed
/// noise from: the newest run of each benchmark, mode and stored machine.
pub fn newest_runs(entries: &[HistoryEntry]) -> Vec<i64> {
    type Key<'e> = (&'e str, &'e BTreeMap<String, String>, &'static str, i64);
    let mut newest: HashMap<Key<'_>, i64> = HashMap::new();
    for e in entries {
        let at = newest
            .entry((&e.name, &e.parameters, e.mode.as_str(), e.environment_id))
            .or_insert(e.run_id);
        *at = (*at).max(e.run_id);
    }
    let mut ids: Vec<i64> = newest.into_values().collect();
    ids.sort_unstable();
    ids.dedup();
    ids
}

/// Builds the history document of `metric` from stored points. `envs` are
/// the stored machines by environment id; `runs` the whole environments of
/// the runs [`newest_runs`] names (context included: the stolen time behind
/// the assumed noise), where the store gave them.
pub fn build(
    points: Vec<Stored>,
    envs: &BTreeMap<i64, Environment>,
    runs: &BTreeMap<i64, Environment>,
    metric: Metric,
    order: &Order,
    filter: &Filter,
    opts: &Options,
) -> HistoryDoc {
    let mut notes = Vec::new();
    // Git order only when every point's commit is on the chain; a mix of
    // positions and times has no honest single order.
    let git = match order {
        Order::Git(pos) => {
            let all = points.iter().all(|p| {
                p.entry
                    .git
                    .as_ref()
                    .is_some_and(|g| pos.contains_key(&g.commit))
            });
            if !all {
                notes.push(
                    "some runs' commits are not on the branch's first-parent history: points are in time order"
                        .to_string(),
                );
            }
            all.then_some(pos)
        }
        Order::Time => None,
    };
    // Hashes once per stored environment, not once per point: each is a
    // serialisation and a SHA-256 (a fifth of `history` over 10 000 runs).
    let machines: BTreeMap<i64, Machine> = envs
        .iter()
        .map(|(id, e)| {
            let m = Machine {
                class: machine_class(e),
                label: machine_label(e),
                comparability: comparability_hash(e),
            };
            (*id, m)
        })
        .collect();
    let unknown = Machine {
        class: "unknown".to_string(),
        label: "unknown machine".to_string(),
        comparability: String::new(),
    };
    let machine_of = |id: i64| machines.get(&id).unwrap_or(&unknown);
    // (benchmark key, mode, machine class) → points with their git position.
    type Groups = BTreeMap<(String, String, String), Vec<(Stored, Option<usize>)>>;
    let mut groups: Groups = BTreeMap::new();
    for p in points {
        let machine = machine_of(p.entry.environment_id).class.clone();
        let key = benchmark_key(&p.entry.name, &p.entry.parameters);
        let pos = git.and_then(|g| p.entry.git.as_ref().and_then(|x| g.get(&x.commit).copied()));
        groups
            .entry((key, p.entry.mode.as_str().to_string(), machine))
            .or_default()
            .push((p, pos));
    }
    let mut series = Vec::new();
    let mut programs: Vec<Vec<Option<String>>> = Vec::new();
    for ((key, mode, machine), mut pts) in groups {
        pts.sort_by(|a, b| {
            a.1.cmp(&b.1)
                .then_with(|| a.0.entry.started_at.cmp(&b.0.entry.started_at))
                .then_with(|| a.0.entry.run_id.cmp(&b.0.entry.run_id))
        });
        if let Some(n) = filter.last {
            let drop = pts.len().saturating_sub(n);
            pts.drain(..drop);
        }
        // Environment ids of the points kept, so markers index the points,
        // and each point's program (hash and arguments) for machine steps.
        let mut program = Vec::new();
        let (env_ids, points): (Vec<i64>, Vec<HistoryPoint>) = pts
            .into_iter()
            .filter_map(|(p, _)| {
                let env = p.entry.environment_id;
                let id = p
                    .entry
                    .binary_sha256
                    .as_ref()
                    .map(|h| format!("{h} {}", p.entry.argv));
                let pt = point(p, &machine_of(env).comparability)?;
                program.push(id);
                Some((env, pt))
            })
            .unzip();
        if points.is_empty() {
            continue;
        }
        let label = env_ids.first().map(|id| machine_of(*id).label.clone());
        let markers = markers(&env_ids, envs);
        let mut s = HistorySeries {
            benchmark: key,
            metric: metric.name().to_string(),
            unit: metric.unit().to_string(),
            direction: Some(metric.direction()),
            mode: Mode::parse(&mode),
            machine: Some(machine.clone()),
            machine_label: label,
            noise: f64::NAN,
            noise_source: String::new(),
            min_change: 0.0,
            points,
            markers,
            change_points: Vec::new(),
            note: None,
        };
        // The prior `compare` assumes for the newest run of the series: its
        // whole environment, so both show one figure.
        let newest = s.points.last().and_then(|p| p.run_id);
        let prior = newest
            .and_then(|id| runs.get(&id))
            .or_else(|| env_ids.last().and_then(|id| envs.get(id)))
            .map(perfsleuth_compare::prior_noise);
        analyze(&mut s, Some(metric.direction()), prior, opts);
        series.push(s);
        programs.push(program);
    }
    machine_steps(&mut series, &programs);
    HistoryDoc {
        schema: HistoryDoc::SCHEMA.to_string(),
        schema_version: perfsleuth_model::SCHEMA_VERSION,
        metrics: vec![metric.name().to_string()],
        branch: filter.branch.clone(),
        order: if git.is_some() {
            "git first-parent".to_string()
        } else {
            "time".to_string()
        },
        method: opts.method(),
        series,
        notes,
        check: None,
    }
}

/// The `history fit` document of columns read from a CSV file.
pub fn fit(csv: &CsvSeries, opts: &Options) -> HistoryDoc {
    let series = csv
        .columns
        .iter()
        .map(|(name, values)| {
            let mut s = HistorySeries {
                benchmark: name.clone(),
                metric: "value".to_string(),
                unit: String::new(),
                direction: None,
                mode: None,
                machine: None,
                machine_label: None,
                noise: f64::NAN,
                noise_source: String::new(),
                min_change: 0.0,
                points: values
                    .iter()
                    .enumerate()
                    .map(|(i, v)| HistoryPoint {
                        run_id: None,
                        label: csv.labels.as_ref().map(|l| l[i].clone()),
                        commit: None,
                        dirty: false,
                        started_at: None,
                        value: *v,
                        ci: None,
                        samples: None,
                        comparability: None,
                        binary_sha256: None,
                    })
                    .collect(),
                markers: Vec::new(),
                change_points: Vec::new(),
                note: None,
            };
            analyze(&mut s, None, None, opts);
            s
        })
        .collect();
    HistoryDoc {
        schema: HistoryDoc::SCHEMA.to_string(),
        schema_version: perfsleuth_model::SCHEMA_VERSION,
        metrics: vec!["value".to_string()],
        branch: None,
        order: "file".to_string(),
        method: opts.method(),
        series,
        notes: Vec::new(),
        check: None,
    }
}

/// A stored point's median, its CI and where it ran; `None` without a finite value.
/// A machine's names, computed once per stored environment.
struct Machine {
    class: String,
    label: String,
    comparability: String,
}

fn point(p: Stored, comparability: &str) -> Option<HistoryPoint> {
    let s = p.summary?;
    Some(HistoryPoint {
        run_id: Some(p.entry.run_id),
        label: None,
        commit: p.entry.git.as_ref().map(|g| g.commit.clone()),
        dirty: p.entry.git.as_ref().is_some_and(|g| g.dirty),
        started_at: Some(p.entry.started_at),
        value: s.median,
        ci: Some([s.lo, s.hi]),
        samples: Some(s.n),
        comparability: (!comparability.is_empty()).then(|| comparability.to_string()),
        binary_sha256: p.entry.binary_sha256,
    })
}

/// Change points the code cannot explain: where two or more benchmarks
/// whose programs are byte-identical either side of the step moved the
/// same way by a similar amount at the same run
/// ([`perfsleuth_compare::common_step`], the rule `compare` applies to two
/// runs), each is put down to the machine. A lone step of a byte-identical
/// program keeps its cause and says so.
fn machine_steps(series: &mut [HistorySeries], programs: &[Vec<Option<String>>]) {
    type At = (String, String, i64);
    let mut at: BTreeMap<At, Vec<(usize, usize, f64)>> = BTreeMap::new();
    for (si, (s, program)) in series.iter().zip(programs).enumerate() {
        for (ci, c) in s.change_points.iter().enumerate() {
            let same = match (program.get(c.index.wrapping_sub(1)), program.get(c.index)) {
                (Some(Some(a)), Some(Some(b))) => a == b,
                _ => false,
            };
            let run = s.points.get(c.index).and_then(|p| p.run_id);
            if let (true, HistoryCause::Code, Some(run)) = (same, c.cause, run) {
                let mode = s.mode.map(|m| m.as_str().to_string()).unwrap_or_default();
                let machine = s.machine.clone().unwrap_or_default();
                at.entry((mode, machine, run))
                    .or_default()
                    .push((si, ci, c.change));
            }
        }
    }
    for ((_, _, run), group) in at {
        let changes: Vec<f64> = group.iter().map(|g| g.2).collect();
        let common = perfsleuth_compare::common_step(&changes);
        for &(si, ci, _) in &group {
            let c = &mut series[si].change_points[ci];
            let head = step_head(c.change, c.ci, c.after.as_deref(), c.p);
            c.summary = match common {
                Some((lo, hi)) => {
                    c.cause = HistoryCause::Machine;
                    format!(
                        "{head} — {} benchmarks whose programs are byte-identical either side moved {} … {} at run {run}: one common step — the machine, not the code",
                        changes.len(),
                        perfsleuth_report::format_change(lo),
                        perfsleuth_report::format_change(hi)
                    )
                }
                None => format!(
                    "{} (its program is byte-identical either side: a library, an input or the machine changed, not its code)",
                    c.summary
                ),
            };
        }
    }
}

/// The machine class of a history series: the identity facts other than
/// the software stack, hashed as the comparability hash is.
pub fn machine_class(env: &Environment) -> String {
    let mut hw = env.only(&[ImpactClass::Identity]);
    hw.facts
        .retain(|k, _| !SOFTWARE_IDENTITY.iter().any(|p| k.starts_with(p)));
    comparability_hash(&hw)
}

/// The machine in words: CPU model and logical CPUs, and the hypervisor.
fn machine_label(env: &Environment) -> String {
    let known = |k: &str| {
        env.get(k)
            .filter(|v| !v.is_empty() && *v != perfsleuth_model::UNKNOWN && *v != "none")
    };
    let mut s = known("cpu.model").unwrap_or("unknown CPU").to_string();
    if let Some(n) = known("cpu.logical_cores") {
        s.push_str(&format!(", {n} CPUs"));
    }
    if let Some(h) = known("virt.hypervisor") {
        s.push_str(&format!(", {h} guest"));
    }
    s
}

/// Environment changes between consecutive points (identity facts left in
/// a series are software; context facts never count).
fn markers(env_ids: &[i64], envs: &BTreeMap<i64, Environment>) -> Vec<HistoryMarker> {
    let mut out = Vec::new();
    for i in 1..env_ids.len() {
        if env_ids[i] == env_ids[i - 1] {
            continue;
        }
        let (Some(a), Some(b)) = (envs.get(&env_ids[i - 1]), envs.get(&env_ids[i])) else {
            continue;
        };
        let changes: Vec<HistoryFactChange> =
            perfsleuth_env::significant(&perfsleuth_env::diff(a, b))
                .map(|c| HistoryFactChange {
                    key: c.key.clone(),
                    class: c.class,
                    summary: c.summary.clone(),
                })
                .collect();
        if !changes.is_empty() {
            out.push(HistoryMarker { index: i, changes });
        }
    }
    out
}

/// Fills a series' noise, floor and change points.
///
/// The noise follows the rule `compare` applies
/// ([`perfsleuth_compare::series_noise`]): learned from the series' points,
/// at least the machine's assumed between-run noise below [`LEARN_POINTS`]
/// of them.
fn analyze(
    s: &mut HistorySeries,
    direction: Option<Direction>,
    prior: Option<perfsleuth_compare::Noise>,
    opts: &Options,
) {
    let values: Vec<f64> = s.points.iter().map(|p| p.value).collect();
    let n = values.len();
    (s.noise, s.noise_source) = match perfsleuth_compare::series_noise(&values, prior, "points") {
        Some(noise) => (noise.sd, noise.source),
        None => (f64::NAN, "unknown".to_string()),
    };
    s.min_change = opts.min_change.unwrap_or_else(|| {
        if s.noise.is_finite() {
            noise_floor(s.noise)
        } else {
            0.0
        }
    });
    if n < MIN_POINTS {
        s.note = Some(format!(
            "{n} point{}: change points need at least {MIN_POINTS}",
            if n == 1 { "" } else { "s" }
        ));
        return;
    }
    s.change_points = detect(&values, s, direction, opts);
}

fn change_options(s: &HistorySeries, opts: &Options) -> ChangeOptions {
    ChangeOptions {
        window: opts.window,
        max_p: opts.max_p,
        min_magnitude: s.min_change,
    }
}

fn detect(
    values: &[f64],
    s: &HistorySeries,
    direction: Option<Direction>,
    opts: &Options,
) -> Vec<HistoryChange> {
    change_points(values, &change_options(s, opts))
        .into_iter()
        .map(|cp| {
            let before = s.points.get(cp.index - 1).and_then(point_name);
            let after = s.points.get(cp.index).and_then(point_name);
            let regression = direction.map(|d| match d {
                Direction::Lower => cp.change > 0.0,
                Direction::Higher => cp.change < 0.0,
            });
            let environment = coinciding(&s.markers, cp.index);
            let cause = if environment.is_empty() {
                HistoryCause::Code
            } else {
                HistoryCause::Environment
            };
            let summary = summary(&cp, before.as_deref(), after.as_deref(), &environment);
            HistoryChange {
                index: cp.index,
                before,
                after,
                change: cp.change,
                ci: [cp.ci.0, cp.ci.1],
                p: cp.p,
                mean_before: cp.mean_before,
                mean_after: cp.mean_after,
                n_before: cp.n_before,
                n_after: cp.n_after,
                regression,
                cause,
                environment,
                summary,
            }
        })
        .collect()
}

/// A point's name in an alert: its short commit (`-dirty` when so), label or run.
fn point_name(p: &HistoryPoint) -> Option<String> {
    if let Some(c) = &p.commit {
        return Some(format!(
            "{}{}",
            short_commit(c),
            if p.dirty { "-dirty" } else { "" }
        ));
    }
    if let Some(l) = &p.label {
        return Some(l.clone());
    }
    p.run_id.map(|id| format!("run {id}"))
}

/// Environment changes at the step, or one point either side of it (a
/// change point's index is uncertain by a point or so in noisy series).
fn coinciding(markers: &[HistoryMarker], index: usize) -> Vec<String> {
    let mut out = Vec::new();
    for m in markers {
        let when = match m.index as i64 - index as i64 {
            0 => "in the same run",
            -1 => "one run before",
            1 => "one run after",
            _ => continue,
        };
        for c in &m.changes {
            out.push(format!("{} {when}", c.summary));
        }
    }
    out
}

fn summary(
    cp: &perfsleuth_stats::ChangePoint,
    before: Option<&str>,
    after: Option<&str>,
    environment: &[String],
) -> String {
    let head = step_head(cp.change, [cp.ci.0, cp.ci.1], after, cp.p);
    if environment.is_empty() {
        let range = match (before, after) {
            (Some(b), Some(a)) => format!("the commits in {b}..{a}"),
            _ => "the code".to_string(),
        };
        format!("{head} — no environment change here: {range}")
    } else {
        format!(
            "{head} — {}: probably the machine, not the code",
            environment.join("; ")
        )
    }
}

/// "+12.0% [+9.1% … +15.2%] at abc1234 (p < 0.001)": a step's size, where and how sure.
fn step_head(change: f64, ci: [f64; 2], after: Option<&str>, p: f64) -> String {
    use perfsleuth_report::{format_change, format_p};
    let at = after.map(|a| format!(" at {a}")).unwrap_or_default();
    format!(
        "{} [{} … {}]{at} ({})",
        format_change(change),
        format_change(ci[0]),
        format_change(ci[1]),
        format_p(p)
    )
}

/// Joins the documents of several metrics into one (their series in order).
pub fn join(mut docs: Vec<HistoryDoc>) -> Option<HistoryDoc> {
    let mut first = docs.drain(..1).next()?;
    for d in docs {
        first.metrics.extend(d.metrics);
        first.series.extend(d.series);
        for n in d.notes {
            if !first.notes.contains(&n) {
                first.notes.push(n);
            }
        }
    }
    Some(first)
}

/// One series' part in `history --check`: the series (an index into the
/// document's), whether it fails the check, and why.
#[derive(Debug, Clone, PartialEq)]
pub struct Finding {
    /// Index of the series in [`HistoryDoc::series`].
    pub series: usize,
    /// Whether it fails the check.
    pub fails: bool,
    /// The reason line, as in [`HistoryCheck::reasons`].
    pub reason: String,
}

/// `history --check`: fails when the newest run of the whole history ends
/// a series whose last change point is a regression that the environment
/// does not explain and that appears only with that run (so it alerts once).
/// Stores the result in `doc.check` and returns it per series.
pub fn check(doc: &mut HistoryDoc, newest_run: Option<i64>, opts: &Options) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (i, s) in doc.series.iter().enumerate() {
        let Some(last) = s.points.last() else {
            continue;
        };
        if newest_run.is_some() && last.run_id != newest_run {
            continue;
        }
        let Some(cp) = s.change_points.last() else {
            continue;
        };
        if cp.regression != Some(true) {
            continue;
        }
        // New: without the newest point, no change point of the same
        // sign within one point of it.
        let values: Vec<f64> = s.points[..s.points.len() - 1]
            .iter()
            .map(|p| p.value)
            .collect();
        let before = change_points(&values, &change_options(s, opts));
        let seen = before
            .iter()
            .any(|b| b.index.abs_diff(cp.index) <= 1 && b.change.signum() == cp.change.signum());
        if seen {
            continue;
        }
        let what = format!("`{}` {}: {}", s.benchmark, s.metric, cp.summary);
        let (fails, reason) = match cp.cause {
            HistoryCause::Code => (true, format!("regression: {what}")),
            HistoryCause::Environment => (
                false,
                format!("not failing, the environment changed: {what}"),
            ),
            HistoryCause::Machine => (false, format!("not failing, the machine stepped: {what}")),
        };
        findings.push(Finding {
            series: i,
            fails,
            reason,
        });
    }
    doc.check = Some(HistoryCheck {
        failed: findings.iter().any(|f| f.fails),
        reasons: findings.iter().map(|f| f.reason.clone()).collect(),
    });
    findings
}

/// `history --check --export-junit`: a test case per series shown (its
/// benchmark and metric, and the machine where several ran it), failed
/// where the check fails on it, with the reason and the newest point.
pub fn render_junit(
    doc: &HistoryDoc,
    findings: &[Finding],
) -> Result<String, perfsleuth_report::junit::JunitError> {
    use perfsleuth_report::junit::{Case, Outcome, render};
    let machines: std::collections::BTreeSet<_> =
        doc.series.iter().map(|s| s.machine.as_deref()).collect();
    let cases: Vec<Case> = doc
        .series
        .iter()
        .enumerate()
        .map(|(i, s)| {
            let found = findings.iter().find(|f| f.series == i);
            let mut name = format!("{} · {}", s.benchmark, s.metric);
            if machines.len() > 1 {
                let label = s.machine_label.as_deref().or(s.machine.as_deref());
                name.push_str(&format!(" ({})", label.unwrap_or("unknown machine")));
            }
            let newest = s.points.last();
            let mut output = match newest {
                Some(p) => format!(
                    "{} points; newest {}",
                    s.points.len(),
                    render::value(s, p.value)
                ),
                None => "no points".to_string(),
            };
            if let Some(cp) = s.change_points.last() {
                output.push_str(&format!("\nlast change point: {}", cp.summary));
            }
            if let Some(f) = found.filter(|f| !f.fails) {
                output.push_str(&format!("\n{}", f.reason));
            }
            let outcome = match found.filter(|f| f.fails) {
                Some(f) => Outcome::Failed {
                    kind: "regression".into(),
                    message: f.reason.clone(),
                    detail: output.clone(),
                },
                None => Outcome::Passed,
            };
            let mut properties = vec![
                ("points".to_string(), s.points.len().to_string()),
                ("unit".to_string(), s.unit.clone()),
            ];
            if let Some(p) = newest {
                properties.push(("newest".into(), format!("{}", p.value)));
            }
            Case {
                name,
                classname: s.benchmark.clone(),
                outcome,
                output,
                seconds: None,
                properties,
            }
        })
        .collect();
    render("perfsleuth", "history --check", &cases)
}

/// The segments of a series between its change points: `(first, end)` index ranges.
pub fn segments(s: &HistorySeries) -> Vec<(usize, usize)> {
    let mut bounds = vec![0];
    bounds.extend(s.change_points.iter().map(|c| c.index));
    bounds.push(s.points.len());
    bounds.windows(2).map(|w| (w[0], w[1])).collect()
}

/// Fewest points a segment needs to count as a stable level for a baseline.
pub const STABLE_POINTS: usize = 3;

/// A baseline this few points after a change point sits "just after" it.
pub const JUST_AFTER: usize = 5;

/// Where a default baseline should come from in a series: the index of the
/// last point of the latest segment with at least [`STABLE_POINTS`] points,
/// and the change point it sits just after (within [`JUST_AFTER`] points), if any.
pub fn stable_baseline(s: &HistorySeries) -> Option<(usize, Option<&HistoryChange>)> {
    let segs = segments(s);
    let (i, (lo, hi)) = segs
        .iter()
        .enumerate()
        .rev()
        .find(|(_, (lo, hi))| hi - lo >= STABLE_POINTS)?;
    let last = hi - 1;
    let after = (i > 0 && last - lo < JUST_AFTER).then(|| &s.change_points[i - 1]);
    Some((last, after))
}

#[cfg(test)]
mod tests;
