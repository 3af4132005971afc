//! `perfsleuth serve`, `push` and `server token|project`: the team server's
//! commands. The server and the client are `perfsleuth-server`'s; this
//! module parses, opens the store and prints.

use crate::cli::{
    ProjectArgs, PushArgs, PushTarget, ServeArgs, ServerArgs, ServerCommand, TokenCommand,
};
use crate::error::Fail;
use crate::output::{open_existing_store, open_store, store_url};
use crate::term::emit;
use perfsleuth_model::exit::ExitCode;
use perfsleuth_model::quantity::MISSING;
use perfsleuth_model::schema::{Document, PushDoc, PushedRun, TokenInfo, TokensDoc};
use perfsleuth_server::auth::{Scope, hash_secret, new_secret, valid_project};
use perfsleuth_server::client::{Batch, Client, PushError, Pushed};
use perfsleuth_store::{RunListing, Store, TokenRecord};

/// `perfsleuth serve`.
pub fn serve(args: ServeArgs) -> Result<i32, Fail> {
    let store = store_url(args.store.store.as_deref())?;
    let shown = store.display();
    // The verdict options exactly as `compare` builds them from the same
    // file, so the server and the CLI judge the same runs alike.
    let verdicts = perfsleuth_app::options::VerdictOptions {
        config: args.config.clone(),
        ..Default::default()
    };
    let (compare, file) = crate::compare::options_and_file(&verdicts)?;
    let settings = match file {
        Some(path) => format!("verdicts: {}", path.display()),
        None => "verdicts: defaults, no perfsleuth.toml".to_string(),
    };
    let config = perfsleuth_server::ServerConfig {
        store,
        listen: args.listen,
        body_limit: usize::try_from(args.body_limit).unwrap_or(usize::MAX),
        body_timeout: args.body_timeout,
        compare,
    };
    perfsleuth_server::serve(config, |addr| {
        emit(
            &format!(
                "perfsleuth server listening on http://{addr} (store: {shown}; {settings}); Ctrl-C stops it\n"
            ),
            true,
        );
    })
    .map_err(|e| match e {
        perfsleuth_server::ServerError::Store(e) => Fail::from(e),
        e => Fail::usage(
            e.to_string(),
            "choose another --listen address (port 0 picks a free one)",
        ),
    })?;
    emit("perfsleuth server stopped\n", true);
    Ok(ExitCode::OK)
}

/// `perfsleuth server …`.
pub fn server(args: ServerArgs) -> Result<i32, Fail> {
    match args.command {
        ServerCommand::Token(TokenCommand::Create {
            project,
            scope,
            name,
            json,
            store,
        }) => token_create(&project, &scope, &name, json, store.store.as_deref()),
        ServerCommand::Token(TokenCommand::List {
            project,
            json,
            store,
        }) => token_list(project.as_deref(), json, store.store.as_deref()),
        ServerCommand::Token(TokenCommand::Revoke { id, store }) => {
            let mut s = open_existing_store(store.store.as_deref())?;
            let now = perfsleuth_model::rfc3339(std::time::SystemTime::now());
            if !s.revoke_token(id, &now).map_err(Fail::from)? {
                let known = s
                    .tokens(None)
                    .map_err(Fail::from)?
                    .into_iter()
                    .find(|t| t.id == id);
                let message = match known.and_then(|t| t.revoked_at) {
                    Some(when) => format!("token {id} was already revoked at {when}"),
                    None => format!("no token {id} in {}", s.location().display()),
                };
                return Err(Fail::usage(
                    message,
                    "list the tokens with `perfsleuth server token list --store URL`",
                ));
            }
            emit(&format!("Token {id} revoked.\n"), false);
            Ok(ExitCode::OK)
        }
        ServerCommand::Project(args) => project(args),
    }
}

fn check_project(name: &str) -> Result<(), Fail> {
    if valid_project(name) {
        Ok(())
    } else {
        Err(Fail::usage(
            format!("{name:?} is not a project name"),
            "project names are 1-64 letters, digits, '.', '_' or '-', starting with a letter or digit",
        ))
    }
}

fn info(t: &TokenRecord, secret: Option<String>) -> TokenInfo {
    TokenInfo {
        id: t.id,
        project: t.project.clone(),
        name: t.name.clone(),
        scopes: t.scopes.clone(),
        created_at: t.created_at.clone(),
        revoked_at: t.revoked_at.clone(),
        secret,
    }
}

