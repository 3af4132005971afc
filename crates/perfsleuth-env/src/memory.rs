//! Memory facts: total memory, page size, NUMA nodes and their CPUs, and
//! transparent huge page settings (`docs/ENVIRONMENT.md`). Every key of the
//! contract is always set; what cannot be read is `unknown` with the reason.

use crate::Source;
use crate::error::{Record, Unknown};
use perfsleuth_model::{Environment, ImpactClass};

const NODE_DIR: &str = "/sys/devices/system/node";
const THP_DIR: &str = "/sys/kernel/mm/transparent_hugepage";

/// Captures the memory facts of the machine or tree `src` describes.
pub fn capture(src: &Source, env: &mut Environment) {
    env.record("mem.total", total(src), ImpactClass::Performance);
    env.record("mem.page_size", page_size(src), ImpactClass::Identity);
    numa(src, env);
    for name in ["enabled", "defrag"] {
        let path = format!("{THP_DIR}/{name}");
        let value = src.read(&path).map_err(Unknown::from).and_then(|t| {
            bracketed(&t).ok_or_else(|| format!("{path}: no [choice] in {}", snippet(&t)).into())
        });
        env.record(format!("mem.thp.{name}"), value, ImpactClass::Performance);
    }
}

/// MemTotal of `/proc/meminfo` in MiB (rounded down).
fn total(src: &Source) -> Result<String, Unknown> {
    let text = src.read("/proc/meminfo")?;
    let line = text
        .lines()
        .find_map(|l| l.strip_prefix("MemTotal:"))
        .ok_or_else(|| "no MemTotal in /proc/meminfo".to_string())?;
    let mut parts = line.split_whitespace();
    let bad = || {
        format!(
            "/proc/meminfo MemTotal is not \"<n> kB\": {}",
            snippet(line.trim())
        )
    };
    let n: u64 = parts.next().and_then(|n| n.parse().ok()).ok_or_else(bad)?;
    // The kernel always writes kB (KiB); bytes would be a different file format.
    let kib = match parts.next() {
        Some("kB") | Some("KiB") | None => n,
        _ => return Err(bad().into()),
    };
    Ok(format!("{} MiB", kib / 1024))
}

/// The page size of the live machine; a tree does not record it.
fn page_size(src: &Source) -> Result<String, Unknown> {
    if !src.is_live() {
        return Err("not recorded in the tree".into());
    }
    // SAFETY: sysconf has no preconditions; it returns -1 on error.
    let bytes = unsafe { libc::sysconf(libc::_SC_PAGESIZE) };
    if bytes <= 0 {
        return Err(format!("sysconf(_SC_PAGESIZE) returned {bytes}").into());
    }
    let bytes = bytes as u64;
    Ok(if bytes % 1024 == 0 {
        format!("{} KiB", bytes / 1024)
    } else {
        format!("{bytes} B")
    })
}

/// `mem.numa.nodes` and `mem.numa.node<N>.cpus` for every node directory.
fn numa(src: &Source, env: &mut Environment) {
    let nodes = src
        .list_dir(NODE_DIR)
        .map_err(Unknown::from)
        .and_then(|entries| {
            // list_dir sorts as text (node10 before node2); sort by number.
            let mut ids: Vec<u64> = entries
                .iter()
                .filter_map(|e| e.strip_prefix("node")?.parse().ok())
                .collect();
            ids.sort_unstable();
            ids.dedup();
            if ids.is_empty() {
                Err(format!("no node<N> entries in {NODE_DIR}").into())
            } else {
                Ok(ids)
            }
        });
    env.record(
        "mem.numa.nodes",
        nodes
            .as_ref()
            .map(|ids| ids.len().to_string())
            .map_err(Clone::clone),
        ImpactClass::Identity,
    );
    for id in nodes.unwrap_or_default() {
        let path = format!("{NODE_DIR}/node{id}/cpulist");
        let cpus = src.read(&path).map_err(Unknown::from).and_then(|text| {
            let line = text.lines().next().unwrap_or("").trim();
            if line.is_empty() {
                // Memory-only nodes (CXL, persistent memory) have no CPUs.
                Ok("none".to_string())
            } else if line
                .chars()
                .all(|c| c.is_ascii_digit() || c == ',' || c == '-')
            {
                Ok(line.to_string())
            } else {
                Err(format!("{path}: not a CPU list: {}", snippet(line)).into())
            }
        });
        env.record(
            format!("mem.numa.node{id}.cpus"),
            cpus,
            ImpactClass::Performance,
        );
    }
}

