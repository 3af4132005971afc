//! The command line's run settings: flag names, help and clap's checks
//! for `run`, `ab`, `compare`, `explain` and `scale`. Each becomes the
//! clap-free value of `perfsleuth_app::options` at once (`From`), so
//! nothing below this binary sees a flag: as ripgrep's low arguments
//! become its high ones.

use clap::{Args, Subcommand};
use perfsleuth_app::options::{
    AbOptions, BisectOptions, ColorChoice, CompareFormat, Counters, ExplainOptions, FailOn, Mode,
    ProfileChoice, ProfileOptions, RunOptions, ScaleOptions, SortChoice, StyleChoice,
    TimeUnitChoice, VerdictOptions, When,
};
use perfsleuth_app::parse;
use std::path::PathBuf;

/// How verdicts are reached (shared by `compare` and `run --baseline`).
#[derive(Debug, Clone, Args)]
pub struct VerdictArgs {
    /// Significance level of the tests [default: 0.05, or the config file's].
    #[arg(hide_short_help = true, long, value_name = "P")]
    pub alpha: Option<f64>,
    /// Changes within ±PERCENT are noise, not regressions [default: 1%, or the config file's].
    ///
    /// Changes within ±PERCENT are noise, not regressions [default: 1%, or the config file's; sides measured interleaved (ab, variants) are flagged beyond ±0.2% and called no change within ±1%].
    #[arg(long, value_name = "PERCENT", value_parser = parse::percent)]
    pub threshold: Option<f64>,
    /// A metric that gates --fail-on.
    ///
    /// A metric that gates --fail-on (repeatable): wall, cpu, user, sys, peak_rss, … [default: the judged time: CPU time for a program that keeps one CPU busy without waiting, wall time otherwise; the report says which].
    #[arg(long = "metric", value_name = "NAME")]
    pub metric: Vec<String>,
    /// Per-benchmark settings [default: perfsleuth.toml at the repository top, if present].
    #[arg(hide_short_help = true, long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Exit 1 when a gating metric regressed.
    ///
    /// Exit 1 when a gating metric regressed (for CI) — or when a benchmark of
    /// the baseline is missing from the candidate, or the sides share none.
    #[arg(long, value_enum, value_name = "WHAT")]
    pub fail_on: Option<FailOn>,
    /// With --fail-on: benchmarks of the baseline missing from the candidate.
    ///
    /// With --fail-on: benchmarks of the baseline missing from the candidate
    /// (or no shared benchmark at all) do not fail the gate.
    #[arg(hide_short_help = true, long)]
    pub allow_missing: bool,
    /// Refuse (exit 2) when the two sides ran on machines that differ in identity facts.
    #[arg(hide_short_help = true, long)]
    pub require_same_env: bool,
    /// Judge the two sides alone.
    ///
    /// Judge the two sides alone: no noise learned from stored same-binary
    /// runs, and none of them added to the baseline (the assumed noise of
    /// the machine still applies).
    #[arg(long)]
    pub no_history: bool,
}

/// Options shared by every command that reads or writes the store.
#[derive(Debug, Clone, Args)]
pub struct StoreArgs {
    /// Where results are stored.
    ///
    /// Where results are stored: `sqlite:PATH`, a path, or `postgres://USER@HOST/DB`
    /// [default: $PERFSLEUTH_STORE, else
    /// .perfsleuth/results.db in the enclosing git repository, else
    /// $XDG_DATA_HOME/perfsleuth/results.db]
    #[arg(long, value_name = "URL")]
    pub store: Option<String>,
}

/// What to measure and how: shared by `run` and `ab`.
#[derive(Debug, Args)]
#[command(allow_negative_numbers = true)]
pub struct RunArgs {
    /// Commands to benchmark, one per argument [default: the `[[bench]]` list of perfsleuth.toml].
    ///
    /// Commands to benchmark; each argument is one command, split like a shell would (no shell runs it)
    /// [default: the `[[bench]]` list of perfsleuth.toml].
    #[arg(value_name = "COMMAND")]
    pub commands: Vec<String>,

