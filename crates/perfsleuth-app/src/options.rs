//! A run's settings as plain values, clap-free: what `run`, `ab`, `scale`
//! and `explain` are asked to do. The binary fills them from its command
//! line (perfsleuth's `args` module: flag names, help, clap's checks) and
//! `explain` from a stored run's options; [`crate::session::validate`]
//! checks a [`RunOptions`] into the [`crate::session::Checked`] plan that
//! measuring takes, as ripgrep's low arguments become its high ones.
//! The value enums derive clap's `ValueEnum` under the optional `clap`
//! feature, so each possible value and its help is declared once, here.

use std::path::PathBuf;
use std::time::Duration;

// The library's own value types, as the options hold them.
pub use perfsleuth_model::Mode;
pub use perfsleuth_runner::{Counters, When};

/// Output format of `compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum CompareFormat {
    /// A table for the terminal.
    Terminal,
    /// Markdown for a pull-request comment or $GITHUB_STEP_SUMMARY.
    Markdown,
    /// JSON (schema perfsleuth/compare, see docs/COMPARE.md).
    Json,
    /// GitHub Actions: the Markdown report appended to $GITHUB_STEP_SUMMARY
    Github,
}

/// What makes `compare` exit 1.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum FailOn {
    /// A gating metric regressed.
    Regressed,
}

/// How verdicts are reached (shared by `compare` and `run --baseline`).
#[derive(Debug, Clone, Default)]
pub struct VerdictOptions {
    /// Significance level of the tests [default: 0.05, or the config file's].
    pub alpha: Option<f64>,
    /// Changes within ±PERCENT are noise, not regressions [default: 1%, or the config file's].
    pub threshold: Option<f64>,
    /// A metric that gates --fail-on.
    pub metric: Vec<String>,
    /// Per-benchmark settings [default: perfsleuth.toml at the repository top, if present].
    pub config: Option<PathBuf>,
    /// Exit 1 when a gating metric regressed.
    pub fail_on: Option<FailOn>,
    /// With --fail-on: benchmarks of the baseline missing from the candidate.
    pub allow_missing: bool,
    /// Refuse (exit 2) when the two sides ran on machines that differ in identity facts.
    pub require_same_env: bool,
    /// Judge the two sides alone.
    pub no_history: bool,
}

/// `--time-unit`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum TimeUnitChoice {
    /// ns.
    Nanosecond,
    /// µs.
    Microsecond,
    /// ms.
    Millisecond,
    /// s.
    Second,
}

/// `--sort`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum SortChoice {
    /// As given; comparisons fastest first.
    Auto,
    /// As given.
    Command,
    /// Fastest mean first.
    MeanTime,
}

/// `--style`, as hyperfine has it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum StyleChoice {
    /// Colour and progress on a terminal.
    Auto,
    /// No colour, no progress line.
    Basic,
    /// Colour and progress even without a terminal.
    Full,
    /// Progress, no colour.
    Nocolor,
    /// Colour, no progress line.
    Color,
    /// No summary and no progress (errors, notes and exports still appear).
    None,
}

/// When to use colour.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "clap", derive(clap::ValueEnum))]
pub enum ColorChoice {
    /// Colour when stdout is a terminal and NO_COLOR is unset.
    Auto,
    /// Always colour.
    Always,
    /// Never colour.
    Never,
}

