//! `perfsleuth scale`: run a command at several concurrency levels
//! (interleaved), read its throughput, sample the machine's CPU time around
//! each run, store everything like a run, then fit and diagnose with
//! perfsleuth-scale. `scale fit FILE.csv` analyses measurements made elsewhere.

use crate::cli::{ColorChoice, ScaleArgs, ScaleCommand};
use crate::error::Fail;
use crate::output;
use crate::plan::{Shell, Templates, plan};
use crate::run::{Role, Stop, check, measure_fail};
use crate::term::{ProgressLine, emit, use_color};
use perfsleuth_measure::{
    CommandId, CpuTimes, IoConfig, OutputTarget, Spawner, Tolerate, install_interrupt_handler,
};
use perfsleuth_model::exit::ExitCode;
use perfsleuth_model::{Benchmark, Environment, Mode, Run, Sample};
use perfsleuth_scale::{Analysis, CpuSplit, Machine, Observation, RunObservation, analyze};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// Sample counter keys `scale` writes (beside those of perf_event counters).
pub const THROUGHPUT: &str = "throughput";
const WORK: &str = "work";
const CPU_KEYS: [&str; 5] = [
    "cpu_user",
    "cpu_system",
    "cpu_idle",
    "cpu_iowait",
    "cpu_steal",
];
/// Clock ticks the CPU shares of a run rest on (all CPUs together).
const CPU_TICKS: &str = "cpu_ticks";
/// Prefix of the per-CPU busy shares.
const CPU_BUSY_PREFIX: &str = "cpu_busy.";

/// How throughput is obtained from a run.
#[derive(Debug, Clone)]
enum Throughput {
    /// Fixed total work per run.
    Work(f64),
    /// Work per thread: total = units × N.
    WorkPerThread(f64),
    /// First capture group of the last matching stdout line.
    Regex(regex_lite::Regex, String),
    /// A field of a JSON line on stdout.
    Json(String),
}

impl Throughput {
    fn reads_stdout(&self) -> bool {
        matches!(self, Throughput::Regex(..) | Throughput::Json(_))
    }

    fn describe(&self) -> serde_json::Value {
        match self {
            Throughput::Work(w) => serde_json::json!({"work": w}),
            Throughput::WorkPerThread(w) => serde_json::json!({"work_per_thread": w}),
            Throughput::Regex(_, src) => serde_json::json!({"regex": src}),
            Throughput::Json(f) => serde_json::json!({"json_field": f}),
        }
    }
}

/// One concurrency level being measured.
struct Level {
    text: String,
    n: f64,
    name: String,
    command: String,
    argv: Vec<String>,
    id: CommandId,
    store_id: Option<i64>,
    samples: Vec<Sample>,
    facts: Environment,
}

