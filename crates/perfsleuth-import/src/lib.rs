//! Other tools' benchmark results as perfsleuth benchmarks and samples (or,
//! for a format that keeps none, the summaries it reports).
//!
//! Pure parsing: text in, [`Imported`] out. Reading the files (bounded),
//! capturing this machine and storing the run are the binary's; a criterion
//! directory arrives as the texts of its benchmarks' files
//! ([`CriterionBench`]). Every parser checks what it reads (finite,
//! non-negative times, known units, unique names, at least one sample) and
//! says where in the file a problem is.

mod bmf;
mod callgrind;
pub mod callgrind_format;
mod criterion;
mod gbench;
mod gotest;
mod gungraun;
mod hyperfine;
mod pytest;
pub mod stacks;

pub use criterion::{CriterionBench, parse_criterion};

use perfsleuth_model::{Benchmark, GitInfo, ImpactClass, Sample};
use std::collections::{BTreeMap, BTreeSet};
use std::fmt;

/// A results format perfsleuth reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// `hyperfine --export-json`.
    Hyperfine,
    /// criterion.rs's `target/criterion` directory.
    Criterion,
    /// Google Benchmark's `--benchmark_format=json` (or `--benchmark_out`).
    GoogleBenchmark,
    /// pytest-benchmark's `--benchmark-json`.
    PytestBenchmark,
    /// The text `go test -bench` prints.
    GoTest,
    /// A `callgrind.out` file (valgrind's callgrind): a simulation-mode run.
    Callgrind,
    /// The text gungraun (iai-callgrind) prints under `cargo bench`: a simulation-mode run.
    Gungraun,
    /// Bencher Metric Format JSON: summaries, no samples.
    Bmf,
}

impl Format {
    /// Every format, in the order `--format` lists them.
    pub const ALL: [Format; 8] = [
        Format::Hyperfine,
        Format::Criterion,
        Format::GoogleBenchmark,
        Format::PytestBenchmark,
        Format::GoTest,
        Format::Callgrind,
        Format::Gungraun,
        Format::Bmf,
    ];

    /// The name `--format` takes.
    pub fn name(self) -> &'static str {
        match self {
            Format::Hyperfine => "hyperfine",
            Format::Criterion => "criterion",
            Format::GoogleBenchmark => "google-benchmark",
            Format::PytestBenchmark => "pytest-benchmark",
            Format::GoTest => "go",
            Format::Callgrind => "callgrind",
            Format::Gungraun => "gungraun",
            Format::Bmf => "bmf",
        }
    }

    /// The tool, as its users know it.
    pub fn tool(self) -> &'static str {
        match self {
            Format::Hyperfine => "hyperfine",
            Format::Criterion => "criterion.rs",
            Format::GoogleBenchmark => "Google Benchmark",
            Format::PytestBenchmark => "pytest-benchmark",
            Format::GoTest => "go test -bench",
            Format::Callgrind => "callgrind",
            Format::Gungraun => "gungraun (iai-callgrind)",
            Format::Bmf => "Bencher Metric Format",
        }
    }

    /// The format a `--format` value names, aliases included.
    pub fn from_name(s: &str) -> Option<Format> {
        Some(match s.to_ascii_lowercase().as_str() {
            "hyperfine" => Format::Hyperfine,
            "criterion" => Format::Criterion,
            "google-benchmark" | "googlebenchmark" | "gbench" => Format::GoogleBenchmark,
            "pytest-benchmark" | "pytest" => Format::PytestBenchmark,
            "go" | "go-test" | "gotest" => Format::GoTest,
            "callgrind" | "callgrind.out" => Format::Callgrind,
            "gungraun" | "iai-callgrind" | "iai" => Format::Gungraun,
            "bmf" | "bencher" => Format::Bmf,
            _ => return None,
        })
    }
}

