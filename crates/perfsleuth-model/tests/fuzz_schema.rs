//! Fuzz targets for every JSON document perfsleuth reads back (`run`,
//! `environment`, `probe`: `compare`, `env diff` and `probe diff` read them)
//! and for the model's name parsers (`Metric`, `RunStatus`, `Mode`).
//!
//! Generated documents, with any Unicode in their strings and any numbers
//! in their fields, are written with `to_json_pretty` and must read back
//! equal; the same texts damaged must read back or be refused with a
//! `ReadError`, never panic, whichever reader (`read_document`,
//! `read_header` + `document_from_value`) is used.
//! `PERFSLEUTH_FUZZ_SCALE=K` runs K times the default cases, `PROPTEST_CASES=N`
//! exactly N (`bench/fuzz.sh` runs every target so).

use perfsleuth_model::schema::{
    self, BenchmarkSummary, Document, EnvironmentDoc, ProbeDoc, ProbeReportDoc, RunExport,
    RunSummary, Statistics,
};
use perfsleuth_model::{
    Benchmark, CalibratedClock, Environment, Fact, GitInfo, ImpactClass, Metric, Mode, ProbeResult,
    Run, RunStatus, Sample,
};
use perfsleuth_testkit::fuzz::{CASE_LIMIT, apply, config, mutations, within};
use proptest::prelude::*;
use std::collections::BTreeMap;

fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        3 => "[a-z_.]{0,12}",
        1 => any::<String>(),
        1 => Just("unknown".to_string()),
    ]
}

/// Finite numbers: NaN and the infinities are written as `null`, which only
/// some fields read back (checked separately below).
fn finite() -> impl Strategy<Value = f64> {
    prop_oneof![
        3 => -1e12f64..1e12,
        1 => any::<f64>().prop_filter("finite", |v| v.is_finite()),
        1 => prop::sample::select(vec![0.0, -0.0, f64::MIN_POSITIVE, 5e-324, f64::MAX, f64::MIN]),
    ]
}

fn environment() -> impl Strategy<Value = Environment> {
    prop::collection::btree_map(
        text(),
        (
            text(),
            prop::sample::select(vec![
                ImpactClass::Identity,
                ImpactClass::Performance,
                ImpactClass::Context,
            ]),
            prop::option::of(text()),
        )
            .prop_map(|(value, class, reason)| Fact {
                value,
                class,
                reason,
            }),
        0..6,
    )
    .prop_map(|facts| Environment { facts })
}

fn sample() -> impl Strategy<Value = Sample> {
    (
        (any::<u32>(), any::<u32>(), any::<u64>(), any::<u64>()),
        (any::<u64>(), any::<u64>(), any::<u64>(), any::<u64>()),
        (any::<u64>(), any::<u64>()),
        (
            prop::option::of(any::<i32>()),
            prop::option::of(any::<i32>()),
        ),
        prop::collection::btree_map(text(), finite(), 0..3),
    )
        .prop_map(
            |(
                (iteration, round, wall_ns, user_ns),
                (sys_ns, rss, minor, major),
                (vcs, ics),
                (exit_code, signal),
                counters,
            )| Sample {
                iteration,
                round,
                wall_ns,
                wall_exact_ns: None,
                user_ns,
                sys_ns,
                peak_rss_bytes: rss,
                minor_faults: minor,
                major_faults: major,
                voluntary_cs: vcs,
                involuntary_cs: ics,
                exit_code,
                signal,
                counters,
            },
        )
}

fn benchmark() -> impl Strategy<Value = Benchmark> {
    (
        text(),
        text(),
        prop::collection::vec(text(), 0..3),
        prop::collection::btree_map(text(), text(), 0..2),
        environment(),
        prop::collection::vec(sample(), 0..4),
    )
        .prop_map(
            |(name, command, argv, parameters, facts, samples)| Benchmark {
                locks: None,
                stacks: None,
                allocs: None,
                name,
                command,
                argv,
                parameters,
                facts,
                samples,
                profile: None,
                summaries: Vec::new(),
            },
        )
}

