//! `perfsleuth compare` (and `run --baseline`): a verdict per benchmark and
//! metric, with the environment attribution of `perfsleuth-compare`.

use crate::cli::CompareArgs;
use crate::error::Fail;
use crate::selectors::{self, StoreHandle};
use perfsleuth_app::options::VerdictOptions;
pub use perfsleuth_app::verdict::*;
use perfsleuth_compare::compare;

/// Runs `perfsleuth compare` and returns the exit code.
pub fn run(args: CompareArgs) -> Result<i32, Fail> {
    if let Some(plot) = &args.plot {
        crate::output::check_writable(plot, "--plot", args.store.store.as_deref())?;
    }
    if let Some(junit) = &args.export_junit {
        crate::output::check_writable(junit, "--export-junit", args.store.store.as_deref())?;
    }
    let verdict = VerdictOptions::from(args.verdict.clone());
    let opts = options(&verdict)?;
    let mut store = StoreHandle::new(args.store.store.clone());
    let candidate_spec = args.candidate.as_deref().unwrap_or("latest");
    let (candidate, baseline) = match &args.baseline {
        Some(spec) => {
            let (candidate, baseline) = selectors::resolve_both(candidate_spec, spec, &mut store);
            (candidate?, Some(baseline?))
        }
        None => (selectors::resolve(candidate_spec, &mut store)?, None),
    };
    let history = !verdict.no_history;
    // Two exported files compare without a store: no history, no probes.
    let comparison = match (baseline, selectors::existing_store(&mut store)) {
        (Some(baseline), None) => {
            same_mode(&baseline, &candidate)?;
            compare(&baseline, &candidate, &opts)
        }
        (baseline, _) => {
            let store = store.get()?;
            let stored =
                perfsleuth_sides::compare_stored(store, baseline, candidate, opts, history)
                    .map_err(Fail::from)?;
            // The process ends once the comparison is printed: freeing the
            // sides' benchmarks one by one (100 000 a side) took a tenth of
            // a second, so the system takes them back at exit instead.
            std::mem::forget((stored.baseline, stored.candidate));
            stored.comparison
        }
    };
    if verdict.require_same_env && comparison.identity_changed {
        return Err(env_mismatch(&comparison));
    }
    print_comparison(&comparison, args.format, args.color)?;
    if let Some(plot) = &args.plot {
        let svg = perfsleuth_compare::changes_chart(&comparison);
        crate::output::write_chart(plot, &perfsleuth_report::chart::standalone(&svg))?;
    }
    if let Some(junit) = &args.export_junit {
        let suite = format!(
            "compare: {} → {}",
            comparison.baseline, comparison.candidate
        );
        let xml = perfsleuth_compare::render_junit(&comparison, &suite, verdict.allow_missing);
        crate::output::write_junit(junit, xml)?;
    }
    let code = exit_code(&comparison, &verdict);
    // As the sides above: its 100 000 rows are freed at exit.
    std::mem::forget(comparison);
    Ok(code)
}
