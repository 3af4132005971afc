//! The explanation as text: the terminal, Markdown, and the typed JSON.

use crate::cli::CompareFormat;
use crate::error::Fail;
use perfsleuth_app::explain::{change_text as change, exact};
use perfsleuth_model::quantity::MISSING;
use perfsleuth_model::schema::{ExplainBenchmark, ExplainDoc, ExplainOutcome, ExplainRatio};
use perfsleuth_report::{Align, capitalised, format_p, shortened, table};

/// `doc` in the chosen format.
pub(crate) fn render(doc: &ExplainDoc, format: CompareFormat) -> Result<String, Fail> {
    Ok(match format {
        CompareFormat::Json => perfsleuth_model::schema::to_json_pretty(doc).map_err(|e| {
            Fail::usage(format!("cannot serialise JSON: {e}"), "please report this")
        })?,
        CompareFormat::Terminal => text(doc, false),
        CompareFormat::Markdown => text(doc, true),
        CompareFormat::Github => perfsleuth_app::verdict::github(&text(doc, true), "")?,
    })
}

fn share(s: &ExplainRatio) -> String {
    let pct = |x: f64| perfsleuth_model::quantity::format_share(x, 0);
    if exact(s) {
        return pct(s.ratio);
    }
    format!("{} ({}–{})", pct(s.ratio), pct(s.ci_low), pct(s.ci_high))
}

fn outcome(o: ExplainOutcome) -> &'static str {
    match o {
        ExplainOutcome::Reproduces => "reproduces",
        ExplainOutcome::Partly => "explains part",
        ExplainOutcome::Opposite => "the other way",
        ExplainOutcome::Changes => "changes it",
        ExplainOutcome::NoEffect => "no effect",
        ExplainOutcome::Inconclusive => "inconclusive",
    }
}

fn text(doc: &ExplainDoc, md: bool) -> String {
    let mut out = String::new();
    let code = |s: &str| format!("`{s}`");
    let head = |out: &mut String, s: &str| {
        if md {
            out.push_str(&format!("\n### {s}\n\n"));
        } else {
            out.push_str(&format!("\n{s}:\n"));
        }
    };
    if md {
        out.push_str(&format!(
            "## perfsleuth explain: {} → {}\n\n",
            doc.baseline, doc.candidate
        ));
    } else {
        out.push_str(&format!(
            "Explaining {} (baseline) → {} (candidate), {} mode\n",
            doc.baseline, doc.candidate, doc.mode
        ));
    }
    let from = if doc.from == "baseline" {
        &doc.baseline
    } else {
        &doc.candidate
    };
    if doc.measured {
        out.push_str(&format!(
            "{}Experiments start from the {} ({from}) and move it towards the other side; {} set-up{} measured interleaved with the base{}.\n",
            if md { "\n" } else { "" },
            doc.from,
            doc.experiments.len(),
            if doc.experiments.len() == 1 { "" } else { "s" },
            doc.run
                .map_or(String::new(), |id| format!(", stored as run {id}"))
        ));
    }
    for b in &doc.benchmarks {
        benchmark(&mut out, b, md, &code);
    }
    if !doc.experiments.is_empty() {
        head(&mut out, "Experiments");
        for e in &doc.experiments {
            let bullet = if md { "- " } else { "  " };
            out.push_str(&format!("{bullet}{}: {}\n", code(&e.name), e.what));
            out.push_str(&format!("    --variant {}='{}'\n", e.name, e.spec));
            if !e.verified.is_empty() {
                out.push_str(&format!(
                    "      glibc read it as: {}\n",
                    e.verified.join(", ")
                ));
            }
        }
    }
    if !doc.untested.is_empty() {
        head(&mut out, "Not tested here");
        // One entry per reason, the differences it covers under it.
        let mut reasons: Vec<&str> = Vec::new();
        for u in &doc.untested {
            if !reasons.contains(&u.reason.as_str()) {
                reasons.push(&u.reason);
            }
        }
        for reason in reasons {
            let items: Vec<&str> = doc
                .untested
                .iter()
                .filter(|u| u.reason == reason)
                .map(|u| u.summary.as_str())
                .collect();
            let bullet = if md { "- " } else { "  " };
            let sub = if md { "  - " } else { "      " };
            out.push_str(&format!("{bullet}{}:\n", capitalised(reason)));
            const SHOWN: usize = 5;
            let cut = if items.len() > SHOWN + 1 {
                SHOWN
            } else {
                items.len()
            };
            for item in &items[..cut] {
                out.push_str(&format!("{sub}{}\n", shortened(item, 100)));
            }
            if cut < items.len() {
                out.push_str(&format!(
                    "{sub}… and {} more (--format json lists every one)\n",
                    items.len() - cut
                ));
            }
        }
    }
    if !doc.notes.is_empty() {
        head(&mut out, "Notes");
        for n in &doc.notes {
            let bullet = if md { "- " } else { "  " };
            out.push_str(&format!("{bullet}{n}\n"));
        }
    }
    out
}

fn benchmark(out: &mut String, b: &ExplainBenchmark, md: bool, code: &dyn Fn(&str) -> String) {
    out.push_str(&format!(
        "\n{}{} ({})\n",
        if md { "#### " } else { "" },
        code(&b.key),
        b.metric.name()
    ));
    if md {
        out.push('\n');
    }
    match (&b.observed, b.observed_verdict) {
        (Some(r), Some(v)) => out.push_str(&format!(
            "{}Observed: {}, {}\n",
            if md { "" } else { "  " },
            change(r),
            v.as_str()
        )),
        _ => out.push_str(&format!(
            "{}No observed difference to measure against: each experiment's own effect here\n",
            if md { "" } else { "  " }
        )),
    }
    if !b.findings.is_empty() {
        let mut rows = vec![vec![
            "experiment".to_string(),
            "effect here".to_string(),
            "share explained".to_string(),
            "p (Holm)".to_string(),
            "outcome".to_string(),
        ]];
        for f in &b.findings {
            rows.push(vec![
                f.experiment.clone(),
                f.effect.as_ref().map_or(MISSING.into(), change),
                f.share.as_ref().map_or(MISSING.into(), share),
                f.p_holm.map_or(MISSING.into(), format_p),
                outcome(f.outcome).to_string(),
            ]);
        }
        if md {
            out.push('\n');
            for (i, r) in rows.iter().enumerate() {
                out.push_str(&format!("| {} |\n", r.join(" | ")));
                if i == 0 {
                    out.push_str("|---|---:|---:|---:|---|\n");
                }
            }
            out.push('\n');
        } else {
            let t = table(&rows, |c| {
                if c == 0 || c == 4 {
                    Align::Left
                } else {
                    Align::Right
                }
            });
            for line in t.lines() {
                out.push_str(&format!("  {line}\n"));
            }
        }
    }
    out.push_str(&format!(
        "{}{}\n",
        if md { "**" } else { "  → " },
        b.conclusion
    ));
    if md {
        // Close the bold.
        out.pop();
        out.push_str("**\n");
    }
}
