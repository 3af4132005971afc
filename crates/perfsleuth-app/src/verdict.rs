//! The verdict options (built-in defaults, perfsleuth.toml `[compare]`, the
//! command line), the gate's exit code, and the one rule for measuring more
//! rounds while a comparison is undecided: what `compare`, `run --baseline`,
//! `ab`, `explain` and the server judge with.

use crate::error::Fail;
use crate::options::{ColorChoice, CompareFormat, FailOn, VerdictOptions};
use crate::sides::{self as selectors, StoreHandle};
use crate::term::{emit, use_color};
use perfsleuth_compare::{BenchmarkOptions, Comparison, Options, Side, compare};
use perfsleuth_model::Metric;
use perfsleuth_model::exit::ExitCode;

/// The verdict options of a comparison within one measurement (`ab`'s two
/// sides, `run --variant`'s set-ups). Both sides ran in the same rounds on
/// the same machine: the drift between separate runs, which the assumed and
/// learned noise bands stand for, is what interleaving cancels, and round k
/// of one side is paired with round k of the other. No stored history joins
/// in (other runs were not measured in these rounds).
pub fn paired_options(verdict: &VerdictOptions) -> Result<perfsleuth_compare::Options, Fail> {
    Ok(perfsleuth_compare::paired(&options(verdict)?))
}

/// The comparison in the chosen format (`compare` and `ab`).
pub fn render(
    comparison: &Comparison,
    format: CompareFormat,
    color: ColorChoice,
) -> Result<String, Fail> {
    Ok(match format {
        CompareFormat::Terminal => {
            perfsleuth_compare::render_terminal(comparison, use_color(color, false))
        }
        CompareFormat::Markdown => perfsleuth_compare::render_markdown(comparison),
        CompareFormat::Json => json_text(&perfsleuth_compare::to_json(comparison))?,
        CompareFormat::Github => github(
            &perfsleuth_compare::render_markdown(comparison),
            &perfsleuth_compare::render_github_annotations(comparison),
        )?,
    })
}

/// Prints a comparison to stdout in `format`; the terminal table is written
/// as it is made (100 000 benchmarks' rows and notes are 97 MB of text).
pub fn print_comparison(
    comparison: &Comparison,
    format: CompareFormat,
    color: ColorChoice,
) -> Result<(), Fail> {
    match format {
        CompareFormat::Terminal => {
            let color = use_color(color, false);
            crate::term::emit_with(false, |to| {
                perfsleuth_compare::write_terminal(comparison, color, to)
            });
        }
        _ => emit(&render(comparison, format, color)?, false),
    }
    Ok(())
}

/// `--format github`: `markdown` appended to the step summary the runner
/// names in `GITHUB_STEP_SUMMARY`, and the annotations to print; without
/// the variable (not in a workflow), both are printed.
pub fn github(markdown: &str, annotations: &str) -> Result<String, Fail> {
    match std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) {
        Some(path) => {
            crate::output::append_file(
                std::path::Path::new(&path),
                markdown,
                "GITHUB_STEP_SUMMARY",
            )?;
            Ok(annotations.to_string())
        }
        None => Ok(format!("{markdown}\n{annotations}")),
    }
}

/// A document (`perfsleuth/compare`, `perfsleuth/bisect`) as pretty JSON.
pub fn json_text<D: perfsleuth_model::schema::Document>(doc: &D) -> Result<String, Fail> {
    perfsleuth_model::schema::to_json_pretty(doc)
        .map_err(|e| Fail::usage(format!("cannot serialise JSON: {e}"), "please report this"))
}

/// Adds the same-binary history from the store to `opts` and `baseline`
/// unless `--no-history` (see [`perfsleuth_sides::add_history`]); returns its
/// notes.
pub fn history(
    verdict: &VerdictOptions,
    store: &mut StoreHandle,
    baseline: &mut Side,
    exclude: &[i64],
    opts: &mut Options,
) -> Vec<String> {
    if verdict.no_history {
        return Vec::new();
    }
    match selectors::existing_store(store) {
        Some(store) => perfsleuth_sides::add_history(store, baseline, exclude, opts),
        None => Vec::new(),
    }
}

