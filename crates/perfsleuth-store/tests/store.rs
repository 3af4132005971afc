//! Store behaviour against real SQLite files in temporary directories.

use perfsleuth_model::{
    Benchmark, Environment, GitInfo, ImpactClass, Metric, Mode, ProbeResult, Run, RunStatus, Sample,
};
use perfsleuth_store::{
    APPLICATION_ID, MetricSummary, RunKind, RunReader as _, RunWriter as _, STORE_SCHEMA_VERSION,
    SqliteStore, Store, StoreError,
};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Barrier};

fn env(host: &str, governor: &str) -> Environment {
    let mut env = Environment::default();
    env.set("cpu.model", "Test CPU 9000", ImpactClass::Identity);
    env.set("kernel.release", "6.1.0-test", ImpactClass::Identity);
    env.set("cpu.governor", governor, ImpactClass::Performance);
    env.set("host.name", host, ImpactClass::Context);
    env.set("load.1m", "0.42", ImpactClass::Context);
    env
}

fn sample(i: u32) -> Sample {
    Sample {
        iteration: i,
        // Rounds of two samples each, so the column round-trips non-zero values.
        round: i / 2,
        wall_ns: 1_000_000 + u64::from(i),
        // Odd samples carry a fraction of a nanosecond (an imported time).
        wall_exact_ns: (i % 2 == 1).then(|| 1_000_000.25 + f64::from(i)),
        user_ns: 600_000,
        sys_ns: 300_000,
        peak_rss_bytes: 4 << 20,
        minor_faults: 120,
        major_faults: 0,
        voluntary_cs: 3,
        involuntary_cs: 1,
        exit_code: Some(0),
        signal: None,
        counters: BTreeMap::new(),
    }
}

fn bench(name: &str, samples: Vec<Sample>) -> Benchmark {
    Benchmark {
        locks: None,
        stacks: None,
        allocs: None,
        name: name.to_string(),
        command: format!("sleep {name}"),
        argv: vec!["sleep".into(), name.into()],
        parameters: BTreeMap::from([("N".to_string(), name.to_string())]),
        facts: {
            let mut facts = Environment::default();
            facts.set(
                "binary.sha256",
                format!("{name:0>64}"),
                ImpactClass::Identity,
            );
            facts.set("binary.abi", "x32", ImpactClass::Identity);
            facts
        },
        samples,
        profile: None,
        summaries: Vec::new(),
    }
}

fn run(host: &str, benchmarks: Vec<Benchmark>) -> Run {
    Run {
        id: None,
        uuid: None,
        started_at: "2024-02-29T12:34:56.123Z".into(),
        ended_at: None,
        status: RunStatus::Running,
        tool_version: "0.1.0".into(),
        git: Some(GitInfo {
            commit: "0123456789abcdef0123456789abcdef01234567".into(),
            branch: Some("main".into()),
            dirty: true,
        }),
        mode: Mode::Walltime,
        options: serde_json::json!({"warmup": 3, "runs": 10}),
        environment: env(host, "performance"),
        benchmarks,
        probes: Vec::new(),
    }
}

/// Stores a run the way the runner does: begin, benchmarks, samples, finish.
fn store_run(store: &mut dyn Store, run: &Run, status: RunStatus) -> i64 {
    let id = store.begin_run(run).unwrap();
    for b in &run.benchmarks {
        let bid = store.add_benchmark(id, b).unwrap();
        for s in &b.samples {
            store.add_sample(bid, s).unwrap();
        }
    }
    store
        .finish_run(id, status, "2024-02-29T12:35:00.000Z")
        .unwrap();
    id
}

fn db_path(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("results.db")
}

fn assert_one_line_with_path(err: &StoreError, path: &Path) {
    let msg = err.to_string();
    assert!(!msg.contains('\n'), "multi-line message: {msg}");
    assert!(
        msg.contains(&path.display().to_string()),
        "no path in: {msg}"
    );
    assert!(
        msg.contains("hint") || msg.contains("run `perfsleuth"),
        "no hint in: {msg}"
    );
}

fn raw(path: &Path) -> rusqlite::Connection {
    rusqlite::Connection::open(path).unwrap()
}

#[test]
fn a_run_round_trips_with_everything_it_holds() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("deep/er/results.db");
    let mut store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.path(), path);

    let mut odd = sample(1);
    odd.exit_code = None;
    odd.signal = Some(9);
    odd.wall_ns = u64::MAX; // survives the i64 column bit-for-bit
    odd.counters = BTreeMap::from([("instructions".into(), 1.5e9), ("cycles".into(), 2.0e9)]);
    let original = run(
        "box-1",
        vec![
            bench("b", vec![sample(0), odd]),
            bench("a", vec![sample(0)]),
        ],
    );
    let id = store_run(&mut store, &original, RunStatus::Complete);
    drop(store);

    let store = SqliteStore::open_existing(&path).unwrap();
    let loaded = store.load_run(id).unwrap().expect("stored run");
    let mut expected = original.clone();
    expected.id = Some(id);
    let uuid = loaded.uuid.clone().expect("a stored run has a UUID");
    assert_eq!(uuid.len(), 36, "a UUID: {uuid}");
    expected.uuid = Some(uuid);
    expected.status = RunStatus::Complete;
    expected.ended_at = Some("2024-02-29T12:35:00.000Z".into());
    assert_eq!(loaded, expected);
    assert_eq!(
        loaded.benchmarks[0].name, "b",
        "insertion order is display order"
    );
    assert_eq!(store.load_run(id + 100).unwrap(), None);
}

