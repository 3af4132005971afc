//! The write path: runs begun, benchmarks and samples added as they are
//! measured, profiles and probe results attached, runs finished and
//! ingested whole.

use crate::Ingested;
use crate::MetricSummary;
use crate::error::StoreError;
use crate::hash::STABLE_CLASSES;
use crate::hash::sha256_hex;
use crate::queries::Backend;
use crate::queries::SAMPLE_COLUMNS;
use crate::queries::json;
use crate::queries::load::runs_with_uuids;
use crate::queries::new_uuid;
use crate::queries::to_i64;
use crate::sql::Dialect;
use crate::sql::Row;
use crate::sql::Val;
use crate::sql::transaction;
use crate::sql::vals;
use perfsleuth_model::Benchmark;
use perfsleuth_model::Environment;
use perfsleuth_model::ImpactClass;
use perfsleuth_model::LockReport;
use perfsleuth_model::Metric;
use perfsleuth_model::ProbeResult;
use perfsleuth_model::Profile;
use perfsleuth_model::Run;
use perfsleuth_model::RunStatus;
use perfsleuth_model::Sample;
use perfsleuth_model::StackProfile;
use std::collections::BTreeMap;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::Path;

pub(crate) const INSERT_SAMPLE: &str = "INSERT INTO samples (benchmark_id, iteration, wall_ns, user_ns, sys_ns, \
    peak_rss_bytes, minor_faults, major_faults, voluntary_cs, involuntary_cs, exit_code, signal, counters, \
    round, wall_exact_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)";

/// Rows per multi-row INSERT when a whole run is ingested: at 15 values a
/// row, far below both databases' limits on bound parameters (32 766 in
/// SQLite, 65 535 in PostgreSQL).
pub(crate) const ROWS_PER_INSERT: usize = 500;

/// Writing runs: begun, filled as they are measured and finished, or ingested whole.
pub trait RunWriter: Backend {
    /// Inserts the environment (deduplicated) and a run row with status `running`; `run.benchmarks` are not inserted. Returns the new run id.
    fn begin_run(&mut self, run: &Run) -> Result<i64, StoreError> {
        let uuid = run.uuid.clone().unwrap_or_else(new_uuid);
        transaction(self, true, || {
            insert_run(self, run, &uuid, RunStatus::Running, None)
        })
    }

    /// Inserts a benchmark row (name, command, argv, parameters) for a run and returns its id; insertion order is display order.
    fn add_benchmark(&mut self, run_id: i64, bench: &Benchmark) -> Result<i64, StoreError> {
        transaction(self, true, || {
            let position = next_position(self, run_id, "benchmarks")?;
            insert_benchmark(self, run_id, position, bench)
        })
    }

    /// Inserts one sample and commits it at once, so a crash loses at most the sample in flight.
    fn add_sample(&mut self, benchmark_id: i64, sample: &Sample) -> Result<(), StoreError> {
        self.execute(
            INSERT_SAMPLE,
            &sample_values(self.location(), benchmark_id, sample)?,
        )?;
        Ok(())
    }

    /// Inserts samples (each with its benchmark's id) and commits them in
    /// one transaction: a measuring run commits what it measured every
    /// tenth of a second or so, so that a crash loses at most that.
    fn add_samples(&mut self, samples: &[(i64, Sample)]) -> Result<(), StoreError> {
        let place = self.location();
        let rows = samples
            .iter()
            .map(|(id, s)| sample_values(place, *id, s))
            .collect::<Result<Vec<_>, _>>()?;
        transaction(self, true, || {
            insert_samples(self, &rows, SamplesOf::StoredBenchmarks)
        })
    }

    /// Replaces a run's context facts (those only known at the end, such as
    /// the measured peak-RSS floor); identity and performance facts are fixed
    /// at [`Self::begin_run`].
    fn update_context(&mut self, run_id: i64, env: &Environment) -> Result<(), StoreError> {
        let context = json(
            self.location(),
            serde_json::to_string(&env.only(&[ImpactClass::Context])),
        )?;
        let changed = self.execute(
            "UPDATE runs SET context = ?1 WHERE id = ?2 AND project = ?3",
            &vals![context, run_id, self.project()],
        )?;
        if changed == 0 {
            return Err(StoreError::NotFound(run_id.to_string()));
        }
        Ok(())
    }

