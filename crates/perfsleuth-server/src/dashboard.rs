//! The dashboard: server-rendered pages with the report's charts and no
//! script. Projects → a project's benchmarks (latest value, trend, open
//! alert) and recent runs → one benchmark's history (change points,
//! environment markers) → a run → a comparison → an environment diff.
//!
//! A browser cannot send `Authorization: Bearer` without script, so a token
//! typed into the login form is kept in an HttpOnly, SameSite=Strict cookie
//! and read like the header. Public projects need neither.

use crate::api::bearer;
use crate::auth::{Scope, valid_project};
use crate::{Access, ApiError, State};
use axum::Router;
use axum::extract::Form;
use axum::extract::rejection::FormRejection;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{Html, IntoResponse, Redirect, Response};
use axum::routing::{get, post};
use perfsleuth_history::stored;
use perfsleuth_model::quantity::MISSING;
use perfsleuth_model::schema::{HistoryDoc, RunFilter};
use perfsleuth_model::{Metric, Run};
use perfsleuth_report::html::{self, escape, page, table};
use perfsleuth_store::{RunKind, Store};
use serde::Deserialize;
use std::fmt::Write as _;
use std::sync::Arc;

/// The cookie that carries a dashboard login.
const COOKIE: &str = "perfsleuth_token";

/// Runs listed on a project's page.
const RECENT_RUNS: usize = 20;

/// Runs the project page's trends span: the newest ones, so the page costs
/// the same at 5 000 runs as at 50; a benchmark's own page has them all.
const TREND_RUNS: usize = 50;

/// Bisections listed on a project's page.
const RECENT_BISECTIONS: usize = 10;

type Shared = axum::extract::State<Arc<State>>;

pub(crate) fn routes(state: Arc<State>) -> Router {
    Router::new()
        .route("/", get(home))
        .route("/login", get(login_form).post(login))
        .route("/logout", post(logout))
        .route("/p/{project}", get(project_page))
        .route("/p/{project}/bench", get(bench_page))
        .route("/p/{project}/runs/{run}", get(run_page))
        .route("/p/{project}/bisect/{id}", get(bisection_page))
        .route("/p/{project}/compare", get(compare_page))
        .route("/p/{project}/env", get(env_page))
        .with_state(state)
}

/// A page that failed: its status and an HTML explanation.
pub(crate) struct PageError(ApiError, Option<String>);

impl From<ApiError> for PageError {
    fn from(e: ApiError) -> PageError {
        PageError(e, None)
    }
}

impl IntoResponse for PageError {
    fn into_response(self) -> Response {
        let PageError(e, project) = self;
        let mut body = format!("<p class=\"regressed\">{}</p>", escape(&e.error));
        if let Some(h) = &e.hint {
            let _ = write!(body, "<p class=\"note\">{}</p>", escape(h));
        }
        if e.status == StatusCode::UNAUTHORIZED || e.status == StatusCode::FORBIDDEN {
            let target = project
                .filter(|p| valid_project(p))
                .map_or(String::from("/login"), |p| format!("/login?project={p}"));
            let _ = write!(
                body,
                "<p><a href=\"{target}\">Log in with a token of the project</a></p>"
            );
        }
        let html = page(
            &format!(
                "{} — perfsleuth",
                e.status.canonical_reason().unwrap_or("Error")
            ),
            &format!("HTTP {}", e.status.as_u16()),
            &[nav(false, &[]), body],
        );
        (e.status, Html(html)).into_response()
    }
}

crate::extract::extractors!(PagePath, PageQuery, PageError, |m: String| PageError::from(
    ApiError::bad_request(m, "start again from the project list")
));

/// A page for a path that is not one.
pub(crate) fn not_found_page(path: &str) -> Response {
    PageError(
        ApiError::not_found(format!("no page {path}"), "start from the project list"),
        None,
    )
    .into_response()
}

/// The token of a request: the Authorization header, else the login cookie.
fn credential(headers: &HeaderMap) -> Result<Option<String>, ApiError> {
    if let Some(t) = bearer(headers)? {
        return Ok(Some(t));
    }
    Ok(login_cookie(headers))
}

