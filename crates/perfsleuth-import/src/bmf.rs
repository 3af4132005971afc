//! Bencher Metric Format: `{"benchmark": {"measure": {"value": v,
//! "lower_value": l, "upper_value": u}}}`. A summary per benchmark and
//! measure, no samples: `latency` (ns) is the wall time, `throughput` the
//! throughput, any other measure a metric of its own name.

use crate::{Format, ImportError, Imported};
use perfsleuth_model::{Benchmark, ReportedSummary};
use serde_json::Value;

/// Whether a parsed JSON document has the shape of BMF.
pub(crate) fn looks_like(v: &Value) -> bool {
    let Some(o) = v.as_object() else {
        return false;
    };
    !o.is_empty()
        && o.values().all(|m| {
            m.as_object().is_some_and(|m| {
                !m.is_empty()
                    && m.values().all(|x| {
                        x.as_object()
                            .is_some_and(|x| x.get("value").is_some_and(Value::is_number))
                    })
            })
        })
}

pub(crate) fn parse(text: &str) -> Result<Imported, ImportError> {
    let doc: serde_json::Map<String, Value> = crate::json(text, Format::Bmf)?;
    let mut benchmarks = Vec::new();
    // By name, whatever order serde_json's map keeps (it depends on a
    // feature another crate may turn on).
    let mut names: Vec<&String> = doc.keys().collect();
    names.sort();
    for name in names {
        let measures = &doc[name];
        let Some(measures) = measures.as_object() else {
            return Err(ImportError::new(
                name.clone(),
                "not an object of measures",
                "BMF maps each benchmark to {\"measure\": {\"value\": …}}",
            ));
        };
        let mut summaries = Vec::new();
        for (measure, m) in measures {
            let at = || format!("{name}.{measure}");
            let num = |k: &str| m.get(k).and_then(Value::as_f64);
            let Some(value) = num("value") else {
                return Err(ImportError::new(
                    at(),
                    "no numeric `value`",
                    "BMF gives each measure a value (and optionally lower_value, upper_value)",
                ));
            };
            let (lower, upper) = (num("lower_value"), num("upper_value"));
            for v in [Some(value), lower, upper].into_iter().flatten() {
                if !v.is_finite() || v < 0.0 {
                    return Err(ImportError::new(
                        at(),
                        format!("{v} is not a finite, non-negative measurement"),
                        "check the file was written whole",
                    ));
                }
            }
            if let (Some(l), Some(u)) = (lower, upper)
                && !(l <= value && value <= u)
            {
                return Err(ImportError::new(
                    at(),
                    format!("the value {value} lies outside its bounds [{l}, {u}]"),
                    "lower_value ≤ value ≤ upper_value",
                ));
            }
            let metric = match measure.as_str() {
                "latency" => "wall",
                other => other,
            };
            summaries.push(ReportedSummary {
                metric: metric.to_string(),
                value,
                kind: "value".into(),
                lower,
                upper,
                stddev: None,
                n: None,
            });
        }
        summaries.sort_by(|a, b| a.metric.cmp(&b.metric));
        benchmarks.push(Benchmark {
            name: name.clone(),
            command: name.clone(),
            summaries,
            ..Benchmark::default()
        });
    }
    let mut imported = Imported::of(Format::Bmf, benchmarks);
    imported.notes.push(
        "Bencher Metric Format holds a summary per measure, no samples: compare judges it by its bounds"
            .into(),
    );
    Ok(imported)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measures_become_summaries() {
        let text = r#"{"sort/100": {"latency": {"value": 88.0, "lower_value": 87.4, "upper_value": 88.2},
                       "throughput": {"value": 1000.0}}}"#;
        let i = crate::parse(Format::Bmf, text).unwrap();
        let b = &i.benchmarks[0];
        assert!(b.samples.is_empty());
        assert_eq!(b.summaries[0].metric, "throughput");
        assert_eq!(b.summaries[1].metric, "wall");
        assert_eq!(b.summaries[1].lower, Some(87.4));
        assert!(i.notes[0].contains("no samples"));
    }

    #[test]
    fn bad_measures_are_refused() {
        let e = crate::parse(Format::Bmf, r#"{"a": {"latency": {"value": -1}}}"#).unwrap_err();
        assert_eq!(e.at, "a.latency");
        let e = crate::parse(
            Format::Bmf,
            r#"{"a": {"latency": {"value": 5, "lower_value": 6, "upper_value": 7}}}"#,
        )
        .unwrap_err();
        assert!(e.message.contains("outside its bounds"));
    }
}
