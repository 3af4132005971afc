//! `perfsleuth run`: the settings checked and measured in one session
//! (`perfsleuth_app::session`), then the summary, the exports, the notes and
//! the comparison with `--baseline` printed.

use crate::cli::PushTarget;
use crate::error::Fail;
use crate::output;
use crate::term::emit;
use perfsleuth_app::options::RunOptions;
use perfsleuth_app::session::{
    Checked, Measurement, Part, measure, prepare, spawner_or_start, validate,
};
use perfsleuth_measure::Spawner;
use perfsleuth_model::exit::ExitCode;
use perfsleuth_model::{Environment, Run};
use perfsleuth_runner::Stop;

/// Runs `perfsleuth run` and returns the exit code: once, or `--repeat N`
/// times and then what the repeats say about the noise.
pub fn run(
    args: RunOptions,
    push: Option<PushTarget>,
    ci: crate::compare::CiOutputs,
    spawner: Option<Spawner>,
) -> Result<i32, Fail> {
    let repeat = args.repeat;
    let refuse = |what: &str, hint: &str| Err(Fail::usage(what.to_string(), hint.to_string()));
    if repeat == 0 {
        return refuse(
            "--repeat 0 measures nothing",
            "give --repeat 1 (the default) or more",
        );
    }
    if repeat > 1 {
        if args.no_store {
            return refuse(
                "--repeat with --no-store keeps nothing to learn the noise from",
                "drop --no-store",
            );
        }
        if args.baseline.is_some() {
            return refuse(
                "--repeat with --baseline would compare each repeat on its own",
                "measure with --repeat first, then `perfsleuth compare`",
            );
        }
        if !output::requested_exports(&args).is_empty() {
            return refuse(
                "--repeat with --export-*: every repeat would overwrite the file",
                "export one run afterwards with `perfsleuth show RUN`, or drop --repeat",
            );
        }
    }
    if let Some(target) = &push {
        crate::server::check_push_target(target)?;
    }
    if let Some(junit) = &ci.junit {
        crate::output::check_writable(junit, "--export-junit", args.store.as_deref())?;
    }
    if ci.any() && repeat > 1 {
        return refuse(
            "--repeat with --format github or --export-junit: every repeat would give its own verdict",
            "give the verdict of one run: drop --repeat",
        );
    }
    let mut spawner = spawner_or_start(spawner)?;
    for i in 1..=repeat {
        if repeat > 1 {
            emit(&format!("repeat {i} of {repeat}\n"), true);
        }
        let code = run_once(&args, push.as_ref(), &ci, &mut spawner)?;
        if code != ExitCode::OK {
            return Ok(code);
        }
    }
    if repeat > 1 {
        report_repeats(&args)?;
    }
    Ok(ExitCode::OK)
}

/// After `--repeat`: per benchmark of the newest run, the noise learned from
/// its same-binary runs on this machine class.
fn report_repeats(args: &RunOptions) -> Result<(), Fail> {
    let store = output::open_existing_store(args.store.as_deref())?;
    let id = store.resolve_run("latest").map_err(Fail::from)?;
    let Some(latest) = store.load_run_measurements(id).map_err(Fail::from)? else {
        return Ok(());
    };
    let mut out = String::from("\n");
    let all = perfsleuth_sides::same_binary(&*store, &latest).map_err(Fail::from)?;
    for (b, runs) in latest.benchmarks.iter().zip(all) {
        let key = perfsleuth_compare::benchmark_key(&b.name, &b.parameters);
        if runs.is_empty() {
            out.push_str(&format!(
                "`{key}`: no binary hash, so no same-binary history\n"
            ));
            continue;
        }
        let samples = perfsleuth_sides::samples_of(runs.iter());
        if samples.len() < perfsleuth_compare::MIN_HISTORY {
            out.push_str(&format!(
                "`{key}`: {} same-binary runs stored; {} are needed to learn its noise\n",
                samples.len(),
                perfsleuth_compare::MIN_HISTORY
            ));
            continue;
        }
        // The rule `compare` and `history` apply, with the same prior.
        let prior = perfsleuth_compare::prior_noise(&latest.environment);
        let figures: Vec<String> = [
            (perfsleuth_model::Metric::Wall, "wall time"),
            (perfsleuth_model::Metric::Cpu, "CPU time"),
        ]
        .into_iter()
        .filter_map(|(metric, name)| {
            let n = perfsleuth_compare::history_noise(&samples, metric, Some(prior.clone()))?;
            Some(format!(
                "{name} {}",
                perfsleuth_compare::noise_text(n.sd, &n.source)
            ))
        })
        .collect();
        out.push_str(&format!(
            "noise for `{key}` on this machine class: {}\n",
            figures.join("; ")
        ));
    }
    emit(&out, true);
    Ok(())
}

