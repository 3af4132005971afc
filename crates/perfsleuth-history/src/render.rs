//! The history in words: per series a header line, a sparkline, the
//! segments between change points, the change points with their cause, the
//! environment markers and the latest point; Markdown the same for PRs.

use crate::{HistoryDoc, segments};
use perfsleuth_model::Metric;
use perfsleuth_model::quantity::MISSING;
use perfsleuth_model::schema::{HistoryCause, HistoryPoint, HistorySeries};
use perfsleuth_report::{Align, Style, format_change, format_count, format_metric, table};

/// Widest sparkline, in characters; longer series are averaged into buckets.
const SPARK_WIDTH: usize = 60;

/// A value of series `s` in its unit ("1.23 ms").
pub fn value(s: &HistorySeries, x: f64) -> String {
    match Metric::parse(&s.metric).filter(|_| !s.unit.is_empty()) {
        Some(m) => format_metric(m, x),
        None => format_count(x),
    }
}

/// One character per point (or per bucket of points) from ▁ to █, scaled
/// between the series' smallest and largest value.
pub fn sparkline(values: &[f64]) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    if values.is_empty() {
        return String::new();
    }
    let buckets = values.len().min(SPARK_WIDTH);
    let means: Vec<f64> = (0..buckets)
        .map(|b| {
            let lo = b * values.len() / buckets;
            let hi = ((b + 1) * values.len() / buckets).max(lo + 1);
            values[lo..hi].iter().sum::<f64>() / (hi - lo) as f64
        })
        .collect();
    let min = means.iter().copied().fold(f64::INFINITY, f64::min);
    let max = means.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    means
        .iter()
        .map(|v| {
            if max > min {
                BARS[(((v - min) / (max - min)) * 7.0).round() as usize]
            } else {
                BARS[3]
            }
        })
        .collect()
}

/// A point's name in a table: commit, label or run id.
fn name(p: &HistoryPoint) -> String {
    match (&p.commit, &p.label, p.run_id) {
        (Some(c), _, _) => format!(
            "{}{}",
            perfsleuth_model::short_commit(c),
            if p.dirty { "-dirty" } else { "" }
        ),
        (None, Some(l), _) => l.clone(),
        (None, None, Some(id)) => format!("run {id}"),
        _ => MISSING.to_string(),
    }
}

fn header(s: &HistorySeries) -> String {
    let mut h = format!("{} · {}", s.benchmark, s.metric);
    if let Some(m) = s.mode {
        h.push_str(&format!(" · {}", m.as_str()));
    }
    if let Some(label) = &s.machine_label {
        h.push_str(&format!(" · {label}"));
    }
    if let Some(m) = &s.machine {
        h.push_str(&format!(" (machine {m})"));
    }
    h.push_str(&format!(
        " · {} point{}",
        s.points.len(),
        if s.points.len() == 1 { "" } else { "s" }
    ));
    h
}

fn noise_line(s: &HistorySeries) -> String {
    if s.noise.is_finite() {
        format!(
            "noise {}; changes under {:.1}% are not reported",
            perfsleuth_compare::noise_text(s.noise, &s.noise_source),
            100.0 * s.min_change
        )
    } else {
        format!(
            "changes under {:.1}% are not reported",
            100.0 * s.min_change
        )
    }
}

fn segment_rows(s: &HistorySeries) -> Vec<Vec<String>> {
    let mut rows = vec![vec![
        "SEGMENT".to_string(),
        "POINTS".to_string(),
        "FROM".to_string(),
        "TO".to_string(),
        "MEAN".to_string(),
        "CHANGE".to_string(),
    ]];
    for (i, (lo, hi)) in segments(s).into_iter().enumerate() {
        let vals: Vec<f64> = s.points[lo..hi].iter().map(|p| p.value).collect();
        let mean = vals.iter().sum::<f64>() / vals.len() as f64;
        let change = if i == 0 {
            String::new()
        } else {
            let c = &s.change_points[i - 1];
            format!(
                "{} [{} … {}]",
                format_change(c.change),
                format_change(c.ci[0]),
                format_change(c.ci[1])
            )
        };
        rows.push(vec![
            (i + 1).to_string(),
            format!("{}–{}", lo + 1, hi),
            name(&s.points[lo]),
            name(&s.points[hi - 1]),
            value(s, mean),
            change,
        ]);
    }
    rows
}

fn verdict_word(c: &perfsleuth_model::schema::HistoryChange) -> &'static str {
    match (c.regression, c.cause) {
        (Some(true), HistoryCause::Code) => "regression",
        (Some(false), HistoryCause::Code) => "improvement",
        (_, HistoryCause::Environment) => "environment",
        (_, HistoryCause::Machine) => "machine",
        (None, HistoryCause::Code) => "change",
    }
}

