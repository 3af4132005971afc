//! The diagnosis: which of the usual scalability stories the numbers tell,
//! in words a performance engineer would write on the whiteboard, each
//! backed by the measurement that supports it.

use crate::{Analysis, FitSummary, Point};
use perfsleuth_model::quantity::MISSING;
pub use perfsleuth_model::schema::{Diagnosis, DiagnosisKind};
use perfsleuth_model::{LockReport, LockSite};
use perfsleuth_report::format_count;
use perfsleuth_report::format_si;

/// A coefficient term matters when it costs at least this much of the
/// denominator at the largest N (5 % of the single-thread rate).
const TERM_MATTERS: f64 = 0.05;
/// Share of the usable CPUs left idle that counts as "CPUs idle".
const IDLE: f64 = 0.25;
/// Growth in context switches or futex calls per unit of work that marks
/// threads blocking on each other.
const BLOCKING_GROWTH: f64 = 5.0;
/// ... provided the last level blocks at least this often per 1000 units.
const BLOCKING_FLOOR_PER_KOP: f64 = 0.01;
/// Share of the usable CPUs left idle at every N that means the command
/// only waits (sleeps, I/O), whatever the curve's shape.
const ONLY_WAITS: f64 = 0.9;
/// Efficiency (against the CPUs usable) that counts as scaling well.
const SCALES: f64 = 0.8;

/// What the diagnosis reads off a sweep, computed once for every story.
struct Facts<'a> {
    first: &'a Point,
    last: &'a Point,
    /// The level of highest throughput.
    best: &'a Point,
    /// The CPUs the command could use (unbounded when unknown).
    usable: f64,
    /// Whether throughput measurably falls after its best level.
    falls: bool,
    fit: Option<&'a FitSummary>,
    /// The largest N measured.
    n: f64,
    beta_matters: bool,
    alpha_matters: bool,
    /// Threads blocking on each other, in words.
    blocking: Option<String>,
    /// The largest N at which the CPUs that could work sat idle, with the
    /// idle share.
    idle: Option<(&'a Point, f64)>,
    /// The CPUs efficiency is judged against: the usable ones for CPU-bound
    /// work, every thread for work that waits.
    cap: f64,
    /// Efficiency at the largest N against `cap`.
    eff_usable: f64,
}

/// The stories the numbers can tell, one per sweep: its kind, headline and
/// the evidence for it.
struct Story {
    kind: DiagnosisKind,
    headline: String,
    evidence: Vec<String>,
}

pub(crate) fn diagnose(a: &Analysis) -> Vec<Diagnosis> {
    let Some(facts) = facts(a) else {
        return Vec::new();
    };
    let mut story = story(a, &facts);
    name_the_lock(a, &mut story);
    // A machine busy at every level measured the other load as much as the
    // command: the story above may be the neighbours'.
    if a.points.len() > 1 && crate::busy_levels(a).len() == a.points.len() {
        story.evidence.push(
            "unreliable: other processes kept CPUs busy at every level (see the warnings)"
                .to_string(),
        );
    }
    vec![Diagnosis {
        kind: story.kind,
        headline: story.headline,
        evidence: story.evidence,
    }]
}

/// The facts of a sweep of at least two levels.
fn facts(a: &Analysis) -> Option<Facts<'_>> {
    let (Some(first), Some(last)) = (a.points.first(), a.points.last()) else {
        return None;
    };
    if a.points.len() < 2 {
        return None;
    }
    let best = a
        .points
        .iter()
        .max_by(|x, y| x.throughput.total_cmp(&y.throughput))
        .unwrap_or(first);
    let usable = a.machine.usable.unwrap_or(f64::INFINITY);
    let fit = a.fit.as_ref();
    let n = last.n;
    let beta_matters =
        fit.is_some_and(|f| f.beta_significant && f.beta * n * (n - 1.0) >= TERM_MATTERS);
    let alpha_matters =
        fit.is_some_and(|f| f.alpha_significant && f.alpha * (n - 1.0) >= TERM_MATTERS);
    let idle = a
        .points
        .iter()
        .filter(|p| p.n > first.n)
        .filter_map(|p| p.idle_of_usable.map(|i| (p, i)))
        .rfind(|(_, i)| *i > IDLE);
    // Efficiency against the CPUs that could run: for CPU-bound work,
    // threads beyond the CPUs are not a loss. Work that waits is judged per thread.
    let cap = if idle.is_none() {
        usable
    } else {
        f64::INFINITY
    };
    Some(Facts {
        first,
        last,
        best,
        usable,
        falls: crate::measured_fall(&a.points),
        fit,
        n,
        beta_matters,
        alpha_matters,
        blocking: blocking_evidence(first, last),
        idle,
        cap,
        eff_usable: last.speedup / last.n.min(cap),
    })
}

