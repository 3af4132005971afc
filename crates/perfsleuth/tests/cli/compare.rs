//! `perfsleuth compare` and `perfsleuth run --baseline`: selectors, output
//! formats, the CI gate, the verdict options, environment attribution and
//! bad input, through the real binary.
//!
//! Real runs differ by a factor (`sleep 0.01` vs `sleep 0.03`) so verdicts do
//! not hinge on timing noise; where a test needs an exact effect it edits the
//! samples of an exported JSON run, which makes the verdict deterministic (the
//! bootstrap is seeded).

use crate::common::{Out, Sandbox, parse_json};
use perfsleuth_compare::{MACHINES_DIFFER, SAME_BINARY_NOTE};
use serde_json::Value;
use std::process::Command;

/// Every verdict string a row can carry.
const VERDICTS: [&str; 7] = [
    "regressed",
    "improved",
    "no change",
    "inconclusive",
    "insufficient data",
    "environment changed",
    "not compared",
];

// ---------------------------------------------------------------- helpers

/// `perfsleuth run --warmup 0 --runs 12 ARGS…` into the sandbox store; must succeed.
fn bench(sb: &Sandbox, args: &[&str]) -> Out {
    let mut all = vec!["--warmup", "0", "--runs", "12"];
    all.extend_from_slice(args);
    sb.bench(all).ok()
}

/// `perfsleuth compare --store <sandbox store> ARGS…`.
fn compare(sb: &Sandbox, args: &[&str]) -> Out {
    let store = sb.store();
    let mut all = vec!["compare", "--store", store.as_str()];
    all.extend_from_slice(args);
    sb.run(all)
}

/// `compare … --format json`, which must exit 0, parsed.
#[track_caller]
fn compare_json(sb: &Sandbox, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    let doc = parse_json(&compare(sb, &all).ok().stdout);
    assert_eq!(doc["schema"], "perfsleuth/compare", "{doc}");
    doc
}

fn read_json(sb: &Sandbox, rel: &str) -> Value {
    let text = std::fs::read_to_string(sb.path(rel)).unwrap_or_else(|e| panic!("read {rel}: {e}"));
    parse_json(&text)
}

fn write_json(sb: &Sandbox, rel: &str, doc: &Value) {
    sb.write(rel, serde_json::to_string_pretty(doc).unwrap());
}

/// Writes `to` as a copy of the export `from` changed by `edit`.
fn derive(sb: &Sandbox, from: &str, to: &str, edit: impl FnOnce(&mut Value)) {
    let mut doc = read_json(sb, from);
    edit(&mut doc);
    write_json(sb, to, &doc);
}

/// Calls `f(index, sample)` for every sample of every benchmark of an export.
fn each_sample(doc: &mut Value, mut f: impl FnMut(usize, &mut Value)) {
    for b in doc["run"]["benchmarks"].as_array_mut().expect("benchmarks") {
        for (i, s) in b["samples"]
            .as_array_mut()
            .expect("samples")
            .iter_mut()
            .enumerate()
        {
            f(i, s);
        }
    }
}

fn scale_wall(doc: &mut Value, factor: f64) {
    each_sample(doc, |_, s| {
        let ns = s["wall_ns"].as_f64().expect("wall_ns");
        s["wall_ns"] = Value::from((ns * factor).round() as u64);
    });
}

/// Gives wall, user, sys and peak RSS fixed, distinct values (the same in
/// every file derived this way), so verdicts on derived files never depend on
/// how noisy the machine was during the real run (a busy CI host once spread
/// the raw walls so far that a ×1.5 change had a CI reaching below +30 %).
fn steady(doc: &mut Value) {
    each_sample(doc, |i, s| {
        let i = i as u64;
        s["wall_ns"] = Value::from(10_000_000 + (i % 5) * 20_000);
        s["user_ns"] = Value::from(1_000_000 + i * 10_000);
        s["sys_ns"] = Value::from(500_000 + i * 10_000);
        s["peak_rss_bytes"] = Value::from(64 * 1024 * 1024 + i * 4096);
    });
}

fn set_fact(doc: &mut Value, key: &str, value: &str) {
    let fact = &mut doc["run"]["environment"][key];
    assert!(fact.is_object(), "no fact {key} in the export");
    fact["value"] = Value::from(value);
}

/// One real run of `sleep 0.01` named `work`, exported as `raw.json`; then
/// `a.json` (user/sys/RSS made steady) and `slow.json` (the same with every
/// wall time × 1.5: a clear, deterministic +50 % regression).
fn template(sb: &Sandbox) {
    bench(
        sb,
        &["--export-json", "raw.json", "-n", "work", "sleep 0.01"],
    );
    derive(sb, "raw.json", "a.json", steady);
    derive(sb, "a.json", "slow.json", |d| scale_wall(d, 1.5));
}

/// The row of `benchmark` and `metric` in a compare JSON document.
#[track_caller]
fn row<'a>(doc: &'a Value, benchmark: &str, metric: &str) -> &'a Value {
    doc["rows"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["benchmark"] == benchmark && r["metric"] == metric)
        .unwrap_or_else(|| panic!("no row {benchmark}/{metric} in {doc:#}"))
}

#[track_caller]
fn verdict(doc: &Value, benchmark: &str, metric: &str) -> String {
    row(doc, benchmark, metric)["verdict"]
        .as_str()
        .expect("verdict string")
        .to_string()
}

fn notes(row: &Value) -> Vec<String> {
    row["notes"]
        .as_array()
        .expect("notes")
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect()
}

/// The metric column of each row of the terminal table.
fn table_metrics(stdout: &str) -> Vec<String> {
    let mut lines = stdout.lines().skip_while(|l| !l.starts_with("benchmark "));
    lines.next().expect("a table header");
    lines
        .take_while(|l| !l.trim().is_empty())
        .map(|l| {
            let t: Vec<&str> = l.split_whitespace().collect();
            if l.starts_with(' ') { t[0] } else { t[1] }.to_string()
        })
        .collect()
}

/// The table line of `metric` (the first row of a benchmark carries its name).
#[track_caller]
fn table_line<'a>(stdout: &'a str, metric: &str) -> &'a str {
    stdout
        .lines()
        .skip_while(|l| !l.starts_with("benchmark "))
        .skip(1)
        .take_while(|l| !l.trim().is_empty())
        .find(|l| l.split_whitespace().take(2).any(|t| t == metric))
        .unwrap_or_else(|| panic!("no table row for {metric}:\n{stdout}"))
}