    /// Untimed runs of each command before measuring.
    #[arg(short, long, value_name = "N", default_value_t = 1)]
    pub warmup: u32,
    /// Exactly N timed runs per command (turns off the adaptive stopping rule).
    #[arg(short, long, value_name = "N", conflicts_with_all = ["min_runs", "max_runs"], value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: Option<u32>,
    /// At least N timed runs per command.
    #[arg(short = 'm', long, value_name = "N", default_value_t = 10, value_parser = clap::value_parser!(u32).range(1..))]
    pub min_runs: u32,
    /// At most N timed runs per command.
    #[arg(hide_short_help = true, short = 'M', long, value_name = "N", value_parser = clap::value_parser!(u32).range(2..))]
    pub max_runs: Option<u32>,
    /// Time budget per command after --min-runs (e.g. 500ms, 3s, 1m; a bare number is seconds).
    #[arg(long, visible_alias = "min-benchmarking-time", value_name = "DURATION", default_value = "3s", value_parser = parse::duration)]
    pub time_budget: std::time::Duration,
    /// Stop early once the 95% CI of the median is within ±PERCENT of it [default: 1].
    ///
    /// Stop early once the 95% CI of the median is within ±PERCENT of it
    /// [default: 1; off when measuring in several rounds, which spend their
    /// share of the time budget: a round's own precision says nothing about
    /// the machine's drift between rounds; 0 turns it off: the budget or
    /// --max-runs decides].
    #[arg(hide_short_help = true, long, value_name = "PERCENT", value_parser = parse::percentage)]
    pub precision: Option<f64>,
    /// Command run before every timed run, untimed (once, or once per command).
    #[arg(short, long, value_name = "CMD")]
    pub prepare: Vec<String>,
    /// Command run after every timed run, untimed (once, or once per command).
    #[arg(hide_short_help = true, short = 'C', long, value_name = "CMD")]
    pub conclude: Vec<String>,
    /// Command run once before a command's runs (once, or once per command).
    #[arg(short, long, value_name = "CMD")]
    pub setup: Vec<String>,
    /// Command run once after a command's runs (once, or once per command).
    #[arg(short, long, value_name = "CMD")]
    pub cleanup: Vec<String>,
    /// Run commands through this shell [default: none, as hyperfine's -N].
    ///
    /// Run commands through this shell (`SHELL -c CMD`; it may carry its own
    /// arguments: `--shell 'bash --norc'`) instead of directly
    /// [default: none, as hyperfine's -N; `--shell none` says so explicitly].
    #[arg(short = 'S', long, value_name = "SHELL")]
    pub shell: Option<String>,
    /// No shell (the default; hyperfine's `-N`, `--shell=none`).
    #[arg(hide_short_help = true, short = 'N', conflicts_with = "shell")]
    pub no_shell: bool,
    /// Benchmark once per value: `{VAR}` in commands is replaced (repeatable; combinations multiply).
    #[arg(short = 'L', long, num_args = 2, value_names = ["VAR", "VALUES"], allow_hyphen_values = true)]
    pub parameter_list: Vec<String>,
    /// Benchmark once per number from MIN to MAX: `{VAR}` in commands is replaced.
    #[arg(short = 'P', long, num_args = 3, value_names = ["VAR", "MIN", "MAX"])]
    pub parameter_scan: Vec<String>,
    /// Step of --parameter-scan.
    #[arg(
        hide_short_help = true,
        short = 'D',
        long,
        visible_alias = "parameter-step-size",
        value_name = "S",
        requires = "parameter_scan"
    )]
    pub step: Option<String>,
    /// Name of a command in the output (once per command, in order; `{VAR}` is replaced).
    #[arg(short, long, visible_alias = "command-name", value_name = "NAME")]
    pub name: Vec<String>,
    /// Keep going when a command exits non-zero.
    ///
    /// Keep going when a command exits non-zero: all codes (`all`, hyperfine's `all-non-zero`),
    /// or only these (e.g. --ignore-failure=1,3).
    #[arg(short, long, value_name = "CODES", num_args = 0..=1, require_equals = true, default_missing_value = "all")]
    pub ignore_failure: Option<String>,
    /// Kill a run (and its process group) that takes longer than this [default: none].
    ///
    /// Kill a run (and its process group) that takes longer than this; the run fails.
    /// [default: none; a note says when a command has run for ten time budgets]
    #[arg(long, value_name = "DURATION", value_parser = parse::duration)]
    pub timeout: Option<std::time::Duration>,
    /// Where the commands' output goes.
    ///
    /// Where the commands' output goes: null, pipe (read and thrown away, as
    /// hyperfine does), inherit, or a FILE (appended to, after being emptied once).
    #[arg(long, value_name = "WHERE", default_value = "null")]
    pub output: String,
    /// Show the commands' output (the same as --output inherit).
    #[arg(hide_short_help = true, long, conflicts_with = "output")]
    pub show_output: bool,
    /// Feed this file to every run's standard input (default: /dev/null).
    #[arg(hide_short_help = true, long, value_name = "FILE")]
    pub input: Option<PathBuf>,
    /// Run each command's runs back to back instead of interleaved across commands.
    #[arg(long)]
    pub no_interleave: bool,
    /// Compare the others with this benchmark.
    ///
    /// Compare the others with this benchmark (1-based index or name) instead of the
    /// first; or, as hyperfine's --reference, a command of its own, measured first as
    /// the reference (once, whatever the parameters).
    #[arg(long, value_name = "N|NAME|CMD")]
    pub reference: Option<String>,
    /// The name of a --reference command in the output (hyperfine's --reference-name).
    #[arg(
        hide_short_help = true,
        long,
        value_name = "NAME",
        requires = "reference"
    )]
    pub reference_name: Option<String>,
    /// Write the full results as JSON (versioned, see docs/SCHEMA.md); `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub export_json: Option<PathBuf>,
    /// Write one CSV row per sample; `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub export_csv: Option<PathBuf>,
    /// Write the summary as a Markdown table; `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub export_markdown: Option<PathBuf>,
    /// Write the summary as an AsciiDoc table; `-` for stdout.
    #[arg(hide_short_help = true, long, value_name = "FILE")]
    pub export_asciidoc: Option<PathBuf>,
    /// Write the summary as an Emacs Org-mode table; `-` for stdout.
    #[arg(hide_short_help = true, long, value_name = "FILE")]
    pub export_orgmode: Option<PathBuf>,
    /// Write hyperfine's JSON shape.
    ///
    /// Write hyperfine's JSON shape (results[].command/mean/times/…, in seconds),
    /// for hyperfine's scripts; `-` for stdout.
    #[arg(hide_short_help = true, long, value_name = "FILE")]
    pub export_hyperfine: Option<PathBuf>,
    /// Write the sampled call stacks, folded (implies --profile); `-` for stdout.
    ///
    /// Write the sampled call stacks of every profiled benchmark in Brendan
    /// Gregg's folded format (`outer;…;inner count`), which inferno,
    /// flamegraph.pl and speedscope read; with several benchmarks each stack
    /// starts with the benchmark's name. Implies --profile (=on) unless
    /// --profile=auto is given; `-` for stdout.
    #[arg(long, value_name = "FILE")]
    pub export_folded: Option<PathBuf>,
    /// Write the distribution of every benchmark's samples as an SVG chart.
    ///
    /// Write the distribution of every benchmark's samples as an SVG chart
    /// (the first chart of `perfsleuth report`).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Show every time in this unit (the summary and the table exports).
    #[arg(
        hide_short_help = true,
        short = 'u',
        long,
        value_enum,
        value_name = "UNIT"
    )]
    pub time_unit: Option<TimeUnitChoice>,
    /// Order of the summary and the table exports.
    ///
    /// Order of the summary and the table exports: auto (as given, comparisons
    /// fastest first), command (as given) or mean-time (fastest first).
    #[arg(hide_short_help = true, long, value_enum, value_name = "METHOD", default_value_t = SortChoice::Auto)]
    pub sort: SortChoice,
    /// hyperfine's output styles.
    ///
    /// hyperfine's output styles: auto, basic (no colour, no progress), full
    /// (colour and progress), nocolor, color (no progress), none (no summary).
    #[arg(
        hide_short_help = true,
        long,
        value_enum,
        value_name = "TYPE",
        conflicts_with = "color"
    )]
    pub style: Option<StyleChoice>,
    /// Do not store the results (also when PERFSLEUTH_STORE is set).
    #[arg(long, conflicts_with = "store")]
    pub no_store: bool,
    /// `--store`.
    #[command(flatten)]
    pub store: StoreArgs,
    /// When to use colour.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// walltime (timed by the clock) or simulation (counted under callgrind).
    ///
    /// walltime: real runs timed by the clock; simulation: each run under callgrind
    /// (instruction and cache-miss counts, deterministic; needs valgrind).
    #[arg(long, value_enum, default_value_t = Mode::Walltime)]
    pub mode: Mode,
    /// Also run every command under this named set-up, interleaved with the unchanged one.
    ///
    /// Also run every command under this named set-up, interleaved with the
    /// unchanged one (`base`), and compare them: NAME=SPEC, SPEC being `;`-separated
    /// env:NAME=VALUE, unset:NAME, cpus:LIST|same-core|cross-core|cross-llc,
    /// aslr:off, thp:off, nice:N, sched:other|batch|idle; or NAME alone for
    /// [variant.NAME] of perfsleuth.toml.
    /// Repeatable.
    #[arg(long, value_name = "NAME=SPEC")]
    pub variant: Vec<String>,
    /// Simulation mode: count only inside this function and what it calls.
    ///
    /// Simulation mode: count only inside this function and what it calls (callgrind's
    /// --toggle-collect; * and ? wildcards).
    #[arg(hide_short_help = true, long, value_name = "FUNCTION")]
    pub collect: Option<String>,
    /// Simulation mode: counts that do not depend on this CPU [default: on where possible].
    ///
    /// Simulation mode: counts that do not depend on this CPU. glibc is told
    /// (GLIBC_TUNABLES, for the benchmarked processes only) to pick the same
    /// string and memory code on any CPU with BASELINE (x86-64-v3, the
    /// default, or x86-64-v2), checked with ld.so before measuring. On by
    /// default where this machine allows it; given, it is an error where not.
    #[arg(
        hide_short_help = true,
        long,
        value_name = "BASELINE",
        num_args = 0..=1,
        require_equals = true,
        default_missing_value = "x86-64-v3",
        conflicts_with = "no_portable"
    )]
    pub portable: Option<String>,
    /// Simulation mode: counts that follow this CPU.
    ///
    /// Simulation mode: let glibc follow this CPU (as valgrind presents it);
    /// the counts then compare only with runs on the same kind of CPU.
    #[arg(hide_short_help = true, long)]
    pub no_portable: bool,
    /// Simulation mode: simulate these caches instead of the fixed model.
    ///
    /// Simulation mode: simulate these caches instead of the fixed model:
    /// from:RUN (a stored run's or an export's L1i, L1d and last level, e.g.
    /// the other runner's) or I1=SIZE,WAYS,LINE/D1=…/LL=… in bytes.
    #[arg(hide_short_help = true, long, value_name = "SPEC")]
    pub cache_model: Option<String>,
    /// Counters per run through perf_event_open.
    ///
    /// Counters per run through perf_event_open: auto (software counters when every
    /// command's warmup took ≥ 10 ms, where their ~15 µs per process is negligible),
    /// none, software (task clock, context switches, migrations, faults) or all
    /// (+ hardware events and the futex and sched_switch tracepoints).
    #[arg(long, value_enum, value_name = "WHICH", default_value_t = Counters::Auto)]
    pub counters: Counters,
    /// Count hardware events in kernel mode too (default: user space only).
    #[arg(hide_short_help = true, long)]
    pub counters_kernel: bool,
    /// Trace lock waits with eBPF (as root): which locks threads wait on, and where.
    ///
    /// Trace lock waits with eBPF (as root): which futexes the command's threads
    /// wait on, for how long, and where in its code (docs/LOCKS.md).
    /// `--locks` is `--locks=on`, an error where the kernel or privileges do not
    /// allow it; `--locks=auto` falls back to saying why.
    #[arg(
        long,
        value_enum,
        value_name = "WHEN",
        num_args = 0..=1,
        require_equals = true,
        default_value_t = When::Off,
        default_missing_value = "on"
    )]
    pub locks: When,
    /// `--profile`.
    #[command(flatten)]
    pub profiling: Profiling,
    /// Measure in this many rounds, each starting with the next command [default: 5, 10 in ab].
    ///
    /// Measure in this many rounds, each starting with the next command (the
    /// time budget, --runs and --min-runs are split between them), so the
    /// samples spread over time and record their round [default: 5, 10 in ab;
    /// 1 with --runs (in ab the most up to 10 that divide it) and in simulation].
    #[arg(long, value_name = "K")]
    pub rounds: Option<u32>,
    /// Measure everything N times, as N stored runs, and report the noise between them.
    ///
    /// Measure everything N times, as N stored runs, then report how much
    /// each benchmark's median moved between them (the noise `compare`
    /// learns from same-binary runs).
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub repeat: u32,
    /// While a comparison is undecided, add rounds up to this much time in all.
    ///
    /// With --baseline, in ab, and for two commands: while the comparison is
    /// undecided, measure further rounds, up to this much time in all [default:
    /// 30s with --baseline, 60s in ab, 3× the two time budgets for two commands;
    /// none with --runs and in simulation]. It is judged again each time the
    /// rounds grow by half, at α/2, α/4, … (97.5 % intervals at the planned
    /// rounds), so looking again adds no false alarms.
    #[arg(long, value_name = "DURATION", value_parser = parse::duration)]
    pub max_time: Option<std::time::Duration>,
    /// How the comparisons are judged (`--baseline`, two commands, variants).
    #[command(flatten)]
    pub verdict: VerdictArgs,
}

