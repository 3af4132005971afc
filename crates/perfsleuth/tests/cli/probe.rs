//! `perfsleuth probe`, `probe diff` and the probe notes of `compare`, as
//! processes. Quick mode and small subsets only (calls, syscall, clock are
//! fast; memory and bandwidth are the slow probes), so the file stays well
//! under a minute on a 2-CPU machine.

use crate::common::{Out, Sandbox, assert_no_panic, parse_json};
use perfsleuth_model::{ImpactClass, Mode, Run, RunStatus};
use perfsleuth_store::{RunReader as _, RunWriter as _, SqliteStore};
use serde_json::Value;
use std::io::Read;
use std::os::unix::process::CommandExt;
use std::process::Stdio;
use std::time::{Duration, Instant};

/// `perfsleuth probe --quick --store <sandbox store> NAMES…`, which must succeed.
fn probe_quick(sb: &Sandbox, names: &[&str]) -> Out {
    let store = sb.store();
    let mut args = vec!["probe", "--quick", "--store", &store];
    args.extend_from_slice(names);
    sb.run(args).ok()
}

/// `perfsleuth probe diff A B --store <sandbox store> EXTRA…`.
fn diff(sb: &Sandbox, a: &str, b: &str, extra: &[&str]) -> Out {
    let store = sb.store();
    let mut args = vec!["probe", "diff", a, b, "--store", &store];
    args.extend_from_slice(extra);
    sb.run(args)
}

/// Sets a fact in a JSON fact map (`facts` of a probe document,
/// `run.environment` of a run export), creating it when absent.
fn set_fact(facts: &mut Value, key: &str, value: &str, class: &str) {
    facts[key] = serde_json::json!({"value": value, "class": class});
}

/// The measurement `metric` of a probe document, for editing.
fn measurement<'a>(doc: &'a mut Value, metric: &str) -> &'a mut Value {
    doc["reports"]
        .as_array_mut()
        .expect("reports")
        .iter_mut()
        .flat_map(|r| r["measurements"].as_array_mut().expect("measurements"))
        .find(|m| m["metric"] == metric)
        .unwrap_or_else(|| panic!("no {metric} measurement"))
}

#[test]
fn a_quick_subset_is_stored_and_shown_by_runs_and_show() {
    let sb = Sandbox::new();
    // Given in the "wrong" order: they run in the suite's order.
    let out = probe_quick(&sb, &["clock", "syscall"]);
    for needle in [
        "syscall",
        "getppid",
        "clock_gettime_vdso",
        "clock",
        "monotonic_read",
    ] {
        assert!(out.stdout.contains(needle), "no {needle}: {out:?}");
    }
    assert!(
        out.stdout.find("getppid") < out.stdout.find("monotonic_read"),
        "{out:?}"
    );
    assert!(
        !out.stdout.contains("clock_gettime_syscall"),
        "a detail metric without --all: {out:?}"
    );
    if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        assert!(out.stdout.contains("Cycles are estimated"), "{out:?}");
        assert!(out.stdout.contains("cycles"), "{out:?}");
    }
    assert!(out.stderr.contains("Stored as run 1"), "{out:?}");

    let runs = sb.runs_json();
    assert_eq!(runs.len(), 1);
    assert_eq!(runs[0]["mode"], "probe");
    assert_eq!(runs[0]["status"], "complete");
    assert_eq!(runs[0]["probes"], serde_json::json!(["syscall", "clock"]));
    let table = sb.run(["runs", "--store", &sb.store()]).ok();
    // The mode column says probe; the last names the probes.
    let row = table.stdout.lines().nth(1).unwrap_or_default();
    assert!(
        row.contains(" probe ") && row.ends_with("syscall, clock"),
        "{table:?}"
    );

    // `show` prints the probe results, not a wall-time summary.
    let show = sb.run(["show", "--store", &sb.store()]).ok();
    assert!(show.stdout.contains("Run 1: probes (quick)"), "{show:?}");
    assert!(show.stdout.contains("getppid"), "{show:?}");
    assert!(!show.stdout.contains("Time (median"), "{show:?}");
    assert!(!show.stdout.contains("clock_gettime_syscall"), "{show:?}");
    let all = sb.run(["show", "--all", "--store", &sb.store()]).ok();
    assert!(all.stdout.contains("clock_gettime_syscall"), "{all:?}");

    let doc = sb.show_json("latest");
    assert_eq!(doc["run"]["mode"], "probe");
    assert_eq!(doc["run"]["benchmarks"], serde_json::json!([]));
    let probes = doc["run"]["probes"].as_array().expect("run.probes");
    let getppid = probes
        .iter()
        .find(|p| p["metric"] == "getppid")
        .expect("getppid stored");
    assert_eq!(getppid["probe"], "syscall");
    assert_eq!(getppid["unit"], "ns");
    assert_eq!(getppid["lower_is_better"], true);
    assert_eq!(getppid["headline"], true);
    assert!(
        getppid["value"].as_f64().is_some_and(|v| v > 0.0),
        "{getppid}"
    );
    for field in ["spread", "stable", "cycles", "note"] {
        assert!(getppid.get(field).is_some(), "no {field} in {getppid}");
    }
    // The clock behind the cycle counts is kept with the run.
    if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        assert!(
            doc["run"]["environment"]["probe.clock"]["value"]
                .as_str()
                .is_some_and(|v| v.contains("GHz")),
            "{}",
            doc["run"]["environment"]["probe.clock"]
        );
    }
}

