//! The versioned JSON API, `/api/v1/…`. Every body is a typed document of
//! `perfsleuth_model::schema`; every error a `perfsleuth/error`.

use crate::auth::{Scope, authorize};
use crate::extract::{ApiPath, ApiQuery};
use crate::{API_PREFIX, Access, ApiError, State};
use axum::Router;
use axum::extract::Request;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use perfsleuth_compare::Side;
use perfsleuth_history::stored;
use perfsleuth_model::schema::{
    self, Document, HealthDoc, HeldDoc, HeldRun, IngestBatchDoc, IngestDoc, IngestedRun,
    RunBatchDoc, RunExport, RunFilter, RunUuidsDoc, RunsDoc,
};
use perfsleuth_model::{Metric, Mode, Run, RunStatus};
use perfsleuth_sides::{SelectError, is_uuid};
use perfsleuth_store::{Incoming, STORE_SCHEMA_VERSION, Store};
use serde::Deserialize;
use std::sync::Arc;

/// Most runs one listing returns.
const MAX_LIST: usize = 1000;

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::to_vec(&self.doc()).unwrap_or_default();
        let mut response = (
            self.status,
            [(header::CONTENT_TYPE, "application/json")],
            body,
        )
            .into_response();
        if self.status == StatusCode::UNAUTHORIZED {
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        response
    }
}

/// A JSON response of a typed document.
fn json<T: serde::Serialize>(status: StatusCode, doc: &T) -> Response {
    match serde_json::to_vec(doc) {
        Ok(body) => (status, [(header::CONTENT_TYPE, "application/json")], body).into_response(),
        Err(e) => ApiError {
            status: StatusCode::INTERNAL_SERVER_ERROR,
            error: format!("cannot serialise the answer: {e}"),
            hint: None,
        }
        .into_response(),
    }
}

type Shared = axum::extract::State<Arc<State>>;

pub(crate) fn routes(state: Arc<State>) -> Router {
    let p = |rest: &str| format!("{API_PREFIX}/projects/{{project}}{rest}");
    Router::new()
        .route(&format!("{API_PREFIX}/health"), get(health))
        .route(&p("/runs"), get(list_runs).post(ingest))
        .route(&p("/runs/batch"), axum::routing::post(ingest_batch))
        .route(&p("/runs/held"), axum::routing::post(held))
        .route(&p("/runs/{run}"), get(get_run).head(head_run))
        .route(&p("/compare"), get(compare_json))
        .route(&p("/compare.md"), get(compare_md))
        .route(&p("/history"), get(history))
        .route(&p("/env/diff"), get(env_diff))
        .with_state(state)
}

/// The `Authorization: Bearer` secret; a malformed header is refused.
pub(crate) fn bearer(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    let Some(value) = headers.get(header::AUTHORIZATION) else {
        return Ok(None);
    };
    let text = value
        .to_str()
        .map_err(|_| ApiError::unauthorized("the Authorization header is not ASCII"))?;
    match text.split_once(' ') {
        Some((scheme, secret))
            if scheme.eq_ignore_ascii_case("bearer") && !secret.trim().is_empty() =>
        {
            Ok(Some(secret.trim().to_string()))
        }
        _ => Err(ApiError::unauthorized(
            "the Authorization header is not `Bearer TOKEN`",
        )),
    }
}

async fn health(axum::extract::State(state): Shared) -> Response {
    let backend = state.backend;
    let up = state
        .with_store("", Access::Read, |s| Ok(s.projects().map(|_| ())?))
        .await;
    let doc = HealthDoc {
        schema: HealthDoc::SCHEMA.to_string(),
        schema_version: HealthDoc::VERSION,
        status: if up.is_ok() { "ok" } else { "unavailable" }.into(),
        version: env!("CARGO_PKG_VERSION").into(),
        store: backend.into(),
        store_schema_version: STORE_SCHEMA_VERSION,
    };
    let status = if up.is_ok() {
        StatusCode::OK
    } else {
        StatusCode::SERVICE_UNAVAILABLE
    };
    json(status, &doc)
}

