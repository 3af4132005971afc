//! No statement per run (issue 53): listing the newest runs, comparing the
//! latest two (with what it learns from history) and a benchmark's history
//! run as many statements at 100 stored runs as at 10, on SQLite and on a
//! real PostgreSQL. Its own test binary: the store's statement count is the
//! whole process's, and its tests take turns (`ONE_AT_A_TIME`).

use perfsleuth_model::Run;
use perfsleuth_store::{Store, StoreUrl};

/// Held by each test here: the statement count is the process's.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A complete run of five benchmarks, five samples each, on branch main,
/// every run of the same binaries.
fn stored_run(i: usize) -> Run {
    let benchmark = |b: usize| {
        serde_json::json!({
            "name": format!("bench-{b}"), "command": format!("bench-{b}"),
            "argv": [format!("bench-{b}")], "parameters": {},
            // One binary throughout: compare learns its noise from these runs.
            "facts": {"binary.sha256": {"value": format!("{b:064x}"), "class": "identity"}},
            "samples": (0..5).map(|k| serde_json::json!({
                "iteration": k, "round": k, "wall_ns": 1_000_000 + 1000 * ((i + k) % 7) + b,
                "user_ns": 900_000, "sys_ns": 50_000, "peak_rss_bytes": 1 << 20,
                "minor_faults": 90, "major_faults": 0, "voluntary_cs": 1,
                "involuntary_cs": 0, "exit_code": 0, "signal": null, "counters": {}
            })).collect::<Vec<_>>(),
            "profile": null, "summaries": []
        })
    };
    serde_json::from_value(serde_json::json!({
        "id": null, "uuid": null,
        "started_at": format!("2026-12-07T{:02}:{:02}:00.000Z", i / 60, i % 60),
        "ended_at": "2026-12-07T23:59:00.000Z", "status": "complete",
        "tool_version": "0.1.0",
        "git": {"commit": format!("{i:040x}"), "branch": "main", "dirty": false},
        "mode": "walltime", "options": {},
        "environment": {"cpu.model": {"value": "Test CPU", "class": "identity"}},
        "benchmarks": (0..5).map(benchmark).collect::<Vec<_>>(), "probes": []
    }))
    .expect("a run document")
}

/// Statements each read runs: the listing, the comparison of the latest two
/// and one benchmark's history.
fn counts(store: &mut dyn Store) -> [u64; 3] {
    let count = |f: &mut dyn FnMut()| {
        let before = perfsleuth_store::statements_issued();
        f();
        perfsleuth_store::statements_issued() - before
    };
    let list = count(&mut || {
        assert_eq!(store.list_runs(Some(20)).unwrap().len().min(10), 10);
    });
    let compare = count(&mut || {
        let side = |spec| {
            perfsleuth_sides::resolve(&*store, spec, perfsleuth_sides::Lookup::default()).unwrap()
        };
        let done = perfsleuth_sides::compare_stored(
            &*store,
            Some(side("latest~1")),
            side("latest"),
            perfsleuth_compare::Options::default(),
            true,
        )
        .unwrap();
        assert!(!done.comparison.rows.is_empty());
    });
    let history = count(&mut || {
        let filter = perfsleuth_history::Filter {
            benchmarks: vec!["bench-2".into()],
            ..Default::default()
        };
        let order = perfsleuth_history::Order::Time;
        let entries = store
            .history_entries_in(&perfsleuth_history::scope(
                &filter,
                Some(perfsleuth_model::Metric::Wall),
            ))
            .unwrap();
        let selected = perfsleuth_history::select(entries, &filter, &order).unwrap();
        let doc = perfsleuth_history::stored::history_doc(
            store,
            selected,
            &[perfsleuth_model::Metric::Wall],
            &order,
            &filter,
            &perfsleuth_history::Options::default(),
            false,
        )
        .unwrap()
        .unwrap();
        assert!(!doc.series.is_empty());
    });
    [list, compare, history]
}

