//! `perfsleuth history` and `history fit` on real SQLite stores: a store
//! seeded through the store API (a code step and a kernel change), and runs
//! measured by `perfsleuth run` itself.

use crate::common::{Sandbox, parse_json};
use perfsleuth_model::schema::{Document as _, RunsDoc};
use perfsleuth_model::{
    Benchmark, Environment, GitInfo, ImpactClass, Mode, Run, RunStatus, Sample,
};
use perfsleuth_store::{RunReader as _, RunWriter as _, SqliteStore};

fn env(kernel: &str) -> Environment {
    let mut e = Environment::default();
    e.set("cpu.model", "Test CPU", ImpactClass::Identity);
    e.set("cpu.logical_cores", "2", ImpactClass::Identity);
    e.set("kernel.release", kernel, ImpactClass::Identity);
    e.set("cpu.freq.governor", "performance", ImpactClass::Performance);
    e
}

/// Seeds `n` complete runs of benchmark `work`: run i takes `level(i)` ×
/// 10 ms with a deterministic ±1 % wobble, on kernel `kernel(i)`.
fn seed(
    db: &std::path::Path,
    n: usize,
    level: impl Fn(usize) -> f64,
    kernel: impl Fn(usize) -> &'static str,
) {
    seed_on(db, n, level, |i| env(kernel(i)));
}

/// [`seed`], run i on the machine `machine(i)` describes.
fn seed_on(
    db: &std::path::Path,
    n: usize,
    level: impl Fn(usize) -> f64,
    machine: impl Fn(usize) -> Environment,
) {
    let mut store = SqliteStore::open(db).unwrap();
    for i in 0..n {
        let run = Run {
            id: None,
            uuid: None,
            started_at: format!("2026-11-{:02}T{:02}:00:00Z", 1 + i / 24, i % 24),
            ended_at: None,
            status: RunStatus::Running,
            tool_version: "test".into(),
            git: Some(GitInfo {
                commit: format!("{i:07x}{}", "a".repeat(33)),
                branch: Some("main".into()),
                dirty: false,
            }),
            mode: Mode::Walltime,
            options: serde_json::json!({}),
            environment: machine(i),
            benchmarks: Vec::new(),
            probes: Vec::new(),
        };
        let id = store.begin_run(&run).unwrap();
        let bench = Benchmark {
            name: "work".into(),
            command: "work".into(),
            argv: vec!["work".into()],
            ..Benchmark::default()
        };
        let b = store.add_benchmark(id, &bench).unwrap();
        for k in 0..10u32 {
            // A fixed pattern in place of noise: ±1 % around the level.
            let wobble = 1.0 + 0.01 * (((i * 7 + k as usize * 3) % 11) as f64 - 5.0) / 5.0;
            let ns = (1e7 * level(i) * wobble) as u64;
            let s = Sample {
                iteration: k,
                wall_ns: ns,
                user_ns: ns / 2,
                exit_code: Some(0),
                ..Sample::default()
            };
            store.add_sample(b, &s).unwrap();
        }
        store
            .finish_run(id, RunStatus::Complete, &run.started_at)
            .unwrap();
    }
}

#[test]
fn a_seeded_step_and_a_seeded_kernel_change_are_told_apart() {
    let sb = Sandbox::new();
    seed(
        &sb.db(),
        60,
        |i| match i {
            0..20 => 1.0,
            20..40 => 1.06,
            _ => 1.06 * 1.10,
        },
        |i| if i < 40 { "6.1.0" } else { "6.8.0" },
    );
    let out = sb
        .run(["history", "--store", &sb.store(), "--format", "json"])
        .ok();
    // The second read comes from the summaries the first one cached.
    let again = sb
        .run(["history", "--store", &sb.store(), "--format", "json"])
        .ok();
    assert_eq!(out.stdout, again.stdout);
    let doc = parse_json(&out.stdout);
    assert_eq!(doc["schema"], "perfsleuth/history");
    let series = doc["series"].as_array().unwrap();
    assert_eq!(
        series.len(),
        1,
        "the kernel change marks the series, it does not split it"
    );
    let s = &series[0];
    assert_eq!(s["points"].as_array().unwrap().len(), 60);
    assert_eq!(s["markers"][0]["index"], 40);
    let cps = s["change_points"].as_array().unwrap();
    let idx: Vec<u64> = cps.iter().map(|c| c["index"].as_u64().unwrap()).collect();
    assert_eq!(idx, [20, 40], "{cps:#?}");
    assert_eq!(cps[0]["cause"], "code");
    assert_eq!(cps[0]["regression"], true);
    assert_eq!(cps[0]["after"], "0000014aaaaa");
    assert_eq!(cps[1]["cause"], "environment");
    let summary = cps[1]["summary"].as_str().unwrap();
    assert!(
        summary.contains("6.1.0 → 6.8.0") && summary.contains("probably the machine"),
        "{summary}"
    );

    let text = sb.run(["history", "--store", &sb.store()]).ok().stdout;
    assert!(
        text.contains("regression: +6.0%") && text.contains("environment changed at point 41"),
        "{text}"
    );
    let md = sb
        .run(["history", "--store", &sb.store(), "--format", "markdown"])
        .ok()
        .stdout;
    assert!(
        md.contains("| SEGMENT |") && md.contains("**regression**"),
        "{md}"
    );
}

