//! The push client: sends stored runs to a team server, skipping those it
//! already holds, retrying with backoff through network errors and 5xx.
//!
//! A retried upload can never duplicate a run: the server stores runs by
//! UUID, and the client asks which it holds (`POST …/runs/held`, or a
//! `HEAD …/runs/{uuid}` a run of an older server) before sending any.

use crate::API_PREFIX;
use crate::api::MAX_HELD_UUIDS;
use crate::auth::valid_project;
use perfsleuth_model::Run;
use perfsleuth_model::schema::{
    self, ApiErrorDoc, Document, HeldDoc, IngestBatchDoc, IngestDoc, RunBatchDoc, RunExport,
    RunUuidsDoc,
};
use std::collections::BTreeMap;
use std::time::Duration;

/// Attempts per request by default: with the backoff below, about half a
/// minute of waiting for a server that restarts or a network that recovers.
pub const DEFAULT_ATTEMPTS: u32 = 8;

/// The first wait before a retry; it doubles each time, up to [`MAX_BACKOFF`].
const FIRST_BACKOFF: Duration = Duration::from_millis(250);

/// The longest wait between two attempts.
const MAX_BACKOFF: Duration = Duration::from_secs(8);

/// How long asking whether a run is there may take.
const HEAD_TIMEOUT: Duration = Duration::from_secs(30);

/// How long sending a run may take (up to the server's 32 MiB limit over a slow link).
const POST_TIMEOUT: Duration = Duration::from_secs(120);

/// How long connecting may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);

/// Where and as whom to push.
#[derive(Debug, Clone)]
pub struct Client {
    base: String,
    /// `base` as messages name it: a password in it shown as `…`.
    shown: String,
    project: String,
    token: Option<String>,
    attempts: u32,
    agent: ureq::Agent,
}

/// What happened to one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pushed {
    /// Stored by this push, with its server id.
    Sent(i64),
    /// Already on the server (found before sending, or the server said so); its id when known.
    Present(Option<i64>),
}

/// What happened to one run of a batch, and the attempts it took.
pub type RunPushed = (Result<Pushed, PushError>, u32);

/// A push that failed: the server refused it (`status` set), or every attempt failed.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("{message}")]
pub struct PushError {
    /// What went wrong, one line.
    pub message: String,
    /// What to do about it.
    pub hint: String,
    /// The HTTP status of a refusal; `None` for network failures.
    pub status: Option<u16>,
    /// Whether it is the user's to fix (a refusal such as 401, 403, 413),
    /// rather than the network's or the server's.
    pub usage: bool,
}

/// One request's answer: status and body.
struct Answer {
    status: u16,
    body: String,
}

impl Client {
    /// A client of the server at `server` (`http://HOST:PORT` or `https://…`)
    /// for `project`; `token` is the `pst_…` secret (`PERFSLEUTH_TOKEN`).
    pub fn new(
        server: &str,
        project: &str,
        token: Option<String>,
        attempts: u32,
    ) -> Result<Client, PushError> {
        let usage = |message: String, hint: &str| PushError {
            message,
            hint: hint.into(),
            status: None,
            usage: true,
        };
        let base = server.trim_end_matches('/').to_string();
        let valid = ["http://", "https://"]
            .iter()
            .any(|s| base.starts_with(s) && base.len() > s.len());
        if !valid {
            return Err(usage(
                format!("--server {server:?} is not an http:// or https:// URL"),
                "give the server's base URL, e.g. --server http://perf.example:8080",
            ));
        }
        if base.parse::<ureq::http::Uri>().is_err() || base.contains(char::is_whitespace) {
            return Err(usage(
                format!("--server {server:?} is not a valid URL"),
                "give the server's base URL, e.g. --server http://perf.example:8080",
            ));
        }
        if !valid_project(project) {
            return Err(usage(
                format!("--project {project:?} is not a project name"),
                "project names are 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
            ));
        }
        let agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .timeout_global(Some(HEAD_TIMEOUT))
            .timeout_connect(Some(CONNECT_TIMEOUT))
            .user_agent(concat!("perfsleuth/", env!("CARGO_PKG_VERSION")))
            .build()
            .into();
        Ok(Client {
            shown: perfsleuth_model::url::redact(&base),
            base,
            project: project.to_string(),
            token,
            attempts: attempts.max(1),
            agent,
        })
    }

