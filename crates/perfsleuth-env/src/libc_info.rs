//! libc facts: version and path of the C library, the glibc-hwcaps level the
//! loader selects (optimised library builds), `GLIBC_TUNABLES`, and the
//! string-function thresholds glibc derived for this CPU, which decide when
//! `memcpy` switches to `rep movsb` or non-temporal stores.
//!
//! The thresholds come only from `ld.so --list-diagnostics` (glibc 2.35+).
//! Running it costs a process spawn, so its output is cached on disk per libc
//! (path, size, mtime), boot and `GLIBC_TUNABLES`; later captures read the
//! cache file. `PERFSLEUTH_NO_LDSO=1` skips it altogether (tests, benchmarks).

use crate::Source;
use crate::error::{Record, Unknown};
use crate::kernel::clean;
use perfsleuth_model::input::Accept;
use perfsleuth_model::{Environment, ImpactClass};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// The fixed keys this reader always sets.
#[cfg(test)]
pub(crate) const KEYS: &[&str] = &[
    "libc.version",
    "libc.path",
    "libc.hwcaps",
    "libc.tunables",
    "libc.ld_so.x86_data_cache_size",
    "libc.ld_so.x86_shared_cache_size",
    "libc.ld_so.x86_non_temporal_threshold",
    "libc.ld_so.x86_rep_movsb_threshold",
    "libc.ld_so.x86_rep_stosb_threshold",
    "libc.ld_so.isa_level",
];

/// `libc.ld_so.<key>` and the `--list-diagnostics` line it comes from.
const LD_SO_SIZES: &[(&str, &str)] = &[
    ("x86_data_cache_size", "x86.cpu_features.data_cache_size"),
    (
        "x86_shared_cache_size",
        "x86.cpu_features.shared_cache_size",
    ),
    (
        "x86_non_temporal_threshold",
        "x86.cpu_features.non_temporal_threshold",
    ),
    (
        "x86_rep_movsb_threshold",
        "x86.cpu_features.rep_movsb_threshold",
    ),
    (
        "x86_rep_stosb_threshold",
        "x86.cpu_features.rep_stosb_threshold",
    ),
];

/// Where a tree's `libc.so.6` may be (Debian/Ubuntu multiarch, Fedora/RHEL
/// lib64, Arch lib), in the loader's usual search order.
const TREE_LIBC: &[&str] = &[
    "/lib/x86_64-linux-gnu/libc.so.6",
    "/lib64/libc.so.6",
    "/usr/lib/x86_64-linux-gnu/libc.so.6",
    "/usr/lib64/libc.so.6",
    "/lib/aarch64-linux-gnu/libc.so.6",
    "/usr/lib/aarch64-linux-gnu/libc.so.6",
    "/lib/libc.so.6",
    "/usr/lib/libc.so.6",
];

/// The largest libc file searched for its version string (real ones are 2 MB).
const MAX_LIBC_BYTES: u64 = 64 << 20;

/// First line of a cache file; bump the number when the kept lines change.
const CACHE_HEADER: &str = "# perfsleuth ld.so --list-diagnostics cache v1";

/// How long `ld.so --list-diagnostics` may take (it normally takes ~2 ms).
const LD_SO_TIMEOUT: Duration = Duration::from_secs(5);

/// Captures the libc facts.
pub fn capture(src: &Source, env: &mut Environment) {
    use ImpactClass::*;
    let (version, path) = if src.is_live() {
        live_libc()
    } else {
        tree_libc(src)
    };
    let level = env
        .facts
        .get("cpu.isa_level")
        .map(|f| (f.value.clone(), f.reason.clone()));
    env.record("libc.hwcaps", hwcaps(level, &version), Identity);
    env.record("libc.version", version, Identity);
    env.record("libc.path", path, Context);
    let tunables = src
        .env_var("GLIBC_TUNABLES")
        .map(|v| clean(&v))
        .unwrap_or_else(|| "unset".to_string());
    env.set("libc.tunables", tunables, Performance);

    let diagnostics = ld_so_diagnostics_cached(src);
    for (key, line) in LD_SO_SIZES {
        let value = diagnostics
            .as_ref()
            .map_err(|e| e.clone())
            .and_then(|text| {
                diagnostic(text, line)
                    .ok_or_else(|| format!("no {line} in ld.so --list-diagnostics (not x86?)"))
                    .and_then(|v| {
                        parse_number(&v).map(size).ok_or_else(|| {
                            format!("{line}: not a number: {:?}", crate::kernel::short(&v))
                        })
                    })
                    .map_err(Unknown::from)
            });
        env.record(format!("libc.ld_so.{key}"), value, Performance);
    }
    env.record(
        "libc.ld_so.isa_level",
        diagnostics.and_then(|t| isa_level(&t)),
        Performance,
    );
}

