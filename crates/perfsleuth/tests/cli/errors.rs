//! Bad input to `perfsleuth run`: exit 2, a one-line `error:` with a hint,
//! nothing run, nothing stored, nothing overwritten.

use crate::common::Sandbox;
use std::os::unix::fs::PermissionsExt;

/// Runs `perfsleuth run --store <sandbox>/r.db ARGS…` and checks that no
/// store was created.
#[track_caller]
fn refused(sb: &Sandbox, args: &[&str], needle: &str) -> crate::common::Out {
    let out = sb.bench(args).usage_error(needle);
    assert!(!sb.db().exists(), "bad input created a store: {out:?}");
    assert!(
        out.stdout.is_empty(),
        "bad input printed a summary: {out:?}"
    );
    out
}

#[test]
fn command_not_found() {
    let sb = Sandbox::new();
    let out = refused(
        &sb,
        &["--runs", "2", "no-such-program-xyz --flag"],
        "command not found: `no-such-program-xyz`",
    );
    assert!(out.stderr.contains("PATH"), "{out:?}");
}

#[test]
fn not_found_is_reported_before_any_other_command_runs() {
    let sb = Sandbox::new();
    refused(
        &sb,
        &[
            "--runs",
            "2",
            "sh -c 'echo ran >> marker'",
            "no-such-program-xyz",
        ],
        "no-such-program-xyz",
    );
    assert!(!sb.path("marker").exists());
}

#[test]
fn file_without_execute_permission() {
    let sb = Sandbox::new();
    let script = sb.write("script.sh", "#!/bin/sh\necho ran >> marker\n");
    std::fs::set_permissions(&script, std::fs::Permissions::from_mode(0o644)).unwrap();
    let out = refused(&sb, &["--runs", "2", "./script.sh"], "is not executable");
    assert!(out.stderr.contains("chmod +x ./script.sh"), "{out:?}");
    assert!(!sb.path("marker").exists());
}

#[test]
fn directory_as_command() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.path("adir")).unwrap();
    refused(&sb, &["--runs", "2", "./adir"], "./adir");
    refused(&sb, &["--runs", "2", "adir"], "not found");
}

#[test]
fn directory_as_command_is_not_told_to_chmod() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.path("adir")).unwrap();
    let out = refused(&sb, &["--runs", "2", "./adir"], "./adir");
    assert!(!out.stderr.contains("chmod"), "{out:?}");
    assert!(out.stderr.contains("directory"), "{out:?}");
}

#[test]
fn empty_and_blank_commands() {
    let sb = Sandbox::new();
    refused(&sb, &["--runs", "2", ""], "empty command");
    refused(&sb, &["--runs", "2", "   "], "empty command");
    refused(&sb, &["--runs", "2", "--shell", "sh", " "], "empty command");
    refused(&sb, &["--runs", "2", "true", ""], "empty command");
}

#[test]
fn unterminated_quotes() {
    let sb = Sandbox::new();
    let out = refused(&sb, &["--runs", "2", "echo 'abc"], "unterminated");
    assert!(out.stderr.contains("echo 'abc"), "{out:?}");
    refused(&sb, &["--runs", "2", "echo \"abc"], "unterminated");
}

#[test]
fn runs_zero() {
    let sb = Sandbox::new();
    let out = sb.bench(["--runs", "0", "true"]).clap_error("--runs");
    assert!(out.stdout.is_empty());
    assert!(!sb.db().exists());
}

#[test]
fn unknown_option() {
    let sb = Sandbox::new();
    let out = sb
        .bench(["--runs", "2", "--bogus-option", "true"])
        .clap_error("--bogus-option");
    assert!(out.stdout.is_empty());
    assert!(!sb.db().exists());
    sb.run(["frobnicate"]).clap_error("frobnicate");
}

#[test]
fn missing_command() {
    let sb = Sandbox::new();
    let out = sb
        .bench(["--runs", "2"])
        .usage_error("no command to benchmark");
    assert!(out.stderr.contains("[[bench]]"), "{out:?}");
    // A config file without a [[bench]] list says so.
    sb.write("perfsleuth.toml", "[compare]\nalpha = 0.01\n");
    sb.bench(["--runs", "2"]).usage_error("has no [[bench]]");
    assert!(!sb.db().exists());
}

#[test]
fn help_and_version_succeed() {
    let sb = Sandbox::new();
    let out = sb.run(["run", "--help"]).ok();
    for opt in [
        "--warmup",
        "--runs",
        "--min-runs",
        "--max-runs",
        "--time-budget",
        "--precision",
        "--prepare",
        "--setup",
        "--cleanup",
        "--shell",
        "--parameter-list",
        "--parameter-scan",
        "--step",
        "--name",
        "--ignore-failure",
        "--timeout",
        "--output",
        "--input",
        "--no-interleave",
        "--reference",
        "--export-json",
        "--export-csv",
        "--export-markdown",
        "--no-store",
        "--store",
        "--color",
    ] {
        assert!(out.stdout.contains(opt), "{opt} missing from --help");
    }
    let out = sb.run(["--version"]).ok();
    assert!(out.stdout.starts_with("perfsleuth "), "{out:?}");
}

#[test]
fn refused_run_leaves_the_output_file_alone() {
    let sb = Sandbox::new();
    sb.write("out.txt", "precious\n");
    refused(
        &sb,
        &["--runs", "2", "--output", "out.txt", "no-such-program-xyz"],
        "no-such-program-xyz",
    );
    assert_eq!(
        std::fs::read_to_string(sb.path("out.txt")).unwrap(),
        "precious\n"
    );
}

#[test]
fn refused_store_runs_nothing_and_keeps_the_file() {
    let sb = Sandbox::new();
    sb.write("r.db", "not a database\n");
    let out = sb
        .bench(["--runs", "2", "sh -c 'echo ran >> marker'"])
        .usage_error("not a perfsleuth database");
    assert!(out.stdout.is_empty(), "{out:?}");
    assert!(!sb.path("marker").exists());
    assert_eq!(
        std::fs::read_to_string(sb.db()).unwrap(),
        "not a database\n"
    );
}

#[test]
fn input_directory_is_refused_before_running() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.path("adir")).unwrap();
    refused(&sb, &["--runs", "2", "--input", "adir", "cat"], "--input");
}