#[test]
fn check_gates_a_new_code_regression_once_and_not_an_environment_change() {
    let step = |i: usize| if i >= 30 { 1.10 } else { 1.0 };
    // Before the step: exit 0.
    let sb = Sandbox::new();
    seed(&sb.db(), 30, step, |_| "6.1.0");
    sb.run(["history", "--check", "--store", &sb.store()]).ok();
    // The first runs after it: one of them fails the check, the next passes.
    let mut failed_at = None;
    for n in 31..40 {
        let sb = Sandbox::new();
        seed(&sb.db(), n, step, |_| "6.1.0");
        let out = sb.run(["history", "--check", "--store", &sb.store()]);
        if out.code == 1 {
            assert!(
                out.stdout.contains("check: FAILED")
                    && out.stdout.contains("regression: `work` wall"),
                "{}",
                out.stdout
            );
            failed_at = Some(n);
            break;
        }
        assert_eq!(out.code, 0, "{}", out.stderr);
    }
    let n = failed_at.expect("a run after the step fails the check");
    // The same failure as JUnit: the series' case fails with the reason.
    let sb = Sandbox::new();
    seed(&sb.db(), n, step, |_| "6.1.0");
    let junit = sb.path("history.xml");
    let out = sb.run([
        "history",
        "--check",
        "--store",
        &sb.store(),
        "--export-junit",
        junit.to_str().unwrap(),
    ]);
    assert_eq!(out.code, 1, "{out:?}");
    if let Some(cases) = crate::common::junit_cases(&junit) {
        assert_eq!(cases.len(), 1, "{cases:?}");
        let c = &cases[0];
        assert_eq!(c["name"], "work · wall");
        assert_eq!(c["classname"], "work");
        assert_eq!(c["result"], "failure");
        assert_eq!(c["type"], "regression");
        assert!(
            c["message"]
                .as_str()
                .unwrap()
                .starts_with("regression: `work` wall: +"),
            "{c}"
        );
        assert_eq!(c["suite"], "history --check");
    }
    sb.run(["history", "--store", &sb.store(), "--export-junit", "x.xml"])
        .clap_error("--check");
    assert!(!sb.path("x.xml").exists());
    let sb = Sandbox::new();
    seed(&sb.db(), n + 1, step, |_| "6.1.0");
    sb.run(["history", "--check", "--store", &sb.store()]).ok();
    // The same step where the kernel changed does not fail.
    let sb = Sandbox::new();
    seed(
        &sb.db(),
        n,
        step,
        |i| if i >= 30 { "6.8.0" } else { "6.1.0" },
    );
    let out = sb
        .run([
            "history",
            "--check",
            "--store",
            &sb.store(),
            "--export-junit",
            "env.xml",
        ])
        .ok();
    assert!(
        out.stdout.contains("not failing, the environment changed"),
        "{}",
        out.stdout
    );
    if let Some(cases) = crate::common::junit_cases(&sb.path("env.xml")) {
        assert_eq!(cases[0]["result"], "passed", "{cases:?}");
        assert!(
            cases[0]["out"]
                .as_str()
                .unwrap()
                .contains("not failing, the environment changed"),
            "{cases:?}"
        );
    }
}

#[test]
fn compare_defaults_to_the_latest_stable_segment() {
    let sb = Sandbox::new();
    // 30 runs at one level, then 2 at +20 %, then the candidate.
    seed(
        &sb.db(),
        33,
        |i| if i >= 30 { 1.2 } else { 1.0 },
        |_| "6.1.0",
    );
    let out = sb
        .run(["compare", "--store", &sb.store(), "--format", "json"])
        .ok();
    let doc = parse_json(&out.stdout);
    let notes = doc["notes"].to_string();
    assert!(
        notes.contains("baseline: run 30, the last run of the latest stable segment"),
        "{notes}"
    );
}

