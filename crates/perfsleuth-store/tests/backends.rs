//! The same behaviour from both backends: every test runs against a real
//! SQLite file and a real PostgreSQL database (a fresh one per test, on the
//! server `$PERFSLEUTH_TEST_POSTGRES` names; `.ci/run` starts one).

use perfsleuth_model::{
    Benchmark, Environment, GitInfo, ImpactClass, Metric, Mode, ProbeResult, Run, RunStatus, Sample,
};
use perfsleuth_store::{
    Backend as _, EntryScope, Incoming, MetricSummary, PgStore, RunKind, RunReader as _,
    RunWriter as _, Store, StoreError, StoreUrl, TokenRecord,
};
use std::collections::BTreeMap;

/// Each backend with a fresh store; PostgreSQL only where a server is configured.
fn backends(test: &str) -> Vec<(String, Box<dyn Store + Send>, Option<tempfile::TempDir>)> {
    let dir = tempfile::tempdir().unwrap();
    let sqlite = StoreUrl::Sqlite(dir.path().join("results.db"))
        .open()
        .unwrap();
    let mut out = vec![("sqlite".to_string(), sqlite, Some(dir))];
    if let Some(url) = perfsleuth_testkit::fresh_postgres(test) {
        let store = StoreUrl::parse(&url).unwrap().open().unwrap();
        out.push(("postgres".to_string(), store, None));
    }
    out
}

fn env(host: &str) -> Environment {
    let mut env = Environment::default();
    env.set("cpu.model", "Test CPU 9000", ImpactClass::Identity);
    env.set("kernel.release", "6.1.0-test", ImpactClass::Identity);
    env.set("cpu.governor", "performance", ImpactClass::Performance);
    env.set("host.name", host, ImpactClass::Context);
    env
}

fn sample(i: u32) -> Sample {
    Sample {
        iteration: i,
        round: i / 3,
        wall_ns: 1_000_000 + u64::from(i) * 7,
        wall_exact_ns: (i % 4 == 1).then(|| 1_000_000.5 + f64::from(i)),
        user_ns: 600_000,
        sys_ns: 300_000 + u64::from(i),
        peak_rss_bytes: 4 << 20,
        minor_faults: 120,
        major_faults: 0,
        voluntary_cs: 3,
        involuntary_cs: 1,
        exit_code: Some(0),
        signal: None,
        counters: if i % 2 == 0 {
            BTreeMap::from([("instructions".to_string(), 1.5e9 + f64::from(i))])
        } else {
            BTreeMap::new()
        },
    }
}

fn bench(name: &str, n: u32) -> Benchmark {
    let mut facts = Environment::default();
    facts.set(
        "binary.sha256",
        format!("{name:0>64}"),
        ImpactClass::Identity,
    );
    Benchmark {
        locks: None,
        stacks: None,
        allocs: None,
        name: name.to_string(),
        command: format!("sleep {name}"),
        argv: vec!["sleep".into(), name.into()],
        parameters: BTreeMap::from([("N".to_string(), name.to_string())]),
        facts,
        samples: (0..n).map(sample).collect(),
        profile: None,
        summaries: Vec::new(),
    }
}

fn run(branch: &str, benchmarks: Vec<Benchmark>) -> Run {
    Run {
        id: None,
        uuid: None,
        started_at: "2026-12-03T08:00:00.000Z".into(),
        ended_at: Some("2026-12-03T08:00:05.000Z".into()),
        status: RunStatus::Complete,
        tool_version: "0.1.0".into(),
        git: Some(GitInfo {
            commit: "0123456789abcdef0123456789abcdef01234567".into(),
            branch: Some(branch.into()),
            dirty: false,
        }),
        mode: Mode::Walltime,
        options: serde_json::json!({"runs": 10}),
        environment: env("box-1"),
        benchmarks,
        probes: Vec::new(),
    }
}

/// Stores a run the way the runner does: begin, benchmarks, samples, finish.
fn measure(store: &mut dyn Store, run: &Run) -> i64 {
    let id = store.begin_run(run).unwrap();
    for b in &run.benchmarks {
        // As `run --locks` does: the lock report once the runs are done.
        let plain = Benchmark {
            locks: None,
            stacks: None,
            allocs: None,
            ..b.clone()
        };
        let bid = store.add_benchmark(id, &plain).unwrap();
        // The first sample alone, the rest in a batch, as `run` commits them.
        if let Some((first, rest)) = b.samples.split_first() {
            store.add_sample(bid, first).unwrap();
            let batch: Vec<(i64, Sample)> = rest.iter().map(|s| (bid, s.clone())).collect();
            store.add_samples(&batch).unwrap();
        }
        if let Some(locks) = &b.locks {
            store.set_locks(bid, locks).unwrap();
        }
        // As `run --profile` does: the stacks once the runs are done.
        if let Some(stacks) = &b.stacks {
            store.set_stacks(bid, stacks).unwrap();
        }
    }
    store
        .finish_run(id, RunStatus::Complete, "2026-12-03T08:00:05.000Z")
        .unwrap();
    id
}