#[test]
fn listing_comparing_and_history_run_as_many_statements_at_100_runs_as_at_10() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut urls = vec![StoreUrl::Sqlite(dir.path().join("s.db"))];
    urls.extend(
        perfsleuth_testkit::fresh_postgres("statements").map(|u| StoreUrl::parse(&u).unwrap()),
    );
    for url in urls {
        let mut store = url.open().unwrap();
        for i in 0..10 {
            store.ingest_run(&stored_run(i)).unwrap();
        }
        let few = counts(&mut *store);
        for i in 10..100 {
            store.ingest_run(&stored_run(i)).unwrap();
        }
        let many = counts(&mut *store);
        eprintln!("{url:?}: [list, compare, history] {few:?} at 10 runs, {many:?} at 100");
        assert_eq!(few, many, "{url:?}: statements grew with the stored runs");
    }
}

/// A batch of pushed runs is stored in as many statements whether it holds
/// 10 runs or 100 (each run's row and its machine's look-up were two
/// statements a run, and each probe result one), a statement a table for
/// up to 500 rows.
#[test]
fn ingesting_a_batch_runs_as_many_statements_for_100_runs_as_for_10() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut urls = vec![StoreUrl::Sqlite(dir.path().join("b.db"))];
    urls.extend(
        perfsleuth_testkit::fresh_postgres("batchstatements").map(|u| StoreUrl::parse(&u).unwrap()),
    );
    for url in urls {
        let mut store = url.open().unwrap();
        // The machine is known before either batch, as on a server that ran a while.
        store.ingest_run(&stored_run(0)).unwrap();
        // Small runs: 100 of them fit one multi-row statement a table (500
        // rows), so what is counted is statements a run, not a chunk.
        let probed = |i: usize| {
            let mut run = stored_run(i);
            run.benchmarks.truncate(2);
            for b in &mut run.benchmarks {
                b.samples.truncate(2);
            }
            run.probes = serde_json::from_value(serde_json::json!([
                {"probe": "syscall", "metric": "ns_per_call", "value": 80.0 + i as f64,
                 "unit": "ns", "lower_is_better": true, "cycles": 3, "spread": 0.01,
                 "stable": true, "headline": true, "note": null}
            ]))
            .expect("probe results");
            run
        };
        let mut batch = |range: std::ops::Range<usize>| {
            let runs: Vec<Run> = range.map(probed).collect();
            let incoming: Vec<perfsleuth_store::Incoming<'_>> = runs
                .iter()
                .map(|run| perfsleuth_store::Incoming {
                    run,
                    summaries: &[],
                })
                .collect();
            let before = perfsleuth_store::statements_issued();
            let done = store
                .ingest_runs(&incoming, perfsleuth_model::Metric::Wall)
                .unwrap();
            assert!(done.iter().all(|d| d.created), "{url:?}");
            perfsleuth_store::statements_issued() - before
        };
        let few = batch(1..11);
        let many = batch(11..111);
        eprintln!("{url:?}: a batch of 10 runs in {few} statements, of 100 in {many}");
        assert_eq!(
            few, many,
            "{url:?}: statements grew with the runs of a batch"
        );
        let probes = store
            .load_run(store.resolve_run("latest").unwrap())
            .unwrap()
            .unwrap()
            .probes;
        assert_eq!(probes.len(), 1, "{url:?}");
    }
}

/// The default baseline is looked for among the 2 000 runs before the
/// candidate first; one further back is still found when none of those
/// measured the same benchmarks.
#[test]
fn a_default_baseline_beyond_the_first_window_is_still_found() {
    let _turn = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let dir = tempfile::tempdir().unwrap();
    let mut store = StoreUrl::Sqlite(dir.path().join("s.db")).open().unwrap();
    let only = |mut r: Run, names: &[&str]| {
        r.benchmarks.retain(|b| names.contains(&b.name.as_str()));
        r
    };
    let old = store
        .ingest_run(&only(stored_run(0), &["bench-0"]))
        .unwrap()
        .id;
    for i in 1..=2_001 {
        store
            .ingest_run(&only(stored_run(i), &["bench-1"]))
            .unwrap();
    }
    store
        .ingest_run(&only(stored_run(2_002), &["bench-0"]))
        .unwrap();
    let candidate =
        perfsleuth_sides::resolve(&*store, "latest", perfsleuth_sides::Lookup::default()).unwrap();
    let baseline = perfsleuth_sides::default_baseline(&*store, &candidate).unwrap();
    assert_eq!(baseline.runs[0].id, Some(old), "{}", baseline.label);
}
