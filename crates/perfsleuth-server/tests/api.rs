//! The JSON API over real HTTP on loopback, against a real SQLite file and
//! a real PostgreSQL database (`$PERFSLEUTH_TEST_POSTGRES`; `.ci/run` starts
//! one): every endpoint, every answer validated against its committed JSON
//! Schema, and the security cases (tokens, scopes, projects, injection,
//! traversal, oversized and malformed bodies).

mod common;

use common::*;
use perfsleuth_model::RunStatus;
use serde_json::Value;

/// Validates `doc` against `docs/schema/<stem>.schema.json`.
#[track_caller]
fn assert_valid(stem: &str, doc: &Value) {
    let path = format!(
        "{}/../../docs/schema/{stem}.schema.json",
        env!("CARGO_MANIFEST_DIR")
    );
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let errors: Vec<String> = validator.iter_errors(doc).map(|e| e.to_string()).collect();
    assert!(errors.is_empty(), "{stem}: {errors:?}\n{doc:#}");
}

/// An error answer: the status, a `perfsleuth/error` document, a hint.
#[track_caller]
fn assert_error(r: &Reply, status: u16) -> Value {
    assert_eq!(r.status, status, "{}", r.body);
    let doc = r.json();
    assert_valid("error", &doc);
    assert_eq!(doc["status"], status);
    assert!(doc["hint"].as_str().is_some_and(|h| !h.is_empty()), "{doc}");
    doc
}

