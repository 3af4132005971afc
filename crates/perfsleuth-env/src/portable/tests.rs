use super::*;

/// Real outputs of glibc 2.36 (Debian 12) on an Intel Xeon KVM guest with
/// AVX-512, natively and under valgrind 3.19 (environment lines removed).
const NATIVE: &str = include_str!("../../tests/fixtures/ldso/native-intel-2.36.txt");
const VALGRIND: &str = include_str!("../../tests/fixtures/ldso/valgrind-intel-2.36.txt");
/// Under valgrind with `glibc.cpu.hwcaps=-AVX2,-BMI2`: a CPU without the v3 baseline.
const NO_AVX2: &str = include_str!("../../tests/fixtures/ldso/valgrind-no-avx2-2.36.txt");
/// Under valgrind with the v3 profile of [`NATIVE`] and [`TUNABLES`].
const UNDER_V3: &str = include_str!("../../tests/fixtures/ldso/valgrind-v3-profile-2.36.txt");
const TUNABLES: &str = include_str!("../../tests/fixtures/ldso/tunables-intel-2.36.txt");

fn v3() -> Profile {
    build(Baseline::V3, "glibc 2.36", NATIVE, TUNABLES, None).unwrap()
}

fn entries(p: &Profile) -> Vec<String> {
    p.hwcaps.clone()
}

#[test]
fn v3_masks_what_lies_above_and_fixes_the_sizes() {
    let p = v3();
    let e = entries(&p);
    for masked in [
        "-AVX512F",
        "-AVX512VL",
        "-AVX512BW",
        "-ERMS",
        "-RTM",
        "-XSAVEC",
    ] {
        assert!(e.iter().any(|x| x == masked), "{masked} in {e:?}");
    }
    for kept in ["AVX2", "BMI2", "FMA", "SSE4_2", "MOVBE"] {
        assert!(
            !e.iter().any(|x| x.trim_start_matches('-') == kept),
            "{kept} must not be touched: {e:?}"
        );
    }
    // Preferred flags come from this glibc's own list, each set one way.
    assert!(e.contains(&"AVX_Fast_Unaligned_Load".to_string()), "{e:?}");
    assert!(e.contains(&"-Prefer_ERMS".to_string()), "{e:?}");
    assert!(e.contains(&"-Prefer_FSRM".to_string()), "{e:?}");
    assert!(!e.iter().any(|x| x.contains("I586")), "{e:?}");
    for size in [
        "glibc.cpu.x86_data_cache_size=0x8000",
        "glibc.cpu.x86_shared_cache_size=0x800000",
        "glibc.cpu.x86_non_temporal_threshold=0x200000",
        "glibc.cpu.x86_rep_movsb_threshold=0x2000",
        "glibc.cpu.x86_rep_stosb_threshold=0x800",
    ] {
        assert!(p.tunables.contains(size), "{size} in {}", p.tunables);
    }
    assert!(
        p.tunables.starts_with("glibc.cpu.hwcaps=-"),
        "{}",
        p.tunables
    );
    // The list ends with a comma: glibc 2.36 reads past an unterminated last item.
    assert!(
        p.tunables.contains("-Prefer_FSRM,:glibc.cpu.x86_"),
        "{}",
        p.tunables
    );
    assert!(p.unfixed.is_empty(), "{:?}", p.unfixed);
    assert!(p.overridden.is_empty(), "{:?}", p.overridden);
}

#[test]
fn v2_also_masks_the_v3_features() {
    let p = build(Baseline::V2, "glibc 2.36", NATIVE, TUNABLES, None).unwrap();
    let e = entries(&p);
    for masked in [
        "-AVX",
        "-AVX2",
        "-BMI1",
        "-BMI2",
        "-FMA",
        "-LZCNT",
        "-MOVBE",
        "-AVX_Fast_Unaligned_Load",
    ] {
        assert!(e.iter().any(|x| x == masked), "{masked} in {e:?}");
    }
    assert!(!e.iter().any(|x| x == "-SSE4_2" || x == "-SSSE3"), "{e:?}");
}

