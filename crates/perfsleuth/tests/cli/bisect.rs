//! `perfsleuth bisect`: real repositories of a small C program, each commit
//! built with the C compiler in a worktree of its own, measured by real runs.

use crate::common::{Out, Sandbox, git, in_repo, nothing_left};
use std::path::{Path, PathBuf};

/// The C program: `WORK` iterations of an LCG, from work.h.
const PROGRAM: &str = r#"#include <stdio.h>
#include "work.h"
int main(void) {
    unsigned long x = 1;
    for (long i = 0; i < WORK; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    printf("%lu\n", x >> 60);
    return 0;
}
"#;

/// A repository: the program, then `commits` commits; commit `culprit`
/// (if any) does 20 % more work, commit `broken` (if any) does not
/// compile, and the commit after it compiles again.
fn repo(sb: &Sandbox, commits: usize, culprit: Option<usize>, broken: Option<usize>) -> PathBuf {
    repo_with(sb, commits, culprit, broken, 20)
}

/// [`repo`] with the culprit doing `percent` % more work.
fn repo_with(
    sb: &Sandbox,
    commits: usize,
    culprit: Option<usize>,
    broken: Option<usize>,
    percent: u64,
) -> PathBuf {
    let dir = sb.path("repo");
    std::fs::create_dir(&dir).unwrap();
    git(&dir, &["init", "-q", "-b", "main"]);
    std::fs::write(dir.join("prog.c"), PROGRAM).unwrap();
    std::fs::write(dir.join(".gitignore"), "prog\n").unwrap();
    let mut work = 4_000_000u64;
    let write_work =
        |w: u64| std::fs::write(dir.join("work.h"), format!("#define WORK {w}\n")).unwrap();
    write_work(work);
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "the program"]);
    for i in 1..=commits {
        let subject = if Some(i) == culprit {
            work = work * (100 + percent) / 100;
            write_work(work);
            format!("commit {i}: {percent} % more work")
        } else if Some(i) == broken {
            std::fs::write(dir.join("work.h"), "#error does not build\n").unwrap();
            format!("commit {i}: does not build")
        } else {
            write_work(work);
            std::fs::write(dir.join("notes.txt"), format!("{i}\n")).unwrap();
            git(&dir, &["add", "notes.txt"]);
            format!("commit {i}: notes")
        };
        git(&dir, &["commit", "-qam", &subject]);
    }
    dir
}

/// The culprits a `perfsleuth/bisect` document names (verified).
fn confirmed(doc: &serde_json::Value) -> Vec<&serde_json::Value> {
    doc["culprits"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|c| c["confirmed"] == true)
        .collect()
}

/// `perfsleuth bisect --store … ARGS…` run in `dir`, worktrees under the sandbox's tmp.
fn bisect(sb: &Sandbox, dir: &Path, args: &[&str]) -> Out {
    in_repo(sb, dir, "bisect", args)
}

/// A bisection of the whole history of `dir`, each side measured for a short time.
fn bisect_all(sb: &Sandbox, dir: &Path, commits: usize, extra: &[&str]) -> Out {
    let base = format!("HEAD~{commits}");
    let mut args = vec![
        "--baseline",
        &base,
        "--candidate",
        "HEAD",
        "--time-budget",
        "300ms",
        "--build",
        "gcc -O2 -o prog prog.c",
    ];
    args.extend_from_slice(extra);
    args.extend_from_slice(&["--", "./prog"]);
    bisect(sb, dir, &args)
}