fn tokens_json(tokens: Vec<TokenInfo>) -> Result<String, Fail> {
    perfsleuth_model::schema::to_json_pretty(&TokensDoc {
        schema: TokensDoc::SCHEMA.to_string(),
        schema_version: TokensDoc::VERSION,
        tokens,
    })
    .map_err(|e| Fail::usage(format!("cannot serialise JSON: {e}"), "please report this"))
}

fn token_create(
    project: &str,
    scope: &str,
    name: &str,
    json: bool,
    store: Option<&str>,
) -> Result<i32, Fail> {
    check_project(project)?;
    let mut scopes: Vec<String> = Vec::new();
    for s in scope.split(',').map(str::trim).filter(|s| !s.is_empty()) {
        let parsed = Scope::parse(s).ok_or_else(|| {
            Fail::usage(
                format!("unknown scope `{s}`"),
                "scopes are ingest, read and admin, comma-separated",
            )
        })?;
        if !scopes.iter().any(|x| x == parsed.name()) {
            scopes.push(parsed.name().to_string());
        }
    }
    if scopes.is_empty() {
        return Err(Fail::usage(
            "--scope names no scope",
            "give --scope ingest, read, admin or a comma-separated list",
        ));
    }
    if name.trim().is_empty() || name.len() > 200 || name.chars().any(char::is_control) {
        return Err(Fail::usage(
            "--name must be 1-200 printable characters",
            "name the token after its user, e.g. --name ci",
        ));
    }
    let secret = new_secret().map_err(|e| {
        Fail::usage(
            format!("cannot draw a random token: {e}"),
            "the system's random source failed; retry",
        )
    })?;
    let mut s = open_store(store)?;
    let now = perfsleuth_model::rfc3339(std::time::SystemTime::now());
    s.ensure_project(project, &now).map_err(Fail::from)?;
    let mut record = TokenRecord {
        id: 0,
        project: project.to_string(),
        name: name.to_string(),
        hash: hash_secret(&secret),
        scopes,
        created_at: now,
        revoked_at: None,
    };
    record.id = s.add_token(&record).map_err(Fail::from)?;
    if json {
        emit(&tokens_json(vec![info(&record, Some(secret))])?, false);
    } else {
        emit(
            &format!(
                "Token {} for project {project} ({}), named {name:?}:\n\n  {secret}\n\nIt is shown only now; the store keeps its SHA-256. Give it to clients as PERFSLEUTH_TOKEN.\n",
                record.id,
                record.scopes.join(", ")
            ),
            false,
        );
    }
    Ok(ExitCode::OK)
}

fn token_list(project: Option<&str>, json: bool, store: Option<&str>) -> Result<i32, Fail> {
    if let Some(p) = project {
        check_project(p)?;
    }
    // A store not made yet holds no tokens; listing does not create it.
    let tokens = match open_existing_store(store) {
        Ok(s) => s.tokens(project).map_err(Fail::from)?,
        Err(f) if f.message.starts_with("no results stored yet") => Vec::new(),
        Err(f) => return Err(f),
    };
    if json {
        emit(
            &tokens_json(tokens.iter().map(|t| info(t, None)).collect())?,
            false,
        );
        return Ok(ExitCode::OK);
    }
    if tokens.is_empty() {
        emit(
            "No tokens (create one with `perfsleuth server token create --project NAME`).\n",
            false,
        );
        return Ok(ExitCode::OK);
    }
    let mut rows = vec![vec![
        "ID".to_string(),
        "PROJECT".into(),
        "NAME".into(),
        "SCOPES".into(),
        "CREATED".into(),
        "REVOKED".into(),
    ]];
    for t in &tokens {
        rows.push(vec![
            t.id.to_string(),
            t.project.clone(),
            t.name.clone(),
            t.scopes.join(","),
            t.created_at.clone(),
            t.revoked_at.clone().unwrap_or_else(|| MISSING.into()),
        ]);
    }
    emit(
        &perfsleuth_report::table(&rows, |_| perfsleuth_report::Align::Left),
        false,
    );
    Ok(ExitCode::OK)
}

