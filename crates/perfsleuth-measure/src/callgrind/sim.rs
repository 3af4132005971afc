//! Running a command under callgrind and turning its output into counters.

use std::ffi::OsStr;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};

#[cfg(test)]
use super::{EVENTS, counters, estimated_cycles};
use super::{ParseError, Profile, parse_file};

/// What to tell a user without valgrind.
pub const INSTALL_HINT: &str = "install valgrind (Debian/Ubuntu: apt-get install valgrind)";

/// Where callgrind writes, and what it measures.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SimulationConfig {
    /// Directory for the `callgrind.out.PID` files; it should hold nothing
    /// else named `callgrind.out.*` ([`collect_outputs`] reads them all).
    pub out_dir: PathBuf,
    /// Only count cost inside this function (and what it calls):
    /// `--toggle-collect=F --collect-atstart=no`. Callgrind's `*` and `?`
    /// wildcards work.
    pub collect: Option<String>,
    /// The cache geometry to simulate; [`CacheModel::DEFAULT`] unless a
    /// variant gives another machine's.
    pub cache: CacheModel,
}

/// One simulated cache: size, associativity and line size in bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheGeom {
    /// Total size in bytes.
    pub size: u64,
    /// Ways.
    pub assoc: u64,
    /// Line size in bytes.
    pub line: u64,
}

impl CacheGeom {
    /// valgrind's `SIZE,ASSOC,LINE`.
    fn arg(&self) -> String {
        format!("{},{},{}", self.size, self.assoc, self.line)
    }

    fn describe(&self) -> String {
        let size = if self.size % (1 << 20) == 0 {
            format!("{} MiB", self.size >> 20)
        } else if self.size % 1024 == 0 {
            format!("{} KiB", self.size >> 10)
        } else {
            format!("{} bytes", self.size)
        };
        format!("{size} {}-way", self.assoc)
    }

    /// valgrind needs a power-of-two set count and line size: a cache whose
    /// set count is not one (Intel's 15-way L3s) keeps its size as nearly as
    /// possible with the largest power-of-two set count below and more ways,
    /// as valgrind does for the caches it detects itself; the change is said.
    pub fn fitted(self, which: &str) -> Result<(CacheGeom, Option<String>), SimError> {
        let invalid = || SimError::UnsimulableCache {
            which: which.to_string(),
            geom: self,
        };
        if self.size == 0 || self.assoc == 0 || !self.line.is_power_of_two() || self.line < 32 {
            return Err(invalid());
        }
        let set_bytes = self.assoc.checked_mul(self.line).ok_or_else(invalid)?;
        let sets = self.size / set_bytes;
        if sets == 0 {
            return Err(SimError::CacheBelowOneSet {
                which: which.to_string(),
                geom: self,
            });
        }
        if sets.is_power_of_two() && sets * set_bytes == self.size {
            return Ok((self, None));
        }
        let sets = 1u64 << (63 - sets.leading_zeros());
        let assoc = ((self.size as f64) / ((sets * self.line) as f64))
            .round()
            .max(1.0) as u64;
        let fitted = CacheGeom {
            size: sets * assoc * self.line,
            assoc,
            line: self.line,
        };
        let note = format!(
            "{which} {} is not a power-of-two number of sets as valgrind needs: simulated as {} ({sets} sets)",
            self.describe(),
            fitted.describe()
        );
        Ok((fitted, Some(note)))
    }
}

/// The caches callgrind simulates: first-level instruction and data, last level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheModel {
    /// First-level instruction cache.
    pub i1: CacheGeom,
    /// First-level data cache.
    pub d1: CacheGeom,
    /// Last-level cache.
    pub ll: CacheGeom,
}

impl CacheModel {
    /// perfsleuth's fixed model (see [`CACHE_MODEL`]).
    pub const DEFAULT: CacheModel = CacheModel {
        i1: CacheGeom {
            size: 32768,
            assoc: 8,
            line: 64,
        },
        d1: CacheGeom {
            size: 32768,
            assoc: 8,
            line: 64,
        },
        ll: CacheGeom {
            size: 8 << 20,
            assoc: 16,
            line: 64,
        },
    };

