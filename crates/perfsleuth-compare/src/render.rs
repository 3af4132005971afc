//! Human renderings of a comparison: a terminal table and Markdown for a
//! pull-request comment or `$GITHUB_STEP_SUMMARY`.

use crate::format::{change_with_ci, p_value, pad_left, pad_right, value, width};
use crate::json::verdict_counts;
use crate::{Comparison, MACHINES_DIFFER, Row};
use perfsleuth_model::schema::VerdictLabel;
use perfsleuth_model::{ImpactClass, Metric};
use perfsleuth_report::Style;
use perfsleuth_report::style::{GREEN, RED};
use std::io::Write;

/// "p-values adjusted for N comparisons (Benjamini–Hochberg)".
fn fdr_sentence(c: &Comparison) -> Option<String> {
    c.fdr_applied.then(|| {
        let n = c.fdr_comparisons();
        let s = if n == 1 { "" } else { "s" };
        format!(
            "p-values adjusted for {n} comparison{s} (Benjamini–Hochberg); \
             the adjusted p is shown and judged for gating metrics"
        )
    })
}

/// "2 regressed, 1 improved, 5 no change" (only verdicts that occur), with
/// `strong` wrapped around the regressed count.
fn counts_text(c: &Comparison, strong: (&str, &str)) -> String {
    verdict_counts(c)
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(v, n)| {
            if v == "regressed" {
                format!("{}{n} {v}{}", strong.0, strong.1)
            } else {
                format!("{n} {v}")
            }
        })
        .collect::<Vec<_>>()
        .join(", ")
}

/// "2 regressed, 1 improved, 5 no change", unadorned (the HTML section).
pub(crate) fn counts_plain(c: &Comparison) -> String {
    counts_text(c, ("", ""))
}

fn has_regression(c: &Comparison) -> bool {
    c.rows.iter().any(|r| r.verdict == VerdictLabel::Regressed)
}

fn performance_header(c: &Comparison) -> &'static str {
    if c.identity_changed {
        "Performance-relevant facts also differ:"
    } else {
        "Performance-relevant facts differ (verdicts stand; changed rows are marked \"possibly environmental\"):"
    }
}

/// The terminal table: benchmark, metric, baseline, candidate, change with
/// CI, p, verdict; red/green verdicts only when `color`. When the machines
/// differ, the output opens with the environment diff.
pub fn render_terminal(c: &Comparison, color: bool) -> String {
    let mut text = Vec::new();
    // Writing to memory cannot fail.
    let _ = write_terminal(c, color, &mut text);
    String::from_utf8_lossy(&text).into_owned()
}

/// [`render_terminal`], written to `to` as it is made: 100 000 rows and
/// their notes are 97 MB of text, which need not all be held at once.
pub fn write_terminal(c: &Comparison, color: bool, to: &mut dyn Write) -> std::io::Result<()> {
    let mut out = String::new();
    environment_block(&mut out, c);
    if c.rows.is_empty() {
        out.push_str("No benchmarks in common.\n");
    } else {
        rows_table(&mut out, c, color, to)?;
        table_summary(&mut out, c, to)?;
    }
    unpaired_lines(&mut out, c);
    spill(&mut out, to)?;
    notes_block(&mut out, c, to)?;
    to.write_all(out.as_bytes())
}

/// Hands what `out` holds to `to` once it is large, and empties it.
fn spill(out: &mut String, to: &mut dyn Write) -> std::io::Result<()> {
    const CHUNK: usize = 64 * 1024;
    if out.len() >= CHUNK {
        to.write_all(out.as_bytes())?;
        out.clear();
    }
    Ok(())
}

/// The sides' names, with what differs between their machines: above them
/// where the machines differ, below them where only the performance-relevant
/// settings do.
fn environment_block(out: &mut String, c: &Comparison) {
    let identity: Vec<_> = c
        .env_changes
        .iter()
        .filter(|ch| ch.class == ImpactClass::Identity)
        .collect();
    let performance: Vec<_> = c.performance_changes().collect();
    let env_block = |out: &mut String| {
        if !performance.is_empty() {
            out.push_str(performance_header(c));
            out.push('\n');
            for ch in &performance {
                out.push_str(&format!("  {}\n      {}\n", ch.summary, ch.why));
            }
        }
    };
    if c.identity_changed {
        out.push_str(MACHINES_DIFFER);
        out.push('\n');
        for ch in &identity {
            out.push_str(&format!("  {}\n      {}\n", ch.summary, ch.why));
        }
        env_block(out);
        out.push('\n');
    }
    out.push_str(&format!(
        "baseline: {}   candidate: {}\n",
        c.baseline, c.candidate
    ));
    if !c.identity_changed && !performance.is_empty() {
        out.push('\n');
        env_block(out);
    }
    out.push('\n');
}

