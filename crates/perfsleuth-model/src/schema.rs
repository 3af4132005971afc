//! The typed schema of every JSON document perfsleuth writes or reads.
//!
//! Each document is a struct here with a `schema` name and a
//! `schema_version`; [`Document`] ties the two to the type, and
//! [`json_schema`] generates the JSON Schema committed under `docs/schema/`
//! (a test fails when the committed files differ from the types). The
//! producers (report, compare, scale, probe, env and the binary) build these
//! structs; nothing builds an output document from untyped JSON.

use crate::{
    CalibratedClock, Direction, Environment, GitInfo, ImpactClass, Metric, Mode, ProbeResult, Run,
    RunStatus, f64_or_nan,
};
use schemars::JsonSchema;
use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// A versioned JSON document: its `schema` name and layout version.
pub trait Document: Serialize + DeserializeOwned + JsonSchema {
    /// The `schema` field's value ("perfsleuth/run").
    const SCHEMA: &'static str;
    /// The `schema_version` this perfsleuth writes and reads.
    const VERSION: u32;
    /// The file under `docs/schema/` that holds its JSON Schema, without
    /// the `.schema.json` extension ("run").
    fn file_stem() -> &'static str {
        Self::SCHEMA.trim_start_matches("perfsleuth/")
    }
}

/// The JSON Schema of a document, as committed under `docs/schema/`.
pub fn json_schema<D: Document>() -> serde_json::Value {
    let mut schema = serde_json::to_value(schemars::schema_for!(D)).unwrap_or_default();
    // The header fields are a plain string and integer in the types; the
    // schema pins them so a validator tells the documents apart.
    if let Some(props) = schema.get_mut("properties").and_then(|p| p.as_object_mut()) {
        props.insert(
            "schema".into(),
            serde_json::json!({ "const": D::SCHEMA, "description": "The document's name." }),
        );
        props.insert(
            "schema_version".into(),
            serde_json::json!({ "const": D::VERSION, "description": "The document's layout version." }),
        );
    }
    schema
}

/// Every document's file stem and JSON Schema, in the order `docs/SCHEMA.md` lists them.
pub fn all_json_schemas() -> Vec<(&'static str, serde_json::Value)> {
    fn one<D: Document>() -> (&'static str, serde_json::Value) {
        (D::file_stem(), json_schema::<D>())
    }
    vec![
        one::<RunExport>(),
        one::<RunsDoc>(),
        one::<HistoryDoc>(),
        one::<CompareDoc>(),
        one::<ExplainDoc>(),
        one::<ScaleDoc>(),
        one::<ProbeDoc>(),
        one::<ProbeDiffDoc>(),
        one::<EnvironmentDoc>(),
        one::<EnvDiffDoc>(),
        one::<EnvCheckDoc>(),
        one::<IngestDoc>(),
        one::<ApiErrorDoc>(),
        one::<HealthDoc>(),
        one::<TokensDoc>(),
        one::<PushDoc>(),
    ]
}

/// JSON Schemas of the documents perfsleuth writes in another tool's shape
/// (no `schema` header: that tool's readers would not expect one), by file stem.
pub fn foreign_json_schemas() -> Vec<(&'static str, serde_json::Value)> {
    vec![(
        "hyperfine",
        serde_json::to_value(schemars::schema_for!(HyperfineDoc)).unwrap_or_default(),
    )]
}

/// A document as pretty-printed JSON text with a final newline.
///
/// Goes through `serde_json::Value` so object keys come out sorted, as
/// perfsleuth has always written them (byte-stable output for diffs and tests).
pub fn to_json_pretty<T: Serialize>(doc: &T) -> Result<String, serde_json::Error> {
    let value = serde_json::to_value(doc)?;
    Ok(serde_json::to_string_pretty(&value)? + "\n")
}

/// Why a file could not be read as a document.
#[derive(Debug)]
pub enum ReadError {
    /// Not JSON at all.
    NotJson(serde_json::Error),
    /// JSON, but its `schema` is another document's (or missing: `None`).
    WrongSchema(Option<String>),
    /// The right document in a layout version this perfsleuth does not read (`None`: missing).
    WrongVersion(Option<u64>),
    /// The right document and version, but a field does not fit the type.
    Malformed(serde_json::Error),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::NotJson(e) => write!(f, "not JSON: {e}"),
            ReadError::WrongSchema(s) => match s {
                Some(s) => write!(f, "a `{s}` document"),
                None => f.write_str("no \"schema\" field"),
            },
            ReadError::WrongVersion(v) => match v {
                Some(v) => write!(f, "schema version {v}"),
                None => f.write_str("schema version missing"),
            },
            ReadError::Malformed(e) => write!(f, "malformed: {e}"),
        }
    }
}

impl std::error::Error for ReadError {}

/// The `schema` and `schema_version` of any document, to tell which one a file holds.
#[derive(Debug, Clone, Default, Deserialize)]
pub struct Header {
    /// The `schema` field, when present and a string.
    #[serde(default, deserialize_with = "lenient_string")]
    pub schema: Option<String>,
    /// The `schema_version` field, when present and an integer.
    #[serde(default, deserialize_with = "lenient_u64")]
    pub schema_version: Option<u64>,
}

fn lenient_string<'de, D: serde::Deserializer<'de>>(de: D) -> Result<Option<String>, D::Error> {
    Ok(serde_json::Value::deserialize(de)?
        .as_str()
        .map(str::to_string))
}

fn lenient_u64<'de, D: serde::Deserializer<'de>>(de: D) -> Result<Option<u64>, D::Error> {
    Ok(serde_json::Value::deserialize(de)?.as_u64())
}

/// Parses JSON text into a [`Header`] and the whole value.
pub fn read_header(text: &str) -> Result<(Header, serde_json::Value), ReadError> {
    let value: serde_json::Value = serde_json::from_str(text).map_err(ReadError::NotJson)?;
    let header = Header::deserialize(&value).unwrap_or_default();
    Ok((header, value))
}

/// Reads a document of type `D`, checking its `schema` and `schema_version` first.
///
/// The text is parsed straight into `D` (after a first pass that reads only
/// the header), never through a `serde_json::Value` tree: an export of
/// 200 000 samples builds 200 000 maps that way, most of the time a
/// `compare` of two such files took.
pub fn read_document<D: Document>(text: &str) -> Result<D, ReadError> {
    let header = match serde_json::from_str::<Header>(text) {
        Ok(h) => h,
        Err(e) if e.is_syntax() || e.is_eof() => return Err(ReadError::NotJson(e)),
        // JSON, but not an object with that header: no schema.
        Err(_) => Header::default(),
    };
    check_header::<D>(&header)?;
    serde_json::from_str(text).map_err(ReadError::Malformed)
}

fn check_header<D: Document>(header: &Header) -> Result<(), ReadError> {
    if header.schema.as_deref() != Some(D::SCHEMA) {
        return Err(ReadError::WrongSchema(header.schema.clone()));
    }
    if header.schema_version != Some(u64::from(D::VERSION)) {
        return Err(ReadError::WrongVersion(header.schema_version));
    }
    Ok(())
}

/// Turns an already-parsed value into a document of type `D`, checking its header.
pub fn document_from_value<D: Document>(
    header: &Header,
    value: serde_json::Value,
) -> Result<D, ReadError> {
    check_header::<D>(header)?;
    serde_json::from_value(value).map_err(ReadError::Malformed)
}

