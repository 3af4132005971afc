//! Helpers for the callgrind tests that run valgrind: a temporary directory,
//! tool detection, compiling C, running callgrind, reading
//! `callgrind_annotate`'s output.

#![allow(dead_code)]

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};

use perfsleuth_measure::callgrind::{SimulationConfig, valgrind_argv};

/// A directory removed on drop.
pub struct TempDir(PathBuf);

impl TempDir {
    pub fn new(tag: &str) -> TempDir {
        static N: AtomicUsize = AtomicUsize::new(0);
        let dir = std::env::temp_dir().join(format!(
            "perfsleuth-{tag}-{}-{}",
            std::process::id(),
            N.fetch_add(1, Ordering::Relaxed)
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        TempDir(dir)
    }

    pub fn path(&self) -> &Path {
        &self.0
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn runs(program: &str, arg: &str) -> bool {
    Command::new(program)
        .arg(arg)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
}

/// The tools of valgrind, gcc (and, if asked, callgrind_annotate) that
/// cannot run here; their names are `perfsleuth_testkit` feature names.
pub fn missing_tools(annotate: bool) -> Vec<&'static str> {
    let mut missing = Vec::new();
    if !runs("valgrind", "--version") {
        missing.push("valgrind");
    }
    if !runs("gcc", "--version") {
        missing.push("gcc");
    }
    // callgrind_annotate --version exits 255 (3.19): starting it is enough.
    let annotate_starts = Command::new("callgrind_annotate")
        .arg("--version")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok();
    if annotate && !annotate_starts {
        missing.push("callgrind_annotate");
    }
    missing
}

/// Returns from the test with a "skipped" line when tools are missing (fails
/// instead when `PERFSLEUTH_TEST_REQUIRE` names one of them).
macro_rules! require_tools {
    ($annotate:expr) => {
        let missing = common::missing_tools($annotate);
        if !missing.is_empty() {
            perfsleuth_testkit::skip_missing(
                &missing,
                format!("{} not installed (CI installs them)", missing.join(", ")),
            );
            return;
        }
    };
}

/// Writes `source` to DIR/NAME.c (an absolute path, so the debug info and
/// callgrind's `fl=` lines carry absolute file names) and compiles it.
pub fn compile(dir: &Path, name: &str, source: &str, extra: &[&str]) -> PathBuf {
    let src = dir.join(format!("{name}.c"));
    std::fs::write(&src, source).unwrap();
    let exe = dir.join(name);
    let out = Command::new("gcc")
        .args(["-g", "-O1", "-fno-inline", "-o"])
        .arg(&exe)
        .arg(&src)
        .args(extra)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "gcc failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    exe
}

/// Runs `program` under our valgrind argv with `extra` callgrind options;
/// returns the exit code and the output files written, sorted.
pub fn callgrind(
    out_dir: &Path,
    program: &[String],
    collect: Option<&str>,
    extra: &[&str],
) -> (Option<i32>, Vec<PathBuf>) {
    let cfg = SimulationConfig {
        out_dir: out_dir.to_path_buf(),
        collect: collect.map(str::to_string),
        cache: perfsleuth_measure::callgrind::CacheModel::DEFAULT,
    };
    let mut argv = valgrind_argv(Path::new("valgrind"), program, &cfg);
    let dash = argv.iter().position(|a| a == "--").unwrap();
    for (i, e) in extra.iter().enumerate() {
        argv.insert(dash + i, e.to_string());
    }
    let out = Command::new(&argv[0])
        .args(&argv[1..])
        .stdin(Stdio::null())
        .output()
        .unwrap();
    let mut files: Vec<PathBuf> = std::fs::read_dir(out_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            p.file_name()
                .and_then(|n| n.to_str())
                .is_some_and(|n| n.starts_with("callgrind.out."))
        })
        .collect();
    files.sort();
    if files.is_empty() {
        eprintln!("valgrind stderr: {}", String::from_utf8_lossy(&out.stderr));
    }
    (out.status.code(), files)
}

/// What `callgrind_annotate --threshold=100 [--inclusive=yes]` prints.
#[derive(Debug)]
pub struct Annotated {
    pub events: Vec<String>,
    pub totals: Vec<u64>,
    /// `(file:function, object or "", costs)` per printed line.
    pub lines: Vec<(String, String, Vec<u64>)>,
}

impl Annotated {
    /// Costs summed per function name (the part after `file:`), all-zero
    /// entries dropped.
    pub fn by_function(&self) -> BTreeMap<String, Vec<u64>> {
        let mut m: BTreeMap<String, Vec<u64>> = BTreeMap::new();
        for (key, _, costs) in &self.lines {
            let name = key.split_once(':').map_or(key.as_str(), |(_, f)| f);
            let e = m.entry(name.to_string()).or_insert(vec![0; costs.len()]);
            for (a, b) in e.iter_mut().zip(costs) {
                *a += b;
            }
        }
        m.retain(|_, v| v.iter().any(|c| *c != 0));
        m
    }

    /// Every printed line whose function part is `name`.
    pub fn named(&self, name: &str) -> Vec<&(String, String, Vec<u64>)> {
        self.lines
            .iter()
            .filter(|(key, _, _)| key.split_once(':').is_some_and(|(_, f)| f == name))
            .collect()
    }
}

pub fn annotate(file: &Path, inclusive: bool) -> Annotated {
    let mut cmd = Command::new("callgrind_annotate");
    cmd.args(["--threshold=100", "--auto=no"]);
    if inclusive {
        cmd.arg("--inclusive=yes");
    }
    // From `/`, so it strips no directory prefix from file names.
    let out = cmd.arg(file).current_dir("/").output().unwrap();
    assert!(
        out.status.success(),
        "callgrind_annotate failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    parse_annotate(&String::from_utf8_lossy(&out.stdout))
}

pub fn parse_annotate(text: &str) -> Annotated {
    let events: Vec<String> = text
        .lines()
        .find_map(|l| l.strip_prefix("Events shown:"))
        .expect("no `Events shown:` line")
        .split_whitespace()
        .map(str::to_string)
        .collect();
    let n = events.len();
    let mut totals = None;
    let mut lines = Vec::new();
    let mut in_functions = false;
    for line in text.lines() {
        if line.ends_with("PROGRAM TOTALS") {
            totals = Some(costs(line, n).0);
        } else if line.ends_with(" file:function") {
            in_functions = true;
        } else if in_functions {
            if line.starts_with("----") {
                continue;
            }
            if line.trim().is_empty() {
                break;
            }
            let (c, rest) = costs(line, n);
            let (key, obj) = match rest.strip_suffix(']').and_then(|r| r.rsplit_once(" [")) {
                Some((k, o)) => (k.to_string(), o.to_string()),
                None => (rest.to_string(), String::new()),
            };
            lines.push((key, obj, c));
        }
    }
    Annotated {
        events,
        totals: totals.expect("no PROGRAM TOTALS line"),
        lines,
    }
}

/// `n` cost columns (`1,234 (5.6%)`, `0`, `.`) and the rest of the line.
fn costs(line: &str, n: usize) -> (Vec<u64>, &str) {
    let mut rest = line;
    let mut v = Vec::with_capacity(n);
    for _ in 0..n {
        rest = rest.trim_start();
        let end = rest.find(' ').unwrap_or(rest.len());
        let word = &rest[..end];
        rest = &rest[end..];
        v.push(if word == "." {
            0
        } else {
            word.replace(',', "")
                .parse()
                .unwrap_or_else(|_| panic!("bad cost `{word}` in `{line}`"))
        });
        let t = rest.trim_start();
        if t.starts_with('(') {
            rest = &t[t.find(')').unwrap() + 1..];
        }
    }
    (v, rest.trim())
}
