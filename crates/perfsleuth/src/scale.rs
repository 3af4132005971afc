//! `perfsleuth scale`: run a command at several concurrency levels
//! (interleaved, by perfsleuth-runner's sweep), store everything like a run,
//! then fit and diagnose with perfsleuth-scale. `scale fit FILE.csv`
//! analyses measurements made elsewhere.

use crate::cli::{ColorChoice, ScaleArgs, ScaleCommand};
use crate::error::Fail;
use crate::output;
use crate::plan::{Shell, Templates, plan};
use crate::sink::StoreSink;
use crate::term::{ProgressLine, emit, use_color};
use perfsleuth_app::locks::Instruments;
use perfsleuth_app::session::{self, measure_fail, runner_fail};
use perfsleuth_measure::{IoConfig, OutputTarget, Spawner};
use perfsleuth_model::Mode;
use perfsleuth_model::exit::ExitCode;
use perfsleuth_model::input::{MAX_DATA_BYTES, input_name, read_text_or_stdin};
use perfsleuth_runner::sweep::{Sweep, Throughput, prepare_levels};
use perfsleuth_runner::{RunError, ScratchDir, Stop, conclude};
use perfsleuth_scale::{Analysis, Machine, analysis_of, analyze};
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
    let spec = args.param.as_deref().unwrap_or_default();
    let (param, values) = crate::parse::scale_param(spec)
        .map_err(|e| Fail::usage(e, "e.g. --param threads=1,2,4,8"))?;
    let method = throughput_method(&args)?;
    let shell = Shell(args.shell.clone());
    if let Some(sh) = &args.shell {
        perfsleuth_measure::resolve_program(sh, std::env::var_os("PATH").as_deref())
            .map_err(|e| measure_fail(e, "--shell"))?;
    }
    let template = command_template(&args.command)?;
    let token = format!("{{{param}}}");
    if !template.contains(&token) {
        return Err(Fail::usage(
            format!("the command does not use {token}, so every level would run the same thing"),
            format!("put {token} where the command takes its concurrency, e.g. --threads {token}"),
        ));
    }
    let planned = plan(
        &Templates {
            commands: std::slice::from_ref(&template),
            names: args.name.as_slice(),
            prepare: &[],
            conclude: &[],
            setup: &[],
            cleanup: &[],
            lists: &[
                param.clone(),
                values
                    .iter()
                    .map(|(t, _)| t.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
            ],
            scans: &[],
            step: None,
        },
        &shell,
    )?;
    if let Some(plot) = &args.plot {
        output::check_writable(plot, "--plot", args.store.store.as_deref())?;
    }

    let mut spawner = session::spawner_or_start(spawner)?;
    let scratch = ScratchDir::new("scale").map_err(runner_fail)?;
    let stdout_path = scratch.path().join("stdout");
    let io = IoConfig {
        output: if method.reads_stdout() {
            OutputTarget::File(stdout_path.clone())
        } else {
            OutputTarget::Null
        },
        timeout: args.timeout,
        ..IoConfig::default()
    };
    let mut levels = prepare_levels(&mut spawner, planned, &values, &io, args.shell.is_some())
        .map_err(runner_fail)?;

    let mut store = session::open_store(args.store.store.as_deref(), args.no_store)?;
    let mut run = output::new_run(
        Mode::Walltime,
        serde_json::to_value(perfsleuth_model::schema::ScaleOptions {
            kind: perfsleuth_model::SCALE_KIND.to_string(),
            param: param.clone(),
            values: values.iter().map(|(t, _)| t.clone()).collect(),
            throughput: Some(method.describe()),
            runs: args.runs,
            warmup: args.warmup,
            shell: args.shell.clone(),
            timeout_s: args.timeout.map(|t| t.as_secs_f64()),
            counters: format!("{:?}", args.counters).to_lowercase(),
        })
        .unwrap_or_default(),
        perfsleuth_runner::capture_environment(&perfsleuth_env::Source::live()),
    );
    // The futex tracepoint is the point of counting here: the lock-contention
    // signal, at the same small cost at every level.
    // Before anything is stored: a refusal must leave no run behind.
    let mut instruments = Instruments::start(
        &mut spawner,
        session::counters(args.counters),
        false,
        true,
        args.locks,
        &mut run.environment,
    )?;
    let empty: Vec<_> = levels.iter().map(|l| l.to_benchmark(false)).collect();
    let mut sink = StoreSink::begin(
        store
            .as_deref_mut()
            .map(|s| s as &mut dyn perfsleuth_store::Store),
        &mut run,
        &empty,
        ProgressLine::new(false),
    )?;
    session::catch_interrupts()?;

    let sweep = Sweep {
        method: &method,
        param: &param,
        stdout: &stdout_path,
        warmup: args.warmup,
        runs: args.runs,
    };
    let mut following = perfsleuth_runner::locks::Following::new(&mut spawner);
    let result = sweep.measure(&mut following, &mut sink, &mut levels);
    instruments.stop(&following, levels.iter().map(|l| l.id()));
    sink.progress.clear();

    run.benchmarks = levels.iter().map(|l| l.to_benchmark(true)).collect();
    instruments.attach(&mut run, &mut sink)?;
    conclude(&mut run, &result, &spawner, &mut sink).map_err(runner_fail)?;
    let stored_note = |what: &str| {
        run.id.map_or(String::new(), |id| {
            format!("; the runs so far are stored as run {id} (status {what})")
        })
    };
    match result {
        Err(Stop::Failed(e)) => {
            let mut fail = scale_fail(e);
            let note = stored_note("failed");
            if !note.is_empty() {
                fail.details.push(note.trim_start_matches("; ").to_string());
            }
            Err(fail)
        }
        Err(Stop::Interrupted) => {
            let ids: Vec<i64> = run.id.into_iter().collect();
            emit(
                &session::interrupted_line("the runs so far", &ids, ""),
                true,
            );
            Ok(ExitCode::interrupted_by(
                perfsleuth_measure::interrupting_signal(),
            ))
        }
        Ok(()) => {
            let analysis = analysis_of(&run).ok_or_else(|| {
                Fail::usage(
                    "no throughput was measured",
                    "this should not happen; please report it",
                )
            })?;
            report(
                &analysis,
                run.id,
                &template,
                args.json,
                args.plot.as_deref(),
                args.color,
            )?;
            // After the results, so they never stand between the user and an error.
            for note in &instruments.notes {
                emit(&format!("note: {note}\n"), true);
            }
            if let Some(note) = sink.stored_note(use_color(args.color, true)) {
                emit(&note, true);
            }
            Ok(0)
        }
    }
}

