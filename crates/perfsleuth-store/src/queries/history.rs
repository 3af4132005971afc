//! The history across runs: series of a metric, their summaries, the
//! same-binary runs the noise is learned from, environments over time.

use crate::HistoryEntry;
use crate::MetricSummary;
use crate::error::StoreError;
use crate::hash::comparability_hash;
use crate::queries::json;
use crate::queries::load::git_info;
use crate::queries::load::load_run;
use crate::queries::load::merged_environment;
use crate::queries::load::parse_mode;
use crate::queries::to_u64;
use crate::sql::Db;
use crate::sql::Row;
use crate::sql::transaction;
use crate::sql::vals;
use perfsleuth_model::Environment;
use perfsleuth_model::Metric;
use perfsleuth_model::Mode;
use perfsleuth_model::Run;
use std::collections::BTreeMap;

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