#[test]
fn the_profile_applied_under_valgrind_is_verified() {
    let p = v3();
    let v = verify(&p, UNDER_V3).unwrap();
    assert_eq!(v.hwcaps, "x86-64-v3:x86-64-v2");
    assert_eq!(v.platform.as_deref(), Some("haswell"));
    // Debian has no legacy haswell/ directories: nothing the vendor decides.
    assert!(
        v.legacy_platform_dirs()
            .iter()
            .all(|d| std::path::Path::new(d).is_dir()),
        "{v:?}"
    );
    // valgrind presents no AVX-512 at all; ERMS it does, and it is off now.
    for m in ["AVX512F", "ERMS", "RTM", "XSAVEC"] {
        assert!(v.masked.contains(&m), "{m} in {v:?}");
    }
    assert!(v.inert.is_empty(), "{v:?}");
    assert!(
        v.sizes.iter().any(|s| s == "data_cache_size 32 KiB"),
        "{v:?}"
    );
    assert!(v.summary(&p).contains("x86-64-v3"), "{}", v.summary(&p));
}

#[test]
fn without_the_profile_the_check_fails_and_says_what_is_wrong() {
    let err = verify(&v3(), VALGRIND).unwrap_err().0;
    assert!(err.contains("ERMS is still active"), "{err}");
    assert!(err.contains("Prefer_No_AVX512 is 1, not 0"), "{err}");
    // valgrind's own model happens to give the profile's sizes.
    assert!(!err.contains("cache_size"), "{err}");
    // Natively on an AVX-512 machine the loader would also pick v4 libraries.
    let err = verify(&v3(), NATIVE).unwrap_err().0;
    assert!(err.contains("glibc-hwcaps/x86-64-v4"), "{err}");
}

#[test]
fn a_cpu_without_the_baseline_is_refused_by_name() {
    let err = verify(&v3(), NO_AVX2).unwrap_err().0;
    assert!(
        err.contains("lacks AVX2, BMI2 of the x86-64-v3 baseline"),
        "{err}"
    );
    assert!(err.contains("x86-64-v2"), "{err}");
}

#[test]
fn a_text_in_an_unknown_layout_is_not_trusted() {
    let err = verify(&v3(), "x86.cpu_features.isa_1=0x7\n").unwrap_err().0;
    assert!(err.contains("cannot read glibc's feature bits"), "{err}");
}

#[test]
fn old_glibc_is_refused_because_it_cannot_be_checked() {
    let err = build(Baseline::V3, "glibc 2.31", NATIVE, TUNABLES, None)
        .unwrap_err()
        .0;
    assert!(err.contains("2.35"), "{err}");
    assert!(build(Baseline::V3, "musl 1.2", NATIVE, TUNABLES, None).is_err());
}

#[test]
fn a_missing_size_tunable_is_refused() {
    let tunables: String = TUNABLES
        .lines()
        .filter(|l| !l.contains("x86_shared_cache_size"))
        .map(|l| format!("{l}\n"))
        .collect();
    let err = build(Baseline::V3, "glibc 2.36", NATIVE, &tunables, None)
        .unwrap_err()
        .0;
    assert!(err.contains("glibc.cpu.x86_shared_cache_size"), "{err}");
}