#[test]
fn the_culprit_is_named_verified_and_every_step_stored_around_a_commit_that_does_not_build() {
    if !perfsleuth_testkit::tools_present("bisect", &["gcc"]) {
        return;
    }
    let sb = Sandbox::new();
    // The first split falls on commit 4, which does not build.
    let dir = repo(&sb, 8, Some(6), Some(4));
    let junit = sb.path("bisect.xml");
    let out = bisect_all(
        &sb,
        &dir,
        8,
        &[
            "--format",
            "json",
            "--export-junit",
            junit.to_str().unwrap(),
        ],
    )
    .ok();
    let doc = crate::common::parse_json(&out.stdout);
    crate::schema::assert_valid("bisect", &doc);
    assert_eq!(doc["outcome"], "found", "{}", out.stdout);
    let subject = |hash: &serde_json::Value| {
        doc["commits"]
            .as_array()
            .unwrap()
            .iter()
            .find(|c| &c["commit"] == hash)
            .map(|c| c["subject"].as_str().unwrap().to_string())
            .unwrap()
    };
    let named = confirmed(&doc);
    assert_eq!(named.len(), 1, "{}", out.stdout);
    assert_eq!(subject(&named[0]["commit"]), "commit 6: 20 % more work");
    assert!(named[0]["verified"]["change"].as_f64().unwrap() > 0.0);
    let skipped: Vec<String> = doc["skipped"]
        .as_array()
        .unwrap()
        .iter()
        .map(subject)
        .collect();
    assert_eq!(skipped, vec!["commit 4: does not build"]);
    assert!(
        out.stderr
            .contains("note: skipped: the build of the commit"),
        "{out:?}"
    );
    assert!(out.stderr.contains("bisect step 1: confirming"), "{out:?}");
    // JUnit, as a CI server reads it: the culprit failed, the unbuilt commit
    // skipped, every other commit passed.
    if let Some(cases) = crate::common::junit_cases(&junit) {
        assert_eq!(cases.len(), 8, "{cases:?}");
        let result = |prefix: &str| {
            cases
                .iter()
                .find(|c| c["name"].as_str().unwrap().contains(prefix))
                .map(|c| c["result"].as_str().unwrap().to_string())
                .unwrap()
        };
        assert_eq!(result("commit 6: 20 % more work"), "failure");
        assert_eq!(result("commit 4: does not build"), "skipped");
        assert_eq!(result("commit 7: notes"), "passed");
    }
    // Each step stored as a run per commit, saying which step it was.
    let steps = doc["steps"].as_array().unwrap();
    assert_eq!(steps[0]["kind"], "confirm");
    assert_eq!(steps.last().unwrap()["kind"], "verify");
    let stored: usize = steps
        .iter()
        .map(|s| s["runs"].as_array().unwrap().len())
        .sum();
    let runs = sb.runs_json();
    assert_eq!(runs.len(), stored, "{runs:?}");
    let first = sb.show_json(&steps[0]["runs"][0].to_string());
    assert_eq!(first["run"]["options"]["bisect"]["kind"], "confirm");
    assert_eq!(first["run"]["options"]["bisect"]["step"], 1);
    nothing_left(&sb, &dir);

    // --resume judges every stored step again instead of measuring it.
    let again = bisect_all(&sb, &dir, 8, &["--format", "json", "--resume"]).ok();
    let resumed = crate::common::parse_json(&again.stdout);
    assert_eq!(resumed["culprits"], doc["culprits"], "{}", again.stdout);
    assert!(
        resumed["steps"]
            .as_array()
            .unwrap()
            .iter()
            .all(|s| s["resumed"] == true),
        "{}",
        again.stdout
    );
    assert_eq!(
        sb.runs_json().len(),
        stored,
        "a resumed step was measured again"
    );
    assert!(again.stderr.contains("resuming: 5 steps"), "{again:?}");
    nothing_left(&sb, &dir);
}