#[test]
fn json_follows_the_probe_schema_and_no_store_stores_nothing() {
    let sb = Sandbox::new();
    let out = sb
        .run(["probe", "--quick", "--json", "--no-store", "calls"])
        .ok();
    let doc = parse_json(&out.stdout);
    assert_eq!(doc["schema"], "perfsleuth/probe");
    assert_eq!(doc["schema_version"], 1);
    assert_eq!(doc["run_id"], Value::Null);
    assert_eq!(doc["status"], "complete");
    assert_eq!(doc["quick"], true);
    let hash = doc["comparability"].as_str().expect("comparability");
    assert!(
        hash.len() == 12 && hash.chars().all(|c| c.is_ascii_hexdigit()),
        "{hash}"
    );
    assert!(doc["facts"]["cpu.model"]["value"].is_string(), "{doc}");
    let reports = doc["reports"].as_array().expect("reports");
    assert_eq!(reports.len(), 1);
    let calls = &reports[0];
    assert_eq!(calls["probe"], "calls");
    assert!(calls["duration_s"].as_f64().is_some_and(|d| d > 0.0));
    assert!(calls["messages"].is_array());
    let metrics: Vec<&str> = calls["measurements"]
        .as_array()
        .expect("measurements")
        .iter()
        .map(|m| m["metric"].as_str().unwrap_or_default())
        .collect();
    for m in [
        "inline_loop",
        "direct_call",
        "indirect_call",
        "indirect_call_ratio",
    ] {
        assert!(metrics.contains(&m), "no {m} in {metrics:?}");
    }
    if cfg!(any(target_arch = "x86_64", target_arch = "aarch64")) {
        assert!(
            doc["clock"]["ghz"].as_f64().is_some_and(|g| g > 0.1),
            "{doc}"
        );
        assert!(doc["clock"]["how"].is_string());
    }
    // --no-store: nothing written anywhere in the sandbox.
    assert!(!sb.db().exists());
    assert!(sb.files_named("results.db").is_empty());
    // --list describes every probe and runs none.
    let list = sb.run(["probe", "--list"]).ok();
    for p in [
        "calls",
        "syscall",
        "memory",
        "bandwidth",
        "coherency",
        "clock",
        "spawn",
    ] {
        assert!(list.stdout.contains(p), "no {p}: {list:?}");
    }
}

#[test]
fn an_unknown_probe_is_refused_before_anything_runs() {
    let sb = Sandbox::new();
    let out = sb.run(["probe", "--quick", "--store", &sb.store(), "calls", "cache"]);
    let out = out.usage_error("unknown probe `cache`");
    assert!(
        out.stderr
            .contains("calls, syscall, memory, bandwidth, coherency, clock, spawn"),
        "{out:?}"
    );
    assert!(out.stderr.contains("probe --list"), "{out:?}");
    assert!(out.stdout.is_empty(), "something ran: {out:?}");
    assert!(!sb.db().exists(), "the store was created: {out:?}");
}

