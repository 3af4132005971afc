//! `explain`'s planning and judging: the differences between two set-ups
//! that this machine can reproduce for one process become experiments
//! ([`derive`]), measured interleaved as variants of the benchmarks in one
//! session, and ranked by the share of the observed difference each
//! reproduces (Holm-adjusted over the experiments; [`judge`]'s outcome
//! rules). The binary prints the [`ExplainDoc`] this returns.
//!
//! The two sides are stored runs or exports, `current` (this machine, as it
//! is), or a fingerprint (`env show --json`) with no results of its own.
//! The experiments start from the side this machine stands for and move it,
//! one difference at a time, towards the other.

pub mod derive;

use crate::args::{ColorChoice, CompareFormat, ExplainArgs, ModeChoice, RunArgs, StyleChoice};
use crate::error::Fail;
use crate::sides::{self as selectors, StoreHandle};
use derive::Experiment;
use perfsleuth_compare::Side;
use perfsleuth_measure::Spawner;
use perfsleuth_model::quantity::MISSING;
use perfsleuth_model::schema::{
    self, Document, ExplainBenchmark, ExplainDoc, ExplainExperiment, ExplainFinding,
    ExplainOutcome, ExplainRatio, ExplainUntested, IgnoreFailure, VerdictLabel,
};
use perfsleuth_model::{Environment, ImpactClass, Mode, Run};
use perfsleuth_report::format_change;
use perfsleuth_runner::Stop;

/// An experiment that could be made: its settings, what glibc was seen
/// to apply, and its variant.
struct Tried {
    experiment: Experiment,
    settings: Vec<String>,
    verified: Vec<String>,
    variant: perfsleuth_runner::Variant,
}

/// One side of an explanation.
enum Input {
    /// This machine as it is: measured now, as the base.
    Current,
    /// A fingerprint without results.
    Fingerprint { label: String, env: Environment },
    /// Stored runs (or an export).
    Runs(Side),
}

impl Input {
    fn label(&self) -> String {
        match self {
            Input::Current => "current machine".into(),
            Input::Fingerprint { label, .. } => label.clone(),
            Input::Runs(s) => s.label.clone(),
        }
    }

    fn runs(&self) -> Option<&Side> {
        match self {
            Input::Runs(s) => Some(s),
            _ => None,
        }
    }

    fn env<'a>(&'a self, here: &'a Environment) -> &'a Environment {
        match self {
            Input::Current => here,
            Input::Fingerprint { env, .. } => env,
            Input::Runs(s) => perfsleuth_compare::newest(s).map_or(here, |r| &r.environment),
        }
    }
}

fn resolve(spec: &str, store: &mut StoreHandle) -> Result<Input, Fail> {
    if spec == "current" {
        return Ok(Input::Current);
    }
    match selectors::resolve(spec, store) {
        Ok(side) => Ok(Input::Runs(side)),
        Err(e) => {
            // A fingerprint file (`env show --json`) has no runs but says
            // what the other machine is.
            if crate::output::names_a_file(std::path::Path::new(spec))
                && let Ok(env) = crate::sides::environment_file(std::path::Path::new(spec))
            {
                return Ok(Input::Fingerprint {
                    label: spec.to_string(),
                    env,
                });
            }
            Err(e)
        }
    }
}

/// Which side the experiments start from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum From {
    Baseline,
    Candidate,
}

impl From {
    fn name(self) -> &'static str {
        match self {
            From::Baseline => "baseline",
            From::Candidate => "candidate",
        }
    }
}

/// The identity facts in which `env` differs from this machine.
fn identity_gap(env: &Environment, here: &Environment) -> Vec<perfsleuth_env::Change> {
    perfsleuth_env::diff(env, here)
        .into_iter()
        .filter(|c| c.class == ImpactClass::Identity && !c.key.starts_with("sim."))
        .collect()
}

/// What `explain` found.
pub enum Explained {
    /// The explanation: planned only, nothing to explain, or measured (then
    /// with the session's stored-run note, notes and warnings to print).
    Doc {
        /// The `perfsleuth/explain` document.
        doc: Box<ExplainDoc>,
        /// "Stored as run N in …", when the experiments were stored.
        stored_note: Option<String>,
        /// The session's notes.
        notes: Vec<String>,
        /// The session's warnings.
        warnings: Vec<String>,
    },
    /// Interrupted while measuring: no explanation from a partial
    /// measurement; the exit code.
    Interrupted(i32),
}

impl Explained {
    fn planned(doc: ExplainDoc) -> Explained {
        Explained::Doc {
            doc: Box::new(doc),
            stored_note: None,
            notes: Vec::new(),
            warnings: Vec::new(),
        }
    }
}

