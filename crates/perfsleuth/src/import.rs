//! `perfsleuth import`: another tool's results as a stored run, with the
//! environment (this machine's, or what the file records) and where the
//! results came from.

use crate::cli::{ExecArgs, ImportArgs, ImportMachine};
use crate::error::Fail;
use crate::output;
use crate::term::emit;
use perfsleuth_import::{CriterionBench, Format, ImportError, Imported};
use perfsleuth_model::input::Accept;
use perfsleuth_model::{Environment, Fact, RunStatus};
use std::path::{Path, PathBuf};

/// The most a results file may hold; a larger one is refused unread.
const MAX_IMPORT_BYTES: u64 = perfsleuth_model::input::MAX_DATA_BYTES;
/// The most benchmark directories a criterion tree may hold.
const MAX_CRITERION_BENCHES: usize = 10_000;
/// How deep under the given directory criterion's `new/` directories are looked for.
const MAX_CRITERION_DEPTH: usize = 8;

/// What was read: the results, the bytes hashed, and whether the format
/// was detected.
struct Read {
    imported: Imported,
    bytes: Vec<u8>,
    detected: bool,
}

/// A profile format `import` attaches to a stored run (`--into`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ProfileFormat {
    Folded,
    PerfScript,
}

impl ProfileFormat {
    fn from_name(s: &str) -> Option<ProfileFormat> {
        match s.to_ascii_lowercase().as_str() {
            "folded" | "collapsed" => Some(ProfileFormat::Folded),
            "perf-script" | "perf" => Some(ProfileFormat::PerfScript),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            ProfileFormat::Folded => "folded stacks",
            ProfileFormat::PerfScript => "perf script",
        }
    }
}

/// Runs `perfsleuth import`.
pub fn import(args: ImportArgs) -> Result<i32, Fail> {
    let named = ProfileFormat::from_name(&args.format);
    if named.is_none() && args.into.is_some() && args.format != "auto" {
        return Err(Fail::usage(
            format!(
                "--into attaches a profile; {} results become a run of their own",
                args.format
            ),
            "drop --into, or give --format folded or --format perf-script",
        ));
    }
    let chosen = match named {
        Some(_) => None,
        None => chosen_format(&args.format)?,
    };
    let label = args.input.display().to_string();
    let read = if args.input != Path::new("-") && args.input.is_dir() {
        if named.is_some() || args.into.is_some() {
            return Err(Fail::usage(
                format!("{label} is a directory, not a profile"),
                "give the folded stacks or perf script text as a file, or - for standard input",
            ));
        }
        read_criterion(&args.input, chosen, None)?
    } else {
        // The target first: a wrong --into or --name is said before a
        // large file is read.
        let target = if args.into.is_some() || named.is_some() {
            Some(profile_target(&args)?)
        } else {
            None
        };
        let text = read_input(&args.input)?;
        let detected = named.or_else(|| {
            (args.format == "auto")
                .then(|| detect_profile(&text))
                .flatten()
        });
        if let Some(format) = detected {
            return import_profile(&args, format, text, &label, target);
        }
        if args.into.is_some() {
            return Err(Fail::usage(
                format!("--into attaches a profile, and {label} is not one"),
                "give folded stacks or perf script text, or drop --into to import results as a run",
            ));
        }
        parse_text(&label, text, chosen)?
    };
    let mut read = read;
    if let Some(name) = &args.name {
        rename(&mut read.imported, name, &label)?;
    }
    let (environment, machine) = environment(&read.imported, args.machine);
    let source = if args.input == Path::new("-") {
        "standard input".to_string()
    } else {
        absolute(&args.input)
    };
    store(
        read,
        environment,
        machine,
        &label,
        &source,
        args.store.store.as_deref(),
    )
}

