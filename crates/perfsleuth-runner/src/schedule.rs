//! The timed schedule of `perfsleuth run`: setups, warmups, then timed runs
//! interleaved over the benchmarks in sweeps that alternate direction (pipelined: the spawner is kept ahead
//! while this process stores the previous sample), each benchmark stopping by
//! the adaptive rule; cleanups last, and after a failure too.

use crate::check::check;
use crate::error::Role;
use crate::error::{RunError, Stop};
use crate::simulation::Simulation;
use crate::spawn::Spawn;
use crate::{Progress, Sink};
use perfsleuth_measure::{CommandId, IoConfig, Outcome, Tolerate};
use perfsleuth_model::{Benchmark, Environment, Profile, Sample};
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::path::PathBuf;
use std::time::{Duration, Instant};

/// Runs shorter than this are collected by polling rather than blocking.
const POLL_BELOW: Duration = Duration::from_millis(5);
/// Runs at least this long are requested one at a time: the bookkeeping
/// between them is a fraction of a percent of a run, and a run queued
/// ahead would be one more than the stopping rule wanted (a whole run of
/// a slow command; hyperfine's `--min-runs 1` of `sleep 4` runs once).
const ONE_AT_A_TIME_FROM: Duration = Duration::from_millis(50);
/// How long to sleep between polls for short runs.
const POLL_INTERVAL: Duration = Duration::from_millis(2);

/// One concrete benchmark: a command with its parameters substituted.
#[derive(Debug, Clone, Default)]
pub struct Planned {
    /// Display name.
    pub name: String,
    /// Command line after substitution.
    pub command: String,
    /// What is executed.
    pub argv: Vec<String>,
    /// Parameter values of this benchmark.
    pub parameters: BTreeMap<String, String>,
    /// Untimed command before each timed run.
    pub prepare: Option<Vec<String>>,
    /// Untimed command after each timed run (hyperfine's `--conclude`).
    pub conclude: Option<Vec<String>>,
    /// Once before the runs.
    pub setup: Option<Vec<String>>,
    /// Once after the runs.
    pub cleanup: Option<Vec<String>>,
    /// Working directory of the command and its helpers (`ab`: the side's
    /// worktree); perfsleuth's own when `None`.
    pub cwd: Option<PathBuf>,
    /// The named machine set-up the command runs under (`run --variant`),
    /// applied to the benchmarked command only, not its helpers.
    pub variant: Option<Variant>,
    /// Environment set for the benchmarked command only, after the
    /// variant's: the allocation recorder's (`--profile=alloc`).
    pub env: Vec<(String, Option<String>)>,
}

/// A named set-up of the machine for a command's process (`run --variant
/// NAME=SPEC`): environment changes, CPU set, THP, nice, ASLR; applied by
/// the spawner for that child only and checked in `/proc` after the spawn.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Variant {
    /// Its name (`base` for the unchanged set-up).
    pub name: String,
    /// Environment changes: set (`Some`) or removed (`None`).
    pub env: Vec<(String, Option<String>)>,
    /// CPU set, THP and nice.
    pub settings: perfsleuth_measure::ChildSettings,
    /// ASLR off (`personality(ADDR_NO_RANDOMIZE)`).
    pub aslr_off: bool,
    /// Simulation mode: the caches callgrind simulates instead of its fixed model.
    pub cache_model: Option<perfsleuth_measure::callgrind::CacheModel>,
}

impl Variant {
    /// The facts a benchmark run under it records: `variant` and one
    /// `variant.*` per setting (performance: they change how it runs).
    pub fn facts(&self) -> Environment {
        use perfsleuth_model::ImpactClass::Performance;
        let mut env = Environment::default();
        env.set("variant", self.name.clone(), Performance);
        for (k, v) in &self.env {
            env.set(
                format!("variant.env.{k}"),
                v.clone().unwrap_or_else(|| "unset".into()),
                Performance,
            );
        }
        if let Some(cpus) = &self.settings.cpus {
            let list: Vec<String> = cpus.iter().map(usize::to_string).collect();
            env.set("variant.cpus", list.join(","), Performance);
        }
        if self.settings.thp_disable {
            env.set("variant.thp", "off", Performance);
        }
        if let Some(n) = self.settings.numa_node {
            env.set("variant.numa", n.to_string(), Performance);
        }
        if let Some(n) = self.settings.nice {
            env.set("variant.nice", n.to_string(), Performance);
        }
        if let Some(p) = self.settings.policy {
            env.set("variant.sched", p.name(), Performance);
        }
        if self.aslr_off {
            env.set("variant.aslr", "off", Performance);
        }
        if let Some(c) = &self.cache_model {
            env.set("variant.cache_model", c.describe(), Performance);
        }
        env
    }
}

