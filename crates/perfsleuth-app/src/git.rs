//! The one git runner: the source-control state recorded with each run,
//! revisions resolved for `compare` and `ab`, and `ab`'s worktrees.

use perfsleuth_model::GitInfo;
use std::path::Path;
use std::process::{Command, Stdio};

/// `git -C dir args…`: its trimmed standard output, or the first line of
/// what it printed on standard error (or why it could not start).
pub fn run(dir: &Path, args: &[&str]) -> Result<String, String> {
    let out = Command::new("git")
        .arg("-C")
        .arg(dir)
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| format!("cannot run git: {e}"))?;
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
    } else {
        let err = String::from_utf8_lossy(&out.stderr);
        Err(err
            .lines()
            .next()
            .unwrap_or("git failed")
            .trim()
            .to_string())
    }
}

fn git(dir: &Path, args: &[&str]) -> Option<String> {
    run(dir, args).ok()
}

/// Commit, branch and dirty flag of the repository containing `dir`; `None`
/// outside a repository, without git, or in a repository with no commits.
pub fn info(dir: &Path) -> Option<GitInfo> {
    let commit = git(dir, &["rev-parse", "--verify", "-q", "HEAD"])?;
    let branch = git(dir, &["symbolic-ref", "--short", "-q", "HEAD"]).filter(|b| !b.is_empty());
    // Untracked files do not change what was built, so they do not make a run dirty.
    let dirty =
        git(dir, &["status", "--porcelain", "--untracked-files=no"]).is_some_and(|s| !s.is_empty());
    Some(GitInfo {
        commit,
        branch,
        dirty,
    })
}

/// The first-parent chain of `branch`, each commit with its position (0 for
/// the oldest); `None` outside a repository or for an unknown branch.
pub fn first_parent(dir: &Path, branch: &str) -> Option<std::collections::HashMap<String, usize>> {
    let out = git(dir, &["rev-list", "--first-parent", branch, "--"])?;
    let commits: Vec<&str> = out.lines().collect();
    let n = commits.len();
    Some(
        commits
            .into_iter()
            .enumerate()
            .map(|(i, c)| (c.to_string(), n - 1 - i))
            .collect(),
    )
}

/// The full hash of revision `rev`, if it names a commit of the repository
/// containing `dir` (never an option: `rev` may not start with `-`).
pub fn resolve(dir: &Path, rev: &str) -> Option<String> {
    if rev.starts_with('-') {
        return None;
    }
    git(
        dir,
        &["rev-parse", "--verify", "-q", &format!("{rev}^{{commit}}")],
    )
    .filter(|hash| !hash.is_empty())
}