#[test]
fn two_stored_quick_runs_diff_and_runs_without_probes_are_refused() {
    let sb = Sandbox::new();
    probe_quick(&sb, &["calls", "syscall"]);
    // A run of a command between the two probe runs: `latest~N` in
    // `probe diff` counts probe runs, in `compare` runs of commands.
    sb.bench(["--runs", "3", "--warmup", "0", "true"]).ok();
    probe_quick(&sb, &["calls", "syscall"]);

    let out = diff(&sb, "latest~1", "latest", &[]);
    assert_no_panic(&out);
    // The same machine minutes apart. Whether its noise stays inside the
    // assumed band is a timing question — under the test suite's own load
    // a syscall once read 1.55× slower — validated by docs/PROBES.md's
    // study, not asserted here: 0 or 1, agreeing with the output below.
    assert!(out.code == 0 || out.code == 1, "{out:?}");
    assert!(out.stdout.contains("Run-to-run noise assumed"), "{out:?}");
    assert!(
        out.stdout
            .starts_with("A: run 1  (quick; probes calls, syscall;"),
        "{out:?}"
    );
    assert!(out.stdout.contains("B: run 3  (quick"), "{out:?}");
    assert!(out.stdout.contains("headline metrics"), "{out:?}");
    assert_eq!(
        out.code == 1,
        out.stdout.contains("Significant differences"),
        "exit code and output disagree: {out:?}"
    );

    let json = diff(&sb, "1", "3", &["--json"]);
    assert!(json.code == 0 || json.code == 1, "{json:?}");
    let doc = parse_json(&json.stdout);
    assert_eq!(doc["schema"], "perfsleuth/probe-diff");
    assert_eq!(doc["a"]["run_id"], 1);
    assert_eq!(doc["b"]["run_id"], 3);
    assert_eq!(doc["differs"], json.code == 1);
    let deltas = doc["deltas"].as_array().expect("deltas");
    let indirect = deltas
        .iter()
        .find(|d| d["metric"] == "indirect_call")
        .expect("indirect_call paired");
    assert!(indirect["ratio"].as_f64().is_some_and(|r| r > 0.0));
    assert!(indirect["significant"].is_boolean() && indirect["explanations"].is_array());

    diff(&sb, "1", "2", &[])
        .usage_error("run 2 has no probe results; run `perfsleuth probe` first");
    diff(&sb, "latest~5", "latest", &[]).usage_error("no stored probe run matches `latest~5`");
    // `compare` refuses a probe run, and its `latest` skips them.
    sb.run(["compare", "1", "2", "--store", &sb.store()])
        .usage_error("run 1 is a `perfsleuth probe` run");
    sb.run(["compare", "--store", &sb.store()])
        .usage_error("no earlier run");
    // With three other probe runs of this machine, the noise is learned from
    // them (never from the pair compared, which would always fall inside it).
    for _ in 0..3 {
        probe_quick(&sb, &["calls", "syscall"]);
    }
    let out = diff(&sb, "latest~1", "latest", &[]);
    assert!(
        out.stdout
            .contains("widened where 3 other stored probe runs"),
        "{out:?}"
    );
    assert_eq!(
        out.code == 1,
        out.stdout.contains("Significant differences"),
        "exit code and output disagree: {out:?}"
    );
    let json = diff(&sb, "latest~1", "latest", &["--json"]);
    let doc = parse_json(&json.stdout);
    let noise = doc["deltas"][0]["noise"].as_f64().unwrap_or(-1.0);
    assert!(noise >= 0.0, "{doc}");
}

