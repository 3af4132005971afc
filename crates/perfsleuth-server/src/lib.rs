//! perfsleuth's team server (`perfsleuth serve`) and the client that pushes
//! to it (`perfsleuth push`).
//!
//! The server is a thin HTTP layer: every answer comes from the same
//! library calls the CLI makes (`perfsleuth_sides` to choose and compare
//! runs, `perfsleuth_history::stored` for history and environment diffs, `perfsleuth_report` for run
//! exports), so the server and the CLI cannot disagree. The store is any
//! [`perfsleuth_store::Store`]: PostgreSQL for a team, SQLite for one
//! machine. Its calls are synchronous; each request runs them on tokio's
//! blocking pool with a connection from a small pool of store handles.
//!
//! Modules: `auth` (tokens and scopes), `api` (the JSON API), `dashboard`
//! (the server-rendered pages), `client` (push with retries).

#![forbid(unsafe_code)]

mod api;
pub mod auth;
mod cache;
pub mod client;
mod dashboard;
mod extract;

use axum::http::StatusCode;
use perfsleuth_model::schema::{ApiErrorDoc, Document};
use perfsleuth_store::{Store, StoreError, StoreUrl};
use std::net::SocketAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// The API's version prefix.
pub const API_PREFIX: &str = "/api/v1";

/// Default cap on a request body: a run of 100 benchmarks × 10 000 samples
/// exports to about 30 MiB.
pub const DEFAULT_BODY_LIMIT: usize = 32 << 20;

/// Most store connections in use at once.
const MAX_CONNECTIONS: usize = 16;

/// How `perfsleuth serve` is set up.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// The store.
    pub store: StoreUrl,
    /// Where to listen.
    pub listen: SocketAddr,
    /// Largest request body accepted (413 above it).
    pub body_limit: usize,
    /// Longest a request's body may take to arrive (408 after it): an
    /// upload that trickles is cut off rather than held open.
    pub body_timeout: Duration,
    /// The verdict options every comparison it serves is judged with: the
    /// CLI's, from the same `perfsleuth.toml` (`[compare]`), so the server
    /// and `perfsleuth compare` give one verdict for the same runs.
    pub compare: perfsleuth_compare::Options,
}

/// A failed request: its status, message and hint, sent as `perfsleuth/error`.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// What went wrong.
    pub error: String,
    /// What to do about it.
    pub hint: Option<String>,
}

impl ApiError {
    fn new(status: StatusCode, error: impl Into<String>, hint: Option<String>) -> ApiError {
        ApiError {
            status,
            error: error.into(),
            hint,
        }
    }

    /// 400: the request is malformed.
    pub fn bad_request(error: impl Into<String>, hint: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::BAD_REQUEST, error, Some(hint.into()))
    }

    /// 401: no valid token.
    pub fn unauthorized(error: impl Into<String>) -> ApiError {
        ApiError::new(
            StatusCode::UNAUTHORIZED,
            error,
            Some(
                "send a project token as `Authorization: Bearer pst_…` (perfsleuth server token create)"
                    .into(),
            ),
        )
    }

    /// 403: a valid token that does not allow this.
    pub fn forbidden(error: impl Into<String>, hint: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::FORBIDDEN, error, Some(hint.into()))
    }

    /// 404: nothing there.
    pub fn not_found(error: impl Into<String>, hint: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, error, Some(hint.into()))
    }

    /// 413: more than the server takes in one request.
    pub fn too_large(error: impl Into<String>, hint: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::PAYLOAD_TOO_LARGE, error, Some(hint.into()))
    }

    /// 422: well-formed, but not something the server can store or answer.
    pub fn unprocessable(error: impl Into<String>, hint: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, error, Some(hint.into()))
    }

    /// The `perfsleuth/error` document.
    pub fn doc(&self) -> ApiErrorDoc {
        ApiErrorDoc {
            schema: ApiErrorDoc::SCHEMA.to_string(),
            schema_version: ApiErrorDoc::VERSION,
            status: self.status.as_u16(),
            error: self.error.clone(),
            hint: self.hint.clone(),
        }
    }
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> ApiError {
        let unavailable = |error: String| {
            ApiError::new(
                StatusCode::SERVICE_UNAVAILABLE,
                error,
                Some("the server cannot reach its store; retry later".into()),
            )
        };
        match &e {
            StoreError::NotFound(_) => ApiError::new(
                StatusCode::NOT_FOUND,
                e.to_string()
                    .split(" (hint: ")
                    .next()
                    .unwrap_or_default()
                    .to_string(),
                Some("list the project's runs: GET …/runs".into()),
            ),
            StoreError::Unreachable { .. } | StoreError::Lost { .. } => {
                log_store_error(&e);
                unavailable("the server cannot reach its database".into())
            }
            StoreError::Rejected { detail, .. } => ApiError::unprocessable(
                format!("the database refused the run: {detail}"),
                "check the run for text PostgreSQL cannot store (a NUL character)",
            ),
            StoreError::Conflict(_) => ApiError::new(
                StatusCode::CONFLICT,
                "another request changed the same rows",
                Some("retry the request".into()),
            ),
            // The detail names the server's files and database: it goes to
            // the server's log, and the client gets what it can act on.
            _ => {
                log_store_error(&e);
                ApiError::new(
                    StatusCode::INTERNAL_SERVER_ERROR,
                    "the server's store failed",
                    Some("retry later; the server's log has the details".into()),
                )
            }
        }
    }
}

