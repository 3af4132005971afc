//! The SQLite backend's reads and writes: the [`Store`] trait for [`SqliteStore`].

use crate::error::{At, StoreError};
use crate::hash::{STABLE_CLASSES, comparability_hash, sha256_hex};
use crate::{HistoryEntry, MetricSummary, RunKind, RunListing, SqliteStore, Store};
use perfsleuth_model::{
    Benchmark, Environment, GitInfo, ImpactClass, Metric, Mode, ProbeResult, Profile, Run,
    RunStatus, Sample,
};
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::collections::BTreeMap;
use std::path::Path;

const INSERT_PROBE_RESULT: &str = "INSERT INTO probe_results (run_id, position, probe, metric, \
    value, unit, lower_is_better, cycles, spread, stable, headline, note) \
    VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12)";

const INSERT_SAMPLE: &str = "INSERT INTO samples (benchmark_id, iteration, wall_ns, user_ns, sys_ns, \
    peak_rss_bytes, minor_faults, major_faults, voluntary_cs, involuntary_cs, exit_code, signal, counters, \
    round, wall_exact_ns) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15)";

/// The SQL condition on `runs.options` that marks a `perfsleuth scale` sweep.
const SCALE_SWEEP: &str = "coalesce(json_extract(r.options, '$.kind'), '') = 'scale'";

/// Stores u64 counters in SQLite's i64; the bit pattern round-trips exactly.
fn to_i64(v: u64) -> i64 {
    v as i64
}

/// Inverse of [`to_i64`].
fn to_u64(v: i64) -> u64 {
    v as u64
}

impl RunKind {
    /// The SQL condition on `runs.mode` selecting this kind.
    fn condition(self) -> String {
        match self {
            RunKind::Any => "1".into(),
            RunKind::Benchmarks => "mode <> 'probe'".into(),
            RunKind::Probes => "mode = 'probe'".into(),
            RunKind::Like { mode, scale } => format!(
                "mode = '{}' AND (coalesce(json_extract(options, '$.kind'), '') = '{}') = {}",
                mode.as_str(),
                perfsleuth_model::SCALE_KIND,
                if scale { 1 } else { 0 }
            ),
        }
    }
}

