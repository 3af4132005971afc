//! Settling and checking a run's settings before anything is measured: the
//! plan, the schedule, the instruments for the mode, the helpers, the
//! exports; every refusal is made here.

use crate::error::Fail;
use crate::options::ProfileChoice;
use crate::options::RunOptions;
use crate::options::When;
use crate::output;
use crate::parse;
use crate::plan::Shell;
use crate::plan::Templates;
use crate::plan::plan;
use crate::session::measure_fail;
use crate::term::emit;
use perfsleuth_measure::IoConfig;
use perfsleuth_measure::OutputTarget;
use perfsleuth_measure::Tolerate;
use perfsleuth_model::Mode;
use perfsleuth_runner::Counters;
use perfsleuth_runner::PortableChoice;
use perfsleuth_runner::Schedule;
use perfsleuth_runner::Simulation;
use perfsleuth_runner::StopRule;
use std::path::Path;
use std::path::PathBuf;

/// Everything `run` needs, checked before anything is measured.
pub struct Checked {
    /// Simulation mode's set-up (valgrind, the portable profile); `None` in wall time.
    pub(crate) simulation: Option<Simulation>,
    pub(crate) schedule: Schedule,
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
    pub(crate) rounds: u32,
    /// `--profile=alloc`: the allocation recorder the benchmarked commands
    /// are given (their files, collected after measuring).
    pub alloc: Option<perfsleuth_measure::alloc::Recorder>,
    /// What measuring records beside the times, settled for the mode.
    pub(crate) instruments: Instrumentation,
    /// Where the run is stored (`--store`, `--no-store`).
    pub(crate) store: Option<String>,
    pub(crate) no_store: bool,
    /// The progress line (`--progress`) and colour of what is printed.
    pub(crate) progress: Option<bool>,
    pub(crate) color: crate::options::ColorChoice,
    /// `--time-budget`: how long a benchmark is given (a silent command
    /// gets a note after ten of them).
    pub(crate) time_budget: std::time::Duration,
    /// Whether the commands run in a shell (`--shell`).
    pub(crate) shell: bool,
    /// The options stored with the run (`sequential` set when measuring:
    /// the caller may turn the extension off after validation).
    pub(crate) options: perfsleuth_model::schema::RunOptions,
}

/// The instruments a run starts, settled from the arguments and the mode:
/// simulation turns each off (valgrind runs the program).
pub(crate) struct Instrumentation {
    pub(crate) counters: Counters,
    pub(crate) counters_kernel: bool,
    pub(crate) tracepoints: bool,
    pub(crate) locks: When,
    pub(crate) profile: ProfileChoice,
    /// Said once measuring starts (options given that the mode ignores).
    pub(crate) notes: Vec<String>,
}

impl Checked {
    /// Whether the run is simulated (valgrind counts, no wall time).
    pub fn simulated(&self) -> bool {
        self.simulation.is_some()
    }

    /// Rounds to measure at least; read-only, as the stored options and
    /// the instruments were settled from it.
    pub fn rounds(&self) -> u32 {
        self.rounds
    }
}

