//! `perfsleuth run`: plan, check, measure (interleaved, adaptive), store and
//! summarise. Every check that can fail on user input happens before the
//! first timed iteration.

use crate::cli::{ModeChoice, RunArgs};
use crate::error::Fail;
use crate::output;
use crate::parse;
use crate::plan::{Planned, Shell, Templates, plan};
use crate::simulate::Simulation;
use crate::term::{ProgressLine, emit, use_color};
use perfsleuth_measure::{
    CommandId, IoConfig, MeasureError, Outcome, OutputTarget, Spawner, Tolerate,
    install_interrupt_handler,
};
use perfsleuth_model::exit::ExitCode;
use perfsleuth_model::{
    Benchmark, Environment, ImpactClass, Mode, Profile, Run, RunStatus, Sample, rfc3339,
};
use perfsleuth_store::Store;
use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// Runs shorter than this are collected by polling rather than blocking.
const POLL_BELOW: Duration = Duration::from_millis(5);
/// How long to sleep between polls for short runs.
const POLL_INTERVAL: Duration = Duration::from_millis(2);

/// When a benchmark has been measured enough.
#[derive(Debug, Clone, Copy)]
struct StopRule {
    exact: Option<u32>,
    min_runs: u32,
    max_runs: Option<u32>,
    budget: Duration,
    precision: f64,
}

/// Per-benchmark measuring state.
struct Live {
    plan: Planned,
    /// Simulation mode: where this command's callgrind output goes.
    sim_dir: Option<PathBuf>,
    /// Simulation mode: the latest run's per-function costs.
    profile: Option<Profile>,
    /// Facts about the measured program (`binary.*`).
    binary: Environment,
    /// `--setup` ran and `--cleanup` has not yet.
    set_up: bool,
    main: CommandId,
    prepare: Option<CommandId>,
    setup: Option<CommandId>,
    cleanup: Option<CommandId>,
    store_id: Option<i64>,
    samples: Vec<Sample>,
    /// Timed runs handed to the spawner so far (ahead of `samples` by the ones in flight).
    requested: u32,
    /// Wall time of the latest prepare + run, to pace the pipeline.
    last_unit: Option<Duration>,
    prepare_wall: Duration,
    spent: Duration,
    next_check: u32,
    done: bool,
}

impl Live {
    fn runs(&self) -> u32 {
        self.samples.len() as u32
    }

    /// Whether another timed run may be requested: not done, and below the
    /// hard cap (`--runs` or `--max-runs`) counting the runs in flight.
    fn wants_more(&self, rule: &StopRule) -> bool {
        let cap = rule.exact.or(rule.max_runs).unwrap_or(u32::MAX);
        !self.done && self.requested < cap
    }

    /// Applies the stopping rule. The CI is recomputed only when the sample
    /// count has grown by ~10 %, so the check stays off the per-iteration cost.
    fn update_done(&mut self, rule: &StopRule) {
        // Once met, the rule stays met: runs already queued in the spawner
        // keep arriving after the decision and must not undo it.
        if self.done {
            return;
        }
        let n = self.runs();
        self.done = match rule.exact {
            Some(exact) => n >= exact,
            None if n < rule.min_runs => false,
            None if rule.max_runs.is_some_and(|m| n >= m) => true,
            None if self.spent >= rule.budget => true,
            None if n >= self.next_check => {
                self.next_check = n + (n / 10).max(1);
                let walls: Vec<f64> = self.samples.iter().map(|s| s.wall_ns as f64).collect();
                perfsleuth_stats::relative_median_ci_halfwidth(&walls, 0.95)
                    .is_some_and(|h| h <= rule.precision)
            }
            None => false,
        };
    }

    /// Rough time still needed, for the ETA.
    fn remaining(&self, rule: &StopRule) -> Duration {
        if self.done {
            return Duration::ZERO;
        }
        let n = self.runs();
        let per_run = if n == 0 {
            Duration::from_millis(10)
        } else {
            self.spent / n
        };
        let runs_left = |target: u32| per_run * target.saturating_sub(n);
        match rule.exact {
            Some(exact) => runs_left(exact),
            None => {
                let until = runs_left(rule.min_runs).max(rule.budget.saturating_sub(self.spent));
                rule.max_runs.map_or(until, |m| until.min(runs_left(m)))
            }
        }
    }
}

/// The spawner `main` forked early, or a new one when it could not.
pub(crate) fn spawner_or_start(spawner: Option<Spawner>) -> Result<Spawner, Fail> {
    match spawner {
        Some(s) => Ok(s),
        None => Spawner::start().map_err(|e| {
            Fail::usage(
                format!("cannot start the process spawner: {e}"),
                "check the process limit (ulimit -u)",
            )
        }),
    }
}