fn probe_result(value: BoxedStrategy<f64>) -> impl Strategy<Value = ProbeResult> {
    (
        (text(), text(), value.clone(), text()),
        (any::<bool>(), prop::option::of(finite()), value),
        (any::<bool>(), any::<bool>(), prop::option::of(text())),
    )
        .prop_map(
            |(
                (probe, metric, value, unit),
                (lower_is_better, cycles, spread),
                (stable, headline, note),
            )| {
                ProbeResult {
                    probe,
                    metric,
                    value,
                    unit,
                    lower_is_better,
                    cycles,
                    spread,
                    stable,
                    headline,
                    note,
                }
            },
        )
}

/// A JSON value for `run.options`, nested a few levels.
fn options() -> impl Strategy<Value = serde_json::Value> {
    let leaf = prop_oneof![
        Just(serde_json::Value::Null),
        any::<bool>().prop_map(serde_json::Value::from),
        any::<i64>().prop_map(serde_json::Value::from),
        any::<u64>().prop_map(serde_json::Value::from),
        text().prop_map(serde_json::Value::from),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3).prop_map(serde_json::Value::from),
            prop::collection::btree_map(text(), inner, 0..3)
                .prop_map(|m| serde_json::Value::Object(m.into_iter().collect())),
        ]
    })
}

fn status() -> impl Strategy<Value = RunStatus> {
    prop::sample::select(vec![
        RunStatus::Running,
        RunStatus::Complete,
        RunStatus::Interrupted,
        RunStatus::Failed,
    ])
}

fn statistics() -> impl Strategy<Value = Statistics> {
    (
        any::<usize>(),
        prop::array::uniform10(finite()),
        prop::collection::vec(any::<usize>(), 0..3),
    )
        .prop_map(|(n, v, outliers)| Statistics {
            n,
            mean: v[0],
            stddev: v[1],
            median: v[2],
            median_ci_low: v[3],
            median_ci_high: v[4],
            mad: v[5],
            min: v[6],
            max: v[7],
            p5: v[8],
            p95: v[9],
            outliers,
        })
}

fn run_export() -> impl Strategy<Value = RunExport> {
    (
        (
            prop::option::of(any::<i64>()),
            text(),
            prop::option::of(text()),
            status(),
            text(),
        ),
        (
            prop::option::of((text(), prop::option::of(text()), any::<bool>())),
            prop::sample::select(vec![Mode::Walltime, Mode::Simulation, Mode::Probe]),
            options(),
            environment(),
        ),
        prop::collection::vec(benchmark(), 0..3),
        prop::collection::vec(probe_result(finite().boxed()), 0..2),
        prop::collection::vec(
            (
                text(),
                (any::<usize>(), any::<usize>()),
                prop::option::of(statistics()),
            ),
            0..2,
        ),
    )
        .prop_map(
            |(
                (id, started_at, ended_at, status, tool_version),
                (git, mode, options, environment),
                benchmarks,
                probes,
                summaries,
            )| {
                RunExport {
                    schema: RunExport::SCHEMA.to_string(),
                    schema_version: RunExport::VERSION,
                    run: Run {
                        id,
                        uuid: None,
                        started_at,
                        ended_at,
                        status,
                        tool_version,
                        git: git.map(|(commit, branch, dirty)| GitInfo {
                            commit,
                            branch,
                            dirty,
                        }),
                        mode,
                        options,
                        environment,
                        benchmarks,
                        probes,
                    },
                    summary: RunSummary {
                        reference: 0,
                        benchmarks: summaries
                            .into_iter()
                            .map(|(name, (runs, failed_runs), wall)| BenchmarkSummary {
                                name: name.clone(),
                                command: name,
                                parameters: BTreeMap::new(),
                                runs,
                                failed_runs,
                                wall: wall.clone(),
                                user: wall.clone(),
                                sys: None,
                                peak_rss: wall,
                                counters: BTreeMap::new(),
                            })
                            .collect(),
                        comparisons: Vec::new(),
                    },
                }
            },
        )
}