impl Instrumentation {
    pub(crate) fn settle(
        args: &RunOptions,
        simulated: bool,
        auto_counters: bool,
    ) -> Result<Self, Fail> {
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
        if simulated && (args.counters == Counters::All || args.counters_kernel) {
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
                args.counters
            },
            counters_kernel: args.counters_kernel,
            tracepoints: args.counters == Counters::All,
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

/// Rounds when `--rounds` is not given: five spread a side's samples over
/// its time, so a comparison sees how much the machine's speed wanders
/// between them (STATISTICS.md §4.3); an exact `--runs N` stays N runs, and
/// simulation counts do not wander.
pub const DEFAULT_ROUNDS: u32 = 5;

/// The precision stop: `--precision`, else ±1 % for a run of one round and
/// none (0: only identical samples stop it) for several.
pub(crate) fn precision(args: &RunOptions, rounds: u32) -> f64 {
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
pub(crate) fn fitting_rounds(asked: u32, exact: Option<u32>, min: u32, max: Option<u32>) -> u32 {
    (1..=asked.max(1))
        .rev()
        .find(|&k| match exact {
            Some(n) => n % k == 0,
            None => max.is_none_or(|m| min.div_ceil(k).max(1) <= m / k),
        })
        .unwrap_or(1)
}

pub(crate) fn rounds(args: &RunOptions, simulated: bool) -> u32 {
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

/// `--reference CMD` as hyperfine 1.20 takes it: a command that is not one
/// of the benchmarks (by 1-based index or name) is measured as the
/// reference, first, under `--reference-name` or its own text, once
/// whatever the parameters (`--parameter-scan` scans the others). `None`
/// when `--reference` names a benchmark or is not given.
pub(crate) fn reference_command(
    args: &RunOptions,
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
pub(crate) fn own_reference(args: &RunOptions) -> bool {
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
pub(crate) struct Helpers {
    /// For the benchmarks: prepare, conclude, setup, cleanup.
    pub(crate) commands: [Vec<String>; 4],
    /// For the reference command.
    pub(crate) reference: [Vec<String>; 4],
}

impl Helpers {
    pub(crate) fn split(args: &RunOptions) -> Result<Helpers, Fail> {
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
pub(crate) fn portable_choice(args: &RunOptions) -> Result<PortableChoice, Fail> {
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

/// Checks every option and plans the benchmarks; nothing is measured yet.
pub fn validate(args: &RunOptions) -> Result<Checked, Fail> {
    let tolerate = parse::ignore_failure(args.ignore_failure.as_deref())
        .map_err(|e| Fail::usage(e, "see perfsleuth run --help"))?;
    let simulation = simulation_of(args)?;
    let simulated = simulation.is_some();
    let Rounds { warmup, k, rule } = rounds_of(args, simulated)?;
    let (mut planned, shell, helpers) = planned_of(args)?;
    if !args.variant.is_empty() {
        planned = with_variants(args, planned, simulated)?;
    }
    // A bad --baseline must fail before anything is measured.
    let baseline = baseline_of(args, simulated)?;
    let reference = reference_of(args, &mut planned, &shell, &helpers)?;
    check_exports(args)?;
    let output = output_target(&args.output, args.store.as_deref())?;
    if let Some(input) = &args.input {
        check_input(input)?;
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
    let max_time = max_time_of(args, planned.len(), baseline.is_some(), k, simulated)?;
    let schedule = Schedule::new(
        rule,
        warmup,
        !args.no_interleave,
        tolerate.clone(),
        simulated,
        simulation.is_none() && args.counters == Counters::Auto,
    );
    let alloc = allocation_recorder(args, simulated)?;
    let instruments = Instrumentation::settle(args, simulated, schedule.auto_counters)?;
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
        store: args.store.clone(),
        no_store: args.no_store,
        progress: args.progress,
        color: args.color,
        time_budget: args.time_budget,
        shell: args.shell.is_some(),
        options,
    })
}

/// Simulation mode's set-up (valgrind, the portable profile, a cache
/// model), or `None` in wall time, where its options are refused.
fn simulation_of(args: &RunOptions) -> Result<Option<Simulation>, Fail> {
    Ok(match args.mode {
        Mode::Simulation => {
            let mut sim = Simulation::new(args.collect.clone(), portable_choice(args)?)
                .map_err(Fail::from)?;
            if let Some(spec) = &args.cache_model {
                let (model, notes) = crate::variant::cache_model(spec, args.store.clone())
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
        // `--mode` takes no `probe` (skipped among its values).
        Mode::Walltime | Mode::Probe => {
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
    })
}

/// The rounds a run is measured in and each round's share of the limits.
struct Rounds {
    warmup: u32,
    k: u32,
    rule: StopRule,
}

/// `--rounds`, the run limits and the time budget, as rounds of equal shares.
fn rounds_of(args: &RunOptions, simulated: bool) -> Result<Rounds, Fail> {
    // Simulated runs are deterministic: one run and one that checks it, no warmup.
    let warmup = if simulated { 0 } else { args.warmup };
    let asked = rounds(args, simulated);
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
    let exact = args
        .runs
        .or(simulated.then_some(perfsleuth_runner::SIMULATION_RUNS));
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
    Ok(Rounds { warmup, k, rule })
}

/// The benchmarks the commands and their parameters make, with the shell
/// they run in and the helper commands (`--prepare`, `--setup`, …).
fn planned_of(
    args: &RunOptions,
) -> Result<(Vec<perfsleuth_runner::Planned>, Shell, Helpers), Fail> {
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
    Ok((planned, shell, helpers))
}

/// Each benchmark once per `--variant`, where the options allow variants.
fn with_variants(
    args: &RunOptions,
    planned: Vec<perfsleuth_runner::Planned>,
    simulated: bool,
) -> Result<Vec<perfsleuth_runner::Planned>, Fail> {
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
        .map(|v| crate::variant::parse(v, &config, args.store.clone(), &mut notes))
        .collect::<Result<Vec<_>, _>>()?;
    if !simulated && let Some(v) = variants.iter().find(|v| v.cache_model.is_some()) {
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
    crate::variant::expand(planned, &variants)
}

/// `--baseline`, resolved and checked before anything is measured.
fn baseline_of(
    args: &RunOptions,
    simulated: bool,
) -> Result<Option<crate::verdict::Baseline>, Fail> {
    Ok(match &args.baseline {
        Some(spec) => {
            let mut opts = crate::verdict::options(&args.verdict)?;
            let mut handle = crate::sides::StoreHandle::new(args.store.clone());
            let mut side = crate::sides::resolve(spec, &mut handle)?;
            // Refused now, not after minutes of measuring.
            let mode = if simulated {
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
    })
}

/// Where `--reference` stands in the plan: its own command first, or one
/// of the benchmarks.
fn reference_of(
    args: &RunOptions,
    planned: &mut Vec<perfsleuth_runner::Planned>,
    shell: &Shell,
    helpers: &Helpers,
) -> Result<Option<usize>, Fail> {
    Ok(match reference_command(args, planned, shell, helpers)? {
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
    })
}

/// `--input`: every run reads it from its start, so a regular file or a
/// device like /dev/zero; a FIFO would feed the first run only (and a
/// plain open of it blocks until someone writes).
fn check_input(input: &Path) -> Result<(), Fail> {
    use perfsleuth_model::input::{self, Accept, InputError, Special};
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
    Ok(())
}

/// How long a comparison may extend the run while it is inconclusive
/// (`--max-time`, or the default where the run count is not fixed).
fn max_time_of(
    args: &RunOptions,
    benchmarks: usize,
    with_baseline: bool,
    k: u32,
    simulated: bool,
) -> Result<std::time::Duration, Fail> {
    // The default extension only where the run count is not fixed.
    // `ab` compares its two sides as `--baseline` compares with a stored run;
    // two commands measured interleaved compare with each other.
    let two = benchmarks == 2 && !args.no_interleave && args.variant.is_empty();
    let compared = with_baseline || args.sides || two;
    Ok(match (args.max_time, compared) {
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
        (None, true) if args.runs.is_none() && !simulated => {
            if args.sides {
                AB_MAX_TIME
            } else if with_baseline {
                DEFAULT_MAX_TIME
            } else {
                args.time_budget * 2 * TWO_COMMANDS_TIMES
            }
        }
        _ => std::time::Duration::ZERO,
    })
}

/// `--profile=alloc`'s recorder: refused in simulation mode (valgrind runs
/// the program); where it cannot be made, an error with `on` and a note
/// with `auto`.
pub(crate) fn allocation_recorder(
    args: &RunOptions,
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
pub(crate) fn split_command(commands: &[String]) -> Result<(), Fail> {
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
pub fn settle(args: &mut RunOptions) -> Result<(), Fail> {
    use crate::options::{ColorChoice, StyleChoice};
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
pub(crate) fn check_exports(args: &RunOptions) -> Result<(), Fail> {
    let exports: Vec<(String, &PathBuf)> = output::requested_exports(args)
        .into_iter()
        .map(|(format, path)| (output::export_option(format), path))
        .collect();
    if let Some(plot) = &args.plot {
        output::check_writable(plot, "--plot", args.store.as_deref())?;
        if exports.iter().any(|(_, p)| output::same_file(p, plot)) {
            return Err(Fail::usage(
                format!("--plot and an export both write to {}", plot.display()),
                "give the chart a file of its own",
            ));
        }
    }
    for (i, (option, path)) in exports.iter().enumerate() {
        output::check_writable(path, option, args.store.as_deref())?;
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
pub(crate) fn output_target(output: &str, store_url: Option<&str>) -> Result<OutputTarget, Fail> {
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

/// The options stored with the run, as measured (`sequential` is set by
/// [`measure`]).
pub(crate) fn run_options(
    a: &RunOptions,
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
