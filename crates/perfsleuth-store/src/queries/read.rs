//! Reading runs back: whole runs, their listings, the selectors that name
//! them (ids, `latest~N`, commits, branches), and the history across runs
//! (series of a metric, their summaries, the same-binary runs the noise is
//! learned from, environments over time).

use crate::EarlierRun;
use crate::EntryScope;
use crate::HistoryEntry;
use crate::MetricSummary;
use crate::RunKind;
use crate::RunListing;
use crate::error::StoreError;
use crate::hash::STABLE_CLASSES;
use crate::hash::comparability_hash;
use crate::hash::sha256_hex;
use crate::queries::Backend;
use crate::queries::id_lists;
use crate::queries::json;
use crate::queries::load::Listed;
use crate::queries::load::git_info;
use crate::queries::load::ids;
use crate::queries::load::listings;
use crate::queries::load::merged_environment;
use crate::queries::load::parse_mode;
use crate::queries::load::read_run;
use crate::queries::load::run_with_uuid;
use crate::queries::load::runs_with_benchmarks;
use crate::queries::to_u64;
use crate::queries::write::first_int;
use crate::sql::Row;
use crate::sql::Val;
use crate::sql::transaction;
use crate::sql::vals;
use perfsleuth_model::Environment;
use perfsleuth_model::Metric;
use perfsleuth_model::Mode;
use perfsleuth_model::Run;
use perfsleuth_model::schema::BisectionListing;
use perfsleuth_model::schema::BisectionRun;
use perfsleuth_model::schema::RunFilter;
use std::collections::BTreeMap;

/// Runs back, newest first, in which [`RunReader::same_binary_runs`]
/// looks for the same program: the noise of a benchmark is learned from
/// its runs among the project's newest 2 000.
pub const SAME_BINARY_WINDOW: usize = 2_000;

/// Runs read per statement by [`RunReader::list_runs_matching`]: a page
/// within a few milliseconds, few statements for a whole listing.
pub const LIST_PAGE: usize = 500;

/// `LIMIT n`, or nothing for no limit: a number formatted here, as both
/// databases take a literal LIMIT while "no limit" is spelled differently
/// as a parameter.
fn limit_clause(limit: Option<usize>) -> String {
    limit.map_or(String::new(), |n| {
        format!("LIMIT {}", i64::try_from(n).unwrap_or(i64::MAX))
    })
}

/// That benchmark `b` belongs to a run of the project `?1`, checked by its
/// run's primary key, so a plan starts at the benchmarks asked for.
const OWNED: &str = "(SELECT r.project FROM runs r WHERE r.id = b.run_id) = ?1";

/// Reading runs: loading, listing, selecting and the history across them.
pub trait RunReader: Backend {
    /// The id of the project's run with this UUID.
    fn run_by_uuid(&self, uuid: &str) -> Result<Option<i64>, StoreError> {
        run_with_uuid(self, uuid)
    }

    /// The ids of the project's runs among `uuids`, by UUID (those it lacks
    /// are absent): one statement per 500 UUIDs.
    fn runs_by_uuids(&self, uuids: &[&str]) -> Result<BTreeMap<String, i64>, StoreError> {
        crate::queries::load::runs_with_uuids(self, uuids)
    }

    /// Loads a whole run: environment merged from its env row and context, benchmarks in insertion order, samples in iteration order, probe results in the order stored; `Ok(None)` if no such id.
    fn load_run(&self, id: i64) -> Result<Option<Run>, StoreError> {
        read_run(self, id, true)
    }

    /// [`Self::load_run`] without the sampled profiles (`stacks` and
    /// `allocs` are `None`): for what reads the measurements or the
    /// environment only, where a large profile would cost seconds.
    fn load_run_measurements(&self, id: i64) -> Result<Option<Run>, StoreError> {
        read_run(self, id, false)
    }

    /// Lists runs newest first, at most `limit` of them.
    fn list_runs(&self, limit: Option<usize>) -> Result<Vec<RunListing>, StoreError> {
        listings(self, Listed::All, &limit_clause(limit))
    }

