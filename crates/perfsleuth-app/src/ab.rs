//! `ab`'s sides: two revisions of the repository resolved, each built in a
//! temporary worktree of its own, measured interleaved in one session on
//! one machine, stored as two linked runs, and compared with the one
//! verdict rule. The binary prints the [`AbComparison`] this returns.
//!
//! Separate CI jobs for baseline and candidate can never beat the machine's
//! drift between them; measured in the same rounds, both sides see the same
//! drift (Bencher's relative benchmarking, Pinpoint's try jobs).

use crate::error::Fail;
use crate::options::{AbOptions, RunOptions};
use crate::session::{Checked, Measurement, Part};
use crate::term::emit;
use perfsleuth_compare::{Comparison, Side};
use perfsleuth_measure::Spawner;
use perfsleuth_model::schema::{AbBuild, AbInfo, AbSide};
use perfsleuth_model::{GitInfo, Run};
use perfsleuth_runner::{Planned, Stop};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// One side of the comparison.
pub struct Rev {
    /// "baseline" or "candidate".
    pub role: &'static str,
    /// The commit checked out (for a dirty candidate: HEAD's).
    pub commit: String,
    /// The candidate is the working tree with uncommitted changes.
    pub dirty: bool,
    /// How it was chosen, for the report ("merge base of HEAD and main").
    pub why: String,
}

impl Rev {
    /// The source-control state its run is stored with.
    fn git(&self) -> GitInfo {
        GitInfo {
            commit: self.commit.clone(),
            branch: None,
            dirty: self.dirty,
        }
    }

    /// Its short commit, "+uncommitted" for a dirty working tree.
    pub fn short(&self) -> String {
        let c = perfsleuth_model::short_commit(&self.commit).to_string();
        if self.dirty {
            format!("{c}+uncommitted")
        } else {
            c
        }
    }
}

/// What `ab` measured.
pub enum AbOutcome {
    /// Interrupted: the ids of the two runs stored so far (status interrupted).
    Interrupted {
        /// The stored runs' ids, when stored.
        ids: Option<(i64, i64)>,
        /// The exit code.
        code: i32,
    },
    /// Measured: the comparison to print.
    Measured(Box<AbComparison>),
}

/// Both sides measured and compared.
pub struct AbComparison {
    /// The comparison with the commits, builds and notes; rows of identical
    /// programs still gating (as the report shows them).
    pub comparison: Comparison,
    /// The `ab` section of the JSON report.
    pub info: AbInfo,
    /// The session's result (notes, warnings, the stored-run note).
    pub measurement: Measurement,
    /// The worktrees, removed when this is dropped (unless kept).
    _trees: Worktrees,
}

impl AbComparison {
    /// Identical programs cannot have regressed: their rows do not gate,
    /// but they were compared, so a gate over them alone passes.
    pub fn ungate_identical(&mut self) {
        for row in &mut self.comparison.rows {
            if self.info.identical_binaries.contains(&row.benchmark) {
                row.gating = false;
            }
        }
    }
}

