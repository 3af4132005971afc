//! `perfsleuth explain`: the three validation cases of the issue, on real
//! programs, and every bad input. Simulation cases count instructions, so
//! their findings are exact; the wall-time case is a twentyfold effect of
//! a malloc tunable on one thread, which no load on the machine hides.

use crate::common::{Sandbox, parse_json};
use serde_json::Value;

/// Builds `src` (a C file of the repository) into the sandbox; `None` (the
/// skip printed) without the tools.
fn build(
    sb: &Sandbox,
    test: &str,
    src: &str,
    name: &str,
    extra: &[&str],
    tools: &[&str],
) -> Option<String> {
    if !perfsleuth_testkit::tools_present(test, tools) {
        return None;
    }
    Some(sb.gcc(name, src, extra).display().to_string())
}

/// `bench/explain/memops.c` built, as the command that runs it briefly.
fn strings(sb: &Sandbox, test: &str) -> Option<String> {
    build(
        sb,
        test,
        include_str!("../../../../bench/explain/memops.c"),
        "memops",
        &[],
        &["valgrind", "gcc"],
    )
    .map(|p| format!("{p} 2000"))
}

/// `run` in the sandbox store with extra environment variables.
fn bench_with(sb: &Sandbox, env: &[(&str, &str)], args: &[&str]) {
    let mut cmd = sb.cmd();
    cmd.arg("run").arg("--store").arg(sb.store()).args(args);
    // The variables the tests vary start unset, whatever this shell has.
    for k in [
        "GLIBC_TUNABLES",
        "OMP_NUM_THREADS",
        "GOGC",
        "MALLOC_MMAP_THRESHOLD_",
        "MALLOC_ARENA_MAX",
    ] {
        cmd.env_remove(k);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out: crate::common::Out = cmd.output().expect("start perfsleuth").into();
    let out = out.ok();
    assert!(out.stderr.contains("Stored as run"), "{out:?}");
}

fn explain(sb: &Sandbox, args: &[&str]) -> crate::common::Out {
    let mut all = vec!["explain", "--store"];
    let store = sb.store();
    all.push(&store);
    all.extend(args);
    sb.run(all)
}

fn explain_json(sb: &Sandbox, args: &[&str]) -> Value {
    let mut all = args.to_vec();
    all.extend(["--format", "json"]);
    let out = explain(sb, &all).ok();
    parse_json(&out.stdout)
}

fn findings(doc: &Value, bench: usize) -> &Vec<Value> {
    doc["benchmarks"][bench]["findings"]
        .as_array()
        .expect("findings")
}

fn finding<'a>(doc: &'a Value, name: &str) -> &'a Value {
    findings(doc, 0)
        .iter()
        .find(|f| f["experiment"] == name)
        .unwrap_or_else(|| panic!("no finding {name} in {doc:#}"))
}

fn runs(sb: &Sandbox) -> usize {
    sb.runs_json().len()
}

/// The glibc mask a user sets to turn off AVX2 dispatch (the preferred flag
/// too: glibc 2.36 keeps its AVX memcpy without it).
const NO_AVX2: &str = "glibc.cpu.hwcaps=-AVX2,-AVX,-AVX_Fast_Unaligned_Load";