/// `perfsleuth explain`: resolves the sides, plans the experiments, measures
/// them in one session unless `--plan`, and judges them.
pub fn explain(args: &ExplainArgs, spawner: Option<Spawner>) -> Result<Explained, Fail> {
    let mut store = StoreHandle::new(args.store.store.clone());
    let baseline = resolve(&args.baseline, &mut store)?;
    let candidate = resolve(&args.candidate, &mut store)?;
    let usage = |what: String, hint: &str| Err(Fail::usage(what, hint.to_string()));
    if baseline.runs().is_none() && candidate.runs().is_none() {
        return usage(
            format!(
                "neither {} nor {} has results: explain reruns the benchmarks of a stored run",
                baseline.label(),
                candidate.label()
            ),
            "give a stored run (id, latest, an export) on at least one side, e.g. `perfsleuth explain RUN current`",
        );
    }
    if let (Some(b), Some(c)) = (baseline.runs(), candidate.runs()) {
        crate::verdict::same_mode(b, c)?;
    }
    let here = perfsleuth_runner::capture_environment(&perfsleuth_env::Source::live());
    // The experiments start from `current` where it is given, from the runs
    // where the other side is a bare fingerprint, else from the side whose
    // machine is this one (the baseline on a tie).
    let from = match (&baseline, &candidate) {
        (Input::Current, _) | (Input::Runs(_), Input::Fingerprint { .. }) => From::Baseline,
        (_, Input::Current) | (Input::Fingerprint { .. }, Input::Runs(_)) => From::Candidate,
        _ => {
            let gb = identity_gap(baseline.env(&here), &here).len();
            let gc = identity_gap(candidate.env(&here), &here).len();
            if gc < gb {
                From::Candidate
            } else {
                From::Baseline
            }
        }
    };
    let (from_input, to_input) = match from {
        From::Baseline => (&baseline, &candidate),
        From::Candidate => (&candidate, &baseline),
    };
    let source = from_input
        .runs()
        .or(to_input.runs())
        .expect("one side has runs");
    let template = perfsleuth_compare::newest(source).expect("a side has a run");
    let mode = template.mode;
    let benches = benchmarks(&baseline, &candidate, args.bench.as_deref())?;
    let from_env = from_input.env(&here).clone();
    let to_env = to_input.env(&here).clone();

    let mut notes = Vec::new();
    let gap = identity_gap(&from_env, &here);
    if !gap.is_empty() {
        notes.push(format!(
            "this machine is not the one {} ran on ({}): the experiments run here, starting from this machine as it is",
            from_input.label(),
            gap.iter()
                .take(3)
                .map(|c| c.summary.as_str())
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }

    // The observed difference, judged by the rule of `compare` across the
    // machines (its verdict is what there is to explain).
    let mut opts = explain_options(args)?;
    let observed = match (baseline.runs(), candidate.runs()) {
        (Some(b), Some(c)) => Some(perfsleuth_compare::to_json(&perfsleuth_compare::compare(
            b, c, &opts,
        ))),
        _ => None,
    };
    if let Some(doc) = &observed {
        let differs = benches.iter().any(|key| {
            doc.rows
                .iter()
                .any(|r| &r.key == key && r.gating && changed(r.verdict))
        });
        if !differs && !args.plan {
            let mut out = new_doc(&baseline, &candidate, from, mode, notes);
            out.benchmarks = benches
                .iter()
                .map(|key| nothing_to_explain(doc, key))
                .collect();
            return Ok(Explained::planned(out));
        }
    }

    // The experiments.
    let simulation = mode == Mode::Simulation;
    // How the stored runs were counted (`current` has no sim.* facts): the
    // base counts the same way.
    let portable = template
        .environment
        .get("sim.portable")
        .filter(|v| *v != "off" && simulation)
        .map(str::to_string);
    if simulation
        && let Some(model) = template.environment.get("sim.cache_model")
        && model != perfsleuth_measure::callgrind::CACHE_MODEL
    {
        return Err(Fail::usage(
            format!(
                "the stored run was simulated with caches of its own ({model}): explain simulates callgrind's fixed model"
            ),
            "explain runs measured with the default cache model; compare cache models with `run --variant NAME=cache-model:…`",
        ));
    }
    let listed = perfsleuth_env::portable::live_tunable_names();
    // The CPUs this process may use, not all that are online (a cpuset).
    let cpus = here
        .get("process.affinity")
        .and_then(perfsleuth_measure::parse_cpu_list)
        .or_else(|| {
            std::fs::read_to_string("/sys/devices/system/cpu/online")
                .ok()
                .and_then(|l| perfsleuth_measure::parse_cpu_list(&l))
        })
        .unwrap_or_default();
    let changes = perfsleuth_env::diff(&from_env, &to_env);
    let wrapper = if simulation {
        perfsleuth_measure::callgrind::find_valgrind()
            .map(|v| perfsleuth_measure::callgrind::plain_valgrind_argv(&v))
            .map_err(|_| {
                Fail::usage(
                    "the runs are simulation runs and valgrind is not installed",
                    "install valgrind (apt-get install valgrind)",
                )
            })?
    } else {
        Vec::new()
    };
    // A mask can only take away what the benchmark sees: under valgrind,
    // valgrind's CPU, not the host's.
    let flags = simulation
        .then(|| perfsleuth_env::portable::live_active_flags(&wrapper))
        .flatten()
        .or_else(|| here.get("cpu.flags").map(str::to_string))
        .unwrap_or_default();
    let cx = derive::Context {
        here: &here,
        flags,
        simulation,
        portable: portable.is_some(),
        tunables: listed,
        cpus,
    };
    let mut plan = derive::plan(&from_env, &to_env, &changes, &cx);
    notes.append(&mut plan.notes);
    let mut untested: Vec<ExplainUntested> = plan
        .untested
        .iter()
        .map(|u| ExplainUntested {
            key: u.key.clone(),
            summary: u.summary.clone(),
            reason: u.reason.clone(),
        })
        .collect();
    notes.extend(probe_notes(&mut store, &from_env, &to_env, &untested));

    // Checked before measuring: glibc must have read each GLIBC_TUNABLES as
    // meant, or the experiment would be the base set-up under another name.
    let base_settings = plan.base_settings();
    let cannot_base = |why: String| {
        Fail::usage(
            format!(
                "the set-up of {} cannot be reproduced here: {why}",
                from_input.label()
            ),
            "run explain where that set-up can be made (a glibc that reads its GLIBC_TUNABLES, its CPUs)",
        )
    };
    let base_verified = verify(&base_settings, &wrapper).map_err(cannot_base)?;
    let mut variant_notes = Vec::new();
    let mut base = crate::variant::build("base", base_settings.clone(), None, &mut variant_notes)
        .map_err(|f| cannot_base(f.message))?;
    base.name = crate::variant::BASE.to_string();
    // Checked before measuring; one that cannot be made is reported, never
    // measured as if it were the base.
    let mut experiments: Vec<Tried> = Vec::new();
    let mut doc_notes_later = Vec::new();
    let attempt = |e: &Experiment, notes: &mut Vec<String>| -> Result<Tried, String> {
        let settings = plan.settings(e);
        let verified = verify(&settings, &wrapper)?;
        let variant =
            crate::variant::build(&e.name, settings.clone(), None, notes).map_err(|f| f.message)?;
        Ok(Tried {
            experiment: e.clone(),
            settings,
            verified,
            variant,
        })
    };
    for e in &plan.experiments {
        match attempt(e, &mut variant_notes) {
            Ok(t) => experiments.push(t),
            Err(why) => untested.push(ExplainUntested {
                key: e.facts.first().cloned().unwrap_or_default(),
                summary: e.what.clone(),
                reason: format!("the experiment could not be applied: {why}"),
            }),
        }
    }
    // Together: those that applied.
    let applied: Vec<&Experiment> = experiments.iter().map(|t| &t.experiment).collect();
    if let Some(all) = derive::all_together(&applied) {
        match attempt(&all, &mut variant_notes) {
            Ok(t) => experiments.push(t),
            Err(why) => doc_notes_later.push(format!(
                "the experiments could not be applied together: {why}"
            )),
        }
    }
    let experiment_docs: Vec<ExplainExperiment> = experiments
        .iter()
        .map(|t| (&t.experiment, &t.settings, &t.verified))
        .map(|(e, settings, verified)| ExplainExperiment {
            name: e.name.clone(),
            facts: e.facts.clone(),
            what: e.what.clone(),
            spec: settings.join(";"),
            verified: verified.clone(),
        })
        .collect();
    let mut doc = new_doc(&baseline, &candidate, from, mode, notes);
    doc.experiments = experiment_docs;
    doc.untested = untested;
    doc.notes.append(&mut doc_notes_later);
    if !base_verified.is_empty() {
        doc.notes.push(format!(
            "the base set-up is {}'s: {}",
            from_input.label(),
            base_settings.join("; ")
        ));
    }
    if args.plan || (experiments.is_empty() && !matches!(from_input, Input::Current)) {
        if experiments.is_empty() {
            doc.notes.push(
                "no difference between the two set-ups can be reproduced on this machine: nothing was measured".into(),
            );
        }
        doc.benchmarks = benches
            .iter()
            .map(|key| planned_only(observed.as_ref(), key, from, mode))
            .collect();
        return Ok(Explained::planned(doc));
    }

    // Measured: the base and every experiment, interleaved, as one run.
    let mut run_args = run_args(args, template, mode, portable.as_deref())?;
    crate::session::settle(&mut run_args)?;
    let mut c = crate::session::validate(&run_args)?;
    // Experiments are judged once, on their planned rounds.
    c.max_time = std::time::Duration::ZERO;
    let variants: Vec<perfsleuth_runner::Variant> =
        experiments.iter().map(|t| t.variant.clone()).collect();
    let planned = planned_from(&c.planned, template, &benches)?;
    let planned = crate::variant::expand_with_base(planned, &base, &variants)?;
    let mut spawner = crate::session::spawner_or_start(spawner)?;
    let prepared = crate::session::prepare(&c, planned, &mut spawner)?;
    let mut extra = serde_json::Map::new();
    extra.insert(
        "explain".into(),
        serde_json::json!({
            "baseline": doc.baseline,
            "candidate": doc.candidate,
            "baseline_runs": baseline.runs().map(|s| s.runs.iter().filter_map(|r| r.id).collect::<Vec<_>>()),
            "candidate_runs": candidate.runs().map(|s| s.runs.iter().filter_map(|r| r.id).collect::<Vec<_>>()),
            "from": doc.from,
            "experiments": doc.experiments.iter().map(|e| serde_json::json!({"name": e.name, "spec": e.spec})).collect::<Vec<_>>(),
        }),
    );
    let parts = vec![crate::session::Part {
        git: None,
        extra,
        benchmarks: prepared.len(),
        label: "",
    }];
    let m = crate::session::measure(&c, &mut spawner, prepared, parts, &|_, _, _| false)?;
    match m.result {
        Err(Stop::Failed(e)) => return Err(crate::session::runner_fail(e)),
        Err(Stop::Interrupted) => {
            return Ok(Explained::Interrupted(
                perfsleuth_model::exit::ExitCode::interrupted_by(
                    perfsleuth_measure::interrupting_signal(),
                ),
            ));
        }
        Ok(()) => {}
    }
    doc.run = m.run.id;
    doc.measured = true;
    doc.notes.extend(variant_notes);

    // With `current`, the difference to explain is this machine's base
    // against the stored side, measured just now.
    let observed = match observed {
        Some(o) => Some(o),
        None if matches!(from_input, Input::Current) => {
            let now = Side {
                label: "current machine".into(),
                runs: vec![crate::variant::side_run(&m.run, crate::variant::BASE)],
            };
            let other = to_input.runs().expect("the other side has runs");
            let (b, c) = match from {
                From::Baseline => (&now, other),
                From::Candidate => (other, &now),
            };
            opts.history.clear();
            Some(perfsleuth_compare::to_json(&perfsleuth_compare::compare(
                b, c, &opts,
            )))
        }
        None => None,
    };
    let paired = crate::verdict::paired_options(&verdict_args(args))?;
    let base_side = Side {
        label: crate::variant::BASE.into(),
        runs: vec![crate::variant::side_run(&m.run, crate::variant::BASE)],
    };
    let effects: Vec<(String, schema::CompareDoc)> = experiments
        .iter()
        .map(|t| &t.experiment)
        .map(|e| {
            let side = Side {
                label: e.name.clone(),
                runs: vec![crate::variant::side_run(&m.run, &e.name)],
            };
            (
                e.name.clone(),
                perfsleuth_compare::to_json(&perfsleuth_compare::compare(
                    &base_side, &side, &paired,
                )),
            )
        })
        .collect();
    let alpha = paired.rule.alpha;
    doc.benchmarks = benches
        .iter()
        .map(|key| judge(key, observed.as_ref(), from, &effects, alpha))
        .collect();
    Ok(Explained::Doc {
        doc: Box::new(doc),
        stored_note: m.stored_note,
        notes: m.notes,
        warnings: m.warnings,
    })
}

/// The document before anything is measured.
fn new_doc(
    baseline: &Input,
    candidate: &Input,
    from: From,
    mode: Mode,
    notes: Vec<String>,
) -> ExplainDoc {
    ExplainDoc {
        schema: ExplainDoc::SCHEMA.into(),
        schema_version: ExplainDoc::VERSION,
        baseline: baseline.label(),
        candidate: candidate.label(),
        from: from.name().into(),
        mode: mode_name(mode).into(),
        run: None,
        measured: false,
        experiments: Vec::new(),
        untested: Vec::new(),
        benchmarks: Vec::new(),
        notes,
    }
}

fn mode_name(mode: Mode) -> &'static str {
    match mode {
        Mode::Simulation => "simulation",
        _ => "walltime",
    }
}

fn changed(v: VerdictLabel) -> bool {
    matches!(v, VerdictLabel::Regressed | VerdictLabel::Improved)
}

/// The verdict options of `explain`: `compare`'s, judged across machines.
fn explain_options(args: &ExplainArgs) -> Result<perfsleuth_compare::Options, Fail> {
    let mut opts = crate::verdict::options(&verdict_args(args))?;
    opts.machine_override = false;
    Ok(opts)
}

fn verdict_args(args: &ExplainArgs) -> crate::args::VerdictArgs {
    crate::args::VerdictArgs {
        alpha: args.alpha,
        threshold: None,
        metric: args.metric.clone(),
        config: args.config.clone(),
        fail_on: None,
        allow_missing: false,
        require_same_env: false,
        no_history: args.no_history,
    }
}

/// The benchmark keys to explain: those both sides measured (or the one
/// side's, against a fingerprint or `current`), `BENCH` alone if given.
fn benchmarks(
    baseline: &Input,
    candidate: &Input,
    bench: Option<&str>,
) -> Result<Vec<String>, Fail> {
    let keys = |s: &Side| -> Vec<(String, String)> {
        let mut out = Vec::new();
        for r in &s.runs {
            for b in &r.benchmarks {
                let key = perfsleuth_compare::benchmark_key(&b.name, &b.parameters);
                if !out.iter().any(|(k, _)| *k == key) {
                    out.push((key, b.name.clone()));
                }
            }
        }
        out
    };
    let shared: Vec<(String, String)> = match (baseline.runs(), candidate.runs()) {
        (Some(b), Some(c)) => {
            let kc = keys(c);
            let shared: Vec<_> = keys(b)
                .into_iter()
                .filter(|(k, _)| kc.iter().any(|(o, _)| o == k))
                .collect();
            if shared.is_empty() {
                return Err(Fail::usage(
                    format!(
                        "{} and {} share no benchmark: there is no difference to explain",
                        b.label, c.label
                    ),
                    "give two runs of the same commands (`perfsleuth show RUN` lists a run's benchmarks)",
                ));
            }
            shared
        }
        (Some(s), None) | (None, Some(s)) => keys(s),
        (None, None) => Vec::new(),
    };
    if shared.is_empty() {
        return Err(Fail::usage(
            "the stored side has no benchmarks to rerun",
            "give a run that measured commands (`perfsleuth runs` lists them)",
        ));
    }
    let variant_run = [baseline, candidate]
        .iter()
        .filter_map(|i| i.runs())
        .any(|s| {
            s.runs.iter().any(|r| {
                r.benchmarks
                    .iter()
                    .any(|b| b.parameters.contains_key("variant"))
            })
        });
    if variant_run {
        return Err(Fail::usage(
            "a side is a `run --variant` run: its set-ups are variants of one run already",
            "explain two plain runs; `perfsleuth show RUN` compares a run's variants with base",
        ));
    }
    match bench {
        None => Ok(shared.into_iter().map(|(k, _)| k).collect()),
        Some(want) => {
            let chosen: Vec<String> = shared
                .iter()
                .filter(|(k, n)| k == want || n == want)
                .map(|(k, _)| k.clone())
                .collect();
            if chosen.is_empty() {
                return Err(Fail::usage(
                    format!("no benchmark `{want}` on both sides"),
                    format!(
                        "the benchmarks are: {}",
                        shared
                            .iter()
                            .map(|(k, _)| format!("`{k}`"))
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                ));
            }
            Ok(chosen)
        }
    }
}

/// The run configuration of the measurement, built from the stored run's
/// typed options (what it measured besides its commands is measured
/// again), in its mode, with explain's rounds and store. The stored
/// benchmarks replace the plan after validation.
fn run_args(
    args: &ExplainArgs,
    template: &Run,
    mode: Mode,
    portable: Option<&str>,
) -> Result<RunArgs, Fail> {
    let mut r = RunArgs::defaults();
    // A placeholder: the stored benchmarks replace the plan after validation.
    r.commands = vec!["true".into()];
    if mode == Mode::Simulation {
        r.mode = ModeChoice::Simulation;
        match portable {
            Some(b) => r.portable = Some(b.to_string()),
            None => r.no_portable = true,
        }
    }
    r.rounds = args
        .rounds
        .or((mode != Mode::Simulation).then_some(DEFAULT_ROUNDS));
    r.runs = args.runs;
    if let Some(t) = args.time_budget {
        r.time_budget = t;
    }
    r.store = args.store.clone();
    r.no_store = args.no_store;
    // Simulation counts every function already; a profile samples real runs.
    if mode != Mode::Simulation {
        r.profiling = args.profiling;
    } else if args.profiling.profile.when == crate::args::When::On {
        return Err(Fail::usage(
            "--profile samples real runs; these runs are explained in simulation mode, whose counts already name every function",
            "drop --profile, or explain two wall-time runs",
        ));
    }
    // A run made by `run` says how it measured; an import (hyperfine's
    // command times) reruns with the defaults.
    if template.origin() == perfsleuth_model::RunOrigin::Measured
        && let Some(o) = template.run_options()
    {
        r.shell = o.shell;
        r.warmup = o.warmup;
        for (list, option, into) in [
            (o.prepare, "--prepare", &mut r.prepare),
            (o.conclude, "--conclude", &mut r.conclude),
            (o.setup, "--setup", &mut r.setup),
            (o.cleanup, "--cleanup", &mut r.cleanup),
        ] {
            match &list[..] {
                [] => {}
                [one] if !one.contains('{') => *into = list,
                _ => {
                    return Err(Fail::usage(
                        format!(
                            "the stored run has {} {option} command{} ({}): explain reruns runs with one for all their commands",
                            list.len(),
                            if list.len() == 1 {
                                " with parameters"
                            } else {
                                "s"
                            },
                            list.join("; ")
                        ),
                        "explain a run of one benchmark at a time, or one made with a single plain helper",
                    ));
                }
            }
        }
        r.ignore_failure = match o.ignore_failure {
            IgnoreFailure::All(true) => Some("all".into()),
            IgnoreFailure::Codes(codes) if !codes.is_empty() => Some(
                codes
                    .iter()
                    .map(i32::to_string)
                    .collect::<Vec<_>>()
                    .join(","),
            ),
            _ => None,
        };
        r.timeout = o
            .timeout_s
            .map(|t| std::time::Duration::from_millis((t * 1000.0).ceil().max(1.0) as u64));
        r.input = o.input.map(std::path::PathBuf::from);
        if mode == Mode::Simulation {
            r.collect = o.collect;
        }
    }
    // A document on stdout: no progress line beside it.
    if args.format == CompareFormat::Terminal {
        r.color = args.color;
    } else {
        r.style = Some(StyleChoice::None);
        r.color = ColorChoice::Auto;
    }
    Ok(r)
}

/// Rounds of the base and every experiment in wall-time mode, unless `--rounds`.
const DEFAULT_ROUNDS: u32 = 10;

/// The plan of `run` with the stored benchmarks `keys` of `template` as its
/// commands, each checked to still exist here.
fn planned_from(
    validated: &[perfsleuth_runner::Planned],
    template: &Run,
    keys: &[String],
) -> Result<Vec<perfsleuth_runner::Planned>, Fail> {
    let proto = validated
        .first()
        .cloned()
        .ok_or_else(|| Fail::usage("nothing to measure", "please report this"))?;
    let mut out = Vec::new();
    for key in keys {
        let Some(b) = template
            .benchmarks
            .iter()
            .find(|b| &perfsleuth_compare::benchmark_key(&b.name, &b.parameters) == key)
        else {
            return Err(Fail::usage(
                format!(
                    "`{key}` is not among the benchmarks of the newest run of the side explain reruns"
                ),
                "give that side as one run (an id), or name the benchmark to explain",
            ));
        };
        // An import's numbers are its tool's per-iteration times: rerunning
        // the command would time something else. hyperfine's are the
        // command's own wall times, so those rerun.
        let imported = &template.options["import"];
        if template.origin() == perfsleuth_model::RunOrigin::Import
            && imported["format"] != "hyperfine"
        {
            return Err(Fail::usage(
                format!(
                    "`{key}` was imported from {} output: explain reruns a benchmark's command, and these numbers are not that command's wall time",
                    imported["tool"].as_str().unwrap_or("another tool's")
                ),
                "run the suite on each set-up and `perfsleuth import` each result, then compare them",
            ));
        }
        let argv = if b.argv.is_empty() {
            b.command.split_whitespace().map(String::from).collect()
        } else {
            b.argv.clone()
        };
        let Some(program) = argv.first() else {
            return Err(Fail::usage(
                format!("`{key}` has no command stored"),
                "rerun it with `perfsleuth run` first",
            ));
        };
        let path = std::env::var_os("PATH");
        if let Err(e) = perfsleuth_measure::resolve_program(program, path.as_deref()) {
            return Err(Fail::usage(
                format!("`{key}`: {e}: its command no longer exists on this machine"),
                "rebuild or reinstall it, or run explain where it exists",
            ));
        }
        let mut p = proto.clone();
        p.name = b.name.clone();
        p.command = b.command.clone();
        p.argv = argv;
        p.parameters = b.parameters.clone();
        out.push(p);
    }
    Ok(out)
}

/// Runs the loader under each GLIBC_TUNABLES a set-up writes and checks
/// glibc applied it; other settings are checked on the child itself.
fn verify(settings: &[String], wrapper: &[String]) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    for s in settings {
        if let Some(value) = s.strip_prefix("env:GLIBC_TUNABLES=") {
            let applied =
                perfsleuth_env::portable::check_applied_live(value, wrapper).map_err(|r| r.0)?;
            out.extend(applied);
        }
    }
    Ok(out)
}

/// What the machines' probe runs say about the differences nothing tests.
fn probe_notes(
    store: &mut StoreHandle,
    from: &Environment,
    to: &Environment,
    untested: &[ExplainUntested],
) -> Vec<String> {
    let fixed = untested.iter().any(|u| {
        u.key.starts_with("kernel.")
            || u.key.starts_with("mitigation.")
            || u.key.starts_with("cpu.")
    });
    if !fixed {
        return Vec::new();
    }
    match selectors::existing_store(store) {
        Some(s) => perfsleuth_sides::probe_notes(s, from, to),
        None => Vec::new(),
    }
}

fn ratio_of(change: &Option<schema::RelativeChange>) -> Option<ExplainRatio> {
    let c = change.as_ref()?;
    let (r, lo, hi) = (c.change?, c.ci_low?, c.ci_high?);
    Some(ExplainRatio {
        ratio: 1.0 + r,
        ci_low: 1.0 + lo,
        ci_high: 1.0 + hi,
    })
}

fn observed_row<'a>(doc: &'a schema::CompareDoc, key: &str) -> Option<&'a schema::CompareRow> {
    doc.rows.iter().find(|r| r.key == key && r.gating)
}

