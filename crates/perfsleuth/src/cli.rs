//! Command-line definitions. Option names follow hyperfine where the meaning
//! is the same, so users' muscle memory carries over.

use clap::{Args, Parser, Subcommand, ValueEnum};
use std::path::PathBuf;

pub use crate::args::*;
pub use perfsleuth_app::options::{ColorChoice, CompareFormat};

/// `--version`: the package version, the commit it was built from and the
/// build profile, so a result can be traced to the binary that measured it.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (",
    env!("PERFSLEUTH_BUILD_COMMIT"),
    ", ",
    env!("PERFSLEUTH_BUILD_PROFILE"),
    ")"
);

/// Benchmark commands precisely, record the machine they ran on, and keep the history.
#[derive(Debug, Parser)]
#[command(name = "perfsleuth", version = VERSION, about, long_about = None, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// `run`'s options that `ab` and `bisect` refuse: hidden from their help.
fn hide_run_only(a: clap::Arg) -> clap::Arg {
    const RUN_ONLY: &[&str] = &[
        "repeat",
        "reference",
        "reference_name",
        "no_interleave",
        "export_json",
        "export_csv",
        "export_markdown",
        "export_asciidoc",
        "export_orgmode",
        "export_hyperfine",
        "export_folded",
        "plot",
    ];
    if RUN_ONLY.contains(&a.get_id().as_str()) {
        a.hide(true)
    } else {
        a
    }
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Benchmark one or more commands and store every sample with the environment.
    Run(Box<RunCommand>),
    /// The pull request against main in one job: both revisions built in worktrees of
    /// their own, measured interleaved on this machine, and compared.
    // `run`'s options that ab refuses are not listed in its help.
    #[command(mut_args(hide_run_only))]
    Ab(Box<AbArgs>),
    /// Which commits of a range changed the benchmark: each step an interleaved,
    /// paired comparison as `ab` makes, every culprit verified against its parent.
    #[command(mut_args(hide_run_only))]
    Bisect(Box<BisectArgs>),
    /// List the stored runs, newest first.
    Runs(RunsArgs),
    /// Print one stored run's summary (same output as `run`).
    Show(ShowArgs),
    /// The environment fingerprint: show it, diff two, check this machine.
    Env(EnvArgs),
    /// Baseline vs candidate: a verdict per benchmark and metric, with what the machine explains.
    Compare(CompareArgs),
    /// A self-contained HTML report of a run, or of a comparison of two: distributions,
    /// samples in run order, changes against the noise band, the environment.
    Report(Box<ReportArgs>),
    /// Read another tool's results (hyperfine, criterion, Google Benchmark, pytest-benchmark,
    /// go test, callgrind, gungraun, BMF) into the store, with this machine's environment or
    /// the file's own.
    Import(Box<ImportArgs>),
    /// Run a benchmark suite (cargo bench, go test -bench, pytest, a Google Benchmark binary)
    /// and import its results in one step, with the environment captured while it runs.
    Exec(Box<ExecArgs>),
    /// Which difference between two set-ups causes a result difference: each one this
    /// machine can reproduce is run as an experiment, interleaved, and ranked by the share
    /// of the difference it reproduces.
    Explain(Box<ExplainArgs>),
    /// Each benchmark over time per machine: change points, environment changes, `--check` for CI.
    History(Box<HistoryArgs>),
    /// Throughput vs concurrency: CPU idle, context switches, a USL fit and a diagnosis.
    Scale(Box<ScaleArgs>),
    /// Machine microbenchmarks (calls, syscalls, memory ladder, bandwidth, coherency, clocks,
    /// spawn), stored with the environment; `probe diff` explains what differs.
    Probe(ProbeArgs),
    /// The team server: a JSON API (upload runs, list, compare, history, environment
    /// diff) and a dashboard over a store, PostgreSQL for a team or SQLite for one machine.
    Serve(ServeArgs),
    /// Send stored runs to a team server; a run the server already holds is not sent
    /// again, and network errors are retried with backoff.
    Push(PushArgs),
    /// A team server's API tokens and projects, managed on its store.
    Server(ServerArgs),
    /// Print a shell completion script: `source <(perfsleuth completions bash)`.
    Completions(CompletionsArgs),
    /// Print a man page (roff): `perfsleuth man run | man -l -`, or `perfsleuth man > perfsleuth.1`.
    Man(ManArgs),
}