    /// Records a benchmark's per-function profile (simulation mode), once
    /// its runs are done.
    fn set_profile(&mut self, benchmark_id: i64, profile: &Profile) -> Result<(), StoreError> {
        set_benchmark_json(
            self,
            benchmark_id,
            "profile",
            serde_json::to_string(profile),
        )
    }

    /// Records where a benchmark's threads waited for locks (`--locks`),
    /// once its runs are done.
    fn set_locks(&mut self, benchmark_id: i64, locks: &LockReport) -> Result<(), StoreError> {
        set_benchmark_json(self, benchmark_id, "locks", serde_json::to_string(locks))
    }

    /// Records a benchmark's sampled call stacks (`--profile`), once its
    /// runs are done.
    fn set_stacks(&mut self, benchmark_id: i64, stacks: &StackProfile) -> Result<(), StoreError> {
        set_benchmark_json(self, benchmark_id, "stacks", stacks_json(stacks))
    }

    /// Records a benchmark's allocation profile (`--profile=alloc`), once its
    /// runs are done, and each profiled run's counts on its sample
    /// (`counters`: iteration and that sample's counters, the counts among them).
    fn set_allocs(
        &mut self,
        benchmark_id: i64,
        allocs: &perfsleuth_model::AllocProfile,
        counters: &[(u32, &BTreeMap<String, f64>)],
    ) -> Result<(), StoreError> {
        transaction(self, true, || {
            set_benchmark_json(self, benchmark_id, "allocs", serde_json::to_string(allocs))?;
            for (iteration, c) in counters {
                let text = json(self.location(), serde_json::to_string(c))?;
                self.execute(
                    "UPDATE samples SET counters = ?1 WHERE benchmark_id = ?2 AND iteration = ?3",
                    &vals![text, benchmark_id, i64::from(*iteration)],
                )?;
            }
            Ok(())
        })
    }

    /// Gives benchmark `position` of a stored run the stacks a profiler took
    /// elsewhere (`import --into`), unless it has some: `false` then, and
    /// nothing changed.
    fn attach_stacks(
        &mut self,
        run_id: i64,
        position: usize,
        stacks: &StackProfile,
    ) -> Result<bool, StoreError> {
        let text = json(self.location(), stacks_json(stacks))?;
        let changed = self.execute(
            "UPDATE benchmarks SET stacks = ?1 WHERE run_id = ?2 AND position = ?3 \
             AND stacks IS NULL AND run_id IN (SELECT id FROM runs WHERE project = ?4)",
            &vals![text, run_id, position as i64, self.project()],
        )?;
        Ok(changed > 0)
    }

    /// Appends probe results to a run in one transaction (after any stored
    /// before), so each probe's numbers are kept as soon as it finishes.
    fn add_probe_results(
        &mut self,
        run_id: i64,
        results: &[ProbeResult],
    ) -> Result<(), StoreError> {
        transaction(self, true, || {
            let first = next_position(self, run_id, "probe_results")?;
            let rows: Vec<Vec<Val>> = results
                .iter()
                .enumerate()
                .map(|(i, p)| probe_values(run_id, first + i as i64, p))
                .collect();
            insert_probes(self, &rows)
        })
    }

    /// Sets a run's final status and end time.
    fn finish_run(
        &mut self,
        run_id: i64,
        status: RunStatus,
        ended_at: &str,
    ) -> Result<(), StoreError> {
        let changed = self.execute(
            "UPDATE runs SET status = ?1, ended_at = ?2 WHERE id = ?3 AND project = ?4",
            &vals![status.as_str(), ended_at, run_id, self.project()],
        )?;
        if changed == 0 {
            return Err(StoreError::NotFound(run_id.to_string()));
        }
        Ok(())
    }

    /// Stores a whole run (benchmarks, samples, probe results, its own
    /// status) in one transaction, so it is either wholly stored or not at
    /// all. Idempotent by UUID: a run whose UUID the project already holds
    /// is not written again.
    fn ingest_run(&mut self, run: &Run) -> Result<Ingested, StoreError> {
        self.ingest_run_summarized(run, Metric::Wall, &[])
    }

    /// [`RunWriter::ingest_run`], and in the same transaction, when this
    /// call stores the run, the `metric` summaries of its benchmarks
    /// (`summaries[i]` for the benchmark at position `i`; `None` or
    /// missing for one without): what a server caches for every pushed
    /// run, without a second transaction.
    fn ingest_run_summarized(
        &mut self,
        run: &Run,
        metric: Metric,
        summaries: &[Option<MetricSummary>],
    ) -> Result<Ingested, StoreError> {
        let mut done = self.ingest_runs(&[Incoming { run, summaries }], metric)?;
        done.pop()
            .ok_or_else(|| StoreError::NotFound("the ingested run".into()))
    }

