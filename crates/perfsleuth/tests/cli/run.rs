//! `perfsleuth run`: every option, checked through real child processes, the
//! files they leave behind, and what the store holds afterwards.

use crate::common::{Sandbox, bench_names, own_sleep, process_running_with, samples};
use serde_json::Value;
use std::time::{Duration, Instant};

/// The stored options of the latest run.
fn options(sb: &Sandbox) -> Value {
    sb.show_json("latest")["run"]["options"].clone()
}

// ---------------------------------------------------------------- --warmup

#[test]
fn warmup_runs_execute_but_are_not_stored_as_samples() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "2",
        "--runs",
        "3",
        "--shell",
        "sh",
        "echo x >> count.txt",
    ])
    .ok();
    assert_eq!(sb.lines("count.txt").len(), 5, "2 warmups + 3 timed runs");
    let doc = sb.show_json("latest");
    let s = samples(&doc, 0);
    assert_eq!(s.len(), 3);
    let iterations: Vec<u64> = s.iter().map(|s| s["iteration"].as_u64().unwrap()).collect();
    assert_eq!(iterations, [0, 1, 2]);
    assert_eq!(doc["run"]["options"]["warmup"], 2);
    assert_eq!(sb.runs_json()[0]["samples"], 3);
}

#[test]
fn warmup_zero_runs_only_the_timed_iterations() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "2",
        "--shell",
        "sh",
        "echo x >> count.txt",
    ])
    .ok();
    assert_eq!(sb.lines("count.txt").len(), 2);
}

#[test]
fn warmup_defaults_to_one_run() {
    let sb = Sandbox::new();
    sb.bench(["--runs", "2", "--shell", "sh", "echo x >> count.txt"])
        .ok();
    assert_eq!(sb.lines("count.txt").len(), 3, "1 default warmup + 2 runs");
    assert_eq!(options(&sb)["warmup"], 1);
}

#[test]
fn warmup_rejects_a_non_number() {
    let sb = Sandbox::new();
    sb.bench(["--warmup", "many", "true"])
        .clap_error("--warmup");
    assert!(!sb.db().exists());
}

// ---------------------------------------------------------------- --runs, --min-runs, --max-runs

#[test]
fn runs_gives_the_exact_sample_count() {
    let sb = Sandbox::new();
    sb.bench(["--warmup", "0", "--runs", "4", "true"]).ok();
    let doc = sb.show_json("latest");
    assert_eq!(samples(&doc, 0).len(), 4);
    assert_eq!(doc["run"]["options"]["runs"], 4);
    assert_eq!(doc["run"]["status"], "complete");
    assert!(
        samples(&doc, 0)
            .iter()
            .all(|s| s["exit_code"] == 0 && s["wall_ns"].as_u64().unwrap() > 0)
    );
}

#[test]
fn runs_short_option_and_summary_count() {
    let sb = Sandbox::new();
    let out = sb.bench(["-w", "0", "-r", "2", "true"]).ok();
    assert!(out.stdout.contains("2 runs"), "{out:?}");
    assert_eq!(samples(&sb.show_json("latest"), 0).len(), 2);
}

#[test]
fn runs_conflicts_with_min_and_max_runs() {
    let sb = Sandbox::new();
    sb.bench(["--runs", "3", "--min-runs", "2", "true"])
        .clap_error("--min-runs");
    sb.bench(["--runs", "3", "--max-runs", "4", "true"])
        .clap_error("--max-runs");
    assert!(!sb.db().exists());
}

#[test]
fn min_and_max_runs_bound_the_adaptive_count() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "0",
        "--min-runs",
        "2",
        "--max-runs",
        "4",
        "--time-budget",
        "1ms",
        "true",
    ])
    .ok();
    let n = samples(&sb.show_json("latest"), 0).len();
    assert!((2..=4).contains(&n), "{n} samples");
    let opts = options(&sb);
    assert_eq!(opts["min_runs"], 2);
    assert_eq!(opts["max_runs"], 4);
    assert_eq!(opts["runs"], Value::Null);
}

#[test]
fn max_runs_caps_a_run_that_never_reaches_its_precision() {
    let sb = Sandbox::new();
    // A 1-hour budget and a precision no real timing can reach: only
    // --max-runs can stop it.
    sb.bench([
        "--warmup",
        "0",
        "--min-runs",
        "2",
        "--max-runs",
        "3",
        "--time-budget",
        "1h",
        "--precision",
        "0.0000001",
        "true",
    ])
    .ok();
    assert_eq!(samples(&sb.show_json("latest"), 0).len(), 3);
}

#[test]
fn min_runs_is_a_floor_even_when_the_budget_is_spent() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "0",
        "--min-runs",
        "5",
        "--max-runs",
        "8",
        "--time-budget",
        "1ns",
        "true",
    ])
    .ok();
    let n = samples(&sb.show_json("latest"), 0).len();
    assert!((5..=8).contains(&n), "{n} samples");
}

#[test]
fn max_runs_below_min_runs_is_refused() {
    let sb = Sandbox::new();
    sb.bench([
        "--min-runs",
        "5",
        "--max-runs",
        "3",
        "--shell",
        "sh",
        "echo ran >> marker",
    ])
    .usage_error("--max-runs 3 is below --min-runs 5");
    assert!(!sb.path("marker").exists(), "the command must not run");
    assert!(!sb.db().exists());
}

#[test]
fn runs_min_runs_and_max_runs_reject_out_of_range_values() {
    let sb = Sandbox::new();
    sb.bench(["--runs", "0", "true"]).clap_error("--runs");
    sb.bench(["--runs", "-1", "true"]).clap_error("");
    sb.bench(["--min-runs", "0", "true"])
        .clap_error("--min-runs");
    sb.bench(["--max-runs", "1", "true"])
        .clap_error("--max-runs");
    sb.bench(["--runs", "two", "true"]).clap_error("--runs");
    assert!(!sb.db().exists());
}