/// The server's log is its standard error: a store failure's full text,
/// which the client is not shown.
fn log_store_error(e: &StoreError) {
    eprintln!("perfsleuth server: store error: {e}");
}

/// Store handles kept open between requests.
struct Pool {
    url: StoreUrl,
    idle: Mutex<Vec<Box<dyn Store + Send>>>,
    slots: Arc<tokio::sync::Semaphore>,
}

impl Pool {
    /// A handle, and whether it came from the pool (it may have broken
    /// while idle) rather than fresh from the store.
    fn take(&self) -> Result<(Box<dyn Store + Send>, bool), StoreError> {
        let idle = self.idle.lock().unwrap_or_else(|p| p.into_inner()).pop();
        match idle {
            Some(store) => Ok((store, true)),
            None => Ok((self.url.open()?, false)),
        }
    }

    fn give(&self, store: Box<dyn Store + Send>) {
        self.idle
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .push(store);
    }

    /// Drops every idle handle: one connection found broken means the
    /// database went away, and the others, made to the same server, broke
    /// with it (a PostgreSQL restart answered one 503 per pooled connection
    /// before the server healed).
    fn forget_idle(&self) {
        let stale = std::mem::take(&mut *self.idle.lock().unwrap_or_else(|p| p.into_inner()));
        drop(stale);
    }
}

/// What every request handler shares.
pub(crate) struct State {
    pool: Pool,
    pub(crate) backend: &'static str,
    pub(crate) body_limit: usize,
    /// See [`ServerConfig::body_timeout`].
    pub(crate) body_timeout: Duration,
    /// Set once the server is stopping: bodies still arriving are given up
    /// (503, which `push` retries) instead of holding the exit.
    pub(crate) stopping: tokio::sync::watch::Receiver<bool>,
    /// See [`ServerConfig::compare`].
    pub(crate) compare: perfsleuth_compare::Options,
    /// Pages, comparisons and histories kept while the store is unchanged.
    pub(crate) answers: cache::Answers,
}

/// Whether a request may run its store call again after a broken
/// connection: reads may; an upload is tried once (a commit whose answer was
/// lost could otherwise store a run without a UUID twice) and `push` retries it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Access {
    /// Reads: tried again, once, on a fresh connection.
    Read,
    /// Writes: tried once.
    Write,
}

