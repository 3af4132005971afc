//! Portable simulation counts (`run --mode simulation --portable`): the
//! profile checked independently of perfsleuth's own verifier, with real
//! valgrind, the real loader and real C programs. Skipped, with a printed
//! reason, only where valgrind or gcc is missing or this is not x86-64 with
//! glibc; `PERFSLEUTH_TEST_REQUIRE` turns those skips into failures.

use crate::common::{Sandbox, parse_json};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::Command;

/// memcpy/memset/strlen/strchr/memcmp over sizes from 7 bytes to 100 KB,
/// and malloc/free: the functions glibc dispatches by CPU.
const STRINGS: &str = include_str!("../../../../bench/simulation/strings.c");

const LOADER: &str = "/lib64/ld-linux-x86-64.so.2";

/// valgrind, gcc, x86-64 and glibc's loader are here (else prints why not).
fn tools(test: &str) -> bool {
    if !cfg!(all(target_arch = "x86_64", target_env = "gnu")) || !Path::new(LOADER).exists() {
        perfsleuth_testkit::skip("x86_64_glibc", format!("{test}: not x86-64 with glibc"));
        return false;
    }
    perfsleuth_testkit::tools_present(test, &["valgrind", "gcc"])
}

fn gcc(sb: &Sandbox, name: &str, source: &str, args: &[&str]) -> PathBuf {
    let src = sb.write(&format!("{name}.c"), source);
    let out = sb.path(name);
    let status = Command::new("gcc")
        .args(["-O2", "-o"])
        .arg(&out)
        .arg(&src)
        .args(args)
        .status()
        .expect("gcc runs");
    assert!(status.success(), "gcc failed for {name}");
    out
}

/// `perfsleuth run --mode simulation ARGS` with `GLIBC_TUNABLES` as given.
fn sim(sb: &Sandbox, tunables: Option<&str>, args: &[&str]) -> crate::common::Out {
    let mut cmd = sb.cmd();
    cmd.args(["run", "--mode", "simulation", "--store", &sb.store()])
        .args(args);
    match tunables {
        Some(t) => cmd.env("GLIBC_TUNABLES", t),
        None => cmd.env_remove("GLIBC_TUNABLES"),
    };
    cmd.output().expect("start perfsleuth").into()
}

fn fact<'a>(doc: &'a Value, key: &str) -> &'a str {
    doc["run"]["environment"][key]["value"]
        .as_str()
        .unwrap_or_else(|| panic!("no fact {key}"))
}

fn ir(doc: &Value) -> f64 {
    doc["run"]["benchmarks"][0]["samples"][0]["counters"]["Ir"]
        .as_f64()
        .expect("an Ir count")
}

/// `ld.so --list-diagnostics` under valgrind with these tunables, as
/// `key → value`, read here independently of perfsleuth's verifier.
fn diagnostics(tunables: &str) -> std::collections::BTreeMap<String, String> {
    let out = Command::new("valgrind")
        .args(["-q", "--tool=none", LOADER, "--list-diagnostics"])
        .env_clear()
        .env("GLIBC_TUNABLES", tunables)
        .output()
        .expect("valgrind runs the loader");
    assert!(out.status.success(), "{out:?}");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.to_string(), v.trim_matches('"').to_string()))
        .collect()
}

fn number(v: &str) -> u64 {
    u64::from_str_radix(v.trim_start_matches("0x"), 16).expect("a hex number")
}

/// (name, features index, register, bit) of CPUID features by level, as
/// Intel's SDM places them and glibc ≥ 2.33 stores them.
const V2: &[(&str, u8, u8, u8)] = &[
    ("SSE2", 0, 3, 26),
    ("SSE3", 0, 2, 0),
    ("SSSE3", 0, 2, 9),
    ("SSE4_1", 0, 2, 19),
    ("SSE4_2", 0, 2, 20),
    ("POPCNT", 0, 2, 23),
    ("CX16", 0, 2, 13),
];
const V3: &[(&str, u8, u8, u8)] = &[
    ("AVX", 0, 2, 28),
    ("AVX2", 1, 1, 5),
    ("BMI1", 1, 1, 3),
    ("BMI2", 1, 1, 8),
    ("FMA", 0, 2, 12),
    ("LZCNT", 2, 2, 5),
    ("MOVBE", 0, 2, 22),
];
const ABOVE_V3: &[(&str, u8, u8, u8)] = &[
    ("AVX512F", 1, 1, 16),
    ("AVX512BW", 1, 1, 30),
    ("AVX512VL", 1, 1, 31),
    ("ERMS", 1, 1, 9),
    ("RTM", 1, 1, 11),
    ("XSAVEC", 3, 0, 1),
];