/// The dashboard's login cookie, if the request carries one.
fn login_cookie(headers: &HeaderMap) -> Option<String> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == COOKIE)
        .map(|(_, v)| v.to_string())
        .filter(|v| !v.is_empty())
}

/// Percent-encodes a query value.
fn enc(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// Whether the request carries the dashboard's login cookie: only then is
/// there anything to log out of.
fn signed_in(headers: &HeaderMap) -> bool {
    login_cookie(headers).is_some()
}

/// The breadcrumb: `(label, href)` after the root; "Log out" for a
/// visitor who logged in.
fn nav(signed_in: bool, trail: &[(String, String)]) -> String {
    let mut out = String::from("<nav class=\"sub\">");
    if signed_in {
        out.push_str("<form method=\"post\" action=\"/logout\" style=\"float:right;margin:0\"><button type=\"submit\">Log out</button></form>");
    }
    out.push_str("<a href=\"/\">projects</a>");
    for (label, href) in trail {
        if href.is_empty() {
            let _ = write!(out, " › {}", escape(label));
        } else {
            let _ = write!(out, " › <a href=\"{}\">{}</a>", escape(href), escape(label));
        }
    }
    out.push_str("</nav>");
    out
}

fn link(href: &str, text: &str) -> String {
    format!("<a href=\"{}\">{}</a>", escape(href), escape(text))
}

/// Checks the path's project and runs `f` with a store authorized to read
/// it. With a `kept` key, the page depends on the store and that key alone:
/// it is kept while the store is unchanged ([`State::authorized_cached`]).
async fn read_page<F>(
    state: &Arc<State>,
    project: &str,
    headers: &HeaderMap,
    kept: Option<String>,
    f: F,
) -> Result<Html<String>, PageError>
where
    F: FnMut(&mut dyn Store) -> Result<String, ApiError> + Send + 'static,
{
    let secret = credential(headers).map_err(|e| PageError(e, Some(project.to_string())))?;
    let page = match kept {
        Some(key) => state
            .authorized_cached(project, secret, key, String::len, f)
            .await
            .map(|page| String::clone(&page)),
        None => state.authorized(project, secret, Scope::Read, f).await,
    };
    page.map(Html)
        .map_err(|e| PageError(e, Some(project.to_string())))
}

async fn home(
    axum::extract::State(state): Shared,
    headers: HeaderMap,
) -> Result<Html<String>, PageError> {
    let signed = signed_in(&headers);
    let secret = credential(&headers)?;
    let projects = state
        .with_store("", Access::Read, move |s| {
            let mine = match &secret {
                Some(t) => s
                    .token_by_hash(&crate::auth::hash_secret(t))?
                    .filter(|t| t.revoked_at.is_none())
                    .map(|t| t.project),
                None => None,
            };
            Ok((s.projects()?, mine))
        })
        .await?;
    let (all, mine) = projects;
    let rows: Vec<String> = all
        .iter()
        .filter(|p| p.public_read || mine.as_deref() == Some(p.name.as_str()))
        .map(|p| {
            format!(
                "<tr><td>{}</td><td>{}</td><td class=\"l\">{}</td></tr>",
                link(&format!("/p/{}", p.name), &p.name),
                p.runs,
                if p.public_read {
                    "public"
                } else {
                    "your token"
                }
            )
        })
        .collect();
    let mut body = String::from("<section><h2>Projects</h2>");
    if rows.is_empty() {
        body.push_str("<p class=\"note\">No project you can read. Projects made public (<code>perfsleuth server project NAME --public</code>) are listed here; others after logging in with one of their tokens.</p>");
    } else {
        body.push_str(
            "<table><thead><tr><th>project</th><th>runs</th><th>access</th></tr></thead><tbody>",
        );
        for r in rows {
            body.push_str(&r);
        }
        body.push_str("</tbody></table>");
    }
    body.push_str("<p><a href=\"/login\">Log in with a project token</a></p></section>");
    Ok(Html(page(
        "perfsleuth",
        "The team's benchmark results",
        &[nav(signed, &[]), body],
    )))
}

#[derive(Deserialize)]
struct LoginQuery {
    project: Option<String>,
}

async fn login_form(PageQuery(q): PageQuery<LoginQuery>) -> Result<Html<String>, PageError> {
    let project = q.project.filter(|p| valid_project(p)).unwrap_or_default();
    let body = format!(
        "<section><h2>Log in</h2><form method=\"post\" action=\"/login\">\
         <p><label>Project <input name=\"project\" value=\"{}\" required></label></p>\
         <p><label>Token <input name=\"token\" type=\"password\" autocomplete=\"off\" required></label></p>\
         <p><button type=\"submit\">Log in</button></p></form>\
         <p class=\"note\">A token with the read (or admin) scope, from <code>perfsleuth server token create</code>. It is kept in a cookie only this server reads.</p></section>",
        escape(&project)
    );
    Ok(Html(page(
        "Log in — perfsleuth",
        "",
        &[nav(false, &[]), body],
    )))
}

#[derive(Deserialize)]
struct LoginForm {
    project: String,
    token: String,
}

async fn login(
    axum::extract::State(state): Shared,
    form: Result<Form<LoginForm>, FormRejection>,
) -> Result<Response, PageError> {
    let Form(f) = form.map_err(|e| {
        PageError(
            ApiError::bad_request(
                format!("bad form: {}", e.body_text()),
                "fill in the project and the token",
            ),
            None,
        )
    })?;
    let token = f.token.trim().to_string();
    // Only a token's own characters: nothing that could end the cookie.
    if token.is_empty() || !token.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(PageError(
            ApiError::unauthorized("this token is not valid"),
            Some(f.project),
        ));
    }
    let project = f.project.trim().to_string();
    state
        .authorized(&project, Some(token.clone()), Scope::Read, |_| Ok(()))
        .await
        .map_err(|e| PageError(e, Some(project.clone())))?;
    let mut response = Redirect::to(&format!("/p/{project}")).into_response();
    let cookie = format!("{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/; Max-Age=2592000");
    if let Ok(v) = HeaderValue::from_str(&cookie) {
        response.headers_mut().insert(header::SET_COOKIE, v);
    }
    Ok(response)
}