    fn runs_url(&self) -> String {
        format!("{}{API_PREFIX}/projects/{}/runs", self.base, self.project)
    }

    /// Sends `export`'s run unless the server holds it already. Returns what
    /// happened and the attempts it took: one for a run whose look-up and
    /// upload both got answers at once, one more for each request that got
    /// none (a network error, a 5xx, 408 or 429) and was tried again — the
    /// number the error message of a run that failed names too.
    pub fn push(&self, export: &RunExport) -> (Result<Pushed, PushError>, u32) {
        self.push_lazily(export.run.uuid.as_deref(), || {
            Ok(std::borrow::Cow::Borrowed(export))
        })
    }

    /// [`Client::push`] of a run that is only made when the server lacks
    /// it: the server is asked for `uuid` first, and `export` is called
    /// only when it does not hold it (loading and exporting a stored run of
    /// 100 000 benchmarks takes seconds, and a push of a store's runs
    /// mostly meets runs already sent). An error of `export` is returned
    /// as it is.
    pub fn push_lazily<'e>(
        &self,
        uuid: Option<&str>,
        export: impl FnOnce() -> Result<std::borrow::Cow<'e, RunExport>, PushError>,
    ) -> (Result<Pushed, PushError>, u32) {
        let mut failed = 0;
        let answered = |failed: u32| failed + 1;
        if let Some(uuid) = uuid {
            let url = format!("{}/{uuid}", self.runs_url());
            match self.with_retries(&mut failed, || self.send("HEAD", &url, None)) {
                Ok(a) if a.status == 200 => return (Ok(Pushed::Present(None)), answered(failed)),
                Ok(a) if a.status == 404 => {}
                Ok(a) => return (Err(refusal(&a, &self.project, "the run")), answered(failed)),
                Err(e) => return (Err(e), failed),
            }
        }
        let export = match export() {
            Ok(e) => e,
            Err(e) => return (Err(e), answered(failed)),
        };
        let body = match serde_json::to_vec(&*export) {
            Ok(b) => b,
            Err(e) => return (Err(unserialisable(&e)), answered(failed)),
        };
        let url = self.runs_url();
        let answer = self.with_retries(&mut failed, || self.send("POST", &url, Some(&body)));
        let attempts = if answer.is_ok() {
            answered(failed)
        } else {
            failed
        };
        let result = match answer {
            Ok(a) if a.status == 200 || a.status == 201 => {
                match serde_json::from_str::<IngestDoc>(&a.body) {
                    Ok(doc) if doc.created => Ok(Pushed::Sent(doc.id)),
                    Ok(doc) => Ok(Pushed::Present(Some(doc.id))),
                    Err(e) => Err(PushError {
                        message: format!(
                            "the server's answer is not a perfsleuth/ingest document: {e}"
                        ),
                        hint: "check that --server names a perfsleuth server".into(),
                        status: Some(a.status),
                        usage: true,
                    }),
                }
            }
            Ok(a) => Err(refusal(&a, &self.project, "the run")),
            Err(e) => Err(e),
        };
        (result, attempts)
    }

    /// Which of `uuids` the project holds (UUID → server id, in lower
    /// case), asked a [`MAX_HELD_UUIDS`] at a time with one request each
    /// (one even for none: it tells an older server apart), and the
    /// attempts it took; `Ok(None)` from a server too old to answer in one
    /// request (ask run by run then, [`Client::push_lazily`]). What is not
    /// a UUID is not asked about: the server could hold no run by it.
    pub fn held(&self, uuids: &[&str]) -> (Result<Option<BTreeMap<String, i64>>, PushError>, u32) {
        let mut failed = 0;
        let mut held = BTreeMap::new();
        let url = format!("{}/held", self.runs_url());
        let asked: Vec<String> = uuids
            .iter()
            .filter(|u| perfsleuth_sides::is_uuid(u))
            .map(|u| u.to_ascii_lowercase())
            .collect();
        let mut chunks: Vec<&[String]> = asked.chunks(MAX_HELD_UUIDS).collect();
        if chunks.is_empty() {
            chunks.push(&[]);
        }
        for chunk in chunks {
            let doc = RunUuidsDoc {
                schema: RunUuidsDoc::SCHEMA.to_string(),
                schema_version: RunUuidsDoc::VERSION,
                uuids: chunk.to_vec(),
            };
            let body = match serde_json::to_vec(&doc) {
                Ok(b) => b,
                Err(e) => return (Err(unserialisable(&e)), failed + 1),
            };
            let answer = self.with_retries(&mut failed, || self.send("POST", &url, Some(&body)));
            let a = match answer {
                Ok(a) => a,
                Err(e) => return (Err(e), failed),
            };
            if older_server(&a) {
                return (Ok(None), failed + 1);
            }
            if a.status != 200 {
                return (Err(refusal(&a, &self.project, "the question")), failed + 1);
            }
            match schema::read_document::<HeldDoc>(&a.body) {
                Ok(doc) => held.extend(doc.runs.into_iter().map(|r| (r.uuid, r.id))),
                Err(e) => return (Err(not_ours(a.status, &e)), failed + 1),
            }
        }
        (Ok(Some(held)), failed + 1)
    }

    /// Sends `batch`'s runs in one request, stored on the server in one
    /// transaction. `Ok`: what happened to each run and the attempts it
    /// took, in order, up to the first that failed (the rest are not
    /// tried); `Err`: none was stored, and the attempts the batch took. A
    /// batch the server refuses as a whole for what one of its runs holds
    /// (400, 413, 422) is sent again a run at a time, so the runs before
    /// that one are stored and the refusal names it.
    pub fn push_batch(&self, batch: &Batch) -> Result<Vec<RunPushed>, (PushError, u32)> {
        let mut failed = 0;
        let (url, body) = (format!("{}/batch", self.runs_url()), batch.body());
        let answer = self.with_retries(&mut failed, || self.send("POST", &url, Some(&body)));
        let a = answer.map_err(|e| (e, failed))?;
        let attempts = failed + 1;
        if matches!(a.status, 400 | 413 | 422) && batch.len() > 1 {
            let mut out = Vec::with_capacity(batch.len());
            for part in &batch.parts {
                let one = Batch {
                    parts: vec![part.clone()],
                };
                match self.push_batch(&one) {
                    Ok(mut pushed) => out.append(&mut pushed),
                    Err((e, tries)) => out.push((Err(e), tries)),
                }
                if matches!(out.last(), Some((Err(_), _))) {
                    break;
                }
            }
            return Ok(out);
        }
        if a.status != 200 && a.status != 201 {
            let what = if batch.len() == 1 {
                "the run"
            } else {
                "the batch"
            };
            return Err((refusal(&a, &self.project, what), attempts));
        }
        let doc = match schema::read_document::<IngestBatchDoc>(&a.body) {
            Ok(doc) if doc.runs.len() == batch.len() => doc,
            Ok(doc) => {
                return Err((
                    PushError {
                        message: format!(
                            "the server answered for {} runs of a batch of {}",
                            doc.runs.len(),
                            batch.len()
                        ),
                        hint: "check that --server names a perfsleuth server".into(),
                        status: Some(a.status),
                        usage: true,
                    },
                    attempts,
                ));
            }
            Err(e) => return Err((not_ours(a.status, &e), attempts)),
        };
        Ok(doc
            .runs
            .into_iter()
            .map(|r| {
                let pushed = if r.created {
                    Pushed::Sent(r.id)
                } else {
                    Pushed::Present(Some(r.id))
                };
                (Ok(pushed), attempts)
            })
            .collect())
    }

    /// Repeats `request` while it fails on the network or with a 5xx, 408
    /// or 429, waiting longer each time; counts the tries that got no answer
    /// in `failed`, which runs on across the requests of one run.
    fn with_retries(
        &self,
        failed: &mut u32,
        request: impl Fn() -> Result<Answer, Transport>,
    ) -> Result<Answer, PushError> {
        let mut wait = FIRST_BACKOFF;
        let mut last = String::new();
        for i in 0..self.attempts {
            if i > 0 {
                // ±25 % jitter: pushers that lost the same server do not
                // all come back in the same instant.
                let mut byte = [0u8; 1];
                let jitter = match getrandom::fill(&mut byte) {
                    Ok(()) => 0.75 + f64::from(byte[0]) / 510.0,
                    Err(_) => 1.0,
                };
                std::thread::sleep(wait.mul_f64(jitter));
                wait = (wait * 2).min(MAX_BACKOFF);
            }
            let answer = request();
            if !matches!(answer, Ok(ref a) if !retried(a.status)) {
                *failed += 1;
            }
            match answer {
                Ok(a) if retried(a.status) => {
                    last = format!("HTTP {}: {}", a.status, error_text(&a));
                }
                Ok(a) => return Ok(a),
                Err(Transport::Fatal(message, hint)) => {
                    return Err(PushError {
                        message: format!("cannot talk to {}: {message}", self.shown),
                        hint,
                        status: None,
                        usage: true,
                    });
                }
                Err(Transport::Retry(e)) => last = e,
            }
        }
        Err(PushError {
            message: format!(
                "{} did not answer after {} attempts: {last}",
                self.shown, *failed
            ),
            hint: "check that the server runs and --server is right; push again later (runs already sent are not sent twice)".into(),
            status: None,
            usage: false,
        })
    }

    fn send(&self, method: &str, url: &str, body: Option<&[u8]>) -> Result<Answer, Transport> {
        let auth = self.token.as_ref().map(|t| format!("Bearer {t}"));
        let response = match (method, body) {
            ("HEAD", _) => {
                let mut req = self.agent.head(url);
                if let Some(a) = &auth {
                    req = req.header("Authorization", a);
                }
                req.call()
            }
            (_, body) => {
                let mut req = self
                    .agent
                    .post(url)
                    .config()
                    .timeout_global(Some(POST_TIMEOUT))
                    .build()
                    .header("Content-Type", "application/json");
                if let Some(a) = &auth {
                    req = req.header("Authorization", a);
                }
                req.send(body.unwrap_or_default())
            }
        };
        let mut response = response.map_err(transport)?;
        let status = response.status().as_u16();
        let body = if method == "HEAD" {
            String::new()
        } else {
            response.body_mut().read_to_string().map_err(transport)?
        };
        Ok(Answer { status, body })
    }
}

