//! Every read and write of the store, written once over [`Db`] for both
//! backends; [`crate::Store`] delegates here (`impl_store!`).
//!
//! Every query on runs is scoped to the connection's project, so a team
//! server's projects never see each other's runs and a local store (project
//! "") never sees a server's.

use crate::error::StoreError;
use crate::hash::{STABLE_CLASSES, comparability_hash, sha256_hex};
use crate::sql::{Db, Dialect, Row, Val, transaction, vals};
use crate::{HistoryEntry, Ingested, MetricSummary, ProjectInfo, RunKind, RunListing, TokenRecord};
use perfsleuth_model::{
    Benchmark, Environment, GitInfo, ImpactClass, LockReport, Metric, Mode, ProbeResult, Profile,
    Run, RunStatus, Sample, StackProfile,
};
use std::collections::BTreeMap;
use std::path::Path;

const INSERT_PROBE_RESULT: &str = "INSERT INTO probe_results (run_id, position, probe, metric, \
    value, unit, lower_is_better, cycles, spread, stable, headline, note) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)";

const SAMPLE_COLUMNS: &str = "benchmark_id, iteration, wall_ns, user_ns, sys_ns, \
    peak_rss_bytes, minor_faults, major_faults, voluntary_cs, involuntary_cs, exit_code, signal, counters, \
    round, wall_exact_ns";

const INSERT_SAMPLE: &str = "INSERT INTO samples (benchmark_id, iteration, wall_ns, user_ns, sys_ns, \
    peak_rss_bytes, minor_faults, major_faults, voluntary_cs, involuntary_cs, exit_code, signal, counters, \
    round, wall_exact_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)";

/// Samples per multi-row INSERT when a whole run is ingested: 15 values a
/// row stays far below both databases' limits on bound parameters.
const SAMPLES_PER_INSERT: usize = 256;

/// Stores u64 counters in the databases' i64; the bit pattern round-trips exactly.
fn to_i64(v: u64) -> i64 {
    v as i64
}

/// Inverse of [`to_i64`].
fn to_u64(v: i64) -> u64 {
    v as u64
}

/// Attaches the store's place to JSON errors.
fn json<T>(place: &Path, r: Result<T, serde_json::Error>) -> Result<T, StoreError> {
    r.map_err(|source| StoreError::Json {
        path: place.to_path_buf(),
        source,
    })
}

/// Column `i` of `row`, JSON or NULL, parsed where it lies.
fn opt_json<T: serde::de::DeserializeOwned>(
    place: &Path,
    row: &Row,
    i: usize,
) -> Result<Option<T>, StoreError> {
    row.opt_str(i)?
        .map(|text| json(place, serde_json::from_str(text)))
        .transpose()
}

impl RunKind {
    /// The SQL condition on `runs` (aliased `r`) selecting this kind.
    fn condition(self, dialect: Dialect) -> String {
        match self {
            RunKind::Any => "1 = 1".into(),
            RunKind::Benchmarks => "r.mode <> 'probe'".into(),
            RunKind::Probes => "r.mode = 'probe'".into(),
            RunKind::Like { mode, scale } => format!(
                "r.mode = '{}' AND coalesce({}, '') {} '{}'",
                mode.as_str(),
                dialect.json_text("r.options", "kind"),
                if scale { "=" } else { "<>" },
                perfsleuth_model::SCALE_KIND,
            ),
        }
    }
}

/// A new random (version 4) UUID for a run: callers that keep the run in
/// memory (its exports) set it before [`crate::Store::begin_run`], so the
/// export and the store agree.
pub fn new_uuid() -> String {
    uuid::Uuid::new_v4().to_string()
}

/// Inserts (or finds) the run's environment and its run row with `status`;
/// returns the run id.
fn insert_run<D: Db + ?Sized>(
    db: &D,
    run: &Run,
    uuid: &str,
    status: RunStatus,
    ended_at: Option<&str>,
) -> Result<i64, StoreError> {
    let place = db.place();
    let stable = run.environment.only(&STABLE_CLASSES);
    let context = run.environment.only(&[ImpactClass::Context]);
    // Environment serialises as a BTreeMap, so this JSON is canonical.
    let facts = json(place, serde_json::to_string(&stable))?;
    let context = json(place, serde_json::to_string(&context))?;
    let options = json(place, serde_json::to_string(&run.options))?;
    let hash = sha256_hex(facts.as_bytes());
    db.execute(
        "INSERT INTO environments (hash, facts) VALUES (?1, ?2) ON CONFLICT (hash) DO NOTHING",
        &vals![hash.as_str(), facts],
    )?;
    let env_id = db
        .query(
            "SELECT id FROM environments WHERE hash = ?1",
            &vals![hash.as_str()],
        )?
        .first()
        .map(|r| r.int(0))
        .transpose()?
        .ok_or_else(|| StoreError::NotFound(format!("environment {hash}")))?;
    let git = run.git.as_ref();
    let rows = db.query(
        "INSERT INTO runs (started_at, ended_at, status, tool_version, git_commit, git_branch, \
         git_dirty, mode, options, environment_id, context, uuid, project) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) RETURNING id",
        &vals![
            run.started_at.as_str(),
            ended_at,
            status.as_str(),
            run.tool_version.as_str(),
            git.map(|g| g.commit.as_str()),
            git.and_then(|g| g.branch.as_deref()),
            git.map(|g| g.dirty),
            run.mode.as_str(),
            options,
            env_id,
            context,
            uuid,
            db.project(),
        ],
    )?;
    first_int(&rows)
}

fn first_int(rows: &[Row]) -> Result<i64, StoreError> {
    rows.first()
        .ok_or_else(|| StoreError::NotFound("inserted row".into()))?
        .int(0)
}

/// Inserts a benchmark row at `position` and returns its id.
fn insert_benchmark<D: Db + ?Sized>(
    db: &D,
    run_id: i64,
    position: i64,
    bench: &Benchmark,
) -> Result<i64, StoreError> {
    let place = db.place();
    let argv = json(place, serde_json::to_string(&bench.argv))?;
    let parameters = json(place, serde_json::to_string(&bench.parameters))?;
    let facts = if bench.facts.facts.is_empty() {
        None
    } else {
        Some(json(place, serde_json::to_string(&bench.facts))?)
    };
    let profile = json(
        place,
        bench
            .profile
            .as_ref()
            .map(serde_json::to_string)
            .transpose(),
    )?;
    let summaries = if bench.summaries.is_empty() {
        None
    } else {
        Some(json(place, serde_json::to_string(&bench.summaries))?)
    };
    let locks = json(
        place,
        bench.locks.as_ref().map(serde_json::to_string).transpose(),
    )?;
    let stacks = json(place, bench.stacks.as_ref().map(stacks_json).transpose())?;
    let allocs = json(
        place,
        bench.allocs.as_ref().map(serde_json::to_string).transpose(),
    )?;
    let rows = db.query(
        "INSERT INTO benchmarks (run_id, position, name, command, argv, parameters, facts, profile, \
         summaries, locks, stacks, allocs) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12) \
         RETURNING id",
        &vals![
            run_id,
            position,
            bench.name.as_str(),
            bench.command.as_str(),
            argv,
            parameters,
            facts,
            profile,
            summaries,
            locks,
            stacks,
            allocs
        ],
    )?;
    first_int(&rows)
}