/// A profile format recognised from the text, for `--format auto`.
fn detect_profile(text: &str) -> Option<ProfileFormat> {
    if perfsleuth_import::detect(text).is_some() {
        return None;
    }
    if perfsleuth_import::stacks::looks_perf_script(text) {
        Some(ProfileFormat::PerfScript)
    } else if perfsleuth_import::stacks::looks_folded(text) {
        Some(ProfileFormat::Folded)
    } else {
        None
    }
}

/// Where `import --into` attaches a profile: the store, the run, the
/// benchmark's position and name.
struct Target {
    store: Box<dyn perfsleuth_store::Store>,
    id: i64,
    position: usize,
    name: String,
}

/// The run and benchmark `import --into` names (the run's only benchmark
/// without --name), checked before the file is read: a wrong name, or a
/// benchmark that has a profile already, is said at once, not after
/// parsing a large file.
fn profile_target(args: &ImportArgs) -> Result<Target, Fail> {
    let store = output::open_existing_store(args.store.store.as_deref())?;
    let spec = args.into.as_deref().unwrap_or("latest");
    let id = store.resolve_run(spec).map_err(Fail::from)?;
    let run = store.load_run(id).map_err(Fail::from)?.ok_or_else(|| {
        Fail::usage(
            format!("run {id} not found in {}", store.location().display()),
            "list the stored runs with `perfsleuth runs`",
        )
    })?;
    let names = || {
        run.benchmarks
            .iter()
            .map(|b| format!("`{}`", b.name))
            .collect::<Vec<_>>()
            .join(", ")
    };
    let position = match &args.name {
        Some(name) => run
            .benchmarks
            .iter()
            .position(|b| &b.name == name)
            .ok_or_else(|| {
                Fail::usage(
                    format!("run {id} has no benchmark `{name}`"),
                    format!("give --name one of {}", names()),
                )
            })?,
        None if run.benchmarks.len() == 1 => 0,
        None => {
            return Err(Fail::usage(
                format!(
                    "run {id} has {} benchmarks: which one is profiled?",
                    run.benchmarks.len()
                ),
                format!("give --name one of {}", names()),
            ));
        }
    };
    let bench = &run.benchmarks[position];
    if bench.stacks.is_some() {
        return Err(already_profiled(&bench.name, id));
    }
    Ok(Target {
        id,
        position,
        name: bench.name.clone(),
        store,
    })
}

/// A benchmark's profile is never replaced.
fn already_profiled(name: &str, id: i64) -> Fail {
    Fail::usage(
        format!("`{name}` of run {id} already has a profile; nothing was changed"),
        "import into another run, or compare the two runs' profiles with `perfsleuth compare`",
    )
}

/// `import --into`: a profile taken elsewhere joins a stored run's
/// benchmark (`target`, resolved before the file was read, or here),
/// unless it has one.
fn import_profile(
    args: &ImportArgs,
    format: ProfileFormat,
    text: String,
    label: &str,
    target: Option<Target>,
) -> Result<i32, Fail> {
    let mut target = match target {
        Some(t) => t,
        None => profile_target(args)?,
    };
    let source = format!("{} ({label})", format.name());
    let parsed = match format {
        ProfileFormat::Folded => perfsleuth_import::stacks::parse_folded(&text, &source),
        ProfileFormat::PerfScript => perfsleuth_import::stacks::parse_perf_script(&text, &source),
    };
    // The file's text is not needed once parsed: freed before the profile
    // is written (a large file's text and its JSON are not held together).
    drop(text);
    let profile = parsed.map_err(|e| {
        Fail::usage(
            format!("cannot import {label} as {}: {e}", format.name()),
            e.hint.clone(),
        )
    })?;
    let id = target.id;
    // Another import may have attached one since: the store checks again.
    let attached = target
        .store
        .attach_stacks(id, target.position, &profile)
        .map_err(Fail::from)?;
    if !attached {
        return Err(already_profiled(&target.name, id));
    }
    emit(
        &format!(
            "Attached {} samples of {} to `{}` of run {id}: {}\n",
            profile.samples,
            format.name(),
            target.name,
            perfsleuth_report::stacks_headline(&profile)
        ),
        false,
    );
    Ok(0)
}