/// Runs `perfsleuth scale` (or `scale fit`) and returns the exit code.
pub fn scale(args: ScaleArgs, spawner: Option<Spawner>) -> Result<i32, Fail> {
    if let Some(ScaleCommand::Fit {
        file,
        cpus,
        param,
        json,
        plot,
        color,
    }) = &args.action
    {
        return fit_file(file, *cpus, param, *json, plot.as_deref(), *color);
    }
    let spec = args.param.as_deref().unwrap_or_default();
    let (param, values) = crate::parse::scale_param(spec)
        .map_err(|e| Fail::usage(e, "e.g. --param threads=1,2,4,8"))?;
    let method = throughput_method(&args)?;
    let shell = Shell(args.shell.clone());
    if let Some(sh) = &args.shell {
        perfsleuth_measure::resolve_program(sh, std::env::var_os("PATH").as_deref())
            .map_err(|e| measure_fail(e, "--shell"))?;
    }
    let template = command_template(&args.command)?;
    let token = format!("{{{param}}}");
    if !template.contains(&token) {
        return Err(Fail::usage(
            format!("the command does not use {token}, so every level would run the same thing"),
            format!("put {token} where the command takes its concurrency, e.g. --threads {token}"),
        ));
    }
    let planned = plan(
        &Templates {
            commands: std::slice::from_ref(&template),
            names: args.name.as_slice(),
            prepare: &[],
            setup: &[],
            cleanup: &[],
            lists: &[
                param.clone(),
                values
                    .iter()
                    .map(|(t, _)| t.as_str())
                    .collect::<Vec<_>>()
                    .join(","),
            ],
            scans: &[],
            step: None,
        },
        &shell,
    )?;
    if let Some(plot) = &args.plot {
        output::check_writable(plot, "--plot")?;
    }

    let mut spawner = crate::run::spawner_or_start(spawner)?;
    let scratch = output::ScratchDir::new("scale")?;
    let stdout_path = scratch.path().join("stdout");
    let io = IoConfig {
        output: if method.reads_stdout() {
            OutputTarget::File(stdout_path.clone())
        } else {
            OutputTarget::Null
        },
        timeout: args.timeout,
        ..IoConfig::default()
    };

    let mut levels = Vec::with_capacity(planned.len());
    let mut binaries: BTreeMap<PathBuf, Environment> = BTreeMap::new();
    for (p, (text, n)) in planned.into_iter().zip(&values) {
        let id = spawner
            .prepare(&p.argv, &io)
            .map_err(|e| measure_fail(e, "command"))?;
        let facts = match crate::run::benchmarked_program(&p, args.shell.is_some()) {
            Some(path) => binaries
                .entry(path.clone())
                .or_insert_with(|| perfsleuth_env::binary_facts(&path))
                .clone(),
            None => Environment::default(),
        };
        levels.push(Level {
            text: text.clone(),
            n: *n,
            name: p.name,
            command: p.command,
            argv: p.argv,
            id,
            store_id: None,
            samples: Vec::new(),
            facts,
        });
    }

    let mut store = if args.no_store {
        None
    } else {
        Some(output::open_store(args.store.store.as_deref())?)
    };
    let mut run = output::new_run(
        Mode::Walltime,
        serde_json::json!({
            "kind": perfsleuth_model::SCALE_KIND,
            "param": param,
            "values": values.iter().map(|(t, _)| t).collect::<Vec<_>>(),
            "throughput": method.describe(),
            "runs": args.runs,
            "warmup": args.warmup,
            "shell": args.shell,
            "timeout_s": args.timeout.map(|t| t.as_secs_f64()),
            "counters": format!("{:?}", args.counters).to_lowercase(),
        }),
        perfsleuth_env::capture(&perfsleuth_env::Source::live()),
    );
    // The futex tracepoint is the point of counting here: the lock-contention
    // signal, at the same small cost at every level.
    let counter_notes = crate::counters::enable(
        &mut spawner,
        args.counters,
        false,
        true,
        &mut run.environment,
    );
    if let Some(store) = store.as_mut() {
        let id = store.begin_run(&run).map_err(output::store_fail)?;
        run.id = Some(id);
        for l in &mut levels {
            l.store_id = Some(
                store
                    .add_benchmark(id, &to_benchmark(l, &param, Vec::new()))
                    .map_err(output::store_fail)?,
            );
        }
    }
    install_interrupt_handler().map_err(|e| {
        Fail::usage(
            format!("cannot install the Ctrl-C handler: {e}"),
            "this should not happen; please report it",
        )
    })?;

    let mut sweep = Sweep {
        spawner: &mut spawner,
        store: store.as_mut(),
        method: &method,
        param: &param,
        stdout: &stdout_path,
        progress: ProgressLine::new(false),
        started: Instant::now(),
        total_runs: (args.runs + args.warmup) as u64 * levels.len() as u64,
        done_runs: 0,
    };
    let result = sweep.all(&mut levels, args.warmup, args.runs);
    sweep.progress.clear();

    run.benchmarks = levels
        .iter()
        .map(|l| to_benchmark(l, &param, l.samples.clone()))
        .collect();
    crate::run::conclude(&mut run, &result, &spawner, store.as_mut())?;
    let stored_note = |what: &str| {
        run.id.map_or(String::new(), |id| {
            format!("; the runs so far are stored as run {id} (status {what})")
        })
    };
    match result {
        Err(Stop::Failed(fail)) => {
            let note = stored_note("failed");
            Err(if note.is_empty() {
                fail
            } else {
                let mut f = fail;
                f.details.push(note.trim_start_matches("; ").to_string());
                f
            })
        }
        Err(Stop::Interrupted) => {
            emit(
                &format!("Interrupted{}.\n", stored_note("interrupted")),
                true,
            );
            Ok(ExitCode::interrupted_by(
                perfsleuth_measure::interrupting_signal(),
            ))
        }
        Ok(()) => {
            let analysis = analysis_of(&run).ok_or_else(|| {
                Fail::usage(
                    "no throughput was measured",
                    "this should not happen; please report it",
                )
            })?;
            report(
                &analysis,
                run.id,
                &template,
                args.json,
                args.plot.as_deref(),
                args.color,
            )?;
            // After the results, so they never stand between the user and an error.
            for note in &counter_notes {
                emit(&format!("note: {note}\n"), true);
            }
            if let (Some(id), Some(store)) = (run.id, store.as_ref()) {
                let note = format!("Stored as run {id} in {}\n", store.path().display());
                emit(&output::dim(&note, use_color(args.color, true)), true);
            }
            Ok(0)
        }
    }
}

