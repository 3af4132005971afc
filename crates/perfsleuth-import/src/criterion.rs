//! criterion.rs's `target/criterion`: each benchmark's `new/` directory
//! holds `benchmark.json` (its id) and `sample.json` (per sample, the
//! iteration count and their total time in ns). A sample here is the
//! per-iteration time, total / iterations, as criterion's own estimates
//! use it. `base/` (the previous run criterion compares with) and the
//! report are not read.

use crate::{Format, ImportError, Imported, json, time_sample};
use perfsleuth_model::Benchmark;
use serde::Deserialize;

/// One benchmark's files, as the binary found them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CriterionBench {
    /// Its `new/` directory, for messages.
    pub dir: String,
    /// The text of `new/benchmark.json`.
    pub benchmark_json: String,
    /// The text of `new/sample.json`.
    pub sample_json: String,
}

#[derive(Deserialize)]
struct Id {
    full_id: Option<String>,
    group_id: Option<String>,
    function_id: Option<String>,
    value_str: Option<String>,
}

/// `sample.json`: an object (`sampling_mode`, `iters`, `times`; criterion 0.3
/// and 0.5 write it), or a bare pair of arrays.
#[derive(Deserialize)]
#[serde(untagged)]
enum Samples {
    Object { iters: Vec<f64>, times: Vec<f64> },
    Pair(Vec<f64>, Vec<f64>),
}

/// Reads the benchmarks of a criterion directory, in the order given.
pub fn parse_criterion(benches: &[CriterionBench]) -> Result<Imported, ImportError> {
    let mut benchmarks = Vec::new();
    for b in benches {
        let at = |file: &str, inner: &str| format!("{}/{file}{inner}", b.dir);
        let id: Id = json(&b.benchmark_json, Format::Criterion).map_err(|e| ImportError {
            at: at("benchmark.json", &format!(", {}", e.at)),
            ..e
        })?;
        let samples: Samples =
            json(&b.sample_json, Format::Criterion).map_err(|e| ImportError {
                at: at("sample.json", &format!(", {}", e.at)),
                ..e
            })?;
        let (iters, times) = match samples {
            Samples::Object { iters, times } | Samples::Pair(iters, times) => (iters, times),
        };
        if iters.len() != times.len() {
            return Err(ImportError::new(
                at("sample.json", ""),
                format!("{} iteration counts but {} times", iters.len(), times.len()),
                "the file is damaged; rerun `cargo bench`",
            ));
        }
        let name = id.full_id.unwrap_or_else(|| {
            [id.group_id, id.function_id, id.value_str]
                .into_iter()
                .flatten()
                .collect::<Vec<_>>()
                .join("/")
        });
        let mut out = Vec::with_capacity(times.len());
        for (k, (n, t)) in iters.iter().zip(&times).enumerate() {
            if !(n.is_finite() && *n >= 1.0) {
                return Err(ImportError::new(
                    at("sample.json", &format!(", iters[{k}]")),
                    format!("{n} is not an iteration count"),
                    "the file is damaged; rerun `cargo bench`",
                ));
            }
            out.push(time_sample(k, t / n, &|| {
                at("sample.json", &format!(", times[{k}]"))
            })?);
        }
        benchmarks.push(Benchmark {
            command: format!("cargo bench -- {name}"),
            name,
            samples: out,
            ..Benchmark::default()
        });
    }
    crate::checked(Imported::of(Format::Criterion, benchmarks))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bench(id: &str, samples: &str) -> CriterionBench {
        CriterionBench {
            dir: "target/criterion/fib/new".into(),
            benchmark_json: id.into(),
            sample_json: samples.into(),
        }
    }

    #[test]
    fn per_iteration_times_from_both_sample_layouts() {
        let id =
            r#"{"group_id": "fib", "function_id": "20", "value_str": null, "full_id": "fib/20"}"#;
        let new = bench(
            id,
            r#"{"sampling_mode": "Linear", "iters": [2, 4], "times": [41.0, 80.0]}"#,
        );
        let old = bench(r#"{"group_id": "sort"}"#, "[[10, 20], [1000, 2100]]");
        let i = parse_criterion(&[new, old]).unwrap();
        assert_eq!(i.benchmarks[0].name, "fib/20");
        assert_eq!(i.benchmarks[0].samples[0].wall_exact_ns, Some(20.5));
        assert_eq!(i.benchmarks[0].samples[1].wall_ns, 20);
        assert_eq!(i.benchmarks[1].name, "sort");
        assert_eq!(i.benchmarks[1].samples[1].wall_ns, 105);
    }

    #[test]
    fn damaged_files_name_the_file() {
        let e = parse_criterion(&[bench("{}", r#"{"iters": [1], "times": [1, 2]}"#)]).unwrap_err();
        assert!(
            e.at.ends_with("sample.json") && e.message.contains("1 iteration counts"),
            "{e:?}"
        );
        let e = parse_criterion(&[bench("{", "[]")]).unwrap_err();
        assert!(e.at.contains("benchmark.json, line 1"), "{e:?}");
        let e = parse_criterion(&[bench("{}", r#"{"iters": [0], "times": [1]}"#)]).unwrap_err();
        assert!(e.at.ends_with("iters[0]"), "{e:?}");
    }
}