async fn logout() -> Response {
    let mut response = Redirect::to("/").into_response();
    response.headers_mut().insert(
        header::SET_COOKIE,
        HeaderValue::from_static("perfsleuth_token=; HttpOnly; SameSite=Strict; Path=/; Max-Age=0"),
    );
    response
}

/// Every benchmark's wall-time history in the project, on every branch:
/// over the newest `window` runs when given (the project page, whose cost
/// must not grow with the project), else over all of them.
fn project_history(
    s: &mut dyn Store,
    bench: Option<&str>,
    window: Option<usize>,
) -> Result<Option<HistoryDoc>, ApiError> {
    let filter = perfsleuth_history::Filter {
        benchmarks: bench.map(str::to_string).into_iter().collect(),
        ..Default::default()
    };
    let order = perfsleuth_history::Order::Time;
    let entries = s.history_entries_in(&perfsleuth_store::EntryScope {
        newest_runs: window,
        ..perfsleuth_history::scope(&filter, Some(Metric::Wall))
    })?;
    if entries.is_empty() {
        return Ok(None);
    }
    let selected = perfsleuth_history::select(entries, &filter, &order).map_err(|e| {
        ApiError::not_found(e.to_string(), "pick a benchmark from the project's page")
    })?;
    Ok(stored::history_doc(
        s,
        selected,
        &[Metric::Wall],
        &order,
        &filter,
        &perfsleuth_history::Options::default(),
        false,
    )?)
}

fn short_commit(run: &perfsleuth_store::RunListing) -> String {
    match &run.git {
        Some(g) => format!(
            "{}{}",
            g.branch
                .as_deref()
                .map_or(String::new(), |b| format!("{b} @ ")),
            perfsleuth_model::short_commit(&g.commit)
        ),
        None => MISSING.into(),
    }
}