#[test]
fn new_inputs_of_a_later_glibc_are_listed_as_not_fixed() {
    let diag = format!("{NATIVE}x86.cpu_features.preferred.Prefer_Something_New=0x1\n");
    let tun = format!("{TUNABLES}glibc.cpu.x86_future_threshold: 0x10 (min: 0x0, max: 0xff)\n");
    let p = build(Baseline::V3, "glibc 2.36", &diag, &tun, None).unwrap();
    assert_eq!(p.unfixed.len(), 2, "{:?}", p.unfixed);
    assert!(
        p.unfixed[0].contains("Prefer_Something_New"),
        "{:?}",
        p.unfixed
    );
    assert!(
        p.unfixed[1].contains("x86_future_threshold"),
        "{:?}",
        p.unfixed
    );
    // A size the profile knows, newer than 2.36, is fixed when listed.
    let tun = format!(
        "{TUNABLES}glibc.cpu.x86_memset_non_temporal_threshold: 0xc0000 (min: 0x4040, max: 0xfffffffffffffff)\n"
    );
    let p = build(Baseline::V3, "glibc 2.40", NATIVE, &tun, None).unwrap();
    assert!(
        p.tunables
            .contains("glibc.cpu.x86_memset_non_temporal_threshold=0x200000"),
        "{}",
        p.tunables
    );
}

#[test]
fn a_size_outside_what_glibc_accepts_is_refused() {
    let tun = TUNABLES.replace(
        "glibc.cpu.x86_rep_movsb_threshold: 0x840 (min: 0x200,",
        "glibc.cpu.x86_rep_movsb_threshold: 0x840 (min: 0x4000,",
    );
    assert_ne!(tun, TUNABLES, "the fixture has the line");
    let err = build(Baseline::V3, "glibc 2.36", NATIVE, &tun, None)
        .unwrap_err()
        .0;
    assert!(err.contains("x86_rep_movsb_threshold"), "{err}");
}

#[test]
fn the_users_tunables_are_merged_and_win_with_a_warning() {
    // A mask the profile implies changes nothing and warns of nothing.
    let same = build(
        Baseline::V3,
        "glibc 2.36",
        NATIVE,
        TUNABLES,
        Some("glibc.cpu.hwcaps=-AVX512F,-ERMS"),
    )
    .unwrap();
    assert_eq!(same.tunables, v3().tunables);
    assert!(same.overridden.is_empty(), "{:?}", same.overridden);

    let p = build(
        Baseline::V3,
        "glibc 2.36",
        NATIVE,
        TUNABLES,
        Some("glibc.malloc.arena_max=1:glibc.cpu.hwcaps=-AVX2,Prefer_ERMS:glibc.cpu.x86_data_cache_size=0x10000"),
    )
    .unwrap();
    assert!(
        p.tunables.contains("glibc.malloc.arena_max=1"),
        "{}",
        p.tunables
    );
    assert!(
        p.tunables.contains("glibc.cpu.x86_data_cache_size=0x10000"),
        "{}",
        p.tunables
    );
    assert!(
        !p.tunables.contains("x86_data_cache_size=0x8000"),
        "{}",
        p.tunables
    );
    let o = p.overridden.join("\n");
    assert!(o.contains("-AVX2 turns off AVX2"), "{o}");
    assert!(
        o.contains("Prefer_ERMS replaces the profile's -Prefer_ERMS"),
        "{o}"
    );
    assert!(
        o.contains("x86_data_cache_size: 0x10000 replaces the profile's 0x8000"),
        "{o}"
    );
    assert_eq!(p.overridden.len(), 3, "{o}");
    // Verification follows the merged value: AVX2 is now expected off.
    assert!(p.hwcaps.contains(&"-AVX2".to_string()));
}

#[test]
fn baselines_parse_by_either_name() {
    assert_eq!(Baseline::parse("x86-64-v3"), Some(Baseline::V3));
    assert_eq!(Baseline::parse("V2"), Some(Baseline::V2));
    assert_eq!(Baseline::parse("v4"), None);
    assert_eq!(DEFAULT_BASELINE.name(), "x86-64-v3");
}

fn with_user(user: &str) -> Result<Profile, Refusal> {
    build(Baseline::V3, "glibc 2.36", NATIVE, TUNABLES, Some(user))
}