impl Store for SqliteStore {
    fn begin_run(&mut self, run: &Run) -> Result<i64, StoreError> {
        let path = &self.path;
        let stable = run.environment.only(&STABLE_CLASSES);
        let context = run.environment.only(&[ImpactClass::Context]);
        // Environment serialises as a BTreeMap, so this JSON is canonical.
        let facts = serde_json::to_string(&stable).at(path)?;
        let context = serde_json::to_string(&context).at(path)?;
        let options = serde_json::to_string(&run.options).at(path)?;
        let hash = sha256_hex(facts.as_bytes());

        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .at(path)?;
        tx.execute(
            "INSERT INTO environments (hash, facts) VALUES (?1, ?2) ON CONFLICT (hash) DO NOTHING",
            params![hash, facts],
        )
        .at(path)?;
        let env_id: i64 = tx
            .query_row(
                "SELECT id FROM environments WHERE hash = ?1",
                [&hash],
                |r| r.get(0),
            )
            .at(path)?;
        let git = run.git.as_ref();
        tx.execute(
            "INSERT INTO runs (started_at, ended_at, status, tool_version, git_commit, git_branch, \
             git_dirty, mode, options, environment_id, context) \
             VALUES (?1, NULL, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            params![
                run.started_at,
                RunStatus::Running.as_str(),
                run.tool_version,
                git.map(|g| &g.commit),
                git.and_then(|g| g.branch.as_ref()),
                git.map(|g| g.dirty),
                run.mode.as_str(),
                options,
                env_id,
                context,
            ],
        )
        .at(path)?;
        let id = tx.last_insert_rowid();
        tx.commit().at(path)?;
        Ok(id)
    }

    fn add_benchmark(&mut self, run_id: i64, bench: &Benchmark) -> Result<i64, StoreError> {
        let path = &self.path;
        let argv = serde_json::to_string(&bench.argv).at(path)?;
        let parameters = serde_json::to_string(&bench.parameters).at(path)?;
        let facts = if bench.facts.facts.is_empty() {
            None
        } else {
            Some(serde_json::to_string(&bench.facts).at(path)?)
        };
        let profile = bench
            .profile
            .as_ref()
            .map(serde_json::to_string)
            .transpose()
            .at(path)?;
        let summaries = if bench.summaries.is_empty() {
            None
        } else {
            Some(serde_json::to_string(&bench.summaries).at(path)?)
        };
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .at(path)?;
        let position = next_position(&tx, path, run_id, "benchmarks")?;
        tx.execute(
            "INSERT INTO benchmarks (run_id, position, name, command, argv, parameters, facts, profile, \
             summaries) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            params![
                run_id,
                position,
                bench.name,
                bench.command,
                argv,
                parameters,
                facts,
                profile,
                summaries
            ],
        )
        .at(path)?;
        let id = tx.last_insert_rowid();
        tx.commit().at(path)?;
        Ok(id)
    }

    fn add_sample(&mut self, benchmark_id: i64, sample: &Sample) -> Result<(), StoreError> {
        // Hot path: one cached statement, one autocommit insert, JSON only when needed.
        let counters = if sample.counters.is_empty() {
            None
        } else {
            Some(serde_json::to_string(&sample.counters).at(&self.path)?)
        };
        let mut stmt = self.conn.prepare_cached(INSERT_SAMPLE).at(&self.path)?;
        stmt.execute(params![
            benchmark_id,
            sample.iteration,
            to_i64(sample.wall_ns),
            to_i64(sample.user_ns),
            to_i64(sample.sys_ns),
            to_i64(sample.peak_rss_bytes),
            to_i64(sample.minor_faults),
            to_i64(sample.major_faults),
            to_i64(sample.voluntary_cs),
            to_i64(sample.involuntary_cs),
            sample.exit_code,
            sample.signal,
            counters,
            sample.round,
            sample.wall_exact_ns,
        ])
        .at(&self.path)?;
        Ok(())
    }

    fn update_context(&mut self, run_id: i64, env: &Environment) -> Result<(), StoreError> {
        let context = serde_json::to_string(&env.only(&[ImpactClass::Context])).at(&self.path)?;
        let changed = self
            .conn
            .execute(
                "UPDATE runs SET context = ?1 WHERE id = ?2",
                params![context, run_id],
            )
            .at(&self.path)?;
        if changed == 0 {
            return Err(StoreError::NotFound(run_id.to_string()));
        }
        Ok(())
    }

    fn set_profile(&mut self, benchmark_id: i64, profile: &Profile) -> Result<(), StoreError> {
        let json = serde_json::to_string(profile).at(&self.path)?;
        let changed = self
            .conn
            .execute(
                "UPDATE benchmarks SET profile = ?1 WHERE id = ?2",
                params![json, benchmark_id],
            )
            .at(&self.path)?;
        if changed == 0 {
            return Err(StoreError::NotFound(format!("benchmark {benchmark_id}")));
        }
        Ok(())
    }

    fn add_probe_results(
        &mut self,
        run_id: i64,
        results: &[ProbeResult],
    ) -> Result<(), StoreError> {
        let path = &self.path;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .at(path)?;
        let first = next_position(&tx, path, run_id, "probe_results")?;
        {
            let mut stmt = tx.prepare_cached(INSERT_PROBE_RESULT).at(path)?;
            for (i, p) in results.iter().enumerate() {
                stmt.execute(params![
                    run_id,
                    first + i as i64,
                    p.probe,
                    p.metric,
                    p.value,
                    p.unit,
                    p.lower_is_better,
                    p.cycles,
                    p.spread,
                    p.stable,
                    p.headline,
                    p.note,
                ])
                .at(path)?;
            }
        }
        tx.commit().at(path)
    }

    fn finish_run(
        &mut self,
        run_id: i64,
        status: RunStatus,
        ended_at: &str,
    ) -> Result<(), StoreError> {
        let changed = self
            .conn
            .execute(
                "UPDATE runs SET status = ?1, ended_at = ?2 WHERE id = ?3",
                params![status.as_str(), ended_at, run_id],
            )
            .at(&self.path)?;
        if changed == 0 {
            return Err(StoreError::NotFound(run_id.to_string()));
        }
        Ok(())
    }

    fn load_run(&self, id: i64) -> Result<Option<Run>, StoreError> {
        let path = &self.path;
        // One read transaction, so a concurrent writer cannot show us half a state.
        let tx = self.conn.unchecked_transaction().at(path)?;
        let row = tx
            .query_row(
                "SELECT r.started_at, r.ended_at, r.status, r.tool_version, r.git_commit, \
                 r.git_branch, r.git_dirty, r.mode, r.options, e.facts, r.context \
                 FROM runs r JOIN environments e ON e.id = r.environment_id WHERE r.id = ?1",
                [id],
                |r| {
                    Ok(RunRow {
                        started_at: r.get(0)?,
                        ended_at: r.get(1)?,
                        status: r.get(2)?,
                        tool_version: r.get(3)?,
                        git_commit: r.get(4)?,
                        git_branch: r.get(5)?,
                        git_dirty: r.get(6)?,
                        mode: r.get(7)?,
                        options: r.get(8)?,
                        facts: r.get(9)?,
                        context: r.get(10)?,
                    })
                },
            )
            .optional()
            .at(path)?;
        let Some(row) = row else { return Ok(None) };

        let mut benchmarks = Vec::new();
        {
            let mut stmt = tx
                .prepare_cached(
                    "SELECT id, name, command, argv, parameters, facts, profile, summaries \
                     FROM benchmarks WHERE run_id = ?1 ORDER BY position",
                )
                .at(path)?;
            let rows = stmt
                .query_map([id], |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        r.get::<_, String>(3)?,
                        r.get::<_, String>(4)?,
                        r.get::<_, Option<String>>(5)?,
                        r.get::<_, Option<String>>(6)?,
                        r.get::<_, Option<String>>(7)?,
                    ))
                })
                .at(path)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .at(path)?;
            for (bench_id, name, command, argv, parameters, facts, profile, summaries) in rows {
                benchmarks.push(Benchmark {
                    name,
                    command,
                    argv: serde_json::from_str(&argv).at(path)?,
                    parameters: serde_json::from_str(&parameters).at(path)?,
                    facts: match facts {
                        Some(json) => serde_json::from_str(&json).at(path)?,
                        None => Environment::default(),
                    },
                    samples: load_samples(&tx, path, bench_id)?,
                    profile: profile
                        .map(|json| serde_json::from_str(&json))
                        .transpose()
                        .at(path)?,
                    summaries: match summaries {
                        Some(json) => serde_json::from_str(&json).at(path)?,
                        None => Vec::new(),
                    },
                });
            }
        }

        let probes = load_probe_results(&tx, path, id)?;
        let run = Run {
            id: Some(id),
            status: parse_status(path, id, &row.status)?,
            mode: parse_mode(path, id, &row.mode)?,
            git: git_info(row.git_commit, row.git_branch, row.git_dirty),
            options: serde_json::from_str(&row.options).at(path)?,
            environment: merged_environment(path, &row.facts, &row.context)?,
            started_at: row.started_at,
            ended_at: row.ended_at,
            tool_version: row.tool_version,
            benchmarks,
            probes,
        };
        Ok(Some(run))
    }

    fn list_runs(&self, limit: Option<usize>) -> Result<Vec<RunListing>, StoreError> {
        let path = &self.path;
        // SQLite treats a negative LIMIT as "no limit".
        let limit = limit.map_or(-1, |n| i64::try_from(n).unwrap_or(i64::MAX));
        let tx = self.conn.unchecked_transaction().at(path)?;
        let rows = {
            let mut stmt = tx
                .prepare_cached(
                    "SELECT r.id, r.started_at, r.ended_at, r.status, r.mode, r.git_commit, \
                     r.git_branch, r.git_dirty, e.facts, r.context \
                     FROM runs r JOIN environments e ON e.id = r.environment_id \
                     ORDER BY r.id DESC LIMIT ?1",
                )
                .at(path)?;
            stmt.query_map([limit], |r| {
                Ok(ListRow {
                    id: r.get(0)?,
                    started_at: r.get(1)?,
                    ended_at: r.get(2)?,
                    status: r.get(3)?,
                    mode: r.get(4)?,
                    git_commit: r.get(5)?,
                    git_branch: r.get(6)?,
                    git_dirty: r.get(7)?,
                    facts: r.get(8)?,
                    context: r.get(9)?,
                })
            })
            .at(path)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .at(path)?
        };
        let mut names = tx
            .prepare_cached("SELECT name FROM benchmarks WHERE run_id = ?1 ORDER BY position")
            .at(path)?;
        let mut count = tx
            .prepare_cached(
                "SELECT count(*) FROM samples WHERE benchmark_id IN \
                 (SELECT id FROM benchmarks WHERE run_id = ?1)",
            )
            .at(path)?;
        let mut probe_names = tx
            .prepare_cached(
                "SELECT probe FROM probe_results WHERE run_id = ?1 \
                 GROUP BY probe ORDER BY min(position)",
            )
            .at(path)?;
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let env = merged_environment(path, &row.facts, &row.context)?;
            let benchmarks = names
                .query_map([row.id], |r| r.get::<_, String>(0))
                .at(path)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .at(path)?;
            let samples: i64 = count.query_row([row.id], |r| r.get(0)).at(path)?;
            let probes = probe_names
                .query_map([row.id], |r| r.get::<_, String>(0))
                .at(path)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .at(path)?;
            out.push(RunListing {
                id: row.id,
                status: parse_status(path, row.id, &row.status)?,
                mode: parse_mode(path, row.id, &row.mode)?,
                git: git_info(row.git_commit, row.git_branch, row.git_dirty),
                started_at: row.started_at,
                ended_at: row.ended_at,
                benchmarks,
                samples: to_u64(samples),
                cpu_model: env.get("cpu.model").map(str::to_string),
                host: env.get("host.name").map(str::to_string),
                comparability: comparability_hash(&env),
                probes,
            });
        }
        Ok(out)
    }

    fn resolve_run_of(&self, spec: &str, kind: RunKind) -> Result<i64, StoreError> {
        let path = &self.path;
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
        let found: Option<i64> = match back {
            Some(n) if n < 0 => return Err(not_found()),
            Some(n) => self
                .conn
                .query_row(
                    &format!(
                        "SELECT id FROM runs WHERE {} ORDER BY id DESC LIMIT 1 OFFSET ?1",
                        kind.condition()
                    ),
                    [n],
                    |r| r.get(0),
                )
                .optional()
                .at(path)?,
            None => {
                let id: i64 = spec_t.parse().map_err(|_| not_found())?;
                self.conn
                    .query_row("SELECT id FROM runs WHERE id = ?1", [id], |r| r.get(0))
                    .optional()
                    .at(path)?
            }
        };
        found.ok_or_else(not_found)
    }

    fn runs_at_commit(&self, commit: &str) -> Result<Vec<i64>, StoreError> {
        self.ids(
            "SELECT id FROM runs WHERE git_commit = ?1 AND status = 'complete' \
             AND mode <> 'probe' ORDER BY id DESC",
            commit,
        )
    }

    fn runs_on_branch(&self, branch: &str) -> Result<Vec<i64>, StoreError> {
        self.ids(
            "SELECT id FROM runs WHERE git_branch = ?1 AND status = 'complete' \
             AND mode <> 'probe' ORDER BY id DESC",
            branch,
        )
    }

    fn run_before_of(&self, id: i64, kind: RunKind) -> Result<Option<i64>, StoreError> {
        self.conn
            .query_row(
                &format!(
                    "SELECT id FROM runs WHERE id < ?1 AND {} ORDER BY id DESC LIMIT 1",
                    kind.condition()
                ),
                [id],
                |r| r.get(0),
            )
            .optional()
            .at(&self.path)
    }

    fn same_binary_runs(
        &self,
        hash: &str,
        argv: &[String],
        mode: Mode,
        env: &Environment,
        limit: usize,
    ) -> Result<Vec<Run>, StoreError> {
        let path = &self.path;
        let wanted = comparability_hash(env);
        let argv_json = serde_json::to_string(argv).at(path)?;
        // The hash is matched as text first (an index-free scan of one
        // column), then checked exactly on the decoded facts.
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT b.run_id, b.facts, e.facts FROM benchmarks b \
                 JOIN runs r ON r.id = b.run_id JOIN environments e ON e.id = r.environment_id \
                 WHERE r.status = 'complete' AND r.mode = ?1 AND b.argv = ?2 \
                 AND b.facts LIKE ?3 ORDER BY b.run_id DESC, b.position",
            )
            .at(path)?;
        let rows = stmt
            .query_map(
                params![mode.as_str(), argv_json, format!("%{hash}%")],
                |r| {
                    Ok((
                        r.get::<_, i64>(0)?,
                        r.get::<_, Option<String>>(1)?,
                        r.get::<_, String>(2)?,
                    ))
                },
            )
            .at(path)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .at(path)?;
        let mut out: Vec<Run> = Vec::new();
        for (run_id, facts, env_facts) in rows {
            if out.len() >= limit || out.iter().any(|r| r.id == Some(run_id)) {
                continue;
            }
            let facts: Environment = match facts {
                Some(f) => serde_json::from_str(&f).at(path)?,
                None => continue,
            };
            if facts.get("binary.sha256") != Some(hash) {
                continue;
            }
            let machine: Environment = serde_json::from_str(&env_facts).at(path)?;
            if comparability_hash(&machine) != wanted {
                continue;
            }
            let Some(mut run) = self.load_run(run_id)? else {
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

    fn history_entries(&self) -> Result<Vec<HistoryEntry>, StoreError> {
        let path = &self.path;
        let tx = self.conn.unchecked_transaction().at(path)?;
        let mut stmt = tx
            .prepare_cached(&format!(
                "SELECT b.id, b.run_id, r.started_at, r.git_commit, r.git_branch, r.git_dirty, \
                 r.mode, r.environment_id, b.name, b.parameters FROM runs r \
                 JOIN benchmarks b ON b.run_id = r.id \
                 WHERE r.status = 'complete' AND r.mode <> 'probe' AND NOT ({}) \
                 ORDER BY r.id, b.position",
                SCALE_SWEEP
            ))
            .at(path)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, i64>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, Option<String>>(3)?,
                    r.get::<_, Option<String>>(4)?,
                    r.get::<_, Option<bool>>(5)?,
                    r.get::<_, String>(6)?,
                    r.get::<_, i64>(7)?,
                    r.get::<_, String>(8)?,
                    r.get::<_, String>(9)?,
                ))
            })
            .at(path)?;
        let mut out = Vec::new();
        for row in rows {
            let (benchmark_id, run_id, started_at, commit, branch, dirty, mode, env, name, params) =
                row.at(path)?;
            out.push(HistoryEntry {
                benchmark_id,
                run_id,
                started_at,
                git: git_info(commit, branch, dirty),
                mode: parse_mode(path, run_id, &mode)?,
                environment_id: env,
                name,
                parameters: serde_json::from_str(&params).at(path)?,
            });
        }
        Ok(out)
    }

    fn metric_values(
        &self,
        benchmark_ids: &[i64],
        metric: Metric,
    ) -> Result<Vec<Vec<f64>>, StoreError> {
        let path = &self.path;
        let column = match metric {
            Metric::Wall => "coalesce(wall_exact_ns, wall_ns)",
            Metric::User => "user_ns",
            Metric::Sys => "sys_ns",
            Metric::PeakRss => "peak_rss_bytes",
            Metric::MinorFaults => "minor_faults",
            Metric::MajorFaults => "major_faults",
            Metric::VoluntaryCs => "voluntary_cs",
            Metric::InvoluntaryCs => "involuntary_cs",
            Metric::Counter(_) => "counters",
        };
        let tx = self.conn.unchecked_transaction().at(path)?;
        // The samples table is clustered by (benchmark_id, iteration), so
        // each benchmark's values are one range read of its primary key.
        let mut stmt = tx
            .prepare_cached(&format!(
                "SELECT {column} FROM samples WHERE benchmark_id = ?1 ORDER BY iteration"
            ))
            .at(path)?;
        let mut out = Vec::with_capacity(benchmark_ids.len());
        for id in benchmark_ids {
            let mut rows = stmt.query([id]).at(path)?;
            let mut values = Vec::new();
            while let Some(row) = rows.next().at(path)? {
                let v = match metric {
                    Metric::Counter(c) => match row.get::<_, Option<String>>(0).at(path)? {
                        Some(json) => {
                            let raw: BTreeMap<String, Option<f64>> =
                                serde_json::from_str(&json).at(path)?;
                            raw.get(c.key).copied().flatten().unwrap_or(f64::NAN)
                        }
                        None => f64::NAN,
                    },
                    // SQLite hands back a REAL for a sample with a
                    // fractional wall time and an INTEGER otherwise.
                    Metric::Wall => match row.get_ref(0).at(path)? {
                        rusqlite::types::ValueRef::Real(f) => f,
                        _ => to_u64(row.get::<_, i64>(0).at(path)?) as f64,
                    },
                    _ => to_u64(row.get::<_, i64>(0).at(path)?) as f64,
                };
                values.push(v);
            }
            out.push(values);
        }
        Ok(out)
    }

    fn metric_summaries(
        &self,
        benchmark_ids: &[i64],
        metric: Metric,
    ) -> Result<Vec<Option<MetricSummary>>, StoreError> {
        let path = &self.path;
        let tx = self.conn.unchecked_transaction().at(path)?;
        let mut stmt = tx
            .prepare_cached(
                "SELECT n, median, lo, hi FROM metric_summaries \
                 WHERE benchmark_id = ?1 AND metric = ?2",
            )
            .at(path)?;
        let mut out = Vec::with_capacity(benchmark_ids.len());
        for id in benchmark_ids {
            let row = stmt
                .query_row(params![id, metric.name()], |r| {
                    // SQLite keeps NaN as NULL.
                    let f = |v: Option<f64>| v.unwrap_or(f64::NAN);
                    Ok(MetricSummary {
                        n: r.get::<_, i64>(0)? as usize,
                        median: f(r.get(1)?),
                        lo: f(r.get(2)?),
                        hi: f(r.get(3)?),
                    })
                })
                .optional()
                .at(path)?;
            out.push(row);
        }
        Ok(out)
    }

    fn put_metric_summaries(
        &mut self,
        metric: Metric,
        rows: &[(i64, MetricSummary)],
    ) -> Result<(), StoreError> {
        let path = &self.path;
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .at(path)?;
        {
            let mut stmt = tx
                .prepare_cached(
                    "INSERT OR REPLACE INTO metric_summaries (benchmark_id, metric, n, median, lo, hi) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                )
                .at(path)?;
            for (id, s) in rows {
                stmt.execute(params![id, metric.name(), s.n as i64, s.median, s.lo, s.hi])
                    .at(path)?;
            }
        }
        tx.commit().at(path)
    }

    fn environments(&self, ids: &[i64]) -> Result<BTreeMap<i64, Environment>, StoreError> {
        let path = &self.path;
        let mut stmt = self
            .conn
            .prepare_cached("SELECT facts FROM environments WHERE id = ?1")
            .at(path)?;
        let mut out = BTreeMap::new();
        for &id in ids {
            if out.contains_key(&id) {
                continue;
            }
            let facts: Option<String> = stmt.query_row([id], |r| r.get(0)).optional().at(path)?;
            if let Some(facts) = facts {
                out.insert(id, serde_json::from_str(&facts).at(path)?);
            }
        }
        Ok(out)
    }

    fn latest_probe_run_for(&self, env: &Environment) -> Result<Option<i64>, StoreError> {
        let path = &self.path;
        let stable = serde_json::to_string(&env.only(&STABLE_CLASSES)).at(path)?;
        let exact = sha256_hex(stable.as_bytes());
        let wanted = comparability_hash(env);
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT r.id, e.hash, e.facts FROM runs r JOIN environments e ON e.id = r.environment_id \
                 WHERE EXISTS (SELECT 1 FROM probe_results p WHERE p.run_id = r.id) \
                 ORDER BY r.id DESC",
            )
            .at(path)?;
        let rows = stmt
            .query_map([], |r| {
                Ok((
                    r.get::<_, i64>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                ))
            })
            .at(path)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .at(path)?;
        if let Some((id, _, _)) = rows.iter().find(|(_, hash, _)| *hash == exact) {
            return Ok(Some(*id));
        }
        for (id, _, facts) in rows {
            let facts: Environment = serde_json::from_str(&facts).at(path)?;
            if comparability_hash(&facts) == wanted {
                return Ok(Some(id));
            }
        }
        Ok(None)
    }
}

