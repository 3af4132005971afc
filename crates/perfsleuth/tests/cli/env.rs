//! `perfsleuth env show | diff | check` as processes, against the fixture
//! trees of perfsleuth-env (`--root`, `PERFSLEUTH_ROOT`, `--cpuid`) and
//! against stored runs and exported files.

use crate::common::{Out, Sandbox, assert_no_panic, parse_json};
use serde_json::Value;
use std::ffi::OsStr;
use std::path::PathBuf;

const INTEL: &str = "intel-xeon-8370c";
const AMD: &str = "amd-epyc-7763";
const CONTAINER: &str = "container-vm-cgroupv2";
const GARBAGE: &str = "garbage";

const INTEL_MODEL: &str = "Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz";
const AMD_MODEL: &str = "AMD EPYC 7763 64-Core Processor";

fn fixture(name: &str) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../perfsleuth-env/tests/fixtures")
        .join(name)
}

fn root_arg(name: &str) -> String {
    fixture(name).display().to_string()
}

/// A perfsleuth command in the sandbox, with the caches in it and no ld.so runs.
fn cmd(sb: &Sandbox) -> assert_cmd::Command {
    let mut cmd = sb.cmd();
    cmd.env("XDG_CACHE_HOME", sb.path("cache"))
        .env("HOME", sb.path("home"))
        .env("PERFSLEUTH_NO_LDSO", "1")
        .env("NO_COLOR", "1")
        .env_remove("PERFSLEUTH_ROOT");
    cmd
}

fn ps<I, S>(sb: &Sandbox, args: I) -> Out
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    cmd(sb)
        .args(args)
        .output()
        .expect("start perfsleuth")
        .into()
}

/// `perfsleuth run --store <sandbox store> --runs 2 --warmup 0 EXTRA… true`.
fn bench(sb: &Sandbox, extra: &[&str]) -> Out {
    let store = sb.store();
    let mut args = vec!["run", "--store", &store, "--runs", "2", "--warmup", "0"];
    args.extend_from_slice(extra);
    args.push("true");
    ps(sb, args).ok()
}

/// `env show --json --root TREE`, parsed.
fn show_json(sb: &Sandbox, tree: &str) -> Value {
    let out = ps(sb, ["env", "show", "--json", "--root", &root_arg(tree)]).ok();
    parse_json(&out.stdout)
}

fn is_hex(s: &str, len: usize) -> bool {
    s.len() == len && s.chars().all(|c| c.is_ascii_hexdigit())
}

#[track_caller]
fn assert_contains(out: &Out, needle: &str) {
    assert!(
        out.stdout.contains(needle),
        "stdout does not contain {needle:?}: {out:?}"
    );
}

/// Exit 0 or 1, as `env diff` answers when it worked.
#[track_caller]
fn diff_answered(out: Out) -> Out {
    assert!(out.code == 0 || out.code == 1, "env diff failed: {out:?}");
    assert_no_panic(&out);
    out
}

// ---------------------------------------------------------------------------
// env show
// ---------------------------------------------------------------------------