impl fmt::Display for Format {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// A fact about the machine that the file itself records.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileFact {
    /// The fingerprint key it fills (`host.name`, `cpu.cache.l2.size`).
    pub key: String,
    /// Its value, written as perfsleuth writes that key.
    pub value: String,
    /// Its impact class, as for the same key captured natively.
    pub class: ImpactClass,
}

/// What a file held, ready to become a stored run.
#[derive(Debug, Clone, PartialEq)]
pub struct Imported {
    /// The format it was read as.
    pub format: Format,
    /// The tool's version, when the file says.
    pub tool_version: Option<String>,
    /// The benchmarks, each with its samples (per-iteration times).
    pub benchmarks: Vec<Benchmark>,
    /// Machine facts the file carries.
    pub facts: Vec<FileFact>,
    /// When the file says it was measured (RFC 3339).
    pub measured_at: Option<String>,
    /// The revision the file says it measured.
    pub git: Option<GitInfo>,
    /// What was read but not imported, or reads differently here, one line each.
    pub notes: Vec<String>,
}

/// A problem with the file: where, what, and what to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportError {
    /// Where in the file: "line 3, column 7", "results[2].times[4]".
    pub at: String,
    /// What is wrong.
    pub message: String,
    /// What to do about it.
    pub hint: String,
}

impl fmt::Display for ImportError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.at.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.at, self.message)
        }
    }
}

impl std::error::Error for ImportError {}

impl Imported {
    /// The benchmarks read as `format`, with nothing else known yet.
    fn of(format: Format, benchmarks: Vec<Benchmark>) -> Imported {
        Imported {
            format,
            tool_version: None,
            benchmarks,
            facts: Vec::new(),
            measured_at: None,
            git: None,
            notes: Vec::new(),
        }
    }

    /// The run's mode: simulation for callgrind's counts, walltime for times.
    pub fn mode(&self) -> perfsleuth_model::Mode {
        match self.format {
            Format::Callgrind | Format::Gungraun => perfsleuth_model::Mode::Simulation,
            _ => perfsleuth_model::Mode::Walltime,
        }
    }
}

impl ImportError {
    fn new(at: impl Into<String>, message: impl Into<String>, hint: impl Into<String>) -> Self {
        ImportError {
            at: at.into(),
            message: message.into(),
            hint: hint.into(),
        }
    }
}

/// What [`detect`] keeps of a top-level JSON value: whether it is an array.
#[derive(Debug, PartialEq)]
enum Shape {
    Array,
    Other,
}

impl<'de> serde::Deserialize<'de> for Shape {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Shape, D::Error> {
        d.deserialize_any(ShapeVisitor)
    }
}

/// Reads any JSON value into its [`Shape`], skipping what is inside.
struct ShapeVisitor;

impl<'de> serde::de::Visitor<'de> for ShapeVisitor {
    type Value = Shape;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut a: A) -> Result<Shape, A::Error> {
        while a.next_element::<serde::de::IgnoredAny>()?.is_some() {}
        Ok(Shape::Array)
    }

    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut a: A) -> Result<Shape, A::Error> {
        while a
            .next_entry::<serde::de::IgnoredAny, serde::de::IgnoredAny>()?
            .is_some()
        {}
        Ok(Shape::Other)
    }

    fn visit_bool<E>(self, _: bool) -> Result<Shape, E> {
        Ok(Shape::Other)
    }

    fn visit_i64<E>(self, _: i64) -> Result<Shape, E> {
        Ok(Shape::Other)
    }

    fn visit_u64<E>(self, _: u64) -> Result<Shape, E> {
        Ok(Shape::Other)
    }

    fn visit_f64<E>(self, _: f64) -> Result<Shape, E> {
        Ok(Shape::Other)
    }

    fn visit_str<E>(self, _: &str) -> Result<Shape, E> {
        Ok(Shape::Other)
    }

    fn visit_unit<E>(self) -> Result<Shape, E> {
        Ok(Shape::Other)
    }
}

