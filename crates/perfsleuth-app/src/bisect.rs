//! `bisect`: which commits of a first-parent range changed the benchmarks.
//! The search (`perfsleuth_bisect::Search`) says which commits to measure
//! together; each is checked out and built once, in a worktree of its own,
//! and reused by every probe; each probe is measured interleaved in one
//! session, stored as a run per commit, and each adjacent pair judged as
//! `ab` judges its sides. docs/BISECT.md.

use crate::ab::refuse_run_only;
use crate::checkout::{
    Build, Rev, Worktrees, build, for_side, git, git_top, resolve_baseline, resolve_candidate,
};
use crate::error::{Fail, FailKind};
use crate::options::BisectOptions;
use crate::session::{Checked, Part};
use crate::term::emit;
use perfsleuth_bisect::{Call, Culprit, Outcome, PairVerdict, Probe, ProbeKind, Search};
use perfsleuth_compare::{Comparison, Side};
use perfsleuth_measure::Spawner;
use perfsleuth_model::Run;
use perfsleuth_model::schema::{
    BisectBranch, BisectChange, BisectCommit, BisectCulprit, BisectDoc, BisectRange, BisectStep,
    VerdictLabel,
};
use perfsleuth_runner::Stop;
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

/// What `bisect` found, or where it was stopped.
pub enum BisectOutcome {
    /// Interrupted: the runs stored so far, and the exit code.
    Interrupted {
        /// The stored runs' ids.
        ids: Vec<i64>,
        /// 128 + the signal.
        code: i32,
    },
    /// The search ended.
    Done(Box<Bisected>),
}

/// What the search found, with the comparisons that verified each culprit.
pub struct Bisected {
    /// The `perfsleuth/bisect` document.
    pub doc: BisectDoc,
    /// Each verified culprit's comparison with its parent, as `ab` makes
    /// it (with `--profile`, where the change sits), by culprit commit.
    pub verifications: Vec<(String, Comparison)>,
}

/// Runs the bisection `args` describes.
pub fn bisect(mut args: BisectOptions, spawner: Option<Spawner>) -> Result<BisectOutcome, Fail> {
    args.ab.run.sides = true;
    crate::session::settle(&mut args.ab.run)?;
    refuse_run_only(
        &args.ab.run,
        "bisect",
        "a run per commit it measures",
        "its commits",
    )?;
    let repo = git_top("bisect searches the commits of a git repository")?;
    let baseline = resolve_baseline(&repo, args.ab.baseline_rev.as_deref())?;
    let candidate = resolve_candidate(&repo, args.ab.candidate_rev.as_deref())?;
    if candidate.dirty {
        return Err(Fail::usage(
            "bisect searches commits, and the working tree has uncommitted changes",
            "commit them, or give --candidate HEAD to search up to the last commit",
        ));
    }
    let commits = range(&repo, &baseline, &candidate)?;
    let n = commits.len() - 1;
    let expected = Search::expected_probes(n);
    if let Some(max) = args.max_steps.filter(|m| expected > *m) {
        return Err(Fail::usage(
            format!(
                "{} commits take at least {expected} steps to search (one culprit), more than --max-steps {max}",
                n
            ),
            "give a nearer --baseline, or raise --max-steps",
        ));
    }
    // Refused now, before minutes of building.
    let c = crate::session::validate(&args.ab.run)?;
    crate::session::catch_interrupts()?;
    let opts = crate::verdict::paired_options(&args.ab.run.verdict)?;
    let mut spawner = crate::session::spawner_or_start(spawner)?;
    if args.resume && args.ab.run.no_store {
        return Err(Fail::usage(
            "--resume continues from the store, and --no-store keeps none",
            "drop --no-store",
        ));
    }
    let mut b = Bisecting {
        id: bisection_id(&commits, &c),
        stored: Vec::new(),
        verifications: HashMap::new(),
        started: Instant::now(),
        trees: Worktrees::new(&repo, args.ab.keep_worktrees)?,
        repo,
        commits,
        args,
        built: HashMap::new(),
        unbuildable: HashMap::new(),
        steps: Vec::new(),
        ids: Vec::new(),
        runs: 0,
        measuring: Duration::ZERO,
        building: Duration::ZERO,
    };
    let max_probes = b.args.max_steps.unwrap_or(4 * expected + 8);
    let mut search = Search::new(n, max_probes);
    if b.args.resume {
        b.resume_from_store(&c)?;
    }
    while let Some(probe) = search.next_probe() {
        if let Some(verdicts) = b.replay(&probe, &c, &opts)? {
            search.record(&probe, &verdicts);
            continue;
        }
        if let Some(i) = b.unbuilt(&probe)? {
            search.skip(i);
            continue;
        }
        b.progress(&search, &probe);
        match b.measure(&probe, &c, &mut spawner, &opts)? {
            Some(verdicts) => search.record(&probe, &verdicts),
            None => {
                return Ok(BisectOutcome::Interrupted {
                    ids: b.ids,
                    code: perfsleuth_model::exit::ExitCode::interrupted_by(
                        perfsleuth_measure::interrupting_signal(),
                    ),
                });
            }
        }
    }
    let doc = b.doc(&search);
    let verifications = search
        .verified()
        .iter()
        .filter_map(|c| {
            let hash = b.commits[c.commit].clone();
            b.verifications.remove(&c.commit).map(|v| (hash, v))
        })
        .collect();
    Ok(BisectOutcome::Done(Box::new(Bisected {
        doc,
        verifications,
    })))
}