#[test]
fn show_root_prints_the_groups_of_the_tree() {
    let sb = Sandbox::new();
    let out = ps(&sb, ["env", "show", "--root", &root_arg(INTEL)]).ok();
    for group in [
        "\nCPU\n",
        "\nMemory\n",
        "\nKernel\n",
        "\nCPU vulnerability mitigations\n",
        "\nC library\n",
        "\nVirtualisation\n",
        "\nControl group\n",
        "\nProcess\n",
        "\nEnvironment variables\n",
        "\nNoise at start\n",
        "\nOperating system\n",
    ] {
        assert_contains(&out, group);
    }
    assert_contains(&out, INTEL_MODEL);
    assert_contains(&out, "comparability ");
    let model = out
        .stdout
        .lines()
        .find(|l| l.contains(" cpu.model "))
        .unwrap_or_else(|| panic!("no cpu.model line: {out:?}"));
    assert!(model.trim_end().ends_with(INTEL_MODEL), "{model}");
    assert!(
        out.stdout
            .lines()
            .any(|l| l.contains("virt.hypervisor") && l.trim_end().ends_with("Hyper-V")),
        "{out:?}"
    );
    // A cache's CPU list reads as CPUs, not as a count ("0" would look like none).
    let shared: Vec<&str> = out
        .stdout
        .lines()
        .filter(|l| l.contains(".shared_cpus "))
        .collect();
    assert!(!shared.is_empty(), "{out:?}");
    for l in &shared {
        let value = l.split(".shared_cpus").nth(1).unwrap_or_default().trim();
        assert!(
            value.starts_with("CPU ") || value.starts_with("CPUs ") || value.starts_with("unknown"),
            "{l}"
        );
    }
    // Groups come in order.
    let pos = |s: &str| out.stdout.find(s).unwrap();
    assert!(pos("\nCPU\n") < pos("\nMemory\n"));
    assert!(pos("\nMemory\n") < pos("\nKernel\n"));
    // Unknown facts show their reason.
    assert_contains(&out, "unknown (");
}

#[test]
fn show_root_json_is_the_documented_document() {
    let sb = Sandbox::new();
    let doc = show_json(&sb, INTEL);
    assert_eq!(doc["schema"], "perfsleuth/environment", "{doc}");
    assert!(doc["schema_version"].as_u64().is_some(), "{doc}");
    let hash = doc["comparability"].as_str().expect("comparability");
    assert!(is_hex(hash, 12), "{hash}");
    let facts = &doc["facts"];
    assert_eq!(facts["cpu.model"]["value"], INTEL_MODEL);
    assert_eq!(facts["cpu.model"]["class"], "identity");
    assert_eq!(facts["cpu.cache.l2.size"]["value"], "1280 KiB");
    assert_eq!(facts["cpu.isa_level"]["value"], "x86-64-v4");
    assert_eq!(facts["virt.hypervisor"]["value"], "Hyper-V");
    assert_eq!(facts["os.arch"]["value"], "unknown");
    assert!(
        facts["os.arch"]["reason"]
            .as_str()
            .is_some_and(|r| !r.is_empty()),
        "{}",
        facts["os.arch"]
    );
    // The same tree gives the same hash; another tree another.
    assert_eq!(show_json(&sb, INTEL)["comparability"], hash);
    assert_ne!(show_json(&sb, AMD)["comparability"], hash);
}

#[test]
fn perfsleuth_root_is_read_and_root_wins_over_it() {
    let sb = Sandbox::new();
    let out = cmd(&sb)
        .env("PERFSLEUTH_ROOT", fixture(CONTAINER))
        .args(["env", "show", "--json"])
        .output()
        .unwrap();
    let out = Out::from(out).ok();
    let doc = parse_json(&out.stdout);
    assert_eq!(
        doc["facts"]["cpu.model"]["value"],
        "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz"
    );
    assert_eq!(doc["facts"]["cgroup.cpu.quota"]["value"], "0.5 CPU");

    let out = cmd(&sb)
        .env("PERFSLEUTH_ROOT", fixture(CONTAINER))
        .args(["env", "show", "--json", "--root", &root_arg(AMD)])
        .output()
        .unwrap();
    let doc = parse_json(&Out::from(out).ok().stdout);
    assert_eq!(doc["facts"]["cpu.model"]["value"], AMD_MODEL);
}

#[test]
fn show_live_machine() {
    let sb = Sandbox::new();
    let out = ps(&sb, ["env", "show"]).ok();
    assert_contains(&out, "cpu.model");
    assert_contains(&out, "current machine");
    let doc = parse_json(&ps(&sb, ["env", "show", "--json"]).ok().stdout);
    assert_eq!(doc["schema"], "perfsleuth/environment");
    assert!(doc["facts"]["cpu.model"]["value"].is_string(), "{doc}");
    assert_eq!(doc["facts"]["os.arch"]["value"], std::env::consts::ARCH);
    // PERFSLEUTH_NO_LDSO keeps ld.so from running.
    assert_eq!(
        doc["facts"]["libc.ld_so.x86_data_cache_size"]["value"],
        "unknown"
    );
}