impl State {
    /// Runs `f` with a store handle scoped to `project` on the blocking pool.
    /// A handle whose connection failed is dropped with every idle one, so
    /// the next request connects afresh (a restarted database heals at once);
    /// a read that met such a pooled handle runs once more on a fresh
    /// connection, so the first request after a restart does not fail.
    pub(crate) async fn with_store<T, F>(
        self: &Arc<State>,
        project: &str,
        access: Access,
        mut f: F,
    ) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnMut(&mut dyn Store) -> Result<T, ApiError> + Send + 'static,
    {
        let permit =
            self.pool.slots.clone().acquire_owned().await.map_err(|_| {
                ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "shutting down", None)
            })?;
        let state = Arc::clone(self);
        let project = project.to_string();
        let joined = tokio::task::spawn_blocking(move || {
            let _permit = permit;
            let broken = |r: &Result<T, ApiError>| {
                matches!(r, Err(e) if e.status == StatusCode::SERVICE_UNAVAILABLE)
            };
            let (mut store, pooled) = state.pool.take()?;
            store.use_project(&project);
            let mut result = f(&mut *store);
            if broken(&result) {
                state.pool.forget_idle();
                drop(store);
                if !(pooled && access == Access::Read) {
                    return result;
                }
                store = state.pool.url.open()?;
                store.use_project(&project);
                result = f(&mut *store);
                if broken(&result) {
                    return result;
                }
            }
            state.pool.give(store);
            result
        })
        .await;
        match joined {
            Ok(r) => r,
            Err(e) => Err(ApiError::new(
                StatusCode::INTERNAL_SERVER_ERROR,
                format!("the request failed inside the server: {e}"),
                Some("this is a bug in perfsleuth; please report it".into()),
            )),
        }
    }
}

impl State {
    /// Store calls running now (each holds one of the pool's slots).
    fn store_calls_in_flight(&self) -> usize {
        MAX_CONNECTIONS - self.pool.slots.available_permits()
    }

    /// Runs `f` for a request with credential `secret` once it is
    /// authorized for `scope` on `project` (see [`auth::authorize`]).
    pub(crate) async fn authorized<T, F>(
        self: &Arc<State>,
        project: &str,
        secret: Option<String>,
        scope: auth::Scope,
        f: F,
    ) -> Result<T, ApiError>
    where
        T: Send + 'static,
        F: FnMut(&mut dyn Store) -> Result<T, ApiError> + Send + 'static,
    {
        let name = project.to_string();
        let access = match scope {
            auth::Scope::Read => Access::Read,
            auth::Scope::Ingest | auth::Scope::Admin => Access::Write,
        };
        let mut f = f;
        self.with_store(project, access, move |s| {
            auth::authorize(s, &name, secret.as_deref(), scope)?;
            f(s)
        })
        .await
    }
}

impl State {
    /// [`State::authorized`] for a read whose answer depends on the store
    /// and `key` alone: kept (weighed by `weigh`, in bytes) and served
    /// again, shared, while the store's revision holds ([`cache`]).
    pub(crate) async fn authorized_cached<T, F>(
        self: &Arc<State>,
        project: &str,
        secret: Option<String>,
        key: String,
        weigh: fn(&T) -> usize,
        f: F,
    ) -> Result<Arc<T>, ApiError>
    where
        T: Send + Sync + 'static,
        F: FnMut(&mut dyn Store) -> Result<T, ApiError> + Send + 'static,
    {
        /// What a request with a store handle found.
        enum Found<T> {
            Answer(Arc<T>),
            Wait(cache::Waiting),
        }
        let key = format!("{project}\n{key}");
        let f = Arc::new(Mutex::new(f));
        loop {
            let (state, key, f) = (Arc::clone(self), key.clone(), Arc::clone(&f));
            let found = self
                .authorized(project, secret.clone(), auth::Scope::Read, move |s| {
                    // Read before the answer: a commit in between leaves the
                    // answer newer than its revision, which is only ever a miss.
                    let revision = s.revision()?;
                    match state.answers.claim::<T>(&key, &revision) {
                        cache::Claim::Kept(answer) => Ok(Found::Answer(answer)),
                        cache::Claim::Wait(making) => Ok(Found::Wait(making)),
                        cache::Claim::Mine(maker) => maker
                            .make(weigh, || {
                                let mut f = f.lock().unwrap_or_else(|p| p.into_inner());
                                (*f)(&mut *s)
                            })
                            .map(Found::Answer),
                    }
                })
                .await?;
            match found {
                Found::Answer(answer) => return Ok(answer),
                // Waited for without a store handle: the requests waiting
                // for a slow answer (a history of 100 000 points after a
                // write) held all of the pool's handles, and every other
                // request waited behind them.
                Found::Wait(making) => {
                    let waited = tokio::task::spawn_blocking(move || making.wait::<T>())
                        .await
                        .map_err(|e| {
                            ApiError::new(
                                StatusCode::INTERNAL_SERVER_ERROR,
                                format!("the request failed inside the server: {e}"),
                                None,
                            )
                        })?;
                    if let Some(answer) = waited {
                        return Ok(answer);
                    }
                    // Its maker failed: ask again (and perhaps make it here).
                }
            }
        }
    }
}

