//! Turns command templates and parameters into the concrete list of
//! benchmarks, with every command already split and checked, so that all bad
//! input is reported before anything is timed.

use crate::error::Fail;
use crate::parse::scan_values;
use perfsleuth_measure::{SplitError, split_command};
use std::collections::BTreeMap;

/// How a command line becomes an argument vector.
#[derive(Debug, Clone)]
pub struct Shell(pub Option<String>);

impl Shell {
    /// The shell's program and its own arguments: `--shell` may be a
    /// command line, as hyperfine's (`--shell "bash --norc"`).
    pub fn words(shell: &str) -> Result<Vec<String>, Fail> {
        split_command(shell).map_err(|e| {
            Fail::usage(
                format!("cannot split --shell `{shell}`: {e}"),
                "give a shell and its arguments, e.g. --shell sh or --shell 'bash --norc'",
            )
        })
    }

    /// Splits (or wraps in `SHELL [ARGS] -c`) one command line.
    pub fn argv(&self, line: &str, what: &str) -> Result<Vec<String>, Fail> {
        if let Some(shell) = &self.0 {
            if line.trim().is_empty() {
                return Err(Fail::usage(
                    format!("empty {what}"),
                    "give a command to run",
                ));
            }
            let mut argv = Shell::words(shell)?;
            argv.extend(["-c".to_string(), line.to_string()]);
            return Ok(argv);
        }
        split_command(line).map_err(|e| match e {
            SplitError::ShellSyntax(op) => Fail::usage(
                format!(
                    "{what} `{line}` contains shell syntax `{op}`, but commands run without a shell"
                ),
                "pass --shell sh (or bash) to run it through a shell, or quote the character",
            ),
            SplitError::Empty => Fail::usage(format!("empty {what}"), "give a command to run"),
            other => Fail::usage(
                format!("cannot split {what} `{line}`: {other}"),
                "check the quoting",
            ),
        })
    }
}

pub use perfsleuth_runner::Planned;

/// The user's command templates and parameter options, as given.
#[derive(Debug)]
pub struct Templates<'a> {
    /// Command templates.
    pub commands: &'a [String],
    /// `--name` values.
    pub names: &'a [String],
    /// `--prepare` values.
    pub prepare: &'a [String],
    /// `--conclude` values.
    pub conclude: &'a [String],
    /// `--setup` values.
    pub setup: &'a [String],
    /// `--cleanup` values.
    pub cleanup: &'a [String],
    /// `--parameter-list` values, flattened pairs.
    pub lists: &'a [String],
    /// `--parameter-scan` values, flattened triples.
    pub scans: &'a [String],
    /// `--step` value.
    pub step: Option<&'a str>,
}

/// `p` run from `dir`: a relative program path (`./bench`, `bin/app`) made
/// absolute there, for the command and its helpers, and `dir` the working
/// directory. The command text (and so the name) stays as written, so
/// results pair across checkouts in other places.
pub fn in_dir(p: &Planned, dir: &std::path::Path) -> Planned {
    let argv = |a: &Vec<String>| -> Vec<String> {
        let mut a = a.clone();
        if let Some(first) = a.first_mut() {
            if first.contains('/') && std::path::Path::new(first.as_str()).is_relative() {
                *first = dir.join(first.as_str()).display().to_string();
            }
        }
        a
    };
    Planned {
        argv: argv(&p.argv),
        prepare: p.prepare.as_ref().map(argv),
        conclude: p.conclude.as_ref().map(argv),
        setup: p.setup.as_ref().map(argv),
        cleanup: p.cleanup.as_ref().map(argv),
        cwd: Some(dir.to_path_buf()),
        ..p.clone()
    }
}

/// Most benchmarks one run may plan (commands × parameter combinations).
pub const MAX_BENCHMARKS: u64 = 100_000;

/// Expands templates × parameter combinations into benchmarks.
pub fn plan(t: &Templates<'_>, shell: &Shell) -> Result<Vec<Planned>, Fail> {
    check_counts(t)?;
    let params = parameters(t)?;
    warn_unused_parameters(t, &params);
    warn_unknown_placeholders(t, &params);
    check_size(t, &params)?;
    let mut out: Vec<Planned> = Vec::new();
    for i in 0..t.commands.len() {
        for combo in combinations(&params) {
            let planned = benchmark(t, shell, i, combo)?;
            // Benchmarks are told apart by name and parameters (compare,
            // history): two commands under one name would be one benchmark.
            if let Some(given) = t.names.get(i) {
                if out
                    .iter()
                    .any(|p| p.name == planned.name && p.parameters == planned.parameters)
                {
                    return Err(Fail::usage(
                        format!(
                            "--name `{given}` gives two commands the same name `{}`",
                            planned.name
                        ),
                        "give each command a name of its own",
                    ));
                }
            }
            out.push(planned);
        }
    }
    Ok(out)
}

