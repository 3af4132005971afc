//! The layering of docs/ARCHITECTURE.md ("Crates and layering"), checked
//! against the code: each crate's `[dependencies]` may name only the crates
//! of ours its row allows, and no crate's top-level modules import each
//! other in a cycle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Each crate of ours and the crates of ours it may depend on. The engine
/// (measure, probe, locks, env, store, import, runner) never links the
/// presentation (report) or what is above it; `report` renders and links no
/// engine but the probe results it draws; the binary may use everything.
const ALLOWED: &[(&str, &[&str])] = &[
    ("perfsleuth-model", &[]),
    ("perfsleuth-stats", &[]),
    ("perfsleuth-testkit", &[]),
    ("perfsleuth-env", &["perfsleuth-model"]),
    ("perfsleuth-store", &["perfsleuth-model"]),
    ("perfsleuth-unwind", &[]),
    (
        "perfsleuth-locks",
        &["perfsleuth-model", "perfsleuth-unwind"],
    ),
    ("perfsleuth-import", &["perfsleuth-model"]),
    (
        "perfsleuth-measure",
        &["perfsleuth-model", "perfsleuth-import", "perfsleuth-unwind"],
    ),
    (
        "perfsleuth-probe",
        &["perfsleuth-model", "perfsleuth-stats"],
    ),
    (
        "perfsleuth-runner",
        &[
            "perfsleuth-model",
            "perfsleuth-measure",
            "perfsleuth-env",
            "perfsleuth-stats",
            "perfsleuth-probe",
            "perfsleuth-locks",
        ],
    ),
    ("perfsleuth-bisect", &["perfsleuth-stats"]),
    (
        "perfsleuth-summary",
        &["perfsleuth-model", "perfsleuth-stats"],
    ),
    (
        "perfsleuth-report",
        &[
            "perfsleuth-model",
            "perfsleuth-stats",
            "perfsleuth-summary",
            "perfsleuth-probe",
        ],
    ),
    (
        "perfsleuth-compare",
        &[
            "perfsleuth-model",
            "perfsleuth-stats",
            "perfsleuth-env",
            "perfsleuth-report",
            "perfsleuth-summary",
        ],
    ),
    (
        "perfsleuth-scale",
        &[
            "perfsleuth-model",
            "perfsleuth-stats",
            "perfsleuth-env",
            "perfsleuth-report",
        ],
    ),
    (
        "perfsleuth-history",
        &[
            "perfsleuth-model",
            "perfsleuth-stats",
            "perfsleuth-env",
            "perfsleuth-store",
            "perfsleuth-report",
            "perfsleuth-compare",
        ],
    ),
    (
        "perfsleuth-server",
        &[
            "perfsleuth-model",
            "perfsleuth-store",
            "perfsleuth-report",
            "perfsleuth-compare",
            "perfsleuth-history",
            "perfsleuth-sides",
            "perfsleuth-summary",
        ],
    ),
    (
        "perfsleuth-sides",
        &[
            "perfsleuth-model",
            "perfsleuth-store",
            "perfsleuth-report",
            "perfsleuth-compare",
            "perfsleuth-history",
        ],
    ),
    (
        "perfsleuth-app",
        &[
            "perfsleuth-sides",
            "perfsleuth-model",
            "perfsleuth-env",
            "perfsleuth-measure",
            "perfsleuth-stats",
            "perfsleuth-store",
            "perfsleuth-probe",
            "perfsleuth-report",
            "perfsleuth-compare",
            "perfsleuth-runner",
            "perfsleuth-summary",
            "perfsleuth-scale",
            "perfsleuth-bisect",
        ],
    ),
];

fn crates_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .expect("crates/")
        .to_path_buf()
}

/// The crates of ours under crates/, by package name, with their directory.
fn workspace_crates() -> BTreeMap<String, PathBuf> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(crates_dir()).unwrap() {
        let dir = entry.unwrap().path();
        let manifest = dir.join("Cargo.toml");
        if !manifest.is_file() {
            continue;
        }
        let doc: toml::Table = std::fs::read_to_string(&manifest).unwrap().parse().unwrap();
        let name = doc["package"]["name"].as_str().unwrap().to_string();
        out.insert(name, dir);
    }
    out
}

#[test]
fn every_crate_depends_only_on_the_crates_its_layer_allows() {
    let crates = workspace_crates();
    let allowed: BTreeMap<&str, &[&str]> = ALLOWED.iter().copied().collect();
    let mut wrong = Vec::new();
    for (name, dir) in &crates {
        if name == "perfsleuth" {
            continue; // The binary sits on top and may use every crate.
        }
        let Some(may) = allowed.get(name.as_str()) else {
            wrong.push(format!(
                "{name} has no row in ALLOWED: place it in docs/ARCHITECTURE.md and here"
            ));
            continue;
        };
        let doc: toml::Table = std::fs::read_to_string(dir.join("Cargo.toml"))
            .unwrap()
            .parse()
            .unwrap();
        for section in ["dependencies", "build-dependencies"] {
            let Some(deps) = doc.get(section).and_then(|d| d.as_table()) else {
                continue;
            };
            for dep in deps.keys().filter(|d| crates.contains_key(*d)) {
                if !may.contains(&dep.as_str()) {
                    wrong.push(format!("{name} → {dep} ([{section}])"));
                }
            }
        }
    }
    for (name, _) in ALLOWED {
        assert!(
            crates.contains_key(*name),
            "ALLOWED names {name}, which is not a crate"
        );
    }
    assert!(
        wrong.is_empty(),
        "arrows the layering does not allow:\n{}",
        wrong.join("\n")
    );
}