/// The values of one sample row, in [`SAMPLE_COLUMNS`] order.
fn sample_values(place: &Path, benchmark_id: i64, s: &Sample) -> Result<Vec<Val>, StoreError> {
    let counters = if s.counters.is_empty() {
        None
    } else {
        Some(json(place, serde_json::to_string(&s.counters))?)
    };
    Ok(Vec::from(vals![
        benchmark_id,
        s.iteration,
        to_i64(s.wall_ns),
        to_i64(s.user_ns),
        to_i64(s.sys_ns),
        to_i64(s.peak_rss_bytes),
        to_i64(s.minor_faults),
        to_i64(s.major_faults),
        to_i64(s.voluntary_cs),
        to_i64(s.involuntary_cs),
        s.exit_code,
        s.signal,
        counters,
        s.round,
        s.wall_exact_ns,
    ]))
}

/// Inserts a probe result row.
fn insert_probe<D: Db + ?Sized>(
    db: &D,
    run_id: i64,
    position: i64,
    p: &ProbeResult,
) -> Result<(), StoreError> {
    db.execute(
        INSERT_PROBE_RESULT,
        &vals![
            run_id,
            position,
            p.probe.as_str(),
            p.metric.as_str(),
            p.value,
            p.unit.as_str(),
            p.lower_is_better,
            p.cycles,
            p.spread,
            p.stable,
            p.headline,
            p.note.as_deref(),
        ],
    )?;
    Ok(())
}

/// [`crate::Store::begin_run`].
pub(crate) fn begin_run<D: Db + ?Sized>(db: &D, run: &Run) -> Result<i64, StoreError> {
    let uuid = run.uuid.clone().unwrap_or_else(new_uuid);
    transaction(db, true, || {
        insert_run(db, run, &uuid, RunStatus::Running, None)
    })
}

/// [`crate::Store::add_benchmark`].
pub(crate) fn add_benchmark<D: Db + ?Sized>(
    db: &D,
    run_id: i64,
    bench: &Benchmark,
) -> Result<i64, StoreError> {
    transaction(db, true, || {
        let position = next_position(db, run_id, "benchmarks")?;
        insert_benchmark(db, run_id, position, bench)
    })
}

/// [`crate::Store::add_sample`]: one autocommit insert, a cached statement.
pub(crate) fn add_sample<D: Db + ?Sized>(
    db: &D,
    benchmark_id: i64,
    sample: &Sample,
) -> Result<(), StoreError> {
    db.execute(
        INSERT_SAMPLE,
        &sample_values(db.place(), benchmark_id, sample)?,
    )?;
    Ok(())
}

/// [`crate::Store::update_context`].
pub(crate) fn update_context<D: Db + ?Sized>(
    db: &D,
    run_id: i64,
    env: &Environment,
) -> Result<(), StoreError> {
    let context = json(
        db.place(),
        serde_json::to_string(&env.only(&[ImpactClass::Context])),
    )?;
    let changed = db.execute(
        "UPDATE runs SET context = ?1 WHERE id = ?2 AND project = ?3",
        &vals![context, run_id, db.project()],
    )?;
    if changed == 0 {
        return Err(StoreError::NotFound(run_id.to_string()));
    }
    Ok(())
}

/// [`crate::Store::set_locks`].
pub(crate) fn set_locks<D: Db + ?Sized>(
    db: &D,
    benchmark_id: i64,
    locks: &LockReport,
) -> Result<(), StoreError> {
    set_benchmark_json(db, benchmark_id, "locks", serde_json::to_string(locks))
}

/// A profile's stacks as JSON, written into a buffer sized for them first:
/// an imported profile's text may be hundreds of megabytes, and a growing
/// one would be copied (and held twice) at each doubling.
fn stacks_json(stacks: &StackProfile) -> serde_json::Result<String> {
    let size = 256
        + stacks
            .frames
            .iter()
            .map(|f| f.function.len() + f.module.len() + 32)
            .sum::<usize>()
        + stacks
            .stacks
            .iter()
            .map(|s| 8 * (s.frames.len() + s.counts.len()) + 32)
            .sum::<usize>();
    let mut out = Vec::with_capacity(size);
    serde_json::to_writer(&mut out, stacks)?;
    String::from_utf8(out).map_err(<serde_json::Error as serde::ser::Error>::custom)
}

/// [`crate::Store::set_stacks`].
pub(crate) fn set_stacks<D: Db + ?Sized>(
    db: &D,
    benchmark_id: i64,
    stacks: &StackProfile,
) -> Result<(), StoreError> {
    set_benchmark_json(db, benchmark_id, "stacks", stacks_json(stacks))
}

/// [`crate::Store::set_allocs`]: the profile, and each profiled run's
/// counts as counters of its sample (`counters`: (iteration, the sample's
/// counters with them)), in one transaction.
pub(crate) fn set_allocs<D: Db + ?Sized>(
    db: &D,
    benchmark_id: i64,
    allocs: &perfsleuth_model::AllocProfile,
    counters: &[(u32, &BTreeMap<String, f64>)],
) -> Result<(), StoreError> {
    transaction(db, true, || {
        set_benchmark_json(db, benchmark_id, "allocs", serde_json::to_string(allocs))?;
        for (iteration, c) in counters {
            let text = json(db.place(), serde_json::to_string(c))?;
            db.execute(
                "UPDATE samples SET counters = ?1 WHERE benchmark_id = ?2 AND iteration = ?3",
                &vals![text, benchmark_id, i64::from(*iteration)],
            )?;
        }
        Ok(())
    })
}

/// [`crate::Store::set_profile`].
pub(crate) fn set_profile<D: Db + ?Sized>(
    db: &D,
    benchmark_id: i64,
    profile: &Profile,
) -> Result<(), StoreError> {
    set_benchmark_json(db, benchmark_id, "profile", serde_json::to_string(profile))
}

/// [`crate::Store::attach_stacks`].
pub(crate) fn attach_stacks<D: Db + ?Sized>(
    db: &D,
    run_id: i64,
    position: usize,
    stacks: &StackProfile,
) -> Result<bool, StoreError> {
    let text = json(db.place(), stacks_json(stacks))?;
    let changed = db.execute(
        "UPDATE benchmarks SET stacks = ?1 WHERE run_id = ?2 AND position = ?3 \
         AND stacks IS NULL AND run_id IN (SELECT id FROM runs WHERE project = ?4)",
        &vals![text, run_id, position as i64, db.project()],
    )?;
    Ok(changed > 0)
}

/// Sets one JSON column of a benchmark of this handle's project, once its
/// runs are done; `column` is one of ours, never user input.
fn set_benchmark_json<D: Db + ?Sized>(
    db: &D,
    benchmark_id: i64,
    column: &'static str,
    text: serde_json::Result<String>,
) -> Result<(), StoreError> {
    let text = json(db.place(), text)?;
    let changed = db.execute(
        &format!(
            "UPDATE benchmarks SET {column} = ?1 WHERE id = ?2 AND run_id IN \
             (SELECT id FROM runs WHERE project = ?3)"
        ),
        &vals![text, benchmark_id, db.project()],
    )?;
    if changed == 0 {
        return Err(StoreError::NotFound(format!("benchmark {benchmark_id}")));
    }
    Ok(())
}

