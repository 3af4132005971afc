//! The CI integration as CI runs it (docs/CI.md): the GitHub Action's steps
//! (`action.yml`), the GitLab template's scripts and docs/CI.md's shell
//! blocks, each executed as written — by bash or sh, as the runner would —
//! in a git repository whose `make` builds `./bench`, with the runner's
//! files (`$GITHUB_STEP_SUMMARY`, `$GITHUB_OUTPUT`) and a real `perfsleuth
//! serve` for the fleet. The YAML is linted in .ci/run (tests/ci/lint.py).

use crate::common::{Out, Sandbox, git, parse_json};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The repository top (action.yml, ci/, docs/).
fn top() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

/// A project on `main` whose `make` builds `./bench` (a 10 ms program),
/// and a branch `feature` where it takes 40 ms. Returns the directory and
/// the base commit; `main` is checked out.
fn project(sb: &Sandbox) -> (PathBuf, String) {
    let dir = sb.path("app");
    std::fs::create_dir(&dir).unwrap();
    git(&dir, &["init", "-q", "-b", "main"]);
    std::fs::write(
        dir.join("Makefile"),
        "bench: bench.in\n\tcp bench.in bench\n\tchmod +x bench\n",
    )
    .unwrap();
    std::fs::write(dir.join("bench.in"), "#!/bin/sh\nsleep 0.01\n").unwrap();
    std::fs::write(
        dir.join(".gitignore"),
        "bench\n.perfsleuth/\nperfsleuth-*\n",
    )
    .unwrap();
    git(&dir, &["add", "-A"]);
    git(&dir, &["commit", "-qm", "base"]);
    let base = git(&dir, &["rev-parse", "HEAD"]);
    git(&dir, &["checkout", "-qb", "feature"]);
    std::fs::write(dir.join("bench.in"), "#!/bin/sh\nsleep 0.04\n").unwrap();
    git(&dir, &["commit", "-qam", "slower"]);
    git(&dir, &["checkout", "-q", "main"]);
    (dir, base)
}

/// A YAML file as JSON, read by PyYAML; `None` (the skip reported) when
/// PyYAML is absent.
fn yaml(path: &Path) -> Option<Value> {
    let out = Command::new("python3")
        .args([
            "-c",
            "import json, sys, yaml; print(json.dumps(yaml.safe_load(open(sys.argv[1]))))",
        ])
        .arg(path)
        .output()
        .expect("python3 starts");
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("No module named 'yaml'"), "{err}");
        perfsleuth_testkit::skip("pyyaml", "PyYAML is not installed (pip install pyyaml)");
        return None;
    }
    Some(parse_json(&String::from_utf8_lossy(&out.stdout)))
}

/// Runs `script` with `shell` (its arguments before the file) in `dir`, as
/// a CI job: the sandbox's environment, perfsleuth on PATH, and `env`.
fn script(sb: &Sandbox, shell: &[&str], text: &str, dir: &Path, env: &[(&str, String)]) -> Out {
    let file = sb.path("step.sh");
    std::fs::write(&file, text).unwrap();
    let tmp = sb.path("tmp");
    std::fs::create_dir_all(&tmp).unwrap();
    let mut cmd = sb.shell(shell[0]);
    cmd.args(&shell[1..])
        .arg(&file)
        .current_dir(dir)
        .env("TMPDIR", &tmp);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().expect("the shell starts").into()
}

/// The files a GitHub runner gives a step, and the action's inputs as its
/// `env:` passes them (defaults from action.yml, then `inputs`).
fn github_env(
    sb: &Sandbox,
    action: &Value,
    inputs: &[(&str, &str)],
) -> Vec<(&'static str, String)> {
    for f in ["summary.md", "output.txt", "path.txt"] {
        std::fs::write(sb.path(f), "").unwrap();
    }
    let mut env: Vec<(&'static str, String)> = vec![
        (
            "GITHUB_STEP_SUMMARY",
            sb.path("summary.md").display().to_string(),
        ),
        ("GITHUB_OUTPUT", sb.path("output.txt").display().to_string()),
        ("GITHUB_PATH", sb.path("path.txt").display().to_string()),
        ("RUNNER_TEMP", sb.path("tmp").display().to_string()),
        ("GITHUB_ACTION_PATH", top().display().to_string()),
    ];
    let var = |input: &str| -> &'static str {
        match input {
            "server" => "PERFSLEUTH_SERVER",
            "project" => "PERFSLEUTH_PROJECT",
            "token" => "PERFSLEUTH_TOKEN",
            other => Box::leak(
                format!("INPUT_{}", other.to_uppercase().replace('-', "_")).into_boxed_str(),
            ),
        }
    };
    for (name, spec) in action["inputs"].as_object().unwrap() {
        let given = inputs.iter().find(|(k, _)| k == name).map(|(_, v)| *v);
        let value = given.unwrap_or_else(|| spec["default"].as_str().unwrap_or(""));
        env.push((var(name), value.to_string()));
    }
    env
}

