//! `ab`'s sides: two revisions of the repository resolved, each built in a
//! temporary worktree of its own, measured interleaved in one session on
//! one machine, stored as two linked runs, and compared with the one
//! verdict rule. The binary prints the [`AbComparison`] this returns.
//!
//! Separate CI jobs for baseline and candidate can never beat the machine's
//! drift between them; measured in the same rounds, both sides see the same
//! drift (Bencher's relative benchmarking, Pinpoint's try jobs).

use crate::checkout::{
    Build, Rev, Worktrees, build, for_side, git_top, resolve_baseline, resolve_candidate,
};
use crate::error::Fail;
use crate::options::{AbOptions, RunOptions};
use crate::session::{Checked, Measurement, Part};
use perfsleuth_compare::{Comparison, Side};
use perfsleuth_measure::Spawner;
use perfsleuth_model::Run;
use perfsleuth_model::schema::{AbBuild, AbInfo, AbSide};
use perfsleuth_runner::{Planned, Stop};
use std::path::{Path, PathBuf};

/// What `ab` measured.
pub enum AbOutcome {
    /// Interrupted: the ids of the two runs stored so far (status interrupted).
    Interrupted {
        /// The stored runs' ids, when stored.
        ids: Option<(i64, i64)>,
        /// The exit code.
        code: i32,
    },
    /// Measured: the comparison to print.
    Measured(Box<AbComparison>),
}

/// Both sides measured and compared.
pub struct AbComparison {
    /// The comparison with the commits, builds and notes; rows of identical
    /// programs still gating (as the report shows them).
    pub comparison: Comparison,
    /// The `ab` section of the JSON report.
    pub info: AbInfo,
    /// The session's result (notes, warnings, the stored-run note).
    pub measurement: Measurement,
    /// The worktrees, removed when this is dropped (unless kept).
    _trees: Worktrees,
}

impl AbComparison {
    /// Identical programs cannot have regressed: their rows do not gate,
    /// but they were compared, so a gate over them alone passes.
    pub fn ungate_identical(&mut self) {
        for row in &mut self.comparison.rows {
            if self.info.identical_binaries.contains(&row.benchmark) {
                row.gating = false;
            }
        }
    }
}

/// `perfsleuth ab`: resolves and builds the two sides, measures them in one
/// session and compares them.
pub fn ab(mut args: AbOptions, spawner: Option<Spawner>) -> Result<AbOutcome, Fail> {
    args.run.sides = true;
    crate::session::settle(&mut args.run)?;
    refuse_run_only(&args.run, "ab", "two runs", "both sides")?;
    let repo = git_top("ab compares two revisions of a git repository")?;
    let baseline = resolve_baseline(&repo, args.baseline_rev.as_deref())?;
    let candidate = resolve_candidate(&repo, args.candidate_rev.as_deref())?;
    let mut notes = Vec::new();
    if baseline.commit == candidate.commit && !candidate.dirty {
        notes.push(format!(
            "baseline and candidate are the same commit ({}): an A/A calibration, so any difference is noise",
            baseline.short()
        ));
    }
    // Refused now, before minutes of building.
    let c = crate::session::validate(&args.run)?;
    crate::session::catch_interrupts()?;

    let sides = Checkouts::build(&repo, &args, baseline, candidate)?;
    let mut spawner = crate::session::spawner_or_start(spawner)?;
    let (benches, parts) = sides.prepare(&c, &mut spawner, &args)?;
    let n_base = parts[0].benchmarks;
    let opts = crate::verdict::paired_options(&args.run.verdict)?;
    // While a gating row cannot be decided, another round of both sides
    // (up to --max-time), as `run --baseline` does.
    let more = |template: &Run, benches: &[perfsleuth_runner::Bench], look: u32| {
        let (b, c) = split_run(&crate::verdict::so_far(template, benches), n_base);
        crate::verdict::undecided_sides(
            &crate::verdict::side(b),
            &crate::verdict::side(c),
            &opts.at_look(Some(look)),
        )
    };
    let mut m = crate::session::measure(&c, &mut spawner, benches, parts, &more)?;
    if m.rounds > c.rounds {
        notes.push(crate::verdict::extension_note(
            m.rounds,
            m.elapsed,
            c.max_time,
            "the comparison",
        ));
    }
    let (base_run, cand_run) = split(&m, n_base, sides.revs());
    if let Err(stop) = std::mem::replace(&mut m.result, Ok(())) {
        return match stop {
            Stop::Failed(e) => Err(Fail::from(e)),
            Stop::Interrupted => Ok(AbOutcome::Interrupted {
                ids: base_run.id.zip(cand_run.id),
                code: perfsleuth_model::exit::ExitCode::interrupted_by(
                    perfsleuth_measure::interrupting_signal(),
                ),
            }),
        };
    }
    let (comparison, info) = sides.compare(base_run, cand_run, notes, &m, &opts, &args);
    Ok(AbOutcome::Measured(Box::new(AbComparison {
        comparison,
        info,
        measurement: m,
        _trees: sides.trees,
    })))
}