macro_rules! document {
    ($t:ty, $name:literal, $version:expr) => {
        impl Document for $t {
            const SCHEMA: &'static str = $name;
            const VERSION: u32 = $version;
        }
    };
}

// ---------------------------------------------------------------- run export

/// `perfsleuth/run`: a run with all its samples and the derived statistics
/// (`run --export-json`, `show --json`); `compare` and `env diff` read it back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunExport {
    /// Always `"perfsleuth/run"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// The run exactly as stored.
    pub run: Run,
    /// Statistics derived from `run`, so consumers need not reimplement them.
    pub summary: RunSummary,
}
document!(RunExport, "perfsleuth/run", crate::SCHEMA_VERSION);

/// The derived statistics of a run export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunSummary {
    /// Index into `run.benchmarks` of the benchmark the others are compared with.
    pub reference: usize,
    /// One entry per benchmark, in run order.
    pub benchmarks: Vec<BenchmarkSummary>,
    /// One entry per benchmark other than the reference.
    pub comparisons: Vec<ComparisonSummary>,
}

/// One benchmark's statistics.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct BenchmarkSummary {
    /// As in `run.benchmarks[]`.
    pub name: String,
    /// As in `run.benchmarks[]`.
    pub command: String,
    /// As in `run.benchmarks[]`.
    pub parameters: BTreeMap<String, String>,
    /// Number of samples, failed ones included.
    pub runs: usize,
    /// Samples that exited non-zero or were killed by a signal (included in the statistics).
    pub failed_runs: usize,
    /// Wall time (ns); null without samples.
    pub wall: Option<Statistics>,
    /// User CPU time (ns).
    pub user: Option<Statistics>,
    /// System CPU time (ns).
    pub sys: Option<Statistics>,
    /// Peak RSS (bytes).
    pub peak_rss: Option<Statistics>,
    /// Perf_event counters every sample recorded: name → median and unit.
    #[serde(default)]
    pub counters: BTreeMap<String, CounterMedian>,
}

/// A counter's median over a benchmark's samples.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CounterMedian {
    /// The median.
    pub median: f64,
    /// The counter's unit.
    pub unit: String,
}

/// Summary statistics of one metric, in the metric's unit.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Statistics {
    /// Number of values.
    pub n: usize,
    /// Arithmetic mean.
    pub mean: f64,
    /// Sample standard deviation (n − 1); 0 when n = 1.
    pub stddev: f64,
    /// Median.
    pub median: f64,
    /// Lower bound of the 95 % distribution-free CI of the median.
    pub median_ci_low: f64,
    /// Upper bound of that interval.
    pub median_ci_high: f64,
    /// Median absolute deviation, unscaled.
    pub mad: f64,
    /// Smallest value.
    pub min: f64,
    /// Largest value.
    pub max: f64,
    /// 5th percentile.
    pub p5: f64,
    /// 95th percentile.
    pub p95: f64,
    /// Positions in `samples` of outliers (modified z-score above 3.5).
    pub outliers: Vec<usize>,
}

/// One benchmark compared with the reference.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ComparisonSummary {
    /// Index of the compared benchmark.
    pub benchmark: usize,
    /// Index of the reference benchmark.
    pub reference: usize,
    /// Wall time, candidate / reference; null when it cannot be computed.
    pub time: Option<TimeRatio>,
    /// Peak RSS, candidate / reference.
    pub peak_rss: Option<Ratio>,
}

/// A ratio of medians with its bootstrap interval.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Ratio {
    /// median(candidate) / median(reference).
    pub ratio: f64,
    /// Lower bound of the interval: the sign test's over adjacent pairs where both were measured interleaved, the percentile bootstrap's otherwise.
    pub ci_low: f64,
    /// Upper bound.
    pub ci_high: f64,
    /// Confidence level of the interval.
    pub confidence: f64,
    /// Bootstrap resamples that gave a finite ratio; 0 for a paired interval, which resamples nothing.
    pub resamples: usize,
    /// The interval excludes 1 (time: and the rank test agrees), with at least 5 samples a side.
    pub significant: bool,
}

/// The wall-time ratio, with the rank test beside the bootstrap.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TimeRatio {
    /// The ratio and its interval.
    #[serde(flatten)]
    pub ratio: Ratio,
    /// Two-sided Mann–Whitney U p-value.
    pub p_value: Option<f64>,
    /// The bootstrap interval and the rank test disagree (unpaired estimates only).
    #[serde(default)]
    pub inconclusive: bool,
    /// The time judged: `wall`, or `cpu` for a benchmark that keeps one CPU
    /// busy without waiting (absent in documents before it: wall).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub metric: Option<crate::Metric>,
    /// Why that time was judged, in one clause.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub judged: Option<String>,
    /// Adjacent pairs of runs the estimate came from (interleaved runs); absent when unpaired.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pairs: Option<usize>,
}

// ---------------------------------------------------------------- history

/// `perfsleuth/history`: each benchmark's series over time, its change
/// points and the environment changes along it (`history --format json`,
/// `history fit --format json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryDoc {
    /// Always `"perfsleuth/history"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// The metrics shown, in order (`history fit`: `value`).
    pub metrics: Vec<String>,
    /// The git branch the runs were made on, when the series are limited to one.
    pub branch: Option<String>,
    /// How points are ordered: `git first-parent`, `time` or `file`.
    pub order: String,
    /// How change points were searched for.
    pub method: HistoryMethod,
    /// One series per benchmark, mode and machine, never joined.
    pub series: Vec<HistorySeries>,
    /// Notes on what was left out or could not be done.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
    /// The `--check` result, when asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<HistoryCheck>,
}
document!(HistoryDoc, "perfsleuth/history", crate::SCHEMA_VERSION);

/// The change-point search's settings (docs/HISTORY.md).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryMethod {
    /// Points per E-divisive window.
    pub window: usize,
    /// Largest p-value a change point may have.
    pub max_p: f64,
    /// A fixed relative magnitude floor (`--min-change`); `None`: each series' own noise floor.
    pub min_change: Option<f64>,
}

/// One series: a benchmark on one machine in one mode.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistorySeries {
    /// Benchmark key (name with parameters), or the CSV column.
    pub benchmark: String,
    /// The metric (`value` for a CSV column).
    pub metric: String,
    /// Its unit ("ns", "bytes", ...; empty for a CSV column).
    pub unit: String,
    /// Which way is better; `None` for a CSV column (any change is reported, none is judged).
    pub direction: Option<Direction>,
    /// Measurement mode of its runs; `None` for a CSV column.
    pub mode: Option<Mode>,
    /// Machine class: a hash of the machine's identity facts other than its
    /// software (kernel, libc, OS), whose changes are markers instead.
    pub machine: Option<String>,
    /// The machine in words ("Intel(R) Xeon(R) Processor, 2 CPUs").
    pub machine_label: Option<String>,
    /// Run-to-run noise learned from the series (relative standard deviation).
    #[serde(deserialize_with = "f64_or_nan")]
    #[schemars(with = "Option<f64>")]
    pub noise: f64,
    /// Where `noise` comes from: learned from the series, or assumed for
    /// the machine while the series is too short to learn it.
    pub noise_source: String,
    /// Magnitude floor applied to its change points (relative).
    pub min_change: f64,
    /// The points, oldest first.
    pub points: Vec<HistoryPoint>,
    /// Environment changes between consecutive points.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub markers: Vec<HistoryMarker>,
    /// Change points, oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub change_points: Vec<HistoryChange>,
    /// Why no change points were searched for, when none were.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
}