/// [`crate::Store::add_probe_results`].
pub(crate) fn add_probe_results<D: Db + ?Sized>(
    db: &D,
    run_id: i64,
    results: &[ProbeResult],
) -> Result<(), StoreError> {
    transaction(db, true, || {
        let first = next_position(db, run_id, "probe_results")?;
        for (i, p) in results.iter().enumerate() {
            insert_probe(db, run_id, first + i as i64, p)?;
        }
        Ok(())
    })
}

/// [`crate::Store::finish_run`].
pub(crate) fn finish_run<D: Db + ?Sized>(
    db: &D,
    run_id: i64,
    status: RunStatus,
    ended_at: &str,
) -> Result<(), StoreError> {
    let changed = db.execute(
        "UPDATE runs SET status = ?1, ended_at = ?2 WHERE id = ?3 AND project = ?4",
        &vals![status.as_str(), ended_at, run_id, db.project()],
    )?;
    if changed == 0 {
        return Err(StoreError::NotFound(run_id.to_string()));
    }
    Ok(())
}

/// [`crate::Store::ingest_run`]: the whole run in one transaction, or nothing.
pub(crate) fn ingest_run<D: Db + ?Sized>(db: &D, run: &Run) -> Result<Ingested, StoreError> {
    let uuid = run.uuid.clone().unwrap_or_else(new_uuid);
    match ingest_once(db, run, &uuid) {
        // Another connection stored the same run between our look-up and
        // our insert (PostgreSQL writers do not serialise): it is there now.
        Err(StoreError::Conflict(what)) => match run_by_uuid(db, &uuid)? {
            Some(id) => Ok(Ingested {
                id,
                uuid,
                created: false,
            }),
            None => Err(StoreError::Conflict(what)),
        },
        other => other,
    }
}

fn ingest_once<D: Db + ?Sized>(db: &D, run: &Run, uuid: &str) -> Result<Ingested, StoreError> {
    let place = db.place();
    transaction(db, true, || {
        if let Some(id) = run_by_uuid(db, uuid)? {
            return Ok(Ingested {
                id,
                uuid: uuid.to_string(),
                created: false,
            });
        }
        // A run still `running` where it came from is stored as it was sent.
        let id = insert_run(db, run, uuid, run.status, run.ended_at.as_deref())?;
        for (position, bench) in run.benchmarks.iter().enumerate() {
            let bench_id = insert_benchmark(db, id, position as i64, bench)?;
            for chunk in bench.samples.chunks(SAMPLES_PER_INSERT) {
                let mut sql = format!("INSERT INTO samples ({SAMPLE_COLUMNS}) VALUES ");
                let mut params = Vec::with_capacity(chunk.len() * 15);
                for (i, s) in chunk.iter().enumerate() {
                    if i > 0 {
                        sql.push_str(", ");
                    }
                    sql.push('(');
                    for c in 0..15 {
                        if c > 0 {
                            sql.push_str(", ");
                        }
                        sql.push_str(&format!("?{}", i * 15 + c + 1));
                    }
                    sql.push(')');
                    params.extend(sample_values(place, bench_id, s)?);
                }
                db.execute(&sql, &params)?;
            }
        }
        for (position, p) in run.probes.iter().enumerate() {
            insert_probe(db, id, position as i64, p)?;
        }
        Ok(Ingested {
            id,
            uuid: uuid.to_string(),
            created: true,
        })
    })
}

/// [`crate::Store::run_by_uuid`].
pub(crate) fn run_by_uuid<D: Db + ?Sized>(db: &D, uuid: &str) -> Result<Option<i64>, StoreError> {
    db.query(
        "SELECT id FROM runs WHERE uuid = ?1 AND project = ?2",
        &vals![uuid, db.project()],
    )?
    .first()
    .map(|r| r.int(0))
    .transpose()
}

/// [`crate::Store::load_run`] and, without the sampled profiles,
/// [`crate::Store::load_run_measurements`].
pub(crate) fn load_run<D: Db + ?Sized>(
    db: &D,
    id: i64,
    profiles: bool,
) -> Result<Option<Run>, StoreError> {
    let place = db.place();
    // One read transaction, so a concurrent writer cannot show us half a state.
    transaction(db, false, || {
        let rows = db.query(
            "SELECT r.started_at, r.ended_at, r.status, r.tool_version, r.git_commit, \
             r.git_branch, r.git_dirty, r.mode, r.options, e.facts, r.context, r.uuid \
             FROM runs r JOIN environments e ON e.id = r.environment_id \
             WHERE r.id = ?1 AND r.project = ?2",
            &vals![id, db.project()],
        )?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let mut benchmarks = Vec::new();
        // A sampled profile may be hundreds of megabytes of JSON: not read
        // where it is not used.
        let sampled = if profiles {
            "stacks, allocs"
        } else {
            "NULL, NULL"
        };
        let bench_rows = db.query(
            &format!(
                "SELECT id, name, command, argv, parameters, facts, profile, summaries, locks, \
                 {sampled} FROM benchmarks WHERE run_id = ?1 ORDER BY position"
            ),
            &vals![id],
        )?;
        // Each row dropped once read: a profile's text is freed before the
        // next one is parsed.
        for b in bench_rows {
            benchmarks.push(Benchmark {
                name: b.text(1)?,
                command: b.text(2)?,
                argv: json(place, serde_json::from_str(&b.text(3)?))?,
                parameters: json(place, serde_json::from_str(&b.text(4)?))?,
                facts: opt_json(place, &b, 5)?.unwrap_or_default(),
                samples: load_samples(db, b.int(0)?)?,
                profile: opt_json(place, &b, 6)?,
                summaries: opt_json(place, &b, 7)?.unwrap_or_default(),
                locks: opt_json(place, &b, 8)?,
                stacks: opt_json(place, &b, 9)?,
                allocs: opt_json(place, &b, 10)?,
            });
        }
        let probes = load_probe_results(db, id)?;
        Ok(Some(Run {
            id: Some(id),
            uuid: row.opt_text(11)?,
            status: parse_status(place, id, &row.text(2)?)?,
            mode: parse_mode(place, id, &row.text(7)?)?,
            git: git_info(row.opt_text(4)?, row.opt_text(5)?, row.opt_bool(6)?),
            options: json(place, serde_json::from_str(&row.text(8)?))?,
            environment: merged_environment(place, &row.text(9)?, &row.text(10)?)?,
            started_at: row.text(0)?,
            ended_at: row.opt_text(1)?,
            tool_version: row.text(3)?,
            benchmarks,
            probes,
        }))
    })
}

/// [`crate::Store::list_runs`].
pub(crate) fn list_runs<D: Db + ?Sized>(
    db: &D,
    limit: Option<usize>,
) -> Result<Vec<RunListing>, StoreError> {
    // A number we format ourselves: both databases take a literal LIMIT,
    // while "no limit" is spelled differently as a parameter.
    let limit = match limit {
        Some(n) => format!("LIMIT {}", i64::try_from(n).unwrap_or(i64::MAX)),
        None => String::new(),
    };
    listings(db, None, &limit)
}

