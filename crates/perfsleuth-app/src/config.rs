//! `perfsleuth.toml`: the one typed schema of the config file, found at the
//! top of the git work tree (or in the current directory). `[compare]` holds
//! the verdict settings (`compare`, `run --baseline`, `ab`); `[[bench]]` the
//! benchmarks `run` and `ab` measure when no command is given.

use crate::error::Fail;
use crate::options::RunOptions;
use serde::Deserialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// The config file.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ConfigFile {
    /// `[compare]` defaults and `[compare.benchmark."NAME"]` overrides.
    pub compare: Option<CompareConfig>,
    /// `[[bench]]`: the benchmarks of the repository.
    #[serde(default)]
    pub bench: Vec<BenchEntry>,
    /// `[variant.NAME]`: named machine set-ups for `run --variant NAME`.
    #[serde(default)]
    pub variant: BTreeMap<String, VariantConfig>,
}

/// `[variant.NAME]`: the settings of `--variant NAME=SPEC` as a table.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VariantConfig {
    /// `env:NAME=VALUE` settings.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// `unset:NAME` settings.
    #[serde(default)]
    pub unset: Vec<String>,
    /// `cpus:LIST|same-core|cross-core|cross-llc`.
    pub cpus: Option<String>,
    /// The NUMA node memory is bound to.
    pub numa: Option<usize>,
    /// `aslr:off` (false).
    pub aslr: Option<bool>,
    /// `thp:off` (false).
    pub thp: Option<bool>,
    /// `nice:N`.
    pub nice: Option<i32>,
    /// `sched:other|batch|idle`.
    pub sched: Option<String>,
    /// Simulation mode: `from:RUN` or `I1=…/D1=…/LL=…`.
    pub cache_model: Option<String>,
}

impl VariantConfig {
    /// The settings in the `KEY:VALUE` form of a SPEC.
    pub fn settings(&self) -> Vec<String> {
        let onoff = |b: bool| if b { "on" } else { "off" };
        let mut out: Vec<String> = self
            .env
            .iter()
            .map(|(k, v)| format!("env:{k}={v}"))
            .collect();
        out.extend(self.unset.iter().map(|k| format!("unset:{k}")));
        out.extend(self.cpus.iter().map(|c| format!("cpus:{c}")));
        out.extend(self.numa.map(|n| format!("numa:{n}")));
        out.extend(self.aslr.map(|b| format!("aslr:{}", onoff(b))));
        out.extend(self.thp.map(|b| format!("thp:{}", onoff(b))));
        out.extend(self.nice.map(|n| format!("nice:{n}")));
        out.extend(self.sched.iter().map(|p| format!("sched:{p}")));
        out.extend(self.cache_model.iter().map(|c| format!("cache-model:{c}")));
        out
    }
}

/// `[compare]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CompareConfig {
    /// The significance level.
    pub alpha: Option<f64>,
    /// The noise threshold.
    pub threshold: Option<Threshold>,
    /// The metrics that gate.
    pub gating: Option<Vec<String>>,
    /// Per-benchmark overrides, by benchmark name.
    #[serde(default)]
    pub benchmark: BTreeMap<String, BenchConfig>,
}

/// `[compare.benchmark."NAME"]`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchConfig {
    /// The benchmark's significance level.
    pub alpha: Option<f64>,
    /// The benchmark's noise threshold.
    pub threshold: Option<Threshold>,
    /// The benchmark's gating metrics.
    pub gating: Option<Vec<String>>,
}

/// One `[[bench]]`: a command as `run` takes it, and its name (`-n`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BenchEntry {
    /// Its name in the output.
    pub name: Option<String>,
    /// The command.
    pub command: String,
}

/// A threshold written as a fraction (`0.02`) or a percentage (`"2%"`).
#[derive(Debug, Deserialize)]
#[serde(untagged)]
pub enum Threshold {
    /// `0.02`.
    Fraction(f64),
    /// `"2%"`.
    Text(String),
}