fn nothing_to_explain(doc: &schema::CompareDoc, key: &str) -> ExplainBenchmark {
    let row = observed_row(doc, key);
    let verdict = row.map(|r| r.verdict);
    ExplainBenchmark {
        key: key.to_string(),
        metric: row.map_or(perfsleuth_model::Metric::Wall, |r| r.metric),
        unit: row.map_or(String::new(), |r| r.unit.clone()),
        observed: row.and_then(|r| ratio_of(&r.change)),
        observed_verdict: verdict,
        expected: None,
        findings: Vec::new(),
        conclusion: match verdict {
            Some(VerdictLabel::Inconclusive) => {
                "the two sides cannot be told apart or shown equal (inconclusive): measure more before explaining".into()
            }
            Some(VerdictLabel::InsufficientData) => {
                "too few samples on a side to tell whether they differ: nothing to explain yet".into()
            }
            _ => "no difference beyond noise: nothing to explain".into(),
        },
    }
}

fn planned_only(
    observed: Option<&schema::CompareDoc>,
    key: &str,
    from: From,
    mode: Mode,
) -> ExplainBenchmark {
    let row = observed.and_then(|d| observed_row(d, key));
    let ratio = row.and_then(|r| ratio_of(&r.change));
    // What `compare` would gate on in this mode.
    let metric = row.map(|r| r.metric).unwrap_or_else(|| match mode {
        Mode::Simulation => {
            perfsleuth_model::Metric::parse("Ir").unwrap_or(perfsleuth_model::Metric::Wall)
        }
        _ => perfsleuth_model::Metric::Wall,
    });
    ExplainBenchmark {
        key: key.to_string(),
        metric,
        unit: row.map_or(metric.unit().to_string(), |r| r.unit.clone()),
        expected: ratio.as_ref().map(|r| expected(r.ratio, from)),
        observed: ratio,
        observed_verdict: row.map(|r| r.verdict),
        findings: Vec::new(),
        conclusion: "not measured".into(),
    }
}