/// Runs `perfsleuth run` and returns the exit code.
pub fn run(args: RunArgs, spawner: Option<Spawner>) -> Result<i32, Fail> {
    let mut spawner = spawner_or_start(spawner)?;
    let tolerate = parse::ignore_failure(args.ignore_failure.as_deref())
        .map_err(|e| Fail::usage(e, "see perfsleuth run --help"))?;
    let simulation = match args.mode {
        ModeChoice::Simulation => Some(Simulation::new(args.collect.clone())?),
        ModeChoice::Walltime => {
            if args.collect.is_some() {
                return Err(Fail::usage(
                    "--collect works only in simulation mode",
                    "add --mode simulation (needs valgrind)",
                ));
            }
            None
        }
    };
    // Simulated runs are deterministic: one run and one that checks it, no warmup.
    let warmup = if simulation.is_some() { 0 } else { args.warmup };
    let rule = StopRule {
        exact: args
            .runs
            .or(simulation.as_ref().map(|_| crate::simulate::DEFAULT_RUNS)),
        min_runs: args.min_runs,
        max_runs: args.max_runs,
        budget: args.time_budget,
        precision: args.precision,
    };
    if let Some(max) = args.max_runs.filter(|m| *m < args.min_runs) {
        return Err(Fail::usage(
            format!("--max-runs {max} is below --min-runs {}", args.min_runs),
            "raise --max-runs or lower --min-runs",
        ));
    }
    if let Some(shell) = &args.shell {
        perfsleuth_measure::resolve_program(shell, std::env::var_os("PATH").as_deref())
            .map_err(|e| measure_fail(e, "--shell"))?;
    }
    let shell = Shell(args.shell.clone());
    let templates = Templates {
        commands: &args.commands,
        names: &args.name,
        prepare: &args.prepare,
        setup: &args.setup,
        cleanup: &args.cleanup,
        lists: &args.parameter_list,
        scans: &args.parameter_scan,
        step: args.step.as_deref(),
    };
    let planned = plan(&templates, &shell)?;
    // A bad --baseline must fail before anything is measured.
    let baseline = match &args.baseline {
        Some(spec) => {
            crate::compare::options(&args.verdict)?;
            let mut handle = crate::selectors::StoreHandle::new(args.store.store.clone());
            let side = crate::selectors::resolve(spec, &mut handle)?;
            // Refused now, not after minutes of measuring.
            let mode = if simulation.is_some() {
                Mode::Simulation
            } else {
                Mode::Walltime
            };
            crate::compare::same_mode_as(&side, "this run", mode)?;
            Some(side)
        }
        None => None,
    };
    let reference = output::resolve_reference(
        args.reference.as_deref(),
        planned.iter().map(|p| p.name.as_str()),
    )?;
    let exports: Vec<(&str, &PathBuf)> = [
        ("--export-json", &args.export_json),
        ("--export-csv", &args.export_csv),
        ("--export-markdown", &args.export_markdown),
    ]
    .into_iter()
    .filter_map(|(option, path)| path.as_ref().map(|p| (option, p)))
    .collect();
    for (i, (option, path)) in exports.iter().enumerate() {
        output::check_writable(path, option)?;
        if let Some((other, _)) = exports[..i].iter().find(|(_, p)| p == path) {
            return Err(Fail::usage(
                format!("{other} and {option} both write to {}", path.display()),
                "give each export its own file (at most one can be `-`, stdout)",
            ));
        }
    }
    let output_target = match args.output.as_str() {
        "null" => OutputTarget::Null,
        "inherit" => OutputTarget::Inherit,
        "" => {
            return Err(Fail::usage(
                "--output is empty",
                "use null, inherit or a file path",
            ));
        }
        file => {
            let path = PathBuf::from(file);
            output::check_writable(&path, "--output")?;
            // Only checked here: it is emptied just before measuring, so a run
            // refused for bad input leaves an existing file untouched.
            if path.exists() {
                std::fs::OpenOptions::new()
                    .append(true)
                    .open(&path)
                    .map_err(|e| {
                        Fail::usage(
                            format!("cannot write --output file {}: {e}", path.display()),
                            "choose a writable path, or --output null",
                        )
                    })?;
            }
            OutputTarget::File(path)
        }
    };
    if let Some(input) = &args.input {
        let readable = std::fs::File::open(input).and_then(|f| f.metadata());
        match readable {
            Ok(meta) if meta.is_dir() => {
                return Err(Fail::usage(
                    format!("--input {} is a directory", input.display()),
                    "give a file to feed to the commands' standard input",
                ));
            }
            Ok(_) => {}
            Err(e) => {
                return Err(Fail::usage(
                    format!("cannot read --input file {}: {e}", input.display()),
                    "check the path",
                ));
            }
        }
    }
    let io = IoConfig {
        output: output_target.clone(),
        input: args.input.clone(),
        timeout: args.timeout,
        tolerate: tolerate.clone(),
        ..IoConfig::default()
    };
    let aux_io = IoConfig {
        timeout: args.timeout,
        ..IoConfig::default()
    };

    let mut live = Vec::with_capacity(planned.len());
    let mut binaries: std::collections::HashMap<PathBuf, Environment> = Default::default();
    for p in planned {
        let mut prep =
            |argv: &Option<Vec<String>>, what: &str| -> Result<Option<CommandId>, Fail> {
                argv.as_ref()
                    .map(|a| {
                        spawner
                            .prepare(a, &aux_io)
                            .map_err(|e| measure_fail(e, what))
                    })
                    .transpose()
            };
        let prepare = prep(&p.prepare, "--prepare")?;
        let setup = prep(&p.setup, "--setup")?;
        let cleanup = prep(&p.cleanup, "--cleanup")?;
        let (main, sim_dir) = match &simulation {
            Some(sim) => {
                // valgrind is what runs; the program must exist all the same.
                perfsleuth_measure::resolve_program(
                    &p.argv[0],
                    std::env::var_os("PATH").as_deref(),
                )
                .map_err(|e| measure_fail(e, "command"))?;
                let (argv, dir) = sim.wrap(live.len(), &p.argv)?;
                let sim_io = IoConfig {
                    disable_aslr: true,
                    ..io.clone()
                };
                let id = spawner
                    .prepare(&argv, &sim_io)
                    .map_err(|e| measure_fail(e, "command"))?;
                (id, Some(dir))
            }
            None => (
                spawner
                    .prepare(&p.argv, &io)
                    .map_err(|e| measure_fail(e, "command"))?,
                None,
            ),
        };
        // Identity of the program measured (hash, ELF class, ABI); hashed once per path.
        let binary = match benchmarked_program(&p, args.shell.is_some()) {
            Some(path) => binaries
                .entry(path.clone())
                .or_insert_with(|| perfsleuth_env::binary_facts(&path))
                .clone(),
            None => Environment::default(),
        };
        live.push(Live {
            sim_dir,
            profile: None,
            binary,
            set_up: false,
            plan: p,
            main,
            prepare,
            setup,
            cleanup,
            store_id: None,
            samples: Vec::new(),
            requested: 0,
            last_unit: None,
            prepare_wall: Duration::ZERO,
            spent: Duration::ZERO,
            next_check: 0,
            done: false,
        });
    }

    let mut store = if args.no_store {
        None
    } else {
        Some(output::open_store(args.store.store.as_deref())?)
    };

    let mut run = output::new_run(
        if simulation.is_some() {
            Mode::Simulation
        } else {
            Mode::Walltime
        },
        options_json(&args, &tolerate),
        perfsleuth_env::capture(&perfsleuth_env::Source::live()),
    );
    // `auto` is decided after the warmup runs (Measure::timed), when their
    // duration says whether the counters' cost would show.
    let auto_counters = simulation.is_none() && args.counters == crate::cli::CounterChoice::Auto;
    let mut counter_notes = crate::counters::enable(
        &mut spawner,
        if simulation.is_some() || auto_counters {
            // Counting valgrind itself would say nothing about the program.
            crate::cli::CounterChoice::None
        } else {
            args.counters
        },
        args.counters_kernel,
        args.counters == crate::cli::CounterChoice::All,
        &mut run.environment,
    );
    if simulation.is_some()
        && (args.counters == crate::cli::CounterChoice::All || args.counters_kernel)
    {
        counter_notes.push(
            "perf_event counters are not read in simulation mode: they would count valgrind, not the program"
                .to_string(),
        );
    }

    if let Some(store) = store.as_mut() {
        let id = store.begin_run(&run).map_err(output::store_fail)?;
        run.id = Some(id);
        for l in &mut live {
            l.store_id = Some(
                store
                    .add_benchmark(id, &to_benchmark(l, Vec::new()))
                    .map_err(output::store_fail)?,
            );
        }
    }
    if let OutputTarget::File(path) = &output_target {
        std::fs::File::create(path).map_err(|e| {
            Fail::usage(
                format!("cannot write --output file {}: {e}", path.display()),
                "choose a writable path, or --output null",
            )
        })?;
    }
    install_interrupt_handler().map_err(|e| {
        Fail::usage(
            format!("cannot install the Ctrl-C handler: {e}"),
            "this should not happen; please report it",
        )
    })?;

    // Keeping the spawner one run ahead takes this process's work off the
    // critical path; with a single CPU that work would steal time from the child.
    // Not in simulation mode: each run's output files must be read before the
    // next run of the same command writes its own.
    let overlap =
        simulation.is_none() && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
    let mut measure = Measure {
        spawner: &mut spawner,
        store: store.as_mut(),
        rule,
        tolerate,
        progress: ProgressLine::new(io.output == OutputTarget::Inherit),
        started: Instant::now(),
        pending: None,
        overlap,
        simulation: simulation.as_ref(),
        auto_counters,
        counter_env: Environment::default(),
        counter_notes: Vec::new(),
    };
    let mut result = measure.all(&mut live, warmup, !args.no_interleave);
    if let Err(stop) = measure.flush() {
        result = result.and(Err(stop));
    }
    measure.progress.clear();
    counter_notes.append(&mut measure.counter_notes);
    let counter_env = std::mem::take(&mut measure.counter_env);
    run.environment.merge(counter_env);

    run.benchmarks = live
        .iter()
        .map(|l| to_benchmark(l, l.samples.clone()))
        .collect();
    if let Some(store) = store.as_mut() {
        for l in &live {
            if let (Some(profile), Some(bench_id)) = (&l.profile, l.store_id) {
                store
                    .set_profile(bench_id, profile)
                    .map_err(output::store_fail)?;
            }
        }
    }
    conclude(&mut run, &result, &spawner, store.as_mut())?;
    match result {
        Err(Stop::Failed(fail)) => Err(fail),
        Err(Stop::Interrupted) => {
            output::print_summary(
                &run,
                reference,
                args.color,
                output::summary_to_stderr(&args),
            );
            let stored = run.id.map_or(String::new(), |id| {
                format!("; the samples taken so far are stored as run {id} (status interrupted)")
            });
            emit(&format!("Interrupted{stored}.\n"), true);
            Ok(ExitCode::interrupted_by(
                perfsleuth_measure::interrupting_signal(),
            ))
        }
        Ok(()) => {
            output::print_summary(
                &run,
                reference,
                args.color,
                output::summary_to_stderr(&args),
            );
            output::write_exports(&run, reference, &args)?;
            if let (Some(id), Some(store)) = (run.id, store.as_ref()) {
                let note = format!("Stored as run {id} in {}\n", store.path().display());
                emit(&output::dim(&note, use_color(args.color, true)), true);
            }
            // After the results, so they never stand between the user and an error.
            for note in &counter_notes {
                emit(&format!("note: {note}\n"), true);
            }
            for warning in crate::simulate::nondeterminism(&run.benchmarks) {
                emit(&format!("warning: {warning}\n"), true);
            }
            if simulation.is_none() {
                warn_if_unfit(&run.environment);
            }
            match &baseline {
                Some(side) => crate::compare::after_run(
                    side,
                    &run,
                    &args.verdict,
                    args.color,
                    output::summary_to_stderr(&args),
                ),
                None => Ok(0),
            }
        }
    }
}

