//! `run --variant NAME=SPEC` and `[variant.NAME]`: the same commands under
//! named set-ups, interleaved with the unchanged one. Each setting is read
//! back by the benchmarked process itself from `/proc/self`, so the test
//! checks what the child got, not what perfsleuth meant to give it.

use crate::common::Sandbox;
use serde_json::Value;

/// A command that prints what its process got: CPU set, THP, personality,
/// two variables and its nice value (from a child of the shell, which
/// inherits it).
const REPORT: &str = "sh -c 'grep -E \"Cpus_allowed_list|THP_enabled\" /proc/self/status; cat /proc/self/personality; echo FOO=$FOO HOME=${HOME-unset}; cut -d\" \" -f19,41 /proc/self/stat'";

fn root() -> bool {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with("Uid:"))
                .map(|l| l.split_whitespace().nth(2) == Some("0"))
        })
        .unwrap_or(false)
}

/// A sandbox with `bench/simulation/strings.c` built in it, and the command
/// that runs it 20 rounds; `None` (the skip printed) without valgrind or gcc.
fn strings(test: &str) -> Option<(Sandbox, String)> {
    if !perfsleuth_testkit::tools_present(test, &["valgrind", "gcc"]) {
        return None;
    }
    let sb = Sandbox::new();
    let prog = sb.gcc(
        "strings",
        include_str!("../../../../bench/simulation/strings.c"),
        &[],
    );
    let cmd = format!("{} 20", prog.display());
    Some((sb, cmd))
}

fn online_cpus() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

#[test]
fn every_setting_reaches_the_benchmarked_process_only() {
    let sb = Sandbox::new();
    let nice = if root() { ";nice:5" } else { "" };
    let spec = format!("v=cpus:0;thp:off;aslr:off;sched:batch;env:FOO=a=b,c;unset:HOME{nice}");
    let out = sb
        .bench([
            "--runs",
            "1",
            "--warmup",
            "0",
            "--rounds",
            "1",
            "--output",
            "out.txt",
            "--prepare",
            "sh -c 'echo prepare FOO=$FOO >> helpers.txt'",
            "--variant",
            &spec,
            REPORT,
        ])
        .ok();
    assert!(
        out.stdout.contains("[base]") && out.stdout.contains("[v]"),
        "{out:?}"
    );
    // Compared with base by compare's verdict rule, paired by round.
    assert!(
        out.stdout
            .contains("Variant `v` against `base` (interleaved"),
        "{out:?}"
    );
    assert!(
        out.stdout.contains("baseline: base   candidate: v"),
        "{out:?}"
    );
    let text = std::fs::read_to_string(sb.path("out.txt")).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(
        lines.len(),
        10,
        "base's five lines, then the variant's: {text}"
    );
    // The unchanged set-up first (interleaved: base, then v), as perfsleuth runs.
    let (base, v) = lines.split_at(5);
    assert_ne!(base[0], "THP_enabled:\t0", "{text}");
    assert_eq!(base[2], "00000000", "{text}");
    assert!(
        base[3].starts_with("FOO= HOME=") && !base[3].ends_with("unset"),
        "{text}"
    );
    assert_eq!(v[0], "THP_enabled:\t0", "{text}");
    assert_eq!(v[1], "Cpus_allowed_list:\t0", "{text}");
    assert_eq!(v[2], "00040000", "ASLR off: {text}");
    assert_eq!(v[3], "FOO=a=b,c HOME=unset", "{text}");
    // Nice value and policy (SCHED_BATCH is 3) of a child of the shell.
    let (nice_got, policy) = v[4].split_once(' ').unwrap();
    assert_eq!(policy, "3", "sched:batch: {text}");
    assert_eq!(base[4].split_once(' ').unwrap().1, "0", "{text}");
    if root() {
        assert_eq!(nice_got, "5", "nice: {text}");
    }
    // The helpers keep perfsleuth's own environment.
    let helpers = std::fs::read_to_string(sb.path("helpers.txt")).unwrap();
    assert!(helpers.lines().all(|l| l == "prepare FOO="), "{helpers}");

    // Stored: each benchmark with its variant as a parameter and its settings as facts.
    let doc = sb.show_json("latest");
    let benches = doc["run"]["benchmarks"].as_array().unwrap();
    assert_eq!(benches.len(), 2);
    assert_eq!(benches[0]["parameters"]["variant"], "base");
    assert_eq!(benches[1]["parameters"]["variant"], "v");
    let fact = |b: &Value, k: &str| b["facts"][k]["value"].as_str().map(str::to_string);
    assert_eq!(fact(&benches[0], "variant").as_deref(), Some("base"));
    assert_eq!(fact(&benches[1], "variant.cpus").as_deref(), Some("0"));
    assert_eq!(fact(&benches[1], "variant.thp").as_deref(), Some("off"));
    assert_eq!(fact(&benches[1], "variant.aslr").as_deref(), Some("off"));
    assert_eq!(fact(&benches[1], "variant.sched").as_deref(), Some("batch"));
    assert_eq!(
        fact(&benches[1], "variant.env.FOO").as_deref(),
        Some("a=b,c")
    );
    assert_eq!(
        fact(&benches[1], "variant.env.HOME").as_deref(),
        Some("unset")
    );
    assert_eq!(fact(&benches[0], "variant.cpus"), None);
    // A variable changed twice: the child has the last, and that is what is checked.
    sb.bench([
        "--runs",
        "2",
        "--variant",
        "twice=env:FOO=1;unset:FOO;env:FOO=2",
        "sleep 0.01",
    ])
    .ok();
}