#[test]
fn a_measured_run_and_an_ingested_run_load_back_identically() {
    for (name, mut store, _dir) in backends("round_trip") {
        let mut traced = bench("b", 9);
        traced.locks = Some(Box::new(perfsleuth_model::LockReport {
            runs: 9,
            lock_wait_ns: 1_000,
            lock_waits: 3,
            futexes: 1,
            sites: vec![perfsleuth_model::LockSite {
                kind: "mutex".into(),
                function: "hot_add".into(),
                location: "two_locks.c:27".into(),
                caller: Some("worker".into()),
                object: Some("hot".into()),
                wait_ns: 1_000,
                waits: 3,
                ..Default::default()
            }],
            ..Default::default()
        }));
        traced.stacks = Some(Box::new(perfsleuth_model::StackProfile {
            event: "cpu-clock".into(),
            period_ns: 1_003_009,
            kernel: true,
            iterations: vec![0, 1, 2],
            samples: 9,
            lost: 1,
            truncated: 0,
            periods_ns: vec![1_003_009, 950_000, 1_040_000],
            frames: vec![
                perfsleuth_model::ProfileFrame {
                    function: "main".into(),
                    module: "b".into(),
                    inlined: false,
                },
                perfsleuth_model::ProfileFrame {
                    function: "hot_add".into(),
                    module: "b".into(),
                    inlined: true,
                },
            ],
            stacks: vec![
                perfsleuth_model::ProfileStack {
                    frames: vec![0, 1],
                    counts: vec![2, 3, 1],
                },
                perfsleuth_model::ProfileStack {
                    frames: vec![0],
                    counts: vec![1, 0, 2],
                },
                // A wall profile's wait: its leaf says why.
                perfsleuth_model::ProfileStack {
                    frames: vec![0, 2],
                    counts: vec![4, 4, 5],
                },
            ],
            source: None,
            off_cpu_ns: vec![4_100_000, 3_900_000, 5_050_000],
        }));
        traced
            .stacks
            .as_mut()
            .unwrap()
            .frames
            .push(perfsleuth_model::OffCpuReason::Lock.frame());
        let original = run("main", vec![traced, bench("a", 2)]);
        let id = measure(store.as_mut(), &original);
        let loaded = store.load_run(id).unwrap().expect("stored");
        let mut expected = original.clone();
        expected.id = Some(id);
        expected.uuid = loaded.uuid.clone();
        assert_eq!(loaded, expected, "{name}");
        // Without the profiles: the same run, its stacks (and allocations) left out.
        let light = store.load_run_measurements(id).unwrap().expect("stored");
        let mut bare = expected.clone();
        for b in &mut bare.benchmarks {
            b.stacks = None;
            b.allocs = None;
        }
        assert_eq!(light, bare, "{name}");

        // The same run ingested whole into another project: equal but for its id.
        store.use_project("team");
        let got = store.ingest_run(&loaded).unwrap();
        assert!(got.created, "{name}");
        assert_eq!(
            Some(got.uuid.clone()),
            loaded.uuid,
            "{name}: the UUID is kept"
        );
        let copy = store.load_run(got.id).unwrap().expect("ingested");
        let mut again = loaded.clone();
        again.id = Some(got.id);
        assert_eq!(copy, again, "{name}");
    }
}

#[test]
fn a_run_of_more_benchmarks_than_one_read_holds_loads_back_whole() {
    // 1 201 benchmarks: three chunks of the sample read, with benchmarks of
    // no samples among them and chunks ending on either kind.
    for (name, mut store, _dir) in backends("many_benchmarks") {
        let benchmarks = (0..1_201u32)
            .map(|i| bench(&format!("b{i:04}"), i % 4))
            .collect();
        let mut original = run("main", benchmarks);
        original.uuid = Some("0b7c6a55-0000-4000-8000-000000001201".into());
        let got = store.ingest_run(&original).unwrap();
        let loaded = store.load_run(got.id).unwrap().expect("stored");
        assert_eq!(loaded.benchmarks, original.benchmarks, "{name}");
    }
}

