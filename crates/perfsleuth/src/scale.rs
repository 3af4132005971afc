//! `perfsleuth scale`: run a command at several concurrency levels
//! (interleaved, by perfsleuth-runner's sweep), store everything like a run,
//! then fit and diagnose with perfsleuth-scale. `scale fit FILE.csv`
//! analyses measurements made elsewhere.

use crate::cli::{ColorChoice, ScaleArgs, ScaleCommand};
use crate::error::Fail;
use crate::output;
use crate::term::{emit, use_color};
use perfsleuth_app::options::ScaleOptions;
use perfsleuth_app::scale::ScaleOutcome;
use perfsleuth_app::session;
use perfsleuth_measure::Spawner;
use perfsleuth_model::input::{MAX_DATA_BYTES, input_name, read_text_or_stdin};
use perfsleuth_scale::{Analysis, Machine, analyze};
use std::path::Path;

/// Runs `perfsleuth scale` (or `scale fit`) and returns the exit code.
pub fn scale(args: ScaleArgs, spawner: Option<Spawner>) -> Result<i32, Fail> {
    if let Some(ScaleCommand::Fit {
        file,
        cpus,
        param,
        json,
        plot,
        color,
    }) = &args.action
    {
        return fit_file(file, *cpus, param, *json, plot.as_deref(), *color);
    }
    let args = ScaleOptions::from(args);
    let measured = perfsleuth_app::scale::measure(&args, spawner)?;
    let ScaleOutcome::Measured {
        analysis,
        run_id,
        template,
        notes,
        stored_note,
        profiles,
    } = measured
    else {
        let ScaleOutcome::Interrupted { ids, code } = measured else {
            unreachable!("two outcomes")
        };
        emit(
            &session::interrupted_line("the runs so far", &ids, ""),
            true,
        );
        return Ok(code);
    };
    report(
        &analysis,
        run_id,
        &template,
        args.json,
        args.plot.as_deref(),
        args.color,
    )?;
    if !args.json && !profiles.is_empty() {
        emit(&profiles, false);
    }
    // After the results, so they never stand between the user and an error.
    for note in &notes {
        emit(&format!("note: {note}\n"), true);
    }
    if let Some(note) = stored_note {
        emit(&note, true);
    }
    Ok(0)
}

/// Prints the analysis (terminal or JSON) and writes the chart.
fn report(
    analysis: &Analysis,
    run_id: Option<i64>,
    title: &str,
    json: bool,
    plot: Option<&Path>,
    color: ColorChoice,
) -> Result<(), Fail> {
    if json {
        let doc = perfsleuth_scale::to_json(analysis, run_id);
        let text = perfsleuth_model::schema::to_json_pretty(&doc).map_err(|e| {
            Fail::usage(format!("cannot serialise JSON: {e}"), "please report this")
        })?;
        emit(&text, false);
    } else {
        let text = perfsleuth_scale::render_terminal(analysis, use_color(color, false));
        emit(&text, false);
    }
    if let Some(path) = plot {
        let svg = perfsleuth_report::chart::scaling(&perfsleuth_scale::chart(analysis, title));
        output::write_chart(path, &perfsleuth_report::chart::standalone(&svg))?;
    }
    Ok(())
}

fn fit_file(
    file: &Path,
    cpus: Option<f64>,
    param: &str,
    json: bool,
    plot: Option<&Path>,
    color: ColorChoice,
) -> Result<i32, Fail> {
    // A million rows of N,X is ~20 MB, well inside the limit.
    let text = read_text_or_stdin(file, MAX_DATA_BYTES).map_err(|e| {
        let hint = if file == Path::new("-") {
            "pipe a CSV file with columns N,X"
        } else {
            "give a CSV file with columns N,X"
        };
        Fail::usage(format!("cannot read {}: {e}", input_name(file)), hint)
    })?;
    let observations = perfsleuth_scale::read_csv(&text).map_err(|e| {
        Fail::usage(
            format!("{}: {e}", file.display()),
            "expected a CSV with columns N,X (concurrency, throughput), one row per run",
        )
    })?;
    if let Some(plot) = plot {
        output::check_writable(plot, "--plot", None)?;
    }
    let machine = Machine {
        usable: cpus,
        ..Machine::default()
    };
    let analysis = analyze(param, &observations, &machine);
    if analysis.fit.is_none() {
        let why = analysis.fit_error.clone().unwrap_or_default();
        return Err(Fail::usage(
            format!("{}: {why}", file.display()),
            "measure at least 4 (better 6 or more) concurrency levels",
        ));
    }
    report(
        &analysis,
        None,
        &file.display().to_string(),
        json,
        plot,
        color,
    )?;
    Ok(0)
}
