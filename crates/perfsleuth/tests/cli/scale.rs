//! `perfsleuth scale` and `perfsleuth scale fit` through the real binary:
//! the three throughput sources, storage, the chart, the CSV fit, and bad
//! input. Commands are tiny shell one-liners whose reported throughput is
//! exact, so assertions never depend on timing.

use crate::common::{Sandbox, parse_json};
use serde_json::Value;

/// `perfsleuth scale --store <sandbox> --warmup 0 --runs 2 ARGS…` (without
/// `--store` when ARGS has `--no-store`).
fn scale(sb: &Sandbox, args: &[&str]) -> crate::common::Out {
    let store = sb.store();
    let mut all = vec!["scale", "--warmup", "0", "--runs", "2"];
    if !args.contains(&"--no-store") {
        all.extend(["--store", store.as_str()]);
    }
    all.extend_from_slice(args);
    sb.run(all)
}

fn throughputs(doc: &Value) -> Vec<f64> {
    doc["points"]
        .as_array()
        .expect("points")
        .iter()
        .map(|p| p["throughput"].as_f64().expect("throughput"))
        .collect()
}

#[test]
fn regex_throughput_is_fitted_stored_and_shown_again() {
    let sb = Sandbox::new();
    let out = scale(
        &sb,
        &[
            "--param",
            "n=1,2,3,4,6",
            "--throughput-regex",
            r"ops/s: ([0-9.]+)",
            "--json",
            "--",
            "sh",
            "-c",
            "echo warming; echo ops/s: {n}000",
        ],
    )
    .ok();
    let doc = parse_json(&out.stdout);
    assert_eq!(doc["schema"], "perfsleuth/scale");
    assert_eq!(throughputs(&doc), [1000.0, 2000.0, 3000.0, 4000.0, 6000.0]);
    // Exactly linear data fits the linear model.
    assert_eq!(doc["fit"]["model"], "linear", "{doc}");
    assert_eq!(doc["fit"]["gamma"].as_f64(), Some(1000.0));
    assert_eq!(doc["points"][0]["runs"], 2);
    // /proc/stat ticks are 10 ms: runs this short may fall between two, so
    // the machine's split can be missing; the command's own CPU time is not.
    assert!(doc["points"][0]["command_cpus"].as_f64().is_some(), "{doc}");
    assert_eq!(doc["diagnosis"][0]["kind"], "scales_waiting", "{doc}");
    let run_id = doc["run_id"].as_i64().expect("stored");

    let runs = sb.runs_json();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "complete");
    let shown = sb.show_json(&run_id.to_string());
    let benches = shown["run"]["benchmarks"].as_array().expect("benchmarks");
    assert_eq!(benches.len(), 5);
    assert_eq!(benches[2]["parameters"]["n"], "3");
    let sample = &benches[2]["samples"][0];
    assert_eq!(
        sample["counters"]["throughput"].as_f64(),
        Some(3000.0),
        "{sample}"
    );

    let text = sb
        .run(["show", "--store", &sb.store(), &run_id.to_string()])
        .ok();
    assert!(text.stdout.contains("Fit (linear, α = β = 0)"), "{text:?}");
    assert!(text.stdout.contains("Diagnosis:"), "{text:?}");
}

#[test]
fn json_field_and_single_string_command_with_a_plot() {
    let sb = Sandbox::new();
    let plot = sb.path("usl.svg");
    let out = scale(
        &sb,
        &[
            "--param",
            "clients=1..4",
            "--throughput-json",
            "stats.rate",
            "--plot",
            plot.to_str().unwrap(),
            "--no-store",
            "--shell",
            "sh",
            r#"echo '{"stats": {"rate": {clients}5}}'"#,
        ],
    )
    .ok();
    assert!(out.stdout.starts_with("clients"), "{out:?}");
    assert!(out.stdout.contains("15"), "{out:?}");
    assert!(out.stdout.contains("45"), "{out:?}");
    let svg = std::fs::read_to_string(&plot).expect("chart written");
    assert!(svg.contains("<svg") && svg.trim_end().ends_with("</svg>"));
    assert!(out.stderr.contains("Chart written to"), "{out:?}");
    assert!(!sb.db().exists(), "--no-store must not create a store");
}

#[test]
fn work_per_thread_gives_a_rate_from_wall_time() {
    let sb = Sandbox::new();
    let out = scale(
        &sb,
        &[
            "--param",
            "threads=1,2,3,4",
            "--work-per-thread",
            "1000",
            "--json",
            "--",
            "sleep",
            "0.0{threads}",
        ],
    )
    .ok();
    let doc = parse_json(&out.stdout);
    let x = throughputs(&doc);
    // sleep 0.0N takes at least N/100 s: X ≤ 1000·N / (N/100) = 100k.
    assert!(x.iter().all(|v| *v > 0.0 && *v <= 100_000.0), "{x:?}");
    assert!(
        doc["warnings"]
            .as_array()
            .is_some_and(|w| w.iter().any(|w| w
                .as_str()
                .unwrap_or("")
                .contains("only 4 concurrency levels")))
    );
}