/// The format of a file's text, from its shape; None when it is none of them.
pub fn detect(text: &str) -> Option<Format> {
    let t = text.trim_start();
    if t.starts_with('{') {
        // The top level's keys and whether each value is an array, the
        // rest checked but not built: building the whole document was a
        // fifth of an import of 100 000 results, done again by the parser.
        let o: BTreeMap<String, Shape> = serde_json::from_str(t).ok()?;
        if o.get("results") == Some(&Shape::Array) {
            return Some(Format::Hyperfine);
        }
        if o.contains_key("context") && o.contains_key("benchmarks") {
            return Some(Format::GoogleBenchmark);
        }
        if o.contains_key("machine_info") && o.contains_key("benchmarks") {
            return Some(Format::PytestBenchmark);
        }
        let v: serde_json::Value = serde_json::from_str(t).ok()?;
        return bmf::looks_like(&v).then_some(Format::Bmf);
    }
    if callgrind::looks_like(text) {
        return Some(Format::Callgrind);
    }
    if gungraun::looks_like(text) {
        return Some(Format::Gungraun);
    }
    gotest::looks_like(text).then_some(Format::GoTest)
}

/// For text that starts like JSON but does not parse (cut short, say):
/// where and why, so the user hears that rather than "unknown format".
pub fn broken_json(text: &str) -> Option<ImportError> {
    let t = text.trim_start();
    if !(t.starts_with('{') || t.starts_with('[')) {
        return None;
    }
    let e = serde_json::from_str::<serde_json::Value>(t).err()?;
    Some(ImportError::new(
        format!("line {}, column {}", e.line(), e.column()),
        format!("not valid JSON: {e}"),
        "the file may be cut short; give the whole file the tool wrote",
    ))
}

/// Parses `text` as `format`. A criterion directory is not text: see
/// [`parse_criterion`].
pub fn parse(format: Format, text: &str) -> Result<Imported, ImportError> {
    let imported = match format {
        Format::Hyperfine => hyperfine::parse(text)?,
        Format::GoogleBenchmark => gbench::parse(text)?,
        Format::PytestBenchmark => pytest::parse(text)?,
        Format::GoTest => gotest::parse(text)?,
        Format::Callgrind => callgrind::parse(text)?,
        Format::Gungraun => gungraun::parse(text)?,
        Format::Bmf => bmf::parse(text)?,
        Format::Criterion => {
            return Err(ImportError::new(
                "",
                "criterion results are a directory, not a file",
                "import target/criterion (or one benchmark's directory under it)",
            ));
        }
    };
    checked(imported)
}

/// Parses JSON, naming the line and column of a syntax error and the
/// format it was expected to be.
fn json<T: serde::de::DeserializeOwned>(text: &str, format: Format) -> Result<T, ImportError> {
    serde_json::from_str(text).map_err(|e| {
        ImportError::new(
            format!("line {}, column {}", e.line(), e.column()),
            format!("not {} JSON: {e}", format.tool()),
            format!(
                "give a file written by {} (or choose the right --format; `--format auto` detects it)",
                format.tool()
            ),
        )
    })
}

/// A sample of one per-iteration time in nanoseconds: `wall_ns` rounded,
/// the exact value kept when it has a fraction. `at` names it in errors.
fn time_sample(iteration: usize, ns: f64, at: &dyn Fn() -> String) -> Result<Sample, ImportError> {
    if !ns.is_finite() || ns < 0.0 {
        return Err(ImportError::new(
            at(),
            format!("the time {ns} is not a finite, non-negative number"),
            "a benchmark time must be a duration; check the file was written whole",
        ));
    }
    if ns > u64::MAX as f64 {
        return Err(ImportError::new(
            at(),
            format!("the time {ns} ns is too large"),
            "check the unit of the file's times",
        ));
    }
    Ok(Sample {
        iteration: u32::try_from(iteration).unwrap_or(u32::MAX),
        wall_ns: ns.round() as u64,
        wall_exact_ns: (ns.fract() != 0.0).then_some(ns),
        exit_code: Some(0),
        ..Sample::default()
    })
}

