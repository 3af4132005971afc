//! CPU facts: identity from CPUID and `/proc/cpuinfo`, topology, caches of
//! cpu0, frequency scaling, boost and idle driver (`docs/ENVIRONMENT.md`).
//! Every key of the contract is always set; what cannot be read is `unknown`
//! with the reason, and no input (garbage, non-UTF-8, absurd numbers) panics.

use crate::Source;
use crate::cpuid::vendor_string;
use crate::error::{Record, Unknown};
use perfsleuth_model::{Environment, ImpactClass};
use std::collections::BTreeSet;

const ID: ImpactClass = ImpactClass::Identity;
const PERF: ImpactClass = ImpactClass::Performance;

/// The cache names of the contract, in report order.
const CACHES: [&str; 4] = ["l1d", "l1i", "l2", "l3"];

/// Where cpu0's caches are described; only cpu0 is read, since the caches of
/// one core describe the machine and reading every CPU would cost time.
const CACHE_DIR: &str = "/sys/devices/system/cpu/cpu0/cache";

/// Most cache descriptions CPUID or sysfs are asked for: real CPUs have
/// at most 5 or so, and a corrupt dump must not loop for long.
const MAX_CACHE_ENTRIES: u32 = 16;

/// Captures the CPU facts of the machine or tree `src` describes.
pub fn capture(src: &Source, env: &mut Environment) {
    let info = CpuInfo::read(src);
    identity(src, &info, env);
    topology(src, &info, env);
    let sysfs = sysfs_caches(src, env);
    env.record(
        "cpu.cache.cpuid_check",
        cpuid_cache_check(src, &sysfs),
        ImpactClass::Context,
    );
    frequency(src, env);
}

/// Vendor, family/model/stepping, model name, brand, microcode, flags, ISA level.
fn identity(src: &Source, info: &Result<CpuInfo, Unknown>, env: &mut Environment) {
    // CPUID first, since it is what the silicon (or hypervisor) says and it
    // is the same in a tree's dump; /proc/cpuinfo is the fallback.
    let vendor = match src.cpuid(0, 0) {
        Ok(regs) => {
            let v = vendor_string(regs, [1, 3, 2]);
            if printable(&v) {
                Ok(v)
            } else {
                Err(format!("cpuid leaf 0 vendor is not text: {v:?}").into())
            }
        }
        Err(e) => Err(e),
    };
    env.record(
        "cpu.vendor",
        vendor.or_else(|e| fallback(info, "vendor_id", &e)),
        ID,
    );

    let signature = src.cpuid(1, 0).and_then(|r| {
        // A zero signature comes from hypervisors that leave leaf 1 empty.
        if r[0] == 0 {
            Err("cpuid leaf 1 signature is 0".into())
        } else {
            Ok(decode_signature(r[0]))
        }
    });
    let (family, model, stepping) = match signature {
        Ok((f, m, s)) => (Ok(f.to_string()), Ok(m.to_string()), Ok(s.to_string())),
        Err(e) => (
            decimal_fallback(info, "cpu family", &e),
            decimal_fallback(info, "model", &e),
            decimal_fallback(info, "stepping", &e),
        ),
    };
    env.record("cpu.family", family, ID);
    env.record("cpu.model_id", model, ID);
    env.record("cpu.stepping", stepping, ID);

    env.record("cpu.model", field(info, "model name"), ID);
    env.record("cpu.brand", brand(src), ID);
    env.record("cpu.microcode", field(info, "microcode"), PERF);

    // x86 calls them "flags"; arm64 "Features": either is the feature list.
    let x86_flags = field(info, "flags");
    let flags = x86_flags
        .clone()
        .or_else(|e| field(info, "Features").map_err(|_| e));
    let sorted = flags.map(|f| {
        f.split_whitespace()
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect::<Vec<_>>()
            .join(" ")
    });
    env.record("cpu.flags", sorted, ID);
    let level = match &x86_flags {
        Ok(f) => isa_level(&f.split_whitespace().collect()),
        Err(e) if field(info, "Features").is_ok() => {
            Err(format!("not x86: x86-64 levels do not apply ({e})").into())
        }
        Err(e) => Err(e.clone()),
    };
    env.record("cpu.isa_level", level, ID);
}

/// Logical/physical cores, sockets, online CPUs and SMT control.
fn topology(src: &Source, info: &Result<CpuInfo, Unknown>, env: &mut Environment) {
    let logical = info.as_ref().map_err(Clone::clone).and_then(|i| {
        if i.processors == 0 {
            Err("no \"processor\" entries in /proc/cpuinfo".into())
        } else {
            Ok(i.processors.to_string())
        }
    });
    env.record("cpu.logical_cores", logical, ID);

    let topo = info.as_ref().map_err(Clone::clone).and_then(|i| {
        if i.processors == 0 || i.topology_missing {
            Err("/proc/cpuinfo has no \"physical id\"/\"core id\" (common in VMs)".into())
        } else {
            Ok((i.cores.len(), i.sockets.len()))
        }
    });
    env.record(
        "cpu.physical_cores",
        topo.clone().map(|t| t.0.to_string()),
        ID,
    );
    env.record("cpu.sockets", topo.map(|t| t.1.to_string()), ID);

    env.record(
        "cpu.online",
        cpu_list(src, "/sys/devices/system/cpu/online"),
        PERF,
    );
    env.record(
        "cpu.smt",
        word(src, "/sys/devices/system/cpu/smt/control"),
        PERF,
    );
}

/// Frequency driver, governor and limits of cpu0, boost and the idle driver.
fn frequency(src: &Source, env: &mut Environment) {
    let dir = "/sys/devices/system/cpu/cpu0/cpufreq";
    // One check instead of four "No such file" reasons: VMs and containers
    // commonly have no cpufreq at all.
    let missing = (!src.exists(dir))
        .then(|| format!("no {dir} (no frequency scaling exposed; common in VMs)"));
    let read = |name: &str, numeric: bool| -> Result<String, Unknown> {
        if let Some(m) = &missing {
            return Err(m.clone().into());
        }
        let path = format!("{dir}/{name}");
        if numeric {
            number(src, &path).map(|n| n.to_string())
        } else {
            word(src, &path)
        }
    };
    env.record("cpu.freq.driver", read("scaling_driver", false), PERF);
    env.record("cpu.freq.governor", read("scaling_governor", false), PERF);
    env.record("cpu.freq.min_khz", read("scaling_min_freq", true), PERF);
    env.record("cpu.freq.max_khz", read("scaling_max_freq", true), PERF);
    env.record("cpu.boost", boost(src), PERF);
    env.record(
        "cpu.idle.driver",
        word(src, "/sys/devices/system/cpu/cpuidle/current_driver"),
        PERF,
    );
}