/// Refuses helpers given neither once nor once per command, and names
/// empty or not one per command.
fn check_counts(t: &Templates<'_>) -> Result<(), Fail> {
    let per_command = |values: &[String], option: &str| -> Result<(), Fail> {
        if values.len() > 1 && values.len() != t.commands.len() {
            return Err(Fail::usage(
                format!(
                    "{} {option} values for {} commands",
                    values.len(),
                    t.commands.len()
                ),
                format!("give {option} once (for all commands) or once per command"),
            ));
        }
        Ok(())
    };
    per_command(t.prepare, "--prepare")?;
    per_command(t.conclude, "--conclude")?;
    per_command(t.setup, "--setup")?;
    per_command(t.cleanup, "--cleanup")?;
    if t.names.iter().any(|n| n.trim().is_empty()) {
        return Err(Fail::usage(
            "--name is empty",
            "give each benchmark a visible name",
        ));
    }
    if !t.names.is_empty() && t.names.len() != t.commands.len() {
        return Err(Fail::usage(
            format!(
                "{} --name values for {} commands",
                t.names.len(),
                t.commands.len()
            ),
            "give one --name per command, in the same order",
        ));
    }
    Ok(())
}

/// A parameter the command does not use (hyperfine allows it: the value
/// may go to --prepare or --setup, e.g. `git checkout {branch}`) is shown in
/// the name, as hyperfine does; used nowhere, it only repeats the same
/// benchmark, which is said.
fn warn_unused_parameters(t: &Templates<'_>, params: &[(String, Vec<String>)]) {
    for (var, _) in params {
        let token = format!("{{{var}}}");
        let anywhere = t
            .commands
            .iter()
            .chain(t.prepare)
            .chain(t.conclude)
            .chain(t.setup)
            .chain(t.cleanup)
            .chain(t.names)
            .any(|c| c.contains(&token));
        if !anywhere {
            crate::term::emit(
                &format!(
                    "warning: parameter `{var}` is used by no command, helper or --name: each of its values runs the same thing (write `{token}` where the value should go)\n"
                ),
                true,
            );
        }
    }
}

/// `{m}` beside a real `{n}` is most likely a typo; alone it may be literal
/// text (awk, find -exec), so only then is it said, not refused.
fn warn_unknown_placeholders(t: &Templates<'_>, params: &[(String, Vec<String>)]) {
    if params.is_empty() {
        return;
    }
    // `ab` fills `{root}` and `{rev}` per side after planning.
    let defined: BTreeMap<String, String> = params
        .iter()
        .map(|(v, _)| v.clone())
        .chain(["root".to_string(), "rev".to_string()])
        .map(|v| (v, String::new()))
        .collect();
    let names: Vec<&str> = params.iter().map(|(v, _)| v.as_str()).collect();
    let all = t
        .commands
        .iter()
        .chain(t.prepare)
        .chain(t.conclude)
        .chain(t.setup)
        .chain(t.cleanup);
    for text in all {
        if let Some(bad) = unknown_placeholder(text, &defined) {
            crate::term::emit(
                &format!(
                    "warning: `{{{bad}}}` in `{text}` is not a parameter (parameters: {}), so it is passed on as written\n",
                    names.join(", ")
                ),
                true,
            );
        }
    }
}

/// Refuses more than [`MAX_BENCHMARKS`], counted before anything is built:
/// the product of a few scans can be billions, which would exhaust memory
/// long before any later check.
fn check_size(t: &Templates<'_>, params: &[(String, Vec<String>)]) -> Result<(), Fail> {
    let count = params
        .iter()
        .try_fold(t.commands.len() as u64, |n, (_, v)| {
            n.checked_mul(v.len() as u64)
        });
    if count.is_none_or(|n| n > MAX_BENCHMARKS) {
        let product = params
            .iter()
            .map(|(var, v)| format!("{} values of `{var}`", v.len()))
            .collect::<Vec<_>>()
            .join(" × ");
        return Err(Fail::usage(
            format!(
                "{} command{} × {product} would make {} benchmarks (at most {MAX_BENCHMARKS})",
                t.commands.len(),
                if t.commands.len() == 1 { "" } else { "s" },
                count.map_or("more than 2^64".to_string(), |n| n.to_string()),
            ),
            "scan fewer values (a larger --parameter-step-size) or fewer parameters at once",
        ));
    }
    Ok(())
}