/// `perfsleuth ab`: resolves and builds the two sides, measures them in one
/// session and compares them.
pub fn ab(mut args: AbOptions, spawner: Option<Spawner>) -> Result<AbOutcome, Fail> {
    args.run.sides = true;
    crate::session::settle(&mut args.run)?;
    refuse_run_only(&args.run)?;
    let repo = git_top()?;
    let baseline = resolve_baseline(&repo, args.baseline_rev.as_deref())?;
    let candidate = resolve_candidate(&repo, args.candidate_rev.as_deref())?;
    let mut notes = Vec::new();
    if baseline.commit == candidate.commit && !candidate.dirty {
        notes.push(format!(
            "baseline and candidate are the same commit ({}): an A/A calibration, so any difference is noise",
            baseline.short()
        ));
    }
    // Refused now, before minutes of building.
    let c = crate::session::validate(&args.run)?;
    crate::session::catch_interrupts()?;

    let sides = Checkouts::build(&repo, &args, baseline, candidate)?;
    let mut spawner = crate::session::spawner_or_start(spawner)?;
    let (benches, parts) = sides.prepare(&c, &mut spawner, &args)?;
    let n_base = parts[0].benchmarks;
    let opts = crate::verdict::paired_options(&args.run.verdict)?;
    // While a gating row cannot be decided, another round of both sides
    // (up to --max-time), as `run --baseline` does.
    let more = |template: &Run, benches: &[perfsleuth_runner::Bench], look: u32| {
        let (b, c) = split_run(&crate::verdict::so_far(template, benches), n_base);
        crate::verdict::undecided_sides(
            &crate::verdict::side(b),
            &crate::verdict::side(c),
            &opts.at_look(Some(look)),
        )
    };
    let mut m = crate::session::measure(&c, &mut spawner, benches, parts, &more)?;
    if m.rounds > c.rounds {
        notes.push(crate::verdict::extension_note(
            m.rounds,
            m.elapsed,
            c.max_time,
            "the comparison",
        ));
    }
    let (base_run, cand_run) = split(&m, n_base, sides.revs());
    if let Err(stop) = std::mem::replace(&mut m.result, Ok(())) {
        return match stop {
            Stop::Failed(e) => Err(Fail::from(e)),
            Stop::Interrupted => Ok(AbOutcome::Interrupted {
                ids: base_run.id.zip(cand_run.id),
                code: perfsleuth_model::exit::ExitCode::interrupted_by(
                    perfsleuth_measure::interrupting_signal(),
                ),
            }),
        };
    }
    let (comparison, info) = sides.compare(base_run, cand_run, notes, &m, &opts, &args);
    Ok(AbOutcome::Measured(Box::new(AbComparison {
        comparison,
        info,
        measurement: m,
        _trees: sides.trees,
    })))
}

/// Refuses the options of `run` that `ab` has no use for, before anything
/// is resolved or built.
fn refuse_run_only(run_args: &RunOptions) -> Result<(), Fail> {
    let refuse = |what: &str, hint: &str| Err(Fail::usage(what.to_string(), hint.to_string()));
    if !crate::output::requested_exports(run_args).is_empty() {
        return refuse(
            "ab does not write --export-* files: it stores two runs",
            "export either side afterwards with `perfsleuth show --json RUN`",
        );
    }
    if run_args.plot.is_some() {
        return refuse(
            "ab does not draw --plot: it stores two runs",
            "chart the comparison afterwards with `perfsleuth compare BASELINE_RUN CANDIDATE_RUN --plot FILE.svg`",
        );
    }
    if run_args.no_interleave {
        return refuse(
            "ab measures both sides interleaved: --no-interleave would give up what it is for",
            "drop --no-interleave (for one side after the other, use two `perfsleuth run`s and `compare`)",
        );
    }
    if run_args.repeat != 1 || run_args.reference.is_some() {
        return refuse(
            "--repeat and --reference are options of `run`, not of `ab`",
            "drop them; ab measures both sides in one interleaved run",
        );
    }
    Ok(())
}

/// The two sides checked out: each revision with its worktree and its build.
struct Checkouts {
    baseline: Rev,
    candidate: Rev,
    /// The worktrees' roots, baseline first.
    roots: Vec<PathBuf>,
    /// The builds, baseline first (`None` without `--build`).
    builds: Vec<Option<Build>>,
    trees: Worktrees,
}

impl Checkouts {
    /// Checks out each side in a worktree of `repo` and builds it there.
    fn build(
        repo: &Path,
        args: &AbOptions,
        baseline: Rev,
        candidate: Rev,
    ) -> Result<Checkouts, Fail> {
        let mut trees = Worktrees::new(repo, args.keep_worktrees)?;
        let mut builds = Vec::new();
        let mut roots = Vec::new();
        for rev in [&baseline, &candidate] {
            let root = trees.add(rev)?;
            let build = match &args.build {
                Some(cmd) => Some(build(cmd, &root, rev, args.build_timeout)?),
                None => None,
            };
            builds.push(build);
            roots.push(root);
        }
        Ok(Checkouts {
            baseline,
            candidate,
            roots,
            builds,
            trees,
        })
    }

    fn revs(&self) -> [&Rev; 2] {
        [&self.baseline, &self.candidate]
    }

