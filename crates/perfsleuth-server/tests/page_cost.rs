//! The project page's cost does not grow with the project (issue 54): the
//! statements one view runs, counted by the store, are the same at 60 runs
//! as at 600, on SQLite and on a real PostgreSQL. Its own test binary: the
//! count is the whole process's, and nothing else may run beside it.

mod common;

use common::*;
use perfsleuth_store::Store;

/// Stores `n` runs of three benchmarks in project app.
fn fill(store: &mut dyn Store, n: usize) {
    for i in 0..n {
        let mut r = run("parse", 1_000_000 + i as u64 * 100, 10);
        for name in ["render", "save"] {
            let mut b = r.benchmarks[0].clone();
            b.name = name.into();
            b.command = name.into();
            b.argv = vec![name.into()];
            r.benchmarks.push(b);
        }
        store.ingest_run(&r).unwrap();
    }
}

#[test]
fn the_project_page_runs_as_many_statements_at_600_runs_as_at_60() {
    let http = Http::new();
    for backend in backends("page_cost") {
        let mut store = backend.url.open().unwrap();
        let (_, secret) = token(&mut *store, "app", &["read"]);
        store.use_project("app");
        let base = start(backend.url.clone(), perfsleuth_server::DEFAULT_BODY_LIMIT);
        let view = |page: &str| {
            let before = perfsleuth_store::statements_issued();
            let reply = http.call("GET", &format!("{base}{page}"), Some(&secret), None);
            let statements = perfsleuth_store::statements_issued() - before;
            assert_eq!(reply.status, 200, "{}: {}", backend.name, reply.body);
            // The trend spans the newest runs only, whatever the project holds.
            assert!(
                reply.body.contains("parse over 50 runs"),
                "{}: {}",
                backend.name,
                reply.body
            );
            (statements, reply.body)
        };
        fill(&mut *store, 60);
        let (small, first) = view("/p/app");
        assert!(first.contains("href=\"/p/app?before=41\""), "{first}");
        fill(&mut *store, 540);
        let (large, _) = view("/p/app");
        eprintln!(
            "{}: {small} statements at 60 runs, {large} at 600",
            backend.name
        );
        assert_eq!(
            small, large,
            "{}: the page's statements grew with the project",
            backend.name
        );
        // A page deep in the history: the 20 runs before run 100, linked on
        // to the next page and back to the newest, at the same cost.
        let (deep, body) = view("/p/app?before=100");
        assert_eq!(deep, large, "{}: a later page costs more", backend.name);
        assert!(body.contains("Runs before run 100"), "{body}");
        assert!(body.contains("href=\"/p/app/runs/99\""), "{body}");
        assert!(!body.contains("href=\"/p/app/runs/100\""), "{body}");
        assert!(body.contains("href=\"/p/app?before=80\""), "{body}");
        assert!(body.contains("Newest runs"), "{body}");
        // The API pages the same way.
        let api = http.call(
            "GET",
            &format!("{base}/api/v1/projects/app/runs?limit=3&before=100"),
            Some(&secret),
            None,
        );
        let ids: Vec<i64> = api.json()["runs"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["id"].as_i64().unwrap())
            .collect();
        assert_eq!(ids, [99, 98, 97], "{}", api.body);
    }
}