/// Authorizes the request for `scope` on `project` (on the blocking pool).
async fn allow(
    state: &Arc<State>,
    project: &str,
    headers: &HeaderMap,
    scope: Scope,
) -> Result<(), ApiError> {
    state
        .authorized(project, bearer(headers)?, scope, |_| Ok(()))
        .await
}

/// The request body, at most `limit` bytes (an upload's: the server's
/// `body_limit`), within `state.body_timeout` (408 after it) and before the
/// server stops (503, which `push` retries against the next server).
async fn read_body(request: Request, state: &State, limit: usize) -> Result<Vec<u8>, ApiError> {
    let mut stopping = state.stopping.clone();
    let read = tokio::time::timeout(state.body_timeout, read_limited(request, limit));
    tokio::select! {
        read = read => read.unwrap_or_else(|_| Err(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            format!(
                "the body did not arrive within {} s",
                state.body_timeout.as_secs_f64()
            ),
            Some("send the run over a faster link, or start the server with a longer --body-timeout".into()),
        ))),
        _ = async {
            // A server that cannot say it stops never does so here.
            if stopping.wait_for(|stop| *stop).await.is_err() {
                std::future::pending::<()>().await;
            }
        } => Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "the server is stopping; the body was not read",
            Some("push again once the server is back (runs already sent are not sent twice)".into()),
        )),
    }
}

/// The request body, at most `limit` bytes. A larger body is read on and
/// discarded (up to 4 × the limit, at least 64 MiB more) before the 413 goes
/// out: a client still sending when the server closes gets a broken pipe,
/// not the answer, and would retry what can never succeed.
async fn read_limited(request: Request, limit: usize) -> Result<Vec<u8>, ApiError> {
    use http_body_util::BodyExt as _;
    let drain_to = limit.saturating_mul(4).max(limit.saturating_add(64 << 20));
    let mut body = request.into_body();
    let mut kept = Vec::new();
    let mut total = 0usize;
    while let Some(frame) = body.frame().await {
        let frame = frame.map_err(|e| {
            ApiError::bad_request(format!("cannot read the body: {e}"), "send the run again")
        })?;
        let Ok(data) = frame.into_data() else {
            continue;
        };
        total = total.saturating_add(data.len());
        if total <= limit {
            kept.extend_from_slice(&data);
        } else if total > drain_to {
            break;
        }
    }
    if total > limit {
        return Err(ApiError::too_large(
            format!("the body is larger than {limit} bytes"),
            "start the server with a larger --body-limit",
        ));
    }
    Ok(kept)
}

/// The project's run a path or query names: an id, a UUID, `latest` or `latest~N`.
fn run_id(store: &dyn Store, spec: &str) -> Result<i64, ApiError> {
    selector_text(spec)?;
    let missing = || {
        ApiError::not_found(
            format!("no run {spec:?} in this project"),
            "give a run id, a run UUID, latest or latest~N (GET …/runs lists them)",
        )
    };
    if spec.len() > 100 {
        return Err(missing());
    }
    if is_uuid(spec) {
        return store
            .run_by_uuid(&spec.to_ascii_lowercase())?
            .ok_or_else(missing);
    }
    store.resolve_run(spec).map_err(|_| missing())
}

fn load(store: &dyn Store, id: i64) -> Result<Run, ApiError> {
    store
        .load_run(id)?
        .ok_or_else(|| ApiError::not_found(format!("run {id} is gone"), "list the runs again"))
}

async fn ingest(
    axum::extract::State(state): Shared,
    ApiPath(project): ApiPath<String>,
    headers: HeaderMap,
    request: Request,
) -> Result<Response, ApiError> {
    // Authorized before the body is read: no one without a token makes the
    // server buffer 32 MiB.
    allow(&state, &project, &headers, Scope::Ingest).await?;
    let export: RunExport = body_document(
        request,
        &state,
        state.body_limit,
        "send the run export document (perfsleuth show --json RUN, or run --export-json)",
    )
    .await?;
    let run = accepted(export.run)?;
    let doc = store_runs(&state, &project, &headers, vec![run])
        .await?
        .pop()
        .ok_or_else(|| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, "no run stored", None))?;
    let status = if doc.created {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    let mut response = json(
        status,
        &IngestDoc {
            schema: IngestDoc::SCHEMA.to_string(),
            schema_version: IngestDoc::VERSION,
            id: doc.id,
            uuid: doc.uuid,
            created: doc.created,
            url: doc.url.clone(),
        },
    );
    if let Ok(v) = HeaderValue::from_str(&doc.url) {
        response.headers_mut().insert(header::LOCATION, v);
    }
    Ok(response)
}