#[test]
fn every_endpoint_answers_with_its_typed_document() {
    let http = Http::new();
    for b in backends("endpoints") {
        let name = b.name;
        let mut store = b.url.open().unwrap();
        let (_, secret) = token(&mut *store, "app", &["ingest", "read"]);
        let base = start(b.url.clone(), 1 << 20);
        let health = http.call("GET", &format!("{base}/api/v1/health"), None, None);
        assert_eq!(health.status, 200, "{name}");
        assert_valid("health", &health.json());
        assert_eq!(health.json()["store"], name);

        // Nothing pushed yet: said as such.
        let empty = http.call(
            "GET",
            &format!("{base}/api/v1/projects/app/compare"),
            Some(&secret),
            None,
        );
        let doc = assert_error(&empty, 404);
        assert_eq!(doc["error"], "this project has no runs yet", "{name}");
        let runs = format!("{base}/api/v1/projects/app/runs");
        let mut first = run("parse", 1_000_000, 30);
        first.uuid = Some("0e9f6a4c-1111-4aaa-8bbb-000000000001".into());
        let r = http.call("POST", &runs, Some(&secret), Some(&export(&first)));
        assert_eq!(r.status, 201, "{name}: {}", r.body);
        let ingest = r.json();
        assert_valid("ingest", &ingest);
        assert_eq!(ingest["uuid"], "0e9f6a4c-1111-4aaa-8bbb-000000000001");
        let id = ingest["id"].as_i64().unwrap();
        assert_eq!(r.header("location"), ingest["url"].as_str());
        // The upload cached its wall-time summary, as history computes it
        // from the samples (the project page reads it, not the samples).
        store.use_project("app");
        let entries = store.history_entries().unwrap();
        let cached = store
            .metric_summaries(&[entries[0].benchmark_id], perfsleuth_model::Metric::Wall)
            .unwrap();
        let values: Vec<f64> = first.benchmarks[0]
            .samples
            .iter()
            .map(|x| perfsleuth_model::Metric::Wall.of(x))
            .collect();
        assert_eq!(
            cached[0],
            perfsleuth_history::summarize(&values),
            "{name}: the upload's summary"
        );
        assert!(cached[0].is_some(), "{name}");
        // The first run alone: no baseline, and the hint speaks of the API.
        let none = http.call(
            "GET",
            &format!("{base}/api/v1/projects/app/compare"),
            Some(&secret),
            None,
        );
        let doc = assert_error(&none, 404);
        assert!(
            doc["hint"].as_str().unwrap().contains("?baseline="),
            "{doc}"
        );
        // No such endpoint: a perfsleuth/error too.
        assert_error(
            &http.call("GET", &format!("{base}/api/v1/nope"), None, None),
            404,
        );
        // A retried upload stores nothing new.
        let again = http.call("POST", &runs, Some(&secret), Some(&export(&first)));
        assert_eq!(again.status, 200, "{name}");
        assert_eq!(again.json()["created"], false);
        assert_eq!(again.json()["id"], id);
        // The candidate: 30 % slower.
        let slow = run("parse", 1_300_000, 30);
        let r = http.call("POST", &runs, Some(&secret), Some(&export(&slow)));
        assert_eq!(r.status, 201, "{name}");

        let list = http.call("GET", &format!("{runs}?limit=10"), Some(&secret), None);
        assert_eq!(list.status, 200);
        assert_valid("runs", &list.json());
        assert_eq!(list.json()["runs"].as_array().unwrap().len(), 2, "{name}");

        for spec in [
            id.to_string(),
            "0e9f6a4c-1111-4aaa-8bbb-000000000001".into(),
            "latest~1".into(),
        ] {
            let got = http.call("GET", &format!("{runs}/{spec}"), Some(&secret), None);
            assert_eq!(got.status, 200, "{name} {spec}: {}", got.body);
            let doc = got.json();
            assert_valid("run", &doc);
            assert_eq!(
                doc["run"]["benchmarks"][0]["samples"]
                    .as_array()
                    .unwrap()
                    .len(),
                30
            );
        }
        let head = http.call(
            "HEAD",
            &format!("{runs}/0e9f6a4c-1111-4aaa-8bbb-000000000001"),
            Some(&secret),
            None,
        );
        assert_eq!(head.status, 200);
        let head = http.call(
            "HEAD",
            &format!("{runs}/0e9f6a4c-1111-4aaa-8bbb-00000000ffff"),
            Some(&secret),
            None,
        );
        assert_eq!(head.status, 404);

        let project = format!("{base}/api/v1/projects/app");
        let cmp = http.call(
            "GET",
            &format!("{project}/compare?baseline=latest~1&candidate=latest"),
            Some(&secret),
            None,
        );
        assert_eq!(cmp.status, 200, "{name}: {}", cmp.body);
        let doc = cmp.json();
        assert_valid("compare", &doc);
        let wall = doc["rows"]
            .as_array()
            .unwrap()
            .iter()
            .find(|r| r["metric"] == "wall")
            .unwrap();
        assert_eq!(wall["verdict"], "regressed", "{name}: {wall}");
        // The default baseline is the earlier run, as in `perfsleuth compare`.
        let default = http.call("GET", &format!("{project}/compare"), Some(&secret), None);
        assert_eq!(default.json()["baseline"], doc["baseline"], "{name}");
        let md = http.call(
            "GET",
            &format!("{project}/compare.md?baseline={id}"),
            Some(&secret),
            None,
        );
        assert_eq!(md.status, 200);
        assert!(
            md.header("content-type")
                .unwrap()
                .starts_with("text/markdown")
        );
        assert!(
            md.body.contains("| `parse` | wall (gating)") && md.body.contains("regressed"),
            "{}",
            md.body
        );

        let hist = http.call(
            "GET",
            &format!("{project}/history?bench=parse&metric=wall&branch=main"),
            Some(&secret),
            None,
        );
        assert_eq!(hist.status, 200, "{name}: {}", hist.body);
        assert_valid("history", &hist.json());
        assert_eq!(
            hist.json()["series"][0]["points"].as_array().unwrap().len(),
            2
        );

        let diff = http.call(
            "GET",
            &format!("{project}/env/diff?a={id}&b=latest&all=true"),
            Some(&secret),
            None,
        );
        assert_eq!(diff.status, 200, "{name}: {}", diff.body);
        assert_valid("env-diff", &diff.json());
        assert_eq!(diff.json()["identical"], true);
    }
}