#[test]
fn a_run_without_git_or_samples_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&db_path(&dir)).unwrap();
    let mut r = run("h", vec![bench("x", vec![])]);
    r.git = None;
    r.mode = Mode::Simulation;
    r.options = serde_json::Value::Null;
    r.environment = Environment::default();
    let id = store.begin_run(&r).unwrap();
    store.add_benchmark(id, &r.benchmarks[0]).unwrap();
    let loaded = store.load_run(id).unwrap().unwrap();
    assert_eq!(loaded.status, RunStatus::Running);
    assert_eq!(loaded.ended_at, None);
    assert_eq!(loaded.git, None);
    assert_eq!(loaded.mode, Mode::Simulation);
    assert_eq!(loaded.benchmarks, r.benchmarks);
}

#[test]
fn non_finite_counters_load_as_nan() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&db_path(&dir)).unwrap();
    let id = store.begin_run(&run("h", vec![])).unwrap();
    let bid = store.add_benchmark(id, &bench("x", vec![])).unwrap();
    let mut s = sample(0);
    s.counters.insert("ipc".into(), f64::NAN);
    store.add_sample(bid, &s).unwrap();
    let loaded = store.load_run(id).unwrap().unwrap();
    assert!(loaded.benchmarks[0].samples[0].counters["ipc"].is_nan());
}

#[test]
fn environments_are_deduplicated_by_their_stable_facts() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    let mut store = SqliteStore::open(&path).unwrap();
    let a = store.begin_run(&run("host-a", vec![])).unwrap();
    let b = store.begin_run(&run("host-b", vec![])).unwrap();
    let mut other = run("host-a", vec![]);
    other.environment = env("host-a", "powersave");
    store.begin_run(&other).unwrap();

    let count: i64 = raw(&path)
        .query_row("SELECT count(*) FROM environments", [], |r| r.get(0))
        .unwrap();
    assert_eq!(count, 2, "context facts must not split environments");
    // Context facts come back per run.
    let la = store.load_run(a).unwrap().unwrap();
    let lb = store.load_run(b).unwrap().unwrap();
    assert_eq!(la.environment.get("host.name"), Some("host-a"));
    assert_eq!(lb.environment.get("host.name"), Some("host-b"));
    assert_eq!(lb.environment, env("host-b", "performance"));
}

#[test]
fn list_runs_is_newest_first_with_summaries() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&db_path(&dir)).unwrap();
    assert!(store.list_runs(None).unwrap().is_empty());
    let first = store_run(
        &mut store,
        &run("h1", vec![bench("one", vec![sample(0), sample(1)])]),
        RunStatus::Complete,
    );
    let second = store_run(
        &mut store,
        &run(
            "h2",
            vec![
                bench("two", vec![sample(0)]),
                bench("three", vec![sample(0), sample(1), sample(2)]),
            ],
        ),
        RunStatus::Interrupted,
    );
    let third = store.begin_run(&run("h3", vec![])).unwrap();

    let all = store.list_runs(None).unwrap();
    assert_eq!(
        all.iter().map(|l| l.id).collect::<Vec<_>>(),
        [third, second, first]
    );
    let l = &all[1];
    assert_eq!(l.status, RunStatus::Interrupted);
    assert_eq!(l.benchmarks, ["two", "three"]);
    assert_eq!(l.samples, 4);
    assert_eq!(l.cpu_model.as_deref(), Some("Test CPU 9000"));
    assert_eq!(l.host.as_deref(), Some("h2"));
    assert_eq!(l.mode, Mode::Walltime);
    assert!(l.git.as_ref().is_some_and(|g| g.dirty));
    assert_eq!(all[0].status, RunStatus::Running);
    assert_eq!(all[0].ended_at, None);
    assert_eq!(all[0].samples, 0);

    let limited = store.list_runs(Some(2)).unwrap();
    assert_eq!(
        limited.iter().map(|l| l.id).collect::<Vec<_>>(),
        [third, second]
    );
    let json = serde_json::to_value(&limited[1]).unwrap();
    assert_eq!(json["status"], "interrupted");
}

#[test]
fn run_specs_resolve_to_ids() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&db_path(&dir)).unwrap();
    assert!(matches!(
        store.resolve_run("latest"),
        Err(StoreError::NotFound(_))
    ));
    let ids: Vec<i64> = (0..3)
        .map(|_| store.begin_run(&run("h", vec![])).unwrap())
        .collect();
    assert_eq!(store.resolve_run("latest").unwrap(), ids[2]);
    assert_eq!(store.resolve_run("latest~0").unwrap(), ids[2]);
    assert_eq!(store.resolve_run("latest~1").unwrap(), ids[1]);
    assert_eq!(store.resolve_run("latest~").unwrap(), ids[1]);
    assert_eq!(store.resolve_run("latest~2").unwrap(), ids[0]);
    assert_eq!(store.resolve_run(&ids[1].to_string()).unwrap(), ids[1]);
    for bad in ["latest~3", "latest~-1", "latest~x", "999", "-1", "nope", ""] {
        let err = store.resolve_run(bad).unwrap_err();
        assert!(matches!(err, StoreError::NotFound(_)), "{bad}: {err}");
        assert!(err.to_string().contains("perfsleuth runs"), "{err}");
    }
}

#[test]
fn writes_to_unknown_runs_are_not_found() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&db_path(&dir)).unwrap();
    assert!(matches!(
        store.add_benchmark(42, &bench("x", vec![])),
        Err(StoreError::NotFound(id)) if id == "42"
    ));
    assert!(matches!(
        store.finish_run(42, RunStatus::Failed, "2024-01-01T00:00:00.000Z"),
        Err(StoreError::NotFound(_))
    ));
    // Foreign keys are on: a sample for no benchmark is refused, not orphaned.
    assert!(store.add_sample(42, &sample(0)).is_err());
}