/// What to measure and how: shared by `run` and `ab`.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Commands to benchmark, one per argument [default: the `[[bench]]` list of perfsleuth.toml].
    pub commands: Vec<String>,

    /// Untimed runs of each command before measuring.
    pub warmup: u32,
    /// Exactly N timed runs per command (turns off the adaptive stopping rule).
    pub runs: Option<u32>,
    /// At least N timed runs per command.
    pub min_runs: u32,
    /// At most N timed runs per command.
    pub max_runs: Option<u32>,
    /// Time budget per command after --min-runs (e.g. 500ms, 3s, 1m; a bare number is seconds).
    pub time_budget: Duration,
    /// Stop early once the 95% CI of the median is within ±PERCENT of it [default: 1].
    pub precision: Option<f64>,
    /// Command run before every timed run, untimed (once, or once per command).
    pub prepare: Vec<String>,
    /// Command run after every timed run, untimed (once, or once per command).
    pub conclude: Vec<String>,
    /// Command run once before a command's runs (once, or once per command).
    pub setup: Vec<String>,
    /// Command run once after a command's runs (once, or once per command).
    pub cleanup: Vec<String>,
    /// Run commands through this shell [default: none, as hyperfine's -N].
    pub shell: Option<String>,
    /// No shell (the default; hyperfine's `-N`, `--shell=none`).
    pub no_shell: bool,
    /// Benchmark once per value: `{VAR}` in commands is replaced (repeatable; combinations multiply).
    pub parameter_list: Vec<String>,
    /// Benchmark once per number from MIN to MAX: `{VAR}` in commands is replaced.
    pub parameter_scan: Vec<String>,
    /// Step of --parameter-scan.
    pub step: Option<String>,
    /// Name of a command in the output (once per command, in order; `{VAR}` is replaced).
    pub name: Vec<String>,
    /// Keep going when a command exits non-zero.
    pub ignore_failure: Option<String>,
    /// Kill a run (and its process group) that takes longer than this [default: none].
    pub timeout: Option<Duration>,
    /// Where the commands' output goes.
    pub output: String,
    /// Show the commands' output (the same as --output inherit).
    pub show_output: bool,
    /// Feed this file to every run's standard input (default: /dev/null).
    pub input: Option<PathBuf>,
    /// Run each command's runs back to back instead of interleaved across commands.
    pub no_interleave: bool,
    /// Compare the others with this benchmark.
    pub reference: Option<String>,
    /// The name of a --reference command in the output (hyperfine's --reference-name).
    pub reference_name: Option<String>,
    /// Write the full results as JSON (versioned, see docs/SCHEMA.md); `-` for stdout.
    pub export_json: Option<PathBuf>,
    /// Write one CSV row per sample; `-` for stdout.
    pub export_csv: Option<PathBuf>,
    /// Write the summary as a Markdown table; `-` for stdout.
    pub export_markdown: Option<PathBuf>,
    /// Write the summary as an AsciiDoc table; `-` for stdout.
    pub export_asciidoc: Option<PathBuf>,
    /// Write the summary as an Emacs Org-mode table; `-` for stdout.
    pub export_orgmode: Option<PathBuf>,
    /// Write hyperfine's JSON shape.
    pub export_hyperfine: Option<PathBuf>,
    /// Write the sampled call stacks, folded (implies --profile); `-` for stdout.
    pub export_folded: Option<PathBuf>,
    /// Write the distribution of every benchmark's samples as an SVG chart.
    pub plot: Option<PathBuf>,
    /// Show every time in this unit (the summary and the table exports).
    pub time_unit: Option<TimeUnitChoice>,
    /// Order of the summary and the table exports.
    pub sort: SortChoice,
    /// hyperfine's output styles.
    pub style: Option<StyleChoice>,
    /// Do not store the results (also when PERFSLEUTH_STORE is set).
    pub no_store: bool,
    /// Where results are stored (`--store`); `None`: the default place.
    pub store: Option<String>,
    /// When to use colour.
    pub color: ColorChoice,
    /// walltime (timed by the clock) or simulation (counted under callgrind).
    pub mode: Mode,
    /// Also run every command under this named set-up, interleaved with the unchanged one.
    pub variant: Vec<String>,
    /// Simulation mode: count only inside this function and what it calls.
    pub collect: Option<String>,
    /// Simulation mode: counts that do not depend on this CPU [default: on where possible].
    pub portable: Option<String>,
    /// Simulation mode: counts that follow this CPU.
    pub no_portable: bool,
    /// Simulation mode: simulate these caches instead of the fixed model.
    pub cache_model: Option<String>,
    /// Counters per run through perf_event_open.
    pub counters: Counters,
    /// Count hardware events in kernel mode too (default: user space only).
    pub counters_kernel: bool,
    /// Trace lock waits with eBPF (as root): which locks threads wait on, and where.
    pub locks: When,
    /// `--profile`.
    pub profiling: ProfileOptions,
    /// `run --baseline`: the stored run to compare with after measuring.
    pub baseline: Option<String>,
    /// The progress line forced on or off (`--style`); `None`: on a terminal.
    pub progress: Option<bool>,
    /// No summary (`--style none`).
    pub quiet: bool,
    /// The directory of the perfsleuth.toml whose `[[bench]]` list gave the commands: `run` runs them from there.
    pub bench_dir: Option<PathBuf>,
    /// Set by `ab`: two sides of the plan are compared after measuring, so `--max-time` applies.
    pub sides: bool,
    /// Measure in this many rounds, each starting with the next command [default: 5, 10 in ab].
    pub rounds: Option<u32>,
    /// Measure everything N times, as N stored runs, and report the noise between them.
    pub repeat: u32,
    /// While a comparison is undecided, add rounds up to this much time in all.
    pub max_time: Option<Duration>,
    /// How the comparisons are judged (`--baseline`, two commands, variants).
    pub verdict: VerdictOptions,
}

/// `--profile`, as `run`, `ab`, `explain` (its experiments) and `scale` (each level) take it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProfileOptions {
    /// Profile where the time goes, on and off the CPU: call stacks of every timed run (docs/PROFILES.md).
    pub profile: ProfileChoice,
    /// With --profile=alloc: sample a stack every SIZE bytes allocated, on average [default: 512KiB].
    pub alloc_sample: u64,
}