#[derive(Debug, Deserialize)]
struct ProjectQuery {
    /// The runs listed are those stored before this run: a later page.
    before: Option<i64>,
    /// Only runs made on this git branch.
    branch: Option<String>,
    /// Only runs on this machine class (its hash or a prefix).
    machine: Option<String>,
    /// Only runs with a benchmark whose name contains this text.
    bench: Option<String>,
}

impl ProjectQuery {
    /// The listing's filters, as the API's `runs?` applies them.
    fn filter(&self) -> RunFilter {
        RunFilter {
            bench: crate::api::given(&self.bench),
            branch: crate::api::given(&self.branch),
            machine: crate::api::given(&self.machine),
            ..RunFilter::default()
        }
    }
}

/// The query string (`&`-led, empty without filters) that keeps `filter`
/// across the project page's links.
fn filter_query(filter: &RunFilter) -> String {
    [
        ("branch", &filter.branch),
        ("machine", &filter.machine),
        ("bench", &filter.bench),
    ]
    .iter()
    .filter_map(|(k, v)| v.as_deref().map(|v| format!("&{k}={}", enc(v))))
    .collect()
}

/// The project page's form that filters its runs.
fn filter_form(p: &str, filter: &RunFilter) -> String {
    let field = |name: &str, label: &str, value: &Option<String>| {
        format!(
            "<label>{label} <input name=\"{name}\" value=\"{}\" size=\"14\"></label> ",
            escape(value.as_deref().unwrap_or(""))
        )
    };
    format!(
        "<form method=\"get\" action=\"/p/{}\">{}{}{}<button type=\"submit\">Filter</button>{}</form>",
        enc(p),
        field("branch", "branch", &filter.branch),
        field("machine", "machine", &filter.machine),
        field("bench", "benchmark", &filter.bench),
        if filter.is_empty() {
            String::new()
        } else {
            format!(" {}", link(&format!("/p/{p}"), "all runs"))
        }
    )
}