/// Version (`glibc 2.36`) and path of the libc this process runs with.
#[cfg(all(target_os = "linux", target_env = "gnu"))]
pub(crate) fn live_libc() -> (Result<String, Unknown>, Result<String, Unknown>) {
    // SAFETY: gnu_get_libc_version returns a pointer to a static NUL-terminated string.
    let version = unsafe { std::ffi::CStr::from_ptr(libc::gnu_get_libc_version()) };
    let version = format!("glibc {}", clean(&version.to_string_lossy()));
    (Ok(version), loaded_libc_path())
}

#[cfg(not(all(target_os = "linux", target_env = "gnu")))]
pub(crate) fn live_libc() -> (Result<String, Unknown>, Result<String, Unknown>) {
    let reason = "perfsleuth was not built against glibc".to_string();
    (Err(reason.clone()), Err(reason))
}

/// The path the loader mapped `libc.so.6` from, found among the loaded
/// objects (no file is read; taking a function's address and asking
/// `dladdr` could name a PLT stub of the executable instead).
#[cfg(all(target_os = "linux", target_env = "gnu"))]
fn loaded_libc_path() -> Result<String, Unknown> {
    unsafe extern "C" fn visit(
        info: *mut libc::dl_phdr_info,
        _size: libc::size_t,
        data: *mut libc::c_void,
    ) -> libc::c_int {
        // SAFETY: the loader passes a valid info and our `data` pointer.
        let (info, found) = unsafe { (&*info, &mut *data.cast::<Option<String>>()) };
        if info.dlpi_name.is_null() {
            return 0;
        }
        // SAFETY: dlpi_name is a NUL-terminated string owned by the loader.
        let name = unsafe { std::ffi::CStr::from_ptr(info.dlpi_name) }
            .to_string_lossy()
            .into_owned();
        let file = name.rsplit('/').next().unwrap_or("");
        if file.starts_with("libc.so") || (file.starts_with("libc-") && file.ends_with(".so")) {
            *found = Some(name);
            return 1;
        }
        0
    }
    let mut found: Option<String> = None;
    // SAFETY: the callback only uses `found` through the pointer we pass, during the call.
    unsafe { libc::dl_iterate_phdr(Some(visit), (&mut found as *mut Option<String>).cast()) };
    found.ok_or_else(|| "no libc.so among the loaded objects (static binary?)".into())
}

/// Version and path of a tree's `libc.so.6`, the version read from the
/// banner string every glibc carries.
fn tree_libc(src: &Source) -> (Result<String, Unknown>, Result<String, Unknown>) {
    let root =
        std::fs::canonicalize(src.root_dir()).unwrap_or_else(|_| src.root_dir().to_path_buf());
    let mut notes = Vec::new();
    for candidate in TREE_LIBC {
        let full = src.path(candidate);
        let Ok(real) = std::fs::canonicalize(&full) else {
            continue;
        };
        // An absolute symlink in a copied tree points at the host's file.
        if !real.starts_with(&root) {
            notes.push(format!("{candidate} leads out of the tree"));
            continue;
        }
        // A FIFO planted as libc.so.6 must not block `env show`.
        let bytes = perfsleuth_model::input::open(&real, Accept::Regular)
            .map_err(|e| e.to_string())
            .and_then(|(f, _)| {
                let mut buf = Vec::new();
                f.take(MAX_LIBC_BYTES)
                    .read_to_end(&mut buf)
                    .map(|_| buf)
                    .map_err(|e| e.to_string())
            });
        let version = match bytes {
            Ok(b) => glibc_version_in(&b)
                .map(|(maj, min)| format!("glibc {maj}.{min}"))
                .ok_or_else(|| format!("no glibc version string in {candidate}").into()),
            Err(e) => Err(format!("cannot read {candidate}: {e}").into()),
        };
        return (version, Ok(candidate.to_string()));
    }
    let mut reason = "no libc.so.6 in the tree (musl, or not copied)".to_string();
    if !notes.is_empty() {
        reason = format!("{reason}; {}", notes.join("; "));
    }
    let reason = Unknown::from(reason);
    (Err(reason.clone()), Err(reason))
}

