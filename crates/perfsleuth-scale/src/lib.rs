//! Scalability analysis: throughput measured at several concurrency levels,
//! the Universal Scalability Law fitted to it, and a diagnosis in plain words
//! backed by the CPU time and context switches recorded at each level.
//!
//! The CLI measures; this crate only reasons about measurements, so that the
//! same analysis serves `perfsleuth scale`, `perfsleuth scale fit FILE.csv`
//! and a future server.

#![forbid(unsafe_code)]

mod csv;
mod diagnose;
mod html;
mod render;
mod stored;

pub use csv::{CsvError, read_csv};
pub use diagnose::{Diagnosis, DiagnosisKind};
pub use html::render_html;
pub use render::{chart, render_terminal, to_json};
pub use stored::analysis_of;

pub use perfsleuth_model::schema::{
    CpuSplit, FitModel, FitSummary, ScaleAnalysis as Analysis, ScaleMachine as Machine,
    ScalePoint as Point,
};
use perfsleuth_report::format_count;
use perfsleuth_stats::{
    Direction, UslError, UslFit, UslPoint, decide, fit_usl, fit_usl_capped, median,
};

/// /proc/stat ticks per CPU a level's runs must span for its machine CPU
/// split to be shown (20 ticks = 0.2 s at USER_HZ 100: shares to ~5 %).
const MIN_TICKS_PER_CPU: f64 = 20.0;
/// Fewest distinct concurrency levels a fit accepts.
pub const MIN_LEVELS: usize = 4;
/// Below this many levels the fit is reported with a warning.
pub const WARN_LEVELS: usize = 6;
/// The fitted curve is never drawn or quoted beyond this multiple of the
/// largest measured N.
pub const MAX_EXTRAPOLATION: f64 = 2.0;

/// One run of the command at one concurrency level.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunObservation {
    /// Throughput, units of work per second.
    pub throughput: f64,
    /// Wall time of the run in seconds.
    pub wall_s: f64,
    /// Units of work the run did (throughput × wall time when the command
    /// reported only a rate).
    pub work: f64,
    /// Whole-machine CPU split while it ran, when `/proc/stat` was read.
    pub cpu: Option<CpuSplit>,
    /// Clock ticks (all CPUs) the split rests on; levels pool their runs by it.
    pub cpu_ticks: Option<f64>,
    /// Busy share per CPU while it ran (same order as the kernel's list).
    pub per_cpu_busy: Vec<f64>,
    /// CPU time (user + system) of the command, all its threads and
    /// children, in seconds.
    pub cpu_time_s: Option<f64>,
    /// Voluntary context switches of the command (all its threads and children).
    pub voluntary_cs: Option<f64>,
    /// futex system calls, where the counters could be read.
    pub futex_calls: Option<f64>,
    /// CPU migrations, where the counters could be read.
    pub cpu_migrations: Option<f64>,
}

/// All runs at one concurrency level.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// Concurrency N.
    pub n: f64,
    /// The runs.
    pub runs: Vec<RunObservation>,
    /// Where the level's threads waited for locks (`scale --locks`).
    pub locks: Option<perfsleuth_model::LockReport>,
}

