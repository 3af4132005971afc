//! Real output of the real binary validates against the JSON Schemas
//! committed under `docs/schema/` (generated from the types in
//! `perfsleuth_model::schema`; `perfsleuth-model`'s `schema_files` test keeps
//! them in step with the types). Each test runs short commands: `true`
//! benchmarks, quick probes and a sweep of shell one-liners.

use crate::common::{Out, Sandbox, parse_json};
use serde_json::Value;

/// Validates `doc` against `docs/schema/<stem>.schema.json`, listing every violation.
#[track_caller]
pub(crate) fn assert_valid(stem: &str, doc: &Value) {
    let path = format!(
        "{}/../../docs/schema/{stem}.schema.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let schema = parse_json(&text);
    let validator = jsonschema::validator_for(&schema)
        .unwrap_or_else(|e| panic!("{path} is not a valid JSON Schema: {e}"));
    let errors: Vec<String> = validator
        .iter_errors(doc)
        .map(|e| format!("{} (at {})", e, e.instance_path()))
        .collect();
    assert!(
        errors.is_empty(),
        "{stem}: output does not match its schema:\n{}\n{doc:#}",
        errors.join("\n")
    );
}

/// The JSON a command printed, whatever its exit code (gating commands exit 1 or 2).
#[track_caller]
fn stdout_json(out: &Out, codes: &[i32]) -> Value {
    assert!(codes.contains(&out.code), "{out:?}");
    parse_json(&out.stdout)
}

#[test]
fn run_exports_runs_show_and_compare_validate() {
    let sb = Sandbox::new();
    for file in ["a.json", "b.json"] {
        sb.bench([
            "--warmup",
            "0",
            "--runs",
            "3",
            "--export-json",
            file,
            "true",
        ])
        .ok();
    }
    let read = |f: &str| parse_json(&std::fs::read_to_string(sb.path(f)).expect("export"));
    let a = read("a.json");
    assert_valid("run", &a);
    assert_valid("run", &read("b.json"));
    assert_valid("run", &sb.show_json("1"));

    let runs = sb.run(["runs", "--json", "--store", &sb.store()]).ok();
    assert_valid("runs", &parse_json(&runs.stdout));

    let cmp = sb
        .run(["compare", "--format", "json", "a.json", "b.json"])
        .ok();
    let doc = parse_json(&cmp.stdout);
    assert_valid("compare", &doc);
    assert!(!doc["rows"].as_array().expect("rows").is_empty(), "{doc}");

    // Two benchmarks give the summary a comparison object.
    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "5",
        "--export-json",
        "two.json",
        "true",
        "sleep 0.001",
    ])
    .ok();
    let two = read("two.json");
    assert_valid("run", &two);
    assert!(
        two["summary"]["comparisons"][0]["time"].is_object(),
        "{two}"
    );

    // The stored environment, and what changed between the two exports.
    let env = sb
        .run(["env", "show", "--json", "--store", &sb.store(), "1"])
        .ok();
    assert_valid("environment", &parse_json(&env.stdout));
    let diff = sb.run(["env", "diff", "--json", "--all", "a.json", "b.json"]);
    assert_valid("env-diff", &stdout_json(&diff, &[0, 1]));
}

#[test]
fn env_show_and_check_validate() {
    let sb = Sandbox::new();
    let show = sb.run(["env", "show", "--json"]).ok();
    let doc = parse_json(&show.stdout);
    assert_valid("environment", &doc);
    // The file `env show --json` writes is a side `env diff` reads.
    sb.write("env.json", &show.stdout);
    let diff = sb.run(["env", "diff", "--json", "env.json", "current"]);
    assert_valid("env-diff", &stdout_json(&diff, &[0, 1]));
    let check = sb.run(["env", "check", "--json"]);
    assert_valid("env-check", &stdout_json(&check, &[0, 2]));
}

#[test]
fn probe_and_probe_diff_validate() {
    let sb = Sandbox::new();
    let mut sides = Vec::new();
    for file in ["p1.json", "p2.json"] {
        let out = sb
            .run([
                "probe",
                "--quick",
                "--json",
                "--no-store",
                "calls",
                "syscall",
            ])
            .ok();
        let doc = parse_json(&out.stdout);
        assert_valid("probe", &doc);
        sb.write(file, &out.stdout);
        sides.push(file);
    }
    let diff = sb.run(["probe", "diff", "--json", sides[0], sides[1]]);
    let doc = stdout_json(&diff, &[0, 1]);
    assert_valid("probe-diff", &doc);
    assert!(
        !doc["deltas"].as_array().expect("deltas").is_empty(),
        "{doc}"
    );
}