    /// A page of the listing: the runs stored before run `before`, newest
    /// first, at most `limit` — read by the (project, id) index, so a page
    /// deep in a long history costs what the first one does.
    fn list_runs_before(
        &self,
        before: i64,
        limit: Option<usize>,
    ) -> Result<Vec<RunListing>, StoreError> {
        listings(self, Listed::Before(before), &limit_clause(limit))
    }

    /// The newest `limit` runs `filter` keeps, of those stored before run
    /// `before` when given: read [`LIST_PAGE`] runs at a time until enough
    /// are kept, so what is held follows the answer, not the store (a
    /// filter that keeps nothing still reads every page, one at a time).
    fn list_runs_matching(
        &self,
        filter: &RunFilter,
        before: Option<i64>,
        limit: usize,
    ) -> Result<Vec<RunListing>, StoreError> {
        let mut out = Vec::new();
        let mut before = before;
        while out.len() < limit {
            // Unfiltered, a page is the answer: read no more than it needs.
            let page = if filter.is_empty() {
                (limit - out.len()).min(LIST_PAGE)
            } else {
                LIST_PAGE
            };
            let list = match before {
                None => self.list_runs(Some(page))?,
                Some(id) => self.list_runs_before(id, Some(page))?,
            };
            let last_page = list.len() < page;
            before = list.last().map(|r| r.id);
            out.extend(list.into_iter().filter(|r| filter.keeps(r)));
            if last_page || before.is_none() {
                break;
            }
        }
        out.truncate(limit);
        Ok(out)
    }

    /// The listing of one run of the project.
    fn run_listing(&self, id: i64) -> Result<Option<RunListing>, StoreError> {
        Ok(listings(self, Listed::Run(id), "")?.pop())
    }

    /// The runs measured for bisection `id`, in the order measured, each
    /// with its step; empty when no run of it is stored.
    fn bisection_runs(&self, id: &str) -> Result<Vec<BisectionRun>, StoreError> {
        let place = self.location();
        let mut tags = BTreeMap::new();
        for row in self.query(
            "SELECT id, options FROM runs WHERE project = ?1 AND bisection = ?2",
            &vals![self.project(), id],
        )? {
            let options: serde_json::Value = json(place, serde_json::from_str(&row.text(1)?))?;
            let tag = &options["bisect"];
            let kind = tag["kind"].as_str().unwrap_or("").to_string();
            tags.insert(row.int(0)?, (tag["step"].as_u64().unwrap_or(0), kind));
        }
        let mut runs: Vec<BisectionRun> = listings(self, Listed::Bisection(id), "")?
            .into_iter()
            .filter_map(|run| {
                let (step, kind) = tags.remove(&run.id)?;
                Some(BisectionRun { step, kind, run })
            })
            .collect();
        runs.sort_by_key(|r| (r.step, r.run.id));
        Ok(runs)
    }