impl Planned {
    /// This benchmark in the model's form, with the facts of its program
    /// and what was measured of it.
    pub fn to_benchmark(
        &self,
        facts: &Environment,
        samples: &[Sample],
        profile: Option<&Profile>,
    ) -> Benchmark {
        Benchmark {
            locks: None,
            stacks: None,
            allocs: None,
            name: self.name.clone(),
            command: self.command.clone(),
            argv: self.argv.clone(),
            parameters: self.parameters.clone(),
            facts: facts.clone(),
            samples: samples.to_vec(),
            profile: profile.cloned(),
            summaries: Vec::new(),
        }
    }

    /// The program this benchmark really measures: the command's program, or
    /// with a shell the first word of the shell command when it names one.
    pub fn program(&self, shell: bool) -> Option<PathBuf> {
        let word = if shell {
            self.command.split_whitespace().next()?
        } else {
            self.argv.first()?
        };
        perfsleuth_measure::resolve_program(word, std::env::var_os("PATH").as_deref()).ok()
    }
}

/// When a benchmark has been measured enough.
#[derive(Debug, Clone, Copy)]
pub struct StopRule {
    /// `--runs N`: exactly this many.
    pub exact: Option<u32>,
    /// At least this many before the precision or time rule may stop.
    pub min_runs: u32,
    /// At most this many.
    pub max_runs: Option<u32>,
    /// Stop once this much time was spent on the benchmark.
    pub budget: Duration,
    /// Stop once the 95 % CI of the median is within this fraction of it.
    pub precision: f64,
}

/// A benchmark being measured: its plan, its commands in the spawner, its samples.
#[derive(Debug)]
pub struct Bench {
    /// What it runs.
    pub plan: Planned,
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
    conclude: Option<CommandId>,
    setup: Option<CommandId>,
    cleanup: Option<CommandId>,
    samples: Vec<Sample>,
    /// Timed runs handed to the spawner so far (ahead of `samples` by the ones in flight).
    requested: u32,
    /// Wall time of the latest prepare + run, to pace the pipeline.
    last_unit: Option<Duration>,
    prepare_wall: Duration,
    conclude_wall: Duration,
    spent: Duration,
    next_check: u32,
    done: bool,
    /// A round after the first: measure until this many samples, whatever
    /// the stop rule says.
    until: Option<u32>,
    /// The round being measured (0 first), recorded in every sample.
    round: u32,
    /// Runs a round takes, once the first round has set it.
    round_runs: Option<u32>,
    /// Why it stopped being measured: a run of it (or of a helper of its)
    /// failed. The others are measured on, and the measurement ends with
    /// this failure (hyperfine stops at a failing command; interleaved,
    /// that would stop the others with nothing measured).
    failed: Option<RunError>,
}

impl Bench {
    /// Its command's handle in the spawner (lock tracing attributes runs by it).
    pub fn main_id(&self) -> CommandId {
        self.main
    }

    /// A benchmark whose commands are already prepared in the spawner.
    pub fn new(
        plan: Planned,
        main: CommandId,
        helpers: [Option<CommandId>; 4],
        binary: Environment,
    ) -> Bench {
        let [prepare, conclude, setup, cleanup] = helpers;
        Bench {
            plan,
            sim_dir: None,
            profile: None,
            binary,
            set_up: false,
            main,
            prepare,
            conclude,
            setup,
            cleanup,
            samples: Vec::new(),
            requested: 0,
            last_unit: None,
            prepare_wall: Duration::ZERO,
            conclude_wall: Duration::ZERO,
            spent: Duration::ZERO,
            next_check: 0,
            done: false,
            until: None,
            round: 0,
            round_runs: None,
            failed: None,
        }
    }

    /// Whether a run of it (or of a helper of its) failed.
    pub fn has_failed(&self) -> bool {
        self.failed.is_some()
    }

    /// The timed samples so far.
    pub fn samples(&self) -> &[Sample] {
        &self.samples
    }

    /// The simulation profile of the latest run, if any.
    pub fn profile(&self) -> Option<&Profile> {
        self.profile.as_ref()
    }

    /// The benchmark in the model's form, with or without its samples.
    pub fn to_benchmark(&self, with_samples: bool) -> Benchmark {
        let samples: &[Sample] = if with_samples { &self.samples } else { &[] };
        self.plan
            .to_benchmark(&self.binary, samples, self.profile.as_ref())
    }

    fn runs(&self) -> u32 {
        self.samples.len() as u32
    }