// ---------------------------------------------------------------- --time-budget, --precision

#[test]
fn time_budget_accepts_units_and_is_recorded() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "0",
        "--min-runs",
        "2",
        "--max-runs",
        "3",
        "--time-budget",
        "250ms",
        "true",
    ])
    .ok();
    assert_eq!(options(&sb)["time_budget_s"], 0.25);
}

#[test]
fn time_budget_rejects_invalid_values() {
    let sb = Sandbox::new();
    sb.bench(["--time-budget", "abc", "true"])
        .clap_error("invalid duration `abc`");
    sb.bench(["--time-budget", "0", "true"])
        .clap_error("must be positive");
    sb.bench(["--time-budget", "3 parsecs", "true"])
        .clap_error("unknown unit");
    assert!(!sb.db().exists());
}

#[test]
fn precision_is_parsed_as_a_percentage_and_recorded() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "0",
        "--min-runs",
        "2",
        "--max-runs",
        "3",
        "--precision",
        "5%",
        "true",
    ])
    .ok();
    assert_eq!(options(&sb)["precision"], 0.05);
}

#[test]
fn precision_reached_stops_before_the_budget() {
    let sb = Sandbox::new();
    // 99 %: any sane median CI is that tight after a handful of runs, so the
    // run stops long before --max-runs despite the 1-hour budget.
    sb.bench([
        "--warmup",
        "1",
        "--min-runs",
        "2",
        "--max-runs",
        "400",
        "--time-budget",
        "1h",
        "--precision",
        "99",
        "true",
    ])
    .ok();
    let n = samples(&sb.show_json("latest"), 0).len();
    assert!((2..400).contains(&n), "{n} samples");
}

#[test]
fn precision_rejects_invalid_values() {
    let sb = Sandbox::new();
    sb.bench(["--precision", "abc", "true"])
        .clap_error("invalid percentage `abc`");
    sb.bench(["--precision", "-1", "true"])
        .clap_error("between 0 and 100");
    sb.bench(["--precision", "150%", "true"])
        .clap_error("between 0 and 100");
    assert!(!sb.db().exists());
}

// ---------------------------------------------------------------- --prepare

#[test]
fn prepare_runs_before_every_warmup_and_timed_iteration() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "1",
        "--runs",
        "3",
        "--shell",
        "sh",
        "--prepare",
        "echo p >> log",
        "echo c >> log",
    ])
    .ok();
    assert_eq!(sb.lines("log"), ["p", "c", "p", "c", "p", "c", "p", "c"]);
    assert_eq!(samples(&sb.show_json("latest"), 0).len(), 3);
}

#[test]
fn prepare_without_shell_is_split_like_the_command() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "2",
        "--prepare",
        "sh -c 'echo prepared >> log'",
        "true",
    ])
    .ok();
    assert_eq!(sb.lines("log"), ["prepared", "prepared"]);
}

#[test]
fn one_prepare_applies_to_every_command() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "2",
        "--shell",
        "sh",
        "--prepare",
        "echo p >> log",
        "echo a >> log",
        "echo b >> log",
    ])
    .ok();
    assert_eq!(sb.lines("log"), ["p", "a", "p", "b", "p", "b", "p", "a"]);
}

#[test]
fn prepare_given_once_per_command_pairs_in_order() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "1",
        "--runs",
        "2",
        "--no-interleave",
        "--shell",
        "sh",
        "--prepare",
        "echo pa >> log",
        "--prepare",
        "echo pb >> log",
        "echo a >> log",
        "echo b >> log",
    ])
    .ok();
    assert_eq!(
        sb.lines("log"),
        [
            "pa", "a", "pa", "a", "pa", "a", "pb", "b", "pb", "b", "pb", "b"
        ]
    );
}

#[test]
fn prepare_count_must_match_the_commands() {
    let sb = Sandbox::new();
    sb.bench([
        "--shell",
        "sh",
        "-p",
        "true",
        "-p",
        "true",
        "echo 1 >> marker",
        "echo 2 >> marker",
        "echo 3 >> marker",
    ])
    .usage_error("2 --prepare values for 3 commands");
    assert!(!sb.path("marker").exists());
    assert!(!sb.db().exists());
}

#[test]
fn failing_prepare_stops_the_run() {
    let sb = Sandbox::new();
    sb.bench(["--warmup", "0", "--runs", "3", "--prepare", "false", "true"])
        .usage_error("--prepare");
    let doc = sb.show_json("latest");
    assert_eq!(doc["run"]["status"], "failed");
    assert_eq!(samples(&doc, 0).len(), 0);
}

// ---------------------------------------------------------------- --setup, --cleanup

#[test]
fn setup_and_cleanup_run_once_per_command_around_its_runs() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "1",
        "--runs",
        "2",
        "--no-interleave",
        "--shell",
        "sh",
        "--setup",
        "echo s >> log",
        "--cleanup",
        "echo c >> log",
        "echo a >> log",
        "echo b >> log",
    ])
    .ok();
    assert_eq!(
        sb.lines("log"),
        ["s", "a", "a", "a", "c", "s", "b", "b", "b", "c"]
    );
}

#[test]
fn setup_and_cleanup_per_command_with_interleaving() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "2",
        "--shell",
        "sh",
        "-s",
        "echo sa >> log",
        "-s",
        "echo sb >> log",
        "-c",
        "echo ca >> log",
        "-c",
        "echo cb >> log",
        "echo a >> log",
        "echo b >> log",
    ])
    .ok();
    assert_eq!(
        sb.lines("log"),
        ["sa", "sb", "a", "b", "b", "a", "ca", "cb"]
    );
}