/// One point: one run's median of the metric (or one CSV row).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryPoint {
    /// Store id of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<i64>,
    /// The CSV row's label (`history fit`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Git commit of the run.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    /// Whether the tree had uncommitted changes.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub dirty: bool,
    /// Start time, RFC 3339 UTC.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub started_at: Option<String>,
    /// The run's median (the CSV value).
    pub value: f64,
    /// 95 % confidence interval of the median (order statistics).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ci: Option<[f64; 2]>,
    /// Samples behind the median.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub samples: Option<usize>,
    /// Comparability hash of the run's environment (all identity facts).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comparability: Option<String>,
    /// SHA-256 of the benchmarked program, when it was known: the same on
    /// both sides of a step means the program's code did not change there.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub binary_sha256: Option<String>,
}

/// Environment facts that changed between point `index - 1` and `index`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryMarker {
    /// Index of the first point with the new environment.
    pub index: usize,
    /// The changes, most impactful first.
    pub changes: Vec<HistoryFactChange>,
}

/// One changed fact on a series.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryFactChange {
    /// The fact's key.
    pub key: String,
    /// Its impact class.
    pub class: ImpactClass,
    /// In words: "kernel.release 6.1.0 → 6.8.0".
    pub summary: String,
}

/// What a change point is put down to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum HistoryCause {
    /// No environment change coincides: the commits in its range.
    Code,
    /// An environment change coincides: probably the machine.
    Environment,
    /// No recorded environment change, but several benchmarks whose
    /// programs are byte-identical either side stepped together at the same
    /// run: one common step of the machine, not the code.
    Machine,
}

/// One change point: the series stepped between two points.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryChange {
    /// Index of the first point of the new level.
    pub index: usize,
    /// Commit (or label) of the last point before it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub before: Option<String>,
    /// Commit (or label) of the first point after it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub after: Option<String>,
    /// Relative change of the segments' means.
    pub change: f64,
    /// Its 95 % interval.
    pub ci: [f64; 2],
    /// Two-sided t-test p-value between the segments.
    pub p: f64,
    /// Mean of the segment before.
    pub mean_before: f64,
    /// Mean of the segment after.
    pub mean_after: f64,
    /// Points in the segment before.
    pub n_before: usize,
    /// Points in the segment after.
    pub n_after: usize,
    /// Worse by the metric's direction; `None` without one.
    pub regression: Option<bool>,
    /// Code or environment.
    pub cause: HistoryCause,
    /// The environment changes at (or next to) the step.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub environment: Vec<String>,
    /// The alert in words.
    pub summary: String,
}

/// `history --check`: whether the latest run starts a regression the environment does not explain.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HistoryCheck {
    /// Whether the check fails (exit 1).
    pub failed: bool,
    /// One line per series that fails it or was set aside.
    pub reasons: Vec<String>,
}

// ---------------------------------------------------------------- runs

/// `perfsleuth/runs`: the stored runs, newest first (`runs --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunsDoc {
    /// Always `"perfsleuth/runs"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// The runs.
    pub runs: Vec<RunListing>,
}
document!(RunsDoc, "perfsleuth/runs", crate::SCHEMA_VERSION);

/// One row of `perfsleuth runs`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunListing {
    /// Store id.
    pub id: i64,
    /// The run's UUID, the same in every store it was copied to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Start time, RFC 3339 UTC.
    pub started_at: String,
    /// End time; `None` while running or after a crash.
    pub ended_at: Option<String>,
    /// Lifecycle state.
    pub status: RunStatus,
    /// Measurement mode.
    pub mode: Mode,
    /// Source-control state at start.
    pub git: Option<GitInfo>,
    /// Benchmark names in display order.
    pub benchmarks: Vec<String>,
    /// Number of samples over all benchmarks.
    pub samples: u64,
    /// The `cpu.model` fact.
    pub cpu_model: Option<String>,
    /// The `host.name` fact.
    pub host: Option<String>,
    /// Hash of the identity facts: runs with equal hashes ran on comparable machines.
    pub comparability: String,
    /// Probes with stored results (`perfsleuth probe` runs), in the order measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<String>,
}

// ---------------------------------------------------------------- hyperfine

/// hyperfine's JSON export shape (`run --export-hyperfine`): `{"results": [...]}`.
/// No `schema` header: it is hyperfine's document, which its scripts read.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HyperfineDoc {
    /// One result per benchmark, in run order.
    pub results: Vec<HyperfineResult>,
}

/// One benchmark in hyperfine's terms; every time in seconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HyperfineResult {
    /// The benchmark's name (its command when it has no `--name`), as hyperfine writes it.
    pub command: String,
    /// Mean wall time.
    pub mean: f64,
    /// Sample standard deviation of the wall times; null with one run.
    pub stddev: Option<f64>,
    /// Median wall time.
    pub median: f64,
    /// Mean user CPU time.
    pub user: f64,
    /// Mean system CPU time.
    pub system: f64,
    /// Fastest run.
    pub min: f64,
    /// Slowest run.
    pub max: f64,
    /// Every run's wall time, in the order measured.
    pub times: Vec<f64>,
    /// Every run's peak resident set size in bytes.
    #[serde(default)]
    pub memory_usage_byte: Vec<u64>,
    /// Every run's exit code; null for a run killed by a signal.
    pub exit_codes: Vec<Option<i32>>,
    /// Parameter values (`-L`, `-P`), absent without parameters.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub parameters: BTreeMap<String, String>,
}

// ---------------------------------------------------------------- compare

/// `perfsleuth/compare`: baseline vs candidate (`compare --format json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompareDoc {
    /// Always `"perfsleuth/compare"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// Label of the baseline side.
    pub baseline: String,
    /// Label of the candidate side.
    pub candidate: String,
    /// Whether an identity fact differs (every verdict is then `environment changed`).
    pub identity_changed: bool,
    /// Identity and performance facts that differ, baseline → candidate.
    pub env_changes: Vec<CompareEnvChange>,
    /// Whether gating p-values were adjusted by Benjamini–Hochberg.
    pub fdr_applied: bool,
    /// How many p-values the adjustment covered.
    pub fdr_comparisons: usize,
    /// One row per paired benchmark and metric.
    pub rows: Vec<CompareRow>,
    /// Benchmarks found only in the baseline.
    pub unpaired_baseline: Vec<String>,
    /// Benchmarks found only in the candidate.
    pub unpaired_candidate: Vec<String>,
    /// Notes on the comparison as a whole.
    pub notes: Vec<String>,
    /// Rows per verdict, every verdict present.
    pub summary: VerdictCounts,
    /// Whether a gating metric of any benchmark regressed.
    pub any_gating_regression: bool,
    /// `perfsleuth ab`: the two revisions, their builds and the rounds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ab: Option<AbInfo>,
}
document!(CompareDoc, "perfsleuth/compare", 2);

