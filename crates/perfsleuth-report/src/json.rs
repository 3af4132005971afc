//! The versioned JSON export document (see `docs/SCHEMA.md`).

use crate::{BenchmarkReport, Comparison, RunReport};
use perfsleuth_model::Run;
use perfsleuth_model::schema::{
    BenchmarkSummary, ComparisonSummary, CounterMedian, Document, Ratio, RunExport, RunSummary,
    Statistics, TimeRatio,
};
use perfsleuth_stats::{RatioEstimate, Summary};

/// The versioned JSON export document (all samples, environment, summary).
///
/// `run` is the model's own type, so a reader gets [`Run`] back; `summary`
/// holds the derived statistics so consumers need not reimplement them.
/// Times are in ns, memory in bytes. Serialise it with
/// `perfsleuth_model::schema::to_json_pretty`.
pub fn export_json(run: &Run, report: &RunReport) -> RunExport {
    RunExport {
        schema: RunExport::SCHEMA.to_string(),
        schema_version: RunExport::VERSION,
        run: run.clone(),
        summary: RunSummary {
            reference: report.reference,
            benchmarks: report.benchmarks.iter().map(benchmark_summary).collect(),
            comparisons: report
                .comparisons
                .iter()
                .map(|c| comparison_summary(c, report.confidence))
                .collect(),
        },
    }
}

/// One benchmark's summaries.
fn benchmark_summary(b: &BenchmarkReport) -> BenchmarkSummary {
    BenchmarkSummary {
        name: b.name.clone(),
        command: b.command.clone(),
        parameters: b.parameters.clone(),
        runs: b.runs,
        failed_runs: b.failed_runs,
        wall: b.wall.as_ref().map(statistics),
        user: b.user.as_ref().map(statistics),
        sys: b.sys.as_ref().map(statistics),
        peak_rss: b.peak_rss.as_ref().map(statistics),
        counters: b
            .counters
            .iter()
            .map(|(c, median)| {
                (
                    c.key.to_string(),
                    CounterMedian {
                        median: *median,
                        unit: c.unit.to_string(),
                    },
                )
            })
            .collect(),
    }
}

fn statistics(s: &Summary) -> Statistics {
    Statistics {
        n: s.n,
        mean: s.mean,
        stddev: s.stddev,
        median: s.median,
        median_ci_low: s.median_ci.lo,
        median_ci_high: s.median_ci.hi,
        mad: s.mad,
        min: s.min,
        max: s.max,
        p5: s.p5,
        p95: s.p95,
        outliers: s.outliers.clone(),
    }
}

/// One comparison with the reference.
fn comparison_summary(c: &Comparison, level: f64) -> ComparisonSummary {
    ComparisonSummary {
        benchmark: c.index,
        reference: c.reference,
        time: c.time.as_ref().map(|e| TimeRatio {
            ratio: ratio(e, level),
            p_value: c.time_p_value,
            inconclusive: c.time_inconclusive,
            metric: Some(c.judged.metric),
            judged: Some(c.judged.why.clone()),
            pairs: c.pairs,
        }),
        peak_rss: c.peak_rss.as_ref().map(|e| ratio(e, level)),
    }
}

fn ratio(e: &RatioEstimate, level: f64) -> Ratio {
    Ratio {
        ratio: e.ratio,
        ci_low: e.ci.lo,
        ci_high: e.ci.hi,
        confidence: level,
        resamples: e.resamples,
        significant: e.significant,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;
    use perfsleuth_model::GitInfo;
    use perfsleuth_summary::analyze;
    use serde_json::{Value, json};

    fn export_value(r: &Run, rep: &RunReport) -> Value {
        serde_json::to_value(export_json(r, rep)).unwrap()
    }

    #[test]
    fn run_round_trips_through_the_export() {
        let mut b = bench("sleep 0.01", &[10_000_000, 11_000_000], 2048);
        b.parameters.insert("N".to_string(), "0.01".to_string());
        b.samples[1].exit_code = None;
        b.samples[1].signal = Some(15);
        b.samples[0]
            .counters
            .insert("instructions".to_string(), 1.5e9);
        let mut r = run(vec![b, bench("true", &[], 0)]);
        r.git = Some(GitInfo {
            commit: "0123456789abcdef0123456789abcdef01234567".to_string(),
            branch: None,
            dirty: true,
        });
        let doc = export_value(&r, &analyze(&r, None));
        assert_eq!(doc["schema"], "perfsleuth/run");
        assert_eq!(doc["schema_version"], 1);
        let back: Run = serde_json::from_value(doc["run"].clone()).unwrap();
        assert_eq!(back, r);
        // And through text, as a file reader would see it.
        let text = serde_json::to_string_pretty(&doc).unwrap();
        let reparsed: Value = serde_json::from_str(&text).unwrap();
        assert_eq!(reparsed, doc);
    }

    #[test]
    fn summary_matches_the_report() {
        let r = run(vec![
            bench("a", &spread(10, 1_000_000, 10_000), 4096),
            bench("b", &spread(10, 3_000_000, 10_000), 8192),
            bench("c", &[], 0),
        ]);
        let rep = analyze(&r, None);
        let doc = export_value(&r, &rep);
        let s = &doc["summary"];
        assert_eq!(s["reference"], 0);
        let a = &s["benchmarks"][0];
        assert_eq!(a["name"], "a");
        assert_eq!(a["runs"], 10);
        assert_eq!(a["failed_runs"], 0);
        assert_eq!(
            a["wall"]["median"],
            rep.benchmarks[0].wall.as_ref().unwrap().median
        );
        assert_eq!(a["peak_rss"]["median"], 4096.0);
        assert_eq!(a["wall"]["outliers"], json!([]));
        assert!(a["parameters"].as_object().unwrap().is_empty());
        assert_eq!(s["benchmarks"][2]["wall"], Value::Null);
        let c = &s["comparisons"][0];
        assert_eq!(c["benchmark"], 1);
        assert_eq!(c["reference"], 0);
        assert_eq!(c["time"]["significant"], true);
        assert_eq!(c["time"]["confidence"], 0.95);
        // The two benchmarks of one run are paired: a sign-test interval,
        // no resampling.
        assert_eq!(c["time"]["resamples"], 0);
        // Ten pairs, all one way: the sign test's p (normal, continuity
        // corrected) is 0.004; no resampling can make it smaller.
        assert!(c["time"]["p_value"].as_f64().unwrap() < 0.01);
        assert_eq!(c["peak_rss"]["ratio"], 2.0);
        assert!(c["peak_rss"].get("p_value").is_none());
        let missing = &s["comparisons"][1];
        assert_eq!(
            (missing["time"].clone(), missing["peak_rss"].clone()),
            (Value::Null, Value::Null)
        );
        let mut keys: Vec<_> = doc.as_object().unwrap().keys().cloned().collect();
        keys.sort();
        assert_eq!(keys, ["run", "schema", "schema_version", "summary"]);
    }

    #[test]
    fn empty_run_exports() {
        let r = run(vec![]);
        let doc = export_value(&r, &analyze(&r, None));
        assert_eq!(doc["summary"]["benchmarks"], json!([]));
        assert_eq!(doc["summary"]["comparisons"], json!([]));
    }
}