#[test]
fn bad_input_is_a_usage_error() {
    let sb = Sandbox::new();
    seed(&sb.db(), 3, |_| 1.0, |_| "6.1.0");
    let store = sb.store();
    // Only the named benchmarks are read, yet the hint lists every stored one.
    let out = sb
        .run(["history", "nope", "--store", &store])
        .usage_error("no stored run has a benchmark `nope`");
    assert!(
        out.stderr.contains("stored benchmarks: work"),
        "{}",
        out.stderr
    );
    sb.run(["history", "--metric", "speed", "--store", &store])
        .usage_error("unknown metric `speed`");
    sb.run(["history", "--branch", "dev", "--store", &store])
        .usage_error("no complete run on branch `dev`");
    sb.run(["history", "--since", "2999-01-01", "--store", &store])
        .usage_error("is in the future");
    sb.run(["history", "--since", "not-a-rev", "--store", &store])
        .usage_error("neither a date");
    let out = sb.run(["history", "--store", &store]).ok();
    assert!(
        out.stdout
            .contains("3 points: change points need at least 4"),
        "{}",
        out.stdout
    );
    let missing = sb.path("missing.db");
    sb.run(["history", "--store", missing.to_str().unwrap()])
        .usage_error("");
    for (body, needle) in [
        ("a,b\n1,2\n3,x\n4,5\n", "line 3"),
        ("a,b\n1,2\n3,NaN\n4,5\n", "line 3"),
        ("a,b\n1,2\n3,\n4,5\n", "missing"),
        ("name\nx\ny\n", "no column of numbers"),
        ("", "empty"),
    ] {
        let f = sb.write("bad.csv", body);
        sb.run(["history", "fit", f.to_str().unwrap()])
            .usage_error(needle);
    }
    let f = sb.write("ok.csv", "commit,v\na,1\nb,2\n");
    sb.run(["history", "fit", f.to_str().unwrap(), "--column", "w"])
        .usage_error("no numeric column `w`");
    sb.run(["history", "fit", "/dev/zero"]).usage_error("");
}

#[test]
fn history_fit_gives_otava_s_change_points() {
    let sb = Sandbox::new();
    let csv = "time,commit,metric1,metric2
2026.01.01 3:00:00 +0100,aaa0,154023,10.43
2026.01.02 3:00:00 +0100,aaa1,138455,10.23
2026.01.03 3:00:00 +0100,aaa2,143112,10.29
2026.01.04 3:00:00 +0100,aaa3,149190,10.91
2026.01.05 3:00:00 +0100,aaa4,132098,10.34
2026.01.06 3:00:00 +0100,aaa5,151344,10.69
2026.01.07 3:00:00 +0100,aaa6,155145,9.23
2026.01.08 3:00:00 +0100,aaa7,148889,9.11
2026.01.09 3:00:00 +0100,aaa8,149466,9.13
2026.01.10 3:00:00 +0100,aaa9,148209,9.03
";
    let f = sb.write("local_sample.csv", csv);
    let out = sb
        .run([
            "history",
            "fit",
            f.to_str().unwrap(),
            "--min-change",
            "0",
            "--format",
            "json",
        ])
        .ok();
    let doc = parse_json(&out.stdout);
    assert!(doc["series"][0].get("change_points").is_none());
    let cp = &doc["series"][1]["change_points"][0];
    assert_eq!(
        (cp["index"].as_u64(), cp["after"].as_str()),
        (Some(6), Some("aaa6"))
    );
    assert!((cp["change"].as_f64().unwrap() * 100.0 + 12.943).abs() < 0.001);
    // Otava's tests/analysis_test.py single series, window 10, p 0.0001.
    let single = "v\n1.02\n0.95\n0.99\n1.00\n1.12\n1.00\n1.01\n0.98\n1.01\n0.96\n0.50\n0.51\n0.48\n0.48\n0.55\n0.50\n0.49\n0.51\n0.50\n0.49\n";
    let f = sb.write("single.csv", single);
    let out = sb
        .run([
            "history",
            "fit",
            f.to_str().unwrap(),
            "--window",
            "10",
            "--max-p",
            "0.0001",
            "--format",
            "json",
        ])
        .ok();
    let doc = parse_json(&out.stdout);
    assert_eq!(doc["series"][0]["change_points"][0]["index"], 10);
    assert_eq!(
        doc["series"][0]["change_points"].as_array().unwrap().len(),
        1
    );
    // Otava's divisive test sequence: changes at 5 and 8.
    let seq = "v\n0.3\n2.4\n1.5\n-0.9\n-0.5\n99.7\n98.3\n99.1\n149.0\n149.7\n149.5\n149.1\n148.8\n150.0\n";
    let f = sb.write("seq.csv", seq);
    let out = sb
        .run([
            "history",
            "fit",
            f.to_str().unwrap(),
            "--max-p",
            "0.01",
            "--format",
            "json",
        ])
        .ok();
    let doc = parse_json(&out.stdout);
    let idx: Vec<u64> = doc["series"][0]["change_points"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["index"].as_u64().unwrap())
        .collect();
    assert_eq!(idx, [5, 8]);
}