/// `--profile`, as `run`, `ab`, `explain` (its experiments) and `scale`
/// (each level) take it.
#[derive(Debug, Clone, Copy, Args)]
pub struct Profiling {
    /// Profile where the time goes, on and off the CPU: call stacks of every timed run (docs/PROFILES.md).
    ///
    /// Profile where the time goes: the call stacks of every timed run (of
    /// each experiment in `explain`, each level in `scale`), on the CPU
    /// (cpu-clock samples at 997 Hz through perf_event_open) and off it
    /// (every switch-out of a measured thread, timed until it runs again,
    /// with the reason: lock, poll, I/O, sleep, runnable), unwound with the
    /// files' DWARF call frame information and named with inlined frames;
    /// kept per benchmark and run, shown as the functions the time is in,
    /// compared by `compare` and `ab`, drawn as flame graphs by `report`,
    /// written by --export-folded. Values, comma-separated: `wall` (on and
    /// off the CPU, the default) or `cpu` (on the CPU only); `alloc` (every
    /// allocation of the runs counted, exactly, and where they were made,
    /// sampled stacks: a preloaded recorder in front of the C library's
    /// allocator; alone, no time profile; `wall,alloc` for both); `on` (an
    /// error where the kernel does not allow it) or `auto` (a note instead,
    /// and no profile of runs too short to give 10 samples each).
    /// `--profile` is `--profile=on,wall`. Off-CPU time needs root or
    /// perf_event_paranoid ≤ 1; without it the profile is on-CPU only and
    /// says so. The allocation counts are metrics `compare` judges
    /// (alloc_count, alloc_bytes, alloc_peak_bytes).
    #[arg(
        long,
        value_name = "WHAT",
        num_args = 0..=1,
        require_equals = true,
        default_value = "off",
        default_missing_value = "on",
        value_parser = ProfileChoice::parse
    )]
    pub profile: ProfileChoice,
    /// With --profile=alloc: sample a stack every SIZE bytes allocated, on average [default: 512KiB].
    ///
    /// With --profile=alloc: sample an allocation's stack every SIZE bytes
    /// allocated, on average (a Poisson process over the bytes, as tcmalloc
    /// and Go sample). The counts are exact whatever the size; smaller sizes
    /// name smaller changes of who allocated, and cost more for a program
    /// that allocates a lot (docs/PROFILES.md, "Allocations").
    #[arg(
        long,
        value_name = "SIZE",
        default_value = "512KiB",
        value_parser = parse::byte_size,
        hide_short_help = true
    )]
    pub alloc_sample: u64,
}

