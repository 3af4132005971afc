//! `scale`'s measurement: the levels planned from `--param`, swept
//! interleaved by perfsleuth-runner in one session (store, counters with the
//! futex tracepoint, `--locks`, Ctrl-C, conclude), stored like a run, and
//! analysed by perfsleuth-scale. The binary prints the [`ScaleOutcome`].

use crate::error::Fail;
use crate::locks::Instruments;
use crate::options::ScaleOptions;
use crate::output;
use crate::plan::{Shell, Templates, plan};
use crate::session::{self, measure_fail};
use crate::sink::StoreSink;
use crate::term::{ProgressLine, use_color};
use perfsleuth_measure::{IoConfig, OutputTarget, Spawner};
use perfsleuth_model::Mode;
use perfsleuth_model::exit::ExitCode;
use perfsleuth_runner::sweep::{Level, Sweep, Throughput, prepare_levels};
use perfsleuth_runner::{RunError, ScratchDir, Stop, conclude};
use perfsleuth_scale::{Analysis, analysis_of};

/// What a sweep ended with (a failed level is an error).
pub enum ScaleOutcome {
    /// Interrupted: the stored run (status interrupted) and the exit code.
    Interrupted {
        /// The stored run's id, when stored.
        ids: Vec<i64>,
        /// The exit code.
        code: i32,
    },
    /// Every level measured.
    Measured {
        /// The fit and diagnosis.
        analysis: Box<Analysis>,
        /// The stored run's id, when stored.
        run_id: Option<i64>,
        /// The command template (the chart's title).
        template: String,
        /// The session's notes (counters, locks).
        notes: Vec<String>,
        /// "Stored as run N in …", when stored.
        stored_note: Option<String>,
        /// `--profile`: each level's profile and where its shares moved
        /// between the levels ([`profile_text`]); empty without one.
        profiles: String,
    },
}

/// `scale --profile`'s text: each profiled level's headline, then how the
/// shares of the profiled time moved from the level of most throughput to
/// the least efficient one (the most throughput lost per thread; case B:
/// the waiting that grows is in the lock). Empty without profiles.
pub fn profile_text(run: &perfsleuth_model::Run, analysis: &Analysis) -> String {
    let param = &analysis.parameter;
    let level =
        |b: &perfsleuth_model::Benchmark| -> Option<f64> { b.parameters.get(param)?.parse().ok() };
    let profiled: Vec<(f64, &perfsleuth_model::StackProfile)> = run
        .benchmarks
        .iter()
        .filter_map(|b| Some((level(b)?, b.stacks.as_deref()?)))
        .collect();
    if profiled.is_empty() {
        return String::new();
    }
    let mut out = String::from("\nProfiles:\n");
    for (n, p) in &profiled {
        out.push_str(&format!(
            "  {param}={n}: {}\n",
            perfsleuth_report::stacks_headline(p)
        ));
    }
    let point = |n: f64| analysis.points.iter().find(|p| p.n == n);
    let best = profiled
        .iter()
        .filter_map(|(n, p)| Some((point(*n)?.throughput, *n, *p)))
        .max_by(|a, b| a.0.total_cmp(&b.0));
    let worst = profiled
        .iter()
        .filter_map(|(n, p)| Some((point(*n)?.efficiency, *n, *p)))
        .min_by(|a, b| a.0.total_cmp(&b.0));
    if let (Some((_, nb, pb)), Some((_, nw, pw))) = (best, worst)
        && nb != nw
    {
        let moved: Vec<String> = perfsleuth_report::shares_moved(pb, pw, 3)
            .into_iter()
            .map(|(label, a, b)| {
                format!(
                    "{label} {} → {}",
                    perfsleuth_report::rounded_share(a),
                    perfsleuth_report::rounded_share(b)
                )
            })
            .collect();
        out.push_str(&format!(
            "  from {param}={nb} (the most throughput) to {param}={nw} (the least per thread), shares of the profiled time: {}\n",
            moved.join(", ")
        ));
    }
    out
}

/// Plans the levels, sweeps them in one session and analyses the run.
pub fn measure(args: &ScaleOptions, spawner: Option<Spawner>) -> Result<ScaleOutcome, Fail> {
    let SweepPlan {
        param,
        values,
        method,
        template,
        planned,
    } = plan_sweep(args)?;
    let mut spawner = session::spawner_or_start(spawner)?;
    let scratch = ScratchDir::new("scale").map_err(Fail::from)?;
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
        .map_err(Fail::from)?;

    let mut store = session::open_store(args.store.as_deref(), args.no_store)?;
    let mut run = new_run(args, &param, &values, &method);
    let store = store
        .as_deref_mut()
        .map(|s| s as &mut dyn perfsleuth_store::Store);
    let mut s = Sweeping::start(args, &mut spawner, store, &mut run, &levels)?;
    let sweep = Sweep {
        method: &method,
        param: &param,
        stdout: &stdout_path,
        warmup: args.warmup,
        runs: args.runs,
    };
    let result = s.measure(&sweep, &mut spawner, &mut levels, &mut run)?;
    s.outcome(result, &run, args, template)
}

/// What a sweep measures: the parameter and its levels' values, how
/// throughput is read, and the command with its benchmarks, one per level.
struct SweepPlan {
    param: String,
    values: Vec<(String, f64)>,
    method: Throughput,
    template: String,
    planned: Vec<perfsleuth_runner::Planned>,
}