/// Most runs one `perfsleuth/run-batch` may hold (the body limit bounds
/// its bytes): a push sends far fewer, and a transaction of more would
/// hold its locks for long.
pub const MAX_BATCH_RUNS: usize = 1000;

/// Most UUIDs one `perfsleuth/run-uuids` question may hold.
pub const MAX_HELD_UUIDS: usize = 10_000;

/// The largest `perfsleuth/run-uuids` body: 10 000 UUIDs and their quotes.
const HELD_BODY_LIMIT: usize = 1 << 20;

/// `POST …/runs/batch`: several runs stored in one transaction, all or
/// none; a run the project holds is answered as held, as by `POST …/runs`.
async fn ingest_batch(
    axum::extract::State(state): Shared,
    ApiPath(project): ApiPath<String>,
    headers: HeaderMap,
    request: Request,
) -> Result<Response, ApiError> {
    allow(&state, &project, &headers, Scope::Ingest).await?;
    let batch: RunBatchDoc = body_document(
        request,
        &state,
        state.body_limit,
        "send {\"schema\": \"perfsleuth/run-batch\", \"schema_version\": 1, \"runs\": [RUN, …]} (docs/SERVER.md)",
    )
    .await?;
    if batch.runs.len() > MAX_BATCH_RUNS {
        return Err(ApiError::too_large(
            format!(
                "the batch holds {} runs, more than {MAX_BATCH_RUNS}",
                batch.runs.len()
            ),
            format!("send at most {MAX_BATCH_RUNS} runs a batch"),
        ));
    }
    let total = batch.runs.len();
    let runs = batch
        .runs
        .into_iter()
        .enumerate()
        .map(|(i, run)| {
            accepted(run).map_err(|e| match total {
                // A batch of one (a push's retry of a refused batch) is the run.
                1 => e,
                _ => ApiError {
                    error: format!("run {} of {total} in the batch: {}", i + 1, e.error),
                    ..e
                },
            })
        })
        .collect::<Result<Vec<Run>, ApiError>>()?;
    let runs = store_runs(&state, &project, &headers, runs).await?;
    let status = if runs.iter().any(|r| r.created) {
        StatusCode::CREATED
    } else {
        StatusCode::OK
    };
    Ok(json(
        status,
        &IngestBatchDoc {
            schema: IngestBatchDoc::SCHEMA.to_string(),
            schema_version: IngestBatchDoc::VERSION,
            runs,
        },
    ))
}

/// `POST …/runs/held`: which of the runs a pushing client has the project
/// holds, asked once for a whole push (a `HEAD` a run cost a round trip each).
async fn held(
    axum::extract::State(state): Shared,
    ApiPath(project): ApiPath<String>,
    headers: HeaderMap,
    request: Request,
) -> Result<Response, ApiError> {
    let secret = bearer(&headers)?;
    // Authorized before the body is read, as every upload is.
    let (name, asker) = (project.clone(), secret.clone());
    state
        .with_store(&project, Access::Read, move |s| {
            reader_or_pusher(s, &name, asker.as_deref())
        })
        .await?;
    let asked: RunUuidsDoc = body_document(
        request,
        &state,
        HELD_BODY_LIMIT,
        "send {\"schema\": \"perfsleuth/run-uuids\", \"schema_version\": 1, \"uuids\": [UUID, …]}",
    )
    .await?;
    if asked.uuids.len() > MAX_HELD_UUIDS {
        return Err(ApiError::too_large(
            format!(
                "{} UUIDs asked, more than {MAX_HELD_UUIDS}",
                asked.uuids.len()
            ),
            format!("ask about at most {MAX_HELD_UUIDS} runs at a time"),
        ));
    }
    // What is not a UUID names no run held: one bad UUID in a pusher's
    // store must not keep its other runs from being asked about (its
    // upload is refused, naming the run).
    let uuids: Vec<String> = asked
        .uuids
        .iter()
        .filter(|u| is_uuid(u))
        .map(|u| u.to_ascii_lowercase())
        .collect();
    let name = project.clone();
    let found = state
        .with_store(&project, Access::Read, move |s| {
            reader_or_pusher(s, &name, secret.as_deref())?;
            let refs: Vec<&str> = uuids.iter().map(String::as_str).collect();
            Ok(s.runs_by_uuids(&refs)?)
        })
        .await?;
    Ok(json(
        StatusCode::OK,
        &HeldDoc {
            schema: HeldDoc::SCHEMA.to_string(),
            schema_version: HeldDoc::VERSION,
            runs: found
                .into_iter()
                .map(|(uuid, id)| HeldRun { uuid, id })
                .collect(),
        },
    ))
}

