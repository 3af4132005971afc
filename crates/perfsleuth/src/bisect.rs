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
    let junit = args.ab.export_junit.clone();
    if let Some(path) = &junit {
        crate::output::check_writable(path, "--export-junit", args.ab.run.store.store.as_deref())?;
    }
    let from_history = args.from_history.clone();
    let push = args.push.push.then(|| args.push.target.clone());
    if let Some(target) = &push {
        crate::server::check_push_target(target)?;
    }
    let store = args.ab.run.store.store.clone();
    let mut options = BisectOptions::from(args);
    if let Some(bench) = from_history {
        let (before, after) = history_range(&bench, options.ab.run.store.as_deref())?;
        options.ab.baseline_rev = Some(before);
        options.ab.candidate_rev = Some(after);
    }
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
    if let Some(path) = &junit {
        crate::output::write_junit(path, perfsleuth_app::bisect::render_junit(&doc))?;
    }
    if let Some(target) = &push {
        let ids: Vec<i64> = doc
            .steps
            .iter()
            .flat_map(|s| s.runs.iter().flatten().copied())
            .collect();
        crate::server::push_after_run(
            store.as_deref(),
            &ids,
            target,
            crate::server::PushReport::Count,
        )?;
        emit(
            &format!(
                "bisect: its runs together: {}/p/{}/bisect/{}\n",
                target
                    .server
                    .as_deref()
                    .unwrap_or_default()
                    .trim_end_matches('/'),
                target.project.as_deref().unwrap_or_default(),
                doc.id
            ),
            true,
        );
    }
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

/// The commits around the newest change point of `bench`'s stored history:
/// the last run's commit before it and the first one's after it.
fn history_range(bench: &str, store: Option<&str>) -> Result<(String, String), Fail> {
    let doc = crate::histcmd::default_doc(&[bench.to_string()], store)?;
    let newest = doc
        .series
        .iter()
        .flat_map(|s| s.change_points.iter().map(move |c| (s, c)))
        .max_by_key(|(s, c)| s.points.get(c.index).and_then(|p| p.started_at.clone()));
    let Some((series, change)) = newest else {
        return Err(Fail::usage(
            format!("`{bench}` has no change point in its stored history"),
            "`perfsleuth history BENCH` shows its series; give --baseline and --candidate instead",
        ));
    };
    let commit = |i: usize| series.points.get(i).and_then(|p| p.commit.clone());
    let (Some(before), Some(after)) = (commit(change.index.wrapping_sub(1)), commit(change.index))
    else {
        return Err(Fail::usage(
            format!(
                "the newest change point of `{bench}` lies between runs with no commit recorded"
            ),
            "give --baseline and --candidate instead",
        ));
    };
    emit(
        &format!(
            "bisect: the newest change point of `{bench}` ({}): {} of {} → {}\n",
            series.metric,
            signed_pct(change.change),
            perfsleuth_model::short_commit(&before),
            perfsleuth_model::short_commit(&after)
        ),
        true,
    );
    Ok((before, after))
}
