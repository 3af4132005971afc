//! `perfsleuth import`: real output of hyperfine, Google Benchmark,
//! pytest-benchmark and go test (each tool run here, or the test skips, or
//! fails where CI requires it), stored as runs that `show` and `compare`
//! read; criterion's directory from checked-in real output; and each bad
//! input refused with nothing stored.

use crate::common::Sandbox;
use serde_json::Value;
use std::process::Command;

/// Runs `program args` in the sandbox; its stdout, or None (skipped) when it
/// cannot start or fails.
fn tool(sb: &Sandbox, feature: &str, program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program)
        .args(args)
        .current_dir(sb.root())
        .output();
    match out {
        Ok(o) if o.status.success() => Some(String::from_utf8_lossy(&o.stdout).into_owned()),
        Ok(o) => {
            perfsleuth_testkit::skip(
                feature,
                format!(
                    "{program} failed: {}",
                    String::from_utf8_lossy(&o.stderr)
                        .lines()
                        .last()
                        .unwrap_or("")
                ),
            );
            None
        }
        Err(e) => {
            perfsleuth_testkit::skip(feature, format!("{program} does not start: {e}"));
            None
        }
    }
}

fn import(sb: &Sandbox, args: &[&str]) -> crate::common::Out {
    let store = sb.store();
    let mut all = vec!["import", "--store", &store];
    all.extend(args);
    sb.run(all)
}

/// The stored run's benchmarks (name → samples) and its options.
fn stored(sb: &Sandbox, run: &str) -> (Vec<(String, Vec<Value>)>, Value, Value) {
    let doc = sb.show_json(run);
    let run = &doc["run"];
    let benches = run["benchmarks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| {
            (
                b["name"].as_str().unwrap().to_string(),
                b["samples"].as_array().unwrap().clone(),
            )
        })
        .collect();
    (benches, run["options"].clone(), run["environment"].clone())
}

#[test]
fn hyperfine_export_imports_and_compares() {
    let sb = Sandbox::new();
    for file in ["a.json", "b.json"] {
        if tool(
            &sb,
            "hyperfine",
            "hyperfine",
            &[
                "-N",
                "--runs",
                "8",
                "--export-json",
                file,
                "true",
                "sleep 0.002",
            ],
        )
        .is_none()
        {
            return;
        }
    }
    let out = import(&sb, &["a.json"]).ok();
    assert!(
        out.stdout
            .contains("as hyperfine (detected): 2 benchmarks, 16 samples"),
        "{}",
        out.stdout
    );
    import(&sb, &["--format", "hyperfine", "b.json"]).ok();
    let (benches, options, _) = stored(&sb, "1");
    assert_eq!(benches[0].0, "true");
    assert_eq!(benches[1].1.len(), 8);
    let wall = benches[1].1[0]["wall_ns"].as_u64().unwrap();
    assert!(wall >= 2_000_000, "sleep 0.002 took {wall} ns");
    assert_eq!(options["import"]["format"], "hyperfine");
    assert_eq!(options["import"]["sha256"].as_str().unwrap().len(), 64);
    // Imported runs compare like measured ones.
    let cmp = sb.run(["compare", "--store", &sb.store(), "1", "2"]);
    assert!(cmp.code == 0 || cmp.code == 1, "{}", cmp.stderr);
    assert!(cmp.stdout.contains("sleep 0.002"), "{}", cmp.stdout);
    assert!(!cmp.stdout.contains("different tools"), "{}", cmp.stdout);
    // An import against a measured run of the same command: allowed, and said.
    sb.bench(["--runs", "5", "sleep 0.002"]).ok();
    let mixed = sb.run(["compare", "--store", &sb.store(), "2", "3"]);
    assert!(mixed.code == 0 || mixed.code == 1, "{}", mixed.stderr);
    assert!(
        mixed
            .stdout
            .contains("baseline: hyperfine (imported), candidate: perfsleuth"),
        "{}",
        mixed.stdout
    );
}

