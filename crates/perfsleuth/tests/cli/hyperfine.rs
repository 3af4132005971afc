//! hyperfine's option names, as hyperfine users type them, and the
//! hyperfine-shaped export read by hyperfine's own scripts.

use crate::common::Sandbox;
use std::path::PathBuf;
use std::process::Command;

fn options(sb: &Sandbox) -> serde_json::Value {
    sb.show_json("latest")["run"]["options"].clone()
}

#[test]
fn no_shell_spellings_and_shell_note() {
    let sb = Sandbox::new();
    // -N and --shell=none: no shell, so shell syntax is refused as without one.
    for flag in ["-N", "--shell=none"] {
        // The variable is quoted whole, as the user wrote it.
        sb.bench(["--runs", "2", flag, "echo $HOME"])
            .usage_error("shell syntax `$HOME`");
    }
    sb.bench(["--runs", "2", "-N", "--shell", "sh", "true"])
        .clap_error("cannot be used with");
    // With a shell, the summary says its start-up is in the times.
    let out = sb.bench(["--runs", "2", "--shell", "sh", "true"]).ok();
    assert!(
        out.stderr.contains("ran through `sh -c`") && out.stderr.contains("not subtracted"),
        "{out:?}"
    );
    // The shell may carry its own arguments, as hyperfine's (`sh -e`: the
    // first failing command ends the line, so `echo` never runs).
    let line = "false; echo AFTER";
    let out = sb
        .bench(["--runs=1", "--show-output", "--shell=sh", line])
        .ok();
    assert!(out.stdout.contains("AFTER"), "{out:?}");
    let out = sb.bench(["--runs=1", "--show-output", "--shell=sh -e", line]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(!out.stdout.contains("AFTER"), "{out:?}");
    sb.bench(["--runs=1", "--shell=sh 'unclosed", "true"])
        .usage_error("cannot split --shell");
}

#[test]
fn show_output_conclude_and_aliases() {
    let sb = Sandbox::new();
    let out = sb
        .bench([
            "--runs",
            "2",
            "--warmup",
            "1",
            "--show-output",
            "echo CHILD-OUT",
        ])
        .ok();
    let shown = out.stdout.lines().filter(|l| *l == "CHILD-OUT").count();
    assert_eq!(shown, 3, "1 warmup + 2 runs: {out:?}");
    sb.bench(["--runs", "2", "--show-output", "--output", "null", "true"])
        .clap_error("cannot be used with");

    // --conclude runs after every run, warmups included, untimed.
    let log = sb.path("concluded.txt");
    let conclude = format!("sh -c 'echo x >> {}'", log.display());
    sb.bench([
        "--runs",
        "3",
        "--warmup",
        "1",
        "--conclude",
        &conclude,
        "true",
    ])
    .ok();
    assert_eq!(sb.lines("concluded.txt").len(), 4);
    assert_eq!(options(&sb)["conclude"][0], conclude.as_str());
    // -C is hyperfine's short form; a failing one stops the run.
    sb.bench(["--runs", "2", "-C", "false", "true"])
        .usage_error("--conclude");

    // hyperfine's long names for -n, -D and the time budget.
    sb.bench([
        "--runs",
        "2",
        "--min-benchmarking-time",
        "0.25",
        "--command-name",
        "t{n}",
        "-P",
        "n",
        "1",
        "3",
        "--parameter-step-size",
        "2",
        "sleep 0.00{n}",
    ])
    .ok();
    let opts = options(&sb);
    assert_eq!(opts["time_budget_s"], 0.25);
    assert_eq!(opts["names"][0], "t{n}");
    assert_eq!(
        crate::common::bench_names(&sb.show_json("latest")),
        ["t1", "t3"]
    );
}

#[test]
fn time_unit_sort_and_table_exports() {
    let sb = Sandbox::new();
    let args = [
        "--runs",
        "3",
        "--warmup",
        "0",
        "-u",
        "microsecond",
        "--sort",
        "mean-time",
        "--export-asciidoc",
        "t.adoc",
        "--export-orgmode",
        "t.org",
        "--export-markdown",
        "t.md",
        "-n",
        "slow",
        "-n",
        "fast",
        "sleep 0.03",
        "sleep 0.001",
    ];
    let out = sb.bench(args).ok();
    // Fastest first, every time in µs.
    let fast = out.stdout.find("fast").expect("fast shown");
    let slow = out.stdout.find("slow").expect("slow shown");
    assert!(fast < slow, "{out:?}");
    assert!(out.stdout.contains(" µs"), "{out:?}");
    assert!(!out.stdout.contains(" ms "), "{out:?}");
    let md = std::fs::read_to_string(sb.path("t.md")).unwrap();
    assert!(md.starts_with("| Command | Median [µs] |"), "{md}");
    let rows: Vec<&str> = md.lines().skip(2).collect();
    assert!(
        rows[0].contains("`fast`") && rows[1].contains("`slow`"),
        "{md}"
    );
    let adoc = std::fs::read_to_string(sb.path("t.adoc")).unwrap();
    assert!(
        adoc.starts_with("[cols=") && adoc.trim_end().ends_with("|==="),
        "{adoc}"
    );
    assert!(adoc.find("`fast`") < adoc.find("`slow`"), "{adoc}");
    let org = std::fs::read_to_string(sb.path("t.org")).unwrap();
    assert!(org.contains("| =fast= |") && org.contains("|--+"), "{org}");
    // --sort command keeps the order given.
    let out = sb
        .bench([
            "--runs",
            "2",
            "--sort",
            "command",
            "-n",
            "slow",
            "-n",
            "fast",
            "sleep 0.02",
            "true",
        ])
        .ok();
    assert!(out.stdout.find("slow") < out.stdout.find("fast"), "{out:?}");
}

#[test]
fn styles() {
    let sb = Sandbox::new();
    // none: nothing on stdout, the run still stored.
    let out = sb.bench(["--runs", "2", "--style", "none", "true"]).ok();
    assert!(out.stdout.is_empty(), "{out:?}");
    assert_eq!(sb.runs_json().len(), 1);
    // full: colour and the progress line even on a pipe.
    let out = sb
        .bench(["--runs", "30", "--style", "full", "sleep 0.01"])
        .ok();
    assert!(out.stdout.contains("\x1b["), "colour: {out:?}");
    assert!(out.stderr.contains("\r\x1b[2K"), "progress: {out:?}");
    // full with --show-output: the commands write to the terminal, so no
    // progress line is drawn over them.
    let out = sb
        .bench([
            "--runs",
            "30",
            "--style",
            "full",
            "--show-output",
            "sleep 0.01",
        ])
        .ok();
    assert!(!out.stderr.contains("\r\x1b[2K"), "{out:?}");
    // basic and nocolor: no colour.
    for style in ["basic", "nocolor"] {
        let out = sb.bench(["--runs", "2", "--style", style, "true"]).ok();
        assert!(!out.stdout.contains("\x1b["), "{style}: {out:?}");
    }
    sb.bench([
        "--runs", "2", "--style", "basic", "--color", "always", "true",
    ])
    .clap_error("cannot be used with");
}

#[test]
fn an_unquoted_command_is_caught_with_the_quoting() {
    let sb = Sandbox::new();
    let out = sb
        .bench(["--runs", "2", "sleep", "0.1"])
        .usage_error("`0.1` is not a program");
    assert!(out.stderr.contains("perfsleuth run 'sleep 0.1'"), "{out:?}");
    // Two real programs are two commands.
    sb.bench(["--runs", "2", "true", "false", "-i"]).ok();
    // The refused one stored nothing.
    assert_eq!(sb.runs_json().len(), 1);
}

/// hyperfine's scripts directory, or a skip when it is not there.
fn hyperfine_scripts() -> Option<PathBuf> {
    let dir = std::env::var_os("PERFSLEUTH_HYPERFINE_SCRIPTS").map(PathBuf::from);
    let have_deps = Command::new("python3")
        .args(["-c", "import numpy, scipy, matplotlib"])
        .status()
        .is_ok_and(|s| s.success());
    match dir {
        Some(d) if d.join("welch_ttest.py").is_file() && have_deps => Some(d),
        _ => {
            perfsleuth_testkit::skip(
                "hyperfine_scripts",
                "hyperfine's scripts are not fetched (run tests/hyperfine-scripts.sh and set PERFSLEUTH_HYPERFINE_SCRIPTS)",
            );
            None
        }
    }
}

#[test]
fn hyperfine_scripts_read_the_hyperfine_export() {
    let sb = Sandbox::new();
    sb.bench([
        "--runs",
        "12",
        "--export-hyperfine",
        "h.json",
        "-L",
        "t",
        "0.001,0.004",
        "sleep {t}",
    ])
    .ok();
    let doc = crate::common::parse_json(&std::fs::read_to_string(sb.path("h.json")).unwrap());
    let results = doc["results"].as_array().expect("results");
    assert_eq!(results.len(), 2);
    for (r, t) in results.iter().zip(["0.001", "0.004"]) {
        assert_eq!(r["command"], format!("sleep {t}"));
        assert_eq!(r["parameters"]["t"], t);
        assert_eq!(r["times"].as_array().unwrap().len(), 12);
        assert_eq!(r["exit_codes"].as_array().unwrap().len(), 12);
        let mean = r["mean"].as_f64().unwrap();
        // Seconds, as hyperfine writes them.
        assert!(mean > 0.0005 && mean < 1.0, "{r}");
        for key in [
            "stddev",
            "median",
            "user",
            "system",
            "min",
            "max",
            "memory_usage_byte",
        ] {
            assert!(!r[key].is_null(), "{key}: {r}");
        }
    }
    let Some(scripts) = hyperfine_scripts() else {
        return;
    };
    let run = |script: &str, extra: &[&str]| {
        let out = Command::new("python3")
            .arg(scripts.join(script))
            .arg(sb.path("h.json"))
            .args(extra)
            .env("MPLBACKEND", "Agg")
            .output()
            .expect("python3");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "{script}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        text
    };
    let welch = run("welch_ttest.py", &[]);
    assert!(
        welch.contains("Command 1: sleep 0.001") && welch.contains("p = "),
        "{welch}"
    );
    let stats = run("advanced_statistics.py", &[]);
    assert!(
        stats.contains("sleep 0.004") && stats.contains("median"),
        "{stats}"
    );
    let png = sb.path("whisker.png");
    run("plot_whisker.py", &["-o", png.to_str().unwrap()]);
    let bytes = std::fs::read(&png).expect("whisker plot written");
    assert!(bytes.starts_with(b"\x89PNG"), "not a PNG");
    let png = sb.path("hist.png");
    run("plot_histogram.py", &["-o", png.to_str().unwrap()]);
    assert!(std::fs::read(&png).unwrap().starts_with(b"\x89PNG"));
}

#[test]
fn counts_read_as_counts_and_the_run_records_its_own_noise() {
    let sb = Sandbox::new();
    let out = sb
        .bench(["--runs", "5", "--counters", "software", "sleep 0.02"])
        .ok();
    let counters = out
        .stdout
        .lines()
        .find(|l| l.contains("Counters (median):"));
    match counters {
        Some(line) => {
            // Whole numbers of events, and a singular for one. The task
            // clock before the first `·` is a duration, fractional by right
            // ("821.5 µs"), so only the counts after it are checked.
            let counts = line.split_once('·').map_or(line, |(_, rest)| rest);
            assert!(
                !counts.contains(".0 page faults") && !counts.contains(".5 "),
                "{line}"
            );
            assert!(
                !line.contains(" 1 context switches") && !line.contains(" 1 CPU migrations"),
                "{line}"
            );
        }
        None => perfsleuth_testkit::skip("perf_software", format!("no counters line: {out:?}")),
    }
    // The warning after a run judges the run: its noise is recorded with it.
    let env = &sb.show_json("latest")["run"]["environment"];
    let facts = env.get("facts").unwrap_or(env);
    for key in ["noise.run.seconds", "noise.run.steal_pct"] {
        assert!(!facts[key].is_null(), "{key} not recorded: {facts}");
    }
}

#[test]
fn hyperfine_1_20_reference_command_and_ignore_failure_spelling() {
    let sb = Sandbox::new();
    // --reference CMD: measured first, under --reference-name, and the
    // others are compared with it.
    let out = sb
        .bench([
            "--warmup",
            "0",
            "--runs",
            "3",
            "--reference",
            "sleep 0.001",
            "--reference-name",
            "ref",
            "sleep 0.002",
        ])
        .ok();
    assert!(out.stdout.contains("Comparison with `ref`:"), "{out:?}");
    assert_eq!(
        crate::common::bench_names(&sb.show_json("latest")),
        ["ref", "sleep 0.002"]
    );
    // With a scan, the reference runs once and the scan is compared with it.
    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "2",
        "--reference",
        "true",
        "-P",
        "n",
        "1",
        "3",
        "echo {n}",
    ])
    .ok();
    assert_eq!(
        crate::common::bench_names(&sb.show_json("latest")),
        ["true", "echo 1", "echo 2", "echo 3"]
    );
    // A name for a benchmark that is already one of them is refused.
    sb.bench([
        "--runs",
        "2",
        "--reference",
        "1",
        "--reference-name",
        "x",
        "true",
    ])
    .usage_error("--reference-name names a --reference command");
    // hyperfine 1.20's `all-non-zero` is every non-zero exit.
    sb.bench(["--runs", "2", "--ignore-failure=all-non-zero", "false"])
        .ok();
}