/// Runs `perfsleuth exec`: the suite, then an import of what it wrote.
pub fn exec(args: ExecArgs) -> Result<i32, Fail> {
    let chosen = chosen_format(&args.format)?;
    let criterion = chosen == Some(Format::Criterion);
    let dir = match (&args.output, criterion) {
        (Some(p), true) => Some(p.clone()),
        (None, true) => Some(
            std::env::var_os("CARGO_TARGET_DIR")
                .map_or_else(|| PathBuf::from("target"), PathBuf::from)
                .join("criterion"),
        ),
        (_, false) => None,
    };
    let from_stdout = args.output.is_none() && !criterion;
    let (program, rest) = args
        .command
        .split_first()
        .ok_or_else(|| Fail::usage("no command to run", "give the suite after --"))?;
    let src = perfsleuth_env::Source::live();
    let mut environment = perfsleuth_runner::capture_environment(&src);
    let noise = perfsleuth_env::NoiseSnapshot::take(&src);
    let before = dir.as_deref().map(written);
    let mut cmd = std::process::Command::new(program);
    cmd.args(rest);
    if from_stdout {
        cmd.stdout(std::process::Stdio::piped());
    }
    let shown = args.command.join(" ");
    let mut child = cmd.spawn().map_err(|e| {
        Fail::usage(
            format!("cannot start `{program}`: {e}"),
            "check the command after -- (it runs without a shell)",
        )
    })?;
    // Read as it comes, so a suite that writes more than a pipe holds
    // never blocks; beyond the limit the rest is drained and refused.
    let captured = child.stdout.take().map(|out| {
        std::thread::spawn(move || {
            use std::io::Read as _;
            let mut buf = Vec::new();
            let mut limited = out.take(MAX_IMPORT_BYTES + 1);
            let _ = limited.read_to_end(&mut buf);
            let _ = std::io::copy(&mut limited.into_inner(), &mut std::io::sink());
            buf
        })
    });
    let status = child.wait().map_err(|e| {
        Fail::usage(
            format!("`{shown}` could not be waited for: {e}"),
            "run it alone to see what happens",
        )
    })?;
    let stdout = captured.map(|t| t.join().unwrap_or_default());
    if !status.success() {
        return Err(Fail::usage(
            format!("`{shown}` failed ({status}): nothing imported"),
            "run it alone to see why; perfsleuth imports only a suite that finished",
        ));
    }
    noise.since(&src, &mut environment);
    let read = match (stdout, &dir) {
        (Some(bytes), _) => {
            if bytes.len() as u64 > MAX_IMPORT_BYTES {
                return Err(Fail::usage(
                    format!("`{shown}` wrote more than 256 MiB to standard output"),
                    "have it write its results to a file and give that with --output",
                ));
            }
            let text = String::from_utf8(bytes).map_err(|_| {
                Fail::usage(
                    format!("`{shown}` wrote output that is not UTF-8 text"),
                    "check that its standard output holds only the results",
                )
            })?;
            parse_text(&format!("the output of `{shown}`"), text, chosen)?
        }
        (None, Some(dir)) => read_criterion(dir, chosen, before.as_ref())?,
        (None, None) => {
            let path = args.output.as_deref().unwrap_or(Path::new("-"));
            parse_text(&path.display().to_string(), read_input(path)?, chosen)?
        }
    };
    let environment = overlay(environment, &read.imported);
    let (label, source) = match (&args.output, &dir) {
        (Some(p), _) => (p.display().to_string(), absolute(p)),
        (None, Some(d)) => (d.display().to_string(), absolute(d)),
        (None, None) => (
            format!("the output of `{shown}`"),
            format!("standard output of `{shown}`"),
        ),
    };
    store(
        read,
        environment,
        "exec",
        &label,
        &source,
        args.store.store.as_deref(),
    )
}