    /// In words: `I1 32 KiB 8-way, D1 48 KiB 12-way, LL 32 MiB 16-way`.
    pub fn describe(&self) -> String {
        format!(
            "I1 {}, D1 {}, LL {}",
            self.i1.describe(),
            self.d1.describe(),
            self.ll.describe()
        )
    }
}

impl Default for CacheModel {
    fn default() -> CacheModel {
        CacheModel::DEFAULT
    }
}

/// Errors of simulation mode.
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// No `valgrind` executable on `PATH`.
    #[error("valgrind not found on PATH; {INSTALL_HINT}")]
    NotInstalled,
    /// The run left no `callgrind.out.*` file (valgrind could not start the
    /// program, or was killed before writing).
    #[error(
        "valgrind wrote no callgrind.out.* file into {} (did the program start?)",
        dir.display()
    )]
    NoOutput {
        /// The output directory.
        dir: PathBuf,
    },
    /// An output file is not valid callgrind output.
    #[error("cannot parse callgrind output: {0}")]
    Parse(#[from] ParseError),
    /// Listing or removing output files failed.
    #[error("{}: {source}", path.display())]
    Io {
        /// The file or directory.
        path: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// A cache geometry valgrind cannot simulate at all (`run --cache-model`).
    #[error(
        "{which} {} bytes, {} ways, {}-byte lines: valgrind needs a size, at least one way and a power-of-two line of 32 bytes or more",
        geom.size, geom.assoc, geom.line
    )]
    UnsimulableCache {
        /// Which cache: `I1`, `D1` or `LL`.
        which: String,
        /// The geometry asked for.
        geom: CacheGeom,
    },
    /// A cache smaller than one set of its ways and lines.
    #[error("{which} {}: smaller than one set", geom.describe())]
    CacheBelowOneSet {
        /// Which cache: `I1`, `D1` or `LL`.
        which: String,
        /// The geometry asked for.
        geom: CacheGeom,
    },
    /// `valgrind --version` could not be started.
    #[error("cannot run {} --version: {source}", valgrind.display())]
    VersionUnrunnable {
        /// The valgrind executable.
        valgrind: PathBuf,
        /// The OS error.
        source: std::io::Error,
    },
    /// `valgrind --version` ran past its time and was killed.
    #[error("{} --version did not finish", .0.display())]
    VersionHung(PathBuf),
    /// Waiting for `valgrind --version` failed.
    #[error("{0}")]
    VersionWait(std::io::Error),
    /// `valgrind --version` failed or printed nothing.
    #[error("{} --version failed ({status})", valgrind.display())]
    VersionFailed {
        /// The valgrind executable.
        valgrind: PathBuf,
        /// How it ended.
        status: std::process::ExitStatus,
    },
}

/// The cache geometry [`valgrind_argv`] gives callgrind, in words.
pub const CACHE_MODEL: &str = "I1 and D1 32 KiB 8-way, LL 8 MiB 16-way, 64-byte lines";

/// The valgrind command line that only runs `program` (`--tool=none`):
/// what the program sees of the CPU is the same as under callgrind, since
/// valgrind's core, not the tool, emulates CPUID.
pub fn plain_valgrind_argv(valgrind: &Path) -> Vec<String> {
    vec![
        valgrind.to_string_lossy().into_owned(),
        "--tool=none".to_string(),
        "-q".to_string(),
        "--vgdb=no".to_string(),
    ]
}

