//! Facts of the process being described: the CPUs it may run on and the
//! environment variables that change how allocators, loaders and thread pools
//! behave.

use crate::Source;
use crate::error::{Record, Unknown};
use crate::kernel::{clean, short};
use perfsleuth_model::{Environment, ImpactClass};

/// Variables recorded as `env.<NAME>` (value or `unset`).
pub(crate) const ENV_VARS: &[&str] = &[
    "GLIBC_TUNABLES",
    "LD_PRELOAD",
    "LD_LIBRARY_PATH",
    "LD_BIND_NOW",
    "MALLOC_ARENA_MAX",
    "MALLOC_CONF",
    "MALLOC_TOP_PAD_",
    "MALLOC_MMAP_THRESHOLD_",
    "MALLOC_TRIM_THRESHOLD_",
    "OMP_NUM_THREADS",
    "OMP_PROC_BIND",
    "OMP_PLACES",
    "RAYON_NUM_THREADS",
    "GOMAXPROCS",
    "GOGC",
    "MKL_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "OPENBLAS_CORETYPE",
    "PYTHONHASHSEED",
    "JAVA_TOOL_OPTIONS",
];

/// The highest CPU number accepted in a CPU list: far above any machine,
/// low enough that a garbage `0-4294967295` cannot exhaust memory.
const MAX_CPU: usize = 1 << 16;

/// Captures the process facts.
pub fn capture(src: &Source, env: &mut Environment) {
    let affinity = if src.is_live() {
        live_affinity()
    } else {
        tree_affinity(src)
    };
    env.record("process.affinity", affinity, ImpactClass::Performance);
    for name in ENV_VARS {
        let value = src
            .env_var(name)
            .map(|v| clean(&v))
            .unwrap_or_else(|| "unset".to_string());
        env.set(format!("env.{name}"), value, ImpactClass::Performance);
    }
}

/// `Cpus_allowed_list` of the tree's `/proc/self/status`, normalised.
fn tree_affinity(src: &Source) -> Result<String, Unknown> {
    let path = "/proc/self/status";
    let text = src.read(path)?;
    let list = text
        .lines()
        .find_map(|l| l.strip_prefix("Cpus_allowed_list:"))
        .ok_or_else(|| format!("no Cpus_allowed_list in {path}"))?;
    let cpus = parse_cpu_list(list.trim()).map_err(|e| format!("{path}: {e}"))?;
    Ok(cpu_list(&cpus))
}

/// The live process's affinity mask from `sched_getaffinity`, growing the
/// mask for machines with more than 1024 CPUs (the kernel refuses a mask
/// smaller than its own with EINVAL).
#[cfg(target_os = "linux")]
fn live_affinity() -> Result<String, Unknown> {
    let mut words = 1024 / 64;
    loop {
        let mut mask = vec![0u64; words];
        // SAFETY: the buffer holds `words * 8` bytes, the size passed; the
        // kernel writes at most that many.
        let rc = unsafe {
            libc::sched_getaffinity(0, words * 8, mask.as_mut_ptr().cast::<libc::cpu_set_t>())
        };
        if rc == 0 {
            let cpus: Vec<usize> = (0..words * 64)
                .filter(|i| mask[i / 64] & (1u64 << (i % 64)) != 0)
                .collect();
            if cpus.is_empty() {
                return Err("sched_getaffinity returned an empty mask".into());
            }
            return Ok(cpu_list(&cpus));
        }
        let err = std::io::Error::last_os_error();
        if err.raw_os_error() == Some(libc::EINVAL) && words * 64 < MAX_CPU {
            words *= 2;
            continue;
        }
        return Err(format!("sched_getaffinity: {err}").into());
    }
}

#[cfg(not(target_os = "linux"))]
fn live_affinity() -> Result<String, Unknown> {
    Err("sched_getaffinity exists only on Linux".into())
}