#[test]
fn the_revision_moves_with_every_commit_and_never_with_a_read() {
    let dir = tempfile::tempdir().unwrap();
    let mut urls = vec![StoreUrl::Sqlite(dir.path().join("results.db"))];
    if let Some(url) = perfsleuth_testkit::fresh_postgres("revision") {
        urls.push(StoreUrl::parse(&url).unwrap());
    }
    for url in urls {
        let (mut one, mut other) = (url.open().unwrap(), url.open().unwrap());
        let first = one.revision().unwrap();
        measure(other.as_mut(), &run("main", vec![bench("a", 3)]));
        let read = || {
            one.list_runs(Some(10)).unwrap();
            one.load_run(1).unwrap();
        };
        let after_other = one.revision().unwrap();
        assert_ne!(
            after_other, first,
            "{url:?}: another handle's commit moves it"
        );
        // PostgreSQL's token is the whole server's: other tests' databases
        // on it move it too, so "unchanged" is asked a few times, and holds
        // at least once unless reads themselves move it.
        let holds = |check: &mut dyn FnMut() -> bool| (0..20).any(|_| check());
        assert!(
            holds(&mut || {
                let before = one.revision().unwrap();
                read();
                one.revision().unwrap() == before
            }),
            "{url:?}: reads leave it"
        );
        let before_own = one.revision().unwrap();
        one.ingest_run(&run("main", vec![bench("b", 2)])).unwrap();
        assert_ne!(
            one.revision().unwrap(),
            before_own,
            "{url:?}: its own commit moves it"
        );
        // Two handles on one store agree once both have looked.
        assert!(
            holds(&mut || {
                let theirs = other.revision().unwrap();
                one.revision().unwrap() == theirs
            }),
            "{url:?}: two handles agree"
        );
    }
}

#[test]
fn ingest_is_idempotent_by_uuid_and_atomic() {
    for (name, mut store, _dir) in backends("ingest") {
        store.use_project("p");
        let mut r = run("main", vec![bench("x", 300)]);
        r.uuid = Some("5b0f4a9e-0000-4000-8000-000000000001".into());
        let first = store.ingest_run(&r).unwrap();
        let second = store.ingest_run(&r).unwrap();
        assert!(first.created && !second.created, "{name}");
        assert_eq!(first.id, second.id, "{name}");
        // The benchmarks' ids come back in the run's order; none the second time.
        let entries = store.history_entries().unwrap();
        let stored: Vec<i64> = entries.iter().map(|e| e.benchmark_id).collect();
        assert_eq!(first.benchmark_ids, stored, "{name}");
        assert!(second.benchmark_ids.is_empty(), "{name}");
        assert_eq!(
            store.list_runs(None).unwrap().len(),
            1,
            "{name}: not duplicated"
        );
        let loaded = store.load_run(first.id).unwrap().unwrap();
        assert_eq!(loaded.benchmarks[0].samples.len(), 300, "{name}");

        // With its summaries, as a server ingests: cached in the same
        // transaction when the run is stored, left alone when it was there.
        let summary = MetricSummary {
            n: 2,
            median: 7.0,
            lo: 6.0,
            hi: 8.0,
        };
        let mut two = run("main", vec![bench("a", 2), bench("b", 2)]);
        two.uuid = Some("5b0f4a9e-0000-4000-8000-000000000003".into());
        let stored = store
            .ingest_run_summarized(&two, Metric::Wall, &[None, Some(summary)])
            .unwrap();
        let cached = store
            .metric_summaries(&stored.benchmark_ids, Metric::Wall)
            .unwrap();
        assert_eq!(
            format!("{cached:?}"),
            format!("{:?}", vec![None, Some(summary)]),
            "{name}"
        );
        let other = MetricSummary { n: 9, ..summary };
        let again = store
            .ingest_run_summarized(&two, Metric::Wall, &[Some(other), Some(other)])
            .unwrap();
        assert!(!again.created, "{name}");
        let kept = store
            .metric_summaries(&stored.benchmark_ids, Metric::Wall)
            .unwrap();
        assert_eq!(format!("{kept:?}"), format!("{cached:?}"), "{name}");

        // Two benchmarks at the same position cannot both be stored: the
        // second insert fails and nothing of the run is left behind.
        let mut bad = run("main", vec![bench("y", 3)]);
        bad.uuid = Some("5b0f4a9e-0000-4000-8000-000000000002".into());
        bad.benchmarks[0].samples[1].iteration = 0; // duplicate primary key
        assert!(store.ingest_run(&bad).is_err(), "{name}");
        assert_eq!(
            store.run_by_uuid(bad.uuid.as_deref().unwrap()).unwrap(),
            None,
            "{name}: a failed ingest leaves nothing"
        );
        assert_eq!(store.list_runs(None).unwrap().len(), 2, "{name}");
    }
}

