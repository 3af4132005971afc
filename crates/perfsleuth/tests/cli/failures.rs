//! How failures are reported and cleaned up after: stderr of timed runs,
//! intermittent failures, `--cleanup` after a failure, refused option mixes.

use crate::common::Sandbox;

#[test]
fn a_failing_timed_run_shows_stderr_from_an_untimed_rerun() {
    let sb = Sandbox::new();
    let out = sb
        .bench([
            "--warmup",
            "0",
            "--runs",
            "3",
            "--shell",
            "sh",
            "echo broken-input >&2; exit 3",
        ])
        .usage_error("exited with code 3");
    assert!(out.stderr.contains("from a re-run"), "{out:?}");
    assert!(out.stderr.contains("broken-input"), "{out:?}");
    assert_eq!(sb.runs_json()[0]["status"], "failed");
}

#[test]
fn a_failing_warmup_shows_its_own_stderr() {
    let sb = Sandbox::new();
    let out = sb
        .bench([
            "--warmup",
            "1",
            "--runs",
            "3",
            "--shell",
            "sh",
            "echo in-warmup >&2; exit 4",
        ])
        .usage_error("exited with code 4");
    assert!(out.stderr.contains("in-warmup"), "{out:?}");
    assert!(!out.stderr.contains("from a re-run"), "{out:?}");
}

#[test]
fn an_intermittent_failure_is_called_so() {
    let sb = Sandbox::new();
    let flag = sb.path("flag");
    let script = format!("test -e {0} && exit 0; touch {0}; exit 5", flag.display());
    let out = sb
        .bench(["--warmup", "0", "--runs", "3", "--shell", "sh", &script])
        .usage_error("exited with code 5");
    assert!(out.stderr.contains("intermittent"), "{out:?}");
}

#[test]
fn a_command_that_floods_stderr_is_measured() {
    // Timed runs send stderr to /dev/null; the flood must neither fail the
    // run nor be kept.
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "3",
        "--shell",
        "sh",
        "head -c 1000000 /dev/zero >&2",
    ])
    .ok();
    let doc = sb.show_json("latest");
    assert_eq!(crate::common::samples(&doc, 0).len(), 3);
}

#[test]
fn cleanup_runs_after_a_failure() {
    let sb = Sandbox::new();
    let dir = sb.path("made-by-setup");
    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "2",
        "--setup",
        &format!("mkdir {}", dir.display()),
        "--cleanup",
        &format!("rmdir {}", dir.display()),
        "false",
    ])
    .usage_error("exited with code 1");
    assert!(!dir.exists(), "--cleanup must undo --setup after a failure");
}

#[test]
fn two_exports_to_one_file_are_refused_before_running() {
    let sb = Sandbox::new();
    sb.bench([
        "--export-json",
        "-",
        "--export-csv",
        "-",
        "--shell",
        "sh",
        "echo ran >> marker",
    ])
    .usage_error("both write to");
    sb.bench([
        "--export-json",
        "x",
        "--export-markdown",
        "x",
        "--shell",
        "sh",
        "echo ran >> marker",
    ])
    .usage_error("both write to");
    assert!(!sb.path("marker").exists());
}

#[test]
fn assignments_and_tilde_need_a_shell() {
    let sb = Sandbox::new();
    sb.bench(["FOO=1 true"]).usage_error("--shell");
    sb.bench(["ls ~"]).usage_error("--shell");
    assert!(!sb.db().exists());
}

#[test]
fn empty_ignore_failure_codes_are_refused() {
    let sb = Sandbox::new();
    sb.bench(["--ignore-failure=", "true"])
        .clap_error("--ignore-failure");
}

#[test]
fn option_errors_have_a_hint_naming_the_subcommand_help() {
    let sb = Sandbox::new();
    let out = sb.bench(["--runs", "0", "true"]).clap_error("--runs");
    assert!(out.stderr.contains("perfsleuth run --help"), "{out:?}");
}
