//! A fresh PostgreSQL database per test, on the server CI starts.

use std::str::FromStr;
use std::sync::atomic::{AtomicU32, Ordering};

/// The environment variable naming the test server: a `postgres://` URL
/// whose user may create databases (`.ci/run` sets it).
pub const POSTGRES_VAR: &str = "PERFSLEUTH_TEST_POSTGRES";

static NEXT: AtomicU32 = AtomicU32::new(0);

/// Creates an empty database for `test` and returns its URL; `None` after a
/// `skipped:` line when no server is configured (a failure where CI requires
/// `postgres`). Each call gets its own database, so tests run in parallel
/// and never see each other's rows; a left-over one of the same name is
/// dropped first.
pub fn fresh_postgres(test: &str) -> Option<String> {
    let Some(url) = std::env::var(POSTGRES_VAR).ok().filter(|u| !u.is_empty()) else {
        crate::skip(
            "postgres",
            format!("{test}: {POSTGRES_VAR} names no PostgreSQL server"),
        );
        return None;
    };
    let mut config = postgres::Config::from_str(&url)
        .unwrap_or_else(|e| panic!("{POSTGRES_VAR}={url:?} is not a PostgreSQL URL: {e}"));
    let mut admin = config
        .connect(postgres::NoTls)
        .unwrap_or_else(|e| panic!("{test}: cannot connect to {POSTGRES_VAR}: {e:?}"));
    let clean: String = test
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() {
                c.to_ascii_lowercase()
            } else {
                '_'
            }
        })
        .take(30)
        .collect();
    let name = format!(
        "ps_{clean}_{}_{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    );
    // Two statements: neither may run inside the implicit transaction of a batch.
    for sql in [
        format!("DROP DATABASE IF EXISTS {name}"),
        format!("CREATE DATABASE {name}"),
    ] {
        admin
            .batch_execute(&sql)
            .unwrap_or_else(|e| panic!("{test}: cannot create database {name}: {e:?}"));
    }
    config.dbname(&name);
    // Rebuilt as a URL so the code under test parses it as users give it.
    let user = config.get_user().unwrap_or("postgres").to_string();
    let password = config
        .get_password()
        .map(|p| format!(":{}", String::from_utf8_lossy(p)))
        .unwrap_or_default();
    let host = match config.get_hosts().first() {
        Some(postgres::config::Host::Tcp(h)) => h.clone(),
        _ => "127.0.0.1".into(),
    };
    let port = config.get_ports().first().copied().unwrap_or(5432);
    Some(format!("postgres://{user}{password}@{host}:{port}/{name}"))
}
