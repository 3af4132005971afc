//! `perfsleuth ab`: two revisions of a real git repository, built and
//! measured in temporary worktrees, with every bad input the issue lists.

use crate::common::{Out, Sandbox, git, in_repo, nothing_left};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A repository in the sandbox: `main` with `bench.sh` (and a build that
/// writes `built.txt`), then branch `feature` whose `bench.sh` differs.
fn repo(sb: &Sandbox) -> PathBuf {
    let dir = sb.path("repo");
    std::fs::create_dir(&dir).unwrap();
    git(&dir, &["init", "-q", "-b", "main"]);
    write_script(&dir, "bench.sh", "#!/bin/sh\necho base > /dev/null\n");
    std::fs::write(dir.join(".gitignore"), "built.txt\n").unwrap();
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "base"]);
    git(&dir, &["checkout", "-qb", "feature"]);
    write_script(&dir, "bench.sh", "#!/bin/sh\necho feature > /dev/null\n");
    git(&dir, &["commit", "-qam", "feature"]);
    dir
}

fn write_script(dir: &Path, name: &str, text: &str) {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    std::fs::set_permissions(&path, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
}

/// `perfsleuth ab --store … --runs 4 --warmup 0 ARGS…` (see [`ab_as_given`]).
fn ab(sb: &Sandbox, dir: &Path, args: &[&str]) -> Out {
    let mut all = vec!["--runs", "4", "--warmup", "0"];
    all.extend_from_slice(args);
    ab_as_given(sb, dir, &all)
}

/// `perfsleuth ab --store … ARGS…` run in `dir`, worktrees under the sandbox's tmp.
fn ab_as_given(sb: &Sandbox, dir: &Path, args: &[&str]) -> Out {
    in_repo(sb, dir, "ab", args)
}

/// `perfsleuth ab --store … ARGS…` started in `dir` in its own process
/// group (to be signalled as a terminal would), worktrees under the tmp dir.
fn spawn_ab(sb: &Sandbox, dir: &Path, args: &[&str]) -> std::process::Child {
    use std::os::unix::process::CommandExt;
    let tmp = sb.path("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    sb.std_cmd()
        .current_dir(dir)
        .env("TMPDIR", &tmp)
        .args(["ab", "--store", &sb.store()])
        .args(args)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .process_group(0)
        .spawn()
        .unwrap()
}

/// SIGINT to the group of `child`, as Ctrl-C in a terminal; then its output.
fn ctrl_c(child: std::process::Child) -> Out {
    Command::new("kill")
        .args(["-INT", "--", &format!("-{}", child.id())])
        .status()
        .unwrap();
    child.wait_with_output().unwrap().into()
}

#[test]
fn two_revisions_are_measured_interleaved_and_stored_as_linked_runs() {
    let sb = Sandbox::new();
    let dir = repo(&sb);
    let base = git(&dir, &["rev-parse", "main"]);
    let head = git(&dir, &["rev-parse", "HEAD"]);
    let out = ab(
        &sb,
        &dir,
        &["--build", "echo built > built.txt", "./bench.sh"],
    )
    .ok();
    assert!(
        out.stdout.contains(&format!("baseline: {}", &base[..10])),
        "{out:?}"
    );
    assert!(
        out.stdout.contains("merge base of HEAD and main"),
        "{out:?}"
    );
    assert!(out.stdout.contains("built in"), "{out:?}");
    assert!(out.stderr.contains("Stored as runs 1 and 2"), "{out:?}");
    nothing_left(&sb, &dir);
    let runs = sb.runs_json();
    assert_eq!(runs.len(), 2);
    let mut paths = Vec::new();
    for (id, side, dir, commit) in [
        ("1", "baseline", "/base/", &base),
        ("2", "candidate", "/cand/", &head),
    ] {
        let doc = sb.show_json(id);
        assert_eq!(doc["run"]["git"]["commit"], commit.as_str(), "{doc}");
        assert_eq!(doc["run"]["options"]["ab"]["side"], side, "{doc}");
        assert_eq!(
            doc["run"]["options"]["ab"]["build"]["command"], "echo built > built.txt",
            "{doc}"
        );
        let samples = crate::common::samples(&doc, 0);
        assert_eq!(samples.len(), 4, "{doc}");
        // Each side's program was the file in its own worktree.
        let path = doc["run"]["benchmarks"][0]["facts"]["binary.path"]["value"]
            .as_str()
            .unwrap_or_default()
            .to_string();
        assert!(path.contains(dir) && path.ends_with("bench.sh"), "{path}");
        paths.push(path);
    }
    // Paths of one length: the kernel copies a program's path onto its
    // stack, so paths of different lengths would place the sides' stacks
    // apart for the whole invocation (docs/STATISTICS.md §9).
    assert_eq!(paths[0].len(), paths[1].len(), "{paths:?}");
    // The scripts differ, so nothing is called identical.
    assert!(!out.stdout.contains("identical binaries"), "{out:?}");
}

#[test]
fn identical_programs_and_an_explicit_a_a_pair_are_said_first() {
    let sb = Sandbox::new();
    let dir = repo(&sb);
    let out = ab(
        &sb,
        &dir,
        &["--baseline", "HEAD", "--format", "markdown", "./bench.sh"],
    )
    .ok();
    assert!(out.stdout.contains("A/A calibration"), "{out:?}");
    assert!(
        out.stdout
            .contains("identical binaries on both sides (./bench.sh)"),
        "{out:?}"
    );
    // Identical binaries pass the gate: they were compared, and cannot
    // have regressed (a docs-only pull request). Before, their rows were
    // dropped and the gate failed with "the two sides share no benchmark".
    let out = ab(
        &sb,
        &dir,
        &[
            "--baseline",
            "HEAD",
            "--fail-on",
            "regressed",
            "--export-junit",
            sb.path("aa.xml").to_str().unwrap(),
            "./bench.sh",
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!out.stderr.contains("gate failed"), "{out:?}");
    if let Some(cases) = crate::common::junit_cases(&sb.path("aa.xml")) {
        assert!(!cases.is_empty());
        assert!(
            cases.iter().all(|c| c["result"] == "passed"),
            "identical binaries fail no test case: {cases:#?}"
        );
    }
    // {root} is each side's worktree; the name stays the template.
    let out = ab(&sb, &dir, &["--format", "json", "{root}/bench.sh"]).ok();
    let doc = crate::common::parse_json(&out.stdout);
    assert_eq!(doc["schema"], "perfsleuth/compare", "{doc}");
    assert_eq!(doc["rows"][0]["benchmark"], "{root}/bench.sh", "{doc}");
    // The two revisions, as fields and not only as notes.
    let ab = &doc["ab"];
    assert_eq!(
        ab["baseline"]["commit"],
        git(&dir, &["rev-parse", "main"]),
        "{doc}"
    );
    assert_eq!(
        ab["candidate"]["commit"],
        git(&dir, &["rev-parse", "HEAD"]),
        "{doc}"
    );
    assert_eq!(
        ab["baseline"]["chosen"], "merge base of HEAD and main",
        "{doc}"
    );
    assert_eq!(ab["candidate"]["dirty"], false, "{doc}");
    assert!(
        ab["baseline"]["run"].is_i64() && ab["candidate"]["run"].is_i64(),
        "{doc}"
    );
    assert!(ab["rounds"].as_u64().is_some_and(|r| r >= 1), "{doc}");
    assert_eq!(ab["identical_binaries"], serde_json::json!([]), "{doc}");
    assert!(ab["baseline"]["build"].is_null(), "{doc}");
    nothing_left(&sb, &dir);
}

#[test]
fn the_working_tree_is_the_default_candidate_with_its_changes() {
    let sb = Sandbox::new();
    let dir = repo(&sb);
    // Uncommitted change to a tracked file, and an untracked file it uses.
    write_script(&dir, "bench.sh", "#!/bin/sh\n. ./helper.sh\n");
    std::fs::write(dir.join("helper.sh"), "true\n").unwrap();
    ab(&sb, &dir, &["./bench.sh"]).ok();
    let doc = sb.show_json("2");
    assert_eq!(doc["run"]["git"]["dirty"], true, "{doc}");
    assert_eq!(doc["run"]["options"]["ab"]["dirty"], true, "{doc}");
    // The user's tree is untouched.
    assert_eq!(
        std::fs::read_to_string(dir.join("bench.sh")).unwrap(),
        "#!/bin/sh\n. ./helper.sh\n"
    );
    nothing_left(&sb, &dir);
    // With --candidate REV the uncommitted changes would go unmeasured.
    ab(&sb, &dir, &["--candidate", "HEAD", "./bench.sh"])
        .usage_error("uncommitted changes, which --candidate HEAD would not measure");
}

#[test]
fn bad_input_is_one_line_exit_2_and_nothing_left_behind() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.path("plain")).unwrap();
    ab(&sb, &sb.path("plain"), &["true"]).usage_error("this is not one");
    let dir = repo(&sb);
    ab(&sb, &dir, &["--baseline", "nosuch", "./bench.sh"])
        .usage_error("--baseline `nosuch` is not a revision of this repository");
    ab(&sb, &dir, &["--candidate=-x", "./bench.sh"]).usage_error("is not a revision");
    // The build fails on the baseline only.
    let out = ab(
        &sb,
        &dir,
        &[
            "--build",
            "grep -q feature bench.sh || { echo cannot build; exit 3; }",
            "./bench.sh",
        ],
    )
    .usage_error("the build of the baseline");
    assert!(out.stderr.contains("exited with code 3"), "{out:?}");
    assert!(
        out.stderr.contains("cannot build"),
        "the build's last lines: {out:?}"
    );
    nothing_left(&sb, &dir);
    ab(
        &sb,
        &dir,
        &[
            "--build",
            "sleep 5",
            "--build-timeout",
            "200ms",
            "./bench.sh",
        ],
    )
    .usage_error("took longer than --build-timeout");
    nothing_left(&sb, &dir);
    // A command that exists in one revision only.
    write_script(&dir, "new.sh", "#!/bin/sh\n");
    git(&dir, &["add", "new.sh"]);
    git(&dir, &["commit", "-qm", "new"]);
    ab(&sb, &dir, &["./new.sh"]).usage_error("in the baseline");
    nothing_left(&sb, &dir);
    ab(&sb, &dir, &["--export-json", "x.json", "./bench.sh"]).usage_error("--export-*");
    assert!(
        !sb.db().exists() || sb.runs_json().is_empty(),
        "a refused ab stored runs"
    );
}

#[test]
fn ctrl_c_during_the_build_removes_the_worktrees() {
    let sb = Sandbox::new();
    let dir = repo(&sb);
    let marker = sb.path("building");
    let build = format!("touch {}; sleep 30", marker.display());
    let child = spawn_ab(&sb, &dir, &["--build", &build, "./bench.sh"]);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while !marker.exists() {
        assert!(
            std::time::Instant::now() < deadline,
            "the build never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let out = ctrl_c(child);
    assert_eq!(out.code, 130, "{out:?}");
    assert!(
        out.stderr
            .contains("interrupted during the build of the baseline"),
        "{out:?}"
    );
    nothing_left(&sb, &dir);
}

#[test]
fn simulation_mode_compares_exact_counts_between_revisions() {
    if !perfsleuth_testkit::tools_present("ab in simulation mode", &["valgrind", "gcc"]) {
        return;
    }
    let sb = Sandbox::new();
    let dir = sb.path("crepo");
    std::fs::create_dir(&dir).unwrap();
    git(&dir, &["init", "-q", "-b", "main"]);
    let program = |n: u32| {
        format!(
            "int main(void) {{ volatile long x = 0; for (long i = 0; i < {n}; i++) x += i; return 0; }}\n"
        )
    };
    std::fs::write(dir.join("w.c"), program(100_000)).unwrap();
    std::fs::write(dir.join(".gitignore"), "w\n").unwrap();
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "base"]);
    git(&dir, &["checkout", "-qb", "more"]);
    std::fs::write(dir.join("w.c"), program(110_000)).unwrap();
    git(&dir, &["commit", "-qam", "10% more"]);
    let out = ab(
        &sb,
        &dir,
        &[
            "--mode",
            "simulation",
            "--build",
            "gcc -O1 -o w w.c",
            "--format",
            "json",
            "./w",
        ],
    )
    .ok();
    let doc = crate::common::parse_json(&out.stdout);
    let ir = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "Ir")
        .unwrap_or_else(|| panic!("no Ir row: {doc}"));
    assert_eq!(ir["verdict"], "regressed", "{ir}");
    // Exact counts: the CI is the point.
    let change = &ir["change"];
    assert!(
        change["change"]
            .as_f64()
            .is_some_and(|c| c > 0.05 && c < 0.15),
        "{ir}"
    );
    assert_eq!(change["ci_low"], change["ci_high"], "{ir}");
    // The change is attributed to the function that grew.
    assert!(
        ir["notes"][0]
            .as_str()
            .unwrap_or_default()
            .contains("`main`"),
        "{ir}"
    );
    nothing_left(&sb, &dir);
}

