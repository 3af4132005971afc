//! `perfsleuth import`: another tool's results as a stored run, with the
//! environment (this machine's, or what the file records) and where the
//! results came from.

use crate::cli::{ImportArgs, ImportMachine};
use crate::error::Fail;
use crate::output;
use crate::term::emit;
use perfsleuth_import::{CriterionBench, Format, ImportError, Imported};
use perfsleuth_model::input::Accept;
use perfsleuth_model::{Environment, Fact, Mode, RunStatus};
use perfsleuth_store::Store as _;
use std::path::{Path, PathBuf};

/// The most a results file may hold; a larger one is refused unread.
const MAX_IMPORT_BYTES: u64 = 256 << 20;
/// The most benchmark directories a criterion tree may hold.
const MAX_CRITERION_BENCHES: usize = 10_000;
/// How deep under the given directory criterion's `new/` directories are looked for.
const MAX_CRITERION_DEPTH: usize = 8;

/// Runs `perfsleuth import`.
pub fn import(args: ImportArgs) -> Result<i32, Fail> {
    let chosen = match args.format.as_str() {
        "auto" => None,
        name => Some(Format::from_name(name).ok_or_else(|| {
            Fail::usage(
                format!("unknown import format `{name}`"),
                format!("use auto or one of: {}", format_names()),
            )
        })?),
    };
    let label = args.input.display().to_string();
    let is_dir = args.input != Path::new("-") && args.input.is_dir();
    let (imported, bytes, detected) = if is_dir {
        if chosen.is_some_and(|f| f != Format::Criterion) {
            return Err(Fail::usage(
                format!("{label} is a directory"),
                "only criterion results are a directory; give the results file",
            ));
        }
        let (benches, bytes) = criterion_tree(&args.input)?;
        let imported = perfsleuth_import::parse_criterion(&benches)
            .map_err(|e| import_fail(&label, Format::Criterion, e))?;
        (imported, bytes, chosen.is_none())
    } else {
        let text = read_input(&args.input)?;
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
            perfsleuth_import::parse(format, &text).map_err(|e| import_fail(&label, format, e))?;
        (imported, text.into_bytes(), chosen.is_none())
    };
    let (environment, machine) = environment(&imported, args.machine);
    let samples: usize = imported.benchmarks.iter().map(|b| b.samples.len()).sum();
    let source = if args.input == Path::new("-") {
        "standard input".to_string()
    } else {
        std::fs::canonicalize(&args.input)
            .unwrap_or_else(|_| args.input.clone())
            .display()
            .to_string()
    };
    let now = perfsleuth_model::rfc3339(std::time::SystemTime::now());
    let options = serde_json::json!({
        "kind": "import",
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
    let mut run = output::new_run(Mode::Walltime, options, environment);
    if imported.git.is_some() {
        run.git = imported.git.clone();
    }
    let mut store = output::open_store(args.store.store.as_deref())?;
    let id = store.begin_run(&run).map_err(output::store_fail)?;
    for b in &imported.benchmarks {
        let bid = store.add_benchmark(id, b).map_err(output::store_fail)?;
        for s in &b.samples {
            store.add_sample(bid, s).map_err(output::store_fail)?;
        }
    }
    let ended = perfsleuth_model::rfc3339(std::time::SystemTime::now());
    store
        .finish_run(id, RunStatus::Complete, &ended)
        .map_err(output::store_fail)?;
    let mut out = format!(
        "Read {label} as {}{}: {} benchmark{}, {samples} samples; environment: {}\n",
        imported.format.tool(),
        if detected { " (detected)" } else { "" },
        imported.benchmarks.len(),
        if imported.benchmarks.len() == 1 {
            ""
        } else {
            "s"
        },
        match machine {
            "file" => "only what the file records",
            _ => "this machine, with the file's own facts over it",
        },
    );
    for note in &imported.notes {
        out.push_str(&format!("  note: {note}\n"));
    }
    out.push_str(&format!(
        "Stored as run {id} in {}\n",
        store.path().display()
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
    let read = if path == Path::new("-") {
        perfsleuth_model::input::read_stdin_text(MAX_IMPORT_BYTES).map_err(|e| e.to_string())
    } else {
        output::read_user_file(path, MAX_IMPORT_BYTES, Accept::RegularOrPipe)
    };
    read.map_err(|why| {
        Fail::usage(
            format!("cannot read {}: {why}", path.display()),
            "give a results file (at most 256 MiB), a criterion directory, or - for standard input",
        )
    })
}

/// The benchmarks of a criterion directory: every `new/` directory with
/// `benchmark.json` and `sample.json` under `root` (or `root` itself, or
/// `root/new`), in path order; and all their bytes, for the hash.
fn criterion_tree(root: &Path) -> Result<(Vec<CriterionBench>, Vec<u8>), Fail> {
    let mut dirs = Vec::new();
    let mut stack = vec![(root.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let is_new = dir.file_name().is_some_and(|n| n == "new");
        if is_new && dir.join("benchmark.json").is_file() {
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
    if dirs.is_empty() {
        return Err(Fail::usage(
            format!(
                "{}: no criterion results (no `new/` directory with benchmark.json)",
                root.display()
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
    dirs.sort();
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
    let mut env = if use_file {
        Environment::default()
    } else {
        perfsleuth_runner::capture_environment(&perfsleuth_env::Source::live())
    };
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
    (env, if use_file { "file" } else { "here" })
}