#[test]
fn a_command_that_fails_at_its_first_run_leaves_the_others_measured_and_exported() {
    // hyperfine's exports_intermediate_results: `--runs=1 true false`. Run
    // interleaved, `false` failed in the first warmup round, before any
    // timed run: the export was not written at all.
    let sb = Sandbox::new();
    let md = sb.path("md.md");
    let out = sb.bench([
        "--runs=1",
        "--export-markdown",
        md.to_str().unwrap(),
        "true",
        "false",
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("the results so far were written"),
        "{out:?}"
    );
    let text = std::fs::read_to_string(&md).expect("the export exists");
    assert!(text.contains("failed: summary of the"), "{text}");
    assert!(text.contains("| `true` |"), "{text}");
    // Three commands, the middle one failing: the others are measured to
    // the end, shown, stored and exported; the failure ends the run.
    let json = sb.path("all.json");
    let out = sb.bench([
        "--runs",
        "4",
        "--export-json",
        json.to_str().unwrap(),
        "true",
        "false",
        "sleep 0.001",
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("command `false` exited with code 1"),
        "{out:?}"
    );
    assert!(out.stdout.contains("Benchmark 3: sleep 0.001"), "{out:?}");
    let doc = crate::common::parse_json(&std::fs::read_to_string(&json).unwrap());
    let runs: Vec<usize> = doc["run"]["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["samples"].as_array().unwrap().len())
        .collect();
    assert_eq!(runs, [4, 0, 4], "{doc}");
    let stored = sb.show_json("latest");
    assert_eq!(stored["run"]["status"], "failed", "{stored}");
}

/// Samples per benchmark of the latest stored run.
fn runs_of(sb: &Sandbox) -> Vec<usize> {
    sb.show_json("latest")["run"]["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["samples"].as_array().unwrap().len())
        .collect()
}

/// hyperfine 1.20's `tests/integration_tests.rs` (Unix), translated test by
/// test into perfsleuth's terms: the same command line where perfsleuth
/// takes it, the same promise checked. Where hyperfine's test relies on its
/// `--debug-mode` (fake timings: `sleep 1000.0` answered at once), the
/// translation runs real short commands and checks the same promise
/// (units, comparison wording, run counts by the same rules: at least
/// `--min-runs` 10, then the 3 s budget, helpers' time counted in it).
/// Exit codes are perfsleuth's: 2 for a bad command line or a failed
/// command (hyperfine: 1 for the latter).
#[test]
fn hyperfines_integration_tests_translated() {
    let sb = Sandbox::new();
    let no = "some-nonexisting-program-b5d9574198b7e4b12a71fa4747c0a577";
    // runs_successfully, one_run_is_supported
    sb.bench(["--runs=2", "echo dummy benchmark"]).ok();
    sb.bench(["--runs=1", "echo dummy benchmark"]).ok();
    // fails_with_zero_runs
    for option in ["--runs", "--min-runs", "--max-runs"] {
        sb.bench([option, "0", "echo dummy benchmark"])
            .clap_error(&format!("invalid value '0' for '{option}"));
    }
    // min_runs_of_one_still_performs_one_run: a run longer than the budget
    // (hyperfine: `sleep 4` and 3 s), once a round (5 by default; --min-runs
    // was refused below 2)
    sb.bench([
        "--min-runs=1",
        "--warmup=0",
        "--time-budget=0.05s",
        "--rounds=1",
        "sleep 0.1",
    ])
    .ok();
    assert_eq!(runs_of(&sb), [1]);
    sb.bench([
        "--min-runs=1",
        "--warmup=0",
        "--time-budget=0.05s",
        "sleep 0.1",
    ])
    .ok();
    assert_eq!(runs_of(&sb), [5]);
    // can_run_commands_without_a_shell (perfsleuth's default)
    let out = sb
        .bench([
            "--runs=1",
            "--show-output",
            "--shell=none",
            "echo 'hello world' argument2",
        ])
        .ok();
    assert!(out.stdout.contains("hello world argument2"), "{out:?}");
    // fails_with_wrong_number_of_command_name_arguments
    sb.bench(["--command-name=a", "--command-name=b", "echo a"])
        .usage_error("2 --name values for 1 commands");
    // fails_with_wrong_number_of_prepare_options / _conclude_options
    for helper in ["prepare", "conclude"] {
        let (a, b, r) = (
            format!("--{helper}=echo a"),
            format!("--{helper}=echo b"),
            format!("--{helper}=echo ref"),
        );
        sb.bench(["--runs=1", &a, &b, "echo a", "echo b"]).ok();
        sb.bench([
            "--runs=1",
            &r,
            &a,
            &b,
            "--reference=echo ref",
            "echo a",
            "echo b",
        ])
        .ok();
        sb.bench(["--runs=1", &a, &b, "echo a", "echo b", "echo c"])
            .usage_error(&format!("2 --{helper} values for 3 commands"));
        sb.bench([
            "--runs=1",
            &a,
            &b,
            "--reference=echo ref",
            "echo a",
            "echo b",
        ])
        .usage_error(&format!(
            "2 --{helper} values for 2 commands and the --reference command"
        ));
    }
    // fails_with_duplicate_parameter_names
    sb.bench(["-L", "x", "1,2,3", "-L", "x", "a,b,c", "echo test"])
        .usage_error("parameter `x` is given twice");
    // fails_for_unknown_command (through a shell), _without_shell
    let out = sb.bench(["--runs=1", "--shell", "sh", no]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("exited with code 127"), "{out:?}");
    sb.bench(["--shell=none", "--runs=1", no])
        .usage_error("not found");
    // fails_for_failing_command_without_shell
    let out = sb.bench(["--shell=none", "--runs=1", "false"]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("command `false` exited with code 1"),
        "{out:?}"
    );
    // fails_for_unknown_{setup,cleanup,prepare,conclude}_command
    for helper in ["setup", "cleanup", "prepare", "conclude"] {
        let out = sb.bench([
            "--runs=1",
            "--shell",
            "sh",
            &format!("--{helper}={no}"),
            "echo test",
        ]);
        assert_eq!(out.code, 2, "{helper}: {out:?}");
        assert!(
            out.stderr.contains(&format!(
                "--{helper} command of `echo test` exited with code 127"
            )),
            "{helper}: {out:?}"
        );
    }
    // can_run_failing_commands_with_ignore_failure_option
    assert_eq!(sb.bench(["--runs=1", "false"]).code, 2);
    sb.bench(["--runs=1", "--ignore-failure", "false"]).ok();
    // can_ignore_specific_exit_codes, can_ignore_multiple_exit_codes,
    // ignore_failure_with_all_non_zero (`exit N` is a shell's builtin)
    let exit = |codes: &str, code: u32| {
        sb.bench([
            "--runs=1",
            "--shell",
            "sh",
            &format!("--ignore-failure={codes}"),
            &format!("exit {code}"),
        ])
    };
    exit("1", 1).ok();
    assert!(exit("1", 2).stderr.contains("exited with code 2"));
    for code in 1..=3 {
        exit("1,2,3", code).ok();
    }
    assert!(exit("1,2,3", 4).stderr.contains("exited with code 4"));
    exit("all-non-zero", 5).ok();
    // shows_output_of_benchmarked_command (perfsleuth warms up once by
    // default; hyperfine does not)
    let out = sb
        .bench([
            "--runs=2",
            "--warmup=0",
            "--command-name=dummy",
            "--show-output",
            "echo 4fd47015",
        ])
        .ok();
    assert_eq!(out.stdout.matches("4fd47015").count(), 2, "{out:?}");
    // runs_commands_using_user_defined_shell: a shell with its own arguments
    let out = sb
        .bench([
            "--runs=1",
            "--warmup=0",
            "--show-output",
            "--shell",
            "echo 'custom_shell' '--shell-arg'",
            "echo benchmark",
        ])
        .ok();
    assert!(
        out.stdout
            .contains("custom_shell --shell-arg -c echo benchmark"),
        "{out:?}"
    );
    // can_pass_input_to_command_from_a_file, fails_if_invalid_stdin_data_file_provided
    let input = sb.write("example_input_file.txt", "This text is part of a file\n");
    let out = sb
        .bench([
            "--runs=1",
            "--warmup=0",
            &format!("--input={}", input.display()),
            "--show-output",
            "cat",
        ])
        .ok();
    assert!(
        out.stdout.contains("This text is part of a file"),
        "{out:?}"
    );
    sb.bench([
        "--runs=1",
        "--input=example_non_existent_file.txt",
        "--show-output",
        "cat",
    ])
    .usage_error("example_non_existent_file.txt");
    // returns_mean_time_in_correct_unit (real 12 ms runs instead of fake
    // 1.234 s ones)
    let out = sb.bench(["--runs=3", "sleep 0.012"]).ok();
    assert!(out.stdout.contains(" ms ±"), "{out:?}");
    let out = sb
        .bench(["--runs=3", "--time-unit=millisecond", "sleep 0.012"])
        .ok();
    assert!(out.stdout.contains(" ms ±"), "{out:?}");
    let out = sb
        .bench(["--runs=3", "--time-unit=microsecond", "sleep 0.012"])
        .ok();
    assert!(out.stdout.contains(" µs ±"), "{out:?}");
    // performs_ten_runs_for_slow_commands: at least 10 runs, beyond the
    // budget (0.4 s here for hyperfine's 3 s and sleep 0.5, the same shape)
    sb.bench(["--time-budget=0.4s", "sleep 0.05"]).ok();
    assert_eq!(runs_of(&sb), [10]);
    // performs_three_seconds_of_benchmarking_for_fast_commands; and
    // takes_{preparation,conclusion,both}_command_into_account_for_computing_number_of_runs:
    // the helpers' time is spent from the budget. (perfsleuth also stops
    // once the median's 95 % interval is within --precision: off here.)
    let spent = |helpers: &[&str]| -> usize {
        let mut args = vec!["--time-budget=0.6s", "--precision=0"];
        args.extend(helpers);
        args.push("sleep 0.005");
        sb.bench(&args).ok();
        runs_of(&sb)[0]
    };
    let alone = spent(&[]);
    let prepared = spent(&["--prepare=sleep 0.02"]);
    let concluded = spent(&["--conclude=sleep 0.02"]);
    let both = spent(&["--prepare=sleep 0.01", "--conclude=sleep 0.01"]);
    assert!(
        alone > prepared && alone > concluded && alone > both,
        "{alone} {prepared} {concluded} {both}"
    );
    assert!(prepared >= 10 && concluded >= 10 && both >= 10);
    // shows_benchmark_comparison_with_relative_times, _with_same_time,
    // _relative_to_reference; shows_reference_name
    let out = sb
        .bench(["--runs=5", "sleep 0.01", "sleep 0.02", "sleep 0.03"])
        .ok();
    assert!(
        out.stdout.contains("Comparison with `sleep 0.01`:"),
        "{out:?}"
    );
    // (a change under 2× is said in percent: "89% slower")
    assert_eq!(
        out.stdout.matches(" slower — significant").count(),
        2,
        "{out:?}"
    );
    let out = sb
        .bench([
            "--runs=5",
            "--reference=sleep 0.02",
            "--reference-name=refabc123",
            "sleep 0.01",
            "sleep 0.03",
        ])
        .ok();
    assert!(out.stdout.contains("Benchmark 1: refabc123"), "{out:?}");
    assert!(
        out.stdout.contains("Comparison with `refabc123`:"),
        "{out:?}"
    );
    assert!(
        out.stdout.contains(" faster — significant")
            && out.stdout.contains(" slower — significant"),
        "{out:?}"
    );
    // performs_all_benchmarks_in_parameter_scan,
    // performs_reference_and_all_benchmarks_in_parameter_scan
    let scan = [
        "--runs=1",
        "--parameter-scan",
        "time",
        "30",
        "45",
        "--parameter-step-size",
        "5",
    ];
    let out = sb.bench(scan.iter().copied().chain(["echo {time}"])).ok();
    for (i, t) in [30, 35, 40, 45].iter().enumerate() {
        assert!(
            out.stdout
                .contains(&format!("Benchmark {}: echo {t}", i + 1)),
            "{out:?}"
        );
    }
    assert!(!out.stdout.contains("echo 50"), "{out:?}");
    let out = sb
        .bench(
            scan.iter()
                .copied()
                .chain(["--reference=echo 25", "echo {time}"]),
        )
        .ok();
    assert!(out.stdout.contains("Benchmark 1: echo 25"), "{out:?}");
    assert!(out.stdout.contains("Benchmark 5: echo 45"), "{out:?}");
    assert!(!out.stdout.contains("Benchmark 6"), "{out:?}");
    // intermediate_results_are_not_exported_to_stdout
    let out = sb
        .bench([
            "--runs=2",
            "--style=none",
            "--export-markdown",
            "-",
            "sleep 0.01",
            "sleep 0.02",
        ])
        .ok();
    assert_eq!(out.stdout.matches("sleep 0.01").count(), 1, "{out:?}");
    assert_eq!(out.stdout.matches("sleep 0.02").count(), 1, "{out:?}");
    // exports_intermediate_results_to_file: see
    // a_command_that_fails_at_its_first_run_leaves_the_others_measured_and_exported.
    // unused_parameters_are_shown_in_benchmark_name
    let out = sb
        .bench(["--runs=2", "-L", "branch", "master,feature", "echo test"])
        .ok();
    assert!(
        out.stdout.contains("echo test (branch = master)")
            && out.stdout.contains("echo test (branch = feature)"),
        "{out:?}"
    );
    // speed_comparison_sort_order. One difference, on purpose: hyperfine
    // compares with the fastest command, perfsleuth with the first (or the
    // --reference), the base a change is judged against. --sort orders the
    // tables: mean-time puts the fastest first, command and auto keep the
    // order given.
    let table = |sort: &str| {
        let out = sb
            .bench([
                "--runs=3",
                &format!("--sort={sort}"),
                "--export-markdown=-",
                "sleep 0.02",
                "sleep 0.01",
            ])
            .ok();
        // (the report goes to stderr while the table takes stdout)
        assert!(
            out.stderr.contains("Comparison with `sleep 0.02`:"),
            "{sort}: {out:?}"
        );
        let (slow, fast) = (
            out.stdout.rfind("| `sleep 0.02`").expect("a row"),
            out.stdout.rfind("| `sleep 0.01`").expect("a row"),
        );
        fast < slow
    };
    assert!(table("mean-time"));
    assert!(!table("command"));
    assert!(!table("auto"));
}

#[test]
fn exits_quietly_when_stdout_is_closed() {
    // hyperfine's regression test: a closed stdout pipe is no panic, and
    // no failure either.
    let sb = Sandbox::new();
    for args in [
        vec!["--runs=1", "echo dummy benchmark"],
        vec!["--runs=1", "--export-json=-", "echo dummy benchmark"],
        vec!["--runs=1", "echo dummy benchmark", "echo second benchmark"],
    ] {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        let out = sb
            .std_cmd()
            .arg("run")
            .arg("--store")
            .arg(sb.store())
            .args(&args)
            .stdout(writer)
            .stderr(std::process::Stdio::piped())
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(out.status.success(), "{args:?}: {stderr}");
    }
}