    /// Whether another timed run may be requested: not done, and below the
    /// hard cap (`--runs` or `--max-runs`) counting the runs in flight.
    fn wants_more(&self, rule: &StopRule) -> bool {
        let cap = self
            .until
            .or(rule.exact)
            .or(rule.max_runs)
            .unwrap_or(u32::MAX);
        !self.done && self.failed.is_none() && self.requested < cap
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
        if let Some(until) = self.until {
            self.done = n >= until;
            return;
        }
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
    /// How long one round of this benchmark takes: a later round's count of
    /// runs, or the first round's runs so far and still to come.
    fn round_time(&self, rule: &StopRule) -> Duration {
        match self.round_runs {
            Some(n) => self.per_run() * n,
            None => self.spent + self.remaining(rule),
        }
    }

    /// The mean time of a run (with its prepare and conclude) so far.
    fn per_run(&self) -> Duration {
        match self.runs() {
            0 => Duration::from_millis(10),
            n => self.spent / n,
        }
    }

    fn remaining(&self, rule: &StopRule) -> Duration {
        if self.done {
            return Duration::ZERO;
        }
        let n = self.runs();
        let per_run = self.per_run();
        let runs_left = |target: u32| per_run * target.saturating_sub(n);
        // A later round runs to its count, whatever the rule says.
        if let Some(until) = self.until {
            return runs_left(until);
        }
        match rule.exact {
            Some(exact) => runs_left(exact),
            None => {
                let until = runs_left(rule.min_runs).max(rule.budget.saturating_sub(self.spent));
                rule.max_runs.map_or(until, |m| until.min(runs_left(m)))
            }
        }
    }
}

/// Prepares every planned benchmark in the spawner (its command, wrapped in
/// valgrind in simulation mode, and its helpers) and reads the facts of the
/// program it measures (hashed once per path).
pub fn prepare(
    spawner: &mut impl Spawn,
    planned: Vec<Planned>,
    io: &IoConfig,
    aux_io: &IoConfig,
    simulation: Option<&Simulation>,
    shell: bool,
) -> Result<Vec<Bench>, RunError> {
    let mut benches = Vec::with_capacity(planned.len());
    let mut binaries: HashMap<PathBuf, Environment> = HashMap::new();
    // A variant's own GLIBC_TUNABLES under the portable profile, merged and
    // checked once per value.
    let mut merged: HashMap<Option<String>, Option<String>> = HashMap::new();
    let measure = |what: &str| {
        let what = what.to_string();
        move |source| RunError::Measure { what, source }
    };
    for p in planned {
        let in_dir = |io: &IoConfig| IoConfig {
            cwd: p.cwd.clone().or_else(|| io.cwd.clone()),
            ..io.clone()
        };
        let (io, aux_io) = (&in_dir(io), &in_dir(aux_io));
        let mut helper = |argv: &Option<Vec<String>>, what: &str| {
            argv.as_ref()
                .map(|a| spawner.prepare(a, aux_io).map_err(measure(what)))
                .transpose()
        };
        let helpers = [
            helper(&p.prepare, "--prepare")?,
            helper(&p.conclude, "--conclude")?,
            helper(&p.setup, "--setup")?,
            helper(&p.cleanup, "--cleanup")?,
        ];
        // The variant's set-up is for the benchmarked command alone.
        let mut main_io = io.clone();
        if let Some(v) = &p.variant {
            main_io.env.extend(v.env.iter().cloned());
            main_io.settings = v.settings.clone();
            main_io.disable_aslr |= v.aslr_off;
        }
        main_io.env.extend(p.env.iter().cloned());
        let io = &main_io;
        let (main, sim_dir) = match simulation {
            Some(sim) => {
                // valgrind is what runs; the program must exist all the same.
                let program = p.argv.first().map_or("", String::as_str);
                perfsleuth_measure::resolve_program(program, std::env::var_os("PATH").as_deref())
                    .map_err(measure("command"))?;
                let cache = p.variant.as_ref().and_then(|v| v.cache_model.as_ref());
                let (argv, dir) = sim.wrap(benches.len(), &p.argv, cache)?;
                let mut sim_io = IoConfig {
                    disable_aslr: true,
                    ..io.clone()
                };
                sim_io.env.extend(sim.child_env());
                // A variant that sets GLIBC_TUNABLES gets the profile with
                // its value merged in, as a run started with that value
                // would (`explain` reproduces one side's tunables this way).
                let own = p.variant.as_ref().and_then(|v| {
                    v.env
                        .iter()
                        .rev()
                        .find(|(k, _)| k == "GLIBC_TUNABLES")
                        .map(|(_, v)| v.clone())
                });
                if let Some(own) = own {
                    let value = match merged.get(&own) {
                        Some(v) => v.clone(),
                        None => {
                            let v = sim.portable_tunables_for(own.as_deref())?;
                            merged.insert(own, v.clone());
                            v
                        }
                    };
                    if let Some(value) = value {
                        sim_io.env.push(("GLIBC_TUNABLES".to_string(), Some(value)));
                    }
                }
                let id = spawner
                    .prepare(&argv, &sim_io)
                    .map_err(measure("command"))?;
                (id, Some(dir))
            }
            None => (
                spawner.prepare(&p.argv, io).map_err(measure("command"))?,
                None,
            ),
        };
        // Identity of the program measured (hash, ELF class, ABI).
        let mut binary = match p.program(shell) {
            Some(path) => binaries
                .entry(path.clone())
                .or_insert_with(|| perfsleuth_env::binary_facts(&path))
                .clone(),
            None => Environment::default(),
        };
        if let Some(v) = &p.variant {
            binary.merge(v.facts());
        }
        let mut bench = Bench::new(p, main, helpers, binary);
        bench.sim_dir = sim_dir;
        benches.push(bench);
    }
    Ok(benches)
}

/// The benchmarks with their samples, in the model's form.
pub fn benchmarks(benches: &[Bench]) -> Vec<Benchmark> {
    benches.iter().map(|b| b.to_benchmark(true)).collect()
}

/// Warmups always run, up to the count asked, before the time limit applies.
pub const MIN_WARMUPS: u32 = 3;

/// How to measure: the stop rule, warmups, order, tolerated failures.
#[derive(Debug, Clone)]
pub struct Schedule {
    /// When a benchmark has enough runs.
    pub rule: StopRule,
    /// Untimed runs of each benchmark first.
    pub warmup: u32,
    /// Round-robin over the benchmarks (else one after another).
    pub interleave: bool,
    /// Which failed exits still count as measurements.
    pub tolerate: Tolerate,
    /// Whether the spawner may be kept ahead (and the sink written while a
    /// run is in flight); off on a single CPU, where that work would compete
    /// with the measured child, and in simulation mode, where each run's
    /// output must be read before the next run writes its own.
    pub overlap: bool,
    /// `--counters auto`: decide the software counters from the warmups.
    pub auto_counters: bool,
    /// Where this round sits among the rounds of one measurement, so the
    /// progress line counts the whole measurement and not one round.
    pub progress: RoundProgress,
}

/// The progress line's view of the rounds around the one being measured.
#[derive(Debug, Clone, Copy, Default)]
pub struct RoundProgress {
    /// When the measurement's first round began; this round's start if `None`.
    pub origin: Option<Instant>,
    /// Rounds still to come after this one (the planned `--rounds`; rounds
    /// added while a comparison is inconclusive are not known in advance).
    pub rounds_after: u32,
}

impl Schedule {
    /// A schedule with `overlap` decided for this machine.
    pub fn new(
        rule: StopRule,
        warmup: u32,
        interleave: bool,
        tolerate: Tolerate,
        simulated: bool,
        auto_counters: bool,
    ) -> Schedule {
        let overlap = !simulated && std::thread::available_parallelism().is_ok_and(|n| n.get() > 1);
        Schedule {
            rule,
            warmup,
            interleave,
            tolerate,
            overlap,
            auto_counters,
            progress: RoundProgress::default(),
        }
    }