#[test]
fn a_batch_of_runs_is_stored_in_one_transaction_each_run_once() {
    for (name, mut store, _dir) in backends("batch") {
        store.use_project("p");
        let uuid = |i: u32| format!("5b0f4a9e-0000-4000-8000-{i:012}");
        let mut held = run("main", vec![bench("h", 4)]);
        held.uuid = Some(uuid(1));
        let before = store.ingest_run(&held).unwrap();
        let mut a = run("main", vec![bench("a", 5), bench("b", 6)]);
        a.uuid = Some(uuid(2));
        let mut b = run("side", vec![bench("c", 7)]);
        b.uuid = Some(uuid(3));
        let fresh = run("main", vec![bench("d", 2)]);
        let summary = MetricSummary {
            n: 5,
            median: 3.0,
            lo: 2.0,
            hi: 4.0,
        };
        let summaries = [None, Some(summary)];
        let batch = [
            Incoming {
                run: &a,
                summaries: &summaries,
            },
            Incoming {
                run: &held,
                summaries: &[],
            },
            Incoming {
                run: &b,
                summaries: &[],
            },
            // The same run twice in one batch: stored once.
            Incoming {
                run: &a,
                summaries: &[],
            },
            Incoming {
                run: &fresh,
                summaries: &[],
            },
        ];
        let done = store.ingest_runs(&batch, Metric::Wall).unwrap();
        let created: Vec<bool> = done.iter().map(|d| d.created).collect();
        assert_eq!(created, [true, false, true, false, true], "{name}");
        assert_eq!(done[1].id, before.id, "{name}");
        assert_eq!(done[3].id, done[0].id, "{name}");
        assert_eq!(
            done[4].uuid.len(),
            36,
            "{name}: a run without one gets a UUID"
        );
        // Each run's samples under its own benchmarks, in its order.
        for (d, r) in [(&done[0], &a), (&done[2], &b), (&done[4], &fresh)] {
            let loaded = store.load_run(d.id).unwrap().unwrap();
            assert_eq!(loaded.benchmarks.len(), r.benchmarks.len(), "{name}");
            for (got, want) in loaded.benchmarks.iter().zip(&r.benchmarks) {
                assert_eq!(got.name, want.name, "{name}");
                assert_eq!(got.samples, want.samples, "{name}");
            }
            assert_eq!(d.benchmark_ids.len(), r.benchmarks.len(), "{name}");
        }
        let cached = store
            .metric_summaries(&done[0].benchmark_ids, Metric::Wall)
            .unwrap();
        assert_eq!(
            format!("{cached:?}"),
            format!("{:?}", vec![None, Some(summary)]),
            "{name}"
        );
        assert_eq!(store.list_runs(None).unwrap().len(), 4, "{name}");
        // Which are held, asked at once (unknown and other projects' absent).
        let (u1, u3, u9) = (uuid(1), uuid(3), uuid(9));
        let found = store.runs_by_uuids(&[&u1, &u3, &u9]).unwrap();
        assert_eq!(
            found,
            BTreeMap::from([(u1.clone(), before.id), (u3.clone(), done[2].id)]),
            "{name}"
        );
        store.use_project("q");
        assert!(store.runs_by_uuids(&[&u1]).unwrap().is_empty(), "{name}");
        store.use_project("p");

        // A batch with one run that cannot be stored stores none.
        let mut c = run("main", vec![bench("e", 3)]);
        c.uuid = Some(uuid(4));
        let mut bad = run("main", vec![bench("f", 3)]);
        bad.uuid = Some(uuid(5));
        bad.benchmarks[0].samples[1].iteration = 0;
        let batch = [
            Incoming {
                run: &c,
                summaries: &[],
            },
            Incoming {
                run: &bad,
                summaries: &[],
            },
        ];
        assert!(store.ingest_runs(&batch, Metric::Wall).is_err(), "{name}");
        assert_eq!(store.run_by_uuid(&uuid(4)).unwrap(), None, "{name}");
        assert_eq!(store.list_runs(None).unwrap().len(), 4, "{name}");
    }
}