/// Runs to send in one request ([`Client::push_batch`]), each serialised
/// once as it is added, so a push knows a batch's size before it sends it.
#[derive(Debug, Clone, Default)]
pub struct Batch {
    parts: Vec<Vec<u8>>,
}

impl Batch {
    /// The bytes a batch is sent at once it holds this many: far below the
    /// server's default body limit of 32 MiB, and a transaction short enough
    /// not to hold other pushers up.
    pub const BYTES: usize = 4 << 20;

    /// The runs a batch is sent at once it holds this many.
    pub const RUNS: usize = 100;

    /// Adds `run` (serialised now).
    pub fn add(&mut self, run: &Run) -> Result<(), PushError> {
        self.parts
            .push(serde_json::to_vec(run).map_err(|e| unserialisable(&e))?);
        Ok(())
    }

    /// The runs it holds.
    pub fn len(&self) -> usize {
        self.parts.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.parts.is_empty()
    }

    /// Whether it is as large as a batch gets ([`Batch::BYTES`], [`Batch::RUNS`]).
    pub fn is_full(&self) -> bool {
        self.parts.len() >= Batch::RUNS || self.bytes() >= Batch::BYTES
    }

    fn bytes(&self) -> usize {
        self.parts.iter().map(|p| p.len() + 1).sum()
    }