#[test]
fn variants_come_from_the_config_file_by_name() {
    let sb = Sandbox::new();
    sb.write(
        "perfsleuth.toml",
        "[variant.pinned]\ncpus = \"0\"\nenv = { FOO = \"from-config\" }\n",
    );
    sb.bench([
        "--runs",
        "1",
        "--warmup",
        "0",
        "--rounds",
        "1",
        "--output",
        "out.txt",
        "--variant",
        "pinned",
        REPORT,
    ])
    .ok();
    let text = std::fs::read_to_string(sb.path("out.txt")).unwrap();
    assert!(text.contains("FOO=from-config"), "{text}");
    assert!(text.contains("Cpus_allowed_list:\t0\n"), "{text}");
    sb.bench(["--variant", "missing", "true"])
        .usage_error("no [variant.missing] in perfsleuth.toml");
    sb.write("perfsleuth.toml", "[variant.bad]\ncpu = \"0\"\n");
    sb.bench(["--variant", "bad", "true"]).usage_error("cpu");
}

#[test]
fn placements_are_chosen_from_the_topology_or_refused_with_the_reason() {
    let sb = Sandbox::new();
    for kind in ["same-core", "cross-core", "cross-llc"] {
        let out = sb.bench([
            "--runs",
            "1",
            "--warmup",
            "0",
            "--rounds",
            "1",
            "--variant",
            &format!("p=cpus:{kind}"),
            "true",
        ]);
        if out.code == 0 {
            println!("{kind}: possible here");
            continue;
        }
        let out = out.usage_error("this machine has");
        println!("{kind}: {}", out.stderr.lines().next().unwrap_or(""));
    }
    // Two CPUs that share a core or a cache need two CPUs.
    if online_cpus() == 1 {
        sb.bench(["--variant", "p=cpus:cross-core", "true"])
            .usage_error("no two online CPUs");
    }
}