    /// The newest `limit` bisections with stored runs, newest first.
    fn bisections(&self, limit: usize) -> Result<Vec<BisectionListing>, StoreError> {
        let place = self.location();
        let rows = self.query(
            &format!(
                "SELECT bisection, count(*), min(started_at), max(started_at), min(id) FROM runs \
                 WHERE project = ?1 AND bisection IS NOT NULL GROUP BY bisection \
                 ORDER BY max(started_at) DESC LIMIT {}",
                i64::try_from(limit).unwrap_or(i64::MAX)
            ),
            &vals![self.project()],
        )?;
        // The range's ends, from each bisection's first run's tag, in one
        // query for all of them (ids we hold as integers, formatted).
        let firsts = rows
            .iter()
            .map(|r| r.int(4).map(|id| id.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        let mut tags = BTreeMap::new();
        if !firsts.is_empty() {
            for r in self.query(
                &format!(
                    "SELECT id, options FROM runs WHERE id IN ({})",
                    firsts.join(", ")
                ),
                &[],
            )? {
                let options: serde_json::Value = json(place, serde_json::from_str(&r.text(1)?))?;
                tags.insert(r.int(0)?, options);
            }
        }
        let mut out = Vec::with_capacity(rows.len());
        for row in rows {
            let options = tags.get(&row.int(4)?);
            let end = |k: &str| options.and_then(|o| o["bisect"][k].as_str().map(str::to_string));
            out.push(BisectionListing {
                id: row.text(0)?,
                baseline: end("baseline"),
                candidate: end("candidate"),
                runs: to_u64(row.int(1)?),
                started_at: row.text(2)?,
                last_at: row.text(3)?,
            });
        }
        Ok(out)
    }

    /// Resolves "latest", "latest~N" (the N-th run before the latest) or a numeric id to a run id.
    fn resolve_run(&self, spec: &str) -> Result<i64, StoreError> {
        self.resolve_run_of(spec, RunKind::Any)
    }

    /// Like [`Self::resolve_run`], but `latest` and `latest~N` count only
    /// runs of `kind`; a numeric id names any run.
    fn resolve_run_of(&self, spec: &str, kind: RunKind) -> Result<i64, StoreError> {
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
            Some(n) => self.query(
                &format!(
                    "SELECT r.id FROM runs r WHERE r.project = ?1 AND {} \
                     ORDER BY r.started_at DESC, r.id DESC LIMIT 1 OFFSET {n}",
                    kind.condition(self.dialect(), "r")
                ),
                &vals![self.project()],
            )?,
            None => {
                let id: i64 = spec_t.parse().map_err(|_| not_found())?;
                self.query(
                    "SELECT id FROM runs WHERE id = ?1 AND project = ?2",
                    &vals![id, self.project()],
                )?
            }
        };
        rows.first()
            .map(|r| r.int(0))
            .transpose()?
            .ok_or_else(not_found)
    }

    /// Complete runs of commands (not `probe` runs) made at this git commit
    /// (full hash), newest first.
    fn runs_at_commit(&self, commit: &str) -> Result<Vec<i64>, StoreError> {
        ids(
            self,
            "SELECT id FROM runs WHERE git_commit = ?1 AND status = 'complete' \
             AND mode <> 'probe' AND project = ?2 ORDER BY id DESC",
            &vals![commit, self.project()],
        )
    }

    /// Complete runs of commands (not `probe` runs) made on this git branch, newest first.
    fn runs_on_branch(&self, branch: &str) -> Result<Vec<i64>, StoreError> {
        ids(
            self,
            "SELECT id FROM runs WHERE git_branch = ?1 AND status = 'complete' \
             AND mode <> 'probe' AND project = ?2 ORDER BY id DESC",
            &vals![branch, self.project()],
        )
    }

    /// The newest run stored before run `id`, if any.
    fn run_before(&self, id: i64) -> Result<Option<i64>, StoreError> {
        self.run_before_of(id, RunKind::Any)
    }

    /// The newest run of `kind` stored before run `id`, if any.
    fn run_before_of(&self, id: i64, kind: RunKind) -> Result<Option<i64>, StoreError> {
        Ok(ids(
            self,
            &format!(
                "SELECT r.id FROM runs r WHERE r.project = ?2 AND {} \
                 AND (r.started_at < (SELECT started_at FROM runs WHERE id = ?1) \
                 OR (r.started_at = (SELECT started_at FROM runs WHERE id = ?1) AND r.id < ?1)) \
                 ORDER BY r.started_at DESC, r.id DESC LIMIT 1",
                kind.condition(self.dialect(), "r")
            ),
            &vals![id, self.project()],
        )?
        .first()
        .copied())
    }

    /// Every run of `kind` stored before run `before` (all of them with
    /// `None`), newest first, with its branch and benchmark names: what the
    /// default baseline is chosen from, in one query. At most `limit` runs
    /// when given: the newest stored, by the (project, id) index, not by time.
    fn earlier_runs(
        &self,
        before: Option<i64>,
        kind: RunKind,
        limit: Option<usize>,
    ) -> Result<Vec<EarlierRun>, StoreError> {
        // Measured before run `id` (ties: stored before it), newest first.
        let below = |r: &str| match before {
            Some(id) => format!(
                "AND ({r}.started_at < (SELECT started_at FROM runs WHERE id = {id}) \
                 OR ({r}.started_at = (SELECT started_at FROM runs WHERE id = {id}) AND {r}.id < {id}))"
            ),
            None => String::new(),
        };
        let condition = |r: &str| kind.condition(self.dialect(), r);
        let columns = "SELECT r.id, r.git_branch, b.name, r.started_at FROM runs r \
                       LEFT JOIN benchmarks b ON b.run_id = r.id";
        // By id here, by start time below: ordered by start time, the
        // planner walked the start-time index (schema 15) over every run of
        // the project to spare a sort of a few hundred rows (20 ms of a
        // project page at 100 000 runs).
        let order = "ORDER BY r.id, b.position";
        let rows = match limit {
            None => self.query(
                &format!(
                    "{columns} WHERE r.project = ?1 AND {} {} {order}",
                    condition("r"),
                    below("r")
                ),
                &vals![self.project()],
            )?,
            // With a limit, the window's ids first, then their rows by those
            // ids (as a join from the window subquery the plan took 6 s).
            Some(n) => {
                let window = ids(
                    self,
                    &format!(
                        "SELECT w.id FROM runs w WHERE w.project = ?1 AND {} {} \
                         ORDER BY w.id DESC LIMIT {n}",
                        condition("w"),
                        below("w")
                    ),
                    &vals![self.project()],
                )?;
                let mut rows = Vec::new();
                for list in id_lists(&window) {
                    rows.extend(self.query(
                        &format!("{columns} WHERE r.id IN ({list}) AND r.project = ?1 {order}"),
                        &vals![self.project()],
                    )?);
                }
                rows
            }
        };
        let mut out: Vec<EarlierRun> = Vec::new();
        for row in rows {
            let id = row.int(0)?;
            if out.last().is_none_or(|r| r.id != id) {
                out.push(EarlierRun {
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
        // Newest first: by start time, then id.
        out.sort_by(|a, b| (&b.started_at, b.id).cmp(&(&a.started_at, a.id)));
        Ok(out)
    }

    /// Runs that measured the same program on the same kind of machine: the
    /// newest (at most `limit`) complete runs in `mode` on a machine with
    /// `env`'s [`comparability_hash`] that contain a benchmark whose
    /// `binary.sha256` is `hash` and whose argv is `argv`, among the
    /// project's newest [`SAME_BINARY_WINDOW`] runs. Each run is returned
    /// with that benchmark only (its first occurrence).
    fn same_binary_runs(
        &self,
        hash: &str,
        argv: &[String],
        mode: Mode,
        env: &Environment,
        limit: usize,
    ) -> Result<Vec<Run>, StoreError> {
        let mut all = self.same_binary_runs_of(&[(hash, argv)], mode, env, limit)?;
        Ok(all.pop().unwrap_or_default())
    }

    /// [`Self::same_binary_runs`] of several programs (hash, argv) at once,
    /// in their order: a few statements for all of a run's benchmarks, not
    /// a few for each.
    fn same_binary_runs_of(
        &self,
        programs: &[(&str, &[String])],
        mode: Mode,
        env: &Environment,
        limit: usize,
    ) -> Result<Vec<Vec<Run>>, StoreError> {
        let place = self.location();
        if programs.is_empty() {
            return Ok(Vec::new());
        }
        let wanted = comparability_hash(env);
        let argvs = programs
            .iter()
            .map(|(_, argv)| json(place, serde_json::to_string(argv)))
            .collect::<Result<Vec<String>, _>>()?;
        let mut hashes: Vec<&str> = programs.iter().map(|p| p.0).collect();
        hashes.sort_unstable();
        hashes.dedup();
        // The window's oldest run first, as a number the plan can start
        // from: with the window as a subquery, a look-up of several hashes
        // began at the window's runs (every benchmark of 2 000 runs, 40 ms
        // at 100 000 stored) instead of at the hashes' index.
        let oldest = first_int(&self.query(
            &format!(
                "SELECT coalesce(min(w.id), 0) FROM (SELECT id FROM runs WHERE project = ?1 \
                 ORDER BY id DESC LIMIT {SAME_BINARY_WINDOW}) w"
            ),
            &vals![self.project()],
        )?)?;
        let mut params = vals![mode.as_str(), self.project(), oldest].to_vec();
        let marks: Vec<String> = hashes
            .iter()
            .map(|h| {
                params.push(Val::from(*h));
                format!("?{}", params.len())
            })
            .collect();
        // The programs' benchmarks by the (binary_sha256, run_id) index,
        // newest first, among the project's newest SAME_BINARY_WINDOW runs:
        // ids and keys only, the few machines' facts read once each below.
        let rows = self.query(
            &format!(
                "SELECT b.run_id, b.id, b.binary_sha256, b.argv, r.environment_id FROM benchmarks b \
                 JOIN runs r ON r.id = b.run_id \
                 WHERE b.binary_sha256 IN ({}) AND b.run_id >= ?3 \
                 AND r.status = 'complete' AND r.mode = ?1 \
                 AND r.project = ?2 ORDER BY b.run_id DESC, b.position",
                marks.join(", ")
            ),
            &params,
        )?;
        // The newest matching benchmark of each run, up to `limit` runs, per program.
        let mut picks: Vec<Vec<(i64, i64)>> = vec![Vec::new(); programs.len()];
        let mut env_ids = rows
            .iter()
            .map(|r| r.int(4))
            .collect::<Result<Vec<i64>, _>>()?;
        env_ids.sort_unstable();
        env_ids.dedup();
        // Which machines are of `env`'s class.
        let same_class: BTreeMap<i64, bool> = self
            .environments(&env_ids)?
            .into_iter()
            .map(|(id, machine)| (id, comparability_hash(&machine) == wanted))
            .collect();
        for row in rows {
            let run_id = row.int(0)?;
            if !same_class.get(&row.int(4)?).copied().unwrap_or(false) {
                continue;
            }
            let (hash, argv) = (row.opt_text(2)?, row.text(3)?);
            for i in 0..programs.len() {
                let wanted_here = hash.as_deref() == Some(programs[i].0)
                    && argv == argvs[i]
                    && picks[i].len() < limit
                    && !picks[i].iter().any(|p| p.0 == run_id);
                if wanted_here {
                    picks[i].push((run_id, row.int(1)?));
                }
            }
        }
        // For their samples (the noise they show): each run with that one
        // benchmark, without profiles, in a few statements for all of them.
        let all: Vec<(i64, i64)> = picks.iter().flatten().copied().collect();
        let mut runs = runs_with_benchmarks(self, &all)?.into_iter();
        Ok(picks
            .iter()
            .map(|p| runs.by_ref().take(p.len()).flatten().collect())
            .collect())
    }

    /// The newest run with probe results made on the machine `env` describes:
    /// one with the same identity and performance facts if there is one (so a
    /// changed mitigation or governor finds its own probes), else one with
    /// the same [`comparability_hash`].
    fn latest_probe_run_for(&self, env: &Environment) -> Result<Option<i64>, StoreError> {
        let place = self.location();
        let stable = json(place, serde_json::to_string(&env.only(&STABLE_CLASSES)))?;
        let exact = sha256_hex(stable.as_bytes());
        let wanted = comparability_hash(env);
        // From the probe results (a few runs) to their runs, not a look
        // into the probe results for every run of the project.
        let rows = self.query(
            "SELECT r.id, e.hash, e.facts FROM runs r JOIN environments e ON e.id = r.environment_id \
             WHERE r.id IN (SELECT p.run_id FROM probe_results p) AND r.project = ?1 \
             ORDER BY r.id DESC",
            &vals![self.project()],
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

    /// Every benchmark of every complete run of commands (not probes, not
    /// `scale` sweeps), oldest run first, in display order within a run.
    fn history_entries(&self) -> Result<Vec<HistoryEntry>, StoreError> {
        entries(self, &EntryScope::default())
    }

    /// [`Self::history_entries`] within `scope`: the benchmarks a history
    /// asks for, or the newest runs a page shows, read by an index at a
    /// cost that follows what is read, not what is stored.
    fn history_entries_in(&self, scope: &EntryScope) -> Result<Vec<HistoryEntry>, StoreError> {
        entries(self, scope)
    }

    /// The values of `metric` of each benchmark in `benchmark_ids` (same
    /// order), in iteration order; a counter a sample lacks is NaN.
    fn metric_values(
        &self,
        benchmark_ids: &[i64],
        metric: Metric,
    ) -> Result<Vec<Vec<f64>>, StoreError> {
        let place = self.location();
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
        // The benchmark's id follows the metric's one or two columns.
        let key_at = if metric == Metric::Wall { 2 } else { 1 };
        transaction(self, false, || {
            let mut by_id: BTreeMap<i64, Vec<f64>> = BTreeMap::new();
            // A statement per chunk of benchmarks, not one per benchmark;
            // only the project's count: ids are never taken on trust.
            for list in id_lists(benchmark_ids) {
                // The project checked per listed benchmark (a primary-key
                // look-up): a join on `runs` would start the plan at every
                // run of the project.
                let sql = format!(
                    "SELECT {column}, s.benchmark_id FROM benchmarks b \
                     JOIN samples s ON s.benchmark_id = b.id \
                     WHERE b.id IN ({list}) AND {OWNED} \
                     ORDER BY s.benchmark_id, s.iteration"
                );
                // The samples table is clustered by (benchmark_id, iteration),
                // so each benchmark's values are one range of its primary key.
                for row in self.query(&sql, &vals![self.project()])? {
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
                    by_id.entry(row.int(key_at)?).or_default().push(v);
                }
            }
            Ok(benchmark_ids
                .iter()
                .map(|id| by_id.get(id).cloned().unwrap_or_default())
                .collect())
        })
    }

    /// The cached summaries of `metric` for these benchmarks (same order);
    /// `None` where none is cached yet.
    fn metric_summaries(
        &self,
        benchmark_ids: &[i64],
        metric: Metric,
    ) -> Result<Vec<Option<MetricSummary>>, StoreError> {
        let summary = |r: &Row| -> Result<(i64, MetricSummary), StoreError> {
            Ok((r.int(0)?, summary_at(r, 1)?))
        };
        // Only the project's benchmarks: ids are never taken on trust.
        let scoped = format!(
            "SELECT m.benchmark_id, m.n, m.median, m.lo, m.hi FROM metric_summaries m \
             JOIN benchmarks b ON b.id = m.benchmark_id WHERE m.metric = ?2 AND {OWNED}"
        );
        transaction(self, false, || {
            // The asked-for ids in chunks: a statement per 500 benchmarks,
            // and rows read only for them, however large the project.
            let mut found: BTreeMap<i64, MetricSummary> = BTreeMap::new();
            for list in id_lists(benchmark_ids) {
                let sql = format!("{scoped} AND m.benchmark_id IN ({list})");
                for r in self.query(&sql, &vals![self.project(), metric.name()])? {
                    let (id, s) = summary(&r)?;
                    found.insert(id, s);
                }
            }
            Ok(benchmark_ids
                .iter()
                .map(|id| found.get(id).copied())
                .collect())
        })
    }

    /// The stored environments (identity and performance facts) with these ids.
    fn environments(&self, ids: &[i64]) -> Result<BTreeMap<i64, Environment>, StoreError> {
        let mut out = BTreeMap::new();
        for list in id_lists(ids) {
            let sql = format!("SELECT id, facts FROM environments WHERE id IN ({list})");
            for row in self.query(&sql, &[])? {
                out.insert(
                    row.int(0)?,
                    json(self.location(), serde_json::from_str(&row.text(1)?))?,
                );
            }
        }
        Ok(out)
    }

    /// The whole environment (the machine's facts and the run's context,
    /// as [`Self::load_run`] gives it) of each run in `run_ids`, without
    /// its benchmarks and samples.
    fn run_environments(&self, run_ids: &[i64]) -> Result<BTreeMap<i64, Environment>, StoreError> {
        let mut out = BTreeMap::new();
        for list in id_lists(run_ids) {
            let sql = format!(
                "SELECT r.id, e.facts, r.context FROM runs r JOIN environments e ON e.id = r.environment_id \
                 WHERE r.id IN ({list}) AND r.project = ?1"
            );
            for row in self.query(&sql, &vals![self.project()])? {
                let env = merged_environment(self.location(), &row.text(1)?, &row.text(2)?)?;
                out.insert(row.int(0)?, env);
            }
        }
        Ok(out)
    }
}

/// The project's history entries ([`RunReader::history_entries`]) within `scope`.
fn entries<B: Backend + ?Sized>(
    store: &B,
    scope: &EntryScope,
) -> Result<Vec<HistoryEntry>, StoreError> {
    let place = store.location();
    let commands = |r: &str| {
        format!(
            "{r}.status = 'complete' AND {r}.mode <> 'probe' AND coalesce({}, '') <> '{}'",
            store.dialect().json_text(&format!("{r}.options"), "kind"),
            perfsleuth_model::SCALE_KIND,
        )
    };
    let mut params = vec![Val::from(store.project())];
    if let Some(id) = scope.before_run {
        params.push(Val::Int(id));
    }
    // Runs of table alias `r` stored before `before_run` (?2), when given.
    let before = |r: &str| match scope.before_run {
        Some(_) => format!("AND {r}.id < ?2"),
        None => String::new(),
    };
    let mut filters = before("r");
    // The window by the (project, id) index: the newest runs, then their benchmarks.
    if let Some(n) = scope.newest_runs {
        filters += &format!(
            " AND r.id IN (SELECT w.id FROM runs w WHERE w.project = ?1 AND {} {} \
             ORDER BY w.id DESC LIMIT {n})",
            commands("w"),
            before("w"),
        );
    }
    if !scope.names.is_empty() {
        let first = params.len() + 1;
        params.extend(scope.names.iter().map(|n| Val::from(n.as_str())));
        let marks: Vec<String> = (first..=params.len()).map(|i| format!("?{i}")).collect();
        filters += &format!(" AND b.name IN ({})", marks.join(", "));
    }
    // The cached summary by its primary key, in the same pass.
    let summary = match scope.summary_of {
        Some(metric) => {
            params.push(Val::from(metric.name()));
            format!(
                "LEFT JOIN metric_summaries m ON m.benchmark_id = b.id AND m.metric = ?{}",
                params.len()
            )
        }
        None => String::new(),
    };
    let summary_columns = if summary.is_empty() {
        "NULL, NULL, NULL, NULL, NULL"
    } else {
        "m.benchmark_id, m.n, m.median, m.lo, m.hi"
    };
    let sql = format!(
        "SELECT b.id, b.run_id, r.started_at, r.git_commit, r.git_branch, r.git_dirty, \
         r.mode, r.environment_id, b.name, b.parameters, b.binary_sha256, b.argv, \
         {summary_columns} FROM runs r \
         JOIN benchmarks b ON b.run_id = r.id {summary} \
         WHERE {} AND r.project = ?1 {filters} \
         ORDER BY r.id, b.position",
        commands("r"),
    );
    let mut out = Vec::new();
    // Entries made as rows arrive: a history of 100 000 points is not held
    // twice, and PostgreSQL's rows are decoded while it sends the rest.
    store.query_each(&sql, &params, &mut |row| {
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
            summary: match scope.summary_of {
                Some(metric) => Some((
                    metric,
                    match row.opt_int(12)? {
                        Some(_) => Some(summary_at(row, 13)?),
                        None => None,
                    },
                )),
                None => None,
            },
        });
        Ok(())
    })?;
    Ok(out)
}

/// The summary in `row`'s columns `at`… (n, median, lo, hi).
fn summary_at(row: &Row, at: usize) -> Result<MetricSummary, StoreError> {
    Ok(MetricSummary {
        n: usize::try_from(row.int(at)?).unwrap_or(0),
        median: row.real_or_nan(at + 1)?,
        lo: row.real_or_nan(at + 2)?,
        hi: row.real_or_nan(at + 3)?,
    })
}