#[test]
fn json_files_tie_a_slowdown_to_the_changed_mitigation() {
    let sb = Sandbox::new();
    let out = sb
        .run(["probe", "--quick", "--json", "--no-store", "calls"])
        .ok();
    let mut a = parse_json(&out.stdout);
    // Deterministic facts and spreads on both sides, so only the edit differs.
    set_fact(
        &mut a["facts"],
        "mitigation.spectre_v2",
        "Mitigation: Retpolines; STIBP: disabled",
        "performance",
    );
    measurement(&mut a, "indirect_call")["spread"] = 0.01.into();
    let mut b = a.clone();
    set_fact(
        &mut b["facts"],
        "mitigation.spectre_v2",
        "Mitigation: IBRS; STIBP: disabled",
        "performance",
    );
    let m = measurement(&mut b, "indirect_call");
    m["value"] = (m["value"].as_f64().expect("value") * 5.0).into();
    sb.write("a.json", serde_json::to_string_pretty(&a).unwrap());
    sb.write("b.json", serde_json::to_string_pretty(&b).unwrap());

    let out = diff(&sb, "a.json", "b.json", &[]);
    assert_eq!(out.code, 1, "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.contains("calls indirect_call ") && l.contains("5.00× slower"))
        .unwrap_or_else(|| panic!("no indirect_call line: {out:?}"));
    assert_eq!(
        lines[at + 1].trim(),
        "mitigation.spectre_v2: Retpolines → IBRS",
        "{out:?}"
    );
    assert!(
        out.stdout.contains("1 of ") && out.stdout.contains("differs significantly (1 worse"),
        "{out:?}"
    );

    let json = diff(&sb, "a.json", "b.json", &["--json"]);
    assert_eq!(json.code, 1, "{json:?}");
    let doc = parse_json(&json.stdout);
    assert_eq!(doc["differs"], true);
    let d = doc["deltas"]
        .as_array()
        .unwrap()
        .iter()
        .find(|d| d["metric"] == "indirect_call")
        .expect("indirect_call")
        .clone();
    assert_eq!(d["significant"], true);
    assert_eq!(d["worse"], true);
    assert_eq!(d["change"], "5.00× slower");
    assert_eq!(
        d["explanations"],
        serde_json::json!(["mitigation.spectre_v2: Retpolines → IBRS"])
    );

    // This machine now, for the probes the file has; stored only with --save.
    let now = diff(&sb, "a.json", "current", &[]);
    assert!(now.code == 0 || now.code == 1, "{now:?}");
    assert!(
        now.stdout.contains("B: current  (quick; probes calls;"),
        "{now:?}"
    );
    assert!(
        !sb.db().exists(),
        "current was stored without --save: {now:?}"
    );
    let saved = diff(&sb, "current", "a.json", &["--save"]);
    assert!(saved.code == 0 || saved.code == 1, "{saved:?}");
    assert!(saved.stdout.contains("A: current (run 1)"), "{saved:?}");
    assert_eq!(sb.runs_json()[0]["probes"], serde_json::json!(["calls"]));
    // The same file on both sides: nothing differs.
    assert_eq!(diff(&sb, "a.json", "a.json", &[]).ok().code, 0);
    // `env diff` reads the same documents.
    let env = sb.run(["env", "diff", "a.json", "b.json"]);
    assert_eq!(env.code, 1, "{env:?}");
    assert!(env.stdout.contains("Retpolines → IBRS"), "{env:?}");
    // Bad files are one-line errors, never panics.
    diff(&sb, "a.json", "missing.json", &[]).usage_error("missing.json: no such file");
    sb.write("broken.json", "{\"schema\": \"perfsleuth/probe\", ");
    diff(&sb, "a.json", "broken.json", &[]).usage_error("not JSON");
    sb.write(
        "other.json",
        "{\"schema\": \"perfsleuth/probe\", \"schema_version\": 1, \"reports\": 7}",
    );
    diff(&sb, "other.json", "a.json", &[]).usage_error("malformed reports");
    sb.write("empty.json", "[]");
    diff(&sb, "empty.json", "a.json", &[]).usage_error("not a perfsleuth probe document");
}

#[test]
fn compare_mentions_probe_differences_between_the_machines() {
    let sb = Sandbox::new();
    probe_quick(&sb, &["calls"]);
    sb.bench([
        "--runs",
        "3",
        "--warmup",
        "0",
        "--export-json",
        "base.json",
        "true",
    ])
    .ok();
    // The candidate "ran after a kernel update": another release (an identity
    // fact) and another spectre_v2 mitigation.
    let mut cand = parse_json(&std::fs::read_to_string(sb.path("base.json")).unwrap());
    let env = &mut cand["run"]["environment"];
    set_fact(env, "kernel.release", "6.99.0-after-update", "identity");
    set_fact(
        env,
        "mitigation.spectre_v2",
        "Mitigation: IBRS",
        "performance",
    );
    sb.write("cand.json", serde_json::to_string_pretty(&cand).unwrap());

    // Without probes of the candidate's machine, nothing about probes.
    let out = sb.run(["compare", "base.json", "cand.json", "--store", &sb.store()]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(!out.stdout.contains("probes:"), "{out:?}");

    // The candidate's machine, probed: the stored probe run with its
    // environment and an indirect call 5× slower.
    let mut store = SqliteStore::open(&sb.db()).unwrap();
    let probed = store.load_run(1).unwrap().expect("probe run 1");
    let cand_run: Run = serde_json::from_value(cand["run"].clone()).unwrap();
    let mut after = Run {
        id: None,
        uuid: None,
        mode: Mode::Probe,
        status: RunStatus::Running,
        environment: cand_run.environment.clone(),
        benchmarks: Vec::new(),
        ..probed.clone()
    };
    for p in &mut after.probes {
        if p.metric == "indirect_call" {
            p.value *= 5.0;
            p.spread = 0.01;
        }
    }
    assert_eq!(
        after.environment.facts["kernel.release"].class,
        ImpactClass::Identity
    );
    let id = store.begin_run(&after).unwrap();
    store.add_probe_results(id, &after.probes).unwrap();
    store
        .finish_run(id, RunStatus::Complete, "2026-01-01T00:00:00.000Z")
        .unwrap();
    drop(store);

    let out = sb.run(["compare", "base.json", "cand.json", "--store", &sb.store()]);
    assert_eq!(out.code, 0, "{out:?}");
    let note = out
        .stdout
        .lines()
        .find(|l| l.contains("probes: indirect call 5.00× slower on the candidate's machine"))
        .unwrap_or_else(|| panic!("no probe note: {out:?}"));
    assert!(
        note.contains("kernel.release:") && note.contains("→ IBRS"),
        "{note}"
    );
    assert!(
        out.stdout
            .contains(&format!("from probe run 1 (the baseline's machine) and {id} (the candidate's); see `perfsleuth probe diff 1 {id}`")),
        "{out:?}"
    );
    let json = sb.run([
        "compare",
        "base.json",
        "cand.json",
        "--format",
        "json",
        "--store",
        &sb.store(),
    ]);
    let doc = parse_json(&json.stdout);
    assert!(
        doc["notes"].as_array().is_some_and(|n| n.iter().any(|n| n
            .as_str()
            .is_some_and(|s| s.starts_with("probes: indirect call")))),
        "{doc}"
    );
}

#[test]
fn ctrl_c_between_probes_keeps_what_was_measured() {
    let sb = Sandbox::new();
    let store = sb.store();
    // Default mode: the memory probe takes long enough to be interrupted in.
    let mut child = sb
        .std_cmd()
        .args(["probe", "--store", &store, "calls", "memory", "clock"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .process_group(0)
        .spawn()
        .expect("spawn perfsleuth");
    let deadline = Instant::now() + Duration::from_secs(60);
    // Once `calls` is stored, Ctrl-C (to the whole group, as a terminal sends it).
    loop {
        let out = sb.run(["runs", "--json", "--store", &store]);
        if out.code == 0 && parse_json(&out.stdout)["runs"][0]["probes"][0] == "calls" {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "no probe results appeared: {out:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    // SAFETY: kill(2) with a negative pid signals the child's own process group.
    let rc = unsafe { libc::kill(-(child.id() as i32), libc::SIGINT) };
    assert_eq!(rc, 0);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("perfsleuth probe did not stop after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("status interrupted"), "{stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
    let runs = sb.runs_json();
    assert_eq!(runs[0]["status"], "interrupted");
    let probes = runs[0]["probes"].as_array().unwrap();
    assert_eq!(probes[0], "calls");
    assert!(
        !probes.iter().any(|p| p == "clock"),
        "clock ran after Ctrl-C: {probes:?}"
    );
    sb.run(["show", "--store", &store]).ok();
}

#[test]
fn current_is_probed_as_the_other_side_was_and_unlike_sides_are_not_judged() {
    // `probe diff here.json current` ran `current` --quick against a full
    // file and called an unchanged machine slower (issue 38).
    let sb = Sandbox::new();
    let full = sb.run(["probe", "--json", "--no-store", "calls"]).ok();
    std::fs::write(sb.path("full.json"), &full.stdout).unwrap();
    let quick = sb
        .run(["probe", "--quick", "--json", "--no-store", "calls"])
        .ok();
    std::fs::write(sb.path("quick.json"), &quick.stdout).unwrap();
    let out = sb.run(["probe", "diff", "full.json", "current", "--json"]);
    let doc = crate::common::parse_json(&out.stdout);
    assert_eq!(doc["b"]["quick"], false, "{doc}");
    // A quick side against a full one: listed, not judged, and said.
    let out = sb.run(["probe", "diff", "full.json", "quick.json"]);
    assert_eq!(out.code, 0, "{out:?}");
    assert!(out.stderr.contains("probed differently"), "{out:?}");
}