/// The rows' cells: a benchmark's key on its first row only, a gating
/// metric starred.
fn row_cells(c: &Comparison) -> Vec<[String; 7]> {
    let mut cells: Vec<[String; 7]> = Vec::new();
    let mut last_key = String::new();
    for r in &c.rows {
        let key = r.key();
        let shown_key = if key == last_key {
            String::new()
        } else {
            key.clone()
        };
        last_key = key;
        let metric = if r.gating {
            format!("{}*", r.metric.name())
        } else {
            r.metric.name().to_string()
        };
        cells.push([
            shown_key,
            metric,
            value(r.metric, r.baseline_median),
            value(r.metric, r.candidate_median),
            change_with_ci(r.change.as_ref()),
            p_value(r.p_shown()),
            r.verdict.as_str().to_string(),
        ]);
    }
    cells
}

/// The table of rows, columns as wide as their widest cell, the verdicts
/// coloured.
fn rows_table(
    out: &mut String,
    c: &Comparison,
    color: bool,
    to: &mut dyn Write,
) -> std::io::Result<()> {
    let ci_head = ci_header(c);
    let header = [
        "benchmark",
        "metric",
        "baseline",
        "candidate",
        ci_head.as_str(),
        "p",
        "verdict",
    ];
    let cells = row_cells(c);
    let mut widths: Vec<usize> = header.iter().map(|h| width(h)).collect();
    for row in &cells {
        for (w, cell) in widths.iter_mut().zip(row.iter()) {
            *w = (*w).max(width(cell));
        }
    }
    // Text columns left-aligned, numbers right-aligned; the last column
    // is not padded so lines carry no trailing blanks.
    let align = |i: usize, s: &str| -> String {
        match i {
            0 | 1 => pad_right(s, widths[i]),
            6 => s.to_string(),
            _ => pad_left(s, widths[i]),
        }
    };
    let line = |row: &[String]| -> String {
        row.iter()
            .enumerate()
            .map(|(i, s)| align(i, s))
            .collect::<Vec<_>>()
            .join("  ")
    };
    let header_cells: Vec<String> = header.iter().map(|s| s.to_string()).collect();
    out.push_str(line(&header_cells).trim_end());
    out.push('\n');
    // Each row written in place, as `line` aligns it: 100 000 rows made a
    // dozen strings each on the way.
    let blanks = |out: &mut String, n: usize| out.extend(std::iter::repeat_n(' ', n));
    for (r, row) in c.rows.iter().zip(&cells) {
        for (i, cell) in row[..6].iter().enumerate() {
            if i > 0 {
                out.push_str("  ");
            }
            let pad = widths[i].saturating_sub(width(cell));
            if i <= 1 {
                out.push_str(cell);
                blanks(out, pad);
            } else {
                blanks(out, pad);
                out.push_str(cell);
            }
        }
        out.push_str("  ");
        let verdict = &row[6];
        let colour = match r.verdict {
            VerdictLabel::Regressed => Some(RED),
            VerdictLabel::Improved => Some(GREEN),
            _ => None,
        };
        match colour {
            Some(c) => out.push_str(&Style::new(color).paint(c, verdict)),
            None => out.push_str(verdict),
        }
        out.push('\n');
        spill(out, to)?;
    }
    Ok(())
}

/// Under the table: the legend, the multiple-testing sentence, the verdict
/// counts and the factors of change.
fn table_summary(out: &mut String, c: &Comparison, to: &mut dyn Write) -> std::io::Result<()> {
    out.push('\n');
    out.push_str("* gating metric\n");
    if let Some(s) = fdr_sentence(c) {
        out.push_str(&s);
        out.push('\n');
    }
    out.push_str(&format!("summary: {}\n", counts_text(c, ("", ""))));
    for line in factor_lines(c) {
        out.push_str(&format!("  {line}\n"));
        spill(out, to)?;
    }
    Ok(())
}

/// The benchmarks only one side has.
fn unpaired_lines(out: &mut String, c: &Comparison) {
    if !c.unpaired_baseline.is_empty() {
        out.push_str(&format!(
            "not compared (only in the baseline): {}\n",
            c.unpaired_baseline.join(", ")
        ));
    }
    if !c.unpaired_candidate.is_empty() {
        out.push_str(&format!(
            "not compared (only in the candidate): {}\n",
            c.unpaired_candidate.join(", ")
        ));
    }
}

