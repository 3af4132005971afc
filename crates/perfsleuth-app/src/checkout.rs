//! Revisions checked out and built: each in a temporary git worktree of
//! its own, built there with the user's command, its benchmarks run from
//! it. Shared by `ab` (two sides) and `bisect` (every commit it measures).

use crate::error::Fail;
use crate::term::emit;
use perfsleuth_model::GitInfo;
use perfsleuth_runner::Planned;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// A revision to measure: one side of `ab`, one commit of `bisect`.
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
    pub(crate) fn git(&self) -> GitInfo {
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

/// A planned benchmark for one side: `{root}` and `{rev}` filled in, run
/// from the worktree (see [`crate::plan::in_dir`]).
pub(crate) fn for_side(p: &Planned, root: &Path, rev: &Rev) -> Planned {
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

pub(crate) fn git(dir: &Path, args: &[&str]) -> Result<String, String> {
    crate::git::run(dir, args)
}

/// The top of the repository the command runs in; `needs` says why one is
/// needed ("ab compares two revisions of a git repository").
pub(crate) fn git_top(needs: &str) -> Result<PathBuf, Fail> {
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
                format!("{needs}, and this is not one"),
                "run it inside your repository (or use `perfsleuth run` to benchmark commands)",
            )
        })
}

pub(crate) fn commit_of(repo: &Path, rev: &str, option: &str) -> Result<String, Fail> {
    if rev.starts_with('-') {
        return Err(Fail::usage(
            format!("{option} `{rev}` is not a revision"),
            "give a branch, tag or commit",
        ));
    }
    crate::git::resolve(repo, rev).ok_or_else(|| {
        let shallow =
            git(repo, &["rev-parse", "--is-shallow-repository"]).is_ok_and(|s| s == "true");
        Fail::usage(
            format!("{option} `{rev}` is not a revision of this repository"),
            if shallow {
                "this is a shallow clone: fetch the history first (`git fetch --unshallow`)"
            } else {
                "give a branch, tag or commit (`git log --oneline` lists them)"
            },
        )
    })
}

pub(crate) fn resolve_baseline(repo: &Path, given: Option<&str>) -> Result<Rev, Fail> {
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

pub(crate) fn resolve_candidate(repo: &Path, given: Option<&str>) -> Result<Rev, Fail> {
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
pub(crate) struct Worktrees {
    repo: PathBuf,
    dir: PathBuf,
    trees: Vec<PathBuf>,
    keep: bool,
}

impl Worktrees {
    pub(crate) fn new(repo: &Path, keep: bool) -> Result<Worktrees, Fail> {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        // Fixed widths: the directory's length does not change from one
        // invocation to the next (see `add`).
        let dir = std::env::temp_dir().join(format!(
            "perfsleuth-ab-{:010}-{nanos:09}",
            std::process::id()
        ));
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
    pub(crate) fn add(&mut self, rev: &Rev) -> Result<PathBuf, Fail> {
        // Every side's path has the same length (ab's "base" and "cand",
        // bisect's commits by 12 digits of their hash): the kernel copies
        // the program's path onto its stack, so paths of different lengths
        // place the sides' stacks differently, an offset fixed for the whole
        // invocation that pairing cannot see (Mytkowicz et al. 2009;
        // docs/STATISTICS.md §9).
        let path = match rev.role {
            "baseline" => self.dir.join("base"),
            "candidate" => self.dir.join("cand"),
            role => self.dir.join(format!(
                "{role}-{}",
                rev.commit.get(..12).unwrap_or(&rev.commit)
            )),
        };
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
pub(crate) struct Build {
    pub(crate) wall: Duration,
}

/// Runs `--build` in a side's worktree, output to a log beside it; a
/// failure, a timeout or Ctrl-C is an error naming the side. Supervised as
/// every benchmarked command is (`perfsleuth_measure::Executor`: its own
/// process group, killed whole past the timeout or on Ctrl-C, reaped with
/// wait4), with no polling.
pub(crate) fn build(cmd: &str, root: &Path, rev: &Rev, timeout: Duration) -> Result<Build, Fail> {
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
pub(crate) fn tail(path: &Path) -> Vec<String> {
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
