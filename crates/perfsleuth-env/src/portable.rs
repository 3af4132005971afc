//! The portable profile of simulation mode: a `GLIBC_TUNABLES` value that
//! makes glibc pick the same string, memory and loader code on every x86-64
//! CPU that has a fixed baseline, so that callgrind's counts stop depending
//! on the runner's CPU (case A), and the check that it did.
//!
//! glibc chooses `memcpy`, `strlen`, `memset`, … at start-up from the CPUID
//! feature bits it sees, its "preferred" tuning flags and the cache sizes
//! behind its thresholds; under valgrind it sees valgrind's own CPU model,
//! which depends on the host's capability class, a few host bits and the
//! valgrind version. The profile removes every such input above the
//! baseline: it masks each dispatched feature the baseline lacks, sets
//! each preferred flag this glibc reports to a fixed value, and fixes the
//! cache-size tunables this glibc lists. Nothing is assumed: [`verify`]
//! reads `ld.so --list-diagnostics` under the profile and compares every
//! bit and value with what the profile asks for.

use crate::libc_info::{diagnostic, parse_number, size};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

/// The feature level every CPU a portable run is comparable across must have.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Baseline {
    /// x86-64-v2: SSE4.2, SSSE3, POPCNT, CX16 (every x86-64 CPU since 2009).
    V2,
    /// x86-64-v3: AVX2, BMI1/2, FMA, MOVBE, LZCNT (Haswell, Zen and later:
    /// every CI runner class in use).
    V3,
}

impl Baseline {
    /// The level's name as glibc and the psABI spell it.
    pub fn name(self) -> &'static str {
        match self {
            Baseline::V2 => "x86-64-v2",
            Baseline::V3 => "x86-64-v3",
        }
    }

    /// `x86-64-v3`, `v3` (and the same for v2).
    pub fn parse(s: &str) -> Option<Baseline> {
        match s.trim().to_ascii_lowercase().as_str() {
            "x86-64-v2" | "v2" => Some(Baseline::V2),
            "x86-64-v3" | "v3" => Some(Baseline::V3),
            _ => None,
        }
    }

    fn level(self) -> u8 {
        match self {
            Baseline::V2 => 2,
            Baseline::V3 => 3,
        }
    }
}

/// The default baseline (docs/SIMULATION.md says why v3).
pub const DEFAULT_BASELINE: Baseline = Baseline::V3;

/// A CPU feature glibc tracks: its name in `glibc.cpu.hwcaps`, where its
/// active bit is in `x86.cpu_features.features[index].active[reg]`, and
/// the x86-64 level it belongs to (5: in no level).
struct Feature {
    name: &'static str,
    index: u8,
    reg: u8,
    bit: u8,
    /// The x86-64 level (1–4) that requires it; 5 for none.
    level: u8,
    /// Whether `glibc.cpu.hwcaps=-NAME` turns it off.
    maskable: bool,
}

const fn f(name: &'static str, index: u8, reg: u8, bit: u8, level: u8, maskable: bool) -> Feature {
    Feature {
        name,
        index,
        reg,
        bit,
        level,
        maskable,
    }
}

/// glibc's feature table for the bits its x86-64 dispatch reads. Index 0
/// is CPUID leaf 1, 1 leaf 7, 2 leaf 0x80000001, 3 leaf 0xD subleaf 1,
/// 6 leaf 7 subleaf 1 (glibc ≥ 2.33); registers are eax, ebx, ecx, edx.
const FEATURES: &[Feature] = &[
    f("CMOV", 0, 3, 15, 1, true),
    f("CX8", 0, 3, 8, 1, true),
    f("SSE2", 0, 3, 26, 1, true),
    f("SSE3", 0, 2, 0, 2, false),
    f("SSSE3", 0, 2, 9, 2, true),
    f("SSE4_1", 0, 2, 19, 2, true),
    f("SSE4_2", 0, 2, 20, 2, true),
    f("POPCNT", 0, 2, 23, 2, true),
    f("CX16", 0, 2, 13, 2, false),
    f("LAHF64_SAHF64", 2, 2, 0, 2, false),
    f("AVX", 0, 2, 28, 3, true),
    f("AVX2", 1, 1, 5, 3, true),
    f("BMI1", 1, 1, 3, 3, true),
    f("BMI2", 1, 1, 8, 3, true),
    f("FMA", 0, 2, 12, 3, true),
    f("F16C", 0, 2, 29, 3, false),
    f("LZCNT", 2, 2, 5, 3, true),
    f("MOVBE", 0, 2, 22, 3, true),
    f("XSAVE", 0, 2, 26, 3, true),
    f("OSXSAVE", 0, 2, 27, 3, true),
    f("AVX512F", 1, 1, 16, 4, true),
    f("AVX512CD", 1, 1, 28, 4, true),
    f("AVX512BW", 1, 1, 30, 4, true),
    f("AVX512DQ", 1, 1, 17, 4, true),
    f("AVX512VL", 1, 1, 31, 4, true),
    f("AVX512ER", 1, 1, 27, 5, true),
    f("AVX512PF", 1, 1, 26, 5, true),
    f("ERMS", 1, 1, 9, 5, true),
    f("RTM", 1, 1, 11, 5, true),
    f("FMA4", 2, 2, 16, 5, true),
    f("XSAVEC", 3, 0, 1, 5, true),
    // glibc offers no switch for these; its string functions use them only
    // together with AVX512VL/BW (masked), and FSRM only to pick the
    // `rep movsb` threshold, which the profile fixes.
    f("AVX512_IFMA", 1, 1, 21, 5, false),
    f("AVX512_VBMI", 1, 2, 1, 5, false),
    f("AVX512_VBMI2", 1, 2, 6, 5, false),
    f("AVX512_VNNI", 1, 2, 11, 5, false),
    f("AVX512_BITALG", 1, 2, 12, 5, false),
    f("AVX512_VPOPCNTDQ", 1, 2, 14, 5, false),
    f("AVX512_FP16", 1, 3, 23, 5, false),
    f("FSRM", 1, 3, 4, 5, false),
    f("AVX_VNNI", 6, 0, 4, 5, false),
];