#[test]
fn failing_setup_is_an_error_naming_setup_and_nothing_is_measured() {
    let sb = Sandbox::new();
    let out = sb
        .bench([
            "--runs",
            "2",
            "--shell",
            "sh",
            "--setup",
            "echo broken-setup >&2; exit 7",
            "echo ran >> marker",
        ])
        .usage_error("--setup");
    assert!(out.stderr.contains("exited with code 7"), "{out:?}");
    assert!(out.stderr.contains("broken-setup"), "stderr tail: {out:?}");
    assert!(!sb.path("marker").exists(), "the command must not run");
    let doc = sb.show_json("latest");
    assert_eq!(doc["run"]["status"], "failed");
    assert_eq!(samples(&doc, 0).len(), 0);
}

#[test]
fn failing_cleanup_is_an_error_naming_cleanup() {
    let sb = Sandbox::new();
    sb.bench(["--warmup", "0", "--runs", "2", "--cleanup", "false", "true"])
        .usage_error("--cleanup");
    let doc = sb.show_json("latest");
    assert_eq!(doc["run"]["status"], "failed");
    assert_eq!(
        samples(&doc, 0).len(),
        2,
        "the runs before cleanup are kept"
    );
}

#[test]
fn setup_and_cleanup_counts_must_match_the_commands() {
    let sb = Sandbox::new();
    sb.bench(["-s", "true", "-s", "true", "true", "true", "true"])
        .usage_error("2 --setup values for 3 commands");
    sb.bench(["-c", "true", "-c", "true", "true", "true", "true"])
        .usage_error("2 --cleanup values for 3 commands");
    assert!(!sb.db().exists());
}

#[test]
fn helper_commands_are_checked_before_anything_runs() {
    let sb = Sandbox::new();
    sb.bench([
        "--setup",
        "no-such-setup-tool-xyz",
        "--shell",
        "sh",
        "echo ran >> marker",
    ])
    .usage_error("--setup");
    // Without --shell, the helper program itself is resolved up front.
    sb.bench([
        "--cleanup",
        "no-such-cleanup-tool-xyz",
        "sh -c 'echo ran >> marker'",
    ])
    .usage_error("no-such-cleanup-tool-xyz");
    assert!(!sb.path("marker").exists());
}

// ---------------------------------------------------------------- --parameter-list, --parameter-scan, --step

#[test]
fn parameter_list_makes_one_benchmark_per_value() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "2",
        "--shell",
        "sh",
        "--parameter-list",
        "v",
        "a,b",
        "echo {v} >> log",
    ])
    .ok();
    let doc = sb.show_json("latest");
    assert_eq!(bench_names(&doc), ["echo a >> log", "echo b >> log"]);
    let b = &doc["run"]["benchmarks"];
    assert_eq!(b[0]["parameters"]["v"], "a");
    assert_eq!(b[1]["parameters"]["v"], "b");
    assert_eq!(b[1]["argv"][2], "echo b >> log");
    let mut lines = sb.lines("log");
    lines.sort();
    assert_eq!(lines, ["a", "a", "b", "b"]);
}

#[test]
fn two_parameter_lists_multiply() {
    let sb = Sandbox::new();
    let out = sb
        .bench([
            "--warmup",
            "0",
            "--runs",
            "2",
            "-L",
            "x",
            "1,2",
            "-L",
            "y",
            "p,q",
            "--name",
            "n-{x}{y}",
            "echo {x} {y}",
        ])
        .ok();
    let doc = sb.show_json("latest");
    assert_eq!(bench_names(&doc), ["n-1p", "n-1q", "n-2p", "n-2q"]);
    assert_eq!(doc["run"]["benchmarks"][3]["command"], "echo 2 q");
    assert_eq!(
        doc["run"]["benchmarks"][3]["argv"],
        serde_json::json!(["echo", "2", "q"])
    );
    for i in 0..4 {
        assert_eq!(samples(&doc, i).len(), 2);
    }
    assert!(out.stdout.contains("Benchmark 4: n-2q"), "{out:?}");
}

#[test]
fn parameter_scan_makes_one_benchmark_per_number() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "2",
        "--parameter-scan",
        "n",
        "1",
        "3",
        "echo {n}",
    ])
    .ok();
    let doc = sb.show_json("latest");
    assert_eq!(bench_names(&doc), ["echo 1", "echo 2", "echo 3"]);
    assert_eq!(doc["run"]["benchmarks"][2]["parameters"]["n"], "3");
}

#[test]
fn parameter_scan_with_step() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup", "0", "--runs", "2", "-P", "n", "1", "3", "--step", "2", "echo {n}",
    ])
    .ok();
    assert_eq!(bench_names(&sb.show_json("latest")), ["echo 1", "echo 3"]);
    sb.bench([
        "--warmup", "0", "--runs", "2", "-P", "t", "0", "0.2", "-D", "0.1", "echo {t}",
    ])
    .ok();
    assert_eq!(
        bench_names(&sb.show_json("latest")),
        ["echo 0.0", "echo 0.1", "echo 0.2"]
    );
}

#[test]
fn a_parameter_the_command_does_not_use_is_named_as_hyperfine_does() {
    // hyperfine 1.20: `-L branch master,dev 'echo test'` measures
    // `echo test (branch = master)` and `echo test (branch = dev)`; the
    // value may be the --prepare's (`git checkout {branch}`).
    let sb = Sandbox::new();
    let out = sb
        .bench([
            "--warmup",
            "0",
            "--runs",
            "2",
            "-L",
            "branch",
            "master,dev",
            "echo test",
        ])
        .ok();
    assert_eq!(
        bench_names(&sb.show_json("latest")),
        ["echo test (branch = master)", "echo test (branch = dev)"]
    );
    assert!(
        out.stderr
            .contains("parameter `branch` is used by no command, helper or --name"),
        "{out:?}"
    );
    let out = sb
        .bench([
            "--warmup",
            "0",
            "--runs",
            "2",
            "-P",
            "n",
            "1",
            "2",
            "--prepare",
            "echo {n}",
            "true",
        ])
        .ok();
    assert_eq!(
        bench_names(&sb.show_json("latest")),
        ["true (n = 1)", "true (n = 2)"]
    );
    assert!(!out.stderr.contains("used by no command"), "{out:?}");
}