/// `perfsleuth explain`.
#[derive(Debug, Args)]
#[command(
    after_help = "Each side is a stored run (id, latest, a branch, a revision), a --export-json file, a fingerprint from `perfsleuth env show --json`, or `current` (this machine as it is, measured now). The benchmarks of the stored run are rerun here: the set-up of the side this machine stands for as the base, and one experiment per difference it can reproduce for one process (a glibc hwcaps mask for another CPU's features, glibc's cache sizes, GLIBC_TUNABLES entries, environment variables, the CPU set, THP and ASLR off; in simulation the other machine's caches), measured interleaved and compared with the base by the rule of `compare`, paired run by run. Differences no setting of one process can change (kernel, mitigations, the CPU itself) are listed as not tested, with what the probes say about them.\n\nExamples:\n  perfsleuth explain 12 13\n  perfsleuth explain intel-runner.json current\n  perfsleuth explain latest~1 latest 'sort big.txt' --format markdown"
)]
pub struct ExplainArgs {
    /// The baseline side.
    pub baseline: String,
    /// The candidate side.
    pub candidate: String,
    /// Explain only this benchmark (its name or `name [k=v]` key).
    pub bench: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = CompareFormat::Terminal)]
    pub format: CompareFormat,
    /// List the experiments and what cannot be tested, and measure nothing.
    #[arg(long)]
    pub plan: bool,
    /// Rounds of the base and every experiment [default: 10; 1 in simulation].
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(2..))]
    pub rounds: Option<u32>,
    /// Runs of each set-up in all (split between the rounds).
    #[arg(short, long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..))]
    pub runs: Option<u32>,
    /// Time to spend on each set-up and benchmark (split between the rounds) [default: 3s].
    #[arg(long, value_name = "DURATION", value_parser = parse::duration)]
    pub time_budget: Option<std::time::Duration>,
    /// Significance level of each verdict, before the Holm adjustment over the experiments.
    #[arg(hide_short_help = true, long, value_name = "ALPHA")]
    pub alpha: Option<f64>,
    /// `--profile`.
    #[command(flatten)]
    pub profiling: Profiling,
    /// The metric to explain [default: wall time; Ir in simulation].
    #[arg(long, value_name = "NAME")]
    pub metric: Vec<String>,
    /// Settings file with [compare] defaults [default: perfsleuth.toml here or above].
    #[arg(hide_short_help = true, long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Judge the observed difference on the two sides alone, without the
    /// same-binary history of the store.
    #[arg(long)]
    pub no_history: bool,
    /// Do not store the experiments' run.
    #[arg(long, conflicts_with = "store")]
    pub no_store: bool,
    /// `--store`.
    #[command(flatten)]
    pub store: StoreArgs,
    /// When to use colour.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