/// The value the profile gives each preferred flag glibc may report, by
/// baseline; a flag this glibc does not report is left out of the value.
fn preferred_policy(name: &str, baseline: Baseline) -> Option<bool> {
    let v3 = baseline >= Baseline::V3;
    Some(match name {
        "Fast_Unaligned_Load" | "Fast_Unaligned_Copy" | "Fast_Rep_String" => true,
        "Prefer_PMINUB_for_stringop" => true,
        "AVX_Fast_Unaligned_Load" | "Prefer_AVX2_STRCMP" => v3,
        "Fast_Copy_Backward"
        | "Slow_BSF"
        | "Slow_SSE4_2"
        | "Prefer_ERMS"
        | "Prefer_FSRM"
        | "Prefer_No_VZEROUPPER"
        | "Prefer_No_AVX512"
        | "MathVec_Prefer_No_AVX512"
        | "Prefer_MAP_32BIT_EXEC"
        | "Avoid_STOSB"
        | "Avoid_Non_Temporal_Memset" => false,
        _ => return None,
    })
}

/// Preferred flags glibc sets that no tunable changes and that matter only
/// on paths the profile turns off (`rep movsb` needs ERMS; I586/I686 are
/// for 32-bit code).
const INERT_PREFERRED: &[&str] = &["I586", "I686", "Avoid_Short_Distance_REP_MOVSB"];

/// The fixed cache sizes and thresholds, by `glibc.cpu.` tunable name:
/// the values glibc derives under valgrind's own CPU model on an AVX2 host
/// (32 KiB L1d, 8 MiB shared), so that a portable count is close to a
/// stock-valgrind count except where the masked features were used.
const SIZES: &[(&str, u64)] = &[
    ("x86_data_cache_size", 0x8000),
    ("x86_shared_cache_size", 0x80_0000),
    ("x86_non_temporal_threshold", 0x20_0000),
    ("x86_memset_non_temporal_threshold", 0x20_0000),
    ("x86_rep_movsb_threshold", 0x2000),
    ("x86_rep_stosb_threshold", 0x800),
];

/// The x86 tunables that are not sizes (CET modes, the masks themselves).
const NOT_SIZES: &[&str] = &["x86_ibt", "x86_shstk", "hwcaps", "hwcap_mask"];

/// The portable profile for one baseline and one glibc.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    /// The baseline the counts are portable across.
    pub baseline: Baseline,
    /// `glibc 2.36`.
    pub glibc: String,
    /// The `GLIBC_TUNABLES` value the benchmarked process gets (the
    /// user's own tunables merged in).
    pub tunables: String,
    /// What the user's `GLIBC_TUNABLES` changed in the profile, one line each.
    pub overridden: Vec<String>,
    /// Inputs this glibc has that the profile does not fix, one line each.
    pub unfixed: Vec<String>,
    /// The merged directives: hwcaps entries (`-AVX2`, `Fast_Rep_String`)
    /// and tunable values, for [`verify`].
    hwcaps: Vec<String>,
    values: Vec<(String, String)>,
}