#[test]
fn a_new_store_is_marked_versioned_and_in_wal_mode() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    drop(SqliteStore::open(&path).unwrap());
    drop(SqliteStore::open(&path).unwrap()); // reopening migrates nothing
    let conn = raw(&path);
    let app: i32 = conn
        .pragma_query_value(None, "application_id", |r| r.get(0))
        .unwrap();
    let ver: i32 = conn
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    let mode: String = conn
        .pragma_query_value(None, "journal_mode", |r| r.get(0))
        .unwrap();
    assert_eq!(app as u32, APPLICATION_ID);
    assert_eq!(ver as u32, STORE_SCHEMA_VERSION);
    assert_eq!(mode, "wal");
}

#[test]
fn a_zero_byte_file_is_initialised() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    std::fs::write(&path, b"").unwrap();
    assert!(matches!(
        SqliteStore::open_existing(&path),
        Err(StoreError::NoResults { .. })
    ));
    let mut store = SqliteStore::open(&path).unwrap();
    let id = store.begin_run(&run("h", vec![])).unwrap();
    assert!(store.load_run(id).unwrap().is_some());
}

/// Asserts opening fails with `expected` and leaves the file and its directory as they were.
fn assert_refused(path: &Path, expected: fn(&StoreError) -> bool) {
    let before = std::fs::read(path).unwrap();
    let listing = |p: &Path| {
        let mut names: Vec<_> = std::fs::read_dir(p.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name())
            .collect();
        names.sort();
        names
    };
    let files_before = listing(path);
    for result in [SqliteStore::open(path), SqliteStore::open_existing(path)] {
        let err = result.unwrap_err();
        assert!(expected(&err), "unexpected error: {err:?}");
        assert_one_line_with_path(&err, path);
    }
    assert_eq!(
        std::fs::read(path).unwrap(),
        before,
        "the file was modified"
    );
    assert_eq!(listing(path), files_before, "files appeared next to it");
}

#[test]
fn a_text_file_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("notes.txt");
    std::fs::write(&path, "these are my notes, not a database\n".repeat(100)).unwrap();
    assert_refused(&path, |e| matches!(e, StoreError::NotADatabase { .. }));
    // Short files and a bare magic string are not databases either.
    std::fs::write(&path, "x").unwrap();
    assert_refused(&path, |e| matches!(e, StoreError::NotADatabase { .. }));
    std::fs::write(&path, b"SQLite format 3\0").unwrap();
    assert_refused(&path, |e| matches!(e, StoreError::NotADatabase { .. }));
}

#[test]
fn a_directory_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let err = SqliteStore::open(dir.path()).unwrap_err();
    assert!(matches!(err, StoreError::NotADatabase { .. }), "{err:?}");
}

#[test]
fn another_programs_sqlite_database_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("plain.db");
    let conn = raw(&plain);
    conn.execute_batch("CREATE TABLE t (x); INSERT INTO t VALUES (1);")
        .unwrap();
    drop(conn);
    assert_refused(&plain, |e| matches!(e, StoreError::NotADatabase { .. }));

    let tagged = dir.path().join("tagged.db");
    let conn = raw(&tagged);
    conn.execute_batch("PRAGMA application_id = 305419896; CREATE TABLE t (x);")
        .unwrap();
    drop(conn);
    assert_refused(&tagged, |e| matches!(e, StoreError::NotADatabase { .. }));
}

#[test]
fn a_newer_schema_is_refused_with_an_upgrade_hint() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    drop(SqliteStore::open(&path).unwrap());
    raw(&path).pragma_update(None, "user_version", 99).unwrap();
    assert_refused(&path, |e| {
        matches!(e, StoreError::NewerSchema { found: 99, supported, .. } if *supported == STORE_SCHEMA_VERSION)
            && e.to_string().contains("upgrade perfsleuth")
    });
}

/// A real store with a few runs, closed and checkpointed.
fn populated(dir: &tempfile::TempDir) -> PathBuf {
    let path = db_path(dir);
    let mut store = SqliteStore::open(&path).unwrap();
    for i in 0..5 {
        let samples = (0..50).map(sample).collect();
        store_run(
            &mut store,
            &run(&format!("h{i}"), vec![bench("b", samples)]),
            RunStatus::Complete,
        );
    }
    drop(store);
    path
}

fn garble(path: &Path, range: std::ops::Range<usize>) {
    let mut bytes = std::fs::read(path).unwrap();
    assert!(
        range.end <= bytes.len(),
        "test database too small: {}",
        bytes.len()
    );
    for (i, b) in bytes[range].iter_mut().enumerate() {
        *b = (i as u8).wrapping_mul(151).wrapping_add(7);
    }
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn a_store_with_garbage_pages_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = populated(&dir);
    let len = std::fs::metadata(&path).unwrap().len() as usize;
    // Everything but the header page and the last page.
    garble(&path, 4096..len - 4096);
    assert_refused(&path, |e| {
        matches!(
            e,
            StoreError::Corrupt { .. } | StoreError::NotADatabase { .. }
        )
    });
}

#[test]
fn a_store_with_a_garbled_schema_page_is_refused_and_left_untouched() {
    let dir = tempfile::tempdir().unwrap();
    let path = populated(&dir);
    garble(&path, 100..4096);
    assert_refused(&path, |e| {
        matches!(
            e,
            StoreError::Corrupt { .. } | StoreError::NotADatabase { .. }
        )
    });
}