/// A `--baseline REF` resolved before measuring: the side with its history,
/// and the verdict options that carry it.
pub struct Baseline {
    /// The baseline side (with same-binary runs at its commit added).
    pub side: Side,
    /// The verdict options, history included.
    pub opts: Options,
    /// What the history added, for the report.
    pub notes: Vec<String>,
}

/// Compares a run just made with `--baseline REF` (resolved before measuring)
/// at its last `look` (see [`perfsleuth_compare::Options::at_look`]) and
/// prints it; the comparison is the caller's to gate on and export.
/// `to_stderr`: an export owns stdout, so the comparison goes to stderr.
pub fn after_run(
    baseline: &Baseline,
    run: &perfsleuth_model::Run,
    look: Option<u32>,
    verdict: &VerdictOptions,
    color: ColorChoice,
    to_stderr: bool,
) -> Result<Comparison, Fail> {
    let (opts, baseline_side) = (&baseline.opts.at_look(look), &baseline.side);
    let candidate = Side {
        label: run
            .id
            .map_or("this run".to_string(), |id| format!("run {id} (this run)")),
        runs: vec![run.clone()],
    };
    same_mode(baseline_side, &candidate)?;
    let mut comparison = compare(baseline_side, &candidate, opts);
    comparison.notes.extend(baseline.notes.iter().cloned());
    comparison.notes.extend(perfsleuth_compare::look_note(
        look,
        baseline.opts.rule.alpha,
    ));
    if verdict.require_same_env && comparison.identity_changed {
        return Err(env_mismatch(&comparison));
    }
    emit("\n", to_stderr);
    let color = use_color(color, to_stderr);
    crate::term::emit_with(to_stderr, |to| {
        perfsleuth_compare::write_terminal(&comparison, color, to)
    });
    Ok(comparison)
}

/// What a run's comparison (with `--baseline`, or of its commands with the
/// reference) also gives for CI (`run --format github`, `--export-junit`).
#[derive(Debug, Clone, Default)]
pub struct CiOutputs {
    /// The Markdown report to $GITHUB_STEP_SUMMARY and an annotation per
    /// changed gating benchmark on stdout.
    pub github: bool,
    /// A JUnit XML test report: a test case per benchmark and metric.
    pub junit: Option<std::path::PathBuf>,
}

impl CiOutputs {
    /// Whether any is asked for.
    pub fn any(&self) -> bool {
        self.github || self.junit.is_some()
    }

    /// Gives `comparison` as asked (`suite`: the JUnit suite's name), and
    /// the gate's exit code.
    pub fn give(
        &self,
        comparison: &Comparison,
        suite: &str,
        verdict: &VerdictOptions,
    ) -> Result<i32, Fail> {
        if self.github {
            emit(
                &github(
                    &perfsleuth_compare::render_markdown(comparison),
                    &perfsleuth_compare::render_github_annotations(comparison),
                )?,
                false,
            );
        }
        if let Some(path) = &self.junit {
            let xml = perfsleuth_compare::render_junit(comparison, suite, verdict.allow_missing);
            crate::output::write_junit(path, xml)?;
        }
        Ok(exit_code(comparison, verdict))
    }
}

/// Whether the comparison of the benchmarks measured so far (`run` with
/// `benches` as its benchmarks) with `baseline` leaves a gating row
/// inconclusive: then `run --baseline` measures another round.
pub fn undecided(
    baseline: &Side,
    run: &perfsleuth_model::Run,
    benches: &[perfsleuth_runner::Bench],
    opts: &Options,
) -> bool {
    undecided_sides(baseline, &side(so_far(run, benches)), opts)
}

/// The one rule for measuring more rounds, `run --baseline`'s and `ab`'s:
/// a gating row of `baseline` against `candidate` is still inconclusive.
pub fn undecided_sides(baseline: &Side, candidate: &Side, opts: &Options) -> bool {
    perfsleuth_compare::any_gating_inconclusive(&compare(baseline, candidate, opts))
}