    /// The plan's benchmarks for each side, in its worktree, prepared in the
    /// spawner; and each side's part of the one run, saying which side it is.
    fn prepare(
        &self,
        c: &Checked,
        spawner: &mut Spawner,
        args: &AbOptions,
    ) -> Result<(Vec<perfsleuth_runner::Bench>, Vec<Part>), Fail> {
        let mut benches = Vec::new();
        let mut parts = Vec::new();
        for ((rev, root), build) in self.revs().iter().zip(&self.roots).zip(&self.builds) {
            let planned: Vec<Planned> = c.planned.iter().map(|p| for_side(p, root, rev)).collect();
            let n = planned.len();
            let side = crate::session::prepare(c, planned, spawner).map_err(|mut f| {
                f.message = format!("in the {} ({}): {}", rev.role, rev.short(), f.message);
                f
            })?;
            benches.extend(side);
            // The stored run says which side it was, in the report's terms.
            let mut stored =
                serde_json::to_value(side_doc(rev, build.as_ref(), args, None)).unwrap_or_default();
            if let Some(map) = stored.as_object_mut() {
                map.remove("run");
                map.insert("side".into(), rev.role.into());
            }
            let mut extra = serde_json::Map::new();
            extra.insert("ab".into(), stored);
            parts.push(Part {
                git: Some(rev.git()),
                extra,
                benchmarks: n,
                label: rev.role,
            });
        }
        Ok((benches, parts))
    }

    /// The two sides' runs compared, with `notes`, what proves nothing
    /// (identical binaries), each side's commit and build; and the `ab`
    /// section of the report.
    fn compare(
        &self,
        base_run: Run,
        cand_run: Run,
        mut notes: Vec<String>,
        m: &Measurement,
        opts: &perfsleuth_compare::Options,
        args: &AbOptions,
    ) -> (Comparison, AbInfo) {
        let revs = self.revs();
        let identical = identical_programs(&base_run, &cand_run, &self.roots);
        if !identical.is_empty() {
            notes.insert(
                0,
                format!(
                    "identical binaries on both sides ({}): any difference is noise, so they do not fail --fail-on",
                    identical.join(", ")
                ),
            );
        }
        notes.extend(perfsleuth_compare::look_note(m.look, opts.rule.alpha));
        let baseline_side = Side {
            label: revs[0].short(),
            runs: vec![base_run],
        };
        let candidate_side = Side {
            label: revs[1].short(),
            runs: vec![cand_run],
        };
        let ids = [baseline_side.runs[0].id, candidate_side.runs[0].id];
        let mut comparison =
            perfsleuth_compare::compare(&baseline_side, &candidate_side, &opts.at_look(m.look));
        comparison.notes.extend(notes);
        for (rev, build) in revs.iter().zip(&self.builds) {
            let built = build.as_ref().map_or(String::new(), |b| {
                format!(
                    ", built in {}",
                    perfsleuth_report::format_duration_ns(b.wall.as_nanos() as f64)
                )
            });
            comparison.notes.push(format!(
                "{}: {} ({}){built}",
                rev.role,
                rev.short(),
                rev.why
            ));
        }
        let side = |i: usize| side_doc(revs[i], self.builds[i].as_ref(), args, ids[i]);
        let info = AbInfo {
            baseline: side(0),
            candidate: side(1),
            rounds: m.rounds,
            identical_binaries: identical,
        };
        (comparison, info)
    }
}

/// The baseline's and the candidate's runs out of the one measured, as
/// stored: their ids and commits.
fn split(m: &Measurement, n_base: usize, revs: [&Rev; 2]) -> (Run, Run) {
    let (mut base, mut cand) = split_run(&m.run, n_base);
    base.id = m.ids.first().copied().flatten();
    cand.id = m.ids.get(1).copied().flatten();
    base.git = Some(revs[0].git());
    cand.git = Some(revs[1].git());
    (base, cand)
}

/// The first `n_base` benchmarks of `run` as one run, the rest as another.
fn split_run(run: &Run, n_base: usize) -> (Run, Run) {
    let mut base = run.clone();
    let mut cand = run.clone();
    base.benchmarks.truncate(n_base);
    cand.benchmarks.drain(..n_base.min(cand.benchmarks.len()));
    (base, cand)
}