    /// Measures `benches`, handing every sample to `sink` as it comes. A
    /// benchmark whose run fails is set aside and the others measured to
    /// the end; the result is then the first failure.
    pub fn measure(
        &self,
        spawner: &mut impl Spawn,
        sink: &mut impl Sink,
        benches: &mut [Bench],
        simulation: Option<&Simulation>,
    ) -> Measured {
        let mut measured = self.measure_round(spawner, sink, benches, simulation);
        end_with_failures(&mut measured, benches);
        measured
    }

    /// [`Schedule::measure`], with a failed benchmark's failure left on it
    /// (`Ok` where only benchmarks failed): the rounds go on without it.
    fn measure_round(
        &self,
        spawner: &mut impl Spawn,
        sink: &mut impl Sink,
        benches: &mut [Bench],
        simulation: Option<&Simulation>,
    ) -> Measured {
        let mut m = Measure {
            spawner,
            sink,
            schedule: self,
            auto_counters: self.auto_counters,
            started: self.progress.origin.unwrap_or_else(Instant::now),
            pending: None,
            simulation,
            counter_env: Environment::default(),
            notes: Vec::new(),
            per_benchmark: Vec::new(),
        };
        let mut result = m.all(benches);
        if let Err(stop) = m.flush() {
            result = result.and(Err(stop));
        }
        // Profiles are kept even after a failure, like the samples before it.
        for (i, b) in benches.iter().enumerate() {
            if let Some(profile) = &b.profile
                && let Err(e) = m.sink.profile(i, profile)
            {
                result = result.and(Err(Stop::Failed(RunError::Sink(e))));
                break;
            }
        }
        Measured {
            result,
            counter_env: m.counter_env,
            notes: m.notes,
        }
    }
}

impl Schedule {
    /// Measures as [`Schedule::measure`] does, then further rounds: setups,
    /// as many timed runs per benchmark as the first round took (each round
    /// starting with the next benchmark), cleanups; no warmup. At least
    /// `min_rounds` in all (`run --rounds`); then, where `max_time` allows
    /// more, the comparison that follows is looked at (`undecided(benches,
    /// look)`, look 0 first) and while it does not decide yet, further rounds
    /// up to the next look ([`perfsleuth_stats::look_rounds`]: 1.5× the
    /// rounds of the one before), as long as they fit in `max_time` at the
    /// pace of the rounds so far. Samples carry their round and continue the
    /// iteration numbers. Returns how it ended, the rounds measured, and the
    /// last look made (`None` where `max_time` is zero: the comparison is
    /// made once, at its full α; its last look otherwise, whose data the
    /// final comparison sees).
    #[allow(clippy::too_many_arguments)]
    pub fn measure_until(
        &self,
        spawner: &mut impl Spawn,
        sink: &mut impl Sink,
        benches: &mut [Bench],
        simulation: Option<&Simulation>,
        min_rounds: u32,
        max_time: std::time::Duration,
        mut undecided: impl FnMut(&[Bench], u32) -> bool,
    ) -> (Measured, u32, Option<u32>) {
        let started = Instant::now();
        let first_round = Schedule {
            progress: RoundProgress {
                origin: Some(started),
                rounds_after: min_rounds.saturating_sub(1),
            },
            ..self.clone()
        };
        let mut measured = first_round.measure_round(spawner, sink, benches, simulation);
        let first = started.elapsed();
        let per_round: Vec<u32> = benches.iter().map(|b| b.runs()).collect();
        let mut rounds = 1;
        let mut next = Schedule {
            warmup: 0,
            auto_counters: false,
            ..self.clone()
        };
        let mut another = |benches: &mut [Bench], rounds: u32, target: u32| {
            for (b, n) in benches.iter_mut().zip(&per_round) {
                b.until = Some(b.runs() + n);
                b.round_runs = Some(*n);
                b.done = false;
                b.round = rounds;
            }
            next.progress = RoundProgress {
                origin: Some(started),
                rounds_after: target.saturating_sub(rounds + 1),
            };
            next.measure_round(spawner, sink, benches, simulation)
        };
        let absorb = |measured: &mut Measured, more: Measured| {
            measured.result = more.result;
            measured.notes.extend(more.notes);
            measured.counter_env.merge(more.counter_env);
        };
        while measured.result.is_ok() && rounds < min_rounds {
            let more = another(benches, rounds, min_rounds);
            absorb(&mut measured, more);
            rounds += 1;
        }
        if max_time.is_zero() {
            end_with_failures(&mut measured, benches);
            return (measured, rounds, None);
        }
        let mut look = 0;
        // A failed benchmark ends the comparison: no rounds for it.
        while measured.result.is_ok()
            && !benches.iter().any(Bench::has_failed)
            && undecided(benches, look)
        {
            let target = perfsleuth_stats::look_rounds(min_rounds, look + 1);
            // The pace of the rounds after the first (which had the warmups).
            let pace = if rounds > 1 {
                started.elapsed().saturating_sub(first) / (rounds - 1)
            } else {
                first
            };
            let needed = pace.saturating_mul(target - rounds);
            if started.elapsed().saturating_add(needed) > max_time {
                break;
            }
            while measured.result.is_ok() && rounds < target {
                let more = another(benches, rounds, target);
                absorb(&mut measured, more);
                rounds += 1;
            }
            look += 1;
        }
        end_with_failures(&mut measured, benches);
        (measured, rounds, Some(look))
    }
}

/// Where benchmarks failed and the measurement otherwise ended well: it
/// ends with the first one's failure, the others' said with it.
fn end_with_failures(measured: &mut Measured, benches: &mut [Bench]) {
    if measured.result.is_err() {
        return;
    }
    let mut failures = benches.iter_mut().filter_map(|b| b.failed.take());
    let Some(mut first) = failures.next() else {
        return;
    };
    let others: Vec<String> = failures.map(|e| format!("also: {e}")).collect();
    if let RunError::CommandFailed { details, .. } = &mut first {
        details.extend(others);
    }
    measured.result = Err(Stop::Failed(first));
}

/// How measuring ended, and what it decided about counters.
#[derive(Debug)]
pub struct Measured {
    /// `Ok` when every benchmark was measured to the end.
    pub result: Result<(), Stop>,
    /// Facts about counters decided while measuring (`--counters auto`).
    pub counter_env: Environment,
    /// Notes about counters and cut-short warmups, to print after the results.
    pub notes: Vec<String>,
}

/// One request in the timed pipeline.
#[derive(Debug, Clone, Copy)]
struct Step {
    bench: usize,
    kind: StepKind,
    iteration: u32,
}

/// What a step runs: the benchmarked command or one of its untimed helpers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum StepKind {
    Prepare,
    Timed,
    Conclude,
}