/// One measurement: validate, prepare, measure, conclude, render.
fn run_once(
    args: &RunOptions,
    push: Option<&PushTarget>,
    ci: &crate::compare::CiOutputs,
    spawner: &mut Spawner,
) -> Result<i32, Fail> {
    let c = validate(args)?;
    if ci.any() && c.baseline.is_none() && c.planned.len() < 2 {
        return Err(Fail::usage(
            "--format github and --export-junit give a verdict, and one command has none",
            "give two commands or more (the first, or --reference, is the reference), or --baseline RUN",
        ));
    }
    let mut m = measure_commands(&c, spawner)?;
    let report = Report {
        args,
        c: &c,
        to_stderr: output::summary_to_stderr(args),
    };
    match std::mem::replace(&mut m.result, Ok(())) {
        Err(Stop::Failed(e)) => Err(report.failed(&m.run, e)),
        Err(Stop::Interrupted) => Ok(report.interrupted(&m.run)),
        Ok(()) => {
            report.results(&m.run)?;
            report.notes(&m);
            let code = report.verdict(&m.run, m.look, ci)?;
            if let Some(target) = push {
                push_stored(args, &m.ids, target)?;
            }
            Ok(code)
        }
    }
}

/// Prepares and measures the checked plan `c` in one stored run; while the
/// comparison it will be judged by (against `--baseline`, or of the
/// commands) cannot decide, rounds are added.
fn measure_commands(c: &Checked, spawner: &mut Spawner) -> Result<Measurement, Fail> {
    let benches = prepare(c, c.planned.clone(), spawner)?;
    let parts = vec![Part {
        git: None,
        extra: serde_json::Map::new(),
        benchmarks: benches.len(),
        label: "",
    }];
    let more = |template: &Run, benches: &[perfsleuth_runner::Bench], look: u32| match &c.baseline {
        Some(b) => {
            crate::compare::undecided(&b.side, template, benches, &b.opts.at_look(Some(look)))
        }
        // Two commands: the summary's comparison, at the look its rounds make.
        None => {
            perfsleuth_summary::undecided(&crate::compare::so_far(template, benches), c.reference)
        }
    };
    measure(c, spawner, benches, parts, &more)
}

/// What reporting a measured run reads: its options, the checked plan, and
/// whether the summary goes to stderr.
struct Report<'a> {
    args: &'a RunOptions,
    c: &'a Checked,
    to_stderr: bool,
}

