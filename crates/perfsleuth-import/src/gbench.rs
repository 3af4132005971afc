//! Google Benchmark's JSON: each repetition of a benchmark (`run_type`
//! "iteration") is one sample of its per-iteration real time; CPU time and
//! user counters go with it. The aggregates (mean, median, stddev, cv) are
//! recomputed from the samples, so they are not imported. The `context`
//! becomes machine facts.

use crate::{FileFact, Format, ImportError, Imported, json, kib, time_sample, unit_ns};
use perfsleuth_model::{Benchmark, ImpactClass, Sample};
use serde::Deserialize;
use serde_json::Value;
use std::collections::BTreeMap;

#[derive(Deserialize)]
struct Doc {
    context: Context,
    benchmarks: Vec<Entry>,
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct Context {
    date: Option<String>,
    host_name: Option<String>,
    num_cpus: Option<u64>,
    mhz_per_cpu: Option<f64>,
    cpu_scaling_enabled: Option<bool>,
    caches: Vec<Cache>,
    library_build_type: Option<String>,
    library_version: Option<String>,
}

#[derive(Deserialize)]
struct Cache {
    #[serde(rename = "type")]
    kind: String,
    level: u32,
    size: u64,
}

/// Fields of a result entry that are not user counters.
const FIELDS: &[&str] = &[
    "name",
    "family_index",
    "per_family_instance_index",
    "run_name",
    "run_type",
    "repetitions",
    "repetition_index",
    "threads",
    "iterations",
    "real_time",
    "cpu_time",
    "time_unit",
    "aggregate_name",
    "aggregate_unit",
    "label",
    "error_occurred",
    "error_message",
    "skipped",
    "skip_message",
    "big_o",
    "rms",
    "complexity",
];

/// A benchmark's mean and stddev aggregates (ns) and its repetitions.
type Aggregates = (Option<f64>, Option<f64>, Option<u64>);

/// One result entry of the `benchmarks` array.
type Entry = serde_json::Map<String, Value>;

/// The aggregate entries: run_name → (mean ns, stddev ns, repetitions),
/// and the names in the order first listed.
#[derive(Default)]
struct Aggregated {
    by_name: BTreeMap<String, Aggregates>,
    order: Vec<String>,
}

pub(crate) fn parse(text: &str) -> Result<Imported, ImportError> {
    let doc: Doc = json(text, Format::GoogleBenchmark)?;
    let mut notes = Vec::new();
    let (mut benchmarks, aggregated) = repetitions(&doc.benchmarks, &mut notes)?;
    let summarised = aggregates_only(&mut benchmarks, aggregated)?;
    if summarised > 0 {
        notes.push(format!(
            "{summarised} benchmark(s) only as aggregates (--benchmark_report_aggregates_only): their mean, stddev and repetitions are kept and compared by Welch's t; without that flag every repetition is a sample"
        ));
    }
    if benchmarks.iter().any(|b| b.samples.len() == 1) {
        notes.push(
            "one sample per benchmark: run with --benchmark_repetitions=N (N ≥ 5) for an interval and a verdict"
                .into(),
        );
    }
    let c = &doc.context;
    let facts = context_facts(c, &mut notes);
    Ok(Imported {
        format: Format::GoogleBenchmark,
        tool_version: c.library_version.clone(),
        benchmarks,
        facts,
        measured_at: c.date.clone(),
        git: None,
        notes,
    })
}

/// The benchmarks of the repetitions (`run_type` "iteration"), in the
/// order first listed, and the aggregates; a note per benchmark that
/// reported an error.
fn repetitions(
    entries: &[Entry],
    notes: &mut Vec<String>,
) -> Result<(Vec<Benchmark>, Aggregated), ImportError> {
    let mut order: Vec<String> = Vec::new();
    let mut by_name: BTreeMap<String, Benchmark> = BTreeMap::new();
    let mut aggregated = Aggregated::default();
    for (i, e) in entries.iter().enumerate() {
        let str_of = |k: &str| e.get(k).and_then(Value::as_str);
        let Some(name) = str_of("run_name").or_else(|| str_of("name")) else {
            return Err(ImportError::new(
                format!("benchmarks[{i}].name"),
                "a result without a name",
                "give Google Benchmark's own JSON output",
            ));
        };
        if str_of("run_type") == Some("aggregate") {
            aggregated.add(name, e);
            continue;
        }
        if e.get("error_occurred").and_then(Value::as_bool) == Some(true)
            || e.get("skipped").and_then(Value::as_bool) == Some(true)
        {
            notes.push(format!(
                "{name}: skipped, the benchmark reported an error: {}",
                str_of("error_message")
                    .or(str_of("skip_message"))
                    .unwrap_or("no message")
            ));
            continue;
        }
        let samples = by_name.get(name).map_or(0, |b| b.samples.len());
        let s = sample(e, i, samples)?;
        let bench = by_name.entry(name.to_string()).or_insert_with(|| {
            order.push(name.to_string());
            Benchmark {
                name: name.to_string(),
                command: name.to_string(),
                ..Benchmark::default()
            }
        });
        if let Some(t) = e
            .get("threads")
            .and_then(Value::as_f64)
            .filter(|t| *t > 1.0)
        {
            bench.parameters.insert("threads".into(), t.to_string());
        }
        bench.samples.push(s);
    }
    let benchmarks = order.iter().filter_map(|n| by_name.remove(n)).collect();
    Ok((benchmarks, aggregated))
}

impl Aggregated {
    /// Takes in aggregate entry `e` of benchmark `name`.
    fn add(&mut self, name: &str, e: &Entry) {
        let str_of = |k: &str| e.get(k).and_then(Value::as_str);
        let scale = unit_ns(str_of("time_unit").unwrap_or("ns"));
        let value = e
            .get("real_time")
            .and_then(Value::as_f64)
            .zip(scale)
            .map(|(v, s)| v * s);
        let entry = self.by_name.entry(name.to_string()).or_insert_with(|| {
            self.order.push(name.to_string());
            (None, None, None)
        });
        entry.2 = e.get("repetitions").and_then(Value::as_u64).or(entry.2);
        match str_of("aggregate_name") {
            Some("mean") => entry.0 = value,
            Some("stddev") => entry.1 = value,
            _ => {}
        }
    }
}

/// The sample of repetition `e` (entry `i`), the `index`th of its
/// benchmark: its real time, CPU time and user counters.
fn sample(e: &Entry, i: usize, index: usize) -> Result<Sample, ImportError> {
    let at = |field: &str| format!("benchmarks[{i}].{field}");
    let num_of = |k: &str| e.get(k).and_then(Value::as_f64);
    let unit = e.get("time_unit").and_then(Value::as_str).unwrap_or("ns");
    let Some(scale) = unit_ns(unit) else {
        return Err(ImportError::new(
            at("time_unit"),
            format!("unknown time unit `{unit}`"),
            "Google Benchmark writes ns, us, ms or s",
        ));
    };
    let Some(real) = num_of("real_time") else {
        return Err(ImportError::new(
            at("real_time"),
            "no real_time",
            "give Google Benchmark's own JSON output",
        ));
    };
    let mut s = time_sample(index, real * scale, &|| at("real_time"))?;
    if let Some(cpu) = num_of("cpu_time") {
        if !cpu.is_finite() || cpu < 0.0 {
            return Err(ImportError::new(
                at("cpu_time"),
                format!("the time {cpu} is not a finite, non-negative number"),
                "check the file was written whole",
            ));
        }
        s.counters.insert("cpu_ns".into(), cpu * scale);
    }
    for (k, v) in e {
        if FIELDS.contains(&k.as_str()) {
            continue;
        }
        if let Some(x) = v.as_f64().filter(|x| x.is_finite()) {
            s.counters.insert(k.clone(), x);
        }
    }
    Ok(s)
}

/// `--benchmark_report_aggregates_only`: the mean and its spread are all
/// there is of a benchmark without repetitions; each becomes a benchmark
/// of its summary. Returns how many.
fn aggregates_only(
    benchmarks: &mut Vec<Benchmark>,
    aggregated: Aggregated,
) -> Result<usize, ImportError> {
    let mut summarised = 0;
    for name in aggregated.order {
        if benchmarks.iter().any(|b| b.name == name) {
            continue;
        }
        let (Some(mean), sd, n) = aggregated.by_name[&name] else {
            continue;
        };
        if !mean.is_finite() || mean < 0.0 || sd.is_some_and(|s| !s.is_finite() || s < 0.0) {
            return Err(ImportError::new(
                format!("benchmark `{name}`"),
                "its aggregates are not finite, non-negative times",
                "check the file was written whole",
            ));
        }
        summarised += 1;
        benchmarks.push(Benchmark {
            command: name.clone(),
            summaries: vec![perfsleuth_model::ReportedSummary {
                metric: "wall".into(),
                value: mean,
                kind: "mean".into(),
                lower: None,
                upper: None,
                stddev: sd,
                n,
            }],
            name,
            ..Benchmark::default()
        });
    }
    Ok(summarised)
}

/// The machine facts of Google Benchmark's `context`; a note where it says
/// the times may mislead (frequency scaling, a debug build of the library).
fn context_facts(c: &Context, notes: &mut Vec<String>) -> Vec<FileFact> {
    let mut facts = Vec::new();
    let mut fact = |key: &str, value: String, class| {
        facts.push(FileFact {
            key: key.into(),
            value,
            class,
        })
    };
    if let Some(h) = &c.host_name {
        fact("host.name", h.clone(), ImpactClass::Context);
    }
    if let Some(n) = c.num_cpus {
        fact("cpu.logical_cores", n.to_string(), ImpactClass::Identity);
    }
    if let Some(m) = c.mhz_per_cpu {
        fact("cpu.mhz", format!("{m}"), ImpactClass::Performance);
    }
    if let Some(s) = c.cpu_scaling_enabled {
        fact(
            "cpu.freq.scaling",
            if s { "enabled" } else { "disabled" }.into(),
            ImpactClass::Performance,
        );
        if s {
            notes.push("Google Benchmark saw CPU frequency scaling enabled: times may move with the governor".into());
        }
    }
    for cache in &c.caches {
        let name = match (cache.level, cache.kind.as_str()) {
            (1, "Data") => "l1d".to_string(),
            (1, "Instruction") => "l1i".to_string(),
            (l, _) => format!("l{l}"),
        };
        fact(
            &format!("cpu.cache.{name}.size"),
            kib(cache.size),
            ImpactClass::Identity,
        );
    }
    if let Some(b) = &c.library_build_type {
        fact(
            "benchmark.library_build",
            b.clone(),
            ImpactClass::Performance,
        );
        if b == "debug" {
            notes.push(
                "the Google Benchmark library itself was a debug build (its context says so; Debian's package reports this too)"
                    .into(),
            );
        }
    }
    facts
}

#[cfg(test)]
mod tests {
    use super::*;

