//! Renderers of an [`Analysis`]: the terminal table, JSON and the SVG chart.

use crate::diagnose::sci;
use crate::{Analysis, MAX_EXTRAPOLATION};
use perfsleuth_model::quantity::MISSING;
use perfsleuth_model::schema::{Document, FitModel, ScaleDoc};
use perfsleuth_report::chart::{ScaleChart, ScalePoint};
use perfsleuth_report::{Align, Style, format_count, format_si, table};

/// The table per N, the fit summary, the diagnosis and the warnings.
pub fn render_terminal(a: &Analysis, color: bool) -> String {
    let style = Style::new(color);
    let mut out = table(&level_rows(a), |c| {
        if c == 0 { Align::Left } else { Align::Right }
    });
    out.push('\n');
    out.push_str(&locks_block(a, &style));
    out.push_str(&fit_block(a));
    out.push_str(&diagnosis_block(a, &style));
    out
}

/// The table of levels: a header, then a row per level, with the columns
/// some level has a value for.
fn level_rows(a: &Analysis) -> Vec<Vec<String>> {
    let has_cpu = a.points.iter().any(|p| p.cpu.is_some());
    let has_own = a.points.iter().any(|p| p.command_cpus.is_some());
    let has_cs = a.points.iter().any(|p| p.voluntary_cs_per_kop.is_some());
    let has_futex = a.points.iter().any(|p| p.futex_per_kop.is_some());
    let has_fit = a.fit.is_some();

    let mut header = vec![
        a.parameter.clone(),
        "throughput".into(),
        "range".into(),
        "speed-up".into(),
        "efficiency".into(),
    ];
    if has_own {
        header.push("CPUs used".into());
    }
    if has_cpu {
        header.extend(["machine busy".into(), "idle".into(), "steal".into()]);
    }
    if has_cs {
        header.push("vol. cs/kop".into());
    }
    if has_futex {
        header.push("futex/kop".into());
    }
    if has_fit {
        header.push("fitted".into());
    }
    let mut rows = vec![header];
    for p in &a.points {
        let mut row = vec![
            format_count(p.n),
            format_si(p.throughput),
            if p.runs < 2 {
                MISSING.to_string()
            } else {
                format!(
                    "{}…{}",
                    format_si(p.throughput_low),
                    format_si(p.throughput_high)
                )
            },
            format!("{:.2}×", p.speedup),
            pct(p.efficiency),
        ];
        if has_own {
            row.push(p.command_cpus.map_or(MISSING.into(), |b| format!("{b:.2}")));
        }
        if has_cpu {
            row.push(p.busy_cpus.map_or(MISSING.into(), |b| format!("{b:.2}")));
            row.push(p.cpu.map_or(MISSING.into(), |c| pct(c.idle + c.iowait)));
            row.push(p.cpu.map_or(MISSING.into(), |c| pct(c.steal)));
        }
        if has_cs {
            row.push(p.voluntary_cs_per_kop.map_or(MISSING.into(), format_si));
        }
        if has_futex {
            row.push(p.futex_per_kop.map_or(MISSING.into(), format_si));
        }
        if has_fit {
            row.push(p.fitted.map_or(MISSING.into(), format_si));
        }
        rows.push(row);
    }
    rows
}

/// Where each level's threads waited (`--locks`), and what the tracer lost.
fn locks_block(a: &Analysis, style: &Style) -> String {
    let mut out = String::new();
    if a.points.iter().any(|p| p.locks.is_some()) {
        out.push_str("Locks (eBPF):\n");
        for p in &a.points {
            if let Some(l) = &p.locks {
                out.push_str(&format!(
                    "  {} = {}: {}\n",
                    a.parameter,
                    format_count(p.n),
                    perfsleuth_report::lock_headline(l)
                ));
            }
        }
        let traced: Vec<&perfsleuth_model::LockReport> =
            a.points.iter().filter_map(|p| p.locks.as_ref()).collect();
        if let Some(first) = traced.first() {
            let waits: u64 = traced.iter().map(|l| l.events.waits).sum();
            let samples: u64 = traced.iter().map(|l| l.events.samples).sum();
            // The losses are the whole trace's: said once.
            out.push_str(&format!(
                "  {}\n",
                style.dim(&format!(
                    "{} futex waits traced, {} stack samples, {}",
                    format_count(waits as f64),
                    format_count(samples as f64),
                    perfsleuth_report::lock_losses(first)
                ))
            ));
        }
        out.push('\n');
    }

    out
}

