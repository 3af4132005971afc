//! `run --mode simulation` (callgrind) and the perf_event counters of
//! walltime runs, through the real binary with real valgrind and real C
//! programs. Skipped, with a printed reason, only where valgrind or gcc is
//! missing (`.ci/run` installs both), or, for the futex counts, where no
//! tracefs can be mounted; `PERFSLEUTH_TEST_REQUIRE` turns those skips into
//! failures (`perfsleuth_testkit`).

use crate::common::{Sandbox, parse_json};
use serde_json::Value;
use std::path::PathBuf;
use std::process::Command;

const PROGRAM: &str = r#"
#include <stdio.h>
#include <stdlib.h>
#ifndef EXTRA
#define EXTRA 0
#endif
__attribute__((noinline)) long work(int n) {
    long s = 0;
    for (int i = 0; i < n; i++) {
        char *p = malloc(64 + i % 100);
        p[1] = (char)i;
        s += p[1];
        for (int k = 0; k < EXTRA; k++) { char *q = malloc(32); q[0] = 1; s += q[0]; free(q); }
        free(p);
    }
    return s;
}
__attribute__((noinline)) void unused(void) { puts("never"); }
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 1000;
    if (argc > 2) { fprintf(stderr, "boom: asked to fail\n"); return atoi(argv[2]); }
    printf("%ld\n", work(n));
    return 0;
}
"#;

/// Whether valgrind and gcc are here; prints why a test is skipped (fails
/// it when the missing tool is required).
fn tools(test: &str) -> bool {
    perfsleuth_testkit::tools_present(test, &["valgrind", "gcc"])
}

/// Compiles the test program into the sandbox (`-O1 -fno-builtin` keeps the
/// mallocs the program is about).
fn build(sb: &Sandbox, name: &str, extra: u32) -> PathBuf {
    let src = sb.write("prog.c", PROGRAM);
    let out = sb.path(name);
    let status = Command::new("gcc")
        .args([
            "-O1",
            "-fno-builtin",
            "-g",
            &format!("-DEXTRA={extra}"),
            "-o",
        ])
        .arg(&out)
        .arg(&src)
        .status()
        .expect("gcc runs");
    assert!(status.success(), "gcc failed");
    out
}

fn sim(sb: &Sandbox, args: &[&str]) -> crate::common::Out {
    let store = sb.store();
    let mut all = vec!["run", "--mode", "simulation", "--store", store.as_str()];
    all.extend_from_slice(args);
    sb.run(all)
}

fn counter(sample: &Value, key: &str) -> f64 {
    sample["counters"][key]
        .as_f64()
        .unwrap_or_else(|| panic!("no counter {key} in {sample}"))
}

#[test]
fn simulation_counts_are_deterministic_stored_and_profiled() {
    if !tools("simulation_counts_are_deterministic_stored_and_profiled") {
        return;
    }
    let sb = Sandbox::new();
    let prog = build(&sb, "prog", 0);
    let cmd = format!("{} 20000", prog.display());
    let out = sim(&sb, &["--runs", "3", &cmd]).ok();
    assert!(out.stdout.contains("3 runs, identical counts"), "{out:?}");
    assert!(out.stdout.contains("Instructions (Ir):"), "{out:?}");
    assert!(out.stdout.contains("work (prog)"), "{out:?}");

    let doc = sb.show_json("latest");
    assert_eq!(doc["run"]["mode"], "simulation");
    let bench = &doc["run"]["benchmarks"][0];
    let samples = bench["samples"].as_array().expect("samples");
    assert_eq!(samples.len(), 3);
    let ir: Vec<f64> = samples.iter().map(|s| counter(s, "Ir")).collect();
    assert!(ir[0] > 100_000.0, "{ir:?}");
    assert!(ir.iter().all(|v| *v == ir[0]), "{ir:?}");
    for key in [
        "Dr",
        "Dw",
        "I1mr",
        "D1mr",
        "D1mw",
        "ILmr",
        "DLmr",
        "DLmw",
        "est_cycles",
    ] {
        counter(&samples[0], key);
    }
    // The command is stored as given, not as the valgrind command line.
    assert_eq!(bench["command"], cmd.as_str());
    let functions = bench["profile"]["functions"].as_array().expect("profile");
    assert!(functions.iter().any(|f| f["function"] == "work"), "{bench}");
    assert!(functions.len() <= 300);
}