/// PostgreSQL checks `samples`' key on `benchmarks` once per statement
/// (a row-level foreign key ran a query per sample): a sample of no
/// benchmark is still refused, deleting a run still deletes its samples,
/// and no row-level trigger is left on `samples`.
#[test]
fn postgres_checks_the_sample_key_per_statement_and_keeps_its_guarantees() {
    let Some(url) = perfsleuth_testkit::fresh_postgres("samplekey") else {
        return;
    };
    let mut s = PgStore::connect(&url).unwrap();
    s.use_project("p");
    let kept = s.ingest_run(&run("main", vec![bench("k", 4)])).unwrap();
    let gone = s
        .ingest_run(&run("main", vec![bench("x", 5), bench("y", 6)]))
        .unwrap();
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let per_row: i64 = c
        .query_one(
            "SELECT count(*) FROM pg_trigger WHERE tgrelid = 'samples'::regclass \
             AND (tgtype & 1) = 1",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(
        per_row, 0,
        "a row-level trigger (a foreign key's) checks each sample"
    );
    let orphan = c
        .execute(
            "INSERT INTO samples (benchmark_id, iteration, wall_ns, user_ns, sys_ns, \
             peak_rss_bytes, minor_faults, major_faults, voluntary_cs, involuntary_cs) \
             VALUES ($1, 0, 1, 1, 1, 1, 1, 1, 1, 1)",
            &[&(gone.benchmark_ids[1] + 1_000)],
        )
        .unwrap_err();
    assert_eq!(
        orphan.code(),
        Some(&postgres::error::SqlState::FOREIGN_KEY_VIOLATION),
        "{orphan}"
    );
    let count = |c: &mut postgres::Client, ids: &[i64]| -> i64 {
        c.query_one(
            "SELECT count(*) FROM samples WHERE benchmark_id = ANY($1)",
            &[&ids],
        )
        .unwrap()
        .get(0)
    };
    assert_eq!(count(&mut c, &gone.benchmark_ids), 11);
    c.execute("DELETE FROM runs WHERE id = $1", &[&gone.id])
        .unwrap();
    assert_eq!(
        count(&mut c, &gone.benchmark_ids),
        0,
        "the cascade reaches samples"
    );
    assert_eq!(
        count(&mut c, &kept.benchmark_ids),
        4,
        "other runs keep theirs"
    );
    // Through the store's own write path too: a batch of samples of no benchmark fails.
    let err = s
        .add_samples(&[(gone.benchmark_ids[0], sample(0))])
        .unwrap_err();
    assert!(!err.to_string().is_empty());
    assert_eq!(
        s.load_run(kept.id).unwrap().unwrap().benchmarks[0]
            .samples
            .len(),
        4
    );
}

#[test]
fn a_bisection_runs_are_listed_together_by_step_and_apart_from_other_projects() {
    for (name, mut store, _dir) in backends("bisection") {
        store.use_project("p");
        let tagged = |step: u64, kind: &str, commit: &str, started: &str| {
            let mut r = run("main", vec![bench("x", 3)]);
            r.started_at = started.into();
            r.options = serde_json::json!({"runs": 3, "bisect": {
                "id": "b1", "baseline": "aaa", "candidate": "ccc",
                "step": step, "kind": kind, "commit": commit}});
            r
        };
        // Stored out of step order, as a resumed bisection may store them.
        let split = measure(
            &mut *store,
            &tagged(2, "split", "bbb", "2026-12-03T08:01:00.000Z"),
        );
        let confirm = measure(
            &mut *store,
            &tagged(1, "confirm", "aaa", "2026-12-03T08:00:00.000Z"),
        );
        let other = measure(&mut *store, &run("main", vec![bench("x", 3)]));
        let listed = store.bisection_runs("b1").unwrap();
        let order: Vec<(u64, &str, i64)> = listed
            .iter()
            .map(|r| (r.step, r.kind.as_str(), r.run.id))
            .collect();
        assert_eq!(
            order,
            vec![(1, "confirm", confirm), (2, "split", split)],
            "{name}"
        );
        assert_eq!(listed[0].run.samples, 3, "{name}");
        assert!(store.bisection_runs("b2").unwrap().is_empty(), "{name}");
        let all = store.bisections(10).unwrap();
        assert_eq!(all.len(), 1, "{name}: {all:?}");
        assert_eq!(all[0].id, "b1");
        assert_eq!(all[0].runs, 2);
        assert_eq!(all[0].baseline.as_deref(), Some("aaa"));
        assert_eq!(all[0].candidate.as_deref(), Some("ccc"));
        assert_eq!(all[0].last_at, "2026-12-03T08:01:00.000Z");
        assert!(store.list_runs(None).unwrap().iter().any(|r| r.id == other));
        // Another project sees none of it.
        store.use_project("q");
        assert!(store.bisection_runs("b1").unwrap().is_empty(), "{name}");
        assert!(store.bisections(10).unwrap().is_empty(), "{name}");
    }
}

#[test]
fn projects_never_see_each_other_runs() {
    for (name, mut store, _dir) in backends("projects") {
        let local = measure(store.as_mut(), &run("main", vec![bench("a", 2)]));
        store.use_project("alpha");
        let alpha = store
            .ingest_run(&run("main", vec![bench("a", 2)]))
            .unwrap()
            .id;
        assert_eq!(store.load_run(local).unwrap(), None, "{name}");
        assert_eq!(store.resolve_run("latest").unwrap(), alpha, "{name}");
        assert!(store.resolve_run(&local.to_string()).is_err(), "{name}");
        assert_eq!(store.history_entries().unwrap().len(), 1, "{name}");
        store.use_project("beta");
        assert!(store.list_runs(None).unwrap().is_empty(), "{name}");
        assert!(matches!(
            store.resolve_run("latest"),
            Err(StoreError::NotFound(_))
        ));
        assert!(store.runs_on_branch("main").unwrap().is_empty(), "{name}");
        store.use_project("");
        assert_eq!(store.resolve_run("latest").unwrap(), local, "{name}");
    }
}

#[test]
fn queries_answer_the_same_on_both_backends() {
    let mut answers: Vec<(String, String)> = Vec::new();
    for (name, mut store, _dir) in backends("same_answers") {
        let mut probe_run = run("main", vec![]);
        probe_run.mode = Mode::Probe;
        let mut scale = run("main", vec![bench("s", 3)]);
        scale.options = serde_json::json!({"kind": "scale"});
        let a = measure(
            store.as_mut(),
            &run("main", vec![bench("a", 5), bench("b", 6)]),
        );
        let p = measure(store.as_mut(), &probe_run);
        store
            .add_probe_results(
                p,
                &[ProbeResult {
                    probe: "memory".into(),
                    metric: "l1_latency".into(),
                    value: f64::NAN,
                    unit: "ns".into(),
                    lower_is_better: true,
                    cycles: Some(4.0),
                    spread: 0.01,
                    stable: true,
                    headline: true,
                    note: Some("it's \"quoted\"; DROP TABLE runs; --".into()),
                }],
            )
            .unwrap();
        let s = measure(store.as_mut(), &scale);
        let b = measure(store.as_mut(), &run("feature", vec![bench("a", 4)]));
        let entries = store.history_entries().unwrap();
        // Scoped reads: by name, before a run, over the newest runs of
        // commands (the probe and the scale sweep are never among them).
        let scoped = |names: &[&str], before_run: Option<i64>, newest_runs: Option<usize>| {
            let scope = EntryScope {
                names: names.iter().map(|n| n.to_string()).collect(),
                before_run,
                newest_runs,
                summary_of: None,
            };
            store
                .history_entries_in(&scope)
                .unwrap()
                .iter()
                .map(|e| (e.run_id - a, e.name.clone()))
                .collect::<Vec<_>>()
        };
        let owned = |n: &str| n.to_string();
        assert_eq!(
            scoped(&["a"], None, None),
            [(0, owned("a")), (3, owned("a"))],
            "{name}"
        );
        assert_eq!(scoped(&["a"], Some(b), None), [(0, owned("a"))], "{name}");
        assert_eq!(scoped(&[], None, Some(1)), [(3, owned("a"))], "{name}");
        assert_eq!(
            scoped(&["a", "b"], Some(b), Some(1)),
            [(0, owned("a")), (0, owned("b"))],
            "{name}"
        );
        assert!(scoped(&["zz"], None, None).is_empty(), "{name}");
        let ids: Vec<i64> = entries.iter().map(|e| e.benchmark_id).collect();
        let walls = store.metric_values(&ids, Metric::Wall).unwrap();
        let sys = store.metric_values(&ids, Metric::Sys).unwrap();
        let summary = MetricSummary {
            n: 5,
            median: 1.5,
            lo: f64::NAN,
            hi: 2.0,
        };
        store
            .put_metric_summaries(Metric::Wall, &[(ids[0], summary)])
            .unwrap();
        // A benchmark given twice in one call: the last is kept (one
        // statement upserts them all, and PostgreSQL refuses to touch a row
        // twice in one statement).
        let stale = MetricSummary { n: 1, ..summary };
        store
            .put_metric_summaries(Metric::Wall, &[(ids[0], stale), (ids[0], summary)])
            .unwrap();
        let cached = store.metric_summaries(&ids[..2], Metric::Wall).unwrap();
        // The same summaries read with the entries: the cached one, and
        // "none cached" for the rest.
        let carried: Vec<_> = store
            .history_entries_in(&EntryScope {
                summary_of: Some(Metric::Wall),
                ..EntryScope::default()
            })
            .unwrap()
            .into_iter()
            .map(|e| e.summary)
            .collect();
        assert_eq!(carried.len(), ids.len(), "{name}");
        // Debug text: the cached summary holds a NaN, never equal to itself.
        assert_eq!(
            format!("{:?}", carried[0]),
            format!("{:?}", Some((Metric::Wall, cached[0]))),
            "{name}"
        );
        assert!(
            carried[1..]
                .iter()
                .all(|c| *c == Some((Metric::Wall, None))),
            "{name}: {carried:?}"
        );
        assert!(
            store
                .history_entries()
                .unwrap()
                .iter()
                .all(|e| e.summary.is_none()),
            "{name}"
        );
        let same = store
            .same_binary_runs(
                &format!("{:0>64}", "a"),
                &["sleep".to_string(), "a".to_string()],
                Mode::Walltime,
                &env("other-host"),
                10,
            )
            .unwrap();
        let probes = store.load_run(p).unwrap().unwrap().probes;
        let listing = store.list_runs(Some(3)).unwrap();
        let answer = format!(
            "ids={:?} kinds={:?} entries={} walls={walls:?} sys={sys:?} cached={:?}/{:?} same={:?} \
             probe_value_nan={} note={:?} latest_probe={:?} listing={:?} branch={:?} before={:?}",
            [a, p, s, b].map(|i| i - a),
            [
                store.resolve_run_of("latest", RunKind::Benchmarks).unwrap() - a,
                store.resolve_run_of("latest", RunKind::Probes).unwrap() - a,
                store
                    .resolve_run_of(
                        "latest",
                        RunKind::Like {
                            mode: Mode::Walltime,
                            scale: true
                        }
                    )
                    .unwrap()
                    - a,
                store
                    .resolve_run_of(
                        "latest~1",
                        RunKind::Like {
                            mode: Mode::Walltime,
                            scale: false
                        }
                    )
                    .unwrap()
                    - a,
            ],
            entries.len(),
            cached[0].map(|c| (c.n, c.median, c.lo.is_nan(), c.hi)),
            cached[1],
            same.iter().map(|r| r.id.unwrap() - a).collect::<Vec<_>>(),
            probes[0].value.is_nan(),
            probes[0].note,
            store
                .latest_probe_run_for(&env("x"))
                .unwrap()
                .map(|i| i - a),
            listing
                .iter()
                .map(|l| (l.id - a, l.samples, l.benchmarks.clone(), l.probes.clone()))
                .collect::<Vec<_>>(),
            store
                .runs_on_branch("feature")
                .unwrap()
                .iter()
                .map(|i| i - a)
                .collect::<Vec<_>>(),
            store
                .run_before_of(b, RunKind::Benchmarks)
                .unwrap()
                .map(|i| i - a),
        );
        answers.push((name, answer));
    }
    for (name, answer) in &answers[1..] {
        assert_eq!(
            answer, &answers[0].1,
            "{name} answers differently from sqlite"
        );
    }
    assert!(
        answers[0].1.contains("probe_value_nan=true"),
        "{}",
        answers[0].1
    );
}

#[test]
fn tokens_and_projects_are_stored_and_revoked() {
    for (name, mut store, _dir) in backends("tokens") {
        store
            .ensure_project("alpha", "2026-12-03T08:00:00Z")
            .unwrap();
        store
            .ensure_project("alpha", "2026-12-03T09:00:00Z")
            .unwrap();
        assert!(matches!(
            store.set_public_read("nope", true),
            Err(StoreError::NoProject(_))
        ));
        store.set_public_read("alpha", true).unwrap();
        let projects = store.projects().unwrap();
        assert_eq!(projects.len(), 1, "{name}");
        assert!(projects[0].public_read, "{name}");
        assert_eq!(
            projects[0].created_at, "2026-12-03T08:00:00Z",
            "{name}: created once"
        );
        let token = TokenRecord {
            id: 0,
            project: "alpha".into(),
            name: "ci".into(),
            hash: "ab".repeat(32),
            scopes: vec!["ingest".into(), "read".into()],
            created_at: "2026-12-03T08:00:00Z".into(),
            revoked_at: None,
        };
        let id = store.add_token(&token).unwrap();
        assert!(
            matches!(store.add_token(&token), Err(StoreError::Conflict(_))),
            "{name}"
        );
        let found = store.token_by_hash(&token.hash).unwrap().unwrap();
        assert_eq!(
            found,
            TokenRecord {
                id,
                ..token.clone()
            },
            "{name}"
        );
        assert!(
            store.revoke_token(id, "2026-12-03T10:00:00Z").unwrap(),
            "{name}"
        );
        assert!(
            !store.revoke_token(id, "2026-12-03T11:00:00Z").unwrap(),
            "{name}"
        );
        let listed = store.tokens(Some("alpha")).unwrap();
        assert_eq!(
            listed[0].revoked_at.as_deref(),
            Some("2026-12-03T10:00:00Z")
        );
        assert!(store.tokens(Some("beta")).unwrap().is_empty(), "{name}");
    }
}

#[test]
fn a_postgres_database_of_another_application_is_refused_untouched() {
    let Some(url) = perfsleuth_testkit::fresh_postgres("foreign") else {
        return;
    };
    {
        let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
        c.batch_execute("CREATE TABLE invoices (id int); INSERT INTO invoices VALUES (1)")
            .unwrap();
    }
    let err = PgStore::connect(&url).unwrap_err();
    assert!(matches!(err, StoreError::ForeignDatabase { .. }), "{err:?}");
    assert!(err.to_string().contains("createdb"), "{err}");
    let msg = err.to_string();
    assert!(
        !msg.contains("perfsleuth@") || !msg.contains(":perfsleuth@"),
        "no password: {msg}"
    );
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    let tables: i64 = c
        .query_one(
            "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(tables, 1, "nothing was created beside it");
}

#[test]
fn an_unreachable_server_is_one_line_with_a_hint_and_no_password() {
    // Port 1 on loopback: nothing listens there.
    let err = PgStore::connect("postgres://u:hunter2@127.0.0.1:1/db").unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, StoreError::Unreachable { .. }), "{err:?}");
    assert!(!msg.contains('\n') && msg.contains("hint"), "{msg}");
    assert!(!msg.contains("hunter2"), "{msg}");
    assert!(msg.contains("127.0.0.1:1"), "{msg}");
}

