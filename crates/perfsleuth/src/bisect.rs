//! `perfsleuth bisect`: prints what `perfsleuth_app::bisect` found.

use crate::cli::{BisectArgs, CompareFormat};
use crate::error::Fail;
use crate::term::emit;
use perfsleuth_app::bisect::{BisectOutcome, render, signed_pct};
use perfsleuth_app::options::BisectOptions;
use perfsleuth_measure::Spawner;
use perfsleuth_model::exit::ExitCode;

/// Runs `perfsleuth bisect` and returns the exit code: 0 when the search
/// ended (whatever it found), 1 with `--fail-on regressed` when a verified
/// culprit made the benchmark slower.
pub fn bisect(args: BisectArgs, spawner: Option<Spawner>) -> Result<i32, Fail> {
    if args.ab.export_junit.is_some() {
        return Err(Fail::usage(
            "bisect does not write --export-junit: it names commits, not test results",
            "give --format json for a document a CI job can read",
        ));
    }
    let options = BisectOptions::from(args);
    let format = options.ab.format;
    let gate = options.ab.run.verdict.fail_on.is_some();
    let profiled = options.ab.run.profiling.profile.is_on();
    let color = options.ab.run.color;
    let doc = match perfsleuth_app::bisect::bisect(options, spawner)? {
        BisectOutcome::Interrupted { ids, code } => {
            emit(
                &perfsleuth_app::session::interrupted_line(
                    "the steps measured so far",
                    &ids,
                    "; worktrees removed",
                ),
                true,
            );
            return Ok(code);
        }
        BisectOutcome::Done(found) => found,
    };
    let perfsleuth_app::bisect::Bisected { doc, verifications } = *doc;
    let text = match format {
        CompareFormat::Terminal | CompareFormat::Markdown => {
            let markdown = format == CompareFormat::Markdown;
            let mut text = render(&doc, markdown);
            // Where each culprit's change sits: its verification, as ab shows a pair.
            for (commit, comparison) in verifications.iter().filter(|_| profiled) {
                let short = perfsleuth_model::short_commit(commit);
                text.push_str(&format!("\nculprit {short} against its parent:\n"));
                text.push_str(&crate::compare::render(comparison, format, color)?);
            }
            text
        }
        CompareFormat::Json => crate::compare::json_text(&doc)?,
        CompareFormat::Github => {
            let annotations: String = doc
                .culprits
                .iter()
                .filter(|c| c.confirmed)
                .map(|c| {
                    let change = c
                        .verified
                        .as_ref()
                        .and_then(|v| v.change)
                        .unwrap_or(f64::NAN);
                    format!(
                        "::warning title=perfsleuth bisect::culprit {}: {}\n",
                        perfsleuth_model::short_commit(&c.commit),
                        signed_pct(change)
                    )
                })
                .collect();
            crate::compare::github(&render(&doc, true), &annotations)?
        }
    };
    emit(&text, false);
    let regressed = doc.culprits.iter().any(|c| {
        c.confirmed
            && c.verified
                .as_ref()
                .and_then(|v| v.change)
                .is_some_and(|x| x > 0.0)
    });
    Ok(if gate && regressed {
        ExitCode::gate(true)
    } else {
        ExitCode::OK
    })
}