/// Which story the facts tell, the first that fits in this order.
fn story(a: &Analysis, f: &Facts) -> Story {
    // The USL cannot plateau, so a flat curve fits with β > 0 and a turn
    // past the data: only a measured fall counts as retrograde. A measured
    // fall is contention whatever the fit calls it (β > 0, or α > 1 when the
    // very first added thread costs more than it brings).
    // A fall with idle CPUs and no blocking is work that waits longer as it
    // grows, not threads fighting (a sleep, a saturated disk).
    let alpha_saturates = f.fit.is_some_and(|f| f.alpha >= 1.0 && f.alpha_significant);
    // A command that keeps almost no CPU busy at any N only waits: however
    // the curve bends, the fit's β then describes the waits, not threads
    // fighting over a cache line.
    let only_waits = a
        .points
        .iter()
        .all(|p| p.idle_of_usable.is_some_and(|i| i >= ONLY_WAITS));
    let contention = f.falls
        && (f.beta_matters || f.blocking.is_some() || (alpha_saturates && f.idle.is_none()));
    if contention && !(only_waits && f.blocking.is_none()) {
        coherency(f)
    } else if let Some(fit) = f
        .fit
        .filter(|fit| f.alpha_matters && !f.beta_matters && fit.alpha < 1.0)
    {
        serialised(f, fit)
    } else if f.eff_usable >= SCALES && f.idle.is_none() {
        compute_bound(f)
    } else if let (Some((p, i)), true) = (f.idle, f.last.efficiency >= SCALES) {
        scales_waiting(f, p, i)
    } else if let (Some((p, i)), None) = (f.idle, &f.blocking) {
        waiting(f, p, i)
    } else {
        sub_linear(f)
    }
}

/// Threads fighting over a lock or a cache line: throughput falls.
fn coherency(f: &Facts) -> Story {
    let (first, last, best, usable) = (f.first, f.last, f.best, f.usable);
    let mut evidence = Vec::new();
    let headline = if best.n == first.n {
        "coherency/contention: every added thread lowers throughput; look for a shared lock or cache line"
            .to_string()
    } else {
        let peak = f
            .fit
            .and_then(|fit| fit.peak_n.filter(|p| *p < f.n && *p >= first.n))
            .map_or_else(|| format_count(best.n), |p| format!("{p:.1}"));
        format!(
            "coherency/contention: adding threads lowers throughput past N* ≈ {peak}; look for a shared lock or cache line"
        )
    };
    if f.falls {
        evidence.push(format!(
            "throughput falls from {} at N = {} to {} at N = {} ({:+.0}%)",
            format_si(best.throughput),
            format_count(best.n),
            format_si(last.throughput),
            format_count(last.n),
            100.0 * (last.throughput / best.throughput - 1.0)
        ));
    }
    if let Some(fit) = f.fit {
        evidence.push(format!(
            "USL: β = {} ± {} (coherency), α = {} ± {} (contention)",
            sci(fit.beta),
            sci(fit.beta_se),
            sci(fit.alpha),
            sci(fit.alpha_se)
        ));
        if fit.alpha >= 1.0 && !f.beta_matters {
            evidence.push(
                "α ≥ 1: each added thread costs more than it contributes, from the second one on (one thread already saturates the shared resource)"
                    .to_string(),
            );
        }
    }
    match f.idle {
        Some((p, i)) => evidence.push(format!(
            "{} although {} could be busy: threads wait instead of working",
            idle_words(p, i, usable),
            format_count(p.n.min(usable))
        )),
        None => {
            if let Some(i) = last.idle_of_usable {
                // Traced lock waits at that level: threads do sleep on
                // the lock, while others take their CPUs.
                let sleeps = last.locks.as_ref().is_some_and(|l| l.lock_wait_ns > 0);
                evidence.push(if sleeps {
                    format!(
                        "CPUs stay busy ({}) although threads sleep on the lock: runnable threads take the CPUs the waiting ones leave",
                        idle_words(last, i, usable)
                    )
                } else {
                    format!(
                        "CPUs stay busy ({}): the time goes to moving the contended cache line, not to sleeping",
                        idle_words(last, i, usable)
                    )
                });
            }
        }
    }
    evidence.extend(f.blocking.clone());
    Story {
        kind: DiagnosisKind::Coherency,
        headline,
        evidence,
    }
}