/// Runs the action's steps in order as the runner does (bash, errexit,
/// pipefail); the outcome of each.
fn action_steps(sb: &Sandbox, action: &Value, dir: &Path, env: &[(&str, String)]) -> Vec<Out> {
    let steps = action["runs"]["steps"].as_array().unwrap();
    steps
        .iter()
        .map(|step| {
            let run = step["run"].as_str().expect("every step is a script");
            script(
                sb,
                &["bash", "--noprofile", "--norc", "-eo", "pipefail"],
                run,
                dir,
                env,
            )
        })
        .collect()
}

/// The JUnit failures' names, or `None` when junitparser is absent.
fn junit_failures(path: &Path) -> Option<Vec<String>> {
    let cases = crate::common::junit_cases(path)?;
    Some(
        cases
            .iter()
            .filter(|c| c["result"] == "failure")
            .map(|c| c["name"].as_str().unwrap().to_string())
            .collect(),
    )
}

#[test]
fn the_github_action_gates_a_pull_request_and_a_push_and_writes_its_reports() {
    let sb = Sandbox::new();
    let Some(action) = yaml(&top().join("action.yml")) else {
        return;
    };
    let (dir, base) = project(&sb);
    git(&dir, &["checkout", "-q", "feature"]);
    let store = sb.store();
    // A pull request: `baseline` is what `github.event.pull_request.base.sha` gives.
    let env = github_env(
        &sb,
        &action,
        &[
            ("build", "make"),
            ("benchmarks", "./bench\n"),
            ("baseline", &base),
            ("options", "--runs 6 --rounds 3 --warmup 0"),
            ("store", &store),
        ],
    );
    let outs = action_steps(&sb, &action, &dir, &env);
    assert_eq!(outs[0].code, 0, "install: {:?}", outs[0]);
    assert!(outs[0].stdout.starts_with("using "), "{:?}", outs[0]);
    let m = &outs[1];
    assert_eq!(m.code, 1, "the gate fails: {m:?}");
    assert!(
        m.stdout
            .contains("::error title=perfsleuth%3A ./bench regressed::"),
        "{m:?}"
    );
    let output = std::fs::read_to_string(sb.path("output.txt")).unwrap();
    assert!(
        output.contains("exit-code=1\n") && output.contains("junit=perfsleuth-junit.xml\n"),
        "{output}"
    );
    let summary = std::fs::read_to_string(sb.path("summary.md")).unwrap();
    assert!(summary.contains("**regressed**"), "{summary}");
    if let Some(failed) = junit_failures(&dir.join("perfsleuth-junit.xml")) {
        assert_eq!(failed, ["./bench · wall"]);
    }

    // The default branch: `run`, stored, gated on the history (one point:
    // nothing to find, passes).
    git(&dir, &["checkout", "-q", "main"]);
    let run_inputs = |baseline: &'static str| {
        vec![
            ("command", "run"),
            ("benchmarks", "./bench"),
            ("baseline", baseline),
            ("options", "--runs 5 --warmup 0"),
            ("store", store.as_str()),
        ]
    };
    let make = |sb: &Sandbox| script(sb, &["sh", "-e"], "make -s\n", &dir, &[]);
    assert_eq!(make(&sb).code, 0);
    let outs = action_steps(
        &sb,
        &action,
        &dir,
        &github_env(&sb, &action, &run_inputs("")),
    );
    assert_eq!(outs[1].code, 0, "{:?}", outs[1]);
    let output = std::fs::read_to_string(sb.path("output.txt")).unwrap();
    assert!(output.contains("exit-code=0\n"), "{output}");
    let summary = std::fs::read_to_string(sb.path("summary.md")).unwrap();
    assert!(summary.contains("./bench"), "history's report: {summary}");
    // The next push is slower; `baseline: main` compares with main's run.
    git(&dir, &["checkout", "-q", "feature"]);
    assert_eq!(make(&sb).code, 0);
    let outs = action_steps(
        &sb,
        &action,
        &dir,
        &github_env(&sb, &action, &run_inputs("main")),
    );
    assert_eq!(outs[1].code, 1, "{:?}", outs[1]);
    assert!(outs[1].stdout.contains("::error title="), "{:?}", outs[1]);

    // Bad input is exit 2 with an annotation that says what to write.
    let env = github_env(&sb, &action, &[("command", "bench"), ("store", &store)]);
    let outs = action_steps(&sb, &action, &dir, &env);
    assert_eq!(outs[1].code, 2, "{:?}", outs[1]);
    assert!(
        outs[1]
            .stdout
            .contains("::error title=perfsleuth::command is 'bench'; use ab or run"),
        "{:?}",
        outs[1]
    );
}