fn active(d: &std::collections::BTreeMap<String, String>, f: &(&str, u8, u8, u8)) -> bool {
    let key = format!("x86.cpu_features.features[{:#x}].active[{:#x}]", f.1, f.2);
    number(d.get(&key).unwrap_or_else(|| panic!("no {key}"))) & (1 << f.3) != 0
}

#[test]
fn the_profile_leaves_exactly_the_baseline_active_with_fixed_caches() {
    if !tools("the_profile_leaves_exactly_the_baseline_active_with_fixed_caches") {
        return;
    }
    let sb = Sandbox::new();
    for (flag, level, baseline) in [
        ("--portable", "x86-64-v3", [V2, V3].concat()),
        ("--portable=x86-64-v2", "x86-64-v2", V2.to_vec()),
    ] {
        let out = sim(&sb, None, &[flag, "-n", "true", "true"]);
        // Without the baseline (as valgrind presents this CPU) it is refused by name.
        let plain = diagnostics("");
        let missing: Vec<&str> = baseline
            .iter()
            .filter(|f| !active(&plain, f))
            .map(|f| f.0)
            .collect();
        if !missing.is_empty() {
            let out = out.usage_error("lacks");
            assert!(out.stderr.contains(missing[0]), "{out:?}");
            println!("{level}: this CPU lacks {missing:?}; the refusal was checked");
            continue;
        }
        let out = out.ok();
        assert!(
            out.stderr
                .contains(&format!("counts made portable ({level}")),
            "{out:?}"
        );
        let doc = sb.show_json("latest");
        assert_eq!(fact(&doc, "sim.portable"), level);
        let tunables = fact(&doc, "sim.glibc_tunables").to_string();
        let d = diagnostics(&tunables);
        for f in &baseline {
            assert!(active(&d, f), "{level}: baseline feature {} is off", f.0);
        }
        let above: Vec<_> = if level == "x86-64-v2" {
            [V3, ABOVE_V3].concat()
        } else {
            ABOVE_V3.to_vec()
        };
        for f in &above {
            assert!(
                !active(&d, f),
                "{level}: {} above the baseline is active",
                f.0
            );
        }
        for (key, value) in [
            ("data_cache_size", 0x8000),
            ("shared_cache_size", 0x80_0000),
            ("non_temporal_threshold", 0x20_0000),
            ("rep_movsb_threshold", 0x2000),
            ("rep_stosb_threshold", 0x800),
        ] {
            assert_eq!(
                number(&d[&format!("x86.cpu_features.{key}")]),
                value,
                "{level}: {key}"
            );
        }
        for flag in ["Prefer_ERMS", "Prefer_FSRM", "Prefer_No_AVX512"] {
            assert_eq!(
                d[&format!("x86.cpu_features.preferred.{flag}")],
                "0x0",
                "{flag}"
            );
        }
        // The loader searches no glibc-hwcaps directory above the baseline.
        let dirs: Vec<&str> = d["dl_hwcaps_subdirs"].split(':').collect();
        let mask = number(&d["dl_hwcaps_subdirs_active"]);
        for (i, dir) in dirs.iter().enumerate() {
            let searched = mask & (1 << i) != 0;
            let allowed = *dir == "x86-64-v2" || (*dir == "x86-64-v3" && level == "x86-64-v3");
            assert_eq!(searched, allowed, "{level}: glibc-hwcaps/{dir}");
        }
        // `show` says so.
        let shown = sb.run(["show", "--store", &sb.store(), "latest"]).ok();
        assert!(
            shown
                .stdout
                .contains(&format!("Counts portable across CPUs with {level}")),
            "{shown:?}"
        );
    }
}