/// Refuses the options of `run` that `ab` and `bisect` (`command`) have no
/// use for, before anything is resolved or built; `stores` and `sides` say
/// what it stores and measures ("two runs", "both sides").
pub(crate) fn refuse_run_only(
    run_args: &RunOptions,
    command: &str,
    stores: &str,
    sides: &str,
) -> Result<(), Fail> {
    let refuse = |what: String, hint: String| Err(Fail::usage(what, hint));
    if !crate::output::requested_exports(run_args).is_empty() {
        return refuse(
            format!("{command} does not write --export-* files: it stores {stores}"),
            "export either side afterwards with `perfsleuth show --json RUN`".into(),
        );
    }
    if run_args.plot.is_some() {
        return refuse(
            format!("{command} does not draw --plot: it stores {stores}"),
            "chart the comparison afterwards with `perfsleuth compare BASELINE_RUN CANDIDATE_RUN --plot FILE.svg`".into(),
        );
    }
    if run_args.no_interleave {
        return refuse(
            format!("{command} measures {sides} interleaved: --no-interleave would give up what it is for"),
            "drop --no-interleave (for one side after the other, use two `perfsleuth run`s and `compare`)".into(),
        );
    }
    if run_args.repeat != 1 || run_args.reference.is_some() {
        return refuse(
            format!("--repeat and --reference are options of `run`, not of `{command}`"),
            format!("drop them; {command} measures {sides} in one interleaved run"),
        );
    }
    Ok(())
}

/// The two sides checked out: each revision with its worktree and its build.
struct Checkouts {
    baseline: Rev,
    candidate: Rev,
    /// The worktrees' roots, baseline first.
    roots: Vec<PathBuf>,
    /// The builds, baseline first (`None` without `--build`).
    builds: Vec<Option<Build>>,
    trees: Worktrees,
}

impl Checkouts {
    /// Checks out each side in a worktree of `repo` and builds it there.
    fn build(
        repo: &Path,
        args: &AbOptions,
        baseline: Rev,
        candidate: Rev,
    ) -> Result<Checkouts, Fail> {
        let mut trees = Worktrees::new(repo, args.keep_worktrees)?;
        let mut builds = Vec::new();
        let mut roots = Vec::new();
        for rev in [&baseline, &candidate] {
            let root = trees.add(rev)?;
            let build = match &args.build {
                Some(cmd) => Some(build(cmd, &root, rev, args.build_timeout)?),
                None => None,
            };
            builds.push(build);
            roots.push(root);
        }
        Ok(Checkouts {
            baseline,
            candidate,
            roots,
            builds,
            trees,
        })
    }

    fn revs(&self) -> [&Rev; 2] {
        [&self.baseline, &self.candidate]
    }

    /// The plan's benchmarks for each side, in its worktree, prepared in the
    /// spawner; and each side's part of the one run, saying which side it is.
    fn prepare(
        &self,
        c: &Checked,
        spawner: &mut Spawner,
        args: &AbOptions,
    ) -> Result<(Vec<perfsleuth_runner::Bench>, Vec<Part>), Fail> {
        let mut benches = Vec::new();
        let mut parts = Vec::new();
        for ((rev, root), build) in self.revs().iter().zip(&self.roots).zip(&self.builds) {
            let planned: Vec<Planned> = c.planned.iter().map(|p| for_side(p, root, rev)).collect();
            let n = planned.len();
            let side = crate::session::prepare(c, planned, spawner).map_err(|mut f| {
                f.message = format!("in the {} ({}): {}", rev.role, rev.short(), f.message);
                f
            })?;
            benches.extend(side);
            // The stored run says which side it was, in the report's terms.
            let mut stored =
                serde_json::to_value(side_doc(rev, build.as_ref(), args, None)).unwrap_or_default();
            if let Some(map) = stored.as_object_mut() {
                map.remove("run");
                map.insert("side".into(), rev.role.into());
            }
            let mut extra = serde_json::Map::new();
            extra.insert("ab".into(), stored);
            parts.push(Part {
                git: Some(rev.git()),
                extra,
                benchmarks: n,
                label: rev.role,
            });
        }
        Ok((benches, parts))
    }