    /// [`RunWriter::ingest_run_summarized`] of several runs in one
    /// transaction: all stored or none. What each run became, in order; a
    /// run whose UUID the project holds, or that an earlier run of `runs`
    /// has, is not written again (`created` false, the held run's id).
    /// A batch of pushed runs costs one commit and a statement per table,
    /// where a transaction each cost a commit and seven statements a run.
    fn ingest_runs(
        &mut self,
        runs: &[Incoming<'_>],
        metric: Metric,
    ) -> Result<Vec<Ingested>, StoreError> {
        let uuids: Vec<String> = runs
            .iter()
            .map(|r| r.run.uuid.clone().unwrap_or_else(new_uuid))
            .collect();
        let mut conflicts = 0;
        loop {
            let mut held_before = 0;
            match ingest_batch(self, runs, &uuids, metric, &mut held_before) {
                // Another connection stored one of these runs between our
                // look-up and our insert (PostgreSQL writers do not
                // serialise): the look-up finds it on the next try. Any
                // other conflict (two samples of one iteration) is the
                // data's, and trying again would not change it.
                Err(StoreError::Conflict(what)) if conflicts < INGEST_CONFLICT_RETRIES => {
                    let asked: Vec<&str> = uuids.iter().map(String::as_str).collect();
                    if runs_with_uuids(self, &asked)?.len() <= held_before {
                        return Err(StoreError::Conflict(what));
                    }
                    conflicts += 1;
                }
                other => return other,
            }
        }
    }

    /// Caches summaries of `metric` (benchmark id, summary) in one transaction.
    /// Only for complete runs, whose samples no longer change.
    fn put_metric_summaries(
        &mut self,
        metric: Metric,
        rows: &[(i64, MetricSummary)],
    ) -> Result<(), StoreError> {
        transaction(self, true, || upsert_summaries(self, metric, rows))
    }
}

/// Upserts `metric` summaries (benchmark id, summary) in one statement: a
/// server caches a pushed run's 20 summaries with every ingest, and a
/// statement each was a fifth of the database's statements per push. One
/// row per benchmark, the last given: PostgreSQL refuses to upsert a row
/// twice in one statement.
fn upsert_summaries<D: Backend + ?Sized>(
    db: &D,
    metric: Metric,
    rows: &[(i64, MetricSummary)],
) -> Result<(), StoreError> {
    let last: BTreeMap<i64, &MetricSummary> = rows.iter().map(|(id, s)| (*id, s)).collect();
    let values: Vec<Vec<Val>> = last
        .into_iter()
        .map(|(id, s)| {
            Vec::from(vals![
                id,
                metric.name(),
                i64::try_from(s.n).unwrap_or(i64::MAX),
                s.median,
                s.lo,
                s.hi
            ])
        })
        .collect();
    insert_rows(
        db,
        "metric_summaries (benchmark_id, metric, n, median, lo, hi)",
        6,
        &values,
        Tail::Upsert(
            "(benchmark_id, metric) DO UPDATE SET n = excluded.n, median = excluded.median, \
             lo = excluded.lo, hi = excluded.hi",
        ),
    )
    .map(drop)
}

/// Inserts (or finds) the run's environment and its run row with `status`;
/// returns the run id.
pub(crate) fn insert_run<D: Backend + ?Sized>(
    db: &D,
    run: &Run,
    uuid: &str,
    status: RunStatus,
    ended_at: Option<&str>,
) -> Result<i64, StoreError> {
    insert_runs(
        db,
        &[NewRun {
            run,
            uuid,
            status,
            ended_at,
        }],
    )?
    .pop()
    .ok_or_else(|| StoreError::NotFound("inserted run".into()))
}

/// A run row to insert ([`insert_runs`]).
pub(crate) struct NewRun<'r> {
    pub(crate) run: &'r Run,
    pub(crate) uuid: &'r str,
    pub(crate) status: RunStatus,
    pub(crate) ended_at: Option<&'r str>,
}