/// `--name`: the one benchmark's new name.
fn rename(imported: &mut Imported, name: &str, label: &str) -> Result<(), Fail> {
    match imported.benchmarks.as_mut_slice() {
        [one] => {
            one.name = name.to_string();
            Ok(())
        }
        many => Err(Fail::usage(
            format!(
                "--name renames one benchmark, and {label} holds {}",
                many.len()
            ),
            "import it without --name; the tool's own names are kept",
        )),
    }
}

/// `--format`: None for `auto`.
fn chosen_format(name: &str) -> Result<Option<Format>, Fail> {
    match name {
        "auto" => Ok(None),
        name => Format::from_name(name).map(Some).ok_or_else(|| {
            Fail::usage(
                format!("unknown import format `{name}`"),
                format!("use auto or one of: {}", format_names()),
            )
        }),
    }
}

fn absolute(path: &Path) -> String {
    std::fs::canonicalize(path)
        .unwrap_or_else(|_| path.to_path_buf())
        .display()
        .to_string()
}

/// A criterion directory's benchmarks (those written since `before`, when
/// given).
fn read_criterion(
    dir: &Path,
    chosen: Option<Format>,
    before: Option<&Written>,
) -> Result<Read, Fail> {
    let label = dir.display().to_string();
    if chosen.is_some_and(|f| f != Format::Criterion) {
        return Err(Fail::usage(
            format!("{label} is a directory"),
            "only criterion results are a directory; give the results file",
        ));
    }
    let (benches, bytes) = criterion_tree(dir, before)?;
    let imported = perfsleuth_import::parse_criterion(&benches)
        .map_err(|e| import_fail(&label, Format::Criterion, e))?;
    Ok(Read {
        imported,
        bytes,
        detected: chosen.is_none(),
    })
}

/// A results text, in the format chosen or detected.
fn parse_text(label: &str, text: String, chosen: Option<Format>) -> Result<Read, Fail> {
    let format = match (chosen, perfsleuth_import::detect(&text)) {
        (Some(f), Some(d)) if f != d => {
            return Err(Fail::usage(
                format!("{label} looks like {} output, not {}", d.tool(), f.tool()),
                format!("use --format {} (or --format auto)", d.name()),
            ));
        }
        (Some(f), _) => f,
        (None, Some(d)) => d,
        (None, None) => {
            if let Some(e) = perfsleuth_import::broken_json(&text) {
                return Err(Fail::usage(format!("{label}: {e}"), e.hint));
            }
            return Err(Fail::usage(
                format!("{label}: not a results format perfsleuth imports"),
                format!("name it with --format ({})", format_names()),
            ));
        }
    };
    let imported =
        perfsleuth_import::parse(format, &text).map_err(|e| import_fail(label, format, e))?;
    Ok(Read {
        imported,
        bytes: text.into_bytes(),
        detected: chosen.is_none(),
    })
}