struct Measure<'a, S: Spawn, K: Sink> {
    spawner: &'a mut S,
    sink: &'a mut K,
    schedule: &'a Schedule,
    /// `--counters auto` still to be decided (before the first timed run).
    auto_counters: bool,
    /// When the whole measurement began (its first round).
    started: Instant,
    /// A measured sample not yet handed to the sink: (benchmark index, sample).
    pending: Option<(usize, Sample)>,
    /// Simulation mode: where each run's callgrind output is read from.
    simulation: Option<&'a Simulation>,
    counter_env: Environment,
    notes: Vec<String>,
    /// The progress line's runs per benchmark, kept to reuse its allocation.
    per_benchmark: Vec<u64>,
}

impl<S: Spawn, K: Sink> Measure<'_, S, K> {
    fn all(&mut self, benches: &mut [Bench]) -> Result<(), Stop> {
        let result = self.phases(benches);
        if matches!(result, Err(Stop::Failed(_))) {
            // What was set up is cleaned up, even after a failure (not after
            // Ctrl-C: the user wants out). Best effort: the failure is the news.
            for b in benches.iter_mut().filter(|b| b.set_up) {
                if let Some(id) = b.cleanup {
                    let _ = self.spawner.run_anyway(id);
                }
            }
        }
        result
    }

    fn phases(&mut self, benches: &mut [Bench]) -> Result<(), Stop> {
        let warmup = self.schedule.warmup;
        if self.schedule.interleave {
            for b in benches.iter_mut().filter(|b| !b.has_failed()) {
                let setup = self.aux(b.setup, "--setup", &b.plan.name);
                self.or_set_aside(b, setup)?;
                b.set_up = !b.has_failed();
            }
            let start = Instant::now();
            let limit = self.schedule.rule.budget * benches.len() as u32;
            for done in 0..warmup {
                if self.warmup_cut(done, warmup, start, limit) {
                    break;
                }
                for b in benches.iter_mut().filter(|b| !b.has_failed()) {
                    let warm = self.warm(b);
                    self.or_set_aside(b, warm)?;
                }
            }
            self.timed(benches, 0)?;
            for b in benches.iter_mut().filter(|b| b.set_up) {
                b.set_up = false;
                let cleanup = self.aux(b.cleanup, "--cleanup", &b.plan.name);
                self.or_set_aside(b, cleanup)?;
            }
        } else {
            for i in 0..benches.len() {
                let b = &mut benches[i];
                if b.has_failed() {
                    continue;
                }
                let setup = self.aux(b.setup, "--setup", &b.plan.name);
                self.or_set_aside(b, setup)?;
                if b.has_failed() {
                    continue;
                }
                b.set_up = true;
                let start = Instant::now();
                for done in 0..warmup {
                    if b.has_failed()
                        || self.warmup_cut(done, warmup, start, self.schedule.rule.budget)
                    {
                        break;
                    }
                    let warm = self.warm(b);
                    self.or_set_aside(b, warm)?;
                }
                self.timed(&mut benches[i..=i], i)?;
                let b = &mut benches[i];
                b.set_up = false;
                let cleanup = self.aux(b.cleanup, "--cleanup", &b.plan.name);
                self.or_set_aside(b, cleanup)?;
            }
        }
        Ok(())
    }

    /// After a run of `b` (or of a helper of its) failed, `b` is set aside:
    /// the spawner, halted by the failure, goes on, and the other
    /// benchmarks are measured on; the measurement ends with the failure.
    /// What is not one benchmark's failure (Ctrl-C, the store, the
    /// spawner itself) ends the measurement now.
    fn or_set_aside(&mut self, b: &mut Bench, result: Result<(), Stop>) -> Result<(), Stop> {
        match result {
            Ok(()) => Ok(()),
            Err(Stop::Failed(e @ (RunError::CommandFailed { .. } | RunError::TimedOut { .. }))) => {
                self.spawner.resume().map_err(|source| {
                    Stop::Failed(RunError::Measure {
                        what: "command".into(),
                        source,
                    })
                })?;
                b.failed = Some(e);
                Ok(())
            }
            Err(other) => Err(other),
        }
    }

    /// Collects the replies of the runs `queue` holds, which the spawner
    /// answers without running them after a failure; their timed runs are
    /// requested again (under the same iterations) if their benchmark goes on.
    fn drain_skipped(&mut self, queue: &mut VecDeque<Step>, benches: &mut [Bench]) {
        for s in queue.drain(..) {
            let _ = self.spawner.finish();
            if s.kind == StepKind::Timed {
                let b = &mut benches[s.bench];
                b.requested = b.requested.saturating_sub(1);
            }
        }
    }

    /// The timed runs, interleaved over `benches` (whose first has index
    /// `offset` in the plan). The spawner is kept ahead: while it runs
    /// iteration k+1, this process stores iteration k and applies the
    /// stopping rule, so none of that is on the critical path.
    fn timed(&mut self, benches: &mut [Bench], offset: usize) -> Result<(), Stop> {
        if self.auto_counters {
            // Once, before the first timed run, from the warmups seen so far
            // (with --no-interleave: the first command's).
            self.auto_counters = false;
            let fastest = benches.iter().filter_map(|b| b.last_unit).min();
            let notes = crate::counters::enable_auto(self.spawner, fastest, &mut self.counter_env);
            self.notes.extend(notes);
        }
        let rule = self.schedule.rule;
        let mut queue: VecDeque<Step> = VecDeque::new();
        // Each round starts with another benchmark, so no command is always first.
        let mut cursor = Serpentine::new(
            benches
                .first()
                .map_or(0, |b| b.round as usize % benches.len()),
        );
        loop {
            let (depth, poll) = self.pace(benches);
            while queue.iter().filter(|s| s.kind == StepKind::Timed).count() < depth {
                let Some(bench) = next_bench(benches, &rule, &mut cursor) else {
                    break;
                };
                let b = &mut benches[bench];
                let iteration = b.requested;
                b.requested += 1;
                if let Some(prep) = b.prepare {
                    self.begin(prep, 0, "--prepare")?;
                    queue.push_back(Step {
                        bench,
                        kind: StepKind::Prepare,
                        iteration,
                    });
                }
                self.begin(b.main, iteration, "command")?;
                queue.push_back(Step {
                    bench,
                    kind: StepKind::Timed,
                    iteration,
                });
                if let Some(conclude) = b.conclude {
                    self.begin(conclude, 0, "--conclude")?;
                    queue.push_back(Step {
                        bench,
                        kind: StepKind::Conclude,
                        iteration,
                    });
                }
            }
            let Some(&step) = queue.front() else {
                return Ok(());
            };
            let result = match self.wait_next(poll) {
                Ok(None) => continue,
                Ok(Some(outcome)) => {
                    queue.pop_front();
                    let tolerate = if step.kind == StepKind::Timed {
                        &self.schedule.tolerate
                    } else {
                        &Tolerate::Nothing
                    };
                    if outcome.halts(tolerate) {
                        // Collect the replies of runs already queued (the spawner
                        // answers them without running) before anything else is
                        // asked of it, such as a re-run to show the failure.
                        self.drain_skipped(&mut queue, benches);
                    }
                    // The next queued run is executing now: store the previous sample meanwhile.
                    self.flush().and_then(|()| {
                        self.complete(&mut benches[step.bench], offset + step.bench, step, outcome)
                    })
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
                self.drain_skipped(&mut queue, benches);
                self.or_set_aside(&mut benches[step.bench], Err(stop))?;
                continue;
            }
            if step.kind == StepKind::Timed {
                self.show_progress(benches);
            }
        }
    }

    /// How many runs to keep queued, and whether to poll instead of blocking.
    /// Short runs are polled: this process sleeps between looks, so the
    /// spawner's replies never have to wake it, and enough runs are queued to
    /// keep the spawner busy meanwhile. Long runs block (one wake-up per run
    /// is noise there). On one CPU nothing is queued ahead.
    fn pace(&self, benches: &[Bench]) -> (usize, bool) {
        if !self.schedule.overlap {
            return (1, false);
        }
        // Runs on every reply: no allocation.
        let (sum, count) = benches
            .iter()
            .filter(|b| b.wants_more(&self.schedule.rule))
            .filter_map(|b| b.last_unit)
            .fold((Duration::ZERO, 0u32), |(s, n), d| (s + d, n + 1));
        // Until a run's length is known (no warmup): one at a time.
        if count == 0 {
            return (1, false);
        }
        let typical = sum / count;
        if typical >= ONE_AT_A_TIME_FROM {
            return (1, false);
        }
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
        let fail = |source| {
            Stop::Failed(RunError::Measure {
                what: "command".into(),
                source,
            })
        };
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
        if !self.schedule.overlap {
            self.flush()?;
        }
        self.spawner.finish().map(Some).map_err(fail)
    }

    /// Checks one finished request and records it.
    fn complete(
        &mut self,
        b: &mut Bench,
        index: usize,
        step: Step,
        outcome: Outcome,
    ) -> Result<(), Stop> {
        let helper = match step.kind {
            StepKind::Prepare => Some((b.prepare, "--prepare")),
            StepKind::Conclude => Some((b.conclude, "--conclude")),
            StepKind::Timed => None,
        };
        if let Some((id, what)) = helper {
            let s = check(
                &Tolerate::Nothing,
                self.spawner,
                id.unwrap_or(b.main),
                || format!("{what} command of `{}`", b.plan.name),
                Role::Helper,
                outcome,
            )?;
            b.spent += Duration::from_nanos(s.wall_ns);
            // The helpers' time paces the pipeline as the command's does.
            if step.kind == StepKind::Prepare {
                b.prepare_wall = Duration::from_nanos(s.wall_ns);
            } else {
                b.conclude_wall = Duration::from_nanos(s.wall_ns);
            }
            return Ok(());
        }
        let mut sample = self.check_main(b, outcome, Role::Timed)?;
        sample.iteration = step.iteration;
        sample.round = b.round;
        if let (Some(sim), Some(dir)) = (self.simulation, &b.sim_dir) {
            b.profile = Some(sim.collect(dir, &b.plan.command, &mut sample)?);
        }
        b.spent += Duration::from_nanos(sample.wall_ns);
        b.last_unit = Some(b.prepare_wall + Duration::from_nanos(sample.wall_ns) + b.conclude_wall);
        if self.sink.keeps_samples() {
            self.pending = Some((index, sample.clone()));
        }
        b.samples.push(sample);
        b.update_done(&self.schedule.rule);
        Ok(())
    }

    /// Checks a benchmarked run against the `--ignore-failure` policy.
    fn check_main(&mut self, b: &Bench, outcome: Outcome, role: Role) -> Result<Sample, Stop> {
        let label = || format!("command `{}`", b.plan.command);
        check(
            &self.schedule.tolerate,
            self.spawner,
            b.main,
            label,
            role,
            outcome,
        )
    }

    /// Queues a run; timed runs discard stderr.
    fn begin(&mut self, id: CommandId, iteration: u32, what: &str) -> Result<(), Stop> {
        self.spawner
            .begin(id, iteration, what != "command")
            .map_err(|source| {
                Stop::Failed(RunError::Measure {
                    what: what.into(),
                    source,
                })
            })
    }

    /// Runs one untimed request to completion.
    fn exec(&mut self, id: CommandId, what: &str) -> Result<Outcome, Stop> {
        self.flush()?;
        self.spawner.run_once(id, 0).map_err(|source| {
            Stop::Failed(RunError::Measure {
                what: what.into(),
                source,
            })
        })
    }

    /// Hands the pending sample, if any, to the sink.
    fn flush(&mut self) -> Result<(), Stop> {
        if let Some((bench, sample)) = self.pending.take() {
            self.sink
                .sample(bench, &sample)
                .map_err(|e| Stop::Failed(RunError::Sink(e)))?;
        }
        Ok(())
    }

    /// Whether to stop warming up after `done` of `asked` warmups begun at
    /// `start`: never before [`MIN_WARMUPS`] (or the count asked), then once
    /// they took the time the timed runs get (`limit`), so `--warmup
    /// 4294967295` cannot run forever. Says so in a note.
    fn warmup_cut(&mut self, done: u32, asked: u32, start: Instant, limit: Duration) -> bool {
        let cut = done >= MIN_WARMUPS && start.elapsed() >= limit;
        if cut && !self.notes.iter().any(|n| n.starts_with("warmup stopped")) {
            self.notes.push(format!(
                "warmup stopped after {done} of {asked} runs: warmups may take as long as the timed runs' time budget ({:.1} s a round); raise --time-budget for more",
                self.schedule.rule.budget.as_secs_f64()
            ));
        }
        cut
    }

    fn warm(&mut self, b: &mut Bench) -> Result<(), Stop> {
        self.aux(b.prepare, "--prepare", &b.plan.name)?;
        let outcome = self.exec(b.main, "command")?;
        let s = self.check_main(b, outcome, Role::Untimed)?;
        b.last_unit = Some(Duration::from_nanos(s.wall_ns));
        self.aux(b.conclude, "--conclude", &b.plan.name)
    }

    /// Runs an untimed helper command (prepare/conclude/setup/cleanup); it must succeed.
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

    fn show_progress(&mut self, benches: &[Bench]) {
        let rule = &self.schedule.rule;
        let elapsed = self.started.elapsed();
        // This round's rest, then the rounds still planned, each as long as
        // a round of each benchmark takes.
        let after = self.schedule.progress.rounds_after;
        let eta: Duration = benches
            .iter()
            .map(|b| b.remaining(rule) + b.round_time(rule) * after)
            .sum();
        // Reused: this runs after every timed sample.
        self.per_benchmark.clear();
        self.per_benchmark
            .extend(benches.iter().map(|b| b.samples.len() as u64));
        let runs: u64 = self.per_benchmark.iter().sum();
        let total = elapsed + eta;
        let fraction = if total.is_zero() {
            1.0
        } else {
            elapsed.as_secs_f64() / total.as_secs_f64()
        };
        let active = benches.iter().filter(|b| !b.done).count();
        let phase = format!("Measuring {active}/{} commands", benches.len());
        self.sink.progress(&Progress {
            phase: &phase,
            fraction,
            runs,
            elapsed,
            eta,
            per_benchmark: &self.per_benchmark,
        });
    }
}

