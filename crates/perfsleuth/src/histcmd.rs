//! `perfsleuth history` and `history fit`: the stored series per machine
//! class with change points (the analysis is in `perfsleuth-history`).

use crate::cli::{CompareFormat, DetectArgs, HistoryArgs, HistoryCommand};
use crate::error::Fail;
use crate::output::open_existing_store;
use crate::term::{emit, use_color};
use perfsleuth_history::{Filter, HistoryError, Options, Order};
use perfsleuth_model::Metric;
use perfsleuth_model::input::{MAX_DATA_BYTES, input_name, read_text_or_stdin};
use perfsleuth_model::schema::{HistoryDoc, to_json_pretty};
use std::path::Path;

/// Runs `perfsleuth history` (or `history fit`) and returns the exit code.
pub fn history(args: HistoryArgs) -> Result<i32, Fail> {
    if let Some(HistoryCommand::Fit {
        file,
        column,
        format,
        detect,
        color,
    }) = &args.action
    {
        return fit(
            file,
            column.as_deref(),
            *format,
            detect,
            use_color(*color, false),
        );
    }
    let opts = options(&args.detect);
    if let Some(plot) = &args.plot {
        crate::output::check_writable(plot, "--plot", args.store.store.as_deref())?;
    }
    if let Some(junit) = &args.export_junit {
        crate::output::check_writable(junit, "--export-junit", args.store.store.as_deref())?;
    }
    let (mut doc, newest) = build_doc(&args, &opts)?;
    let findings = args
        .check
        .then(|| perfsleuth_history::check(&mut doc, newest, &opts));
    let code = findings
        .as_ref()
        .map_or(0, |f| i32::from(f.iter().any(|f| f.fails)));
    emit(
        &render(&doc, args.format, use_color(args.color, false))?,
        false,
    );
    if let Some(plot) = &args.plot {
        let Some(first) = doc.series.first() else {
            return Err(Fail::usage(
                "--plot: there is no series to draw",
                "name a benchmark `perfsleuth history` lists",
            ));
        };
        let svg = perfsleuth_history::series_chart(first);
        crate::output::write_chart(plot, &perfsleuth_report::chart::standalone(&svg))?;
        if doc.series.len() > 1 {
            emit(
                &format!(
                    "note: --plot drew the first of {} series ({} · {}); `perfsleuth report --history -o FILE.html` draws every one\n",
                    doc.series.len(),
                    first.benchmark,
                    first.metric
                ),
                true,
            );
        }
    }
    if let (Some(junit), Some(findings)) = (&args.export_junit, &findings) {
        crate::output::write_junit(junit, perfsleuth_history::render_junit(&doc, findings))?;
    }
    Ok(code)
}

/// The history the arguments select, and the newest run in it.
pub(crate) fn build_doc(
    args: &HistoryArgs,
    opts: &Options,
) -> Result<(HistoryDoc, Option<i64>), Fail> {
    let mut store = open_existing_store(args.store.store.as_deref())?;
    let metrics = match (&args.metric, args.check) {
        (Some(m), _) => crate::compare::metrics(std::slice::from_ref(m))?,
        (None, true) => gating()?,
        (None, false) => vec![Metric::Wall],
    };
    // Only the benchmarks asked for are read (all when none is named).
    let scope = perfsleuth_history::scope(
        &Filter {
            benchmarks: args.benchmarks.clone(),
            ..Filter::default()
        },
        metrics.first().copied(),
    );
    let entries = store.history_entries_in(&scope).map_err(Fail::from)?;
    let cwd = std::env::current_dir().unwrap_or_else(|_| ".".into());
    let here = crate::git::info(&cwd);
    let mut notes = Vec::new();
    let branch = if args.all_branches {
        None
    } else if let Some(b) = &args.branch {
        Some(b.clone())
    } else {
        // The current branch when it has runs; else every branch.
        here.as_ref().and_then(|g| g.branch.clone()).filter(|b| {
            entries
                .iter()
                .any(|e| e.git.as_ref().and_then(|g| g.branch.as_ref()) == Some(b))
        })
    };
    if branch.is_none() && !args.all_branches && args.branch.is_none() {
        notes.push("runs of every branch, in time order (--branch limits them to one)".to_string());
    }
    let order = match &branch {
        Some(b) => crate::git::first_parent(&cwd, b).map_or(Order::Time, Order::Git),
        None => Order::Time,
    };
    let mut filter = Filter {
        benchmarks: args.benchmarks.clone(),
        branch,
        last: args.last.map(|n| n as usize),
        ..Filter::default()
    };
    if let Some(s) = &args.since {
        since(s, &cwd, &mut filter)?;
    }
    let selected = perfsleuth_history::select(entries, &filter, &order)
        .map_err(|e| history_fail(&perfsleuth_history::with_every_key(e, &*store)))?;
    let newest = selected.iter().map(|e| e.run_id).max();
    let doc = perfsleuth_history::stored::history_doc(
        &mut *store,
        selected,
        &metrics,
        &order,
        &filter,
        opts,
        true,
    )
    .map_err(Fail::from)?;
    let Some(mut doc) = doc else {
        return Err(Fail::usage("no metric to show", "give --metric"));
    };
    notes.append(&mut doc.notes);
    doc.notes = notes;
    Ok((doc, newest))
}