/// The measuring loop.
struct Sweep<'a> {
    spawner: &'a mut Spawner,
    store: Option<&'a mut perfsleuth_store::Store>,
    method: &'a Throughput,
    param: &'a str,
    stdout: &'a Path,
    progress: ProgressLine,
    started: Instant,
    total_runs: u64,
    done_runs: u64,
}

impl Sweep<'_> {
    /// Warmup rounds, then timed rounds; each round visits every level, starting
    /// one level later than the round before, so slow drift (thermal, other
    /// tenants) spreads over all levels instead of biasing the last ones.
    fn all(&mut self, levels: &mut [Level], warmup: u32, runs: u32) -> Result<(), Stop> {
        let k = levels.len();
        for round in 0..warmup + runs {
            for j in 0..k {
                let i = (j + round as usize) % k;
                let timed = round >= warmup;
                let iteration = if timed { round - warmup } else { round };
                self.one(&mut levels[i], iteration, timed)?;
            }
        }
        Ok(())
    }

    fn one(&mut self, l: &mut Level, iteration: u32, timed: bool) -> Result<(), Stop> {
        self.show_progress(l, timed);
        if self.method.reads_stdout() {
            std::fs::File::create(self.stdout).map_err(|e| {
                Stop::Failed(Fail::usage(
                    format!(
                        "cannot reset the capture file {}: {e}",
                        self.stdout.display()
                    ),
                    "check the space in the temporary directory ($TMPDIR)",
                ))
            })?;
        }
        let before = CpuTimes::read().ok();
        let outcome = self
            .spawner
            .run_once(l.id, iteration)
            .map_err(|e| Stop::Failed(measure_fail(e, "command")))?;
        let after = CpuTimes::read().ok();
        let label = || format!("command `{}` ({}={})", l.command, self.param, l.text);
        let role = if timed { Role::Timed } else { Role::Untimed };
        let mut sample = check(&Tolerate::Nothing, self.spawner, l.id, label, role, outcome)
            .map_err(|stop| match stop {
                Stop::Failed(mut f) if f.hint.contains("--ignore-failure") => {
                    f.hint = "run the command by hand at that level to see why it fails".into();
                    Stop::Failed(f)
                }
                other => other,
            })?;
        self.done_runs += 1;
        let wall_s = sample.wall_ns as f64 / 1e9;
        let x = self.throughput(l, wall_s)?;
        if !timed {
            return Ok(());
        }
        sample.iteration = iteration;
        sample.counters.insert(THROUGHPUT.into(), x);
        sample.counters.insert(WORK.into(), x * wall_s);
        if let Some(usage) = before.zip(after).and_then(|(b, a)| b.usage_until(&a)) {
            sample.counters.insert(CPU_TICKS.into(), usage.ticks as f64);
            let t = usage.total;
            for (key, v) in CPU_KEYS
                .iter()
                .zip([t.user, t.system, t.idle, t.iowait, t.steal])
            {
                sample.counters.insert((*key).into(), v);
            }
            for (cpu, shares) in usage.per_cpu {
                sample
                    .counters
                    .insert(format!("{CPU_BUSY_PREFIX}{cpu}"), shares.busy());
            }
        }
        if let (Some(store), Some(id)) = (self.store.as_deref_mut(), l.store_id) {
            store
                .add_sample(id, &sample)
                .map_err(|e| Stop::Failed(output::store_fail(e)))?;
        }
        l.samples.push(sample);
        Ok(())
    }

    /// Throughput of the run just finished, or why it cannot be had.
    fn throughput(&self, l: &Level, wall_s: f64) -> Result<f64, Stop> {
        let at = || format!("{}={}", self.param, l.text);
        let x = match self.method {
            Throughput::Work(w) => w / wall_s,
            Throughput::WorkPerThread(w) => w * l.n / wall_s,
            Throughput::Regex(re, src) => {
                let text = read_capture(self.stdout)?;
                extract_regex(re, &text).ok_or_else(|| {
                    Stop::Failed(
                        Fail::usage(
                            format!("--throughput-regex '{src}' matched no number in the output at {}", at()),
                            "check the pattern against the program's output; the first capture group must be a number",
                        )
                        .with_details(output_excerpt(&text)),
                    )
                })?
            }
            Throughput::Json(field) => {
                let text = read_capture(self.stdout)?;
                extract_json(field, &text).ok_or_else(|| {
                    Stop::Failed(
                        Fail::usage(
                            format!("no JSON line with a numeric field `{field}` in the output at {}", at()),
                            "the program must print one JSON object per line, e.g. {\"ops_per_sec\": 12345}",
                        )
                        .with_details(output_excerpt(&text)),
                    )
                })?
            }
        };
        if !(x.is_finite() && x > 0.0) {
            return Err(Stop::Failed(Fail::usage(
                format!(
                    "throughput at {} is {x}: it must be a positive number",
                    at()
                ),
                "check what the command reports, or the --work value",
            )));
        }
        Ok(x)
    }

    fn show_progress(&mut self, l: &Level, timed: bool) {
        let elapsed = self.started.elapsed();
        let fraction = self.done_runs as f64 / self.total_runs.max(1) as f64;
        let eta = if self.done_runs == 0 {
            Duration::ZERO
        } else {
            elapsed.mul_f64((1.0 - fraction) / fraction.max(1e-9))
        };
        let phase = format!(
            "{} {}={}",
            if timed { "Measuring" } else { "Warming up" },
            self.param,
            l.text
        );
        self.progress
            .update(&phase, fraction, self.done_runs, elapsed, eta);
    }
}