/// Ends a measured run: its status from how measuring ended, the end time,
/// the spawner's peak-RSS floor, and in the store the context facts and the
/// final status (shared by `run` and `scale`).
pub(crate) fn conclude(
    run: &mut Run,
    result: &Result<(), Stop>,
    spawner: &Spawner,
    store: Option<&mut Store>,
) -> Result<(), Fail> {
    run.status = match result {
        Ok(()) => RunStatus::Complete,
        Err(Stop::Interrupted) => RunStatus::Interrupted,
        Err(Stop::Failed(_)) => RunStatus::Failed,
    };
    run.ended_at = Some(rfc3339(SystemTime::now()));
    // Children report at least the spawner's own peak RSS; read it last, when
    // it is highest (it grows a little while serving the first requests).
    run.environment.set_opt(
        "measure.peak_rss_floor_bytes",
        spawner.peak_rss_floor().map(|b| b.to_string()),
        ImpactClass::Context,
    );
    if let (Some(store), Some(id)) = (store, run.id) {
        store
            .update_context(id, &run.environment)
            .map_err(output::store_fail)?;
        store
            .finish_run(id, run.status, run.ended_at.as_deref().unwrap_or_default())
            .map_err(output::store_fail)?;
    }
    Ok(())
}

/// Why measuring stopped early.
pub(crate) enum Stop {
    Interrupted,
    Failed(Fail),
}