/// [`crate::Store::run_listing`].
pub(crate) fn run_listing<D: Db + ?Sized>(
    db: &D,
    id: i64,
) -> Result<Option<RunListing>, StoreError> {
    Ok(listings(db, Some(id), "")?.pop())
}

/// The listings of the project's runs (of run `only`), newest first.
fn listings<D: Db + ?Sized>(
    db: &D,
    only: Option<i64>,
    limit: &str,
) -> Result<Vec<RunListing>, StoreError> {
    let place = db.place();
    // An id we hold as an integer: formatted, it cannot be anything else.
    let only = only.map_or(String::new(), |id| format!("AND r.id = {id}"));
    transaction(db, false, || {
        let rows = db.query(
            &format!(
                "SELECT r.id, r.started_at, r.ended_at, r.status, r.mode, r.git_commit, \
                 r.git_branch, r.git_dirty, e.facts, r.context, r.uuid, \
                 (SELECT count(*) FROM samples s JOIN benchmarks b ON b.id = s.benchmark_id \
                  WHERE b.run_id = r.id) \
                 FROM runs r JOIN environments e ON e.id = r.environment_id \
                 WHERE r.project = ?1 {only} ORDER BY r.id DESC {limit}"
            ),
            &vals![db.project()],
        )?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let id = row.int(0)?;
            let env = merged_environment(place, &row.text(8)?, &row.text(9)?)?;
            let benchmarks = db
                .query(
                    "SELECT name FROM benchmarks WHERE run_id = ?1 ORDER BY position",
                    &vals![id],
                )?
                .iter()
                .map(|r| r.text(0))
                .collect::<Result<Vec<_>, _>>()?;
            let probes = db
                .query(
                    "SELECT probe FROM probe_results WHERE run_id = ?1 \
                     GROUP BY probe ORDER BY min(position)",
                    &vals![id],
                )?
                .iter()
                .map(|r| r.text(0))
                .collect::<Result<Vec<_>, _>>()?;
            out.push(RunListing {
                id,
                uuid: row.opt_text(10)?,
                status: parse_status(place, id, &row.text(3)?)?,
                mode: parse_mode(place, id, &row.text(4)?)?,
                git: git_info(row.opt_text(5)?, row.opt_text(6)?, row.opt_bool(7)?),
                started_at: row.text(1)?,
                ended_at: row.opt_text(2)?,
                benchmarks,
                samples: to_u64(row.int(11)?),
                cpu_model: env.get("cpu.model").map(str::to_string),
                host: env.get("host.name").map(str::to_string),
                comparability: comparability_hash(&env),
                probes,
            });
        }
        Ok(out)
    })
}

/// [`crate::Store::resolve_run_of`].
pub(crate) fn resolve_run_of<D: Db + ?Sized>(
    db: &D,
    spec: &str,
    kind: RunKind,
) -> Result<i64, StoreError> {
    let not_found = || StoreError::NotFound(spec.to_string());
    let spec_t = spec.trim();
    let back = if spec_t == "latest" {
        Some(0)
    } else if let Some(n) = spec_t.strip_prefix("latest~") {
        // Like git's HEAD~: a bare `~` means one back.
        Some(if n.is_empty() {
            1
        } else {
            n.parse::<i64>().map_err(|_| not_found())?
        })
    } else {
        None
    };
    let rows = match back {
        Some(n) if n < 0 => return Err(not_found()),
        // By when each run was measured, not when it arrived: a server
        // stores pushed runs in the order they come (`push latest~1` after
        // `run --push`), and `latest` is still the newest measured.
        Some(n) => db.query(
            &format!(
                "SELECT r.id FROM runs r WHERE r.project = ?1 AND {} \
                 ORDER BY r.started_at DESC, r.id DESC LIMIT 1 OFFSET {n}",
                kind.condition(db.dialect())
            ),
            &vals![db.project()],
        )?,
        None => {
            let id: i64 = spec_t.parse().map_err(|_| not_found())?;
            db.query(
                "SELECT id FROM runs WHERE id = ?1 AND project = ?2",
                &vals![id, db.project()],
            )?
        }
    };
    rows.first()
        .map(|r| r.int(0))
        .transpose()?
        .ok_or_else(not_found)
}

/// [`crate::Store::earlier_runs`]: one query, however many runs there are.
pub(crate) fn earlier_runs<D: Db + ?Sized>(
    db: &D,
    before: Option<i64>,
    kind: RunKind,
) -> Result<Vec<crate::EarlierRun>, StoreError> {
    // Measured before run `id` (ties: stored before it), newest first.
    let below = match before {
        Some(id) => format!(
            "AND (r.started_at < (SELECT started_at FROM runs WHERE id = {id}) \
             OR (r.started_at = (SELECT started_at FROM runs WHERE id = {id}) AND r.id < {id}))"
        ),
        None => String::new(),
    };
    let rows = db.query(
        &format!(
            "SELECT r.id, r.git_branch, b.name, r.started_at FROM runs r LEFT JOIN benchmarks b ON b.run_id = r.id \
             WHERE r.project = ?1 AND {} {below} ORDER BY r.started_at DESC, r.id DESC, b.position",
            kind.condition(db.dialect())
        ),
        &vals![db.project()],
    )?;
    let mut out: Vec<crate::EarlierRun> = Vec::new();
    for row in rows {
        let id = row.int(0)?;
        if out.last().is_none_or(|r| r.id != id) {
            out.push(crate::EarlierRun {
                id,
                branch: row.opt_text(1)?,
                benchmarks: Vec::new(),
                started_at: row.opt_text(3)?.unwrap_or_default(),
            });
        }
        if let (Some(last), Some(name)) = (out.last_mut(), row.opt_text(2)?) {
            last.benchmarks.push(name);
        }
    }
    Ok(out)
}

fn ids<D: Db + ?Sized>(db: &D, sql: &str, params: &[Val]) -> Result<Vec<i64>, StoreError> {
    db.query(sql, params)?.iter().map(|r| r.int(0)).collect()
}

/// [`crate::Store::runs_at_commit`].
pub(crate) fn runs_at_commit<D: Db + ?Sized>(db: &D, commit: &str) -> Result<Vec<i64>, StoreError> {
    ids(
        db,
        "SELECT id FROM runs WHERE git_commit = ?1 AND status = 'complete' \
         AND mode <> 'probe' AND project = ?2 ORDER BY id DESC",
        &vals![commit, db.project()],
    )
}

/// [`crate::Store::runs_on_branch`].
pub(crate) fn runs_on_branch<D: Db + ?Sized>(db: &D, branch: &str) -> Result<Vec<i64>, StoreError> {
    ids(
        db,
        "SELECT id FROM runs WHERE git_branch = ?1 AND status = 'complete' \
         AND mode <> 'probe' AND project = ?2 ORDER BY id DESC",
        &vals![branch, db.project()],
    )
}