/// Why the server could not start or stopped.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    /// The store could not be opened.
    #[error(transparent)]
    Store(#[from] StoreError),
    /// The address could not be bound.
    #[error("cannot listen on {addr}: {detail}")]
    Listen {
        /// The address.
        addr: SocketAddr,
        /// Why.
        detail: String,
    },
    /// The runtime failed.
    #[error("the server failed: {0}")]
    Io(#[from] std::io::Error),
}

/// The server's router over `config.store` (opened and migrated here, so a
/// bad store fails before anything listens) and the state it shares, which
/// the caller keeps so the store handles are closed outside the async runtime: the synchronous PostgreSQL
/// client runs a runtime of its own and may not be dropped inside another.
fn build(
    config: &ServerConfig,
    stopping: tokio::sync::watch::Receiver<bool>,
) -> Result<(axum::Router, Arc<State>), StoreError> {
    let first = config.store.open()?;
    let mut idle = vec![first];
    let backend = match config.store {
        StoreUrl::Sqlite(_) => {
            // Every connection up front, each having looked at the store's
            // revision once: a SQLite connection's first look moves the
            // revision (it cannot know what the others saw), and connections
            // opened one by one under load wiped the kept answers up to 16
            // times (a history of 1.4 s then stalled every client each time).
            // SQLite connections cost a file handle; PostgreSQL's count
            // against the server's limit and stay opened on demand.
            while idle.len() < MAX_CONNECTIONS {
                idle.push(config.store.open()?);
            }
            for store in &idle {
                store.revision()?;
            }
            "sqlite"
        }
        StoreUrl::Postgres(_) => "postgres",
    };
    let state = Arc::new(State {
        pool: Pool {
            url: config.store.clone(),
            idle: Mutex::new(idle),
            slots: Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS)),
        },
        backend,
        body_limit: config.body_limit,
        body_timeout: config.body_timeout,
        stopping,
        compare: config.compare.clone(),
        answers: cache::Answers::default(),
    });
    let router = api::routes(Arc::clone(&state))
        .merge(dashboard::routes(Arc::clone(&state)))
        .fallback(not_found)
        .layer(axum::middleware::from_fn(access_log));
    Ok((router, state))
}

/// No such route: a `perfsleuth/error` under `/api/`, a page elsewhere.
async fn not_found(uri: axum::http::Uri) -> axum::response::Response {
    use axum::response::IntoResponse as _;
    if uri.path().starts_with("/api/") {
        ApiError::not_found(
            format!("no endpoint {}", uri.path()),
            "the API's paths start with /api/v1/projects/{project}/ (docs/SERVER.md); --server takes the server's base URL, without /api/v1",
        )
        .into_response()
    } else {
        dashboard::not_found_page(uri.path())
    }
}

/// One line per request on the server's standard error (its log): time,
/// method, path (no query: it may name runs, never secrets, but stays
/// short), status, duration. Tokens travel in headers and are never logged.
async fn access_log(
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> axum::response::Response {
    let method = request.method().clone();
    let path = request.uri().path().to_string();
    let start = std::time::Instant::now();
    let response = next.run(request).await;
    eprintln!(
        "{} {method} {path} {} {:.1} ms",
        perfsleuth_model::rfc3339(std::time::SystemTime::now()),
        response.status().as_u16(),
        start.elapsed().as_secs_f64() * 1e3
    );
    response
}

/// How long a connection may take to send a request's head, or stay idle
/// between requests: a client that holds a partial request or an idle
/// connection is closed then, not kept for ever.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(15);

/// The default of [`ServerConfig::body_timeout`]: a 32 MiB run arrives in
/// it at 0.6 MiB/s; `push` itself gives a POST 120 s.
pub const DEFAULT_BODY_TIMEOUT: Duration = Duration::from_secs(60);

/// How long requests the server is working on (a store call in progress)
/// may finish after SIGINT or SIGTERM before the server stops anyway.
pub const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

/// After the last store call of a stopping server ends, how long its
/// answers get to go out before every connection left is closed.
const FLUSH_GRACE: Duration = Duration::from_millis(500);

/// Serves until SIGINT or SIGTERM, then lets the requests the server is
/// working on finish for up to [`SHUTDOWN_GRACE`]; what only a client holds
/// (a partial head, a body still arriving, an idle connection) does not
/// delay the exit. `ready` is called with the bound address once the
/// server listens (port 0 picks a free one).
pub fn serve(config: ServerConfig, ready: impl FnOnce(SocketAddr)) -> Result<(), ServerError> {
    let (stop_tx, stop_rx) = tokio::sync::watch::channel(false);
    let (app, state) = build(&config, stop_rx)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_io()
        .enable_time()
        .thread_name("perfsleuth-server")
        .build()?;
    let serving = Arc::clone(&state);
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::bind(config.listen)
            .await
            .map_err(|e| ServerError::Listen {
                addr: config.listen,
                detail: e.to_string(),
            })?;
        ready(listener.local_addr()?);
        accept_until_signal(listener, app, &serving, stop_tx).await;
        Ok::<(), ServerError>(())
    })?;
    // Requests still blocked on the store get a moment, not forever.
    runtime.shutdown_timeout(Duration::from_secs(10));
    // Outside the runtime: the pooled PostgreSQL clients close here.
    drop(state);
    Ok(())
}

