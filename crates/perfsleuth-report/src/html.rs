//! The self-contained HTML report: one file, inline CSS and SVG, no script
//! and no network; light and dark by `prefers-color-scheme`. Each section
//! (run, comparison, history, scale, probe) is rendered by the crate that
//! owns its numbers with the pieces here; the binary assembles the page.

use crate::chart::{self, Lane};
use crate::{BenchmarkReport, RunReport, format_bytes, format_duration_ns};
use perfsleuth_model::quantity::MISSING;
use perfsleuth_model::{Environment, ImpactClass, Metric, Run};
use std::fmt::Write as _;

pub use crate::markup::{CHART_CSS, escape};

const PAGE_CSS: &str = r#"
:root{color-scheme:light dark;--fg:#1d1d1f;--muted:#5f6368;--bg:#fff;--card:#f6f7f9;--line:#dcdfe3;--reg:#B54708;--imp:#067647}
@media (prefers-color-scheme:dark){:root{--fg:#e8e8e8;--muted:#a0a4a8;--bg:#121212;--card:#1e1e1e;--line:#333;--reg:#FF8C4A;--imp:#3FD1A6}}
body{margin:0 auto;max-width:1100px;padding:24px;background:var(--bg);color:var(--fg);font:15px/1.45 system-ui,-apple-system,"Segoe UI",sans-serif}
h1{font-size:24px;margin:0 0 4px} h2{font-size:19px;margin:32px 0 8px;border-bottom:1px solid var(--line);padding-bottom:4px} h3{font-size:16px;margin:20px 0 6px}
.sub{color:var(--muted);margin:0 0 16px}
table{border-collapse:collapse;margin:8px 0 16px;font-size:13px}
th,td{border-bottom:1px solid var(--line);padding:4px 10px;text-align:right;vertical-align:top}
th{color:var(--muted);font-weight:600} td:first-child,th:first-child{text-align:left}
td.l{text-align:left}
.regressed{color:var(--reg);font-weight:600} .improved{color:var(--imp);font-weight:600}
details{background:var(--card);border:1px solid var(--line);border-radius:6px;padding:6px 12px;margin:10px 0}
img.flame{display:block;max-width:100%;height:auto;margin:8px 0;border-radius:4px}
summary{cursor:pointer;font-weight:600}
.note{color:var(--muted)} ul.notes li{margin:2px 0}
figure{margin:12px 0;overflow-x:auto} figcaption{color:var(--muted);font-size:13px}
code{font-size:13px}
"#;

/// A whole page: `title`, a line under it, then the sections (HTML).
pub fn page(title: &str, subtitle: &str, sections: &[String]) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><meta name=\"viewport\" content=\"width=device-width, initial-scale=1\"><meta name=\"generator\" content=\"perfsleuth {}\"><title>{}</title><style>{}{}</style></head><body><h1>{}</h1><p class=\"sub\">{}</p>",
        env!("CARGO_PKG_VERSION"),
        escape(title),
        PAGE_CSS,
        CHART_CSS,
        escape(title),
        escape(subtitle),
    );
    for s in sections {
        out.push_str(s);
    }
    out.push_str("</body></html>\n");
    out
}

/// A table; cells are escaped, the first column left-aligned.
pub fn table(headers: &[&str], rows: &[Vec<String>]) -> String {
    let mut out = String::from("<table><thead><tr>");
    for h in headers {
        let _ = write!(out, "<th>{}</th>", escape(h));
    }
    out.push_str("</tr></thead><tbody>");
    for r in rows {
        out.push_str("<tr>");
        for c in r {
            let _ = write!(out, "<td>{}</td>", escape(c));
        }
        out.push_str("</tr>");
    }
    out.push_str("</tbody></table>");
    out
}

/// A chart with its text alternative (a table of its numbers) under it.
pub fn figure(svg: &str, caption: &str, numbers: &str) -> String {
    format!(
        "<figure>{svg}<figcaption>{}</figcaption>{numbers}</figure>",
        escape(caption)
    )
}

/// A collapsible block.
pub fn details(summary: &str, inner: &str, open: bool) -> String {
    format!(
        "<details{}><summary>{}</summary>{inner}</details>",
        if open { " open" } else { "" },
        escape(summary)
    )
}

/// Notes as a list.
pub fn notes(items: &[String]) -> String {
    if items.is_empty() {
        return String::new();
    }
    let mut out = String::from("<ul class=\"notes\">");
    for n in items {
        let _ = write!(out, "<li>{}</li>", escape(n));
    }
    out.push_str("</ul>");
    out
}

/// The identity and performance facts of an environment, collapsible
/// (context facts left out: they always differ).
pub fn environment(env: &Environment, summary: &str) -> String {
    let mut rows = Vec::new();
    for class in [ImpactClass::Identity, ImpactClass::Performance] {
        for (k, f) in &env.facts {
            if f.class == class {
                rows.push(vec![k.clone(), f.value.clone(), class.as_str().to_string()]);
            }
        }
    }
    details(
        &format!("{summary} ({} facts)", rows.len()),
        &table(&["fact", "value", "class"], &rows).replace("<td>", "<td class=\"l\">"),
        false,
    )
}

fn ns(v: f64) -> String {
    format_duration_ns(v)
}

/// The distribution chart of a run: every benchmark's samples of wall time
/// (Ir in simulation) on one axis (the report's first chart, and `run --plot`).
pub fn distribution_chart(run: &Run, report: &RunReport) -> String {
    let simulated = run.mode == perfsleuth_model::Mode::Simulation;
    let lanes: Vec<Lane> = report
        .order
        .iter()
        .filter_map(|&i| Some((run.benchmarks.get(i)?, report.benchmarks.get(i)?)))
        .map(|(_, r)| Lane {
            label: r.name.clone(),
            values: metric_values(run, r, simulated),
            median_ci: if simulated {
                None
            } else {
                r.wall.as_ref().map(|w| (w.median_ci.lo, w.median_ci.hi))
            },
        })
        .collect();
    let (label, fmt): (&str, &dyn Fn(f64) -> String) = if simulated {
        ("instructions (Ir)", &|v| crate::format_count(v))
    } else {
        ("wall time", &ns)
    };
    chart::distribution(&format!("Distribution of {label}"), label, fmt, &lanes)
}

/// The run section: per benchmark its distribution and the progression of
/// its samples, the statistics and counters, several commands side by
/// side with their ratio, and the environment.
pub fn run_section(run: &Run, report: &RunReport) -> String {
    let mut out = String::new();
    let id = run
        .id
        .map_or("this run".to_string(), |i| format!("run {i}"));
    let _ = write!(
        out,
        "<section><h2>{}</h2><p class=\"sub\">{} · {} · {} benchmark{} · perfsleuth {}</p>",
        escape(&format!("Run: {id}")),
        escape(&run.started_at),
        escape(run.mode.as_str()),
        run.benchmarks.len(),
        if run.benchmarks.len() == 1 { "" } else { "s" },
        escape(&run.tool_version),
    );
    let simulated = run.mode == perfsleuth_model::Mode::Simulation;
    let metric = |b: &perfsleuth_model::Benchmark| sample_values(b, simulated);
    let fmt: &dyn Fn(f64) -> String = if simulated {
        &|v| crate::format_count(v)
    } else {
        &ns
    };
    let label = if simulated {
        "instructions (Ir)"
    } else {
        "wall time"
    };
    let rows: Vec<Vec<String>> = report
        .order
        .iter()
        .filter_map(|&i| report.benchmarks.get(i))
        .map(|r| summary_row(r, simulated, &metric_values(run, r, simulated)))
        .collect();
    out.push_str(&figure(
        &distribution_chart(run, report),
        "Box: quartiles, whiskers at 1.5 × IQR, bar: median; shaded: the median's 95% interval; dots: every sample (thinned above 400).",
        &table(
            &["benchmark", "runs", "median", "95% CI", "mean ± σ", "min … max", "peak RSS"],
            &rows,
        ),
    ));
    if report.benchmarks.len() > 1 && !report.comparisons.is_empty() {
        let reference = report
            .benchmarks
            .get(report.reference)
            .map_or(String::new(), |r| r.name.clone());
        let mut rows = Vec::new();
        for c in &report.comparisons {
            let Some(b) = report.benchmarks.get(c.index) else {
                continue;
            };
            let t = c.time.as_ref();
            rows.push(vec![
                b.name.clone(),
                t.map_or(MISSING.into(), |t| format!("{:.3}×", t.ratio)),
                t.map_or(MISSING.into(), |t| {
                    format!("{:.3} … {:.3}", t.ci.lo, t.ci.hi)
                }),
                match t {
                    Some(t) if t.significant => "differs".into(),
                    Some(_) if c.time_inconclusive => "inconclusive".into(),
                    Some(_) => "within noise".into(),
                    None => MISSING.into(),
                },
                c.judged.sentence(),
            ]);
        }
        let _ = write!(
            out,
            "<h3>Side by side, against {}</h3>{}",
            escape(&reference),
            table(
                &[
                    "benchmark",
                    "time ratio",
                    &format!("{} CI", crate::format::format_level(report.confidence)),
                    "verdict",
                    "judged"
                ],
                &rows
            )
        );
    }
    for &i in &report.order {
        let (Some(b), Some(r)) = (run.benchmarks.get(i), report.benchmarks.get(i)) else {
            continue;
        };
        let values = metric(b);
        let rounds: Vec<u32> = b.samples.iter().map(|s| s.round).collect();
        let _ = write!(out, "<h3>{}</h3>", escape(&r.name));
        let _ = write!(
            out,
            "<p class=\"note\"><code>{}</code></p>",
            escape(&r.command)
        );
        let numbers = progression_table(&values, &rounds, fmt);
        out.push_str(&figure(
            &chart::progression(
                &format!("{}: samples in run order", crate::shortened(&r.name, 60)),
                label,
                fmt,
                &values,
                &rounds,
            ),
            "Each dot one timed run, in the order measured; dashed lines start a new round (colours alternate by round). Warm-up effects and drift show as a slope.",
            &numbers,
        ));
        if !r.counters.is_empty() {
            let rows: Vec<Vec<String>> = r
                .counters
                .iter()
                .map(|(c, v)| vec![c.key.to_string(), crate::format_count(*v)])
                .collect();
            out.push_str(&details(
                "Counters (median per run)",
                &table(&["counter", "median"], &rows),
                false,
            ));
        }
        if let Some(locks) = &b.locks {
            out.push_str(&lock_section(locks));
        }
        if let Some(p) = &b.stacks {
            out.push_str(&profile_section(&b.name, p));
        }
        if let Some(p) = &b.allocs {
            out.push_str(&alloc_section(&b.name, p));
        }
    }
    out.push_str(&environment(&run.environment, "Environment"));
    out.push_str("</section>");
    out
}

/// A benchmark's sampled stacks (`--profile`): the headline, the flame
/// graph, and the functions with their self and inclusive shares.
pub fn profile_section(name: &str, p: &perfsleuth_model::StackProfile) -> String {
    let total = p.samples.max(1) as f64;
    let share = |n: u64| perfsleuth_model::quantity::format_share(n as f64 / total, 1);
    let rows: Vec<Vec<String>> = p
        .top_functions(20)
        .named
        .iter()
        .map(|f| {
            vec![
                f.label().replace('`', ""),
                f.frame.module.clone(),
                share(f.self_total()),
                share(f.inclusive_total()),
            ]
        })
        .collect();
    let mut inner = format!(
        "<p>{}</p><p class=\"note\">{}</p>",
        escape(&crate::stacks_headline(p)),
        escape(&crate::stacks_events(p, None))
    );
    let samples = crate::in_samples(&[p]);
    if let Some(svg) = crate::flame_svg(
        &crate::folded_per_run(&[p], samples),
        name,
        crate::flame_unit(samples),
    ) {
        let what = if p.has_off_cpu() {
            "time on the CPU and, in blue, off it"
        } else {
            "on-CPU time"
        };
        inner.push_str(&crate::svg_img(
            &svg,
            &format!("Flame graph of {name}: {what} per run by call stack"),
        ));
    }
    inner.push_str(&table(&["function", "object", "self", "inclusive"], &rows));
    details(
        if p.has_off_cpu() {
            "Profile (time on and off the CPU)"
        } else {
            "Profile (on-CPU time, sampled)"
        },
        &inner,
        true,
    )
}

/// A benchmark's allocation profile (`--profile=alloc`): the headline, a
/// flame graph of the bytes asked for a run by call stack, and the
/// functions with their bytes, allocations and bytes live at the peak.
pub fn alloc_section(name: &str, p: &perfsleuth_model::AllocProfile) -> String {
    let runs = p.iterations.len().max(1) as f64;
    let bytes = |v: &[f64]| perfsleuth_model::quantity::format_bytes(v.iter().sum::<f64>() / runs);
    let rows: Vec<Vec<String>> = p
        .functions()
        .iter()
        .take(20)
        .map(|f| {
            vec![
                f.frame.function.clone(),
                f.frame.module.clone(),
                bytes(&f.self_bytes),
                perfsleuth_model::quantity::format_si(f.self_count.iter().sum::<f64>() / runs),
                bytes(&f.at_peak),
                bytes(&f.inclusive_bytes),
            ]
        })
        .collect();
    let mut inner = format!(
        "<p>{}</p><p class=\"note\">{}</p>",
        escape(&crate::allocs_headline(p)),
        escape(&crate::allocs_events(p))
    );
    if let Some(svg) = crate::flame_svg(&crate::alloc_folded(p), name, "KiB a run") {
        inner.push_str(&crate::svg_img(
            &svg,
            &format!("Flame graph of {name}: bytes allocated per run by call stack (sampled)"),
        ));
    }
    inner.push_str(&table(
        &[
            "function",
            "object",
            "bytes a run",
            "allocations a run",
            "live at the peak",
            "inclusive bytes",
        ],
        &rows,
    ));
    details("Allocations (exact counts; stacks sampled)", &inner, true)
}

/// A benchmark's lock waits (`--locks`): the headline, every site with
/// its share and stack, and what the tracer saw and lost.
pub fn lock_section(r: &perfsleuth_model::LockReport) -> String {
    let runs = f64::from(r.runs.max(1));
    let rows: Vec<Vec<String>> = r
        .sites
        .iter()
        .map(|s| {
            let share = if s.is_lock() && r.lock_wait_ns > 0 {
                perfsleuth_model::quantity::format_share(
                    s.wait_ns as f64 / r.lock_wait_ns as f64,
                    0,
                )
            } else {
                MISSING.to_string()
            };
            vec![
                s.kind.clone(),
                s.function.clone(),
                s.location.clone(),
                s.caller.clone().unwrap_or_default(),
                s.object.clone().unwrap_or_default(),
                ns(s.wait_ns as f64 / runs),
                crate::format_count(s.waits as f64 / runs),
                share,
            ]
        })
        .collect();
    let mut inner = format!("<p>{}</p>", escape(&crate::lock_headline(r)));
    if !rows.is_empty() {
        inner.push_str(&table(
            &[
                "kind",
                "function",
                "where",
                "caller",
                "lock",
                "wait a run",
                "waits a run",
                "share of lock wait",
            ],
            &rows,
        ));
    }
    for s in r.sites.iter().filter(|s| !s.stack.is_empty()) {
        inner.push_str(&details(
            &format!("Stack at {} ({})", s.function, s.kind),
            &format!("<pre>{}</pre>", escape(&s.stack.join("\n"))),
            false,
        ));
    }
    inner.push_str(&format!(
        "<p class=\"note\">{}</p>",
        escape(&crate::lock_events(r))
    ));
    details("Lock waits (eBPF)", &inner, true)
}

fn metric_values(run: &Run, r: &BenchmarkReport, simulated: bool) -> Vec<f64> {
    let Some(b) = run
        .benchmarks
        .iter()
        .find(|b| b.name == r.name && b.parameters == r.parameters)
    else {
        return Vec::new();
    };
    sample_values(b, simulated)
}

/// What a run's samples measured: wall time, or in simulation (which timed
/// valgrind) the instruction counts.
fn sample_values(b: &perfsleuth_model::Benchmark, simulated: bool) -> Vec<f64> {
    if simulated {
        b.samples
            .iter()
            .filter_map(|s| s.counters.get("Ir").copied())
            .collect()
    } else {
        b.samples.iter().map(|s| Metric::Wall.of(s)).collect()
    }
}

fn summary_row(r: &BenchmarkReport, simulated: bool, values: &[f64]) -> Vec<String> {
    let rss = r
        .peak_rss
        .as_ref()
        .map_or(MISSING.into(), |s| format_bytes(s.median));
    if simulated {
        let mut v: Vec<f64> = values.to_vec();
        v.sort_by(f64::total_cmp);
        let med = perfsleuth_stats::percentile(&v, 50.0);
        return vec![
            r.name.clone(),
            r.runs.to_string(),
            med.map_or(MISSING.into(), crate::format_count),
            "exact".into(),
            MISSING.into(),
            match (v.first(), v.last()) {
                (Some(a), Some(b)) => {
                    format!("{} … {}", crate::format_count(*a), crate::format_count(*b))
                }
                _ => MISSING.into(),
            },
            rss,
        ];
    }
    match &r.wall {
        Some(w) => vec![
            r.name.clone(),
            r.runs.to_string(),
            ns(w.median),
            format!("{} … {}", ns(w.median_ci.lo), ns(w.median_ci.hi)),
            format!("{} ± {}", ns(w.mean), ns(w.stddev)),
            format!("{} … {}", ns(w.min), ns(w.max)),
            rss,
        ],
        None => vec![
            r.name.clone(),
            "0".into(),
            MISSING.into(),
            MISSING.into(),
            MISSING.into(),
            MISSING.into(),
            rss,
        ],
    }
}

/// The progression's numbers: per round, its samples' count, median and range.
fn progression_table(values: &[f64], rounds: &[u32], fmt: &dyn Fn(f64) -> String) -> String {
    let mut by_round: std::collections::BTreeMap<u32, Vec<f64>> = Default::default();
    for (v, r) in values.iter().zip(rounds) {
        if v.is_finite() {
            by_round.entry(*r).or_default().push(*v);
        }
    }
    let rows: Vec<Vec<String>> = by_round
        .into_iter()
        .map(|(r, mut v)| {
            v.sort_by(f64::total_cmp);
            vec![
                format!("round {}", r + 1),
                v.len().to_string(),
                perfsleuth_stats::percentile(&v, 50.0).map_or(MISSING.into(), fmt),
                format!(
                    "{} … {}",
                    v.first().map_or(MISSING.into(), |x| fmt(*x)),
                    v.last().map_or(MISSING.into(), |x| fmt(*x))
                ),
            ]
        })
        .collect();
    details(
        "The numbers, per round",
        &table(&["round", "samples", "median", "min … max"], &rows),
        false,
    )
}