/// A repository whose mainline merges a three-commit branch, the branch's
/// second commit doing 20 % more work: main is the program, a note, the
/// merge, a note.
fn merged_repo(sb: &Sandbox) -> PathBuf {
    let dir = repo(sb, 1, None, None);
    let commit = |subject: &str| git(&dir, &["commit", "-qam", subject]);
    git(&dir, &["checkout", "-qb", "feature"]);
    for (i, work) in [(1, 4_000_000), (2, 4_800_000), (3, 4_800_000)] {
        std::fs::write(dir.join("work.h"), format!("#define WORK {work}\n// {i}\n")).unwrap();
        commit(&format!(
            "feature {i}{}",
            if i == 2 { ": 20 % more work" } else { "" }
        ));
    }
    git(&dir, &["checkout", "-q", "main"]);
    std::fs::write(dir.join("notes.txt"), "main\n").unwrap();
    commit("main: notes");
    git(
        &dir,
        &["merge", "-q", "--no-ff", "-m", "merge feature", "feature"],
    );
    std::fs::write(dir.join("notes.txt"), "after\n").unwrap();
    commit("main: after the merge");
    dir
}

#[test]
fn a_merge_is_one_step_with_its_branch_to_bisect_next_and_a_server_shows_the_runs_together() {
    if !perfsleuth_testkit::tools_present("bisect", &["gcc"]) {
        return;
    }
    // Declared first, dropped last: the server stops before its sandbox goes.
    let team = crate::common::team();
    let sb = Sandbox::new();
    let dir = merged_repo(&sb);
    let out: Out = sb
        .cmd()
        .current_dir(&dir)
        .env("TMPDIR", sb.path("tmp"))
        .env("PERFSLEUTH_SERVER", &team.server.base)
        .env("PERFSLEUTH_PROJECT", "app")
        .env("PERFSLEUTH_TOKEN", &team.secret)
        .args([
            "bisect",
            "--store",
            &sb.store(),
            "--baseline",
            "HEAD~3",
            "--time-budget",
            "300ms",
        ])
        .args([
            "--build",
            "gcc -O2 -o prog prog.c",
            "--format",
            "json",
            "--push",
            "--",
            "./prog",
        ])
        .output()
        .unwrap()
        .into();
    let out = out.ok();
    let doc = crate::common::parse_json(&out.stdout);
    crate::schema::assert_valid("bisect", &doc);
    let named = confirmed(&doc);
    assert_eq!(named.len(), 1, "{}", out.stdout);
    let merge = git(&dir, &["rev-parse", "HEAD~1"]);
    assert_eq!(named[0]["commit"], merge.trim(), "{}", out.stdout);
    // The way into the merge: the branch from the merge base to its tip.
    let base = git(&dir, &["merge-base", "HEAD~1^1", "HEAD~1^2"]);
    let tip = git(&dir, &["rev-parse", "feature"]);
    assert_eq!(named[0]["merged"]["from"], base.trim());
    assert_eq!(named[0]["merged"]["to"], tip.trim());
    assert!(out.stderr.contains("sent to"), "{out:?}");

    // The server shows the bisection's runs together, each step's pairs linked.
    let id = doc["id"].as_str().unwrap();
    let stored: usize = doc["steps"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["runs"].as_array().unwrap().len())
        .sum();
    let api = format!(
        "{}/api/v1/projects/app/runs?bisection={id}",
        team.server.base
    );
    let (status, body) = crate::common::get(&api, Some(&team.secret));
    assert_eq!(status, 200, "{body}");
    let listed = crate::common::parse_json(&body);
    assert_eq!(listed["runs"].as_array().unwrap().len(), stored, "{body}");
    let page = format!("{}/p/app/bisect/{id}", team.server.base);
    let (status, html) = crate::common::get(&page, Some(&team.secret));
    assert_eq!(status, 200, "{html}");
    assert_eq!(html.matches("<tr><td>").count(), stored, "{html}");
    assert!(
        html.contains("confirm") && html.contains("verify"),
        "{html}"
    );
    assert!(html.contains("compare with"), "{html}");
    let (_, project) =
        crate::common::get(&format!("{}/p/app", team.server.base), Some(&team.secret));
    assert!(
        project.contains(&format!("/p/app/bisect/{id}")),
        "{project}"
    );
    let (status, _) = crate::common::get(&format!("{page}0"), Some(&team.secret));
    assert_eq!(status, 404);

    // Into the merge: its branch bisected names the branch's own commit.
    let from = named[0]["merged"]["from"].as_str().unwrap();
    let to = named[0]["merged"]["to"].as_str().unwrap();
    let inner = bisect(
        &sb,
        &dir,
        &[
            "--baseline",
            from,
            "--candidate",
            to,
            "--time-budget",
            "300ms",
            "--build",
            "gcc -O2 -o prog prog.c",
            "--",
            "./prog",
        ],
    )
    .ok();
    assert!(
        inner.stdout.contains("feature 2: 20 % more work"),
        "{inner:?}"
    );
    nothing_left(&sb, &dir);
}

