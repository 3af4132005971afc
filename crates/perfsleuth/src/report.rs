//! `perfsleuth report`: one self-contained HTML file of a run, or of the
//! comparison of two, assembled from the sections the renderers make
//! (`perfsleuth_report::html`, `perfsleuth_compare::render_html`).

use crate::cli::ReportArgs;
use crate::error::Fail;
use crate::selectors::{self, StoreHandle};
use crate::term::emit;
use perfsleuth_app::options::VerdictOptions;
use perfsleuth_compare::Side;
use perfsleuth_model::Run;

/// Writes the report and says where.
pub fn report(args: ReportArgs) -> Result<i32, Fail> {
    crate::output::check_writable(&args.output, "--output", args.store.store.as_deref())?;
    if args.output == std::path::Path::new("-") {
        return Err(Fail::usage(
            "--output -: the report is a file of its own",
            "give a file name, e.g. -o report.html",
        ));
    }
    if args.history {
        let doc = crate::histcmd::default_doc(&args.runs, args.store.store.as_deref())?;
        if doc.series.is_empty() {
            return Err(Fail::usage(
                "no stored runs of those benchmarks to draw a history of",
                "`perfsleuth history` lists the series; name benchmarks as it shows them",
            ));
        }
        let html = perfsleuth_report::html::page(
            "perfsleuth report: history",
            &format!("{} series", doc.series.len()),
            &[perfsleuth_history::render_html(&doc)],
        );
        return finish(&args.output, &html);
    }
    let mut store = StoreHandle::new(args.store.store.clone());
    let specs: Vec<&str> = if args.runs.is_empty() {
        vec!["latest"]
    } else {
        args.runs.iter().map(String::as_str).collect()
    };
    let sides = resolve_all(&specs, args.probes, &mut store, args.store.store.as_deref())?;
    for side in &sides {
        for run in &side.runs {
            let probe = run.mode == perfsleuth_model::Mode::Probe;
            let summaries_only = !probe
                && run.benchmarks.iter().all(|b| b.samples.is_empty())
                && run.benchmarks.iter().any(|b| !b.summaries.is_empty());
            if summaries_only {
                return Err(Fail::usage(
                    format!(
                        "{} has no samples to draw: it holds only the summaries its tool reported",
                        side.label
                    ),
                    "`perfsleuth compare` judges summaries; the report draws samples (import results that keep them)",
                ));
            }
            if (probe && run.probes.is_empty())
                || (!probe && run.benchmarks.iter().all(|b| b.samples.is_empty()))
            {
                return Err(Fail::usage(
                    format!("{} has no samples to report", side.label),
                    "report a run that measured something (`perfsleuth runs` lists them with their sample counts)",
                ));
            }
        }
    }
    let newest = |s: &Side| -> Result<Run, Fail> {
        perfsleuth_compare::newest(s).cloned().ok_or_else(|| {
            Fail::usage(
                format!("{} has no runs", s.label),
                "list the stored runs with `perfsleuth runs`",
            )
        })
    };
    let mut sections = Vec::new();
    let title;
    let subtitle;
    match &sides[..] {
        [one] => {
            let run = newest(one)?;
            title = format!("perfsleuth report: {}", one.label);
            subtitle = machine_line(&run);
            sections.push(section(&run, &one.label));
        }
        [a, b]
            if [a, b].iter().any(|s| {
                s.runs
                    .iter()
                    .any(|r| r.mode == perfsleuth_model::Mode::Probe)
            }) =>
        {
            let (ra, rb) = (newest(a)?, newest(b)?);
            if ra.mode != rb.mode {
                crate::compare::same_mode(a, b)?;
            }
            title = format!("perfsleuth report: {} → {}", a.label, b.label);
            subtitle = machine_line(&rb);
            sections.push(perfsleuth_report::probe::html::render_diff_html(
                &a.label, &ra, &b.label, &rb,
            ));
            sections.push(section(&ra, &a.label));
            sections.push(section(&rb, &b.label));
        }
        [baseline, candidate] => {
            crate::compare::same_mode(baseline, candidate)?;
            let verdict = VerdictOptions::from(args.verdict.clone());
            let mut opts = crate::compare::options(&verdict)?;
            let mut baseline = baseline.clone();
            let exclude: Vec<i64> = candidate.runs.iter().filter_map(|r| r.id).collect();
            let notes =
                crate::compare::history(&verdict, &mut store, &mut baseline, &exclude, &mut opts);
            let mut comparison = perfsleuth_compare::compare(&baseline, candidate, &opts);
            comparison.notes.extend(notes);
            title = format!(
                "perfsleuth report: {} → {}",
                baseline.label, candidate.label
            );
            let cand = newest(candidate)?;
            subtitle = machine_line(&cand);
            sections.push(perfsleuth_compare::render_html(&comparison));
            for (side, label) in [(&baseline, "baseline"), (candidate, "candidate")] {
                let run = newest(side)?;
                sections.push(section(&run, &side.label).replacen(
                    "<h2>",
                    &format!("<h2>{} — ", perfsleuth_report::capitalised(label)),
                    1,
                ));
            }
        }
        _ => {
            return Err(Fail::usage(
                "report takes one run or two (BASELINE CANDIDATE)",
                "e.g. `perfsleuth report latest -o run.html` or `perfsleuth report 3 4 -o pr.html`",
            ));
        }
    }
    let html = perfsleuth_report::html::page(&title, &subtitle, &sections);
    finish(&args.output, &html)
}

