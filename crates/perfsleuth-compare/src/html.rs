//! The comparison as a section of the HTML report: each benchmark and
//! metric's change with its interval against the noise band, coloured by
//! verdict, with its table; the environment diff with the why of each
//! change; in simulation the functions whose cost moved; the notes.

use crate::{Comparison, MACHINES_DIFFER, VerdictLabel};
use perfsleuth_model::ImpactClass;
use perfsleuth_model::quantity::MISSING;
use perfsleuth_report::chart::{self, Change};
use perfsleuth_report::html::{details, escape, figure, notes, table};
use perfsleuth_report::{format_change, format_metric};
use std::fmt::Write as _;

/// A function in the noise holding at least this share of the time shown
/// keeps its row in the report's function table; smaller ones are counted.
const LARGE_SHARE: f64 = 0.05;

/// The comparison section.
pub fn render_html(c: &Comparison) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<section><h2>{}</h2>",
        escape(&format!("Comparison: {} → {}", c.baseline, c.candidate))
    );
    if c.identity_changed {
        let _ = write!(
            out,
            "<p class=\"regressed\">{}</p>",
            escape(MACHINES_DIFFER)
        );
    }
    let counts = crate::render::counts_plain(c);
    let _ = write!(out, "<p class=\"sub\">{}</p>", escape(&counts));
    changes_section(&mut out, c);
    environment_section(&mut out, c);
    counted_functions_section(&mut out, c);
    flames_section(&mut out, c);
    timed_functions_section(&mut out, c);
    let mut all_notes: Vec<String> = c.notes.clone();
    for r in &c.rows {
        for n in &r.notes {
            all_notes.push(format!("{} · {}: {n}", r.key(), r.metric.name()));
        }
    }
    if !all_notes.is_empty() {
        out.push_str("<h3>Notes</h3>");
        out.push_str(&notes(&all_notes));
    }
    out.push_str("</section>");
    out
}

/// The chart of every change against its noise band, and its table.
fn changes_section(out: &mut String, c: &Comparison) {
    let changes = change_rows(c);
    let mut rows = Vec::new();
    for r in &c.rows {
        let verdict = r.verdict.as_str().to_string();
        rows.push(vec![
            r.key(),
            format!(
                "{}{}",
                r.metric.name(),
                if r.gating { " (gating)" } else { "" }
            ),
            value(r.metric, r.baseline_median),
            value(r.metric, r.candidate_median),
            r.change.as_ref().map_or(MISSING.into(), |ch| {
                format!(
                    "{} [{} … {}]",
                    format_change(ch.change),
                    format_change(ch.ci.lo),
                    format_change(ch.ci.hi)
                )
            }),
            if r.band > 0.0 {
                format!("±{}", format_change(r.band).trim_start_matches('+'))
            } else {
                MISSING.into()
            },
            r.p_shown()
                .map_or(MISSING.into(), perfsleuth_report::format_p),
            verdict,
        ]);
    }
    if !changes.is_empty() {
        out.push_str(&figure(
            &changes_chart(c),
            &format!("Dot: the change of the median; line: its {} interval; shaded: the noise band it must leave to count. Orange: regressed, green: improved, grey: neither.", perfsleuth_model::quantity::format_level(c.confidence)),
            &table(
                &[
                    "benchmark",
                    "metric",
                    "baseline",
                    "candidate",
                    &crate::render::ci_header(c),
                    "noise band",
                    "p",
                    "verdict",
                ],
                &rows,
            ),
        ));
    } else {
        out.push_str("<p>No benchmarks in common.</p>");
    }
}

/// What differs between the machines, identity first, with why each can move results.
fn environment_section(out: &mut String, c: &Comparison) {
    // The environment diff, identity first.
    if !c.env_changes.is_empty() {
        let rows: Vec<Vec<String>> = c
            .env_changes
            .iter()
            .map(|ch| {
                vec![
                    ch.summary.clone(),
                    ch.class.as_str().to_string(),
                    ch.why.to_string(),
                ]
            })
            .collect();
        let open = c
            .env_changes
            .iter()
            .any(|ch| ch.class == ImpactClass::Identity);
        out.push_str(&details(
            &format!(
                "What differs between the machines ({})",
                c.env_changes.len()
            ),
            &table(&["change", "class", "why it can move results"], &rows)
                .replace("<td>", "<td class=\"l\">"),
            open,
        ));
    }
}

