//! One measurement session, as `run`, `ab`, `explain` and variants make it:
//! the settings checked into a [`Checked`] configuration before the first
//! timed iteration (every check that can fail on user input happens here),
//! then [`measure`]: the store and its sink, counters, the lock tracer,
//! Ctrl-C, the noise snapshots, the runner's schedule, and conclude.

use crate::args::{CounterChoice, ModeChoice, ProfileChoice, RunArgs, When};
use crate::error::Fail;
use crate::locks::Instruments;
use crate::output;
use crate::parse;
use crate::plan::{Shell, Templates, plan};
use crate::sink::StoreSink;
use crate::term::{ProgressLine, emit, use_color};
use perfsleuth_measure::{IoConfig, MeasureError, OutputTarget, Spawner, Tolerate};
use perfsleuth_model::{Mode, Run};
use perfsleuth_runner::{
    Counters, PortableChoice, Role, RunError, Schedule, Simulation, Stop, StopRule, conclude,
};
use std::path::{Path, PathBuf};

/// The spawner `main` forked early, or a new one when it could not.
pub fn spawner_or_start(spawner: Option<Spawner>) -> Result<Spawner, Fail> {
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

pub use crate::term::catch_interrupts;

/// The store a session writes to: `--store`'s (or the default), none with
/// `--no-store`.
pub fn open_store(url: Option<&str>, no_store: bool) -> Result<Option<output::AnyStore>, Fail> {
    if no_store {
        Ok(None)
    } else {
        output::open_store(url).map(Some)
    }
}

/// The line a measurement stopped by Ctrl-C ends with: what of `what`
/// ("the samples taken so far") is stored in the runs `ids`, then `after`.
pub fn interrupted_line(what: &str, ids: &[i64], after: &str) -> String {
    let stored = match ids {
        [] => String::new(),
        [id] => format!("; {what} are stored as run {id} (status interrupted)"),
        [a, b] => format!("; {what} are stored as runs {a} and {b} (status interrupted)"),
        more => format!(
            "; {what} are stored as runs {} (status interrupted)",
            more.iter()
                .map(i64::to_string)
                .collect::<Vec<_>>()
                .join(", ")
        ),
    };
    format!("Interrupted{stored}{after}.\n")
}

/// Everything `run` needs, checked before anything is measured.
pub struct Checked {
    /// Simulation mode's set-up (valgrind, the portable profile); `None` in wall time.
    pub simulation: Option<Simulation>,
    schedule: Schedule,
    /// The benchmarks, in order (for `ab`, both sides').
    pub planned: Vec<perfsleuth_runner::Planned>,
    /// `--baseline`, resolved before measuring.
    pub baseline: Option<crate::verdict::Baseline>,
    /// The index of `--reference` in the plan, when given.
    pub reference: Option<usize>,
    /// Where the benchmarked commands' input and output go.
    pub io: IoConfig,
    /// The same for the helper commands (`--prepare`, `--setup`, …).
    pub aux_io: IoConfig,
    /// With a baseline: the time up to which inconclusive comparisons get more rounds.
    pub max_time: std::time::Duration,
    /// Rounds to measure at least (`--rounds`, or its default).
    pub rounds: u32,
    /// `--profile=alloc`: the allocation recorder the benchmarked commands
    /// are given (their files, collected after measuring).
    pub alloc: Option<perfsleuth_measure::alloc::Recorder>,
    /// What measuring records beside the times, settled for the mode.
    instruments: Instrumentation,
    /// Where the run is stored (`--store`, `--no-store`).
    store: Option<String>,
    no_store: bool,
    /// The progress line (`--progress`) and colour of what is printed.
    progress: Option<bool>,
    color: crate::args::ColorChoice,
    /// `--time-budget`: how long a benchmark is given (a silent command
    /// gets a note after ten of them).
    time_budget: std::time::Duration,
    /// Whether the commands run in a shell (`--shell`).
    shell: bool,
    /// The options stored with the run (`sequential` set when measuring:
    /// the caller may turn the extension off after validation).
    options: perfsleuth_model::schema::RunOptions,
}

/// The instruments a run starts, settled from the arguments and the mode:
/// simulation turns each off (valgrind runs the program).
struct Instrumentation {
    counters: Counters,
    counters_kernel: bool,
    tracepoints: bool,
    locks: When,
    profile: ProfileChoice,
    /// Said once measuring starts (options given that the mode ignores).
    notes: Vec<String>,
}

impl Instrumentation {
    fn settle(args: &RunArgs, simulated: bool, auto_counters: bool) -> Result<Self, Fail> {
        if simulated && args.locks == When::On {
            return Err(Fail::usage(
                "--locks traces the threads of real runs; simulation mode runs the command under valgrind",
                "drop --locks, or use --mode walltime",
            ));
        }
        if simulated && (args.profiling.profile.when == When::On || args.export_folded.is_some()) {
            return Err(Fail::usage(
                "--profile samples real runs; simulation mode already counts every function's instructions under valgrind",
                "drop --profile (the simulation's per-function costs are kept), or use --mode walltime",
            ));
        }
        let mut notes = Vec::new();
        if simulated && (args.counters == CounterChoice::All || args.counters_kernel) {
            notes.push(
                "perf_event counters are not read in simulation mode: they would count valgrind, not the program"
                    .to_string(),
            );
        }
        Ok(Instrumentation {
            // Counting valgrind itself would say nothing about the program;
            // `auto` is decided by the runner after the warmups, when their
            // duration says whether the counters' cost would show.
            counters: if simulated || auto_counters {
                Counters::None
            } else {
                counters(args.counters)
            },
            counters_kernel: args.counters_kernel,
            tracepoints: args.counters == CounterChoice::All,
            locks: if simulated { When::Off } else { args.locks },
            profile: if simulated {
                ProfileChoice::OFF
            } else if args.export_folded.is_some() && !args.profiling.profile.is_on() {
                ProfileChoice {
                    when: When::On,
                    ..args.profiling.profile
                }
            } else {
                args.profiling.profile
            },
            notes,
        })
    }
}

/// One stored run of a measurement: `run` makes one, `ab` one per side,
/// each holding the next `benchmarks` of the plan.
pub struct Part {
    /// Its source-control state (`ab`: the side's commit).
    pub git: Option<perfsleuth_model::GitInfo>,
    /// Keys added to its stored options (`ab`: the side, the build).
    pub extra: serde_json::Map<String, serde_json::Value>,
    /// How many of the plan's benchmarks are its.
    pub benchmarks: usize,
    /// Its name on the progress line (`ab`: "baseline"); empty for a plain run.
    pub label: &'static str,
}

/// What one measurement produced, before it is reported.
pub struct Measurement {
    /// Every benchmark measured, in one run (for `ab`, both sides').
    pub run: Run,
    /// The stored runs' ids, one per [`Part`].
    pub ids: Vec<Option<i64>>,
    /// How measuring ended.
    pub result: Result<(), Stop>,
    /// Notes to print after the results.
    pub notes: Vec<String>,
    /// Warnings to print after the notes.
    pub warnings: Vec<String>,
    /// Rounds measured, and in how long.
    pub rounds: u32,
    /// The time measuring took.
    pub elapsed: std::time::Duration,
    /// The comparison's last look (its α: [`perfsleuth_compare::Options::at_look`]);
    /// `None` where it could not be extended.
    pub look: Option<u32>,
    /// "Stored as run N in …", when stored.
    pub stored_note: Option<String>,
}

/// Rounds when `--rounds` is not given: five spread a side's samples over
/// its time, so a comparison sees how much the machine's speed wanders
/// between them (STATISTICS.md §4.3); an exact `--runs N` stays N runs, and
/// simulation counts do not wander.
pub const DEFAULT_ROUNDS: u32 = 5;

/// The precision stop: `--precision`, else ±1 % for a run of one round and
/// none (0: only identical samples stop it) for several.
fn precision(args: &RunArgs, rounds: u32) -> f64 {
    match args.precision {
        Some(p) => p,
        None if rounds > 1 => 0.0,
        None => 0.01,
    }
}

/// The most rounds, up to `asked`, whose equal shares keep a run's count
/// within its limits: an exact count must divide evenly, and the rounds'
/// minimum share (`min` over k, rounded up) must not pass their maximum
/// share (`max` over k, rounded down). One round always fits.
fn fitting_rounds(asked: u32, exact: Option<u32>, min: u32, max: Option<u32>) -> u32 {
    (1..=asked.max(1))
        .rev()
        .find(|&k| match exact {
            Some(n) => n % k == 0,
            None => max.is_none_or(|m| min.div_ceil(k).max(1) <= m / k),
        })
        .unwrap_or(1)
}

fn rounds(args: &RunArgs, simulated: bool) -> u32 {
    match args.rounds {
        Some(k) => k,
        None if simulated => 1,
        // ab judges adjacent pairs of runs; ten rounds, each starting with
        // the other side, alternate who goes first ten times, and ask no
        // more runs than --min-runs anyway (one a round at least).
        None if args.sides => AB_ROUNDS,
        None if args.runs.is_some() => 1,
        None => DEFAULT_ROUNDS,
    }
}

/// Rounds of `ab` when `--rounds` is not given (with `--runs N`, the
/// largest count up to it that divides N).
pub const AB_ROUNDS: u32 = 10;

/// Prepares `planned` in the spawner (the commands resolved, programs hashed).
pub fn prepare(
    c: &Checked,
    mut planned: Vec<perfsleuth_runner::Planned>,
    spawner: &mut Spawner,
) -> Result<Vec<perfsleuth_runner::Bench>, Fail> {
    if let Some(recorder) = &c.alloc {
        for p in planned.iter_mut() {
            // The command's own preloads stay, after the recorder.
            let own = |env: &[(String, Option<String>)]| {
                env.iter()
                    .rev()
                    .find(|(k, _)| k == "LD_PRELOAD")
                    .map(|(_, v)| v.clone())
            };
            let preload = p
                .variant
                .as_ref()
                .and_then(|v| own(&v.env))
                .or_else(|| own(&c.io.env))
                .unwrap_or_else(|| std::env::var("LD_PRELOAD").ok());
            p.env = recorder.env_for(preload.as_deref()).map_err(|e| {
                Fail::usage(
                    format!("cannot record allocations: {e}"),
                    "drop alloc from --profile",
                )
            })?;
        }
    }
    perfsleuth_runner::prepare(
        spawner,
        planned,
        &c.io,
        &c.aux_io,
        c.simulation.as_ref(),
        c.shell,
    )
    .map_err(runner_fail)
}

/// Measures `benches` (stored as `parts`, in order) and concludes the run;
/// while `undecided` (given the run so far, the benchmarks and the look,
/// 0 first) says a comparison cannot decide yet, rounds are added up to
/// `--max-time`, on the grid of looks the runner keeps.
pub fn measure(
    c: &Checked,
    spawner: &mut Spawner,
    mut benches: Vec<perfsleuth_runner::Bench>,
    parts: Vec<Part>,
    undecided: &dyn Fn(&Run, &[perfsleuth_runner::Bench], u32) -> bool,
) -> Result<Measurement, Fail> {
    let mut store = open_store(c.store.as_deref(), c.no_store)?;
    let mode = if c.simulation.is_some() {
        Mode::Simulation
    } else {
        Mode::Walltime
    };
    let options = perfsleuth_model::schema::RunOptions {
        sequential: !c.max_time.is_zero(),
        ..c.options.clone()
    };
    let mut run = output::new_run(
        mode,
        serde_json::to_value(options).unwrap_or_default(),
        perfsleuth_runner::capture_environment(&perfsleuth_env::Source::live()),
    );
    if let Some(sim) = &c.simulation {
        sim.record(&mut run.environment);
    }
    // Before anything is stored: a refusal must leave no run behind.
    let i = &c.instruments;
    let mut instruments = Instruments::start(
        spawner,
        i.counters,
        i.counters_kernel,
        i.tracepoints,
        i.locks,
        i.profile,
        &mut run.environment,
    )?;
    let mut counter_notes = std::mem::take(&mut instruments.notes);
    counter_notes.extend(i.notes.iter().cloned());
    let empty: Vec<_> = benches.iter().map(|b| b.to_benchmark(false)).collect();
    // Each part's runs row and its share of the plan's benchmarks.
    let mut ranges = Vec::with_capacity(parts.len());
    let mut start = 0;
    for part in &parts {
        ranges.push(start..start + part.benchmarks);
        start += part.benchmarks;
    }
    let mut stored: Vec<Run> = parts
        .iter()
        .map(|part| {
            let mut r = run.clone();
            if part.git.is_some() {
                r.git = part.git.clone();
            }
            if let Some(options) = r.options.as_object_mut() {
                options.extend(part.extra.clone());
            }
            r
        })
        .collect();
    let mut slices: Vec<(&mut Run, &[perfsleuth_model::Benchmark])> = stored
        .iter_mut()
        .zip(&ranges)
        .map(|(r, range)| (r, &empty[range.clone()]))
        .collect();
    let mut sink = StoreSink::begin_runs(
        store
            .as_deref_mut()
            .map(|s| s as &mut dyn perfsleuth_store::Store),
        &mut slices,
        // Forced on only where the commands do not write to the terminal
        // themselves (`--style full --show-output` would interleave them).
        ProgressLine::new(c.io.output == OutputTarget::Inherit).forced(
            c.progress
                .filter(|on| !on || c.io.output != OutputTarget::Inherit),
        ),
    )?;
    run.id = stored.first().and_then(|r| r.id);
    run.uuid = stored.first().and_then(|r| r.uuid.clone());
    sink.sides = parts
        .iter()
        .zip(&ranges)
        .filter(|(p, _)| !p.label.is_empty())
        .map(|(p, r)| (p.label, r.clone()))
        .collect();
    if let OutputTarget::File(path) = &c.io.output {
        std::fs::File::create(path).map_err(|e| {
            Fail::usage(
                format!("cannot write --output file {}: {e}", path.display()),
                "choose a writable path, or --output null",
            )
        })?;
    }
    catch_interrupts()?;
    // No default timeout (a benchmark may rightly take an hour), but a
    // command silent for ten time budgets gets a note on how to stop it.
    if c.io.timeout.is_none() {
        let after = (c.time_budget * 10).max(std::time::Duration::from_secs(1));
        sink.watchdog = Some(crate::term::Watchdog::start(after));
    }

    let started = std::time::Instant::now();
    let noise = perfsleuth_env::NoiseSnapshot::take(&perfsleuth_env::Source::live());
    // With a comparison to follow, rounds are added while it is inconclusive.
    let template = run.clone();
    let spawner_pid = spawner.pid();
    let mut following = perfsleuth_runner::locks::Following::new(spawner);
    let (measured, rounds, look) = c.schedule.measure_until(
        &mut following,
        &mut sink,
        &mut benches,
        c.simulation.as_ref(),
        c.rounds,
        c.max_time,
        |benches, look| undecided(&template, benches, look),
    );
    instruments.stop(
        &following,
        benches.iter().map(|b| (b.main_id(), b.plan.name.as_str())),
        c.alloc.as_ref().map(|r| {
            let dirs = benches
                .iter()
                .map(|b| perfsleuth_measure::alloc::dir_of_env(&b.plan.env))
                .collect();
            (r, spawner_pid, dirs)
        }),
    );
    counter_notes.append(&mut instruments.notes);
    sink.watchdog = None;
    sink.progress.clear();
    counter_notes.extend(measured.notes);
    run.environment.merge(measured.counter_env);
    // The warning after the run judges the run, not the minutes before it.
    noise.since(&perfsleuth_env::Source::live(), &mut run.environment);
    run.benchmarks = perfsleuth_runner::benchmarks(&benches);
    instruments.attach(&mut run, &mut sink)?;
    let mut warnings = Vec::new();
    if let Some(sim) = &c.simulation {
        // Variants with caches of their own are not simulated with the fixed model.
        let mut own_caches: Vec<&str> = Vec::new();
        for v in c.planned.iter().filter_map(|p| p.variant.as_ref()) {
            if v.cache_model.is_some() && !own_caches.contains(&v.name.as_str()) {
                own_caches.push(&v.name);
            }
        }
        counter_notes.extend(sim.notes().into_iter().map(|n| {
            if own_caches.is_empty() || !n.starts_with("valgrind's cache model") {
                n
            } else {
                format!(
                    "{n}, except for the variants {} (their own cache models, in their variant.cache_model facts)",
                    own_caches.join(", ")
                )
            }
        }));
        warnings.extend(sim.warnings());
        if sim.portable().is_some() {
            warnings.extend(perfsleuth_runner::cpuid_check(
                &run.benchmarks,
                &mut run.environment,
            ));
        }
    }
    conclude(&mut run, &measured.result, &*spawner, &mut sink).map_err(runner_fail)?;
    Ok(Measurement {
        ids: stored.iter().map(|r| r.id).collect(),
        stored_note: sink.stored_note(use_color(c.color, true)),
        run,
        result: measured.result,
        notes: counter_notes,
        warnings,
        rounds,
        look,
        elapsed: started.elapsed(),
    })
}

/// `--reference CMD` as hyperfine 1.20 takes it: a command that is not one
/// of the benchmarks (by 1-based index or name) is measured as the
/// reference, first, under `--reference-name` or its own text, once
/// whatever the parameters (`--parameter-scan` scans the others). `None`
/// when `--reference` names a benchmark or is not given.
fn reference_command(
    args: &RunArgs,
    planned: &[perfsleuth_runner::Planned],
    shell: &Shell,
    helpers: &Helpers,
) -> Result<Option<perfsleuth_runner::Planned>, Fail> {
    let Some(spec) = args.reference.as_deref() else {
        return Ok(None);
    };
    if !own_reference(args) || planned.iter().any(|p| p.name == spec) {
        return Ok(None);
    }
    let [prepare, conclude, setup, cleanup] = helpers.reference.clone();
    let commands = [spec.to_string()];
    let names: Vec<String> = args.reference_name.iter().cloned().collect();
    let mut one = plan(
        &Templates {
            commands: &commands,
            names: &names,
            prepare: &prepare,
            conclude: &conclude,
            setup: &setup,
            cleanup: &cleanup,
            lists: &[],
            scans: &[],
            step: None,
        },
        shell,
    )?;
    let Some(reference) = one.pop() else {
        return Ok(None);
    };
    if planned
        .iter()
        .any(|p| p.name == reference.name && p.parameters.is_empty())
    {
        return Err(Fail::usage(
            format!(
                "the --reference command is named `{}`, as a benchmark already is",
                reference.name
            ),
            "give it another name with --reference-name",
        ));
    }
    let mut reference = reference;
    if let Some(dir) = &args.bench_dir {
        reference = crate::plan::in_dir(&reference, dir);
    }
    Ok(Some(reference))
}

/// Whether `--reference` is a command of its own (not one of the
/// benchmarks by 1-based index or name): a program that exists here, not
/// a number, not a command or --name given. A misspelt name is no command
/// and gets the name's error, with the names.
fn own_reference(args: &RunArgs) -> bool {
    let Some(spec) = args.reference.as_deref() else {
        return false;
    };
    let program = spec.split_whitespace().next().unwrap_or_default();
    let path = std::env::var_os("PATH");
    spec.parse::<usize>().is_err()
        && !args.commands.iter().any(|c| c == spec)
        && !args.name.iter().any(|n| n == spec)
        && perfsleuth_measure::resolve_program(program, path.as_deref()).is_ok()
}

/// `--prepare`, `--conclude`, `--setup` and `--cleanup` as hyperfine 1.20
/// takes them with a `--reference` command of its own: given once, for
/// every command, the reference too; given once per command, the
/// reference's first.
struct Helpers {
    /// For the benchmarks: prepare, conclude, setup, cleanup.
    commands: [Vec<String>; 4],
    /// For the reference command.
    reference: [Vec<String>; 4],
}

impl Helpers {
    fn split(args: &RunArgs) -> Result<Helpers, Fail> {
        let lists = [&args.prepare, &args.conclude, &args.setup, &args.cleanup];
        let names = ["--prepare", "--conclude", "--setup", "--cleanup"];
        let own = own_reference(args);
        let mut commands: [Vec<String>; 4] = Default::default();
        let mut reference: [Vec<String>; 4] = Default::default();
        for (i, list) in lists.into_iter().enumerate() {
            if !own || list.len() <= 1 {
                commands[i] = list.clone();
                reference[i] = list.clone();
                continue;
            }
            if list.len() != args.commands.len() + 1 {
                return Err(Fail::usage(
                    format!(
                        "{} {} values for {} commands and the --reference command",
                        list.len(),
                        names[i],
                        args.commands.len()
                    ),
                    format!(
                        "give {} once (for all), or once for each command, the reference's first ({} in all)",
                        names[i],
                        args.commands.len() + 1
                    ),
                ));
            }
            reference[i] = list[..1].to_vec();
            commands[i] = list[1..].to_vec();
        }
        Ok(Helpers {
            commands,
            reference,
        })
    }
}

/// `--portable[=BASELINE]` / `--no-portable` in the runner's terms.
fn portable_choice(args: &RunArgs) -> Result<PortableChoice, Fail> {
    if args.no_portable {
        return Ok(PortableChoice::Off);
    }
    // `--portable x86-64-v2` reads the baseline as the first command.
    if args.portable.is_some()
        && let Some(first) = args.commands.first()
        && perfsleuth_env::portable::Baseline::parse(first).is_some()
    {
        return Err(Fail::usage(
            format!("`{first}` was read as a command to benchmark, not as the --portable baseline"),
            format!("write --portable={first}"),
        ));
    }
    match &args.portable {
        None => Ok(PortableChoice::Auto),
        Some(name) => perfsleuth_env::portable::Baseline::parse(name)
            .map(PortableChoice::On)
            .ok_or_else(|| {
                Fail::usage(
                    format!("unknown --portable baseline `{name}`"),
                    "give --portable=x86-64-v3 (the default) or --portable=x86-64-v2",
                )
            }),
    }
}

/// The `--counters` choice in the runner's terms.
pub fn counters(choice: CounterChoice) -> Counters {
    match choice {
        CounterChoice::Auto => Counters::Auto,
        CounterChoice::None => Counters::None,
        CounterChoice::Software => Counters::Software,
        CounterChoice::All => Counters::All,
    }
}

/// Checks every option and plans the benchmarks; nothing is measured yet.
pub fn validate(args: &RunArgs) -> Result<Checked, Fail> {
    let tolerate = parse::ignore_failure(args.ignore_failure.as_deref())
        .map_err(|e| Fail::usage(e, "see perfsleuth run --help"))?;
    let simulation = match args.mode {
        ModeChoice::Simulation => {
            let mut sim = Simulation::new(args.collect.clone(), portable_choice(args)?)
                .map_err(runner_fail)?;
            if let Some(spec) = &args.cache_model {
                let (model, notes) = crate::variant::cache_model(spec, args.store.store.clone())
                    .map_err(|f| {
                        Fail::usage(format!("--cache-model {spec}: {}", f.message), f.hint)
                    })?;
                for note in notes {
                    emit(&format!("note: --cache-model: {note}\n"), true);
                }
                sim.set_cache_model(model);
            }
            Some(sim)
        }
        ModeChoice::Walltime => {
            for (given, option) in [
                (args.collect.is_some(), "--collect"),
                (args.cache_model.is_some(), "--cache-model"),
                (args.portable.is_some(), "--portable"),
                (args.no_portable, "--no-portable"),
            ] {
                if given {
                    return Err(Fail::usage(
                        format!("{option} works only in simulation mode"),
                        "add --mode simulation (needs valgrind)",
                    ));
                }
            }
            None
        }
    };
    // Simulated runs are deterministic: one run and one that checks it, no warmup.
    let warmup = if simulation.is_some() { 0 } else { args.warmup };
    let asked = rounds(args, simulation.is_some());
    if asked == 0 {
        return Err(Fail::usage(
            "--rounds 0 measures nothing",
            format!("give --rounds 1 or more (the default is {DEFAULT_ROUNDS})"),
        ));
    }
    if let Some(max) = args.max_runs.filter(|m| *m < args.min_runs) {
        return Err(Fail::usage(
            format!("--max-runs {max} is below --min-runs {}", args.min_runs),
            "raise --max-runs or lower --min-runs",
        ));
    }
    let exact = args.runs.or(simulation
        .as_ref()
        .map(|_| perfsleuth_runner::SIMULATION_RUNS));
    let k = fitting_rounds(asked, exact, args.min_runs, args.max_runs);
    // The first round gets its share of every limit; later rounds repeat its
    // count, so k shares stay within the limits (see `fitting_rounds`).
    let rule = StopRule {
        exact: exact.map(|n| n / k),
        min_runs: args.min_runs.div_ceil(k).max(1),
        max_runs: args.max_runs.map(|m| m / k),
        budget: args.time_budget / k,
        precision: precision(args, k),
    };
    if let Some(shell) = &args.shell {
        let program = &Shell::words(shell)?[0];
        perfsleuth_measure::resolve_program(program, std::env::var_os("PATH").as_deref())
            .map_err(|e| measure_fail(e, "--shell"))?;
    }
    if args.shell.is_none() && !args.sides {
        split_command(&args.commands)?;
    }
    let shell = Shell(args.shell.clone());
    let helpers = Helpers::split(args)?;
    let templates = Templates {
        commands: &args.commands,
        names: &args.name,
        prepare: &helpers.commands[0],
        conclude: &helpers.commands[1],
        setup: &helpers.commands[2],
        cleanup: &helpers.commands[3],
        lists: &args.parameter_list,
        scans: &args.parameter_scan,
        step: args.step.as_deref(),
    };
    let mut planned = plan(&templates, &shell)?;
    // `[[bench]]` commands run from the config file's directory, as `ab`
    // runs them from the worktree's top, wherever perfsleuth was started.
    if let Some(dir) = &args.bench_dir {
        planned = planned
            .iter()
            .map(|p| crate::plan::in_dir(p, dir))
            .collect();
    }
    if !args.variant.is_empty() {
        for (given, option, why) in [
            (
                args.baseline.is_some(),
                "--baseline",
                "each variant is compared with base; compare a stored run with `perfsleuth compare`",
            ),
            (
                args.reference.is_some(),
                "--reference",
                "each variant is compared with its own command under base",
            ),
            (
                args.no_interleave,
                "--no-interleave",
                "the variants are compared run by run, which needs them interleaved",
            ),
        ] {
            if given {
                return Err(Fail::usage(
                    format!("{option} cannot be used with --variant"),
                    why,
                ));
            }
        }
        let config = if args.variant.iter().any(|v| !v.contains('=')) {
            crate::config::load(args.verdict.config.as_deref())?
                .map(|(_, c)| c.variant)
                .unwrap_or_default()
        } else {
            Default::default()
        };
        let mut notes = Vec::new();
        let variants = args
            .variant
            .iter()
            .map(|v| crate::variant::parse(v, &config, args.store.store.clone(), &mut notes))
            .collect::<Result<Vec<_>, _>>()?;
        if simulation.is_none()
            && let Some(v) = variants.iter().find(|v| v.cache_model.is_some())
        {
            return Err(Fail::usage(
                format!(
                    "--variant {}: cache-model works only in simulation mode",
                    v.name
                ),
                "add --mode simulation (needs valgrind)",
            ));
        }
        for note in notes {
            emit(&format!("note: {note}\n"), true);
        }
        planned = crate::variant::expand(planned, &variants)?;
    }
    // A bad --baseline must fail before anything is measured.
    let baseline = match &args.baseline {
        Some(spec) => {
            let mut opts = crate::verdict::options(&args.verdict)?;
            let mut handle = crate::sides::StoreHandle::new(args.store.store.clone());
            let mut side = crate::sides::resolve(spec, &mut handle)?;
            // Refused now, not after minutes of measuring.
            let mode = if simulation.is_some() {
                Mode::Simulation
            } else {
                Mode::Walltime
            };
            crate::verdict::same_mode_as(&side, "this run", mode)?;
            let notes =
                crate::verdict::history(&args.verdict, &mut handle, &mut side, &[], &mut opts);
            Some(crate::verdict::Baseline { side, opts, notes })
        }
        None => None,
    };
    let reference = match reference_command(args, &planned, &shell, &helpers)? {
        Some(first) => {
            planned.insert(0, first);
            Some(0)
        }
        None => {
            if args.reference_name.is_some() {
                return Err(Fail::usage(
                    format!(
                        "--reference-name names a --reference command, and `{}` is one of the benchmarks",
                        args.reference.as_deref().unwrap_or_default()
                    ),
                    "drop --reference-name (the benchmark keeps its name), or give --reference a command of its own",
                ));
            }
            output::resolve_reference(
                args.reference.as_deref(),
                planned.iter().map(|p| p.name.as_str()),
            )?
        }
    };
    check_exports(args)?;
    let output = output_target(&args.output, args.store.store.as_deref())?;
    if let Some(input) = &args.input {
        use perfsleuth_model::input::{self, Accept, InputError, Special};
        // Every run reads the input from its start: a regular file, or a
        // device like /dev/zero. A FIFO would feed the first run only (and
        // a plain open of it blocks until someone writes).
        match input::open(input, Accept::Regular) {
            Ok(_) | Err(InputError::Special(Special::CharDevice)) => {}
            Err(InputError::Special(Special::Fifo)) => {
                return Err(Fail::usage(
                    format!("--input {} is a FIFO (named pipe)", input.display()),
                    "every run reads --input from the start: write the data to a file and give that",
                ));
            }
            Err(InputError::Special(special)) => {
                return Err(Fail::usage(
                    format!("--input {} is {}", input.display(), special.describe()),
                    "give a file to feed to the commands' standard input",
                ));
            }
            Err(e) => {
                return Err(Fail::usage(
                    format!("cannot read --input file {}: {e}", input.display()),
                    "check the path",
                ));
            }
        }
    }
    let io = IoConfig {
        output,
        input: args.input.clone(),
        timeout: args.timeout,
        tolerate: tolerate.clone(),
        ..IoConfig::default()
    };
    let aux_io = IoConfig {
        timeout: args.timeout,
        ..IoConfig::default()
    };
    // The default extension only where the run count is not fixed.
    // `ab` compares its two sides as `--baseline` compares with a stored run;
    // two commands measured interleaved compare with each other.
    let two = planned.len() == 2 && !args.no_interleave && args.variant.is_empty();
    let compared = baseline.is_some() || args.sides || two;
    let max_time = match (args.max_time, compared) {
        (Some(_), false) => {
            return Err(Fail::usage(
                "--max-time works only with --baseline, in ab, or with two commands measured interleaved",
                "add --baseline REF, or drop --max-time",
            ));
        }
        (Some(t), true) => {
            if args.runs.is_none() && t < args.time_budget / k {
                return Err(Fail::usage(
                    format!(
                        "--max-time {} is below one round ({}: --time-budget {} over {k} round{})",
                        perfsleuth_report::format_duration_ns(t.as_nanos() as f64),
                        perfsleuth_report::format_duration_ns(
                            (args.time_budget / k).as_nanos() as f64
                        ),
                        perfsleuth_report::format_duration_ns(args.time_budget.as_nanos() as f64),
                        if k == 1 { "" } else { "s" }
                    ),
                    "give --max-time at least the time budget, e.g. --max-time 30s",
                ));
            }
            t
        }
        (None, true) if args.runs.is_none() && simulation.is_none() => {
            if args.sides {
                AB_MAX_TIME
            } else if baseline.is_some() {
                DEFAULT_MAX_TIME
            } else {
                args.time_budget * 2 * TWO_COMMANDS_TIMES
            }
        }
        _ => std::time::Duration::ZERO,
    };
    let schedule = Schedule::new(
        rule,
        warmup,
        !args.no_interleave,
        tolerate.clone(),
        simulation.is_some(),
        simulation.is_none() && args.counters == CounterChoice::Auto,
    );
    let alloc = allocation_recorder(args, simulation.is_some())?;
    let instruments = Instrumentation::settle(args, simulation.is_some(), schedule.auto_counters)?;
    let options = run_options(args, &tolerate, k);
    Ok(Checked {
        simulation,
        schedule,
        planned,
        baseline,
        reference,
        io,
        aux_io,
        max_time,
        rounds: k,
        alloc,
        instruments,
        store: args.store.store.clone(),
        no_store: args.no_store,
        progress: args.progress,
        color: args.color,
        time_budget: args.time_budget,
        shell: args.shell.is_some(),
        options,
    })
}

/// `--profile=alloc`'s recorder: refused in simulation mode (valgrind runs
/// the program); where it cannot be made, an error with `on` and a note
/// with `auto`.
fn allocation_recorder(
    args: &RunArgs,
    simulation: bool,
) -> Result<Option<perfsleuth_measure::alloc::Recorder>, Fail> {
    let choice = args.profiling.profile;
    if !choice.records_allocations() {
        return Ok(None);
    }
    if simulation {
        return Err(Fail::usage(
            "--profile=alloc records real runs; simulation mode runs the command under valgrind",
            "drop alloc from --profile, or use --mode walltime",
        ));
    }
    match perfsleuth_measure::alloc::Recorder::new(args.profiling.alloc_sample) {
        Ok(r) => Ok(Some(r)),
        Err(e) if choice.when == When::Auto => {
            emit(&format!("note: not allocation-profiled: {e}\n"), true);
            Ok(None)
        }
        Err(e) => Err(Fail::usage(
            format!("cannot record allocations: {e}"),
            "drop alloc from --profile, or use --profile=auto,alloc",
        )),
    }
}

/// `perfsleuth run sleep 0.1` is two commands, `sleep` and `0.1`: an
/// argument that is no program, after a one-word command that is one, was
/// almost surely meant as that command's argument (hyperfine users quote
/// less when the shell is not in the way). Refused, with the quoting.
fn split_command(commands: &[String]) -> Result<(), Fail> {
    let path = std::env::var_os("PATH");
    let is_program = |c: &str| {
        let one_word = !c.trim().is_empty() && !c.contains(char::is_whitespace);
        one_word && perfsleuth_measure::resolve_program(c, path.as_deref()).is_ok()
    };
    let is_stray = |c: &str| {
        !c.is_empty()
            && !c.contains(char::is_whitespace)
            && !c.contains('{')
            && !c.contains('/')
            && perfsleuth_measure::resolve_program(c, path.as_deref()).is_err()
    };
    for (i, first) in commands.iter().enumerate() {
        if !is_program(first) {
            continue;
        }
        let rest: Vec<&String> = commands[i + 1..]
            .iter()
            .take_while(|c| is_stray(c))
            .collect();
        if rest.is_empty() {
            continue;
        }
        let joined = std::iter::once(first)
            .chain(rest.iter().copied())
            .map(String::as_str)
            .collect::<Vec<_>>()
            .join(" ");
        return Err(Fail::usage(
            format!(
                "`{}` is not a program: each argument is one command, so `{joined}` was split into {}",
                rest[0],
                rest.len() + 1
            ),
            format!("quote the command with its arguments: perfsleuth run '{joined}'"),
        ));
    }
    Ok(())
}

/// Settles `run`'s and `ab`'s options before anything is checked: the
/// commands from `[[bench]]` when none are given, and hyperfine's spellings
/// (`--shell none`, `--show-output`, `--style`) in perfsleuth's terms.
pub fn settle(args: &mut RunArgs) -> Result<(), Fail> {
    use crate::args::{ColorChoice, StyleChoice};
    crate::config::fill_commands(args)?;
    if args.shell.as_deref() == Some("none") {
        args.shell = None;
    }
    if args.show_output {
        args.output = "inherit".to_string();
    }
    let (color, progress) = match args.style {
        None | Some(StyleChoice::Auto) => (None, None),
        Some(StyleChoice::Basic) => (Some(ColorChoice::Never), Some(false)),
        Some(StyleChoice::Full) => (Some(ColorChoice::Always), Some(true)),
        Some(StyleChoice::Nocolor) => (Some(ColorChoice::Never), None),
        Some(StyleChoice::Color) => (Some(ColorChoice::Always), Some(false)),
        Some(StyleChoice::None) => {
            args.quiet = true;
            (None, Some(false))
        }
    };
    if let Some(color) = color {
        args.color = color;
    }
    args.progress = progress;
    Ok(())
}

/// How long `run --baseline` may go on adding rounds while the comparison is
/// inconclusive, unless `--max-time` says otherwise: ten default rounds.
pub const DEFAULT_MAX_TIME: std::time::Duration = std::time::Duration::from_secs(30);

/// How long a run of two commands may go on adding rounds while their
/// comparison is undecided, as a multiple of the two time budgets: the
/// looks at 8 and 12 of 5 planned rounds fit (1.6× and 2.4× the planned
/// time, with the runner's overhead), so a noisy pair costs at most about
/// 2.5× what it was given — 15 s at the default budget for two ~25 ms
/// programs — and a clear one stops at its planned rounds
/// (docs/STATISTICS.md §8.7). Proportional, so `--time-budget 100ms` stays
/// a quick look.
pub const TWO_COMMANDS_TIMES: u32 = 3;

/// How long `ab` may go on adding rounds of both sides while inconclusive:
/// on the 2-vCPU study host a +3 % change needed 20–60 s of rounds to be
/// told from noise (docs/STATISTICS.md §7); an A/A pair costs all of it.
pub const AB_MAX_TIME: std::time::Duration = std::time::Duration::from_secs(60);

/// Every export path is writable, and no two share a file.
fn check_exports(args: &RunArgs) -> Result<(), Fail> {
    let exports: Vec<(String, &PathBuf)> = output::requested_exports(args)
        .into_iter()
        .map(|(format, path)| (output::export_option(format), path))
        .collect();
    if let Some(plot) = &args.plot {
        output::check_writable(plot, "--plot", args.store.store.as_deref())?;
        if exports.iter().any(|(_, p)| output::same_file(p, plot)) {
            return Err(Fail::usage(
                format!("--plot and an export both write to {}", plot.display()),
                "give the chart a file of its own",
            ));
        }
    }
    for (i, (option, path)) in exports.iter().enumerate() {
        output::check_writable(path, option, args.store.store.as_deref())?;
        if let Some((other, _)) = exports[..i]
            .iter()
            .find(|(_, p)| output::same_file(p, path))
        {
            return Err(Fail::usage(
                format!("{other} and {option} both write to {}", path.display()),
                "give each export its own file (at most one can be `-`, stdout)",
            ));
        }
    }
    Ok(())
}

/// `--output`: null, inherit, or a file that must be writable.
fn output_target(output: &str, store_url: Option<&str>) -> Result<OutputTarget, Fail> {
    match output {
        "null" => Ok(OutputTarget::Null),
        "inherit" => Ok(OutputTarget::Inherit),
        "pipe" => Ok(OutputTarget::Pipe),
        "" => Err(Fail::usage(
            "--output is empty",
            "use null, pipe, inherit or a file path (./pipe for a file named pipe)",
        )),
        file => {
            let path = PathBuf::from(file);
            // Only checked here: it is emptied just before measuring, so a run
            // refused for bad input leaves an existing file untouched.
            output::check_writable(&path, "--output", store_url)?;
            Ok(OutputTarget::File(path))
        }
    }
}

/// A spawner error on `what` (a command, `--shell`, …) as a one-line usage error.
pub fn measure_fail(e: MeasureError, what: &str) -> Fail {
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
        MeasureError::MissingInterpreter { .. } => Fail::usage(
            format!("{what} {e}"),
            "install the interpreter, or fix the #! line (e.g. #!/usr/bin/env python3)",
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
        MeasureError::Setting(why) => Fail::usage(
            format!("{what}: a --variant setting could not be applied: {why}"),
            "check the CPUs this process may use (taskset -p $$) and its privileges (nice values and sched:idle need CAP_SYS_NICE)",
        ),
        MeasureError::NotApplied(why) => Fail::usage(
            format!("{what} did not get its --variant settings: {why}"),
            "something between perfsleuth and the program changes them (a wrapper script, a cgroup, the program itself)",
        ),
        other => Fail::usage(
            format!("{other}"),
            "this is likely a perfsleuth bug or a resource limit; please report it",
        ),
    }
}

/// The runner's errors as one-line messages with a hint.
pub fn runner_fail(e: RunError) -> Fail {
    use perfsleuth_measure::callgrind::{INSTALL_HINT, SimError};
    let message = e.to_string();
    match e {
        RunError::Measure { what, source } => measure_fail(source, &what),
        RunError::CommandFailed { details, role, .. } => Fail::usage(
            message,
            if role == Role::Helper {
                "helper commands must succeed; fix it or remove the option"
            } else {
                "fix the command, or pass --ignore-failure (or --ignore-failure=CODES) to measure it anyway"
            },
        )
        .with_details(details),
        RunError::TimedOut { label, wall_ns } => Fail::usage(
            format!(
                "{label} timed out after {} and was killed",
                perfsleuth_report::format_duration_ns(wall_ns as f64)
            ),
            "raise --timeout, or check why it hangs (does it wait for input? try --input FILE)",
        ),
        RunError::Skipped { .. } => {
            Fail::usage(message, "this should not be reported; please report it")
        }
        RunError::Sink(e) => match e.downcast::<perfsleuth_store::StoreError>() {
            Ok(store) => output::store_fail(*store),
            Err(other) => Fail::usage(
                format!("cannot store the results: {other}"),
                "check the --store path",
            ),
        },
        RunError::NoValgrind => Fail::usage(message, INSTALL_HINT),
        RunError::NotPortable(_) => Fail::usage(
            message,
            "drop --portable to count as this CPU dispatches (the run then says the counts are not portable)",
        ),
        RunError::EmptyCollect => Fail::usage(
            message,
            "name a function, e.g. --collect parse_input (callgrind's * and ? wildcards work)",
        ),
        RunError::Simulation { source, .. } => Fail::usage(
            message,
            match source {
                SimError::NoOutput { .. } => {
                    "run it by hand under `valgrind --tool=callgrind` to see why"
                }
                SimError::Parse(_) => "the file is kept for inspection; please report this with it",
                _ => "check the temporary directory ($TMPDIR)",
            },
        ),
        RunError::NothingCollected { .. } => Fail::usage(
            message,
            "check the name in `callgrind_annotate` output (wildcards work: --collect 'parse*'); build with -fno-inline or #[inline(never)] to keep it",
        ),
        RunError::Scratch { what, .. } => Fail::usage(
            message,
            if what.starts_with("cannot create") {
                "set TMPDIR to a writable directory"
            } else if what.starts_with("cannot read") {
                "check the temporary directory ($TMPDIR)"
            } else {
                "check the space in the temporary directory ($TMPDIR)"
            },
        ),
        RunError::NoThroughput {
            expected, excerpt, ..
        } => Fail::usage(message, expected).with_details(excerpt),
        RunError::BadThroughput { .. } => {
            Fail::usage(message, "check what the command reports, or the --work value")
        }
    }
}

/// The options stored with the run, as measured (`sequential` is set by
/// [`measure`]).
fn run_options(
    a: &RunArgs,
    tolerate: &Tolerate,
    rounds: u32,
) -> perfsleuth_model::schema::RunOptions {
    use perfsleuth_model::schema::{IgnoreFailure, RunOptions};
    let path = |p: &Option<PathBuf>| p.as_deref().map(Path::display).map(|d| d.to_string());
    RunOptions {
        commands: a.commands.clone(),
        warmup: a.warmup,
        runs: a.runs,
        min_runs: a.min_runs,
        max_runs: a.max_runs,
        time_budget_s: a.time_budget.as_secs_f64(),
        precision: precision(a, rounds),
        prepare: a.prepare.clone(),
        conclude: a.conclude.clone(),
        setup: a.setup.clone(),
        cleanup: a.cleanup.clone(),
        shell: a.shell.clone(),
        parameter_list: a.parameter_list.clone(),
        parameter_scan: a.parameter_scan.clone(),
        step: a.step.clone(),
        names: a.name.clone(),
        ignore_failure: match tolerate {
            Tolerate::Nothing => IgnoreFailure::All(false),
            Tolerate::Everything => IgnoreFailure::All(true),
            Tolerate::ExitCodes(c) => IgnoreFailure::Codes(c.clone()),
        },
        timeout_s: a.timeout.map(|t| t.as_secs_f64()),
        output: a.output.clone(),
        input: path(&a.input),
        interleave: !a.no_interleave,
        counters: format!("{:?}", a.counters).to_lowercase(),
        mode: format!("{:?}", a.mode).to_lowercase(),
        collect: a.collect.clone(),
        counters_kernel: a.counters_kernel,
        rounds,
        max_time_s: a.max_time.map(|t| t.as_secs_f64()),
        sequential: false,
    }
}

#[cfg(test)]
mod tests {
    use super::{fitting_rounds, interrupted_line};

    #[test]
    fn the_interrupted_line_says_which_runs_keep_what() {
        assert_eq!(
            interrupted_line("the runs so far", &[], ""),
            "Interrupted.\n"
        );
        assert_eq!(
            interrupted_line("the samples taken so far", &[4], ""),
            "Interrupted; the samples taken so far are stored as run 4 (status interrupted).\n"
        );
        assert_eq!(
            interrupted_line("the samples taken so far", &[4, 5], "; worktrees removed"),
            "Interrupted; the samples taken so far are stored as runs 4 and 5 (status interrupted); worktrees removed.\n"
        );
    }

    #[test]
    fn rounds_shrink_until_their_shares_fit_the_run_limits() {
        // The default: 10 runs at least, no maximum — five rounds of two.
        assert_eq!(fitting_rounds(5, None, 10, None), 5);
        // --min-runs 2 --max-runs 3: three rounds of one run each.
        assert_eq!(fitting_rounds(5, None, 2, Some(3)), 3);
        // --min-runs 7 --max-runs 7: only one round keeps exactly 7.
        assert_eq!(fitting_rounds(5, None, 7, Some(7)), 1);
        // --runs 12 --rounds 5: four rounds of three; --runs 7: one round.
        assert_eq!(fitting_rounds(5, Some(12), 10, None), 4);
        assert_eq!(fitting_rounds(5, Some(7), 10, None), 1);
        assert_eq!(fitting_rounds(1, None, 10, None), 1);
    }
}