/// One request in the timed pipeline.
#[derive(Debug, Clone, Copy)]
struct Step {
    bench: usize,
    prepare: bool,
    iteration: u32,
}

struct Measure<'a> {
    spawner: &'a mut Spawner,
    store: Option<&'a mut Store>,
    rule: StopRule,
    tolerate: Tolerate,
    progress: ProgressLine,
    started: Instant,
    /// A measured sample not yet committed: (benchmark row id, sample).
    pending: Option<(i64, Sample)>,
    /// Whether the spawner may be kept one run ahead (and the store written
    /// while a run is in flight); off on a single CPU, where that work would
    /// compete with the measured child.
    overlap: bool,
    /// Simulation mode: where each run's callgrind output is read from.
    simulation: Option<&'a Simulation>,
    /// `--counters auto` still to be decided (before the first timed run).
    auto_counters: bool,
    /// Facts about the counters decided here, merged into the run's environment.
    counter_env: Environment,
    /// Notes about counters decided here, printed after the results.
    counter_notes: Vec<String>,
}

impl Measure<'_> {
    fn all(&mut self, live: &mut [Live], warmup: u32, interleave: bool) -> Result<(), Stop> {
        let result = self.phases(live, warmup, interleave);
        if matches!(result, Err(Stop::Failed(_))) {
            // What was set up is cleaned up, even after a failure (not after
            // Ctrl-C: the user wants out). Best effort: the failure is the news.
            for l in live.iter_mut().filter(|l| l.set_up) {
                if let Some(id) = l.cleanup {
                    let _ = self.spawner.run_anyway(id);
                }
            }
        }
        result
    }

    fn phases(&mut self, live: &mut [Live], warmup: u32, interleave: bool) -> Result<(), Stop> {
        if interleave {
            for l in live.iter_mut() {
                self.aux(l.setup, "--setup", &l.plan.name)?;
                l.set_up = true;
            }
            for _ in 0..warmup {
                for l in live.iter_mut() {
                    self.warm(l)?;
                }
            }
            self.timed(live)?;
            for l in live.iter_mut() {
                l.set_up = false;
                self.aux(l.cleanup, "--cleanup", &l.plan.name)?;
            }
        } else {
            for i in 0..live.len() {
                self.aux(live[i].setup, "--setup", &live[i].plan.name)?;
                live[i].set_up = true;
                for _ in 0..warmup {
                    self.warm(&mut live[i])?;
                }
                self.timed(&mut live[i..=i])?;
                live[i].set_up = false;
                self.aux(live[i].cleanup, "--cleanup", &live[i].plan.name)?;
            }
        }
        Ok(())
    }

    /// The timed runs, round-robin over `live`. The spawner is kept one run
    /// ahead: while it runs iteration k+1, this process stores iteration k and
    /// applies the stopping rule, so none of that is on the critical path.
    fn timed(&mut self, live: &mut [Live]) -> Result<(), Stop> {
        if self.auto_counters {
            // Once, before the first timed run, from the warmups seen so far
            // (with --no-interleave: the first command's).
            self.auto_counters = false;
            let fastest = live.iter().filter_map(|l| l.last_unit).min();
            let notes = crate::counters::enable_auto(self.spawner, fastest, &mut self.counter_env);
            self.counter_notes.extend(notes);
        }
        let mut queue: VecDeque<Step> = VecDeque::new();
        let mut cursor = 0;
        loop {
            let (depth, poll) = self.pace(live);
            while queue.iter().filter(|s| !s.prepare).count() < depth {
                let Some(bench) = next_bench(live, &self.rule, &mut cursor) else {
                    break;
                };
                let l = &mut live[bench];
                let iteration = l.requested;
                l.requested += 1;
                if let Some(prep) = l.prepare {
                    self.begin(prep, 0, "--prepare")?;
                    queue.push_back(Step {
                        bench,
                        prepare: true,
                        iteration,
                    });
                }
                self.begin(l.main, iteration, "command")?;
                queue.push_back(Step {
                    bench,
                    prepare: false,
                    iteration,
                });
            }
            let Some(&step) = queue.front() else {
                return Ok(());
            };
            let result = match self.wait_next(poll) {
                Ok(None) => continue,
                Ok(Some(outcome)) => {
                    queue.pop_front();
                    let tolerate = if step.prepare {
                        &Tolerate::Nothing
                    } else {
                        &self.tolerate
                    };
                    if outcome.halts(tolerate) {
                        // Collect the replies of runs already queued (the spawner
                        // answers them without running) before anything else is
                        // asked of it, such as a re-run to show the failure.
                        for _ in queue.drain(..) {
                            let _ = self.spawner.finish();
                        }
                    }
                    // The next queued run is executing now: store the previous sample meanwhile.
                    self.flush()
                        .and_then(|()| self.complete(&mut live[step.bench], step, outcome))
                }
                Err(stop) => {
                    // The failed request's reply (an error) was consumed.
                    queue.pop_front();
                    Err(stop)
                }
            };
            if let Err(stop) = result {
                // Runs already queued are answered without running (the spawner
                // halts after a failure); collect their replies to stay in step.
                for _ in queue.drain(..) {
                    let _ = self.spawner.finish();
                }
                return Err(stop);
            }
            if !step.prepare {
                self.show_progress(live);
            }
        }
    }

    /// How many runs to keep queued, and whether to poll instead of blocking.
    /// Short runs are polled: this process sleeps between looks, so the
    /// spawner's replies never have to wake it, and enough runs are queued to
    /// keep the spawner busy meanwhile. Long runs block (one wake-up per run
    /// is noise there). On one CPU nothing is queued ahead.
    fn pace(&self, live: &[Live]) -> (usize, bool) {
        if !self.overlap {
            return (1, false);
        }
        // Runs on every reply: no allocation.
        let (sum, count) = live
            .iter()
            .filter(|l| l.wants_more(&self.rule))
            .filter_map(|l| l.last_unit)
            .fold((Duration::ZERO, 0u32), |(s, n), d| (s + d, n + 1));
        if count == 0 {
            return (2, false);
        }
        let typical = sum / count;
        if typical >= POLL_BELOW {
            return (2, false);
        }
        let per_poll =
            (POLL_INTERVAL.as_secs_f64() / typical.as_secs_f64().max(1e-6)).ceil() as usize;
        ((per_poll + 2).clamp(2, 64), true)
    }

    /// The next reply: `None` when polling found nothing yet (after storing
    /// the pending sample and sleeping one poll interval).
    fn wait_next(&mut self, poll: bool) -> Result<Option<Outcome>, Stop> {
        let fail = |e| Stop::Failed(measure_fail(e, "command"));
        if poll {
            return match self.spawner.try_finish().map_err(fail)? {
                Some(outcome) => Ok(Some(outcome)),
                None => {
                    self.flush()?;
                    std::thread::sleep(POLL_INTERVAL);
                    Ok(None)
                }
            };
        }
        if !self.overlap {
            self.flush()?;
        }
        self.spawner.finish().map(Some).map_err(fail)
    }

    /// Checks one finished request and records it.
    fn complete(&mut self, l: &mut Live, step: Step, outcome: Outcome) -> Result<(), Stop> {
        if step.prepare {
            let id = l.prepare.unwrap_or(l.main);
            let s = check(
                &Tolerate::Nothing,
                self.spawner,
                id,
                || format!("--prepare command of `{}`", l.plan.name),
                Role::Helper,
                outcome,
            )?;
            l.spent += Duration::from_nanos(s.wall_ns);
            l.prepare_wall = Duration::from_nanos(s.wall_ns);
            return Ok(());
        }
        let mut sample = self.check_main(l, outcome, Role::Timed)?;
        sample.iteration = step.iteration;
        if let (Some(sim), Some(dir)) = (self.simulation, &l.sim_dir) {
            l.profile = Some(
                sim.collect(dir, &l.plan.command, &mut sample)
                    .map_err(Stop::Failed)?,
            );
        }
        l.spent += Duration::from_nanos(sample.wall_ns);
        l.last_unit = Some(l.prepare_wall + Duration::from_nanos(sample.wall_ns));
        if let Some(id) = l.store_id {
            self.pending = Some((id, sample.clone()));
        }
        l.samples.push(sample);
        l.update_done(&self.rule);
        Ok(())
    }

    /// Checks a benchmarked run against the `--ignore-failure` policy.
    fn check_main(&mut self, l: &Live, outcome: Outcome, role: Role) -> Result<Sample, Stop> {
        let label = || format!("command `{}`", l.plan.command);
        check(&self.tolerate, self.spawner, l.main, label, role, outcome)
    }

    /// Queues a run; timed runs discard stderr (see `Executor::run`).
    fn begin(&mut self, id: CommandId, iteration: u32, what: &str) -> Result<(), Stop> {
        self.spawner
            .begin(id, iteration, what != "command")
            .map_err(|e| Stop::Failed(measure_fail(e, what)))
    }

    /// Runs one untimed request to completion.
    fn exec(&mut self, id: CommandId, what: &str) -> Result<Outcome, Stop> {
        self.flush()?;
        self.spawner
            .run_once(id, 0)
            .map_err(|e| Stop::Failed(measure_fail(e, what)))
    }

    /// Commits the pending sample, if any.
    fn flush(&mut self) -> Result<(), Stop> {
        if let (Some((id, sample)), Some(store)) = (self.pending.take(), self.store.as_deref_mut())
        {
            store
                .add_sample(id, &sample)
                .map_err(|e| Stop::Failed(output::store_fail(e)))?;
        }
        Ok(())
    }

    fn warm(&mut self, l: &mut Live) -> Result<(), Stop> {
        self.aux(l.prepare, "--prepare", &l.plan.name)?;
        let outcome = self.exec(l.main, "command")?;
        let s = self.check_main(l, outcome, Role::Untimed)?;
        l.last_unit = Some(Duration::from_nanos(s.wall_ns));
        Ok(())
    }

    /// Runs an untimed helper command (prepare/setup/cleanup); it must succeed.
    fn aux(&mut self, id: Option<CommandId>, what: &str, bench: &str) -> Result<(), Stop> {
        let Some(id) = id else { return Ok(()) };
        let outcome = self.exec(id, what)?;
        check(
            &Tolerate::Nothing,
            self.spawner,
            id,
            || format!("{what} command of `{bench}`"),
            Role::Helper,
            outcome,
        )
        .map(|_| ())
    }

    fn show_progress(&mut self, live: &[Live]) {
        let elapsed = self.started.elapsed();
        let eta: Duration = live.iter().map(|l| l.remaining(&self.rule)).sum();
        let runs: u64 = live.iter().map(|l| l.samples.len() as u64).sum();
        let total = elapsed + eta;
        let fraction = if total.is_zero() {
            1.0
        } else {
            elapsed.as_secs_f64() / total.as_secs_f64()
        };
        let active = live.iter().filter(|l| !l.done).count();
        self.progress.update(
            &format!("Measuring {active}/{} commands", live.len()),
            fraction,
            runs,
            elapsed,
            eta,
        );
    }
}