/// `perfsleuth ab`.
#[derive(Debug, Args)]
#[command(
    after_help = "Each revision is checked out into a temporary git worktree (your tree is never touched), built with --build there, and its commands run with the worktree as the working directory ({root}: its absolute path, {rev}: its commit). Both sides are measured interleaved run by run, each round starting with the other side, judged on the adjacent pairs of runs (the median of their ratios, its interval and p-value the sign test's; on CPU time for a program that keeps one CPU busy without waiting, else wall time; the report says which) and stored as two linked runs; identical binaries never fail --fail-on. The run options below apply to both sides (`run`'s --export-json, --export-csv and the other --export-FORMAT files, --plot, --repeat, --reference and --no-interleave belong to one run and are not ab's; --export-junit is ab's own).\n\nExamples:\n  perfsleuth ab --build 'cargo build --release' -- target/release/app input.txt\n  perfsleuth ab --baseline v1.2 --candidate HEAD --build make -- ./bench\n  perfsleuth ab --build make --format markdown --fail-on regressed -- ./bench >> \"$GITHUB_STEP_SUMMARY\""
)]
pub struct AbArgs {
    /// The baseline revision.
    ///
    /// The baseline revision [default: the merge base of HEAD with the default branch:
    /// origin/HEAD, else main, else master].
    #[arg(long = "baseline", value_name = "REV")]
    pub baseline_rev: Option<String>,
    /// The candidate revision.
    ///
    /// The candidate revision [default: the working tree as it is, uncommitted changes
    /// and untracked files included].
    #[arg(long = "candidate", value_name = "REV")]
    pub candidate_rev: Option<String>,
    /// Build command, run with `sh -c` in each side's worktree before measuring.
    #[arg(long, value_name = "CMD")]
    pub build: Option<String>,
    /// Kill a build that takes longer than this; the comparison fails.
    #[arg(long, value_name = "DURATION", default_value = "30m", value_parser = parse::duration)]
    pub build_timeout: std::time::Duration,
    /// Leave the worktrees in place (their paths are printed) for debugging.
    #[arg(long)]
    pub keep_worktrees: bool,
    /// Output format of the comparison.
    #[arg(long, value_enum, default_value_t = CompareFormat::Terminal)]
    pub format: CompareFormat,
    /// Also write JUnit XML.
    ///
    /// Also write JUnit XML (GitLab, Jenkins, Azure test views): a test case
    /// per benchmark and metric, failed where the gate fails.
    #[arg(long, value_name = "FILE.xml")]
    pub export_junit: Option<PathBuf>,
    /// The run options, for both sides.
    #[command(flatten)]
    pub run: RunArgs,
}