    /// The two sides' runs compared, with `notes`, what proves nothing
    /// (identical binaries), each side's commit and build; and the `ab`
    /// section of the report.
    fn compare(
        &self,
        base_run: Run,
        cand_run: Run,
        mut notes: Vec<String>,
        m: &Measurement,
        opts: &perfsleuth_compare::Options,
        args: &AbOptions,
    ) -> (Comparison, AbInfo) {
        let revs = self.revs();
        let identical = identical_programs(&base_run, &cand_run, &self.roots);
        if !identical.is_empty() {
            notes.insert(
                0,
                format!(
                    "identical binaries on both sides ({}): any difference is noise, so they do not fail --fail-on",
                    identical.join(", ")
                ),
            );
        }
        notes.extend(perfsleuth_compare::look_note(m.look, opts.rule.alpha));
        let baseline_side = Side {
            label: revs[0].short(),
            runs: vec![base_run],
        };
        let candidate_side = Side {
            label: revs[1].short(),
            runs: vec![cand_run],
        };
        let ids = [baseline_side.runs[0].id, candidate_side.runs[0].id];
        let mut comparison =
            perfsleuth_compare::compare(&baseline_side, &candidate_side, &opts.at_look(m.look));
        comparison.notes.extend(notes);
        for (rev, build) in revs.iter().zip(&self.builds) {
            let built = build.as_ref().map_or(String::new(), |b| {
                format!(
                    ", built in {}",
                    perfsleuth_report::format_duration_ns(b.wall.as_nanos() as f64)
                )
            });
            comparison.notes.push(format!(
                "{}: {} ({}){built}",
                rev.role,
                rev.short(),
                rev.why
            ));
        }
        let side = |i: usize| side_doc(revs[i], self.builds[i].as_ref(), args, ids[i]);
        let info = AbInfo {
            baseline: side(0),
            candidate: side(1),
            rounds: m.rounds,
            identical_binaries: identical,
        };
        (comparison, info)
    }
}

/// The baseline's and the candidate's runs out of the one measured, as
/// stored: their ids and commits.
fn split(m: &Measurement, n_base: usize, revs: [&Rev; 2]) -> (Run, Run) {
    let (mut base, mut cand) = split_run(&m.run, n_base);
    base.id = m.ids.first().copied().flatten();
    cand.id = m.ids.get(1).copied().flatten();
    base.git = Some(revs[0].git());
    cand.git = Some(revs[1].git());
    (base, cand)
}

/// The first `n_base` benchmarks of `run` as one run, the rest as another.
fn split_run(run: &Run, n_base: usize) -> (Run, Run) {
    let mut base = run.clone();
    let mut cand = run.clone();
    base.benchmarks.truncate(n_base);
    cand.benchmarks.drain(..n_base.min(cand.benchmarks.len()));
    (base, cand)
}

/// A side as the report's JSON and the stored run describe it.
fn side_doc(rev: &Rev, build: Option<&Build>, args: &AbOptions, run: Option<i64>) -> AbSide {
    AbSide {
        run,
        commit: rev.commit.clone(),
        dirty: rev.dirty,
        chosen: rev.why.clone(),
        build: build.zip(args.build.as_ref()).map(|(b, command)| AbBuild {
            command: command.clone(),
            wall_s: b.wall.as_secs_f64(),
        }),
    }
}

/// Benchmarks whose program is the same file on both sides and was built
/// inside the worktrees. A program from outside them (`python3 {root}/x.py`)
/// is the same interpreter whatever the code, so it proves nothing.
fn identical_programs(base: &Run, cand: &Run, roots: &[PathBuf]) -> Vec<String> {
    let fact = |b: &perfsleuth_model::Benchmark, k: &str| b.facts.get(k).map(str::to_string);
    let inside = |path: &Option<String>, root: &Path| {
        path.as_deref().is_some_and(|p| {
            let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
            Path::new(p).starts_with(root)
        })
    };
    base.benchmarks
        .iter()
        .filter_map(|b| {
            let c = cand
                .benchmarks
                .iter()
                .find(|c| c.name == b.name && c.parameters == b.parameters)?;
            let (hb, hc) = (fact(b, "binary.sha256")?, fact(c, "binary.sha256")?);
            let same = hb == hc && hb != perfsleuth_model::UNKNOWN;
            let built = inside(&fact(b, "binary.path"), &roots[0])
                && inside(&fact(c, "binary.path"), &roots[1]);
            (same && built).then(|| b.name.clone())
        })
        .collect()
}