    const TWO: &str = r#"{"context": {"date": "2026-12-02T18:34:05+00:00", "host_name": "vm",
        "num_cpus": 2, "mhz_per_cpu": 2596, "cpu_scaling_enabled": false,
        "caches": [{"type": "Data", "level": 1, "size": 49152, "num_sharing": 1},
                   {"type": "Unified", "level": 3, "size": 33554432, "num_sharing": 2}],
        "library_build_type": "release"},
      "benchmarks": [
        {"name": "BM_a/64", "run_name": "BM_a/64", "run_type": "iteration", "repetitions": 2,
         "repetition_index": 0, "threads": 1, "iterations": 100, "real_time": 21.5,
         "cpu_time": 21.0, "time_unit": "ns", "items": 64},
        {"name": "BM_a/64", "run_name": "BM_a/64", "run_type": "iteration", "repetitions": 2,
         "repetition_index": 1, "threads": 1, "iterations": 100, "real_time": 1.5,
         "cpu_time": 1.4, "time_unit": "us", "items": 64},
        {"name": "BM_a/64_mean", "run_name": "BM_a/64", "run_type": "aggregate",
         "aggregate_name": "mean", "real_time": 11.5, "time_unit": "ns"}]}"#;

    #[test]
    fn repetitions_are_samples_in_nanoseconds_with_counters_and_facts() {
        let i = crate::parse(Format::GoogleBenchmark, TWO).unwrap();
        assert_eq!(i.benchmarks.len(), 1);
        let b = &i.benchmarks[0];
        assert_eq!(b.samples.len(), 2);
        assert_eq!(b.samples[0].wall_exact_ns, Some(21.5));
        assert_eq!(b.samples[1].wall_ns, 1500);
        assert_eq!(b.samples[1].counters["cpu_ns"], 1400.0);
        assert_eq!(b.samples[0].counters["items"], 64.0);
        let f = |k: &str| i.facts.iter().find(|f| f.key == k).map(|f| f.value.clone());
        assert_eq!(f("cpu.cache.l1d.size").as_deref(), Some("48 KiB"));
        assert_eq!(f("cpu.cache.l3.size").as_deref(), Some("32768 KiB"));
        assert_eq!(f("host.name").as_deref(), Some("vm"));
        assert_eq!(i.measured_at.as_deref(), Some("2026-12-02T18:34:05+00:00"));
    }

    #[test]
    fn aggregates_alone_become_a_summary_and_unknown_units_are_refused() {
        let agg = r#"{"context": {}, "benchmarks": [
            {"name": "BM_a_mean", "run_name": "BM_a", "run_type": "aggregate", "repetitions": 5,
             "aggregate_name": "mean", "real_time": 2, "time_unit": "us"},
            {"name": "BM_a_stddev", "run_name": "BM_a", "run_type": "aggregate", "repetitions": 5,
             "aggregate_name": "stddev", "real_time": 0.1, "time_unit": "us"}]}"#;
        let i = crate::parse(Format::GoogleBenchmark, agg).unwrap();
        let s = &i.benchmarks[0].summaries[0];
        assert_eq!((s.value, s.stddev, s.n), (2000.0, Some(100.0), Some(5)));
        assert!(i.benchmarks[0].samples.is_empty());
        let unit = r#"{"context": {}, "benchmarks": [{"name": "BM_a", "run_type": "iteration",
            "real_time": 1, "time_unit": "fortnights"}]}"#;
        let e = crate::parse(Format::GoogleBenchmark, unit).unwrap_err();
        assert_eq!(e.at, "benchmarks[0].time_unit");
    }
}
