//! The scale sweep as a section of the HTML report: the throughput chart
//! with its USL fit (the chart of `scale --plot`), and per level the
//! throughput, speedup, efficiency and idle CPU in a table beside it, then
//! the diagnosis.

use crate::Analysis;
use perfsleuth_model::quantity::MISSING;
use perfsleuth_report::html::{escape, figure, notes, table};
use perfsleuth_report::{format_count, format_si};
use std::fmt::Write as _;

/// The scale section.
pub fn render_html(a: &Analysis, title: &str) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<section><h2>{}</h2>",
        escape(&format!("Scale: {title}"))
    );
    let pct = |v: f64| perfsleuth_model::quantity::format_share(v, 0);
    let rows: Vec<Vec<String>> = a
        .points
        .iter()
        .map(|p| {
            vec![
                format_count(p.n),
                p.runs.to_string(),
                format!("{}/s", format_si(p.throughput)),
                format!(
                    "{} … {}",
                    format_si(p.throughput_low),
                    format_si(p.throughput_high)
                ),
                if p.speedup.is_finite() {
                    format!("{:.2}×", p.speedup)
                } else {
                    MISSING.into()
                },
                pct(p.efficiency),
                p.idle_of_usable.map_or(MISSING.into(), pct),
                p.fitted
                    .map_or(MISSING.into(), |f| format!("{}/s", format_si(f))),
            ]
        })
        .collect();
    let svg = perfsleuth_report::chart::scaling(&crate::chart(a, title));
    out.push_str(&figure(
        &svg,
        "Dots: median throughput per level with its interval; line: the USL fit; dashed: linear scaling from N = 1; dotted: the ceiling.",
        &table(
            &[
                &format!("N ({})", a.parameter),
                "runs",
                "throughput",
                "95% CI",
                "speedup",
                "efficiency",
                "idle CPU",
                "USL fit",
            ],
            &rows,
        ),
    ));
    let diagnosis: Vec<String> = a
        .diagnosis
        .iter()
        .map(|d| d.headline.clone())
        .chain(a.warnings.iter().cloned())
        .collect();
    if !diagnosis.is_empty() {
        out.push_str("<h3>Diagnosis</h3>");
        out.push_str(&notes(&diagnosis));
    }
    // Each traced level's lock waits (`--locks`), with its sites and stacks.
    for p in &a.points {
        if let Some(locks) = &p.locks {
            out.push_str(&format!(
                "<h3>Lock waits at {} = {}</h3>",
                perfsleuth_report::html::escape(&a.parameter),
                format_count(p.n)
            ));
            out.push_str(&perfsleuth_report::html::lock_section(locks));
        }
    }
    out.push_str("</section>");
    out
}