/// Authorizes a question a pushing client asks (is this run here?): a
/// token that may ingest or read.
fn reader_or_pusher(
    s: &mut dyn Store,
    project: &str,
    secret: Option<&str>,
) -> Result<(), ApiError> {
    if authorize(s, project, secret, Scope::Ingest).is_err() {
        authorize(s, project, secret, Scope::Read)?;
    }
    Ok(())
}

/// The body ([`read_body`], at most `limit` bytes) as the document `D`;
/// 400 with `hint` when it is not UTF-8 or not that document.
async fn body_document<D: Document + serde::de::DeserializeOwned>(
    request: Request,
    state: &State,
    limit: usize,
    hint: &str,
) -> Result<D, ApiError> {
    let body = read_body(request, state, limit).await?;
    let text = std::str::from_utf8(&body)
        .map_err(|_| ApiError::bad_request("the body is not UTF-8", hint))?;
    schema::read_document(text).map_err(|e| {
        ApiError::bad_request(
            format!("the body is not a {} document: {e}", D::SCHEMA),
            hint,
        )
    })
}

/// An uploaded run as it is stored: finished, its UUID (when it has one)
/// a UUID in lower case, each iteration once.
fn accepted(mut run: Run) -> Result<Run, ApiError> {
    if run.status == RunStatus::Running {
        return Err(ApiError::unprocessable(
            "the run is still running",
            "push runs once they have finished",
        ));
    }
    if let Some(uuid) = &run.uuid {
        if !is_uuid(uuid) {
            return Err(ApiError::bad_request(
                format!("run.uuid {uuid:?} is not a UUID"),
                "leave run.uuid out to have the server give one",
            ));
        }
        run.uuid = Some(uuid.to_ascii_lowercase());
    }
    for b in &run.benchmarks {
        let mut seen = std::collections::HashSet::new();
        if let Some(dup) = b.samples.iter().find(|x| !seen.insert(x.iteration)) {
            return Err(ApiError::unprocessable(
                format!(
                    "benchmark {:?} has two samples of iteration {}",
                    b.name, dup.iteration
                ),
                "send each iteration once, as perfsleuth writes them",
            ));
        }
    }
    Ok(run)
}

/// Stores uploaded runs ([`accepted`]) in one transaction, each with the
/// wall-time summaries the project page reads, and says what became of
/// each. Authorized again with the body in hand: a token revoked while a
/// large upload was on its way stores nothing.
async fn store_runs(
    state: &Arc<State>,
    project: &str,
    headers: &HeaderMap,
    runs: Vec<Run>,
) -> Result<Vec<IngestedRun>, ApiError> {
    let summaries: Vec<_> = runs.iter().map(wall_summaries).collect();
    let done = state
        .authorized(project, bearer(headers)?, Scope::Ingest, move |s| {
            let incoming: Vec<Incoming<'_>> = runs
                .iter()
                .zip(&summaries)
                .map(|(run, summaries)| Incoming { run, summaries })
                .collect();
            Ok(s.ingest_runs(&incoming, Metric::Wall)?)
        })
        .await?;
    Ok(done
        .into_iter()
        .map(|done| IngestedRun {
            url: format!("{API_PREFIX}/projects/{project}/runs/{}", done.id),
            id: done.id,
            uuid: done.uuid,
            created: done.created,
        })
        .collect())
}