/// Inserts (or finds) the runs' environments and inserts their run rows;
/// their ids, in order. A statement per 500 runs and one or two for their
/// machines, whatever their number: a batch of pushed runs cost two
/// statements a run. The UUIDs must differ.
pub(crate) fn insert_runs<D: Backend + ?Sized>(
    db: &D,
    runs: &[NewRun<'_>],
) -> Result<Vec<i64>, StoreError> {
    let place = db.location();
    let mut facts = Vec::with_capacity(runs.len());
    for r in runs {
        // Environment serialises as a BTreeMap, so this JSON is canonical.
        let stable = r.run.environment.only(&STABLE_CLASSES);
        facts.push(json(place, serde_json::to_string(&stable))?);
    }
    let env_ids = environment_ids(db, &facts)?;
    let mut rows = Vec::with_capacity(runs.len());
    for (r, env_id) in runs.iter().zip(env_ids) {
        let run = r.run;
        let context = run.environment.only(&[ImpactClass::Context]);
        let context = json(place, serde_json::to_string(&context))?;
        let options = json(place, serde_json::to_string(&run.options))?;
        let git = run.git.as_ref();
        rows.push(Vec::from(vals![
            run.started_at.as_str(),
            r.ended_at,
            r.status.as_str(),
            run.tool_version.as_str(),
            git.map(|g| g.commit.as_str()),
            git.and_then(|g| g.branch.as_deref()),
            git.map(|g| g.dirty),
            run.mode.as_str(),
            options,
            env_id,
            context,
            r.uuid,
            db.project(),
            run.options["bisect"]["id"].as_str(),
        ]));
    }
    let into = "runs (started_at, ended_at, status, tool_version, git_commit, git_branch, \
                git_dirty, mode, options, environment_id, context, uuid, project, bisection)";
    // Each id comes back with its UUID: the order of RETURNING rows is not
    // a promise either database makes.
    let mut ids: HashMap<String, i64> = HashMap::with_capacity(runs.len());
    for row in insert_rows(db, into, 14, &rows, Tail::Returning("id, uuid"))? {
        ids.insert(row.text(1)?, row.int(0)?);
    }
    runs.iter()
        .map(|r| {
            ids.get(r.uuid)
                .copied()
                .ok_or_else(|| StoreError::NotFound(format!("inserted run {}", r.uuid)))
        })
        .collect()
}

/// The ids of the environment rows of these stable facts (canonical JSON),
/// in order, inserting those not stored yet. Looked up first: a machine's
/// runs share one row, so after its first run the look-up is the only
/// statement.
fn environment_ids<D: Backend + ?Sized>(db: &D, facts: &[String]) -> Result<Vec<i64>, StoreError> {
    let hashes: Vec<String> = facts.iter().map(|f| sha256_hex(f.as_bytes())).collect();
    let mut distinct: Vec<(&str, &str)> = hashes
        .iter()
        .map(String::as_str)
        .zip(facts.iter().map(String::as_str))
        .collect();
    distinct.sort_unstable();
    distinct.dedup_by(|a, b| a.0 == b.0);
    let sql = format!(
        "SELECT hash, id FROM environments WHERE hash IN ({})",
        *crate::queries::ID_PLACEHOLDERS
    );
    let find = |wanted: &[(&str, &str)]| -> Result<HashMap<String, i64>, StoreError> {
        let hashes: Vec<&str> = wanted.iter().map(|(h, _)| *h).collect();
        let mut found = HashMap::new();
        for params in crate::queries::text_params(&hashes) {
            for row in db.query(&sql, &params)? {
                found.insert(row.text(0)?, row.int(1)?);
            }
        }
        Ok(found)
    };
    let mut found = find(&distinct)?;
    let missing: Vec<(&str, &str)> = distinct
        .into_iter()
        .filter(|(h, _)| !found.contains_key(*h))
        .collect();
    if !missing.is_empty() {
        let rows: Vec<Vec<Val>> = missing
            .iter()
            .map(|(h, f)| Vec::from(vals![*h, *f]))
            .collect();
        insert_rows(
            db,
            "environments (hash, facts)",
            2,
            &rows,
            Tail::Upsert("(hash) DO NOTHING"),
        )?;
        found.extend(find(&missing)?);
    }
    hashes
        .iter()
        .map(|h| {
            found
                .get(h)
                .copied()
                .ok_or_else(|| StoreError::NotFound(format!("environment {h}")))
        })
        .collect()
}

pub(crate) fn first_int(rows: &[Row]) -> Result<i64, StoreError> {
    rows.first()
        .ok_or_else(|| StoreError::NotFound("inserted row".into()))?
        .int(0)
}

/// The columns of a benchmark row, in [`benchmark_values`] order.
const BENCHMARK_COLUMNS: &str = "run_id, position, name, command, argv, parameters, facts, profile, \
    summaries, locks, stacks, allocs, binary_sha256";

/// Inserts a benchmark row at `position` and returns its id.
pub(crate) fn insert_benchmark<D: Backend + ?Sized>(
    db: &D,
    run_id: i64,
    position: i64,
    bench: &Benchmark,
) -> Result<i64, StoreError> {
    let rows = db.query(
        &format!(
            "INSERT INTO benchmarks ({BENCHMARK_COLUMNS}) VALUES ({}) RETURNING id",
            placeholders(0, 13)
        ),
        &benchmark_values(db.location(), run_id, position, bench)?,
    )?;
    first_int(&rows)
}

/// The values of one benchmark row, in [`BENCHMARK_COLUMNS`] order.
fn benchmark_values(
    place: &Path,
    run_id: i64,
    position: i64,
    bench: &Benchmark,
) -> Result<Vec<Val>, StoreError> {
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
    let stacks = json(place, bench.stacks.as_deref().map(stacks_json).transpose())?;
    let allocs = json(
        place,
        bench.allocs.as_ref().map(serde_json::to_string).transpose(),
    )?;
    Ok(Vec::from(vals![
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
        allocs,
        bench.facts.get("binary.sha256").map(str::to_string)
    ]))
}

/// `?first+1, …, ?first+n`: one row's placeholders.
fn placeholders(first: usize, n: usize) -> String {
    let mut out = String::with_capacity(n * 6);
    for i in first + 1..=first + n {
        if i > first + 1 {
            out.push_str(", ");
        }
        let _ = write!(out, "?{i}");
    }
    out
}

/// The `VALUES` list of `rows` rows of `width` placeholders each.
fn values_list(rows: usize, width: usize) -> String {
    let mut out = String::with_capacity(rows * (width * 7 + 4));
    for i in 0..rows {
        if i > 0 {
            out.push_str(", ");
        }
        out.push('(');
        out.push_str(&placeholders(i * width, width));
        out.push(')');
    }
    out
}

/// What follows the `VALUES` of [`insert_rows`]' statements.
enum Tail {
    /// Nothing: plain inserts.
    None,
    /// `RETURNING` these columns; the rows come back.
    Returning(&'static str),
    /// `ON CONFLICT` this target and action: rows already there are updated.
    Upsert(&'static str),
}

/// Inserts `rows` of `width` values each into `into` (`table (columns)`),
/// [`ROWS_PER_INSERT`] to a statement; with [`Tail::Returning`], the rows
/// that clause gives back, in the order the statements return them.
fn insert_rows<D: Backend + ?Sized>(
    db: &D,
    into: &str,
    width: usize,
    rows: &[Vec<Val>],
    tail: Tail,
) -> Result<Vec<Row>, StoreError> {
    let mut out = Vec::new();
    // The statement's text once per size of chunk (all but the last are
    // full): writing the placeholders of 500 rows anew for every chunk was
    // a fifth of an import's time.
    let mut texts: BTreeMap<usize, String> = BTreeMap::new();
    for chunk in rows.chunks(ROWS_PER_INSERT) {
        let mut sql = texts
            .entry(chunk.len())
            .or_insert_with(|| {
                format!(
                    "INSERT INTO {into} VALUES {}",
                    values_list(chunk.len(), width)
                )
            })
            .clone();
        let params: Vec<Val> = chunk.iter().flatten().cloned().collect();
        match tail {
            Tail::Returning(r) => {
                sql.push_str(" RETURNING ");
                sql.push_str(r);
                out.extend(db.query(&sql, &params)?);
            }
            Tail::Upsert(action) => {
                sql.push_str(" ON CONFLICT ");
                sql.push_str(action);
                db.execute(&sql, &params)?;
            }
            Tail::None => {
                db.execute(&sql, &params)?;
            }
        }
    }
    Ok(out)
}

/// Which benchmarks the samples given to [`insert_samples`] belong to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SamplesOf {
    /// Benchmarks this transaction inserted itself, whose ids it was just
    /// given back (an ingest, an import): no other writer can delete them
    /// before it commits, so their samples cannot lack one.
    NewBenchmarks,
    /// Benchmarks stored before (a run being measured).
    StoredBenchmarks,
}

/// Inserts sample rows ([`sample_values`]): by the backend's bulk path
/// where it has one (PostgreSQL's binary COPY), else by multi-row inserts.
/// PostgreSQL checks the samples' key on benchmarks once per statement
/// (schema 16); the samples of benchmarks this transaction inserted are let
/// through it (`perfsleuth.new_benchmarks`, for that statement alone), as
/// its check over the 500 000 samples of an import of 100 000 benchmarks
/// took 0.8 s of 3 and could not fail.
fn insert_samples<D: Backend + ?Sized>(
    db: &D,
    rows: &[Vec<Val>],
    of: SamplesOf,
) -> Result<(), StoreError> {
    let into = format!("samples ({SAMPLE_COLUMNS})");
    let vouched = of == SamplesOf::NewBenchmarks && db.dialect() == Dialect::Postgres;
    let new_benchmarks = |on: &str| {
        db.query(
            "SELECT set_config('perfsleuth.new_benchmarks', ?1, true)",
            &vals![on],
        )
        .map(drop)
    };
    if vouched {
        new_benchmarks("on")?;
    }
    let copied = db.copy_rows(&into, rows)?;
    if vouched {
        new_benchmarks("off")?;
    }
    if !copied {
        insert_rows(db, &into, 15, rows, Tail::None)?;
    }
    Ok(())
}

/// The values of one sample row, in [`SAMPLE_COLUMNS`] order.
pub(crate) fn sample_values(
    place: &Path,
    benchmark_id: i64,
    s: &Sample,
) -> Result<Vec<Val>, StoreError> {
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

/// Inserts probe result rows ([`probe_values`]), a few hundred a statement.
fn insert_probes<D: Backend + ?Sized>(db: &D, rows: &[Vec<Val>]) -> Result<(), StoreError> {
    let into = format!("probe_results ({PROBE_COLUMNS})");
    insert_rows(db, &into, 12, rows, Tail::None).map(drop)
}

/// The columns of a probe result row, in [`probe_values`] order.
const PROBE_COLUMNS: &str = "run_id, position, probe, metric, value, unit, lower_is_better, \
    cycles, spread, stable, headline, note";

/// The values of a probe result row, in [`PROBE_COLUMNS`] order.
fn probe_values(run_id: i64, position: i64, p: &ProbeResult) -> Vec<Val> {
    Vec::from(vals![
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
    ])
}

/// A profile's stacks as JSON, written into a buffer sized for them first:
/// an imported profile's text may be hundreds of megabytes, and a growing
/// one would be copied (and held twice) at each doubling.
pub(crate) fn stacks_json(stacks: &StackProfile) -> serde_json::Result<String> {
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

/// Sets one JSON column of a benchmark of this handle's project, once its
/// runs are done; `column` is one of ours, never user input.
pub(crate) fn set_benchmark_json<D: Backend + ?Sized>(
    db: &D,
    benchmark_id: i64,
    column: &'static str,
    text: serde_json::Result<String>,
) -> Result<(), StoreError> {
    let text = json(db.location(), text)?;
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

/// How often [`RunWriter::ingest_runs`] tries again after a concurrent
/// writer stored one of its runs first; more conflicts than this are not
/// that race, and are returned.
const INGEST_CONFLICT_RETRIES: usize = 3;

/// One run for [`RunWriter::ingest_runs`], with the summaries to cache with it.
#[derive(Debug, Clone, Copy)]
pub struct Incoming<'r> {
    /// The run, stored whole.
    pub run: &'r Run,
    /// The summaries of its benchmarks, by position (`None` or missing: none).
    pub summaries: &'r [Option<MetricSummary>],
}

/// One try of [`RunWriter::ingest_runs`]: `uuids[i]` is `runs[i]`'s;
/// `held_before` is set to how many of them the project held.
fn ingest_batch<D: Backend + ?Sized>(
    db: &D,
    runs: &[Incoming<'_>],
    uuids: &[String],
    metric: Metric,
    held_before: &mut usize,
) -> Result<Vec<Ingested>, StoreError> {
    let place = db.location();
    transaction(db, true, || {
        let asked: Vec<&str> = uuids.iter().map(String::as_str).collect();
        let held = runs_with_uuids(db, &asked)?;
        *held_before = held.len();
        // The place in `runs` of each new UUID's first run: a run given
        // twice is stored once.
        let mut first: HashMap<&str, usize> = HashMap::new();
        let mut fresh: Vec<usize> = Vec::new();
        for (i, uuid) in uuids.iter().enumerate() {
            if !held.contains_key(uuid) && !first.contains_key(uuid.as_str()) {
                first.insert(uuid, i);
                fresh.push(i);
            }
        }
        // Inserted in UUID order: two writers' overlapping batches then take
        // the UUID index's locks in one order and wait, not deadlock.
        fresh.sort_unstable_by(|&a, &b| uuids[a].cmp(&uuids[b]));
        let rows: Vec<NewRun<'_>> = fresh
            .iter()
            .map(|&i| NewRun {
                run: runs[i].run,
                uuid: &uuids[i],
                // A run still `running` where it came from is stored as it was sent.
                status: runs[i].run.status,
                ended_at: runs[i].run.ended_at.as_deref(),
            })
            .collect();
        let mut id_of: HashMap<&str, i64> = held.iter().map(|(u, &id)| (u.as_str(), id)).collect();
        // Each new run's id → its place in `runs`.
        let mut new: HashMap<i64, usize> = HashMap::with_capacity(fresh.len());
        for (&i, id) in fresh.iter().zip(insert_runs(db, &rows)?) {
            id_of.insert(&uuids[i], id);
            new.insert(id, i);
        }
        let mut out: Vec<Ingested> = Vec::with_capacity(runs.len());
        for (i, uuid) in uuids.iter().enumerate() {
            let created = first.get(uuid.as_str()) == Some(&i);
            out.push(Ingested {
                id: id_of
                    .get(uuid.as_str())
                    .copied()
                    .ok_or_else(|| StoreError::NotFound(format!("run {uuid}")))?,
                uuid: uuid.clone(),
                created,
                benchmark_ids: if created {
                    vec![0; runs[i].run.benchmarks.len()]
                } else {
                    Vec::new()
                },
            });
        }
        // A statement per few hundred rows for every new run together, not
        // one per benchmark or per run: what a run of 20 benchmarks, a
        // batch of pushed runs or an import of 100 000 costs.
        let mut benches = Vec::new();
        for (i, done) in out.iter().enumerate().filter(|(_, d)| d.created) {
            for (position, b) in runs[i].run.benchmarks.iter().enumerate() {
                benches.push(benchmark_values(place, done.id, position as i64, b)?);
            }
        }
        let into = format!("benchmarks ({BENCHMARK_COLUMNS})");
        // Each id comes back with its run and position: the order of
        // RETURNING rows is not a promise either database makes.
        for row in insert_rows(
            db,
            &into,
            13,
            &benches,
            Tail::Returning("id, run_id, position"),
        )? {
            let slot = new
                .get(&row.int(1)?)
                .and_then(|&i| {
                    let p = usize::try_from(row.int(2).ok()?).ok()?;
                    out[i].benchmark_ids.get_mut(p)
                })
                .ok_or_else(|| StoreError::NotFound("inserted benchmark".into()))?;
            *slot = row.int(0)?;
        }
        let mut samples = Vec::new();
        let mut cached: Vec<(i64, MetricSummary)> = Vec::new();
        let mut probes: Vec<Vec<Val>> = Vec::new();
        for (i, done) in out.iter().enumerate().filter(|(_, d)| d.created) {
            let run = runs[i].run;
            for (bench, &bench_id) in run.benchmarks.iter().zip(&done.benchmark_ids) {
                for s in &bench.samples {
                    samples.push(sample_values(place, bench_id, s)?);
                }
            }
            for (position, p) in run.probes.iter().enumerate() {
                probes.push(probe_values(done.id, position as i64, p));
            }
            cached.extend(
                done.benchmark_ids
                    .iter()
                    .zip(runs[i].summaries)
                    .filter_map(|(&id, s)| s.map(|s| (id, s))),
            );
        }
        insert_samples(db, &samples, SamplesOf::NewBenchmarks)?;
        insert_probes(db, &probes)?;
        if !cached.is_empty() {
            upsert_summaries(db, metric, &cached)?;
        }
        Ok(out)
    })
}

/// The next free `position` of run `run_id`'s rows in `table` (one of ours,
/// never user input); `NotFound` when the run does not exist in this project.
pub(crate) fn next_position<D: Backend + ?Sized>(
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