impl Report<'_> {
    /// A command failed: the others' results first, then the failure.
    fn failed(&self, run: &Run, e: perfsleuth_runner::RunError) -> Fail {
        let (args, c) = (self.args, self.c);
        if run.benchmarks.iter().any(|b| !b.samples.is_empty()) {
            output::print_summary(run, c.reference, &output::View::of(args), self.to_stderr);
        }
        let mut fail = Fail::from(e);
        // As hyperfine does: the --export-* files get the results so
        // far (status failed), so a long run's samples are not lost; a
        // run that measured nothing overwrites no earlier file with it.
        let measured = run.benchmarks.iter().any(|b| !b.samples.is_empty());
        if measured && !output::requested_exports(args).is_empty() {
            match output::write_exports(run, c.reference, args) {
                Ok(()) => fail
                    .details
                    .push("the results so far were written to the --export-* files".into()),
                Err(f) => fail.details.push(f.message),
            }
        }
        fail
    }

    /// Interrupted: the samples so far, where they are stored, and the exit
    /// code.
    fn interrupted(&self, run: &Run) -> i32 {
        output::print_summary(
            run,
            self.c.reference,
            &output::View::of(self.args),
            self.to_stderr,
        );
        let ids: Vec<i64> = run.id.into_iter().collect();
        emit(
            &perfsleuth_app::session::interrupted_line("the samples taken so far", &ids, ""),
            true,
        );
        ExitCode::interrupted_by(perfsleuth_measure::interrupting_signal())
    }

    /// The results: the summary, each variant against the base, the
    /// `--export-*` files and the `--plot` chart.
    fn results(&self, run: &Run) -> Result<(), Fail> {
        let (args, c) = (self.args, self.c);
        output::print_summary(run, c.reference, &output::View::of(args), self.to_stderr);
        if !args.quiet
            && let Some(text) = crate::variant::against_base(run, &args.verdict, args.color)?
        {
            emit(&text, self.to_stderr);
        }
        output::write_exports(run, c.reference, args)?;
        if let Some(plot) = &args.plot {
            let report = perfsleuth_summary::analyze(run, c.reference);
            let svg = perfsleuth_report::html::distribution_chart(run, &report);
            output::write_chart(plot, &perfsleuth_report::chart::standalone(&svg))?;
        }
        Ok(())
    }

    /// After the results, so they never stand between the user and an
    /// error: where the run is stored, the session's notes, and the
    /// warnings on what was measured.
    fn notes(&self, m: &Measurement) {
        let (args, c) = (self.args, self.c);
        if let Some(note) = &m.stored_note {
            emit(note, true);
        }
        for note in &m.notes {
            emit(&format!("note: {note}\n"), true);
        }
        if let Some(shell) = &args.shell {
            emit(
                &format!(
                    "note: every command ran through `{shell} -c`: the times include the shell's own start-up, which is not subtracted (docs/ARCHITECTURE.md, \"Shells\"); drop --shell to time the program alone\n"
                ),
                true,
            );
        }
        if m.rounds > c.rounds() {
            let what = if c.baseline.is_some() {
                "the comparison with the baseline"
            } else {
                "the comparison of the two commands"
            };
            let note = crate::compare::extension_note(m.rounds, m.elapsed, c.max_time, what);
            emit(&format!("note: {note}\n"), true);
            if c.baseline.is_none()
                && let Some(look) = perfsleuth_compare::look_note(
                    m.look,
                    perfsleuth_summary::in_run_rule(None).alpha,
                )
            {
                emit(&format!("note: {look}\n"), true);
            }
        }
        for warning in perfsleuth_runner::nondeterminism(&m.run.benchmarks)
            .iter()
            .chain(&m.warnings)
        {
            emit(&format!("warning: {warning}\n"), true);
        }
        if !c.simulated() {
            warn_if_unfit(&m.run.environment);
        }
    }

    /// The verdict — against --baseline, or of the commands against the
    /// reference — gates --fail-on and goes to the CI outputs: the exit code.
    fn verdict(
        &self,
        run: &Run,
        look: Option<u32>,
        ci: &crate::compare::CiOutputs,
    ) -> Result<i32, Fail> {
        let (args, c) = (self.args, self.c);
        Ok(match &c.baseline {
            Some(b) => {
                let comparison = crate::compare::after_run(
                    b,
                    run,
                    look,
                    &args.verdict,
                    args.color,
                    self.to_stderr,
                )?;
                let suite = format!("run: {} → {}", comparison.baseline, comparison.candidate);
                ci.give(&comparison, &suite, &args.verdict)?
            }
            None if !ci.any() && args.verdict.fail_on.is_none() => 0,
            None => match perfsleuth_app::variant::in_run(run, c.reference, &args.verdict)? {
                Some(comparison) => {
                    let suite = format!("run: each command against `{}`", comparison.baseline);
                    ci.give(&comparison, &suite, &args.verdict)?
                }
                None => 0,
            },
        })
    }
}

/// `--push`: sends the stored runs `ids` to `target`.
fn push_stored(args: &RunOptions, ids: &[Option<i64>], target: &PushTarget) -> Result<(), Fail> {
    let ids: Vec<i64> = ids.iter().flatten().copied().collect();
    if ids.is_empty() {
        return Err(Fail::usage(
            "--push has no stored run to send (--no-store)",
            "drop --no-store, or push later with `perfsleuth push`",
        ));
    }
    crate::server::push_after_run(
        args.store.as_deref(),
        &ids,
        target,
        crate::server::PushReport::Lines,
    )?;
    Ok(())
}

/// One line after the results when `env check` finds a problem, so the
/// reader weighs the numbers accordingly.
fn warn_if_unfit(env: &Environment) {
    let findings = perfsleuth_env::check(env);
    if let Some(problem) = findings
        .iter()
        .find(|f| f.severity == perfsleuth_env::Severity::Problem)
    {
        emit(
            &format!(
                "warning: this machine was not fit for benchmarking: {} (see `perfsleuth env check`)\n",
                problem.message
            ),
            true,
        );
    }
}