/// Turbo/boost state: intel_pstate's `no_turbo` (inverted) or cpufreq's `boost`.
fn boost(src: &Source) -> Result<String, Unknown> {
    let no_turbo = "/sys/devices/system/cpu/intel_pstate/no_turbo";
    let boost = "/sys/devices/system/cpu/cpufreq/boost";
    let (path, inverted) = if src.exists(no_turbo) {
        (no_turbo, true)
    } else if src.exists(boost) {
        (boost, false)
    } else {
        return Err("neither intel_pstate/no_turbo nor cpufreq/boost exists".into());
    };
    match (number(src, path)?, inverted) {
        (0, true) | (1, false) => Ok("on".to_string()),
        (1, true) | (0, false) => Ok("off".to_string()),
        (n, _) => Err(format!("{path}: unexpected value {n}").into()),
    }
}

/// What this crate needs from `/proc/cpuinfo`, parsed in one pass.
#[derive(Debug, Default)]
struct CpuInfo {
    /// Key/value pairs of the first processor's block.
    first: Vec<(String, String)>,
    /// Number of blocks with a "processor" line.
    processors: usize,
    /// Distinct (physical id, core id) pairs.
    cores: BTreeSet<(String, String)>,
    /// Distinct physical ids.
    sockets: BTreeSet<String>,
    /// Some processor lacked "physical id" or "core id".
    topology_missing: bool,
}

impl CpuInfo {
    /// Reads and parses `/proc/cpuinfo` of the source; the error is the reason.
    fn read(src: &Source) -> Result<CpuInfo, Unknown> {
        let text = src.read("/proc/cpuinfo")?;
        if text.trim().is_empty() {
            return Err("/proc/cpuinfo is empty".into());
        }
        Ok(CpuInfo::parse(&text))
    }

    /// Parses blank-line separated blocks of `key : value` lines.
    fn parse(text: &str) -> CpuInfo {
        let mut info = CpuInfo::default();
        let mut fallback: Option<Vec<(String, String)>> = None;
        let mut block: Vec<(&str, &str)> = Vec::new();
        // A trailing empty line makes sure the last block is flushed.
        for line in text.lines().chain(std::iter::once("")) {
            if line.trim().is_empty() {
                if !block.is_empty() {
                    info.add_block(&block, &mut fallback);
                    block.clear();
                }
                continue;
            }
            if let Some((k, v)) = line.split_once(':') {
                block.push((k.trim(), v.trim()));
            }
        }
        if info.first.is_empty() {
            // No "processor" lines (an unusual architecture or a damaged
            // file): the first block still says something.
            info.first = fallback.unwrap_or_default();
        }
        info
    }

    fn add_block(&mut self, block: &[(&str, &str)], fallback: &mut Option<Vec<(String, String)>>) {
        let owned = || {
            block
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect::<Vec<_>>()
        };
        let get = |key: &str| {
            block
                .iter()
                .find(|(k, _)| *k == key)
                .map(|(_, v)| v.to_string())
        };
        if get("processor").is_none() {
            if fallback.is_none() {
                *fallback = Some(owned());
            }
            return;
        }
        self.processors += 1;
        if self.first.is_empty() {
            self.first = owned();
        }
        match (get("physical id"), get("core id")) {
            (Some(p), Some(c)) => {
                self.sockets.insert(p.clone());
                self.cores.insert((p, c));
            }
            _ => self.topology_missing = true,
        }
    }

    /// A field of the first processor.
    fn get(&self, key: &str) -> Result<&str, Unknown> {
        match self.first.iter().find(|(k, _)| k == key) {
            Some((_, v)) if !v.is_empty() => Ok(v),
            Some(_) => Err(format!("\"{key}\" is empty in /proc/cpuinfo").into()),
            None => Err(format!("no \"{key}\" in /proc/cpuinfo").into()),
        }
    }
}

/// A field of the first processor of `/proc/cpuinfo`.
fn field(info: &Result<CpuInfo, Unknown>, key: &str) -> Result<String, Unknown> {
    // Control characters (NULs in a damaged file) never reach a fact.
    info.as_ref()
        .map_err(Clone::clone)?
        .get(key)
        .map(|v| v.chars().filter(|c| !c.is_control()).collect())
}

/// A cpuinfo field used when CPUID failed; both reasons are kept.
fn fallback(
    info: &Result<CpuInfo, Unknown>,
    key: &str,
    cpuid_err: &Unknown,
) -> Result<String, Unknown> {
    field(info, key).map_err(|e| format!("{cpuid_err}; {e}").into())
}

/// A decimal cpuinfo field used when CPUID failed.
fn decimal_fallback(
    info: &Result<CpuInfo, Unknown>,
    key: &str,
    cpuid_err: &Unknown,
) -> Result<String, Unknown> {
    let v = fallback(info, key, cpuid_err)?;
    v.parse::<u64>().map(|n| n.to_string()).map_err(|_| {
        format!(
            "{cpuid_err}; \"{key}\" in /proc/cpuinfo is not a number: {}",
            snippet(&v)
        )
        .into()
    })
}

/// Display family, model and stepping from the leaf 1 signature (eax), by
/// the rules Intel and AMD share: the extended family is added only when the
/// base family is 0xF, the extended model is prefixed when it is 6 or 0xF.
fn decode_signature(eax: u32) -> (u32, u32, u32) {
    let stepping = eax & 0xF;
    let base_model = (eax >> 4) & 0xF;
    let base_family = (eax >> 8) & 0xF;
    let ext_model = (eax >> 16) & 0xF;
    let ext_family = (eax >> 20) & 0xFF;
    let family = if base_family == 0xF {
        base_family + ext_family
    } else {
        base_family
    };
    let model = if base_family == 0x6 || base_family == 0xF {
        (ext_model << 4) + base_model
    } else {
        base_model
    };
    (family, model, stepping)
}