/// `perfsleuth bisect`.
#[derive(Debug, Args)]
#[command(
    after_help = "The range is the first-parent history from --baseline (the last commit known good) to --candidate (the first known bad; default HEAD); a merge is one step. The ends are measured first: if they do not differ here, bisect says so and names nothing. Then each step measures a segment's ends and its midpoint interleaved, run by run, and judges each half as `ab` judges its sides (paired runs, the same verdict rule and --max-time); a half that changed is split again, one that cannot be decided is reported as undecided, never as unchanged. Every culprit is measured again against its parent before it is named, with its share of the whole change. Each commit is checked out and built once (--build, in a worktree of its own) and reused; one that does not build is skipped as `git bisect skip` does. Every step is stored as a run per commit. docs/BISECT.md.\n\nExamples:\n  perfsleuth bisect --baseline v1.2 --candidate HEAD --build make -- ./bench input.txt\n  perfsleuth bisect --baseline v1.2 --build 'cargo build --release' --format json -- target/release/app"
)]
pub struct BisectArgs {
    /// Refuse a range that takes more steps than N to search [default: no limit].
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(2..))]
    pub max_steps: Option<u64>,
    /// Bisect the newest change point of this benchmark's stored history.
    ///
    /// Bisect the newest change point of this benchmark's stored history (as
    /// `perfsleuth history BENCH` finds it): from the commit of the last run
    /// before it to the commit of the first run after it.
    #[arg(long, value_name = "BENCH", conflicts_with_all = ["baseline_rev", "candidate_rev"])]
    pub from_history: Option<String>,
    /// Continue an interrupted bisection of the same range and commands: the
    /// steps it stored are judged again from the store, not measured again.
    #[arg(long)]
    pub resume: bool,
    /// `ab`'s options: the revisions, the build, the run options.
    #[command(flatten)]
    pub ab: AbArgs,
    /// After the bisection, send its runs to a team server, which shows them together.
    #[command(flatten)]
    pub push: RunPushArgs,
}

