//! Where a wall-time change sits, from the two sides' sampled stacks
//! (`run --profile`): each function's time per run (its samples × the
//! sampling period; in a wall profile also its periods waited off the CPU,
//! apart per reason: `fetch_row` waiting in poll is not `fetch_row`
//! computing), the shift of its median between the sides with a bootstrap
//! interval from the runs, self and inclusive, ranked by how much of the
//! change it carries; a function whose interval holds 0 is in the noise.
//! Stated in the simulation attribution's words: "87% of +20.1% wall is in
//! `alpha` (shares)", "92% of +36.0% wall is in `fetch_row` (prog; off
//! CPU: poll)".

use perfsleuth_model::{OffCpuReason, StackProfile};
use perfsleuth_stats::{MedianShift, RESAMPLES, SEED, bootstrap_median_shift};
use std::collections::BTreeMap;

/// One function's on-CPU time per run on both sides.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeMove {
    /// The function's name, demangled.
    pub function: String,
    /// Its binary or library's file name.
    pub object: String,
    /// Time it spent off the CPU for this reason (a wall profile), rather
    /// than on it.
    pub off_cpu: Option<OffCpuReason>,
    /// For a wait in a thread other than the main one: the function the
    /// thread started in.
    pub thread: Option<String>,
    /// Median self time per run in the baseline, ns.
    pub baseline_self_ns: f64,
    /// Median self time per run in the candidate, ns.
    pub candidate_self_ns: f64,
    /// Shift of the self time per run (candidate − baseline, ns), with its interval.
    pub self_shift: MedianShift,
    /// Shift of the inclusive time per run (the function and what it called).
    pub inclusive_shift: MedianShift,
}

impl TimeMove {
    /// Whether its own time did not move beyond the noise of the runs.
    pub fn in_the_noise(&self) -> bool {
        self.self_shift.in_the_noise()
    }

    /// "`fetch_row` (off CPU: poll)", "`alpha`".
    pub fn label(&self) -> String {
        perfsleuth_model::off_cpu_label(&self.function, self.off_cpu, self.thread.as_deref())
    }

    /// "`fetch_row` (prog; off CPU: poll)", "`alpha` (prog)".
    fn label_with_object(&self) -> String {
        match (self.off_cpu, &self.thread) {
            (Some(reason), Some(t)) => format!(
                "`{}` ({}; {}, in thread `{t}`)",
                self.function,
                self.object,
                reason.describe()
            ),
            (Some(reason), None) => format!(
                "`{}` ({}; {})",
                self.function,
                self.object,
                reason.describe()
            ),
            (None, _) => format!("`{}` ({})", self.function, self.object),
        }
    }
}

/// A function of a profile: its name, object and, for its time off the
/// CPU, the reason and the thread.
type Key = (String, String, Option<OffCpuReason>, Option<String>);

/// Per function: its self and inclusive time in each run, ns.
type PerRun = BTreeMap<Key, (Vec<f64>, Vec<f64>)>;

/// The runs of the profiles, and each function's time in them; runs where
/// it was never sampled count 0.
fn per_run(profiles: &[&StackProfile]) -> (usize, PerRun) {
    let runs: usize = profiles.iter().map(|p| p.iterations.len()).sum();
    let mut out = PerRun::new();
    let mut offset = 0;
    for p in profiles {
        for f in p.functions() {
            let e = out
                .entry((
                    f.frame.function.clone(),
                    f.frame.module.clone(),
                    f.off_cpu,
                    f.thread.clone(),
                ))
                .or_insert_with(|| (vec![0.0; runs], vec![0.0; runs]));
            for (i, (&s, &inc)) in f.self_counts.iter().zip(&f.inclusive).enumerate() {
                let period = p.period_of(i) as f64;
                e.0[offset + i] = s as f64 * period;
                e.1[offset + i] = inc as f64 * period;
            }
        }
        offset += p.iterations.len();
    }
    (runs, out)
}

/// Fewest profiled runs a side needs for an interval of a function's shift.
pub const MIN_PROFILED_RUNS: usize = 3;

/// Functions tested for a shift: those with the most self time on the two
/// sides together. Each is judged at a Bonferroni-corrected level, so that
/// among them all a function is called moved by chance at most the
/// verdict's α of the time.
pub const FUNCTIONS_TESTED: usize = 10;

/// Where a change sits: the tested functions' moves, and the shift of the
/// profiled time per run as a whole.
#[derive(Debug, Clone, PartialEq)]
pub struct TimeMoves {
    /// The tested functions, the biggest self shift first.
    pub moves: Vec<TimeMove>,
    /// Shift of the profiled time per run (all functions), ns: on the CPU,
    /// and off it where both sides are wall profiles.
    pub profiled: MedianShift,
    /// Median profiled time per run in the baseline, ns.
    pub baseline_profiled_ns: f64,
    /// Both sides are wall profiles: `profiled` holds time off the CPU too.
    pub off_cpu: bool,
}