/// `perfsleuth man`.
#[derive(Debug, Args)]
pub struct ManArgs {
    /// The subcommand whose page to print (run, ab, compare, …) [default: perfsleuth's own].
    #[arg(value_name = "SUBCOMMAND")]
    pub command: Option<String>,
}

/// `perfsleuth completions`.
#[derive(Debug, Args)]
pub struct CompletionsArgs {
    /// The shell to complete in.
    #[arg(value_enum)]
    pub shell: CompletionShell,
}

/// Shells with a completion script.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum CompletionShell {
    /// GNU bash.
    Bash,
    /// Z shell.
    Zsh,
    /// fish.
    Fish,
    /// Elvish.
    Elvish,
    /// PowerShell.
    Powershell,
}

/// `perfsleuth probe`.
#[derive(Debug, Args)]
#[command(
    allow_negative_numbers = true,
    args_conflicts_with_subcommands = true,
    after_help = "Probes: calls, syscall, memory, bandwidth, coherency, clock, spawn (`--list` says what each measures).\n\nExamples:\n  perfsleuth probe\n  perfsleuth probe --quick calls syscall\n  perfsleuth probe --json > this-machine.json\n  perfsleuth probe diff latest~1 latest\n  perfsleuth probe diff other-machine.json current"
)]
pub struct ProbeArgs {
    /// Compare two probe results instead of measuring.
    #[command(subcommand)]
    pub action: Option<ProbeCommand>,
    /// Probes to run (names or comma-separated lists; `all`) [default: all].
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,
    /// Fewer samples and a coarser memory ladder.
    ///
    /// Fewer samples and a coarser memory ladder: the suite in about 3 s instead of about 9 s
    /// (buffers capped by time: 512 MiB ladder and arrays in quick mode, 1 GiB / 512 MiB otherwise).
    #[arg(long)]
    pub quick: bool,
    /// Show every metric (per ladder size, per CPU pair), not only the headline numbers.
    #[arg(long)]
    pub all: bool,
    /// Print JSON (schema perfsleuth/probe, see docs/SCHEMA.md) instead of the table.
    #[arg(long)]
    pub json: bool,
    /// List the probes and what each measures, then exit.
    #[arg(long)]
    pub list: bool,
    /// Do not store the results (also when PERFSLEUTH_STORE is set).
    #[arg(long, conflicts_with = "store")]
    pub no_store: bool,
    #[command(flatten)]
    pub store: StoreArgs,
    /// When to use colour.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

/// `perfsleuth probe` subcommands.
#[derive(Debug, Subcommand)]
pub enum ProbeCommand {
    /// What differs between two probe results and which environment facts explain it;
    /// exit 0 nothing significant, 1 a headline number differs, 2 error.
    #[command(
        after_help = "Sides: a run id, latest or latest~N (counting probe runs only), `current` (probe this machine now, as the other side was probed: quick unless it was a full run or --full is given; stored only with --save), or a file from `perfsleuth probe --json`.\n\nExamples:\n  perfsleuth probe diff latest~1 latest\n  perfsleuth probe diff before-update.json current --full"
    )]
    Diff(ProbeDiffArgs),
}