#[test]
fn a_slower_candidate_fails_the_gate_judged_round_by_round() {
    let sb = Sandbox::new();
    let dir = sb.path("repo");
    std::fs::create_dir(&dir).unwrap();
    git(&dir, &["init", "-q", "-b", "main"]);
    write_script(&dir, "bench.sh", "#!/bin/sh\nsleep 0.01\n");
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "base"]);
    write_script(&dir, "bench.sh", "#!/bin/sh\nsleep 0.06\n");
    git(&dir, &["commit", "-qam", "slower"]);
    let out = ab_as_given(
        &sb,
        &dir,
        &[
            "--baseline",
            "HEAD~1",
            "--runs",
            "10",
            "--rounds",
            "5",
            "--fail-on",
            "regressed",
            "--export-junit",
            sb.path("ab.xml").to_str().unwrap(),
            "./bench.sh",
        ],
    );
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stdout.contains("regressed"), "{out:?}");
    if let Some(cases) = crate::common::junit_cases(&sb.path("ab.xml")) {
        let failed: Vec<_> = cases.iter().filter(|c| c["result"] == "failure").collect();
        assert_eq!(failed.len(), 1, "{cases:#?}");
        assert_eq!(failed[0]["name"], "./bench.sh · wall", "{cases:#?}");
        assert_eq!(failed[0]["type"], "regressed");
        assert!(
            failed[0]["suite"].as_str().unwrap().starts_with("ab: "),
            "{cases:#?}"
        );
    }
    nothing_left(&sb, &dir);
}

