//! What the server's integration tests share: a server on a free port,
//! fresh stores of each backend, tokens, runs, and an HTTP client.

#![allow(dead_code)] // each test binary uses its own part

use perfsleuth_model::{
    Benchmark, Environment, GitInfo, ImpactClass, Mode, Run, RunStatus, Sample,
};
use perfsleuth_server::auth::{hash_secret, new_secret};
use perfsleuth_server::{ServerConfig, serve};
use perfsleuth_store::{Store, StoreUrl, TokenRecord};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

/// A server on a free loopback port over `store`; it lives as long as the test process.
pub fn start(store: StoreUrl, body_limit: usize) -> String {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let config = ServerConfig {
            store,
            listen: "127.0.0.1:0".parse().unwrap(),
            body_limit,
            body_timeout: perfsleuth_server::DEFAULT_BODY_TIMEOUT,
            compare: perfsleuth_compare::Options::default(),
        };
        serve(config, |addr| tx.send(addr).unwrap()).expect("the server runs");
    });
    let addr = rx
        .recv_timeout(Duration::from_secs(30))
        .expect("the server starts");
    format!("http://{addr}")
}

/// Each backend's fresh store, its URL kept so tokens can be made on it.
pub struct Backend {
    pub name: &'static str,
    pub url: StoreUrl,
    pub _dir: Option<tempfile::TempDir>,
}

pub fn backends(test: &str) -> Vec<Backend> {
    let dir = tempfile::tempdir().unwrap();
    let mut out = vec![Backend {
        name: "sqlite",
        url: StoreUrl::Sqlite(dir.path().join("team.db")),
        _dir: Some(dir),
    }];
    if let Some(url) = perfsleuth_testkit::fresh_postgres(test) {
        out.push(Backend {
            name: "postgres",
            url: StoreUrl::parse(&url).unwrap(),
            _dir: None,
        });
    }
    out
}

/// A new token of `project` with `scopes`; returns its secret.
pub fn token(store: &mut dyn Store, project: &str, scopes: &[&str]) -> (i64, String) {
    store
        .ensure_project(project, "2026-12-03T08:00:00Z")
        .unwrap();
    let secret = new_secret().unwrap();
    let id = store
        .add_token(&TokenRecord {
            id: 0,
            project: project.into(),
            name: "test".into(),
            hash: hash_secret(&secret),
            scopes: scopes.iter().map(|s| s.to_string()).collect(),
            created_at: "2026-12-03T08:00:00Z".into(),
            revoked_at: None,
        })
        .unwrap();
    (id, secret)
}

pub fn env() -> Environment {
    let mut env = Environment::default();
    env.set("cpu.model", "Test CPU 9000", ImpactClass::Identity);
    env.set("kernel.release", "6.1.0-test", ImpactClass::Identity);
    env.set("host.name", "ci-runner-7", ImpactClass::Context);
    env
}

pub fn run(name: &str, base_ns: u64, samples: u32) -> Run {
    Run {
        id: None,
        uuid: None,
        started_at: "2026-12-03T08:00:00.000Z".into(),
        ended_at: Some("2026-12-03T08:00:05.000Z".into()),
        status: RunStatus::Complete,
        tool_version: "0.1.0".into(),
        git: Some(GitInfo {
            commit: "0123456789abcdef0123456789abcdef01234567".into(),
            branch: Some("main".into()),
            dirty: false,
        }),
        mode: Mode::Walltime,
        options: serde_json::json!({"runs": samples}),
        environment: env(),
        benchmarks: vec![Benchmark {
            locks: None,
            stacks: None,
            allocs: None,
            name: name.into(),
            command: name.into(),
            argv: vec![name.into()],
            parameters: BTreeMap::new(),
            facts: Environment::default(),
            samples: (0..samples)
                .map(|i| Sample {
                    iteration: i,
                    round: i % 5,
                    wall_ns: base_ns + u64::from(i % 7) * 1000,
                    wall_exact_ns: None,
                    user_ns: 1,
                    sys_ns: 1,
                    peak_rss_bytes: 1 << 20,
                    minor_faults: 0,
                    major_faults: 0,
                    voluntary_cs: 0,
                    involuntary_cs: 0,
                    exit_code: Some(0),
                    signal: None,
                    counters: BTreeMap::new(),
                })
                .collect(),
            profile: None,
            summaries: Vec::new(),
        }],
        probes: Vec::new(),
    }
}

pub fn export(run: &Run) -> Vec<u8> {
    let doc = perfsleuth_report::export_json(run, &perfsleuth_summary::analyze(run, None));
    serde_json::to_vec(&doc).unwrap()
}

pub struct Http {
    pub agent: ureq::Agent,
}

pub struct Reply {
    pub status: u16,
    pub body: String,
    pub headers: Vec<(String, String)>,
}

impl Reply {
    pub fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("{e}: {}", self.body))
    }
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

impl Http {
    pub fn new() -> Http {
        Http {
            agent: ureq::Agent::config_builder()
                .http_status_as_error(false)
                .timeout_global(Some(Duration::from_secs(60)))
                .build()
                .into(),
        }
    }

    pub fn call(&self, method: &str, url: &str, token: Option<&str>, body: Option<&[u8]>) -> Reply {
        let auth = token.map(|t| format!("Bearer {t}"));
        let result = match method {
            "GET" => {
                let mut r = self.agent.get(url);
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                r.call()
            }
            "HEAD" => {
                let mut r = self.agent.head(url);
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                r.call()
            }
            _ => {
                let mut r = self
                    .agent
                    .post(url)
                    .header("Content-Type", "application/json");
                if let Some(a) = &auth {
                    r = r.header("Authorization", a);
                }
                r.send(body.unwrap_or_default())
            }
        };
        let mut resp = result.unwrap_or_else(|e| panic!("{method} {url}: {e}"));
        let headers = resp
            .headers()
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_str().unwrap_or("").to_string()))
            .collect();
        let status = resp.status().as_u16();
        let body = if method == "HEAD" {
            String::new()
        } else {
            resp.body_mut()
                .with_config()
                .limit(64 << 20)
                .read_to_string()
                .unwrap()
        };
        Reply {
            status,
            body,
            headers,
        }
    }
}