/// A side as the report's JSON and the stored run describe it.
fn side_doc(rev: &Rev, build: Option<&Build>, args: &AbOptions, run: Option<i64>) -> AbSide {
    AbSide {
        run,
        commit: rev.commit.clone(),
        dirty: rev.dirty,
        chosen: rev.why.clone(),
        build: build.zip(args.build.as_ref()).map(|(b, command)| AbBuild {
            command: command.clone(),
            wall_s: b.wall.as_secs_f64(),
        }),
    }
}

/// Benchmarks whose program is the same file on both sides and was built
/// inside the worktrees. A program from outside them (`python3 {root}/x.py`)
/// is the same interpreter whatever the code, so it proves nothing.
fn identical_programs(base: &Run, cand: &Run, roots: &[PathBuf]) -> Vec<String> {
    let fact = |b: &perfsleuth_model::Benchmark, k: &str| b.facts.get(k).map(str::to_string);
    let inside = |path: &Option<String>, root: &Path| {
        path.as_deref().is_some_and(|p| {
            let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
            Path::new(p).starts_with(root)
        })
    };
    base.benchmarks
        .iter()
        .filter_map(|b| {
            let c = cand
                .benchmarks
                .iter()
                .find(|c| c.name == b.name && c.parameters == b.parameters)?;
            let (hb, hc) = (fact(b, "binary.sha256")?, fact(c, "binary.sha256")?);
            let same = hb == hc && hb != perfsleuth_model::UNKNOWN;
            let built = inside(&fact(b, "binary.path"), &roots[0])
                && inside(&fact(c, "binary.path"), &roots[1]);
            (same && built).then(|| b.name.clone())
        })
        .collect()
}

/// A planned benchmark for one side: `{root}` and `{rev}` filled in, run
/// from the worktree (see [`crate::plan::in_dir`]).
fn for_side(p: &Planned, root: &Path, rev: &Rev) -> Planned {
    let root_text = root.display().to_string();
    let sub = |s: &str| {
        s.replace("{root}", &root_text)
            .replace("{rev}", &rev.commit)
    };
    let filled = Planned {
        command: sub(&p.command),
        argv: p.argv.iter().map(|a| sub(a)).collect(),
        prepare: p
            .prepare
            .as_ref()
            .map(|a| a.iter().map(|x| sub(x)).collect()),
        conclude: p
            .conclude
            .as_ref()
            .map(|a| a.iter().map(|x| sub(x)).collect()),
        setup: p.setup.as_ref().map(|a| a.iter().map(|x| sub(x)).collect()),
        cleanup: p
            .cleanup
            .as_ref()
            .map(|a| a.iter().map(|x| sub(x)).collect()),
        ..p.clone()
    };
    crate::plan::in_dir(&filled, root)
}

// ---- git ---------------------------------------------------------------------

fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    crate::git::run(dir, args)
}

fn git_top() -> Result<PathBuf, Fail> {
    let cwd = std::env::current_dir().map_err(|e| {
        Fail::usage(
            format!("cannot read the current directory: {e}"),
            "cd into your repository",
        )
    })?;
    git(&cwd, &["rev-parse", "--show-toplevel"])
        .map(PathBuf::from)
        .map_err(|_| {
            Fail::usage(
                "ab compares two revisions of a git repository, and this is not one",
                "run it inside your repository (or use `perfsleuth run` to benchmark commands)",
            )
        })
}

fn commit_of(repo: &Path, rev: &str, option: &str) -> Result<String, Fail> {
    if rev.starts_with('-') {
        return Err(Fail::usage(
            format!("{option} `{rev}` is not a revision"),
            "give a branch, tag or commit",
        ));
    }
    crate::git::resolve(repo, rev).ok_or_else(|| {
        Fail::usage(
            format!("{option} `{rev}` is not a revision of this repository"),
            "give a branch, tag or commit (`git log --oneline` lists them)",
        )
    })
}