/// The first-parent commits from `baseline` to `candidate`, both included.
fn range(repo: &Path, baseline: &Rev, candidate: &Rev) -> Result<Vec<String>, Fail> {
    if baseline.commit == candidate.commit {
        return Err(Fail::usage(
            format!(
                "--baseline and --candidate are the same commit ({}): nothing to search",
                baseline.short()
            ),
            "give the last commit known good as --baseline and the first known bad as --candidate",
        ));
    }
    let ancestor = git(
        repo,
        &[
            "merge-base",
            "--is-ancestor",
            &baseline.commit,
            &candidate.commit,
        ],
    );
    if ancestor.is_err()
        && git(repo, &["rev-parse", "--is-shallow-repository"]).is_ok_and(|s| s == "true")
    {
        return Err(Fail::usage(
            format!(
                "this is a shallow clone, and the baseline {} is not in its history",
                baseline.short()
            ),
            "fetch the history first (`git fetch --unshallow`)",
        ));
    }
    if ancestor.is_err() {
        return Err(Fail::usage(
            format!(
                "the baseline {} is not an ancestor of the candidate {}",
                baseline.short(),
                candidate.short()
            ),
            "bisect searches the history between an older and a newer commit: swap them, or give a merge base (`git merge-base A B`)",
        ));
    }
    let between = git(
        repo,
        &[
            "rev-list",
            "--first-parent",
            "--reverse",
            &format!("{}..{}", baseline.commit, candidate.commit),
        ],
    )
    .map_err(|e| {
        Fail::usage(
            format!("cannot list the commits between the two: {e}"),
            "in a shallow clone, fetch the history first (`git fetch --unshallow`)",
        )
    })?;
    let mut commits = vec![baseline.commit.clone()];
    commits.extend(between.lines().map(str::to_string));
    if commits.last() != Some(&candidate.commit) {
        return Err(Fail::usage(
            format!(
                "the candidate {} is not on the first-parent line from the baseline {}",
                candidate.short(),
                baseline.short()
            ),
            "give a baseline on the candidate's first-parent history (`git log --first-parent`)",
        ));
    }
    Ok(commits)
}

/// A step an earlier run of the bisection stored: its runs, one per commit.
struct StoredStep {
    kind: String,
    commits: Vec<usize>,
    runs: Vec<Run>,
}