#[test]
fn portable_counts_ignore_an_implied_mask_and_differ_from_this_cpus_dispatch() {
    if !tools("portable_counts_ignore_an_implied_mask_and_differ_from_this_cpus_dispatch") {
        return;
    }
    let sb = Sandbox::new();
    let prog = gcc(&sb, "strings", STRINGS, &[]);
    let cmd = format!("{} 50", prog.display());
    let out = sim(&sb, None, &["-n", "strings", &cmd]).ok();
    if out.stderr.contains("NOT portable") {
        // A CPU below x86-64-v3: the default runs on and says why.
        println!("this CPU cannot give portable counts: {}", out.stderr);
        return;
    }
    assert!(out.stderr.contains("counts made portable"), "{out:?}");
    let portable = ir(&sb.show_json("latest"));

    // A user mask the profile already implies changes nothing and warns of nothing.
    let out = sim(
        &sb,
        Some("glibc.cpu.hwcaps=-AVX512F,-ERMS,-RTM"),
        &["--portable", "-n", "strings", &cmd],
    )
    .ok();
    assert!(!out.stderr.contains("overrides"), "{out:?}");
    let implied = ir(&sb.show_json("latest"));
    assert_eq!(portable, implied, "an implied mask changed the count");

    // One that goes below the baseline wins, and is said to.
    let out = sim(
        &sb,
        Some("glibc.cpu.hwcaps=-AVX2"),
        &["--portable", "-n", "strings", &cmd],
    )
    .ok();
    assert!(
        out.stderr
            .contains("your GLIBC_TUNABLES overrides the portable profile")
            && out.stderr.contains("-AVX2 turns off AVX2"),
        "{out:?}"
    );
    let doc = sb.show_json("latest");
    assert!(fact(&doc, "sim.glibc_tunables").contains("-AVX2"), "{doc}");
    let no_avx2 = ir(&doc);
    assert_ne!(no_avx2, portable, "AVX2 masked by the user changed nothing");

    // This CPU's own dispatch, as valgrind presents it.
    sim(&sb, None, &["--no-portable", "-n", "strings", &cmd]).ok();
    let doc = sb.show_json("latest");
    assert_eq!(fact(&doc, "sim.portable"), "off");
    let native = ir(&doc);
    let plain = diagnostics("");
    let fast_strings = active(&plain, &("ERMS", 1, 1, 9)) || active(&plain, &V3[1]);
    println!(
        "strings Ir: portable {portable}, with an implied mask {implied}, user -AVX2 {no_avx2}, this CPU's dispatch {native}"
    );
    if fast_strings {
        assert_ne!(
            native, portable,
            "valgrind presents ERMS/AVX2 here; the profile masks ERMS"
        );
    }
}

#[test]
fn a_profile_glibc_does_not_apply_is_refused_or_reported() {
    if !tools("a_profile_glibc_does_not_apply_is_refused_or_reported") {
        return;
    }
    let sb = Sandbox::new();
    // Below glibc's minimum (0x4040): glibc ignores it, and the check sees that.
    let bad = "glibc.cpu.x86_non_temporal_threshold=0x10";
    let out = sim(&sb, Some(bad), &["--portable", "-n", "t", "true"])
        .usage_error("non_temporal_threshold");
    assert!(
        out.stderr.contains("did not apply the portable profile"),
        "{out:?}"
    );
    assert!(out.stderr.contains("drop --portable"), "{out:?}");
    // Not asked for: the run goes ahead and says its counts are not portable.
    let out = sim(&sb, Some(bad), &["-n", "t", "true"]).ok();
    assert!(
        out.stderr.contains("counts are NOT portable across CPUs"),
        "{out:?}"
    );
    let doc = sb.show_json("latest");
    assert_eq!(fact(&doc, "sim.portable"), "off");
    let shown = sb.run(["show", "--store", &sb.store(), "latest"]).ok();
    assert!(shown.stdout.contains("not portable"), "{shown:?}");

    for (args, needle) in [
        (
            vec!["run", "--portable", "true"],
            "--portable works only in simulation mode",
        ),
        (
            vec!["run", "--no-portable", "true"],
            "--no-portable works only in simulation mode",
        ),
        (
            vec![
                "run",
                "--mode",
                "simulation",
                "--portable=x86-64-v9",
                "true",
            ],
            "unknown --portable baseline `x86-64-v9`",
        ),
    ] {
        sb.run(args).usage_error(needle);
    }
    // The baseline without `=` is read as the command: said so, with the fix.
    sb.run([
        "run",
        "--mode",
        "simulation",
        "--portable",
        "x86-64-v2",
        "true",
    ])
    .usage_error("write --portable=x86-64-v2");
    // A user value that cannot be merged is refused, not dropped.
    let mut cmd = sb.cmd();
    cmd.args([
        "run",
        "--mode",
        "simulation",
        "--portable",
        "--store",
        &sb.store(),
        "true",
    ]);
    cmd.env(
        "GLIBC_TUNABLES",
        <std::ffi::OsStr as std::os::unix::ffi::OsStrExt>::from_bytes(
            b"glibc.cpu.hwcaps=-AVX2,\xff",
        ),
    );
    let out: crate::common::Out = cmd.output().expect("start perfsleuth").into();
    out.usage_error("GLIBC_TUNABLES is not valid UTF-8");
    sim(
        &sb,
        Some("glibc.cpu.x86_data_cache_size=junk"),
        &["--portable", "true"],
    )
    .usage_error("not read as a number");
    let out = sb.run([
        "run",
        "--mode",
        "simulation",
        "--portable",
        "--no-portable",
        "true",
    ]);
    assert_eq!(out.code, 2, "{out:?}");
    assert!(out.stderr.contains("cannot be used with"), "{out:?}");
}