/// `perfsleuth probe diff`.
#[derive(Debug, Args)]
pub struct ProbeDiffArgs {
    /// Side A (the baseline): a run id, latest, latest~N, `current`, or a `probe --json` file.
    #[arg(value_name = "A")]
    pub a: String,
    /// Side B, the same forms.
    #[arg(value_name = "B")]
    pub b: String,
    /// For `current`: probe in full.
    ///
    /// For `current`: probe in full (about 9 s) even where the other side was --quick
    /// (then the two are listed, not judged).
    #[arg(long)]
    pub full: bool,
    /// For `current`: store the new probe run (in --store, else the default store).
    #[arg(long)]
    pub save: bool,
    /// List every paired metric (per size, per CPU pair, unchanged ones), not only headline numbers.
    #[arg(long)]
    pub all: bool,
    /// Print JSON (schema perfsleuth/probe-diff).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArgs,
    /// When to use colour.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

/// `perfsleuth compare`.
#[derive(Debug, Args)]
#[command(
    allow_negative_numbers = true,
    after_help = "Sides: a run id, latest, latest~N, a branch (its latest run), a git revision (its complete runs), or a file from --export-json.\nDefaults: candidate = latest, baseline = the latest earlier run that measured every benchmark of the candidate (on the same branch if there is one).\n\nExamples:\n  perfsleuth compare\n  perfsleuth compare main HEAD --fail-on regressed\n  perfsleuth compare base.json cand.json --format markdown >> \"$GITHUB_STEP_SUMMARY\""
)]
pub struct CompareArgs {
    /// The baseline side [default: the latest earlier run that measured the candidate's
    /// benchmarks, same branch first].
    pub baseline: Option<String>,
    /// The candidate side [default: latest].
    pub candidate: Option<String>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = CompareFormat::Terminal)]
    pub format: CompareFormat,
    /// Also write each change with its interval against the noise band as an SVG chart.
    ///
    /// Also write each change with its interval against the noise band as
    /// an SVG chart (as in `perfsleuth report`).
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Also write JUnit XML.
    ///
    /// Also write JUnit XML (GitLab, Jenkins, Azure test views): a test case
    /// per benchmark and metric, failed where the gate fails.
    #[arg(long, value_name = "FILE.xml")]
    pub export_junit: Option<PathBuf>,
    #[command(flatten)]
    pub verdict: VerdictArgs,
    #[command(flatten)]
    pub store: StoreArgs,
    /// When to use colour.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

/// `perfsleuth report`.
#[derive(Debug, Args)]
#[command(
    after_help = "One HTML file with everything inline (CSS and SVG, no script, no network), light and dark, readable anywhere. With one run (default latest): per benchmark the distribution of its samples, their progression in run order with the rounds marked, the statistics, counters, the ratios of several commands, and the environment. With two (BASELINE CANDIDATE, as for `compare`): also each change with its interval against the noise band, coloured by verdict, the environment diff with the reasons, the functions whose cost moved (simulation) and the notes. With --history: each benchmark's series with its intervals, change points and environment changes. Every chart has its numbers in a table beside it.\n\nExamples:\n  perfsleuth report -o run.html\n  perfsleuth report latest~1 latest -o pr.html\n  perfsleuth report --history -o history.html"
)]
pub struct ReportArgs {
    /// One run (a report of it) or two [default: latest].
    ///
    /// One run (a report of it) or two (BASELINE CANDIDATE: their comparison)
    /// [default: latest]; with --history, the benchmarks [default: all].
    #[arg(value_name = "RUN|BENCH")]
    pub runs: Vec<String>,
    /// The history of the benchmarks named.
    ///
    /// The history of the benchmarks named (all when none): each series
    /// with its change points and environment changes.
    #[arg(long)]
    pub history: bool,
    /// `latest` and `latest~N` count `perfsleuth probe` runs, not runs of commands.
    ///
    /// `latest` and `latest~N` count `perfsleuth probe` runs, not runs of
    /// commands (`latest~1 latest`: the last two probe runs).
    #[arg(long, conflicts_with = "history")]
    pub probes: bool,
    /// The HTML file to write.
    #[arg(short, long, value_name = "FILE")]
    pub output: PathBuf,
    #[command(flatten)]
    pub verdict: VerdictArgs,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `perfsleuth import`.
#[derive(Debug, Args)]
#[command(
    after_help = "Formats: hyperfine (--export-json), criterion (the target/criterion directory, or one benchmark's directory in it), google-benchmark (--benchmark_format=json), pytest-benchmark (--benchmark-json), go (the text of go test -bench), callgrind (a callgrind.out file: a simulation run with its profile), gungraun (iai-callgrind's cargo bench output: a simulation run), bmf (Bencher Metric Format: summaries, no samples). Each becomes one stored run; `runs`, `show`, `compare`, `history` and `report` treat it like a measured one. Profiles taken elsewhere join a stored run's benchmark instead (--into): folded (Brendan Gregg's folded stacks: inferno, flamegraph.pl, --export-folded) and perf-script (the text of `perf script` for a `perf record -g` file).\n\nExamples:\n  perfsleuth import results.json\n  perfsleuth import --format criterion target/criterion\n  go test -bench . -count 10 | perfsleuth import --format go -\n  perf script | perfsleuth import --format perf-script --into latest -"
)]
pub struct ImportArgs {
    /// The results: a file, a criterion directory, or `-` for standard input.
    #[arg(hide_short_help = true, value_name = "FILE|DIR|-")]
    pub input: PathBuf,
    /// The format; `auto` detects it from the contents and says which it chose.
    #[arg(long, default_value = "auto", value_name = "FORMAT")]
    pub format: String,
    /// Whose environment the run records.
    ///
    /// Whose environment the run records: `here` (this machine, captured now, with the
    /// file's own machine facts laid over it), `file` (only what the file records), or
    /// `auto` (`file` when the file names another host, else `here`).
    #[arg(long, value_enum, default_value_t = ImportMachine::Auto)]
    pub machine: ImportMachine,
    /// The benchmark's name, for a file of one benchmark.
    ///
    /// The benchmark's name, for a file of one benchmark (a callgrind.out names it by its
    /// command line, which differs between two builds).
    #[arg(short, long, value_name = "NAME")]
    pub name: Option<String>,
    /// A profile (folded, perf-script) joins this stored run's benchmark.
    ///
    /// A profile (folded, perf-script) joins this stored run (id, `latest`,
    /// `latest~N`): its benchmark named by --name, or its only one. A benchmark
    /// that has a profile keeps it; nothing is replaced. [default: latest]
    #[arg(long, value_name = "RUN")]
    pub into: Option<String>,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `perfsleuth exec`.
#[derive(Debug, Args)]
#[command(
    after_help = "The suite runs as given (no shell), in this directory. Its results are read from its standard output, or from --output: the file it writes, or for criterion the directory (default target/criterion, under $CARGO_TARGET_DIR when set), of which only the benchmarks this run wrote are imported. The environment is this machine's, captured as the suite starts, with the noise (load, steal, pressure) measured over its run. A suite that fails stores nothing.\n\nExamples:\n  perfsleuth exec --format criterion -- cargo bench\n  perfsleuth exec --format go -- go test -bench . -count 10\n  perfsleuth exec --format pytest-benchmark --output pb.json -- pytest --benchmark-json=pb.json\n  perfsleuth exec -- ./bm --benchmark_format=json --benchmark_repetitions=10"
)]
pub struct ExecArgs {
    /// The results' format; `auto` detects it from the output.
    #[arg(long, default_value = "auto", value_name = "FORMAT")]
    pub format: String,
    /// Where the suite writes its results.
    ///
    /// Where the suite writes its results (a file, or criterion's directory) instead of
    /// its standard output.
    #[arg(long, value_name = "PATH")]
    pub output: Option<PathBuf>,
    #[command(flatten)]
    pub store: StoreArgs,
    /// The suite's command and its arguments.
    #[arg(last = true, required = true, value_name = "CMD")]
    pub command: Vec<String>,
}