#[test]
fn bad_parameter_scans_are_refused() {
    let sb = Sandbox::new();
    sb.bench(["-P", "n", "3", "1", "echo {n}"])
        .usage_error("greater than MAX");
    sb.bench(["-P", "n", "a", "3", "echo {n}"])
        .usage_error("MIN `a` is not a number");
    sb.bench(["-P", "n", "1", "z", "echo {n}"])
        .usage_error("MAX `z` is not a number");
    sb.bench(["-P", "n", "1", "3", "--step", "0", "echo {n}"])
        .usage_error("--step must be positive");
    sb.bench(["-P", "n", "1", "3", "--step", "x", "echo {n}"])
        .usage_error("not a number");
    sb.bench(["-P", "n", "1", "1000000", "echo {n}"])
        .usage_error("at most 100000");
    assert!(!sb.db().exists());
}

#[test]
fn bad_parameter_lists_are_refused() {
    let sb = Sandbox::new();
    sb.bench(["-L", "n", "1,,2", "echo {n}"])
        .usage_error("empty value");
    sb.bench(["-L", "a-b", "1,2", "echo {a-b}"])
        .usage_error("invalid parameter name `a-b`");
    sb.bench(["-L", "n", "1", "-L", "n", "2", "echo {n}"])
        .usage_error("parameter `n` is given twice");
    assert!(!sb.db().exists());
}

#[test]
fn step_requires_parameter_scan() {
    let sb = Sandbox::new();
    sb.bench(["--step", "2", "true"])
        .clap_error("--parameter-scan");
}

// ---------------------------------------------------------------- --name

#[test]
fn names_are_shown_and_stored() {
    let sb = Sandbox::new();
    let out = sb
        .bench([
            "--warmup", "0", "--runs", "2", "--name", "alpha", "-n", "beta", "true", "echo hi",
        ])
        .ok();
    assert!(out.stdout.contains("Benchmark 1: alpha"), "{out:?}");
    assert!(out.stdout.contains("Benchmark 2: beta"), "{out:?}");
    let doc = sb.show_json("latest");
    assert_eq!(bench_names(&doc), ["alpha", "beta"]);
    assert_eq!(doc["run"]["benchmarks"][1]["command"], "echo hi");
    assert_eq!(
        sb.runs_json()[0]["benchmarks"],
        serde_json::json!(["alpha", "beta"])
    );
}

#[test]
fn name_count_must_match_the_commands() {
    let sb = Sandbox::new();
    sb.bench(["-n", "a", "-n", "b", "true"])
        .usage_error("2 --name values for 1 commands");
    sb.bench(["-n", "a", "true", "true"])
        .usage_error("1 --name values for 2 commands");
    assert!(!sb.db().exists());
}

// ---------------------------------------------------------------- --ignore-failure

#[test]
fn failing_command_without_ignore_failure_is_an_error_with_its_stderr_tail() {
    let sb = Sandbox::new();
    let out = sb
        .bench([
            "--warmup",
            "0",
            "--runs",
            "3",
            "--shell",
            "sh",
            "for i in 1 2 3 4 5 6 7; do echo tail-line-$i >&2; done; exit 1",
        ])
        .usage_error("exited with code 1");
    assert!(out.stderr.contains("--ignore-failure"), "{out:?}");
    assert!(out.stderr.contains("tail-line-7"), "{out:?}");
    assert!(out.stderr.contains("tail-line-3"), "{out:?}");
    assert!(
        !out.stderr.contains("tail-line-2"),
        "only the tail: {out:?}"
    );
    let doc = sb.show_json("latest");
    assert_eq!(doc["run"]["status"], "failed");
    assert_eq!(samples(&doc, 0).len(), 0);
    assert_eq!(sb.runs_json()[0]["status"], "failed");
}

#[test]
fn failure_during_warmup_is_an_error_too() {
    let sb = Sandbox::new();
    sb.bench(["--warmup", "1", "--runs", "2", "false"])
        .usage_error("command `false` exited with code 1");
    assert_eq!(sb.runs_json()[0]["status"], "failed");
}

#[test]
fn ignore_failure_measures_failing_commands() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "1",
        "--runs",
        "3",
        "--ignore-failure",
        "sh -c 'exit 3'",
    ])
    .ok();
    let doc = sb.show_json("latest");
    assert_eq!(doc["run"]["status"], "complete");
    let s = samples(&doc, 0);
    assert_eq!(s.len(), 3);
    assert!(s.iter().all(|s| s["exit_code"] == 3), "{s:?}");
    assert_eq!(doc["run"]["options"]["ignore_failure"], true);
}

#[test]
fn ignore_failure_covers_signals() {
    let sb = Sandbox::new();
    sb.bench(["--warmup", "0", "--runs", "2", "-i", "sh -c 'kill -9 $$'"])
        .ok();
    let s = samples(&sb.show_json("latest"), 0);
    assert_eq!(s.len(), 2);
    assert!(
        s.iter()
            .all(|s| s["signal"] == 9 && s["exit_code"] == Value::Null),
        "{s:?}"
    );
}

#[test]
fn ignore_failure_with_codes_accepts_only_those_codes() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "2",
        "--ignore-failure=1,3",
        "sh -c 'exit 3'",
    ])
    .ok();
    let doc = sb.show_json("latest");
    assert!(samples(&doc, 0).iter().all(|s| s["exit_code"] == 3));
    assert_eq!(
        doc["run"]["options"]["ignore_failure"],
        serde_json::json!([1, 3])
    );

    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "2",
        "--ignore-failure=3",
        "sh -c 'exit 4'",
    ])
    .usage_error("exited with code 4");
    assert_eq!(sb.show_json("latest")["run"]["status"], "failed");

    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "2",
        "--ignore-failure=3",
        "sh -c 'kill -9 $$'",
    ])
    .usage_error("killed by signal 9 (SIGKILL)");
}