/// `git -c user.name=x -c user.email=y ARGS…` in the sandbox.
#[track_caller]
fn git(sb: &Sandbox, args: &[&str]) {
    let out = Command::new("git")
        .current_dir(sb.root())
        .env("HOME", sb.path("home"))
        .env("XDG_CONFIG_HOME", sb.path("home"))
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env(
            "GIT_CEILING_DIRECTORIES",
            sb.root().parent().expect("a parent"),
        )
        .env_remove("GIT_DIR")
        .env_remove("GIT_WORK_TREE")
        .args(["-c", "user.name=x", "-c", "user.email=y@example.com"])
        .args(["-c", "commit.gpgsign=false"])
        .args(args)
        .output()
        .expect("run git");
    assert!(
        out.status.success(),
        "git {args:?} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A git repository on branch `main` in the sandbox, with the sandbox's own
/// files (home, store, exports) excluded.
fn git_init(sb: &Sandbox) {
    git(sb, &["init", "-q", "-b", "main"]);
    let exclude = sb.path(".git/info/exclude");
    let mut text = std::fs::read_to_string(&exclude).unwrap_or_default();
    text.push_str("home/\nxdg/\nr.db*\n*.json\n*.toml\nsub/\n");
    std::fs::write(exclude, text).unwrap();
}

fn commit(sb: &Sandbox, contents: &str) {
    sb.write("code.txt", contents);
    git(sb, &["add", "code.txt"]);
    git(sb, &["commit", "-q", "-m", contents]);
}

// ---------------------------------------------------------------- defaults

#[test]
fn default_compares_the_latest_run_with_the_one_before() {
    let sb = Sandbox::new();
    bench(&sb, &["-n", "work", "sleep 0.01"]);
    bench(&sb, &["-n", "work", "sleep 0.03"]);
    let out = compare(&sb, &[]).ok();
    assert!(
        out.stdout
            .starts_with("baseline: run 1   candidate: run 2\n"),
        "{out:?}"
    );
    let header = out
        .stdout
        .lines()
        .find(|l| l.starts_with("benchmark "))
        .unwrap_or_else(|| panic!("no table header: {out:?}"));
    for column in [
        "metric",
        "baseline",
        "candidate",
        "change [95% CI]",
        "p",
        "verdict",
    ] {
        assert!(header.contains(column), "{header:?} lacks {column}");
    }
    let metrics = table_metrics(&out.stdout);
    assert_eq!(metrics, ["wall*", "cpu", "peak_rss"], "{out:?}");
    let wall = table_line(&out.stdout, "wall*");
    assert!(wall.starts_with("work "), "{wall:?}");
    assert!(wall.ends_with("regressed"), "{wall:?}");
    for metric in ["cpu", "peak_rss"] {
        let line = table_line(&out.stdout, metric);
        assert!(
            VERDICTS.iter().any(|v| line.ends_with(v)),
            "{line:?} ends in no verdict"
        );
    }
    assert!(out.stdout.contains("* gating metric"), "{out:?}");
    // Only wall is controlled here; CPU time may move either way.
    assert!(
        out.stdout
            .lines()
            .any(|l| l.starts_with("summary: ") && l.contains("regressed")),
        "{out:?}"
    );
    // Different arguments: not "the same binary".
    assert!(!out.stdout.contains(SAME_BINARY_NOTE), "{out:?}");
    assert!(
        !out.stdout.contains('\x1b'),
        "colour without a TTY: {out:?}"
    );
}

// ---------------------------------------------------------------- selectors

#[test]
fn run_ids_latest_and_latest_tilde_select_runs() {
    let sb = Sandbox::new();
    bench(&sb, &["-n", "work", "sleep 0.01"]);
    bench(&sb, &["-n", "work", "sleep 0.03"]);
    bench(&sb, &["-n", "work", "sleep 0.01"]);

    let doc = compare_json(&sb, &["1", "2"]);
    assert_eq!(
        (doc["baseline"].as_str(), doc["candidate"].as_str()),
        (Some("run 1"), Some("run 2"))
    );
    assert_eq!(verdict(&doc, "work", "wall"), "regressed");

    let doc = compare_json(&sb, &["latest~1", "latest"]);
    assert_eq!(
        (doc["baseline"].as_str(), doc["candidate"].as_str()),
        (Some("run 2"), Some("run 3"))
    );
    assert_eq!(verdict(&doc, "work", "wall"), "improved");

    // One side given: it is the baseline, the candidate is the latest run.
    let doc = compare_json(&sb, &["2"]);
    assert_eq!(
        (doc["baseline"].as_str(), doc["candidate"].as_str()),
        (Some("run 2"), Some("run 3"))
    );

    // No side given: latest vs the run before it.
    let doc = compare_json(&sb, &[]);
    assert_eq!(
        (doc["baseline"].as_str(), doc["candidate"].as_str()),
        (Some("run 2"), Some("run 3"))
    );

    let doc = compare_json(&sb, &["latest~2", "latest~1"]);
    assert_eq!(
        (doc["baseline"].as_str(), doc["candidate"].as_str()),
        (Some("run 1"), Some("run 2"))
    );
    assert_eq!(verdict(&doc, "work", "wall"), "regressed");
}

#[test]
fn exported_files_compare_without_opening_any_store() {
    let made = Sandbox::new();
    bench(
        &made,
        &["--export-json", "a.json", "-n", "work", "sleep 0.01"],
    );
    bench(
        &made,
        &["--export-json", "b.json", "-n", "work", "sleep 0.03"],
    );

    let sb = Sandbox::new();
    for f in ["a.json", "b.json"] {
        std::fs::copy(made.path(f), sb.path(f)).unwrap();
    }
    let missing = sb.path("missing/r.db");
    let store = format!("sqlite:{}", missing.display());
    let out = sb
        .run(["compare", "--store", &store, "a.json", "b.json"])
        .ok();
    assert!(
        out.stdout
            .starts_with("baseline: a.json   candidate: b.json\n"),
        "{out:?}"
    );
    assert!(
        table_line(&out.stdout, "wall*").ends_with("regressed"),
        "{out:?}"
    );
    assert!(!missing.exists() && !sb.path("missing").exists());

    // Absolute paths, and no --store at all: the default store is not created either.
    let (a, b) = (sb.path("a.json"), sb.path("b.json"));
    let out = sb
        .run([
            "compare".as_ref(),
            "--format".as_ref(),
            "json".as_ref(),
            a.as_os_str(),
            b.as_os_str(),
        ])
        .ok();
    let doc = parse_json(&out.stdout);
    assert_eq!(verdict(&doc, "work", "wall"), "regressed");
    assert_eq!(doc["baseline"].as_str(), a.to_str());
    assert!(
        sb.files_named(".db").is_empty(),
        "a store was created: {:?}",
        sb.files_named(".db")
    );
}

#[test]
fn git_revisions_and_branches_select_their_runs() {
    let sb = Sandbox::new();
    git_init(&sb);
    commit(&sb, "one");
    bench(&sb, &["-n", "work", "sleep 0.01"]);
    git(&sb, &["checkout", "-q", "-b", "feature"]);
    commit(&sb, "two");
    bench(&sb, &["-n", "work", "sleep 0.03"]);

    let out = compare(&sb, &["HEAD~1", "HEAD"]).ok();
    assert!(
        out.stdout
            .starts_with("baseline: HEAD~1 (run 1)   candidate: HEAD (run 2)\n"),
        "{out:?}"
    );
    assert!(
        table_line(&out.stdout, "wall*").ends_with("regressed"),
        "{out:?}"
    );

    let out = compare(&sb, &["main", "HEAD"]).ok();
    assert!(
        out.stdout
            .starts_with("baseline: main (run 1)   candidate: HEAD (run 2)\n"),
        "{out:?}"
    );
    let out = compare(&sb, &["main", "feature"]).ok();
    assert!(
        out.stdout
            .starts_with("baseline: main (run 1)   candidate: feature (run 2)\n"),
        "{out:?}"
    );

    // A second complete run at HEAD: the revision's side holds both.
    bench(&sb, &["-n", "work", "sleep 0.03"]);
    let doc = compare_json(&sb, &["HEAD~1", "HEAD"]);
    assert_eq!(doc["baseline"], "HEAD~1 (run 1)");
    assert_eq!(doc["candidate"], "HEAD (2 runs)");
    let wall = row(&doc, "work", "wall");
    assert_eq!(wall["n_baseline"], 12);
    assert_eq!(wall["n_candidate"], 24);
    assert_eq!(wall["verdict"], "regressed");
    // A branch still means its latest run.
    assert_eq!(
        compare_json(&sb, &["main", "feature"])["candidate"],
        "feature (run 3)"
    );
    // A full commit hash works like HEAD.
    let head = std::fs::read_to_string(sb.path(".git/refs/heads/feature")).unwrap();
    let doc = compare_json(&sb, &["main", head.trim()]);
    assert_eq!(doc["candidate"], format!("{} (2 runs)", head.trim()));
}

#[test]
fn branches_and_revisions_with_a_slash_select_their_runs() {
    let sb = Sandbox::new();
    git_init(&sb);
    commit(&sb, "one");
    bench(&sb, &["-n", "work", "sleep 0.01"]);
    git(&sb, &["checkout", "-q", "-b", "topic/slower"]);
    commit(&sb, "two");
    bench(&sb, &["-n", "work", "sleep 0.03"]);
    let doc = compare_json(&sb, &["main", "topic/slower"]);
    assert_eq!(doc["candidate"], "topic/slower (run 2)");
    assert_eq!(verdict(&doc, "work", "wall"), "regressed");
    let doc = compare_json(&sb, &["topic/slower~1", "HEAD"]);
    assert_eq!(doc["baseline"], "topic/slower~1 (run 1)");
}

#[test]
fn revisions_without_runs_and_unknown_revisions_are_usage_errors() {
    let sb = Sandbox::new();
    git_init(&sb);
    commit(&sb, "one");
    bench(&sb, &["-n", "work", "sleep 0.01"]);
    commit(&sb, "two");
    compare(&sb, &["HEAD~1", "HEAD"]).usage_error("no complete run is stored for HEAD");
    compare(&sb, &["HEAD~1", "nosuchrev"]).usage_error("`nosuchrev` is not a stored run");
    compare(&sb, &["nosuchbranch", "HEAD~1"]).usage_error("`nosuchbranch`");
    compare(&sb, &["HEAD~5", "HEAD~1"]).usage_error("`HEAD~5`");
}

#[test]
fn a_run_uuid_selects_its_run_as_on_the_server() {
    // One home for selectors (perfsleuth-sides): the CLI takes the UUIDs the
    // server's URLs and `runs --json` show, and a path-like name that is no
    // file, branch or revision says so.
    let sb = Sandbox::new();
    bench(&sb, &["-n", "work", "sleep 0.01"]);
    bench(&sb, &["-n", "work", "sleep 0.01"]);
    let store = sb.store();
    let runs = parse_json(
        &sb.run(["runs", "--json", "--store", store.as_str()])
            .ok()
            .stdout,
    );
    let uuid = |id: i64| {
        runs["runs"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["id"] == id)
            .and_then(|r| r["uuid"].as_str())
            .unwrap_or_else(|| panic!("run {id} has a uuid: {runs}"))
            .to_string()
    };
    let (first, second) = (uuid(1), uuid(2));
    let doc = compare_json(&sb, &[&first, &second.to_uppercase()]);
    assert_eq!(doc["baseline"], "run 1", "{doc}");
    assert_eq!(doc["candidate"], "run 2", "{doc}");
    compare(&sb, &["5b0f4a9e-0000-4000-8000-000000000001", "latest"])
        .usage_error("run 5b0f4a9e-0000-4000-8000-000000000001 not found");
    compare(&sb, &["feature/none", "latest"])
        .usage_error("feature/none: no such file, and no branch or revision of that name");
}

// ---------------------------------------------------------------- formats

#[test]
fn terminal_output_is_a_table_with_optional_colour() {
    let sb = Sandbox::new();
    template(&sb);
    let out = compare(&sb, &["a.json", "slow.json"]).ok();
    assert_eq!(
        table_metrics(&out.stdout),
        ["wall*", "cpu", "peak_rss"],
        "{out:?}"
    );
    // A program that sleeps is judged on wall time, and says so.
    assert!(
        out.stdout
            .contains("judged on wall time: the program waits"),
        "{out:?}"
    );
    let wall = table_line(&out.stdout, "wall*");
    assert!(wall.contains("+50.0%"), "{wall:?}");
    assert!(wall.ends_with("regressed"), "{wall:?}");
    // The template's CPU time is the same on both sides, inside the
    // assumed between-run noise of this machine: not decided either way.
    // Peak RSS is the same on both sides.
    assert!(
        table_line(&out.stdout, "cpu").ends_with("inconclusive"),
        "{out:?}"
    );
    assert!(
        table_line(&out.stdout, "peak_rss").ends_with("no change"),
        "{out:?}"
    );
    assert!(
        out.stdout
            .contains("summary: 1 regressed, 1 no change, 1 inconclusive"),
        "{out:?}"
    );
    assert!(!out.stdout.contains('\x1b'), "{out:?}");

    let out = compare(&sb, &["--color", "always", "a.json", "slow.json"]).ok();
    assert!(out.stdout.contains("\x1b[31mregressed\x1b[0m"), "{out:?}");
    let out = compare(&sb, &["--color", "always", "slow.json", "a.json"]).ok();
    assert!(out.stdout.contains("\x1b[32mimproved\x1b[0m"), "{out:?}");
}

#[test]
fn markdown_has_a_headline_a_table_and_folded_details() {
    let sb = Sandbox::new();
    template(&sb);
    let out = compare(&sb, &["--format", "markdown", "a.json", "slow.json"]).ok();
    let md = &out.stdout;
    assert!(
        md.starts_with(
            "### perfsleuth compare: `a.json` → `slow.json`\n\n**1 regressed**, 1 no change, 1 inconclusive\n"
        ),
        "{out:?}"
    );
    assert!(
        md.contains(
            "| Benchmark | Metric | Baseline | Candidate | Change [95% CI] | p | Verdict | Notes |"
        ),
        "{out:?}"
    );
    assert!(
        md.lines()
            .any(|l| l.starts_with("| `work` | wall (gating) |") && l.contains("**regressed**")),
        "{out:?}"
    );
    let details = md
        .find("<details><summary>1 no-change row</summary>")
        .unwrap_or_else(|| panic!("no <details>: {out:?}"));
    let end = md.find("</details>").expect("</details>");
    assert!(details < end);
    let folded = &md[details..end];
    assert!(folded.contains("| `work` | peak_rss |"), "{folded}");
    // Rows not decided stay in the table.
    assert!(!folded.contains("| `work` | cpu |"), "{folded}");
    assert!(md[..details].contains("| `work` | cpu |"), "{out:?}");
    assert!(!folded.contains("wall"), "{folded}");
    assert!(!md.contains('\x1b'), "{out:?}");

    // No regression: a different headline.
    let out = compare(&sb, &["--format", "markdown", "slow.json", "a.json"]).ok();
    assert!(
        out.stdout
            .contains("\n\nNo regressions: 1 improved, 1 no change, 1 inconclusive\n"),
        "{out:?}"
    );
}

#[test]
fn json_follows_the_documented_schema() {
    let sb = Sandbox::new();
    template(&sb);
    let doc = compare_json(&sb, &["a.json", "slow.json"]);
    assert_eq!(doc["schema_version"], 2);
    assert_eq!(doc["baseline"], "a.json");
    assert_eq!(doc["candidate"], "slow.json");
    assert_eq!(doc["identity_changed"], false);
    assert_eq!(doc["env_changes"], serde_json::json!([]));
    assert_eq!(doc["fdr_applied"], false);
    assert_eq!(doc["fdr_comparisons"], 0);
    assert_eq!(doc["unpaired_baseline"], serde_json::json!([]));
    assert_eq!(doc["unpaired_candidate"], serde_json::json!([]));
    assert!(doc["notes"].is_array(), "{doc:#}");
    assert_eq!(doc["any_gating_regression"], true);

    let rows = doc["rows"].as_array().unwrap();
    let metrics: Vec<&str> = rows.iter().map(|r| r["metric"].as_str().unwrap()).collect();
    assert_eq!(metrics, ["wall", "cpu", "peak_rss"]);
    for r in rows {
        assert!(VERDICTS.contains(&r["verdict"].as_str().unwrap()), "{r:#}");
        assert_eq!(r["benchmark"], "work");
        assert_eq!(r["key"], "work");
        assert_eq!(r["parameters"], serde_json::json!({}));
        assert_eq!(r["better"], "lower");
        assert_eq!(r["n_baseline"], 12);
        assert_eq!(r["n_candidate"], 12);
        assert!(r["p_value"].is_number(), "{r:#}");
        assert!(r["p_adjusted"].is_null(), "{r:#}");
        assert!(r["notes"].is_array(), "{r:#}");
        assert_eq!(r["gating"], r["metric"] == "wall", "{r:#}");
    }
    let wall = row(&doc, "work", "wall");
    assert_eq!(wall["unit"], "ns");
    assert_eq!(wall["verdict"], "regressed");
    let c = &wall["change"];
    let change = c["change"].as_f64().unwrap();
    assert!((change - 0.5).abs() < 0.01, "{c}");
    assert!(c["ci_low"].as_f64().unwrap() <= change && change <= c["ci_high"].as_f64().unwrap());
    assert_eq!(c["confidence"], 0.95);
    assert_eq!(c["resamples"], 10_000);
    assert!(wall["p_value"].as_f64().unwrap() < 0.05);
    let ratio =
        wall["candidate_median"].as_f64().unwrap() / wall["baseline_median"].as_f64().unwrap();
    assert!((ratio - 1.5).abs() < 0.001, "{wall:#}");
    assert_eq!(row(&doc, "work", "peak_rss")["unit"], "bytes");

    let summary = doc["summary"].as_object().unwrap();
    assert_eq!(summary.len(), VERDICTS.len(), "{summary:?}");
    for v in VERDICTS {
        assert!(summary.contains_key(v), "{summary:?}");
    }
    assert_eq!(summary["regressed"], 1);
    assert_eq!(summary["no change"], 1);
    assert_eq!(summary["inconclusive"], 1);

    // The seeded bootstrap makes the document reproducible.
    assert_eq!(compare_json(&sb, &["a.json", "slow.json"]), doc);
}

#[test]
fn several_paired_benchmarks_get_adjusted_p_values() {
    let sb = Sandbox::new();
    template(&sb);
    let twice = |d: &mut Value| {
        let mut other = d["run"]["benchmarks"][0].clone();
        other["name"] = Value::from("other");
        d["run"]["benchmarks"].as_array_mut().unwrap().push(other);
    };
    derive(&sb, "a.json", "a2.json", twice);
    // Another program on the candidate side: two byte-identical programs
    // that moved together would be the machine's step, not two regressions.
    derive(&sb, "slow.json", "slow2.json", |d| {
        twice(d);
        for b in d["run"]["benchmarks"].as_array_mut().unwrap() {
            let fact = &mut b["facts"]["binary.sha256"];
            assert!(fact.is_object(), "no binary hash in {b:#}");
            fact["value"] = Value::from("0".repeat(64));
        }
    });
    let doc = compare_json(&sb, &["a2.json", "slow2.json"]);
    assert_eq!(doc["fdr_applied"], true);
    assert_eq!(doc["fdr_comparisons"], 2);
    for b in ["work", "other"] {
        assert!(row(&doc, b, "wall")["p_adjusted"].is_number(), "{doc:#}");
        assert!(row(&doc, b, "cpu")["p_adjusted"].is_null(), "{doc:#}");
        assert_eq!(verdict(&doc, b, "wall"), "regressed");
    }
    let out = compare(&sb, &["a2.json", "slow2.json"]).ok();
    assert!(
        out.stdout
            .contains("p-values adjusted for 2 comparisons (Benjamini–Hochberg)"),
        "{out:?}"
    );
}

// ---------------------------------------------------------------- --fail-on

#[test]
fn fail_on_regressed_gates_only_a_regression() {
    let sb = Sandbox::new();
    bench(&sb, &["-n", "work", "sleep 0.01"]);
    bench(&sb, &["-n", "work", "sleep 0.03"]);
    bench(&sb, &["-n", "work", "sleep 0.01"]);

    let out = compare(&sb, &["1", "2", "--fail-on", "regressed"]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        table_line(&out.stdout, "wall*").ends_with("regressed"),
        "{out:?}"
    );
    // After the report, one line says why the gate failed.
    assert_eq!(
        out.stderr, "gate failed: `work wall` regressed\n",
        "{out:?}"
    );

    // The report is still complete JSON when the gate fails.
    let out = compare(
        &sb,
        &["1", "2", "--fail-on", "regressed", "--format", "json"],
    );
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(parse_json(&out.stdout)["any_gating_regression"], true);

    // Faster: improved, and the gate passes.
    let out = compare(
        &sb,
        &["2", "3", "--fail-on", "regressed", "--format", "json"],
    )
    .ok();
    let doc = parse_json(&out.stdout);
    assert_eq!(verdict(&doc, "work", "wall"), "improved");
    assert_eq!(doc["any_gating_regression"], false);

    // Without --fail-on a regression does not change the exit code.
    compare(&sb, &["1", "2"]).ok();
}

#[test]
fn metric_option_chooses_the_gating_metrics() {
    let sb = Sandbox::new();
    template(&sb);
    assert_eq!(
        compare(&sb, &["a.json", "slow.json", "--fail-on", "regressed"]).code,
        1
    );
    let out = compare(
        &sb,
        &[
            "a.json",
            "slow.json",
            "--fail-on",
            "regressed",
            "--metric",
            "peak_rss",
            "--format",
            "json",
        ],
    )
    .ok();
    let doc = parse_json(&out.stdout);
    assert_eq!(row(&doc, "work", "wall")["gating"], false);
    assert_eq!(verdict(&doc, "work", "wall"), "regressed");
    assert_eq!(row(&doc, "work", "peak_rss")["gating"], true);
    assert_eq!(doc["any_gating_regression"], false);
    let out = compare(&sb, &["a.json", "slow.json", "--metric", "peak_rss"]).ok();
    assert!(
        table_line(&out.stdout, "peak_rss*").ends_with("no change"),
        "{out:?}"
    );

    // Real runs: the sleep regression does not gate on peak RSS either.
    bench(&sb, &["-n", "work", "sleep 0.03"]);
    compare(
        &sb,
        &["1", "2", "--fail-on", "regressed", "--metric", "peak_rss"],
    )
    .ok();

    // A metric that is not shown by default is added when it gates.
    let doc = compare_json(&sb, &["a.json", "slow.json", "--metric", "minor_faults"]);
    assert_eq!(row(&doc, "work", "minor_faults")["gating"], true);
    assert_eq!(row(&doc, "work", "minor_faults")["unit"], "count");

    compare(&sb, &["a.json", "slow.json", "--metric", "speed"])
        .usage_error("unknown metric `speed`");
}

// ---------------------------------------------------------------- --threshold, --alpha

#[test]
fn threshold_widens_the_noise_band() {
    let sb = Sandbox::new();
    template(&sb);
    assert_eq!(
        verdict(&compare_json(&sb, &["a.json", "slow.json"]), "work", "wall"),
        "regressed"
    );
    let doc = compare_json(&sb, &["a.json", "slow.json", "--threshold", "90%"]);
    assert_eq!(verdict(&doc, "work", "wall"), "no change");
    assert_eq!(doc["any_gating_regression"], false);
    compare(
        &sb,
        &[
            "a.json",
            "slow.json",
            "--threshold",
            "90",
            "--fail-on",
            "regressed",
        ],
    )
    .ok();
    // A threshold below the change keeps the regression.
    let doc = compare_json(&sb, &["a.json", "slow.json", "--threshold", "30%"]);
    assert_eq!(verdict(&doc, "work", "wall"), "regressed");
}

#[test]
fn threshold_of_100_percent_or_more_is_rejected() {
    // Current behaviour: a threshold is a percentage below 100, so a +182%
    // regression cannot be declared noise by --threshold 500%.
    let sb = Sandbox::new();
    template(&sb);
    compare(&sb, &["a.json", "slow.json", "--threshold", "500%"]).clap_error("500%");
    compare(&sb, &["a.json", "slow.json", "--threshold", "0"]).clap_error("--threshold");
    compare(&sb, &["a.json", "slow.json", "--threshold", "lots"]).clap_error("lots");
}

#[test]
fn alpha_outside_zero_to_one_is_a_usage_error() {
    let sb = Sandbox::new();
    template(&sb);
    for alpha in ["0", "1", "1.5", "nan", "inf"] {
        let out = compare(&sb, &["a.json", "slow.json", "--alpha", alpha])
            .usage_error("not between 0 and 1");
        assert!(out.stdout.is_empty(), "{out:?}");
    }
    compare(&sb, &["a.json", "slow.json", "--alpha", "x"]).clap_error("--alpha");
    // A strict alpha still sees a clear regression.
    let doc = compare_json(&sb, &["a.json", "slow.json", "--alpha", "0.001"]);
    assert_eq!(verdict(&doc, "work", "wall"), "regressed");
}

// ---------------------------------------------------------------- config file

#[test]
fn config_file_threshold_from_config_option_and_repository_top() {
    let sb = Sandbox::new();
    template(&sb);
    sb.write("loose.toml", "[compare]\nthreshold = \"90%\"\n");
    let doc = compare_json(&sb, &["a.json", "slow.json", "--config", "loose.toml"]);
    assert_eq!(verdict(&doc, "work", "wall"), "no change");
    // The command line wins over the file.
    let doc = compare_json(
        &sb,
        &[
            "a.json",
            "slow.json",
            "--config",
            "loose.toml",
            "--threshold",
            "1%",
        ],
    );
    assert_eq!(verdict(&doc, "work", "wall"), "regressed");
    // Per-benchmark settings.
    sb.write(
        "per.toml",
        "[compare]\nthreshold = \"1%\"\n\n[compare.benchmark.work]\nthreshold = 0.9\n",
    );
    let doc = compare_json(&sb, &["a.json", "slow.json", "--config", "per.toml"]);
    assert_eq!(verdict(&doc, "work", "wall"), "no change");

    // perfsleuth.toml at the top of the repository, found from a subdirectory.
    git_init(&sb);
    std::fs::create_dir(sb.path("sub")).unwrap();
    let in_sub = |args: &[&str]| -> Out {
        let (a, slow) = (sb.path("a.json"), sb.path("slow.json"));
        let mut cmd = sb.cmd();
        cmd.current_dir(sb.path("sub"))
            .args(["compare", "--format", "json"])
            .arg(&a)
            .arg(&slow)
            .args(args);
        cmd.output().expect("start perfsleuth").into()
    };
    let out = in_sub(&[]).ok();
    assert_eq!(
        verdict(&parse_json(&out.stdout), "work", "wall"),
        "regressed"
    );
    sb.write("perfsleuth.toml", "[compare]\nthreshold = \"90%\"\n");
    let out = in_sub(&["--fail-on", "regressed"]).ok();
    assert_eq!(
        verdict(&parse_json(&out.stdout), "work", "wall"),
        "no change"
    );
    // And from the top itself.
    let doc = compare_json(&sb, &["a.json", "slow.json"]);
    assert_eq!(verdict(&doc, "work", "wall"), "no change");
}

#[test]
fn config_file_errors_name_the_problem() {
    let sb = Sandbox::new();
    template(&sb);
    sb.write("typo.toml", "[compare]\ntreshold = \"90%\"\n");
    let out =
        compare(&sb, &["a.json", "slow.json", "--config", "typo.toml"]).usage_error("treshold");
    assert!(out.stderr.contains("typo.toml"), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");

    sb.write("big.toml", "[compare]\nthreshold = \"500%\"\n");
    compare(&sb, &["a.json", "slow.json", "--config", "big.toml"]).usage_error("500%");
    sb.write("alpha.toml", "[compare]\nalpha = 2.0\n");
    compare(&sb, &["a.json", "slow.json", "--config", "alpha.toml"])
        .usage_error("not between 0 and 1");
    sb.write("gating.toml", "[compare]\ngating = [\"speed\"]\n");
    compare(&sb, &["a.json", "slow.json", "--config", "gating.toml"])
        .usage_error("unknown metric `speed`");
    sb.write("broken.toml", "[compare\n");
    compare(&sb, &["a.json", "slow.json", "--config", "broken.toml"]).usage_error("broken.toml");
    compare(&sb, &["a.json", "slow.json", "--config", "nosuch.toml"]).usage_error("nosuch.toml");

    // The default file is read too, so its typo is reported.
    sb.write("perfsleuth.toml", "[compare]\ngatting = [\"wall\"]\n");
    compare(&sb, &["a.json", "slow.json"]).usage_error("gatting");
}

// ---------------------------------------------------------------- attribution

#[test]
fn identity_change_marks_every_verdict_and_opens_the_report() {
    let sb = Sandbox::new();
    template(&sb);
    derive(&sb, "a.json", "other-cpu.json", |d| {
        set_fact(d, "cpu.model", "Imaginary CPU 9000")
    });
    let out = compare(
        &sb,
        &["other-cpu.json", "slow.json", "--fail-on", "regressed"],
    )
    .ok();
    assert!(
        out.stdout.starts_with(&format!("{MACHINES_DIFFER}\n")),
        "{out:?}"
    );
    let second = out.stdout.lines().nth(1).unwrap();
    assert!(second.contains("Imaginary CPU 9000 → "), "{out:?}");
    for metric in ["wall*", "cpu", "peak_rss"] {
        assert!(
            table_line(&out.stdout, metric).ends_with("environment changed"),
            "{out:?}"
        );
    }
    assert!(
        out.stdout
            .contains("statistically regressed, but the machines differ"),
        "{out:?}"
    );

    let doc = compare_json(&sb, &["other-cpu.json", "slow.json"]);
    assert_eq!(doc["identity_changed"], true);
    let change = &doc["env_changes"][0];
    assert_eq!(change["key"], "cpu.model");
    assert_eq!(change["class"], "identity");
    assert_eq!(change["before"], "Imaginary CPU 9000");
    assert!(
        change["summary"].is_string() && change["why"].is_string(),
        "{change}"
    );
    for r in doc["rows"].as_array().unwrap() {
        assert_eq!(r["verdict"], "environment changed", "{r:#}");
    }
    assert_eq!(doc["summary"]["environment changed"], 3);
    assert_eq!(doc["any_gating_regression"], false);

    let out = compare(
        &sb,
        &["--format", "markdown", "other-cpu.json", "slow.json"],
    )
    .ok();
    assert!(
        out.stdout.starts_with(&format!(
            "### ⚠️ Environment changed\n\n{MACHINES_DIFFER}\n"
        )),
        "{out:?}"
    );
    assert!(out.stdout.contains("**Not comparable**"), "{out:?}");

    let out = compare(&sb, &["other-cpu.json", "slow.json", "--require-same-env"])
        .usage_error("different machines");
    assert!(out.stderr.contains("Imaginary CPU 9000"), "{out:?}");
    assert!(out.stdout.is_empty(), "{out:?}");
    // Without an identity change --require-same-env is satisfied.
    compare(&sb, &["a.json", "slow.json", "--require-same-env"]).ok();
}

#[test]
fn performance_fact_change_marks_changed_rows_possibly_environmental() {
    let sb = Sandbox::new();
    template(&sb);
    let raw = read_json(&sb, "a.json");
    // Facts this machine knows (cpufreq is unknown in a VM, and a fact
    // unknown on one side is not judged).
    for key in ["kernel.aslr", "kernel.clocksource"] {
        let before = raw["run"]["environment"][key]["value"]
            .as_str()
            .unwrap_or_default();
        let value = if before == "off" { "partial" } else { "off" };
        derive(&sb, "a.json", "tuned.json", |d| set_fact(d, key, value));
        let doc = compare_json(&sb, &["tuned.json", "slow.json"]);
        assert_eq!(doc["identity_changed"], false, "{doc:#}");
        assert_eq!(doc["env_changes"][0]["key"], key, "{doc:#}");
        assert_eq!(doc["env_changes"][0]["class"], "performance", "{doc:#}");
        let wall = row(&doc, "work", "wall");
        assert_eq!(wall["verdict"], "regressed");
        assert!(
            notes(wall).contains(&format!("possibly environmental: {key}")),
            "{wall:#}"
        );
        // Rows that did not change carry no attribution.
        assert!(notes(row(&doc, "work", "peak_rss")).is_empty(), "{doc:#}");

        let out = compare(&sb, &["tuned.json", "slow.json"]).ok();
        assert!(
            out.stdout.contains("Performance-relevant facts differ"),
            "{out:?}"
        );
        assert!(
            out.stdout
                .contains(&format!("work · wall: possibly environmental: {key}")),
            "{out:?}"
        );
        // Still a regression for the gate.
        assert_eq!(
            compare(
                &sb,
                &[
                    "tuned.json",
                    "slow.json",
                    "--fail-on",
                    "regressed",
                    "--require-same-env"
                ]
            )
            .code,
            1
        );
    }
}

#[test]
fn same_binary_with_a_changed_result_says_so() {
    let sb = Sandbox::new();
    bench(
        &sb,
        &["--export-json", "a.json", "-n", "work", "sleep 0.01"],
    );
    bench(
        &sb,
        &["--export-json", "b.json", "-n", "work", "sleep 0.01"],
    );
    let hash = |f: &str| {
        read_json(&sb, f)["run"]["benchmarks"][0]["facts"]["binary.sha256"]["value"].clone()
    };
    assert!(hash("a.json").is_string());
    assert_eq!(hash("a.json"), hash("b.json"));
    // Fixed walls, so the verdict does not depend on how busy the machine was.
    derive(&sb, "a.json", "a-steady.json", steady);
    derive(&sb, "b.json", "b-slow.json", |d| {
        steady(d);
        scale_wall(d, 1.5)
    });

    let doc = compare_json(&sb, &["a-steady.json", "b-slow.json"]);
    let wall = row(&doc, "work", "wall");
    assert_eq!(wall["verdict"], "regressed");
    assert!(
        notes(wall).contains(&SAME_BINARY_NOTE.to_string()),
        "{wall:#}"
    );
    let out = compare(&sb, &["a-steady.json", "b-slow.json"]).ok();
    assert!(out.stdout.contains(SAME_BINARY_NOTE), "{out:?}");
    let out = compare(
        &sb,
        &["--format", "markdown", "a-steady.json", "b-slow.json"],
    )
    .ok();
    assert!(out.stdout.contains(SAME_BINARY_NOTE), "{out:?}");
    // Improvements too.
    let doc = compare_json(&sb, &["b-slow.json", "a-steady.json"]);
    assert!(notes(row(&doc, "work", "wall")).contains(&SAME_BINARY_NOTE.to_string()));
}

// ---------------------------------------------------------------- run --baseline

#[test]
fn run_with_baseline_compares_after_the_summary() {
    let sb = Sandbox::new();
    bench(&sb, &["-n", "work", "sleep 0.01"]);
    let out = sb.bench([
        "--warmup",
        "0",
        "--runs",
        "12",
        "--baseline",
        "1",
        "--fail-on",
        "regressed",
        "-n",
        "work",
        "sleep 0.03",
    ]);
    assert_eq!(out.code, 1, "{out:?}");
    crate::common::assert_no_panic(&out);
    let summary = out
        .stdout
        .find("Benchmark 1: work")
        .expect("the run summary");
    let report = out
        .stdout
        .find("baseline: run 1   candidate: run 2 (this run)")
        .unwrap_or_else(|| panic!("no comparison: {out:?}"));
    assert!(summary < report, "{out:?}");
    assert!(
        table_line(&out.stdout, "wall*").ends_with("regressed"),
        "{out:?}"
    );
    assert_eq!(sb.runs_json().len(), 2, "the run is stored despite exit 1");

    // `latest` is resolved before measuring: the previous run, not this one.
    let out = bench(&sb, &["--baseline", "latest", "-n", "work", "sleep 0.03"]);
    assert!(
        out.stdout
            .contains("baseline: run 2   candidate: run 3 (this run)"),
        "{out:?}"
    );
    // A faster run passes the gate.
    let out = bench(
        &sb,
        &[
            "--baseline",
            "2",
            "--fail-on",
            "regressed",
            "-n",
            "work",
            "sleep 0.01",
        ],
    );
    assert!(
        table_line(&out.stdout, "wall*").ends_with("improved"),
        "{out:?}"
    );
}

#[test]
fn run_with_baseline_from_an_export_and_no_store() {
    let sb = Sandbox::new();
    bench(
        &sb,
        &["--export-json", "a.json", "-n", "work", "sleep 0.01"],
    );
    let out = sb.run([
        "run",
        "--no-store",
        "--warmup",
        "0",
        "--runs",
        "12",
        "--baseline",
        "a.json",
        "--fail-on",
        "regressed",
        "-n",
        "work",
        "sleep 0.03",
    ]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stdout
            .contains("baseline: a.json   candidate: this run"),
        "{out:?}"
    );
    assert_eq!(sb.runs_json().len(), 1);
}

#[test]
fn run_with_an_unknown_baseline_fails_before_measuring() {
    let sb = Sandbox::new();
    bench(&sb, &["-n", "work", "sleep 0.01"]);
    let out = sb
        .bench([
            "--warmup",
            "0",
            "--runs",
            "12",
            "--baseline",
            "nosuchref",
            "-n",
            "work",
            "sleep 0.03",
        ])
        .usage_error("nosuchref");
    assert!(!out.stdout.contains("Benchmark 1"), "{out:?}");
    assert_eq!(sb.runs_json().len(), 1, "nothing new may be stored");
    // Bad verdict options are caught before measuring too.
    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "12",
        "--baseline",
        "1",
        "--alpha",
        "2",
        "sleep 0.03",
    ])
    .usage_error("--alpha");
    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "12",
        "--baseline",
        "99",
        "sleep 0.03",
    ])
    .usage_error("`99`");
    assert_eq!(sb.runs_json().len(), 1, "nothing new may be stored");

    // No store yet: the baseline cannot be found, and no store is created.
    let fresh = Sandbox::new();
    fresh
        .bench([
            "--warmup",
            "0",
            "--runs",
            "12",
            "--baseline",
            "1",
            "sleep 0.01",
        ])
        .usage_error("no results stored yet");
    assert!(!fresh.db().exists());
}