#[derive(Deserialize)]
struct ListQuery {
    limit: Option<usize>,
    /// Only runs stored before the run with this id: the next page after
    /// a page whose last run it is.
    before: Option<i64>,
    /// Only this bisection's runs, in the order its steps measured them.
    bisection: Option<String>,
    /// Only runs with a benchmark whose name contains this text.
    bench: Option<String>,
    /// Only runs made on this git branch.
    branch: Option<String>,
    /// Only runs on this machine class (its comparability hash or a prefix).
    machine: Option<String>,
    /// Only runs of this mode (`walltime`, `simulation`, `probe`).
    mode: Option<String>,
}

/// The wall-time summary of each benchmark of a complete `run`, which the
/// store caches with it: the project page's trends read these instead of
/// every sample of its newest runs (reads never write, so the server's
/// store had none, and each view summarised 1 000 points' samples anew).
/// None for a run not complete, whose samples may still change.
fn wall_summaries(run: &Run) -> Vec<Option<perfsleuth_store::MetricSummary>> {
    if run.status != RunStatus::Complete {
        return Vec::new();
    }
    run.benchmarks
        .iter()
        .map(|b| {
            let values: Vec<f64> = b.samples.iter().map(|x| Metric::Wall.of(x)).collect();
            perfsleuth_history::summarize(&values)
        })
        .collect()
}

async fn list_runs(
    axum::extract::State(state): Shared,
    ApiPath(project): ApiPath<String>,
    ApiQuery(q): ApiQuery<ListQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let limit = q.limit.unwrap_or(100).min(MAX_LIST);
    let mode = match given(&q.mode) {
        None => None,
        Some(m) => Some(Mode::parse(&m).ok_or_else(|| {
            ApiError::bad_request(
                format!("unknown mode {m:?}"),
                "modes are: walltime, simulation, probe",
            )
        })?),
    };
    // The same rule as `perfsleuth runs`' filters, applied a page at a time.
    let filter = RunFilter {
        bench: given(&q.bench),
        branch: given(&q.branch),
        machine: given(&q.machine),
        mode,
        since: None,
    };
    let runs = state
        .authorized(&project, bearer(&headers)?, Scope::Read, move |s| {
            Ok(match &q.bisection {
                Some(b) => s
                    .bisection_runs(b)?
                    .into_iter()
                    .take(limit)
                    .map(|r| r.run)
                    .collect(),
                None => s.list_runs_matching(&filter, q.before, limit)?,
            })
        })
        .await?;
    Ok(json(
        StatusCode::OK,
        &RunsDoc {
            schema: RunsDoc::SCHEMA.to_string(),
            schema_version: RunsDoc::VERSION,
            runs,
        },
    ))
}

async fn get_run(
    axum::extract::State(state): Shared,
    ApiPath((project, spec)): ApiPath<(String, String)>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let run = state
        .authorized(&project, bearer(&headers)?, Scope::Read, move |s| {
            let id = run_id(s, &spec)?;
            load(s, id)
        })
        .await?;
    let report = perfsleuth_summary::analyze(&run, None);
    Ok(json(
        StatusCode::OK,
        &perfsleuth_report::export_json(&run, &report),
    ))
}

/// Whether a run is on the server, for a pushing client whose token may
/// only ingest: 200 or 404, no body.
async fn head_run(
    axum::extract::State(state): Shared,
    ApiPath((project, spec)): ApiPath<(String, String)>,
    headers: HeaderMap,
) -> Result<StatusCode, ApiError> {
    let secret = bearer(&headers)?;
    let name = project.clone();
    state
        .with_store(&project, Access::Read, move |s| {
            reader_or_pusher(s, &name, secret.as_deref())?;
            run_id(s, &spec).map(|_| StatusCode::OK)
        })
        .await
}

#[derive(Debug, Deserialize)]
struct CompareQuery {
    baseline: Option<String>,
    candidate: Option<String>,
    /// `false`: judge the two runs alone, without the same-binary history.
    history: Option<bool>,
}

/// A query parameter's value; an empty one is the same as none (a form left blank).
pub(crate) fn given(v: &Option<String>) -> Option<String> {
    v.as_deref()
        .filter(|v| !v.trim().is_empty())
        .map(str::to_string)
}

