//! `perfsleuth probe` (machine microbenchmarks, stored with the environment
//! they ran in), `perfsleuth probe diff A B` (what differs and which facts
//! explain it), and the probe notes `compare` adds when both machines have
//! been probed. The measuring, the diff, the rendering, the JSON documents
//! and the notes' wording are `perfsleuth-probe`'s; this module chooses
//! probes and sides, stores, looks up probe runs and prints.

use crate::cli::{ColorChoice, ProbeArgs, ProbeCommand, ProbeDiffArgs};
use crate::error::Fail;
use crate::output;
use crate::sink::StoreSink;
use crate::term::{ProgressLine, emit, use_color};
use perfsleuth_model::exit::ExitCode;
use perfsleuth_model::schema::{self, Document, ProbeDoc, RunExport};
use perfsleuth_model::{Mode, Run, RunStatus};
use perfsleuth_probe::{CacheSizes, PROBES, ProbeOptions, ProbeReport};
use perfsleuth_report::probe::{ProbeSide, clock_line};
use perfsleuth_store::{RunKind, Store, comparability_hash};
use std::path::Path;

/// Runs `perfsleuth probe` or `perfsleuth probe diff` and returns the exit code.
pub fn probe(args: ProbeArgs) -> Result<i32, Fail> {
    match args.action {
        Some(ProbeCommand::Diff(d)) => diff_command(d),
        None => suite(args),
    }
}

/// Resolves probe names, or fails before anything runs.
fn names(given: &[String]) -> Result<Vec<&'static str>, Fail> {
    perfsleuth_probe::parse_names(given).map_err(|e| {
        // Options before `diff` make clap read it as a probe name.
        let hint = if e.name == "diff" {
            "`diff` is a subcommand: options go after it, e.g. `perfsleuth probe diff A B --full`"
        } else {
            "e.g. `perfsleuth probe --quick calls syscall`; `perfsleuth probe --list` says what each measures"
        };
        Fail::usage(e.to_string(), hint)
    })
}

/// `perfsleuth probe [NAME…]`.
fn suite(args: ProbeArgs) -> Result<i32, Fail> {
    if args.list {
        let mut out = String::new();
        for p in PROBES {
            out.push_str(&format!("{p:<10} {}\n", perfsleuth_probe::describe(p)));
        }
        emit(&out, false);
        return Ok(0);
    }
    let names = names(&args.names)?;
    let store = if args.no_store {
        None
    } else {
        Some(output::open_store(args.store.store.as_deref())?)
    };
    let color = use_color(args.color, false);
    let show_each = !args.json;
    let all = args.all;
    let mut first = true;
    let measured = measure(&names, args.quick, store, |report| {
        if show_each {
            let mut text = String::new();
            if !first {
                text.push('\n');
            }
            first = false;
            text.push_str(&perfsleuth_report::probe::render_report(report, all, color));
            emit(&text, false);
        }
    })?;
    let run = &measured.run;
    if args.json {
        let doc = perfsleuth_report::probe::probe_document(
            run,
            &measured.reports,
            comparability_hash(&run.environment),
        );
        print_json(&doc)?;
    } else if let Some(clock) = clock_line(&measured.reports) {
        emit(&format!("\n{clock}\n"), false);
    }
    match run.status {
        RunStatus::Interrupted => {
            let ids: Vec<i64> = run.id.into_iter().collect();
            emit(
                &perfsleuth_app::session::interrupted_line("the probes finished so far", &ids, ""),
                true,
            );
            Ok(ExitCode::interrupted_by(
                perfsleuth_measure::interrupting_signal(),
            ))
        }
        RunStatus::Failed => Err(Fail::usage(
            "no probe produced a number",
            "the messages above say why; try `perfsleuth probe --quick calls`",
        )),
        _ => {
            if let (Some(id), Some(store)) = (run.id, measured.store.as_ref()) {
                let note = format!("Stored as run {id} in {}\n", store.location().display());
                emit(&output::dim(&note, use_color(args.color, true)), true);
            }
            Ok(0)
        }
    }
}

/// What one probe session produced.
struct Measured {
    /// The run, with `probes` filled and its final status.
    run: Run,
    /// Each probe's full report (messages, duration, clock).
    reports: Vec<ProbeReport>,
    /// The store the run went to, if any.
    store: Option<crate::output::AnyStore>,
}