/// The glibc version inside a libc binary: the banner "GNU C Library (...)
/// stable release version 2.36.", else "GLIBC 2.36" (distribution package
/// versions), else the newest `GLIBC_2.N` symbol version.
fn glibc_version_in(bytes: &[u8]) -> Option<(u32, u32)> {
    for start in find_all(bytes, b"GNU C Library") {
        let window = &bytes[start..(start + 200).min(bytes.len())];
        let window = &window[..window.iter().position(|b| *b == 0).unwrap_or(window.len())];
        if let Some(at) = find_all(window, b"release version ").next() {
            if let Some(v) = major_minor(&window[at + 16..]) {
                return Some(v);
            }
        }
    }
    if let Some(v) = find_all(bytes, b"GLIBC 2.").find_map(|at| major_minor(&bytes[at + 6..])) {
        return Some(v);
    }
    find_all(bytes, b"GLIBC_2.")
        .filter_map(|at| major_minor(&bytes[at + 6..]))
        .max()
}

/// Offsets of every occurrence of `needle`.
fn find_all<'a>(hay: &'a [u8], needle: &'a [u8]) -> impl Iterator<Item = usize> + 'a {
    hay.windows(needle.len())
        .enumerate()
        .filter(move |(_, w)| *w == needle)
        .map(|(i, _)| i)
}

/// `2.36` at the start of `bytes` (more digits and dots may follow).
fn major_minor(bytes: &[u8]) -> Option<(u32, u32)> {
    let text: String = bytes
        .iter()
        .take(12)
        .take_while(|b| b.is_ascii_digit() || **b == b'.')
        .map(|b| *b as char)
        .collect();
    let mut parts = text.split('.');
    let major = parts.next()?.parse().ok()?;
    let minor = parts.next()?.parse().ok()?;
    Some((major, minor))
}

/// (major, minor) of a `glibc 2.36` value.
pub(crate) fn parse_glibc(value: &str) -> Option<(u32, u32)> {
    major_minor(value.strip_prefix("glibc ")?.as_bytes())
}

/// The glibc-hwcaps subdirectory the loader selects: the highest x86-64
/// level the CPU supports (glibc 2.33 introduced them). The level is the
/// `cpu.isa_level` fact, captured (from the same flags) before libc.
fn hwcaps(
    level: Option<(String, Option<String>)>,
    version: &Result<String, Unknown>,
) -> Result<String, Unknown> {
    let v = version
        .as_ref()
        .map_err(|e| format!("libc version unknown: {e}"))?;
    let (major, minor) = parse_glibc(v).ok_or_else(|| format!("not glibc: {v}"))?;
    if (major, minor) < (2, 33) {
        return Ok("none".into());
    }
    match level {
        Some((level, _)) if level.starts_with("x86-64-v") && level != "x86-64-v1" => Ok(level),
        Some((level, _)) if level == "x86-64-v1" => Ok("none".into()),
        Some((_, reason)) => Err(format!(
            "the CPU's ISA level is unknown: {}",
            reason.unwrap_or_else(|| "no reason recorded".into())
        )
        .into()),
        None => Err("the CPU's ISA level was not captured".into()),
    }
}

/// One `key=value` line of `ld.so --list-diagnostics` output.
pub(crate) fn diagnostic(text: &str, key: &str) -> Option<String> {
    text.lines().find_map(|l| {
        let (k, v) = l.split_once('=')?;
        (k == key).then(|| v.trim().trim_matches('"').to_string())
    })
}

/// `0x8000` or `32768`.
pub(crate) fn parse_number(v: &str) -> Option<u64> {
    match v.strip_prefix("0x") {
        Some(hex) => u64::from_str_radix(hex, 16).ok(),
        None => v.parse().ok(),
    }
}

/// Sizes and thresholds in the contract's size format (`32 KiB`, also for
/// megabytes: `245760 KiB`), so they compare directly with `cpu.cache.*`;
/// a value that is not a whole number of KiB stays exact (`2112 bytes`).
pub(crate) fn size(n: u64) -> String {
    if n % 1024 == 0 {
        format!("{} KiB", n / 1024)
    } else {
        format!("{n} bytes")
    }
}