// ---------------------------------------------------------------- explain

/// `perfsleuth/explain`: which differences between two set-ups reproduce a
/// result difference when tried on this machine (`explain --format json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExplainDoc {
    /// Always `"perfsleuth/explain"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// Label of the baseline side.
    pub baseline: String,
    /// Label of the candidate side.
    pub candidate: String,
    /// The side the experiments start from (`baseline` or `candidate`):
    /// the one this machine stands for.
    pub from: String,
    /// `walltime` or `simulation`.
    pub mode: String,
    /// The stored run holding the experiments' samples (null with
    /// `--no-store`, or when nothing was measured).
    pub run: Option<i64>,
    /// Whether experiments were measured (false when there was nothing to
    /// explain, or with `--plan`).
    pub measured: bool,
    /// The set-ups tried, each a variant of the stored run.
    pub experiments: Vec<ExplainExperiment>,
    /// Differences no experiment here reproduces, with the reason.
    pub untested: Vec<ExplainUntested>,
    /// One entry per benchmark explained.
    pub benchmarks: Vec<ExplainBenchmark>,
    /// Notes on the explanation as a whole.
    pub notes: Vec<String>,
}
document!(ExplainDoc, "perfsleuth/explain", 1);

/// One set-up tried.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExplainExperiment {
    /// Its variant name (`isa`, `cache-sizes`, `glibc.cpu.hwcaps`, `env.NAME`, `all`, …).
    pub name: String,
    /// The facts it reproduces.
    pub facts: Vec<String>,
    /// What it does, in words.
    pub what: String,
    /// Its settings as a `--variant` SPEC (`;`-separated).
    pub spec: String,
    /// What was checked to have taken effect before measuring (glibc's
    /// reading of GLIBC_TUNABLES); settings of the process itself are
    /// checked on the running child.
    pub verified: Vec<String>,
}

/// A difference not tested here.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExplainUntested {
    /// The fact's key.
    pub key: String,
    /// What differs, in words.
    pub summary: String,
    /// Why it is not tested.
    pub reason: String,
}

/// A ratio with its interval (candidate / baseline, or experiment / base).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExplainRatio {
    /// The ratio of medians.
    pub ratio: f64,
    /// Lower bound of its 95 % interval.
    pub ci_low: f64,
    /// Upper bound.
    pub ci_high: f64,
}

/// What one experiment did to one benchmark.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub enum ExplainOutcome {
    /// It moves the result the observed way by at least half the difference.
    #[serde(rename = "reproduces")]
    Reproduces,
    /// It moves it the observed way, by less than half.
    #[serde(rename = "partly")]
    Partly,
    /// It moves it the other way.
    #[serde(rename = "opposite")]
    Opposite,
    /// It changes the result (no observed difference to measure it against).
    #[serde(rename = "changes")]
    Changes,
    /// No change beyond noise.
    #[serde(rename = "no effect")]
    NoEffect,
    /// Neither a change nor its absence could be shown.
    #[serde(rename = "inconclusive")]
    Inconclusive,
}

/// One experiment's effect on one benchmark.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExplainFinding {
    /// The experiment's name.
    pub experiment: String,
    /// Its effect: experiment / base, paired round by round.
    pub effect: Option<ExplainRatio>,
    /// The comparison's verdict (the one rule of `compare`, paired).
    pub verdict: VerdictLabel,
    /// Its p-value.
    pub p_value: Option<f64>,
    /// Holm-adjusted over the experiments of this benchmark.
    pub p_holm: Option<f64>,
    /// The share of the observed difference it reproduces (log scale:
    /// 1 = all of it), with its interval; null without an observed difference.
    pub share: Option<ExplainRatio>,
    /// What the effect amounts to.
    pub outcome: ExplainOutcome,
}

/// One benchmark's explanation.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ExplainBenchmark {
    /// The pairing key (`name` or `name [k=v]`).
    pub key: String,
    /// The metric explained.
    pub metric: Metric,
    /// Its unit.
    pub unit: String,
    /// The difference to explain: candidate / baseline (null when one side
    /// is a fingerprint without results).
    pub observed: Option<ExplainRatio>,
    /// Its verdict (the rule of `compare`, judged across the machines).
    pub observed_verdict: Option<VerdictLabel>,
    /// The effect an experiment that reproduced all of it would show here
    /// (the observed ratio, or its inverse when starting from the candidate).
    pub expected: Option<f64>,
    /// The experiments' effects, ranked by the share they explain.
    pub findings: Vec<ExplainFinding>,
    /// The answer in one sentence.
    pub conclusion: String,
}

/// What `perfsleuth ab` compared: two revisions measured in the same rounds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AbInfo {
    /// The baseline revision.
    pub baseline: AbSide,
    /// The candidate revision.
    pub candidate: AbSide,
    /// Rounds measured (each measures both sides).
    pub rounds: u32,
    /// Benchmarks whose program was byte-identical on both sides (they do not gate).
    pub identical_binaries: Vec<String>,
}

/// One revision of an `ab` comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AbSide {
    /// Its stored run; null with --no-store.
    pub run: Option<i64>,
    /// The commit checked out (for a dirty candidate: HEAD's).
    pub commit: String,
    /// The working tree's uncommitted changes and untracked files were measured too.
    pub dirty: bool,
    /// How the revision was chosen ("merge base of HEAD and main", "--candidate v2").
    pub chosen: String,
    /// The `--build` that ran in its worktree; null without --build.
    pub build: Option<AbBuild>,
}

/// A side's `--build`, which succeeded (a failing one stops `ab`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct AbBuild {
    /// The command, run with `sh -c` in the worktree.
    pub command: String,
    /// Its wall time in seconds.
    pub wall_s: f64,
}

/// A fact that differs between the sides of a comparison.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompareEnvChange {
    /// The fact's key.
    pub key: String,
    /// The more severe of the two sides' classes.
    pub class: ImpactClass,
    /// Baseline value (null: not recorded there).
    pub before: Option<String>,
    /// Candidate value.
    pub after: Option<String>,
    /// What changed, in words.
    pub summary: String,
    /// Why it can move results.
    pub why: String,
}

/// One benchmark and metric compared.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompareRow {
    /// Benchmark name.
    pub benchmark: String,
    /// Its parameter values.
    pub parameters: BTreeMap<String, String>,
    /// The pairing key as shown: `name` or `name [k=v, …]`.
    pub key: String,
    /// The metric.
    pub metric: Metric,
    /// The metric's unit.
    pub unit: String,
    /// Which way is better.
    pub better: Direction,
    /// Whether this metric gates.
    pub gating: bool,
    /// Median of the baseline's samples (null without samples).
    pub baseline_median: Option<f64>,
    /// Median of the candidate's samples.
    pub candidate_median: Option<f64>,
    /// Baseline samples, all runs together.
    pub n_baseline: usize,
    /// Candidate samples, all runs together.
    pub n_candidate: usize,
    /// Relative change of the median with its bootstrap interval.
    pub change: Option<RelativeChange>,
    /// Two-sided Mann–Whitney U p-value.
    pub p_value: Option<f64>,
    /// Benjamini–Hochberg adjusted p-value.
    pub p_adjusted: Option<f64>,
    /// The verdict.
    pub verdict: VerdictLabel,
    /// Explanations attached to this row.
    pub notes: Vec<String>,
    /// The between-run noise of this difference (relative, ±, 95 %): the
    /// interval in `change` is at least this wide around the change.
    #[serde(default)]
    pub band: Option<f64>,
    /// The between-run noise behind `band`, learned from same-binary runs or
    /// assumed from the fingerprint; absent where none applies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub noise: Option<CompareNoise>,
    /// Wall time with both sides profiled, a judged change: the functions
    /// whose on-CPU time moved most, biggest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub time_functions: Vec<CompareTimeFunction>,
}