#[test]
fn bad_variants_are_refused_before_anything_runs() {
    let sb = Sandbox::new();
    for (spec, needle) in [
        ("v=cpus:1000", "CPU 1000 is not online"),
        ("v=cpus:0-4000000000", "above 1023"),
        ("v=cpus:3-1", "not a CPU list"),
        ("v=thp:maybe", "the setting takes off"),
        ("v=aslr:on", "how perfsleuth runs already"),
        ("v=nice:50", "outside -20..19"),
        ("v=sched:fifo", "give other, batch or idle"),
        ("v=env:NOEQUALS", "env needs NAME=VALUE"),
        ("v=unset:", "not an environment variable name"),
        ("v=colour:red", "unknown setting `colour`"),
        ("v=cpus", "not KEY:VALUE"),
        ("v=", "changes nothing"),
        ("base=cpus:0", "`base` is the unchanged set-up"),
        ("a b=cpus:0", "the name must be"),
    ] {
        sb.bench(["--variant", spec, "true"]).usage_error(needle);
    }
    sb.bench(["--variant", "v=cpus:0", "--variant", "v=thp:off", "true"])
        .usage_error("given twice");
    for other in [
        ["--baseline", "latest"],
        ["--reference", "1"],
        ["--no-interleave", "-N"],
    ] {
        let mut args = vec!["--variant", "v=cpus:0"];
        args.extend(other);
        args.push("true");
        sb.bench(args).usage_error("cannot be used with --variant");
    }
    sb.bench([
        "--variant",
        "v=cpus:0",
        "-L",
        "variant",
        "a,b",
        "true {variant}",
    ])
    .usage_error("a parameter is named `variant`");
    // Nothing was stored by any of them.
    assert!(!sb.db().exists() || sb.runs_json().is_empty());
}

#[test]
fn simulation_variants_count_their_own_glibc_tunables() {
    let Some((sb, cmd)) = strings("simulation_variants_count_their_own_glibc_tunables") else {
        return;
    };
    let spec = "noerms=env:GLIBC_TUNABLES=glibc.cpu.hwcaps=-ERMS,";
    // Under the portable profile the variant's value is merged into the
    // profile: it counts exactly as a run started with that value (this
    // was refused before, "add --no-portable").
    let mask = "glibc.cpu.hwcaps=-AVX2,-AVX,-AVX_Fast_Unaligned_Load";
    let portable = format!("noavx2=env:GLIBC_TUNABLES={mask}");
    sb.bench(["--mode", "simulation", "--variant", &portable, &cmd])
        .ok();
    let doc = sb.show_json("latest");
    let count = |doc: &serde_json::Value, i: usize| {
        doc["run"]["benchmarks"][i]["samples"][0]["counters"]["Ir"]
            .as_f64()
            .unwrap()
    };
    let (base, variant) = (count(&doc, 0), count(&doc, 1));
    assert_ne!(base, variant, "the mask moves glibc's string functions");
    let mut started = sb.cmd();
    started.env("GLIBC_TUNABLES", mask).args([
        "run",
        "--store",
        &sb.store(),
        "--mode",
        "simulation",
        &cmd,
    ]);
    crate::common::Out::from(started.output().unwrap()).ok();
    let run = sb.show_json("latest")["run"]["benchmarks"][0]["samples"][0]["counters"]["Ir"]
        .as_f64()
        .unwrap();
    assert_eq!(
        variant, run,
        "the variant counts as a run started with its value"
    );
    let out = sb
        .bench([
            "--mode",
            "simulation",
            "--no-portable",
            "--variant",
            spec,
            &cmd,
        ])
        .ok();
    assert!(
        out.stdout.contains("Variant `noerms` against `base`"),
        "{out:?}"
    );
    let doc = sb.show_json("latest");
    let ir = |i: usize| {
        doc["run"]["benchmarks"][i]["samples"][0]["counters"]["Ir"]
            .as_f64()
            .unwrap()
    };
    assert_eq!(
        doc["run"]["benchmarks"][1]["parameters"]["variant"],
        "noerms"
    );
    println!("strings 20: base {} Ir, noerms {} Ir", ir(0), ir(1));
    // valgrind presents ERMS on AVX2 hosts: then the variant counts differently.
    if ir(0) != ir(1) {
        assert!(
            out.stdout.contains("improved") || out.stdout.contains("regressed"),
            "{out:?}"
        );
    }
}