/// The brand string of leaves 0x80000002..0x80000004 (16 bytes each).
fn brand(src: &Source) -> Result<String, Unknown> {
    let mut bytes = Vec::with_capacity(48);
    for leaf in 0x8000_0002u32..=0x8000_0004 {
        for reg in src.cpuid(leaf, 0)? {
            bytes.extend_from_slice(&reg.to_le_bytes());
        }
    }
    let end = bytes.iter().position(|b| *b == 0).unwrap_or(bytes.len());
    let text = String::from_utf8_lossy(&bytes[..end]);
    // Intel pads the brand with leading spaces; collapse runs of spaces too.
    let brand = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if brand.is_empty() {
        Err("cpuid brand string is empty".into())
    } else if !printable(&brand) {
        Err(format!("cpuid brand string is not text: {brand:?}").into())
    } else {
        Ok(brand)
    }
}

/// glibc's x86-64 ISA level (sysdeps/x86/get-isa-level.h) from cpuinfo flag
/// names; SSE3 is `pni` and LZCNT `abm` there.
fn isa_level(flags: &BTreeSet<&str>) -> Result<String, Unknown> {
    const BASE: &[&str] = &["lm", "cmov", "cx8", "fpu", "fxsr", "mmx", "sse", "sse2"];
    const V2: &[&str] = &[
        "cx16", "lahf_lm", "popcnt", "pni", "sse4_1", "sse4_2", "ssse3",
    ];
    const V3: &[&str] = &[
        "avx", "avx2", "bmi1", "bmi2", "f16c", "fma", "abm", "movbe", "xsave",
    ];
    const V4: &[&str] = &["avx512f", "avx512bw", "avx512cd", "avx512dq", "avx512vl"];
    let has = |set: &[&str]| set.iter().all(|f| flags.contains(f));
    if !has(BASE) {
        let missing: Vec<&str> = BASE
            .iter()
            .copied()
            .filter(|f| !flags.contains(f))
            .collect();
        return Err(format!("not x86-64: flags lack {}", missing.join(" ")).into());
    }
    let level = if !has(V2) {
        1
    } else if !has(V3) {
        2
    } else if !has(V4) {
        3
    } else {
        4
    };
    Ok(format!("x86-64-v{level}"))
}

/// One cache of cpu0 as sysfs describes it.
#[derive(Debug, Clone)]
struct SysCache {
    name: &'static str,
    size_kib: Result<u64, Unknown>,
    ways: Result<String, Unknown>,
    line: Result<String, Unknown>,
    shared: Result<String, Unknown>,
}

/// Reads cpu0's cache index directories and records the `cpu.cache.*` keys;
/// returns what was found for the CPUID cross-check.
fn sysfs_caches(src: &Source, env: &mut Environment) -> Result<Vec<SysCache>, Unknown> {
    let found = read_sysfs_caches(src);
    for name in CACHES {
        let cache = match &found {
            Ok((caches, problem)) => match caches.iter().find(|c| c.name == name) {
                Some(c) => Ok(c),
                None => {
                    let upper = name.replacen('l', "L", 1);
                    Err(Unknown::from(match problem {
                        Some(p) => format!("no {upper} cache reported ({p})"),
                        None => format!("no {upper} cache reported"),
                    }))
                }
            },
            Err(e) => Err(e.clone()),
        };
        let key = |what: &str| format!("cpu.cache.{name}.{what}");
        match cache {
            Ok(c) => {
                env.record(
                    key("size"),
                    c.size_kib.clone().map(|k| format!("{k} KiB")),
                    ID,
                );
                env.record(key("ways"), c.ways.clone(), ID);
                env.record(key("line"), c.line.clone(), ID);
                env.record(key("shared_cpus"), c.shared.clone(), ID);
            }
            Err(e) => {
                for what in ["size", "ways", "line", "shared_cpus"] {
                    env.record(key(what), Err(e.clone()), ID);
                }
            }
        }
    }
    found.map(|(caches, _)| caches)
}

/// The caches of cpu0, and the first problem met with an index directory
/// (kept so that "no L3 cache reported" can say why when it is a read error).
fn read_sysfs_caches(src: &Source) -> Result<(Vec<SysCache>, Option<Unknown>), Unknown> {
    let entries = src.list_dir(CACHE_DIR)?;
    let mut caches: Vec<SysCache> = Vec::new();
    let mut problem = None;
    let indexes = entries
        .iter()
        .filter(|e| e.starts_with("index"))
        .take(MAX_CACHE_ENTRIES as usize);
    for entry in indexes {
        let dir = format!("{CACHE_DIR}/{entry}");
        let level = number(src, &format!("{dir}/level"));
        let kind = word(src, &format!("{dir}/type"));
        let name = match (&level, kind.as_deref()) {
            (Ok(1), Ok("Data")) => "l1d",
            (Ok(1), Ok("Instruction")) => "l1i",
            (Ok(2), Ok("Unified" | "Data")) => "l2",
            (Ok(3), Ok("Unified" | "Data")) => "l3",
            (Err(e), _) | (_, Err(e)) => {
                problem.get_or_insert_with(|| e.clone());
                continue;
            }
            // L4 (eDRAM) and instruction-only outer caches have no key.
            _ => continue,
        };
        if caches.iter().any(|c| c.name == name) {
            continue;
        }
        caches.push(SysCache {
            name,
            size_kib: word(src, &format!("{dir}/size"))
                .and_then(|s| size_kib(&s).map_err(|e| format!("{dir}/size: {e}").into())),
            ways: number(src, &format!("{dir}/ways_of_associativity")).map(|n| n.to_string()),
            line: number(src, &format!("{dir}/coherency_line_size")).map(|n| n.to_string()),
            shared: cpu_list(src, &format!("{dir}/shared_cpu_list")),
        });
    }
    Ok((caches, problem))
}

/// A sysfs cache size ("48K", "32M", "1280K", or bare bytes) in KiB.
fn size_kib(text: &str) -> Result<u64, Unknown> {
    let t = text.trim();
    let t = t
        .strip_suffix("iB")
        .or_else(|| t.strip_suffix('B'))
        .unwrap_or(t)
        .trim_end();
    let (digits, unit) = match t.char_indices().find(|(_, c)| !c.is_ascii_digit()) {
        Some((i, _)) => (&t[..i], t[i..].trim()),
        None => (t, ""),
    };
    let n: u64 = digits
        .parse()
        .map_err(|_| format!("not a size: {}", snippet(text)))?;
    let kib = match unit {
        "" => {
            if n % 1024 != 0 {
                return Err(format!("{n} bytes is not a whole number of KiB").into());
            }
            Some(n / 1024)
        }
        "K" | "k" => Some(n),
        "M" | "m" => n.checked_mul(1024),
        "G" | "g" => n.checked_mul(1024 * 1024),
        _ => return Err(format!("not a size: {}", snippet(text)).into()),
    };
    kib.ok_or_else(|| format!("size out of range: {}", snippet(text)).into())
}