impl Threshold {
    /// The threshold as a fraction in (0, 1).
    pub fn fraction(&self) -> Result<f64, Fail> {
        let hint = "write threshold = \"2%\" or threshold = 0.02";
        match self {
            Threshold::Fraction(f) if *f > 0.0 && *f < 1.0 => Ok(*f),
            Threshold::Fraction(f) => Err(Fail::usage(
                format!("threshold {f} in the config file is not between 0 and 1"),
                hint,
            )),
            Threshold::Text(t) => {
                crate::parse::percent(t).map_err(|e| Fail::usage(format!("config file: {e}"), hint))
            }
        }
    }
}

/// The config file named by `--config`, else the default one if it exists.
pub fn load(explicit: Option<&Path>) -> Result<Option<(PathBuf, ConfigFile)>, Fail> {
    let path = match explicit {
        Some(p) => p.to_path_buf(),
        None => match default_path() {
            Some(p) => p,
            None => return Ok(None),
        },
    };
    let config = read(&path)?;
    Ok(Some((path, config)))
}

/// With no command on the command line, the `[[bench]]` list of the config
/// file becomes the commands (and their names); without one, the error says
/// how to give them.
pub fn fill_commands(args: &mut RunOptions) -> Result<(), Fail> {
    if !args.commands.is_empty() {
        return Ok(());
    }
    let hint = "give one, e.g. perfsleuth run 'sleep 0.1', or list them as [[bench]] entries (command = \"…\") in perfsleuth.toml";
    let Some((path, config)) = load(args.verdict.config.as_deref())? else {
        return Err(Fail::usage("no command to benchmark", hint));
    };
    if config.bench.is_empty() {
        return Err(Fail::usage(
            format!(
                "no command to benchmark, and {} has no [[bench]]",
                path.display()
            ),
            hint,
        ));
    }
    if !args.name.is_empty() {
        return Err(Fail::usage(
            format!(
                "--name names commands of the command line, and the commands come from [[bench]] in {}",
                path.display()
            ),
            "give each [[bench]] a name = \"…\" instead",
        ));
    }
    let named = config.bench.iter().any(|b| b.name.is_some());
    // `ab` runs them in each worktree's top instead.
    if !args.sides {
        let dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        args.bench_dir = Some(std::fs::canonicalize(dir).unwrap_or_else(|_| dir.to_path_buf()));
    }
    for (i, b) in config.bench.into_iter().enumerate() {
        if b.command.trim().is_empty() {
            return Err(Fail::usage(
                format!(
                    "[[bench]] number {} in {} has an empty command",
                    i + 1,
                    path.display()
                ),
                "write command = \"PROGRAM ARGS…\"",
            ));
        }
        if named {
            args.name.push(b.name.unwrap_or_else(|| b.command.clone()));
        }
        args.commands.push(b.command);
    }
    Ok(())
}

/// `perfsleuth.toml` at the top of the git work tree, or in the current directory.
fn default_path() -> Option<PathBuf> {
    let cwd = std::env::current_dir().ok()?;
    let top = cwd
        .ancestors()
        .find(|d| d.join(".git").exists())
        .unwrap_or(&cwd);
    [top.join("perfsleuth.toml"), cwd.join("perfsleuth.toml")]
        .into_iter()
        .find(|p| p.is_file())
}

fn read(path: &Path) -> Result<ConfigFile, Fail> {
    // A config is a few lines; a megabyte is already not one.
    let text =
        crate::output::read_user_file(path, 1024 * 1024, perfsleuth_model::input::Accept::Regular)
            .map_err(|e| {
                Fail::usage(
                    format!("cannot read config file {}: {e}", path.display()),
                    "check --config",
                )
            })?;
    toml::from_str(&text).map_err(|e| {
        // toml's message is "where" on the first line and "what" on the last.
        let text = e.to_string();
        let lines: Vec<&str> = text
            .lines()
            .map(str::trim)
            .filter(|l| !l.is_empty())
            .collect();
        let what = match (lines.first(), lines.last()) {
            (Some(first), Some(last)) if first != last => format!("{first}: {last}"),
            (Some(first), _) => first.to_string(),
            _ => "invalid TOML".to_string(),
        };
        Fail::usage(
            format!("{}: {what}", path.display()),
            "see docs/COMPARE.md for the [compare], [compare.benchmark.\"NAME\"] and [[bench]] keys",
        )
    })
}