fn resolve_baseline(repo: &Path, given: Option<&str>) -> Result<Rev, Fail> {
    if let Some(rev) = given {
        return Ok(Rev {
            role: "baseline",
            commit: commit_of(repo, rev, "--baseline")?,
            dirty: false,
            why: rev.to_string(),
        });
    }
    let default = git(repo, &["rev-parse", "--abbrev-ref", "origin/HEAD"])
        .ok()
        .filter(|b| !b.is_empty() && b != "origin/HEAD")
        .into_iter()
        .chain(["main".to_string(), "master".to_string()])
        .find(|b| crate::git::resolve(repo, b).is_some())
        .ok_or_else(|| {
            Fail::usage(
                "no default branch to take the baseline from (origin/HEAD, main and master do not exist)",
                "give --baseline REV",
            )
        })?;
    let base = git(repo, &["merge-base", "HEAD", &default]).map_err(|e| {
        Fail::usage(
            format!("no merge base of HEAD and {default}: {e}"),
            "give --baseline REV",
        )
    })?;
    Ok(Rev {
        role: "baseline",
        commit: base,
        dirty: false,
        why: format!("merge base of HEAD and {default}"),
    })
}

fn resolve_candidate(repo: &Path, given: Option<&str>) -> Result<Rev, Fail> {
    let dirty = !git(repo, &["status", "--porcelain", "--untracked-files=no"])
        .unwrap_or_default()
        .is_empty();
    if let Some(rev) = given {
        if dirty {
            return Err(Fail::usage(
                format!(
                    "the working tree has uncommitted changes, which --candidate {rev} would not measure"
                ),
                "commit or stash them, or drop --candidate to measure the working tree as it is",
            ));
        }
        return Ok(Rev {
            role: "candidate",
            commit: commit_of(repo, rev, "--candidate")?,
            dirty: false,
            why: rev.to_string(),
        });
    }
    let head = commit_of(repo, "HEAD", "HEAD").map_err(|_| {
        Fail::usage(
            "the repository has no commits yet",
            "commit something first: ab checks out revisions",
        )
    })?;
    Ok(Rev {
        role: "candidate",
        commit: head,
        dirty,
        why: if dirty {
            "the working tree, with its uncommitted changes".into()
        } else {
            "the working tree (HEAD)".into()
        },
    })
}

/// The temporary worktrees, removed on every way out (success, failure,
/// Ctrl-C) unless `--keep-worktrees`.
struct Worktrees {
    repo: PathBuf,
    dir: PathBuf,
    trees: Vec<PathBuf>,
    keep: bool,
}

impl Worktrees {
    fn new(repo: &Path, keep: bool) -> Result<Worktrees, Fail> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let dir =
            std::env::temp_dir().join(format!("perfsleuth-ab-{}-{nanos}", std::process::id()));
        std::fs::create_dir_all(&dir).map_err(|e| {
            Fail::usage(
                format!("cannot create {}: {e}", dir.display()),
                "check that the temporary directory (TMPDIR) is writable",
            )
        })?;
        Ok(Worktrees {
            repo: repo.to_path_buf(),
            dir,
            trees: Vec::new(),
            keep,
        })
    }

    /// Checks `rev` out into a worktree of its own; a dirty candidate gets
    /// the working tree's changes and untracked files on top of HEAD.
    fn add(&mut self, rev: &Rev) -> Result<PathBuf, Fail> {
        let path = self.dir.join(rev.role);
        let fail = |e: String| {
            Fail::usage(
                format!("cannot check out the {} ({}): {e}", rev.role, rev.short()),
                "check `git worktree list`; perfsleuth removes its worktrees when it ends",
            )
        };
        // A snapshot of the working tree that leaves it untouched.
        let commit = if rev.dirty {
            git(&self.repo, &["stash", "create"]).map_err(fail)?
        } else {
            rev.commit.clone()
        };
        let commit = if commit.is_empty() {
            rev.commit.clone()
        } else {
            commit
        };
        let target = path.display().to_string();
        git(
            &self.repo,
            &["worktree", "add", "--detach", "-q", &target, &commit],
        )
        .map_err(fail)?;
        self.trees.push(path.clone());
        if rev.dirty {
            let untracked = git(
                &self.repo,
                &["ls-files", "--others", "--exclude-standard", "-z"],
            )
            .map_err(fail)?;
            for rel in untracked.split('\0').filter(|r| !r.is_empty()) {
                let to = path.join(rel);
                if let Some(parent) = to.parent() {
                    let _ = std::fs::create_dir_all(parent);
                }
                std::fs::copy(self.repo.join(rel), &to)
                    .map_err(|e| fail(format!("cannot copy untracked {rel}: {e}")))?;
            }
        }
        if self.keep {
            emit(
                &format!("{} worktree: {}\n", rev.role, path.display()),
                true,
            );
        }
        Ok(path)
    }
}

