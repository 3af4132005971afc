//! A kept answer is served without being made again (issue 53): the
//! statements a repeated request runs, counted by the store, are fewer than
//! those of the request that made it, and a write makes the next request
//! make it again. Its own test binary: the count is the whole process's,
//! and nothing else may run beside it.

mod common;

use common::*;

#[test]
fn a_kept_answer_is_not_made_again_until_the_store_changes() {
    let http = Http::new();
    for backend in backends("kept_cost") {
        let mut store = backend.url.open().unwrap();
        let (_, secret) = token(&mut *store, "app", &["read"]);
        store.use_project("app");
        for ns in [1_000_000, 1_050_000, 1_100_000] {
            store.ingest_run(&run("parse", ns, 10)).unwrap();
        }
        let base = start(backend.url.clone(), perfsleuth_server::DEFAULT_BODY_LIMIT);
        let cost = |path: &str| {
            let before = perfsleuth_store::statements_issued();
            let reply = http.call("GET", &format!("{base}{path}"), Some(&secret), None);
            assert_eq!(
                reply.status, 200,
                "{}: {path}: {}",
                backend.name, reply.body
            );
            perfsleuth_store::statements_issued() - before
        };
        for path in [
            "/p/app",
            "/api/v1/projects/app/compare?baseline=latest~1&candidate=latest",
            "/api/v1/projects/app/history?bench=parse",
        ] {
            let made = cost(path);
            let kept = cost(path);
            assert!(
                kept < made,
                "{}: {path}: {made} statements to make, {kept} to serve again",
                backend.name
            );
            assert_eq!(cost(path), kept, "{}: {path}", backend.name);
            // A run stored by another connection: made again.
            store.ingest_run(&run("parse", 1_200_000, 10)).unwrap();
            assert!(
                cost(path) > kept,
                "{}: {path}: not made again",
                backend.name
            );
        }
    }
}