#[test]
fn concurrent_connections_ingesting_the_same_run_store_it_once() {
    let Some(url) = perfsleuth_testkit::fresh_postgres("race") else {
        return;
    };
    let mut r = run("main", vec![bench("x", 50)]);
    r.uuid = Some("5b0f4a9e-0000-4000-8000-0000000000ff".into());
    let handles: Vec<_> = (0..6)
        .map(|_| {
            let url = url.clone();
            let r = r.clone();
            std::thread::spawn(move || {
                let mut s = PgStore::connect(&url).unwrap();
                s.use_project("p");
                s.ingest_run(&r).unwrap()
            })
        })
        .collect();
    let results: Vec<_> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert_eq!(
        results.iter().filter(|i| i.created).count(),
        1,
        "{results:?}"
    );
    assert!(results.iter().all(|i| i.id == results[0].id), "{results:?}");
}

#[test]
fn a_password_with_an_unencoded_at_sign_is_refused_without_showing_it() {
    let err = PgStore::connect("postgres://u:Tr0ub@dor@127.0.0.1:1/db").unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("%40") && !msg.contains("Tr0ub") && !msg.contains("dor@"),
        "{msg}"
    );
}

/// The scans of `table` so far, (sequential, by index), as the statistics
/// collector has them.
fn scans(c: &mut postgres::Client, table: &str) -> (i64, i64) {
    c.batch_execute("SELECT pg_stat_clear_snapshot()").unwrap();
    let row = c
        .query_one(
            "SELECT coalesce(seq_scan, 0), coalesce(idx_scan, 0) FROM pg_stat_user_tables \
             WHERE relname = $1",
            &[&table],
        )
        .unwrap();
    (row.get(0), row.get(1))
}