/// The valgrind command line that runs `program` (its argv, program first)
/// under callgrind:
///
/// `VALGRIND --tool=callgrind -q --vgdb=no --cache-sim=yes --I1=32768,8,64 --D1=32768,8,64
/// --LL=8388608,16,64 --trace-children=yes
/// --callgrind-out-file=OUT/callgrind.out.%p [--toggle-collect=F
/// --collect-atstart=no] -- PROGRAM ARGS…`
///
/// The cache geometry is fixed (32 KiB 8-way L1s, 8 MiB 16-way LL, 64-byte
/// lines) so the miss counts do not depend on the host's caches, which
/// callgrind would otherwise detect. `--trace-children=yes` follows `exec`
/// (a shell script's commands, `sh -c …`) and every process writes its own
/// `callgrind.out.PID`; [`collect_outputs`] merges them. A `%` in the output
/// directory is escaped (callgrind expands `%p`/`%q{…}` in that option). A
/// non-UTF-8 directory name is converted lossily.
pub fn valgrind_argv(valgrind: &Path, program: &[String], cfg: &SimulationConfig) -> Vec<String> {
    let out = cfg
        .out_dir
        .join("callgrind.out.")
        .to_string_lossy()
        .replace('%', "%%");
    let mut argv = vec![
        valgrind.to_string_lossy().into_owned(),
        "--tool=callgrind".to_string(),
        // Quiet: a failing program's own stderr is what the user needs to
        // see, not valgrind's banner and summary.
        "-q".to_string(),
        // No gdbserver: its FIFOs in /tmp would outlive a killed run.
        "--vgdb=no".to_string(),
        "--cache-sim=yes".to_string(),
        format!("--I1={}", cfg.cache.i1.arg()),
        format!("--D1={}", cfg.cache.d1.arg()),
        format!("--LL={}", cfg.cache.ll.arg()),
        "--trace-children=yes".to_string(),
        format!("--callgrind-out-file={out}%p"),
    ];
    if let Some(f) = &cfg.collect {
        argv.push(format!("--toggle-collect={f}"));
        argv.push("--collect-atstart=no".to_string());
    }
    argv.push("--".to_string());
    argv.extend(program.iter().cloned());
    argv
}

/// The `valgrind` executable on `PATH`.
pub fn find_valgrind() -> Result<PathBuf, SimError> {
    find_valgrind_in(&std::env::var_os("PATH").unwrap_or_default())
}

/// The `valgrind` executable in a `PATH`-style list of directories.
pub fn find_valgrind_in(path: &OsStr) -> Result<PathBuf, SimError> {
    std::env::split_paths(path)
        .filter(|dir| !dir.as_os_str().is_empty())
        .map(|dir| dir.join("valgrind"))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
        .ok_or(SimError::NotInstalled)
}

/// `valgrind --version` (`valgrind-3.19.0`), or why not; killed after 10 s.
pub fn valgrind_version(valgrind: &Path) -> Result<String, SimError> {
    use std::io::Read;
    use std::process::{Command, Stdio};
    let mut child = Command::new(valgrind)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|source| SimError::VersionUnrunnable {
            valgrind: valgrind.to_path_buf(),
            source,
        })?;
    let start = std::time::Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if start.elapsed() > std::time::Duration::from_secs(10) => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(SimError::VersionHung(valgrind.to_path_buf()));
            }
            Ok(None) => std::thread::sleep(std::time::Duration::from_millis(1)),
            Err(e) => return Err(SimError::VersionWait(e)),
        }
    };
    let mut out = String::new();
    if let Some(mut stdout) = child.stdout.take() {
        let _ = (&mut stdout).take(4096).read_to_string(&mut out);
    }
    let line = out.lines().next().unwrap_or("").trim().to_string();
    if !status.success() || line.is_empty() {
        return Err(SimError::VersionFailed {
            valgrind: valgrind.to_path_buf(),
            status,
        });
    }
    Ok(line)
}