async fn project_page(
    axum::extract::State(state): Shared,
    PagePath(project): PagePath<String>,
    PageQuery(q): PageQuery<ProjectQuery>,
    headers: HeaderMap,
) -> Result<Html<String>, PageError> {
    let signed = signed_in(&headers);
    let p = project.clone();
    // Signed in, the page has a "Log out" button: kept apart.
    let key = format!("project page {q:?} {signed}");
    read_page(&state, &project, &headers, Some(key), move |s| {
        let doc = project_history(s, None, Some(TREND_RUNS))?;
        let filter = q.filter();
        let runs = s.list_runs_matching(&filter, q.before, RECENT_RUNS)?;
        let keep = filter_query(&filter);
        let mut body = String::from("<section><h2>Benchmarks</h2>");
        match &doc {
            None => body.push_str(
                "<p class=\"note\">No complete runs yet. Push some: <code>perfsleuth push --server URL --project NAME</code>.</p>",
            ),
            Some(doc) => {
                let _ = write!(
                    body,
                    "<p class=\"note\">Trends over the project's newest {TREND_RUNS} runs; a benchmark's own page has its whole history.</p>"
                );
                body.push_str("<table><thead><tr><th>benchmark</th><th>machine</th><th>latest</th><th>trend</th><th>points</th><th>alert</th></tr></thead><tbody>");
                for series in &doc.series {
                    let values: Vec<f64> = series.points.iter().map(|pt| pt.value).collect();
                    let latest = values
                        .last()
                        .map_or(MISSING.to_string(), |v| perfsleuth_history::format_value(series, *v));
                    let alert = series
                        .change_points
                        .last()
                        .filter(|c| c.regression == Some(true))
                        .map_or(String::from("<td class=\"l\">-</td>"), |c| {
                            format!("<td class=\"l regressed\">{}</td>", escape(&c.summary))
                        });
                    let _ = write!(
                        body,
                        "<tr><td>{}</td><td class=\"l\">{}</td><td>{}</td><td>{}</td><td>{}</td>{alert}</tr>",
                        link(&format!("/p/{p}/bench?key={}", enc(&series.benchmark)), &series.benchmark),
                        escape(series.machine_label.as_deref().unwrap_or(MISSING)),
                        escape(&latest),
                        perfsleuth_report::chart::sparkline(
                            &format!("{} over {} runs", series.benchmark, values.len()),
                            &values
                        ),
                        values.len(),
                    );
                }
                body.push_str("</tbody></table>");
            }
        }
        body.push_str("</section>");
        body.push_str(&bisections_section(s, &p)?);
        match q.before {
            Some(id) => {
                let _ = write!(body, "<section><h2>Runs before run {id}</h2>");
            }
            None => body.push_str("<section><h2>Recent runs</h2>"),
        }
        body.push_str(&filter_form(&p, &filter));
        let comparable = perfsleuth_sides::default_baselines_exist(s, &runs);
        // The project's latest run heads the list only when nothing filters it.
        if q.before.is_none() && filter.is_empty() && comparable.first() == Some(&true) {
            let _ = write!(
                body,
                "<p>{}</p>",
                link(&format!("/p/{p}/compare"), "Compare the latest run with its baseline")
            );
        }
        body.push_str("<table><thead><tr><th>run</th><th>started</th><th>status</th><th>revision</th><th>benchmarks</th><th>samples</th><th>machine</th><th></th></tr></thead><tbody>");
        for (i, r) in runs.iter().enumerate() {
            // The first run has nothing before it to compare with.
            let compare = if comparable[i] {
                link(&format!("/p/{p}/compare?candidate={}", r.id), "compare")
            } else {
                String::new()
            };
            let _ = write!(
                body,
                "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td><td>{}</td></tr>",
                link(&format!("/p/{p}/runs/{}", r.id), &r.id.to_string()),
                escape(&r.started_at),
                escape(r.status.as_str()),
                escape(&short_commit(r)),
                escape(&perfsleuth_report::shortened(&r.benchmarks.join(", "), 60)),
                r.samples,
                link(
                    &format!("/p/{p}?machine={}", enc(&r.comparability[..r.comparability.len().min(12)])),
                    r.cpu_model.as_deref().unwrap_or(MISSING)
                ),
                compare,
            );
        }
        body.push_str("</tbody></table>");
        // Pages by id, a page at a time: one deep in the history costs
        // what the first does.
        let mut pages = Vec::new();
        if q.before.is_some() {
            let first = keep.strip_prefix('&').map(|k| format!("?{k}")).unwrap_or_default();
            pages.push(link(&format!("/p/{p}{first}"), "Newest runs"));
        }
        if let (true, Some(last)) = (runs.len() == RECENT_RUNS, runs.last()) {
            pages.push(link(&format!("/p/{p}?before={}{keep}", last.id), "Older runs"));
        }
        if !pages.is_empty() {
            let _ = write!(body, "<p>{}</p>", pages.join(" · "));
        }
        body.push_str("</section>");
        Ok(page(
            &format!("{p} — perfsleuth"),
            &format!("{} recent runs", runs.len()),
            &[nav(signed, &[(p.clone(), format!("/p/{p}"))]), body],
        ))
    })
    .await
}

/// A bisection's id as the pages show it.
fn short_id(id: &str) -> &str {
    id.get(..12).unwrap_or(id)
}

/// The project page's list of its newest bisections; empty when it has none.
fn bisections_section(s: &mut dyn Store, p: &str) -> Result<String, ApiError> {
    let all = s.bisections(RECENT_BISECTIONS)?;
    if all.is_empty() {
        return Ok(String::new());
    }
    let end = |c: &Option<String>| {
        c.as_deref().map_or(MISSING.to_string(), |c| {
            perfsleuth_model::short_commit(c).to_string()
        })
    };
    let mut out = String::from(
        "<section><h2>Bisections</h2><table><thead><tr><th>bisection</th><th>range</th><th>runs</th><th>started</th><th>last run</th></tr></thead><tbody>",
    );
    for b in &all {
        let _ = write!(
            out,
            "<tr><td class=\"l\">{}</td><td class=\"l\">{}..{}</td><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td></tr>",
            link(&format!("/p/{p}/bisect/{}", enc(&b.id)), short_id(&b.id)),
            escape(&end(&b.baseline)),
            escape(&end(&b.candidate)),
            b.runs,
            escape(&b.started_at),
            escape(&b.last_at),
        );
    }
    out.push_str("</tbody></table></section>");
    Ok(out)
}