/// The ISA level glibc selected: `isa_1` is a bit set of the supported
/// levels (1 baseline, 2 v2, 4 v3, 8 v4); older output only has the active
/// hwcaps subdirectories (bit i = i-th name of `dl_hwcaps_subdirs`).
fn isa_level(text: &str) -> Result<String, Unknown> {
    if let Some(bits) = diagnostic(text, "x86.cpu_features.isa_1").and_then(|v| parse_number(&v)) {
        return match (1..=4u32).rev().find(|i| bits & (1 << (i - 1)) != 0) {
            Some(level) => Ok(format!("x86-64-v{level}")),
            None => Err(format!("x86.cpu_features.isa_1 is {bits:#x}: no level").into()),
        };
    }
    let subdirs = diagnostic(text, "dl_hwcaps_subdirs")
        .ok_or("no isa_1 or dl_hwcaps_subdirs in ld.so --list-diagnostics")?;
    let active = diagnostic(text, "dl_hwcaps_subdirs_active")
        .and_then(|v| parse_number(&v))
        .ok_or("no dl_hwcaps_subdirs_active in ld.so --list-diagnostics")?;
    Ok(subdirs
        .split(':')
        .enumerate()
        .find(|(i, _)| *i < 64 && active & (1 << i) != 0)
        .map(|(_, name)| clean(name))
        .unwrap_or_else(|| "none".to_string()))
}

/// The kept lines of `ld.so --list-diagnostics` of the live machine, from
/// the on-disk cache or by running the loader once; errors say why not
/// (a tree, `PERFSLEUTH_NO_LDSO`, old glibc, no loader).
pub fn ld_so_diagnostics_cached(src: &Source) -> Result<String, Unknown> {
    if !src.is_live() {
        return Err("ld.so runs only on the live machine, not for a tree".into());
    }
    if std::env::var_os("PERFSLEUTH_NO_LDSO").is_some_and(|v| !v.is_empty() && v != "0") {
        return Err("skipped: PERFSLEUTH_NO_LDSO is set".into());
    }
    let (version, path) = live_libc();
    let version = version?;
    let (major, minor) = parse_glibc(&version).ok_or_else(|| format!("not glibc: {version}"))?;
    if (major, minor) < (2, 35) {
        return Err(format!("{version} has no ld.so --list-diagnostics (2.35+)").into());
    }
    let libc = PathBuf::from(path?);
    let boot_id = src
        .read_line("/proc/sys/kernel/random/boot_id")
        .unwrap_or_default();
    let tunables = std::env::var("GLIBC_TUNABLES").ok();
    diagnostics(
        &libc,
        cache_dir().as_deref(),
        &boot_id,
        tunables.as_deref(),
        loader_path,
    )
}

/// The cache directory: `$XDG_CACHE_HOME/perfsleuth`, else `$HOME/.cache/perfsleuth`.
fn cache_dir() -> Option<PathBuf> {
    let xdg = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .filter(|p| p.is_absolute());
    let base = xdg.or_else(|| {
        std::env::var_os("HOME")
            .map(PathBuf::from)
            .filter(|p| p.is_absolute())
            .map(|h| h.join(".cache"))
    })?;
    Some(base.join("perfsleuth"))
}

/// The loader this process was started by (its own `PT_INTERP`), else the
/// architecture's standard one.
pub(crate) fn loader_path() -> Result<PathBuf, Unknown> {
    if let Ok(Some(interp)) = crate::binary::elf_interpreter(Path::new("/proc/self/exe")) {
        return Ok(PathBuf::from(interp));
    }
    let standard = if cfg!(target_arch = "x86_64") {
        "/lib64/ld-linux-x86-64.so.2"
    } else if cfg!(target_arch = "aarch64") {
        "/lib/ld-linux-aarch64.so.1"
    } else {
        return Err("no known ld.so for this architecture".into());
    };
    Ok(PathBuf::from(standard))
}

/// Diagnostics from the cache file for this libc, boot and tunables, or
/// from running the loader (then cached; a cache that cannot be written is
/// skipped silently).
fn diagnostics(
    libc: &Path,
    cache_dir: Option<&Path>,
    boot_id: &str,
    tunables: Option<&str>,
    loader: impl FnOnce() -> Result<PathBuf, Unknown>,
) -> Result<String, Unknown> {
    use sha2::{Digest, Sha256};
    let meta =
        std::fs::metadata(libc).map_err(|e| format!("cannot stat {}: {e}", libc.display()))?;
    let mtime = meta
        .modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos());
    // The boot id is in the key because the values depend on the CPU too:
    // a home directory shared between machines, or a VM moved to another
    // host, must not reuse another CPU's cache sizes.
    let key = format!(
        "{}\0{}\0{mtime}\0{boot_id}\0{tunables:?}",
        libc.display(),
        meta.len()
    );
    let digest = Sha256::digest(key.as_bytes());
    let name = format!(
        "ldso-diagnostics-{}.txt",
        perfsleuth_model::hex::encode(&digest[..12])
    );
    if let Some(dir) = cache_dir {
        if let Ok(text) = std::fs::read_to_string(dir.join(&name)) {
            if text.starts_with(CACHE_HEADER) {
                return Ok(text);
            }
        }
    }
    let text = run_ld_so(&loader()?, tunables)?;
    if let Some(dir) = cache_dir {
        write_cache(dir, &name, &text);
    }
    Ok(text)
}

