//! `perfsleuth probe` (machine microbenchmarks, stored with the environment
//! they ran in), `perfsleuth probe diff A B` (what differs and which facts
//! explain it), and the probe notes `compare` adds when both machines have
//! been probed. The measuring and the diff are `perfsleuth-probe`'s; this
//! module chooses, stores and prints.

use crate::cli::{ColorChoice, ProbeArgs, ProbeCommand, ProbeDiffArgs};
use crate::error::{EXIT_INTERRUPTED, Fail};
use crate::output::{self, store_fail};
use crate::term::{emit, use_color};
use perfsleuth_model::{
    Environment, ImpactClass, Mode, ProbeResult, Run, RunStatus, SCHEMA_VERSION, rfc3339,
};
use perfsleuth_probe::{
    CacheSizes, CalibratedClock, Measurement, PROBES, ProbeDelta, ProbeOptions, ProbeReport,
    fmt_bytes,
};
use perfsleuth_store::{RunKind, SqliteStore, Store as _, comparability_hash};
use serde::{Deserialize, Serialize};
use std::io::IsTerminal;
use std::path::Path;
use std::time::SystemTime;

/// `schema` of the document `perfsleuth probe --json` writes.
pub const PROBE_SCHEMA: &str = "perfsleuth/probe";
/// `schema` of the document `perfsleuth probe diff --json` writes.
pub const PROBE_DIFF_SCHEMA: &str = "perfsleuth/probe-diff";
/// Version of both probe documents.
pub const PROBE_SCHEMA_VERSION: u32 = 1;

/// Context fact holding how the core clock behind the cycle counts was estimated.
const CLOCK_FACT: &str = "probe.clock";

/// Non-significant changes smaller than this are "unchanged" in `probe diff`.
const UNCHANGED: f64 = 0.01;

