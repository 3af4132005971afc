//! `perfsleuth runs` and `perfsleuth show`: reading the stored history.

use crate::cli::{RunsArgs, ShowArgs};
use crate::error::Fail;
use crate::output::{self, open_existing_store, store_fail};
use crate::term::emit;
use perfsleuth_model::schema::{Document, RunsDoc, to_json_pretty};
use perfsleuth_report::{Align, Exporter, JsonExporter, analyze, table};
use perfsleuth_store::Store as _;

/// Lists stored runs, newest first.
pub fn runs(args: RunsArgs) -> Result<i32, Fail> {
    let store = open_existing_store(args.store.store.as_deref())?;
    let list = store
        .list_runs(args.limit.map(|n| n as usize))
        .map_err(store_fail)?;
    if args.json {
        let doc = RunsDoc {
            schema: RunsDoc::SCHEMA.to_string(),
            schema_version: RunsDoc::VERSION,
            runs: list,
        };
        let text = to_json_pretty(&doc).map_err(|e| {
            Fail::usage(format!("cannot serialise JSON: {e}"), "please report this")
        })?;
        emit(&text, false);
        return Ok(0);
    }
    if list.is_empty() {
        emit(
            &format!("No runs stored in {} yet.\n", store.path().display()),
            false,
        );
        return Ok(0);
    }
    let mut rows = vec![
        [
            "ID",
            "STARTED",
            "STATUS",
            "SAMPLES",
            "COMMIT",
            "ENV",
            "CPU",
            "BENCHMARKS",
        ]
        .map(String::from)
        .to_vec(),
    ];
    for r in &list {
        let commit = r.git.as_ref().map_or("-".to_string(), |g| {
            format!(
                "{}{}",
                &g.commit[..g.commit.len().min(8)],
                if g.dirty { "+" } else { "" }
            )
        });
        let started = r.started_at.replace('T', " ");
        let started = started.get(..19).unwrap_or(&started).to_string();
        let benches = match r.benchmarks.len() {
            // A probe run measured the machine, not commands: name its probes.
            0 if !r.probes.is_empty() => format!("probe: {}", r.probes.join(", ")),
            0 if r.mode == perfsleuth_model::Mode::Probe => "probe".to_string(),
            0 => "-".to_string(),
            1 => r.benchmarks[0].clone(),
            n => format!("{} (+{} more)", r.benchmarks[0], n - 1),
        };
        let samples = if r.mode == perfsleuth_model::Mode::Probe {
            "-".to_string()
        } else {
            r.samples.to_string()
        };
        rows.push(vec![
            r.id.to_string(),
            started,
            r.status.to_string(),
            samples,
            commit,
            r.comparability.clone(),
            r.cpu_model.clone().unwrap_or_else(|| "-".into()),
            benches,
        ]);
    }
    emit(&table(&rows, |_| Align::Left), false);
    Ok(0)
}

/// Prints one stored run like `perfsleuth run` printed it.
pub fn show(args: ShowArgs) -> Result<i32, Fail> {
    let store = open_existing_store(args.store.store.as_deref())?;
    let id = store.resolve_run(&args.run).map_err(store_fail)?;
    let run = store.load_run(id).map_err(store_fail)?.ok_or_else(|| {
        Fail::usage(
            format!("run {id} not found in {}", store.path().display()),
            "list the stored runs with `perfsleuth runs`",
        )
    })?;
    let reference = output::resolve_reference(
        args.reference.as_deref(),
        run.benchmarks.iter().map(|b| b.name.as_str()),
    )?;
    if args.json {
        let text = JsonExporter
            .export(&run, &analyze(&run, reference))
            .map_err(|e| Fail::usage(e.to_string(), "please report this"))?;
        emit(&text, false);
    } else if run.mode == perfsleuth_model::Mode::Probe {
        // Probe results, not a wall-time summary of benchmarks it does not have.
        crate::probe::print_stored(&run, args.all, args.color);
    } else if let Some(analysis) = perfsleuth_scale::analysis_of(&run) {
        // A sweep reads as its table; per-level wall-time blocks would bury it.
        let what = run.benchmarks.first().map_or("", |b| b.name.as_str());
        emit(
            &format!(
                "Scale sweep `{what}` over {} ({}, {} level{}):\n\n",
                analysis.parameter,
                run.status.as_str(),
                analysis.points.len(),
                if analysis.points.len() == 1 { "" } else { "s" }
            ),
            false,
        );
        emit(
            &perfsleuth_scale::render_terminal(
                &analysis,
                crate::term::use_color(args.color, false),
            ),
            false,
        );
    } else {
        output::print_summary(&run, reference, args.color, false);
    }
    Ok(0)
}