#[test]
fn unchanged_ends_name_no_culprit() {
    if !perfsleuth_testkit::tools_present("bisect", &["gcc"]) {
        return;
    }
    let sb = Sandbox::new();
    let dir = repo(&sb, 3, None, None);
    let out = bisect_all(&sb, &dir, 3, &[]).ok();
    assert!(
        !out.stdout.lines().any(|l| l.starts_with("culprit")),
        "{out:?}"
    );
    // Not reproduced (the usual case) or, on a loaded machine, undecided:
    // either way the search stops after the ends and names nothing.
    assert!(
        out.stdout.contains("not reproduced on this machine")
            || out.stdout.contains("could not be told apart"),
        "{out:?}"
    );
    assert!(out.stdout.contains("3 commits, 1 step,"), "{out:?}");
    nothing_left(&sb, &dir);
}

#[test]
fn bad_input_is_one_line_exit_2_and_nothing_left_behind() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.path("plain")).unwrap();
    bisect(&sb, &sb.path("plain"), &["true"])
        .usage_error("bisect searches the commits of a git repository, and this is not one");
    let dir = repo(&sb, 3, None, None);
    bisect(
        &sb,
        &dir,
        &["--baseline", "HEAD", "--candidate", "HEAD", "./prog"],
    )
    .usage_error("are the same commit");
    bisect(
        &sb,
        &dir,
        &["--baseline", "HEAD", "--candidate", "HEAD~2", "./prog"],
    )
    .usage_error("is not an ancestor of the candidate");
    bisect(&sb, &dir, &["--baseline", "nosuch", "./prog"])
        .usage_error("--baseline `nosuch` is not a revision of this repository");
    bisect(
        &sb,
        &dir,
        &["--baseline", "HEAD~3", "--export-json", "x.json", "./prog"],
    )
    .usage_error("bisect does not write --export-* files");
    bisect(
        &sb,
        &dir,
        &["--baseline", "HEAD~3", "--max-steps", "2", "./prog"],
    )
    .usage_error("more than --max-steps 2");
    // The working tree's changes cannot be a commit of the range.
    std::fs::write(dir.join("notes.txt"), "uncommitted\n").unwrap();
    bisect(&sb, &dir, &["--baseline", "HEAD~3", "./prog"]).usage_error("uncommitted changes");
    git(&dir, &["checkout", "-q", "--", "notes.txt"]);
    // A shallow clone without the baseline says how to get it.
    let shallow = sb.path("shallow");
    let url = format!("file://{}", dir.display());
    git(
        &dir,
        &[
            "clone",
            "-q",
            "--depth",
            "2",
            &url,
            shallow.to_str().unwrap(),
        ],
    );
    let out = bisect(&sb, &shallow, &["--baseline", "HEAD~3", "./prog"])
        .usage_error("is not a revision of this repository");
    assert!(out.stderr.contains("git fetch --unshallow"), "{out:?}");
    // The candidate's build fails: an error, not a skip.
    bisect(
        &sb,
        &dir,
        &["--baseline", "HEAD~3", "--build", "exit 3", "./prog"],
    )
    .usage_error("the build of the baseline");
    nothing_left(&sb, &dir);
    assert!(
        !sb.db().exists() || sb.runs_json().is_empty(),
        "a refused bisect stored runs"
    );
    // A command that fails on a commit stops the bisection, naming the commits.
    std::fs::write(
        dir.join("prog.c"),
        PROGRAM.replace("return 0;", "return 1;"),
    )
    .unwrap();
    git(&dir, &["commit", "-qam", "commit 4: fails"]);
    let out = bisect(
        &sb,
        &dir,
        &[
            "--baseline",
            "HEAD~1",
            "--time-budget",
            "200ms",
            "--build",
            "gcc -O2 -o prog prog.c",
            "--",
            "./prog",
        ],
    );
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("error: measuring ") && out.stderr.contains("exited with code 1"),
        "{out:?}"
    );
    assert!(out.stderr.contains("  hint: "), "{out:?}");
    nothing_left(&sb, &dir);
}

