//! What [`crate::RunReader`] reads with: whole runs, listings, samples and probe
//! results decoded from their rows.

use crate::RunListing;
use crate::error::StoreError;
use crate::hash::comparability_hash;
use crate::queries::Backend;
use crate::queries::json;
use crate::queries::opt_json;
use crate::queries::to_u64;
use crate::sql::Row;
use crate::sql::Val;
use crate::sql::transaction;
use crate::sql::vals;
use perfsleuth_model::Benchmark;
use perfsleuth_model::Environment;
use perfsleuth_model::GitInfo;
use perfsleuth_model::Mode;
use perfsleuth_model::ProbeResult;
use perfsleuth_model::Run;
use perfsleuth_model::RunStatus;
use perfsleuth_model::Sample;
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::path::Path;

/// The id of the project's run with this UUID: [`crate::RunReader::run_by_uuid`],
/// and what makes [`crate::RunWriter::ingest_run`] idempotent.
pub(crate) fn run_with_uuid<D: Backend + ?Sized>(
    db: &D,
    uuid: &str,
) -> Result<Option<i64>, StoreError> {
    db.query(
        "SELECT id FROM runs WHERE uuid = ?1 AND project = ?2",
        &vals![uuid, db.project()],
    )?
    .first()
    .map(|r| r.int(0))
    .transpose()
}

/// The ids of the project's runs among `uuids` (UUID → id), a statement
/// per [`crate::queries::ID_CHUNK`] UUIDs: what a push of many runs asks
/// once, and a batch ingest looks up before it writes.
pub(crate) fn runs_with_uuids<D: Backend + ?Sized>(
    db: &D,
    uuids: &[&str],
) -> Result<BTreeMap<String, i64>, StoreError> {
    let sql = format!(
        "SELECT uuid, id FROM runs WHERE uuid IN ({}) AND project = ?{}",
        *crate::queries::ID_PLACEHOLDERS,
        crate::queries::ID_CHUNK + 1
    );
    let mut held = BTreeMap::new();
    for mut params in crate::queries::text_params(uuids) {
        params.push(Val::from(db.project()));
        for row in db.query(&sql, &params)? {
            held.insert(row.text(0)?, row.int(1)?);
        }
    }
    Ok(held)
}

/// [`crate::RunReader::load_run`] and, without the sampled profiles,
/// [`crate::RunReader::load_run_measurements`].
pub(crate) fn read_run<D: Backend + ?Sized>(
    db: &D,
    id: i64,
    profiles: bool,
) -> Result<Option<Run>, StoreError> {
    let place = db.location();
    // One read transaction, so a concurrent writer cannot show us half a state.
    transaction(db, false, || {
        let rows = db.query(
            &format!("SELECT {HEAD} WHERE r.id = ?1 AND r.project = ?2"),
            &vals![id, db.project()],
        )?;
        let Some(row) = rows.first() else {
            return Ok(None);
        };
        let mut run = run_head(place, row)?;
        // A sampled profile may be hundreds of megabytes of JSON: not read
        // where it is not used.
        let sampled = if profiles {
            "stacks, allocs"
        } else {
            "NULL, NULL"
        };
        run.benchmarks = benchmarks_where(
            db,
            &format!(
                "SELECT {BENCHMARK}, {sampled} FROM benchmarks WHERE run_id = ?1 ORDER BY position"
            ),
            &vals![id],
        )?
        .into_iter()
        .map(|(_, _, b)| b)
        .collect();
        run.probes = load_probe_results(db, id)?;
        Ok(Some(run))
    })
}

/// The columns [`run_head`] reads, with the tables they come from.
const HEAD: &str = "r.id, r.started_at, r.ended_at, r.status, r.tool_version, r.git_commit, \
     r.git_branch, r.git_dirty, r.mode, r.options, e.facts, r.context, r.uuid \
     FROM runs r JOIN environments e ON e.id = r.environment_id";

/// The columns of `benchmarks` [`benchmarks_of`] reads, but the two sampled
/// profiles, which each query chooses to read or not.
const BENCHMARK: &str =
    "id, name, command, argv, parameters, facts, profile, summaries, locks, run_id";