impl SqliteStore {
    fn ids(&self, sql: &str, arg: &str) -> Result<Vec<i64>, StoreError> {
        let mut stmt = self.conn.prepare_cached(sql).at(&self.path)?;
        let rows = stmt.query_map([arg], |r| r.get(0)).at(&self.path)?;
        rows.collect::<rusqlite::Result<Vec<i64>>>().at(&self.path)
    }
}

/// Raw columns of one run, decoded after the query so JSON errors keep their type.
struct RunRow {
    started_at: String,
    ended_at: Option<String>,
    status: String,
    tool_version: String,
    git_commit: Option<String>,
    git_branch: Option<String>,
    git_dirty: Option<bool>,
    mode: String,
    options: String,
    facts: String,
    context: String,
}

/// Raw columns of one `list_runs` row.
struct ListRow {
    id: i64,
    started_at: String,
    ended_at: Option<String>,
    status: String,
    mode: String,
    git_commit: Option<String>,
    git_branch: Option<String>,
    git_dirty: Option<bool>,
    facts: String,
    context: String,
}

/// The next free `position` of run `run_id`'s rows in `table` (one of ours,
/// never user input); `NotFound` when the run does not exist.
fn next_position(
    tx: &rusqlite::Transaction<'_>,
    path: &Path,
    run_id: i64,
    table: &'static str,
) -> Result<i64, StoreError> {
    let exists: bool = tx
        .query_row(
            "SELECT EXISTS (SELECT 1 FROM runs WHERE id = ?1)",
            [run_id],
            |r| r.get(0),
        )
        .at(path)?;
    if !exists {
        return Err(StoreError::NotFound(run_id.to_string()));
    }
    tx.query_row(
        &format!("SELECT coalesce(max(position) + 1, 0) FROM {table} WHERE run_id = ?1"),
        [run_id],
        |r| r.get(0),
    )
    .at(path)
}

