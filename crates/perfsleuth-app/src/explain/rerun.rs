//! What is measured again: the stored benchmarks, the run configuration
//! they were measured with, and the plan of one experiment per difference.

use crate::error::Fail;
use crate::explain::sides::Input;
use crate::options::ColorChoice;
use crate::options::CompareFormat;
use crate::options::ExplainOptions;
use crate::options::RunOptions;
use crate::options::StyleChoice;
use crate::sides as selectors;
use crate::sides::StoreHandle;
use perfsleuth_compare::Side;
use perfsleuth_model::Environment;
use perfsleuth_model::Mode;
use perfsleuth_model::Run;
use perfsleuth_model::schema::ExplainUntested;
use perfsleuth_model::schema::IgnoreFailure;

/// The benchmark keys to explain: those both sides measured (or the one
/// side's, against a fingerprint or `current`), `BENCH` alone if given.
pub(crate) fn benchmarks(
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
pub(crate) fn run_args(
    args: &ExplainOptions,
    template: &Run,
    mode: Mode,
    portable: Option<&str>,
) -> Result<RunOptions, Fail> {
    // One command, as the prototype of every benchmark's plan: the stored
    // benchmarks replace its name, command and parameters after validation.
    let mut r = RunOptions {
        commands: vec!["true".into()],
        ..RunOptions::default()
    };
    if mode == Mode::Simulation {
        r.mode = Mode::Simulation;
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
    } else if args.profiling.profile.when == crate::options::When::On {
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
pub(crate) const DEFAULT_ROUNDS: u32 = 10;

/// The plan of `run` with the stored benchmarks `keys` of `template` as its
/// commands, each checked to still exist here.
pub(crate) fn planned_from(
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
pub(crate) fn verify(settings: &[String], wrapper: &[String]) -> Result<Vec<String>, String> {
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
pub(crate) fn probe_notes(
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