/// Captures the environment, sets the probes' options from it and hands the
/// suite to the runner (`perfsleuth_runner::probe_suite`), which stores each
/// probe's results as soon as it finishes and ends the run. `each` sees
/// every report as it arrives.
fn measure(
    names: &[&'static str],
    quick: bool,
    mut store: Option<crate::output::AnyStore>,
    each: impl FnMut(&ProbeReport),
) -> Result<Measured, Fail> {
    let environment = perfsleuth_runner::capture_environment(&perfsleuth_env::Source::live());
    let opts = ProbeOptions {
        quick,
        caches: CacheSizes::from_environment(&environment),
        // Leave the cgroup room for everything else this process holds.
        max_buffer: environment
            .get("cgroup.memory.max")
            .and_then(|v| v.trim().parse::<u64>().ok())
            .map(|limit| limit / 2),
        ..ProbeOptions::default()
    };
    let mut run = crate::output::new_run(
        Mode::Probe,
        serde_json::to_value(perfsleuth_model::schema::ProbeRunOptions {
            probes: names.iter().map(|n| n.to_string()).collect(),
            quick,
        })
        .unwrap_or_default(),
        environment,
    );
    let mut sink = StoreSink::begin(
        store.as_deref_mut().map(|s| s as &mut dyn Store),
        &mut run,
        &[],
        ProgressLine::new(false),
    )?;
    perfsleuth_app::session::catch_interrupts()?;
    let result = perfsleuth_runner::probe_suite(names, &opts, &mut run, &mut sink, each);
    sink.progress.clear();
    drop(sink);
    let reports = result.map_err(Fail::from)?;
    Ok(Measured {
        run,
        reports,
        store,
    })
}

/// Prints a stored probe run (`perfsleuth show`).
pub fn print_stored(run: &Run, all: bool, color: ColorChoice) {
    let text = perfsleuth_report::probe::render_stored(
        run,
        &comparability_hash(&run.environment),
        all,
        use_color(color, false),
    );
    emit(&text, false);
}

fn print_json<T: serde::Serialize>(doc: &T) -> Result<(), Fail> {
    let text = schema::to_json_pretty(doc)
        .map_err(|e| Fail::usage(format!("cannot serialise JSON: {e}"), "please report this"))?;
    emit(&text, false);
    Ok(())
}

// ---------------------------------------------------------------- diff

/// A stored or exported probe run as a `probe diff` side.
fn side_of_run(label: String, run: Run) -> ProbeSide {
    let comparability = comparability_hash(&run.environment);
    ProbeSide::from_run(label, run, comparability)
}

const SIDE_HINT: &str = "give a run id, latest, latest~N (probe runs), current, or a file from `perfsleuth probe --json`";

/// `perfsleuth probe diff A B`.
fn diff_command(args: ProbeDiffArgs) -> Result<i32, Fail> {
    let mut store: Option<crate::output::AnyStore> = None;
    let store_url = args.store.store.clone();
    let is_current = |s: &str| s == "current";
    // Resolve stored and file sides first: `current` runs the probes the other side has.
    let a = match is_current(&args.a) {
        true => None,
        false => Some(resolve_side(&args.a, &mut store, store_url.as_deref())?),
    };
    let b = match is_current(&args.b) {
        true => None,
        false => Some(resolve_side(&args.b, &mut store, store_url.as_deref())?),
    };
    // `current` on both sides probes twice: how far this machine moves between runs.
    let wanted: Vec<&'static str> = match a.as_ref().or(b.as_ref()) {
        Some(other) => other.probes(),
        None => PROBES.to_vec(),
    };
    // Like with like: `current` probes as the other side was probed (a full
    // file gets a full run), unless --full says so.
    let quick = !args.full && a.as_ref().or(b.as_ref()).and_then(|s| s.quick) != Some(false);
    let side = |given: Option<ProbeSide>| match given {
        Some(s) => Ok(s),
        None => probe_current(&wanted, quick, args.save, store_url.as_deref()),
    };
    let a = side(a)?;
    let b = side(b)?;
    let noise = learned_noise(&a, &b, &mut store, store_url.as_deref());
    let mut deltas = perfsleuth_probe::diff(&a.results, &a.env, &b.results, &b.env, &noise);
    // A --quick probe uses fewer repetitions and smaller buffers than a
    // full one: their numbers are shown, never judged against each other.
    let unlike = matches!((a.quick, b.quick), (Some(x), Some(y)) if x != y);
    if unlike {
        for d in &mut deltas {
            d.significant = false;
        }
    }
    if deltas.is_empty() {
        return Err(Fail::usage(
            format!(
                "{} ({}) and {} ({}) have no probe metric in common",
                a.label,
                a.probes().join(", "),
                b.label,
                b.probes().join(", ")
            ),
            "run the same probes on both machines, e.g. `perfsleuth probe --quick calls syscall`",
        ));
    }
    let differs = deltas.iter().any(|d| d.headline && d.significant);
    let unlike_note = if unlike {
        let how = |s: &ProbeSide| {
            if s.quick == Some(true) {
                "--quick"
            } else {
                "in full"
            }
        };
        format!(
            "The sides were probed differently ({} {}, {} {}): quick probes take fewer repetitions over smaller buffers, so their numbers are listed but not judged. Probe both the same way.\n",
            a.label,
            how(&a),
            b.label,
            how(&b)
        )
    } else {
        String::new()
    };
    let noise_note = if noise.runs >= 3 {
        format!(
            "Run-to-run noise: assumed for a shared VM (docs/PROBES.md), widened where {} other stored probe runs of this machine type spread further.\n",
            noise.runs
        )
    } else {
        "Run-to-run noise assumed for a shared VM (docs/PROBES.md): with three or more other stored probe runs of one machine type, it widens where they spread further.\n".to_string()
    };
    if args.json {
        print_json(&perfsleuth_report::probe::diff_document(
            &a, &b, &deltas, differs,
        ))?;
    } else {
        emit(
            &perfsleuth_report::probe::render_diff(
                &a,
                &b,
                &deltas,
                args.all,
                use_color(args.color, false),
            ),
            false,
        );
        emit(&noise_note, false);
        emit(&unlike_note, true);
    }
    Ok(ExitCode::gate(differs))
}

