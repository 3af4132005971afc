//! `perfsleuth run --export-json/--export-csv/--export-markdown`.

use crate::common::{Sandbox, parse_json, samples};

fn read(sb: &Sandbox, rel: &str) -> String {
    std::fs::read_to_string(sb.path(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"))
}

#[test]
fn export_json_writes_the_versioned_document() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "3",
        "--export-json",
        "results.json",
        "true",
    ])
    .ok();
    let doc = parse_json(&read(&sb, "results.json"));
    assert_eq!(doc["schema"], "perfsleuth/run");
    assert!(
        doc["schema_version"].as_u64().is_some_and(|v| v >= 1),
        "{doc}"
    );
    assert_eq!(samples(&doc, 0).len(), 3);
    assert_eq!(doc["run"]["status"], "complete");
    assert_eq!(doc["run"]["id"], 1);
    let env = doc["run"]["environment"].as_object().expect("environment");
    assert!(env.contains_key("cpu.model"), "{env:?}");
    assert_eq!(doc["summary"]["benchmarks"][0]["runs"], 3);
}

#[test]
fn export_json_matches_the_stored_run() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "3",
        "--export-json",
        "results.json",
        "true",
        "echo x",
    ])
    .ok();
    let exported = parse_json(&read(&sb, "results.json"));
    let stored = sb.show_json("1");
    assert_eq!(exported["schema"], stored["schema"]);
    assert_eq!(exported["run"]["benchmarks"], stored["run"]["benchmarks"]);
    assert_eq!(exported["run"]["options"], stored["run"]["options"]);
    assert_eq!(exported["run"]["started_at"], stored["run"]["started_at"]);
    assert_eq!(
        exported["run"]["environment"]["cpu.model"],
        stored["run"]["environment"]["cpu.model"]
    );
}

#[test]
fn export_json_to_stdout_is_pure_json() {
    let sb = Sandbox::new();
    let out = sb
        .bench(["--warmup", "0", "--runs", "2", "--export-json", "-", "true"])
        .ok();
    let doc = parse_json(&out.stdout);
    assert_eq!(doc["schema"], "perfsleuth/run");
    assert_eq!(samples(&doc, 0).len(), 2);
    // The human summary moves to stderr.
    assert!(out.stderr.contains("Benchmark 1: true"), "{out:?}");
}

#[test]
fn export_json_works_without_a_store() {
    let sb = Sandbox::new();
    sb.run([
        "run",
        "--no-store",
        "--warmup",
        "0",
        "--runs",
        "2",
        "--export-json",
        "results.json",
        "true",
    ])
    .ok();
    let doc = parse_json(&read(&sb, "results.json"));
    assert_eq!(samples(&doc, 0).len(), 2);
    assert_eq!(doc["run"]["id"], serde_json::Value::Null);
    assert!(sb.files_named(".db").is_empty());
}

#[test]
fn export_csv_has_a_header_and_one_row_per_sample() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "1",
        "--runs",
        "3",
        "-n",
        "alpha",
        "-n",
        "beta",
        "--export-csv",
        "samples.csv",
        "true",
        "echo x",
    ])
    .ok();
    let text = read(&sb, "samples.csv");
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 1 + 6, "{text}");
    let header: Vec<&str> = lines[0].split(',').collect();
    assert_eq!(header[0], "benchmark");
    for col in ["iteration", "wall_ns", "exit_code"] {
        assert!(header.contains(&col), "{col} missing from {header:?}");
    }
    let iteration = header.iter().position(|c| *c == "iteration").unwrap();
    for row in &lines[1..] {
        assert_eq!(row.split(',').count(), header.len(), "{row}");
    }
    let firsts: Vec<&str> = lines[1..]
        .iter()
        .map(|r| r.split(',').next().unwrap())
        .collect();
    assert_eq!(firsts, ["alpha", "alpha", "alpha", "beta", "beta", "beta"]);
    let iterations: Vec<&str> = lines[1..]
        .iter()
        .map(|r| r.split(',').nth(iteration).unwrap())
        .collect();
    assert_eq!(iterations, ["0", "1", "2", "0", "1", "2"]);
}