/// `perfsleuth scale`.
#[derive(Debug, Args)]
#[command(
    allow_negative_numbers = true,
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true,
    after_help = "Throughput: exactly one of --work, --work-per-thread, --throughput-regex, --throughput-json.\n\nExamples:\n  perfsleuth scale --param threads=1..8 --work-per-thread 2000000 -- ./counters --threads {threads} --ops 2000000\n  perfsleuth scale --param clients=1,2,4,8,16 --throughput-regex 'ops/s: ([0-9.]+)' './bench -c {clients}'\n  perfsleuth scale fit measurements.csv --plot usl.svg"
)]
#[command(group(clap::ArgGroup::new("throughput").required(true).args(["work", "work_per_thread", "throughput_regex", "throughput_json"])))]
pub struct ScaleArgs {
    /// Fit measurements made elsewhere instead of measuring.
    #[command(subcommand)]
    pub action: Option<ScaleCommand>,
    /// The concurrency parameter and its values, `{NAME}` in the command is replaced.
    ///
    /// The concurrency parameter and its values, `{NAME}` in the command is replaced:
    /// NAME=1,2,4,8 or NAME=1..16 (ranges and lists mix: 1,2,4..8).
    #[arg(long, value_name = "NAME=VALUES", required = true)]
    pub param: Option<String>,
    /// Units of work each run does in total: throughput = UNITS / wall time.
    #[arg(long, value_name = "UNITS", value_parser = parse::positive_number)]
    pub work: Option<f64>,
    /// Units of work per thread: throughput = UNITS × N / wall time.
    #[arg(long, value_name = "UNITS", value_parser = parse::positive_number)]
    pub work_per_thread: Option<f64>,
    /// Read throughput from stdout: the first capture group (or the match) of the last matching line.
    #[arg(long, value_name = "REGEX")]
    pub throughput_regex: Option<String>,
    /// Read throughput from a JSON line on stdout: this field (dots for nested fields).
    #[arg(long, value_name = "FIELD")]
    pub throughput_json: Option<String>,
    /// Name of the sweep in the output and the store.
    ///
    /// Name of the sweep in the output and the store (default: the command), so that a
    /// sweep of the fixed binary pairs with the one before it in `compare`.
    #[arg(short, long, value_name = "NAME")]
    pub name: Option<String>,
    /// Timed runs at each value, interleaved across values (at most 100000).
    #[arg(short, long, value_name = "N", default_value_t = 5, value_parser = clap::value_parser!(u32).range(1..=100_000))]
    pub runs: u32,
    /// Untimed runs at each value before measuring (at most 100000).
    #[arg(short, long, value_name = "N", default_value_t = 1, value_parser = clap::value_parser!(u32).range(0..=100_000))]
    pub warmup: u32,
    /// Kill a run (and its process group) that takes longer than this.
    #[arg(long, value_name = "DURATION", value_parser = parse::duration)]
    pub timeout: Option<std::time::Duration>,
    /// Run the command through this shell (`SHELL -c CMD`).
    #[arg(short = 'S', long, value_name = "SHELL")]
    pub shell: Option<String>,
    /// Write an SVG chart: points with error bars, fitted curve, linear ideal, Amdahl ceiling, N*.
    #[arg(long, value_name = "FILE")]
    pub plot: Option<PathBuf>,
    /// Print the analysis as JSON on stdout (schema perfsleuth/scale).
    #[arg(long)]
    pub json: bool,
    /// Counters per run through perf_event_open.
    ///
    /// Counters per run through perf_event_open: none, software (+ the futex and
    /// sched_switch tracepoints, the lock-contention signal) or all (+ hardware events).
    #[arg(long, value_enum, value_name = "WHICH", default_value_t = Counters::Software)]
    pub counters: Counters,
    /// Trace lock waits per level with eBPF and name the contended lock
    /// (docs/LOCKS.md): auto (where the kernel and privileges allow it, else the
    /// futex counts alone), on (an error where it cannot), off.
    #[arg(
        long,
        value_enum,
        value_name = "WHEN",
        num_args = 0..=1,
        require_equals = true,
        default_value_t = When::Auto,
        default_missing_value = "on"
    )]
    pub locks: When,
    /// `--profile`.
    #[command(flatten)]
    pub profiling: Profiling,
    /// Do not store the results (also when PERFSLEUTH_STORE is set).
    #[arg(long, conflicts_with = "store")]
    pub no_store: bool,
    /// `--store`.
    #[command(flatten)]
    pub store: StoreArgs,
    /// When to use colour.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
    /// The command: one quoted string (split like `run` does), or the words after `--`.
    #[arg(
        value_name = "COMMAND",
        trailing_var_arg = true,
        allow_hyphen_values = true,
        required = true
    )]
    pub command: Vec<String>,
}

/// `perfsleuth scale` subcommands.
#[derive(Debug, Subcommand)]
pub enum ScaleCommand {
    /// Fit the USL to measurements made elsewhere: a CSV with columns N,X (repeated N = repeated runs).
    Fit {
        /// The CSV file (`-` for stdin).
        file: PathBuf,
        /// CPUs the measured system could use; beyond them the fit assumes threads share CPUs.
        #[arg(long, value_name = "C", value_parser = parse::positive_number)]
        cpus: Option<f64>,
        /// Name of the concurrency column in the output.
        #[arg(long, value_name = "NAME", default_value = "N")]
        param: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Write an SVG chart.
        #[arg(long, value_name = "FILE")]
        plot: Option<PathBuf>,
        /// When to use colour.
        #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
        color: ColorChoice,
    },
}

// Each flag becomes its option; what no flag sets starts at its default.

impl From<VerdictArgs> for VerdictOptions {
    fn from(a: VerdictArgs) -> VerdictOptions {
        VerdictOptions {
            alpha: a.alpha,
            threshold: a.threshold,
            metric: a.metric,
            config: a.config,
            fail_on: a.fail_on,
            allow_missing: a.allow_missing,
            require_same_env: a.require_same_env,
            no_history: a.no_history,
        }
    }
}

impl From<Profiling> for ProfileOptions {
    fn from(a: Profiling) -> ProfileOptions {
        ProfileOptions {
            profile: a.profile,
            alloc_sample: a.alloc_sample,
        }
    }
}