#[test]
fn user_items_glibc_ignores_change_nothing() {
    let plain = v3();
    // Empty items, an item without `=`, enabling a CPU feature (glibc only
    // turns features off), the same size in decimal, `--AVX2` (no feature).
    for user in [
        ":::",
        "glibc.cpu.hwcaps=",
        "glibc.cpu.hwcaps=,,,-,",
        "glibc.cpu.x86_data_cache_size",
        "glibc.cpu.x86_data_cache_size=32768",
    ] {
        let p = with_user(user).unwrap();
        assert_eq!(p.tunables, plain.tunables, "{user}");
        assert!(p.overridden.is_empty(), "{user}: {:?}", p.overridden);
    }
    let p = with_user("glibc.cpu.hwcaps=AVX512F,--AVX2").unwrap();
    assert!(p.overridden.is_empty(), "{:?}", p.overridden);
    assert!(p.hwcaps.contains(&"-AVX512F".to_string()), "the mask stays");
    assert!(!p.hwcaps.contains(&"-AVX2".to_string()), "{:?}", p.hwcaps);
}

#[test]
fn a_tunable_given_twice_counts_once_as_glibc_reads_it() {
    // glibc keeps the last: the profile's own value in the end, no override.
    let p = with_user("glibc.cpu.x86_data_cache_size=0x10000:glibc.cpu.x86_data_cache_size=0x8000")
        .unwrap();
    assert!(p.overridden.is_empty(), "{:?}", p.overridden);
    let p = with_user("glibc.cpu.hwcaps=-AVX2:glibc.cpu.hwcaps=-BMI2").unwrap();
    assert_eq!(p.overridden.len(), 1, "{:?}", p.overridden);
    assert!(p.overridden[0].contains("-BMI2"), "{:?}", p.overridden);
    assert!(!p.hwcaps.contains(&"-AVX2".to_string()), "{:?}", p.hwcaps);
}

#[test]
fn a_fixed_size_that_is_not_a_number_is_refused() {
    for bad in [
        "glibc.cpu.x86_data_cache_size=",
        "glibc.cpu.x86_data_cache_size=junk",
    ] {
        let err = with_user(bad).unwrap_err().0;
        assert!(err.contains("not read as a number"), "{bad}: {err}");
    }
}

#[test]
fn a_value_over_the_kernels_limit_is_refused_with_the_reason() {
    let long = format!("glibc.malloc.arena_max=1:x.y={}", "a".repeat(130 * 1024));
    let err = with_user(&long).unwrap_err().0;
    assert!(err.contains("128 KiB"), "{err}");
}

#[test]
fn a_long_user_mask_keeps_every_entry() {
    // 15,000 distinct entries (the merge indexes them; it used to search a list for each).
    let entries: Vec<String> = (0..15_000).map(|i| format!("-F{i}")).collect();
    let p = with_user(&format!("glibc.cpu.hwcaps={}", entries.join(","))).unwrap();
    assert_eq!(p.hwcaps.len(), v3().hwcaps.len() + 15_000);
}

fn cpuinfo_flags(tree: &str) -> String {
    let path = format!(
        "{}/tests/fixtures/{tree}/proc/cpuinfo",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).unwrap();
    let line = text.lines().find(|l| l.starts_with("flags")).unwrap();
    line.split_once(':').unwrap().1.trim().to_string()
}

#[test]
fn emulating_the_amd_runner_on_the_intel_one_masks_its_avx512_and_erms() {
    let intel = cpuinfo_flags("intel-xeon-8370c");
    let amd = cpuinfo_flags("amd-epyc-7763");
    let e = emulate_isa(&intel, &amd);
    for f in ["AVX512F", "AVX512BW", "AVX512VL", "AVX512DQ", "AVX512CD"] {
        assert!(e.masked.contains(&f), "{f} in {e:?}");
        assert!(e.hwcaps.contains(&format!("-{f}")));
    }
    // Both have AVX2: nothing derived from it is touched.
    assert!(!e.masked.contains(&"AVX2"));
    assert!(!e.hwcaps.iter().any(|h| h.contains("AVX_Fast")));
    // The other way round nothing can be added.
    let back = emulate_isa(&amd, &intel);
    assert!(back.missing_here.contains(&"AVX512F"), "{back:?}");
    assert!(!back.masked.contains(&"AVX512F"));
}