/// The bisection's name in its stored runs: the range's ends and the
/// benchmarks' commands, so `--resume` finds the steps of the same search.
fn bisection_id(commits: &[String], c: &Checked) -> String {
    use sha2::{Digest, Sha256};
    let mut h = Sha256::new();
    h.update(&commits[0]);
    h.update(&commits[commits.len() - 1]);
    for p in &c.planned {
        for part in [&p.name, &p.command] {
            h.update(part.len().to_le_bytes());
            h.update(part);
        }
    }
    h.finalize()[..8]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// A commit checked out and built.
struct Checkout {
    rev: Rev,
    root: PathBuf,
}

/// The bisection in progress: the commits built so far and what each probe
/// measured.
struct Bisecting {
    /// Names this bisection in its stored runs: the range and the commands.
    id: String,
    /// Steps measured by an earlier, interrupted bisection of the same id.
    stored: Vec<StoredStep>,
    started: Instant,
    args: BisectOptions,
    repo: PathBuf,
    commits: Vec<String>,
    built: HashMap<usize, Checkout>,
    /// Commits whose build failed, with the first line of why.
    unbuildable: HashMap<usize, String>,
    steps: Vec<BisectStep>,
    /// The verification of each culprit (by commit index): its comparison.
    verifications: HashMap<usize, Comparison>,
    ids: Vec<i64>,
    runs: u64,
    measuring: Duration,
    building: Duration,
    // Last: the worktrees are removed after everything that runs in them.
    trees: Worktrees,
}

impl Bisecting {
    /// Checks out and builds the probe's commits not yet built; the first
    /// that cannot be built, if any (its end of the range is an error).
    fn unbuilt(&mut self, probe: &Probe) -> Result<Option<usize>, Fail> {
        for &i in &probe.commits {
            if self.built.contains_key(&i) {
                continue;
            }
            if self.unbuildable.contains_key(&i) {
                return Ok(Some(i));
            }
            let rev = self.rev(i);
            let root = self.trees.add(&rev)?;
            let started = Instant::now();
            let built: Result<Option<Build>, Fail> = match &self.args.ab.build {
                Some(cmd) => build(cmd, &root, &rev, self.args.ab.build_timeout).map(Some),
                None => Ok(None),
            };
            self.building += started.elapsed();
            match built {
                Ok(_) => {
                    self.built.insert(i, Checkout { rev, root });
                }
                Err(f) if matches!(f.kind, FailKind::Interrupted(_)) => return Err(f),
                Err(f) if i == 0 || i == self.commits.len() - 1 => return Err(f),
                Err(f) => {
                    emit(&format!("note: skipped: {}\n", f.message), true);
                    self.unbuildable.insert(i, f.message);
                    return Ok(Some(i));
                }
            }
        }
        Ok(None)
    }

    /// Commit `i` as a revision to check out.
    fn rev(&self, i: usize) -> Rev {
        let last = self.commits.len() - 1;
        Rev {
            role: match i {
                0 => "baseline",
                i if i == last => "candidate",
                _ => "commit",
            },
            commit: self.commits[i].clone(),
            dirty: false,
            why: format!("commit {i} of {last}"),
        }
    }

    /// The step, on stderr: what is measured and what is left.
    fn progress(&self, search: &Search, probe: &Probe) {
        let short = |i: usize| perfsleuth_model::short_commit(&self.commits[i]).to_string();
        let what = match probe.kind {
            ProbeKind::Confirm => "confirming the change between the ends".to_string(),
            ProbeKind::Split => format!(
                "splitting {}..{} at {}",
                short(probe.commits[0]),
                short(probe.commits[2]),
                short(probe.commits[1])
            ),
            ProbeKind::Verify => format!(
                "verifying {} against its parent {}",
                short(probe.commits[1]),
                short(probe.commits[0])
            ),
        };
        let left = match probe.kind {
            ProbeKind::Split => format!(
                ", {} commits left in this segment",
                probe.commits[2] - probe.commits[0]
            ),
            _ => String::new(),
        };
        if self.steps.is_empty() {
            let n = self.commits.len() - 1;
            emit(
                &format!(
                    "bisect: {n} commits: {} steps for one culprit, about 4 more for each other one\n",
                    Search::expected_probes(n)
                ),
                true,
            );
        }
        let done = self.steps.len() as u32;
        let eta = if done > 0 {
            let per = self.started.elapsed() / done;
            let left =
                Search::expected_probes(probe.commits[probe.commits.len() - 1] - probe.commits[0])
                    as u32;
            format!(
                ", about {} to go",
                perfsleuth_report::format_duration_ns((per * left).as_nanos() as f64)
            )
        } else {
            String::new()
        };
        emit(
            &format!("bisect step {}: {what}{left}{eta}\n", search.probes() + 1),
            true,
        );
    }

    /// Measures the probe's commits interleaved and judges each adjacent
    /// pair; `None` when interrupted (what was measured is stored).
    fn measure(
        &mut self,
        probe: &Probe,
        c: &Checked,
        spawner: &mut Spawner,
        opts: &perfsleuth_compare::Options,
    ) -> Result<Option<Vec<PairVerdict>>, Fail> {
        const LABELS: [&[&str]; 2] = [&["older", "newer"], &["older", "middle", "newer"]];
        let labels = LABELS[usize::from(probe.commits.len() == 3)];
        let per = c.planned.len();
        let mut benches = Vec::new();
        let mut parts = Vec::new();
        for (j, &i) in probe.commits.iter().enumerate() {
            let co = &self.built[&i];
            let planned = c
                .planned
                .iter()
                .map(|p| for_side(p, &co.root, &co.rev))
                .collect();
            let side = crate::session::prepare(c, planned, spawner).map_err(|mut f| {
                f.message = format!("at {}: {}", co.rev.short(), f.message);
                f
            })?;
            benches.extend(side);
            let mut extra = serde_json::Map::new();
            extra.insert(
                "bisect".into(),
                serde_json::json!({
                    "id": self.id,
                    "baseline": self.commits[0],
                    "candidate": self.commits[self.commits.len() - 1],
                    "step": self.steps.len() + 1,
                    "kind": kind_name(probe.kind),
                    "commit": co.rev.commit,
                }),
            );
            parts.push(Part {
                git: Some(co.rev.git()),
                extra,
                benchmarks: per,
                label: labels[j],
            });
        }
        let k = probe.commits.len();
        let more = |template: &Run, benches: &[perfsleuth_runner::Bench], look: u32| {
            let runs = split(&crate::verdict::so_far(template, benches), per, k);
            runs.windows(2).any(|w| {
                crate::verdict::undecided_sides(
                    &crate::verdict::side(w[0].clone()),
                    &crate::verdict::side(w[1].clone()),
                    &opts.at_look(Some(look)),
                )
            })
        };
        let started = Instant::now();
        let mut m = crate::session::measure(c, spawner, benches, parts, &more)?;
        self.measuring += started.elapsed();
        self.ids.extend(m.ids.iter().flatten());
        self.runs += m
            .run
            .benchmarks
            .iter()
            .map(|b| b.samples.len() as u64)
            .sum::<u64>();
        if let Err(stop) = std::mem::replace(&mut m.result, Ok(())) {
            return match stop {
                Stop::Failed(e) => {
                    let mut f = Fail::from(e);
                    let at: Vec<String> = probe
                        .commits
                        .iter()
                        .map(|&i| perfsleuth_model::short_commit(&self.commits[i]).to_string())
                        .collect();
                    f.message = format!("measuring {}: {}", at.join(", "), f.message);
                    Err(f)
                }
                Stop::Interrupted => Ok(None),
            };
        }
        let runs = split(&m.run, per, k);
        let comparisons: Vec<Comparison> = (1..k)
            .map(|j| self.compare_pair(probe, &runs, j, &opts.at_look(m.look)))
            .collect();
        let verdicts: Vec<PairVerdict> = comparisons.iter().map(pair_verdict).collect();
        if probe.kind == ProbeKind::Verify
            && let Some(c) = comparisons.into_iter().next()
        {
            self.verifications.insert(probe.commits[1], c);
        }
        self.record_step(probe, &verdicts, m.ids.clone(), m.rounds, Some(m.elapsed));
        Ok(Some(verdicts))
    }

    /// The completed steps an earlier run of this bisection stored (same
    /// range, same commands), to be replayed instead of measured again.
    fn resume_from_store(&mut self, c: &Checked) -> Result<(), Fail> {
        let Some(store) = crate::session::open_store(c.store.as_deref(), false)? else {
            return Ok(());
        };
        let mut steps: std::collections::BTreeMap<u64, Vec<Run>> = Default::default();
        for listed in store.bisection_runs(&self.id)? {
            if listed.run.status != perfsleuth_model::RunStatus::Complete {
                continue;
            }
            // Verdicts need the samples, not the profiles.
            if let Some(run) = store.load_run_measurements(listed.run.id)? {
                steps.entry(listed.step).or_default().push(run);
            }
        }
        for (_, mut runs) in steps {
            runs.sort_by_key(|r| r.id);
            let commits: Vec<usize> = runs
                .iter()
                .filter_map(|r| {
                    let hash = r.options["bisect"]["commit"].as_str()?;
                    self.commits.iter().position(|c| c == hash)
                })
                .collect();
            let kind = runs[0].options["bisect"]["kind"]
                .as_str()
                .unwrap_or("")
                .to_string();
            if commits.len() == runs.len() {
                self.stored.push(StoredStep {
                    kind,
                    commits,
                    runs,
                });
            }
        }
        if !self.stored.is_empty() {
            emit(
                &format!(
                    "bisect: resuming: {} steps of an earlier run are stored\n",
                    self.stored.len()
                ),
                true,
            );
        }
        Ok(())
    }

    /// The probe's verdicts judged again from an earlier run's stored
    /// step, if it measured this probe; `None` to measure it.
    fn replay(
        &mut self,
        probe: &Probe,
        c: &Checked,
        opts: &perfsleuth_compare::Options,
    ) -> Result<Option<Vec<PairVerdict>>, Fail> {
        let kind = kind_name(probe.kind);
        let Some(at) = self
            .stored
            .iter()
            .position(|s| s.kind == kind && s.commits == probe.commits)
        else {
            return Ok(None);
        };
        let step = self.stored.remove(at);
        let rounds = step.runs[0]
            .benchmarks
            .iter()
            .flat_map(|b| b.samples.iter().map(|s| s.round + 1))
            .max()
            .unwrap_or(1);
        let look = perfsleuth_stats::look_for_rounds(c.rounds, rounds);
        let verdicts: Vec<PairVerdict> = (1..step.runs.len())
            .map(|j| {
                pair_verdict(&self.compare_pair(probe, &step.runs, j, &opts.at_look(Some(look))))
            })
            .collect();
        self.ids.extend(step.runs.iter().filter_map(|r| r.id));
        let runs = step.runs.iter().map(|r| r.id).collect();
        self.record_step(probe, &verdicts, runs, rounds, None);
        Ok(Some(verdicts))
    }

    /// Adds a step to the document: measured for `took`, or replayed from
    /// the store (`None`).
    fn record_step(
        &mut self,
        probe: &Probe,
        verdicts: &[PairVerdict],
        runs: Vec<Option<i64>>,
        rounds: u32,
        took: Option<std::time::Duration>,
    ) {
        self.steps.push(BisectStep {
            kind: kind_name(probe.kind).into(),
            commits: probe
                .commits
                .iter()
                .map(|&i| self.commits[i].clone())
                .collect(),
            verdicts: verdicts.iter().map(change_doc).collect(),
            runs,
            rounds,
            seconds: took.map_or(0.0, |d| d.as_secs_f64()),
            resumed: took.is_none(),
        });
    }

    /// The probe's pair `j - 1`, `j` compared, each side labelled with its commit.
    fn compare_pair(
        &self,
        probe: &Probe,
        runs: &[Run],
        j: usize,
        opts: &perfsleuth_compare::Options,
    ) -> Comparison {
        let side = |i: usize| Side {
            label: perfsleuth_model::short_commit(&self.commits[probe.commits[i]]).to_string(),
            runs: vec![runs[i].clone()],
        };
        perfsleuth_compare::compare(&side(j - 1), &side(j), opts)
    }

    /// The document of the ended search.
    fn doc(&self, search: &Search) -> BisectDoc {
        let hash = |i: usize| self.commits[i].clone();
        let total = search.total();
        let culprits: Vec<Culprit> = search.culprits();
        let mut notes = Vec::new();
        let outcome = match search.outcome() {
            Outcome::NotReproduced(v) => {
                notes.push(format!(
                    "not reproduced on this machine: the ends differ by {} [{}, {}], within the no-change band; no culprit is named",
                    signed_pct(v.change),
                    signed_pct(v.lo),
                    signed_pct(v.hi)
                ));
                "not reproduced"
            }
            Outcome::EndsUndecided(v) => {
                notes.push(format!(
                    "the ends could not be told apart nor shown equal in the time allowed ({} [{}, {}]); raise --max-time or --time-budget",
                    signed_pct(v.change),
                    signed_pct(v.lo),
                    signed_pct(v.hi)
                ));
                "undecided"
            }
            _ if culprits.iter().any(Culprit::confirmed) => "found",
            _ => "undecided",
        };
        for c in culprits.iter().filter(|c| !c.confirmed()) {
            notes.push(format!(
                "{} changed it when found but not when measured again against its parent: not named",
                perfsleuth_model::short_commit(&self.commits[c.commit])
            ));
        }
        let confirmed: Vec<&Culprit> = culprits.iter().filter(|c| c.confirmed()).collect();
        if let (Some(t), false) = (total, confirmed.is_empty()) {
            let shares: f64 = confirmed.iter().map(|c| c.share(t.change)).sum();
            if shares.is_finite() && !(0.5..=1.5).contains(&shares) {
                notes.push(format!(
                    "the culprits' changes add up to {:.0} % of the change between the ends: the rest is spread over commits too small to name one by one, or lies in an undecided range",
                    100.0 * shares
                ));
            }
        }
        if !search.undecided().is_empty() {
            notes.push(
                "a culprit may lie in each undecided range: its change could not be decided in the time allowed (--max-time)"
                    .into(),
            );
        }
        if search
            .skipped()
            .iter()
            .any(|s| culprits.iter().any(|c| c.parent < *s && *s < c.commit))
        {
            notes.push(
                "commits that could not be built lie next to a culprit: the change may be in any of them"
                    .into(),
            );
        }
        BisectDoc {
            schema: "perfsleuth/bisect".into(),
            schema_version: 1,
            id: self.id.clone(),
            outcome: outcome.into(),
            commits: commit_docs(&self.repo, &self.commits),
            total: total.as_ref().map(change_doc),
            culprits: culprits
                .iter()
                .map(|c| BisectCulprit {
                    parent: hash(c.parent),
                    commit: hash(c.commit),
                    found: change_doc(&c.found),
                    verified: c.verified.as_ref().map(change_doc),
                    confirmed: c.confirmed(),
                    share: total.map(|t| c.share(t.change)).filter(|s| s.is_finite()),
                    merged: merged_branch(&self.repo, &hash(c.commit)),
                })
                .collect(),
            undecided: search
                .undecided()
                .iter()
                .map(|(lo, hi, v)| BisectRange {
                    from: hash(*lo),
                    to: hash(*hi),
                    change: change_doc(v),
                })
                .collect(),
            skipped: search.skipped().iter().map(|&i| hash(i)).collect(),
            steps: self.steps.clone(),
            runs: self.runs,
            measuring_s: self.measuring.as_secs_f64(),
            building_s: self.building.as_secs_f64(),
            notes,
        }
    }
}

fn kind_name(kind: ProbeKind) -> &'static str {
    match kind {
        ProbeKind::Confirm => "confirm",
        ProbeKind::Split => "split",
        ProbeKind::Verify => "verify",
    }
}