/// What `--profile` records, and when.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProfileChoice {
    /// Whether to profile: off, where possible, or always.
    pub when: When,
    /// Where the time goes (sampled stacks).
    pub time: bool,
    /// Time off the CPU too (a wall profile), not only on it.
    pub off_cpu: bool,
    /// What the runs allocate (the preloaded recorder).
    pub alloc: bool,
}

impl ProfileChoice {
    /// No profile.
    pub const OFF: ProfileChoice = ProfileChoice {
        when: When::Off,
        time: true,
        off_cpu: true,
        alloc: false,
    };

    /// Parses `--profile`'s value: `on`, `off`, `auto`, `wall`, `cpu`, `alloc`, comma-separated.
    pub fn parse(text: &str) -> Result<ProfileChoice, String> {
        let mut choice = ProfileChoice {
            when: When::On,
            ..ProfileChoice::OFF
        };
        let (mut when, mut what) = (None, None);
        let mut alloc = false;
        for word in text.split(',').map(str::trim) {
            let (slot, value) = match word {
                "on" => (&mut when, "on"),
                "off" => (&mut when, "off"),
                "auto" => (&mut when, "auto"),
                "wall" => (&mut what, "wall"),
                "cpu" => (&mut what, "cpu"),
                "alloc" if !alloc => {
                    alloc = true;
                    continue;
                }
                "alloc" => return Err("`alloc` given twice".to_string()),
                other => {
                    return Err(format!(
                        "`{other}` is not a profile; give on, off or auto, wall (on and off the CPU) or cpu (on it only), and alloc (allocations), e.g. --profile=auto,cpu or --profile=wall,alloc"
                    ));
                }
            };
            if let Some(earlier) = slot.replace(value) {
                return Err(format!(
                    "`{earlier}` and `{value}` both given; give one of on, off, auto and one of wall, cpu"
                ));
            }
        }
        choice.when = match when {
            Some("off") => When::Off,
            Some("auto") => When::Auto,
            _ => When::On,
        };
        choice.off_cpu = what != Some("cpu");
        // `alloc` alone records no time; with `wall` or `cpu`, both.
        choice.time = what.is_some() || !alloc;
        choice.alloc = alloc;
        Ok(choice)
    }

    /// Whether stacks are sampled for the time (`wall` or `cpu`).
    pub fn samples_time(self) -> bool {
        self.is_on() && self.time
    }

    /// Whether allocations are recorded.
    pub fn records_allocations(self) -> bool {
        self.is_on() && self.alloc
    }

    /// Whether a profile is taken at all (`on` or `auto`).
    pub fn is_on(self) -> bool {
        self.when != When::Off
    }
}

/// `perfsleuth explain`.
#[derive(Debug, Clone)]
pub struct ExplainOptions {
    /// The baseline side.
    pub baseline: String,
    /// The candidate side.
    pub candidate: String,
    /// Explain only this benchmark (its name or `name [k=v]` key).
    pub bench: Option<String>,
    /// Output format.
    pub format: CompareFormat,
    /// List the experiments and what cannot be tested, and measure nothing.
    pub plan: bool,
    /// Rounds of the base and every experiment [default: 10; 1 in simulation].
    pub rounds: Option<u32>,
    /// Runs of each set-up in all (split between the rounds).
    pub runs: Option<u32>,
    /// Time to spend on each set-up and benchmark (split between the rounds) [default: 3s].
    pub time_budget: Option<Duration>,
    /// Significance level of each verdict, before the Holm adjustment over the experiments.
    pub alpha: Option<f64>,
    /// `--profile`.
    pub profiling: ProfileOptions,
    /// The metric to explain [default: wall time; Ir in simulation].
    pub metric: Vec<String>,
    /// Settings file with [compare] defaults [default: perfsleuth.toml here or above].
    pub config: Option<PathBuf>,
    /// Judge the observed difference on the two sides alone, without the store's same-binary history.
    pub no_history: bool,
    /// Do not store the experiments' run.
    pub no_store: bool,
    /// Where results are stored (`--store`); `None`: the default place.
    pub store: Option<String>,
    /// When to use colour.
    pub color: ColorChoice,
}

/// `perfsleuth ab`.
#[derive(Debug, Clone)]
pub struct AbOptions {
    /// The baseline revision.
    pub baseline_rev: Option<String>,
    /// The candidate revision.
    pub candidate_rev: Option<String>,
    /// Build command, run with `sh -c` in each side's worktree before measuring.
    pub build: Option<String>,
    /// Kill a build that takes longer than this; the comparison fails.
    pub build_timeout: Duration,
    /// Leave the worktrees in place (their paths are printed) for debugging.
    pub keep_worktrees: bool,
    /// Output format of the comparison.
    pub format: CompareFormat,
    /// Also write JUnit XML.
    pub export_junit: Option<PathBuf>,
    /// The run options, for both sides.
    pub run: RunOptions,
}