#[test]
fn objects_that_execute_cpuid_themselves_are_named() {
    if !tools("objects_that_execute_cpuid_themselves_are_named") {
        return;
    }
    let sb = Sandbox::new();
    let lib = sb.path("libasks.so");
    let src = sb.write(
        "asks.c",
        "#include <cpuid.h>\nunsigned asks(void) { unsigned a, b, c, d; __cpuid(1, a, b, c, d); return c; }\n",
    );
    let status = Command::new("gcc")
        .args(["-O2", "-shared", "-fPIC", "-o"])
        .arg(&lib)
        .arg(&src)
        .status()
        .expect("gcc runs");
    assert!(status.success());
    let main = gcc(
        &sb,
        "main",
        "#include <stdio.h>\nunsigned asks(void);\nint main(void) { printf(\"%u\\n\", asks() & 1); return 0; }\n",
        &[
            "-L",
            sb.root().to_str().unwrap(),
            "-lasks",
            &format!("-Wl,-rpath,{}", sb.root().display()),
        ],
    );
    let out = sim(&sb, None, &["-n", "asks", main.to_str().unwrap()]);
    if out.code == 2 || out.stderr.contains("NOT portable") {
        println!("this CPU cannot give portable counts: {}", out.stderr);
        return;
    }
    let out = out.ok();
    assert!(
        out.stderr
            .contains("`asks`: libasks.so (1 CPUID) executes CPUID itself"),
        "{out:?}"
    );
    let doc = sb.show_json("latest");
    assert_eq!(fact(&doc, "sim.cpuid_dispatch"), "libasks.so (1 CPUID)");
    let shown = sb.run(["show", "--store", &sb.store(), "latest"]).ok();
    assert!(
        shown.stdout.contains("Not covered: libasks.so"),
        "{shown:?}"
    );
    // glibc's own CPUID (the loader) is what the profile fixes: not listed.
    let out = sim(&sb, None, &["-n", "true", "true"]).ok();
    assert!(!out.stderr.contains("executes CPUID"), "{out:?}");
    assert_eq!(fact(&sb.show_json("latest"), "sim.cpuid_dispatch"), "none");
}

/// The exported document of a portable run, and the same with edits.
fn derive(sb: &Sandbox, from: &str, to: &str, edit: impl Fn(&mut Value)) {
    let mut doc = parse_json(&std::fs::read_to_string(sb.path(from)).unwrap());
    edit(&mut doc);
    sb.write(to, serde_json::to_string(&doc).unwrap());
}

fn set(doc: &mut Value, key: &str, value: &str) {
    let fact = &mut doc["run"]["environment"][key];
    assert!(fact.is_object(), "no fact {key}");
    fact["value"] = Value::from(value);
}

