//! Fuzz target for the store's JSON columns (issue 37): a store whose
//! columns were damaged outside perfsleuth (a text editor, another tool, a
//! bad disk) — `runs.options` and `context`, `environments.facts`,
//! `benchmarks.argv`, `parameters`, `facts`, `profile`, `summaries` and
//! `locks`, `samples.counters` — gives each reading query a result or a
//! clean error naming the store, never a panic or a hang.
//! `PERFSLEUTH_FUZZ_SCALE=K` runs K times the default cases, `PROPTEST_CASES=N`
//! exactly N (`bench/fuzz.sh` runs every target so).

use perfsleuth_model::{Benchmark, Environment, ImpactClass, Metric, Mode, Run, RunStatus, Sample};
use perfsleuth_store::{RunReader as _, RunWriter as _, SqliteStore};
use perfsleuth_testkit::fuzz::{CASE_LIMIT, apply, config, mutations, within};
use proptest::prelude::*;

/// The damaged columns: (table, column, a valid value to damage).
const COLUMNS: &[(&str, &str, &str)] = &[
    (
        "runs",
        "options",
        r#"{"warmup": 3, "runs": 10, "kind": "import"}"#,
    ),
    ("runs", "context", r#"{"facts": {}}"#),
    (
        "environments",
        "facts",
        r#"{"cpu.model": {"value": "X", "class": "identity"}}"#,
    ),
    ("benchmarks", "argv", r#"["./bench", "--n", "10"]"#),
    ("benchmarks", "parameters", r#"{"n": "10"}"#),
    (
        "benchmarks",
        "facts",
        r#"{"binary.sha256": {"value": "ab12", "class": "identity"}}"#,
    ),
    (
        "benchmarks",
        "profile",
        r#"{"event": "Ir", "functions": []}"#,
    ),
    (
        "benchmarks",
        "summaries",
        r#"[{"metric": "wall", "value": 1.0}]"#,
    ),
    ("benchmarks", "locks", r#"{"runs": 1, "lock_wait_ns": 0}"#),
    ("samples", "counters", r#"{"cycles": 1000.0}"#),
];

const LINES: &[&[u8]] = &[
    b"null",
    b"[]",
    b"{}",
    b"\"value\": 1e999",
    b"{\"class\": \"nonsense\"}",
    b"[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[[",
];

fn run() -> Run {
    let mut env = Environment::default();
    env.set("cpu.model", "X", ImpactClass::Identity);
    let mut facts = Environment::default();
    facts.set("binary.sha256", "ab12", ImpactClass::Identity);
    Run {
        id: None,
        uuid: None,
        started_at: "2026-12-04T12:00:00.000Z".into(),
        ended_at: Some("2026-12-04T12:00:01.000Z".into()),
        status: RunStatus::Complete,
        tool_version: "0.1.0".into(),
        git: None,
        mode: Mode::Walltime,
        options: serde_json::json!({"warmup": 3}),
        environment: env,
        benchmarks: vec![Benchmark {
            name: "b".into(),
            command: "./bench".into(),
            argv: vec!["./bench".into()],
            facts,
            samples: (0..5)
                .map(|i| Sample {
                    iteration: i,
                    wall_ns: 1_000_000 + u64::from(i),
                    ..Sample::default()
                })
                .collect(),
            ..Benchmark::default()
        }],
        probes: Vec::new(),
    }
}

#[test]
fn an_undamaged_store_reads_back() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("s.db");
    let mut store = SqliteStore::open(&path).unwrap();
    let id = store.ingest_run(&run()).unwrap().id;
    assert_eq!(store.load_run(id).unwrap().unwrap().benchmarks.len(), 1);
}

proptest! {
    #![proptest_config(config(64))]

    /// One damaged JSON column: every reading query answers.
    #[test]
    fn a_damaged_json_column_is_read_or_refused(
        pick in 0usize..COLUMNS.len(),
        m in mutations(LINES),
    ) {
        let (table, column, valid) = COLUMNS[pick];
        let damaged = String::from_utf8_lossy(&apply(valid.as_bytes(), &m)).into_owned();
        within(CASE_LIMIT, move || {
            let dir = tempfile::tempdir().unwrap();
            let path = dir.path().join("s.db");
            let mut store = SqliteStore::open(&path).unwrap();
            let done = store.ingest_run(&run()).unwrap();
            drop(store);
            let raw = rusqlite::Connection::open(&path).unwrap();
            raw.execute(&format!("UPDATE {table} SET {column} = ?1"), [&damaged])
                .unwrap();
            drop(raw);
            let store = SqliteStore::open_existing(&path).unwrap();
            let _ = store.load_run(done.id);
            let _ = store.list_runs(None);
            let _ = store.history_entries();
            let _ = store.metric_values(&[1], Metric::Wall);
            let _ = store.same_binary_runs(
                "ab12",
                &["./bench".to_string()],
                Mode::Walltime,
                &run().environment,
                30,
            );
        });
    }
}