#[test]
fn run_with_baseline_keeps_a_json_export_on_stdout_parseable() {
    let sb = Sandbox::new();
    bench(&sb, &["-n", "work", "sleep 0.01"]);
    let out = bench(
        &sb,
        &[
            "--export-json",
            "-",
            "--baseline",
            "1",
            "-n",
            "work",
            "sleep 0.03",
        ],
    );
    let doc = parse_json(&out.stdout);
    assert_eq!(doc["schema"], "perfsleuth/run");
    assert!(
        out.stderr
            .contains("baseline: run 1   candidate: run 2 (this run)"),
        "the comparison should go where the summary goes: {out:?}"
    );
}

// ---------------------------------------------------------------- gates

#[test]
fn gates_fail_when_a_baseline_benchmark_is_missing_or_nothing_is_shared() {
    let sb = Sandbox::new();
    bench(
        &sb,
        &["-n", "kept", "-n", "dropped", "sleep 0.01", "sleep 0.011"],
    );
    bench(&sb, &["-n", "kept", "sleep 0.01"]);
    bench(&sb, &["-n", "other", "sleep 0.01"]);
    // A threshold no noise reaches: only the missing benchmarks can fail the gate.
    let gate = ["--fail-on", "regressed", "--threshold", "90"];
    let mut args = vec!["1", "2"];
    args.extend(gate);
    let out = compare(&sb, &args);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(
        out.stderr
            .contains("gate failed: `dropped` of the baseline is not in the candidate"),
        "{out:?}"
    );
    args.push("--allow-missing");
    assert_eq!(compare(&sb, &args).code, 0);

    let mut args = vec!["1", "3"];
    args.extend(gate);
    let out = compare(&sb, &args);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("share no benchmark"), "{out:?}");
    args.push("--allow-missing");
    assert_eq!(compare(&sb, &args).code, 0);
    // Without --fail-on nothing gates: the report alone, exit 0.
    assert_eq!(compare(&sb, &["1", "3"]).code, 0);

    // run --baseline gates the same way.
    let out = sb.bench([
        "--warmup",
        "0",
        "--runs",
        "3",
        "-n",
        "new",
        "--baseline",
        "1",
        "--fail-on",
        "regressed",
        "sleep 0.001",
    ]);
    assert_eq!(out.code, 1, "{out:?}");
    assert!(out.stderr.contains("share no benchmark"), "{out:?}");
}