#[test]
fn compare_of_portable_runs_from_different_cpus_sets_the_cpu_aside() {
    if !tools("compare_of_portable_runs_from_different_cpus_sets_the_cpu_aside") {
        return;
    }
    let sb = Sandbox::new();
    let prog = gcc(&sb, "strings", STRINGS, &[]);
    let cmd = format!("{} 20", prog.display());
    let out = sim(
        &sb,
        None,
        &["-n", "strings", "--export-json", "a.json", &cmd],
    );
    if out.code != 0 || out.stderr.contains("NOT portable") {
        println!("this CPU cannot give portable counts: {}", out.stderr);
        return;
    }
    sim(
        &sb,
        None,
        &[
            "--no-portable",
            "-n",
            "strings",
            "--export-json",
            "native.json",
            &cmd,
        ],
    )
    .ok();
    let other_cpu = |d: &mut Value| {
        set(d, "cpu.model", "AMD EPYC 7763 64-Core Processor");
        set(d, "cpu.vendor", "AuthenticAMD");
        set(d, "cpu.cache.l2.size", "512 KiB");
    };
    derive(&sb, "a.json", "amd.json", other_cpu);
    derive(&sb, "native.json", "native-amd.json", other_cpu);
    derive(&sb, "a.json", "amd-glibc.json", |d| {
        other_cpu(d);
        set(d, "libc.version", "glibc 2.39");
    });
    let compare = |a: &str, b: &str| sb.run(["compare", "--format", "json", a, b]).ok();

    let doc = parse_json(&compare("a.json", "amd.json").stdout);
    assert_eq!(doc["identity_changed"], false, "{doc}");
    let notes = doc["notes"].to_string();
    assert!(
        notes.contains(
            "counts made portable (x86-64-v3) on both sides: CPU differences do not apply (cpu."
        ),
        "{notes}"
    );
    for r in doc["rows"].as_array().unwrap() {
        assert_ne!(r["verdict"], "environment changed", "{r}");
    }
    // Without portable mode the same CPU difference is an identity change.
    let doc = parse_json(&compare("native.json", "native-amd.json").stdout);
    assert_eq!(doc["identity_changed"], true, "{doc}");
    // A glibc update still is, portable or not.
    let doc = parse_json(&compare("a.json", "amd-glibc.json").stdout);
    assert_eq!(doc["identity_changed"], true, "{doc}");
    let keys: Vec<&str> = doc["env_changes"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|c| c["key"].as_str())
        .collect();
    assert_eq!(keys, ["libc.version"], "{doc}");
    // Portable against not portable: counted differently, so not comparable.
    let doc = parse_json(&compare("native.json", "a.json").stdout);
    assert_eq!(doc["identity_changed"], true, "{doc}");
    assert!(
        doc["env_changes"].to_string().contains("sim.portable"),
        "{doc}"
    );
    // A run stored before portable mode (no sim.* facts) is not portable either.
    derive(&sb, "native.json", "old.json", |d| {
        let env = d["run"]["environment"].as_object_mut().unwrap();
        env.retain(|k, _| !k.starts_with("sim."));
    });
    let doc = parse_json(&compare("old.json", "a.json").stdout);
    assert_eq!(doc["identity_changed"], true, "{doc}");
    assert!(
        doc["env_changes"].to_string().contains("sim.portable"),
        "{doc}"
    );
    let doc = parse_json(&compare("old.json", "native.json").stdout);
    assert_eq!(doc["identity_changed"], false, "{doc}");
    // Code with its own CPUID dispatch keeps the CPU an identity difference.
    derive(&sb, "amd.json", "amd-own-cpuid.json", |d| {
        set(d, "sim.cpuid_dispatch", "libasks.so (1 CPUID)")
    });
    let doc = parse_json(&compare("a.json", "amd-own-cpuid.json").stdout);
    assert_eq!(doc["identity_changed"], true, "{doc}");
    assert!(
        doc["notes"]
            .to_string()
            .contains("CPU differences still apply: libasks.so (1 CPUID) runs CPUID itself"),
        "{doc}"
    );
    // A different valgrind is a different counter.
    derive(&sb, "amd.json", "amd-valgrind.json", |d| {
        set(d, "sim.valgrind_version", "valgrind-3.24.0")
    });
    let doc = parse_json(&compare("a.json", "amd-valgrind.json").stdout);
    assert_eq!(doc["identity_changed"], true, "{doc}");
}