/// Runs `ld.so --list-diagnostics` and keeps the lines we read. The child
/// gets only `GLIBC_TUNABLES` (it changes the thresholds): the output lists
/// the environment, which must not end up in a cache file.
fn run_ld_so(loader: &Path, tunables: Option<&str>) -> Result<String, Unknown> {
    let text = run_loader(&[], loader, "--list-diagnostics", tunables, LD_SO_TIMEOUT)?;
    let kept: Vec<&str> = text.lines().filter(|l| keep_line(l)).collect();
    if kept.is_empty() {
        return Err(format!(
            "{} --list-diagnostics printed nothing perfsleuth reads",
            loader.display()
        )
        .into());
    }
    Ok(format!("{CACHE_HEADER}\n{}\n", kept.join("\n")))
}

/// Runs `loader ARG` (`--list-diagnostics`, `--list-tunables`), behind
/// `wrapper` when one is given (valgrind, to see what glibc sees under it),
/// with an empty environment but `GLIBC_TUNABLES`; its whole stdout (1 MiB
/// at most), or why not. Killed past `timeout`.
pub(crate) fn run_loader(
    wrapper: &[String],
    loader: &Path,
    arg: &str,
    tunables: Option<&str>,
    timeout: Duration,
) -> Result<String, Unknown> {
    use std::process::{Command, Stdio};
    let mut cmd = match wrapper.split_first() {
        Some((program, rest)) => {
            let mut c = Command::new(program);
            c.args(rest).arg(loader);
            c
        }
        None => Command::new(loader),
    };
    cmd.arg(arg)
        .env_clear()
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null());
    // Only the tunables: the output lists the environment, and what glibc
    // selects must not depend on anything else perfsleuth happens to have.
    if let Some(t) = tunables {
        cmd.env("GLIBC_TUNABLES", t);
    }
    let shown = match wrapper.first() {
        Some(w) => format!("{w} {} {arg}", loader.display()),
        None => format!("{} {arg}", loader.display()),
    };
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot run {shown}: {e}"))?;
    let mut stdout = child.stdout.take().ok_or("no stdout pipe")?;
    // Read on a thread so a hung loader cannot block us past the timeout.
    let reader = std::thread::spawn(move || {
        let mut out = Vec::new();
        let _ = (&mut stdout).take(1 << 20).read_to_end(&mut out);
        out
    });
    let start = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() > timeout => {
                let _ = child.kill();
                let _ = child.wait();
                let _ = reader.join();
                return Err(format!("{shown} did not finish in {} s", timeout.as_secs()).into());
            }
            Ok(None) => std::thread::sleep(Duration::from_micros(500)),
            Err(e) => return Err(format!("waiting for {shown}: {e}").into()),
        }
    };
    let out = reader.join().unwrap_or_default();
    if !status.success() {
        return Err(format!("{shown} failed ({status})").into());
    }
    Ok(String::from_utf8_lossy(&out).into_owned())
}

/// The diagnostics lines worth caching: scalar CPU-feature values, the
/// hwcaps subdirectories and the version; not the per-register dumps, the
/// auxiliary vector or the environment.
fn keep_line(line: &str) -> bool {
    let key = line.split('=').next().unwrap_or("");
    (key.starts_with("x86.cpu_features.") && !key.contains('[') && !key.contains(".preferred."))
        || key.starts_with("dl_hwcaps")
        || key.starts_with("version.")
}