fn finish(path: &std::path::Path, html: &str) -> Result<i32, Fail> {
    crate::output::write_file(path, html)?;
    emit(
        &format!(
            "Wrote {} ({}).\n",
            path.display(),
            perfsleuth_report::format_bytes(html.len() as f64)
        ),
        true,
    );
    Ok(0)
}

/// Resolves every selector as `compare` does (`latest` and `latest~N` count
/// runs of commands) unless `probes` is set; when one of them names nothing
/// that way, all of them are resolved among the stored probe runs instead.
/// Deciding once for all keeps the two sides of `latest~1 latest` the same
/// kind of run: resolving each on its own paired the latest benchmark run
/// with a probe run before it.
fn resolve_all(
    specs: &[&str],
    probes: bool,
    store: &mut StoreHandle,
    url: Option<&str>,
) -> Result<Vec<Side>, Fail> {
    let err = if probes {
        Fail::usage(
            format!("no probe run matches {}", specs.join(" ")),
            "`perfsleuth runs` lists the stored runs with their mode; `perfsleuth probe` stores one",
        )
    } else {
        let as_benchmarks: Result<Vec<Side>, Fail> =
            specs.iter().map(|s| selectors::resolve(s, store)).collect();
        match as_benchmarks {
            Ok(sides) => return Ok(sides),
            Err(e) => e,
        }
    };
    use perfsleuth_store::RunKind;
    let Ok(probes) = crate::output::open_existing_store(url) else {
        return Err(err);
    };
    let mut sides = Vec::new();
    for spec in specs {
        let run = probes
            .resolve_run_of(spec, RunKind::Probes)
            .ok()
            .and_then(|id| probes.load_run(id).ok().flatten())
            .filter(|r| r.mode == perfsleuth_model::Mode::Probe);
        let Some(run) = run else {
            return Err(err);
        };
        sides.push(Side {
            label: run.id.map_or(spec.to_string(), |i| format!("run {i}")),
            runs: vec![run],
        });
    }
    Ok(sides)
}

/// A run's own section: a probe run's, a scale sweep's, or a benchmark run's.
fn section(run: &Run, label: &str) -> String {
    if run.mode == perfsleuth_model::Mode::Probe {
        return perfsleuth_report::probe::html::render_html(run, label);
    }
    if let Some(a) = perfsleuth_scale::analysis_of(run) {
        return perfsleuth_scale::render_html(&a, label);
    }
    let analysis = perfsleuth_summary::analyze(run, None);
    perfsleuth_report::html::run_section(run, &analysis)
}

/// "AMD EPYC · 2 CPUs · Linux 6.18 · glibc 2.36": the machine in one line.
fn machine_line(run: &Run) -> String {
    let e = &run.environment;
    let mut parts = Vec::new();
    for (key, prefix) in [
        ("cpu.model", ""),
        ("cpu.logical_cores", "CPUs: "),
        ("kernel.release", "Linux "),
        ("libc.version", ""),
        ("host.name", "host "),
    ] {
        if let Some(v) = e.get(key) {
            parts.push(format!("{prefix}{v}"));
        }
    }
    parts.join(" · ")
}