/// Stores what was read as a complete run and prints what was done.
fn store(
    read: Read,
    environment: Environment,
    machine: &str,
    label: &str,
    source: &str,
    store_url: Option<&str>,
) -> Result<i32, Fail> {
    let Read {
        imported,
        bytes,
        detected,
    } = read;
    let samples: usize = imported.benchmarks.iter().map(|b| b.samples.len()).sum();
    let now = perfsleuth_model::rfc3339(std::time::SystemTime::now());
    let options = serde_json::json!({
        "kind": perfsleuth_model::IMPORT_KIND,
        "import": {
            "format": imported.format.name(),
            "tool": imported.format.tool(),
            "tool_version": imported.tool_version,
            "source": source,
            "sha256": perfsleuth_store::sha256_hex(&bytes),
            "imported_at": now,
            "measured_at": imported.measured_at,
            "machine": machine,
            "notes": imported.notes,
        }
    });
    let mut run = output::new_run(imported.mode(), options, environment);
    if imported.git.is_some() {
        run.git = imported.git.clone();
    }
    let mut store = output::open_store(store_url)?;
    run.uuid.get_or_insert_with(perfsleuth_store::new_run_uuid);
    // One transaction for the whole file: stored wholly or not at all, in
    // a statement per few hundred rows (100 000 results: 12 s -> PERFORMANCE.md).
    let benchmarks = imported.benchmarks.len();
    run.benchmarks = imported.benchmarks;
    run.status = RunStatus::Complete;
    run.ended_at = Some(perfsleuth_model::rfc3339(std::time::SystemTime::now()));
    let id = store.ingest_run(&run).map_err(Fail::from)?.id;
    drop(run);
    let mut out = format!(
        "Read {label} as {}{}: {} benchmark{}, {samples} samples; environment: {}\n",
        imported.format.tool(),
        if detected { " (detected)" } else { "" },
        benchmarks,
        if benchmarks == 1 { "" } else { "s" },
        match machine {
            "file" => "only what the file records",
            "exec" => "this machine while the suite ran, with the output's own facts over it",
            _ => "this machine, with the file's own facts over it",
        },
    );
    for note in &imported.notes {
        out.push_str(&format!("  note: {note}\n"));
    }
    out.push_str(&format!(
        "Stored as run {id} in {}\n",
        store.location().display()
    ));
    emit(&out, false);
    Ok(0)
}

fn format_names() -> String {
    Format::ALL
        .iter()
        .map(|f| f.name())
        .collect::<Vec<_>>()
        .join(", ")
}

fn import_fail(label: &str, format: Format, e: ImportError) -> Fail {
    Fail::usage(format!("{label} ({}): {e}", format.tool()), e.hint.clone())
}

/// The input's text: a file (regular or a pipe, at most
/// [`MAX_IMPORT_BYTES`]) or standard input.
fn read_input(path: &Path) -> Result<String, Fail> {
    perfsleuth_model::input::read_text_or_stdin(path, MAX_IMPORT_BYTES).map_err(|why| {
        Fail::usage(
            format!(
                "cannot read {}: {why}",
                perfsleuth_model::input::input_name(path)
            ),
            "give a results file (at most 256 MiB), a criterion directory, or - for standard input",
        )
    })
}

/// When each criterion benchmark's `sample.json` was last written, by its
/// `new/` directory: taken before `exec` runs the suite, so that only the
/// benchmarks it wrote are imported (a file time compared with a file time,
/// never with the clock).
type Written = std::collections::HashMap<PathBuf, Option<std::time::SystemTime>>;

fn sample_time(dir: &Path) -> Option<std::time::SystemTime> {
    std::fs::metadata(dir.join("sample.json"))
        .and_then(|m| m.modified())
        .ok()
}

/// What [`Written`] says of the tree under `root` now.
fn written(root: &Path) -> Written {
    new_dirs(root)
        .into_iter()
        .map(|d| {
            let t = sample_time(&d);
            (d, t)
        })
        .collect()
}

/// Every `new/` directory holding a `benchmark.json` under `root` (or
/// `root` itself), in path order; at most one past [`MAX_CRITERION_BENCHES`].
fn new_dirs(root: &Path) -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        // Any `benchmark.json` counts, even one that is not a regular file
        // (a link to /dev/zero was skipped without a word): its reader then
        // says what it is.
        if dir.file_name().is_some_and(|n| n == "new")
            && std::fs::symlink_metadata(dir.join("benchmark.json")).is_ok()
        {
            dirs.push(dir);
            continue;
        }
        if depth >= MAX_CRITERION_DEPTH {
            continue;
        }
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for e in entries.flatten() {
            let p = e.path();
            let name = e.file_name();
            // `base` and `change` are criterion's previous run and its
            // comparison; `report` is HTML.
            if ["base", "change", "report"].iter().any(|n| name == *n) {
                continue;
            }
            if e.file_type().is_ok_and(|t| t.is_dir()) {
                stack.push((p, depth + 1));
            }
        }
        if dirs.len() > MAX_CRITERION_BENCHES {
            break;
        }
    }
    dirs.sort();
    dirs
}