#[test]
fn tokens_scopes_and_projects_are_enforced() {
    let http = Http::new();
    for b in backends("auth") {
        let name = b.name;
        let mut store = b.url.open().unwrap();
        let (_, ingest_only) = token(&mut *store, "app", &["ingest"]);
        let (_, read_only) = token(&mut *store, "app", &["read"]);
        let (revoked_id, revoked) = token(&mut *store, "app", &["admin"]);
        let (_, admin) = token(&mut *store, "app", &["admin"]);
        let (_, other) = token(&mut *store, "other", &["admin"]);
        store
            .revoke_token(revoked_id, "2026-12-03T09:00:00Z")
            .unwrap();
        let base = start(b.url.clone(), 1 << 20);
        let runs = format!("{base}/api/v1/projects/app/runs");
        let body = export(&run("x", 1000, 5));

        let r = http.call("POST", &runs, None, Some(&body));
        assert_error(&r, 401);
        assert_eq!(r.header("www-authenticate"), Some("Bearer"), "{name}");
        assert_error(
            &http.call("POST", &runs, Some("pst_0000"), Some(&body)),
            401,
        );
        assert_error(&http.call("POST", &runs, Some(&revoked), Some(&body)), 401);
        assert_error(
            &http.call("POST", &runs, Some(&read_only), Some(&body)),
            403,
        );
        assert_error(&http.call("POST", &runs, Some(&other), Some(&body)), 403);
        assert_error(&http.call("GET", &runs, Some(&ingest_only), None), 403);
        assert_error(&http.call("GET", &runs, Some(&other), None), 403);
        assert_eq!(
            http.call("POST", &runs, Some(&ingest_only), Some(&body))
                .status,
            201
        );
        assert_eq!(http.call("GET", &runs, Some(&read_only), None).status, 200);
        assert_eq!(http.call("GET", &runs, Some(&admin), None).status, 200);
        // A project that does not exist: no token can open it.
        let ghost = format!("{base}/api/v1/projects/ghost/runs");
        assert_error(&http.call("GET", &ghost, Some(&admin), None), 403);
        assert_error(&http.call("GET", &ghost, None, None), 401);

        // Public reads: no token to read, still one to write.
        assert_error(&http.call("GET", &runs, None, None), 401);
        store.set_public_read("app", true).unwrap();
        assert_eq!(http.call("GET", &runs, None, None).status, 200, "{name}");
        assert_eq!(
            http.call(
                "GET",
                &format!("{base}/api/v1/projects/app/compare?baseline=latest&candidate=latest"),
                None,
                None
            )
            .status,
            200
        );
        assert_error(&http.call("POST", &runs, None, Some(&body)), 401);
        // Public means public: a token of another project, or a revoked
        // one, does not shut a reader out (a dashboard cookie of project
        // `other` must not hide project `app`).
        assert_eq!(
            http.call("GET", &runs, Some(&other), None).status,
            200,
            "{name}"
        );
        assert_eq!(
            http.call("GET", &runs, Some(&revoked), None).status,
            200,
            "{name}"
        );
        assert_error(&http.call("POST", &runs, Some(&other), Some(&body)), 403);
        // Reads never write, not even the history's summary cache (an
        // upload caches wall time only: the read asks for CPU time).
        let hist = http.call(
            "GET",
            &format!("{base}/api/v1/projects/app/history?metric=cpu"),
            None,
            None,
        );
        assert_eq!(hist.status, 200, "{name}: {}", hist.body);
        store.use_project("app");
        let ids: Vec<i64> = store
            .history_entries()
            .unwrap()
            .iter()
            .map(|e| e.benchmark_id)
            .collect();
        assert!(!ids.is_empty());
        let cached = store
            .metric_summaries(&ids, perfsleuth_model::Metric::Cpu)
            .unwrap();
        assert!(
            cached.iter().all(Option::is_none),
            "{name}: an anonymous read cached summaries"
        );
        // A malformed header is refused, not ignored.
        let r = http
            .agent
            .get(&runs)
            .header("Authorization", "Basic YTpi")
            .call()
            .unwrap();
        assert_eq!(r.status().as_u16(), 401, "{name}");
    }
}