/// Compares the sysfs cache sizes with CPUID's deterministic cache leaves.
fn cpuid_cache_check(
    src: &Source,
    sysfs: &Result<Vec<SysCache>, Unknown>,
) -> Result<String, Unknown> {
    let sysfs = sysfs
        .as_ref()
        .map_err(|e| format!("no sysfs caches to compare: {e}"))?;
    let vendor = vendor_string(src.cpuid(0, 0)?, [1, 3, 2]);
    let leaf = match vendor.as_str() {
        "GenuineIntel" | "CentaurHauls" | "Shanghai" => 4,
        "AuthenticAMD" | "HygonGenuine" => 0x8000_001D,
        other => {
            return Err(format!("no deterministic cache leaf known for vendor {other:?}").into());
        }
    };
    let cpuid = cpuid_caches(src, leaf)?;
    let mut diffs = Vec::new();
    let mut compared = 0;
    for name in CACHES {
        let ours = sysfs
            .iter()
            .find(|c| c.name == name)
            .and_then(|c| c.size_kib.as_ref().ok());
        let entry = cpuid.iter().find(|(n, ..)| *n == name);
        let theirs = entry.map(|(_, k, ..)| *k);
        match (ours, theirs) {
            (Some(a), Some(b)) => {
                compared += 1;
                if *a != b {
                    diffs.push(format!("{name} sysfs {a} KiB vs cpuid {b} KiB"));
                }
                // Ways and line size too, where both sides state them.
                let sys = sysfs.iter().find(|c| c.name == name);
                let number = |r: Option<&Result<String, Unknown>>| {
                    r.and_then(|v| v.as_ref().ok())
                        .and_then(|v| v.parse::<u64>().ok())
                };
                if let (Some(w), Some((_, _, Some(cw), _))) = (number(sys.map(|c| &c.ways)), entry)
                {
                    if w != 0 && w != *cw {
                        diffs.push(format!("{name} ways sysfs {w} vs cpuid {cw}"));
                    }
                }
                if let (Some(l), Some((_, _, _, cl))) = (number(sys.map(|c| &c.line)), entry) {
                    if l != *cl {
                        diffs.push(format!("{name} line sysfs {l} B vs cpuid {cl} B"));
                    }
                }
            }
            (Some(a), None) => diffs.push(format!("{name} sysfs {a} KiB vs cpuid none")),
            (None, Some(b)) => diffs.push(format!("{name} sysfs none vs cpuid {b} KiB")),
            (None, None) => {}
        }
    }
    if !diffs.is_empty() {
        Ok(format!("differs: {}", diffs.join(", ")))
    } else if compared == 0 {
        Err("no cache sizes on either side to compare".into())
    } else {
        Ok("agrees".to_string())
    }
}