/// Each of the [`FUNCTIONS_TESTED`] busiest functions' move between the
/// sides, the biggest self shift first; `None` when a side has fewer than
/// [`MIN_PROFILED_RUNS`] profiled runs (an imported profile is one) or a
/// profile without a sampling period (imported folded stacks: shares, no
/// times). `confidence`: the verdict's level, shared by the functions.
pub fn time_moves(
    baseline: &[&StackProfile],
    candidate: &[&StackProfile],
    confidence: f64,
    on_cpu_only: bool,
) -> Option<TimeMoves> {
    if baseline.iter().chain(candidate).any(|p| p.period_ns == 0) {
        return None;
    }
    // A change of CPU time is in the time on the CPU: a wall profile's
    // waits are no part of it.
    if on_cpu_only && baseline.iter().chain(candidate).any(|p| p.has_off_cpu()) {
        let strip = |ps: &[&StackProfile]| -> Vec<StackProfile> {
            ps.iter().map(|p| p.on_cpu_only()).collect()
        };
        let (b, c) = (strip(baseline), strip(candidate));
        let (b, c): (Vec<&StackProfile>, Vec<&StackProfile>) =
            (b.iter().collect(), c.iter().collect());
        return time_moves(&b, &c, confidence, false);
    }
    let (nb, base) = per_run(baseline);
    let (nc, cand) = per_run(candidate);
    if nb < MIN_PROFILED_RUNS || nc < MIN_PROFILED_RUNS {
        return None;
    }
    let off_cpu = baseline.iter().chain(candidate).all(|p| p.has_off_cpu());
    let totals = |ps: &[&StackProfile]| -> Vec<f64> {
        ps.iter()
            .flat_map(|p| {
                if off_cpu {
                    p.run_time_ns()
                } else {
                    p.run_cpu_ns()
                }
            })
            .collect()
    };
    let baseline_totals = totals(baseline);
    let profiled = bootstrap_median_shift(
        &baseline_totals,
        &totals(candidate),
        confidence,
        RESAMPLES / 2,
        SEED,
    )?;
    let zeros_b = (vec![0.0; nb], vec![0.0; nb]);
    let zeros_c = (vec![0.0; nc], vec![0.0; nc]);
    let mut keys: Vec<&Key> = base.keys().chain(cand.keys()).collect();
    keys.sort();
    keys.dedup();
    let busy = |k: &Key| -> f64 {
        let m = |v: Option<&(Vec<f64>, Vec<f64>)>| v.map_or(0.0, |v| v.0.iter().sum::<f64>());
        m(base.get(k)) / nb as f64 + m(cand.get(k)) / nc as f64
    };
    keys.sort_by(|a, b| busy(b).total_cmp(&busy(a)).then(a.cmp(b)));
    keys.truncate(FUNCTIONS_TESTED);
    let level = 1.0 - (1.0 - confidence) / keys.len().max(1) as f64;
    let mut moves = Vec::with_capacity(keys.len());
    for (n, key) in keys.into_iter().enumerate() {
        let b = base.get(key).unwrap_or(&zeros_b);
        let c = cand.get(key).unwrap_or(&zeros_c);
        // A per-function stream, so the intervals are not correlated.
        let seed = SEED ^ (n as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15);
        let (Some(self_shift), Some(inclusive_shift)) = (
            bootstrap_median_shift(&b.0, &c.0, level, RESAMPLES / 2, seed),
            bootstrap_median_shift(&b.1, &c.1, level, RESAMPLES / 2, seed ^ 1),
        ) else {
            continue;
        };
        moves.push(TimeMove {
            function: key.0.clone(),
            object: key.1.clone(),
            off_cpu: key.2,
            thread: key.3.clone(),
            baseline_self_ns: perfsleuth_stats::median(&b.0).unwrap_or(0.0),
            candidate_self_ns: perfsleuth_stats::median(&c.0).unwrap_or(0.0),
            self_shift,
            inclusive_shift,
        });
    }
    moves.sort_by(|a, b| {
        b.self_shift
            .shift
            .abs()
            .total_cmp(&a.self_shift.shift.abs())
            .then(a.function.cmp(&b.function))
    });
    Some(TimeMoves {
        moves,
        profiled,
        baseline_profiled_ns: perfsleuth_stats::median(&baseline_totals).unwrap_or(0.0),
        off_cpu,
    })
}

/// Functions named in the sentence.
const NAMED: usize = 3;

/// [`time_attribution`]'s metric for shares of the profiled on-CPU time.
pub const ON_CPU: &str = "on-CPU";