/// A failed level: the run's hint about --ignore-failure does not apply to a sweep.
fn scale_fail(e: RunError) -> Fail {
    let command_failed = matches!(e, RunError::CommandFailed { .. });
    let mut fail = runner_fail(e);
    if command_failed {
        fail.hint = "run the command by hand at that level to see why it fails".into();
    }
    fail
}

fn throughput_method(args: &ScaleArgs) -> Result<Throughput, Fail> {
    if let Some(w) = args.work {
        return Ok(Throughput::Work(w));
    }
    if let Some(w) = args.work_per_thread {
        return Ok(Throughput::WorkPerThread(w));
    }
    if let Some(src) = &args.throughput_regex {
        let re = regex_lite::Regex::new(src).map_err(|e| {
            let first = e.to_string();
            let first = first.lines().last().unwrap_or("").trim().to_string();
            Fail::usage(
                format!("--throughput-regex '{src}' is not a valid regular expression: {first}"),
                "e.g. --throughput-regex 'ops/s: ([0-9.]+)'",
            )
        })?;
        return Ok(Throughput::Regex(re, src.clone()));
    }
    if let Some(field) = &args.throughput_json {
        if field.split('.').any(str::is_empty) {
            return Err(Fail::usage(
                format!("--throughput-json `{field}` is not a field name"),
                "name the field, e.g. --throughput-json ops_per_sec (dots for nested: stats.rate)",
            ));
        }
        return Ok(Throughput::Json(field.clone()));
    }
    Err(Fail::usage(
        "no way to compute throughput was given",
        "pass --work, --work-per-thread, --throughput-regex or --throughput-json",
    ))
}

/// The command as one template line: a single argument as given, or the
/// words after `--` quoted so that splitting gives them back unchanged.
fn command_template(words: &[String]) -> Result<String, Fail> {
    match words {
        [] => Err(Fail::usage(
            "no command given",
            "e.g. perfsleuth scale --param threads=1,2,4,8 --work 1e6 -- ./bench --threads {threads}",
        )),
        [one] => Ok(one.clone()),
        many => Ok(many
            .iter()
            .map(|w| quote_word(w))
            .collect::<Vec<_>>()
            .join(" ")),
    }
}

/// Single-quotes a word when it holds anything a splitter would treat specially.
fn quote_word(w: &str) -> String {
    let plain = !w.is_empty()
        && w.chars()
            .all(|c| c.is_alphanumeric() || "-_./=:,+@%{}^".contains(c));
    if plain {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
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
        let svg =
            perfsleuth_report::svg::render_scale_svg(&perfsleuth_scale::chart(analysis, title));
        output::write_file(path, &svg)?;
        emit(&format!("Chart written to {}\n", path.display()), true);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_after_the_separator_survive_splitting() {
        let words: Vec<String> = ["./bench", "--name", "a b", "it's", "{threads}"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let line = command_template(&words).expect("template");
        assert_eq!(
            perfsleuth_measure::split_command(&line).expect("split"),
            words
        );
    }
}