/// The caches CPUID leaf 4 (Intel) or 0x8000001D (AMD) lists, with sizes in
/// KiB: ways * partitions * line size * sets, each field stored minus one.
/// One cache as CPUID describes it: name, size in KiB, ways (`None` when
/// fully associative), line size in bytes.
type CpuidCache = (&'static str, u64, Option<u64>, u64);

fn cpuid_caches(src: &Source, leaf: u32) -> Result<Vec<CpuidCache>, Unknown> {
    let mut caches: Vec<CpuidCache> = Vec::new();
    for sub in 0..MAX_CACHE_ENTRIES {
        // A dump may end after the last cache instead of listing the empty
        // subleaf that terminates the list: the end, not an error.
        let [eax, ebx, ecx, _] = match src.cpuid(leaf, sub) {
            Ok(regs) => regs,
            Err(_) if !caches.is_empty() => break,
            Err(e) => return Err(e),
        };
        let kind = eax & 0x1F;
        if kind == 0 {
            break;
        }
        let level = (eax >> 5) & 0x7;
        let name = match (level, kind) {
            (1, 1) => "l1d",
            (1, 2) => "l1i",
            (2, 1 | 3) => "l2",
            (3, 1 | 3) => "l3",
            _ => continue,
        };
        let ways = u128::from((ebx >> 22) & 0x3FF) + 1;
        let partitions = u128::from((ebx >> 12) & 0x3FF) + 1;
        let line = u128::from(ebx & 0xFFF) + 1;
        let sets = u128::from(ecx) + 1;
        // At most 2^64 bytes, so u128 cannot overflow and KiB fits in u64.
        let kib = (ways * partitions * line * sets / 1024) as u64;
        let fully_associative = eax & (1 << 9) != 0;
        let ways_reported = (!fully_associative).then_some(ways as u64);
        if !caches.iter().any(|(n, ..)| *n == name) {
            caches.push((name, kib, ways_reported, line as u64));
        }
    }
    if caches.is_empty() {
        return Err(format!("cpuid leaf {leaf:#x} lists no caches").into());
    }
    Ok(caches)
}

/// The first line of a small file, trimmed; stray lines after it are ignored.
fn word(src: &Source, path: &str) -> Result<String, Unknown> {
    let text = src.read(path)?;
    let line = text
        .lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .unwrap_or("");
    if line.is_empty() {
        return Err(format!("{path} is empty").into());
    }
    Ok(line.to_string())
}

/// A file holding one unsigned decimal number.
fn number(src: &Source, path: &str) -> Result<u64, Unknown> {
    let w = word(src, path)?;
    w.parse()
        .map_err(|_| format!("{path}: not a number: {}", snippet(&w)).into())
}

/// A file holding a CPU list in the kernel's range syntax (`0-3,8-11`).
fn cpu_list(src: &Source, path: &str) -> Result<String, Unknown> {
    let w = word(src, path)?;
    if w.chars()
        .all(|c| c.is_ascii_digit() || c == ',' || c == '-')
    {
        Ok(w)
    } else {
        Err(format!("{path}: not a CPU list: {}", snippet(&w)).into())
    }
}

/// Whether a value is plain printable text (no control or replacement chars).
fn printable(s: &str) -> bool {
    !s.is_empty()
        && s.chars()
            .all(|c| !c.is_control() && c != char::REPLACEMENT_CHARACTER)
}

/// The start of a garbage value, for a reason that stays short.
fn snippet(s: &str) -> String {
    let cut: String = s.chars().take(40).collect();
    if cut.len() < s.len() {
        format!("{cut:?}...")
    } else {
        format!("{cut:?}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfsleuth_model::UNKNOWN;
    use std::path::{Path, PathBuf};
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Every key of the CPU section of the contract.
    const KEYS: &[&str] = &[
        "cpu.vendor",
        "cpu.family",
        "cpu.model_id",
        "cpu.stepping",
        "cpu.model",
        "cpu.brand",
        "cpu.microcode",
        "cpu.flags",
        "cpu.isa_level",
        "cpu.logical_cores",
        "cpu.physical_cores",
        "cpu.sockets",
        "cpu.online",
        "cpu.smt",
        "cpu.cache.l1d.size",
        "cpu.cache.l1d.ways",
        "cpu.cache.l1d.line",
        "cpu.cache.l1d.shared_cpus",
        "cpu.cache.l1i.size",
        "cpu.cache.l1i.ways",
        "cpu.cache.l1i.line",
        "cpu.cache.l1i.shared_cpus",
        "cpu.cache.l2.size",
        "cpu.cache.l2.ways",
        "cpu.cache.l2.line",
        "cpu.cache.l2.shared_cpus",
        "cpu.cache.l3.size",
        "cpu.cache.l3.ways",
        "cpu.cache.l3.line",
        "cpu.cache.l3.shared_cpus",
        "cpu.cache.cpuid_check",
        "cpu.freq.driver",
        "cpu.freq.governor",
        "cpu.freq.min_khz",
        "cpu.freq.max_khz",
        "cpu.boost",
        "cpu.idle.driver",
    ];

    /// A fresh directory under the system temp dir, removed on drop.
    struct Tree(PathBuf);

    impl Tree {
        fn new(tag: &str) -> Tree {
            static N: AtomicUsize = AtomicUsize::new(0);
            let n = N.fetch_add(1, Ordering::Relaxed);
            let dir = std::env::temp_dir()
                .join(format!("perfsleuth-cpu-{tag}-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Tree(dir)
        }

        fn write(&self, path: &str, content: impl AsRef<[u8]>) -> &Tree {
            let full = self.0.join(path.trim_start_matches('/'));
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, content).unwrap();
            self
        }

        fn path(&self) -> &Path {
            &self.0
        }

        fn capture(&self) -> Environment {
            let mut env = Environment::default();
            capture(&Source::root(self.path()), &mut env);
            env
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    /// One cpuinfo block in the format of a real x86 kernel (trimmed flags).
    fn cpuinfo_block(
        n: usize,
        core: usize,
        model_name: &str,
        family: u32,
        model: u32,
        step: u32,
        flags: &str,
    ) -> String {
        format!(
            "processor\t: {n}\nvendor_id\t: GenuineIntel\ncpu family\t: {family}\nmodel\t\t: {model}\n\
             model name\t: {model_name}\nstepping\t: {step}\nmicrocode\t: 0xd0003a5\ncpu MHz\t\t: 2793.438\n\
             cache size\t: 49152 KB\nphysical id\t: 0\nsiblings\t: 4\ncore id\t\t: {core}\ncpu cores\t: 2\n\
             apicid\t\t: {n}\ninitial apicid\t: {n}\nfpu\t\t: yes\nfpu_exception\t: yes\ncpuid level\t: 27\n\
             wp\t\t: yes\nflags\t\t: {flags}\nbugs\t\t: spectre_v1 spectre_v2\nbogomips\t: 5586.87\n\
             clflush size\t: 64\ncache_alignment\t: 64\naddress sizes\t: 46 bits physical, 48 bits virtual\n\
             power management:\n\n"
        )
    }

    const FLAGS_V4: &str = "fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ss ht syscall nx pdpe1gb rdtscp lm constant_tsc rep_good nopl xtopology cpuid pni pclmulqdq ssse3 fma cx16 pcid sse4_1 sse4_2 x2apic movbe popcnt aes xsave avx f16c rdrand hypervisor lahf_lm abm 3dnowprefetch fsgsbase bmi1 hle avx2 smep bmi2 erms invpcid avx512f avx512dq rdseed adx smap avx512ifma clflushopt clwb avx512cd sha_ni avx512bw avx512vl xsaveopt xsavec xsaves";

    /// `cpuid -r` lines encoding a brand string over leaves 0x80000002..4.
    fn brand_lines(brand: &str) -> String {
        let mut bytes = brand.as_bytes().to_vec();
        bytes.resize(48, 0);
        let mut out = String::new();
        for (i, chunk) in bytes.chunks(16).enumerate() {
            let r: Vec<u32> = chunk
                .chunks(4)
                .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
                .collect();
            out += &format!(
                "   0x{:08x} 0x00: eax=0x{:08x} ebx=0x{:08x} ecx=0x{:08x} edx=0x{:08x}\n",
                0x8000_0002 + i,
                r[0],
                r[1],
                r[2],
                r[3]
            );
        }
        out
    }

    /// A cpu0 cache index directory in sysfs format.
    fn cache_index(
        t: &Tree,
        i: usize,
        level: u32,
        kind: &str,
        size: &str,
        ways: u32,
        shared: &str,
    ) {
        let d = format!("sys/devices/system/cpu/cpu0/cache/index{i}");
        t.write(&format!("{d}/level"), format!("{level}\n"))
            .write(&format!("{d}/type"), format!("{kind}\n"))
            .write(&format!("{d}/size"), format!("{size}\n"))
            .write(&format!("{d}/ways_of_associativity"), format!("{ways}\n"))
            .write(&format!("{d}/coherency_line_size"), "64\n")
            .write(&format!("{d}/number_of_sets"), "64\n")
            .write(&format!("{d}/physical_line_partition"), "1\n")
            .write(&format!("{d}/shared_cpu_list"), format!("{shared}\n"));
    }

    /// An Intel Xeon Platinum 8370C (Azure Dv5-like) tree: 2 cores, 4 threads.
    fn intel_tree(l2_sysfs: &str) -> Tree {
        let t = Tree::new("intel");
        let name = "Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz";
        let mut cpuinfo = String::new();
        for (n, core) in [(0, 0), (1, 1), (2, 0), (3, 1)] {
            cpuinfo += &cpuinfo_block(n, core, name, 6, 106, 6, FLAGS_V4);
        }
        t.write("proc/cpuinfo", cpuinfo);
        cache_index(&t, 0, 1, "Data", "48K", 12, "0,2");
        cache_index(&t, 1, 1, "Instruction", "32K", 8, "0,2");
        cache_index(&t, 2, 2, "Unified", l2_sysfs, 20, "0,2");
        cache_index(&t, 3, 3, "Unified", "48M", 12, "0-3");
        t.write("sys/devices/system/cpu/online", "0-3\n")
            .write("sys/devices/system/cpu/smt/control", "on\n")
            .write("sys/devices/system/cpu/cpuidle/current_driver", "none\n");
        // Leaf 4: L1d 12w*64*64, L1i 8w*64*64, L2 20w*64*1024, L3 12w*64*65536.
        let dump = format!(
            "CPU 0:\n\
             \x20  0x00000000 0x00: eax=0x0000001b ebx=0x756e6547 ecx=0x6c65746e edx=0x49656e69\n\
             \x20  0x00000001 0x00: eax=0x000606a6 ebx=0x00800800 ecx=0xfeda3203 edx=0x178bfbff\n\
             \x20  0x00000004 0x00: eax=0x1c004121 ebx=0x02c0003f ecx=0x0000003f edx=0x00000000\n\
             \x20  0x00000004 0x01: eax=0x1c004122 ebx=0x01c0003f ecx=0x0000003f edx=0x00000000\n\
             \x20  0x00000004 0x02: eax=0x1c004143 ebx=0x04c0003f ecx=0x000003ff edx=0x00000000\n\
             \x20  0x00000004 0x03: eax=0x1c03c163 ebx=0x02c0003f ecx=0x0000ffff edx=0x00000004\n\
             \x20  0x00000004 0x04: eax=0x00000000 ebx=0x00000000 ecx=0x00000000 edx=0x00000000\n\
             \x20  0x80000000 0x00: eax=0x80000008 ebx=0x00000000 ecx=0x00000000 edx=0x00000000\n\
             {}",
            brand_lines(name)
        );
        t.write("cpuid.txt", dump);
        t
    }

    #[test]
    fn decodes_display_family_and_model() {
        // Xeon Platinum 8370C (Ice Lake SP): family 6, model 0x6a, stepping 6.
        assert_eq!(decode_signature(0x0006_06a6), (6, 106, 6));
        // EPYC 7763 (Milan): family 0xf + 0xa = 25, model 1, stepping 1.
        assert_eq!(decode_signature(0x00a0_0f11), (25, 1, 1));
        // Pentium 4 (family 0xf, no extension) and a 486 (family 4).
        assert_eq!(decode_signature(0x0000_0f29), (15, 2, 9));
        assert_eq!(decode_signature(0x0001_0480), (4, 8, 0));
    }

    #[test]
    fn normalises_cache_sizes_to_kib() {
        assert_eq!(size_kib("48K"), Ok(48));
        assert_eq!(size_kib("1280K\n"), Ok(1280));
        assert_eq!(size_kib("32M"), Ok(32768));
        assert_eq!(size_kib("1G"), Ok(1024 * 1024));
        assert_eq!(size_kib("65536"), Ok(64));
        assert_eq!(size_kib("48 KiB"), Ok(48));
        assert!(size_kib("").is_err());
        assert!(size_kib("K").is_err());
        assert!(size_kib("12Q").is_err());
        assert!(size_kib("100").is_err());
        assert!(size_kib("99999999999999999999999K").is_err());
        assert!(size_kib("18446744073709551615G").is_err());
    }

    #[test]
    fn isa_level_follows_glibc() {
        let set = |s: &'static str| s.split_whitespace().collect::<BTreeSet<_>>();
        let base = "lm cmov cx8 fpu fxsr mmx sse sse2";
        let v2 = format!("{base} cx16 lahf_lm popcnt pni sse4_1 sse4_2 ssse3");
        let v3 = format!("{v2} avx avx2 bmi1 bmi2 f16c fma abm movbe xsave");
        let v4 = format!("{v3} avx512f avx512bw avx512cd avx512dq avx512vl");
        let leak = |s: String| -> &'static str { Box::leak(s.into_boxed_str()) };
        assert_eq!(isa_level(&set(base)).unwrap(), "x86-64-v1");
        assert_eq!(isa_level(&set(leak(v2.clone()))).unwrap(), "x86-64-v2");
        assert_eq!(isa_level(&set(leak(v3.clone()))).unwrap(), "x86-64-v3");
        assert_eq!(isa_level(&set(leak(v4))).unwrap(), "x86-64-v4");
        assert_eq!(isa_level(&set(FLAGS_V4)).unwrap(), "x86-64-v4");
        // v3 without movbe (Haswell-era VMs hide it sometimes) stays v2.
        assert_eq!(
            isa_level(&set(leak(v3.replace(" movbe", "")))).unwrap(),
            "x86-64-v2"
        );
        assert!(
            isa_level(&set("fpu sse sse2"))
                .unwrap_err()
                .to_string()
                .contains("lm")
        );
    }

    #[test]
    fn intel_tree_reads_every_fact() {
        let t = intel_tree("1280K");
        let env = t.capture();
        let get = |k: &str| env.get(k).unwrap_or("<missing>").to_string();
        assert_eq!(get("cpu.vendor"), "GenuineIntel");
        assert_eq!(get("cpu.family"), "6");
        assert_eq!(get("cpu.model_id"), "106");
        assert_eq!(get("cpu.stepping"), "6");
        assert_eq!(
            get("cpu.model"),
            "Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz"
        );
        assert_eq!(
            get("cpu.brand"),
            "Intel(R) Xeon(R) Platinum 8370C CPU @ 2.80GHz"
        );
        assert_eq!(get("cpu.microcode"), "0xd0003a5");
        assert_eq!(get("cpu.isa_level"), "x86-64-v4");
        assert!(get("cpu.flags").starts_with("3dnowprefetch abm adx aes apic avx avx2 avx512bw"));
        assert_eq!(get("cpu.logical_cores"), "4");
        assert_eq!(get("cpu.physical_cores"), "2");
        assert_eq!(get("cpu.sockets"), "1");
        assert_eq!(get("cpu.online"), "0-3");
        assert_eq!(get("cpu.smt"), "on");
        assert_eq!(get("cpu.cache.l1d.size"), "48 KiB");
        assert_eq!(get("cpu.cache.l1d.ways"), "12");
        assert_eq!(get("cpu.cache.l1d.line"), "64");
        assert_eq!(get("cpu.cache.l1d.shared_cpus"), "0,2");
        assert_eq!(get("cpu.cache.l1i.size"), "32 KiB");
        assert_eq!(get("cpu.cache.l2.size"), "1280 KiB");
        assert_eq!(get("cpu.cache.l3.size"), "49152 KiB");
        assert_eq!(get("cpu.cache.l3.shared_cpus"), "0-3");
        assert_eq!(get("cpu.cache.cpuid_check"), "agrees");
        assert_eq!(get("cpu.idle.driver"), "none");
        let freq = &env.facts["cpu.freq.governor"];
        assert_eq!(freq.value, UNKNOWN);
        assert!(
            freq.reason.as_deref().unwrap().contains("cpufreq"),
            "{freq:?}"
        );
        assert_eq!(env.get("cpu.boost"), Some(UNKNOWN));
        for k in KEYS {
            assert!(env.facts.contains_key(*k), "{k} missing");
        }
    }

    #[test]
    fn cpuid_check_reports_a_differing_level() {
        let t = intel_tree("2048K");
        // sysfs says 2048K, leaf 4 says 20 ways * 64 B * 1024 sets = 1280 KiB.
        assert_eq!(
            t.capture().get("cpu.cache.cpuid_check"),
            Some("differs: l2 sysfs 2048 KiB vs cpuid 1280 KiB")
        );
    }

    #[test]
    fn cpuid_check_compares_ways_and_line_size_too() {
        let t = intel_tree("1280K");
        // Same size as leaf 4 says, but sysfs claims 16 ways.
        let idx = "sys/devices/system/cpu/cpu0/cache/index2";
        t.write(&format!("{idx}/ways_of_associativity"), "16\n");
        assert_eq!(
            t.capture().get("cpu.cache.cpuid_check"),
            Some("differs: l2 ways sysfs 16 vs cpuid 20")
        );
    }

    #[test]
    fn amd_tree_without_l3_or_topology() {
        let t = Tree::new("amd");
        // An EPYC 7763 guest whose hypervisor hides "physical id"/"core id"
        // and the L3, with cpufreq and boost present.
        let block = |n: usize| {
            format!(
                "processor\t: {n}\nvendor_id\t: AuthenticAMD\ncpu family\t: 25\nmodel\t\t: 1\n\
                 model name\t: AMD EPYC 7763 64-Core Processor\nstepping\t: 1\nmicrocode\t: 0xa001144\n\
                 flags\t\t: fpu cx8 cmov mmx fxsr sse sse2 lm pni ssse3 cx16 sse4_1 sse4_2 popcnt lahf_lm \
                 avx avx2 bmi1 bmi2 f16c fma abm movbe xsave\n\n"
            )
        };
        t.write("proc/cpuinfo", block(0) + &block(1));
        cache_index(&t, 0, 1, "Data", "32K", 8, "0");
        cache_index(&t, 1, 1, "Instruction", "32K", 8, "0");
        cache_index(&t, 2, 2, "Unified", "512K", 8, "0");
        let f = "sys/devices/system/cpu/cpu0/cpufreq";
        t.write(&format!("{f}/scaling_driver"), "acpi-cpufreq\n")
            .write(&format!("{f}/scaling_governor"), "performance\n")
            .write(&format!("{f}/scaling_min_freq"), "1500000\n")
            .write(&format!("{f}/scaling_max_freq"), "2450000\n")
            .write("sys/devices/system/cpu/cpufreq/boost", "1\n");
        let dump = "   0x00000000 0x00: eax=0x00000010 ebx=0x68747541 ecx=0x444d4163 edx=0x69746e65\n\
                    \x20  0x00000001 0x00: eax=0x00a00f11 ebx=0x00020800 ecx=0xfef83203 edx=0x178bfbff\n\
                    \x20  0x8000001d 0x00: eax=0x00004121 ebx=0x01c0003f ecx=0x0000003f edx=0x00000000\n\
                    \x20  0x8000001d 0x01: eax=0x00004122 ebx=0x01c0003f ecx=0x0000003f edx=0x00000000\n\
                    \x20  0x8000001d 0x02: eax=0x00004143 ebx=0x01c0003f ecx=0x000003ff edx=0x00000002\n\
                    \x20  0x8000001d 0x03: eax=0x00000000 ebx=0x00000000 ecx=0x00000000 edx=0x00000000\n";
        t.write("cpuid.txt", dump);
        let env = t.capture();
        assert_eq!(env.get("cpu.vendor"), Some("AuthenticAMD"));
        assert_eq!(env.get("cpu.family"), Some("25"));
        assert_eq!(env.get("cpu.model_id"), Some("1"));
        assert_eq!(env.get("cpu.stepping"), Some("1"));
        assert_eq!(env.get("cpu.isa_level"), Some("x86-64-v3"));
        assert_eq!(env.get("cpu.logical_cores"), Some("2"));
        assert_eq!(env.get("cpu.physical_cores"), Some(UNKNOWN));
        assert!(
            env.facts["cpu.sockets"]
                .reason
                .as_deref()
                .unwrap()
                .contains("physical id")
        );
        assert_eq!(env.get("cpu.cache.l2.size"), Some("512 KiB"));
        let l3 = &env.facts["cpu.cache.l3.size"];
        assert_eq!(
            (l3.value.as_str(), l3.reason.as_deref()),
            (UNKNOWN, Some("no L3 cache reported"))
        );
        assert_eq!(env.get("cpu.cache.cpuid_check"), Some("agrees"));
        // Brand leaves are not in the dump: unknown, with the reason.
        assert!(
            env.facts["cpu.brand"]
                .reason
                .as_deref()
                .unwrap()
                .contains("0x80000002")
        );
        assert_eq!(env.get("cpu.freq.driver"), Some("acpi-cpufreq"));
        assert_eq!(env.get("cpu.freq.governor"), Some("performance"));
        assert_eq!(env.get("cpu.freq.min_khz"), Some("1500000"));
        assert_eq!(env.get("cpu.freq.max_khz"), Some("2450000"));
        assert_eq!(env.get("cpu.boost"), Some("on"));
    }

    #[test]
    fn cpuinfo_is_the_fallback_without_a_dump() {
        let t = Tree::new("nodump");
        t.write(
            "proc/cpuinfo",
            cpuinfo_block(0, 0, "Some CPU", 6, 85, 7, "fpu lm"),
        );
        t.write("sys/devices/system/cpu/intel_pstate/no_turbo", "1\n");
        let env = t.capture();
        assert_eq!(env.get("cpu.vendor"), Some("GenuineIntel"));
        assert_eq!(env.get("cpu.model_id"), Some("85"));
        assert_eq!(env.get("cpu.stepping"), Some("7"));
        assert_eq!(env.get("cpu.boost"), Some("off"));
        assert!(env.facts["cpu.cache.cpuid_check"].reason.is_some());
        assert!(
            env.facts["cpu.isa_level"]
                .reason
                .as_deref()
                .unwrap()
                .contains("cmov")
        );
    }

    #[test]
    fn arm_cpuinfo_has_features_but_no_isa_level() {
        let t = Tree::new("arm");
        t.write(
            "proc/cpuinfo",
            "processor\t: 0\nBogoMIPS\t: 50.00\nFeatures\t: fp asimd evtstrm aes crc32 atomics\n\
             CPU implementer\t: 0x41\nCPU architecture: 8\nCPU part\t: 0xd0c\n\n",
        );
        let env = t.capture();
        assert_eq!(
            env.get("cpu.flags"),
            Some("aes asimd atomics crc32 evtstrm fp")
        );
        assert!(
            env.facts["cpu.isa_level"]
                .reason
                .as_deref()
                .unwrap()
                .starts_with("not x86")
        );
        assert_eq!(env.get("cpu.logical_cores"), Some("1"));
    }

    fn assert_all_keys(env: &Environment) {
        for k in KEYS {
            let f = env.facts.get(*k).unwrap_or_else(|| panic!("{k} missing"));
            assert!(!f.value.is_empty(), "{k} empty");
            if f.value == UNKNOWN {
                assert!(
                    f.reason.as_deref().is_some_and(|r| !r.is_empty()),
                    "{k} unknown without reason"
                );
            }
        }
    }

    #[test]
    fn garbage_everywhere_never_panics() {
        let garbage: &[&[u8]] = &[
            b"",
            b"\n\n\n",
            b"\xff\xfe\x00garbage\x80\x81:\xff\n:\n::::\n",
            b"processor : x\nphysical id\ncore id : \nflags :\nmodel : 99999999999999999999999\n",
            b"99999999999999999999999999999999K\n",
            b"-1\n",
            b"4294967296M\n",
            b"18446744073709551615\n",
            b"level: 1\ntype: Data",
        ];
        for (i, g) in garbage.iter().enumerate() {
            let t = Tree::new("garbage");
            for f in [
                "proc/cpuinfo",
                "sys/devices/system/cpu/online",
                "sys/devices/system/cpu/smt/control",
                "sys/devices/system/cpu/cpuidle/current_driver",
                "sys/devices/system/cpu/intel_pstate/no_turbo",
                "sys/devices/system/cpu/cpufreq/boost",
                "sys/devices/system/cpu/cpu0/cpufreq/scaling_driver",
                "sys/devices/system/cpu/cpu0/cpufreq/scaling_governor",
                "sys/devices/system/cpu/cpu0/cpufreq/scaling_min_freq",
                "sys/devices/system/cpu/cpu0/cpufreq/scaling_max_freq",
                "cpuid.txt",
            ] {
                t.write(f, g);
            }
            for idx in 0..3 {
                for f in [
                    "level",
                    "type",
                    "size",
                    "ways_of_associativity",
                    "coherency_line_size",
                    "shared_cpu_list",
                ] {
                    t.write(
                        &format!("sys/devices/system/cpu/cpu0/cache/index{idx}/{f}"),
                        g,
                    );
                }
            }
            let env = t.capture();
            assert_all_keys(&env);
            assert_eq!(env.get("cpu.cache.l3.size"), Some(UNKNOWN), "case {i}");
        }
    }

    #[test]
    fn absurd_cpuid_values_never_panic() {
        let t = Tree::new("absurd");
        t.write("proc/cpuinfo", "");
        cache_index(&t, 0, 1, "Data", "48K", 12, "0");
        let mut dump = String::new();
        for leaf in [
            0u32,
            1,
            4,
            0x8000_0002,
            0x8000_0003,
            0x8000_0004,
            0x8000_001D,
        ] {
            for sub in 0..20 {
                dump += &format!(
                    "0x{leaf:08x} 0x{sub:02x}: eax=0xffffffff ebx=0xffffffff ecx=0xffffffff edx=0xffffffff\n"
                );
            }
        }
        t.write("cpuid.txt", &dump);
        let env = t.capture();
        assert_all_keys(&env);
        // An all-ones vendor is not text; cpuinfo is empty: unknown with both reasons.
        assert_eq!(env.get("cpu.vendor"), Some(UNKNOWN));
        assert_eq!(env.get("cpu.family"), Some("270"));
        // A fake Intel vendor and an L1d with every size field at its
        // maximum (2^64 bytes): a huge but finite size, no overflow.
        let intel = dump
            .replacen(
                "0x00000000 0x00: eax=0xffffffff ebx=0xffffffff ecx=0xffffffff edx=0xffffffff",
                "0x00000000 0x00: eax=0x00000004 ebx=0x756e6547 ecx=0x6c65746e edx=0x49656e69",
                1,
            )
            .replacen(
                "0x00000004 0x00: eax=0xffffffff",
                "0x00000004 0x00: eax=0x00000021",
                1,
            );
        t.write("cpuid.txt", intel);
        let env = t.capture();
        assert_all_keys(&env);
        let check = env.get("cpu.cache.cpuid_check").unwrap();
        assert!(
            check.starts_with(&format!(
                "differs: l1d sysfs 48 KiB vs cpuid {} KiB",
                1u64 << 54
            )),
            "{check}"
        );
        // All-ones fields also mean 1024 ways and 4096-byte lines: said too.
        assert!(check.contains("l1d ways sysfs 12 vs cpuid 1024"), "{check}");
        assert!(
            check.contains("l1d line sysfs 64 B vs cpuid 4096 B"),
            "{check}"
        );
    }

    #[test]
    fn empty_tree_sets_every_key_with_a_reason() {
        let t = Tree::new("empty");
        let env = t.capture();
        assert_all_keys(&env);
        for k in KEYS {
            assert_eq!(env.get(k), Some(UNKNOWN), "{k}");
        }
    }

    #[test]
    fn live_capture_reads_this_machine() {
        let mut env = Environment::default();
        let start = std::time::Instant::now();
        capture(&Source::live(), &mut env);
        let took = start.elapsed();
        assert_all_keys(&env);
        for k in ["cpu.model", "cpu.cache.l1d.size", "cpu.logical_cores"] {
            let f = &env.facts[k];
            assert_ne!(f.value, UNKNOWN, "{k}: {:?}", f.reason);
        }
        for (k, f) in &env.facts {
            eprintln!("{k} = {} {}", f.value, f.reason.as_deref().unwrap_or(""));
        }
        eprintln!("cpu capture took {took:?}");
    }
}