#[test]
fn the_default_baseline_measured_the_same_benchmarks_on_the_same_branch() {
    let sb = Sandbox::new();
    git_init(&sb);
    commit(&sb, "a");
    bench(&sb, &["-n", "work", "sleep 0.01"]); // 1, main
    git(&sb, &["checkout", "-q", "-b", "topic"]);
    bench(&sb, &["-n", "work", "sleep 0.01"]); // 2, topic
    bench(&sb, &["-n", "unrelated", "sleep 0.01"]); // 3, topic
    bench(&sb, &["-n", "work", "sleep 0.01"]); // 4, topic
    // Not run 3 (other benchmarks): run 2, the latest with `work` on topic.
    let doc = compare_json(&sb, &[]);
    assert_eq!(doc["baseline"], "run 2", "{doc}");
    git(&sb, &["checkout", "-q", "main"]);
    bench(&sb, &["-n", "work", "sleep 0.01"]); // 5, main
    // On main: run 1, although topic's run 4 is newer.
    let doc = compare_json(&sb, &[]);
    assert_eq!(doc["baseline"], "run 1", "{doc}");
    // No earlier run of the same benchmarks at all: said, not guessed.
    bench(&sb, &["-n", "alone", "sleep 0.01"]); // 6
    compare(&sb, &[]).usage_error("no earlier run measured the same benchmarks (alone)");
}