#[test]
fn injection_traversal_and_bad_bodies_are_refused_or_stored_verbatim() {
    let http = Http::new();
    let evil = "x'); DROP TABLE runs; --";
    for b in backends("hostile") {
        let name = b.name;
        let mut store = b.url.open().unwrap();
        let (_, secret) = token(&mut *store, "app", &["admin"]);
        let base = start(b.url.clone(), 64 << 10);
        let runs = format!("{base}/api/v1/projects/app/runs");
        // Stored verbatim: a benchmark named like an injection.
        let r = http.call(
            "POST",
            &runs,
            Some(&secret),
            Some(&export(&run(evil, 1000, 5))),
        );
        assert_eq!(r.status, 201, "{name}: {}", r.body);
        let id = r.json()["id"].as_i64().unwrap();
        let got = http.call("GET", &format!("{runs}/{id}"), Some(&secret), None);
        assert_eq!(got.json()["run"]["benchmarks"][0]["name"], evil);

        let q = |s: &str| {
            s.bytes()
                .map(|c| match c {
                    b'a'..=b'z' | b'A'..=b'Z' | b'0'..=b'9' | b'-' | b'_' | b'.' => {
                        (c as char).to_string()
                    }
                    _ => format!("%{c:02X}"),
                })
                .collect::<String>()
        };
        let project = format!("{base}/api/v1/projects/app");
        for (path, status) in [
            (format!("{runs}/{}", q(evil)), 404),
            (format!("{runs}/1%20OR%201=1"), 404),
            (format!("{project}/compare?baseline={}", q(evil)), 404),
            (
                format!("{project}/compare?candidate={}", q("latest' --")),
                404,
            ),
            (
                format!("{project}/history?bench={}", q("1' OR '1'='1")),
                404,
            ),
            (format!("{project}/history?metric={}", q(evil)), 400),
            (format!("{project}/history?branch={}", q(evil)), 404),
            (format!("{project}/env/diff?a={}&b=1", q(evil)), 404),
            (format!("{project}/env/diff?a=1"), 400),
            (format!("{runs}?limit=-1"), 400),
            (format!("{base}/api/v1/projects/{}/runs", q(evil)), 400),
            (format!("{base}/api/v1/projects/..%2F..%2Fetc/runs"), 400),
            (format!("{base}/api/v1/projects/%2e%2e/runs"), 400),
            (format!("{base}/api/v1/projects/.hidden/runs"), 400),
        ] {
            let r = http.call("GET", &path, Some(&secret), None);
            assert_error(&r, status);
        }
        // The evil name is a benchmark like any other.
        let h = http.call(
            "GET",
            &format!("{project}/history?bench={}", q(evil)),
            Some(&secret),
            None,
        );
        assert_eq!(h.json()["series"][0]["benchmark"], evil, "{name}");
        // Nothing was executed: the table and its run are still there.
        let list = http.call("GET", &runs, Some(&secret), None);
        assert_eq!(list.json()["runs"].as_array().unwrap().len(), 1, "{name}");

        // Bodies: too large, not JSON, not UTF-8, another document, a running run, a bad UUID.
        let big = export(&run("big", 1000, 2000));
        assert!(big.len() > 64 << 10);
        // Every time: the server reads the excess before answering, so the
        // client gets its 413 rather than a broken pipe it would retry.
        for _ in 0..5 {
            assert_error(&http.call("POST", &runs, Some(&secret), Some(&big)), 413);
        }
        assert_error(&http.call("POST", &runs, Some(&secret), Some(&big)), 413);
        assert_error(
            &http.call("POST", &runs, Some(&secret), Some(b"{not json")),
            400,
        );
        assert_error(
            &http.call("POST", &runs, Some(&secret), Some(&[0xff, 0xfe, 0x00])),
            400,
        );
        assert_error(
            &http.call(
                "POST",
                &runs,
                Some(&secret),
                Some(br#"{"schema":"perfsleuth/compare","schema_version":2}"#),
            ),
            400,
        );
        let mut running = run("r", 1000, 3);
        running.status = RunStatus::Running;
        assert_error(
            &http.call("POST", &runs, Some(&secret), Some(&export(&running))),
            422,
        );
        let mut bad = run("u", 1000, 3);
        bad.uuid = Some("'; DROP TABLE runs; --".into());
        assert_error(
            &http.call("POST", &runs, Some(&secret), Some(&export(&bad))),
            400,
        );
        // Two samples of one iteration: the same 422 on both backends, never a retryable 5xx.
        let mut dup = run("d", 1000, 3);
        dup.benchmarks[0].samples[1].iteration = 0;
        assert_error(
            &http.call("POST", &runs, Some(&secret), Some(&export(&dup))),
            422,
        );
        let list = http.call("GET", &runs, Some(&secret), None);
        assert_eq!(
            list.json()["runs"].as_array().unwrap().len(),
            1,
            "{name}: refused bodies store nothing"
        );
        // Text PostgreSQL cannot store is the run's fault (422), not the
        // server's (a 5xx the client would retry); SQLite stores it.
        let nul = http.call(
            "POST",
            &runs,
            Some(&secret),
            Some(&export(&run("a\u{0}b", 1000, 3))),
        );
        match name {
            "postgres" => {
                assert_error(&nul, 422);
            }
            _ => assert_eq!(nul.status, 201, "{}", nul.body),
        }
    }
}

#[test]
fn runs_are_filtered_by_branch_machine_and_benchmark_across_pages() {
    // More runs than one page of the listing (500): the filters must hold
    // across pages, before the limit, in the API and on the project page.
    let http = Http::new();
    for backend in backends("filters") {
        let mut store = backend.url.open().unwrap();
        let (_, secret) = token(&mut *store, "app", &["read"]);
        store.use_project("app");
        let n = 1100;
        for i in 0..n {
            let mut r = run(if i % 7 == 0 { "render" } else { "parse" }, 1_000_000, 2);
            r.git = Some(perfsleuth_model::GitInfo {
                commit: format!("{i:040x}"),
                branch: Some(if i % 3 == 0 { "feature" } else { "main" }.into()),
                dirty: false,
            });
            store.ingest_run(&r).unwrap();
        }
        let base = start(backend.url.clone(), perfsleuth_server::DEFAULT_BODY_LIMIT);
        let get = |path: &str| http.call("GET", &format!("{base}{path}"), Some(&secret), None);
        let ids = |query: &str| -> Vec<i64> {
            let r = get(&format!("/api/v1/projects/app/runs?{query}"));
            assert_eq!(r.status, 200, "{}: {query}: {}", backend.name, r.body);
            assert_valid("runs", &r.json());
            r.json()["runs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|x| x["id"].as_i64().unwrap())
                .collect()
        };
        // Run i + 1 is the i-th stored.
        let want = |keep: &dyn Fn(i64) -> bool, limit: usize| -> Vec<i64> {
            (1..=n)
                .rev()
                .filter(|&id| keep(id - 1))
                .take(limit)
                .collect()
        };
        assert_eq!(
            ids("branch=feature&limit=1000"),
            want(&|i| i % 3 == 0, 1000),
            "{}",
            backend.name
        );
        assert_eq!(
            ids("branch=feature&bench=rend&limit=5"),
            want(&|i| i % 21 == 0, 5),
            "{}",
            backend.name
        );
        assert_eq!(
            ids("branch=main&limit=3&before=600"),
            want(&|i| i % 3 != 0 && i < 599, 3),
            "{}",
            backend.name
        );
        let class = get("/api/v1/projects/app/runs?limit=1");
        let hash = class.json()["runs"][0]["comparability"]
            .as_str()
            .unwrap()
            .to_string();
        assert_eq!(
            ids(&format!("machine={}&limit=2", &hash[..12])),
            [1100, 1099]
        );
        assert!(ids("machine=ffffffffffff&limit=2").is_empty());
        assert_eq!(
            ids("branch=&limit=2"),
            [1100, 1099],
            "an empty filter is none"
        );
        let bad = get("/api/v1/projects/app/runs?mode=fast");
        assert_error(&bad, 400);
        // The project page: the same filter, kept by its form and paging.
        let page = get("/p/app?branch=feature");
        assert_eq!(page.status, 200, "{}", page.body);
        assert!(page.body.contains("value=\"feature\""), "{}", page.body);
        assert!(
            page.body.contains("href=\"/p/app/runs/1099\""),
            "{}",
            page.body
        );
        assert!(
            !page.body.contains("href=\"/p/app/runs/1100\""),
            "{}",
            page.body
        );
        let older = want(&|i| i % 3 == 0, 20)[19];
        assert!(
            page.body.contains(&format!(
                "href=\"/p/app?before={older}&amp;branch=feature\""
            )),
            "{}",
            page.body
        );
    }
}

#[test]
fn kept_answers_repeat_while_nothing_is_written_and_follow_every_write() {
    // The page, a comparison and a history are kept while the store's
    // revision holds: asked again they are the same bytes, and after a run
    // is stored — through the server or straight into the store by another
    // connection — they are the new answers, never the kept ones.
    let http = Http::new();
    for backend in backends("kept_answers") {
        let mut store = backend.url.open().unwrap();
        let (_, secret) = token(&mut *store, "app", &["ingest", "read"]);
        store.use_project("app");
        for ns in [1_000_000, 1_010_000] {
            store.ingest_run(&run("parse", ns, 20)).unwrap();
        }
        let base = start(backend.url.clone(), perfsleuth_server::DEFAULT_BODY_LIMIT);
        let paths = [
            "/api/v1/projects/app/compare?baseline=latest~1&candidate=latest",
            "/api/v1/projects/app/history?bench=parse",
            "/p/app",
            "/p/app/bench?key=parse",
            "/p/app/compare?baseline=latest~1&candidate=latest",
        ];
        let answers = || -> Vec<String> {
            paths
                .iter()
                .map(|p| {
                    // More than once each: a kept answer is the same bytes.
                    let bodies: Vec<String> = (0..4)
                        .map(|_| {
                            let r = http.call("GET", &format!("{base}{p}"), Some(&secret), None);
                            assert_eq!(r.status, 200, "{}: {p}: {}", backend.name, r.body);
                            r.body
                        })
                        .collect();
                    assert!(
                        bodies.iter().all(|b| b == &bodies[0]),
                        "{}: {p}: unchanged store, changed answer",
                        backend.name
                    );
                    bodies[0].clone()
                })
                .collect()
        };
        let points = |history: &str| {
            serde_json::from_str::<Value>(history).unwrap()["series"][0]["points"]
                .as_array()
                .unwrap()
                .len()
        };
        let candidate =
            |compare: &str| serde_json::from_str::<Value>(compare).unwrap()["candidate"].clone();
        let first = answers();
        assert_eq!(points(&first[1]), 2, "{}", backend.name);
        assert_eq!(candidate(&first[0]), "run 2", "{}", backend.name);
        // Stored by another connection, not through the server.
        store.ingest_run(&run("parse", 2_000_000, 20)).unwrap();
        let second = answers();
        assert_eq!(points(&second[1]), 3, "{}", backend.name);
        assert_eq!(candidate(&second[0]), "run 3", "{}", backend.name);
        assert_ne!(
            first[2], second[2],
            "{}: the page shows the new run",
            backend.name
        );
        assert!(second[2].contains("3 recent runs"), "{}", backend.name);
        for (page, new) in [(3, "/p/app/runs/3"), (4, "run 3")] {
            assert!(
                !first[page].contains(new) && second[page].contains(new),
                "{}: {}",
                backend.name,
                paths[page]
            );
        }
        // Uploaded through the server.
        let r = http.call(
            "POST",
            &format!("{base}/api/v1/projects/app/runs"),
            Some(&secret),
            Some(&export(&run("parse", 3_000_000, 20))),
        );
        assert_eq!(r.status, 201, "{}: {}", backend.name, r.body);
        let third = answers();
        assert_eq!(points(&third[1]), 4, "{}", backend.name);
        assert_eq!(candidate(&third[0]), "run 4", "{}", backend.name);
        assert!(third[2].contains("4 recent runs"), "{}", backend.name);
    }
}

/// `POST …/runs/held` and `POST …/runs/batch` (what `push` sends): typed
/// answers, a batch stored all or none with its refused run named, each run
/// once, and their limits and scopes.
#[test]
fn batches_and_the_held_question_answer_with_their_typed_documents() {
    let http = Http::new();
    let uuid = |i: u32| format!("0e9f6a4c-2222-4aaa-8bbb-{i:012}");
    let batch = |runs: &[perfsleuth_model::Run]| -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "schema": "perfsleuth/run-batch", "schema_version": 1, "runs": runs
        }))
        .unwrap()
    };
    let asked = |uuids: &[String]| -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "schema": "perfsleuth/run-uuids", "schema_version": 1, "uuids": uuids
        }))
        .unwrap()
    };
    for b in backends("batches") {
        let name = b.name;
        let mut store = b.url.open().unwrap();
        let (_, pusher) = token(&mut *store, "app", &["ingest"]);
        let (_, reader) = token(&mut *store, "app", &["read"]);
        let base = start(b.url.clone(), 1 << 20);
        let runs_url = format!("{base}/api/v1/projects/app/runs");
        let (batch_url, held_url) = (format!("{runs_url}/batch"), format!("{runs_url}/held"));

        let mut one = run("parse", 1_000_000, 20);
        one.uuid = Some(uuid(1).to_uppercase());
        let mut two = run("render", 2_000_000, 20);
        two.uuid = Some(uuid(2));
        let three = run("parse", 1_100_000, 20);
        let mut bad = run("lex", 500_000, 5);
        bad.uuid = Some(uuid(4));
        bad.benchmarks[0].samples[3].iteration = 0;
        // A batch with one run that cannot be stored: refused, naming it, and nothing stored.
        let refused = http.call(
            "POST",
            &batch_url,
            Some(&pusher),
            Some(&batch(&[one.clone(), bad, two.clone()])),
        );
        let doc = assert_error(&refused, 422);
        assert!(
            doc["error"]
                .as_str()
                .unwrap()
                .starts_with("run 2 of 3 in the batch: benchmark \"lex\" has two samples"),
            "{name}: {doc}"
        );
        let r = http.call(
            "POST",
            &batch_url,
            Some(&pusher),
            Some(&batch(&[one.clone(), two.clone(), three, one.clone()])),
        );
        assert_eq!(r.status, 201, "{name}: {}", r.body);
        let stored = r.json();
        assert_valid("ingest-batch", &stored);
        let runs = stored["runs"].as_array().unwrap();
        let created: Vec<bool> = runs
            .iter()
            .map(|r| r["created"].as_bool().unwrap())
            .collect();
        assert_eq!(created, [true, true, true, false], "{name}: {stored}");
        assert_eq!(
            runs[0]["uuid"],
            uuid(1),
            "{name}: a UUID is kept in lower case"
        );
        assert_eq!(runs[3]["id"], runs[0]["id"], "{name}");
        assert_eq!(runs[2]["uuid"].as_str().unwrap().len(), 36, "{name}");
        for r in runs {
            let got = http.call(
                "GET",
                &format!("{base}{}", r["url"].as_str().unwrap()),
                Some(&reader),
                None,
            );
            assert_eq!(got.status, 200, "{name}: {}", got.body);
        }
        // Sent again: nothing new, and 200.
        let again = http.call(
            "POST",
            &batch_url,
            Some(&pusher),
            Some(&batch(&[two.clone()])),
        );
        assert_eq!(again.status, 200, "{name}: {}", again.body);
        assert_eq!(again.json()["runs"][0]["created"], false);
        let listed = http.call("GET", &format!("{runs_url}?limit=100"), Some(&reader), None);
        assert_eq!(listed.json()["runs"].as_array().unwrap().len(), 3, "{name}");

        // Which are held: with either scope, in lower case, what is not a UUID not held.
        let question = asked(&[
            uuid(1).to_uppercase(),
            uuid(2),
            uuid(9),
            "not-a-uuid".into(),
        ]);
        for secret in [&pusher, &reader] {
            let r = http.call("POST", &held_url, Some(secret), Some(&question));
            assert_eq!(r.status, 200, "{name}: {}", r.body);
            let held = r.json();
            assert_valid("held", &held);
            let uuids: Vec<&str> = held["runs"]
                .as_array()
                .unwrap()
                .iter()
                .map(|r| r["uuid"].as_str().unwrap())
                .collect();
            assert_eq!(uuids, [uuid(1), uuid(2)], "{name}: {held}");
            assert_eq!(held["runs"][0]["id"], runs[0]["id"], "{name}");
        }

        // Scopes and bad bodies.
        assert_error(&http.call("POST", &held_url, None, Some(&question)), 401);
        assert_error(
            &http.call(
                "POST",
                &batch_url,
                Some(&reader),
                Some(&batch(&[two.clone()])),
            ),
            403,
        );
        assert_error(
            &http.call("POST", &batch_url, Some(&pusher), Some(b"[1, 2]")),
            400,
        );
        assert_error(
            &http.call("POST", &held_url, Some(&pusher), Some(&export(&two))),
            400,
        );
        // Limits: more runs than a batch holds, more UUIDs than a question.
        let empty = perfsleuth_model::Run {
            benchmarks: Vec::new(),
            ..run("x", 1, 1)
        };
        let many = vec![empty; 1001];
        let doc = assert_error(
            &http.call("POST", &batch_url, Some(&pusher), Some(&batch(&many))),
            413,
        );
        assert!(
            doc["error"].as_str().unwrap().contains("more than 1000"),
            "{doc}"
        );
        let uuids: Vec<String> = (0..10_001).map(uuid).collect();
        let doc = assert_error(
            &http.call("POST", &held_url, Some(&pusher), Some(&asked(&uuids))),
            413,
        );
        assert!(
            doc["error"].as_str().unwrap().contains("more than 10000"),
            "{doc}"
        );
        assert_eq!(
            http.call("GET", &format!("{runs_url}?limit=100"), Some(&reader), None)
                .json()["runs"]
                .as_array()
                .unwrap()
                .len(),
            3,
            "{name}: nothing refused was stored"
        );
    }
}
