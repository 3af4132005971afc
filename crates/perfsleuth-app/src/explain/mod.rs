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

use crate::error::Fail;
use crate::options::ExplainOptions;
use crate::sides::StoreHandle;
use derive::Experiment;
use perfsleuth_compare::Side;
use perfsleuth_measure::Spawner;
use perfsleuth_model::Mode;
use perfsleuth_model::schema::{
    self, Document, ExplainBenchmark, ExplainDoc, ExplainExperiment, ExplainUntested, VerdictLabel,
};
use perfsleuth_runner::Stop;

mod judge;
mod rerun;
mod sides;
pub use judge::*;
use rerun::*;
use sides::*;

/// An experiment that could be made: its settings, what glibc was seen
/// to apply, and its variant.
struct Tried {
    experiment: Experiment,
    settings: Vec<String>,
    verified: Vec<String>,
    variant: perfsleuth_runner::Variant,
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
pub fn explain(args: &ExplainOptions, spawner: Option<Spawner>) -> Result<Explained, Fail> {
    let mut store = StoreHandle::new(args.store.clone());
    let sides = Sides::resolve(args, &mut store)?;
    let source = sides
        .starting()
        .runs()
        .or(sides.other().runs())
        .expect("one side has runs");
    let template = perfsleuth_compare::newest(source).expect("a side has a run");
    let x = Explaining {
        args,
        sides: &sides,
        template,
        mode: template.mode,
        benches: benchmarks(&sides.baseline, &sides.candidate, args.bench.as_deref())?,
    };
    let notes = x.identity_notes();

    // The observed difference, judged by the rule of `compare` across the
    // machines (its verdict is what there is to explain).
    let opts = explain_options(args)?;
    let observed = match (sides.baseline.runs(), sides.candidate.runs()) {
        (Some(b), Some(c)) => Some(perfsleuth_compare::to_json(&perfsleuth_compare::compare(
            b, c, &opts,
        ))),
        _ => None,
    };
    if let Some(doc) = &observed
        && !x.differs(doc)
        && !args.plan
    {
        let mut out = x.new_doc(notes);
        out.benchmarks = x
            .benches
            .iter()
            .map(|key| nothing_to_explain(doc, key))
            .collect();
        return Ok(Explained::planned(out));
    }

    let simulation = x.mode == Mode::Simulation;
    let (portable, wrapper, cx) = experiment_context(template, &sides.here, simulation)?;
    let (mut doc, tries) = x.plan_experiments(&mut store, &cx, &wrapper, notes)?;
    if args.plan || (tries.experiments.is_empty() && !matches!(sides.starting(), Input::Current)) {
        x.plan_only(&mut doc, tries.experiments.is_empty(), observed.as_ref());
        return Ok(Explained::planned(doc));
    }

    let m = x.measure(&tries, &doc, portable.as_deref(), spawner)?;
    match m.result {
        Err(Stop::Failed(e)) => return Err(Fail::from(e)),
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
    doc.notes.extend(tries.variant_notes);
    let observed = x.observed_or_now(observed, &m.run, opts);
    doc.benchmarks = x.judge(&m.run, observed.as_ref(), &tries.experiments)?;
    Ok(Explained::Doc {
        doc: Box::new(doc),
        stored_note: m.stored_note,
        notes: m.notes,
        warnings: m.warnings,
    })
}

/// What every step of `explain` reads: its options, the sides, the stored
/// run whose benchmarks are rerun, and which of them are explained.
struct Explaining<'a> {
    args: &'a ExplainOptions,
    sides: &'a Sides,
    template: &'a perfsleuth_model::Run,
    mode: Mode,
    benches: Vec<String>,
}

impl Explaining<'_> {
    /// Where this machine is not the one the starting side ran on: the
    /// experiments run here all the same, from this machine as it is.
    fn identity_notes(&self) -> Vec<String> {
        let mut notes = Vec::new();
        let gap = identity_gap(&self.sides.from_env, &self.sides.here);
        if !gap.is_empty() {
            notes.push(format!(
                "this machine is not the one {} ran on ({}): the experiments run here, starting from this machine as it is",
                self.sides.starting().label(),
                gap.iter()
                    .take(3)
                    .map(|c| c.summary.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            ));
        }
        notes
    }

    /// Whether the observed comparison `doc` found a change in a gating row
    /// of an explained benchmark: something to explain.
    fn differs(&self, doc: &schema::CompareDoc) -> bool {
        self.benches.iter().any(|key| {
            doc.rows
                .iter()
                .any(|r| &r.key == key && r.gating && changed(r.verdict))
        })
    }

    fn new_doc(&self, notes: Vec<String>) -> ExplainDoc {
        let s = self.sides;
        new_doc(&s.baseline, &s.candidate, s.from, self.mode, notes)
    }

    /// The experiments derived from the sides' differences, made and
    /// checked, and the document that lists them and what is left untested.
    fn plan_experiments(
        &self,
        store: &mut StoreHandle,
        cx: &derive::Context,
        wrapper: &[String],
        mut notes: Vec<String>,
    ) -> Result<(ExplainDoc, Tries), Fail> {
        let s = self.sides;
        let changes = perfsleuth_env::diff(&s.from_env, &s.to_env);
        let mut plan = derive::plan(&s.from_env, &s.to_env, &changes, cx);
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
        notes.extend(probe_notes(store, &s.from_env, &s.to_env, &untested));

        let from_label = s.starting().label();
        let mut tries = try_experiments(&plan, wrapper, &from_label)?;
        untested.append(&mut tries.not_applied);
        let experiment_docs: Vec<ExplainExperiment> = tries
            .experiments
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
        let mut doc = self.new_doc(notes);
        doc.experiments = experiment_docs;
        doc.untested = untested;
        doc.notes.append(&mut tries.doc_notes_later);
        if !tries.base_verified.is_empty() {
            doc.notes.push(format!(
                "the base set-up is {}'s: {}",
                from_label,
                tries.base_settings.join("; ")
            ));
        }
        Ok((doc, tries))
    }

    /// Nothing is measured (`--plan`, or nothing to reproduce): each
    /// benchmark with its observed verdict only.
    fn plan_only(
        &self,
        doc: &mut ExplainDoc,
        no_experiment: bool,
        observed: Option<&schema::CompareDoc>,
    ) {
        if no_experiment {
            doc.notes.push(
                "no difference between the two set-ups can be reproduced on this machine: nothing was measured".into(),
            );
        }
        doc.benchmarks = self
            .benches
            .iter()
            .map(|key| planned_only(observed, key, self.sides.from, self.mode))
            .collect();
    }

    /// The base and every experiment, measured interleaved as one run.
    fn measure(
        &self,
        tries: &Tries,
        doc: &ExplainDoc,
        portable: Option<&str>,
        spawner: Option<Spawner>,
    ) -> Result<crate::session::Measurement, Fail> {
        let (args, template) = (self.args, self.template);
        let mut run_args = run_args(args, template, self.mode, portable)?;
        crate::session::settle(&mut run_args)?;
        let mut c = crate::session::validate(&run_args)?;
        // Experiments are judged once, on their planned rounds.
        c.max_time = std::time::Duration::ZERO;
        let variants: Vec<perfsleuth_runner::Variant> = tries
            .experiments
            .iter()
            .map(|t| t.variant.clone())
            .collect();
        let planned = planned_from(&c.planned, template, &self.benches)?;
        let planned = crate::variant::expand_with_base(planned, &tries.base, &variants)?;
        let mut spawner = crate::session::spawner_or_start(spawner)?;
        let prepared = crate::session::prepare(&c, planned, &mut spawner)?;
        let (baseline, candidate) = (&self.sides.baseline, &self.sides.candidate);
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
        crate::session::measure(&c, &mut spawner, prepared, parts, &|_, _, _| false)
    }

    /// The difference to explain: the observed one, or with `current` this
    /// machine's base (measured just now in `run`) against the stored side.
    fn observed_or_now(
        &self,
        observed: Option<schema::CompareDoc>,
        run: &perfsleuth_model::Run,
        mut opts: perfsleuth_compare::Options,
    ) -> Option<schema::CompareDoc> {
        match observed {
            Some(o) => Some(o),
            None if matches!(self.sides.starting(), Input::Current) => {
                let other = self.sides.other().runs().expect("the other side has runs");
                opts.history.clear();
                Some(measured_now(run, other, self.sides.from, &opts))
            }
            None => None,
        }
    }

    /// Each benchmark's explanation: the experiments' effects in `run`,
    /// paired with their base, against the observed difference.
    fn judge(
        &self,
        run: &perfsleuth_model::Run,
        observed: Option<&schema::CompareDoc>,
        experiments: &[Tried],
    ) -> Result<Vec<ExplainBenchmark>, Fail> {
        let paired = crate::verdict::paired_options(&verdict_args(self.args))?;
        let effects = effects(run, experiments, &paired);
        let alpha = paired.rule.alpha;
        Ok(self
            .benches
            .iter()
            .map(|key| judge(key, observed, self.sides.from, &effects, alpha))
            .collect())
    }
}

/// What the experiments are derived and checked with: how the stored runs
/// were counted (their portable profile), the wrapper they run under
/// (valgrind in simulation) and what this machine offers (its CPU flags
/// as the benchmark sees them, glibc's tunables, the CPUs this process
/// may use).
fn experiment_context<'h>(
    template: &perfsleuth_model::Run,
    here: &'h perfsleuth_model::Environment,
    simulation: bool,
) -> Result<(Option<String>, Vec<String>, derive::Context<'h>), Fail> {
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
        here,
        flags,
        simulation,
        portable: portable.is_some(),
        tunables: listed,
        cpus,
    };
    Ok((portable, wrapper, cx))
}