    /// The `perfsleuth/run-batch` document, its runs written as they were
    /// serialised (a second serialisation of every run cost as much as the first).
    fn body(&self) -> Vec<u8> {
        let head = format!(
            "{{\"schema\":\"{}\",\"schema_version\":{},\"runs\":[",
            RunBatchDoc::SCHEMA,
            RunBatchDoc::VERSION
        );
        let mut body = Vec::with_capacity(head.len() + self.bytes() + 2);
        body.extend_from_slice(head.as_bytes());
        for (i, part) in self.parts.iter().enumerate() {
            if i > 0 {
                body.push(b',');
            }
            body.extend_from_slice(part);
        }
        body.extend_from_slice(b"]}");
        body
    }
}

/// Whether `a` says the server has no such endpoint: a server older than
/// batches answers `POST …/runs/held` with 405 (the path names a run,
/// which it only reads) or 404 without a `perfsleuth/error`.
fn older_server(a: &Answer) -> bool {
    a.status == 405 || (a.status == 404 && serde_json::from_str::<ApiErrorDoc>(&a.body).is_err())
}

/// A document this client could not serialise.
fn unserialisable(e: &serde_json::Error) -> PushError {
    PushError {
        message: format!("cannot serialise the run: {e}"),
        hint: "please report this".into(),
        status: None,
        usage: true,
    }
}

