//! Probe output: the terminal sections of `probe` and `show`, the `probe
//! diff` report, the `perfsleuth/probe` and `perfsleuth/probe-diff`
//! documents, and the notes `compare` adds. The binary chooses, stores and
//! prints; the probes (`perfsleuth-probe`) measure and never render, so the
//! engine that runs them links no presentation.

use crate::style::{BOLD, GREEN, RED, YELLOW};
use perfsleuth_model::quantity::MISSING;
use perfsleuth_model::schema::{
    Document, ProbeDeltaRow, ProbeDiffDoc, ProbeDiffSide, ProbeDoc, ProbeReportDoc,
};
use perfsleuth_model::{Environment, Run};
use perfsleuth_probe::{
    CLOCK_FACT, CalibratedClock, PROBES, ProbeDelta, ProbeReport, ProbeResult, fmt_bytes,
};

/// Non-significant changes smaller than this are "unchanged" in `probe diff`.
const UNCHANGED: f64 = 0.01;

/// Delta notes `compare` adds at most (a pointer to `probe diff` follows).
const MAX_COMPARE_NOTES: usize = 4;

/// "(0.41 s, pinned to CPU 1)" after a probe's name.
fn header_extra(r: &ProbeReport) -> String {
    let mut parts = vec![format!("{:.2} s", r.duration.as_secs_f64())];
    if let Some(cpu) = r.pinned_cpu {
        parts.push(format!("pinned to CPU {cpu}"));
    }
    format!("({})", parts.join(", "))
}

/// `s` in `style` when colour is on (the one colour module's codes).
fn paint(style: anstyle::Style, s: &str, color: bool) -> String {
    crate::Style::new(color).paint(style, s)
}

/// A value with its unit, at a precision that suits its size.
pub fn fmt_value(value: f64, unit: &str) -> String {
    if !value.is_finite() {
        return MISSING.to_string();
    }
    match unit {
        "bytes" => fmt_bytes(value.max(0.0) as u64),
        "ns" => {
            if value >= 1e6 {
                format!("{:.2} ms", value / 1e6)
            } else if value >= 1e4 {
                format!("{:.1} µs", value / 1e3)
            } else if value >= 100.0 {
                format!("{value:.1} ns")
            } else {
                format!("{value:.3} ns")
            }
        }
        "GB/s" => format!("{value:.1} GB/s"),
        "ops/s" => crate::format_si_unit(value, "ops/s"),
        "ratio" => format!("{value:.2}×"),
        u => format!("{value:.3} {u}"),
    }
}

/// A report as it arrives during `perfsleuth probe`: its section with the
/// probe's duration and pinning in the header.
pub fn render_report(report: &ProbeReport, all: bool, color: bool) -> String {
    render_probe(
        &report.probe,
        &header_extra(report),
        &report.measurements,
        &report.messages,
        all,
        color,
    )
}