fn environment_doc() -> impl Strategy<Value = EnvironmentDoc> {
    (text(), text(), environment()).prop_map(|(source, comparability, facts)| EnvironmentDoc {
        schema: EnvironmentDoc::SCHEMA.to_string(),
        schema_version: EnvironmentDoc::VERSION,
        source,
        comparability,
        facts,
    })
}

/// Probe values may be NaN (a probe that could not measure): written as
/// `null`, read back as NaN.
fn probe_value() -> BoxedStrategy<f64> {
    prop_oneof![4 => finite(), 1 => Just(f64::NAN)].boxed()
}

fn clock() -> impl Strategy<Value = CalibratedClock> {
    (
        prop::option::of(finite()),
        probe_value(),
        prop::option::of(finite()),
        text(),
    )
        .prop_map(|(ghz, spread, tsc_ghz, how)| CalibratedClock {
            ghz,
            spread,
            tsc_ghz,
            how,
        })
}

fn probe_doc() -> impl Strategy<Value = ProbeDoc> {
    (
        (
            prop::option::of(any::<i64>()),
            status(),
            text(),
            prop::option::of(text()),
        ),
        (
            text(),
            prop::option::of(any::<bool>()),
            text(),
            prop::option::of(clock()),
        ),
        prop::collection::vec(
            (
                text(),
                prop::option::of(finite()),
                prop::option::of(any::<usize>()),
                prop::option::of(clock()),
                prop::collection::vec(text(), 0..2),
                prop::collection::vec(probe_result(probe_value()), 0..3),
            )
                .prop_map(
                    |(probe, duration_s, pinned_cpu, clock, messages, measurements)| {
                        ProbeReportDoc {
                            probe,
                            duration_s,
                            pinned_cpu,
                            clock,
                            messages,
                            measurements,
                        }
                    },
                ),
            0..3,
        ),
        environment(),
    )
        .prop_map(
            |(
                (run_id, status, started_at, ended_at),
                (tool_version, quick, comparability, clock),
                reports,
                facts,
            )| {
                ProbeDoc {
                    schema: ProbeDoc::SCHEMA.to_string(),
                    schema_version: ProbeDoc::VERSION,
                    run_id,
                    status,
                    started_at,
                    ended_at,
                    tool_version,
                    quick,
                    comparability,
                    clock,
                    reports,
                    facts,
                }
            },
        )
}

/// Written, read back, written again: the same text (NaN-safe, unlike `==`).
fn round_trip<D: Document + std::fmt::Debug>(doc: &D) -> Result<(), TestCaseError> {
    let text = schema::to_json_pretty(doc).expect("a document serialises");
    let back: D =
        schema::read_document(&text).map_err(|e| TestCaseError::fail(format!("{e}\n{text}")))?;
    prop_assert_eq!(
        schema::to_json_pretty(&back).expect("serialises"),
        text.clone()
    );
    let (header, value) = schema::read_header(&text).expect("JSON");
    let again: D = schema::document_from_value(&header, value)
        .map_err(|e| TestCaseError::fail(format!("{e}")))?;
    prop_assert_eq!(schema::to_json_pretty(&again).expect("serialises"), text);
    Ok(())
}

/// Every reader, on damaged text: a document or a `ReadError`.
fn read_damaged<D: Document>(text: String) {
    if let Ok(doc) = schema::read_document::<D>(&text) {
        schema::to_json_pretty(&doc).expect("what was read serialises");
    }
    if let Ok((header, value)) = schema::read_header(&text) {
        let _ = schema::document_from_value::<D>(&header, value);
    }
}