fn read_capture(path: &Path) -> Result<String, Stop> {
    let bytes = std::fs::read(path).map_err(|e| {
        Stop::Failed(Fail::usage(
            format!(
                "cannot read the command's output from {}: {e}",
                path.display()
            ),
            "check the temporary directory ($TMPDIR)",
        ))
    })?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
}

/// The number in the first capture group (or the whole match) of the last
/// line that matches.
fn extract_regex(re: &regex_lite::Regex, text: &str) -> Option<f64> {
    text.lines().rev().find_map(|line| {
        let caps = re.captures(line)?;
        let m = caps.get(1).or_else(|| caps.get(0))?;
        m.as_str().trim().replace('_', "").parse::<f64>().ok()
    })
}

/// The numeric `field` (dotted path) of the last JSON object line that has it.
fn extract_json(field: &str, text: &str) -> Option<f64> {
    text.lines().rev().find_map(|line| {
        let line = line.trim();
        if !line.starts_with('{') {
            return None;
        }
        let value: serde_json::Value = serde_json::from_str(line).ok()?;
        let mut v = &value;
        for part in field.split('.') {
            v = v.get(part)?;
        }
        v.as_f64()
            .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
    })
}

fn output_excerpt(text: &str) -> Vec<String> {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    if lines.is_empty() {
        return vec!["the command printed nothing on stdout".to_string()];
    }
    let mut out = vec!["its last stdout lines:".to_string()];
    let start = lines.len().saturating_sub(3);
    out.extend(lines[start..].iter().map(|l| {
        let short: String = l.chars().take(200).collect();
        format!("  {short}")
    }));
    out
}

fn throughput_method(args: &ScaleArgs) -> Result<Throughput, Fail> {
    if let Some(w) = args.work {
        return Ok(Throughput::Work(w));
    }
    if let Some(w) = args.work_per_thread {
        return Ok(Throughput::WorkPerThread(w));
    }
    if let Some(src) = &args.throughput_regex {
        let re = regex_lite::Regex::new(src).map_err(|e| {
            let first = e.to_string();
            let first = first.lines().last().unwrap_or("").trim().to_string();
            Fail::usage(
                format!("--throughput-regex '{src}' is not a valid regular expression: {first}"),
                "e.g. --throughput-regex 'ops/s: ([0-9.]+)'",
            )
        })?;
        return Ok(Throughput::Regex(re, src.clone()));
    }
    if let Some(field) = &args.throughput_json {
        if field.split('.').any(str::is_empty) {
            return Err(Fail::usage(
                format!("--throughput-json `{field}` is not a field name"),
                "name the field, e.g. --throughput-json ops_per_sec (dots for nested: stats.rate)",
            ));
        }
        return Ok(Throughput::Json(field.clone()));
    }
    Err(Fail::usage(
        "no way to compute throughput was given",
        "pass --work, --work-per-thread, --throughput-regex or --throughput-json",
    ))
}