/// The run of one probe cut into a run per commit (`per` benchmarks each).
fn split(run: &Run, per: usize, k: usize) -> Vec<Run> {
    (0..k)
        .map(|j| {
            let mut r = run.clone();
            r.benchmarks = run
                .benchmarks
                .iter()
                .skip(j * per)
                .take(per)
                .cloned()
                .collect();
            r
        })
        .collect()
}

/// One pair's comparison as the search's verdict: changed when a gating row
/// regressed or improved, the same when every gating row is unchanged,
/// undecided otherwise; the change and interval of the row that decided.
fn pair_verdict(c: &Comparison) -> PairVerdict {
    let gating: Vec<_> = c.rows.iter().filter(|r| r.gating).collect();
    let changed = gating
        .iter()
        .find(|r| matches!(r.verdict, VerdictLabel::Regressed | VerdictLabel::Improved));
    let same = !gating.is_empty() && gating.iter().all(|r| r.verdict == VerdictLabel::NoChange);
    let (call, row) = match (changed, same) {
        (Some(r), _) => (Call::Changed, Some(*r)),
        (None, true) => (Call::Same, gating.first().copied()),
        (None, false) => (Call::Undecided, gating.first().copied()),
    };
    let change = row.and_then(|r| r.change.as_ref());
    PairVerdict {
        call,
        change: change.map_or(f64::NAN, |c| c.change),
        lo: change.map_or(f64::NAN, |c| c.ci.lo),
        hi: change.map_or(f64::NAN, |c| c.ci.hi),
    }
}