/// `import --machine`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum ImportMachine {
    /// `file` when the file names another host, else `here`.
    Auto,
    /// This machine, captured now, with the file's facts over it.
    Here,
    /// Only the facts the file records.
    File,
}

/// `perfsleuth env`.
#[derive(Debug, Args)]
pub struct EnvArgs {
    /// What to do.
    #[command(subcommand)]
    pub command: EnvCommand,
}

/// Where `current` is read from.
#[derive(Debug, Clone, Args)]
pub struct EnvSourceArgs {
    /// Read the machine from this directory laid out like /.
    ///
    /// Read the machine from this directory laid out like / (fixtures of other machines)
    /// [env: PERFSLEUTH_ROOT]
    #[arg(long, value_name = "DIR")]
    pub root: Option<PathBuf>,
    /// Take CPUID from this dump (output of `cpuid -r`) instead of the CPU or ROOT/cpuid.txt.
    #[arg(long, value_name = "FILE")]
    pub cpuid: Option<PathBuf>,
}

/// The `env` subcommands.
#[derive(Debug, Subcommand)]
pub enum EnvCommand {
    /// Show the fingerprint of this machine or of a stored run, grouped.
    Show {
        /// A stored run (id, latest, latest~N), `current`, or an exported JSON file [default: current].
        #[arg(value_name = "RUN")]
        run: Option<String>,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        source: EnvSourceArgs,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// What differs between two environments, by impact; exit 0 identical, 1 different, 2 error.
    Diff {
        /// Side A: a run id, latest, latest~N, `current`, or an exported JSON file.
        a: String,
        /// Side B, the same forms.
        b: String,
        /// Print JSON.
        #[arg(long)]
        json: bool,
        /// Also list context facts (load, uptime, host name).
        #[arg(long)]
        all: bool,
        #[command(flatten)]
        source: EnvSourceArgs,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Is this machine fit to benchmark on? Exit 2 when something makes results unreliable.
    Check {
        /// Print JSON.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        source: EnvSourceArgs,
    },
}

/// `perfsleuth run`: what to measure and how, and what to compare it with.
#[derive(Debug, Args)]
#[command(
    after_help = "Examples:\n  perfsleuth run 'sleep 0.1'\n  perfsleuth run --warmup 3 './janet-x64 words.janet' './janet-x32 words.janet'\n  perfsleuth run -L abi x64,x32 './janet-{abi} words.janet'\n  perfsleuth run --shell bash 'sort data.txt | uniq -c'"
)]
pub struct RunCommand {
    #[command(flatten)]
    pub args: RunArgs,
    /// After measuring, compare with this run (id, latest, branch, revision or export file).
    #[arg(long, value_name = "REF")]
    pub baseline: Option<String>,
    /// Also give the verdict for CI: `github` (annotations and $GITHUB_STEP_SUMMARY).
    ///
    /// Also give the run's verdict — its commands against the reference
    /// (the first, or --reference), or the run against --baseline — for CI:
    /// `github` appends the comparison's Markdown report to
    /// $GITHUB_STEP_SUMMARY (printed when it is not set) and prints an
    /// `::error` annotation for each regressed gating benchmark, a
    /// `::notice` for each improved one, after the summary (docs/CI.md).
    #[arg(long, value_enum, value_name = "FORMAT", default_value_t = RunFormat::Terminal)]
    pub format: RunFormat,
    /// Write the run's verdict as a JUnit XML test report (a test case per benchmark and metric).
    ///
    /// Write the run's verdict — its commands against the reference, or the
    /// run against --baseline — as a JUnit XML test report for GitLab,
    /// Jenkins or Azure test views: a test case per compared benchmark and
    /// metric, failed where --fail-on regressed would fail it (docs/CI.md).
    #[arg(long, value_name = "FILE.xml")]
    pub export_junit: Option<PathBuf>,
    /// After storing the run, send it to a team server (`perfsleuth push`).
    #[command(flatten)]
    pub push: RunPushArgs,
}