/// The rows' notes, each with its row, then the comparison's.
fn notes_block(out: &mut String, c: &Comparison, to: &mut dyn Write) -> std::io::Result<()> {
    use std::fmt::Write;
    if c.rows.iter().all(|r| r.notes.is_empty()) && c.notes.is_empty() {
        return Ok(());
    }
    out.push_str("\nNotes:\n");
    // Written in place: 100 000 rows' notes are 90 MB of text, and a list
    // of them beside the output held it twice.
    for r in c.rows.iter().filter(|r| !r.notes.is_empty()) {
        let (key, metric) = (r.key(), r.metric.name());
        for n in &r.notes {
            let _ = writeln!(out, "  - {key} · {metric}: {n}");
        }
        spill(out, to)?;
    }
    for n in &c.notes {
        let _ = writeln!(out, "  - {n}");
    }
    Ok(())
}

/// hyperfine's summary line for each gating row judged regressed or
/// improved: "`sort`: run 13 is 1.23× faster than run 12 (wall time)" —
/// how many times, the way hyperfine's users read a result. Times are
/// faster or slower; other metrics more or less.
pub(crate) fn factor_lines(c: &Comparison) -> Vec<String> {
    c.rows
        .iter()
        .filter(|r| r.gating)
        .filter_map(|r| factor_line(c, r))
        .collect()
}

/// [`factor_lines`]'s line for one row judged regressed or improved.
pub(crate) fn factor_line(c: &Comparison, r: &Row) -> Option<String> {
    if !matches!(r.verdict, VerdictLabel::Regressed | VerdictLabel::Improved) {
        return None;
    }
    let ratio = 1.0 + r.change.as_ref()?.change;
    if !ratio.is_finite() || ratio <= 0.0 {
        return None;
    }
    let (factor, up) = if ratio >= 1.0 {
        (ratio, true)
    } else {
        (1.0 / ratio, false)
    };
    let word = match (r.metric.unit() == "ns", up) {
        (true, true) => "slower",
        (true, false) => "faster",
        (false, true) => "more",
        (false, false) => "less",
    };
    let metric = match r.metric {
        Metric::Wall => "wall time".to_string(),
        Metric::Cpu => "CPU time".to_string(),
        m => m.name().to_string(),
    };
    Some(format!(
        "`{}`: {} is {factor:.2}× {word} than {} ({metric})",
        r.key(),
        c.candidate,
        c.baseline
    ))
}

/// Text safe inside a Markdown table cell or paragraph: no raw pipes,
/// angle brackets or line breaks.
fn md(s: &str) -> String {
    s.replace('|', "\\|")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace(['\n', '\r'], " ")
}

/// `s` as an inline code span, whatever backticks it contains.
fn code(s: &str) -> String {
    let s = s.replace(['\n', '\r'], " ").replace('|', "\\|");
    let mut fence = String::from("`");
    while s.contains(fence.as_str()) {
        fence.push('`');
    }
    if fence.len() > 1 || s.starts_with('`') || s.ends_with('`') {
        format!("{fence} {s} {fence}")
    } else {
        format!("`{s}`")
    }
}

fn md_env_line(ch: &perfsleuth_env::Change) -> String {
    format!("- **{}** — {}\n", md(&ch.summary), md(ch.why))
}

/// "change [95% CI]", at the level the rows were judged at.
pub(crate) fn ci_header(c: &Comparison) -> String {
    format!(
        "change [{} CI]",
        perfsleuth_model::quantity::format_level(c.confidence)
    )
}

fn md_table(rows: &[&Row], ci_head: &str) -> String {
    let mut out = format!(
        "| Benchmark | Metric | Baseline | Candidate | {} | p | Verdict | Notes |\n",
        perfsleuth_report::capitalised(ci_head)
    );
    out.push_str("|---|---|--:|--:|--:|--:|---|---|\n");
    for r in rows {
        let verdict = match r.verdict {
            VerdictLabel::Regressed => "**regressed**".to_string(),
            v => v.as_str().to_string(),
        };
        let metric = if r.gating {
            format!("{} (gating)", r.metric.name())
        } else {
            r.metric.name().to_string()
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} | {} | {} |\n",
            code(&r.key()),
            metric,
            value(r.metric, r.baseline_median),
            value(r.metric, r.candidate_median),
            change_with_ci(r.change.as_ref()),
            p_value(r.p_shown()),
            verdict,
            md(&r.notes.join("; ")),
        ));
    }
    out
}