/// The top-level modules of a crate's `src` (files and directories beside
/// lib.rs / main.rs).
fn modules(src: &Path) -> BTreeSet<String> {
    std::fs::read_dir(src)
        .unwrap()
        .filter_map(|e| {
            let p = e.unwrap().path();
            let stem = p.file_stem()?.to_str()?.to_string();
            let is_module = p.is_dir() || p.extension().is_some_and(|x| x == "rs");
            (is_module && stem != "lib" && stem != "main").then_some(stem)
        })
        .collect()
}

/// Every .rs file of module `m`, its unit tests cut off (a test may reach
/// anywhere in its crate).
fn module_sources(src: &Path, m: &str) -> Vec<String> {
    let mut files = Vec::new();
    let file = src.join(format!("{m}.rs"));
    if file.is_file() {
        files.push(file);
    }
    let mut dirs = vec![src.join(m)];
    while let Some(d) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&d) else {
            continue;
        };
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                dirs.push(p);
            } else if p.extension().is_some_and(|x| x == "rs") && p.file_stem().unwrap() != "tests"
            {
                files.push(p);
            }
        }
    }
    files
        .iter()
        .map(|f| {
            let text = std::fs::read_to_string(f).unwrap();
            let code = text
                .split("#[cfg(test)]\nmod tests")
                .next()
                .unwrap_or_default();
            code.lines()
                .map(|l| l.split("//").next().unwrap_or_default())
                .collect::<Vec<_>>()
                .join("\n")
        })
        .collect()
}

/// The modules of `all` that `code` names through `crate::` paths, grouped
/// imports included.
fn named_modules(code: &str, all: &BTreeSet<String>) -> BTreeSet<String> {
    let path = regex_lite::Regex::new(r"crate::([a-z_][a-z0-9_]*)").unwrap();
    let group = regex_lite::Regex::new(r"crate::\{([^}]*)\}").unwrap();
    let mut out: BTreeSet<String> = path.captures_iter(code).map(|c| c[1].to_string()).collect();
    for c in group.captures_iter(code) {
        out.extend(
            c[1].split(',')
                .filter_map(|item| item.trim().split("::").next())
                .map(str::to_string),
        );
    }
    out.retain(|m| all.contains(m));
    out
}

/// One cycle of `edges`, if there is one (depth-first, three colours).
fn cycle(edges: &BTreeMap<String, BTreeSet<String>>) -> Option<Vec<String>> {
    fn visit(
        v: &str,
        edges: &BTreeMap<String, BTreeSet<String>>,
        state: &mut BTreeMap<String, u8>,
        path: &mut Vec<String>,
    ) -> Option<Vec<String>> {
        state.insert(v.to_string(), 1);
        path.push(v.to_string());
        for w in &edges[v] {
            match state.get(w).copied().unwrap_or(0) {
                1 => {
                    let start = path.iter().position(|p| p == w).unwrap();
                    let mut c = path[start..].to_vec();
                    c.push(w.clone());
                    return Some(c);
                }
                0 => {
                    if let Some(c) = visit(w, edges, state, path) {
                        return Some(c);
                    }
                }
                _ => {}
            }
        }
        path.pop();
        state.insert(v.to_string(), 2);
        None
    }
    let mut state = BTreeMap::new();
    for v in edges.keys() {
        if state.get(v).copied().unwrap_or(0) == 0 {
            if let Some(c) = visit(v, edges, &mut state, &mut Vec::new()) {
                return Some(c);
            }
        }
    }
    None
}

#[test]
fn no_crate_has_a_cycle_among_its_modules() {
    let mut found = Vec::new();
    for (name, dir) in workspace_crates() {
        let src = dir.join("src");
        let all = modules(&src);
        let edges: BTreeMap<String, BTreeSet<String>> = all
            .iter()
            .map(|m| {
                let mut to = BTreeSet::new();
                for code in module_sources(&src, m) {
                    to.extend(named_modules(&code, &all));
                }
                to.remove(m);
                (m.clone(), to)
            })
            .collect();
        if let Some(c) = cycle(&edges) {
            found.push(format!("{name}: {}", c.join(" → ")));
        }
    }
    assert!(found.is_empty(), "module cycles:\n{}", found.join("\n"));
}

#[test]
fn the_cycle_finder_finds_a_cycle() {
    // The check above passes vacuously if the finder cannot see one.
    let all: BTreeSet<String> = ["a", "b", "c"].map(String::from).into();
    let edges: BTreeMap<String, BTreeSet<String>> = [
        ("a", named_modules("use crate::{b::X, Y};", &all)),
        ("b", named_modules("crate::c::f()", &all)),
        ("c", named_modules("use crate::a;", &all)),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_string(), v))
    .collect();
    assert_eq!(cycle(&edges).unwrap(), ["a", "b", "c", "a"]);
}