#[test]
fn damage_deep_inside_never_panics_and_opening_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = populated(&dir);
    let len = std::fs::metadata(&path).unwrap().len() as usize;
    // The second half holds sample pages but no table roots.
    garble(&path, len / 2..len);
    let before = std::fs::read(&path).unwrap();
    // Opening may or may not notice; reading must then fail cleanly, not panic.
    let mut errors = Vec::new();
    match SqliteStore::open_existing(&path) {
        Err(e) => errors.push(e),
        Ok(store) => {
            errors.extend(store.list_runs(None).err());
            errors.extend((1..=5).filter_map(|id| store.load_run(id).err()));
        }
    }
    assert!(!errors.is_empty(), "the damage went unnoticed");
    for e in &errors {
        assert!(
            matches!(
                e,
                StoreError::Corrupt { .. } | StoreError::NotADatabase { .. }
            ),
            "{e:?}"
        );
        assert_one_line_with_path(e, &path);
    }
    assert_eq!(std::fs::read(&path).unwrap(), before);
}

#[test]
fn a_parent_that_is_a_file_is_unwritable() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("plain-file");
    std::fs::write(&file, "x").unwrap();
    let path = file.join("sub/results.db");
    let err = SqliteStore::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::Unwritable { .. }), "{err:?}");
    assert_one_line_with_path(&err, &path);
    assert_eq!(std::fs::read(&file).unwrap(), b"x");
}

#[test]
fn a_missing_store_has_no_results_yet() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("nothing/here.db");
    let err = SqliteStore::open_existing(&path).unwrap_err();
    assert!(matches!(err, StoreError::NoResults { .. }), "{err:?}");
    assert_eq!(
        err.to_string(),
        format!(
            "no results stored yet at {} (run `perfsleuth run` first)",
            path.display()
        )
    );
    assert!(
        !path.parent().unwrap().exists(),
        "open_existing must create nothing"
    );
}

#[test]
fn a_perfsleuth_directory_gets_a_gitignore() {
    let dir = tempfile::tempdir().unwrap();
    let store_dir = dir.path().join(".perfsleuth");
    drop(SqliteStore::open(&store_dir.join("results.db")).unwrap());
    assert_eq!(
        std::fs::read_to_string(store_dir.join(".gitignore"))
            .unwrap()
            .trim(),
        "*"
    );

    // A user's own .gitignore is never replaced.
    std::fs::write(store_dir.join(".gitignore"), "mine\n").unwrap();
    drop(SqliteStore::open(&store_dir.join("results.db")).unwrap());
    assert_eq!(
        std::fs::read_to_string(store_dir.join(".gitignore")).unwrap(),
        "mine\n"
    );

    // Other directories are left alone.
    drop(SqliteStore::open(&dir.path().join("elsewhere/results.db")).unwrap());
    assert!(!dir.path().join("elsewhere/.gitignore").exists());
}

#[test]
fn the_default_path_prefers_the_git_work_tree() {
    let dir = tempfile::tempdir().unwrap();
    let repo = dir.path().join("repo");
    let sub = repo.join("src/deep");
    std::fs::create_dir_all(&sub).unwrap();
    std::fs::create_dir(repo.join(".git")).unwrap();
    let xdg = Some(OsStr::new("/xdg"));
    let home = Some(OsStr::new("/home/u"));
    assert_eq!(
        SqliteStore::default_path(&sub, xdg, home),
        Some(repo.join(".perfsleuth/results.db"))
    );

    // Worktrees and submodules have a `.git` file instead of a directory.
    let wt = dir.path().join("worktree");
    std::fs::create_dir(&wt).unwrap();
    std::fs::write(wt.join(".git"), "gitdir: /elsewhere\n").unwrap();
    assert_eq!(
        SqliteStore::default_path(&wt, None, None),
        Some(wt.join(".perfsleuth/results.db"))
    );

    let outside = dir.path().join("plain");
    std::fs::create_dir(&outside).unwrap();
    if dir.path().ancestors().any(|d| d.join(".git").exists()) {
        return; // the temp dir itself lives in a repository; the rest cannot be tested here
    }
    assert_eq!(
        SqliteStore::default_path(&outside, xdg, home),
        Some(PathBuf::from("/xdg/perfsleuth/results.db"))
    );
    assert_eq!(
        SqliteStore::default_path(&outside, Some(OsStr::new("relative")), home),
        Some(PathBuf::from("/home/u/.local/share/perfsleuth/results.db"))
    );
    assert_eq!(
        SqliteStore::default_path(&outside, Some(OsStr::new("")), home),
        Some(PathBuf::from("/home/u/.local/share/perfsleuth/results.db"))
    );
    assert_eq!(
        SqliteStore::default_path(&outside, None, Some(OsStr::new(""))),
        None
    );
    assert_eq!(SqliteStore::default_path(&outside, None, None), None);
}