#[test]
fn a_hwcaps_mask_set_by_the_user_is_named_and_an_unused_variable_has_no_effect() {
    let sb = Sandbox::new();
    let Some(cmd) = strings(&sb, "explain hwcaps") else {
        return;
    };
    let sim = ["--mode", "simulation", "--no-portable", &cmd];
    bench_with(&sb, &[], &sim);
    bench_with(
        &sb,
        &[("GLIBC_TUNABLES", NO_AVX2), ("OMP_NUM_THREADS", "4")],
        &sim,
    );
    let doc = explain_json(&sb, &["1", "2"]);
    assert_eq!(doc["schema"], "perfsleuth/explain");
    assert_eq!(doc["from"], "baseline");
    assert_eq!(doc["measured"], true);
    let b = &doc["benchmarks"][0];
    assert_eq!(b["metric"], "Ir");
    assert_eq!(b["observed_verdict"], "regressed", "{doc:#}");
    // The SSE2 string functions count far more instructions.
    assert!(b["observed"]["ratio"].as_f64().unwrap() > 1.3, "{doc:#}");
    let first = &findings(&doc, 0)[0];
    assert_eq!(first["experiment"], "glibc.cpu.hwcaps", "{doc:#}");
    assert_eq!(first["outcome"], "reproduces");
    let share = first["share"]["ratio"].as_f64().unwrap();
    assert!(
        (share - 1.0).abs() < 0.02,
        "the mask explains it all: {share}"
    );
    let unused = finding(&doc, "env.OMP_NUM_THREADS");
    assert_eq!(unused["outcome"], "no effect", "{doc:#}");
    assert!(
        b["conclusion"]
            .as_str()
            .unwrap()
            .starts_with("`glibc.cpu.hwcaps` reproduces"),
        "{doc:#}"
    );
    // What glibc read was checked before measuring.
    let hw = doc["experiments"]
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["name"] == "glibc.cpu.hwcaps")
        .unwrap();
    assert!(
        hw["verified"]
            .as_array()
            .unwrap()
            .contains(&Value::from("AVX2 off")),
        "{hw:#}"
    );
    // Stored as a run of variants, linked to both sides.
    let id = doc["run"].as_i64().unwrap().to_string();
    let run = sb.show_json(&id);
    let link = &run["run"]["options"]["explain"];
    assert_eq!(link["baseline_runs"], serde_json::json!([1]), "{link:#}");
    assert_eq!(link["candidate_runs"], serde_json::json!([2]));
    // The terminal says the same in words.
    let text = explain(&sb, &["1", "2"]).ok().stdout;
    assert!(text.contains("reproduces the difference"), "{text}");
    assert!(text.contains("no effect"), "{text}");
    // Markdown too.
    let md = explain(&sb, &["1", "2", "--format", "markdown"])
        .ok()
        .stdout;
    assert!(md.contains("| glibc.cpu.hwcaps |"), "{md}");
}

#[test]
fn case_a_at_the_defaults_applies_the_candidates_tunables_under_the_portable_profile() {
    // Case A as a user first runs it: simulation mode's portable profile is
    // the default, the candidate ran with its own GLIBC_TUNABLES. Before,
    // explain refused ("rerun both sides with --no-portable"); the
    // candidate's value is known and merges into the profile as its run did.
    let sb = Sandbox::new();
    let Some(cmd) = strings(&sb, "explain portable") else {
        return;
    };
    let sim = ["--mode", "simulation", &cmd];
    bench_with(&sb, &[], &sim);
    bench_with(&sb, &[("GLIBC_TUNABLES", NO_AVX2)], &sim);
    assert_eq!(
        sb.show_json("2")["run"]["environment"]["sim.portable"]["value"],
        "x86-64-v3",
        "both sides are portable counts"
    );
    let doc = explain_json(&sb, &["1", "2"]);
    assert_eq!(doc["measured"], true, "{doc:#}");
    let first = &findings(&doc, 0)[0];
    assert_eq!(first["experiment"], "glibc.cpu.hwcaps", "{doc:#}");
    assert_eq!(first["outcome"], "reproduces", "{doc:#}");
    let share = first["share"]["ratio"].as_f64().unwrap();
    assert!(
        (share - 1.0).abs() < 0.02,
        "the mask explains it all: {share}"
    );
    let untested = doc["untested"].to_string();
    assert!(!untested.contains("--no-portable"), "{untested}");
    assert!(!untested.contains("sim.glibc_tunables"), "{untested}");
}