/// [`crate::Store::run_before_of`].
pub(crate) fn run_before_of<D: Db + ?Sized>(
    db: &D,
    id: i64,
    kind: RunKind,
) -> Result<Option<i64>, StoreError> {
    Ok(ids(
        db,
        &format!(
            "SELECT r.id FROM runs r WHERE r.project = ?2 AND {} \
             AND (r.started_at < (SELECT started_at FROM runs WHERE id = ?1) \
             OR (r.started_at = (SELECT started_at FROM runs WHERE id = ?1) AND r.id < ?1)) \
             ORDER BY r.started_at DESC, r.id DESC LIMIT 1",
            kind.condition(db.dialect())
        ),
        &vals![id, db.project()],
    )?
    .first()
    .copied())
}

/// [`crate::Store::same_binary_runs`].
pub(crate) fn same_binary_runs<D: Db + ?Sized>(
    db: &D,
    hash: &str,
    argv: &[String],
    mode: Mode,
    env: &Environment,
    limit: usize,
) -> Result<Vec<Run>, StoreError> {
    let place = db.place();
    let wanted = comparability_hash(env);
    let argv_json = json(place, serde_json::to_string(argv))?;
    // The hash is matched as text first (an index-free scan of one
    // column), then checked exactly on the decoded facts.
    let rows = db.query(
        "SELECT b.run_id, b.facts, e.facts FROM benchmarks b \
         JOIN runs r ON r.id = b.run_id JOIN environments e ON e.id = r.environment_id \
         WHERE r.status = 'complete' AND r.mode = ?1 AND b.argv = ?2 \
         AND b.facts LIKE ?3 AND r.project = ?4 ORDER BY b.run_id DESC, b.position",
        &vals![mode.as_str(), argv_json, format!("%{hash}%"), db.project()],
    )?;
    let mut out: Vec<Run> = Vec::new();
    for row in rows {
        let run_id = row.int(0)?;
        if out.len() >= limit || out.iter().any(|r| r.id == Some(run_id)) {
            continue;
        }
        let facts: Environment = match row.opt_text(1)? {
            Some(f) => json(place, serde_json::from_str(&f))?,
            None => continue,
        };
        if facts.get("binary.sha256") != Some(hash) {
            continue;
        }
        let machine: Environment = json(place, serde_json::from_str(&row.text(2)?))?;
        if comparability_hash(&machine) != wanted {
            continue;
        }
        // For their samples (the noise they show): their profiles are not read.
        let Some(mut run) = load_run(db, run_id, false)? else {
            continue;
        };
        // Matched again on the loaded run rather than by position, so
        // nothing depends on how positions are numbered.
        let Some(bench) = run
            .benchmarks
            .iter()
            .find(|b| b.argv == argv && b.facts.get("binary.sha256") == Some(hash))
            .cloned()
        else {
            continue;
        };
        run.benchmarks = vec![bench];
        out.push(run);
    }
    Ok(out)
}

/// [`crate::Store::history_entries`].
pub(crate) fn history_entries<D: Db + ?Sized>(db: &D) -> Result<Vec<HistoryEntry>, StoreError> {
    let place = db.place();
    let rows = db.query(
        &format!(
            "SELECT b.id, b.run_id, r.started_at, r.git_commit, r.git_branch, r.git_dirty, \
             r.mode, r.environment_id, b.name, b.parameters, {}, b.argv FROM runs r \
             JOIN benchmarks b ON b.run_id = r.id \
             WHERE r.status = 'complete' AND r.mode <> 'probe' \
             AND coalesce({}, '') <> '{}' AND r.project = ?1 \
             ORDER BY r.id, b.position",
            db.dialect().json_fact("b.facts", "binary.sha256"),
            db.dialect().json_text("r.options", "kind"),
            perfsleuth_model::SCALE_KIND,
        ),
        &vals![db.project()],
    )?;
    let mut out = Vec::with_capacity(rows.len());
    for row in rows {
        let run_id = row.int(1)?;
        out.push(HistoryEntry {
            benchmark_id: row.int(0)?,
            run_id,
            started_at: row.text(2)?,
            git: git_info(row.opt_text(3)?, row.opt_text(4)?, row.opt_bool(5)?),
            mode: parse_mode(place, run_id, &row.text(6)?)?,
            environment_id: row.int(7)?,
            name: row.text(8)?,
            parameters: json(place, serde_json::from_str(&row.text(9)?))?,
            binary_sha256: row
                .opt_text(10)?
                .filter(|h| !h.is_empty() && h != perfsleuth_model::UNKNOWN),
            argv: row.text(11)?,
        });
    }
    Ok(out)
}

/// [`crate::Store::metric_values`].
pub(crate) fn metric_values<D: Db + ?Sized>(
    db: &D,
    benchmark_ids: &[i64],
    metric: Metric,
) -> Result<Vec<Vec<f64>>, StoreError> {
    let place = db.place();
    let column = match metric {
        Metric::Wall => "wall_exact_ns, wall_ns",
        Metric::Cpu => "user_ns + sys_ns",
        Metric::User => "user_ns",
        Metric::Sys => "sys_ns",
        Metric::PeakRss => "peak_rss_bytes",
        Metric::MinorFaults => "minor_faults",
        Metric::MajorFaults => "major_faults",
        Metric::VoluntaryCs => "voluntary_cs",
        Metric::InvoluntaryCs => "involuntary_cs",
        Metric::Counter(_) => "counters",
    };
    // Only the project's benchmarks: ids are never taken on trust.
    let sql = format!(
        "SELECT {column} FROM samples WHERE benchmark_id = ?1 AND EXISTS (SELECT 1 FROM \
         benchmarks b JOIN runs r ON r.id = b.run_id WHERE b.id = ?1 AND r.project = ?2) \
         ORDER BY iteration"
    );
    transaction(db, false, || {
        let mut out = Vec::with_capacity(benchmark_ids.len());
        for &id in benchmark_ids {
            // The samples table is clustered by (benchmark_id, iteration), so
            // each benchmark's values are one range read of its primary key.
            let rows = db.query(&sql, &vals![id, db.project()])?;
            let mut values = Vec::with_capacity(rows.len());
            for row in rows {
                let v = match metric {
                    Metric::Counter(c) => match row.opt_text(0)? {
                        Some(text) => {
                            let raw: BTreeMap<String, Option<f64>> =
                                json(place, serde_json::from_str(&text))?;
                            raw.get(c.key).copied().flatten().unwrap_or(f64::NAN)
                        }
                        None => f64::NAN,
                    },
                    // The fractional wall time where an import kept one.
                    Metric::Wall => match row.opt_real(0)? {
                        Some(exact) => exact,
                        None => to_u64(row.int(1)?) as f64,
                    },
                    _ => to_u64(row.int(0)?) as f64,
                };
                values.push(v);
            }
            out.push(values);
        }
        Ok(out)
    })
}