#[test]
fn the_gitlab_template_gates_a_merge_request_and_the_default_branch() {
    let sb = Sandbox::new();
    let Some(t) = yaml(&top().join("ci/gitlab/perfsleuth.gitlab-ci.yml")) else {
        return;
    };
    let (dir, base) = project(&sb);
    let lines = |v: &Value| -> Vec<String> {
        v.as_array()
            .unwrap()
            .iter()
            .map(|l| l.as_str().unwrap().to_string())
            .collect()
    };
    // A job's shell: before_script and script in one shell, stopping at the
    // first failing command, with the template's variables, then the user's.
    let job = |name: &str, given: &[(&str, String)]| -> Out {
        let mut text = lines(&t[".perfsleuth"]["before_script"]);
        text.extend(lines(&t[name]["script"]));
        let mut env: Vec<(&str, String)> = Vec::new();
        for vars in [&t[".perfsleuth"]["variables"], &t[name]["variables"]] {
            for (k, v) in vars.as_object().unwrap() {
                env.push((
                    Box::leak(k.clone().into_boxed_str()),
                    v.as_str().unwrap().into(),
                ));
            }
        }
        env.push(("CI_PROJECT_DIR", dir.display().to_string()));
        env.push(("PERFSLEUTH_STORE", sb.store()));
        env.extend(given.iter().cloned());
        script(&sb, &["sh", "-e"], &text.join("\n"), &dir, &env)
    };
    git(&dir, &["checkout", "-q", "feature"]);
    let mr = [
        ("CI_MERGE_REQUEST_DIFF_BASE_SHA", base.clone()),
        ("PERFSLEUTH_BENCHMARKS", "./bench".to_string()),
        ("PERFSLEUTH_BUILD", "make".to_string()),
        (
            "PERFSLEUTH_OPTIONS",
            "--runs 6 --rounds 3 --warmup 0".to_string(),
        ),
    ];
    let out = job(".perfsleuth-merge-request", &mr);
    assert_eq!(out.code, 1, "the gate fails: {out:?}");
    let report = std::fs::read_to_string(dir.join("perfsleuth-report.md")).unwrap();
    assert!(report.contains("**regressed**"), "{report}");
    assert!(
        out.stdout.contains("**regressed**"),
        "the log shows it: {out:?}"
    );
    if let Some(failed) = junit_failures(&dir.join("perfsleuth-junit.xml")) {
        assert_eq!(failed, ["./bench · wall"]);
    }
    // Not gating: the same job passes with its reports.
    let mut lenient = mr.to_vec();
    lenient.push(("PERFSLEUTH_FAIL_ON_REGRESSION", "false".into()));
    assert_eq!(job(".perfsleuth-merge-request", &lenient).code, 0);

    // The default branch: measured, stored, the history checked.
    git(&dir, &["checkout", "-q", "main"]);
    assert_eq!(script(&sb, &["sh", "-e"], "make -s\n", &dir, &[]).code, 0);
    let main = [
        ("PERFSLEUTH_BENCHMARKS", "./bench".to_string()),
        ("PERFSLEUTH_OPTIONS", "--runs 5 --warmup 0".to_string()),
    ];
    let out = job(".perfsleuth-main", &main);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(dir.join("perfsleuth-junit.xml").exists());

    // Without perfsleuth on PATH nor a source to build: one clear line, exit 2.
    let mut bare = main.to_vec();
    bare.push(("PATH", "/usr/bin:/bin".into()));
    let out = job(".perfsleuth-main", &bare);
    if out.stderr.contains("perfsleuth is not on PATH") {
        assert_eq!(out.code, 2, "{out:?}");
    } else {
        assert!(
            Path::new("/usr/bin/perfsleuth").exists() || Path::new("/bin/perfsleuth").exists(),
            "{out:?}"
        );
    }
}

/// docs/CI.md's shell blocks, each after its `<!-- ci-test: … -->` line:
/// `branch=B exit=N` pairs, separated by `;` (run on B, expect N).
fn guide_blocks() -> Vec<(Vec<(String, i32)>, String)> {
    crate::common::marked_sh_blocks("docs/CI.md", "ci-test")
        .into_iter()
        .map(|(m, code)| {
            let runs = m
                .split(';')
                .map(|run| {
                    let mut branch = String::new();
                    let mut exit = -1;
                    for kv in run.split_whitespace() {
                        match kv.split_once('=') {
                            Some(("branch", b)) => branch = b.to_string(),
                            Some(("exit", e)) => exit = e.parse().unwrap(),
                            _ => panic!("ci-test: unknown {kv:?}"),
                        }
                    }
                    assert!(!branch.is_empty() && exit >= 0, "ci-test: {m}");
                    (branch, exit)
                })
                .collect();
            (runs, code)
        })
        .collect()
}