/// The effect here of reproducing all of an observed ratio `r`: the ratio
/// itself when starting from the baseline, its inverse from the candidate.
fn expected(r: f64, from: From) -> f64 {
    match from {
        From::Baseline => r,
        From::Candidate => 1.0 / r,
    }
}

/// One benchmark's findings, ranked, and the sentence that sums them up.
fn judge(
    key: &str,
    observed: Option<&schema::CompareDoc>,
    from: From,
    effects: &[(String, schema::CompareDoc)],
    alpha: f64,
) -> ExplainBenchmark {
    let row = observed.and_then(|d| observed_row(d, key));
    let obs = row.and_then(|r| ratio_of(&r.change));
    let obs_verdict = row.map(|r| r.verdict);
    // Shares only of a difference beyond noise.
    let target = obs
        .as_ref()
        .filter(|_| obs_verdict.is_some_and(changed))
        .map(|r| expected(r.ratio, from))
        .filter(|e| e.is_finite() && *e > 0.0 && (e.ln()).abs() > 1e-9);
    let rows: Vec<Option<&schema::CompareRow>> = effects
        .iter()
        .map(|(_, d)| d.rows.iter().find(|r| r.key == key && r.gating))
        .collect();
    let p: Vec<f64> = rows
        .iter()
        .map(|r| r.and_then(|r| r.p_value).unwrap_or(f64::NAN))
        .collect();
    let adjusted = perfsleuth_stats::holm_adjusted(&p)
        .into_iter()
        .map(|p| (!p.is_nan()).then_some(p));
    let mut findings: Vec<ExplainFinding> = effects
        .iter()
        .zip(&rows)
        .zip(adjusted)
        .map(|(((name, _), r), p_holm)| {
            let effect = r.and_then(|r| ratio_of(&r.change));
            let verdict = r.map_or(VerdictLabel::InsufficientData, |r| r.verdict);
            let significant = changed(verdict) && p_holm.is_none_or(|p| p <= alpha);
            let share = match (&effect, target) {
                (Some(e), Some(t)) => {
                    let s = |x: f64| x.ln() / t.ln();
                    let (a, b) = (s(e.ci_low), s(e.ci_high));
                    Some(ExplainRatio {
                        ratio: s(e.ratio),
                        ci_low: a.min(b),
                        ci_high: a.max(b),
                    })
                    .filter(|x| {
                        x.ratio.is_finite() && x.ci_low.is_finite() && x.ci_high.is_finite()
                    })
                }
                _ => None,
            };
            let outcome = if !significant {
                if verdict == VerdictLabel::NoChange {
                    ExplainOutcome::NoEffect
                } else {
                    ExplainOutcome::Inconclusive
                }
            } else {
                match &share {
                    None => ExplainOutcome::Changes,
                    Some(s) if s.ratio < 0.0 => ExplainOutcome::Opposite,
                    Some(s) if s.ratio >= 0.5 => ExplainOutcome::Reproduces,
                    Some(_) => ExplainOutcome::Partly,
                }
            };
            ExplainFinding {
                experiment: name.clone(),
                effect,
                verdict,
                p_value: r.and_then(|r| r.p_value),
                p_holm,
                share,
                outcome,
            }
        })
        .collect();
    let rank = |f: &ExplainFinding| match f.outcome {
        ExplainOutcome::Reproduces => 0,
        ExplainOutcome::Partly => 1,
        ExplainOutcome::Changes => 2,
        ExplainOutcome::Opposite => 3,
        ExplainOutcome::Inconclusive => 4,
        ExplainOutcome::NoEffect => 5,
    };
    let size = |f: &ExplainFinding| {
        f.share
            .as_ref()
            .map(|s| (s.ratio - 1.0).abs())
            .or(f.effect.as_ref().map(|e| -e.ratio.ln().abs()))
            .unwrap_or(0.0)
    };
    // `all` comes last: what the experiments do together, after each alone.
    findings.sort_by(|a, b| {
        (a.experiment == "all")
            .cmp(&(b.experiment == "all"))
            .then(rank(a).cmp(&rank(b)))
            .then(
                size(a)
                    .partial_cmp(&size(b))
                    .unwrap_or(std::cmp::Ordering::Equal),
            )
    });
    let conclusion = conclusion(&findings, target.is_some(), obs_verdict);
    ExplainBenchmark {
        key: key.to_string(),
        metric: row
            .or(rows.iter().flatten().next().copied())
            .map_or(perfsleuth_model::Metric::Wall, |r| r.metric),
        unit: row
            .or(rows.iter().flatten().next().copied())
            .map_or(String::new(), |r| r.unit.clone()),
        observed: obs,
        observed_verdict: obs_verdict,
        expected: target,
        findings,
        conclusion,
    }
}