/// `perfsleuth scale --no-store --json` over `n` with a throughput of n × 1000.
fn sweep(sb: &Sandbox, levels: &str) -> Value {
    let param = format!("n={levels}");
    let out = sb
        .run([
            "scale",
            "--warmup",
            "0",
            "--runs",
            "2",
            "--no-store",
            "--param",
            &param,
            "--throughput-regex",
            r"ops/s: ([0-9.]+)",
            "--json",
            "--",
            "sh",
            "-c",
            "echo ops/s: {n}000",
        ])
        .ok();
    parse_json(&out.stdout)
}

#[test]
fn scale_sweeps_and_fit_validate() {
    let sb = Sandbox::new();
    let doc = sweep(&sb, "1,2,3,4");
    assert_valid("scale", &doc);
    assert!(doc["fit"].is_object(), "{doc}");
    // Too few levels for a fit: `fit` is null and `fit_error` says why.
    let doc = sweep(&sb, "1,2");
    assert_valid("scale", &doc);
    assert!(
        doc["fit"].is_null() && doc["fit_error"].is_string(),
        "{doc}"
    );

    let file = sb.write("usl.csv", "N,X\n1,100\n2,190\n4,330\n8,480\n16,520\n");
    let fit = sb
        .run(["scale", "fit", file.to_str().expect("utf-8"), "--json"])
        .ok();
    let doc = parse_json(&fit.stdout);
    assert_valid("scale", &doc);
    assert!(doc["fit"].is_object() && doc["run_id"].is_null(), "{doc}");
}

#[test]
fn the_schemas_reject_what_the_types_reject() {
    let sb = Sandbox::new();
    let runs = sb.run(["runs", "--json", "--store", &sb.store()]);
    // No store yet: a usage error, not a document.
    assert_eq!(runs.code, 2, "{runs:?}");
    let path = format!(
        "{}/../../docs/schema/runs.schema.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let schema = parse_json(&std::fs::read_to_string(path).expect("runs schema"));
    let validator = jsonschema::validator_for(&schema).expect("a valid schema");
    let ok = serde_json::json!({"schema": "perfsleuth/runs", "schema_version": 1, "runs": []});
    assert!(validator.is_valid(&ok));
    for bad in [
        serde_json::json!({"schema": "perfsleuth/run", "schema_version": 1, "runs": []}),
        serde_json::json!({"schema": "perfsleuth/runs", "schema_version": 2, "runs": []}),
        serde_json::json!({"schema": "perfsleuth/runs", "schema_version": 1, "runs": [{"id": "x"}]}),
    ] {
        assert!(!validator.is_valid(&bad), "{bad}");
    }
}

#[test]
fn the_hyperfine_export_validates_against_its_schema() {
    let sb = Sandbox::new();
    sb.bench([
        "--runs",
        "3",
        "--export-hyperfine",
        "h.json",
        "-L",
        "t",
        "0.001,0.002",
        "sleep {t}",
    ])
    .ok();
    let doc = parse_json(&std::fs::read_to_string(sb.path("h.json")).unwrap());
    assert_valid("hyperfine", &doc);
}

#[test]
fn explain_validates_planned_measured_and_against_this_machine() {
    // Slower by 20 ms where GOGC is set: a difference for explain to name.
    const CMD: &str = "sh -c 'test -z \"$GOGC\" || sleep 0.02'";
    let sb = Sandbox::new();
    sb.bench(["--warmup", "0", "--runs", "6", CMD]).ok();
    let out: Out = sb
        .cmd()
        .args([
            "run",
            "--store",
            &sb.store(),
            "--warmup",
            "0",
            "--runs",
            "6",
        ])
        .env("GOGC", "50")
        .arg(CMD)
        .output()
        .expect("start perfsleuth")
        .into();
    out.ok();
    let store = sb.store();
    for extra in [&["--plan"][..], &[], &["current"]] {
        let mut args = vec!["explain", "--store", &store, "--format", "json", "1"];
        if extra == ["current"] {
            args.push("current");
        } else {
            args.push("2");
            args.extend(extra);
        }
        args.extend(["--runs", "6", "--rounds", "2"]);
        let out = sb.run(&args).ok();
        let doc = parse_json(&out.stdout);
        assert_valid("explain", &doc);
        if extra.is_empty() {
            assert_eq!(
                doc["benchmarks"][0]["findings"][0]["experiment"], "env.GOGC",
                "{doc:#}"
            );
        }
    }
}