#[test]
fn the_default_baseline_may_have_measured_more_benchmarks() {
    // `run 'sleep 0.01' 'sleep 0.02'` then `run 'sleep 0.01'`: a bare
    // `compare` compares `sleep 0.01` with the first run (issue 38), which
    // measured it among others; a run that lacks one of the candidate's
    // benchmarks is still passed over.
    let sb = Sandbox::new();
    bench(&sb, &["sleep 0.01", "sleep 0.02"]); // 1
    bench(&sb, &["sleep 0.03"]); // 2
    bench(&sb, &["sleep 0.01"]); // 3
    let doc = compare_json(&sb, &[]);
    assert_eq!(doc["baseline"], "run 1", "{doc}");
    assert_eq!(doc["candidate"], "run 3", "{doc}");
    assert!(
        doc["unpaired_baseline"]
            .as_array()
            .is_some_and(|u| u.iter().any(|b| b == "sleep 0.02")),
        "{doc}"
    );
}

// ---------------------------------------------------------------- unpaired

#[test]
fn unpaired_benchmarks_are_listed() {
    let sb = Sandbox::new();
    bench(
        &sb,
        &["-n", "kept", "-n", "dropped", "sleep 0.01", "sleep 0.011"],
    );
    bench(
        &sb,
        &["-n", "kept", "-n", "added", "sleep 0.01", "sleep 0.012"],
    );
    let out = compare(&sb, &["1", "2"]).ok();
    assert!(
        out.stdout
            .contains("\nnot compared (only in the baseline): dropped\n"),
        "{out:?}"
    );
    assert!(
        out.stdout
            .contains("\nnot compared (only in the candidate): added\n"),
        "{out:?}"
    );
    assert!(
        table_line(&out.stdout, "wall*").starts_with("kept "),
        "{out:?}"
    );

    let doc = compare_json(&sb, &["1", "2"]);
    assert_eq!(doc["unpaired_baseline"], serde_json::json!(["dropped"]));
    assert_eq!(doc["unpaired_candidate"], serde_json::json!(["added"]));
    assert!(
        doc["rows"]
            .as_array()
            .unwrap()
            .iter()
            .all(|r| r["benchmark"] == "kept")
    );

    let out = compare(&sb, &["1", "2", "--format", "markdown"]).ok();
    assert!(
        out.stdout
            .contains("**Not compared** (only in the baseline): `dropped`"),
        "{out:?}"
    );
    assert!(
        out.stdout
            .contains("**Not compared** (only in the candidate): `added`"),
        "{out:?}"
    );

    // Nothing in common at all.
    bench(&sb, &["-n", "alone", "sleep 0.01"]);
    let out = compare(&sb, &["1", "3"]).ok();
    assert!(out.stdout.contains("No benchmarks in common."), "{out:?}");
    assert!(
        out.stdout
            .contains("not compared (only in the baseline): kept, dropped"),
        "{out:?}"
    );
    assert!(
        out.stdout
            .contains("not compared (only in the candidate): alone"),
        "{out:?}"
    );
    // A gate over nothing fails (it used to pass without looking), and the
    // JSON report is still complete.
    let out = compare(
        &sb,
        &["1", "3", "--fail-on", "regressed", "--format", "json"],
    );
    assert_eq!(out.code, 1, "{out:?}");
    assert_eq!(parse_json(&out.stdout)["rows"], serde_json::json!([]));
    assert!(out.stderr.contains("share no benchmark"), "{out:?}");
}