/// Why portable mode cannot be used here.
#[derive(Debug, Clone, PartialEq)]
pub struct Refusal(pub String);

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// What [`verify`] saw glibc select under the profile.
#[derive(Debug, Clone, PartialEq)]
pub struct Verified {
    /// The glibc-hwcaps subdirectories the loader searches (`x86-64-v3:x86-64-v2`).
    pub hwcaps: String,
    /// Features above the baseline the profile masked and glibc reports off.
    pub masked: Vec<&'static str>,
    /// Features glibc reports active that no tunable masks and nothing it
    /// dispatches uses once the masked ones are off.
    pub inert: Vec<&'static str>,
    /// `name=value` of each fixed size as glibc reports it.
    pub sizes: Vec<String>,
    /// The legacy platform directory glibc < 2.37 searches (`haswell`,
    /// `xeon_phi`: chosen by CPU vendor and model, which no tunable fixes),
    /// and the system directories it searches it in.
    pub platform: Option<String>,
    system_dirs: Vec<String>,
}

impl Verified {
    /// The legacy platform subdirectories that exist on this machine: the
    /// loader's use of them follows the CPU vendor, not the profile.
    pub fn legacy_platform_dirs(&self) -> Vec<String> {
        let mut found = Vec::new();
        for dir in &self.system_dirs {
            for sub in ["haswell", "xeon_phi", "tls/haswell", "tls/xeon_phi"] {
                let path = std::path::Path::new(dir).join(sub);
                if path.is_dir() {
                    found.push(path.display().to_string());
                }
            }
        }
        found
    }
}

impl Verified {
    /// One line for the run's notes.
    pub fn summary(&self, profile: &Profile) -> String {
        let mut s = format!(
            "counts made portable ({}, {}): glibc selects the same code on any CPU with the baseline, checked with ld.so --list-diagnostics under valgrind ({} features above it masked, hwcaps {}, {})",
            profile.baseline.name(),
            profile.glibc,
            self.masked.len(),
            self.hwcaps,
            self.sizes.join(", ")
        );
        if !self.inert.is_empty() {
            s.push_str(&format!(
                "; active but unused once masked: {}",
                self.inert.join(", ")
            ));
        }
        s
    }
}

/// How long the loader may take under valgrind (it takes ~0.3 s).
pub const VERIFY_TIMEOUT: Duration = Duration::from_secs(60);

/// The profile for this machine's glibc: the preferred flags come from its
/// `--list-diagnostics`, the size tunables from its `--list-tunables`, so
/// the value names only what this glibc version knows. `user` is the
/// caller's own `GLIBC_TUNABLES`, merged in (theirs wins).
pub fn live_profile(baseline: Baseline, user: Option<&str>) -> Result<Profile, Refusal> {
    if !cfg!(target_arch = "x86_64") {
        return Err(Refusal(
            "portable counts are for x86-64 (glibc's dispatch there is what they fix); this is another architecture".into(),
        ));
    }
    let (version, _) = crate::libc_info::live_libc();
    let version = version.map_err(|e| Refusal(format!("no glibc: {e}")))?;
    let loader = crate::libc_info::loader_path().map_err(|e| Refusal(e.to_string()))?;
    let run = |arg: &str| {
        crate::libc_info::run_loader(&[], &loader, arg, None, Duration::from_secs(5))
            .map_err(|e| Refusal(format!("cannot read what glibc offers: {e}")))
    };
    check_version(&version)?;
    let diagnostics = run("--list-diagnostics")?;
    let tunables = run("--list-tunables")?;
    build(baseline, &version, &diagnostics, &tunables, user)
}

/// glibc 2.35 is the first with `--list-diagnostics`: older ones cannot
/// show what they selected, and the profile is checked, not assumed.
fn check_version(version: &str) -> Result<(), Refusal> {
    let (major, minor) = crate::libc_info::parse_glibc(version)
        .ok_or_else(|| Refusal(format!("not glibc: {version}")))?;
    if (major, minor) < (2, 35) {
        return Err(Refusal(format!(
            "{version} cannot list what it selected (ld.so --list-diagnostics needs glibc 2.35+), so portable counts could not be verified"
        )));
    }
    Ok(())
}

