//! The team server's API documents.

use schemars::JsonSchema;
use serde::Deserialize;
use serde::Serialize;

/// `perfsleuth/ingest`: what the team server did with an uploaded run
/// (`POST /api/v1/projects/{project}/runs`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IngestDoc {
    /// Always `"perfsleuth/ingest"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// The run's id on the server.
    pub id: i64,
    /// The run's UUID (the uploaded one, or a new one when it had none).
    pub uuid: String,
    /// False when the project already held a run with this UUID: nothing was written.
    pub created: bool,
    /// The run's path on the server.
    pub url: String,
}
document!(IngestDoc, "perfsleuth/ingest", crate::SCHEMA_VERSION);

/// `perfsleuth/run-batch`: several runs uploaded in one request
/// (`POST /api/v1/projects/{project}/runs/batch`), stored in one transaction.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunBatchDoc {
    /// Always `"perfsleuth/run-batch"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// The runs, each as a `perfsleuth/run` document's `run` (the server
    /// derives what it needs; the document's `summary` would be sent for nothing).
    pub runs: Vec<crate::Run>,
}
document!(RunBatchDoc, "perfsleuth/run-batch", crate::SCHEMA_VERSION);

/// `perfsleuth/ingest-batch`: what the team server did with each run of a
/// `perfsleuth/run-batch`, in the order sent.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IngestBatchDoc {
    /// Always `"perfsleuth/ingest-batch"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// One entry per run sent.
    pub runs: Vec<IngestedRun>,
}
document!(
    IngestBatchDoc,
    "perfsleuth/ingest-batch",
    crate::SCHEMA_VERSION
);

/// One run of a batch, as stored ([`IngestBatchDoc`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct IngestedRun {
    /// The run's id on the server.
    pub id: i64,
    /// The run's UUID (the uploaded one, or a new one when it had none).
    pub uuid: String,
    /// False when the project already held a run with this UUID (or an
    /// earlier run of the batch had it): nothing was written.
    pub created: bool,
    /// The run's path on the server.
    pub url: String,
}

/// `perfsleuth/run-uuids`: the runs a pushing client asks the team server
/// about (`POST /api/v1/projects/{project}/runs/held`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct RunUuidsDoc {
    /// Always `"perfsleuth/run-uuids"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// Run UUIDs, at most 10 000.
    pub uuids: Vec<String>,
}
document!(RunUuidsDoc, "perfsleuth/run-uuids", crate::SCHEMA_VERSION);

/// `perfsleuth/held`: which of the UUIDs asked the project holds.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HeldDoc {
    /// Always `"perfsleuth/held"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// The runs held, by UUID (lower case); a UUID asked and not here is not held.
    pub runs: Vec<HeldRun>,
}
document!(HeldDoc, "perfsleuth/held", crate::SCHEMA_VERSION);

/// One run the team server holds ([`HeldDoc`]).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HeldRun {
    /// Its UUID.
    pub uuid: String,
    /// Its id on the server.
    pub id: i64,
}

/// `perfsleuth/error`: why a team server request failed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct ApiErrorDoc {
    /// Always `"perfsleuth/error"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// The HTTP status.
    pub status: u16,
    /// What went wrong, one line.
    pub error: String,
    /// What to do about it.
    #[serde(default)]
    pub hint: Option<String>,
}
document!(ApiErrorDoc, "perfsleuth/error", crate::SCHEMA_VERSION);

/// `perfsleuth/health`: the team server is up and reaches its store (`GET /api/v1/health`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct HealthDoc {
    /// Always `"perfsleuth/health"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// `ok`, or `unavailable` when the store cannot be reached (HTTP 503).
    pub status: String,
    /// The server's perfsleuth version.
    pub version: String,
    /// The store's backend: `sqlite` or `postgres`.
    pub store: String,
    /// The store schema version this server reads and writes.
    pub store_schema_version: u32,
}
document!(HealthDoc, "perfsleuth/health", crate::SCHEMA_VERSION);

/// One API token of a team server, as listed (its secret only when just created).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TokenInfo {
    /// Its id (`server token revoke ID`).
    pub id: i64,
    /// The project it opens.
    pub project: String,
    /// A name for people.
    pub name: String,
    /// `ingest`, `read` and/or `admin`.
    pub scopes: Vec<String>,
    /// When it was created, RFC 3339 UTC.
    pub created_at: String,
    /// When it was revoked; `None` while valid.
    #[serde(default)]
    pub revoked_at: Option<String>,
    /// The secret, shown once by `server token create`; the server keeps only its SHA-256.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// `perfsleuth/tokens`: `server token create|list --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct TokensDoc {
    /// Always `"perfsleuth/tokens"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// The tokens, oldest first.
    pub tokens: Vec<TokenInfo>,
}
document!(TokensDoc, "perfsleuth/tokens", crate::SCHEMA_VERSION);

/// What `perfsleuth push` did with one run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PushedRun {
    /// The run's local id.
    pub local_id: i64,
    /// Its UUID.
    pub uuid: String,
    /// `sent` (stored now), `present` (already on the server, not sent
    /// again), `failed`, or `not_attempted` (after a run failed, the rest
    /// are not tried: the server refused or is away).
    pub outcome: String,
    /// Its id on the server, when known.
    #[serde(default)]
    pub server_id: Option<i64>,
    /// Attempts at the run: 1 when its look-up and upload were answered at
    /// once, plus one per request that got no answer (a network error, 5xx,
    /// 408, 429) and was tried again; 0 when not attempted.
    pub attempts: u32,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<String>,
}

/// `perfsleuth/push`: `perfsleuth push --json`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, JsonSchema)]
pub struct PushDoc {
    /// Always `"perfsleuth/push"`.
    pub schema: String,
    /// Layout version.
    pub schema_version: u32,
    /// The server's base URL.
    pub server: String,
    /// The project.
    pub project: String,
    /// One entry per run, in the order given.
    pub runs: Vec<PushedRun>,
}
document!(PushDoc, "perfsleuth/push", crate::SCHEMA_VERSION);