/// Simulation: the functions whose counted cost moved most.
fn counted_functions_section(out: &mut String, c: &Comparison) {
    // Simulation: where the counted cost moved.
    for r in c.rows.iter().filter(|r| !r.functions.is_empty()) {
        let rows: Vec<Vec<String>> = r
            .functions
            .iter()
            .map(|f| {
                vec![
                    f.function.clone(),
                    f.object.clone(),
                    perfsleuth_report::format_count(f.baseline),
                    perfsleuth_report::format_count(f.candidate),
                    perfsleuth_report::format_count(f.candidate - f.baseline),
                ]
            })
            .collect();
        out.push_str(&details(
            &format!(
                "{} · {}: the functions whose own cost moved most",
                r.key(),
                r.metric.name()
            ),
            &table(&["function", "object", "baseline", "candidate", "Δ"], &rows),
            true,
        ));
    }
}

/// Both sides profiled: a differential flame graph per benchmark.
fn flames_section(out: &mut String, c: &Comparison) {
    // Both sides profiled: a differential flame graph per benchmark.
    for f in &c.flames {
        let Some(svg) = perfsleuth_report::diff_flame_svg(&f.before, &f.after, &f.key, f.unit)
        else {
            continue;
        };
        let img = perfsleuth_report::svg_img(
            &svg,
            &format!(
                "Differential flame graph of {}: the candidate's stacks, red where they took more time a run than in the baseline, blue where less",
                f.key
            ),
        );
        out.push_str(&details(
            &format!(
                "{}: where the on-CPU time moved (differential flame graph; red: more time a run in the candidate, blue: less)",
                f.key
            ),
            &img,
            true,
        ));
    }
}

/// Wall time, profiled: the functions whose time moved, those holding a large
/// part of it, and the rest counted in one line.
fn timed_functions_section(out: &mut String, c: &Comparison) {
    // Wall time, profiled: where the time moved. The functions that moved
    // and those that hold a large part of the time are shown; the rest,
    // small and in the noise, are counted in one line.
    for r in c.rows.iter().filter(|r| !r.time_functions.is_empty()) {
        let d = |ns: f64| perfsleuth_model::quantity::format_duration_ns(ns);
        let shift = |s: &perfsleuth_stats::MedianShift| {
            format!("{} [{}, {}]", d(s.shift), d(s.ci.lo), d(s.ci.hi))
        };
        let size = |f: &crate::TimeMove| f.baseline_self_ns.max(f.candidate_self_ns);
        let total: f64 = r.time_functions.iter().map(size).sum();
        let (shown, folded): (Vec<_>, Vec<_>) = r
            .time_functions
            .iter()
            .partition(|f| !f.in_the_noise() || size(f) >= LARGE_SHARE * total);
        let mut rows: Vec<Vec<String>> = shown
            .iter()
            .map(|f| {
                vec![
                    f.label().replace('`', ""),
                    f.object.clone(),
                    d(f.baseline_self_ns),
                    d(f.candidate_self_ns),
                    shift(&f.self_shift),
                    shift(&f.inclusive_shift),
                    if f.in_the_noise() {
                        "in the noise"
                    } else {
                        "moved"
                    }
                    .to_string(),
                ]
            })
            .collect();
        if !folded.is_empty() {
            let mut row = vec![
                format!(
                    "{} more function{}, each under {:.0}% of the time and in the noise",
                    folded.len(),
                    if folded.len() == 1 { "" } else { "s" },
                    100.0 * LARGE_SHARE
                ),
                String::new(),
            ];
            row.extend(std::iter::repeat_n(String::new(), 5));
            rows.push(row);
        }
        out.push_str(&details(
            &format!(
                "{} · {}: the functions whose time moved most (per run, sampled)",
                r.key(),
                r.metric.name()
            ),
            &table(
                &[
                    "function",
                    "object",
                    "baseline self",
                    "candidate self",
                    "Δ self",
                    "Δ inclusive",
                    "",
                ],
                &rows,
            ),
            true,
        ));
    }
}

fn change_rows(c: &Comparison) -> Vec<Change> {
    c.rows
        .iter()
        // Rows too thin to judge stay in the table, off the chart's scale.
        .filter(|r| r.verdict != VerdictLabel::InsufficientData)
        .filter_map(|r| {
            let ch = r.change.as_ref()?;
            Some(Change {
                label: format!("{} · {}", r.key(), r.metric.name()),
                change: ch.change,
                low: ch.ci.lo,
                high: ch.ci.hi,
                band: r.band,
                verdict: r.verdict.as_str().to_string(),
            })
        })
        .collect()
}

/// Each change with its interval against the noise band, coloured by
/// verdict (the report's chart, and `compare --plot`).
pub fn changes_chart(c: &Comparison) -> String {
    chart::changes(
        &format!(
            "{} → {}: change per benchmark and metric",
            c.baseline, c.candidate
        ),
        &change_rows(c),
    )
}

fn value(metric: perfsleuth_model::Metric, v: f64) -> String {
    if v.is_finite() {
        format_metric(metric, v)
    } else {
        MISSING.into()
    }
}