/// `perfsleuth env show --json --root FIXTURE` into the sandbox.
fn fixture(sb: &Sandbox, tree: &str) -> String {
    let root = format!(
        "{}/../perfsleuth-env/tests/fixtures/{tree}",
        env!("CARGO_MANIFEST_DIR")
    );
    let out = sb.run(["env", "show", "--json", "--root", &root]).ok();
    sb.write(&format!("{tree}.json"), out.stdout);
    format!("{tree}.json")
}

fn here_facts(sb: &Sandbox) -> Value {
    let out = sb.run(["env", "show", "--json"]).ok();
    parse_json(&out.stdout)["facts"].clone()
}

#[test]
fn another_machines_fingerprint_gives_isa_and_cache_experiments_run_here() {
    let sb = Sandbox::new();
    let Some(cmd) = strings(&sb, "explain fixtures") else {
        return;
    };
    bench_with(&sb, &[], &["--mode", "simulation", "--no-portable", &cmd]);
    let here = here_facts(&sb);
    let mut cache_runs = 0;
    for tree in ["amd-epyc-7763", "intel-xeon-8370c"] {
        let file = fixture(&sb, tree);
        let doc = explain_json(&sb, &[&file, "1"]);
        assert_eq!(doc["from"], "candidate", "{doc:#}");
        assert_eq!(doc["measured"], true);
        let names: Vec<&str> = doc["experiments"]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| e["name"].as_str().unwrap())
            .collect();
        // Every experiment was measured here: one finding each.
        assert_eq!(findings(&doc, 0).len(), names.len(), "{doc:#}");
        assert!(doc["benchmarks"][0]["observed"].is_null());
        // The caches: simulated as the fixture's wherever they differ from ours.
        let geometry = |facts: &Value| -> Vec<String> {
            ["l1i", "l1d", "l3"]
                .iter()
                .flat_map(|l| ["size", "ways", "line"].map(|k| format!("cpu.cache.{l}.{k}")))
                .map(|k| facts[&k]["value"].as_str().unwrap_or("").to_string())
                .collect()
        };
        let theirs = parse_json(&std::fs::read_to_string(sb.path(&file)).unwrap())["facts"].clone();
        if geometry(&theirs) != geometry(&here) {
            assert!(names.contains(&"cache-model"), "{tree}: {doc:#}");
            cache_runs += 1;
        }
        // The ISA: a mask where this CPU (as valgrind shows it) has more;
        // else said why not, never silently left out.
        let keys: Vec<&str> = doc["untested"]
            .as_array()
            .unwrap()
            .iter()
            .map(|u| u["key"].as_str().unwrap())
            .collect();
        let flags_differ = theirs["cpu.flags"] != here["cpu.flags"];
        if flags_differ {
            assert!(
                names.contains(&"isa") || keys.contains(&"cpu.flags"),
                "{tree}: the ISA difference is neither tested nor listed: {doc:#}"
            );
        }
        // A mask only ever takes away what the fixture's CPU lacks.
        let their_flags: Vec<&str> = theirs["cpu.flags"]["value"]
            .as_str()
            .unwrap()
            .split(' ')
            .collect();
        if let Some(isa) = doc["experiments"]
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["name"] == "isa")
        {
            let spec = isa["spec"].as_str().unwrap();
            let mask = spec.split("glibc.cpu.hwcaps=").nth(1).unwrap();
            for entry in mask.split([',', ':']).filter_map(|e| e.strip_prefix('-')) {
                let flag = match entry {
                    "AVX_Fast_Unaligned_Load" | "Prefer_AVX2_STRCMP" => continue,
                    "LZCNT" => "abm".to_string(),
                    other => other.to_ascii_lowercase(),
                };
                assert!(
                    !their_flags.contains(&flag.as_str()),
                    "{tree}: {entry} masked, yet the fixture has it: {spec}"
                );
            }
        }
        // glibc's cache sizes as the fixture's, wherever they differ from ours.
        let value = |facts: &Value, k: &str| facts[k]["value"].as_str().unwrap_or("").to_string();
        let sizes_differ = value(&theirs, "cpu.cache.l1d.size")
            != value(&here, "libc.ld_so.x86_data_cache_size")
            || value(&theirs, "cpu.cache.l3.size")
                != value(&here, "libc.ld_so.x86_shared_cache_size");
        if sizes_differ && geometry(&theirs) != geometry(&here) {
            assert!(names.contains(&"cache-sizes"), "{tree}: {doc:#}");
            let cs = doc["experiments"]
                .as_array()
                .unwrap()
                .iter()
                .find(|e| e["name"] == "cache-sizes")
                .unwrap();
            assert!(
                !cs["verified"].as_array().unwrap().is_empty(),
                "glibc was seen to apply them: {cs:#}"
            );
        }
        // The CPU itself cannot be changed: listed with its reason.
        assert!(
            theirs["cpu.model"] == here["cpu.model"]
                || doc["untested"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|u| u["key"] == "cpu.model" && !u["reason"].as_str().unwrap().is_empty()),
            "{doc:#}"
        );
    }
    // The two fixtures' caches differ from each other, so at least one differs from ours.
    assert!(cache_runs >= 1);
}

