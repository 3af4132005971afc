//! The history as a section of the HTML report: one chart per series (its
//! points with their intervals, change points, environment changes) with
//! its numbers in tables beside it.

use crate::HistoryDoc;
use perfsleuth_model::quantity::MISSING;
use perfsleuth_model::schema::{HistoryCause, HistorySeries};
use perfsleuth_report::chart::{self, SeriesPoint};
use perfsleuth_report::format_change;
use perfsleuth_report::html::{details, escape, figure, notes, table};
use std::fmt::Write as _;

fn points_of(s: &HistorySeries) -> Vec<SeriesPoint> {
    s.points
        .iter()
        .map(|p| SeriesPoint {
            value: p.value,
            ci: p.ci.map(|c| (c[0], c[1])),
            label: p
                .commit
                .as_deref()
                .map(|c| perfsleuth_model::short_commit(c).to_string())
                .or_else(|| p.label.clone())
                .or_else(|| p.run_id.map(|i| format!("run {i}")))
                .unwrap_or_default(),
        })
        .collect()
}

/// One series as a chart: its points with their intervals, change points
/// and environment changes (the report's, and `history --plot`).
pub fn series_chart(s: &HistorySeries) -> String {
    let markers: Vec<(usize, String)> = s
        .markers
        .iter()
        .map(|m| {
            (
                m.index,
                m.changes
                    .iter()
                    .map(|c| c.summary.clone())
                    .collect::<Vec<_>>()
                    .join("; "),
            )
        })
        .collect();
    let cps: Vec<usize> = s.change_points.iter().map(|c| c.index).collect();
    let title = format!(
        "{} · {}{}",
        s.benchmark,
        s.metric,
        s.machine_label
            .as_ref()
            .map_or(String::new(), |m| format!(" · {m}"))
    );
    let fmt = |x: f64| crate::render::value(s, x);
    chart::series(&title, &s.metric, &fmt, &points_of(s), &cps, &markers)
}

/// The history section.
pub fn render_html(doc: &HistoryDoc) -> String {
    let mut out = String::from("<section><h2>History</h2>");
    let _ = write!(
        out,
        "<p class=\"sub\">{} series · {} order{}</p>",
        doc.series.len(),
        escape(&doc.order),
        doc.branch
            .as_ref()
            .map_or(String::new(), |b| format!(" · branch {}", escape(b)))
    );
    for s in &doc.series {
        let fmt = |x: f64| crate::render::value(s, x);
        let points = points_of(s);
        let rows: Vec<Vec<String>> = s
            .change_points
            .iter()
            .map(|c| {
                vec![
                    format!(
                        "{} → {}",
                        c.before.as_deref().unwrap_or("?"),
                        c.after.as_deref().unwrap_or("?")
                    ),
                    format!(
                        "{} [{} … {}]",
                        format_change(c.change),
                        format_change(c.ci[0]),
                        format_change(c.ci[1])
                    ),
                    perfsleuth_report::format_p(c.p),
                    match c.cause {
                        HistoryCause::Environment => "the machine".into(),
                        HistoryCause::Machine => "the machine (a common step)".into(),
                        HistoryCause::Code => "the code".into(),
                    },
                    c.environment.join("; "),
                ]
            })
            .collect();
        let point_rows: Vec<Vec<String>> = s
            .points
            .iter()
            .zip(&points)
            .map(|(p, sp)| {
                vec![
                    sp.label.clone(),
                    p.started_at.clone().unwrap_or_default(),
                    fmt(p.value),
                    p.ci.map_or(MISSING.into(), |c| format!("{} … {}", fmt(c[0]), fmt(c[1]))),
                ]
            })
            .collect();
        let numbers = format!(
            "{}{}",
            if rows.is_empty() {
                // Too few points to look for one: that, not "no change point".
                match &s.note {
                    Some(n) => format!("<p class=\"note\">{}</p>", escape(n)),
                    None => "<p class=\"note\">No change point.</p>".to_string(),
                }
            } else {
                table(
                    &[
                        "change point",
                        "change [95% CI]",
                        "p",
                        "cause",
                        "environment",
                    ],
                    &rows,
                )
            },
            details(
                "Every point",
                &table(&["point", "started", "value", "95% CI"], &point_rows),
                false
            )
        );
        out.push_str(&figure(
            &series_chart(s),
            &format!(
                "Each dot a run's median with its 95% interval; dashed red: a change point; triangles: the machine changed (hover for what). Noise {}.",
                if s.noise.is_finite() {
                    perfsleuth_compare::noise_text(s.noise, &s.noise_source)
                } else {
                    s.noise_source.clone()
                }
            ),
            &numbers,
        ));
        if let Some(n) = s.note.as_ref().filter(|_| !rows.is_empty()) {
            let _ = write!(out, "<p class=\"note\">{}</p>", escape(n));
        }
    }
    out.push_str(&notes(&doc.notes));
    out.push_str("</section>");
    out
}