#[test]
fn export_csv_to_stdout() {
    let sb = Sandbox::new();
    let out = sb
        .bench(["--warmup", "0", "--runs", "2", "--export-csv", "-", "true"])
        .ok();
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{out:?}");
    assert!(lines[0].starts_with("benchmark,"), "{out:?}");
}

#[test]
fn export_markdown_has_a_row_per_benchmark() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "2",
        "-n",
        "alpha",
        "-n",
        "beta",
        "--export-markdown",
        "table.md",
        "true",
        "echo x",
    ])
    .ok();
    let text = read(&sb, "table.md");
    let rows: Vec<&str> = text.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(rows.len(), 2 + 2, "header, separator, 2 rows: {text}");
    assert!(rows[1].contains("---"), "{text}");
    assert!(rows[2].contains("alpha"), "{text}");
    assert!(rows[3].contains("beta"), "{text}");
}

#[test]
fn all_three_exports_at_once() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "2",
        "--export-json",
        "a.json",
        "--export-csv",
        "a.csv",
        "--export-markdown",
        "a.md",
        "true",
    ])
    .ok();
    assert_eq!(samples(&parse_json(&read(&sb, "a.json")), 0).len(), 2);
    assert_eq!(read(&sb, "a.csv").lines().count(), 3);
    assert!(read(&sb, "a.md").contains("| `true`") || read(&sb, "a.md").contains("true"));
}

#[test]
fn export_into_a_missing_directory_fails_before_running() {
    for opt in ["--export-json", "--export-csv", "--export-markdown"] {
        let sb = Sandbox::new();
        sb.bench([
            opt,
            "no/such/dir/out.txt",
            "--shell",
            "sh",
            "echo ran >> marker",
        ])
        .usage_error("does not exist");
        assert!(!sb.path("marker").exists(), "{opt}: the command ran");
        assert!(!sb.db().exists(), "{opt}: a run was stored");
    }
}

#[test]
fn export_onto_a_directory_fails_before_running() {
    let sb = Sandbox::new();
    std::fs::create_dir(sb.path("adir")).unwrap();
    sb.bench([
        "--export-json",
        "adir",
        "--shell",
        "sh",
        "echo ran >> marker",
    ])
    .usage_error("is a directory");
    assert!(!sb.path("marker").exists());
    assert!(!sb.db().exists());
}

#[test]
fn failed_run_writes_no_export() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "2",
        "--export-json",
        "a.json",
        "false",
    ])
    .usage_error("exited with code 1");
    assert!(!sb.path("a.json").exists());
}

#[test]
fn csv_and_markdown_escape_special_names() {
    let sb = Sandbox::new();
    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "2",
        "-n",
        "a,b",
        "-n",
        "say \"hi\"",
        "-n",
        "x|y",
        "--export-csv",
        "s.csv",
        "--export-markdown",
        "t.md",
        "true",
        "true",
        "true",
    ])
    .ok();
    let csv = read(&sb, "s.csv");
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 6, "{csv}");
    assert!(rows[0].starts_with("\"a,b\","), "{csv}");
    assert!(rows[2].starts_with("\"say \"\"hi\"\"\","), "{csv}");
    let header_cols = csv.lines().next().unwrap().split(',').count();
    // The escaped comma does not add a column.
    assert!(rows[4].starts_with("x|y,"), "{csv}");
    assert_eq!(rows[4].split(',').count(), header_cols, "{csv}");
    let md = read(&sb, "t.md");
    let table: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
    assert_eq!(table.len(), 5, "{md}");
    let cells = |l: &str| l.replace("\\|", "").matches('|').count();
    assert!(
        table.iter().all(|l| cells(l) == cells(table[0])),
        "a `|` in a name must not add a column: {md}"
    );
}