#[test]
fn ignore_failure_rejects_bad_codes() {
    let sb = Sandbox::new();
    sb.bench(["--ignore-failure=abc", "true"])
        .usage_error("invalid exit code `abc`");
    sb.bench(["--ignore-failure=0", "true"])
        .usage_error("invalid exit code `0`");
    sb.bench(["--ignore-failure=256", "true"])
        .usage_error("invalid exit code `256`");
    assert!(!sb.db().exists());
}

#[test]
fn ignore_failure_does_not_swallow_the_next_argument() {
    let sb = Sandbox::new();
    // `--ignore-failure 3` (no `=`): 3 is a command, which does not exist.
    sb.bench(["--runs", "2", "--ignore-failure", "3", "true"])
        .usage_error("command not found: `3`");
}

// ---------------------------------------------------------------- --timeout

#[test]
fn timeout_kills_a_slow_command_and_fails_the_run() {
    let sb = Sandbox::new();
    let sleep = own_sleep(&sb);
    let started = Instant::now();
    let out = sb
        .bench([
            "--warmup",
            "0",
            "--runs",
            "2",
            "--timeout",
            "100ms",
            &format!("{} 5", sleep.display()),
        ])
        .usage_error("timed out");
    // Not a timing threshold: without the kill this takes at least 5 s.
    assert!(started.elapsed() < Duration::from_secs(5), "{out:?}");
    assert!(out.stderr.contains("--timeout"), "hint: {out:?}");
    let doc = sb.show_json("latest");
    assert_eq!(doc["run"]["status"], "failed");
    assert_eq!(samples(&doc, 0).len(), 0);
    assert_eq!(doc["run"]["options"]["timeout_s"], 0.1);
    let left = process_running_with(&sleep.display().to_string());
    assert!(left.is_empty(), "timed-out sleep still running: {left:?}");
}

#[test]
fn timeout_kills_the_whole_process_group() {
    let sb = Sandbox::new();
    let sleep = own_sleep(&sb);
    let s = sleep.display();
    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "2",
        "--timeout",
        "200ms",
        "--shell",
        "sh",
        &format!("{s} 5 & {s} 5; wait"),
    ])
    .usage_error("timed out");
    // Give the kernel a moment to reap the killed background child.
    let mut left = process_running_with(&s.to_string());
    for _ in 0..50 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
        left = process_running_with(&s.to_string());
    }
    assert!(left.is_empty(), "children survived the timeout: {left:?}");
}

#[test]
fn timeout_applies_to_helpers_and_lets_fast_commands_pass() {
    let sb = Sandbox::new();
    sb.bench(["--warmup", "0", "--runs", "2", "--timeout", "10s", "true"])
        .ok();
    assert_eq!(samples(&sb.show_json("latest"), 0).len(), 2);
    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "2",
        "--timeout",
        "100ms",
        "--setup",
        "sleep 5",
        "true",
    ])
    .usage_error("--setup");
}

#[test]
fn timeout_rejects_invalid_values() {
    let sb = Sandbox::new();
    sb.bench(["--timeout", "soon", "true"])
        .clap_error("invalid duration");
    sb.bench(["--timeout=0", "true"])
        .clap_error("must be positive");
    sb.bench(["--timeout=-1s", "true"])
        .clap_error("invalid duration");
}

// ---------------------------------------------------------------- --output, --input

#[test]
fn output_null_is_the_default() {
    let sb = Sandbox::new();
    let out = sb
        .bench([
            "--warmup",
            "1",
            "--runs",
            "2",
            "-n",
            "quiet",
            "echo CHILD-OUTPUT",
        ])
        .ok();
    assert!(!out.stdout.contains("CHILD-OUTPUT"), "{out:?}");
    assert!(!out.stderr.contains("CHILD-OUTPUT"), "{out:?}");
    assert_eq!(options(&sb)["output"], "null");
    let out = sb
        .bench([
            "--warmup",
            "1",
            "--runs",
            "2",
            "--output",
            "null",
            "-n",
            "quiet",
            "echo CHILD-OUTPUT",
        ])
        .ok();
    assert!(!out.stdout.contains("CHILD-OUTPUT"), "{out:?}");
}

#[test]
fn output_inherit_passes_the_child_output_through() {
    let sb = Sandbox::new();
    let out = sb
        .bench([
            "--warmup",
            "1",
            "--runs",
            "2",
            "--output",
            "inherit",
            "-n",
            "loud",
            "echo CHILD-OUTPUT",
        ])
        .ok();
    let count = out.stdout.lines().filter(|l| *l == "CHILD-OUTPUT").count();
    assert_eq!(count, 3, "1 warmup + 2 runs: {out:?}");
}

#[test]
fn output_pipe_gives_the_command_a_pipe_that_is_drained() {
    let sb = Sandbox::new();
    // As in hyperfine: stdout is a pipe (not /dev/null, not a file), and a
    // command writing megabytes to it does not block on a full pipe.
    let out = sb
        .bench([
            "--warmup",
            "1",
            "--runs",
            "3",
            "--output",
            "pipe",
            "-n",
            "piped",
            "sh -c 'test -p /dev/stdout && head -c 4000000 /dev/zero'",
        ])
        .ok();
    assert!(!sb.path("pipe").exists(), "no file named pipe: {out:?}");
    assert_eq!(options(&sb)["output"], "pipe");
    // The same test fails on /dev/null: the pipe is what made it pass.
    sb.bench([
        "--runs",
        "2",
        "--output",
        "null",
        "sh -c 'test -p /dev/stdout'",
    ])
    .usage_error("exit");
    // A file really named pipe is still reachable.
    sb.bench(["--runs", "2", "--output", "./pipe", "echo X"])
        .ok();
    assert_eq!(sb.lines("pipe"), ["X"; 3]);
}