/// A bisection's runs together (`perfsleuth bisect --push`): each step's
/// commits, their runs, and the comparison of each adjacent pair as the
/// step judged it.
async fn bisection_page(
    axum::extract::State(state): Shared,
    PagePath((project, id)): PagePath<(String, String)>,
    headers: HeaderMap,
) -> Result<Html<String>, PageError> {
    let signed = signed_in(&headers);
    let p = project.clone();
    read_page(&state, &project, &headers, None, move |s| {
        let runs = s.bisection_runs(&id)?;
        if runs.is_empty() {
            return Err(ApiError::not_found(
                format!("no runs of bisection {id:?} in this project"),
                "send them with `perfsleuth bisect --push` (or `perfsleuth push` the run ids of its steps); the project's page lists the bisections it has",
            ));
        }
        let mut body = String::from(
            "<section><table><thead><tr><th>step</th><th>kind</th><th>commit</th><th>run</th><th>started</th><th>samples</th><th>pair</th></tr></thead><tbody>",
        );
        for (i, r) in runs.iter().enumerate() {
            // Within a step, each commit is judged against the one before it.
            let pair = match i.checked_sub(1).map(|j| &runs[j]) {
                Some(prev) if prev.step == r.step => link(
                    &format!("/p/{p}/compare?baseline={}&candidate={}", prev.run.id, r.run.id),
                    &format!("compare with {}", short_commit(&prev.run)),
                ),
                _ => String::new(),
            };
            let _ = write!(
                body,
                "<tr><td>{}</td><td class=\"l\">{}</td><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{}</td><td>{}</td><td class=\"l\">{pair}</td></tr>",
                r.step,
                escape(&r.kind),
                escape(&short_commit(&r.run)),
                link(&format!("/p/{p}/runs/{}", r.run.id), &r.run.id.to_string()),
                escape(&r.run.started_at),
                r.run.samples,
            );
        }
        body.push_str("</tbody></table></section>");
        let steps = runs.last().map_or(0, |r| r.step);
        Ok(page(
            &format!("Bisection {} — {p}", short_id(&id)),
            &format!("{steps} steps · {} runs · {id}", runs.len()),
            &[
                nav(
                    signed,
                    &[
                        (p.clone(), format!("/p/{p}")),
                        (
                            format!("bisection {}", short_id(&id)),
                            format!("/p/{p}/bisect/{}", enc(&id)),
                        ),
                    ],
                ),
                body,
            ],
        ))
    })
    .await
}

#[derive(Debug, Deserialize)]
struct BenchQuery {
    key: String,
}

async fn bench_page(
    axum::extract::State(state): Shared,
    PagePath(project): PagePath<String>,
    PageQuery(q): PageQuery<BenchQuery>,
    headers: HeaderMap,
) -> Result<Html<String>, PageError> {
    let signed = signed_in(&headers);
    let p = project.clone();
    // Signed in, the page has a "Log out" button: kept apart.
    let key = format!("bench page {q:?} {signed}");
    read_page(&state, &project, &headers, Some(key), move |s| {
        let doc = project_history(s, Some(&q.key), None)?
            .ok_or_else(|| ApiError::not_found("no complete runs yet", "push some runs first"))?;
        let mut body = perfsleuth_history::render_html(&doc);
        body.push_str("<section><h2>Runs in this history</h2><table><thead><tr><th>run</th><th>value</th><th>machine</th><th></th></tr></thead><tbody>");
        for series in &doc.series {
            let mut previous: Option<i64> = None;
            for pt in &series.points {
                let Some(id) = pt.run_id else { continue };
                let cmp = previous.map_or(String::new(), |b| {
                    link(&format!("/p/{p}/compare?baseline={b}&candidate={id}"), "compare with the point before")
                });
                let _ = write!(
                    body,
                    "<tr><td>{}</td><td>{}</td><td class=\"l\">{}</td><td>{cmp}</td></tr>",
                    link(&format!("/p/{p}/runs/{id}"), &id.to_string()),
                    escape(&perfsleuth_history::format_value(series, pt.value)),
                    escape(series.machine_label.as_deref().unwrap_or(MISSING)),
                );
                previous = Some(id);
            }
        }
        body.push_str("</tbody></table></section>");
        Ok(page(
            &format!("{} — {p}", q.key),
            "wall time per run, change points and environment changes marked",
            &[
                nav(signed, &[
                    (p.clone(), format!("/p/{p}")),
                    (q.key.clone(), format!("/p/{p}/bench?key={}", enc(&q.key))),
                ]),
                body,
            ],
        ))
    })
    .await
}