impl From<RunArgs> for RunOptions {
    fn from(a: RunArgs) -> RunOptions {
        RunOptions {
            commands: a.commands,
            warmup: a.warmup,
            runs: a.runs,
            min_runs: a.min_runs,
            max_runs: a.max_runs,
            time_budget: a.time_budget,
            precision: a.precision,
            prepare: a.prepare,
            conclude: a.conclude,
            setup: a.setup,
            cleanup: a.cleanup,
            shell: a.shell,
            no_shell: a.no_shell,
            parameter_list: a.parameter_list,
            parameter_scan: a.parameter_scan,
            step: a.step,
            name: a.name,
            ignore_failure: a.ignore_failure,
            timeout: a.timeout,
            output: a.output,
            show_output: a.show_output,
            input: a.input,
            no_interleave: a.no_interleave,
            reference: a.reference,
            reference_name: a.reference_name,
            export_json: a.export_json,
            export_csv: a.export_csv,
            export_markdown: a.export_markdown,
            export_asciidoc: a.export_asciidoc,
            export_orgmode: a.export_orgmode,
            export_hyperfine: a.export_hyperfine,
            export_folded: a.export_folded,
            plot: a.plot,
            time_unit: a.time_unit,
            sort: a.sort,
            style: a.style,
            no_store: a.no_store,
            store: a.store.store,
            color: a.color,
            mode: a.mode,
            variant: a.variant,
            collect: a.collect,
            portable: a.portable,
            no_portable: a.no_portable,
            cache_model: a.cache_model,
            counters: a.counters,
            counters_kernel: a.counters_kernel,
            locks: a.locks,
            profiling: a.profiling.into(),
            rounds: a.rounds,
            repeat: a.repeat,
            max_time: a.max_time,
            verdict: a.verdict.into(),
            ..RunOptions::default()
        }
    }
}

impl From<ExplainArgs> for ExplainOptions {
    fn from(a: ExplainArgs) -> ExplainOptions {
        ExplainOptions {
            baseline: a.baseline,
            candidate: a.candidate,
            bench: a.bench,
            format: a.format,
            plan: a.plan,
            rounds: a.rounds,
            runs: a.runs,
            time_budget: a.time_budget,
            alpha: a.alpha,
            profiling: a.profiling.into(),
            metric: a.metric,
            config: a.config,
            no_history: a.no_history,
            no_store: a.no_store,
            store: a.store.store,
            color: a.color,
        }
    }
}

impl From<AbArgs> for AbOptions {
    fn from(a: AbArgs) -> AbOptions {
        AbOptions {
            baseline_rev: a.baseline_rev,
            candidate_rev: a.candidate_rev,
            build: a.build,
            build_timeout: a.build_timeout,
            keep_worktrees: a.keep_worktrees,
            format: a.format,
            export_junit: a.export_junit,
            run: a.run.into(),
        }
    }
}

impl From<ScaleArgs> for ScaleOptions {
    fn from(a: ScaleArgs) -> ScaleOptions {
        ScaleOptions {
            param: a.param,
            work: a.work,
            work_per_thread: a.work_per_thread,
            throughput_regex: a.throughput_regex,
            throughput_json: a.throughput_json,
            name: a.name,
            runs: a.runs,
            warmup: a.warmup,
            timeout: a.timeout,
            shell: a.shell,
            plot: a.plot,
            json: a.json,
            counters: a.counters,
            locks: a.locks,
            profiling: a.profiling.into(),
            no_store: a.no_store,
            store: a.store.store,
            color: a.color,
            command: a.command,
        }
    }
}

impl From<BisectArgs> for BisectOptions {
    fn from(a: BisectArgs) -> BisectOptions {
        BisectOptions {
            ab: a.ab.into(),
            max_steps: a.max_steps.map(|m| m as usize),
            resume: a.resume,
        }
    }
}

/// `run --push`.
#[derive(Debug, Args)]
pub struct RunPushArgs {
    /// After the run is stored, push it to --server's --project.
    ///
    /// After the run is stored, push it to --server's --project (token from
    /// $PERFSLEUTH_TOKEN); a failed push exits 2 after the results, which stay stored.
    #[arg(long, requires_all = ["server", "project"], conflicts_with = "no_store")]
    pub push: bool,
    #[command(flatten)]
    pub target: PushTarget,
}

/// The team server and project runs are pushed to.
#[derive(Debug, Clone, Args)]
pub struct PushTarget {
    /// The team server's base URL, e.g. http://perf.example:8080.
    #[arg(
        hide_short_help = true,
        long,
        value_name = "URL",
        env = "PERFSLEUTH_SERVER"
    )]
    pub server: Option<String>,
    /// The project on the server.
    #[arg(
        hide_short_help = true,
        long,
        value_name = "NAME",
        env = "PERFSLEUTH_PROJECT"
    )]
    pub project: Option<String>,
    /// HTTP attempts per request before giving up (network errors, 5xx, 408,
    /// 429), with a doubling, jittered wait from 0.25 s to 8 s between them.
    #[arg(hide_short_help = true, long, value_name = "N", default_value_t = perfsleuth_server::client::DEFAULT_ATTEMPTS,
          value_parser = clap::value_parser!(u32).range(1..=100))]
    pub attempts: u32,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_parser_given_no_flag_builds_the_default_options() {
        use clap::Parser as _;
        #[derive(clap::Parser)]
        struct Cli {
            #[command(flatten)]
            run: RunArgs,
        }
        let parsed = RunOptions::from(Cli::parse_from(["run"]).run);
        assert_eq!(
            format!("{parsed:?}"),
            format!("{:?}", RunOptions::default())
        );
        assert_eq!(parsed.warmup, 1);
        assert_eq!(parsed.time_budget, std::time::Duration::from_secs(3));
        assert_eq!(parsed.profiling.alloc_sample, 512 * 1024);
    }
}