/// The base set-up and each experiment, made and checked before anything
/// is measured; what cannot be made is said, never measured as the base.
struct Tries {
    base: perfsleuth_runner::Variant,
    base_settings: Vec<String>,
    /// What glibc was seen to apply of the base's settings.
    base_verified: Vec<String>,
    experiments: Vec<Tried>,
    /// The experiments that could not be applied, and why.
    not_applied: Vec<ExplainUntested>,
    /// What building the variants said.
    variant_notes: Vec<String>,
    /// Notes for the document (the experiments together, where they failed).
    doc_notes_later: Vec<String>,
}

/// Makes the base set-up of the side `from_label` and every experiment of
/// `plan` under `wrapper`, each one alone and then all together.
fn try_experiments(
    plan: &derive::Plan,
    wrapper: &[String],
    from_label: &str,
) -> Result<Tries, Fail> {
    // Checked before measuring: glibc must have read each GLIBC_TUNABLES as
    // meant, or the experiment would be the base set-up under another name.
    let base_settings = plan.base_settings();
    let cannot_base = |why: String| {
        Fail::usage(
            format!(
                "the set-up of {} cannot be reproduced here: {why}",
                from_label
            ),
            "run explain where that set-up can be made (a glibc that reads its GLIBC_TUNABLES, its CPUs)",
        )
    };
    let base_verified = verify(&base_settings, wrapper).map_err(cannot_base)?;
    let mut variant_notes = Vec::new();
    let mut base = crate::variant::build("base", base_settings.clone(), None, &mut variant_notes)
        .map_err(|f| cannot_base(f.message))?;
    base.name = crate::variant::BASE.to_string();
    // Checked before measuring; one that cannot be made is reported, never
    // measured as if it were the base.
    let mut experiments: Vec<Tried> = Vec::new();
    let mut not_applied = Vec::new();
    let mut doc_notes_later = Vec::new();
    let attempt = |e: &Experiment, notes: &mut Vec<String>| -> Result<Tried, String> {
        let settings = plan.settings(e);
        let verified = verify(&settings, wrapper)?;
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
            Err(why) => not_applied.push(ExplainUntested {
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
    Ok(Tries {
        base,
        base_settings,
        base_verified,
        experiments,
        not_applied,
        variant_notes,
        doc_notes_later,
    })
}

/// This machine's base, measured just now in `run`, against the stored
/// side `other`, in the order of the sides given.
fn measured_now(
    run: &perfsleuth_model::Run,
    other: &Side,
    from: From,
    opts: &perfsleuth_compare::Options,
) -> schema::CompareDoc {
    let now = Side {
        label: "current machine".into(),
        runs: vec![crate::variant::side_run(run, crate::variant::BASE)],
    };
    let (b, c) = match from {
        From::Baseline => (&now, other),
        From::Candidate => (other, &now),
    };
    perfsleuth_compare::to_json(&perfsleuth_compare::compare(b, c, opts))
}

/// Each experiment of `run` against its base, paired run by run.
fn effects(
    run: &perfsleuth_model::Run,
    experiments: &[Tried],
    paired: &perfsleuth_compare::Options,
) -> Vec<(String, schema::CompareDoc)> {
    let base_side = Side {
        label: crate::variant::BASE.into(),
        runs: vec![crate::variant::side_run(run, crate::variant::BASE)],
    };
    experiments
        .iter()
        .map(|t| &t.experiment)
        .map(|e| {
            let side = Side {
                label: e.name.clone(),
                runs: vec![crate::variant::side_run(run, &e.name)],
            };
            (
                e.name.clone(),
                perfsleuth_compare::to_json(&perfsleuth_compare::compare(
                    &base_side, &side, paired,
                )),
            )
        })
        .collect()
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
fn explain_options(args: &ExplainOptions) -> Result<perfsleuth_compare::Options, Fail> {
    let mut opts = crate::verdict::options(&verdict_args(args))?;
    opts.machine_override = false;
    Ok(opts)
}

fn verdict_args(args: &ExplainOptions) -> crate::options::VerdictOptions {
    crate::options::VerdictOptions {
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_expected_effect_is_inverted_when_starting_from_the_candidate() {
        assert_eq!(expected(2.0, From::Baseline), 2.0);
        assert_eq!(expected(2.0, From::Candidate), 0.5);
    }
}