/// The `i`th command with the parameters' values `combo`: its command line
/// and helpers split, and its name.
fn benchmark(
    t: &Templates<'_>,
    shell: &Shell,
    i: usize,
    combo: BTreeMap<String, String>,
) -> Result<Planned, Fail> {
    let sub = |s: &str| substitute(s, &combo);
    let pick = |values: &[String]| {
        values
            .get(if values.len() == 1 { 0 } else { i })
            .map(|v| sub(v))
    };
    let command = sub(&t.commands[i]);
    let argv = shell.argv(&command, "command")?;
    let prepare = pick(t.prepare)
        .map(|c| shell.argv(&c, "--prepare command"))
        .transpose()?;
    let conclude = pick(t.conclude)
        .map(|c| shell.argv(&c, "--conclude command"))
        .transpose()?;
    let setup = pick(t.setup)
        .map(|c| shell.argv(&c, "--setup command"))
        .transpose()?;
    let cleanup = pick(t.cleanup)
        .map(|c| shell.argv(&c, "--cleanup command"))
        .transpose()?;
    let name = benchmark_name(t, i, &combo, &command)?;
    Ok(Planned {
        name,
        command,
        argv,
        parameters: combo,
        prepare,
        conclude,
        setup,
        cleanup,
        cwd: None,
        variant: None,
        env: Vec::new(),
    })
}

/// The `i`th command's name (its `--name`, else the command line) with the
/// values of `combo`, and those of the parameters neither uses in brackets
/// (hyperfine's name for it: `make (branch = dev)`).
fn benchmark_name(
    t: &Templates<'_>,
    i: usize,
    combo: &BTreeMap<String, String>,
    command: &str,
) -> Result<String, Fail> {
    if let Some(bad) = t.names.get(i).and_then(|n| unknown_placeholder(n, combo)) {
        return Err(Fail::usage(
            format!(
                "--name `{}` uses `{{{bad}}}`, which is not a parameter",
                t.names[i]
            ),
            "define it with --parameter-list/--parameter-scan, or leave it out of the name",
        ));
    }
    let template = &t.commands[i];
    let unused: Vec<String> = combo
        .iter()
        .filter(|(var, _)| {
            let token = format!("{{{var}}}");
            !template.contains(&token) && !t.names.get(i).is_some_and(|n| n.contains(&token))
        })
        .map(|(var, value)| format!("{var} = {value}"))
        .collect();
    let name = t
        .names
        .get(i)
        .map(|n| substitute(n, combo))
        .unwrap_or_else(|| command.to_string());
    Ok(if unused.is_empty() {
        name
    } else {
        format!("{name} ({})", unused.join(", "))
    })
}

fn parameters(t: &Templates<'_>) -> Result<Vec<(String, Vec<String>)>, Fail> {
    let mut params: Vec<(String, Vec<String>)> = Vec::new();
    for pair in t.lists.chunks(2) {
        let [var, values] = pair else { continue };
        let vals: Vec<String> = values.split(',').map(str::to_string).collect();
        if vals.iter().any(|v| v.is_empty()) {
            return Err(Fail::usage(
                format!("--parameter-list {var} `{values}` has an empty value"),
                "separate values with single commas, e.g. -L n 1,2,4",
            ));
        }
        params.push((var.clone(), vals));
    }
    for triple in t.scans.chunks(3) {
        let [var, min, max] = triple else { continue };
        let vals = scan_values(min, max, t.step)
            .map_err(|e| Fail::usage(e, "e.g. --parameter-scan n 1 8 --step 1"))?;
        params.push((var.clone(), vals));
    }
    for (i, (var, _)) in params.iter().enumerate() {
        if var.is_empty() || !var.chars().all(|c| c.is_alphanumeric() || c == '_') {
            return Err(Fail::usage(
                format!("invalid parameter name `{var}`"),
                "use letters, digits and _",
            ));
        }
        if params[..i].iter().any(|(v, _)| v == var) {
            return Err(Fail::usage(
                format!("parameter `{var}` is given twice"),
                "give each parameter once",
            ));
        }
    }
    Ok(params)
}

/// Every combination of parameter values, first parameter varying slowest.
fn combinations(params: &[(String, Vec<String>)]) -> Vec<BTreeMap<String, String>> {
    let mut combos = vec![BTreeMap::new()];
    for (var, values) in params {
        combos = combos
            .into_iter()
            .flat_map(|c| {
                values.iter().map(move |v| {
                    let mut c = c.clone();
                    c.insert(var.clone(), v.clone());
                    c
                })
            })
            .collect();
    }
    combos
}