/// The selected word of a sysfs choice file: `madvise` of "always [madvise] never".
fn bracketed(text: &str) -> Option<String> {
    let start = text.find('[')? + 1;
    let len = text[start..].find(']')?;
    let word = text[start..start + len].trim();
    (!word.is_empty() && !word.contains(char::is_whitespace)).then(|| word.to_string())
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
    use std::path::PathBuf;
    use std::sync::atomic::{AtomicUsize, Ordering};

    const KEYS: &[&str] = &[
        "mem.total",
        "mem.page_size",
        "mem.numa.nodes",
        "mem.thp.enabled",
        "mem.thp.defrag",
    ];

    /// A fresh directory under the system temp dir, removed on drop.
    struct Tree(PathBuf);

    impl Tree {
        fn new(tag: &str) -> Tree {
            static N: AtomicUsize = AtomicUsize::new(0);
            let n = N.fetch_add(1, Ordering::Relaxed);
            let dir = std::env::temp_dir()
                .join(format!("perfsleuth-mem-{tag}-{}-{n}", std::process::id()));
            let _ = std::fs::remove_dir_all(&dir);
            std::fs::create_dir_all(&dir).unwrap();
            Tree(dir)
        }

        fn write(&self, path: &str, content: impl AsRef<[u8]>) -> &Tree {
            let full = self.0.join(path);
            std::fs::create_dir_all(full.parent().unwrap()).unwrap();
            std::fs::write(full, content).unwrap();
            self
        }

        fn capture(&self) -> Environment {
            let mut env = Environment::default();
            capture(&Source::root(&self.0), &mut env);
            env
        }
    }

    impl Drop for Tree {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }

    fn assert_all_keys(env: &Environment) {
        for k in KEYS {
            let f = env.facts.get(*k).unwrap_or_else(|| panic!("{k} missing"));
            if f.value == UNKNOWN {
                assert!(
                    f.reason.as_deref().is_some_and(|r| !r.is_empty()),
                    "{k} unknown without reason"
                );
            }
        }
    }

    #[test]
    fn reads_a_two_node_tree() {
        let t = Tree::new("numa");
        t.write(
            "proc/meminfo",
            "MemTotal:       24684084 kB\nMemFree:        22516852 kB\n",
        )
        .write(
            "sys/kernel/mm/transparent_hugepage/enabled",
            "always [madvise] never\n",
        )
        .write(
            "sys/kernel/mm/transparent_hugepage/defrag",
            "always defer defer+madvise [madvise] never\n",
        )
        .write("sys/devices/system/node/node0/cpulist", "0-15,32-47\n")
        .write("sys/devices/system/node/node1/cpulist", "16-31,48-63\n")
        .write("sys/devices/system/node/node10/cpulist", "\n")
        .write("sys/devices/system/node/possible", "0-1,10\n")
        .write("sys/devices/system/node/has_cpu", "0-1\n");
        let env = t.capture();
        assert_all_keys(&env);
        assert_eq!(env.get("mem.total"), Some("24105 MiB"));
        assert_eq!(env.get("mem.numa.nodes"), Some("3"));
        assert_eq!(env.get("mem.numa.node0.cpus"), Some("0-15,32-47"));
        assert_eq!(env.get("mem.numa.node1.cpus"), Some("16-31,48-63"));
        assert_eq!(env.get("mem.numa.node10.cpus"), Some("none"));
        assert_eq!(env.get("mem.thp.enabled"), Some("madvise"));
        assert_eq!(env.get("mem.thp.defrag"), Some("madvise"));
        let page = &env.facts["mem.page_size"];
        assert_eq!(
            (page.value.as_str(), page.reason.as_deref()),
            (UNKNOWN, Some("not recorded in the tree"))
        );
    }

    #[test]
    fn bracketed_choice() {
        assert_eq!(
            bracketed("[always] madvise never").as_deref(),
            Some("always")
        );
        assert_eq!(
            bracketed("always defer defer+madvise [madvise] never").as_deref(),
            Some("madvise")
        );
        assert_eq!(bracketed("always madvise never"), None);
        assert_eq!(bracketed("[]"), None);
        assert_eq!(bracketed("]["), None);
        assert_eq!(bracketed("[a b]"), None);
    }

    #[test]
    fn garbage_and_empty_files_never_panic() {
        let garbage: &[&[u8]] = &[
            b"",
            b"\xff\xfe\x00[\x80]\n",
            b"MemTotal:\nMemTotal: 99999999999999999999999 kB\n[",
            b"MemTotal: 18446744073709551615 kB\n",
            b"MemTotal: 12 bytes\n",
            b"]]][[[",
        ];
        for g in garbage {
            let t = Tree::new("garbage");
            for f in [
                "proc/meminfo",
                "sys/kernel/mm/transparent_hugepage/enabled",
                "sys/kernel/mm/transparent_hugepage/defrag",
                "sys/devices/system/node/node0/cpulist",
                "sys/devices/system/node/node99999999999999999999/cpulist",
                "sys/devices/system/node/nodex/cpulist",
            ] {
                t.write(f, g);
            }
            assert_all_keys(&t.capture());
        }
        assert_eq!(
            Tree::new("huge")
                .write("proc/meminfo", "MemTotal: 18446744073709551615 kB\n")
                .capture()
                .get("mem.total"),
            Some("18014398509481983 MiB")
        );
        let empty = Tree::new("empty").capture();
        assert_all_keys(&empty);
        for k in KEYS {
            assert_eq!(empty.get(k), Some(UNKNOWN), "{k}");
        }
        assert_eq!(empty.facts.len(), KEYS.len());
    }

    #[test]
    fn live_capture_reads_this_machine() {
        let mut env = Environment::default();
        capture(&Source::live(), &mut env);
        assert_all_keys(&env);
        assert_ne!(env.get("mem.total"), Some(UNKNOWN));
        assert_ne!(env.get("mem.page_size"), Some(UNKNOWN));
        for (k, f) in &env.facts {
            eprintln!("{k} = {} {}", f.value, f.reason.as_deref().unwrap_or(""));
        }
    }
}