fn project(args: ProjectArgs) -> Result<i32, Fail> {
    check_project(&args.name)?;
    let mut s = open_store(args.store.store.as_deref())?;
    let now = perfsleuth_model::rfc3339(std::time::SystemTime::now());
    s.ensure_project(&args.name, &now).map_err(Fail::from)?;
    if args.public || args.private {
        s.set_public_read(&args.name, args.public)
            .map_err(Fail::from)?;
    }
    let projects = s.projects().map_err(Fail::from)?;
    let p = projects
        .iter()
        .find(|p| p.name == args.name)
        .ok_or_else(|| Fail::usage(format!("project {} vanished", args.name), "retry"))?;
    emit(
        &format!(
            "Project {}: {} run{}, reads {}.\n",
            p.name,
            p.runs,
            if p.runs == 1 { "" } else { "s" },
            if p.public_read {
                "public (no token needed)"
            } else {
                "need a token"
            }
        ),
        false,
    );
    Ok(ExitCode::OK)
}

/// The client for `--server` and `--project`, with the token from `PERFSLEUTH_TOKEN`.
fn client(target: &PushTarget) -> Result<Client, Fail> {
    let server = target.server.as_deref().ok_or_else(|| {
        Fail::usage(
            "no team server given",
            "pass --server URL or set PERFSLEUTH_SERVER",
        )
    })?;
    let project = target.project.as_deref().ok_or_else(|| {
        Fail::usage(
            "no project given",
            "pass --project NAME or set PERFSLEUTH_PROJECT",
        )
    })?;
    let token = match std::env::var("PERFSLEUTH_TOKEN") {
        Ok(t) if !t.trim().is_empty() => Some(t.trim().to_string()),
        Ok(_) | Err(std::env::VarError::NotPresent) => None,
        Err(std::env::VarError::NotUnicode(_)) => {
            return Err(Fail::usage(
                "PERFSLEUTH_TOKEN is not valid UTF-8",
                "set it to the pst_… secret `perfsleuth server token create` printed",
            ));
        }
    };
    Client::new(server, project, token, target.attempts).map_err(|e| Fail::usage(e.message, e.hint))
}

/// Checks `run --push`'s server and project before anything is measured.
pub fn check_push_target(target: &PushTarget) -> Result<(), Fail> {
    client(target).map(|_| ())
}

/// `perfsleuth push`.
pub fn push(args: PushArgs) -> Result<i32, Fail> {
    let client = client(&args.target)?;
    let store = open_existing_store(args.store.store.as_deref())?;
    let specs = if args.runs.is_empty() {
        vec!["latest".to_string()]
    } else {
        args.runs.clone()
    };
    let mut ids = Vec::new();
    for spec in &specs {
        ids.push(store.resolve_run(spec).map_err(Fail::from)?);
    }
    let report = if args.json {
        PushReport::Json
    } else {
        PushReport::Lines
    };
    push_ids(&*store, &client, &ids, &args.target, report)
}

/// How a push reports what it sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PushReport {
    /// A line per run on stdout.
    Lines,
    /// A `perfsleuth/push` document on stdout.
    Json,
    /// One line on stderr counting the runs, for a command whose stdout is
    /// its own document (`bisect`).
    Count,
}

/// `run --push` and `bisect --push`: the runs just stored.
pub fn push_after_run(
    store_url: Option<&str>,
    ids: &[i64],
    target: &PushTarget,
    report: PushReport,
) -> Result<i32, Fail> {
    let client = client(target)?;
    let store = open_existing_store(store_url)?;
    push_ids(&*store, &client, ids, target, report)
}