/// [`crate::Store::metric_summaries`].
pub(crate) fn metric_summaries<D: Db + ?Sized>(
    db: &D,
    benchmark_ids: &[i64],
    metric: Metric,
) -> Result<Vec<Option<MetricSummary>>, StoreError> {
    let summary = |r: &Row| -> Result<(i64, MetricSummary), StoreError> {
        Ok((
            r.int(0)?,
            MetricSummary {
                n: usize::try_from(r.int(1)?).unwrap_or(0),
                median: r.real_or_nan(2)?,
                lo: r.real_or_nan(3)?,
                hi: r.real_or_nan(4)?,
            },
        ))
    };
    // Only the project's benchmarks: ids are never taken on trust.
    const SCOPED: &str = "SELECT m.benchmark_id, m.n, m.median, m.lo, m.hi FROM metric_summaries m \
         JOIN benchmarks b ON b.id = m.benchmark_id JOIN runs r ON r.id = b.run_id \
         WHERE m.metric = ?1 AND r.project = ?2";
    transaction(db, false, || {
        // A whole history asks for thousands: one pass over the project's
        // summaries beats a query each. A few are looked up one by one.
        let found: BTreeMap<i64, MetricSummary> = if benchmark_ids.len() > 64 {
            db.query(SCOPED, &vals![metric.name(), db.project()])?
                .iter()
                .map(summary)
                .collect::<Result<_, _>>()?
        } else {
            let one = format!("{SCOPED} AND m.benchmark_id = ?3");
            let mut found = BTreeMap::new();
            for &id in benchmark_ids {
                for r in db.query(&one, &vals![metric.name(), db.project(), id])? {
                    let (id, s) = summary(&r)?;
                    found.insert(id, s);
                }
            }
            found
        };
        Ok(benchmark_ids
            .iter()
            .map(|id| found.get(id).copied())
            .collect())
    })
}

/// [`crate::Store::put_metric_summaries`].
pub(crate) fn put_metric_summaries<D: Db + ?Sized>(
    db: &D,
    metric: Metric,
    rows: &[(i64, MetricSummary)],
) -> Result<(), StoreError> {
    transaction(db, true, || {
        for (id, s) in rows {
            db.execute(
                "INSERT INTO metric_summaries (benchmark_id, metric, n, median, lo, hi) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT (benchmark_id, metric) DO UPDATE \
                 SET n = excluded.n, median = excluded.median, lo = excluded.lo, hi = excluded.hi",
                &vals![
                    *id,
                    metric.name(),
                    i64::try_from(s.n).unwrap_or(i64::MAX),
                    s.median,
                    s.lo,
                    s.hi
                ],
            )?;
        }
        Ok(())
    })
}

/// [`crate::Store::environments`].
pub(crate) fn environments<D: Db + ?Sized>(
    db: &D,
    ids: &[i64],
) -> Result<BTreeMap<i64, Environment>, StoreError> {
    let mut out = BTreeMap::new();
    for &id in ids {
        if out.contains_key(&id) {
            continue;
        }
        let rows = db.query("SELECT facts FROM environments WHERE id = ?1", &vals![id])?;
        if let Some(row) = rows.first() {
            out.insert(id, json(db.place(), serde_json::from_str(&row.text(0)?))?);
        }
    }
    Ok(out)
}

/// [`crate::Store::run_environments`].
pub(crate) fn run_environments<D: Db + ?Sized>(
    db: &D,
    run_ids: &[i64],
) -> Result<BTreeMap<i64, Environment>, StoreError> {
    let mut out = BTreeMap::new();
    for &id in run_ids {
        if out.contains_key(&id) {
            continue;
        }
        let rows = db.query(
            "SELECT e.facts, r.context FROM runs r JOIN environments e ON e.id = r.environment_id \
             WHERE r.id = ?1 AND r.project = ?2",
            &vals![id, db.project()],
        )?;
        if let Some(row) = rows.first() {
            let env = merged_environment(db.place(), &row.text(0)?, &row.text(1)?)?;
            out.insert(id, env);
        }
    }
    Ok(out)
}

/// [`crate::Store::latest_probe_run_for`].
pub(crate) fn latest_probe_run_for<D: Db + ?Sized>(
    db: &D,
    env: &Environment,
) -> Result<Option<i64>, StoreError> {
    let place = db.place();
    let stable = json(place, serde_json::to_string(&env.only(&STABLE_CLASSES)))?;
    let exact = sha256_hex(stable.as_bytes());
    let wanted = comparability_hash(env);
    let rows = db.query(
        "SELECT r.id, e.hash, e.facts FROM runs r JOIN environments e ON e.id = r.environment_id \
         WHERE EXISTS (SELECT 1 FROM probe_results p WHERE p.run_id = r.id) AND r.project = ?1 \
         ORDER BY r.id DESC",
        &vals![db.project()],
    )?;
    for row in &rows {
        if row.text(1)? == exact {
            return Ok(Some(row.int(0)?));
        }
    }
    for row in &rows {
        let facts: Environment = json(place, serde_json::from_str(&row.text(2)?))?;
        if comparability_hash(&facts) == wanted {
            return Ok(Some(row.int(0)?));
        }
    }
    Ok(None)
}

/// [`crate::Store::projects`]: those created and those holding runs.
pub(crate) fn projects<D: Db + ?Sized>(db: &D) -> Result<Vec<ProjectInfo>, StoreError> {
    let rows = db.query(
        "SELECT p.name, p.public_read, p.created_at, \
         (SELECT count(*) FROM runs r WHERE r.project = p.name) FROM projects p ORDER BY p.name",
        &[],
    )?;
    rows.iter()
        .map(|r| {
            Ok(ProjectInfo {
                name: r.text(0)?,
                public_read: r.bool(1)?,
                created_at: r.text(2)?,
                runs: to_u64(r.int(3)?),
            })
        })
        .collect()
}

/// [`crate::Store::public_read`].
pub(crate) fn public_read<D: Db + ?Sized>(db: &D, name: &str) -> Result<Option<bool>, StoreError> {
    db.query(
        "SELECT public_read FROM projects WHERE name = ?1",
        &vals![name],
    )?
    .first()
    .map(|r| r.bool(0))
    .transpose()
}

/// [`crate::Store::ensure_project`].
pub(crate) fn ensure_project<D: Db + ?Sized>(
    db: &D,
    name: &str,
    created_at: &str,
) -> Result<(), StoreError> {
    db.execute(
        "INSERT INTO projects (name, public_read, created_at) VALUES (?1, ?2, ?3) \
         ON CONFLICT (name) DO NOTHING",
        &vals![name, false, created_at],
    )?;
    Ok(())
}

/// [`crate::Store::set_public_read`].
pub(crate) fn set_public_read<D: Db + ?Sized>(
    db: &D,
    name: &str,
    public: bool,
) -> Result<(), StoreError> {
    let changed = db.execute(
        "UPDATE projects SET public_read = ?1 WHERE name = ?2",
        &vals![public, name],
    )?;
    if changed == 0 {
        return Err(StoreError::NoProject(name.to_string()));
    }
    Ok(())
}

/// [`crate::Store::add_token`].
pub(crate) fn add_token<D: Db + ?Sized>(db: &D, t: &TokenRecord) -> Result<i64, StoreError> {
    let rows = db.query(
        "INSERT INTO tokens (project, name, hash, scopes, created_at) \
         VALUES (?1, ?2, ?3, ?4, ?5) RETURNING id",
        &vals![
            t.project.as_str(),
            t.name.as_str(),
            t.hash.as_str(),
            t.scopes.join(","),
            t.created_at.as_str()
        ],
    )?;
    first_int(&rows)
}