/// `perfsleuth bisect`: `ab`'s options, for every commit it measures.
#[derive(Debug, Clone)]
pub struct BisectOptions {
    /// The revisions (the range's ends), the build and the run options.
    pub ab: AbOptions,
    /// Refuse a range whose search would take more probes than this.
    pub max_steps: Option<usize>,
    /// Continue an interrupted bisection of the same range from the store.
    pub resume: bool,
}

/// `perfsleuth scale`.
#[derive(Debug, Clone)]
pub struct ScaleOptions {
    /// The concurrency parameter and its values, `{NAME}` in the command is replaced.
    pub param: Option<String>,
    /// Units of work each run does in total: throughput = UNITS / wall time.
    pub work: Option<f64>,
    /// Units of work per thread: throughput = UNITS × N / wall time.
    pub work_per_thread: Option<f64>,
    /// Read throughput from stdout: the first capture group (or the match) of the last matching line.
    pub throughput_regex: Option<String>,
    /// Read throughput from a JSON line on stdout: this field (dots for nested fields).
    pub throughput_json: Option<String>,
    /// Name of the sweep in the output and the store.
    pub name: Option<String>,
    /// Timed runs at each value, interleaved across values (at most 100000).
    pub runs: u32,
    /// Untimed runs at each value before measuring (at most 100000).
    pub warmup: u32,
    /// Kill a run (and its process group) that takes longer than this.
    pub timeout: Option<Duration>,
    /// Run the command through this shell (`SHELL -c CMD`).
    pub shell: Option<String>,
    /// Write an SVG chart: points with error bars, fitted curve, linear ideal, Amdahl ceiling, N*.
    pub plot: Option<PathBuf>,
    /// Print the analysis as JSON on stdout (schema perfsleuth/scale).
    pub json: bool,
    /// Counters per run through perf_event_open.
    pub counters: Counters,
    /// Trace lock waits per level with eBPF and name the contended lock (auto, on, off).
    pub locks: When,
    /// `--profile`.
    pub profiling: ProfileOptions,
    /// Do not store the results (also when PERFSLEUTH_STORE is set).
    pub no_store: bool,
    /// Where results are stored (`--store`); `None`: the default place.
    pub store: Option<String>,
    /// When to use colour.
    pub color: ColorChoice,
    /// The command: one quoted string (split like `run` does), or the words after `--`.
    pub command: Vec<String>,
}

/// The sample interval of `--profile=alloc` when none is given, in bytes.
pub const ALLOC_SAMPLE_DEFAULT: u64 = 512 * 1024;

impl Default for ProfileOptions {
    /// No profile; allocations sampled every 512 KiB when asked for.
    fn default() -> ProfileOptions {
        ProfileOptions {
            profile: ProfileChoice::OFF,
            alloc_sample: ALLOC_SAMPLE_DEFAULT,
        }
    }
}

impl Default for RunOptions {
    /// Every setting at the default the command line documents, and no
    /// command: where a run is configured from typed values, not a command
    /// line (`explain`'s re-measurement). The binary's tests check that its
    /// parser, given no flag, builds exactly this.
    fn default() -> RunOptions {
        RunOptions {
            commands: Vec::new(),
            warmup: 1,
            runs: None,
            min_runs: 10,
            max_runs: None,
            time_budget: Duration::from_secs(3),
            precision: None,
            prepare: Vec::new(),
            conclude: Vec::new(),
            setup: Vec::new(),
            cleanup: Vec::new(),
            shell: None,
            no_shell: false,
            parameter_list: Vec::new(),
            parameter_scan: Vec::new(),
            step: None,
            name: Vec::new(),
            ignore_failure: None,
            timeout: None,
            output: "null".to_string(),
            show_output: false,
            input: None,
            no_interleave: false,
            reference: None,
            reference_name: None,
            export_json: None,
            export_csv: None,
            export_markdown: None,
            export_asciidoc: None,
            export_orgmode: None,
            export_hyperfine: None,
            export_folded: None,
            plot: None,
            time_unit: None,
            sort: SortChoice::Auto,
            style: None,
            no_store: false,
            store: None,
            color: ColorChoice::Auto,
            mode: Mode::Walltime,
            variant: Vec::new(),
            collect: None,
            portable: None,
            no_portable: false,
            cache_model: None,
            counters: Counters::Auto,
            counters_kernel: false,
            locks: When::Off,
            profiling: ProfileOptions::default(),
            baseline: None,
            progress: None,
            quiet: false,
            bench_dir: None,
            sides: false,
            rounds: None,
            repeat: 1,
            max_time: None,
            verdict: VerdictOptions::default(),
        }
    }
}