/// One probe's section: a header, one line per (headline) metric, its messages.
pub fn render_probe(
    probe: &str,
    extra: &str,
    results: &[ProbeResult],
    messages: &[String],
    all: bool,
    color: bool,
) -> String {
    let mut out = paint(BOLD, probe, color);
    if !extra.is_empty() {
        out.push(' ');
        out.push_str(extra);
    }
    out.push('\n');
    let shown: Vec<&ProbeResult> = results.iter().filter(|r| all || r.headline).collect();
    // Cells first, so each column is as wide as its widest cell in this section.
    let rows: Vec<[String; 4]> = shown
        .iter()
        .map(|r| {
            let cycles = r
                .cycles
                .filter(|c| c.is_finite())
                .map(|c| {
                    if c >= 100.0 {
                        format!("~{c:.0} cycles")
                    } else {
                        format!("~{c:.1} cycles")
                    }
                })
                .unwrap_or_default();
            let spread = if r.unit == "bytes" {
                "±1 ladder step".to_string()
            } else if r.spread.is_finite() {
                format!("±{:.1}%", r.spread * 100.0)
            } else {
                String::new()
            };
            [
                r.metric.clone(),
                fmt_value(r.value, &r.unit),
                cycles,
                spread,
            ]
        })
        .collect();
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (w0, w1, w2, w3) = (width(0), width(1), width(2), width(3));
    for (r, [metric, value, cycles, spread]) in shown.iter().zip(&rows) {
        let mut line = format!("  {metric:<w0$}  {value:>w1$}  {cycles:<w2$}  {spread:<w3$}");
        if !r.stable {
            line.push_str("  ");
            line.push_str(&paint(YELLOW, "unstable", color));
        }
        if let Some(note) = &r.note {
            line.push_str(&format!("  ({note})"));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    let hidden = results.len() - shown.len();
    if hidden > 0 && shown.is_empty() {
        out.push_str(&format!("  ({hidden} detail metrics; --all shows them)\n"));
    }
    if results.is_empty() && messages.is_empty() {
        out.push_str("  (no numbers)\n");
    }
    for m in messages {
        out.push_str(&format!("  note: {m}\n"));
    }
    out
}

/// The calibrated clock behind the cycle counts, once, with any probe whose
/// estimate differed by more than 3 %.
pub fn clock_line(reports: &[ProbeReport]) -> Option<String> {
    let clocks: Vec<(&str, &CalibratedClock)> = reports
        .iter()
        .filter_map(|r| r.clock.as_ref().map(|c| (r.probe.as_str(), c)))
        .collect();
    let (_, first) = clocks.first()?;
    let mut line = format!("Cycles are {}", first.how);
    if let Some(g0) = first.ghz {
        let other: Vec<String> = clocks
            .iter()
            .skip(1)
            .filter_map(|(p, c)| c.ghz.map(|g| (p, g)))
            .filter(|(_, g)| (g / g0 - 1.0).abs() > 0.03)
            .map(|(p, g)| format!("{p} {g:.2} GHz"))
            .collect();
        if !other.is_empty() {
            line.push_str(&format!(
                " (recalibrated per probe: {}; the clock moved)",
                other.join(", ")
            ));
        }
    }
    Some(line)
}

/// `quick` from a probe run's options, when recorded.
fn quick_of(run: &Run) -> Option<bool> {
    run.options.get("quick").and_then(|q| q.as_bool())
}

/// A stored probe run (`perfsleuth show`): its results by probe, the
/// messages and the clock recorded with it. `comparability` is the run's
/// comparability hash (the store computes it).
pub fn render_stored(run: &Run, comparability: &str, all: bool, color: bool) -> String {
    let mut out = String::new();
    let who = run
        .id
        .map_or("Probe run".to_string(), |id| format!("Run {id}"));
    out.push_str(&format!(
        "{who}: probes{}, started {}, {}, comparability {comparability}\n",
        match quick_of(run) {
            Some(true) => " (quick)",
            _ => "",
        },
        run.started_at.replace('T', " ").trim_end_matches('Z'),
        run.status,
    ));
    let mut order: Vec<&str> = Vec::new();
    for r in &run.probes {
        if !order.contains(&r.probe.as_str()) {
            order.push(&r.probe);
        }
    }
    // Probes that produced nothing but messages are still worth a section.
    for p in PROBES {
        if run
            .environment
            .get(&format!("probe.{p}.messages"))
            .is_some()
            && !order.contains(&p)
        {
            order.push(p);
        }
    }
    if order.is_empty() {
        out.push_str("\nNo probe results stored.\n");
    }
    for p in order {
        let results: Vec<ProbeResult> = run
            .probes
            .iter()
            .filter(|r| r.probe == p)
            .cloned()
            .collect();
        let messages: Vec<String> = run
            .environment
            .get(&format!("probe.{p}.messages"))
            .map(|m| m.split(" | ").map(str::to_string).collect())
            .unwrap_or_default();
        out.push('\n');
        out.push_str(&render_probe(p, "", &results, &messages, all, color));
    }
    if let Some(how) = run.environment.get(CLOCK_FACT) {
        out.push_str(&format!("\nCycles are {how}\n"));
    }
    out
}

/// The `perfsleuth/probe` document of a probe session; `comparability` is
/// the hash of the run's environment.
pub fn probe_document(run: &Run, reports: &[ProbeReport], comparability: String) -> ProbeDoc {
    ProbeDoc {
        schema: ProbeDoc::SCHEMA.to_string(),
        schema_version: ProbeDoc::VERSION,
        run_id: run.id,
        status: run.status,
        started_at: run.started_at.clone(),
        ended_at: run.ended_at.clone(),
        tool_version: run.tool_version.clone(),
        quick: quick_of(run),
        comparability,
        clock: reports.iter().find_map(|r| r.clock.clone()),
        reports: reports
            .iter()
            .map(|r| ProbeReportDoc {
                probe: r.probe.clone(),
                duration_s: Some(r.duration.as_secs_f64()),
                pinned_cpu: r.pinned_cpu,
                clock: r.clock.clone(),
                messages: r.messages.clone(),
                measurements: r.measurements.clone(),
            })
            .collect(),
        facts: run.environment.clone(),
    }
}

/// One side of `probe diff`: results and the environment they ran in.
#[derive(Debug, Clone, PartialEq)]
pub struct ProbeSide {
    /// "run 4", "current (run 9)", a file name.
    pub label: String,
    /// Store id, when stored.
    pub run_id: Option<i64>,
    /// The environment the probes ran in.
    pub env: Environment,
    /// The results.
    pub results: Vec<ProbeResult>,
    /// Whether it ran `--quick`, when known.
    pub quick: Option<bool>,
    /// The comparability hash of `env`.
    pub comparability: String,
}

impl ProbeSide {
    /// The probes with results, in suite order.
    pub fn probes(&self) -> Vec<&'static str> {
        PROBES
            .into_iter()
            .filter(|p| self.results.iter().any(|r| r.probe == *p))
            .collect()
    }

    /// A stored (or exported) probe run as a side.
    pub fn from_run(label: String, run: Run, comparability: String) -> ProbeSide {
        ProbeSide {
            label,
            run_id: run.id,
            quick: quick_of(&run),
            env: run.environment,
            results: run.probes,
            comparability,
        }
    }

    /// A `perfsleuth/probe` document as a side; its comparability hash is the one it records.
    pub fn from_document(label: String, doc: ProbeDoc) -> ProbeSide {
        ProbeSide {
            label,
            run_id: doc.run_id,
            quick: doc.quick,
            env: doc.facts,
            results: doc
                .reports
                .into_iter()
                .flat_map(|r| r.measurements)
                .collect(),
            comparability: doc.comparability,
        }
    }
}

/// "3.30× slower", "1.25× less", "unchanged".
pub fn change_text(d: &ProbeDelta) -> String {
    if !d.ratio.is_finite() || d.ratio <= 0.0 {
        return format!("{} → {}", fmt_value(d.a, &d.unit), fmt_value(d.b, &d.unit));
    }
    let factor = d.ratio.max(1.0 / d.ratio);
    if (factor - 1.0).abs() < 0.0005 {
        return "unchanged".to_string();
    }
    let up = d.ratio > 1.0;
    let word = match d.unit.as_str() {
        "ns" => ["faster", "slower"][up as usize],
        "GB/s" | "ops/s" => ["slower", "faster"][up as usize],
        _ => ["less", "more"][up as usize],
    };
    if factor >= 10.0 {
        format!("{factor:.1}× {word}")
    } else {
        format!("{factor:.2}× {word}")
    }
}

/// "indirect call" for "indirect_call".
fn metric_words(metric: &str) -> String {
    metric.replace('_', " ")
}

fn side_line(tag: &str, s: &ProbeSide) -> String {
    let mode = match s.quick {
        Some(true) => "quick",
        Some(false) => "full",
        None => "mode unknown",
    };
    format!(
        "{tag}: {}  ({mode}; probes {}; comparability {})\n",
        s.label,
        s.probes().join(", "),
        s.comparability
    )
}

/// The `probe diff` report: significant differences with the facts that
/// explain them, those within noise, and a count of the unchanged.
pub fn render_diff(
    a: &ProbeSide,
    b: &ProbeSide,
    deltas: &[ProbeDelta],
    all: bool,
    color: bool,
) -> String {
    let mut out = side_line("A", a) + &side_line("B", b);
    if a.comparability != b.comparability {
        out.push_str("The machines differ in identity facts (`perfsleuth env diff` lists them).\n");
    }
    if let (Some(qa), Some(qb)) = (a.quick, b.quick)
        && qa != qb
    {
        out.push_str(
            "One side ran --quick: its memory ladder steps by ×2 instead of ×√2, so sizes can differ by a step.\n",
        );
    }
    let considered: Vec<&ProbeDelta> = deltas.iter().filter(|d| all || d.headline).collect();
    let significant: Vec<&ProbeDelta> = considered
        .iter()
        .copied()
        .filter(|d| d.significant)
        .collect();
    let noise: Vec<&ProbeDelta> = considered
        .iter()
        .copied()
        .filter(|d| !d.significant && (all || (d.ratio - 1.0).abs() >= UNCHANGED))
        .collect();
    let unchanged = considered.len() - significant.len() - noise.len();
    let width = considered
        .iter()
        .map(|d| d.probe.len() + d.metric.len() + 1)
        .max()
        .unwrap_or(0);
    let line = |d: &ProbeDelta| {
        let name = format!("{} {}", d.probe, d.metric);
        let values = format!("{} → {}", fmt_value(d.a, &d.unit), fmt_value(d.b, &d.unit));
        format!("  {name:<width$}  {values:<28}  {}\n", change_text(d))
    };
    if !significant.is_empty() {
        out.push_str(&format!(
            "\n{}\n",
            paint(
                BOLD,
                "Significant differences (≥ 10%, beyond both runs' spread and the run-to-run noise):",
                color
            )
        ));
        for d in &significant {
            let text = line(d);
            out.push_str(&if d.worse {
                paint(RED, text.trim_end(), color) + "\n"
            } else {
                paint(GREEN, text.trim_end(), color) + "\n"
            });
            if d.explanations.is_empty() {
                out.push_str(&format!(
                    "      no recorded fact that moves `{}` changed: the host, its other tenants, or noise\n",
                    d.probe
                ));
            }
            for e in &d.explanations {
                out.push_str(&format!("      {e}\n"));
            }
        }
    }
    if !noise.is_empty() {
        out.push_str("\nWithin noise (under 10%, or the spreads overlap):\n");
        for d in &noise {
            out.push_str(&line(d));
        }
    }
    let worse = significant.iter().filter(|d| d.worse).count();
    let what = if all { "metrics" } else { "headline metrics" };
    let verb = if significant.len() == 1 {
        "differs"
    } else {
        "differ"
    };
    out.push_str(&format!(
        "\n{} of {} {what} {verb} significantly ({worse} worse, {} better); {} within noise; {} unchanged (within {:.0}%).\n",
        significant.len(),
        considered.len(),
        significant.len() - worse,
        noise.len(),
        unchanged,
        UNCHANGED * 100.0,
    ));
    let only = |x: &ProbeSide, y: &ProbeSide| -> Vec<&'static str> {
        let theirs = y.probes();
        x.probes()
            .into_iter()
            .filter(|p| !theirs.contains(p))
            .collect()
    };
    for (tag, list) in [("A", only(a, b)), ("B", only(b, a))] {
        if !list.is_empty() {
            out.push_str(&format!(
                "Only in {tag}, not compared: {}.\n",
                list.join(", ")
            ));
        }
    }
    if !all && deltas.len() > considered.len() {
        out.push_str(&format!(
            "({} detail metrics not shown; --all lists them)\n",
            deltas.len() - considered.len()
        ));
    }
    out
}