#[test]
fn listing_runs_before_the_database_has_statistics_reads_samples_by_index() {
    // A server's bulk ingest is listed before autovacuum's ANALYZE: the
    // planner then has no statistics, and the listing's sample count, as
    // one join, scanned the whole samples table once per listed run
    // (5.7 s for 480 runs, ~90 s at 2 000).
    const RUNS: usize = 100;
    let Some(url) = perfsleuth_testkit::fresh_postgres("nostats") else {
        return;
    };
    let mut s = PgStore::connect(&url).unwrap();
    s.use_project("p");
    let mut c = postgres::Client::connect(&url, postgres::NoTls).unwrap();
    for t in ["runs", "benchmarks", "samples"] {
        c.batch_execute(&format!("ALTER TABLE {t} SET (autovacuum_enabled = false)"))
            .unwrap();
    }
    let mut ids = Vec::new();
    for i in 0..RUNS {
        let benches = (0..20).map(|b| bench(&format!("b{b}"), 10)).collect();
        let mut r = run("main", benches);
        r.uuid = Some(format!("5b0f4a9e-0000-4000-8000-{i:012}"));
        ids.push(s.ingest_run(&r).unwrap().id);
    }
    let analysed: i64 = c
        .query_one(
            "SELECT count(*) FROM pg_stats WHERE tablename = 'samples'",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(analysed, 0, "the test needs a table without statistics");
    // A backend's statistics reach the collector when it ends: the
    // listing gets a connection of its own, opened once the writer's are in.
    drop(s);
    let inserted = |c: &mut postgres::Client| -> i64 {
        c.batch_execute("SELECT pg_stat_clear_snapshot()").unwrap();
        c.query_one(
            "SELECT n_tup_ins FROM pg_stat_user_tables WHERE relname = 'samples'",
            &[],
        )
        .unwrap()
        .get(0)
    };
    let settled = |c: &mut postgres::Client, done: &dyn Fn(&mut postgres::Client) -> bool| {
        for _ in 0..300 {
            if done(c) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        panic!("the statistics collector did not report within 30 s");
    };
    settled(&mut c, &|c| inserted(c) == 200 * RUNS as i64);
    let before = scans(&mut c, "samples");
    let mut s = PgStore::connect(&url).unwrap();
    s.use_project("p");
    let listed = s.list_runs(None).unwrap();
    assert_eq!(listed.len(), RUNS);
    assert!(listed.iter().all(|r| r.samples == 200), "{listed:?}");
    drop(s);
    settled(&mut c, &|c| scans(c, "samples") != before);
    let after = scans(&mut c, "samples");
    assert!(
        after.1 > before.1,
        "no index scan of samples: {before:?} → {after:?}"
    );
    assert_eq!(
        after.0, before.0,
        "samples were scanned whole: {before:?} → {after:?}"
    );
}
