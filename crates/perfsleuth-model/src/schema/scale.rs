//! Scale sweeps and their fits.

use crate::f64_or_nan;
use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;

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