#[test]
fn parameters_are_part_of_the_pairing_key() {
    let sb = Sandbox::new();
    bench(&sb, &["-L", "t", "0.01,0.02", "-n", "nap", "sleep {t}"]);
    bench(&sb, &["-L", "t", "0.01,0.03", "-n", "nap", "sleep {t}"]);
    let doc = compare_json(&sb, &[]);
    assert_eq!(
        doc["unpaired_baseline"],
        serde_json::json!(["nap [t=0.02]"])
    );
    assert_eq!(
        doc["unpaired_candidate"],
        serde_json::json!(["nap [t=0.03]"])
    );
    let wall = row(&doc, "nap", "wall");
    assert_eq!(wall["key"], "nap [t=0.01]");
    assert_eq!(wall["parameters"], serde_json::json!({"t": "0.01"}));
}

// ---------------------------------------------------------------- bad input

#[test]
fn unknown_run_ids_are_usage_errors() {
    let sb = Sandbox::new();
    bench(&sb, &["-n", "work", "sleep 0.01"]);
    bench(&sb, &["-n", "work", "sleep 0.01"]);
    for args in [
        &["99", "1"][..],
        &["1", "99"],
        &["99"],
        &["latest~5", "latest"],
        &["0", "1"],
    ] {
        let bad = args.iter().find(|a| !["1", "latest"].contains(a)).unwrap();
        let out = compare(&sb, args).usage_error(&format!("`{bad}` is not a stored run"));
        assert!(out.stdout.is_empty(), "{out:?}");
    }
    compare(&sb, &["--", "-1", "1"]).usage_error("`-1`");
    compare(&sb, &["nosuch.json", "1"]).usage_error("nosuch.json: no such file");
    compare(&sb, &["dir/nosuch", "1"]).usage_error("no such file");
}

#[test]
fn empty_or_single_run_stores_are_usage_errors() {
    let sb = Sandbox::new();
    compare(&sb, &[]).usage_error("no results stored yet");
    compare(&sb, &["1", "2"]).usage_error("no results stored yet");
    assert!(!sb.db().exists(), "compare must not create a store");
    // Without --store: the default location, which does not exist either.
    sb.run(["compare"]).usage_error("error: ");
    assert!(sb.files_named("results.db").is_empty());

    bench(&sb, &["-n", "work", "sleep 0.01"]);
    let out = compare(&sb, &[]).usage_error("no earlier run");
    assert!(
        out.stderr.contains("perfsleuth compare BASELINE CANDIDATE"),
        "{out:?}"
    );
    compare(&sb, &["latest"]).ok();
}

#[test]
fn exports_of_the_wrong_kind_or_version_are_usage_errors() {
    let sb = Sandbox::new();
    template(&sb);
    derive(&sb, "a.json", "v999.json", |d| {
        d["schema_version"] = Value::from(999)
    });
    for args in [["v999.json", "a.json"], ["a.json", "v999.json"]] {
        let out = compare(&sb, &args).usage_error("v999.json: schema version 999");
        assert!(out.stderr.contains("reads version 1"), "{out:?}");
        assert!(out.stdout.is_empty(), "{out:?}");
    }
    derive(&sb, "a.json", "nov.json", |d| {
        d.as_object_mut().unwrap().remove("schema_version");
    });
    compare(&sb, &["nov.json", "a.json"]).usage_error("no schema_version");

    // A compare report is JSON, but not a run export.
    let report = compare(&sb, &["--format", "json", "a.json", "slow.json"]).ok();
    sb.write("report.json", &report.stdout);
    compare(&sb, &["report.json", "a.json"]).usage_error("not a perfsleuth run export");
    sb.write("other.json", "{\"hello\": 1}");
    compare(&sb, &["a.json", "other.json"]).usage_error("not a perfsleuth run export");
    sb.write("text.json", "not json at all");
    compare(&sb, &["text.json", "a.json"]).usage_error("not JSON");
    derive(&sb, "a.json", "malformed.json", |d| {
        d["run"] = Value::from("oops")
    });
    compare(&sb, &["malformed.json", "a.json"]).usage_error("malformed run");
    derive(&sb, "a.json", "nosamples.json", |d| {
        d["run"]["benchmarks"][0]["samples"] = Value::from(7)
    });
    compare(&sb, &["a.json", "nosamples.json"]).usage_error("nosamples.json");
    // The same checks guard `run --baseline`, before measuring.
    sb.bench([
        "--warmup",
        "0",
        "--runs",
        "12",
        "--baseline",
        "v999.json",
        "sleep 0.01",
    ])
    .usage_error("schema version 999");
    assert_eq!(sb.runs_json().len(), 1);
}

#[test]
fn fewer_than_three_samples_are_insufficient_data() {
    let sb = Sandbox::new();
    sb.bench(["--warmup", "0", "--runs", "2", "-n", "work", "sleep 0.01"])
        .ok();
    sb.bench(["--warmup", "0", "--runs", "2", "-n", "work", "sleep 0.03"])
        .ok();
    let out = compare(&sb, &["--fail-on", "regressed", "--format", "json"]).ok();
    let doc = parse_json(&out.stdout);
    let wall = row(&doc, "work", "wall");
    assert_eq!(wall["verdict"], "insufficient data", "{wall:#}");
    assert_eq!(wall["n_baseline"], 2);
    assert!(
        notes(wall).iter().any(|n| n.contains("too few samples")),
        "{wall:#}"
    );
    assert_eq!(doc["any_gating_regression"], false);
    for r in doc["rows"].as_array().unwrap() {
        assert!(
            ["insufficient data", "no change"].contains(&r["verdict"].as_str().unwrap()),
            "{r:#}"
        );
    }
    let out = compare(&sb, &[]).ok();
    assert!(
        table_line(&out.stdout, "wall*").ends_with("insufficient data"),
        "{out:?}"
    );
    assert!(out.stdout.contains("too few samples (2 vs 2"), "{out:?}");

    // One sample per side (an export cut down to one): no panic, the same verdict.
    template(&sb);
    let cut = |d: &mut Value| {
        d["run"]["benchmarks"][0]["samples"]
            .as_array_mut()
            .unwrap()
            .truncate(1)
    };
    derive(&sb, "a.json", "one.json", cut);
    derive(&sb, "slow.json", "slow-one.json", cut);
    let doc = compare_json(
        &sb,
        &["one.json", "slow-one.json", "--fail-on", "regressed"],
    );
    assert_eq!(verdict(&doc, "work", "wall"), "insufficient data");
    // No samples at all on one side.
    derive(&sb, "a.json", "none.json", |d| {
        d["run"]["benchmarks"][0]["samples"] = serde_json::json!([])
    });
    let doc = compare_json(&sb, &["none.json", "slow.json"]);
    let wall = row(&doc, "work", "wall");
    assert_eq!(wall["verdict"], "insufficient data");
    assert!(
        notes(wall).contains(&"no samples on the baseline side".to_string()),
        "{wall:#}"
    );
    compare(&sb, &["none.json", "slow.json"]).ok();
    compare(&sb, &["--format", "markdown", "none.json", "slow.json"]).ok();
}

#[test]
fn fewer_than_three_samples_make_every_row_insufficient_data() {
    let sb = Sandbox::new();
    template(&sb);
    let floor =
        read_json(&sb, "a.json")["run"]["environment"]["measure.peak_rss_floor_bytes"]["value"]
            .as_str()
            .expect("a peak RSS floor")
            .parse::<u64>()
            .unwrap();
    let cut = |d: &mut Value| {
        d["run"]["benchmarks"][0]["samples"]
            .as_array_mut()
            .unwrap()
            .truncate(2);
        each_sample(d, |_, s| s["peak_rss_bytes"] = Value::from(floor));
    };
    derive(&sb, "a.json", "two.json", cut);
    derive(&sb, "slow.json", "slow-two.json", cut);
    let doc = compare_json(&sb, &["two.json", "slow-two.json"]);
    for r in doc["rows"].as_array().unwrap() {
        assert_eq!(r["verdict"], "insufficient data", "{r:#}");
    }
}

