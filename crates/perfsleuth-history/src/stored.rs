//! Documents read from the store: the history of selected series and the
//! environment diff of two runs (`perfsleuth history`, `env diff`, and the
//! team server's endpoints). Choosing the sides of a comparison is
//! `perfsleuth-sides`'.

use perfsleuth_model::Environment;
use perfsleuth_store::{Store, StoreError};

/// The `perfsleuth/env-diff` document of two environments (`env diff
/// --json`, the server's `env/diff`): context facts only with `all`.
pub fn env_diff_doc(
    a: (&str, &Environment),
    b: (&str, &Environment),
    all: bool,
) -> perfsleuth_model::schema::EnvDiffDoc {
    use perfsleuth_model::ImpactClass;
    use perfsleuth_model::schema::{ComparabilityPair, Document, EnvDiffChange, EnvDiffDoc};
    let changes = perfsleuth_env::diff(a.1, b.1);
    let identical = perfsleuth_env::significant(&changes).next().is_none();
    EnvDiffDoc {
        schema: EnvDiffDoc::SCHEMA.to_string(),
        schema_version: EnvDiffDoc::VERSION,
        comparability: ComparabilityPair {
            a: perfsleuth_store::comparability_hash(a.1),
            b: perfsleuth_store::comparability_hash(b.1),
        },
        a: a.0.to_string(),
        b: b.0.to_string(),
        identical,
        changes: changes
            .iter()
            .filter(|c| all || c.class != ImpactClass::Context)
            .map(|c| EnvDiffChange {
                key: c.key.clone(),
                class: c.class,
                a: c.before.clone(),
                b: c.after.clone(),
                summary: c.summary.clone(),
                why: c.why.to_string(),
            })
            .collect(),
    }
}

/// The history of the selected entries for each metric, joined into one
/// document (`perfsleuth history`, the server's `history`). With `cache`,
/// newly computed summaries are cached when the store allows it (a store
/// this user may only read still answers). `None` when `metrics` is empty.
pub fn history_doc(
    store: &mut dyn Store,
    selected: Vec<perfsleuth_store::HistoryEntry>,
    metrics: &[perfsleuth_model::Metric],
    order: &crate::Order,
    filter: &crate::Filter,
    opts: &crate::Options,
    cache: bool,
) -> Result<Option<perfsleuth_model::schema::HistoryDoc>, StoreError> {
    let env_ids: Vec<i64> = selected.iter().map(|e| e.environment_id).collect();
    let envs = store.environments(&env_ids)?;
    let runs = store
        .run_environments(&crate::newest_runs(&selected))
        .unwrap_or_default();
    let mut docs = Vec::new();
    for &metric in metrics {
        let crate::Loaded { points, fresh } = crate::load(&*store, selected.clone(), metric)?;
        if cache && !fresh.is_empty() {
            let _ = store.put_metric_summaries(metric, &fresh);
        }
        docs.push(crate::build(
            points, &envs, &runs, metric, order, filter, opts,
        ));
    }
    Ok(crate::join(docs))
}