#[test]
fn bad_parameters_are_refused_before_anything_runs() {
    let sb = Sandbox::new();
    let base = ["--work", "100", "--", "sh", "-c", "true {n}"];
    let with = |param: &str| {
        let mut a = vec!["--param", param];
        a.extend_from_slice(&base);
        scale(&sb, &a)
    };
    with("n=4").usage_error("one value");
    with("n=1,two").usage_error("not a number");
    with("n=0,1").usage_error("greater than zero");
    with("n").usage_error("NAME=VALUES");
    scale(&sb, &["--param", "n=1,2", "--work", "100", "--", "true"])
        .usage_error("does not use {n}");
    scale(&sb, &["--param", "n=1,2", "--", "sh", "-c", "true {n}"]).clap_error("--work");
    scale(
        &sb,
        &[
            "--param",
            "n=1,2",
            "--throughput-regex",
            "([0-9]",
            "--",
            "sh",
            "-c",
            "true {n}",
        ],
    )
    .usage_error("not a valid regular expression");
    scale(
        &sb,
        &[
            "--param", "n=1,2", "--work", "-5", "--", "sh", "-c", "true {n}",
        ],
    )
    .clap_error("positive");
    scale(
        &sb,
        &["--param", "n=1,2", "--work", "5", "--", "./missing-{n}"],
    )
    .usage_error("not found");
    assert!(!sb.db().exists(), "nothing is stored for refused input");
}

#[test]
fn failures_at_one_level_name_it_and_leave_a_failed_run() {
    let sb = Sandbox::new();
    scale(
        &sb,
        &[
            "--param",
            "n=1,2,3",
            "--work",
            "10",
            "--",
            "sh",
            "-c",
            "test {n} -lt 3 || { echo broken >&2; exit 3; }",
        ],
    )
    .usage_error("(n=3) exited with code 3");
    let runs = sb.runs_json();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["status"], "failed");

    scale(
        &sb,
        &[
            "--param",
            "n=1,2",
            "--throughput-regex",
            "rate=([0-9]+)",
            "--",
            "sh",
            "-c",
            "echo nope {n}",
        ],
    )
    .usage_error("matched no number in the output at n=");

    scale(
        &sb,
        &[
            "--param",
            "n=1,2",
            "--throughput-regex",
            "rate=([0-9.]+)",
            "--",
            "sh",
            "-c",
            "echo rate=0 {n}",
        ],
    )
    .usage_error("must be a positive number");

    scale(
        &sb,
        &[
            "--param",
            "n=1,2",
            "--throughput-json",
            "rate",
            "--",
            "sh",
            "-c",
            "echo '{\"other\": {n}}'",
        ],
    )
    .usage_error("no JSON line with a numeric field `rate`");
    let statuses: Vec<String> = sb
        .runs_json()
        .iter()
        .map(|r| r["status"].as_str().unwrap_or_default().to_string())
        .collect();
    assert_eq!(
        statuses, ["failed"; 4],
        "every attempt is stored with its status"
    );
}

#[test]
fn two_or_three_levels_measure_but_do_not_fit() {
    let sb = Sandbox::new();
    let out = scale(
        &sb,
        &[
            "--param",
            "n=1,2",
            "--work",
            "10",
            "--no-store",
            "--",
            "sh",
            "-c",
            "true {n}",
        ],
    )
    .ok();
    assert!(
        out.stdout.contains("no fit: 2 concurrency levels measured"),
        "{out:?}"
    );
}

const CISCO: [f64; 32] = [
    955.16, 1878.91, 2688.01, 3548.68, 4315.54, 5130.43, 5931.37, 6531.08, 7219.8, 7867.61,
    8278.71, 8646.7, 9047.84, 9426.55, 9645.37, 9897.24, 10097.6, 10240.5, 10532.39, 10798.52,
    11151.43, 11518.63, 11806.0, 12089.37, 12075.41, 12177.29, 12211.41, 12158.93, 12155.27,
    12118.04, 12140.4, 12074.39,
];

#[test]
fn scale_fit_reads_a_csv_and_matches_the_reference_fit() {
    let sb = Sandbox::new();
    let mut csv = String::from("N,X\n");
    for (i, x) in CISCO.iter().enumerate() {
        csv.push_str(&format!("{},{x}\n", i + 1));
    }
    let file = sb.write("cisco.csv", &csv);
    let out = sb
        .run(["scale", "fit", file.to_str().unwrap(), "--json"])
        .ok();
    let doc = parse_json(&out.stdout);
    let close = |v: &Value, want: f64| {
        let got = v.as_f64().expect("number");
        assert!(((got - want) / want).abs() < 1e-3, "{got} vs {want}");
    };
    close(&doc["fit"]["alpha"], 0.02671591);
    close(&doc["fit"]["beta"], 7.690945e-4);
    close(&doc["fit"]["gamma"], 995.6486);
    assert!(
        doc["fit"]["n_star"]
            .as_f64()
            .is_some_and(|n| (34.0..36.0).contains(&n))
    );

    let plot = sb.path("cisco.svg");
    let text = sb
        .run([
            "scale",
            "fit",
            file.to_str().unwrap(),
            "--plot",
            plot.to_str().unwrap(),
        ])
        .ok();
    assert!(text.stdout.contains("N* = 35"), "{text:?}");
    assert!(plot.exists());
}

#[test]
fn scale_fit_bad_files() {
    let sb = Sandbox::new();
    let bad = sb.write("bad.csv", "N,X\n1,10\n2,oops\n");
    sb.run(["scale", "fit", bad.to_str().unwrap()])
        .usage_error("line 3: throughput \"oops\" is not a number");
    let few = sb.write("few.csv", "N,X\n1,10\n2,20\n3,30\n");
    sb.run(["scale", "fit", few.to_str().unwrap()])
        .usage_error("at least 4");
    sb.run(["scale", "fit", "missing.csv"])
        .usage_error("cannot read missing.csv");
    let neg = sb.write("neg.csv", "N,X\n1,10\n2,-20\n");
    sb.run(["scale", "fit", neg.to_str().unwrap()])
        .usage_error("must be positive");
}