/// Writes a cache file atomically (temporary file, then rename) and removes
/// stale ones; failures are ignored (the next capture just runs ld.so again).
fn write_cache(dir: &Path, name: &str, text: &str) {
    if std::fs::create_dir_all(dir).is_err() {
        return;
    }
    let tmp = dir.join(format!(".{name}.{}.tmp", std::process::id()));
    if std::fs::write(&tmp, text).is_err() || std::fs::rename(&tmp, dir.join(name)).is_err() {
        let _ = std::fs::remove_file(&tmp);
        return;
    }
    if let Ok(entries) = std::fs::read_dir(dir) {
        for e in entries.flatten() {
            let n = e.file_name().to_string_lossy().into_owned();
            if n.starts_with("ldso-diagnostics-") && n.ends_with(".txt") && n != name {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::testutil::*;

    /// Lines of `ld.so --list-diagnostics` of glibc 2.36 on an AMD EPYC (Zen 4) KVM guest.
    const DIAG_2_36: &str = "dl_hwcap=0x2\ndl_hwcaps_subdirs=\"x86-64-v4:x86-64-v3:x86-64-v2\"\ndl_hwcaps_subdirs_active=0x7\n\
        env[0x0]=\"PATH=/usr/bin\"\nversion.release=\"stable\"\nversion.version=\"2.36\"\n\
        x86.cpu_features.features[0x0].cpuid[0x0]=0xa10f11\nx86.cpu_features.preferred.I586=0x1\n\
        x86.cpu_features.isa_1=0xf\nx86.cpu_features.xsave_state_size=0x9c0\n\
        x86.cpu_features.data_cache_size=0x8000\nx86.cpu_features.shared_cache_size=0x14000000\n\
        x86.cpu_features.non_temporal_threshold=0xf000000\nx86.cpu_features.rep_movsb_threshold=0x840\n\
        x86.cpu_features.rep_movsb_stop_threshold=0x100000\nx86.cpu_features.rep_stosb_threshold=0x800\n";

    const CPUINFO_V3: &str = "processor\t: 0\nvendor_id\t: GenuineIntel\ncpu family\t: 6\nmodel\t\t: 158\nmodel name\t: Intel(R) Core(TM) i7-8700 CPU @ 3.20GHz\n\
        flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush dts acpi mmx fxsr sse sse2 ss ht tm pbe syscall nx pdpe1gb rdtscp lm constant_tsc \
        pni pclmulqdq dtes64 monitor ds_cpl vmx est tm2 ssse3 sdbg fma cx16 xtpr pdcm pcid sse4_1 sse4_2 x2apic movbe popcnt tsc_deadline_timer aes xsave avx f16c rdrand lahf_lm abm \
        3dnowprefetch cpuid_fault invpcid_single pti ssbd ibrs ibpb stibp fsgsbase tsc_adjust bmi1 avx2 smep bmi2 erms invpcid mpx rdseed adx smap clflushopt xsaveopt xsavec xgetbv1 xsaves\n\
        bugs\t\t: cpu_meltdown spectre_v1\n\nprocessor\t: 1\n";

    fn with_libc(t: &TempTree, path: &str, banner: &[u8]) {
        let mut bytes = random_bytes(1, 5000);
        bytes.retain(|b| *b != b'G');
        bytes.extend_from_slice(b"GLIBC_2.2.5\0GLIBC_2.34\0GLIBC_PRIVATE\0");
        bytes.extend_from_slice(banner);
        bytes.extend(random_bytes(2, 3000));
        t.write(path, bytes);
    }

    #[test]
    fn reads_a_debian_tree() {
        let t = TempTree::new("libc");
        with_libc(&t, "/lib/x86_64-linux-gnu/libc.so.6", b"\0GNU C Library (Debian GLIBC 2.36-9+deb12u4) stable release version 2.36.\nCopyright");
        t.write("/proc/cpuinfo", CPUINFO_V3).write(
            "/proc/self/environ",
            b"GLIBC_TUNABLES=glibc.malloc.hugetlb=1\0".as_slice(),
        );
        let mut env = Environment::default();
        crate::cpu::capture(&t.source(), &mut env);
        capture(&t.source(), &mut env);
        assert_keys(&env, KEYS);
        assert_eq!(env.get("libc.version"), Some("glibc 2.36"));
        assert_eq!(
            env.get("libc.path"),
            Some("/lib/x86_64-linux-gnu/libc.so.6")
        );
        assert_eq!(env.get("libc.hwcaps"), Some("x86-64-v3"));
        assert_eq!(env.get("libc.tunables"), Some("glibc.malloc.hugetlb=1"));
        assert_eq!(env.get("libc.ld_so.x86_data_cache_size"), Some("unknown"));
        assert!(
            env.facts["libc.ld_so.isa_level"]
                .reason
                .as_deref()
                .unwrap()
                .contains("tree")
        );
    }

    #[test]
    fn old_glibc_and_fallback_version_strings() {
        let t = TempTree::new("libc-old");
        with_libc(
            &t,
            "/lib64/libc.so.6",
            b"GNU C Library (GNU libc) stable release version 2.17, by Roland McGrath et al.\0",
        );
        t.write("/proc/cpuinfo", CPUINFO_V3);
        let mut env = Environment::default();
        crate::cpu::capture(&t.source(), &mut env);
        capture(&t.source(), &mut env);
        assert_eq!(env.get("libc.version"), Some("glibc 2.17"));
        assert_eq!(env.get("libc.path"), Some("/lib64/libc.so.6"));
        assert_eq!(env.get("libc.hwcaps"), Some("none"));
        assert_eq!(env.get("libc.tunables"), Some("unset"));

        assert_eq!(
            glibc_version_in(b"xx GLIBC 2.31-0ubuntu9.9) stable"),
            Some((2, 31))
        );
        assert_eq!(
            glibc_version_in(b"GLIBC_2.2.5\0GLIBC_2.34\0GLIBC_2.4\0"),
            Some((2, 34))
        );
        assert_eq!(glibc_version_in(b"nothing here"), None);
        assert_eq!(glibc_version_in(b"GNU C Library"), None);
    }

    #[test]
    fn no_libc_and_no_cpuinfo() {
        let t = TempTree::new("libc-none");
        t.write("/lib/ld-musl-x86_64.so.1", "x");
        let mut env = Environment::default();
        crate::cpu::capture(&t.source(), &mut env);
        capture(&t.source(), &mut env);
        assert_keys(&env, KEYS);
        assert_eq!(env.get("libc.version"), Some("unknown"));
        assert!(
            env.facts["libc.version"]
                .reason
                .as_deref()
                .unwrap()
                .contains("musl")
        );
        assert_eq!(env.get("libc.hwcaps"), Some("unknown"));
        with_libc(
            &t,
            "/lib/x86_64-linux-gnu/libc.so.6",
            b"GNU C Library (Debian GLIBC 2.36-9) stable release version 2.36.",
        );
        t.write(
            "/proc/cpuinfo",
            "Processor\t: AArch64 Processor rev 1\nFeatures\t: fp asimd evtstrm\n",
        );
        let mut env = Environment::default();
        crate::cpu::capture(&t.source(), &mut env);
        capture(&t.source(), &mut env);
        assert!(
            env.facts["libc.hwcaps"]
                .reason
                .as_deref()
                .unwrap()
                .contains("ISA level")
        );
    }

    #[test]
    fn parses_diagnostics() {
        let get = |k: &str| {
            diagnostic(DIAG_2_36, k)
                .and_then(|v| parse_number(&v))
                .map(size)
        };
        assert_eq!(
            get("x86.cpu_features.data_cache_size").as_deref(),
            Some("32 KiB")
        );
        assert_eq!(
            get("x86.cpu_features.shared_cache_size").as_deref(),
            Some("327680 KiB")
        );
        assert_eq!(
            get("x86.cpu_features.non_temporal_threshold").as_deref(),
            Some("245760 KiB")
        );
        assert_eq!(
            get("x86.cpu_features.rep_movsb_threshold").as_deref(),
            Some("2112 bytes")
        );
        assert_eq!(
            get("x86.cpu_features.rep_stosb_threshold").as_deref(),
            Some("2 KiB")
        );
        assert_eq!(isa_level(DIAG_2_36).unwrap(), "x86-64-v4");
        assert_eq!(isa_level("dl_hwcaps_subdirs=\"x86-64-v4:x86-64-v3:x86-64-v2\"\ndl_hwcaps_subdirs_active=0x6\n").unwrap(), "x86-64-v3");
        assert_eq!(isa_level("dl_hwcaps_subdirs=\"x86-64-v4:x86-64-v3:x86-64-v2\"\ndl_hwcaps_subdirs_active=0x0\n").unwrap(), "none");
        assert!(isa_level("").is_err());
        assert!(isa_level("x86.cpu_features.isa_1=0x0\n").is_err());
        let kept: Vec<&str> = DIAG_2_36.lines().filter(|l| keep_line(l)).collect();
        assert!(
            kept.iter()
                .all(|l| !l.starts_with("env") && !l.contains('[') && !l.contains("preferred"))
        );
        assert!(
            kept.iter()
                .any(|l| l.starts_with("x86.cpu_features.data_cache_size"))
        );
        assert_eq!(parse_number("0xffffffffffffffffff"), None);
    }

    #[test]
    fn a_fifo_for_libc_is_a_reason_not_a_hang() {
        // Found by tests/fuzz_env.rs: the tree's libc.so.6 was opened
        // without a look at what it is, and opening a FIFO blocks until a
        // writer comes: `env show --root` hung.
        let t = TempTree::new("libc-fifo");
        let fifo = t.path("lib/x86_64-linux-gnu/libc.so.6");
        std::fs::create_dir_all(fifo.parent().unwrap()).unwrap();
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let src = t.source();
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let mut env = Environment::default();
            capture(&src, &mut env);
            let _ = tx.send(env);
        });
        let env = rx
            .recv_timeout(std::time::Duration::from_secs(10))
            .expect("capture returns");
        assert!(
            env.facts["libc.version"]
                .reason
                .as_deref()
                .unwrap()
                .contains("not a regular file")
        );
    }

    #[test]
    fn garbage_everywhere_does_not_panic() {
        for seed in 0..8u64 {
            let t = TempTree::new("libc-garbage");
            fill(&t, |i| {
                random_bytes(
                    seed * 17 + i as u64,
                    (seed as usize * 1009 + i * 211) % 6000,
                )
            });
            let mut env = Environment::default();
            capture(&t.source(), &mut env);
            assert_keys(&env, KEYS);
        }
        let mut g = random_bytes(5, 4000);
        g.extend_from_slice(b"GNU C Library release version ");
        let _ = glibc_version_in(&g);
        let _ = glibc_version_in(b"GLIBC_2.");
        assert_eq!(major_minor(b"99999999999.1"), None);
        assert_eq!(parse_glibc("glibc"), None);
    }

    #[test]
    fn live_libc_facts() {
        let mut env = Environment::default();
        capture(&Source::live(), &mut env);
        assert_keys(&env, KEYS);
        if cfg!(all(target_os = "linux", target_env = "gnu")) {
            assert!(env.get("libc.version").unwrap().starts_with("glibc 2."));
            assert!(
                env.get("libc.path").unwrap().contains("libc.so"),
                "{:?}",
                env.facts["libc.path"]
            );
        }
    }

    /// The first call runs ld.so and writes the cache; the second must come
    /// from the cache (its loader closure fails if called).
    #[test]
    fn ld_so_runs_once_then_the_cache_answers() {
        let (version, path) = live_libc();
        let (Ok(version), Ok(path)) = (version, path) else {
            return;
        };
        if parse_glibc(&version).is_none_or(|v| v < (2, 35)) {
            return;
        }
        let t = TempTree::new("ldso-cache");
        let dir = t.path("cache/perfsleuth");
        let first = diagnostics(Path::new(&path), Some(&dir), "boot-a", None, loader_path).unwrap();
        assert!(first.starts_with(CACHE_HEADER));
        assert!(diagnostic(&first, "version.version").is_some());
        let files: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
        assert_eq!(files.len(), 1);
        let start = Instant::now();
        let second = diagnostics(Path::new(&path), Some(&dir), "boot-a", None, || {
            Err("must not run".into())
        })
        .unwrap();
        let cached_in = start.elapsed();
        assert_eq!(first, second);
        assert!(cached_in < Duration::from_millis(50), "{cached_in:?}");
        // Another boot: a new run, and the stale file is replaced.
        diagnostics(Path::new(&path), Some(&dir), "boot-b", None, loader_path).unwrap();
        assert_eq!(std::fs::read_dir(&dir).unwrap().count(), 1);
        // An unwritable cache directory still gives the values.
        let nowhere = Path::new("/proc/perfsleuth-cannot-exist/cache");
        let third =
            diagnostics(Path::new(&path), Some(nowhere), "boot-a", None, loader_path).unwrap();
        assert_eq!(isa_level(&third), isa_level(&first));
        // A tunable changes the key (and is passed to ld.so).
        let tuned = diagnostics(
            Path::new(&path),
            Some(&dir),
            "boot-b",
            Some("glibc.cpu.x86_rep_stosb_threshold=4096"),
            loader_path,
        )
        .unwrap();
        assert_eq!(
            diagnostic(&tuned, "x86.cpu_features.rep_stosb_threshold").as_deref(),
            Some("0x1000")
        );
    }
}