/// The next benchmark in round-robin order that wants another run.
fn next_bench(live: &[Live], rule: &StopRule, cursor: &mut usize) -> Option<usize> {
    let n = live.len();
    let found = (0..n)
        .map(|k| (*cursor + k) % n)
        .find(|&i| live[i].wants_more(rule))?;
    *cursor = (found + 1) % n;
    Some(found)
}

/// Turns an outcome into a sample, or into the error that stops the run.
/// What a checked run was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Role {
    /// A timed run of a benchmarked command (its stderr was discarded).
    Timed,
    /// A warmup run of a benchmarked command (stderr kept).
    Untimed,
    /// A prepare/setup/cleanup command (stderr kept).
    Helper,
}

/// Turns an outcome into a sample, or into the error that stops the run.
pub(crate) fn check(
    tolerate: &Tolerate,
    spawner: &mut Spawner,
    id: CommandId,
    label: impl Fn() -> String,
    role: Role,
    outcome: Outcome,
) -> Result<Sample, Stop> {
    // The common case first: no label is formatted for a run that succeeded.
    let outcome = match outcome {
        Outcome::Completed(s) if tolerate.accepts(&s) => return Ok(s),
        other => other,
    };
    let label = label();
    match outcome {
        Outcome::Interrupted => Err(Stop::Interrupted),
        Outcome::Skipped => Err(Stop::Failed(Fail::usage(
            format!("{label} was not run because an earlier run failed"),
            "this should not be reported; please report it",
        ))),
        Outcome::TimedOut(s) => Err(Stop::Failed(Fail::usage(
            format!(
                "{label} timed out after {} and was killed",
                perfsleuth_report::format_duration_ns(s.wall_ns as f64)
            ),
            "raise --timeout, or check why it hangs (does it wait for input? try --input FILE)",
        ))),
        Outcome::Completed(s) => {
            let how = match (s.exit_code, s.signal) {
                (Some(code), _) => format!("exited with code {code}"),
                (_, Some(sig)) => format!("was killed by signal {sig} ({})", signal_name(sig)),
                _ => "ended abnormally".to_string(),
            };
            let mut details = Vec::new();
            let mut heading = "its last stderr lines:";
            if role == Role::Timed {
                // Timed runs send stderr to /dev/null; run it once more, untimed, to show why.
                heading = "its last stderr lines (from a re-run to collect them):";
                match spawner.run_anyway(id) {
                    Ok(Outcome::Completed(again)) if tolerate.accepts(&again) => {
                        details.push("a re-run succeeded: the failure is intermittent".to_string());
                    }
                    Ok(_) => {}
                    Err(e) => details.push(format!("could not re-run it to collect stderr: {e}")),
                }
            }
            let tail = spawner.stderr_tail(id, 5);
            if !tail.is_empty() {
                details.push(heading.to_string());
                details.extend(tail.lines().map(|l| format!("  {l}")));
            }
            let hint = if role == Role::Helper {
                "helper commands must succeed; fix it or remove the option"
            } else {
                "fix the command, or pass --ignore-failure (or --ignore-failure=CODES) to measure it anyway"
            };
            Err(Stop::Failed(
                Fail::usage(format!("{label} {how}"), hint).with_details(details),
            ))
        }
    }
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

fn signal_name(sig: i32) -> &'static str {
    match sig {
        libc::SIGSEGV => "SIGSEGV",
        libc::SIGABRT => "SIGABRT",
        libc::SIGKILL => "SIGKILL",
        libc::SIGTERM => "SIGTERM",
        libc::SIGINT => "SIGINT",
        libc::SIGBUS => "SIGBUS",
        libc::SIGFPE => "SIGFPE",
        libc::SIGILL => "SIGILL",
        libc::SIGPIPE => "SIGPIPE",
        _ => "signal",
    }
}