#[test]
fn a_malloc_tunable_is_named_in_wall_time() {
    let sb = Sandbox::new();
    let Some(prog) = build(
        &sb,
        "explain malloc",
        include_str!("../../../../bench/explain/malloc.c"),
        "malloc",
        &["-pthread"],
        &["gcc"],
    ) else {
        return;
    };
    // Blocks above the mmap threshold: a fixed threshold keeps each an mmap.
    let cmd = format!("{prog} 1 262144 500");
    let wall = ["--runs", "15", "--rounds", "5", &cmd];
    bench_with(&sb, &[], &wall);
    bench_with(
        &sb,
        &[("MALLOC_MMAP_THRESHOLD_", "131072"), ("GOGC", "50")],
        &wall,
    );
    // The experiments are profiled too, where this machine samples.
    let samples = sb
        .run(["run", "--no-store", "--runs", "1", "--profile", "true"])
        .code
        == 0;
    let mut args = vec!["1", "2", "--runs", "15", "--rounds", "5"];
    if samples {
        args.push("--profile");
    } else {
        perfsleuth_testkit::skip(
            "perf_software",
            "explain --profile: cpu-clock sampling refused",
        );
    }
    let doc = explain_json(&sb, &args);
    if samples {
        let measured = sb.show_json("latest");
        let benches = measured["run"]["benchmarks"].as_array().unwrap();
        assert!(
            benches.len() >= 3 && benches.iter().all(|b| b["stacks"]["event"] == "cpu-clock"),
            "every experiment profiled: {measured}"
        );
    }
    let b = &doc["benchmarks"][0];
    // Wall-time mode: the judged time, CPU time for this program that keeps
    // one CPU busy without waiting (mmap and munmap are system time).
    assert!(
        ["wall", "cpu"].contains(&b["metric"].as_str().unwrap()),
        "{doc:#}"
    );
    assert_eq!(b["observed_verdict"], "regressed", "{doc:#}");
    let first = &findings(&doc, 0)[0];
    assert_eq!(first["experiment"], "env.MALLOC_MMAP_THRESHOLD_", "{doc:#}");
    assert!(
        ["reproduces", "partly"].contains(&first["outcome"].as_str().unwrap()),
        "{doc:#}"
    );
    assert!(
        b["conclusion"]
            .as_str()
            .unwrap()
            .contains("env.MALLOC_MMAP_THRESHOLD_"),
        "{doc:#}"
    );
    // The unrelated variable does not reproduce it.
    let other = finding(&doc, "env.GOGC");
    assert_ne!(other["outcome"], "reproduces", "{doc:#}");
}