/// Delta notes `compare` adds at most (a pointer to `probe diff` follows).
const MAX_COMPARE_NOTES: usize = 4;

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
            let results: Vec<ProbeResult> = report.measurements.iter().map(to_result).collect();
            text.push_str(&render_probe(
                &report.probe,
                &header_extra(report),
                &results,
                &report.messages,
                all,
                color,
            ));
            emit(&text, false);
        }
    })?;
    let run = &measured.run;
    if args.json {
        let doc = probe_json(run, &measured.reports);
        print_json(&doc)?;
    } else if let Some(clock) = clock_line(&measured.reports) {
        emit(&format!("\n{clock}\n"), false);
    }
    match run.status {
        RunStatus::Interrupted => {
            let stored = run.id.map_or(String::new(), |id| {
                format!("; the probes finished so far are stored as run {id} (status interrupted)")
            });
            emit(&format!("Interrupted{stored}.\n"), true);
            Ok(perfsleuth_measure::interrupting_signal().map_or(EXIT_INTERRUPTED, |sig| 128 + sig))
        }
        RunStatus::Failed => Err(Fail::usage(
            "no probe produced a number",
            "the messages above say why; try `perfsleuth probe --quick calls`",
        )),
        _ => {
            if let (Some(id), Some(store)) = (run.id, measured.store.as_ref()) {
                let note = format!("Stored as run {id} in {}\n", store.path().display());
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
    store: Option<SqliteStore>,
}

/// Captures the environment, runs the probes one after another (storing
/// each probe's results as soon as it finishes) and finishes the run:
/// `complete`, `interrupted` (Ctrl-C between probes) or `failed` (nothing
/// measured). `each` sees every report as it arrives.
fn measure(
    names: &[&'static str],
    quick: bool,
    mut store: Option<SqliteStore>,
    mut each: impl FnMut(&ProbeReport),
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
        serde_json::json!({ "probes": names, "quick": quick }),
        environment,
    );
    if let Some(store) = store.as_mut() {
        run.id = Some(store.begin_run(&run).map_err(store_fail)?);
    }
    perfsleuth_measure::install_interrupt_handler().map_err(|e| {
        Fail::usage(
            format!("cannot install the Ctrl-C handler: {e}"),
            "this should not happen; please report it",
        )
    })?;
    let progress = std::io::stderr().is_terminal();
    let mut reports = Vec::new();
    let mut interrupted = false;
    for (i, name) in names.iter().enumerate() {
        // A probe runs in this thread and cannot be cut short; Ctrl-C stops
        // the suite before the next one.
        if perfsleuth_measure::interrupted() {
            interrupted = true;
            break;
        }
        if progress {
            emit(
                &format!(
                    "\r\x1b[2K[{}/{}] {name}: {}…",
                    i + 1,
                    names.len(),
                    perfsleuth_probe::describe(name)
                ),
                true,
            );
        }
        let report = perfsleuth_probe::run(name, &opts);
        if progress {
            emit("\r\x1b[2K", true);
        }
        let results: Vec<ProbeResult> = report.measurements.iter().map(to_result).collect();
        if let (Some(store), Some(id)) = (store.as_mut(), run.id)
            && let Err(e) = store.add_probe_results(id, &results)
        {
            let _ = store.finish_run(id, RunStatus::Failed, &rfc3339(SystemTime::now()));
            return Err(store_fail(e));
        }
        run.probes.extend(results);
        each(&report);
        reports.push(report);
    }
    interrupted |= perfsleuth_measure::interrupted();
    run.status = if interrupted {
        RunStatus::Interrupted
    } else if run.probes.is_empty() {
        RunStatus::Failed
    } else {
        RunStatus::Complete
    };
    run.ended_at = Some(rfc3339(SystemTime::now()));
    // Recorded with the run, so `show` can say how cycles were estimated and
    // what a probe could not do; context facts are never judged in a diff.
    if let Some(clock) = reports.iter().find_map(|r| r.clock.as_ref()) {
        run.environment
            .set(CLOCK_FACT, clock.how.clone(), ImpactClass::Context);
    }
    for r in reports.iter().filter(|r| !r.messages.is_empty()) {
        run.environment.set(
            format!("probe.{}.messages", r.probe),
            r.messages.join(" | "),
            ImpactClass::Context,
        );
    }
    if let (Some(store), Some(id)) = (store.as_mut(), run.id) {
        store
            .update_context(id, &run.environment)
            .map_err(store_fail)?;
        store
            .finish_run(id, run.status, run.ended_at.as_deref().unwrap_or_default())
            .map_err(store_fail)?;
    }
    Ok(Measured {
        run,
        reports,
        store,
    })
}

/// The stored form of a measurement.
fn to_result(m: &Measurement) -> ProbeResult {
    ProbeResult {
        probe: m.probe.clone(),
        metric: m.metric.clone(),
        value: m.value,
        unit: m.unit.clone(),
        lower_is_better: m.lower_is_better,
        cycles: m.cycles,
        spread: m.spread,
        stable: m.stable,
        headline: m.headline,
        note: m.note.clone(),
    }
}

/// A stored result as the probe crate's measurement (for its diff).
fn to_measurement(r: &ProbeResult) -> Measurement {
    Measurement {
        probe: r.probe.clone(),
        metric: r.metric.clone(),
        value: r.value,
        unit: r.unit.clone(),
        lower_is_better: r.lower_is_better,
        cycles: r.cycles,
        spread: r.spread,
        stable: r.stable,
        headline: r.headline,
        note: r.note.clone(),
    }
}

// ---------------------------------------------------------------- rendering

/// "(0.41 s, pinned to CPU 1)" after a probe's name.
fn header_extra(r: &ProbeReport) -> String {
    let mut parts = vec![format!("{:.2} s", r.duration.as_secs_f64())];
    if let Some(cpu) = r.pinned_cpu {
        parts.push(format!("pinned to CPU {cpu}"));
    }
    format!("({})", parts.join(", "))
}

fn paint(code: &str, s: &str, color: bool) -> String {
    if color {
        format!("\x1b[{code}m{s}\x1b[0m")
    } else {
        s.to_string()
    }
}

/// A value with its unit, at a precision that suits its size.
pub fn fmt_value(value: f64, unit: &str) -> String {
    if !value.is_finite() {
        return "n/a".to_string();
    }
    match unit {
        "bytes" => fmt_bytes(value.max(0.0) as u64),
        "ns" => {
            if value >= 1e6 {
                format!("{:.2} ms", value / 1e6)
            } else if value >= 1e4 {
                format!("{:.1} µs", value / 1e3)
            } else if value >= 100.0 {
                format!("{value:.1} ns")
            } else {
                format!("{value:.3} ns")
            }
        }
        "GB/s" => format!("{value:.1} GB/s"),
        "ops/s" => {
            let (v, prefix) = if value >= 1e9 {
                (value / 1e9, "G")
            } else if value >= 1e6 {
                (value / 1e6, "M")
            } else if value >= 1e3 {
                (value / 1e3, "k")
            } else {
                (value, "")
            };
            let digits = if v >= 100.0 {
                0
            } else if v >= 10.0 {
                1
            } else {
                2
            };
            format!("{v:.digits$} {prefix}ops/s")
        }
        "ratio" => format!("{value:.2}×"),
        u => format!("{value:.3} {u}"),
    }
}

/// One probe's section: a header, one line per (headline) metric, its messages.
fn render_probe(
    probe: &str,
    extra: &str,
    results: &[ProbeResult],
    messages: &[String],
    all: bool,
    color: bool,
) -> String {
    let mut out = paint("1", probe, color);
    if !extra.is_empty() {
        out.push(' ');
        out.push_str(extra);
    }
    out.push('\n');
    let shown: Vec<&ProbeResult> = results.iter().filter(|r| all || r.headline).collect();
    // Cells first, so each column is as wide as its widest cell in this section.
    let rows: Vec<[String; 4]> = shown
        .iter()
        .map(|r| {
            let cycles = r
                .cycles
                .filter(|c| c.is_finite())
                .map(|c| {
                    if c >= 100.0 {
                        format!("~{c:.0} cycles")
                    } else {
                        format!("~{c:.1} cycles")
                    }
                })
                .unwrap_or_default();
            let spread = if r.unit == "bytes" {
                "±1 ladder step".to_string()
            } else if r.spread.is_finite() {
                format!("±{:.1}%", r.spread * 100.0)
            } else {
                String::new()
            };
            [
                r.metric.clone(),
                fmt_value(r.value, &r.unit),
                cycles,
                spread,
            ]
        })
        .collect();
    let width = |i: usize| rows.iter().map(|r| r[i].chars().count()).max().unwrap_or(0);
    let (w0, w1, w2, w3) = (width(0), width(1), width(2), width(3));
    for (r, [metric, value, cycles, spread]) in shown.iter().zip(&rows) {
        let mut line = format!("  {metric:<w0$}  {value:>w1$}  {cycles:<w2$}  {spread:<w3$}");
        if !r.stable {
            line.push_str("  ");
            line.push_str(&paint("33", "unstable", color));
        }
        if let Some(note) = &r.note {
            line.push_str(&format!("  ({note})"));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    let hidden = results.len() - shown.len();
    if hidden > 0 && shown.is_empty() {
        out.push_str(&format!("  ({hidden} detail metrics; --all shows them)\n"));
    }
    if results.is_empty() && messages.is_empty() {
        out.push_str("  (no numbers)\n");
    }
    for m in messages {
        out.push_str(&format!("  note: {m}\n"));
    }
    out
}

/// The calibrated clock behind the cycle counts, once, with any probe whose
/// estimate differed by more than 3 %.
fn clock_line(reports: &[ProbeReport]) -> Option<String> {
    let clocks: Vec<(&str, &CalibratedClock)> = reports
        .iter()
        .filter_map(|r| r.clock.as_ref().map(|c| (r.probe.as_str(), c)))
        .collect();
    let (_, first) = clocks.first()?;
    let mut line = format!("Cycles are {}", first.how);
    if let Some(g0) = first.ghz {
        let other: Vec<String> = clocks
            .iter()
            .skip(1)
            .filter_map(|(p, c)| c.ghz.map(|g| (p, g)))
            .filter(|(_, g)| (g / g0 - 1.0).abs() > 0.03)
            .map(|(p, g)| format!("{p} {g:.2} GHz"))
            .collect();
        if !other.is_empty() {
            line.push_str(&format!(
                " (recalibrated per probe: {}; the clock moved)",
                other.join(", ")
            ));
        }
    }
    Some(line)
}

/// Prints a stored probe run (`perfsleuth show`): its results by probe,
/// the messages and the clock recorded with it.
pub fn print_stored(run: &Run, all: bool, color: ColorChoice) {
    let color = use_color(color, false);
    let mut out = String::new();
    let who = run
        .id
        .map_or("Probe run".to_string(), |id| format!("Run {id}"));
    let quick = run.options.get("quick").and_then(|q| q.as_bool());
    out.push_str(&format!(
        "{who}: probes{}, started {}, {}, comparability {}\n",
        match quick {
            Some(true) => " (quick)",
            _ => "",
        },
        run.started_at.replace('T', " ").trim_end_matches('Z'),
        run.status,
        comparability_hash(&run.environment)
    ));
    let mut order: Vec<&str> = Vec::new();
    for r in &run.probes {
        if !order.contains(&r.probe.as_str()) {
            order.push(&r.probe);
        }
    }
    // Probes that produced nothing but messages are still worth a section.
    for p in PROBES {
        if run
            .environment
            .get(&format!("probe.{p}.messages"))
            .is_some()
            && !order.contains(&p)
        {
            order.push(p);
        }
    }
    if order.is_empty() {
        out.push_str("\nNo probe results stored.\n");
    }
    for p in order {
        let results: Vec<ProbeResult> = run
            .probes
            .iter()
            .filter(|r| r.probe == p)
            .cloned()
            .collect();
        let messages: Vec<String> = run
            .environment
            .get(&format!("probe.{p}.messages"))
            .map(|m| m.split(" | ").map(str::to_string).collect())
            .unwrap_or_default();
        out.push('\n');
        out.push_str(&render_probe(p, "", &results, &messages, all, color));
    }
    if let Some(how) = run.environment.get(CLOCK_FACT) {
        out.push_str(&format!("\nCycles are {how}\n"));
    }
    emit(&out, false);
}

// ---------------------------------------------------------------- JSON

/// One probe's report in the `perfsleuth/probe` document.
#[derive(Debug, Serialize, Deserialize)]
struct ReportDoc {
    probe: String,
    #[serde(default)]
    duration_s: Option<f64>,
    #[serde(default)]
    pinned_cpu: Option<usize>,
    #[serde(default)]
    clock: Option<CalibratedClock>,
    #[serde(default)]
    messages: Vec<String>,
    #[serde(default)]
    measurements: Vec<ProbeResult>,
}

/// The `perfsleuth/probe` document (see docs/SCHEMA.md).
fn probe_json(run: &Run, reports: &[ProbeReport]) -> serde_json::Value {
    let reports: Vec<ReportDoc> = reports
        .iter()
        .map(|r| ReportDoc {
            probe: r.probe.clone(),
            duration_s: Some(r.duration.as_secs_f64()),
            pinned_cpu: r.pinned_cpu,
            clock: r.clock.clone(),
            messages: r.messages.clone(),
            measurements: r.measurements.iter().map(to_result).collect(),
        })
        .collect();
    serde_json::json!({
        "schema": PROBE_SCHEMA,
        "schema_version": PROBE_SCHEMA_VERSION,
        "run_id": run.id,
        "status": run.status,
        "started_at": run.started_at,
        "ended_at": run.ended_at,
        "tool_version": run.tool_version,
        "quick": run.options.get("quick").and_then(|q| q.as_bool()),
        "comparability": comparability_hash(&run.environment),
        "clock": reports.iter().find_map(|r| r.clock.clone()),
        "reports": reports,
        "facts": run.environment,
    })
}

fn print_json(value: &serde_json::Value) -> Result<(), Fail> {
    let text = serde_json::to_string_pretty(value)
        .map_err(|e| Fail::usage(format!("cannot serialise JSON: {e}"), "please report this"))?;
    emit(&(text + "\n"), false);
    Ok(())
}

// ---------------------------------------------------------------- diff

/// One side of `probe diff`: results and the environment they ran in.
struct ProbeSide {
    label: String,
    run_id: Option<i64>,
    env: Environment,
    results: Vec<ProbeResult>,
    quick: Option<bool>,
}

impl ProbeSide {
    /// The probes with results, in suite order.
    fn probes(&self) -> Vec<&'static str> {
        PROBES
            .into_iter()
            .filter(|p| self.results.iter().any(|r| r.probe == *p))
            .collect()
    }

    fn from_run(label: String, run: Run) -> ProbeSide {
        ProbeSide {
            label,
            run_id: run.id,
            quick: run.options.get("quick").and_then(|q| q.as_bool()),
            env: run.environment,
            results: run.probes,
        }
    }
}

const SIDE_HINT: &str = "give a run id, latest, latest~N (probe runs), current, or a file from `perfsleuth probe --json`";

/// `perfsleuth probe diff A B`.
fn diff_command(args: ProbeDiffArgs) -> Result<i32, Fail> {
    let mut store: Option<SqliteStore> = None;
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
    let side = |given: Option<ProbeSide>| match given {
        Some(s) => Ok(s),
        None => probe_current(&wanted, !args.full, args.save, store_url.as_deref()),
    };
    let a = side(a)?;
    let b = side(b)?;
    let am: Vec<Measurement> = a.results.iter().map(to_measurement).collect();
    let bm: Vec<Measurement> = b.results.iter().map(to_measurement).collect();
    let deltas = perfsleuth_probe::diff(&am, &a.env, &bm, &b.env);
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
    if args.json {
        print_json(&diff_json(&a, &b, &deltas, differs))?;
    } else {
        emit(
            &render_diff(&a, &b, &deltas, args.all, use_color(args.color, false)),
            false,
        );
    }
    Ok(if differs { 1 } else { 0 })
}

/// A stored run or a file as a `probe diff` side.
fn resolve_side(
    spec: &str,
    store: &mut Option<SqliteStore>,
    url: Option<&str>,
) -> Result<ProbeSide, Fail> {
    let path = Path::new(spec);
    if path.is_file() {
        return from_file(path);
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
    let run = store.load_run(id).map_err(store_fail)?.ok_or_else(|| {
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
    Ok(ProbeSide::from_run(format!("run {id}"), run))
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
        RunStatus::Interrupted => Err(Fail {
            message: "interrupted while probing this machine".into(),
            details: Vec::new(),
            hint: "run the diff again when it can finish".into(),
            code: perfsleuth_measure::interrupting_signal()
                .map_or(EXIT_INTERRUPTED, |sig| 128 + sig),
        }),
        RunStatus::Failed => Err(Fail::usage(
            "no probe produced a number on this machine",
            "try `perfsleuth probe --quick calls` to see why",
        )),
        _ => {
            let label = match measured.run.id {
                Some(id) => format!("current (run {id})"),
                None => "current".to_string(),
            };
            Ok(ProbeSide::from_run(label, measured.run))
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
    let text = std::fs::read_to_string(path).map_err(|e| bad(format!("cannot read: {e}")))?;
    let doc: serde_json::Value =
        serde_json::from_str(&text).map_err(|e| bad(format!("not JSON: {e}")))?;
    let schema = doc.get("schema").and_then(|s| s.as_str()).unwrap_or("");
    let version = doc.get("schema_version").and_then(|v| v.as_u64());
    let label = path.display().to_string();
    match schema {
        PROBE_SCHEMA => {
            if version != Some(u64::from(PROBE_SCHEMA_VERSION)) {
                return Err(bad(format!(
                    "schema version {}; this perfsleuth reads version {PROBE_SCHEMA_VERSION}",
                    version.map_or("missing".to_string(), |v| v.to_string())
                )));
            }
            let reports: Vec<ReportDoc> =
                serde_json::from_value(doc.get("reports").cloned().unwrap_or_default())
                    .map_err(|e| bad(format!("malformed reports: {e}")))?;
            let env: Environment =
                serde_json::from_value(doc.get("facts").cloned().unwrap_or_default())
                    .map_err(|e| bad(format!("malformed facts: {e}")))?;
            let results: Vec<ProbeResult> =
                reports.into_iter().flat_map(|r| r.measurements).collect();
            if results.is_empty() {
                return Err(bad("it holds no probe results".into()));
            }
            Ok(ProbeSide {
                label,
                run_id: doc.get("run_id").and_then(|v| v.as_i64()),
                quick: doc.get("quick").and_then(|q| q.as_bool()),
                env,
                results,
            })
        }
        perfsleuth_model::EXPORT_KIND_RUN => {
            if version != Some(u64::from(SCHEMA_VERSION)) {
                return Err(bad(format!(
                    "schema version {}; this perfsleuth reads version {SCHEMA_VERSION}",
                    version.map_or("missing".to_string(), |v| v.to_string())
                )));
            }
            let run: Run = serde_json::from_value(doc.get("run").cloned().unwrap_or_default())
                .map_err(|e| bad(format!("malformed run: {e}")))?;
            if run.probes.is_empty() {
                return Err(bad(
                    "the run in it has no probe results; run `perfsleuth probe` first".into(),
                ));
            }
            Ok(ProbeSide::from_run(label, run))
        }
        _ => Err(bad(format!(
            "not a perfsleuth probe document (no \"schema\": \"{PROBE_SCHEMA}\")"
        ))),
    }
}

/// "3.30× slower", "1.25× less", "unchanged".
pub fn change_text(d: &ProbeDelta) -> String {
    if !d.ratio.is_finite() || d.ratio <= 0.0 {
        return format!("{} → {}", fmt_value(d.a, &d.unit), fmt_value(d.b, &d.unit));
    }
    let factor = d.ratio.max(1.0 / d.ratio);
    if (factor - 1.0).abs() < 0.0005 {
        return "unchanged".to_string();
    }
    let up = d.ratio > 1.0;
    let word = match d.unit.as_str() {
        "ns" => ["faster", "slower"][up as usize],
        "GB/s" | "ops/s" => ["slower", "faster"][up as usize],
        _ => ["less", "more"][up as usize],
    };
    if factor >= 10.0 {
        format!("{factor:.1}× {word}")
    } else {
        format!("{factor:.2}× {word}")
    }
}

/// "indirect call" for "indirect_call".
fn metric_words(metric: &str) -> String {
    metric.replace('_', " ")
}

fn side_line(tag: &str, s: &ProbeSide) -> String {
    let mode = match s.quick {
        Some(true) => "quick",
        Some(false) => "full",
        None => "mode unknown",
    };
    format!(
        "{tag}: {}  ({mode}; probes {}; comparability {})\n",
        s.label,
        s.probes().join(", "),
        comparability_hash(&s.env)
    )
}

fn render_diff(
    a: &ProbeSide,
    b: &ProbeSide,
    deltas: &[ProbeDelta],
    all: bool,
    color: bool,
) -> String {
    let mut out = side_line("A", a) + &side_line("B", b);
    if comparability_hash(&a.env) != comparability_hash(&b.env) {
        out.push_str("The machines differ in identity facts (`perfsleuth env diff` lists them).\n");
    }
    if let (Some(qa), Some(qb)) = (a.quick, b.quick)
        && qa != qb
    {
        out.push_str(
            "One side ran --quick: its memory ladder steps by ×2 instead of ×√2, so sizes can differ by a step.\n",
        );
    }
    let considered: Vec<&ProbeDelta> = deltas.iter().filter(|d| all || d.headline).collect();
    let significant: Vec<&ProbeDelta> = considered
        .iter()
        .copied()
        .filter(|d| d.significant)
        .collect();
    let noise: Vec<&ProbeDelta> = considered
        .iter()
        .copied()
        .filter(|d| !d.significant && (all || (d.ratio - 1.0).abs() >= UNCHANGED))
        .collect();
    let unchanged = considered.len() - significant.len() - noise.len();
    let width = considered
        .iter()
        .map(|d| d.probe.len() + d.metric.len() + 1)
        .max()
        .unwrap_or(0);
    let line = |d: &ProbeDelta| {
        let name = format!("{} {}", d.probe, d.metric);
        let values = format!("{} → {}", fmt_value(d.a, &d.unit), fmt_value(d.b, &d.unit));
        format!("  {name:<width$}  {values:<28}  {}\n", change_text(d))
    };
    if !significant.is_empty() {
        out.push_str(&format!(
            "\n{}\n",
            paint(
                "1",
                "Significant differences (≥ 10 %, spreads apart):",
                color
            )
        ));
        for d in &significant {
            let text = line(d);
            out.push_str(&if d.worse {
                paint("31", text.trim_end(), color) + "\n"
            } else {
                paint("32", text.trim_end(), color) + "\n"
            });
            if d.explanations.is_empty() {
                out.push_str(&format!(
                    "      no recorded fact that moves `{}` changed: the host, its other tenants, or noise\n",
                    d.probe
                ));
            }
            for e in &d.explanations {
                out.push_str(&format!("      {e}\n"));
            }
        }
    }
    if !noise.is_empty() {
        out.push_str("\nWithin noise (under 10 %, or the spreads overlap):\n");
        for d in &noise {
            out.push_str(&line(d));
        }
    }
    let worse = significant.iter().filter(|d| d.worse).count();
    let what = if all { "metrics" } else { "headline metrics" };
    let verb = if significant.len() == 1 {
        "differs"
    } else {
        "differ"
    };
    out.push_str(&format!(
        "\n{} of {} {what} {verb} significantly ({worse} worse, {} better); {} within noise; {} unchanged (within {:.0} %).\n",
        significant.len(),
        considered.len(),
        significant.len() - worse,
        noise.len(),
        unchanged,
        UNCHANGED * 100.0,
    ));
    let only = |x: &ProbeSide, y: &ProbeSide| -> Vec<&'static str> {
        let theirs = y.probes();
        x.probes()
            .into_iter()
            .filter(|p| !theirs.contains(p))
            .collect()
    };
    for (tag, list) in [("A", only(a, b)), ("B", only(b, a))] {
        if !list.is_empty() {
            out.push_str(&format!(
                "Only in {tag}, not compared: {}.\n",
                list.join(", ")
            ));
        }
    }
    if !all && deltas.len() > considered.len() {
        out.push_str(&format!(
            "({} detail metrics not shown; --all lists them)\n",
            deltas.len() - considered.len()
        ));
    }
    out
}

fn diff_json(
    a: &ProbeSide,
    b: &ProbeSide,
    deltas: &[ProbeDelta],
    differs: bool,
) -> serde_json::Value {
    let side = |s: &ProbeSide| {
        serde_json::json!({
            "label": s.label,
            "run_id": s.run_id,
            "quick": s.quick,
            "comparability": comparability_hash(&s.env),
            "probes": s.probes(),
        })
    };
    let rows: Vec<serde_json::Value> = deltas
        .iter()
        .map(|d| {
            serde_json::json!({
                "probe": d.probe,
                "metric": d.metric,
                "unit": d.unit,
                "a": d.a,
                "b": d.b,
                "ratio": d.ratio,
                "change": change_text(d),
                "worse": d.worse,
                "significant": d.significant,
                "headline": d.headline,
                "explanations": d.explanations,
            })
        })
        .collect();
    serde_json::json!({
        "schema": PROBE_DIFF_SCHEMA,
        "schema_version": PROBE_SCHEMA_VERSION,
        "a": side(a),
        "b": side(b),
        "differs": differs,
        "deltas": rows,
    })
}

// ---------------------------------------------------------------- compare

/// Notes for `compare` when both sides' machines have been probed: the
/// significant headline differences between the newest probe run matching
/// each side's environment, with the facts that explain them. Empty when
/// either machine has no probe run, both map to the same one, or nothing
/// differs; lookup errors are not the comparison's concern and yield nothing.
pub fn compare_notes(
    store: &SqliteStore,
    baseline: &Environment,
    candidate: &Environment,
) -> Vec<String> {
    let (Ok(Some(ia)), Ok(Some(ib))) = (
        store.latest_probe_run_for(baseline),
        store.latest_probe_run_for(candidate),
    ) else {
        return Vec::new();
    };
    if ia == ib {
        return Vec::new();
    }
    let (Ok(Some(ra)), Ok(Some(rb))) = (store.load_run(ia), store.load_run(ib)) else {
        return Vec::new();
    };
    let am: Vec<Measurement> = ra.probes.iter().map(to_measurement).collect();
    let bm: Vec<Measurement> = rb.probes.iter().map(to_measurement).collect();
    let deltas = perfsleuth_probe::diff(&am, &ra.environment, &bm, &rb.environment);
    let sig: Vec<&ProbeDelta> = deltas
        .iter()
        .filter(|d| d.headline && d.significant)
        .collect();
    if sig.is_empty() {
        return Vec::new();
    }
    let mut notes: Vec<String> = sig
        .iter()
        .take(MAX_COMPARE_NOTES)
        .map(|d| {
            let why = if d.explanations.is_empty() {
                " (no recorded fact explains it)".to_string()
            } else {
                format!(" ({})", d.explanations.join("; "))
            };
            format!(
                "probes: {} {} on the candidate's machine{why}",
                metric_words(&d.metric),
                change_text(d)
            )
        })
        .collect();
    let more = sig.len().saturating_sub(MAX_COMPARE_NOTES);
    notes.push(format!(
        "probes: {}from probe run {ia} (the baseline's machine) and {ib} (the candidate's); see `perfsleuth probe diff {ia} {ib}`",
        if more > 0 {
            format!("{more} more significant differences; ")
        } else {
            String::new()
        }
    ));
    notes
}

#[cfg(test)]
mod tests {
    use super::*;

    fn delta(unit: &str, a: f64, b: f64) -> ProbeDelta {
        ProbeDelta {
            probe: "p".into(),
            metric: "m".into(),
            unit: unit.into(),
            a,
            b,
            ratio: b / a,
            worse: false,
            significant: false,
            headline: true,
            explanations: vec![],
        }
    }

    #[test]
    fn changes_read_in_the_metric_s_own_words() {
        assert_eq!(change_text(&delta("ns", 1.0, 3.3)), "3.30× slower");
        assert_eq!(change_text(&delta("ns", 2.0, 1.0)), "2.00× faster");
        assert_eq!(change_text(&delta("GB/s", 20.0, 10.0)), "2.00× slower");
        assert_eq!(change_text(&delta("ops/s", 1.0, 1.5)), "1.50× faster");
        assert_eq!(change_text(&delta("bytes", 8.0, 4.0)), "2.00× less");
        assert_eq!(change_text(&delta("ratio", 2.5, 25.0)), "10.0× more");
        assert_eq!(change_text(&delta("ns", 1.0, 1.0)), "unchanged");
    }

    #[test]
    fn values_print_with_their_units() {
        assert_eq!(fmt_value(0.5414, "ns"), "0.541 ns");
        assert_eq!(fmt_value(164.52, "ns"), "164.5 ns");
        assert_eq!(fmt_value(537_000.0, "ns"), "537.0 µs");
        assert_eq!(fmt_value(32.0 * 1024.0, "bytes"), "32 KiB");
        assert_eq!(fmt_value(2.3e8, "ops/s"), "230 Mops/s");
        assert_eq!(fmt_value(3.634e9, "ops/s"), "3.63 Gops/s");
        assert_eq!(fmt_value(2.5, "ratio"), "2.50×");
        assert_eq!(fmt_value(f64::NAN, "ns"), "n/a");
    }
}
