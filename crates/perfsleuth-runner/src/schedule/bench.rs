//! The benchmarks: each planned command, its variant and stopping rule,
//! prepared in the spawner and measured into its samples.

use crate::error::RunError;
use crate::simulation::Simulation;
use crate::spawn::Spawn;
use perfsleuth_measure::CommandId;
use perfsleuth_measure::IoConfig;
use perfsleuth_model::Benchmark;
use perfsleuth_model::Environment;
use perfsleuth_model::Profile;
use perfsleuth_model::Sample;
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

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
            profile: profile.cloned().map(Box::new),
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
    pub(crate) sim_dir: Option<PathBuf>,
    /// Simulation mode: the latest run's per-function costs.
    pub(crate) profile: Option<Profile>,
    /// Facts about the measured program (`binary.*`).
    pub(crate) binary: Environment,
    /// `--setup` ran and `--cleanup` has not yet.
    pub(crate) set_up: bool,
    pub(crate) main: CommandId,
    pub(crate) prepare: Option<CommandId>,
    pub(crate) conclude: Option<CommandId>,
    pub(crate) setup: Option<CommandId>,
    pub(crate) cleanup: Option<CommandId>,
    pub(crate) samples: Vec<Sample>,
    /// Timed runs handed to the spawner so far (ahead of `samples` by the ones in flight).
    pub(crate) requested: u32,
    /// Wall time of the latest prepare + run, to pace the pipeline.
    pub(crate) last_unit: Option<Duration>,
    pub(crate) prepare_wall: Duration,
    pub(crate) conclude_wall: Duration,
    pub(crate) spent: Duration,
    pub(crate) next_check: u32,
    pub(crate) done: bool,
    /// A round after the first: measure until this many samples, whatever
    /// the stop rule says.
    pub(crate) until: Option<u32>,
    /// The round being measured (0 first), recorded in every sample.
    pub(crate) round: u32,
    /// Runs a round takes, once the first round has set it.
    pub(crate) round_runs: Option<u32>,
    /// Why it stopped being measured: a run of it (or of a helper of its)
    /// failed. The others are measured on, and the measurement ends with
    /// this failure (hyperfine stops at a failing command; interleaved,
    /// that would stop the others with nothing measured).
    pub(crate) failed: Option<RunError>,
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

    pub(crate) fn runs(&self) -> u32 {
        self.samples.len() as u32
    }

    /// Whether another timed run may be requested: not done, and below the
    /// hard cap (`--runs` or `--max-runs`) counting the runs in flight.
    pub(crate) fn wants_more(&self, rule: &StopRule) -> bool {
        let cap = self
            .until
            .or(rule.exact)
            .or(rule.max_runs)
            .unwrap_or(u32::MAX);
        !self.done && self.failed.is_none() && self.requested < cap
    }

    /// Applies the stopping rule. The CI is recomputed only when the sample
    /// count has grown by ~10 %, so the check stays off the per-iteration cost.
    pub(crate) fn update_done(&mut self, rule: &StopRule) {
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
    pub(crate) fn round_time(&self, rule: &StopRule) -> Duration {
        match self.round_runs {
            Some(n) => self.per_run() * n,
            None => self.spent + self.remaining(rule),
        }
    }

    /// The mean time of a run (with its prepare and conclude) so far.
    pub(crate) fn per_run(&self) -> Duration {
        match self.runs() {
            0 => Duration::from_millis(10),
            n => self.spent / n,
        }
    }

    pub(crate) fn remaining(&self, rule: &StopRule) -> Duration {
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