#[test]
fn output_file_collects_every_iteration_including_warmups() {
    let sb = Sandbox::new();
    sb.write("out.txt", "stale contents\n");
    let out = sb
        .bench([
            "--warmup",
            "1",
            "--runs",
            "3",
            "--output",
            "out.txt",
            "-n",
            "to-file",
            "echo CHILD-OUTPUT",
        ])
        .ok();
    assert_eq!(sb.lines("out.txt"), ["CHILD-OUTPUT"; 4]);
    assert!(!out.stdout.contains("CHILD-OUTPUT"), "{out:?}");
}

#[test]
fn output_rejects_unwritable_and_empty_targets() {
    let sb = Sandbox::new();
    sb.bench([
        "--output",
        "no/such/dir/out.txt",
        "--shell",
        "sh",
        "echo ran >> marker",
    ])
    .usage_error("--output");
    sb.bench(["--output", "", "--shell", "sh", "echo ran >> marker"])
        .usage_error("--output is empty");
    assert!(!sb.path("marker").exists());
    assert!(!sb.db().exists());
}

#[test]
fn input_file_feeds_every_iteration() {
    let sb = Sandbox::new();
    sb.write("in.txt", "line1\nline2\n");
    sb.bench([
        "--warmup", "1", "--runs", "2", "--input", "in.txt", "--output", "out.txt", "cat",
    ])
    .ok();
    assert_eq!(
        sb.lines("out.txt"),
        ["line1", "line2", "line1", "line2", "line1", "line2"]
    );
    assert!(
        options(&sb)["input"]
            .as_str()
            .is_some_and(|p| p.ends_with("in.txt"))
    );
}

#[test]
fn stdin_defaults_to_dev_null_not_perfsleuths_stdin() {
    let sb = Sandbox::new();
    let out = sb
        .cmd()
        .args(["run", "--store", &sb.store()])
        .args(["--warmup", "0", "--runs", "2", "--output", "out.txt", "cat"])
        .write_stdin("PERFSLEUTH-STDIN\n")
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert_eq!(sb.lines("out.txt"), Vec::<String>::new());
}

#[test]
fn input_must_exist() {
    let sb = Sandbox::new();
    sb.bench([
        "--input",
        "missing.txt",
        "--shell",
        "sh",
        "echo ran >> marker",
    ])
    .usage_error("cannot read --input file missing.txt");
    assert!(!sb.path("marker").exists());
    assert!(!sb.db().exists());
}

// ---------------------------------------------------------------- --shell

#[test]
fn shell_runs_pipes() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "2",
        "--shell",
        "sh",
        "--output",
        "out.txt",
        "printf 'a\\nb\\nc\\n' | wc -l",
    ])
    .ok();
    let lines: Vec<String> = sb
        .lines("out.txt")
        .iter()
        .map(|l| l.trim().to_string())
        .collect();
    assert_eq!(lines, ["3", "3"]);
    let doc = sb.show_json("latest");
    assert_eq!(
        doc["run"]["benchmarks"][0]["argv"],
        serde_json::json!(["sh", "-c", "printf 'a\\nb\\nc\\n' | wc -l"])
    );
    assert_eq!(doc["run"]["options"]["shell"], "sh");
}

#[test]
fn pipe_without_shell_is_refused_mentioning_shell() {
    let sb = Sandbox::new();
    sb.bench(["--runs", "2", "echo a | cat"])
        .usage_error("--shell");
    sb.bench(["--runs", "2", "echo a > marker"])
        .usage_error("shell syntax");
    assert!(!sb.path("marker").exists());
    assert!(!sb.db().exists());
}

#[test]
fn quoted_shell_characters_need_no_shell() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "2",
        "--output",
        "out.txt",
        "echo 'a | b'",
    ])
    .ok();
    assert_eq!(sb.lines("out.txt"), ["a | b", "a | b"]);
}

#[test]
fn nonexistent_shell_is_refused() {
    let sb = Sandbox::new();
    sb.bench(["--runs", "2", "--shell", "no-such-shell-xyz", "true"])
        .usage_error("no-such-shell-xyz");
    assert!(!sb.db().exists());
}

// ---------------------------------------------------------------- interleaving

#[test]
fn interleaving_alternates_commands_by_default() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "1",
        "--runs",
        "3",
        "--shell",
        "sh",
        "echo a >> shared",
        "echo b >> shared",
    ])
    .ok();
    // The warmups, then sweeps that alternate direction (A B B A A B), so
    // each command runs first in half the adjacent pairs.
    assert_eq!(sb.lines("shared"), ["a", "b", "a", "b", "b", "a", "a", "b"]);
    assert_eq!(options(&sb)["interleave"], true);
}

#[test]
fn no_interleave_runs_each_command_back_to_back() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "1",
        "--runs",
        "3",
        "--no-interleave",
        "--shell",
        "sh",
        "echo a >> shared",
        "echo b >> shared",
    ])
    .ok();
    assert_eq!(sb.lines("shared"), ["a", "a", "a", "a", "b", "b", "b", "b"]);
    let doc = sb.show_json("latest");
    assert_eq!(doc["run"]["options"]["interleave"], false);
    assert_eq!(samples(&doc, 0).len(), 3);
    assert_eq!(samples(&doc, 1).len(), 3);
}

// ---------------------------------------------------------------- --reference

fn comparison_line(stdout: &str) -> String {
    stdout
        .lines()
        .find(|l| l.starts_with("Comparison with"))
        .unwrap_or_default()
        .to_string()
}

#[test]
fn reference_defaults_to_the_first_command() {
    let sb = Sandbox::new();
    let out = sb
        .bench([
            "--warmup", "0", "--runs", "2", "-n", "first", "-n", "second", "true", "echo x",
        ])
        .ok();
    assert!(
        comparison_line(&out.stdout).starts_with("Comparison with `first`"),
        "{out:?}"
    );
}