/// Serves each accepted connection over HTTP/1 with the header-read
/// timeout; on a signal stops accepting, asks every connection to finish
/// its request and close, waits while the server has store work in flight
/// (up to [`SHUTDOWN_GRACE`]) and its answers a moment to go out, then
/// closes what is left: connections that only a client holds up.
async fn accept_until_signal(
    listener: tokio::net::TcpListener,
    app: axum::Router,
    state: &Arc<State>,
    stop_tx: tokio::sync::watch::Sender<bool>,
) {
    use hyper_util::rt::{TokioIo, TokioTimer};
    let stop_rx = stop_tx.subscribe();
    let mut connections = tokio::task::JoinSet::new();
    let signal = shutdown_signal();
    tokio::pin!(signal);
    loop {
        let accepted = tokio::select! {
            _ = &mut signal => break,
            accepted = listener.accept() => accepted,
        };
        while connections.try_join_next().is_some() {}
        let tcp = match accepted {
            Ok((tcp, _)) => tcp,
            Err(e) => {
                // Out of descriptors and the like: wait, as axum::serve does.
                eprintln!("cannot accept a connection: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        let service = hyper_util::service::TowerToHyperService::new(app.clone());
        let mut stop = stop_rx.clone();
        connections.spawn(async move {
            let conn = hyper::server::conn::http1::Builder::new()
                .timer(TokioTimer::new())
                .header_read_timeout(HEADER_READ_TIMEOUT)
                .serve_connection(TokioIo::new(tcp), service);
            tokio::pin!(conn);
            tokio::select! {
                _ = conn.as_mut() => {}
                _ = stop.changed() => {
                    conn.as_mut().graceful_shutdown();
                    let _ = conn.await;
                }
            }
        });
    }
    drop(listener);
    let _ = stop_tx.send(true);
    let started = tokio::time::Instant::now();
    let mut quiet_since = None;
    let mut past_grace = false;
    while !connections.is_empty() {
        tokio::select! {
            _ = connections.join_next() => continue,
            _ = tokio::time::sleep(Duration::from_millis(20)) => {}
        }
        let now = tokio::time::Instant::now();
        if state.store_calls_in_flight() > 0 {
            quiet_since = None;
        } else if now - *quiet_since.get_or_insert(now) >= FLUSH_GRACE {
            break;
        }
        if now - started >= SHUTDOWN_GRACE {
            past_grace = true;
            break;
        }
    }
    if !connections.is_empty() {
        if past_grace {
            eprintln!(
                "stopping: {} connection(s) still busy after the {} s grace are closed",
                connections.len(),
                SHUTDOWN_GRACE.as_secs()
            );
        } else {
            eprintln!(
                "stopping: {} connection(s) that only their clients held open are closed",
                connections.len()
            );
        }
        connections.abort_all();
    }
}

async fn shutdown_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    let (Ok(mut int), Ok(mut term)) = (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) else {
        // Without signal handlers the server runs until killed.
        std::future::pending::<()>().await;
        return;
    };
    tokio::select! {
        _ = int.recv() => {},
        _ = term.recv() => {},
    }
}