/// One function's on-CPU time per run, baseline against candidate
/// (`--profile`), in nanoseconds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompareTimeFunction {
    /// The function's name, demangled.
    pub function: String,
    /// Its binary or library's file name.
    pub object: String,
    /// Its time off the CPU for this reason (`lock`, `poll`, `I/O`,
    /// `sleep`, `runnable`, `other`; a wall profile), not on it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub off_cpu: Option<String>,
    /// For a wait in a thread other than the main one: the function that
    /// thread started in.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub thread: Option<String>,
    /// Median self time per run in the baseline.
    pub baseline_self_ns: f64,
    /// Median self time per run in the candidate.
    pub candidate_self_ns: f64,
    /// Shift of the self time per run, candidate − baseline.
    pub self_shift_ns: f64,
    /// Its interval, low end.
    pub self_shift_low_ns: f64,
    /// Its interval, high end.
    pub self_shift_high_ns: f64,
    /// Shift of the inclusive time per run (the function and its callees).
    pub inclusive_shift_ns: f64,
    /// Its interval, low end.
    pub inclusive_shift_low_ns: f64,
    /// Its interval, high end.
    pub inclusive_shift_high_ns: f64,
    /// The self shift's interval holds 0.
    pub in_the_noise: bool,
}

/// Between-run noise of one benchmark and metric.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CompareNoise {
    /// Relative standard deviation of one run's median.
    pub sd: f64,
    /// The 95 % band of one run's median (the "±x %" reported).
    pub one_run: f64,
    /// Same-binary runs it was learned from; 0 when assumed.
    pub runs: usize,
    /// Where it comes from ("12 same-binary runs", "assumed for a virtual machine").
    pub source: String,
}

/// A relative change with its interval (null members: not finite).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RelativeChange {
    /// candidate / baseline − 1.
    pub change: Option<f64>,
    /// Lower bound of the bootstrap interval.
    pub ci_low: Option<f64>,
    /// Upper bound.
    pub ci_high: Option<f64>,
    /// Confidence level.
    pub confidence: f64,
    /// Bootstrap resamples used.
    pub resamples: usize,
}

/// A row's verdict as written in reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum VerdictLabel {
    /// Worse beyond noise.
    #[serde(rename = "regressed")]
    Regressed,
    /// Better beyond noise.
    #[serde(rename = "improved")]
    Improved,
    /// The whole CI inside the noise band.
    #[serde(rename = "no change")]
    NoChange,
    /// The CI lies beyond the threshold but the test is not significant: no claim.
    #[serde(rename = "inconclusive")]
    Inconclusive,
    /// Too few samples to tell.
    #[serde(rename = "insufficient data")]
    InsufficientData,
    /// Identity facts differ: no verdict is meaningful.
    #[serde(rename = "environment changed")]
    EnvironmentChanged,
    /// The benchmark is on one side only (listed in `unpaired_*`, counted
    /// in the summary, never a row).
    #[serde(rename = "not compared")]
    NotCompared,
}

impl VerdictLabel {
    /// Every verdict, in the order summaries count them (`not compared` last).
    pub const ALL: [VerdictLabel; 7] = [
        VerdictLabel::Regressed,
        VerdictLabel::Improved,
        VerdictLabel::NoChange,
        VerdictLabel::Inconclusive,
        VerdictLabel::InsufficientData,
        VerdictLabel::EnvironmentChanged,
        VerdictLabel::NotCompared,
    ];

    /// The label as every output writes it (the JSON name): the one
    /// mapping of verdicts to words, which compare's rows and explain's
    /// tables print through.
    pub fn as_str(self) -> &'static str {
        match self {
            VerdictLabel::Regressed => "regressed",
            VerdictLabel::Improved => "improved",
            VerdictLabel::NoChange => "no change",
            VerdictLabel::Inconclusive => "inconclusive",
            VerdictLabel::InsufficientData => "insufficient data",
            VerdictLabel::EnvironmentChanged => "environment changed",
            VerdictLabel::NotCompared => "not compared",
        }
    }
}

impl std::fmt::Display for VerdictLabel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Rows per verdict.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct VerdictCounts {
    /// `regressed` rows.
    pub regressed: usize,
    /// `improved` rows.
    pub improved: usize,
    /// `no change` rows.
    #[serde(rename = "no change")]
    pub no_change: usize,
    /// `inconclusive` rows.
    pub inconclusive: usize,
    /// `insufficient data` rows.
    #[serde(rename = "insufficient data")]
    pub insufficient_data: usize,
    /// `environment changed` rows.
    #[serde(rename = "environment changed")]
    pub environment_changed: usize,
    /// Benchmarks on one side only: `not compared`.
    #[serde(rename = "not compared", default)]
    pub not_compared: usize,
}

impl VerdictCounts {
    /// Counts one row of this verdict.
    pub fn add(&mut self, v: VerdictLabel) {
        *match v {
            VerdictLabel::Regressed => &mut self.regressed,
            VerdictLabel::Improved => &mut self.improved,
            VerdictLabel::NoChange => &mut self.no_change,
            VerdictLabel::Inconclusive => &mut self.inconclusive,
            VerdictLabel::InsufficientData => &mut self.insufficient_data,
            VerdictLabel::EnvironmentChanged => &mut self.environment_changed,
            VerdictLabel::NotCompared => &mut self.not_compared,
        } += 1;
    }
}

// ---------------------------------------------------------------- scale

/// `perfsleuth/scale`: a concurrency sweep's analysis (`scale --json`, `scale fit --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScaleDoc {
    /// Always `"perfsleuth/scale"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// Store id of the sweep's run; null with `--no-store` and for `scale fit`.
    pub run_id: Option<i64>,
    /// The analysis.
    #[serde(flatten)]
    pub analysis: ScaleAnalysis,
}
document!(ScaleDoc, "perfsleuth/scale", 1);

/// How the machine's CPU time was spent during a run, as shares of all
/// CPUs' time (each 0..=1, summing to 1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CpuSplit {
    /// User mode.
    pub user: f64,
    /// Kernel mode.
    pub system: f64,
    /// Idle.
    pub idle: f64,
    /// Idle waiting for I/O.
    pub iowait: f64,
    /// Stolen by the hypervisor.
    pub steal: f64,
}

impl CpuSplit {
    /// User + system.
    pub fn busy(&self) -> f64 {
        self.user + self.system
    }
}

/// What the measured commands could use of the machine.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScaleMachine {
    /// Logical CPUs.
    pub logical: Option<usize>,
    /// Physical cores, when known.
    pub physical: Option<usize>,
    /// CPUs usable at once (affinity, cpuset and quota applied).
    pub usable: Option<f64>,
    /// What limits `usable`, in words.
    pub limited_by: Option<String>,
}