/// `template` with the benchmarks measured so far.
pub fn so_far(
    template: &perfsleuth_model::Run,
    benches: &[perfsleuth_runner::Bench],
) -> perfsleuth_model::Run {
    let mut run = template.clone();
    run.benchmarks = perfsleuth_runner::benchmarks(benches);
    run
}

/// A side of one run, unlabelled (for deciding, not printing).
pub fn side(run: perfsleuth_model::Run) -> Side {
    Side {
        label: String::new(),
        runs: vec![run],
    }
}

/// The note for rounds measured beyond the planned ones because
/// [`undecided_sides`] held: the same words from `run --baseline` and `ab`.
pub fn extension_note(
    rounds: u32,
    elapsed: std::time::Duration,
    max_time: std::time::Duration,
    what: &str,
) -> String {
    format!(
        "measured {rounds} rounds ({}) because {what} was inconclusive (--max-time {})",
        perfsleuth_report::format_duration_ns(elapsed.as_nanos() as f64),
        perfsleuth_report::format_duration_ns(max_time.as_nanos() as f64)
    )
}

/// Refuses sides measured in different modes (see
/// [`perfsleuth_compare::mode_mismatch`]).
pub fn same_mode(baseline: &Side, candidate: &Side) -> Result<(), Fail> {
    mode_fail(perfsleuth_compare::mode_mismatch(baseline, candidate))
}

/// [`same_mode`] for a run about to be measured in `mode`.
pub fn same_mode_as(
    baseline: &Side,
    label: &str,
    mode: perfsleuth_model::Mode,
) -> Result<(), Fail> {
    mode_fail(perfsleuth_compare::mode_mismatch_with(
        baseline, label, mode,
    ))
}

fn mode_fail(mismatch: Option<String>) -> Result<(), Fail> {
    match mismatch {
        None => Ok(()),
        Some(why) => Err(Fail::usage(
            why,
            "compare runs of one mode (`perfsleuth runs` shows each run's mode); for simulation, run both sides with --mode simulation",
        )),
    }
}

/// The exit code of a gate (`--fail-on`); when it fails, one line on stderr
/// says why, after the report.
pub fn exit_code(c: &Comparison, verdict: &VerdictOptions) -> i32 {
    match verdict.fail_on {
        Some(FailOn::Regressed) => {
            let gate = perfsleuth_compare::gate(c, verdict.allow_missing);
            if let Some(reason) = gate.reason() {
                emit(&format!("{reason}\n"), true);
            }
            ExitCode::gate(gate.fails())
        }
        None => ExitCode::OK,
    }
}

/// The error `--require-same-env` gives for runs of different machine types.
pub fn env_mismatch(c: &Comparison) -> Fail {
    let first: Vec<String> = c
        .env_changes
        .iter()
        .filter(|ch| ch.class == perfsleuth_model::ImpactClass::Identity)
        .take(3)
        .map(|ch| ch.summary.clone())
        .collect();
    Fail::usage(
        format!(
            "{} and {} ran on different machines: {}",
            c.baseline,
            c.candidate,
            first.join("; ")
        ),
        "compare runs from the same machine type, or drop --require-same-env to see verdicts marked `environment changed`",
    )
}

/// The verdict options: built-in defaults, then the config file, then the command line.
pub fn options(args: &VerdictOptions) -> Result<Options, Fail> {
    options_and_file(args).map(|(opts, _)| opts)
}