/// Summarises the observations, fits the USL (capacity-aware when N
/// exceeds the usable CPUs) and diagnoses the curve.
pub fn analyze(parameter: &str, observations: &[Observation], machine: &Machine) -> Analysis {
    let mut obs: Vec<&Observation> = observations
        .iter()
        .filter(|o| !o.runs.is_empty() && o.n.is_finite())
        .collect();
    obs.sort_by(|a, b| a.n.total_cmp(&b.n));

    let mut points: Vec<Point> = obs.iter().map(|o| summarize(o, machine)).collect();
    set_speedups(&mut points);

    let fit_points: Vec<UslPoint> = obs
        .iter()
        .flat_map(|o| {
            o.runs.iter().map(|r| UslPoint {
                n: o.n,
                x: r.throughput,
            })
        })
        .collect();
    let max_n = points.iter().map(|p| p.n).fold(0.0, f64::max);
    let min_n = points.iter().map(|p| p.n).fold(f64::INFINITY, f64::min);
    let measured_fall = measured_fall(&points);
    let capacity = machine.usable.filter(|c| *c >= 1.0 && max_n > *c);
    let fitted = if points.len() < MIN_LEVELS {
        Err(format!(
            "no fit: {} concurrency level{} measured, the USL needs at least {MIN_LEVELS}",
            points.len(),
            if points.len() == 1 { "" } else { "s" }
        ))
    } else {
        // Oversubscribed CPU-bound work plateaus at the CPUs; work that waits
        // (sleeps, I/O) keeps scaling past them. Both models have the same
        // parameters, so the one that fits the data better says which it is.
        let plain = fit_usl(&fit_points);
        let result = match (capacity, &plain) {
            (Some(c), Ok(p)) => match fit_usl_capped(&fit_points, c) {
                Ok(capped) if rss(&capped, &fit_points) < rss(p, &fit_points) => Ok(capped),
                _ => plain,
            },
            (Some(c), Err(_)) => fit_usl_capped(&fit_points, c),
            (None, _) => plain,
        };
        result.map_err(|e| match e {
            UslError::NonPositive => "no fit: a throughput is zero or negative".to_string(),
            other => format!("no fit: {other}"),
        })
    };
    let (fit, fit_error) = match fitted {
        Ok(f) => (Some(summarize_fit(&f, min_n, max_n, measured_fall)), None),
        Err(e) => (None, Some(e)),
    };

    let mut analysis = Analysis {
        parameter: parameter.to_string(),
        points,
        fit,
        fit_error,
        diagnosis: Vec::new(),
        warnings: Vec::new(),
        machine: machine.clone(),
    };
    let fitted_values: Vec<Option<f64>> = analysis
        .points
        .iter()
        .map(|p| analysis.fitted(p.n))
        .collect();
    for (p, f) in analysis.points.iter_mut().zip(fitted_values) {
        p.fitted = f;
    }
    analysis.warnings = warnings(&analysis);
    // Computed from the analysis alone, so a stored sweep re-diagnosed
    // later says the same.
    analysis.diagnosis = diagnose::diagnose(&analysis);
    analysis
}

/// Throughput at the largest N more than 10 % below the best, measured.
pub(crate) fn measured_fall(points: &[Point]) -> bool {
    let (Some(last), Some(best)) = (
        points.last(),
        points
            .iter()
            .max_by(|a, b| a.throughput.total_cmp(&b.throughput)),
    ) else {
        return false;
    };
    best.n < last.n && last.throughput < FALLING * best.throughput
}

/// Measured throughput below this share of the best counts as falling.
pub(crate) const FALLING: f64 = 0.9;

fn rss(fit: &UslFit, points: &[UslPoint]) -> f64 {
    points
        .iter()
        .map(|p| (p.x - fit.throughput(p.n)).powi(2))
        .sum()
}