/// Reads and checks `scale`'s options into the levels to measure, refusing
/// what cannot be swept before anything starts.
fn plan_sweep(args: &ScaleOptions) -> Result<SweepPlan, Fail> {
    let spec = args.param.as_deref().unwrap_or_default();
    let (param, values) = crate::parse::scale_param(spec)
        .map_err(|e| Fail::usage(e, "e.g. --param threads=1,2,4,8"))?;
    if args.profiling.profile.records_allocations() {
        return Err(Fail::usage(
            "scale does not record allocations: --profile=alloc profiles one command",
            "profile a level's allocations with `perfsleuth run --profile=alloc`, its value substituted; scale --profile samples where each level's time goes",
        ));
    }
    let method = throughput_method(args)?;
    let shell = Shell(args.shell.clone());
    if let Some(sh) = &args.shell {
        let program = &Shell::words(sh)?[0];
        perfsleuth_measure::resolve_program(program, std::env::var_os("PATH").as_deref())
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
        output::check_writable(plot, "--plot", args.store.as_deref())?;
    }
    Ok(SweepPlan {
        param,
        values,
        method,
        template,
        planned,
    })
}

/// The sweep's run, before its levels: its options and this machine's
/// environment.
fn new_run(
    args: &ScaleOptions,
    param: &str,
    values: &[(String, f64)],
    method: &Throughput,
) -> perfsleuth_model::Run {
    output::new_run(
        Mode::Walltime,
        serde_json::to_value(perfsleuth_model::schema::ScaleOptions {
            kind: perfsleuth_model::SCALE_KIND.to_string(),
            param: param.to_string(),
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
    )
}

/// What a sweep carries from start to end: the sink storing it and the
/// instruments around it.
struct Sweeping<'s> {
    // Dropped in this order, as the locals they were: the sink before the
    // instruments.
    sink: StoreSink<'s>,
    instruments: Instruments,
}

impl<'s> Sweeping<'s> {
    /// Starts the instruments, stores the run with its levels still empty,
    /// and catches Ctrl-C.
    fn start(
        args: &ScaleOptions,
        spawner: &mut Spawner,
        store: Option<&'s mut dyn perfsleuth_store::Store>,
        run: &mut perfsleuth_model::Run,
        levels: &[Level],
    ) -> Result<Sweeping<'s>, Fail> {
        // The futex tracepoint is the point of counting here: the lock-contention
        // signal, at the same small cost at every level.
        // Before anything is stored: a refusal must leave no run behind.
        let instruments = Instruments::start(
            spawner,
            args.counters,
            false,
            true,
            args.locks,
            args.profiling.profile,
            &mut run.environment,
        )?;
        let empty: Vec<_> = levels.iter().map(|l| l.to_benchmark(false)).collect();
        let sink = StoreSink::begin(store, run, &empty, ProgressLine::new(false))?;
        session::catch_interrupts()?;
        Ok(Sweeping { sink, instruments })
    }

    /// Measures every level, stops the instruments and concludes `run` with
    /// the levels and what the instruments found: how the sweep ended.
    fn measure(
        &mut self,
        sweep: &Sweep,
        spawner: &mut Spawner,
        levels: &mut [Level],
        run: &mut perfsleuth_model::Run,
    ) -> Result<Result<(), Stop>, Fail> {
        let mut following = perfsleuth_runner::locks::Following::new(spawner);
        let result = sweep.measure(&mut following, &mut self.sink, levels);
        let names: Vec<String> = levels.iter().map(|l| l.to_benchmark(false).name).collect();
        self.instruments.stop(
            &following,
            levels.iter().zip(&names).map(|(l, n)| (l.id(), n.as_str())),
            None,
        );
        self.sink.progress.clear();

        run.benchmarks = levels.iter().map(|l| l.to_benchmark(true)).collect();
        self.instruments.attach(run, &mut self.sink)?;
        conclude(run, &result, &*spawner, &mut self.sink).map_err(Fail::from)?;
        Ok(result)
    }

    /// What the sweep ended with: a failed level's error (saying where its
    /// runs so far are stored), the interruption, or the analysis.
    fn outcome(
        &mut self,
        result: Result<(), Stop>,
        run: &perfsleuth_model::Run,
        args: &ScaleOptions,
        template: String,
    ) -> Result<ScaleOutcome, Fail> {
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
            Err(Stop::Interrupted) => Ok(ScaleOutcome::Interrupted {
                ids: run.id.into_iter().collect(),
                code: ExitCode::interrupted_by(perfsleuth_measure::interrupting_signal()),
            }),
            Ok(()) => {
                let analysis = analysis_of(run).ok_or_else(|| {
                    Fail::usage(
                        "no throughput was measured",
                        "this should not happen; please report it",
                    )
                })?;
                Ok(ScaleOutcome::Measured {
                    profiles: profile_text(run, &analysis),
                    analysis: Box::new(analysis),
                    run_id: run.id,
                    template,
                    notes: std::mem::take(&mut self.instruments.notes),
                    stored_note: self.sink.stored_note(use_color(args.color, true)),
                })
            }
        }
    }
}

/// A failed level: the run's hint about --ignore-failure does not apply to a sweep.
fn scale_fail(e: RunError) -> Fail {
    let command_failed = matches!(e, RunError::CommandFailed { .. });
    let mut fail = Fail::from(e);
    if command_failed {
        fail.hint = "run the command by hand at that level to see why it fails".into();
    }
    fail
}

fn throughput_method(args: &ScaleOptions) -> Result<Throughput, Fail> {
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