#[test]
fn google_benchmark_repetitions_are_samples_and_its_context_facts() {
    let sb = Sandbox::new();
    sb.write(
        "bm.cc",
        "#include <benchmark/benchmark.h>\n#include <vector>\n\
         static void BM_sum(benchmark::State& s) { std::vector<int> v(s.range(0), 1);\n\
         for (auto _ : s) { long t = 0; for (int x : v) t += x; benchmark::DoNotOptimize(t); }\n\
         s.counters[\"items\"] = v.size(); }\n\
         BENCHMARK(BM_sum)->Arg(64)->Arg(4096);\nBENCHMARK_MAIN();\n",
    );
    if tool(
        &sb,
        "google_benchmark",
        "g++",
        &["-O2", "bm.cc", "-o", "bm", "-lbenchmark", "-lpthread"],
    )
    .is_none()
    {
        return;
    }
    let Some(json) = tool(
        &sb,
        "google_benchmark",
        "./bm",
        &[
            "--benchmark_format=json",
            "--benchmark_repetitions=4",
            "--benchmark_min_time=0.01",
        ],
    ) else {
        return;
    };
    sb.write("gb.json", &json);
    let out = import(&sb, &["gb.json"]).ok();
    assert!(
        out.stdout
            .contains("as Google Benchmark (detected): 2 benchmarks, 8 samples"),
        "{}",
        out.stdout
    );
    let (benches, _, env) = stored(&sb, "1");
    assert_eq!(benches[0].0, "BM_sum/64");
    let s = &benches[1].1[0];
    assert!(s["counters"]["cpu_ns"].as_f64().unwrap() > 0.0, "{s}");
    assert_eq!(s["counters"]["items"], 4096.0);
    // Its context is laid over this machine's, and says where it came from.
    let l1 = &env["cpu.cache.l1d.size"];
    assert!(l1["value"].as_str().unwrap().ends_with(" KiB"), "{l1}");
    assert!(
        l1["reason"].as_str().unwrap().contains("Google Benchmark"),
        "{l1}"
    );
    assert!(
        env["kernel.release"]["value"].is_string(),
        "this machine's facts stay"
    );
    // `exec` runs the suite itself and reads its standard output.
    let out = sb
        .run([
            "exec",
            "--store",
            &sb.store(),
            "--",
            "./bm",
            "--benchmark_format=json",
            "--benchmark_repetitions=3",
            "--benchmark_min_time=0.01",
        ])
        .ok();
    assert!(
        out.stdout
            .contains("2 benchmarks, 6 samples; environment: this machine while the suite ran"),
        "{}",
        out.stdout
    );
    let (_, options, env) = stored(&sb, "2");
    assert_eq!(options["import"]["machine"], "exec");
    assert!(
        env["noise.run.seconds"]["value"].is_string(),
        "noise over the suite's run: {env}"
    );
}

#[test]
fn pytest_benchmark_rounds_and_parameters() {
    let sb = Sandbox::new();
    sb.write(
        "test_fib.py",
        "import pytest\n\ndef fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n\n\
         @pytest.mark.parametrize('n', [5, 10])\ndef test_fib(benchmark, n):\n    benchmark(fib, n)\n",
    );
    if tool(
        &sb,
        "pytest_benchmark",
        "python3",
        &[
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "test_fib.py",
            "--benchmark-json=pb.json",
            "--benchmark-min-rounds=5",
            "--benchmark-max-time=0.05",
        ],
    )
    .is_none()
    {
        return;
    }
    import(&sb, &["--format", "pytest", "pb.json"]).ok();
    let doc = sb.show_json("1");
    let b = &doc["run"]["benchmarks"][1];
    assert_eq!(b["name"], "test_fib.py::test_fib[10]");
    assert_eq!(b["parameters"]["n"], "10");
    assert!(b["samples"].as_array().unwrap().len() >= 5);
    let env = &doc["run"]["environment"];
    assert!(
        env["python.version"]["value"]
            .as_str()
            .unwrap()
            .contains("3."),
        "{env}"
    );
    // pytest-benchmark records no CPU time: `show` does not print zeros for it.
    let show = sb.run(["show", "--store", &sb.store(), "1"]).ok();
    assert!(
        show.stdout.contains("test_fib") && !show.stdout.contains("User:"),
        "{}",
        show.stdout
    );
}