/// Parses and merges every `callgrind.out.*` file in `dir` (in name order),
/// then deletes them. One file per process (`--trace-children=yes`) and per
/// thread (`--separate-threads=yes`, `callgrind.out.PID-TID`) is normal.
///
/// Empty files are skipped (and deleted): with `--separate-threads=yes`
/// callgrind creates `callgrind.out.PID` and leaves it empty. `Err(NoOutput)`
/// when no non-empty file is there; on a parse error the files are left in
/// place for inspection.
pub fn collect_outputs(dir: &Path) -> Result<Profile, SimError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| SimError::Io { path, source }
    };
    let mut files = Vec::new();
    let mut empty = Vec::new();
    for entry in std::fs::read_dir(dir).map_err(io(dir))? {
        let entry = entry.map_err(io(dir))?;
        let is_output = entry
            .file_name()
            .to_str()
            .is_some_and(|n| n.starts_with("callgrind.out."));
        if !is_output {
            continue;
        }
        let meta = entry.metadata().map_err(io(dir))?;
        if !meta.is_file() {
            continue;
        }
        if meta.len() == 0 {
            // With --separate-threads=yes callgrind also creates the
            // per-process file and leaves it empty.
            empty.push(entry.path());
        } else {
            files.push(entry.path());
        }
    }
    if files.is_empty() {
        return Err(SimError::NoOutput {
            dir: dir.to_path_buf(),
        });
    }
    files.sort();
    let mut profile = Profile::default();
    for f in &files {
        profile.merge(parse_file(f)?);
    }
    for f in files.iter().chain(&empty) {
        std::fs::remove_file(f).map_err(io(f))?;
    }
    Ok(profile)
}

/// Whether a run with `--toggle-collect=function` collected anything: true
/// when any event total is non-zero, or a function matching `function`
/// (callgrind's `*`/`?` wildcards; recursion suffixes like `'2` ignored) has
/// cost. False means the function never ran (or was inlined away), so every
/// counter would be 0 — the caller should report that instead of results.
pub fn collect_function_seen(p: &Profile, function: &str) -> bool {
    if p.totals.iter().any(|t| *t != 0) {
        return true;
    }
    p.functions.iter().any(|f| {
        let base = f.function.split('\'').next().unwrap_or(&f.function);
        (wildcard_match(function, &f.function) || wildcard_match(function, base))
            && f.inclusive.iter().chain(&f.self_cost).any(|c| *c != 0)
    })
}