impl Drop for Worktrees {
    fn drop(&mut self) {
        if self.keep {
            return;
        }
        for tree in &self.trees {
            let _ = git(
                &self.repo,
                &["worktree", "remove", "--force", &tree.display().to_string()],
            );
        }
        let _ = std::fs::remove_dir_all(&self.dir);
        let _ = git(&self.repo, &["worktree", "prune"]);
    }
}

/// A build that succeeded.
struct Build {
    wall: Duration,
}

/// Runs `--build` in a side's worktree, output to a log beside it; a
/// failure, a timeout or Ctrl-C is an error naming the side. Supervised as
/// every benchmarked command is (`perfsleuth_measure::Executor`: its own
/// process group, killed whole past the timeout or on Ctrl-C, reaped with
/// wait4), with no polling.
fn build(cmd: &str, root: &Path, rev: &Rev, timeout: Duration) -> Result<Build, Fail> {
    let log_path = root.with_extension("build.log");
    let side = format!("{} ({})", rev.role, rev.short());
    let start_fail = |e: String| {
        Fail::usage(
            format!("cannot start the build of the {side}: {e}"),
            "check --build",
        )
    };
    // Created empty once: the executor appends. The shell sends its own
    // stderr to that log too, so the log holds everything the build printed.
    std::fs::File::create(&log_path).map_err(|e| start_fail(e.to_string()))?;
    let io = perfsleuth_measure::IoConfig {
        output: perfsleuth_measure::OutputTarget::File(log_path.clone()),
        timeout: Some(timeout),
        cwd: Some(root.to_path_buf()),
        ..perfsleuth_measure::IoConfig::default()
    };
    let argv = [
        "sh".to_string(),
        "-c".to_string(),
        format!("exec 2>&1\n{cmd}"),
    ];
    let mut exec =
        perfsleuth_measure::Executor::new(&argv, &io).map_err(|e| start_fail(e.to_string()))?;
    let start = Instant::now();
    let outcome = exec.run(0, false).map_err(|e| start_fail(e.to_string()))?;
    let sample = match outcome {
        perfsleuth_measure::Outcome::Completed(sample) => sample,
        perfsleuth_measure::Outcome::TimedOut(_) => {
            return Err(Fail::usage(
                format!(
                    "the build of the {side} took longer than --build-timeout {}",
                    perfsleuth_report::format_duration_ns(timeout.as_nanos() as f64)
                ),
                "raise --build-timeout, or build less",
            )
            .with_details(tail(&log_path)));
        }
        perfsleuth_measure::Outcome::Interrupted | perfsleuth_measure::Outcome::Skipped => {
            return Err(Fail::interrupted(
                format!("interrupted during the build of the {side}; worktrees removed"),
                "",
                perfsleuth_measure::interrupting_signal(),
            ));
        }
    };
    if !sample.succeeded() {
        let how = sample
            .exit_code
            .map_or("was killed by a signal".to_string(), |c| {
                format!("exited with code {c}")
            });
        return Err(Fail::usage(
            format!("the build of the {side} failed: `{cmd}` {how}"),
            "fix the build on that revision, or pick another with --baseline/--candidate",
        )
        .with_details(tail(&log_path)));
    }
    Ok(Build {
        wall: start.elapsed(),
    })
}

/// The build log's last lines, as error details.
fn tail(path: &Path) -> Vec<String> {
    let text = perfsleuth_model::input::read_text(
        path,
        64 * 1024 * 1024,
        perfsleuth_model::input::Accept::Regular,
    )
    .unwrap_or_default();
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let mut out = vec!["the build's last lines:".to_string()];
    out.extend(
        lines[lines.len().saturating_sub(8)..]
            .iter()
            .map(|l| format!("  {l}")),
    );
    out
}