/// The newest stored probe runs learned from, at most.
const NOISE_RUNS: usize = 20;

/// The between-run noise of each metric, learned from the stored probe runs
/// of the sides' machine type other than the two compared (the pair itself
/// would always fall inside the range it spans), on the same comparability
/// hash on both sides (across machine types nothing is learned, since those
/// differences are what the diff is for); else assumed.
fn learned_noise(
    a: &ProbeSide,
    b: &ProbeSide,
    store: &mut Option<crate::output::AnyStore>,
    url: Option<&str>,
) -> perfsleuth_probe::NoiseBands {
    let assumed = perfsleuth_probe::NoiseBands::assumed();
    if a.comparability != b.comparability {
        return assumed;
    }
    if store.is_none() {
        *store = output::open_existing_store(url).ok();
    }
    let Some(store) = store.as_ref() else {
        return assumed;
    };
    let Ok(list) = store.list_runs(None) else {
        return assumed;
    };
    let runs: Vec<Vec<perfsleuth_model::ProbeResult>> = list
        .iter()
        .filter(|r| r.mode == perfsleuth_model::Mode::Probe && r.comparability == a.comparability)
        .filter(|r| Some(r.id) != a.run_id && Some(r.id) != b.run_id)
        .take(NOISE_RUNS)
        .filter_map(|r| store.load_run(r.id).ok().flatten())
        .map(|r| r.probes)
        .collect();
    if runs.len() < 3 {
        return assumed;
    }
    perfsleuth_probe::NoiseBands::learn(&runs)
}

