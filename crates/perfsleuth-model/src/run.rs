//! A run: its status, mode, source control, origin, benchmarks and probe
//! results, and the RFC 3339 times it is stamped with.

use crate::benchmark::Benchmark;
use crate::benchmark::f64_or_nan;
use crate::environment::Environment;
use crate::schema;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;
use std::fmt;

/// Lifecycle of a stored run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum RunStatus {
    /// Measuring now, or the process died while measuring.
    Running,
    /// Every benchmark finished.
    Complete,
    /// Stopped by the user (Ctrl-C); the samples taken so far are kept.
    Interrupted,
    /// Stopped by an error (a failing command, a timeout).
    Failed,
}

impl RunStatus {
    /// The lowercase name used in JSON and in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            RunStatus::Running => "running",
            RunStatus::Complete => "complete",
            RunStatus::Interrupted => "interrupted",
            RunStatus::Failed => "failed",
        }
    }

    /// Parses the lowercase name.
    pub fn parse(s: &str) -> Option<RunStatus> {
        Some(match s {
            "running" => RunStatus::Running,
            "complete" => RunStatus::Complete,
            "interrupted" => RunStatus::Interrupted,
            "failed" => RunStatus::Failed,
            _ => return None,
        })
    }
}

impl fmt::Display for RunStatus {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What was measured: wall-clock timing or a deterministic simulation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum Mode {
    /// Real processes timed with a monotonic clock.
    #[default]
    #[cfg_attr(feature = "clap", value(help = "Real runs, timed by the clock"))]
    Walltime,
    /// Instruction counts under a simulator (callgrind).
    #[cfg_attr(
        feature = "clap",
        value(
            help = "Each run under callgrind with a fixed cache model: instruction and miss counts"
        )
    )]
    Simulation,
    /// Machine microbenchmarks (`perfsleuth probe`): results in [`Run::probes`], no benchmarks.
    #[cfg_attr(feature = "clap", value(skip))]
    Probe,
}

impl Mode {
    /// The lowercase name used in JSON and in the store.
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::Walltime => "walltime",
            Mode::Simulation => "simulation",
            Mode::Probe => "probe",
        }
    }

    /// Parses the lowercase name.
    pub fn parse(s: &str) -> Option<Mode> {
        match s {
            "walltime" => Some(Mode::Walltime),
            "simulation" => Some(Mode::Simulation),
            "probe" => Some(Mode::Probe),
            _ => None,
        }
    }
}

/// Source-control state of the working directory when the run started.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
pub struct GitInfo {
    /// Full commit hash of HEAD.
    pub commit: String,
    /// Branch name, or `None` on a detached HEAD.
    pub branch: Option<String>,
    /// Whether tracked files had uncommitted changes.
    pub dirty: bool,
}

/// One invocation of `perfsleuth run`: its benchmarks, environment and provenance.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct Run {
    /// Store id; `None` when the run was not stored.
    pub id: Option<i64>,
    /// Universally unique id, given when the run is first stored and kept
    /// wherever it is copied (exports, pushes to a team server), so the same
    /// run is recognised everywhere; `None` for a run never stored.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub uuid: Option<String>,
    /// Start time, RFC 3339 UTC.
    pub started_at: String,
    /// End time, RFC 3339 UTC; `None` while running.
    pub ended_at: Option<String>,
    /// Lifecycle state.
    pub status: RunStatus,
    /// Version of perfsleuth that measured it.
    pub tool_version: String,
    /// Source-control state, when run inside a git repository.
    pub git: Option<GitInfo>,
    /// Measurement mode.
    pub mode: Mode,
    /// The options the run was made with, as given.
    pub options: serde_json::Value,
    /// The environment fingerprint at start.
    pub environment: Environment,
    /// The benchmarks, in the order given.
    pub benchmarks: Vec<Benchmark>,
    /// Machine microbenchmark results (`perfsleuth probe`), in the order measured.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub probes: Vec<ProbeResult>,
}

/// One number measured by a machine microbenchmark (`perfsleuth probe`),
/// as the probes produce it, the store keeps it and the JSON documents hold it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ProbeResult {
    /// The probe ("calls", "memory").
    pub probe: String,
    /// The metric ("indirect_call", "l2_latency", "read_bandwidth", "mutex_counter_t2").
    pub metric: String,
    /// The value: a median of samples (bandwidth: the best run); NaN when
    /// it could not be computed (JSON null).
    #[serde(deserialize_with = "f64_or_nan")]
    #[schemars(with = "Option<f64>")]
    pub value: f64,
    /// "ns", "GB/s", "ops/s", "bytes" or "ratio".
    pub unit: String,
    /// Whether smaller is better.
    pub lower_is_better: bool,
    /// The value in core cycles, for "ns" values, *estimated* with the
    /// probe's calibrated clock ([`CalibratedClock`]).
    #[serde(default)]
    pub cycles: Option<f64>,
    /// Relative spread: (p75 - p25) / median of the samples. For sizes
    /// ("bytes"), the memory ladder's resolution (factor − 1).
    #[serde(deserialize_with = "f64_or_nan")]
    #[schemars(with = "Option<f64>")]
    pub spread: f64,
    /// Spread ≤ 10 % over at least 3 samples. For sizes: the ladder points
    /// around the step were stable, and the cache was not found smaller than
    /// the fingerprint says (what a shared cache gives varies with its other users).
    pub stable: bool,
    /// One of the probe's main numbers (the rest is detail: per size, per CPU pair).
    pub headline: bool,
    /// How to read the number, where it needs saying.
    #[serde(default)]
    pub note: Option<String>,
}