/// Where the interleaved order stands: sweeps over the benchmarks from a
/// round's first one, every other sweep backwards (A B B A A B ...). Each
/// side of an adjacent pair then runs first as often as second, in every
/// round: measured on the 2-vCPU study host, the second run of a pair read
/// 0.1–0.3 % faster on CPU time, and plain round-robin within a round (A B A
/// B, so A always first) turned that into a bias of the paired estimate.
#[derive(Debug, Clone, Copy)]
struct Serpentine {
    start: usize,
    step: usize,
}

impl Serpentine {
    fn new(start: usize) -> Self {
        Serpentine { start, step: 0 }
    }

    /// The benchmark at slot `step` of the order, for `n` benchmarks.
    fn at(&self, step: usize, n: usize) -> usize {
        let (sweep, pos) = (step / n, step % n);
        let offset = if sweep % 2 == 0 { pos } else { n - 1 - pos };
        (self.start + offset) % n
    }
}

/// The next benchmark in the interleaved order that wants another run.
fn next_bench(benches: &[Bench], rule: &StopRule, cursor: &mut Serpentine) -> Option<usize> {
    let n = benches.len();
    // Two sweeps visit every benchmark at least once.
    let skip = (0..2 * n).find(|&k| benches[cursor.at(cursor.step + k, n)].wants_more(rule))?;
    let found = cursor.at(cursor.step + skip, n);
    cursor.step += skip + 1;
    Some(found)
}

#[cfg(test)]
mod tests;