/// Callgrind's pattern matching: `*` any run of characters, `?` one.
fn wildcard_match(pattern: &str, name: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let s: Vec<char> = name.chars().collect();
    let (mut pi, mut si) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while si < s.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == s[si]) {
            pi += 1;
            si += 1;
        } else if pi < p.len() && p[pi] == '*' {
            star = Some((pi, si));
            pi += 1;
        } else if let Some((sp, ss)) = star {
            pi = sp + 1;
            si = ss + 1;
            star = Some((sp, ss + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::callgrind::FunctionProfile;

    fn profile(events: &[&str], totals: &[u64]) -> Profile {
        Profile {
            events: events.iter().map(|e| e.to_string()).collect(),
            totals: totals.to_vec(),
            ..Profile::default()
        }
    }

    #[test]
    fn argv_has_fixed_caches_and_program_after_double_dash() {
        let cfg = SimulationConfig {
            out_dir: PathBuf::from("/tmp/o"),
            collect: None,
            cache: CacheModel::DEFAULT,
        };
        let argv = valgrind_argv(
            Path::new("/usr/bin/valgrind"),
            &["sh".to_string(), "script.sh".to_string()],
            &cfg,
        );
        assert_eq!(
            argv,
            [
                "/usr/bin/valgrind",
                "--tool=callgrind",
                "-q",
                "--vgdb=no",
                "--cache-sim=yes",
                "--I1=32768,8,64",
                "--D1=32768,8,64",
                "--LL=8388608,16,64",
                "--trace-children=yes",
                "--callgrind-out-file=/tmp/o/callgrind.out.%p",
                "--",
                "sh",
                "script.sh",
            ]
        );
    }

    #[test]
    fn argv_with_collect_and_percent_in_dir() {
        let cfg = SimulationConfig {
            out_dir: PathBuf::from("/tmp/50%"),
            collect: Some("bench_*".to_string()),
            cache: CacheModel::DEFAULT,
        };
        let argv = valgrind_argv(Path::new("valgrind"), &["./p".to_string()], &cfg);
        assert_eq!(argv[9], "--callgrind-out-file=/tmp/50%%/callgrind.out.%p");
        assert_eq!(argv[10], "--toggle-collect=bench_*");
        assert_eq!(argv[11], "--collect-atstart=no");
        assert_eq!(&argv[12..], ["--", "./p"]);
    }

    #[test]
    fn not_installed_has_hint() {
        let e = find_valgrind_in(OsStr::new("/nonexistent-dir:")).unwrap_err();
        assert!(matches!(e, SimError::NotInstalled));
        assert!(e.to_string().contains("apt-get install valgrind"), "{e}");
    }

    #[test]
    fn cycles_model() {
        // Ir Dr Dw I1mr D1mr D1mw ILmr DLmr DLmw
        let p = profile(&EVENTS, &[1000, 300, 200, 10, 20, 30, 5, 6, 7]);
        // ram 18, L1 misses 60, LL hits 42, L1 hits 1440
        assert_eq!(
            estimated_cycles(&p),
            Some(1440.0 + 5.0 * 42.0 + 35.0 * 18.0)
        );
        let c = counters(&p);
        assert_eq!(c.len(), 10);
        assert_eq!(c["DLmw"], 7.0);
        assert_eq!(c["est_cycles"], 2280.0);
    }

    #[test]
    fn cycles_need_cache_events() {
        let p = profile(&["Ir"], &[1000]);
        assert_eq!(estimated_cycles(&p), None);
        let c = counters(&p);
        assert_eq!(c.len(), 9);
        assert_eq!(c["Ir"], 1000.0);
        assert_eq!(c["D1mr"], 0.0);
    }

    #[test]
    fn collect_seen() {
        let mut p = profile(&["Ir"], &[0]);
        assert!(!collect_function_seen(&p, "bench"));
        p.functions.push(FunctionProfile {
            function: "bench_sort'2".to_string(),
            self_cost: vec![5],
            inclusive: vec![5],
            ..FunctionProfile::default()
        });
        assert!(collect_function_seen(&p, "bench_sort"));
        assert!(collect_function_seen(&p, "bench_*"));
        assert!(!collect_function_seen(&p, "other"));
        p.totals = vec![7];
        assert!(collect_function_seen(&p, "other"));
    }

    #[test]
    fn wildcards() {
        assert!(wildcard_match("a*c", "abbbc"));
        assert!(wildcard_match("a?c", "abc"));
        assert!(wildcard_match("*", ""));
        assert!(!wildcard_match("a*c", "abcd"));
        assert!(wildcard_match("*::run*", "ns::run_bench(int)"));
    }

    #[test]
    fn a_cache_valgrind_cannot_simulate_is_fitted_and_said() {
        let intel_l3 = CacheGeom {
            size: 107_520 * 1024,
            assoc: 15,
            line: 64,
        };
        let (fitted, note) = intel_l3.fitted("LL").unwrap();
        // What valgrind itself makes of this L3: 104 MiB, 26-way, 65536 sets.
        assert_eq!((fitted.size, fitted.assoc), (109_051_904, 26));
        assert!(note.unwrap().contains("104 MiB 26-way (65536 sets)"));
        let huge = CacheGeom {
            size: 32768,
            assoc: 1 << 60,
            line: 64,
        };
        assert!(huge.fitted("I1").is_err());
        let amd_l3 = CacheGeom {
            size: 32 << 20,
            assoc: 16,
            line: 64,
        };
        assert_eq!(amd_l3.fitted("LL").unwrap(), (amd_l3, None));
        let bad = CacheGeom {
            size: 32768,
            assoc: 8,
            line: 48,
        };
        assert!(bad.fitted("D1").is_err());
        assert_eq!(
            CacheModel::DEFAULT.describe(),
            "I1 32 KiB 8-way, D1 32 KiB 8-way, LL 8 MiB 16-way"
        );
    }
}