#[test]
fn a_difference_within_noise_is_nothing_to_explain_and_nothing_is_measured() {
    let sb = Sandbox::new();
    let Some(cmd) = strings(&sb, "explain noise") else {
        return;
    };
    let sim = ["--mode", "simulation", "--no-portable", &cmd];
    bench_with(&sb, &[], &sim);
    bench_with(&sb, &[("OMP_NUM_THREADS", "4")], &sim);
    let before = runs(&sb);
    let out = explain(&sb, &["1", "2"]).ok();
    assert!(out.stdout.contains("nothing to explain"), "{out:?}");
    assert_eq!(runs(&sb), before, "nothing measured, nothing stored");
    let doc = explain_json(&sb, &["1", "2"]);
    assert_eq!(doc["measured"], false);
    assert_eq!(doc["benchmarks"][0]["observed_verdict"], "no change");
}

#[test]
fn an_experiment_glibc_does_not_apply_is_reported_not_run_as_the_base() {
    let sb = Sandbox::new();
    let Some(cmd) = strings(&sb, "explain unapplied") else {
        return;
    };
    let sim = ["--mode", "simulation", "--no-portable", &cmd];
    bench_with(&sb, &[], &sim);
    // glibc ignores a tunable it does not have; the mask makes the difference.
    let tunables = format!("{NO_AVX2}:glibc.no.such=1");
    bench_with(&sb, &[("GLIBC_TUNABLES", &tunables)], &sim);
    let doc = explain_json(&sb, &["1", "2"]);
    let unapplied = doc["untested"]
        .as_array()
        .unwrap()
        .iter()
        .find(|u| u["reason"].as_str().unwrap().contains("glibc.no.such"))
        .unwrap_or_else(|| panic!("not reported: {doc:#}"));
    assert!(
        unapplied["reason"]
            .as_str()
            .unwrap()
            .contains("could not be applied"),
        "{unapplied:#}"
    );
    let measured: Vec<&str> = findings(&doc, 0)
        .iter()
        .map(|f| f["experiment"].as_str().unwrap())
        .collect();
    assert_eq!(measured, vec!["glibc.cpu.hwcaps"], "{doc:#}");
}

#[test]
fn bad_input_is_an_error_with_a_hint() {
    let sb = Sandbox::new();
    let mytrue = sb.path("mytrue");
    std::fs::copy("/bin/true", &mytrue).unwrap();
    let mytrue = mytrue.display().to_string();
    bench_with(&sb, &[], &["--runs", "3", "true"]);
    bench_with(&sb, &[], &["--runs", "3", &mytrue]);
    let stored = runs(&sb);
    // Two runs with no shared benchmark.
    explain(&sb, &["1", "2"]).usage_error("share no benchmark");
    // A benchmark that is not there.
    explain(&sb, &["1", "1", "nosuch"]).usage_error("no benchmark `nosuch`");
    // A budget that is not a duration is the user's to fix, not "please report this".
    explain(&sb, &["1", "2", "--time-budget", "3x"]).clap_error("unknown unit");
    // Neither side has results.
    explain(&sb, &["current", "current"]).usage_error("has results");
    let env = sb.run(["env", "show", "--json"]).ok();
    sb.write("here.json", env.stdout);
    explain(&sb, &["here.json", "current"]).usage_error("has results");
    // A command that no longer exists here.
    std::fs::remove_file(&mytrue).unwrap();
    explain(&sb, &["2", "current"]).usage_error("no longer exists");
    // A run that is not there, and two modes.
    explain(&sb, &["1", "99"]).usage_error("99");
    // A run of variants is one explanation already.
    bench_with(
        &sb,
        &[],
        &["--runs", "2", "--variant", "v=env:GOGC=1", "true"],
    );
    let variants = runs(&sb).to_string();
    explain(&sb, &[&variants, "current"]).usage_error("run --variant");
    let mut stored = stored + 1;
    if perfsleuth_testkit::tools_present("explain modes", &["valgrind"]) {
        bench_with(&sb, &[], &["--mode", "simulation", "--no-portable", "true"]);
        stored += 1;
        let sim = stored.to_string();
        explain(&sb, &["1", &sim]).usage_error("simulation");
    }
    // Nothing was stored by any of them.
    assert_eq!(runs(&sb), stored);
}