/// `run --format`: what the verdict is also given as.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum RunFormat {
    /// The summary for the terminal only.
    Terminal,
    /// The summary, and the verdict for GitHub Actions: the comparison's
    /// Markdown report appended to $GITHUB_STEP_SUMMARY (printed when it is
    /// not set) and an annotation for each changed gating benchmark.
    Github,
}

/// `perfsleuth push`.
#[derive(Debug, Args)]
#[command(
    after_help = "The token is read from $PERFSLEUTH_TOKEN (create one with `perfsleuth server token create --scope ingest`).\n\nExamples:\n  perfsleuth push --server http://perf.example:8080 --project app\n  PERFSLEUTH_SERVER=http://perf.example:8080 PERFSLEUTH_PROJECT=app perfsleuth push latest~2 latest~1 latest"
)]
pub struct PushArgs {
    /// Stored runs to send: ids, latest, latest~N [default: latest].
    #[arg(value_name = "RUN")]
    pub runs: Vec<String>,
    #[command(flatten)]
    pub target: PushTarget,
    /// Print a perfsleuth/push JSON document instead of a line per run.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `perfsleuth serve`.
#[derive(Debug, Args)]
#[command(
    after_help = "The store is created (or migrated) if needed. Requests need a project token (`perfsleuth server token create`), except reads of a project made public.\n\nExamples:\n  perfsleuth serve --store sqlite:team.db\n  PERFSLEUTH_STORE=postgres://perfsleuth:secret@db.example/perfsleuth perfsleuth serve --listen 0.0.0.0:8080"
)]
pub struct ServeArgs {
    #[command(flatten)]
    pub store: StoreArgs,
    /// Address and port to listen on (port 0: any free port, printed on start).
    #[arg(long, value_name = "ADDR:PORT", default_value = "127.0.0.1:8080", value_parser = crate::parse::listen_addr)]
    pub listen: std::net::SocketAddr,
    /// Largest request body accepted, in bytes or with a unit (KiB, MiB); larger uploads get 413.
    #[arg(long, value_name = "SIZE", default_value = "32MiB", value_parser = crate::parse::byte_size)]
    pub body_limit: u64,
    /// Longest a request body may take to arrive (e.g. 60s, 2m); slower uploads get 408.
    #[arg(long, value_name = "DURATION", default_value = "60s", value_parser = crate::parse::duration)]
    pub body_timeout: std::time::Duration,
    /// Verdict settings.
    ///
    /// Verdict settings (`[compare]`) for the comparisons it serves, as `compare` reads them [default: perfsleuth.toml at the repository top or in the current directory, if present].
    #[arg(hide_short_help = true, long, value_name = "FILE")]
    pub config: Option<std::path::PathBuf>,
}