#[test]
fn ctrl_c_while_measuring_keeps_both_sides_as_interrupted_runs() {
    let sb = Sandbox::new();
    let dir = repo(&sb);
    write_script(&dir, "slow.sh", "#!/bin/sh\nsleep 0.05\n");
    git(&dir, &["add", "slow.sh"]);
    git(&dir, &["commit", "-qm", "slow"]);
    let child = spawn_ab(
        &sb,
        &dir,
        &["--baseline", "HEAD", "--runs", "1000", "./slow.sh"],
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        let out = sb.run(["runs", "--json", "--store", &sb.store()]);
        let enough = out.code == 0
            && crate::common::parse_json(&out.stdout)["runs"]
                .as_array()
                .is_some_and(|r| {
                    r.iter().all(|r| r["samples"].as_u64() >= Some(2)) && r.len() == 2
                });
        if enough {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "no samples appeared");
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let out = ctrl_c(child);
    assert_eq!(out.code, 130, "{out:?}");
    assert!(
        out.stderr
            .contains("stored as runs 1 and 2 (status interrupted)"),
        "{out:?}"
    );
    for run in sb.runs_json() {
        assert_eq!(run["status"], "interrupted", "{run}");
    }
    nothing_left(&sb, &dir);
}

#[test]
fn with_max_time_ab_adds_rounds_while_the_comparison_is_inconclusive() {
    let sb = Sandbox::new();
    let dir = repo(&sb);
    // A threshold of 0.001 % and an alpha of 1e-12: neither `no change`
    // nor a change can be shown from a few jittery rounds, so it measures
    // to --max-time. 3 s, not 1: a round is added only when its predicted
    // time still fits, and with the whole suite running beside it the
    // first rounds alone once took most of a second (no round was added).
    let out = ab_as_given(
        &sb,
        &dir,
        &[
            "--baseline",
            "HEAD",
            "--warmup",
            "0",
            "--time-budget",
            "200ms",
            "--max-time",
            "3s",
            "--threshold",
            "0.001",
            "--alpha",
            "1e-12",
            "./bench.sh",
        ],
    )
    .ok();
    assert!(
        out.stdout
            .contains("because the comparison was inconclusive (--max-time 3.000 s)"),
        "{out:?}"
    );
    // Judged at its last look; `compare` of the two runs it stored judges
    // them at that same look and level.
    let look_of = |text: &str| -> String {
        let at = text
            .find("judged at look ")
            .unwrap_or_else(|| panic!("no look note: {text}"));
        text[at..].split(" intervals)").next().unwrap().to_string()
    };
    let said = look_of(&out.stdout);
    let again = sb
        .run([
            "compare",
            "--store",
            &sb.store(),
            "1",
            "2",
            "--alpha",
            "1e-12",
            "--threshold",
            "0.001",
            "--format",
            "json",
        ])
        .ok();
    assert_eq!(look_of(&again.stdout), said, "{again:?}");
    nothing_left(&sb, &dir);
}

#[test]
fn benchmarks_come_from_the_bench_list_of_perfsleuth_toml() {
    let sb = Sandbox::new();
    let dir = repo(&sb);
    std::fs::write(
        dir.join("perfsleuth.toml"),
        "[[bench]]\nname = \"quick\"\ncommand = \"./bench.sh\"\n\n[[bench]]\ncommand = \"./bench.sh --again\"\n",
    )
    .unwrap();
    // Found at the top of the repository from a subdirectory, as compare finds it.
    std::fs::create_dir(dir.join("sub")).unwrap();
    let out = ab(&sb, &dir.join("sub"), &["--format", "json"]).ok();
    let doc = crate::common::parse_json(&out.stdout);
    let rows: Vec<&str> = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["metric"] == "wall")
        .map(|r| r["benchmark"].as_str().unwrap())
        .collect();
    // An entry without a name is named by its command.
    assert_eq!(rows, ["quick", "./bench.sh --again"], "{doc}");
    nothing_left(&sb, &dir);
    // The list is the commands: -n would name commands that are not given.
    ab(&sb, &dir, &["-n", "x"]).usage_error("--name names commands of the command line");
    ab(&sb, &dir, &["--no-interleave"]).usage_error("ab measures both sides interleaved");
    // Hidden from ab's help, and still refused, never silently ignored.
    ab(&sb, &dir, &["--plot", "x.svg"]).usage_error("ab does not draw --plot");
    std::fs::write(dir.join("perfsleuth.toml"), "[[bench]]\ncommand = \"  \"\n").unwrap();
    ab(&sb, &dir, &[]).usage_error("has an empty command");
    std::fs::write(
        dir.join("perfsleuth.toml"),
        "[[bench]]\ncmd = \"./bench.sh\"\n",
    )
    .unwrap();
    ab(&sb, &dir, &[]).usage_error("unknown field `cmd`");
    nothing_left(&sb, &dir);
}