/// A side named by a query parameter: an id, a UUID, `latest~N` or a branch.
pub(crate) fn side(store: &dyn Store, spec: &str) -> Result<Side, ApiError> {
    selector_text(spec)?;
    // The CLI's rules, without files or git revisions (no repository here).
    match perfsleuth_sides::resolve(store, spec, perfsleuth_sides::Lookup::default()) {
        Ok(side) => return Ok(side),
        Err(SelectError::Unknown(_)) => {}
        Err(e) => return Err(select_err(e)),
    }
    // Only when nothing matched: an empty project says so, not "no `latest`".
    if store.resolve_run("latest").is_err() {
        return Err(ApiError::not_found(
            "this project has no runs yet",
            "push some: perfsleuth push --server URL --project NAME",
        ));
    }
    Err(ApiError::not_found(
        format!("no run or branch {spec:?} in this project"),
        "give a run id, a run UUID, latest, latest~N or a branch with runs",
    ))
}

/// A selector with a control character (`%00`, a newline) names no run or
/// branch: the request is malformed (400), whatever the database would
/// have said of the bytes (PostgreSQL refuses a NUL in text).
fn selector_text(spec: &str) -> Result<(), ApiError> {
    if spec.chars().any(char::is_control) {
        return Err(ApiError::bad_request(
            format!(
                "the run selector {:?} holds a control character",
                spec.chars().take(100).collect::<String>()
            ),
            "give a run id, a run UUID, latest, latest~N or a branch name",
        ));
    }
    Ok(())
}

/// A side that could not be chosen, with hints for a server's user (the
/// CLI's speak of its arguments).
pub(crate) fn select_err(e: SelectError) -> ApiError {
    let text = e.to_string();
    match e {
        SelectError::Store(e) => e.into(),
        SelectError::NoRun(_) => ApiError::not_found(text, "list the project's runs: GET …/runs"),
        SelectError::NoEarlier | SelectError::NoSameBenchmarks(_) => ApiError::not_found(
            text,
            "name the baseline: ?baseline=RUN (a run id, UUID, latest~N or branch; GET …/runs lists them)",
        ),
        SelectError::ProbeRun(_) => ApiError::unprocessable(
            text,
            "compare runs of commands; probe runs are compared with `perfsleuth probe diff`",
        ),
        SelectError::Modes(_) => ApiError::unprocessable(
            text,
            "compare runs of one mode (each run's mode is in GET …/runs)",
        ),
        // Files and revisions are the CLI's: named here, they name nothing.
        SelectError::NoSuchFile(_)
        | SelectError::BadExport { .. }
        | SelectError::NoRunsAtCommit { .. }
        | SelectError::NoSuchRevision(_)
        | SelectError::Unknown(_) => ApiError::not_found(
            text,
            "give a run id, a run UUID, latest, latest~N or a branch with runs",
        ),
    }
}

async fn comparison(
    state: Arc<State>,
    project: String,
    q: CompareQuery,
    headers: HeaderMap,
) -> Result<Arc<perfsleuth_compare::Comparison>, ApiError> {
    let options = state.compare.clone();
    let key = format!("compare {q:?}");
    // A comparison weighs about 2 KiB a row.
    let weigh = |c: &perfsleuth_compare::Comparison| 2048 * (c.rows.len() + 1);
    state
        .authorized_cached(&project, bearer(&headers)?, key, weigh, move |s| {
            let candidate = side(s, given(&q.candidate).as_deref().unwrap_or("latest"))?;
            let baseline = match given(&q.baseline) {
                Some(spec) => Some(side(s, &spec)?),
                None => None,
            };
            let done = perfsleuth_sides::compare_stored(
                s,
                baseline,
                candidate,
                options.clone(),
                q.history.unwrap_or(true),
            )
            .map_err(select_err)?;
            Ok(done.comparison)
        })
        .await
}

async fn compare_json(
    axum::extract::State(state): Shared,
    ApiPath(project): ApiPath<String>,
    ApiQuery(q): ApiQuery<CompareQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let c = comparison(state, project, q, headers).await?;
    Ok(json(StatusCode::OK, &perfsleuth_compare::to_json(&c)))
}