/// A run without its benchmarks and probes, from a row of [`HEAD`].
fn run_head(place: &std::path::Path, row: &Row) -> Result<Run, StoreError> {
    let id = row.int(0)?;
    Ok(Run {
        id: Some(id),
        uuid: row.opt_text(12)?,
        status: parse_status(place, id, &row.text(3)?)?,
        mode: parse_mode(place, id, &row.text(8)?)?,
        git: git_info(row.opt_text(5)?, row.opt_text(6)?, row.opt_bool(7)?),
        options: json(place, serde_json::from_str(&row.text(9)?))?,
        environment: merged_environment(place, &row.text(10)?, &row.text(11)?)?,
        started_at: row.text(1)?,
        ended_at: row.opt_text(2)?,
        tool_version: row.text(4)?,
        benchmarks: Vec::new(),
        probes: Vec::new(),
    })
}

/// The benchmarks `sql` selects (the columns of [`BENCHMARK`] and the two
/// profiles), in its order, each with its id and its run's id, and with its
/// samples (a statement per chunk of benchmarks). The rows are turned into
/// benchmarks as they are read: a 100 000-benchmark run's rows are not held
/// beside its benchmarks, and a profile's text is freed before the next one
/// is parsed.
fn benchmarks_where<D: Backend + ?Sized>(
    db: &D,
    sql: &str,
    params: &[Val],
) -> Result<Vec<(i64, i64, Benchmark)>, StoreError> {
    let place = db.location();
    let mut out = Vec::new();
    db.query_each(sql, params, &mut |b| {
        out.push((
            b.int(0)?,
            b.int(9)?,
            Benchmark {
                name: b.text(1)?,
                command: b.text(2)?,
                argv: json(place, serde_json::from_str(&b.text(3)?))?,
                parameters: json(place, serde_json::from_str(&b.text(4)?))?,
                facts: opt_json(place, b, 5)?.unwrap_or_default(),
                samples: Vec::new(),
                profile: opt_json(place, b, 6)?,
                summaries: opt_json(place, b, 7)?.unwrap_or_default(),
                locks: opt_json(place, b, 8)?,
                stacks: opt_json(place, b, 10)?,
                allocs: opt_json(place, b, 11)?,
            },
        ));
        Ok(())
    })?;
    let ids: Vec<i64> = out.iter().map(|b| b.0).collect();
    let mut samples = load_samples(db, &ids)?;
    for (id, _, b) in &mut out {
        b.samples = samples.remove(id).unwrap_or_default();
    }
    Ok(out)
}

/// Runs of the project, each with only the one benchmark named (by id) and
/// no probes or sampled profiles, for each of `picks` (run id, benchmark
/// id; a run may come more than once, with another benchmark) in its
/// order, `None` where the project has no such run: a few statements for
/// any number of runs, not four a run.
pub(crate) fn runs_with_benchmarks<D: Backend + ?Sized>(
    db: &D,
    picks: &[(i64, i64)],
) -> Result<Vec<Option<Run>>, StoreError> {
    let place = db.location();
    transaction(db, false, || {
        let mut run_ids: Vec<i64> = picks.iter().map(|p| p.0).collect();
        run_ids.sort_unstable();
        run_ids.dedup();
        let mut heads: BTreeMap<i64, Run> = BTreeMap::new();
        for list in crate::queries::id_lists(&run_ids) {
            let sql = format!("SELECT {HEAD} WHERE r.id IN ({list}) AND r.project = ?1");
            for row in db.query(&sql, &vals![db.project()])? {
                heads.insert(row.int(0)?, run_head(place, &row)?);
            }
        }
        let mut bench_ids: Vec<i64> = picks.iter().map(|p| p.1).collect();
        bench_ids.sort_unstable();
        bench_ids.dedup();
        let mut benches: BTreeMap<i64, Benchmark> = BTreeMap::new();
        for list in crate::queries::id_lists(&bench_ids) {
            let sql =
                format!("SELECT {BENCHMARK}, NULL, NULL FROM benchmarks WHERE id IN ({list})");
            for (id, _, b) in benchmarks_where(db, &sql, &[])? {
                benches.insert(id, b);
            }
        }
        Ok(picks
            .iter()
            .map(|(run_id, bench_id)| {
                let (head, b) = (heads.get(run_id)?, benches.get(bench_id)?);
                let mut run = head.clone();
                run.benchmarks = vec![b.clone()];
                Some(run)
            })
            .collect())
    })
}