fn push_ids(
    store: &dyn Store,
    client: &Client,
    ids: &[i64],
    target: &PushTarget,
    report: PushReport,
) -> Result<i32, Fail> {
    let mut doc = PushDoc {
        schema: PushDoc::SCHEMA.to_string(),
        schema_version: PushDoc::VERSION,
        server: target.server.clone().unwrap_or_default(),
        project: target.project.clone().unwrap_or_default(),
        runs: Vec::new(),
    };
    // Every run's listing first: one not found or still running stops the
    // push before anything is sent.
    let mut listings = Vec::with_capacity(ids.len());
    for &id in ids {
        let listing = store.run_listing(id).map_err(Fail::from)?.ok_or_else(|| {
            Fail::usage(
                format!("run {id} not found"),
                "list the stored runs with `perfsleuth runs`",
            )
        })?;
        if listing.status == perfsleuth_model::RunStatus::Running {
            return Err(Fail::usage(
                format!("run {id} is still running"),
                "push it once it has finished",
            ));
        }
        listings.push(listing);
    }
    let mut first_failure: Option<(i64, PushError)> = None;
    // Each run reported as soon as it and the runs before it are done.
    let mut record = |i: usize, outcome: Outcome| {
        let listing = &listings[i];
        let id = listing.id;
        let uuid = listing.uuid.clone().unwrap_or_default();
        let entry = match outcome {
            Outcome::Untried => PushedRun {
                local_id: id,
                uuid,
                outcome: "not_attempted".into(),
                server_id: None,
                attempts: 0,
                error: Some(format!(
                    "not tried after run {} failed",
                    first_failure.as_ref().map_or(id, |f| f.0)
                )),
            },
            Outcome::Done(Ok(Pushed::Sent(server_id)), attempts) => PushedRun {
                local_id: id,
                uuid,
                outcome: "sent".into(),
                server_id: Some(server_id),
                attempts,
                error: None,
            },
            Outcome::Done(Ok(Pushed::Present(server_id)), attempts) => PushedRun {
                local_id: id,
                uuid,
                outcome: "present".into(),
                server_id,
                attempts,
                error: None,
            },
            Outcome::Done(Err(e), attempts) => {
                let entry = PushedRun {
                    local_id: id,
                    uuid,
                    outcome: "failed".into(),
                    server_id: None,
                    attempts,
                    error: Some(e.message.clone()),
                };
                first_failure.get_or_insert((id, e));
                entry
            }
        };
        if report == PushReport::Lines {
            let line = match entry.outcome.as_str() {
                "sent" => format!(
                    "Run {id} sent to {} project {} (server run {}).\n",
                    doc.server,
                    doc.project,
                    entry.server_id.unwrap_or_default()
                ),
                "present" => format!(
                    "Run {id} is already on {} project {}: not sent again.\n",
                    doc.server, doc.project
                ),
                _ => String::new(),
            };
            emit(&line, false);
        }
        doc.runs.push(entry);
    };
    send_runs(store, client, &listings, &mut record);
    let untried: Vec<String> = doc
        .runs
        .iter()
        .filter(|r| r.outcome == "not_attempted")
        .map(|r| r.local_id.to_string())
        .collect();
    if report == PushReport::Lines && !untried.is_empty() {
        emit(
            &format!(
                "Not tried after that failure: run{} {}.\n",
                if untried.len() == 1 { "" } else { "s" },
                untried.join(", ")
            ),
            false,
        );
    }
    if report == PushReport::Count {
        let count = |o: &str| doc.runs.iter().filter(|r| r.outcome == o).count();
        emit(
            &format!(
                "{} runs sent to {} project {} ({} already there).\n",
                count("sent"),
                doc.server,
                doc.project,
                count("present")
            ),
            true,
        );
    }
    if report == PushReport::Json {
        emit(
            &perfsleuth_model::schema::to_json_pretty(&doc).map_err(|e| {
                Fail::usage(format!("cannot serialise JSON: {e}"), "please report this")
            })?,
            false,
        );
    }
    match first_failure {
        None => Ok(ExitCode::OK),
        Some((_, e)) => Err(Fail::usage(e.message, e.hint)),
    }
}

/// What became of one run of a push.
enum Outcome {
    /// Sent or found on the server, or failed; with the attempts it took.
    Done(Result<Pushed, PushError>, u32),
    /// Not tried: an earlier run failed (the server refused or is away).
    Untried,
}

/// Outcomes handed on in the runs' order, each as soon as it and every one
/// before it are known: a push of many batches reports as it goes.
struct InOrder<'d> {
    out: Vec<Option<Outcome>>,
    next: usize,
    done: &'d mut dyn FnMut(usize, Outcome),
}

impl InOrder<'_> {
    /// Run `i`'s outcome, and those now due handed on.
    fn set(&mut self, i: usize, outcome: Outcome) {
        self.out[i] = Some(outcome);
        while let Some(o) = self.out.get_mut(self.next).and_then(Option::take) {
            (self.done)(self.next, o);
            self.next += 1;
        }
    }

    /// Hands on the rest; a run with no outcome was not tried.
    fn finish(mut self) {
        for i in self.next..self.out.len() {
            let o = self.out[i].take().unwrap_or(Outcome::Untried);
            (self.done)(i, o);
        }
    }
}