/// [`options`] and the config file they were read from, if any.
pub fn options_and_file(
    args: &VerdictOptions,
) -> Result<(Options, Option<std::path::PathBuf>), Fail> {
    let mut opts = Options {
        history_declined: args.no_history,
        ..Options::default()
    };
    let config = crate::config::load(args.config.as_deref())?;
    let file = config.as_ref().map(|(path, _)| path.clone());
    if let Some(c) = config.and_then(|(_, c)| c.compare) {
        if let Some(a) = c.alpha {
            opts.rule.alpha = check_alpha(a, "alpha in the config file")?;
        }
        if let Some(t) = c.threshold {
            opts.rule.noise_threshold = t.fraction()?;
            opts.threshold_given = true;
        }
        if let Some(g) = c.gating {
            opts.gating = metrics(&g)?;
            opts.judge_time = false;
        }
        for (name, b) in c.benchmark {
            let alpha = b
                .alpha
                .map(|a| check_alpha(a, "alpha in the config file"))
                .transpose()?;
            let threshold = b.threshold.map(|t| t.fraction()).transpose()?;
            let gating = b.gating.map(|g| metrics(&g)).transpose()?;
            opts.per_benchmark.insert(
                name,
                BenchmarkOptions {
                    alpha,
                    threshold,
                    metrics: gating,
                },
            );
        }
    }
    if let Some(a) = args.alpha {
        opts.rule.alpha = check_alpha(a, "--alpha")?;
    }
    if let Some(t) = args.threshold {
        opts.rule.noise_threshold = t;
        opts.threshold_given = true;
    }
    if !args.metric.is_empty() {
        opts.gating = metrics(&args.metric)?;
        // Named metrics gate as named: no judged-time substitution.
        opts.judge_time = false;
    }
    for m in &opts.gating {
        if !opts.metrics.contains(m) {
            opts.metrics.push(*m);
        }
    }
    Ok((opts, file))
}

fn check_alpha(a: f64, what: &str) -> Result<f64, Fail> {
    if a > 0.0 && a < 1.0 {
        Ok(a)
    } else {
        Err(Fail::usage(
            format!("{what} = {a} is not between 0 and 1"),
            "the usual choice is 0.05",
        ))
    }
}

/// Metric names (`--metric`, `gating = […]`) parsed, or a usage error naming the unknown one.
pub fn metrics(names: &[String]) -> Result<Vec<Metric>, Fail> {
    names
        .iter()
        .map(|n| {
            Metric::parse(n).ok_or_else(|| {
                Fail::usage(
                    format!("unknown metric `{n}`"),
                    format!("metrics are: {}", Metric::names().join(", ")),
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::PathBuf;

    fn args(config: Option<PathBuf>) -> VerdictOptions {
        VerdictOptions {
            alpha: None,
            threshold: None,
            metric: vec![],
            config,
            fail_on: None,
            allow_missing: false,
            require_same_env: false,
            no_history: false,
        }
    }

    #[test]
    fn config_file_sets_defaults_and_per_benchmark_overrides() {
        // Removed even when an assertion fails.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("perfsleuth.toml");
        std::fs::write(
            &path,
            "[compare]\nalpha = 0.01\nthreshold = \"2%\"\ngating = [\"wall\", \"peak_rss\"]\n\n[compare.benchmark.\"sleep 0.1\"]\nthreshold = 0.05\ngating = [\"wall\"]\n",
        )
        .unwrap();
        let opts = options(&args(Some(path.clone()))).unwrap();
        assert_eq!(opts.rule.alpha, 0.01);
        assert!((opts.rule.noise_threshold - 0.02).abs() < 1e-12);
        assert_eq!(opts.gating, vec![Metric::Wall, Metric::PeakRss]);
        let b = &opts.per_benchmark["sleep 0.1"];
        assert_eq!(b.threshold, Some(0.05));
        assert_eq!(b.metrics, Some(vec![Metric::Wall]));
        // The command line wins over the file.
        let mut cli = args(Some(path.clone()));
        cli.alpha = Some(0.1);
        assert_eq!(options(&cli).unwrap().rule.alpha, 0.1);
        std::fs::write(&path, "[compare]\nalpa = 0.01\n").unwrap();
        assert!(
            options(&args(Some(path.clone())))
                .unwrap_err()
                .message
                .contains("alpa")
        );
        std::fs::write(&path, "[compare]\ngating = [\"speed\"]\n").unwrap();
        assert!(
            options(&args(Some(path)))
                .unwrap_err()
                .message
                .contains("unknown metric")
        );
    }
}