/// [`time_attribution`]'s metric for shares of a wall profile's time, on
/// and off the CPU, its threads' summed.
pub const THREADS: &str = "threads";

/// "87% of +20.1% wall is in `alpha` (shares): +17.9 ms a run [+17.2 ms,
/// +18.6 ms]; −9% in `beta` (shares): −1.8 ms [−2.3 ms, −1.3 ms]; in the
/// noise: `gamma_`": the functions whose own time moved beyond the noise,
/// biggest first, as shares of the change of the median time per run of
/// `metric` (wall or CPU time: `wall_shift_ns`, the relative `change`; or
/// [`ON_CPU`] and [`THREADS`], the profile's own time a run), then those
/// that did not.
pub fn time_attribution(
    moves: &[TimeMove],
    metric: &str,
    wall_shift_ns: f64,
    change: f64,
) -> Option<String> {
    if wall_shift_ns == 0.0 || !wall_shift_ns.is_finite() {
        return None;
    }
    let signed_total = format!(
        "{}{}",
        if wall_shift_ns < 0.0 { "−" } else { "+" },
        perfsleuth_model::quantity::format_duration_ns(wall_shift_ns.abs())
    );
    let change_text = if metric == ON_CPU {
        format!("the {signed_total} on CPU a run")
    } else if metric == THREADS {
        format!("the {signed_total} a run on and off the CPU (its threads' time summed)")
    } else {
        format!("{:+.1}% {metric}", 100.0 * change)
    };
    let ms = |ns: f64| perfsleuth_model::quantity::format_duration_ns(ns.abs());
    let signed = |ns: f64| format!("{}{}", if ns < 0.0 { "−" } else { "+" }, ms(ns));
    let mut parts = Vec::new();
    for m in moves.iter().filter(|m| !m.in_the_noise()).take(NAMED) {
        let share = m.self_shift.shift / wall_shift_ns;
        parts.push(format!(
            "{:.0}% in {}: {} a run [{}, {}]",
            100.0 * share,
            m.label_with_object(),
            signed(m.self_shift.shift),
            signed(m.self_shift.ci.lo),
            signed(m.self_shift.ci.hi)
        ));
    }
    let noise: Vec<String> = moves
        .iter()
        .take(NAMED + parts.len())
        .filter(|m| m.in_the_noise())
        .take(NAMED)
        .map(TimeMove::label)
        .collect();
    let mut text = match parts.split_first() {
        Some((first, rest)) => {
            let first = first.replacen(" in ", &format!(" of {change_text} is in "), 1);
            std::iter::once(first)
                .chain(rest.iter().cloned())
                .collect::<Vec<_>>()
                .join("; ")
        }
        None => {
            format!("no function's own time moved beyond the noise of the runs ({change_text})")
        }
    };
    if !noise.is_empty() {
        text.push_str(&format!("; in the noise: {}", noise.join(", ")));
    }
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use perfsleuth_model::{ProfileFrame, ProfileStack};

    /// A profile of `runs` runs: main→alpha `a` samples, main→beta `b`, main→gamma `g` a run.
    fn profile(runs: usize, a: u32, b: u32, g: u32) -> StackProfile {
        let f = |n: &str| ProfileFrame {
            function: n.into(),
            module: "shares".into(),
            inlined: false,
        };
        // A little run-to-run wobble, as real runs have.
        let counts = |base: u32| (0..runs).map(|i| base + (i % 3) as u32).collect();
        StackProfile {
            event: "cpu-clock".into(),
            period_ns: 1_000_000,
            kernel: false,
            iterations: (0..runs as u32).collect(),
            samples: 0,
            lost: 0,
            truncated: 0,
            periods_ns: Vec::new(),
            frames: vec![f("main"), f("alpha"), f("beta"), f("gamma")],
            stacks: vec![
                ProfileStack {
                    frames: vec![0, 1],
                    counts: counts(a),
                },
                ProfileStack {
                    frames: vec![0, 2],
                    counts: counts(b),
                },
                ProfileStack {
                    frames: vec![0, 3],
                    counts: counts(g),
                },
            ],
            source: None,
            off_cpu_ns: Vec::new(),
        }
    }

    /// A wall profile of `runs` runs: main→crunch `cpu` samples a run, and
    /// main→fetch_row→poll (libc) waiting `wait` periods a run in poll.
    fn wall(runs: usize, cpu: u32, wait: u32) -> StackProfile {
        let mut p = profile(runs, cpu, 0, 0);
        p.frames = vec![
            ProfileFrame {
                function: "main".into(),
                module: "prog".into(),
                inlined: false,
            },
            ProfileFrame {
                function: "crunch".into(),
                module: "prog".into(),
                inlined: false,
            },
            ProfileFrame {
                function: "fetch_row".into(),
                module: "prog".into(),
                inlined: false,
            },
            ProfileFrame {
                function: "poll".into(),
                module: "libc.so.6".into(),
                inlined: false,
            },
            OffCpuReason::Poll.frame(),
        ];
        p.stacks.truncate(1);
        p.stacks.push(ProfileStack {
            frames: vec![0, 2, 3, 4],
            counts: (0..runs).map(|i| wait + (i % 2) as u32).collect(),
        });
        p.off_cpu_ns = p.stacks[1]
            .counts
            .iter()
            .map(|&c| u64::from(c) * 1_000_000)
            .collect();
        p
    }

    #[test]
    fn a_longer_wait_is_named_in_the_function_that_waited_with_its_reason() {
        let base = wall(10, 12, 40);
        let cand = wall(10, 12, 60);
        let found = time_moves(&[&base], &[&cand], 0.95, false).unwrap();
        assert!(found.off_cpu);
        assert_eq!(found.profiled.shift, 20e6);
        let first = &found.moves[0];
        assert_eq!(
            (first.function.as_str(), first.off_cpu),
            ("fetch_row", Some(OffCpuReason::Poll))
        );
        // Not poll's, which is the C library's: the program's function waited.
        assert!(
            !found
                .moves
                .iter()
                .any(|m| m.function == "poll" && m.off_cpu.is_some())
        );
        let crunch = found.moves.iter().find(|m| m.function == "crunch").unwrap();
        assert!(crunch.in_the_noise(), "{crunch:?}");
        let text = time_attribution(&found.moves, "wall", 20e6, 0.38).unwrap();
        assert!(
            text.starts_with(
                "100% of +38.0% wall is in `fetch_row` (prog; off CPU: poll): +20.000 ms a run ["
            ),
            "{text}"
        );
        assert!(text.contains("in the noise: `crunch`"), "{text}");
        // A change of CPU time is judged on the time on the CPU: the wait
        // is no function of it, and crunch alone is tested.
        let cpu = time_moves(&[&base], &[&cand], 0.95, true).unwrap();
        assert!(
            !cpu.off_cpu && cpu.moves.iter().all(|m| m.off_cpu.is_none()),
            "{cpu:?}"
        );
        assert_eq!(cpu.profiled.shift, 0.0);
    }

    #[test]
    fn the_function_that_slowed_is_named_first_with_its_sign_and_the_untouched_one_is_noise() {
        let base = profile(10, 50, 30, 20);
        let cand = profile(10, 60, 26, 20);
        let moves = time_moves(&[&base], &[&cand], 0.95, false).unwrap().moves;
        assert_eq!(moves[0].function, "alpha");
        assert!(moves[0].self_shift.shift > 9e6 && !moves[0].in_the_noise());
        let beta = moves.iter().find(|m| m.function == "beta").unwrap();
        assert!(
            beta.self_shift.shift < 0.0 && !beta.in_the_noise(),
            "{beta:?}"
        );
        let gamma = moves.iter().find(|m| m.function == "gamma").unwrap();
        assert!(gamma.in_the_noise(), "{gamma:?}");
        // main's own time is 0 on both sides; its inclusive time moved.
        let main = moves.iter().find(|m| m.function == "main").unwrap();
        assert!(main.in_the_noise() && main.inclusive_shift.shift > 5e6);
        let text = time_attribution(&moves, "wall", 8e6, 0.08).unwrap();
        assert!(
            text.starts_with("125% of +8.0% wall is in `alpha` (shares): +10.000 ms a run ["),
            "{text}"
        );
        assert!(
            text.contains("; -50% in `beta` (shares): −4.000 ms a run ["),
            "{text}"
        );
        assert!(text.ends_with("; in the noise: `gamma`, `main`"), "{text}");
        // Wall time: shares of the change of the time on CPU.
        let found = time_moves(&[&base], &[&cand], 0.95, false).unwrap();
        assert_eq!(found.profiled.shift, 6e6);
        assert!(!found.off_cpu);
        let text = time_attribution(&found.moves, ON_CPU, found.profiled.shift, 0.08).unwrap();
        assert!(
            text.starts_with("167% of the +6.000 ms on CPU a run is in `alpha` (shares)"),
            "{text}"
        );
    }

    #[test]
    fn without_a_move_the_sentence_says_so_and_a_side_without_profiles_gives_none() {
        let base = profile(10, 50, 30, 20);
        let moves = time_moves(&[&base], &[&base], 0.95, false).unwrap().moves;
        let text = time_attribution(&moves, "wall", 1e5, 0.001).unwrap();
        assert!(text.starts_with("no function's own time moved"), "{text}");
        assert_eq!(time_moves(&[], &[&base], 0.95, false), None);
    }
}