fn summarize(o: &Observation, machine: &Machine) -> Point {
    let mut xs: Vec<f64> = o.runs.iter().map(|r| r.throughput).collect();
    xs.sort_by(f64::total_cmp);
    let x = median(&xs).unwrap_or(f64::NAN);
    let (low, high) = match perfsleuth_stats::median_ci(&xs, 0.95) {
        Some(ci) if xs.len() >= 6 => (ci.lo, ci.hi),
        _ => (xs[0], xs[xs.len() - 1]),
    };
    // /proc/stat counts whole ticks (10 ms): pool the runs' ticks, and give
    // no machine split at all when a level's runs span too few ticks to
    // resolve it (the command's own CPU time still answers "idle?").
    let weighted: Vec<(CpuSplit, f64, &[f64])> = o
        .runs
        .iter()
        .filter_map(|r| {
            Some((
                r.cpu?,
                r.cpu_ticks.unwrap_or(1.0),
                r.per_cpu_busy.as_slice(),
            ))
        })
        .collect();
    let ticks: f64 = weighted.iter().map(|(_, t, _)| t).sum();
    let enough = match (
        o.runs.iter().any(|r| r.cpu_ticks.is_some()),
        machine.logical,
    ) {
        (true, Some(l)) => ticks >= MIN_TICKS_PER_CPU * l as f64,
        // No tick counts (older data, synthetic input): trust the shares.
        _ => !weighted.is_empty(),
    };
    let cpu = (enough && ticks > 0.0).then(|| {
        let mean = |f: fn(&CpuSplit) -> f64| {
            weighted.iter().map(|(c, t, _)| f(c) * t).sum::<f64>() / ticks
        };
        CpuSplit {
            user: mean(|c| c.user),
            system: mean(|c| c.system),
            idle: mean(|c| c.idle),
            iowait: mean(|c| c.iowait),
            steal: mean(|c| c.steal),
        }
    });
    let width = weighted.iter().map(|(_, _, p)| p.len()).max().unwrap_or(0);
    let per_cpu_busy = if cpu.is_some() {
        (0..width)
            .map(|i| {
                let (sum, weight) = weighted
                    .iter()
                    .filter_map(|(_, t, p)| p.get(i).filter(|v| v.is_finite()).map(|v| (v * t, *t)))
                    .fold((0.0, 0.0), |(s, w), (v, t)| (s + v, w + t));
                if weight > 0.0 { sum / weight } else { f64::NAN }
            })
            .collect()
    } else {
        Vec::new()
    };
    let busy_cpus = cpu.zip(machine.logical).map(|(c, l)| c.busy() * l as f64);
    let mut used: Vec<f64> = o
        .runs
        .iter()
        .filter_map(|r| {
            r.cpu_time_s
                .filter(|_| r.wall_s > 0.0)
                .map(|c| c / r.wall_s)
        })
        .collect();
    used.sort_by(f64::total_cmp);
    let command_cpus = median(&used);
    // CPUs count as idle only when neither the command nor anything else
    // used them: other load on the machine is not the command waiting.
    let machine_idle_cpus = cpu
        .zip(machine.logical)
        .map(|(c, l)| (c.idle + c.iowait) * l as f64);
    let idle_of_usable = machine.usable.and_then(|usable| {
        let could = o.n.min(usable);
        let from_command = command_cpus.map(|c| 1.0 - c / could);
        // The CPUs N threads could not have used anyway idle too; only the
        // idle time beyond them counts against the command.
        let beyond = machine.logical.map_or(0.0, |l| (l as f64 - could).max(0.0));
        let from_machine = machine_idle_cpus.map(|i| (i - beyond).max(0.0) / could);
        let idle = match (from_command, from_machine) {
            (Some(a), Some(b)) => a.min(b),
            (a, b) => a.or(b)?,
        };
        Some(idle.clamp(0.0, 1.0))
    });
    let per_kop = |f: fn(&RunObservation) -> Option<f64>| {
        let mut v: Vec<f64> = o
            .runs
            .iter()
            .filter_map(|r| f(r).filter(|_| r.work > 0.0).map(|c| 1000.0 * c / r.work))
            .collect();
        v.sort_by(f64::total_cmp);
        median(&v)
    };
    Point {
        n: o.n,
        runs: o.runs.len(),
        throughput: x,
        throughput_low: low,
        throughput_high: high,
        speedup: f64::NAN,
        efficiency: f64::NAN,
        cpu,
        per_cpu_busy,
        busy_cpus,
        command_cpus,
        idle_of_usable,
        voluntary_cs_per_kop: per_kop(|r| r.voluntary_cs),
        futex_per_kop: per_kop(|r| r.futex_calls),
        migrations_per_kop: per_kop(|r| r.cpu_migrations),
        fitted: None,
        locks: o.locks.clone(),
    }
}

/// The levels at which other processes kept at least a quarter of the
/// usable CPUs busy (machine busy − the command's own CPUs), with how many.
pub(crate) fn busy_levels(a: &Analysis) -> Vec<(f64, f64)> {
    let Some(usable) = a.machine.usable else {
        return Vec::new();
    };
    a.points
        .iter()
        .filter_map(|p| Some((p.n, p.busy_cpus? - p.command_cpus?)))
        .filter(|(_, o)| *o >= 0.25 * usable.max(1.0))
        .collect()
}

/// Speed-up against N = 1, or against the smallest N scaled down linearly
/// when 1 was not measured.
fn set_speedups(points: &mut [Point]) {
    let Some(first) = points.first() else { return };
    let per_unit = first.throughput / first.n;
    for p in points.iter_mut() {
        p.speedup = p.throughput / per_unit;
        p.efficiency = p.speedup / p.n;
    }
}

/// Whether a fitted coefficient (contention α, coherency β) is present: above
/// zero by the one verdict (`decide` on its normal interval), at the level
/// the diagnosis has always used — two standard errors, α = 2·(1 − Φ(2)) ≈
/// 4.55 % — so the diagnoses are what they were; the value itself for an
/// exact fit.
fn significant(value: f64, se: f64) -> bool {
    let rule = perfsleuth_stats::VerdictRule {
        noise_threshold: 0.0,
        alpha: 2.0 * (1.0 - perfsleuth_stats::normal_cdf(2.0)),
        ..perfsleuth_stats::VerdictRule::default()
    };
    let evidence = perfsleuth_stats::Evidence::Estimate { value, se };
    decide(&rule, &evidence, Direction::LowerIsBetter) == perfsleuth_stats::Verdict::Regressed
}