pub(crate) fn measure_fail(e: MeasureError, what: &str) -> Fail {
    match e {
        MeasureError::NotFound(p) if what == "--shell" => Fail::usage(
            format!("--shell program not found: `{p}`"),
            "give an installed shell, e.g. --shell sh or --shell bash",
        ),
        MeasureError::NotFound(p) => Fail::usage(
            format!("{what} not found: `{p}`"),
            "check the spelling and your PATH; use --shell for shell builtins",
        ),
        MeasureError::NotAProgram { path, reason } => Fail::usage(
            format!("{what} `{}` cannot be executed: {reason}", path.display()),
            "run it through an interpreter (e.g. --shell sh) or add a #! line",
        ),
        MeasureError::Spawn { program, source } if program != "perfsleuth spawner" => Fail::usage(
            format!("cannot run `{program}`: {source}"),
            "is it a program for this machine and kernel? (check with `file`)",
        ),
        MeasureError::IsDirectory(p) => Fail::usage(
            format!("{what} `{}` is a directory, not a program", p.display()),
            "name the program inside it, e.g. ./dir/program",
        ),
        MeasureError::NotExecutable(p) => Fail::usage(
            format!("{what} `{}` is not executable", p.display()),
            format!("chmod +x {}", p.display()),
        ),
        MeasureError::File { path, source } => Fail::usage(
            format!("cannot open {}: {source}", path.display()),
            "check the path and its permissions",
        ),
        other => Fail::usage(
            format!("{other}"),
            "this is likely a perfsleuth bug or a resource limit; please report it",
        ),
    }
}