fn change_doc(v: &PairVerdict) -> BisectChange {
    let finite = |x: f64| Some(x).filter(|x| x.is_finite());
    BisectChange {
        call: match v.call {
            Call::Changed => "changed",
            Call::Same => "same",
            Call::Undecided => "undecided",
        }
        .into(),
        change: finite(v.change),
        lo: finite(v.lo),
        hi: finite(v.hi),
    }
}

/// The range's commits with their subject, author and date: two git
/// processes for the whole range (the baseline, then every commit after
/// it), not one per commit.
fn commit_docs(repo: &Path, commits: &[String]) -> Vec<BisectCommit> {
    const FORMAT: &str = "--format=%H%x00%s%x00%an%x00%aI";
    let (first, last) = (&commits[0], &commits[commits.len() - 1]);
    let mut text = git(repo, &["show", "-s", FORMAT, first]).unwrap_or_default();
    text.push('\n');
    let range = format!("{first}..{last}");
    text.push_str(&git(repo, &["log", "--first-parent", FORMAT, &range]).unwrap_or_default());
    let mut known: HashMap<&str, [&str; 3]> = HashMap::new();
    for line in text.lines() {
        let mut f = line.splitn(4, '\0').map(str::trim);
        if let (Some(h), Some(s), Some(a), Some(d)) = (f.next(), f.next(), f.next(), f.next()) {
            known.insert(h, [s, a, d]);
        }
    }
    commits
        .iter()
        .map(|c| {
            let [subject, author, date] = known.get(c.as_str()).copied().unwrap_or_default();
            BisectCommit {
                commit: c.clone(),
                subject: subject.into(),
                author: author.into(),
                date: date.into(),
            }
        })
        .collect()
}