fn token_from(r: &Row) -> Result<TokenRecord, StoreError> {
    Ok(TokenRecord {
        id: r.int(0)?,
        project: r.text(1)?,
        name: r.text(2)?,
        hash: r.text(3)?,
        scopes: r
            .text(4)?
            .split(',')
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
        created_at: r.text(5)?,
        revoked_at: r.opt_text(6)?,
    })
}

const TOKEN_COLUMNS: &str = "id, project, name, hash, scopes, created_at, revoked_at";

/// [`crate::Store::tokens`].
pub(crate) fn tokens<D: Db + ?Sized>(
    db: &D,
    project: Option<&str>,
) -> Result<Vec<TokenRecord>, StoreError> {
    let rows = match project {
        Some(p) => db.query(
            &format!("SELECT {TOKEN_COLUMNS} FROM tokens WHERE project = ?1 ORDER BY id"),
            &vals![p],
        )?,
        None => db.query(
            &format!("SELECT {TOKEN_COLUMNS} FROM tokens ORDER BY id"),
            &[],
        )?,
    };
    rows.iter().map(token_from).collect()
}

/// [`crate::Store::token_by_hash`].
pub(crate) fn token_by_hash<D: Db + ?Sized>(
    db: &D,
    hash: &str,
) -> Result<Option<TokenRecord>, StoreError> {
    db.query(
        &format!("SELECT {TOKEN_COLUMNS} FROM tokens WHERE hash = ?1"),
        &vals![hash],
    )?
    .first()
    .map(token_from)
    .transpose()
}

/// [`crate::Store::revoke_token`]: true when a live token was revoked.
pub(crate) fn revoke_token<D: Db + ?Sized>(
    db: &D,
    id: i64,
    revoked_at: &str,
) -> Result<bool, StoreError> {
    Ok(db.execute(
        "UPDATE tokens SET revoked_at = ?1 WHERE id = ?2 AND revoked_at IS NULL",
        &vals![revoked_at, id],
    )? > 0)
}

/// The next free `position` of run `run_id`'s rows in `table` (one of ours,
/// never user input); `NotFound` when the run does not exist in this project.
fn next_position<D: Db + ?Sized>(
    db: &D,
    run_id: i64,
    table: &'static str,
) -> Result<i64, StoreError> {
    let exists = db.query(
        "SELECT 1 FROM runs WHERE id = ?1 AND project = ?2",
        &vals![run_id, db.project()],
    )?;
    if exists.is_empty() {
        return Err(StoreError::NotFound(run_id.to_string()));
    }
    first_int(&db.query(
        &format!("SELECT coalesce(max(position) + 1, 0) FROM {table} WHERE run_id = ?1"),
        &vals![run_id],
    )?)
}

/// Loads one benchmark's samples in iteration order.
fn load_samples<D: Db + ?Sized>(db: &D, bench_id: i64) -> Result<Vec<Sample>, StoreError> {
    let place = db.place();
    let rows = db.query(
        "SELECT iteration, wall_ns, user_ns, sys_ns, peak_rss_bytes, minor_faults, \
         major_faults, voluntary_cs, involuntary_cs, exit_code, signal, counters, round, \
         wall_exact_ns FROM samples WHERE benchmark_id = ?1 ORDER BY iteration",
        &vals![bench_id],
    )?;
    let small = |r: &Row, i: usize| -> Result<u32, StoreError> {
        Ok(u32::try_from(r.int(i)?).unwrap_or(u32::MAX))
    };
    let opt_i32 = |r: &Row, i: usize| -> Result<Option<i32>, StoreError> {
        Ok(r.opt_int(i)?.map(|v| v as i32))
    };
    let mut out = Vec::with_capacity(rows.len());
    for r in rows {
        let mut sample = Sample {
            iteration: small(&r, 0)?,
            wall_ns: to_u64(r.int(1)?),
            user_ns: to_u64(r.int(2)?),
            sys_ns: to_u64(r.int(3)?),
            peak_rss_bytes: to_u64(r.int(4)?),
            minor_faults: to_u64(r.int(5)?),
            major_faults: to_u64(r.int(6)?),
            voluntary_cs: to_u64(r.int(7)?),
            involuntary_cs: to_u64(r.int(8)?),
            exit_code: opt_i32(&r, 9)?,
            signal: opt_i32(&r, 10)?,
            round: small(&r, 12)?,
            wall_exact_ns: r.opt_real(13)?,
            counters: BTreeMap::new(),
        };
        if let Some(text) = r.opt_text(11)? {
            // serde_json writes non-finite floats as null; read them back as NaN.
            let raw: BTreeMap<String, Option<f64>> = json(place, serde_json::from_str(&text))?;
            sample.counters = raw
                .into_iter()
                .map(|(k, v)| (k, v.unwrap_or(f64::NAN)))
                .collect();
        }
        out.push(sample);
    }
    Ok(out)
}

/// Loads a run's probe results in the order stored; NULL numbers (NaN when
/// written to SQLite) load as NaN.
fn load_probe_results<D: Db + ?Sized>(db: &D, run_id: i64) -> Result<Vec<ProbeResult>, StoreError> {
    let rows = db.query(
        "SELECT probe, metric, value, unit, lower_is_better, cycles, spread, stable, \
         headline, note FROM probe_results WHERE run_id = ?1 ORDER BY position",
        &vals![run_id],
    )?;
    rows.iter()
        .map(|r| {
            Ok(ProbeResult {
                probe: r.text(0)?,
                metric: r.text(1)?,
                value: r.real_or_nan(2)?,
                unit: r.text(3)?,
                lower_is_better: r.bool(4)?,
                cycles: r.opt_real(5)?,
                spread: r.real_or_nan(6)?,
                stable: r.bool(7)?,
                headline: r.bool(8)?,
                note: r.opt_text(9)?,
            })
        })
        .collect()
}

/// Rebuilds the full environment from the shared env row and the run's context facts.
fn merged_environment(place: &Path, facts: &str, context: &str) -> Result<Environment, StoreError> {
    let mut env: Environment = json(place, serde_json::from_str(facts))?;
    let context: Environment = json(place, serde_json::from_str(context))?;
    env.merge(context);
    Ok(env)
}

fn git_info(
    commit: Option<String>,
    branch: Option<String>,
    dirty: Option<bool>,
) -> Option<GitInfo> {
    commit.map(|commit| GitInfo {
        commit,
        branch,
        dirty: dirty.unwrap_or(false),
    })
}

fn parse_status(place: &Path, id: i64, s: &str) -> Result<RunStatus, StoreError> {
    RunStatus::parse(s).ok_or_else(|| StoreError::Corrupt {
        path: place.to_path_buf(),
        detail: format!("run {id} has unknown status {s:?}"),
    })
}

fn parse_mode(place: &Path, id: i64, s: &str) -> Result<Mode, StoreError> {
    Mode::parse(s).ok_or_else(|| StoreError::Corrupt {
        path: place.to_path_buf(),
        detail: format!("run {id} has unknown mode {s:?}"),
    })
}

