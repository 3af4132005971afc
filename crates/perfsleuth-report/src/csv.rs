//! CSV export: one row per sample, for spreadsheets and data frames.

use perfsleuth_model::{Run, Sample};
use std::collections::BTreeSet;

/// Fixed columns, in order; see `docs/SCHEMA.md`.
const FIXED_COLUMNS: [&str; 12] = [
    "benchmark",
    "iteration",
    "wall_ns",
    "user_ns",
    "sys_ns",
    "peak_rss_bytes",
    "minor_faults",
    "major_faults",
    "voluntary_cs",
    "involuntary_cs",
    "exit_code",
    "signal",
];

/// CSV, one row per sample with a header row.
///
/// After the fixed columns come `param_<NAME>` for every parameter name used
/// by any benchmark, then `counter_<NAME>` for every extra counter recorded
/// by any sample, both sorted by name; cells a row lacks are empty. Fields
/// are quoted per RFC 4180; lines end with `\n`.
pub fn export_csv(run: &Run) -> String {
    let params: BTreeSet<&str> = run
        .benchmarks
        .iter()
        .flat_map(|b| b.parameters.keys().map(String::as_str))
        .collect();
    let counters: BTreeSet<&str> = run
        .benchmarks
        .iter()
        .flat_map(|b| &b.samples)
        .flat_map(|s| s.counters.keys().map(String::as_str))
        .collect();

    let mut out = String::new();
    let header = FIXED_COLUMNS
        .iter()
        .map(|c| c.to_string())
        .chain(params.iter().map(|p| format!("param_{p}")))
        .chain(counters.iter().map(|c| format!("counter_{c}")));
    push_row(&mut out, header);
    for b in &run.benchmarks {
        for s in &b.samples {
            let row = [b.name.clone()]
                .into_iter()
                .chain(sample_fields(s))
                .chain(
                    params
                        .iter()
                        .map(|p| b.parameters.get(*p).cloned().unwrap_or_default()),
                )
                .chain(counters.iter().map(|c| {
                    s.counters
                        .get(*c)
                        .map(|v| v.to_string())
                        .unwrap_or_default()
                }));
            push_row(&mut out, row);
        }
    }
    out
}

/// The numeric fixed columns of one sample; a missing exit code or signal
/// is an empty cell, so "no signal" is never confused with signal 0.
fn sample_fields(s: &Sample) -> [String; 11] {
    let opt = |v: Option<i32>| v.map(|v| v.to_string()).unwrap_or_default();
    [
        s.iteration.to_string(),
        // An imported per-iteration time keeps its fraction of a nanosecond.
        s.wall_exact_ns
            .map_or_else(|| s.wall_ns.to_string(), |v| v.to_string()),
        s.user_ns.to_string(),
        s.sys_ns.to_string(),
        s.peak_rss_bytes.to_string(),
        s.minor_faults.to_string(),
        s.major_faults.to_string(),
        s.voluntary_cs.to_string(),
        s.involuntary_cs.to_string(),
        opt(s.exit_code),
        opt(s.signal),
    ]
}

/// Appends one record, quoting each field as needed, and a newline.
fn push_row(out: &mut String, fields: impl Iterator<Item = String>) {
    for (i, f) in fields.enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&quote(&f));
    }
    out.push('\n');
}

/// RFC 4180 quoting: a field with a comma, quote or line break is enclosed in
/// double quotes with inner quotes doubled; any other field is left bare.
fn quote(field: &str) -> String {
    if field.contains([',', '"', '\n', '\r']) {
        format!("\"{}\"", field.replace('"', "\"\""))
    } else {
        field.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testutil::*;

    #[test]
    fn rows_are_exact() {
        let mut a = bench("sort, \"fast\"", &[1000, 2000], 4096);
        a.parameters.insert("size".to_string(), "10".to_string());
        a.samples[1].exit_code = None;
        a.samples[1].signal = Some(9);
        let mut b = bench("b", &[3000], 8192);
        b.parameters
            .insert("algo".to_string(), "merge\nsort".to_string());
        b.samples[0].counters.insert("cycles".to_string(), 12345.0);
        let csv = export_csv(&run(vec![a, b, bench("empty", &[], 0)]));
        let expected = "\
benchmark,iteration,wall_ns,user_ns,sys_ns,peak_rss_bytes,minor_faults,major_faults,voluntary_cs,involuntary_cs,exit_code,signal,param_algo,param_size,counter_cycles
\"sort, \"\"fast\"\"\",0,1000,800,100,4096,100,0,2,1,0,,,10,
\"sort, \"\"fast\"\"\",1,2000,1600,200,4096,101,0,2,1,,9,,10,
b,0,3000,2400,300,8192,100,0,2,1,0,,\"merge\nsort\",,12345
";
        assert_eq!(csv, expected);
    }

    #[test]
    fn header_only_without_samples() {
        assert_eq!(
            export_csv(&run(vec![])),
            "benchmark,iteration,wall_ns,user_ns,sys_ns,peak_rss_bytes,minor_faults,major_faults,voluntary_cs,involuntary_cs,exit_code,signal\n"
        );
    }

    #[test]
    fn quoting_follows_rfc_4180() {
        assert_eq!(quote("plain"), "plain");
        assert_eq!(quote("a,b"), "\"a,b\"");
        assert_eq!(quote("say \"hi\""), "\"say \"\"hi\"\"\"");
        assert_eq!(quote("cr\rlf"), "\"cr\rlf\"");
        assert_eq!(quote(""), "");
    }
}
