//! pytest-benchmark's `--benchmark-json`: one benchmark per test
//! (`fullname`, its `params`), one sample per round of `stats.data`
//! (seconds per iteration); `machine_info` becomes machine facts and
//! `commit_info` the revision.

use crate::{FileFact, Format, ImportError, Imported, json, time_sample};
use perfsleuth_model::{Benchmark, GitInfo, ImpactClass};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Deserialize)]
struct Doc {
    #[serde(default)]
    machine_info: Machine,
    commit_info: Option<Commit>,
    benchmarks: Vec<Bench>,
    datetime: Option<String>,
    version: Option<String>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Machine {
    node: Option<String>,
    machine: Option<String>,
    release: Option<String>,
    python_implementation: Option<String>,
    python_version: Option<String>,
    cpu: BTreeMap<String, Value>,
}

#[derive(Deserialize)]
struct Commit {
    id: Option<String>,
    branch: Option<String>,
    #[serde(default)]
    dirty: bool,
}

#[derive(Deserialize)]
struct Bench {
    fullname: Option<String>,
    name: String,
    #[serde(default)]
    params: Option<BTreeMap<String, Value>>,
    stats: Stats,
}

#[derive(Deserialize)]
struct Stats {
    data: Option<Vec<f64>>,
    mean: Option<f64>,
    stddev: Option<f64>,
    rounds: Option<u64>,
}

pub(crate) fn parse(text: &str) -> Result<Imported, ImportError> {
    let doc: Doc = json(text, Format::PytestBenchmark)?;
    let mut benchmarks = Vec::new();
    for (i, b) in doc.benchmarks.into_iter().enumerate() {
        let mut summaries = Vec::new();
        let data = match (b.stats.data, b.stats.mean) {
            (Some(data), _) => data,
            // A file saved without the rounds: their mean and spread.
            (None, Some(mean)) if mean.is_finite() && mean >= 0.0 => {
                summaries.push(perfsleuth_model::ReportedSummary {
                    metric: "wall".into(),
                    value: mean * 1e9,
                    kind: "mean".into(),
                    lower: None,
                    upper: None,
                    stddev: b
                        .stats
                        .stddev
                        .filter(|s| s.is_finite() && *s >= 0.0)
                        .map(|s| s * 1e9),
                    n: b.stats.rounds,
                });
                Vec::new()
            }
            _ => {
                return Err(ImportError::new(
                    format!("benchmarks[{i}].stats"),
                    "neither `data` nor a finite `mean`",
                    "write the JSON with --benchmark-json (it includes every round's time)",
                ));
            }
        };
        let mut samples = Vec::with_capacity(data.len());
        for (k, t) in data.iter().enumerate() {
            samples.push(time_sample(k, t * 1e9, &|| {
                format!("benchmarks[{i}].stats.data[{k}]")
            })?);
        }
        let parameters = b
            .params
            .unwrap_or_default()
            .into_iter()
            .map(|(k, v)| {
                let v = match v {
                    Value::String(s) => s,
                    other => other.to_string(),
                };
                (k, v)
            })
            .collect();
        let name = b.fullname.unwrap_or(b.name);
        benchmarks.push(Benchmark {
            command: name.clone(),
            name,
            parameters,
            samples,
            summaries,
            ..Benchmark::default()
        });
    }
    let m = &doc.machine_info;
    let mut facts = Vec::new();
    let mut fact = |key: &str, value: Option<String>, class| {
        if let Some(value) = value.filter(|v| !v.is_empty()) {
            facts.push(FileFact {
                key: key.into(),
                value,
                class,
            });
        }
    };
    let cpu_str = |k: &str| m.cpu.get(k).and_then(Value::as_str).map(str::to_string);
    fact("host.name", m.node.clone(), ImpactClass::Context);
    fact("os.arch", m.machine.clone(), ImpactClass::Identity);
    fact("kernel.release", m.release.clone(), ImpactClass::Identity);
    fact("cpu.model", cpu_str("brand_raw"), ImpactClass::Identity);
    fact(
        "cpu.vendor",
        cpu_str("vendor_id_raw"),
        ImpactClass::Identity,
    );
    fact(
        "cpu.logical_cores",
        m.cpu
            .get("count")
            .and_then(Value::as_u64)
            .map(|n| n.to_string()),
        ImpactClass::Identity,
    );
    fact(
        "python.version",
        m.python_version.as_ref().map(|v| {
            format!(
                "{} {v}",
                m.python_implementation.as_deref().unwrap_or("Python")
            )
        }),
        ImpactClass::Identity,
    );
    // "unversioned" when pytest-benchmark found no repository.
    let git = doc.commit_info.and_then(|c| {
        let id =
            c.id.filter(|id| id.len() >= 7 && id.chars().all(|ch| ch.is_ascii_hexdigit()))?;
        Some(GitInfo {
            commit: id,
            branch: c.branch.filter(|b| !b.starts_with('(')),
            dirty: c.dirty,
        })
    });
    Ok(Imported {
        format: Format::PytestBenchmark,
        tool_version: doc.version,
        benchmarks,
        facts,
        measured_at: doc.datetime,
        git,
        notes: Vec::new(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rounds_are_samples_and_machine_info_facts() {
        let text = r#"{"machine_info": {"node": "vm", "machine": "x86_64", "release": "6.1",
            "python_implementation": "CPython", "python_version": "3.11.7",
            "cpu": {"brand_raw": "AMD EPYC", "count": 2}},
          "commit_info": {"id": "0123456789abcdef0123456789abcdef01234567", "branch": "main", "dirty": true},
          "benchmarks": [{"name": "test_fib[5]", "fullname": "t.py::test_fib[5]", "params": {"n": 5},
            "stats": {"median": 4.6e-7, "data": [4.6e-7, 5.0e-7]}}],
          "datetime": "2026-12-02T18:35:00.1", "version": "5.1.0"}"#;
        let i = crate::parse(Format::PytestBenchmark, text).unwrap();
        let b = &i.benchmarks[0];
        assert_eq!(b.name, "t.py::test_fib[5]");
        assert_eq!(b.parameters["n"], "5");
        assert_eq!(b.samples[0].wall_ns, 460);
        assert_eq!(i.tool_version.as_deref(), Some("5.1.0"));
        assert_eq!(i.git.as_ref().unwrap().branch.as_deref(), Some("main"));
        assert!(
            i.facts
                .iter()
                .any(|f| f.key == "python.version" && f.value == "CPython 3.11.7")
        );
    }

    #[test]
    fn summaries_without_data_and_unversioned_commits() {
        let text = r#"{"machine_info": {}, "commit_info": {"id": "unversioned", "branch": "(unknown)"},
          "benchmarks": [{"name": "t", "stats": {"median": 1.0}}]}"#;
        let mean = text.replace(
            r#""median": 1.0"#,
            r#""mean": 1.0, "stddev": 0.5, "rounds": 9"#,
        );
        let i = crate::parse(Format::PytestBenchmark, &mean).unwrap();
        let s = &i.benchmarks[0].summaries[0];
        assert_eq!((s.value, s.stddev, s.n), (1e9, Some(5e8), Some(9)));
        let e = crate::parse(Format::PytestBenchmark, text).unwrap_err();
        assert_eq!(e.at, "benchmarks[0].stats");
        let ok = text.replace(r#""median": 1.0"#, r#""data": [1.0]"#);
        assert_eq!(
            crate::parse(Format::PytestBenchmark, &ok).unwrap().git,
            None
        );
    }
}
