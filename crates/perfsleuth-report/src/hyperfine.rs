//! hyperfine's JSON export shape (`--export-hyperfine`), so that hyperfine's
//! own scripts (`plot_whisker.py`, `welch_ttest.py`, `advanced_statistics.py`,
//! …) run on perfsleuth's measurements. perfsleuth's own document stays
//! `--export-json`; this one carries only what hyperfine writes, plus
//! `memory_usage_byte` as newer hyperfine versions do. The typed shape (and
//! its JSON Schema) lives with the others in `perfsleuth_model::schema`.

use perfsleuth_model::schema::{HyperfineDoc, HyperfineResult};
use perfsleuth_model::{Metric, Run};

/// The run in hyperfine's shape. Benchmarks without samples are left out:
/// hyperfine never writes a result it did not measure.
pub fn export_hyperfine(run: &Run) -> HyperfineDoc {
    let secs = |ns: f64| ns / 1e9;
    let results = run
        .benchmarks
        .iter()
        .filter_map(|b| {
            let mut times = b.values(Metric::Wall);
            let n = times.len();
            if n == 0 {
                return None;
            }
            let mean_of = |m: Metric| {
                let v = b.values(m);
                v.iter().sum::<f64>() / v.len().max(1) as f64
            };
            let mean = times.iter().sum::<f64>() / n as f64;
            let stddev = (n > 1).then(|| {
                (times.iter().map(|t| (t - mean).powi(2)).sum::<f64>() / (n - 1) as f64).sqrt()
            });
            let walls: Vec<f64> = times.iter().map(|&t| secs(t)).collect();
            times.sort_by(f64::total_cmp);
            let median = perfsleuth_stats::median(&times).unwrap_or(f64::NAN);
            Some(HyperfineResult {
                command: b.name.clone(),
                mean: secs(mean),
                stddev: stddev.map(secs),
                median: secs(median),
                user: secs(mean_of(Metric::User)),
                system: secs(mean_of(Metric::Sys)),
                min: secs(times[0]),
                max: secs(times[n - 1]),
                times: walls,
                memory_usage_byte: b.samples.iter().map(|s| s.peak_rss_bytes).collect(),
                exit_codes: b.samples.iter().map(|s| s.exit_code).collect(),
                parameters: b.parameters.clone(),
            })
        })
        .collect();
    HyperfineDoc { results }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;

    #[test]
    fn hyperfine_shape_in_seconds_with_every_run() {
        let mut r = run(vec![
            bench("a", &[10_000_000, 20_000_000, 30_000_000], 1 << 20),
            bench("never ran", &[], 0),
        ]);
        r.benchmarks[0].parameters.insert("n".into(), "3".into());
        let doc = export_hyperfine(&r);
        assert_eq!(doc.results.len(), 1);
        let a = &doc.results[0];
        assert_eq!(a.command, "a");
        assert!((a.mean - 0.02).abs() < 1e-12 && (a.median - 0.02).abs() < 1e-12);
        assert!((a.stddev.unwrap() - 0.01).abs() < 1e-12);
        assert_eq!((a.min, a.max), (0.01, 0.03));
        assert_eq!(a.times, [0.01, 0.02, 0.03]);
        assert_eq!(a.exit_codes, [Some(0); 3]);
        assert_eq!(a.memory_usage_byte, [1 << 20; 3]);
        let json = serde_json::to_value(&doc).unwrap();
        assert_eq!(json["results"][0]["parameters"]["n"], "3");
        // One run: no standard deviation, as hyperfine writes it.
        let one = export_hyperfine(&run(vec![bench("b", &[5_000_000], 0)]));
        assert_eq!(
            serde_json::to_value(&one).unwrap()["results"][0]["stddev"],
            serde_json::Value::Null
        );
    }
}