/// A stored run or a file as a `probe diff` side.
fn resolve_side(
    spec: &str,
    store: &mut Option<crate::output::AnyStore>,
    url: Option<&str>,
) -> Result<ProbeSide, Fail> {
    let path = Path::new(spec);
    // Anything on disk but a directory is read as a file: a FIFO or a
    // process substitution (`<(cat a.json)`) works, a device says why not.
    if output::names_a_file(path) {
        return from_file(path);
    }
    if path.is_dir() {
        return Err(Fail::usage(format!("{spec}: is a directory"), SIDE_HINT));
    }
    if spec.ends_with(".json") || spec.contains('/') {
        return Err(Fail::usage(format!("{spec}: no such file"), SIDE_HINT));
    }
    if store.is_none() {
        *store = Some(output::open_existing_store(url)?);
    }
    let Some(store) = store.as_ref() else {
        return Err(Fail::usage(
            "the store could not be opened",
            "check --store",
        ));
    };
    let id = store.resolve_run_of(spec, RunKind::Probes).map_err(|_| {
        Fail::usage(
            format!("no stored probe run matches `{spec}`"),
            format!("{SIDE_HINT}; run `perfsleuth probe` first, and `perfsleuth runs` lists the stored runs"),
        )
    })?;
    let run = store.load_run(id).map_err(Fail::from)?.ok_or_else(|| {
        Fail::usage(
            format!("run {id} not found"),
            "list the stored runs with `perfsleuth runs`",
        )
    })?;
    if run.probes.is_empty() {
        return Err(Fail::usage(
            format!("run {id} has no probe results; run `perfsleuth probe` first"),
            "`perfsleuth runs` lists the stored runs; probe runs show their probes",
        ));
    }
    Ok(side_of_run(format!("run {id}"), run))
}

/// Probes this machine now for `probe diff … current`.
fn probe_current(
    names: &[&'static str],
    quick: bool,
    save: bool,
    url: Option<&str>,
) -> Result<ProbeSide, Fail> {
    // Stored only when asked for with --save: a diff is a question, not a
    // record (and --store alone names where the other side is read from).
    let store = match save {
        true => Some(output::open_store(url)?),
        false => None,
    };
    let measured = measure(names, quick, store, |report| {
        for m in &report.messages {
            emit(&format!("note: {}: {m}\n", report.probe), true);
        }
    })?;
    match measured.run.status {
        RunStatus::Interrupted => Err(Fail::interrupted(
            "interrupted while probing this machine",
            "run the diff again when it can finish",
            perfsleuth_measure::interrupting_signal(),
        )),
        RunStatus::Failed => Err(Fail::usage(
            "no probe produced a number on this machine",
            "try `perfsleuth probe --quick calls` to see why",
        )),
        _ => {
            let label = match measured.run.id {
                Some(id) => format!("current (run {id})"),
                None => "current".to_string(),
            };
            Ok(side_of_run(label, measured.run))
        }
    }
}

/// A side from a `perfsleuth probe --json` document, or from a run export
/// (`show --json`) of a probe run.
fn from_file(path: &Path) -> Result<ProbeSide, Fail> {
    let bad = |why: String| {
        Fail::usage(
            format!("{}: {why}", path.display()),
            "give a file written by `perfsleuth probe --json` (or `perfsleuth show --json` of a probe run)",
        )
    };
    let (header, value) = crate::output::read_document(path, &bad)?;
    let label = path.display().to_string();
    let version_error = |want: u32| {
        bad(format!(
            "schema version {}; this perfsleuth reads version {want}",
            header
                .schema_version
                .map_or("missing".to_string(), |v| v.to_string())
        ))
    };
    match header.schema.as_deref() {
        Some(ProbeDoc::SCHEMA) => {
            let doc: ProbeDoc =
                schema::document_from_value(&header, value).map_err(|e| match e {
                    schema::ReadError::WrongVersion(_) => version_error(ProbeDoc::VERSION),
                    schema::ReadError::Malformed(e) => bad(format!("malformed reports: {e}")),
                    other => bad(other.to_string()),
                })?;
            let side = ProbeSide::from_document(label, doc);
            if side.results.is_empty() {
                return Err(bad("it holds no probe results".into()));
            }
            Ok(side)
        }
        Some(RunExport::SCHEMA) => {
            let doc: RunExport =
                schema::document_from_value(&header, value).map_err(|e| match e {
                    schema::ReadError::WrongVersion(_) => version_error(RunExport::VERSION),
                    schema::ReadError::Malformed(e) => bad(format!("malformed run: {e}")),
                    other => bad(other.to_string()),
                })?;
            if doc.run.probes.is_empty() {
                return Err(bad(
                    "the run in it has no probe results; run `perfsleuth probe` first".into(),
                ));
            }
            Ok(side_of_run(label, doc.run))
        }
        _ => Err(bad(format!(
            "not a perfsleuth probe document (no \"schema\": \"{}\")",
            ProbeDoc::SCHEMA
        ))),
    }
}

// ---------------------------------------------------------------- compare