#[test]
fn show_garbage_tree_never_panics() {
    let sb = Sandbox::new();
    let out = ps(&sb, ["env", "show", "--root", &root_arg(GARBAGE)]).ok();
    assert_contains(&out, "unknown (");
    assert_contains(&out, "\nCPU\n");
    let doc = show_json(&sb, GARBAGE);
    assert_eq!(doc["facts"]["mem.total"]["value"], "unknown");
    assert!(doc["facts"]["mem.total"]["reason"].is_string());
    // check and diff of the junk do not panic either.
    let out = ps(&sb, ["env", "check", "--root", &root_arg(GARBAGE)]);
    assert!(out.code == 0 || out.code == 2, "{out:?}");
    assert_no_panic(&out);
    let out = ps(
        &sb,
        [
            "env",
            "diff",
            "--root",
            &root_arg(GARBAGE),
            "current",
            "current",
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_no_panic(&out);
}

// ---------------------------------------------------------------------------
// env diff of exported files
// ---------------------------------------------------------------------------

/// a.json: the EPYC, b.json: the Xeon (same OS image).
fn export_amd_and_intel(sb: &Sandbox) {
    for (file, tree) in [("a.json", AMD), ("b.json", INTEL)] {
        let out = ps(sb, ["env", "show", "--json", "--root", &root_arg(tree)]).ok();
        sb.write(file, out.stdout);
    }
}

#[test]
fn diff_of_two_exported_machines() {
    let sb = Sandbox::new();
    export_amd_and_intel(&sb);
    let out = ps(&sb, ["env", "diff", "a.json", "b.json"]);
    assert_eq!(out.code, 1, "different CPUs must exit 1: {out:?}");
    assert_no_panic(&out);
    assert_contains(&out, "A: a.json");
    assert_contains(&out, "B: b.json");
    assert_contains(&out, "L2: 512 KiB → 1280 KiB");
    assert_contains(&out, "L1d: 32 KiB → 48 KiB");
    assert_contains(&out, "avx512");
    assert_contains(&out, "ISA flags: ");
    assert_contains(&out, AMD_MODEL);
    assert_contains(&out, INTEL_MODEL);
    // Identity first, then performance; context facts hidden without --all.
    let identity = out
        .stdout
        .find("Identity changed")
        .expect("identity section");
    let perf = out
        .stdout
        .find("Performance-relevant changes")
        .expect("performance section");
    assert!(identity < perf, "{out:?}");
    assert!(out.stdout.find("L2: 512 KiB").unwrap() < perf);
    assert!(out.stdout.find("spectre_v2:").unwrap() > perf);
    assert!(!out.stdout.contains("host.name"), "{out:?}");
    assert_contains(&out, "--all");
    // Same kernel and libc on both.
    assert!(!out.stdout.contains("kernel: "), "{out:?}");
    assert!(!out.stdout.contains("libc: "), "{out:?}");

    let all = ps(&sb, ["env", "diff", "--all", "a.json", "b.json"]);
    assert_eq!(all.code, 1, "{all:?}");
    assert_contains(&all, "Context (recorded, not judged)");
    assert_contains(&all, "host.name: bench-d2asv5 → bench-d2sv5");
}

#[test]
fn diff_json_of_two_exported_machines() {
    let sb = Sandbox::new();
    export_amd_and_intel(&sb);
    let out = ps(&sb, ["env", "diff", "--json", "a.json", "b.json"]);
    assert_eq!(out.code, 1, "{out:?}");
    let doc = parse_json(&out.stdout);
    assert_eq!(doc["schema"], "perfsleuth/env-diff");
    assert_eq!(doc["identical"], false);
    let a = show_json(&sb, AMD);
    let b = show_json(&sb, INTEL);
    assert_eq!(doc["comparability"]["a"], a["comparability"]);
    assert_eq!(doc["comparability"]["b"], b["comparability"]);
    let changes = doc["changes"].as_array().expect("changes");
    let keys: Vec<&str> = changes.iter().filter_map(|c| c["key"].as_str()).collect();
    for k in [
        "cpu.model",
        "cpu.cache.l1d.size",
        "cpu.cache.l2.size",
        "cpu.cache.l3.size",
        "cpu.flags",
        "cpu.isa_level",
    ] {
        assert!(keys.contains(&k), "{k} not in {keys:?}");
    }
    for k in ["kernel.release", "libc.version", "os.name"] {
        assert!(!keys.contains(&k), "{k} should not differ: {keys:?}");
    }
    // Without --all, no context facts.
    assert!(
        changes.iter().all(|c| c["class"] != "context"),
        "{changes:?}"
    );
    let l2 = changes
        .iter()
        .find(|c| c["key"] == "cpu.cache.l2.size")
        .unwrap();
    assert_eq!(l2["a"], "512 KiB");
    assert_eq!(l2["b"], "1280 KiB");
    assert_eq!(l2["class"], "identity");
    assert!(l2["why"].as_str().is_some_and(|w| !w.is_empty()));
}

#[test]
fn diff_of_a_file_with_itself_is_identical() {
    let sb = Sandbox::new();
    export_amd_and_intel(&sb);
    let out = ps(&sb, ["env", "diff", "a.json", "a.json"]).ok();
    assert_contains(&out, "No identity or performance facts differ");
    let out = ps(&sb, ["env", "diff", "--json", "a.json", "a.json"]).ok();
    let doc = parse_json(&out.stdout);
    assert_eq!(doc["identical"], true);
    assert_eq!(doc["changes"].as_array().map(Vec::len), Some(0));
}

#[test]
fn diff_current_with_root_against_an_export() {
    let sb = Sandbox::new();
    export_amd_and_intel(&sb);
    // `current` read from the same tree as b.json: identical.
    let out = ps(
        &sb,
        [
            "env",
            "diff",
            "b.json",
            "current",
            "--root",
            &root_arg(INTEL),
        ],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out, "B: tree ");
    let out = ps(
        &sb,
        [
            "env",
            "diff",
            "a.json",
            "current",
            "--root",
            &root_arg(INTEL),
        ],
    );
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(&out, "L2: 512 KiB → 1280 KiB");
}

// ---------------------------------------------------------------------------
// env diff of stored runs
// ---------------------------------------------------------------------------

#[test]
fn diff_between_stored_runs() {
    let sb = Sandbox::new();
    bench(&sb, &[]);
    bench(&sb, &["--export-json", "x.json"]);
    let store = sb.store();

    let out = ps(&sb, ["env", "diff", "1", "2", "--store", &store]);
    assert_eq!(out.code, 0, "two runs on one machine: {out:?}");
    assert_contains(&out, "A: run 1   comparability ");
    assert_contains(&out, "B: run 2   comparability ");
    assert_contains(&out, "No identity or performance facts differ");

    let out = diff_answered(ps(&sb, ["env", "diff", "1", "current", "--store", &store]));
    assert_contains(&out, "A: run 1   comparability ");
    assert_contains(&out, "B: current machine   comparability ");

    let out = ps(
        &sb,
        ["env", "diff", "latest~1", "latest", "--store", &store],
    );
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out, "A: run 1");
    assert_contains(&out, "B: run 2");

    // A run export is a side too.
    let out = ps(&sb, ["env", "diff", "x.json", "1", "--store", &store]);
    assert_eq!(out.code, 0, "{out:?}");
    assert_contains(&out, "A: x.json");
    let out = ps(
        &sb,
        ["env", "diff", "--json", "1", "x.json", "--store", &store],
    );
    assert_eq!(out.code, 0, "{out:?}");
    let doc = parse_json(&out.stdout);
    assert_eq!(doc["identical"], true);
    assert_eq!(doc["comparability"]["a"], doc["comparability"]["b"]);

    // A stored run against a fixture machine differs.
    let out = ps(
        &sb,
        [
            "env",
            "diff",
            "1",
            "current",
            "--store",
            &store,
            "--root",
            &root_arg(INTEL),
        ],
    );
    assert_eq!(out.code, 1, "{out:?}");
    assert_contains(&out, "Identity changed");

    // env show of a stored run.
    let out = ps(&sb, ["env", "show", "1", "--store", &store]).ok();
    assert_contains(&out, "Environment of the run 1");
    assert_contains(&out, "cpu.model");
}

#[test]
fn runs_shows_the_comparability_hash() {
    let sb = Sandbox::new();
    bench(&sb, &[]);
    bench(&sb, &[]);
    let store = sb.store();
    let out = ps(&sb, ["runs", "--store", &store]).ok();
    let mut lines = out.stdout.lines();
    let header = lines.next().expect("a header");
    let cols: Vec<&str> = header.split_whitespace().collect();
    let env_col = cols
        .iter()
        .position(|c| *c == "ENV")
        .unwrap_or_else(|| panic!("no ENV column: {out:?}"));
    let start = header.find("ENV").unwrap();
    let hashes: Vec<String> = lines
        .filter(|l| !l.trim().is_empty())
        .map(|l| {
            l.get(start..)
                .and_then(|rest| rest.split_whitespace().next())
                .unwrap_or_default()
                .to_string()
        })
        .collect();
    assert_eq!(hashes.len(), 2, "{out:?}");
    assert!(
        is_hex(&hashes[0], 12),
        "ENV column {env_col}: {hashes:?}\n{out:?}"
    );
    assert_eq!(hashes[0], hashes[1], "{out:?}");

    // The same hash as the JSON list and env show of the run.
    let runs = sb.runs_json();
    for r in &runs {
        assert_eq!(r["comparability"], hashes[0].as_str(), "{r}");
    }
    let doc = parse_json(
        &ps(&sb, ["env", "show", "--json", "1", "--store", &store])
            .ok()
            .stdout,
    );
    assert_eq!(doc["comparability"], hashes[0].as_str());
}

#[test]
fn stored_benchmarks_carry_binary_facts() {
    let sb = Sandbox::new();
    bench(&sb, &[]);
    let doc = sb.show_json("latest");
    let facts = &doc["run"]["benchmarks"][0]["facts"];
    let sha = facts["binary.sha256"]["value"]
        .as_str()
        .unwrap_or_else(|| panic!("no binary.sha256: {doc}"));
    assert!(is_hex(sha, 64), "{sha}");
    assert_eq!(facts["binary.sha256"]["class"], "identity");
    if cfg!(target_arch = "x86_64") {
        assert_eq!(facts["binary.elf_class"]["value"], "ELF64", "{facts}");
        assert_eq!(facts["binary.abi"]["value"], "x86-64", "{facts}");
    }
    let path = facts["binary.path"]["value"].as_str().expect("binary.path");
    assert!(path.ends_with("/true"), "{path}");
}

// ---------------------------------------------------------------------------
// env check
// ---------------------------------------------------------------------------

#[test]
fn check_container_is_not_fit() {
    let sb = Sandbox::new();
    let out = ps(&sb, ["env", "check", "--root", &root_arg(CONTAINER)]);
    assert_eq!(out.code, 2, "throttling is a problem: {out:?}");
    assert_no_panic(&out);
    assert_contains(&out, "throttled");
    assert_contains(&out, "0.5 CPU");
    assert_contains(&out, "Not fit for benchmarking");
    // Problems first.
    assert!(out.stdout.starts_with("problem"), "{out:?}");

    let out = ps(
        &sb,
        ["env", "check", "--json", "--root", &root_arg(CONTAINER)],
    );
    assert_eq!(out.code, 2, "{out:?}");
    let doc = parse_json(&out.stdout);
    assert_eq!(doc["fit"], false);
    let findings = doc["findings"].as_array().expect("findings");
    assert!(
        findings
            .iter()
            .any(|f| f["key"] == "cgroup.cpu.nr_throttled" && f["severity"] == "problem"),
        "{doc}"
    );
    assert!(
        findings
            .iter()
            .any(|f| f["key"] == "cgroup.cpu.quota" && f["severity"] == "warning"),
        "{doc}"
    );
}

#[test]
fn check_json_of_an_azure_vm() {
    let sb = Sandbox::new();
    let out = ps(&sb, ["env", "check", "--json", "--root", &root_arg(INTEL)]).ok();
    let doc = parse_json(&out.stdout);
    assert_eq!(doc["schema"], "perfsleuth/env-check");
    assert_eq!(doc["fit"].as_bool(), Some(true), "{doc}");
    for f in doc["findings"].as_array().expect("findings") {
        for field in ["severity", "key", "message", "recommendation"] {
            assert!(f[field].as_str().is_some_and(|s| !s.is_empty()), "{f}");
        }
    }
}

// ---------------------------------------------------------------------------
// Bad input
// ---------------------------------------------------------------------------

#[test]
fn diff_of_a_missing_file_without_a_store_is_an_error() {
    let sb = Sandbox::new();
    ps(&sb, ["env", "diff", "nonexistent.json", "1"]).usage_error("");
}

#[test]
fn show_of_a_missing_root_is_an_error() {
    let sb = Sandbox::new();
    ps(&sb, ["env", "show", "--root", "/nonexistent"]).usage_error("/nonexistent");
    ps(&sb, ["env", "check", "--root", "/nonexistent"]).usage_error("/nonexistent");
    // A file is no tree either.
    let file = sb.write("file.txt", "x");
    ps(&sb, ["env", "show", "--root", &file.display().to_string()]).usage_error("file.txt");
    // Neither through PERFSLEUTH_ROOT.
    let out: Out = cmd(&sb)
        .env("PERFSLEUTH_ROOT", "/nonexistent")
        .args(["env", "show"])
        .output()
        .unwrap()
        .into();
    out.usage_error("/nonexistent");
}

#[test]
fn diff_of_a_file_that_is_not_json_is_a_one_line_error() {
    let sb = Sandbox::new();
    export_amd_and_intel(&sb);
    sb.write("x.json", "this is { not JSON\n");
    std::fs::copy(sb.path("a.json"), sb.path("y.json")).unwrap();
    ps(&sb, ["env", "diff", "x.json", "y.json"]).usage_error("x.json");
    ps(&sb, ["env", "diff", "y.json", "x.json"]).usage_error("x.json");
    // JSON without facts.
    sb.write("list.json", "[1, 2, 3]");
    ps(&sb, ["env", "diff", "list.json", "y.json"]).usage_error("list.json");
}

#[test]
fn a_garbage_cpuid_file_is_an_error() {
    let sb = Sandbox::new();
    let dump = fixture(GARBAGE).join("cpuid.txt").display().to_string();
    ps(
        &sb,
        ["env", "show", "--root", &root_arg(INTEL), "--cpuid", &dump],
    )
    .usage_error("cpuid");
    ps(&sb, ["env", "show", "--cpuid", &dump]).usage_error("cpuid");
    ps(&sb, ["env", "check", "--cpuid", &dump]).usage_error("cpuid");
    ps(&sb, ["env", "diff", "current", "current", "--cpuid", &dump]).usage_error("cpuid");
    ps(&sb, ["env", "show", "--cpuid", "/nonexistent/cpuid.txt"])
        .usage_error("/nonexistent/cpuid.txt");
}

#[test]
fn a_good_cpuid_file_replaces_the_trees_dump() {
    let sb = Sandbox::new();
    let dump = fixture(CONTAINER).join("cpuid.txt").display().to_string();
    let out = ps(
        &sb,
        [
            "env",
            "show",
            "--json",
            "--root",
            &root_arg(INTEL),
            "--cpuid",
            &dump,
        ],
    )
    .ok();
    let doc = parse_json(&out.stdout);
    assert_eq!(
        doc["facts"]["cpu.brand"]["value"],
        "Intel(R) Xeon(R) Gold 6148 CPU @ 2.40GHz"
    );
    assert_eq!(doc["facts"]["cpu.model"]["value"], INTEL_MODEL);
    assert_eq!(doc["facts"]["virt.hypervisor"]["value"], "KVM");
}