/// `perfsleuth server`.
#[derive(Debug, Args)]
pub struct ServerArgs {
    #[command(subcommand)]
    pub command: ServerCommand,
}

/// `perfsleuth server …`.
#[derive(Debug, Subcommand)]
pub enum ServerCommand {
    /// API tokens: create (the secret is printed once), list, revoke.
    #[command(subcommand)]
    Token(TokenCommand),
    /// Create a project, or make its reads public (no token) or private again.
    Project(ProjectArgs),
}

/// `perfsleuth server token …`.
#[derive(Debug, Subcommand)]
pub enum TokenCommand {
    /// Create a token for a project (creating the project if needed); its secret
    /// is printed once and only its SHA-256 is stored.
    Create {
        /// The project the token opens.
        #[arg(long, value_name = "NAME")]
        project: String,
        /// What it may do, comma-separated: ingest (upload runs), read, admin (everything).
        #[arg(long, value_name = "SCOPES", default_value = "ingest,read")]
        scope: String,
        /// A name for people ("ci", "alice's laptop").
        #[arg(long, value_name = "TEXT", default_value = "token")]
        name: String,
        /// Print a perfsleuth/tokens JSON document.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// List tokens (never their secrets).
    List {
        /// Only this project's.
        #[arg(long, value_name = "NAME")]
        project: Option<String>,
        /// Print a perfsleuth/tokens JSON document.
        #[arg(long)]
        json: bool,
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Revoke a token: requests with it get 401 from then on.
    Revoke {
        /// The token's id (`server token list`).
        id: i64,
        #[command(flatten)]
        store: StoreArgs,
    },
}

/// `perfsleuth server project`.
#[derive(Debug, Args)]
pub struct ProjectArgs {
    /// The project.
    pub name: String,
    /// Anyone may read it without a token (the dashboard and read endpoints).
    #[arg(long, conflicts_with = "private")]
    pub public: bool,
    /// Reads need a token again.
    #[arg(long)]
    pub private: bool,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `perfsleuth runs`.
#[derive(Debug, Args)]
pub struct RunsArgs {
    /// Print JSON instead of a table.
    #[arg(long)]
    pub json: bool,
    /// Show at most N runs (the newest that pass the filters).
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub limit: Option<u64>,
    /// Only runs with a benchmark whose name contains TEXT.
    #[arg(long, value_name = "TEXT")]
    pub bench: Option<String>,
    /// Only runs made on this git branch.
    #[arg(long, value_name = "BRANCH")]
    pub branch: Option<String>,
    /// Only runs of this mode.
    #[arg(long, value_enum, value_name = "MODE")]
    pub mode: Option<RunsMode>,
    /// Only runs on this machine class: its hash (the ENV column) or a prefix of it.
    #[arg(long, value_name = "HASH")]
    pub machine: Option<String>,
    /// Only runs started since a date.
    ///
    /// Only runs started since a date (2026-11-30, 2026-11-30T12:00:00Z) or
    /// for a duration back from now (2h, 3d).
    #[arg(long, value_name = "WHEN")]
    pub since: Option<String>,
    #[command(flatten)]
    pub store: StoreArgs,
}

/// `runs --mode`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum RunsMode {
    /// Timed runs (`run`, `ab`, `scale`).
    Walltime,
    /// Simulation mode.
    Simulation,
    /// `perfsleuth probe` runs.
    Probe,
}

/// `perfsleuth show`.
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// Run id, `latest`, or `latest~N`.
    #[arg(default_value = "latest", value_name = "RUN")]
    pub run: String,
    /// Print the full JSON export document instead of the summary.
    #[arg(long)]
    pub json: bool,
    /// A probe run: show every metric, not only the headline numbers.
    #[arg(long)]
    pub all: bool,
    /// Compare the others with this benchmark (1-based index or name).
    #[arg(long, value_name = "N|NAME")]
    pub reference: Option<String>,
    #[command(flatten)]
    pub store: StoreArgs,
    /// When to use colour.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

/// `perfsleuth history`.
#[derive(Debug, Args)]
#[command(
    args_conflicts_with_subcommands = true,
    after_help = "Examples:\n  perfsleuth history\n  perfsleuth history 'sleep 0.01' --metric peak_rss --last 50\n  perfsleuth history --check            # in CI, after `perfsleuth run`: exit 1 on a new regression\n  perfsleuth history fit results.csv --column metric2"
)]
pub struct HistoryArgs {
    /// Measure nothing: find change points in a CSV series measured elsewhere.
    #[command(subcommand)]
    pub action: Option<HistoryCommand>,
    /// Benchmarks to show, by name or key (`name [param=value]`) [default: all].
    #[arg(value_name = "BENCH")]
    pub benchmarks: Vec<String>,
    /// The metric (wall, user, sys, peak_rss, a counter, …) [default: wall].
    ///
    /// The metric (wall, user, sys, peak_rss, a counter, …) [default: wall; with --check,
    /// the gating metrics of perfsleuth.toml].
    #[arg(long, value_name = "METRIC")]
    pub metric: Option<String>,
    /// Only runs made on this branch [default: the current branch when it has runs].
    #[arg(long, value_name = "BRANCH")]
    pub branch: Option<String>,
    /// Runs of every branch, in time order.
    #[arg(long, conflicts_with = "branch")]
    pub all_branches: bool,
    /// Only runs since a UTC date (2026-11-30), a duration back (3d) or a git revision.
    #[arg(long, value_name = "DATE|REV")]
    pub since: Option<String>,
    /// Only the last N points of each series.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub last: Option<u64>,
    /// Exit 1 when the latest run starts a regression of a gating metric that no
    /// environment change explains.
    #[arg(long)]
    pub check: bool,
    /// Also write the first series as an SVG chart.
    ///
    /// Also write the first series as an SVG chart (points with their
    /// intervals, change points, environment changes); `perfsleuth report
    /// --history` draws every series.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// With --check, also write JUnit XML.
    ///
    /// With --check, also write JUnit XML (GitLab, Jenkins, Azure test views):
    /// a test case per series, failed where the check fails.
    #[arg(long, value_name = "FILE.xml", requires = "check")]
    pub export_junit: Option<PathBuf>,
    /// Output format.
    #[arg(long, value_enum, default_value_t = CompareFormat::Terminal)]
    pub format: CompareFormat,
    #[command(flatten)]
    pub detect: DetectArgs,
    #[command(flatten)]
    pub store: StoreArgs,
    /// When to use colour.
    #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
    pub color: ColorChoice,
}