/// Implements [`crate::Store`] for a [`Db`] by delegating to this module.
macro_rules! impl_store {
    ($t:ty) => {
        impl $crate::Store for $t {
            fn begin_run(&mut self, run: &Run) -> Result<i64, StoreError> {
                queries::begin_run(self, run)
            }
            fn add_benchmark(&mut self, run_id: i64, bench: &Benchmark) -> Result<i64, StoreError> {
                queries::add_benchmark(self, run_id, bench)
            }
            fn add_sample(&mut self, benchmark_id: i64, sample: &Sample) -> Result<(), StoreError> {
                queries::add_sample(self, benchmark_id, sample)
            }
            fn update_context(&mut self, run_id: i64, env: &Environment) -> Result<(), StoreError> {
                queries::update_context(self, run_id, env)
            }
            fn set_locks(
                &mut self,
                benchmark_id: i64,
                locks: &perfsleuth_model::LockReport,
            ) -> Result<(), StoreError> {
                queries::set_locks(self, benchmark_id, locks)
            }
            fn set_profile(
                &mut self,
                benchmark_id: i64,
                profile: &Profile,
            ) -> Result<(), StoreError> {
                queries::set_profile(self, benchmark_id, profile)
            }
            fn set_stacks(
                &mut self,
                benchmark_id: i64,
                stacks: &perfsleuth_model::StackProfile,
            ) -> Result<(), StoreError> {
                queries::set_stacks(self, benchmark_id, stacks)
            }
            fn attach_stacks(
                &mut self,
                run_id: i64,
                position: usize,
                stacks: &perfsleuth_model::StackProfile,
            ) -> Result<bool, StoreError> {
                queries::attach_stacks(self, run_id, position, stacks)
            }
            fn set_allocs(
                &mut self,
                benchmark_id: i64,
                allocs: &perfsleuth_model::AllocProfile,
                counters: &[(u32, &std::collections::BTreeMap<String, f64>)],
            ) -> Result<(), StoreError> {
                queries::set_allocs(self, benchmark_id, allocs, counters)
            }
            fn add_probe_results(
                &mut self,
                run_id: i64,
                results: &[ProbeResult],
            ) -> Result<(), StoreError> {
                queries::add_probe_results(self, run_id, results)
            }
            fn finish_run(
                &mut self,
                run_id: i64,
                status: RunStatus,
                ended_at: &str,
            ) -> Result<(), StoreError> {
                queries::finish_run(self, run_id, status, ended_at)
            }
            fn ingest_run(&mut self, run: &Run) -> Result<Ingested, StoreError> {
                queries::ingest_run(self, run)
            }
            fn run_by_uuid(&self, uuid: &str) -> Result<Option<i64>, StoreError> {
                queries::run_by_uuid(self, uuid)
            }
            fn load_run(&self, id: i64) -> Result<Option<Run>, StoreError> {
                queries::load_run(self, id, true)
            }
            fn load_run_measurements(&self, id: i64) -> Result<Option<Run>, StoreError> {
                queries::load_run(self, id, false)
            }
            fn list_runs(&self, limit: Option<usize>) -> Result<Vec<RunListing>, StoreError> {
                queries::list_runs(self, limit)
            }
            fn run_listing(&self, id: i64) -> Result<Option<RunListing>, StoreError> {
                queries::run_listing(self, id)
            }
            fn resolve_run_of(&self, spec: &str, kind: RunKind) -> Result<i64, StoreError> {
                queries::resolve_run_of(self, spec, kind)
            }
            fn runs_at_commit(&self, commit: &str) -> Result<Vec<i64>, StoreError> {
                queries::runs_at_commit(self, commit)
            }
            fn runs_on_branch(&self, branch: &str) -> Result<Vec<i64>, StoreError> {
                queries::runs_on_branch(self, branch)
            }
            fn run_before_of(&self, id: i64, kind: RunKind) -> Result<Option<i64>, StoreError> {
                queries::run_before_of(self, id, kind)
            }
            fn earlier_runs(
                &self,
                before: Option<i64>,
                kind: RunKind,
            ) -> Result<Vec<$crate::EarlierRun>, StoreError> {
                queries::earlier_runs(self, before, kind)
            }
            fn same_binary_runs(
                &self,
                hash: &str,
                argv: &[String],
                mode: Mode,
                env: &Environment,
                limit: usize,
            ) -> Result<Vec<Run>, StoreError> {
                queries::same_binary_runs(self, hash, argv, mode, env, limit)
            }
            fn latest_probe_run_for(&self, env: &Environment) -> Result<Option<i64>, StoreError> {
                queries::latest_probe_run_for(self, env)
            }
            fn history_entries(&self) -> Result<Vec<HistoryEntry>, StoreError> {
                queries::history_entries(self)
            }
            fn metric_values(
                &self,
                benchmark_ids: &[i64],
                metric: Metric,
            ) -> Result<Vec<Vec<f64>>, StoreError> {
                queries::metric_values(self, benchmark_ids, metric)
            }
            fn metric_summaries(
                &self,
                benchmark_ids: &[i64],
                metric: Metric,
            ) -> Result<Vec<Option<MetricSummary>>, StoreError> {
                queries::metric_summaries(self, benchmark_ids, metric)
            }
            fn put_metric_summaries(
                &mut self,
                metric: Metric,
                rows: &[(i64, MetricSummary)],
            ) -> Result<(), StoreError> {
                queries::put_metric_summaries(self, metric, rows)
            }
            fn environments(&self, ids: &[i64]) -> Result<BTreeMap<i64, Environment>, StoreError> {
                queries::environments(self, ids)
            }
            fn run_environments(
                &self,
                run_ids: &[i64],
            ) -> Result<BTreeMap<i64, Environment>, StoreError> {
                queries::run_environments(self, run_ids)
            }
            fn location(&self) -> &std::path::Path {
                $crate::sql::Db::place(self)
            }
            fn project(&self) -> &str {
                $crate::sql::Db::project(self)
            }
            fn use_project(&mut self, project: &str) {
                self.project = project.to_string();
            }
            fn public_read(&self, name: &str) -> Result<Option<bool>, StoreError> {
                queries::public_read(self, name)
            }
            fn projects(&self) -> Result<Vec<ProjectInfo>, StoreError> {
                queries::projects(self)
            }
            fn ensure_project(&mut self, name: &str, created_at: &str) -> Result<(), StoreError> {
                queries::ensure_project(self, name, created_at)
            }
            fn set_public_read(&mut self, name: &str, public: bool) -> Result<(), StoreError> {
                queries::set_public_read(self, name, public)
            }
            fn add_token(&mut self, token: &TokenRecord) -> Result<i64, StoreError> {
                queries::add_token(self, token)
            }
            fn tokens(&self, project: Option<&str>) -> Result<Vec<TokenRecord>, StoreError> {
                queries::tokens(self, project)
            }
            fn token_by_hash(&self, hash: &str) -> Result<Option<TokenRecord>, StoreError> {
                queries::token_by_hash(self, hash)
            }
            fn revoke_token(&mut self, id: i64, revoked_at: &str) -> Result<bool, StoreError> {
                queries::revoke_token(self, id, revoked_at)
            }
        }
    };
}
pub(crate) use impl_store;