/// Loads one benchmark's samples in iteration order.
fn load_samples(conn: &Connection, path: &Path, bench_id: i64) -> Result<Vec<Sample>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT iteration, wall_ns, user_ns, sys_ns, peak_rss_bytes, minor_faults, \
             major_faults, voluntary_cs, involuntary_cs, exit_code, signal, counters, round, \
             wall_exact_ns FROM samples WHERE benchmark_id = ?1 ORDER BY iteration",
        )
        .at(path)?;
    let rows = stmt
        .query_map([bench_id], |r| {
            Ok((
                Sample {
                    iteration: r.get(0)?,
                    wall_ns: to_u64(r.get(1)?),
                    user_ns: to_u64(r.get(2)?),
                    sys_ns: to_u64(r.get(3)?),
                    peak_rss_bytes: to_u64(r.get(4)?),
                    minor_faults: to_u64(r.get(5)?),
                    major_faults: to_u64(r.get(6)?),
                    voluntary_cs: to_u64(r.get(7)?),
                    involuntary_cs: to_u64(r.get(8)?),
                    exit_code: r.get(9)?,
                    signal: r.get(10)?,
                    round: r.get(12)?,
                    wall_exact_ns: r.get(13)?,
                    counters: BTreeMap::new(),
                },
                r.get::<_, Option<String>>(11)?,
            ))
        })
        .at(path)?;
    let mut out = Vec::new();
    for row in rows {
        let (mut sample, counters) = row.at(path)?;
        if let Some(json) = counters {
            // serde_json writes non-finite floats as null; read them back as NaN.
            let raw: BTreeMap<String, Option<f64>> = serde_json::from_str(&json).at(path)?;
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
/// written) load as NaN.
fn load_probe_results(
    conn: &Connection,
    path: &Path,
    run_id: i64,
) -> Result<Vec<ProbeResult>, StoreError> {
    let mut stmt = conn
        .prepare_cached(
            "SELECT probe, metric, value, unit, lower_is_better, cycles, spread, stable, \
             headline, note FROM probe_results WHERE run_id = ?1 ORDER BY position",
        )
        .at(path)?;
    let rows = stmt
        .query_map([run_id], |r| {
            Ok(ProbeResult {
                probe: r.get(0)?,
                metric: r.get(1)?,
                value: r.get::<_, Option<f64>>(2)?.unwrap_or(f64::NAN),
                unit: r.get(3)?,
                lower_is_better: r.get(4)?,
                cycles: r.get(5)?,
                spread: r.get::<_, Option<f64>>(6)?.unwrap_or(f64::NAN),
                stable: r.get(7)?,
                headline: r.get(8)?,
                note: r.get(9)?,
            })
        })
        .at(path)?;
    rows.collect::<rusqlite::Result<Vec<_>>>().at(path)
}

/// Rebuilds the full environment from the shared env row and the run's context facts.
fn merged_environment(path: &Path, facts: &str, context: &str) -> Result<Environment, StoreError> {
    let mut env: Environment = serde_json::from_str(facts).at(path)?;
    let context: Environment = serde_json::from_str(context).at(path)?;
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

fn parse_status(path: &Path, id: i64, s: &str) -> Result<RunStatus, StoreError> {
    RunStatus::parse(s).ok_or_else(|| StoreError::Corrupt {
        path: path.to_path_buf(),
        detail: format!("run {id} has unknown status {s:?}"),
    })
}

fn parse_mode(path: &Path, id: i64, s: &str) -> Result<Mode, StoreError> {
    Mode::parse(s).ok_or_else(|| StoreError::Corrupt {
        path: path.to_path_buf(),
        detail: format!("run {id} has unknown mode {s:?}"),
    })
}