/// A run of the project by its path segment: an id, `latest` or `latest~N`.
fn stored_run(s: &dyn Store, spec: &str) -> Result<Run, ApiError> {
    let missing = || {
        ApiError::not_found(
            format!("no run {spec:?} in this project"),
            "pick one from the project's page",
        )
    };
    let id = s.resolve_run(spec).map_err(|_| missing())?;
    s.load_run(id)?.ok_or_else(missing)
}

async fn run_page(
    axum::extract::State(state): Shared,
    PagePath((project, spec)): PagePath<(String, String)>,
    headers: HeaderMap,
) -> Result<Html<String>, PageError> {
    let signed = signed_in(&headers);
    let p = project.clone();
    read_page(&state, &project, &headers, None, move |s| {
        let run = stored_run(s, &spec)?;
        let id = run.id.unwrap_or_default();
        let before = s.run_before_of(id, RunKind::Benchmarks)?;
        let mut links = Vec::new();
        let listed: Vec<_> = s.run_listing(id)?.into_iter().collect();
        if perfsleuth_sides::default_baselines_exist(s, &listed) == [true] {
            links.push(link(
                &format!("/p/{p}/compare?candidate={id}"),
                "Compare with its baseline",
            ));
        }
        if let Some(b) = run.options["bisect"]["id"].as_str() {
            let step = run.options["bisect"]["step"].as_u64().unwrap_or(0);
            links.push(link(
                &format!("/p/{p}/bisect/{}", enc(b)),
                &format!("Step {step} of bisection {}", short_id(b)),
            ));
        }
        if let Some(b) = before {
            links.push(link(
                &format!("/p/{p}/env?a={b}&b={id}"),
                &format!("Environment diff with run {b}"),
            ));
        }
        let analysis = perfsleuth_summary::analyze(&run, None);
        let body = format!(
            "<p>{}</p>{}",
            links.join(" · "),
            html::run_section(&run, &analysis)
        );
        Ok(page(
            &format!("Run {id} — {p}"),
            &format!(
                "{} · {} · {}",
                run.started_at,
                run.mode.as_str(),
                run.uuid.as_deref().unwrap_or("")
            ),
            &[
                nav(
                    signed,
                    &[
                        (p.clone(), format!("/p/{p}")),
                        (format!("run {id}"), format!("/p/{p}/runs/{id}")),
                    ],
                ),
                body,
            ],
        ))
    })
    .await
}

#[derive(Debug, Deserialize)]
struct CompareQuery {
    baseline: Option<String>,
    candidate: Option<String>,
}