/// Nanoseconds per unit of a time unit name ("ns", "us", "ms", "s").
fn unit_ns(unit: &str) -> Option<f64> {
    Some(match unit {
        "ns" => 1.0,
        "us" | "µs" => 1e3,
        "ms" => 1e6,
        "s" => 1e9,
        _ => return None,
    })
}

/// The checks every format shares: at least one benchmark, each with a
/// sample, and no name twice (a second one would be compared as the first).
fn checked(imported: Imported) -> Result<Imported, ImportError> {
    let tool = imported.format.tool();
    if imported.benchmarks.is_empty() {
        return Err(ImportError::new(
            "",
            format!("no benchmark results in this {tool} output"),
            "run the benchmarks first (or check that this is their output, not a log)",
        ));
    }
    let mut seen = BTreeSet::new();
    for b in &imported.benchmarks {
        if !seen.insert((b.name.as_str(), &b.parameters)) {
            return Err(ImportError::new(
                format!("benchmark `{}`", b.name),
                "this name appears twice",
                "give each benchmark its own name; perfsleuth compares results by name",
            ));
        }
        if b.samples.is_empty() && b.summaries.is_empty() {
            return Err(ImportError::new(
                format!("benchmark `{}`", b.name),
                "no samples",
                "the file holds no measurement of it",
            ));
        }
    }
    Ok(imported)
}

/// "48 KiB" for 49152 bytes: a cache size as the fingerprint writes it.
fn kib(bytes: u64) -> String {
    format!("{} KiB", bytes / 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_names_round_trip_and_aliases_resolve() {
        for f in Format::ALL {
            assert_eq!(Format::from_name(f.name()), Some(f));
        }
        assert_eq!(Format::from_name("gbench"), Some(Format::GoogleBenchmark));
        assert_eq!(Format::from_name("PYTEST"), Some(Format::PytestBenchmark));
        assert_eq!(Format::from_name("bencher"), Some(Format::Bmf));
        assert_eq!(Format::from_name("junit"), None);
    }

    #[test]
    fn time_samples_keep_the_fraction_and_refuse_nonsense() {
        let at = || "x".to_string();
        let s = time_sample(3, 21.5, &at).unwrap();
        assert_eq!(
            (s.iteration, s.wall_ns, s.wall_exact_ns),
            (3, 22, Some(21.5))
        );
        assert_eq!(time_sample(0, 40.0, &at).unwrap().wall_exact_ns, None);
        for bad in [f64::NAN, -1.0, f64::INFINITY, 1e30] {
            assert!(time_sample(0, bad, &at).is_err(), "{bad}");
        }
    }

    #[test]
    fn detection_tells_the_formats_apart() {
        assert_eq!(detect(r#"{"results": []}"#), Some(Format::Hyperfine));
        // Only the top level's shape is kept: nested values of every kind
        // are skipped, `results` must be an array, and broken JSON is none.
        assert_eq!(
            detect(r#"{"x": [1, -2, 2.5e3, "s", true, null, {"a": [{}]}], "results": [{"b": 1}]}"#),
            Some(Format::Hyperfine)
        );
        assert_eq!(detect(r#"{"results": {}}"#), None);
        assert_eq!(detect(r#"{"results": [1, "#), None);
        assert_eq!(
            detect(r#"{"context": {}, "benchmarks": []}"#),
            Some(Format::GoogleBenchmark)
        );
        assert_eq!(
            detect(r#"{"machine_info": {}, "benchmarks": []}"#),
            Some(Format::PytestBenchmark)
        );
        assert_eq!(
            detect("goos: linux\nBenchmarkX-8 \t 100 \t 12.5 ns/op\nPASS\n"),
            Some(Format::GoTest)
        );
        assert_eq!(detect(r#"{"other": 1}"#), None);
        assert_eq!(
            detect(r#"{"a": {"latency": {"value": 1}}}"#),
            Some(Format::Bmf)
        );
        assert_eq!(detect("hello"), None);
    }
}