#[test]
fn store_urls_parse_to_paths() {
    let p = |s: &str| SqliteStore::path_from_url(s).unwrap();
    assert_eq!(p("sqlite:results.db"), PathBuf::from("results.db"));
    assert_eq!(p("sqlite:/tmp/r.db"), PathBuf::from("/tmp/r.db"));
    assert_eq!(p("sqlite:///tmp/r.db"), PathBuf::from("/tmp/r.db"));
    assert_eq!(p("/var/r.db"), PathBuf::from("/var/r.db"));
    assert_eq!(p("r.db"), PathBuf::from("r.db"));
    assert_eq!(p("odd:name.db"), PathBuf::from("odd:name.db"));
    for bad in ["postgres://user@host/db", "file:///tmp/x.db", "", "sqlite:"] {
        let err = SqliteStore::path_from_url(bad).unwrap_err();
        assert!(
            matches!(err, StoreError::UnsupportedUrl { .. }),
            "{bad}: {err:?}"
        );
        let msg = err.to_string();
        assert!(msg.contains("sqlite:PATH") && !msg.contains('\n'), "{msg}");
    }
    let msg = SqliteStore::path_from_url("postgres://x")
        .unwrap_err()
        .to_string();
    assert!(msg.contains("`postgres`"), "{msg}");
}

#[test]
fn two_writers_on_one_new_store_both_succeed() {
    for round in 0..3 {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(format!("shared/{round}/results.db"));
        let barrier = Arc::new(Barrier::new(2));
        let handles: Vec<_> = (0..2)
            .map(|t| {
                let path = path.clone();
                let barrier = Arc::clone(&barrier);
                std::thread::spawn(move || {
                    barrier.wait(); // open at the same moment to race the migration too
                    let mut store = SqliteStore::open(&path).unwrap();
                    let samples: Vec<Sample> = (0..200).map(sample).collect();
                    let r = run(
                        &format!("thread-{t}"),
                        vec![bench(&format!("t{t}"), samples)],
                    );
                    let id = store_run(&mut store, &r, RunStatus::Complete);
                    (id, r)
                })
            })
            .collect();
        let results: Vec<(i64, Run)> = handles.into_iter().map(|h| h.join().unwrap()).collect();
        assert_ne!(results[0].0, results[1].0);

        let store = SqliteStore::open_existing(&path).unwrap();
        for (id, original) in results {
            let loaded = store.load_run(id).unwrap().unwrap();
            assert_eq!(loaded.status, RunStatus::Complete);
            assert_eq!(loaded.benchmarks, original.benchmarks);
            assert_eq!(loaded.benchmarks[0].samples.len(), 200);
        }
        assert_eq!(store.list_runs(None).unwrap().len(), 2);
    }
}

#[test]
fn runs_are_found_by_commit_branch_and_order() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&dir.path().join("r.db")).unwrap();
    let mut ids = Vec::new();
    for (commit, branch, status) in [
        ("aaa", "main", RunStatus::Complete),
        ("bbb", "main", RunStatus::Complete),
        ("bbb", "main", RunStatus::Failed),
        ("bbb", "topic", RunStatus::Complete),
    ] {
        let mut r = run("h", vec![]);
        r.git = Some(GitInfo {
            commit: commit.into(),
            branch: Some(branch.into()),
            dirty: false,
        });
        let id = store.begin_run(&r).unwrap();
        store
            .finish_run(id, status, "2024-01-01T00:00:00.000Z")
            .unwrap();
        ids.push(id);
    }
    assert_eq!(store.runs_at_commit("bbb").unwrap(), vec![ids[3], ids[1]]);
    assert_eq!(store.runs_on_branch("main").unwrap(), vec![ids[1], ids[0]]);
    assert!(store.runs_at_commit("ccc").unwrap().is_empty());
    assert_eq!(store.run_before(ids[2]).unwrap(), Some(ids[1]));
    assert_eq!(store.run_before(ids[0]).unwrap(), None);
}

