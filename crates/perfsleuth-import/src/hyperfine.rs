//! `hyperfine --export-json`: one benchmark per result, one sample per
//! entry of `times` (seconds), with its exit code and, from hyperfine 1.17
//! on, its peak memory.

use crate::{Format, ImportError, Imported, json, time_sample};
use perfsleuth_model::Benchmark;
use serde::Deserialize;
use std::collections::BTreeMap;

#[derive(Deserialize)]
struct Doc {
    results: Vec<Result_>,
}

#[derive(Deserialize)]
struct Result_ {
    command: String,
    times: Option<Vec<f64>>,
    #[serde(default)]
    exit_codes: Vec<Option<i32>>,
    #[serde(default)]
    memory_usage_byte: Vec<u64>,
    #[serde(default)]
    parameters: BTreeMap<String, serde_json::Value>,
}

pub(crate) fn parse(text: &str) -> Result<Imported, ImportError> {
    let doc: Doc = json(text, Format::Hyperfine)?;
    let mut benchmarks = Vec::new();
    let mut memory = false;
    for (i, r) in doc.results.into_iter().enumerate() {
        let Some(times) = r.times else {
            return Err(ImportError::new(
                format!("results[{i}]"),
                "no `times`: only the summary of the runs",
                "export with a hyperfine that writes every run's time (1.6 or later)",
            ));
        };
        let mut samples = Vec::with_capacity(times.len());
        for (k, t) in times.iter().enumerate() {
            let mut s = time_sample(k, t * 1e9, &|| format!("results[{i}].times[{k}]"))?;
            // A run killed by a signal has a null exit code.
            s.exit_code = r.exit_codes.get(k).copied().unwrap_or(Some(0));
            if let Some(&m) = r.memory_usage_byte.get(k) {
                s.peak_rss_bytes = m;
                memory = true;
            }
            samples.push(s);
        }
        let parameters = r
            .parameters
            .into_iter()
            .map(|(k, v)| {
                let v = match v {
                    serde_json::Value::String(s) => s,
                    other => other.to_string(),
                };
                (k, v)
            })
            .collect();
        benchmarks.push(Benchmark {
            name: r.command.clone(),
            command: r.command,
            parameters,
            samples,
            ..Benchmark::default()
        });
    }
    let mut notes = vec![
        "hyperfine exports user and system time only as each command's mean: they are not imported per sample"
            .to_string(),
    ];
    if !memory {
        notes.push(
            "no peak memory per run (hyperfine writes it from 1.17 on): peak RSS reads as 0"
                .to_string(),
        );
    }
    let mut imported = Imported::of(Format::Hyperfine, benchmarks);
    imported.notes = notes;
    Ok(imported)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_exit_codes_memory_and_parameters_are_read() {
        let text = r#"{"results": [{"command": "sleep 0.001", "mean": 0.002,
            "times": [0.0021, 0.0019], "exit_codes": [0, null],
            "memory_usage_byte": [1000, 2000], "parameters": {"n": "1", "k": 2}}]}"#;
        let i = crate::parse(Format::Hyperfine, text).unwrap();
        let b = &i.benchmarks[0];
        assert_eq!(b.name, "sleep 0.001");
        assert_eq!(b.samples[0].wall_ns, 2_100_000);
        assert_eq!(b.samples[1].exit_code, None);
        assert_eq!(b.samples[1].peak_rss_bytes, 2000);
        assert_eq!(b.parameters["n"], "1");
        assert_eq!(b.parameters["k"], "2");
    }

    #[test]
    fn bad_files_name_the_place() {
        let e = crate::parse(
            Format::Hyperfine,
            r#"{"results": [{"command": "a", "times": [0.1, -1]}]}"#,
        )
        .unwrap_err();
        assert_eq!(e.at, "results[0].times[1]");
        let e = crate::parse(
            Format::Hyperfine,
            r#"{"results": [{"command": "a", "mean": 1}]}"#,
        )
        .unwrap_err();
        assert!(e.message.contains("no `times`"));
        let e = crate::parse(Format::Hyperfine, "{\n\"results\": [1,").unwrap_err();
        assert!(e.at.starts_with("line 2"), "{e:?}");
        let e = crate::parse(Format::Hyperfine, r#"{"results": []}"#).unwrap_err();
        assert!(e.message.contains("no benchmark results"));
        let twice =
            r#"{"results": [{"command": "a", "times": [1]}, {"command": "a", "times": [1]}]}"#;
        assert!(
            crate::parse(Format::Hyperfine, twice)
                .unwrap_err()
                .message
                .contains("twice")
        );
    }
}