/// The history of `benchmarks` (all when empty) with `history`'s defaults,
/// for the report.
pub(crate) fn default_doc(benchmarks: &[String], store: Option<&str>) -> Result<HistoryDoc, Fail> {
    use clap::{Args as _, FromArgMatches as _};
    let mut argv: Vec<String> = vec!["history".into()];
    if let Some(s) = store {
        argv.extend(["--store".into(), s.to_string()]);
    }
    argv.push("--".into());
    argv.extend(benchmarks.iter().cloned());
    let matches = HistoryArgs::augment_args(clap::Command::new("history"))
        .try_get_matches_from(&argv)
        .and_then(|m| HistoryArgs::from_arg_matches(&m))
        .map_err(|e| {
            Fail::usage(
                format!(
                    "cannot read the history: {}",
                    e.to_string().lines().next().unwrap_or("")
                ),
                "please report this",
            )
        })?;
    let opts = options(&matches.detect);
    build_doc(&matches, &opts).map(|(doc, _)| doc)
}

/// The gating metrics of perfsleuth.toml's `[compare]`, else wall time.
fn gating() -> Result<Vec<Metric>, Fail> {
    let config = crate::config::load(None)?;
    match config.and_then(|(_, c)| c.compare).and_then(|c| c.gating) {
        Some(g) => crate::compare::metrics(&g),
        None => Ok(vec![Metric::Wall]),
    }
}

fn options(d: &DetectArgs) -> Options {
    Options {
        window: d.window as usize,
        max_p: d.max_p,
        min_change: d.min_change,
    }
}

fn render(doc: &HistoryDoc, format: CompareFormat, color: bool) -> Result<String, Fail> {
    Ok(match format {
        CompareFormat::Terminal => perfsleuth_history::render_terminal(doc, color),
        CompareFormat::Markdown => perfsleuth_history::render_markdown(doc),
        CompareFormat::Github => {
            perfsleuth_app::verdict::github(&perfsleuth_history::render_markdown(doc), "")?
        }
        CompareFormat::Json => to_json_pretty(doc).map_err(|e| {
            Fail::usage(format!("cannot serialise JSON: {e}"), "please report this")
        })?,
    })
}

/// `--since`: a date or duration (as `runs --since`), else a git revision.
fn since(text: &str, cwd: &Path, filter: &mut Filter) -> Result<(), Fail> {
    if let Ok(t) = crate::history::since(text) {
        let now = perfsleuth_model::rfc3339(std::time::SystemTime::now());
        if t > now {
            return Err(Fail::usage(
                format!("--since `{text}` is in the future"),
                "give a date in the past, a duration back from now (3d) or a git revision",
            ));
        }
        filter.since_time = Some(t);
        return Ok(());
    }
    match crate::git::resolve(cwd, text) {
        Some(commit) => {
            filter.since_commit = Some(commit);
            Ok(())
        }
        None => Err(Fail::usage(
            format!("--since `{text}` is neither a date, a duration nor a git revision here"),
            "give a UTC date (2026-11-30), a duration back from now (3d) or a commit on the branch",
        )),
    }
}

fn history_fail(e: &HistoryError) -> Fail {
    let hint = match e {
        HistoryError::NoRuns(_) => {
            "`perfsleuth runs` lists the stored runs; --all-branches shows every branch".to_string()
        }
        HistoryError::UnknownBenchmark(_, known) => {
            let mut k: Vec<&str> = known.iter().map(String::as_str).take(10).collect();
            if known.len() > 10 {
                k.push("…");
            }
            format!("stored benchmarks: {}", k.join(", "))
        }
        HistoryError::CommitNotOnBranch(_) => {
            "--since REV needs a commit on the branch shown (--branch), in a git checkout"
                .to_string()
        }
    };
    Fail::usage(e.to_string(), hint)
}

fn fit(
    file: &Path,
    column: Option<&str>,
    format: CompareFormat,
    detect: &DetectArgs,
    color: bool,
) -> Result<i32, Fail> {
    let hint = "give a CSV with a header row, label columns (commit, date) and value columns";
    let text = read_text_or_stdin(file, MAX_DATA_BYTES)
        .map_err(|e| Fail::usage(format!("cannot read {}: {e}", input_name(file)), hint))?;
    let csv = perfsleuth_history::read_csv(&text, column)
        .map_err(|e| Fail::usage(format!("{}: {e}", file.display()), hint))?;
    let doc = perfsleuth_history::fit(&csv, &options(detect));
    emit(&render(&doc, format, color)?, false);
    Ok(0)
}