#[test]
fn profiles_round_trip_and_an_older_store_gains_the_column() {
    use perfsleuth_model::{FunctionProfile, Profile};
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    // A store made before profiles existed (schema 2), with a run in it.
    {
        let conn = raw(&path);
        let mut store = SqliteStore::open(&path).unwrap();
        let id = store_run(
            &mut store,
            &run("old", vec![bench("a", vec![sample(0)])]),
            RunStatus::Complete,
        );
        drop(store);
        conn.execute_batch(
            "DROP TABLE metric_summaries; DROP TABLE probe_results; \
             ALTER TABLE benchmarks DROP COLUMN profile; \
             ALTER TABLE samples DROP COLUMN round; \
             ALTER TABLE samples DROP COLUMN wall_exact_ns; ALTER TABLE benchmarks DROP COLUMN summaries; \
             DROP INDEX runs_started; DROP INDEX benchmarks_name; DROP INDEX benchmarks_binary; ALTER TABLE benchmarks DROP COLUMN binary_sha256; DROP INDEX runs_bisection; ALTER TABLE runs DROP COLUMN bisection; DROP INDEX runs_project_uuid; DROP INDEX runs_project; ALTER TABLE runs DROP COLUMN uuid; ALTER TABLE runs DROP COLUMN project; DROP TABLE projects; DROP TABLE tokens; ALTER TABLE benchmarks DROP COLUMN locks; ALTER TABLE benchmarks DROP COLUMN stacks; ALTER TABLE benchmarks DROP COLUMN allocs; PRAGMA user_version = 2;",
        )
        .unwrap();
        drop(conn);
        let store = SqliteStore::open(&path).unwrap();
        let loaded = store.load_run(id).unwrap().expect("old run survives");
        assert_eq!(loaded.benchmarks[0].profile, None);
    }
    let mut store = SqliteStore::open(&path).unwrap();
    let profile = Profile {
        events: vec!["Ir".into(), "Dr".into()],
        totals: vec![1000, 300],
        functions: vec![FunctionProfile {
            object: "libc.so.6".into(),
            file: String::new(),
            function: "_int_malloc".into(),
            self_cost: vec![900, 250],
            inclusive: vec![950, 260],
            calls: 12,
        }],
        ..Profile::default()
    };
    let mut with = bench("sim", vec![sample(0)]);
    with.profile = Some(Box::new(profile.clone()));
    let id = store_run(
        &mut store,
        &run("new", vec![with, bench("later", vec![sample(0)])]),
        RunStatus::Complete,
    );
    let loaded = store.load_run(id).unwrap().expect("run");
    assert_eq!(loaded.benchmarks[0].profile.as_deref(), Some(&profile));
    assert_eq!(loaded.benchmarks[1].profile, None);
    // Set after the runs, as simulation mode does.
    let ids: Vec<i64> = raw(&path)
        .prepare("SELECT id FROM benchmarks WHERE run_id = ?1 ORDER BY position")
        .unwrap()
        .query_map([id], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    store.set_profile(ids[1], &profile).unwrap();
    let loaded = store.load_run(id).unwrap().expect("run");
    assert_eq!(loaded.benchmarks[1].profile.as_deref(), Some(&profile));
    assert!(store.set_profile(ids[1] + 1000, &profile).is_err());
}

fn probe_result(probe: &str, metric: &str, value: f64, headline: bool) -> ProbeResult {
    ProbeResult {
        probe: probe.into(),
        metric: metric.into(),
        value,
        unit: "ns".into(),
        lower_is_better: true,
        cycles: Some(value * 3.7),
        spread: 0.02,
        stable: true,
        headline,
        note: Some(format!("{metric} per iteration")),
    }
}

/// A `perfsleuth probe` run: no benchmarks, results added per probe.
fn store_probe_run(store: &mut dyn Store, env: Environment, batches: &[Vec<ProbeResult>]) -> i64 {
    let mut r = run("h", vec![]);
    r.mode = Mode::Probe;
    r.options = serde_json::json!({"probes": ["calls", "syscall"], "quick": true});
    r.environment = env;
    let id = store.begin_run(&r).unwrap();
    for batch in batches {
        store.add_probe_results(id, batch).unwrap();
    }
    store
        .finish_run(id, RunStatus::Complete, "2024-02-29T12:35:00.000Z")
        .unwrap();
    id
}

#[test]
fn probe_results_round_trip_and_a_schema_3_store_gains_the_table() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    // A store made before probes existed (schema 3), with a run in it.
    let old = {
        let conn = raw(&path);
        let mut store = SqliteStore::open(&path).unwrap();
        let id = store_run(
            &mut store,
            &run("old", vec![bench("a", vec![sample(0)])]),
            RunStatus::Complete,
        );
        drop(store);
        conn.execute_batch(
            "DROP TABLE metric_summaries; DROP TABLE probe_results; \
             ALTER TABLE samples DROP COLUMN round; \
             ALTER TABLE samples DROP COLUMN wall_exact_ns; ALTER TABLE benchmarks DROP COLUMN summaries; \
             DROP INDEX runs_started; DROP INDEX benchmarks_name; DROP INDEX benchmarks_binary; ALTER TABLE benchmarks DROP COLUMN binary_sha256; DROP INDEX runs_bisection; ALTER TABLE runs DROP COLUMN bisection; DROP INDEX runs_project_uuid; DROP INDEX runs_project; ALTER TABLE runs DROP COLUMN uuid; ALTER TABLE runs DROP COLUMN project; DROP TABLE projects; DROP TABLE tokens; ALTER TABLE benchmarks DROP COLUMN locks; ALTER TABLE benchmarks DROP COLUMN stacks; ALTER TABLE benchmarks DROP COLUMN allocs; PRAGMA user_version = 3;",
        )
        .unwrap();
        id
    };
    let mut store = SqliteStore::open(&path).unwrap();
    let version: u32 = raw(&path)
        .pragma_query_value(None, "user_version", |r| r.get(0))
        .unwrap();
    assert_eq!(version, STORE_SCHEMA_VERSION);
    let loaded = store.load_run(old).unwrap().expect("the old run survives");
    assert_eq!(loaded.benchmarks[0].samples.len(), 1);
    // Migration 5: samples stored before rounds existed are of round 0.
    assert_eq!(loaded.benchmarks[0].samples[0].round, 0);
    assert!(loaded.probes.is_empty());

    // Results added in two transactions keep their order; odd values survive.
    let calls = vec![
        probe_result("calls", "inline_loop", 0.54, true),
        probe_result("calls", "direct_call", 1.35, true),
    ];
    let mut syscall = vec![
        probe_result("syscall", "getppid", 164.5, true),
        probe_result("syscall", "clock_gettime_syscall", f64::NAN, false),
    ];
    syscall[1].cycles = None;
    syscall[1].note = None;
    syscall[1].unit = "ratio".into();
    syscall[1].lower_is_better = false;
    let id = store_probe_run(
        &mut store,
        env("h", "performance"),
        &[calls.clone(), syscall.clone()],
    );
    let loaded = store.load_run(id).unwrap().expect("probe run");
    assert_eq!(loaded.mode, Mode::Probe);
    assert!(loaded.benchmarks.is_empty());
    assert_eq!(loaded.probes.len(), 4);
    assert_eq!(
        &loaded.probes[..3],
        &[calls[0].clone(), calls[1].clone(), syscall[0].clone()]
    );
    let nan = &loaded.probes[3];
    assert!(nan.value.is_nan());
    assert_eq!(
        (
            nan.cycles,
            nan.note.as_deref(),
            nan.unit.as_str(),
            nan.lower_is_better,
            nan.headline
        ),
        (None, None, "ratio", false, false)
    );
    assert!(matches!(
        store.add_probe_results(id + 100, &calls),
        Err(StoreError::NotFound(_))
    ));

    // Listed with their mode and probes; older runs list no probes.
    let list = store.list_runs(None).unwrap();
    assert_eq!(list[0].id, id);
    assert_eq!(list[0].mode, Mode::Probe);
    assert_eq!(list[0].probes, ["calls", "syscall"]);
    assert_eq!(list[0].samples, 0);
    assert!(list[1].probes.is_empty());
    let json = serde_json::to_value(&list[0]).unwrap();
    assert_eq!(json["mode"], "probe");
    assert!(
        serde_json::to_value(&list[1])
            .unwrap()
            .get("probes")
            .is_none()
    );
}