#[test]
fn history_of_real_runs() {
    let sb = Sandbox::new();
    for _ in 0..4 {
        sb.bench([
            "--runs", "3", "--warmup", "0", "--rounds", "1", "-n", "t", "true",
        ])
        .ok();
    }
    let out = sb
        .run(["history", "t", "--store", &sb.store(), "--format", "json"])
        .ok();
    let doc = parse_json(&out.stdout);
    let pts = doc["series"][0]["points"].as_array().unwrap();
    assert_eq!(pts.len(), 4);
    assert!(
        pts.iter()
            .all(|p| p["samples"] == 3 && p["value"].as_f64().unwrap() > 0.0)
    );
    let text = sb.run(["history", "--store", &sb.store()]).ok().stdout;
    assert!(
        text.contains("t · wall · walltime") && text.contains("latest:"),
        "{text}"
    );
}

/// One noise figure per series and metric (issue 34): after six runs of one
/// program, `history` and `compare` of its two newest runs learn the
/// between-run noise by one rule from the same runs, and print it alike.
#[test]
fn history_and_compare_show_one_noise_figure_for_a_series() {
    let sb = Sandbox::new();
    for _ in 0..6 {
        sb.bench(["--runs", "5", "-n", "t", "sleep 0.002"]).ok();
    }
    let store = sb.store();
    let history = parse_json(
        &sb.run([
            "history", "--metric", "wall", "--format", "json", "--store", &store,
        ])
        .ok()
        .stdout,
    );
    let series = &history["series"][0];
    let compare = parse_json(
        &sb.run([
            "compare", "latest~1", "latest", "--format", "json", "--store", &store,
        ])
        .ok()
        .stdout,
    );
    let row = compare["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["metric"] == "wall")
        .expect("a wall row");
    let (h, c) = (
        series["noise"].as_f64().unwrap(),
        row["noise"]["sd"].as_f64().unwrap(),
    );
    assert!((h - c).abs() < 1e-12, "history σ {h}, compare σ {c}");
    // Worded alike: the terminal outputs print the same "±x % per run (σ, …)".
    let figure = format!("±{:.1}% per run (σ, ", 100.0 * h);
    let text = sb
        .run(["history", "--metric", "wall", "--store", &store])
        .ok();
    assert!(text.stdout.contains(&figure), "{figure} in {}", text.stdout);
    let notes = row["notes"].to_string();
    assert!(notes.contains(&figure), "{figure} in {notes}");
}

/// Stores `n` complete runs of one benchmark through `ingest_run` (one
/// transaction each), every third on branch `feature`.
fn ingest(db: &std::path::Path, n: usize) {
    let mut store = SqliteStore::open(db).unwrap();
    for i in 0..n {
        let run = Run {
            id: None,
            uuid: None,
            started_at: format!(
                "2026-11-{:02}T{:02}:{:02}:00Z",
                1 + i / 1440,
                i / 60 % 24,
                i % 60
            ),
            ended_at: None,
            status: RunStatus::Complete,
            tool_version: "test".into(),
            git: Some(GitInfo {
                commit: format!("{i:07x}{}", "a".repeat(33)),
                branch: Some(if i % 3 == 0 { "feature" } else { "main" }.into()),
                dirty: false,
            }),
            mode: Mode::Walltime,
            options: serde_json::json!({}),
            environment: env("6.1.0"),
            benchmarks: vec![Benchmark {
                name: format!("work-{}", i % 7),
                command: "work".into(),
                argv: vec!["work".into()],
                samples: vec![Sample {
                    wall_ns: 1_000_000 + i as u64,
                    exit_code: Some(0),
                    ..Sample::default()
                }],
                ..Benchmark::default()
            }],
            probes: Vec::new(),
        };
        store.ingest_run(&run).unwrap();
    }
}

#[test]
fn runs_streams_pages_and_writes_what_one_document_would() {
    // More runs than one page of the listing (500), so every way of
    // listing crosses pages: the JSON must be the document the whole list
    // makes, the table one table, filters and limits exact across pages.
    let sb = Sandbox::new();
    ingest(&sb.db(), 1203);
    let store = sb.store();
    let listed = SqliteStore::open(&sb.db())
        .unwrap()
        .list_runs(None)
        .unwrap();
    let whole = perfsleuth_model::schema::to_json_pretty(&RunsDoc {
        schema: RunsDoc::SCHEMA.to_string(),
        schema_version: RunsDoc::VERSION,
        runs: listed,
    })
    .unwrap();
    let out = sb.run(["runs", "--json", "--store", &store]).ok();
    assert!(
        out.stdout == whole,
        "the streamed JSON differs from the document"
    );
    let table = sb.run(["runs", "--store", &store]).ok().stdout;
    let lines: Vec<&str> = table.lines().collect();
    assert_eq!(lines.len(), 1204, "{}", &table[..400]);
    assert!(lines[0].starts_with("ID "), "{}", lines[0]);
    // One table: each column starts where the header's does, on every page.
    let at = lines[0].find("STARTED").unwrap();
    for (i, l) in lines[1..].iter().enumerate() {
        assert_eq!(l[at..].chars().next(), Some('2'), "line {}: {l}", i + 1);
        assert_eq!(
            l[..at].trim(),
            (1203 - i).to_string(),
            "line {}: {l}",
            i + 1
        );
    }
    // Filters before the limit, across pages: the newest 600 of `feature`
    // are more than a page, and there are only 401 of them.
    let feature = sb
        .run([
            "runs", "--branch", "feature", "--limit", "600", "--json", "--store", &store,
        ])
        .ok();
    let ids: Vec<i64> = parse_json(&feature.stdout)["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_i64().unwrap())
        .collect();
    let want: Vec<i64> = (1..=1203).rev().filter(|id| (id - 1) % 3 == 0).collect();
    assert_eq!(ids, want);
    let some = sb
        .run(["runs", "--limit", "501", "--store", &store])
        .ok()
        .stdout;
    assert_eq!(some.lines().count(), 502);
    assert!(some.lines().last().unwrap().starts_with("703 "), "{some}");
    // The machine class by a prefix of its hash: every run here, or none.
    let class = parse_json(&out.stdout)["runs"][0]["comparability"]
        .as_str()
        .unwrap()
        .to_string();
    let same = sb
        .run(["runs", "--machine", &class[..12], "--store", &store])
        .ok()
        .stdout;
    assert_eq!(same, table);
    let other = sb
        .run(["runs", "--machine", "ffffffffffff", "--store", &store])
        .ok()
        .stdout;
    assert!(other.contains("matches the filters"), "{other}");
    // A limit of 0 is refused with the range; 10⁹ lists all.
    sb.run(["runs", "--limit", "0", "--store", &store])
        .usage_error("0 is not in 1..");
    let all = sb
        .run(["runs", "--limit", "1000000000", "--store", &store])
        .ok()
        .stdout;
    assert_eq!(all, table);
}

/// A history where every run is on another machine class (issue 53's edge
/// case): each class is its own series of one point, and none claims a
/// change or a noise figure it cannot have seen.
#[test]
fn one_run_per_machine_class_is_a_series_each_and_no_change_point() {
    let sb = Sandbox::new();
    const CPUS: [&str; 5] = ["CPU A", "CPU B", "CPU C", "CPU D", "CPU E"];
    // Every run twice as slow as the one before: only a series that mixed
    // the machines could show a step.
    seed_on(
        &sb.db(),
        5,
        |i| (1 << i) as f64,
        |i| {
            let mut e = env("6.1.0");
            e.set("cpu.model", CPUS[i], ImpactClass::Identity);
            e
        },
    );
    let out = sb
        .run([
            "history",
            "work",
            "--store",
            &sb.store(),
            "--format",
            "json",
        ])
        .ok();
    let doc = parse_json(&out.stdout);
    let series = doc["series"].as_array().unwrap();
    assert_eq!(series.len(), 5, "{}", out.stdout);
    let machines: std::collections::BTreeSet<&str> = series
        .iter()
        .filter_map(|s| s["machine"].as_str())
        .collect();
    assert_eq!(machines.len(), 5, "one series per machine class");
    for s in series {
        assert_eq!(s["points"].as_array().unwrap().len(), 1, "{s}");
        assert!(
            s["change_points"].as_array().is_none_or(|c| c.is_empty()),
            "{s}"
        );
    }
    // Nor does the text: each says why it has no segments.
    let text = sb
        .run(["history", "work", "--store", &sb.store()])
        .ok()
        .stdout;
    assert_eq!(
        text.matches("1 point: change points need at least 4")
            .count(),
        5,
        "{text}"
    );
    for cpu in CPUS {
        assert!(text.contains(&format!("{cpu}, 2 CPUs")), "{text}");
    }
}