#[test]
fn ab_help_names_its_own_default_rounds() {
    // `ab -h` said `--rounds … [default: 5]`, the default of `run`, while ab
    // measures ten rounds (issue 38).
    let sb = Sandbox::new();
    let out = sb.run(["ab", "--help"]).ok();
    let text = out.stdout.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(text.contains("[default: 5, 10 in ab;"), "{text}");
}

#[test]
fn ab_help_lists_only_what_ab_takes() {
    // `ab -h` listed --repeat, --reference, --no-interleave, --export-* and
    // --plot, then said they are refused (issue 38).
    let sb = Sandbox::new();
    for flag in ["-h", "--help"] {
        let out = sb.run(["ab", flag]).ok();
        for refused in [
            "--repeat",
            "--reference ",
            "--reference-name",
            "--no-interleave ",
            "--export-json",
            "--export-markdown",
            "--export-hyperfine",
            "--plot",
        ] {
            let listed = out
                .stdout
                .lines()
                .any(|l| l.starts_with(' ') && l.trim_start().starts_with(refused));
            assert!(!listed, "{flag} lists {refused}: {}", out.stdout);
        }
        assert!(out.stdout.contains("--build"), "{}", out.stdout);
    }
    // `run` still lists them.
    let out = sb.run(["run", "--help"]).ok();
    assert!(out.stdout.contains("--export-markdown"));
}