async fn compare_md(
    axum::extract::State(state): Shared,
    ApiPath(project): ApiPath<String>,
    ApiQuery(q): ApiQuery<CompareQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let c = comparison(state, project, q, headers).await?;
    Ok((
        StatusCode::OK,
        [(header::CONTENT_TYPE, "text/markdown; charset=utf-8")],
        perfsleuth_compare::render_markdown(&c),
    )
        .into_response())
}

#[derive(Debug, Deserialize)]
struct HistoryQuery {
    bench: Option<String>,
    metric: Option<String>,
    branch: Option<String>,
    last: Option<usize>,
}

async fn history(
    axum::extract::State(state): Shared,
    ApiPath(project): ApiPath<String>,
    ApiQuery(q): ApiQuery<HistoryQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let metric = match q.metric.as_deref() {
        None => Metric::Wall,
        Some(m) => Metric::parse(m).ok_or_else(|| {
            ApiError::bad_request(
                format!("unknown metric {m:?}"),
                format!("metrics are: {}", Metric::names().join(", ")),
            )
        })?,
    };
    let key = format!("history {q:?}");
    // A history weighs about 256 bytes a point.
    let weigh = |d: &perfsleuth_model::schema::HistoryDoc| {
        256 * (1 + d.series.iter().map(|s| s.points.len()).sum::<usize>())
    };
    let doc = state
        .authorized_cached(&project, bearer(&headers)?, key, weigh, move |s| {
            let filter = perfsleuth_history::Filter {
                benchmarks: q.bench.iter().cloned().collect(),
                branch: q.branch.clone(),
                last: q.last,
                ..Default::default()
            };
            let order = perfsleuth_history::Order::Time;
            let entries =
                s.history_entries_in(&perfsleuth_history::scope(&filter, Some(metric)))?;
            let selected = perfsleuth_history::select(entries, &filter, &order).map_err(|e| {
                ApiError::not_found(e.to_string(), "list the project's runs: GET …/runs")
            })?;
            // Reads never write: the summary cache is filled by the CLI
            // and by uploads (wall time), never here.
            stored::history_doc(
                s,
                selected,
                &[metric],
                &order,
                &filter,
                &perfsleuth_history::Options::default(),
                false,
            )?
            .ok_or_else(|| ApiError::bad_request("no metric to show", "give ?metric="))
        })
        .await?;
    Ok(json(StatusCode::OK, &*doc))
}

#[derive(Deserialize)]
struct EnvDiffQuery {
    a: String,
    b: String,
    /// Include the context facts (host name, load) that differ every run.
    all: Option<bool>,
}

async fn env_diff(
    axum::extract::State(state): Shared,
    ApiPath(project): ApiPath<String>,
    ApiQuery(q): ApiQuery<EnvDiffQuery>,
    headers: HeaderMap,
) -> Result<Response, ApiError> {
    let doc = state
        .authorized(&project, bearer(&headers)?, Scope::Read, move |s| {
            let a = load(s, run_id(s, &q.a)?)?;
            let b = load(s, run_id(s, &q.b)?)?;
            let label = |r: &Run| format!("run {}", r.id.unwrap_or_default());
            Ok(stored::env_diff_doc(
                (&label(&a), &a.environment),
                (&label(&b), &b.environment),
                q.all.unwrap_or(false),
            ))
        })
        .await?;
    Ok(json(StatusCode::OK, &doc))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_are_recognised_exactly() {
        assert!(is_uuid("5b0f4a9e-0000-4000-8000-000000000001"));
        assert!(!is_uuid("5b0f4a9e-0000-4000-8000-00000000000"));
        assert!(!is_uuid("5b0f4a9e_0000-4000-8000-000000000001"));
        assert!(!is_uuid("latest"));
    }

    #[test]
    fn bearer_tokens_are_read_and_malformed_headers_refused() {
        let mut h = HeaderMap::new();
        assert_eq!(bearer(&h).unwrap(), None);
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer pst_abc"),
        );
        assert_eq!(bearer(&h).unwrap().as_deref(), Some("pst_abc"));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Basic dXNlcjpwdw=="),
        );
        assert_eq!(bearer(&h).unwrap_err().status, StatusCode::UNAUTHORIZED);
    }
}