/// An answer that is not the document a perfsleuth server sends.
fn not_ours(status: u16, e: &schema::ReadError) -> PushError {
    PushError {
        message: format!("the server's answer is not a perfsleuth document: {e}"),
        hint: "check that --server names a perfsleuth server".into(),
        status: Some(status),
        usage: true,
    }
}

/// Why a request got no answer.
enum Transport {
    /// The network or the server may recover: try again.
    Retry(String),
    /// Trying again cannot help (a TLS mismatch, a bad URL): message and hint.
    Fatal(String, String),
}

/// Sorts a client error into one to retry and one to report at once.
fn transport(e: ureq::Error) -> Transport {
    let text = e.to_string();
    let tls = matches!(
        e,
        ureq::Error::Tls(_)
            | ureq::Error::Rustls(_)
            | ureq::Error::Pem(_)
            | ureq::Error::TlsRequired
    ) || text.contains("corrupt message")
        || text.contains("InvalidContentType");
    if tls {
        return Transport::Fatal(
            text,
            "the server may speak plain HTTP (then use an http:// URL), or its certificate is not trusted".into(),
        );
    }
    if matches!(e, ureq::Error::BadUri(_) | ureq::Error::Http(_)) {
        return Transport::Fatal(
            text,
            "give the server's base URL, e.g. --server http://perf.example:8080".into(),
        );
    }
    Transport::Retry(text)
}

/// Whether an answer with `status` is one to try again: the server or a
/// proxy in front of it may recover.
fn retried(status: u16) -> bool {
    status >= 500 || status == 408 || status == 429
}

/// The server's own message where it sent a `perfsleuth/error`, else the
/// body's start, else (an answer to `HEAD` has no body) what the status means.
fn error_text(a: &Answer) -> String {
    match serde_json::from_str::<ApiErrorDoc>(&a.body) {
        Ok(doc) => doc.error,
        Err(_) if a.body.trim().is_empty() => {
            let reason = ureq::http::StatusCode::from_u16(a.status)
                .ok()
                .and_then(|s| s.canonical_reason())
                .unwrap_or("an error");
            format!("{reason}, with no message (the server sent no body)")
        }
        Err(_) => a.body.chars().take(200).collect(),
    }
}