/// The `perfsleuth/probe-diff` document.
pub fn diff_document(
    a: &ProbeSide,
    b: &ProbeSide,
    deltas: &[ProbeDelta],
    differs: bool,
) -> ProbeDiffDoc {
    let side = |s: &ProbeSide| ProbeDiffSide {
        label: s.label.clone(),
        run_id: s.run_id,
        quick: s.quick,
        comparability: s.comparability.clone(),
        probes: s.probes().into_iter().map(str::to_string).collect(),
    };
    ProbeDiffDoc {
        schema: ProbeDiffDoc::SCHEMA.to_string(),
        schema_version: ProbeDiffDoc::VERSION,
        a: side(a),
        b: side(b),
        differs,
        deltas: deltas
            .iter()
            .map(|d| ProbeDeltaRow {
                change: change_text(d),
                delta: d.clone(),
            })
            .collect(),
    }
}

/// Notes for `compare` when both sides' machines have been probed: the
/// significant headline differences between probe run `ia` (`ra`, the
/// baseline's machine) and `ib` (`rb`, the candidate's), with the facts that
/// explain them. Empty when nothing differs.
pub fn compare_notes(ia: i64, ra: &Run, ib: i64, rb: &Run) -> Vec<String> {
    let deltas = perfsleuth_probe::diff_runs(ra, rb);
    let sig: Vec<&ProbeDelta> = deltas
        .iter()
        .filter(|d| d.headline && d.significant)
        .collect();
    if sig.is_empty() {
        return Vec::new();
    }
    let mut notes: Vec<String> = sig
        .iter()
        .take(MAX_COMPARE_NOTES)
        .map(|d| {
            let why = if d.explanations.is_empty() {
                " (no recorded fact explains it)".to_string()
            } else {
                format!(" ({})", d.explanations.join("; "))
            };
            format!(
                "probes: {} {} on the candidate's machine{why}",
                metric_words(&d.metric),
                change_text(d)
            )
        })
        .collect();
    let more = sig.len().saturating_sub(MAX_COMPARE_NOTES);
    notes.push(format!(
        "probes: {}from probe run {ia} (the baseline's machine) and {ib} (the candidate's); see `perfsleuth probe diff {ia} {ib}`",
        if more > 0 {
            format!("{more} more significant differences; ")
        } else {
            String::new()
        }
    ));
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(unit: &str, a: f64, b: f64) -> ProbeDelta {
        ProbeDelta {
            probe: "p".into(),
            metric: "m".into(),
            unit: unit.into(),
            a,
            b,
            ratio: b / a,
            worse: false,
            significant: false,
            noise: 0.0,
            headline: true,
            explanations: vec![],
        }
    }

    #[test]
    fn changes_read_in_the_metric_s_own_words() {
        assert_eq!(change_text(&delta("ns", 1.0, 3.3)), "3.30× slower");
        assert_eq!(change_text(&delta("ns", 2.0, 1.0)), "2.00× faster");
        assert_eq!(change_text(&delta("GB/s", 20.0, 10.0)), "2.00× slower");
        assert_eq!(change_text(&delta("ops/s", 1.0, 1.5)), "1.50× faster");
        assert_eq!(change_text(&delta("bytes", 8.0, 4.0)), "2.00× less");
        assert_eq!(change_text(&delta("ratio", 2.5, 25.0)), "10.0× more");
        assert_eq!(change_text(&delta("ns", 1.0, 1.0)), "unchanged");
    }

    #[test]
    fn values_print_with_their_units() {
        assert_eq!(fmt_value(0.5414, "ns"), "0.541 ns");
        assert_eq!(fmt_value(164.52, "ns"), "164.5 ns");
        assert_eq!(fmt_value(537_000.0, "ns"), "537.0 µs");
        assert_eq!(fmt_value(32.0 * 1024.0, "bytes"), "32 KiB");
        assert_eq!(fmt_value(2.3e8, "ops/s"), "230 Mops/s");
        assert_eq!(fmt_value(3.634e9, "ops/s"), "3.63 Gops/s");
        assert_eq!(fmt_value(2.5, "ratio"), "2.50×");
        assert_eq!(fmt_value(f64::NAN, "ns"), "–");
    }
}
