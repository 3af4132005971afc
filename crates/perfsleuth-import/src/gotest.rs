//! The text of `go test -bench`: a result line per benchmark and `-count`
//! repetition, `BenchmarkName-PROCS  N  V ns/op  [V B/op  V allocs/op  V unit…]`.
//! Each line is one sample; `-PROCS` becomes the parameter `procs` and the
//! `pkg:` header the parameter `pkg`; `goos`, `goarch` and `cpu` become
//! machine facts. Other lines (logs, PASS, ok) are skipped.

use crate::{FileFact, Format, ImportError, Imported, time_sample};
use perfsleuth_model::{Benchmark, ImpactClass};

/// Whether some line reads as a `go test -bench` result.
pub(crate) fn looks_like(text: &str) -> bool {
    text.lines().any(|l| {
        let f: Vec<&str> = l.split_whitespace().collect();
        f.len() >= 4
            && f[0].starts_with("Benchmark")
            && f[1].parse::<u64>().is_ok()
            && f[2].parse::<f64>().is_ok()
            && f[3] == "ns/op"
    })
}

/// Go's architecture names as `uname -m` (the fingerprint's `os.arch`) has them.
fn arch(goarch: &str) -> String {
    match goarch {
        "amd64" => "x86_64",
        "arm64" => "aarch64",
        "386" => "i686",
        other => other,
    }
    .to_string()
}

pub(crate) fn parse(text: &str) -> Result<Imported, ImportError> {
    let mut benchmarks: Vec<Benchmark> = Vec::new();
    let mut facts = Vec::new();
    let mut pkg: Option<String> = None;
    let mut fact = |key: &str, value: &str, class| {
        facts.push(FileFact {
            key: key.into(),
            value: value.trim().into(),
            class,
        })
    };
    for (n, line) in text.lines().enumerate() {
        let at = |what: &str| format!("line {}{what}", n + 1);
        if let Some(v) = line.strip_prefix("goos: ") {
            fact("os.kernel", v, ImpactClass::Identity);
            continue;
        }
        if let Some(v) = line.strip_prefix("goarch: ") {
            fact("os.arch", &arch(v.trim()), ImpactClass::Identity);
            continue;
        }
        if let Some(v) = line.strip_prefix("cpu: ") {
            fact("cpu.model", v, ImpactClass::Identity);
            continue;
        }
        if let Some(v) = line.strip_prefix("pkg: ") {
            pkg = Some(v.trim().to_string());
            continue;
        }
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.len() < 2 || !f[0].starts_with("Benchmark") || f[1].parse::<u64>().is_err() {
            continue;
        }
        if (f.len() - 2) % 2 != 0 {
            return Err(ImportError::new(
                at(""),
                format!("`{}`: a value without its unit", line.trim()),
                "give the output of `go test -bench` as it printed it",
            ));
        }
        let (name, procs) = match f[0].rsplit_once('-') {
            Some((n, p)) if p.parse::<u32>().is_ok() => (n, Some(p)),
            _ => (f[0], None),
        };
        let mut wall = None;
        let mut counters = Vec::new();
        for pair in f[2..].chunks(2) {
            let Ok(v) = pair[0].parse::<f64>() else {
                return Err(ImportError::new(
                    at(""),
                    format!("`{}` is not a number", pair[0]),
                    "give the output of `go test -bench` as it printed it",
                ));
            };
            if !v.is_finite() || v < 0.0 {
                return Err(ImportError::new(
                    at(""),
                    format!("{v} {} is not a finite, non-negative measurement", pair[1]),
                    "check the output was written whole",
                ));
            }
            match pair[1] {
                "ns/op" => wall = Some(v),
                "B/op" => counters.push(("bytes_per_op".to_string(), v)),
                "allocs/op" => counters.push(("allocs_per_op".to_string(), v)),
                "MB/s" => counters.push(("mb_per_s".to_string(), v)),
                unit => counters.push((unit.to_string(), v)),
            }
        }
        let Some(ns) = wall else {
            return Err(ImportError::new(
                at(""),
                format!("`{name}` has no ns/op"),
                "every go benchmark line reports ns/op; give the output as go printed it",
            ));
        };
        let mut parameters = std::collections::BTreeMap::new();
        if let Some(p) = procs {
            parameters.insert("procs".to_string(), p.to_string());
        }
        if let Some(p) = &pkg {
            parameters.insert("pkg".to_string(), p.clone());
        }
        let pos = match benchmarks
            .iter()
            .position(|b| b.name == name && b.parameters == parameters)
        {
            Some(p) => p,
            None => {
                benchmarks.push(Benchmark {
                    name: name.to_string(),
                    command: format!("go test -bench {name}"),
                    parameters,
                    ..Benchmark::default()
                });
                benchmarks.len() - 1
            }
        };
        let bench = &mut benchmarks[pos];
        let mut s = time_sample(bench.samples.len(), ns, &|| at(""))?;
        s.counters.extend(counters);
        bench.samples.push(s);
    }
    let mut notes = Vec::new();
    if benchmarks.iter().any(|b| b.samples.len() == 1) {
        notes.push(
            "one sample per benchmark: run with -count N (N ≥ 5) for an interval and a verdict"
                .into(),
        );
    }
    let mut imported = Imported::of(Format::GoTest, benchmarks);
    imported.facts = facts;
    imported.notes = notes;
    Ok(imported)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OUT: &str = "goos: linux\ngoarch: amd64\npkg: example.com/fib\ncpu: AMD EPYC 7763 64-Core Processor\n\
BenchmarkFib10-8   \t 3870352\t       309.9 ns/op\t       0 B/op\t       0 allocs/op\n\
BenchmarkFib10-8   \t 3870352\t       311.2 ns/op\t       0 B/op\t       0 allocs/op\n\
BenchmarkSort/size=100-8 \t   10000\t    104523 ns/op\t    12.00 swaps/op\n\
PASS\nok  \texample.com/fib\t3.456s\n";

    #[test]
    fn lines_are_samples_with_their_metrics() {
        let i = crate::parse(Format::GoTest, OUT).unwrap();
        assert_eq!(i.benchmarks.len(), 2);
        let fib = &i.benchmarks[0];
        assert_eq!(fib.name, "BenchmarkFib10");
        assert_eq!(fib.parameters["procs"], "8");
        assert_eq!(fib.parameters["pkg"], "example.com/fib");
        assert_eq!(fib.samples.len(), 2);
        assert_eq!(fib.samples[1].wall_exact_ns, Some(311.2));
        assert_eq!(fib.samples[0].counters["allocs_per_op"], 0.0);
        assert_eq!(i.benchmarks[1].samples[0].counters["swaps/op"], 12.0);
        assert!(
            i.facts
                .iter()
                .any(|f| f.key == "os.arch" && f.value == "x86_64")
        );
    }

    #[test]
    fn broken_lines_are_refused_with_their_number() {
        let e = crate::parse(Format::GoTest, "BenchmarkX-8 100 12 ns/op 5\n").unwrap_err();
        assert_eq!(e.at, "line 1");
        let e = crate::parse(Format::GoTest, "x\nBenchmarkX-8 100 12 B/op\n").unwrap_err();
        assert!(e.at == "line 2" && e.message.contains("no ns/op"), "{e:?}");
        let e = crate::parse(Format::GoTest, "PASS\nok x 1s\n").unwrap_err();
        assert!(e.message.contains("no benchmark results"));
    }
}