fn to_benchmark(l: &Live, samples: Vec<Sample>) -> Benchmark {
    Benchmark {
        name: l.plan.name.clone(),
        command: l.plan.command.clone(),
        argv: l.plan.argv.clone(),
        parameters: l.plan.parameters.clone(),
        facts: l.binary.clone(),
        samples,
        profile: l.profile.clone(),
    }
}

/// The program a benchmark really measures: the command's program, or with
/// `--shell` the first word of the shell command when it names one.
pub(crate) fn benchmarked_program(p: &Planned, shell: bool) -> Option<PathBuf> {
    let word = if shell {
        p.command.split_whitespace().next()?
    } else {
        p.argv.first()?
    };
    perfsleuth_measure::resolve_program(word, std::env::var_os("PATH").as_deref()).ok()
}

fn options_json(a: &RunArgs, tolerate: &Tolerate) -> serde_json::Value {
    let path = |p: &Option<PathBuf>| p.as_deref().map(Path::display).map(|d| d.to_string());
    serde_json::json!({
        "commands": a.commands,
        "warmup": a.warmup,
        "runs": a.runs,
        "min_runs": a.min_runs,
        "max_runs": a.max_runs,
        "time_budget_s": a.time_budget.as_secs_f64(),
        "precision": a.precision,
        "prepare": a.prepare,
        "setup": a.setup,
        "cleanup": a.cleanup,
        "shell": a.shell,
        "parameter_list": a.parameter_list,
        "parameter_scan": a.parameter_scan,
        "step": a.step,
        "names": a.name,
        "ignore_failure": match tolerate { Tolerate::Nothing => serde_json::Value::Bool(false), Tolerate::Everything => serde_json::Value::Bool(true), Tolerate::ExitCodes(c) => serde_json::json!(c) },
        "timeout_s": a.timeout.map(|t| t.as_secs_f64()),
        "output": a.output,
        "input": path(&a.input),
        "interleave": !a.no_interleave,
        "counters": format!("{:?}", a.counters).to_lowercase(),
        "mode": format!("{:?}", a.mode).to_lowercase(),
        "collect": a.collect,
        "counters_kernel": a.counters_kernel,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn live() -> Live {
        let plan = Planned {
            name: "x".into(),
            command: "x".into(),
            argv: vec!["x".into()],
            parameters: Default::default(),
            prepare: None,
            setup: None,
            cleanup: None,
        };
        let mut spawner = Spawner::start().unwrap();
        let io = IoConfig::default();
        let main = spawner.prepare(&["true".to_string()], &io).unwrap();
        Live {
            plan,
            sim_dir: None,
            profile: None,
            binary: Environment::default(),
            set_up: false,
            main,
            prepare: None,
            setup: None,
            cleanup: None,
            store_id: None,
            samples: Vec::new(),
            requested: 0,
            last_unit: None,
            prepare_wall: Duration::ZERO,
            spent: Duration::ZERO,
            next_check: 0,
            done: false,
        }
    }

    fn push(l: &mut Live, wall_ns: u64, rule: &StopRule) {
        l.samples.push(Sample {
            wall_ns,
            ..Sample::default()
        });
        l.update_done(rule);
    }

    #[test]
    fn precision_stop_is_not_undone_by_runs_still_in_flight() {
        let rule = StopRule {
            exact: None,
            min_runs: 10,
            max_runs: None,
            budget: Duration::from_secs(3600),
            precision: 0.01,
        };
        let mut l = live();
        for _ in 0..9 {
            push(&mut l, 1_000_000, &rule);
            assert!(!l.done, "below --min-runs");
        }
        push(&mut l, 1_000_000, &rule);
        assert!(l.done, "identical samples: the CI is zero wide");
        // Queued runs arrive after the decision (and before the next check point).
        push(&mut l, 1_000_000, &rule);
        push(&mut l, 1_300_000, &rule);
        assert!(l.done);
        assert!(!l.wants_more(&rule));
    }

    #[test]
    fn noisy_samples_keep_measuring_until_the_budget() {
        let rule = StopRule {
            exact: None,
            min_runs: 10,
            max_runs: None,
            budget: Duration::from_millis(30),
            precision: 0.01,
        };
        let mut l = live();
        for i in 0..10u64 {
            l.spent += Duration::from_millis(1);
            push(&mut l, 1_000_000 + (i % 2) * 500_000, &rule);
        }
        assert!(!l.done, "the CI is far wider than 1 %");
        l.spent = Duration::from_millis(30);
        push(&mut l, 1_000_000, &rule);
        assert!(l.done, "the time budget is spent");
    }
}