async fn compare_page(
    axum::extract::State(state): Shared,
    PagePath(project): PagePath<String>,
    PageQuery(q): PageQuery<CompareQuery>,
    headers: HeaderMap,
) -> Result<Html<String>, PageError> {
    let signed = signed_in(&headers);
    let p = project.clone();
    let options = state.compare.clone();
    // Signed in, the page has a "Log out" button: kept apart.
    let key = format!("compare page {q:?} {signed}");
    read_page(&state, &project, &headers, Some(key), move |s| {
        let given = crate::api::given;
        let candidate = crate::api::side(s, given(&q.candidate).as_deref().unwrap_or("latest"))?;
        let baseline = match given(&q.baseline) {
            Some(b) => Some(crate::api::side(s, &b)?),
            None => None,
        };
        let done = perfsleuth_sides::compare_stored(s, baseline, candidate, options.clone(), true)
            .map_err(crate::api::select_err)?;
        let ids =
            |side: &perfsleuth_compare::Side| perfsleuth_compare::newest(side).and_then(|r| r.id);
        let mut links = Vec::new();
        if let (Some(a), Some(b)) = (ids(&done.baseline), ids(&done.candidate)) {
            links.push(link(&format!("/p/{p}/runs/{a}"), &format!("run {a}")));
            links.push(link(&format!("/p/{p}/runs/{b}"), &format!("run {b}")));
            links.push(link(&format!("/p/{p}/env?a={a}&b={b}"), "environment diff"));
        }
        let body = format!(
            "<p>{}</p>{}",
            links.join(" · "),
            perfsleuth_compare::render_html(&done.comparison)
        );
        Ok(page(
            &format!(
                "{} → {} — {p}",
                done.comparison.baseline, done.comparison.candidate
            ),
            "each change with its 95% interval against the noise band",
            &[
                nav(
                    signed,
                    &[
                        (p.clone(), format!("/p/{p}")),
                        ("comparison".into(), String::new()),
                    ],
                ),
                body,
            ],
        ))
    })
    .await
}

#[derive(Deserialize)]
struct EnvQuery {
    a: String,
    b: String,
}

async fn env_page(
    axum::extract::State(state): Shared,
    PagePath(project): PagePath<String>,
    PageQuery(q): PageQuery<EnvQuery>,
    headers: HeaderMap,
) -> Result<Html<String>, PageError> {
    let signed = signed_in(&headers);
    let p = project.clone();
    read_page(&state, &project, &headers, None, move |s| {
        let a = stored_run(s, &q.a)?;
        let b = stored_run(s, &q.b)?;
        let la = format!("run {}", a.id.unwrap_or_default());
        let lb = format!("run {}", b.id.unwrap_or_default());
        let doc = stored::env_diff_doc((&la, &a.environment), (&lb, &b.environment), false);
        let mut body = format!(
            "<section><h2>{}</h2><p class=\"sub\">comparability {} → {}</p>",
            escape(&format!("Environment: {la} → {lb}")),
            escape(&doc.comparability.a),
            escape(&doc.comparability.b)
        );
        if doc.changes.is_empty() {
            body.push_str("<p>No identity or performance fact differs: the machines are the same kind, set up the same way.</p>");
        } else {
            let rows: Vec<Vec<String>> = doc
                .changes
                .iter()
                .map(|c| {
                    vec![
                        c.key.clone(),
                        c.class.as_str().to_string(),
                        c.a.clone().unwrap_or_else(|| "(absent)".into()),
                        c.b.clone().unwrap_or_else(|| "(absent)".into()),
                        c.why.clone(),
                    ]
                })
                .collect();
            body.push_str(&table(&["fact", "class", &la, &lb, "why it matters"], &rows).replace("<td>", "<td class=\"l\">"));
        }
        body.push_str("</section>");
        Ok(page(
            &format!("Environment diff — {p}"),
            if doc.identical { "identical where it matters" } else { "the machines differ" },
            &[nav(signed, &[(p.clone(), format!("/p/{p}")), ("environment diff".into(), String::new())]), body],
        ))
    })
    .await
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_come_from_the_header_or_the_cookie() {
        let mut h = HeaderMap::new();
        assert_eq!(credential(&h).unwrap(), None);
        h.insert(
            header::COOKIE,
            HeaderValue::from_static("a=b; perfsleuth_token=pst_1; c=d"),
        );
        assert_eq!(credential(&h).unwrap().as_deref(), Some("pst_1"));
        h.insert(
            header::AUTHORIZATION,
            HeaderValue::from_static("Bearer pst_2"),
        );
        assert_eq!(credential(&h).unwrap().as_deref(), Some("pst_2"));
    }

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(enc("sort -n <x>&y"), "sort%20-n%20%3Cx%3E%26y");
        assert_eq!(enc("a.b_c-d~"), "a.b_c-d~");
    }
}