#[test]
fn zero_variance_samples_do_not_panic() {
    let sb = Sandbox::new();
    template(&sb);
    let constant =
        |ns: u64| move |d: &mut Value| each_sample(d, |_, s| s["wall_ns"] = Value::from(ns));
    derive(&sb, "a.json", "flat.json", constant(10_000_000));
    derive(&sb, "a.json", "flat-again.json", constant(10_000_000));
    derive(&sb, "a.json", "flat-slow.json", constant(15_000_000));
    derive(&sb, "a.json", "zero.json", constant(0));

    let doc = compare_json(
        &sb,
        &["flat.json", "flat-again.json", "--fail-on", "regressed"],
    );
    let wall = row(&doc, "work", "wall");
    // Identical, but one run a side: the between-run noise this machine is
    // assumed to have keeps "no change" out of reach.
    assert_eq!(wall["verdict"], "inconclusive", "{wall:#}");
    assert_eq!(wall["change"]["change"], 0.0);
    assert!(wall["band"].as_f64().unwrap() > 0.01, "{wall:#}");
    compare(&sb, &["flat.json", "flat-again.json"]).ok();
    compare(
        &sb,
        &["--format", "markdown", "flat.json", "flat-again.json"],
    )
    .ok();

    // Constant on each side, but different: a real, certain change.
    let doc = compare_json(&sb, &["flat.json", "flat-slow.json"]);
    assert_eq!(verdict(&doc, "work", "wall"), "regressed");
    let doc = compare_json(&sb, &["flat-slow.json", "flat.json"]);
    assert_eq!(verdict(&doc, "work", "wall"), "improved");

    // All zero on both sides: no change; zero baseline only: undefined ratio.
    let doc = compare_json(&sb, &["zero.json", "zero.json"]);
    assert_eq!(verdict(&doc, "work", "wall"), "no change");
    let doc = compare_json(&sb, &["zero.json", "flat.json", "--fail-on", "regressed"]);
    let wall = row(&doc, "work", "wall");
    assert_eq!(wall["verdict"], "insufficient data", "{wall:#}");
    assert!(wall["change"].is_null(), "{wall:#}");
    compare(&sb, &["zero.json", "flat.json"]).ok();
    let doc = compare_json(&sb, &["flat.json", "zero.json"]);
    assert_eq!(verdict(&doc, "work", "wall"), "improved");
}

// ---------------------------------------------------------------- rounds until decided

/// A shell command whose time depends on its process id (1 … 9 ms): any
/// comparison of two runs of it has a CI far wider than ±1 %, so it stays
/// inconclusive.
const RANDOM_SLEEP: &str = "sleep 0.00$(( $$ % 9 + 1 ))";

#[test]
fn run_baseline_adds_rounds_while_inconclusive_up_to_max_time() {
    let sb = Sandbox::new();
    let quick = [
        "--shell",
        "sh",
        "--time-budget",
        "300ms",
        "--min-runs",
        "5",
        "-n",
        "r",
    ];
    let with = |extra: &[&str]| {
        let mut all: Vec<&str> = quick.to_vec();
        all.extend_from_slice(extra);
        all.push(RANDOM_SLEEP);
        sb.bench(all).ok()
    };
    with(&[]);
    let out = with(&["--baseline", "1", "--max-time", "1500ms"]);
    let note = out
        .stderr
        .lines()
        .find(|l| l.starts_with("note: measured ") && l.contains(" rounds ("))
        .unwrap_or_else(|| panic!("no rounds note: {out:?}"));
    let rounds: u32 = note["note: measured ".len()..]
        .split(' ')
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("{note}"));
    assert!(rounds >= 2, "{note}");
    assert!(note.contains("inconclusive (--max-time 1.500 s)"), "{note}");
    // It looked again only on the grid, and says at which look and level
    // it judged (α/2^(look+1)).
    let look = LOOKS_OF_5
        .iter()
        .position(|&r| r == rounds)
        .unwrap_or_else(|| panic!("{rounds} rounds is not a look: {note}"));
    assert!(
        out.stdout
            .contains(&format!("judged at look {} with α = ", look + 1)),
        "{out:?}"
    );
    assert!(!out.stdout.contains("change [95% CI]"), "{out:?}");
    // Every round's samples are in the stored run.
    let doc = sb.show_json("latest");
    let n = doc["run"]["benchmarks"][0]["samples"]
        .as_array()
        .map_or(0, Vec::len);
    assert!(n >= 10, "{n} samples over {rounds} rounds");

    // --runs fixes the count: no rounds are added unless --max-time asks.
    let out = sb
        .bench([
            "--shell",
            "sh",
            "--runs",
            "5",
            "-n",
            "r",
            "--baseline",
            "1",
            RANDOM_SLEEP,
        ])
        .ok();
    assert!(!out.stderr.contains("note: measured"), "{out:?}");
}

/// The rounds at which a comparison of 5 planned rounds is looked at
/// (1.5× each, rounded up): look k at `LOOKS_OF_5[k]` rounds.
const LOOKS_OF_5: [u32; 10] = [5, 8, 12, 18, 27, 41, 62, 93, 140, 210];

/// The number after `prefix` in `line`.
fn number_after(line: &str, prefix: &str) -> u32 {
    let at = line
        .find(prefix)
        .unwrap_or_else(|| panic!("{prefix:?} in {line}"))
        + prefix.len();
    line[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("a number after {prefix:?} in {line}"))
}

#[test]
fn two_undecided_commands_go_on_measuring_and_are_judged_at_their_look() {
    let sb = Sandbox::new();
    // Each command alternates 1 ms and 9 ms runs, in opposite phase: every
    // adjacent pair is 9× one way or the other, half each way, so the
    // interval spans ±100 % at every look and neither a change nor no
    // change can ever be shown.
    let flip = |name: &str, start: u32| {
        let counter = sb.write(&format!("{name}.count"), start.to_string());
        format!(
            "n=$(cat {c}); echo $((n+1)) > {c}; if [ $((n % 2)) = 0 ]; then sleep 0.001; else sleep 0.009; fi",
            c = counter.display()
        )
    };
    let (a, b) = (flip("a", 0), flip("b", 1));
    let out = sb
        .bench([
            "--shell",
            "sh",
            "--runs",
            "10",
            "--rounds",
            "5",
            "--max-time",
            "2s",
            "-n",
            "a",
            "-n",
            "b",
            &a,
            &b,
        ])
        .ok();
    let note = out
        .stderr
        .lines()
        .find(|l| l.contains("because the comparison of the two commands was inconclusive"))
        .unwrap_or_else(|| panic!("no rounds note: {out:?}"));
    let rounds = number_after(note, "measured ");
    let look = LOOKS_OF_5
        .iter()
        .position(|&r| r == rounds)
        .unwrap_or_else(|| panic!("{rounds} rounds is not a look: {note}"));
    assert!(look >= 1, "{note}");
    let said = out
        .stderr
        .lines()
        .find(|l| l.contains("judged at look "))
        .unwrap_or_else(|| panic!("no look note: {out:?}"));
    assert_eq!(
        number_after(said, "judged at look ") as usize,
        look + 1,
        "{said}"
    );
    // The stored run says it went on measuring, and its summary is judged
    // at that look's level wherever it is read back.
    let doc = sb.show_json("latest");
    assert_eq!(doc["run"]["options"]["sequential"], true, "{doc}");
    let time = &doc["summary"]["comparisons"][0]["time"];
    let level = 1.0 - 0.05 / 2f64.powi(look as i32 + 1);
    assert!(
        (time["confidence"].as_f64().unwrap() - level).abs() < 1e-12,
        "{time}"
    );
    assert_eq!(time["significant"], false, "{time}");

    // --runs alone fixes the count: judged once, at 95 %.
    let out = sb
        .bench([
            "--shell", "sh", "--runs", "10", "--rounds", "5", "-n", "a", "-n", "b", &a, &b,
        ])
        .ok();
    assert!(!out.stderr.contains("note: measured"), "{out:?}");
    let doc = sb.show_json("latest");
    assert!(doc["run"]["options"].get("sequential").is_none(), "{doc}");
    assert_eq!(doc["summary"]["comparisons"][0]["time"]["confidence"], 0.95);
}

#[test]
fn max_time_needs_a_baseline_and_at_least_one_round() {
    let sb = Sandbox::new();
    sb.bench(["--max-time", "5s", "true"])
        .usage_error("--max-time works only with --baseline, in ab, or with two commands");
    bench(&sb, &["-n", "t", "true"]);
    sb.bench(["--baseline", "1", "--max-time", "500ms", "true"])
        .usage_error(
            "--max-time 500.000 ms is below one round (600.000 ms: --time-budget 3.000 s over 5 rounds)",
        );
}

// ---------------------------------------------------------------- same-binary history