/// For a merge commit, its merged branch's own commits (the way into a
/// merge the first-parent search took as one step); `None` otherwise.
fn merged_branch(repo: &Path, commit: &str) -> Option<BisectBranch> {
    let line = git(repo, &["rev-list", "--parents", "-n", "1", commit]).ok()?;
    let parents: Vec<&str> = line.split_whitespace().skip(1).collect();
    let [first, second, ..] = parents[..] else {
        return None;
    };
    let base = git(repo, &["merge-base", first, second]).ok()?;
    Some(BisectBranch {
        from: base.trim().to_string(),
        to: second.to_string(),
    })
}

/// A change as a signed percentage ("+2.1 %").
pub fn signed_pct(x: f64) -> String {
    if x.is_finite() {
        format!("{:+.1} %", 100.0 * x)
    } else {
        "?".into()
    }
}

/// The bisection for the terminal (or, with `markdown`, for a pull request).
pub fn render(doc: &BisectDoc, markdown: bool) -> String {
    let short = |h: &str| perfsleuth_model::short_commit(h).to_string();
    let subject = |h: &str| {
        doc.commits
            .iter()
            .find(|c| c.commit == h)
            .map_or(String::new(), |c| {
                format!("{} — {}, {}", c.subject, c.author, c.date)
            })
    };
    let interval = |c: &BisectChange| match (c.change, c.lo, c.hi) {
        (Some(x), Some(lo), Some(hi)) => {
            format!("{} [{}, {}]", signed_pct(x), signed_pct(lo), signed_pct(hi))
        }
        _ => "no estimate".into(),
    };
    let pos = |h: &str| doc.commits.iter().position(|c| c.commit == h);
    let mut out = String::new();
    let (first, last) = (
        &doc.commits[0].commit,
        &doc.commits[doc.commits.len() - 1].commit,
    );
    let head = format!(
        "bisect {}..{}: {} commits, {} step{}, {} runs, {:.0} s measuring, {:.0} s building",
        short(first),
        short(last),
        doc.commits.len() - 1,
        doc.steps.len(),
        if doc.steps.len() == 1 { "" } else { "s" },
        doc.runs,
        doc.measuring_s,
        doc.building_s
    );
    out.push_str(&if markdown {
        format!("### {head}\n\n")
    } else {
        format!("{head}\n")
    });
    if let Some(t) = &doc.total {
        out.push_str(&format!("change between the ends: {}\n", interval(t)));
    }
    out.push('\n');
    for c in doc.culprits.iter().filter(|c| c.confirmed) {
        let share = c.share.map_or(String::new(), |s| {
            format!(", {:.0} % of the change", 100.0 * s)
        });
        let verified = c.verified.as_ref().map_or(String::new(), interval);
        let (from, to) = (pos(&c.parent), pos(&c.commit));
        let range = if doc.skipped.iter().any(|s| from < pos(s) && pos(s) < to) {
            format!(" (or a skipped commit after {})", short(&c.parent))
        } else {
            String::new()
        };
        if markdown {
            out.push_str(&format!(
                "- **culprit `{}`**{range}: {verified}{share}  \n  {}\n",
                short(&c.commit),
                subject(&c.commit)
            ));
        } else {
            out.push_str(&format!(
                "culprit {}{range}: {verified}{share}\n  {}\n",
                short(&c.commit),
                subject(&c.commit)
            ));
        }
        if let Some(b) = &c.merged {
            let into = format!(
                "a merge: its branch's commits are bisected with --baseline {} --candidate {} (the same options)",
                short(&b.from),
                short(&b.to)
            );
            out.push_str(&format!("  {into}\n"));
        }
    }
    for u in &doc.undecided {
        out.push_str(&format!(
            "{}undecided {}..{}: {} — a culprit may lie there\n",
            if markdown { "- " } else { "" },
            short(&u.from),
            short(&u.to),
            interval(&u.change)
        ));
    }
    if !doc.skipped.is_empty() {
        let skipped: Vec<String> = doc.skipped.iter().map(|s| short(s)).collect();
        out.push_str(&format!(
            "{}skipped (did not build): {}\n",
            if markdown { "- " } else { "" },
            skipped.join(", ")
        ));
    }
    for n in &doc.notes {
        out.push_str(&format!("{}note: {n}\n", if markdown { "- " } else { "" }));
    }
    out
}

