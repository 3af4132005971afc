//! Fuzz target for the run export as perfsleuth really writes it: a run
//! with generated samples (any u64 times and sizes, failed samples, counters,
//! one or several benchmarks) goes through `analyze` and `export_json`,
//! is written with `to_json_pretty` and must read back with `read_document`
//! to the same document — what `compare FILE.json` and `env diff` rely on.
//! The renderers of the same run (terminal, Markdown, CSV) must not panic.
//! `PERFSLEUTH_FUZZ_SCALE=K` runs K times the default cases, `PROPTEST_CASES=N`
//! exactly N (`bench/fuzz.sh` runs every target so).

use perfsleuth_model::schema::{self, RunExport};
use perfsleuth_model::{Benchmark, Environment, ImpactClass, Mode, Run, RunStatus, Sample};
use perfsleuth_report::{Style, export_csv, export_json, render_markdown, render_terminal};
use perfsleuth_summary::analyze;
use perfsleuth_testkit::fuzz::{CASE_LIMIT, config, within};
use proptest::prelude::*;

fn amount() -> impl Strategy<Value = u64> {
    prop_oneof![
        4 => 1_000u64..100_000_000,
        1 => Just(0u64),
        1 => any::<u64>(),
        1 => prop::sample::select(vec![1u64, u64::MAX, u64::MAX - 1, 1 << 53, (1 << 53) + 1]),
    ]
}

fn counter() -> impl Strategy<Value = (String, f64)> {
    (
        prop::sample::select(vec![
            "instructions",
            "cycles",
            "Ir",
            "counters_running_fraction",
            "futex_calls",
            "odd key",
        ]),
        prop_oneof![
            3 => 0.0f64..1e12,
            1 => any::<f64>().prop_filter("finite", |v| v.is_finite()),
        ],
    )
        .prop_map(|(k, v)| (k.to_string(), v))
}

fn sample() -> impl Strategy<Value = Sample> {
    (
        (amount(), amount(), amount(), amount()),
        (amount(), amount()),
        prop_oneof![
            4 => Just((Some(0), None)),
            1 => (1i32..256).prop_map(|c| (Some(c), None)),
            1 => (1i32..32).prop_map(|s| (None, Some(s))),
        ],
        prop::collection::btree_map(
            counter().prop_map(|c| c.0),
            counter().prop_map(|c| c.1),
            0..3,
        ),
        0u32..3,
    )
        .prop_map(
            |((wall, user, sys, rss), (minor, vcs), (exit_code, signal), counters, round)| Sample {
                iteration: 0,
                round,
                wall_ns: wall,
                wall_exact_ns: None,
                user_ns: user,
                sys_ns: sys,
                peak_rss_bytes: rss,
                minor_faults: minor,
                major_faults: 0,
                voluntary_cs: vcs,
                involuntary_cs: 1,
                exit_code,
                signal,
                counters,
            },
        )
}

fn run() -> impl Strategy<Value = (Run, Option<usize>)> {
    (
        prop::collection::vec(
            ("[a-z ./0-9]{1,12}", prop::collection::vec(sample(), 0..12)),
            1..4,
        ),
        prop::option::of(0usize..5),
        prop::sample::select(vec![
            RunStatus::Complete,
            RunStatus::Interrupted,
            RunStatus::Failed,
        ]),
    )
        .prop_map(|(benches, reference, status)| {
            let mut environment = Environment::default();
            environment.set("cpu.model", "Fuzz CPU", ImpactClass::Identity);
            let benchmarks = benches
                .into_iter()
                .map(|(name, mut samples)| {
                    for (i, s) in samples.iter_mut().enumerate() {
                        s.iteration = i as u32;
                    }
                    Benchmark {
                        locks: None,
                        stacks: None,
                        allocs: None,
                        name: name.clone(),
                        command: name.clone(),
                        argv: name.split(' ').map(str::to_string).collect(),
                        parameters: Default::default(),
                        facts: Default::default(),
                        samples,
                        profile: None,
                        summaries: Vec::new(),
                    }
                })
                .collect();
            let run = Run {
                id: Some(1),
                uuid: None,
                started_at: "2026-01-01T00:00:00.000Z".into(),
                ended_at: Some("2026-01-01T00:00:01.000Z".into()),
                status,
                tool_version: "0.1.0".into(),
                git: None,
                mode: Mode::Walltime,
                options: serde_json::json!({}),
                environment,
                benchmarks,
                probes: Vec::new(),
            };
            (run, reference)
        })
}

proptest! {
    #![proptest_config(config(32))]

    /// The export of any run reads back as the document written.
    #[test]
    fn exports_read_back_as_written((run, reference) in run()) {
        let (text, back) = within(CASE_LIMIT, move || {
            let report = analyze(&run, reference);
            let style = Style::new(false);
            let _ = render_terminal(&run, &report, &style);
            let _ = render_markdown(&run, &report);
            let _ = export_csv(&run);
            let doc = export_json(&run, &report);
            let text = schema::to_json_pretty(&doc).expect("the export serialises");
            let back = schema::read_document::<RunExport>(&text);
            (text, back)
        });
        let back = back.map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
        // Text, not `==`: NaN statistics are written as null and read back as NaN.
        prop_assert_eq!(schema::to_json_pretty(&back).expect("serialises"), text);
    }
}