#[test]
fn every_shell_block_of_the_ci_guide_runs_as_written() {
    let sb = Sandbox::new();
    let (dir, base) = project(&sb);
    // Declared first, dropped last: the server stops before its sandbox goes.
    let crate::common::Team {
        sandbox: _server_box,
        store: _,
        secret,
        server,
    } = crate::common::team();
    let env = [
        ("BASE_SHA", base),
        ("BRANCH", "feature".to_string()),
        ("PERFSLEUTH_SERVER", server.base.clone()),
        ("PERFSLEUTH_PROJECT", "app".to_string()),
        ("PERFSLEUTH_TOKEN", secret),
    ];
    let blocks = guide_blocks();
    assert!(blocks.len() >= 4, "{blocks:?}");
    for (runs, code) in &blocks {
        for (branch, exit) in runs {
            git(&dir, &["checkout", "-q", branch]);
            let out = script(&sb, &["bash", "-eo", "pipefail"], code, &dir, &env);
            assert_eq!(out.code, *exit, "on {branch}:\n{code}\n{out:?}");
        }
    }
    // What the blocks left: the pull request's report and JUnit, and the
    // server's comment on the slower branch.
    let report = std::fs::read_to_string(dir.join("perfsleuth-report.md")).unwrap();
    assert!(report.contains("**regressed**"), "{report}");
    let comment = std::fs::read_to_string(dir.join("perfsleuth-comment.md")).unwrap();
    assert!(comment.contains("**regressed**"), "{comment}");
    if let Some(cases) = crate::common::junit_cases(&dir.join("perfsleuth-junit.xml")) {
        assert_eq!(cases[0]["suite"], "history --check", "{cases:?}");
    }
}

#[test]
fn run_gates_its_commands_against_the_reference_and_gives_the_ci_outputs() {
    let sb = Sandbox::new();
    // The second command sleeps three times as long: regressed on wall time.
    let cmds = ["sleep 0.001", "sleep 0.003"];
    // --fail-on gated only `--baseline` comparisons: a run of two commands
    // exited 0 with the second 3× slower.
    let out = sb.bench(["--runs", "12", "--fail-on", "regressed", cmds[0], cmds[1]]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr
            .contains("gate failed: `sleep 0.003 wall` regressed"),
        "{out:?}"
    );
    // --format github: the summary, then the report to $GITHUB_STEP_SUMMARY
    // and an annotation; --export-junit: a failed case where the gate fails.
    let summary = sb.path("summary.md");
    let junit = sb.path("run.xml");
    let out: Out = sb
        .cmd()
        .args([
            "run",
            "--store",
            &sb.store(),
            "--runs",
            "12",
            "--format",
            "github",
            "--export-junit",
            junit.to_str().unwrap(),
            "--reference",
            cmds[0],
            cmds[1],
        ])
        .env("GITHUB_STEP_SUMMARY", &summary)
        .output()
        .unwrap()
        .into();
    let out = out.ok();
    assert!(out.stdout.contains("Benchmark 1: sleep 0.001"), "{out:?}");
    assert!(
        out.stdout
            .lines()
            .any(|l| l.starts_with("::error title=perfsleuth%3A sleep 0.003 regressed::wall +")),
        "{out:?}"
    );
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(
        md.contains("| `sleep 0.003` | wall (gating) |") && md.contains("**regressed**"),
        "{md}"
    );
    if let Some(failures) = junit_failures(&junit) {
        assert_eq!(failures, ["sleep 0.003 · wall"]);
    }
    // One command gives no verdict: said before measuring.
    sb.bench([
        "--runs",
        "2",
        "--export-junit",
        junit.to_str().unwrap(),
        "true",
    ])
    .usage_error("one command has none");
    // Against --baseline: the same outputs, of that comparison.
    let out = sb
        .bench([
            "--runs",
            "12",
            "--baseline",
            "latest",
            "--export-junit",
            junit.to_str().unwrap(),
            cmds[0],
            cmds[1],
        ])
        .ok();
    assert!(out.stdout.contains("Benchmark 2"), "{out:?}");
    if let Some(cases) = crate::common::junit_cases(&junit) {
        assert!(
            cases
                .iter()
                .all(|c| c["suite"].as_str().unwrap().starts_with("run: run ")),
            "{cases:?}"
        );
    }
}