/// The command as one template line: a single argument as given, or the
/// words after `--` quoted so that splitting gives them back unchanged.
fn command_template(words: &[String]) -> Result<String, Fail> {
    match words {
        [] => Err(Fail::usage(
            "no command given",
            "e.g. perfsleuth scale --param threads=1,2,4,8 --work 1e6 -- ./bench --threads {threads}",
        )),
        [one] => Ok(one.clone()),
        many => Ok(many
            .iter()
            .map(|w| quote_word(w))
            .collect::<Vec<_>>()
            .join(" ")),
    }
}

/// Single-quotes a word when it holds anything a splitter would treat specially.
fn quote_word(w: &str) -> String {
    let plain = !w.is_empty()
        && w.chars()
            .all(|c| c.is_alphanumeric() || "-_./=:,+@%{}^".contains(c));
    if plain {
        w.to_string()
    } else {
        format!("'{}'", w.replace('\'', "'\\''"))
    }
}

fn to_benchmark(l: &Level, param: &str, samples: Vec<Sample>) -> Benchmark {
    Benchmark {
        name: l.name.clone(),
        command: l.command.clone(),
        argv: l.argv.clone(),
        parameters: BTreeMap::from([(param.to_string(), l.text.clone())]),
        facts: l.facts.clone(),
        samples,
        profile: None,
    }
}

/// Rebuilds the analysis of a stored (or just measured) scale run; None when
/// the run is not a scale run.
pub fn analysis_of(run: &Run) -> Option<Analysis> {
    if !run.is_scale_sweep() {
        return None;
    }
    let param = run.options.get("param")?.as_str()?.to_string();
    let observations: Vec<Observation> = run
        .benchmarks
        .iter()
        .filter_map(|b| {
            let n: f64 = b.parameters.get(&param)?.parse().ok()?;
            let runs = b
                .samples
                .iter()
                .filter_map(|s| {
                    let c = &s.counters;
                    let throughput = *c.get(THROUGHPUT)?;
                    let cpu = match CPU_KEYS.map(|k| c.get(k).copied()) {
                        [
                            Some(user),
                            Some(system),
                            Some(idle),
                            Some(iowait),
                            Some(steal),
                        ] => Some(CpuSplit {
                            user,
                            system,
                            idle,
                            iowait,
                            steal,
                        }),
                        _ => None,
                    };
                    let per_cpu: Vec<(usize, f64)> = c
                        .iter()
                        .filter_map(|(k, v)| {
                            Some((k.strip_prefix(CPU_BUSY_PREFIX)?.parse().ok()?, *v))
                        })
                        .collect();
                    // Indexed by CPU number: a CPU without elapsed ticks in a
                    // run has no entry, and must not shift the others.
                    let width = per_cpu.iter().map(|(cpu, _)| cpu + 1).max().unwrap_or(0);
                    let mut by_cpu = vec![f64::NAN; width.min(4096)];
                    for (cpu, v) in per_cpu {
                        if let Some(slot) = by_cpu.get_mut(cpu) {
                            *slot = v;
                        }
                    }
                    Some(RunObservation {
                        throughput,
                        wall_s: s.wall_ns as f64 / 1e9,
                        work: c.get(WORK).copied().unwrap_or(0.0),
                        cpu,
                        per_cpu_busy: by_cpu,
                        cpu_ticks: c.get(CPU_TICKS).copied(),
                        cpu_time_s: Some((s.user_ns + s.sys_ns) as f64 / 1e9),
                        voluntary_cs: Some(s.voluntary_cs as f64),
                        futex_calls: c.get("futex_calls").copied(),
                        cpu_migrations: c.get("cpu_migrations").copied(),
                    })
                })
                .collect::<Vec<_>>();
            (!runs.is_empty()).then_some(Observation { n, runs })
        })
        .collect();
    if observations.is_empty() {
        return None;
    }
    let cap = perfsleuth_env::cpu_capacity(&run.environment);
    let machine = Machine {
        logical: cap.logical,
        physical: cap.physical,
        usable: cap.usable,
        limited_by: cap.limited_by,
    };
    Some(analyze(&param, &observations, &machine))
}