/// One concurrency level, summarised.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScalePoint {
    /// Concurrency N.
    pub n: f64,
    /// Runs measured.
    pub runs: usize,
    /// Median throughput.
    pub throughput: f64,
    /// Lower end of the error bar (95 % CI of the median, or the minimum).
    pub throughput_low: f64,
    /// Upper end of the error bar.
    pub throughput_high: f64,
    /// Throughput relative to N = 1 (or to the smallest N, scaled as if linear below it).
    #[serde(deserialize_with = "f64_or_nan")]
    #[schemars(with = "Option<f64>")]
    pub speedup: f64,
    /// Speed-up / N.
    #[serde(deserialize_with = "f64_or_nan")]
    #[schemars(with = "Option<f64>")]
    pub efficiency: f64,
    /// Mean whole-machine CPU split, when measured.
    pub cpu: Option<CpuSplit>,
    /// Mean busy share per CPU, when measured.
    pub per_cpu_busy: Vec<f64>,
    /// CPUs the whole machine kept busy on average (busy share × logical CPUs).
    pub busy_cpus: Option<f64>,
    /// CPUs the command itself kept busy: its CPU time / wall time (median).
    pub command_cpus: Option<f64>,
    /// Share of the CPUs this level could use (min(N, usable)) that the
    /// command left idle; from its own CPU time when known (other load on
    /// the machine does not hide it), else from the machine's idle time.
    pub idle_of_usable: Option<f64>,
    /// Voluntary context switches per 1000 units of work (median over runs).
    pub voluntary_cs_per_kop: Option<f64>,
    /// futex calls per 1000 units of work.
    pub futex_per_kop: Option<f64>,
    /// CPU migrations per 1000 units of work.
    pub migrations_per_kop: Option<f64>,
    /// Fitted throughput at N.
    pub fitted: Option<f64>,
    /// Where the level's threads waited for locks (`scale --locks`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locks: Option<crate::LockReport>,
}

/// Which scalability model the fit chose.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum FitModel {
    /// The Universal Scalability Law: contention and coherency.
    Usl,
    /// Amdahl's law: β = 0.
    Amdahl,
    /// Linear: α = β = 0.
    Linear,
}

/// The USL fit as reported: coefficients plus what follows from them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct FitSummary {
    /// The model fitted.
    pub model: FitModel,
    /// Contention α.
    pub alpha: f64,
    /// Standard error of α.
    #[serde(deserialize_with = "f64_or_nan")]
    #[schemars(with = "Option<f64>")]
    pub alpha_se: f64,
    /// Coherency β.
    pub beta: f64,
    /// Standard error of β.
    #[serde(deserialize_with = "f64_or_nan")]
    #[schemars(with = "Option<f64>")]
    pub beta_se: f64,
    /// Throughput of one unit γ.
    pub gamma: f64,
    /// Standard error of γ.
    #[serde(deserialize_with = "f64_or_nan")]
    #[schemars(with = "Option<f64>")]
    pub gamma_se: f64,
    /// Residual standard error.
    #[serde(deserialize_with = "f64_or_nan")]
    #[schemars(with = "Option<f64>")]
    pub residual_se: f64,
    /// The CPUs the fit assumed when N exceeded them (oversubscription).
    pub capacity: Option<f64>,
    /// N* = √((1−α)/β), when β > 0 and N* ≤ 2× the largest measured N.
    pub n_star: Option<f64>,
    /// Fitted X at N*.
    pub x_at_n_star: Option<f64>,
    /// Where the fitted curve peaks (N*, or the capacity), within the extrapolation limit.
    pub peak_n: Option<f64>,
    /// Fitted X at the peak.
    pub peak_x: Option<f64>,
    /// Amdahl ceiling γ/α, when α > 0.
    pub amdahl_ceiling: Option<f64>,
    /// Throughput falls for N beyond this (the retrograde region), when it does.
    pub retrograde_from: Option<f64>,
    /// α is distinguishable from 0 (more than 2 standard errors).
    pub alpha_significant: bool,
    /// β is distinguishable from 0.
    pub beta_significant: bool,
    /// N* exists but lies beyond the extrapolation limit, so it is not quoted.
    pub n_star_beyond_limit: bool,
}

/// Which scalability story the curve tells.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum DiagnosisKind {
    /// Throughput falls as N grows: threads fight over a lock or cache line.
    Coherency,
    /// A serial part caps the speed-up (Amdahl).
    Serialised,
    /// Near-linear up to the CPUs available, CPUs busy.
    ComputeBound,
    /// Near-linear while the CPUs idle: the work waits (sleep, I/O) and
    /// concurrency overlaps the waits.
    ScalesWaiting,
    /// CPUs idle without a sign of lock contention.
    Waiting,
    /// None of the above clearly: sub-linear scaling.
    SubLinear,
}

/// One finding of the scalability diagnosis.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Diagnosis {
    /// The story.
    pub kind: DiagnosisKind,
    /// One line.
    pub headline: String,
    /// The numbers behind it.
    pub evidence: Vec<String>,
}

/// Everything `scale` reports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScaleAnalysis {
    /// The parameter that set the concurrency (e.g. "threads").
    pub parameter: String,
    /// One entry per concurrency level, ascending.
    pub points: Vec<ScalePoint>,
    /// The fit, when one was possible.
    pub fit: Option<FitSummary>,
    /// Why there is no fit.
    pub fit_error: Option<String>,
    /// What the numbers say, most important first.
    pub diagnosis: Vec<Diagnosis>,
    /// Caveats about the measurement (oversubscription, SMT, steal, few points).
    pub warnings: Vec<String>,
    /// The machine's CPUs.
    pub machine: ScaleMachine,
}

impl ScaleAnalysis {
    /// The fitted curve as a function of N, when there is a fit.
    pub fn fitted(&self, n: f64) -> Option<f64> {
        let f = self.fit.as_ref()?;
        let cap = f.capacity.unwrap_or(f64::INFINITY);
        Some(f.gamma * n.min(cap) / (1.0 + f.alpha * (n - 1.0) + f.beta * n * (n - 1.0)))
    }

    /// The largest measured N.
    pub fn max_n(&self) -> f64 {
        self.points.iter().map(|p| p.n).fold(0.0, f64::max)
    }
}

// ---------------------------------------------------------------- probe

/// `perfsleuth/probe`: a probe session (`probe --json`); `probe diff` reads it back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProbeDoc {
    /// Always `"perfsleuth/probe"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// Store id of the run; null with `--no-store`.
    #[serde(default)]
    pub run_id: Option<i64>,
    /// Lifecycle state.
    pub status: RunStatus,
    /// Start time, RFC 3339 UTC.
    pub started_at: String,
    /// End time, RFC 3339 UTC.
    pub ended_at: Option<String>,
    /// Version of perfsleuth that measured it.
    pub tool_version: String,
    /// Whether `--quick` was given.
    #[serde(default)]
    pub quick: Option<bool>,
    /// The comparability hash of `facts`.
    pub comparability: String,
    /// The calibrated core clock of the first probe that reports cycles.
    #[serde(default)]
    pub clock: Option<CalibratedClock>,
    /// One per probe, in the order run.
    pub reports: Vec<ProbeReportDoc>,
    /// The environment fingerprint.
    pub facts: Environment,
}
document!(ProbeDoc, "perfsleuth/probe", 1);