const JSON_LINES: &[&[u8]] = &[
    b"{",
    b"}",
    b"[",
    b"null,",
    b"\"schema\": \"perfsleuth/run\",",
    b"\"schema\": \"perfsleuth/environment\",",
    b"\"schema\": \"perfsleuth/probe\",",
    b"\"schema_version\": 2,",
    b"\"schema_version\": 18446744073709551616,",
    b"\"schema_version\": -1,",
    b"\"schema_version\": \"1\",",
    b"\"value\": NaN,",
    b"\"value\": 1e999,",
    b"\"wall_ns\": -1,",
    b"\"wall_ns\": 1.5,",
    b"\"status\": \"paused\",",
    b"\"mode\": \"WALLTIME\",",
    b"\"class\": \"nonsense\",",
    b"\"\\ud800\": 1,",
    b"\"a\\u0000b\": \"\\u0000\",",
    b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
];

proptest! {
    #![proptest_config(config(96))]

    /// A run export reads back equal.
    #[test]
    fn run_exports_read_back_equal(doc in run_export()) {
        round_trip(&doc)?;
        let text = schema::to_json_pretty(&doc).expect("serialises");
        let back: RunExport = schema::read_document(&text).expect("read back");
        prop_assert_eq!(back, doc);
    }

    /// An environment document reads back equal.
    #[test]
    fn environment_documents_read_back_equal(doc in environment_doc()) {
        round_trip(&doc)?;
        let text = schema::to_json_pretty(&doc).expect("serialises");
        let back: EnvironmentDoc = schema::read_document(&text).expect("read back");
        prop_assert_eq!(back, doc);
    }

    /// A probe document reads back to the same text (NaN values included).
    #[test]
    fn probe_documents_read_back_equal(doc in probe_doc()) {
        round_trip(&doc)?;
    }

    /// Damaged documents of each kind, read as each kind: never a panic.
    #[test]
    fn damaged_documents_are_read_or_refused(
        run in run_export(),
        env in environment_doc(),
        probe in probe_doc(),
        which in 0usize..3,
        m in mutations(JSON_LINES),
    ) {
        let text = match which {
            0 => schema::to_json_pretty(&run),
            1 => schema::to_json_pretty(&env),
            _ => schema::to_json_pretty(&probe),
        }
        .expect("serialises");
        let damaged = String::from_utf8_lossy(&apply(text.as_bytes(), &m)).into_owned();
        within(CASE_LIMIT, move || {
            read_damaged::<RunExport>(damaged.clone());
            read_damaged::<EnvironmentDoc>(damaged.clone());
            read_damaged::<ProbeDoc>(damaged);
        });
    }
}

proptest! {
    #![proptest_config(config(4096))]

    /// Each name parses back to its value; any other text is `None` or a
    /// value whose name is that text.
    #[test]
    fn names_parse_back(s in prop_oneof![any::<String>(), "[a-z_]{0,16}"]) {
        for m in Metric::ALL {
            prop_assert_eq!(Metric::parse(m.name()), Some(m));
        }
        for name in Metric::names() {
            prop_assert_eq!(Metric::parse(name).map(Metric::name), Some(name));
        }
        for st in [RunStatus::Running, RunStatus::Complete, RunStatus::Interrupted, RunStatus::Failed] {
            prop_assert_eq!(RunStatus::parse(st.as_str()), Some(st));
        }
        for mode in [Mode::Walltime, Mode::Simulation, Mode::Probe] {
            prop_assert_eq!(Mode::parse(mode.as_str()), Some(mode));
        }
        if let Some(m) = Metric::parse(&s) {
            prop_assert_eq!(m.name(), s.as_str());
        }
        if let Some(st) = RunStatus::parse(&s) {
            prop_assert_eq!(st.as_str(), s.as_str());
        }
        if let Some(mode) = Mode::parse(&s) {
            prop_assert_eq!(mode.as_str(), s.as_str());
        }
    }
}