/// The fitted model and what follows from it, or why there is none.
fn fit_block(a: &Analysis) -> String {
    let mut out = String::new();
    match (&a.fit, &a.fit_error) {
        (Some(f), _) => {
            let model = match f.model {
                FitModel::Amdahl => "Amdahl's law, β = 0",
                FitModel::Linear => "linear, α = β = 0",
                FitModel::Usl => "USL",
            };
            out.push_str(&format!(
                "Fit ({model}): α = {} ± {}, β = {} ± {}, γ = {} ± {}; residual SE {}\n",
                sci(f.alpha),
                sci(f.alpha_se),
                sci(f.beta),
                sci(f.beta_se),
                format_si(f.gamma),
                format_si(f.gamma_se),
                format_si(f.residual_se)
            ));
            if let Some(c) = f.capacity {
                out.push_str(&format!(
                    "  capacity: {} usable CPUs (ideal term γ·min(N, {}))\n",
                    format_count(c),
                    format_count(c)
                ));
            }
            let mut facts = Vec::new();
            if let (Some(n), Some(x)) = (f.n_star, f.x_at_n_star) {
                facts.push(format!("N* = {n:.1}, X(N*) = {}", format_si(x)));
            } else if f.n_star_beyond_limit {
                facts.push(format!(
                    "N* lies beyond {MAX_EXTRAPOLATION}× the largest measured N (not extrapolated)"
                ));
            }
            if let Some(c) = f.amdahl_ceiling {
                facts.push(format!("Amdahl ceiling γ/α = {}", format_si(c)));
            }
            if let Some(r) = f.retrograde_from.filter(|r| *r < a.max_n()) {
                facts.push(format!("retrograde: throughput falls for N > {r:.1}"));
            }
            if !facts.is_empty() {
                out.push_str(&format!("  {}\n", facts.join("; ")));
            }
        }
        (None, Some(e)) => out.push_str(&format!("{e}\n")),
        (None, None) => {}
    }
    out
}

/// The diagnoses with their evidence, then the warnings.
fn diagnosis_block(a: &Analysis, style: &Style) -> String {
    let mut out = String::new();
    for d in &a.diagnosis {
        out.push_str(&format!(
            "\n{}\n",
            style.bold(&format!("Diagnosis: {}", d.headline))
        ));
        for e in &d.evidence {
            out.push_str(&format!("  - {e}\n"));
        }
    }
    if !a.warnings.is_empty() {
        out.push('\n');
        for w in &a.warnings {
            out.push_str(&format!("{} {w}\n", style.yellow("warning:")));
        }
    }
    out
}

fn pct(v: f64) -> String {
    perfsleuth_model::quantity::format_share(v, 0)
}

/// The analysis as its typed JSON document (`perfsleuth/scale`); `run_id`
/// is the store id of the sweep, when it was stored.
pub fn to_json(a: &Analysis, run_id: Option<i64>) -> ScaleDoc {
    ScaleDoc {
        schema: ScaleDoc::SCHEMA.to_string(),
        schema_version: ScaleDoc::VERSION,
        run_id,
        analysis: a.clone(),
    }
}

/// The chart `--plot` writes: points with error bars, the fitted curve up to
/// 2× the largest N at most, the linear ideal, the Amdahl ceiling and N*.
pub fn chart(a: &Analysis, title: &str) -> ScaleChart {
    let max_n = a.max_n();
    let fit = a.fit.as_ref();
    // Draw the curve a little past the data, but never beyond the limit.
    let end = (max_n * 1.25).min(MAX_EXTRAPOLATION * max_n);
    let fitted: Vec<(f64, f64)> = match fit {
        Some(_) => (0..=200)
            .filter_map(|i| {
                let n = 1.0 + (end - 1.0).max(0.0) * i as f64 / 200.0;
                a.fitted(n).map(|x| (n, x))
            })
            .collect(),
        None => Vec::new(),
    };
    let fit_label = fit.map_or(String::new(), |f| {
        format!(
            "USL fit: α={} β={} γ={}",
            sci(f.alpha),
            sci(f.beta),
            format_si(f.gamma)
        )
    });
    let mut notes: Vec<String> = a.diagnosis.iter().map(|d| d.headline.clone()).collect();
    if let Some(c) = fit.and_then(|f| f.capacity) {
        notes.push(format!(
            "fit assumes at most {} threads run at once (usable CPUs)",
            format_count(c)
        ));
    }
    ScaleChart {
        title: title.to_string(),
        x_label: format!("concurrency N ({})", a.parameter),
        y_label: "throughput X(N) (per second)".to_string(),
        points: a
            .points
            .iter()
            .map(|p| ScalePoint {
                n: p.n,
                median: p.throughput,
                low: p.throughput_low,
                high: p.throughput_high,
            })
            .collect(),
        fitted,
        fit_label,
        linear_slope: fit.map(|f| f.gamma),
        ceiling: fit.and_then(|f| f.amdahl_ceiling),
        peak: fit
            .and_then(|f| f.n_star.zip(f.x_at_n_star))
            .filter(|(n, _)| *n <= end),
        notes,
    }
}
