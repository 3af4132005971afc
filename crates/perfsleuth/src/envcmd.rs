//! `perfsleuth env show | diff | check`: the fingerprint, what changed
//! between two, and whether this machine is fit to benchmark on.

use crate::cli::{EnvArgs, EnvCommand, EnvSourceArgs};
use crate::error::Fail;
use crate::output::open_existing_store;
use crate::term::emit;
use perfsleuth_env::{Severity, Source, check, diff, has_problems, significant};
use perfsleuth_model::exit::ExitCode;
use perfsleuth_model::schema::{self, Document, EnvCheckDoc, EnvironmentDoc};
use perfsleuth_model::{Environment, Fact, ImpactClass, UNKNOWN};
use perfsleuth_store::comparability_hash;
use std::path::Path;

/// Runs an `env` subcommand and returns the exit code.
pub fn env(args: EnvArgs) -> Result<i32, Fail> {
    match args.command {
        EnvCommand::Show {
            run,
            json,
            source,
            store,
        } => {
            let (label, env) = match run {
                Some(spec) => resolve(&spec, &source, store.store.as_deref())?,
                None => (current_label(&source), current(&source)?),
            };
            if json {
                print_json(&EnvironmentDoc {
                    schema: EnvironmentDoc::SCHEMA.to_string(),
                    schema_version: EnvironmentDoc::VERSION,
                    source: label,
                    comparability: comparability_hash(&env),
                    facts: env,
                })?;
            } else {
                emit(&render_show(&label, &env), false);
            }
            Ok(0)
        }
        EnvCommand::Diff {
            a,
            b,
            json,
            all,
            source,
            store,
        } => {
            let (la, ea) = resolve(&a, &source, store.store.as_deref())?;
            let (lb, eb) = resolve(&b, &source, store.store.as_deref())?;
            let doc = perfsleuth_history::stored::env_diff_doc((&la, &ea), (&lb, &eb), all);
            let differs = !doc.identical;
            if json {
                print_json(&doc)?;
            } else {
                emit(
                    &render_diff(&la, &lb, &ea, &eb, &diff(&ea, &eb), all),
                    false,
                );
            }
            Ok(ExitCode::gate(differs))
        }
        EnvCommand::Check { json, source } => {
            let mut env = current(&source)?;
            // The live machine is judged by how busy it is now, over one
            // second, not by averages that remember the last build.
            if root_of(&source).is_none() {
                let live = perfsleuth_env::Source::live();
                let start = perfsleuth_env::NoiseSnapshot::take(&live);
                std::thread::sleep(CHECK_INTERVAL);
                start.since(&live, &mut env);
            }
            let findings = check(&env);
            if json {
                print_json(&EnvCheckDoc {
                    schema: EnvCheckDoc::SCHEMA.to_string(),
                    schema_version: EnvCheckDoc::VERSION,
                    fit: !has_problems(&findings),
                    findings: findings.clone(),
                })?;
            } else {
                let mut out = String::new();
                for f in &findings {
                    out.push_str(&format!(
                        "{:<8} {}\n         → {}\n",
                        f.severity.as_str(),
                        f.message,
                        f.recommendation
                    ));
                }
                out.push_str(if perfsleuth_env::unjudgeable(&findings) {
                    "\nCannot tell whether this machine is fit for benchmarking: too little about it is known.\n"
                } else if has_problems(&findings) {
                    "\nNot fit for benchmarking: fix the problems above, or expect unreliable results.\n"
                } else if findings.iter().any(|f| f.severity == Severity::Warning) {
                    "\nUsable for benchmarking, with the warnings above adding noise.\n"
                } else {
                    "\nFit for benchmarking.\n"
                });
                emit(&out, false);
            }
            Ok(if has_problems(&findings) {
                ExitCode::USAGE
            } else {
                ExitCode::OK
            })
        }
    }
}

/// What `current` means: the live machine, or the tree given with `--root`.
fn current_label(source: &EnvSourceArgs) -> String {
    match root_of(source) {
        Some(dir) => format!("tree {}", dir.display()),
        None => "current machine".to_string(),
    }
}

/// `--root`, else `PERFSLEUTH_ROOT`; `None` for the live machine.
fn root_of(source: &EnvSourceArgs) -> Option<std::path::PathBuf> {
    source.root.clone().or_else(|| {
        std::env::var_os("PERFSLEUTH_ROOT")
            .filter(|v| !v.is_empty())
            .map(Into::into)
    })
}

/// How long `env check` watches the live machine's steal and CPU pressure.
const CHECK_INTERVAL: std::time::Duration = std::time::Duration::from_secs(1);

/// The fingerprint of the live machine, or of `--root` / `PERFSLEUTH_ROOT`.
pub fn current(source: &EnvSourceArgs) -> Result<Environment, Fail> {
    let root = root_of(source);
    let mut src = match &root {
        Some(dir) if !dir.is_dir() => {
            return Err(Fail::usage(
                format!("--root {} is not a directory", dir.display()),
                "give a directory laid out like / (proc/, sys/, etc/)",
            ));
        }
        Some(dir) => Source::root(dir),
        None => Source::live(),
    };
    if let Some(file) = &source.cpuid {
        src = src
            .with_cpuid_file(file)
            .map_err(|e| Fail::usage(e, "give the output of `cpuid -r` (Debian package cpuid)"))?;
    }
    Ok(perfsleuth_runner::capture_environment(&src))
}