#[test]
fn probe_runs_are_counted_apart_and_found_by_machine() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&db_path(&dir)).unwrap();
    let results = vec![probe_result("calls", "indirect_call", 1.35, true)];
    let bench_run = store_run(&mut store, &run("h", vec![]), RunStatus::Complete);
    let mut ibrs = env("h", "performance");
    ibrs.set(
        "mitigation.spectre_v2",
        "Mitigation: IBRS",
        ImpactClass::Performance,
    );
    let mut other_kernel = env("h", "performance");
    other_kernel.set("kernel.release", "6.99.0-test", ImpactClass::Identity);
    let p1 = store_probe_run(
        &mut store,
        env("h", "performance"),
        std::slice::from_ref(&results),
    );
    let p2 = store_probe_run(&mut store, ibrs.clone(), std::slice::from_ref(&results));
    let bench_after = store_run(&mut store, &run("h", vec![]), RunStatus::Complete);

    assert_eq!(store.resolve_run("latest").unwrap(), bench_after);
    assert_eq!(store.resolve_run_of("latest", RunKind::Probes).unwrap(), p2);
    assert_eq!(
        store.resolve_run_of("latest~1", RunKind::Probes).unwrap(),
        p1
    );
    assert!(store.resolve_run_of("latest~2", RunKind::Probes).is_err());
    assert_eq!(
        store
            .resolve_run_of("latest~1", RunKind::Benchmarks)
            .unwrap(),
        bench_run
    );
    // An id names any run, whatever its kind.
    assert_eq!(
        store
            .resolve_run_of(&p1.to_string(), RunKind::Benchmarks)
            .unwrap(),
        p1
    );
    assert_eq!(
        store
            .run_before_of(bench_after, RunKind::Benchmarks)
            .unwrap(),
        Some(bench_run)
    );
    assert_eq!(
        store.run_before_of(bench_after, RunKind::Probes).unwrap(),
        Some(p2)
    );
    // Probe runs are not revisions' or branches' runs of commands.
    assert_eq!(
        store.runs_on_branch("main").unwrap(),
        vec![bench_after, bench_run]
    );

    // The same identity and performance facts first, then the same comparability hash.
    let ctx_only = env("other-host", "performance");
    assert_eq!(store.latest_probe_run_for(&ctx_only).unwrap(), Some(p1));
    assert_eq!(store.latest_probe_run_for(&ibrs).unwrap(), Some(p2));
    let powersave = env("h", "powersave");
    assert_eq!(store.latest_probe_run_for(&powersave).unwrap(), Some(p2));
    assert_eq!(store.latest_probe_run_for(&other_kernel).unwrap(), None);
}

#[test]
fn same_binary_runs_match_hash_argv_mode_and_machine_class() {
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&db_path(&dir)).unwrap();
    let samples = || (0..4).map(sample).collect::<Vec<_>>();
    // Runs 1-3: benchmark "a" (hash of "a") beside "b"; run 2 is on another
    // host (context only: the same class), run 3 on another CPU.
    let both = |host: &str| run(host, vec![bench("a", samples()), bench("b", samples())]);
    let r1 = store_run(&mut store, &both("h1"), RunStatus::Complete);
    let r2 = store_run(&mut store, &both("h2"), RunStatus::Complete);
    let mut other_cpu = both("h1");
    other_cpu
        .environment
        .set("cpu.model", "Other CPU", ImpactClass::Identity);
    store_run(&mut store, &other_cpu, RunStatus::Complete);
    // Run 4: interrupted; run 5: other arguments; run 6: simulation mode.
    store_run(&mut store, &both("h1"), RunStatus::Interrupted);
    let mut other_args = run("h1", vec![bench("a", samples())]);
    other_args.benchmarks[0].argv.push("--fast".into());
    store_run(&mut store, &other_args, RunStatus::Complete);
    let mut sim = both("h1");
    sim.mode = Mode::Simulation;
    store_run(&mut store, &sim, RunStatus::Complete);

    let hash = format!("{:0>64}", "a");
    let argv = vec!["sleep".to_string(), "a".to_string()];
    let machine = env("h9", "powersave");
    let found = store
        .same_binary_runs(&hash, &argv, Mode::Walltime, &machine, 10)
        .unwrap();
    let ids: Vec<Option<i64>> = found.iter().map(|r| r.id).collect();
    assert_eq!(
        ids,
        vec![Some(r2), Some(r1)],
        "newest first, same class only"
    );
    for r in &found {
        assert_eq!(r.benchmarks.len(), 1, "only the matching benchmark");
        assert_eq!(r.benchmarks[0].name, "a");
        assert_eq!(r.benchmarks[0].samples.len(), 4);
    }
    let one = store
        .same_binary_runs(&hash, &argv, Mode::Walltime, &machine, 1)
        .unwrap();
    assert_eq!(one.len(), 1);
    let none = store
        .same_binary_runs(
            &format!("{:0>64}", "z"),
            &argv,
            Mode::Walltime,
            &machine,
            10,
        )
        .unwrap();
    assert!(none.is_empty());
    // All of a run's programs at once: each program's runs as alone, the
    // same run given to two programs with each its own benchmark.
    let hash_b = format!("{:0>64}", "b");
    let argv_b = vec!["sleep".to_string(), "b".to_string()];
    let fast = vec!["sleep".to_string(), "a".to_string(), "--fast".to_string()];
    let programs: Vec<(&str, &[String])> = vec![
        (&hash, &argv),
        (&hash_b, &argv_b),
        (&hash, &fast),
        (&hash, &argv),
    ];
    let all = store
        .same_binary_runs_of(&programs, Mode::Walltime, &machine, 10)
        .unwrap();
    assert_eq!(all.len(), 4);
    for (got, (h, a)) in all.iter().zip(&programs) {
        let alone = store
            .same_binary_runs(h, a, Mode::Walltime, &machine, 10)
            .unwrap();
        assert_eq!(got, &alone, "{a:?}");
    }
    let names = |runs: &[perfsleuth_model::Run]| -> Vec<(i64, String)> {
        runs.iter()
            .map(|r| (r.id.unwrap(), r.benchmarks[0].name.clone()))
            .collect()
    };
    assert_eq!(names(&all[0]), [(r2, "a".into()), (r1, "a".into())]);
    assert_eq!(names(&all[1]), [(r2, "b".into()), (r1, "b".into())]);
    assert_eq!(all[2].len(), 1, "the run with --fast");
    assert!(
        store
            .same_binary_runs_of(&[], Mode::Walltime, &machine, 10)
            .unwrap()
            .is_empty()
    );
}

