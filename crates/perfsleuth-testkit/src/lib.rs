//! Test support shared by perfsleuth's crates (a dev-dependency only).
//!
//! Some tests need a tool or a kernel feature that a developer's machine may
//! lack; there they skip with a `skipped: …` line. CI installs what they
//! need and lists it in [`REQUIRE_VAR`], so there a missing feature fails the
//! test instead of passing it quietly:
//!
//! ```text
//! PERFSLEUTH_TEST_REQUIRE=valgrind,callgrind_annotate,gcc,perf_software,tracefs cargo test --workspace
//! ```
//!
//! One home for this, not a helper per test crate, so every crate's tests
//! read the same variable with the same names.

#![forbid(unsafe_code)]

pub mod fuzz;
mod pg;

pub use pg::{POSTGRES_VAR, fresh_postgres};

use std::ffi::OsString;
use std::fmt::Display;
use std::process::Command;

/// The environment variable listing (comma-separated) the features whose absence fails a test.
pub const REQUIRE_VAR: &str = "PERFSLEUTH_TEST_REQUIRE";

/// Every feature name a test may skip for, with what it means.
pub const FEATURES: &[(&str, &str)] = &[
    ("valgrind", "valgrind runs"),
    ("callgrind_annotate", "valgrind's callgrind_annotate starts"),
    ("gcc", "gcc compiles the test programs"),
    (
        "chromium",
        "Chromium runs headless (the HTML report's browser test)",
    ),
    (
        "x86_64_glibc",
        "the machine is x86-64 with glibc's loader at /lib64/ld-linux-x86-64.so.2 (portable simulation counts)",
    ),
    (
        "perf_software",
        "perf_event software counters open (perf_event_paranoid, seccomp)",
    ),
    (
        "perf_hardware",
        "perf_event hardware counters open (not in most VMs)",
    ),
    (
        "tracefs",
        "tracepoint counters open: tracefs mounted, or mountable in a private mount namespace (root)",
    ),
    ("hyperfine", "hyperfine runs (its --export-json, imported)"),
    (
        "google_benchmark",
        "g++ builds a program against Google Benchmark (Debian's libbenchmark-dev)",
    ),
    (
        "pytest_benchmark",
        "python3 -m pytest runs with the pytest-benchmark plugin",
    ),
    ("go", "go test -bench runs (Debian's golang-go)"),
    (
        "perf",
        "perf record and perf script run (Debian's linux-perf): profiles taken elsewhere, imported",
    ),
    (
        "pyyaml",
        "python3 imports yaml (the CI templates' scripts are read from their YAML)",
    ),
    (
        "junitparser",
        "python3 imports junitparser (reads --export-junit back as CI servers do)",
    ),
    (
        "postgres",
        "a PostgreSQL server at $PERFSLEUTH_TEST_POSTGRES (a URL whose user may create databases; .ci/run starts one)",
    ),
    (
        "bpf",
        "eBPF lock tracing loads: root (or CAP_BPF and CAP_PERFMON), BTF, raw tracepoints, ring buffers",
    ),
    (
        "clang",
        "clang compiles the BPF program (the committed object is checked against it)",
    ),
    (
        "bpftool",
        "bpftool lists the loaded BPF programs (nothing left after --locks)",
    ),
    (
        "hyperfine_scripts",
        "hyperfine's scripts/ in $PERFSLEUTH_HYPERFINE_SCRIPTS (tests/hyperfine-scripts.sh fetches them) and numpy, scipy, matplotlib import",
    ),
];

/// The names listed in [`REQUIRE_VAR`]; panics on a name not in [`FEATURES`],
/// since a misspelt name would otherwise let the test it meant skip quietly.
pub fn required_features() -> Vec<String> {
    let raw = std::env::var_os(REQUIRE_VAR).unwrap_or_default();
    parse(&raw).unwrap_or_else(|e| panic!("{e}"))
}

/// Whether `feature` is listed in [`REQUIRE_VAR`].
pub fn required(feature: &str) -> bool {
    assert!(
        FEATURES.iter().any(|(name, _)| *name == feature),
        "perfsleuth-testkit: unknown feature {feature:?}; add it to FEATURES"
    );
    required_features().iter().any(|f| f == feature)
}

/// Reports that the calling test cannot run (all or part of it) because
/// `feature` is missing, `why` saying how: fails it when the feature is in
/// [`REQUIRE_VAR`], else prints `skipped: {why}` and lets the caller return.
#[track_caller]
pub fn skip(feature: &str, why: impl Display) {
    skip_missing(&[feature], why);
}

/// Like [`skip`] for several missing features at once; fails when any of them is required.
#[track_caller]
pub fn skip_missing(features: &[&str], why: impl Display) {
    if let Some(f) = features.iter().find(|f| required(f)) {
        panic!("{why}, and {REQUIRE_VAR} requires {f:?}: this test must not skip here");
    }
    eprintln!("skipped: {why}");
}

