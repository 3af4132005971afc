//! `perfsleuth ab`: two revisions of the repository, each built in a
//! temporary worktree of its own, measured interleaved in one job on one
//! machine, stored as two linked runs and compared with the one verdict rule
//! (`perfsleuth_app::ab`); this module prints the comparison.
//!
//! Separate CI jobs for baseline and candidate can never beat the machine's
//! drift between them; measured in the same rounds, both sides see the same
//! drift (Bencher's relative benchmarking, Pinpoint's try jobs).

use crate::cli::{AbArgs, CompareFormat};
use crate::error::Fail;
use crate::term::emit;
use perfsleuth_app::ab::AbOutcome;
use perfsleuth_app::options::AbOptions;
use perfsleuth_measure::Spawner;

/// `perfsleuth ab`.
pub fn ab(args: AbArgs, spawner: Option<Spawner>) -> Result<i32, Fail> {
    let args = AbOptions::from(args);
    let (format, color, verdict) = (args.format, args.run.color, args.run.verdict.clone());
    let junit = args.export_junit.clone();
    if let Some(junit) = &junit {
        crate::output::check_writable(junit, "--export-junit", args.run.store.as_deref())?;
    }
    let mut r = match perfsleuth_app::ab::ab(args, spawner)? {
        AbOutcome::Interrupted { ids, code } => {
            let ids: Vec<i64> = ids.map_or(Vec::new(), |(b, c)| vec![b, c]);
            emit(
                &perfsleuth_app::session::interrupted_line(
                    "the samples taken so far",
                    &ids,
                    "; worktrees removed",
                ),
                true,
            );
            return Ok(code);
        }
        AbOutcome::Measured(r) => r,
    };
    let text = match format {
        CompareFormat::Json => {
            let mut doc = perfsleuth_compare::to_json(&r.comparison);
            doc.ab = Some(r.info.clone());
            crate::compare::json_text(&doc)?
        }
        format => crate::compare::render(&r.comparison, format, color)?,
    };
    emit(&text, false);
    let m = &r.measurement;
    if let Some(note) = &m.stored_note {
        emit(note, true);
    }
    for note in &m.notes {
        emit(&format!("note: {note}\n"), true);
    }
    for warning in &m.warnings {
        emit(&format!("warning: {warning}\n"), true);
    }
    r.ungate_identical();
    if let Some(junit) = &junit {
        let c = &r.comparison;
        let suite = format!("ab: {} → {}", c.baseline, c.candidate);
        let xml = perfsleuth_compare::render_junit(c, &suite, verdict.allow_missing);
        crate::output::write_junit(junit, xml)?;
    }
    Ok(crate::compare::exit_code(&r.comparison, &verdict))
}