#[test]
fn plan_lists_the_experiments_and_measures_nothing() {
    let sb = Sandbox::new();
    bench_with(&sb, &[], &["--runs", "3", "true"]);
    bench_with(&sb, &[("MALLOC_ARENA_MAX", "2")], &["--runs", "3", "true"]);
    let before = runs(&sb);
    let doc = explain_json(&sb, &["1", "2", "--plan"]);
    assert_eq!(doc["measured"], false);
    let e = &doc["experiments"][0];
    assert_eq!(e["name"], "env.MALLOC_ARENA_MAX", "{doc:#}");
    assert_eq!(e["spec"], "env:MALLOC_ARENA_MAX=2");
    assert_eq!(runs(&sb), before);
}

#[test]
fn against_this_machine_the_experiments_start_from_the_candidate() {
    // The stored run had the mask; this machine (as it is) has not: the
    // difference is measured now, and the mask, tried here, reproduces its
    // inverse.
    let sb = Sandbox::new();
    let Some(cmd) = strings(&sb, "explain current") else {
        return;
    };
    bench_with(
        &sb,
        &[("GLIBC_TUNABLES", NO_AVX2)],
        &["--mode", "simulation", "--no-portable", &cmd],
    );
    let mut c = sb.cmd();
    c.args([
        "explain",
        "--store",
        &sb.store(),
        "1",
        "current",
        "--format",
        "json",
    ]);
    c.env_remove("GLIBC_TUNABLES");
    let out: crate::common::Out = c.output().expect("start perfsleuth").into();
    let doc = parse_json(&out.ok().stdout);
    assert_eq!(doc["from"], "candidate", "{doc:#}");
    let b = &doc["benchmarks"][0];
    // Without the mask this machine counts fewer instructions.
    assert_eq!(b["observed_verdict"], "improved", "{doc:#}");
    let observed = b["observed"]["ratio"].as_f64().unwrap();
    let expected = b["expected"].as_f64().unwrap();
    assert!((observed * expected - 1.0).abs() < 1e-9, "{doc:#}");
    let first = &findings(&doc, 0)[0];
    assert_eq!(first["experiment"], "glibc.cpu.hwcaps", "{doc:#}");
    assert_eq!(first["outcome"], "reproduces");
    assert!(first["effect"]["ratio"].as_f64().unwrap() > 1.3);
}

#[test]
fn a_malloc_tunable_in_glibc_tunables_is_named_in_simulation() {
    let sb = Sandbox::new();
    let Some(prog) = build(
        &sb,
        "explain tcache",
        include_str!("../../../../bench/explain/malloc.c"),
        "malloc",
        &["-pthread"],
        &["valgrind", "gcc"],
    ) else {
        return;
    };
    // Small blocks come from the per-thread cache; without it, from the bins.
    let sim = [
        "--mode",
        "simulation",
        "--no-portable",
        &format!("{prog} 1 64 20000"),
    ];
    let sim: Vec<&str> = sim.iter().map(|s| s.as_ref()).collect();
    bench_with(&sb, &[], &sim);
    bench_with(
        &sb,
        &[
            ("GLIBC_TUNABLES", "glibc.malloc.tcache_count=0"),
            ("GOGC", "50"),
        ],
        &sim,
    );
    let doc = explain_json(&sb, &["1", "2"]);
    let first = &findings(&doc, 0)[0];
    assert_eq!(first["experiment"], "glibc.malloc.tcache_count", "{doc:#}");
    assert_eq!(first["outcome"], "reproduces");
    assert_eq!(finding(&doc, "env.GOGC")["outcome"], "no effect", "{doc:#}");
}