/// The bisection as JUnit XML (`--export-junit`): a test case per commit of
/// the range, failed for a verified culprit that made the benchmarks slower,
/// skipped for a commit in an undecided range or one that did not build,
/// passed otherwise (with what was found of it).
pub fn render_junit(doc: &BisectDoc) -> Result<String, perfsleuth_report::junit::JunitError> {
    use perfsleuth_report::junit::{Case, Outcome};
    let pos = |h: &str| doc.commits.iter().position(|c| c.commit == h);
    let short = |h: &str| perfsleuth_model::short_commit(h).to_string();
    let first = &doc.commits[0].commit;
    let last = &doc.commits[doc.commits.len() - 1].commit;
    let suite = format!("bisect: {} → {}", short(first), short(last));
    let cases: Vec<Case> = doc.commits[1..]
        .iter()
        .map(|c| {
            let at = pos(&c.commit);
            let culprit = doc
                .culprits
                .iter()
                .find(|k| k.confirmed && k.commit == c.commit);
            let undecided = doc
                .undecided
                .iter()
                .find(|u| pos(&u.from) < at && at <= pos(&u.to));
            let outcome = match (culprit, undecided) {
                (Some(k), _) => {
                    let v = k.verified.as_ref().unwrap_or(&k.found);
                    let change = v.change.unwrap_or(f64::NAN);
                    let line = format!(
                        "culprit: {} [{}, {}] against its parent {}",
                        signed_pct(change),
                        signed_pct(v.lo.unwrap_or(f64::NAN)),
                        signed_pct(v.hi.unwrap_or(f64::NAN)),
                        short(&k.parent)
                    );
                    if change > 0.0 {
                        Outcome::Failed {
                            kind: "regressed".into(),
                            message: line.clone(),
                            detail: line,
                        }
                    } else {
                        Outcome::Passed
                    }
                }
                _ if doc.skipped.contains(&c.commit) => Outcome::Skipped {
                    message: "did not build: skipped".into(),
                },
                (None, Some(u)) => Outcome::Skipped {
                    message: format!(
                        "undecided: {}..{} could not be decided in the time allowed",
                        short(&u.from),
                        short(&u.to)
                    ),
                },
                (None, None) => Outcome::Passed,
            };
            Case {
                name: format!("{}: {}", short(&c.commit), c.subject),
                classname: suite.clone(),
                output: match &outcome {
                    Outcome::Passed if culprit.is_some() => "culprit: made it faster".into(),
                    Outcome::Passed => "not a culprit".into(),
                    Outcome::Failed { message, .. } => message.clone(),
                    Outcome::Skipped { message } => message.clone(),
                },
                outcome,
                seconds: None,
                properties: vec![("commit".into(), c.commit.clone())],
            }
        })
        .collect();
    perfsleuth_report::junit::render(&render(doc, false), &suite, &cases)
}
