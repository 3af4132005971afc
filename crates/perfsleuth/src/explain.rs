//! `perfsleuth explain BASELINE CANDIDATE [BENCH]`: the experiments are
//! planned, measured and judged by `perfsleuth_app::explain`; this module
//! prints what it found.
//!
//! The two sides are stored runs or exports, `current` (this machine, as it
//! is), or a fingerprint (`env show --json`) with no results of its own.
//! The experiments start from the side this machine stands for and move it,
//! one difference at a time, towards the other.

mod render;

use crate::cli::ExplainArgs;
use crate::error::Fail;
use crate::term::emit;
use perfsleuth_app::explain::Explained;
use perfsleuth_app::options::ExplainOptions;
use perfsleuth_measure::Spawner;

/// `perfsleuth explain`.
pub fn explain(args: ExplainArgs, spawner: Option<Spawner>) -> Result<i32, Fail> {
    let args = ExplainOptions::from(args);
    match perfsleuth_app::explain::explain(&args, spawner)? {
        Explained::Interrupted(code) => {
            emit(
                "Interrupted: no explanation from a partial measurement.\n",
                true,
            );
            Ok(code)
        }
        Explained::Doc {
            doc,
            stored_note,
            notes,
            warnings,
        } => {
            emit(&render::render(&doc, args.format)?, false);
            if let Some(note) = stored_note {
                emit(&note, true);
            }
            for note in &notes {
                emit(&format!("note: {note}\n"), true);
            }
            for warning in &warnings {
                emit(&format!("warning: {warning}\n"), true);
            }
            Ok(0)
        }
    }
}