/// The listings of the project's runs (of run `only`), newest first.
/// Which runs [`listings`] lists.
pub(crate) enum Listed<'a> {
    /// Every run of the project.
    All,
    /// The project's runs stored before the run with this id.
    Before(i64),
    /// The one run with this id.
    Run(i64),
    /// The runs of one bisection.
    Bisection(&'a str),
}

/// The listings of the project's runs `only` names, newest first.
pub(crate) fn listings<D: Backend + ?Sized>(
    db: &D,
    only: Listed<'_>,
    limit: &str,
) -> Result<Vec<RunListing>, StoreError> {
    let place = db.location();
    let (only, bisection) = match only {
        Listed::All => (String::new(), None),
        // An id we hold as an integer: formatted, it cannot be anything else.
        Listed::Run(id) => (format!("AND r.id = {id}"), None),
        Listed::Before(id) => (format!("AND r.id < {id}"), None),
        Listed::Bisection(b) => ("AND r.bisection = ?2".to_string(), Some(b)),
    };
    let mut params = vec![Val::from(db.project())];
    params.extend(bisection.map(Val::from));
    transaction(db, false, || {
        // Samples are counted benchmark by benchmark, each an equality on
        // the key's first column: as one join, PostgreSQL without
        // statistics (a bulk ingest before autovacuum's ANALYZE) scanned
        // every sample once per listed run — minutes at 2 000 runs.
        let rows = db.query(
            &format!(
                "SELECT r.id, r.started_at, r.ended_at, r.status, r.mode, r.git_commit, \
                 r.git_branch, r.git_dirty, e.facts, r.context, r.uuid, \
                 (SELECT CAST(coalesce(sum((SELECT count(*) FROM samples s \
                   WHERE s.benchmark_id = b.id)), 0) AS BIGINT) \
                  FROM benchmarks b WHERE b.run_id = r.id) \
                 FROM runs r JOIN environments e ON e.id = r.environment_id \
                 WHERE r.project = ?1 {only} ORDER BY r.id DESC {limit}"
            ),
            &params,
        )?;
        // The listed runs' benchmark and probe names: two statements per
        // chunk of runs, not two per run.
        let ids = rows
            .iter()
            .map(|r| r.int(0))
            .collect::<Result<Vec<_>, _>>()?;
        let mut names: BTreeMap<i64, Vec<String>> = BTreeMap::new();
        let mut probe_names: BTreeMap<i64, Vec<String>> = BTreeMap::new();
        for list in crate::queries::id_lists(&ids) {
            let sql = format!(
                "SELECT run_id, name FROM benchmarks WHERE run_id IN ({list}) ORDER BY run_id, position"
            );
            for r in db.query(&sql, &[])? {
                names.entry(r.int(0)?).or_default().push(r.text(1)?);
            }
            let sql = format!(
                "SELECT run_id, probe FROM probe_results WHERE run_id IN ({list}) \
                 GROUP BY run_id, probe ORDER BY run_id, min(position)"
            );
            for r in db.query(&sql, &[])? {
                probe_names.entry(r.int(0)?).or_default().push(r.text(1)?);
            }
        }
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let id = row.int(0)?;
            let env = merged_environment(place, &row.text(8)?, &row.text(9)?)?;
            let benchmarks = names.remove(&id).unwrap_or_default();
            let probes = probe_names.remove(&id).unwrap_or_default();
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

pub(crate) fn ids<D: Backend + ?Sized>(
    db: &D,
    sql: &str,
    params: &[Val],
) -> Result<Vec<i64>, StoreError> {
    db.query(sql, params)?.iter().map(|r| r.int(0)).collect()
}

/// Loads the samples of these benchmarks, each in iteration order, by benchmark id.
pub(crate) fn load_samples<D: Backend + ?Sized>(
    db: &D,
    bench_ids: &[i64],
) -> Result<HashMap<i64, Vec<Sample>>, StoreError> {
    let place = db.location();
    let small = |r: &Row, i: usize| -> Result<u32, StoreError> {
        Ok(u32::try_from(r.int(i)?).unwrap_or(u32::MAX))
    };
    let opt_i32 = |r: &Row, i: usize| -> Result<Option<i32>, StoreError> {
        Ok(r.opt_int(i)?.map(|v| v as i32))
    };
    let mut out: HashMap<i64, Vec<Sample>> = HashMap::with_capacity(bench_ids.len());
    // The rows come ordered by benchmark: a benchmark's samples gather in
    // one reused buffer, then move into a vector of just their size (pushed
    // one by one, 5 samples held room for 8: 77 MB a side at 100 000
    // benchmarks).
    let mut current: (Option<i64>, Vec<Sample>) = (None, Vec::new());
    let flush = |current: &mut (Option<i64>, Vec<Sample>), out: &mut HashMap<i64, Vec<Sample>>| {
        if let Some(id) = current.0.take() {
            out.entry(id).or_default().append(&mut current.1);
        }
    };
    // A statement per chunk of benchmarks: a run of 100 000 benchmarks is
    // 200 reads, not 100 000, and no chunk's rows are held long.
    let sql = format!(
        "SELECT iteration, wall_ns, user_ns, sys_ns, peak_rss_bytes, minor_faults, \
         major_faults, voluntary_cs, involuntary_cs, exit_code, signal, counters, round, \
         wall_exact_ns, benchmark_id FROM samples WHERE benchmark_id IN ({}) \
         ORDER BY benchmark_id, iteration",
        *crate::queries::ID_PLACEHOLDERS
    );
    for ids in crate::queries::id_params(bench_ids) {
        db.query_each(&sql, &ids, &mut |r| {
            let mut sample = Sample {
                iteration: small(r, 0)?,
                wall_ns: to_u64(r.int(1)?),
                user_ns: to_u64(r.int(2)?),
                sys_ns: to_u64(r.int(3)?),
                peak_rss_bytes: to_u64(r.int(4)?),
                minor_faults: to_u64(r.int(5)?),
                major_faults: to_u64(r.int(6)?),
                voluntary_cs: to_u64(r.int(7)?),
                involuntary_cs: to_u64(r.int(8)?),
                exit_code: opt_i32(r, 9)?,
                signal: opt_i32(r, 10)?,
                round: small(r, 12)?,
                wall_exact_ns: r.opt_real(13)?,
                counters: BTreeMap::new(),
            };
            if let Some(text) = r.opt_str(11)? {
                // serde_json writes non-finite floats as null; read them back as NaN.
                let raw: BTreeMap<String, Option<f64>> = json(place, serde_json::from_str(text))?;
                sample.counters = raw
                    .into_iter()
                    .map(|(k, v)| (k, v.unwrap_or(f64::NAN)))
                    .collect();
            }
            let id = r.int(14)?;
            if current.0 != Some(id) {
                flush(&mut current, &mut out);
                current.0 = Some(id);
            }
            current.1.push(sample);
            Ok(())
        })?;
        flush(&mut current, &mut out);
    }
    Ok(out)
}

/// Loads a run's probe results in the order stored; NULL numbers (NaN when
/// written to SQLite) load as NaN.
pub(crate) fn load_probe_results<D: Backend + ?Sized>(
    db: &D,
    run_id: i64,
) -> Result<Vec<ProbeResult>, StoreError> {
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
pub(crate) fn merged_environment(
    place: &Path,
    facts: &str,
    context: &str,
) -> Result<Environment, StoreError> {
    let mut env: Environment = json(place, serde_json::from_str(facts))?;
    let context: Environment = json(place, serde_json::from_str(context))?;
    env.merge(context);
    Ok(env)
}

pub(crate) fn git_info(
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

pub(crate) fn parse_status(place: &Path, id: i64, s: &str) -> Result<RunStatus, StoreError> {
    RunStatus::parse(s).ok_or_else(|| StoreError::Corrupt {
        path: place.to_path_buf(),
        detail: format!("run {id} has unknown status {s:?}"),
    })
}

pub(crate) fn parse_mode(place: &Path, id: i64, s: &str) -> Result<Mode, StoreError> {
    Mode::parse(s).ok_or_else(|| StoreError::Corrupt {
        path: place.to_path_buf(),
        detail: format!("run {id} has unknown mode {s:?}"),
    })
}