/// Sends the runs of `listings` the server lacks, a batch at a time (each
/// one request and one transaction on the server), after asking once which
/// it holds; hands what became of each run to `done`, in order. A run the
/// server holds is neither loaded nor exported (seconds for a big one).
/// After a failure the runs not yet sent are not tried: the next ones would
/// fare the same.
fn send_runs(
    store: &dyn Store,
    client: &Client,
    listings: &[RunListing],
    done: &mut dyn FnMut(usize, Outcome),
) {
    let uuids: Vec<&str> = listings.iter().filter_map(|l| l.uuid.as_deref()).collect();
    let (asked, asking) = client.held(&uuids);
    let held = match asked {
        Ok(Some(held)) => held,
        Ok(None) => return send_one_by_one(store, client, listings, done),
        Err(e) => {
            let mut order = InOrder {
                out: listings.iter().map(|_| None).collect(),
                next: 0,
                done,
            };
            if !listings.is_empty() {
                order.set(0, Outcome::Done(Err(e), asking));
            }
            return order.finish();
        }
    };
    // A run sent counts the question's unanswered tries with its own; a
    // failed one the tries its error message names.
    let unanswered = asking.saturating_sub(1);
    let mut order = InOrder {
        out: listings.iter().map(|_| None).collect(),
        next: 0,
        done,
    };
    let mut batch = Batch::default();
    let mut members: Vec<usize> = Vec::new();
    // Sends the batch; false when a run of it failed or none was stored.
    let send = |batch: &mut Batch, members: &mut Vec<usize>, order: &mut InOrder<'_>| {
        let complete = match client.push_batch(batch) {
            Ok(pushed) => {
                let all = pushed.len() == members.len() && pushed.iter().all(|(p, _)| p.is_ok());
                for (&i, (p, attempts)) in members.iter().zip(pushed) {
                    let attempts = if p.is_ok() {
                        attempts + unanswered
                    } else {
                        attempts
                    };
                    order.set(i, Outcome::Done(p, attempts));
                }
                all
            }
            Err((e, attempts)) => {
                order.set(members[0], Outcome::Done(Err(e), attempts));
                false
            }
        };
        *batch = Batch::default();
        members.clear();
        complete
    };
    for (i, listing) in listings.iter().enumerate() {
        let present = listing
            .uuid
            .as_deref()
            .and_then(|u| held.get(&u.to_ascii_lowercase()));
        if let Some(&server_id) = present {
            order.set(
                i,
                Outcome::Done(Ok(Pushed::Present(Some(server_id))), asking),
            );
            continue;
        }
        let added = exported(store, listing.id).and_then(|run| batch.add(&run));
        if let Err(e) = added {
            // What was gathered before it goes; then the push stops here.
            if batch.is_empty() || send(&mut batch, &mut members, &mut order) {
                order.set(i, Outcome::Done(Err(e), asking));
            }
            return order.finish();
        }
        members.push(i);
        if batch.is_full() && !send(&mut batch, &mut members, &mut order) {
            return order.finish();
        }
    }
    if !batch.is_empty() {
        send(&mut batch, &mut members, &mut order);
    }
    order.finish();
}

/// [`send_runs`] to a server older than batches: a question and an upload a run.
fn send_one_by_one(
    store: &dyn Store,
    client: &Client,
    listings: &[RunListing],
    done: &mut dyn FnMut(usize, Outcome),
) {
    let mut failed = false;
    for (i, listing) in listings.iter().enumerate() {
        if failed {
            done(i, Outcome::Untried);
            continue;
        }
        let (result, attempts) = client.push_lazily(listing.uuid.as_deref(), || {
            let run = exported(store, listing.id)?;
            let analysis = perfsleuth_summary::analyze(&run, None);
            Ok(std::borrow::Cow::Owned(perfsleuth_report::export_json(
                &run, &analysis,
            )))
        });
        failed = result.is_err();
        done(i, Outcome::Done(result, attempts));
    }
}

/// Run `id` loaded to be sent; an error of the user's (exit 2) when it cannot be.
fn exported(store: &dyn Store, id: i64) -> Result<perfsleuth_model::Run, PushError> {
    let loaded = store.load_run(id).map_err(Fail::from).and_then(|r| {
        r.ok_or_else(|| {
            Fail::usage(
                format!("run {id} not found"),
                "list the stored runs with `perfsleuth runs`",
            )
        })
    });
    loaded.map_err(|fail| PushError {
        message: fail.message,
        hint: fail.hint,
        status: None,
        usage: true,
    })
}