#[test]
fn reference_by_index_and_by_name() {
    let sb = Sandbox::new();
    let out = sb
        .bench([
            "--warmup",
            "0",
            "--runs",
            "2",
            "-n",
            "first",
            "-n",
            "second",
            "--reference",
            "2",
            "true",
            "echo x",
        ])
        .ok();
    assert!(
        comparison_line(&out.stdout).starts_with("Comparison with `second`"),
        "{out:?}"
    );
    let out = sb
        .bench([
            "--warmup",
            "0",
            "--runs",
            "2",
            "-n",
            "first",
            "-n",
            "second",
            "--reference",
            "second",
            "--export-json",
            "e.json",
            "true",
            "echo x",
        ])
        .ok();
    assert!(
        comparison_line(&out.stdout).starts_with("Comparison with `second`"),
        "{out:?}"
    );
    let doc = crate::common::parse_json(&std::fs::read_to_string(sb.path("e.json")).unwrap());
    assert_eq!(doc["summary"]["reference"], 1, "0-based index of `second`");
}

#[test]
fn bad_reference_is_refused_before_running() {
    let sb = Sandbox::new();
    let cmds = ["--shell", "sh", "echo a >> marker", "echo b >> marker"];
    sb.bench(["--reference", "3"].iter().chain(&cmds))
        .usage_error("--reference 3 is out of range");
    sb.bench(["--reference", "0"].iter().chain(&cmds))
        .usage_error("out of range");
    sb.bench(["--reference", "nobody"].iter().chain(&cmds))
        .usage_error("`nobody` matches no benchmark");
    assert!(!sb.path("marker").exists());
    assert!(!sb.db().exists());
}

// ---------------------------------------------------------------- --color and piped output

#[test]
fn piped_output_has_no_escapes_and_no_progress_bar() {
    let sb = Sandbox::new();
    let out = sb
        .bench(["--warmup", "1", "--runs", "3", "true", "echo x"])
        .ok();
    assert!(!out.stdout.contains('\x1b'), "{out:?}");
    assert!(!out.stderr.contains('\x1b'), "{out:?}");
    assert!(
        !out.stderr.contains('\r'),
        "progress line on a pipe: {out:?}"
    );
    assert!(!out.stderr.contains("ETA"), "{out:?}");
    assert!(out.stdout.contains("Benchmark 1: true"), "{out:?}");
}

#[test]
fn piped_output_has_no_escapes_even_without_no_color() {
    let sb = Sandbox::new();
    let out: crate::common::Out = sb
        .cmd()
        .env_remove("NO_COLOR")
        .args(["run", "--no-store", "--warmup", "0", "--runs", "2", "true"])
        .output()
        .unwrap()
        .into();
    let out = out.ok();
    assert!(
        !out.stdout.contains('\x1b') && !out.stderr.contains('\x1b'),
        "{out:?}"
    );
}

#[test]
fn color_always_and_never() {
    let sb = Sandbox::new();
    let out = sb
        .bench(["--warmup", "0", "--runs", "3", "--color", "always", "true"])
        .ok();
    assert!(out.stdout.contains("\x1b["), "--color always: {out:?}");
    let out = sb
        .bench(["--warmup", "0", "--runs", "3", "--color", "never", "true"])
        .ok();
    assert!(!out.stdout.contains('\x1b'), "{out:?}");
    sb.bench(["--color", "sometimes", "true"])
        .clap_error("--color");
}

#[test]
fn summary_and_store_note_go_to_the_right_streams() {
    let sb = Sandbox::new();
    let out = sb.bench(["--warmup", "0", "--runs", "2", "true"]).ok();
    assert!(out.stdout.contains("Benchmark 1: true"), "{out:?}");
    assert!(out.stdout.contains("2 runs"), "{out:?}");
    assert!(
        out.stderr.contains("Stored as run 1 in"),
        "store note on stderr: {out:?}"
    );
    assert!(!out.stdout.contains("Stored as"), "{out:?}");
}

#[test]
fn parameters_are_substituted_in_helpers_too() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "2",
        "--no-interleave",
        "--shell",
        "sh",
        "-L",
        "v",
        "a,b",
        "--setup",
        "echo setup-{v} >> log",
        "--prepare",
        "echo prep-{v} >> log",
        "--cleanup",
        "echo clean-{v} >> log",
        "echo run-{v} >> log",
    ])
    .ok();
    assert_eq!(
        sb.lines("log"),
        [
            "setup-a", "prep-a", "run-a", "prep-a", "run-a", "clean-a", "setup-b", "prep-b",
            "run-b", "prep-b", "run-b", "clean-b"
        ]
    );
}

#[test]
fn a_single_run_is_summarised() {
    let sb = Sandbox::new();
    let out = sb.bench(["--warmup", "0", "--runs", "1", "true"]).ok();
    assert!(out.stdout.contains("Benchmark 1: true"), "{out:?}");
    assert_eq!(samples(&sb.show_json("latest"), 0).len(), 1);
}

#[test]
fn rounds_split_the_runs_and_every_sample_records_its_round() {
    let sb = Sandbox::new();
    sb.bench(["--rounds", "0", "true"])
        .usage_error("--rounds 0 measures nothing");
    sb.bench([
        "--rounds", "3", "--runs", "6", "--warmup", "0", "-n", "a", "-n", "b", "true", "true",
    ])
    .ok();
    let doc = sb.show_json("latest");
    for bench in doc["run"]["benchmarks"].as_array().expect("benchmarks") {
        let rounds: Vec<u64> = bench["samples"]
            .as_array()
            .expect("samples")
            .iter()
            .map(|s| s["round"].as_u64().unwrap_or(0))
            .collect();
        assert_eq!(rounds, [0, 0, 1, 1, 2, 2], "{bench}");
    }
    assert_eq!(doc["run"]["options"]["rounds"], 3);
}