/// One probe's report in a [`ProbeDoc`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProbeReportDoc {
    /// The probe.
    pub probe: String,
    /// Wall time the probe took, in seconds.
    #[serde(default)]
    pub duration_s: Option<f64>,
    /// The CPU the probe's thread was pinned to.
    #[serde(default)]
    pub pinned_cpu: Option<usize>,
    /// That probe's own clock calibration.
    #[serde(default)]
    pub clock: Option<CalibratedClock>,
    /// What it could not do, samples retaken.
    #[serde(default)]
    pub messages: Vec<String>,
    /// Its numbers.
    #[serde(default)]
    pub measurements: Vec<ProbeResult>,
}

/// One probe metric measured on both sides of a probe diff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProbeDelta {
    /// Probe name.
    pub probe: String,
    /// Metric name.
    pub metric: String,
    /// Unit of `a` and `b`.
    pub unit: String,
    /// Value on side A (the baseline).
    #[serde(deserialize_with = "f64_or_nan")]
    #[schemars(with = "Option<f64>")]
    pub a: f64,
    /// Value on side B.
    #[serde(deserialize_with = "f64_or_nan")]
    #[schemars(with = "Option<f64>")]
    pub b: f64,
    /// b / a.
    #[serde(deserialize_with = "f64_or_nan")]
    #[schemars(with = "Option<f64>")]
    pub ratio: f64,
    /// Whether B is worse than A (by the metric's direction).
    pub worse: bool,
    /// The change is at least 10 %, beyond the two values' spread bands
    /// (value ± spread·value / 2, about the inter-quartile ranges) and beyond
    /// `noise`.
    pub significant: bool,
    /// The band the change had to clear, as a share of `a`: the larger of the
    /// runs' spreads and the between-run noise of this metric (assumed per
    /// probe, widened where stored runs of the machine type spread further).
    #[serde(default)]
    pub noise: f64,
    /// Whether this metric is a headline number on either side.
    pub headline: bool,
    /// Changed facts under the probe's prefixes, "key: A → B".
    pub explanations: Vec<String>,
}

/// `perfsleuth/probe-diff`: two probe results compared (`probe diff --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProbeDiffDoc {
    /// Always `"perfsleuth/probe-diff"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// Side A.
    pub a: ProbeDiffSide,
    /// Side B.
    pub b: ProbeDiffSide,
    /// A headline metric differs significantly (the command then exits 1).
    pub differs: bool,
    /// Every metric measured on both sides, in A's order.
    pub deltas: Vec<ProbeDeltaRow>,
}
document!(ProbeDiffDoc, "perfsleuth/probe-diff", 1);

/// One side of a probe diff.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProbeDiffSide {
    /// "run 4", "current (run 9)", a file name.
    pub label: String,
    /// Store id, when stored.
    pub run_id: Option<i64>,
    /// Whether it ran `--quick`, when known.
    pub quick: Option<bool>,
    /// The comparability hash of its environment.
    pub comparability: String,
    /// The probes with results, in suite order.
    pub probes: Vec<String>,
}

/// A [`ProbeDelta`] with its change in words.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProbeDeltaRow {
    /// The delta.
    #[serde(flatten)]
    pub delta: ProbeDelta,
    /// "3.30× slower", "2.00× less", "unchanged".
    pub change: String,
}

// ---------------------------------------------------------------- env

/// `perfsleuth/environment`: a fingerprint (`env show --json`); `env diff` reads it back.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EnvironmentDoc {
    /// Always `"perfsleuth/environment"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// "current machine", "run 12", "tree DIR" or a file name.
    pub source: String,
    /// The comparability hash of the facts.
    pub comparability: String,
    /// The facts.
    pub facts: Environment,
}
document!(
    EnvironmentDoc,
    "perfsleuth/environment",
    crate::SCHEMA_VERSION
);

/// `perfsleuth/env-diff`: what changed between two environments (`env diff --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EnvDiffDoc {
    /// Always `"perfsleuth/env-diff"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// Label of side A.
    pub a: String,
    /// Label of side B.
    pub b: String,
    /// Comparability hashes of both sides.
    pub comparability: ComparabilityPair,
    /// No identity or performance fact differs.
    pub identical: bool,
    /// The changes, most important first (context facts only with `--all`).
    pub changes: Vec<EnvDiffChange>,
}
document!(EnvDiffDoc, "perfsleuth/env-diff", crate::SCHEMA_VERSION);

/// The comparability hashes of two sides.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ComparabilityPair {
    /// Side A.
    pub a: String,
    /// Side B.
    pub b: String,
}

/// One changed fact in an [`EnvDiffDoc`].
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EnvDiffChange {
    /// The fact's key.
    pub key: String,
    /// The more severe of the two sides' classes.
    pub class: ImpactClass,
    /// Value on side A (null: absent there).
    pub a: Option<String>,
    /// Value on side B.
    pub b: Option<String>,
    /// What changed, in words.
    pub summary: String,
    /// Why it can move results.
    pub why: String,
}

/// `perfsleuth/env-check`: is this machine fit to benchmark on (`env check --json`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct EnvCheckDoc {
    /// Always `"perfsleuth/env-check"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// False when any finding is a problem (the command then exits 2).
    pub fit: bool,
    /// The findings, most serious first.
    pub findings: Vec<Finding>,
}
document!(EnvCheckDoc, "perfsleuth/env-check", crate::SCHEMA_VERSION);

/// How serious an `env check` finding is.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize, JsonSchema,
)]
#[serde(rename_all = "lowercase")]
pub enum Severity {
    /// Worth knowing; results stay usable.
    Info,
    /// Adds noise or limits what can be measured.
    Warning,
    /// Makes results unreliable.
    Problem,
}

impl Severity {
    /// Lowercase name for output.
    pub fn as_str(self) -> &'static str {
        match self {
            Severity::Info => "info",
            Severity::Warning => "warning",
            Severity::Problem => "problem",
        }
    }
}

/// One finding of `env check`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct Finding {
    /// How serious.
    pub severity: Severity,
    /// The fact it is about.
    pub key: String,
    /// What was found.
    pub message: String,
    /// What to do.
    pub recommendation: String,
}

// ---------------------------------------------------------------- run options

/// The `options` of a run made by `perfsleuth scale` (stored in the run,
/// read back by the scale analysis). Not a document of its own: the run's
/// `options` stay free-form JSON for the other commands.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ScaleOptions {
    /// Always `"scale"` (`perfsleuth_model::SCALE_KIND`).
    pub kind: String,
    /// The parameter swept, e.g. `threads`.
    pub param: String,
    /// Its values as given, in order.
    #[serde(default)]
    pub values: Vec<String>,
    /// How throughput was read.
    #[serde(default)]
    pub throughput: Option<ThroughputMethod>,
    /// Timed rounds.
    #[serde(default)]
    pub runs: u32,
    /// Untimed rounds first.
    #[serde(default)]
    pub warmup: u32,
    /// `--shell`, when given.
    #[serde(default)]
    pub shell: Option<String>,
    /// `--timeout` in seconds, when given.
    #[serde(default)]
    pub timeout_s: Option<f64>,
    /// `--counters`.
    #[serde(default)]
    pub counters: String,
}