/// Whether every program in `tools` starts (`TOOL --version` succeeds);
/// for the first that does not, reports the skip of `test` with [`skip`].
#[track_caller]
pub fn tools_present(test: &str, tools: &[&str]) -> bool {
    for tool in tools {
        let found = std::process::Command::new(tool)
            .arg("--version")
            .output()
            .is_ok_and(|o| o.status.success());
        if !found {
            skip(tool, format!("{test}: {tool} is not installed"));
            return false;
        }
    }
    true
}

/// A [`REQUIRE_VAR`] name not in [`FEATURES`]: a misspelling, fixed in
/// the variable.
#[derive(Debug, Clone, PartialEq, Eq)]
struct UnknownFeature {
    /// The name as written.
    name: String,
}

impl std::fmt::Display for UnknownFeature {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let known: Vec<&str> = FEATURES.iter().map(|(n, _)| *n).collect();
        write!(
            f,
            "{REQUIRE_VAR} names unknown feature {:?}; known: {}",
            self.name,
            known.join(", ")
        )
    }
}

impl std::error::Error for UnknownFeature {}

/// Splits a [`REQUIRE_VAR`] value; `Err` names the first unknown feature.
fn parse(raw: &OsString) -> Result<Vec<String>, UnknownFeature> {
    let raw = raw.to_string_lossy();
    let mut out = Vec::new();
    for name in raw.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        if !FEATURES.iter().any(|(known, _)| *known == name) {
            return Err(UnknownFeature {
                name: name.to_string(),
            });
        }
        out.push(name.to_string());
    }
    Ok(out)
}

/// Set in the re-run of a test inside its own mount namespace, so the re-run does not re-run itself.
const IN_TRACEFS_NS: &str = "PERFSLEUTH_TEST_IN_TRACEFS_NAMESPACE";

/// What [`rerun_with_tracefs`] found.
#[derive(Debug)]
pub enum Rerun {
    /// The test ran again where tracefs is mounted, and passed.
    Passed,
    /// No re-run: tracefs is mounted already, this is the re-run, or no
    /// private mount namespace could be made (the reason).
    Unavailable(String),
}

/// Where tracefs is missing, runs the integration test `name` (a function at
/// the top of the test target) once more in a private mount namespace that
/// mounts tracefs, as root with util-linux's `unshare` can; panics with its
/// output when that run fails.
///
/// For tests whose own process opens tracepoints: mounting tracefs for the
/// whole machine would change it for everyone, a private namespace changes
/// nothing outside the re-run.
pub fn rerun_with_tracefs(name: &str) -> Rerun {
    if std::env::var_os(IN_TRACEFS_NS).is_some() {
        return Rerun::Unavailable("the private tracefs mount did not help".into());
    }
    if std::path::Path::new("/sys/kernel/tracing/events").is_dir() {
        return Rerun::Unavailable("tracefs is mounted already".into());
    }
    let exe = match std::env::current_exe() {
        Ok(exe) => exe,
        Err(e) => return Rerun::Unavailable(format!("no path to this test binary: {e}")),
    };
    // 97: the mount failed, told apart from the test's own exit codes.
    let out = Command::new("unshare")
        .args(["-m", "sh", "-c"])
        .arg(r#"mount -t tracefs nodev /sys/kernel/tracing || exit 97; exec "$0" "$@""#)
        .arg(&exe)
        .args(["--exact", name, "--nocapture", "--test-threads=1"])
        .env(IN_TRACEFS_NS, "1")
        .output();
    let out = match out {
        Ok(out) => out,
        Err(e) => return Rerun::Unavailable(format!("unshare: {e}")),
    };
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // Without libtest's banner the test never started: unshare could not
    // make the namespace (not root) or the mount failed.
    if !text.contains("\nrunning ") && !text.starts_with("running ") {
        return Rerun::Unavailable(format!(
            "no private tracefs mount ({}): {}",
            out.status,
            text.trim()
        ));
    }
    assert!(
        text.contains("running 1 test"),
        "{name} is not a test of {}:\n{text}",
        exe.display()
    );
    assert!(
        out.status.success(),
        "{name} failed when re-run with tracefs mounted privately:\n{text}"
    );
    // The re-run skipped too (say, the tracepoint is still refused): pass that on.
    match text.lines().find(|l| l.starts_with("skipped: ")) {
        Some(line) => Rerun::Unavailable(format!("re-run with tracefs mounted privately: {line}")),
        None => Rerun::Passed,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_split_on_commas_and_checked() {
        let p = |s: &str| parse(&OsString::from(s));
        assert_eq!(p("").unwrap(), Vec::<String>::new());
        assert_eq!(
            p("valgrind, tracefs,,").unwrap(),
            vec!["valgrind".to_string(), "tracefs".to_string()]
        );
        let err = p("valgrind,valgrnd").unwrap_err();
        assert_eq!(err.name, "valgrnd");
        let err = err.to_string();
        assert!(
            err.contains("\"valgrnd\"") && err.contains(REQUIRE_VAR),
            "{err}"
        );
    }

    #[test]
    fn the_variable_as_set_here_names_only_known_features() {
        // CI sets it for the whole workspace: a typo there fails here, even
        // where no test happens to skip.
        required_features();
    }
}