#[test]
fn compare_attributes_a_regression_to_functions() {
    if !tools("compare_attributes_a_regression_to_functions") {
        return;
    }
    let sb = Sandbox::new();
    let before = build(&sb, "before", 0);
    let after = build(&sb, "after", 1);
    sim(&sb, &["-n", "prog", &format!("{} 3000", before.display())]).ok();
    sim(&sb, &["-n", "prog", &format!("{} 3000", after.display())]).ok();
    let out = sb.run(["compare", "--store", &sb.store(), "--fail-on", "regressed"]);
    assert_eq!(out.code, 1, "a regression fails the gate: {out:?}");
    assert!(out.stdout.contains("(exact)"), "{out:?}");
    assert!(
        out.stdout.contains("Ir*"),
        "Ir gates in simulation: {out:?}"
    );
    assert!(
        !out.stdout.contains("wall"),
        "wall time is valgrind's: {out:?}"
    );
    let note = out
        .stdout
        .lines()
        .find(|l| l.contains("% Ir is in"))
        .unwrap_or_else(|| panic!("no function attribution: {out:?}"));
    assert!(note.contains("libc.so"), "{note}");

    let json = sb
        .run(["compare", "--store", &sb.store(), "--format", "json"])
        .ok();
    let doc = parse_json(&json.stdout);
    let ir_row = doc["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["metric"] == "Ir")
        .expect("Ir row")
        .clone();
    assert_eq!(ir_row["verdict"], "regressed", "{ir_row}");
}

#[test]
fn collect_limits_counting_to_a_function() {
    if !tools("collect_limits_counting_to_a_function") {
        return;
    }
    let sb = Sandbox::new();
    let prog = build(&sb, "prog", 0);
    let cmd = format!("{} 2000", prog.display());
    sim(&sb, &["--runs", "1", &cmd]).ok();
    sim(&sb, &["--runs", "1", "--collect", "work", &cmd]).ok();
    let whole = counter(
        &sb.show_json("latest~1")["run"]["benchmarks"][0]["samples"][0],
        "Ir",
    );
    let part = counter(
        &sb.show_json("latest")["run"]["benchmarks"][0]["samples"][0],
        "Ir",
    );
    assert!(part > 0.0 && part < whole, "work {part} vs whole {whole}");

    sim(&sb, &["--runs", "1", "--collect", "unused", &cmd]).usage_error("the function never ran");
    sim(&sb, &["--runs", "1", "--collect", "no_such_function", &cmd])
        .usage_error("--collect `no_such_function`");
    sb.bench(["--runs", "2", "--collect", "work", &cmd])
        .usage_error("--collect works only in simulation mode");
}

#[test]
fn shell_scripts_are_traced_into_their_children() {
    if !tools("shell_scripts_are_traced_into_their_children") {
        return;
    }
    let sb = Sandbox::new();
    let prog = build(&sb, "prog", 0);
    let script = sb.write("run.sh", format!("{} 2000\n", prog.display()));
    sim(&sb, &["--runs", "1", &format!("sh {}", script.display())]).ok();
    sim(&sb, &["--runs", "1", "sh -c true"]).ok();
    let traced = counter(
        &sb.show_json("latest~1")["run"]["benchmarks"][0]["samples"][0],
        "Ir",
    );
    let bare_sh = counter(
        &sb.show_json("latest")["run"]["benchmarks"][0]["samples"][0],
        "Ir",
    );
    assert!(
        traced > bare_sh + 100_000.0,
        "the script's child is counted: {traced} vs {bare_sh}"
    );
}

#[test]
fn failures_under_valgrind_and_missing_pieces_are_clear() {
    if !tools("failures_under_valgrind_and_missing_pieces_are_clear") {
        return;
    }
    let sb = Sandbox::new();
    let prog = build(&sb, "prog", 0);
    // The program's own stderr is shown, not valgrind's summary lines.
    let failed = sim(&sb, &[&format!("{} 10 3", prog.display())]).usage_error("exited with code 3");
    assert!(failed.stderr.contains("boom: asked to fail"), "{failed:?}");
    assert!(!failed.stderr.contains("=="), "{failed:?}");
    sim(&sb, &["./no-such-program 1"]).usage_error("not found");
    // valgrind not on PATH: the install hint.
    let out: crate::common::Out = sb
        .cmd()
        .env("PATH", sb.path("empty-bin"))
        .args(["run", "--mode", "simulation", "--no-store"])
        .arg(format!("{} 10", prog.display()))
        .output()
        .expect("start")
        .into();
    out.usage_error("apt-get install valgrind");
}

#[test]
fn a_nondeterministic_program_is_called_out() {
    if !tools("a_nondeterministic_program_is_called_out") {
        return;
    }
    let sb = Sandbox::new();
    // The loop count comes from the clock: different work every run.
    let src = sb.write(
        "clock.c",
        "#include <time.h>\n#include <stdio.h>\nint main(void){struct timespec t;clock_gettime(CLOCK_REALTIME,&t);long s=0;for(long i=0;i<1000+t.tv_nsec%5000;i++)s+=i;printf(\"%ld\\n\",s);return 0;}\n",
    );
    let prog = sb.path("clock");
    assert!(
        Command::new("gcc")
            .args(["-O0", "-o"])
            .arg(&prog)
            .arg(&src)
            .status()
            .expect("gcc")
            .success()
    );
    let out = sim(&sb, &["--runs", "3", prog.to_str().unwrap()]).ok();
    assert!(out.stderr.contains("NOT deterministic"), "{out:?}");
    assert!(out.stdout.contains("runs DISAGREE"), "{out:?}");
}

#[test]
fn walltime_runs_record_software_counters_unless_told_not_to() {
    let sb = Sandbox::new();
    // auto (the default): a 20 ms command's warmup shows counters cost nothing here.
    let out = sb.bench(["--runs", "3", "sleep 0.02"]).ok();
    let doc = sb.show_json("latest");
    let facts = &doc["run"]["environment"];
    let sample = &doc["run"]["benchmarks"][0]["samples"][0];
    assert!(
        facts["measure.counters_auto"]["value"]
            .as_str()
            .is_some_and(|v| v.starts_with("software: the fastest warmup took")),
        "{facts}"
    );
    match sample["counters"]["task_clock_ns"].as_f64() {
        Some(ns) => {
            assert!(ns > 0.0, "{sample}");
            assert!(
                sample["counters"]["context_switches"].as_f64().is_some(),
                "{sample}"
            );
        }
        // Not permitted here (perf_event_paranoid, seccomp): said once, run still stored.
        None => assert!(
            out.stderr.contains("software counters not recorded"),
            "{out:?}"
        ),
    }

    // auto with a command faster than 10 ms: off, and why. The fastest of
    // five warmups, so one that a busy host stretched past 10 ms (seen:
    // `true` at 10.3 ms under CPU pressure) cannot decide it.
    sb.bench(["--runs", "3", "--warmup", "5", "true"]).ok();
    let doc = sb.show_json("latest");
    let facts = &doc["run"]["environment"];
    assert!(
        facts["measure.counters_auto"]["value"]
            .as_str()
            .is_some_and(|v| v.starts_with("off: the fastest warmup took")),
        "{facts}"
    );
    assert_eq!(facts["measure.counters"]["value"], "none");
    assert!(
        doc["run"]["benchmarks"][0]["samples"][0]
            .get("counters")
            .is_none()
    );

    // Explicitly none, and explicitly software even for a fast command.
    sb.bench([
        "--runs",
        "3",
        "--warmup",
        "0",
        "--counters",
        "none",
        "sleep 0.01",
    ])
    .ok();
    let doc = sb.show_json("latest");
    let sample = &doc["run"]["benchmarks"][0]["samples"][0];
    assert!(sample.get("counters").is_none(), "{sample}");
    assert_eq!(
        doc["run"]["environment"]["measure.counters"]["value"],
        "none"
    );
    let forced = sb
        .bench([
            "--runs",
            "3",
            "--warmup",
            "0",
            "--counters",
            "software",
            "true",
        ])
        .ok();
    let doc = sb.show_json("latest");
    let sample = &doc["run"]["benchmarks"][0]["samples"][0];
    assert!(
        sample["counters"]["task_clock_ns"].as_f64().is_some()
            || forced.stderr.contains("software counters not recorded"),
        "{forced:?}"
    );

    // Hardware counters: on a machine without them (VMs), one note with the reason.
    let all = sb
        .bench([
            "--runs",
            "2",
            "--warmup",
            "0",
            "--counters",
            "all",
            "sleep 0.01",
        ])
        .ok();
    let doc = sb.show_json("latest");
    let sample = &doc["run"]["benchmarks"][0]["samples"][0];
    if sample["counters"]["instructions"].as_f64().is_none() {
        assert!(
            all.stderr.contains("hardware counters not recorded:"),
            "{all:?}"
        );
        println!("hardware counters unavailable here: {}", all.stderr.trim());
    }
}

#[test]
fn walltime_and_simulation_runs_are_never_compared() {
    if !tools("walltime_and_simulation_runs_are_never_compared") {
        return;
    }
    let sb = Sandbox::new();
    let prog = build(&sb, "prog", 0);
    let cmd = format!("{} 1000", prog.display());
    sb.bench(["--runs", "3", "--warmup", "0", "-n", "p", &cmd])
        .ok();
    sim(&sb, &["-n", "p", &cmd]).ok();
    // Explicit sides of different modes: refused.
    sb.run(["compare", "--store", &sb.store(), "1", "2"])
        .usage_error("ran in walltime mode and the candidate (run 2) in simulation mode");
    // The default baseline is the run before of the same mode: none yet.
    sb.run(["compare", "--store", &sb.store()])
        .usage_error("no earlier run");
    // `run --baseline` of the other mode: refused before anything is measured.
    sim(
        &sb,
        &["-n", "p", "--baseline", "1", "--fail-on", "regressed", &cmd],
    )
    .usage_error("measure different things");
    assert_eq!(
        sb.runs_json().len(),
        2,
        "nothing was stored for the refused run"
    );
    // With a second simulation run the default pairs the two simulation runs.
    sim(&sb, &["-n", "p", &cmd]).ok();
    let out = sb.run(["compare", "--store", &sb.store()]).ok();
    assert!(
        out.stdout.contains("baseline: run 2   candidate: run 3"),
        "{out:?}"
    );
}

/// Runs perfsleuth with tracefs available: directly where it is mounted,
/// else (as root, with util-linux's `unshare`) inside a private mount
/// namespace that mounts it for this one process; Err (with the reason)
/// where neither works.
fn with_tracefs(sb: &Sandbox, args: &[String]) -> Result<crate::common::Out, String> {
    if std::path::Path::new("/sys/kernel/tracing/events").is_dir() {
        return Ok(sb.cmd().args(args).output().expect("start").into());
    }
    // --no-store and JSON on stdout: no store or home is touched.
    let out = Command::new("unshare")
        .args(["-m", "sh", "-c"])
        .arg(r#"mount -t tracefs nodev /sys/kernel/tracing && exec "$0" "$@""#)
        .arg(crate::common::BIN)
        .args(args)
        .env("NO_COLOR", "1")
        .current_dir(sb.root())
        .output();
    match out {
        Ok(o) if o.status.code() == Some(0) => Ok(o.into()),
        Ok(o) => Err(String::from_utf8_lossy(&o.stderr).trim().to_string()),
        Err(e) => Err(format!("unshare: {e}")),
    }
}

#[test]
fn futex_counts_show_lock_contention_end_to_end() {
    if !tools("futex_counts_show_lock_contention_end_to_end") {
        return;
    }
    let sb = Sandbox::new();
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../perfsleuth-measure/tests/progs/mutex.c");
    let prog = sb.path("mutex");
    assert!(
        Command::new("gcc")
            .args(["-O2", "-pthread", "-o"])
            .arg(&prog)
            .arg(&src)
            .status()
            .expect("gcc")
            .success()
    );
    let args: Vec<String> = [
        "run",
        "--no-store",
        "--counters",
        "all",
        "--warmup",
        "0",
        "--runs",
        "3",
        "--export-json",
        "-",
        "-n",
        "shared",
        "-n",
        "private",
    ]
    .iter()
    .map(|s| s.to_string())
    .chain([
        format!("{} shared", prog.display()),
        format!("{} private", prog.display()),
    ])
    .collect();
    let out = match with_tracefs(&sb, &args) {
        Ok(out) => out,
        Err(why) => {
            perfsleuth_testkit::skip(
                "tracefs",
                format!("no tracefs here and none could be mounted privately: {why}"),
            );
            return;
        }
    };
    let doc = parse_json(&out.stdout);
    let futex = |i: usize| -> Option<f64> {
        let mut v: Vec<f64> = doc["run"]["benchmarks"][i]["samples"]
            .as_array()?
            .iter()
            .filter_map(|s| s["counters"]["futex_calls"].as_f64())
            .collect();
        v.sort_by(f64::total_cmp);
        v.get(v.len() / 2).copied()
    };
    let (Some(shared), Some(private)) = (futex(0), futex(1)) else {
        perfsleuth_testkit::skip(
            "tracefs",
            format!("futex tracepoint not permitted here: {}", out.stderr.trim()),
        );
        return;
    };
    assert!(
        shared >= 10.0 * private.max(1.0) && shared >= private + 1000.0,
        "contended {shared} vs uncontended {private} futex calls"
    );
}