/// A 4xx answer to a request about `what` ("the run", "the batch", "the
/// question") as an error the user can act on; a body-less answer (to
/// `HEAD`) is explained by its status.
fn refusal(a: &Answer, project: &str, what: &str) -> PushError {
    // A pusher gives its token through the environment, which the
    // server's hint (for any API client) does not name.
    let token_hint = || {
        format!(
            "set PERFSLEUTH_TOKEN to a token of project {project} (perfsleuth server token create --project {project} --scope ingest)"
        )
    };
    let (message, hint) = match serde_json::from_str::<ApiErrorDoc>(&a.body) {
        Ok(doc) if a.status == 401 => (doc.error, token_hint()),
        Ok(doc) => (doc.error, doc.hint.unwrap_or_default()),
        Err(_) => match a.status {
            401 => ("the server needs a valid token".to_string(), token_hint()),
            403 => (
                format!("the token may not upload to project {project}"),
                format!("use a token of project {project} with the ingest scope"),
            ),
            404 => (
                "no perfsleuth API at this URL".to_string(),
                "give the server's base URL, without /api/v1 (e.g. --server http://perf.example:8080)"
                    .to_string(),
            ),
            _ => (
                a.body.chars().take(200).collect::<String>(),
                "check that --server names a perfsleuth server".to_string(),
            ),
        },
    };
    PushError {
        message: format!("the server refused {what} (HTTP {}): {message}", a.status),
        hint,
        status: Some(a.status),
        usage: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, body: &str) -> Answer {
        Answer {
            status,
            body: body.into(),
        }
    }

    #[test]
    fn an_answer_without_a_body_says_what_its_status_means() {
        assert_eq!(
            error_text(&answer(503, "")),
            "Service Unavailable, with no message (the server sent no body)"
        );
        let doc = r#"{"schema":"perfsleuth/error","schema_version":1,"status":503,"error":"the server cannot reach its database"}"#;
        assert_eq!(
            error_text(&answer(503, doc)),
            "the server cannot reach its database"
        );
    }

    #[test]
    fn only_a_server_without_the_endpoint_is_taken_for_an_older_one() {
        // An older server routes `…/runs/held` to a run, which it only reads.
        assert!(older_server(&answer(405, "")));
        assert!(older_server(&answer(404, "Not Found")));
        // Our own 404 (no such project) is an answer, not an older server.
        let doc = r#"{"schema":"perfsleuth/error","schema_version":1,"status":404,"error":"no project app"}"#;
        assert!(!older_server(&answer(404, doc)));
        assert!(!older_server(&answer(401, "")));
    }

    #[test]
    fn a_batch_is_a_run_batch_document_of_its_runs_in_order() {
        let run = |started: &str| -> Run {
            serde_json::from_value(serde_json::json!({
                "id": null, "uuid": null, "started_at": started, "ended_at": null,
                "status": "complete", "tool_version": "0.1.0", "git": null,
                "mode": "walltime", "options": {}, "environment": {},
                "benchmarks": [], "probes": []
            }))
            .expect("a run")
        };
        let mut batch = Batch::default();
        assert!(batch.is_empty() && !batch.is_full());
        for t in ["2026-12-07T00:00:00.000Z", "2026-12-07T00:00:01.000Z"] {
            batch.add(&run(t)).unwrap();
        }
        let body = String::from_utf8(batch.body()).unwrap();
        let doc: RunBatchDoc = schema::read_document(&body).unwrap();
        let started: Vec<&str> = doc.runs.iter().map(|r| r.started_at.as_str()).collect();
        assert_eq!(
            started,
            ["2026-12-07T00:00:00.000Z", "2026-12-07T00:00:01.000Z"]
        );
        for _ in 2..Batch::RUNS {
            batch.add(&run("2026-12-07T00:00:02.000Z")).unwrap();
        }
        assert!(batch.is_full());
    }
}