/// The change-point search's settings (`history`, `history fit`).
#[derive(Debug, Clone, Args)]
pub struct DetectArgs {
    /// Points per E-divisive window (Otava's default 50).
    #[arg(long, value_name = "N", default_value_t = 50, value_parser = clap::value_parser!(u64).range(4..=100_000))]
    pub window: u64,
    /// Largest p-value of a change point (Otava's default 0.001).
    #[arg(long, value_name = "P", default_value_t = 0.001, value_parser = crate::parse::probability)]
    pub max_p: f64,
    /// Smallest relative change reported.
    ///
    /// Smallest relative change reported (2%, 0.02; 0 for none) [default: 1.5 × each
    /// series' run-to-run noise].
    #[arg(long, value_name = "PCT", value_parser = crate::parse::percentage)]
    pub min_change: Option<f64>,
}

/// `perfsleuth history` subcommands.
#[derive(Debug, Subcommand)]
pub enum HistoryCommand {
    /// Change points of series measured elsewhere: a CSV with a header, optional label
    /// columns (commit, date) and one or more value columns.
    Fit {
        /// The CSV file (`-` for stdin).
        file: PathBuf,
        /// Only this value column.
        #[arg(long, value_name = "NAME")]
        column: Option<String>,
        /// Output format.
        #[arg(long, value_enum, default_value_t = CompareFormat::Terminal)]
        format: CompareFormat,
        #[command(flatten)]
        detect: DetectArgs,
        /// When to use colour.
        #[arg(long, value_enum, default_value_t = ColorChoice::Auto)]
        color: ColorChoice,
    },
}