/// Prints the analysis (terminal or JSON) and writes the chart.
fn report(
    analysis: &Analysis,
    run_id: Option<i64>,
    title: &str,
    json: bool,
    plot: Option<&Path>,
    color: ColorChoice,
) -> Result<(), Fail> {
    if json {
        let doc = perfsleuth_scale::to_json(analysis, run_id);
        let text = perfsleuth_model::schema::to_json_pretty(&doc).map_err(|e| {
            Fail::usage(format!("cannot serialise JSON: {e}"), "please report this")
        })?;
        emit(&text, false);
    } else {
        let text = perfsleuth_scale::render_terminal(analysis, use_color(color, false));
        emit(&text, false);
    }
    if let Some(path) = plot {
        let svg =
            perfsleuth_report::svg::render_scale_svg(&perfsleuth_scale::chart(analysis, title));
        output::write_file(path, &svg)?;
        emit(&format!("Chart written to {}\n", path.display()), true);
    }
    Ok(())
}

fn fit_file(
    file: &Path,
    cpus: Option<f64>,
    param: &str,
    json: bool,
    plot: Option<&Path>,
    color: ColorChoice,
) -> Result<i32, Fail> {
    let text = if file == Path::new("-") {
        let mut s = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut s).map_err(|e| {
            Fail::usage(
                format!("cannot read stdin: {e}"),
                "pipe a CSV file with columns N,X",
            )
        })?;
        s
    } else {
        std::fs::read_to_string(file).map_err(|e| {
            Fail::usage(
                format!("cannot read {}: {e}", file.display()),
                "give a CSV file with columns N,X",
            )
        })?
    };
    let observations = perfsleuth_scale::read_csv(&text).map_err(|e| {
        Fail::usage(
            format!("{}: {e}", file.display()),
            "expected a CSV with columns N,X (concurrency, throughput), one row per run",
        )
    })?;
    if let Some(plot) = plot {
        output::check_writable(plot, "--plot")?;
    }
    let machine = Machine {
        usable: cpus,
        ..Machine::default()
    };
    let analysis = analyze(param, &observations, &machine);
    if analysis.fit.is_none() {
        let why = analysis.fit_error.clone().unwrap_or_default();
        return Err(Fail::usage(
            format!("{}: {why}", file.display()),
            "measure at least 4 (better 6 or more) concurrency levels",
        ));
    }
    report(
        &analysis,
        None,
        &file.display().to_string(),
        json,
        plot,
        color,
    )?;
    Ok(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn throughput_is_read_from_the_last_matching_line_or_json_object() {
        let re = regex_lite::Regex::new(r"ops/s: ([0-9.]+)").expect("re");
        let out = "warming up\nops/s: 10.5\nops/s: 12000.25\ndone\n";
        assert_eq!(extract_regex(&re, out), Some(12000.25));
        assert_eq!(extract_regex(&re, "nothing here"), None);
        let whole = regex_lite::Regex::new(r"[0-9]+").expect("re");
        assert_eq!(extract_regex(&whole, "rate 42 ops"), Some(42.0));

        let json =
            "{\"ops_per_sec\": 10}\nnoise\n{\"stats\": {\"rate\": \"3.5\"}, \"ops_per_sec\": 20}\n";
        assert_eq!(extract_json("ops_per_sec", json), Some(20.0));
        assert_eq!(extract_json("stats.rate", json), Some(3.5));
        assert_eq!(extract_json("missing", json), None);
        assert_eq!(extract_json("ops_per_sec", "{broken"), None);
    }

    #[test]
    fn words_after_the_separator_survive_splitting() {
        let words: Vec<String> = ["./bench", "--name", "a b", "it's", "{threads}"]
            .iter()
            .map(|s| s.to_string())
            .collect();
        let line = command_template(&words).expect("template");
        assert_eq!(
            perfsleuth_measure::split_command(&line).expect("split"),
            words
        );
    }
}