/// A `{NAME}` in `s` that names no parameter, if any.
fn unknown_placeholder(s: &str, values: &BTreeMap<String, String>) -> Option<String> {
    let mut rest = s;
    while let Some(open) = rest.find('{') {
        let after = &rest[open + 1..];
        let close = after.find('}')?;
        let name = &after[..close];
        if !name.is_empty()
            && name.chars().all(|c| c.is_alphanumeric() || c == '_')
            && !values.contains_key(name)
        {
            return Some(name.to_string());
        }
        rest = &after[close + 1..];
    }
    None
}

fn substitute(s: &str, values: &BTreeMap<String, String>) -> String {
    values.iter().fold(s.to_string(), |acc, (k, v)| {
        acc.replace(&format!("{{{k}}}"), v)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn strings(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn parameters_multiply_and_substitute_everywhere() {
        let commands = strings(&["./janet-{abi} {w}.janet"]);
        let names = strings(&["{abi}/{w}"]);
        let lists = strings(&["abi", "x64,x32", "w", "words,tree"]);
        let prepare = strings(&["rm -f /tmp/{abi}"]);
        let t = Templates {
            commands: &commands,
            names: &names,
            prepare: &prepare,
            conclude: &[],
            setup: &[],
            cleanup: &[],
            lists: &lists,
            scans: &[],
            step: None,
        };
        let p = plan(&t, &Shell(None)).unwrap();
        let got: Vec<&str> = p.iter().map(|b| b.name.as_str()).collect();
        assert_eq!(got, ["x64/words", "x64/tree", "x32/words", "x32/tree"]);
        assert_eq!(p[2].argv, ["./janet-x32", "words.janet"]);
        assert_eq!(
            p[2].prepare.as_deref(),
            Some(&strings(&["rm", "-f", "/tmp/x32"])[..])
        );
        assert_eq!(p[3].parameters["w"], "tree");
    }

    #[test]
    fn bad_parameters_are_refused() {
        let commands = strings(&["sleep 1"]);
        let lists = strings(&["n", "1,2"]);
        let t = Templates {
            commands: &commands,
            names: &[],
            prepare: &[],
            conclude: &[],
            setup: &[],
            cleanup: &[],
            lists: &lists,
            scans: &[],
            step: None,
        };
        // Unused by the command, the value is named, as hyperfine names it.
        let planned = plan(&t, &Shell(None)).unwrap();
        assert_eq!(planned[0].name, "sleep 1 (n = 1)");
        assert_eq!(planned[1].name, "sleep 1 (n = 2)");
        let commands = strings(&["sleep {n}"]);
        let lists = strings(&["n", "1,,2"]);
        let t = Templates {
            commands: &commands,
            lists: &lists,
            ..t
        };
        assert!(
            plan(&t, &Shell(None))
                .unwrap_err()
                .message
                .contains("empty value")
        );
    }

    #[test]
    fn names_must_be_visible_and_use_known_parameters() {
        let commands = strings(&["sleep {n}"]);
        let lists = strings(&["n", "1,2"]);
        let bad = strings(&["run {nope}"]);
        let t = Templates {
            commands: &commands,
            names: &bad,
            prepare: &[],
            conclude: &[],
            setup: &[],
            cleanup: &[],
            lists: &lists,
            scans: &[],
            step: None,
        };
        assert!(
            plan(&t, &Shell(None))
                .unwrap_err()
                .message
                .contains("`{nope}`")
        );
        let empty = strings(&[" "]);
        let t = Templates { names: &empty, ..t };
        assert!(
            plan(&t, &Shell(None))
                .unwrap_err()
                .message
                .contains("empty")
        );
        let good = strings(&["n={n} {literal text}"]);
        let t = Templates { names: &good, ..t };
        let p = plan(&t, &Shell(None)).unwrap();
        assert_eq!(p[1].name, "n=2 {literal text}");
    }

    #[test]
    fn shell_syntax_needs_a_shell() {
        let commands = strings(&["ls | wc -l"]);
        let t = Templates {
            commands: &commands,
            names: &[],
            prepare: &[],
            conclude: &[],
            setup: &[],
            cleanup: &[],
            lists: &[],
            scans: &[],
            step: None,
        };
        let err = plan(&t, &Shell(None)).unwrap_err();
        assert!(err.message.contains("shell syntax `|`"), "{}", err.message);
        assert!(err.hint.contains("--shell"));
        let p = plan(&t, &Shell(Some("sh".into()))).unwrap();
        assert_eq!(p[0].argv, ["sh", "-c", "ls | wc -l"]);
    }
}