#[test]
fn from_history_bisects_the_newest_change_point_of_the_stored_series() {
    if !perfsleuth_testkit::tools_present("bisect", &["gcc"]) {
        return;
    }
    let sb = Sandbox::new();
    // Twice the work: a step the wall-time history finds even while other
    // tests load the machine.
    let dir = repo_with(&sb, 11, Some(6), None, 100);
    // The history: a stored run at every commit, oldest first.
    for back in (0..=11).rev() {
        git(&dir, &["checkout", "-q", &format!("main~{back}")]);
        let built = std::process::Command::new("gcc")
            .args(["-O2", "-o", "prog", "prog.c"])
            .current_dir(&dir)
            .status()
            .unwrap();
        assert!(built.success());
        let mut cmd = sb.cmd();
        cmd.current_dir(&dir).args([
            "run",
            "--store",
            &sb.store(),
            "--runs",
            "8",
            "--warmup",
            "1",
            "./prog",
        ]);
        Out::from(cmd.output().unwrap()).ok();
    }
    git(&dir, &["checkout", "-q", "main"]);
    std::fs::remove_file(dir.join("prog")).unwrap();
    // The newest change point `history` reports before bisecting (whose
    // runs join the history): the doubling, unless the noise of 8 runs a
    // commit made a later one.
    let mut cmd = sb.cmd();
    cmd.current_dir(&dir).args([
        "history",
        "--store",
        &sb.store(),
        "--format",
        "json",
        "./prog",
    ]);
    let history = crate::common::parse_json(&Out::from(cmd.output().unwrap()).ok().stdout);
    // The newest over every series (machine class), by its first point's
    // start: the commits of the points before and after it.
    let mut newest: Option<(String, serde_json::Value, serde_json::Value)> = None;
    for series in history["series"].as_array().unwrap() {
        let points = series["points"].as_array().unwrap();
        for c in series["change_points"].as_array().into_iter().flatten() {
            let at = c["index"].as_u64().unwrap() as usize;
            let started = points[at]["started_at"].as_str().unwrap_or("").to_string();
            if newest.as_ref().is_none_or(|n| started > n.0) {
                newest = Some((
                    started,
                    points[at - 1]["commit"].clone(),
                    points[at]["commit"].clone(),
                ));
            }
        }
    }
    let (_, before, after) = newest.expect("a change point");
    let out = bisect(
        &sb,
        &dir,
        &[
            "--from-history",
            "./prog",
            "--time-budget",
            "300ms",
            "--build",
            "gcc -O2 -o prog prog.c",
            "--format",
            "json",
            "--",
            "./prog",
        ],
    )
    .ok();
    assert!(
        out.stderr.contains("the newest change point of `./prog`"),
        "{out:?}"
    );
    let doc = crate::common::parse_json(&out.stdout);
    let commits = doc["commits"].as_array().unwrap();
    assert_eq!(commits[0]["commit"], before, "{}", out.stdout);
    assert_eq!(commits.last().unwrap()["commit"], after, "{}", out.stdout);
    if commits.last().unwrap()["subject"] == "commit 6: 100 % more work" {
        assert_eq!(doc["outcome"], "found", "{}", out.stdout);
    }
    nothing_left(&sb, &dir);
}