#[test]
fn simulation_variants_take_another_machines_cache_model() {
    let Some((sb, cmd)) = strings("simulation_variants_take_another_machines_cache_model") else {
        return;
    };
    // A stored run of another machine: an export with the AMD EPYC 7763's caches.
    sb.bench(["--runs", "2", "--export-json", "raw.json", "true"])
        .ok();
    let mut doc: Value =
        serde_json::from_str(&std::fs::read_to_string(sb.path("raw.json")).unwrap()).unwrap();
    for (key, value) in [
        ("cpu.cache.l1i.size", "32 KiB"),
        ("cpu.cache.l1i.ways", "8"),
        ("cpu.cache.l1i.line", "64"),
        ("cpu.cache.l1d.size", "32 KiB"),
        ("cpu.cache.l1d.ways", "8"),
        ("cpu.cache.l1d.line", "64"),
        ("cpu.cache.l3.size", "32768 KiB"),
        ("cpu.cache.l3.ways", "16"),
        ("cpu.cache.l3.line", "64"),
    ] {
        doc["run"]["environment"][key] = serde_json::json!({"value": value, "class": "identity"});
    }
    sb.write("amd.json", serde_json::to_string(&doc).unwrap());
    let out = sb
        .bench([
            "--mode",
            "simulation",
            "--variant",
            "amd=cache-model:from:amd.json",
            "--variant",
            "tiny=cache-model:I1=4096,2,64/D1=4096,2,64/LL=65536,4,64",
            &cmd,
        ])
        .ok();
    assert!(
        out.stderr.contains("except for the variants amd, tiny"),
        "{out:?}"
    );
    let doc = sb.show_json("latest");
    let b = doc["run"]["benchmarks"].as_array().unwrap();
    assert_eq!(
        b[1]["facts"]["variant.cache_model"]["value"],
        "I1 32 KiB 8-way, D1 32 KiB 8-way, LL 32 MiB 16-way"
    );
    let c = |i: usize, k: &str| b[i]["samples"][0]["counters"][k].as_f64().unwrap();
    // The same instructions; the misses follow the caches.
    assert_eq!(c(0, "Ir"), c(2, "Ir"), "{out:?}");
    assert!(c(2, "D1mr") > c(0, "D1mr"), "{out:?}");
    // This machine's own 105 MiB 15-way L3 cannot be simulated as it is: fitted and said.
    sb.bench(["--runs", "1", "-n", "here", "true"]).ok();
    let out = sb
        .bench([
            "--mode",
            "simulation",
            "--variant",
            "here=cache-model:from:latest",
            "true",
        ])
        .ok();
    let l3 = std::fs::read_to_string("/sys/devices/system/cpu/cpu0/cache/index3/size")
        .unwrap_or_default();
    println!(
        "this machine's L3: {l3}; {}",
        out.stderr
            .lines()
            .find(|l| l.contains("sets"))
            .unwrap_or("fits as it is")
    );
    // Errors.
    for (spec, needle) in [
        ("x=cache-model:I1=32768,8,48", "power-of-two line"),
        ("x=cache-model:L2=1,2,3", "the caches are I1, D1 and LL"),
        ("x=cache-model:I1=1,2", "three numbers"),
        ("x=cache-model:from:nosuch.json", "nosuch.json"),
    ] {
        sb.bench(["--mode", "simulation", "--variant", spec, "true"])
            .usage_error(needle);
    }
    sb.bench(["--variant", "x=cache-model:from:amd.json", "true"])
        .usage_error("cache-model works only in simulation mode");
    // The same for the whole run: `run --cache-model`, recorded as the run's model.
    sb.bench([
        "--mode",
        "simulation",
        "--cache-model",
        "from:amd.json",
        "-n",
        "amd",
        &cmd,
    ])
    .ok();
    let doc = sb.show_json("latest");
    assert_eq!(
        doc["run"]["environment"]["sim.cache_model"]["value"],
        "I1 32 KiB 8-way, D1 32 KiB 8-way, LL 32 MiB 16-way"
    );
    assert_eq!(
        doc["run"]["environment"]["sim.cache_model"]["class"],
        "identity"
    );
    sb.bench(["--cache-model", "from:amd.json", "true"])
        .usage_error("--cache-model works only in simulation mode");
    sb.bench(["--mode", "simulation", "--cache-model", "I1=3,3,3", "true"])
        .usage_error("power-of-two line");
}