#[test]
fn masking_avx2_also_clears_the_preferred_flag_glibc_derives_from_it() {
    let e = emulate_isa("sse2 avx avx2 bmi1 bmi2", "sse2 avx");
    assert_eq!(e.masked, vec!["AVX2", "BMI1", "BMI2"]);
    assert!(e.hwcaps.contains(&"-AVX_Fast_Unaligned_Load".to_string()));
    // Same flags: no mask at all.
    assert!(emulate_isa("sse2 avx2", "avx2 sse2").hwcaps.is_empty());
}

#[test]
fn applied_tunables_are_checked_against_what_glibc_reports() {
    // Taken under glibc.cpu.hwcaps=-AVX2,-BMI2.
    let ok = check_applied("glibc.cpu.hwcaps=-AVX2,-BMI2", NO_AVX2, TUNABLES).unwrap();
    assert_eq!(ok, vec!["AVX2 off", "BMI2 off"]);
    // Under valgrind AVX-512 is off anyway: the mask holds.
    assert_eq!(
        check_applied("glibc.cpu.hwcaps=-AVX512F", VALGRIND, TUNABLES).unwrap(),
        vec!["AVX512F off"]
    );
    let err = check_applied("glibc.cpu.hwcaps=-AVX2", NATIVE, TUNABLES).unwrap_err();
    assert!(err.0.contains("AVX2 is still active"), "{}", err.0);
    // Other tunables are read back from --list-tunables.
    let list = "glibc.malloc.tcache_count: 0x0 (min: 0x0, max: 0xffff)\nglibc.malloc.arena_max: 0x0 (min: 0x1, max: 0xffffffffffffffff)\n";
    assert_eq!(
        check_applied("glibc.malloc.tcache_count=0", "", list).unwrap(),
        vec!["glibc.malloc.tcache_count=0"]
    );
    let err = check_applied("glibc.malloc.arena_max=0x10", "", list).unwrap_err();
    assert!(err.0.contains("arena_max is 0x0"), "{}", err.0);
    let err = check_applied("glibc.malloc.no_such=1", "", list).unwrap_err();
    assert!(
        err.0.contains("no tunable glibc.malloc.no_such"),
        "{}",
        err.0
    );
}

#[test]
fn active_flags_are_what_valgrind_presents_not_the_host() {
    let native = active_flags(NATIVE);
    let under = active_flags(VALGRIND);
    assert!(native.split(' ').any(|f| f == "avx512f"), "{native}");
    assert!(!under.split(' ').any(|f| f == "avx512f"), "{under}");
    assert!(under.split(' ').any(|f| f == "avx2"), "{under}");
    // Fed back into the mask: under valgrind there is no AVX-512 to mask.
    let e = emulate_isa(&under, "sse2 avx avx2");
    assert!(!e.masked.iter().any(|m| m.starts_with("AVX512")), "{e:?}");
}

#[test]
fn a_feature_in_no_x86_64_level_is_not_called_a_v5_feature() {
    let mut notes = Vec::new();
    merge_hwcaps("-AVX512F", "-FSRM,-AVX2", &mut notes);
    assert!(
        notes
            .iter()
            .any(|n| n.contains("-FSRM turns off FSRM")
                && n.ends_with("(a feature of no x86-64 level)")),
        "{notes:?}"
    );
    assert!(
        notes
            .iter()
            .any(|n| n.contains("-AVX2 turns off AVX2") && n.ends_with("(an x86-64-v3 feature)")),
        "{notes:?}"
    );
    assert!(!notes.iter().any(|n| n.contains("v5")), "{notes:?}");
}