/// The `options` of a `perfsleuth probe` run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProbeRunOptions {
    /// The probes asked for, in order.
    pub probes: Vec<String>,
    /// `--quick`.
    pub quick: bool,
}

/// `--ignore-failure` as a run stores it: `false`, `true` or the exit codes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(untagged)]
pub enum IgnoreFailure {
    /// `false` (nothing tolerated) or `true` (every exit).
    All(bool),
    /// Only these exit codes.
    Codes(Vec<i32>),
}

/// The `options` of a run made by `perfsleuth run`, as given.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunOptions {
    /// The command templates.
    pub commands: Vec<String>,
    /// `--warmup`.
    pub warmup: u32,
    /// `--runs`.
    pub runs: Option<u32>,
    /// `--min-runs`.
    pub min_runs: u32,
    /// `--max-runs`.
    pub max_runs: Option<u32>,
    /// `--time-budget` in seconds.
    pub time_budget_s: f64,
    /// `--precision`.
    pub precision: f64,
    /// `--prepare` commands.
    pub prepare: Vec<String>,
    /// `--conclude` commands.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conclude: Vec<String>,
    /// `--setup` commands.
    pub setup: Vec<String>,
    /// `--cleanup` commands.
    pub cleanup: Vec<String>,
    /// `--shell`.
    pub shell: Option<String>,
    /// `--parameter-list`, flattened pairs.
    pub parameter_list: Vec<String>,
    /// `--parameter-scan`, flattened triples.
    pub parameter_scan: Vec<String>,
    /// `--step`.
    pub step: Option<String>,
    /// `--name` values.
    pub names: Vec<String>,
    /// `--ignore-failure`.
    pub ignore_failure: IgnoreFailure,
    /// `--timeout` in seconds.
    pub timeout_s: Option<f64>,
    /// `--output`.
    pub output: String,
    /// `--input`.
    pub input: Option<String>,
    /// Round-robin (not `--no-interleave`).
    pub interleave: bool,
    /// `--counters`.
    pub counters: String,
    /// `--mode`.
    pub mode: String,
    /// `--collect`.
    pub collect: Option<String>,
    /// `--counters-kernel`.
    pub counters_kernel: bool,
    /// `--rounds`.
    #[serde(default = "one")]
    pub rounds: u32,
    /// `--max-time` in seconds, when given.
    #[serde(default)]
    pub max_time_s: Option<f64>,
    /// The run's comparison could go on measuring while undecided (`ab`,
    /// `run --baseline`, two commands in one run): it was judged at looks
    /// as its rounds grew, α spent in halves over them, and its comparisons
    /// are judged at the level of the last look ([`crate::Run::looks`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sequential: bool,
}

/// The part of a run's options that says how its comparisons were looked at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
pub struct Sequential {
    /// See [`RunOptions::sequential`].
    #[serde(default)]
    pub sequential: bool,
    /// See [`RunOptions::rounds`].
    #[serde(default = "one")]
    pub rounds: u32,
}

fn one() -> u32 {
    1
}

/// How a sweep reads throughput, as stored: `{"work": W}`,
/// `{"work_per_thread": W}`, `{"regex": RE}` or `{"json_field": F}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "snake_case")]
pub enum ThroughputMethod {
    /// `--work`: units of work per run.
    Work(f64),
    /// `--work-per-thread`: units per thread (× N).
    WorkPerThread(f64),
    /// `--throughput-regex`, as given.
    Regex(String),
    /// `--throughput-json`, the field's dotted path.
    JsonField(String),
}

// ---------------------------------------------------------------- team server

/// `perfsleuth/ingest`: what the team server did with an uploaded run
/// (`POST /api/v1/projects/{project}/runs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IngestDoc {
    /// Always `"perfsleuth/ingest"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// The run's id on the server.
    pub id: i64,
    /// The run's UUID (the uploaded one, or a new one when it had none).
    pub uuid: String,
    /// False when the project already held a run with this UUID: nothing was written.
    pub created: bool,
    /// The run's path on the server.
    pub url: String,
}
document!(IngestDoc, "perfsleuth/ingest", crate::SCHEMA_VERSION);

/// `perfsleuth/error`: why a team server request failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ApiErrorDoc {
    /// Always `"perfsleuth/error"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// The HTTP status.
    pub status: u16,
    /// What went wrong, one line.
    pub error: String,
    /// What to do about it.
    #[serde(default)]
    pub hint: Option<String>,
}
document!(ApiErrorDoc, "perfsleuth/error", crate::SCHEMA_VERSION);

/// `perfsleuth/health`: the team server is up and reaches its store (`GET /api/v1/health`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HealthDoc {
    /// Always `"perfsleuth/health"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// `ok`, or `unavailable` when the store cannot be reached (HTTP 503).
    pub status: String,
    /// The server's perfsleuth version.
    pub version: String,
    /// The store's backend: `sqlite` or `postgres`.
    pub store: String,
    /// The store schema version this server reads and writes.
    pub store_schema_version: u32,
}
document!(HealthDoc, "perfsleuth/health", crate::SCHEMA_VERSION);

/// One API token of a team server, as listed (its secret only when just created).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TokenInfo {
    /// Its id (`server token revoke ID`).
    pub id: i64,
    /// The project it opens.
    pub project: String,
    /// A name for people.
    pub name: String,
    /// `ingest`, `read` and/or `admin`.
    pub scopes: Vec<String>,
    /// When it was created, RFC 3339 UTC.
    pub created_at: String,
    /// When it was revoked; `None` while valid.
    #[serde(default)]
    pub revoked_at: Option<String>,
    /// The secret, shown once by `server token create`; the server keeps only its SHA-256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// `perfsleuth/tokens`: `server token create|list --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TokensDoc {
    /// Always `"perfsleuth/tokens"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// The tokens, oldest first.
    pub tokens: Vec<TokenInfo>,
}
document!(TokensDoc, "perfsleuth/tokens", crate::SCHEMA_VERSION);

/// What `perfsleuth push` did with one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PushedRun {
    /// The run's local id.
    pub local_id: i64,
    /// Its UUID.
    pub uuid: String,
    /// `sent` (stored now), `present` (already on the server, not sent
    /// again) or `failed`.
    pub outcome: String,
    /// Its id on the server, when known.
    #[serde(default)]
    pub server_id: Option<i64>,
    /// HTTP attempts made (retries after network errors and 5xx included).
    pub attempts: u32,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<String>,
}

/// `perfsleuth/push`: `perfsleuth push --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PushDoc {
    /// Always `"perfsleuth/push"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// The server's base URL.
    pub server: String,
    /// The project.
    pub project: String,
    /// One entry per run, in the order given.
    pub runs: Vec<PushedRun>,
}
document!(PushDoc, "perfsleuth/push", crate::SCHEMA_VERSION);

#[cfg(test)]
mod verdict_label_tests {
    use super::VerdictLabel;

    #[test]
    fn the_printed_label_is_the_json_name() {
        for v in VerdictLabel::ALL {
            assert_eq!(serde_json::to_value(v).unwrap(), v.as_str());
        }
    }
}