/// The profile from the texts of `ld.so --list-diagnostics` and
/// `--list-tunables` of the glibc `version`.
pub fn build(
    baseline: Baseline,
    version: &str,
    diagnostics: &str,
    list_tunables: &str,
    user: Option<&str>,
) -> Result<Profile, Refusal> {
    check_version(version)?;
    let mut hwcaps: Vec<String> = FEATURES
        .iter()
        .filter(|f| f.maskable && f.level > baseline.level())
        .map(|f| format!("-{}", f.name))
        .collect();
    let mut unfixed = Vec::new();
    for name in preferred_names(diagnostics) {
        match preferred_policy(&name, baseline) {
            Some(true) => hwcaps.push(name),
            Some(false) => hwcaps.push(format!("-{name}")),
            None if INERT_PREFERRED.contains(&name.as_str()) => {}
            None => unfixed.push(format!(
                "preferred flag {name} (new in this glibc: not fixed by the profile)"
            )),
        }
    }
    let listed = listed_tunables(list_tunables);
    let mut values: Vec<(String, String)> = Vec::new();
    for (name, range) in &listed {
        let Some(short) = name.strip_prefix("glibc.cpu.") else {
            continue;
        };
        if !short.starts_with("x86_") || NOT_SIZES.contains(&short) {
            continue;
        }
        match SIZES.iter().find(|(n, _)| *n == short) {
            Some((_, v)) => {
                if let Some((min, max)) = range
                    && (*v < *min || *v > *max)
                {
                    return Err(Refusal(format!(
                        "{version} accepts {name} only in {min:#x}..{max:#x}, not the profile's {v:#x}"
                    )));
                }
                values.push((name.clone(), format!("{v:#x}")));
            }
            None => unfixed.push(format!("tunable {name} (not fixed by the profile)")),
        }
    }
    for needed in [
        "x86_data_cache_size",
        "x86_shared_cache_size",
        "x86_non_temporal_threshold",
    ] {
        if !values.iter().any(|(n, _)| n.ends_with(needed)) {
            return Err(Refusal(format!(
                "{version} does not list glibc.cpu.{needed} (ld.so --list-tunables): its thresholds cannot be fixed"
            )));
        }
    }
    values.insert(0, ("glibc.cpu.hwcaps".into(), hwcaps.join(",")));
    let overridden = match user {
        Some(u) if !u.trim().is_empty() => merge(&mut values, u)?,
        _ => Vec::new(),
    };
    let tunables = values
        .iter()
        .map(|(k, v)| {
            // glibc before 2.38 reads past the end of the hwcaps list's last
            // item (it steps over the NUL, then tests the byte after it), so
            // what follows in memory was parsed too and the count of the
            // loader varied from run to run; a trailing comma ends the list
            // inside it. Later glibc skips the empty item.
            if k == "glibc.cpu.hwcaps" && !v.is_empty() && !v.ends_with(',') {
                format!("{k}={v},")
            } else {
                format!("{k}={v}")
            }
        })
        .collect::<Vec<_>>()
        .join(":");
    if "GLIBC_TUNABLES=".len() + tunables.len() + 1 > MAX_ENV_STRING {
        return Err(Refusal(format!(
            "GLIBC_TUNABLES with the portable profile merged in would be {} bytes, over the kernel's {} KiB limit for one environment string: shorten your GLIBC_TUNABLES",
            tunables.len(),
            MAX_ENV_STRING / 1024
        )));
    }
    let hwcaps = values
        .iter()
        .find(|(k, _)| k == "glibc.cpu.hwcaps")
        .map(|(_, v)| {
            v.split(',')
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    Ok(Profile {
        baseline,
        glibc: version.to_string(),
        tunables,
        overridden,
        unfixed,
        hwcaps,
        values,
    })
}

/// The preferred flags a `--list-diagnostics` text reports, in its order.
fn preferred_names(diagnostics: &str) -> Vec<String> {
    diagnostics
        .lines()
        .filter_map(|l| {
            let key = l.split_once('=')?.0;
            let name = key.strip_prefix("x86.cpu_features.preferred.")?;
            (!name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_'))
                .then(|| name.to_string())
        })
        .collect()
}

/// `name → (min, max)` of each tunable `--list-tunables` prints
/// (`glibc.cpu.x86_data_cache_size: 0xc000 (min: 0x0, max: 0xffff…)`);
/// string tunables have no range.
fn listed_tunables(text: &str) -> BTreeMap<String, Option<(u64, u64)>> {
    let mut out = BTreeMap::new();
    for line in text.lines() {
        let Some((name, rest)) = line.split_once(':') else {
            continue;
        };
        let name = name.trim();
        if !name.starts_with("glibc.") {
            continue;
        }
        let range = rest.split_once("(min:").and_then(|(_, r)| {
            let (min, max) = r.split_once(", max:")?;
            let max = max.trim().trim_end_matches(')').trim();
            Some((parse_number(min.trim())?, parse_number(max)?))
        });
        out.insert(name.to_string(), range);
    }
    out
}

/// Merges the user's `GLIBC_TUNABLES` into `values` as glibc would read
/// the two one after the other (theirs wins), and returns a line per
/// profile setting it changed. glibc keeps the last of a tunable given
/// twice, skips an item without `=`, and cannot turn a CPU feature on; a
/// size the profile fixes set to something glibc does not read as a number
/// would leave the CPU's own value in place, so it is refused.
fn merge(values: &mut Vec<(String, String)>, user: &str) -> Result<Vec<String>, Refusal> {
    let mut items: Vec<(String, String)> = Vec::new();
    for item in user.split(':') {
        let Some((name, value)) = item.split_once('=') else {
            continue;
        };
        match items.iter_mut().find(|(k, _)| k == name) {
            Some(slot) => slot.1 = value.to_string(),
            None => items.push((name.to_string(), value.to_string())),
        }
    }
    let mut overridden = Vec::new();
    for (name, value) in items {
        if name == "glibc.cpu.hwcaps" {
            if let Some((_, slot)) = values.iter_mut().find(|(k, _)| *k == name) {
                *slot = merge_hwcaps(slot, &value, &mut overridden);
            } else {
                values.push((name, value));
            }
            continue;
        }
        let fixed_size = name
            .strip_prefix("glibc.cpu.")
            .is_some_and(|short| SIZES.iter().any(|(n, _)| *n == short));
        match values.iter_mut().find(|(k, _)| *k == name) {
            Some((_, v)) if *v == value => {}
            Some((_, v)) => match (parse_number(&value), parse_number(v)) {
                (Some(theirs), Some(ours)) if theirs == ours => {}
                (None, _) if fixed_size => {
                    return Err(Refusal(format!(
                        "GLIBC_TUNABLES sets {name}={value}, which glibc does not read as a number (it would keep this CPU's own value): correct or remove it"
                    )));
                }
                _ => {
                    overridden.push(format!("{name}: {value} replaces the profile's {v}"));
                    *v = value;
                }
            },
            None => values.push((name, value)),
        }
    }
    Ok(overridden)
}

/// The profile's `glibc.cpu.hwcaps` list with the user's entries applied.
fn merge_hwcaps(ours: &str, theirs: &str, overridden: &mut Vec<String>) -> String {
    use std::collections::HashMap;
    let mut list: Vec<String> = ours
        .split(',')
        .filter(|e| !e.is_empty())
        .map(String::from)
        .collect();
    let mut index: HashMap<String, usize> = list
        .iter()
        .enumerate()
        .map(|(i, e)| (e.strip_prefix('-').unwrap_or(e).to_string(), i))
        .collect();
    for entry in theirs.split(',').filter(|e| !e.is_empty()) {
        let (disable, name) = match entry.strip_prefix('-') {
            Some(n) => (true, n),
            None => (false, entry),
        };
        if name.is_empty() {
            continue;
        }
        let feature = FEATURES.iter().find(|f| f.name == name);
        // glibc turns CPU features off only: an entry that would turn one
        // on does nothing there, and takes no mask away here.
        if feature.is_some() && !disable {
            list.push(entry.to_string());
            continue;
        }
        match index.get(name) {
            Some(&i) if list[i] == entry => {}
            Some(&i) => {
                overridden.push(format!(
                    "glibc.cpu.hwcaps: {entry} replaces the profile's {}",
                    list[i]
                ));
                list[i] = entry.to_string();
            }
            None => {
                if let Some(f) = feature {
                    // Level 5 stands for "in no x86-64 level": there is no v5.
                    let level = if f.level <= 4 {
                        format!("an x86-64-v{} feature", f.level)
                    } else {
                        "a feature of no x86-64 level".to_string()
                    };
                    overridden.push(format!(
                        "glibc.cpu.hwcaps: {entry} turns off {}, which the profile keeps ({level})",
                        f.name
                    ));
                }
                index.insert(name.to_string(), list.len());
                list.push(entry.to_string());
            }
        }
    }
    list.join(",")
}

/// The longest environment string the kernel passes (`MAX_ARG_STRLEN`).
const MAX_ENV_STRING: usize = 128 * 1024;

/// Checks a `--list-diagnostics` text taken under `profile` (under
/// valgrind, as the benchmark will run): every baseline feature active,
/// every masked one off, every preferred flag and size as set, and the
/// glibc-hwcaps subdirectories at or below the baseline only.
pub fn verify(profile: &Profile, diagnostics: &str) -> Result<Verified, Refusal> {
    let active = active_bits(diagnostics);
    let bit = |f: &Feature| {
        active
            .get(&(f.index, f.reg))
            .map(|word| word & (1 << f.bit) != 0)
    };
    // glibc's layout is read, not assumed: CMOV and SSE2 are on every x86-64.
    for base in ["CMOV", "SSE2"] {
        let f = feature(base);
        if bit(f) != Some(true) {
            return Err(Refusal(format!(
                "cannot read glibc's feature bits from ld.so --list-diagnostics ({base} is not where glibc {} keeps it): portable counts cannot be verified",
                profile.glibc
            )));
        }
    }
    let disabled = |name: &str| profile.hwcaps.iter().any(|h| h == &format!("-{name}"));
    let mut missing = Vec::new();
    let mut wrong = Vec::new();
    let mut masked = Vec::new();
    let mut inert = Vec::new();
    for f in FEATURES {
        let on = bit(f).unwrap_or(false);
        if disabled(f.name) {
            if on {
                wrong.push(format!("{} is still active", f.name));
            } else if f.level > profile.baseline.level() {
                masked.push(f.name);
            }
        } else if f.level <= profile.baseline.level() {
            if !on {
                missing.push(f.name);
            }
        } else if on {
            if f.maskable {
                wrong.push(format!("{} is active", f.name));
            } else {
                inert.push(f.name);
            }
        }
    }
    if !missing.is_empty() {
        return Err(Refusal(format!(
            "this CPU (as valgrind presents it) lacks {} of the {} baseline, which portable counts need on every runner (--portable=x86-64-v2 asks for the lower baseline)",
            missing.join(", "),
            profile.baseline.name()
        )));
    }
    for entry in &profile.hwcaps {
        let (want, name) = match entry.strip_prefix('-') {
            Some(n) => (false, n),
            None => (true, entry.as_str()),
        };
        if FEATURES.iter().any(|f| f.name == name) {
            continue;
        }
        let key = format!("x86.cpu_features.preferred.{name}");
        if let Some(v) = diagnostic(diagnostics, &key).and_then(|v| parse_number(&v)) {
            if (v != 0) != want {
                wrong.push(format!(
                    "preferred flag {name} is {v}, not {}",
                    u8::from(want)
                ));
            }
        }
    }
    let mut sizes = Vec::new();
    for (name, value) in &profile.values {
        let Some(short) = name.strip_prefix("glibc.cpu.x86_") else {
            continue;
        };
        if NOT_SIZES.contains(&short) {
            continue;
        }
        let Some(want) = parse_number(value) else {
            continue;
        };
        let key = format!("x86.cpu_features.{short}");
        match diagnostic(diagnostics, &key).and_then(|v| parse_number(&v)) {
            Some(got) if got == want => sizes.push(format!("{short} {}", size(got))),
            Some(got) => wrong.push(format!("{short} is {got:#x}, not {want:#x}")),
            None => wrong.push(format!("{key} is not reported")),
        }
    }
    let hwcaps = hwcaps_active(diagnostics);
    let allowed: Vec<String> = (2..=profile.baseline.level())
        .map(|l| format!("x86-64-v{l}"))
        .collect();
    if let Some(dirs) = &hwcaps {
        for d in dirs {
            if !allowed.contains(d) {
                wrong.push(format!("the loader would search glibc-hwcaps/{d}"));
            }
        }
    }
    if !wrong.is_empty() {
        return Err(Refusal(format!(
            "{} did not apply the portable profile: {}",
            profile.glibc,
            wrong.join("; ")
        )));
    }
    let system_dirs = diagnostics
        .lines()
        .filter_map(|l| {
            let (k, v) = l.split_once('=')?;
            k.starts_with("path.system_dirs[")
                .then(|| v.trim().trim_matches('"').to_string())
        })
        .collect();
    Ok(Verified {
        hwcaps: match hwcaps {
            None => "unknown".into(),
            Some(d) if d.is_empty() => "none".into(),
            Some(d) => d.join(":"),
        },
        masked,
        inert,
        sizes,
        platform: diagnostic(diagnostics, "dl_platform").filter(|p| !p.is_empty()),
        system_dirs,
    })
}

fn feature(name: &str) -> &'static Feature {
    FEATURES
        .iter()
        .find(|f| f.name == name)
        .expect("a feature of the table")
}

/// `(index, register) → active bits` from the `features[i].active[r]` lines.
fn active_bits(diagnostics: &str) -> BTreeMap<(u8, u8), u64> {
    let mut out = BTreeMap::new();
    for line in diagnostics.lines() {
        let Some((key, value)) = line.split_once('=') else {
            continue;
        };
        let Some(rest) = key.strip_prefix("x86.cpu_features.features[") else {
            continue;
        };
        let Some((index, rest)) = rest.split_once("].active[") else {
            continue;
        };
        let Some(reg) = rest.strip_suffix(']') else {
            continue;
        };
        let (Some(index), Some(reg), Some(value)) = (
            parse_number(index).and_then(|i| u8::try_from(i).ok()),
            parse_number(reg).and_then(|r| u8::try_from(r).ok()),
            parse_number(value.trim()),
        ) else {
            continue;
        };
        out.insert((index, reg), value);
    }
    out
}

/// The glibc-hwcaps subdirectories the loader searches, from
/// `dl_hwcaps_subdirs` and its active mask (bit i: the i-th name).
fn hwcaps_active(diagnostics: &str) -> Option<Vec<String>> {
    let names = diagnostic(diagnostics, "dl_hwcaps_subdirs")?;
    let mask =
        diagnostic(diagnostics, "dl_hwcaps_subdirs_active").and_then(|v| parse_number(&v))?;
    Some(
        names
            .split(':')
            .enumerate()
            .filter(|(i, _)| *i < 64 && mask & (1 << i) != 0)
            .map(|(_, n)| n.to_string())
            .collect(),
    )
}

/// Runs `ld.so --list-diagnostics` of this machine behind `wrapper` (the
/// valgrind command line the benchmarks run under) with `GLIBC_TUNABLES`
/// set to the profile, and verifies what it printed.
pub fn verify_live(profile: &Profile, wrapper: &[String]) -> Result<Verified, Refusal> {
    let loader: PathBuf = crate::libc_info::loader_path().map_err(|e| Refusal(e.to_string()))?;
    let text = crate::libc_info::run_loader(
        wrapper,
        &loader,
        "--list-diagnostics",
        Some(&profile.tunables),
        VERIFY_TIMEOUT,
    )
    .map_err(|e| Refusal(format!("cannot check the portable profile: {e}")))?;
    verify(profile, &text)
}

/// What masking this CPU's glibc dispatch down to another machine's
/// features takes (`explain`'s ISA experiment).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IsaEmulation {
    /// Features this CPU has and the other lacks, turned off by the mask.
    pub masked: Vec<&'static str>,
    /// Features this CPU has and the other lacks that glibc offers no switch for.
    pub no_switch: Vec<&'static str>,
    /// Features the other machine has and this CPU lacks: no mask adds them.
    pub missing_here: Vec<&'static str>,
    /// The `glibc.cpu.hwcaps` entries (`-AVX2`, and the preferred flags
    /// glibc derives from a masked feature); empty when nothing is masked.
    pub hwcaps: Vec<String>,
}

/// The `/proc/cpuinfo` name of a glibc feature, where the kernel shows one.
fn cpuinfo_flag(name: &str) -> Option<String> {
    Some(match name {
        "SSE3" => "pni".into(),
        "LZCNT" => "abm".into(),
        "LAHF64_SAHF64" => "lahf_lm".into(),
        // The kernel lists no flag for OS support of XSAVE.
        "OSXSAVE" => return None,
        n => n.to_ascii_lowercase(),
    })
}

/// Preferred flags glibc sets from a feature when it starts, which masking
/// the feature alone leaves set (glibc 2.36 keeps `AVX_Fast_Unaligned_Load`
/// under `-AVX2`, and with it the AVX `memcpy`).
const DERIVED_PREFERRED: &[(&str, &str)] = &[
    ("AVX_Fast_Unaligned_Load", "AVX2"),
    ("Prefer_AVX2_STRCMP", "AVX2"),
];

/// The mask that makes glibc on a CPU with `here` (its `cpu.flags`, space
/// separated) dispatch as on one with `there`.
pub fn emulate_isa(here: &str, there: &str) -> IsaEmulation {
    let has = |flags: &str, name: &str| {
        cpuinfo_flag(name).is_some_and(|f| flags.split_whitespace().any(|x| x == f))
    };
    let mut out = IsaEmulation::default();
    for f in FEATURES {
        if cpuinfo_flag(f.name).is_none() {
            continue;
        }
        match (has(here, f.name), has(there, f.name)) {
            (true, false) if f.maskable => {
                out.masked.push(f.name);
                out.hwcaps.push(format!("-{}", f.name));
            }
            (true, false) => out.no_switch.push(f.name),
            (false, true) => out.missing_here.push(f.name),
            _ => {}
        }
    }
    for (preferred, from) in DERIVED_PREFERRED {
        if out.masked.contains(from) {
            out.hwcaps.push(format!("-{preferred}"));
        }
    }
    out
}

/// The `name=value` pairs of a `GLIBC_TUNABLES` value, as glibc reads them
/// (entries without `=` are skipped).
pub fn tunable_pairs(value: &str) -> Vec<(String, String)> {
    value
        .split(':')
        .filter_map(|e| {
            let (k, v) = e.split_once('=')?;
            Some((k.trim().to_string(), v.to_string()))
        })
        .collect()
}

/// Checks that glibc applied `tunables`, from the loader's
/// `--list-diagnostics` and `--list-tunables` taken under them: each
/// `-FEATURE` of `glibc.cpu.hwcaps` off, each preferred flag as set, each
/// other tunable at the value given. Returns what took effect, in words.
pub fn check_applied(
    tunables: &str,
    diagnostics: &str,
    list_tunables: &str,
) -> Result<Vec<String>, Refusal> {
    let listed = listed_values(list_tunables);
    let active = active_bits(diagnostics);
    let mut applied = Vec::new();
    let mut wrong = Vec::new();
    for (name, value) in tunable_pairs(tunables) {
        if name == "glibc.cpu.hwcaps" {
            for entry in value.split(',').map(str::trim).filter(|e| !e.is_empty()) {
                let (want, flag) = match entry.strip_prefix('-') {
                    Some(n) => (false, n),
                    None => (true, entry),
                };
                if let Some(f) = FEATURES.iter().find(|f| f.name == flag) {
                    let on = active.get(&(f.index, f.reg)).map(|w| w & (1 << f.bit) != 0);
                    match on {
                        Some(on) if !want && on => wrong.push(format!("{flag} is still active")),
                        Some(_) if !want => applied.push(format!("{flag} off")),
                        // Turning a feature on is not a mask: glibc ignores it.
                        Some(_) => {}
                        None => wrong.push(format!("glibc reports no bit for {flag}")),
                    }
                    continue;
                }
                let key = format!("x86.cpu_features.preferred.{flag}");
                match diagnostic(diagnostics, &key).and_then(|v| parse_number(&v)) {
                    Some(v) if (v != 0) == want => {
                        applied.push(format!("{flag} {}", if want { "on" } else { "off" }))
                    }
                    Some(v) => wrong.push(format!("preferred flag {flag} is {v}")),
                    None => wrong.push(format!(
                        "this glibc has no feature or preferred flag {flag}"
                    )),
                }
            }
            continue;
        }
        match listed.get(&name) {
            None => wrong.push(format!("this glibc has no tunable {name}")),
            Some(got) => {
                let same = match (parse_number(&value), parse_number(got)) {
                    (Some(a), Some(b)) => a == b,
                    _ => got.trim() == value.trim(),
                };
                if same {
                    applied.push(format!("{name}={value}"));
                } else {
                    wrong.push(format!("{name} is {got}, not {value} (outside its range?)"));
                }
            }
        }
    }
    if wrong.is_empty() {
        Ok(applied)
    } else {
        Err(Refusal(format!(
            "glibc did not apply GLIBC_TUNABLES={tunables}: {}",
            wrong.join("; ")
        )))
    }
}

/// `name → value` of each tunable `--list-tunables` prints.
fn listed_values(text: &str) -> BTreeMap<String, String> {
    text.lines()
        .filter_map(|line| {
            let (name, rest) = line.split_once(':')?;
            let name = name.trim();
            name.starts_with("glibc.").then(|| {
                let value = rest.split(" (min:").next().unwrap_or(rest).trim();
                (name.to_string(), value.to_string())
            })
        })
        .collect()
}

/// The features glibc found active, by their `/proc/cpuinfo` names (space
/// separated, as `cpu.flags`), from a `--list-diagnostics` text: under
/// valgrind, the CPU valgrind presents rather than the host's.
pub fn active_flags(diagnostics: &str) -> String {
    let active = active_bits(diagnostics);
    FEATURES
        .iter()
        .filter(|f| {
            active
                .get(&(f.index, f.reg))
                .is_some_and(|w| w & (1 << f.bit) != 0)
        })
        .filter_map(|f| cpuinfo_flag(f.name))
        .collect::<Vec<_>>()
        .join(" ")
}

/// [`active_flags`] of this machine's loader run behind `wrapper`.
pub fn live_active_flags(wrapper: &[String]) -> Option<String> {
    let loader: PathBuf = crate::libc_info::loader_path().ok()?;
    let text =
        crate::libc_info::run_loader(wrapper, &loader, "--list-diagnostics", None, VERIFY_TIMEOUT)
            .ok()?;
    let flags = active_flags(&text);
    (!flags.is_empty()).then_some(flags)
}

/// The tunables this machine's glibc lists (`ld.so --list-tunables`);
/// `None` where the loader cannot be run.
pub fn live_tunable_names() -> Option<std::collections::BTreeSet<String>> {
    let loader: PathBuf = crate::libc_info::loader_path().ok()?;
    let text =
        crate::libc_info::run_loader(&[], &loader, "--list-tunables", None, VERIFY_TIMEOUT).ok()?;
    Some(listed_tunables(&text).into_keys().collect())
}

/// [`check_applied`] on this machine's loader, run behind `wrapper` (the
/// valgrind command line in simulation mode, nothing otherwise).
pub fn check_applied_live(tunables: &str, wrapper: &[String]) -> Result<Vec<String>, Refusal> {
    let loader: PathBuf = crate::libc_info::loader_path().map_err(|e| Refusal(e.to_string()))?;
    let run = |arg: &str| {
        crate::libc_info::run_loader(wrapper, &loader, arg, Some(tunables), VERIFY_TIMEOUT)
            .map_err(|e| Refusal(format!("cannot check GLIBC_TUNABLES={tunables}: {e}")))
    };
    let diagnostics = run("--list-diagnostics")?;
    let list = run("--list-tunables")?;
    check_applied(tunables, &diagnostics, &list)
}

#[cfg(test)]
mod tests;