/// Counted (simulated) effects have no spread: their interval is a point.
pub fn exact(r: &ExplainRatio) -> bool {
    (r.ci_high - r.ci_low).abs() <= 1e-12 * r.ratio.abs().max(1.0)
}

/// An effect as text: the change and its interval, or "(exact)".
pub fn change_text(r: &ExplainRatio) -> String {
    if exact(r) {
        return format!("{} (exact)", format_change(r.ratio - 1.0));
    }
    format!(
        "{} ({} … {})",
        format_change(r.ratio - 1.0),
        format_change(r.ci_low - 1.0),
        format_change(r.ci_high - 1.0)
    )
}

/// The answer for one benchmark, from its ranked findings: the experiment
/// that reproduces the difference, or that none does. Never a guess.
pub fn conclusion(
    findings: &[ExplainFinding],
    has_target: bool,
    observed: Option<VerdictLabel>,
) -> String {
    let named = |f: &ExplainFinding| format!("`{}`", f.experiment);
    let eff = |f: &ExplainFinding| f.effect.as_ref().map_or(MISSING.into(), change_text);
    let pct = |f: &ExplainFinding| {
        f.share.as_ref().map_or(String::new(), |s| {
            perfsleuth_model::quantity::format_share(s.ratio, 0)
        })
    };
    if !has_target {
        if observed.is_some() {
            let why = match observed {
                Some(VerdictLabel::Inconclusive) => {
                    "the two sides cannot be told apart or shown equal (inconclusive)"
                }
                _ => "no difference beyond noise between the two sides",
            };
            return format!("{why}: nothing to explain");
        }
        let moving: Vec<String> = findings
            .iter()
            .filter(|f| f.outcome == ExplainOutcome::Changes)
            .map(|f| format!("{} {}", named(f), eff(f)))
            .collect();
        return if moving.is_empty() {
            "no experiment changes the result beyond noise here".into()
        } else {
            format!("changes the result here: {}", moving.join("; "))
        };
    }
    let singles: Vec<&ExplainFinding> = findings.iter().filter(|f| f.experiment != "all").collect();
    let all = findings.iter().find(|f| f.experiment == "all");
    let best = singles
        .iter()
        .find(|f| f.outcome == ExplainOutcome::Reproduces);
    if let Some(f) = best {
        let others: Vec<String> = singles
            .iter()
            .filter(|o| o.outcome == ExplainOutcome::NoEffect)
            .map(|o| named(o))
            .collect();
        return format!(
            "{} reproduces the difference: {} here, {} of the observed difference{}",
            named(f),
            eff(f),
            pct(f),
            if others.is_empty() {
                String::new()
            } else {
                format!("; no effect: {}", others.join(", "))
            }
        );
    }
    if let Some(a) = all.filter(|a| a.outcome == ExplainOutcome::Reproduces) {
        return format!(
            "the experiments together reproduce the difference ({} here, {}), no single one does",
            eff(a),
            pct(a)
        );
    }
    let partly: Vec<String> = singles
        .iter()
        .filter(|f| f.outcome == ExplainOutcome::Partly)
        .map(|f| format!("{} {}", named(f), pct(f)))
        .collect();
    if !partly.is_empty() {
        return format!(
            "nothing tested reproduces most of the difference; part of it: {}. The rest is not explained by what could be tested here",
            partly.join(", ")
        );
    }
    "nothing tested here reproduces the difference: its cause is not among the experiments (see what could not be tested)".into()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_expected_effect_is_inverted_when_starting_from_the_candidate() {
        assert_eq!(expected(2.0, From::Baseline), 2.0);
        assert_eq!(expected(2.0, From::Candidate), 0.5);
    }
}
