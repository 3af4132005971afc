//! Probe runs as sections of the HTML report: the memory ladder with the
//! steps found and the fingerprint's cache sizes, every result in a table;
//! and two probe runs' headline differences against their noise bands.

use super::text::fmt_value;
use crate::chart::{self, Change};
use crate::format_size;
use crate::html::{details, escape, figure, table};
use perfsleuth_model::Run;
use perfsleuth_model::quantity::MISSING;
use std::fmt::Write as _;

/// One probe run.
pub fn render_html(run: &Run, label: &str) -> String {
    let mut out = String::new();
    let _ = write!(
        out,
        "<section><h2>{}</h2>",
        escape(&format!("Probes: {label}"))
    );
    let ladder: Vec<(f64, f64)> = run
        .probes
        .iter()
        .filter(|r| r.probe == "memory")
        .filter_map(|r| {
            Some((
                r.metric.strip_prefix("ladder_")?.parse::<f64>().ok()?,
                r.value,
            ))
        })
        .collect();
    if !ladder.is_empty() {
        let mut marks: Vec<(f64, String, bool)> = run
            .probes
            .iter()
            .filter(|r| r.probe == "memory" && r.metric.ends_with("_size") && r.unit == "bytes")
            .map(|r| {
                (
                    r.value,
                    format!(
                        "{} {}",
                        r.metric.trim_end_matches("_size").to_uppercase(),
                        format_size(r.value)
                    ),
                    false,
                )
            })
            .collect();
        for level in ["l1d", "l2", "l3"] {
            if let Some(size) = run
                .environment
                .get(&format!("cpu.cache.{level}.size"))
                .and_then(perfsleuth_probe::parse_size)
            {
                marks.push((
                    size as f64,
                    format!("{} (fingerprint)", level.to_uppercase()),
                    true,
                ));
            }
        }
        let rows: Vec<Vec<String>> = ladder
            .iter()
            .map(|(s, v)| vec![format_size(*s), fmt_value(*v, "ns")])
            .collect();
        out.push_str(&figure(
            &chart::ladder("Memory ladder", &ladder, &marks, &|v| format_size(v)),
            "Latency of a dependent load at each working-set size; solid red: where the probe found latency to step up; dashed: the caches the fingerprint lists.",
            &details("The ladder's numbers", &table(&["working set", "latency"], &rows), false),
        ));
    }
    let rows: Vec<Vec<String>> = run
        .probes
        .iter()
        .filter(|r| r.headline)
        .map(|r| {
            vec![
                r.probe.clone(),
                r.metric.clone(),
                fmt_value(r.value, &r.unit),
                // A size's spread is the ladder's resolution, not noise.
                if r.spread.is_finite() && r.unit != "bytes" {
                    format!("±{:.0}%", 50.0 * r.spread)
                } else {
                    MISSING.into()
                },
                if r.stable { "yes" } else { "no" }.into(),
            ]
        })
        .collect();
    out.push_str(&table(
        &["probe", "metric", "value", "spread", "stable"],
        &rows,
    ));
    out.push_str("</section>");
    out
}

/// Two probe runs: each headline metric's change against its noise band.
pub fn render_diff_html(a_label: &str, a: &Run, b_label: &str, b: &Run) -> String {
    let deltas = perfsleuth_probe::diff_runs(a, b);
    let mut out = String::new();
    let _ = write!(
        out,
        "<section><h2>{}</h2>",
        escape(&format!("Probe diff: {a_label} → {b_label}"))
    );
    let shown: Vec<_> = deltas
        .iter()
        .filter(|d| d.headline && d.ratio.is_finite())
        .collect();
    let changes: Vec<Change> = shown
        .iter()
        .map(|d| Change {
            label: format!("{} · {}", d.probe, d.metric),
            change: d.ratio - 1.0,
            low: d.ratio - 1.0,
            high: d.ratio - 1.0,
            band: d.noise,
            verdict: match (d.significant, d.worse) {
                (true, true) => "regressed".into(),
                (true, false) => "improved".into(),
                _ => "no change".into(),
            },
        })
        .collect();
    let rows: Vec<Vec<String>> = shown
        .iter()
        .map(|d| {
            vec![
                format!("{} · {}", d.probe, d.metric),
                fmt_value(d.a, &d.unit),
                fmt_value(d.b, &d.unit),
                super::text::change_text(d),
                if d.significant { "yes" } else { "no" }.into(),
                d.explanations.join("; "),
            ]
        })
        .collect();
    out.push_str(&figure(
        &chart::changes("Headline probe results, B against A", &changes),
        "Dot: B / A − 1; shaded: the probe's noise band; orange: worse beyond it, green: better.",
        &table(
            &["metric", "A", "B", "change", "significant", "what differs"],
            &rows,
        ),
    ));
    out.push_str("</section>");
    out
}