#[test]
fn a_run_is_five_rounds_that_spend_the_budget_unless_the_count_is_fixed() {
    let sb = Sandbox::new();
    sb.bench(["--warmup", "0", "--time-budget", "200ms", "-n", "t", "true"])
        .ok();
    let opts = options(&sb);
    assert_eq!(opts["rounds"], 5);
    // No precision stop: each round spends its 40 ms, far more than the
    // 2 runs a round --min-runs asks for.
    assert_eq!(opts["precision"], 0.0);
    let doc = sb.show_json("latest");
    let rounds: std::collections::BTreeSet<u64> = samples(&doc, 0)
        .iter()
        .map(|s| s["round"].as_u64().unwrap_or(0))
        .collect();
    assert_eq!(rounds.into_iter().collect::<Vec<_>>(), [0, 1, 2, 3, 4]);
    assert!(samples(&doc, 0).len() > 10, "the budget was spent");

    // --runs N is exactly N runs, in one round; --precision keeps its meaning.
    sb.bench(["--warmup", "0", "--runs", "7", "-n", "t", "true"])
        .ok();
    let opts = options(&sb);
    assert_eq!(opts["rounds"], 1);
    assert_eq!(samples(&sb.show_json("latest"), 0).len(), 7);
    sb.bench(["--warmup", "0", "--rounds", "1", "-n", "t", "true"])
        .ok();
    assert_eq!(options(&sb)["precision"], 0.01);
}

#[test]
fn without_a_command_run_measures_the_bench_list_of_perfsleuth_toml() {
    let sb = Sandbox::new();
    sb.write(
        "perfsleuth.toml",
        "[[bench]]\nname = \"short {n}\"\ncommand = \"sleep 0.00{n}\"\n\n[[bench]]\ncommand = \"true\"\n",
    );
    sb.bench(["--runs", "2", "--warmup", "0", "-L", "n", "1,2"])
        .ok();
    let doc = sb.show_json("latest");
    let names: Vec<&str> = doc["run"]["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        ["short 1", "short 2", "true (n = 1)", "true (n = 2)"],
        "{doc}"
    );
}

#[test]
fn the_progress_line_counts_up_over_all_rounds_and_its_eta_holds() {
    // A known workload: 30 runs of a 50 ms sleep in three rounds. --style
    // full draws the progress line on a pipe too.
    let sb = Sandbox::new();
    let out = sb
        .bench([
            "--style",
            "full",
            "--runs",
            "30",
            "--rounds",
            "3",
            "--warmup",
            "0",
            "sleep 0.05",
        ])
        .ok();
    // "Measuring 1/1 commands ████░░ 7 runs · 0.4 s elapsed · ETA 1.2 s"
    let lines: Vec<(u64, f64, f64)> = out
        .stderr
        .split("\r\x1b[2K")
        .filter_map(|l| {
            let runs = l.split(" run").next()?.rsplit(' ').next()?.parse().ok()?;
            let elapsed = l
                .split(" s elapsed")
                .next()?
                .rsplit(' ')
                .next()?
                .parse()
                .ok()?;
            let eta = l.split("ETA ").nth(1)?.split(' ').next()?.parse().ok()?;
            Some((runs, elapsed, eta))
        })
        .collect();
    assert!(lines.len() >= 5, "{out:?}");
    // The runs and the elapsed time only grow, across the rounds.
    for w in lines.windows(2) {
        assert!(w[1].0 >= w[0].0 && w[1].1 >= w[0].1, "{lines:?}");
    }
    // The whole measurement ended at about the last line's time (its ETA ~0);
    // every ETA with at least 0.4 s left was within 20 % of what was left.
    let (_, end_elapsed, end_eta) = *lines.last().unwrap();
    let end = end_elapsed + end_eta;
    for &(runs, elapsed, eta) in lines.iter().filter(|l| l.0 >= 3) {
        let left = end - elapsed;
        if left >= 0.4 {
            assert!(
                (eta - left).abs() <= 0.2 * left + 0.1,
                "after {runs} runs at {elapsed} s: ETA {eta} s, {left:.2} s were left: {lines:?}"
            );
        }
    }
}

#[test]
fn bench_list_commands_run_from_the_config_s_directory_wherever_run_starts() {
    let sb = Sandbox::new();
    std::process::Command::new("git")
        .args(["init", "-q"])
        .current_dir(sb.path(""))
        .status()
        .unwrap();
    sb.write(
        "perfsleuth.toml",
        "[[bench]]\nname = \"here\"\ncommand = \"./where.sh\"\n",
    );
    let script = sb.write("where.sh", "#!/bin/sh\npwd > ran-in.txt\n");
    std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    std::fs::create_dir(sb.path("sub")).unwrap();
    let out: crate::common::Out = sb
        .cmd()
        .current_dir(sb.path("sub"))
        .args([
            "run",
            "--store",
            &sb.store(),
            "--runs",
            "2",
            "--warmup",
            "0",
        ])
        .output()
        .unwrap()
        .into();
    let out = out.ok();
    let ran_in = std::fs::read_to_string(sb.path("ran-in.txt")).unwrap_or_default();
    let top = std::fs::canonicalize(sb.path("")).unwrap();
    assert_eq!(ran_in.trim(), top.display().to_string(), "{out:?}");
    // The stored command stays as written, so it pairs across checkouts.
    assert_eq!(
        sb.show_json("latest")["run"]["benchmarks"][0]["command"],
        "./where.sh"
    );
}

/// An explicit `sh -c "…"` is not refused for the `$` in its script: that
/// shell expands it (issue 37; hyperfine -N runs it so too).
#[test]
fn an_explicit_sh_c_script_keeps_its_dollar_for_the_shell() {
    let sb = Sandbox::new();
    sb.run([
        "run",
        "--no-store",
        "--runs",
        "2",
        "sh -c \"echo $HOME > home.txt\"",
    ])
    .ok();
    assert_eq!(
        sb.lines("home.txt"),
        [sb.path("home").display().to_string()]
    );
}