fn latest(s: &HistorySeries) -> Option<String> {
    let p = s.points.last()?;
    let ci =
        p.ci.map(|[lo, hi]| format!(" [{} … {}]", value(s, lo), value(s, hi)))
            .unwrap_or_default();
    let when = p
        .started_at
        .as_deref()
        .map(|t| format!(", {}", t.get(..10).unwrap_or(t)))
        .unwrap_or_default();
    Some(format!(
        "latest: {}{ci} at {}{when}",
        value(s, p.value),
        name(p)
    ))
}

/// The terminal view.
pub fn render_terminal(doc: &HistoryDoc, color: bool) -> String {
    let style = Style::new(color);
    let mut out = String::new();
    for (i, s) in doc.series.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&style.bold(&header(s)));
        out.push('\n');
        let values: Vec<f64> = s.points.iter().map(|p| p.value).collect();
        out.push_str(&format!("  {}\n", sparkline(&values)));
        if let Some(l) = latest(s) {
            out.push_str(&format!("  {l}\n"));
        }
        if let Some(note) = &s.note {
            out.push_str(&format!("  {}\n", style.dim(note)));
        } else {
            out.push_str(&format!("  {}\n", style.dim(&noise_line(s))));
            for line in table(&segment_rows(s), |c| {
                if c == 4 { Align::Right } else { Align::Left }
            })
            .lines()
            {
                out.push_str(&format!("  {line}\n"));
            }
        }
        for c in &s.change_points {
            let word = verdict_word(c);
            let painted = match word {
                "regression" => style.red(word),
                "improvement" => style.green(word),
                _ => style.yellow(word),
            };
            out.push_str(&format!("  {painted}: {}\n", c.summary));
        }
        for m in &s.markers {
            let at = name(&s.points[m.index]);
            let what: Vec<&str> = m.changes.iter().map(|c| c.summary.as_str()).collect();
            out.push_str(&format!(
                "  {} point {} ({at}): {}\n",
                style.yellow("environment changed at"),
                m.index + 1,
                what.join("; ")
            ));
        }
    }
    notes_and_check(doc, &mut out, "");
    out
}

fn notes_and_check(doc: &HistoryDoc, out: &mut String, bullet: &str) {
    if !doc.notes.is_empty() || doc.check.is_some() {
        out.push('\n');
    }
    for n in &doc.notes {
        out.push_str(&format!("{bullet}note: {n}\n"));
    }
    if let Some(c) = &doc.check {
        if c.failed {
            out.push_str(&format!("{bullet}check: FAILED\n"));
        } else {
            out.push_str(&format!(
                "{bullet}check: passed (the latest run starts no regression the environment does not explain)\n"
            ));
        }
        for r in &c.reasons {
            out.push_str(&format!("{bullet}  {r}\n"));
        }
    }
}

/// Markdown for a pull request.
pub fn render_markdown(doc: &HistoryDoc) -> String {
    let mut out = format!("## History: {}\n", doc.metrics.join(", "));
    for s in &doc.series {
        out.push_str(&format!("\n### {}\n\n", header(s).replace('`', "'")));
        let values: Vec<f64> = s.points.iter().map(|p| p.value).collect();
        out.push_str(&format!("`{}`\n\n", sparkline(&values)));
        if let Some(l) = latest(s) {
            out.push_str(&format!("{l}\n\n"));
        }
        if let Some(note) = &s.note {
            out.push_str(&format!("{note}\n"));
        } else {
            out.push_str(&format!("{}\n\n", noise_line(s)));
            let rows = segment_rows(s);
            out.push_str(&format!("| {} |\n", rows[0].join(" | ")));
            out.push_str(&format!("|{}\n", "---|".repeat(rows[0].len())));
            for r in &rows[1..] {
                out.push_str(&format!("| {} |\n", r.join(" | ")));
            }
        }
        if !s.change_points.is_empty() || !s.markers.is_empty() {
            out.push('\n');
        }
        for c in &s.change_points {
            out.push_str(&format!("- **{}**: {}\n", verdict_word(c), c.summary));
        }
        for m in &s.markers {
            let what: Vec<&str> = m.changes.iter().map(|c| c.summary.as_str()).collect();
            out.push_str(&format!(
                "- environment changed at point {} ({}): {}\n",
                m.index + 1,
                name(&s.points[m.index]),
                what.join("; ")
            ));
        }
    }
    notes_and_check(doc, &mut out, "- ");
    out
}
