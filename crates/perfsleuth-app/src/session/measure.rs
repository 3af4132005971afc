//! The one measurement `run`, `ab` and `explain` share: the benchmarks
//! prepared in the spawner, measured round by round and stored as they go.

use crate::error::Fail;
use crate::locks::Instruments;
use crate::output;
use crate::session::open_store;
use crate::session::validate::Checked;
use crate::sink::StoreSink;
use crate::term::ProgressLine;
use crate::term::catch_interrupts;
use crate::term::use_color;
use perfsleuth_measure::OutputTarget;
use perfsleuth_measure::Spawner;
use perfsleuth_model::Mode;
use perfsleuth_model::Run;
use perfsleuth_runner::Stop;
use perfsleuth_runner::conclude;

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
    .map_err(Fail::from)
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
    let mut run = new_run(c);
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
    let mut notes = std::mem::take(&mut instruments.notes);
    notes.extend(i.notes.iter().cloned());
    let store = store
        .as_deref_mut()
        .map(|s| s as &mut dyn perfsleuth_store::Store);
    let (sink, ids) = begin_storing(c, store, &mut run, &benches, &parts)?;
    let mut m = Measuring {
        sink,
        instruments,
        notes,
    };
    m.watch(c)?;
    let started = std::time::Instant::now();
    let ended = m.rounds(c, spawner, &mut benches, &mut run, undecided)?;
    let warnings = m.simulation_notes(c, &mut run);
    let Measuring {
        mut sink, notes, ..
    } = m;
    conclude(&mut run, &ended.result, &*spawner, &mut sink).map_err(Fail::from)?;
    Ok(Measurement {
        ids,
        stored_note: sink.stored_note(use_color(c.color, true)),
        run,
        result: ended.result,
        notes,
        warnings,
        rounds: ended.rounds,
        look: ended.look,
        elapsed: started.elapsed(),
    })
}

/// The run being measured, before its benchmarks: its mode, options and
/// this machine's environment.
fn new_run(c: &Checked) -> Run {
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
    run
}

/// Stores one runs row per part (each with its share of the plan's
/// benchmarks, still empty) and gives `run` the first one's identity: the
/// sink that stores the rest as it is measured, and the rows' ids.
fn begin_storing<'s>(
    c: &Checked,
    store: Option<&'s mut dyn perfsleuth_store::Store>,
    run: &mut Run,
    benches: &[perfsleuth_runner::Bench],
    parts: &[Part],
) -> Result<(StoreSink<'s>, Vec<Option<i64>>), Fail> {
    let empty: Vec<_> = benches.iter().map(|b| b.to_benchmark(false)).collect();
    let mut ranges = Vec::with_capacity(parts.len());
    let mut start = 0;
    for part in parts {
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
        store,
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
    Ok((sink, stored.iter().map(|r| r.id).collect()))
}

/// How measuring ended, the rounds measured and the comparison's last look.
struct Ended {
    result: Result<(), Stop>,
    rounds: u32,
    look: Option<u32>,
}

/// What a measurement carries from start to end: the sink storing it, the
/// instruments around it and the notes gathered so far.
struct Measuring<'s> {
    // Dropped in this order, as the locals they were: the sink before the
    // instruments.
    sink: StoreSink<'s>,
    instruments: Instruments,
    notes: Vec<String>,
}

impl Measuring<'_> {
    /// Before the first round: the `--output` file created, Ctrl-C caught,
    /// and a watchdog for commands that fall silent.
    fn watch(&mut self, c: &Checked) -> Result<(), Fail> {
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
            self.sink.watchdog = Some(crate::term::Watchdog::start(after));
        }
        Ok(())
    }

    /// Measures round by round while `undecided`, stops the instruments
    /// and puts what they and the rounds found into `run`: how measuring
    /// ended, the rounds and the last look.
    fn rounds(
        &mut self,
        c: &Checked,
        spawner: &mut Spawner,
        benches: &mut [perfsleuth_runner::Bench],
        run: &mut Run,
        undecided: &dyn Fn(&Run, &[perfsleuth_runner::Bench], u32) -> bool,
    ) -> Result<Ended, Fail> {
        let noise = perfsleuth_env::NoiseSnapshot::take(&perfsleuth_env::Source::live());
        // With a comparison to follow, rounds are added while it is inconclusive.
        let template = run.clone();
        let spawner_pid = spawner.pid();
        let mut following = perfsleuth_runner::locks::Following::new(spawner);
        let (measured, rounds, look) = c.schedule.measure_until(
            &mut following,
            &mut self.sink,
            benches,
            c.simulation.as_ref(),
            c.rounds,
            c.max_time,
            |benches, look| undecided(&template, benches, look),
        );
        self.instruments.stop(
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
        self.notes.append(&mut self.instruments.notes);
        self.sink.watchdog = None;
        self.sink.progress.clear();
        self.notes.extend(measured.notes);
        run.environment.merge(measured.counter_env);
        // The warning after the run judges the run, not the minutes before it.
        noise.since(&perfsleuth_env::Source::live(), &mut run.environment);
        run.benchmarks = perfsleuth_runner::benchmarks(benches);
        self.instruments.attach(run, &mut self.sink)?;
        // What attaching found (a profile none of whose runs was kept).
        self.notes.append(&mut self.instruments.notes);
        Ok(Ended {
            result: measured.result,
            rounds,
            look,
        })
    }

    /// In simulation, the simulator's notes (its cache model, but for the
    /// variants with their own) and warnings (a CPUID the portable profile
    /// did not pin): the warnings.
    fn simulation_notes(&mut self, c: &Checked, run: &mut Run) -> Vec<String> {
        let mut warnings = Vec::new();
        if let Some(sim) = &c.simulation {
            // Variants with caches of their own are not simulated with the fixed model.
            let mut own_caches: Vec<&str> = Vec::new();
            for v in c.planned.iter().filter_map(|p| p.variant.as_ref()) {
                if v.cache_model.is_some() && !own_caches.contains(&v.name.as_str()) {
                    own_caches.push(&v.name);
                }
            }
            self.notes.extend(sim.notes().into_iter().map(|n| {
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
        warnings
    }
}