/// Markdown for a pull-request comment or `$GITHUB_STEP_SUMMARY`: a
/// headline, the environment diff when anything changed, a table of the
/// noteworthy rows, and the no-change ones folded into `<details>`.
pub fn render_markdown(c: &Comparison) -> String {
    let mut out = String::new();
    let performance: Vec<_> = c.performance_changes().collect();
    if c.identity_changed {
        out.push_str("### ⚠️ Environment changed\n\n");
        out.push_str(MACHINES_DIFFER);
        out.push_str("\n\n");
        for ch in c
            .env_changes
            .iter()
            .filter(|ch| ch.class == ImpactClass::Identity)
        {
            out.push_str(&md_env_line(ch));
        }
        if !performance.is_empty() {
            out.push_str(&format!("\n{}\n\n", performance_header(c)));
            for ch in &performance {
                out.push_str(&md_env_line(ch));
            }
        }
        out.push('\n');
    }
    out.push_str(&format!(
        "### perfsleuth compare: {} → {}\n\n",
        code(&c.baseline),
        code(&c.candidate)
    ));
    let headline = if c.rows.is_empty() {
        "No benchmarks in common.".to_string()
    } else if c.identity_changed {
        format!(
            "**Not comparable**: {} comparisons marked `environment changed`.",
            c.rows.len()
        )
    } else if has_regression(c) {
        counts_text(c, ("**", "**"))
    } else {
        format!("No regressions: {}", counts_text(c, ("", "")))
    };
    out.push_str(&headline);
    out.push_str("\n\n");
    let factors = factor_lines(c);
    if !factors.is_empty() {
        for line in &factors {
            out.push_str(&format!("- {}\n", md(line)));
        }
        out.push('\n');
    }
    if !c.identity_changed && !performance.is_empty() {
        out.push_str("#### Environment\n\n");
        out.push_str(performance_header(c));
        out.push_str("\n\n");
        for ch in &performance {
            out.push_str(&md_env_line(ch));
        }
        out.push('\n');
    }

    let quiet = |r: &Row| r.notes.is_empty() && matches!(r.verdict, VerdictLabel::NoChange);
    let noteworthy: Vec<&Row> = c.rows.iter().filter(|r| !quiet(r)).collect();
    let rest: Vec<&Row> = c.rows.iter().filter(|r| quiet(r)).collect();
    if !noteworthy.is_empty() {
        out.push_str(&md_table(&noteworthy, &ci_header(c)));
        out.push('\n');
    }
    if !rest.is_empty() {
        let n = rest.len();
        let s = if n == 1 { "" } else { "s" };
        out.push_str(&format!(
            "<details><summary>{n} no-change row{s}</summary>\n\n"
        ));
        out.push_str(&md_table(&rest, &ci_header(c)));
        out.push_str("\n</details>\n\n");
    }
    if let Some(s) = fdr_sentence(c) {
        out.push_str(&format!("_{s}._\n\n"));
    }
    if !c.unpaired_baseline.is_empty() {
        let list: Vec<String> = c.unpaired_baseline.iter().map(|k| code(k)).collect();
        out.push_str(&format!(
            "**Not compared** (only in the baseline): {}\n\n",
            list.join(", ")
        ));
    }
    if !c.unpaired_candidate.is_empty() {
        let list: Vec<String> = c.unpaired_candidate.iter().map(|k| code(k)).collect();
        out.push_str(&format!(
            "**Not compared** (only in the candidate): {}\n\n",
            list.join(", ")
        ));
    }
    if !c.notes.is_empty() {
        out.push_str("**Notes**\n\n");
        for n in &c.notes {
            out.push_str(&format!("- {}\n", md(n)));
        }
    }
    let end = out.trim_end().len();
    out.truncate(end);
    out.push('\n');
    out
}

/// GitHub Actions workflow commands for a comparison: an `::error` for each
/// gating row judged regressed and a `::notice` for each improved one, so a
/// failing gate names the benchmark in the pull request's checks view. The
/// Markdown report ([`render_markdown`]) goes to the step summary beside them.
pub fn render_github_annotations(c: &Comparison) -> String {
    let mut out = String::new();
    for r in c.rows.iter().filter(|r| r.gating) {
        let (command, word) = match r.verdict {
            VerdictLabel::Regressed => ("error", "regressed"),
            VerdictLabel::Improved => ("notice", "improved"),
            _ => continue,
        };
        let title = format!("perfsleuth: {} {word}", r.key());
        let message = format!(
            "{} {}: {} against {}",
            r.metric.name(),
            change_with_ci(r.change.as_ref()),
            c.candidate,
            c.baseline
        );
        out.push_str(&format!(
            "::{command} title={}::{}\n",
            github_property(&title),
            github_data(&message)
        ));
    }
    out
}

/// A workflow command's message, escaped as the runner reads it back.
fn github_data(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// A workflow command's property value (`title=`): `:` and `,` end it
/// unless escaped.
fn github_property(s: &str) -> String {
    github_data(s).replace(':', "%3A").replace(',', "%2C")
}