#[test]
fn settings_that_need_root_are_refused_for_other_users() {
    // As root, run perfsleuth as `nobody` (setpriv): nice and SCHED_IDLE
    // need root, because the spawner must set its own values back.
    let setpriv = std::process::Command::new("setpriv")
        .arg("--version")
        .output();
    if !root() || !setpriv.is_ok_and(|o| o.status.success()) {
        println!("skipped: needs root and setpriv to act as another user");
        return;
    }
    for (spec, needle) in [
        ("v=nice:5", "needs CAP_SYS_NICE"),
        ("v=sched:idle", "needs CAP_SYS_NICE"),
    ] {
        let out: crate::common::Out = std::process::Command::new("setpriv")
            .args(["--reuid=65534", "--regid=65534", "--clear-groups", "--"])
            .arg(env!("CARGO_BIN_EXE_perfsleuth"))
            .args(["run", "--no-store", "--variant", spec, "true"])
            .current_dir("/")
            .env("HOME", "/nonexistent")
            .output()
            .expect("setpriv runs")
            .into();
        out.usage_error(needle);
    }
}

#[test]
fn numa_binds_memory_where_there_are_several_nodes_and_says_so_where_there_is_one() {
    let sb = Sandbox::new();
    let online = std::fs::read_to_string("/sys/devices/system/node/online").unwrap_or_default();
    let nodes = perfsleuth_measure::parse_cpu_list(&online).unwrap_or_default();
    let args = |spec: &str| {
        vec![
            "--runs".to_string(),
            "1".into(),
            "--rounds".into(),
            "1".into(),
            "--variant".into(),
            spec.to_string(),
            "true".into(),
        ]
    };
    if nodes.len() < 2 {
        sb.bench(args("n=numa:0")).usage_error("one NUMA node");
    } else {
        // Verified on the child itself (its numa_maps) before it counts.
        let out = sb.bench(args(&format!("n=numa:{}", nodes[1]))).ok();
        assert!(out.stdout.contains("[n]"), "{out:?}");
    }
    sb.bench(args("n=numa:x"))
        .usage_error("not a NUMA node number");
    sb.bench(args("n=numa:4000")).usage_error("NUMA node");
}

#[test]
fn variables_reach_the_program_under_valgrind_whose_launcher_edits_ld_library_path() {
    // Debian's /usr/bin/valgrind is a script that appends /usr/lib/debug to
    // LD_LIBRARY_PATH: that is valgrind's doing, not a variant that failed.
    // Whether the check reads the script's environment or valgrind's (after
    // the script's exec) is timing; the rule itself is pinned by the unit
    // test `the_valgrind_launchers_debug_path_is_not_a_mismatch`.
    if !perfsleuth_testkit::tools_present("variants under valgrind", &["valgrind"]) {
        return;
    }
    let sb = Sandbox::new();
    for spec in ["v=unset:LD_LIBRARY_PATH", "v=env:LD_LIBRARY_PATH=/opt/x"] {
        let out: crate::common::Out = sb
            .cmd()
            .args([
                "run",
                "--store",
                &sb.store(),
                "--mode",
                "simulation",
                "--no-portable",
            ])
            .args(["--variant", spec, "true"])
            .env("LD_LIBRARY_PATH", "/tmp")
            .output()
            .expect("start perfsleuth")
            .into();
        let out = out.ok();
        assert!(out.stdout.contains("[v]"), "{spec}: {out:?}");
    }
}