/// The judged time's row of `t` (the gating one: wall or CPU time) and the
/// notes of a compare document.
fn wall_of(doc: &Value) -> (&Value, Vec<String>) {
    let top = doc["notes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n.as_str().unwrap().to_string())
        .collect();
    let judged = doc["rows"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["benchmark"] == "t" && r["gating"] == true)
        .unwrap_or_else(|| panic!("no gating row of t in {doc:#}"));
    (judged, top)
}

#[test]
fn same_binary_history_teaches_the_noise_and_joins_the_baseline() {
    let sb = Sandbox::new();
    git_init(&sb);
    commit(&sb, "v1");
    bench(&sb, &["-n", "t", "true"]);
    bench(&sb, &["-n", "t", "true"]);
    // Two same-binary runs (the candidate's counts, as `history` counts it):
    // a stated fallback, never a noise from two runs.
    let doc = compare_json(&sb, &["1", "2"]);
    let (wall, top) = wall_of(&doc);
    assert_eq!(wall["noise"]["runs"], 0, "{wall:#}");
    assert!(
        notes(wall)
            .iter()
            .any(|n| n.contains("only 2 same-binary runs are stored, 5 are needed to learn it")),
        "{wall:#}"
    );
    assert!(
        !top.iter().any(|n| n.starts_with("baseline for")),
        "{top:?}"
    );

    // --repeat 4: four more runs, and what they say about the noise.
    let out = sb
        .bench([
            "--warmup", "0", "--runs", "12", "--repeat", "4", "-n", "t", "true",
        ])
        .ok();
    assert!(out.stderr.contains("repeat 4 of 4"), "{out:?}");
    assert!(
        out.stderr
            .contains("noise for `t` on this machine class: wall time ±")
            && out.stderr.contains(" per run (σ, ")
            && out.stderr.contains("6 same-binary runs"),
        "{out:?}"
    );
    assert_eq!(sb.runs_json().len(), 6);

    bench(&sb, &["-n", "t", "true"]);
    let doc = compare_json(&sb, &["1", "7"]);
    let (wall, top) = wall_of(&doc);
    // The candidate's run is one of the series: seven.
    assert_eq!(wall["noise"]["runs"], 7, "{wall:#}");
    assert!(
        wall["noise"]["source"]
            .as_str()
            .unwrap()
            .contains("7 same-binary runs"),
        "{wall:#}"
    );
    assert!(wall["band"].as_f64().unwrap() > 0.0, "{wall:#}");
    assert!(
        notes(wall)
            .iter()
            .any(|n| n.starts_with("noise for `t` on this machine class: ±")
                && n.contains("7 same-binary runs")
                && n.contains("between 6 runs of baseline and 1 run of candidate")),
        "{wall:#}"
    );
    assert!(
        top.iter().any(|n| n
            == "baseline for `t` includes 5 more runs of the same binary at the same commit (runs 6, 5, 4, 3, 2)"),
        "{top:?}"
    );
    assert_eq!(wall["n_baseline"], 72, "six runs of 12");
    let ci = &wall["change"];
    let (lo, hi, ch) = (
        ci["ci_low"].as_f64().unwrap(),
        ci["ci_high"].as_f64().unwrap(),
        ci["change"].as_f64().unwrap(),
    );
    let band = wall["band"].as_f64().unwrap();
    assert!(
        lo <= ch - band + 1e-12 && hi >= ch + band - 1e-12,
        "{wall:#}"
    );

    // --no-history: the two runs alone, with the assumed noise.
    let doc = compare_json(&sb, &["1", "7", "--no-history"]);
    let (wall, top) = wall_of(&doc);
    assert_eq!(wall["noise"]["runs"], 0, "{wall:#}");
    assert!(
        wall["noise"]["source"]
            .as_str()
            .unwrap()
            .starts_with("assumed for"),
        "{wall:#}"
    );
    assert_eq!(wall["n_baseline"], 12);
    assert!(
        !top.iter().any(|n| n.starts_with("baseline for")),
        "{top:?}"
    );
    // Six same-binary runs are stored: declined, not missing.
    let said = notes(wall);
    assert!(
        said.iter()
            .any(|n| n.contains("same-binary runs not consulted (--no-history)")),
        "{wall:#}"
    );
    assert!(
        !said
            .iter()
            .any(|n| n.contains("no same-binary runs stored")),
        "{wall:#}"
    );

    // A baseline from a dirty tree learns from the history but is not
    // joined by it: the same binary may have read other inputs there.
    sb.write("code.txt", "v1, edited");
    bench(&sb, &["-n", "t", "true"]);
    let doc = compare_json(&sb, &["8", "7"]);
    let (wall, top) = wall_of(&doc);
    // All eight runs of the binary are the series the noise is learned from.
    assert_eq!(wall["noise"]["runs"], 8, "{wall:#}");
    assert_eq!(wall["n_baseline"], 12);
    assert!(
        !top.iter().any(|n| n.starts_with("baseline for")),
        "{top:?}"
    );
}

#[test]
fn repeat_refuses_what_it_cannot_do() {
    let sb = Sandbox::new();
    sb.bench(["--repeat", "0", "true"])
        .usage_error("--repeat 0 measures nothing");
    sb.run(["run", "--repeat", "2", "--no-store", "true"])
        .usage_error("--repeat with --no-store keeps nothing to learn the noise from");
    sb.bench(["--repeat", "2", "--baseline", "latest", "true"])
        .usage_error("--repeat with --baseline would compare each repeat on its own");
    sb.bench(["--repeat", "2", "--export-json", "x.json", "true"])
        .usage_error("--repeat with --export-*: every repeat would overwrite the file");
    assert!(!sb.path("x.json").exists());
    assert!(!sb.db().exists(), "nothing was measured");
}

#[test]
fn export_junit_has_a_case_per_benchmark_and_metric_failing_where_the_gate_fails() {
    let sb = Sandbox::new();
    bench(
        &sb,
        &["-n", "work", "sleep 0.01", "-n", "gone", "sleep 0.005"],
    );
    bench(
        &sb,
        &["-n", "work", "sleep 0.03", "-n", "new", "sleep 0.005"],
    );
    let doc = compare_json(&sb, &["1", "2"]);
    let out = compare(
        &sb,
        &[
            "1",
            "2",
            "--export-junit",
            "c.xml",
            "--fail-on",
            "regressed",
        ],
    );
    assert_eq!(out.code, 1, "{out:?}");
    let Some(cases) = crate::common::junit_cases(&sb.path("c.xml")) else {
        return;
    };
    let find = |name: &str| {
        cases
            .iter()
            .find(|c| c["name"] == name)
            .unwrap_or_else(|| panic!("no case {name}: {cases:#?}"))
    };
    // A case per row of the comparison, and one per benchmark on one side.
    let rows = doc["rows"].as_array().unwrap();
    assert_eq!(cases.len(), rows.len() + 2, "{cases:#?}");
    for r in rows {
        let c = find(&format!(
            "{} · {}",
            r["benchmark"].as_str().unwrap(),
            r["metric"].as_str().unwrap()
        ));
        let fails = r["gating"] == true && r["verdict"] == "regressed";
        assert_eq!(c["result"] == "failure", fails, "{c} {r}");
        assert!(
            c["out"]
                .as_str()
                .unwrap()
                .contains(r["verdict"].as_str().unwrap()),
            "{c}"
        );
    }
    let work = find("work · wall");
    assert_eq!(work["classname"], "work");
    assert_eq!(work["result"], "failure");
    assert_eq!(work["type"], "regressed");
    let message = work["message"].as_str().unwrap();
    assert!(
        message.starts_with("`work`: run 2 is ")
            && message.ends_with("× slower than run 1 (wall time)"),
        "{message}"
    );
    assert!(work["time"].as_f64().unwrap() > 0.02, "{work}");
    assert_eq!(
        find("gone")["result"],
        "failure",
        "the gate fails on a lost benchmark"
    );
    assert_eq!(find("gone")["type"], "missing");
    assert_eq!(find("new")["result"], "skipped");
    assert_eq!(work["suite"], "compare: run 1 → run 2");
    // --allow-missing lets the lost benchmark pass the gate: skipped.
    compare(
        &sb,
        &["1", "2", "--export-junit", "c.xml", "--allow-missing"],
    )
    .ok();
    let cases = crate::common::junit_cases(&sb.path("c.xml")).unwrap();
    let gone = cases.iter().find(|c| c["name"] == "gone").unwrap();
    assert_eq!(gone["result"], "skipped", "{gone}");
    // The store is never the file written.
    compare(
        &sb,
        &["1", "2", "--export-junit", sb.db().to_str().unwrap()],
    )
    .usage_error("would destroy the stored results");
    assert_eq!(sb.show_json("2")["run"]["id"], 2, "the store is intact");
}

#[test]
fn format_github_writes_the_step_summary_and_annotates_the_regression() {
    let sb = Sandbox::new();
    bench(&sb, &["-n", "work", "sleep 0.01"]);
    bench(&sb, &["-n", "work", "sleep 0.03"]);
    let summary = sb.path("summary.md");
    std::fs::write(&summary, "earlier step\n").unwrap();
    let store = sb.store();
    let mut cmd = sb.cmd();
    cmd.args([
        "compare",
        "--store",
        &store,
        "1",
        "2",
        "--format",
        "github",
        "--fail-on",
        "regressed",
    ])
    .env("GITHUB_STEP_SUMMARY", &summary);
    let out: crate::common::Out = cmd.output().unwrap().into();
    assert_eq!(out.code, 1, "the gate fails: {out:?}");
    // The annotation names the benchmark in the checks view…
    assert!(
        out.stdout
            .lines()
            .any(|l| l.starts_with("::error title=perfsleuth%3A work regressed::")),
        "{out:?}"
    );
    // …and the report went to the step summary, after what was there.
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(md.starts_with("earlier step\n"), "{md}");
    assert!(
        md.contains("| Benchmark |") && md.contains("**regressed**"),
        "{md}"
    );
    assert!(!out.stdout.contains("| Benchmark |"), "{out:?}");
    // Without the variable, both are printed.
    let out = compare(&sb, &["1", "2", "--format", "github"]).ok();
    assert!(out.stdout.contains("| Benchmark |") && out.stdout.contains("::error "));
    // A FIFO as the summary is refused, not waited on.
    let fifo = sb.path("fifo");
    assert!(
        std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let mut cmd = sb.cmd();
    cmd.args(["compare", "--store", &store, "1", "2", "--format", "github"])
        .env("GITHUB_STEP_SUMMARY", &fifo);
    let out: crate::common::Out = cmd.output().unwrap().into();
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("not a regular file"), "{out:?}");
    // Nor is the store appended to.
    let mut cmd = sb.cmd();
    cmd.args(["compare", "--store", &store, "1", "2", "--format", "github"])
        .env("GITHUB_STEP_SUMMARY", sb.db());
    let out: crate::common::Out = cmd.output().unwrap().into();
    assert_eq!(out.code, 2, "{out:?}");
    assert!(
        out.stderr.contains("would destroy the stored results"),
        "{out:?}"
    );
    assert_eq!(sb.show_json("2")["run"]["id"], 2, "the store is intact");
}