/// A serialised fraction without coherency loss: Amdahl's ceiling.
fn serialised(f: &Facts, fit: &FitSummary) -> Story {
    let ceiling = fit.amdahl_ceiling.map_or(MISSING.to_string(), |c| {
        format!("{} ({:.1}× one thread)", format_si(c), c / fit.gamma)
    });
    let headline = format!(
        "serialised fraction ≈ {:.1}%: Amdahl ceiling {ceiling}",
        100.0 * fit.alpha
    );
    let mut evidence = vec![
        format!(
            "USL: α = {} ± {}, β = {} ± {} (no coherency loss)",
            sci(fit.alpha),
            sci(fit.alpha_se),
            sci(fit.beta),
            sci(fit.beta_se)
        ),
        efficiency_line(f.last, f.cap),
    ];
    evidence.extend(f.blocking.clone());
    Story {
        kind: DiagnosisKind::Serialised,
        headline,
        evidence,
    }
}

/// Near-linear scaling on busy CPUs.
fn compute_bound(f: &Facts) -> Story {
    let (last, usable) = (f.last, f.usable);
    let headline = if last.n > usable {
        format!(
            "scales; compute-bound: near-linear up to the {} usable CPUs, then flat — threads beyond them only share CPUs",
            format_count(usable)
        )
    } else {
        "scales; compute-bound".to_string()
    };
    let mut evidence = vec![efficiency_line(last, f.cap)];
    if let Some(i) = last.idle_of_usable {
        evidence.push(format!("CPUs busy: {}", idle_words(last, i, usable)));
    }
    Story {
        kind: DiagnosisKind::ComputeBound,
        headline,
        evidence,
    }
}

/// Scaling well on idle CPUs: concurrency overlaps the waits.
fn scales_waiting(f: &Facts, p: &Point, idle: f64) -> Story {
    let evidence = vec![
        efficiency_line(f.last, f.cap),
        format!(
            "{}: the command uses {} CPUs",
            idle_words(p, idle, f.usable),
            p.command_cpus
                .or(p.busy_cpus)
                .map_or("few".to_string(), |c| format!("{c:.2}"))
        ),
    ];
    Story {
        kind: DiagnosisKind::ScalesWaiting,
        headline: "scales; not CPU-bound: the work waits (sleep, I/O, network) and concurrency overlaps the waits"
            .to_string(),
        evidence,
    }
}

/// Idle CPUs, no blocking, poor scaling: the work waits on something else.
fn waiting(f: &Facts, p: &Point, idle: f64) -> Story {
    let (first, last, best, usable) = (f.first, f.last, f.best, f.usable);
    let mut evidence = Vec::new();
    if f.falls {
        evidence.push(format!(
            "throughput falls from {} at N = {} to {} at N = {}: the waits grow with N",
            format_si(best.throughput),
            format_count(best.n),
            format_si(last.throughput),
            format_count(last.n)
        ));
    }
    evidence.push(format!(
        "{} although {} could be busy",
        idle_words(p, idle, usable),
        format_count(p.n.min(usable))
    ));
    if let Some(c) = p.cpu.filter(|c| c.iowait >= 0.02) {
        evidence.push(format!(
            "{:.0}% of CPU time is iowait: the wait is on storage",
            100.0 * c.iowait
        ));
    }
    if let (Some(a), Some(b)) = (first.voluntary_cs_per_kop, last.voluntary_cs_per_kop) {
        evidence.push(format!(
            "voluntary context switches per 1000 ops stay at {} → {}: no sign of threads blocking on each other",
            format_si(a),
            format_si(b)
        ));
    }
    evidence.push(efficiency_line(last, f.cap));
    Story {
        kind: DiagnosisKind::Waiting,
        headline: "waiting on I/O or another resource: CPUs idle with no sign of lock contention"
            .to_string(),
        evidence,
    }
}

/// None of the stories above: the efficiency, the fit and what it predicts.
fn sub_linear(f: &Facts) -> Story {
    let mut evidence = Vec::new();
    if let Some((peak, x)) = f
        .fit
        .and_then(|fit| fit.peak_n.zip(fit.peak_x))
        .filter(|(p, _)| *p > f.n)
    {
        evidence.push(format!(
            "the fit peaks at N* ≈ {peak:.1} (X ≈ {}): more concurrency than that lowers throughput",
            format_si(x)
        ));
    }
    let headline = format!(
        "scales sub-linearly: efficiency {:.0}% at N = {}",
        100.0 * f.eff_usable,
        format_count(f.last.n)
    );
    if let Some(fit) = f.fit {
        evidence.push(format!(
            "USL: α = {} ± {}, β = {} ± {}",
            sci(fit.alpha),
            sci(fit.alpha_se),
            sci(fit.beta),
            sci(fit.beta_se)
        ));
    }
    if let Some((p, i)) = f.idle {
        evidence.push(idle_words(p, i, f.usable));
    }
    evidence.extend(f.blocking.clone());
    Story {
        kind: DiagnosisKind::SubLinear,
        headline,
        evidence,
    }
}