#[test]
fn go_test_lines_from_stdin() {
    let sb = Sandbox::new();
    sb.write("go.mod", "module example.com/fib\n\ngo 1.19\n");
    sb.write(
        "fib_test.go",
        "package fib\n\nimport \"testing\"\n\nfunc fib(n int) int {\n\tif n < 2 {\n\t\treturn n\n\t}\n\treturn fib(n-1) + fib(n-2)\n}\n\n\
         func BenchmarkFib10(b *testing.B) {\n\tfor i := 0; i < b.N; i++ {\n\t\tfib(10)\n\t}\n}\n\n\
         func BenchmarkAlloc(b *testing.B) {\n\tb.ReportAllocs()\n\tfor i := 0; i < b.N; i++ {\n\t\t_ = make([]byte, 64+i%2)\n\t}\n}\n",
    );
    let gocache = sb.path("gocache");
    let out = Command::new("go")
        .args([
            "test",
            "-bench",
            ".",
            "-count",
            "3",
            "-benchtime",
            "2000x",
            "-run",
            "^$",
        ])
        .current_dir(sb.root())
        .env("GOCACHE", &gocache)
        .env("GOFLAGS", "-mod=mod")
        .env("HOME", sb.root())
        .output();
    let text = match out {
        Ok(o) if o.status.success() => String::from_utf8_lossy(&o.stdout).into_owned(),
        other => {
            perfsleuth_testkit::skip("go", format!("go test -bench did not run: {other:?}"));
            return;
        }
    };
    let mut child = sb
        .std_cmd()
        .args(["import", "--store", &sb.store(), "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    use std::io::Write as _;
    child
        .stdin
        .take()
        .unwrap()
        .write_all(text.as_bytes())
        .unwrap();
    let done = child.wait_with_output().unwrap();
    let stdout = String::from_utf8_lossy(&done.stdout);
    assert!(
        done.status.success()
            && stdout.contains("as go test -bench (detected): 2 benchmarks, 6 samples"),
        "{stdout}\n{text}"
    );
    let doc = sb.show_json("1");
    let b = &doc["run"]["benchmarks"][1];
    assert_eq!(b["name"], "BenchmarkAlloc");
    assert_eq!(b["parameters"]["pkg"], "example.com/fib");
    assert!(
        b["samples"][0]["counters"]["allocs_per_op"]
            .as_f64()
            .unwrap()
            >= 1.0,
        "{b}"
    );
}

#[test]
fn criterion_directory_from_real_output() {
    // Written by criterion 0.5 (`cargo bench` of a fib benchmark); see
    // tests/fixtures/criterion/README.md.
    let sb = Sandbox::new();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/criterion");
    let out = import(&sb, &[dir]).ok();
    assert!(
        out.stdout.contains("as criterion.rs (detected)"),
        "{}",
        out.stdout
    );
    let (benches, _, _) = stored(&sb, "1");
    let names: Vec<&str> = benches.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["fib/10", "fib/20"]);
    assert_eq!(benches[0].1.len(), 100);
    // One benchmark's directory alone imports too.
    import(&sb, &[&format!("{dir}/fib/20")]).ok();
    let (one, _, _) = stored(&sb, "2");
    assert_eq!(one.len(), 1);
}

#[test]
fn a_criterion_file_that_is_not_a_regular_file_is_named_not_skipped() {
    // Issue 37: a `benchmark.json` linked to /dev/zero was skipped without
    // a note, so the import stored the other benchmarks and said nothing.
    let sb = Sandbox::new();
    let fixture = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/criterion/fib");
    for (name, target) in [("good", None), ("bad", Some("/dev/zero"))] {
        let new = sb.path(&format!("crit/{name}/new"));
        std::fs::create_dir_all(&new).unwrap();
        for f in ["benchmark.json", "sample.json"] {
            let from = format!("{fixture}/10/new/{f}");
            match (f, target) {
                ("benchmark.json", Some(t)) => std::os::unix::fs::symlink(t, new.join(f)).unwrap(),
                _ => {
                    std::fs::copy(&from, new.join(f)).unwrap();
                }
            }
        }
    }
    let out = import(&sb, &["crit"]).usage_error("benchmark.json");
    assert!(
        out.stderr.contains("crit/bad/new/benchmark.json"),
        "{}",
        out.stderr
    );
    assert!(
        !sb.db().exists() || sb.runs_json().is_empty(),
        "nothing stored"
    );
}

#[test]
fn bad_input_is_refused_and_nothing_is_stored() {
    let sb = Sandbox::new();
    sb.write(
        "hf.json",
        r#"{"results": [{"command": "a", "times": [0.1, -0.2]}]}"#,
    );
    sb.write("gb.json", r#"{"context": {}, "benchmarks": [{"name": "x", "run_type": "iteration", "real_time": 1, "time_unit": "ns"}]}"#);
    sb.write(
        "trunc.json",
        r#"{"results": [{"command": "a", "times": [0.1"#,
    );
    sb.write("empty.json", r#"{"results": []}"#);
    sb.write(
        "dup.json",
        r#"{"results": [{"command": "a", "times": [1]}, {"command": "a", "times": [1]}]}"#,
    );
    sb.write("log.txt", "hello\n");
    std::fs::create_dir_all(sb.path("crit/fib/base")).unwrap();
    for (args, needle) in [
        (
            vec!["hf.json"],
            "hf.json (hyperfine): results[0].times[1]: the time",
        ),
        (
            vec!["--format", "hyperfine", "gb.json"],
            "looks like Google Benchmark output, not hyperfine",
        ),
        (vec!["trunc.json"], "line 1, column"),
        (vec!["empty.json"], "no benchmark results"),
        (vec!["dup.json"], "appears twice"),
        (vec!["log.txt"], "not a results format perfsleuth imports"),
        (
            vec!["--format", "junit", "hf.json"],
            "unknown import format `junit`",
        ),
        (vec!["crit"], "no criterion results"),
        (vec!["--format", "go", "crit"], "is a directory"),
        (vec!["missing.json"], "cannot read missing.json"),
        (vec!["--name", "x", "dup.json"], "appears twice"),
        (vec!["/dev/zero"], "cannot read /dev/zero"),
    ] {
        let out = import(&sb, &args).usage_error(needle);
        assert_eq!(
            out.stderr.lines().count(),
            2,
            "one line and its hint: {}",
            out.stderr
        );
    }
    // A file past the reader's bound is refused unread (sparse: no disk used).
    let huge = std::fs::File::create(sb.path("huge.json")).unwrap();
    huge.set_len(300 << 20).unwrap();
    import(&sb, &["huge.json"]).usage_error("cannot read huge.json");
    // A FIFO nobody writes to reads as empty instead of hanging.
    let fifo = sb.path("fifo");
    if Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .is_ok_and(|s| s.success())
    {
        import(&sb, &["fifo"]).usage_error("not a results format");
    }
    assert!(
        !sb.db().exists() || sb.runs_json().is_empty(),
        "nothing stored"
    );
}

#[test]
fn explain_will_not_rerun_an_import_whose_numbers_are_not_process_times() {
    // The fixture, and a copy 1.5 times slower imported with a malloc
    // tunable set: a difference explain could test, but criterion's
    // per-iteration times are not `cargo bench`'s wall time.
    let sb = Sandbox::new();
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/criterion/fib");
    for n in ["10", "20"] {
        let dir = sb.path(&format!("slow/fib/{n}/new"));
        std::fs::create_dir_all(&dir).unwrap();
        let id = std::fs::read_to_string(format!("{src}/{n}/new/benchmark.json")).unwrap();
        let s: Value = serde_json::from_str(
            &std::fs::read_to_string(format!("{src}/{n}/new/sample.json")).unwrap(),
        )
        .unwrap();
        let times: Vec<f64> = s["times"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t.as_f64().unwrap() * 1.5)
            .collect();
        let slow = serde_json::json!({"iters": s["iters"], "times": times});
        std::fs::write(dir.join("benchmark.json"), id).unwrap();
        std::fs::write(dir.join("sample.json"), slow.to_string()).unwrap();
    }
    import(&sb, &[src]).ok();
    let out = sb
        .std_cmd()
        .args(["import", "--store", &sb.store(), "slow"])
        .env("GLIBC_TUNABLES", "glibc.malloc.arena_max=1")
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    sb.run(["explain", "--store", &sb.store(), "1", "2"])
        .usage_error("was imported from criterion.rs output: explain reruns");
}

#[test]
fn exec_imports_only_what_the_suite_wrote_and_nothing_when_it_fails() {
    // The "suite" is a shell that writes criterion's files the way `cargo
    // bench -- fib/20` would: fib/20 anew, beside a fib/10 from long ago.
    let sb = Sandbox::new();
    let src = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/criterion/fib");
    let old = sb.path("target/criterion/fib/10/new");
    std::fs::create_dir_all(&old).unwrap();
    for f in ["benchmark.json", "sample.json"] {
        std::fs::copy(format!("{src}/10/new/{f}"), old.join(f)).unwrap();
    }
    let touched = Command::new("touch")
        .args(["-d", "2020-01-01"])
        .arg(old.join("sample.json"))
        .status()
        .unwrap();
    assert!(touched.success());
    let script = format!(
        "mkdir -p target/criterion/fib/20/new && cp {src}/20/new/*.json target/criterion/fib/20/new/"
    );
    let out = sb
        .run([
            "exec",
            "--store",
            &sb.store(),
            "--format",
            "criterion",
            "--",
            "sh",
            "-c",
            &script,
        ])
        .ok();
    assert!(
        out.stdout
            .contains("as criterion.rs: 1 benchmark, 100 samples"),
        "{}",
        out.stdout
    );
    let (benches, _, _) = stored(&sb, "1");
    assert_eq!(benches[0].0, "fib/20");
    // A suite that fails stores nothing; nor does one that wrote nothing new.
    sb.run([
        "exec",
        "--store",
        &sb.store(),
        "--format",
        "go",
        "--",
        "false",
    ])
    .usage_error("`false` failed (exit status: 1): nothing imported");
    sb.run([
        "exec",
        "--store",
        &sb.store(),
        "--format",
        "criterion",
        "--",
        "true",
    ])
    .usage_error("written by this run");
    assert_eq!(sb.runs_json().len(), 1);
}

#[test]
fn callgrind_out_files_from_real_valgrind_compare_in_simulation_mode() {
    let sb = Sandbox::new();
    sb.write(
        "work.c",
        "#include <stdlib.h>\nint main(int c, char **v) { volatile long t = 0;\n\
         long n = atol(v[1]); for (long i = 0; i < n; i++) t += i; return 0; }\n",
    );
    if tool(&sb, "gcc", "gcc", &["-O1", "work.c", "-o", "work"]).is_none() {
        return;
    }
    for (file, n) in [("a.out.cg", "100000"), ("b.out.cg", "150000")] {
        let out = format!("--callgrind-out-file={file}");
        let args = ["--tool=callgrind", "--cache-sim=yes", &out, "./work", n];
        if tool(&sb, "valgrind", "valgrind", &args).is_none() {
            return;
        }
    }
    let out = import(&sb, &["a.out.cg"]).ok();
    assert!(
        out.stdout
            .contains("as callgrind (detected): 1 benchmark, 1 samples"),
        "{}",
        out.stdout
    );
    // One name on both sides, as for two builds of one program.
    import(
        &sb,
        &[
            "--name",
            "./work 100000",
            "--format",
            "callgrind",
            "b.out.cg",
        ],
    )
    .ok();
    let doc = sb.show_json("1");
    assert_eq!(doc["run"]["mode"], "simulation");
    let bench = &doc["run"]["benchmarks"][0];
    assert_eq!(bench["name"], "./work 100000");
    assert!(
        bench["samples"][0]["counters"]["est_cycles"]
            .as_f64()
            .unwrap()
            > 0.0
    );
    assert!(!bench["profile"]["functions"].as_array().unwrap().is_empty());
    let store = sb.store();
    let cmp = sb.run([
        "compare",
        "--store",
        &store,
        "1",
        "2",
        "--fail-on",
        "regressed",
    ]);
    assert_eq!(
        cmp.code, 1,
        "41 % more instructions is a regression: {}",
        cmp.stdout
    );
    assert!(
        cmp.stdout.contains("(exact)") && cmp.stdout.contains("in `main`"),
        "{}",
        cmp.stdout
    );
}

#[test]
fn gungraun_output_from_real_runs_compares_exactly() {
    // Written by gungraun 0.20 under `cargo bench`; see
    // tests/fixtures/gungraun/README.md.
    let sb = Sandbox::new();
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/gungraun");
    let out = import(&sb, &[&format!("{dir}/first-run.txt")]).ok();
    assert!(
        out.stdout
            .contains("as gungraun (iai-callgrind) (detected): 2 benchmarks, 2 samples"),
        "{}",
        out.stdout
    );
    import(
        &sb,
        &[
            "--format",
            "iai-callgrind",
            &format!("{dir}/second-run.txt"),
        ],
    )
    .ok();
    let doc = sb.show_json("1");
    assert_eq!(doc["run"]["mode"], "simulation");
    let long = &doc["run"]["benchmarks"][1];
    assert_eq!(
        long["name"],
        "fib::bench_fibonacci_group::bench_fibonacci long:(20)"
    );
    assert_eq!(long["samples"][0]["counters"]["Ir"], 213143.0);
    let cmp = sb.run(["compare", "--store", &sb.store(), "1", "2"]).ok();
    assert!(
        cmp.stdout.contains("±0.0% (exact)") && cmp.stdout.contains("no change"),
        "{}",
        cmp.stdout
    );
}

#[test]
fn summary_only_results_compare_by_their_reported_spread() {
    // Bencher Metric Format: a value and its bounds per measure, no samples.
    let sb = Sandbox::new();
    let bmf = |sort: f64, hash: f64| {
        format!(
            r#"{{"sort": {{"latency": {{"value": {sort}, "lower_value": {}, "upper_value": {}}}}},
                "hash": {{"latency": {{"value": {hash}, "lower_value": {}, "upper_value": {}}}}}}}"#,
            sort - 1.0,
            sort + 1.0,
            hash - 5.0,
            hash + 5.0
        )
    };
    sb.write("a.json", bmf(100.0, 50.0));
    sb.write("b.json", bmf(120.0, 52.0));
    let out = import(&sb, &["a.json"]).ok();
    assert!(
        out.stdout
            .contains("as Bencher Metric Format (detected): 2 benchmarks, 0 samples"),
        "{}",
        out.stdout
    );
    import(&sb, &["--format", "bmf", "b.json"]).ok();
    let doc = sb.show_json("1");
    let s = &doc["run"]["benchmarks"][0]["summaries"][0];
    assert_eq!(
        (s["metric"].as_str(), s["lower"].as_f64()),
        (Some("wall"), Some(45.0)),
        "{s}"
    );
    let cmp = sb.run([
        "compare",
        "--store",
        &sb.store(),
        "1",
        "2",
        "--format",
        "json",
    ]);
    let doc = crate::common::parse_json(&cmp.stdout);
    let rows = doc["rows"].as_array().unwrap();
    let verdict = |bench: &str| {
        rows.iter()
            .find(|r| r["benchmark"] == bench && r["metric"] == "wall")
            .map(|r| r["verdict"].as_str().unwrap().to_string())
    };
    // +20 % outside bounds of ±1 %: regressed; +4 % inside ±10 %: not shown either way.
    assert_eq!(
        verdict("sort").as_deref(),
        Some("regressed"),
        "{}",
        cmp.stdout
    );
    assert_eq!(
        verdict("hash").as_deref(),
        Some("inconclusive"),
        "{}",
        cmp.stdout
    );
    // Nothing but the wall time was reported, so no user/sys/RSS rows.
    assert!(rows.iter().all(|r| r["metric"] == "wall"), "{}", cmp.stdout);
    assert!(cmp.stdout.contains("summary only"), "{}", cmp.stdout);
    // The report draws samples, and says why it has none to draw.
    sb.run(["report", "--store", &sb.store(), "1", "-o", "r.html"])
        .usage_error("holds only the summaries its tool reported");
}

#[test]
fn google_benchmark_aggregates_only_compare_by_welch() {
    let sb = Sandbox::new();
    sb.write(
        "bm.cc",
        "#include <benchmark/benchmark.h>\n#include <vector>\n\
         static void BM_sum(benchmark::State& s) { std::vector<int> v(s.range(0), 1);\n\
         for (auto _ : s) { long t = 0; for (int x : v) t += x; benchmark::DoNotOptimize(t); } }\n\
         BENCHMARK(BM_sum)->Arg(4096);\nBENCHMARK_MAIN();\n",
    );
    if tool(
        &sb,
        "google_benchmark",
        "g++",
        &["-O2", "bm.cc", "-o", "bm", "-lbenchmark", "-lpthread"],
    )
    .is_none()
    {
        return;
    }
    for file in ["a.json", "b.json"] {
        let Some(json) = tool(
            &sb,
            "google_benchmark",
            "./bm",
            &[
                "--benchmark_format=json",
                "--benchmark_repetitions=5",
                "--benchmark_report_aggregates_only=true",
                "--benchmark_min_time=0.01",
            ],
        ) else {
            return;
        };
        sb.write(file, json);
        import(&sb, &[file]).ok();
    }
    let (benches, _, _) = stored(&sb, "1");
    assert!(benches[0].1.is_empty(), "aggregates only: no samples");
    let doc = sb.show_json("1");
    let s = &doc["run"]["benchmarks"][0]["summaries"][0];
    assert_eq!(
        (s["kind"].as_str(), s["n"].as_u64()),
        (Some("mean"), Some(5)),
        "{s}"
    );
    let cmp = sb.run(["compare", "--store", &sb.store(), "1", "2"]);
    assert!(cmp.code == 0 || cmp.code == 1, "{}", cmp.stderr);
    assert!(cmp.stdout.contains("judged by Welch's t"), "{}", cmp.stdout);
}

#[test]
fn other_versions_of_the_tools_import_too() {
    // Real output of versions the test machines do not run: criterion 0.3,
    // pytest-benchmark 3.4 and hyperfine 1.20 (see each fixture's README).
    let sb = Sandbox::new();
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    let out = import(&sb, &[&format!("{fixtures}/criterion-0.3")]).ok();
    assert!(
        out.stdout
            .contains("criterion.rs (detected): 2 benchmarks, 200 samples"),
        "{}",
        out.stdout
    );
    let out = import(&sb, &[&format!("{fixtures}/pytest-benchmark/v3.4.1.json")]).ok();
    assert!(
        out.stdout
            .contains("pytest-benchmark (detected): 2 benchmarks, 111 samples"),
        "{}",
        out.stdout
    );
    let out = import(&sb, &[&format!("{fixtures}/hyperfine/v1.20.0.json")]).ok();
    assert!(
        out.stdout
            .contains("hyperfine (detected): 2 benchmarks, 12 samples"),
        "{}",
        out.stdout
    );
    assert!(
        !out.stdout.contains("no peak memory"),
        "1.20 records it: {}",
        out.stdout
    );
    let (benches, _, _) = stored(&sb, "3");
    assert_eq!(benches[0].1[0]["peak_rss_bytes"], 3158016);
    let (benches, _, _) = stored(&sb, "1");
    let per_iter = benches[1].1[0]["wall_ns"].as_u64().unwrap();
    assert!(
        per_iter > 1_000,
        "fib(20) takes microseconds an iteration: {per_iter} ns"
    );
}

#[test]
fn compare_shows_no_rows_for_metrics_an_import_never_measured() {
    // pytest-benchmark and criterion report times only: their samples carry
    // zeros for CPU time and peak RSS, which compare showed as `0 ns → 0 ns
    // ±0.0% (exact) no change` rows and counted in its summary (issue 38).
    let sb = Sandbox::new();
    let fixtures = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures");
    for _ in 0..2 {
        import(&sb, &[&format!("{fixtures}/pytest-benchmark/v3.4.1.json")]).ok();
    }
    let out = sb
        .run([
            "compare",
            "--store",
            &sb.store(),
            "1",
            "2",
            "--format",
            "json",
        ])
        .ok();
    let doc = crate::common::parse_json(&out.stdout);
    let metrics: Vec<&str> = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["metric"].as_str().unwrap())
        .collect();
    assert_eq!(metrics, ["wall", "wall"], "{}", out.stdout);
    let text = sb.run(["compare", "--store", &sb.store(), "1", "2"]).ok();
    assert!(!text.stdout.contains("0 ns       0 ns"), "{}", text.stdout);
    assert!(!text.stdout.contains("no change"), "{}", text.stdout);
}