/// Resolves `current`, a stored run (`12`, `latest`, `latest~1`) or an exported JSON file.
fn resolve(
    spec: &str,
    source: &EnvSourceArgs,
    store: Option<&str>,
) -> Result<(String, Environment), Fail> {
    if spec == "current" {
        return Ok((current_label(source), current(source)?));
    }
    let path = Path::new(spec);
    if crate::output::names_a_file(path) {
        return perfsleuth_app::sides::environment_file(path).map(|e| (spec.to_string(), e));
    }
    if spec.ends_with(".json") || spec.contains('/') {
        return Err(Fail::usage(
            format!("{spec}: no such file"),
            "give a run id, latest, latest~N, current, or an exported JSON file",
        ));
    }
    let store = open_existing_store(store)?;
    let id = store.resolve_run(spec).map_err(Fail::from)?;
    let run = store
        .load_run_measurements(id)
        .map_err(Fail::from)?
        .ok_or_else(|| {
            Fail::usage(
                format!("run {id} not found"),
                "list the stored runs with `perfsleuth runs`",
            )
        })?;
    Ok((format!("run {id}"), run.environment))
}

fn print_json<T: serde::Serialize>(doc: &T) -> Result<(), Fail> {
    let text = schema::to_json_pretty(doc)
        .map_err(|e| Fail::usage(format!("cannot serialise JSON: {e}"), "please report this"))?;
    emit(&text, false);
    Ok(())
}

/// Section titles by key prefix, in display order.
const GROUPS: [(&str, &str); 14] = [
    ("cpu.", "CPU"),
    ("mem.", "Memory"),
    ("kernel.", "Kernel"),
    ("mitigation.", "CPU vulnerability mitigations"),
    ("libc.", "C library"),
    ("virt.", "Virtualisation"),
    ("cgroup.", "Control group"),
    ("process.", "Process"),
    ("env.", "Environment variables"),
    ("noise.", "Noise at start"),
    ("os.", "Operating system"),
    ("host.", "Host"),
    ("power.", "Power"),
    ("", "Measuring"),
];

fn value_text(f: &Fact) -> String {
    match (&f.reason, f.value == UNKNOWN) {
        (Some(reason), true) => format!("unknown ({reason})"),
        _ => f.value.clone(),
    }
}

fn render_show(label: &str, env: &Environment) -> String {
    let mut out = format!(
        "Environment of the {label}   comparability {}\n",
        comparability_hash(env)
    );
    let width = env.facts.keys().map(|k| k.len()).max().unwrap_or(0).min(40);
    let mut shown = std::collections::BTreeSet::new();
    for (prefix, title) in GROUPS {
        let rows: Vec<(&String, &Fact)> = env
            .facts
            .iter()
            .filter(|(k, _)| k.starts_with(prefix) && !shown.contains(*k))
            .collect();
        if rows.is_empty() {
            continue;
        }
        out.push_str(&format!("\n{title}\n"));
        for (key, fact) in rows {
            shown.insert(key.clone());
            let mark = match fact.class {
                ImpactClass::Identity => "●",
                ImpactClass::Performance => "○",
                ImpactClass::Context => " ",
            };
            let mut text = value_text(fact);
            // A CPU list ("0", "0-3"), which reads like a count without a word.
            if key.ends_with(".shared_cpus") && fact.value != UNKNOWN {
                let one = !text.contains([',', '-']);
                text = format!("{} {text}", if one { "CPU" } else { "CPUs" });
            }
            out.push_str(&format!("  {mark} {key:<width$}  {text}\n"));
        }
    }
    out.push_str("\n● identity (results not comparable across a change)   ○ performance (known to move results)\n");
    out
}

fn render_diff(
    la: &str,
    lb: &str,
    ea: &Environment,
    eb: &Environment,
    changes: &[perfsleuth_env::Change],
    all: bool,
) -> String {
    let (ha, hb) = (comparability_hash(ea), comparability_hash(eb));
    let mut out = format!("A: {la}   comparability {ha}\nB: {lb}   comparability {hb}\n");
    if significant(changes).next().is_none() {
        out.push_str("\nNo identity or performance facts differ.\n");
    }
    let mut current_class = None;
    for c in changes
        .iter()
        .filter(|c| all || c.class != ImpactClass::Context)
    {
        if current_class != Some(c.class) {
            current_class = Some(c.class);
            out.push_str(match c.class {
                ImpactClass::Identity => "\nIdentity changed — results are not comparable:\n",
                ImpactClass::Performance => "\nPerformance-relevant changes:\n",
                ImpactClass::Context => "\nContext (recorded, not judged):\n",
            });
        }
        out.push_str(&format!("  {}\n      {}\n", c.summary, c.why));
    }
    let hidden = changes
        .iter()
        .filter(|c| c.class == ImpactClass::Context)
        .count();
    if !all && hidden > 0 {
        out.push_str(&format!(
            "\n({hidden} context facts such as load and uptime also differ; --all shows them)\n"
        ));
    }
    out
}