/// The traced lock, where one dominates: the contention has a name.
fn name_the_lock(a: &Analysis, story: &mut Story) {
    let Some((p, report, top)) = named_lock(a) else {
        return;
    };
    if story.kind == DiagnosisKind::Coherency {
        story.headline = story.headline.replacen(
            "coherency/contention:",
            &format!("coherency/contention at `{}`'s {}:", top.function, top.kind),
            1,
        );
        story.headline = story
            .headline
            .replace("; look for a shared lock or cache line", "");
    }
    story.evidence.push(format!(
        "at N = {}, {}",
        format_count(p.n),
        perfsleuth_report::lock_headline(report)
    ));
}

/// The level whose threads waited longest for locks (per run), with its
/// report and its main lock site, where that site holds at least half of
/// the level's lock wait.
fn named_lock(a: &Analysis) -> Option<(&Point, &LockReport, &LockSite)> {
    let per_run = |l: &LockReport| l.lock_wait_ns as f64 / f64::from(l.runs.max(1));
    let (p, report) = a
        .points
        .iter()
        .filter_map(|p| Some((p, p.locks.as_ref().filter(|l| l.lock_wait_ns > 0)?)))
        .max_by(|x, y| per_run(x.1).total_cmp(&per_run(y.1)))?;
    let top = report.locks().next().filter(|s| s.kind != "unknown")?;
    (top.wait_ns as f64 * 2.0 >= report.lock_wait_ns as f64).then_some((p, report, top))
}

/// "CPUs 50 % idle at N = 2" when the machine's idle time was measured at
/// that level; otherwise the share comes from the command's own CPU time
/// and says so, never claiming idle CPUs the table shows as missing (–).
fn idle_words(p: &Point, idle: f64, usable: f64) -> String {
    match (&p.cpu, p.command_cpus) {
        (None, Some(c)) => format!(
            "the command kept {c:.2} of the {} CPUs it could use busy at N = {} (from its CPU time; the machine's idle time was not measured)",
            format_count(p.n.min(usable)),
            format_count(p.n)
        ),
        _ => format!(
            "CPUs {:.0}% idle at N = {}",
            100.0 * idle,
            format_count(p.n)
        ),
    }
}

/// Threads blocking on each other: futex calls (preferred) or voluntary
/// context switches per unit of work growing with N.
fn blocking_evidence(first: &Point, last: &Point) -> Option<String> {
    let grows = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) => {
            (b >= BLOCKING_FLOOR_PER_KOP && b >= BLOCKING_GROWTH * a.max(1e-6)).then_some((a, b))
        }
        _ => None,
    };
    if let Some((a, b)) = grows(first.futex_per_kop, last.futex_per_kop) {
        return Some(format!(
            "futex calls per 1000 ops rise from {} at N = {} to {} at N = {}: threads block on a lock",
            format_si(a),
            format_count(first.n),
            format_si(b),
            format_count(last.n)
        ));
    }
    grows(first.voluntary_cs_per_kop, last.voluntary_cs_per_kop).map(|(a, b)| {
        format!(
            "voluntary context switches per 1000 ops rise from {} at N = {} to {} at N = {}: threads block, as on a contended mutex",
            format_si(a),
            format_count(first.n),
            format_si(b),
            format_count(last.n)
        )
    })
}

fn efficiency_line(last: &Point, usable: f64) -> String {
    if last.n > usable {
        format!(
            "efficiency {:.0}% at N = {} against the {} usable CPUs ({:.0}% per thread)",
            100.0 * last.speedup / usable,
            format_count(last.n),
            format_count(usable),
            100.0 * last.efficiency
        )
    } else {
        format!(
            "efficiency {:.0}% at N = {} (speed-up {:.2}×)",
            100.0 * last.efficiency,
            format_count(last.n),
            last.speedup
        )
    }
}

/// A coefficient in a compact form: 0.0267, 7.69e-4.
pub(crate) fn sci(v: f64) -> String {
    if !v.is_finite() {
        MISSING.to_string()
    } else if v == 0.0 {
        "0".to_string()
    } else if v.abs() >= 0.01 && v.abs() < 1e4 {
        format!("{v:.4}")
    } else {
        format!("{v:.2e}")
    }
}