/// Parses the kernel's CPU list syntax (`0-3,8-11`, also `0-15:2/4` strides
/// are refused) into sorted, distinct CPU numbers.
pub(crate) fn parse_cpu_list(text: &str) -> Result<Vec<usize>, Unknown> {
    let text = text.trim();
    if text.is_empty() {
        return Err("empty CPU list".into());
    }
    let bad = || format!("not a CPU list: {:?}", short(text));
    let mut cpus = Vec::new();
    for part in text.split(',') {
        let part = part.trim();
        let (lo, hi) = match part.split_once('-') {
            Some((a, b)) => (
                a.trim().parse::<usize>().map_err(|_| bad())?,
                b.trim().parse::<usize>().map_err(|_| bad())?,
            ),
            None => {
                let n = part.parse::<usize>().map_err(|_| bad())?;
                (n, n)
            }
        };
        if lo > hi || hi > MAX_CPU || cpus.len() > MAX_CPU {
            return Err(bad().into());
        }
        cpus.extend(lo..=hi);
    }
    cpus.sort_unstable();
    cpus.dedup();
    Ok(cpus)
}

/// Writes sorted CPU numbers in the kernel's range syntax (`0-3,8`).
pub(crate) fn cpu_list(cpus: &[usize]) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut i = 0;
    while i < cpus.len() {
        let start = cpus[i];
        let mut end = start;
        while i + 1 < cpus.len() && cpus[i + 1] == end + 1 {
            end = cpus[i + 1];
            i += 1;
        }
        out.push(if start == end {
            start.to_string()
        } else {
            format!("{start}-{end}")
        });
        i += 1;
    }
    out.join(",")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::testutil::*;

    /// The fixed keys this reader always sets.
    pub(crate) fn keys() -> Vec<String> {
        let mut k = vec!["process.affinity".to_string()];
        k.extend(ENV_VARS.iter().map(|n| format!("env.{n}")));
        k
    }

    #[test]
    fn cpu_lists_round_trip() {
        assert_eq!(cpu_list(&parse_cpu_list("0-3,8").unwrap()), "0-3,8");
        assert_eq!(cpu_list(&parse_cpu_list("8, 0-1,2,3,3").unwrap()), "0-3,8");
        assert_eq!(cpu_list(&[0, 2, 4, 5]), "0,2,4-5");
        assert!(parse_cpu_list("").is_err());
        assert!(parse_cpu_list("3-1").is_err());
        assert!(parse_cpu_list("0-4294967295").is_err());
        assert!(parse_cpu_list("0-99999999999999999999999").is_err());
        assert!(parse_cpu_list("a-b").is_err());
    }

    #[test]
    fn reads_affinity_and_environment_of_a_tree() {
        let t = TempTree::new("process");
        t.write(
            "/proc/self/status",
            "Name:\tbench\nUmask:\t0022\nState:\tR (running)\nCpus_allowed:\tff0f\nCpus_allowed_list:\t0-3,8-15\nMems_allowed_list:\t0\n",
        )
        .write("/proc/self/environ", b"PATH=/usr/bin\0OMP_NUM_THREADS=4\0LD_PRELOAD=/usr/lib/libjemalloc.so.2\0GOGC=\0".as_slice());
        let mut env = Environment::default();
        capture(&t.source(), &mut env);
        assert_eq!(env.get("process.affinity"), Some("0-3,8-15"));
        assert_eq!(env.get("env.OMP_NUM_THREADS"), Some("4"));
        assert_eq!(env.get("env.LD_PRELOAD"), Some("/usr/lib/libjemalloc.so.2"));
        assert_eq!(env.get("env.GOGC"), Some(""));
        assert_eq!(env.get("env.MALLOC_CONF"), Some("unset"));
        for k in keys() {
            assert!(env.facts.contains_key(&k), "{k}");
        }
    }

    #[test]
    fn garbage_everywhere_does_not_panic() {
        for seed in 0..8u64 {
            let t = TempTree::new("process-garbage");
            fill(&t, |i| {
                random_bytes(seed * 31 + i as u64, (seed as usize * 577 + i * 59) % 3000)
            });
            let mut env = Environment::default();
            capture(&t.source(), &mut env);
            for k in keys() {
                assert!(env.facts.contains_key(&k), "{k}");
            }
        }
        let t = TempTree::new("process-absurd");
        t.write(
            "/proc/self/status",
            "Cpus_allowed_list:\t0-18446744073709551615\n",
        );
        let mut env = Environment::default();
        capture(&t.source(), &mut env);
        assert_eq!(env.get("process.affinity"), Some("unknown"));
    }

    #[test]
    fn live_affinity_is_a_cpu_list() {
        let mut env = Environment::default();
        capture(&Source::live(), &mut env);
        let aff = env.get("process.affinity").unwrap();
        assert!(parse_cpu_list(aff).is_ok(), "{aff}");
    }
}