/// What the fit says, within the measured range: N* and the peak only
/// between the smallest measured N and 2× the largest (below the data a
/// "peak" is an artefact of the model, beyond it an extrapolation); a
/// retrograde region only where the measurements themselves fall.
fn summarize_fit(f: &UslFit, min_n: f64, max_n: f64, measured_fall: bool) -> FitSummary {
    let limit = MAX_EXTRAPOLATION * max_n;
    let within = |n: f64| n >= min_n && n <= limit;
    let n_star = f.n_star.filter(|n| within(*n));
    let peak = f.peak().filter(|(n, _)| within(*n));
    let alpha_significant = significant(f.alpha, f.alpha_se);
    FitSummary {
        model: match f.model {
            perfsleuth_stats::UslModel::Usl => FitModel::Usl,
            perfsleuth_stats::UslModel::Amdahl => FitModel::Amdahl,
            perfsleuth_stats::UslModel::Linear => FitModel::Linear,
        },
        alpha: f.alpha,
        alpha_se: f.alpha_se,
        beta: f.beta,
        beta_se: f.beta_se,
        gamma: f.gamma,
        gamma_se: f.gamma_se,
        residual_se: f.residual_se,
        capacity: f.capacity,
        n_star,
        x_at_n_star: n_star.and(f.x_at_n_star),
        peak_n: peak.map(|p| p.0),
        peak_x: peak.map(|p| p.1),
        // γ/α is the limit of the plain USL with β = 0; under the capacity
        // model the curve has no such asymptote, and an α within noise has none.
        amdahl_ceiling: f
            .amdahl_ceiling
            .filter(|_| f.capacity.is_none() && alpha_significant),
        retrograde_from: peak.filter(|_| measured_fall).map(|p| p.0),
        alpha_significant,
        beta_significant: significant(f.beta, f.beta_se),
        n_star_beyond_limit: f.n_star.is_some_and(|n| n > limit),
    }
}

fn warnings(a: &Analysis) -> Vec<String> {
    let mut w = Vec::new();
    let max_n = a.max_n();
    let m = &a.machine;
    if let Some(usable) = m.usable
        && max_n > usable
    {
        let limit = m
            .limited_by
            .as_ref()
            .map_or(String::new(), |why| format!(" ({why})"));
        let fit_note = match a.fit.as_ref().and_then(|f| f.capacity) {
            Some(c) => format!("; the fit assumes at most {} run at once", format_count(c)),
            None => String::new(),
        };
        w.push(format!(
            "N up to {} exceeds the {} usable CPUs{limit}: beyond them threads share CPUs{fit_note}",
            format_count(max_n),
            format_count(usable)
        ));
    }
    if let (Some(physical), Some(logical)) = (m.physical, m.logical)
        && physical < logical
        && max_n > physical as f64
    {
        w.push(format!(
            "N above {physical} crosses the SMT boundary ({physical} physical cores, {logical} logical CPUs): \
             siblings share a core's execution units and caches"
        ));
    }
    let steal = a
        .points
        .iter()
        .filter_map(|p| p.cpu.map(|c| (p.n, c.steal)))
        .fold(None::<(f64, f64)>, |acc, (n, s)| match acc {
            Some((_, best)) if best >= s => acc,
            _ => Some((n, s)),
        });
    if let Some((n, s)) = steal
        && s >= 0.02
    {
        w.push(format!(
            "the hypervisor stole {:.0}% of CPU time (at N = {}): other tenants were running; \
             throughput here is not the machine's alone",
            100.0 * s,
            format_count(n)
        ));
    }
    // Other processes busy while the command ran: its numbers are not its own.
    let busy = busy_levels(a);
    if !busy.is_empty() && busy.len() == a.points.len() && a.points.len() > 1 {
        let each: Vec<String> = busy
            .iter()
            .map(|(n, o)| format!("{o:.1} at N = {}", format_count(*n)))
            .collect();
        w.push(format!(
            "other processes kept CPUs busy at every level ({}): every level is disturbed, so the \
             curve and the diagnosis are unreliable; repeat on an idle machine",
            each.join(", ")
        ));
    } else if let Some((n, o)) = busy.iter().copied().max_by(|x, y| x.1.total_cmp(&y.1)) {
        w.push(format!(
            "other processes kept {o:.1} CPUs busy during the runs at N = {}: the machine was not quiet, \
             so throughput there is not the command's alone; repeat on an idle machine",
            format_count(n)
        ));
    }
    let levels = a.points.len();
    if (MIN_LEVELS..WARN_LEVELS).contains(&levels) {
        w.push(format!(
            "only {levels} concurrency levels: the fit is fragile below {WARN_LEVELS}; measure more values of N"
        ));
    }
    for p in &a.points {
        let width = (p.throughput_high - p.throughput_low) / p.throughput;
        if p.runs >= 3 && width > 0.2 {
            w.push(format!(
                "throughput at N = {} varies by {:.0}% between runs: more runs (--runs) would firm up the fit",
                format_count(p.n),
                100.0 * width
            ));
        }
    }
    w
}

#[cfg(test)]
mod tests;
