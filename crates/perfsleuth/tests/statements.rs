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