/// The estimated core clock behind a probe's cycle counts and how it was obtained.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct CalibratedClock {
    /// Estimated core cycles per nanosecond (= GHz); `None` where no
    /// calibration loop exists for the architecture.
    pub ghz: Option<f64>,
    /// Relative spread (IQR / median) of the calibration samples.
    #[serde(deserialize_with = "f64_or_nan")]
    #[schemars(with = "Option<f64>")]
    pub spread: f64,
    /// The time-stamp counter's rate in GHz (x86-64 only): a fixed
    /// reference rate, not the core clock, shown for comparison.
    pub tsc_ghz: Option<f64>,
    /// How the estimate was made, in words.
    pub how: String,
}

impl CalibratedClock {
    /// Cycles for a duration in nanoseconds, when the clock is known.
    pub fn cycles(&self, ns: f64) -> Option<f64> {
        self.ghz.map(|g| ns * g)
    }
}

/// `options.kind` of a run made by `perfsleuth scale`.
pub const SCALE_KIND: &str = "scale";

/// `options.kind` of a run made by `perfsleuth import`.
pub const IMPORT_KIND: &str = "import";

/// What made a run, as its `options.kind` records it: the one reading of
/// that field, so no caller compares strings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RunOrigin {
    /// Measured by perfsleuth (`run`, `ab`, `explain`, `probe`): no `kind`.
    Measured,
    /// A `perfsleuth scale` sweep ([`SCALE_KIND`]).
    Scale,
    /// Another tool's results, `perfsleuth import` ([`IMPORT_KIND`]).
    Import,
}

impl RunOrigin {
    /// The `options.kind` it is stored as; `None` for a measured run.
    pub const fn kind(self) -> Option<&'static str> {
        match self {
            RunOrigin::Measured => None,
            RunOrigin::Scale => Some(SCALE_KIND),
            RunOrigin::Import => Some(IMPORT_KIND),
        }
    }
}

/// The sample counter keys a `perfsleuth scale` run writes (beside those of
/// perf_event counters): what the sweep stores and the scale analysis reads.
pub mod scale_keys {
    /// Units of work per second in that run.
    pub const THROUGHPUT: &str = "throughput";
    /// Units of work done in that run.
    pub const WORK: &str = "work";
    /// The machine's CPU time shares during the run (all CPUs together).
    pub const CPU_KEYS: [&str; 5] = [
        "cpu_user",
        "cpu_system",
        "cpu_idle",
        "cpu_iowait",
        "cpu_steal",
    ];
    /// Clock ticks the CPU shares of a run rest on (all CPUs together).
    pub const CPU_TICKS: &str = "cpu_ticks";
    /// Prefix of the per-CPU busy shares (`cpu_busy.3`).
    pub const CPU_BUSY_PREFIX: &str = "cpu_busy.";
}

impl Run {
    /// For a run whose comparison went on measuring while undecided
    /// (`options.sequential`): the rounds planned and the rounds measured,
    /// from which the look it stopped at follows
    /// (`perfsleuth_stats::look_for_rounds`). `None` for a run judged once.
    pub fn looks(&self) -> Option<(u32, u32)> {
        let o = schema::Sequential::deserialize(&self.options).ok()?;
        if !o.sequential {
            return None;
        }
        let measured = self
            .benchmarks
            .iter()
            .flat_map(|b| &b.samples)
            .map(|s| s.round.saturating_add(1))
            .max()
            .unwrap_or(0);
        Some((o.rounds, measured.max(o.rounds)))
    }

    /// What made this run (`options.kind`).
    pub fn origin(&self) -> RunOrigin {
        match self.options["kind"].as_str() {
            Some(SCALE_KIND) => RunOrigin::Scale,
            Some(IMPORT_KIND) => RunOrigin::Import,
            _ => RunOrigin::Measured,
        }
    }

    /// The typed options of a run `perfsleuth run` (or `ab`, `explain`) made;
    /// `None` for imports, sweeps and probe runs.
    pub fn run_options(&self) -> Option<schema::RunOptions> {
        if self.origin() != RunOrigin::Measured || self.mode == Mode::Probe {
            return None;
        }
        schema::RunOptions::deserialize(&self.options).ok()
    }

    /// Whether `perfsleuth scale` made this run (`options.kind`).
    pub fn is_scale_sweep(&self) -> bool {
        self.scale_options().is_some()
    }

    /// The typed options of a `perfsleuth scale` run; `None` for other runs.
    pub fn scale_options(&self) -> Option<schema::ScaleOptions> {
        let o = schema::ScaleOptions::deserialize(&self.options).ok()?;
        (o.kind == SCALE_KIND).then_some(o)
    }
}

/// Formats a `SystemTime` as RFC 3339 UTC with millisecond precision.
pub fn rfc3339(t: std::time::SystemTime) -> String {
    let d = t.duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    let secs = d.as_secs() as i64;
    let (days, rem) = (secs.div_euclid(86_400), secs.rem_euclid(86_400));
    let (y, m, day) = civil_from_days(days);
    format!(
        "{y:04}-{m:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        rem / 3600,
        (rem / 60) % 60,
        rem % 60,
        d.subsec_millis()
    )
}

/// Converts days since 1970-01-01 to a proleptic Gregorian (year, month, day).
pub(crate) fn civil_from_days(z: i64) -> (i64, u32, u32) {
    // Howard Hinnant's algorithm: exact for every day in the i64 range we use.
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}