/// The benchmarks of a criterion directory: every `new/` directory with
/// `benchmark.json` and `sample.json` under `root` (or `root` itself, or
/// `root/new`), in path order; and all their bytes, for the hash.
fn criterion_tree(
    root: &Path,
    before: Option<&Written>,
) -> Result<(Vec<CriterionBench>, Vec<u8>), Fail> {
    // Under `exec`, only what this run of the suite wrote: the tree keeps
    // every benchmark criterion ever ran.
    let dirs: Vec<PathBuf> = new_dirs(root)
        .into_iter()
        .filter(|d| before.is_none_or(|b| b.get(d) != Some(&sample_time(d))))
        .collect();
    if dirs.is_empty() {
        return Err(Fail::usage(
            format!(
                "{}: no criterion results (no `new/` directory with benchmark.json{})",
                root.display(),
                if before.is_some() {
                    " written by this run"
                } else {
                    ""
                }
            ),
            "run `cargo bench` first, then give target/criterion or a benchmark's directory in it",
        ));
    }
    if dirs.len() > MAX_CRITERION_BENCHES {
        return Err(Fail::usage(
            format!(
                "{}: more than {MAX_CRITERION_BENCHES} criterion benchmarks",
                root.display()
            ),
            "give the directory of the benchmarks to import",
        ));
    }
    let mut bytes = Vec::new();
    let mut benches = Vec::new();
    for dir in dirs {
        let read = |file: &str| -> Result<String, Fail> {
            let p: PathBuf = dir.join(file);
            output::read_user_file(&p, MAX_IMPORT_BYTES, Accept::Regular).map_err(|why| {
                Fail::usage(
                    format!("cannot read {}: {why}", p.display()),
                    "rerun `cargo bench` to write the benchmark's files again",
                )
            })
        };
        let benchmark_json = read("benchmark.json")?;
        let sample_json = read("sample.json")?;
        bytes.extend_from_slice(benchmark_json.as_bytes());
        bytes.extend_from_slice(sample_json.as_bytes());
        benches.push(CriterionBench {
            dir: dir.display().to_string(),
            benchmark_json,
            sample_json,
        });
    }
    Ok((benches, bytes))
}

/// The run's environment and which machine it describes ("here" or "file").
fn environment(imported: &Imported, choice: ImportMachine) -> (Environment, &'static str) {
    let here_host = perfsleuth_env::Source::live()
        .read("/proc/sys/kernel/hostname")
        .map(|h| h.trim().to_string())
        .ok();
    let file_host = imported
        .facts
        .iter()
        .find(|f| f.key == "host.name")
        .map(|f| f.value.clone());
    let use_file = match choice {
        ImportMachine::File => true,
        ImportMachine::Here => false,
        ImportMachine::Auto => matches!((&file_host, &here_host), (Some(f), Some(h)) if f != h),
    };
    let env = if use_file {
        Environment::default()
    } else {
        perfsleuth_runner::capture_environment(&perfsleuth_env::Source::live())
    };
    (
        overlay(env, imported),
        if use_file { "file" } else { "here" },
    )
}

/// `env` with the facts the file records laid over it, each saying so.
fn overlay(mut env: Environment, imported: &Imported) -> Environment {
    for f in &imported.facts {
        env.facts.insert(
            f.key.clone(),
            Fact {
                value: f.value.clone(),
                class: f.class,
                reason: Some(format!(
                    "recorded by {} in the imported file",
                    imported.format.tool()
                )),
            },
        );
    }
    env
}