#[test]
fn history_reads_and_a_schema_5_store_gains_the_summary_cache() {
    let dir = tempfile::tempdir().unwrap();
    let path = db_path(&dir);
    let (done, _running) = {
        let conn = raw(&path);
        let mut store = SqliteStore::open(&path).unwrap();
        let done = store_run(
            &mut store,
            &run("a", vec![bench("x", vec![sample(0), sample(1)])]),
            RunStatus::Complete,
        );
        let running = store_run(
            &mut store,
            &run("a", vec![bench("x", vec![sample(0)])]),
            RunStatus::Running,
        );
        drop(store);
        // Back to version 5: without the summaries and the exact wall times
        // (a version-5 store never had them; sample 1's fraction is lost).
        conn.execute_batch(
            "DROP TABLE metric_summaries; ALTER TABLE samples DROP COLUMN wall_exact_ns; ALTER TABLE benchmarks DROP COLUMN summaries; \
             DROP INDEX runs_started; DROP INDEX benchmarks_name; DROP INDEX benchmarks_binary; ALTER TABLE benchmarks DROP COLUMN binary_sha256; DROP INDEX runs_bisection; ALTER TABLE runs DROP COLUMN bisection; DROP INDEX runs_project_uuid; DROP INDEX runs_project; ALTER TABLE runs DROP COLUMN uuid; ALTER TABLE runs DROP COLUMN project; DROP TABLE projects; DROP TABLE tokens; ALTER TABLE benchmarks DROP COLUMN locks; ALTER TABLE benchmarks DROP COLUMN stacks; ALTER TABLE benchmarks DROP COLUMN allocs; PRAGMA user_version = 5;",
        )
        .unwrap();
        (done, running)
    };
    let mut store = SqliteStore::open(&path).unwrap();
    // Only complete runs are history.
    let entries = store.history_entries().unwrap();
    assert_eq!(entries.len(), 1);
    assert_eq!((entries[0].run_id, entries[0].name.as_str()), (done, "x"));
    let ids = [entries[0].benchmark_id];
    let values = store.metric_values(&ids, Metric::Wall).unwrap();
    assert_eq!(
        values[0],
        [sample(0).wall_ns as f64, sample(1).wall_ns as f64]
    );
    assert_eq!(store.metric_summaries(&ids, Metric::Wall).unwrap(), [None]);
    let s = MetricSummary {
        n: 2,
        median: 1.5,
        lo: 1.0,
        hi: f64::NAN,
    };
    store
        .put_metric_summaries(Metric::Wall, &[(ids[0], s)])
        .unwrap();
    let back = store.metric_summaries(&ids, Metric::Wall).unwrap()[0].unwrap();
    assert_eq!((back.n, back.median, back.lo), (2, 1.5, 1.0));
    assert!(back.hi.is_nan(), "NaN comes back as NaN");
    assert_eq!(store.metric_summaries(&ids, Metric::User).unwrap(), [None]);
    let envs = store
        .environments(&[entries[0].environment_id, 999])
        .unwrap();
    assert_eq!(envs.len(), 1);
}

#[test]
fn reported_summaries_round_trip() {
    use perfsleuth_model::ReportedSummary;
    let dir = tempfile::tempdir().unwrap();
    let mut store = SqliteStore::open(&db_path(&dir)).unwrap();
    let mut b = bench("bmf", Vec::new());
    b.summaries = vec![ReportedSummary {
        metric: "wall".into(),
        value: 88.5,
        kind: "value".into(),
        lower: Some(87.0),
        upper: Some(90.25),
        stddev: None,
        n: None,
    }];
    let id = store_run(&mut store, &run("a", vec![b.clone()]), RunStatus::Complete);
    let loaded = store.load_run(id).unwrap().unwrap();
    assert_eq!(loaded.benchmarks[0].summaries, b.summaries);
    assert!(loaded.benchmarks[0].samples.is_empty());
}
